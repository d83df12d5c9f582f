"""The reference cluster as processes on a real ZooKeeper ensemble, under faults.

Each test starts three brokers (impl/node.py; four for the reassignment) on a fresh
chroot of the module's 3-server ensemble, creates the topic (RF 3,
min.insync.replicas=2, unclean election off), produces with acks=all while it injects
its fault, heals, and checks (``ProcessCluster.check``): no acknowledged record lost,
at most one controller per controller epoch, a serving leader for every partition
with a live ISR member, every state-change log parses.  Set KMC_CLUSTER_REPORT to a
file to get one JSON line per run (fault, acknowledged, lost, seconds).
"""

from __future__ import annotations

import json
import os
import time

import pytest

from impl.proccluster import ProcessCluster
from tests.zk_support import validate_run, zk_ensemble, zk_hosts  # noqa: F401 - fixtures

pytestmark = pytest.mark.cluster

FAULT_SECONDS = 2.0          # how long a fault lasts before it is healed


@pytest.fixture
def cluster(zk_hosts, tmp_path, request):
    brokers = getattr(request, "param", 3)
    c = ProcessCluster(zk_hosts, tmp_path / "cluster", brokers=brokers)
    c.t0 = time.monotonic()
    c.create_topic()
    c.start()
    try:
        c.wait_for_leaders()
        c.wait_for_full_isr()
        yield c
    finally:
        c.stop()


def _report(c: ProcessCluster, fault: str, prod, reassignments: str = "") -> dict:
    r = c.check(prod.acknowledged)
    r.update(fault=fault, attempts=prod.attempts, seconds=round(time.monotonic() - c.t0, 1),
             controller_epoch=c.controller_epoch(), dir=str(c.dir))
    c.stop()                                      # the logs are complete: validate them
    t = time.monotonic()
    run, v = validate_run(c, reassignments)
    r.update(events=len(run.events), validated=v.validated, accepted=v.ok, model_states=v.states,
             validation_seconds=round(time.monotonic() - t, 1), zxid_notes=run.notes)
    out = os.environ.get("KMC_CLUSTER_REPORT")
    if out:
        with open(out, "a") as f:
            f.write(json.dumps(r) + "\n")
    assert r["lost"] == 0 and r["acknowledged"] > 0, r
    assert prod.metadata_requests > 0, "the producer routes by the brokers' metadata caches"
    assert not run.notes, run.notes
    assert v.ok, v.render()
    return r


def _settle(c: ProcessCluster, prod, seconds: float = 1.0) -> None:
    n = len(prod.acknowledged)
    c.wait(lambda: len(prod.acknowledged) > n, 30, "the producer to be acknowledged again")
    time.sleep(seconds)


def _follower(c: ProcessCluster) -> int:
    leader, ctl = c.leader_of(0), c.controller()
    return next(b for b in range(c.n) if b not in (leader, ctl))


def test_kill_9_follower_during_produce(cluster):
    c = cluster
    with c.producing() as prod:
        _settle(c, prod)
        victim = _follower(c)
        c.kill(victim)
        time.sleep(FAULT_SECONDS)
        _settle(c, prod)                          # min.insync.replicas=2: two replicas still take writes
        c.restart(victim)
        c.wait_for_full_isr()
        _settle(c, prod)
    _report(c, "kill-follower", prod)


def test_kill_9_leader_during_produce(cluster):
    c = cluster
    with c.producing() as prod:
        _settle(c, prod)
        leader = c.leader_of(0)
        epoch = c.state(0).leader_epoch
        c.kill(leader)
        c.wait(lambda: c.state(0).leader_epoch > epoch and c.leader_of(0) != leader, 30, "a new leader")
        _settle(c, prod)
        c.restart(leader)
        c.wait_for_full_isr()
        _settle(c, prod)
    _report(c, "kill-leader", prod)


def test_kill_9_controller_during_produce(cluster):
    c = cluster
    with c.producing() as prod:
        _settle(c, prod)
        ctl, epoch = c.controller(), c.controller_epoch()
        c.kill(ctl)
        c.wait(lambda: c.controller_epoch() > epoch and c.controller() not in (-1, ctl), 30, "a new controller")
        _settle(c, prod)
        c.restart(ctl)
        c.wait_for_full_isr()
        _settle(c, prod)
    _report(c, "kill-controller", prod)


def test_sigstop_controller_past_its_session_timeout_makes_a_zombie(cluster):
    c = cluster
    with c.producing() as prod:
        _settle(c, prod)
        ctl, epoch = c.controller(), c.controller_epoch()
        c.pause(ctl)
        c.wait(lambda: c.controller_epoch() > epoch and c.controller() not in (-1, ctl), 30,
               "the paused controller's session to expire and a new controller")
        _settle(c, prod)
        c.resume(ctl)                             # the zombie wakes up with its old epoch
        c.wait(lambda: ctl in c.registered(), 30, "the zombie to register again")
        c.wait_for_full_isr()
        _settle(c, prod)
        assert c.controller() != ctl or c.controller_epoch() > epoch + 1
    _report(c, "stop-controller", prod)


def test_sigstop_zookeeper_servers_including_the_leader(cluster, zk_ensemble):
    c = cluster
    with c.producing() as prod:
        _settle(c, prod)
        follower = next(i for i, m in enumerate(zk_ensemble.modes()) if m == "follower")
        zk_ensemble.pause(follower)
        time.sleep(FAULT_SECONDS)
        zk_ensemble.resume(follower)
        zk_ensemble.wait_for_quorum(30)
        _settle(c, prod)
        leader = zk_ensemble.leader()
        zk_ensemble.pause(leader)
        time.sleep(FAULT_SECONDS)
        zk_ensemble.resume(leader)
        zk_ensemble.wait_for_quorum(30)
        c.wait_for_full_isr()
        _settle(c, prod)
    _report(c, "stop-zookeeper", prod)


def test_restart_keeps_the_log_directory(cluster):
    c = cluster
    with c.producing() as prod:
        _settle(c, prod, 2.0)
        victim = _follower(c)
        c.kill(victim)
        kept = json.loads((c.dir / f"broker-{victim}" / "logs.json").read_text())[0]["records"]
        assert kept, "the follower had fetched records before it was killed"
        c.restart(victim)
        c.wait_for_full_isr()
        _settle(c, prod)
    text = (c.dir / f"broker-{victim}.stderr").read_text()
    assert f"started, logs [('t-0', {len(kept)})]" in text       # the restarted process read them back
    _report(c, "restart-keeps-logs", prod)


@pytest.mark.parametrize("cluster", [4], indirect=True)
def test_reassignment_while_a_broker_is_killed(cluster):
    c = cluster
    with c.producing() as prod:
        _settle(c, prod)
        old = c.assignment(0)
        c.kill(old[-1])
        c.reassign(0, (old[0], old[1], 3))        # move the dead replica's place to broker 3
        c.wait(lambda: not c.reassignment_pending(), 60, "the reassignment to complete")
        assert c.assignment(0) == (old[0], old[1], 3)
        _settle(c, prod)
        c.restart(old[-1])
        _settle(c, prod)
    # The controller, not yet aware of the kill, queues requests for the dead broker; the
    # restarted process gets them once it has registered (docs/cluster.md).
    _report(c, "reassign-killed", prod, reassignments=f"0:{old[0]},{old[1]},3")
