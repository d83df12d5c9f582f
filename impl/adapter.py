"""The conformance adapter: the model's actions as driver operations on impl/, and the
abstraction function from the implementation's state to the model's variables.

It imports nothing from spec/: the two sides share only the action vocabulary (names
and arguments, as ``checker.model.Action``) and the configuration keys.

Action table.  "c" is the controller broker, "tp" the topic's partition named by the
action's ``partition``; every operation is one call on ``impl.cluster.Cluster``.

=========================  ==========================================================  ======================================
model action               driver operation(s)                                          granularity
=========================  ==========================================================  ======================================
CrashBroker(b)             ``crash(b)``: process dies, session closed                  same
RestartBroker(b)           ``start_broker(b)``: new process, new session, registers    same
ExpireSession(b)           ``expire_session(b)``: the server expires the session;      same
                           the client reconnects without registering
RegisterBroker(b)          ``register(b)``: /brokers/ids/<b> in the new session        same
Resign(b)                  ``resign(b)``: onControllerResignation                      same
ShutdownBroker(b)          ``crash(b)`` once ``may_stop_after_controlled_shutdown``     the broker's wait for the controller's
                                                                                        answer is the enabling condition
DeleteController()         ``delete_controller()``: an operator's rmr /controller      same
CreateTopic()              ``Admin.create_topic(t, ...)`` (kafka-topics --create)     same
TopicChange(c)             ``topic_change(c, t)``: the /brokers/topics watch            same
DeleteTopic()              ``Admin.delete_topic(t)`` (kafka-topics --delete): writes   same
                           /admin/delete_topics/t
ElectController(b)         ``elect_controller(b)``: create /controller, bump the        Kafka's whole onControllerFailover
                           epoch, load the context, send LeaderAndIsr, take the        is one step in both
                           dead replicas OfflineReplica (2.3+)
BrokerFailure(c, b)        ``broker_change(c, b)`` (a failure in the diff)             Kafka handles every broker of one
BrokerStartup(c, b)        ``broker_change(c, b)`` (a startup in the diff)             BrokerChange event, and elects, in one
                                                                                        event; here one broker per step, and
                                                                                        elections are ElectLeader steps
ElectLeader(c, p, ...)     ``elect_leader(c, tp)``; enabled iff the controller's        one partition per step
                           pending election is exactly (strategy, leader, clean);
                           a preferred one of the active controller through
                           ``Admin.preferred_replica_election([tp])``
                           (kafka-preferred-replica-election) and the
                           controller's ``preferred_replica_election``
RemoveReplicaFromIsr       ``remove_replica_from_isr(c, tp, r)``: one the event owes   one replica's OfflineReplica per step
IsrChangeNotification      ``isr_change_notification(c, tp)``                          one partition of the notifications
ControlledShutdown(c, b)   ``controlled_shutdown(c, b)``: b's request, c's handling    request and response in one step;
                                                                                        elections and ISR removals follow
StartTopicDeletion(c)      ``start_topic_deletion(c, t)``                               same
StartReplicaDeletion       ``start_replica_deletion(c, tp, r)``                         one replica per step
RetryReplicaDeletion       ``retry_replica_deletion(c, tp, r)``                         one replica per step
CompleteTopicDeletion(c)   ``complete_topic_deletion(c, t)``                            same
DeliverLeaderAndIsr(b,..)  ``deliver(b, request)``: the one queued request with        Kafka batches partitions per request;
                           these fields                                                 here one partition per request
DeliverStopReplica(b, ..)  ``deliver(b, request)``; its response reaches the           response in the same step
                           controller at once
DeliverUpdateMetadata      ``deliver(b, request)`` (metadata_cache): the broker's       Kafka batches partitions per request;
(b, p, ..)                 MetadataCache takes the leader and the live brokers; the    here one partition per request
                           requests of one controller keep the FIFO orders of
                           spec/metadata.py (a LeaderAndIsr also waits there)
ShrinkIsr(l, p, r)         ``shrink_isr(l, tp, r)``: the replica-lag timer fires       same
ExpandIsr(l, p, r)         data path: ``expand_isr(l, tp, r)`` (the leader checks      Kafka expands while it handles a
                           what r's fetches told it); without a data path first        fetch; without a data path the
                           ``truncate(r, tp)`` if needed and ``fetch(r, tp)``,         model has no fetch, so the step is
                           then ``expand_isr``                                          r's fetch round and the expansion
Produce(l, p, acks)        ``produce(l, tp, acks)``; NotEnoughReplicas changes         same
                           nothing.  With metadata_cache, enabled iff a running
                           broker's MetadataCache names l and lists it as live (the
                           producer's metadata request) and l runs;
                           NOT_LEADER_FOR_PARTITION changes nothing
Fetch(f, l, p)             ``fetch(f, tp)``: one fetch round (again at once after      Kafka's follower refetches after an
                           OffsetOutOfRange)                                            OffsetOutOfRange in a later round
TruncateFollower(f, l, p)  ``truncate(f, tp)``: OffsetsForLeaderEpoch rounds until     KIP-279 may need several rounds;
                           the follower knows where to truncate                         the model takes them as one step
(none: no variable         after every action, ``refused_fetch(f, tp)`` for each        a refused round changes nothing:
changes)                   follower whose leader would refuse its next Fetch or         the model has no step for it
                           OffsetsForLeaderEpoch (NOT_LEADER_FOR_PARTITION,
                           FENCED_LEADER_EPOCH): the round runs, nothing may change;
                           and ``shrink_isr``/``expand_isr`` for each replica a
                           leader with a stale cached zkVersion would take out of
                           (or add to) its ISR: ZooKeeper refuses the write
                           (BadVersion), nothing may change
ReassignPartitions(p, r)   ``Admin.execute_reassignment`` (kafka-reassign-partitions    same
                           --execute) writes /admin/reassign_partitions; a target
                           with no registered broker, which the tool refuses, as
                           the znode (``reassign_partitions``)
StartReassignment(c, p)    ``start_reassignment(c, tp)``: the controller takes it up    same
Reassign*(c, p), Complete  ``reassignment_step(c, step, tp)``: one of the 11 steps     a controller inside a reassignment
Reassignment(c, p)                                                                      event (steps 1-3, 5-11) handles no
                                                                                        other event; a StopReplica does not
                                                                                        overtake its controller's LeaderAndIsr
=========================  ==========================================================  ======================================

With ``controller_event_order`` and ``atomic_controller`` the driver takes the
controller's steps in the order of Kafka's one event thread (impl/eventorder.py).

``enabled`` asks the implementation whether it can do the action now, and the
driver's fault injector whether it may still inject that fault: faults are bounded by
the same parameters as the model's (``FaultBudget``: crashes, session expiries,
controller failovers, ISR shrinks, unclean elections, controlled shutdowns, topic
deletions, records the producers may write, and one refused produce:
impl/faultbudget.py); healing is never bounded.  With both, ``enabled`` is exactly the model's enabled set, so the
harness can also check that the implementation cannot do *more* than the model.

The abstraction function ``observe`` (impl/projection.py, with ``IGNORED``: what it
leaves out and why) returns the model's variables ``zk`` and ``brokers``.

The driver is one class of mixins, one concept each (impl/driverbase.py lists them):
this module holds the action vocabulary, the configuration, ``enabled``'s guards
(``_possible``: can the brokers do it now), ``apply`` and the producers' side (which
acks=all writes were acknowledged, Kafka's ``DelayedProduce``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from impl.admin import Admin
from impl.channel import ControllerChannel
from impl.cluster import Cluster
from impl.config import IBP_BY_TRUNCATION, BrokerConfig
from impl.driverbase import REASSIGN_STEPS, TOPIC
from impl.eventorder import HIDDEN, EventOrder
from impl.faultbudget import FaultBudget, FaultInjector
from impl.fetchrounds import FetchRounds
from impl.projection import Projection
from impl.zkclient import NO_LEADER, get_partition_reassignment

__all__ = ["TOPIC", "KafkaImplementation", "parse_reassignments"]


def parse_reassignments(text: str) -> list[tuple[int, tuple]]:
    """The admin's reassignment requests, in order: "P:r,r;..." or "r,r" (partition 0)."""
    out = []
    for item in (x.strip() for x in text.split(";")):
        if item:
            part, _, replicas = item.rpartition(":")
            out.append((int(part) if part.strip() else 0, tuple(int(r) for r in replicas.split(","))))
    return out


