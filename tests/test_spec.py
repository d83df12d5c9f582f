"""The Kafka controller model: pinned state counts and verdicts per preset, the
shortest counterexamples of the known-bad variants, and the properties' ability
to fail (a property that cannot fail proves nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.bfs import check, replay_path
from checker.config import resolve
from checker.model import action
from checker.result import OK, VIOLATED
from checker.trace import load_trace
from spec import election
from spec.family import FAMILY
from spec.properties import (
    at_most_one_active_controller, at_most_one_leader_per_epoch, controller_epoch_fencing,
    epochs_monotonic, leader_elected_from_isr, leader_in_isr, legal_state_transitions,
)
from spec.state import NEW_REPLICA, NON_EXISTENT_PARTITION, REPLICA_DELETION_STARTED, LeaderIsr


def model(preset: str, **overrides):
    return FAMILY.build(resolve(FAMILY, preset, overrides))


def witnesses(result) -> set[str]:
    return {k for k, v in result.stats.witnesses.items() if v is not None}


# preset -> (distinct, generated, depth, witnesses reached)
HOLDS = {
    "tiny": (1184, 2307, 18, {"ControllerFailover", "IsrShrinkAndExpand", "PartitionOfflineAndBack"}),
    "small": (35159, 118988, 23, {"ControllerFailover", "IsrShrinkAndExpand", "PartitionOfflineAndBack"}),
}
HOLDS_SLOW = {
    "default": (113208, 485930, 24, {"ControllerFailover", "IsrShrinkAndExpand", "PartitionOfflineAndBack",
                                     "ZombieController"}),
    "failover": (74803, 250873, 30, {"ControllerFailover", "IsrShrinkAndExpand", "PartitionOfflineAndBack",
                                      "ZombieController"}),
    "shutdown": (65142, 180718, 33, {"ControllerFailover", "IsrShrinkAndExpand", "PartitionOfflineAndBack",
                                      "ControlledShutdownMovesLeader"}),
    "delete": (28735, 86649, 27, {"ControllerFailover", "IsrShrinkAndExpand", "PartitionOfflineAndBack",
                                   "TopicDeleted"}),
}


def _assert_holds(preset, expected):
    distinct, generated, depth, reached = expected
    m = model(preset)
    r = check(m)
    assert r.verdict == OK, [v.property for v in r.violations]
    assert (r.stats.distinct, r.stats.generated, r.stats.depth) == (distinct, generated, depth)
    declared = {p.name for p in m.properties() if p.kind == "sometimes"}
    assert witnesses(r) == declared == reached


@pytest.mark.parametrize("preset", sorted(HOLDS))
def test_every_fix_on_every_property_holds(preset):
    _assert_holds(preset, HOLDS[preset])


@pytest.mark.slow
@pytest.mark.parametrize("preset", sorted(HOLDS_SLOW))
def test_every_fix_on_every_property_holds_larger(preset):
    _assert_holds(preset, HOLDS_SLOW[preset])


def test_zombie_writes_zookeeper_without_zk_epoch_fencing():
    """Before KAFKA-6082: the expired controller's queued election lands in
    ZooKeeper after its successor took over."""
    r = check(model("zombie"))
    assert r.verdict == VIOLATED
    v = r.violations[0]
    assert v.property == "ControllerEpochFencing"
    assert [str(s.action) for s in v.path[1:]] == [
        "ElectController(broker=0)",
        "ExpireSession(broker=0)",
        "ElectController(broker=1)",
        "ElectLeader(controller=0, partition=0, leader=0, strategy='new', clean=True)",
    ]
    assert r.stats.distinct == 52


def test_a_zombie_never_overwrites_a_newer_controllers_znode():
    """Kafka's "already written by another controller" check (spec.controller.newer_mark)
    holds even without zk_epoch_fencing: over the whole of ``zombie``'s state space no
    step takes a partition znode's controller epoch back, while the zombie's write of
    a znode no newer controller wrote still breaks ControllerEpochFencing (the test
    above).  Without the check the zombie's elections overwrote its successor's znode
    in 70 steps, and the space had 3,664 states."""
    from checker.graph import explore

    graph = explore(model("zombie"))
    back = [a for src, a, dst in graph.edges
            for before, after in zip(graph.states[src].zk.partitions, graph.states[dst].zk.partitions)
            if before.version != -1 and after.version != -1 and after.controller_epoch < before.controller_epoch]
    assert back == []
    assert len(graph.states) == 3200


def test_an_isr_removal_on_a_newer_controllers_znode_fails_without_resigning():
    """removeReplicasFromIsr gives up a partition whose znode a newer controller wrote:
    no write, no LeaderAndIsr, the replica keeps its state, the controller stays (it
    resigns only when it notices /controller is not its own).  The path, on
    ``failover`` (every fence on), is one that search found; before the check the
    zombie tried the write and resigned on the epoch fence."""
    m = model("failover")
    steps = replay_path(m, [
        action("ElectController", broker=0), action("CrashBroker", broker=1), action("RestartBroker", broker=1),
        action("ElectLeader", controller=0, partition=0, leader=0, strategy="new", clean=True),
        action("BrokerFailure", controller=0, broker=1), action("ExpireSession", broker=0),
        action("ElectController", broker=1),
        action("ElectLeader", controller=1, partition=0, leader=1, strategy="offline", clean=True),
        action("RemoveReplicaFromIsr", controller=0, partition=0, replica=1),
    ])
    before, after = steps[-2].state, steps[-1].state
    zombie = before.brokers[0].ctx
    assert before.zk.partitions[0].controller_epoch > zombie.epoch
    assert after.brokers[0].ctx is not None
    assert after.zk == before.zk and after.brokers[1:] == before.brokers[1:]
    assert after.brokers[0].ctx.replica_states == zombie.replica_states
    assert (0, 1) in zombie.offline and after.brokers[0].ctx.offline == ()


def test_same_zombie_is_fenced_with_zk_epoch_fencing_on():
    """The CHECK in the other direction: the same bounds with the fence on hold."""
    r = check(model("zombie", zk_epoch_fencing=True))
    assert r.verdict == OK
    assert "ZombieController" in witnesses(r)


def test_stale_leader_and_isr_applied_without_controller_epoch_fencing():
    r = check(model("no-controller-fencing"))
    assert r.verdict == VIOLATED
    v = r.violations[0]
    assert v.property == "ControllerEpochFencing"
    assert len(v.path) - 1 == 7
    last = v.path[-1].action
    assert last.name == "DeliverLeaderAndIsr"
    # the applied request is older than the epoch the broker had already seen
    before = v.path[-2].state.brokers[last.get("broker")]
    assert last.get("controller_epoch") < before.controller_epoch_seen
    assert r.stats.distinct == 879


def test_controller_epoch_fencing_off_is_harmless_with_one_partition():
    """A finding worth pinning: for LeaderAndIsr alone, the leader-epoch check
    already rejects every stale request when there is one partition, because the
    successor's first request to a broker carries the same leader epoch."""
    r = check(model("no-controller-fencing", partitions=1))
    assert r.verdict == OK
    assert r.stats.distinct == 3116


