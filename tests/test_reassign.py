"""Partition reassignment (issue 4): the seed's worked example replayed step by step,
the presets' verdicts and state counts, the counterexamples the checker finds, and
the properties' ability to fail.

The worked example (seed 000, OAR = {1,2,3}, RAR = {4,5,6}) uses the model's
broker ids, which start at 0: seed broker k is model broker k - 1, so OAR = (0, 1, 2)
(the initial AR of partition 0 with 6 brokers, RF 3) and RAR = (3, 4, 5).

Run this file as a script to (re)write the example's trace under traces/known/:
``PYTHONPATH=. python tests/test_reassign.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import os
import subprocess
import sys

import pytest

from checker.bfs import check, replay_path
from checker.config import resolve
from checker.errors import UsageError
from checker.result import OK, VIOLATED, Violation
from checker.trace import action_to_json
from spec.config import KafkaConfig
from spec.controller import live_brokers, send_leader_and_isr
from spec.family import FAMILY
from spec.model import KafkaModel
from spec.properties import reassignment_isr_in_ar, reassignment_leader_in_rar
from spec.state import (
    NEW_REPLICA, NO_STATE, NON_EXISTENT_REPLICA, OFFLINE_REPLICA, ONLINE_PARTITION, ONLINE_REPLICA,
    REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL, LeaderIsr, StopReplica, add_request,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = {"brokers": 6, "replication_factor": 3, "reassignments": "3,4,5", "max_crashes": 0,
           "max_session_expiries": 0, "max_isr_shrinks": 0}


def model(preset=None, **overrides):
    return FAMILY.build(resolve(FAMILY, preset, overrides))


def _pick(m, s, want: str):
    acts = [a for a in m.actions(s) if str(a).startswith(want)]
    assert len(acts) == 1, f"{want}: {len(acts)} matches; enabled: {[str(a) for a in m.actions(s)]}"
    return acts[0]


def _deliver_all(m, s, names):
    """Deliver every request in flight (brokers in id order)."""
    while True:
        acts = [a for a in m.actions(s) if a.name.startswith("Deliver")]
        if not acts:
            return s
        names.append(acts[0])
        s = m.next_state(s, acts[0])


def _row(s):
    """(AR in ZooKeeper, leader, ISR) in the seed's broker ids (model id + 1)."""
    zkp = s.zk.partitions[0]
    return (tuple(r + 1 for r in s.zk.ar[0]), zkp.leader + 1, tuple(r + 1 for r in zkp.isr))


# The seed's table: after step N, (AR, leader, ISR) in seed ids.
TABLE = {
    "initial": ((1, 2, 3), 1, (1, 2, 3)),
    2: ((1, 2, 3, 4, 5, 6), 1, (1, 2, 3)),
    4: ((1, 2, 3, 4, 5, 6), 1, (1, 2, 3, 4, 5, 6)),
    7: ((1, 2, 3, 4, 5, 6), 4, (1, 2, 3, 4, 5, 6)),
    8: ((1, 2, 3, 4, 5, 6), 4, (4, 5, 6)),
    10: ((4, 5, 6), 4, (4, 5, 6)),
}


def worked_example(m):
    """Drive the model through the seed's example; return (actions, rows) where rows
    maps each row of the table to the state reached after that step."""
    s = m.init_states()[0]
    acts, rows = [], {}

    def do(want):
        nonlocal s
        a = _pick(m, s, want)
        acts.append(a)
        s = m.next_state(s, a)

    do("ElectController(broker=0)")
    do("ElectLeader(controller=0, partition=0, leader=0, strategy='new'")
    s = _deliver_all(m, s, acts)
    rows["initial"] = s
    do("ReassignPartitions(partition=0")
    do("StartReassignment(controller=0, partition=0)")
    do("ReassignExtendAr(")            # step 1
    do("ReassignBumpLeaderEpoch(")     # step 2
    rows[2] = s
    do("ReassignStartNewReplicas(")    # step 3
    rows[3] = s
    s = _deliver_all(m, s, acts)       # the new replicas 3, 4, 5 follow broker 0
    for r in (3, 4, 5):                # step 4: they catch up and join the ISR
        do(f"ExpandIsr(leader=0, partition=0, replica={r})")
    rows[4] = s
    do("ReassignOnlineReplicas(")      # step 5
    rows[5] = s
    do("ReassignCacheAr(")             # step 6
    do("ReassignElectLeader(controller=0, partition=0, leader=3)")   # step 7
    rows[7] = s
    do("ReassignOfflineOldReplicas(")  # step 8
    rows[8] = s
    do("ReassignStartReplicaDeletion(")          # step 9: ReplicaDeletionStarted
    rows["9a"] = s
    do("ReassignReplicaDeletionSuccessful(")     # ReplicaDeletionSuccessful
    rows["9b"] = s
    do("ReassignRemoveReplicas(")                # NonExistentReplica
    rows[9] = s
    do("ReassignShrinkAr(")            # step 10
    rows[10] = s
    do("CompleteReassignment(")        # step 11
    s = _deliver_all(m, s, acts)
    rows["end"] = s
    return acts, rows


