"""Conformance: does an implementation behave as the model says, step by step?

A model family may name an *implementation adapter* (``ModelFamily.implementation``,
``"module:attribute"``).  The harness drives the model and the adapter with the same
actions, and after every step compares the model's *observation* of its state with
the implementation's.  It knows nothing of any particular family: the adapter does
the mapping from actions to the implementation's operations, and the two ``observe``
functions are the abstraction function.

The contract between the harness and an adapter::

    class Implementation:            # what a family's implementation adapter provides
        def __init__(self, config: Mapping[str, Any]) -> None   # a fresh system in the model's initial state (config = the model's full config dict, as in traces)
        def enabled(self, act: checker.model.Action) -> bool      # can the implementation perform this action now?
        def apply(self, act: checker.model.Action) -> None        # perform it (raise on internal failure)
        def observe(self) -> Any                                  # the abstraction function: plain data (dict / list / int / str / bool / None)
        ignored: Mapping[str, str] = {}                           # implementation fields the projection leaves out, and why

    Model side: Model.observe(state) -> Any, new optional contract method in checker/model.py;
    its default is checker.conform.plain(state): NamedTuple → dict by field name,
    tuple/list → list, recursively. A family names its adapter with an optional attribute
    ModelFamily.implementation: str | None = None ("module:attribute"; the harness imports
    it, spec/ never imports impl/).

Observations are compared as JSON-canonical data: the key order of a dict does not
matter, a tuple equals a list, but ``True`` is not ``1``.

>>> from typing import NamedTuple
>>> class P(NamedTuple):
...     leader: int
...     isr: tuple
>>> plain((P(1, (1, 2)), None))
[{'leader': 1, 'isr': [1, 2]}, None]
"""

from __future__ import annotations

from typing import Any, Mapping


def plain(state: Any) -> Any:
    """The default observation of a model state: NamedTuples become dicts by field
    name, tuples and lists become lists, recursively; scalars stay as they are."""
    if isinstance(state, tuple) and hasattr(state, "_fields"):
        return {f: plain(v) for f, v in zip(state._fields, state)}
    if isinstance(state, (tuple, list)):
        return [plain(v) for v in state]
    if isinstance(state, Mapping):
        return {k: plain(v) for k, v in state.items()}
    return state
