"""The driver's visitor on the Spark engine: the calls the local engine would make.

A visitor (checker.search.Visitor; the graph builder of ``eventually``
properties) numbers states and edges in the order it is called, so it must be
called in the local engine's order.  The levels that run on the driver go through
the search core, which calls it itself (with ``Both`` when the engine needs a
visitor of its own there).  For a level run on the partitions, and only when a
visitor is given and still wants calls (``Visitor.done``), each expand task sends
what it saw (checker.spark.partition.Edges: per transition the source's position
in its frontier, the destination, the action as an index into the partition's
own table) and each merge task its new states, pickled as they are stored; the
driver replays them here in the order of the keys (checker.spark.tasks): a
level in key order, a state's transitions in action order, and each new state
just before the first transition that reaches it, which is the one that stored
it in the local engine.  A level the search stops in (the first violation, the
``max_states`` cut, a model error) is replayed up to where the local engine
stops, so a graph builder raises its limit where it would.
"""

from __future__ import annotations

import gc
import struct
from typing import Any

import numpy as np

from checker.errors import UsageError
from checker.search import Visitor
from checker.spark.tasks import EMPTY_I64, MAX_INDEX, PH_DEAD, PH_WITNESS, frontier_states

SLOTS = MAX_INDEX + 2     # the events of one state: 0 (not expanded, dead end), 1 + action index
_UNPACK = struct.Struct(">H").unpack


class Both(Visitor):
    """Two visitors of the driver's core, called in turn: the engine's own
    (where states are placed) and the caller's."""

    def __init__(self, first: Visitor, second: Visitor) -> None:
        self.first, self.second = first, second

    def state(self, fp: int, state: Any, depth: int, parent: int | None) -> None:
        self.first.state(fp, state, depth, parent)
        self.second.state(fp, state, depth, parent)

    def transition(self, src: int, act: Any, dst: int) -> None:
        self.first.transition(src, act, dst)
        self.second.transition(src, act, dst)

    def unexpanded(self, fp: int) -> None:
        self.first.unexpanded(fp)
        self.second.unexpanded(fp)

    def dead_end(self, fp: int, state: Any) -> None:
        self.first.dead_end(fp, state)
        self.second.dead_end(fp, state)


def joined(first: Visitor | None, second: Visitor | None) -> Visitor | None:
    """One visitor for the driver's core from two, either of which may be None."""
    if first is None or second is None:
        return first or second
    return Both(first, second)


def needs_every_level(visitor: Visitor | None, resume: Any, max_depth: int | None) -> None:
    """A visitor is shown every level as the local engine shows it: not from a
    checkpoint (the levels before it are gone), nor under ``max_depth`` (the level at
    the bound is only scanned, on the partitions, and its dead ends not shipped)."""
    if visitor is not None and (resume or max_depth is not None):
        raise UsageError(f"a visitor sees every level, which {'--resume' if resume else 'max_depth'} rules out "
                         f"on the Spark engine; use the local engine")


def _objects(items) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    for i, x in enumerate(items):
        out[i] = x
    return out


def replay(visitor: Visitor, depth: int, ex: list, mg: list, stop: tuple | None = None) -> None:
    """Call ``visitor`` for the level at ``depth`` as the local engine does, from
    the expand (``ex``) and merge (``mg``) tasks' statistics; ``stop``: the
    ``(key, phase)`` where the local engine stops in this level (None: it does
    not).  The visitor may raise (a graph builder past its limit).  The cyclic
    garbage collector is off meanwhile, as in checker.search: a graph builder only
    grows, and a collection every few hundred new edges would walk all of it.
    The level's graph is dropped from ``ex`` and ``mg`` afterwards."""
    collecting = gc.isenabled()
    if collecting:
        gc.disable()
    try:
        _replay(visitor, depth, ex, mg, stop)
    finally:
        if collecting:
            gc.enable()
        # The statistics are the values of the level's accumulator, which PySpark's
        # registry keeps for the life of the driver: without this, every level's
        # transitions and pickled new states would stay there beside the graph.
        for x in ex + mg:
            x.pop("graph", None)


