"""Spark checkpoints prove their integrity before a run resumes from them.

One run of a toy grid writes a checkpoint; every test corrupts a copy of it the way
the issue's table did (counters edited, garbage, truncation, a flipped byte, a
deleted file, with and without Hadoop's ``.crc`` files) and resumes: each is refused
with one line naming the level and the file, and advice that is true (the level
before it is intact, so deleting the newest one and resuming works).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from checker.errors import UsageError
from checker.spark.checkpoint import VERSION, sign, signing_key
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
    with pytest.raises(UsageError, match=r"placement: checkpoint None, this run 'partition_key'"):
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
