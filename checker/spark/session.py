"""Starting (or reusing) the SparkContext the engine runs on.

With no master, Spark starts embedded in this process in local mode on every core
(``local[*]``): nothing to install or start beyond the pyspark package and a Java
runtime.  A master URL (``spark://host:7077``, ``yarn``, ``k8s://...``) runs on an
existing cluster.

What is set, and why:

- the executors' Python is this interpreter (``PYSPARK_PYTHON``) and their
  ``PYTHONPATH`` includes this process's import path, so that they import
  ``checker`` and the model's module the way the driver does;
- for local and loopback masters, every address is 127.0.0.1
  (``spark.driver.host``, ``spark.driver.bindAddress``, ``SPARK_LOCAL_IP``): no
  network is needed;
- in local mode, a JVM heap of a quarter of the machine's memory (1 to 8 GiB): the
  executors share it with the driver;
- no web UI, no console progress bar, and Spark's own logging at ERROR
  (``KMC_SPARK_LOG_LEVEL`` changes it), so the output is kmc's alone;
- the serializer batches without limit, the same serializer as PySpark's
  ``partitionBy`` output, so that a partitioned RDD and a shuffled one can be
  united partition by partition without being re-serialized.

``KMC_SPARK_CONF`` adds any Spark setting: ``"spark.driver.memory=4g,spark.x=y"``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from checker.errors import UsageError

LOG4J = Path(__file__).with_name("log4j2.properties")
_LOOPBACK = re.compile(r"^(local(\[.*\])?|local-cluster\[.*\]|spark://(127\.\d+\.\d+\.\d+|localhost)(:\d+)?(,.*)?)$")


def java_problem() -> str | None:
    """Why Spark cannot start here (no Java), or None."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        return ("the Spark engine needs a Java runtime (17 or newer) and none was found (no java on PATH, "
                "no JAVA_HOME); install one, e.g. apt-get install openjdk-17-jre-headless (make run and "
                "make test do it), or use --engine local")
    return None


def _import_path() -> str:
    seen: list[str] = []
    for p in [os.getcwd(), *sys.path]:
        p = os.path.abspath(p or os.getcwd())
        if p not in seen and os.path.isdir(p) and "pyspark" not in p:
            seen.append(p)
    return os.pathsep.join(seen)


