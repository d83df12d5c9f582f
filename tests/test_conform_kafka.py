"""Conformance of the reference broker (impl/) to the Kafka model (spec/), through the
generic harness (checker.conform) and `kmc conform`.

The harness has to have teeth: each test in the second half injects one deliberate bug
into impl/ (monkeypatched, so nothing in impl/ changes) and asserts that conformance
reports it, at a step and in a field that point at the bug.  The corpus for those is
targeted to keep the default suite fast: for every transition of the bug's kind in the
state graph, the shortest path that ends with it (the tests marked slow replay the full
covering set instead)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import impl.election as election
import impl.log as implog
import impl.replica_manager as replica_manager
import impl.zkclient as zkclient
from checker.config import resolve
from checker.conform import RAISED, REFUSED, STATE, Harness, covering_set, shrink
from checker.graph import explore
from checker.prefixes import pickled, replay
from checker.trace import load_trace
from impl.adapter import TOPIC, KafkaImplementation
from spec.family import FAMILY
from tests import cli_support
from tests.walk_support import prefix_path

ROOT = Path(__file__).resolve().parent.parent
KAFKA = ["--model", "spec.family:FAMILY"]
KNOWN = sorted((ROOT / "traces" / "known").glob("*.json"))
TP0 = zkclient.TopicPartition(TOPIC, 0)

# The data path at its smallest: 2 brokers, 1 record, 1 crash (2,065 states).
DATA = {"max_records": 1, "max_crashes": 1, "max_session_expiries": 0, "max_isr_shrinks": 0,
        "preferred_election": False}
# 3 replicas, so that an offline election has a choice (12,027 states).
THREE = {"brokers": 3, "replication_factor": 3, "max_crashes": 1, "max_session_expiries": 0,
         "max_controller_failovers": 0, "preferred_election": False}


def kmc(*args, timeout: int = 300) -> subprocess.CompletedProcess:
    return cli_support.kmc(*args, timeout=timeout)


def harness(preset: str | None, overrides: dict) -> Harness:
    cfg = resolve(FAMILY, preset, overrides)
    return Harness(FAMILY.build(cfg), KafkaImplementation, cfg)


def targeted(h: Harness, names: tuple[str, ...]):
    """For every transition named in ``names``, the shortest path that ends with it."""
    g = explore(h.model)
    for src, a, _dst in g.edges:
        if a.name in names:
            yield [x for _, x, _ in g.path_to(src)] + [a]


def first_divergence(h: Harness, paths):
    for p in paths:
        d = h.run(p)
        if d is not None:
            return d
    return None


# ----------------------------------------------------------------------- conforming

def test_kmc_conform_tiny_covers_every_transition_and_conforms():
    r = kmc("conform", *KAFKA, "--preset", "tiny", "--quiet")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    m = re.search(r"transitions covered: (\d+)/(\d+) \(100%\)", r.stdout)
    assert m and m.group(1) == m.group(2), r.stdout
    assert "verdict: CONFORMS" in r.stdout
    assert re.search(r"covering set: \d+ traces, \d+ steps for \d+ transitions", r.stdout)


def test_kmc_conform_replays_every_known_trace():
    r = kmc("conform", *KAFKA, *KNOWN)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count(": conforms (") == len(KNOWN) >= 5


def _replay_impl(trace):
    """Drive the implementation alone through a trace; returns it, the observation
    before the last step, and every (offset, epoch) a leader ever had below its HW."""
    cfg = resolve(FAMILY, None, trace.config)
    impl = KafkaImplementation(cfg)
    committed = set()
    before = None
    for i, step in enumerate(trace.steps[1:], 1):
        if i == len(trace.steps) - 1:
            before = impl.observe()
        assert impl.enabled(step.action), f"step {i}: {step.action}"
        impl.apply(step.action)
        for b, server in enumerate(impl.cluster.servers):
            log = impl.cluster.disks[b].logs.get(TP0)
            if server is not None and log is not None and server.replica_manager.leader_partition(TP0):
                committed |= {(o, log.records[o]) for o in range(log.high_watermark_checkpoint)}
    return impl, before, committed


def _zombie_wrote_zookeeper(impl, cfg, before, committed) -> bool:
    """A superseded controller changed ZooKeeper: the state znode carries its old epoch."""
    zk = impl.cluster.admin
    return zk.get_partition_state(TP0).controller_epoch < zk.get_controller_epoch()[0]


def _stale_request_applied(impl, cfg, before, committed) -> bool:
    """A broker applied a request from a controller epoch older than one it had seen."""
    return any(s is not None and TP0 in s.replica_manager.partitions
               and s.replica_manager.partitions[TP0].controller_epoch < s.replica_manager.controller_epoch
               for s in impl.cluster.servers)


def _leader_outside_isr(impl, cfg, before, committed) -> bool:
    return impl.cluster.admin.get_partition_state(TP0).leader not in before["zk"]["partitions"][0]["isr"]


def _committed_record_lost(impl, cfg, before, committed) -> bool:
    """A record a leader had committed (below its HW) is not in the current leader's log."""
    log = impl.cluster.disks[impl.cluster.admin.get_partition_state(TP0).leader].logs[TP0]
    return any(o >= len(log.records) or log.records[o] != e for o, e in committed)


