"""The known-anomaly table of docs/results.md, pinned: one row per variant, the same
bounds for every truncation rule.  Each row gives the first property the search
finds violated (the shortest counterexample over all properties), the shortest
counterexample for the data-loss property, and the distinct states explored."""

from __future__ import annotations

import pytest

from checker.bfs import check
from checker.config import resolve
from checker.result import OK, VIOLATED
from spec.family import FAMILY


def run(preset, only=None):
    m = FAMILY.build(resolve(FAMILY, preset, {}))
    props = None
    if only:
        props = [p for p in m.properties() if p.name == only]
    return check(m, properties=props, check_deadlock=only is None)


# preset -> (first violated property, its length, distinct states at the stop)
FIRST = {
    "data-unclean": ("LeaderElectedFromIsr", 7, 449),
    "data-hw": ("HighWatermarkBelowIsrLeo", 11, 5438),
}
# preset -> (data-loss property, shortest length)
LOSS = {
    "data-unclean": ("NoAckedRecordLost", 9),
    "data-hw": ("NoAckedRecordLost", 14),
}


@pytest.mark.parametrize("preset", sorted(FIRST))
def test_known_anomaly_first_violation(preset):
    name, length, distinct = FIRST[preset]
    r = run(preset)
    assert r.verdict == VIOLATED
    v = r.violations[0]
    assert (v.property, len(v.path) - 1, r.stats.distinct) == (name, length, distinct)


@pytest.mark.parametrize("preset", sorted(LOSS))
def test_known_anomaly_loses_acknowledged_data(preset):
    name, length = LOSS[preset]
    r = run(preset, only=name)
    assert r.verdict == VIOLATED
    v = r.violations[0]
    assert (v.property, len(v.path) - 1) == (name, length)
    # the lost record was acknowledged and the last state has a leader without it
    assert v.path[-1].state.ghost.inv_acked


@pytest.mark.slow
def test_kip320_holds_at_the_same_bounds():
    r = run("data-kip320")
    assert r.verdict == OK
    assert (r.stats.distinct, r.stats.depth) == (59616, 34)
    assert all(d is not None for d in r.stats.witnesses.values())
