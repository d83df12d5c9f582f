"""Symbolic models for z3: inductive proofs (``prove``) and bounded model checking (``bmc``).

The explicit engines enumerate states, so they stop at a few brokers.  A *symbolic*
model describes the same system with z3 terms instead: a frame of state variables, an
initial predicate, actions as guarded updates, and invariants as z3 predicates.  Two
engines work on it:

- :func:`prove` asks, for every action ``a``, whether ``J ∧ T_a ⇒ J'`` is valid, where
  ``J`` is the conjunction of the invariants to prove, the model's well-formedness
  predicate (``TypeOK``) and any user lemmas.  If every action preserves ``J`` and the
  initial states satisfy it, ``J`` holds in every reachable state, for any number of
  steps.  Otherwise z3's model is a *counterexample to induction* (CTI): a state that
  satisfies ``J``, an action, and a successor that does not.  A CTI need not be
  reachable: it may only say that ``J`` is too weak (strengthen it with a lemma).
- :func:`bmc` unrolls ``K`` steps from the initial states and looks for a violation,
  shortest first.  A violation is decoded into the *explicit* model's actions and
  replayed there (the caller does that with :func:`to_explicit`), so a counterexample
  is only reported once both encodings agree on it.

The contract is small and knows nothing of any particular system:

- ``frame(tag)`` returns a :class:`Frame`: named z3 constants for one state;
- ``init(f)``, ``wellformed(f)`` are z3 predicates over a frame;
- ``actions()`` lists :class:`SymAction` instances: concrete parameters (a broker
  number...) plus optional symbolic parameters (a request's fields), a guard, and an
  update (the variables it changes, as z3 terms over the frame and parameters), and a
  decoder to explicit :class:`checker.model.Action` values;
- ``invariants()`` lists :class:`SymInvariant` s, state or step predicates;
- ``describe(ev, f)`` is a readable view of a frame under a z3 model, keyed like the
  explicit model's ``describe`` so that :mod:`checker.trace` can render and diff it;
- ``abstract(state, f)`` (optional) relates an explicit state to a frame, used to
  confirm a CTI on a reachable explicit state;
- ``bounded(steps)`` (optional) an equivalent model for runs of at most that many
  steps in a cheaper finite form, and ``symmetry()`` (optional) the interchangeable
  values of some action arguments, ``[(arg names, values)]``: both speed up bmc.

A two-bit counter that must stay below 3, proved for every reachable state::

    >>> import z3
    >>> from checker.model import action
    >>> class Counter(SymbolicModel):
    ...     def frame(self, tag):
    ...         return Frame(tag, [("x", z3.IntSort())])
    ...     def init(self, f):
    ...         return f["x"] == 0
    ...     def actions(self):
    ...         return [SymAction("Inc", (), guard=lambda f, p: f["x"] < 2,
    ...                           update=lambda f, p: {"x": f["x"] + 1},
    ...                           explicit=lambda ev, f, p: [action("Inc")])]
    ...     def invariants(self):
    ...         return [SymInvariant("Small", lambda f: And(f["x"] >= 0, f["x"] <= 2))]
    ...     def describe(self, ev, f):
    ...         return {"x": ev(f["x"])}
    >>> And = z3.And
    >>> prove(Counter(), ["Small"]).proved
    True
    >>> bmc(Counter(), 5, ["Small"]).violation is None
    True
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import z3

from checker.errors import ModelError, UsageError
from checker.errors import describe_exception as _exc
from checker.bfs import replay_path
from checker.config import suggest
from checker.graph import explore
from checker.invariants import run_user_file
from checker.model import Action
from checker.solver import FreshSolver

__all__ = [
    "TYPE_OK",
    "BmcResult",
    "Cti",
    "Frame",
    "ProofResult",
    "SymAction",
    "SymInvariant",
    "SymbolicModel",
    "bmc",
    "confirm_cti",
    "lemma",
    "load_lemmas",
    "prove",
    "to_explicit",
]

TYPE_OK = "TypeOK"


class Frame:
    """The state variables of one frame: z3 constants named ``<var>@<tag>``, in a
    fixed order.  ``f[name]`` is the constant; models usually subclass it to add
    accessors (``f.zk[p].leader``...)."""

    def __init__(self, tag: Any, variables: Sequence[tuple[str, z3.SortRef]]) -> None:
        self.tag = tag
        self.vars: dict[str, z3.ExprRef] = {}
        self._names: dict[int, str] = {}
        for name, sort in variables:
            self.var(name, sort)

    def var(self, name: str, sort: z3.SortRef) -> z3.ExprRef:
        """Declare one more variable (in declaration order) and return its constant."""
        if name in self.vars:
            raise ModelError(f"symbolic frame: variable {name!r} declared twice")
        c = z3.Const(f"{name}@{self.tag}", sort)
        self.vars[name] = c
        self._names[c.get_id()] = name
        return c

    def __getitem__(self, name: str) -> z3.ExprRef:
        return self.vars[name]

    def name_of(self, const: z3.ExprRef) -> str:
        """The variable name of one of this frame's constants (for updates)."""
        try:
            return self._names[const.get_id()]
        except KeyError:
            raise ModelError(f"symbolic frame: {const} is not a variable of frame {self.tag!r}") from None


