"""checker.bfs against toy models whose answers are known by hand, cross-checked by
an independent search (networkx over the states themselves, no fingerprints)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

from checker.bfs import check, replay_path
from checker.errors import ModelError, UsageError
from checker.fingerprint import fingerprint
from checker.model import Model, action, always, sometimes
from checker.result import BOUNDED, DEADLOCK, OK, VIOLATED
from tests.toys import (FAMILY, Chain, DieHard, Glitch, Graph, Grid, Jugs, Pos, Raising, SetState,
                        Unbounded, Vacuous)

REPO = Path(__file__).resolve().parent.parent


def names(path):
    return [None if st.action is None else st.action.name for st in path]


def reference(model):
    """Independent exploration: a networkx multigraph over the states themselves."""
    g = nx.MultiDiGraph()
    inits = list(model.init_states())
    todo = list(inits)
    g.add_nodes_from(inits)
    transitions = 0
    while todo:
        s = todo.pop()
        if not model.within_boundary(s):
            continue
        for a in model.actions(s):
            t = model.next_state(s, a)
            transitions += 1
            if t not in g:
                todo.append(t)
            g.add_edge(s, t, action=a)
    dist = {}
    for i in inits:
        for s, d in nx.single_source_shortest_path_length(g, i).items():
            dist[s] = min(d, dist.get(s, d))
    return g, transitions, dist


def assert_path_is_real(model, path):
    """Starts at an initial state, each step is an enabled action, fingerprints match."""
    assert path[0].action is None
    assert path[0].state in list(model.init_states())
    for prev, st in zip(path, path[1:]):
        assert st.action in list(model.actions(prev.state))
        assert model.next_state(prev.state, st.action) == st.state
    for st in path:
        assert st.fingerprint == fingerprint(model, st.state)


# -- counts ---------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 3, 7])
def test_grid_counts(n):
    r = check(Grid(n))
    assert r.verdict == OK and r.violations == []
    st = r.stats
    assert (st.distinct, st.generated, st.depth) == ((n + 1) ** 2, 2 * n * (n + 1), 2 * n)
    assert st.action_counts == ({"IncX": n * (n + 1), "IncY": n * (n + 1)} if n else {})
    assert st.witnesses == {"ReachCorner": 2 * n}
    assert st.complete


def test_diehard_counts_match_an_independent_search():
    model = DieHard()
    g, transitions, dist = reference(model)
    r = check(model)
    assert r.verdict == OK
    assert r.stats.distinct == g.number_of_nodes() == 16
    assert r.stats.generated == transitions == 96
    assert r.stats.depth == max(dist.values()) == 7
    assert r.stats.action_counts == {a.name: 16 for a in model.actions(Jugs(0, 0))}
    assert r.stats.witnesses == {"Solved": min(d for s, d in dist.items() if s.big == 4)} == {"Solved": 6}


def test_stats_fields_are_filled():
    st = check(Grid(20)).stats
    assert st.seconds > 0 and st.states_per_second == pytest.approx(st.distinct / st.seconds)
    assert st.peak_memory_bytes > 1 << 20
    assert set(st.as_dict()) >= {"distinct", "generated", "depth", "complete", "witnesses"}


# -- counterexamples ------------------------------------------------------------------

def test_diehard_shortest_solution():
    model = DieHard(solve=True)
    r = check(model)
    assert r.verdict == VIOLATED and len(r.violations) == 1
    v = r.violations[0]
    assert (v.property, v.kind) == ("BigNot4", "always")
    assert names(v.path) == [None, "FillBig", "BigToSmall", "EmptySmall", "BigToSmall", "FillBig", "BigToSmall"]
    assert [st.state for st in v.path] == [Jugs(0, 0), Jugs(0, 5), Jugs(3, 2), Jugs(0, 2), Jugs(2, 0),
                                           Jugs(2, 5), Jugs(3, 4)]
    assert_path_is_real(model, v.path)
    _, _, dist = reference(model)
    assert len(v.path) - 1 == min(d for s, d in dist.items() if s.big == 4)
    assert not r.stats.complete  # stopped at the first violation


@pytest.mark.parametrize("n, k, want", [
    (3, 4, ["IncX"] * 3 + ["IncY"]),
    (5, 4, ["IncX"] * 4),
    (3, 0, []),
    (2, 4, ["IncX", "IncX", "IncY", "IncY"]),
])
def test_grid_counterexample_is_shortest_and_exact(n, k, want):
    model = Grid(n, k)
    r = check(model)
    assert r.verdict == VIOLATED
    [v] = r.violations
    assert v.property == "SumNotK"
    assert names(v.path) == [None] + want
    assert v.path[-1].state.x + v.path[-1].state.y == k
    assert_path_is_real(model, v.path)
    assert r.stats.depth == k  # the search stopped on the level of the violation


def test_grid_invariant_out_of_reach_holds():
    r = check(Grid(3, 7))
    assert r.verdict == OK and r.stats.distinct == 16


def test_keep_going_collects_each_property_once_with_its_shortest_path():
    model = Grid(4)
    props = [
        always("XNot2", lambda s: s.x != 2),
        always("XBelow2", lambda s: s.x < 2),        # fails on the same state as XNot2
        always("YNot3", lambda s: s.y != 3),
        always("NotCorner", lambda s: (s.x, s.y) != (4, 4)),
        always("Holds", lambda s: True),
        always("NoIncYAfterX3", lambda s, a, t: not (s.x == 3 and a.name == "IncY"), step=True),
    ]
    r = check(model, properties=props, keep_going=True)
    assert r.verdict == VIOLATED
    got = {v.property: names(v.path)[1:] for v in r.violations}
    assert got == {
        "XNot2": ["IncX"] * 2,
        "XBelow2": ["IncX"] * 2,
        "YNot3": ["IncY"] * 3,
        "NoIncYAfterX3": ["IncX"] * 3 + ["IncY"],
        "NotCorner": ["IncX"] * 4 + ["IncY"] * 4,
    }
    assert len(r.violations) == 5
    # Reported in the order found, which is by path length.
    assert [len(v.path) for v in r.violations] == sorted(len(v.path) for v in r.violations)
    assert r.stats.complete and r.stats.distinct == 25 and r.stats.generated == 40
    for v in r.violations:
        assert_path_is_real(model, v.path)

    first = check(model, properties=props)
    assert [v.property for v in first.violations] == ["XNot2"]
    assert not first.stats.complete


def test_violation_in_an_initial_state():
    model = Graph({"a": [("Go", "b")]}, init=("b", "a"), bad=("a",), terminal=("b",))
    r = check(model)
    [v] = r.violations
    assert names(v.path) == [None] and v.path[0].state == "a"
    assert r.stats.depth == 0


def test_duplicate_initial_states_are_stored_once():
    model = Graph({"a": [("Go", "b")]}, init=("a", "a", "b"), terminal=("b",))
    r = check(model)
    assert r.verdict == OK
    assert (r.stats.distinct, r.stats.generated, r.stats.depth) == (2, 1, 0)


def test_replay_path_rebuilds_the_counterexample():
    model = DieHard(solve=True)
    v = check(model).violations[0]
    assert replay_path(model, [st.action for st in v.path[1:]]) == v.path
    with pytest.raises(ModelError, match="not enabled"):
        replay_path(Chain(1), [action("Inc"), action("Inc")])


# -- deadlock, terminal, boundary -------------------------------------------------------

def test_deadlock_at_the_end_of_a_chain():
    r = check(Chain(3))
    assert r.verdict == VIOLATED
    [v] = r.violations
    assert (v.property, v.kind) == (DEADLOCK, "deadlock")
    assert names(v.path) == [None, "Inc", "Inc", "Inc"] and v.path[-1].state == 3


def test_terminal_state_is_not_a_deadlock():
    r = check(Chain(3, terminal=True))
    assert r.verdict == OK and r.violations == []
    assert (r.stats.distinct, r.stats.depth) == (4, 3)


def test_deadlock_check_can_be_turned_off():
    assert check(Chain(3), check_deadlock=False).verdict == OK


def test_grid_corner_deadlocks_unless_terminal():
    r = check(Grid(2, corner_terminal=False))
    [v] = r.violations
    assert v.property == DEADLOCK and names(v.path)[1:] == ["IncX", "IncX", "IncY", "IncY"]


def test_shorter_deadlock_is_reported_before_a_deeper_violation():
    # Level 1 holds b then c.  Expanding b finds the bad state d (path length 2)
    # before c, a deadlock with a path of length 1, is expanded.
    model = Graph({"a": [("A", "b"), ("B", "c")], "b": [("C", "d")]}, bad=("d",), terminal=("d",))
    r = check(model)
    assert [(v.property, names(v.path)) for v in r.violations] == [(DEADLOCK, [None, "B"])]
    r = check(model, keep_going=True)
    assert {v.property: names(v.path) for v in r.violations} == {
        "NotBad": [None, "A", "C"], DEADLOCK: [None, "B"]}
    assert r.stats.complete


def test_boundary_states_are_checked_not_expanded_and_not_deadlocks():
    r = check(Unbounded(10))
    assert r.verdict == OK
    assert (r.stats.distinct, r.stats.generated, r.stats.depth) == (11, 10, 10)
    assert r.stats.complete
    r = check(Unbounded(10), properties=[always("Below10", lambda s: s < 10)])
    assert names(r.violations[0].path) == [None] + ["Inc"] * 10


# -- bounds -------------------------------------------------------------------------

def test_max_depth_cuts_and_gives_bounded():
    r = check(Grid(3), max_depth=2)
    assert r.verdict == BOUNDED and r.violations == []
    assert (r.stats.distinct, r.stats.generated, r.stats.depth) == (6, 6, 2)
    assert not r.stats.complete
    assert r.stats.witnesses == {"ReachCorner": None}  # not a violation: the search was cut


def test_max_depth_zero_checks_initial_states_only():
    r = check(Grid(3), max_depth=0)
    assert r.verdict == BOUNDED and (r.stats.distinct, r.stats.generated) == (1, 0)


def test_max_depth_finds_violations_within_it():
    assert check(Grid(3, 5), max_depth=4).verdict == BOUNDED
    assert check(Grid(3, 4), max_depth=4).verdict == VIOLATED
    r = check(Chain(3), max_depth=3)  # the last level is not expanded but is checked for deadlock
    assert r.verdict == VIOLATED and r.violations[0].property == DEADLOCK


def test_max_depth_that_cuts_nothing_is_complete():
    r = check(Grid(3), max_depth=6)
    assert r.verdict == OK and r.stats.complete and r.stats.distinct == 16


def test_max_states():
    r = check(Grid(3), max_states=5)
    assert r.verdict == BOUNDED and not r.stats.complete
    assert r.stats.distinct == 5
    r = check(Grid(3), max_states=15)
    assert r.verdict == BOUNDED and r.stats.distinct == 15
    r = check(Grid(3), max_states=16)  # exactly the whole space: nothing was cut
    assert r.verdict == OK and r.stats.complete and r.stats.distinct == 16


def test_bad_bounds_are_usage_errors():
    with pytest.raises(UsageError):
        check(Grid(1), max_depth=-1)
    with pytest.raises(UsageError):
        check(Grid(1), max_states=0)


# -- step and sometimes properties -------------------------------------------------------

def test_step_property_counterexample_ends_with_the_offending_step():
    model = Glitch(5, 3)
    r = check(model)
    [v] = r.violations
    assert (v.property, v.kind) == ("NeverDecreases", "always")
    assert names(v.path) == [None, "Inc", "Inc", "Inc", "Glitch"]
    assert [st.state for st in v.path] == [0, 1, 2, 3, 2]  # the target state was already visited
    assert "Glitch(by=-1)" in v.message
    assert_path_is_real(model, v.path)


def test_step_property_holds_without_the_glitch():
    assert check(Glitch(5, 99)).verdict == OK


def test_unreached_witness_is_a_violation_only_when_complete():
    r = check(Vacuous(2))
    assert r.verdict == VIOLATED
    [v] = r.violations
    assert (v.property, v.kind, v.path) == ("OffGrid", "sometimes", [])
    assert "vacuously" in v.message
    assert r.stats.witnesses == {"OffGrid": None}
    r = check(Vacuous(2), max_depth=1)
    assert r.verdict == BOUNDED and r.violations == [] and r.stats.witnesses == {"OffGrid": None}


def test_witness_depth_is_recorded_on_initial_states_too():
    r = check(Grid(2), properties=[sometimes("Origin", lambda s: s == Pos(0, 0)),
                                   sometimes("Far", lambda s: s.x + s.y == 3)])
    assert r.stats.witnesses == {"Origin": 0, "Far": 3}


# -- model errors ---------------------------------------------------------------------

def test_raising_next_state_is_a_model_error_naming_action_state_and_depth():
    with pytest.raises(ModelError) as e:
        check(Raising(5, at=2))
    msg = str(e.value)
    assert "Boom(at=2)" in msg and "ZeroDivisionError" in msg and "depth 2" in msg
    assert '{"value": 2}' in msg and "next_state" in msg
    assert isinstance(e.value.__cause__, ZeroDivisionError)


def test_raising_predicate_is_a_model_error_naming_the_property():
    def boom(s):
        raise KeyError("zk")

    with pytest.raises(ModelError, match=r"property 'Broken' raised KeyError: 'zk'.*depth 0"):
        check(Grid(1), properties=[always("Broken", boom)])


class Exiting(Grid):
    """The grid whose ``next_state`` calls ``sys.exit(0)`` from (1, 0)."""

    def next_state(self, s, a):
        if s == Pos(1, 0):
            sys.exit(0)
        return super().next_state(s, a)


def test_sys_exit_in_model_code_is_a_model_error_not_the_end_of_the_run():
    # SystemExit is no Exception: before, it left the search as if it had finished.
    with pytest.raises(ModelError, match=r"next_state.*raised SystemExit: 0.*IncX\(\)") as e:
        check(Exiting(2))
    assert isinstance(e.value.__cause__, SystemExit)

    def exits(holds):
        def pred(s):
            if s == Pos(1, 1):
                sys.exit("stop")
            return holds
        return pred

    for prop in (always("Exits", exits(True)), sometimes("Exits", exits(False))):
        with pytest.raises(ModelError, match=r"property 'Exits' raised SystemExit: stop.*depth 2"):
            check(Grid(2), properties=[prop])


def test_set_in_a_state_is_rejected():
    with pytest.raises(ModelError, match=r"next state\[1\] is a frozenset.*use sorted tuples.*Add\(\)"):
        check(SetState())


class SetActions(Model):
    def init_states(self):
        return [0]

    def actions(self, s):
        return {action("A"), action("B")} if s == 0 else []

    def next_state(self, s, a):
        return 1

    def is_terminal(self, s):
        return True


class Flaky(Model):
    """next_state depends on a call counter: not deterministic."""

    def __init__(self):
        self.calls = 0

    def init_states(self):
        return [0]

    def actions(self, s):
        return [action("Step")] if s < 1000 else []

    def next_state(self, s, a):
        self.calls += 1
        return s + 1 + self.calls % 2


def test_contract_breaches_are_model_errors():
    with pytest.raises(ModelError, match="returned a set"):
        check(SetActions())
    with pytest.raises(ModelError, match="not deterministic"):
        check(Flaky())


def two_answers(first, then, at=Pos(1, 1)):
    """A predicate that is not deterministic on state ``at`` (the last argument):
    its odd calls there give ``first`` (an exception is raised), its even calls
    ``then``; elsewhere it gives ``then``.  The search's fast check makes the
    first call and its slow path the second."""
    calls = [0]

    def pred(*args):
        if args[-1] != at:
            return then
        calls[0] += 1
        if calls[0] % 2:
            if isinstance(first, Exception):
                raise first
            return first
        return then
    return pred


@pytest.mark.parametrize("prop, said", [
    (always("Shaky", two_answers(False, True)), "property 'Shaky' is not deterministic: it failed or raised, then"),
    (always("Shaky", two_answers(KeyError("zk"), True)), "property 'Shaky' is not deterministic: it failed or raised"),
    (sometimes("Shaky", two_answers(True, False)), "sometimes property 'Shaky' is not deterministic: it held or"),
    (always("Shaky", two_answers(False, True), step=True), "step property 'Shaky' is not deterministic: it failed"),
], ids=["false-then-true", "raise-then-true", "witness-true-then-false", "step-false-then-true"])
def test_a_predicate_that_changes_its_answer_is_a_model_error(prop, said):
    """The fast check and the slow path that words what it found call a predicate
    once each: when they disagree, that is said, rather than taking either answer."""
    with pytest.raises(ModelError) as e:
        check(Grid(2), properties=[always("Fine", lambda s: True), prop])
    msg = str(e.value)
    step = "step property" in said    # a step's predicate is called on (x=1, y=0), IncY, (1, 1)
    assert said in msg and f" at depth {1 if step else 2}" in msg and "fix the property" in msg, msg
    assert ("(reached by action Inc" in msg) != step and ("for action IncY()" in msg) == step, msg


# -- progress and determinism ------------------------------------------------------------

def test_progress_lines():
    out = io.StringIO()
    check(Grid(60), progress=out, progress_interval=0)
    lines = out.getvalue().splitlines()
    assert lines
    pat = re.compile(r"progress: distinct=\d+ generated=\d+ depth=\d+ queue=\d+ states/s=\d+ elapsed=\d+\.\ds$")
    assert all(pat.match(line) for line in lines), lines
    assert len(lines) <= 3721 // 1000 + 1
    quiet = io.StringIO()
    check(Grid(60), progress=quiet, progress_interval=3600)
    assert quiet.getvalue() == ""


SCRIPT = """
import json
from checker.bfs import check
from tests.toys import DieHard, Grid, Graph
out = []
for model in (DieHard(solve=True), Grid(6, 7),
              Graph({"a": [("X", "q"), ("Y", "r")], "q": [("Z", "zz")], "r": [("Z", "zz")]}, bad=("zz",))):
    r = check(model, keep_going=True)
    out.append([r.verdict, r.stats.distinct, r.stats.generated, r.stats.depth,
                [[v.property, [s.fingerprint for s in v.path]] for v in r.violations]])
print(json.dumps(out))
"""


def test_same_results_whatever_the_hash_seed():
    runs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(REPO))
        proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout))
    assert runs[0] == runs[1]
    diehard = runs[0][0]
    assert diehard[:4] == ["violated", 16, 96, 7] and len(diehard[4][0][1]) == 7


# -- the toys family ---------------------------------------------------------------------

def test_family_presets_build_and_check():
    from checker.config import resolve

    expect = {"tiny": (OK, 9), "default": (OK, 16), "broken": (VIOLATED, 16), "deadlock": (VIOLATED, 4)}
    for preset, (verdict, distinct) in expect.items():
        r = check(FAMILY.build(resolve(FAMILY, preset, {})), keep_going=True)
        assert (r.verdict, r.stats.distinct) == (verdict, distinct), preset
    with pytest.raises(ModelError):
        check(FAMILY.build(resolve(FAMILY, "crash", {})))
    assert {"IncX", "FillBig", "Boom"} <= set(FAMILY.action_docs())
    assert {"BigNot4", "SumNotK", "NeverDecreases"} <= {p.name for p in FAMILY.property_docs()}
