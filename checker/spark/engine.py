"""The Spark engine: level-synchronous breadth-first search with the frontier and
the visited set partitioned across Spark executors by state fingerprint.

It returns what ``checker.bfs.check`` returns for the same model and arguments:
the same distinct and generated counts, depth, action counts, witnesses, verdict
and the same shortest counterexample (the same action sequence), whatever the
number of partitions or executors.  How:

- Partition ``p`` owns the states whose fingerprint is ``p`` modulo the number of
  partitions (our own partitioner; PySpark's portable_hash is never used), or,
  for a model with a ``partition_key``, whose key's hash is (``checker.spark.handoff.Places``).  Its
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

This module is the driver's loop over the levels.  The rest lives beside it:
``expand`` and ``merge`` (the two tasks of a level on the executors), ``tasks``
(what they share: the records, the model once per worker, small look-ups),
``jobs`` (the Spark jobs of a level and what the search keeps in Spark), ``events`` (what the local engine makes of a
level's events), ``counters`` (the driver's counters, and their checkpoint
form), ``handoff`` (levels moving between the driver's core and the
partitions), ``rederive`` (counterexamples and model errors rebuilt on the
driver), ``session`` (the SparkContext) and ``checkpoint`` (saving levels).
"""

from __future__ import annotations

import gc
import math
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Sequence, TextIO

import numpy as np

from checker.errors import ModelError, UsageError
from checker.fingerprint import fingerprint_fn, placement_fn, placement_probe, repr_encoded
from checker.model import Model, Property
from checker.result import BOUNDED, OK, TIME_LIMIT, VIOLATED, CheckResult
from checker.search import Search, Settings, StopSearch, Visitor, unreached_witnesses
from checker.spark.counters import Counters
from checker.spark.events import LevelEvents, dead_record
from checker.spark.graph import joined, needs_every_level, replay
from checker.spark.handoff import Places, part_records, take_back
from checker.spark.jobs import Jobs
from checker.spark.rederive import Rederive
from checker.spark.session import ctrl_c_count, get_context, run_job, ship
from checker.spark.tasks import CHUNK, PH_CAP

__all__ = ["check", "SparkCheckResult"]

