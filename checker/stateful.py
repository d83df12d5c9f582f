"""Stateful swarm search: randomized depth-first search with one visited set.

``kmc simulate --stateful``.  A random walk forgets where it has been, so it pays
again for every choice it must get right; breadth-first search remembers every
state but must finish each depth before the next.  This search sits between them,
after SPIN's depth-first search with a state table and swarm verification
(Holzmann et al., 2008): a sequence of depth-first searches ("walks") that share
one visited set of fingerprints (:func:`checker.fingerprint.fingerprint_fn`).

- Walk ``i`` draws its swarm setup exactly as :mod:`checker.simulate`'s walk ``i``
  does (:func:`swarm_budget`, :func:`swarm_weight` of ``(seed, i)``), and orders
  the enabled actions of each state it expands by a weighted random permutation:
  an action of weight ``w`` comes first ``w`` times as often.  An unfair kind over
  its budget is not left out but put after every other action, so that a state the
  search has finished with has had all its successors explored.
- A walk stops after it has found ``walk_states`` new distinct states (then the
  next walk starts again from an initial state with a new draw), or when its
  depth-first search has nothing left.  Its stack is abandoned, not lost: a state
  counts as *done* only once every successor has been explored, and later walks go
  through the states that are seen but not done (at most ``max_steps`` per walk),
  so nothing reachable is skipped for good.
- Depth is bounded by ``max_steps``: a state at that depth is not expanded.
- Every property is checked on each distinct state once (``always``), step
  properties on every transition computed, deadlock on states with no enabled
  action; ``sometimes`` properties report the depth along the search's path.

Determinism: the order of the whole search depends only on ``seed`` (the
fingerprints are blake2b digests, the draws are hashes and ``random.Random``
seeded by strings), never on ``PYTHONHASHSEED``, dict order or timing.  A time
limit may cut the search short, but a violation it finds is the one the seed
gives.  Spark is refused: walks share the visited set, so they cannot run apart.

    >>> from tests.toys import Grid
    >>> r = search(Grid(4, k=5), seed=1)
    >>> r.verdict, r.violations[0].property, len(r.violations[0].path) - 1
    ('violated', 'SumNotK', 5)
"""

from __future__ import annotations

import random
import time
from typing import Callable, Sequence, TextIO

from checker.errors import ModelError, UsageError
from checker.fingerprint import fingerprint_fn, validate_state
from checker.model import ALWAYS, SOMETIMES, Model, Property, State
from checker.result import DEADLOCK
from checker.simulate import (DEFAULT_MAX_STEPS, Found, SimulationResult, Walk, check_args, run_visited_search,
                              swarm_budget, swarm_weight)
from checker.simulate import model_call as call

__all__ = ["search", "run_search", "check_walk_states", "DEFAULT_WALK_STATES"]

DEFAULT_WALK_STATES = 2000
_NOT_DONE = 1 << 62     # in ``marks``: seen (checked), its subtree not finished


def check_walk_states(walk_states: object) -> None:
    if isinstance(walk_states, bool) or not isinstance(walk_states, int) or walk_states < 1:
        raise UsageError(f"walk_states must be an integer >= 1, not {walk_states!r}")


