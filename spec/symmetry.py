"""The Kafka model's symmetry: brokers are interchangeable (``kmc check --symmetry``).

Nothing in the model's rules looks at a broker's number: elections take the first
live replica in the AR's *order* (which the state holds), the controller is any
broker that wins the ZooKeeper race, and every per-broker collection is a tuple
indexed by the id.  So renaming the brokers by a permutation maps every behaviour
to a behaviour, as long as the configuration names no broker by number.  It does
in two places:

- the replica *slots* of each partition (``KafkaModel.ar``, the initial AR plus any
  broker a reassignment adds), which index per-replica tuples (a controller's
  replica states, a leader's follower LEOs).  A permutation must map each
  partition's slots onto themselves, or onto another partition's when the
  partitions are permuted with it (below); the group is the permutations that do
  (all of them when the replication factor equals the broker count);
- reassignment targets (``reassignments=...``): with any, no symmetry is declared.

The permutation applies to the whole state: ids (controller, leaders), id sets
(ISRs, kept sorted), replica lists (ARs, RARs, the replicas of a LeaderAndIsr: in
their order, so the preferred replica stays first), per-broker tuples (sessions,
brokers, a controller's live and shutting-down views: moved to the new ids), and
per-slot tuples (re-indexed through the slots).  A broker's inbox is re-sorted, as
``spec.state.add_request`` keeps it.  Partitions are not permuted alone: their ARs
differ (partition p's starts at broker p).  But a broker permutation that maps one
partition's slots onto another's, with that partition permutation, renames the
whole configuration onto itself (ARs [0, 1] and [1, 0]: swap both brokers and both
partitions); then every per-partition tuple, the partition of each request in flight
and of each ghost record are moved too.
"""

from __future__ import annotations

from itertools import permutations

from checker.symmetry import Symmetry
from spec.state import (
    NO_LEADER, Broker, CachingBroker, ControllerContext, KafkaState, LeaderAndIsr, LeaderIsr, Reassignment,
    UpdateMetadata, Zk, request_key,
)


def broker_symmetry(model) -> Symmetry | None:
    """The broker permutations that keep every partition's replica slots, or None.

    With more than one partition, a broker permutation g may instead map partition
    p's slots onto partition q's: then (g, pi), with pi(p) = q, renames brokers and
    partitions together (two partitions with round-robin ARs [0, 1] and [1, 0] are
    swapped by swapping brokers 0 and 1).  The elements are then (g, pi) pairs."""
    if model.reassign_targets:
        return None
    n, parts = model.cfg.brokers, len(model.ar)
    slot_sets = [frozenset(slots) for slots in model.ar]
    group = []
    for g in permutations(range(n)):
        for pi in permutations(range(parts)):
            if all(frozenset(g[x] for x in slot_sets[p]) == slot_sets[pi[p]] for p in range(parts)):
                group.append((g, pi))
    if len(group) < 2:
        return None
    # per element: per target partition q, the source slot index of each of q's slots
    src = {}
    for g, pi in group:
        piinv = tuple(pi.index(q) for q in range(parts))
        per = []
        for q, slots in enumerate(model.ar):
            pos = {g[b]: j for j, b in enumerate(model.ar[piinv[q]])}
            per.append(tuple(pos[b] for b in slots))
        src[(g, pi)] = (tuple(per), piinv)
    inv = {g: tuple(g.index(b) for b in range(n)) for g, _pi in group}
    if all(pi == tuple(range(parts)) for _g, pi in group):
        # brokers alone: the elements are broker permutations, as they always were
        ident = tuple(range(parts))
        per_g = {g: src[(g, pi)][0] for g, pi in group}

        def apply(s: KafkaState, g: tuple) -> KafkaState:
            return _permute(s, g, inv[g], per_g[g], ident, ident)

        return Symmetry([g for g, _pi in group], apply, sort="brokers")

    def apply_both(s: KafkaState, e: tuple) -> KafkaState:
        g, pi = e
        per, piinv = src[e]
        return _permute(s, g, inv[g], per, pi, piinv)

    return Symmetry(group, apply_both, sort="broker-and-partition")


def _ids(t: tuple, g: tuple) -> tuple:
    return tuple(g[x] for x in t)


def _idset(t: tuple, g: tuple) -> tuple:
    return tuple(sorted(g[x] for x in t))


def _per_broker(t: tuple, ginv: tuple) -> tuple:
    """A tuple indexed by broker id, moved to the new ids: new[g[b]] = old[b]."""
    return tuple(t[ginv[b]] for b in range(len(t)))


def _slots(t: tuple, idx: tuple) -> tuple:
    return tuple(t[i] for i in idx) if t else t


