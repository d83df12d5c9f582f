"""``kmc check --engine spark`` as a real subprocess: the same JSON answers and the
same counterexample as the local engine, traces that ``kmc replay`` accepts, bad
input as one line (exit 2), and a run killed mid-way then resumed from its
checkpoint to the same counts.

Each Spark run starts its own JVM, so this module keeps to a handful of runs.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_cli import assert_one_line_error

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parent.parent
TOYS = ["--model", "tests.toys:FAMILY"]
KAFKA = ["--model", "spec.family:FAMILY"]
SAME = ["distinct", "generated", "depth", "verdict", "violated_property", "violated_properties", "witnesses",
        "action_counts", "complete", "config"]


def env(**extra: str) -> dict:
    e = dict(os.environ, PYTHONPATH=str(ROOT), **extra)
    e.pop("KMC_DEBUG", None)
    return e


def kmc(*args, timeout: float = 300, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "checker", *map(str, args)], cwd=ROOT, env=env(**extra),
                          capture_output=True, text=True, timeout=timeout)


def doc(r: subprocess.CompletedProcess) -> dict:
    assert r.returncode in (0, 1), (r.returncode, r.stderr[-3000:])
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    return json.loads(r.stdout)


def steps(trace: str) -> list:
    return [(s["action"], s["fingerprint"]) for s in json.loads(Path(trace).read_text())["steps"]]


@pytest.fixture(scope="module")
def local_broken(tmp_path_factory):
    d = tmp_path_factory.mktemp("local")
    return doc(kmc("check", *TOYS, "--preset", "broken", "--json", "--traces-dir", d))


def test_same_json_and_trace_as_the_local_engine(tmp_path, local_broken):
    # The local run has a random PYTHONHASHSEED; this one another, and 3 partitions.
    parts = "3"
    r = kmc("check", *TOYS, "--preset", "broken", "--json", "--engine", "spark", "--spark-partitions", parts,
            "--traces-dir", tmp_path, PYTHONHASHSEED="1")
    got = doc(r)
    assert {k: got[k] for k in SAME} == {k: local_broken[k] for k in SAME}
    assert got["engine"]["engine"] == "spark" and got["engine"]["partitions"] == int(parts)
    assert local_broken["engine"] == {"engine": "local"}
    assert steps(got["trace_path"]) == steps(local_broken["trace_path"])
    # Human output (stderr with --json): the engine line and per-level progress.
    assert "engine: spark on local[*]" in r.stderr and "progress: level=0 frontier=1" in r.stderr
    assert "WARNING: Using incubator modules" not in r.stderr and "Setting default log level" not in r.stderr
    rep = kmc("replay", got["trace_path"], *TOYS)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert "the trace replays" in rep.stdout


def test_bad_spark_options_are_one_line_errors(tmp_path):
    a_file = tmp_path / "f"
    a_file.write_text("x")
    cases = [
        (["--engine", "local", "--spark-master", "local[1]"], "--spark-master needs the Spark engine"),
        (["--spark-partitions", "0"], "expects a number >= 1"),
        (["--engine", "local", "--spark-placement", "fingerprint"], "--spark-placement needs the Spark engine"),
        (["--spark-placement", "zk"], "unknown choice 'zk'"),
        (["--engine", "yarn"], "unknown choice 'yarn'"),
        (["--resume", tmp_path / "nothing-here"], "does not exist"),
        (["--checkpoint", a_file], "is a file, not a directory"),
    ]
    for extra, needle in cases:
        r = kmc("check", *TOYS, "--preset", "tiny", "--traces-dir", tmp_path / "t", *extra, timeout=60)
        assert_one_line_error(r, 2, needle)


def test_a_master_spark_cannot_use_is_a_one_line_error(tmp_path):
    r = kmc("check", *TOYS, "--preset", "tiny", "--traces-dir", tmp_path, "--spark-master", "nosuch://x:1")
    assert_one_line_error(r, 2, "--spark-master 'nosuch://x:1' is not a Spark master URL; use local[*]")
    assert r.stdout == ""          # refused before the model is built or the header printed


def test_user_invariants_ship_to_the_executors(tmp_path):
    args = ["check", *KAFKA, "--preset", "tiny", "--invariants", "examples/invariants.py", "--continue",
            "--json", "--quiet"]
    local = doc(kmc(*args, "--traces-dir", tmp_path / "l"))
    spark = doc(kmc(*args, "--engine", "spark", "--traces-dir", tmp_path / "s"))
    assert {k: spark[k] for k in SAME} == {k: local[k] for k in SAME}
    assert "ZkLeaderIsRegistered" in spark["violated_properties"]
    for a, b in zip(local["trace_paths"], spark["trace_paths"]):
        assert steps(a) == steps(b)


def test_a_raising_user_invariant_names_its_file_and_line(tmp_path):
    inv = tmp_path / "inv.py"
    inv.write_text("from checker.model import always\n\n\ndef bad(s):\n"
                   "    if s.x + s.y >= 2:\n        raise KeyError('boom')\n    return True\n\n\n"
                   "Bad = always('Bad', bad, 'raises on purpose')\n")
    local = kmc("check", *TOYS, "--preset", "tiny", "--invariants", inv, "--quiet", "--traces-dir", tmp_path / "l")
    spark = kmc("check", *TOYS, "--preset", "tiny", "--invariants", inv, "--quiet", "--traces-dir", tmp_path / "s",
                "--engine", "spark")
    line = assert_one_line_error(local, 2, "line 6")
    assert assert_one_line_error(spark, 2, "line 6").split(" (reproduce:")[0] == line.split(" (reproduce:")[0]


def test_killed_run_resumes_to_the_same_counts(tmp_path):
    ckpt = tmp_path / "ckpt"
    args = ["check", *KAFKA, "--preset", "tiny", "--json", "--quiet", "--traces-dir", tmp_path / "t"]
    local = doc(kmc(*args))
    proc = subprocess.Popen([sys.executable, "-m", "checker", *map(str, args), "--engine", "spark",
                             "--spark-partitions", "2", "--spark-driver-states", "0", "--checkpoint", ckpt],
                            cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not (ckpt / "level-00003" / "meta" / "_SUCCESS").exists():
            assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
            assert time.monotonic() < deadline, "no level was checkpointed in time"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)   # the driver, its JVM and the Python workers
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    # At any moment at least one level is complete (a newer one is written before an
    # older one is deleted); the kill may leave a newer one half-written.
    complete = sorted(p.name for p in ckpt.iterdir() if (p / "meta" / "_SUCCESS").exists())
    assert complete and int(complete[-1].split("-")[1]) < local["depth"], "the run was not interrupted mid-way"

    r = kmc(*args, "--resume", ckpt)
    resumed = doc(r)
    assert {k: resumed[k] for k in SAME} == {k: local[k] for k in SAME}
    # A checkpoint of another run is refused.
    other = kmc("check", *KAFKA, "--preset", "small", "--quiet", "--traces-dir", tmp_path / "t", "--resume", ckpt)
    assert_one_line_error(other, 2, "was written by another run")


def test_a_run_that_stays_on_the_driver_says_it_wrote_no_checkpoint(tmp_path):
    # tiny's widest level is under the default --spark-driver-states, so the
    # driver's core runs the whole search and no level reaches the partitions.
    ckpt = tmp_path / "ckpt"
    r = kmc("check", *KAFKA, "--preset", "tiny", "--quiet", "--traces-dir", tmp_path / "t", "--checkpoint", ckpt)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"no checkpoint written to {ckpt}: every level ran on the driver" in r.stdout
    assert not ckpt.exists() or not any(ckpt.iterdir())
    # With every level on the partitions, the levels are saved and nothing is said.
    wide = tmp_path / "wide"
    r = kmc("check", *KAFKA, "--preset", "tiny", "--quiet", "--traces-dir", tmp_path / "t", "--checkpoint", wide,
            "--spark-driver-states", "0", "--spark-partitions", "2")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "no checkpoint written" not in r.stdout
    assert any((p / "meta" / "_SUCCESS").exists() for p in wide.iterdir())


LIVE_TOYS = ["--model", "tests.liveness_toys:FAMILY"]


def live_run(tmp_path, args: list, spark: list) -> tuple:
    """``kmc check`` with eventually properties: its exit status, liveness and
    verdict lines (the seconds blanked) and saved traces (their command line left out)."""
    r = kmc("check", *args, *spark, "--traces-dir", tmp_path)
    assert r.returncode in (0, 1), r.stderr[-3000:]
    text = " ".join(r.stdout.split())
    found = re.findall(r"(?:liveness|verdict): [^\n]*?(?= [a-z]+: |$)", text)
    lines = [re.sub(r"[0-9.]+ s\)", "T s)", m) for m in found]
    traces = {}
    for f in sorted(Path(tmp_path).glob("*.json")):
        t = json.loads(f.read_text())
        t.pop("created_by", None)
        traces[f.name] = t
    return r.returncode, lines, traces


@pytest.mark.parametrize("args, master, driver_states", [
    (["--preset", "tiny", "--invariants", "examples/liveness.py"], "local[2]", "50"),
    (["--preset", "tiny", "--invariants", "examples/liveness.py"], "local[1]", "50"),
    ([*LIVE_TOYS, "--preset", "lasso"], "local[1]", "0"),
], ids=["kafka-tiny-local2", "kafka-tiny-local1", "toy-lasso-local1"])
def test_eventually_properties_as_on_the_local_engine(tmp_path, args, master, driver_states):
    """On Spark, with levels on two partitions, eventually properties get the local
    engine's liveness line, verdict, exit status and lasso trace (Kafka tiny:
    EventuallyLeaderElected holds and examples/liveness.py's EventuallyAnyLeader
    fails by a stutter; the toy: a fair cycle)."""
    local = live_run(tmp_path / "local", args, [])
    spark = live_run(tmp_path / "spark", args, ["--engine", "spark", "--spark-master", master,
                                                "--spark-partitions", "2", "--spark-driver-states", driver_states])
    assert spark == local
    assert local[0] == 1 and len(local[2]) == 1 and any("1 violated" in x for x in local[1])