def test_unclean_election_breaks_only_the_clean_election_property():
    r = check(model("unclean"), keep_going=True)
    assert r.verdict == VIOLATED
    assert [v.property for v in r.violations] == ["LeaderElectedFromIsr"]
    v = r.violations[0]
    assert len(v.path) - 1 == 7
    assert str(v.path[-1].action) == "ElectLeader(controller=1, partition=0, leader=1, strategy='offline', clean=False)"
    assert "UncleanElection" in witnesses(r)


def test_same_bounds_clean_election_holds():
    assert check(model("unclean", unclean_leader_election=False)).verdict == OK


# -- properties can fail ---------------------------------------------------------------

def _initial(preset="tiny"):
    m = model(preset)
    return m, m.init_states()[0]


def _put_zk_partition(s, li):
    return s._replace(zk=s.zk._replace(partitions=(li,)))


def test_leader_in_isr_can_fail():
    _, s = _initial()
    assert leader_in_isr(s)
    assert not leader_in_isr(_put_zk_partition(s, LeaderIsr(1, 3, (0,), 1, 4)))


def test_at_most_one_leader_per_epoch_can_fail():
    _, s = _initial()
    b0, b1 = s.brokers
    s2 = s._replace(brokers=(b0._replace(partitions=(LeaderIsr(0, 2, (0, 1), 1, 0),)),
                             b1._replace(partitions=(LeaderIsr(1, 2, (0, 1), 1, 0),))))
    assert not at_most_one_leader_per_epoch(s2)
    s3 = s2._replace(brokers=(s2.brokers[0], b1._replace(partitions=(LeaderIsr(1, 3, (1,), 1, 1),))))
    assert at_most_one_leader_per_epoch(s3)


