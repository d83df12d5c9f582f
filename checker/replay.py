"""Replaying a trace (:mod:`checker.trace`) on the model it names: every state is
re-derived from the recorded actions and compared with the recorded fingerprint and
view, and the violated property is re-checked on the last state, transition or lasso.
The trace is evidence only as long as the model still produces it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from checker.errors import USER_CODE_ERRORS, ModelError, UsageError
from checker.errors import describe_exception as _exc
from checker.config import resolve
from checker.fingerprint import fingerprint, format_fingerprint, parse_fingerprint
from checker.liveness import loop_is_fair
from checker.model import ALWAYS, EVENTUALLY, SOMETIMES, Action, Model, Property
from checker.traceschema import shown
from checker.statediff import diff
from checker.staterender import render_changes, render_state
from checker.trace import Trace, state_view


# ------------------------------------------------------------------------ replay

@dataclass
class ReplayStep:
    index: int
    action: Action | None
    fingerprint: str
    view: dict[str, Any]                       # describe() of the re-derived state
    changes: list[tuple[str, Any, Any]]        # vs the previous step (empty for step 0)

    def render(self, width_: int | None = None) -> list[str]:
        """``step N  Action(...)`` and the changed fields; step 0 shows the whole
        initial state, compactly."""
        if self.index == 0:
            return [f"step 0  initial state  [{self.fingerprint}]", *render_state(self.view, width_=width_)]
        return [f"step {self.index}  {self.action}", *render_changes(self.changes, width_=width_)]


@dataclass
class ReplayResult:
    trace: Trace
    steps: list[ReplayStep] = field(default_factory=list)
    fits: bool = True                  # every replayed step matched the recording
    failed_step: int | None = None
    reason: str | None = None          # "step N: ..." when it does not fit
    mismatch: list[tuple[str, Any, Any]] = field(default_factory=list)  # recorded -> re-derived
    # "violated" or "witnessed" (the trace still shows what it recorded), "holds" or
    # "unreached" (it no longer does), "unknown" (it cannot be re-checked: a kind
    # that no path shows, or another kind than recorded), "undeclared" (a property
    # the model does not declare: a path saved from kmc explore, or a property
    # renamed or removed since), "unchecked" (cut short by --step)
    property_status: str = "unchecked"
    property_note: str = ""
    stopped_at: int | None = None      # --step N
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The trace fits the model and, unless cut short, still shows its violation
        or witness, or names a property the model does not declare."""
        return self.fits and self.property_status in ("violated", "witnessed", "undeclared", "unchecked")


