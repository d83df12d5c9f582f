"""What runs on the Spark executors: expanding a frontier partition, merging the
candidates a partition receives into its visited set, and small look-ups.

Everything here is a module-level function so that Spark ships it by reference
(the workers import ``checker``); the model itself travels once per run in a
broadcast variable (see ``Context``).

Data layout, one record per partition and per level, keyed by the partition
number (a state's partition is ``fingerprint % n``):

``PART = (TAG_PART, v_fp, v_parent, v_act, f_fp, f_keys, f_states)``
    the partition's visited set, sorted by fingerprint, with its parent links
    (``int64`` fingerprints, ``int64`` parent fingerprints, ``uint16`` action
    indices: 18 bytes per state; an initial state is its own parent and its action
    index is its place in ``init_states()``), and its frontier: the states of the
    current level in BFS order, as ``int64`` fingerprints, their order keys
    concatenated (``f_keys``) and the states pickled together as one list.

``CAND = (TAG_CAND, source, fps, parents, acts, keys, states)``
    the successors one source partition sends to one destination, already
    deduplicated inside the source partition.

The order key of a state at depth d is its path from the initial states: the index
of its initial state, then the index of each action in the ``actions()`` list of
the state it was taken from, each as 2 big-endian bytes.  The local engine visits a
level in exactly the lexicographic order of these keys (it expands states in
order, and each new state is stored at its first, i.e. smallest, transition), so
comparing keys tells, without a global sort, which of two events the local engine
meets first.  Events are ordered by ``(key, phase)``: a state-level event has the
state's key, a transition ``(s, i)`` has ``key(s) + i``, which sorts after every
state-level event of ``s`` and before anything of the next state.
"""

from __future__ import annotations

import pickle
import resource
import struct
import sys
from hashlib import blake2b
from typing import Any

import numpy as np
from pyspark.accumulators import AccumulatorParam

from checker.errors import ModelError
from checker.model import ALWAYS, SOMETIMES, Model

TAG_PART = 0
TAG_CAND = 1
KEY_BYTES = 2
MAX_INDEX = 0xFFFF
_PACK = struct.Struct(">H").pack
PICKLE = pickle.HIGHEST_PROTOCOL

# Event phases inside one key (see the module docstring).  State-level keys:
# within_boundary/actions and their checks, then the deadlock check.  Transition
# keys: next_state/encode and the successor checks, step properties, the
# max_states cut, witnesses, state properties (the order of checker.bfs).
PH_STATE, PH_DEAD = 0, 1
PH_NEXT, PH_STEP, PH_CAP, PH_WITNESS, PH_PROP = 0, 1, 2, 3, 4

EMPTY_I64 = np.zeros(0, dtype=np.int64)
EMPTY_U16 = np.zeros(0, dtype=np.uint16)


def ident(k: int) -> int:
    """The partitioner of every keyed RDD of the engine: records are keyed by their
    partition number already (never PySpark's portable_hash)."""
    return k


