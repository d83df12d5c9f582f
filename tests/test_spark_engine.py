"""The Spark engine against the local engine on toy models, on local[2].

Every test runs both engines on the same model and arguments and asserts that they
report the same thing: verdict, distinct and generated counts, depth, action
counts, witnesses, and every violation with its message and its path (actions and
fingerprints), i.e. the same shortest counterexample.  The toys are small, so each
run costs a few Spark jobs (about one per BFS level).
"""

from __future__ import annotations

import gc
import io
import random
import re
import threading

import pytest

from checker import bfs
from checker.errors import ModelError, UsageError
from checker.model import Model, action, always, sometimes
from checker.result import BOUNDED, DEADLOCK, OK, TIME_LIMIT
from checker.search import Settings
from checker.spark import check
from checker.graph import GraphBuilder
from tests.liveness_toys import Flap, Grant, Relay
from tests.spark_support import same, same_graph, spark_module, summary
from tests.test_bfs import Flaky, SetActions, two_answers
from tests.toys import (Chain, DieHard, ExactDieHard, ExactGrid, Glitch, Graph, Grid, PlacedGraph, Raising, SetState,
                        Unbounded, Vacuous)

pytestmark = pytest.mark.spark

sc = spark_module("local[2]", 2)


def spark_check(model, **kwargs):
    """Every level on the partitions (driver_states=0) unless a test says otherwise."""
    kwargs.setdefault("driver_states", 0)
    return check(model, **kwargs)


# -- the same answers ------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: Grid(3), lambda: DieHard(), lambda: DieHard(solve=True), lambda: Chain(3),
    lambda: Chain(3, terminal=True), lambda: Glitch(5, 3), lambda: Grid(4, 3), lambda: Unbounded(5),
    lambda: Vacuous(2), lambda: Grid(2, corner_terminal=False), lambda: ExactGrid(4, 3),
    lambda: ExactDieHard(solve=True),
], ids=["grid", "diehard", "diehard-solve", "chain-deadlock", "chain-terminal", "glitch-step", "grid-sum",
        "unbounded", "vacuous", "grid-corner-deadlock", "exact-grid-sum", "exact-diehard-solve"])
def test_toys_same_answers(sc, make):
    local, spark = same(make(), sc)
    assert spark.stats.distinct > 0


def collector_off(state) -> bool:
    return not gc.isenabled()


def test_the_tasks_run_without_the_collector(sc):
    """The local engine searches with the cyclic collector off, and so must every
    Spark task, although PySpark's Broadcast.load turns it on and every level reads
    a broadcast (the fingerprints for the filter): as a state property, checked on
    every successor in the expand tasks, the collector's state shows in the verdict."""
    props = [always("CollectorOff", collector_off)]
    local, spark = same(Grid(5), sc, properties=props)
    assert local.verdict == OK and spark.stats.distinct == 36


def test_counterexamples_are_the_local_engines(sc):
    local, spark = same(DieHard(solve=True), sc)
    [v] = spark.violations
    assert [None if s.action is None else s.action.name for s in v.path] == \
        [None if s.action is None else s.action.name for s in local.violations[0].path]
    assert len(v.path) == 7
    local, spark = same(Glitch(5, 3), sc)
    assert [s.state for s in spark.violations[0].path] == [0, 1, 2, 3, 2]
    assert "Glitch(by=-1)" in spark.violations[0].message


def test_keep_going_reports_each_property_once_in_the_local_order(sc):
    props = [
        always("XNot2", lambda s: s.x != 2),
        always("XBelow2", lambda s: s.x < 2),
        always("YNot3", lambda s: s.y != 3),
        always("NotCorner", lambda s: (s.x, s.y) != (4, 4)),
        always("Holds", lambda s: True),
        always("NoIncYAfterX3", lambda s, a, t: not (s.x == 3 and a.name == "IncY"), step=True),
        sometimes("Far", lambda s: s.x + s.y == 5),
    ]
    local, spark = same(Grid(4), sc, properties=props, keep_going=True)
    assert len(spark.violations) == 5 and spark.stats.complete
    same(Grid(4), sc, properties=props)