def test_worked_example_matches_the_seed_table():
    m = model(None, **EXAMPLE)
    acts, rows = worked_example(m)
    for step, want in TABLE.items():
        assert _row(rows[step]) == want, step
    # the replica state machine, per step (replica slots 0..5)
    def rstates(step):
        return rows[step].brokers[0].ctx.replica_states[0]
    new, online = (NEW_REPLICA,) * 3, (ONLINE_REPLICA,) * 3
    assert rstates(2) == online + (NON_EXISTENT_REPLICA,) * 3
    assert rstates(3) == online + new
    assert rstates(5) == online + online
    assert rstates(8) == (OFFLINE_REPLICA,) * 3 + online
    assert rstates("9a") == (REPLICA_DELETION_STARTED,) * 3 + online
    assert rstates("9b") == (REPLICA_DELETION_SUCCESSFUL,) * 3 + online
    assert rstates(9) == (NON_EXISTENT_REPLICA,) * 3 + online
    # step 7 is the ReassignPartition election (OnlinePartition -> OnlinePartition); step 8
    # sends StopReplica(delete=false) and step 9 StopReplica(delete=true) to 0, 1 and 2
    assert rows[7].brokers[0].ctx.partition_states == (ONLINE_PARTITION,)
    for b in (0, 1, 2):
        assert StopReplica(1, 0, False) in rows[8].brokers[b].inbox
        assert StopReplica(1, 0, True) in rows["9a"].brokers[b].inbox
    end = rows["end"]
    assert end.zk.reassign == ((),) and end.ghost.inv_reassigned
    ctx = end.brokers[0].ctx
    assert ctx.reassigning == (None,) and ctx.ar == ((3, 4, 5),)
    # replicas 0-2 were deleted (NonExistentReplica, StopReplica delete=true applied),
    # 3-5 are OnlineReplica; broker 3 leads and 4, 5 follow it with AR = RAR
    assert ctx.replica_states[0] == (NON_EXISTENT_REPLICA,) * 3 + (ONLINE_REPLICA,) * 3
    for b in (0, 1, 2):
        assert end.brokers[b].partitions[0] == NO_STATE and end.brokers[b].assigned[0] == ()
    for b in (3, 4, 5):
        view = end.brokers[b].partitions[0]
        assert (view.leader, view.isr, end.brokers[b].assigned[0]) == (3, (3, 4, 5), (3, 4, 5))
    # every property holds along the way (state and step properties)
    path = replay_path(m, acts)
    for p in m.properties():
        if p.kind != "always":
            continue
        for i in range(1, len(path)):
            ok = p.predicate(path[i - 1].state, path[i].action, path[i].state) if p.step \
                else p.predicate(path[i].state)
            assert ok, (p.name, i, str(path[i].action))


def _known(prefix):
    return sorted((ROOT / "traces" / "known").glob(prefix + "*.json"))


def test_worked_example_trace_is_saved_and_current():
    """The trace under traces/known/ is this example (test_kafka_cli replays it)."""
    [trace] = _known("ReassignmentCompletes-worked-example-")
    doc = json.loads(trace.read_text())
    m = model(None, **EXAMPLE)
    acts, _ = worked_example(m)
    assert [s["action"] for s in doc["steps"][1:]] == [json.loads(json.dumps(action_to_json(a))) for a in acts]
    assert doc["config"] == dict(m.config())


# -- presets: verdicts and state counts ----------------------------------------------------

# preset -> (distinct, generated, depth, witnesses reached)
HOLDS = {
    "reassign": (5884, 27234, 28, {"ReassignmentCompletes"}),
    "reassign-rf": (927, 2890, 37, {"ReassignmentCompletes"}),
}


