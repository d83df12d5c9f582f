"""The Spark side of one search: the model's broadcast, the levels' RDDs and the
Spark jobs of a level (checker.spark.expand and checker.spark.merge run inside them).

One level is one job: the expand tasks (map side) bucket the successors by
destination, ``partitionBy`` with our own partitioner carries them, and the merge
tasks (reduce side) run over a partitioner-aware union of the visited sets and
what each partition received, so that the visited set never moves.  The other
jobs are small: counting a stopped level again up to its stop event, finding the
``max_states`` rank, the level at ``max_depth``, a few parent links.  Every job
reports through an accumulator of per-task statistics, never by collecting
states.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import numpy as np

from checker.spark import expand, merge, tasks
from checker.spark.session import run_job
from checker.spark.tasks import KEY_BYTES, PH_PROP, ident


def _sum_into(total: dict, part: dict) -> None:
    for k, v in part.items():
        total[k] = total.get(k, 0) + v


class Jobs:
    """The Spark jobs of one search on ``sc`` over ``n`` partitions, with the
    model's broadcast ``bc``; it owns what it broadcasts and persists
    (``release``).  ``placed``: the model places states itself, so a state's
    partition cannot be told from its fingerprint."""

    def __init__(self, sc: Any, n: int, bc: Any, placed: bool = False) -> None:
        self.sc, self.n, self.bc = sc, n, bc
        self.placed = placed           # the model places states (Model.partition_key), not fingerprint % n
        self.known_bcs: list = []      # the visited fingerprints, one broadcast per level (tasks.Context)
        self.rdds: list = []

    # -- what the search keeps -----------------------------------------------------------

    def publish(self, fps) -> None:
        """Broadcast the fingerprints of states just visited, so that the next
        levels drop a successor among them before it is shipped (tasks.Context)."""
        if len(fps):
            self.known_bcs.append(self.sc.broadcast(fps))

    def known(self) -> tuple:
        return tuple(enumerate(self.known_bcs))

    def keep(self, rdd):
        from pyspark import StorageLevel
        rdd.persist(StorageLevel.MEMORY_AND_DISK)
        rdd.localCheckpoint()
        self.rdds.append(rdd)
        return rdd

    def drop(self, rdd) -> None:
        try:
            rdd.unpersist()
        except Exception:  # noqa: BLE001
            pass
        if rdd in self.rdds:
            self.rdds.remove(rdd)

    def release(self) -> None:
        """Unpersist every RDD and destroy every broadcast of the search."""
        for r in self.rdds:
            try:
                r.unpersist()
            except Exception:  # noqa: BLE001
                pass
        for b in [self.bc] + self.known_bcs:
            try:
                b.destroy()
            except Exception:  # noqa: BLE001
                pass

    def held_bytes(self, L) -> int:
        """What Spark's block manager holds for ``L`` (memory and disk)."""
        if L is None:
            return 0
        try:
            rid = L.id()
            return sum(int(i.memSize()) + int(i.diskSize()) for i in self.sc._jsc.sc().getRDDStorageInfo()
                       if int(i.id()) == rid)
        except Exception:  # noqa: BLE001 - a developer API; the figure is informative only
            return 0

    # -- jobs ----------------------------------------------------------------------------

    def parts(self, records: list):
        """The partitions' RDD of ``records`` (checker.spark.handoff.part_records)."""
        L = self.keep(self.sc.parallelize(records, self.n).partitionBy(self.n, ident))
        run_job(L._jrdd.count)
        return L

    def visited_fps(self, L) -> np.ndarray:
        return np.concatenate([np.zeros(0, dtype=np.int64)] + run_job(L.mapPartitions(tasks.visited_fps).collect))

    def _stats(self, what: tuple[str, ...], level: int, acc: Any) -> list[list]:
        stats = acc.value
        out = [[stats[(w, level, p)] for p in range(self.n) if (w, level, p) in stats] for w in what]
        if any(len(o) != self.n for o in out):
            raise RuntimeError(f"kmc spark engine: level {level}: statistics of "
                               f"{'+'.join(str(len(o)) for o in out)} tasks, expected {self.n} of each")
        return out

    def expand(self, L, params: dict) -> tuple[Any, list, list, float]:
        """Expand the level in ``L``: the next level's RDD (kept), the expand and
        merge tasks' statistics, and the job's seconds."""
        n = self.n
        acc = self.sc.accumulator({}, tasks.StatsParam())
        shuffled = L.mapPartitionsWithIndex(partial(expand.expand, params, self.bc, acc)).partitionBy(n, ident)
        union = L.union(shuffled)
        if union.getNumPartitions() != n:
            raise RuntimeError("kmc spark engine: the visited set and the shuffled successors are not "
                               "partitioned alike (union of %d partitions)" % union.getNumPartitions())
        L2 = union.mapPartitionsWithIndex(partial(merge.merge, params, self.bc, acc), preservesPartitioning=True)
        L2 = self.keep(L2)
        t1 = time.perf_counter()
        run_job(L2._jrdd.count)
        seconds = time.perf_counter() - t1
        ex, mg = self._stats(("expand", "merge"), params["level"], acc)
        return L2, ex, mg, seconds

    def count_until(self, L, L2, params: dict, stop: tuple):
        """(generated, action counts, new states, enabled counts, new states per
        action) of the level up to the stop event, as the local engine counts them
        when it stops there (``params``: the level's, see engine._Run._params)."""
        key, phase = stop
        if len(key) == KEY_BYTES * (params["level"] + 1):   # a state-level event (deadlock): nothing of it counts
            tbound = (key + b"\x00" * KEY_BYTES, False)
            nbound = tbound
        else:                   # a transition: it is counted; its state is stored only if checked (phase PROP)
            tbound = (key, True)
            nbound = (key, phase >= PH_PROP)
        acc = self.sc.accumulator({}, tasks.StatsParam())
        params = dict(params, bound=tbound, sample=0)
        run_job(L.mapPartitionsWithIndex(partial(expand.expand, params, self.bc, acc))._jrdd.count)
        (ex,) = self._stats(("expand",), params["level"], acc)
        counts: dict[str, int] = {}
        enabled: dict[str, int] = {}
        for e in ex:
            _sum_into(counts, e["acts"])
            _sum_into(enabled, e["enabled"])
        below = L2.mapPartitionsWithIndex(partial(tasks.count_keys_below, {"bound": nbound})).collect()
        new_by: dict[str, int] | None = {}
        for _, _, by in below:
            if by is None:
                new_by = None
                break
            _sum_into(new_by, by)
        return sum(e["gen"] for e in ex), counts, sum(c for _, c, _ in below), enabled, new_by

    def kth_key(self, L2, k: int) -> bytes:
        """The k-th smallest (1-based) order key among the new states of the level:
        where max_states stops the local engine.  A distributed sort; only one key
        comes back to the driver."""
        keys = L2.mapPartitions(tasks.frontier_keys)
        ranked = keys.sortBy(lambda x: x, numPartitions=self.n).zipWithIndex()
        hit = ranked.filter(lambda kv, k=k: kv[1] == k - 1).keys().collect()
        if len(hit) != 1:
            raise RuntimeError(f"kmc spark engine: max_states: no new state of rank {k}")
        return hit[0]

    def boundary(self, L, params: dict) -> list:
        """The expand tasks' statistics of the level at max_depth (not expanded)."""
        acc = self.sc.accumulator({}, tasks.StatsParam())
        run_job(L.mapPartitionsWithIndex(partial(expand.expand, params, self.bc, acc))._jrdd.count)
        (out,) = self._stats(("expand",), params["level"], acc)
        return out

    def links(self, L, fps: set[int]) -> dict[int, tuple[int, int]]:
        """Parent links of ``fps``, read from the partitions that hold them."""
        parts = list(range(self.n)) if self.placed else sorted({fp % self.n for fp in fps})
        rows = self.sc.runJob(L, partial(tasks.lookup, frozenset(fps)), parts)
        return {fp: (par, act) for fp, par, act in rows}
