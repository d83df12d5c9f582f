"""The replication data path: produce, follower fetch, high watermark, truncation.

Enabled by ``max_records > 0``.  The ``truncation`` value names the Kafka version
whose replication rules apply, and each version is a small strategy class that
overrides only what its KIP changed, as Gustafson's specification modules do
(KafkaReplication <- Kip101 <- Kip279 <- Kip320):

- ``high_watermark`` = Kafka 0.10 (``HighWatermark``): a broker that starts to
  follow a new leader truncates to its own HW.
- ``kip101`` = 0.11 (``Kip101``): it asks the leader for the end offset of its
  latest cached epoch (OffsetsForLeaderEpoch) and truncates there, or to its HW when
  the leader answers UNDEFINED (an epoch the leader never had and nothing larger,
  or older than the leader's first).
- ``kip279`` = 2.0 (``Kip279``): the answer names the leader's epoch too, and the
  rounds go on until the follower finds where the logs diverge.
- ``kip320`` = 2.1 (``Kip320``): a new leader records its epoch in the cache at once
  (KAFKA-7415), a follower truncates again on every new leader epoch, and the answer
  and every fetch are fenced by the leader epoch.

Every version shares the leader-epoch cache (``epoch_cache``: what
``leader-epoch-checkpoint`` holds) and ``Partition.makeLeader``'s HW rule
(``on_become_leader``).  The OffsetsForLeaderEpoch rounds are one step
(``TruncateFollower``), reading the cache of the broker the follower believes leads,
as Gustafson's specs do.
"""

from __future__ import annotations

from checker.model import Action, action
from spec import metadata
from spec.state import NO_LEADER, KafkaState, Replica, put

DOCS = {
    "Produce": "a producer writes to the broker that believes it leads (acks=all is refused while "
               "the ISR is smaller than min.insync.replicas); with metadata_cache, to the leader some live "
               "broker's metadata cache names, and a broker that does not lead answers "
               "NOT_LEADER_FOR_PARTITION (nothing changes)",
    "Fetch": "a follower fetches one record from its LEO and takes HW = min(its LEO, the HW the leader "
             "had when it read); the leader then records the follower's fetch offset and advances its HW "
             "to the ISR's smallest LEO",
    "TruncateFollower": "OffsetsForLeaderEpoch: a new follower finds where its log stops matching "
                        "the leader's and truncates there (KIP-101 and later)",
}

def fresh_replica(rf: int) -> Replica:
    return Replica((), 0, tuple(-1 for _ in range(rf)), False, -1)


# -- leader-side helpers -----------------------------------------------------------------

def _leader_view(s: KafkaState, b: int, p: int):
    """(view, replica) if broker b is running and believes it leads p, else None."""
    br = s.brokers[b]
    if not br.alive:
        return None
    view = br.partitions[p]
    if view.leader != b:
        return None
    return view, br.replicas[p]


def _with_replica(s: KafkaState, b: int, p: int, rep: Replica) -> KafkaState:
    br = s.brokers[b]
    return s._replace(brokers=put(s.brokers, b, br._replace(replicas=put(br.replicas, p, rep))))


def _add(ghost_set: tuple, items) -> tuple:
    new = set(ghost_set) | set(items)
    return ghost_set if len(new) == len(ghost_set) else tuple(sorted(new))


def advance_hw(m, s: KafkaState, b: int, p: int) -> KafkaState:
    """The leader's HW becomes the smallest LEO of its ISR, if that is larger (the
    HW never moves back on a leader).  Followers whose LEO the leader has not seen
    since it became leader count as unknown, which holds the HW: so the HW only
    moves once every ISR member has fetched in the leader's epoch.  Newly exposed
    records are read by consumers, and acks=all writes of this epoch below the HW
    are acknowledged."""
    view, rep = _leader_view(s, b, p)
    ar = m.ar[p]
    new_hw = len(rep.log)
    for r in view.isr:
        if r == b:
            continue
        leo = rep.leos[ar.index(r)] if r in ar else -1
        if leo < 0:
            return s
        new_hw = min(new_hw, leo)
    if new_hw <= rep.hw:
        return s
    s = _with_replica(s, b, p, rep._replace(hw=new_hw))
    return expose(m, s, b, p)


