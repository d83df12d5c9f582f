"""The search core (checker.search): one search for every consumer.

- the graph a search builds through its visitor is the graph of a plain,
  separately written breadth-first exploration (nodes, edges, depths, parents);
- ``kmc check`` with ``eventually`` properties explores the space once: the
  model's ``next_state`` runs once per transition (plus the sampled re-runs that
  check determinism), not twice;
- the cyclic garbage collector is off during a search and back on after it, even
  when the search raises;
- one settings object drives the local engine;
- a search's books (checker.ledger) carry over from one search to the next, as
  the Spark driver carries them across its levels and checkpoints.
"""

from __future__ import annotations

import gc
import json

import pytest

from checker import bfs
from checker.errors import ModelError, UsageError
from checker.graph import GraphBuilder, explore
from checker.liveness import CheckRun
from checker.model import Model, action, always, eventually
from checker.search import SAMPLE_SIZE, Ledger, Search, Settings, StopSearch, Visitor
from tests.liveness_toys import Flap, Grant, Relay
from tests.toys import DieHard, Graph, Grid


def reference_graph(model: Model):
    """A plain BFS over states by equality, written independently of the core."""
    states, edges, depth, parent, initial, unexpanded = [], [], [], [], [], []
    index = {}
    for s in model.init_states():
        if s not in index:
            index[s] = len(states)
            states.append(s)
            depth.append(0)
            parent.append(-1)
            initial.append(index[s])
    n = 0
    while n < len(states):
        s = states[n]
        if not model.within_boundary(s):
            unexpanded.append(n)
        else:
            for a in model.actions(s):
                t = model.next_state(s, a)
                if t not in index:
                    index[t] = len(states)
                    states.append(t)
                    depth.append(depth[n] + 1)
                    parent.append(len(edges))
                edges.append((n, a, index[t]))
        n += 1
    return states, edges, depth, parent, initial, unexpanded


BRANCHY = Graph({"a": [("x", "b"), ("y", "c")], "b": [("z", "d"), ("back", "a")], "c": [("z", "d")],
                 "d": [("loop", "d")]}, init=("a", "c"))


class Bounded(Grid):
    def within_boundary(self, s):
        return s.x < 2


@pytest.mark.parametrize("model", [Grid(3), DieHard(), BRANCHY, Relay(2), Flap(False), Bounded(3)],
                         ids=["grid", "diehard", "branchy", "relay", "flap", "boundary"])
def test_the_graph_built_during_the_search_is_a_plain_bfs_graph(model):
    g = explore(model)
    states, edges, depth, parent, initial, unexpanded = reference_graph(model)
    assert g.states == states
    assert g.edges == edges
    assert g.depth == depth and g.parent == parent and g.initial == initial
    assert g.unexpanded == unexpanded and g.complete == (not unexpanded)


def test_a_safety_search_with_a_builder_gives_the_same_result_and_the_graph():
    plain = bfs.check(DieHard(), keep_going=True)
    builder = GraphBuilder()
    seen = bfs.check(DieHard(), keep_going=True, visitor=builder)
    assert (seen.verdict, seen.stats.distinct, seen.stats.generated) == \
           (plain.verdict, plain.stats.distinct, plain.stats.generated)
    assert [(v.property, [s.action for s in v.path]) for v in seen.violations] == \
           [(v.property, [s.action for s in v.path]) for v in plain.violations]
    assert len(builder.graph.states) == plain.stats.distinct and len(builder.graph.edges) == plain.stats.generated


class Counting(Relay):
    """Relay with unbounded drops, counting next_state calls."""

    calls = 0

    def next_state(self, s, a):
        type(self).calls += 1
        return super().next_state(s, a)


def test_eventually_properties_cost_one_exploration():
    model = Counting(-1)
    live = CheckRun(model, model.properties(), [], "local", None, None, "kmc check")
    Counting.calls = 0
    result = bfs.check(model, properties=[p for p in model.properties() if p not in live.props],
                       visitor=live.visitor())
    lassos = live.after_search(result, False)
    generated = result.stats.generated
    assert Counting.calls == generated + min(generated, SAMPLE_SIZE)
    assert [v.property for v in lassos] == ["Delivered"]


