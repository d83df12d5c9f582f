"""What an engine returns: verdict, violations with their paths, statistics.

Shared by every engine (local BFS, Spark) so that the CLI, the trace writer and the
tests compare engines field by field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checker.coverage import Coverage
from checker.model import Action, State

OK = "ok"                # exhaustive, every property holds, every witness reached
VIOLATED = "violated"    # an always property failed, a deadlock, or a witness unreached
BOUNDED = "bounded"      # a depth/state bound cut the search short and nothing failed

DEADLOCK = "Deadlock"    # pseudo-property name of a deadlock report

# What stopped a search early that is not a bound of the state space (Stats.stopped_by).
TIME_LIMIT = "time limit"     # Settings.time_limit ran out
INTERRUPTED = "interrupted"   # Ctrl-C


@dataclass
class Step:
    """One step of a path: the action taken (None for the initial state) and the
    state it led to, with that state's fingerprint."""

    action: Action | None
    state: State
    fingerprint: int


@dataclass
class Violation:
    """A failed property.  ``path`` is the shortest path from an initial state;
    empty for a ``sometimes`` witness that was never reached.  For an
    ``eventually`` property the path is a lasso: ``path[loop_start:]`` is a loop
    whose last state is ``path[loop_start]``'s (a loop of no action: the
    behaviour stops there, no fair action being enabled)."""

    property: str
    kind: str            # "always", "sometimes", "eventually" or "deadlock"
    path: list[Step] = field(default_factory=list)
    message: str = ""
    loop_start: int | None = None


@dataclass
class Stats:
    distinct: int = 0
    generated: int = 0
    depth: int = 0                   # number of BFS levels fully or partly explored - 1
    seconds: float = 0.0
    states_per_second: float = 0.0   # distinct states per second
    peak_memory_bytes: int = 0
    action_counts: dict[str, int] = field(default_factory=dict)
    witnesses: dict[str, int | None] = field(default_factory=dict)  # name -> depth first reached, or None
    complete: bool = True            # False when a bound stopped the search
    # What a run report reads (checker.report); not part of as_dict, which engines compare.
    coverage: Coverage | None = None  # per action: enabled, taken, new (checker.coverage)
    levels: list = field(default_factory=list)  # per BFS level: level, frontier, new, distinct, seconds
    stopped_by: str | None = None    # TIME_LIMIT or INTERRUPTED; not compared between engines

    def as_dict(self) -> dict[str, Any]:
        return {
            "distinct": self.distinct,
            "generated": self.generated,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "states_per_second": round(self.states_per_second, 1),
            "peak_memory_bytes": self.peak_memory_bytes,
            "action_counts": dict(sorted(self.action_counts.items())),
            "witnesses": dict(sorted(self.witnesses.items())),
            "complete": self.complete,
        }


@dataclass
class CheckResult:
    verdict: str
    violations: list[Violation]
    stats: Stats