def expose(m, s: KafkaState, b: int, p: int) -> KafkaState:
    """What is below leader b's HW is exposed to consumers, and the acks=all writes of
    its epoch the HW passed are answered (``DelayedProduce``): acknowledged if the ISR
    still has min.insync.replicas members, else NOT_ENOUGH_REPLICAS_AFTER_APPEND
    (``Partition.checkEnoughReplicasReachOffset``): the record stays in the log, but
    the producer was told it failed."""
    rep = s.brokers[b].replicas[p]
    view = s.brokers[b].partitions[p]
    epoch = view.leader_epoch
    g = s.ghost
    read = _add(g.inv_read, ((p, o, rep.log[o]) for o in range(rep.hw)))
    done = [x for x in g.inv_pending if x[0] == p and x[2] == epoch and x[1] < rep.hw
            and rep.log[x[1]] == x[2]]
    if read is g.inv_read and not done:
        return s
    g = g._replace(inv_read=read)
    if done:
        g = g._replace(inv_pending=tuple(x for x in g.inv_pending if x not in done))
        if len(view.isr) >= m.cfg.min_insync_replicas:
            g = g._replace(inv_acked=_add(g.inv_acked, done))
    return s._replace(ghost=g)


# -- Produce -------------------------------------------------------------------------------

def produce_enabled(m, s: KafkaState, out: list) -> None:
    if not m.cfg.data_path:
        return
    if not s.zk.topic:
        return
    cfg = m.cfg
    modes = ("all", "1") if cfg.producer_acks == "both" else (cfg.producer_acks,)
    for b in range(len(s.brokers)):
        for p in range(cfg.partitions):
            lv = _leader_view(s, b, p)
            if cfg.metadata_cache:
                if not metadata.routed(s, b, p):
                    continue
                if lv is None:
                    # NOT_LEADER_FOR_PARTITION: a running broker that does not lead
                    # refuses the record; the producer refreshes its metadata and retries.
                    if s.budget.records > 0 and s.brokers[b].alive:
                        out.extend(action("Produce", leader=b, partition=p, acks=acks) for acks in modes)
                    continue
            elif lv is None:
                continue
            view, _rep = lv
            for acks in modes:
                refused = acks == "all" and len(view.isr) < cfg.min_insync_replicas
                if refused:
                    if not s.ghost.inv_write_refused:
                        out.append(action("Produce", leader=b, partition=p, acks=acks))
                elif s.budget.records > 0:
                    out.append(action("Produce", leader=b, partition=p, acks=acks))


def produce(m, s: KafkaState, a: Action) -> KafkaState:
    """``ReplicaManager.appendRecords`` -> ``Partition.appendRecordsToLeader``: the
    broker decides by its own partition state (``leaderReplicaIfLocal``), never by its
    metadata cache: NOT_LEADER_FOR_PARTITION if it does not lead, NOT_ENOUGH_REPLICAS
    for acks=all with an ISR smaller than min.insync.replicas, else it appends."""
    b, p, acks = a.get("leader"), a.get("partition"), a.get("acks")
    lv = _leader_view(s, b, p)
    if lv is None:
        return s   # NOT_LEADER_FOR_PARTITION (only reachable with metadata_cache)
    view, rep = lv
    if acks == "all" and len(view.isr) < m.cfg.min_insync_replicas:
        return s._replace(ghost=s.ghost._replace(inv_write_refused=True))  # NotEnoughReplicas
    offset = len(rep.log)
    s = _with_replica(s, b, p, append(rep, view.leader_epoch))
    s = s._replace(budget=s.budget._replace(records=s.budget.records - 1))
    if acks == "all":
        s = s._replace(ghost=s.ghost._replace(inv_pending=_add(s.ghost.inv_pending,
                                                               [(p, offset, view.leader_epoch)])))
    return advance_hw(m, s, b, p)


