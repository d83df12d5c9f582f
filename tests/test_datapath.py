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
from tests.walk_support import prefix_path


def model(preset="tiny", **overrides):
    return FAMILY.build(resolve(FAMILY, preset, overrides))


def rep(log, hw=0, unwritten=-1):
    return Replica(tuple(log), hw, (-1, -1), True, unwritten)


def offset(rule, follower, leader):
    return datapath.RULES[rule].truncation(follower, leader)[0]


# -- truncation rules: one strategy per Kafka version ---------------------------------------

def test_the_rules_are_an_override_chain():
    hw, k101, k279, k320 = (type(datapath.RULES[n]) for n in ("high_watermark", "kip101", "kip279", "kip320"))
    assert k320.__mro__[1:4] == (k279, k101, hw)
    # each class defines only what its KIP changed
    assert set(vars(k279)) - {"__module__", "__doc__", "__qualname__"} == {"name", "epoch_end_offset", "truncation"}


def test_kip101_truncates_to_end_of_the_followers_last_epoch():
    # follower [0, 0, 1]; leader [0, 0, 2]: the leader never had epoch 1, so it answers
    # with the start of its first larger epoch (2 at offset 2): the follower keeps
    # offsets 0..1 and drops its epoch-1 record.
    assert offset("kip101", rep([0, 0, 1]), rep([0, 0, 2])) == 2
    # same last epoch: the leader's end offset
    assert offset("kip101", rep([0, 0]), rep([0, 0, 0])) == 2


def test_kip101_hole_the_answer_can_be_past_the_divergence():
    # follower [1, 1]; leader [0, 2]: the first epoch > 1 starts at offset 1, so the
    # follower keeps its epoch-1 record at offset 0 where the leader has epoch 0.
    assert offset("kip101", rep([1, 1]), rep([0, 2])) == 1
    # 2.0 answers (epoch 0, end 1); the follower's cache has nothing at or below epoch 0
    # (UNDEFINED: "not tracking epochs then"), so it takes the leader's offset and keeps
    # the record too; 2.1's cache answers (0, 0) for an epoch older than its first.
    assert offset("kip279", rep([1, 1]), rep([0, 2])) == 1
    assert offset("kip320", rep([1, 1]), rep([0, 2])) == 0


def test_kip101_falls_back_to_the_hw_for_an_epoch_the_leader_never_had():
    # follower [0, 2] with HW 2; leader [1]: epoch 2 is past the leader's latest, 0 is
    # older than its first: UNDEFINED, and the follower keeps everything below its HW.
    assert offset("kip101", rep([0, 2], hw=2), rep([1])) == 2
    assert offset("kip101", rep([0], hw=1), rep([1, 1])) == 1      # 0 < the leader's first epoch
    assert offset("kip320", rep([0], hw=1), rep([1, 1])) == 0      # 2.1 answers the first epoch's start


def test_kip279_truncates_to_the_first_diverging_offset():
    assert offset("kip279", rep([0, 0, 1]), rep([0, 0, 2])) == 2
    assert offset("kip279", rep([0, 1]), rep([0, 1, 1])) == 2
    assert offset("kip279", rep([]), rep([0])) == 0


def test_kip320_new_leaders_epoch_is_in_its_cache():
    # The leader of epoch 3 has not appended yet: before 2.1 its cache ends with epoch 1,
    # from 2.1 with epoch 3 at its LEO.
    leader = datapath.RULES["kip320"].become_leader(rep([0, 1], unwritten=-1), 3)
    assert datapath.epoch_cache(leader) == ((0, 0), (1, 1), (3, 2))
    assert datapath.RULES["kip279"].become_leader(rep([0, 1]), 3) == rep([0, 1])
    # a follower that led epoch 3 without a record asks about epoch 3, not 1
    assert datapath.latest_epoch(rep([0, 1], unwritten=3)) == 3
    # the next append takes the unwritten entry's place
    assert datapath.append(leader, 3).unwritten_epoch == -1


