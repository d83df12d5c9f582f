"""z3: inductive proofs (kmc prove) and bounded model checking (kmc bmc) on the Kafka
encoding (spec/symbolic.py), checked against the explicit model, which is the
reference: BMC counterexamples must replay there, CTIs of a known-bad variant must be
reachable there, and explicit transitions must be symbolic transitions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import z3

from checker.config import resolve
from checker.graph import explore
from checker.model import action
from checker.bmc import FIRST_BOUND
from checker.solver import FreshSolver
from checker.symbolic import TransitionStep, bmc, confirm_cti, load_lemmas, prove, to_explicit
from spec.config import KafkaConfig
from spec.family import FAMILY
from spec.symbolic import KafkaSymbolic
from tests import cli_support
from tests.symbolic_support import SymbolicEnabled

ROOT = Path(__file__).resolve().parent.parent
KAFKA = ["--model", "spec.family:FAMILY"]
LEMMAS = ROOT / "examples" / "lemmas.py"


def kmc(*args, seed="0", cwd=ROOT):
    return cli_support.kmc(*args, cwd=cwd, seed=seed, timeout=900)


def config(preset="default", **over):
    return resolve(FAMILY, preset, over)


def sym(preset="default", **over):
    return KafkaSymbolic(KafkaConfig(**config(preset, **over)))


def lemmas(epochs=False):
    out = load_lemmas(LEMMAS)
    if epochs:
        out += load_lemmas(ROOT / "examples" / "lemmas_epochs.py", existing=[x.name for x in out])
    return out


# ------------------------------------------------------------------------- prove

@pytest.mark.parametrize("brokers", [2, 3, 4])
def test_at_most_one_active_controller_is_inductive_with_the_lemmas(brokers):
    res = prove(sym(brokers=brokers, replication_factor=2), ["AtMostOneActiveController"], lemmas=lemmas())
    assert res.proved, res.cti and (res.cti.broken, res.cti.action.label)
    assert "CopiesMatchZooKeeper" in res.conjuncts and "TypeOK" in res.conjuncts


@pytest.mark.parametrize("brokers", [3, 5])
def test_controller_epoch_fencing_is_inductive_alone_with_both_fences_on(brokers):
    res = prove(sym(brokers=brokers), ["ControllerEpochFencing"])
    assert res.proved


def test_leader_in_isr_is_not_inductive_alone_and_is_with_the_lemmas():
    alone = prove(sym(brokers=3), ["LeaderInIsr"])
    assert not alone.proved and alone.cti is not None and alone.cti.broken == "LeaderInIsr"
    assert prove(sym(brokers=3), ["LeaderInIsr"], lemmas=lemmas()).proved


def test_at_most_one_leader_per_epoch_needs_the_pairwise_lemmas():
    s = sym(brokers=2, replication_factor=2)
    res = prove(s, ["AtMostOneLeaderPerEpoch"], lemmas=lemmas())
    assert not res.proved and res.cti is not None
    assert prove(s, ["AtMostOneLeaderPerEpoch"], lemmas=lemmas(epochs=True)).proved


@pytest.mark.parametrize("brokers", [3, 5])
def test_reassignment_isr_in_ar_is_proved_with_the_reassignment_lemmas(brokers):
    """The reassignment steps keep the ISR and the leader within the AR in ZooKeeper, and
    the leader within RAR from step 7, for any number of brokers (the reassign preset's
    fault budgets, pinned by a lemma)."""
    reassign = load_lemmas(ROOT / "examples" / "lemmas_reassign.py")
    s = sym("reassign", brokers=brokers)
    alone = prove(s, ["ReassignmentIsrInAr"])
    assert not alone.proved and alone.cti is not None
    res = prove(s, ["ReassignmentLeaderInRar", "ReassignmentIsrInAr", "LeaderInIsr"], lemmas=reassign)
    assert res.proved, res.cti and (res.cti.broken, res.cti.action.label)
    assert {"Reassigning", "AssignedWithinAr", "LeaderMoved", "NoFaultBudget"} <= set(res.conjuncts)


def test_the_reassignment_proof_does_not_cover_faults():
    """examples/lemmas_reassign.py pins the preset's fault budgets (0): with a crash allowed
    (reassign-crash, where ReassignmentLeaderInRar really fails) that lemma is false
    initially, so nothing is proved."""
    res = prove(sym("reassign-crash"), ["ReassignmentLeaderInRar"],
                lemmas=load_lemmas(ROOT / "examples" / "lemmas_reassign.py"))
    assert not res.proved


class _ReassignReach(KafkaSymbolic):
    """reassign-rf with one more 'invariant': no controller has finished step 3 of a
    reassignment.  Its bmc counterexample is a shortest run to step 3, in the bounded
    (slot) form of the encoding."""

    def invariants(self):
        from checker.symbolic import SymInvariant
        from spec.symbolic import R_ORDER

        def before3(f):
            return z3.And([z3.Not(z3.And(f.ctx[b].has, f.rctx[b][q].has, f.rctx[b][q].step >= R_ORDER.index("3")))
                           for b in range(f.n) for q in range(f.partitions)])
        return [*super().invariants(), SymInvariant("BeforeStep3", before3)]


def test_bmc_reaches_a_reassignment_step_and_the_explicit_model_follows():
    """The bounded form's reassignment steps agree with the explicit model: the run bmc
    finds to step 3 is enabled there action by action, and ends with a controller
    past step 3 there too."""
    res = bmc(_ReassignReach(KafkaConfig(**config("reassign-rf"))), 8, ["BeforeStep3"])
    v = res.violation
    assert v is not None and v.depth == 7
    assert [a.name for a in v.actions][-3:] == ["ReassignExtendAr", "ReassignBumpLeaderEpoch",
                                                "ReassignStartNewReplicas"]
    model = FAMILY.build(config("reassign-rf"))
    [s] = list(model.init_states())
    for a in v.actions:
        assert a in model.actions(s), a
        s = model.next_state(s, a)
    assert any(br.ctx is not None and br.ctx.reassigning[0] is not None and br.ctx.reassigning[0].step == "3"
               for br in s.brokers)


class _StopReach(KafkaSymbolic):
    """One more 'invariant': no broker holds a partition state without a leader, which
    only StopReplica(delete=false) leaves."""

    def invariants(self):
        from checker.symbolic import SymInvariant

        def no_stopped(f):
            return z3.And([z3.Not(z3.And(f.view[b][q].leader == -1, f.view[b][q].version != -1))
                           for b in range(f.n) for q in range(f.partitions)])
        return [*super().invariants(), SymInvariant("NoStoppedReplica", no_stopped)]


def test_bmc_reaches_a_delivered_stop_replica_and_the_explicit_model_follows():
    """Deeper into the bounded form: [0, 1] -> [0] on 2 brokers, a shortest run to a
    removed follower that has applied step 8's StopReplica(delete=false) and stopped
    following; the FIFO rule makes broker 1 apply the earlier LeaderAndIsr of that
    controller epoch first.  (A removed leader, as in [0, 1] -> [1], keeps leading:
    Kafka's stopReplica(delete=false) only removes the fetcher.)  The explicit model
    follows the run."""
    cfg = config("reassign", brokers=2, reassignments="0")
    res = bmc(_StopReach(KafkaConfig(**cfg)), 11, ["NoStoppedReplica"])
    v = res.violation
    assert v is not None and v.depth == 11 and v.actions[-1].name == "DeliverStopReplica"
    assert v.actions[-1].get("delete") is False and "ReassignOfflineOldReplicas" in [a.name for a in v.actions]
    model = FAMILY.build(cfg)
    [s] = list(model.init_states())
    for a in v.actions:
        assert a in model.actions(s), a
        s = model.next_state(s, a)
    b = v.actions[-1].get("broker")
    assert s.brokers[b].partitions[0].leader == -1 and s.brokers[b].partitions[0].version != -1


@pytest.mark.slow
@pytest.mark.parametrize("preset, stride", [("reassign", 23), ("reassign-rf", 3)])
def test_the_reassignment_lemmas_hold_on_the_reachable_states_of_the_explicit_model(preset, stride):
    s = sym(preset)
    model = FAMILY.build(config(preset))
    f = s.frame("r")
    reassign = load_lemmas(ROOT / "examples" / "lemmas_reassign.py")
    conj = z3.And([s.wellformed(f)] + [lem.predicate(f) for lem in reassign])
    graph = explore(model)
    for n in range(0, len(graph.states), stride):
        solver = FreshSolver()
        solver.add(s.abstract(graph.states[n], f), z3.Not(conj))
        assert solver.check() == z3.unsat, f"a lemma fails on reachable state {n}"


def test_a_cti_names_the_action_and_shows_a_state_that_breaks_the_invariant():
    res = prove(sym(brokers=3), ["AtMostOneActiveController"])
    cti = res.cti
    assert not res.proved and cti is not None and cti.broken == "AtMostOneActiveController"
    assert cti.explicit and cti.explicit[0].name == cti.action.name
    # the state after has two running brokers with a context of the current epoch
    epoch = cti.after["zk"]["controller_epoch"]
    active = [b for b, d in cti.after["broker"].items()
              if d["alive"] and d.get("controller", {}).get("epoch") == epoch]
    assert len(active) >= 2


def test_the_cti_does_not_depend_on_the_hash_seed():
    """z3 answers the same query the same way, and the queries are built in a fixed
    order: two runs print the same CTI (within one process, z3's shared context may
    choose another model, so this runs the command)."""
    outs = [kmc("prove", *KAFKA, "--brokers", "3", "--invariant", "AtMostOneActiveController", "--quiet",
                seed=seed).stdout for seed in ("1", "4242")]
    # the seconds the proof took are printed too, and under load they differ
    outs = [re.sub(r"\(\d+(\.\d+)? s\)", "(? s)", out) for out in outs]
    assert "NOT INDUCTIVE" in outs[0] and outs[0] == outs[1]


def test_a_wrong_lemma_is_caught_as_not_inductive(tmp_path):
    """The lemmas are proved too: a false 'lemma' cannot buy a proof."""
    bad = tmp_path / "bad.py"
    bad.write_text("import z3\nfrom checker.symbolic import lemma\n"
                   "NoController = lemma('NoController', lambda f: f.zk_controller == -1)\n")
    res = prove(sym(brokers=3), ["AtMostOneActiveController"], lemmas=lemmas() + load_lemmas(bad))
    assert res.cti is not None, f"no CTI: {res.unknown}"
    assert not res.proved and res.cti.broken == "NoController" and res.cti.action.name == "ElectController"


@pytest.mark.parametrize("earlier_terms", [7, 333])
def test_a_proof_does_not_depend_on_the_terms_created_before_it(tmp_path, earlier_terms):
    """z3 numbers terms per context and searches in that order: without a private
    context per proof, this CTI came back 'unknown (incomplete quantifiers)' after 7
    or 333 unrelated terms had been created in the process (CI saw it under xdist)."""
    _unrelated = [z3.Int(f"unrelated{i}") + 1 for i in range(earlier_terms)]
    bad = tmp_path / "bad.py"
    bad.write_text("import z3\nfrom checker.symbolic import lemma\n"
                   "NoController = lemma('NoController', lambda f: f.zk_controller == -1)\n")
    res = prove(sym(brokers=3), ["AtMostOneActiveController"], lemmas=lemmas() + load_lemmas(bad))
    assert res.unknown is None and res.cti is not None and res.cti.broken == "NoController"


def test_a_proof_covers_every_fault_budget(tmp_path):
    """The default preset allows no crash (max_crashes=0), but the induction step starts
    from any budget: a lemma that only holds without crashes is broken by CrashBroker."""
    only = tmp_path / "alive.py"
    only.write_text("import z3\nfrom checker.symbolic import lemma\n"
                    "AllAlive = lemma('AllAlive', lambda f: z3.And(list(f.alive)))\n")
    assert config()["max_crashes"] == 0
    res = prove(sym(brokers=3), ["LeaderInIsr"], lemmas=lemmas() + load_lemmas(only))
    assert res.cti is not None and (res.cti.broken, res.cti.action.name) == ("AllAlive", "CrashBroker")


def test_reachable_cti_on_the_zombie_variant_is_confirmed_by_the_explicit_model(tmp_path):
    """zk_epoch_fencing=false: z3's CTI is a zombie controller's ZooKeeper write, and the
    explicit model reaches a state where that action breaks the property (4 steps, as
    kmc check finds); the confirmed path is an ordinary trace that kmc replay accepts."""
    s = sym("zombie")
    res = prove(s, ["ControllerEpochFencing"])
    assert not res.proved and res.cti.broken == "ControllerEpochFencing" and res.cti.action.name == "ElectLeader"
    model = FAMILY.build(config("zombie"))
    found = confirm_cti(s, model, res.cti, ["ControllerEpochFencing"])
    assert found is not None
    path, act = found
    assert act.name == "ElectLeader" and len(path) + 1 == 4
    # the same property with the same fix off: the explicit checker's own counterexample
    p = kmc("check", *KAFKA, "--preset", "zombie", "--quiet", "--traces-dir", str(tmp_path / "check"))
    assert p.returncode == 1 and "VIOLATED: ControllerEpochFencing" in p.stdout
    # and through the CLI: the confirmed trace replays
    p = kmc("prove", *KAFKA, "--preset", "zombie", "--invariant", "ControllerEpochFencing", "--confirm",
            "--quiet", "--traces-dir", str(tmp_path / "prove"))
    assert p.returncode == 1, p.stderr
    assert "NOT INDUCTIVE" in p.stdout and "CONFIRMED: reachable in 4 steps" in p.stdout
    [trace] = list((tmp_path / "prove").glob("*.json"))
    r = kmc("replay", str(trace))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "still violated" in r.stdout


def test_reachable_cti_on_the_unclean_variant_with_the_lemmas_is_confirmed():
    """unclean_leader_election=true: with the lemmas, the CTI is the unclean election
    itself, and the explicit model reaches it in 7 steps (the known trace's length),
    from a state that satisfies every lemma."""
    s = sym("unclean")
    res = prove(s, ["LeaderElectedFromIsr"], lemmas=lemmas())
    assert res.cti is not None and res.cti.action.name == "ElectLeader"
    assert res.cti.explicit[0].get("clean") is False
    found = confirm_cti(s, FAMILY.build(config("unclean")), res.cti, ["LeaderElectedFromIsr"], lemmas())
    assert found is not None
    path, act = found
    assert len(path) + 1 == 7 and act.get("clean") is False


def test_prove_cli_exit_codes():
    ok = kmc("prove", *KAFKA, "--brokers", "4", "--invariant", "ControllerEpochFencing", "--quiet")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("PROVED: ControllerEpochFencing")
    cti = kmc("prove", *KAFKA, "--brokers", "3", "--invariant", "AtMostOneActiveController", "--quiet")
    assert cti.returncode == 1
    assert "NOT INDUCTIVE: AtMostOneActiveController" in cti.stdout and "state before:" in cti.stdout
    assert cti.stderr.strip().endswith("(reproduce: kmc prove --model spec.family:FAMILY --brokers 3 --invariant "
                                       "AtMostOneActiveController --quiet)")


# --------------------------------------------------------------------------- bmc

def test_bmc_finds_the_zombie_counterexample_with_five_brokers_and_it_replays(tmp_path):
    p = kmc("bmc", *KAFKA, "--preset", "zombie", "--brokers", "5", "--steps", "5", "--property",
            "ControllerEpochFencing", "--traces-dir", str(tmp_path))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "ControllerEpochFencing violated after 4 steps" in p.stdout
    assert "the encodings agree" in p.stdout
    [trace] = list(tmp_path.glob("*.json"))
    doc = json.loads(trace.read_text())
    assert doc["config"]["brokers"] == 5 and doc["engine"] == "bmc"
    assert [s["action"]["name"] for s in doc["steps"][1:]] == [
        "ElectController", "ExpireSession", "ElectController", "ElectLeader"]
    r = kmc("replay", str(trace))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "property 'ControllerEpochFencing' is still violated" in r.stdout


@pytest.mark.parametrize("preset, prop, steps", [
    ("zombie", "ControllerEpochFencing", 4),
    pytest.param("unclean", "LeaderElectedFromIsr", 7, marks=pytest.mark.slow),
])
def test_symmetry_breaking_keeps_the_shortest_violation(preset, prop, steps):
    """Brokers outside the AR are interchangeable; bmc searches only runs that use them
    in order.  With 4 brokers (two of them interchangeable) the shortest violation has
    the same length with and without that restriction, and none is shorter."""
    s = sym(preset, brokers=4)
    assert s.symmetry() == [(s.BROKER_ARGS, [2, 3])]
    with_sym = bmc(s, steps, [prop])
    assert with_sym.violation is not None and with_sym.violation.depth == steps
    without = bmc(s, steps, [prop], symmetry=False)
    assert without.violation is not None and without.violation.depth == steps


def test_bmc_encodes_a_short_bound_first_and_doubles_it(monkeypatch):
    """--steps 300 built an encoding for runs of 300 steps up front: a minute and
    1.4 GB before zombie's violation at depth 4.  Now the bound starts at 8 and
    doubles, each encoding checking only the depths past the last one's, and the
    violation is the one --steps 4 finds."""
    bounds = []
    real = KafkaSymbolic.bounded
    monkeypatch.setattr(KafkaSymbolic, "bounded", lambda self, steps: bounds.append(steps) or real(self, steps))
    far = bmc(sym("zombie"), 300, ["ControllerEpochFencing"])
    assert bounds == [FIRST_BOUND] == [8]
    near = bmc(sym("zombie"), 4, ["ControllerEpochFencing"])
    assert far.violation.depth == near.violation.depth == 4 and far.violation.actions == near.violation.actions
    bounds.clear()
    res = bmc(sym("zombie", zk_epoch_fencing=True), 9, ["ControllerEpochFencing"])
    assert bounds == [8, 9] and res.violation is None and [d for d, _ in res.per_depth] == list(range(10))


def test_bmc_with_every_fence_on_finds_nothing_within_the_bound():
    p = kmc("bmc", *KAFKA, "--preset", "zombie", "--set", "zk_epoch_fencing=true",
            "--steps", "4", "--property", "ControllerEpochFencing", "--quiet")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no violation within 4 steps" in p.stdout and "not a proof" in p.stdout


def test_bmc_trace_does_not_depend_on_the_hash_seed(tmp_path):
    runs = []
    for seed in ("1", "4242"):
        out = tmp_path / seed
        p = kmc("bmc", *KAFKA, "--preset", "zombie", "--steps", "4", "--property",
                "ControllerEpochFencing", "--quiet", "--traces-dir", str(out), seed=seed)
        assert p.returncode == 1, p.stderr
        [trace] = list(out.glob("*.json"))
        doc = json.loads(trace.read_text())
        runs.append([(s["action"], s["fingerprint"]) for s in doc["steps"]])
    assert runs[0] == runs[1]


def test_bmc_reports_the_least_run_whatever_z3_did_before():
    """Of the shortest violations, bmc reports the least run (instances by index, step by
    step), so the counterexample does not follow z3's history in the process: the same
    after other queries as in a fresh solver, and the least one (broker 0 first)."""
    def run():
        v = bmc(sym("zombie", brokers=5), 5, ["ControllerEpochFencing"]).violation
        assert v is not None and v.depth == 4
        return [repr(a) for a in v.actions]

    fresh = run()
    prove(sym("zombie", brokers=5), ["ControllerEpochFencing"])      # other z3 work first
    bmc(sym("unclean", brokers=3), 3, ["LeaderElectedFromIsr"])
    assert run() == fresh
    assert fresh[:3] == [repr(a) for a in (action("ElectController", broker=0),
                                           action("ExpireSession", broker=0),
                                           action("ElectController", broker=1))]


def test_a_symbolic_counterexample_that_does_not_replay_is_a_disagreement():
    """The replay is the agreement check: an action sequence the explicit model does
    not allow is reported with the step and the reason."""
    model = FAMILY.build(config("zombie"))
    prop = {p.name: p for p in model.properties()}["ControllerEpochFencing"]
    from checker.model import action
    _path, why = to_explicit(model, [action("ElectController", broker=0), action("ElectController", broker=1)], prop)
    assert why is not None and "not enabled" in why
    _path, why = to_explicit(model, [action("ElectController", broker=0)], prop)
    assert why is not None and "holds" in why


class _Misdecoded(KafkaSymbolic):
    """A deliberately broken encoding: ExpireSession decodes to the wrong broker."""

    def _expire(self, b):
        act = super()._expire(b)
        from dataclasses import replace

        from checker.model import action
        return replace(act, explicit=lambda ev, f, p: [action("ExpireSession", broker=(b + 1) % self.n)])


class _BrokenFamily(type(FAMILY)):
    def symbolic(self, config):
        return _Misdecoded(KafkaConfig(**config))


BROKEN = _BrokenFamily()


def test_bmc_reports_a_disagreement_between_the_encodings_as_exit_3(tmp_path, capsys):
    from checker.cli import main
    code = main(["bmc", "--model", "tests.test_symbolic:BROKEN", "--preset", "zombie", "--steps", "4",
                 "--property", "ControllerEpochFencing", "--traces-dir", str(tmp_path), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 3, out + err
    assert "the symbolic and explicit encodings disagree" in err and "does not replay" in err
    assert "(reproduce: kmc bmc --model tests.test_symbolic:BROKEN" in err
    assert not list(tmp_path.glob("*.json"))


def _edges_agree(preset, stride, pick=None):
    """How many of the sampled edges (every ``stride``-th of those whose action ``pick``
    accepts) were checked to be symbolic steps that decode to the same action."""
    s = sym(preset)
    model = FAMILY.build(config(preset))
    graph = explore(model)
    acts = s.actions()
    by_name: dict = {}
    for i, a in enumerate(acts):
        by_name.setdefault(a.name, []).append(i)
    checked = 0
    edges = [e for e in graph.edges if pick is None or pick(e[1])]
    for src, a, dst in edges[::stride]:
        f, g = s.frame("s"), s.frame("t")
        step = TransitionStep(s, acts, by_name[a.name], f, g, "x")
        solver = FreshSolver()
        solver.add(s.abstract(graph.states[src], f), s.abstract(graph.states[dst], g), *step.constraints)
        assert solver.check() == z3.sat, f"{a} from state {src} is not a symbolic step"
        m = solver.model()
        from checker.symbolic import evaluator
        i = m.eval(step.sel, model_completion=True).as_long()
        assert acts[i].explicit(evaluator(m), f, step.params_of(i)) == [a]
        checked += 1
    return checked


def test_explicit_transitions_are_symbolic_transitions():
    """One direction of agreement, on a sample of the tiny preset's edges: for an explicit
    step s -a-> t, the symbolic step relation allows abstract(s) -> abstract(t) with an
    instance of the same name that decodes to a.  (BMC replays check the other way.)"""
    assert _edges_agree("tiny", 31) > 70


@pytest.mark.slow
@pytest.mark.parametrize("preset, stride", [("zombie", 29), ("unclean", 9)])
def test_explicit_transitions_are_symbolic_transitions_on_the_known_bad_variants(preset, stride):
    assert _edges_agree(preset, stride) > 250


def test_explicit_reassignment_transitions_are_symbolic_transitions():
    """Reassignment (spec/reassign.py) is encoded too: a sample of reassign-rf's edges
    (RF 1 -> 2 -> 1: every step, StopReplica with delete false and true, the busy
    controller) are symbolic steps that decode to the same actions."""
    assert _edges_agree("reassign-rf", 11) > 200


def _failed_step_7(a) -> bool:
    return a.name == "ReassignElectLeader" and a.get("leader") == -1


def test_a_failed_step_7_election_is_a_symbolic_step_and_only_then():
    """spec/symreassign.py's step 7 takes a failed ReassignPartition election as the
    explicit model does (leader -1: nothing written, the event goes on): on reassign-crash
    (RAR's only replica crashes before step 7) every such edge is a symbolic step that
    decodes to the same action, and in the states they leave, z3 enables only what the
    explicit model enables."""
    assert _edges_agree("reassign-crash", 1, _failed_step_7) >= 20
    model = FAMILY.build(config("reassign-crash"))
    graph = explore(model)
    z3_enabled = SymbolicEnabled(sym("reassign-crash"))
    sources = sorted({src for src, a, _ in graph.edges if _failed_step_7(a)})
    for n in sources[::5]:
        state = graph.states[n]
        assert z3_enabled.enabled(state) == set(model.actions(state)), f"state {n}"


@pytest.mark.slow
@pytest.mark.parametrize("preset, stride", [("reassign", 97), ("reassign-crash", 421)])
def test_explicit_reassignment_transitions_are_symbolic_transitions_with_failover(preset, stride):
    """reassign: overlapping OAR and RAR; reassign-crash: a controller crashes mid-way
    and its successor resumes from ZooKeeper."""
    assert _edges_agree(preset, stride) > 250


@pytest.mark.slow
@pytest.mark.parametrize("preset, stride", [("tiny", 59), ("zombie", 167), ("unclean", 61), ("reassign-rf", 43),
                                            ("reassign", 251)])
def test_what_z3_enables_the_explicit_model_enables(preset, stride):
    """The other direction, on a sample of reachable states: every action instance whose
    guard holds on abstract(s), with every choice of its parameters, decodes to an
    action the explicit model enables in s.  With the edges above, the enabled sets agree."""
    z3_enabled = SymbolicEnabled(sym(preset))
    model = FAMILY.build(config(preset))
    graph = explore(model)
    states = 0
    for n in range(0, len(graph.states), stride):
        state = graph.states[n]
        extra = z3_enabled.enabled(state) - set(model.actions(state))
        assert not extra, f"z3 enables {sorted(map(str, extra))} in state {n}, the explicit model does not"
        states += 1
    assert states >= 20


# ---------------------------------------------------------------------- bad input

def test_a_lemma_that_does_not_build_is_bad_input(tmp_path, capsys):
    from checker.cli import main
    bad = tmp_path / "bad.py"
    bad.write_text("from checker.symbolic import lemma\nOops = lemma('Oops', lambda f: f.no_such_field == 1)\n"
                   "Plain = lemma('Plain', lambda f: True)\n")
    code = main(["prove", *KAFKA, "--invariant", "LeaderInIsr", "--lemmas", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "lemma 'Oops'" in err and "AttributeError" in err and "(reproduce: kmc prove" in err


@pytest.mark.parametrize("args, words", [
    (["prove", "--invariant", "NoSuchThing"], "invariant 'NoSuchThing' has no symbolic encoding"),
    (["prove", "--invariant", ""], "; name one of those with --invariant NAME"),
    (["prove", "--invariant", "LeaderInIsr", "--set", "max_records=1"], "data path"),
    (["prove", "--invariant", "LeaderInIsr", "--brokers", "2"], "replication_factor=3 exceeds brokers=2"),
    (["prove", "--invariant", "LeaderInIsr", "--lemmas", "no/such/file.py"], "lemmas file 'no/such/file.py' does not exist"),
    (["prove"], "--invariant"),
    (["prove", "--invariant", "LeaderInIsr", "--max-states", "10"], "--max-states only applies to --confirm"),
    (["prove", "--invariant", "LeaderInIsr", "--traces-dir", "t"], "--traces-dir only applies to --confirm"),
    (["bmc", "--preset", "zombie"], "--steps"),
    (["bmc", "--steps", "0"], "expects a number >= 1"),
    (["bmc", "--steps", "3", "--property", "Nope"], "invariant 'Nope' has no symbolic encoding"),
    (["bmc", "--steps", "3", "--property", "Nope"], "; name one of those with --property NAME"),
    (["bmc", "--steps", "3", "--preset", "nope"], "unknown preset 'nope'"),
    (["bmc", "--steps", "1", "--brokers", "3", "--set", "brokers=2"], "--brokers 3 and --set brokers=2 disagree"),
])
def test_bad_input_is_one_line_and_exit_2(args, words, capsys):
    from checker.cli import main
    code = main([args[0], *KAFKA, *args[1:]])
    out, err = capsys.readouterr()
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert words in lines[0] and "(reproduce: kmc " in lines[0]


# -------------------------------------------------------------------------- slow

@pytest.mark.slow
@pytest.mark.parametrize("preset, prop, brokers, steps, names", [
    ("unclean", "LeaderElectedFromIsr", 5, 7, ["CrashBroker", "ElectLeader"]),
    ("zombie", "ControllerEpochFencing", 7, 4, ["ExpireSession", "ElectLeader"]),
    ("no-controller-fencing", "ControllerEpochFencing", 2, 7, ["ElectController", "DeliverLeaderAndIsr"]),
])
def test_bmc_finds_the_known_bad_variants_and_the_traces_replay(tmp_path, preset, prop, brokers, steps, names):
    s = sym(preset, brokers=brokers)
    res = bmc(s, steps, [prop])
    assert res.violation is not None and res.violation.property == prop and res.violation.depth == steps
    acts = [a.name for a in res.violation.actions]
    assert all(n in acts for n in names) and acts[-1] == names[-1]
    model = FAMILY.build(config(preset, brokers=brokers))
    explicit = {p.name: p for p in model.properties()}[prop]
    path, why = to_explicit(model, res.violation.actions, explicit)
    assert why is None and len(path) == steps + 1


@pytest.mark.slow
@pytest.mark.parametrize("brokers", [7])
def test_every_invariant_but_one_leader_per_epoch_is_proved_with_the_first_lemmas(brokers):
    names = ["LeaderInIsr", "IsrSubsetOfAssignedReplicas", "AtMostOneActiveController", "ControllerEpochFencing",
             "LegalStateTransitions", "EpochsMonotonic", "LeaderElectedFromIsr"]
    res = prove(sym(brokers=brokers), names, lemmas=lemmas())
    assert res.proved, res.cti and (res.cti.broken, res.cti.action.label)


@pytest.mark.slow
@pytest.mark.parametrize("preset, over, stride", [("tiny", {}, 3), ("zombie", {"zk_epoch_fencing": True}, 11)])
def test_the_lemmas_hold_on_the_reachable_states_of_the_explicit_model(preset, over, stride):
    """The lemmas are claims about the explicit model too: check them, and TypeOK, on
    the states it reaches (tiny: a crash; zombie with the fence on: a zombie
    controller), a fixed sample of them.  A lemma that holds only symbolically would
    be a disagreement between the encodings."""
    s = sym(preset, **over)
    model = FAMILY.build(config(preset, **over))
    f = s.frame("r")
    conj = z3.And([s.wellformed(f)] + [lem.predicate(f) for lem in lemmas(epochs=True)])
    graph = explore(model)
    for n in range(0, len(graph.states), stride):
        solver = FreshSolver()
        solver.add(s.abstract(graph.states[n], f), z3.Not(conj))
        assert solver.check() == z3.unsat, f"a lemma fails on reachable state {n}"


def test_the_symbolic_step_invariants_judge_a_step_and_its_reverse_as_the_explicit_ones_do():
    """EpochsMonotonic, LegalStateTransitions and LeaderElectedFromIsr (the step
    invariants that ignore the action) are predicates over two states: on a sample of
    tiny's transitions, each taken forwards and backwards (a broker's applied leader
    epoch going back, a partition state returning to NewPartition, a leader unelected),
    z3's predicate and the explicit property must give the same verdict, so that a rule
    the z3 encoding drops (a weaker lemma that kmc prove would then prove) is seen."""
    s = sym("tiny")
    model = FAMILY.build(config("tiny"))
    graph = explore(model)
    props = {p.name: p for p in model.properties()}
    seen: dict = {}
    for src, _a, dst in graph.edges[::31]:
        for a, b in ((graph.states[src], graph.states[dst]), (graph.states[dst], graph.states[src])):
            f, g = s.frame("s"), s.frame("t")
            for inv in (i for i in s.invariants() if i.step and not i.per_action):
                solver = FreshSolver()
                solver.add(s.abstract(a, f), s.abstract(b, g), z3.Not(inv.predicate(f, None, None, g)))
                holds = solver.check() == z3.unsat
                assert holds == props[inv.name].predicate(a, None, b), (inv.name, a, b)
                seen[inv.name, holds] = seen.get((inv.name, holds), 0) + 1
    assert {name for name, holds in seen if not holds} >= {"EpochsMonotonic", "LegalStateTransitions"}, seen
