"""Partition reassignment: the admin request and the controller's 11 steps (§7 of the
protocol reference; seed 000, "Partition重新分配"; Kafka 2.x
``KafkaController.onPartitionReassignment``).

With OAR the AR when the controller takes the reassignment up and RAR the target:
1. AR in ZooKeeper := OAR + RAR;  2. leader epoch + 1, LeaderAndIsr to every replica in AR;
3. RAR - OAR -> NewReplica;  4. wait until RAR is in the ISR;  5. RAR -> OnlineReplica;
6. cached AR := RAR;  7. leader not in RAR (or not live): ReassignPartition election (if it
   fails, nothing is written and the event goes on);
8. OAR - RAR -> OfflineReplica (out of the ISR, StopReplica);
9. OAR - RAR -> NonExistentReplica (deleted);  10. AR in ZooKeeper := RAR;
11. delete /admin/reassign_partitions.

Each step is its own action, so that a controller can crash, lose its session and
carry on as a zombie, or be succeeded, between any two: that is what tests the
seed's claim that writing AR last makes every crash recoverable.  Kafka runs steps
1-3 in one event and 5-11 in another; a zombie finishes the steps of an event it is
in, but only a controller that still has its watches sees the ISR change that ends
step 4.  Step 9 is three actions because it is three state-machine transitions
(ReplicaDeletionStarted, ReplicaDeletionSuccessful, NonExistentReplica), each legal.

A new controller reads AR and ``/admin/reassign_partitions`` from ZooKeeper
(``ElectController``) and starts the reassignment again from the top, as Kafka's
``initiateReassignReplicasForTopicPartition`` does: if AR already equals RAR it only
deletes the request (step 11); if RAR is already in the ISR it goes straight to
step 5; else step 1 again, whose OAR is now the AR in ZooKeeper (OAR + RAR if the
predecessor got past step 1), so OAR - RAR is the same set.

Coarser than Kafka, and why: every step is atomic (step 8's ISR removals of several
replicas are one conditional write, Kafka writes once per replica), and the AR is
ordered as OAR followed by RAR - OAR (the seed's table lists it so; Kafka 2.x takes
a Scala Set, whose order is an implementation detail).
"""

from __future__ import annotations

from checker.model import Action, action
from spec import election
from spec.controller import (conditional_write, electable_brokers, live_brokers, newer_mark, running_controllers,
                             send_stop_replica, send_leader_and_isr, watching_controllers, with_ctx)
from spec.state import (
    NEW_REPLICA, NO_LEADER, NO_VERSION, NON_EXISTENT_REPLICA, OFFLINE_REPLICA, ONLINE_PARTITION, ONLINE_REPLICA,
    REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL, KafkaState, Reassignment, put,
)
from spec.statemachines import legal_partition, legal_replica

DOCS = {
    "ReassignPartitions": "the admin tool (kafka-reassign-partitions --execute) writes RAR for a partition to "
                          "/admin/reassign_partitions; refused while another reassignment is pending",
    "StartReassignment": "the controller's /admin/reassign_partitions watch fires: it takes the reassignment up "
                         "(partitionsBeingReassigned)",
    "ReassignExtendAr": "reassignment step 1: AR in ZooKeeper and in the controller's cache := OAR + RAR",
    "ReassignBumpLeaderEpoch": "step 2: leader epoch + 1 (conditional write), LeaderAndIsr carrying AR = OAR + RAR "
                               "to every live replica in AR",
    "ReassignStartNewReplicas": "step 3: the replicas in RAR - OAR go NewReplica",
    "ReassignOnlineReplicas": "steps 4-5: once every replica of RAR is in the ISR in ZooKeeper (the ISR watch "
                              "fires), they go OnlineReplica",
    "ReassignCacheAr": "step 6: AR in the controller's cache := RAR",
    "ReassignElectLeader": "step 7: a leader outside RAR (or dead) is replaced by a ReassignPartition election "
                           "(the first live replica of RAR in the ISR; leader=-1: none, the election fails, "
                           "nothing is written and the event goes on with step 8); a live leader in RAR gets "
                           "leader epoch + 1; LeaderAndIsr carries AR = RAR",
    "ReassignOfflineOldReplicas": "step 8: the replicas in OAR - RAR go OfflineReplica: out of the ISR in ZooKeeper "
                                  "(conditional write, LeaderAndIsr to RAR) and StopReplica(delete=false)",
    "ReassignStartReplicaDeletion": "step 9, first transition: OAR - RAR go ReplicaDeletionStarted and are sent "
                                    "StopReplica(delete=true)",
    "ReassignReplicaDeletionSuccessful": "step 9, second transition: ReplicaDeletionSuccessful (Kafka 2.x does "
                                         "not wait for the response)",
    "ReassignRemoveReplicas": "step 9, last transition: OAR - RAR go NonExistentReplica",
    "ReassignShrinkAr": "step 10: AR in ZooKeeper := RAR",
    "CompleteReassignment": "step 11: the controller deletes the partition from /admin/reassign_partitions",
}