@dataclass(frozen=True)
class SymAction:
    """One action instance: the explicit action ``name`` with concrete ``args``.

    ``params`` are symbolic parameters ``(name, sort)`` chosen by the solver (e.g. the
    fields of the request delivered).  ``guard(f, p)`` and ``update(f, p)`` take the
    frame and a dict of parameter constants; ``update`` returns ``{variable name:
    new value}`` for the variables the action may change (the others keep their
    value).  ``explicit(ev, f, p)`` returns the explicit actions this step stands for,
    where ``f`` and ``p`` are the pre-frame and the parameter constants of the step and
    ``ev(term)`` evaluates a term to a Python value; usually one action, or a short
    fixed sequence.
    """

    name: str
    args: tuple
    guard: Callable[[Any, Mapping[str, z3.ExprRef]], z3.BoolRef]
    update: Callable[[Any, Mapping[str, z3.ExprRef]], Mapping[str, z3.ExprRef]]
    explicit: Callable[..., list[Action]]
    params: tuple = ()

    @property
    def label(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.args)
        return f"{self.name}({inner})"

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.args:
            if k == key:
                return v
        return default


@dataclass(frozen=True)
class SymInvariant:
    """A named z3 predicate: ``predicate(f)`` for a state invariant, or
    ``predicate(f, act, params, g)`` for a step invariant over the transition from
    ``f`` to ``g`` by ``act`` (a :class:`SymAction`) with parameter constants ``params``."""

    name: str
    predicate: Callable[..., z3.BoolRef]
    rationale: str = ""
    step: bool = False
    per_action: bool = True    # a step predicate that ignores act and params: False (built once per step)


def lemma(name: str, predicate: Callable[[Any], z3.BoolRef], rationale: str = "") -> SymInvariant:
    """A strengthening lemma for ``kmc prove --lemmas FILE``: a state predicate over
    the model's frame, proved together with the invariants."""
    return SymInvariant(name, predicate, rationale, step=False)


class SymbolicModel:
    """Base class of a symbolic model; see the module docstring for the contract."""

    name: str = "symbolic"

    def frame(self, tag: Any) -> Frame:
        raise NotImplementedError

    def init(self, f: Frame) -> z3.BoolRef:
        raise NotImplementedError

    def wellformed(self, f: Frame) -> z3.BoolRef:
        """TypeOK: the ranges every reachable state keeps (proved like any invariant)."""
        return z3.BoolVal(True)

    def actions(self) -> Sequence[SymAction]:
        raise NotImplementedError

    def invariants(self) -> Sequence[SymInvariant]:
        return ()

    def describe(self, ev: Callable[[z3.ExprRef], Any], f: Frame) -> Mapping[str, Any]:
        return {name: ev(c) for name, c in f.vars.items()}

    def abstract(self, state: Any, f: Frame) -> z3.BoolRef:
        """The explicit ``state`` as a constraint on frame ``f`` (optional)."""
        raise NotImplementedError

    def coverage(self) -> str:
        """One line: what part of the explicit model the encoding covers."""
        return ""

    # Optional: ``bounded(steps)`` returns an equivalent model for runs of at most
    # ``steps`` steps that may use a cheaper, finite representation; bmc uses it.


