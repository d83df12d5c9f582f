"""Spark failures in one line: a bad master URL, an unreachable master, Ctrl-C, a full
disk, a dead executor.  Each gives one line naming the cause and the fix; the Java
and Python stacks go to the log file the line names, never to the terminal.

The first two fail before any JVM starts, so they run in the default suite.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import cli_support

ROOT = Path(__file__).resolve().parent.parent
KAFKA = ["--model", "spec.family:FAMILY"]


def env(**extra: str) -> dict:
    e = dict(os.environ, PYTHONPATH=str(ROOT), **extra)
    e.pop("KMC_DEBUG", None)
    return e


@pytest.mark.parametrize("master, needle", [
    ("local[abc]", "'local[abc]' needs a number of threads or *: write local[4] or local[*]"),
    ("local[2,x]", "must be local[THREADS,MAX_FAILURES] with whole numbers"),
    ("spark://nohost", "'nohost' is not HOST:PORT; write e.g. spark://HOST:7077"),
    ("bogus://x", "is not a Spark master URL; use local[*], local[N], spark://HOST:PORT, yarn"),
    # an empty master ran the local engine without a word (check), or local[*] (simulate)
    ("", "--spark-master '' is empty or has spaces around it"),
])
def test_a_bad_master_url_says_what_is_wrong(tmp_path, master, needle):
    r = cli_support.kmc("check", *KAFKA, "--preset", "tiny", "--spark-master", master, "--traces-dir", tmp_path)
    cli_support.one_line_error(r, needle)
    assert r.stdout == ""          # refused before anything ran
    if master == "":
        r = cli_support.kmc("simulate", *KAFKA, "--preset", "zombie", "--spark-master", master, "--walks", "5",
                            "--traces-dir", tmp_path)
        cli_support.one_line_error(r, needle)
        assert not list(tmp_path.iterdir())


@pytest.mark.spark
def test_a_bad_kmc_spark_conf_value_names_the_cause_and_the_variable(tmp_path):
    """The JVM's own cause is the line before "Could not create the Java Virtual
    Machine", and the variable is not in the reproduce command: the line says both."""
    r = subprocess.run([sys.executable, "-m", "checker", "check", *KAFKA, "--preset", "tiny", "--spark-master",
                        "local[1]", "--quiet", "--traces-dir", str(tmp_path)], capture_output=True, text=True,
                       env=env(KMC_SPARK_CONF="spark.driver.memory=lots"), cwd=tmp_path, timeout=300)
    line = cli_support.one_line_error(r, "Invalid maximum heap size: -Xmxlots (Could not create the Java Virtual "
                                         "Machine)")
    assert "KMC_SPARK_CONF (set here to 'spark.driver.memory=lots'" in line


def test_an_unreachable_master_fails_within_seconds(tmp_path):
    import socket
    with socket.socket() as s:     # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    r = cli_support.kmc("check", *KAFKA, "--preset", "tiny", "--spark-master", f"spark://127.0.0.1:{port}",
                        "--quiet", "--traces-dir", tmp_path)
    cli_support.one_line_error(r, f"cannot reach the Spark master spark://127.0.0.1:{port} (127.0.0.1:{port}: "
                                  f"Connection refused); start the master, or fix --spark-master")
    assert time.monotonic() - t0 < 60      # not the minute and more of Spark's own retries


def _log_of(line: str) -> Path:
    m = re.search(r"Spark's log: (\S+?)\)? \(reproduce", line) or re.search(r"Spark's log: (\S+)", line)
    assert m, line
    return Path(m.group(1).rstrip(")"))


