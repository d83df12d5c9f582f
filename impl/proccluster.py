"""The reference cluster as processes: brokers (impl/node.py) on a real ZooKeeper
ensemble, a producer that records what ``acks=all`` acknowledged, a consumer that reads
below the HW, the faults (``kill -9``, ``SIGSTOP``/``SIGCONT``, restart with the log
directory kept, reassignment) and the checks that must hold after each.

    with Ensemble(3, tmp) as ens:
        c = ProcessCluster(ens.connect_string + "/run1", tmp / "cluster", brokers=3)
        c.start(); c.create_topic(); c.wait_for_leaders()
        with c.producing():
            c.kill(c.leader_of(0)); c.restart(...)
        report = c.check()          # lost acks, controllers per epoch, leaders, logs parse
        c.stop()

What is checked (``check``), after the cluster settled:
- no acknowledged acks=all record is lost: every record the producer saw acknowledged
  (offset, leader epoch) is below the leader's HW, with the same epoch, in what the
  consumer reads;
- at most one controller acted per controller epoch: every ``[Controller id=C epoch=E]``
  line of every broker's state-change log names one C per E, and the ZooKeeper
  ``/controller_epoch`` is the largest E;
- every partition with a live ISR member has a live leader that serves the consumer;
- every live broker's MetadataCache (which only UpdateMetadata fills, and which the
  producer routes by) names the leader ZooKeeper names;
- every line of every state-change log parses (impl/statelog.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from impl import wire as W
from impl import zk as Z
from impl.replica_manager import NONE
from impl.statelog import parse_log
from impl.zkclient import NO_LEADER, KafkaZkClient, TopicPartition, create_partition_reassignment
from impl.zkensemble import free_ports
from impl.zkstore import ZooKeeperStore

TOPIC = "t"


class ClusterError(RuntimeError):
    pass


class Producer:
    """acks=all writes, one at a time, to whichever broker the brokers' metadata caches
    name as leader, the way a Kafka producer routes: a MetadataRequest to some live
    broker (taken in turn, Kafka's least-loaded node), its answer kept until a produce
    fails, then asked again (``Metadata.requestUpdate`` on NOT_LEADER_FOR_PARTITION or a
    lost connection).  ZooKeeper is never read for routing."""

    def __init__(self, cluster: "ProcessCluster", partitions) -> None:
        self.cluster = cluster
        self.partitions = list(partitions)
        self.acknowledged: list[tuple[int, int, int]] = []     # (partition, offset, leader epoch)
        self.attempts = 0
        self.metadata_requests = 0
        self.errors: dict[str, int] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.conns: dict[int, W.Connection] = {}
        self.leaders: dict[int, int] = {}                     # partition -> leader, from a metadata cache
        self._next = 0

    def _count(self, error: str) -> None:
        self.errors[error] = self.errors.get(error, 0) + 1

    def leader(self, p: int) -> int:
        """The partition's leader as a broker's MetadataCache names it (NO_LEADER when no
        broker answered with one)."""
        if p in self.leaders:
            return self.leaders[p]
        brokers = sorted(self.cluster.ports)
        for i in range(len(brokers)):
            b = brokers[(self._next + i) % len(brokers)]
            conn = self.conns.setdefault(b, W.Connection(self.cluster.ports[b], timeout=1.0))
            try:
                resp = conn.call(W.MetadataRequest(TopicPartition(TOPIC, p)), timeout=1.0)
            except (OSError, W.WireError) as e:
                self._count(type(e).__name__)
                continue
            self.metadata_requests += 1
            if resp.error == NONE and resp.leader in self.cluster.ports:
                self._next = (self._next + i + 1) % len(brokers)
                self.leaders[p] = resp.leader
                return resp.leader
            self._count(resp.error)
        self._next = (self._next + 1) % len(brokers)
        return NO_LEADER

    def _run(self) -> None:
        i = 0
        while not self.stop.is_set():
            p = self.partitions[i % len(self.partitions)]
            i += 1
            leader = self.leader(p)
            if leader == NO_LEADER:
                time.sleep(0.05)
                continue
            conn = self.conns.setdefault(leader, W.Connection(self.cluster.ports[leader], timeout=1.0))
            self.attempts += 1
            try:
                resp = conn.call(W.ProduceRequest(TopicPartition(TOPIC, p), "all"), timeout=8.0)
            except (OSError, W.WireError) as e:
                self._count(type(e).__name__)
                self.leaders.pop(p, None)
                time.sleep(0.05)
                continue
            if resp.error == NONE:
                self.acknowledged.append((p, resp.offset, resp.leader_epoch))
            else:
                self._count(resp.error)
                self.leaders.pop(p, None)
                time.sleep(0.05)
            time.sleep(0.005)


class ProcessCluster:
    def __init__(self, hosts: str, directory: Path, *, brokers: int = 3, partitions: int = 1,
                 replication_factor: int = 3, min_insync_replicas: int = 2, session_timeout: float = 2.0,
                 broken: dict[int, str] | None = None, lag_max: float = 1.0) -> None:
        self.hosts = hosts
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.n = brokers
        self.partitions = partitions
        self.rf = replication_factor
        self.min_isr = min_insync_replicas
        self.session_timeout = session_timeout
        self.broken = dict(broken or {})      # broker -> impl/broken.py kind
        self.lag_max = lag_max
        self.ports = dict(enumerate(free_ports(brokers)))
        self.procs: dict[int, subprocess.Popen | None] = {b: None for b in range(brokers)}
        self.paused: set[int] = set()
        self.store = ZooKeeperStore(hosts, session_timeout=session_timeout)
        self.admin = KafkaZkClient(self.store)
        self.admin.ensure_paths()
        self.events: list[str] = []          # what the harness did, with the wall clock

    def note(self, text: str) -> None:
        """What the harness did, also in ``<dir>/harness.log`` (trace validation sizes the
        model's fault budgets by it)."""
        line = f"[{time.time_ns() // 1000}] {text}"
        self.events.append(line)
        with open(self.dir / "harness.log", "a", encoding="utf-8") as f:
            f.write(line + "\n")

    # -- processes -------------------------------------------------------------------------
    def start_broker(self, b: int) -> None:
        ports = ",".join(f"{i}={p}" for i, p in self.ports.items())
        cmd = [sys.executable, "-m", "impl.node", "--broker-id", str(b), "--zk", self.hosts, "--dir", str(self.dir),
               "--ports", ports, "--min-insync-replicas", str(self.min_isr), "--lag-max", str(self.lag_max),
               "--session-timeout", str(self.session_timeout), "--await-brokers", str(self.n)]
        if b in self.broken:
            cmd += ["--broken", self.broken[b]]
        err = open(self.dir / f"broker-{b}.stderr", "ab")
        self.procs[b] = subprocess.Popen(cmd, stdout=err, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        err.close()
        self.note(f"start broker {b} (pid {self.procs[b].pid})")

    def start(self) -> None:
        for b in range(self.n):
            self.start_broker(b)
        self.wait(lambda: len(self.admin.get_all_broker_and_epochs()) == self.n, 30, "every broker registered")

    def alive(self, b: int) -> bool:
        p = self.procs.get(b)
        return p is not None and p.poll() is None

    def kill(self, b: int) -> None:
        """kill -9: the process dies at once, its session times out later."""
        p = self.procs[b]
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        self.paused.discard(b)
        self.note(f"kill -9 broker {b}")

    def pause(self, b: int) -> None:
        os.kill(self.procs[b].pid, signal.SIGSTOP)
        self.paused.add(b)
        self.note(f"SIGSTOP broker {b}")

    def resume(self, b: int) -> None:
        os.kill(self.procs[b].pid, signal.SIGCONT)
        self.paused.discard(b)
        self.note(f"SIGCONT broker {b}")

    def restart(self, b: int) -> None:
        """A new process on the same log directory."""
        if self.alive(b):
            self.kill(b)
        self.start_broker(b)

    def stop(self) -> None:
        for b, p in self.procs.items():
            if p is not None and p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGCONT)
                    p.kill()
                p.wait()
        self.paused.clear()
        self.store.close()

    # -- ZooKeeper reads (the admin's session) -------------------------------------------------
    def controller(self) -> int:
        return self.admin.get_controller_id()

    def controller_epoch(self) -> int:
        return self.admin.get_controller_epoch()[0]

    def state(self, p: int):
        return self.admin.get_partition_state(TopicPartition(TOPIC, p))

    def leader_of(self, p: int) -> int:
        try:
            li = self.state(p)
        except Z.ZkError:
            return NO_LEADER
        return li.leader if li else NO_LEADER

    def registered(self) -> set[int]:
        return set(self.admin.get_all_broker_and_epochs())

    # -- admin -------------------------------------------------------------------------------
    def create_topic(self) -> None:
        assignment = {p: tuple((p + i) % self.n for i in range(self.rf)) for p in range(self.partitions)}
        self.admin.create_topic(TOPIC, assignment, {"min.insync.replicas": str(self.min_isr),
                                                    "unclean.leader.election.enable": "false"})
        self.note(f"create topic {TOPIC} {assignment}")

    def reassign(self, p: int, replicas: tuple) -> None:
        create_partition_reassignment(self.admin, {TopicPartition(TOPIC, p): tuple(replicas)})
        self.note(f"reassign partition {p} to {list(replicas)}")

    def reassignment_pending(self) -> bool:
        from impl.zkclient import get_partition_reassignment
        return bool(get_partition_reassignment(self.admin))

    def assignment(self, p: int) -> tuple:
        return self.admin.get_assignment(TOPIC)[p]

    # -- waiting ----------------------------------------------------------------------------------
    def wait(self, pred, timeout: float, what: str) -> float:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            try:
                if pred():
                    return time.monotonic() - t0
            except (Z.ZkError, OSError, W.WireError):
                pass
            time.sleep(0.05)
        raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what} (logs in {self.dir})")

    def live(self) -> set[int]:
        return {b for b in range(self.n) if self.alive(b) and b not in self.paused}

    def consume(self, p: int, leader: int | None = None) -> W.ConsumeResponse | None:
        leader = self.leader_of(p) if leader is None else leader
        if leader not in self.ports:
            return None
        try:
            resp = W.Connection(self.ports[leader], timeout=1.0).call(W.ConsumeRequest(TopicPartition(TOPIC, p)))
        except (OSError, W.WireError):
            return None
        return resp if resp.error == NONE else None

    def serving_leader(self, p: int) -> bool:
        li = self.state(p)
        return (li is not None and li.leader in self.live() and self.consume(p, li.leader) is not None
                and li.leader in self.registered())

    def wait_for_leaders(self, timeout: float = 30.0) -> float:
        """Every partition with a live ISR member has a live leader serving reads."""
        def ok():
            for p in range(self.partitions):
                li = self.state(p)
                if li is None:
                    return False
                if not set(li.isr) & self.live() and li.leader == NO_LEADER:
                    continue
                if not self.serving_leader(p):
                    return False
            return True
        return self.wait(ok, timeout, "a serving leader for every partition with a live ISR member")

    def cached_leader(self, b: int, p: int) -> int | None:
        """What broker ``b``'s MetadataCache names as the leader of ``p`` (None: no answer)."""
        try:
            resp = W.Connection(self.ports[b], timeout=1.0).call(W.MetadataRequest(TopicPartition(TOPIC, p)))
        except (OSError, W.WireError):
            return None
        return resp.leader

    def wait_for_metadata(self, timeout: float = 30.0) -> float:
        """Every live registered broker's MetadataCache names the leader ZooKeeper names
        (the controller's UpdateMetadata requests reached them all)."""
        def ok():
            live = self.live() & self.registered()
            for p in range(self.partitions):
                want = self.leader_of(p)
                if any(self.cached_leader(b, p) != want for b in live):
                    return False
            return True
        return self.wait(ok, timeout, "every live broker's metadata cache to name the leader ZooKeeper names")

    def wait_for_full_isr(self, timeout: float = 30.0) -> float:
        def ok():
            live = self.live()
            for p in range(self.partitions):
                li = self.state(p)
                if li is None or set(self.assignment(p)) & live - set(li.isr):
                    return False
            return True
        return self.wait(ok, timeout, "every live replica back in its ISR")

    @contextlib.contextmanager
    def producing(self):
        prod = Producer(self, range(self.partitions))
        prod.thread.start()
        self.producer = prod
        try:
            yield prod
        finally:
            prod.stop.set()
            prod.thread.join(15)

    # -- the checks ---------------------------------------------------------------------------------
    def state_change_logs(self) -> dict[int, Path]:
        return {b: self.dir / f"broker-{b}" / "state-change.log" for b in range(self.n)}

    def check(self, acknowledged) -> dict:
        """The five checks of a fault test; raises ClusterError naming the first failure."""
        report = {"acknowledged": len(acknowledged)}
        # 1. every state-change log parses
        entries = []
        for b, path in self.state_change_logs().items():
            if path.exists():
                entries += parse_log(path.read_text(), b, str(path))
        report["log_lines"] = len(entries)
        # 2. at most one controller per controller epoch
        by_epoch: dict[int, set] = {}
        for e in entries:
            if e.controller is not None and e.epoch >= 0:
                by_epoch.setdefault(e.epoch, set()).add(e.controller)
        two = {ep: sorted(cs) for ep, cs in by_epoch.items() if len(cs) > 1}
        if two:
            raise ClusterError(f"two controllers acted in one controller epoch: {two}")
        if by_epoch and max(by_epoch) > self.controller_epoch():
            raise ClusterError(f"a controller acted in epoch {max(by_epoch)}, beyond /controller_epoch "
                               f"{self.controller_epoch()}")
        report["controller_epochs"] = len(by_epoch)
        # 3. leaders recovered
        report["recovery_seconds"] = round(self.wait_for_leaders(), 2)
        # 4. the metadata caches caught up
        report["metadata_seconds"] = round(self.wait_for_metadata(), 2)
        # 5. no acknowledged record lost
        lost = []
        for p in range(self.partitions):
            mine = [(o, e) for q, o, e in acknowledged if q == p]
            if not mine:
                continue
            resp = None
            for _ in range(100):
                resp = self.consume(p)
                if resp is not None and resp.high_watermark > max(o for o, _ in mine):
                    break
                time.sleep(0.05)
            records = resp.records if resp is not None else ()
            lost += [(p, o, e) for o, e in mine if o >= len(records) or records[o] != e]
        report["lost"] = len(lost)
        if lost:
            raise ClusterError(f"{len(lost)} acknowledged acks=all records lost, first (partition, offset, "
                               f"epoch) {lost[:5]} (logs in {self.dir})")
        return report