def _logs_differ_below_hw(impl, cfg, before, committed) -> bool:
    """Two live replicas hold different records at an offset below both their HWs."""
    logs = [impl.cluster.disks[b].logs[TP0] for b, s in enumerate(impl.cluster.servers)
            if s is not None and TP0 in impl.cluster.disks[b].logs]
    return any(x.records[o] != y.records[o] for x in logs for y in logs
               for o in range(min(x.high_watermark_checkpoint, y.high_watermark_checkpoint)))


def _isr_member_below_hw(impl, cfg, before, committed) -> bool:
    """A follower in the leader's ISR has a LEO below the leader's HW."""
    c = impl.cluster
    for b, s in enumerate(c.servers):
        p = s.replica_manager.leader_partition(TP0) if s is not None else None
        if p is None:
            continue
        hw = c.disks[b].logs[TP0].high_watermark_checkpoint
        if any(r != b and (TP0 not in c.disks[r].logs or c.disks[r].logs[TP0].log_end_offset < hw) for r in p.isr):
            return True
    return False


def _no_live_leader(impl, cfg, before, committed) -> bool:
    """No running broker leads the partition (and the trace's last step stopped one)."""
    return not any(s is not None and s.replica_manager.leader_partition(TP0) for s in impl.cluster.servers)


ANOMALY = {
    ("ControllerEpochFencing", False): _zombie_wrote_zookeeper,     # keyed by (property, zk_epoch_fencing)
    ("ControllerEpochFencing", True): _stale_request_applied,
    ("LeaderElectedFromIsr", None): _leader_outside_isr,
    ("NoAckedRecordLost", None): _committed_record_lost,
    ("LogsMatchBelowHighWatermark", None): _logs_differ_below_hw,
    ("HighWatermarkBelowIsrLeo", None): _isr_member_below_hw,
    ("EventuallyAvailable", None): _no_live_leader,
}


def test_not_enough_replicas_after_append_is_not_an_acknowledgement():
    """Partition.checkEnoughReplicasReachOffset: the HW passes an acks=all record only after
    the ISR shrank below min.insync.replicas, so the producer gets
    NOT_ENOUGH_REPLICAS_AFTER_APPEND; the record stays in the log.  Both sides agree."""
    cfg = resolve(FAMILY, "data-kip320", {"max_records": 1, "min_insync_replicas": 2, "max_isr_shrinks": 1})
    m = FAMILY.build(cfg)
    s, acts = prefix_path(m, "ElectController(broker=0)", "ElectLeader(", "DeliverLeaderAndIsr(broker=0",
                    "DeliverLeaderAndIsr(broker=1", "Produce(leader=0", "TruncateFollower(follower=1",
                    "Fetch(follower=1", "ShrinkIsr(leader=0")
    assert s.brokers[0].replicas[0].hw == 1 and s.brokers[0].replicas[0].log == (0,)
    assert s.ghost.inv_acked == () and s.ghost.inv_pending == ()
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None


def test_acks_0_promises_nothing():
    cfg = resolve(FAMILY, "data-unclean", {"producer_acks": "0"})
    m = FAMILY.build(cfg)
    s, acts = prefix_path(m, "ElectController(broker=0)", "ElectLeader(", "DeliverLeaderAndIsr(broker=0",
                    "Produce(leader=0, partition=0, acks='0')")
    assert s.brokers[0].replicas[0].log == (0,) and s.ghost.inv_pending == () and s.ghost.inv_acked == ()
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None


