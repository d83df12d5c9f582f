"""The deterministic driver: a cluster of brokers, one in-process ZooKeeper and the
network between them, advanced one operation at a time.

Every operation is one event delivered to one handler (a process crash or start, a
session expiry, a request delivery, a controller event, a leader's timer, a client
request); the handler's effects are requests put in flight, which a later operation
delivers.  Nothing runs unless the driver says so, so a run is a sequence of
operations and replays exactly.

Choices shared with the model, each with its pointer:
- Requests in flight to a broker form a set: an identical duplicate is not queued
  twice (spec/state.py ``add_request``; docs/model.md "Where the model is coarser").
- A crash drops the requests in flight to the broker; a session expiry does not.
- The StopReplica response reaches the controller in the same operation as the request's
  handling, if that controller still runs (docs/model.md "Where the model is coarser").
- A broker that asked for controlled shutdown may stop once a running controller holds
  its request for its current registration (spec/faults.py ``ShutdownBroker``).

    >>> c = Cluster(2)
    >>> c.create_topic("t", {0: (0, 1)})
    >>> c.elect_controller(0)
    >>> c.elect_leader(0, TopicPartition("t", 0))
    >>> sorted(len(c.in_flight[b]) for b in range(2))
    [1, 1]
    >>> for b in range(2):
    ...     c.deliver(b, c.in_flight[b][0])
    >>> c.servers[0].replica_manager.partitions[TopicPartition("t", 0)].leader
    0
"""

from __future__ import annotations

from impl.broker import BrokerDisk, KafkaServer
from impl.config import BrokerConfig
from impl.replica_manager import NONE
from impl.requests import LeaderAndIsrRequest, Respond, Send, StopReplicaRequest, UpdateMetadataRequest
from impl.zk import InMemoryStore
from impl.zkclient import KafkaZkClient, TopicPartition, create_partition_reassignment

__all__ = ["Cluster", "TopicPartition"]

MAX_TRUNCATION_ROUNDS = 64


