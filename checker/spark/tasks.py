"""What runs on the Spark executors: expanding a frontier partition, merging the
candidates a partition receives into its visited set, and small look-ups.

Everything here is a module-level function so that Spark ships it by reference
(the workers import ``checker``); the model itself travels once per run in a
broadcast variable (see ``Context``).

Data layout, one record per partition and per level, keyed by the partition
number (a state's partition is ``fingerprint % n``):

``PART = (TAG_PART, v_fp, v_parent, v_act, f_fp, f_keys, f_blob, f_pos, blobs, f_name, f_names)``
    the partition's visited set, sorted by fingerprint, with its parent links
    (``int64`` fingerprints, ``int64`` parent fingerprints, ``uint16`` action
    indices: 18 bytes per state; an initial state is its own parent and its action
    index is its place in ``init_states()``), and its frontier: the states of the
    current level in BFS order, as ``int64`` fingerprints, their order keys
    concatenated (``f_keys``), and where each state is: list ``f_blob[j]`` of
    ``blobs`` (pickled lists of states, as they arrived from the source
    partitions) at position ``f_pos[j]``; the name of the action that reached each
    frontier state is ``f_names[f_name[j]]`` (``uint32`` indices into the
    partition's own table; ``f_names`` is None for the initial states, and a
    checkpoint written before the names were kept has 9 fields).

``CAND = (TAG_CAND, source, fps, parents, acts, keys, blob, flags, name_ix, names)``
    the successors one source partition sends to one destination, deduplicated
    inside the source partition, pickled together (so that siblings share their
    common parts), with ``flags``: the outcome of the state properties and
    witnesses on each of them, where it is not "holds" / "not reached"; and the
    name of the action that generated each of them, ``names[name_ix[j]]``.

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

The tasks turn the cyclic garbage collector off while they run (as checker.search
does around a search): what a task builds dies by reference counting or is
returned, and unpickling a level with the collector on costs about seven times as
much (a collection every few hundred new tuples, each walking the worker's heap).
Before they turn it back on they freeze what survives (``leave_collector``): the
worker keeps the model's successor cache (up to 2^17 states, millions of tuples)
from task to task, and the collections that PySpark's own code set off between two
tasks walked all of it, 0.04 s after the first Spark level of ``small`` and 0.25 s
after the tenth, twice a level (3.3 of the worker's 7.5 CPU seconds on ``small``,
``local[1]``).  Frozen objects are still freed by reference counting.  Reading a
broadcast turns the collector back on (PySpark's ``Broadcast.load`` ends with
``gc.enable()``), and every level reads one (the fingerprints published for the
filter): so the tasks read them through ``broadcast_value``, which leaves the
collector as it found it.  Before, every expand task after the first Spark level ran
with the collector on: about 500 young and 4 full collections per task on
``small:max_isr_shrinks=2``, the task 1.4 times slower on its wide levels.

The order key of a state at depth d is its path from the initial states: the index
of its initial state, then the index of each action in the ``actions()`` list of
the state it was taken from, each as 2 big-endian bytes.  The local engine visits a
level in exactly the lexicographic order of these keys (it expands states in
order, and each new state is stored at its first, i.e. smallest, transition), so
comparing keys tells, without a global sort, which of two events the local engine
meets first.  Events are ordered by ``(key, phase)``: a state-level event has the
state's key, a transition ``(s, i)`` has ``key(s) + i``, which sorts after every
state-level event of ``s`` and before anything of the next state.

Events (``stats`` of every task, gathered by the driver):

- a property outcome ``(key, phase, prop, sfp, action index, tfp)``: a failure
  (state or step property) or a witness reached; a deadlock is
  ``(key, PH_DEAD, -1, sfp, -1, 0)``;
- a model error ``(key, phase, prop, kind, fp, action index, message)``, ``prop``
  the property whose predicate raised, or -1.  The driver decides whether the
  local engine would have met it (before the stop; a property's predicate only
  while that property is still checked).
"""

from __future__ import annotations

import gc
import pickle
import resource
import struct
import sys
import time
from hashlib import blake2b
from typing import Any

import numpy as np
from pyspark.accumulators import AccumulatorParam

