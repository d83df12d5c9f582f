"""``controller_event_order``: Kafka's controller finishes one event before it takes the next.

Kafka's controller runs every event on one thread (``ControllerEventManager``): a broker
failure (``KafkaController.onBrokerFailure`` -> ``onReplicasBecomeOffline``) marks the
dead leader's partitions OfflinePartition, elects them
(``triggerOnlinePartitionStateChange``), then takes the dead replicas OfflineReplica
(out of the ISR), all before it looks at the next event.  Without the rule the model's
controller may take a restarted broker's ``BrokerStartup``, or a reassignment step,
before the failure's ``RemoveReplicaFromIsr``; the 26-step ``data-hw-wide`` loss of
``kmc simulate --preset data-hw-wide --property NoAckedRecordLost --seed 1`` (the file
below) takes that path."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from checker.bfs import check, replay_path
from checker.config import resolve
from checker.conform import Harness, covering_set
from checker.graph import explore
from checker.model import action
from checker.prefixes import pickled, replay
from checker.result import OK
from checker.trace import load_trace
from impl.adapter import KafkaImplementation
from spec.atomic import expand
from spec.controller import newer_mark
from spec.eventorder import UNORDERED, is_event_step
from spec.family import FAMILY
from tests.cli_support import kmc
from tests.walk_support import prefix_path

RESTART = Path(__file__).parent / "data" / "restart-before-offline-replica-data-hw-wide.json"


def build(preset, **overrides):
    return FAMILY.build(resolve(FAMILY, preset, overrides))


def _steps_and_model(flag: bool):
    trace = load_trace(RESTART)
    cfg = resolve(FAMILY, None, {**trace.config, "controller_event_order": flag})
    return trace, cfg, FAMILY.build(cfg)


def test_a_restarted_broker_waits_for_its_failures_offline_replica():
    """Broker 1 crashes and restarts before the controller took it out of the ISR:
    without the rule the controller may take the startup first, and the removal is
    then never taken; with it the failure event ends first."""
    path = [action("ElectController", broker=0),
            action("ElectLeader", controller=0, partition=0, leader=0, strategy="new", clean=True),
            action("CrashBroker", broker=1), action("BrokerFailure", controller=0, broker=1),
            action("RestartBroker", broker=1)]
    mine = {}
    for flag in (False, True):
        m = build("failover", controller_event_order=flag)
        s = replay_path(m, path)[-1].state
        mine[flag] = [str(a) for a in m.actions(s) if a.get("controller") == 0]
    removal = "RemoveReplicaFromIsr(controller=0, partition=0, replica=1)"
    assert mine[False] == ["BrokerStartup(controller=0, broker=1)", removal]
    assert mine[True] == [removal]


def test_the_swarm_loss_leaves_the_controllers_events_unfinished():
    """The whole 26-step loss runs without the rule.  With it, a controlled-shutdown
    request is refused before the new controller elected the new partition's leader
    (``onControllerFailover`` runs that election first), and the loss stops at the
    reassignment event that it starts before broker 1's OfflineReplica transition of
    the controlled shutdown.  (The swarm walk asked for the shutdown first; since no
    election puts a broker in controlled shutdown into a new partition's ISR, as
    Kafka's ``initializeLeaderAndIsrForPartitions`` never does, the kept path takes the
    election first.)"""
    trace, _cfg, off = _steps_and_model(False)
    acts = [st.action for st in trace.steps[1:]]
    states = [st.state for st in replay_path(off, acts)]
    prop = next(p for p in off.properties() if p.name == "NoAckedRecordLost")
    assert not prop.predicate(states[-1])

    _trace, _cfg, on = _steps_and_model(True)
    s = on.next_state(on.init_states()[0], acts[0])
    assert acts[2].name == "ControlledShutdown" and acts[2] not in on.actions(s)
    assert [a.name for a in on.actions(s) if a.get("controller") == 0] == ["ElectLeader"]
    s = replay_path(on, acts[:9])[-1].state
    assert acts[9].name == "StartReassignment" and acts[9] not in on.actions(s)
    assert [str(a) for a in on.actions(s) if a.get("controller") == 0] == [
        "RemoveReplicaFromIsr(controller=0, partition=0, replica=1)"]


def test_the_rule_removes_only_new_events_and_early_offline_replicas():
    """On the whole graph of ``shutdown`` (no crash) and ``failover`` (no ISR shrink)
    with the rule: every state
    offers a subset of what the model without the rule offers there, and what it
    drops is exactly a new event of a controller with a step of its current event
    enabled, that controller's clean stop, or an OfflineReplica transition while that
    controller's event still has an election to run."""
    for preset, over in (("shutdown", {"max_crashes": 0}), ("failover", {"max_isr_shrinks": 0})):
        on = build(preset, controller_event_order=True, **over)
        off = build(preset, controller_event_order=False, **over)
        g = explore(on)
        assert g.complete
        dropped = 0
        for s in g.states:
            with_rule, without = on.actions(s), off.actions(s)
            assert set(with_rule) <= set(without)
            for a in set(without) - set(with_rule):
                dropped += 1
                c = a.get("broker") if a.name == "ShutdownBroker" else a.get("controller")
                steps = [x for x in without if x.get("controller") == c and is_event_step(x)]
                assert steps and a.name not in UNORDERED, (preset, a)
                if is_event_step(a):
                    assert a.name == "RemoveReplicaFromIsr"
                    assert any(x.name == "ElectLeader" for x in steps), (preset, a)
        assert dropped > 0


