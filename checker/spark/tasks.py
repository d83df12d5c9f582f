"""What the Spark executors share: the records of a level, the model and the
filter once per worker (``Context``), the garbage collector between tasks, the
events' order, and small look-ups.  The two tasks of a level are
checker.spark.expand (a frontier partition's successors) and
checker.spark.merge (what a partition received, into its visited set).

Everything the executors run is a module-level function so that Spark ships it
by reference (the workers import ``checker``); the model itself travels once per
run in a broadcast variable (see ``Context``).

Data layout, one record per partition and per level, keyed by the partition
number (a state's partition is ``fingerprint % n``, or the hash of the model's
``partition_key`` modulo n when it has one: checker.fingerprint.placement_fn):

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

``CAND = (TAG_CAND, source, fps, parents, acts, keys, chunks, flags, name_ix, names)``
    the successors one source partition sends to one destination, deduplicated
    inside the source partition, pickled together ``CHUNK`` at a time (a list of
    pickled lists; siblings share their common parts), with ``flags``: the outcome of the state properties and
    witnesses on each of them, where it is not "holds" / "not reached"; and the
    name of the action that generated each of them, ``names[name_ix[j]]``.

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

import copyreg
import gc
import io
import pickle
import resource
import sys
from typing import Any

import numpy as np
from pyspark.accumulators import AccumulatorParam

from checker.errors import ModelError
from checker.fingerprint import placement_fn, state_canon_fn
from checker.model import Model
from checker.search import Search, Settings

TAG_PART = 0
TAG_CAND = 1
KEY_BYTES = 2
MAX_INDEX = 0xFFFF
PICKLE = pickle.HIGHEST_PROTOCOL
# States per pickled chunk on the wire.  One pickle of a whole task's successors
# costs almost twice as much per state on wide levels: 18.7 microseconds a state
# to pickle 69,103 successors of small:max_records=1 in one list, 12.2 in lists of
# 1,000, 10.3 in lists of 200 (unpickling 4.8, 5.8, 5.0; bytes 200, 195, 192 a
# state): the pickler's memo of every object pickled so far outgrows the
# processor's caches, and memo indices below 256 take one byte.  Siblings, which
# share most of their parts, stay in one chunk.
CHUNK = 200
KNOWN_LIMIT = 1 << 23   # visited fingerprints a worker keeps to filter successors (about 0.6 GB)

# Event phases inside one key (see the module docstring).  State-level keys:
# within_boundary/actions and their checks, then the deadlock check.  Transition
# keys: next_state/encode and the successor checks, step properties, the
# max_states cut, witnesses, state properties (the order of checker.bfs).
PH_STATE, PH_DEAD = 0, 1
PH_NEXT, PH_STEP, PH_CAP, PH_WITNESS, PH_PROP = 0, 1, 2, 3, 4

# Outcomes in CAND flags: a state property fails, a witness is reached, a
# witness's or a state property's predicate raises, or gives the slow path another
# answer than the fast check (not deterministic: its message is final, SAID).
FAILED, REACHED, WITNESS_RAISED, PROP_RAISED, WITNESS_UNSTEADY, PROP_UNSTEADY = 0, 1, 2, 3, 4, 5
SAID = "said"   # the kind of an error whose message the driver reports as it is (checker.spark.rederive)

_NEW = tuple.__new__


class _Reducers(dict):
    """A ``Pickler.dispatch_table`` that pickles a NamedTuple as
    ``tuple.__new__(cls, fields)``, filled class by class as they are met.

    The default reduction of a NamedTuple calls its ``__getnewargs__`` (Python) and
    rebuilds it through ``copyreg.__newobj__`` and the class's own ``__new__``
    (Python again); ``tuple.__new__`` is the C call NamedTuple's ``_make`` makes.
    On 5,121 successors of ``small:max_records=1`` in lists of 200: 5.5 and 1.5
    microseconds a state to pickle and unpickle by default, 4.2 and 1.2 so.  Only
    plain NamedTuple classes qualify (no instance dict, no reduction of their own);
    anything else keeps pickle's own reduction, and the bytes load with a plain
    ``pickle.loads``."""

    def __init__(self) -> None:
        super().__init__(copyreg.dispatch_table)
        self.other: set = set()

    def __missing__(self, cls: type):
        if cls not in self.other:
            if (issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)
                    and cls.__dict__.get("__slots__") == () and cls.__reduce_ex__ is object.__reduce_ex__
                    and cls.__reduce__ is object.__reduce__):
                def reduce(obj, _cls=cls, _new=_NEW, _tuple=tuple):
                    return _new, (_cls, _tuple(obj))
                self[cls] = reduce
                return reduce
            self.other.add(cls)
        raise KeyError(cls)


_REDUCERS = _Reducers()


def dumps_states(states: list) -> bytes:
    """``states`` pickled for the wire or the block manager (``_Reducers``)."""
    out = io.BytesIO()
    p = pickle.Pickler(out, PICKLE)
    p.dispatch_table = _REDUCERS
    p.dump(states)
    return out.getvalue()


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
        # A search core kept for the worker's run: its contract checks and error messages
        # (the level at max_depth), its repr with its memo of parts, and its memo of
        # recent successors (Search.recent), which the partitions' searches share, so
        # that both last across the levels of a run.
        self.search = Search(model, self.props, Settings(keep_going=True, check_deadlock=check_deadlock))
        self.known: set[int] = set()
        self.known_ids: set[int] = set()
        # Where a state lives: fingerprint % n, or the model's partition_key's hash % n.
        self.place = placement_fn(model)
        self.canon = state_canon_fn(model)

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


def error_text(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, ModelError) else f"{type(exc).__name__}: {exc}"


def keep_error(errors: dict, event: tuple) -> None:
    """Keep the first error of each (kind, property)."""
    name = (event[3], event[2])
    old = errors.get(name)
    if old is None or error_order(event) < error_order(old):
        errors[name] = event


def part_of(records, pid: int):
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
    reached them), pickled ``CHUNK`` at a time."""
    n = len(states)
    at = np.arange(n, dtype=np.int32)
    return (TAG_PART, v_fp, v_par, v_act, f_fp, f_keys, at // CHUNK, at % CHUNK,
            [dumps_states(states[k:k + CHUNK]) for k in range(0, n, CHUNK)],
            np.zeros(n, dtype=np.uint32), None)


# ------------------------------------------------------------------------ look-ups

def count_keys_below(params: dict, pid: int, records) -> Any:
    """How many frontier states of this partition have a key below the bound
    (``(key, inclusive)``), and how many of them each action name reached (None
    for a PART of a checkpoint that did not keep the names)."""
    part = part_of(records, pid)
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
