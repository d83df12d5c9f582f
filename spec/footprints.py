"""The Kafka model's action footprints, for partial-order reduction (``kmc check --por``).

checker/por.py explores, in each state, a stubborn set of the enabled actions,
built from what each action *class* may read and write.  Here a class is an
action kind with the ids that say whose memory it touches, and a key names one
piece of the state:

- ``("zk.controller",)``: ``/controller`` and ``/controller_epoch``;
- ``("zk.session", b)``: broker b's registration ``/brokers/ids/b``;
- ``("zk.topic",)``: the topic, its deletion flag, its AR and reassignment znodes;
- ``("zk.partition", p)``: partition p's state znode;
- ``("alive", b)``, ``("seen", b)`` (the highest controller epoch b accepted),
  ``("inbox", b)`` (requests in flight to b), ``("ctx", b)`` (b's controller
  context);
- ``("view", b, p)``: b's LeaderAndIsr view of p and the AR it applied with it;
  ``("meta", b, p)``: its metadata cache entry; ``("replica", b, p)``: its log,
  HW, epoch cache, and as leader its followers' LEOs;
- ``("budget", name)`` and ``("ghost", name)``: one field each.

What makes two actions independent is that they touch different brokers' memory:
a delivery to broker 0 and one to broker 1, a fetch between brokers 0 and 1 and a
request delivered to broker 2, a broker's restart and another's ISR change.  The
controller writes every broker's inbox and every partition's znode, so its
actions depend on nearly everything, and so do crashes (a crash wipes a broker's
memory and may end the controller).  Properties say which keys they read
(``PROPERTY_READS``): an action writing one of them is *visible* and never left
out, so the reduction is largest when one property is checked (``--property``).

Declarations are checked by ``checker.por.validate`` on sampled states of the
configuration at hand before every ``--por`` search; tests/test_por.py compares
reduced and full searches on the presets small enough to run both.

The atomic controller (``atomic_controller=true``) fuses actions into one step,
so its actions have other footprints: none are declared for it.
"""

from __future__ import annotations

from checker.model import Action
from checker.por import Footprints
from spec.state import NO_LEADER, Ghost

ZC = ("zk.controller",)
ZT = ("zk.topic",)

# Actions of one controller: they all read and write its context.
CONTROLLER_ACTIONS = frozenset({
    "BrokerFailure", "BrokerStartup", "ElectLeader", "RemoveReplicaFromIsr", "TopicChange",
    "IsrChangeNotification", "ControlledShutdown", "StartTopicDeletion", "StartReplicaDeletion",
    "RetryReplicaDeletion", "CompleteTopicDeletion", "StartReassignment",
})

_DATA_GHOST = ("inv_read", "inv_pending", "inv_acked")


def _ghost(*names: str) -> list:
    return [("ghost", n) for n in names]


def _budget(*names: str) -> list:
    return [("budget", n) for n in names]


