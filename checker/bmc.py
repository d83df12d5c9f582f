"""Bounded model checking (``kmc bmc``): unroll one step at a time from the initial
states and report the shortest violation, decoded into the explicit model's actions so
that :func:`to_explicit` can replay it there.  See :mod:`checker.symbolic` for the
contract and an example.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import z3

from checker.bfs import replay_path
from checker.errors import ModelError
from checker.model import Action
from checker.solver import FreshSolver
from checker.symmodel import (SymAction, SymbolicModel, TransitionStep, decode, evaluator, select_invariants,
                              state_pred, step_violation)
from checker.symwitness import least_run


# --------------------------------------------------------------------------- bmc

@dataclass
class BmcViolation:
    property: str
    depth: int                       # symbolic steps
    steps: list[SymAction]           # the chosen instances
    actions: list[Action]            # the explicit actions they stand for
    views: list[Mapping[str, Any]]   # the symbolic frames, decoded


@dataclass
class BmcResult:
    violation: BmcViolation | None
    depth: int                       # deepest unrolling checked
    seconds: float
    per_depth: list[tuple[int, float]] = field(default_factory=list)
    unknown: str | None = None


# The bound of the first encoding of a model with ``bounded(steps)``, doubled until
# max_steps: its size grows with the bound in every frame, so a bound of 300 built
# up front spent a minute and 1.4 GB before reaching zombie's violation at depth 4.
FIRST_BOUND = 8


def bmc(model: SymbolicModel, max_steps: int, names: Sequence[str], *, progress: TextIO | None = None,
        timeout: float | None = None, symmetry: bool = True) -> BmcResult:
    """Look for a violation of the invariants ``names`` within ``max_steps`` steps.

    Depth 0 (the initial states) first, then one more step at a time, with one
    incremental solver; at each depth the invariants are tried in the order given,
    so the violation reported is a shortest one; of those, the least run (action
    instances by their index, then their parameters, step by step), so it is the same
    whatever z3 did before in the process and whatever z3 version.  If the
    model declares interchangeable values (optional ``symmetry()``), only runs that
    first use them in increasing order are searched (``symmetry=False``: all runs);
    the shortest violation has the same length either way.

    A model with ``bounded(steps)`` (an encoding exact for runs of at most ``steps``
    steps) is encoded for ``FIRST_BOUND`` steps first, then for twice as many, and so
    on up to ``max_steps``: each new encoding checks only the depths past the last
    one's, so a shallow violation costs what a shallow bound costs, and the depths
    are checked in the same order, with the same least run, as by one encoding.
    """
    start = time.perf_counter()
    result = BmcResult(None, 0, 0.0)
    if not hasattr(model, "bounded"):
        _unroll(model, 0, max_steps, names, progress, timeout, symmetry, result, start)
    else:
        done, bound = -1, min(max_steps, FIRST_BOUND)
        while True:
            if progress is not None and done >= 0:
                print(f"bmc: encoding runs of up to {bound} steps", file=progress, flush=True)
            if _unroll(model.bounded(bound), done + 1, bound, names, progress, timeout, symmetry, result, start):
                break
            if bound >= max_steps:
                break
            done, bound = bound, min(max_steps, 2 * bound)
    result.seconds = time.perf_counter() - start
    return result


def _unroll(model: SymbolicModel, first: int, last: int, names: Sequence[str], progress: TextIO | None,
            timeout: float | None, symmetry: bool, result: BmcResult, start: float) -> bool:
    """Unroll ``model`` to depth ``last`` and check the invariants at depths
    ``first``..``last`` (the ones before are known to hold); True once ``result``
    holds a violation or an unknown answer."""
    invs = select_invariants(model, names)
    acts = list(model.actions())
    every = list(range(len(acts)))
    s = FreshSolver(timeout)
    frames = [model.frame(0)]
    s.add(model.init(frames[0]))
    steps: list[TransitionStep] = []
    orbits = _orbits(model, acts) if symmetry else []
    touched: list[list[z3.BoolRef]] = [[z3.BoolVal(False) for _ in o] for o, _t in orbits]
    for k in range(last + 1):
        t0 = time.perf_counter()
        if k > 0:
            g = model.frame(k)
            step = TransitionStep(model, acts, every, frames[-1], g, k - 1)
            s.add(*step.constraints)
            frames.append(g)
            steps.append(step)
            s.add(*_break_symmetry(orbits, touched, step, k))
        if k < first:
            continue
        bads = []
        for inv in invs:
            if inv.step:
                if k == 0:
                    continue
                bads.append((inv, step_violation(inv, steps[-1])))
            else:
                bads.append((inv, z3.Not(state_pred(inv, frames[-1]))))
        if len(bads) > 1:
            # one query for "any of them" first: a depth without a violation costs one
            s.push()
            s.add(z3.Or([b for _, b in bads]))
            answer = s.check()
            s.pop()
            if answer == z3.unsat:
                bads = []
        for inv, bad in bads:
            s.push()
            s.add(bad)
            answer = s.check()
            if answer == z3.sat:
                m = least_run(s, steps)
                ev = evaluator(m)
                chosen_idx = [m.eval(st.sel, model_completion=True).as_long() for st in steps]
                chosen = [acts[i] for i in chosen_idx]
                explicit: list[Action] = []
                for st, i in zip(steps, chosen_idx):
                    explicit.extend(decode(acts[i], ev, st.f, st.params_of(i)))
                views = [model.describe(ev, fr) for fr in frames]
                s.pop()
                result.violation = BmcViolation(inv.name, k, chosen, explicit, views)
                result.depth = k
                result.per_depth.append((k, time.perf_counter() - t0))
                if progress is not None:
                    print(f"bmc: depth {k}: {inv.name} violated ({time.perf_counter() - t0:.2f} s)",
                          file=progress, flush=True)
                return True
            s.pop()
            if answer == z3.unknown:
                result.unknown = f"depth {k}, {inv.name}: {s.reason_unknown()}"
                return True
        dt = time.perf_counter() - t0
        result.depth = k
        result.per_depth.append((k, dt))
        if progress is not None:
            print(f"bmc: depth {k}: no violation ({dt:.2f} s, {time.perf_counter() - start:.1f} s in all)",
                  file=progress, flush=True)
    return False


def _orbits(model: SymbolicModel, acts: Sequence[SymAction]) -> list[tuple[list, list[list[int]]]]:
    """The model's interchangeable values (``symmetry()``: ``[(arg names, values)]``),
    each with, per value, the action instances that name it in one of those args."""
    out = []
    for names, values in getattr(model, "symmetry", list)():
        values = list(values)
        if len(values) < 2:
            continue
        uses = [[i for i, a in enumerate(acts) if any(k in names and v == x for k, v in a.args)] for x in values]
        out.append((values, uses))
    return out


def _break_symmetry(orbits, touched, step: TransitionStep, k: int) -> list[z3.BoolRef]:
    """Symmetry breaking by order of first use.  Values of an orbit are interchangeable
    (a permutation of them maps every run to a run of the same length that breaks the
    same invariants), so it is enough to search runs that first touch them in
    increasing order: after every step, a value may have been named by a chosen action
    only if every smaller value of its orbit has.  A value never named keeps its
    initial local state, which is the same for every value of the orbit."""
    out = []
    for n, (values, uses) in enumerate(orbits):
        now = []
        for j, _x in enumerate(values):
            t = z3.Bool(f"touched[{n}][{j}]@{k}")
            out.append(t == z3.Or(touched[n][j], *[step.sel == i for i in uses[j]]))
            now.append(t)
        out += [z3.Implies(now[j + 1], now[j]) for j in range(len(values) - 1)]
        touched[n] = now
    return out


# ---------------------------------------------------------- explicit agreement

def to_explicit(explicit_model: Any, actions: Sequence[Action], prop: Any) -> tuple[list, str | None]:
    """Replay ``actions`` on the explicit model and re-check ``prop`` (a
    :class:`checker.model.Property`) on the last state or transition.

    Returns ``(path, None)`` when the path replays and violates ``prop`` (the two
    encodings agree), else ``(path so far, reason)``.
    """
    try:
        path = replay_path(explicit_model, actions)
    except ModelError as e:
        return [], str(e)
    if prop.step:
        holds = bool(prop.predicate(path[-2].state, path[-1].action, path[-1].state)) if len(path) > 1 else True
    else:
        holds = bool(prop.predicate(path[-1].state))
    if holds:
        where = "transition" if prop.step else "state"
        return path, f"the explicit model replays every step but {prop.name} holds on its last {where}"
    return path, None
