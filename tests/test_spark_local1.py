"""The Spark engine on local[1] (one executor core) gives the local engine's
answers too: small Kafka presets and toys, with 1 and 3 partitions."""

from __future__ import annotations

import pytest

from checker.config import resolve
from tests.spark_support import same, spark_module
from tests.toys import DieHard, Glitch, Grid

pytestmark = pytest.mark.spark

FAMILY = pytest.importorskip("spec.family").FAMILY

sc = spark_module("local[1]", 1)


@pytest.mark.parametrize("preset", [p for p in ("tiny", "zombie", "no-controller-fencing", "unclean")
                                    if p in FAMILY.presets])
def test_small_kafka_presets(sc, preset):
    same(FAMILY.build(resolve(FAMILY, preset, {})), sc)


def test_toys_with_three_partitions(sc):
    same(DieHard(solve=True), sc, partitions=3, keep_going=True)
    same(Grid(3), sc, partitions=3, max_states=7)
    same(Glitch(5, 3), sc, partitions=3)
