"""The Spark engine against the local engine on every preset of the Kafka model
(local[2], 2 partitions).

The Kafka model is growing, so nothing here pins a count: each test runs both
engines and asserts that they agree on everything (verdict, distinct, generated,
depth, action counts, witnesses, and the counterexample with its actions and
fingerprints).  The three known-bad presets must give the same shortest
counterexample.  Presets larger than LARGE distinct states are compared up to
``max_states=LARGE`` (the same cut in both engines), except ``default``, the
configuration ``make run`` checks, which is always compared exhaustively.
"""

from __future__ import annotations

import pytest

from checker import bfs
from checker.config import resolve
from checker.result import VIOLATED
from tests.spark_support import same, spark_module

pytestmark = pytest.mark.spark

FAMILY = pytest.importorskip("spec.family").FAMILY
BAD = ["zombie", "no-controller-fencing", "unclean"]
LARGE = 15_000

sc = spark_module("local[2]", 2)


def model(preset: str):
    return FAMILY.build(resolve(FAMILY, preset, {}))


@pytest.mark.parametrize("preset", [p for p in BAD if p in FAMILY.presets])
def test_known_bad_presets_give_the_same_counterexample(sc, preset):
    local, spark = same(model(preset), sc)
    assert spark.verdict == VIOLATED and spark.violations[0].path
    assert [str(s.action) for s in spark.violations[0].path[1:]] == \
        [str(s.action) for s in local.violations[0].path[1:]]


def test_tiny_preset(sc):
    same(model("tiny"), sc)


@pytest.mark.slow
@pytest.mark.parametrize("preset", [p for p in FAMILY.presets if p not in BAD and p != "tiny"])
def test_every_preset_same_answers(sc, preset):
    m = model(preset)
    if preset != "default" and bfs.check(m, max_states=LARGE + 1).stats.distinct > LARGE:
        same(m, sc, max_states=LARGE)
    else:
        same(m, sc)
