"""Random-priority search: one visited set, the frontier expanded in a random order.

``kmc simulate --random-priority``.  Breadth-first search must finish every depth
before the next, so a violation at depth 24 costs every state within 23 steps.  A
random walk goes deep at once but forgets where it has been, and pays again for
every timing choice it must get right; a depth-first search with a visited set
(``--stateful``) remembers, but changes its early choices last.  This search keeps
every state it has seen and its whole frontier, like breadth-first search, and
takes the frontier in the order of a random key fixed per state: a hash of
``(seed, fingerprint)``.  It always expands the frontier state with the smallest
key, as invasion percolation grows (Wilkinson and Willemsen, 1983): the explored
region sends fingers deep along runs of small keys while it keeps going back to
shallow states whose key is small, so no prefix is held for long, unlike a
depth-first search's, and no depth must be finished, unlike a breadth-first
search's.  It is a best-first search whose priority says nothing about the model,
so the checker still knows nothing of it.

- Every ``always`` property is checked on every distinct state when it is first
  seen, step properties on every transition computed, deadlock on a state with no
  enabled action that ``is_terminal`` does not accept; ``sometimes`` properties
  report the depth (along the search's tree) where they first held.
- ``max_steps`` bounds the depth: a state that deep is checked but not expanded.
  A state outside ``within_boundary`` is not expanded.  When the frontier is empty
  and the depth bound never cut anything, the search is exhausted: it has visited
  every reachable state.
- A violation's path runs along the search tree (each state from the one whose
  expansion first reached it), so it is a real path of the model, usually longer
  than a shortest one; it is shrunk (:func:`checker.simulate.shrink`) and saved as
  an ordinary trace that ``kmc replay`` and ``kmc conform`` take.
- Memory: the frontier holds whole states (the visited set holds fingerprints and
  parent links), so it costs more per state than ``kmc check``'s store.

Determinism: the keys are blake2b digests of the seed and the fingerprint (itself
a blake2b digest), ties broken by fingerprint, and the successors of a state are
taken in the model's own order, so the order of the whole search depends only on
``seed``, never on ``PYTHONHASHSEED`` or timing.  A time limit may cut it short
(the clock is read every 1,024 transitions), but a violation it finds is the one
the seed gives.  It is one search, so it runs on the local engine only.

    >>> from tests.toys import Grid
    >>> r = search(Grid(4, k=5), seed=1)
    >>> r.verdict, r.violations[0].property, len(r.violations[0].path) - 1
    ('violated', 'SumNotK', 5)
"""

from __future__ import annotations

import heapq
import time
from hashlib import blake2b
from typing import Callable, Sequence, TextIO

from checker.errors import ModelError
from checker.fingerprint import fingerprint_fn, validate_state
from checker.model import ALWAYS, SOMETIMES, Model, Property, State
from checker.result import DEADLOCK
from checker.simulate import DEFAULT_MAX_STEPS, Found, SimulationResult, Walk, check_args, run_visited_search
from checker.simulate import model_call as call

__all__ = ["search", "run_search", "priority"]


def priority(seed: int, fingerprint: int) -> int:
    """The key of the state with this fingerprint: smaller keys are expanded first."""
    return int.from_bytes(blake2b(f"{seed}:{fingerprint}".encode(), digest_size=8).digest(), "little")