# -- Fetch ---------------------------------------------------------------------------------

def _fetch_target(m, s: KafkaState, f: int, p: int):
    """The leader a follower may fetch from now, or None."""
    fb = s.brokers[f]
    if not fb.alive:
        return None
    fview = fb.partitions[p]
    leader = fview.leader
    if leader in (NO_LEADER, f) or fb.replicas[p].truncating:
        return None
    lv = _leader_view(s, leader, p)
    if lv is None:
        return None  # NotLeaderForPartition (or the leader is down)
    if rule(m).fenced_by_epoch and lv[0].leader_epoch != fview.leader_epoch:
        return None  # KIP-320: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH
    return leader


def fetch_enabled(m, s: KafkaState, out: list) -> None:
    if not m.cfg.data_path:
        return
    if not s.zk.topic:
        return
    for f in range(len(s.brokers)):
        for p in range(m.cfg.partitions):
            leader = _fetch_target(m, s, f, p)
            if leader is None:
                continue
            frep = s.brokers[f].replicas[p]
            lrep = s.brokers[leader].replicas[p]
            ar = m.ar[p]
            behind = len(frep.log) < len(lrep.log)
            news = (lrep.leos[ar.index(f)] != len(frep.log) or frep.hw != min(len(frep.log), lrep.hw)
                    or len(frep.log) > len(lrep.log))
            if behind or news:
                out.append(action("Fetch", follower=f, leader=leader, partition=p))


def fetch(m, s: KafkaState, a: Action) -> KafkaState:
    f, leader, p = a.get("follower"), a.get("leader"), a.get("partition")
    frep = s.brokers[f].replicas[p]
    lrep = s.brokers[leader].replicas[p]
    if len(frep.log) > len(lrep.log):
        # OffsetOutOfRange: the follower is ahead of the leader and truncates to its LEO.
        frep = _truncated(frep, len(lrep.log))
        s = s._replace(ghost=s.ghost._replace(inv_follower_truncated=True))
    fetch_offset = len(frep.log)
    if fetch_offset < len(lrep.log):
        frep = append(frep, lrep.log[fetch_offset])
    # The response carries the HW the leader had when it read the log, *before* it
    # records this fetch's offset (Kafka reads the HW first): the follower's HW is
    # one fetch round behind the leader's, which is what KIP-101's scenarios need.
    s = _with_replica(s, f, p, frep._replace(hw=min(len(frep.log), lrep.hw)))
    i = m.ar[p].index(f)
    s = _with_replica(s, leader, p, lrep._replace(leos=put(lrep.leos, i, fetch_offset)))
    return advance_hw(m, s, leader, p)


# -- the leader-epoch cache -------------------------------------------------------------------

UNDEFINED = -1   # UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET


def epoch_cache(rep: Replica) -> tuple:
    """Kafka's ``LeaderEpochFileCache`` (``leader-epoch-checkpoint``): ``(epoch,
    start offset)`` per epoch, in order.  Appends assign each record's epoch at its
    offset (``Log.append``), truncation drops the entries at and above the new LEO
    (``truncateFromEnd``), so the entries are the records' epochs, plus, from Kafka
    2.1, the epoch a leader assigned at its LEO on becoming leader before it had a
    record of it (``unwritten_epoch``)."""
    out = []
    for o, e in enumerate(rep.log):
        if not out or out[-1][0] != e:
            out.append((e, o))
    if rep.unwritten_epoch >= 0:
        out.append((rep.unwritten_epoch, len(rep.log)))
    return tuple(out)