DRIVER_STATES = 2000   # levels up to this many states run on the driver (see _Run._initial)


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
    chunk: int = CHUNK,
    placement: str = "key",
    visitor: Visitor | None = None,
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
    states (0: every level on Spark); ``chunk``: successors pickled together on
    the wire (checker.spark.tasks.CHUNK); ``placement``: ``"key"``, a state lives
    on the partition of its ``Model.partition_key`` where the model has one, or
    ``"fingerprint"``.  The answers are the same either way.  ``visitor``: called as
    the local engine calls it (checker.spark.graph), not under ``resume`` (the
    levels before the checkpoint are gone) nor ``max_depth``.
    """
    time_limit = None
    if settings is not None:
        max_depth, max_states, keep_going = settings.max_depth, settings.max_states, settings.keep_going
        check_deadlock, progress = settings.check_deadlock, settings.progress
        progress_interval = settings.progress_interval
        time_limit = settings.validate().time_limit
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0):
        raise UsageError(f"max_depth must be a non-negative integer, not {max_depth!r}")
    if max_states is not None and (isinstance(max_states, bool) or not isinstance(max_states, int) or max_states < 1):
        raise UsageError(f"max_states must be a positive integer, not {max_states!r}")
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
        raise UsageError(f"partitions must be a positive integer, not {partitions!r}")
    if isinstance(driver_states, bool) or not isinstance(driver_states, int) or driver_states < 0:
        raise UsageError(f"driver_states must be a non-negative integer, not {driver_states!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise UsageError(f"chunk must be a positive integer, not {chunk!r}")
    if placement not in ("key", "fingerprint"):
        raise UsageError(f"placement must be 'key' or 'fingerprint', not {placement!r}")
    needs_every_level(visitor, resume, max_depth)
    props = list(model.properties() if properties is None else properties)
    run = _Run(model, props, max_depth, max_states, keep_going, check_deadlock, progress, progress_interval)
    run.driver_states = driver_states
    run.time_limit = time_limit
    run.chunk = chunk
    run.visitor = visitor
    if placement == "fingerprint":
        run.place = None
    return run.execute(sc, master, partitions, checkpoint or resume, resume)


# ---------------------------------------------------------------------------------


class _Run(Counters):
    """One Spark search: the driver's loop over the levels, and its Spark jobs."""

    def __init__(self, model, props, max_depth, max_states, keep_going, check_deadlock, progress, interval):
        super().__init__(props)
        self.model = model
        self.max_depth = max_depth
        self.max_states = max_states
        self.keep_going = keep_going
        self.check_deadlock = check_deadlock
        self.progress = progress
        # The search core on this run's books (the run is its ledger): it runs the
        # initial states and the narrow levels, and words every message.
        self.search = Search(model, props, Settings(max_depth=max_depth, max_states=max_states, keep_going=keep_going,
                                                       check_deadlock=check_deadlock, progress_interval=interval),
                             ledger=self)
        self.fp = fingerprint_fn(model)
        self.rederive = Rederive(model, self.search, self.fp, self._links)
        self.events: LevelEvents | None = None
        self.driver_states = DRIVER_STATES
        self.time_limit: float | None = None  # Settings.time_limit: looked at after each level
        self.chunk = CHUNK
        self.place = placement_fn(model)   # None: states are placed by fingerprint
        self.probe: str | None = None      # placement_probe, in the checkpoints' identity
        # A merge reads a new state from its partition's own equal copy (merge.own_copies).
        self.own_copies = repr_encoded(model) and os.environ.get("KMC_SPARK_OWN_COPIES", "1") != "0"
        self.places: Places | None = None
        self.visitor: Visitor | None = None    # the caller's (check's visitor argument)
        self.job_seconds = 0.0
        self.exec_rss = 0
        self.exec_cpu = 0.0
        self.level_cpu = (0.0, 0.0)
        self.level_parts: tuple[list, list] = ([], [])
        self.shipped = 0
        self.encoded = self.own_read = 0
        self.frontier_bytes = 0

    # -- driver ---------------------------------------------------------------------

    def execute(self, sc, master, partitions, checkpoint, resume) -> SparkCheckResult:
        from pyspark import cloudpickle

        from checker.spark import checkpoint as ckpt

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
        self.jobs = Jobs(sc, self.n, sc.broadcast(payload), placed=self.place is not None)
        try:
            return self._execute(checkpoint, resume)
        finally:
            self.jobs.release()
            if created:
                try:
                    sc.stop()
                except Exception:  # noqa: BLE001 - a JVM already gone (Ctrl-C): what stopped it is reported
                    pass

    def _execute(self, checkpoint, resume) -> SparkCheckResult:
        from checker.spark import checkpoint as ckpt

        self.start = time.perf_counter()
        ctrl_c = ctrl_c_count()
        self.checkpoint = checkpoint
        if resume:
            L, state = ckpt.load(self.sc, resume, self.n, self._identity())
            self._restore(state)
            L = self.jobs.keep(L)
            self.jobs.publish(self.jobs.visited_fps(L))
            # Progress lines number levels from 0: the last one done is self.level - 1.
            self._say(f"resumed from {resume}: levels 0 to {self.level - 1} done, {self.distinct} distinct "
                      f"states; going on from level {self.level}")
        else:
            L = self._initial()
            if L is None:
                return self._finish()
        self.L = None
        while self.frontier_size:
            if ctrl_c_count() != ctrl_c:
                raise KeyboardInterrupt     # a Ctrl-C that a finalizer swallowed (session.on_ctrl_c)
            d = self.level
            self.stored_at_level = self.distinct
            if self.max_depth is not None and d >= self.max_depth:
                self._boundary_level(L)
                break
            L2 = self._expand(L)
            if L2 is None:
                break
            self.jobs.drop(L)
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
            if (self.frontier_size and self.time_limit is not None
                    and time.perf_counter() - self.start >= self.time_limit):
                # As the local engine's time limit: a bound.  The level just stored
                # is the deepest, and its checkpoint (if any) lets --resume go on.
                self.cut = True
                self.stopped_by = TIME_LIMIT
                self.stored_at_level = self.distinct
                break
        if ctrl_c_count() != ctrl_c:
            raise KeyboardInterrupt
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
        s.visitor = self._visitor()
        n0 = len(self.levels)
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
        self._core_levels(s, n0)
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
        parts = [v for _, v in sorted(run_job(L.collect), key=lambda r: r[0])]
        collecting = gc.isenabled()
        if collecting:
            gc.disable()
        try:
            visited, frontier = take_back(parts)
            s = Search(self.model, self.props, self.search.settings, visitor=self._visitor(), ledger=self)
            s.visited = visited
            n0 = len(self.levels)
            try:
                s.explore(frontier, handoff=self.driver_states, depth=self.level)
            except StopSearch:
                pass
        finally:
            if collecting:
                gc.enable()
        self._core_levels(s, n0)
        self.L = L
        if s.handoff:
            self._init_links = None
            self.L = None
            L2 = self._parts(visited, s.handoff)
            self.jobs.drop(L)
            return L2
        self._init_links = visited
        self.frontier_size = 0
        return None

    def _visitor(self) -> Visitor | None:
        """The visitor of the driver's core: the caller's, and what records the
        partition of every state the core stores, when the model places states itself."""
        self.places = None if self.place is None else Places(self.model, self.place, self.n)
        return joined(self.places, self.visitor)

    def _core_levels(self, s: Search, n0: int) -> None:
        """After the core's search ``s`` ran on these books: the distinct states it
        holds, and its levels (from the ``n0``-th) as the driver reports them."""
        self.distinct = len(s.visited)
        for lv in self.levels[n0:]:
            secs = lv["seconds"]
            lv.update(seconds=round(secs, 4), job_seconds=0.0, task_cpu=(0.0, 0.0), driver=True)
            self._progress_line(lv["level"], lv["frontier"], lv["new"], lv["distinct"], secs)

    def _parts(self, visited: dict, frontier: list):
        """The partitions' RDD from the core's visited map and the level to expand
        next (``(fp, state)`` in BFS order): each partition's visited set and parent
        links, and its part of the frontier with the states' order keys (their paths
        of action indices, read back from the parent links)."""
        records, v_all = part_records(visited, frontier, self.n, None if self.places is None else self.places.of)
        self.frontier_size = len(frontier)
        self.jobs.publish(v_all)
        return self.jobs.parts(records)

    # -- one level -------------------------------------------------------------------

    def _params(self, **extra) -> dict:
        d = self.level
        per_task = math.ceil(self.sample_left / self.n) if self.sample_left > 0 else 0
        p = {
            "token": self.token, "level": d, "n": self.n, "sample": per_task, "chunk": self.chunk,
            "placed": self.place is not None, "own_copies": self.own_copies,
            "steps": tuple(self.active(self.step_checks)), "props": tuple(self.active(self.state_checks)),
            "witnesses": tuple(self.active(self.wit_checks)),
            "deadlock": self.check_deadlock and not self.deadlock_found,
        }
        p.update(extra)
        return p

    def _expand(self, L):
        """Expand level ``self.level``; return the next level's RDD, or None when the
        search stops at this level."""
        t0 = time.perf_counter()
        d = self.level
        graph = self.visitor is not None and not getattr(self.visitor, "done", False)   # the level's graph is shipped
        params = self._params(known=self.jobs.known(), graph=graph)
        L2, ex, mg, self.job_seconds = self.jobs.expand(L, params)
        self.exec_rss = max([self.exec_rss] + [e["rss"] for e in ex] + [m["rss"] for m in mg])
        self.level_cpu = (round(sum(e["cpu"] for e in ex), 3), round(sum(m["cpu"] for m in mg), 3))
        # Load balance: each partition's frontier and its tasks' CPU seconds (expand + merge).
        self.level_parts = ([e["frontier"] for e in ex], [round(e["cpu"] + m["cpu"], 3) for e, m in zip(ex, mg)])
        self.exec_cpu += sum(self.level_cpu)
        used = sum(max(0, params["sample"] - e["sample_left"]) for e in ex)
        new_total = sum(m["new"] for m in mg)

        # The events of the level (see checker.spark.tasks): outcomes and errors.
        events = LevelEvents(ex, mg, self.props, self.search.message)
        self.events = events
        cap = None
        if self.max_states is not None and self.distinct + new_total > self.max_states:
            cap = (self.jobs.kth_key(L2, self.max_states - self.distinct + 1), PH_CAP)
        decision = events.decide(keep_going=self.keep_going, check_deadlock=self.check_deadlock,
                                 deadlock_found=self.deadlock_found, cap=cap)
        if graph:   # up to where the local engine stops, error or not
            err = decision.error
            replay(self.visitor, d, ex, mg, decision.stop if err is None or decision.scan else err[:2])
        if decision.error is not None:
            self._raise(decision.error, L, L2, scan=decision.scan)
        stop, report = decision.stop, decision.report   # report: in the order the local engine finds them
        self.cut = self.cut or decision.cut
        self.stopped = self.stopped or decision.stopped

        self.record_level(report, events.reached(stop), used)   # witnesses: those before the stop, if any

        self.visited_bytes = sum(m["visited_bytes"] for m in mg)
        self.visited_count = sum(m["visited"] for m in mg)
        self.shipped = sum(m["received"] for m in mg)
        self.encoded = sum(e.get("encoded", 0) for e in ex)
        self.own_read = sum(m.get("own_copies", 0) for m in mg)
        if stop is not None:
            _gen, counts, new, enabled, new_by = self.jobs.count_until(L, L2, self._params(), stop)
            self.add_counts(counts)
            self.add_coverage([enabled], [new_by])
            self.distinct += new
            self.frontier_size = 0
            self._level_done(d, sum(e["frontier"] for e in ex), new, t0)
            self.L = L2
            return None
        counts: dict[str, int] = {}
        for e in ex:
            for k, v in e["acts"].items():
                counts[k] = counts.get(k, 0) + v
        self.add_counts(counts)
        self.add_coverage([e["enabled"] for e in ex], [m["newacts"] for m in mg])
        self.distinct += new_total
        self.frontier_size = new_total
        self.jobs.publish(np.concatenate([m["new_fps"] for m in mg]))
        self.frontier_bytes = sum(m["frontier_bytes"] for m in mg)
        self._level_done(d, sum(e["frontier"] for e in ex), new_total, t0)
        return L2

    def _level_done(self, d: int, frontier: int, new: int, t0: float) -> None:
        secs = time.perf_counter() - t0
        self.levels.append({"level": d, "frontier": frontier, "new": new, "distinct": self.distinct,
                            "seconds": round(secs, 4), "job_seconds": round(self.job_seconds, 4),
                            "task_cpu": self.level_cpu, "shipped": self.shipped, "encoded": self.encoded,
                            "own_copies": self.own_read,
                            "part_frontier": self.level_parts[0], "part_cpu": self.level_parts[1]})
        self.shipped = self.encoded = self.own_read = 0
        self.level_parts = ([], [])
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
            self.add_found(dead_record(dead))
            if not self.keep_going:
                self.stopped = True
        self._level_done(d, sum(e["frontier"] for e in stats), 0, t0)
        self.L = L

    def _boundary_job(self, L, cd: bool, after) -> list:
        out = self.jobs.boundary(L, self._params(boundary=True, deadlock=cd, sample=0, acting_after=after))
        self.exec_rss = max([self.exec_rss] + [e["rss"] for e in out])
        return out

    # -- the end ---------------------------------------------------------------------

    def _finish(self) -> SparkCheckResult:
        seconds = self.prior_seconds + time.perf_counter() - self.start
        complete = not (self.cut or self.stopped)
        violations = [self.rederive.violation(*rec) for rec in self.found]
        if complete:
            violations += unreached_witnesses(self.witnesses)
        stats = self.stats(self.distinct, seconds)   # the levels go in the engine's own report
        verdict = VIOLATED if violations else (OK if complete else BOUNDED)
        engine = {
            "engine": "spark",
            "master": self.sc.master,
            "partitions": self.n,
            "startup_seconds": round(self.startup, 3),
            "levels": self.levels,
            "driver_levels": sum(1 for lv in self.levels if lv.get("driver")), "driver_states": self.driver_states,
            "executor_peak_rss_bytes": self.exec_rss,
            "executor_cpu_seconds": round(self.exec_cpu, 3),
            "visited_bytes": self.visited_bytes,
            "visited_bytes_per_state": (self.visited_bytes / self.visited_count) if self.visited_count else 0.0,
            "held_bytes": self.jobs.held_bytes(self.L),
        }
        return SparkCheckResult(verdict, violations, stats, engine)

    def _links(self, fps: set[int]) -> dict[int, tuple[int, int]]:
        """Parent links of ``fps``, read from the partitions that hold them."""
        if self._init_links is not None:
            return {fp: (fp if self._init_links[fp][0] is None else self._init_links[fp][0], self._init_links[fp][1])
                    for fp in fps}
        return self.jobs.links(self.L, fps)

    # -- model errors, re-derived on the driver ---------------------------------------

    def _raise(self, err, L, L2, scan: bool = False, boundary: bool = False):
        """Raise the model error ``err`` an executor met, re-derived on the driver
        (checker.spark.rederive) with the properties the local engine still checks
        at its key."""
        self.L = L2 if L2 is not None else L
        key = err[0]
        events = None if boundary else self.events

        def active(checks: list) -> list:
            if events is None:
                return list(checks)
            return events.active_at(self.active(checks), key)

        self.rederive.raise_error(err, self.level, active(self.step_checks), active(self.wit_checks),
                                  active(self.state_checks), scan=scan, boundary=boundary)

    # -- checkpoints --------------------------------------------------------------------

    def _identity(self) -> dict:
        if self.place is not None and self.probe is None:
            self.probe = placement_probe(self.model, self.place, self.fp)
        from checker.spark import checkpoint as ckpt

        return ckpt.identity(self.model, self.props, self.n, self.probe if self.place is not None else None,
                             max_depth=self.max_depth, max_states=self.max_states, keep_going=self.keep_going,
                             check_deadlock=self.check_deadlock)

    def _state(self) -> dict:
        return self.state(self._identity(), self.prior_seconds + time.perf_counter() - self.start)

    def _restore(self, st: dict) -> None:
        self.restore(st)
        self._init_links = None