def run_search(model: Model, props: Sequence[Property], seed: int, *, max_steps: int = DEFAULT_MAX_STEPS,
               check_deadlock: bool = True, deadline: float | None = None,
               on_step: Callable[[Walk, int], None] | None = None) -> tuple[Walk, int, bool]:
    """Search until a violation, the deadline (a ``time.monotonic()`` value) or an
    empty frontier.  Returns what was seen (``Walk``: ``walks`` is 1, ``steps`` the
    transitions computed, ``fingerprints`` left empty), the number of distinct
    states, and whether the search was exhausted."""
    state_checks = [(p.name, p.predicate) for p in props if p.kind == ALWAYS and not p.step]
    step_checks = [(p.name, p.predicate) for p in props if p.kind == ALWAYS and p.step]
    wit_checks = [(p.name, p.predicate) for p in props if p.kind == SOMETIMES]
    fp = fingerprint_fn(model)
    inits = call("init_states()", lambda: list(model.init_states()))
    if not inits:
        raise ModelError("the model has no initial state: init_states() returned nothing")
    validate_state(inits[0], "initial state")
    within = None if getattr(type(model), "within_boundary", None) is Model.within_boundary else model.within_boundary
    out = Walk(walks=1, witnesses={name: None for name, _ in wit_checks})
    wit, counts = out.witnesses, out.action_counts
    parent: dict[int, tuple] = {}     # fingerprint -> (parent fingerprint, action), or (None, init index)
    heap: list[tuple] = []            # (key, fingerprint, depth, state)
    cut = False

    def trail(h: int) -> tuple[int, tuple]:
        acts = []
        while True:
            up, a = parent[h]
            if up is None:
                return a, tuple(reversed(acts))
            acts.append(a)
            h = up

    def look(s: State, depth: int) -> str | None:
        for name, pred in wit_checks:
            if (wit[name] is None or depth < wit[name]) and call(
                    f"the predicate of sometimes property {name!r}", pred, s):
                wit[name] = depth
        for name, pred in state_checks:
            if not call(f"the predicate of property {name!r}", pred, s):
                return name
        return None

    for i, s in enumerate(inits):
        h = fp(s)
        if h in parent:
            continue
        parent[h] = (None, i)
        bad = look(s, 0)
        if bad is not None:
            out.found = Found(0, bad, ALWAYS, i, (), f"{bad} does not hold in the last state")
            return out, len(parent), False
        heap.append((priority(seed, h), h, 0, s))
    heapq.heapify(heap)
    while heap:
        _, hs, d, s = heapq.heappop(heap)
        if d >= max_steps:
            cut = True
            continue
        if within is not None and not call("within_boundary(state)", within, s):
            continue
        acts = call("actions(state)", model.actions, s)
        if not acts:
            if check_deadlock and not call("is_terminal(state)", model.is_terminal, s):
                init, path = trail(hs)
                out.found = Found(0, DEADLOCK, "deadlock", init, path,
                                  "no action is enabled in the last state and model.is_terminal() is False")
                return out, len(parent), False
            continue
        for a in acts:
            t = call(f"next_state(state, {a})", model.next_state, s, a)
            kind = a[0]
            counts[kind] = counts.get(kind, 0) + 1
            out.steps += 1
            for name, pred in step_checks:
                if not call(f"the predicate of step property {name!r}", pred, s, a, t):
                    init, path = trail(hs)
                    out.found = Found(0, name, ALWAYS, init, path + (a,), f"{name} is broken by the last step, {a}")
                    return out, len(parent), False
            if not out.steps & 1023:
                if on_step is not None:
                    on_step(out, len(parent))
                if deadline is not None and time.monotonic() >= deadline:
                    return out, len(parent), False
            h = fp(t)
            if h in parent:
                continue
            parent[h] = (hs, a)
            if d + 1 > out.deepest:
                out.deepest = d + 1
            bad = look(t, d + 1)
            if bad is not None:
                init, path = trail(h)
                out.found = Found(0, bad, ALWAYS, init, path, f"{bad} does not hold in the last state")
                return out, len(parent), False
            heapq.heappush(heap, (priority(seed, h), h, d + 1, t))
    return out, len(parent), not cut


def search(model: Model, *, properties: Sequence[Property] | None = None, seed: int = 0,
           max_steps: int = DEFAULT_MAX_STEPS, check_deadlock: bool = True, time_limit: float | None = None,
           shrinking: bool = True, progress: TextIO | None = None) -> SimulationResult:
    """The random-priority search on this process; the result is a simulation's
    (one walk), its violation shrunk (:func:`checker.simulate.shrink`) and rebuilt
    as a path."""
    check_args(seed, None, max_steps)
    return run_visited_search(model, properties, seed, time_limit, shrinking, progress,
                              lambda props, deadline, tick: run_search(
                                  model, props, seed, max_steps=max_steps, check_deadlock=check_deadlock,
                                  deadline=deadline, on_step=tick))
