"""kmc simulate: swarm random walks (checker.simulate, checker.spark.simulate).

What must hold: a walk depends only on (seed, index); every property is checked on
every visited state; a violation is shrunk, replays on the model as an ordinary
trace, and (Kafka) conforms on the reference broker; the swarm draws are honoured;
bad input is a one-line error."""

from __future__ import annotations

import json

import pytest

from checker.bfs import check, replay_path
from checker.config import resolve
from checker.errors import ModelError, UsageError
from checker.model import Model, action, always
from checker.simulate import run_walks, shrink, simulate, swarm_budget, swarm_weight
from tests import cli_support
from tests.toys import Chain, DieHard, Glitch, Grid, Raising

TOYS = ["--model", "tests.toys:FAMILY"]


def _summary(r):
    return (r.verdict, r.walks, r.steps, r.distinct, r.deepest, r.walk, r.found_length,
            [(v.property, [str(s.action) for s in v.path]) for v in r.violations])


def test_same_seed_same_result_other_seed_other_walks():
    a = simulate(Grid(6, k=9), seed=5, walks=50)
    b = simulate(Grid(6, k=9), seed=5, walks=50)
    assert _summary(a) == _summary(b)
    c = simulate(Grid(6), seed=6, walks=50, swarm=False)
    d = simulate(Grid(6), seed=7, walks=50, swarm=False)
    assert c.verdict == d.verdict == "bounded"
    assert c.walks == d.walks == 50


def test_a_walk_depends_only_on_seed_and_index():
    m = DieHard(solve=True)
    props = list(m.properties())
    first = simulate(m, seed=3, walks=1000).walk
    alone = run_walks(m, props, 3, [first])
    inorder = run_walks(m, props, 3, range(first + 1))
    assert alone.found is not None and inorder.found is not None
    assert alone.found == inorder.found


def test_violation_is_shrunk_and_replays():
    r = simulate(DieHard(solve=True), seed=3, walks=1000)
    v = r.violations[0]
    assert v.property == "BigNot4"
    assert r.found_length > len(v.path) - 1 == 6           # the puzzle's shortest solution
    # an ordinary path of the unreduced model: every action enabled where taken
    again = replay_path(DieHard(solve=True), [s.action for s in v.path[1:]])
    assert [s.fingerprint for s in again] == [s.fingerprint for s in v.path]
    assert v.path[-1].state.big == 4


def test_shrink_finds_the_shortest_grid_counterexample():
    r = simulate(Grid(5, k=4), seed=0, walks=100)
    assert r.violations[0].property == "SumNotK"
    assert len(r.violations[0].path) - 1 == 4
    assert check(Grid(5, k=4)).violations[0].property == "SumNotK"


def test_shrink_drops_steps_that_do_not_matter():
    m = Grid(5, k=3)
    acts = [action("IncX"), action("IncY"), action("IncX"), action("IncY"), action("IncY")]
    out, replays = shrink(m, list(m.properties()), "SumNotK", m.init_states()[0], acts)
    assert len(out) == 3 and replays >= 1


def test_step_property_and_deadlock():
    r = simulate(Glitch(5, 2), seed=0, walks=20)
    assert r.violations[0].property == "NeverDecreases"
    assert [s.action.name for s in r.violations[0].path[1:]] == ["Inc", "Inc", "Glitch"]
    d = simulate(Chain(3), seed=0, walks=5)
    assert d.violations[0].property == "Deadlock" and len(d.violations[0].path) == 4
    assert simulate(Chain(3), seed=0, walks=5, check_deadlock=False).verdict == "bounded"
    assert simulate(Chain(3, terminal=True), seed=0, walks=5).verdict == "bounded"


def test_every_visited_state_is_checked_and_counted():
    r = simulate(Grid(3), seed=1, walks=200, swarm=False)
    assert r.distinct == 16 and r.deepest == 6         # every state of the 4x4 grid, the corner at depth 6
    assert r.witnesses == {"ReachCorner": 6}
    assert r.steps == sum(r.action_counts.values())


class Faulty(Model):
    """A counter with a fair Tick and an unfair Fault, to watch the swarm draws."""

    name, version = "faulty", "1"

    def init_states(self):
        return [(0, 0)]

    def actions(self, s):
        return [action("Tick"), action("Fault")] if s[0] < 30 else []

    def next_state(self, s, a):
        return (s[0] + 1, s[1] + (a.name == "Fault"))

    def fair(self, a):
        return a.name != "Fault"

    def is_terminal(self, s):
        return True

    def properties(self):
        return [always("Few", lambda s: True, "")]


def test_swarm_budgets_of_unfair_kinds_are_honoured():
    m = Faulty()
    seen = set()
    for walk in range(40):
        w = run_walks(m, list(m.properties()), 11, [walk])
        budget = swarm_budget(11, walk, "Fault")
        faults = w.action_counts.get("Fault", 0)
        if budget is not None:
            assert faults <= budget
        seen.add(budget if budget is None else min(faults, budget))
        assert w.action_counts.get("Tick", 0) + faults == 30    # the fair kind is never left out
    assert {0, None} <= seen                                   # some walks leave it out, some do not bound it
    assert {swarm_weight(11, w, "Tick") for w in range(40)} == {1, 2, 4, 8}


