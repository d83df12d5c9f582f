"""KafkaController (2.x, ZooKeeper mode): election through /controller, the controller
context, the partition and replica state machines, leader elections, ISR removal,
ISR-change notifications, controlled shutdown and topic deletion.

Sans-IO: every handler runs one controller event to completion and returns the
requests to send (``Send`` effects); ZooKeeper is read and written synchronously
through the broker's KafkaZkClient, as Kafka's controller event thread does.

Granularity (the conformance table in impl/adapter.py says the same per action): Kafka
runs a broker failure, a broker startup or a controlled shutdown as one event that
also elects leaders and moves replicas offline.  Here, as in the model (docs/model.md,
spec/controller.py), those are separate handler calls on the same context:
``on_broker_failure`` / ``on_broker_startup`` update the context and the state
machines, ``elect_leader`` runs one partition's election, ``remove_replica_from_isr``
one replica's OfflineReplica transition.  Between them other actors may act.

Choices shared with the model, each with its pointer:
- A controller that is no longer the active one (a zombie: its session expired, so its
  watches are gone) handles no watch event (broker change, ISR change, deletion
  request, controlled-shutdown request): every such handler starts with Kafka's
  ``if (!isActive) return``.  It still finishes the work its context holds: elections,
  ISR removals and deletion steps (docs/model.md, "Zombie"; spec/controller.py ``_watching``).
- Before an election or an ISR removal the controller reads the partition state from
  ZooKeeper and writes conditionally on the version it read; the read and the write are
  one step.  A state that a newer controller wrote (its controller epoch greater than
  ours) fails the election or the removal for that partition, without a write and
  without resigning (``_written_by_newer``; spec/controller.py ``newer_mark``);
  otherwise only the /controller_epoch check (KAFKA-6082) can fail the write, and then
  the controller resigns at once (spec/controller.py ``conditional_write``).
- On failover, replicas on dead brokers start as ReplicaDeletionIneligible (Kafka 2.x
  ``initializeReplicaState``) and stay so: the OfflineReplica transitions that 2.3 added
  to ``ReplicaStateMachine.startup`` (KAFKA-3143) are left out, as in the model
  (spec/controller.py ``elect_controller``, docs/model.md); a broker that starts up is
  sent the leadership of the partitions that are online only; an offline one gets the
  result of its election (spec/controller.py ``broker_startup``).
- An OfflineReplica transition is taken only as a step the current event owes
  (``ControllerContext.offline_owed``: a broker failure's replicas, a controlled
  shutdown's followed partitions), never for a replica whose broker merely looks dead.
  It writes a leader that is the replica out as leader -1 and keeps the ISR when the
  replica is its last member (``removeReplicasFromIsr``; spec/controller.py
  ``remove_replica``).
- With auto.leader.rebalance.enable, a preferred-replica election may run whenever the
  preferred replica is alive, in the ISR and not leading (the rebalance timer may fire
  at any moment); the leader.imbalance.per.broker.percentage threshold is not applied
  (spec/controller.py ``_election``, docs/results.md "Presets and verdicts").
- Topic deletion (``TopicDeletionManager``) is in impl/topicdeletion.py and partition
  reassignment (``onPartitionReassignment``) in impl/reassignment.py: mixins of
  ``Controller`` that run on its context and state machines.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from impl import election as E
from impl.config import BrokerConfig
from impl.reassignment import ReassignmentSteps
from impl.requests import LeaderAndIsrRequest, Send, StopReplicaRequest, UpdateMetadataRequest
from impl.statechange import StateChangeLogger
from impl.statemachines import (
    NEW_PARTITION,
    NEW_REPLICA,
    NON_EXISTENT_PARTITION,
    NON_EXISTENT_REPLICA,
    OFFLINE_PARTITION,
    OFFLINE_REPLICA,
    ONLINE_PARTITION,
    ONLINE_REPLICA,
    REPLICA_DELETION_INELIGIBLE,
    REPLICA_DELETION_STARTED,
    VALID_PREVIOUS_PARTITION,
    VALID_PREVIOUS_REPLICA,
)
from impl.topicdeletion import TOPIC_DELETION, TopicDeletionSteps
from impl.zkclient import (
    NO_LEADER,
    ControllerMovedError,
    KafkaZkClient,
    LeaderAndIsr,
    TopicPartition,
)

# watch-driven events (the controller's event queue)
BROKER_CHANGE = "BrokerChange"
ISR_CHANGE_NOTIFICATION = "IsrChangeNotification"
TOPIC_CHANGE = "TopicChange"
#: the elections that are steps of the event a controller is in (a preferred or
#: controlled-shutdown election is an event of its own)
EVENT_STEP_STRATEGIES = frozenset(("new", "offline"))
# KafkaController's ZNodeChildChangeHandlers: the active controller keeps a child watch on
# each path (re-registered whenever its event is handled), so a change is never missed;
# between the watch firing and the event being handled, the event is in the queue.
CHILD_WATCHES = {"/brokers/ids": BROKER_CHANGE, "/brokers/topics": TOPIC_CHANGE,
                 "/admin/delete_topics": TOPIC_DELETION, "/isr_change_notification": ISR_CHANGE_NOTIFICATION}


class IllegalStateTransition(Exception):
    pass


@dataclass
class ControllerContext:
    epoch: int
    epoch_zk_version: int
    live_broker_epochs: dict = field(default_factory=dict)          # broker id -> broker epoch (czxid)
    shutting_down: set = field(default_factory=set)
    assignments: dict = field(default_factory=dict)                 # tp -> AR
    leadership: dict = field(default_factory=dict)                  # tp -> LeaderAndIsr
    partition_states: dict = field(default_factory=dict)            # tp -> partition state
    replica_states: dict = field(default_factory=dict)              # (tp, replica) -> replica state
    topics_to_be_deleted: set = field(default_factory=set)
    reassigning: dict = field(default_factory=dict)                 # tp -> ReassignedPartitionContext
    offline_owed: set = field(default_factory=set)                  # (tp, replica): OfflineReplica steps the event owes

    def partitions_of(self, topic: str):
        return sorted(tp for tp in self.assignments if tp.topic == topic)

    def partitions_on(self, broker: int):
        return sorted(tp for tp, ar in self.assignments.items() if broker in ar)


class Controller(ReassignmentSteps, TopicDeletionSteps):
    def __init__(self, broker_id: int, config: BrokerConfig, zk: KafkaZkClient, state_log: StateChangeLogger,
                 clock) -> None:
        self.broker_id = broker_id
        self.config = config
        self.zk = zk
        self.state_log = state_log
        self.clock = clock
        self.ctx: ControllerContext | None = None
        self.pending: set[str] = set()

    def _trace(self, text: str) -> None:
        self.state_log.controller(self.clock(), self.ctx.epoch if self.ctx else -1, text)

    # -- state machines ------------------------------------------------------------------
    def _partition_state(self, tp, target: str, detail: str = "") -> None:
        current = self.ctx.partition_states.get(tp, NON_EXISTENT_PARTITION)
        if current != target and current not in VALID_PREVIOUS_PARTITION[target]:
            raise IllegalStateTransition(f"partition {tp}: {current} -> {target}")
        self.ctx.partition_states[tp] = target
        self._trace(f"Changed partition {tp} from {current} to {target}{detail}")

    def _replica_state(self, tp, replica: int, target: str) -> None:
        current = self.ctx.replica_states.get((tp, replica), NON_EXISTENT_REPLICA)
        if current != target and current not in VALID_PREVIOUS_REPLICA[target]:
            raise IllegalStateTransition(f"replica {replica} of {tp}: {current} -> {target}")
        self.ctx.replica_states[(tp, replica)] = target
        self._trace(f"Changed state of replica {replica} for partition {tp} from {current} to {target}")

    def _leader_and_isr(self, tp, li: LeaderAndIsr, targets) -> list:
        """``ControllerBrokerRequestBatch.addLeaderAndIsrRequestForBrokers``: the
        LeaderAndIsr requests, then an UpdateMetadata for the partition to every live
        broker (``addUpdateMetadataRequestForBrokers``), in that order."""
        req = LeaderAndIsrRequest(self.broker_id, self.ctx.epoch, tp, li.leader, li.leader_epoch, li.isr,
                                  li.zk_version, self.ctx.assignments[tp], li.controller_epoch)
        for t in targets:
            self._trace(f"Sending become-{'leader' if t == li.leader else 'follower'} LeaderAndIsr request "
                        f"{li} to broker {t} for partition {tp}")
        return [Send(t, req) for t in targets] + self._update_metadata(tp, li)

    def _update_metadata(self, tp, li: LeaderAndIsr | None, ahead: bool = False) -> list:
        """UpdateMetadata for ``tp`` (no state: leader epoch -1) and the live brokers to
        every broker in the context's live set (``liveOrShuttingDownBrokerIds``), when
        this broker sends them at all."""
        if not self.config.send_update_metadata:
            return []
        live = tuple(sorted(self._live()))
        leader, epoch = (li.leader, li.leader_epoch) if li is not None else (NO_LEADER, -1)
        req = UpdateMetadataRequest(self.broker_id, self.ctx.epoch, tp, leader, epoch, live, ahead)
        self._trace(f"Sending UpdateMetadata request {li} for partition {tp} to brokers {list(live)}")
        return [Send(t, req) for t in live]

    def _update_metadata_all(self, ahead: bool) -> list:
        """``sendUpdateMetadataRequest(liveOrShuttingDownBrokerIds)``: every partition."""
        out = []
        for tp in sorted(self.ctx.assignments):
            if self.zk.topic_exists(tp.topic):
                out += self._update_metadata(tp, self.ctx.leadership.get(tp), ahead)
        return out

    def _live(self) -> set:
        """``liveOrShuttingDownBrokerIds``: the brokers requests go to."""
        return set(self.ctx.live_broker_epochs)

    def send_stop_replica(self, tp: TopicPartition, replicas, delete: bool) -> list:
        """StopReplica to each of ``replicas`` the controller believes live (Kafka's
        ``ControllerChannelManager`` has no channel to a broker it saw fail); the
        OfflineReplica transition, reassignment and topic deletion all send it so, as
        spec/controller.py send_stop_replica does."""
        live = self._live()
        return [Send(x, StopReplicaRequest(self.broker_id, self.ctx.epoch, tp, delete)) for x in replicas if x in live]

    def _live_broker_ids(self) -> set:
        """``liveBrokerIds``: the live brokers not in controlled shutdown, the only ones
        an election may pick (``ControllerContext.isReplicaOnline`` with
        ``includeShuttingDownBrokers`` false in 2.x; 0.10's and 0.11's
        ``PartitionLeaderSelector`` classes): a broker that asked to stop never leads."""
        return self._live() - self.ctx.shutting_down

    def _written_by_newer(self, zk_state: LeaderAndIsr | None) -> bool:
        """Kafka's "already written by another controller" check on the state it read
        (``doElectLeaderForPartitions``, ``getTopicPartitionStatesFromZk`` under
        ``removeReplicasFromIsr``, ``updateLeaderEpoch``): a newer controller owns the
        partition now, and this one gives it up without resigning."""
        return zk_state is not None and zk_state.controller_epoch > self.ctx.epoch

    def _epoch_check(self) -> int | None:
        return self.ctx.epoch_zk_version if self.config.controller_epoch_zk_check else None

    # -- election and resignation --------------------------------------------------------
    def can_elect(self) -> bool:
        """The /controller watch fired and this broker may try to create it."""
        return (self.ctx is None and self.zk.is_registered(self.broker_id)
                and self.zk.get_controller_id() == NO_LEADER)

    def elect(self) -> list:
        epoch, epoch_version = self.zk.register_controller_and_increment_controller_epoch(self.broker_id)
        self.ctx = ControllerContext(epoch, epoch_version)
        self.pending = set()
        self._trace(f"{self.broker_id} successfully elected as the controller. Epoch incremented to {epoch} "
                    f"and epoch zk version is now {epoch_version}")
        return self._on_controller_failover()

    def _on_controller_failover(self) -> list:
        """Register the watches, read the cluster into the context, start the state
        machines, send every live replica the leadership of its partitions."""
        ctx = self.ctx
        ctx.live_broker_epochs = self.zk.get_all_broker_and_epochs(watch=True)
        if self.zk.get_isr_change_notifications(watch=True):
            self.pending.add(ISR_CHANGE_NOTIFICATION)
        if self.zk.get_topic_deletions(watch=True):
            self.pending.add(TOPIC_DELETION)
        live = self._live()
        for topic in self.zk.get_all_topics(watch=True):
            for p, ar in sorted(self.zk.get_assignment(topic).items()):
                tp = TopicPartition(topic, p)
                ctx.assignments[tp] = ar
                li = self.zk.get_partition_state(tp)
                if li is None:
                    ctx.partition_states[tp] = NEW_PARTITION
                else:
                    ctx.leadership[tp] = li
                    ctx.partition_states[tp] = ONLINE_PARTITION if li.leader in live else OFFLINE_PARTITION
                for r in ar:
                    ctx.replica_states[(tp, r)] = ONLINE_REPLICA if r in live else REPLICA_DELETION_INELIGIBLE
        self._initialize_partition_reassignment()
        # From 0.11 the UpdateMetadata goes first, so that the brokers know the live
        # brokers before the state machines' LeaderAndIsr; 0.10 sends it last.
        out = self._update_metadata_all(ahead=True) if self.config.truncation != "high_watermark" else []
        for tp in sorted(ctx.leadership):
            out += self._leader_and_isr(tp, ctx.leadership[tp], [r for r in ctx.assignments[tp] if r in live])
        return out

    def is_active(self) -> bool:
        return self.ctx is not None and self.zk.get_controller_id() == self.broker_id

    def should_resign(self) -> bool:
        """/controller names another broker (or none): onControllerResignation."""
        return self.ctx is not None and self.zk.get_controller_id() != self.broker_id

    def resign(self) -> None:
        if self.ctx is not None:
            self._trace(f"Resigned as the controller (epoch {self.ctx.epoch})")
        self.ctx = None
        self.pending = set()

    def on_watch(self, event) -> None:
        """A watch fired: queue the controller event it stands for."""
        if self.ctx is None:
            return
        if event.path.startswith("/brokers/ids"):
            self.pending.add(BROKER_CHANGE)
        elif event.path.startswith("/isr_change_notification"):
            self.pending.add(ISR_CHANGE_NOTIFICATION)
        elif event.path.startswith("/admin/delete_topics"):
            self.pending.add(TOPIC_DELETION)
        elif event.path == "/brokers/topics":
            self.pending.add(TOPIC_CHANGE)

    # -- topic creation ------------------------------------------------------------------------
    def new_topics(self) -> list[str]:
        """TopicChange: topics in /brokers/topics this active controller has no
        assignment for (a deleted topic's znode is gone, so it is not new)."""
        if not self.is_active() or TOPIC_CHANGE not in self.pending:
            return []
        known = {tp.topic for tp in self.ctx.assignments}
        return sorted(t for t in self.zk.get_all_topics() if t not in known and t not in self.ctx.topics_to_be_deleted)

    def on_new_topic(self, topic: str) -> list:
        """``onNewPartitionCreation``: the AR into the context, the replicas NewReplica,
        the partitions NewPartition; the NewPartition election follows (``elect_leader``)."""
        ctx = self.ctx
        for p, ar in sorted(self.zk.get_assignment(topic).items()):
            tp = TopicPartition(topic, p)
            ctx.assignments[tp] = ar
            for r in ar:
                self._replica_state(tp, r, NEW_REPLICA)
            self._partition_state(tp, NEW_PARTITION)
        self.zk.get_all_topics(watch=True)
        if not self.new_topics():
            self.pending.discard(TOPIC_CHANGE)
        return []

    # -- broker changes ------------------------------------------------------------------------
    def broker_changes(self) -> dict[int, str]:
        """BrokerChange: the difference between the brokers registered now and those in
        the context.  A bounced broker (same id, new epoch) is a failure, then a startup."""
        if not self.is_active() or BROKER_CHANGE not in self.pending:
            return {}
        current = self.zk.get_all_broker_and_epochs()
        out = {}
        for b in sorted(set(current) | set(self.ctx.live_broker_epochs)):
            cached = self.ctx.live_broker_epochs.get(b)
            if cached is not None and current.get(b) != cached:
                out[b] = "failure"
            elif cached is None and b in current:
                out[b] = "startup"
        return out

    def _rearm_broker_watch(self) -> None:
        current = self.zk.get_all_broker_and_epochs(watch=True)
        if current == self.ctx.live_broker_epochs:
            self.pending.discard(BROKER_CHANGE)

    def on_broker_failure(self, broker: int) -> list:
        ctx = self.ctx
        self._trace(f"Broker failure callback for {broker}")
        for tp in ctx.partitions_on(broker):
            st = ctx.replica_states.get((tp, broker), NON_EXISTENT_REPLICA)
            # onReplicasBecomeOffline: the replicas not queued for deletion go OfflineReplica
            # after the elections, each a step this event owes (remove_replica_from_isr).
            if tp.topic not in ctx.topics_to_be_deleted and (st == OFFLINE_REPLICA or
                                                             st in VALID_PREVIOUS_REPLICA[OFFLINE_REPLICA]):
                ctx.offline_owed.add((tp, broker))
            if st == REPLICA_DELETION_STARTED:
                self._replica_state(tp, broker, REPLICA_DELETION_INELIGIBLE)
            li = ctx.leadership.get(tp)
            if li is not None and li.leader == broker and ctx.partition_states.get(tp) in (ONLINE_PARTITION,
                                                                                          NEW_PARTITION):
                self._partition_state(tp, OFFLINE_PARTITION)
        ctx.live_broker_epochs.pop(broker, None)
        ctx.shutting_down.discard(broker)
        self._rearm_broker_watch()
        # If no partition lost its leader, an UpdateMetadata tells the brokers.
        lost = any(li.leader == broker for li in ctx.leadership.values())
        return self._update_metadata_all(ahead=False) if not lost or ctx.topics_to_be_deleted else []

    def on_broker_startup(self, broker: int) -> list:
        ctx = self.ctx
        self._trace(f"Broker startup callback for {broker}")
        out = []
        for tp in ctx.partitions_on(broker):
            if (tp.topic not in ctx.topics_to_be_deleted and ctx.replica_states.get((tp, broker)) in
                    (OFFLINE_REPLICA, REPLICA_DELETION_INELIGIBLE, NEW_REPLICA)):
                self._replica_state(tp, broker, ONLINE_REPLICA)
        # Only without the event order can a startup come before the failure's
        # OfflineReplica steps: the restarted replicas owe none.
        ctx.offline_owed = {(tp, r) for tp, r in ctx.offline_owed if r != broker}
        epoch = self.zk.broker_epoch(broker)
        ctx.live_broker_epochs[broker] = epoch
        # sendUpdateMetadataRequest(liveOrShuttingDownBrokerIds): every partition, every
        # live broker (the new one included), before the new broker's LeaderAndIsr.
        out += self._update_metadata_all(ahead=True)
        for tp in ctx.partitions_on(broker):
            if tp in ctx.leadership and ctx.partition_states.get(tp) == ONLINE_PARTITION:
                out += self._leader_and_isr(tp, ctx.leadership[tp], [broker])
        self._rearm_broker_watch()
        return out

    # -- leader election -----------------------------------------------------------------------------
    def _topic_config(self, topic: str) -> dict:
        return self.zk.get_topic_config(topic)

    def _unclean_allowed(self, topic: str) -> bool:
        v = self._topic_config(topic).get("unclean.leader.election.enable")
        return self.config.unclean_leader_election_enable if v is None else v == "true"

    def pending_election(self, tp: TopicPartition):
        """The election this controller would run for ``tp`` now: (strategy, leader,
        isr, clean), or None."""
        ctx = self.ctx
        if ctx is None or tp not in ctx.assignments or tp.topic in ctx.topics_to_be_deleted:
            return None
        if not self.zk.topic_exists(tp.topic):
            return None
        state = ctx.partition_states.get(tp, NON_EXISTENT_PARTITION)
        ar = ctx.assignments[tp]
        live = self._live_broker_ids()                    # never a broker in controlled shutdown
        zk_state = self.zk.get_partition_state(tp)        # Kafka reads ZooKeeper before it elects
        if state == NEW_PARTITION:
            # initializeLeaderAndIsrForPartitions creates the znode; if it exists, the
            # create fails and the partition is not retried.
            if zk_state is not None or tp in ctx.leadership:
                return None
            r = E.new_partition_leader_election(ar, live)
            return ("new", r[0], r[1], True) if r else None
        if self._written_by_newer(zk_state):
            return None
        isr = zk_state.isr if zk_state else ()
        if state == OFFLINE_PARTITION:
            r = E.offline_partition_leader_election(ar, isr, live, False)
            if r:
                return ("offline", r[0], r[1], True)
            if self._unclean_allowed(tp.topic):
                r = E.offline_partition_leader_election(ar, isr, live, True)
                return ("offline", r[0], r[1], False) if r else None
            return None
        if state != ONLINE_PARTITION or zk_state is None:
            return None
        if zk_state.leader != NO_LEADER and zk_state.leader in ctx.shutting_down:
            r = E.controlled_shutdown_partition_leader_election(ar, isr, live, ctx.shutting_down)
            return ("controlled_shutdown", r[0], r[1], True) if r else None
        # Kafka leaves partitions being reassigned out of preferred-replica election.
        if self.config.auto_leader_rebalance_enable and ar[0] not in ctx.shutting_down and tp not in ctx.reassigning:
            r = E.preferred_replica_partition_leader_election(ar, zk_state.leader, isr, live)
            return ("preferred", r[0], r[1], True) if r else None
        return None

    def elect_leader(self, tp: TopicPartition) -> list:
        strategy, leader, isr, clean = self.pending_election(tp)
        ctx = self.ctx
        zk_state = self.zk.get_partition_state(tp)
        epoch = self._next_leader_epoch(zk_state)
        expected = zk_state.zk_version if zk_state else -1
        try:
            li = self.zk.write_partition_state(tp, leader, epoch, isr, ctx.epoch, expected, self._epoch_check())
        except ControllerMovedError:
            self._trace(f"Controller moved to another broker while electing a leader for {tp}; resigning")
            self.resign()
            return []
        if not clean:
            self._trace(f"Unclean leader election. Elected {leader} for {tp}; data loss possible")
        ctx.leadership[tp] = li
        self._partition_state(tp, ONLINE_PARTITION, f" with state {li} ({strategy} election)")
        live = self._live()
        if strategy == "new":
            # onNewPartitionCreation: the live NewReplica replicas go OnlineReplica
            for r in ctx.assignments[tp]:
                if r in live and ctx.replica_states.get((tp, r)) == NEW_REPLICA:
                    self._replica_state(tp, r, ONLINE_REPLICA)
        # An offline or NewPartition election tells the replicas in liveBrokerIds alone
        # (OfflinePartitionLeaderSelector, initializeLeaderAndIsrForPartition(s));
        # a controlled-shutdown or preferred one every live replica.
        to = self._live_broker_ids() if strategy in ("new", "offline") else live
        return self._leader_and_isr(tp, li, [r for r in ctx.assignments[tp] if r in to])

    @staticmethod
    def _next_leader_epoch(zk_state: LeaderAndIsr | None) -> int:
        """Every leadership change bumps the leader epoch: it is what brokers compare."""
        return zk_state.leader_epoch + 1 if zk_state else 0

    # -- preferred replica election requested by the admin tool -------------------------------------
    def preferred_election_requested(self) -> list[TopicPartition]:
        if not self.is_active():
            return []
        return self.zk.get_preferred_replica_election() or []

    def process_preferred_replica_election(self) -> list:
        """/admin/preferred_replica_election: move each listed partition's leadership back
        to its preferred replica where that replica is alive and in the ISR (never
        unclean), then delete the request, as Kafka does whatever the outcome."""
        out = []
        for tp in self.preferred_election_requested():
            if tp not in self.ctx.assignments or self.ctx.partition_states.get(tp) != ONLINE_PARTITION:
                continue
            zk_state = self.zk.get_partition_state(tp)
            if zk_state is None or self.ctx.assignments[tp][0] in self.ctx.shutting_down:
                continue
            r = E.preferred_replica_partition_leader_election(self.ctx.assignments[tp], zk_state.leader,
                                                              zk_state.isr, self._live_broker_ids())
            if r is None:
                continue
            try:
                li = self.zk.write_partition_state(tp, r[0], self._next_leader_epoch(zk_state), r[1], self.ctx.epoch,
                                                   zk_state.zk_version, self._epoch_check())
            except ControllerMovedError:
                self.resign()
                return out
            self.ctx.leadership[tp] = li
            self._partition_state(tp, ONLINE_PARTITION, f" with state {li} (preferred election requested)")
            out += self._leader_and_isr(tp, li, [x for x in self.ctx.assignments[tp] if x in self._live()])
        self.zk.delete_preferred_replica_election()
        return out

    def current_event_step(self):
        """The next step of the event this controller is in, as Kafka's one event thread
        runs it before any new event (``onReplicasBecomeOffline``, ``onBrokerStartup``):
        ("elect", tp, None) for a new or offline partition's election, then
        ("offline", tp, r) for an OfflineReplica transition; None when the event is done."""
        ctx = self.ctx
        if ctx is None:
            return None
        for tp in sorted(ctx.assignments):
            e = self.pending_election(tp)
            if e and e[0] in EVENT_STEP_STRATEGIES:
                return "elect", tp, None
        for tp, r in self.replicas_to_take_offline():
            return "offline", tp, r
        return None

    # -- OfflineReplica: removal from the ISR ---------------------------------------------------------
    def replicas_to_take_offline(self) -> list[tuple[TopicPartition, int]]:
        """The OfflineReplica steps the current event owes and may take (an invalid
        transition is skipped, as ``ReplicaStateMachine.handleStateChanges`` does)."""
        ctx = self.ctx
        if ctx is None:
            return []
        out = []
        for tp, r in sorted(ctx.offline_owed):
            if tp.topic in ctx.topics_to_be_deleted or not self.zk.topic_exists(tp.topic):
                continue
            st = ctx.replica_states.get((tp, r), NON_EXISTENT_REPLICA)
            if st == OFFLINE_REPLICA or st in VALID_PREVIOUS_REPLICA[OFFLINE_REPLICA]:
                out.append((tp, r))
        return out

    def remove_replica_from_isr(self, tp: TopicPartition, replica: int) -> list:
        """One OfflineReplica transition (``doHandleStateChanges``, ``removeReplicasFromIsr``
        of 1.1 to 2.x): if the replica is in the ISR in ZooKeeper, write the partition's
        state with leader -1 if it leads (``LeaderAndIsr.NoLeader``) and without it
        unless it is the last member; then LeaderAndIsr to the other live replicas.  A
        state a newer controller wrote fails the transition: the replica keeps its state.
        The replica, if live, is sent StopReplica(delete=false) either way (batched
        before the removal); a write the controller-epoch fence fails sends nothing (as
        spec/controller.py remove_replica)."""
        ctx = self.ctx
        ctx.offline_owed.discard((tp, replica))
        out = []
        zk_state = self.zk.get_partition_state(tp)
        if self._written_by_newer(zk_state):
            self._trace(f"Leader and isr of {tp} written by a newer controller; {replica} stays "
                        f"{ctx.replica_states.get((tp, replica), NON_EXISTENT_REPLICA)}")
            return self.send_stop_replica(tp, (replica,), delete=False)
        if zk_state is not None and replica in zk_state.isr:
            leader = NO_LEADER if zk_state.leader == replica else zk_state.leader
            isr = zk_state.isr if len(zk_state.isr) == 1 else tuple(x for x in zk_state.isr if x != replica)
            try:
                li = self.zk.write_partition_state(tp, leader, self._next_leader_epoch(zk_state), isr, ctx.epoch,
                                                   zk_state.zk_version, self._epoch_check())
            except ControllerMovedError:
                self._trace(f"Controller moved while removing {replica} from the ISR of {tp}; resigning")
                self.resign()
                return []
            ctx.leadership[tp] = li
            live = self._live()
            out = self._leader_and_isr(tp, li, [x for x in ctx.assignments[tp] if x in live and x != replica])
        self._replica_state(tp, replica, OFFLINE_REPLICA)
        return out + self.send_stop_replica(tp, (replica,), delete=False)

    # -- ISR change notifications ----------------------------------------------------------------------
    def isr_changed_partitions(self) -> list[TopicPartition]:
        if not self.is_active() or ISR_CHANGE_NOTIFICATION not in self.pending:
            return []
        out = set()
        for tps in self.zk.get_isr_change_notifications().values():
            out.update(tps)
        return sorted(tp for tp in out if tp in self.ctx.assignments and self._isr_change_is_news(tp))

    def _isr_change_is_news(self, tp: TopicPartition) -> bool:
        """The notification is about the leadership this controller cached: the same
        leader in the same leader epoch, with a newer ISR write.  A notification whose
        change the controller already holds, or that a newer election superseded (that
        election's LeaderAndIsr carries the ISR), waits for the next one."""
        li, cached = self.zk.get_partition_state(tp), self.ctx.leadership.get(tp)
        if li is None or cached is None:
            return False
        return li.zk_version > cached.zk_version and (li.leader, li.leader_epoch) == (cached.leader, cached.leader_epoch)

    def process_isr_change(self, tp: TopicPartition) -> list:
        notes = self.zk.get_isr_change_notifications()
        li = self.zk.get_partition_state(tp)
        if li is not None:
            self.ctx.leadership[tp] = li
            self._trace(f"ISR change for {tp}: cached leadership is now {li}")
        self.zk.delete_isr_change_notifications(sorted(n for n, tps in notes.items() if set(tps) <= {tp}))
        if not self.zk.get_isr_change_notifications(watch=True):
            self.pending.discard(ISR_CHANGE_NOTIFICATION)
        # processUpdateNotifications: sendUpdateMetadataRequest for the partition
        return self._update_metadata(tp, li) if li is not None else []

    # -- controlled shutdown -----------------------------------------------------------------------
    def can_accept_controlled_shutdown(self, broker: int) -> bool:
        return (self.is_active() and broker in self.ctx.live_broker_epochs
                and broker not in self.ctx.shutting_down)

    def handle_controlled_shutdown(self, broker: int, broker_epoch: int) -> str:
        """ControlledShutdownRequest: mark the broker shutting down.  Its leaderships
        move in controlled-shutdown elections and its follower replicas go offline in
        later steps (see the module docstring on granularity)."""
        if not self.can_accept_controlled_shutdown(broker):
            return "NOT_CONTROLLER"
        if broker_epoch < self.ctx.live_broker_epochs[broker]:
            return "STALE_BROKER_EPOCH"
        ctx = self.ctx
        ctx.shutting_down.add(broker)
        self._trace(f"Shutting down broker {broker}")
        # doControlledShutdown: the partitions it follows (AR of more than one, a leader
        # known, not queued for deletion) owe its replica's OfflineReplica step.
        for tp in ctx.partitions_on(broker):
            li = ctx.leadership.get(tp)
            st = ctx.replica_states.get((tp, broker), NON_EXISTENT_REPLICA)
            if (len(ctx.assignments[tp]) > 1 and li is not None and li.leader != broker
                    and tp.topic not in ctx.topics_to_be_deleted
                    and (st == OFFLINE_REPLICA or st in VALID_PREVIOUS_REPLICA[OFFLINE_REPLICA])):
                ctx.offline_owed.add((tp, broker))
        return "NONE"

    def holds_controlled_shutdown(self, broker: int, broker_epoch: int | None) -> bool:
        """Whether this controller has accepted the shutdown of that registration."""
        return (self.ctx is not None and broker in self.ctx.shutting_down
                and self.ctx.live_broker_epochs.get(broker) == broker_epoch)