def local_heap_gib() -> int:
    """The JVM heap for local mode: a quarter of the machine's memory, 1 to 8 GiB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 2
    return max(1, min(8, total // 4 // 2**30))


def is_local(master: str) -> bool:
    return bool(_LOOPBACK.match(master))


def conf_items(master: str, partitions: int | None) -> dict[str, str]:
    items = {
        "spark.master": master,
        "spark.app.name": "kmc",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.pyspark.python": sys.executable,
        "spark.executorEnv.PYTHONPATH": _import_path(),
        "spark.python.worker.reuse": "true",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{LOG4J}",
        "spark.executor.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{LOG4J}",
        "spark.sql.shuffle.partitions": str(partitions or 2),
        "spark.shuffle.compress": "false",
        "spark.rdd.compress": "false",
        "spark.cleaner.referenceTracking.blocking": "false",
    }
    if partitions:
        items["spark.default.parallelism"] = str(partitions)
    if is_local(master):
        items["spark.driver.host"] = "127.0.0.1"
        items["spark.driver.bindAddress"] = "127.0.0.1"
    if master.startswith("local"):
        # In local mode the executors live in the driver's JVM, with the visited set
        # and the frontier in its block manager: Spark's default 1g heap makes it
        # spill and collect garbage long before the machine is short of memory.
        items["spark.driver.memory"] = f"{local_heap_gib()}g"
    for pair in filter(None, (x.strip() for x in os.environ.get("KMC_SPARK_CONF", "").split(","))):
        k, sep, v = pair.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"KMC_SPARK_CONF entry {pair!r} is not key=value; write e.g. "
                             f"KMC_SPARK_CONF=spark.driver.memory=4g")
        items[k.strip()] = v.strip()
    return items


def get_context(master: str | None = None, partitions: int | None = None) -> tuple[Any, bool]:
    """``(SparkContext, created)``: the active context if there is one (its master
    must then be ``master``, when given), else a new one."""
    problem = java_problem()
    if problem:
        raise UsageError(problem)
    from pyspark import SparkConf, SparkContext

    active = SparkContext._active_spark_context
    if active is not None:
        if master is not None and active.master != master:
            raise UsageError(f"a SparkContext on {active.master} is already running in this process; "
                             f"cannot start another on {master}")
        return active, False
    master = master or "local[*]"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf = SparkConf()
    for k, v in conf_items(master, partitions).items():
        conf.set(k, v)
    jvm_stderr = _JvmStderr()
    try:
        # batchSize=-1: the serializer of partitionBy's output (see the module docstring).
        sc = SparkContext(conf=conf, batchSize=-1)
    except Exception as e:  # noqa: BLE001 - the JVM did not start, a bad master URL...
        why = jvm_stderr.failed() or f"{type(e).__name__}: {' '.join(str(e).split())}"
        if len(why) > 300:
            why = why[:297] + "..."
        raise UsageError(f"cannot start Spark on {master}: {why}; check --spark-master and the Java runtime "
                         f"(java -version)") from None
    except BaseException:
        jvm_stderr.failed()
        raise
    jvm_stderr.started()
    sc.setLogLevel(os.environ.get("KMC_SPARK_LOG_LEVEL", "ERROR"))
    return sc, True


# Lines the JVM and PySpark print at start-up whatever the log configuration says.
NOISE = (
    "WARNING: Using incubator modules:",
    "Setting default log level to",
    "To adjust logging level use sc.setLogLevel",
)


class _JvmStderr:
    """The JVM's stderr, through a pipe: the start-up banners above are dropped,
    everything else is passed on.  Until the JVM has started, its lines are held
    back: if it fails to start, they become the one-line error instead of a Java
    stack trace.  The driver's own stderr is restored as soon as the JVM is up."""

    def __init__(self) -> None:
        import threading

        self.held: list[str] | None = []
        self.lock = threading.Lock()
        self.out = None
        self.thread = None
        if os.environ.get("KMC_SPARK_RAW_STDERR") or not hasattr(os, "pipe"):
            return
        try:
            sys.stderr.flush()
            self.out = os.dup(2)
            r, w = os.pipe()
            os.dup2(w, 2)
            os.close(w)
        except OSError:
            self.out = None
            return
        self.thread = threading.Thread(target=self._pump, args=(r,), name="kmc-jvm-stderr", daemon=True)
        self.thread.start()

    def _pump(self, r: int) -> None:
        with os.fdopen(r, "rb", buffering=0) as src:
            buf = b""
            while True:
                try:
                    chunk = src.read(65536)
                except OSError:
                    return
                if not chunk:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    self._line(line)
            if buf:
                self._line(buf)

    def _line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace")
        if text.startswith(NOISE):
            return
        with self.lock:
            if self.held is not None:
                self.held.append(text)
                return
        os.write(self.out, raw + b"\n")

    def _restore(self) -> None:
        if self.out is not None:
            try:
                sys.stderr.flush()
                os.dup2(self.out, 2)
            except OSError:
                pass

    def started(self) -> None:
        """The JVM is up: restore our stderr, pass on what it held back."""
        self._restore()
        with self.lock:
            held, self.held = self.held or [], None
        if self.out is not None and held:
            os.write(self.out, ("\n".join(held) + "\n").encode())

    def failed(self) -> str:
        """The JVM did not start: restore our stderr, return its first error line."""
        self._restore()
        if self.thread is not None:
            self.thread.join(timeout=5)   # the JVM has exited: its lines are all in the pipe
        with self.lock:
            held, self.held = self.held or [], None
        for line in held:
            line = line.strip()
            if "Exception" in line or "Error" in line:
                line = re.sub(r'^Exception in thread "[^"]*" ', "", line)
                return re.sub(r"^[\w.$]+(Exception|Error): ", "", line)
        return ""


def java_version() -> str:
    try:
        p = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        return (p.stderr or p.stdout).splitlines()[0]
    except Exception:  # noqa: BLE001
        return "unknown"
