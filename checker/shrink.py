"""Shrinking a conformance divergence: the shortest diverging path that can be found.

:func:`shrink` takes what a conformance run found (a :class:`Divergence`) and a
harness (:class:`checker.conform.Harness`, or anything with its ``run``, ``fits``,
``search``, ``model``, ``probed`` and ``runs``), and cuts the path, first by delta
debugging over its steps, then by a breadth-first search of the model's states
from the same initial state; that search is the search core's
(:class:`checker.search.Search`, on the model's view from that state,
:mod:`checker.fromstate`), with a visitor that replays the first path to each new
state.  Every path it reports was replayed and diverges.
"""

from __future__ import annotations

from typing import Any

from checker.divergence import Divergence
from checker.fromstate import from_state
from checker.model import Action, State
from checker.search import Visitor

__all__ = ["shrink"]


def shrink(harness: Any, found: Divergence, search_budget: int = 2000) -> Divergence:
    """The shortest diverging path that can be found from ``found``, with ``original``
    set to ``found``.  Deterministic.

    First, delta debugging over the steps of ``found.actions``: drop chunks of steps
    (halves, quarters, ... single steps) while what is left is still legal in the
    model and still diverges (at any step: the path is cut there), until no single
    step can be dropped.  Dropping steps cannot turn ``Replicate(follower=0)`` into
    ``Replicate(follower=1)`` after a dropped failover, so the result is only
    1-minimal; second, a breadth-first search of the model's states from the same
    initial state (one path per state, at most ``search_budget`` replays) looks for a
    shorter diverging path.  It finds the shortest one whenever the implementation's
    behaviour depends only on the model state a path reaches; whatever it finds is
    replayed, so a reported path always diverges."""
    probed, harness.probed = harness.probed, None    # a candidate is probed in every state
    try:
        return _shrink(harness, found, search_budget)
    finally:
        harness.probed = probed


def _shrink(harness: Any, found: Divergence, search_budget: int) -> Divergence:
    init = found.init
    best = found
    cur = list(found.actions)
    tried: set[tuple] = set()
    runs0 = harness.runs

    def attempt(cand: list[Action]) -> Divergence | None:
        key = tuple(cand)
        if key in tried:
            return None
        tried.add(key)
        if not harness.fits(cand, init):
            return None
        return harness.run(cand, init, source=found.source)

    if best.actions:
        size = max(1, len(cur) // 2)
        while size >= 1 and cur:
            changed = False
            i = 0
            while i < len(cur):
                cand = cur[:i] + cur[i + size:]
                d = attempt(cand)
                if d is not None:
                    best, cur, changed = d, list(d.actions), True
                else:
                    i += size
            if changed and size > 1:
                size = min(size, max(1, len(cur) // 2))
            elif not changed and size == 1:
                break
            elif not changed:
                size //= 2
            # changed at size 1: another pass at size 1, until nothing can be dropped
        shorter = _search(harness, init, len(best.actions) - 1, search_budget, found.source)
        if shorter is not None:
            best = shorter
    best.original = found
    best.replays = harness.runs - runs0
    return best


class _Diverged(Exception):
    def __init__(self, divergence: Divergence | None) -> None:
        super().__init__("a shorter path diverges" if divergence else "the replay budget is spent")
        self.divergence = divergence


class _Shortest(Visitor):
    """Replays the first path to every new state on a fresh implementation, and
    stops the search at the first that diverges, or when ``budget`` are spent."""

    def __init__(self, harness: Any, init: State, budget: int, source: str) -> None:
        self.harness, self.init, self.budget, self.source = harness, init, budget, source
        self.paths: dict[int, tuple] = {}
        self.new: int | None = None
        self.runs = 0

    def state(self, fp: int, state: State, depth: int, parent: int | None) -> None:
        if parent is None:
            self.paths[fp] = ()
        else:
            self.new = fp

    def transition(self, src: int, act: Action, dst: int) -> None:
        if dst != self.new:
            return
        self.new = None
        cand = self.paths[dst] = self.paths[src] + (act,)
        d = self.harness.run(cand, self.init, source=self.source)
        self.runs += 1
        if d is not None or self.runs >= self.budget:
            raise _Diverged(d)


def _search(harness: Any, init: State, max_len: int, budget: int, source: str) -> Divergence | None:
    """Breadth-first over model states (the first path to each), replaying each path on
    a fresh implementation: the first that diverges within ``max_len`` steps."""
    if max_len < 1 or budget < 1:
        return None
    try:
        harness.search(from_state(harness.model, init), None, max_len, _Shortest(harness, init, budget, source))
    except _Diverged as stop:
        return stop.divergence
    return None
