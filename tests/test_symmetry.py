"""Symmetry reduction is sound: proved by comparison with the full search, not argued.

For every model with a usable symmetry: the same verdict, every counterexample a
path of the unreduced model (it replays), as short as the full search's, and the
distinct representatives times their orbit sizes equal the full count.  Wrong
declarations and asymmetric properties are rejected."""

from __future__ import annotations

import pytest

from checker.bfs import check, replay_path
from checker.config import resolve
from checker.errors import ModelError, UsageError
from checker.graph import explore
from checker.model import Model, action, always, sometimes
from checker.reduction import plan
from checker.symmetry import Reduced, Symmetry, concretize, declared, reduce_properties, symmetry_of, validate
from spec.family import FAMILY
from tests import cli_support
from tests.toys import DieHard, Grid


def _perm_apply(s, g):
    """Processes' states (a tuple by process id) and the lock holder, renamed by g."""
    procs, holder = s
    n = len(procs)
    inv = [g.index(i) for i in range(n)]
    return tuple(procs[inv[i]] for i in range(n)), (g[holder] if holder >= 0 else -1)


class Mutex(Model):
    """n interchangeable processes: idle -> waiting -> critical -> idle, through a lock;
    ``broken`` lets a waiting process enter without the lock (mutual exclusion fails)."""

    name, version = "mutex", "1"

    def __init__(self, n=3, broken=False, asym_prop=False, wrong=False):
        self.n, self.broken, self.asym_prop, self.wrong = n, broken, asym_prop, wrong

    def init_states(self):
        return [(tuple("idle" for _ in range(self.n)), -1)]

    def actions(self, s):
        procs, holder = s
        out = []
        for i, st in enumerate(procs):
            if st == "idle":
                out.append(action("Wait", p=i))
            elif st == "waiting" and (holder == -1 or self.broken) and not (self.wrong and i == 0):
                out.append(action("Enter", p=i))
            elif st == "critical":
                out.append(action("Leave", p=i))
        return out

    def next_state(self, s, a):
        procs, holder = s
        i = a.get("p")
        st = {"Wait": "waiting", "Enter": "critical", "Leave": "idle"}[a.name]
        holder = i if a.name == "Enter" else (-1 if a.name == "Leave" else holder)
        return procs[:i] + (st,) + procs[i + 1:], holder

    def is_terminal(self, s):
        return True

    def properties(self):
        props = [always("MutualExclusion", lambda s: sum(x == "critical" for x in s[0]) <= 1, "one at a time"),
                 sometimes("SomeoneIn", lambda s: "critical" in s[0], "the lock is usable"),
                 always("EntersOnlyIfWaiting", lambda s, a, t: a.name != "Enter" or s[0][a.get("p")] == "waiting",
                        "entering needs waiting", step=True)]
        if self.asym_prop:
            props.append(always("ZeroNeverWaits", lambda s: s[0][0] != "waiting", "only about process 0"))
        return props

    def symmetry(self):
        from itertools import permutations
        return Symmetry(list(permutations(range(self.n))), _perm_apply, "processes")


def _sound(model, props=None):
    """Reduced and full searches agree; counts add up over orbits; the reduced
    counterexamples, rebuilt, replay on the full model and are as short."""
    props = list(model.properties()) if props is None else props
    sym = symmetry_of(model)
    assert sym is not None
    validate(model, sym, props)
    full = check(model, properties=props, keep_going=True)
    p = plan(model, props, symmetry=True)
    red = p.finish(check(p.model, properties=p.props, keep_going=True))
    assert red.verdict == full.verdict
    assert sorted(v.property for v in red.violations) == sorted(v.property for v in full.violations)
    for v in red.violations:
        if not v.path:
            continue
        again = replay_path(model, [s.action for s in v.path[1:]], v.path[0].state)
        assert [s.fingerprint for s in again] == [s.fingerprint for s in v.path]
        twin = next(w for w in full.violations if w.property == v.property)
        assert len(v.path) == len(twin.path)
    if full.stats.complete:
        reps = explore(p.model)
        assert sum(len(sym.orbit(s, model.encode)) for s in reps.states) == full.stats.distinct == len(explore(model).states)
        assert red.stats.distinct == len(reps.states) < full.stats.distinct
    return full, red


def test_toy_mutex_holds_and_reduces():
    full, red = _sound(Mutex(3))
    assert full.verdict == "ok" and (full.stats.distinct, red.stats.distinct) == (20, 7)   # 8 + 3x4 states; 4 + 3 orbits


def test_toy_mutex_broken_counterexample_replays_on_the_full_model():
    full, red = _sound(Mutex(3, broken=True))
    assert red.violations[0].property == "MutualExclusion" and len(red.violations[0].path) == 5


def test_an_asymmetric_property_is_rejected():
    m = Mutex(3, asym_prop=True)
    with pytest.raises(UsageError, match="ZeroNeverWaits.*not symmetric"):
        validate(m, symmetry_of(m), list(m.properties()))