def kafka_footprints(model) -> Footprints | None:
    """The footprints of ``model``'s configuration, or None where none are declared
    (the atomic controller, and reassignment, whose steps are not broken down here).

    ``controller_event_order`` needs nothing more: it hides an action of controller c
    only while another action of c is enabled, so it changes neither which classes are
    enabled nor what a class reads and writes, and what it looks at (c's context, the
    partition znodes, the topic, the unclean-election budget) is already in the
    ``("Controller", c)`` class's reads (tests/test_por.py checks it with the rule on).
    It also hides ``ShutdownBroker`` of c while c is inside an event, so that class
    reads the same keys."""
    cfg = model.cfg
    if cfg.atomic_controller or model.reassign_targets:
        return None
    n, parts = cfg.brokers, cfg.partitions
    B, P = range(n), range(parts)

    def broker_mem(b: int) -> list:
        return ([("alive", b), ("seen", b), ("inbox", b), ("ctx", b)]
                + [(k, b, p) for p in P for k in ("view", "meta", "replica")])

    every = {
        "alive": [("alive", b) for b in B],
        "session": [("zk.session", b) for b in B],
        "partition": [("zk.partition", p) for p in P],
        "inbox": [("inbox", b) for b in B],
        "ctx": [("ctx", b) for b in B],
    }
    shutdowns = cfg.max_controlled_shutdowns > 0
    deletions = cfg.delete_topic_enable and cfg.max_topic_deletions > 0
    classes: dict = {}
    for b in B:
        stop_reads = [("alive", b), ("zk.session", b), ZC, *_budget("controller_failovers"),
                      *[("replica", b, p) for p in P]]
        stop_writes = broker_mem(b) + [("zk.session", b), ZC, *_budget("controller_failovers")]
        classes[("CrashBroker", b)] = (stop_reads + _budget("crashes"), stop_writes + _budget("crashes"))
        # Only the session that asked for controlled shutdown stops: every controller's
        # view of b (its context) says whether it did.  A controller waits for its event
        # in progress (spec.eventorder.stop_after_event), whose steps' guards read the
        # topic, the partition znodes and the unclean-election budget.
        classes[("ShutdownBroker", b)] = (stop_reads + every["alive"] + every["ctx"] + [ZT, *every["partition"],
                                          *_budget("unclean_elections")], stop_writes)
        classes[("ExpireSession", b)] = (
            [("alive", b), ("zk.session", b), ZC, *_budget("session_expiries", "controller_failovers")],
            [("zk.session", b), ZC, *_budget("session_expiries", "controller_failovers")])
        classes[("RegisterBroker", b)] = ([("alive", b), ("zk.session", b)], [("zk.session", b)])
        classes[("RestartBroker", b)] = ([("alive", b), ("zk.session", b)], [("alive", b), ("zk.session", b)])
        classes[("Resign", b)] = ([("alive", b), ("ctx", b), ZC], [("ctx", b)])
        classes[("ElectController", b)] = (
            [ZC, ZT, ("alive", b), ("ctx", b), *every["session"], *every["partition"]],
            [ZC, ("ctx", b), *every["inbox"]])
        # Every controller action of broker b: its context, ZooKeeper, and the
        # requests it sends to any broker (a controlled shutdown is offered only while
        # the asker's stop fits the controller-failover budget).  It reads other
        # brokers' liveness only to start a controlled shutdown, and writes the
        # topic's znodes only to complete a topic deletion.
        classes[("Controller", b)] = (
            [("ctx", b), ZC, ZT, *(every["alive"] if shutdowns else [("alive", b)]), *every["session"],
             *every["partition"], *_budget("unclean_elections", "controlled_shutdowns", "controller_failovers"),
             *_ghost("inv_partition_offline")],
            [("ctx", b), *([ZT] if deletions else []), *every["partition"], *every["inbox"],
             *_budget("unclean_elections", "controlled_shutdowns"),
             *_ghost("inv_partition_offline", "inv_partition_back_online", "inv_unclean_election",
                     "inv_shutdown_moved_leader")])
        # A request delivered to b changes b's memory only; becoming leader may move
        # the HW and expose records (the data ghost), becoming follower may truncate.
        # A StopReplica(delete=true)'s answer reaches the controller that sent it.
        mine = [("alive", b), ("seen", b), ("inbox", b), ZT,
                *[(k, b, p) for p in P for k in ("view", "meta", "replica")]]
        mine_w = [("seen", b), ("inbox", b), *[(k, b, p) for p in P for k in ("view", "meta", "replica")],
                  *_ghost("inv_follower_truncated", *_DATA_GHOST)]
        classes[("Deliver", b)] = (mine + _ghost("inv_pending"), mine_w)
        classes[("DeliverStopReplica", b)] = (mine + every["alive"] + every["ctx"], mine_w + every["ctx"])
        for p in P:
            # The leader's ISR write: conditional on the znode version it holds; an
            # expansion reads the follower's state, a shrink may move the HW.
            others = [(k, x, p) for x in B for k in ("view", "replica")] + every["alive"]
            classes[("Isr", b, p)] = (
                [ZT, ("zk.partition", p), *others, *_budget("isr_shrinks"), *_ghost("inv_isr_shrunk", "inv_pending")],
                [("zk.partition", p), ("view", b, p), ("replica", b, p), *_budget("isr_shrinks"),
                 *_ghost("inv_isr_shrunk", "inv_isr_reexpanded", *_DATA_GHOST)])
            # A producer writes to a broker that believes it leads (with the metadata
            # cache: one that some running broker's cache names).
            classes[("Produce", b, p)] = (
                [ZT, ("alive", b), ("view", b, p), ("replica", b, p), *_budget("records"),
                 *_ghost("inv_write_refused", "inv_pending"), *[("meta", x, p) for x in B], *every["alive"]],
                [("replica", b, p), *_budget("records"), *_ghost("inv_write_refused", *_DATA_GHOST)])
            for x in B:
                if x == b:
                    continue
                pair = [("alive", b), ("view", b, p), ("replica", b, p), ("alive", x), ("view", x, p),
                        ("replica", x, p)]
                # follower b fetches from leader x: both replicas change
                classes[("Fetch", b, x, p)] = (
                    [ZT, *pair, *_ghost("inv_pending")],
                    [("replica", b, p), ("replica", x, p), *_ghost("inv_follower_truncated", *_DATA_GHOST)])
                classes[("TruncateFollower", b, x, p)] = (pair, [("replica", b, p), *_ghost("inv_follower_truncated")])
    classes[("DeleteTopic",)] = ([ZT, *_budget("topic_deletions")], [ZT, *_budget("topic_deletions")])
    classes[("CreateTopic",)] = ([ZT, *_budget("topic_deletions")], [ZT])
    classes[("DeleteController",)] = ([ZC, *_budget("controller_failovers")], [ZC, *_budget("controller_failovers")])
    # The ghost is history only properties read: flags only ever set, record sets only
    # ever added to (the pending acks=all writes of one leader epoch, which only
    # that epoch's one leader moves to acknowledged).
    return Footprints(classes, class_of, property_reads(n, parts), commuting=[("ghost", f) for f in Ghost._fields],
                      guard=_guard_for(cfg))


