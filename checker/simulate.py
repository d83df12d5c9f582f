"""Swarm simulation: random walks for configurations beyond exhaustive reach.

After TLC's ``-simulate`` and Stateright's simulation checker, with *swarm
testing* (Groce et al., ISSTA 2012): instead of one random policy for every walk,
each walk draws its own configuration of the model's free choices, so that some
walks take many faults of one kind and none of another.  A uniform random walk
spreads its steps over every enabled action and rarely reaches the deep corners
that need a fault to be *absent* for a while.

What a walk draws (deterministically, from ``(seed, walk index)``):

- for every *unfair* action kind (``Model.fair`` says False: the faults and the
  environment's free choices), whether the walk may take it at all and, if so, a
  budget of how many times (1, 2 or unbounded).  Fair kinds (the system's own
  progress: request delivery, elections...) are always allowed, because leaving
  one out only ends walks early in states that are not real dead ends;
- a weight for every action kind, and one for every (kind, first argument) pair,
  e.g. delivering to broker 1: an action is taken with probability proportional to
  the product, so that some walks keep one broker's requests waiting for long;
- the initial state, then at every step one of the allowed enabled actions.

A walk ends after ``max_steps`` steps, outside ``within_boundary``, in a state with
no enabled action (a deadlock unless the model calls it terminal), or in a state
where every enabled action is one the walk's swarm draw left out.

What is checked: every ``always`` state property on every visited state (initial
ones included), every step property on every transition, deadlock, and every
``sometimes`` property (the depth where it first held is reported).  The
simulation stops at the first violation; the violating walk is cut at the
violation and shrunk (:func:`shrink`), then rebuilt as an ordinary path of
Steps, so the trace writer, ``kmc replay`` and ``kmc conform`` take it unchanged.

Determinism: walk ``i`` depends only on ``(seed, i)``, never on the order walks
run in, so every engine reports the same first violating walk (the lowest index)
and the same shrunk counterexample for the same ``seed`` and ``walks``.  The
counts (walks run, distinct states) are those of the walks an engine ran.

    >>> from tests.toys import Grid
    >>> r = simulate(Grid(4, k=5), seed=1, walks=10)
    >>> r.verdict, r.violations[0].property, len(r.violations[0].path) - 1
    ('violated', 'SumNotK', 5)
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from hashlib import blake2b
from typing import Any, Callable, Sequence, TextIO

from checker.errors import USER_CODE_ERRORS, ModelError, UsageError
from checker.fingerprint import fingerprint_fn, validate_state
from checker.model import ALWAYS, SOMETIMES, Action, Model, Property, State
from checker.result import BOUNDED, DEADLOCK, VIOLATED, Step, Violation

__all__ = ["simulate", "run_walks", "shrink", "SimulationResult", "Walk", "Found", "swarm_budget", "swarm_weight",
           "check_args", "validate_properties", "finish", "Progress", "model_call"]

DEFAULT_MAX_STEPS = 100
DEFAULT_WALKS = 10_000
PROGRESS_SECONDS = 2.0
BUDGETS = (1, 2, None)   # a swarm budget of an unfair kind; None: unbounded


@dataclass
class Found:
    """A violation a walk found: which walk, which property, and the actions that
    lead to it from initial state ``init`` (an index into ``init_states()``)."""

    walk: int
    property: str
    kind: str
    init: int
    actions: tuple
    message: str = ""


@dataclass
class Walk:
    """What a batch of walks saw (a Spark task returns one of these)."""

    walks: int = 0
    steps: int = 0
    deepest: int = 0
    fingerprints: set = field(default_factory=set)
    action_counts: dict = field(default_factory=dict)
    witnesses: dict = field(default_factory=dict)      # sometimes name -> smallest depth seen
    found: Found | None = None

    def merge(self, other: "Walk") -> None:
        self.walks += other.walks
        self.steps += other.steps
        self.deepest = max(self.deepest, other.deepest)
        self.fingerprints |= other.fingerprints
        for k, v in other.action_counts.items():
            self.action_counts[k] = self.action_counts.get(k, 0) + v
        for k, v in other.witnesses.items():
            if v is not None and (self.witnesses.get(k) is None or v < self.witnesses[k]):
                self.witnesses[k] = v
            else:
                self.witnesses.setdefault(k, None)
        if other.found is not None and (self.found is None or other.found.walk < self.found.walk):
            self.found = other.found


@dataclass
class SimulationResult:
    verdict: str                      # VIOLATED, or BOUNDED (nothing found; a simulation proves nothing)
    violations: list[Violation]
    walks: int
    steps: int
    distinct: int
    deepest: int
    seconds: float
    action_counts: dict
    witnesses: dict
    seed: int
    walk: int | None = None           # index of the first violating walk
    found_length: int | None = None   # its length before shrinking
    shrink_replays: int = 0
    exhausted: bool = False           # a stateful search (checker.stateful) ran out of states to visit

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "seed": self.seed, "walks": self.walks, "steps": self.steps,
                "distinct": self.distinct, "deepest": self.deepest, "seconds": round(self.seconds, 3),
                "walk": self.walk, "found_length": self.found_length,
                "shrunk_length": len(self.violations[0].path) - 1 if self.violations else None,
                "shrink_replays": self.shrink_replays, "exhausted": self.exhausted,
                "action_counts": dict(sorted(self.action_counts.items())),
                "witnesses": dict(sorted(self.witnesses.items()))}


WEIGHTS = (1, 2, 4, 8)    # a swarm weight of a kind: how much more likely than weight 1


def _draw(seed: int, walk: int, kind: str) -> int:
    return int.from_bytes(blake2b(f"{seed}:{walk}:{kind}".encode(), digest_size=8).digest(), "little")


def swarm_budget(seed: int, walk: int, kind: str) -> int | None:
    """How many actions of unfair kind ``kind`` walk ``walk`` may take: 0 (left
    out, one walk in four), else 1, 2 or None (unbounded).  A hash of ``(seed,
    walk, kind)``, so the draw does not depend on the order kinds are met in.  (One
    in two left out covered fewer states of data-kip101 per second: walks that may
    not produce end early.)"""
    h = _draw(seed, walk, kind)
    if h % 4 == 0:
        return 0
    return BUDGETS[(h >> 2) % len(BUDGETS)]


def swarm_weight(seed: int, walk: int, kind: str) -> int:
    """The weight of ``kind`` (an action kind, or a kind and first argument) in walk
    ``walk``: an enabled action of weight w is w times as likely to be taken as one
    of weight 1."""
    return WEIGHTS[(_draw(seed, walk, kind) >> 8) % len(WEIGHTS)]


def validate_properties(props: Sequence[Property]) -> None:
    seen: set[str] = set()
    for p in props:
        if not isinstance(p, Property):
            raise ModelError(f"properties must be checker.model.Property objects, got {type(p).__name__}: {p!r}")
        if p.name in seen or p.name == DEADLOCK:
            raise ModelError(f"two properties are named {p.name!r} (or it clashes with {DEADLOCK!r}); "
                             f"names must be unique")
        seen.add(p.name)


def model_call(what: str, fn: Callable, *args: Any) -> Any:
    try:
        return fn(*args)
    except ModelError:
        raise
    except USER_CODE_ERRORS as e:  # noqa: BLE001 - model code
        raise ModelError(f"model error: {what} raised {type(e).__name__}: {e}; the model must be total on the "
                         f"states it can reach: fix it") from e


def run_walks(model: Model, props: Sequence[Property], seed: int, indices: Sequence[int], *,
              max_steps: int = DEFAULT_MAX_STEPS, swarm: bool = True, check_deadlock: bool = True,
              deadline: float | None = None, on_walk: Callable[[Walk], None] | None = None,
              into: Walk | None = None) -> Walk:
    """Run the walks ``indices`` in order, stopping after the first one that finds a
    violation (or at ``deadline``, a ``time.monotonic()`` value, after a whole walk),
    adding what they saw to ``into`` (default: a new Walk), which is returned.
    Every engine runs its share of the walks through this function."""
    state_checks = [p for p in props if p.kind == ALWAYS and not p.step]
    step_checks = [p for p in props if p.kind == ALWAYS and p.step]
    wit_checks = [p for p in props if p.kind == SOMETIMES]
    fp = fingerprint_fn(model)
    inits = model_call("init_states()", lambda: list(model.init_states()))
    if not inits:
        raise ModelError("the model has no initial state: init_states() returned nothing")
    within = None if getattr(type(model), "within_boundary", None) is Model.within_boundary else model.within_boundary
    fair = model.fair
    out = Walk() if into is None else into
    for p in wit_checks:
        out.witnesses.setdefault(p.name, None)
    seen = out.fingerprints
    counts = out.action_counts
    wit = out.witnesses

    def look(s: State, depth: int, trail: tuple, init: int, walk: int) -> Found | None:
        seen.add(fp(s))
        for p in wit_checks:
            if (wit[p.name] is None or depth < wit[p.name]) and model_call(
                    f"the predicate of sometimes property {p.name!r}", p.predicate, s):
                wit[p.name] = depth
        for p in state_checks:
            if not model_call(f"the predicate of property {p.name!r}", p.predicate, s):
                return Found(walk, p.name, ALWAYS, init, trail, f"{p.name} does not hold in the last state")
        return None

    for walk in indices:
        rng = random.Random(f"{seed}:{walk}")
        budgets: dict[str, int | None] = {}
        weights: dict[tuple, int] = {}
        used: dict[str, int] = {}
        init = rng.randrange(len(inits))
        s = inits[init]
        if walk == indices[0]:
            validate_state(s, "initial state")
        trail: tuple = ()
        found = look(s, 0, trail, init, walk)
        depth = 0
        while found is None and depth < max_steps:
            if within is not None and not model_call("within_boundary(state)", within, s):
                break
            acts = model_call("actions(state)", model.actions, s)
            if not acts:
                if check_deadlock and not model_call("is_terminal(state)", model.is_terminal, s):
                    found = Found(walk, DEADLOCK, "deadlock", init, trail,
                                  "no action is enabled in the last state and model.is_terminal() is False")
                break
            if swarm:
                allowed = []
                ws = []
                total_w = 0
                for a in acts:
                    kind = a[0]
                    if kind not in budgets:
                        budgets[kind] = None if model_call("fair(action)", fair, a) else swarm_budget(seed, walk, kind)
                    b = budgets[kind]
                    if b is None or used.get(kind, 0) < b:
                        who = (kind, a[1][0][1]) if a[1] else (kind, None)
                        w = weights.get(who)
                        if w is None:
                            w = weights[who] = swarm_weight(seed, walk, kind) * swarm_weight(seed, walk, repr(who))
                        allowed.append(a)
                        ws.append(w)
                        total_w += w
                if not allowed:
                    break
                x = rng.randrange(total_w)
                for a, w in zip(allowed, ws):
                    x -= w
                    if x < 0:
                        break
            else:
                a = acts[rng.randrange(len(acts))]
            t = model_call(f"next_state(state, {a})", model.next_state, s, a)
            kind = a[0]
            used[kind] = used.get(kind, 0) + 1
            counts[kind] = counts.get(kind, 0) + 1
            trail += (a,)
            depth += 1
            out.steps += 1
            for p in step_checks:
                if not model_call(f"the predicate of step property {p.name!r}", p.predicate, s, a, t):
                    found = Found(walk, p.name, ALWAYS, init, trail, f"{p.name} is broken by the last step, {a}")
                    break
            if found is None:
                found = look(t, depth, trail, init, walk)
            s = t
        out.walks += 1
        if depth > out.deepest:
            out.deepest = depth
        if on_walk is not None:
            on_walk(out)
        if found is not None:
            out.found = found
            return out
        if deadline is not None and time.monotonic() >= deadline:
            return out
    return out


# ----------------------------------------------------------------------- shrinking

def _failure_at(model: Model, prop: Property | None, name: str, init: State, actions: Sequence[Action]) -> int | None:
    """Replay ``actions`` from ``init``; the number of steps after which property
    ``name`` fails first (the path may be cut there), or None if it never fails or
    an action is not enabled where it is taken."""
    s = init
    if prop is not None and not prop.step and not prop.predicate(s):
        return 0
    for i, a in enumerate(actions):
        acts = model.actions(s)
        if not acts:
            break
        if a not in acts:
            return None
        t = model.next_state(s, a)
        if prop is not None:
            if prop.step:
                if not prop.predicate(s, a, t):
                    return i + 1
            elif not prop.predicate(t):
                return i + 1
        s = t
    if name == DEADLOCK and len(actions) and not model.actions(s) and not model.is_terminal(s):
        return len(actions)
    if name == DEADLOCK and not actions and not model.actions(s) and not model.is_terminal(s):
        return 0
    return None


def _bfs_shorter(model: Model, prop: Property | None, name: str, init: State, max_len: int,
                 budget: int) -> list[Action] | None:
    """The shortest path from ``init`` of at most ``max_len`` steps that violates
    ``name``, looking at no more than ``budget`` states; None if none was found."""
    if max_len < 1 or budget < 1:
        return None
    fp = fingerprint_fn(model)
    seen = {fp(init)}
    frontier: list[tuple[State, tuple]] = [(init, ())]
    for _depth in range(max_len):
        nxt = []
        for s, path in frontier:
            acts = model.actions(s)
            for a in acts:
                t = model.next_state(s, a)
                cand = path + (a,)
                if prop is not None and prop.step and not prop.predicate(s, a, t):
                    return list(cand)
                h = fp(t)
                if h in seen:
                    continue
                seen.add(h)
                if prop is not None and not prop.step and not prop.predicate(t):
                    return list(cand)
                if name == DEADLOCK and not model.actions(t) and not model.is_terminal(t):
                    return list(cand)
                if len(seen) >= budget:
                    return None
                nxt.append((t, cand))
        frontier = nxt
    return None


def shrink(model: Model, props: Sequence[Property], name: str, init: State,
           actions: Sequence[Action], search_budget: int = 5000) -> tuple[list[Action], int]:
    """A shorter action sequence from ``init`` that still violates property ``name``
    (or deadlocks, for ``Deadlock``), and the number of replays it took.

    Delta debugging, as the conformance shrinker (checker.conform.shrink) does for
    divergences: drop chunks of steps (halves, quarters ... single steps) while
    what is left is still legal in the model and still violates the property (a
    candidate is cut where it first fails), until no single step can be dropped.
    The result is 1-minimal; then a breadth-first search from ``init`` over at most
    ``search_budget`` states looks for a shorter violation (dropping steps cannot
    turn one route into another; on small models this finds the shortest).
    Deterministic."""
    prop = next((p for p in props if p.name == name), None)
    replays = 0

    def fails(cand: list[Action]) -> list[Action] | None:
        nonlocal replays
        replays += 1
        at = model_call("replaying a shrink candidate", _failure_at, model, prop, name, init, cand)
        return None if at is None else cand[:at]

    cur = fails(list(actions))
    if cur is None:
        raise ModelError(f"the simulated path that violates {name} does not violate it on replay: the model is "
                         f"not deterministic")
    size = max(1, len(cur) // 2)
    while cur and size >= 1:
        changed = False
        i = 0
        while i < len(cur):
            cand = fails(cur[:i] + cur[i + size:])
            if cand is not None:
                cur, changed = cand, True
            else:
                i += size
        if not changed:
            if size == 1:
                break
            size //= 2
        else:
            size = min(size, max(1, len(cur) // 2))
    shorter = model_call("searching for a shorter violation", _bfs_shorter, model, prop, name, init, len(cur) - 1,
                    search_budget)
    if shorter is not None:
        cur = shorter
    return cur, replays


def violation_of(model: Model, props: Sequence[Property], found: Found, *,
                 shrinking: bool = True) -> tuple[Violation, int]:
    """The Violation (a replayed path of Steps) of ``found``, shrunk unless told not."""
    inits = list(model.init_states())
    init = inits[found.init]
    actions = list(found.actions)
    replays = 0
    if shrinking:
        actions, replays = shrink(model, props, found.property, init, actions)
    fp = fingerprint_fn(model)
    path = [Step(None, init, fp(init))]
    s = init
    for a in actions:
        s = model.next_state(s, a)
        path.append(Step(a, s, fp(s)))
    prop = next((p for p in props if p.name == found.property), None)
    message = found.message
    if prop is not None and prop.rationale:
        message = f"{message}: {prop.rationale}"
    return Violation(found.property, found.kind, path, message), replays


# ------------------------------------------------------------------------- local

def check_args(seed: Any, walks: Any, max_steps: Any) -> None:
    for what, v, lo in (("seed", seed, 0), ("walks", walks, 1), ("max_steps", max_steps, 1)):
        if v is None and what == "walks":
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise UsageError(f"{what} must be an integer >= {lo}, not {v!r}")


class Progress:
    """Progress lines: walks, steps, distinct states seen, deepest depth reached."""

    def __init__(self, out: TextIO | None, interval: float = PROGRESS_SECONDS) -> None:
        self.out, self.interval = out, interval
        self.start = self.last = time.monotonic()

    def maybe(self, walks: int, steps: int, distinct: int, deepest: int, force: bool = False) -> None:
        if self.out is None:
            return
        now = time.monotonic()
        if force or now - self.last >= self.interval:
            self.last = now
            el = now - self.start
            self.out.write(f"progress: walks={walks} steps={steps} distinct={distinct} deepest={deepest} "
                           f"walks/s={walks / el if el > 0 else 0:.0f} elapsed={el:.1f}s\n")
            self.out.flush()


def simulate(model: Model, *, properties: Sequence[Property] | None = None, seed: int = 0,
             walks: int | None = DEFAULT_WALKS, max_steps: int = DEFAULT_MAX_STEPS, swarm: bool = True,
             check_deadlock: bool = True, time_limit: float | None = None, shrinking: bool = True,
             progress: TextIO | None = None) -> SimulationResult:
    """Run walks ``0 .. walks-1`` (without end if ``walks`` is None, until
    ``time_limit`` seconds) on this process and stop at the first violation."""
    check_args(seed, walks, max_steps)
    props = list(model.properties() if properties is None else properties)
    validate_properties(props)
    t0 = time.monotonic()
    deadline = None if time_limit is None else t0 + time_limit
    prog = Progress(progress)
    total = Walk(witnesses={p.name: None for p in props if p.kind == SOMETIMES})
    chunk = 64
    start = 0

    def tick(w: Walk) -> None:
        prog.maybe(w.walks, w.steps, len(w.fingerprints), w.deepest)

    while walks is None or start < walks:
        end = start + chunk if walks is None else min(walks, start + chunk)
        run_walks(model, props, seed, range(start, end), max_steps=max_steps, swarm=swarm,
                  check_deadlock=check_deadlock, deadline=deadline, on_walk=tick, into=total)
        start = end
        if total.found is not None or (deadline is not None and time.monotonic() >= deadline):
            break
    return finish(model, props, seed, total, time.monotonic() - t0, shrinking, prog)


def run_visited_search(model: Model, properties: Sequence[Property] | None, seed: int, time_limit: float | None,
                       shrinking: bool, progress: TextIO | None,
                       run: Callable[[list, float | None, Callable[[Walk, int], None]], tuple[Walk, int, bool]]
                       ) -> SimulationResult:
    """The shell that the searches keeping a visited set share (:mod:`checker.stateful`,
    :mod:`checker.randompriority`): the properties validated, the deadline, progress
    by distinct states, and the result finished (:func:`finish`) with ``exhausted``.
    ``run(props, deadline, on_step)`` is the search; it returns ``(total, distinct,
    exhausted)``."""
    props = list(model.properties() if properties is None else properties)
    validate_properties(props)
    t0 = time.monotonic()
    deadline = None if time_limit is None else t0 + time_limit
    prog = Progress(progress)

    def tick(w: Walk, distinct: int) -> None:
        prog.maybe(w.walks, w.steps, distinct, w.deepest)

    total, distinct, exhausted = run(props, deadline, tick)
    r = finish(model, props, seed, total, time.monotonic() - t0, shrinking, prog, distinct=distinct)
    r.exhausted = exhausted
    return r


def finish(model: Model, props: Sequence[Property], seed: int, total: Walk, seconds: float, shrinking: bool,
           prog: Progress | None = None, distinct: int | None = None) -> SimulationResult:
    """The result of the walks in ``total``: the first violation rebuilt and shrunk.
    ``distinct`` replaces the count of ``total.fingerprints`` (a stateful search
    keeps its own visited set)."""
    if distinct is None:
        distinct = len(total.fingerprints)
    if prog is not None:
        prog.maybe(total.walks, total.steps, distinct, total.deepest, force=True)
    violations: list[Violation] = []
    replays = 0
    found_length = None
    if total.found is not None:
        found_length = len(total.found.actions)
        v, replays = violation_of(model, props, total.found, shrinking=shrinking)
        violations.append(v)
    return SimulationResult(VIOLATED if violations else BOUNDED, violations, total.walks, total.steps,
                            distinct, total.deepest, seconds, dict(total.action_counts),
                            dict(total.witnesses), seed, total.found.walk if total.found else None,
                            found_length, replays)
