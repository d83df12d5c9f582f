"""The Spark engine on a real Spark standalone cluster: a master and two workers
started on 127.0.0.1 (random free ports) with the launchers inside the pyspark
package, then ``kmc check --spark-master spark://127.0.0.1:PORT``: the same answers
and the same counterexample as the local engine.  The fixture stops the processes
it started (each in its own process group) whatever happens.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.test_spark_cli import KAFKA, SAME, doc, kmc, steps

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as r:
            return int(json.load(r).get("aliveworkers", 0))
    except Exception:  # noqa: BLE001 - not up yet
        return 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    spark_class = home / "bin" / "spark-class"
    d = tmp_path_factory.mktemp("cluster")
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1",
               SPARK_LOG_DIR=str(d), PYSPARK_PYTHON=sys.executable)
    procs: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> None:
        log = open(d / f"{name}.log", "wb")
        procs.append(subprocess.Popen([str(spark_class), *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True))

    port, ui = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
              "--webui-port", str(ui))
        for i in range(2):
            start(f"worker{i}", "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                  "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", "1",
                  "--memory", "1g", "--work-dir", str(d / f"work{i}"))
        deadline = time.monotonic() + 120
        while alive_workers(ui) < 2:
            for p in procs:
                assert p.poll() is None, (d / "master.log").read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the standalone cluster did not start in time"
            time.sleep(0.5)
        yield url, d
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=20)


def test_a_preset_on_a_standalone_cluster(cluster, tmp_path):
    url, d = cluster
    args = ["check", *KAFKA, "--preset", "no-controller-fencing", "--json", "--quiet"]
    local = doc(kmc(*args, "--traces-dir", tmp_path / "l"))
    r = kmc(*args, "--traces-dir", tmp_path / "s", "--spark-master", url, "--spark-partitions", "2",
            "--spark-driver-states", "0",
            KMC_SPARK_CONF="spark.executor.memory=512m,spark.executor.cores=1")
    spark = doc(r)
    assert {k: spark[k] for k in SAME} == {k: local[k] for k in SAME}
    assert spark["engine"]["master"] == url and spark["engine"]["partitions"] == 2
    assert steps(spark["trace_path"]) == steps(local["trace_path"])
    # The executors ran on the two workers.
    apps = [p for i in range(2) for p in (d / f"work{i}").glob("app-*/*")]
    assert len(apps) >= 2, sorted(str(p) for p in (d).rglob("*"))[:50]