@pytest.mark.parametrize("preset", sorted(HOLDS))
def test_reassignment_without_faults_completes_and_every_property_holds(preset):
    distinct, generated, depth, reached = HOLDS[preset]
    m = model(preset)
    r = check(m)
    assert r.verdict == OK, [v.property for v in r.violations]
    assert (r.stats.distinct, r.stats.generated, r.stats.depth) == (distinct, generated, depth)
    declared = {p.name for p in m.properties() if p.kind == "sometimes"}
    assert {k for k, v in r.stats.witnesses.items() if v is not None} == declared == reached


def test_reassign_crash_leader_leaves_rar_after_step_7():
    """A finding: once step 7 has moved the leader into RAR, a controller failover
    before step 10 lets the successor elect a leader outside RAR, because it reads
    AR = OAR + RAR from ZooKeeper (the successor's own step 7 moves it back)."""
    r = check(model("reassign-crash"))
    assert r.verdict == VIOLATED
    v = r.violations[0]
    assert (v.property, len(v.path) - 1, r.stats.distinct) == ("ReassignmentLeaderInRar", 16, 3623)
    names = [st.action.name for st in v.path[1:]]
    assert names.index("ReassignElectLeader") < names.index("CrashBroker") < len(names) - 2
    last = v.path[-1]
    assert str(last.action) == "ElectLeader(controller=0, partition=0, leader=0, strategy='offline', clean=True)"
    assert last.state.zk.ar == ((0, 1),) and last.state.zk.controller_epoch == 2
    # the AR-last rule itself holds on this path: the ISR never leaves the AR in ZooKeeper
    assert all(reassignment_isr_in_ar(st.state) for st in v.path)


ISR_SHRINK_TRACE = ROOT / "traces" / "known" / "ReassignmentIsrInAr-reassign-crash-custom-aa9f61d7.json"


def test_an_isr_shrink_after_step_5_leaves_the_only_isr_member_outside_the_ar():
    """A finding (traces/known/ReassignmentIsrInAr-reassign-crash-custom-*.json): the
    leader shrinks RAR's only replica out of the ISR after step 5 read the ISR, so step 7's
    election fails (leader=-1) and the event goes on, as Kafka's does; step 8 writes
    leader -1 and keeps the old replica as the last ISR member, steps 9 and 10 delete it
    and write AR := RAR: the ISR [0] lies outside the AR [1].  With no ISR shrink
    (plain reassign-crash) the property holds on every state."""
    from checker.trace import load_trace

    trace = load_trace(ISR_SHRINK_TRACE)
    assert trace.property_name == "ReassignmentIsrInAr"
    m = FAMILY.build(resolve(FAMILY, None, trace.config))
    path = replay_path(m, [s.action for s in trace.steps[1:]])
    names = [str(st.action) for st in path[1:]]
    assert len(names) == 19
    i5, shrink, i7 = (names.index(n) for n in ("ReassignOnlineReplicas(controller=0, partition=0)",
                                                  "ShrinkIsr(leader=0, partition=0, replica=1)",
                                                  "ReassignElectLeader(controller=0, partition=0, leader=-1)"))
    assert i5 < shrink < i7
    after_8 = path[names.index("ReassignOfflineOldReplicas(controller=0, partition=0)") + 1].state.zk
    assert (after_8.partitions[0].leader, after_8.partitions[0].isr) == (-1, (0,))
    assert all(reassignment_isr_in_ar(st.state) for st in path[:-1])
    last = path[-1].state
    assert not reassignment_isr_in_ar(last) and last.zk.ar == ((1,),) and last.zk.partitions[0].isr == (0,)
    # the checker finds this very trace, shortest, at these bounds
    r = check(m, properties=[p for p in m.properties() if p.name == "ReassignmentIsrInAr"], check_deadlock=False)
    assert r.verdict == VIOLATED and r.stats.distinct == 11300
    assert [str(st.action) for st in r.violations[0].path[1:]] == names