def run_search(model: Model, props: Sequence[Property], seed: int, *, walks: int | None = None,
               max_steps: int = DEFAULT_MAX_STEPS, walk_states: int = DEFAULT_WALK_STATES,
               swarm: bool = True, check_deadlock: bool = True, deadline: float | None = None,
               on_step: Callable[[Walk, int], None] | None = None) -> tuple[Walk, int, bool]:
    """Run walks ``0, 1, ...`` (at most ``walks``) until a violation, the deadline
    (a ``time.monotonic()`` value, looked at every 1,024 transitions) or the end of
    the space.  Returns what was seen (``Walk``: its ``fingerprints`` stay empty),
    the number of distinct states, and whether the space was exhausted."""
    state_checks = [(p.name, p.predicate) for p in props if p.kind == ALWAYS and not p.step]
    step_checks = [(p.name, p.predicate) for p in props if p.kind == ALWAYS and p.step]
    wit_checks = [(p.name, p.predicate) for p in props if p.kind == SOMETIMES]
    fp = fingerprint_fn(model)
    inits = call("init_states()", lambda: list(model.init_states()))
    if not inits:
        raise ModelError("the model has no initial state: init_states() returned nothing")
    validate_state(inits[0], "initial state")
    within = None if getattr(type(model), "within_boundary", None) is Model.within_boundary else model.within_boundary
    out = Walk(witnesses={name: None for name, _ in wit_checks})
    wit = out.witnesses
    counts = out.action_counts
    marks: dict[int, int] = {}       # fingerprint -> smallest depth its subtree was finished at, or _NOT_DONE
    fairness: dict[str, bool] = {}

    def look(s: State, depth: int) -> str | None:
        for name, pred in wit_checks:
            if (wit[name] is None or depth < wit[name]) and call(
                    f"the predicate of sometimes property {name!r}", pred, s):
                wit[name] = depth
        for name, pred in state_checks:
            if not call(f"the predicate of property {name!r}", pred, s):
                return name
        return None

    walk = 0
    while walks is None or walk < walks:
        rng = random.Random(f"{seed}:{walk}")
        budgets: dict[str, int | None] = {}
        weights: dict[tuple, int] = {}

        def order(s: State, used: dict) -> list:
            acts = call("actions(state)", model.actions, s)
            if not swarm:
                acts = list(acts)
                rng.shuffle(acts)
                return acts
            keyed = []
            for i, a in enumerate(acts):
                kind = a[0]
                if kind not in budgets:
                    f = fairness.get(kind)
                    if f is None:
                        f = fairness[kind] = bool(call("fair(action)", model.fair, a))
                    budgets[kind] = None if f else swarm_budget(seed, walk, kind)
                who = (kind, a[1][0][1]) if a[1] else (kind, None)
                w = weights.get(who)
                if w is None:
                    w = weights[who] = swarm_weight(seed, walk, kind) * swarm_weight(seed, walk, repr(who))
                key = rng.random() ** (1.0 / w)       # Efraimidis-Spirakis: a weighted random permutation
                b = budgets[kind]
                if b is not None and used.get(kind, 0) >= b:
                    key -= 1.0                        # over its budget: after every other action
                keyed.append((-key, i, a))
            keyed.sort()
            return [a for _, _, a in keyed]

        init = rng.randrange(len(inits))
        s0 = inits[init]
        h0 = fp(s0)
        if marks.get(h0, _NOT_DONE) <= 0:
            walk += 1                                 # this initial state's whole space is done
            if all(marks.get(fp(s), _NOT_DONE) <= 0 for s in inits):
                out.walks = walk
                return out, len(marks), True
            continue
        new = 0
        if h0 not in marks:
            marks[h0] = _NOT_DONE
            new += 1
            bad = look(s0, 0)
            if bad is not None:
                out.walks = walk + 1
                out.found = Found(walk, bad, ALWAYS, init, (), f"{bad} does not hold in the last state")
                return out, len(marks), False
        on_stack = {h0}
        # a frame: [state, depth, used budgets, ordered actions, next index, action in, fingerprint]
        stack = [[s0, 0, {}, None, 0, None, h0]]
        found = None
        while stack and found is None:
            fr = stack[-1]
            s, d, used, acts, i, _, hs = fr
            if acts is None:
                if d >= max_steps or (within is not None and not call("within_boundary(state)", within, s)):
                    acts = fr[3] = []
                else:
                    acts = fr[3] = order(s, used)
                    if not acts and check_deadlock and not call("is_terminal(state)", model.is_terminal, s):
                        found = Found(walk, DEADLOCK, "deadlock", init, tuple(f[5] for f in stack[1:]),
                                      "no action is enabled in the last state and model.is_terminal() is False")
                        break
            if i >= len(acts):
                stack.pop()
                on_stack.discard(hs)
                if d < marks[hs]:
                    marks[hs] = d
                continue
            fr[4] = i + 1
            a = acts[i]
            t = call(f"next_state(state, {a})", model.next_state, s, a)
            kind = a[0]
            counts[kind] = counts.get(kind, 0) + 1
            out.steps += 1
            for name, pred in step_checks:
                if not call(f"the predicate of step property {name!r}", pred, s, a, t):
                    found = Found(walk, name, ALWAYS, init, tuple(f[5] for f in stack[1:]) + (a,),
                                  f"{name} is broken by the last step, {a}")
                    break
            if found is not None:
                break
            if not out.steps & 1023:
                if on_step is not None:
                    on_step(out, len(marks))
                if deadline is not None and time.monotonic() >= deadline:
                    break
            h = fp(t)
            m = marks.get(h)
            if m is not None and (m != _NOT_DONE or h in on_stack):
                continue                              # done, or a cycle back onto this walk's path
            if m is None:
                marks[h] = _NOT_DONE
                new += 1
                bad = look(t, d + 1)
                if bad is not None:
                    found = Found(walk, bad, ALWAYS, init, tuple(f[5] for f in stack[1:]) + (a,),
                                  f"{bad} does not hold in the last state")
                    out.deepest = max(out.deepest, d + 1)
                    break
            if d + 1 > out.deepest:
                out.deepest = d + 1
            if budgets.get(kind) is not None:
                used = dict(used)
                used[kind] = used.get(kind, 0) + 1
            on_stack.add(h)
            stack.append([t, d + 1, used, None, 0, a, h])
            if new >= walk_states:
                break
        walk += 1
        out.walks = walk
        if found is not None:
            out.found = found
            return out, len(marks), False
        if deadline is not None and time.monotonic() >= deadline:
            break
    return out, len(marks), False


def search(model: Model, *, properties: Sequence[Property] | None = None, seed: int = 0,
           walks: int | None = None, max_steps: int = DEFAULT_MAX_STEPS, walk_states: int = DEFAULT_WALK_STATES,
           swarm: bool = True, check_deadlock: bool = True, time_limit: float | None = None,
           shrinking: bool = True, progress: TextIO | None = None) -> SimulationResult:
    """The stateful search on this process; the result is a simulation's, its
    violation shrunk (:func:`checker.simulate.shrink`) and rebuilt as a path."""
    check_args(seed, walks, max_steps)
    check_walk_states(walk_states)
    return run_visited_search(model, properties, seed, time_limit, shrinking, progress,
                              lambda props, deadline, tick: run_search(
                                  model, props, seed, walks=walks, max_steps=max_steps, walk_states=walk_states,
                                  swarm=swarm, check_deadlock=check_deadlock, deadline=deadline, on_step=tick))
