"""The checked calls into model code, and counterexamples replayed from parent links.

Every engine calls the model through these, so that a model that raises, returns
something that is not an action list, or is not deterministic fails with the same
ModelError wherever it runs: the call, the action, the depth and the state, and
what to fix.  :class:`ModelCalls` is mixed into :class:`checker.search.Search`
(the Spark partitions use the same methods through it); :func:`replay_chain`
rebuilds a path from the ``(fingerprint, index)`` links every engine stores,
checking each fingerprint on the way, which is where a model that is not
deterministic is caught after the search.
"""

from __future__ import annotations

import json
from typing import Callable

from checker.errors import USER_CODE_ERRORS, ModelError
from checker.fingerprint import exact_fingerprint_fn, format_fingerprint, validate_state
from checker.model import Action, Model, State
from checker.result import Step

__all__ = ["ModelCalls", "describe_state", "nondeterministic", "replay_chain"]


def describe_state(model: Model, state: State) -> str:
    try:
        return json.dumps(model.describe(state), default=repr)
    except USER_CODE_ERRORS:
        try:
            return repr(state)
        except USER_CODE_ERRORS:
            return f"<unprintable {type(state).__name__}>"


class ModelCalls:
    """The model's code called with its contract checked; needs ``self.model`` and
    ``self.fp`` (the fingerprint function)."""

    model: Model
    fp: Callable[[State], int]

    def call_pred(self, name, pred, args, state, depth, act, kind="property", via=None):
        try:
            return pred(*args)
        except USER_CODE_ERRORS as e:
            raise self.error(f"the predicate of {kind} {name!r}", state, depth, e, act=act, via=via) from e

    def as_list(self, acts, s, depth) -> list:
        if isinstance(acts, (set, frozenset, dict)):
            raise ModelError(
                f"actions(state) returned a {type(acts).__name__} at depth {depth}, whose order is not "
                f"deterministic; return a list in a fixed order. State: {describe_state(self.model, s)}"
            )
        try:
            return list(acts)
        except USER_CODE_ERRORS as e:
            raise self.error("actions(state) (while iterating its result)", s, depth, e) from e

    def check_actions(self, s, acts, depth) -> None:
        """On the first states: actions are Action records and deterministic."""
        for a in acts:
            if not isinstance(a, Action):
                raise ModelError(
                    f"actions(state) returned {a!r} ({type(a).__name__}) at depth {depth}; actions must be "
                    f"checker.model.Action records built with action(name, **args). State: {describe_state(self.model, s)}"
                )
            try:
                validate_state(a.args, f"the arguments of action {a.name}")
            except ModelError as e:
                raise ModelError(f"{e} (action arguments must be JSON-representable)") from None
        try:
            again = list(self.model.actions(s))
        except USER_CODE_ERRORS as e:
            raise self.error("actions(state)", s, depth, e) from e
        if again != list(acts):
            raise ModelError(
                f"actions(state) is not deterministic: two calls on the same state at depth {depth} returned "
                f"[{', '.join(map(str, acts))}] then [{', '.join(map(str, again))}]. State: {describe_state(self.model, s)}"
            )

    def check_successor(self, s, a, t, depth) -> None:
        """On the first successors: plain-value states, deterministic next_state."""
        if t is None:
            raise ModelError(
                f"next_state(state, {a}) returned None at depth {depth} (a missing return?). "
                f"State: {describe_state(self.model, s)}"
            )
        try:
            validate_state(t, "next state", self.__dict__.setdefault("validated", {}))   # id -> tuple
        except ModelError as e:
            raise ModelError(f"{e} (the state that action {a} produced at depth {depth + 1})") from None
        if exact_fingerprint_fn(self.model) is not None:
            try:
                self.fp(t)      # checked: an int in the signed 64-bit range
            except ModelError as e:
                raise ModelError(f"{e} (the state that action {a} produced at depth {depth + 1})") from None
            except USER_CODE_ERRORS as e:
                raise self.error("exact_fingerprint(state)", t, depth + 1, e, via=a) from e
        try:
            again = self.model.next_state(s, a)
        except USER_CODE_ERRORS as e:
            raise self.error("next_state(state, action)", s, depth, e, act=a) from e
        if again != t:
            raise ModelError(
                f"next_state is not deterministic: action {a} at depth {depth} gave {t!r} then {again!r}. "
                f"State: {describe_state(self.model, s)}"
            )

    def encode_fp(self, s, depth, act, where) -> int:
        try:
            return self.fp(s)
        except ModelError as e:    # an exact fingerprint out of its range
            raise ModelError(f"{e} (state from {where})") from None
        except USER_CODE_ERRORS as e:
            call = "exact_fingerprint(state)" if exact_fingerprint_fn(self.model) is not None else "encode(state)"
            raise self.error(f"{call} (state from {where})", s, depth, e, act=act) from e

    def error(self, call, state, depth, exc, act=None, via=None) -> ModelError:
        """``act``: the action taken from ``state``; ``via``: the action that reached it."""
        what = f" for action {act}" if act is not None else ""
        how = f" (reached by action {via})" if via is not None else ""
        if call.startswith("next_state"):
            hint = ("Every action that actions(state) returns needs a next state: fix next_state, "
                    "or disable the action in this state.")
        elif "predicate" in call:
            hint = "A predicate must return a bool on every reachable state: fix the property."
        else:
            hint = "The model must be total on the states it can reach: fix it."
        err = ModelError(
            f"model error: {call} raised {type(exc).__name__}: {exc}{what} at depth {depth}, "
            f"in state {describe_state(self.model, state)}{how}. {hint}"
        )
        err.depth = depth  # type: ignore[attr-defined]  # for a consumer that words it its own way (graph)
        return err

    def unsteady(self, name, kind, state, depth, act=None, via=None) -> ModelError:
        """A fast check tripped on predicate ``name`` (a property failed or a
        witness held, or it raised) and the slow path, calling it again on the same
        arguments, found that it did not: the search cannot go on from one answer
        or the other, so it stops."""
        first = "held or raised" if kind.startswith("sometimes") else "failed or raised"
        what = f" for action {act}" if act is not None else ""
        how = f" (reached by action {via})" if via is not None else ""
        err = ModelError(
            f"model error: the predicate of {kind} {name!r} is not deterministic: it {first}, then did not, "
            f"when called twice{what} at depth {depth}, in state {describe_state(self.model, state)}{how}. "
            f"A predicate must depend on its arguments alone: fix the property."
        )
        err.depth = depth  # type: ignore[attr-defined]
        return err

    def nondeterministic(self, act, state, depth, want, got) -> ModelError:
        return nondeterministic(self.model, act, state, depth, want, got)


