"""The Spark engine against the local engine on every preset of the Kafka model
(local[2], 2 partitions).

The Kafka model is growing, so nothing here pins a count: each test runs both
engines and asserts that they agree on everything (verdict, distinct, generated,
depth, action counts and coverage, witnesses, and the counterexample with its actions and
fingerprints).  The three known-bad presets must give the same shortest
counterexample.  Presets larger than LARGE distinct states are compared up to
``max_states=LARGE`` (the same cut in both engines), except ``default``, the
configuration ``make run`` checks, which is always compared exhaustively.
"""

from __future__ import annotations

import pytest

from checker.config import resolve
from checker.result import VIOLATED
from tests.spark_support import same, same_graph, spark_module

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
    # A preset of at most LARGE states is searched whole under max_states=LARGE (the
    # bound only stops a search that would store one more), so no search is needed
    # first to tell the two kinds apart.
    local, _ = same(model(preset), sc, **({} if preset == "default" else {"max_states": LARGE}))
    assert preset != "default" or local.stats.complete


# ------------------------------------------------------------------ coverage


def _coverage_table(model, result, vocab):
    """What ``kmc check --report`` shows of a run's coverage: every action's
    (name, enabled, taken, new) and the never-enabled list."""
    from checker.coverage import coverage_of
    return coverage_of(result).as_dict(vocab)


def test_coverage_is_the_local_engines_on_a_kafka_preset(sc):
    """The report's coverage table of a complete search: every action's enabled,
    taken and new-state counts and the never-enabled list are the local engine's,
    with 3 partitions (states of one level spread over partitions that are
    expanded and merged apart)."""
    m = model("tiny")
    local, spark = same(m, sc, partitions=3)
    assert spark.stats.complete and spark.stats.coverage.enabled is not None and spark.stats.coverage.new is not None
    vocab = sorted(m.action_names())
    table = _coverage_table(m, spark, vocab)
    assert table == _coverage_table(m, local, vocab)
    rows = {r["action"]: r for r in table["actions"]}
    assert rows["DeliverLeaderAndIsr"]["enabled"] > 0 and rows["DeliverLeaderAndIsr"]["new"] > 0
    assert len(table["never_enabled"]) == 11 and "ExpireSession" in table["never_enabled"]


@pytest.mark.parametrize("toy", ["grid", "diehard"])
def test_coverage_is_the_local_engines_on_a_toy(sc, toy):
    from tests.toys import FAMILY as TOYS
    m = TOYS.build(resolve(TOYS, None, {"toy": toy}))
    local, spark = same(m, sc, partitions=2)
    vocab = sorted(TOYS.action_docs())
    table = _coverage_table(m, spark, vocab)
    assert spark.stats.complete and table == _coverage_table(m, local, vocab)
    assert sum(r["new"] for r in table["actions"]) == spark.stats.distinct - 1
    assert table["never_enabled"] and all(r["enabled"] == 0 for r in table["actions"]
                                          if r["action"] in table["never_enabled"])


@pytest.mark.parametrize("preset", ["tiny", "small"])
def test_liveness_graph_is_the_local_engines(sc, preset):
    """A graph builder as the visitor (kmc check's eventually properties): the
    local engine's graph, node for node and edge for edge, with levels on the
    driver and on the partitions, and the same verdict of EventuallyLeaderElected."""
    graph, lassos = same_graph(model(preset), sc, driver_states=200)
    assert lassos == [] and graph.complete and len(graph.states) > 1000
