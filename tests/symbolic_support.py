"""What z3 enables: the explicit actions that the symbolic guards allow on a state.

Shared by the tests that compare z3's enabled sets with the explicit model's
(tests/test_symbolic.py, tests/test_symbolic_event_order.py)."""

from __future__ import annotations

import z3

from checker.solver import FreshSolver
from checker.symbolic import evaluator


class SymbolicEnabled:
    """``enabled(state)``: every explicit action that some instance of a symbolic
    action's guard allows on ``abstract(state)``, each choice of its parameters.

    A guard is a term over the frame and the action's parameters only, the same for
    every state, so it is built once here: built again per state, the guards' terms
    were most of the cost of these tests (a third of a sample of ``failover``)."""

    def __init__(self, sym) -> None:
        self.sym = sym
        self.frame = sym.frame("s")
        self.guards = []
        for act in sym.actions():
            params = {k: z3.Const(f"{act.name}.{k}", srt) for k, srt in act.params}
            self.guards.append((act, params, act.guard(self.frame, params)))

    def enabled(self, state) -> set:
        solver = FreshSolver()
        solver.add(self.sym.abstract(state, self.frame))
        out = set()
        for act, params, guard in self.guards:
            solver.push()
            solver.add(guard)
            while solver.check() == z3.sat:
                m = solver.model()
                [a] = act.explicit(evaluator(m), self.frame, params)
                out.add(a)
                if not params:
                    break
                solver.add(z3.Or([v != m.eval(v, model_completion=True) for v in params.values()]))
            solver.pop()
        return out
