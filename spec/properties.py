"""The Kafka controller model's properties, as plain Python predicates.

Each is named, has a kind, and a rationale that says what it checks and what it
deliberately allows.  State properties take the state; step properties take
``(prev, action, next)`` and state rules about change.  Properties read ghost
state; actions never do.
"""

from __future__ import annotations

from checker.model import Property, always, eventually, sometimes
from spec.state import NO_LEADER, NO_VERSION
from spec.statemachines import legal_partition, legal_replica


def leader_in_isr(s) -> bool:
    for zkp in s.zk.partitions:
        if zkp.version != NO_VERSION and zkp.leader != NO_LEADER and zkp.leader not in zkp.isr:
            return False
    return True


def isr_subset_of_ar(s) -> bool:
    return all(set(zkp.isr) <= set(s.zk.ar[p]) for p, zkp in enumerate(s.zk.partitions))


def at_most_one_leader_per_epoch(s) -> bool:
    for p in range(len(s.zk.partitions)):
        epochs = [br.partitions[p].leader_epoch for b, br in enumerate(s.brokers)
                  if br.alive and br.partitions[p].leader == b]
        if len(epochs) != len(set(epochs)):
            return False
    return True


def at_most_one_active_controller(s) -> bool:
    current = s.zk.controller_epoch
    return sum(1 for br in s.brokers if br.alive and br.ctx is not None and br.ctx.epoch == current) <= 1


def controller_epoch_fencing(prev, act, nxt) -> bool:
    # 1. A broker that applies a request (changes its partition view) must not have
    #    seen a newer controller epoch than the request's.
    if act.name in ("DeliverLeaderAndIsr", "DeliverStopReplica", "DeliverUpdateMetadata"):
        b = act.get("broker")
        pb, nb = prev.brokers[b], nxt.brokers[b]
        changed = nb.partitions != pb.partitions or (act.name == "DeliverUpdateMetadata"
                                                     and (nb.metadata, nb.alive_brokers)
                                                     != (pb.metadata, pb.alive_brokers))
        if changed and act.get("controller_epoch") < pb.controller_epoch_seen:
            return False
    # 2. A superseded controller (its epoch is older than ZooKeeper's) changes no
    #    partition state in ZooKeeper.
    c = act.get("controller")
    if c is not None:
        ctx = prev.brokers[c].ctx
        if ctx is not None and ctx.epoch < prev.zk.controller_epoch:
            if (nxt.zk.partitions != prev.zk.partitions or nxt.zk.topic != prev.zk.topic
                    or nxt.zk.ar != prev.zk.ar or nxt.zk.reassign != prev.zk.reassign):
                return False
    return True


def legal_state_transitions(prev, act, nxt) -> bool:
    if prev.brokers is nxt.brokers:
        return True
    for pb, nb in zip(prev.brokers, nxt.brokers):
        pc, nc = pb.ctx, nb.ctx
        if pc is nc or pc is None or nc is None or pc.epoch != nc.epoch:
            continue  # a context created or dropped: initialisation, not a transition
        for before, after in zip(pc.partition_states, nc.partition_states):
            if not legal_partition(before, after):
                return False
        for prs, nrs in zip(pc.replica_states, nc.replica_states):
            for before, after in zip(prs, nrs):
                if not legal_replica(before, after):
                    return False
    return True


def epochs_monotonic(prev, act, nxt) -> bool:
    if nxt.zk.controller_epoch < prev.zk.controller_epoch:
        return False
    for pz, nz in zip(prev.zk.partitions, nxt.zk.partitions):
        if nz.version != NO_VERSION and nz.leader_epoch < pz.leader_epoch:
            return False
    if prev.brokers is nxt.brokers:
        return True
    for pb, nb in zip(prev.brokers, nxt.brokers):
        if pb is nb or not nb.alive:
            continue  # a stopped broker loses its memory; that is not going backwards
        if nb.controller_epoch_seen < pb.controller_epoch_seen:
            return False
        for pl, nl in zip(pb.partitions, nb.partitions):
            if nl.version != NO_VERSION and nl.leader_epoch < pl.leader_epoch:
                return False
    return True


def leader_elected_from_isr(prev, act, nxt) -> bool:
    for pz, nz in zip(prev.zk.partitions, nxt.zk.partitions):
        if (pz.version != NO_VERSION and nz.leader_epoch > pz.leader_epoch
                and nz.leader != NO_LEADER and nz.leader != pz.leader and nz.leader not in pz.isr):
            return False
    return True


# -- data path (max_records > 0) ------------------------------------------------------------

