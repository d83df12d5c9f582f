"""The conformance harness (checker.conform, kmc conform) on a toy protocol and a toy
implementation written separately (tests/conform_toys.py), with deliberate bugs."""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from checker import conform
from checker.bfs import replay_path
from checker.config import resolve
from checker.errors import ModelError
from checker.conform import (
    EXTRA, INITIAL, RAISED, REFUSED, SETTLED, STATE, Harness, NotInModel, covering_set, fewest_steps, random_walks, save,
    shrink,
)
from checker.graph import explore
from checker.model import action
from checker.search import SAMPLE_SIZE
from checker.trace import load_trace
from tests import cli_support, toys
from tests.conform_toys import FAMILY, Pair, PairSystem

ROOT = Path(__file__).resolve().parent.parent
MODEL = ["--model", "tests.conform_toys:FAMILY"]

APPEND, HW, FAILOVER = action("Append"), action("AdvanceHw"), action("Failover")


def rep(f: int):
    return action("Replicate", follower=f)


def harness(preset: str = "tiny", **overrides) -> Harness:
    cfg = resolve(FAMILY, preset, overrides)
    return Harness(FAMILY.build(cfg), PairSystem, cfg)


def kmc(*args, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return cli_support.kmc(*args, cwd=cwd, timeout=120)


def shortest_divergence(h: Harness, limit: int = 6) -> int:
    """The length of the shortest legal action sequence that diverges, by brute force."""
    layer = [()]
    for n in range(limit + 1):
        for seq in layer:
            if h.run(seq) is not None:
                return n
        nxt = []
        for seq in layer:
            state = h.model_path(seq)[-1]
            nxt.extend(seq + (a,) for a in h.model.actions(state))
        layer = nxt
    raise AssertionError("no divergence within the limit")


# ------------------------------------------------------------------- conforming

@pytest.mark.parametrize("preset", ["tiny", "deeper"])
def test_covering_set_conforms(preset):
    h = harness(preset)
    cover = covering_set(explore(h.model))
    assert cover.covered == len(cover.graph.edges)
    assert all(h.run(acts, init) is None for init, acts in cover.traces)


def test_covering_set_takes_every_transition_along_real_paths():
    for model in (FAMILY.build(resolve(FAMILY, "deeper", {})), toys.DieHard(), toys.Grid(3)):
        g = explore(model)
        c = covering_set(g)
        assert c.covered == len(g.edges) and c.steps >= len(g.edges)
        for p in c.paths:
            assert p and g.edges[p[0]][0] in g.initial
            assert all(g.edges[a][2] == g.edges[b][0] for a, b in zip(p, p[1:]))
        assert covering_set(explore(model)).paths == c.paths      # deterministic
    # DieHard's graph is strongly connected: one walk, close to the shortest closed walk
    # that takes every transition (the directed Chinese postman tour, by min-cost flow).
    d = covering_set(explore(toys.DieHard()))
    assert (len(d.paths), len(d.graph.edges)) == (1, 96)
    assert fewest_steps(d.graph) == 192 and d.steps <= 1.05 * 192


def test_fewest_steps_is_the_brute_force_minimum():
    # Every covering set of a small graph, by brute force over walks: the minimum
    # total length equals fewest_steps, and the greedy one is at most 10% longer.
    cyclic = toys.Graph({"a": [("x", "b"), ("y", "c")], "b": [("x", "a"), ("y", "d")], "c": [("x", "d")],
                         "d": [("x", "b"), ("y", "e")], "e": [("x", "e")]})
    for model in (FAMILY.build(resolve(FAMILY, "tiny", {"max_writes": 1})), toys.Grid(2), cyclic):
        g = explore(model)
        assert len(g.edges) <= 20
        assert covering_set(g).steps <= 1.1 * fewest_steps(g)
        assert fewest_steps(g) == brute_force_cover(g)


def brute_force_cover(g) -> int:
    """Uniform-cost search over (current state, transitions taken so far): a step
    moves along a transition, a restart (free) jumps back to an initial state."""
    import heapq
    full = (1 << len(g.edges)) - 1
    out = g.out_edges()
    start = [(0, n, 0) for n in g.initial]
    best = {}
    heap = list(start)
    while heap:
        cost, node, mask = heapq.heappop(heap)
        if mask == full:
            return cost
        if best.get((node, mask), cost + 1) <= cost:
            continue
        best[(node, mask)] = cost
        for e in out[node]:
            heapq.heappush(heap, (cost + 1, g.edges[e][2], mask | (1 << e)))
        for n in g.initial:
            if n != node:
                heapq.heappush(heap, (cost, n, mask))
    raise AssertionError("unreachable")


def test_harness_checks_the_model_first():
    h = harness()
    with pytest.raises(NotInModel) as e:
        h.run([HW])
    assert e.value.step == 1 and "AdvanceHw() is not enabled in the model" in str(e.value)


# --------------------------------------------------------------- injected bugs

BUGS = {
    # bug: (a longer path that hits it, kind, diverging step, changes, minimal length)
    "no-epoch-bump": ([APPEND, rep(1), HW, APPEND, FAILOVER], STATE, 5, [("epoch", 2, 1)], 1),
    "hw-past-follower": ([FAILOVER, APPEND, rep(0), APPEND, HW], STATE, 5, [("hw", 1, 2)], 4),
    "truncate-off-by-one": ([APPEND, APPEND, rep(1), HW, FAILOVER], STATE, 5, [("logs[0]", [1], [1, 1])], 2),
    "append-budget": ([APPEND, rep(1), HW, APPEND], REFUSED, 4, [], 2),
    "replicate-crash": ([FAILOVER, APPEND, APPEND, rep(0)], RAISED, 4, [], 3),
}


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_injected_bug_is_caught_at_its_step_and_shrunk_to_the_minimum(bug):
    path, kind, step, changes, minimum = BUGS[bug]
    h = harness(bug=bug)
    d = h.run(path, source="hand-made")
    assert d is not None and (d.kind, d.step, d.action) == (kind, step, path[step - 1])
    assert d.changes == changes
    if kind == RAISED:
        assert "RuntimeError: fetch from an empty log" in d.detail
    assert [a for _, a, _ in d.context] == path[max(0, step - 6):step - 1]
    small = shrink(h, d)
    assert small.original is d and len(small.actions) == minimum == shortest_divergence(h)
    assert h.run(small.actions) is not None and h.fits(small.actions)
    text = small.render()
    assert text.startswith(f"DIVERGENCE at step {step} of hand-made: {path[step - 1]}")
    # the covering set finds it too
    cover = covering_set(explore(h.model))
    assert any(h.run(acts, init) is not None for init, acts in cover.traces)


class CountingPair(Pair):
    """The toy model, counting what the harness asks of it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = Counter()

    def actions(self, s):
        self.calls["actions"] += 1
        return super().actions(s)

    def next_state(self, s, a):
        self.calls["next_state"] += 1
        return super().next_state(s, a)

    def observe(self, s):
        self.calls["observe"] += 1
        return super().observe(s)


@pytest.mark.parametrize("bug", ["none", "hw-past-follower"])
def test_the_model_side_is_asked_once_per_state_and_forgetting_changes_no_answer(bug, monkeypatch):
    """A harness asks the model about each state once (its actions, its successor by
    each action, its observation) however many runs pass through it.  A harness that
    forgets after every three states (MEMO_LIMIT) gives the same divergences, the
    same shrunk path and the same model paths, only by asking again."""
    cfg = resolve(FAMILY, "deeper", {"bug": bug})
    traces = covering_set(explore(FAMILY.build(cfg))).traces

    def answers(h):
        found = [h.run(acts, init) for init, acts in traces]
        found = [(d.kind, d.step, d.actions, d.changes, d.context) for d in found if d is not None]
        first = next((d for d in (h.run(acts, init) for init, acts in traces) if d is not None), None)
        paths = [h.model_path(acts, init) for init, acts in traces]
        asked = dict(h.model.calls)     # the shrinker below also searches the model itself
        return found, None if first is None else shrink(h, first).actions, paths, asked

    model = CountingPair(cfg["max_writes"], cfg["max_failovers"], cfg)
    remembering = answers(Harness(model, PairSystem, cfg, vocabulary=[a for _, acts in traces for a in acts]))
    graph = explore(FAMILY.build(cfg))
    asked = tuple(remembering[3].get(k, 0) for k in ("observe", "actions", "next_state"))
    if bug == "none":     # every run goes to its end: every state and transition, each once
        assert asked == (len(graph.states), len(graph.states), len(graph.edges))
    else:                 # runs stop at the divergence
        assert asked[0] <= len(graph.states) and asked[1] <= len(graph.states) and asked[2] <= len(graph.edges)
    assert remembering[2] == [[st.state for st in replay_path(model, acts, init)] for init, acts in traces]
    monkeypatch.setattr(conform, "MEMO_LIMIT", 3)
    forgetful = CountingPair(cfg["max_writes"], cfg["max_failovers"], cfg)
    again = answers(Harness(forgetful, PairSystem, cfg, vocabulary=[a for _, acts in traces for a in acts]))
    assert again[:3] == remembering[:3]
    assert again[3]["observe"] > remembering[3]["observe"]
    assert (bug == "none") == (remembering[1] is None)


def test_probing_catches_an_action_only_the_implementation_enables():
    path = [APPEND, FAILOVER, APPEND]
    cfg = resolve(FAMILY, "tiny", {"bug": "failover-unbounded"})
    model = FAMILY.build(cfg)
    assert Harness(model, PairSystem, cfg).run(path) is None          # without a vocabulary: unseen
    vocabulary = [a for _, a, _ in explore(model).edges]
    h = Harness(model, PairSystem, cfg, vocabulary=vocabulary)
    d = h.run(path, source="hand-made")
    assert (d.kind, d.step, d.extra, d.actions) == (EXTRA, 2, FAILOVER, (APPEND, FAILOVER))
    assert d.render().startswith("DIVERGENCE after step 2 of hand-made: the implementation enables Failover()")
    assert [j for j, _, _ in d.context] == [1, 2]
    small = shrink(h, d)
    assert small.actions == (FAILOVER,) and small.kind == EXTRA and small.step == 1
    assert h.run(path[:2]) is None              # each model state is probed once per harness ...
    assert shrink(h, d).actions == (FAILOVER,)  # ... except while shrinking

    class Bounded(PairSystem):
        bounded = {"Failover": "the model bounds failovers (max_failovers); the implementation does not"}
    assert Harness(model, Bounded, cfg, vocabulary=vocabulary).run(path) is None


class Settling(PairSystem):
    """Left alone, the follower catches up and the HW moves: in this order, one the
    model does not know (it may interleave them otherwise)."""

    own_actions = {"Replicate": "the follower's fetcher", "AdvanceHw": "the leader's HW"}
    forget_hw = False

    def settle(self):
        f = self.follower()
        while self.enabled(rep(f.node_id)):
            self.apply(rep(f.node_id))
        if self.enabled(HW) and not self.forget_hw:
            self.apply(HW)


def test_settling_must_end_where_the_model_can_come_to_rest():
    cfg = resolve(FAMILY, "tiny", {})
    model = FAMILY.build(cfg)
    cover = covering_set(explore(model))
    h = Harness(model, Settling, cfg, settle=True)
    assert all(h.run(acts, init) is None for init, acts in cover.traces)
    assert h.quiet and all(h.quiet.values())         # every end state has a quiet state within reach

    class ForgetsHw(Settling):
        forget_hw = True
    path = [APPEND, APPEND]
    assert Harness(model, ForgetsHw, cfg).run(path) is None                 # settling off: unseen
    d = Harness(model, ForgetsHw, cfg, settle=True).run(path, source="hand-made")
    assert (d.kind, d.step, d.changes) == (SETTLED, 2, [("hw", 2, 0)])
    assert d.summary == "diverges after step 2, left to settle: hw: model 2, implementation 0"
    assert d.render().startswith("DIVERGENCE after step 2 of hand-made, left to settle")
    assert shrink(Harness(model, ForgetsHw, cfg, settle=True), d).actions == (APPEND,)

    class Crashes(Settling):
        def settle(self):
            raise RuntimeError("did not settle")
    d = Harness(model, Crashes, cfg, settle=True).run([APPEND])
    assert (d.kind, d.step) == (RAISED, 1) and "while it settled after the last step" in d.detail


def test_settling_is_a_search_of_the_core_with_its_limit_and_its_model_errors(monkeypatch):
    """Settling runs the search core on the model's view from the last state
    (checker.fromstate): a model that raises there fails as it fails in kmc check,
    and a settling search beyond the limit is a model error that says so."""
    cfg = resolve(FAMILY, "tiny", {})
    model = FAMILY.build(cfg)
    h = Harness(model, Settling, cfg, settle=True)
    assert h.run([APPEND]) is None and h.sample_left < SAMPLE_SIZE   # the contract was checked on its successors

    class Raises(type(model)):
        def next_state(self, s, a):
            if a.name.startswith("Replicate"):
                raise KeyError("boom")
            return super().next_state(s, a)
    broken = FAMILY.build(cfg)
    broken.__class__ = Raises
    with pytest.raises(ModelError, match=r"model error: next_state\(state, action\) raised KeyError: 'boom' for "
                                         r"action Replicate"):
        Harness(broken, Settling, cfg, settle=True).run([APPEND])

    monkeypatch.setattr("checker.conform.SETTLE_LIMIT", 1)
    with pytest.raises(ModelError, match="settling explored more than 1 model states from one state"):
        Harness(model, Settling, cfg, settle=True).run([APPEND])


def test_initial_state_divergence():
    class Late(PairSystem):
        def __init__(self, config):
            super().__init__(config)
            self.high_watermark = 1
    cfg = resolve(FAMILY, "tiny", {})
    d = Harness(FAMILY.build(cfg), Late, cfg).run([APPEND])
    assert (d.kind, d.step, d.changes) == (INITIAL, 0, [("hw", 0, 1)])


def test_random_walk_catches_a_bug_and_the_saved_path_reproduces(tmp_path):
    h = harness("deeper", bug="hw-past-follower")
    d = random_walks(h, walks=15, depth=15)
    assert d is not None and d.kind == STATE and d.changes[0][0] == "hw"
    again = random_walks(harness("deeper", bug="hw-past-follower"), walks=15, depth=15)
    assert again.actions == d.actions                       # derandomized: the same walk every run
    small = shrink(h, d)
    assert len(small.actions) == 4
    path = save(h, small, tmp_path / "traces", family_ref="tests.conform_toys:FAMILY", preset="deeper",
                label="walk")
    trace = load_trace(path)
    assert trace.property_name == "Conformance" and [s.action for s in trace.steps[1:]] == list(small.actions)
    assert harness("deeper", bug="hw-past-follower").run([s.action for s in trace.steps[1:]]) is not None
    assert random_walks(harness("deeper"), walks=15, depth=15) is None


# ------------------------------------------------------------------------- CLI

def test_cli_preset_conforms():
    r = kmc("conform", *MODEL, "--preset", "deeper", "--walks", "5", "--depth", "10", "--known", "nowhere")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "state graph: 321 states, 544 transitions" in out
    assert "transitions covered: 544/544 (100%)" in out and "verdict: CONFORMS" in out
    assert "random walks: 5 of at most 10 steps" in out
    assert "requests: a count of requests served" in out       # the ignored fields are listed


def test_cli_walks_only_when_the_graph_is_too_large(tmp_path):
    r = kmc("conform", *MODEL, "--preset", "deeper", "--set", "bug=hw-past-follower", "--max-states", "10",
            "--walks", "30", "--depth", "20", "--traces-dir", tmp_path, "--quiet")
    assert r.returncode == 1 and "random walks only" in r.stdout and "divergence in a random walk" in r.stdout
    assert "shrunk from" in r.stdout or "not shrunk" in r.stdout
    assert len(list(tmp_path.glob("Conformance-deeper-custom-*.json"))) == 1


def test_cli_divergence_is_shrunk_saved_and_reproduces(tmp_path):
    r = kmc("conform", *MODEL, "--preset", "deeper", "--set", "bug=truncate-off-by-one", "--traces-dir",
            tmp_path / "traces", "--quiet")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "DIVERGENCE at step" in r.stdout and "logs[0]: [] -> [1]" in r.stdout
    saved = sorted((tmp_path / "traces").glob("Conformance-deeper-custom-*.json"))
    assert len(saved) == 1 and f"reproduce: kmc conform {saved[0]}" in r.stdout
    assert r.stderr.strip().endswith("--quiet)") and len(r.stderr.strip().splitlines()) == 1
    doc = json.loads(saved[0].read_text())
    assert [s["action"]["name"] for s in doc["steps"][1:]] == ["Append", "Failover"]
    assert doc["config"]["bug"] == "truncate-off-by-one"
    again = kmc("conform", saved[0], *MODEL, "--traces-dir", tmp_path / "traces")
    assert again.returncode == 1 and "DIVERGENCE at step 2" in again.stdout
    assert sorted((tmp_path / "traces").glob("*.json")) == saved             # nothing new, nothing overwritten
    fixed = dict(doc, config=dict(doc["config"], bug="none"))
    (tmp_path / "fixed.json").write_text(json.dumps(fixed))
    ok = kmc("conform", tmp_path / "fixed.json", *MODEL)
    assert ok.returncode == 0 and "conforms (2 steps)" in ok.stdout


def test_cli_probe_finds_an_extra_action_and_the_trace_keeps_it(tmp_path):
    ok = kmc("conform", *MODEL, "--preset", "failover-unbounded", "--known", "nowhere")
    assert ok.returncode == 0 and "verdict: CONFORMS" in ok.stdout        # not probed by default
    r = kmc("conform", *MODEL, "--preset", "failover-unbounded", "--probe", "--traces-dir", tmp_path, "--quiet")
    assert r.returncode == 1 and "after step 1" in r.stdout and "enables Failover()" in r.stdout, r.stdout
    saved = next(tmp_path.glob("*.json"))
    assert json.loads(saved.read_text())["probe"] == [{"name": "Failover", "args": {}}]
    assert kmc("conform", saved, *MODEL, "--traces-dir", tmp_path).returncode == 1     # the trace probes by itself
    assert list(tmp_path.glob("*.json")) == [saved]


def _said(r, traces) -> tuple:
    """What a kmc conform run said and saved, without its timings, its --traces-dir
    and the steps note of --share-prefixes."""
    out = re.sub(r"\(\d+\.\d s\)|; \d+ steps run, each shared prefix once", "", r.stdout)
    saved = {p.name: p.read_text() for p in sorted(traces.glob("*.json"))}   # the command that made it, too

    def plain(text: str) -> str:
        return text.replace(" --share-prefixes", "").replace(str(traces), "DIR")
    return r.returncode, plain(out), plain(r.stderr), {name: plain(doc) for name, doc in saved.items()}


@pytest.mark.parametrize("bug, probe", [("none", False), ("none", True), *((b, False) for b in sorted(BUGS)),
                                        ("failover-unbounded", True)])
def test_cli_shared_prefixes_say_and_save_what_trace_by_trace_does(tmp_path, bug, probe):
    """--share-prefixes: the same verdict, divergence, shrunk trace and message
    (checker.prefixes, proved on its own in tests/test_prefixes.py)."""
    runs = []
    for i, extra in enumerate(([], ["--share-prefixes"])):
        args = [*MODEL, "--preset", "deeper", "--set", f"bug={bug}", "--traces-dir", tmp_path / str(i), "--quiet",
                *(["--probe"] if probe else []), *extra]
        runs.append(kmc("conform", *args))
        assert runs[-1].returncode == (0 if bug == "none" else 1), runs[-1].stdout + runs[-1].stderr
    assert _said(runs[0], tmp_path / "0") == _said(runs[1], tmp_path / "1")
    if bug == "none":
        steps = [int(m) for m in re.findall(r"(\d+) steps run, each shared prefix once", runs[1].stdout)]
        total = int(re.search(r"replayed \d+ traces, (\d+) steps", runs[1].stdout).group(1))
        assert len(steps) == 1 and steps[0] < total / 2, runs[1].stdout


def test_cli_trace_that_no_longer_fits_the_model(tmp_path):
    r = kmc("conform", *MODEL, "--preset", "hw-past-follower", "--traces-dir", tmp_path, "--quiet")
    doc = json.loads(next(tmp_path.glob("*.json")).read_text())
    doc["steps"] = doc["steps"][:1] + doc["steps"][2:]          # drop the first Append
    for i, s in enumerate(doc["steps"]):
        s["index"] = i
    (tmp_path / "cut.json").write_text(json.dumps(doc))
    r = kmc("conform", tmp_path / "cut.json", *MODEL)
    assert r.returncode == 1 and "is not enabled in the model" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("key, value, needle", [
    ("max_writes", "two", "config key 'max_writes' expects an integer"),
    ("max_writes", 9, "'max_writes' = 9 is out of range"),
    ("gone", 1, "unknown config key 'gone'"),
])
def test_cli_a_recorded_config_the_model_takes_no_more_is_exit_1_in_conform_and_replay(tmp_path, key, value,
                                                                                       needle):
    """A trace's config that no longer resolves is a trace that no longer fits the
    model (exit 1), in kmc conform as in kmc replay; conform said bad input (2)."""
    h = harness("deeper", bug="hw-past-follower")
    d = shrink(h, random_walks(h, walks=15, depth=15))
    doc = json.loads(save(h, d, tmp_path / "traces", family_ref="tests.conform_toys:FAMILY", preset="deeper",
                          label="walk").read_text())
    doc["config"][key] = value
    (tmp_path / "t.json").write_text(json.dumps(doc))
    for command in ("conform", "replay"):
        r = kmc(command, tmp_path / "t.json", *MODEL)
        assert r.returncode == 1 and "no longer fits" in r.stdout + r.stderr and needle in r.stdout + r.stderr, \
            (command, r.stdout + r.stderr)
        assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args, needle", [
    ((), "nothing to replay"),
    ((*MODEL, "--preset", "nope"), "unknown preset 'nope'"),
    (("--model", "tests.conform_toys:NO_IMPL", "--preset", "tiny"), "has no implementation"),
    (("--set", "bug=none", "README.md"), "--set needs --preset"),
    (("--share-prefixes", "README.md"), "--share-prefixes needs --preset P"),
    (("README.md",), "trace file 'README.md': not valid JSON"),
    ((*MODEL, "--preset", "deeper", "--max-states", "10"), "or replay random walks only (--walks N)"),
])
def test_cli_bad_input_is_one_line_exit_2(args, needle):
    r = kmc("conform", *args)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in r.stderr
    assert lines[0].endswith(")") and "(reproduce: kmc conform" in lines[0]
