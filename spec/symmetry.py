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
  partition's slots onto themselves; the group is the permutations that do (all
  of them when the replication factor equals the broker count);
- reassignment targets (``reassignments=...``): with any, no symmetry is declared.

The permutation applies to the whole state: ids (controller, leaders), id sets
(ISRs, kept sorted), replica lists (ARs, RARs, the replicas of a LeaderAndIsr: in
their order, so the preferred replica stays first), per-broker tuples (sessions,
brokers, a controller's live and shutting-down views: moved to the new ids), and
per-slot tuples (re-indexed through the slots).  A broker's inbox is re-sorted, as
``spec.state.add_request`` keeps it.  Partitions are not permuted: their ARs differ
(partition p's starts at broker p), so only a broker permutation that rotates the
AR along with a partition permutation could be one, which is not worth its cost at
the partition counts the presets use (mostly one).
"""

from __future__ import annotations

from itertools import permutations

from checker.symmetry import Symmetry
from spec.state import (
    NO_LEADER, Broker, CachingBroker, ControllerContext, KafkaState, LeaderAndIsr, LeaderIsr, Reassignment,
    UpdateMetadata, Zk, request_key,
)


def broker_symmetry(model) -> Symmetry | None:
    """The broker permutations that keep every partition's replica slots, or None."""
    if model.reassign_targets:
        return None
    n = model.cfg.brokers
    slot_sets = [frozenset(slots) for slots in model.ar]
    group = [g for g in permutations(range(n)) if all(frozenset(g[x] for x in ss) == ss for ss in slot_sets)]
    if len(group) < 2:
        return None
    # per element: per partition, the source slot index of each target slot
    src = {}
    for g in group:
        per = []
        for slots in model.ar:
            pos = {b: i for i, b in enumerate(slots)}
            idx = [0] * len(slots)
            for i, b in enumerate(slots):
                idx[pos[g[b]]] = i
            per.append(tuple(idx))
        src[g] = tuple(per)
    inv = {g: tuple(g.index(b) for b in range(n)) for g in group}

    def apply(s: KafkaState, g: tuple) -> KafkaState:
        return _permute(s, g, inv[g], src[g])

    return Symmetry(group, apply, sort="brokers")


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


def _req(r, g: tuple):
    if type(r) is LeaderAndIsr:
        return LeaderAndIsr(r.controller_epoch, r.partition, g[r.leader] if r.leader != NO_LEADER else NO_LEADER,
                            r.leader_epoch, _idset(r.isr, g), r.version, _ids(r.replicas, g))
    if type(r) is UpdateMetadata and r.leader != NO_LEADER:
        return r._replace(leader=g[r.leader])
    return r


def _ctx(c: ControllerContext | None, g: tuple, ginv: tuple, src: tuple) -> ControllerContext | None:
    if c is None:
        return None
    return ControllerContext(
        c.epoch, _per_broker(c.live, ginv), tuple(_li(li, g) for li in c.partitions), c.partition_states,
        tuple(_slots(rs, src[p]) for p, rs in enumerate(c.replica_states)), _per_broker(c.shutting_down, ginv),
        c.deleting, tuple(_ids(ar, g) for ar in c.ar),
        tuple(None if r is None else Reassignment(_ids(r.target, g), _ids(r.original, g), r.step)
              for r in c.reassigning))


def _broker(br: Broker, g: tuple, ginv: tuple, src: tuple) -> Broker:
    inbox = br.inbox
    if inbox:
        inbox = tuple(sorted((_req(r, g) for r in inbox), key=request_key))
    # _replace keeps every other field (they hold no broker id: logs, HWs, epoch caches)
    replicas = tuple(r._replace(leos=_slots(r.leos, src[p])) for p, r in enumerate(br.replicas))
    br = br._replace(partitions=tuple(_li(li, g) for li in br.partitions), inbox=inbox,
                     ctx=_ctx(br.ctx, g, ginv, src), replicas=replicas,
                     assigned=tuple(_ids(a, g) for a in br.assigned))
    if type(br) is CachingBroker:
        br = br._replace(metadata=tuple(g[x] if x != NO_LEADER else NO_LEADER for x in br.metadata))
    return br


def _permute(s: KafkaState, g: tuple, ginv: tuple, src: tuple) -> KafkaState:
    zk = s.zk
    zk2 = Zk(g[zk.controller] if zk.controller != NO_LEADER else NO_LEADER, zk.controller_epoch,
             _per_broker(zk.sessions, ginv), zk.topic, tuple(_li(li, g) for li in zk.partitions), zk.delete_topic,
             tuple(_ids(ar, g) for ar in zk.ar), tuple(_ids(r, g) for r in zk.reassign))
    brokers = tuple(_broker(s.brokers[ginv[b]], g, ginv, src) for b in range(len(s.brokers)))
    gh = s.ghost
    ghost = gh._replace(inv_leader_moved=tuple(_ids(r, g) for r in gh.inv_leader_moved)) \
        if any(gh.inv_leader_moved) else gh
    return KafkaState(zk2, brokers, s.budget, ghost)


__all__ = ["broker_symmetry"]