# ----------------------------------------------------------------------- helpers

def py(v: z3.ExprRef) -> Any:
    """A z3 value (from ``model.eval``) as a Python int / bool (a bit-vector as a
    signed integer); other terms as text."""
    if z3.is_true(v):
        return True
    if z3.is_false(v):
        return False
    if z3.is_int_value(v):
        return v.as_long()
    if z3.is_bv_value(v):
        return v.as_signed_long()   # two's complement; a set of bits reads the same with members()
    return str(v)


class Evaluator:
    """``ev(term)``: a term's value under a z3 model, as a Python value; ``ev.model``
    is the model itself (for arrays and other values that need walking)."""

    def __init__(self, m: z3.ModelRef) -> None:
        self.model = m

    def __call__(self, t: z3.ExprRef) -> Any:
        return py(self.model.eval(t, model_completion=True))


def evaluator(m: z3.ModelRef) -> Evaluator:
    return Evaluator(m)


def _params(act: SymAction, tag: Any) -> dict[str, z3.ExprRef]:
    return {n: z3.Const(f"{act.name}.{n}@{tag}", s) for n, s in act.params}


def _by_name(acts: Sequence[SymAction]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, a in enumerate(acts):
        out.setdefault(a.name, []).append(i)
    return out


class TransitionStep:
    """The transition from frame f to frame g over a set of action instances, chosen by
    a selector constant: each variable of g is an if-then-else over the instances that
    change it.  Parameters are shared by the instances of one action name (only one
    instance is chosen)."""

    def __init__(self, model: SymbolicModel, acts: Sequence[SymAction], idx: Sequence[int], f: Frame, g: Frame,
                 tag: Any) -> None:
        self.acts, self.idx, self.f, self.g = acts, list(idx), f, g
        # a bit-vector selector keeps an all-bit-vector encoding free of integer atoms
        self.sel = z3.BitVec(f"action@{tag}", max(1, len(acts)).bit_length() + 1)
        self.params: dict[str, dict[str, z3.ExprRef]] = {}
        for i in self.idx:
            a = acts[i]
            if a.name not in self.params:
                self.params[a.name] = _params(a, tag)
        constraints = [z3.Or([self.sel == i for i in self.idx])]
        changes: dict[str, list[tuple[int, z3.ExprRef]]] = {}
        for i in self.idx:
            a = acts[i]
            p = self.params[a.name]
            try:
                constraints.append(z3.Implies(self.sel == i, a.guard(f, p)))
                upd = a.update(f, p)
            except (UsageError, ModelError):
                raise
            except Exception as e:
                raise ModelError(f"symbolic action {a.label}: building its guard/update raised {_exc(e)}") from e
            for name, value in upd.items():
                if name not in f.vars:
                    raise ModelError(f"symbolic action {a.label} updates unknown variable {name!r}")
                if z3.eq(value, f.vars[name]):
                    continue
                changes.setdefault(name, []).append((i, value))
        for name, old in f.vars.items():
            value = old
            for i, new in reversed(changes.get(name, [])):
                value = z3.If(self.sel == i, new, value)
            constraints.append(g.vars[name] == value)
        self.constraints = constraints

    def params_of(self, i: int) -> dict[str, z3.ExprRef]:
        return self.params[self.acts[i].name]


def _state_pred(inv: SymInvariant, f: Frame) -> z3.BoolRef:
    try:
        return inv.predicate(f)
    except (UsageError, ModelError):
        raise
    except Exception as e:
        raise ModelError(f"invariant {inv.name!r}: building its z3 predicate raised {_exc(e)}") from e


def _step_violation(inv: SymInvariant, step: TransitionStep) -> z3.BoolRef:
    """Some chosen instance breaks step invariant ``inv`` (instances where it holds
    trivially are left out)."""
    if not inv.per_action:
        try:
            return z3.Not(inv.predicate(step.f, None, None, step.g))
        except (UsageError, ModelError):
            raise
        except Exception as e:
            raise ModelError(f"step invariant {inv.name!r}: building its predicate raised {_exc(e)}") from e
    parts = []
    for i in step.idx:
        a = step.acts[i]
        try:
            holds = z3.simplify(inv.predicate(step.f, a, step.params_of(i), step.g))
        except (UsageError, ModelError):
            raise
        except Exception as e:
            raise ModelError(f"step invariant {inv.name!r} on {a.label}: building its predicate raised {_exc(e)}") from e
        if z3.is_true(holds):
            continue
        parts.append(z3.And(step.sel == i, z3.Not(holds)))
    return z3.Or(parts) if parts else z3.BoolVal(False)


def _solver(timeout_s: float | None) -> FreshSolver:
    return FreshSolver(timeout_s)


def select_invariants(model: SymbolicModel, names: Sequence[str]) -> list[SymInvariant]:
    """The model's invariants named in ``names`` (UsageError for an unknown one)."""
    known = {inv.name: inv for inv in model.invariants()}
    out = []
    for n in names:
        if n not in known:
            raise UsageError(f"invariant {n!r} has no symbolic encoding{suggest(n, list(known))} "
                             f"(encoded: {', '.join(known) or 'none'})")
        if known[n] not in out:
            out.append(known[n])
    return out


# ------------------------------------------------------------------------ lemmas


def load_lemmas(path: str | os.PathLike, *, existing: Iterable[str] = ()) -> list[SymInvariant]:
    """Run the Python file at ``path`` and return the lemmas it binds at module level
    (``Name = lemma("Name", lambda f: ..., "why")``), in definition order.  Any problem
    is a one-line ``UsageError`` naming the file."""

    name = str(path)
    module = run_user_file(path, kind="lemmas", flag="--lemmas")
    found = [v for v in module.__dict__.values() if isinstance(v, SymInvariant)]
    if not found:
        raise UsageError(f"lemmas file '{name}' defines no lemma; write e.g. "
                         f"`Name = lemma(\"Name\", lambda f: ..., \"why\")` (from checker.symbolic import lemma)")
    taken = set(existing)
    for lem in found:
        if lem.step:
            raise UsageError(f"lemmas file '{name}': {lem.name!r} is a step predicate; lemmas are state predicates")
        if lem.name in taken:
            raise UsageError(f"lemmas file '{name}': lemma {lem.name!r} clashes with an invariant or another "
                             f"lemma of that name; rename it")
        taken.add(lem.name)
    return found


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
    s = _solver(timeout)
    s.add(model.init(f))
    bad = [(c, z3.Not(_state_pred(c, f))) for c in conj]
    s.add(z3.Or([b for _, b in bad]))
    answer = s.check()
    if answer == z3.sat:
        broken = _which(s, s.model(), [(c.name, b) for c, b in bad])
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
    pre = [_state_pred(c, f) for c in conj]
    post = [(c.name, _state_pred(c, g)) for c in conj]
    for aname, idx in _by_name(acts).items():
        t0 = time.perf_counter()
        step = TransitionStep(model, acts, idx, f, g, 0)
        s = _solver(timeout)
        s.add(*pre)
        s.add(*step.constraints)
        checks = [(n, z3.Not(p)) for n, p in post] + [(inv.name, _step_violation(inv, step)) for inv in steps]
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
        broken = _which(s, s.model(), checks)
        s.add(dict(checks)[broken])         # the CTI shown breaks the conjunct it names
        s.check()
        m = _small_model(s, [f, *step.params.values()], timeout)
        ev = evaluator(m)
        i = m.eval(step.sel, model_completion=True).as_long()
        act = acts[i]
        result.cti = Cti(broken, act, _decode(act, ev, f, step.params_of(i)), model.describe(ev, f),
                         model.describe(ev, g))
        break
    result.proved = result.cti is None and result.unknown is None
    result.seconds = time.perf_counter() - start
    return result


SMALL = (9, 99)


def _small_model(s: z3.Solver, frames: Sequence[Any], timeout: float | None) -> z3.ModelRef:
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


def _least(s: z3.Solver, terms: Sequence[z3.ExprRef]) -> z3.ModelRef:
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


def _least_run(s: z3.Solver, steps: Sequence[TransitionStep]) -> z3.ModelRef:
    """The least run of ``s``: the first step's action instance, then its parameters,
    then the next step's; so a counterexample is the same whatever z3 did before."""
    m = s.model()
    for st in steps:
        m = _least(s, [st.sel])
        i = m.eval(st.sel, model_completion=True).as_long()
        m = _least(s, list(st.params_of(i).values()))
    return m


def _sat_with(s: z3.Solver, extra: z3.BoolRef) -> bool:
    s.push()
    s.add(extra)
    answer = s.check()
    s.pop()
    return answer == z3.sat


def _which(s: z3.Solver, m: z3.ModelRef, checks: Sequence[tuple[str, z3.BoolRef]]) -> str:
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


def _decode(act: SymAction, ev: Callable[[z3.ExprRef], Any], f: Frame, params: Mapping) -> list[Action]:
    try:
        return list(act.explicit(ev, f, params))
    except (UsageError, ModelError):
        raise
    except Exception as e:
        raise ModelError(f"symbolic action {act.label}: decoding it to explicit actions raised {_exc(e)}") from e


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
    """
    start = time.perf_counter()
    if hasattr(model, "bounded"):
        model = model.bounded(max_steps)
    invs = select_invariants(model, names)
    acts = list(model.actions())
    every = list(range(len(acts)))
    s = _solver(timeout)
    frames = [model.frame(0)]
    s.add(model.init(frames[0]))
    steps: list[TransitionStep] = []
    result = BmcResult(None, 0, 0.0)
    orbits = _orbits(model, acts) if symmetry else []
    touched: list[list[z3.BoolRef]] = [[z3.BoolVal(False) for _ in o] for o, _t in orbits]
    for k in range(max_steps + 1):
        t0 = time.perf_counter()
        if k > 0:
            g = model.frame(k)
            step = TransitionStep(model, acts, every, frames[-1], g, k - 1)
            s.add(*step.constraints)
            frames.append(g)
            steps.append(step)
            s.add(*_break_symmetry(orbits, touched, step, k))
        bads = []
        for inv in invs:
            if inv.step:
                if k == 0:
                    continue
                bads.append((inv, _step_violation(inv, steps[-1])))
            else:
                bads.append((inv, z3.Not(_state_pred(inv, frames[-1]))))
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
                m = _least_run(s, steps)
                ev = evaluator(m)
                chosen_idx = [m.eval(st.sel, model_completion=True).as_long() for st in steps]
                chosen = [acts[i] for i in chosen_idx]
                explicit: list[Action] = []
                for st, i in zip(steps, chosen_idx):
                    explicit.extend(_decode(acts[i], ev, st.f, st.params_of(i)))
                views = [model.describe(ev, fr) for fr in frames]
                s.pop()
                result.violation = BmcViolation(inv.name, k, chosen, explicit, views)
                result.depth = k
                result.per_depth.append((k, time.perf_counter() - t0))
                result.seconds = time.perf_counter() - start
                if progress is not None:
                    print(f"bmc: depth {k}: {inv.name} violated ({time.perf_counter() - t0:.2f} s)",
                          file=progress, flush=True)
                return result
            s.pop()
            if answer == z3.unknown:
                result.unknown = f"depth {k}, {inv.name}: {s.reason_unknown()}"
                result.seconds = time.perf_counter() - start
                return result
        dt = time.perf_counter() - t0
        result.depth = k
        result.per_depth.append((k, dt))
        if progress is not None:
            print(f"bmc: depth {k}: no violation ({dt:.2f} s, {time.perf_counter() - start:.1f} s in all)",
                  file=progress, flush=True)
    result.seconds = time.perf_counter() - start
    return result


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
            solver.add(*[_state_pred(c, f) for c in conj])
            solver.add(*step.constraints)
            if inv is not None and inv.step:
                solver.add(_step_violation(inv, step))
            else:
                c = next(c for c in conj if c.name == cti.broken)
                solver.add(z3.Not(_state_pred(c, g)))
            if solver.check() == z3.sat:
                return graph.path_to(n), a
            disagreement = disagreement or (n, a)
    if disagreement is not None:
        n, a = disagreement
        path = " -> ".join(str(x) for _s, x, _d in graph.path_to(n))
        raise ModelError(f"the symbolic and explicit encodings disagree: explicitly, {a} breaks {cti.broken} from "
                         f"the state reached by [{path}], but z3 finds no such step from that state's abstraction")
    return None
