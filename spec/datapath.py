"""The replication data path: produce, follower fetch, high watermark, truncation.

Enabled by ``max_records > 0``.  Every historical truncation rule is kept as a
configuration choice, each a small override of the base rule in the spirit of
Gustafson's module chain (KafkaReplication <- Kip101 <- Kip279 <- Kip320):

- ``high_watermark`` (before KIP-101): a new follower truncates to its own HW.
- ``kip101``: it asks the leader for the end offset of its last epoch
  (OffsetsForLeaderEpoch) and truncates there; a leader that never had that epoch
  answers with the start of its first larger epoch, which can be past the point
  where the logs diverge (the hole KIP-279 closed).
- ``kip279``: it truncates to the first offset where the two logs diverge.
- ``kip320``: the same, but the OffsetsForLeaderEpoch answer and every fetch are
  fenced by the leader epoch, and the ISR only grows once the HW has reached the
  leader's own epoch.

The OffsetsForLeaderEpoch round trip is one step (``TruncateFollower``), reading
the log of the broker the follower believes leads, as Gustafson's specs do.
"""

from __future__ import annotations

from checker.model import Action, action
from spec.state import NO_LEADER, KafkaState, Replica, put

DOCS = {
    "Produce": "a producer writes to the broker that believes it leads (acks=all is refused while "
               "the ISR is smaller than min.insync.replicas)",
    "Fetch": "a follower fetches one record from its LEO and takes HW = min(its LEO, the HW the leader "
             "had when it read); the leader then records the follower's fetch offset and advances its HW "
             "to the ISR's smallest LEO",
    "TruncateFollower": "OffsetsForLeaderEpoch: a new follower finds where its log stops matching "
                        "the leader's and truncates there (KIP-101 and later)",
}

EMPTY = Replica((), 0, (), False)


def fresh_replica(rf: int) -> Replica:
    return Replica((), 0, tuple(-1 for _ in range(rf)), False)


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
    return expose(s, b, p, view.leader_epoch)


def expose(s: KafkaState, b: int, p: int, epoch: int) -> KafkaState:
    rep = s.brokers[b].replicas[p]
    g = s.ghost
    read = _add(g.inv_read, ((p, o, rep.log[o]) for o in range(rep.hw)))
    acked = [x for x in g.inv_pending if x[0] == p and x[2] == epoch and x[1] < rep.hw
             and rep.log[x[1]] == x[2]]
    if read is g.inv_read and not acked:
        return s
    g = g._replace(inv_read=read)
    if acked:
        g = g._replace(inv_pending=tuple(x for x in g.inv_pending if x not in acked),
                       inv_acked=_add(g.inv_acked, acked))
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
            if lv is None:
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
    b, p, acks = a.get("leader"), a.get("partition"), a.get("acks")
    view, rep = _leader_view(s, b, p)
    if acks == "all" and len(view.isr) < m.cfg.min_insync_replicas:
        return s._replace(ghost=s.ghost._replace(inv_write_refused=True))  # NotEnoughReplicas
    offset = len(rep.log)
    s = _with_replica(s, b, p, rep._replace(log=rep.log + (view.leader_epoch,)))
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
    if m.cfg.truncation == "kip320" and lv[0].leader_epoch != fview.leader_epoch:
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
    log = frep.log
    if len(log) > len(lrep.log):
        # OffsetOutOfRange: the follower is ahead of the leader and truncates to its LEO.
        log = log[:len(lrep.log)]
        s = s._replace(ghost=s.ghost._replace(inv_follower_truncated=True))
    fetch_offset = len(log)
    if fetch_offset < len(lrep.log):
        log = log + (lrep.log[fetch_offset],)
    # The response carries the HW the leader had when it read the log, *before* it
    # records this fetch's offset (Kafka reads the HW first): the follower's HW is
    # one fetch round behind the leader's, which is what KIP-101's scenarios need.
    s = _with_replica(s, f, p, frep._replace(log=log, hw=min(len(log), lrep.hw)))
    i = m.ar[p].index(f)
    s = _with_replica(s, leader, p, lrep._replace(leos=put(lrep.leos, i, fetch_offset)))
    return advance_hw(m, s, leader, p)


# -- truncation ------------------------------------------------------------------------------

