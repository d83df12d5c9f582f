"""The order in which ``make test`` hands the test files to its two workers.

``make test`` runs ``pytest -n 2 --dist loadfile --no-loadscope-reorder``: each
worker takes a whole file at a time, in collection order.  xdist's default order
(the files with most tests first) put the mutation gate's one ten-minute test
near the end, where it could run alone on one core while the other idled.  The
files measured longest go first instead, longest first, so that the short files
fill in around them at the end.  Only the order changes: every test still runs,
and each file's tests keep their own order.

Measured with ``--durations`` on a whole-suite run (2026-11-28, a 2-core machine
that runs ``small`` at ~5,500 states per CPU second): the mutation gate 627 s,
the z3 event-order comparisons ~400 s, offsets-rf3 342 s, the other z3
comparisons ~250 s, the reference broker's event order ~250 s, Spark on every
Kafka preset ~200 s, the docs' commands ~190 s, the three-replica holes 175 s.
"""

from __future__ import annotations

from pathlib import Path

LONGEST_FIRST = (
    "test_mutation_gate.py",
    "test_symbolic_event_order.py",
    "test_seed_gaps.py",
    "test_symbolic.py",
    "test_event_order.py",
    "test_spark_kafka.py",
    "test_docs.py",
    "test_atomic.py",
    "test_metadata.py",
    "test_search.py",
)


def pytest_collection_modifyitems(session, config, items) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    last = len(rank)
    items.sort(key=lambda item: rank.get(Path(str(item.path)).name, last))   # stable: the rest keep their order