def replay(trace: Trace, family_resolver: Callable[[str], Any], *, stop_at: int | None = None,
           property_loader: Callable[[], Sequence[Property]] | None = None,
           step_flag: str | None = "--step N") -> ReplayResult:
    """Re-derive every state of ``trace`` from its recorded actions.

    ``family_resolver(trace.family_ref)`` returns the model family.  Stops at the
    first step that does not fit (the action is not enabled, or the state differs
    from the recording) and says why; otherwise re-checks the trace's property on
    the final state (or final transition).  ``stop_at=N`` replays steps 0..N only.
    ``property_loader()`` loads the user properties the *caller* names (the command
    line's ``--invariants``); it is asked only when the trace's property is not the
    model's.  The invariant files a trace records are never run: without a loader,
    a property from them is a ``UsageError`` that says which flag supplies it, and
    that the caller's ``step_flag`` would stop before the property is needed (None:
    the caller has no such flag, as ``kmc explore`` has not, so none is suggested).
    Raises ``UsageError`` for a ``stop_at`` out of range or a family that cannot be
    found, ``ModelError`` when the model raises.
    """

    last = len(trace.steps) - 1
    if stop_at is not None and not 0 <= stop_at <= last:
        raise UsageError(f"--step {stop_at} is out of range: trace '{trace.path}' has steps 0..{last}; "
                         f"pick one of them")
    result = ReplayResult(trace=trace, stopped_at=stop_at if stop_at is not None and stop_at < last else None)
    family = family_resolver(trace.family_ref)
    try:
        config = resolve(family, None, trace.config)
    except UsageError as e:
        result.fits, result.failed_step = False, 0
        result.reason = f"the trace's config no longer fits model family {trace.family_ref!r}: {e}"
        return result
    try:
        model = family.build(config)
    except ValueError as e:
        result.fits, result.failed_step = False, 0
        result.reason = f"the trace's config is rejected by model family {trace.family_ref!r}: {e}"
        return result
    except USER_CODE_ERRORS as e:  # noqa: BLE001 - the model broke its contract
        raise ModelError(f"building the model of family {trace.family_ref!r} raised {_exc(e)}") from e
    if model.name != trace.model_name:
        result.warnings.append(f"the trace was recorded with model {trace.model_name!r}, "
                               f"this family builds {model.name!r}")
    elif str(model.version) != trace.model_version:
        result.warnings.append(f"the trace was recorded with {trace.model_name} version {trace.model_version}, "
                               f"this is version {model.version}")

    def fp_of(state: Any, where: str) -> str:
        try:
            return format_fingerprint(fingerprint(model, state)).lower()
        except USER_CODE_ERRORS as e:  # noqa: BLE001
            raise ModelError(f"{where}: encoding the state raised {_exc(e)}") from e

    def view_of(state: Any, where: str) -> dict[str, Any]:
        try:
            return state_view(model.describe(state))
        except USER_CODE_ERRORS as e:  # noqa: BLE001
            raise ModelError(f"{where}: describe() raised {_exc(e)}") from e

    def norm(fp: str) -> str:
        return format_fingerprint(parse_fingerprint(fp)).lower()

    # step 0
    rec0 = trace.steps[0]
    try:
        inits = list(model.init_states())
    except USER_CODE_ERRORS as e:  # noqa: BLE001
        raise ModelError(f"init_states() raised {_exc(e)}") from e
    state = None
    for s in inits:
        if fp_of(s, "step 0") == norm(rec0.fingerprint):
            state = s
            break
    if state is None:
        result.fits, result.failed_step = False, 0
        views = [view_of(s, "step 0") for s in inits]
        if views:
            best = min(views, key=lambda v: len(diff(rec0.state, v)))
            result.mismatch = diff(rec0.state, best)
        result.reason = (f"step 0: the recorded initial state is not an initial state of the model "
                         f"({len(inits)} initial state{'s' if len(inits) != 1 else ''})")
        return result
    prev_view = view_of(state, "step 0")
    result.steps.append(ReplayStep(0, None, norm(rec0.fingerprint), prev_view, []))
    states = [state]                   # the re-derived states, for a lasso's re-check
    prev, prev_state = state, None
    shown_view_warning = False
    end = last if stop_at is None else stop_at
    for rec in trace.steps[1:end + 1]:
        where = f"step {rec.index}"
        try:
            enabled = list(model.actions(prev))
        except USER_CODE_ERRORS as e:  # noqa: BLE001
            raise ModelError(f"{where}: actions() raised {_exc(e)}") from e
        if rec.action not in enabled:
            result.fits, result.failed_step = False, rec.index
            same = [a for a in enabled if a.name == rec.action.name]
            others = [a for a in enabled if a.name != rec.action.name]
            listed = same + others
            shown = ", ".join(str(a) for a in listed[:8])
            if len(listed) > 8:
                shown += f", ... {len(listed) - 8} more"
            result.reason = (f"{where}: action {rec.action} is not enabled here "
                             f"(enabled: {shown or 'none'})")
            return result
        try:
            nxt = model.next_state(prev, rec.action)
        except USER_CODE_ERRORS as e:  # noqa: BLE001
            raise ModelError(f"{where}: next_state(..., {rec.action}) raised {_exc(e)}") from e
        view = view_of(nxt, where)
        fp = fp_of(nxt, where)
        if fp != norm(rec.fingerprint):
            result.fits, result.failed_step = False, rec.index
            result.mismatch = diff(rec.state, view)
            result.reason = (f"{where}: state differs from the recorded one after {rec.action} "
                             f"(recorded {rec.fingerprint}, re-derived {fp})")
            result.steps.append(ReplayStep(rec.index, rec.action, fp, view, diff(prev_view, view)))
            return result
        result.steps.append(ReplayStep(rec.index, rec.action, fp, view, diff(prev_view, view)))
        if not shown_view_warning and diff(rec.state, view):
            shown_view_warning = True
            result.warnings.append(f"{where}: the recorded state view differs from the model's describe() "
                                   f"although the fingerprint matches (describe() changed?)")
        prev_state, prev, prev_view = prev, nxt, view
        states.append(nxt)
    if stop_at is not None and stop_at < last:
        result.property_note = f"stopped at step {stop_at} of {last}; property not re-checked"
        return result
    k = trace.loop_start
    if k is not None and result.steps[k].fingerprint != result.steps[-1].fingerprint:
        result.fits, result.failed_step = False, last
        result.reason = (f"step {last}: the loop does not return to the state of step {k} (re-derived "
                         f"{result.steps[-1].fingerprint}, step {k} is {result.steps[k].fingerprint})")
        return result
    _recheck(result, model, trace, prev_state, prev, property_loader, states, step_flag)
    return result