def test_at_most_one_active_controller_can_fail():
    m, s = _initial()
    s1 = m.next_state(s, action("ElectController", broker=0))
    ctx = s1.brokers[0].ctx
    s2 = s1._replace(brokers=(s1.brokers[0], s1.brokers[1]._replace(ctx=ctx)))
    assert at_most_one_active_controller(s1) and not at_most_one_active_controller(s2)


def test_step_properties_can_fail():
    m, s = _initial()
    s1 = m.next_state(s, action("ElectController", broker=0))
    ctx = s1.brokers[0].ctx
    # an illegal partition transition: NewPartition -> NonExistentPartition
    bad = s1._replace(brokers=(s1.brokers[0]._replace(ctx=ctx._replace(
        partition_states=(NON_EXISTENT_PARTITION,))), s1.brokers[1]))
    assert legal_state_transitions(s, None, s1)
    assert not legal_state_transitions(s1, action("X"), bad)
    # an illegal replica transition: OnlineReplica -> ReplicaDeletionStarted
    bad_r = s1._replace(brokers=(s1.brokers[0]._replace(ctx=ctx._replace(
        replica_states=((REPLICA_DELETION_STARTED, NEW_REPLICA),))), s1.brokers[1]))
    assert not legal_state_transitions(s1, action("X"), bad_r)
    # epochs going backwards
    assert not epochs_monotonic(s1, action("X"), s1._replace(zk=s1.zk._replace(controller_epoch=0)))
    # a leader from outside the ISR
    before = _put_zk_partition(s1, LeaderIsr(0, 1, (0,), 1, 1))
    after = _put_zk_partition(s1, LeaderIsr(1, 2, (1,), 1, 2))
    assert not leader_elected_from_isr(before, action("X"), after)
    # a broker applying a request from an older controller epoch
    seen = s1._replace(brokers=(s1.brokers[0], s1.brokers[1]._replace(controller_epoch_seen=2)))
    applied = seen._replace(brokers=(seen.brokers[0], seen.brokers[1]._replace(
        partitions=(LeaderIsr(0, 1, (0, 1), 1, 1),))))
    deliver = action("DeliverLeaderAndIsr", broker=1, partition=0, controller_epoch=1, leader=0,
                     leader_epoch=1, isr=(0, 1), version=1)
    assert not controller_epoch_fencing(seen, deliver, applied)


# -- election strategies (seed 004) -----------------------------------------------------

def test_offline_election_prefers_assignment_order_within_isr():
    live = (True, True, True)
    assert election.offline_partition((0, 1, 2), (1, 2), live, unclean=False) == (1, (1, 2), True)
    assert election.offline_partition((2, 1, 0), (0, 1), (True, False, True), False) == (0, (0,), True)


