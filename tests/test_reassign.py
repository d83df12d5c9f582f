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

from checker.bfs import replay_path
from checker.config import resolve
from checker.result import Violation
from checker.trace import action_to_json
from spec.family import FAMILY
from spec.state import NO_STATE, NON_EXISTENT_REPLICA, ONLINE_REPLICA

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
    s = _deliver_all(m, s, acts)       # the new replicas 3, 4, 5 follow broker 0
    for r in (3, 4, 5):                # step 4: they catch up and join the ISR
        do(f"ExpandIsr(leader=0, partition=0, replica={r})")
    rows[4] = s
    do("ReassignOnlineReplicas(")      # step 5
    do("ReassignCacheAr(")             # step 6
    do("ReassignElectLeader(controller=0, partition=0, leader=3)")   # step 7
    rows[7] = s
    do("ReassignOfflineOldReplicas(")  # step 8
    rows[8] = s
    do("ReassignStartReplicaDeletion(")          # step 9: ReplicaDeletionStarted
    do("ReassignReplicaDeletionSuccessful(")     # ReplicaDeletionSuccessful
    do("ReassignRemoveReplicas(")                # NonExistentReplica
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
