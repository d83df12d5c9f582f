"""The followers' fetch rounds and the leaders' ISR writes in the conformance driver
(Kafka's ``ReplicaFetcherThread`` and ``Partition.maybeExpandIsr``/``maybeShrinkIsr``).

The model has a Fetch, a TruncateFollower and an ExpandIsr step only where a variable
changes.  The driver asks the brokers themselves whether a follower's next request
would be answered (their fetcher state and the leader's NOT_LEADER_FOR_PARTITION and,
with KIP-320, FENCED_LEADER_EPOCH checks), and after every action it runs the rounds
and ISR writes that the brokers refuse, which the model leaves out because they change
nothing: they must leave what ``observe`` shows as it was.
"""

from __future__ import annotations

from impl.driverbase import ClusterDriver


class FetchRounds(ClusterDriver):
    """Mixed into the driver: the fetch targets, and the refused rounds and writes."""

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