class Cluster:
    def __init__(self, brokers: int, config: BrokerConfig | None = None, state_change_dir=None) -> None:
        self.config = config or BrokerConfig()
        self.store = InMemoryStore()
        self.time = 0
        self.admin = KafkaZkClient(self.store)
        self.admin.ensure_paths()
        self.disks = [BrokerDisk(b, state_change_dir) for b in range(brokers)]
        self.servers: list[KafkaServer | None] = [None] * brokers
        self.in_flight: list[list] = [[] for _ in range(brokers)]
        self.registrations: list[list[int]] = [[] for _ in range(brokers)]   # broker epochs, in order
        for b in range(brokers):
            self.start_broker(b)

    @property
    def brokers(self) -> int:
        return len(self.servers)

    def clock(self) -> int:
        return self.time

    def _tick(self) -> None:
        self.time += 1

    def _deliver_watches(self) -> None:
        for s in self.servers:
            if s is not None:
                s.poll_watches()

    def _send(self, effects) -> None:
        for e in effects:
            if isinstance(e, Send):
                # A request to a broker that is down waits in the controller's queue for
                # it (ControllerChannelManager retries until the broker is back).
                if e.request not in self.in_flight[e.destination] and not self._twin_in_flight(e):
                    self.in_flight[e.destination].append(e.request)
            elif isinstance(e, Respond):
                s = self.servers[e.destination]
                if s is not None:
                    s.controller.handle_stop_replica_response(e.response)
        self._deliver_watches()

    def _twin_in_flight(self, e: Send) -> bool:
        """An UpdateMetadata equal to one in flight but for ``ahead`` is not queued
        again: the broker's cache would already hold it (spec/metadata.py)."""
        r = e.request
        return isinstance(r, UpdateMetadataRequest) and r._replace(ahead=not r.ahead) in self.in_flight[e.destination]

    def server(self, b: int) -> KafkaServer:
        s = self.servers[b]
        if s is None:
            raise RuntimeError(f"broker {b} is not running")
        return s

    # -- processes and sessions ---------------------------------------------------------------
    def start_broker(self, b: int) -> None:
        self._tick()
        s = KafkaServer(b, self.config, self.store, self.disks[b], self.clock)
        self.servers[b] = s
        self.registrations[b].append(s.startup())
        self._deliver_watches()

    def crash(self, b: int) -> None:
        self._tick()
        self.server(b).shutdown()
        self.servers[b] = None
        self.in_flight[b] = []
        self._deliver_watches()

    def expire_session(self, b: int) -> None:
        self._tick()
        s = self.server(b)
        self.store.expire_session(s.zk.session)
        s.on_session_expired()
        self._deliver_watches()

    def register(self, b: int) -> None:
        """The broker re-registers /brokers/ids/<b> in its new session."""
        self._tick()
        self.registrations[b].append(self.server(b).startup())
        self._deliver_watches()

    def is_registered(self, b: int) -> bool:
        s = self.servers[b]
        return s is not None and s.zk.is_registered(b)

    # -- controller election ----------------------------------------------------------------------
    def elect_controller(self, b: int) -> None:
        self._tick()
        self._send(self.server(b).controller.elect())

    def delete_controller(self) -> None:
        """An operator deletes /controller while the controller's session lives: the
        brokers' watches fire; the old controller resigns when it notices
        (``should_resign``), and every broker may try to create it again."""
        self._tick()
        self.admin.delete_controller()
        self._deliver_watches()

    def resign(self, b: int) -> None:
        self._tick()
        self.server(b).controller.resign()

    def controller(self, c: int):
        s = self.servers[c]
        return s.controller if s is not None and s.controller.ctx is not None else None

    # -- delivery -----------------------------------------------------------------------------------
    def deliver(self, b: int, request) -> None:
        self._tick()
        self.in_flight[b].remove(request)
        rm = self.server(b).replica_manager
        if isinstance(request, LeaderAndIsrRequest):
            rm.handle_leader_and_isr(request)
            self._deliver_watches()
        elif isinstance(request, StopReplicaRequest):
            self._send(rm.handle_stop_replica(request))
        elif isinstance(request, UpdateMetadataRequest):
            rm.handle_update_metadata(request)
        else:
            raise TypeError(f"cannot deliver {request!r}")

    # -- controller events ---------------------------------------------------------------------------
    def broker_change(self, c: int, b: int) -> None:
        self._tick()
        ctl = self.server(c).controller
        kind = ctl.broker_changes()[b]
        self._send(ctl.on_broker_failure(b) if kind == "failure" else ctl.on_broker_startup(b))

    def topic_change(self, c: int, topic: str) -> None:
        """The controller's /brokers/topics watch: a new topic's partitions go NewPartition."""
        self._tick()
        self._send(self.server(c).controller.on_new_topic(topic))

    def elect_leader(self, c: int, tp: TopicPartition) -> None:
        self._tick()
        self._send(self.server(c).controller.elect_leader(tp))

    def remove_replica_from_isr(self, c: int, tp: TopicPartition, r: int) -> None:
        self._tick()
        self._send(self.server(c).controller.remove_replica_from_isr(tp, r))

    def isr_change_notification(self, c: int, tp: TopicPartition) -> None:
        self._tick()
        self._send(self.server(c).controller.process_isr_change(tp))

    def controlled_shutdown(self, c: int, b: int) -> str:
        """Broker b sends ControlledShutdownRequest to controller c."""
        self._tick()
        err = self.server(c).controller.handle_controlled_shutdown(b, self.server(b).broker_epoch)
        self._deliver_watches()
        return err

    def may_stop_after_controlled_shutdown(self, b: int) -> bool:
        s = self.servers[b]
        if s is None:
            return False
        epoch = s.zk.broker_epoch(b) if s.zk.is_registered(b) else None
        return epoch is not None and any(
            x is not None and x.controller.holds_controlled_shutdown(b, epoch) for x in self.servers)

    def start_topic_deletion(self, c: int, topic: str) -> None:
        self._tick()
        self._send(self.server(c).controller.start_topic_deletion(topic))

    def start_replica_deletion(self, c: int, tp: TopicPartition, r: int) -> None:
        self._tick()
        self._send(self.server(c).controller.start_replica_deletion(tp, r))

    def retry_replica_deletion(self, c: int, tp: TopicPartition, r: int) -> None:
        self._tick()
        self._send(self.server(c).controller.retry_replica_deletion(tp, r))

    def complete_topic_deletion(self, c: int, topic: str) -> None:
        self._tick()
        self._send(self.server(c).controller.complete_topic_deletion(topic))

    def start_reassignment(self, c: int, tp: TopicPartition) -> None:
        self._tick()
        self._send(self.server(c).controller.start_reassignment(tp))

    def reassignment_step(self, c: int, step: str, tp: TopicPartition) -> None:
        self._tick()
        self._send(self.server(c).controller.reassignment_step(step, tp))

    # -- leaders' ISR timers -------------------------------------------------------------------------
    def shrink_isr(self, leader: int, tp: TopicPartition, replica: int) -> bool:
        self._tick()
        ok = self.server(leader).replica_manager.maybe_shrink_isr(tp, replica)
        self._deliver_watches()
        return ok

    def expand_isr(self, leader: int, tp: TopicPartition, replica: int) -> bool:
        self._tick()
        ok = self.server(leader).replica_manager.maybe_expand_isr(tp, replica)
        self._deliver_watches()
        return ok

    # -- data path --------------------------------------------------------------------------------------
    def produce(self, leader: int, tp: TopicPartition, acks: str) -> tuple[str, int]:
        self._tick()
        return self.server(leader).replica_manager.append_records(tp, acks)

    def fetch_leader(self, follower: int, tp: TopicPartition, truncating: bool) -> int | None:
        """The leader to which the follower's fetcher sends its next request for ``tp``
        (an OffsetsForLeaderEpoch while it truncates when ``truncating``, else a Fetch),
        if that leader runs and would answer it without an error; else None (no such
        request is next, or it would get NOT_LEADER_FOR_PARTITION or
        FENCED_LEADER_EPOCH back and change nothing)."""
        srv = self.servers[follower]
        if srv is None:
            return None
        frm = srv.replica_manager
        req = frm.build_offsets_for_leader_epoch(tp) if truncating else frm.build_fetch(tp)
        if req is None:
            return None
        leader = frm.fetchers[tp].leader
        if not 0 <= leader < len(self.servers) or self.servers[leader] is None:
            return None
        return leader if self.servers[leader].replica_manager.request_error(tp, req.current_leader_epoch) == NONE \
            else None

    def refused_fetch(self, follower: int, tp: TopicPartition) -> bool:
        """One round of a follower's fetcher that its leader refuses (NOT_LEADER_FOR_PARTITION,
        FENCED_LEADER_EPOCH): the request (an OffsetsForLeaderEpoch while it truncates, else
        a Fetch) goes out, the error comes back, and the follower changes nothing; it sends
        again after replica.fetch.backoff.ms, until a LeaderAndIsr names its new leader.
        False, and nothing runs, if no such round is due (nothing to send, the leader is
        down, or it would answer)."""
        srv = self.servers[follower]
        if srv is None or tp not in srv.replica_manager.fetchers:
            return False
        frm = srv.replica_manager
        truncating = frm.fetchers[tp].truncating
        req = frm.build_offsets_for_leader_epoch(tp) if truncating else frm.build_fetch(tp)
        leader = frm.fetchers[tp].leader
        if req is None or not 0 <= leader < len(self.servers) or self.servers[leader] is None:
            return False
        lrm = self.servers[leader].replica_manager
        if lrm.request_error(tp, req.current_leader_epoch) == NONE:
            return False
        self._tick()
        if truncating:
            frm.handle_offsets_for_leader_epoch_response(tp, lrm.handle_offsets_for_leader_epoch(req))
        else:
            frm.handle_fetch_response(tp, lrm.handle_fetch(req))
        return True

    def fetch(self, follower: int, tp: TopicPartition) -> bool:
        """One round of the follower's fetcher: a fetch request to the leader it follows
        (again at once after an OffsetOutOfRange truncation) and its response."""
        self._tick()
        frm = self.server(follower).replica_manager
        req = frm.build_fetch(tp)
        if req is None:
            return False
        leader = frm.fetchers[tp].leader
        for _ in range(2):
            if self.servers[leader] is None:
                return False
            resp = self.servers[leader].replica_manager.handle_fetch(req)
            req = frm.handle_fetch_response(tp, resp)
            if req is None:
                break
        return True

    def truncate(self, follower: int, tp: TopicPartition) -> bool:
        """The follower's OffsetsForLeaderEpoch exchange with its leader, round after
        round until it knows where to truncate (one round before KIP-279)."""
        self._tick()
        frm = self.server(follower).replica_manager
        req = frm.build_offsets_for_leader_epoch(tp)
        if req is None:
            return False
        leader = frm.fetchers[tp].leader
        for _ in range(MAX_TRUNCATION_ROUNDS):
            if self.servers[leader] is None:
                return False
            resp = self.servers[leader].replica_manager.handle_offsets_for_leader_epoch(req)
            req = frm.handle_offsets_for_leader_epoch_response(tp, resp)
            if req is None:
                return True
        raise RuntimeError(f"truncation of {tp} on broker {follower} did not converge")

    def preferred_replica_election(self, c: int) -> None:
        self._tick()
        self._send(self.server(c).controller.process_preferred_replica_election())

    # -- running the cluster until it is quiet -----------------------------------------------------
    def settle(self, max_steps: int = 10_000, after=None) -> int:
        """Run every pending piece of work, in a fixed order, until there is none: what a
        healthy cluster does between two faults.  Returns the number of operations.
        Controller work first (election of a controller, the steps of the controller's
        current event: its new and offline partitions' elections, then its ISR removals,
        as Kafka's one event thread finishes an event before the next; then broker
        changes, notifications, the other elections, deletion), then request delivery, then the
        followers' truncation and fetches, then ISR expansion.  No fault is injected.
        ``after()``, if given, runs after each operation (the conformance adapter
        answers the producers' delayed writes there)."""
        steps = 0
        while steps < max_steps:
            op = self._next_operation()
            if op is None:
                return steps
            op()
            if after is not None:
                after()
            steps += 1
        raise RuntimeError(f"the cluster did not settle in {max_steps} operations")

    def _next_operation(self):
        running = [b for b, s in enumerate(self.servers) if s is not None]
        for b in running:
            if self.servers[b].controller.should_resign():
                return lambda b=b: self.resign(b)
        for b in running:
            if not self.is_registered(b):
                return lambda b=b: self.register(b)
        for b in running:
            if self.servers[b].controller.can_elect():
                return lambda b=b: self.elect_controller(b)
        for c in running:
            ctl = self.servers[c].controller
            if ctl.ctx is None:
                continue
            steps = ctl.reassignment_steps()
            if ctl.in_reassignment_event():      # inside a reassignment event: only its next step
                step, tp, _leader = steps[0]
                return lambda c=c, step=step, tp=tp: self.reassignment_step(c, step, tp)
            # Kafka's one event thread: the current event's steps (its new and offline
            # partitions' elections, then its OfflineReplica transitions) before any new event.
            step = ctl.current_event_step()
            if step is not None:
                kind, tp, r = step
                if kind == "elect":
                    return lambda c=c, tp=tp: self.elect_leader(c, tp)
                return lambda c=c, tp=tp, r=r: self.remove_replica_from_isr(c, tp, r)
            for b in ctl.broker_changes():
                return lambda c=c, b=b: self.broker_change(c, b)
            for t in ctl.new_topics():
                return lambda c=c, t=t: self.topic_change(c, t)
            for tp in ctl.isr_changed_partitions():
                return lambda c=c, tp=tp: self.isr_change_notification(c, tp)
            if ctl.preferred_election_requested():
                return lambda c=c: self.preferred_replica_election(c)
            for tp in ctl.reassignments_to_start():
                return lambda c=c, tp=tp: self.start_reassignment(c, tp)
            for step, tp, _leader in steps:
                return lambda c=c, step=step, tp=tp: self.reassignment_step(c, step, tp)
            for t in ctl.topics_to_start_deleting():
                return lambda c=c, t=t: self.start_topic_deletion(c, t)
            for tp, r in ctl.replicas_to_take_offline():
                return lambda c=c, tp=tp, r=r: self.remove_replica_from_isr(c, tp, r)
            for tp in sorted(ctl.ctx.assignments):
                if ctl.pending_election(tp):
                    return lambda c=c, tp=tp: self.elect_leader(c, tp)
            for step, tp, r in ctl.deletion_steps():
                if step == "start":
                    return lambda c=c, tp=tp, r=r: self.start_replica_deletion(c, tp, r)
                return lambda c=c, tp=tp, r=r: self.retry_replica_deletion(c, tp, r)
            for t in ctl.topics_deleted():
                return lambda c=c, t=t: self.complete_topic_deletion(c, t)
        for b in running:
            if self.in_flight[b]:
                return lambda b=b: self.deliver(b, self.in_flight[b][0])
        for f in running:
            rm = self.servers[f].replica_manager
            for tp, st in sorted(rm.fetchers.items()):
                if self.fetch_leader(f, tp, st.truncating) is None:
                    continue      # nothing to send, or its leader would refuse it: a round that changes nothing
                if st.truncating:
                    return lambda f=f, tp=tp: self.truncate(f, tp)
                if self.servers[st.leader].replica_manager.fetch_would_complete(tp, f, rm.logs.get(tp)):
                    return lambda f=f, tp=tp: self.fetch(f, tp)
        for b in running:
            rm = self.servers[b].replica_manager
            for tp in sorted(rm.partitions):
                p = rm.leader_partition(tp)
                if p is None or not rm.isr_write_would_succeed(tp):
                    continue
                for r in p.replicas:
                    fs = self.servers[r]
                    if (r != b and fs is not None and tp in fs.replica_manager.fetchers
                            and fs.replica_manager.fetchers[tp].leader == b and rm.can_expand_isr(tp, r)):
                        return lambda b=b, tp=tp, r=r: self.expand_isr(b, tp, r)
        return None

    # -- admin ---------------------------------------------------------------------------------------
    def create_topic(self, topic: str, assignment: dict, config: dict | None = None) -> None:
        self._tick()
        self.admin.create_topic(topic, assignment, config or {})
        self._deliver_watches()

    def reassign_partitions(self, entries: dict) -> None:
        """kafka-reassign-partitions --execute: write /admin/reassign_partitions."""
        self._tick()
        create_partition_reassignment(self.admin, entries)
        self._deliver_watches()

    def delete_topic(self, topic: str) -> None:
        self._tick()
        self.admin.request_topic_deletion(topic)
        self._deliver_watches()

    def request_preferred_replica_election(self, partitions) -> None:
        """kafka-preferred-replica-election: write /admin/preferred_replica_election
        (the tool has checked that no election is in progress), whose watch the active
        controller holds (``PreferredReplicaElectionHandler``).  The clock does not move:
        the write itself logs no state change; the controller's election does, in its
        own step (``preferred_replica_election``)."""
        self.admin.create_preferred_replica_election(partitions)
        self._deliver_watches()