def _recheck(result: ReplayResult, model: Model, trace: Trace, before: Any, final: Any,
             property_loader: Callable[[], Sequence[Property]] | None,
             states: Sequence[Any] = (), step_flag: str | None = None) -> None:
    name, kind = trace.property["name"], trace.property["kind"]
    if kind == "deadlock":
        try:
            dead = not list(model.actions(final)) and not model.is_terminal(final)
        except USER_CODE_ERRORS as e:  # noqa: BLE001
            raise ModelError(f"final state: actions()/is_terminal() raised {_exc(e)}") from e
        result.property_status = "violated" if dead else "holds"
        result.property_note = ("deadlock: the final state has no enabled action and is not terminal" if dead
                                else "no deadlock any more: the final state has enabled actions or is terminal")
        return
    props = {p.name: p for p in model.properties()}
    if name not in props and property_loader is not None:
        for p in property_loader():
            props.setdefault(p.name, p)
    elif name not in props and trace.invariants:
        files = ", ".join(shown(f, 80) for f in trace.invariants[:3]) + (", ..." if len(trace.invariants) > 3 else "")
        raise UsageError(f"trace file '{trace.path}' violates property {shown(name, 60)}, which its run loaded "
                         f"from invariants file {files}; kmc never runs a file a trace names: re-check the "
                         f"property with --invariants FILE.py"
                         + (f" (or stop before the end with {step_flag})" if step_flag else ""))
    prop = props.get(name)
    if prop is None:
        result.property_status = "undeclared"
        result.property_note = f"property {name!r} is not declared by the model; not re-checked"
        return
    if kind != prop.kind:
        result.property_status = "unknown"
        result.property_note = (f"the trace records {name!r} as of kind {shown(kind, 40)}, the model declares "
                                f"it {prop.kind}; not re-checked")
        return
    if prop.kind == EVENTUALLY and trace.loop_start is not None:
        _recheck_lasso(result, model, trace, prop, states)
        return
    if prop.kind == SOMETIMES:
        # a witness trace: a path to a state where the witness holds
        try:
            reached = bool(prop.predicate(final))
        except USER_CODE_ERRORS as e:  # noqa: BLE001
            raise ModelError(f"property {name!r} raised {_exc(e)} on the final state") from e
        last = len(result.steps) - 1
        result.property_status = "witnessed" if reached else "unreached"
        result.property_note = (f"witness {name!r} still holds on the final state (step {last})" if reached else
                                f"witness {name!r} does NOT hold on the final state (step {last}) any more: the "
                                f"trace no longer reaches it")
        return
    if prop.kind != ALWAYS:
        result.property_status = "unknown"
        result.property_note = (f"property {name!r} is an {prop.kind} property and the trace has no loop "
                                f"(loop_start); a path without one cannot violate it")
        return
    try:
        if prop.step:
            if len(result.steps) < 2:
                result.property_status = "unknown"
                result.property_note = f"step property {name!r} needs a transition; the trace has none"
                return
            holds = bool(prop.predicate(before, result.steps[-1].action, final))
        else:
            holds = bool(prop.predicate(final))
    except USER_CODE_ERRORS as e:  # noqa: BLE001
        raise ModelError(f"property {name!r} raised {_exc(e)} on the final state") from e
    where = "transition" if prop.step else "state"
    if holds:
        result.property_status = "holds"
        result.property_note = f"property {name!r} now HOLDS on the final {where}: the trace no longer shows a violation"
    else:
        result.property_status = "violated"
        result.property_note = f"property {name!r} is still violated on the final {where} (step {len(result.steps) - 1})"


def _recheck_lasso(result: ReplayResult, model: Model, trace: Trace, prop: Property,
                   states: Sequence[Any]) -> None:
    """A lasso still violates ``trigger ~> goal`` if the goal fails on every state
    from some step on (the loop included), the trigger holds at one of those
    steps, and the loop is weakly fair (or, empty, stutters where no fair action
    is enabled): then the behaviour that repeats the loop for ever is fair and
    never meets the goal again."""

    name, k, last = prop.name, trace.loop_start, len(states) - 1

    def call(pred: Callable, i: int, what: str) -> bool:
        try:
            return bool(pred(states[i]))
        except USER_CODE_ERRORS as e:  # noqa: BLE001
            raise ModelError(f"the {what} of property {name!r} raised {_exc(e)} on the state of step {i}") from e

    first = last + 1                   # the first step of the final run of goal-less states
    while first > 0 and not call(prop.predicate, first - 1, "goal"):
        first -= 1
    holds = None
    if first > k:
        holds = f"its goal holds at step {first - 1}, inside the loop"
    elif prop.trigger is not None and not any(call(prop.trigger, i, "trigger") for i in range(first, last + 1)):
        holds = f"its trigger never holds from step {first} on, where its goal stops holding"
    else:
        if prop.trigger is not None:
            first = next(i for i in range(first, last + 1) if call(prop.trigger, i, "trigger"))
        loop_states = states[k:last] if last > k else [states[k]]
        try:
            missing = loop_is_fair(loop_states, [s.action for s in result.steps[k + 1:]], model)
        except USER_CODE_ERRORS as e:  # noqa: BLE001
            raise ModelError(f"checking the loop's fairness (actions()/fair()) raised {_exc(e)}") from e
        if missing:
            what = ", ".join(str(a) for a in missing[:3]) + (", ..." if len(missing) > 3 else "")
            holds = (f"the loop is not fair: {what} stays enabled on it and is never taken" if last > k
                     else f"the behaviour cannot stop at step {k}: fair actions are enabled there ({what})")
    if holds:
        result.property_status = "holds"
        result.property_note = f"property {name!r} now HOLDS on this lasso: {holds}"
        return
    result.property_status = "violated"
    loop = (f"the fair loop of steps {k + 1}..{last}" if last > k
            else f"a stop at step {k}, where no fair action is enabled")
    result.property_note = (f"property {name!r} is still violated: its goal fails from step {first} on"
                            f"{' (where its trigger holds)' if prop.trigger is not None else ''} and "
                            f"the lasso ends in {loop}")