@pytest.mark.parametrize("preset, over, b, path, rest", [
    # controller 1 asks to stop while broker 0 leads: its ControlledShutdown event owes
    # broker 1's OfflineReplica step
    ("shutdown", {}, 1, ("ElectController(broker=1)", "ElectLeader(controller=1, partition=0, leader=0",
                      "ControlledShutdown(controller=1, broker=1)"),
     ("RemoveReplicaFromIsr(controller=1, partition=0, replica=1)",)),
    # controller 0 asks to stop, then takes a reassignment's step 1 (its event runs to step 3)
    ("reassign-rf", {"max_controlled_shutdowns": 1, "max_controller_failovers": 1}, 0,
     ("ElectController(broker=0)", "ElectLeader(", "ReassignPartitions(", "StartReassignment(",
      "ControlledShutdown(controller=0, broker=0)", "ReassignExtendAr(controller=0, partition=0)"),
     ("ReassignBumpLeaderEpoch(controller=0, partition=0)", "ReassignStartNewReplicas(controller=0, partition=0)")),
])
def test_a_controller_stops_cleanly_only_after_its_event_in_progress(preset, over, b, path, rest):
    """A clean stop waits for the controller's event in progress: 0.10's
    ``KafkaServer.shutdown`` joins the request handlers and ``KafkaController.shutdown``
    takes the ``controllerLock`` that the listeners' handlers hold, and from 1.1 ``ControllerEventManager.close`` queues the event thread's end
    behind the event.  The model and the reference broker once let a controller in
    controlled shutdown stop between two steps of one event, which only a crash can do."""
    cfg = resolve(FAMILY, preset, over)
    m = FAMILY.build(cfg)
    stop = action("ShutdownBroker", broker=b)
    s, acts = prefix_path(m, *path)
    impl = KafkaImplementation(cfg)
    for a in acts:
        impl.apply(a)
    for want in rest:
        assert stop not in m.actions(s) and not impl.enabled(stop), want
        s, acts = prefix_path(m, *map(str, acts), want)
        impl.apply(acts[-1])
    assert stop in m.actions(s) and impl.enabled(stop)
    assert Harness(m, KafkaImplementation, cfg).run([*acts, stop]) is None


def test_no_deadlock_and_the_same_verdicts_on_the_small_presets():
    for preset in ("tiny", "delete"):
        r = check(build(preset, controller_event_order=True))
        assert r.verdict == OK and r.stats.complete, preset


@pytest.mark.parametrize("preset, over", [("tiny", {}), ("shutdown", {"max_crashes": 0}),
                                          pytest.param("failover", {"max_isr_shrinks": 0}, marks=pytest.mark.slow)])
def test_the_reference_broker_follows_the_event_order(preset, over):
    """The covering set of the graph with the rule conforms, and in every state the
    implementation refuses every action of the graph without the rule that the model
    with it does not enable (``kmc conform --probe``)."""
    cfg = resolve(FAMILY, preset, {**over, "controller_event_order": True})
    model = FAMILY.build(cfg)
    vocabulary = sorted({a for _, a, _ in explore(build(preset, controller_event_order=False, **over)).edges},
                        key=str)
    h = Harness(model, KafkaImplementation, cfg, vocabulary)
    cover = covering_set(explore(model))
    assert cover.covered == len(cover.graph.edges)
    for _, d in replay(h, cover.traces, snapshot=pickled):   # shared prefixes once: tests/test_prefixes.py
        assert d is None, d.render()


@pytest.mark.parametrize("preset", ["tiny", "failover", "data-hw", "shutdown"])
@pytest.mark.parametrize("seed", range(3))
def test_atomic_expansion_is_a_path_of_the_full_model_with_the_rule(preset, seed):
    atomic = build(preset, atomic_controller=True, controller_event_order=True)
    rng = random.Random(seed)
    s, acts = atomic.init_states()[0], []
    for _ in range(40):
        enabled = atomic.actions(s)
        if not enabled:
            break
        a = rng.choice(enabled)
        acts.append(a)
        s = atomic.next_state(s, a)
    full = build(preset, atomic_controller=False, controller_event_order=True)
    replay_path(full, expand(atomic, acts))   # raises if a step is not enabled


