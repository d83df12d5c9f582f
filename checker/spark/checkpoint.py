"""Checkpoints of the Spark engine: every finished level, saved so that an
interrupted run can go on (``kmc check --checkpoint DIR`` / ``--resume DIR``).

DIR is a local path or any Hadoop-compatible URL (``hdfs://``, ``s3a://``...): it
is written and read through Spark and Hadoop's FileSystem API.  Layout::

    DIR/level-00012/parts/   the partitions (visited set, parent links, frontier)
                             as a Spark pickle file, one part-NNNNN per partition
    DIR/level-00012/meta/    one JSON line: the driver's counters (distinct,
                             generated, action counts, witnesses, violations found so
                             far, ...), the identity of the run, the size and
                             signature of every partition file, and the signature
                             of the line itself

A level counts only once its ``meta/_SUCCESS`` exists (it is written last).  The
two newest complete levels are kept (older ones are deleted), so a kill at any
moment leaves a complete level, and a newest level found corrupt leaves the one
before it to resume from.

A checkpoint is input like any other: resuming proves it is intact before using
it.  The meta line must match its own signature, every partition file its size and
signature, the counters what the visited sets recount (states in the visited sets,
states in the frontiers), and the identity (model, version, configuration,
properties, bounds, partitions) this run's.  Any mismatch is one line naming the
level and the file, with advice that is true for this directory: whether the
level before is intact and can be resumed from once the corrupt one is deleted.

The signatures are HMAC-SHA256 under a per-user key, because the partition files
are pickles and unpickling runs code: a plain digest can be recomputed by whoever
edits the directory, a signature only by whoever holds the key.  The key is 32
random bytes in ``$KMC_CHECKPOINT_KEY_FILE``, else ``~/.config/kmc/checkpoint.key``
(``$XDG_CONFIG_HOME/kmc``), created mode 0600 by the first run that saves a level
and refused if other users may read it.  The driver reads and checks every file
Spark would read, before Spark unpickles any of them.  A checkpoint written on
another machine or by another user resumes once ``KMC_CHECKPOINT_KEY_FILE`` names
the key file of the run that wrote it; one written before checkpoints were signed
(format version 2) cannot be resumed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import tempfile
from pathlib import Path
from typing import Any

from checker.errors import UsageError
from checker.inputfile import local_path
from checker.spark.session import failure, log_path
from checker.spark.tasks import TAG_PART, ident

_LEVEL = re.compile(r"^level-(\d{5,})$")
META = "meta/part-00000"
FORMAT = "kmc-checkpoint"
VERSION = 3               # 2: digests of the meta line and of every partition file; 3: signed (HMAC)
KEEP = 2                  # complete levels kept
KEY_ENV = "KMC_CHECKPOINT_KEY_FILE"
_HIDDEN = ("_", ".")      # names Hadoop's readers skip (_SUCCESS, .crc): every other file of parts/ is read
_CHUNK = 1 << 20
_ANOTHER_KEY = (f"if this checkpoint is yours and was written on another machine or by another user, set "
                f"{KEY_ENV} to the key file of the run that wrote it; otherwise start the run again with an "
                f"empty --checkpoint DIR")


def check_directory(path: str, flag: str, must_exist: bool) -> None:
    """Fail before Spark starts when a local checkpoint directory is unusable
    (Hadoop URLs other than file: are checked by Spark itself)."""
    no_pattern(path, flag)
    local = local_path(path)
    if local is None:
        return
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


def refuse_another_run(checkpoint: str, resume: str | None) -> None:
    """Refuse ``--checkpoint DIR`` that holds another run's complete levels (a local
    one; the same directory as ``--resume`` is this run's own).  Only the newest
    levels of a directory are kept, by number: a new run's first levels, numbered
    below the old run's, would be deleted as soon as they were written."""
    local = local_path(checkpoint)
    resumed = local_path(resume) if resume is not None else None
    if local is None or (resumed is not None and local.resolve() == resumed.resolve()):
        return
    held = _levels(None, checkpoint)
    if held:
        raise UsageError(f"--checkpoint '{checkpoint}' already holds a checkpoint (newest level {held[0]}); a new "
                         f"run there would lose its own levels to it: go on from it with --resume {checkpoint} "
                         f"--checkpoint {checkpoint}, or choose an empty directory")


def no_pattern(path: str, flag: str) -> None:
    """Refuse a directory whose path Hadoop's readers would expand as a glob pattern:
    ``sc.pickleFile('ck[1]/...')`` reads ``ck1/...``, not the directory whose files
    were checked."""
    if m := re.search(r"[*?\[\]{}\\]", path):
        raise UsageError(f"{flag} '{path}' has {m.group()!r}, which Spark's readers take as a pattern (they would "
                         f"read other directories than this one); choose a directory whose path has none of "
                         f"* ? [ ] {{ }} \\")