from checker.errors import ModelError
from checker.model import Model
from checker.search import RECENT_LIMIT, Search, Settings

TAG_PART = 0
TAG_CAND = 1
KEY_BYTES = 2
MAX_INDEX = 0xFFFF
_PACK = struct.Struct(">H").pack
_PACKED = [_PACK(i) for i in range(256)]
PICKLE = pickle.HIGHEST_PROTOCOL
KNOWN_LIMIT = 1 << 23   # visited fingerprints a worker keeps to filter successors (about 0.6 GB)

# Event phases inside one key (see the module docstring).  State-level keys:
# within_boundary/actions and their checks, then the deadlock check.  Transition
# keys: next_state/encode and the successor checks, step properties, the
# max_states cut, witnesses, state properties (the order of checker.bfs).
PH_STATE, PH_DEAD = 0, 1
PH_NEXT, PH_STEP, PH_CAP, PH_WITNESS, PH_PROP = 0, 1, 2, 3, 4

# Outcomes in CAND flags: a state property fails, a witness is reached, a
# witness's or a state property's predicate raises.
FAILED, REACHED, WITNESS_RAISED, PROP_RAISED = 0, 1, 2, 3

EMPTY_I64 = np.zeros(0, dtype=np.int64)
EMPTY_I32 = np.zeros(0, dtype=np.int32)
EMPTY_U16 = np.zeros(0, dtype=np.uint16)
EMPTY_U32 = np.zeros(0, dtype=np.uint32)


def leave_collector() -> None:
    """Turn the cyclic garbage collector back on after a task that ran without it,
    with everything alive now frozen out of its reach (see the module docstring)."""
    gc.freeze()
    gc.enable()


def broadcast_value(bc: Any) -> Any:
    """``bc.value``, with the cyclic garbage collector left as it was: PySpark's
    ``Broadcast.load`` turns it on whatever its state (see the module docstring)."""
    collecting = gc.isenabled()
    try:
        return bc.value
    finally:
        if not collecting:
            gc.disable()


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


def error_order(e: tuple) -> tuple:
    """Errors sort before property outcomes of the same key and phase (checker.bfs
    evaluates every remaining predicate of a failing state, so a raising one wins),
    and among themselves in the order of the property list."""
    return (e[0], e[1], -1, e[2])


# ------------------------------------------------------------------ the model, once

class Context:
    """The model and the properties, rebuilt once per worker process and run."""

    def __init__(self, payload: bytes) -> None:
        from pyspark import cloudpickle

        model, props, check_deadlock = cloudpickle.loads(payload)
        self.model: Model = model
        self.props = list(props)
        self.check_deadlock = check_deadlock
        # checker.bfs's own search object, used for its contract checks and its error
        # messages only, so that both engines word every failure the same way.
        self.search = Search(model, self.props, Settings(keep_going=True, check_deadlock=check_deadlock))
        t = type(model)
        self.within = None if getattr(t, "within_boundary", None) is Model.within_boundary else model.within_boundary
        self.encode = None if getattr(t, "encode", None) is Model.encode else model.encode
        # Successors met recently, by value, with their fingerprints (checker.search's
        # cache, Model.equal_states_encode_equally); kept across the levels of a run.
        self.recent: dict | None = {} if getattr(model, "equal_states_encode_equally", False) else None
        self.known: set[int] = set()
        self.known_ids: set[int] = set()

    def visited_before(self, published: tuple) -> set | None:
        """The fingerprints of every state visited before this level, as the driver
        publishes them (one broadcast of the new states per level), read once per
        worker process: a successor among them is dropped before it is shipped.
        None when nothing was published; a worker stops adding past KNOWN_LIMIT
        (the successors are then shipped and dropped on arrival, as before)."""
        for i, bc in published:     # (number in this run, Broadcast)
            if i not in self.known_ids:
                self.known_ids.add(i)
                value = broadcast_value(bc)
                if len(self.known) + len(value) <= KNOWN_LIMIT:
                    self.known.update(value.tolist())
        return self.known if self.known else None


_CONTEXTS: dict[str, Context] = {}