def test_initial_states_violations_and_duplicates(sc):
    same(Graph({"a": [("Go", "b")]}, init=("b", "a"), bad=("a",), terminal=("b",)), sc)
    same(Graph({"a": [("Go", "b")]}, init=("b", "a"), bad=("a",), terminal=("b",)), sc, keep_going=True)
    same(Graph({"a": [("Go", "b")]}, init=("a", "a", "b"), terminal=("b",)), sc)


def test_shorter_deadlock_wins_over_a_deeper_violation(sc):
    model = Graph({"a": [("A", "b"), ("B", "c")], "b": [("C", "d")]}, bad=("d",), terminal=("d",))
    local, spark = same(model, sc)
    assert [v.property for v in spark.violations] == [DEADLOCK]
    same(model, sc, keep_going=True)


def test_ties_between_partitions_follow_the_local_order(sc):
    # Two paths of the same length reach the bad state z; the first in BFS order
    # (through p, the first action) must be the one reported, whatever partition
    # p and q land in.
    edges = {"a": [("P", "p"), ("Q", "q")], "p": [("Z", "z")], "q": [("Z", "z"), ("W", "w")], "w": []}
    for parts in (1, 2, 3, 4):
        local, spark = same(Graph(edges, bad=("z", "w"), terminal=("z", "w")), sc, partitions=parts)
        assert [s.action.name for s in spark.violations[0].path[1:]] == ["P", "Z"]


# -- bounds ------------------------------------------------------------------------------

@pytest.mark.parametrize("cap", [1, 5, 15, 16])
def test_max_states_cuts_where_the_local_engine_does(sc, cap):
    local, spark = same(Grid(3), sc, max_states=cap)
    assert spark.stats.distinct == cap


def test_max_states_with_violations(sc):
    same(Grid(4, 3), sc, max_states=6)
    same(Grid(4, 3), sc, max_states=8)
    same(Grid(4, 3), sc, max_states=9, keep_going=True)
    same(Glitch(5, 3), sc, max_states=4)


@pytest.mark.parametrize("depth", [0, 2, 6])
def test_max_depth(sc, depth):
    same(Grid(3), sc, max_depth=depth)


def test_max_depth_deadlock_at_the_boundary(sc):
    same(Chain(3), sc, max_depth=3)
    same(Chain(3), sc, max_depth=3, keep_going=True)
    same(Grid(2, corner_terminal=False), sc, max_depth=4, keep_going=True)
    same(Vacuous(2), sc, max_depth=1)


def test_bad_bounds_are_usage_errors(sc):
    with pytest.raises(UsageError):
        spark_check(Grid(1), sc=sc, max_depth=-1)
    with pytest.raises(UsageError):
        spark_check(Grid(1), sc=sc, max_states=0)
    with pytest.raises(UsageError):
        spark_check(Grid(1), sc=sc, partitions=0)


# -- random graphs: every ordering corner at once --------------------------------------------

def random_graph(rng: random.Random) -> tuple[Graph, dict]:
    n = rng.randint(3, 9)
    nodes = [f"s{i}" for i in range(n)]
    edges = {}
    for s in nodes:
        k = rng.choice([0, 1, 2, 2, 3])
        edges[s] = [(rng.choice("ABC"), rng.choice(nodes)) for _ in range(k)]
    init = tuple(rng.choice(nodes) for _ in range(rng.choice([1, 1, 2])))
    bad = tuple(s for s in nodes if rng.random() < 0.15)
    terminal = tuple(s for s in nodes if rng.random() < 0.3)
    kwargs = {"keep_going": rng.random() < 0.4, "check_deadlock": rng.random() < 0.7}
    r = rng.random()
    if r < 0.25:
        kwargs["max_states"] = rng.randint(1, n)
    elif r < 0.45:
        kwargs["max_depth"] = rng.randint(0, 3)
    return Graph(edges, init=init, bad=bad, terminal=terminal, witness=rng.choice(nodes)), kwargs


