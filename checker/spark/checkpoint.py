"""Checkpoints of the Spark engine: every finished level, saved so that an
interrupted run can go on (``kmc check --checkpoint DIR`` / ``--resume DIR``).

DIR is a local path or any Hadoop-compatible URL (``hdfs://``, ``s3a://``...): it
is written and read through Spark and Hadoop's FileSystem API.  Layout::

    DIR/level-00012/parts/   the partitions (visited set, parent links, frontier)
                             as a Spark pickle file, one part-NNNNN per partition
    DIR/level-00012/meta/    one JSON line: the driver's counters (distinct,
                             generated, action counts, witnesses, violations found so
                             far, ...), the identity of the run, the size and SHA-256
                             of every partition file, and the SHA-256 of the line
                             itself

A level counts only once its ``meta/_SUCCESS`` exists (it is written last).  The
two newest complete levels are kept (older ones are deleted), so a kill at any
moment leaves a complete level, and a newest level found corrupt leaves the one
before it to resume from.

A checkpoint is input like any other: resuming proves it is intact before using
it.  The meta line must match its own digest, every partition file its size and
digest, the counters what the visited sets recount (states in the visited sets,
states in the frontiers), and the identity (model, version, configuration,
properties, bounds, partitions) this run's.  Any mismatch is one line naming the
level and the file, with advice that is true for this directory: whether the
level before is intact and can be resumed from once the corrupt one is deleted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from checker.errors import UsageError
from checker.spark.session import failure, log_path
from checker.spark.tasks import TAG_PART, ident

_LEVEL = re.compile(r"^level-(\d{5,})$")
META = "meta/part-00000"
FORMAT = "kmc-checkpoint"
VERSION = 2               # 2: digests of the meta line and of every partition file
KEEP = 2                  # complete levels kept


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


def _local(directory: str) -> Path | None:
    """The local directory a checkpoint URL names, or None for a remote file system."""
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", directory)
    if m and m.group(1).lower() != "file":
        return None
    return Path(re.sub(r"^file:(//)?", "", directory) if m else directory)


def _levels(sc: Any, directory: str) -> list[int]:
    """Complete levels in ``directory``, newest first (a local directory is listed
    without Spark, so that it can be checked before Spark starts)."""
    local = _local(directory)
    if local is not None:
        found = [(int(m.group(1)), p) for p in (local.iterdir() if local.is_dir() else [])
                 if (m := _LEVEL.match(p.name))]
        return sorted((lv for lv, p in found if (p / "meta" / "_SUCCESS").exists()), reverse=True)
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
    return sc._jvm.org.apache.hadoop.fs.Path(_name(directory, level, sub))


def _name(directory: str, level: int, sub: str = "") -> str:
    base = f"{directory.rstrip('/')}/level-{level:05d}"
    return f"{base}/{sub}" if sub else base


def _digest_of(doc: dict) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _file_digests(sc: Any, directory: str, level: int) -> dict[str, list]:
    """``{part-NNNNN: [size, sha256]}`` of the partition files of a level, as they
    are on disk now.  Local files are hashed here; a remote file system's by a
    Spark job (the files may be large, the driver need not read them)."""
    local = _local(directory)
    if local is not None:
        parts = local / f"level-{level:05d}" / "parts"
        out = {}
        for f in sorted(parts.glob("part-*")) if parts.is_dir() else []:
            h = hashlib.sha256()
            with open(f, "rb") as src:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    h.update(chunk)
            out[f.name] = [f.stat().st_size, h.hexdigest()]
        return out
    rows = sc.binaryFiles(_name(directory, level, "parts")).map(
        lambda kv: (kv[0].rstrip("/").rsplit("/", 1)[-1], len(kv[1]), hashlib.sha256(kv[1]).hexdigest())).collect()
    return {name: [size, h] for name, size, h in sorted(rows) if name.startswith("part-")}


def save(sc: Any, directory: str, L: Any, state: dict, level: int) -> None:
    """Write ``level`` to ``directory``; a failure to write (a full disk) is one line."""
    try:
        _save(sc, directory, L, state, level)
    except (UsageError, KeyboardInterrupt):
        raise
    except Exception as e:  # noqa: BLE001 - Hadoop's IOException through Py4J
        known = failure(e)
        if known is not None:
            raise UsageError(f"cannot write checkpoint level {level} to {directory}: {known}") from None
        raise UsageError(f"cannot write checkpoint level {level} to {directory}: {java_cause(e)}; choose "
                         f"another --checkpoint DIR (Spark's log: {log_path()})") from None


def _save(sc: Any, directory: str, L: Any, state: dict, level: int) -> None:
    fs, _ = _fs(sc, directory)
    target = _path(sc, directory, level)
    if fs.exists(target):
        fs.delete(target, True)     # an incomplete attempt at this level
    base = target.toString()
    L.saveAsPickleFile(f"{base}/parts", batchSize=1)
    # The counters and the digests: one JSON line, written through Hadoop's
    # FileSystem API (no Spark job), then the _SUCCESS marker that makes the level count.
    meta = {**state, "format": FORMAT, "version": VERSION, "level_dir": f"level-{level:05d}",
            "parts": _file_digests(sc, directory, level)}
    meta["digest"] = _digest_of(meta)
    out = fs.create(_path(sc, directory, level, META), True)
    try:
        out.write(bytearray((json.dumps(meta, sort_keys=True) + "\n").encode()))
    finally:
        out.close()
    fs.create(_path(sc, directory, level, "meta/_SUCCESS"), True).close()
    for old in _levels(sc, directory)[KEEP:]:
        fs.delete(_path(sc, directory, old), True)


class Corrupt(Exception):
    """What is wrong with one level: ``file`` (relative to the level) and ``what``."""

    def __init__(self, level: int, file: str, what: str) -> None:
        super().__init__(f"{file} {what}")
        self.level, self.file, self.what = level, file, what


def _read_meta(sc: Any, directory: str, level: int) -> dict:
    local = _local(directory)
    try:
        if local is not None:
            raw = (local / f"level-{level:05d}" / META).read_bytes()
            text = raw.decode("utf-8")
        else:
            text = "".join(sc.textFile(_name(directory, level, "meta")).collect())
    except FileNotFoundError:
        raise Corrupt(level, META, "is missing") from None
    except UnicodeDecodeError:
        raise Corrupt(level, META, "is not UTF-8 text (a byte was changed)") from None
    except OSError as e:
        raise Corrupt(level, META, f"cannot be read ({e.strerror or e})") from None
    except Exception as e:  # noqa: BLE001 - Hadoop's own errors, through Py4J
        raise Corrupt(level, META, f"cannot be read ({java_cause(e)})") from None
    try:
        meta = json.loads(text, parse_constant=lambda c: None)
    except (ValueError, RecursionError):
        raise Corrupt(level, META, "is not valid JSON (truncated or edited)") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        if isinstance(meta, dict) and "identity" in meta and "format" not in meta:
            raise Corrupt(level, META, "was written by an older kmc, without integrity digests")
        raise Corrupt(level, META, "is not a kmc checkpoint's meta line")
    digest = meta.pop("digest", None)
    if digest != _digest_of(meta):
        raise Corrupt(level, META, "does not match its own digest (edited or damaged)")
    if meta.get("level_dir") != f"level-{level:05d}":
        raise Corrupt(level, META, f"belongs to {meta.get('level_dir')!r} (a level copied or renamed)")
    return meta


def _check_files(sc: Any, directory: str, level: int, meta: dict) -> None:
    want = meta.get("parts")
    if not isinstance(want, dict):
        raise Corrupt(level, META, "lists no partition files")
    try:
        have = _file_digests(sc, directory, level)
    except Exception as e:  # noqa: BLE001 - a remote file system's errors
        raise Corrupt(level, "parts/", f"cannot be read ({java_cause(e)})") from None
    for name in sorted(set(want) | set(have)):
        where = f"parts/{name}"
        if name not in have:
            raise Corrupt(level, where, "is missing")
        if name not in want:
            raise Corrupt(level, where, "is not one of the level's files (added after it was saved)")
        size, digest = want[name]
        if have[name][0] != size:
            how = "truncated" if have[name][0] < size else "longer than saved"
            raise Corrupt(level, where, f"is {how} ({have[name][0]} bytes, saved with {size})")
        if have[name][1] != digest:
            raise Corrupt(level, where, "does not match its digest (a byte changed)")


def _verified(sc: Any, directory: str, level: int) -> dict:
    meta = _read_meta(sc, directory, level)
    _check_files(sc, directory, level, meta)
    return meta


def _advice(sc: Any, directory: str, levels: list[int], bad: Corrupt) -> UsageError:
    """The one line for a corrupt newest level, with advice that holds for this
    directory: the level before it is checked too."""
    where = f"--resume '{directory}': level {bad.level} is corrupt: {_name(directory, bad.level, bad.file)} {bad.what}"
    older = [lv for lv in levels if lv < bad.level]
    if older:
        try:
            _verified(sc, directory, older[0])
        except Corrupt as e2:
            return UsageError(f"{where}; the level before it ({older[0]}) is corrupt too ({e2.file} {e2.what}): "
                              f"no intact level is left, so start the run again with an empty --checkpoint DIR")
        return UsageError(f"{where}; level {older[0]} before it is intact: delete "
                          f"{_name(directory, bad.level)} and run the same --resume again to go on from "
                          f"level {older[0]}")
    return UsageError(f"{where}; it is the only complete level, so start the run again with an empty "
                      f"--checkpoint DIR")


_CHECKED: dict[str, tuple[int, dict]] = {}


def _newest(sc: Any, directory: str) -> tuple[int, dict]:
    """The newest complete level and its verified meta (checked once per process)."""
    if directory in _CHECKED:
        return _CHECKED[directory]
    levels = _levels(sc, directory)
    if not levels:
        raise UsageError(f"--resume '{directory}' holds no complete checkpoint (no level-NNNNN/meta/_SUCCESS); "
                         f"start the run with --checkpoint DIR")
    try:
        meta = _verified(sc, directory, levels[0])
    except Corrupt as bad:
        raise _advice(sc, directory, levels, bad) from None
    _CHECKED[directory] = (levels[0], meta)
    return levels[0], meta


def preflight(directory: str) -> None:
    """Prove a local checkpoint intact before Spark starts (seconds, not a JVM's
    start-up, for a corrupt one): its newest complete level's meta line and every
    partition file must match their digests.  A remote directory is checked by
    ``load`` once Spark is up."""
    _CHECKED.pop(directory, None)
    if _local(directory) is not None:
        _newest(None, directory)


def partitions_of(sc: Any, directory: str) -> int:
    level, meta = _newest(sc, directory)
    try:
        n = meta["identity"]["partitions"]
        if isinstance(n, int) and not isinstance(n, bool) and n >= 1:
            return n
    except (KeyError, TypeError):
        pass
    raise UsageError(f"--resume '{directory}': level {level}'s {META} records no partition count; "
                     f"start the run again with an empty --checkpoint DIR")


def identity(model: Any, props: list, partitions: int, probe: str | None, *, max_depth: int | None,
             max_states: int | None, keep_going: bool, check_deadlock: bool) -> dict:
    """What a resumed run must share with the run that wrote the checkpoint: the
    model, its version and configuration, the properties, the bounds, the number of
    partitions and, for states placed by ``partition_key``, where the key places a
    probe of states (``probe``; None: placed by fingerprint)."""
    try:
        config = json.loads(json.dumps(dict(model.config()), default=repr))
    except Exception:  # noqa: BLE001 - a configuration JSON cannot hold is compared by its repr
        config = repr(model.config())
    return {
        "model": model.name, "version": str(model.version), "config": config,
        "properties": [p.name for p in props], "max_depth": max_depth,
        "max_states": max_states, "keep_going": keep_going,
        "check_deadlock": check_deadlock, "partitions": partitions,
        **({"placement": "partition_key", "placement_probe": probe} if probe is not None else {}),
    }


def load(sc: Any, directory: str, n: int, identity: dict) -> tuple[Any, dict]:
    level, state = _newest(sc, directory)
    _CHECKED.pop(directory, None)       # the run goes on writing there
    levels = _levels(sc, directory)
    saved = state.get("identity", {})
    if saved != identity:
        diffs = [k for k in sorted(set(saved) | set(identity)) if saved.get(k) != identity.get(k)]
        detail = "; ".join(f"{k}: checkpoint {saved.get(k)!r}, this run {identity.get(k)!r}" for k in diffs[:3])
        if diffs == ["placement_probe"]:
            raise UsageError(f"--resume '{directory}' was written by a run that placed states in other partitions "
                             f"({detail}): the model's partition_key has changed since, so its partitions cannot be "
                             f"resumed; start the run again with an empty --checkpoint DIR")
        raise UsageError(f"--resume '{directory}' was written by another run ({detail}); resume with the "
                         f"same model, configuration, properties, bounds and --spark-partitions")
    from pyspark import StorageLevel

    try:
        rdd = sc.pickleFile(_path(sc, directory, level, "parts").toString())
        L = rdd.partitionBy(n, ident)
        L.persist(StorageLevel.MEMORY_AND_DISK)   # read once: the recount below fills the cache
        parts = L.map(_recount).collect()
    except Exception as e:  # noqa: BLE001 - Hadoop could not read what the digests vouched for (.crc files)
        L = None
        bad = Corrupt(level, "parts/", f"cannot be read by Spark ({java_cause(e)})")
        raise _advice(sc, directory, levels, bad) from None
    try:
        if sorted(p for p, ok, _, _ in parts if ok) != list(range(n)):
            raise Corrupt(level, "parts/", f"holds {len(parts)} partitions, not the {n} of the run")
        visited = sum(v for _, _, v, _ in parts)
        frontier = sum(f for _, _, _, f in parts)
        if visited != state.get("distinct") or frontier != state.get("frontier_size"):
            raise Corrupt(level, META, f"counters do not match the visited sets (distinct {state.get('distinct')!r}, "
                                       f"frontier {state.get('frontier_size')!r}; the partition files hold "
                                       f"{visited} and {frontier})")
    except Corrupt as bad:
        L.unpersist()
        raise _advice(sc, directory, levels, bad) from None
    return L, state


def _recount(kv: tuple) -> tuple[int, bool, int, int]:
    """``(partition, is a PART, states in its visited set, states in its frontier)``."""
    p, part = kv
    ok = part[0] == TAG_PART
    return p, ok, len(part[1]) if ok else 0, len(part[4]) if ok else 0


def java_cause(e: BaseException) -> str:
    """The innermost Java exception of a Py4J error, in one short line:
    ``java.io.EOFException: ...`` rather than 60 lines of stack."""
    text = str(getattr(e, "java_exception", "") or e)
    causes = re.findall(r"(?:Caused by: )?((?:[a-z]\w*\.)+\w*(?:Exception|Error)(?::[^\n]*)?)", text)
    line = causes[-1] if causes else " ".join(text.split())
    line = re.sub(r"^(?:[a-z]\w*\.)+", "", line).strip()
    return line if len(line) <= 200 else line[:197] + "..."
