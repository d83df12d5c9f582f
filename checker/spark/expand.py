"""The expand task of a level (checker.spark.tasks has the records' layout): a
frontier partition's successors, their fingerprints, the step properties and
deadlocks, the state properties and witnesses of every successor, bucketed by
destination partition.

Coverage (checker.coverage), counted where the local engine counts it: the
expanding task counts, per action name, the expanded states that enable it
(``enabled``) and the transitions (``acts``); the merging task counts the new
states per name of the action that reached them (``new``: the candidate with the
smallest key wins, which is the transition that stores the state in the local
engine).  A few dict increments per state and one ``bincount`` per partition and
level; the driver adds them up level by level.

The successors come from the search core, run on the partition's frontier for one
level (checker.spark.partition.PartitionSearch): the local engine's loop, calls,
checks and messages.

A state is pickled once, where it is generated, and unpickled once, where it is
expanded; the destination only selects.  That is why state properties and witnesses
are evaluated at the source, on every successor: the destination then keeps the
outcomes of the states that turn out to be new.
"""

from __future__ import annotations

import gc
import time
from typing import Any

import numpy as np

from checker.errors import USER_CODE_ERRORS, ModelError
from checker.spark.partition import PartitionSearch, keep_dead_end
from checker.spark.tasks import (
    CHUNK, EMPTY_I64, PH_STATE, TAG_CAND, Context, context, dumps_states, error_text, frontier_states,
    keep_error, leave_collector, part_of, peak_rss,
)


def expand(params: dict, payload: Any, acc: Any, pid: int, records) -> Any:
    """Expand the frontier of one partition: successors, their fingerprints, step
    properties, deadlocks, and the state properties and witnesses of every
    successor; successors deduplicated inside the partition (the first, i.e.
    smallest, key wins) and bucketed by destination partition.

    ``params``: level, n, sample (successors to validate in this task), steps,
    props, witnesses (indices of the properties still checked), deadlock (bool),
    bound (None, or ``(key, inclusive)``: count the transitions up to that key and
    emit nothing), boundary (bool: the level at max_depth, nothing is expanded),
    acting_after (boundary: report the first state with actions after this key),
    graph (bool: send the level's transitions to the driver's visitor in the
    statistics, checker.spark.graph)."""
    cpu = time.process_time()
    collecting = gc.isenabled()
    if collecting:
        gc.disable()   # see the module docstring
    try:
        ctx = context(params["token"], payload)
        part = part_of(records, pid)
        level = params["level"]
        stats: dict[str, Any] = {"frontier": 0, "gen": 0, "acts": {}, "enabled": {},
                                 "dead": None, "steps": {}, "errors": {},
                                 "acting": None, "acting_after": None, "sample_left": params.get("sample", 0),
                                 "level": level}
        out: list = []
        if part is not None and len(part[4]):
            _expand_states(ctx, params, part, stats, out, pid)
        if params.get("bound") is not None or params.get("boundary"):
            stats["rss"], stats["cpu"] = peak_rss(), time.process_time() - cpu
            acc.add({("expand", level, pid): stats})
            return iter(())
        return iter(list(_buckets(out, params["n"], pid, part[1] if part is not None else EMPTY_I64, stats,
                                  acc, cpu, params.get("chunk", CHUNK))))
    finally:
        if collecting:
            leave_collector()


def _expand_states(ctx: Context, params: dict, part: tuple, stats: dict, out: list, pid: int) -> None:
    """The partition's level, through the search core (checker.spark.partition);
    the level at max_depth only scanned (``_boundary``)."""
    states = frontier_states(part)
    stats["frontier"] = len(states)
    frontier = list(zip(part[4].tolist(), states))
    if params.get("boundary", False):
        _boundary(ctx, params, frontier, part[5], stats)
        return
    search = PartitionSearch(ctx, params, frontier, part[5], stats, pid)
    search.expand_level()
    led = search.ledger
    stats["acts"], stats["enabled"] = led.counts, led.enabled_counts
    stats["gen"] = sum(led.counts.values())
    stats["encoded"] = search.encoded
    stats["sample_left"] = led.sample_left
    if params.get("bound") is None:
        out.append(search.record())
        if params.get("graph"):
            stats["graph"] = search.visitor.level_graph(part[4], part[5])


