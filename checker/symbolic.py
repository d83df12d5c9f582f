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
from checker.bmc import BmcResult, BmcViolation, bmc, to_explicit
from checker.induction import Cti, ProofResult, confirm_cti, prove
from checker.symmodel import (TYPE_OK, Evaluator, Frame, SymAction, SymbolicModel, SymInvariant, TransitionStep,
                              evaluator, lemma, load_lemmas, py, select_invariants)

__all__ = [
    "TYPE_OK",
    "BmcResult",
    "BmcViolation",
    "Cti",
    "Evaluator",
    "Frame",
    "ProofResult",
    "SymAction",
    "SymInvariant",
    "SymbolicModel",
    "TransitionStep",
    "bmc",
    "confirm_cti",
    "evaluator",
    "lemma",
    "load_lemmas",
    "prove",
    "py",
    "select_invariants",
    "to_explicit",
]
