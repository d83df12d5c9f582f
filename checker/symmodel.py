"""The symbolic model contract: frames, action instances, invariants and one transition
step, the vocabulary that :mod:`checker.induction` and :mod:`checker.bmc` share.

A model describes its system with z3 terms: a :class:`Frame` of state variables,
:class:`SymAction` instances (a guard and an update over the frame), and
:class:`SymInvariant` predicates.  :class:`TransitionStep` turns every action instance
into one z3 transition between two frames, chosen by a selector, which is how both
engines ask about "some action".  :mod:`checker.symbolic` documents the whole contract
with an example.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import z3

from checker.config import suggest
from checker.errors import ModelError, UsageError
from checker.errors import describe_exception as _exc
from checker.invariants import run_user_file
from checker.model import Action


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


def by_name(acts: Sequence[SymAction]) -> dict[str, list[int]]:
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


def state_pred(inv: SymInvariant, f: Frame) -> z3.BoolRef:
    try:
        return inv.predicate(f)
    except (UsageError, ModelError):
        raise
    except Exception as e:
        raise ModelError(f"invariant {inv.name!r}: building its z3 predicate raised {_exc(e)}") from e


def step_violation(inv: SymInvariant, step: TransitionStep) -> z3.BoolRef:
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



def select_invariants(model: SymbolicModel, names: Sequence[str], flag: str = "--invariant") -> list[SymInvariant]:
    """The model's invariants named in ``names`` (UsageError for an unknown one,
    whose fix names the command's ``flag``)."""
    known = {inv.name: inv for inv in model.invariants()}
    out = []
    for n in names:
        if n not in known:
            raise UsageError(f"invariant {n!r} has no symbolic encoding{suggest(n, list(known))} "
                             f"(encoded: {', '.join(known) or 'none'}); name one of those with {flag} NAME")
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


def decode(act: SymAction, ev: Callable[[z3.ExprRef], Any], f: Frame, params: Mapping) -> list[Action]:
    try:
        return list(act.explicit(ev, f, params))
    except (UsageError, ModelError):
        raise
    except Exception as e:
        raise ModelError(f"symbolic action {act.label}: decoding it to explicit actions raised {_exc(e)}") from e
