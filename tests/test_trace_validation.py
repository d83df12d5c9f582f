"""Trace validation (checker/tracecheck.py) on the Kafka model.

Fast: traces made from the model's own paths are accepted, and the same trace with one
observed value changed is rejected at that event.  Cluster (marker ``cluster``): a run
of deliberately broken brokers (impl/broken.py) is rejected, with the candidates'
diffs; the fault tests (tests/test_cluster_faults.py) validate every correct run.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from checker.config import resolve
from checker.tracecheck import Event, validate
from impl.observed import project
from impl.proccluster import ProcessCluster
from spec.family import FAMILY
from tests.zk_support import validate_run, zk_ensemble, zk_hosts  # noqa: F401 - fixtures

CONFIG = {"brokers": 3, "max_crashes": 1, "max_session_expiries": 1, "max_controller_failovers": 1,
          "max_isr_shrinks": 1}


def _walk(model, seed: int, steps: int):
    """A random path of the model and the events its logs would hold: every step that
    changes a projected key is one event naming exactly the keys it changed."""
    rng = random.Random(seed)
    s = model.init_states()[0]
    events = []
    for _ in range(steps):
        acts = list(model.actions(s))
        if not acts:
            break
        a = rng.choice(acts)
        t = model.next_state(s, a)
        before, after = project(model.observe(s)), project(model.observe(t))
        changed = {k: v for k, v in after.items() if before.get(k, object()) != v}
        if changed:
            events.append(Event(str(a), changed))
        s = t
    return events


@pytest.mark.parametrize("seed", range(4))
def test_the_model_s_own_traces_validate_and_a_changed_value_is_rejected(seed):
    model = FAMILY.build(resolve(FAMILY, None, CONFIG))
    events = _walk(model, seed, 40)
    assert len(events) >= 3
    ok = validate(model, events, project)
    assert ok.ok and ok.validated == len(events), ok.render()
    # change the leader (or another value) of one event: no model path explains it
    i = len(events) // 2
    key = sorted(events[i].constraints)[0]
    value = events[i].constraints[key]
    bad = dict(events[i].constraints)
    bad[key] = [99] if isinstance(value, list) else 99
    tampered = events[:i] + [Event("tampered " + events[i].label, bad)] + events[i + 1:]
    r = validate(model, tampered, project)
    assert not r.ok and r.failed_at == i and r.validated == i
    assert f"REJECTED at event {i + 1}" in r.render()


@pytest.mark.cluster
def test_a_broken_election_is_rejected_by_trace_validation(zk_hosts, tmp_path):
    """Every broker elects the *last* live ISR member (impl/broken.py "election"): the
    run itself loses nothing, but its first failover writes a leader the model never
    elects, and validation names that znode write and the model's candidate."""
    c = ProcessCluster(zk_hosts, tmp_path / "cluster", broken={b: "election" for b in range(3)})
    c.create_topic()
    c.start()
    try:
        c.wait_for_leaders()
        c.wait_for_full_isr()
        with c.producing() as prod:
            time.sleep(1)
            leader, epoch = c.leader_of(0), c.state(0).leader_epoch
            c.kill(leader)
            c.wait(lambda: c.state(0).leader_epoch > epoch and c.leader_of(0) != leader, 30, "a new leader")
            time.sleep(1)
        assert c.check(prod.acknowledged)["lost"] == 0
    finally:
        c.stop()
    run, v = validate_run(c)
    assert not v.ok, v.render()
    text = v.render()
    assert "zk-writes.log" in v.event.label and "/partitions/0/state" in v.event.label
    assert "candidate ElectLeader" in text and "zk.p0.leader: observed" in text


# -- kmc cluster ---------------------------------------------------------------------------------------

def test_kmc_cluster_bad_faults_are_one_line_errors():
    from tests import cli_support
    r = cli_support.kmc("cluster", "--faults", "kill,explode", "--seconds", "1", timeout=60)
    cli_support.one_line_error(r, "unknown fault kind 'explode'")


def test_kmc_cluster_bad_broken_kind_and_dir_are_refused_before_any_process_starts(tmp_path):
    # Before, --broken nope started a ZooKeeper ensemble and three brokers, which then
    # died on their own usage error; --dir FILE was an internal error (exit 4).
    from tests import cli_support
    r = cli_support.kmc("cluster", "--broken", "nope", "--seconds", "1", "--dir", tmp_path / "run", timeout=60)
    cli_support.one_line_error(r, "unknown --broken kind 'nope'; choose from controller-epoch-check, election")
    assert not (tmp_path / "run").exists()
    (tmp_path / "file").write_text("mine")
    r = cli_support.kmc("cluster", "--dir", tmp_path / "file", "--seconds", "1", timeout=60)
    cli_support.one_line_error(r, f"--dir '{tmp_path / 'file'}' is a file, not a directory")
    assert (tmp_path / "file").read_text() == "mine"


@pytest.mark.cluster
def test_kmc_cluster_runs_faults_checks_and_validates(tmp_path):
    """A bounded ``kmc cluster``: ten seconds of random kill and stop faults."""
    from tests import cli_support
    r = cli_support.kmc("cluster", "--seconds", "10", "--faults", "kill,stop,restart", "--seed", "1",
                        "--dir", str(tmp_path / "run"), timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "lost: 0" in r.stdout and "trace validated:" in r.stdout
    assert "at most one controller acted in each" in r.stdout


@pytest.mark.cluster
def test_sigterm_stops_kmc_cluster_and_every_process_it_started(tmp_path):
    """SIGTERM (timeout, a CI limit) ended kmc cluster at once: the ZooKeeper servers
    and the brokers went on running, one of them SIGSTOPped for good.  Now it stops
    them as Ctrl-C does, and exits 130."""
    import os
    import signal
    import subprocess
    import sys

    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "checker", "cluster", "--seconds", "120", "--faults", "stop",
                             "--dir", str(run)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).parent.parent)
    try:
        for line in proc.stderr:
            if "cluster up" in line:
                break
        time.sleep(4)           # into the first SIGSTOP of a broker
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    assert "terminated (SIGTERM): the ZooKeeper ensemble and the brokers were stopped" in err

    def ours():
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if str(run).encode() in cmdline:
                found.append(pid)
        return found

    deadline = time.monotonic() + 30
    while ours() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not ours(), "processes of the run are still running"
