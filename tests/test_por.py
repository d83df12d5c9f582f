"""Partial-order reduction is sound: compared with the full search on toy models.

Same verdicts, deadlocks found, every counterexample a real path of the full model
(it replays); the cycle proviso has teeth (without it, a violation behind an
ignored action is missed); wrong footprints are contract errors naming the state
and both actions."""

from __future__ import annotations

import pytest

from checker.bfs import check, replay_path
from checker.config import resolve
from checker.errors import ModelError
from checker.model import Model, action, always, sometimes
from checker.por import Ample, Footprints, footprints_of, validate
from checker.reduction import plan
from checker.symmetry import sample_states
from spec.family import FAMILY
from tests import cli_support


class Counters(Model):
    """n processes, each counting to k on its own counter; ``limit`` adds the
    invariant that counter 0 stays below it, ``shared`` a step every process can
    take on one shared flag (dependent on everything), ``lie`` declares that shared
    step independent of the others (wrong), ``deadlock`` makes (k, .., k) a deadlock."""

    name, version = "counters", "1"

    def __init__(self, n=3, k=2, limit=None, shared=False, lie=False, deadlock=False):
        self.n, self.k, self.limit, self.shared, self.lie, self.deadlock = n, k, limit, shared, lie, deadlock

    def init_states(self):
        return [(tuple(0 for _ in range(self.n)), 0)]

    def actions(self, s):
        c, flag = s
        out = [action("Inc", p=i) for i in range(self.n) if c[i] < self.k]
        if self.shared:
            out += [action("Flip", p=i) for i in range(self.n) if c[i] == 1 and flag == 0]
        return out

    def next_state(self, s, a):
        c, flag = s
        i = a.get("p")
        if a.name == "Inc":
            return c[:i] + (c[i] + 1,) + c[i + 1:], flag
        return c, i + 1

    def is_terminal(self, s):
        return not self.deadlock

    def properties(self):
        props = [sometimes("FirstDone", lambda s: s[0][0] == self.k, "counter 0 can finish")]
        if self.limit is not None:
            props.append(always("Counter0Small", lambda s: s[0][0] < self.limit, "counter 0 stays small"))
        return props

    def footprints(self):
        classes = {("inc", i): ((("c", i),), (("c", i),)) for i in range(self.n)}
        for i in range(self.n if self.shared else 0):
            classes[("flip", i)] = ((("c", i), "flag"), ("flag",) if not self.lie else (("mine", i),))
        reads = {"FirstDone": [("c", 0)], "Counter0Small": [("c", 0)]}
        return Footprints(classes, lambda a: (a.name.lower(), a.get("p")), reads)


class Ignoring(Model):
    """The ignoring problem: process A toggles a bit forever; process B can take one
    step that sets ``bad``.  B's step is visible, A's is not, so a stubborn set of A
    alone is always a candidate, and without the cycle proviso B is never taken."""

    name, version = "ignoring", "1"

    def __init__(self, period=2):
        self.period = period          # A's cycle: 2 toggles a bit, 1 stays put (a self-loop), 3 counts mod 3

    def init_states(self):
        return [(0, False)]

    def actions(self, s):
        return [action("Toggle")] + ([action("Bad")] if not s[1] else [])

    def next_state(self, s, a):
        return ((s[0] + 1) % self.period, s[1]) if a.name == "Toggle" else (s[0], True)

    def properties(self):
        return [always("NeverBad", lambda s: not s[1], "B never goes bad")]

    def footprints(self):
        return Footprints({"A": (("bit",), ("bit",)), "B": (("bad",), ("bad",))}, lambda a: "A" if a.name == "Toggle"
                          else "B", {"NeverBad": ("bad",)})


def _same(model):
    props = list(model.properties())
    validate(model, footprints_of(model), props, sample_states(model))
    full = check(model, keep_going=True)
    p = plan(model, props, por=True)
    red = p.finish(check(p.model, properties=p.props, keep_going=True))
    assert red.verdict == full.verdict
    assert sorted(v.property for v in red.violations) == sorted(v.property for v in full.violations)
    for v in red.violations:
        if v.path:
            again = replay_path(model, [s.action for s in v.path[1:]], v.path[0].state)
            assert [s.fingerprint for s in again] == [s.fingerprint for s in v.path]
    return full, red, p


def test_independent_counters_reduce_and_agree():
    full, red, p = _same(Counters(3, 2))
    assert full.verdict == "ok" and full.stats.distinct == 27
    assert red.stats.distinct < full.stats.distinct
    assert p.ample.reduced_states > 0


def test_a_violation_is_still_found_and_replays():
    full, red, _ = _same(Counters(3, 3, limit=2))
    assert red.violations[0].property == "Counter0Small"


