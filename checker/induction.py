"""Inductive proofs (``kmc prove``): ``J ∧ T_a ⇒ J'`` for every action ``a``, one z3
query per action name, and a counterexample to induction (CTI) when one fails, which
:func:`confirm_cti` then looks for among the explicit model's reachable states.
See :mod:`checker.symbolic` for the contract and an example.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import z3

from checker.errors import ModelError
from checker.graph import explore
from checker.model import Action
from checker.solver import FreshSolver
from checker.symmodel import (SymAction, SymbolicModel, SymInvariant, TYPE_OK, TransitionStep, by_name, decode,
                              evaluator, select_invariants, state_pred, step_violation)
from checker.symwitness import first_breakable, small_model


# ------------------------------------------------------------------------- prove

@dataclass
class Cti:
    """A counterexample to induction: ``before`` satisfies every conjunct, ``action``
    leads to ``after``, which breaks ``broken`` (a state conjunct, or a step invariant
    on this transition)."""

    broken: str
    action: SymAction
    explicit: list[Action]
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    initial: bool = False        # the initial states break it (no action)


@dataclass
class ProofResult:
    proved: bool
    invariants: list[str]
    conjuncts: list[str]          # everything assumed and proved together (TypeOK, lemmas...)
    cti: Cti | None = None
    unknown: str | None = None    # z3 gave up on an action: why
    seconds: float = 0.0
    queries: list[tuple[str, str, float]] = field(default_factory=list)  # (action name, answer, seconds)


def prove(model: SymbolicModel, names: Sequence[str], *, lemmas: Sequence[SymInvariant] = (),
          progress: TextIO | None = None, timeout: float | None = None) -> ProofResult:
    """Prove the invariants ``names`` inductive, together with ``TypeOK`` and ``lemmas``.

    Every state conjunct is assumed before the step and checked after it; every step
    invariant named is checked on the step.  One z3 query per action name (its
    instances are chosen by a selector), in the model's action order, so the first
    CTI found is the same on every run.
    """
    start = time.perf_counter()
    targets = select_invariants(model, names)
    type_ok = SymInvariant(TYPE_OK, model.wellformed, "the ranges of every state variable")
    conj = [type_ok, *[t for t in targets if not t.step], *lemmas]
    steps = [t for t in targets if t.step]
    result = ProofResult(False, [t.name for t in targets], [c.name for c in conj])
    f, g = model.frame(0), model.frame(1)

    # base case: the initial states satisfy every state conjunct
    s = FreshSolver(timeout)
    s.add(model.init(f))
    bad = [(c, z3.Not(state_pred(c, f))) for c in conj]
    s.add(z3.Or([b for _, b in bad]))
    answer = s.check()
    if answer == z3.sat:
        broken = first_breakable(s, s.model(), [(c.name, b) for c, b in bad])
        s.add(dict((c.name, b) for c, b in bad)[broken])
        s.check()
        ev = evaluator(s.model())
        view = model.describe(ev, f)
        result.cti = Cti(broken, SymAction("init", (), lambda f, p: z3.BoolVal(True), lambda f, p: {},
                                           lambda ev, f, p: []), [], view, view, initial=True)
        result.seconds = time.perf_counter() - start
        return result
    if answer == z3.unknown:
        result.unknown = f"initial states: {s.reason_unknown()}"
        result.seconds = time.perf_counter() - start
        return result

    acts = list(model.actions())
    pre = [state_pred(c, f) for c in conj]
    post = [(c.name, state_pred(c, g)) for c in conj]
    for aname, idx in by_name(acts).items():
        t0 = time.perf_counter()
        step = TransitionStep(model, acts, idx, f, g, 0)
        s = FreshSolver(timeout)
        s.add(*pre)
        s.add(*step.constraints)
        checks = [(n, z3.Not(p)) for n, p in post] + [(inv.name, step_violation(inv, step)) for inv in steps]
        s.push()
        s.add(z3.Or([b for _, b in checks]))
        answer = s.check()
        if answer == z3.unknown and len(checks) > 1:
            # quantified lemmas: z3 may settle each conjunct where it gave up on all of them
            s.pop()
            answers = []
            for _name, b in checks:
                s.push()
                s.add(b)
                answers.append(s.check())
                if answers[-1] == z3.sat:
                    break
                s.pop()
            answer = (z3.sat if answers[-1] == z3.sat else
                      z3.unknown if z3.unknown in answers else z3.unsat)
            if answer == z3.unknown:
                s.push()    # reason_unknown below reads the last query
        dt = time.perf_counter() - t0
        result.queries.append((aname, str(answer), dt))
        if progress is not None:
            verdict = {"unsat": "preserved", "sat": "NOT preserved", "unknown": "unknown"}[str(answer)]
            print(f"prove: {aname} ({len(idx)} instance{'s' if len(idx) != 1 else ''}): {verdict} "
                  f"({dt:.2f} s)", file=progress, flush=True)
        if answer == z3.unsat:
            continue
        if answer == z3.unknown:
            result.unknown = f"{aname}: {s.reason_unknown()}"
            break
        broken = first_breakable(s, s.model(), checks)
        s.add(dict(checks)[broken])         # the CTI shown breaks the conjunct it names
        s.check()
        m = small_model(s, [f, *step.params.values()], timeout)
        ev = evaluator(m)
        i = m.eval(step.sel, model_completion=True).as_long()
        act = acts[i]
        result.cti = Cti(broken, act, decode(act, ev, f, step.params_of(i)), model.describe(ev, f),
                         model.describe(ev, g))
        break
    result.proved = result.cti is None and result.unknown is None
    result.seconds = time.perf_counter() - start
    return result


def confirm_cti(model: SymbolicModel, explicit_model: Any, cti: Cti, names: Sequence[str],
                lemmas: Sequence[SymInvariant] = (), max_states: int = 200_000) -> tuple[list, Action] | None:
    """Look among the explicit model's reachable states for a CTI of the same kind:
    a reachable state ``s`` and an enabled explicit action named like the CTI's, that
    break ``cti.broken`` explicitly, and on which the symbolic encoding agrees (z3
    finds the abstraction of ``s`` satisfies every conjunct and its symbolic step
    breaks the same invariant).  Returns ``(path to s, action)`` or None.

    States are visited in breadth-first order, so the path is a shortest one.  Raises
    ModelError when the explicit model breaks the invariant that way but z3 does not
    agree on any such state (a disagreement between the encodings).
    """
    props = {p.name: p for p in explicit_model.properties()}
    prop = props.get(cti.broken)
    if prop is None or cti.initial:
        return None
    graph = explore(explicit_model, max_states=max_states)
    acts = [a for a in model.actions() if a.name == cti.action.name]
    type_ok = SymInvariant(TYPE_OK, model.wellformed)
    targets = select_invariants(model, names)
    conj = [type_ok, *[t for t in targets if not t.step], *lemmas]
    f, g = model.frame("r0"), model.frame("r1")
    step = TransitionStep(model, acts, range(len(acts)), f, g, "r")
    inv = next((t for t in targets if t.name == cti.broken), None)
    disagreement = None
    for n, s in enumerate(graph.states):
        for a in explicit_model.actions(s):
            if a.name != cti.action.name:
                continue
            t = explicit_model.next_state(s, a)
            broken = not (prop.predicate(s, a, t) if prop.step else prop.predicate(t))
            if not broken:
                continue
            solver = FreshSolver()
            solver.add(model.abstract(s, f), model.abstract(t, g))
            solver.add(*[state_pred(c, f) for c in conj])
            solver.add(*step.constraints)
            if inv is not None and inv.step:
                solver.add(step_violation(inv, step))
            else:
                c = next(c for c in conj if c.name == cti.broken)
                solver.add(z3.Not(state_pred(c, g)))
            if solver.check() == z3.sat:
                return graph.path_to(n), a
            disagreement = disagreement or (n, a)
    if disagreement is not None:
        n, a = disagreement
        path = " -> ".join(str(x) for _s, x, _d in graph.path_to(n))
        raise ModelError(f"the symbolic and explicit encodings disagree: explicitly, {a} breaks {cti.broken} from "
                         f"the state reached by [{path}], but z3 finds no such step from that state's abstraction")
    return None
