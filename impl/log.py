"""A partition replica's log: records, the leader-epoch cache, the HW checkpoint.

Records carry the leader epoch they were written in (the partition leader epoch of
their batch, KIP-101), so a record is identified by (offset, epoch).  The
``LeaderEpochCache`` is Kafka's ``leader-epoch-checkpoint``: the start offset of every
epoch present in the log, kept in step with appends and truncations.

What survives a restart is what Kafka keeps on disk: the records, the epoch cache and
the ``replication-offset-checkpoint`` (the HW).  This reference broker checkpoints
the HW on every change rather than periodically (the model's logs keep their HW over
a crash: spec README "The data path").

    >>> log = Log()
    >>> log.append(epoch=0); log.append(epoch=0); log.append(epoch=2)
    0
    1
    2
    >>> log.log_end_offset, log.epochs.entries
    (3, [(0, 0), (2, 2)])
    >>> log.epochs.end_offset_for(0, log.log_end_offset)   # the start of the next epoch
    2
    >>> log.truncate_to(2), log.epochs.entries
    (True, [(0, 0)])
"""

from __future__ import annotations

UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    """Kafka's ``LeaderEpochFileCache``: ``(epoch, start_offset)`` in increasing order."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, int]] = []

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else -1

    def assign(self, epoch: int, start_offset: int) -> None:
        if epoch > self.latest_epoch:
            self.entries.append((epoch, start_offset))

    def truncate_from_end(self, end_offset: int) -> None:
        """Records at and above ``end_offset`` are gone: so are the epochs starting there."""
        self.entries = [(e, o) for e, o in self.entries if o < end_offset]

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> int:
        """OffsetsForLeaderEpoch (KIP-101): the end offset of ``requested_epoch`` as this
        log knows it.  The latest epoch ends at the LEO; an earlier one ends where the
        first larger epoch starts (also when this log never had the requested epoch);
        an epoch past everything this log has, or an empty cache, is
        ``UNDEFINED_EPOCH_OFFSET`` (the follower then falls back to its HW)."""
        if not self.entries:
            return UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self.latest_epoch:
            return log_end_offset
        for epoch, start in self.entries:
            if epoch > requested_epoch:
                return start
        return UNDEFINED_EPOCH_OFFSET

    def epoch_and_end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """KIP-279's answer: the largest epoch this log has that is not larger than the
        requested one, and the end offset of that epoch.  If every epoch here is larger,
        the requested epoch ends where this log's first epoch starts (Kafka 2.0).  An
        empty log answers ``(requested, 0)``: nothing the requester has is here.  Kafka
        2.0 answered UNDEFINED, and the follower truncated to its HW and then to 0 on
        its next fetch's OffsetOutOfRange; the model takes both as one step
        (spec/datapath.py ``_diverging_offset``)."""
        found = -1
        for i, (epoch, _start) in enumerate(self.entries):
            if epoch <= requested_epoch:
                found = i
        if found < 0:
            return requested_epoch, self.entries[0][1] if self.entries else 0
        epoch = self.entries[found][0]
        end = self.entries[found + 1][1] if found + 1 < len(self.entries) else log_end_offset
        return epoch, end


class Log:
    """One replica's log on disk."""

    def __init__(self) -> None:
        self.records: list[int] = []           # the leader epoch of the record at each offset
        self.epochs = LeaderEpochCache()
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
