"""The JVM's class-data-sharing archive for local-mode Spark (checker.spark.session.ClassData):
which JVM options a run gets, and how the archive a run writes at exit is put in place.
No JVM is started here: every Spark test starts one with these options."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from checker.spark.session import CDS_STALE, CDS_UNUSED, JVM_LOG_OPTIONS, ClassData, conf_items


def test_the_first_run_writes_the_archive_and_later_runs_map_it(tmp_path, monkeypatch):
    monkeypatch.setenv("KMC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KMC_SPARK_CDS", raising=False)
    first = ClassData()
    assert first.final.parent == tmp_path and first.final.suffix == ".jsa"
    assert first.writing.parent == tmp_path and first.writing.name.endswith(".part")
    assert first.options == f"-XX:ArchiveClassesAtExit={first.writing}"
    first.final.write_bytes(b"archive")
    later = ClassData()
    assert later.writing is None
    assert later.options == f"-XX:SharedArchiveFile={first.final}"


def test_the_options_go_to_the_local_jvm_only(tmp_path, monkeypatch):
    monkeypatch.setenv("KMC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KMC_SPARK_CONF", raising=False)
    cds = ClassData()
    local = conf_items("local[1]", 1, cds)["spark.driver.extraJavaOptions"]
    assert cds.options in local and JVM_LOG_OPTIONS in local
    assert cds.options not in conf_items("spark://127.0.0.1:7077", 2, cds)["spark.driver.extraJavaOptions"]


def test_it_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("KMC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KMC_SPARK_CDS", "0")
    cds = ClassData()
    assert cds.options == "" and cds.writing is None
    assert "Archive" not in conf_items("local[1]", 1, cds)["spark.driver.extraJavaOptions"]
    assert list(tmp_path.iterdir()) == []


def test_an_archive_left_unfinished_long_ago_is_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("KMC_CACHE_DIR", str(tmp_path))
    final = ClassData().final
    old = final.with_name(f"{final.stem}.1.2.part")
    new = final.with_name(f"{final.stem}.3.4.part")
    old.write_bytes(b"x")
    new.write_bytes(b"x")
    then = time.time() - CDS_STALE - 60
    os.utime(old, (then, then))
    ClassData()
    assert not old.exists() and new.exists()


def test_an_archive_no_run_has_used_for_a_month_is_removed_by_a_run_that_writes_one(tmp_path, monkeypatch):
    """Each checkout's pyspark has an archive of its own (90 MB): they piled up."""
    monkeypatch.setenv("KMC_CACHE_DIR", str(tmp_path))
    final = ClassData().final
    final.unlink(missing_ok=True)
    then = time.time() - CDS_UNUSED - 60
    unused, recent = tmp_path / "spark-classes-0000000000000000.jsa", tmp_path / "spark-classes-1111111111111111.jsa"
    for p in (unused, recent, final):
        p.write_bytes(b"classes")
        os.utime(p, (then, then))
    ClassData()                          # maps ``final``: marks it used, writes nothing, removes nothing
    assert unused.exists() and time.time() - final.stat().st_mtime < 60
    os.utime(recent, None)
    final.unlink()
    ClassData()                          # writes a new one: the one unused for a month goes
    assert not unused.exists() and recent.exists()


# Stands in for the JVM's side of the protocol: it runs until its stdin closes, then
# writes the archive as it exits (what -XX:ArchiveClassesAtExit does).
WRITER = "import sys; sys.stdin.read(); open(sys.argv[1], 'wb').write(b'classes'); sys.exit(int(sys.argv[2]))"


def test_the_archive_is_renamed_into_place_once_its_writer_exits(tmp_path, monkeypatch):
    monkeypatch.setenv("KMC_CACHE_DIR", str(tmp_path))
    cds = ClassData()
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(cds.writing), "0"], stdin=subprocess.PIPE)
    cds.finish(proc)
    assert cds.final.read_bytes() == b"classes"
    assert not cds.writing.exists()


def test_a_writer_that_fails_leaves_no_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("KMC_CACHE_DIR", str(tmp_path))
    cds = ClassData()
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(cds.writing), "1"], stdin=subprocess.PIPE)
    cds.finish(proc)
    assert not cds.final.exists() and not cds.writing.exists()