def key_path() -> Path:
    """The key file that signs checkpoints: ``$KMC_CHECKPOINT_KEY_FILE``, else
    ``$XDG_CONFIG_HOME/kmc/checkpoint.key`` (``~/.config`` when unset)."""
    given = os.environ.get(KEY_ENV)
    if given:
        return Path(given).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME", "")
    return (Path(config) if os.path.isabs(config) else Path.home() / ".config") / "kmc" / "checkpoint.key"


def signing_key(create: bool) -> bytes | None:
    """The key that signs and verifies checkpoints; None when there is none and
    ``create`` is false.  It must be private: a key that others can read lets them
    sign a checkpoint, and a signed checkpoint is unpickled."""
    path = key_path()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)      # a FIFO there must not block
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise UsageError(f"checkpoint key {path} is not a file; remove it, or set {KEY_ENV} to a key file")
            with open(fd, "rb", closefd=False) as f:
                key = f.read()
        finally:
            os.close(fd)
    except FileNotFoundError:
        return _create_key(path) if create else None
    except OSError as e:
        raise UsageError(f"checkpoint key {path} cannot be read ({e.strerror or e}); make it readable to you, "
                         f"or set {KEY_ENV} to the key file of the run that wrote the checkpoint") from None
    if st.st_mode & 0o077:
        raise UsageError(f"checkpoint key {path} is open to other users (mode {stat.S_IMODE(st.st_mode):04o}); "
                         f"make it private with chmod 600 {path}")
    if not key:
        raise UsageError(f"checkpoint key {path} is empty; delete it (the next --checkpoint run creates a new "
                         f"one), or set {KEY_ENV} to the key file of the run that wrote the checkpoint")
    return key


def _create_key(path: Path) -> bytes:
    """32 random bytes, mode 0600, written whole under a temporary name and then
    linked into place: a reader never sees half a key, and two runs starting at once
    never replace each other's key (the second one uses the first's)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")   # mode 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass
        finally:
            os.unlink(tmp)
    except OSError as e:
        raise UsageError(f"cannot create the checkpoint key {path} ({e.strerror or e}); set {KEY_ENV} to a "
                         f"file in a directory you can write") from None
    key = signing_key(create=False)
    if key is None:
        raise UsageError(f"cannot create the checkpoint key {path}: a name that is not a file is in the way "
                         f"(a broken symbolic link?); remove it, or set {KEY_ENV} to another file")
    return key


def sign(key: bytes, data: bytes) -> str:
    """HMAC-SHA256 of ``data`` under ``key``, in hex."""
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def _fs(sc: Any, path: str) -> tuple[Any, Any]:
    jvm = sc._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    return p.getFileSystem(sc._jsc.hadoopConfiguration()), p


def _levels(sc: Any, directory: str) -> list[int]:
    """Complete levels in ``directory``, newest first (a local directory is listed
    without Spark, so that it can be checked before Spark starts)."""
    local = local_path(directory)
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


def _signature_of(key: bytes, doc: dict) -> str:
    return sign(key, json.dumps(doc, sort_keys=True).encode())


def _same(signature: Any, expected: str) -> bool:
    return isinstance(signature, str) and signature.isascii() and hmac.compare_digest(signature, expected)


def _file_signatures(sc: Any, directory: str, level: int, key: bytes) -> dict[str, list]:
    """``{name: [size, HMAC-SHA256]}`` of every file in a level's ``parts/`` that
    Spark's reader would read (all but the hidden ``_*`` and ``.*``: a file added
    there is unpickled like the others), as it is on disk now.  Read by the driver,
    never by Spark, whose reader unpickles: a local directory with Python, any other
    through Hadoop's FileSystem API."""
    out: dict[str, list] = {}
    local = local_path(directory)
    if local is not None:
        parts = local / f"level-{level:05d}" / "parts"
        for f in sorted(parts.iterdir()) if parts.is_dir() else []:
            if not f.name.startswith(_HIDDEN):
                if not f.is_file():
                    raise Corrupt(level, f"parts/{f.name}", "is not a file")
                with open(f, "rb") as src:
                    out[f.name] = _signed_read(key, lambda: src.read(_CHUNK))
        return out
    fs, parts = _fs(sc, _name(directory, level, "parts"))
    for st in fs.listStatus(parts) if fs.exists(parts) else []:
        name = st.getPath().getName()
        if not name.startswith(_HIDDEN):
            if not st.isFile():
                raise Corrupt(level, f"parts/{name}", "is not a file")
            stream = fs.open(st.getPath())
            try:
                out[name] = _signed_read(key, lambda: bytes(stream.readNBytes(_CHUNK)))
            finally:
                stream.close()
    return dict(sorted(out.items()))


