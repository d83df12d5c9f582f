"""TLC-style action coverage: which actions a search enabled, took, and found new states with.

For each action name:
- ``enabled``: the expanded states in which at least one instance of the action was
  enabled;
- ``taken``: the transitions the action labels (every instance, in every expanded state:
  a breadth-first search takes every enabled action);
- ``new``: the transitions that led to a state seen for the first time.

An action that is never enabled is the first sign of a vacuous check: the invariants
cannot fail through it because the search never went there.  A model's vocabulary
(``Model.action_names()``, or its family's ``action_docs()``) says which actions exist;
the ones that are not in ``enabled`` are listed as never enabled.

The engines count into three plain dicts in their inner loop (a dict increment is the
cheapest thing Python can do there) and hand them over as a :class:`Coverage`:

    >>> c = Coverage(enabled={"Inc": 3}, taken={"Inc": 4}, new={"Inc": 3})
    >>> c.rows(["Dec", "Inc"])
    [('Dec', 0, 0, 0), ('Inc', 3, 4, 3)]
    >>> c.never_enabled(["Dec", "Inc"])
    ['Dec']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence


@dataclass
class Coverage:
    enabled: dict[str, int] | None = field(default_factory=dict)   # None: the engine did not count it
    taken: dict[str, int] = field(default_factory=dict)
    new: dict[str, int] | None = field(default_factory=dict)       # None: the engine did not count it

    def names(self, vocabulary: Iterable[str] = ()) -> list[str]:
        return sorted(set(vocabulary) | set(self.enabled or ()) | set(self.taken))

    def rows(self, vocabulary: Iterable[str] = ()) -> list[tuple[str, int | None, int, int | None]]:
        """``(name, enabled, taken, new)`` for every action of the vocabulary and every
        action seen, sorted by name; None where the engine did not count it."""
        return [(n, None if self.enabled is None else self.enabled.get(n, 0), self.taken.get(n, 0),
                 None if self.new is None else self.new.get(n, 0)) for n in self.names(vocabulary)]

    def never_enabled(self, vocabulary: Sequence[str]) -> list[str]:
        """Actions of the vocabulary enabled in no expanded state.  A breadth-first
        search takes every action it finds enabled, so without ``enabled`` counts an
        action never taken is one never enabled."""
        seen = self.enabled if self.enabled is not None else self.taken
        return sorted(n for n in set(vocabulary) if not seen.get(n))

    def as_dict(self, vocabulary: Iterable[str] = ()) -> dict:
        vocab = list(vocabulary)
        return {"actions": [{"action": n, "enabled": e, "taken": t, "new": w} for n, e, t, w in self.rows(vocab)],
                "never_enabled": self.never_enabled(vocab)}


def vocabulary(model: Any, family: Any) -> list[str]:
    """The action names a run can be judged against: the model's ``action_names()``,
    else its family's ``action_docs()``, else none (only the actions seen count)."""
    names = None
    hook = getattr(model, "action_names", None)
    if callable(hook):
        names = hook()
    if names is None:
        docs = getattr(family, "action_docs", None)
        names = list(docs()) if callable(docs) else []
    return sorted(names)


def coverage_of(result: Any) -> Coverage:
    """The result's coverage; a result without it (a Spark run resumed from a
    checkpoint that did not keep it) gives its action counts as ``taken`` and
    nothing else."""
    st = result.stats
    if st.coverage is not None:
        return st.coverage
    return Coverage(enabled=None, taken=dict(st.action_counts), new=None)


def levels_of(result: Any) -> list[Mapping[str, Any]]:
    if result.stats.levels:
        return list(result.stats.levels)
    engine = getattr(result, "engine", None) or {}
    return list(engine.get("levels") or [])


def never_enabled_line(result: Any, vocab: Sequence[str]) -> str | None:
    """The terminal's coverage line, or None when the model names no actions."""
    if not vocab:
        return None
    never = coverage_of(result).never_enabled(vocab)
    if not never:
        return f"coverage: every one of the model's {len(vocab)} actions was enabled"
    when = "" if result.stats.complete else " before the search stopped"
    return f"coverage: never enabled{when} ({len(never)} of {len(vocab)}): {', '.join(never)}"
