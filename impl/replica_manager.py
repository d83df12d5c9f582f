"""ReplicaManager: what a broker does with LeaderAndIsr and StopReplica, produce and
fetch, the high watermark, ISR shrink and expand, and follower truncation.

Sans-IO: every handler takes one request (or one timer firing) and returns the
response or the next request to send; the driver (impl/cluster.py) carries them.
ZooKeeper is reached through the broker's KafkaZkClient, synchronously, as Kafka's
``Partition.updateIsr`` does.

Choices shared with the model, each with its pointer:
- The broker remembers the *highest* controller epoch it has seen (spec/broker.py
  ``deliver_leader_and_isr``: ``max``); Kafka assigns the request's epoch, which is the
  same whenever the StaleControllerEpoch check is on.
- StopReplica(delete=true) drops the partition's state, its fetcher and its log.
- ``Partition.makeLeader``: the HW is the broker's own; a broker that was not leader
  already forgets its followers' positions, so its HW waits for them to fetch; a leader
  that only gets a new epoch keeps them; then the HW may move at once (the ISR may be
  down to the leader).  From 2.1 the new epoch goes into the epoch cache at the LEO
  (KAFKA-7415).  spec/datapath.py ``on_become_leader``.
- ``Partition.makeFollower``: the fetcher restarts (and truncates) when the leader
  changed (0.10 to 2.0) or on every new leader epoch (2.1).
- The follower's HW comes from the HW the leader read *before* it recorded this fetch.
- ISR expansion: the follower has fetched from this leader up to its HW; with KIP-320,
  also in this leader epoch and from at least the offset where that epoch starts
  (KAFKA-7128; docs/model.md "ISR expand rule", spec/datapath.py ``isr_expand_allowed``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from impl.config import BrokerConfig
from impl.log import UNDEFINED_EPOCH_OFFSET, Log
from impl.requests import (
    LeaderAndIsrRequest,
    Respond,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
)
from impl.statechange import StateChangeLogger
from impl.zkclient import NO_LEADER, KafkaZkClient, TopicPartition

NONE = "NONE"
STALE_CONTROLLER_EPOCH = "STALE_CONTROLLER_EPOCH"
STALE_LEADER_EPOCH = "STALE_LEADER_EPOCH"
NOT_LEADER_FOR_PARTITION = "NOT_LEADER_FOR_PARTITION"
NOT_ENOUGH_REPLICAS = "NOT_ENOUGH_REPLICAS"
OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"


class FetchRequest(NamedTuple):
    replica_id: int
    topic_partition: TopicPartition
    fetch_offset: int
    current_leader_epoch: int      # KIP-320; -1 when the protocol does not send it


class FetchResponse(NamedTuple):
    error: str
    records: tuple                 # leader epochs of the records returned
    high_watermark: int
    log_end_offset: int


class OffsetsForLeaderEpochRequest(NamedTuple):
    replica_id: int
    topic_partition: TopicPartition
    leader_epoch: int              # the follower's last epoch
    current_leader_epoch: int      # KIP-320


class OffsetsForLeaderEpochResponse(NamedTuple):
    error: str
    leader_epoch: int              # KIP-279: the largest leader epoch <= the requested one (-1 before 2.0)
    end_offset: int


@dataclass
class Partition:
    """A broker's view of one partition (Kafka's ``Partition``)."""

    tp: TopicPartition
    replicas: tuple
    leader: int
    leader_epoch: int
    isr: tuple
    controller_epoch: int
    zk_version: int
    # leader side: the LEO each follower last fetched from, -1 unknown (Kafka's remote Replica)
    remote_leos: dict = field(default_factory=dict)
    min_insync_replicas: int = 1
    # leader side: the LEO at which this leader epoch began (Kafka's leaderEpochStartOffsetOpt)
    leader_epoch_start_offset: int = -1
    # the LeaderAndIsr's PartitionState.controllerEpoch, which Partition.updateIsr writes
    partition_controller_epoch: int = -1


@dataclass
class FetchState:
    """The follower's ReplicaFetcherThread state for one partition."""

    leader: int
    leader_epoch: int
    truncating: bool


