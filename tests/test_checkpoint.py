"""Spark checkpoints prove their integrity before a run resumes from them.

One run of a toy grid writes a checkpoint; every test corrupts a copy of it the way
the issue's table did (counters edited, garbage, truncation, a flipped byte, a
deleted file, with and without Hadoop's ``.crc`` files) and resumes: each is refused
with one line naming the level and the file, and advice that is true (the level
before it is intact, so deleting the newest one and resuming works).

The partition files are pickles, so the checkpoint is signed with a per-user key:
a partition file replaced by a pickle that would create a marker file when loaded,
with every digest recomputed as someone without the key can (SHA-256, or HMAC
under another key), is refused and the marker never appears; a checkpoint resumes
only with the key that signed it; one written before checkpoints were signed is
refused; the key is created private and refused when it is not.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import stat
from pathlib import Path

import pytest

from checker.errors import UsageError
from checker.spark.checkpoint import KEY_ENV, VERSION, key_path, preflight, refuse_another_run, sign, signing_key
from tests import cli_support
from tests.spark_support import sign_level, spark_module, summary
from tests.toys import Grid

pytestmark = pytest.mark.spark

sc = spark_module("local[2]", 2)
N = 6                     # a 7 x 7 grid: 49 states, depth 12, so levels 0..12 (13 is the empty end)


def grid() -> Grid:
    return Grid(N)


@pytest.fixture(scope="module")
def saved(sc, tmp_path_factory):
    """``(checkpoint directory, summary of the full run)``."""
    from checker.spark import check
    d = tmp_path_factory.mktemp("ckpt") / "ckpt"
    r = check(grid(), sc=sc, partitions=2, checkpoint=str(d), driver_states=0)
    return d, summary(r)


def levels(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if (p / "meta" / "_SUCCESS").exists())


def copy(saved, tmp_path) -> tuple[Path, Path, Path]:
    """A copy of the checkpoint: ``(directory, newest level, the level before)``."""
    d = tmp_path / "ckpt"
    shutil.copytree(saved[0], d)
    names = levels(d)
    return d, d / names[-1], d / names[-2]


def resume(sc, d: Path):
    from checker.spark import check
    return check(grid(), sc=sc, partitions=2, resume=str(d))


def test_two_complete_levels_are_kept(saved):
    d, _ = saved
    names = levels(d)
    assert len(names) == 2 and [int(n.split("-")[1]) for n in names] == [12, 13]
    meta = json.loads((d / names[-1] / "meta" / "part-00000").read_text())
    assert meta["format"] == "kmc-checkpoint" and meta["version"] == VERSION
    assert sorted(meta["parts"]) == ["part-00000", "part-00001"]
    key = signing_key(create=False)
    for name, (size, signature) in meta["parts"].items():
        data = (d / names[-1] / "parts" / name).read_bytes()
        assert len(data) == size and sign(key, data) == signature


def test_resume_from_either_kept_level_gives_the_exact_counts(sc, saved, tmp_path):
    d, newest, _ = copy(saved, tmp_path)
    assert summary(resume(sc, d)) == saved[1]
    d2, newest2, _ = copy(saved, tmp_path / "b")
    shutil.rmtree(newest2)                     # as the advice says for a corrupt newest level
    assert summary(resume(sc, d2)) == saved[1]


def _edit_meta(level: Path, fn) -> None:
    f = level / "meta" / "part-00000"
    meta = json.loads(f.read_text())
    fn(meta)
    f.write_text(json.dumps(meta, sort_keys=True) + "\n")


def _forge(level: Path) -> None:
    """Edit the counters and sign them again, as a forger holding the key would."""
    sign_level(level, lambda meta: meta.update(distinct=meta["distinct"] - 3))


def test_a_checkpoint_without_coverage_counts_resumes_with_taken_only(sc, saved, tmp_path):
    """A checkpoint written before kmc kept the enabled and new-state counts: the
    resumed run has the same answers, its taken counts, and None (the report's n/a)
    for the two columns it cannot know, never a partial count."""
    d, newest, before = copy(saved, tmp_path)
    shutil.rmtree(newest)

    def old_kmc(meta: dict) -> None:
        del meta["enabled_counts"], meta["new_counts"]

    sign_level(before, old_kmc)
    r = resume(sc, d)
    got = summary(r)
    assert got["coverage"] == {**saved[1]["coverage"], "enabled": None, "new": None}
    assert {k: v for k, v in got.items() if k != "coverage"} == {k: v for k, v in saved[1].items() if k != "coverage"}
    assert r.stats.coverage.never_enabled(["IncX", "IncY", "Other"]) == ["Other"]


def _flip(f: Path, at: int) -> None:
    data = bytearray(f.read_bytes())
    data[at] ^= 0xFF
    f.write_bytes(bytes(data))


def _crc(f: Path) -> Path:
    return f.with_name(f".{f.name}.crc")


CORRUPTIONS = {
    # name: (how, file named in the message, what the message says)
    "counters edited, .crc removed": (
        lambda lv: (_edit_meta(lv, lambda m: m.update(distinct=m["distinct"] - 3, generated=m["generated"] + 1000)),
                    _crc(lv / "meta" / "part-00000").unlink(missing_ok=True)),
        "meta/part-00000", "does not match its signature"),
    "counters edited and signed with the key": (_forge, "meta/part-00000", "counters do not match the visited sets"),
    "meta garbage, .crc kept": (
        lambda lv: (lv / "meta" / "part-00000").write_bytes(b"\x00garbage{"), "meta/part-00000", "not valid JSON"),
    "meta garbage, .crc removed": (
        lambda lv: ((lv / "meta" / "part-00000").write_text("[1, 2"),
                    _crc(lv / "meta" / "part-00000").unlink(missing_ok=True)), "meta/part-00000", "not valid JSON"),
    "meta deleted": (lambda lv: (lv / "meta" / "part-00000").unlink(), "meta/part-00000", "is missing"),
    "parts file truncated": (
        lambda lv: (lv / "parts" / "part-00001").write_bytes((lv / "parts" / "part-00001").read_bytes()[:100]),
        "parts/part-00001", "is truncated"),
    "a byte flipped in a parts file, .crc kept": (
        lambda lv: _flip(lv / "parts" / "part-00000", 200), "parts/part-00000", "does not match its signature"),
    "a byte flipped in a parts file, .crc removed": (
        lambda lv: (_flip(lv / "parts" / "part-00000", 200), _crc(lv / "parts" / "part-00000").unlink()),
        "parts/part-00000", "does not match its signature"),
    "a partition file deleted": (
        lambda lv: (lv / "parts" / "part-00001").unlink(), "parts/part-00001", "is missing"),
    "a parts file's .crc damaged": (
        lambda lv: _flip(_crc(lv / "parts" / "part-00000"), 10), "parts/", "cannot be read by Spark"),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_every_corruption_is_one_line_with_true_advice(sc, saved, tmp_path, name):
    how, file, what = CORRUPTIONS[name]
    d, newest, before = copy(saved, tmp_path)
    how(newest)
    with pytest.raises(UsageError) as e:
        resume(sc, d)
    msg = str(e.value)
    assert "\n" not in msg and f"level {int(newest.name[6:])} is corrupt: {newest / file}" in msg and what in msg, msg
    assert f"level {int(before.name[6:])} before it is intact: delete {newest}" in msg, msg
    # The advice is true: with the corrupt level gone, the run resumes to the exact counts.
    shutil.rmtree(newest)
    assert summary(resume(sc, d)) == saved[1]


def test_both_levels_corrupt_says_start_again(sc, saved, tmp_path):
    d, newest, before = copy(saved, tmp_path)
    (newest / "parts" / "part-00000").unlink()
    (before / "meta" / "part-00000").write_text("{}")
    with pytest.raises(UsageError, match="corrupt too .*no intact level is left, so start the run again"):
        resume(sc, d)


def test_the_command_line_gives_one_line_and_exit_2(tmp_path):
    d = tmp_path / "ckpt"
    args = ["check", "--model", "tests.toys:FAMILY", "--set", "toy=grid", "--set", "n=3", "--engine", "spark",
            "--spark-partitions", "2", "--spark-driver-states", "0", "--quiet", "--traces-dir", tmp_path / "t"]
    r = cli_support.kmc(*args, "--checkpoint", d)
    assert r.returncode == 0, r.stderr
    newest = d / levels(d)[-1]
    (newest / "parts" / "part-00001").write_bytes(b"")
    line = cli_support.one_line_error(cli_support.kmc(*args, "--resume", d),
                                      f"is corrupt: {newest / 'parts' / 'part-00001'} is truncated")
    assert "before it is intact: delete" in line


class KeyedGrid(Grid):
    """The same grid, its states placed by ``x`` (Model.partition_key)."""

    def partition_key(self, s):
        return s.x


def test_a_checkpoint_placed_by_fingerprint_is_refused_to_a_model_that_places_by_key(sc, saved, tmp_path):
    """The partitions of a checkpoint hold their states where its run placed them:
    resuming with the other placement would look states up in the wrong partition."""
    from checker.spark import check
    d, _, _ = copy(saved, tmp_path)
    with pytest.raises(UsageError, match=r"placed states by fingerprint, this run by key: resume with --spark-placement "
                                         r"fingerprint"):
        check(KeyedGrid(N), sc=sc, partitions=2, resume=str(d))


class YKeyedGrid(Grid):
    """The same grid, with the same name, version and configuration, its states placed
    by ``y``: a model whose ``partition_key`` changed between two versions of its code."""

    def partition_key(self, s):
        return s.y


def test_a_checkpoint_placed_by_one_key_is_refused_to_the_same_model_with_another_key(sc, tmp_path):
    """Nothing in the identity but the placement probe tells the two keys apart: a
    resume with the changed key would look states up in the partitions the old key
    chose, and lose duplicates once the workers' visited filter is full."""
    from checker.spark import check
    d = tmp_path / "ckpt"
    full = check(KeyedGrid(N), sc=sc, partitions=2, checkpoint=str(d), driver_states=0)
    assert summary(check(KeyedGrid(N), sc=sc, partitions=2, resume=str(d))) == summary(full)
    with pytest.raises(UsageError, match=r"placed states in other partitions \(placement_probe: checkpoint '[0-9a-f]{16}', "
                                         r"this run '[0-9a-f]{16}'\).*start the run again with an empty --checkpoint DIR"):
        check(YKeyedGrid(N), sc=sc, partitions=2, resume=str(d))


# ------------------------------------------------------------------ signatures

class Evil:
    """A record whose unpickling creates ``path`` (as ``os.system`` could run anything)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


def _evil_part(sc, where: Path, marker: Path) -> bytes:
    """A Spark pickle file of one ``Evil`` record (pickled on the executor, so that
    making it runs nothing), and proof that loading it does create ``marker``."""
    out = where / "evil"
    sc.parallelize([0], 1).map(lambda _: Evil(marker)).saveAsPickleFile(str(out), batchSize=1)
    assert not marker.exists()
    sc.pickleFile(str(out)).count()
    assert marker.exists(), "the payload must work, or the tests below prove nothing"
    marker.unlink()
    return (out / "part-00000").read_bytes()


def _tamper(level: Path, evil: bytes, how: str) -> str:
    """Put ``evil`` among ``level``'s partition files as someone without the key can;
    the file the refusal must name."""
    parts = level / "parts"
    if how == "a file added, the meta line untouched":
        (parts / "part-00002").write_bytes(evil)
        return "parts/part-00002"
    (parts / "part-00000").write_bytes(evil)
    _crc(parts / "part-00000").unlink()
    other = secrets.token_bytes(32)
    digest = ((lambda b: hashlib.sha256(b).hexdigest()) if how == "digests recomputed (SHA-256)" else
              (lambda b: hmac.new(other, b, hashlib.sha256).hexdigest()))

    def recompute(meta: dict) -> None:
        meta.pop("digest")
        meta["parts"] = {p.name: [p.stat().st_size, digest(p.read_bytes())] for p in sorted(parts.glob("part-*"))}
        meta["digest"] = digest(json.dumps(meta, sort_keys=True).encode())

    _edit_meta(level, recompute)
    _crc(level / "meta" / "part-00000").unlink()
    return "meta/part-00000"


TAMPERING = ["digests recomputed (SHA-256)", "digests recomputed (HMAC under another key)",
             "a file added, the meta line untouched"]


@pytest.mark.parametrize("how", TAMPERING)
def test_a_tampered_partition_file_is_refused_before_it_is_unpickled(sc, saved, tmp_path, how):
    d, newest, before = copy(saved, tmp_path)
    marker = tmp_path / "MARKER"
    file = _tamper(newest, _evil_part(sc, tmp_path, marker), how)
    for refuse in (lambda: preflight(str(d)), lambda: resume(sc, d)):      # before Spark starts; in load
        with pytest.raises(UsageError) as e:
            refuse()
        msg = str(e.value)
        assert "\n" not in msg and f"level {int(newest.name[6:])} is corrupt: {newest / file}" in msg, msg
        assert f"level {int(before.name[6:])} before it is intact: delete {newest}" in msg, msg
        assert not marker.exists(), "the checkpoint's pickle ran"
    shutil.rmtree(newest)
    assert summary(resume(sc, d)) == saved[1]


def test_a_tampered_checkpoint_on_the_command_line_is_one_line_and_runs_nothing(sc, saved, tmp_path):
    d, newest, before = copy(saved, tmp_path)
    marker = tmp_path / "MARKER"
    evil = _evil_part(sc, tmp_path, marker)
    for level in (newest, before):
        _tamper(level, evil, "digests recomputed (SHA-256)")
    r = cli_support.kmc("check", "--model", "tests.toys:FAMILY", "--set", "toy=grid", "--set", f"n={N}",
                        "--engine", "spark", "--spark-partitions", "2", "--quiet", "--traces-dir", tmp_path / "t",
                        "--resume", d)
    line = cli_support.one_line_error(r, f"level {int(newest.name[6:])} cannot be trusted: "
                                         f"{newest / 'meta' / 'part-00000'} does not match its signature")
    assert "set KMC_CHECKPOINT_KEY_FILE to the key file of the run that wrote it" in line, line
    assert not marker.exists()


def test_a_checkpoint_resumes_only_with_the_key_that_signed_it(sc, saved, tmp_path, monkeypatch):
    """Written with the session's key (A): refused with no key, refused with key B
    (another machine's, another user's), resumed to the exact counts with A again."""
    d, newest, _ = copy(saved, tmp_path)
    a = os.environ[KEY_ENV]
    b = tmp_path / "b" / "checkpoint.key"
    monkeypatch.setenv(KEY_ENV, str(b))
    with pytest.raises(UsageError, match=re.escape(f"there is no checkpoint key at {b} to check level 13's signature "
                                                   f"with; if this checkpoint is yours")):
        resume(sc, d)
    signing_key(create=True)
    with pytest.raises(UsageError) as e:
        resume(sc, d)
    msg = str(e.value)
    assert "\n" not in msg and msg == (
        f"--resume '{d}': level 13 cannot be trusted: {newest / 'meta' / 'part-00000'} does not match its "
        f"signature under the key {b} (tampered with, or written with another key); if this checkpoint is yours "
        f"and was written on another machine or by another user, set KMC_CHECKPOINT_KEY_FILE to the key file of "
        f"the run that wrote it; otherwise start the run again with an empty --checkpoint DIR"), msg
    line = cli_support.one_line_error(cli_support.kmc(
        "check", "--model", "tests.toys:FAMILY", "--set", "toy=grid", "--set", f"n={N}", "--engine", "spark",
        "--quiet", "--traces-dir", tmp_path / "t", "--resume", d), f"does not match its signature under the key {b}")
    assert "level 13 cannot be trusted" in line, line
    monkeypatch.setenv(KEY_ENV, a)
    assert summary(resume(sc, d)) == saved[1]


OLD = "start the run again with an empty --checkpoint DIR"


def test_a_checkpoint_written_before_checkpoints_were_signed_is_refused(sc, tmp_path):
    """The fuzz corpus's checkpoint was written by kmc in format 2 (SHA-256 digests)."""
    d = tmp_path / "ckpt"
    shutil.copytree(Path(__file__).parent / "data" / "fuzz" / "checkpoint", d)
    want = (f"--resume '{d}': level 7 was written by an older kmc, before checkpoints were signed (format "
            f"version 2; this kmc reads version {VERSION}); {OLD}")
    with pytest.raises(UsageError) as e:
        preflight(str(d))
    assert str(e.value) == want
    from checker.spark import check
    with pytest.raises(UsageError) as e:
        check(Grid(3), sc=sc, partitions=2, resume=str(d))
    assert str(e.value) == want


@pytest.mark.parametrize("edit, what", [
    (lambda m: [m.pop("format"), m.pop("version")], "was written by an older kmc, before checkpoints were signed "
                                                    f"(format version 1; this kmc reads version {VERSION}); {OLD}"),
    (lambda m: m.update(version=VERSION + 1), f"was written by a newer kmc (format version {VERSION + 1}; this "
                                              f"kmc reads version {VERSION}); resume it with that kmc, or {OLD}"),
    (lambda m: m.update(version="3"), "records no format version this kmc knows ('3'); level 12 before it is intact"),
])
def test_other_format_versions_are_refused(saved, tmp_path, edit, what):
    d, newest, _ = copy(saved, tmp_path)
    _edit_meta(newest, edit)
    with pytest.raises(UsageError, match="^[^\n]*" + re.escape(what)):
        preflight(str(d))


def test_the_key_is_created_private_and_never_replaced(tmp_path, monkeypatch):
    path = tmp_path / "config" / "kmc" / "checkpoint.key"
    monkeypatch.setenv(KEY_ENV, str(path))
    key = signing_key(create=True)
    assert len(key) == 32 and path.read_bytes() == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert signing_key(create=True) == key and list(path.parent.iterdir()) == [path]   # no temporary file left


def test_the_key_lives_in_the_users_config_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert key_path() == tmp_path / "xdg" / "kmc" / "checkpoint.key"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for xdg in ("", "relative"):              # unset, or not absolute: ignored (the XDG spec)
        monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
        assert key_path() == tmp_path / "home" / ".config" / "kmc" / "checkpoint.key"


def test_an_unusable_key_is_refused_in_one_line_before_spark_starts(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.key"
    monkeypatch.setenv(KEY_ENV, str(path))
    path.write_bytes(secrets.token_bytes(32))
    path.chmod(0o644)
    with pytest.raises(UsageError, match=f"^checkpoint key {path} is open to other users \\(mode 0644\\); make it "
                                         f"private with chmod 600 {path}$"):
        signing_key(create=True)
    d = tmp_path / "ckpt"
    cli_support.one_line_error(cli_support.kmc(
        "check", "--model", "tests.toys:FAMILY", "--set", "toy=grid", "--set", "n=3", "--engine", "spark",
        "--quiet", "--traces-dir", tmp_path / "t", "--checkpoint", d), f"checkpoint key {path} is open to other users")
    assert not d.exists()
    path.write_bytes(b"")
    path.chmod(0o600)
    with pytest.raises(UsageError, match=f"^checkpoint key {path} is empty; delete it"):
        signing_key(create=False)
    path.unlink()
    path.mkdir()
    with pytest.raises(UsageError, match=f"^checkpoint key {path} is not a file"):
        signing_key(create=True)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_key_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.key"
    monkeypatch.setenv(KEY_ENV, str(path))
    path.write_bytes(secrets.token_bytes(32))
    path.chmod(0)
    with pytest.raises(UsageError, match=f"^checkpoint key {path} cannot be read \\(Permission denied\\)"):
        signing_key(create=False)


def test_a_remote_directory_is_signed_and_checked_by_the_driver(sc, tmp_path, monkeypatch):
    """A directory on another file system (hdfs://, s3a://) is read through Hadoop's
    FileSystem API on the driver: the same code, made to serve a local directory."""
    from checker.spark import check, checkpoint
    monkeypatch.setattr(checkpoint, "local_path", lambda directory: None)
    d = tmp_path / "ckpt"
    full = check(grid(), sc=sc, partitions=2, checkpoint=str(d), driver_states=0)
    assert summary(resume(sc, d)) == summary(full)
    newest = d / levels(d)[-1]
    marker = tmp_path / "MARKER"
    evil = _evil_part(sc, tmp_path, marker)
    for i, how in enumerate(TAMPERING):
        d2, newest2, _ = copy((d, None), tmp_path / f"copy{i}")
        file = _tamper(newest2, evil, how)
        with pytest.raises(UsageError, match=re.escape(f"is corrupt: {newest2 / file}")):
            resume(sc, d2)
        assert not marker.exists()
    assert newest.exists()


def test_a_directory_named_like_a_pattern_is_refused(sc, saved, tmp_path):
    """Spark's reader expands ``ck[1]`` as a glob (it would read ``ck1``), so the
    files it unpickles would not be the ones checked."""
    from checker.spark.checkpoint import check_directory
    d = tmp_path / "ck[1]"
    shutil.copytree(saved[0], d)
    shutil.copytree(saved[0], tmp_path / "ck1")
    for flag, must_exist in (("--checkpoint", False), ("--resume", True)):
        with pytest.raises(UsageError, match=re.escape(f"{flag} '{d}' has '[', which Spark's readers take as a "
                                                       f"pattern")):
            check_directory(str(d), flag, must_exist)
    with pytest.raises(UsageError, match=re.escape(f"--resume '{d}' has '['")):
        resume(sc, d)


def test_a_new_run_is_refused_a_directory_that_holds_another_runs_checkpoint(tmp_path):
    # Only the two newest levels of a directory are kept, by number: a new run's
    # levels 3, 4... were deleted as soon as written, beside an old run's level 40.
    d = tmp_path / "ckpt"
    (d / "level-00040" / "meta").mkdir(parents=True)
    (d / "level-00040" / "meta" / "_SUCCESS").write_text("")
    r = cli_support.kmc("check", "--model", "tests.toys:FAMILY", "--set", "toy=grid", "--set", "n=3", "--engine",
                        "spark", "--quiet", "--traces-dir", tmp_path / "t", "--checkpoint", d)
    cli_support.one_line_error(r, f"--checkpoint '{d}' already holds a checkpoint (newest level 40); a new run there "
                                  f"would lose its own levels to it: go on from it with --resume {d} --checkpoint {d}")
    assert sorted(p.name for p in d.iterdir()) == ["level-00040"]
    refuse_another_run(str(d), str(d))                    # resuming it, and going on writing there: its own
    refuse_another_run(str(tmp_path / "empty"), None)     # nothing there yet