@pytest.mark.parametrize("path", KNOWN, ids=lambda p: p.stem.rsplit("-", 1)[0])
def test_known_trace_conforms_and_its_anomaly_happens_in_impl(path):
    """Every trace under traces/known/ conforms step by step.  For the known-bad variants
    (a fence or fix off in the model; the adapter turns the same check off in impl/
    from the same config), the reference broker also really does what the property
    forbids: the zombie's write lands in ZooKeeper, the stale request is applied, the
    unclean leader is elected, the committed record is gone, the logs disagree below
    the HW.  (The reassignment traces, a worked example and liveness lassos, are
    checked for conformance only.)"""
    trace = load_trace(path)
    cfg = resolve(FAMILY, None, trace.config)
    h = Harness(FAMILY.build(cfg), KafkaImplementation, cfg)
    assert h.run([s.action for s in trace.steps[1:]]) is None
    prop = trace.property_name
    check = ANOMALY.get((prop, cfg["zk_epoch_fencing"] if prop == "ControllerEpochFencing" else None))
    if check is None:
        assert prop.startswith("Reassignment"), f"no impl-side check for {prop}: add one to ANOMALY"
        return
    impl, before, committed = _replay_impl(trace)
    assert check(impl, cfg, before, committed), check.__doc__


# -------------------------------------------------------------------- injected bugs

def test_bug_skip_the_controller_epoch_check(monkeypatch):
    """The broker applies requests from an older controller epoch: with the fence ON in
    the model, the known no-controller-fencing trace diverges where the stale
    LeaderAndIsr arrives (broker 1 starts following a leader the controller thinks dead)."""
    monkeypatch.setattr(replica_manager.ReplicaManager, "_stale_controller", lambda self, epoch: False)
    trace = load_trace(next(p for p in KNOWN if "no-controller-fencing" in p.name))
    h = harness(None, {**trace.config, "controller_epoch_fencing": True})
    path = [s.action for s in trace.steps[1:]]
    d = h.run(path)
    assert d is not None and (d.kind, d.step) == (STATE, len(path)) and d.action.name == "DeliverLeaderAndIsr"
    assert ("brokers[1].partitions[0].leader", -1, 0) in d.changes
    assert shrink(h, d, search_budget=200).actions == tuple(path)     # every step of it is needed


def test_bug_elect_outside_the_isr(monkeypatch):
    """The offline election takes the first live replica, in sync or not: the model's
    clean election of an ISR member is refused (the implementation elects another)."""
    def first_live(assignment, isr, live, unclean):
        alive = [r for r in assignment if r in live]
        return (alive[0], tuple(sorted(x for x in isr if x in live)) or (alive[0],)) if alive else None
    monkeypatch.setattr(election, "offline_partition_leader_election", first_live)
    h = harness("tiny", THREE)
    d = first_divergence(h, targeted(h, ("ElectLeader",)))
    assert d is not None and d.kind == REFUSED
    assert d.action.name == "ElectLeader" and d.action.get("strategy") == "offline" and d.action.get("leader") != 0


def test_bug_forget_to_bump_the_leader_epoch(monkeypatch):
    """The controller writes a new leader or ISR without a new leader epoch."""
    write = zkclient.KafkaZkClient.write_partition_state

    def no_bump(self, tp, leader, leader_epoch, isr, controller_epoch, expected_version, epoch_zk_version):
        epoch = leader_epoch - 1 if expected_version != -1 else leader_epoch
        return write(self, tp, leader, epoch, isr, controller_epoch, expected_version, epoch_zk_version)
    monkeypatch.setattr(zkclient.KafkaZkClient, "write_partition_state", no_bump)
    h = harness("tiny", {})
    d = first_divergence(h, targeted(h, ("ElectLeader", "RemoveReplicaFromIsr")))
    assert d is not None and d.kind == STATE and d.action.name in ("ElectLeader", "RemoveReplicaFromIsr")
    field = {k: (m, i) for k, m, i in d.changes}["zk.partitions[0].leader_epoch"]
    assert field[1] == field[0] - 1
    small = shrink(h, d)
    assert small.kind == STATE and len(small.actions) <= len(d.actions)
    assert "zk.partitions[0].leader_epoch" in {k for k, _, _ in small.changes}


