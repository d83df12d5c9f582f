"""End to end on the Kafka model, the way a user runs it: `kmc check` writes a
counterexample, `kmc replay` re-derives it, results do not depend on
PYTHONHASHSEED, and every saved trace under traces/ still replays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import cli_support

ROOT = Path(__file__).resolve().parent.parent
KAFKA = ["--model", "spec.family:FAMILY"]


def kmc(*args, seed="0", cwd=ROOT):
    return cli_support.kmc(*args, cwd=cwd, seed=seed, timeout=600)


STABLE = ("distinct", "generated", "depth", "verdict", "violated_property", "witnesses", "action_counts")


@pytest.mark.parametrize("preset", ["tiny", "zombie", "no-controller-fencing"])
def test_same_answers_whatever_the_hash_seed(preset, tmp_path):
    runs = []
    for seed in ("1", "4242"):
        out = tmp_path / seed
        p = kmc("check", *KAFKA, "--preset", preset, "--json", "--quiet", "--traces-dir", str(out), seed=seed)
        assert p.returncode in (0, 1), p.stderr
        d = json.loads(p.stdout)
        traces = [json.loads(Path(t).read_text()) for t in d["trace_paths"]]
        runs.append(({k: d[k] for k in STABLE},
                     [[s["fingerprint"] for s in t["steps"]] for t in traces],
                     [[s["action"] for s in t["steps"]] for t in traces]))
    assert runs[0] == runs[1]


def test_zombie_trace_replays_step_by_step(tmp_path):
    p = kmc("check", *KAFKA, "--preset", "zombie", "--traces-dir", str(tmp_path))
    assert p.returncode == 1, p.stderr
    [trace] = list(tmp_path.glob("*.json"))
    assert "kmc replay " + str(trace) in p.stdout + p.stderr
    r = kmc("replay", str(trace))
    assert r.returncode == 0, r.stderr
    for line in ("step 1  ElectController(broker=0)", "step 2  ExpireSession(broker=0)",
                 "step 4  ElectLeader(controller=0, partition=0, leader=0, strategy='new', clean=True)"):
        assert line in r.stdout
    assert "zk.controller: 0 -> -1" in r.stdout
    first = kmc("replay", str(trace), "--step", "2")
    assert first.returncode == 0 and "step 3" not in first.stdout


KNOWN = sorted((ROOT / "traces").rglob("*.json"))


@pytest.mark.parametrize("trace", KNOWN, ids=[str(t.relative_to(ROOT)) for t in KNOWN])
def test_every_saved_trace_replays(trace):
    r = kmc("replay", str(trace))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr


def test_bad_preset_is_one_line_exit_2():
    p = kmc("check", *KAFKA, "--preset", "zombi")
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert "zombie" in p.stderr


def test_readme_invariants_example(tmp_path):
    """The README's --invariants example: one user property holds, one is too strong
    and gets a trace, one witness needs a second failover."""
    p = kmc("check", *KAFKA, "--preset", "tiny", "--invariants", "examples/invariants.py", "--continue",
            "--json", "--quiet", "--traces-dir", str(tmp_path))
    assert p.returncode == 1, p.stderr
    d = json.loads(p.stdout)
    assert d["violated_properties"] == ["ZkLeaderIsRegistered", "ThreeControllerEpochs"]
    assert [v["steps"] for v in d["violations"]][0] == 4   # initial state + 3 actions
    p2 = kmc("check", *KAFKA, "--preset", "tiny", "--invariants", "examples/invariants.py",
             "--property", "NoBrokerAheadOfZooKeeper", "--property", "ThreeControllerEpochs",
             "--set", "max_crashes=2", "--set", "max_controller_failovers=2", "--json", "--quiet",
             "--traces-dir", str(tmp_path))
    assert p2.returncode == 0, p2.stdout + p2.stderr
    assert json.loads(p2.stdout)["witnesses"]["ThreeControllerEpochs"] is not None
