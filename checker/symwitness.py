"""Which z3 model to show: a CTI or a bounded counterexample is read by people and must
be the same on every run, but z3's first model depends on what z3 did before (its term
numbers, the order of its hash tables, its version).  These helpers ask further queries
until the answer no longer depends on that: small values, the least run, and the first
conjunct that can break.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import z3

from checker.errors import ModelError
from checker.solver import FreshSolver
from checker.symmodel import Frame, TransitionStep


SMALL = (9, 99)


def small_model(s: FreshSolver, frames: Sequence[Any], timeout: float | None) -> z3.ModelRef:
    """A model of ``s`` whose integer variables (in ``frames``: Frames or parameter dicts)
    lie in -SMALL..SMALL, and whose sets (arrays to Bool) are empty, if there is one: a
    CTI is read by people, and z3's first model may hold versions like 28881 and sets
    of arbitrary garbage.  Falls back to the model ``s`` already has."""
    m = s.model()
    ints, sets = [], []
    for fr in frames:
        values = fr.vars.values() if isinstance(fr, Frame) else fr.values()
        ints += [v for v in values if v.sort() == z3.IntSort()]
        sets += [v for v in values if z3.is_array(v) and v.sort().range() == z3.BoolSort()]
    if not ints and not sets:
        return m
    empty = [v == z3.K(v.sort().domain(), False) for v in sets]
    tries = [(SMALL[0], empty)] if empty else []
    tries += [(bound, []) for bound in SMALL]
    for bound, extra in tries:
        s.push()
        s.add(*[z3.And(v >= -bound, v <= bound) for v in ints], *extra)
        if timeout:
            s.set("timeout", int(timeout * 1000))
        answer = s.check()
        if answer == z3.sat:
            small = s.model()
            s.pop()
            return small
        s.pop()
    s.check()
    return s.model()


def _least(s: FreshSolver, terms: Sequence[z3.ExprRef]) -> z3.ModelRef:
    """A model of ``s`` (which is sat) whose ``terms`` are lexicographically least, in
    the order given: each is fixed, in the solver's current scope, to the least value
    it can take once the ones before it are fixed.  Which of several models z3 returns
    depends on what z3 did before (the order of its hash tables, the queries earlier in
    the process, its version), so a counterexample read off z3's first model would
    change with them; the least one does not.  Bit-vectors count unsigned, Booleans
    prefer False, integers descend from z3's value; a query z3 cannot answer stops the
    descent of that term (its value is then z3's)."""
    m = s.model()
    for t in terms:
        value = m.eval(t, model_completion=True)
        if z3.is_bv(t):
            lo, hi = 0, value.as_long()
            while lo < hi:
                mid = (lo + hi) // 2
                if _sat_with(s, z3.ULE(t, mid)):
                    hi = mid
                else:
                    lo = mid + 1
            s.add(t == hi)
        elif z3.is_bool(t):
            s.add(t == z3.BoolVal(not _sat_with(s, z3.Not(t))))
        elif z3.is_int(t):
            v = value.as_long()
            for _ in range(64):
                if not _sat_with(s, t < v):
                    break
                v = s.model().eval(t, model_completion=True).as_long()
            s.add(t == v)
        else:
            continue
        if s.check() != z3.sat:      # cannot happen: the value fixed was just found sat
            raise ModelError(f"z3 lost the model while fixing {t}; run again with --timeout raised")
        m = s.model()
    return m


def least_run(s: FreshSolver, steps: Sequence[TransitionStep]) -> z3.ModelRef:
    """The least run of ``s``: the first step's action instance, then its parameters,
    then the next step's; so a counterexample is the same whatever z3 did before."""
    m = s.model()
    for st in steps:
        m = _least(s, [st.sel])
        i = m.eval(st.sel, model_completion=True).as_long()
        m = _least(s, list(st.params_of(i).values()))
    return m


def _sat_with(s: FreshSolver, extra: z3.BoolRef) -> bool:
    s.push()
    s.add(extra)
    answer = s.check()
    s.pop()
    return answer == z3.sat


def first_breakable(s: FreshSolver, m: z3.ModelRef, checks: Sequence[tuple[str, z3.BoolRef]]) -> str:
    """The first of ``checks`` (name, violation), in order, that can hold: the conjunct
    a CTI names.  Not simply the first that holds in ``m``: which of several models z3
    returns depends on what z3 did earlier in the process (term ids, the order of its
    hash tables), so a name read off the model would change with the tests run before,
    and with the garbage collector's timing, hence with load.  The model only narrows
    the search: a check after the first that holds in ``m`` cannot come first; each
    earlier one is asked of the solver."""
    limit = len(checks) - 1
    for i, (_name, b) in enumerate(checks):
        try:
            if z3.is_true(m.eval(b, model_completion=True)):
                limit = i
                break
        except z3.Z3Exception:
            continue
    for name, b in checks[:limit]:
        s.push()
        s.add(b)
        answer = s.check()
        s.pop()
        if answer == z3.sat:
            return name
    return checks[limit][0]