def _guard_for(cfg):
    """The guard of a class none of whose actions is enabled: keys whose values alone
    keep it disabled, the first of its enabling conditions (in a fixed order) that is
    false; None where no single one is (then every key the class reads counts)."""
    cache = cfg.metadata_cache
    # Classes this configuration never enables: nothing enables them.
    never = set()
    if cfg.max_controlled_shutdowns == 0:
        never.add("ShutdownBroker")
    if not cfg.data_path:
        never.update(("Produce", "Fetch", "TruncateFollower"))

    def guard(s, c):
        name = c[0]
        if name in never:
            return []
        zk = s.zk
        if name in ("CrashBroker", "ExpireSession"):
            b = c[1]
            left = s.budget.crashes if name == "CrashBroker" else s.budget.session_expiries
            if left == 0:
                return [("budget", "crashes" if name == "CrashBroker" else "session_expiries")]
            if not s.brokers[b].alive:
                return [("alive", b)]
            if name == "ExpireSession" and zk.sessions[b] <= 0:
                return [("zk.session", b)]
            return [ZC, ("budget", "controller_failovers")]
        if name == "RestartBroker":
            return [("alive", c[1])]
        if name in ("RegisterBroker", "ShutdownBroker", "Resign", "ElectController", "Controller", "Deliver",
                    "DeliverStopReplica"):
            b = c[1]
            br = s.brokers[b]
            if name == "ElectController" and zk.controller != NO_LEADER:
                return [ZC]
            if not br.alive:
                return [("alive", b)]
            if name == "RegisterBroker":
                return [("zk.session", b)]
            if name in ("Deliver", "DeliverStopReplica"):
                return [("inbox", b)]
            if name in ("Resign", "Controller", "ElectController") and (br.ctx is None) == (name != "ElectController"):
                return [("ctx", b)]
            return None
        if name in ("Isr", "Produce", "Fetch", "TruncateFollower"):
            if not cfg.data_path and name != "Isr":
                return []          # never enabled: nothing enables it
            if name == "Produce" and cache:
                return None
            if not zk.topic and name != "TruncateFollower":
                return [ZT]
            b, p = c[1], c[-1]
            br = s.brokers[b]
            if not br.alive:
                return [("alive", b)]
            if name in ("Isr", "Produce"):
                if br.partitions[p].leader != b:
                    return [("view", b, p)]
                return None
            x = c[2]
            if br.partitions[p].leader != x:
                return [("view", b, p)]
            if br.replicas[p].truncating != (name == "TruncateFollower"):
                return [("replica", b, p)]
            xb = s.brokers[x]
            if not xb.alive:
                return [("alive", x)]
            if xb.partitions[p].leader != x:
                return [("view", x, p)]
            return None
        return None

    return guard