def _signed_read(key: bytes, read: Any) -> list:
    """``[size, HMAC-SHA256]`` of the bytes ``read()`` returns until it returns none."""
    mac, size = hmac.new(key, digestmod=hashlib.sha256), 0
    while chunk := read():
        mac.update(chunk)
        size += len(chunk)
    return [size, mac.hexdigest()]


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
    key = signing_key(create=True)
    L.saveAsPickleFile(f"{base}/parts", batchSize=1)
    # The counters and the signatures: one JSON line, written through Hadoop's
    # FileSystem API (no Spark job), then the _SUCCESS marker that makes the level count.
    meta = {**state, "format": FORMAT, "version": VERSION, "level_dir": f"level-{level:05d}",
            "parts": _file_signatures(sc, directory, level, key)}
    meta["digest"] = _signature_of(key, meta)
    out = fs.create(_path(sc, directory, level, META), True)
    try:
        out.write(bytearray((json.dumps(meta, sort_keys=True) + "\n").encode()))
    finally:
        out.close()
    fs.create(_path(sc, directory, level, "meta/_SUCCESS"), True).close()
    for old in _levels(sc, directory)[KEEP:]:
        fs.delete(_path(sc, directory, old), True)


def _verifying_key(directory: str, level: int) -> bytes:
    key = signing_key(create=False)
    if key is None:
        raise UsageError(f"--resume '{directory}': there is no checkpoint key at {key_path()} to check level "
                         f"{level}'s signature with; {_ANOTHER_KEY}")
    return key


class Corrupt(Exception):
    """What is wrong with one level: ``file`` (relative to the level) and ``what``;
    ``signature``: the file does not match its signature (tampered with, or signed
    with another key: the two look the same)."""

    def __init__(self, level: int, file: str, what: str, signature: bool = False) -> None:
        super().__init__(f"{file} {what}")
        self.level, self.file, self.what, self.signature = level, file, what, signature


class Outdated(Corrupt):
    """A level written in another format version: nothing to advise but ``advice``."""

    def __init__(self, level: int, what: str, advice: str) -> None:
        super().__init__(level, META, what)
        self.advice = advice


def _mismatch(level: int, file: str) -> Corrupt:
    return Corrupt(level, file, f"does not match its signature under the key {key_path()} (tampered with, or "
                                f"written with another key)", signature=True)


def _read_meta(sc: Any, directory: str, level: int) -> dict:
    local = local_path(directory)
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
    if isinstance(meta, dict) and "identity" in meta and "format" not in meta:
        meta["version"] = 1     # the first format, without digests, had no name and no version
    elif not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise Corrupt(level, META, "is not a kmc checkpoint's meta line")
    version = meta.get("version")
    if version != VERSION:
        if not isinstance(version, int) or isinstance(version, bool):
            raise Corrupt(level, META, f"records no format version this kmc knows ({version!r})")
        if version < VERSION:
            raise Outdated(level, f"was written by an older kmc, before checkpoints were signed (format version "
                                  f"{version}; this kmc reads version {VERSION})",
                           "start the run again with an empty --checkpoint DIR")
        raise Outdated(level, f"was written by a newer kmc (format version {version}; this kmc reads version "
                              f"{VERSION})", "resume it with that kmc, or start the run again with an empty "
                                             "--checkpoint DIR")
    digest = meta.pop("digest", None)
    if not _same(digest, _signature_of(_verifying_key(directory, level), meta)):
        raise _mismatch(level, META)
    if meta.get("level_dir") != f"level-{level:05d}":
        raise Corrupt(level, META, f"belongs to {meta.get('level_dir')!r} (a level copied or renamed)")
    return meta


def _check_files(sc: Any, directory: str, level: int, meta: dict) -> None:
    """Every file Spark would read from the level's ``parts/`` is one the signed
    meta line lists, with its size and signature: nothing in them is unpickled before."""
    want = meta.get("parts")
    if not isinstance(want, dict):
        raise Corrupt(level, META, "lists no partition files")
    try:
        have = _file_signatures(sc, directory, level, _verifying_key(directory, level))
    except Corrupt:
        raise
    except OSError as e:
        raise Corrupt(level, "parts/", f"cannot be read ({e.strerror or e})") from None
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
        if not _same(digest, have[name][1]):
            raise _mismatch(level, where)


def _verified(sc: Any, directory: str, level: int) -> dict:
    meta = _read_meta(sc, directory, level)
    _check_files(sc, directory, level, meta)
    return meta


