"""What a search knows between two states: the one place for its bookkeeping.

A :class:`Ledger` holds the counts (transitions per action, and coverage), the
violations found in the order they were found, the witnesses' depths, the
properties still checked, what is left of the contract sample, the level being
expanded and why the search stopped.  The search core (:class:`checker.search.Search`)
writes into one as it goes; the Spark driver (``checker.spark.engine``) hands
the same ledger to every core search it runs on its narrow levels and adds its
partitions' levels into it between them, and its checkpoints keep it as JSON
(:meth:`Ledger.to_json`, :meth:`Ledger.from_json`).  So both engines keep their
books in one object, with one set of rules for what a found violation stops
checking: TLC's ``TLCGlobals``/``StatePool`` counters and Stateright's
``discoveries`` play this part there.

>>> from checker.model import always, sometimes
>>> led = Ledger([always("Small", lambda s: s < 3), sometimes("Big", lambda s: s > 5)])
>>> [name for name, _ in led.state_checks], led.witnesses
(['Small'], {'Big': None})
>>> led.record_level([("Small", "always", 7, None, "Small does not hold")], ["Big"], used=10)
>>> led.found_names, led.state_checks, led.witnesses, led.sample_left
({'Small'}, [], {'Big': 1}, 990)
>>> Ledger.from_json(led.props, led.to_json()).found == led.found
True
"""

from __future__ import annotations

import resource
import sys
from typing import Sequence

from checker.coverage import Coverage
from checker.errors import ModelError
from checker.model import ALWAYS, SOMETIMES, Property
from checker.result import DEADLOCK, Stats, Violation

__all__ = ["Ledger", "SAMPLE_SIZE", "peak_memory", "unreached_witnesses"]

SAMPLE_SIZE = 1000      # successors validated (types, determinism) at the start of a search


def peak_memory() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024  # bytes on macOS, KiB on Linux


def unreached_witnesses(witnesses: dict) -> list[Violation]:
    """A ``sometimes`` property never reached by a complete search is reported as a
    violation: without its witness the always-properties may hold vacuously.  Both
    engines end their searches with it."""
    return [Violation(property=name, kind=SOMETIMES, path=[],
                      message="witness never reached: the always-properties may hold vacuously")
            for name, at in witnesses.items() if at is None]


