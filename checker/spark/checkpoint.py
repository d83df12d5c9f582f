"""Checkpoints of the Spark engine: every finished level, saved so that an
interrupted run can go on (``kmc check --checkpoint DIR`` / ``--resume DIR``).

DIR is a local path or any Hadoop-compatible URL (``hdfs://``, ``s3a://``...): it
is written and read through Spark and Hadoop's FileSystem API.  Layout::

    DIR/level-00012/parts/   the partitions (visited set, parent links, frontier)
                             as a Spark pickle file
    DIR/level-00012/meta/    one JSON line: the driver's counters (distinct,
                             generated, action counts, witnesses, violations found so
                             far, ...) and the identity of the run

A level counts only once its ``meta/_SUCCESS`` exists (it is written last); older
levels are deleted after a newer one is complete, so a kill at any moment leaves at
least one complete level.  Resuming checks the identity (model, version,
configuration, properties, bounds, partitions) and refuses a checkpoint of another
run.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from checker.errors import UsageError
from checker.spark.tasks import TAG_PART, ident

_LEVEL = re.compile(r"^level-(\d{5,})$")


def check_directory(path: str, flag: str, must_exist: bool) -> None:
    """Fail before Spark starts when a local checkpoint directory is unusable
    (Hadoop URLs other than file: are checked by Spark itself)."""
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", path)
    if m and m.group(1).lower() != "file":
        return
    local = Path(path[5:] if m else path)
    if must_exist:
        if not local.is_dir():
            what = "is a file" if local.exists() else "does not exist"
            raise UsageError(f"{flag} '{path}' {what}; give the directory a run wrote with --checkpoint DIR")
        return
    if local.exists() and not local.is_dir():
        raise UsageError(f"{flag} '{path}' is a file, not a directory; choose a directory with {flag} DIR")
    parent = local.absolute()
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} '{path}': '{parent}' is not writable; choose another directory with {flag} DIR")


def _fs(sc: Any, path: str) -> tuple[Any, Any]:
    jvm = sc._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    return p.getFileSystem(sc._jsc.hadoopConfiguration()), p


def _levels(sc: Any, directory: str) -> list[int]:
    """Complete levels in ``directory``, newest first."""
    fs, root = _fs(sc, directory)
    if not fs.exists(root):
        return []
    out = []
    for st in fs.listStatus(root):
        m = _LEVEL.match(st.getPath().getName())
        if m and fs.exists(_path(sc, directory, int(m.group(1)), "meta/_SUCCESS")):
            out.append(int(m.group(1)))
    return sorted(out, reverse=True)


def _path(sc: Any, directory: str, level: int, sub: str = "") -> Any:
    base = f"{directory.rstrip('/')}/level-{level:05d}"
    return sc._jvm.org.apache.hadoop.fs.Path(f"{base}/{sub}" if sub else base)


def save(sc: Any, directory: str, L: Any, state: dict, level: int) -> None:
    fs, _ = _fs(sc, directory)
    target = _path(sc, directory, level)
    if fs.exists(target):
        fs.delete(target, True)     # an incomplete attempt at this level
    base = target.toString()
    L.saveAsPickleFile(f"{base}/parts", batchSize=1)
    # The counters: one JSON line, written through Hadoop's FileSystem API (no Spark
    # job), then the _SUCCESS marker that makes the level count.
    out = fs.create(_path(sc, directory, level, "meta/part-00000"), True)
    try:
        out.write(bytearray((json.dumps(state, sort_keys=True) + "\n").encode()))
    finally:
        out.close()
    fs.create(_path(sc, directory, level, "meta/_SUCCESS"), True).close()
    for old in _levels(sc, directory):
        if old != level:
            fs.delete(_path(sc, directory, old), True)


def _meta(sc: Any, directory: str) -> tuple[int, dict]:
    levels = _levels(sc, directory)
    if not levels:
        raise UsageError(f"--resume '{directory}' holds no complete checkpoint (no level-NNNNN/meta/_SUCCESS); "
                         f"start the run with --checkpoint DIR")
    level = levels[0]
    lines = sc.textFile(_path(sc, directory, level, "meta").toString()).collect()
    try:
        return level, json.loads("".join(lines))
    except ValueError as e:
        raise UsageError(f"--resume '{directory}': level {level} has a malformed meta file ({e}); "
                         f"delete that level and resume from the one before") from None


def partitions_of(sc: Any, directory: str) -> int:
    try:
        return int(_meta(sc, directory)[1]["identity"]["partitions"])
    except (KeyError, TypeError, ValueError):
        raise UsageError(f"--resume '{directory}': not a kmc checkpoint (no partitions recorded)") from None


def load(sc: Any, directory: str, n: int, identity: dict) -> tuple[Any, dict]:
    level, state = _meta(sc, directory)
    saved = state.get("identity", {})
    if saved != identity:
        diffs = [k for k in sorted(set(saved) | set(identity)) if saved.get(k) != identity.get(k)]
        detail = "; ".join(f"{k}: checkpoint {saved.get(k)!r}, this run {identity.get(k)!r}" for k in diffs[:3])
        raise UsageError(f"--resume '{directory}' was written by another run ({detail}); resume with the "
                         f"same model, configuration, properties, bounds and --spark-partitions")
    rdd = sc.pickleFile(_path(sc, directory, level, "parts").toString())
    from pyspark import StorageLevel

    L = rdd.partitionBy(n, ident)
    L.persist(StorageLevel.MEMORY_AND_DISK)   # read once: the check below fills the cache
    parts = L.map(lambda kv: (kv[0], kv[1][0] == TAG_PART)).collect()
    if sorted(p for p, ok in parts if ok) != list(range(n)):
        raise UsageError(f"--resume '{directory}': level {level} is incomplete ({len(parts)} of {n} partitions)")
    return L, state
