"""KafkaServer: one broker process, with its ZooKeeper client, its ReplicaManager and
its (possibly dormant) KafkaController.

A process holds memory only; what is on disk (the logs, their HW checkpoints, the
``state-change.log``) belongs to the broker's directory and is handed to the process
when it starts.  A crash throws the process away; a restart builds a new one.
"""

from __future__ import annotations

from impl.config import BrokerConfig
from impl.controller import Controller
from impl.replica_manager import ReplicaManager
from impl.statechange import StateChangeLogger
from impl.zkclient import KafkaZkClient


class BrokerDisk:
    """What survives a process: the log directory and the state-change log file."""

    def __init__(self, broker_id: int, directory=None) -> None:
        self.logs: dict = {}
        self.state_log = StateChangeLogger(broker_id, directory)


class KafkaServer:
    def __init__(self, broker_id: int, config: BrokerConfig, store, disk: BrokerDisk, clock) -> None:
        self.broker_id = broker_id
        self.config = config
        self.disk = disk
        self.zk = KafkaZkClient(store)
        self.replica_manager = ReplicaManager(broker_id, config, disk.logs, self.zk, disk.state_log, clock)
        self.controller = Controller(broker_id, config, self.zk, disk.state_log, clock)
        self.broker_epoch: int | None = None

    def startup(self) -> int:
        """Register /brokers/ids/<id>; returns the broker epoch."""
        self.broker_epoch = self.zk.register_broker(self.broker_id)
        return self.broker_epoch

    def on_session_expired(self) -> None:
        """The ZooKeeper client saw its session expire and opened a new one.  The broker
        is not registered again until it runs its registration (``startup`` again)."""
        self.zk.reconnect()

    def poll_watches(self) -> None:
        for ev in self.zk.store.poll_events(self.zk.session):
            self.controller.on_watch(ev)

    def shutdown(self) -> None:
        self.zk.close()