def _replay(visitor: Visitor, depth: int, ex: list, mg: list, stop: tuple | None) -> None:
    new: dict[int, Any] = {}
    for m in mg:
        n_fp, f_blob, f_pos, blobs = m["graph"]
        if len(n_fp):
            new.update(zip(n_fp.tolist(), frontier_states((None,) * 6 + (f_blob, f_pos, blobs))))
    parts = [e["graph"] for e in ex if e.get("graph") is not None]
    if not parts:
        return
    kl = len(parts[0][1]) // len(parts[0][0])
    keys = np.concatenate([np.frombuffer(p[1], dtype=f"S{kl}") for p in parts])
    f_fp = np.concatenate([p[0] for p in parts])
    rank = np.empty(len(keys), dtype=np.int64)
    rank[np.argsort(keys, kind="stable")] = np.arange(len(keys), dtype=np.int64)
    base = np.cumsum([0] + [len(p[0]) for p in parts])[:-1]
    # Every event of the level, as (kind, frontier index, transition index), with
    # its place in the local engine's order: rank * SLOTS + slot.
    src = np.concatenate([p[2].astype(np.int64) + b for p, b in zip(parts, base)])
    dst = np.concatenate([p[3] for p in parts] + [EMPTY_I64])
    acts = np.concatenate([_objects(p[5])[p[4]] for p in parts] + [_objects(())])
    if len(src):
        first = np.ones(len(src), dtype=bool)
        first[1:] = src[1:] != src[:-1]
        at = np.arange(len(src), dtype=np.int64)
        index = at - np.maximum.accumulate(np.where(first, at, 0))   # the action's index in its state's list
    else:
        index = src
    outside = np.concatenate([p[6].astype(np.int64) + b for p, b in zip(parts, base)])
    ends = np.concatenate([p[7].astype(np.int64) + b for p, b in zip(parts, base)])
    rest = len(outside) + len(ends)
    kind = np.concatenate([np.zeros(len(src), np.int8), np.ones(len(outside), np.int8),
                           np.full(len(ends), 2, np.int8)])
    where = np.concatenate([src, outside, ends])
    place = rank[where] * SLOTS + np.concatenate([1 + index, np.zeros(rest, np.int64)])
    order = np.argsort(place, kind="stable")
    if stop is not None:
        order = order[place[order] < _cut(stop, kl, keys, rank)]
    fps = f_fp[where[order]].tolist()
    dsts = np.concatenate([dst, np.zeros(rest, np.int64)])[order].tolist()
    what = np.concatenate([acts, _objects([None] * len(outside)), _objects([s for p in parts for s in p[8]])])[order]
    on_state, on_edge = visitor.state, visitor.transition
    d1 = depth + 1
    missing = object()
    for k, fp, h, x in zip(kind[order].tolist(), fps, dsts, what.tolist()):
        if k == 0:
            st = new.pop(h, missing)
            if st is not missing:
                on_state(h, st, d1, fp)
            on_edge(fp, x, h)
        elif k == 1:
            visitor.unexpanded(fp)
        else:
            visitor.dead_end(fp, x)
    if new and stop is None:
        raise RuntimeError(f"kmc spark engine: level {depth}: {len(new)} new states that no transition reached")


def _cut(stop: tuple, kl: int, keys: np.ndarray, rank: np.ndarray) -> int:
    """The place (``rank * SLOTS + slot``) of the first event the local engine does
    not show its visitor, when it stops at ``stop``: a state-level event (a
    deadlock, an error of ``actions()``) or a transition's (a step property, the
    ``max_states`` cut, a state property, a model error), each before or after
    the visitor's calls as checker.search makes them."""
    key, phase = stop
    hit = np.flatnonzero(keys == np.frombuffer(key[:kl], dtype=f"S{kl}")[0])
    if len(hit) != 1:
        raise RuntimeError("kmc spark engine: the level's stop is not a state of its frontier")
    r = int(rank[hit[0]])
    if len(key) == kl:
        return r * SLOTS + (1 if phase >= PH_DEAD else 0)       # dead_end comes before is_terminal
    i = _UNPACK(key[kl:kl + 2])[0]
    return r * SLOTS + 1 + i + (1 if phase >= PH_WITNESS else 0)  # stored, then witnesses and state checks