def _leaders(s, p):
    """(broker, view, replica) of every running broker that believes it leads p."""
    for b, br in enumerate(s.brokers):
        if br.alive and br.partitions[p].leader == b:
            yield b, br.partitions[p], br.replicas[p]


def no_acked_record_lost(s) -> bool:
    for p, o, e in s.ghost.inv_acked:
        for _b, view, rep in _leaders(s, p):
            if view.leader_epoch > e and (o >= len(rep.log) or rep.log[o] != e):
                return False
    return True


def logs_match_below_high_watermark(s) -> bool:
    for p in range(len(s.zk.partitions)):
        reps = [br.replicas[p] for br in s.brokers if br.alive]
        for i, a in enumerate(reps):
            for b in reps[i + 1:]:
                n = min(a.hw, b.hw)
                if a.log[:n] != b.log[:n]:
                    return False
    return True


def _true_leader(s, p):
    """(broker, replica) of the broker ZooKeeper names leader, if it runs and has
    applied ZooKeeper's leader epoch; else None."""
    zkp = s.zk.partitions[p]
    b = zkp.leader
    if b == NO_LEADER:
        return None
    br = s.brokers[b]
    view = br.partitions[p]
    if not br.alive or view.leader != b or view.leader_epoch != zkp.leader_epoch:
        return None
    return b, br.replicas[p]


def high_watermark_below_isr_leo(s) -> bool:
    for p, zkp in enumerate(s.zk.partitions):
        tl = _true_leader(s, p)
        if tl is None:
            continue
        hw = tl[1].hw
        for r in zkp.isr:
            if len(s.brokers[r].replicas[p].log) < hw:
                return False
    return True


def consistent_read(s) -> bool:
    for p, o, e in s.ghost.inv_read:
        for _b, _view, rep in _leaders(s, p):
            if o < rep.hw and rep.log[o] != e:
                return False
    return True


def leader_completeness(s) -> bool:
    for p in range(len(s.zk.partitions)):
        tl = _true_leader(s, p)
        if tl is None:
            continue
        log = tl[1].log
        for q, o, e in s.ghost.inv_read:
            if q == p and (o >= len(log) or log[o] != e):
                return False
    return True


# -- partition reassignment (reassignments configured) ----------------------------------------

def reassignment_isr_in_ar(s) -> bool:
    for p, zkp in enumerate(s.zk.partitions):
        ar = s.zk.ar[p]
        if zkp.leader != NO_LEADER and zkp.leader not in ar:
            return False
        if any(r not in ar for r in zkp.isr):
            return False
    return True


def reassignment_leader_in_rar(s) -> bool:
    for p, rar in enumerate(s.ghost.inv_leader_moved):
        if rar:
            leader = s.zk.partitions[p].leader
            if leader != NO_LEADER and leader not in rar:
                return False
    return True


def reassignments_done(m, s) -> bool:
    """Every reassignment the admin has requested is finished: nothing pending in
    /admin/reassign_partitions, and each reassigned partition's AR in ZooKeeper is
    its last RAR with the ISR within it."""
    if any(s.zk.reassign):
        return False
    issued = m.reassign_targets[:len(m.reassign_targets) - s.budget.reassignments]
    last = dict(issued)
    for p, rar in last.items():
        if s.zk.ar[p] != rar or any(r not in rar for r in s.zk.partitions[p].isr):
            return False
    return True


def reassignment_blocked(s) -> bool:
    """A pending reassignment waits for a dead broker: a replica of its RAR, or the
    partition's leader (without one the ISR cannot grow), has no ZooKeeper session."""
    for p, rar in enumerate(s.zk.reassign):
        if rar:
            leader = s.zk.partitions[p].leader
            if leader == NO_LEADER or s.zk.sessions[leader] <= 0 or any(s.zk.sessions[r] <= 0 for r in rar):
                return True
    return False


def make_reassignment_completes_when_quiescent(m):
    def completes_when_quiescent(s) -> bool:
        # Cheap test first; the enabled actions are computed only for a state
        # with a reassignment still unfinished.
        return reassignments_done(m, s) or bool(m.actions(s))
    return completes_when_quiescent