def _li(li: LeaderIsr, g: tuple) -> LeaderIsr:
    if li.leader == NO_LEADER and not li.isr:
        return li
    return LeaderIsr(g[li.leader] if li.leader != NO_LEADER else NO_LEADER, li.leader_epoch, _idset(li.isr, g),
                     li.controller_epoch, li.version)


def _req(r, g: tuple, pi: tuple):
    if type(r) is LeaderAndIsr:
        return LeaderAndIsr(r.controller_epoch, pi[r.partition], g[r.leader] if r.leader != NO_LEADER else NO_LEADER,
                            r.leader_epoch, _idset(r.isr, g), r.version, _ids(r.replicas, g))
    if type(r) is UpdateMetadata:
        return r._replace(partition=pi[r.partition], leader=g[r.leader] if r.leader != NO_LEADER else NO_LEADER,
                          live=_idset(r.live, g))
    return r._replace(partition=pi[r.partition])


def _per_part(t: tuple, piinv: tuple) -> tuple:
    """A tuple indexed by partition, moved to the new partition ids: new[pi[p]] = old[p]."""
    return tuple(t[piinv[q]] for q in range(len(t))) if t else t


def _ctx(c: ControllerContext | None, g: tuple, ginv: tuple, src: tuple, piinv: tuple) -> ControllerContext | None:
    if c is None:
        return None
    return ControllerContext(
        c.epoch, _per_broker(c.live, ginv), tuple(_li(c.partitions[p], g) for p in piinv),
        _per_part(c.partition_states, piinv),
        tuple(_slots(c.replica_states[p], src[q]) for q, p in enumerate(piinv)), _per_broker(c.shutting_down, ginv),
        c.deleting, tuple(_ids(c.ar[p], g) for p in piinv),
        tuple(None if r is None else Reassignment(_ids(r.target, g), _ids(r.original, g), r.step)
              for r in _per_part(c.reassigning, piinv)),
        tuple(sorted((piinv.index(p), g[r]) for p, r in c.offline)))


def _broker(br: Broker, g: tuple, ginv: tuple, src: tuple, pi: tuple, piinv: tuple) -> Broker:
    inbox = br.inbox
    if inbox:
        inbox = tuple(sorted((_req(r, g, pi) for r in inbox), key=request_key))
    # _replace keeps every other field (they hold no broker id: logs, HWs, epoch caches)
    replicas = br.replicas
    if replicas:
        replicas = tuple(replicas[p]._replace(leos=_slots(replicas[p].leos, src[q])) for q, p in enumerate(piinv))
    br = br._replace(partitions=tuple(_li(br.partitions[p], g) for p in piinv), inbox=inbox,
                     ctx=_ctx(br.ctx, g, ginv, src, piinv), replicas=replicas,
                     assigned=tuple(_ids(a, g) for a in _per_part(br.assigned, piinv)))
    if type(br) is CachingBroker:
        br = br._replace(metadata=tuple(g[x] if x != NO_LEADER else NO_LEADER for x in _per_part(br.metadata, piinv)),
                         alive_brokers=_idset(br.alive_brokers, g))
    return br


def _records(t: tuple, pi: tuple) -> tuple:
    """A ghost set of (partition, offset, epoch), renamed and kept sorted."""
    return tuple(sorted((pi[r[0]],) + tuple(r[1:]) for r in t)) if t else t


def _permute(s: KafkaState, g: tuple, ginv: tuple, src: tuple, pi: tuple, piinv: tuple) -> KafkaState:
    zk = s.zk
    zk2 = Zk(g[zk.controller] if zk.controller != NO_LEADER else NO_LEADER, zk.controller_epoch,
             _per_broker(zk.sessions, ginv), zk.topic, tuple(_li(zk.partitions[p], g) for p in piinv),
             zk.delete_topic, tuple(_ids(zk.ar[p], g) for p in piinv), tuple(_ids(r, g) for r in _per_part(zk.reassign, piinv)))
    brokers = tuple(_broker(s.brokers[ginv[b]], g, ginv, src, pi, piinv) for b in range(len(s.brokers)))
    gh = s.ghost
    if any(gh.inv_leader_moved):
        gh = gh._replace(inv_leader_moved=tuple(_ids(r, g) for r in _per_part(gh.inv_leader_moved, piinv)))
    if any(i != p for p, i in enumerate(pi)):
        gh = gh._replace(inv_pending=_records(gh.inv_pending, pi), inv_acked=_records(gh.inv_acked, pi),
                         inv_read=_records(gh.inv_read, pi))
    return KafkaState(zk2, brokers, s.budget, gh)


__all__ = ["broker_symmetry"]