# Counterexamples of the model with the rule.  Three known traces took a non-Kafka order
# and are refused under it (data-kip279-3's and data-kip101-3's full-model traces at their
# steps 9 and 13, a BrokerStartup or BrokerFailure taken before the previous event's step;
# reassign-crash's ReassignmentCompletesWhenQuiescent at step 15, a reassignment event
# before an OfflineReplica step).  The first two are kept under tests/data/non-kafka-order/.
# The third is gone: it stranded the reassignment only because a failed step-7 election
# ended the event; since that election goes on with steps 8-11, as Kafka's does, the
# model without the rule refuses it at step 17 and strands nothing (reassign-crash with
# controller_event_order=false holds on all 43,703 states).  The
# two data traces' replacements, found with the rule (``kmc simulate
# --random-priority --seed 4 --set atomic_controller=false --set
# controller_event_order=true --property HighWatermarkBelowIsrLeo`` on the two
# three-replica presets), are in traces/known/ with their stories.  reassign-crash's
# replacement took an OfflineReplica step no Kafka event owes; it is kept under
# tests/data/non-kafka-offline/ (below), and the property now holds.
# tests/data/event-order/ keeps data-hw-wide's acknowledged-record loss under the rule: the
# 26-step walk that ``kmc simulate --preset data-hw-wide --property NoAckedRecordLost --seed 1
# --walks 1000000`` gave before OfflineReplica became a step an event owes (4398e194), the
# 26-step walk it gives since a controller stops cleanly only after its event in progress
# (07f341f0), the 37-step walk it gave before that, with broker 1's CompleteReassignment put
# before its ShutdownBroker by hand (d72de25d: the walk stopped the controller between
# reassignment steps 10 and 11; the 28-step one before it, cc3466e9, kept a broker in
# controlled shutdown as leader at reassignment step 7, which Kafka does not), and the
# 28-step walk's loss with the reassignment taken
# inside the new controller's failover event, as Kafka's onControllerFailover does, ordered
# by hand (26 steps, d9d0cc70; see docs/results.md).  It also keeps data-kip101-wide's loss as
# ``kmc simulate --random-priority --preset data-kip101-wide --property NoAckedRecordLost
# --seed 0`` and ``--seed 1`` find it (52 steps, 2fea5e96; 40 steps, af9a096e; each controller
# handles a crash after the broker restarted, as 2.2's broker epochs do), and the same mechanism with a session expiry
# instead of the bounce, ordered by hand (36 steps, 2db1a94e).
ROOT = Path(__file__).resolve().parent.parent
KNOWN = ROOT / "traces" / "known"
REPLACEMENTS = [KNOWN / "HighWatermarkBelowIsrLeo-data-kip279-3-custom-5b7c4b34.json",
                KNOWN / "HighWatermarkBelowIsrLeo-data-kip101-3-custom-64ae5b2c.json"]
EVENT_ORDER_TRACES = sorted((Path(__file__).parent / "data" / "event-order").glob("*.json")) + REPLACEMENTS
NON_KAFKA_ORDER = sorted((Path(__file__).parent / "data" / "non-kafka-order").glob("*.json"))


@pytest.mark.parametrize("path", EVENT_ORDER_TRACES, ids=lambda p: p.stem)
def test_counterexamples_under_the_rule_replay_violate_and_conform(path):
    trace = load_trace(path)
    assert trace.config["controller_event_order"] is True
    cfg = resolve(FAMILY, None, trace.config)
    m = FAMILY.build(cfg)
    acts = [st.action for st in trace.steps[1:]]
    states = [st.state for st in replay_path(m, acts)]
    prop = next(p for p in m.properties() if p.name == trace.property_name)
    assert not prop.predicate(states[-1]) and all(prop.predicate(s) for s in states[:-1])
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None


def _refused_at(trace, flag: bool):
    m = FAMILY.build(resolve(FAMILY, None, {**trace.config, "controller_event_order": flag}))
    s = m.init_states()[0]
    for i, st in enumerate(trace.steps[1:], 1):
        if st.action not in m.actions(s):
            return i, st.action.name
        s = m.next_state(s, st.action)
    return None


def test_every_known_trace_is_a_path_in_kafkas_event_order():
    refused = {p.name: _refused_at(load_trace(p), True) for p in sorted(KNOWN.glob("*.json"))}
    assert len(refused) >= 15 and set(refused.values()) == {None}, refused