def test_kip320_round_that_cuts_nothing_keeps_the_follower_truncating():
    # follower [0] that led epoch 3 without a record; leader [0, 2] leading epoch 4: the
    # answer for 3 is epoch 2 ending at 2, which the follower lacks; the end of its own
    # epoch below 2 (0) is its LEO, so nothing is cut and Kafka 2.1 asks again for ever.
    assert datapath.RULES["kip320"].truncation(rep([0], unwritten=3), rep([0, 2], unwritten=4)) == (1, False)


# -- the HW is one fetch round behind on the follower ----------------------------------------

def test_follower_hw_lags_the_leader_by_one_fetch():
    m = model(max_records=1)
    s, _ = prefix_path(m, "ElectController(broker=0)", "ElectLeader(", "DeliverLeaderAndIsr(broker=0",
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
    s, _ = prefix_path(m, "ElectController(broker=0)", "ElectLeader(", "DeliverLeaderAndIsr(broker=0",
               "DeliverLeaderAndIsr(broker=1", "Produce(leader=0", "TruncateFollower(follower=1",
               "Fetch(follower=1", "Fetch(follower=1", "Fetch(follower=1", "CrashBroker(broker=1)")
    r = s.brokers[1].replicas[0]
    assert (r.log, r.hw, r.leos) == ((0,), 1, (-1, -1))
    assert replay_path(m, [action("ElectController", broker=0)])[-1].state.zk.controller == 0


# -- ISR expansion: Kafka 2.1's fence -----------------------------------------------------

def test_kip320_follower_joins_once_it_fetched_from_the_epochs_start_hw_lagging_or_not():
    """KAFKA-7128 (2.1.0, ``Partition.maybeExpandIsr``): a follower joins the ISR once its
    fetch offset reaches the offset where the leader's epoch began, even while the HW
    lags in an older epoch.  Here broker 0 wrote a record in epoch 0, then leads epoch
    1 from offset 1 with ISR (0, 2); broker 2 has not fetched, so the HW stays 0.
    Broker 1 fetches from offset 1: Kafka expands the ISR.  The model's earlier rule
    (Gustafson's: the HW must have reached the leader's epoch) refused it."""
    m = model("data-kip320-3")
    s, _ = prefix_path(m, "ElectController(broker=0)", "CrashBroker(broker=1)", "RestartBroker(broker=1)",
               "DeliverLeaderAndIsr(broker=0, partition=0, controller_epoch=1, leader=0, leader_epoch=0",
               "DeliverLeaderAndIsr(broker=1", "Produce(leader=0", "DeliverLeaderAndIsr(broker=0",
               "TruncateFollower(follower=1", "Fetch(follower=1", "Fetch(follower=1")
    view, lead = s.brokers[0].partitions[0], s.brokers[0].replicas[0]
    assert (view.leader_epoch, view.isr, lead.log, lead.hw) == (1, (0, 2), (0,), 0)
    assert datapath.epoch_start_offset(lead.log, view.leader_epoch, lead.leos[m.ar[0].index(0)]) == 1
    assert lead.leos[m.ar[0].index(1)] == 1
    expand = action("ExpandIsr", leader=0, partition=0, replica=1)
    assert expand in m.actions(s)
    # one fetch earlier, broker 1 had fetched from offset 0, below the epoch's start
    s0, _ = prefix_path(m, "ElectController(broker=0)", "CrashBroker(broker=1)", "RestartBroker(broker=1)",
                "DeliverLeaderAndIsr(broker=0, partition=0, controller_epoch=1, leader=0, leader_epoch=0",
                "DeliverLeaderAndIsr(broker=1", "Produce(leader=0", "DeliverLeaderAndIsr(broker=0",
                "TruncateFollower(follower=1", "Fetch(follower=1")
    assert s0.brokers[0].replicas[0].leos[m.ar[0].index(1)] == 0
    assert expand not in m.actions(s0)