def assigned_epochs(rep: Replica) -> tuple:
    """The cache before Kafka 2.1 (``LeaderEpochFileCache.assign`` in 0.11 and 2.0):
    an append adds an entry only for an epoch newer than the latest one, so a stale
    leader's record written after a newer epoch's leaves no entry (Kafka logs a
    warning).  Truncation drops the entries at and above the new LEO, which on this
    cache is the same as reading it off the shorter log."""
    out = []
    for o, e in enumerate(rep.log):
        if not out or e > out[-1][0]:
            out.append((e, o))
    return tuple(out)


def epoch_start_offset(log: tuple, epoch: int, made_leader_at: int) -> int:
    """Where a leader's epoch starts for KAFKA-7128's fence: the LEO the last
    ``Partition.makeLeader`` saw (``leaderEpochStartOffsetOpt``).  The state keeps
    no such field: ``made_leader_at`` is the LEO when the broker last became leader
    from another role (its own slot of ``Replica.leos``, which nothing else writes),
    and a new epoch while it stays leader starts at its first record, or at the LEO
    while it has none (only its leader appends in an epoch), never below the former.
    So a broker that restarts and is sent its own epoch again (a bounce the
    controller did not notice) starts it at its whole LEO, as Kafka's fresh
    ``Partition`` does, not at the epoch's first record."""
    first = next((o for o, e in enumerate(log) if e == epoch), len(log))
    return max(first, made_leader_at)


def latest_epoch(rep: Replica) -> int:
    """``LeaderEpochFileCache.latestEpoch``: what a follower asks about."""
    if rep.unwritten_epoch >= 0:
        return rep.unwritten_epoch
    return rep.log[-1] if rep.log else UNDEFINED


def append(rep: Replica, epoch: int) -> Replica:
    """``Log.append``: the record's epoch is assigned at its offset; an unwritten
    entry at the LEO is replaced (2.1's ``truncateAndAppend``) or becomes this one."""
    return rep._replace(log=rep.log + (epoch,), unwritten_epoch=UNDEFINED)


# -- truncation rules: one strategy per protocol version ---------------------------------------

class HighWatermark:
    """Kafka 0.10 (before KIP-101): a broker that starts to follow a new leader
    truncates its log to its own HW (``ReplicaManager.makeFollowers``), then fetches.
    Every later rule overrides only what its KIP changed."""

    name = "high_watermark"
    offsets_for_leader_epoch = False     # TruncateFollower exists
    fenced_by_epoch = False              # KIP-320

    def restarts_fetcher(self, old_leader: int, new_leader: int) -> bool:
        """``Partition.makeFollower`` (0.10 to 2.0) returns false when the leader did
        not change: a new leader epoch with the same leader leaves the fetcher alone
        (no truncation, no OffsetsForLeaderEpoch)."""
        return old_leader != new_leader

    def become_follower(self, s: KafkaState, b: int, p: int) -> KafkaState:
        return truncate_to(s, b, p, s.brokers[b].replicas[p].hw)

    def cache(self, rep: Replica) -> tuple:
        """The leader-epoch cache this version keeps (0.10 has none on disk; its
        brokers' records carry no epoch a follower asks about, so the pre-2.1 rule
        is only what conformance observes)."""
        return assigned_epochs(rep)

    def latest(self, rep: Replica) -> int:
        """``LeaderEpochFileCache.latestEpoch``: what a follower asks about."""
        c = self.cache(rep)
        return c[-1][0] if c else UNDEFINED

    def become_leader(self, rep: Replica, leader_epoch: int) -> Replica:
        """Before 2.1 the cache learns a leader's epoch with its first append."""
        return rep

    def isr_expand_fenced(self, s: KafkaState, b: int, p: int, f: int, fetch_offset: int,
                          own_slot: int) -> bool:
        return False