def _advice(sc: Any, directory: str, levels: list[int], bad: Corrupt) -> UsageError:
    """The one line for a corrupt newest level, with advice that holds for this
    directory: the level before it is checked too.  A signature that does not hold
    with no intact level before it may be a key of another machine or user, not
    tampering: the line says how to tell kmc that key."""
    where = f"--resume '{directory}': level {bad.level} is corrupt: {_name(directory, bad.level, bad.file)} {bad.what}"
    older = [lv for lv in levels if lv < bad.level]
    e2 = None
    if older:
        try:
            _verified(sc, directory, older[0])
        except Corrupt as e:
            e2 = e
        else:
            return UsageError(f"{where}; level {older[0]} before it is intact: delete "
                              f"{_name(directory, bad.level)} and run the same --resume again to go on from "
                              f"level {older[0]}")
    if bad.signature:
        return UsageError(f"--resume '{directory}': level {bad.level} cannot be trusted: "
                          f"{_name(directory, bad.level, bad.file)} {bad.what}; {_ANOTHER_KEY}")
    if e2 is not None:
        return UsageError(f"{where}; the level before it ({older[0]}) is corrupt too ({e2.file} {e2.what}): "
                          f"no intact level is left, so start the run again with an empty --checkpoint DIR")
    return UsageError(f"{where}; it is the only complete level, so start the run again with an empty "
                      f"--checkpoint DIR")


_CHECKED: dict[str, tuple[int, dict]] = {}


def _newest(sc: Any, directory: str) -> tuple[int, dict]:
    """The newest complete level and its verified meta line (checked once per
    process); its partition files are checked by ``_files_of``."""
    if directory in _CHECKED:
        return _CHECKED[directory]
    levels = _levels(sc, directory)
    if not levels:
        raise UsageError(f"--resume '{directory}' holds no complete checkpoint (no level-NNNNN/meta/_SUCCESS); "
                         f"start the run with --checkpoint DIR")
    try:
        meta = _read_meta(sc, directory, levels[0])
    except Outdated as old:
        raise UsageError(f"--resume '{directory}': level {old.level} {old.what}; {old.advice}") from None
    except Corrupt as bad:
        raise _advice(sc, directory, levels, bad) from None
    _CHECKED[directory] = (levels[0], meta)
    return levels[0], meta


def preflight(directory: str) -> None:
    """Prove a local checkpoint intact before Spark starts (seconds, not a JVM's
    start-up, for a corrupt one): its newest complete level's meta line and every
    partition file must match their signatures.  A remote directory is checked by
    ``load`` once Spark is up."""
    _CHECKED.pop(directory, None)
    if local_path(directory) is not None:
        _files_of(None, directory, *_newest(None, directory))


def _files_of(sc: Any, directory: str, level: int, meta: dict) -> None:
    """Check the partition files of the newest level against its verified meta line."""
    try:
        _check_files(sc, directory, level, meta)
    except Corrupt as bad:
        raise _advice(sc, directory, _levels(sc, directory), bad) from None


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
    no_pattern(directory, "--resume")
    level, state = _newest(sc, directory)
    _CHECKED.pop(directory, None)       # the run goes on writing there
    levels = _levels(sc, directory)
    saved = state.get("identity", {})
    if saved != identity:
        diffs = [k for k in sorted(set(saved) | set(identity)) if saved.get(k) != identity.get(k)]
        detail = "; ".join(f"{k}: checkpoint {saved.get(k)!r}, this run {identity.get(k)!r}" for k in diffs[:3])
        if "placement" in diffs:
            was = "key (the model's partition_key)" if saved.get("placement") else "fingerprint"
            raise UsageError(f"--resume '{directory}' was written by a run that placed states by {was}, this run "
                             f"by {'key' if identity.get('placement') else 'fingerprint'}: resume with "
                             f"--spark-placement {'key' if saved.get('placement') else 'fingerprint'}")
        if diffs == ["placement_probe"]:
            raise UsageError(f"--resume '{directory}' was written by a run that placed states in other partitions "
                             f"({detail}): the model's partition_key has changed since, so its partitions cannot be "
                             f"resumed; start the run again with an empty --checkpoint DIR")
        raise UsageError(f"--resume '{directory}' was written by another run ({detail}); resume with the "
                         f"same model, configuration, properties, bounds and --spark-partitions")
    from pyspark import StorageLevel

    # Just before Spark unpickles them (again for a local directory: its files may
    # have changed since the check before Spark started).
    _files_of(sc, directory, level, state)
    try:
        rdd = sc.pickleFile(_path(sc, directory, level, "parts").toString())
        L = rdd.partitionBy(n, ident)
        L.persist(StorageLevel.MEMORY_AND_DISK)   # read once: the recount below fills the cache
        parts = L.map(_recount).collect()
    except Exception as e:  # noqa: BLE001 - Hadoop could not read what the signatures vouched for (.crc files)
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
