"""A partition replica's log: records, the leader-epoch cache, the HW checkpoint.

Records carry the leader epoch they were written in (the partition leader epoch of
their batch, KIP-101), so a record is identified by (offset, epoch).  The
``LeaderEpochCache`` is Kafka's ``leader-epoch-checkpoint``: the start offset of every
epoch present in the log, kept in step with appends and truncations.

What survives a restart is what Kafka keeps on disk: the records, the epoch cache and
the ``replication-offset-checkpoint`` (the HW).  This reference broker checkpoints
the HW on every change rather than periodically (the model's logs keep their HW over
a crash: docs/model.md "The data path").

    >>> log = Log()
    >>> log.append(epoch=0); log.append(epoch=0); log.append(epoch=2)
    0
    1
    2
    >>> log.log_end_offset, log.epochs.entries
    (3, [(0, 0), (2, 2)])
    >>> log.epochs.end_offset_for(0, log.log_end_offset)   # the start of the next epoch
    2
    >>> log.epochs.assign(3, log.log_end_offset)           # Kafka 2.1: a new leader's epoch, no record yet
    >>> log.epochs.entries
    [(0, 0), (2, 2), (3, 3)]
    >>> log.truncate_to(2), log.epochs.entries
    (True, [(0, 0)])
"""

from __future__ import annotations

UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    """Kafka's ``LeaderEpochFileCache``: ``(epoch, start_offset)`` in increasing order.

    The answers to OffsetsForLeaderEpoch follow the version the broker runs: 0.11
    (``end_offset_for``), 2.0 and 2.1 (``epoch_and_end_offset_for``)."""

    def __init__(self, kafka_2_1: bool = True) -> None:
        self.entries: list[tuple[int, int]] = []
        self.kafka_2_1 = kafka_2_1

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else -1

    def assign(self, epoch: int, start_offset: int) -> None:
        """``LeaderEpochFileCache.assign``.  Before 2.1 (0.11 and 2.0) an entry is
        added only for an epoch newer than the latest, at or past its start, so a
        stale-epoch leader's record after a newer epoch's leaves the cache as it was
        (Kafka warns).  From 2.1 (KAFKA-7415) a new entry replaces every entry it
        conflicts with (a larger or equal epoch, or a start at or past its own), and
        ``Partition.makeLeader`` assigns the new epoch before any record has it."""
        if not self.kafka_2_1:
            if not self.entries or (epoch > self.entries[-1][0] and start_offset >= self.entries[-1][1]):
                self.entries.append((epoch, start_offset))
            return
        if self.entries and self.entries[-1][0] == epoch and start_offset >= self.entries[-1][1]:
            return
        self.entries = [(e, o) for e, o in self.entries if e < epoch and o < start_offset]
        self.entries.append((epoch, start_offset))

    def truncate_from_end(self, end_offset: int) -> None:
        """Records at and above ``end_offset`` are gone: so are the epochs starting there."""
        self.entries = [(e, o) for e, o in self.entries if o < end_offset]

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> int:
        """0.11's OffsetsForLeaderEpoch answer (KIP-101): the latest epoch ends at the
        LEO; an earlier one where the first larger epoch starts (also when this log
        never had the requested epoch); ``UNDEFINED_EPOCH_OFFSET`` (the follower then
        truncates to its HW) for an epoch past everything here or older than the
        first cached epoch.  An empty cache's latest epoch is -1."""
        if requested_epoch == self.latest_epoch:
            return log_end_offset
        larger = [o for e, o in self.entries if e > requested_epoch]
        if not larger or requested_epoch < self.entries[0][0]:
            return UNDEFINED_EPOCH_OFFSET
        return larger[0]

    def epoch_and_end_offset_for(self, requested_epoch: int, log_end_offset: int,
                                 kafka_2_1: bool = True) -> tuple[int, int]:
        """KIP-279's answer (2.0 and 2.1): the largest epoch here not larger than the
        requested one, and where it ends.  An undefined request or an epoch past the
        latest gets ``(-1, UNDEFINED_EPOCH_OFFSET)``.  An epoch older than the first
        cached one: 2.0 answers UNDEFINED as 0.11 did; 2.1 answers ``(requested, start
        of the first epoch)``."""
        undefined = (-1, UNDEFINED_EPOCH_OFFSET)
        if requested_epoch == -1:
            return undefined
        if requested_epoch == self.latest_epoch:
            return requested_epoch, log_end_offset
        larger = [o for e, o in self.entries if e > requested_epoch]
        smaller = [e for e, _ in self.entries if e <= requested_epoch]
        if not larger:
            return undefined
        if not smaller:
            return (requested_epoch, larger[0]) if kafka_2_1 else undefined
        return smaller[-1], larger[0]


class Log:
    """One replica's log on disk."""

    def __init__(self, kafka_2_1: bool = True) -> None:
        self.records: list[int] = []           # the leader epoch of the record at each offset
        self.epochs = LeaderEpochCache(kafka_2_1)
        self.high_watermark_checkpoint = 0

    @property
    def log_end_offset(self) -> int:
        return len(self.records)

    @property
    def last_epoch(self) -> int:
        return self.records[-1] if self.records else -1

    def append(self, epoch: int) -> int:
        """Append one record written in ``epoch``; returns its offset."""
        offset = len(self.records)
        self.records.append(epoch)
        self.epochs.assign(epoch, offset)
        return offset

    def read(self, offset: int, max_records: int = 1) -> list[int]:
        return self.records[offset:offset + max_records]

    def truncate_to(self, offset: int) -> bool:
        """Drop every record at ``offset`` and above; the HW cannot stay above the LEO.
        Returns whether anything was dropped."""
        if offset >= len(self.records):
            return False
        del self.records[offset:]
        self.epochs.truncate_from_end(offset)
        self.high_watermark_checkpoint = min(self.high_watermark_checkpoint, offset)
        return True
