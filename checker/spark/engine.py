"""The Spark engine: level-synchronous breadth-first search with the frontier and
the visited set partitioned across Spark executors by state fingerprint.

It returns what ``checker.bfs.check`` returns for the same model and arguments:
the same distinct and generated counts, depth, action counts, witnesses, verdict
and the same shortest counterexample (the same action sequence), whatever the
number of partitions or executors.  How:

- Partition ``p`` owns the states whose fingerprint is ``p`` modulo the number of
  partitions (our own partitioner; PySpark's portable_hash is never used).  Its
  visited set and parent links are numpy arrays kept in Spark's block manager (18
  bytes per state), with the frontier of the current level (see
  ``checker.spark.tasks`` for the layout).
- One Spark job per level.  Map side: every partition expands its frontier,
  checks step properties and deadlocks, deduplicates the successors it produced
  and buckets them by destination.  Reduce side: every partition merges what it
  received with its own visited set (a partitioner-aware union, so the visited set
  never moves), keeps the smallest order key of each new state, checks state
  properties and witnesses on the new states, and keeps them as its next frontier.
  The driver receives per-partition counters only.
- The order key of a state is its path of action indices; the local engine visits
  a level in exactly the order of these keys, so "the first event the local engine
  meets" is the event with the smallest key (``tasks`` module docstring).  When a
  level holds the event that stops the search (first violation, ``max_states``),
  the engine counts that level again up to that event: the counts of a stopped
  search are those of the local engine at the same point.
- Counterexamples are rebuilt from the parent links (a few look-ups, on the
  partitions that hold them), then re-derived by replaying the model on the
  driver, fingerprint by fingerprint, like the local engine does.
- The initial states, and the first levels while they hold at most
  ``driver_states`` states, are expanded on the driver by the search core
  (checker.search) itself; the contract checks and every error message come from
  the core too.

A model error found on an executor is re-derived on the driver (the state is
rebuilt from the parent links and the failing call made again) so that it is
raised with its original exception chained, as the local engine raises it.
"""

from __future__ import annotations

import gc
import json
import math
import re
import struct
import sys
import time
import uuid
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Sequence, TextIO

import numpy as np

from checker.coverage import Coverage
from checker.errors import ModelError, UsageError
from checker.fingerprint import fingerprint_fn, format_fingerprint
from checker.model import ALWAYS, Model, Property
from checker.result import BOUNDED, DEADLOCK, OK, VIOLATED, CheckResult, Stats, Step, Violation
from checker.search import (SAMPLE_SIZE, Search, Settings, StopSearch, peak_memory, replay_chain,
                            unreached_witnesses)
from checker.spark import tasks
from checker.spark.tasks import KEY_BYTES, PH_CAP, PH_DEAD, PH_PROP, PH_STEP, PH_WITNESS, error_order, ident

__all__ = ["check", "SparkCheckResult"]

_PACK = struct.Struct(">H").pack
DRIVER_STATES = 2000   # levels up to this many states run on the driver (see _Run._initial)
DEADLOCK_MESSAGE = "no action is enabled in the last state and model.is_terminal() is False"


def _order(ev: tuple) -> tuple:
    """Where the local engine meets an outcome event: by key, phase, property."""
    return (ev[0], ev[1], ev[2], 0)


@dataclass
class SparkCheckResult(CheckResult):
    """A CheckResult plus what the Spark engine measured: ``engine`` holds master,
    partitions, per-level records, executor peak memory, visited-set bytes."""

    engine: dict = field(default_factory=dict)


def check(
    model: Model,
    *,
    properties: Sequence[Property] | None = None,
    max_depth: int | None = None,
    max_states: int | None = None,
    keep_going: bool = False,
    check_deadlock: bool = True,
    progress: TextIO | None = None,
    progress_interval: float = 2.0,
    sc: Any = None,
    master: str | None = None,
    partitions: int | None = None,
    checkpoint: str | None = None,
    resume: str | None = None,
    settings: Settings | None = None,
    driver_states: int = DRIVER_STATES,
) -> SparkCheckResult:
    """Explore ``model`` on Spark; the arguments of ``checker.bfs.check`` plus:

    ``sc``: a SparkContext to run on (else the active one, else a new one on
    ``master``, default ``local[*]``); ``partitions``: how many partitions the
    state space is cut into (default: the context's default parallelism);
    ``checkpoint``: a directory (local path or Hadoop URL) where every finished
    level is saved; ``resume``: a directory written by ``checkpoint`` to go on from
    (the resumed run goes on saving there unless ``checkpoint`` names another).
    ``settings`` (a :class:`checker.search.Settings`, the local engine's), when
    given, replaces the keyword bounds; ``driver_states``: the first levels are
    expanded on the driver by the search core until one holds more than that many
    states (0: every level on Spark).  The answers are the same either way.
    """
    if settings is not None:
        max_depth, max_states, keep_going = settings.max_depth, settings.max_states, settings.keep_going
        check_deadlock, progress = settings.check_deadlock, settings.progress
        progress_interval = settings.progress_interval
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0):
        raise UsageError(f"max_depth must be a non-negative integer, not {max_depth!r}")
    if max_states is not None and (isinstance(max_states, bool) or not isinstance(max_states, int) or max_states < 1):
        raise UsageError(f"max_states must be a positive integer, not {max_states!r}")
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
        raise UsageError(f"partitions must be a positive integer, not {partitions!r}")
    if isinstance(driver_states, bool) or not isinstance(driver_states, int) or driver_states < 0:
        raise UsageError(f"driver_states must be a non-negative integer, not {driver_states!r}")
    props = list(model.properties() if properties is None else properties)
    run = _Run(model, props, max_depth, max_states, keep_going, check_deadlock, progress, progress_interval)
    run.driver_states = driver_states
    return run.execute(sc, master, partitions, checkpoint or resume, resume)


