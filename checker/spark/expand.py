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

A state is pickled once, where it is generated, and unpickled once, where it is
expanded; the destination only selects.  That is why state properties and witnesses
are evaluated at the source, on every successor: the destination then keeps the
outcomes of the states that turn out to be new.
"""

from __future__ import annotations

import gc
import struct
import time
from hashlib import blake2b
from typing import Any

import numpy as np

from checker.errors import ModelError
from checker.fingerprint import exact_fingerprint_fn
from checker.search import RECENT_LIMIT
from checker.spark.tasks import (
    CHUNK, EMPTY_I64, FAILED, MAX_INDEX, PH_DEAD, PH_NEXT, PH_STATE, PH_STEP, PROP_RAISED, REACHED, TAG_CAND,
    WITNESS_RAISED, Context, context, dumps_states, error_text, frontier_states, keep_error, leave_collector, part_of, peak_rss,
)

_PACK = struct.Struct(">H").pack
_PACKED = [_PACK(i) for i in range(256)]
_NO_KEY = object()   # the parent's partition_key raised: no successor's key is it


def expand(params: dict, payload: Any, acc: Any, pid: int, records) -> Any:
    """Expand the frontier of one partition: successors, their fingerprints, step
    properties, deadlocks, and the state properties and witnesses of every
    successor; successors deduplicated inside the partition (the first, i.e.
    smallest, key wins) and bucketed by destination partition.

    ``params``: level, n, sample (successors to validate in this task), steps,
    props, witnesses (indices of the properties still checked), deadlock (bool),
    bound (None, or ``(key, inclusive)``: count the transitions up to that key and
    emit nothing), boundary (bool: the level at max_depth, nothing is expanded),
    acting_after (boundary: report the first state with actions after this key)."""
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
    model = ctx.model
    search = ctx.search
    props = ctx.props
    actions = model.actions
    next_state = model.next_state
    within = ctx.within
    enc = ctx.encode
    recent = ctx.recent
    known = ctx.visited_before(params.get("known", ()))
    recent_get = recent.get if recent is not None else None
    b2, rep = blake2b, search.rep    # rep: repr of a state, cheaper (checker.fingerprint.state_repr_fn)
    canon = ctx.canon    # the same repr, and a copy of the state that pickles its parts' values once
    exact = exact_fingerprint_fn(model)    # the model's own fingerprint, if it gives one (no repr, no copy)
    from_bytes = int.from_bytes
    pack = _PACK
    level = params["level"]
    d1 = level + 1
    sample = params.get("sample", 0)
    step_checks = [(props[i].predicate, i) for i in params.get("steps", ())]
    wit_checks = [(props[i].predicate, i) for i in params.get("witnesses", ())]
    state_checks = [(props[i].predicate, i) for i in params.get("props", ())]
    check_deadlock = params.get("deadlock", False)
    boundary = params.get("boundary", False)
    after = params.get("acting_after")
    bound = params.get("bound")
    counting = bound is not None
    counts = stats["acts"]
    cget = counts.get
    ecounts = stats["enabled"]
    eget = ecounts.get
    name_ix: dict[str, int] = {}     # action name -> its index in this task's table (CAND name_ix)
    n = params["n"]
    # None: a state's partition is its fingerprint % n (or there is one partition).
    place = ctx.place if params.get("placed") and n > 1 else None
    # A successor whose key is its parent's very key object lives on the parent's
    # partition, this one: most of them (the key is a part of the state that most
    # actions leave as it is).  Only the others are hashed.
    key_of = ctx.model.partition_key if place is not None else None
    errors = stats["errors"]
    steps_failed = stats["steps"]

    f_fp = part[4]
    keys = part[5]
    kl = len(keys) // len(f_fp)
    states = frontier_states(part)
    stats["frontier"] = len(states)
    fps_list = f_fp.tolist()
    if counting:
        bkey, bincl = bound
        bstate = bkey[:kl]

    seen: set = set()
    add_seen = seen.add
    c_fp: list = []
    c_par: list = []
    c_act: list = []
    c_key: list = []
    c_state: list = []
    c_flags: list = []   # (candidate index, prop, outcome, message)
    c_name: list = []    # index in name_ix of the action that generated the candidate
    c_dest: list = []    # the candidate's partition, when the model places states (place)
    dest_append = c_dest.append
    fp_append, par_append, act_append = c_fp.append, c_par.append, c_act.append
    name_append = c_name.append
    name_get = name_ix.get
    key_append, state_append = c_key.append, c_state.append
    prop_checks = bool(wit_checks or state_checks)
    packed = _PACKED
    generated = 0
    encoded = 0

    for j, s in enumerate(states):
        sfp = fps_list[j]
        key = keys[j * kl:(j + 1) * kl]
        if counting and key > bstate:
            break  # keys only grow from here on in this partition
        if within is not None or boundary:
            try:
                inside = model.within_boundary(s)
            except Exception as e:  # noqa: BLE001
                keep_error(errors, (key, PH_STATE, -1, "state", sfp, -1,
                                     error_text(search.error("within_boundary(state)", s, level, e))))
                continue
            if not inside:
                continue
        try:
            acts = actions(s)
        except Exception as e:  # noqa: BLE001
            keep_error(errors, (key, PH_STATE, -1, "state", sfp, -1,
                                 error_text(search.error("actions(state)", s, level, e))))
            continue
        try:
            if type(acts) is not list and (boundary or type(acts) is not tuple):
                acts = search.as_list(acts, s, level)
            if sample and not boundary and not counting:
                search.check_actions(s, acts, level)
        except ModelError as e:
            keep_error(errors, (key, PH_STATE, -1, "state", sfp, -1, error_text(e)))
            continue
        if boundary:
            if acts:
                if stats["acting"] is None:
                    stats["acting"] = key
                if after is not None and stats["acting_after"] is None and key > after:
                    stats["acting_after"] = key
            elif check_deadlock and stats["dead"] is None:
                _dead_end(ctx, key, sfp, s, level, stats)
            continue
        if not acts:
            if check_deadlock and stats["dead"] is None and not counting:
                _dead_end(ctx, key, sfp, s, level, stats)
            continue
        if len(acts) > MAX_INDEX:
            keep_error(errors, (key, PH_STATE, -1, "state", sfp, -1,
                                 f"actions(state) returned {len(acts)} actions at depth {level}; the Spark engine "
                                 f"numbers actions with 16 bits and supports at most {MAX_INDEX} per state"))
            continue
        for name in {a[0] for a in acts}:
            ecounts[name] = eget(name, 0) + 1
        if key_of is not None:
            try:
                skey = key_of(s)
            except Exception:  # noqa: BLE001 - every successor then goes through place, which words the error
                skey = _NO_KEY
        for i, a in enumerate(acts):
            tkey = key + (packed[i] if i < 256 else pack(i))
            if counting and (tkey > bkey or (tkey == bkey and not bincl)):
                break
            try:
                t = next_state(s, a)
            except Exception as e:  # noqa: BLE001
                keep_error(errors, (tkey, PH_NEXT, -1, "trans", sfp, i,
                                     error_text(search.error("next_state(state, action)", s, level, e, act=a))))
                break
            if sample and not counting:
                sample -= 1
                try:
                    search.check_successor(s, a, t, level)
                except ModelError as e:
                    keep_error(errors, (tkey, PH_NEXT, -1, "trans", sfp, i, error_text(e)))
                    break
                except Exception as e:  # noqa: BLE001 - next_state raised on the second call
                    keep_error(errors, (tkey, PH_NEXT, -1, "trans", sfp, i, error_text(
                        search.error("next_state(state, action)", s, level, e, act=a))))
                    break
            name = a[0]
            counts[name] = cget(name, 0) + 1
            generated += 1
            if counting:
                continue
            h = None if recent is None else recent_get(t)
            c = t
            if h is None:
                encoded += 1
                try:
                    if exact is not None:
                        h = exact(t)
                    elif canon is not None:
                        text, c = canon(t)
                        h = from_bytes(b2(text.encode(), digest_size=8).digest(), "little", signed=True)
                    else:
                        h = from_bytes(b2(rep(t).encode() if enc is None else enc(t), digest_size=8).digest(),
                                       "little", signed=True)
                except Exception as e:  # noqa: BLE001
                    keep_error(errors, (tkey, PH_NEXT, -1, "trans", sfp, i, error_text(search.error(
                        "exact_fingerprint(state)" if exact is not None else "encode(state)", t, d1, e, via=a))))
                    break
                if recent is not None:
                    if len(recent) >= RECENT_LIMIT:
                        recent.clear()
                    recent[t] = h
            if step_checks:
                done = None
                for chk in step_checks:
                    try:
                        ok = chk[0](s, a, t)
                    except Exception as e:  # noqa: BLE001
                        keep_error(errors, (tkey, PH_STEP, chk[1], "trans", sfp, i, error_text(search.error(
                            f"the predicate of step property {props[chk[1]].name!r}", s, level, e, act=a))))
                        done = (done or []) + [chk]
                        continue
                    if not ok:
                        steps_failed[chk[1]] = (tkey, PH_STEP, chk[1], sfp, i, h)
                        done = (done or []) + [chk]
                if done:
                    # Later outcomes of these properties in this partition cannot be the first.
                    step_checks = [c for c in step_checks if c not in done]
            if h in seen:
                continue
            add_seen(h)
            if known is not None and h in known:
                continue    # visited at an earlier level: the destination would drop it
            if prop_checks:
                # Fast path, as in checker.bfs: nothing reached, nothing fails, nothing
                # raises.  Otherwise every predicate is evaluated on its own.
                slow = False
                try:
                    for chk in wit_checks:
                        if chk[0](t):
                            slow = True
                            break
                    else:
                        for chk in state_checks:
                            if not chk[0](t):
                                slow = True
                                break
                except Exception:  # noqa: BLE001
                    slow = True
                if slow:
                    _check_successor_props(search, props, wit_checks, state_checks, t, d1, a, len(c_fp), c_flags)
            fp_append(h)
            par_append(sfp)
            act_append(i)
            key_append(tkey)
            state_append(c)
            ni = name_get(name)
            if ni is None:
                ni = name_ix[name] = len(name_ix)
            name_append(ni)
            if place is not None:
                try:
                    same = key_of(t) is skey
                except Exception:  # noqa: BLE001 - place words it as a model error
                    same = False
                dest_append(pid if same else place(t) % n)
    stats["gen"] = generated
    stats["encoded"] = encoded
    stats["sample_left"] = sample
    out.append((c_fp, c_par, c_act, c_key, c_state, c_flags, c_name, tuple(name_ix), c_dest if place else None))


def _check_successor_props(search, props, wit_checks, state_checks, t, d1, a, index, flags) -> None:
    """Witnesses, then state properties, on a successor that may be new; every
    predicate on its own, so that the driver can tell which outcomes the local
    engine would have seen."""
    for pred, p in wit_checks:
        try:
            if pred(t):
                flags.append((index, p, REACHED, None))
        except Exception as e:  # noqa: BLE001
            flags.append((index, p, WITNESS_RAISED, error_text(search.error(
                f"the predicate of sometimes property {props[p].name!r}", t, d1, e, via=a))))
    for pred, p in state_checks:
        try:
            if not pred(t):
                flags.append((index, p, FAILED, None))
        except Exception as e:  # noqa: BLE001
            flags.append((index, p, PROP_RAISED, error_text(search.error(
                f"the predicate of property {props[p].name!r}", t, d1, e, via=a))))


def _dead_end(ctx: Context, key: bytes, sfp: int, s: Any, level: int, stats: dict) -> None:
    try:
        terminal = ctx.model.is_terminal(s)
    except Exception as e:  # noqa: BLE001
        keep_error(stats["errors"], (key, PH_DEAD, -1, "terminal", sfp, -1,
                                      error_text(ctx.search.error("is_terminal(state)", s, level, e))))
        return
    if not terminal:
        stats["dead"] = (key, PH_DEAD, -1, sfp, -1, 0)


def _buckets(out: list, n: int, pid: int, v_fp, stats: dict, acc: Any, cpu: float, chunk: int):
    """One CAND record per destination (the successor's partition: its fingerprint
    % n, or the model's placement, computed in _expand_states).  Successors that belong to this very
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