def test_deadlocks_are_preserved():
    full, red, _ = _same(Counters(2, 2, deadlock=True))
    assert [v.property for v in red.violations] == ["Deadlock"]


def test_shared_flag_makes_actions_dependent():
    full, red, _ = _same(Counters(3, 2, shared=True))
    assert full.verdict == red.verdict == "ok"


def test_the_cycle_proviso_has_teeth():
    m = Ignoring()
    assert check(m).verdict == "violated"
    assert check(Ample(m, cycle_proviso=False)).verdict == "ok"      # B ignored forever: unsound
    full, red, _ = _same(Ignoring())
    assert red.verdict == "violated"


@pytest.mark.parametrize("period", [1, 3])
def test_the_cycle_proviso_closes_self_loops_and_longer_cycles(period):
    # The proviso looks at the states expanded so far: a self-loop's successor is the
    # state itself, and a longer cycle is closed back to its first state by its last.
    m = Ignoring(period)
    assert check(Ample(m, cycle_proviso=False)).verdict == "ok"
    full, red, p = _same(m)
    assert red.verdict == full.verdict == "violated"
    assert p.ample.full_by_proviso == 1


def test_wrong_footprints_are_a_contract_error_naming_both_actions():
    m = Counters(3, 2, shared=True, lie=True)
    with pytest.raises(ModelError, match=r"footprints\(\).*Flip\(p=\d\) and Flip\(p=\d\)|Flip.*Flip"):
        validate(m, footprints_of(m), list(m.properties()), sample_states(m))


def test_an_invisible_action_that_changes_a_property_is_caught():
    m = Counters(2, 2, limit=5)

    class Lying(Counters):
        def footprints(self):
            f = super().footprints()
            f.property_reads["Counter0Small"] = frozenset({("c", 1)})
            return f

    lying = Lying(2, 3, limit=2)
    with pytest.raises(ModelError, match="Counter0Small"):
        validate(lying, footprints_of(lying), list(lying.properties()), sample_states(lying))
    assert validate(m, footprints_of(m), list(m.properties()), sample_states(m)) > 0


class Finishers(Model):
    """Counters (n processes, each to k) that record who finished, in history state only
    a property reads: a sorted set of ids (updates commute), or with ``last`` the id
    of the last one to finish (they do not)."""

    name, version = "finishers", "1"

    def __init__(self, n=3, k=2, last=False, commuting=True):
        self.n, self.k, self.last, self.commuting = n, k, last, commuting

    def init_states(self):
        return [(tuple(0 for _ in range(self.n)), ())]

    def actions(self, s):
        return [action("Inc", p=i) for i in range(self.n) if s[0][i] < self.k]

    def next_state(self, s, a):
        c, done = s
        i = a.get("p")
        c = c[:i] + (c[i] + 1,) + c[i + 1:]
        if c[i] == self.k:
            done = (i,) if self.last else tuple(sorted(done + (i,)))
        return c, done

    def is_terminal(self, s):
        return True

    def properties(self):
        return [always("Bounded", lambda s: s[0][0] <= self.k, "counter 0 stays within k")]

    def footprints(self):
        return Footprints({i: ((("c", i),), (("c", i), "done")) for i in range(self.n)}, lambda a: a.get("p"),
                          {"Bounded": (("c", 0),)}, commuting=["done"] if self.commuting else [])


def test_commuting_history_keeps_actions_independent():
    full, red, p = _same(Finishers(3, 2))
    assert red.stats.distinct < full.stats.distinct and p.ample.reduced_states > 0
    # declared as an ordinary key, the shared history makes every pair dependent
    full2, red2, p2 = _same(Finishers(3, 2, commuting=False))
    assert red2.stats.distinct == full2.stats.distinct and p2.ample.reduced_states == 0


def test_history_declared_commuting_that_does_not_commute_is_caught():
    m = Finishers(3, 1, last=True)
    with pytest.raises(ModelError, match="do not commute"):
        validate(m, footprints_of(m), list(m.properties()), sample_states(m))