# ---------------------------------------------------------------------------------


def _job(run: Any) -> Any:
    """Run a Spark action; a failed task becomes a one-line error that says why."""
    try:
        return run()
    except Exception as e:  # noqa: BLE001
        if type(e).__name__ != "Py4JJavaError":
            raise
        text = str(e)
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        why = next((ln for ln in reversed(lines) if re.match(r"^[A-Za-z_.]*(Error|Exception)\b", ln)
                    and not ln.startswith(("org.", "java.", "scala.", "py4j."))), None)
        if why and ("ModuleNotFoundError" in why or "ImportError" in why):
            raise UsageError(f"a Spark executor could not import the model: {why}; the executors need the "
                             f"model's modules on their PYTHONPATH (kmc passes its own import path)") from None
        from checker.spark.session import failure
        known = failure(e)      # a full disk, a dead executor: one line, the stack in the log
        if known is not None:
            raise known from None
        first = next((ln for ln in lines if "Exception" in ln or "Error" in ln), lines[0] if lines else "")
        raise RuntimeError(f"a Spark job failed: {why or first[:300]}") from None


class _Visited(dict):
    """The search core's visited map when the driver takes a narrow level back
    from the partitions (``_Run._narrow``): what the core stores is in the dict, the
    partitions' states in sorted arrays under it (fingerprint, parent, action
    index; an initial state is its own parent), read by binary search."""

    def __init__(self, fp, par, act) -> None:
        super().__init__()
        self.fp, self.par, self.act = fp, par, act

    def _at(self, h: int) -> int:
        i = int(np.searchsorted(self.fp, h))
        return i if i < len(self.fp) and int(self.fp[i]) == h else -1

    def __contains__(self, h) -> bool:
        return dict.__contains__(self, h) or self._at(h) >= 0

    def __missing__(self, h: int) -> tuple:
        i = self._at(h)
        if i < 0:
            raise KeyError(h)
        p = int(self.par[i])
        return (None if p == h else p, int(self.act[i]))

    def __len__(self) -> int:
        return dict.__len__(self) + len(self.fp)


