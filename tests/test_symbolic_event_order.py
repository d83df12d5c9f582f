"""z3 with the controller's event order (``controller_event_order=true``): the guards of
spec/symcontroller.py and spec/symreassign.py against spec.eventorder.event_order.

The rule hides actions: a controller with a step of its current event enabled
(``ElectLeader`` new or offline, ``RemoveReplicaFromIsr``) takes no new event, and its
elections come before its ``RemoveReplicaFromIsr``.  These tests compare what z3
enables with what the explicit model enables, state by state, on every state where the
rule hides an action (taken from the graph without the rule, a superset) and on a
sample of the others; they count the hidden actions by name, so that each guard the
rule adds is exercised.  Then explicit transitions must be symbolic transitions, bmc's
counterexamples must replay on the explicit model with the rule, and proofs go through."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import z3

from checker.bfs import check
from checker.config import resolve
from checker.graph import explore
from checker.solver import FreshSolver
from checker.symbolic import TransitionStep, bmc, evaluator, load_lemmas, prove, to_explicit
from spec.config import KafkaConfig
from spec.family import FAMILY
from spec.symbolic import KafkaSymbolic, unsupported
from tests.symbolic_support import SymbolicEnabled

ON = {"controller_event_order": True}
OFF = {"controller_event_order": False}
LEMMAS = Path(__file__).resolve().parent.parent / "examples" / "lemmas.py"


def config(preset, **over):
    return resolve(FAMILY, preset, over)


def _agree(preset, z3_enabled, on, off, n, state, hidden: Counter) -> None:
    enabled = set(on.actions(state))
    got = z3_enabled.enabled(state)
    assert got == enabled, (f"{preset}, state {n}: z3 only {sorted(map(str, got - enabled))}, "
                            f"explicit only {sorted(map(str, enabled - got))}")
    gone = set(off.actions(state)) - enabled
    hidden.update(a.name + ("/preferred" if a.get("strategy") == "preferred" else "") for a in gone)


def _models(preset, **over):
    on, off = FAMILY.build(config(preset, **over, **ON)), FAMILY.build(config(preset, **over, **OFF))
    return SymbolicEnabled(KafkaSymbolic(KafkaConfig(**config(preset, **over, **ON)))), on, off


def enabled_sets_agree(preset, hidden_stride, other_stride) -> tuple[Counter, int]:
    """Check z3's enabled set against the explicit model's, with the rule, on every
    ``hidden_stride``-th state of the graph without the rule where the rule hides an
    action, and on every ``other_stride``-th state; returns the hidden actions counted
    by name (``ElectLeader/preferred`` for a preferred election) and the states checked."""
    z3_enabled, on, off = _models(preset)
    hidden: Counter = Counter()
    checked = hiding = 0
    for n, state in enumerate(explore(off).states):
        if set(off.actions(state)) != set(on.actions(state)):
            hiding += 1
            if hiding % hidden_stride == 0:
                _agree(preset, z3_enabled, on, off, n, state, hidden)
                checked += 1
                continue
        if n % other_stride == 0:
            _agree(preset, z3_enabled, on, off, n, state, hidden)
            checked += 1
    return hidden, checked


def walk_agrees(preset, path: list[str], **over) -> Counter:
    """Compare the enabled sets on every state of ``path`` (actions of the model without
    the rule, by their text: shortest paths to a state where the rule hides the action
    the test is about)."""
    z3_enabled, on, off = _models(preset, **over)
    hidden: Counter = Counter()
    [state] = off.init_states()
    for n, text in enumerate(path + [None]):
        _agree(preset, z3_enabled, on, off, n, state, hidden)
        if text is not None:
            [a] = [a for a in off.actions(state) if str(a) == text]
            state = off.next_state(state, a)
    return hidden


def test_the_encoding_takes_the_rule():
    assert unsupported(KafkaConfig(**config("failover", **ON))) is None


def test_z3_enables_what_the_explicit_model_enables_with_the_rule_on_tiny():
    """tiny: a crash; the rule hides BrokerStartup, BrokerFailure and IsrChangeNotification
    behind a pending step, and RemoveReplicaFromIsr behind a pending election."""
    hidden, checked = enabled_sets_agree("tiny", 1, 11)
    assert checked > 200
    assert {"BrokerStartup", "BrokerFailure", "IsrChangeNotification", "RemoveReplicaFromIsr"} <= set(hidden), hidden


ELECT_NEW = "ElectLeader(controller={}, partition=0, leader=0, strategy='new', clean=True)"


def test_z3_and_the_explicit_model_agree_that_a_zombie_leaves_its_successors_partition_alone():
    """failover: the walk that used to show the rule hiding a preferred election (an
    event of its own) behind the current event's steps: broker 0, a zombie with an
    offline step pending, could elect its preferred replica over the znode controller 1
    wrote.  Kafka's "already written by another controller" check rules that election
    out (spec.controller.newer_mark), in z3 as in the explicit model, so nothing is left
    for the rule to hide; no state of small, default, failover or shutdown has a
    preferred election that the rule hides any more (the test below needs a second
    partition)."""
    hidden = walk_agrees("failover", [
        "ElectController(broker=0)", "CrashBroker(broker=1)", "RestartBroker(broker=1)", ELECT_NEW.format(0),
        "BrokerFailure(controller=0, broker=1)", "ExpireSession(broker=0)", "ElectController(broker=1)",
        "RegisterBroker(broker=0)", "ElectLeader(controller=1, partition=0, leader=1, strategy='offline', clean=True)",
        "BrokerStartup(controller=1, broker=0)",
        "DeliverLeaderAndIsr(broker=0, partition=0, controller_epoch=2, leader=1, leader_epoch=1, isr=(1,), version=1)",
        "DeliverLeaderAndIsr(broker=1, partition=0, controller_epoch=2, leader=1, leader_epoch=1, isr=(1,), version=1)",
        "ExpandIsr(leader=1, partition=0, replica=0)"])
    assert hidden["ElectLeader/preferred"] == 0 and hidden["BrokerStartup"] > 0, hidden


def test_z3_enables_what_the_explicit_model_enables_with_the_rule_and_preferred_elections():
    """failover with two partitions: a preferred election (an event of its own) waits
    for the current event's steps.  Controller 1 was elected while broker 0 was down,
    elected partition 0's leader, and still owes partition 1's NewPartition election
    when broker 0, partition 0's preferred replica, is back in its ISR.  The shortest
    such path (8 steps, found by breadth-first search of the model without the rule)."""
    hidden = walk_agrees("failover", [
        "CrashBroker(broker=0)", "ElectController(broker=1)", "RestartBroker(broker=0)",
        "ElectLeader(controller=1, partition=0, leader=1, strategy='new', clean=True)",
        "BrokerStartup(controller=1, broker=0)",
        "DeliverLeaderAndIsr(broker=0, partition=0, controller_epoch=1, leader=1, leader_epoch=0, isr=(1,), version=0)",
        "DeliverLeaderAndIsr(broker=1, partition=0, controller_epoch=1, leader=1, leader_epoch=0, isr=(1,), version=0)",
        "ExpandIsr(leader=1, partition=0, replica=0)"], partitions=2)
    assert hidden["ElectLeader/preferred"] > 0, hidden


REASSIGN = ["ReassignPartitions(partition=0, replicas=(1,))", "StartReassignment(controller={c}, partition=0)",
            "ReassignExtendAr(controller={c}, partition=0)", "ReassignBumpLeaderEpoch(controller={c}, partition=0)",
            "DeliverLeaderAndIsr(broker=0, partition=0, controller_epoch=1, leader=0, leader_epoch=1, isr=(0,), "
            "version=1, replicas=(0, 1))",
            "DeliverLeaderAndIsr(broker=1, partition=0, controller_epoch=1, leader=0, leader_epoch=1, isr=(0,), "
            "version=1, replicas=(0, 1))",
            "ExpandIsr(leader=0, partition=0, replica=1)"]


def test_z3_enables_what_the_explicit_model_enables_with_the_rule_and_a_reassignment():
    """reassign-crash: the rule hides the reassignment's event (StartReassignment) and
    the steps of a controller that is not inside a reassignment event (a busy one keeps
    reassignment's own rule): a controller that must still elect, after a crash, or a
    new controller with a restarted broker's OnlineReplica step pending."""
    hidden = walk_agrees("reassign-crash", [
        "ElectController(broker=1)", "CrashBroker(broker=0)", ELECT_NEW.format(1),
        "BrokerFailure(controller=1, broker=0)", *[t.format(c=1) for t in REASSIGN[:2]]])
    hidden += walk_agrees("reassign-crash", [
        "ElectController(broker=0)", ELECT_NEW.format(0), *[t.format(c=0) for t in REASSIGN],
        "CrashBroker(broker=0)", "ElectController(broker=1)"])
    hidden += walk_agrees("reassign-crash", [
        "ElectController(broker=1)", ELECT_NEW.format(1), *[t.format(c=1) for t in REASSIGN],
        *[f"{name}(controller=1, partition=0)" for name in (
            "ReassignStartNewReplicas", "ReassignOnlineReplicas", "ReassignCacheAr")],
        "ReassignElectLeader(controller=1, partition=0, leader=1)",
        *[f"{name}(controller=1, partition=0)" for name in (
            "ReassignOfflineOldReplicas", "ReassignStartReplicaDeletion", "ReassignReplicaDeletionSuccessful",
            "ReassignRemoveReplicas", "ReassignShrinkAr")],
        "CrashBroker(broker=1)", "ElectController(broker=0)", "RestartBroker(broker=1)",
        "BrokerStartup(controller=0, broker=1)"])
    assert {"StartReassignment", "ReassignExtendAr", "ReassignOnlineReplicas", "CompleteReassignment"} <= set(hidden)


@pytest.mark.slow
@pytest.mark.parametrize("preset, hidden_stride, other_stride", [
    ("tiny", 1, 1), ("zombie", 1, 7), ("unclean", 1, 5), ("failover", 7, 997), ("default", 13, 1999),
    ("reassign-crash", 1, 401), ("reassign-rf", 1, 7)])
def test_z3_enables_what_the_explicit_model_enables_with_the_rule(preset, hidden_stride, other_stride):
    enabled_sets_agree(preset, hidden_stride, other_stride)


def test_explicit_transitions_are_symbolic_transitions_with_the_rule():
    """The other half of agreement, on tiny with the rule: a sample of its edges are
    symbolic steps that decode to the same actions."""
    s = KafkaSymbolic(KafkaConfig(**config("tiny", **ON)))
    graph = explore(FAMILY.build(config("tiny", **ON)))
    acts = s.actions()
    by_name: dict = {}
    for i, a in enumerate(acts):
        by_name.setdefault(a.name, []).append(i)
    for src, a, dst in graph.edges[::17]:
        f, g = s.frame("s"), s.frame("t")
        step = TransitionStep(s, acts, by_name[a.name], f, g, "x")
        solver = FreshSolver()
        solver.add(s.abstract(graph.states[src], f), s.abstract(graph.states[dst], g), *step.constraints)
        assert solver.check() == z3.sat, f"{a} from state {src} is not a symbolic step"
        i = solver.model().eval(step.sel, model_completion=True).as_long()
        assert acts[i].explicit(evaluator(solver.model()), f, step.params_of(i)) == [a]


@pytest.mark.parametrize("preset, prop, brokers", [
    ("zombie", "ControllerEpochFencing", 2),
    pytest.param("unclean", "LeaderElectedFromIsr", 2, marks=pytest.mark.slow),
    pytest.param("zombie", "ControllerEpochFencing", 5, marks=pytest.mark.slow),
])
def test_bmc_with_the_rule_finds_the_explicit_engines_depth_and_replays(preset, prop, brokers):
    """bmc's bounded form (request slots, bit-vectors) with the rule: the shortest
    violation has the depth breadth-first search finds with the rule with 2 brokers
    (more brokers outside the AR do not shorten it), and the trace replays on the
    explicit model with the rule."""
    two = FAMILY.build(config(preset, brokers=2, **ON))
    [v] = check(two, properties=[p for p in two.properties() if p.name == prop]).violations
    steps = len(v.path) - 1
    cfg = config(preset, brokers=brokers, **ON)
    model = FAMILY.build(cfg)
    explicit = {p.name: p for p in model.properties()}[prop]
    res = bmc(KafkaSymbolic(KafkaConfig(**cfg)), steps, [prop])
    assert res.violation is not None and res.violation.depth == steps
    path, why = to_explicit(model, res.violation.actions, explicit)
    assert why is None and len(path) == steps + 1


@pytest.mark.parametrize("brokers, names", [
    (3, ["ControllerEpochFencing", "LegalStateTransitions", "LeaderInIsr"]),
    pytest.param(7, ["LeaderInIsr", "IsrSubsetOfAssignedReplicas", "AtMostOneActiveController",
                     "ControllerEpochFencing", "LegalStateTransitions", "EpochsMonotonic", "LeaderElectedFromIsr"],
                 marks=pytest.mark.slow),
])
def test_the_invariants_are_proved_with_the_rule(brokers, names):
    """The rule only strengthens guards, so what is inductive without it stays so; the
    proof runs over the strengthened guards (the default preset)."""
    s = KafkaSymbolic(KafkaConfig(**config("default", brokers=brokers, **ON)))
    res = prove(s, names, lemmas=load_lemmas(LEMMAS))
    assert res.proved, res.cti and (res.cti.broken, res.cti.action.label)