def test_a_wrong_declaration_is_a_contract_error():
    m = Mutex(3, wrong=True)          # process 0 can never enter: not interchangeable
    with pytest.raises(ModelError, match="not symmetric under processes permutation"):
        validate(m, symmetry_of(m), list(m.properties()))


def test_models_without_symmetry_run_unreduced():
    for m in (Grid(3), DieHard()):
        p = plan(m, list(m.properties()), symmetry=True)
        assert p.model is m and "no reduction" in p.notes[0]


def test_kafka_every_preset_declares_brokers_but_ar_order_fixes_them():
    """Every preset's AR holds its brokers in a fixed order (the preferred replica
    first, elections follow the order), so no broker permutation keeps the initial
    state: --symmetry leaves every preset as it is (reassignment: none declared).
    The exceptions: a preset with two brokers outside every AR (offsets-rf1: RF 1
    on 3 brokers), whose spare brokers are interchangeable, and the two-partition
    presets, whose round-robin ARs [0, 1] and [1, 0] are swapped by swapping the
    brokers and the partitions together."""
    for name in FAMILY.presets:
        m = FAMILY.build(resolve(FAMILY, name, {}))
        d = declared(m)
        assert (d is None) == bool(m.reassign_targets), name
        spare = set(range(m.cfg.brokers)) - {r for slots in m.ar for r in slots}
        if len(spare) >= 2:
            assert symmetry_of(m) is not None, name
            continue
        if m.cfg.partitions == 2 == m.cfg.brokers:
            sym = symmetry_of(m)
            assert sym.sort == "broker-and-partition" and sym.elements == [((0, 1), (0, 1)), ((1, 0), (1, 0))], name
            continue
        assert symmetry_of(m) is None, name
        p = plan(m, list(m.properties()), symmetry=True)
        assert p.model is m and p.sym is None


@pytest.mark.parametrize("preset,over", [("tiny", {"brokers": 4, "max_crashes": 1}),
                                         ("zombie", {"brokers": 4}),
                                         ("tiny", {"brokers": 4, "max_crashes": 1, "controller_event_order": False})])
def test_kafka_brokers_outside_every_ar_are_interchangeable(preset, over):
    """Brokers that hold no replica (4 brokers, RF 2) can still be controller: they
    are interchangeable, and the reduction is sound on them."""
    m = FAMILY.build(resolve(FAMILY, preset, over))
    assert len(symmetry_of(m)) == 2
    full, red = _sound(m)
    if preset == "zombie":
        assert full.verdict == "violated"


@pytest.mark.slow
def test_kafka_data_path_with_partitions_swapped_is_sound():
    """The data path under a broker-and-partition swap: the logs, HWs, epoch caches
    and the ghost records (acknowledged, read, pending: their partition is renamed
    too) on two partitions.  No other test had the data path under symmetry, and a
    renaming that forgot the ghost records' partition passed them all."""
    m = FAMILY.build(resolve(FAMILY, "data-hw", {"partitions": 2, "max_records": 1, "max_crashes": 1}))
    assert symmetry_of(m).sort == "broker-and-partition"
    full, red = _sound(m)
    assert full.verdict == "violated" and red.stats.distinct < full.stats.distinct


def _two_partitions_led(s):
    return not all(li.leader >= 0 for li in s.zk.partitions)


def test_kafka_partitions_with_brokers_are_interchangeable():
    """Two brokers and two partitions (ARs [0, 1] and [1, 0]): swapping the brokers
    and the partitions together keeps the initial state.  The quotient is sound
    (_sound: the orbit sizes add up to the full count; the same verdicts), and a
    counterexample of a symmetric property ("not both partitions led"), rebuilt on
    the full model, replays there and is as short as the full search's."""
    m = FAMILY.build(resolve(FAMILY, "tiny", {"partitions": 2, "max_crashes": 0}))
    assert symmetry_of(m).sort == "broker-and-partition"
    full, red = _sound(m)
    assert full.verdict == "ok" and full.stats.distinct == 175 and red.stats.distinct == 88
    prop = [always("NotBothLed", _two_partitions_led, "symmetric in partitions")]
    full, red = _sound(m, prop)
    assert full.verdict == "violated"


def test_concretize_keeps_a_step_violation_a_step_violation():
    m = Mutex(3, broken=True)
    sym = symmetry_of(m)
    props = [always("NoSecondEnter", lambda s, a, t: not (a.name == "Enter" and s[1] >= 0), "", step=True)]
    r = check(Reduced(m, sym), properties=reduce_properties(m, props, sym))
    v = concretize(m, sym, r.violations[0], props)
    last = v.path[-1]
    assert last.action.name == "Enter" and v.path[-2].state[1] >= 0


