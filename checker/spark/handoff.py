"""Handing a level between the driver's search core and the Spark partitions.

A Spark job costs a few tenths of a second whatever its size, the search core
(checker.search) a tenth of a millisecond per state: so the narrow levels of a
search (the first ones, and any after wide ones) run on the driver, and only the
wide ones on the partitions.  Handing a level over means cutting the core's
visited map into the partitions' sorted arrays, with the order keys of the
frontier read back from the parent links (``part_records``); taking one back
means gathering the partitions' arrays under a dict the core can use as its
visited map (``Visited``) and sorting the frontier by key (``take_back``), so
that the core visits it in the local engine's order.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from checker.errors import ModelError
from checker.fingerprint import validate_state
from checker.model import Model
from checker.search import Visitor
from checker.spark import tasks

_PACK = struct.Struct(">H").pack


class Places(Visitor):
    """The partition of every state the driver's search core stores, for a model
    that places its states (``Model.partition_key``): the handoff needs it, and
    the visited map keeps fingerprints only.  The key of each is checked to be a
    plain value, as states are, so that its hash is the same in every process."""

    def __init__(self, model: Model, place, n: int) -> None:
        self.key, self.place, self.n = model.partition_key, place, n
        self.of: dict[int, int] = {}

    def state(self, fp: int, state: Any, depth: int, parent: int | None) -> None:
        self.of[fp] = self.place(state) % self.n
        validate_state(self.key(state), "partition_key(state)")


class Visited(dict):
    """The search core's visited map when the driver takes a narrow level back
    from the partitions: what the core stores is in the dict, the partitions'
    states in sorted arrays under it (fingerprint, parent, action index; an
    initial state is its own parent), read by binary search; ``own``: the
    partition each of them lived on (where the model places states itself)."""

    def __init__(self, fp, par, act, own=None) -> None:
        super().__init__()
        self.fp, self.par, self.act, self.own = fp, par, act, own

    def _at(self, h: int) -> int:
        i = int(np.searchsorted(self.fp, h))
        return i if i < len(self.fp) and int(self.fp[i]) == h else -1

    def __contains__(self, h) -> bool:
        return dict.__contains__(self, h) or self._at(h) >= 0

    def __missing__(self, h: int) -> tuple:
        i = self._at(h)
        if i < 0:
            raise KeyError(h)
        p = int(self.par[i])
        return (None if p == h else p, int(self.act[i]))

    def __len__(self) -> int:
        return dict.__len__(self) + len(self.fp)


def part_records(visited: dict, frontier: list, n: int, places: dict | None = None) -> tuple[list, np.ndarray]:
    """The ``n`` partitions' records (``(p, tasks.make_part(...))``) from the
    core's visited map and the level to expand next (``(fp, state)`` in BFS
    order): each partition's visited set and parent links, and its part of the
    frontier with the states' order keys (their paths of action indices, read
    back from the parent links); and every visited fingerprint.  A state's
    partition is its fingerprint % n, or, where the model places states
    (``Model.partition_key``), ``places[fp]`` for a state the core stored and
    ``visited.own`` for one taken back from the partitions."""
    keys: dict[int, bytes] = {}

    def key(h: int) -> bytes:
        k = keys.get(h)
        if k is None:
            par, i = visited[h]
            if i > tasks.MAX_INDEX:
                raise ModelError(f"a state has more than {tasks.MAX_INDEX} enabled actions (or initial "
                                 f"states); the Spark engine numbers them with 16 bits: use --engine local")
            k = keys[h] = _PACK(i) if par is None else key(par) + _PACK(i)
        return k

    count = dict.__len__(visited)
    v_all = np.fromiter(visited.keys(), dtype=np.int64, count=count)
    p_all = np.fromiter((h if p is None else p for h, (p, _) in visited.items()), dtype=np.int64, count=count)
    a_all = np.fromiter((i for _, i in visited.values()), dtype=np.int64, count=count)
    if count and int(a_all.max()) > tasks.MAX_INDEX:
        key(int(v_all[int(a_all.argmax())]))    # raises
    a_all = a_all.astype(np.uint16)
    if places is None:
        owner = v_all % n
    else:
        owner = np.fromiter((places[h] for h in visited.keys()), dtype=np.int64, count=count)
    if isinstance(visited, Visited):   # taken back: the partitions' states too
        v_all = np.concatenate([visited.fp, v_all])
        p_all = np.concatenate([visited.par, p_all])
        a_all = np.concatenate([visited.act, a_all])
        owner = np.concatenate([visited.fp % n if places is None else visited.own, owner])
    per: list[list] = [[] for _ in range(n)]
    for h, st in frontier:
        per[h % n if places is None else places[h]].append((h, key(h), st))
    records = []
    for p in range(n):
        mine = np.flatnonzero(owner == p)
        order = mine[np.argsort(v_all[mine], kind="stable")]
        rows = per[p]
        f_fp = np.array([r[0] for r in rows], dtype=np.int64)
        records.append((p, tasks.make_part(v_all[order], p_all[order], a_all[order], f_fp,
                                           b"".join(r[1] for r in rows), [r[2] for r in rows])))
    return records, v_all


def take_back(parts: list) -> tuple[Visited, list]:
    """The visited map and the frontier (``(fp, state)`` in key order, i.e. in the
    local engine's order) of the partitions' records ``parts`` (partition 0, 1...:
    ``Visited.own`` keeps which one held each state)."""
    v_fp = np.concatenate([p[1] for p in parts])
    order = np.argsort(v_fp, kind="stable")
    own = np.concatenate([np.full(len(p[1]), i, dtype=np.int64) for i, p in enumerate(parts)])
    visited = Visited(v_fp[order], np.concatenate([p[2] for p in parts])[order],
                      np.concatenate([p[3] for p in parts])[order], own[order])
    rows = []
    for p in parts:
        if len(p[4]):
            kl = len(p[5]) // len(p[4])
            rows += [(p[5][j * kl:(j + 1) * kl], h, st)
                     for j, (h, st) in enumerate(zip(p[4].tolist(), tasks.frontier_states(p)))]
    rows.sort(key=lambda r: r[0])
    return visited, [(h, st) for _, h, st in rows]
