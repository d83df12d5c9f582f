"""A z3 solver whose answers depend only on the queries asked of it.

z3 numbers every term it creates, in one context per process, and its search (the
order of its hash tables, which quantifier instances it tries first) follows those
numbers.  So the same query, asked after other work in the same process, can come
back ``sat`` once and ``unknown (incomplete quantifiers)`` the next time: measured on
``kmc prove``'s wrong-lemma check, which found its CTI or gave up depending on how many
unrelated terms had been created before (7 and 333 gave up; 0, 50 and 5,000 did not).
A test suite that runs many proofs in one process, or a library user, then sees answers
that change with history, which breaks the rule that results are deterministic.

:class:`FreshSolver` keeps the caller in z3's main context (terms, models and
evaluation stay as they are) but mirrors every assertion, push and pop into a private
context of its own, created empty, where the checks are done.  The private context's
term numbers then follow the order of the queries alone.  Models are translated back
into the main context.

    >>> import z3
    >>> x = z3.Int("x")
    >>> s = FreshSolver()
    >>> s.add(x > 2)
    >>> s.check() == z3.sat
    True
    >>> s.push(); s.add(x < 2); s.check() == z3.unsat
    True
    >>> s.pop(); s.model().eval(x > 2)
    True
"""

from __future__ import annotations

from typing import Any

import z3


class FreshSolver:
    """The subset of :class:`z3.Solver` that the symbolic engines use: ``add``,
    ``push``, ``pop``, ``check``, ``model``, ``reason_unknown`` and ``set("timeout", ms)``."""

    def __init__(self, timeout_s: float | None = None) -> None:
        self._ctx = z3.Context()
        self._solver = z3.Solver(ctx=self._ctx)
        self._model: z3.ModelRef | None = None
        if timeout_s:
            self.set("timeout", int(timeout_s * 1000))

    def set(self, name: str, value: Any) -> None:
        self._solver.set(name, value)

    def add(self, *constraints: Any) -> None:
        for c in constraints:
            if isinstance(c, (list, tuple)):
                self.add(*c)
            elif isinstance(c, bool):
                self._solver.add(z3.BoolVal(c, ctx=self._ctx))
            else:
                self._solver.add(c.translate(self._ctx))

    def push(self) -> None:
        self._solver.push()

    def pop(self) -> None:
        self._solver.pop()

    def check(self) -> z3.CheckSatResult:
        self._model = None
        answer = self._solver.check()
        # the answer constants are shared by every context
        return z3.sat if answer == z3.sat else z3.unsat if answer == z3.unsat else z3.unknown

    def model(self) -> z3.ModelRef:
        if self._model is None:
            self._model = self._solver.model().translate(z3.main_ctx())
        return self._model

    def reason_unknown(self) -> str:
        return self._solver.reason_unknown()