class Armed(Model):
    """Counters 0 and 2 (to k); Arm (when counter 0 is done) arms a trigger, and Fire
    (armed, counter 2 done) pushes counter 2 past k.  Fire's class reads the trigger
    and counter 2; while counter 2 is not done only Inc 2 can enable it, which the
    guard says (``guard``), so Inc 2 alone is a stubborn set even with Arm, visible,
    enabled.  ``lie``: a guard naming the trigger alone, which Inc 2 refutes."""

    name, version = "armed", "1"

    def __init__(self, k=2, guard=True, lie=False):
        self.k, self.use_guard, self.lie = k, guard, lie

    def init_states(self):
        return [(0, 0, False)]

    def actions(self, s):
        c0, c2, armed = s
        out = [action("Inc", p=0)] if c0 < self.k else []
        out += [action("Inc", p=2)] if c2 < self.k else []
        if c0 == self.k and not armed:
            out.append(action("Arm"))
        if armed and c2 == self.k:
            out.append(action("Fire"))
        return out

    def next_state(self, s, a):
        c0, c2, armed = s
        if a.name == "Arm":
            return c0, c2, True
        if a.name == "Fire":
            return c0, c2 + 1, armed
        return (c0 + 1, c2, armed) if a.get("p") == 0 else (c0, c2 + 1, armed)

    def is_terminal(self, s):
        return True

    def properties(self):
        return [always("TriggerIsAFlag", lambda s: isinstance(s[2], bool), "reads the trigger alone: Arm is visible"),
                always("Counter0Bounded", lambda s: s[0] <= self.k, "")]

    def footprints(self):
        def guard(s, c):
            if c == "Fire":
                if self.lie:
                    return [] if s[2] else ["armed"]
                return [("c", 2)] if s[1] != self.k else (["armed"] if not s[2] else None)
            return None
        classes = {0: ((("c", 0),), (("c", 0),)), 2: ((("c", 2),), (("c", 2),)),
                   "Arm": ((("c", 0), "armed"), ("armed",)), "Fire": ((("c", 2), "armed"), (("c", 2),))}
        return Footprints(classes, lambda a: a.get("p") if a.name == "Inc" else a.name,
                          {"TriggerIsAFlag": ("armed",), "Counter0Bounded": (("c", 0),)},
                          guard=guard if self.use_guard else None)


def test_a_guard_keeps_disabled_classes_from_pulling_in_every_writer():
    full, red, p = _same(Armed())
    assert p.ample.reduced_states > 0 and red.stats.distinct < full.stats.distinct
    full2, red2, p2 = _same(Armed(guard=False))       # Fire's enablers include Arm, which is visible
    assert p2.ample.reduced_states == 0 and red2.stats.distinct == full2.stats.distinct


def test_a_wrong_guard_is_caught():
    m = Armed(lie=True)
    with pytest.raises(ModelError, match="guard names"):
        validate(m, footprints_of(m), list(m.properties()), sample_states(m))


# -- the Kafka model's footprints (spec/footprints.py) ----------------------------------------

KAFKA_SMALL = [("tiny", {}), ("zombie", {}), ("unclean", {}), ("delete", {"max_crashes": 0}),
               ("no-controller-fencing", {"max_crashes": 0, "max_session_expiries": 0}),
               ("data-hw", {"max_records": 1, "max_crashes": 1}), ("data-kip101", {"max_records": 1, "max_crashes": 1}),
               ("data-cache", {"max_records": 1, "max_crashes": 0, "max_session_expiries": 0}),
               ("tiny", {"controller_event_order": False}), ("zombie", {"controller_event_order": False}),
               ("data-hw", {"max_records": 1, "max_crashes": 1, "controller_event_order": False})]


@pytest.mark.parametrize("preset,over", KAFKA_SMALL)
def test_kafka_footprints_hold_and_reduced_search_agrees(preset, over):
    """The declared footprints pass the contract check on sampled states, and the
    reduced search gives the full search's verdicts, every counterexample replaying
    on the full model (_same)."""
    m = FAMILY.build(resolve(FAMILY, preset, over))
    fps = footprints_of(m)
    assert fps is not None and validate(m, fps, list(m.properties()), sample_states(m)) > 0
    full, red, p = _same(m)
    assert p.ample is not None
    # every class of every enabled action is declared (validate checked the sample;
    # the reduced search's own stubborn sets checked every state it expanded)
    assert red.stats.distinct <= full.stats.distinct


@pytest.mark.parametrize("preset,prop,order", [("data-hw", "LogsMatchBelowHighWatermark", False),
                                               ("small", "LeaderInIsr", False),
                                               ("data-hw", "LogsMatchBelowHighWatermark", True)])
def test_kafka_one_property_agrees(preset, prop, order):
    """With one property fewer actions are visible; the verdict is still the full one."""
    m = FAMILY.build(resolve(FAMILY, preset, {**({"max_records": 1, "max_crashes": 1} if preset.startswith("data")
                                                 else {"max_crashes": 0}), "controller_event_order": order}))
    props = [q for q in m.properties() if q.name == prop]
    full = check(m, properties=props, keep_going=True)
    p = plan(m, props, por=True)
    red = p.finish(check(p.model, properties=p.props, keep_going=True))
    assert red.verdict == full.verdict and red.stats.distinct <= full.stats.distinct
    for v in red.violations:
        again = replay_path(m, [s.action for s in v.path[1:]], v.path[0].state)
        assert [s.fingerprint for s in again] == [s.fingerprint for s in v.path]


