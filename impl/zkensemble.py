"""A real ZooKeeper ensemble on loopback, started and stopped by the project itself.

The servers are Debian's ZooKeeper 3.8 (``scripts/ensure-zookeeper`` installs it;
``/usr/share/java/zookeeper.jar`` names its dependencies in its manifest), each one a
``QuorumPeerMain`` JVM with its own data directory under a folder the caller owns.
Ticks and session timeouts are short, so that a session expiry or a leader election
takes a second or two rather than half a minute: ``tickTime`` 100 ms, sessions
between 2 and 20 ticks (``min/maxSessionTimeout`` are ZooKeeper's own bounds).

The ensemble is a context manager, and ``stop`` kills every server it started (also
ones stopped with SIGSTOP: they are resumed first), whatever happened in between.

    ensemble = Ensemble(3, Path(tmp))
    with ensemble:
        ensemble.connect_string      # "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
        ensemble.leader()            # the server index whose ``srvr`` says Mode: leader
        ensemble.pause(i); ensemble.resume(i)     # SIGSTOP / SIGCONT of one server
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

JAR = Path("/usr/share/java/zookeeper.jar")
MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
TICK_MS = 100
INSTALL = "bash scripts/ensure-zookeeper"


class EnsembleError(RuntimeError):
    """The ensemble could not be started (no ZooKeeper here, no quorum in time)."""


def free_ports(n: int) -> list[int]:
    """n distinct loopback ports free right now (bound together, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def four_letter(port: int, word: str, timeout: float = 1.0) -> str:
    """A ZooKeeper four-letter-word command (``srvr``, ``ruok``); '' if no answer."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                b = s.recv(4096)
                if not b:
                    break
                chunks.append(b)
        return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


class Ensemble:
    def __init__(self, servers: int, directory: Path, *, java: str = "java") -> None:
        if not JAR.exists():
            raise EnsembleError(f"ZooKeeper is not installed ({JAR} is missing); run: {INSTALL}")
        self.n = servers
        self.directory = Path(directory)
        self.java = java
        ports = free_ports(3 * servers)
        self.client_ports = ports[:servers]
        self.peer_ports = ports[servers:2 * servers]
        self.election_ports = ports[2 * servers:]
        self.procs: list[subprocess.Popen | None] = [None] * servers
        self.paused: set[int] = set()

    @property
    def connect_string(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.client_ports)

    def _config(self, i: int) -> Path:
        data = self.directory / f"zk{i}"
        data.mkdir(parents=True, exist_ok=True)
        (data / "myid").write_text(f"{i + 1}\n")
        lines = [
            f"tickTime={TICK_MS}", "initLimit=20", "syncLimit=5",
            f"minSessionTimeout={2 * TICK_MS}", f"maxSessionTimeout={20 * TICK_MS}",
            f"dataDir={data}", f"clientPort={self.client_ports[i]}", "clientPortAddress=127.0.0.1",
            "admin.enableServer=false", "4lw.commands.whitelist=*", "electionPortBindRetry=3",
            "preAllocSize=1024", "snapCount=100000",
        ]
        lines += [f"server.{j + 1}=127.0.0.1:{self.peer_ports[j]}:{self.election_ports[j]}" for j in range(self.n)]
        cfg = data / "zoo.cfg"
        cfg.write_text("\n".join(lines) + "\n")
        return cfg

    def start_server(self, i: int) -> None:
        cfg = self._config(i)
        log = open(self.directory / f"zk{i}.out", "ab")
        self.procs[i] = subprocess.Popen(
            [self.java, "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", str(JAR), MAIN, str(cfg)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()

    def start(self, timeout: float = 60.0) -> "Ensemble":
        for i in range(self.n):
            self.start_server(i)
        self.wait_for_quorum(timeout)
        return self

    def modes(self) -> list[str]:
        """Each server's role as ``srvr`` reports it: leader, follower, standalone, or ''."""
        out = []
        for i, port in enumerate(self.client_ports):
            if i in self.paused or self.procs[i] is None:
                out.append("")
                continue
            text = four_letter(port, "srvr")
            mode = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("Mode:")), "")
            out.append(mode)
        return out

    def leader(self) -> int | None:
        modes = self.modes()
        return modes.index("leader") if "leader" in modes else None

    def wait_for_quorum(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for i, p in enumerate(self.procs):
                if p is not None and p.poll() is not None:
                    tail = (self.directory / f"zk{i}.out").read_text(errors="replace")[-800:]
                    self.stop()
                    raise EnsembleError(f"ZooKeeper server {i} exited with status {p.returncode}: {tail.strip()}")
            modes = self.modes()
            if "standalone" in modes or ("leader" in modes and sum(m in ("leader", "follower") for m in modes) > self.n // 2):
                return
            time.sleep(0.2)
        self.stop()
        raise EnsembleError(f"the ZooKeeper ensemble had no quorum after {timeout:.0f} s (logs in {self.directory})")

    # -- faults ------------------------------------------------------------------------
    def pause(self, i: int) -> None:
        """SIGSTOP server i: it keeps its sockets but answers nothing."""
        os.kill(self.procs[i].pid, signal.SIGSTOP)
        self.paused.add(i)

    def resume(self, i: int) -> None:
        os.kill(self.procs[i].pid, signal.SIGCONT)
        self.paused.discard(i)

    def stop(self) -> None:
        for i, p in enumerate(self.procs):
            if p is None:
                continue
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                    p.kill()
                except ProcessLookupError:
                    pass
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self.procs[i] = None
        self.paused.clear()

    def __enter__(self) -> "Ensemble":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