class Kip101(HighWatermark):
    """Kafka 0.11 (KIP-101): a new follower asks the leader for the end offset of its
    latest cached epoch (OffsetsForLeaderEpoch v0) and truncates there, or to its HW
    if the leader answers UNDEFINED (``ReplicaFetcherThread.maybeTruncate``)."""

    name = "kip101"
    offsets_for_leader_epoch = True

    def become_follower(self, s: KafkaState, b: int, p: int) -> KafkaState:
        return _with_replica(s, b, p, s.brokers[b].replicas[p]._replace(truncating=True))

    @staticmethod
    def end_offset_for(cache: tuple, leo: int, requested: int) -> int:
        """0.11's ``LeaderEpochFileCache.endOffsetFor``: the LEO for the latest epoch;
        else the start of the first larger epoch, but UNDEFINED when there is none or
        when the requested epoch is older than the first cached one."""
        latest = cache[-1][0] if cache else UNDEFINED
        if requested == latest:
            return leo
        larger = [start for e, start in cache if e > requested]
        if not larger or requested < cache[0][0]:
            return UNDEFINED
        return larger[0]

    def truncation(self, frep: Replica, lrep: Replica) -> tuple:
        """``(offset, done)``: where the follower truncates, and whether it then
        fetches (else it asks again)."""
        answer = self.end_offset_for(self.cache(lrep), len(lrep.log), self.latest(frep))
        if answer == UNDEFINED:
            return min(frep.hw, len(frep.log)), True
        return min(answer, len(frep.log)), True


class Kip279(Kip101):
    """Kafka 2.0 (KIP-279): the leader answers with the largest epoch it has that is
    not larger than the requested one, and that epoch's end offset; a follower that
    does not have that epoch truncates to the end of its own largest epoch below it
    and asks again (``AbstractFetcherThread.getOffsetTruncationState``), until both
    agree.  The rounds are one model step: nothing else changes either log meanwhile
    (the follower does not fetch while it truncates, and a leader's appends are past
    any answer it gave)."""

    name = "kip279"

    @staticmethod
    def epoch_end_offset(cache: tuple, leo: int, requested: int) -> tuple:
        """2.0's ``endOffsetFor``: ``(epoch, end offset)``; UNDEFINED for an undefined
        request, for an epoch past the latest and for one older than the first."""
        if requested == UNDEFINED:
            return UNDEFINED, UNDEFINED
        latest = cache[-1][0] if cache else UNDEFINED
        if requested == latest:
            return requested, leo
        larger = [start for e, start in cache if e > requested]
        if not larger or requested < cache[0][0]:
            return UNDEFINED, UNDEFINED
        return [e for e, _ in cache if e <= requested][-1], larger[0]

    def truncation(self, frep: Replica, lrep: Replica) -> tuple:
        lcache = self.cache(lrep)
        while True:   # each round that goes on cuts the follower's log shorter
            epoch, end = self.epoch_end_offset(lcache, len(lrep.log), self.latest(frep))
            if end == UNDEFINED:
                return min(frep.hw, len(frep.log)), True
            f_epoch, f_end = self.epoch_end_offset(self.cache(frep), len(frep.log), epoch)
            if f_end == UNDEFINED:
                return min(end, len(frep.log)), True
            if f_epoch == epoch:
                return min(f_end, end, len(frep.log)), True
            # the follower does not have the leader's epoch: it truncates to the end of
            # its own largest epoch below it and asks again
            cut = _truncated(frep, min(f_end, len(frep.log)))
            if cut is frep:
                # Nothing to cut, so the next answer is the same one: Kafka 2.1 asks again
                # for ever (an unwritten epoch at the LEO survives a no-op truncation).
                return len(frep.log), False
            frep = cut


