"""State-space reductions for ``kmc check``: what the engines explore instead of the model.

``plan(model, props, symmetry=True)`` checks the model's declarations on a sample
of reachable states, then returns the model and properties the engine is to run
(:class:`checker.symmetry.Reduced`) and a ``finish`` step that turns every
counterexample back into a path of the unreduced model, so that traces, ``kmc
replay`` and ``kmc conform`` never see a reduction.  Without a reduction asked
for, the plan is the model itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from checker import por as por_mod
from checker import symmetry as sym_mod
from checker.errors import UsageError
from checker.model import Model, Property
from checker.result import CheckResult

__all__ = ["Plan", "plan"]


@dataclass
class Plan:
    model: Model                      # what the engine explores
    props: list[Property]             # what the engine checks
    original: Model
    original_props: list[Property]
    sym: Any = None                   # the Symmetry used, or None
    ample: Any = None                 # the por.Ample wrapper used, or None
    notes: list[str] = field(default_factory=list)

    def finish(self, result: CheckResult) -> CheckResult:
        """Counterexamples of the reduced search as paths of the unreduced model."""
        if self.sym is not None:
            result.violations = [sym_mod.concretize(self.original, self.sym, v, self.original_props)
                                 for v in result.violations]
        return result


def plan(model: Model, props: Sequence[Property], *, symmetry: bool = False, por: bool = False,
         engine: str = "local") -> Plan:
    props = list(props)
    out = Plan(model, props, model, props)
    if symmetry:
        declared = sym_mod.declared(model)
        sym = sym_mod.symmetry_of(model)
        if sym is None:
            why = ("the model declares none for this configuration" if declared is None else
                   f"of the {len(declared)} {declared.sort} permutations the model declares, none but the identity "
                   f"keeps the initial states (e.g. an AR's order tells its brokers apart)")
            out.notes.append(f"symmetry: no reduction, {why}; the search runs on the full model")
        else:
            sym_mod.refuse_foreign_steps(model, props)
            n = sym_mod.validate(model, sym, props)
            out.model = sym_mod.Reduced(model, sym)
            out.props = sym_mod.reduce_properties(model, props, sym)
            out.sym = sym
            out.notes.append(f"symmetry: {len(sym)} {sym.sort} permutations keep the initial states; the model and "
                             f"every property checked symmetric on {n} sampled states; one state per orbit is "
                             f"stored, the state properties are evaluated on its every member, and "
                             f"counterexamples are rebuilt on the full model")
    if por:
        fps = por_mod.footprints_of(model)
        if fps is None:
            out.notes.append("partial-order reduction: no reduction, the model declares no action footprints for "
                             "this configuration; every enabled action is explored")
        else:
            if engine != "local":
                raise UsageError("--por runs on the local engine only (its cycle proviso needs the set of states "
                                 "seen); drop --engine spark or --por")
            n = por_mod.validate(model, fps, props, sym_mod.sample_states(model))
            out.ample = por_mod.Ample(out.model, fps, out.props, base=model)
            out.model = out.ample
            out.notes.append(f"partial-order reduction: stubborn sets over {len(fps.order)} declared action classes; "
                             f"footprints checked on {n} pairs of independent actions of sampled states; "
                             f"safety verdicts and deadlocks are preserved, shortest counterexamples and state "
                             f"counts are not")
    return out