# The steps in the order one controller takes them ("4" is the wait before "5").
ORDER = ("0", "1", "2", "3", "5", "6", "7", "8", "9a", "9b", "9", "10")
ACTION = {
    "1": "ReassignExtendAr", "2": "ReassignBumpLeaderEpoch", "3": "ReassignStartNewReplicas",
    "5": "ReassignOnlineReplicas", "6": "ReassignCacheAr", "7": "ReassignElectLeader",
    "8": "ReassignOfflineOldReplicas", "9a": "ReassignStartReplicaDeletion",
    "9b": "ReassignReplicaDeletionSuccessful", "9": "ReassignRemoveReplicas", "10": "ReassignShrinkAr",
    "11": "CompleteReassignment",
}
STEP = {name: step for step, name in ACTION.items()}


def removed(r: Reassignment) -> tuple:
    """OAR - RAR: the replicas the reassignment takes away."""
    return tuple(x for x in r.original if x not in r.target)


def extended(r: Reassignment) -> tuple:
    """OAR + RAR, ordered: OAR, then what RAR adds."""
    return r.original + tuple(x for x in r.target if x not in r.original)


def next_step(s: KafkaState, p: int, r: Reassignment) -> str | None:
    """The step a controller holding ``r`` takes next for partition p; None while it
    waits (step 4)."""
    isr = s.zk.partitions[p].isr   # areReplicasInIsr reads ZooKeeper
    in_isr = all(x in isr for x in r.target)
    if r.step == "0":
        if r.original == r.target:
            return "11"            # already assigned: Kafka only deletes the request
        return "5" if in_isr else "1"
    if r.step == "3":
        return "5" if in_isr else None
    i = ORDER.index(r.step)
    return ORDER[i + 1] if i + 1 < len(ORDER) else "11"


def _step7(s: KafkaState, ctx, p: int, r: Reassignment):
    """``(leader, elected)`` for step 7; ``leader`` is ``NO_LEADER`` when the
    ReassignPartition election fails, and None means the leader-epoch bump fails.

    ``moveReassignedPartitionLeaderIfRequired`` keeps a leader in RAR only if it is live
    and not in controlled shutdown, and otherwise runs the election, which never picks
    a broker in controlled shutdown (``liveBrokerIds`` in 0.10 and 0.11's
    ``ReassignedPartitionLeaderSelector``, ``isReplicaOnline`` in 2.x's
    ``leaderForReassign``: ``electable_brokers``).  An election that finds no live
    replica of RAR in the ISR, or a znode a newer controller wrote (``newer_mark``),
    fails without a write, and the event goes on with step 8: 0.10's and 0.11's
    ``PartitionStateMachine.handleStateChange`` log the selector's exception and
    return, 2.x's ``electLeaderForPartitions`` logs ``failedElections``, and
    ``onPartitionReassignment`` carries on in every version.  The epoch bump of a
    kept leader (``updateLeaderEpoch``) throws on a newer controller's mark instead,
    which ends the event (None)."""
    zkp = s.zk.partitions[p]   # moveReassignedPartitionLeaderIfRequired reads the leader
    live = electable_brokers(ctx)
    mark = newer_mark(s, ctx, p)
    if zkp.leader in r.target and live[zkp.leader]:
        return None if mark else (zkp.leader, False)
    e = None if mark else election.reassign_partition(r.target, zkp.isr, live)
    return (e[0] if e else NO_LEADER), True


