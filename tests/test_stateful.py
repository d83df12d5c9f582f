"""kmc simulate --stateful: randomized depth-first search with one visited set
(checker.stateful).

What must hold: the search depends only on the seed (not on PYTHONHASHSEED); it
checks every state it visits once and, left to run, visits every reachable state;
a violation is shrunk and replays as an ordinary trace; the swarm budgets order
actions without cutting any; bad flags are one-line errors."""

from __future__ import annotations

import json

import pytest

from checker.bfs import check, replay_path
from checker.errors import ModelError, UsageError
from checker.stateful import run_search, search
from tests import cli_support
from tests.toys import Chain, DieHard, Glitch, Grid, Raising
from tests.test_simulate import Faulty

TOYS = ["--model", "tests.toys:FAMILY"]


def _summary(r):
    return (r.verdict, r.walks, r.steps, r.distinct, r.deepest, r.walk, r.found_length, r.exhausted,
            [(v.property, [str(s.action) for s in v.path]) for v in r.violations])


def test_same_seed_same_search():
    a = search(DieHard(solve=True), seed=4, walk_states=3)
    b = search(DieHard(solve=True), seed=4, walk_states=3)
    assert _summary(a) == _summary(b)
    assert a.walks > 1                                   # several restarts, each with its own draw
    assert a.violations[0].property == "BigNot4"


def test_visits_every_reachable_state_once_and_then_stops():
    m = Grid(6)                                          # 7 x 7 states, no violation
    r = search(m, seed=2, walk_states=5)
    full = check(Grid(6))
    assert r.verdict == "bounded" and r.exhausted
    assert r.distinct == full.stats.distinct == 49
    assert r.witnesses["ReachCorner"] is not None
    assert r.walks > 49 // 5                             # restarts went on from the abandoned stacks


def test_unfair_kinds_over_budget_come_last_but_are_not_cut():
    m = Faulty()                                         # (ticks, faults), ticks to 30: 31 * 32 / 2 states
    r = search(m, seed=11, walk_states=10_000)
    assert r.exhausted and r.distinct == 31 * 32 // 2


def test_violation_is_shrunk_and_replays():
    r = search(DieHard(solve=True), seed=3)
    v = r.violations[0]
    assert v.property == "BigNot4" and len(v.path) - 1 == 6 <= r.found_length
    again = replay_path(DieHard(solve=True), [s.action for s in v.path[1:]])
    assert [s.fingerprint for s in again] == [s.fingerprint for s in v.path]


def test_step_property_deadlock_and_max_steps():
    r = search(Glitch(5, 2), seed=0)
    assert r.violations[0].property == "NeverDecreases"
    d = search(Chain(3), seed=0)
    assert d.violations[0].property == "Deadlock" and len(d.violations[0].path) == 4
    assert search(Chain(3), seed=0, check_deadlock=False).exhausted
    short = search(Grid(6), seed=2, max_steps=3)
    assert short.exhausted and short.deepest == 3 and short.distinct == 10   # the states within 3 steps


def test_walks_and_time_limit_cut_it_short():
    r = search(Grid(30), seed=0, walk_states=10, walks=4)
    assert r.walks == 4 and r.distinct == 40 and not r.exhausted
    t = search(Grid(2000), seed=0, max_steps=10_000, walks=1000, time_limit=0.05)   # 4 million states
    assert t.verdict == "bounded" and not t.exhausted


def test_errors():
    with pytest.raises(ModelError, match="ZeroDivisionError"):
        search(Raising(5, 2), seed=0)
    with pytest.raises(UsageError, match="walk_states"):
        search(Grid(2), walk_states=0)
    with pytest.raises(UsageError, match="seed"):
        search(Grid(2), seed=-1)


def test_run_search_reports_what_it_saw():
    m = Grid(3)
    w, distinct, exhausted = run_search(m, list(m.properties()), 0)
    assert exhausted and distinct == 16 and w.steps == sum(w.action_counts.values())


# --------------------------------------------------------------------------- CLI

def test_cli_trace_replays_whatever_the_hash_seed(tmp_path):
    args = ("simulate", *TOYS, "--preset", "broken", "--stateful", "--walk-states", "3", "--seed", "5",
            "--traces-dir", tmp_path, "--json")
    r = cli_support.kmc(*args, seed="0")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["violated_property"] == "BigNot4" and doc["shrunk_length"] == 6
    trace = json.loads(open(doc["trace_path"]).read())
    assert trace["engine"] == "simulate-stateful"
    assert cli_support.kmc("replay", *TOYS, doc["trace_path"]).returncode == 0
    again = json.loads(cli_support.kmc(*args, seed="123").stdout)
    for key in ("walks", "steps", "distinct", "found_length", "trace_path"):
        assert again[key] == doc[key], key


def test_cli_bad_flags(tmp_path):
    cli_support.one_line_error(cli_support.kmc("simulate", *TOYS, "--stateful", "--engine", "spark"), "--stateful")
    cli_support.one_line_error(cli_support.kmc("simulate", *TOYS, "--walk-states", "5"), "--walk-states")
    cli_support.one_line_error(cli_support.kmc("simulate", *TOYS, "--stateful", "--walk-states", "0"),
                               "--walk-states")
    r = cli_support.kmc("simulate", *TOYS, "--preset", "tiny", "--stateful", "--traces-dir", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "every reachable state within --max-steps visited" in r.stdout and "NO VIOLATION FOUND" in r.stdout
