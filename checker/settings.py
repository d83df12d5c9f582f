"""The settings of a search: how far and how it goes, one object for both engines.

:class:`Settings` is what ``kmc check``'s bounds and flags become, validated once
(``UsageError`` for a bound that makes no sense); the local engine
(:class:`checker.search.Search`, which exports it with the rest of its API) and the
Spark engine (``checker.spark.engine.check``) read the same fields, except that Spark
reads ``time_limit`` after each level only and leaves ``collect_garbage`` to its tasks
(each freezes and stops the collector around its own work).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TextIO

from checker.errors import UsageError

__all__ = ["Settings"]


@dataclass(frozen=True)
class Settings:
    """How far and how a search goes; the same object for both engines.

    ``max_depth``: states at that depth are checked but not expanded;
    ``max_states``: stop when a new state would be stored beyond that many;
    ``keep_going``: go on after a violation (report every violated property);
    ``check_deadlock``: report a non-terminal state with no enabled action;
    ``progress``: where a progress line goes every ``progress_interval`` seconds;
    ``time_limit``: stop, as a bound does, once this many seconds have passed
    (the clock is read every 1,000 states, so the counts then vary from run to
    run: a wall-clock bound, like TLC's, for a search that cannot finish);
    ``collect_garbage``: leave the cyclic garbage collector on during the search
    (off by default: see :mod:`checker.search`).
    """

    max_depth: int | None = None
    max_states: int | None = None
    keep_going: bool = False
    check_deadlock: bool = True
    progress: TextIO | None = None
    progress_interval: float = 2.0
    collect_garbage: bool = False
    time_limit: float | None = None

    def validate(self) -> "Settings":
        """UsageError on bounds that make no sense; returns self."""
        d, n = self.max_depth, self.max_states
        if d is not None and (isinstance(d, bool) or not isinstance(d, int) or d < 0):
            raise UsageError(f"max_depth must be a non-negative integer, not {d!r}")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise UsageError(f"max_states must be a positive integer, not {n!r}")
        t = self.time_limit
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0):
            raise UsageError(f"time_limit must be a positive number of seconds, not {t!r}")
        return self