def reassignment_properties(m) -> list[Property]:
    return [
        always("ReassignmentIsrInAr", reassignment_isr_in_ar,
               "At every step of a reassignment, the ISR and the leader in ZooKeeper are within the AR in "
               "ZooKeeper (OAR + RAR from step 1, RAR from step 10). Writing AR := RAR only after the old "
               "replicas left the ISR (step 8) is what keeps it."),
        always("ReassignmentLeaderInRar", reassignment_leader_in_rar,
               "Once some controller has finished step 7 of a reassignment, the leader in ZooKeeper is a "
               "replica of RAR (or there is none), until the admin requests another reassignment of that "
               "partition. It allows a partition without a leader."),
        always("ReassignmentCompletesWhenQuiescent", make_reassignment_completes_when_quiescent(m),
               "When no fault is left to happen and the system is quiescent (no action is enabled: every "
               "fault spent, every broker back, every request delivered), every requested reassignment has "
               "completed: /admin/reassign_partitions is empty, the AR in ZooKeeper is the last RAR and the "
               "ISR is within it. A reassignment stranded by a crash shows up here. It is checked on quiescent "
               "states only; one that never finishes because the system cycles forever is a liveness question "
               "(an `eventually` property), not checked by this one."),
        sometimes("ReassignmentCompletes", lambda s: s.ghost.inv_reassigned,
                  "A reassignment completes: step 11 with the AR in ZooKeeper equal to RAR."),
        eventually("EventuallyReassignmentCompletes", lambda s: reassignments_done(m, s) or reassignment_blocked(s),
                   "Whenever a reassignment is pending in /admin/reassign_partitions, every behaviour that is "
                   "weakly fair to the controller's and brokers' reactions (faults, restarts and the admin's "
                   "next request are not forced: spec/liveness.UNFAIR) reaches a state where every requested "
                   "reassignment is done (ReassignmentCompletesWhenQuiescent's condition), or one where it "
                   "waits for a dead broker (a replica of RAR, or the partition's leader, has no session): "
                   "Kafka waits for it, and a dead broker need not come back. Checked by kmc check on the "
                   "local engine after an exhaustive search.",
                   trigger=lambda s: any(s.zk.reassign)),
    ]


def data_properties(cfg) -> list[Property]:
    unclean = "Fails with unclean_leader_election (the new leader may lack what was acknowledged). "
    props = [
        always("NoAckedRecordLost", no_acked_record_lost,
               "A record acknowledged to an acks=all producer stays in the log of every leader elected "
               "afterwards (every broker that believes it leads in a later leader epoch holds it at the same "
               "offset). acks=1 records carry no such promise and are not checked. " + unclean +
               "Fails with truncation=high_watermark (KIP-101's first scenario)."),
        always("LogsMatchBelowHighWatermark", logs_match_below_high_watermark,
               "No two running replicas disagree about a record below both of their high watermarks. "
               "Above the HW logs may differ: that is uncommitted data a new leader may overwrite. "
               "Fails when logs diverge (KIP-101's second scenario, KIP-279's and KIP-320's holes)."),
        always("HighWatermarkBelowIsrLeo", high_watermark_below_isr_leo,
               "The true leader's HW is never above the LEO of a member of the ISR in ZooKeeper: what it "
               "exposes as committed is on every replica that may be elected cleanly. It deliberately checks "
               "ZooKeeper's ISR, not the leader's own view, which may be a stale copy from the controller's "
               "cache (a restarted leader can be sent an ISR that still names a follower the leader had "
               "removed; that only holds its HW back)."),
        always("ConsistentRead", consistent_read,
               "A record a consumer has read at an offset (exposed below some leader's HW) is the record every "
               "leader exposes at that offset, forever. " + unclean),
        always("LeaderCompleteness", leader_completeness,
               "The true leader (the one in ZooKeeper, in ZooKeeper's leader epoch) holds every record "
               "consumers have read. A deposed leader that does not know it yet is not checked. " + unclean),
        sometimes("RecordCommitted", lambda s: bool(s.ghost.inv_read),
                  "A record is committed: some leader's HW moves past it."),
    ]
    if any(len(cfg.replica_slots(p)) > 1 for p in range(cfg.partitions)):   # a follower may ever exist
        props.append(sometimes("FollowerTruncates", lambda s: s.ghost.inv_follower_truncated,
                               "A follower truncates records from its log."))
    if cfg.min_insync_replicas > 1 and cfg.producer_acks in ("all", "both"):
        props.append(sometimes("AcksAllRefused", lambda s: s.ghost.inv_write_refused,
                               "An acks=all write is refused because the ISR is smaller than "
                               "min.insync.replicas."))
    if cfg.producer_acks in ("all", "both"):
        props.append(sometimes("AcksAllAcknowledged", lambda s: bool(s.ghost.inv_acked),
                               "An acks=all write is acknowledged."))
    return props