def context(token: str, payload: Any) -> Context:
    ctx = _CONTEXTS.get(token)
    if ctx is None:
        gc.unfreeze()      # a new run: what the last one froze (leave_collector) may be collected again
        _CONTEXTS.clear()  # one run at a time per worker process
        # (payload: the model's Broadcast, or its bytes; not hasattr(payload, "value"),
        # which would read the broadcast with the collector's state lost)
        ctx = _CONTEXTS[token] = Context(payload if isinstance(payload, bytes) else broadcast_value(payload))
    return ctx


def _message(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, ModelError) else f"{type(exc).__name__}: {exc}"


def _keep_error(errors: dict, event: tuple) -> None:
    """Keep the first error of each (kind, property)."""
    name = (event[3], event[2])
    old = errors.get(name)
    if old is None or error_order(event) < error_order(old):
        errors[name] = event


def _part_of(records, pid: int):
    part = None
    for k, v in records:
        if k != pid or v[0] != TAG_PART:
            raise RuntimeError(f"kmc spark engine: partition {pid} received a record for partition {k}")
        part = v
    return part


def frontier_states(part: tuple) -> list:
    """The frontier of a PART, in BFS order."""
    f_blob, f_pos, blobs = part[6], part[7], part[8]
    if not len(f_blob):
        return []
    lists = [pickle.loads(b) if b else [] for b in blobs]
    return [lists[j][p] for j, p in zip(f_blob.tolist(), f_pos.tolist())]


def make_part(v_fp, v_par, v_act, f_fp, f_keys: bytes, states: list) -> tuple:
    """A PART whose frontier is ``states`` (in BFS order, initial states: no action
    reached them), pickled as one list."""
    n = len(states)
    return (TAG_PART, v_fp, v_par, v_act, f_fp, f_keys, np.zeros(n, dtype=np.int32),
            np.arange(n, dtype=np.int32), [pickle.dumps(states, PICKLE)] if n else [],
            np.zeros(n, dtype=np.uint32), None)


# ------------------------------------------------------------------------- expand

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
        part = _part_of(records, pid)
        level = params["level"]
        stats: dict[str, Any] = {"frontier": 0, "gen": 0, "acts": {}, "enabled": {},
                                 "dead": None, "steps": {}, "errors": {},
                                 "acting": None, "acting_after": None, "sample_left": params.get("sample", 0),
                                 "level": level}
        out: list = []
        if part is not None and len(part[4]):
            _expand_states(ctx, params, part, stats, out)
        if params.get("bound") is not None or params.get("boundary"):
            stats["rss"], stats["cpu"] = peak_rss(), time.process_time() - cpu
            acc.add({("expand", level, pid): stats})
            return iter(())
        return iter(list(_buckets(out, params["n"], pid, part[1] if part is not None else EMPTY_I64, stats,
                                  acc, cpu)))
    finally:
        if collecting:
            leave_collector()


