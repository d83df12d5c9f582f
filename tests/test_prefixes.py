"""checker.prefixes replays a corpus with its shared prefixes once.  It must give
what running the traces one by one gives: each trace's divergence or None, in order,
on conforming implementations and on broken ones, and a trace that no longer fits the
model at the same trace.  Otherwise it is not sound to use it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

import impl.election as election
import impl.log as implog
from checker.config import resolve
from checker.conform import Harness, NotInModel, covering_set
from checker.graph import explore
from checker.model import Model, action
from checker.prefixes import pickled, replay
from impl.adapter import KafkaImplementation
from spec.family import FAMILY

INC, DOUBLE, RESET = action("Inc"), action("Double"), action("Reset")


class Mod(Model):
    """A counter modulo 7 with three actions: traces over it share prefixes often."""

    def init_states(self):
        return [0, 3]

    def actions(self, s):
        return [INC, DOUBLE, RESET]

    def next_state(self, s, a):
        return {"Inc": s + 1, "Double": 2 * s, "Reset": 0}[a.name] % 7


class ModImpl:
    """Conforms, unless ``bug`` (a value, an action name, what to do instead) says
    how it goes wrong: in that value, that action is done wrong, or refused."""

    bug = None

    def __init__(self, config):
        self.n = config.get("start", 0)
        self.history = []          # state the copy must carry

    def enabled(self, a):
        return not (self.bug and self.bug[2] == "refuse" and self.n == self.bug[0] and a.name == self.bug[1])

    def apply(self, a):
        self.history.append(a.name)
        if self.bug and self.bug[2] == "wrong" and self.n == self.bug[0] and a.name == self.bug[1]:
            self.n = (self.n + 3) % 7
            return
        self.n = {"Inc": self.n + 1, "Double": 2 * self.n, "Reset": 0}[a.name] % 7

    def observe(self):
        return self.n


def one_by_one(h: Harness, traces) -> list:
    return [summary(h.run(acts, init)) for init, acts in traces]


def shared(h: Harness, traces, **kw) -> list:
    return [summary(d) for _, d in replay(h, traces, **kw)]


def summary(d):
    return None if d is None else (d.kind, d.step, str(d.action), d.changes, tuple(map(str, d.actions)),
                                   None if d.extra is None else str(d.extra))


names = st.sampled_from([INC, DOUBLE, RESET])
traces_st = st.lists(st.tuples(st.sampled_from([None, 0, 3]), st.lists(names, max_size=8)), min_size=1, max_size=12)
bug_st = st.one_of(st.none(), st.tuples(st.integers(0, 6), st.sampled_from(["Inc", "Double", "Reset"]),
                                        st.sampled_from(["wrong", "refuse"])))


@settings(max_examples=300, deadline=None)
@given(traces=traces_st, bug=bug_st, probe=st.booleans())
def test_shared_prefixes_give_what_one_by_one_gives(traces, bug, probe):
    impl = type("Impl", (ModImpl,), {"bug": bug})
    vocabulary = [INC, DOUBLE, RESET] if probe else []
    # Prefixes repeat often: every trace that is a prefix of another, or equal to it.
    traces = traces + [(init, acts[:len(acts) // 2]) for init, acts in traces[::2]]
    want = one_by_one(Harness(Mod(), impl, {}, vocabulary), traces)
    h = Harness(Mod(), impl, {}, vocabulary)
    assert shared(h, traces) == want
    assert h.steps <= sum(len(acts) for _, acts in traces)


def test_a_trace_that_leaves_the_model_is_raised_at_its_turn():
    class Even(Mod):
        def actions(self, s):
            return [INC, RESET] if s % 2 else [INC, DOUBLE, RESET]

    traces = [(None, [INC, INC]), (None, [INC, DOUBLE]), (None, [RESET])]
    seen = []
    with pytest.raises(NotInModel):
        for k, d in replay(Harness(Even(), ModImpl, {}), traces):
            seen.append((k, d))
    assert seen == [(0, None)]


def test_the_shared_prefixes_are_run_once_and_copied_only_where_traces_part():
    copies = []

    def snapshot(impl):
        copies.append(impl.history[:])
        return pickled(impl)

    traces = [(None, [INC, INC, INC, INC]), (None, [INC, INC, INC, DOUBLE]), (None, [INC, RESET]), (None, [DOUBLE])]
    h = Harness(Mod(), ModImpl, {})
    assert [d for _, d in replay(h, traces, snapshot=snapshot)] == [None] * 4
    assert h.steps == 4 + 1 + 1 + 1                      # 13 one by one
    assert copies == [["Inc"], ["Inc", "Inc", "Inc"]]    # only where the next traces leave the first


# -------------------------------------------------------------- the Kafka model

DATA = {"max_records": 1, "max_crashes": 1, "max_session_expiries": 0, "max_isr_shrinks": 0,
        "preferred_election": False}      # tests/test_conform_kafka.py's: 2,065 states


def kafka(preset: str, overrides: dict, probe: bool) -> tuple[Harness, Harness, list]:
    cfg = resolve(FAMILY, preset, overrides)
    model = FAMILY.build(cfg)
    graph = explore(model)
    vocabulary = [a for _, a, _ in graph.edges] if probe else []
    traces = covering_set(graph).traces
    return (Harness(model, KafkaImplementation, cfg, vocabulary),
            Harness(model, KafkaImplementation, cfg, vocabulary), traces)


def first(results) -> tuple | None:
    """The first ``(index, summary)`` with a divergence, running no further."""
    return next(((k, summary(d)) for k, d in results if d is not None), None)


def test_a_kafka_covering_set_conforms_either_way_with_fewer_steps():
    a, b, traces = kafka("tiny", {}, probe=True)
    assert one_by_one(a, traces) == shared(b, traces) == [None] * len(traces)
    assert b.steps < a.steps / 2 and b.probes == a.probes


def elect_the_last_live_isr_member(assignment, isr, live, unclean):
    for r in reversed(assignment):
        if r in live and r in isr:
            return r, tuple(sorted(x for x in isr if x in live))
    return None


@pytest.mark.parametrize("bug", ["election", "truncate"])
def test_a_broken_kafka_broker_diverges_at_the_same_trace_and_step_either_way(bug, monkeypatch):
    """Two of the reference broker's bugs of tests/test_conform_kafka.py: the first
    divergence over the covering set is the same trace, step, kind and changes, and
    the copies do not carry the patched function away from the patch."""
    if bug == "election":
        monkeypatch.setattr(election, "offline_partition_leader_election", elect_the_last_live_isr_member)
        a, b, traces = kafka("tiny", {"brokers": 3, "replication_factor": 3, "max_session_expiries": 0,
                                      "max_controller_failovers": 0, "preferred_election": False}, probe=False)
    else:
        truncate = implog.Log.truncate_to
        monkeypatch.setattr(implog.Log, "truncate_to", lambda self, offset: truncate(self, offset + 1))
        a, b, traces = kafka("data-kip320", DATA, probe=False)
    want = first((k, a.run(acts, init)) for k, (init, acts) in enumerate(traces))
    assert want is not None
    assert first(replay(b, traces)) == want


def test_actions_equal_but_told_apart_by_the_implementation_are_not_shared():
    """``Add(v=1) == Add(v=True)``, but an implementation may act on the difference."""
    class Add(Model):
        def init_states(self):
            return [0]

        def actions(self, s):
            return [action("Add", v=1), action("Add", v=True), action("Stop")] if s < 5 else []

        def next_state(self, s, a):
            return s + 1 if a.name == "Add" else 5

    class AddImpl:
        def __init__(self, config):
            self.n = 0

        def enabled(self, a):
            return self.n < 5

        def apply(self, a):
            self.n = 5 if a.name == "Stop" else self.n + (2 if a.get("v") is True else 1)

        def observe(self):
            return self.n

    traces = [(None, [action("Add", v=1), action("Stop")]), (None, [action("Add", v=True), action("Add", v=1)])]
    assert shared(Harness(Add(), AddImpl, {}), traces) == one_by_one(Harness(Add(), AddImpl, {}), traces)
    assert shared(Harness(Add(), AddImpl, {}), traces)[1][:2] == ("state", 1)


def test_a_harness_that_probes_every_run_whole_shares_nothing():
    """With ``probed`` None (as while shrinking) and each run's path as its
    vocabulary, a later trace asks about its own actions on the shared prefix."""
    a, b, c, d = action("A"), action("B"), action("C"), action("D")
    graph = {0: {a: 1}, 1: {b: 2, c: 3}, 3: {d: 4}}

    class G(Model):
        def init_states(self):
            return [0]

        def actions(self, s):
            return list(graph.get(s, {}))

        def next_state(self, s, x):
            return graph[s][x]

    class Loose:              # enables D in state 1, where the model does not
        def __init__(self, config):
            self.s = 0

        def enabled(self, x):
            return x in graph.get(self.s, {}) or (self.s == 1 and x == d)

        def apply(self, x):
            self.s = graph[self.s][x]

        def observe(self):
            return self.s

    traces = [(None, [a, b]), (None, [a, c, d])]

    def harness():
        h = Harness(G(), Loose, {}, probe_path=True)
        h.probed = None
        return h
    want = one_by_one(harness(), traces)
    assert want[1][:2] == ("extra", 1) and shared(harness(), traces) == want


def test_a_copy_that_fails_falls_back_to_a_fresh_implementation():
    calls = []

    def flaky(impl):
        calls.append(len(calls))
        if len(calls) % 2:
            raise TypeError("cannot copy")
        return pickled(impl)

    traces = [(None, [INC] * k + [DOUBLE] * (3 - k)) for k in range(4)] + [(None, [INC, INC, RESET])]
    want = one_by_one(Harness(Mod(), ModImpl, {}), traces)
    assert shared(Harness(Mod(), ModImpl, {}), traces, snapshot=flaky) == want and calls