def test_the_non_kafka_orders_are_refused_at_the_step_named_and_violate_without_the_rule():
    """Two of the three traces the known traces had before the rule: saved without the key
    (so the model's default applies), each refused by the rule at the step where it
    leaves Kafka's order, and each a violating path of the model without it."""
    refused = {}
    for path in NON_KAFKA_ORDER:
        trace = load_trace(path)
        assert "controller_event_order" not in trace.config
        refused[path.name.rsplit("-", 1)[0]] = _refused_at(trace, True)
        assert _refused_at(trace, False) is None
        m = FAMILY.build(resolve(FAMILY, None, {**trace.config, "controller_event_order": False}))
        last = replay_path(m, [st.action for st in trace.steps[1:]])[-1].state
        assert not next(p for p in m.properties() if p.name == trace.property_name).predicate(last)
    assert refused == {
        "HighWatermarkBelowIsrLeo-data-kip279-3-custom": (9, "BrokerStartup"),
        "LogsMatchBelowHighWatermark-data-kip101-3-custom": (13, "BrokerFailure"),
    }


@pytest.mark.parametrize("path", NON_KAFKA_ORDER, ids=lambda p: p.stem)
def test_kmc_replay_refuses_a_non_kafka_order_by_default_and_replays_it_with_the_rule_off(path):
    r = kmc("replay", path)
    assert r.returncode == 1 and "no longer fits the model" in r.stderr
    assert "note: the trace does not record controller_event_order (replayed with its default, true)" in r.stdout
    r = kmc("replay", path, "--set", "controller_event_order=false")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    assert "is still violated on the final state" in r.stdout


NON_KAFKA_OFFLINE = Path(__file__).parent / "data" / "non-kafka-offline" / \
    "ReassignmentCompletesWhenQuiescent-reassign-crash-1dad2271.json"


def test_the_stranded_reassignment_rested_on_an_offline_step_no_event_owes():
    """The reassign-crash trace that replaced the non-Kafka order above (19 steps) took
    replica 1 OfflineReplica at step 17 (``RemoveReplicaFromIsr``), on a broker the new
    controller had found dead at its failover (ReplicaDeletionIneligible), right after
    reassignment step 5 took it OnlineReplica: no Kafka event owes that step (a broker
    failure or a controlled shutdown does; 0.10 to 2.2's failover takes none).  The
    model refuses it there, with the rule and without; every step before still runs."""
    trace = load_trace(NON_KAFKA_OFFLINE)
    assert str(trace.steps[17].action) == "RemoveReplicaFromIsr(controller=0, partition=0, replica=1)"
    assert _refused_at(trace, True) == (17, "RemoveReplicaFromIsr")
    assert _refused_at(trace, False) == (17, "RemoveReplicaFromIsr")
    m = FAMILY.build(resolve(FAMILY, None, trace.config))
    state = replay_path(m, [st.action for st in trace.steps[1:17]])[-1].state
    ctx = state.brokers[0].ctx
    assert ctx.live[1] == 0 and ctx.replica_states[0][1] == "OnlineReplica" and ctx.offline == ()


def test_a_zombie_whose_reassignment_write_failed_on_the_mark_may_stop_cleanly():
    """A zombie's reassignment event ends when step 2's or 8's write (or step 7's kept
    leader's epoch bump) fails on a newer controller's mark: ``updateLeaderEpoch`` and
    ``removeReplicasFromIsr`` throw, ending ``onPartitionReassignment``.  It is idle
    then, so its broker may stop cleanly.  The model and the reference broker once
    counted it as inside the event, so its clean stop waited for a ``Resign`` after
    which the stop was never enabled again (found by review)."""
    cfg = resolve(FAMILY, "reassign-rf", {"max_controlled_shutdowns": 1, "max_controller_failovers": 1,
                                          "controller_deletion": True})
    m = FAMILY.build(cfg)
    s, acts = prefix_path(m, "ElectController(broker=0)", "ElectLeader(controller=0, partition=0, leader=0",
                          "ControlledShutdown(controller=0, broker=0)", "ReassignPartitions(", "StartReassignment(",
                          "ReassignExtendAr(controller=0", "DeleteController", "ElectController(broker=1)",
                          "CompleteReassignment(controller=1", "ReassignPartitions(", "StartReassignment(controller=1",
                          "ReassignExtendAr(controller=1", "ReassignBumpLeaderEpoch(controller=1")
    zombie = s.brokers[0].ctx
    assert zombie is not None and zombie.reassigning[0].step == "1" and newer_mark(s, zombie, 0)
    stop = action("ShutdownBroker", broker=0)
    assert stop in m.actions(s)
    assert Harness(m, KafkaImplementation, cfg).run([*acts, stop]) is None