def test_cli_symmetry_flag(tmp_path):
    r = cli_support.kmc("check", "--preset", "zombie", "--set", "brokers=4", "--symmetry", "--traces-dir", tmp_path)
    assert r.returncode == 1, r.stderr
    assert "symmetry: 2 brokers permutations keep the initial states" in r.stdout
    trace = next(tmp_path.glob("*.json"))
    assert cli_support.kmc("replay", trace).returncode == 0
    r2 = cli_support.kmc("check", "--preset", "tiny", "--symmetry", "--quiet", "--traces-dir", tmp_path)
    assert r2.returncode == 0


@pytest.mark.spark
def test_spark_explores_the_quotient_too():
    """The reduced model is an ordinary model: the Spark engine gives the local
    engine's counts and counterexample on it."""
    from checker.spark import check as spark_check
    from tests.spark_support import spark_context

    sc = spark_context("local[2]", 2)
    try:
        for m in (Mutex(3), Mutex(3, broken=True)):
            p = plan(m, list(m.properties()), symmetry=True)
            local = p.finish(check(p.model, properties=p.props))
            spark = p.finish(spark_check(p.model, properties=p.props, sc=sc, partitions=2))
            assert (spark.verdict, spark.stats.distinct) == (local.verdict, local.stats.distinct)
            assert [[s.fingerprint for s in v.path] for v in spark.violations] == \
                [[s.fingerprint for s in v.path] for v in local.violations]
    finally:
        sc.stop()


def test_an_asymmetric_invariant_the_sample_misses_is_still_checked_on_every_member(tmp_path):
    """The sample of states that validate() looks at had no state with broker 3 (or
    2) as controller during an outage, so this invariant passed as symmetric and the
    reduced search said OK on 3,859 states while the full search finds it violated
    at depth 6.  Every state property is now evaluated on each member of the orbit,
    and the counterexample ends in the member that breaks it."""
    inv = tmp_path / "asym.py"
    inv.write_text("from checker.model import always\n"
                   "def _p(s):\n"
                   "    g = s.ghost\n"
                   "    return not (s.zk.controller == 3 and g.inv_isr_shrunk and g.inv_partition_offline\n"
                   "                and not g.inv_partition_back_online)\n"
                   "Broker3 = always('Broker3NotControllerDuringOutage', _p, 'names broker 3')\n")
    args = ("check", "--preset", "tiny", "--set", "brokers=4", "--invariants", inv,
            "--property", "Broker3NotControllerDuringOutage", "--quiet")
    full = cli_support.kmc(*args, "--traces-dir", tmp_path / "full")
    red = cli_support.kmc(*args, "--symmetry", "--traces-dir", tmp_path / "red")
    assert full.returncode == red.returncode == 1, red.stdout + red.stderr
    (trace,) = (tmp_path / "red").glob("*.json")
    (twin,) = (tmp_path / "full").glob("*.json")
    assert trace.name == twin.name       # the same final state, as short
    r = cli_support.kmc("replay", trace, "--invariants", inv)
    assert r.returncode == 0 and "still violated on the final state (step 6)" in r.stdout


def test_a_step_property_of_an_invariants_file_is_refused_under_symmetry(tmp_path):
    inv = tmp_path / "step.py"
    inv.write_text("from checker.model import always\n"
                   "S = always('NoStepToBroker3', lambda s, a, t: t.zk.controller != 3, 'names broker 3', step=True)\n")
    r = cli_support.kmc("check", "--preset", "tiny", "--set", "brokers=4", "--invariants", inv, "--symmetry",
                        "--traces-dir", tmp_path)
    cli_support.one_line_error(r, "step property NoStepToBroker3 cannot be checked with --symmetry")


def test_a_witness_is_reached_where_any_member_of_the_orbit_reaches_it():
    m = Mutex(3)
    props = [sometimes("TwoWaits", lambda s: s[0][1] == "waiting" and s[0][2] == "waiting", "two and three"),
             always("ZeroNotCritical", lambda s: s[0][0] != "critical", "about process 0")]
    sym = symmetry_of(m)
    with pytest.raises(UsageError, match="not symmetric"):     # where the sample shows it, refused up front
        validate(m, sym, props)
    red = check(Reduced(m, sym), properties=reduce_properties(m, props, sym), keep_going=True)
    full = check(m, properties=props, keep_going=True)
    assert red.stats.witnesses == full.stats.witnesses == {"TwoWaits": 2}
    (v,) = red.violations
    v = concretize(m, sym, v, props)
    assert v.path[-1].state[0][0] == "critical" and len(v.path) == 3   # ends in process 0's own state


def test_a_reduced_search_does_not_say_every_property_holds_when_it_skipped_some(tmp_path):
    """offsets-rf1 violates EventuallyAvailable; with --symmetry the eventually
    properties are skipped, and the verdict said "every property holds"."""
    r = cli_support.kmc("check", "--preset", "offsets-rf1", "--symmetry", "--traces-dir", tmp_path)
    verdict = r.stdout.strip().splitlines()[-1]
    assert r.returncode == 0, r.stderr
    assert verdict.startswith("verdict: OK: every property checked holds on all 37 reachable states")
    assert verdict.endswith("; not checked: EventuallyAvailable, EventuallyLeaderElected")
