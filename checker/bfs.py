"""The local engine: exhaustive breadth-first search over distinct states, in this
process.  The search itself is :mod:`checker.search` (what is checked, in which
order, how bounds and counterexamples behave: see there); this module is its
front door, ``check``, and ``replay_path`` to rebuild a path from its actions.

>>> from checker.model import Model, action, always
>>> class Counter(Model):
...     def init_states(self): return [0]
...     def actions(self, s): return [action("Inc")] if s < 3 else []
...     def next_state(self, s, a): return s + 1
...     def is_terminal(self, s): return s == 3
...     def properties(self): return [always("Small", lambda s: s <= 2, "at most 2")]
>>> r = check(Counter())
>>> r.verdict, [str(st.action) for st in r.violations[0].path]
('violated', ['None', 'Inc()', 'Inc()', 'Inc()'])
"""

from __future__ import annotations

from typing import Iterable, Sequence, TextIO

from checker.errors import ModelError
from checker.fingerprint import fingerprint_fn
from checker.model import Action, Model, Property, State
from checker.result import CheckResult, Step
from checker.search import Search, Settings, Visitor, describe_state, replay_chain

__all__ = ["check", "replay_path", "replay_chain", "Search", "Settings", "Visitor"]


def check(
    model: Model,
    *,
    properties: Sequence[Property] | None = None,
    max_depth: int | None = None,
    max_states: int | None = None,
    keep_going: bool = False,
    check_deadlock: bool = True,
    progress: TextIO | None = None,
    progress_interval: float = 2.0,
    settings: Settings | None = None,
    visitor: Visitor | None = None,
) -> CheckResult:
    """Explore ``model`` breadth-first and check ``properties`` (default: the model's).

    Returns a CheckResult whose verdict is OK, VIOLATED or BOUNDED (see
    :mod:`checker.search`).  ``settings``, when given, replaces the keyword bounds.
    Raises ModelError if the model breaks its contract, UsageError on bad bounds.
    """
    if settings is None:
        settings = Settings(max_depth=max_depth, max_states=max_states, keep_going=keep_going,
                            check_deadlock=check_deadlock, progress=progress, progress_interval=progress_interval)
    props = list(model.properties() if properties is None else properties)
    return Search(model, props, settings, visitor).run()


def replay_path(model: Model, actions: Iterable[Action], init_state: State | None = None) -> list[Step]:
    """Replay ``actions`` from ``init_state`` (default: the model's first initial
    state) and return the path as Steps, the initial state first.

    Each action must be enabled (equal to one of ``model.actions(state)``) in the
    state it is taken from; otherwise ModelError names the first one that is not.
    """
    if init_state is None:
        inits = list(model.init_states())
        if not inits:
            raise ModelError("replay: the model has no initial state")
        init_state = inits[0]
    fp = fingerprint_fn(model)
    state = init_state
    path = [Step(None, state, fp(state))]
    for depth, act in enumerate(actions):
        enabled = list(model.actions(state))
        if act not in enabled:
            raise ModelError(
                f"replay: action {act} is not enabled at depth {depth} in state {describe_state(model, state)}; "
                f"enabled: {', '.join(str(a) for a in enabled) or 'none'}"
            )
        state = model.next_state(state, act)
        path.append(Step(act, state, fp(state)))
    return path