def nondeterministic(model: Model, act, state, depth, want, got) -> ModelError:
    return ModelError(
        f"the model is not deterministic: replaying action {act} at depth {depth} gave a state with "
        f"fingerprint {format_fingerprint(got)}, the search saw {format_fingerprint(want)}. "
        f"State: {describe_state(model, state)}"
    )


def replay_chain(model: Model, fp, chain: list) -> list[Step]:
    """Rebuild a path from ``chain``, the ``(fingerprint, index)`` pairs from an
    initial state (index into ``init_states()``) to the target (index into the
    parent's ``actions()``), checking every fingerprint on the way.  Every engine
    stores its parent links this way and rebuilds its counterexamples here."""
    inits = list(model.init_states())
    fp0, i0 = chain[0]
    state = inits[i0]
    got = fp(state)
    if got != fp0:
        raise ModelError(
            f"init_states() is not deterministic: initial state #{i0} has fingerprint "
            f"{format_fingerprint(got)} on replay, {format_fingerprint(fp0)} during the search"
        )
    path = [Step(None, state, got)]
    for depth, (fpn, idx) in enumerate(chain[1:]):
        acts = list(model.actions(state))
        if idx >= len(acts):
            raise ModelError(
                f"actions(state) is not deterministic: on replay, the state at depth {depth} has "
                f"{len(acts)} actions, during the search it had more than {idx}. State: {describe_state(model, state)}"
            )
        act = acts[idx]
        nxt = model.next_state(state, act)
        got = fp(nxt)
        if got != fpn:
            raise nondeterministic(model, act, state, depth, fpn, got)
        path.append(Step(act, nxt, got))
        state = nxt
    return path