# Steps after which the controller is still inside the event that runs them: Kafka's
# controller is one event thread, so it handles no other event until it finishes
# steps 1-3 or 5-11 (or step 7's epoch bump fails on a newer controller's mark and the
# event ends).
BUSY = frozenset(("1", "2", "5", "6", "7", "8", "9a", "9b", "9", "10"))


def busy(m, s: KafkaState) -> frozenset:
    """Controllers in the middle of a reassignment event: they take no action but
    the next step (other actors, faults and other controllers interleave freely)."""
    out = set()
    for c, ctx in running_controllers(s):
        for p, r in enumerate(ctx.reassigning):
            if r is not None and r.step in BUSY and not _event_ended(s, ctx, p, r):
                out.add(c)
    return frozenset(out)


def _event_ended(s: KafkaState, ctx, p: int, r: Reassignment) -> bool:
    """The event stopped before its next step: step 7's kept leader's epoch bump, or
    step 2's or step 8's write, fails on a newer controller's mark (``updateLeaderEpoch``
    and ``removeReplicasFromIsr`` throw ``StateChangeFailedException``, which ends
    ``onPartitionReassignment``).  Such a controller is idle: it may handle its next
    event or stop cleanly (``spec.eventorder.stop_after_event``)."""
    if r.step == "6":
        return _step7(s, ctx, p, r) is None
    return r.step in ("1", "7") and newer_mark(s, ctx, p)


# -- enabled ----------------------------------------------------------------------------

def admin_enabled(m, s: KafkaState, out: list) -> None:
    """kafka-reassign-partitions refuses to write while a reassignment is pending; the
    requests are made in the configured order.  A partition is reassigned only once
    the controller has created it (it has a state znode)."""
    zk = s.zk
    if s.budget.reassignments == 0 or not zk.topic or zk.delete_topic or any(zk.reassign):
        return
    p, rar = m.reassign_targets[len(m.reassign_targets) - s.budget.reassignments]
    if zk.partitions[p].version != NO_VERSION:
        out.append(action("ReassignPartitions", partition=p, replicas=rar))


def steps_enabled(m, s: KafkaState, out: list) -> None:
    if not m.reassign_targets or not s.zk.topic:
        return
    watching = {c for c, _ in watching_controllers(s)}
    for c, ctx in running_controllers(s):
        if ctx.deleting:
            continue
        for p, r in enumerate(ctx.reassigning):
            if r is None:
                if c in watching and s.zk.reassign[p]:
                    out.append(action("StartReassignment", controller=c, partition=p))
                continue
            k = next_step(s, p, r)
            if k is None or (k == "5" and r.step == "3" and c not in watching):
                continue   # step 4 ends on an ISR watch, which a zombie no longer gets
            if k == "2" and s.zk.partitions[p].version == NO_VERSION:
                continue
            if k in ("2", "8") and newer_mark(s, ctx, p):
                # updateLeaderEpoch and removeReplicasFromIsr fail on a newer controller's
                # mark: the controller takes this reassignment no further (it resigns
                # once it notices /controller is not its own).
                continue
            if k == "7":
                e = _step7(s, ctx, p, r)
                if e is not None:
                    out.append(action(ACTION[k], controller=c, partition=p, leader=e[0]))
                continue
            out.append(action(ACTION[k], controller=c, partition=p))


# -- helpers ----------------------------------------------------------------------------

def _fenced(m, s: KafkaState, c: int) -> bool:
    """KAFKA-6082: a controller's ZooKeeper writes are conditional on its controller
    epoch; one that finds it has moved resigns and writes nothing."""
    return m.cfg.zk_epoch_fencing and s.zk.controller_epoch != s.brokers[c].ctx.epoch


def _set_zk(s: KafkaState, **changes) -> KafkaState:
    return s._replace(zk=s.zk._replace(**changes))


def _advance(s: KafkaState, c: int, p: int, step: str, **ctx_changes) -> KafkaState:
    ctx = s.brokers[c].ctx
    r = ctx.reassigning[p]._replace(step=step)
    return with_ctx(s, c, ctx._replace(reassigning=put(ctx.reassigning, p, r), **ctx_changes))


