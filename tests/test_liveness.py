"""Liveness under weak fairness (checker.liveness): toy models whose lassos are
known by hand, the Kafka model's EventuallyLeaderElected, lasso traces through
`kmc check` and `kmc replay`, and the refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checker.config import resolve
from checker.graph import explore
from checker.liveness import check_liveness, lasso_text, to_violation
from checker.model import Model, action, eventually
from tests import cli_support
from tests.liveness_toys import Flap, Grant, Relay
from tests.toys import Graph, Unbounded

ROOT = Path(__file__).resolve().parent.parent
TOYS = ["--model", "tests.liveness_toys:FAMILY"]
KAFKA = ["--model", "spec.family:FAMILY"]


def kmc(*args, cwd=ROOT, seed="0"):
    return cli_support.kmc(*args, cwd=cwd, seed=seed)


def one_line_error(r, needle=""):
    return cli_support.one_line_error(r, needle, prefix="kmc: error: ")


def flat(text):
    """Output without its line wrapping."""
    return " ".join(text.split())


def lassos(model, props=None):
    return [lasso_text(v) for v in check_liveness(explore(model), model, props)]


# ------------------------------------------------------------------------- toys

def test_unbounded_faults_make_a_real_lasso():
    m = Relay(drops=-1)
    [v] = check_liveness(explore(m), m)
    assert lasso_text(v) == "Delivered: stem [] loop [Send(), Drop()]"
    t = to_violation(v)
    assert t.kind == "eventually" and t.loop_start == 0 and len(t.path) == 3
    assert t.path[-1].fingerprint == t.path[0].fingerprint      # the loop closes


def test_bounded_faults_cannot_stop_progress():
    assert lassos(Relay(drops=2)) == []


def test_a_cycle_that_starves_a_continuously_enabled_fair_action_is_not_reported():
    # Flap, Flap... keeps Finish enabled in every state and never takes it.
    assert lassos(Flap(fair_finish=True)) == []
    assert lassos(Flap(fair_finish=False)) == ["Done: stem [] loop [Flap(), Flap()]"]


def test_weak_fairness_not_strong():
    # Finish is enabled only in state 1: the loop 0 -> 1 -> 0 does not keep it
    # *continuously* enabled, so weak fairness lets it be ignored for ever.
    m = Graph({"a": [("Go", "b")], "b": [("Back", "a"), ("Finish", "done")]}, terminal=("done",))
    m.properties = lambda: [eventually("Done", lambda s: s == "done")]
    assert lassos(m) == ["Done: stem [] loop [Go(to='b'), Back(to='a')]"]


class Two(Model):
    """Two workers: Work(p=1) toggles a bit for ever, Work(p=0) finishes."""

    def init_states(self):
        return [(False, 0)]

    def actions(self, s):
        return ([] if s[0] else [action("Work", p=0)]) + [action("Work", p=1)]

    def next_state(self, s, a):
        return (True, s[1]) if a.get("p") == 0 else (s[0], 1 - s[1])

    def properties(self):
        return [eventually("Finished", lambda s: s[0])]


def test_fairness_is_per_action_instance():
    # Per action *name*, "Work" is taken on the toggling loop and the loop would
    # count as fair; per instance, Work(p=0) stays enabled and is never taken.
    assert lassos(Two()) == []


def test_the_loop_detours_to_take_what_it_keeps_enabled():
    # The shortest cycle a -> b -> a keeps F enabled; the loop goes on to take it.
    m = Graph({"a": [("x", "b"), ("F", "c")], "b": [("y", "a"), ("F", "c")], "c": [("w", "a"), ("F", "c")]})
    m.properties = lambda: [eventually("Never", lambda s: False)]
    assert lassos(m) == ["Never: stem [] loop [x(to='b'), y(to='a'), F(to='c'), w(to='a')]"]


def test_the_stem_is_a_shortest_one():
    m = Graph({"a": [("x", "b"), ("y", "d")], "b": [("z", "c")]})
    m.properties = lambda: [eventually("Never", lambda s: False)]
    assert lassos(m) == ["Never: stem [y(to='d')] loop []"]


def test_leads_to_stutters_where_only_unfair_actions_are_enabled():
    [v] = check_liveness(explore(Grant(grant_fair=False)), Grant(grant_fair=False))
    assert lasso_text(v) == "Granted: stem [Request()] loop []" and v.trigger_at == 1
    assert "only unfair actions are enabled there (Grant())" in v.message()
    assert lassos(Grant(grant_fair=True)) == []
    never = eventually("Never", lambda s: s.granted, trigger=lambda s: False)
    assert lassos(Grant(grant_fair=False), [never]) == []


def test_states_outside_the_boundary_are_not_stutters():
    m = Unbounded(limit=5)
    g = explore(m)
    assert not g.complete and g.unexpanded
    assert check_liveness(g, m, [eventually("Never", lambda s: False)]) == []


# ---------------------------------------------------------------- kmc check/replay

def test_lasso_trace_replays_stem_and_loop(tmp_path):
    r = kmc("check", *TOYS, "--preset", "lasso", "--traces-dir", tmp_path, "--json", "--quiet")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["violated_properties"] == ["Delivered"] and doc["violations"][0]["loop_start"] == 0
    assert doc["liveness"]["violated"] == ["Delivered"]
    trace = json.loads(Path(doc["trace_path"]).read_text())
    assert trace["format_version"] == 1 and trace["loop_start"] == 0
    assert [s["action"] and s["action"]["name"] for s in trace["steps"]] == [None, "Send", "Drop"]
    rep = kmc("replay", doc["trace_path"], *TOYS)
    assert rep.returncode == 0, rep.stderr
    for line in ("violated by a lasso: stem steps 0..0, then the loop of steps 1..2 for ever",
                 "---- loop: from the state of step 0, steps 1..2 repeat for ever ----",
                 "---- back at the state of step 0", "is still violated"):
        assert line in rep.stdout, rep.stdout


def test_replay_rechecks_the_loop_is_fair(tmp_path):
    r = kmc("check", *TOYS, "--preset", "flap-unfair", "--traces-dir", tmp_path, "--quiet")
    assert r.returncode == 1, r.stderr
    [path] = tmp_path.glob("*.json")
    assert kmc("replay", path, *TOYS).returncode == 0
    doc = json.loads(path.read_text())
    doc["config"]["fair"] = True              # same states, but Finish is fair now
    path.write_text(json.dumps(doc))
    rep = kmc("replay", path, *TOYS)
    assert rep.returncode == 1
    assert "the loop is not fair: Finish() stays enabled on it and is never taken" in flat(rep.stdout)
    doc["loop_start"] = 1                     # a loop that does not close
    path.write_text(json.dumps(doc))
    one_line_error(kmc("replay", path, *TOYS), "the loop does not close")


def test_leads_to_stutter_replays(tmp_path):
    r = kmc("check", *TOYS, "--preset", "stutter", "--traces-dir", tmp_path, "--quiet")
    assert r.returncode == 1 and "only unfair actions are enabled there (Grant())" in flat(r.stdout)
    [path] = tmp_path.glob("*.json")
    rep = kmc("replay", path, *TOYS)
    assert rep.returncode == 0, rep.stderr
    assert "---- the lasso ends here: the behaviour stays at step 1 for ever (a stutter) ----" in rep.stdout
    assert "(where its trigger holds)" in rep.stdout


def test_named_eventually_properties_are_refused_where_they_cannot_be_checked(tmp_path):
    base = ["check", *TOYS, "--preset", "bounded", "--traces-dir", tmp_path, "--property", "Delivered"]
    one_line_error(kmc(*base, "--engine", "spark", "--resume", tmp_path),
                   "a run resumed from a checkpoint never sees the levels before it; run without --resume")
    one_line_error(kmc(*base, "--max-depth", "3"), "drop --max-depth")
    one_line_error(kmc(*base, "--max-states", "5"), "raise --max-states (now 5)")
    # Checked by default, they are skipped with a note instead.
    r = kmc("check", *TOYS, "--preset", "bounded", "--traces-dir", tmp_path, "--max-depth", "3")
    assert r.returncode == 0 and "liveness: Delivered not checked: a depth bound" in flat(r.stdout)


def test_eventually_properties_are_skipped_on_a_resumed_spark_run_only():
    """A resumed Spark run never sees the levels saved before it, so it cannot
    build the graph: skipped with a note, or refused if named; a Spark run from the
    start builds it (CheckRun.visitor), as the local engine's does."""
    from checker.liveness import CheckRun
    from tests.liveness_toys import Relay

    model = Relay()
    live = CheckRun(model, model.properties(), [], "spark", None, None, "kmc check", resume=True)
    assert not live.active and live.visitor() is None
    assert live.skipped == ("Delivered not checked: it needs the whole state graph, and a run resumed from a "
                            "checkpoint never sees the levels before it (run without --resume)")
    live = CheckRun(model, model.properties(), [], "spark", None, None, "kmc check")
    assert live.active and live.visitor() is not None


