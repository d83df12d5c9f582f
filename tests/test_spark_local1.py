"""The Spark engine on local[1] (one executor core) gives the local engine's
answers too: small Kafka presets and toys, with 1 and 3 partitions."""

from __future__ import annotations

import pytest

from checker.cmdline import user_properties
from checker.config import resolve
from tests.spark_support import ROOT, same, same_graph, spark_module
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


@pytest.mark.parametrize("preset, driver_states, kwargs", [
    ("tiny", 100, {}), ("unclean", 10, {"keep_going": True}), ("tiny", 50, {"max_states": 700}),
])
def test_kafka_with_driver_levels(sc, preset, driver_states, kwargs):
    """The first levels on the driver, the rest on Spark: the same answers."""
    local, spark = same(FAMILY.build(resolve(FAMILY, preset, {})), sc, driver_states=driver_states, **kwargs)
    assert 0 < spark.engine["driver_levels"] < len(spark.engine["levels"])


def test_kafka_liveness_graph(sc):
    """A graph builder as the visitor: the local engine's graph of tiny, node for
    node and edge for edge, on three partitions after driver levels, and the same
    lassos: EventuallyLeaderElected holds, examples/liveness.py's unscoped
    EventuallyAnyLeader fails (a stutter)."""
    model = FAMILY.build(resolve(FAMILY, "tiny", {}))
    props = model.properties() + user_properties([str(ROOT / "examples" / "liveness.py")], model.properties())
    graph, lassos = same_graph(model, sc, partitions=3, driver_states=50, properties=props)
    assert [x[0] for x in lassos] == ["EventuallyAnyLeader"] and len(graph.states) > 1000
