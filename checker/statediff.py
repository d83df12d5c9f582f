"""Differences between two ``describe()`` views, on flattened keys (dotted names and
``[i]`` indices), lists aligned by value so that an element added to a list shows as one
change rather than as every element after it moving::

    >>> flatten({"zk": {"partition": [{"leader": 1, "isr": [1, 2]}]}, "controller": 0})
    {'zk.partition[0].leader': 1, 'zk.partition[0].isr[0]': 1, 'zk.partition[0].isr[1]': 2, 'controller': 0}
    >>> diff({"zk": {"partition": [{"leader": 1}]}}, {"zk": {"partition": [{"leader": 2}]}})
    [('zk.partition[0].leader', 1, 2)]
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence



class _Absent:
    """Marks a key that exists on one side of a diff only."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT = _Absent()


class _Nested:
    """Marks a key whose value is a container on that side (its elements are listed)."""

    def __repr__(self) -> str:
        return "{...}"


NESTED = _Nested()


def jsonable(v: Any) -> Any:
    """``v`` with tuples as lists and mapping keys as strings, what JSON can hold."""
    if isinstance(v, Mapping):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


# --------------------------------------------------------------------------- diff

def flatten(view: Any, prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts / lists / tuples into ``{"a.b[0].c": scalar}``, in order.
    Empty containers stay as leaves so that they show up in diffs."""
    out: dict[str, Any] = {}

    def walk(v: Any, key: str) -> None:
        if isinstance(v, Mapping) and v:
            for k, sub in v.items():
                walk(sub, f"{key}.{k}" if key else str(k))
        elif isinstance(v, (list, tuple)) and v:
            for i, sub in enumerate(v):
                walk(sub, f"{key}[{i}]")
        else:
            if isinstance(v, tuple):
                v = []
            out[key] = v

    walk(view, prefix)
    return out


def is_container(v: Any) -> bool:
    return isinstance(v, (Mapping, list, tuple))


def children(v: Any, key: str) -> dict[str, Any]:
    """``{child key: child value}`` of a container, keys spelled as ``flatten`` does."""
    if isinstance(v, Mapping):
        return {(f"{key}.{k}" if key else str(k)): sub for k, sub in v.items()}
    return {f"{key}[{i}]": sub for i, sub in enumerate(v)}


def _merge_order(before: Sequence[str], after: Sequence[str]) -> list[str]:
    """``before``'s keys in order, with each key only ``after`` has placed after the
    nearest key before it that both have (and after the removed keys that follow it)."""
    bset, aset = set(before), set(after)
    follow: dict[str | None, list[str]] = {}
    anchor: str | None = None
    for k in after:
        if k in bset:
            anchor = k
        else:
            follow.setdefault(anchor, []).append(k)
    order: list[str] = []
    pending = follow.get(None, [])
    for k in before:
        if k in aset:
            order.extend(pending)
            pending = follow.get(k, [])
        order.append(k)
    order.extend(pending)
    return order


def diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """``[(key, old, new)]`` for every value that differs, keyed like ``flatten``; a
    missing side is ``ABSENT``.

    Where both sides are containers the diff goes inside them, so a changed leaf is
    one entry.  Where a container appears, disappears or replaces a scalar (a
    partition state ``None`` that becomes ``{leader: 0, ...}``) the entry holds the
    whole container, so it reads as one change rather than one line per element.
    Keys come in ``before``'s order, and a key only ``after`` has comes where
    ``after`` puts it: after the nearest common key before it."""
    out: list[tuple[str, Any, Any]] = []

    def walk(key: str, old: Any, new: Any) -> None:
        if isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
            seq(key, old, new)
        elif is_container(old) and is_container(new) and (old or new):
            cb, ca = children(old, key), children(new, key)
            for k in _merge_order(list(cb), list(ca)):
                walk(k, cb.get(k, ABSENT), ca.get(k, ABSENT))
        elif not same_value(old, new):
            out.append((key, old, new))

    def seq(key: str, old: Sequence[Any], new: Sequence[Any]) -> None:
        # Lists are aligned first, so that one element leaving a sorted list shows as
        # that element removed, not as every later element shifting by one.
        import difflib
        ka = [json.dumps(jsonable(x), sort_keys=True) for x in old]
        kb = [json.dumps(jsonable(x), sort_keys=True) for x in new]
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes():
            if op == "equal":
                continue
            if op == "replace" and i2 - i1 == j2 - j1:
                for i, j in zip(range(i1, i2), range(j1, j2)):
                    walk(f"{key}[{j}]", old[i], new[j])
                continue
            for i in range(i1, i2):
                out.append((f"{key}[{i}]", old[i], ABSENT))
            for j in range(j1, j2):
                out.append((f"{key}[{j}]", ABSENT, new[j]))

    walk("", before, after)
    return out


def same_value(a: Any, b: Any) -> bool:
    """Equal as a user reads a diff: a bool is not the int 1, a tuple is the list it prints as."""
    # True == 1 in Python, but a bool turning into an int is a change worth showing.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if is_container(a) or is_container(b):
        return is_container(a) and is_container(b) and jsonable(a) == jsonable(b)
    return a == b