def test_same_lasso_whatever_the_hash_seed(tmp_path):
    runs = []
    for seed in ("1", "777"):
        r = kmc("check", *KAFKA, "--preset", "tiny", "--invariants", "examples/liveness.py", "--property",
                "EventuallyAnyLeader", "--json", "--quiet", "--traces-dir", tmp_path / seed, seed=seed)
        assert r.returncode == 1, r.stderr
        trace = json.loads(Path(json.loads(r.stdout)["trace_path"]).read_text())
        runs.append([s["fingerprint"] for s in trace["steps"]])
    assert runs[0] == runs[1]


# ------------------------------------------------------------------------ Kafka

def kafka(preset, **overrides):
    from spec.family import FAMILY
    return FAMILY.build(resolve(FAMILY, preset, overrides))


def test_kafka_leader_eventually_elected_on_tiny():
    m = kafka("tiny")
    assert "EventuallyLeaderElected" in [p.name for p in m.properties() if p.kind == "eventually"]
    assert not m.fair(action("CrashBroker", broker=0)) and m.fair(action("BrokerFailure", controller=0, broker=1))
    assert lassos(m) == []


def test_kafka_zombie_cannot_undo_its_successors_election():
    # Without zk_epoch_fencing (before KAFKA-6082) a zombie's preferred election used
    # to overwrite the znode its successor wrote, and with every broker rejecting its
    # LeaderAndIsr no one led, for ever.  Kafka's "already written by another
    # controller" check (spec.controller.newer_mark) rules that write out, and with it
    # the only lasso of ``zombie``.
    assert check_liveness(explore(kafka("zombie")), kafka("zombie")) == []