def placed(seed: int, g: Graph) -> Graph:
    """Every other seed: the same graph with its states placed by a model-chosen key
    (Model.partition_key) from one to three values, so one partition may hold all."""
    if seed % 2 == 0:
        return g
    rng = random.Random(1000 + seed)
    keys = [("zk", i) for i in range(rng.choice([1, 2, 3]))]
    place = {s: rng.choice(keys) for s in g.edges}
    return PlacedGraph(g.edges, place, init=g.init, bad=g.bad, terminal=g.terminal, witness=g.witness)


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs(sc, seed):
    rng = random.Random(seed)
    model, kwargs = random_graph(rng)
    model = placed(seed, model)
    kwargs["properties"] = list(model.properties()) + [
        always("StepNotBack", lambda s, a, t: a.name != "C" or t >= s, step=True)]
    # chunk: 1 and 2 put a task's successors in many pickled chunks, some of them
    # without a new state (dropped by the merge), with outcomes in any of them.
    same(model, sc, partitions=rng.choice([1, 2, 3]), chunk=rng.choice([1, 2, 1000]), **kwargs)


def test_partition_count_changes_nothing(sc):
    results = [summary(spark_check(DieHard(solve=True), sc=sc, partitions=p, keep_going=True)) for p in (1, 3)]
    assert results[0] == results[1] == summary(bfs.check(DieHard(solve=True), keep_going=True))


def test_placement_by_partition_key(sc):
    """A model that places its states (Model.partition_key) gets the local engine's
    answers, counterexamples included; the driver hands levels over and takes them
    back with the partitions' placement (driver_states=3: Grid's levels 0-2 on the
    driver, then every level on the partitions until the last three)."""
    local = bfs.check(PlacedGrid(6, 9))
    for parts, driver in ((2, 0), (3, 3)):
        r = spark_check(PlacedGrid(6, 9), sc=sc, partitions=parts, driver_states=driver)
        assert summary(r) == summary(local)
        frontiers = [lv["part_frontier"] for lv in r.engine["levels"] if not lv.get("driver")]
        # x = key: the level x + y = d holds one state per x, spread over the partitions
        assert all(len(f) == parts for f in frontiers) and sum(map(sum, frontiers)) > 0


def test_new_states_read_from_the_partitions_own_copies(sc, monkeypatch):
    """Placed by y, (x+1, y+1) is reached first (the smaller order key: IncX before
    IncY) from (x+1, y), which may live on another partition, and also from (x, y+1)
    on its own: the merge then reads the winner's value from its own copy
    (checker.spark.merge.own_copies), and the answers stay the local engine's, with
    the trace; KMC_SPARK_OWN_COPIES=0 reads every state from the winner's copy."""
    props = [always("NotFar", lambda s: s.x + s.y < 9)]
    local = summary(bfs.check(PlacedByY(6, 9), properties=props))
    read = []
    for flag in ("1", "0"):
        monkeypatch.setenv("KMC_SPARK_OWN_COPIES", flag)
        r = spark_check(PlacedByY(6, 9), sc=sc, partitions=2, properties=props)
        assert summary(r) == local
        read.append(sum(lv.get("own_copies", 0) for lv in r.engine["levels"]))
    assert read[0] > 0 and read[1] == 0, read


def test_placement_by_fingerprint_when_asked(sc):
    """One key for every state: by key, one partition holds them all; asked to place
    by fingerprint (--spark-placement fingerprint), the engine ignores the hook."""
    local = summary(bfs.check(OneKey(6)))
    by_key = spark_check(OneKey(6), sc=sc, partitions=2)
    by_fp = spark_check(OneKey(6), sc=sc, partitions=2, placement="fingerprint")
    assert summary(by_key) == summary(by_fp) == local
    held = [[sum(c) for c in zip(*[lv["part_frontier"] for lv in r.engine["levels"]])] for r in (by_key, by_fp)]
    assert held[0].count(0) == 1 and 0 not in held[1], held
    with pytest.raises(UsageError, match="placement must be 'key' or 'fingerprint'"):
        spark_check(OneKey(1), sc=sc, placement="zk")


class OneKey(Grid):
    def partition_key(self, s):
        return "all"


class PlacedGrid(Grid):
    name = "placed-grid"

    def partition_key(self, s):
        return s.x


class PlacedByY(Grid):
    name = "placed-by-y"

    def partition_key(self, s):
        return s.y