def test_model_errors_and_bad_arguments():
    with pytest.raises(ModelError, match="ZeroDivisionError"):
        simulate(Raising(5, 2), seed=0, walks=5)
    with pytest.raises(UsageError, match="walks"):
        simulate(Grid(2), walks=0)
    with pytest.raises(UsageError, match="seed"):
        simulate(Grid(2), seed=-1)


def test_time_limit_stops_after_a_walk():
    r = simulate(Grid(3), seed=0, walks=None, time_limit=0.2)
    assert r.verdict == "bounded" and r.walks >= 1


# --------------------------------------------------------------------------- CLI

def test_cli_saves_a_trace_that_replays(tmp_path):
    r = cli_support.kmc("simulate", *TOYS, "--preset", "broken", "--seed", "3", "--traces-dir", tmp_path, "--json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["violated_property"] == "BigNot4" and doc["shrunk_length"] == 6
    assert doc["walk"] == simulate(DieHard(solve=True), seed=3, walks=10000).walk
    trace = json.loads(open(doc["trace_path"]).read())
    assert trace["engine"] == "simulate-local" and len(trace["steps"]) == 7
    rep = cli_support.kmc("replay", *TOYS, doc["trace_path"])
    assert rep.returncode == 0, rep.stdout + rep.stderr
    again = cli_support.kmc("simulate", *TOYS, "--preset", "broken", "--seed", "3", "--traces-dir", tmp_path,
                            "--json", seed="123")
    assert json.loads(again.stdout)["trace_path"] == doc["trace_path"]     # same trace, whatever the hash seed


def test_cli_no_violation_and_errors(tmp_path):
    r = cli_support.kmc("simulate", *TOYS, "--preset", "tiny", "--walks", "20", "--traces-dir", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "NO VIOLATION FOUND in 20 walks" in r.stdout and "progress: walks=" in r.stderr
    cli_support.one_line_error(cli_support.kmc("simulate", *TOYS, "--walks", "0"), "--walks")
    cli_support.one_line_error(cli_support.kmc("simulate", *TOYS, "--property", "Nope"), "Nope")
    # an eventually property was dropped without a word: nothing checked, exit 0
    cli_support.one_line_error(cli_support.kmc("simulate", "--preset", "tiny", "--property", "EventuallyLeaderElected"),
                               "eventually property 'EventuallyLeaderElected' cannot be checked by kmc simulate")
    cli_support.one_line_error(cli_support.kmc("simulate", *TOYS, "--spark-partitions", "2", "--engine", "local"),
                               "--spark-partitions")
    cli_support.one_line_error(cli_support.kmc("simulate", *TOYS, "--preset", "crash", "--traces-dir", tmp_path),
                               "ZeroDivisionError", code=3)


def test_kafka_counterexample_replays_and_conforms(tmp_path):
    """data-hw's committed-data loss, found by walks: the shrunk trace replays on the
    full model and the reference broker follows it step by step."""
    r = cli_support.kmc("simulate", "--preset", "data-hw", "--seed", "0", "--walks", "5000", "--traces-dir",
                        tmp_path, "--json", "--quiet", timeout=600)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["violated_property"] == "HighWatermarkBelowIsrLeo"
    assert doc["shrunk_length"] <= doc["found_length"]
    assert cli_support.kmc("replay", doc["trace_path"]).returncode == 0
    conf = cli_support.kmc("conform", doc["trace_path"], "--quiet", timeout=600)
    assert conf.returncode == 0, conf.stdout + conf.stderr


@pytest.mark.spark
def test_spark_walks_give_the_local_counterexample():
    from checker.spark.simulate import simulate as spark_simulate
    from spec.family import FAMILY
    from tests.spark_support import spark_context

    sc = spark_context("local[2]", 2)
    try:
        for model, seed in ((DieHard(solve=True), 3), (FAMILY.build(resolve(FAMILY, "data-unclean", {})), 0)):
            local = simulate(model, seed=seed, walks=2000)
            spark = spark_simulate(model, seed=seed, walks=2000, sc=sc, partitions=2)
            assert local.violations and spark.walk == local.walk
            assert [s.fingerprint for s in spark.violations[0].path] == [s.fingerprint for s in local.violations[0].path]
        quiet = spark_simulate(Grid(3), seed=0, walks=100, sc=sc, partitions=3, swarm=False)
        assert quiet.walks == 100 and quiet.distinct == 16
        # --time-limit: the tasks stop on their own clock, at the limit's rest when
        # the round was sent (walks=None: without the limit this would never end)
        bounded = spark_simulate(Grid(1000), seed=0, walks=None, max_steps=50, time_limit=1.5, sc=sc,
                                 partitions=2)
        assert bounded.walks > 0 and not bounded.violations
        # A predicate that raises in a task: the driver runs the round again and raises
        # the local engine's error with its cause chained (kmc simulate finds the user's
        # file and line from it; the task's message alone was exit 3).
        boom = [always("Boom", lambda s: s.big != 3 or 1 // 0, "raises where big = 3")]
        with pytest.raises(ModelError) as local:
            simulate(DieHard(), properties=boom, seed=1, walks=200)
        with pytest.raises(ModelError) as spark:
            spark_simulate(DieHard(), properties=boom, seed=1, walks=200, sc=sc, partitions=2)
        assert str(spark.value) == str(local.value) and "'Boom'" in str(spark.value)
        assert type(spark.value.__cause__) is ZeroDivisionError
    finally:
        sc.stop()