def class_of(a: Action):
    name = a.name
    if name in CONTROLLER_ACTIONS:
        return ("Controller", a.get("controller"))
    if name in ("DeliverLeaderAndIsr", "DeliverUpdateMetadata"):
        return ("Deliver", a.get("broker"))
    if name == "DeliverStopReplica":
        return ("DeliverStopReplica", a.get("broker"))
    if name in ("ShrinkIsr", "ExpandIsr"):
        return ("Isr", a.get("leader"), a.get("partition"))
    if name == "Produce":
        return ("Produce", a.get("leader"), a.get("partition"))
    if name in ("Fetch", "TruncateFollower"):
        return (name, a.get("follower"), a.get("leader"), a.get("partition"))
    b = a.get("broker")
    return (name,) if b is None else (name, b)


def property_reads(n: int, parts: int) -> dict:
    """Keys each property's predicate reads (for a step property: keys an action must
    write to break it).  A property not listed makes every action visible."""
    B, P = range(n), range(parts)
    alive = [("alive", b) for b in B]
    views = [("view", b, p) for b in B for p in P]
    reps = [("replica", b, p) for b in B for p in P]
    zkp = [("zk.partition", p) for p in P]
    ctx = [("ctx", b) for b in B]
    data = alive + views + reps
    return {
        "LeaderInIsr": zkp,
        "IsrSubsetOfAssignedReplicas": zkp + [ZT],
        "AtMostOneLeaderPerEpoch": alive + views,
        "AtMostOneActiveController": alive + ctx + [ZC],
        "ControllerEpochFencing": views + [("meta", b, p) for b in B for p in P] + zkp + [ZT],
        "LegalStateTransitions": ctx,
        "EpochsMonotonic": [ZC] + zkp + alive + views + [("seen", b) for b in B],
        "LeaderElectedFromIsr": zkp,
        "NoAckedRecordLost": data + [("ghost", "inv_acked")],
        "LogsMatchBelowHighWatermark": alive + reps,
        "HighWatermarkBelowIsrLeo": data + zkp,
        "ConsistentRead": data + [("ghost", "inv_read")],
        "LeaderCompleteness": data + zkp + [("ghost", "inv_read")],
        "RecordCommitted": [("ghost", "inv_read")],
        "FollowerTruncates": [("ghost", "inv_follower_truncated")],
        "AcksAllRefused": [("ghost", "inv_write_refused")],
        "AcksAllAcknowledged": [("ghost", "inv_acked")],
        "ControllerFailover": [ZC],
        "IsrShrinkAndExpand": [("ghost", "inv_isr_reexpanded")],
        "PartitionOfflineAndBack": [("ghost", "inv_partition_back_online")],
        "UncleanElection": [("ghost", "inv_unclean_election")],
        "ZombieController": [ZC] + alive + ctx,
        "ControlledShutdownMovesLeader": [("ghost", "inv_shutdown_moved_leader")],
        "TopicDeleted": [ZT],
    }


__all__ = ["kafka_footprints", "class_of", "property_reads"]