class RaisingKey(Grid):
    def partition_key(self, s):
        if s.x + s.y >= 4:
            raise KeyError("zk")
        return s.x


class SetKey(Grid):
    def partition_key(self, s):
        return frozenset([s.x])


def test_a_bad_partition_key_is_a_model_error(sc):
    with pytest.raises(ModelError, match=r"partition_key\(state\) raised KeyError: 'zk'; fix the model"):
        spark_check(RaisingKey(4), sc=sc, driver_states=2000)      # on the driver's levels
    with pytest.raises(ModelError, match=r"^model error: partition_key\(state\) raised KeyError: 'zk'; fix"):
        spark_check(RaisingKey(4), sc=sc)     # in a task
    with pytest.raises(ModelError, match=r"partition_key\(state\) is a frozenset"):
        spark_check(SetKey(2), sc=sc)


# -- model errors: the same messages, the model's exception chained ---------------------------

def errors_of(fn):
    with pytest.raises(ModelError) as e:
        fn()
    return e.value


def test_raising_next_state(sc):
    local = errors_of(lambda: bfs.check(Raising(5, at=2)))
    spark = errors_of(lambda: spark_check(Raising(5, at=2), sc=sc))
    assert str(spark) == str(local)
    assert isinstance(spark.__cause__, ZeroDivisionError)


def boom(s):
    if s.x + s.y >= 2:
        raise KeyError("zk")
    return True


def boom_witness(s):
    return not boom(s)


def boom_step(s, a, t):
    if t.x == 2:
        raise ValueError("step")
    return True


@pytest.mark.parametrize("prop", [
    always("Broken", boom), sometimes("BrokenWitness", boom_witness), always("BrokenStep", boom_step, step=True),
], ids=["state", "witness", "step"])
def test_raising_predicates(sc, prop):
    local = errors_of(lambda: bfs.check(Grid(3), properties=[prop]))
    spark = errors_of(lambda: spark_check(Grid(3), sc=sc, properties=[prop]))
    assert str(spark) == str(local)
    assert type(spark.__cause__) is type(local.__cause__)


@pytest.mark.parametrize("prop", [
    always("Shaky", two_answers(False, True)), always("Shaky", two_answers(KeyError("zk"), True)),
    sometimes("Shaky", two_answers(True, False)), always("Shaky", two_answers(False, True), step=True),
], ids=["false-then-true", "raise-then-true", "witness-true-then-false", "step-false-then-true"])
def test_a_predicate_that_changes_its_answer(sc, prop):
    """A partition keeps it as the predicate's error, which the driver reports as
    the local engine does."""
    local = errors_of(lambda: bfs.check(Grid(3), properties=[prop]))
    spark = errors_of(lambda: spark_check(Grid(3), sc=sc, properties=[prop]))
    assert str(spark) == str(local) and "is not deterministic" in str(local)


def test_contract_breaches(sc):
    for make in (SetState, SetActions, Flaky):
        local = errors_of(lambda make=make: bfs.check(make()))
        spark = errors_of(lambda make=make: spark_check(make(), sc=sc))
        assert str(spark) == str(local), make.__name__


class Wide(Chain):
    """Chain(2) whose state 1 enables one action more than the Spark engine's 16-bit
    action indices can number."""

    def actions(self, s):
        return [action("Inc", k=k) for k in range(0x10000 + 1)] if s == 1 else super().actions(s)


def test_a_state_with_more_actions_than_16_bits_is_a_model_error_on_a_partition(sc):
    """The local engine has no such limit; on a partition the state's level stops
    with a model error that says so (every transition under the limit taken first)."""
    assert bfs.check(Wide(2)).stats.distinct == 3
    with pytest.raises(ModelError, match=r"more than 65535 actions at depth 1; the Spark engine numbers actions "
                                         r"with 16 bits"):
        spark_check(Wide(2), sc=sc)


class Unpicklable(Grid):
    def __init__(self):
        super().__init__(2)
        self.lock = threading.Lock()


def test_a_model_that_cannot_be_shipped_is_a_model_error(sc):
    with pytest.raises(ModelError, match="cloudpickle"):
        spark_check(Unpicklable(), sc=sc)


