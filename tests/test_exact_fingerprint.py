"""Model.exact_fingerprint: a model's own fingerprints change nothing but the cost.

The toys with ``exact=true`` give them (tests/toys.py); a search of each gives the
counts, depths, levels, coverage, verdicts and counterexample paths of the same toy
with blake2b digests, on the local engine, the graph builder, conformance's
searches (through checker.fromstate) and replay; a hook that breaks the contract
is a model error that names it."""

from __future__ import annotations

import pytest

from checker import bfs
from checker.errors import ModelError
from checker.fingerprint import fingerprint, fingerprint_fn
from checker.fromstate import from_state
from checker.graph import explore
from checker.search import Search, Settings
from tests import cli_support
from tests.toys import Chain, DieHard, ExactChain, ExactDieHard, ExactGrid, Grid, Pos


def summary(r) -> dict:
    st = r.stats
    return {"verdict": r.verdict, "distinct": st.distinct, "generated": st.generated, "depth": st.depth,
            "complete": st.complete, "counts": st.action_counts, "witnesses": st.witnesses,
            "levels": [(lv["level"], lv["frontier"], lv["new"], lv["distinct"]) for lv in st.levels],
            "violations": [(v.property, v.message, [(s.action, s.state) for s in v.path]) for v in r.violations]}


PAIRS = [(Grid(30), ExactGrid(30)), (Grid(12, 9), ExactGrid(12, 9)), (DieHard(), ExactDieHard()),
         (DieHard(solve=True), ExactDieHard(solve=True)), (Chain(4), ExactChain(4)),
         (Grid(6, corner_terminal=False), ExactGrid(6, corner_terminal=False))]


@pytest.mark.parametrize("plain, exact", PAIRS, ids=["grid", "grid-sum", "diehard", "diehard-solve",
                                                      "chain-deadlock", "grid-corner-deadlock"])
def test_the_same_search_as_with_digests(plain, exact):
    a = bfs.check(plain, settings=Settings(keep_going=True))
    b = bfs.check(exact, settings=Settings(keep_going=True))
    assert summary(a) == summary(b)
    for v in b.violations:                      # the path's fingerprints are the model's own
        assert [s.fingerprint for s in v.path] == [exact.exact_fingerprint(s.state) for s in v.path]
    ga, gb = explore(plain), explore(exact)
    assert (ga.states, ga.edges, ga.depth, ga.parent) == (gb.states, gb.edges, gb.depth, gb.parent)
    assert gb.fingerprints == [exact.exact_fingerprint(s) for s in gb.states]


def test_every_fingerprint_function_returns_the_models_own():
    m = ExactGrid(5)
    assert fingerprint(m, Pos(2, 3)) == fingerprint_fn(m)(Pos(2, 3)) == 2 << 11 | 3
    view = from_state(m, Pos(1, 1), keep={"IncX"})
    assert fingerprint_fn(view)(Pos(4, 1)) == 4 << 11 | 1
    assert Search(view, [], Settings(check_deadlock=False)).run().stats.distinct == 5


class Wrong(Grid):
    def __init__(self, n, value):
        super().__init__(n)
        self.value = value

    def exact_fingerprint(self, s):
        return self.value(s)


@pytest.mark.parametrize("value, needle", [
    (lambda s: str(s.x), r"exact_fingerprint\(state\) returned '0' \(str\); it must return an int in the signed "
                         r"64-bit range"),
    (lambda s: 1 << 64 if s.x else 0, r"returned 18446744073709551616 \(int\)"),
    (lambda s: True, r"returned True \(bool\)"),
    (lambda s: 1 // s.y, r"model error: exact_fingerprint\(state\) \(state from init_states\) raised ZeroDivisionError"),
])
def test_a_hook_that_breaks_the_contract_is_a_model_error(value, needle):
    with pytest.raises(ModelError, match=needle):
        bfs.check(Wrong(3, value))


def test_kmc_check_and_replay_with_exact_fingerprints(tmp_path):
    r = cli_support.kmc("check", "--model", "tests.toys:FAMILY", "--preset", "broken", "--set", "exact=true",
                        "--traces-dir", tmp_path, timeout=120)
    assert r.returncode == 1 and "BigNot4" in r.stdout, r.stdout + r.stderr
    trace, = tmp_path.glob("*.json")
    again = cli_support.kmc("replay", trace, "--model", "tests.toys:FAMILY", timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "every fingerprint matches" in again.stdout and "'BigNot4' is still violated" in again.stdout
