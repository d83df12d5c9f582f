"""Benchmark: the Spark engine's expand and merge tasks in one process, without Spark.

Not a test.  It runs the tasks of every wide level one after the other, as Spark
would (the records pickled between them, the visited fingerprints "broadcast"
per level, the reached witnesses dropped), and the local engine on the same
safety search, in the same process: what the tasks cost beyond the local engine,
without the JVM, the Python workers' I/O or two workers competing for the cores.
``--profile`` adds cProfile's top functions of the tasks (the profiler's own
overhead doubles the times).

    python benchmarks/spark_tasks.py small:max_isr_shrinks=2 --partitions 2
    python benchmarks/spark_tasks.py small:max_isr_shrinks=2 --partitions 1 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pickle
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class _Bc:
    """What the tasks read of a Broadcast: its value."""

    def __init__(self, value) -> None:
        self.value = value


class _Acc:
    """What the tasks do with the statistics accumulator: add."""

    def __init__(self) -> None:
        self.value: dict = {}

    def add(self, d: dict) -> None:
        self.value.update(d)


def run(spec: str, n: int, profile: bool, own_copies: bool = True) -> dict:
    import numpy as np
    from pyspark import cloudpickle

    from benchmarks.engine import config_of
    from checker import bfs
    from checker.config import resolve
    from checker.fingerprint import placement_fn
    from checker.search import Search, Settings, Visitor
    from checker.spark import expand, merge
    from checker.spark.engine import DRIVER_STATES
    from checker.spark.handoff import part_records
    from spec.family import FAMILY

    preset, sets = config_of(spec)
    m = FAMILY.build(resolve(FAMILY, preset, sets))
    props = [p for p in m.properties() if p.kind != "eventually"]

    t = time.process_time()
    local = bfs.check(m, properties=props)
    local_cpu = time.process_time() - t

    place = placement_fn(m)

    class Places(Visitor):
        def __init__(self) -> None:
            self.of: dict[int, int] = {}

        def state(self, fp, state, depth, parent) -> None:
            if place is not None:
                self.of[fp] = place(state) % n

    places = Places()
    t0 = time.process_time()
    s = Search(m, props, Settings(), visitor=places)
    gc.disable()
    try:
        frontier = s.initial()
        s.explore(frontier, handoff=DRIVER_STATES)
    finally:
        gc.enable()
    frontier = s.handoff or []
    records, v_all = part_records(s.visited, frontier, n, places.of if place is not None else None)
    level = len(s.ledger.levels)
    payload = cloudpickle.dumps((m, props, True))
    known = [(0, _Bc(v_all))]
    parts = {p: pickle.dumps(v, pickle.HIGHEST_PROTOCOL) for p, v in records}
    distinct = len(s.visited)
    wits = [i for i, p in enumerate(props) if p.kind == "sometimes"]
    cpu = {"expand": 0.0, "merge": 0.0, "records": 0.0}
    prof = cProfile.Profile() if profile else None
    shipped = 0
    while frontier:
        params = {"token": "bench", "level": level, "n": n, "sample": 0, "chunk": 200, "placed": place is not None,
                  "own_copies": own_copies,
                  "steps": tuple(i for i, p in enumerate(props) if p.step),
                  "props": tuple(i for i, p in enumerate(props) if p.kind == "always" and not p.step),
                  "witnesses": tuple(wits), "deadlock": True, "known": tuple(known)}
        acc = _Acc()
        inbox: dict[int, list] = {p: [] for p in range(n)}
        for p in range(n):
            t = time.process_time()
            part = pickle.loads(parts[p])
            cpu["records"] += time.process_time() - t
            if prof:
                prof.enable()
            t = time.process_time()
            out = list(expand.expand(params, payload, acc, p, [(p, part)]))
            cpu["expand"] += time.process_time() - t
            if prof:
                prof.disable()
            t = time.process_time()
            for d, rec in out:
                inbox[d].append(pickle.dumps((d, rec), pickle.HIGHEST_PROTOCOL))
            cpu["records"] += time.process_time() - t
        new, new_fps = 0, []
        for p in range(n):
            t = time.process_time()
            recs = [(p, pickle.loads(parts[p]))] + [pickle.loads(b) for b in inbox[p]]
            cpu["records"] += time.process_time() - t
            if prof:
                prof.enable()
            t = time.process_time()
            _, new_part = next(merge.merge(params, payload, acc, p, recs))
            cpu["merge"] += time.process_time() - t
            if prof:
                prof.disable()
            st = acc.value[("merge", level, p)]
            wits = [w for w in wits if w not in st["events"]]
            new += st["new"]
            shipped += st["received"]
            new_fps.append(st["new_fps"])
            t = time.process_time()
            parts[p] = pickle.dumps(new_part, pickle.HIGHEST_PROTOCOL)
            cpu["records"] += time.process_time() - t
        distinct += new
        if not new:
            break
        known.append((len(known), _Bc(np.concatenate(new_fps))))
        level += 1
    whole = time.process_time() - t0
    if distinct != local.stats.distinct:
        sys.exit(f"benchmark: the tasks found {distinct} states, the local engine {local.stats.distinct}")
    if prof:
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(30)
    return {"configuration": spec, "partitions": n, "own_copies": own_copies, "distinct": distinct, "shipped_per_distinct": round(shipped / distinct, 3),
            "local_cpu": round(local_cpu, 2), "tasks_cpu": round(whole, 2),
            "tasks_over_local": round(whole / local_cpu, 3), **{k: round(v, 2) for k, v in cpu.items()},
            "load": os.getloadavg()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configuration", nargs="?", default="small:max_isr_shrinks=2")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--profile", action="store_true", help="cProfile the tasks (top 30 by own time, on stderr)")
    ap.add_argument("--no-own-copies", action="store_true",
                    help="read every new state from the winner's copy (checker.spark.merge.own_copies off)")
    args = ap.parse_args()
    if args.partitions < 1:
        sys.exit("benchmark: --partitions must be at least 1")
    print(json.dumps(run(args.configuration, args.partitions, args.profile, not args.no_own_copies)))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