class Ledger:
    """The books of one search over ``props`` (validated here: unique names, none
    called ``deadlock``).  The active checks are ``(name, predicate)`` lists; a
    property leaves its list once it has failed (``always``) or been witnessed
    (``sometimes``).  ``found`` holds ``(name, kind, fp, step-extra, message)``
    records in the order they were found; ``found_names`` their names."""

    def __init__(self, props: Sequence[Property]) -> None:
        seen: set[str] = set()
        for p in props:
            if not isinstance(p, Property):
                raise ModelError(f"properties must be checker.model.Property objects, got {type(p).__name__}: {p!r}")
            if p.name in seen or p.name == DEADLOCK:
                raise ModelError(f"two properties are named {p.name!r} (or it clashes with {DEADLOCK!r}); names must be unique")
            seen.add(p.name)
        self.props = list(props)
        self.by_name = {p.name: p for p in props}
        self.index = {p.name: i for i, p in enumerate(props)}
        self.state_checks = [(p.name, p.predicate) for p in props if p.kind == ALWAYS and not p.step]
        self.step_checks = [(p.name, p.predicate) for p in props if p.kind == ALWAYS and p.step]
        self.wit_checks = [(p.name, p.predicate) for p in props if p.kind == SOMETIMES]
        self.witnesses: dict[str, int | None] = {p.name: None for p in props if p.kind == SOMETIMES}
        self.counts: dict[str, int] = {}
        # Coverage (checker.coverage): per action name, the expanded states that enable it
        # and the transitions that led to a new state; ``counts`` is the transitions taken.
        # None when a resumed Spark checkpoint did not keep them (the report says n/a).
        self.enabled_counts: dict[str, int] | None = {}
        self.new_counts: dict[str, int] | None = {}
        self.found: list[tuple] = []
        self.found_names: set[str] = set()
        self.levels: list[dict] = []          # per BFS level: frontier, new, distinct, seconds
        self.level = 0                        # depth of the level being expanded
        self.stored_at_level = sys.maxsize    # distinct states stored when the level began
        self.sample_left = SAMPLE_SIZE        # successors still to validate
        self.cut = False                      # a bound cut the search
        self.stopped = False                  # stopped at the first violation
        self.stopped_by: str | None = None    # TIME_LIMIT or INTERRUPTED (Stats.stopped_by)

    # -- what the checks are now ----------------------------------------------------------

    def message(self, name: str, what: str) -> str:
        rationale = self.by_name[name].rationale
        return f"{name} {what}" + (f": {rationale}" if rationale else "")

    @property
    def deadlock_found(self) -> bool:
        return DEADLOCK in self.found_names

    def active(self, checks: list) -> list[int]:
        """The indices in ``props`` of the checks ``checks`` (what a Spark task is told)."""
        return [self.index[name] for name, _ in checks]

    def checks(self, indices: Sequence[int]) -> list:
        return [(self.props[i].name, self.props[i].predicate) for i in indices]

    def add_found(self, rec: tuple) -> bool:
        """Record a violation unless one of that name is known; True if it was new."""
        if rec[0] in self.found_names:
            return False
        self.found_names.add(rec[0])
        self.found.append(rec)
        return True

    def record_level(self, report: list, reached: list[str], used: int) -> None:
        """A level's found records (in the order the local engine finds them), the
        names of the witnesses it reached and the sample it used: what is found is
        no longer checked."""
        for name in reached:
            if self.witnesses.get(name) is None:
                self.witnesses[name] = self.level + 1
        for rec in report:
            self.add_found(rec)
        known = self.found_names
        self.state_checks = [c for c in self.state_checks if c[0] not in known]
        self.step_checks = [c for c in self.step_checks if c[0] not in known]
        self.wit_checks = [c for c in self.wit_checks if self.witnesses.get(c[0]) is None]
        self.sample_left = max(0, self.sample_left - used)

    # -- counts ---------------------------------------------------------------------------

    def add_counts(self, counts: dict) -> None:
        for k, v in counts.items():
            self.counts[k] = self.counts.get(k, 0) + v

    def add_coverage(self, enabled: list, new: list) -> None:
        """Add per-task coverage counts (None: not counted) in."""
        for total, parts in (("enabled_counts", enabled), ("new_counts", new)):
            acc = getattr(self, total)
            if acc is None or any(c is None for c in parts):
                setattr(self, total, None)
                continue
            for c in parts:
                for k, v in c.items():
                    acc[k] = acc.get(k, 0) + v

    def stats(self, distinct: int, seconds: float, levels: list | None = None) -> Stats:
        """The search's Stats (checker.result) with ``distinct`` states stored; a
        state stored after the current level began is one level deeper."""
        return Stats(
            distinct=distinct,
            generated=sum(self.counts.values()),
            depth=self.level + (1 if distinct > self.stored_at_level else 0),
            seconds=seconds,
            states_per_second=distinct / seconds if seconds > 0 else 0.0,
            peak_memory_bytes=peak_memory(),
            action_counts=dict(self.counts),
            witnesses=dict(self.witnesses),
            complete=not (self.cut or self.stopped),
            coverage=Coverage(None if self.enabled_counts is None else dict(self.enabled_counts), dict(self.counts),
                              None if self.new_counts is None else dict(self.new_counts)),
            levels=list(levels) if levels is not None else [],
            stopped_by=self.stopped_by,
        )

    # -- as a checkpoint keeps it -----------------------------------------------------------

    def to_json(self) -> dict:
        return {
            "level": self.level,
            "counts": self.counts,
            "enabled_counts": self.enabled_counts,
            "new_counts": self.new_counts,
            "witnesses": self.witnesses,
            "found": [[r[0], r[1], r[2], list(r[3]) if r[3] is not None else None, r[4]] for r in self.found],
            "deadlock_found": self.deadlock_found,
            "active_props": self.active(self.state_checks),
            "active_steps": self.active(self.step_checks),
            "active_wits": self.active(self.wit_checks),
            "sample_left": self.sample_left,
            "levels": self.levels,
        }

    def restore(self, st: dict) -> None:
        """The books of a :meth:`to_json` document (a checkpoint's)."""
        self.level = st["level"]
        self.stored_at_level = sys.maxsize
        self.counts = dict(st["counts"])
        self.enabled_counts = dict(st["enabled_counts"]) if st.get("enabled_counts") is not None else None
        self.new_counts = dict(st["new_counts"]) if st.get("new_counts") is not None else None
        self.witnesses = dict(st["witnesses"])
        self.found = [(r[0], r[1], r[2], tuple(r[3]) if r[3] is not None else None, r[4]) for r in st["found"]]
        self.found_names = {r[0] for r in self.found}
        self.state_checks = self.checks(st["active_props"])
        self.step_checks = self.checks(st["active_steps"])
        self.wit_checks = self.checks(st["active_wits"])
        self.sample_left = st["sample_left"]
        self.levels = list(st["levels"])

    @classmethod
    def from_json(cls, props: Sequence[Property], st: dict) -> "Ledger":
        led = cls(props)
        led.restore(st)
        return led