class ReplicaManager:
    def __init__(self, broker_id: int, config: BrokerConfig, logs: dict, zk: KafkaZkClient,
                 state_log: StateChangeLogger, clock) -> None:
        self.broker_id = broker_id
        self.config = config
        self.logs = logs                  # tp -> Log: the log directory, kept over restarts
        self.zk = zk
        self.state_log = state_log
        self.clock = clock
        self.controller_epoch = 0
        self.partitions: dict[TopicPartition, Partition] = {}
        self.fetchers: dict[TopicPartition, FetchState] = {}
        self.metadata_cache: dict[TopicPartition, int] = {}   # MetadataCache: the leader of each partition
        self.alive_brokers: tuple = ()                        # MetadataCache.aliveBrokers (memory: empty at start)

    def log(self, tp: TopicPartition) -> Log:
        if tp not in self.logs:
            self.logs[tp] = Log(kafka_2_1=self.config.truncation == "kip320")
        return self.logs[tp]

    def _trace(self, role: str, text: str) -> None:
        self.state_log.broker(self.clock(), role, text)

    # -- controller requests ----------------------------------------------------------------
    def _stale_controller(self, epoch: int) -> bool:
        return self.config.controller_epoch_check and epoch < self.controller_epoch

    def _fenced(self, req, refusal: str = "") -> bool:
        """The broker's controller-epoch fence (``ReplicaManager.becomeLeaderOrFollower``,
        ``maybeUpdateMetadataCache``, ``stopReplicas``): a request from an older controller
        epoch is refused (STALE_CONTROLLER_EPOCH; ``refusal``, formatted with ``req`` and
        the ``latest`` epoch, goes to the state-change log); any other makes its epoch the
        latest the broker knows."""
        if self._stale_controller(req.controller_epoch):
            if refusal:
                self._trace("", refusal.format(req=req, latest=self.controller_epoch))
            return True
        self.controller_epoch = max(self.controller_epoch, req.controller_epoch)
        return False

    def handle_leader_and_isr(self, req: LeaderAndIsrRequest) -> str:
        tp = req.topic_partition
        if self._fenced(req, "received LeaderAndIsr request from controller {req.controller_id} with correlation "
                             "id 0 epoch {req.controller_epoch} since its controller epoch {req.controller_epoch} "
                             "is old. Latest known controller epoch is {latest}"):
            return STALE_CONTROLLER_EPOCH
        current = self.partitions.get(tp)
        current_epoch = current.leader_epoch if current else -1
        if self._stale_leader_epoch(req.leader_epoch, current_epoch):
            self._trace("", f"Ignoring LeaderAndIsr request from controller {req.controller_id} epoch "
                        f"{req.controller_epoch} for partition {tp} since its associated leader epoch "
                        f"{req.leader_epoch} is not higher than the current leader epoch {current_epoch}")
            return STALE_LEADER_EPOCH
        if req.leader != self.broker_id and not self._leader_alive(req.leader):
            # ``ReplicaManager.makeFollowers``: the partition stays as it was (no new
            # leader epoch, the same fetcher); Kafka only creates the local replica,
            # so that its HW is checkpointed (KAFKA-1647): ``self.log`` does that here.
            self.log(tp)
            self._trace("", f"Received LeaderAndIsr request with correlation id 0 from controller "
                        f"{req.controller_id} epoch {req.controller_epoch} for partition {tp} but cannot "
                        f"become follower since the new leader {req.leader} is unavailable.")
            return NONE
        p = Partition(tp, req.replicas, req.leader, req.leader_epoch, tuple(req.isr), req.controller_epoch,
                      req.zk_version, partition_controller_epoch=req.partition_controller_epoch)
        self.partitions[tp] = p
        if req.leader == self.broker_id:
            self._make_leader(p, current)
        else:
            self._make_follower(p, current)
        return NONE

    def _leader_alive(self, leader: int) -> bool:
        """``ReplicaManager.makeFollowers`` (0.10 to 2.x) follows a new leader only if
        ``MetadataCache.getAliveBrokers`` lists it; the leader -1 is never alive.  A
        broker that gets no UpdateMetadata (``send_update_metadata`` off) has no live
        list, and every other leader counts as alive."""
        if leader == NO_LEADER:
            return False
        return leader in self.alive_brokers if self.config.send_update_metadata else True

    @staticmethod
    def _stale_leader_epoch(request_epoch: int, current_epoch: int) -> bool:
        """StaleLeaderEpoch: only a strictly newer leader epoch is applied."""
        return request_epoch <= current_epoch

    def _make_leader(self, p: Partition, current: Partition | None) -> None:
        """``Partition.makeLeader``: from 2.1 the leader epoch goes into the epoch cache
        at the LEO (KAFKA-7415; before, the first append records it).  The HW is this
        broker's own.  A broker that was not leader already forgets its followers'
        LEOs (``UnknownLogReadResult``); one that only gets a new epoch keeps them.
        Then the HW may move at once (``maybeIncrementLeaderHW``: the ISR may be
        down to the leader)."""
        self.fetchers.pop(p.tp, None)
        log = self.log(p.tp)
        if self.config.truncation == "kip320":
            log.epochs.assign(p.leader_epoch, log.log_end_offset)
        p.leader_epoch_start_offset = log.log_end_offset
        was_leader = current is not None and current.leader == self.broker_id
        kept = current.remote_leos if was_leader else {}
        p.remote_leos = {r: kept.get(r, -1) for r in p.replicas if r != self.broker_id}
        p.min_insync_replicas = int(self.zk.get_topic_config(p.tp.topic).get(
            "min.insync.replicas", self.config.min_insync_replicas))
        self._trace("Leader", f"{p.tp} starts at leader epoch {p.leader_epoch} from offset "
                    f"{log.log_end_offset} with high watermark {log.high_watermark_checkpoint}. "
                    f"Previous leader epoch was {current.leader_epoch if current else -1}. ISR {list(p.isr)}")
        self._maybe_increment_hw(p)

    def _make_follower(self, p: Partition, current: Partition | None) -> None:
        """``ReplicaManager.makeFollowers``: the fetcher restarts (and the follower
        truncates) only if ``Partition.makeFollower`` says so: when the leader changed
        (0.10 to 2.0), on every new leader epoch (2.1)."""
        restart = self.config.truncation == "kip320" or current is None or current.leader != p.leader
        if not restart:
            self._trace("Follower", f"{p.tp} keeps following leader {p.leader} at leader epoch {p.leader_epoch}")
            return
        log = self.log(p.tp)
        if self.config.truncation == "high_watermark":
            # Before KIP-101: truncate to the HW right away, then fetch.
            hw = log.high_watermark_checkpoint
            if log.truncate_to(hw):
                self._trace("Follower", f"{p.tp} truncated to high watermark {hw}")
            self.fetchers[p.tp] = FetchState(p.leader, p.leader_epoch, truncating=False)
        else:
            self.fetchers[p.tp] = FetchState(p.leader, p.leader_epoch, truncating=True)
        self._trace("Follower", f"{p.tp} starts following leader {p.leader} at leader epoch {p.leader_epoch}")

    def handle_update_metadata(self, req: UpdateMetadataRequest) -> str:
        """``ReplicaManager.maybeUpdateMetadataCache``: a request from an older controller
        epoch is refused (ControllerMovedException, STALE_CONTROLLER_EPOCH); otherwise
        ``MetadataCache.updateCache`` takes the partition's leadership as it is, with
        no leader-epoch check (none if the request has no state for it), replaces the
        live brokers, and the broker remembers the controller epoch."""
        if self._fenced(req, "Received UpdateMetadata request from controller {req.controller_id} with epoch "
                             "{req.controller_epoch}, older than the latest known controller epoch {latest}"):
            return STALE_CONTROLLER_EPOCH
        if req.leader_epoch >= 0:
            self.metadata_cache[req.topic_partition] = req.leader
        self.alive_brokers = tuple(req.live_brokers)
        self._trace("", f"Cached leader info leader {req.leader} leader epoch {req.leader_epoch} for partition "
                    f"{req.topic_partition} in response to UpdateMetadata request sent by controller "
                    f"{req.controller_id} epoch {req.controller_epoch}")
        return NONE

    def handle_stop_replica(self, req: StopReplicaRequest) -> list:
        tp = req.topic_partition
        if self._fenced(req):
            return [Respond(req.controller_id, StopReplicaResponse(self.broker_id, req.controller_epoch, tp,
                                                                   STALE_CONTROLLER_EPOCH))]
        self.fetchers.pop(tp, None)
        self._trace("", f"Handling StopReplica (delete={req.delete_partition}) for partition {tp} from "
                    f"controller {req.controller_id} epoch {req.controller_epoch}")
        if not req.delete_partition:
            # Stop fetching (the fetcher is gone above); the log, the leader epoch and a
            # leader's leadership stay (Kafka's stopReplica(delete=false) keeps the
            # Partition as it is, so a stale LeaderAndIsr is still refused).
            if tp in self.partitions and self.partitions[tp].leader != self.broker_id:
                self.partitions[tp].leader = NO_LEADER
            return []
        self.partitions.pop(tp, None)
        self.logs.pop(tp, None)             # the log directory is deleted
        return [Respond(req.controller_id, StopReplicaResponse(self.broker_id, req.controller_epoch, tp, NONE))]

    # -- leader: produce, fetch, HW ------------------------------------------------------------
    def leader_partition(self, tp: TopicPartition) -> Partition | None:
        p = self.partitions.get(tp)
        return p if p is not None and p.leader == self.broker_id else None

    def append_records(self, tp: TopicPartition, acks: str) -> tuple[str, int]:
        """Produce one record; returns (error, offset)."""
        p = self.leader_partition(tp)
        if p is None:
            return NOT_LEADER_FOR_PARTITION, -1
        if acks == "all" and len(p.isr) < p.min_insync_replicas:
            return NOT_ENOUGH_REPLICAS, -1
        offset = self.log(tp).append(p.leader_epoch)
        self._maybe_increment_hw(p)
        return NONE, offset

    def would_refuse(self, tp: TopicPartition, acks: str) -> bool:
        p = self.leader_partition(tp)
        return p is not None and acks == "all" and len(p.isr) < p.min_insync_replicas

    def fetch_would_complete(self, tp: TopicPartition, replica: int, follower_log: Log | None) -> bool:
        """DelayedFetch: the leader answers a follower's fetch at once when it has
        records past the fetch offset, when the fetch tells it something new (the
        follower's position), when its HW is news to the follower, or when the fetch
        is out of range; otherwise it parks the fetch until one of these holds, which
        is not a step."""
        p = self.leader_partition(tp)
        log = self.log(tp)
        leo = follower_log.log_end_offset if follower_log else 0
        fhw = follower_log.high_watermark_checkpoint if follower_log else 0
        return (leo < log.log_end_offset or leo > log.log_end_offset or p.remote_leos.get(replica, -1) != leo
                or fhw != min(leo, log.high_watermark_checkpoint))

    def high_watermark(self, tp: TopicPartition) -> int:
        return self.log(tp).high_watermark_checkpoint

    def _maybe_increment_hw(self, p: Partition) -> bool:
        """HW = the smallest LEO of the ISR; a follower whose LEO is unknown holds it."""
        log = self.log(p.tp)
        new_hw = log.log_end_offset
        for r in p.isr:
            if r == self.broker_id:
                continue
            leo = p.remote_leos.get(r, -1)
            if leo < 0:
                return False
            new_hw = min(new_hw, leo)
        if new_hw <= log.high_watermark_checkpoint:
            return False
        log.high_watermark_checkpoint = new_hw
        return True

    def _fenced_epoch(self, p: Partition, current_leader_epoch: int) -> bool:
        return self.config.truncation == "kip320" and current_leader_epoch != p.leader_epoch

    def request_error(self, tp: TopicPartition, current_leader_epoch: int) -> str:
        """What the leader answers a follower's Fetch or OffsetsForLeaderEpoch before it
        reads its log (``Partition.localLogWithEpochOrException``): NOT_LEADER_FOR_PARTITION
        if it does not lead ``tp``, FENCED_LEADER_EPOCH if (KIP-320) the follower's
        current leader epoch is not its own, else NONE.  A driver asks this before it
        lets a follower's fetcher take a step."""
        p = self.leader_partition(tp)
        if p is None:
            return NOT_LEADER_FOR_PARTITION
        if self._fenced_epoch(p, current_leader_epoch):
            return FENCED_LEADER_EPOCH
        return NONE

    def handle_fetch(self, req: FetchRequest) -> FetchResponse:
        error = self.request_error(req.topic_partition, req.current_leader_epoch)
        if error != NONE:
            return FetchResponse(error, (), -1, -1)
        p = self.leader_partition(req.topic_partition)
        log = self.log(p.tp)
        if req.fetch_offset > log.log_end_offset:
            return FetchResponse(OFFSET_OUT_OF_RANGE, (), -1, log.log_end_offset)
        hw = log.high_watermark_checkpoint      # read before this fetch is recorded
        records = tuple(log.read(req.fetch_offset, 1))
        p.remote_leos[req.replica_id] = req.fetch_offset
        self._maybe_increment_hw(p)
        return FetchResponse(NONE, records, hw, log.log_end_offset)

    def handle_offsets_for_leader_epoch(self, req: OffsetsForLeaderEpochRequest) -> OffsetsForLeaderEpochResponse:
        error = self.request_error(req.topic_partition, req.current_leader_epoch)
        if error != NONE:
            return OffsetsForLeaderEpochResponse(error, -1, UNDEFINED_EPOCH_OFFSET)
        p = self.leader_partition(req.topic_partition)
        log = self.log(p.tp)
        if self.config.truncation == "kip101":
            return OffsetsForLeaderEpochResponse(NONE, -1, log.epochs.end_offset_for(req.leader_epoch,
                                                                                     log.log_end_offset))
        epoch, end = log.epochs.epoch_and_end_offset_for(req.leader_epoch, log.log_end_offset,
                                                         kafka_2_1=self.config.truncation == "kip320")
        return OffsetsForLeaderEpochResponse(NONE, epoch, end)

    # -- leader: ISR shrink and expand ------------------------------------------------------
    def can_shrink_isr(self, tp: TopicPartition, out_of_sync: int) -> bool:
        """Partition.maybeShrinkIsr's guard: this broker leads ``tp`` and ``out_of_sync``
        is another member of its ISR (the leader never removes itself)."""
        p = self.leader_partition(tp)
        return p is not None and out_of_sync in p.isr and out_of_sync != self.broker_id

    def maybe_shrink_isr(self, tp: TopicPartition, out_of_sync: int) -> bool:
        """replica.lag.time.max.ms passed without ``out_of_sync`` catching up."""
        if not self.can_shrink_isr(tp, out_of_sync):
            return False
        p = self.leader_partition(tp)
        if not self._update_isr(p, tuple(r for r in p.isr if r != out_of_sync)):
            return False
        self._maybe_increment_hw(p)       # a smaller ISR may let the HW move
        return True

    def can_expand_isr(self, tp: TopicPartition, follower: int, fetch_offset: int | None = None) -> bool:
        """Partition.maybeExpandIsr's guard: ``follower`` is an assigned replica outside
        the ISR whose LEO (the last fetch's offset, or ``fetch_offset``: the one a fetch
        about to be handled carries) reached the HW, and, for 2.1 (``kip320``; KAFKA-7128
        came with 2.1.0, and was backported to 2.0.1), the offset where this leader's
        epoch started: the LEO of its last ``makeLeader``."""
        p = self.leader_partition(tp)
        if p is None or follower in p.isr or follower == self.broker_id or follower not in p.replicas:
            return False
        log = self.log(tp)
        leo = p.remote_leos.get(follower, -1) if fetch_offset is None else fetch_offset
        hw = log.high_watermark_checkpoint
        if leo < 0 or leo < hw:
            return False
        # KAFKA-7128: a follower that has not fetched from where this epoch starts may
        # still miss records an earlier epoch committed that the lagging HW does not show.
        return self.config.truncation != "kip320" or leo >= p.leader_epoch_start_offset

    def maybe_expand_isr(self, tp: TopicPartition, follower: int) -> bool:
        if not self.can_expand_isr(tp, follower):
            return False
        p = self.leader_partition(tp)
        return self._update_isr(p, tuple(sorted(p.isr + (follower,))))

    def isr_write_would_succeed(self, tp: TopicPartition) -> bool:
        p = self.leader_partition(tp)
        return p is not None and self.zk.isr_write_would_succeed(tp, p.zk_version)

    def _update_isr(self, p: Partition, isr: tuple) -> bool:
        version = self.zk.update_isr(p.tp, p.leader, p.leader_epoch, isr, p.partition_controller_epoch, p.zk_version)
        if version is None:
            self._trace("Leader", f"{p.tp} cached zkVersion {p.zk_version} not equal to that in zookeeper, "
                        f"skip updating ISR")
            return False
        self._trace("Leader", f"{p.tp} ISR updated from {list(p.isr)} to {list(isr)} and zkVersion updated to "
                    f"[{version}]")
        p.isr, p.zk_version = isr, version
        self.zk.propagate_isr_change(p.tp)
        return True

    # -- follower: the fetcher ---------------------------------------------------------------------
    def _current_epoch(self, tp: TopicPartition) -> int:
        return self.partitions[tp].leader_epoch if self.config.truncation == "kip320" else -1

    def build_fetch(self, tp: TopicPartition) -> FetchRequest | None:
        st = self.fetchers.get(tp)
        if st is None or st.truncating:
            return None
        return FetchRequest(self.broker_id, tp, self.log(tp).log_end_offset, self._current_epoch(tp))

    def handle_fetch_response(self, tp: TopicPartition, resp: FetchResponse) -> FetchRequest | None:
        """Apply a fetch response; returns the request to send again, if any (after an
        OffsetOutOfRange the follower truncates to the leader's LEO and fetches from there)."""
        log = self.log(tp)
        if resp.error == OFFSET_OUT_OF_RANGE:
            log.truncate_to(resp.log_end_offset)
            self._trace("Follower", f"{tp} truncated to leader's log end offset {resp.log_end_offset} "
                        f"(OffsetOutOfRange)")
            return self.build_fetch(tp)
        if resp.error != NONE:
            return None
        for epoch in resp.records:
            log.append(epoch)
        log.high_watermark_checkpoint = min(log.log_end_offset, resp.high_watermark)
        return None

    def build_offsets_for_leader_epoch(self, tp: TopicPartition) -> OffsetsForLeaderEpochRequest | None:
        st = self.fetchers.get(tp)
        if st is None or not st.truncating:
            return None
        return OffsetsForLeaderEpochRequest(self.broker_id, tp, self.log(tp).epochs.latest_epoch,
                                            self._current_epoch(tp))

    def handle_offsets_for_leader_epoch_response(self, tp: TopicPartition, resp: OffsetsForLeaderEpochResponse):
        """Truncate as the answer says (AbstractFetcherThread.getOffsetTruncationState);
        returns the next request if KIP-279 needs another round."""
        st = self.fetchers[tp]
        log = self.log(tp)
        if resp.error != NONE:
            return None
        leo = log.log_end_offset
        if resp.end_offset == UNDEFINED_EPOCH_OFFSET:
            offset, done = min(log.high_watermark_checkpoint, leo), True
        elif self.config.truncation == "kip101" or resp.leader_epoch == -1:
            offset, done = min(resp.end_offset, leo), True
        else:
            f_epoch, f_end = log.epochs.epoch_and_end_offset_for(resp.leader_epoch, leo,
                                                                 kafka_2_1=self.config.truncation == "kip320")
            if f_end == UNDEFINED_EPOCH_OFFSET:
                offset, done = min(resp.end_offset, leo), True
            elif f_epoch != resp.leader_epoch:
                offset, done = min(f_end, leo), False
            else:
                offset, done = min(resp.end_offset, f_end, leo), True
        cut = log.truncate_to(offset)
        if cut:
            self._trace("Follower", f"{tp} truncated to offset {offset} (OffsetsForLeaderEpoch)")
        if done:
            st.truncating = False
            return None
        if not cut:
            # The next round would get the same answer: Kafka 2.1 asks again for ever (an
            # epoch the cache holds at the LEO survives a truncation that cuts nothing).
            self._trace("Follower", f"{tp} truncation to {offset} changed nothing; still truncating")
            return None
        return self.build_offsets_for_leader_epoch(tp)
