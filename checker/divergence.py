"""What a conformance run found: a :class:`Divergence` (the first step where an
implementation parts from the model) and how it is printed, or
:class:`NotInModel` when the action sequence does not fit the model itself.

The kinds of divergence (``KINDS``) are the harness's verdicts
(:class:`checker.conform.Harness`); the report shows the changes field by field
(:func:`checker.staterender.render_changes`), the previous steps, and, after
shrinking, the shorter path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from checker.model import Action
from checker.staterender import render_changes

__all__ = ["Divergence", "NotInModel", "KINDS", "INITIAL", "REFUSED", "RAISED", "STATE", "EXTRA", "SETTLED"]

INITIAL, REFUSED, RAISED, STATE, EXTRA, SETTLED = "initial", "refused", "raised", "state", "extra", "settled"
KINDS = {
    INITIAL: "the implementation's initial state differs from the model's (model -> implementation)",
    REFUSED: "the model enables this action but the implementation does not",
    RAISED: "the implementation raised",
    STATE: "after this step the implementation's state differs from the model's (model -> implementation)",
    EXTRA: "the implementation enables an action the model does not enable here",
    SETTLED: "left alone after this step, the implementation settles in a state where the model cannot settle "
             "(the nearest quiet model state -> implementation)",
}


class NotInModel(Exception):
    """An action sequence the model itself does not allow (the trace no longer fits
    the model): not an implementation divergence."""

    def __init__(self, step: int, action: Action, enabled: Sequence[Action]) -> None:
        shown = ", ".join(str(a) for a in list(enabled)[:8]) + (f", ... {len(enabled) - 8} more" if len(enabled) > 8 else "")
        super().__init__(f"step {step}: action {action} is not enabled in the model here (enabled: {shown or 'none'})")
        self.step, self.action, self.enabled = step, action, list(enabled)


@dataclass
class Divergence:
    """The first step where the implementation parts from the model.

    ``step`` is the index of the diverging action in ``actions`` counted from 1
    (step 0: the initial states differ); ``actions`` is the path up to and including
    it.  ``changes`` are ``(field, model value, implementation value)``; ``context``
    the previous few steps as ``(index, action, model-side changes)``.  After
    :func:`shrink` and :func:`save`, ``original`` is the divergence as first found,
    ``trace_path`` where the shrunk path was saved and ``command`` how to reproduce it.
    """

    kind: str
    step: int
    action: Action | None
    actions: tuple = ()
    changes: list = field(default_factory=list)
    detail: str = ""
    model_changes: list = field(default_factory=list)   # what the model did in this step
    context: list = field(default_factory=list)
    init: Any = None                                      # the model's initial state of the path
    source: str = ""
    original: "Divergence | None" = None
    trace_path: str | None = None
    command: str = ""
    replays: int = 0                                      # replays the shrinking took
    extra: Action | None = None                           # EXTRA: the action only the implementation enables

    @property
    def summary(self) -> str:
        where = "in the initial state" if self.step == 0 else f"at step {self.step}, {self.action}"
        if self.kind in (STATE, INITIAL, SETTLED):
            first = self.changes[0] if self.changes else None
            what = (f"{first[0] or 'value'}: model {first[1]!r}, implementation {first[2]!r}"
                    + (f" (and {len(self.changes) - 1} more)" if len(self.changes) > 1 else "")) if first else "states differ"
        elif self.kind == REFUSED:
            what = "the implementation does not enable it"
        elif self.kind == EXTRA:
            where = "in the initial state" if self.step == 0 else f"after step {self.step}"
            what = f"the implementation enables {self.extra}, which the model does not"
        else:
            what = f"the implementation raised {self.detail}"
        if self.kind == SETTLED:
            where = "in the initial state" if self.step == 0 else f"after step {self.step}"
            where += ", left to settle"
        return f"diverges {where}: {what}"

    def render(self) -> str:
        lines = []
        head = self.original or self
        src = f" of {head.source}" if head.source else ""
        if head.kind == EXTRA:
            lines.append(f"DIVERGENCE {'in the initial state' if head.step == 0 else f'after step {head.step}'}"
                         f"{src}: the implementation enables {head.extra}")
        elif head.kind == SETTLED:
            lines.append(f"DIVERGENCE {'in the initial state' if head.step == 0 else f'after step {head.step}'}"
                         f"{src}, left to settle")
        elif head.step == 0:
            lines.append(f"DIVERGENCE in the initial state{src}")
        else:
            lines.append(f"DIVERGENCE at step {head.step}{src}: {head.action}")
        lines.extend(_body(head))
        if self.original is not None and self.original is not self:
            lines.append("")
            n0, n1 = len(self.original.actions), len(self.actions)
            saved = f", saved to {self.trace_path}" if self.trace_path else ""
            lines.append(f"shrunk from {n0} to {n1} step{'s' if n1 != 1 else ''} ({self.replays} replays){saved}:")
            for i, a in enumerate(self.actions, 1):
                lines.append(f"  step {i}  {a}")
            if self.kind == EXTRA:
                lines.append(f"  {'in the initial state' if self.step == 0 else f'after step {self.step}'}, "
                             f"the implementation enables {self.extra}, which the model does not")
            elif self.step == 0:
                lines.append("  the initial states already differ")
            elif (self.kind, self.changes) != (head.kind, head.changes) or self.step != n1:
                lines.append(f"  at step {self.step}: {KINDS[self.kind]}")
                lines.extend(_detail(self, "    "))
        else:
            n = len(self.actions)
            if self.original is self and n > 1:
                lines.append("")
                lines.append(f"not shrunk: no step of the {n} can be dropped, and no shorter path "
                             f"diverges (within the search budget)")
            if self.trace_path:
                lines.append(f"saved to {self.trace_path}")
        if self.command:
            lines.append(f"reproduce: {self.command}")
        return "\n".join(lines)


def _detail(d: Divergence, indent: str) -> list[str]:
    if d.kind in (STATE, INITIAL, SETTLED):
        return render_changes(d.changes, indent=indent)
    if d.kind == RAISED:
        return [f"{indent}{d.detail}"]
    return []


def _body(d: Divergence) -> list[str]:
    if d.kind == EXTRA:
        lines = [f"  {KINDS[d.kind]}: {d.extra}"]
    else:
        lines = [f"  {KINDS[d.kind]}:" if d.kind != REFUSED else f"  {KINDS[d.kind]}"]
    lines.extend(_detail(d, "    "))
    if d.kind == STATE and d.model_changes:
        lines.append("  what the model did in this step:")
        lines.extend(render_changes(d.model_changes, indent="    "))
    if d.context:
        first = d.context[0][0]
        lines.append(f"  previous steps{' (from step ' + str(first) + ')' if first > 1 else ''}; "
                     f"kmc replay on the saved trace shows what each one changed:")
        for i, a, _changes in d.context:
            lines.append(f"    step {i}  {a}")
    return lines