def test_kafka_lying_footprints_are_caught():
    """Deliveries declared blind to their inbox: a controller that sends a request
    then enables a delivery whose class reads nothing it writes."""
    m = FAMILY.build(resolve(FAMILY, "tiny", {}))
    fps = footprints_of(m)
    for b in range(m.cfg.brokers):
        c = ("Deliver", b)
        fps.reads[c] = frozenset(k for k in fps.reads[c] if k[0] != "inbox")
    with pytest.raises(ModelError, match="footprints"):
        validate(m, fps, list(m.properties()), sample_states(m))


def test_kafka_atomic_controller_and_reassignment_declare_none():
    for preset, over in (("tiny", {"atomic_controller": True}), ("reassign-rf", {})):
        m = FAMILY.build(resolve(FAMILY, preset, over))
        p = plan(m, list(m.properties()), por=True)
        assert p.model is m and "declares no action footprints" in p.notes[0]


def test_cli_por_flag(tmp_path):
    r = cli_support.kmc("check", "--preset", "tiny", "--por", "--quiet", "--traces-dir", tmp_path)
    assert r.returncode == 0, r.stderr
    r = cli_support.kmc("check", "--preset", "tiny", "--por", "--traces-dir", tmp_path)
    assert r.returncode == 0, r.stderr
    # how many states the stubborn sets cut: on Kafka, none yet (docs/reductions.md says why)
    assert "partial-order reduction: 0 of the 1,184 states expanded took a proper subset" in r.stdout


class _Declares(Model):
    def __init__(self, hook):
        self.hook = hook

    def footprints(self):
        return self.hook()


def test_a_bad_footprints_declaration_is_a_model_error_naming_the_hook():
    def boom():
        raise KeyError("class")
    with pytest.raises(ModelError, match=r"footprints\(\) raised KeyError"):
        footprints_of(_Declares(boom))
    with pytest.raises(ModelError, match=r"footprints\(\) must return a checker.por.Footprints or None, not dict"):
        footprints_of(_Declares(dict))
    assert footprints_of(_Declares(lambda: None)) is None
    assert footprints_of(Model()) is None


class SymmetricCounters(Counters):
    """Counters whose processes are interchangeable (symmetry) and independent
    (footprints), with a symmetric invariant ("not every counter at k") that is
    violated: both reductions apply at once."""

    name = "symmetric-counters"

    def properties(self):
        return [always("NotAllDone", lambda s: not all(x == self.k for x in s[0]), "symmetric in the processes")]

    def symmetry(self):
        from itertools import permutations

        from checker.symmetry import Symmetry

        def apply(s, g):
            c, flag = s
            return tuple(c[g.index(i)] for i in range(self.n)), flag
        return Symmetry(list(permutations(range(self.n))), apply, "processes")

    def footprints(self):
        classes = {("inc", i): ((("c", i),), (("c", i),)) for i in range(self.n)}
        return Footprints(classes, lambda a: (a.name.lower(), a.get("p")), {"NotAllDone": [("c", i) for i in range(self.n)]})


def test_symmetry_and_por_together_agree_with_the_full_search():
    """Each reduction alone and both together give the full search's verdict, and
    every counterexample, rebuilt on the full model, replays there.  The invariant
    reads every counter, so POR has no invisible set here and symmetry does the
    cutting; with no invariant POR cuts too (the sometimes-free variant below)."""
    m = SymmetricCounters(3, 2)
    props = list(m.properties())
    full = check(m, keep_going=True)
    assert full.verdict == "violated" and full.stats.distinct == 27
    counts = {}
    for sym, por in ((True, False), (False, True), (True, True)):
        p = plan(m, props, symmetry=sym, por=por)
        red = p.finish(check(p.model, properties=p.props, keep_going=True))
        assert red.verdict == full.verdict
        v = red.violations[0]
        again = replay_path(m, [s.action for s in v.path[1:]], v.path[0].state)
        assert [s.fingerprint for s in again] == [s.fingerprint for s in v.path]
        assert all(x == m.k for x in v.path[-1].state[0])
        counts[(sym, por)] = red.stats.distinct
    assert counts[(True, False)] == 10 and counts[(True, True)] <= 10       # multisets of 3 values in 0..2
    quiet = SymmetricCounters(3, 2)
    quiet.properties = lambda: []
    p = plan(quiet, [], symmetry=True, por=True)
    both = check(p.model, properties=[], keep_going=True)
    assert both.verdict == "ok" and both.stats.distinct < 10 and p.ample.reduced_states > 0
