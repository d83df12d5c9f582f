"""The order in which ``make test`` hands the test files to its two workers.

``make test`` runs ``pytest -n 2 --dist loadfile --no-loadscope-reorder``: each
worker takes a whole file at a time, in collection order.  xdist's default order
(the files with most tests first) put the mutation gate's one ten-minute test
near the end, where it could run alone on one core while the other idled.  The
files measured longest go first instead, longest first, so that the short files
fill in around them at the end.  Only the order changes: every test still runs,
and each file's tests keep their own order.

Added up from the ``--durations`` of a whole-suite run and of runs of the files
that changed since (2026-11-28, a 2-core machine that runs ``small`` at ~5,500
states per CPU second), once the conformance harness remembered the model's side
and the z3 comparisons built their guards once: the
mutation gate ~275 s alone (431 s in the suite before), the z3 comparisons ~250 s,
the three-replica holes ~190 s, Spark on every Kafka preset ~200 s, the docs'
commands ~190 s, the reference broker's event order ~155 s, the z3 event-order
comparisons ~150 s, the metadata caches ~130 s, offsets-rf3 ~100 s, the model's
promise ~100 s.
"""

from __future__ import annotations

from pathlib import Path

LONGEST_FIRST = (
    "test_mutation_gate.py",
    "test_symbolic.py",
    "test_atomic.py",
    "test_spark_kafka.py",
    "test_docs.py",
    "test_event_order.py",
    "test_symbolic_event_order.py",
    "test_metadata.py",
    "test_seed_gaps.py",
    "test_search.py",
)


def pytest_collection_modifyitems(session, config, items) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    last = len(rank)
    items.sort(key=lambda item: rank.get(Path(str(item.path)).name, last))   # stable: the rest keep their order
