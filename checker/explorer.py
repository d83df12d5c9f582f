"""What ``kmc explore`` and ``kmc replay --html`` show: a path through a model, step by step.

A *path* is a list of small integers: the index of an initial state, then, for each
step, the index of the action taken among the actions the model enables in the
state reached so far.  The model's actions come in a deterministic order (the
contract of :mod:`checker.model`), so a path names the same states on every run and
fits in a URL: ``#path=0.3.1`` is the link a user copies.  The explorer keeps no
session: every request walks its path again from the initial state, which costs
microseconds for the paths a person clicks through and keeps the server stateless.

For each path the explorer gives the page everything it draws, as plain data:
- the steps so far, each with the action, the fingerprint and the lines ``kmc replay``
  prints for it (the same renderer, so the two never disagree);
- the last state's ``describe()`` view and the fields its last action changed;
- the enabled actions, each one click away;
- the verdict of every state and step property on the last state and transition;
- the model's timeline (lanes and events), when the model has the optional hook
  (:mod:`checker.timeline`).

    >>> from checker.model import Model, action, always
    >>> class Counter(Model):
    ...     name, version = "counter", "1"
    ...     def init_states(self): return [0]
    ...     def actions(self, s): return [action("Inc"), action("Add", n=2)] if s < 3 else []
    ...     def next_state(self, s, a): return s + a.get("n", 1)
    ...     def describe(self, s): return {"n": s}
    ...     def properties(self): return [always("Small", lambda s: s <= 3, "never past 3")]
    >>> page = Explorer(Counter()).page([0, 1])
    >>> page["view"], page["changes"], [a["label"] for a in page["enabled"]]
    ({'n': 2}, [{'key': 'n', 'old': '0', 'new': '2'}], ['Inc()', 'Add(n=2)'])
    >>> page["steps"][-1]["lines"]
    ['step 1  Add(n=2)', '  n: 0 -> 2']
    >>> Explorer(Counter()).path_of([action("Inc"), action("Add", n=2)])
    [0, 0, 1]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from checker.errors import USER_CODE_ERRORS, ModelError, UsageError, describe_exception
from checker.fingerprint import fingerprint, format_fingerprint
from checker.model import ALWAYS, Action, Model, Property
from checker.replay import ReplayStep
from checker.statediff import diff
from checker.staterender import show_value
from checker.trace import action_to_json, state_view

PATH_SEPARATOR = "."


def parse_path(text: str) -> list[int]:
    """``"0.3.1"`` -> ``[0, 3, 1]``; the empty string is the empty path."""
    text = (text or "").strip()
    if not text:
        return []
    try:
        path = [int(x) for x in text.split(PATH_SEPARATOR)]
    except ValueError:
        raise UsageError(f"path {text!r} is not a list of numbers separated by '{PATH_SEPARATOR}' "
                         f"(e.g. 0.3.1): copy the link from the explorer again") from None
    if any(i < 0 for i in path):
        raise UsageError(f"path {text!r} has a negative index; copy the link from the explorer again")
    return path


def format_path(path: Sequence[int]) -> str:
    return PATH_SEPARATOR.join(str(i) for i in path)


@dataclass
class Walked:
    """A path walked on the model: states[i] is reached by actions[i - 1]."""

    states: list[Any]
    actions: list[Action]
    enabled: list[Action]          # the actions enabled in the last state


class Explorer:
    """The model side of the explorer; :mod:`checker.commands.explore` serves it."""

    trace_info: dict[str, Any] | None = None    # the trace being stepped through, if any

    def __init__(self, model: Model, *, properties: Sequence[Property] | None = None,
                 title: str = "", config: Mapping[str, Any] | None = None, preset: str | None = None):
        self.model = model
        self.properties = list(properties if properties is not None else model.properties())
        self.title = title or f"{model.name} {model.version}"
        self.config = dict(config or model.config() or {})
        self.preset = preset
        self.initial = list(model.init_states())
        hook = getattr(model, "timeline", None)
        self.timeline = hook() if callable(hook) else None

    # ----------------------------------------------------------------- paths

    def walk(self, path: Sequence[int]) -> Walked:
        """Follow ``path``; a bad index is a UsageError that says where and what is valid."""
        if not path:
            return Walked([], [], [])
        if path[0] >= len(self.initial):
            raise UsageError(f"path starts at initial state {path[0]}, but the model has "
                             f"{len(self.initial)} (0..{len(self.initial) - 1})")
        states, actions = [self.initial[path[0]]], []
        enabled = self._enabled(states[-1])
        for depth, i in enumerate(path[1:], 1):
            if i >= len(enabled):
                raise UsageError(f"step {depth} of path {format_path(path)} takes action {i}, but only "
                                 f"{len(enabled)} are enabled there (0..{len(enabled) - 1})")
            act = enabled[i]
            try:
                states.append(self.model.next_state(states[-1], act))
            except USER_CODE_ERRORS as e:  # the model broke its contract: say where
                raise ModelError(f"next_state raised {type(e).__name__}: {e} at step {depth} ({act})") from e
            actions.append(act)
            enabled = self._enabled(states[-1])
        return Walked(states, actions, enabled)

    def _enabled(self, state: Any) -> list[Action]:
        if not self.model.within_boundary(state):
            return []
        return list(self.model.actions(state))

    def path_of(self, actions: Sequence[Action], initial_fingerprint: int | None = None) -> list[int]:
        """The path that takes ``actions`` from the initial state (the one with
        ``initial_fingerprint``, or the first); a UsageError names the first action
        the model does not enable."""
        start = 0
        if initial_fingerprint is not None:
            fps = [fingerprint(self.model, s) for s in self.initial]
            if initial_fingerprint not in fps:
                raise UsageError("the trace's initial state is none of the model's initial states: "
                                 "the model changed since the trace was written (kmc replay says how)")
            start = fps.index(initial_fingerprint)
        path, state = [start], self.initial[start]
        for depth, act in enumerate(actions, 1):
            enabled = self._enabled(state)
            if act not in enabled:
                raise UsageError(f"step {depth} of the trace, {act}, is not enabled in the model as it is now "
                                 f"(kmc replay says why)")
            path.append(enabled.index(act))
            state = self.model.next_state(state, act)
        return path

    # ------------------------------------------------------------------ pages

    def page(self, path: Sequence[int], ahead: Sequence[int] | None = None) -> dict[str, Any]:
        """Everything the front end draws for ``path`` (see the module docstring).

        ``ahead`` is a longer path that ``path`` may be a prefix of (the trace being
        stepped through): then the steps and the timeline are those of ``ahead``, with
        the cursor at the end of ``path``, so a user can go forward again."""
        path = list(path)
        full = list(ahead) if ahead is not None and list(ahead[:len(path)]) == path else path
        head = {"title": self.title, "model": self.model.name, "version": str(self.model.version),
                "preset": self.preset, "config": state_view(self.config), "path": path,
                "link": format_path(path), "full": full, "cursor": len(path) - 1}
        if not path:
            return {**head, "steps": [], "view": None, "changes": [], "properties": [], "timeline": None,
                    "full": [], "enabled": [{"index": i, "label": f"initial state {i}", "name": "initial"}
                                            for i in range(len(self.initial))]}
        w = self.walk(full)
        views = [state_view(self.model.describe(s)) for s in w.states]
        steps = self.steps(views, [None, *w.actions], [fingerprint(self.model, s) for s in w.states])
        c = len(path) - 1
        here = Walked(w.states[:c + 1], w.actions[:c], [])
        changes = diff(views[c - 1], views[c]) if c else []
        return {**head,
                "steps": steps,
                "view": views[c],
                "changes": [{"key": k, "old": show_value(a), "new": show_value(b)} for k, a, b in changes],
                "enabled": [{"index": i, "label": str(a), "name": a.name}
                            for i, a in enumerate(self._enabled(w.states[c]))],
                "properties": self.verdicts(here),
                "timeline": self.draw(views, w.actions)}

    def static_bundle(self, path: Sequence[int]) -> dict[str, Any]:
        """The whole of ``path`` for a page with no server (``kmc replay --html``):
        the steps and the timeline once, and per step its view, changes and verdicts."""
        w = self.walk(path)
        views = [state_view(self.model.describe(s)) for s in w.states]
        states = []
        for c in range(len(w.states)):
            changes = diff(views[c - 1], views[c]) if c else []
            states.append({"view": views[c],
                           "changes": [{"key": k, "old": show_value(a), "new": show_value(b)} for k, a, b in changes],
                           "properties": self.verdicts(Walked(w.states[:c + 1], w.actions[:c], []))})
        return {"title": self.title, "model": self.model.name, "version": str(self.model.version),
                "preset": self.preset, "config": state_view(self.config), "full": list(path),
                "steps": self.steps(views, [None, *w.actions], [fingerprint(self.model, s) for s in w.states]),
                "timeline": self.draw(views, w.actions), "states": states}

    @staticmethod
    def steps(views: Sequence[Mapping[str, Any]], actions: Sequence[Action | None],
              fingerprints: Sequence[int | str]) -> list[dict[str, Any]]:
        out = []
        for i, (view, act, fp) in enumerate(zip(views, actions, fingerprints)):
            changes = diff(views[i - 1], view) if i else []
            fp_text = fp if isinstance(fp, str) else format_fingerprint(fp)
            lines = ReplayStep(i, act, fp_text, dict(view), changes).render()
            out.append({"index": i, "action": str(act) if act is not None else None,
                        "action_json": action_to_json(act), "fingerprint": fp_text, "lines": lines,
                        "changed": [k for k, _a, _b in changes]})
        return out

    def draw(self, views: Sequence[Mapping[str, Any]], actions: Sequence[Action | Mapping[str, Any]]) -> Any:
        if self.timeline is None:
            return None
        plain = [a if isinstance(a, Mapping) else action_to_json(a) for a in actions]
        return self.timeline.draw(list(views), plain)

    def verdicts(self, w: Walked) -> list[dict[str, Any]]:
        """Each ``always`` property on the last state (state properties) or the last
        transition (step properties): True, False, or None where it does not apply."""
        out = []
        last = w.states[-1]
        for p in self.properties:
            if p.kind != ALWAYS:
                continue
            try:
                if p.step:
                    holds = bool(p.predicate(w.states[-2], w.actions[-1], last)) if w.actions else None
                else:
                    holds = bool(p.predicate(last))
            except USER_CODE_ERRORS as e:     # the page says so, not a dropped connection
                raise ModelError(f"the predicate of property {p.name!r} raised {describe_exception(e)} at step "
                                 f"{len(w.actions)} of this path; a predicate must return a bool on every "
                                 f"reachable state: fix the property") from e
            out.append({"name": p.name, "step": p.step, "holds": holds, "rationale": p.rationale})
        return out