def _move_replicas(m, ctx, p: int, replicas, target: str):
    """``replica_states`` with each of ``replicas`` moved to ``target`` where that is a
    legal transition (Kafka logs an illegal one and leaves the replica as it is)."""
    rs = ctx.replica_states[p]
    for x in replicas:
        i = m.ar[p].index(x)
        if legal_replica(rs[i], target):
            rs = put(rs, i, target)
    return put(ctx.replica_states, p, rs)


def _reassignment(s: KafkaState, a: Action):
    c, p = a.get("controller"), a.get("partition")
    ctx = s.brokers[c].ctx
    return c, p, ctx, ctx.reassigning[p]


# -- apply ------------------------------------------------------------------------------

def reassign_partitions(m, s: KafkaState, a: Action) -> KafkaState:
    p = a.get("partition")
    g = s.ghost
    s = _set_zk(s, reassign=put(s.zk.reassign, p, a.get("replicas")))
    return s._replace(budget=s.budget._replace(reassignments=s.budget.reassignments - 1),
                      ghost=g._replace(inv_leader_moved=put(g.inv_leader_moved, p, ())))


def start_reassignment(m, s: KafkaState, a: Action) -> KafkaState:
    c, p = a.get("controller"), a.get("partition")
    ctx = s.brokers[c].ctx
    r = Reassignment(s.zk.reassign[p], ctx.ar[p], "0")
    return with_ctx(s, c, ctx._replace(reassigning=put(ctx.reassigning, p, r)))


