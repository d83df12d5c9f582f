"""The bounded configuration one Kafka model instance is built from."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class KafkaConfig:
    brokers: int = 3
    partitions: int = 1
    replication_factor: int = 3
    # known-bad variants, kept on purpose (docs/results.md, "The known-anomaly table"):
    controller_epoch_fencing: bool = True   # brokers reject requests from older controller epochs
    zk_epoch_fencing: bool = True           # ZooKeeper writes also conditional on the controller epoch (KAFKA-6082)
    unclean_leader_election: bool = False   # unclean.leader.election.enable
    delete_topic_enable: bool = False       # delete.topic.enable
    preferred_election: bool = True         # auto.leader.rebalance.enable / preferred replica election tool
    # data path (off when max_records == 0):
    max_records: int = 0                    # records producers may write in all
    truncation: str = "kip320"              # high_watermark | kip101 | kip279 | kip320
    atomic_controller: bool = False         # the controller reacts within the step of each event (spec/atomic.py)
    controller_event_order: bool = True     # the controller finishes an event's steps before it takes another event
    min_insync_replicas: int = 1            # min.insync.replicas for acks=all
    producer_acks: str = "all"              # all | 1 | 0 | both
    metadata_cache: bool = False            # UpdateMetadata and the brokers' MetadataCache; producers route by it
    # fault bounds (healing is never bounded):
    max_crashes: int = 1
    max_session_expiries: int = 1
    max_controller_failovers: int = 1
    max_isr_shrinks: int = 1
    max_unclean_elections: int = 1
    max_controlled_shutdowns: int = 0
    max_topic_deletions: int = 0
    check_availability: bool = False        # also check EventuallyAvailable (spec/liveness.py)
    create_topic_after_start: bool = False  # the topic does not exist at start: the admin creates it (CreateTopic)
    controller_deletion: bool = False       # an operator may delete /controller (bounded by max_controller_failovers)
    # partition reassignment (issue 4; off when empty):
    reassignments: str = ""                 # admin requests in order, ";"-separated: "P:r,r,..." or "r,r,..." (P=0)

    def __post_init__(self) -> None:
        if self.min_insync_replicas > self.replication_factor:
            raise ValueError(
                f"min_insync_replicas={self.min_insync_replicas} exceeds replication_factor="
                f"{self.replication_factor}; every acks=all write would be refused")
        if self.replication_factor > self.brokers:
            raise ValueError(
                f"replication_factor={self.replication_factor} exceeds brokers={self.brokers}; "
                f"set replication_factor <= brokers"
            )

        if self.atomic_controller and self.reassign_targets:
            raise ValueError(
                "atomic_controller=true with reassignments is refused: its hidden reactions (an ISR "
                "notification) run between a reassignment's steps, where Kafka's controller finishes the "
                "reassignment first, and reach states the full model cannot (docs/model.md); set one of "
                "them off")
        if self.metadata_cache and self.create_topic_after_start:
            raise ValueError(
                "metadata_cache=true with create_topic_after_start=true is not modelled (an UpdateMetadata "
                "before the topic exists carries only the live brokers); set one of them false")
        _ = self.reassign_targets  # raises ValueError on a malformed list

    @property
    def reassign_targets(self) -> tuple:
        """The admin's reassignment requests, in the order it makes them:
        ``((partition, RAR), ...)``.  At most one is pending at a time, as
        kafka-reassign-partitions refuses to write while one runs.

        >>> KafkaConfig(brokers=4, reassignments="1,2,3;0:0,1").reassign_targets
        ((0, (1, 2, 3)), (0, (0, 1)))
        """
        out = []
        for item in (x.strip() for x in self.reassignments.split(";")):
            if not item:
                continue
            part, _, replicas = item.rpartition(":")
            try:
                p = int(part) if part.strip() else 0
                rar = tuple(int(r) for r in replicas.split(","))
            except ValueError:
                raise ValueError(f"reassignments={self.reassignments!r}: {item!r} is not 'P:r,r,...' or "
                                 f"'r,r,...' with integer ids; write e.g. reassignments=\"0:1,2\"") from None
            if not 0 <= p < self.partitions:
                raise ValueError(f"reassignments={self.reassignments!r}: partition {p} does not exist; "
                                 f"use 0..{self.partitions - 1}")
            if any(not 0 <= r < self.brokers for r in rar) or len(set(rar)) != len(rar):
                raise ValueError(f"reassignments={self.reassignments!r}: {item!r} must list distinct broker "
                                 f"ids in 0..{self.brokers - 1}; write e.g. reassignments=\"{p}:"
                                 f"{','.join(str(b) for b in reversed(range(min(2, self.brokers))))}\"")
            out.append((p, rar))
        return tuple(out)

    @property
    def data_path(self) -> bool:
        return self.max_records > 0

    def replica_slots(self, partition: int) -> tuple:
        """Every broker that may ever hold a replica of ``partition``: its initial AR,
        then each broker a reassignment target adds, in order of first mention.
        Per-replica tuples (the controller's replica states, a leader's follower
        LEOs) are indexed by position in this tuple, so that they keep their shape
        while the AR changes.  Without reassignment it is the AR itself."""
        slots = list(self.assignment(partition))
        for p, rar in self.reassign_targets:
            if p == partition:
                slots.extend(r for r in rar if r not in slots)
        return tuple(slots)

    def assignment(self, partition: int) -> tuple:
        """AR of a partition: round-robin from broker ``partition``, as Kafka's
        assignment spreads preferred replicas across brokers."""
        n = self.brokers
        return tuple((partition + i) % n for i in range(self.replication_factor))

    def as_dict(self) -> dict:
        return asdict(self)