def test_offline_election_unclean_only_when_allowed():
    live = (False, True, True)
    assert election.offline_partition((0, 1, 2), (0,), live, unclean=False) is None
    assert election.offline_partition((0, 1, 2), (0,), live, unclean=True) == (1, (1,), False)


def test_preferred_election_never_unclean():
    assert election.preferred_replica((0, 1), 1, (1,), (True, True)) is None
    assert election.preferred_replica((0, 1), 1, (0, 1), (True, True)) == (0, (0, 1), True)


def test_controlled_shutdown_election_skips_brokers_shutting_down():
    assert election.controlled_shutdown((0, 1, 2), (0, 1, 2), (True,) * 3, (True, False, False)) == (1, (1, 2), True)
    assert election.controlled_shutdown((0, 1), (0,), (True, True), (True, False)) is None


def test_new_partition_takes_live_ar_as_isr():
    assert election.new_partition((0, 1, 2), (False, True, True)) == (1, (1, 2), True)
    assert election.new_partition((0, 1), (False, False)) is None



def test_every_preset_fits_its_brokers():
    """A preset's replicas must fit on its brokers, and min.insync.replicas within the
    replication factor: a preset that silently asks for more (a mistyped RF or broker
    count) would check a different cluster than its description says."""
    for name in FAMILY.presets:
        c = resolve(FAMILY, name, {})
        assert 1 <= c["replication_factor"] <= c["brokers"], name
        assert 1 <= c["min_insync_replicas"] <= c["replication_factor"], name


def test_the_action_names_are_those_of_the_families_switched_on():
    """The data path's actions exist only with records to write, reassignment's only
    with reassignments (what coverage reports and the explorer list)."""
    data = {"Produce", "Fetch", "TruncateFollower"}
    assert not data & set(model("tiny").action_names())
    assert data <= set(model("tiny", max_records=1).action_names())
    assert "ReassignPartitions" not in model("tiny").action_names()
    assert "ReassignPartitions" in model("reassign-rf").action_names()


def test_describe_shows_written_znodes_and_the_brokers_a_controller_counts_live():
    """KafkaModel.describe, the replay diff's view: a partition znode shows its fields
    once written (version 0 on) and None before; a controller's "live" lists only the
    brokers its context holds a session for (a session number > 0)."""
    from checker.graph import explore

    m = model("tiny")
    graph = explore(m)
    written = [s for s in graph.states if s.zk.partitions[0].version == 0]
    assert written and all(m.describe(s)["zk"]["partition"]["0"]["version"] == 0 for s in written)
    unwritten = [s for s in graph.states if s.zk.partitions[0].version == -1]
    assert all(m.describe(s)["zk"]["partition"]["0"] is None for s in unwritten)
    shown = 0
    for s in graph.states:
        for b, br in enumerate(s.brokers):
            if br.ctx is not None and 0 in br.ctx.live:
                live = m.describe(s)["broker"][str(b)]["controller"]["live"]
                assert live == "[" + ", ".join(str(x) for x, v in enumerate(br.ctx.live) if v) + "]"
                shown += 1
    assert shown > 0


STRANDED = Path(__file__).parent / "data" / "stranded-shutdown-data-kip320-wide.json"