def properties(cfg, m) -> list[Property]:
    props = [
        always("LeaderInIsr", leader_in_isr,
               "In ZooKeeper, a partition's leader is a member of its ISR (or there is no leader). "
               "Every writer (elections, the leader's ISR shrink, the controller's ISR removal) must "
               "keep it; an unclean election keeps it too, by making the ISR just the new leader."),
        always("IsrSubsetOfAssignedReplicas", isr_subset_of_ar,
               "The ISR in ZooKeeper only names assigned replicas (the AR in ZooKeeper, which reassignment "
               "changes). Allows an ISR smaller than the AR, never empty while there is a leader."),
        always("AtMostOneLeaderPerEpoch", at_most_one_leader_per_epoch,
               "No two running brokers believe they lead a partition in the same leader epoch. It "
               "deliberately allows two brokers to believe they lead in *different* epochs: a deposed "
               "leader that has not yet received its LeaderAndIsr is normal, and the leader epoch is "
               "what fences it. A violation means two controllers handed out the same epoch."),
        always("AtMostOneActiveController", at_most_one_active_controller,
               "At most one running broker holds a controller context with the current controller "
               "epoch. A zombie with an older epoch is allowed: that is what fencing is for."),
        always("ControllerEpochFencing", controller_epoch_fencing,
               "No broker applies a request (LeaderAndIsr, StopReplica, or UpdateMetadata to its metadata "
               "cache) from a controller epoch older than one it has seen (StaleControllerEpoch), and a superseded controller never changes partition state in "
               "ZooKeeper. It allows a zombie's requests to be accepted by a broker that restarted and "
               "has seen no newer epoch (it cannot know better), and a controller whose session expired "
               "to keep writing until a successor bumps the epoch (no other controller exists yet). "
               "Fails with controller_epoch_fencing or zk_epoch_fencing off.", step=True),
        always("LegalStateTransitions", legal_state_transitions,
               "Every change of a partition or replica state in a controller's context is a legal "
               "transition of Kafka's state machines (seed 004). A new context (controller failover) "
               "initialises the states and is not a transition.", step=True),
        always("EpochsMonotonic", epochs_monotonic,
               "The controller epoch in ZooKeeper, each partition's leader epoch in ZooKeeper, and each "
               "running broker's highest seen controller epoch and applied leader epochs never go "
               "backwards. A broker that stops loses its memory (and starts from nothing), and a deleted "
               "topic's znodes go away: neither counts as going backwards.", step=True),
        always("LeaderElectedFromIsr", leader_elected_from_isr,
               "Assumes clean election: a new leader written to ZooKeeper was in the ISR that preceded "
               "it. Fails by design with unclean_leader_election on (the first live replica of AR may "
               "lead from outside the ISR, and committed data may be lost).", step=True),
    ]
    faults = cfg.max_crashes + cfg.max_session_expiries
    if cfg.max_controller_failovers > 0 and (faults > 0 or cfg.controller_deletion) and cfg.brokers > 1:
        props.append(sometimes("ControllerFailover",
                               lambda s: s.zk.controller_epoch >= 2 and s.zk.controller != NO_LEADER,
                               "A second controller is elected: failover is exercised."))
    if cfg.max_isr_shrinks > 0 and cfg.replication_factor > 1:
        props.append(sometimes("IsrShrinkAndExpand", lambda s: s.ghost.inv_isr_reexpanded,
                               "An ISR shrinks and later expands again."))
    if faults > 0:
        props.append(sometimes("PartitionOfflineAndBack", lambda s: s.ghost.inv_partition_back_online,
                               "A partition goes offline (its leader is gone) and is elected back online."))
    if cfg.unclean_leader_election and cfg.max_unclean_elections > 0:
        props.append(sometimes("UncleanElection", lambda s: s.ghost.inv_unclean_election,
                               "An unclean leader election happens."))
    if cfg.max_session_expiries > 0 and cfg.max_controller_failovers > 0 and cfg.brokers > 1:
        props.append(sometimes("ZombieController",
                               lambda s: any(br.alive and br.ctx is not None
                                             and br.ctx.epoch < s.zk.controller_epoch for br in s.brokers),
                               "A zombie controller runs beside its successor, so fencing is exercised."))
    if cfg.max_controlled_shutdowns > 0 and cfg.replication_factor > 1:
        props.append(sometimes("ControlledShutdownMovesLeader", lambda s: s.ghost.inv_shutdown_moved_leader,
                               "A controlled shutdown moves a partition's leadership to another ISR member."))
    if cfg.delete_topic_enable and cfg.max_topic_deletions > 0:
        props.append(sometimes("TopicDeleted", lambda s: not s.zk.topic,
                               "A topic deletion completes."))
    if cfg.data_path:
        props.extend(data_properties(cfg))
    if m.reassign_targets:
        props.extend(reassignment_properties(m))
    return props