class Kip320(Kip279):
    """Kafka 2.1 (KIP-320, KAFKA-7415): the new leader records its epoch at its LEO
    on becoming leader (``Partition.makeLeader``); a follower restarts its fetcher
    (and truncates) on every new leader epoch (``Partition.makeFollower``); the
    fetch and the OffsetsForLeaderEpoch request carry the follower's leader epoch
    and a leader in another epoch refuses them (FENCED_LEADER_EPOCH /
    UNKNOWN_LEADER_EPOCH); an epoch older than the first cached one ends where the
    first cached one starts."""

    name = "kip320"
    fenced_by_epoch = True

    def restarts_fetcher(self, old_leader: int, new_leader: int) -> bool:
        return True    # the leader epoch always changed (the broker applies only newer ones)

    def cache(self, rep: Replica) -> tuple:
        """2.1's cache: ``assign`` truncates the entries a new one conflicts with and
        records a new leader's epoch before its first record."""
        return epoch_cache(rep)

    def become_leader(self, rep: Replica, leader_epoch: int) -> Replica:
        if rep.log and rep.log[-1] == leader_epoch:
            return rep
        return rep._replace(unwritten_epoch=leader_epoch)

    @staticmethod
    def epoch_end_offset(cache: tuple, leo: int, requested: int) -> tuple:
        if requested == UNDEFINED:
            return UNDEFINED, UNDEFINED
        latest = cache[-1][0] if cache else UNDEFINED
        if requested == latest:
            return requested, leo
        larger = [start for e, start in cache if e > requested]
        if not larger:
            return UNDEFINED, UNDEFINED
        smaller = [e for e, _ in cache if e <= requested]
        return (smaller[-1] if smaller else requested), larger[0]

    def isr_expand_fenced(self, s: KafkaState, b: int, p: int, f: int, fetch_offset: int,
                          own_slot: int) -> bool:
        """The follower fetches in the leader's epoch (KIP-320: a fetch from another
        epoch is refused), and its fetch offset has reached the offset at which this
        leader's epoch starts (KAFKA-7128, in 2.1.0: ``Partition.maybeExpandIsr``
        compares it with ``leaderEpochStartOffsetOpt``, the LEO ``makeLeader`` saw).
        So a follower that reached a HW still lagging in an older epoch does not join
        yet, while one that reached the epoch's start does, the HW lagging or not."""
        view, rep = _leader_view(s, b, p)
        if s.brokers[f].partitions[p].leader_epoch != view.leader_epoch:
            return True
        return fetch_offset < epoch_start_offset(rep.log, view.leader_epoch, rep.leos[own_slot])


RULES = {r.name: r for r in (HighWatermark(), Kip101(), Kip279(), Kip320())}


def rule(m) -> HighWatermark:
    return RULES[m.cfg.truncation]


def truncate_enabled(m, s: KafkaState, out: list) -> None:
    if not m.cfg.data_path or not rule(m).offsets_for_leader_epoch:
        return
    fenced = rule(m).fenced_by_epoch
    for f, fb in enumerate(s.brokers):
        if not fb.alive:
            continue
        for p, rep in enumerate(fb.replicas):
            if not rep.truncating:
                continue
            fview = fb.partitions[p]
            lv = _leader_view(s, fview.leader, p) if fview.leader not in (NO_LEADER, f) else None
            if lv is None:
                continue
            if fenced and lv[0].leader_epoch != fview.leader_epoch:
                continue  # KIP-320: the answer of a leader in another epoch is not used
            out.append(action("TruncateFollower", follower=f, leader=fview.leader, partition=p))


def truncate(m, s: KafkaState, a: Action) -> KafkaState:
    f, leader, p = a.get("follower"), a.get("leader"), a.get("partition")
    frep = s.brokers[f].replicas[p]
    lrep = s.brokers[leader].replicas[p]
    offset, done = rule(m).truncation(frep, lrep)
    s = truncate_to(s, f, p, offset)
    if not done:
        return s
    return _with_replica(s, f, p, s.brokers[f].replicas[p]._replace(truncating=False))


