"""One broker process's core (impl/node.py ``BrokerNode``) driven step by step on the real
ZooKeeper ensemble, where the fault tests' timing would only sometimes reach a path.

The broker runs in this process, without its threads: the test ticks its controller,
hands it its own requests (what its sender thread does for itself), and sends it
fetches as a follower's fetcher would.  The other brokers are registrations made from
here; nothing runs behind them, so what the controller sends them is dropped.
"""

from __future__ import annotations

import threading
import time

import pytest

from impl.config import BrokerConfig
from impl.node import BrokerNode
from impl.replica_manager import NONE, FetchRequest
from impl.requests import TopicPartition
from impl.zkclient import KafkaZkClient
from impl.zkensemble import free_ports
from impl.zkstore import ZooKeeperStore
from tests.zk_support import zk_ensemble, zk_hosts  # noqa: F401 - fixtures

pytestmark = pytest.mark.cluster

TP = TopicPartition("t", 0)


def _deliver(node: BrokerNode) -> None:
    """What the sender threads would do: the node's requests to itself are handled, the
    ones to brokers nothing runs behind are dropped."""
    for b, q in node.outbox.items():
        while q:
            req = q.popleft()
            if b == node.broker_id:
                node.handle(req)


def _until(node: BrokerNode, pred, what: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        node.controller_tick()
        _deliver(node)
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}; rerun: "
                         f".venv/bin/python -m pytest -m cluster tests/test_cluster_node.py")


def test_a_leader_adds_a_follower_to_the_isr_only_on_a_fetch_in_its_own_epoch(zk_hosts, tmp_path):
    """Kafka adds a follower to the ISR while it handles the follower's fetch
    (``Partition.updateReplicaLogReadResult``).  A leader the controller re-elects in a
    new epoch after removing the follower from the ISR keeps the LEO the follower's
    last fetch left (``Partition.makeLeader``, same leader); the follower, which has
    not applied the new epoch yet, fetches with the old one and 2.1 fences it.  So the
    follower joins only with a fetch of the new epoch.  The process cluster once added
    it from the remembered LEO on a timer, a write the model (and Kafka 2.1) cannot
    make: trace validation rejected a SIGSTOPped-ZooKeeper run at that ISR change."""
    admin = KafkaZkClient(ZooKeeperStore(zk_hosts))
    admin.ensure_paths()
    admin.create_topic("t", {0: (0, 1, 2)}, {"min.insync.replicas": "1", "unclean.leader.election.enable": "false"})
    other = KafkaZkClient(ZooKeeperStore(zk_hosts))
    other.register_broker(1)                       # broker 1, registered from here; nothing fetches behind it
    node = BrokerNode(0, zk_hosts, tmp_path, {0: 1, 1: 2, 2: 3}, BrokerConfig(inter_broker_protocol_version="2.1"))
    rm = node.server.replica_manager
    try:
        _until(node, lambda: rm.leader_partition(TP) is not None, "broker 0 to lead t-0")
        p = rm.leader_partition(TP)
        assert (p.leader_epoch, p.isr) == (0, (0, 1))
        assert node.handle(FetchRequest(1, TP, 0, 0)).error == NONE
        node.leader_tick()
        assert rm.leader_partition(TP).isr == (0, 1)

        other.close()                                # broker 1's session ends: the controller removes it
        _until(node, lambda: rm.leader_partition(TP).leader_epoch == 1, "the controller's OfflineReplica")
        p = rm.leader_partition(TP)
        assert p.isr == (0,) and p.remote_leos.get(1) == 0    # the LEO of the epoch-0 fetch, kept
        for _ in range(3):
            node.leader_tick()                       # the timers add nobody
        assert rm.leader_partition(TP).isr == (0,)
        resp = node.handle(FetchRequest(1, TP, 0, 0))     # the follower has not applied epoch 1
        assert resp.error == "FENCED_LEADER_EPOCH" and rm.leader_partition(TP).isr == (0,)
        assert node.handle(FetchRequest(1, TP, 0, 1)).error == NONE
        assert rm.leader_partition(TP).isr == (0, 1)     # the fetch of epoch 1 adds it, as Kafka's does
        assert admin.get_partition_state(TP).isr == (0, 1)
    finally:
        node.server.shutdown()
        node.zk_writes.close()
        admin.close()


def test_a_started_broker_serves_no_request_before_it_has_registered(zk_hosts, tmp_path):
    """Kafka 2.x's ``KafkaServer.startup`` registers ``/brokers/ids/<id>`` before it starts
    the request handlers, so a restarted broker handles what a controller queued for it
    (while it had not noticed the kill) only once it is registered again; the model's
    RestartBroker is that registration.  The process cluster once served requests while
    it waited for its old registration's session to expire, and trace validation rejected
    the reassignment fault test's run at such a LeaderAndIsr."""
    from impl import wire as W
    from impl.requests import UpdateMetadataRequest
    from impl.wire import Connection

    port = free_ports(1)[0]
    admin = KafkaZkClient(ZooKeeperStore(zk_hosts))
    admin.ensure_paths()
    held = KafkaZkClient(ZooKeeperStore(zk_hosts))
    held.register_broker(0)                        # the killed process's registration, its session alive
    node = BrokerNode(0, zk_hosts, tmp_path, {0: port}, BrokerConfig())
    srv = node.serve()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    conn = Connection(port, timeout=1.0)
    update = UpdateMetadataRequest(1, 1, TP, 1, 0, (0,), True)
    try:
        node.controller_tick()                     # its registration is refused: /brokers/ids/0 is held
        assert not node.server.zk.is_registered(0)
        with pytest.raises((OSError, W.WireError)):
            conn.call(update)
        held.close()                               # the old session ends
        deadline = time.monotonic() + 30
        while not node.server.zk.is_registered(0) and time.monotonic() < deadline:
            node.controller_tick()
            time.sleep(0.02)
        assert node.server.zk.is_registered(0)
        assert conn.call(update) == W.UpdateMetadataResponse(0, NONE)
    finally:
        conn.close()
        srv.shutdown()
        node.server.shutdown()
        node.zk_writes.close()
        admin.close()
