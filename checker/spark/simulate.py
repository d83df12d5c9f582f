"""Swarm simulation on Spark: independent walks per partition, no shuffle.

Random walks share nothing, which is where Spark pays off most: each task runs a
contiguous block of walk indices through :func:`checker.simulate.run_walks` and
sends back what it saw (counts, the fingerprints of the states it visited, its
first violation).  The driver runs rounds of ``partitions x block`` walks, merges
them, prints progress between rounds, and stops after the round in which a walk
found a violation.  The violation kept is the one of the *lowest* walk index:
every task runs its block in order and stops only at its own first violation, so
every walk below that index has run and found nothing.  Walk ``i`` depends only
on ``(seed, i)``, hence the counterexample (and its shrunk trace, computed on the
driver) is the one the local engine reports for the same seed.
"""

from __future__ import annotations

import re
import time
from functools import partial
from typing import Any, Sequence, TextIO

from checker.errors import ModelError, UsageError
from checker.model import SOMETIMES, Model, Property
from checker.simulate import (DEFAULT_MAX_STEPS, DEFAULT_WALKS, Progress, SimulationResult, Walk, check_args,
                              finish, run_walks, validate_properties)

__all__ = ["simulate"]

BLOCK = 8              # walks per task in the first round; doubled while rounds are short
ROUND_SECONDS = 10.0   # a round aims at about this long (progress lines come between rounds)


def _walk_task(payload: Any, seed: int, max_steps: int, swarm: bool, check_deadlock: bool, left: float | None,
               ranges: list, index: int, _it: Any) -> Any:
    """One Spark task: the walks of block ``ranges[index]``, in order, until ``left``
    seconds (the time limit's rest when the round was sent) have passed on this
    executor's clock: another machine's ``time.monotonic()`` has another origin, so
    the driver's deadline means nothing there."""
    import pickle
    deadline = None if left is None else time.monotonic() + left
    model, props = pickle.loads(payload.value)
    lo, hi = ranges[index]
    w = run_walks(model, props, seed, range(lo, hi), max_steps=max_steps, swarm=swarm,
                  check_deadlock=check_deadlock, deadline=deadline)
    yield w


def _collect(rdd: Any) -> list:
    try:
        return rdd.collect()
    except Exception as e:  # noqa: BLE001
        if type(e).__name__ != "Py4JJavaError":
            raise
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        why = next((ln for ln in reversed(lines) if re.match(r"^[A-Za-z_.]*(Error|Exception)\b", ln)
                    and not ln.startswith(("org.", "java.", "scala.", "py4j."))), None)
        if why and why.startswith("checker.errors.ModelError"):
            raise ModelError(why.split(":", 1)[1].strip()) from None
        raise RuntimeError(f"a Spark job of kmc simulate failed: {why or (lines[0] if lines else '?')[:300]}") from None


def _again_here(model: Model, props: list, seed: int, ranges: list, max_steps: int, swarm: bool,
                check_deadlock: bool) -> list:
    """A task of the round raised: run the round's blocks again on the driver, in
    walk order.  A walk depends only on ``(seed, index)``, so the first walk that
    raises raises the same error here, with its cause chained (the user's file and
    line for a predicate of an ``--invariants`` file: ``kmc simulate`` then says what
    it says on the local engine), and it is the error of the lowest walk, as the
    local engine meets it, whichever task failed first.  A violation in an earlier
    walk ends the round first, again as on the local engine; the later blocks, whose
    task raised, are not run.  No deadline: the time limit may have passed by now,
    and the walk that raised must be reached again.  When nothing raises or fails
    here (an error of the executors alone), the caller raises the task's error."""
    done = []
    for lo, hi in ranges:
        w = run_walks(model, props, seed, range(lo, hi), max_steps=max_steps, swarm=swarm,
                      check_deadlock=check_deadlock)
        done.append(w)
        if w.found is not None:
            break
    return done


def simulate(model: Model, *, properties: Sequence[Property] | None = None, seed: int = 0,
             walks: int | None = DEFAULT_WALKS, max_steps: int = DEFAULT_MAX_STEPS, swarm: bool = True,
             check_deadlock: bool = True, time_limit: float | None = None, shrinking: bool = True,
             progress: TextIO | None = None, sc: Any = None, master: str | None = None,
             partitions: int | None = None) -> SimulationResult:
    """:func:`checker.simulate.simulate` on Spark (``sc``, else a context on
    ``master``, default ``local[*]``), ``partitions`` tasks per round."""
    from pyspark import cloudpickle

    from checker.spark.session import get_context, ship

    check_args(seed, walks, max_steps)
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
        raise UsageError(f"partitions must be a positive integer, not {partitions!r}")
    props = list(model.properties() if properties is None else properties)
    validate_properties(props)
    try:
        payload = ship(cloudpickle, (model, props), [type(model)] + [p.predicate for p in props])
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"kmc simulate ships the model and its properties to the Spark executors with cloudpickle, "
                         f"and pickling them raised {type(e).__name__}: {e}; make the model picklable or use "
                         f"--engine local") from e
    created = False
    if sc is None:
        sc, created = get_context(master, partitions)
    n = partitions or max(1, sc.defaultParallelism)
    bc = sc.broadcast(payload)
    t0 = time.monotonic()
    deadline = None if time_limit is None else t0 + time_limit
    prog = Progress(progress, 0.0)
    total = Walk(witnesses={p.name: None for p in props if p.kind == SOMETIMES})
    block = BLOCK
    start = 0
    try:
        while walks is None or start < walks:
            ranges = []
            for _ in range(n):
                hi = start + block if walks is None else min(walks, start + block)
                if hi > start:
                    ranges.append((start, hi))
                start = hi
            r0 = time.monotonic()
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            job = sc.parallelize(range(len(ranges)), len(ranges)).mapPartitionsWithIndex(
                partial(_walk_task, bc, seed, max_steps, swarm, check_deadlock, left, ranges))
            try:
                done = _collect(job)
            except ModelError as e:
                done = _again_here(model, props, seed, ranges, max_steps, swarm, check_deadlock)
                if not any(w.found is not None for w in done):
                    raise e     # it raised on the executors only: the task's message as it is
            for w in done:
                total.merge(w)
            prog.maybe(total.walks, total.steps, len(total.fingerprints), total.deepest, force=True)
            if total.found is not None or (deadline is not None and time.monotonic() >= deadline):
                break
            if time.monotonic() - r0 < ROUND_SECONDS / 2:
                block *= 2
        return finish(model, props, seed, total, time.monotonic() - t0, shrinking)
    finally:
        try:
            bc.destroy()
        except Exception:  # noqa: BLE001
            pass
        if created:
            sc.stop()