def _truncated(rep: Replica, offset: int) -> Replica:
    """``Log.truncateTo``: a no-op at or past the LEO; else the records, the cache
    entries from ``offset`` on (an unwritten one included) and the HW above go."""
    if offset >= len(rep.log):
        return rep
    return rep._replace(log=rep.log[:offset], hw=min(rep.hw, offset), unwritten_epoch=UNDEFINED)


def truncate_to(s: KafkaState, b: int, p: int, offset: int) -> KafkaState:
    rep = s.brokers[b].replicas[p]
    new = _truncated(rep, offset)
    if new is rep:
        return s
    s = _with_replica(s, b, p, new)
    if not s.ghost.inv_follower_truncated:
        s = s._replace(ghost=s.ghost._replace(inv_follower_truncated=True))
    return s


# -- hooks used by broker.py -------------------------------------------------------------------

def on_become_leader(m, s: KafkaState, b: int, p: int, was_leader: bool) -> KafkaState:
    """``Partition.makeLeader`` (0.10 to 2.1): the HW is the broker's own (the one it
    had as follower, or read from its checkpoint after a restart).  A broker that
    was not leader already forgets its followers' LEOs (``UnknownLogReadResult``),
    so they hold the HW until they fetch in this leadership; a leader that only
    gets a new epoch keeps them.  Then the HW may move at once
    (``maybeIncrementLeaderHW``: the ISR may be down to the leader), and what is
    below it is exposed to consumers.  From 2.1 the epoch goes into the cache first.
    The leader's own slot of ``leos`` keeps its LEO from then on (KAFKA-7128's
    fence reads it: ``epoch_start_offset``)."""
    rep = rule(m).become_leader(s.brokers[b].replicas[p], s.brokers[b].partitions[p].leader_epoch)
    if not was_leader:
        i = m.ar[p].index(b)
        rep = rep._replace(leos=tuple(len(rep.log) if j == i else -1 for j in range(len(m.ar[p]))))
    s = _with_replica(s, b, p, rep._replace(truncating=False))
    s = advance_hw(m, s, b, p)
    return expose(m, s, b, p)


def on_become_follower(m, s: KafkaState, b: int, p: int, old_leader: int) -> KafkaState:
    """``ReplicaManager.makeFollowers``: only a partition whose fetcher restarts
    (``Partition.makeFollower`` returned true) truncates."""
    r = rule(m)
    if not r.restarts_fetcher(old_leader, s.brokers[b].partitions[p].leader):
        return s
    return r.become_follower(s, b, p)


def isr_expand_allowed(m, s: KafkaState, b: int, p: int, f: int) -> bool:
    """Which follower may join the ISR (``Partition.maybeExpandIsr``).  Every
    variant: it follows this leader and the leader has seen it fetch up to the
    leader's HW.  Kafka expands while it handles a fetch, so the follower must be
    fetching (not truncating), and what the leader saw must not be stale: a leader
    that kept its followers' LEOs over a new epoch (``on_become_leader``) may hold
    one from before the follower restarted and truncated.  KIP-320 adds the fences
    of ``Kip320.isr_expand_fenced``."""
    _view, rep = _leader_view(s, b, p)
    fb = s.brokers[f]
    if not fb.alive or fb.partitions[p].leader != b or fb.replicas[p].truncating:
        return False
    leo = rep.leos[m.ar[p].index(f)]
    if leo < 0 or leo < rep.hw or leo > len(fb.replicas[p].log):
        return False
    return not rule(m).isr_expand_fenced(s, b, p, f, leo, m.ar[p].index(b))


def on_stop(replicas: tuple) -> tuple:
    """A process stop keeps what is on disk (log, epoch cache, HW) and loses what is in memory."""
    return tuple(r._replace(leos=tuple(-1 for _ in r.leos), truncating=False) for r in replicas)


ENABLED = (produce_enabled, fetch_enabled, truncate_enabled)
APPLY = {"Produce": produce, "Fetch": fetch, "TruncateFollower": truncate}