def test_bug_advance_the_hw_past_an_isr_members_leo(monkeypatch):
    """The leader moves its HW to its own log end, whatever its followers have."""
    def hw_to_leo(self, p):
        log = self.log(p.tp)
        if log.log_end_offset <= log.high_watermark_checkpoint:
            return False
        log.high_watermark_checkpoint = log.log_end_offset
        return True
    monkeypatch.setattr(replica_manager.ReplicaManager, "_maybe_increment_hw", hw_to_leo)
    h = harness("data-kip320", DATA)
    d = first_divergence(h, targeted(h, ("Produce",)))
    assert d is not None and d.kind == STATE and d.action.name == "Produce"
    (key, model_hw, impl_hw), = [c for c in d.changes if c[0].endswith(".hw")]
    assert model_hw < impl_hw
    small = shrink(h, d)
    assert [a.name for a in small.actions][-1] == "Produce" and len(small.actions) <= len(d.actions)


def test_bug_truncate_to_the_wrong_offset(monkeypatch):
    """A follower truncating its log keeps one record too many."""
    truncate = implog.Log.truncate_to
    monkeypatch.setattr(implog.Log, "truncate_to", lambda self, offset: truncate(self, offset + 1))
    h = harness("data-kip320", DATA)
    d = first_divergence(h, targeted(h, ("TruncateFollower",)))
    assert d is not None and d.kind == STATE and d.action.name == "TruncateFollower"
    (key, model_log, impl_log), = [c for c in d.changes if c[0].endswith(".log")]
    assert len(impl_log) == len(model_log) + 1 and impl_log[:len(model_log)] == model_log


# -------------------------------------------------------- the full corpus (slow)

SLOW_BUGS = {
    "epoch-bump": ("tiny", {}, test_bug_forget_to_bump_the_leader_epoch),
    "hw": ("data-kip320", DATA, test_bug_advance_the_hw_past_an_isr_members_leo),
    "truncate": ("data-kip320", DATA, test_bug_truncate_to_the_wrong_offset),
}


@pytest.mark.slow
@pytest.mark.parametrize("preset, overrides", [("unclean", {}), ("zombie", {}), ("data-kip320", DATA),
                                               ("reassign-rf", {})],
                         ids=["unclean", "zombie", "data-kip320-1rec", "reassign-rf"])
def test_covering_set_conforms(preset, overrides):
    h = harness(preset, overrides)
    cover = covering_set(explore(h.model))
    assert cover.covered == len(cover.graph.edges)
    for _, d in replay(h, cover.traces, snapshot=pickled):   # shared prefixes once: tests/test_prefixes.py
        assert d is None, d.render()


@pytest.mark.slow
def test_random_walks_conform():
    from checker.conform import random_walks
    assert random_walks(harness("failover", {}), walks=20, depth=30) is None


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(SLOW_BUGS))
def test_covering_set_catches_injected_bug(bug, monkeypatch):
    """The same bugs as above, found by the full covering set rather than a targeted corpus."""
    preset, overrides, test = SLOW_BUGS[bug]
    found = []
    first = first_divergence

    def first_divergence_in_cover(h, _paths):
        cover = covering_set(explore(h.model))
        d = first(h, (acts for _init, acts in cover.traces))
        found.append(d)
        return d
    monkeypatch.setitem(globals(), "first_divergence", first_divergence_in_cover)
    test(monkeypatch)
    assert found and found[0] is not None and found[0].kind != RAISED


def test_the_two_broker_kip101_loss_needs_no_more_than_min_insync_replicas_2():
    """Issue 11's claim: before KIP-279, acks=all with min.insync.replicas=2 does not save
    a partition of two replicas.  The known 35-step loss (recorded with the default 1)
    replayed with min_insync_replicas=2: every produce still finds an ISR of two, the
    acknowledged record is lost at the last step only, and the reference broker follows
    every step; with KIP-320's rule the same steps keep the record."""
    from checker.bfs import replay_path

    trace = load_trace(ROOT / "traces" / "known" / "NoAckedRecordLost-data-kip101-wide-2bffc819.json")
    acts = [st.action for st in trace.steps[1:]]
    cfg = resolve(FAMILY, None, {**trace.config, "min_insync_replicas": 2})
    m = FAMILY.build(cfg)
    path = replay_path(m, acts)
    lost = next(p for p in m.properties() if p.name == "NoAckedRecordLost").predicate
    assert [lost(st.state) for st in path] == [True] * len(acts) + [False]
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None
    fixed = FAMILY.build(resolve(FAMILY, None, {**trace.config, "min_insync_replicas": 2, "truncation": "kip320"}))
    kept = next(p for p in fixed.properties() if p.name == "NoAckedRecordLost").predicate
    assert all(kept(st.state) for st in replay_path(fixed, acts))