def _boundary(ctx: Context, params: dict, frontier: list, keys: bytes, stats: dict) -> None:
    """The level at max_depth is not expanded: the key of its first state with an
    enabled action (and of the first after ``acting_after``), which tells the driver
    that the bound cut the search, and its first deadlock."""
    model, search = ctx.model, ctx.search
    level = params["level"]
    kl = len(keys) // len(frontier)
    after = params.get("acting_after")
    check_deadlock = params.get("deadlock", False)
    errors = stats["errors"]
    for j, (sfp, s) in enumerate(frontier):
        key = keys[j * kl:(j + 1) * kl]
        try:
            if not model.within_boundary(s):
                continue
        except USER_CODE_ERRORS as e:  # noqa: BLE001
            keep_error(errors, (key, PH_STATE, -1, "state", sfp, -1,
                                error_text(search.error("within_boundary(state)", s, level, e))))
            continue
        try:
            acts = model.actions(s)
        except USER_CODE_ERRORS as e:  # noqa: BLE001
            keep_error(errors, (key, PH_STATE, -1, "state", sfp, -1, error_text(search.error("actions(state)", s, level, e))))
            continue
        try:
            if type(acts) is not list:
                acts = search.as_list(acts, s, level)
        except ModelError as e:
            keep_error(errors, (key, PH_STATE, -1, "state", sfp, -1, error_text(e)))
            continue
        if acts:
            if stats["acting"] is None:
                stats["acting"] = key
            if after is not None and stats["acting_after"] is None and key > after:
                stats["acting_after"] = key
        elif check_deadlock:
            keep_dead_end(search, stats, key, sfp, s, level)


def _buckets(out: list, n: int, pid: int, v_fp, stats: dict, acc: Any, cpu: float, chunk: int):
    """One CAND record per destination (the successor's partition: its fingerprint
    % n, or the model's placement, computed by checker.spark.partition.Candidates).  Successors that belong to this very
    partition and are in its visited set already are dropped here: they would be
    dropped on arrival, after being pickled and shipped for nothing."""
    if out:
        c_fp, c_par, c_act, c_key, c_state, c_flags, c_name, names, c_dest = out[0]
    else:
        c_fp, c_par, c_act, c_key, c_state, c_flags, c_name, names, c_dest = [], [], [], [], [], [], [], (), None
    fp = np.array(c_fp, dtype=np.int64)
    par = np.array(c_par, dtype=np.int64)
    act = np.array(c_act, dtype=np.uint16)
    nix = np.array(c_name, dtype=np.uint32)
    dest = fp % n if c_dest is None else np.array(c_dest, dtype=np.int64)
    if len(v_fp) and len(fp):
        mine = dest == pid
        at = np.searchsorted(v_fp, fp)
        at[at >= len(v_fp)] = 0
        dest[mine & (v_fp[at] == fp)] = -1
    flags_by: dict[int, list] = {}
    for f in c_flags:
        flags_by.setdefault(f[0], []).append(f)
    for d in range(n):
        idx = np.flatnonzero(dest == d)
        sel = idx.tolist()
        flags = []
        if flags_by:
            for pos, i in enumerate(sel):
                for f in flags_by.get(i, ()):
                    flags.append((pos, f[1], f[2], f[3]))
        record = (d, (TAG_CAND, pid, fp[idx], par[idx], act[idx],
                      b"".join([c_key[i] for i in sel]),
                      [dumps_states([c_state[i] for i in sel[k:k + chunk]]) for k in range(0, len(sel), chunk)],
                      flags, nix[idx], names))
        if d == n - 1:
            stats["rss"], stats["cpu"] = peak_rss(), time.process_time() - cpu
            acc.add({("expand", stats["level"], pid): stats})
        yield record