def test_the_controller_asks_for_its_own_controlled_shutdown_only_while_it_may_stop():
    """A false alarm that `kmc simulate --preset data-kip320-wide --seed 1` found: the
    active controller (broker 1) asked for its own controlled shutdown after the only
    controller failover was spent, so its stop (ShutdownBroker, a failover) could never
    come, and the cluster rested half shut down with the reassignment stranded, which
    ReassignmentCompletesWhenQuiescent reported.  Kafka's broker stops once the
    controller answers; the model now offers that request only while the stop fits the
    budget.  The file is the old model's counterexample: its first 11 steps still run.
    In Kafka's event order the new controller's failover election comes before any
    new event (the old path asked for the shutdown first), so it is taken here; then
    the request is refused, and with a failover left it is offered again."""
    trace = load_trace(STRANDED)
    m = model(trace.preset)
    s = next(iter(m.init_states()))
    for st in trace.steps[1:12]:
        assert st.action in list(m.actions(s)), st.action
        s = m.next_state(s, st.action)
    asked = trace.steps[12].action
    assert asked == action("ControlledShutdown", controller=1, broker=1)
    election = action("ElectLeader", controller=1, partition=0, leader=1, strategy="offline", clean=True)
    assert [a for a in m.actions(s) if a.get("controller") == 1] == [election]
    s = m.next_state(s, election)
    assert s.zk.controller == 1 and s.budget.controller_failovers == 0
    assert asked not in list(m.actions(s))
    spare = s._replace(budget=s.budget._replace(controller_failovers=1))
    assert asked in list(m.actions(spare))


def test_each_bounded_parameter_takes_its_whole_range_and_no_more():
    """The parameters' ranges are the family's contract with its users (kmc check --set):
    each bound is accepted and one past it is refused with a one-line error."""
    from checker.errors import UsageError
    bounds = {"brokers": (1, 16), "partitions": (1, 4), "replication_factor": (1, 6), "max_crashes": (0, 5),
              "max_session_expiries": (0, 5), "max_controller_failovers": (0, 5), "max_isr_shrinks": (0, 5),
              "max_unclean_elections": (0, 5), "max_controlled_shutdowns": (0, 3), "max_topic_deletions": (0, 1),
              "max_records": (0, 4), "min_insync_replicas": (1, 6)}
    for key, (lo, hi) in bounds.items():
        for ok in (lo, hi):
            assert resolve(FAMILY, "tiny", {key: ok})[key] == ok
        for bad in (lo - 1, hi + 1):
            with pytest.raises(UsageError, match=f"'{key}' = {bad} is out of range"):
                resolve(FAMILY, "tiny", {key: bad})


def test_presets_named_for_a_replication_factor_have_it():
    """offsets-rf1 and offsets-rf3 name their replication factor: the anomaly each shows
    depends on it (one replica: the partition's only broker stops)."""
    import re
    named = {name: int(m.group(1)) for name in FAMILY.presets if (m := re.search(r"-rf(\d+)$", name))}
    assert named, "no preset names its replication factor"
    for name, rf in named.items():
        assert resolve(FAMILY, name, {})["replication_factor"] == rf, name


def test_only_a_controlled_shutdown_election_moves_the_leader_for_a_shutdown():
    """The ghost behind the ControlledShutdownMovesLeader witness is set by the
    controlled-shutdown election alone (spec/controller.py elect_leader), never by an
    offline, preferred or reassignment election: every transition that sets it is an
    ElectLeader with strategy controlled_shutdown, and some transition does."""
    m = model("shutdown", max_crashes=0, max_isr_shrinks=0)
    seen, todo, setters = set(), list(m.init_states()), set()
    while todo:
        s = todo.pop()
        if s in seen:
            continue
        seen.add(s)
        for a in m.actions(s):
            t = m.next_state(s, a)
            if t.ghost.inv_shutdown_moved_leader and not s.ghost.inv_shutdown_moved_leader:
                setters.add((a.name, a.get("strategy")))
            todo.append(t)
    assert setters == {("ElectLeader", "controlled_shutdown")}