def test_named_eventually_properties_refuse_a_graph_beyond_the_limit_during_the_search():
    model = Grid(30)
    model.properties = lambda: [eventually("Corner", lambda s: s.x == s.y == 30)]
    live = CheckRun(model, model.properties(), ["Corner"], "local", None, 50, "kmc check")
    with pytest.raises(UsageError, match="need.* the whole state graph, which has more than 50 states"):
        bfs.check(model, properties=[], max_states=None, visitor=live.visitor())


def test_eventually_properties_after_a_first_violation_are_still_checked_when_named():
    model = Grant(False)
    props = list(model.properties()) + [always("NeverRequested", lambda s: not s.requested, "for the test")]
    live = CheckRun(model, props, ["Granted", "NeverRequested"], "local", None, None, "kmc check")
    result = bfs.check(model, properties=[p for p in props if p not in live.props], visitor=live.visitor())
    assert not result.stats.complete
    assert [v.property for v in live.after_search(result, False)] == ["Granted"]


def test_the_collector_is_off_during_a_search_and_restored_after():
    seen = []

    class Watch(Grid):
        def properties(self):
            return [always("Watch", lambda s: seen.append(gc.isenabled()) or True)]

    assert gc.isenabled()
    bfs.check(Watch(2))
    assert seen and not any(seen) and gc.isenabled()
    bfs.check(Watch(2), settings=Settings(collect_garbage=True))
    assert seen[-1] is True

    class Broken(Grid):
        def next_state(self, s, a):
            raise ZeroDivisionError

    with pytest.raises(ModelError):
        bfs.check(Broken(2))
    assert gc.isenabled()


def test_one_settings_object():
    s = Settings(max_depth=2, check_deadlock=False)
    r = Search(Grid(3), [], s).run()
    assert (r.verdict, r.stats.depth) == ("bounded", 2)
    assert bfs.check(Grid(3), settings=s).stats.distinct == r.stats.distinct
    with pytest.raises(UsageError, match="max_states must be a positive integer"):
        Settings(max_states=0).validate()


def test_a_visitor_may_stop_the_search():
    class Stop(GraphBuilder):
        def transition(self, src, act, dst):
            raise UsageError("enough")

    with pytest.raises(UsageError, match="enough"):
        bfs.check(Grid(2), visitor=Stop())
    assert gc.isenabled()


def test_a_visitor_sees_every_dead_end_once_in_visit_order_deadlock_or_not():
    """``dead_end`` (what conformance's settling collects) is called for a state
    inside the boundary with no action, terminal or not, and at max_depth too."""
    class Ends(Visitor):
        def __init__(self):
            self.seen = []

        def dead_end(self, fp, state):
            self.seen.append(state)

    g = Graph({"a": [("x", "b"), ("y", "c"), ("z", "e")], "b": [("w", "d")], "c": [], "e": []},
              terminal=("c",))
    ends = Ends()
    r = Search(g, [], Settings(keep_going=True), ends).run()
    assert ends.seen == ["c", "e", "d"]                      # c terminal; e and d are deadlocks
    assert [v.property for v in r.violations] == ["Deadlock"]
    ends = Ends()
    Search(g, [], Settings(max_depth=1, check_deadlock=False), ends).run()
    assert ends.seen == ["c", "e"]                           # b is cut by the bound, not a dead end


def test_unknown_actions_are_still_rejected_with_a_builder():
    class Bad(Grid):
        def actions(self, s):
            return ["IncX"] if s.x < 1 else []

    with pytest.raises(ModelError, match="Action records"):
        bfs.check(Bad(2), visitor=GraphBuilder())
    assert action("IncX")  # the toy's vocabulary is intact


class Mixed(Model):
    """Reaches (1,) and (True,): equal tuples with different encodings."""

    def init_states(self):
        return [(0,)]

    def actions(self, s):
        return [action("One"), action("Yes")] if s == (0,) else []

    def next_state(self, s, a):
        return (1,) if a.name == "One" else (True,)

    def is_terminal(self, s):
        return True


def test_equal_states_are_told_apart_unless_the_model_promises_otherwise():
    assert bfs.check(Mixed()).stats.distinct == 3
    promised = Mixed()
    promised.equal_states_encode_equally = True    # a false promise merges (1,) and (True,)
    assert bfs.check(promised).stats.distinct == 2