class StatsParam(AccumulatorParam):
    """Per-task statistics, keyed by (what, level, partition): a retried task
    replaces its own entry instead of counting twice."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, a: dict, b: dict) -> dict:
        a.update(b)
        return a


def peak_rss() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


# ------------------------------------------------------------------ the model, once

class Context:
    """The model and the properties, rebuilt once per worker process and run."""

    def __init__(self, payload: bytes) -> None:
        from pyspark import cloudpickle

        from checker.bfs import _Search
        model, props, check_deadlock = cloudpickle.loads(payload)
        self.model: Model = model
        self.props = list(props)
        self.check_deadlock = check_deadlock
        # checker.bfs's own search object, used for its contract checks and its error
        # messages only, so that both engines word every failure the same way.
        self.search = _Search(model, self.props, None, None, True, check_deadlock, None, 2.0)
        t = type(model)
        self.within = None if getattr(t, "within_boundary", None) is Model.within_boundary else model.within_boundary
        self.encode = None if getattr(t, "encode", None) is Model.encode else model.encode


_CONTEXTS: dict[str, Context] = {}


def context(token: str, payload: Any) -> Context:
    ctx = _CONTEXTS.get(token)
    if ctx is None:
        _CONTEXTS.clear()  # one run at a time per worker process
        ctx = _CONTEXTS[token] = Context(payload.value if hasattr(payload, "value") else payload)
    return ctx


def _error_event(key: bytes, phase: int, where: str, sfp: int, index: int, exc: BaseException) -> tuple:
    return (key, phase, where, int(sfp), index, str(exc) if isinstance(exc, ModelError) else f"{type(exc).__name__}: {exc}")


def _keep_min(d: dict, name: Any, event: tuple) -> None:
    old = d.get(name)
    if old is None or event[:2] < old[:2]:
        d[name] = event


def _part_of(records, pid: int):
    part = None
    for k, v in records:
        if k != pid or v[0] != TAG_PART:
            raise RuntimeError(f"kmc spark engine: partition {pid} received a record for partition {k}")
        part = v
    return part


# ------------------------------------------------------------------------- expand

def expand(params: dict, payload: Any, acc: Any, pid: int, records) -> Any:
    """Expand the frontier of one partition: successors, their fingerprints, step
    properties, deadlocks; successors deduplicated inside the partition (the first,
    i.e. smallest, key wins) and bucketed by destination partition.

    ``params``: level, n, sample (successors to validate in this task), steps
    (indices of the active step properties), deadlock (bool), bound (None, or
    ``(key, inclusive)``: only transitions up to that key; count mode emits no
    candidates), boundary (bool: the level at max_depth, nothing is expanded)."""
    ctx = context(params["token"], payload)
    part = _part_of(records, pid)
    level = params["level"]
    n = params["n"]
    stats: dict[str, Any] = {"frontier": 0, "gen": 0, "acts": {}, "dead": None, "steps": {}, "errors": {},
                             "acting": None, "acting_after": None}
    out_keys: list = []
    if part is not None and len(part[4]):
        _expand_states(ctx, params, part, stats, out_keys)
    stats["rss"] = peak_rss()
    acc.add({("expand", level, pid): stats})
    if params.get("bound") is not None or params.get("boundary"):
        return iter(())
    return _buckets(out_keys, n, pid)


def _expand_states(ctx: Context, params: dict, part: tuple, stats: dict, out: list) -> None:
    model = ctx.model
    search = ctx.search
    props = ctx.props
    actions = model.actions
    next_state = model.next_state
    within = ctx.within
    enc = ctx.encode
    b2 = blake2b
    from_bytes = int.from_bytes
    pack = _PACK
    level = params["level"]
    d1 = level + 1
    sample = params.get("sample", 0)
    step_checks = [(props[i].name, props[i].predicate, i) for i in params.get("steps", ())]
    check_deadlock = params.get("deadlock", False)
    boundary = params.get("boundary", False)
    after = params.get("acting_after")  # boundary: the first state with actions after this key
    bound = params.get("bound")
    bkey, bincl = bound if bound is not None else (None, False)
    counting = bound is not None
    counts = stats["acts"]
    cget = counts.get
    errors = stats["errors"]
    steps_failed = stats["steps"]

    f_fp = part[4]
    keys = part[5]
    kl = len(keys) // len(f_fp)
    states = pickle.loads(part[6])
    stats["frontier"] = len(states)
    fps_list = f_fp.tolist()

    seen: dict[int, int] = {}
    c_fp: list = []
    c_par: list = []
    c_act: list = []
    c_key: list = []
    c_state: list = []
    generated = 0

    bstate = bkey[:kl] if counting else None
    for j, s in enumerate(states):
        sfp = fps_list[j]
        key = keys[j * kl:(j + 1) * kl]
        if counting and key > bstate:
            break  # keys only grow from here on in this partition
        if within is not None or boundary:
            try:
                inside = model.within_boundary(s)
            except Exception as e:  # noqa: BLE001
                _keep_min(errors, "state", _error_event(key, PH_STATE, "state", sfp, -1,
                                                        search._error("within_boundary(state)", s, level, e)))
                continue
            if not inside:
                continue
        try:
            acts = actions(s)
        except Exception as e:  # noqa: BLE001
            _keep_min(errors, "state", _error_event(key, PH_STATE, "state", sfp, -1,
                                                    search._error("actions(state)", s, level, e)))
            continue
        try:
            if type(acts) is not list and (boundary or type(acts) is not tuple):
                acts = search._as_list(acts, s, level)
            if sample and not boundary and not counting:
                search._check_actions(s, acts, level)
        except ModelError as e:
            _keep_min(errors, "state", _error_event(key, PH_STATE, "state", sfp, -1, e))
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
            _keep_min(errors, "state", _error_event(key, PH_STATE, "state", sfp, -1, ModelError(
                f"actions(state) returned {len(acts)} actions at depth {level}; the Spark engine numbers "
                f"actions with 16 bits and supports at most {MAX_INDEX} per state")))
            continue
        for i, a in enumerate(acts):
            tkey = key + pack(i)
            if counting and (tkey > bkey or (tkey == bkey and not bincl)):
                break
            try:
                t = next_state(s, a)
            except Exception as e:  # noqa: BLE001
                _keep_min(errors, "trans", _error_event(tkey, PH_NEXT, "trans", sfp, i,
                                                        search._error("next_state(state, action)", s, level, e, act=a)))
                break
            if sample and not counting:
                sample -= 1
                try:
                    search._check_successor(s, a, t, level)
                except ModelError as e:
                    _keep_min(errors, "trans", _error_event(tkey, PH_NEXT, "trans", sfp, i, e))
                    break
                except Exception as e:  # noqa: BLE001 - next_state raised on the second call
                    _keep_min(errors, "trans", _error_event(tkey, PH_NEXT, "trans", sfp, i,
                                                            search._error("next_state(state, action)", s, level, e, act=a)))
                    break
            name = a[0]
            counts[name] = cget(name, 0) + 1
            generated += 1
            if counting:
                continue
            try:
                h = from_bytes(b2(repr(t).encode() if enc is None else enc(t), digest_size=8).digest(),
                               "little", signed=True)
            except Exception as e:  # noqa: BLE001
                _keep_min(errors, "trans", _error_event(tkey, PH_NEXT, "trans", sfp, i,
                                                        search._error("encode(state)", t, d1, e, via=a)))
                break
            if step_checks:
                failed = []
                try:
                    for chk in step_checks:
                        if not chk[1](s, a, t):
                            failed.append(chk)
                except Exception as e:  # noqa: BLE001
                    _keep_min(errors, "trans", _error_event(tkey, PH_STEP, "trans", sfp, i, search._error(
                        f"the predicate of step property {chk[0]!r}", s, level, e, act=a)))
                    break
                if failed:
                    for chk in failed:
                        steps_failed[chk[2]] = (tkey, PH_STEP, int(sfp), i, int(h))
                    step_checks = [c for c in step_checks if c not in failed]
            if h in seen:
                continue
            seen[h] = 1
            c_fp.append(h)
            c_par.append(sfp)
            c_act.append(i)
            c_key.append(tkey)
            c_state.append(t)
    stats["gen"] = generated
    stats["sample_left"] = sample
    out.append((c_fp, c_par, c_act, c_key, c_state))


def _dead_end(ctx: Context, key: bytes, sfp: int, s: Any, level: int, stats: dict) -> None:
    try:
        terminal = ctx.model.is_terminal(s)
    except Exception as e:  # noqa: BLE001
        _keep_min(stats["errors"], "terminal", _error_event(key, PH_DEAD, "terminal", sfp, -1,
                                                            ctx.search._error("is_terminal(state)", s, level, e)))
        return
    if not terminal:
        stats["dead"] = (key, PH_DEAD, int(sfp))


def _buckets(out: list, n: int, pid: int):
    if not out:
        c_fp, c_par, c_act, c_key, c_state = [], [], [], [], []
    else:
        c_fp, c_par, c_act, c_key, c_state = out[0]
    fp = np.array(c_fp, dtype=np.int64)
    par = np.array(c_par, dtype=np.int64)
    act = np.array(c_act, dtype=np.uint16)
    dest = fp % n
    for d in range(n):
        idx = np.flatnonzero(dest == d)
        sel = idx.tolist()
        yield (d, (TAG_CAND, pid, fp[idx], par[idx], act[idx],
                   b"".join([c_key[i] for i in sel]),
                   pickle.dumps([c_state[i] for i in sel], PICKLE) if sel else b""))


# -------------------------------------------------------------------------- merge

def merge(params: dict, payload: Any, acc: Any, pid: int, records) -> Any:
    """Merge the candidates a partition received into its visited set: keep the
    smallest key of each fingerprint, drop the visited ones, check the new states
    (witnesses, state properties) in key order, and produce the next frontier."""
    ctx = context(params["token"], payload)
    level = params["level"]
    d1 = level + 1
    part = None
    blobs = []
    for k, v in records:
        if k != pid:
            raise RuntimeError(f"kmc spark engine: partition {pid} received a record for partition {k}")
        if v[0] == TAG_PART:
            part = v
        else:
            blobs.append(v)
    if part is None:
        raise RuntimeError(f"kmc spark engine: partition {pid} lost its visited set")
    v_fp, v_par, v_act = part[1], part[2], part[3]
    kl = KEY_BYTES * (level + 2)
    stats: dict[str, Any] = {"new": 0, "wit": {}, "fail": {}, "errors": {}}

    blobs = [b for b in blobs if len(b[2])]
    if blobs:
        fps = np.concatenate([b[2] for b in blobs])
        pars = np.concatenate([b[3] for b in blobs])
        acts = np.concatenate([b[4] for b in blobs])
        keys = np.frombuffer(b"".join([b[5] for b in blobs]), dtype=f"S{kl}")
        src = np.concatenate([np.full(len(b[2]), j, dtype=np.int32) for j, b in enumerate(blobs)])
        pos = np.concatenate([np.arange(len(b[2]), dtype=np.int32) for b in blobs])
        order = np.lexsort((keys, fps))
        fs = fps[order]
        first = np.ones(len(fs), dtype=bool)
        first[1:] = fs[1:] != fs[:-1]
        sel = order[first]
        ufp = fps[sel]
        if len(v_fp):
            at = np.searchsorted(v_fp, ufp)
            at[at >= len(v_fp)] = 0
            known = v_fp[at] == ufp
            sel = sel[~known]
        # New states in BFS order: by key.
        sel = sel[np.argsort(keys[sel], kind="stable")]
    else:
        sel = np.zeros(0, dtype=np.int64)

    new_n = len(sel)
    stats["new"] = new_n
    if new_n:
        n_fp = fps[sel]
        n_par = pars[sel]
        n_act = acts[sel]
        n_keys = keys[sel]
        n_src = src[sel].tolist()
        n_pos = pos[sel].tolist()
        loaded: dict[int, list] = {}
        new_states = []
        for j, p in zip(n_src, n_pos):
            lst = loaded.get(j)
            if lst is None:
                lst = loaded[j] = pickle.loads(blobs[j][6])
            new_states.append(lst[p])
        loaded.clear()
        _check_new(ctx, params, new_states, n_fp, n_par, n_act, n_keys, d1, stats)
        # The visited set grows by the new states, kept sorted by fingerprint.
        by_fp = np.argsort(n_fp, kind="stable")
        ins = np.searchsorted(v_fp, n_fp[by_fp])
        v_fp = np.insert(v_fp, ins, n_fp[by_fp])
        v_par = np.insert(v_par, ins, n_par[by_fp])
        v_act = np.insert(v_act, ins, n_act[by_fp])
        f_fp = n_fp
        f_keys = n_keys.tobytes()
        f_states = pickle.dumps(new_states, PICKLE)
    else:
        f_fp, f_keys, f_states = EMPTY_I64, b"", b""
    stats["visited"] = len(v_fp)
    stats["visited_bytes"] = int(v_fp.nbytes + v_par.nbytes + v_act.nbytes)
    stats["frontier_bytes"] = int(f_fp.nbytes + len(f_keys) + len(f_states))
    stats["rss"] = peak_rss()
    acc.add({("merge", level, pid): stats})
    yield (pid, (TAG_PART, v_fp, v_par, v_act, f_fp, f_keys, f_states))


def _check_new(ctx: Context, params: dict, states: list, n_fp, n_par, n_act, n_keys, d1: int, stats: dict) -> None:
    props = ctx.props
    search = ctx.search
    wits = [(props[i].name, props[i].predicate, i) for i in params.get("witnesses", ())]
    checks = [(props[i].name, props[i].predicate, i) for i in params.get("props", ())]
    if not wits and not checks:
        return
    fps = n_fp.tolist()
    raw = n_keys.tobytes()
    kl = n_keys.dtype.itemsize
    wit_found = stats["wit"]
    failed_at = stats["fail"]
    errors = stats["errors"]
    for j, t in enumerate(states):
        if wits:
            hit = []
            try:
                for chk in wits:
                    if chk[1](t):
                        hit.append(chk)
            except Exception as e:  # noqa: BLE001
                key = raw[j * kl:(j + 1) * kl]
                _keep_min(errors, "new", (key, PH_WITNESS, "new", int(n_par[j]), int(n_act[j]), str(search._error(
                    f"the predicate of sometimes property {chk[0]!r}", t, d1, e))))
                break
            if hit:
                key = raw[j * kl:(j + 1) * kl]
                for chk in hit:
                    wit_found[chk[2]] = (key, PH_WITNESS, int(fps[j]))
                wits = [c for c in wits if c not in hit]
        if checks:
            bad = []
            try:
                for chk in checks:
                    if not chk[1](t):
                        bad.append(chk)
            except Exception as e:  # noqa: BLE001
                key = raw[j * kl:(j + 1) * kl]
                _keep_min(errors, "new", (key, PH_PROP, "new", int(n_par[j]), int(n_act[j]), str(search._error(
                    f"the predicate of property {chk[0]!r}", t, d1, e))))
                break
            if bad:
                key = raw[j * kl:(j + 1) * kl]
                for chk in bad:
                    failed_at[chk[2]] = (key, PH_PROP, int(fps[j]), int(n_par[j]), int(n_act[j]))
                checks = [c for c in checks if c not in bad]
        if not wits and not checks:
            break


# ------------------------------------------------------------------------ look-ups

def count_keys_below(params: dict, pid: int, records) -> Any:
    """How many frontier states of this partition have a key below the bound
    (``(key, inclusive)``)."""
    part = _part_of(records, pid)
    bkey, incl = params["bound"]
    if part is None or not len(part[4]):
        return iter([(pid, 0)])
    kl = len(part[5]) // len(part[4])
    keys = np.frombuffer(part[5], dtype=f"S{kl}")
    return iter([(pid, int(np.searchsorted(keys, np.frombuffer(bkey, dtype=f"S{kl}")[0],
                                           side="right" if incl else "left")))])


def frontier_keys(records) -> Any:
    for _, v in records:
        if v[0] != TAG_PART or not len(v[4]):
            continue
        kl = len(v[5]) // len(v[4])
        raw = v[5]
        for j in range(len(v[4])):
            yield raw[j * kl:(j + 1) * kl]


def lookup(fps: frozenset, records) -> Any:
    """Parent links ``(fp, parent, action index)`` of the given fingerprints."""
    for _, v in records:
        if v[0] != TAG_PART or not len(v[1]):
            continue
        want = np.array(sorted(fps), dtype=np.int64)
        at = np.searchsorted(v[1], want)
        at[at >= len(v[1])] = 0
        hit = v[1][at] == want
        for w, a in zip(want[hit].tolist(), at[hit].tolist()):
            yield (w, int(v[2][a]), int(v[3][a]))


def part_sizes(records) -> Any:
    """(visited, frontier, visited bytes, frontier bytes) of a partition."""
    for _, v in records:
        if v[0] == TAG_PART:
            yield (len(v[1]), len(v[4]), int(v[1].nbytes + v[2].nbytes + v[3].nbytes),
                   int(v[4].nbytes + len(v[5]) + len(v[6])))


def split_part(n: int, records) -> Any:
    """Re-key records read back from a checkpoint by their partition number."""
    for k, v in records:
        yield (k, v)