def _kip101_offset(frep: Replica, lrep: Replica) -> int:
    """Gustafson's LookupOffsetForEpoch: the end offset of the follower's last epoch
    as the leader sees it; if the leader never had that epoch, the start of its
    first larger epoch (or the follower's HW if there is none)."""
    if not frep.log:
        return 0
    epoch = frep.log[-1]
    if not lrep.log:
        return frep.hw
    if lrep.log[-1] == epoch:
        return len(lrep.log)
    larger = [o for o, e in enumerate(lrep.log) if e > epoch]
    return min(larger) if larger else frep.hw


def _diverging_offset(frep: Replica, lrep: Replica) -> int:
    """KIP-279: one past the last offset where both logs hold the same record."""
    for o in range(min(len(frep.log), len(lrep.log)) - 1, -1, -1):
        if frep.log[o] == lrep.log[o]:
            return o + 1
    return 0


def truncate_enabled(m, s: KafkaState, out: list) -> None:
    if not m.cfg.data_path or m.cfg.truncation == "high_watermark":
        return
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
            if m.cfg.truncation == "kip320" and lv[0].leader_epoch != fview.leader_epoch:
                continue  # KIP-320: the answer of a leader in another epoch is not used
            out.append(action("TruncateFollower", follower=f, leader=fview.leader, partition=p))


def truncate(m, s: KafkaState, a: Action) -> KafkaState:
    f, leader, p = a.get("follower"), a.get("leader"), a.get("partition")
    frep = s.brokers[f].replicas[p]
    lrep = s.brokers[leader].replicas[p]
    if m.cfg.truncation == "kip101":
        offset = _kip101_offset(frep, lrep)
    else:
        offset = _diverging_offset(frep, lrep)
    return truncate_to(s, f, p, offset)


def truncate_to(s: KafkaState, b: int, p: int, offset: int) -> KafkaState:
    rep = s.brokers[b].replicas[p]
    offset = min(offset, len(rep.log))
    s = _with_replica(s, b, p, rep._replace(log=rep.log[:offset], hw=min(rep.hw, offset), truncating=False))
    if offset < len(rep.log) and not s.ghost.inv_follower_truncated:
        s = s._replace(ghost=s.ghost._replace(inv_follower_truncated=True))
    return s


# -- hooks used by broker.py -------------------------------------------------------------------

def on_become_leader(m, s: KafkaState, b: int, p: int) -> KafkaState:
    """A new leader forgets what it knew of the followers' LEOs (Kafka resets the
    remote replicas' fetch state), so the HW waits for a fetch in the new epoch.
    What is below its own HW is exposed to consumers at once."""
    rep = s.brokers[b].replicas[p]
    i = m.ar[p].index(b)
    leos = tuple(len(rep.log) if j == i else -1 for j in range(len(m.ar[p])))
    s = _with_replica(s, b, p, rep._replace(leos=leos, truncating=False))
    return expose(s, b, p, s.brokers[b].partitions[p].leader_epoch)


def on_become_follower(m, s: KafkaState, b: int, p: int) -> KafkaState:
    rep = s.brokers[b].replicas[p]
    if m.cfg.truncation == "high_watermark":
        return truncate_to(s, b, p, rep.hw)
    return _with_replica(s, b, p, rep._replace(truncating=True))


def isr_expand_allowed(m, s: KafkaState, b: int, p: int, f: int) -> bool:
    """Which follower may join the ISR.  Every variant: it follows this leader and
    the leader has seen it fetch up to the leader's HW.  KIP-320 adds two fences
    found with Gustafson's spec: it follows the leader's *epoch*, and the HW has
    reached the leader's own epoch, so a follower cannot join while it may still
    miss committed records of an earlier epoch."""
    view, rep = _leader_view(s, b, p)
    fb = s.brokers[f]
    if not fb.alive or fb.partitions[p].leader != b:
        return False
    leo = rep.leos[m.ar[p].index(f)]
    if leo < 0 or leo < rep.hw:
        return False
    if m.cfg.truncation == "kip320":
        if fb.partitions[p].leader_epoch != view.leader_epoch:
            return False
        if rep.hw != len(rep.log) and rep.log[rep.hw] != view.leader_epoch:
            return False
    return True


def on_stop(replicas: tuple) -> tuple:
    """A process stop keeps what is on disk (log, HW) and loses what is in memory."""
    return tuple(r._replace(leos=tuple(-1 for _ in r.leos), truncating=False) for r in replicas)


ENABLED = (produce_enabled, fetch_enabled, truncate_enabled)
APPLY = {"Produce": produce, "Fetch": fetch, "TruncateFollower": truncate}