# -- what the engine reports about itself ---------------------------------------------------

def test_progress_lines_per_level(sc):
    out = io.StringIO()
    r = spark_check(Grid(3), sc=sc, progress=out)
    lines = out.getvalue().splitlines()
    pat = re.compile(r"progress: level=(\d+) frontier=(\d+) new=(\d+) distinct=(\d+) states/s=\d+ "
                     r"level_seconds=\d+\.\d\d elapsed=\d+\.\ds$")
    got = [pat.match(line) for line in lines]
    assert all(got), lines
    assert [int(m.group(1)) for m in got] == list(range(7))
    assert [int(m.group(2)) for m in got] == [1, 2, 3, 4, 3, 2, 1]
    assert int(got[-1].group(4)) == r.stats.distinct == 16


def test_visited_set_costs_a_few_bytes_per_state(sc):
    r = spark_check(DieHard(), sc=sc)
    assert r.verdict == OK and r.stats.distinct == 16
    assert r.engine["visited_bytes_per_state"] <= 32
    assert r.engine["partitions"] == 2 and len(r.engine["levels"]) == 8


# -- the narrow first levels on the driver ---------------------------------------------------

@pytest.mark.parametrize("driver_states", [1, 3, 100])
@pytest.mark.parametrize("make, kwargs", [
    (lambda: Grid(4, 3), {}), (lambda: DieHard(solve=True), {}), (lambda: DieHard(solve=True), {"keep_going": True}),
    (lambda: Glitch(5, 3), {}), (lambda: Chain(3), {}), (lambda: Grid(4, 3), {"max_states": 9}),
    (lambda: Grid(3), {"max_depth": 3}), (lambda: Vacuous(2), {}),
], ids=["grid-sum", "diehard-solve", "diehard-keep-going", "glitch-step", "chain-deadlock", "max-states",
        "max-depth", "vacuous"])
def test_driver_levels_change_no_answer(sc, make, kwargs, driver_states):
    """Levels of at most ``driver_states`` states run on the driver with the search
    core, the others on the partitions: a search that stops in either part, or hands
    over with violations already found, gives the local engine's answers."""
    local, spark = same(make(), sc, driver_states=driver_states, **kwargs)
    for lv in spark.engine["levels"]:
        assert lv.get("driver", False) == (lv["frontier"] <= driver_states), spark.engine["levels"]


