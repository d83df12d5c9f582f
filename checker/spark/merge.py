"""The merge task of a level (checker.spark.tasks has the records' layout): the
candidates a partition received, merged into its visited set (the smallest order
key of each new state wins, the visited ones are dropped), with the outcomes of
the properties on the new states; they become the partition's next frontier.
The states stay pickled as they came: the destination only selects.
"""

from __future__ import annotations

import gc
import time
from typing import Any

import numpy as np

from checker.spark.tasks import (
    CHUNK, EMPTY_I32, EMPTY_I64, EMPTY_U32, KEY_BYTES, PH_PROP, PH_WITNESS, PROP_RAISED, REACHED, SAID, TAG_PART,
    WITNESS_RAISED, WITNESS_UNSTEADY, keep_error, leave_collector, peak_rss,
)


def merge(params: dict, payload: Any, acc: Any, pid: int, records) -> Any:
    """Merge the candidates a partition received into its visited set: keep the
    smallest key of each fingerprint, drop the visited ones, keep the outcomes of
    the properties on the new states, and make them the next frontier (in key
    order; the states themselves stay pickled as they came).  With ``graph`` in
    ``params``, the new states go to the driver's visitor too (checker.spark.graph)."""
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
    size = params.get("chunk", CHUNK)   # successors per pickled chunk of a CAND (checker.spark.expand)
    stats: dict[str, Any] = {"new": 0, "newacts": {}, "events": {}, "errors": {}}
    table: dict[str, int] = {}    # action name -> index, this partition's own (PART f_names)

    if blobs:
        fps = np.concatenate([b[2] for b in blobs])
        pars = np.concatenate([b[3] for b in blobs])
        acts = np.concatenate([b[4] for b in blobs])
        keys = np.frombuffer(b"".join([b[5] for b in blobs]), dtype=f"S{kl}")
        # Where each candidate is: record (src) and position in it (pos), for the
        # outcomes; chunk (in ``chunks``, every record's pickled chunks in a row) and
        # position in that chunk, for the frontier.
        src = np.concatenate([np.full(len(b[2]), j, dtype=np.int32) for j, b in enumerate(blobs)])
        pos = np.concatenate([np.arange(len(b[2]), dtype=np.int32) for b in blobs])
        chunks = [c for b in blobs for c in b[6]]
        first_chunk = np.cumsum([0] + [len(b[6]) for b in blobs])[:-1].astype(np.int32)
        chunk = first_chunk[src] + pos // size
        order = np.lexsort((keys, fps))
        fs = fps[order]
        first = np.ones(len(fs), dtype=bool)
        first[1:] = fs[1:] != fs[:-1]
        sel = order[first]
        # Where each new state's value is read from (``loc``): the winner's own copy,
        # or, with ``own_copies``, an equal state this partition generated itself.
        loc = own_copies(blobs, pid, src, fps, sel, first) if params.get("own_copies") else sel
        if len(v_fp):
            ufp = fps[sel]
            at = np.searchsorted(v_fp, ufp)
            at[at >= len(v_fp)] = 0
            new = v_fp[at] != ufp
            sel, loc = sel[new], loc[new]
        bfs = np.argsort(keys[sel], kind="stable")   # BFS order
        sel, loc = sel[bfs], loc[bfs]
    else:
        sel = loc = EMPTY_I64

    stats["new"] = len(sel)
    stats["own_copies"] = int(np.count_nonzero(loc != sel))
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
        n_chunk = chunk[loc]
        if any(b[7] for b in blobs):
            _outcomes(blobs, n_src, n_pos, n_keys, n_fp, n_par, n_act, stats)
        by_fp = np.argsort(n_fp, kind="stable")
        ins = np.searchsorted(v_fp, n_fp[by_fp])
        v_fp = np.insert(v_fp, ins, n_fp[by_fp])
        v_par = np.insert(v_par, ins, n_par[by_fp])
        v_act = np.insert(v_act, ins, n_act[by_fp])
        used = np.unique(n_chunk)    # a chunk without a new state is dropped here, never unpickled
        remap = np.full(len(chunks), -1, dtype=np.int32)
        remap[used] = np.arange(len(used), dtype=np.int32)
        new_part = (TAG_PART, v_fp, v_par, v_act, n_fp, n_keys.tobytes(), remap[n_chunk],
                    (pos[loc] % size).astype(np.int32), [chunks[j] for j in used.tolist()], n_name, f_names)
    else:
        new_part = (TAG_PART, v_fp, v_par, v_act, EMPTY_I64, b"", EMPTY_I32, EMPTY_I32, [], EMPTY_U32, ())
    if params.get("graph"):
        stats["graph"] = new_part[4], new_part[6], new_part[7], new_part[8]    # the new states (spark.graph)
    stats["visited"] = len(v_fp)
    stats["visited_bytes"] = int(v_fp.nbytes + v_par.nbytes + v_act.nbytes)
    stats["frontier_bytes"] = int(new_part[4].nbytes + len(new_part[5]) + sum(len(b) for b in new_part[8]))
    stats["rss"], stats["cpu"] = peak_rss(), time.process_time() - cpu
    acc.add({("merge", level, pid): stats})
    return (pid, new_part)


def own_copies(blobs: list, pid: int, src, fps, sel, first):
    """For each winner ``sel`` (the first of its fingerprint's run in ``fps``
    sorted by fingerprint, then key; ``first`` marks the runs' starts), a
    candidate with the same fingerprint that this very partition generated, where
    there is one, else the winner itself.

    With states placed by ``partition_key``, about nine in ten of the successors a
    partition receives from another one are states it generated itself in the same
    level (``small:max_isr_shrinks=2`` on two partitions: 43,003 of 47,492): two
    interleavings of a change of the key and a step that keeps it.  The winner (the
    smallest key) keeps its parent link, key, action name and property outcomes; only
    the value is read from the local copy, so the other partition's chunks mostly go
    unused and are dropped here: never stored with the frontier, never unpickled.
    Sound only where equal fingerprints mean equal values (the default ``repr``
    encoding of plain values: the driver decides, ``own_copies``)."""
    own = np.array([b[1] == pid for b in blobs], dtype=bool)[src]
    if own.all() or not own.any():
        return sel
    alt = np.lexsort((~own, fps))[first]   # per fingerprint, a local candidate first
    return np.where(own[alt], alt, sel)


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
                phase = PH_WITNESS if outcome in (WITNESS_RAISED, WITNESS_UNSTEADY) else PH_PROP
                kind = "new" if outcome <= PROP_RAISED else SAID
                keep_error(errors, (key, phase, prop, kind, int(n_par[j]), int(n_act[j]), msg))
            elif prop not in events:
                phase = PH_WITNESS if outcome == REACHED else PH_PROP
                events[prop] = (key, phase, prop, int(n_par[j]), int(n_act[j]), int(n_fp[j]))