def extend_ar(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, ctx, r = _reassignment(s, a)
    if _fenced(m, s, c):
        return with_ctx(s, c, None)
    ar = extended(r)
    s = _set_zk(s, ar=put(s.zk.ar, p, ar))
    return _advance(s, c, p, "1", ar=put(ctx.ar, p, ar))


def bump_leader_epoch(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, _ctx, _r = _reassignment(s, a)
    zkp = s.zk.partitions[p]
    s, written = conditional_write(m, s, c, p, zkp.leader, zkp.isr, bump=True)
    if not written:
        return s
    ctx = s.brokers[c].ctx
    live = live_brokers(ctx)
    s = send_leader_and_isr(m, s, ctx.epoch, p, ctx.partitions[p], [x for x in ctx.ar[p] if live[x]], ctx.ar[p],
                             ctx.live)
    return _advance(s, c, p, "2")


def start_new_replicas(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, ctx, r = _reassignment(s, a)
    new = [x for x in r.target if x not in r.original]
    return _advance(s, c, p, "3", replica_states=_move_replicas(m, ctx, p, new, NEW_REPLICA))


def online_replicas(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, ctx, r = _reassignment(s, a)
    return _advance(s, c, p, "5", replica_states=_move_replicas(m, ctx, p, r.target, ONLINE_REPLICA))


def cache_ar(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, ctx, r = _reassignment(s, a)
    return _advance(s, c, p, "6", ar=put(ctx.ar, p, r.target))


def elect_leader(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, ctx, r = _reassignment(s, a)
    leader, elected = _step7(s, ctx, p, r)
    if leader == NO_LEADER:
        # The failed election writes and sends nothing and leaves the partition's state
        # as it was; the old leader leaves at step 8 (leader -1 if it led).
        return _advance(s, c, p, "7")
    s, written = conditional_write(m, s, c, p, leader, s.zk.partitions[p].isr, bump=True)
    if not written:
        return s
    ctx = s.brokers[c].ctx
    live = live_brokers(ctx)
    if elected:
        # the OnlinePartition transition with the ReassignPartition strategy: the
        # request goes to the (new) AR.
        if legal_partition(ctx.partition_states[p], ONLINE_PARTITION):
            ctx = ctx._replace(partition_states=put(ctx.partition_states, p, ONLINE_PARTITION))
            s = with_ctx(s, c, ctx)
        targets = ctx.ar[p]
    else:
        # updateLeaderEpochAndSendRequest: to OAR + RAR, with AR = RAR.
        targets = extended(r)
    s = send_leader_and_isr(m, s, ctx.epoch, p, ctx.partitions[p], [x for x in targets if live[x]], ctx.ar[p],
                             ctx.live)
    g = s.ghost
    s = s._replace(ghost=g._replace(inv_leader_moved=put(g.inv_leader_moved, p, r.target)))
    return _advance(s, c, p, "7")


def offline_old_replicas(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, ctx, r = _reassignment(s, a)
    old = removed(r)
    zkp = s.zk.partitions[p]   # removeReplicasFromIsr reads ZooKeeper first
    leader, isr = zkp.leader, zkp.isr
    for x in old:
        if x in isr:
            # Kafka 2.x: a removed leader leaves no leader; the last ISR member stays.
            if x == leader:
                leader = NO_LEADER
            if len(isr) > 1:
                isr = tuple(y for y in isr if y != x)
    if (leader, isr) != (zkp.leader, zkp.isr):
        s, written = conditional_write(m, s, c, p, leader, isr, bump=True)
        if not written:
            return s
        ctx = s.brokers[c].ctx
        live = live_brokers(ctx)
        s = send_leader_and_isr(m, s, ctx.epoch, p, ctx.partitions[p], [x for x in ctx.ar[p] if live[x]],
                                 ctx.ar[p], ctx.live)
    ctx = s.brokers[c].ctx
    s = send_stop_replica(s, ctx, p, old, delete=False)
    return _advance(s, c, p, "8", replica_states=_move_replicas(m, ctx, p, old, OFFLINE_REPLICA))


def start_replica_deletion(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, ctx, r = _reassignment(s, a)
    old = removed(r)
    s = send_stop_replica(s, ctx, p, old, delete=True)
    return _advance(s, c, p, "9a", replica_states=_move_replicas(m, ctx, p, old, REPLICA_DELETION_STARTED))


def replica_deletion_successful(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, ctx, r = _reassignment(s, a)
    return _advance(s, c, p, "9b",
                    replica_states=_move_replicas(m, ctx, p, removed(r), REPLICA_DELETION_SUCCESSFUL))


def remove_replicas(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, ctx, r = _reassignment(s, a)
    rs = ctx.replica_states[p]
    for x in removed(r):
        i = m.ar[p].index(x)
        if rs[i] == REPLICA_DELETION_SUCCESSFUL:
            rs = put(rs, i, NON_EXISTENT_REPLICA)
    return _advance(s, c, p, "9", replica_states=put(ctx.replica_states, p, rs))


def shrink_ar(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, ctx, r = _reassignment(s, a)
    if _fenced(m, s, c):
        return with_ctx(s, c, None)
    s = _set_zk(s, ar=put(s.zk.ar, p, r.target))
    return _advance(s, c, p, "10", ar=put(ctx.ar, p, r.target))


def complete_reassignment(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, ctx, r = _reassignment(s, a)
    if _fenced(m, s, c):
        return with_ctx(s, c, None)
    s = _set_zk(s, reassign=put(s.zk.reassign, p, ()))
    s = with_ctx(s, c, ctx._replace(reassigning=put(ctx.reassigning, p, None)))
    if s.zk.ar[p] == r.target and not s.ghost.inv_reassigned:
        s = s._replace(ghost=s.ghost._replace(inv_reassigned=True))
    return s


ENABLED = (admin_enabled, steps_enabled)
APPLY = {
    "ReassignPartitions": reassign_partitions,
    "StartReassignment": start_reassignment,
    "ReassignExtendAr": extend_ar,
    "ReassignBumpLeaderEpoch": bump_leader_epoch,
    "ReassignStartNewReplicas": start_new_replicas,
    "ReassignOnlineReplicas": online_replicas,
    "ReassignCacheAr": cache_ar,
    "ReassignElectLeader": elect_leader,
    "ReassignOfflineOldReplicas": offline_old_replicas,
    "ReassignStartReplicaDeletion": start_replica_deletion,
    "ReassignReplicaDeletionSuccessful": replica_deletion_successful,
    "ReassignRemoveReplicas": remove_replicas,
    "ReassignShrinkAr": shrink_ar,
    "CompleteReassignment": complete_reassignment,
}
