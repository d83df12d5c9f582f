"""Observations compared as data: the text two observations are compared by, and
the field-by-field difference a divergence shows.

Used by the conformance harness (:mod:`checker.conform`) and the divergence
reports (:mod:`checker.divergence`); an observation is plain data (dict / list /
int / str / bool / None), which :func:`canonical` checks.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from checker.statediff import ABSENT, same_value

__all__ = ["canonical", "view", "diff"]


class _NotPlain(TypeError):
    pass


def _refuse(v: Any) -> Any:
    raise _NotPlain(f"{type(v).__name__} {v!r:.60} is not plain data (dict / list / int / str / bool / None)")


def canonical(obs: Any) -> str:
    """The text two observations are compared by: JSON with sorted keys, so that a
    dict's key order does not matter and ``True`` stays distinct from ``1``."""
    return json.dumps(obs, sort_keys=True, default=_refuse, separators=(",", ":"))


def view(obs: Any) -> Any:
    """An observation as the JSON data ``diff`` walks (dict keys as strings)."""
    v = json.loads(canonical(obs))
    return v if isinstance(v, dict) else {"value": v}


def diff(before: Any, after: Any) -> list[tuple[str, Any, Any]]:
    """``[(key, old, new)]`` field by field, keys spelled as ``checker.statediff.flatten``
    spells them.  Unlike ``checker.statediff.diff`` it does not align lists: in an
    observation a list is usually positional (the log of replica 1 is ``logs[1]``),
    so lists of one length are compared index by index and lists of different
    lengths are shown whole (``isr: [0, 1] -> [0]``).

    >>> diff({"logs": [[], []], "hw": 0}, {"logs": [[1], []], "hw": 0, "x": 1})
    [('logs[0]', [], [1]), ('x', <absent>, 1)]
    """
    out: list[tuple[str, Any, Any]] = []

    def walk(key: str, a: Any, b: Any) -> None:
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for k in [*a, *(k for k in b if k not in a)]:
                walk(f"{key}.{k}" if key else str(k), a.get(k, ABSENT), b.get(k, ABSENT))
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b)):
                walk(f"{key}[{i}]", x, y)
        elif not same_value(a, b):
            out.append((key, a, b))

    walk("", before, after)
    return out