def test_kafka_unscoped_leader_fails_without_unclean_election(tmp_path):
    """The failing variant: every ISR member down, unclean election off."""
    base = ["check", *KAFKA, "--preset", "tiny", "--invariants", "examples/liveness.py",
            "--property", "EventuallyAnyLeader", "--quiet"]
    r = kmc(*base, "--traces-dir", tmp_path)
    assert r.returncode == 1, r.stderr
    [path] = tmp_path.glob("*.json")
    trace = json.loads(path.read_text())
    names = [s["action"]["name"] for s in trace["steps"][1:]]
    assert "ShrinkIsr" in names and "CrashBroker" in names
    assert trace["loop_start"] == len(trace["steps"]) - 1       # a stutter: the cluster rests there
    assert "only unfair actions are enabled there (RestartBroker(broker=0))" in flat(r.stdout)
    rep = kmc("replay", path, "--invariants", "examples/liveness.py")
    assert rep.returncode == 0 and "is still violated" in rep.stdout, rep.stdout + rep.stderr
    ok = kmc(*base, "--set", "unclean_leader_election=true", "--traces-dir", tmp_path / "u")
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_kafka_leader_is_not_demanded_of_a_broker_in_controlled_shutdown():
    """Kafka never elects a broker in controlled shutdown (``liveBrokerIds``), so
    EventuallyLeaderElected leaves out a partition whose only live ISR member is one.
    Controller 0 shuts itself down, its controlled-shutdown election moves the
    leadership to broker 1, broker 0 rejoins the ISR and broker 1 crashes: broker 0 is
    the last live ISR member, no election is enabled, and the cluster may rest there
    (the stop is not fair).  Scoped, nothing is missing; unscoped, partition 0 is.
    Once a new controller, which forgets the shutdown, holds /controller, it is
    demanded again."""
    from spec.liveness import leaderless_partitions
    from tests.walk_support import LAST_ISR_MEMBER_SHUTTING_DOWN, prefix_path
    m = kafka("shutdown")
    s, acts = prefix_path(m, *LAST_ISR_MEMBER_SHUTTING_DOWN, "RemoveReplicaFromIsr(controller=0, partition=0, replica=1)")
    assert not [a for a in m.actions(s) if a.name == "ElectLeader"]
    assert leaderless_partitions(s) == [] and leaderless_partitions(s, scoped=False) == [0]
    zk = s.zk._replace(controller=-1)
    assert leaderless_partitions(s._replace(zk=zk)) == [0]


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["small", "delete", "shutdown"])
def test_kafka_leader_eventually_elected_larger(preset):
    assert lassos(kafka(preset)) == []
