"""Helpers for the Spark engine's tests (not a test module).

One SparkContext per test module (``spark_module(master)`` makes the fixture),
and ``same(model, sc, ...)``: run the local engine and the Spark engine on the same
model and arguments and compare everything they report, action coverage included.
``sign_level(level)`` signs a checkpoint level again with the session's key.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from checker import bfs
from checker.graph import GraphBuilder

ROOT = Path(__file__).resolve().parent.parent


def spark_context(master: str, partitions: int):
    from checker.spark.session import get_context

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("KMC_SPARK_LOG_LEVEL", "ERROR")
    sc, created = get_context(master, partitions)
    assert created, "a SparkContext was left running by another test module"
    return sc


def spark_module(master: str, partitions: int = 2):
    """A module-scoped fixture: one SparkContext on ``master``, stopped afterwards."""

    @pytest.fixture(scope="module")
    def sc():
        ctx = spark_context(master, partitions)
        try:
            yield ctx
        finally:
            ctx.stop()

    return sc


def summary(r) -> dict:
    """Everything an engine reports that must not depend on the engine."""
    st = r.stats
    return {
        "verdict": r.verdict,
        "distinct": st.distinct,
        "generated": st.generated,
        "depth": st.depth,
        "complete": st.complete,
        "action_counts": dict(sorted(st.action_counts.items())),
        "witnesses": dict(sorted(st.witnesses.items())),
        # per action: expanded states that enable it, transitions, new states (checker.coverage)
        "coverage": None if st.coverage is None else
        {k: None if c is None else dict(sorted(c.items()))
         for k, c in (("enabled", st.coverage.enabled), ("taken", st.coverage.taken), ("new", st.coverage.new))},
        "violations": [
            (v.property, v.kind, v.message,
             [(None if s.action is None else str(s.action), s.fingerprint) for s in v.path])
            for v in r.violations
        ],
    }


def same(model, sc, partitions: int | None = None, driver_states: int = 0, chunk: int | None = None, **kwargs):
    """Check ``model`` with both engines; assert equal summaries; return both results.
    Every level runs on the partitions unless ``driver_states`` says otherwise (the
    engine's default runs the narrow first levels on the driver); ``chunk``: the
    successors pickled together on the wire (the engine's default unless given)."""
    from checker.spark import check as spark_check

    local = bfs.check(model, **kwargs)
    if chunk is not None:
        kwargs["chunk"] = chunk
    spark = spark_check(model, sc=sc, partitions=partitions, driver_states=driver_states, **kwargs)
    assert summary(spark) == summary(local)
    return local, spark


def sign_level(level: Path, edit=None) -> None:
    """Sign a checkpoint level again with the key ``KMC_CHECKPOINT_KEY_FILE`` names,
    as a run holding the key would: its meta line changed by ``edit(meta)`` first,
    then the size and signature of every partition file and of the line recomputed,
    in the current format version.  For the tests that edit a checkpoint as its
    owner, and for a checkpoint kept in tests/data from before checkpoints were signed."""
    from checker.spark.checkpoint import VERSION, sign, signing_key

    key = signing_key(create=True)
    f = level / "meta" / "part-00000"
    meta = json.loads(f.read_text())
    meta.pop("digest", None)
    if edit is not None:
        edit(meta)
    meta["version"] = VERSION
    meta["parts"] = {p.name: [p.stat().st_size, sign(key, p.read_bytes())]
                     for p in sorted((level / "parts").glob("part-*"))}
    meta["digest"] = sign(key, json.dumps(meta, sort_keys=True).encode())
    f.write_text(json.dumps(meta, sort_keys=True) + "\n")
    (level / "meta" / ".part-00000.crc").unlink(missing_ok=True)


class Recorder(GraphBuilder):
    """A graph builder that also records the dead ends it is shown (``same_graph``)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.ends: list = []

    def dead_end(self, fp, state) -> None:
        self.ends.append((fp, state))


def graph_dump(builder) -> dict:
    """Everything a graph builder holds; each edge's action also as it prints, since
    equal actions may print apart (``True == 1``) and a trace shows the print."""
    g = builder.graph
    return {"states": g.states, "initial": g.initial, "edges": g.edges,
            "actions": [str(a) for _s, a, _d in g.edges], "depth": g.depth, "parent": g.parent,
            "fingerprints": g.fingerprints, "complete": g.complete, "unexpanded": g.unexpanded,
            "ends": builder.ends, "overflow": builder.overflow}


def same_graph(model, sc, partitions: int | None = None, driver_states: int = 0, builder: dict | None = None,
               **kwargs):
    """Check ``model`` with both engines, each with a graph builder as its visitor:
    assert the same answers (or the same error), the same graph, node for node and
    edge for edge, the same dead ends, and the same liveness lassos on it; return
    the Spark engine's graph."""
    from checker.liveness import check_liveness, to_violation
    from checker.spark import check as spark_check

    out = []
    for run in (lambda v: bfs.check(model, visitor=v, **kwargs),
                lambda v: spark_check(model, sc=sc, partitions=partitions, driver_states=driver_states,
                                      visitor=v, **kwargs)):
        v = Recorder(**(builder or {}))
        try:
            got = summary(run(v))
        except Exception as e:  # noqa: BLE001 - the same error from both engines
            got = (type(e).__name__, str(e))
        out.append((got, graph_dump(v), v.graph))
    (a, ga, graph_l), (b, gb, graph_s) = out
    assert b == a
    assert gb == ga
    props = kwargs.get("properties")
    lassos = [summary_of(to_violation(x)) for x in check_liveness(graph_l, model, props)]
    assert [summary_of(to_violation(x)) for x in check_liveness(graph_s, model, props)] == lassos
    return graph_s, lassos


def summary_of(v) -> tuple:
    return (v.property, v.message, v.loop_start, [(None if s.action is None else str(s.action), s.fingerprint)
                                                  for s in v.path])
