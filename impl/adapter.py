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

With ``controller_event_order`` (docs/model.md, "The controller's event order") a
controller with a step of its current event left (a new or offline partition's
election, an OfflineReplica transition) is refused every new event, and its
OfflineReplica transitions wait for its elections, as in the model.

With ``atomic_controller`` (spec/atomic.py) the controller's reactions (``HIDDEN``) are
not actions: after every action the driver runs them, first enabled first, in the
model's enumeration order, until none is left.

``enabled`` asks the implementation whether it can do the action now, and the
driver's fault injector whether it may still inject that fault: faults are bounded by
the same parameters as the model's (``FaultBudget``: crashes, session expiries,
controller failovers, ISR shrinks, unclean elections, controlled shutdowns, topic
deletions, records the producers may write, and one refused produce); healing is
never bounded.  With both, ``enabled`` is exactly the model's enabled set, so the
harness can also check that the implementation cannot do *more* than the model.

The abstraction function ``observe`` reads ZooKeeper (through an admin session; each
partition's leader, leader epoch and ISR as kafka-topics --describe shows them), every
broker's ReplicaManager and controller context, the network and the logs, and returns
the model's variables ``zk`` and ``brokers`` (``budget`` and the ghost variables are
the model's own bookkeeping and are not projected).  Session numbers: the model numbers
a broker's registrations 1, 2, ...; here they are broker epochs (czxids), mapped to
their rank among the broker's registrations.  ``IGNORED`` lists what is left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from checker.model import action  # the shared action vocabulary (names + args)
from impl.admin import Admin, AdminError
from impl.cluster import Cluster
from impl.config import IBP_BY_TRUNCATION, BrokerConfig
from impl.controller import CHILD_WATCHES, EVENT_STEP_STRATEGIES
from impl.statechange import merge
from impl.statemachines import NON_EXISTENT_PARTITION, NON_EXISTENT_REPLICA
from impl.requests import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest
from impl.zkclient import NO_LEADER, TopicPartition, get_partition_reassignment

TOPIC = "t"

# What the projection leaves out, and why a bug there cannot go unseen (or cannot
# matter): each says where its effect is observed, or that nothing reads it.  Everything
# else of the cluster's state is observed (``observe``): the znodes' values, every
# running broker's partition views, fetchers' truncation, logs, leader epoch caches,
# HWs, metadata caches and controller context, and the requests in flight.
IGNORED = {
    "request.controller_id": "StopReplica responses are routed to it, so a wrong one leaves the deleting "
                             "controller's replica states behind (observed: ctx.replica_states); otherwise only "
                             "the state-change log reads it",
    "zk.isr_change_notification": "the controller's input only: a lost or extra notification changes whether "
                                  "IsrChangeNotification is enabled, and enabled sets are compared (and probed); "
                                  "the sequential names are read only to delete the znodes",
    "zk.admin.preferred_replica_election": "written by kafka-preferred-replica-election and carried out and "
                                           "deleted by the controller within the same ElectLeader step; a "
                                           "leftover znode makes the next run of the tool raise, a lost one "
                                           "shows as no election (zk.partitions)",
    "zk.ar without a reassignment": "written once, by kafka-topics --create, as the adapter's assignment; the "
                                    "controller's copy decides to whom it sends LeaderAndIsr (observed: inbox, "
                                    "with the AR as replicas) and whom it may elect (observed: leaders); "
                                    "with a reassignment zk.ar and ctx.ar are observed",
    "zk.stat": "czxid is observed as the broker epoch's rank (sessions, ctx.live); nothing in impl/ reads "
               "mzxid, cversion, ephemeral_owner or num_children (Kafka's controller watches children instead), "
               "and zxids are compared only with == and <",
    "zk.watches": "decide only which events reach a session, i.e. controller.pending (below); the active "
                  "controller's child watches are checked at every observation (ZooKeeper's wchc: each armed, "
                  "or its event queued), and no step reads the /controller watch (can_elect reads the znode)",
    "zk.controller_epoch.version": "read only by the controller's conditional writes (KAFKA-6082), whose success "
                                   "or failure shows in zk.partitions; the epoch itself is observed",
    "zk.config": "written once, through the admin tool, at topic creation; read by unclean election and "
                 "min.insync.replicas, whose effects (elections, refused produces, acked) are observed",
    "broker.broker_epoch": "observed, as the rank of the registration it names (sessions, ctx.live)",
    "broker.fetchers.leader/leader_epoch": "set from the partition state the broker applied (observed); a wrong "
                                           "one makes Fetch, TruncateFollower or ExpandIsr enabled when the "
                                           "model's is not, or moves other data (observed logs)",
    "replica.follower LEOs on a non-leader": "reset when the broker becomes leader (makeLeader), so no decision "
                                             "reads a stale one",
    "replica.leader's own LEO entry": "not stored: the leader's LEO is its log's length, and the log is observed",
    "replica.replicas without a reassignment": "the AR of the LeaderAndIsr it applied (observed in the inbox "
                                               "before delivery); the leader reads it for the followers whose "
                                               "LEOs it keeps (observed: follower_leos) and whom it may add to "
                                               "the ISR (observed: isr)",
    "replica.min_insync_replicas": "the topic's min.insync.replicas (zk.config); read only when a leader "
                                   "takes an acks=all write, whose refusal changes the enabled Produce steps "
                                   "(compared and probed) and nothing else",
    "controller.pending": "watch events not yet handled: a lost or duplicated one changes which controller "
                          "steps are enabled, and enabled sets are compared (and probed)",
    "controller.epoch_zk_version": "read only by the controller's conditional writes, whose effect shows in "
                                   "zk.partitions",
    "state-change.log": "written, never read by a broker or the controller; the order in time of its lines is "
                        "checked at every observation (the seeds' merge tool keeps what it gave as its "
                        "beginning); their text is not predicted: the model has no notion of "
                        "StateChangeLogger's wording, which is no Kafka contract",
    "cluster.time": "the state-change log's clock, read only to stamp its lines, whose merged order is checked",
    "cluster.registrations": "the driver's record of each broker's epochs, used only to rank them (sessions)",
    "producer.pending_acks": "the test client's state, not the cluster's; what it acknowledged is observed (acked)",
}


def parse_reassignments(text: str) -> list[tuple[int, tuple]]:
    """The admin's reassignment requests, in order: "P:r,r;..." or "r,r" (partition 0)."""
    out = []
    for item in (x.strip() for x in text.split(";")):
        if item:
            part, _, replicas = item.rpartition(":")
            out.append((int(part) if part.strip() else 0, tuple(int(r) for r in replicas.split(","))))
    return out


REASSIGN_STEPS = {
    "ReassignExtendAr": "1", "ReassignBumpLeaderEpoch": "2", "ReassignStartNewReplicas": "3",
    "ReassignOnlineReplicas": "5", "ReassignCacheAr": "6", "ReassignElectLeader": "7",
    "ReassignOfflineOldReplicas": "8", "ReassignStartReplicaDeletion": "9a",
    "ReassignReplicaDeletionSuccessful": "9b", "ReassignRemoveReplicas": "9", "ReassignShrinkAr": "10",
    "CompleteReassignment": "11",
}


#: with controller_event_order, topic deletion's per-replica steps are not ordered (the
#: event's steps are impl.controller's EVENT_STEP_STRATEGIES elections and RemoveReplicaFromIsr)
UNORDERED_STEPS = frozenset(("StartReplicaDeletion", "RetryReplicaDeletion", "CompleteTopicDeletion"))

#: with atomic_controller, the controller's reactions run inside the step that caused them
HIDDEN = frozenset(("BrokerFailure", "BrokerStartup", "TopicChange", "ElectLeader", "RemoveReplicaFromIsr", "IsrChangeNotification",
                    "StartTopicDeletion", "StartReplicaDeletion", "RetryReplicaDeletion", "CompleteTopicDeletion"))


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


class FaultBudget:
    """What the test environment may still inject: the model's bounds (docs/model.md
    "Actors, faults and healing": faults are bounded, healing is not).  This is the driver's
    bookkeeping, not the broker's; it is not observed."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.records = int(_cfg(config, "max_records", 0))
        self.crashes = int(_cfg(config, "max_crashes", 1))
        self.session_expiries = int(_cfg(config, "max_session_expiries", 1))
        self.controller_failovers = int(_cfg(config, "max_controller_failovers", 1))
        self.isr_shrinks = int(_cfg(config, "max_isr_shrinks", 1))
        self.unclean_elections = int(_cfg(config, "max_unclean_elections", 1)) \
            if _cfg(config, "unclean_leader_election", False) else 0
        self.controlled_shutdowns = int(_cfg(config, "max_controlled_shutdowns", 0))
        self.topic_deletions = int(_cfg(config, "max_topic_deletions", 0))
        self.write_refused = False       # a producer sees NotEnoughReplicas once: more teaches nothing


def _no_state() -> dict:
    return {"leader": NO_LEADER, "leader_epoch": -1, "isr": [], "controller_epoch": -1, "version": -1}


def _li(li) -> dict:
    if li is None:
        return _no_state()
    return {"leader": li.leader, "leader_epoch": li.leader_epoch, "isr": list(li.isr),
            "controller_epoch": li.controller_epoch, "version": li.zk_version}


def _sorted_requests(reqs: list) -> list:
    return sorted(reqs, key=lambda d: json.dumps(d, sort_keys=True))


def _cfg(config: Mapping[str, Any], key: str, default: Any) -> Any:
    return config.get(key, default)


class KafkaImplementation:
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

    ignored = IGNORED

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

    # -- helpers ----------------------------------------------------------------------------
    def _tp(self, act) -> TopicPartition:
        return TopicPartition(TOPIC, act.get("partition"))

    def _running(self, b) -> bool:
        return isinstance(b, int) and 0 <= b < self.n and self.cluster.servers[b] is not None

    def _ctl(self, c):
        return self.cluster.controller(c) if self._running(c) else None

    def _rm(self, b):
        return self.cluster.servers[b].replica_manager if self._running(b) else None

    def _find_request(self, act):
        b = act.get("broker")
        if not self._running(b):
            return None
        tp = self._tp(act)
        for req in self.cluster.in_flight[b]:
            if (act.name == "DeliverLeaderAndIsr" and isinstance(req, LeaderAndIsrRequest)
                    and req.topic_partition == tp and req.controller_epoch == act.get("controller_epoch")
                    and req.leader == act.get("leader") and req.leader_epoch == act.get("leader_epoch")
                    and tuple(req.isr) == tuple(act.get("isr")) and req.zk_version == act.get("version")
                    and tuple(act.get("replicas", req.replicas)) == tuple(req.replicas)):
                return req
            if (act.name == "DeliverUpdateMetadata" and isinstance(req, UpdateMetadataRequest)
                    and req.topic_partition == tp and req.controller_epoch == act.get("controller_epoch")
                    and req.leader == act.get("leader") and req.leader_epoch == act.get("leader_epoch")
                    and tuple(req.live_brokers) == tuple(act.get("live"))):
                return req
            if (act.name == "DeliverStopReplica" and isinstance(req, StopReplicaRequest)
                    and req.topic_partition == tp and req.controller_epoch == act.get("controller_epoch")
                    and act.get("delete", True) == req.delete_partition):
                return req
        return None

    def _leads(self, b, tp) -> bool:
        rm = self._rm(b)
        return rm is not None and rm.leader_partition(tp) is not None

    def _routed(self, b, tp) -> bool:
        """A producer's metadata request to some running broker names b as the leader
        (``KafkaApis.handleTopicMetadataRequest`` answers from the ``MetadataCache``)."""
        return any(self._rm(x) is not None and self._rm(x).metadata_cache.get(tp) == b
                   and b in self._rm(x).alive_brokers for x in range(self.n))

    def _update_metadata_waits(self, b: int, um: UpdateMetadataRequest) -> bool:
        """The controller's channel is FIFO and a batch sends LeaderAndIsr before
        UpdateMetadata: an UpdateMetadata waits for the LeaderAndIsr (leader epoch not
        newer) and the older UpdateMetadata its controller sent this broker for the
        partition; an ``ahead`` one at a broker that has applied nothing of its
        controller epoch waits for no LeaderAndIsr (spec/metadata.py keeps requests in
        flight as a set and orders these)."""
        first = um.ahead and self._rm(b).controller_epoch < um.controller_epoch
        for q in self.cluster.in_flight[b]:
            if q.topic_partition != um.topic_partition or q.controller_epoch != um.controller_epoch:
                continue
            if isinstance(q, LeaderAndIsrRequest) and q.leader_epoch <= um.leader_epoch and not first:
                return True
            if isinstance(q, UpdateMetadataRequest) and q.leader_epoch < um.leader_epoch:
                return True
        return False

    def _leader_and_isr_waits(self, b: int, lai: LeaderAndIsrRequest) -> bool:
        """A LeaderAndIsr waits for the UpdateMetadata its controller sent before it: one
        for the partition with an older leader epoch, and at a broker that has applied
        nothing of that controller epoch, an ``ahead`` one (spec/metadata.py)."""
        first = self._rm(b).controller_epoch < lai.controller_epoch
        return any(isinstance(q, UpdateMetadataRequest) and q.controller_epoch == lai.controller_epoch
                   and ((q.topic_partition == lai.topic_partition and q.leader_epoch < lai.leader_epoch)
                        or (first and q.ahead)) for q in self.cluster.in_flight[b])

    def _fetch_target_ok(self, f, leader, tp, truncating: bool) -> bool:
        """The follower's next request (an OffsetsForLeaderEpoch when ``truncating``,
        else a Fetch) goes to ``leader``, which answers it without an error: asked of
        the brokers (their fetcher state and the leader's own NOT_LEADER and, with
        KIP-320, FENCED_LEADER_EPOCH checks), so that probing runs those refusals."""
        return self._running(f) and self.cluster.fetch_leader(f, tp, truncating) == leader

    def _fetching_from(self, f, leader, tp) -> bool:
        """The follower's fetch session with the leader is alive: it runs and follows
        this leader, its next request is a Fetch the leader answers, and the LEO the
        leader holds for it is not past its log (stale, from before it restarted and
        truncated).  Kafka expands the ISR while it handles such a fetch; the model
        separates that from moving data."""
        rm = self._rm(f)
        if rm is None or tp not in rm.partitions or rm.partitions[tp].leader != leader:
            return False
        if not self._fetch_target_ok(f, leader, tp, truncating=False):
            return False   # its next fetch is an OffsetsForLeaderEpoch, or would be refused
        log = rm.logs.get(tp)
        return self._rm(leader).leader_partition(tp).remote_leos.get(f, -1) <= (log.log_end_offset if log else 0)

    def _can_expand_without_data(self, leader, tp, f) -> bool:
        """Without a data path the step is the follower's fetch round (after its
        truncation, if one is due) and the expansion: the follower's next request goes
        to this leader and is answered, the leader would add it (its own guard, with
        the fetch's offset), and the follower is in this leader epoch (the model's
        "caught up" without a data path, whatever the truncation rule)."""
        frm = self._rm(f)
        if frm is None or tp not in frm.fetchers:
            return False
        if not self._fetch_target_ok(f, leader, tp, frm.fetchers[tp].truncating):
            return False
        lrm = self._rm(leader)
        return (frm.partitions[tp].leader_epoch == lrm.leader_partition(tp).leader_epoch
                and lrm.can_expand_isr(tp, f, fetch_offset=frm.log(tp).log_end_offset))

    # -- the contract ------------------------------------------------------------------------
    def _may_fail(self, b: int) -> bool:
        """Losing the active controller is a controller failover: that bound counts too."""
        return self.cluster.admin.get_controller_id() != b or self.budget.controller_failovers > 0

    def _within_budget(self, act) -> bool:
        bud, name = self.budget, act.name
        if name == "CrashBroker":
            return bud.crashes > 0 and self._may_fail(act.get("broker"))
        if name == "ExpireSession":
            return bud.session_expiries > 0 and self._may_fail(act.get("broker"))
        if name == "ShutdownBroker":
            return self._may_fail(act.get("broker"))
        if name == "ShrinkIsr":
            return bud.isr_shrinks > 0
        if name == "ElectLeader":
            return act.get("clean") or bud.unclean_elections > 0
        if name == "ControlledShutdown":   # only while the asker's final stop can still happen
            return bud.controlled_shutdowns > 0 and self._may_fail(act.get("broker"))
        if name == "DeleteTopic":
            return bud.topic_deletions > 0
        if name == "DeleteController":
            return bud.controller_failovers > 0
        if name == "Produce":
            if self._rm(act.get("leader")).would_refuse(self._tp(act), act.get("acks")):
                return not bud.write_refused
            return bud.records > 0
        return True

    def _spend(self, act) -> None:
        bud, name = self.budget, act.name
        if name in ("CrashBroker", "ExpireSession", "ShutdownBroker"):
            if self.cluster.admin.get_controller_id() == act.get("broker"):
                bud.controller_failovers -= 1
            if name == "CrashBroker":
                bud.crashes -= 1
            elif name == "ExpireSession":
                bud.session_expiries -= 1
        elif name == "ShrinkIsr":
            bud.isr_shrinks -= 1
        elif name == "ElectLeader" and not act.get("clean"):
            bud.unclean_elections -= 1
        elif name == "ControlledShutdown":
            bud.controlled_shutdowns -= 1
        elif name == "DeleteTopic":
            bud.topic_deletions -= 1
        elif name == "DeleteController":
            bud.controller_failovers -= 1
        elif name == "Produce":
            if self._rm(act.get("leader")).would_refuse(self._tp(act), act.get("acks")):
                bud.write_refused = True
            elif self._leads(act.get("leader"), self._tp(act)):
                bud.records -= 1          # NOT_LEADER_FOR_PARTITION writes nothing

    def enabled(self, act) -> bool:
        if self.atomic_controller and act.name in HIDDEN:
            return False
        return self._possible(act) and self._within_budget(act) and not self._controller_busy(act)

    def _controller_busy(self, act) -> bool:
        """A controller inside a reassignment event handles no other event.  With
        ``controller_event_order``, one with a step of its current event left (a new or
        offline partition's election, an OfflineReplica transition) takes no new event,
        and takes its elections before its OfflineReplica transitions, as Kafka's one
        event thread does (``onReplicasBecomeOffline``, ``doControlledShutdown``)."""
        c = act.get("controller")
        if c is None:
            return False
        ctl = self._ctl(c)
        if ctl is None:
            return False
        if ctl.in_reassignment_event():
            return act.name not in REASSIGN_STEPS
        if not self.event_order or act.name in UNORDERED_STEPS:
            return False
        electing = self._event_elections(c, ctl)
        if act.name == "RemoveReplicaFromIsr":
            return electing
        if act.name == "ElectLeader" and act.get("strategy") in EVENT_STEP_STRATEGIES:
            return False
        return electing or bool(ctl.replicas_to_take_offline())

    def _event_elections(self, c: int, ctl) -> bool:
        """Whether controller ``c`` has a new or offline partition's election it may run
        now (an unclean one only while the fault budget allows it)."""
        for p in range(self.partitions):
            e = ctl.pending_election(TopicPartition(TOPIC, p))
            if e is not None and e[0] in EVENT_STEP_STRATEGIES and self._within_budget(
                    action("ElectLeader", controller=c, partition=p, leader=e[1], strategy=e[0], clean=e[3])):
                return True
        return False

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
            req = self._find_request(act)
            if req is None:
                return False
            if isinstance(req, UpdateMetadataRequest):
                return not self._update_metadata_waits(act.get("broker"), req)
            if isinstance(req, LeaderAndIsrRequest) and self.metadata_cache:
                return not self._leader_and_isr_waits(act.get("broker"), req)
            if isinstance(req, StopReplicaRequest) and self.reassign_targets:
                # The controller's channel is FIFO: a StopReplica does not overtake a
                # LeaderAndIsr its controller sent for that partition (spec/broker.py).
                return not any(isinstance(q, LeaderAndIsrRequest) and q.topic_partition == req.topic_partition
                               and q.controller_epoch == req.controller_epoch
                               for q in c.in_flight[act.get("broker")])
            return True
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

    def _refused_fetches(self) -> None:
        """Kafka's fetchers keep sending: a follower whose leader no longer answers it
        (NOT_LEADER_FOR_PARTITION, FENCED_LEADER_EPOCH) gets the error back and changes
        nothing, a step the model leaves out (it changes no variable).  After every
        action each such round runs once, so that the leader's refusal and the
        follower's error handling run, and must leave what ``observe`` shows as it was."""
        for f in range(self.n):
            rm = self._rm(f)
            for tp in sorted(rm.fetchers) if rm is not None else ():
                self.cluster.refused_fetch(f, tp)

    def _refused_isr_writes(self) -> None:
        """A leader whose cached zkVersion is stale (the controller rewrote the state
        znode since its last LeaderAndIsr) still runs its ISR expiration timer and
        handles fetches: its conditional ISR write fails on BadVersion (Kafka's
        ``Partition.updateIsr``: "Cached zkVersion ... not equal to that in zookeeper,
        skip updating ISR") and it keeps its ISR, a step the model leaves out (it changes
        no variable).  After every action each such leader tries once to shrink (or
        expand) the ISR by each replica its own guard allows, so that the refusal runs
        and must leave what ``observe`` shows as it was."""
        for b in range(self.n):
            rm = self._rm(b)
            for tp in sorted(rm.partitions) if rm is not None else ():
                p = rm.leader_partition(tp)
                if p is None or rm.isr_write_would_succeed(tp):
                    continue
                for r in p.replicas:
                    if rm.can_shrink_isr(tp, r):
                        self.cluster.shrink_isr(b, tp, r)
                    elif rm.can_expand_isr(tp, r):
                        self.cluster.expand_isr(b, tp, r)

    # -- atomic_controller: the controller reacts within the step of each event ---------------
    def _reactions(self):
        """The controller's reactions the driver may run now, in a fixed order: broker
        changes, elections, OfflineReplica transitions, ISR notifications, deletion steps
        (the order in which the model enumerates them: spec/atomic.py)."""
        c = self.cluster
        tps = [TopicPartition(TOPIC, p) for p in range(self.partitions)]
        controllers = [b for b in range(self.n) if self._ctl(b) is not None]
        active = c.admin.get_controller_id()
        watching = [active] if active in controllers else []
        for ctl in watching:
            for b, kind in sorted(self._ctl(ctl).broker_changes().items()):
                yield action("BrokerFailure" if kind == "failure" else "BrokerStartup", controller=ctl, broker=b)
        for ctl in watching:
            if TOPIC in self._ctl(ctl).new_topics():
                yield action("TopicChange", controller=ctl)
        for ctl in controllers:
            for tp in tps:
                e = self._ctl(ctl).pending_election(tp)
                if e:
                    yield action("ElectLeader", controller=ctl, partition=tp.partition, leader=e[1], strategy=e[0],
                                 clean=e[3])
        for ctl in controllers:
            for tp, r in self._ctl(ctl).replicas_to_take_offline():
                yield action("RemoveReplicaFromIsr", controller=ctl, partition=tp.partition, replica=r)
        for ctl in watching:
            for tp in self._ctl(ctl).isr_changed_partitions():
                yield action("IsrChangeNotification", controller=ctl, partition=tp.partition)
        for ctl in controllers:
            x = self._ctl(ctl)
            if TOPIC in x.topics_to_start_deleting():
                yield action("StartTopicDeletion", controller=ctl)
            for step, tp, r in x.deletion_steps():
                yield action("StartReplicaDeletion" if step == "start" else "RetryReplicaDeletion",
                             controller=ctl, partition=tp.partition, replica=r)
            if TOPIC in x.topics_deleted():
                yield action("CompleteTopicDeletion", controller=ctl)

    def _react(self) -> None:
        for _ in range(200):
            act = next((a for a in self._reactions() if self._possible(a) and self._within_budget(a)), None)
            if act is None:
                return
            self._apply(act)
        raise RuntimeError("the controller did not settle after 200 reactions")

    # -- the producers' side: which acks=all writes were acknowledged -----------------------
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

    # -- the abstraction function ------------------------------------------------------------
    def _session_number(self, b: int, epoch) -> int:
        regs = self.cluster.registrations[b]
        return regs.index(epoch) + 1 if epoch in regs else 0

    def observe(self) -> dict:
        c = self.cluster
        zk = c.admin
        tps = [TopicPartition(TOPIC, p) for p in range(self.partitions)]
        sessions = []
        for b in range(self.n):
            k = len(c.registrations[b])
            sessions.append(k if zk.broker_epoch(b) == c.registrations[b][-1] else -k)
        desc = self.admin.describe_topic(TOPIC) if zk.topic_exists(TOPIC) else None   # kafka-topics --describe
        observed_zk = {
            "controller": zk.get_controller_id(),
            "controller_epoch": zk.get_controller_epoch()[0],
            "sessions": sessions,
            "topic": zk.topic_exists(TOPIC),
            "partitions": self._partition_states(tps, desc),
            # marked for deletion, as kafka-topics --describe says while the topic exists
            "delete_topic": desc.marked_for_deletion if desc else TOPIC in zk.get_topic_deletions(),
        }
        if self.reassign_targets:
            pending = get_partition_reassignment(zk)
            assignment = zk.get_assignment(TOPIC) if zk.topic_exists(TOPIC) else {}
            observed_zk["ar"] = [list(assignment.get(tp.partition, ())) for tp in tps]
            observed_zk["reassign"] = [list(pending.get(tp, ())) for tp in tps]
        brokers = []
        for b in range(self.n):
            s = c.servers[b]
            inbox = _sorted_requests([self._request(r) for r in c.in_flight[b]])
            if s is None:
                d = {"alive": False, "controller_epoch_seen": 0, "partitions": [_no_state() for _ in tps],
                     "inbox": inbox, "ctx": None}
            else:
                rm = s.replica_manager
                d = {"alive": True, "controller_epoch_seen": rm.controller_epoch,
                     "partitions": [self._view(rm.partitions.get(tp)) for tp in tps],
                     "inbox": inbox, "ctx": self._ctx(b, s.controller.ctx, tps)}
            d["replicas"] = [self._replica(b, tp) for tp in tps] if self.data_path else []
            if self.reassign_targets:
                parts = s.replica_manager.partitions if s is not None else {}
                d["assigned"] = [list(parts[tp].replicas) if tp in parts else [] for tp in tps]
            if self.metadata_cache:
                cache = s.replica_manager.metadata_cache if s is not None else {}
                d["metadata"] = [cache.get(tp, NO_LEADER) for tp in tps]
                d["alive_brokers"] = list(s.replica_manager.alive_brokers) if s is not None else []
            brokers.append(d)
        out = {"zk": observed_zk, "brokers": brokers}
        if self.data_path:
            out["acked"] = [[tp.partition, o, e] for tp, o, e in sorted(self.acknowledged)]
            if zk.topic_exists(TOPIC):
                self._check_replica_verification(tps)
        if self.reassign_targets and zk.topic_exists(TOPIC):
            self._check_reassignment_tools(tps)
        if not zk.topic_exists(TOPIC):
            self._check_tools_refuse_a_missing_topic()
        self._check_controller_watches()
        self._check_state_change_merge(tps)
        return out

    def _check_state_change_merge(self, tps) -> None:
        """The seeds' state-change-log merge tool (``impl.statechange.merge``), over every
        broker's log and per partition, must keep what it gave at the last observation as
        its beginning: the lines written since then come after it, never between earlier
        lines.  Each cluster operation writes at a later time than the last, so a line
        written later that merges before an earlier one (a clock that did not move, a
        time misread) misorders cause and effect for whoever reads the merged log."""
        logs = [d.state_log for d in self.cluster.disks]
        for key, merged in (("all", merge(logs)), *((tp.partition, merge(logs, tp.topic, tp.partition)) for tp in tps)):
            before = self._merged.get(key, [])
            if merged[:len(before)] != before:
                i = next(i for i, (x, y) in enumerate(zip(merged, before)) if x != y)
                raise RuntimeError(f"the merged state-change log ({'every partition' if key == 'all' else tps[key]}) "
                                   f"puts {merged[i]!r}, written since the last step, before {before[i]!r}")
            self._merged[key] = merged

    def _check_controller_watches(self) -> None:
        """The active controller watches the children of every path whose changes it
        handles (``CHILD_WATCHES``, ZooKeeper's ``wchc``), unless that path's event is
        already queued: a watch not re-armed is a change the controller never hears of,
        which the model's state does not show until the change comes."""
        store = self.cluster.store
        for s in self.cluster.servers:
            ctl = s.controller if s is not None else None
            if ctl is None or not store.session_alive(ctl.zk.session) or not ctl.is_active():
                continue
            watched = store.watches(ctl.zk.session)["children"]
            for path, event in sorted(CHILD_WATCHES.items()):
                if path not in watched and event not in ctl.pending:
                    raise RuntimeError(f"the active controller {ctl.broker_id} neither watches the children of "
                                       f"{path} nor has its {event} event queued")

    def _check_replica_verification(self, tps) -> None:
        """kafka-replica-verification (``Admin.verify_replicas``) must describe the logs
        ``observe`` shows: the leader's HW, every replica's LEO (None while its broker is
        down), and whether its log holds the leader's records below the HW.  A report
        that disagrees with the brokers' logs is a bug of the tool, raised here."""
        c = self.cluster
        for v in self.admin.verify_replicas(TOPIC):
            tp = tps[v.partition]
            logs = {r: (c.disks[r].logs[tp].records if tp in c.disks[r].logs else []) for r in v.log_end_offsets}
            lead = v.leader != NO_LEADER and self._running(v.leader)
            hw = c.disks[v.leader].logs[tp].high_watermark_checkpoint if lead and tp in c.disks[v.leader].logs \
                else (0 if lead else -1)
            leos = {r: len(logs[r]) if lead and self._running(r) else None for r in logs}
            in_sync = {r: lead and self._running(r) and logs[r][:hw] == logs[v.leader][:hw] for r in logs}
            want = (hw, leos, in_sync, lead and all(in_sync.values()))
            if (v.high_watermark, v.log_end_offsets, v.in_sync, v.all_in_sync) != want:
                raise RuntimeError(f"kafka-replica-verification reports {v} for {tp}; the logs say "
                                   f"(hw, leos, in_sync, all) = {want}")

    def _check_reassignment_tools(self, tps) -> None:
        """kafka-reassign-partitions --verify (``Admin.verify_reassignment``) on each
        target the admin wrote must say what ZooKeeper holds: "in progress" while
        /admin/reassign_partitions names the partition, else "completed" if its AR is
        the target and "failed" if not; and --generate's current assignment must be
        the topic's AR."""
        zk = self.cluster.admin
        pending = get_partition_reassignment(zk)
        ar = zk.get_assignment(TOPIC)
        for tp, target in sorted(self.written_targets.items()):
            got = self.admin.verify_reassignment({tp: target})[tp]
            want = "in progress" if tp in pending else "completed" if ar.get(tp.partition) == target else "failed"
            if got != want:
                raise RuntimeError(f"kafka-reassign-partitions --verify says {got!r} for {tp} -> {list(target)}; "
                                   f"ZooKeeper says {want!r}")
        current, _ = self.admin.generate_reassignment([TOPIC], range(self.n))
        if current != {tp: ar[tp.partition] for tp in tps if tp.partition in ar}:
            raise RuntimeError(f"kafka-reassign-partitions --generate's current assignment {current} is not the AR {ar}")

    def _check_tools_refuse_a_missing_topic(self) -> None:
        """Before the topic is created and after it is deleted, kafka-reassign-partitions
        --generate for it must refuse (UNKNOWN_TOPIC_OR_PARTITION), not propose an
        assignment from whatever is left in ZooKeeper."""
        try:
            self.admin.generate_reassignment([TOPIC], range(self.n))
        except AdminError:
            return
        raise RuntimeError(f"kafka-reassign-partitions --generate proposes an assignment for topic {TOPIC!r}, "
                           f"which does not exist")

    def _partition_states(self, tps, desc) -> list[dict]:
        """Each partition's state znode, its leader, leader epoch and ISR as the admin
        tool shows them while the topic exists (kafka-topics --describe ``desc``: what an
        operator reads)."""
        out = [_li(self.cluster.admin.get_partition_state(tp)) for tp in tps]
        if desc is not None:
            shown = {d.partition: d for d in desc.partitions}
            for p, o in enumerate(out):
                d = shown.get(p)
                if d is None:       # not in the topic's assignment: no state
                    o.update({k: v for k, v in _no_state().items() if k in ("leader", "leader_epoch", "isr")})
                else:
                    o.update(leader=d.leader, leader_epoch=d.leader_epoch, isr=list(d.isr))
        return out

    @staticmethod
    def _view(p) -> dict:
        if p is None:
            return _no_state()
        return {"leader": p.leader, "leader_epoch": p.leader_epoch, "isr": list(p.isr),
                "controller_epoch": p.controller_epoch, "version": p.zk_version}

    @staticmethod
    def _request(r) -> dict:
        if isinstance(r, LeaderAndIsrRequest):
            return {"type": "LeaderAndIsr", "controller_epoch": r.controller_epoch,
                    "partition": r.topic_partition.partition, "leader": r.leader, "leader_epoch": r.leader_epoch,
                    "isr": list(r.isr), "version": r.zk_version, "replicas": list(r.replicas)}
        if isinstance(r, UpdateMetadataRequest):
            return {"type": "UpdateMetadata", "controller_epoch": r.controller_epoch,
                    "partition": r.topic_partition.partition, "leader": r.leader, "leader_epoch": r.leader_epoch,
                    "live": list(r.live_brokers), "ahead": r.ahead}
        return {"type": "StopReplica", "controller_epoch": r.controller_epoch,
                "partition": r.topic_partition.partition, "delete": r.delete_partition}

    def _ctx(self, b: int, ctx, tps) -> dict | None:
        if ctx is None:
            return None
        out = {
            "epoch": ctx.epoch,
            "live": [self._session_number(x, ctx.live_broker_epochs[x]) if x in ctx.live_broker_epochs else 0
                     for x in range(self.n)],
            "partitions": [_li(ctx.leadership.get(tp)) for tp in tps],
            "partition_states": [ctx.partition_states.get(tp, NON_EXISTENT_PARTITION) for tp in tps],
            "replica_states": [[ctx.replica_states.get((tp, r), NON_EXISTENT_REPLICA) for r in self.slots[tp.partition]]
                               for tp in tps],
            "shutting_down": [x in ctx.shutting_down for x in range(self.n)],
            "deleting": TOPIC in ctx.topics_to_be_deleted,
            "offline": sorted([tp.partition, r] for tp, r in ctx.offline_owed),
        }
        if self.reassign_targets:
            out["ar"] = [list(ctx.assignments.get(tp, ())) for tp in tps]
            out["reassigning"] = [None if tp not in ctx.reassigning else {
                "target": list(ctx.reassigning[tp].target), "original": list(ctx.reassigning[tp].original),
                "step": ctx.reassigning[tp].step} for tp in tps]
        return out

    def _replica(self, b: int, tp: TopicPartition) -> dict:
        log = self.cluster.disks[b].logs.get(tp)
        records = list(log.records) if log else []
        hw = log.high_watermark_checkpoint if log else 0
        rm = self._rm(b)
        truncating = bool(rm and tp in rm.fetchers and rm.fetchers[tp].truncating)
        leos = None
        if rm is not None and rm.leader_partition(tp) is not None:
            p = rm.leader_partition(tp)
            leos = {str(r): p.remote_leos.get(r, -1) for r in self.slots[tp.partition] if r != b}
        epochs = [list(x) for x in log.epochs.entries] if log else []
        return {"log": records, "epochs": epochs, "hw": hw, "truncating": truncating, "follower_leos": leos}
