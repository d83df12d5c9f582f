"""kmc simulate --random-priority: one visited set, the frontier taken in a random
order fixed by the seed (checker.randompriority).

What must hold: the search depends only on the seed (not on PYTHONHASHSEED); it
checks every state it visits once and, left to run, visits every reachable state;
it reaches a deep violation having visited fewer states than breadth-first search
(the point of the order); a violation is shrunk and replays as an ordinary trace;
bad flags are one-line errors."""

from __future__ import annotations

import json

import pytest

from checker.bfs import check, replay_path
from checker.errors import ModelError, UsageError
from checker.randompriority import priority, run_search, search
from tests import cli_support
from tests.toys import Chain, DieHard, Glitch, Grid, Raising

TOYS = ["--model", "tests.toys:FAMILY"]


def _summary(r):
    return (r.verdict, r.walks, r.steps, r.distinct, r.deepest, r.found_length, r.exhausted,
            [(v.property, [str(s.action) for s in v.path]) for v in r.violations])


def test_same_seed_same_search_and_seeds_differ():
    a = search(Grid(40, k=60), seed=4, shrinking=False)
    assert _summary(a) == _summary(search(Grid(40, k=60), seed=4, shrinking=False))
    counts = {search(Grid(40, k=60), seed=s, shrinking=False).distinct for s in range(5)}
    assert len(counts) > 1                               # the seed changes the order
    assert priority(4, 123) == priority(4, 123) != priority(5, 123)


def test_deep_violation_costs_fewer_states_than_breadth_first():
    # x + y == 60 in a 41 x 41 grid: breadth-first search must first visit every
    # state with x + y < 60; the random order sends fingers deep at once.
    full = check(Grid(40, k=60)).stats.distinct
    assert full == 1451
    seen = [search(Grid(40, k=60), seed=s, shrinking=False).distinct for s in range(5)]
    assert max(seen) < full / 3, seen


def test_visits_every_reachable_state_once_and_then_stops():
    r = search(Grid(6), seed=2)
    assert r.verdict == "bounded" and r.exhausted
    assert r.distinct == check(Grid(6)).stats.distinct == 49
    assert r.steps == 2 * 6 * 7                          # each state expanded once: every edge computed once
    assert r.witnesses["ReachCorner"] is not None and r.walks == 1


def test_violation_is_shrunk_and_replays():
    r = search(DieHard(solve=True), seed=3)
    v = r.violations[0]
    assert v.property == "BigNot4" and len(v.path) - 1 == 6 <= r.found_length
    again = replay_path(DieHard(solve=True), [s.action for s in v.path[1:]])
    assert [s.fingerprint for s in again] == [s.fingerprint for s in v.path]


def test_step_property_deadlock_and_max_steps():
    assert search(Glitch(5, 2), seed=0).violations[0].property == "NeverDecreases"
    d = search(Chain(3), seed=0)
    assert d.violations[0].property == "Deadlock" and len(d.violations[0].path) == 4
    assert search(Chain(3), seed=0, check_deadlock=False).exhausted
    short = search(Grid(6), seed=2, max_steps=3)
    # the states within 3 steps, all checked; the bound cut the search, so it is not "exhausted"
    assert not short.exhausted and short.deepest == 3 and short.distinct == 10


def test_time_limit_cuts_it_short():
    t = search(Grid(2000), seed=0, max_steps=10_000, time_limit=0.05)   # 4 million states
    assert t.verdict == "bounded" and not t.exhausted and t.distinct < 2001 * 2001


def test_errors_and_run_search():
    with pytest.raises(ModelError, match="ZeroDivisionError"):
        search(Raising(5, 2), seed=0)
    with pytest.raises(UsageError, match="seed"):
        search(Grid(2), seed=-1)
    m = Grid(3)
    w, distinct, exhausted = run_search(m, list(m.properties()), 0)
    assert exhausted and distinct == 16 and w.steps == sum(w.action_counts.values()) == 24


# --------------------------------------------------------------------------- CLI

def test_cli_trace_replays_whatever_the_hash_seed(tmp_path):
    args = ("simulate", *TOYS, "--preset", "broken", "--random-priority", "--seed", "5",
            "--traces-dir", tmp_path, "--json")
    r = cli_support.kmc(*args, seed="0")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["violated_property"] == "BigNot4" and doc["shrunk_length"] == 6 and doc["walks"] == 1
    trace = json.loads(open(doc["trace_path"]).read())
    assert trace["engine"] == "simulate-random-priority"
    assert cli_support.kmc("replay", *TOYS, doc["trace_path"]).returncode == 0
    again = json.loads(cli_support.kmc(*args, seed="123").stdout)
    for key in ("steps", "distinct", "found_length", "trace_path"):
        assert again[key] == doc[key], key


def test_cli_bad_flags(tmp_path):
    for extra in (["--stateful"], ["--walks", "3"], ["--no-swarm"], ["--walk-states", "5"], ["--engine", "spark"]):
        cli_support.one_line_error(cli_support.kmc("simulate", *TOYS, "--random-priority", *extra), extra[0])
    r = cli_support.kmc("simulate", *TOYS, "--preset", "tiny", "--random-priority", "--traces-dir", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "every reachable state within --max-steps visited" in r.stdout and "NO VIOLATION FOUND" in r.stdout