def _spark_run(tmp_path: Path, *args, **extra) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "checker", "check", *map(str, args), "--engine", "spark",
                             "--spark-partitions", "2", "--spark-driver-states", "0", "--quiet", "--traces-dir", str(tmp_path / "t")],
                            cwd=ROOT, env=env(KMC_SPARK_LOG=str(tmp_path / "spark.log"), **extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for(path: Path, proc: subprocess.Popen, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, f"{path} did not appear in time"
        time.sleep(0.05)


@pytest.mark.spark
def test_ctrl_c_is_one_line_and_says_how_to_go_on(tmp_path):
    ckpt = tmp_path / "ckpt"
    proc = _spark_run(tmp_path, *KAFKA, "--preset", "small", "--checkpoint", ckpt)
    try:
        _wait_for(ckpt / "level-00002" / "meta" / "_SUCCESS", proc)
        os.killpg(proc.pid, signal.SIGINT)        # what a terminal's Ctrl-C does: the whole group
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err + out, err
    assert lines[0].startswith("kmc: interrupted; go on from the last complete level with --resume ")
    assert _log_of(lines[0]) == tmp_path / "spark.log"


@pytest.mark.spark
def test_an_executor_that_dies_is_one_line(tmp_path):
    inv = tmp_path / "die.py"
    inv.write_text("import os\nfrom checker.model import always\nDRIVER = os.getpid()\n\n"
                   "def alive(s):\n    if os.getpid() != DRIVER:\n        os._exit(3)   # the Python worker dies\n"
                   "    return True\n\nAlive = always('Alive', alive, 'kills any executor that checks it')\n")
    proc = _spark_run(tmp_path, *KAFKA, "--preset", "tiny", "--invariants", inv)
    out, err = proc.communicate(timeout=600)
    line = cli_support.one_line_error(subprocess.CompletedProcess(proc.args, proc.returncode, out, err),
                                      "a Spark executor died (")
    assert "run again" in line and _log_of(line).exists()


@pytest.mark.spark
def test_a_full_disk_during_checkpoint_is_one_line(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(disk)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a small tmpfs (CI runs as root)")
    try:
        proc = _spark_run(tmp_path, *KAFKA, "--preset", "small", "--checkpoint", disk / "ckpt")
        out, err = proc.communicate(timeout=900)
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)
    line = cli_support.one_line_error(subprocess.CompletedProcess(proc.args, proc.returncode, out, err),
                                      "the disk is full (No space left on device)")
    assert "cannot write checkpoint level" in line and "choose another directory" in line
    assert _log_of(line).exists()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")   # the swallowed Ctrl-C, on purpose
def test_a_ctrl_c_that_a_finalizer_swallows_is_still_counted():
    """Python raises a Ctrl-C's KeyboardInterrupt wherever the main thread is; in a
    finalizer (Py4J's weakref callbacks) it is printed as "Exception ignored" and
    lost, and the search went on to exit 0.  The driver's handler also counts it, and
    the Spark engine compares the count between levels."""
    import signal

    from checker.spark.session import ctrl_c_count, on_ctrl_c

    class Finalized:
        def __del__(self):
            on_ctrl_c(signal.SIGINT, None)      # the Ctrl-C lands while a finalizer runs

    before = ctrl_c_count()
    Finalized()                                 # its KeyboardInterrupt is ignored
    assert ctrl_c_count() == before + 1
    with pytest.raises(KeyboardInterrupt):
        on_ctrl_c(signal.SIGINT, None)


@pytest.mark.spark
def test_a_run_leaves_no_empty_log_and_a_failed_one_keeps_its_log(tmp_path):
    """Every Spark run left an empty $TMPDIR/kmc-spark-*.log behind (hundreds piled up
    in /tmp); only a log that something was written to stays."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    r = subprocess.run([sys.executable, "-m", "checker", "check", *KAFKA, "--preset", "tiny", "--engine", "spark",
                        "--spark-master", "local[1]", "--spark-driver-states", "0", "--quiet",
                        "--traces-dir", str(tmp_path / "t")],
                       capture_output=True, text=True, env=env(TMPDIR=str(tmpdir)), cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "1184 reachable states" in r.stdout
    assert not list(tmpdir.glob("kmc-spark-*.log"))
    r = subprocess.run([sys.executable, "-m", "checker", "check", *KAFKA, "--preset", "tiny", "--engine", "spark",
                        "--spark-master", "local[1]", "--spark-driver-states", "0", "--quiet",
                        "--traces-dir", str(tmp_path / "t")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300,
                       env=env(TMPDIR=str(tmpdir), KMC_SPARK_CONF="spark.driver.memory=lots"))
    assert r.returncode == 2, r.stderr[-3000:]
    logs = list(tmpdir.glob("kmc-spark-*.log"))
    assert len(logs) == 1 and logs[0].stat().st_size > 0, logs
