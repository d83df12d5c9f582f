"""The replication data path: the truncation rules of each KIP on hand-built logs,
the one-round HW lag, min.insync.replicas, and the known-anomaly table (pinned in
tests/test_anomalies.py)."""

from __future__ import annotations

from checker.bfs import check, replay_path
from checker.config import resolve
from checker.model import action
from checker.result import OK
from spec import datapath
from spec.family import FAMILY
from spec.state import Replica


def model(preset="tiny", **overrides):
    return FAMILY.build(resolve(FAMILY, preset, overrides))


def rep(log, hw=0):
    return Replica(tuple(log), hw, (-1, -1), True)


# -- truncation rules ----------------------------------------------------------------------

def test_kip101_truncates_to_end_of_the_followers_last_epoch():
    # follower [0, 0, 1]; leader [0, 0, 2]: the leader never had epoch 1, so it answers
    # with the start of its first larger epoch (2 at offset 2): the follower keeps
    # offsets 0..1 and drops its epoch-1 record.
    assert datapath._kip101_offset(rep([0, 0, 1]), rep([0, 0, 2])) == 2
    # same last epoch: the leader's end offset
    assert datapath._kip101_offset(rep([0, 0]), rep([0, 0, 0])) == 3


def test_kip101_hole_the_answer_can_be_past_the_divergence():
    # follower [0, 1]; leader [0, 2, 2]: the first larger epoch starts at 1, fine; but
    # follower [1, 1]; leader [0, 2]: the first epoch > 1 starts at offset 1, so the
    # follower keeps its epoch-1 record at offset 0 where the leader has epoch 0.
    assert datapath._kip101_offset(rep([1, 1]), rep([0, 2])) == 1
    assert datapath._diverging_offset(rep([1, 1]), rep([0, 2])) == 0


def test_kip279_truncates_to_the_first_diverging_offset():
    assert datapath._diverging_offset(rep([0, 0, 1]), rep([0, 0, 2])) == 2
    assert datapath._diverging_offset(rep([0, 1]), rep([0, 1, 1])) == 2
    assert datapath._diverging_offset(rep([]), rep([0])) == 0


# -- the HW is one fetch round behind on the follower ----------------------------------------

def _steps(m, *names):
    s = m.init_states()[0]
    for want in names:
        acts = [a for a in m.actions(s) if str(a).startswith(want)]
        assert acts, f"{want} not enabled; enabled: {[str(a) for a in m.actions(s)]}"
        s = m.next_state(s, acts[0])
    return s


def test_follower_hw_lags_the_leader_by_one_fetch():
    m = model(max_records=1)
    s = _steps(m, "ElectController(broker=0)", "ElectLeader(", "DeliverLeaderAndIsr(broker=0",
               "DeliverLeaderAndIsr(broker=1", "Produce(leader=0", "TruncateFollower(follower=1", "Fetch(follower=1")
    leader, follower = s.brokers[0].replicas[0], s.brokers[1].replicas[0]
    assert (leader.log, leader.hw) == ((0,), 0)
    assert (follower.log, follower.hw) == ((0,), 0)
    s = m.next_state(s, action("Fetch", follower=1, leader=0, partition=0))
    leader, follower = s.brokers[0].replicas[0], s.brokers[1].replicas[0]
    assert leader.hw == 1            # the second fetch told the leader the follower has offset 0
    assert follower.hw == 0          # ... but its response carried the HW from before
    assert s.ghost.inv_acked == ((0, 0, 0),)


def test_acks_all_refused_below_min_insync_replicas():
    r = check(model(max_records=1, min_insync_replicas=2, max_crashes=1))
    assert r.verdict == OK
    assert r.stats.witnesses["AcksAllRefused"] is not None
    assert r.stats.witnesses["RecordCommitted"] is not None


def test_data_path_off_adds_nothing():
    m = model()
    assert m.init_states()[0].brokers[0].replicas == ()
    assert not any(p.name == "NoAckedRecordLost" for p in m.properties())


def test_restart_keeps_log_and_hw():
    m = model(max_records=1, max_crashes=1)
    s = _steps(m, "ElectController(broker=0)", "ElectLeader(", "DeliverLeaderAndIsr(broker=0",
               "DeliverLeaderAndIsr(broker=1", "Produce(leader=0", "TruncateFollower(follower=1",
               "Fetch(follower=1", "Fetch(follower=1", "Fetch(follower=1", "CrashBroker(broker=1)")
    r = s.brokers[1].replicas[0]
    assert (r.log, r.hw, r.leos) == ((0,), 1, (-1, -1))
    assert replay_path(m, [action("ElectController", broker=0)])[-1].state.zk.controller == 0