def _expand_states(ctx: Context, params: dict, part: tuple, stats: dict, out: list) -> None:
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
    b2 = blake2b
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
    fp_append, par_append, act_append = c_fp.append, c_par.append, c_act.append
    name_append = c_name.append
    name_get = name_ix.get
    key_append, state_append = c_key.append, c_state.append
    prop_checks = bool(wit_checks or state_checks)
    packed = _PACKED
    generated = 0

    for j, s in enumerate(states):
        sfp = fps_list[j]
        key = keys[j * kl:(j + 1) * kl]
        if counting and key > bstate:
            break  # keys only grow from here on in this partition
        if within is not None or boundary:
            try:
                inside = model.within_boundary(s)
            except Exception as e:  # noqa: BLE001
                _keep_error(errors, (key, PH_STATE, -1, "state", sfp, -1,
                                     _message(search.error("within_boundary(state)", s, level, e))))
                continue
            if not inside:
                continue
        try:
            acts = actions(s)
        except Exception as e:  # noqa: BLE001
            _keep_error(errors, (key, PH_STATE, -1, "state", sfp, -1,
                                 _message(search.error("actions(state)", s, level, e))))
            continue
        try:
            if type(acts) is not list and (boundary or type(acts) is not tuple):
                acts = search.as_list(acts, s, level)
            if sample and not boundary and not counting:
                search.check_actions(s, acts, level)
        except ModelError as e:
            _keep_error(errors, (key, PH_STATE, -1, "state", sfp, -1, _message(e)))
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
            _keep_error(errors, (key, PH_STATE, -1, "state", sfp, -1,
                                 f"actions(state) returned {len(acts)} actions at depth {level}; the Spark engine "
                                 f"numbers actions with 16 bits and supports at most {MAX_INDEX} per state"))
            continue
        for name in {a[0] for a in acts}:
            ecounts[name] = eget(name, 0) + 1
        for i, a in enumerate(acts):
            tkey = key + (packed[i] if i < 256 else pack(i))
            if counting and (tkey > bkey or (tkey == bkey and not bincl)):
                break
            try:
                t = next_state(s, a)
            except Exception as e:  # noqa: BLE001
                _keep_error(errors, (tkey, PH_NEXT, -1, "trans", sfp, i,
                                     _message(search.error("next_state(state, action)", s, level, e, act=a))))
                break
            if sample and not counting:
                sample -= 1
                try:
                    search.check_successor(s, a, t, level)
                except ModelError as e:
                    _keep_error(errors, (tkey, PH_NEXT, -1, "trans", sfp, i, _message(e)))
                    break
                except Exception as e:  # noqa: BLE001 - next_state raised on the second call
                    _keep_error(errors, (tkey, PH_NEXT, -1, "trans", sfp, i, _message(
                        search.error("next_state(state, action)", s, level, e, act=a))))
                    break
            name = a[0]
            counts[name] = cget(name, 0) + 1
            generated += 1
            if counting:
                continue
            h = None if recent is None else recent_get(t)
            if h is None:
                try:
                    h = from_bytes(b2(repr(t).encode() if enc is None else enc(t), digest_size=8).digest(),
                                   "little", signed=True)
                except Exception as e:  # noqa: BLE001
                    _keep_error(errors, (tkey, PH_NEXT, -1, "trans", sfp, i,
                                         _message(search.error("encode(state)", t, d1, e, via=a))))
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
                        _keep_error(errors, (tkey, PH_STEP, chk[1], "trans", sfp, i, _message(search.error(
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
            state_append(t)
            ni = name_get(name)
            if ni is None:
                ni = name_ix[name] = len(name_ix)
            name_append(ni)
    stats["gen"] = generated
    stats["sample_left"] = sample
    out.append((c_fp, c_par, c_act, c_key, c_state, c_flags, c_name, tuple(name_ix)))


def _check_successor_props(search, props, wit_checks, state_checks, t, d1, a, index, flags) -> None:
    """Witnesses, then state properties, on a successor that may be new; every
    predicate on its own, so that the driver can tell which outcomes the local
    engine would have seen."""
    for pred, p in wit_checks:
        try:
            if pred(t):
                flags.append((index, p, REACHED, None))
        except Exception as e:  # noqa: BLE001
            flags.append((index, p, WITNESS_RAISED, _message(search.error(
                f"the predicate of sometimes property {props[p].name!r}", t, d1, e, via=a))))
    for pred, p in state_checks:
        try:
            if not pred(t):
                flags.append((index, p, FAILED, None))
        except Exception as e:  # noqa: BLE001
            flags.append((index, p, PROP_RAISED, _message(search.error(
                f"the predicate of property {props[p].name!r}", t, d1, e, via=a))))


def _dead_end(ctx: Context, key: bytes, sfp: int, s: Any, level: int, stats: dict) -> None:
    try:
        terminal = ctx.model.is_terminal(s)
    except Exception as e:  # noqa: BLE001
        _keep_error(stats["errors"], (key, PH_DEAD, -1, "terminal", sfp, -1,
                                      _message(ctx.search.error("is_terminal(state)", s, level, e))))
        return
    if not terminal:
        stats["dead"] = (key, PH_DEAD, -1, sfp, -1, 0)


def _buckets(out: list, n: int, pid: int, v_fp, stats: dict, acc: Any, cpu: float):
    """One CAND record per destination.  Successors that belong to this very
    partition and are in its visited set already are dropped here: they would be
    dropped on arrival, after being pickled and shipped for nothing."""
    if out:
        c_fp, c_par, c_act, c_key, c_state, c_flags, c_name, names = out[0]
    else:
        c_fp, c_par, c_act, c_key, c_state, c_flags, c_name, names = [], [], [], [], [], [], [], ()
    fp = np.array(c_fp, dtype=np.int64)
    par = np.array(c_par, dtype=np.int64)
    act = np.array(c_act, dtype=np.uint16)
    nix = np.array(c_name, dtype=np.uint32)
    dest = fp % n
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
                      pickle.dumps([c_state[i] for i in sel], PICKLE) if sel else b"",
                      flags, nix[idx], names))
        if d == n - 1:
            stats["rss"], stats["cpu"] = peak_rss(), time.process_time() - cpu
            acc.add({("expand", stats["level"], pid): stats})
        yield record


# -------------------------------------------------------------------------- merge

def merge(params: dict, payload: Any, acc: Any, pid: int, records) -> Any:
    """Merge the candidates a partition received into its visited set: keep the
    smallest key of each fingerprint, drop the visited ones, keep the outcomes of
    the properties on the new states, and make them the next frontier (in key
    order; the states themselves stay pickled as they came)."""
    collecting = gc.isenabled()
    if collecting:
        gc.disable()   # see the module docstring
    try:
        record = _merge(params, pid, records, acc)
    finally:
        if collecting:
            leave_collector()
    yield record


def _merge(params: dict, pid: int, records, acc: Any) -> tuple:
    cpu = time.process_time()
    level = params["level"]
    part = None
    blobs = []
    for k, v in records:
        if k != pid:
            raise RuntimeError(f"kmc spark engine: partition {pid} received a record for partition {k}")
        if v[0] == TAG_PART:
            part = v
        elif len(v[2]):
            blobs.append(v)
    if part is None:
        raise RuntimeError(f"kmc spark engine: partition {pid} lost its visited set")
    v_fp, v_par, v_act = part[1], part[2], part[3]
    kl = KEY_BYTES * (level + 2)
    stats: dict[str, Any] = {"new": 0, "newacts": {}, "events": {}, "errors": {}}
    table: dict[str, int] = {}    # action name -> index, this partition's own (PART f_names)

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
        if len(v_fp):
            ufp = fps[sel]
            at = np.searchsorted(v_fp, ufp)
            at[at >= len(v_fp)] = 0
            sel = sel[v_fp[at] != ufp]
        sel = sel[np.argsort(keys[sel], kind="stable")]   # BFS order
    else:
        sel = EMPTY_I64

    stats["new"] = len(sel)
    stats["received"] = len(fps) if blobs else 0
    stats["new_fps"] = fps[sel] if len(sel) else EMPTY_I64
    if len(sel):
        # The action name of each new state, in one table for the partition: the
        # sources' tables are small (one entry per action name), the arrays are numpy.
        names = np.concatenate([np.array([table.setdefault(nm, len(table)) for nm in b[9]],
                                         dtype=np.uint32)[b[8]] if len(b[9]) else b[8] for b in blobs])
        n_name = names[sel]
        f_names = tuple(table)
        stats["newacts"] = {f_names[i]: int(c) for i, c in enumerate(np.bincount(n_name, minlength=len(table)))
                            if c}
        n_fp = fps[sel]
        n_par = pars[sel]
        n_act = acts[sel]
        n_keys = keys[sel]
        n_src = src[sel]
        n_pos = pos[sel]
        if any(b[7] for b in blobs):
            _outcomes(blobs, n_src, n_pos, n_keys, n_fp, n_par, n_act, stats)
        by_fp = np.argsort(n_fp, kind="stable")
        ins = np.searchsorted(v_fp, n_fp[by_fp])
        v_fp = np.insert(v_fp, ins, n_fp[by_fp])
        v_par = np.insert(v_par, ins, n_par[by_fp])
        v_act = np.insert(v_act, ins, n_act[by_fp])
        used = np.unique(n_src)
        remap = np.full(len(blobs), -1, dtype=np.int32)
        remap[used] = np.arange(len(used), dtype=np.int32)
        new_part = (TAG_PART, v_fp, v_par, v_act, n_fp, n_keys.tobytes(), remap[n_src], n_pos.astype(np.int32),
                    [blobs[j][6] for j in used.tolist()], n_name, f_names)
    else:
        new_part = (TAG_PART, v_fp, v_par, v_act, EMPTY_I64, b"", EMPTY_I32, EMPTY_I32, [], EMPTY_U32, ())
    stats["visited"] = len(v_fp)
    stats["visited_bytes"] = int(v_fp.nbytes + v_par.nbytes + v_act.nbytes)
    stats["frontier_bytes"] = int(new_part[4].nbytes + len(new_part[5]) + sum(len(b) for b in new_part[8]))
    stats["rss"], stats["cpu"] = peak_rss(), time.process_time() - cpu
    acc.add({("merge", level, pid): stats})
    return (pid, new_part)


def _outcomes(blobs, n_src, n_pos, n_keys, n_fp, n_par, n_act, stats) -> None:
    """The property outcomes of the new states: per property, the first failure or
    witness and the first error (in key order, i.e. the first in this partition)."""
    flagged: dict[tuple[int, int], list] = {}
    for j, b in enumerate(blobs):
        for pos, p, outcome, msg in b[7]:
            flagged.setdefault((j, pos), []).append((p, outcome, msg))
    if not flagged:
        return
    events = stats["events"]
    errors = stats["errors"]
    raw = n_keys.tobytes()
    kl = n_keys.dtype.itemsize
    for j, (b, p) in enumerate(zip(n_src.tolist(), n_pos.tolist())):
        got = flagged.get((b, p))
        if not got:
            continue
        key = raw[j * kl:(j + 1) * kl]
        for prop, outcome, msg in got:
            if outcome >= WITNESS_RAISED:
                phase = PH_WITNESS if outcome == WITNESS_RAISED else PH_PROP
                _keep_error(errors, (key, phase, prop, "new", int(n_par[j]), int(n_act[j]), msg))
            elif prop not in events:
                phase = PH_WITNESS if outcome == REACHED else PH_PROP
                events[prop] = (key, phase, prop, int(n_par[j]), int(n_act[j]), int(n_fp[j]))


# ------------------------------------------------------------------------ look-ups

def count_keys_below(params: dict, pid: int, records) -> Any:
    """How many frontier states of this partition have a key below the bound
    (``(key, inclusive)``), and how many of them each action name reached (None
    for a PART of a checkpoint that did not keep the names)."""
    part = _part_of(records, pid)
    bkey, incl = params["bound"]
    if part is None or not len(part[4]):
        return iter([(pid, 0, {})])
    kl = len(part[5]) // len(part[4])
    keys = np.frombuffer(part[5], dtype=f"S{kl}")
    k = int(np.searchsorted(keys, np.frombuffer(bkey, dtype=f"S{kl}")[0], side="right" if incl else "left"))
    if len(part) < 11 or part[10] is None:
        return iter([(pid, k, None)])
    names = part[10]
    by = {names[i]: int(c) for i, c in enumerate(np.bincount(part[9][:k], minlength=len(names))) if c}
    return iter([(pid, k, by)])


def frontier_keys(records) -> Any:
    for _, v in records:
        if v[0] != TAG_PART or not len(v[4]):
            continue
        kl = len(v[5]) // len(v[4])
        raw = v[5]
        for j in range(len(v[4])):
            yield raw[j * kl:(j + 1) * kl]


def visited_fps(records) -> Any:
    """The visited fingerprints of a partition (one array)."""
    for _, v in records:
        if v[0] == TAG_PART:
            yield v[1]


def lookup(fps: frozenset, records) -> Any:
    """Parent links ``(fp, parent, action index)`` of the given fingerprints."""
    want = np.array(sorted(fps), dtype=np.int64)
    for _, v in records:
        if v[0] != TAG_PART or not len(v[1]):
            continue
        at = np.searchsorted(v[1], want)
        at[at >= len(v[1])] = 0
        hit = v[1][at] == want
        for w, a in zip(want[hit].tolist(), at[hit].tolist()):
            yield (w, int(v[2][a]), int(v[3][a]))
