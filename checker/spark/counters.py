"""What the Spark driver knows of a search between two levels.

The partitions hold the visited set and the frontier; the driver holds the
search's counters: the level, the distinct and generated counts, the action and
coverage counts, the violations found, the witnesses reached, the properties
still checked, what is left of the contract-check sample.  They move between the
driver's search core (checker.search, which runs the narrow levels) and the
partitions' levels, and they are what a checkpoint keeps besides the partitions
(``state``/``restore``: JSON).
"""

from __future__ import annotations

import sys

from checker.coverage import Coverage
from checker.model import Property
from checker.result import DEADLOCK, Stats
from checker.search import Search, peak_memory


class Counters:
    """The driver's counters of one search over the properties ``props``."""

    def __init__(self, props: list[Property]) -> None:
        self.props = props
        self.index = {p.name: i for i, p in enumerate(props)}
        self.level = 0
        self.stored_at_level = sys.maxsize
        self.distinct = 0
        self.generated = 0
        self.counts: dict[str, int] = {}
        # Coverage (checker.coverage): None when a resumed checkpoint did not keep it.
        self.enabled_counts: dict[str, int] | None = {}
        self.new_counts: dict[str, int] | None = {}
        self.found: list[tuple] = []
        self.witnesses: dict[str, int | None] = {}
        self.deadlock_found = False
        self.active_props: list[int] = []
        self.active_steps: list[int] = []
        self.active_wits: list[int] = []
        self.sample_left = 0
        self.frontier_size = 0
        self.cut = False
        self.stopped = False
        self.stopped_by: str | None = None   # checker.result.TIME_LIMIT when the time limit ran out
        self.prior_seconds = 0.0
        self.levels: list[dict] = []
        self.visited_bytes = 0
        self.visited_count = 0

    def _checks(self, indices: list[int]) -> list:
        return [(self.props[i].name, self.props[i].predicate) for i in indices]

    def adopt(self, s: Search) -> None:
        """Take the counters of the core's search ``s`` (after it ran levels)."""
        self.level = s.level
        self.stored_at_level = s.stored_at_level
        self.distinct = len(s.visited)
        self.counts = dict(s.counts)
        self.generated = sum(self.counts.values())
        if self.enabled_counts is not None:
            self.enabled_counts, self.new_counts = dict(s.enabled_counts), dict(s.new_counts)
        self.cut, self.stopped = s.cut, s.stopped
        self.found = list(s.found)
        self.witnesses = dict(s.witnesses)
        self.deadlock_found = DEADLOCK in s.found_names
        self.active_props = [self.index[name] for name, _ in s.state_checks]
        self.active_steps = [self.index[name] for name, _ in s.step_checks]
        self.active_wits = [self.index[name] for name, _ in s.wit_checks]
        self.sample_left = s.sample_left

    def seed(self, s: Search) -> None:
        """Give the core's search ``s`` these counters, so that it goes on from here."""
        s.counts = dict(self.counts)
        if self.enabled_counts is not None:
            s.enabled_counts, s.new_counts = dict(self.enabled_counts), dict(self.new_counts)
        s.found = list(self.found)
        s.found_names = {r[0] for r in self.found}
        s.witnesses = dict(self.witnesses)
        s.state_checks = self._checks(self.active_props)
        s.step_checks = self._checks(self.active_steps)
        s.wit_checks = self._checks(self.active_wits)
        s.sample_left = self.sample_left

    def record(self, report: list, reached: list[str], used: int) -> None:
        """A level's found records (in the order the local engine finds them), the
        names of the witnesses it reached and the sample it used: what is found is
        no longer checked."""
        for name in reached:
            if self.witnesses.get(name) is None:
                self.witnesses[name] = self.level + 1
        known = {f[0] for f in self.found}
        for rec in report:
            if rec[0] not in known:
                self.found.append(rec)
                known.add(rec[0])
        if DEADLOCK in known:
            self.deadlock_found = True
        self.active_props = [i for i in self.active_props if self.props[i].name not in known]
        self.active_steps = [i for i in self.active_steps if self.props[i].name not in known]
        self.active_wits = [i for i in self.active_wits if self.witnesses.get(self.props[i].name) is None]
        self.sample_left = max(0, self.sample_left - used)

    def add_counts(self, gen: int, counts: dict) -> None:
        self.generated += gen
        for k, v in counts.items():
            self.counts[k] = self.counts.get(k, 0) + v

    def add_coverage(self, enabled: list, new: list) -> None:
        """Add the level's per-task coverage counts (None: not counted) in."""
        for total, parts in (("enabled_counts", enabled), ("new_counts", new)):
            acc = getattr(self, total)
            if acc is None or any(c is None for c in parts):
                setattr(self, total, None)
                continue
            for c in parts:
                for k, v in c.items():
                    acc[k] = acc.get(k, 0) + v

    def stats(self, seconds: float) -> Stats:
        """The search's Stats (checker.result), as the local engine gives them."""
        complete = not (self.cut or self.stopped)
        return Stats(
            distinct=self.distinct,
            generated=self.generated,
            depth=self.level + (1 if self.distinct > self.stored_at_level else 0),
            seconds=seconds,
            states_per_second=self.distinct / seconds if seconds > 0 else 0.0,
            peak_memory_bytes=peak_memory(),
            action_counts=dict(self.counts),
            witnesses=dict(self.witnesses),
            complete=complete,
            coverage=Coverage(None if self.enabled_counts is None else dict(self.enabled_counts), dict(self.counts),
                              None if self.new_counts is None else dict(self.new_counts)),
            stopped_by=self.stopped_by,
        )

    def state(self, identity: dict, seconds: float) -> dict:
        """The counters as a checkpoint keeps them (JSON)."""
        return {
            "identity": identity,
            "level": self.level,
            "distinct": self.distinct,
            "generated": self.generated,
            "counts": self.counts,
            "enabled_counts": self.enabled_counts,
            "new_counts": self.new_counts,
            "witnesses": self.witnesses,
            "found": [[r[0], r[1], r[2], list(r[3]) if r[3] is not None else None, r[4]] for r in self.found],
            "deadlock_found": self.deadlock_found,
            "active_props": self.active_props,
            "active_steps": self.active_steps,
            "active_wits": self.active_wits,
            "sample_left": self.sample_left,
            "frontier_size": self.frontier_size,
            "seconds": seconds,
            "levels": self.levels,
            "visited_bytes": self.visited_bytes,
            "visited_count": self.visited_count,
        }

    def restore(self, st: dict) -> None:
        """The counters of a checkpoint's ``state``."""
        self.level = st["level"]
        self.stored_at_level = sys.maxsize
        self.distinct = st["distinct"]
        self.generated = st["generated"]
        self.counts = dict(st["counts"])
        # A checkpoint written before coverage was kept: the report says n/a.
        self.enabled_counts = dict(st["enabled_counts"]) if st.get("enabled_counts") is not None else None
        self.new_counts = dict(st["new_counts"]) if st.get("new_counts") is not None else None
        self.witnesses = dict(st["witnesses"])
        self.found = [(r[0], r[1], r[2], tuple(r[3]) if r[3] is not None else None, r[4]) for r in st["found"]]
        self.deadlock_found = st["deadlock_found"]
        self.active_props = list(st["active_props"])
        self.active_steps = list(st["active_steps"])
        self.active_wits = list(st["active_wits"])
        self.sample_left = st["sample_left"]
        self.frontier_size = st["frontier_size"]
        self.prior_seconds = st["seconds"]
        self.levels = list(st["levels"])
        self.visited_bytes = st.get("visited_bytes", 0)
        self.visited_count = st.get("visited_count", 0)
