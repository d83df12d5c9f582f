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

It also gives the session a checkpoint key of its own: Spark checkpoints are signed
with the key file that ``KMC_CHECKPOINT_KEY_FILE`` names (checker.spark.checkpoint),
else one in the home directory, which a test run must never create or use.  Set in
``os.environ``, so that the runs in subprocesses sign with it too.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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


@pytest.fixture(scope="session", autouse=True)
def checkpoint_key(tmp_path_factory):
    """``KMC_CHECKPOINT_KEY_FILE`` for the whole session: a key file in a temporary
    directory (created by the first run that saves a checkpoint)."""
    old = os.environ.get("KMC_CHECKPOINT_KEY_FILE")
    path = tmp_path_factory.mktemp("checkpoint-key") / "checkpoint.key"
    os.environ["KMC_CHECKPOINT_KEY_FILE"] = str(path)
    try:
        yield path
    finally:
        if old is None:
            os.environ.pop("KMC_CHECKPOINT_KEY_FILE", None)
        else:
            os.environ["KMC_CHECKPOINT_KEY_FILE"] = old
