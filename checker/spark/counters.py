"""What the Spark driver knows of a search between two levels.

The partitions hold the visited set and the frontier; the driver holds the
search's books, a :class:`checker.ledger.Ledger`: the level, the action and
coverage counts, the violations found, the witnesses reached, the properties
still checked, what is left of the contract-check sample.  The driver's search
core (checker.search, which runs the narrow levels) writes into this very
ledger, and the partitions' levels are added into it between them; a
checkpoint keeps it besides the partitions (``state``/``restore``: JSON).  What
only the driver counts is here: the distinct states (the partitions' visited
sets, summed), the frontier's size, the seconds of earlier runs, the bytes the
visited sets take.
"""

from __future__ import annotations

from checker.ledger import Ledger
from checker.model import Property


class Counters(Ledger):
    """The driver's books of one search over the properties ``props``."""

    def __init__(self, props: list[Property]) -> None:
        super().__init__(props)
        self.distinct = 0
        self.frontier_size = 0
        self.prior_seconds = 0.0
        self.visited_bytes = 0
        self.visited_count = 0

    def state(self, identity: dict, seconds: float) -> dict:
        """The counters as a checkpoint keeps them (JSON)."""
        books = self.to_json()
        level, levels = books.pop("level"), books.pop("levels")
        return {
            "identity": identity,
            "level": level,
            "distinct": self.distinct,
            "generated": sum(self.counts.values()),
            **books,
            "frontier_size": self.frontier_size,
            "seconds": seconds,
            "levels": levels,
            "visited_bytes": self.visited_bytes,
            "visited_count": self.visited_count,
        }

    def restore(self, st: dict) -> None:
        """The counters of a checkpoint's ``state``."""
        super().restore(st)
        self.distinct = st["distinct"]
        self.frontier_size = st["frontier_size"]
        self.prior_seconds = st["seconds"]
        self.visited_bytes = st.get("visited_bytes", 0)
        self.visited_count = st.get("visited_count", 0)
