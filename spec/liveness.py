"""Liveness of the Kafka model: which actions are fair, and what must eventually happen.

Fairness (``KafkaModel.fair``).  The model's budgets bound the faults; nothing
forces one.  So the *unfair* actions are the faults and the environment's free
choices: a crash, a session expiry, a controlled shutdown request and the stop
that ends it, an ISR shrink (a follower falling behind), the admin's topic
deletion and partition reassignment requests, a producer's write, and a restart (a dead machine may never come back:
assuming it does would hide every "the partition needs broker b back" case).
Every other action, the controller's and the brokers' reactions, the delivery of
requests, a re-registration after an expiry, is weakly fair: if it stays enabled,
it happens.  The fairness constraint is per action instance (name and args), so
one partition's election cannot starve another's.

``EventuallyLeaderElected`` (``[]<>goal``): from every reachable state the cluster
reaches, on every fair behaviour, a state where every partition that has an
*electable* ISR member (registered in ZooKeeper, and not in controlled shutdown as
the active controller knows it) has a live leader that knows it leads (it applied
the LeaderAndIsr of the current leader epoch).  On a graph without cycles
(the budgets make the Kafka graph a DAG) this says: wherever the cluster can come
to rest, with only faults left to happen, no partition that could be led is
leaderless.

Why the scope.  A partition whose ISR members are all down has no leader *by
design* when unclean.leader.election.enable is false: Kafka keeps it offline
rather than lose acknowledged records, and a broker need not come back (restart
is not fair).  The unscoped "every partition eventually has a leader" therefore
fails on tiny (ShrinkIsr leaves ISR = {leader}, the leader crashes, the other
broker is alive but not in the ISR), which is expected; examples/liveness.py has
that property, and tests/test_liveness.py shows the lasso and that turning
unclean election on makes it hold.  Partitions not yet created (no znode) and a
deleted topic are out of scope (no ISR, nothing to lead), and so is a topic queued
for deletion when delete.topic.enable is on: the controller stops its replicas on
purpose, and a deletion that waits for a dead broker (ReplicaDeletionIneligible)
leaves the partition leaderless for as long as the broker stays down.

A live ISR member in controlled shutdown does not count either.  Kafka never elects
a broker that asked to stop: every election takes its live replicas from
``liveBrokerIds``, which leaves out ``shuttingDownBrokerIds`` (0.10's and 0.11's
``PartitionLeaderSelector`` classes, 2.x's ``ControllerContext.isReplicaOnline``), so
a partition whose only live ISR members are shutting down stays offline until they
stop (then no ISR member lives) or a new controller, whose shutting-down set starts
empty, elects one.  The stop (``ShutdownBroker``) is not fair, so the model may rest
before it: ``kmc check --preset shutdown`` found it in 12 steps (the controller shut
itself down, then the other broker crashed, leaving the controller the last ISR
member).  Only the active controller's set counts (the broker registered at
/controller): it is the one that elects, and a zombie's or a predecessor's view
elects nobody.  Nothing else is taken out: the partition is back in scope as soon as
an ISR member lives that the active controller may elect.
"""

from __future__ import annotations

from checker.model import Action, Property, eventually
from spec.state import NO_LEADER, NO_VERSION

UNFAIR = frozenset({
    "CrashBroker", "ExpireSession", "RestartBroker", "ShutdownBroker", "ControlledShutdown",
    "ShrinkIsr", "DeleteTopic", "Produce", "ReassignPartitions", "DeleteController", "CreateTopic",
})


def fair(act: Action) -> bool:
    """Weak fairness for every action but the faults and free choices in ``UNFAIR``."""
    return act.name not in UNFAIR


def shutting_down(s) -> tuple:
    """Per broker, whether the active controller (the broker registered at /controller)
    holds it in controlled shutdown; none without an active controller."""
    c = s.zk.controller
    ctx = s.brokers[c].ctx if c != NO_LEADER and s.brokers[c].alive else None
    return ctx.shutting_down if ctx is not None else (False,) * len(s.brokers)


def leaderless_partitions(s, scoped: bool = True, deleting_ok: bool = True) -> list[int]:
    """Partitions (of an existing topic, created in ZooKeeper) without a live leader
    that knows it leads; with ``scoped``, only those with an ISR member that is live
    and that the active controller does not hold in controlled shutdown (Kafka's
    ``liveBrokerIds``: the brokers an election may pick).  With ``deleting_ok`` (pass
    delete.topic.enable), none while the topic is queued for deletion: the controller
    takes its replicas down on purpose."""
    zk = s.zk
    if not zk.topic or (deleting_ok and zk.delete_topic):
        return []
    stopping = shutting_down(s) if scoped else ()
    out = []
    for p, li in enumerate(zk.partitions):
        if li.version == NO_VERSION:
            continue
        if scoped and not any(zk.sessions[b] > 0 and not stopping[b] for b in li.isr):
            continue
        leader = li.leader
        if leader == NO_LEADER or zk.sessions[leader] <= 0:
            out.append(p)
            continue
        mine = s.brokers[leader].partitions[p]
        if mine.leader != leader or mine.leader_epoch != li.leader_epoch:
            out.append(p)
    return out


def liveness_properties(cfg) -> list[Property]:
    deleting = cfg.delete_topic_enable

    def leader_elected(s) -> bool:
        return not leaderless_partitions(s, True, deleting)

    def available(s) -> bool:
        return not leaderless_partitions(s, False, deleting)

    extra = [eventually(
        "EventuallyAvailable", available,
        "under weak fairness of every non-fault action, every partition eventually has a live leader that knows "
        "it leads, whatever its ISR: producers and consumers (and a consumer group's coordinator, whose "
        "__consumer_offsets partition it is) can always go on. A dead broker need not restart, so this fails "
        "wherever every replica of a partition (RF 1: its only one) can be down for good; checked only with "
        "check_availability")] if cfg.check_availability else []
    return extra + [
        eventually("EventuallyLeaderElected", leader_elected,
                   "under weak fairness of every non-fault action, every partition with a live ISR member "
                   "that is not in controlled shutdown eventually has a live leader that knows it leads; "
                   "scoped to a live ISR member because with unclean election off a partition whose ISR is all "
                   "down stays offline by design (and a dead broker need not restart), to one not in controlled "
                   "shutdown because Kafka never elects a broker that asked to stop (liveBrokerIds), and to a "
                   "topic not being deleted"),
    ]
