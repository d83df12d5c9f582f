"""A broker as an operating-system process: impl/'s sans-IO core behind a TCP shell.

``python -m impl.node --broker-id B --zk HOSTS --dir DIR --ports 0=P0,1=P1,...`` runs
one ``KafkaServer`` (impl/broker.py) on a real ZooKeeper ensemble (``ZooKeeperStore``)
and serves impl/wire.py frames on its port.  The core is unchanged: this module only
carries what the deterministic driver (impl/cluster.py) carries in one process.

- The network: a thread per incoming connection; every call into the core holds one
  lock, so the core runs one event at a time, as Kafka's request handlers and
  controller event thread touch a partition one at a time.
- The controller: whichever broker wins ``/controller``.  The main loop polls the
  ZooKeeper watches and runs the controller's pending work one operation at a time, in
  the order ``Cluster.settle`` uses; ``Send`` effects go to a queue per destination, and
  a sender thread per broker delivers them in order, retrying while the broker is down
  (Kafka's ControllerChannelManager).  A resigned controller's queues are dropped; a
  zombie (its session expired, not yet aware) still sends what it queued.
- The metadata: the controller sends UpdateMetadata with every LeaderAndIsr batch, on
  failover, on a broker's startup and on an ISR change (impl/controller.py), through the
  same queue per destination, so a broker gets them in the order they were sent; the
  broker applies them behind the controller-epoch check (``handle_update_metadata``) and
  answers the clients' MetadataRequest from that cache, never from ZooKeeper.  The
  producer (impl/proccluster.py) finds its leader that way, as a Kafka client does.
- The fetcher: a thread that, for every partition this broker follows, runs the
  OffsetsForLeaderEpoch exchange when truncating, else a fetch, against the leader.
- The leader's timers: a follower of the ISR that has not caught up with the leader's
  log end for ``replica.lag.time.max.ms`` is shrunk out (``maybe_shrink_isr``).  A
  follower that may join is expanded in while the leader answers its fetch
  (``maybe_expand_isr``), as Kafka does, never from a LEO an earlier fetch left.
- DelayedProduce: an acks=all produce is answered once the HW passed the record while
  this broker still leads in the epoch it was written in; otherwise, after the request
  timeout or a leadership change, with an error (the producer then does not count it).
- The disk: the logs and their HW checkpoints go to ``<dir>/broker-<B>/logs.json``
  (written to a temporary file and renamed) after every change and before any reply
  that depends on it, so a ``kill -9`` loses nothing a reply announced; a restart
  with the directory kept reads them back.  ``state-change.log`` is appended as the
  core writes it, each line stamped with the wall clock in microseconds (the brokers
  share one machine, so the logs merge by it).
- A started process serves no request before it has registered (Kafka 2.x's
  ``KafkaServer.startup`` registers before it starts the request handlers): until
  then every connection is closed unread, and the sender, producer or fetcher retries.
- A ZooKeeper session expiry (``SessionExpiredError`` from any call) closes the old
  session and opens a new one (``KafkaServer.on_session_expired``); the main loop then
  registers the broker again, and a controller that lost ``/controller`` resigns.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socketserver
import sys
import threading
import time
import traceback
from collections import deque
from pathlib import Path

from impl import wire as W
from impl import zk as Z
from impl.broken import KINDS, install
from impl.broker import BrokerDisk, KafkaServer
from impl.config import BrokerConfig
from impl.log import Log
from impl.replica_manager import NONE, NOT_LEADER_FOR_PARTITION, FetchRequest, OffsetsForLeaderEpochRequest
from impl.requests import (
    LeaderAndIsrRequest,
    Respond,
    Send,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
)
from impl.zkclient import NO_LEADER, TopicPartition
from impl.zkrecord import RecordingStore
from impl.zkstore import ConnectionLossError, ZooKeeperStore

REQUEST_TIMED_OUT = "REQUEST_TIMED_OUT"
LEADER_NOT_AVAILABLE = "LEADER_NOT_AVAILABLE"


def clock_us() -> int:
    return time.time_ns() // 1000


# -- the disk ----------------------------------------------------------------------------------

def load_logs(path: Path, kafka_2_1: bool = True) -> dict:
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    out = {}
    for item in data:
        log = Log(kafka_2_1)
        for epoch in item["records"]:
            log.append(epoch)
        log.high_watermark_checkpoint = item["hw"]
        out[TopicPartition(item["topic"], item["partition"])] = log
    return out


def save_logs(path: Path, logs: dict) -> None:
    data = [{"topic": tp.topic, "partition": tp.partition, "records": list(log.records),
             "hw": log.high_watermark_checkpoint} for tp, log in sorted(logs.items())]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


# -- the controller's pending work, one operation at a time ---------------------------------------

def next_controller_operation(ctl):
    """The next operation of an active (or zombie) controller, as ``(name, thunk)``:
    the same order as the controller part of ``Cluster._next_operation``."""
    if ctl.ctx is None:
        return None
    steps = ctl.reassignment_steps()
    if ctl.in_reassignment_event():
        step, tp, _leader = steps[0]
        return f"reassign step {step} {tp}", lambda: ctl.reassignment_step(step, tp)
    step = ctl.current_event_step()             # the current event's steps first (Kafka's one event thread)
    if step is not None:
        kind, tp, r = step
        if kind == "elect":
            return f"elect leader {tp}", lambda: ctl.elect_leader(tp)
        return f"offline replica {r} {tp}", lambda: ctl.remove_replica_from_isr(tp, r)
    for b, kind in ctl.broker_changes().items():
        if kind == "failure":
            return f"broker failure {b}", lambda: ctl.on_broker_failure(b)
        return f"broker startup {b}", lambda: ctl.on_broker_startup(b)
    for tp in ctl.isr_changed_partitions():
        return f"isr change {tp}", lambda: ctl.process_isr_change(tp)
    if ctl.preferred_election_requested():
        return "preferred election", ctl.process_preferred_replica_election
    for tp in ctl.reassignments_to_start():
        return f"start reassignment {tp}", lambda: ctl.start_reassignment(tp)
    for step, tp, _leader in steps:
        return f"reassign step {step} {tp}", lambda: ctl.reassignment_step(step, tp)
    for t in ctl.topics_to_start_deleting():
        return f"start deletion {t}", lambda: ctl.start_topic_deletion(t)
    for tp, r in ctl.replicas_to_take_offline():
        return f"offline replica {r} {tp}", lambda: ctl.remove_replica_from_isr(tp, r)
    for tp in sorted(ctl.ctx.assignments):
        if ctl.pending_election(tp):
            return f"elect leader {tp}", lambda: ctl.elect_leader(tp)
    for step, tp, r in ctl.deletion_steps():
        if step == "start":
            return f"start replica deletion {r} {tp}", lambda: ctl.start_replica_deletion(tp, r)
        return f"retry replica deletion {r} {tp}", lambda: ctl.retry_replica_deletion(tp, r)
    for t in ctl.topics_deleted():
        return f"complete deletion {t}", lambda: ctl.complete_topic_deletion(t)
    return None


class BrokerNode:
    def __init__(self, broker_id: int, hosts: str, directory: Path, ports: dict[int, int],
                 config: BrokerConfig, *, lag_max: float = 1.0, request_timeout: float = 5.0,
                 session_timeout: float = 2.0, await_brokers: int = 0) -> None:
        self.broker_id = broker_id
        self.ports = ports
        self.config = config
        self.lag_max = lag_max
        self.request_timeout = request_timeout
        self.dir = Path(directory) / f"broker-{broker_id}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.logs_path = self.dir / "logs.json"
        self.lock = threading.RLock()
        self.stopping = threading.Event()
        self.serving = threading.Event()    # set once this process has registered (KafkaServer.startup)
        self.await_brokers = await_brokers
        self.zk_writes = open(self.dir / "zk-writes.log", "a", buffering=1, encoding="utf-8")
        self.store = RecordingStore(ZooKeeperStore(hosts, session_timeout=session_timeout), self.zk_writes.write)
        self.disk = BrokerDisk(broker_id, directory)
        self.disk.logs.update(load_logs(self.logs_path, self.config.truncation == "kip320"))
        self.server = KafkaServer(broker_id, config, self.store, self.disk, clock_us)
        self.outbox: dict[int, deque] = {b: deque() for b in ports}
        self.outbox_epoch: int | None = None
        self.caught_up: dict[tuple, float] = {}          # (tp, follower) -> when it last reached the leader's LEO
        self.log(f"started, logs {sorted((str(tp), log.log_end_offset) for tp, log in self.disk.logs.items())}")

    # -- diagnostics (stderr; the state-change log is the core's) --------------------------
    def log(self, text: str) -> None:
        print(f"[{clock_us()}] broker {self.broker_id}: {text}", file=sys.stderr, flush=True)

    def persist(self) -> None:
        save_logs(self.logs_path, self.disk.logs)

    # -- ZooKeeper sessions ---------------------------------------------------------------
    def _session_expired(self) -> None:
        old = self.server.zk.session
        self.log(f"ZooKeeper session 0x{old:x} expired: opening a new one")
        self.store.close_session(old)
        while not self.stopping.is_set():
            try:
                self.server.on_session_expired()
                return
            except Z.ZkError as e:
                self.log(f"reconnect failed: {e}")
                time.sleep(0.2)

    def guarded(self, what: str, fn):
        """Run ``fn`` under the core lock; a session expiry reconnects, a connection loss
        or another ZooKeeper error abandons this operation (the loop re-derives it)."""
        with self.lock:
            try:
                return fn()
            except Z.SessionExpiredError:
                self._session_expired()
            except (ConnectionLossError, Z.ZkError) as e:
                self.log(f"{what}: {type(e).__name__}: {e}")
        return None

    # -- the controller channel -------------------------------------------------------------
    def route(self, effects) -> None:
        ctx = self.server.controller.ctx
        epoch = ctx.epoch if ctx is not None else None
        if epoch != self.outbox_epoch:
            for q in self.outbox.values():
                q.clear()
            self.outbox_epoch = epoch
        for e in effects or ():
            if isinstance(e, Send):
                self.outbox[e.destination].append(e.request)
            elif isinstance(e, Respond):
                self.log(f"unexpected Respond effect at the controller: {e}")

    def sender(self, dest: int) -> None:
        conn = W.Connection(self.ports[dest], timeout=1.0)
        while not self.stopping.is_set():
            with self.lock:
                q = self.outbox[dest]
                req = q[0] if q else None
            if req is None:
                time.sleep(0.01)
                continue
            try:
                resp = conn.call(req, timeout=2.0)
            except (OSError, W.WireError):
                time.sleep(0.1)
                continue
            with self.lock:
                if self.outbox[dest] and self.outbox[dest][0] is req:
                    self.outbox[dest].popleft()
                if isinstance(resp, StopReplicaResponse):
                    self.guarded("StopReplica response", lambda r=resp: self.server.controller.handle_stop_replica_response(r))

    # -- the main loop: watches, registration, controller work, leader timers ------------------
    def controller_tick(self) -> None:
        s = self.server
        ctl = s.controller

        def step():
            s.poll_watches()
            if ctl.should_resign():
                self.log(f"resigning as controller of epoch {ctl.ctx.epoch}")
                ctl.resign()
                self.route([])
                return True
            if not s.zk.is_registered(self.broker_id):
                try:
                    epoch = s.startup()
                except Z.NodeExistsError:
                    st = self.store.exists(s.zk.session, f"/brokers/ids/{self.broker_id}")
                    self.log(f"/brokers/ids/{self.broker_id} is still held by session "
                             f"0x{st.ephemeral_owner if st else 0:x} (mine: 0x{s.zk.session:x}); waiting for it to expire")
                    return False
                self.log(f"registered with broker epoch {epoch}")
                self.serving.set()
                return True
            if self.await_brokers and len(s.zk.get_all_broker_and_epochs()) < self.await_brokers \
                    and s.zk.get_controller_epoch()[1] < 0:
                return False                    # the first start: wait until the cluster has formed
            if ctl.can_elect():
                try:
                    effects = ctl.elect()
                except (Z.NodeExistsError, Z.BadVersionError):
                    return True                 # another broker won /controller
                self.log(f"elected controller, epoch {ctl.ctx.epoch}")
                self.route(effects)
                return True
            op = next_controller_operation(ctl)
            if op is None:
                return False
            self.route(op[1]())
            return True

        for _ in range(50):
            if not self.guarded("controller", step):
                return

    def leader_tick(self) -> None:
        def step():
            rm = self.server.replica_manager
            now = time.monotonic()
            for tp in sorted(rm.partitions):
                p = rm.leader_partition(tp)
                if p is None:
                    continue
                for r in p.replicas:
                    if r == self.broker_id:
                        continue
                    self.caught_up.setdefault((tp, r, p.leader_epoch), now)
                    if r in p.isr and now - self.caught_up[(tp, r, p.leader_epoch)] > self.lag_max:
                        if rm.maybe_shrink_isr(tp, r):
                            self.log(f"shrank {r} out of the ISR of {tp}")
                            self.persist()
        self.guarded("leader timers", step)

    def maybe_expand_isr(self, tp, follower: int) -> None:
        """Kafka adds a follower to the ISR while it handles that follower's fetch
        (``Partition.updateReplicaLogReadResult`` calls ``maybeExpandIsr``), so with the
        LEO of a fetch this leader answered in its current leader epoch (2.1 fences one
        from another).  A timer reading the LEO that a fetch of an earlier epoch left (a
        leader re-elected in a new epoch keeps them, ``Partition.makeLeader``) would add a
        follower that has not yet applied the new epoch, which Kafka 2.1 cannot do."""
        rm = self.server.replica_manager
        p = rm.leader_partition(tp)
        if p is not None and follower not in p.isr and rm.maybe_expand_isr(tp, follower):
            self.caught_up[(tp, follower, p.leader_epoch)] = time.monotonic()    # it has just caught up
            self.log(f"expanded the ISR of {tp} with {follower}")

    def main_loop(self) -> None:
        while not self.stopping.is_set():
            self.controller_tick()
            self.leader_tick()
            time.sleep(0.02)

    # -- the fetcher ----------------------------------------------------------------------------
    def fetcher(self) -> None:
        conns: dict[int, W.Connection] = {}
        while not self.stopping.is_set():
            with self.lock:
                rm = self.server.replica_manager
                work = [(tp, st.leader, st.truncating) for tp, st in sorted(rm.fetchers.items())]
            busy = False
            for tp, leader, truncating in work:
                if leader not in self.ports or leader == self.broker_id:
                    continue
                conn = conns.setdefault(leader, W.Connection(self.ports[leader], timeout=0.5))
                with self.lock:
                    st = rm.fetchers.get(tp)
                    if st is None or st.leader != leader:
                        continue
                    req = rm.build_offsets_for_leader_epoch(tp) if st.truncating else rm.build_fetch(tp)
                rounds = 0
                while req is not None and rounds < 64:
                    rounds += 1
                    try:
                        resp = conn.call(req, timeout=1.0)
                    except (OSError, W.WireError):
                        break
                    with self.lock:
                        st = rm.fetchers.get(tp)
                        if st is None or st.leader != leader:
                            break
                        if isinstance(req, FetchRequest):
                            if resp.records:
                                busy = True
                            req = rm.handle_fetch_response(tp, resp)
                        else:
                            req = rm.handle_offsets_for_leader_epoch_response(tp, resp)
                        self.persist()
            if not busy:
                time.sleep(0.01)

    # -- serving requests ----------------------------------------------------------------------
    def handle(self, msg):
        rm = self.server.replica_manager
        if isinstance(msg, LeaderAndIsrRequest):
            with self.lock:
                err = self.guarded("LeaderAndIsr", lambda: rm.handle_leader_and_isr(msg))
                self.persist()
                self.request_log(msg, err)
            return W.LeaderAndIsrResponse(self.broker_id, err or "UNKNOWN")
        if isinstance(msg, UpdateMetadataRequest):
            with self.lock:
                err = rm.handle_update_metadata(msg)
            return W.UpdateMetadataResponse(self.broker_id, err)
        if isinstance(msg, W.MetadataRequest):
            with self.lock:
                leader = rm.metadata_cache.get(msg.topic_partition, NO_LEADER)
                if leader not in rm.alive_brokers:   # MetadataCache: LEADER_NOT_AVAILABLE
                    leader = NO_LEADER
            return W.MetadataResponse(NONE if leader != NO_LEADER else LEADER_NOT_AVAILABLE, leader)
        if isinstance(msg, StopReplicaRequest):
            with self.lock:
                effects = rm.handle_stop_replica(msg)
                self.persist()
            resp = next((e.response for e in effects if isinstance(e, Respond)), None)
            return resp if resp is not None else W.Ack(NONE)
        if isinstance(msg, FetchRequest):
            with self.lock:
                resp = rm.handle_fetch(msg)
                p = rm.leader_partition(msg.topic_partition)
                if resp.error == NONE and p is not None:
                    if msg.fetch_offset >= resp.log_end_offset:
                        self.caught_up[(msg.topic_partition, msg.replica_id, p.leader_epoch)] = time.monotonic()
                    self.guarded("ISR expansion", lambda: self.maybe_expand_isr(msg.topic_partition, msg.replica_id))
                self.persist()
            return resp
        if isinstance(msg, OffsetsForLeaderEpochRequest):
            with self.lock:
                return rm.handle_offsets_for_leader_epoch(msg)
        if isinstance(msg, W.ProduceRequest):
            return self.produce(msg)
        if isinstance(msg, W.ConsumeRequest):
            with self.lock:
                p = rm.leader_partition(msg.topic_partition)
                if p is None:
                    return W.ConsumeResponse(NOT_LEADER_FOR_PARTITION, (), -1, -1)
                log = rm.log(msg.topic_partition)
                hw = log.high_watermark_checkpoint
                return W.ConsumeResponse(NONE, tuple(log.records[:hw]), hw, p.leader_epoch)
        raise W.WireError(f"broker {self.broker_id} does not serve {type(msg).__name__}")

    def request_log(self, req: LeaderAndIsrRequest, err) -> None:
        """What Kafka's broker logs for every partition of a LeaderAndIsr request: who sent
        it, in which controller epoch, what it said, and what came of it (the line trace
        validation reads a broker's view from)."""
        self.disk.state_log.broker(clock_us(), "Handled", f"LeaderAndIsr request from controller {req.controller_id} "
                                   f"epoch {req.controller_epoch} for partition {req.topic_partition} leader "
                                   f"{req.leader} leader epoch {req.leader_epoch} isr {list(req.isr)} zkVersion "
                                   f"{req.zk_version}: {err}")

    def produce(self, req: W.ProduceRequest) -> W.ProduceResponse:
        rm = self.server.replica_manager
        tp = req.topic_partition
        with self.lock:
            p = rm.leader_partition(tp)
            epoch = p.leader_epoch if p else -1
            err, offset = rm.append_records(tp, req.acks)
            self.persist()
        if err != NONE or req.acks != "all":
            return W.ProduceResponse(err, offset, epoch)
        deadline = time.monotonic() + self.request_timeout
        while time.monotonic() < deadline and not self.stopping.is_set():
            with self.lock:
                p = rm.leader_partition(tp)
                log = self.disk.logs.get(tp)
                if p is None or p.leader_epoch != epoch or log is None or len(log.records) <= offset \
                        or log.records[offset] != epoch:
                    return W.ProduceResponse(NOT_LEADER_FOR_PARTITION, offset, epoch)
                if log.high_watermark_checkpoint > offset:
                    return W.ProduceResponse(NONE, offset, epoch)
            time.sleep(0.005)
        return W.ProduceResponse(REQUEST_TIMED_OUT, offset, epoch)

    def serve(self) -> socketserver.ThreadingTCPServer:
        node = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                if not node.serving.is_set():
                    return      # closed unread: the sender, the producer or a fetcher retries
                while not node.stopping.is_set():
                    try:
                        msg = W.recv(self.request)
                    except (OSError, ConnectionError, W.WireError):
                        return
                    try:
                        resp = node.handle(msg)
                    except W.WireError as e:
                        node.log(f"bad request: {e}")
                        return
                    try:
                        W.send(self.request, resp)
                    except OSError:
                        return

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        srv = socketserver.ThreadingTCPServer(("127.0.0.1", self.ports[self.broker_id]), Handler)
        srv.daemon_threads = True
        return srv

    def run(self) -> None:
        srv = self.serve()
        threads = [threading.Thread(target=srv.serve_forever, daemon=True),
                   threading.Thread(target=self.fetcher, daemon=True)]
        threads += [threading.Thread(target=self.sender, args=(b,), daemon=True) for b in self.ports]
        for t in threads:
            t.start()
        try:
            self.main_loop()
        finally:
            srv.shutdown()


def _ports(text: str) -> dict[int, int]:
    out = {}
    for item in text.split(","):
        b, _, p = item.partition("=")
        out[int(b)] = int(p)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m impl.node", description="one broker of the reference cluster")
    ap.add_argument("--broker-id", type=int, required=True)
    ap.add_argument("--zk", required=True, help="ZooKeeper connect string, with a chroot")
    ap.add_argument("--dir", required=True, help="the cluster's directory (the broker uses broker-<id>/ in it)")
    ap.add_argument("--ports", required=True, help="every broker's port: 0=P0,1=P1,...")
    ap.add_argument("--min-insync-replicas", type=int, default=2)
    ap.add_argument("--lag-max", type=float, default=1.0, help="replica.lag.time.max.ms, in seconds")
    ap.add_argument("--session-timeout", type=float, default=2.0)
    ap.add_argument("--await-brokers", type=int, default=0,
                    help="on the cluster's first start, elect no controller before this many brokers registered")
    ap.add_argument("--broken", choices=KINDS, action="append", default=[],
                    help="KNOWN-BAD: run with this bug (impl/broken.py), for trace validation to catch")
    args = ap.parse_args(argv)
    config = BrokerConfig(min_insync_replicas=args.min_insync_replicas, send_update_metadata=True,
                          controller_epoch_check="controller-epoch-check" not in args.broken)
    for kind in args.broken:
        install(kind)
    node = BrokerNode(args.broker_id, args.zk, Path(args.dir), _ports(args.ports), config,
                      lag_max=args.lag_max, session_timeout=args.session_timeout, await_brokers=args.await_brokers)
    signal.signal(signal.SIGTERM, lambda *_: node.stopping.set())
    try:
        node.run()
    except Exception:  # noqa: BLE001 - a crash of the process: say why on stderr
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
