"""The Kafka controller model's properties, as plain Python predicates.

Each is named, has a kind, and a rationale that says what it checks and what it
deliberately allows.  State properties take the state; step properties take
``(prev, action, next)`` and state rules about change.  Properties read ghost
state; actions never do.
"""

from __future__ import annotations

from checker.model import Property, always, sometimes
from spec.state import NO_LEADER, NO_VERSION
from spec.statemachines import legal_partition, legal_replica


def leader_in_isr(s) -> bool:
    for zkp in s.zk.partitions:
        if zkp.version != NO_VERSION and zkp.leader != NO_LEADER and zkp.leader not in zkp.isr:
            return False
    return True


def make_isr_subset_of_ar(ar: tuple):
    ars = tuple(frozenset(a) for a in ar)

    def isr_subset_of_ar(s) -> bool:
        return all(set(zkp.isr) <= ars[p] for p, zkp in enumerate(s.zk.partitions))
    return isr_subset_of_ar


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
    if act.name in ("DeliverLeaderAndIsr", "DeliverStopReplica"):
        b = act.get("broker")
        if (nxt.brokers[b].partitions != prev.brokers[b].partitions
                and act.get("controller_epoch") < prev.brokers[b].controller_epoch_seen):
            return False
    # 2. A superseded controller (its epoch is older than ZooKeeper's) changes no
    #    partition state in ZooKeeper.
    c = act.get("controller")
    if c is not None:
        ctx = prev.brokers[c].ctx
        if ctx is not None and ctx.epoch < prev.zk.controller_epoch:
            if nxt.zk.partitions != prev.zk.partitions or nxt.zk.topic != prev.zk.topic:
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


def properties(cfg, ar: tuple) -> list[Property]:
    props = [
        always("LeaderInIsr", leader_in_isr,
               "In ZooKeeper, a partition's leader is a member of its ISR (or there is no leader). "
               "Every writer (elections, the leader's ISR shrink, the controller's ISR removal) must "
               "keep it; an unclean election keeps it too, by making the ISR just the new leader."),
        always("IsrSubsetOfAssignedReplicas", make_isr_subset_of_ar(ar),
               "The ISR in ZooKeeper only names assigned replicas. Allows an ISR smaller than the AR, "
               "never empty while there is a leader."),
        always("AtMostOneLeaderPerEpoch", at_most_one_leader_per_epoch,
               "No two running brokers believe they lead a partition in the same leader epoch. It "
               "deliberately allows two brokers to believe they lead in *different* epochs: a deposed "
               "leader that has not yet received its LeaderAndIsr is normal, and the leader epoch is "
               "what fences it. A violation means two controllers handed out the same epoch."),
        always("AtMostOneActiveController", at_most_one_active_controller,
               "At most one running broker holds a controller context with the current controller "
               "epoch. A zombie with an older epoch is allowed: that is what fencing is for."),
        always("ControllerEpochFencing", controller_epoch_fencing,
               "No broker applies a request from a controller epoch older than one it has seen "
               "(StaleControllerEpoch), and a superseded controller never changes partition state in "
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
    if cfg.max_controller_failovers > 0 and faults > 0 and cfg.brokers > 1:
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
    return props
