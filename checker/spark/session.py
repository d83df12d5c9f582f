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

Failures are one line.  A master URL is checked before the JVM starts (what is
wrong with ``local[abc]``), a ``spark://`` master must accept a TCP connection
within ``KMC_SPARK_CONNECT_TIMEOUT`` seconds (default 5; Spark itself would retry
for over a minute), and everything the JVM and the Python workers print once Spark
is up (Java stacks, a worker's traceback on Ctrl-C) goes to a log file, which
``log_path()`` names and every Spark failure line points to, never the terminal.
``KMC_SPARK_LOG`` chooses that file.

>>> master_problem("local[abc]")
"'local[abc]' needs a number of threads or *: write local[4] or local[*]"
>>> master_problem("spark://h:7077") is None
True
"""

from __future__ import annotations

import atexit
import importlib.machinery
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from checker.errors import ModelError, UsageError

LOG4J = Path(__file__).with_name("log4j2.properties")
_LOOPBACK = re.compile(r"^(local(\[.*\])?|local-cluster\[.*\]|spark://(127\.\d+\.\d+\.\d+|localhost)(:\d+)?(,.*)?)$")


CONNECT_TIMEOUT = 5.0
_LOG: Path | None = None


def log_path() -> Path:
    """The file Spark's own output goes to (created on first use)."""
    global _LOG
    if _LOG is None:
        chosen = os.environ.get("KMC_SPARK_LOG")
        if chosen:
            _LOG = Path(chosen)
        else:
            _LOG = Path(tempfile.gettempdir()) / f"kmc-spark-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
            atexit.register(_drop_if_empty, _LOG)
    return _LOG


def _drop_if_empty(path: Path) -> None:
    """At exit: a log of ours that nothing was written to goes, so that runs without
    a failure leave nothing in $TMPDIR (one file per run piled up there).  A log that
    KMC_SPARK_LOG names is the user's, and stays whatever it holds."""
    try:
        if path.stat().st_size == 0:
            path.unlink()
    except OSError:
        pass


def _log_file() -> Any:
    """The log, opened for appending; a log that cannot be written is no reason to
    fail a run, so os.devnull stands in."""
    try:
        log_path().parent.mkdir(parents=True, exist_ok=True)
        return open(log_path(), "ab", buffering=0)
    except OSError:
        return open(os.devnull, "ab", buffering=0)


_THREADS = r"(\*|[1-9]\d*)"


def master_problem(master: str) -> str | None:
    """What is wrong with a master URL, in words, or None.  Spark's own answer to
    ``local[abc]`` is "Error initializing SparkContext"."""
    if not master or master != master.strip():
        return f"{master!r} is empty or has spaces around it: write e.g. local[*] or spark://HOST:7077"
    if master == "local" or re.fullmatch(rf"local\[{_THREADS}\]", master) \
            or re.fullmatch(rf"local\[{_THREADS},\s*[1-9]\d*\]", master):
        return None
    if master.startswith("local-cluster"):
        if re.fullmatch(r"local-cluster\[\s*[1-9]\d*\s*,\s*[1-9]\d*\s*,\s*[1-9]\d*\s*\]", master):
            return None
        return f"{master!r} must be local-cluster[WORKERS,CORES,MEMORY_MB], e.g. local-cluster[2,1,1024]"
    if master.startswith("local"):
        if re.fullmatch(r"local\[.*,.*\]", master):
            return f"{master!r} must be local[THREADS,MAX_FAILURES] with whole numbers: e.g. local[4,2]"
        return f"{master!r} needs a number of threads or *: write local[4] or local[*]"
    if master.startswith("spark://"):
        for hp in master[len("spark://"):].split(","):
            host, sep, port = hp.rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
                return f"{master!r}: {hp!r} is not HOST:PORT; write e.g. spark://HOST:7077"
        return None
    if master in ("yarn",) or re.fullmatch(r"(k8s|mesos)://\S+", master):
        return None
    return (f"{master!r} is not a Spark master URL; use local[*], local[N], spark://HOST:PORT, yarn or "
            f"k8s://HOST:PORT")


def _reachable(master: str) -> None:
    """A spark:// master must accept a connection within the timeout: Spark's own
    client retries for more than a minute before it gives up with a Java stack."""
    if not master.startswith("spark://"):
        return
    try:
        timeout = float(os.environ.get("KMC_SPARK_CONNECT_TIMEOUT", CONNECT_TIMEOUT))
    except ValueError:
        raise UsageError("KMC_SPARK_CONNECT_TIMEOUT must be a number of seconds, e.g. 5") from None
    problems = []
    for hp in master[len("spark://"):].split(","):
        host, _, port = hp.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                return
        except socket.timeout:
            problems.append(f"{hp}: no answer within {timeout:g} s")
        except OSError as e:
            problems.append(f"{hp}: {e.strerror or e}")
    raise UsageError(f"cannot reach the Spark master {master} ({'; '.join(problems)}); start the master, or "
                     f"fix --spark-master (or leave it out to run Spark embedded)")


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


LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# The JVM's own warnings (class-data sharing's among them) to its stderr, i.e. to
# Spark's log (``_JvmStderr``), never to the driver's stdout.
JVM_LOG_OPTIONS = "-Xlog:disable -Xlog:all=warning:stderr"
CDS_STALE = 3600.0   # seconds after which an unfinished archive (its JVM was killed) is removed
CDS_UNUSED = 30 * 86400.0   # seconds after which an archive no run has mapped is removed


class ClassData:
    """The JVM's class-data-sharing archive of Spark's classes, for local mode.

    Starting Spark loads and verifies several thousand classes from its jars, about
    1.5 of the 5 to 6 CPU seconds the JVM spends to start an empty job here.  Java
    17 can save the classes a run loaded into a dynamic archive when it exits
    (``-XX:ArchiveClassesAtExit``) and map them from it at the next start
    (``-XX:SharedArchiveFile``).  The first local-mode run on a machine writes the
    archive to a file of its own, waits for its JVM to exit, and renames the file
    into place; later runs use it.  The JVM itself checks that an archive matches its
    version and class path and runs without it when it does not; the file name
    also carries the Java binary, pyspark's version and the JVM options, so that a
    new Java or pyspark writes a new one.  ``KMC_SPARK_CDS=0`` turns it off;
    ``KMC_CACHE_DIR`` (default ``$XDG_CACHE_HOME/kmc`` or ``~/.cache/kmc``) is where
    it lives (about 90 MB).  Each checkout's pyspark, and each new Java or pyspark,
    has an archive of its own, so a run marks the one it maps as used, and a run
    that writes one removes those no run has used for ``CDS_UNUSED`` seconds."""

    def __init__(self) -> None:
        self.options = ""
        self.writing: Path | None = None
        self.final: Path | None = None
        if os.environ.get("KMC_SPARK_CDS", "1").strip() in ("0", "", "false", "no", "off"):
            return
        try:
            self.final = self._path()
            if self.final is None:
                return
            if self.final.is_file():
                self.options = f"-XX:SharedArchiveFile={self.final}"
                try:
                    os.utime(self.final)    # used: see _remove_stale
                except OSError:
                    pass
                return
            self.final.parent.mkdir(parents=True, exist_ok=True)
            self._remove_stale()
            self.writing = self.final.with_name(f"{self.final.stem}.{os.getpid()}.{time.time_ns()}.part")
            self.options = f"-XX:ArchiveClassesAtExit={self.writing}"
        except OSError:
            self.options, self.writing = "", None

    @staticmethod
    def _path() -> Path | None:
        import hashlib

        java = shutil.which("java") if not os.environ.get("JAVA_HOME") else \
            str(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
        try:
            import pyspark
        except ImportError:
            return None
        if not java:
            return None
        real = os.path.realpath(java)
        jars = Path(pyspark.__file__).parent / "jars"
        key = "|".join([real, str(os.stat(real).st_mtime_ns), pyspark.__version__, str(jars),
                        str(jars.stat().st_mtime_ns) if jars.is_dir() else "-", LOCAL_JVM_OPTIONS, JVM_LOG_OPTIONS])
        root = os.environ.get("KMC_CACHE_DIR") or \
            str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kmc")
        return Path(root) / f"spark-classes-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"

    def _remove_stale(self) -> None:
        now = time.time()
        for old in self.final.parent.glob(f"{self.final.stem}.*.part"):
            try:
                if now - old.stat().st_mtime > CDS_STALE:
                    old.unlink()
            except OSError:
                pass
        # The archives of other checkouts, Javas or pysparks that no run has mapped
        # for a while: 90 MB each, which nothing else would ever remove.
        for old in self.final.parent.glob("spark-classes-*.jsa"):
            try:
                if old != self.final and now - old.stat().st_mtime > CDS_UNUSED:
                    old.unlink()
            except OSError:
                pass

    def started(self, sc: Any, options: str) -> None:
        """The JVM is up with ``options``: if it is writing the archive, wait for it
        to exit when this process does, then put the archive in place."""
        if self.writing is None or str(self.writing) not in options:
            return
        proc = getattr(getattr(sc, "_gateway", None), "proc", None)
        if proc is None:
            return
        atexit.register(self.finish, proc)

    def finish(self, proc: Any) -> None:
        """At exit: the JVM stops when its stdin closes, and writes the archive as it
        exits; a complete archive is renamed into place (atomically: a JVM starting
        meanwhile sees the old name or the whole file)."""
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            code = proc.wait(timeout=120)
        except Exception:  # noqa: BLE001 - a JVM that does not stop: leave it, the file is removed later
            return
        try:
            if code == 0 and self.writing.is_file() and self.writing.stat().st_size > 0:
                os.replace(self.writing, self.final)
            else:
                self.writing.unlink(missing_ok=True)
        except OSError:
            pass


def conf_items(master: str, partitions: int | None, cds: ClassData | None = None) -> dict[str, str]:
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
        # The JVM only moves bytes here (the search runs in Python): its client
        # compiler and the serial collector cost it about half the CPU seconds of
        # the default C2 compiler and parallel collector threads (15.6 against 8.7
        # s on the small preset, local[1]; docs/spark.md).
        items["spark.driver.extraJavaOptions"] += " " + LOCAL_JVM_OPTIONS + " " + JVM_LOG_OPTIONS
        if cds is not None and cds.options:
            items["spark.driver.extraJavaOptions"] += " " + cds.options
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
    master = "local[*]" if master is None else master
    bad = master_problem(master)
    if bad:
        raise UsageError(f"--spark-master {bad}")
    _reachable(master)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf = SparkConf()
    cds = ClassData() if master.startswith("local") else None
    items = conf_items(master, partitions, cds)
    for k, v in items.items():
        conf.set(k, v)
    jvm_stderr = _JvmStderr()
    try:
        # batchSize=-1: the serializer of partitionBy's output (see the module docstring).
        sc = SparkContext(conf=conf, batchSize=-1)
    except Exception as e:  # noqa: BLE001 - the JVM did not start, a bad master URL...
        why = jvm_stderr.failed() or f"{type(e).__name__}: {' '.join(str(e).split())}"
        if len(why) > 300:
            why = why[:297] + "..."
        extra = os.environ.get("KMC_SPARK_CONF", "").strip()
        conf_hint = f", KMC_SPARK_CONF (set here to {extra!r}, which the command line below does not show)" \
            if extra else ""
        raise UsageError(f"cannot start Spark on {master}: {why}; check --spark-master{conf_hint} and the Java "
                         f"runtime (java -version); Spark's log: {log_path()}") from None
    except BaseException:
        jvm_stderr.failed()
        raise
    jvm_stderr.started()
    if cds is not None:
        cds.started(sc, items.get("spark.driver.extraJavaOptions", ""))
    sc.setLogLevel(os.environ.get("KMC_SPARK_LOG_LEVEL", "ERROR"))
    # py4j logs its connection errors (on Ctrl-C, say) through logging, some to the
    # root logger, which would print them: to the log file instead.
    for logger in (logging.getLogger("py4j"), logging.getLogger()):
        if not logger.handlers:
            logger.addHandler(logging.FileHandler(log_path(), delay=True))
    logging.getLogger("py4j").propagate = False
    # PySpark's SIGINT handler cancels the jobs through the same Py4J connection that
    # the interrupted call is using ("reentrant call"): a plain KeyboardInterrupt
    # instead, and the JVM, which gets the same Ctrl-C, stops its jobs itself.
    import signal
    import threading
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, on_ctrl_c)
    return sc, True


_CTRL_C = [0]    # Ctrl-Cs received since the process started


def on_ctrl_c(signum: int, frame: Any) -> None:
    """The driver's SIGINT handler: Python's own (a KeyboardInterrupt wherever the main
    thread is), and a count.  When the interrupt lands in a finalizer, such as the
    weakref callbacks by which Py4J releases its Java objects, Python prints
    "Exception ignored in" and goes on: the engine compares :func:`ctrl_c_count`
    between levels, so that such a Ctrl-C still stops the search."""
    _CTRL_C[0] += 1
    raise KeyboardInterrupt


def ctrl_c_count() -> int:
    return _CTRL_C[0]


# Lines the JVM and PySpark print at start-up whatever the log configuration says.
NOISE = (
    "WARNING: Using incubator modules:",
    "Setting default log level to",
    "To adjust logging level use sc.setLogLevel",
)


class _JvmStderr:
    """The JVM's stderr, through a pipe: the start-up banners above are dropped,
    everything else goes to the log file (``log_path()``).  Until the JVM has
    started, its lines are held back as well: if it fails to start, they become the
    one-line error instead of a Java stack trace.  The driver's own stderr is
    restored as soon as the JVM is up; the JVM and its Python workers keep the pipe."""

    def __init__(self) -> None:
        import threading

        self.held: list[str] | None = []
        self.lock = threading.Lock()
        self.out = None
        self.thread = None
        self.log = None
        if os.environ.get("KMC_SPARK_RAW_STDERR") or not hasattr(os, "pipe"):
            return
        self.log = _log_file()
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
            try:
                self.log.write(raw + b"\n")
            except (OSError, ValueError):
                pass

    def _restore(self) -> None:
        if self.out is not None:
            try:
                sys.stderr.flush()
                os.dup2(self.out, 2)
            except OSError:
                pass

    def started(self) -> None:
        """The JVM is up: restore our stderr; what it printed is in the log."""
        self._restore()
        with self.lock:
            self.held = None

    def failed(self) -> str:
        """The JVM did not start: restore our stderr, return its first error line."""
        self._restore()
        if self.thread is not None:
            self.thread.join(timeout=5)   # the JVM has exited: its lines are all in the pipe
        with self.lock:
            held, self.held = self.held or [], None
        before = ""
        for line in held:
            line = line.strip()
            if "Exception" in line or "Error" in line:
                line = re.sub(r'^Exception in thread "[^"]*" ', "", line)
                line = re.sub(r"^[\w.$]+(Exception|Error): ", "", line)
                if "Could not create the Java Virtual Machine" in line and before:
                    return f"{before} ({line.removeprefix('Error: ').rstrip('.')})"   # the cause is the line before
                return line
            if line:
                before = line
        return ""


_CAUSES = [
    # (pattern in the Java/Python error text, what happened, the fix)
    (r"No space left on device|Disk quota exceeded", "the disk is full ({m})",
     "free some space, or choose another directory (--checkpoint DIR; Spark's scratch space: "
     "KMC_SPARK_CONF=spark.local.dir=DIR)"),
    (r"Python worker exited unexpectedly[^\n]*|ExecutorLostFailure[^\n]*|Executor heartbeat timed out[^\n]*|"
     r"Worker (?:lost|crashed)[^\n]*|Connection reset by peer",
     "a Spark executor died ({m})",
     "run again (an executor killed by the kernel's OOM killer needs more memory: "
     "KMC_SPARK_CONF=spark.executor.memory=8g)"),
    (r"OutOfMemoryError[^\n]*|Java heap space", "the JVM ran out of memory ({m})",
     "give Spark more memory: KMC_SPARK_CONF=spark.driver.memory=8g"),
    (r"Answer from Java side is empty|Error while (?:receiving|sending)|Py4JNetworkError[^\n]*|"
     r"SparkContext (?:was shut down|has been shutdown)",
     "the Spark JVM stopped ({m})", "run again; if it keeps stopping, see the log"),
    (r"cancelled because SparkContext was shut down|Job \d+ cancelled[^\n]*", "the Spark job was cancelled ({m})",
     "run again"),
]


def failure(e: BaseException, resume_dir: str | None = None) -> UsageError | None:
    """One line for a Spark failure that is not kmc's bug (a full disk, a dead
    executor, a JVM gone), naming the cause, the fix and the log; None when the
    error is none of those.  The Java stack itself goes to the log, not the line."""
    text = f"{type(e).__name__}: {e}\n{getattr(e, 'java_exception', '') or ''}"
    for pattern, what, fix in _CAUSES:
        m = re.search(pattern, text)
        if m:
            found = " ".join(m.group(0).split())
            found = found if len(found) <= 160 else found[:157] + "..."
            again = f"; go on from the last complete level with --resume {resume_dir}" if resume_dir else ""
            _append_log(text)
            return UsageError(f"{what.format(m=found)}; {fix}{again} (Spark's log: {log_path()})")
    return None


def run_job(action: Any) -> Any:
    """Run a Spark action (a callable); a failed task becomes a one-line error
    that says why: a model the executors cannot import, a known failure (see
    ``failure``), else the task's own exception line."""
    try:
        return action()
    except Exception as e:  # noqa: BLE001
        if type(e).__name__ != "Py4JJavaError":
            raise
        text = str(e)
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        why = next((ln for ln in reversed(lines) if re.match(r"^[A-Za-z_.]*(Error|Exception)\b", ln)
                    and not ln.startswith(("org.", "java.", "scala.", "py4j."))), None)
        if why and ("ModuleNotFoundError" in why or "ImportError" in why):
            raise UsageError(f"a Spark executor could not import the model: {why}; the executors need the "
                             f"model's modules on their PYTHONPATH (kmc passes its own import path)") from None
        if why and why.startswith("checker.errors.ModelError: "):
            # model code the executors call outside the re-derived paths (Model.partition_key)
            raise ModelError(why[len("checker.errors.ModelError: "):]) from None
        known = failure(e)      # a full disk, a dead executor: one line, the stack in the log
        if known is not None:
            raise known from None
        first = next((ln for ln in lines if "Exception" in ln or "Error" in ln), lines[0] if lines else "")
        raise RuntimeError(f"a Spark job failed: {why or first[:300]}") from None


def _append_log(text: str) -> None:
    with _log_file() as f:
        try:
            f.write(f"---- kmc: the error reported in one line ----\n{text}\n".encode("utf-8", "replace"))
        except OSError:
            pass


def java_version() -> str:
    try:
        p = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        return (p.stderr or p.stdout).splitlines()[0]
    except Exception:  # noqa: BLE001
        return "unknown"


def ship(cloudpickle: Any, payload: Any, owners: list) -> bytes:
    """Pickle the model and its properties for the executors.  Code from a module
    the executors cannot import by name (a ``--invariants`` file, a script) travels
    by value; everything else by reference."""
    by_value = []
    for obj in owners:
        name = getattr(obj, "__module__", None)
        mod = sys.modules.get(name or "")
        if mod is None or name in ("__main__", "builtins") or mod in by_value:
            continue
        top = name.split(".")[0]
        if top in sys.builtin_module_names or importlib.machinery.PathFinder.find_spec(top, sys.path) is None:
            by_value.append(mod)
    for mod in by_value:
        cloudpickle.register_pickle_by_value(mod)
    try:
        return cloudpickle.dumps(payload)
    finally:
        for mod in by_value:
            cloudpickle.unregister_pickle_by_value(mod)