#: what the cluster does on its own while it settles (``Cluster.settle``): the controller's
#: work, the requests' delivery, the followers' truncation and fetches and the leaders' ISR
#: expansion; no fault, no client (produce, admin tools) and no lag timer (ShrinkIsr)
OWN_ACTIONS = {
    **{name: "the controller's work" for name in (
        "ElectController", "Resign", "RegisterBroker", "BrokerFailure", "BrokerStartup", "TopicChange", "ElectLeader",
        "RemoveReplicaFromIsr", "IsrChangeNotification", "StartTopicDeletion", "StartReplicaDeletion",
        "RetryReplicaDeletion", "CompleteTopicDeletion", "StartReassignment", *REASSIGN_STEPS)},
    **{name: "the controller's requests delivered" for name in (
        "DeliverLeaderAndIsr", "DeliverStopReplica", "DeliverUpdateMetadata")},
    **{name: "the followers' fetchers and the leaders' ISR expansion" for name in (
        "TruncateFollower", "Fetch", "ExpandIsr")},
}


def _cfg(config: Mapping[str, Any], key: str, default: Any) -> Any:
    return config.get(key, default)


class KafkaImplementation(Projection, FaultInjector, EventOrder, ControllerChannel, FetchRounds):
    """A fresh cluster in the model's initial state: every broker registered, the topic
    created with its assignment, no controller yet.

    >>> from checker.model import action
    >>> impl = KafkaImplementation({"brokers": 2, "replication_factor": 2, "partitions": 1})
    >>> impl.enabled(action("ElectController", broker=0))
    True
    >>> impl.apply(action("ElectController", broker=0))
    >>> impl.observe()["zk"]["controller"], impl.observe()["zk"]["controller_epoch"]
    (0, 1)
    """

    def __init__(self, config: Mapping[str, Any], state_change_dir=None) -> None:
        self.n = int(_cfg(config, "brokers", 3))
        self.partitions = int(_cfg(config, "partitions", 1))
        rf = int(_cfg(config, "replication_factor", 3))
        self.data_path = int(_cfg(config, "max_records", 0)) > 0
        truncation = _cfg(config, "truncation", "kip320")
        self.truncation = truncation
        # The known-bad switches are given only to take a fence away: a correct broker runs
        # with BrokerConfig's defaults, so that those defaults are checked too.
        fences_off = {key: False for key, flag in (("controller_epoch_check", "controller_epoch_fencing"),
                                                   ("controller_epoch_zk_check", "zk_epoch_fencing"))
                      if not _cfg(config, flag, True)}
        broker_config = BrokerConfig(
            inter_broker_protocol_version=IBP_BY_TRUNCATION[truncation],
            delete_topic_enable=bool(_cfg(config, "delete_topic_enable", False)),
            auto_leader_rebalance_enable=bool(_cfg(config, "preferred_election", True)),
            send_update_metadata=bool(_cfg(config, "metadata_cache", False)),
            **fences_off,
        )
        self.metadata_cache = bool(_cfg(config, "metadata_cache", False))
        self.controller_deletion = bool(_cfg(config, "controller_deletion", False))
        self.cluster = Cluster(self.n, broker_config, state_change_dir)
        self.budget = FaultBudget(config)
        self.atomic_controller = bool(_cfg(config, "atomic_controller", False))
        self.event_order = bool(_cfg(config, "controller_event_order", True))
        self.pending_acks: list[tuple] = []     # the producers' acks=all writes not yet acknowledged
        self.acknowledged: list[tuple] = []
        # Kafka's round-robin assignment: partition p's replicas start at broker p.
        self.assignment = {p: tuple((p + i) % self.n for i in range(rf)) for p in range(self.partitions)}
        # kafka-topics --create --config gets only what differs from the brokers' topic
        # defaults (Kafka's since 0.11: no unclean election, min.insync.replicas 1); with
        # none, no --config at all, and the brokers' defaults decide.
        topic_config = {key: value for key, value, default in (
            ("unclean.leader.election.enable", "true" if _cfg(config, "unclean_leader_election", False) else "false",
             "false"),
            ("min.insync.replicas", str(_cfg(config, "min_insync_replicas", 1)), "1"),
        ) if value != default} or None
        # Through the admin tool (kafka-topics --create), which validates the request.
        self.admin = Admin(self.cluster)
        self.rf, self.topic_config = rf, topic_config
        self.create_after_start = bool(_cfg(config, "create_topic_after_start", False))
        self.max_topic_deletions = int(_cfg(config, "max_topic_deletions", 0))
        if not self.create_after_start:
            self.admin.create_topic(TOPIC, self.partitions, rf, topic_config, assignment=self.assignment)
        self.reassign_targets = parse_reassignments(str(_cfg(config, "reassignments", "")))
        self.budget.reassignments = list(self.reassign_targets)
        self.written_targets: dict = {}     # the last target the admin wrote for each partition
        self._merged: dict = {}             # the merged state-change log at the last observation
        # Per-replica lists are over every broker that may ever hold a replica: the
        # initial AR, then each broker a reassignment adds, in order of first mention.
        self.slots = {p: list(ar) for p, ar in self.assignment.items()}
        for p, rar in self.reassign_targets:
            self.slots[p] += [r for r in rar if r not in self.slots[p]]

    # -- the contract ------------------------------------------------------------------------
    def enabled(self, act) -> bool:
        if self.atomic_controller and act.name in HIDDEN:
            return False
        return self._possible(act) and self._within_budget(act) and not self._controller_busy(act)

    def _possible(self, act) -> bool:
        c = self.cluster
        name = act.name
        if name == "CrashBroker":
            return self._running(act.get("broker"))
        if name == "RestartBroker":
            b = act.get("broker")
            return 0 <= b < self.n and c.servers[b] is None
        if name == "ExpireSession":
            return c.is_registered(act.get("broker"))
        if name == "RegisterBroker":
            b = act.get("broker")
            return self._running(b) and not c.is_registered(b)
        if name == "Resign":
            ctl = self._ctl(act.get("broker"))
            return ctl is not None and ctl.should_resign()
        if name == "ShutdownBroker":
            return c.may_stop_after_controlled_shutdown(act.get("broker"))
        if name == "DeleteTopic":
            return c.admin.topic_exists(TOPIC) and TOPIC not in c.admin.get_topic_deletions()
        if name == "DeleteController":
            return self.controller_deletion and c.admin.get_controller_id() != NO_LEADER
        if name == "CreateTopic":
            return (self.create_after_start and not c.admin.topic_exists(TOPIC)
                    and self.budget.topic_deletions == self.max_topic_deletions)
        if name == "TopicChange":
            ctl = self._ctl(act.get("controller"))
            return ctl is not None and TOPIC in ctl.new_topics()
        if name == "ElectController":
            b = act.get("broker")
            return self._running(b) and c.servers[b].controller.can_elect()
        if name in ("BrokerFailure", "BrokerStartup"):
            ctl = self._ctl(act.get("controller"))
            kind = "failure" if name == "BrokerFailure" else "startup"
            return ctl is not None and ctl.broker_changes().get(act.get("broker")) == kind
        if name == "ElectLeader":
            ctl = self._ctl(act.get("controller"))
            if ctl is None:
                return False
            e = ctl.pending_election(self._tp(act))
            return e is not None and (e[0], e[1], e[3]) == (act.get("strategy"), act.get("leader"), act.get("clean"))
        if name == "RemoveReplicaFromIsr":
            ctl = self._ctl(act.get("controller"))
            return ctl is not None and (self._tp(act), act.get("replica")) in ctl.replicas_to_take_offline()
        if name == "IsrChangeNotification":
            ctl = self._ctl(act.get("controller"))
            return ctl is not None and self._tp(act) in ctl.isr_changed_partitions()
        if name == "ControlledShutdown":
            ctl = self._ctl(act.get("controller"))
            return ctl is not None and self._running(act.get("broker")) and \
                ctl.can_accept_controlled_shutdown(act.get("broker"))
        if name == "StartTopicDeletion":
            ctl = self._ctl(act.get("controller"))
            return ctl is not None and TOPIC in ctl.topics_to_start_deleting()
        if name in ("StartReplicaDeletion", "RetryReplicaDeletion"):
            ctl = self._ctl(act.get("controller"))
            step = "start" if name == "StartReplicaDeletion" else "retry"
            return ctl is not None and (step, self._tp(act), act.get("replica")) in ctl.deletion_steps()
        if name == "CompleteTopicDeletion":
            ctl = self._ctl(act.get("controller"))
            return ctl is not None and TOPIC in ctl.topics_deleted()
        if name in ("DeliverLeaderAndIsr", "DeliverStopReplica", "DeliverUpdateMetadata"):
            return self._deliverable(act)
        if name == "ShrinkIsr":
            b, tp, r = act.get("leader"), self._tp(act), act.get("replica")
            rm = self._rm(b)
            # the broker's own guard (maybeShrinkIsr), and its conditional ZooKeeper write
            return rm is not None and rm.can_shrink_isr(tp, r) and rm.isr_write_would_succeed(tp)
        if name == "ExpandIsr":
            b, tp, r = act.get("leader"), self._tp(act), act.get("replica")
            rm = self._rm(b)
            if rm is None or not rm.isr_write_would_succeed(tp):
                return False
            if self.data_path:
                return rm.can_expand_isr(tp, r) and self._fetching_from(r, b, tp)
            return self._can_expand_without_data(b, tp, r)
        if name == "Produce":
            if self.metadata_cache:
                return c.admin.topic_exists(TOPIC) and self._running(act.get("leader")) and \
                    self._routed(act.get("leader"), self._tp(act))
            return c.admin.topic_exists(TOPIC) and self._leads(act.get("leader"), self._tp(act))
        if name == "Fetch":
            f, leader, tp = act.get("follower"), act.get("leader"), self._tp(act)
            return (c.admin.topic_exists(TOPIC) and self._fetch_target_ok(f, leader, tp, truncating=False)
                    and self._rm(leader).fetch_would_complete(tp, f, c.disks[f].logs.get(tp)))
        if name == "TruncateFollower":
            # (before KIP-101 a follower truncates to its HW when it becomes one: its
            # fetcher never sends an OffsetsForLeaderEpoch)
            return self._fetch_target_ok(act.get("follower"), act.get("leader"), self._tp(act), truncating=True)
        if name == "ReassignPartitions":
            nxt = self.budget.reassignments[0] if self.budget.reassignments else None
            tp = self._tp(act)
            return (nxt == (act.get("partition"), tuple(act.get("replicas"))) and c.admin.topic_exists(TOPIC)
                    and TOPIC not in c.admin.get_topic_deletions() and not get_partition_reassignment(c.admin)
                    and c.admin.get_partition_state(tp) is not None)
        if name == "StartReassignment":
            ctl = self._ctl(act.get("controller"))
            return ctl is not None and self._tp(act) in ctl.reassignments_to_start()
        if name in REASSIGN_STEPS:
            ctl = self._ctl(act.get("controller"))
            if ctl is None:
                return False
            want = (REASSIGN_STEPS[name], self._tp(act), act.get("leader"))
            return want in ctl.reassignment_steps()
        raise KeyError(f"no driver operation for action {name!r}")

    def apply(self, act) -> None:
        self._apply(act)
        if self.atomic_controller:
            self._react()
        self._complete_delayed_produces()
        self._refused_fetches()
        self._refused_isr_writes()

    own_actions = OWN_ACTIONS

    def settle(self) -> None:
        """Left alone, the cluster does its pending work in its own order (``Cluster.settle``),
        the producers' delayed writes answered after each operation as after each action."""
        self.cluster.settle(after=self._complete_delayed_produces)

    # -- the producers' side: which acks=all writes were acknowledged -----------------------
    def _routed(self, b, tp) -> bool:
        """A producer's metadata request to some running broker names b as the leader
        (``KafkaApis.handleTopicMetadataRequest`` answers from the ``MetadataCache``)."""
        return any(self._rm(x) is not None and self._rm(x).metadata_cache.get(tp) == b
                   and b in self._rm(x).alive_brokers for x in range(self.n))

    def _complete_delayed_produces(self) -> None:
        """DelayedProduce: an acks=all write is answered once the leader that took it,
        still leading in the same epoch, has its HW past the record: acknowledged if
        the ISR still has min.insync.replicas members, else NOT_ENOUGH_REPLICAS_AFTER_APPEND."""
        for w in list(self.pending_acks):
            tp, offset, epoch = w
            for b in range(self.n):
                rm = self._rm(b)
                p = rm.leader_partition(tp) if rm else None
                log = self.cluster.disks[b].logs.get(tp)
                if (p is not None and p.leader_epoch == epoch and log is not None
                        and log.high_watermark_checkpoint > offset and log.records[offset] == epoch):
                    self.pending_acks.remove(w)
                    if len(p.isr) >= p.min_insync_replicas:
                        self.acknowledged.append(w)
                    # else NOT_ENOUGH_REPLICAS_AFTER_APPEND (Partition.checkEnoughReplicasReachOffset)
                    break

    def lost_acknowledged_records(self) -> list[tuple]:
        """Acknowledged acks=all records missing from the log of a broker that leads the
        partition in a later leader epoch: data the cluster promised and lost."""
        out = []
        for tp, offset, epoch in self.acknowledged:
            for b in range(self.n):
                rm = self._rm(b)
                p = rm.leader_partition(tp) if rm else None
                records = self.cluster.disks[b].logs[tp].records if tp in self.cluster.disks[b].logs else []
                if p is not None and p.leader_epoch > epoch and (offset >= len(records) or records[offset] != epoch):
                    out.append((tp.partition, offset, epoch, b))
        return out

    def _apply(self, act) -> None:
        self._spend(act)
        c = self.cluster
        name = act.name
        if name in ("CrashBroker", "ShutdownBroker"):
            c.crash(act.get("broker"))
        elif name == "RestartBroker":
            c.start_broker(act.get("broker"))
        elif name == "ExpireSession":
            c.expire_session(act.get("broker"))
        elif name == "RegisterBroker":
            c.register(act.get("broker"))
        elif name == "Resign":
            c.resign(act.get("broker"))
        elif name == "DeleteTopic":
            self.admin.delete_topic(TOPIC)          # kafka-topics --delete
        elif name == "DeleteController":
            c.delete_controller()
        elif name == "CreateTopic":
            self.admin.create_topic(TOPIC, self.partitions, self.rf, self.topic_config, assignment=self.assignment)
        elif name == "TopicChange":
            c.topic_change(act.get("controller"), TOPIC)
        elif name == "ElectController":
            c.elect_controller(act.get("broker"))
        elif name in ("BrokerFailure", "BrokerStartup"):
            c.broker_change(act.get("controller"), act.get("broker"))
        elif name == "ElectLeader":
            ctl = act.get("controller")
            if act.get("strategy") == "preferred" and self._ctl(ctl).is_active():
                # kafka-preferred-replica-election: Kafka's controller runs the same
                # onPreferredReplicaElection for the tool's /admin/preferred_replica_election
                # as for its auto-rebalance timer (the model's preferred_election is both).
                # Only the active controller watches that znode; a zombie's timer elects.
                self.admin.preferred_replica_election([self._tp(act)])
                c.preferred_replica_election(ctl)
            else:
                c.elect_leader(ctl, self._tp(act))
        elif name == "RemoveReplicaFromIsr":
            c.remove_replica_from_isr(act.get("controller"), self._tp(act), act.get("replica"))
        elif name == "IsrChangeNotification":
            c.isr_change_notification(act.get("controller"), self._tp(act))
        elif name == "ControlledShutdown":
            c.controlled_shutdown(act.get("controller"), act.get("broker"))
        elif name == "StartTopicDeletion":
            c.start_topic_deletion(act.get("controller"), TOPIC)
        elif name == "StartReplicaDeletion":
            c.start_replica_deletion(act.get("controller"), self._tp(act), act.get("replica"))
        elif name == "RetryReplicaDeletion":
            c.retry_replica_deletion(act.get("controller"), self._tp(act), act.get("replica"))
        elif name == "CompleteTopicDeletion":
            c.complete_topic_deletion(act.get("controller"), TOPIC)
        elif name in ("DeliverLeaderAndIsr", "DeliverStopReplica", "DeliverUpdateMetadata"):
            c.deliver(act.get("broker"), self._find_request(act))
        elif name == "ShrinkIsr":
            c.shrink_isr(act.get("leader"), self._tp(act), act.get("replica"))
        elif name == "ExpandIsr":
            b, tp, r = act.get("leader"), self._tp(act), act.get("replica")
            if not self.data_path:
                if c.servers[r].replica_manager.fetchers[tp].truncating:
                    c.truncate(r, tp)
                c.fetch(r, tp)
            c.expand_isr(b, tp, r)
        elif name == "Produce":
            tp = self._tp(act)
            view = self._rm(act.get("leader")).partitions.get(tp)
            epoch = view.leader_epoch if view is not None else -1
            err, offset = c.produce(act.get("leader"), tp, act.get("acks"))
            if err != "NONE" and offset != -1:
                raise RuntimeError(f"a produce refused with {err} answers offset {offset}: Kafka's ProduceResponse "
                                   f"gives -1 (INVALID_OFFSET) with an error")
            if err == "NONE" and act.get("acks") == "all":
                self.pending_acks.append((tp, offset, epoch))
        elif name == "Fetch":
            c.fetch(act.get("follower"), self._tp(act))
        elif name == "TruncateFollower":
            c.truncate(act.get("follower"), self._tp(act))
        elif name == "ReassignPartitions":
            self.budget.reassignments.pop(0)
            entries = {self._tp(act): tuple(act.get("replicas"))}
            self.written_targets.update(entries)
            if set(act.get("replicas")) & set(c.admin.get_all_broker_and_epochs()):
                self.admin.execute_reassignment(entries)    # kafka-reassign-partitions --execute
            else:
                # The tool refuses a target none of whose brokers is registered; the model's
                # admin writes it too (reassign-crash), as a client that writes the znode
                # without the tool's checks would.
                c.reassign_partitions(entries)
        elif name == "StartReassignment":
            c.start_reassignment(act.get("controller"), self._tp(act))
        elif name in REASSIGN_STEPS:
            c.reassignment_step(act.get("controller"), REASSIGN_STEPS[name], self._tp(act))
        else:
            raise KeyError(f"no driver operation for action {name!r}")