class _Run:
    def __init__(self, model, props, max_depth, max_states, keep_going, check_deadlock, progress, interval):
        self.model = model
        self.props = props
        self.max_depth = max_depth
        self.max_states = max_states
        self.keep_going = keep_going
        self.check_deadlock = check_deadlock
        self.progress = progress
        # checker.bfs's search object: validates the properties, runs the initial
        # states, words every message; it never runs the main loop here.
        self.search = Search(model, props, Settings(max_depth=max_depth, max_states=max_states, keep_going=keep_going,
                                                       check_deadlock=check_deadlock, progress_interval=interval))
        self.index = {p.name: i for i, p in enumerate(props)}
        self.fp = fingerprint_fn(model)
        self.driver_states = DRIVER_STATES
        self.levels: list[dict] = []
        self.job_seconds = 0.0
        self.exec_rss = 0
        self.exec_cpu = 0.0
        self.level_cpu = (0.0, 0.0)
        self.shipped = 0
        self.visited_bytes = 0
        self.visited_count = 0
        self.frontier_bytes = 0

    # -- driver ---------------------------------------------------------------------

    def execute(self, sc, master, partitions, checkpoint, resume) -> SparkCheckResult:
        from pyspark import cloudpickle

        from checker.spark import checkpoint as ckpt
        from checker.spark.session import get_context, ship

        try:
            payload = ship(cloudpickle, (self.model, self.props, self.check_deadlock),
                            [type(self.model)] + [p.predicate for p in self.props])
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"the Spark engine ships the model and its properties to the executors with "
                             f"cloudpickle, and pickling them raised {type(e).__name__}: {e}; make the model "
                             f"picklable or use --engine local") from e
        created = False
        t0 = time.perf_counter()
        if sc is None:
            sc, created = get_context(master, partitions)
        self.sc = sc
        self.startup = time.perf_counter() - t0
        self.n = partitions or (ckpt.partitions_of(sc, resume) if resume else None) or max(1, sc.defaultParallelism)
        self.token = uuid.uuid4().hex
        self.bc = sc.broadcast(payload)
        self.known_bcs: list = []      # the visited fingerprints, one broadcast per level (tasks.Context)
        self.rdds: list = []
        try:
            return self._execute(checkpoint, resume)
        finally:
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
            if created:
                try:
                    sc.stop()
                except Exception:  # noqa: BLE001 - a JVM already gone (Ctrl-C): what stopped it is reported
                    pass

    def _execute(self, checkpoint, resume) -> SparkCheckResult:
        from checker.spark import checkpoint as ckpt

        self.start = time.perf_counter()
        self.prior_seconds = 0.0
        self.cut = False
        self.stopped = False
        self.checkpoint = checkpoint
        if resume:
            L, state = ckpt.load(self.sc, resume, self.n, self._identity())
            self._restore(state)
            L = self._keep(L)
            self._publish(np.concatenate([np.zeros(0, dtype=np.int64)] +
                                         _job(L.mapPartitions(tasks.visited_fps).collect)))
            self._say(f"resumed from {resume}: level {self.level} done, {self.distinct} distinct states")
        else:
            L = self._initial()
            if L is None:
                return self._finish()
        self.L = None
        while self.frontier_size:
            d = self.level
            self.stored_at_level = self.distinct
            if self.max_depth is not None and d >= self.max_depth:
                self._boundary_level(L)
                break
            L2 = self._expand(L)
            if L2 is None:
                break
            self._drop(L)
            L = L2
            if self.frontier_size:
                self.level = d + 1  # else the search ends at this level, as in checker.bfs
            if self.checkpoint:
                # Named by the number of levels expanded, so a new checkpoint never
                # replaces the last complete one.
                ckpt.save(self.sc, self.checkpoint, L, self._state(), d + 1)
            if 0 < self.frontier_size <= self.driver_states:
                L = self._narrow(L)
                if L is None:
                    break
        if self.L is None:
            self.L = L
        return self._finish()

    # -- the first levels, on the driver (the search core) --------------------------------

    def _initial(self):
        """The initial states, then every level of at most ``driver_states`` states,
        expanded on the driver by the search core itself (checker.search): a Spark
        job costs a few tenths of a second whatever its size, the core a tenth of a
        millisecond per state.  The first wider level goes to the partitions, with
        the visited set, the parent links and the order keys the core's run implies.
        A search that ends (or stops) within those levels is the core's own."""
        s = self.search
        self.level = 0
        self.stored_at_level = sys.maxsize
        self.counts: dict[str, int] = {}
        # Coverage (checker.coverage): None when a resumed checkpoint did not keep it.
        self.enabled_counts: dict[str, int] | None = {}
        self.new_counts: dict[str, int] | None = {}
        self.generated = 0
        self.sample_left = SAMPLE_SIZE
        collecting = gc.isenabled()
        if collecting:
            gc.disable()    # as checker.search.Search.run does
        try:
            frontier = s.initial()
            if self.driver_states:
                s.explore(frontier, handoff=self.driver_states)
                frontier = s.handoff or []
        except StopSearch:
            frontier = None
        finally:
            if collecting:
                gc.enable()
        self._adopt(s)
        if not frontier:
            # The search ended on the driver: its parent links are the core's.
            self._init_links = dict(s.visited)
            self.L = None
            self.frontier_size = 0
            return None
        self._init_links = None
        L = self._parts(s.visited, frontier)
        if self.checkpoint:
            from checker.spark import checkpoint as ckpt
            ckpt.save(self.sc, self.checkpoint, L, self._state(), self.level)
        return L

    def _narrow(self, L):
        """A level of at most ``driver_states`` states after wide ones: the driver
        takes the visited set, the parent links and the frontier back from the
        partitions and its search core goes on from this level, until the search
        ends (None) or a level is wide again (the partitions' new RDD).  The core
        visits the frontier in key order, i.e. in the local engine's order, so it
        meets every event where the local engine does."""
        parts = [v for _, v in _job(L.collect)]
        collecting = gc.isenabled()
        if collecting:
            gc.disable()
        try:
            v_fp = np.concatenate([p[1] for p in parts])
            order = np.argsort(v_fp, kind="stable")
            visited = _Visited(v_fp[order], np.concatenate([p[2] for p in parts])[order],
                               np.concatenate([p[3] for p in parts])[order])
            rows = []
            for p in parts:
                if len(p[4]):
                    kl = len(p[5]) // len(p[4])
                    rows += [(p[5][j * kl:(j + 1) * kl], h, st)
                             for j, (h, st) in enumerate(zip(p[4].tolist(), tasks.frontier_states(p)))]
            rows.sort(key=lambda r: r[0])
            s = Search(self.model, self.props, self.search.settings)
            s.visited = visited
            s.counts = dict(self.counts)
            if self.enabled_counts is not None:
                s.enabled_counts, s.new_counts = dict(self.enabled_counts), dict(self.new_counts)
            s.found = list(self.found)
            s.found_names = {r[0] for r in self.found}
            s.witnesses = dict(self.witnesses)
            s.state_checks = [(self.props[i].name, self.props[i].predicate) for i in self.active_props]
            s.step_checks = [(self.props[i].name, self.props[i].predicate) for i in self.active_steps]
            s.wit_checks = [(self.props[i].name, self.props[i].predicate) for i in self.active_wits]
            s.sample_left = self.sample_left
            try:
                s.explore([(h, st) for _, h, st in rows], handoff=self.driver_states, depth=self.level)
            except StopSearch:
                pass
        finally:
            if collecting:
                gc.enable()
        self._adopt(s)
        self.L = L
        if s.handoff:
            self._init_links = None
            self.L = None
            L2 = self._parts(visited, s.handoff)
            self._drop(L)
            return L2
        self._init_links = visited
        self.frontier_size = 0
        return None

    def _adopt(self, s: Search) -> None:
        """The driver's counters from the core's search ``s``."""
        self.level = s.level
        self.stored_at_level = s.stored_at_level
        self.distinct = len(s.visited)
        self.counts = dict(s.counts)
        self.generated = sum(self.counts.values())
        if self.enabled_counts is not None:
            self.enabled_counts, self.new_counts = dict(s.enabled_counts), dict(s.new_counts)
        self.cut, self.stopped = s.cut, s.stopped
        self.found = list(s.found)
        self.witnesses = dict(s.witnesses)
        self.deadlock_found = DEADLOCK in s.found_names
        self.active_props = [self.index[name] for name, _ in s.state_checks]
        self.active_steps = [self.index[name] for name, _ in s.step_checks]
        self.active_wits = [self.index[name] for name, _ in s.wit_checks]
        self.sample_left = s.sample_left
        for lv in s.levels:
            self.levels.append({"level": lv["level"], "frontier": lv["frontier"], "new": lv["new"],
                                "distinct": lv["distinct"], "seconds": round(lv["seconds"], 4), "job_seconds": 0.0,
                                "task_cpu": (0.0, 0.0), "driver": True})
            self._progress_line(lv["level"], lv["frontier"], lv["new"], lv["distinct"], lv["seconds"])

    def _parts(self, visited: dict, frontier: list):
        """The partitions' RDD from the core's visited map and the level to expand
        next (``(fp, state)`` in BFS order): each partition's visited set and parent
        links, and its part of the frontier with the states' order keys (their paths
        of action indices, read back from the parent links)."""
        keys: dict[int, bytes] = {}

        def key(h: int) -> bytes:
            k = keys.get(h)
            if k is None:
                par, i = visited[h]
                if i > tasks.MAX_INDEX:
                    raise ModelError(f"a state has more than {tasks.MAX_INDEX} enabled actions (or initial "
                                     f"states); the Spark engine numbers them with 16 bits: use --engine local")
                k = keys[h] = _PACK(i) if par is None else key(par) + _PACK(i)
            return k

        n = self.n
        count = dict.__len__(visited)
        v_all = np.fromiter(visited.keys(), dtype=np.int64, count=count)
        p_all = np.fromiter((h if p is None else p for h, (p, _) in visited.items()), dtype=np.int64, count=count)
        a_all = np.fromiter((i for _, i in visited.values()), dtype=np.int64, count=count)
        if count and int(a_all.max()) > tasks.MAX_INDEX:
            key(int(v_all[int(a_all.argmax())]))    # raises
        a_all = a_all.astype(np.uint16)
        if isinstance(visited, _Visited):   # back from _narrow: the partitions' states too
            v_all = np.concatenate([visited.fp, v_all])
            p_all = np.concatenate([visited.par, p_all])
            a_all = np.concatenate([visited.act, a_all])
        owner = v_all % n
        per: list[list] = [[] for _ in range(n)]
        for h, st in frontier:
            per[h % n].append((h, key(h), st))
        records = []
        for p in range(n):
            mine = np.flatnonzero(owner == p)
            order = mine[np.argsort(v_all[mine], kind="stable")]
            rows = per[p]
            f_fp = np.array([r[0] for r in rows], dtype=np.int64)
            records.append((p, tasks.make_part(v_all[order], p_all[order], a_all[order], f_fp,
                                               b"".join(r[1] for r in rows), [r[2] for r in rows])))
        self.frontier_size = len(frontier)
        self._publish(v_all)
        L = self.sc.parallelize(records, n).partitionBy(n, ident)
        L = self._keep(L)
        _job(L._jrdd.count)
        return L

    # -- one level -------------------------------------------------------------------

    def _params(self, **extra) -> dict:
        d = self.level
        per_task = math.ceil(self.sample_left / self.n) if self.sample_left > 0 else 0
        p = {
            "token": self.token, "level": d, "n": self.n, "sample": per_task,
            "steps": tuple(self.active_steps), "props": tuple(self.active_props),
            "witnesses": tuple(self.active_wits),
            "deadlock": self.check_deadlock and not self.deadlock_found,
        }
        p.update(extra)
        return p

    def _publish(self, fps) -> None:
        """Broadcast the fingerprints of states just visited, so that the next
        levels drop a successor among them before it is shipped (tasks.Context)."""
        if len(fps):
            self.known_bcs.append(self.sc.broadcast(fps))

    def _keep(self, rdd):
        from pyspark import StorageLevel
        rdd.persist(StorageLevel.MEMORY_AND_DISK)
        rdd.localCheckpoint()
        self.rdds.append(rdd)
        return rdd

    def _drop(self, rdd) -> None:
        try:
            rdd.unpersist()
        except Exception:  # noqa: BLE001
            pass
        if rdd in self.rdds:
            self.rdds.remove(rdd)

    def _accumulator(self):
        return self.sc.accumulator({}, tasks.StatsParam())

    def _expand(self, L):
        """Expand level ``self.level``; return the next level's RDD, or None when the
        search stops at this level."""
        t0 = time.perf_counter()
        d = self.level
        n = self.n
        params = self._params(known=tuple(enumerate(self.known_bcs)))
        acc = self._accumulator()
        shuffled = L.mapPartitionsWithIndex(partial(tasks.expand, params, self.bc, acc)).partitionBy(n, ident)
        union = L.union(shuffled)
        if union.getNumPartitions() != n:
            raise RuntimeError("kmc spark engine: the visited set and the shuffled successors are not "
                               "partitioned alike (union of %d partitions)" % union.getNumPartitions())
        L2 = union.mapPartitionsWithIndex(partial(tasks.merge, params, self.bc, acc), preservesPartitioning=True)
        L2 = self._keep(L2)
        t1 = time.perf_counter()
        _job(L2._jrdd.count)
        self.job_seconds = time.perf_counter() - t1
        stats = acc.value
        ex = [stats[("expand", d, p)] for p in range(n) if ("expand", d, p) in stats]
        mg = [stats[("merge", d, p)] for p in range(n) if ("merge", d, p) in stats]
        if len(ex) != n or len(mg) != n:
            raise RuntimeError(f"kmc spark engine: level {d}: statistics of {len(ex)}+{len(mg)} tasks, expected {n}+{n}")
        self.exec_rss = max([self.exec_rss] + [e["rss"] for e in ex] + [m["rss"] for m in mg])
        self.level_cpu = (round(sum(e["cpu"] for e in ex), 3), round(sum(m["cpu"] for m in mg), 3))
        self.exec_cpu += sum(self.level_cpu)
        used = sum(max(0, params["sample"] - e["sample_left"]) for e in ex)
        new_total = sum(m["new"] for m in mg)

        # The events of the level (see checker.spark.tasks): outcomes and errors.
        deads = [x["dead"] for x in ex if x["dead"] is not None]
        dead = min(deads) if deads else None
        steps = [ev for x in ex for ev in x["steps"].values()]
        outcomes = [ev for x in mg for ev in x["events"].values()]
        fails = [ev for ev in outcomes if ev[1] == PH_PROP]
        wits = [ev for ev in outcomes if ev[1] == PH_WITNESS]
        first_of: dict[int, bytes] = {}   # property -> key of its first outcome at this level
        for ev in steps + outcomes:
            if ev[2] not in first_of or ev[0] < first_of[ev[2]]:
                first_of[ev[2]] = ev[0]
        self._first_of = first_of
        errors = [e for x in ex + mg for e in x["errors"].values() if self._relevant(e, dead)]
        cap = None
        if self.max_states is not None and self.distinct + new_total > self.max_states:
            cap = (self._kth_key(L2, self.max_states - self.distinct + 1), PH_CAP)

        stop = None
        report: list[tuple] = []   # found records, in the order the local engine finds them
        err = min(errors, key=error_order) if errors else None
        if not self.keep_going:
            cands = [_order(ev) for ev in steps + fails] + ([_order(dead)] if dead is not None else [])
            if cap is not None:
                cands.append((cap[0], cap[1], -1, 0))
            first = min(cands) if cands else None
            if err is not None and (first is None or error_order(err) < first):
                self._raise(err, L, L2)
            if first is not None:
                stop = first[:2]
                if cap is not None and stop == cap:
                    self.cut = True
                elif dead is not None and stop == dead[:2]:
                    report = [self._dead_record(dead)]
                else:
                    ev = next(ev for ev in steps + fails if _order(ev) == first)
                    report = [self._outcome_record(ev)]
                    if self.check_deadlock:
                        report = self._shorter_deadlock(first, dead, errors, L, L2) or report
                    self.stopped = True
                if report and report[0][0] == DEADLOCK:
                    self.stopped = True
        else:
            if cap is not None:
                stop = cap
                self.cut = True
            if err is not None and (stop is None or error_order(err) < (stop[0], stop[1], -1, 0)):
                self._raise(err, L, L2)
            events = [ev for ev in steps + fails if stop is None or ev[:2] < stop]
            if dead is not None and not self.deadlock_found and (stop is None or dead[:2] < stop):
                events.append(dead)
            seen = set()
            for ev in sorted(events, key=_order):
                rec = self._dead_record(ev) if ev[1] == PH_DEAD and ev[2] == -1 else self._outcome_record(ev)
                if rec[0] not in seen:
                    seen.add(rec[0])
                    report.append(rec)

        # Witnesses reached at this level (before the stop, if any).
        for ev in wits:
            name = self.props[ev[2]].name
            if self.witnesses.get(name) is None and (stop is None or ev[:2] < stop):
                self.witnesses[name] = d + 1
        known = {f[0] for f in self.found}
        for rec in report:
            if rec[0] not in known:
                self.found.append(rec)
                known.add(rec[0])
        if DEADLOCK in known:
            self.deadlock_found = True
        self.active_props = [i for i in self.active_props if self.props[i].name not in known]
        self.active_steps = [i for i in self.active_steps if self.props[i].name not in known]
        self.active_wits = [i for i in self.active_wits if self.witnesses.get(self.props[i].name) is None]
        self.sample_left = max(0, self.sample_left - used)

        self.visited_bytes = sum(m["visited_bytes"] for m in mg)
        self.visited_count = sum(m["visited"] for m in mg)
        self.shipped = sum(m["received"] for m in mg)
        if stop is not None:
            gen, counts, new, enabled, new_by = self._count_until(L, L2, stop)
            self._add_counts(gen, counts)
            self._add_coverage([enabled], [new_by])
            self.distinct += new
            self.frontier_size = 0
            self._level_done(d, sum(e["frontier"] for e in ex), new, t0)
            self.L = L2
            return None
        gen = sum(e["gen"] for e in ex)
        counts: dict[str, int] = {}
        for e in ex:
            for k, v in e["acts"].items():
                counts[k] = counts.get(k, 0) + v
        self._add_counts(gen, counts)
        self._add_coverage([e["enabled"] for e in ex], [m["newacts"] for m in mg])
        self.distinct += new_total
        self.frontier_size = new_total
        self._publish(np.concatenate([m["new_fps"] for m in mg]))
        self.frontier_bytes = sum(m["frontier_bytes"] for m in mg)
        self._level_done(d, sum(e["frontier"] for e in ex), new_total, t0)
        return L2

    def _add_counts(self, gen: int, counts: dict) -> None:
        self.generated += gen
        for k, v in counts.items():
            self.counts[k] = self.counts.get(k, 0) + v

    def _add_coverage(self, enabled: list, new: list) -> None:
        """Add the level's per-task coverage counts (None: not counted) in."""
        for total, parts in (("enabled_counts", enabled), ("new_counts", new)):
            acc = getattr(self, total)
            if acc is None or any(c is None for c in parts):
                setattr(self, total, None)
                continue
            for c in parts:
                for k, v in c.items():
                    acc[k] = acc.get(k, 0) + v

    def _level_done(self, d: int, frontier: int, new: int, t0: float) -> None:
        secs = time.perf_counter() - t0
        self.levels.append({"level": d, "frontier": frontier, "new": new, "distinct": self.distinct,
                            "seconds": round(secs, 4), "job_seconds": round(self.job_seconds, 4),
                            "task_cpu": self.level_cpu, "shipped": self.shipped})
        self.shipped = 0
        self.job_seconds = 0.0
        self.level_cpu = (0.0, 0.0)
        self._progress_line(d, frontier, new, self.distinct, secs)

    def _progress_line(self, d: int, frontier: int, new: int, distinct: int, secs: float) -> None:
        if self.progress is not None:
            elapsed = self.prior_seconds + time.perf_counter() - self.start
            rate = distinct / elapsed if elapsed > 0 else 0.0
            self._say(f"progress: level={d} frontier={frontier} new={new} distinct={distinct} "
                      f"states/s={rate:.0f} level_seconds={secs:.2f} elapsed={elapsed:.1f}s")

    def _say(self, line: str) -> None:
        if self.progress is not None:
            self.progress.write(line + "\n")
            try:
                self.progress.flush()
            except Exception:  # noqa: BLE001
                pass

    # -- records of violations (the shape of checker.bfs's ``found``) ------------------

    def _message(self, name: str, what: str) -> str:
        return self.search.message(name, what)

    def _dead_record(self, dead) -> tuple:
        return (DEADLOCK, "deadlock", dead[3], None, DEADLOCK_MESSAGE)

    def _outcome_record(self, ev) -> tuple:
        """The found record (checker.bfs's shape) of a failure event."""
        key, phase, prop, sfp, i, tfp = ev
        name = self.props[prop].name
        if phase == PH_STEP:
            return (name, ALWAYS, sfp, (i, tfp), None)   # message: see _violation
        return (name, ALWAYS, tfp, None, self._message(name, "does not hold in the last state"))

    def _relevant(self, e, dead) -> bool:
        """Would the local engine meet this error?  Not in a predicate of a property
        it no longer checks there, nor in is_terminal() after a deadlock."""
        key, phase, prop, kind = e[:4]
        if prop >= 0 and prop in self._first_of and self._first_of[prop] < key:
            return False
        if kind == "terminal" and dead is not None and dead[:2] < e[:2]:
            return False
        return True

    def _active_at(self, indices: list, key: bytes) -> list:
        first = self._first_of
        return [(self.props[i].name, self.props[i].predicate) for i in indices
                if i not in first or first[i] >= key]

    def _shorter_deadlock(self, first, dead, errors, L, L2):
        """checker.bfs scans the rest of the level for a deadlock when the first
        violation is one level deeper: a deadlock (or an error of actions() or
        is_terminal() on the way to it) after the violating state wins."""
        skey = first[0][:-KEY_BYTES]
        late = [e for e in errors if e[3] in ("state", "terminal") and e[0] > skey]
        err = min(late, key=error_order) if late else None
        if err is not None and (dead is None or err[:2] < dead[:2]):
            self._raise(err, L, L2, scan=True)
        if dead is not None:
            return [self._dead_record(dead)]
        return None

    # -- counting a stopped level again ------------------------------------------------

    def _count_until(self, L, L2, stop):
        """(generated, action counts, new states, enabled counts, new states per
        action) of the level up to the stop event, as the local engine counts them
        when it stops there."""
        key, phase = stop
        d = self.level
        kl = KEY_BYTES * (d + 1)
        if len(key) == kl:      # a state-level event (deadlock): nothing of that state counts
            tbound = (key + b"\x00" * KEY_BYTES, False)
            nbound = tbound
        else:                   # a transition: it is counted; its state is stored only if checked (phase PROP)
            tbound = (key, True)
            nbound = (key, phase >= PH_PROP)
        acc = self._accumulator()
        params = self._params(bound=tbound, sample=0)
        _job(L.mapPartitionsWithIndex(partial(tasks.expand, params, self.bc, acc))._jrdd.count)
        stats = acc.value
        ex = [stats[("expand", d, p)] for p in range(self.n)]
        gen = sum(e["gen"] for e in ex)
        counts: dict[str, int] = {}
        enabled: dict[str, int] = {}
        for e in ex:
            for k, v in e["acts"].items():
                counts[k] = counts.get(k, 0) + v
            for k, v in e["enabled"].items():
                enabled[k] = enabled.get(k, 0) + v
        below = L2.mapPartitionsWithIndex(partial(tasks.count_keys_below, {"bound": nbound})).collect()
        new = sum(c for _, c, _ in below)
        new_by: dict[str, int] | None = {}
        for _, _, by in below:
            if by is None:
                new_by = None
                break
            for k, v in by.items():
                new_by[k] = new_by.get(k, 0) + v
        return gen, counts, new, enabled, new_by

    def _kth_key(self, L2, k: int) -> bytes:
        """The k-th smallest (1-based) order key among the new states of the level:
        where max_states stops the local engine.  A distributed sort; only one key
        comes back to the driver."""
        keys = L2.mapPartitions(tasks.frontier_keys)
        ranked = keys.sortBy(lambda x: x, numPartitions=self.n).zipWithIndex()
        hit = ranked.filter(lambda kv, k=k: kv[1] == k - 1).keys().collect()
        if len(hit) != 1:
            raise RuntimeError(f"kmc spark engine: max_states: no new state of rank {k}")
        return hit[0]

    # -- the level at max_depth --------------------------------------------------------

    def _boundary_level(self, L) -> None:
        """checker.search.Search._boundary_level: states at max_depth are not expanded; one
        with enabled actions means the bound cut the search, one without may be a
        deadlock.  The local engine returns early (at the first state with actions,
        or at the deadlock), so only errors before that point count."""
        d = self.level
        t0 = time.perf_counter()
        cd = self.check_deadlock and not self.deadlock_found
        stats = self._boundary_job(L, cd, None)
        acting = min([e["acting"] for e in stats if e["acting"] is not None], default=None)
        deads = [e["dead"] for e in stats if e["dead"] is not None]
        dead = min(deads) if deads else None
        errors = [e for x in stats for e in x["errors"].values()]
        end = None  # (key, phase) where the local engine stops looking; None: the whole level
        if not cd:
            end = (acting, 0) if acting is not None else None
        elif not self.keep_going:
            end = dead[:2] if dead is not None else None
        elif dead is not None:
            errors = [e for e in errors if not (e[3] == "terminal" and e[:2] > dead[:2])]
            if any(e[:2] > dead[:2] for e in errors):
                after = self._boundary_job(L, cd, dead[0])
                acting2 = min([e["acting_after"] for e in after if e["acting_after"] is not None], default=None)
                end = (acting2, 0) if acting2 is not None else None
        early = [e for e in errors if end is None or e[:2] < end]
        if early:
            self._raise(min(early, key=lambda e: e[:2]), L, None, boundary=True)
        if acting is not None:
            self.cut = True
        if cd and dead is not None:
            self.found.append(self._dead_record(dead))
            self.deadlock_found = True
            if not self.keep_going:
                self.stopped = True
        self._level_done(d, sum(e["frontier"] for e in stats), 0, t0)
        self.L = L

    def _boundary_job(self, L, cd: bool, after) -> list:
        acc = self._accumulator()
        params = self._params(boundary=True, deadlock=cd, sample=0, acting_after=after)
        _job(L.mapPartitionsWithIndex(partial(tasks.expand, params, self.bc, acc))._jrdd.count)
        stats = acc.value
        out = [stats[("expand", self.level, p)] for p in range(self.n)]
        self.exec_rss = max([self.exec_rss] + [e["rss"] for e in out])
        return out

    # -- the end ---------------------------------------------------------------------

    def _finish(self) -> SparkCheckResult:
        seconds = self.prior_seconds + time.perf_counter() - self.start
        complete = not (self.cut or self.stopped)
        depth = self.level + (1 if self.distinct > self.stored_at_level else 0)
        violations = [self._violation(*rec) for rec in self.found]
        if complete:
            violations += unreached_witnesses(self.witnesses)
        stats = Stats(
            distinct=self.distinct,
            generated=self.generated,
            depth=depth,
            seconds=seconds,
            states_per_second=self.distinct / seconds if seconds > 0 else 0.0,
            peak_memory_bytes=peak_memory(),
            action_counts=dict(self.counts),
            witnesses=dict(self.witnesses),
            complete=complete,
            coverage=Coverage(None if self.enabled_counts is None else dict(self.enabled_counts), dict(self.counts),
                              None if self.new_counts is None else dict(self.new_counts)),
        )
        verdict = VIOLATED if violations else (OK if complete else BOUNDED)
        engine = {
            "engine": "spark",
            "master": self.sc.master,
            "partitions": self.n,
            "startup_seconds": round(self.startup, 3),
            "levels": self.levels,
            "driver_levels": sum(1 for lv in self.levels if lv.get("driver")),
            "executor_peak_rss_bytes": self.exec_rss,
            "executor_cpu_seconds": round(self.exec_cpu, 3),
            "visited_bytes": self.visited_bytes,
            "visited_bytes_per_state": (self.visited_bytes / self.visited_count) if self.visited_count else 0.0,
            "held_bytes": self._held_bytes(),
        }
        return SparkCheckResult(verdict, violations, stats, engine)

    def _held_bytes(self) -> int:
        """What Spark's block manager holds for the last level (memory and disk)."""
        if self.L is None:
            return 0
        try:
            rid = self.L.id()
            return sum(int(i.memSize()) + int(i.diskSize()) for i in self.sc._jsc.sc().getRDDStorageInfo()
                       if int(i.id()) == rid)
        except Exception:  # noqa: BLE001 - a developer API; the figure is informative only
            return 0

    def _violation(self, name, kind, fp, extra, message) -> Violation:
        path = self._rebuild(fp)
        if extra is not None:
            i, h = extra
            prev = path[-1].state
            act = list(self.model.actions(prev))[i]
            t = self.model.next_state(prev, act)
            got = self.fp(t)
            if got != h:
                raise self.search.nondeterministic(act, prev, len(path) - 1, h, got)
            path.append(Step(act, t, got))
            if message is None:
                message = self._message(name, f"is broken by the last step, {act}")
        return Violation(property=name, kind=kind, path=path, message=message)

    def _links(self, fps: set[int]) -> dict[int, tuple[int, int]]:
        """Parent links of ``fps``, read from the partitions that hold them."""
        if self._init_links is not None:
            return {fp: (fp if self._init_links[fp][0] is None else self._init_links[fp][0], self._init_links[fp][1])
                    for fp in fps}
        L = self.L
        parts = sorted({fp % self.n for fp in fps})
        rows = self.sc.runJob(L, partial(tasks.lookup, frozenset(fps)), parts)
        return {fp: (par, act) for fp, par, act in rows}

    def _rebuild(self, fp: int) -> list[Step]:
        """Follow the parent links back to an initial state, then replay forwards
        (checker.search.Search.rebuild, with the links on the executors)."""
        chain = []
        cur = fp
        while True:
            link = self._links({cur}).get(cur)
            if link is None:
                raise RuntimeError(f"kmc spark engine: no parent link for {format_fingerprint(cur)}")
            par, idx = link
            chain.append((cur, idx))
            if par == cur:
                break
            cur = par
        chain.reverse()
        return replay_chain(self.model, self.fp, chain)

    # -- model errors, re-derived on the driver ---------------------------------------

    def _raise(self, err, L, L2, scan: bool = False, boundary: bool = False):
        """Re-derive a model error found on an executor: rebuild the state from the
        parent links and make the calls checker.bfs makes there, with the properties
        it still checks there, so that the same ModelError is raised with the
        model's exception chained.  If the model does not fail again (it is not
        deterministic), raise the executor's message."""
        key, phase, prop, kind, fp, idx, msg = err
        self.L = L2 if L2 is not None else L
        search = self.search
        model = self.model
        d = self.level
        try:
            s = self._rebuild(fp)[-1].state
        except ModelError:
            raise
        except Exception:  # noqa: BLE001
            raise ModelError(msg) from None
        if kind in ("state", "terminal"):
            if scan:
                try:
                    if not model.within_boundary(s):
                        raise ModelError(msg)
                    acts = model.actions(s)
                    if type(acts) is not list:
                        acts = search.as_list(acts, s, d)
                    if not acts:
                        model.is_terminal(s)
                except ModelError:
                    raise
                except Exception as e:  # noqa: BLE001
                    raise search.error("actions(state) or is_terminal(state)", s, d, e) from e
                raise ModelError(msg)
            within_overridden = getattr(type(model), "within_boundary", None) is not Model.within_boundary
            if within_overridden or boundary:
                try:
                    inside = model.within_boundary(s)
                except Exception as e:  # noqa: BLE001
                    raise search.error("within_boundary(state)", s, d, e) from e
                if not inside:
                    raise ModelError(msg)
            try:
                acts = model.actions(s)
            except Exception as e:  # noqa: BLE001
                raise search.error("actions(state)", s, d, e) from e
            if type(acts) is not list and (boundary or type(acts) is not tuple):
                acts = search.as_list(acts, s, d)
            if kind == "state" and not boundary:
                search.check_actions(s, acts, d)
                if len(acts) > tasks.MAX_INDEX:
                    raise ModelError(msg)
            if kind == "terminal":
                try:
                    model.is_terminal(s)
                except Exception as e:  # noqa: BLE001
                    raise search.error("is_terminal(state)", s, d, e) from e
            raise ModelError(msg)
        a = list(model.actions(s))[idx]
        if kind == "trans":
            if prop < 0:
                try:
                    t = model.next_state(s, a)
                except Exception as e:  # noqa: BLE001
                    raise search.error("next_state(state, action)", s, d, e, act=a) from e
                search.check_successor(s, a, t, d)
                try:
                    self.fp(t)
                except Exception as e:  # noqa: BLE001
                    raise search.error("encode(state)", t, d + 1, e, via=a) from e
                raise ModelError(msg)
            t = model.next_state(s, a)
            checks = self._active_at(self.active_steps, key)
            try:
                for chk in checks:
                    if not chk[1](s, a, t):
                        break
                else:
                    chk = None
            except Exception as e:  # noqa: BLE001
                raise search.error(f"the predicate of step property {chk[0]!r}", s, d, e, act=a) from e
            if chk is not None:
                for name, pred in checks:
                    search.call_pred(name, pred, (s, a, t), s, d, a, kind="step property")
            raise ModelError(msg)
        # kind == "new": the witnesses, then the state properties, of a new state
        t = model.next_state(s, a)
        d1 = d + 1
        wits = self._active_at(self.active_wits, key)
        try:
            for chk in wits:
                if chk[1](t):
                    break
            else:
                chk = None
        except Exception as e:  # noqa: BLE001
            raise search.error(f"the predicate of sometimes property {chk[0]!r}", t, d1, e, via=a) from e
        if chk is not None:
            for name, pred in wits:
                search.call_pred(name, pred, (t,), t, d1, None, kind="sometimes property")
        checks = self._active_at(self.active_props, key)
        try:
            for chk in checks:
                if not chk[1](t):
                    break
            else:
                chk = None
        except Exception as e:  # noqa: BLE001
            raise search.error(f"the predicate of property {chk[0]!r}", t, d1, e, via=a) from e
        if chk is not None:
            for name, pred in checks:
                search.call_pred(name, pred, (t,), t, d1, None)
        raise ModelError(msg)

    # -- checkpoints --------------------------------------------------------------------

    def _identity(self) -> dict:
        try:
            config = json.loads(json.dumps(dict(self.model.config()), default=repr))
        except Exception:  # noqa: BLE001
            config = repr(self.model.config())
        return {
            "model": self.model.name, "version": str(self.model.version), "config": config,
            "properties": [p.name for p in self.props], "max_depth": self.max_depth,
            "max_states": self.max_states, "keep_going": self.keep_going,
            "check_deadlock": self.check_deadlock, "partitions": self.n,
        }

    def _state(self) -> dict:
        return {
            "identity": self._identity(),
            "level": self.level,
            "distinct": self.distinct,
            "generated": self.generated,
            "counts": self.counts,
            "enabled_counts": self.enabled_counts,
            "new_counts": self.new_counts,
            "witnesses": self.witnesses,
            "found": [[r[0], r[1], r[2], list(r[3]) if r[3] is not None else None, r[4]] for r in self.found],
            "deadlock_found": self.deadlock_found,
            "active_props": self.active_props,
            "active_steps": self.active_steps,
            "active_wits": self.active_wits,
            "sample_left": self.sample_left,
            "frontier_size": self.frontier_size,
            "seconds": self.prior_seconds + time.perf_counter() - self.start,
            "levels": self.levels,
            "visited_bytes": self.visited_bytes,
            "visited_count": self.visited_count,
        }

    def _restore(self, st: dict) -> None:
        self.level = st["level"]
        self.stored_at_level = sys.maxsize
        self.distinct = st["distinct"]
        self.generated = st["generated"]
        self.counts = dict(st["counts"])
        # A checkpoint written before coverage was kept: the report says n/a.
        self.enabled_counts = dict(st["enabled_counts"]) if st.get("enabled_counts") is not None else None
        self.new_counts = dict(st["new_counts"]) if st.get("new_counts") is not None else None
        self.witnesses = dict(st["witnesses"])
        self.found = [(r[0], r[1], r[2], tuple(r[3]) if r[3] is not None else None, r[4]) for r in st["found"]]
        self.deadlock_found = st["deadlock_found"]
        self.active_props = list(st["active_props"])
        self.active_steps = list(st["active_steps"])
        self.active_wits = list(st["active_wits"])
        self.sample_left = st["sample_left"]
        self.frontier_size = st["frontier_size"]
        self.prior_seconds = st["seconds"]
        self.levels = list(st["levels"])
        self.visited_bytes = st.get("visited_bytes", 0)
        self.visited_count = st.get("visited_count", 0)
        self._init_links = None