def test_reassign_crash_strands_no_reassignment_at_quiescence():
    """The stranding once reported here (tests/data/non-kafka-offline/) rested on an
    OfflineReplica step that no Kafka event owes: a replica of RAR that the successor
    controller had found dead at its failover was taken offline right after
    reassignment step 5 took it online.  With OfflineReplica owed by events only
    (a broker failure, a controlled shutdown), every quiescent state of reassign-crash
    has its reassignment done: the whole graph, 37,155 states."""
    m = model("reassign-crash")
    prop = [p for p in m.properties() if p.name == "ReassignmentCompletesWhenQuiescent"]
    r = check(m, properties=prop, check_deadlock=False)
    assert r.verdict == OK and r.stats.distinct == 37155


def _eventually(m):
    return [p for p in m.properties() if p.name == "EventuallyReassignmentCompletes"]


def test_eventually_reassignment_completes_without_faults():
    from checker.graph import explore
    from checker.liveness import check_liveness

    m = model("reassign-rf")
    assert check_liveness(explore(m), m, _eventually(m)) == []


@pytest.mark.slow
def test_reassign_crash_whole_space_ar_last_holds_and_every_reassignment_completes():
    """The seed's claim, at these bounds: with AR written last, the ISR and leader stay
    within the AR in ZooKeeper through every crash (the whole reassign-crash space:
    37,155 states, one crash, controller failover included).  Liveness: no lasso is
    left; both eventually properties hold (the stranding above is gone)."""
    from checker.graph import explore
    from checker.liveness import check_liveness

    m = model("reassign-crash")
    g = explore(m)
    assert len(g.states) == 37155
    names = ("ReassignmentIsrInAr", "IsrSubsetOfAssignedReplicas", "LeaderInIsr")
    for p in (p for p in m.properties() if p.name in names):
        assert all(p.predicate(s) for s in g.states), p.name
    for p in (p for p in m.properties() if p.name in ("LegalStateTransitions", "ControllerEpochFencing")):
        assert all(p.predicate(g.states[a], act, g.states[b]) for a, act, b in g.edges), p.name
    assert check_liveness(g, m, [p for p in m.properties() if p.kind == "eventually"]) == []


class PureControllerFailover(KafkaModel):
    """A test harness, not a configuration: only a controller that holds no replica of
    the partition may crash, so every failure is a pure controller failover."""

    def actions(self, state):
        return [a for a in super().actions(state) if a.name != "CrashBroker"
                or (a.get("broker") == state.zk.controller and a.get("broker") not in self.ar[0])]


@pytest.mark.slow
def test_a_pure_controller_failover_never_strands_a_reassignment():
    """The seed's claim itself: a controller that crashes at any step is succeeded by
    one that finishes the job.  3 brokers, [0] -> [1], broker 2 may crash while it is
    the controller (it holds no replica): every property holds, and the only witness
    not reached is PartitionOfflineAndBack (no replica ever fails)."""
    cfg = KafkaConfig(**resolve(FAMILY, "reassign-crash", {"brokers": 3}))
    m = PureControllerFailover(cfg)
    r = check(m, keep_going=True)
    assert [(v.property, v.kind) for v in r.violations] == [("PartitionOfflineAndBack", "sometimes")]
    assert r.stats.distinct == 134653
    assert r.stats.witnesses["ControllerFailover"] is not None
    assert r.stats.witnesses["ReassignmentCompletes"] is not None


class TellTheLeader(KafkaModel):
    """A test harness for the stranding's cause: the controller's ISR removals also
    send LeaderAndIsr to the partition's live leader when it is outside the cached AR
    (which is what keeping OAR + RAR cached until the end, as KIP-455 does, amounts to
    for this message)."""

    def next_state(self, state, act):
        nxt = super().next_state(state, act)
        if act.name in ("RemoveReplicaFromIsr", "ReassignOfflineOldReplicas"):
            c, p = act.get("controller"), act.get("partition")
            ctx = nxt.brokers[c].ctx
            if ctx is not None and nxt.zk.partitions[p] != state.zk.partitions[p]:
                li = ctx.partitions[p]
                if li.leader >= 0 and live_brokers(ctx)[li.leader] and li.leader not in ctx.ar[p]:
                    nxt = send_leader_and_isr(self, nxt, ctx.epoch, p, li, [li.leader], ctx.ar[p], ctx.live)
        return nxt