def test_driver_levels_hand_over_and_take_back(sc):
    """Grid(3)'s levels hold 1, 2, 3, 4, 3, 2, 1 states: with driver_states=2 the first
    two and the last two run on the driver, the middle three on Spark, and the
    progress lines go on."""
    out = io.StringIO()
    local = bfs.check(Grid(3))
    r = check(Grid(3), sc=sc, progress=out, driver_states=2)
    assert summary(r) == summary(local)
    assert [lv.get("driver", False) for lv in r.engine["levels"]] == [True, True, False, False, False, True, True]
    assert [line.split()[1] for line in out.getvalue().splitlines()] == [f"level={d}" for d in range(7)]


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_with_driver_levels(sc, seed):
    """Levels narrow and wide in every order: the driver takes narrow levels back
    from the partitions and hands wide ones over again, with every ordering
    corner of the random graphs."""
    rng = random.Random(seed)
    model, kwargs = random_graph(rng)
    same(placed(seed // 2, model), sc, driver_states=1 + seed % 2, **kwargs)


def test_the_time_limit_stops_after_a_whole_level(sc):
    """Spark looks at the clock between levels: a run stopped by its time limit
    holds exactly the states of its first levels (Grid's level d holds d + 1), and
    says why it stopped, as the local engine does."""
    r = spark_check(Grid(1000), sc=sc, settings=Settings(time_limit=0.5))
    st = r.stats
    assert r.verdict == BOUNDED and not st.complete and st.stopped_by == TIME_LIMIT
    d = st.depth
    assert 0 < d < 2000 and st.distinct == (d + 1) * (d + 2) // 2


# -- a visitor: the local engine's graph, liveness on it ---------------------------------

@pytest.mark.parametrize("make, kwargs", [
    (lambda: Grid(4, 3), {}), (lambda: Unbounded(5), {}), (lambda: Chain(3), {"keep_going": True}),
    (lambda: Chain(3, terminal=True), {}), (lambda: DieHard(solve=True), {}), (lambda: Grid(3), {"max_states": 7}),
    (lambda: Glitch(5, 3), {}), (lambda: Raising(5), {}),
    (lambda: Relay(), {}), (lambda: Relay(drops=2), {}), (lambda: Flap(fair_finish=False), {}),
    (lambda: Grant(grant_fair=False), {}),
], ids=["grid-sum", "unbounded", "chain-deadlock", "chain-terminal", "diehard-stops", "grid-cut", "glitch-step",
        "raising", "relay-lasso", "relay-bounded", "flap-loop", "grant-stutter"])
@pytest.mark.parametrize("driver_states", [0, 2])
def test_a_visitor_is_called_as_the_local_engine_calls_it(sc, make, kwargs, driver_states):
    """The graph a visitor builds, on the partitions' levels (and after narrow
    levels on the driver): the same states, edges, dead ends, and lassos, where the
    search ends, stops at a violation or at max_states, or meets a model error."""
    same_graph(make(), sc, driver_states=driver_states, **kwargs)


@pytest.mark.parametrize("seed", range(12))
def test_a_visitor_on_random_graphs(sc, seed):
    """Random graphs (placed by a key every other seed), cut by max_states or not,
    stopped by a violation or not, on 1 to 3 partitions, some levels on the driver."""
    rng = random.Random(seed)
    model, kwargs = random_graph(rng)
    kwargs.pop("max_depth", None)
    same_graph(placed(seed, model), sc, partitions=rng.choice([1, 2, 3]), driver_states=rng.choice([0, 0, 1, 3]),
               **kwargs)


def test_a_visitor_past_its_limit_gives_up_or_refuses_where_the_local_engine_does(sc):
    same_graph(Grid(4, 3), sc, builder={"max_states": 10, "strict": False})
    same_graph(Grid(4, 3), sc, builder={"max_states": 10, "strict": True})
    same_graph(DieHard(solve=True), sc, builder={"max_states": 8, "strict": True})


def test_a_visitor_needs_every_level(sc):
    for kw in ({"max_depth": 2}, {"resume": "/nonexistent"}):
        with pytest.raises(UsageError, match="a visitor sees every level"):
            spark_check(Grid(3), sc=sc, visitor=GraphBuilder(), **kw)


def test_the_driver_keeps_no_level_graph_after_replaying_it(sc, monkeypatch):
    """Each level's statistics are the values of its accumulator, which PySpark's
    registry keeps for the life of the driver: the transitions and pickled new
    states shipped for the visitor are dropped from them once replayed (a stopped
    level and a visitor that raises included)."""
    from checker.spark.jobs import Jobs

    seen: list = []
    expand = Jobs.expand

    def spy(self, L, params):
        out = expand(self, L, params)
        seen.extend(out[1] + out[2])
        return out

    monkeypatch.setattr(Jobs, "expand", spy)
    for model, kwargs, builder in ((Grid(4, 3), {}, {}), (Grid(3), {"max_states": 7}, {}),
                                   (Grid(4, 3), {}, {"max_states": 10})):
        seen.clear()
        try:
            check(model, sc=sc, driver_states=0, visitor=GraphBuilder(**builder), **kwargs)
        except UsageError:
            assert builder
        assert seen and not [x for x in seen if "graph" in x]


class BoolOrInt(Model):
    """Two actions that are equal in Python (``True == 1``) but print apart."""

    def init_states(self):
        return [0]

    def actions(self, s):
        return [action("Set", v=1), action("Set", v=True)] if s == 0 else []

    def next_state(self, s, a):
        return 1


def test_a_visitor_sees_actions_that_are_equal_but_print_apart_as_the_local_engine_does(sc):
    graph, _ = same_graph(BoolOrInt(), sc, partitions=1, driver_states=0)
    assert [str(a) for _s, a, _d in graph.edges] == ["Set(v=1)", "Set(v=True)"]
