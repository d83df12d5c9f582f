"""A model seen from one of its states, by some of its actions only.

Conformance asks the model two questions that are searches rather than walks:
which quiet states the implementation's own actions reach from a run's last
state (settling), and which is the shortest diverging path from a divergence's
initial state (shrinking).  Both run the search core (:class:`checker.search.Search`)
on this view of the model, so they visit states in the engines' order,
fingerprint them the engines' way and word a model error the engines' way,
instead of keeping breadth-first loops of their own.

>>> from checker.model import Model, action
>>> from checker.search import Search, Settings
>>> class Counter(Model):
...     def init_states(self): return [0]
...     def actions(self, s): return [action("Inc"), action("Reset")] if s < 3 else [action("Reset")]
...     def next_state(self, s, a): return s + 1 if a.name == "Inc" else 0
>>> view = from_state(Counter(), 1, keep={"Inc"})
>>> view.init_states(), view.actions(1), view.actions(3)
([1], [Action(name='Inc', args=())], [])
>>> Search(view, [], Settings(check_deadlock=False)).run().stats.distinct
3
"""

from __future__ import annotations

from typing import Any, Collection, Iterable, Mapping

from checker.fingerprint import exact_fingerprint_fn, repr_encoded
from checker.model import Action, Model, State

__all__ = ["FromState", "from_state"]


class FromState(Model):
    """``model`` whose one initial state is ``start`` and whose actions are those
    of ``model`` named in ``keep`` (all of them when ``keep`` is None).  It keeps the
    model's encoding (or exact fingerprint), its ``equal_states_encode_equally`` promise and its
    ``describe``, so that its states have the model's fingerprints and read as
    the model's in an error; it does not keep the model's boundary or
    terminal states, which are the search's business, not this view's."""

    def __init__(self, model: Model, start: State, keep: Collection[str] | None = None) -> None:
        self.model, self.start, self.keep = model, start, keep
        self.name = getattr(model, "name", type(model).__name__)
        if getattr(model, "equal_states_encode_equally", False):
            self.equal_states_encode_equally = True
        exact = exact_fingerprint_fn(model)
        if exact is not None:
            self.exact_fingerprint = exact

    def init_states(self) -> Iterable[State]:
        return [self.start]

    def actions(self, state: State) -> Iterable[Action]:
        acts = self.model.actions(state)
        keep = self.keep
        return acts if keep is None else [a for a in acts if a.name in keep]

    def next_state(self, state: State, act: Action) -> State:
        return self.model.next_state(state, act)

    def describe(self, state: State) -> Mapping[str, Any]:
        return self.model.describe(state)


class _EncodedFromState(FromState):
    """For a model with an ``encode`` of its own (the default's ``repr`` is inherited)."""

    def encode(self, state: State) -> bytes:
        return self.model.encode(state)


def from_state(model: Model, start: State, keep: Collection[str] | None = None) -> FromState:
    """The view of ``model`` from ``start`` by the actions named in ``keep``."""
    cls = FromState if repr_encoded(model) else _EncodedFromState
    return cls(model, start, keep)