@pytest.mark.slow
def test_telling_the_leader_changes_nothing_at_these_bounds():
    """The stranding's cause in the order-free model (an ISR removal the old leader,
    outside the cached AR, is not told of): with OfflineReplica owed by events only it
    never arises in reassign-crash, so this one message changes nothing: the only
    violation is the leader's excursion out of RAR, on the same 37,155 states."""
    m = TellTheLeader(KafkaConfig(**resolve(FAMILY, "reassign-crash", {})))
    r = check(m, keep_going=True)
    assert [v.property for v in r.violations] == ["ReassignmentLeaderInRar"]
    assert r.stats.distinct == 37155


# -- the data path across a reassignment ------------------------------------------------------

DATA = {"brokers": 2, "replication_factor": 1, "reassignments": "1", "max_records": 2, "max_crashes": 0,
        "max_session_expiries": 0, "max_isr_shrinks": 0, "preferred_election": False}


def test_no_acked_record_lost_across_a_reassignment():
    """The new replica starts with an empty log and fetches; the partition moves to it
    with every acknowledged record (2 records, no fault: nothing can truncate)."""
    m = model(None, **DATA)
    r = check(m)
    assert [v.property for v in r.violations] == ["FollowerTruncates"]   # no fault, no truncation
    assert r.violations[0].kind == "sometimes"
    assert r.stats.distinct == 5725
    assert r.stats.witnesses["AcksAllAcknowledged"] is not None
    assert r.stats.witnesses["ReassignmentCompletes"] is not None



# -- the properties can fail ----------------------------------------------------------------------

def test_reassignment_properties_can_fail():
    m = model("reassign")
    s = m.init_states()[0]
    li = LeaderIsr(0, 1, (0, 1), 1, 1)
    ok = s._replace(zk=s.zk._replace(partitions=(li,)))
    assert reassignment_isr_in_ar(ok)
    assert not reassignment_isr_in_ar(ok._replace(zk=ok.zk._replace(ar=((1, 2),))))       # 0 left the AR
    moved = ok._replace(ghost=ok.ghost._replace(inv_leader_moved=((1, 2),)))
    assert not reassignment_leader_in_rar(moved)                                          # leader 0 not in RAR
    assert reassignment_leader_in_rar(moved._replace(zk=moved.zk._replace(partitions=(li._replace(leader=1),))))
    quiescent = [p for p in m.properties() if p.name == "ReassignmentCompletesWhenQuiescent"][0]
    stuck = ok._replace(zk=ok.zk._replace(reassign=((1, 2),)), budget=ok.budget._replace(reassignments=0))
    assert quiescent.predicate(stuck) == bool(m.actions(stuck))


def test_stop_replica_waits_for_earlier_leader_and_isr():
    """FIFO per controller for what reassignment needs: a deleted replica must not apply
    a LeaderAndIsr its controller sent before the StopReplica."""
    m = model("reassign")
    s = m.init_states()[0]
    s = m.next_state(s, _pick(m, s, "ElectController(broker=0)"))
    s = m.next_state(s, _pick(m, s, "ElectLeader("))
    b1 = s.brokers[1]
    s = s._replace(brokers=(s.brokers[0], b1._replace(inbox=add_request(b1.inbox, StopReplica(1, 0, True))),
                            s.brokers[2]))
    assert not any(a.name == "DeliverStopReplica" for a in m.actions(s))
    s = m.next_state(s, _pick(m, s, "DeliverLeaderAndIsr(broker=1"))
    assert any(a.name == "DeliverStopReplica" for a in m.actions(s))


@pytest.mark.parametrize("bad", ["1,x", "5:1", "0,0", "7"])
def test_bad_reassignments_are_one_line_errors(bad):
    with pytest.raises((UsageError, ValueError)):
        model("reassign", reassignments=bad)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "checker", "check", "--model", "spec.family:FAMILY",
                        "--preset", "reassign", "--set", f"reassignments={bad}"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "reassignments" in p.stderr


def save_worked_example() -> Path:
    from checker.trace import write_trace
    m = model(None, **EXAMPLE)
    acts, _ = worked_example(m)
    v = Violation("ReassignmentCompletes", "sometimes", replay_path(m, acts),
                  "witness: the seed's worked example (OAR = {1,2,3}, RAR = {4,5,6}; model ids are seed ids - 1)")
    return write_trace(ROOT / "traces" / "known", family_ref="spec.family:FAMILY", model=m,
                       config=m.config(), preset=None, violation=v, label="worked-example",
                       command="PYTHONPATH=. python tests/test_reassign.py")


if __name__ == "__main__":
    print(save_worked_example())