@pytest.mark.parametrize("preset", ["tiny", "small", "data-hw", "reassign-rf", "delete"])
def test_the_kafka_model_keeps_its_promise(preset):
    """Equal reachable states have equal encodings, the cheaper repr the promise
    allows is repr on every state, and the search gives the same counts and verdict
    with and without using the promise."""
    from checker.config import resolve
    from checker.fingerprint import fingerprint_bytes, fingerprint_fn, state_canon_fn, state_repr_fn
    from spec.family import FAMILY

    class Stored(Visitor):
        def __init__(self):
            self.states = []

        def state(self, fp, state, depth, parent):
            self.states.append(state)

    model = FAMILY.build(resolve(FAMILY, preset, {}))
    assert model.equal_states_encode_equally
    stored = Stored()
    with_promise = bfs.check(model, keep_going=True, visitor=stored)   # every reachable state, stored
    assert with_promise.stats.complete and len(stored.states) == with_promise.stats.distinct
    by_value: dict = {}
    rep = state_repr_fn(model)      # the fingerprints' repr, remembered by part with the promise
    canon = state_canon_fn(model)   # the same in Spark's expand tasks, and the copy they ship
    fp = fingerprint_fn(model)
    for s in stored.states:
        assert by_value.setdefault(s, repr(s)) == repr(s) == rep(s)
        text, c = canon(s)
        assert text == repr(s) == repr(c) and c == s
        assert fp(s) == fingerprint_bytes(text.encode())   # fingerprint_fn builds the same repr
    model.equal_states_encode_equally = False
    without = bfs.check(model, keep_going=True)
    assert (with_promise.verdict, with_promise.stats.distinct, with_promise.stats.generated) == \
           (without.verdict, without.stats.distinct, without.stats.generated)
    assert [(v.property, [s.action for s in v.path]) for v in with_promise.violations] == \
           [(v.property, [s.action for s in v.path]) for v in without.violations]


def _books(led, distinct):
    st = led.stats(distinct, 1.0)
    return (st.distinct, st.generated, st.depth, st.complete, st.action_counts, st.witnesses,
            st.coverage.enabled, st.coverage.new, [(r[0], r[1], r[2], r[3]) for r in led.found],
            [n for n, _ in led.state_checks], [n for n, _ in led.step_checks], [n for n, _ in led.wit_checks],
            led.sample_left, [(lv["level"], lv["frontier"], lv["new"], lv["distinct"]) for lv in led.levels])


@pytest.mark.parametrize("model, settings", [
    (Grid(6, k=9), Settings()),
    (Grid(6, k=9), Settings(keep_going=True)),
    (Grid(6), Settings(max_depth=8)),
    (DieHard(solve=True), Settings(keep_going=True)),
    (BRANCHY, Settings(keep_going=True)),
], ids=["grid-stop", "grid-continue", "grid-depth", "diehard", "branchy"])
@pytest.mark.parametrize("through_json", [False, True], ids=["same-ledger", "checkpointed"])
def test_a_search_cut_in_two_over_one_ledger_keeps_the_books_of_one_search(model, settings, through_json):
    """What the Spark driver does with its books (checker.ledger): a search stopped
    before a wide level, and a second search on the same ledger (or one read back
    from its JSON, as a checkpoint keeps it) with the first one's visited map, end
    with the books of one uncut search: counts, coverage, violations in order,
    witnesses, checks still active, contract sample, levels."""
    whole = Search(model, model.properties(), settings)
    whole.run()
    want = _books(whole.ledger, len(whole.visited))
    for cut in (1, 3, 6):
        first = Search(model, model.properties(), settings)
        try:
            first.explore(first.initial(), handoff=cut)
        except StopSearch:
            pass
        led = first.ledger
        if first.handoff:
            if through_json:
                led = Ledger.from_json(led.props, json.loads(json.dumps(led.to_json())))
                led.stored_at_level = first.ledger.stored_at_level
            second = Search(model, model.properties(), settings, ledger=led)
            second.visited = first.visited
            try:
                second.explore(first.handoff, depth=led.level)
            except StopSearch:
                pass
        assert _books(led, len(first.visited)) == want, cut