def test_partition_key_keeps_a_state_with_its_parent_unless_a_leader_or_the_cluster_changes():
    """The Kafka model places states on Spark partitions by ZooKeeper without the ISRs
    (KafkaModel.partition_key): a successor that keeps ``zk`` gets its parent's very
    key object (the engine places it without hashing), one whose only ZooKeeper
    change is an ISR an equal key, and an election a different one."""
    from checker.fingerprint import placement_fn

    m = FAMILY.build(resolve(FAMILY, "small", {}))
    place = placement_fn(m)
    seen = {"same": 0, "isr": 0, "other": 0}
    frontier = list(m.init_states())
    for _ in range(8):
        nxt = []
        for s in frontier:
            for a in m.actions(s):
                t = m.next_state(s, a)
                nxt.append(t)
                ks, kt = m.partition_key(s), m.partition_key(t)
                if t.zk is s.zk:
                    assert kt is ks
                    seen["same"] += 1
                elif [(p.leader, p.leader_epoch) for p in t.zk.partitions] == \
                        [(p.leader, p.leader_epoch) for p in s.zk.partitions] and \
                        t.zk._replace(partitions=s.zk.partitions) == s.zk:
                    assert kt == ks and place(t) == place(s), a
                    seen["isr"] += 1
                else:
                    assert kt != ks, a
                    seen["other"] += 1
        frontier = nxt[:400]
    assert all(seen.values()), seen


# A fault kind is off where its bound (or switch) is zero; its words in a description.
_FAULT_BOUNDS = (("max_crashes", "crashes"), ("max_session_expiries", "session expiry"),
                 ("max_isr_shrinks", "ISR shrink"), ("max_controlled_shutdowns", "controlled shutdown"),
                 ("max_topic_deletions", "topic deletion"), ("controller_deletion", "/controller deletion"))


@pytest.mark.parametrize("name", sorted(FAMILY.presets))
def test_a_preset_says_which_fault_kinds_it_leaves_off_and_why(name):
    """The project's rule: a preset that switches a fault kind off says which one,
    and why, in its description.  Most said neither (tiny, small, shutdown... left
    session expiry off without a word; default and zombie, crashes)."""
    import re

    from spec.config import KafkaConfig

    preset = FAMILY.presets[name]
    cfg = KafkaConfig(**preset.overrides)
    _, _, off = preset.doc.partition(" Off: ")
    groups = off.split("); ") if off else []
    for g in groups:
        assert re.fullmatch(r"[^()]+ \(.*\S.*\)?", g), (name, g)     # kinds, then (why)
    named = " ".join(g.split(" (", 1)[0] for g in groups)
    for field, words in _FAULT_BOUNDS:
        is_off = not getattr(cfg, field) or (field == "max_topic_deletions" and not cfg.delete_topic_enable)
        assert (words in named) == is_off, (name, words, "off" if is_off else "on", preset.doc)
    lost = cfg.max_crashes or cfg.max_session_expiries or cfg.max_controlled_shutdowns or cfg.controller_deletion
    assert ("controller failover" in named) == (not cfg.max_controller_failovers or not lost), (name, preset.doc)


def test_a_leaders_isr_write_keeps_the_controller_epoch_the_znode_holds():
    """Kafka's leader writes an ISR change with its PartitionState's controller epoch
    (``Partition.updateIsr``): the epoch the znode held at the version the leader
    cached, so on a write that succeeds, the znode's own.  The model keeps the znode's
    epoch; it once wrote the epoch of the controller that sent the LeaderAndIsr, which
    differs after a failover, where the new controller re-sends leadership it did not
    write.  Both kinds of ISR write are checked, and the test is not vacuous: on some of
    them the request's sender had another epoch than the znode."""
    from checker.graph import explore
    g = explore(model("tiny"))
    writes = differing = 0
    for src, a, dst in g.edges:
        if a.name not in ("ShrinkIsr", "ExpandIsr"):
            continue
        before, after = g.states[src], g.states[dst]
        for p, (old, new) in enumerate(zip(before.zk.partitions, after.zk.partitions)):
            if new.version != old.version:
                writes += 1
                assert new.controller_epoch == old.controller_epoch, (a, p)
                view = before.brokers[a.get("leader")].partitions[p]
                differing += view.controller_epoch != old.controller_epoch
    assert writes > 0 and differing > 0, (writes, differing)
