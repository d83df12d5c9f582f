"""KafkaZkClient: Kafka's znodes and their JSON encodings on top of a CoordinationStore.

The layout is Kafka 2.x's (protocol reference §1):

    /controller                                  ephemeral {"version":1,"brokerid":B,"timestamp":...}
    /controller_epoch                            "E" (its znode version fences controller writes, KAFKA-6082)
    /brokers/ids/<B>                             ephemeral registration; its czxid is the broker epoch (KIP-380)
    /brokers/topics/<T>                          {"version":1,"partitions":{"0":[0,1],...}}
    /brokers/topics/<T>/partitions/<P>/state     {"controller_epoch","leader","version":1,"leader_epoch","isr"}
    /config/topics/<T>                           per-topic overrides (unclean.leader.election.enable, min.insync.replicas)
    /admin/delete_topics/<T>                     a deletion request
    /admin/preferred_replica_election            a preferred-election request
    /isr_change_notification/isr_change_<seq>    a leader changed an ISR

Every method runs in the client's current session.  Kafka's ``ZooKeeperClient``
re-establishes a session as soon as the old one expires; ``reconnect`` is that.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from impl import zk as Z


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class LeaderAndIsr(NamedTuple):
    """The partition state znode's content and its version (Kafka's LeaderIsrAndControllerEpoch)."""

    leader: int
    leader_epoch: int
    isr: tuple
    controller_epoch: int
    zk_version: int

    def __str__(self) -> str:
        return (f"(Leader:{self.leader},ISR:{','.join(map(str, self.isr))},LeaderEpoch:{self.leader_epoch},"
                f"ControllerEpoch:{self.controller_epoch},ZkVersion:{self.zk_version})")


NO_LEADER = -1


class ControllerMovedError(Exception):
    """A controller write failed its /controller_epoch check: another controller was elected."""


def _enc(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _dec(data: bytes):
    return json.loads(data.decode()) if data else None


def state_path(tp: TopicPartition) -> str:
    return f"/brokers/topics/{tp.topic}/partitions/{tp.partition}/state"


def state_data(leader: int, leader_epoch: int, isr, controller_epoch: int) -> bytes:
    return _enc({"controller_epoch": controller_epoch, "leader": leader, "version": 1,
                 "leader_epoch": leader_epoch, "isr": list(isr)})


PERSISTENT_PATHS = ("/brokers", "/brokers/ids", "/brokers/topics", "/admin", "/admin/delete_topics",
                    "/config", "/config/topics", "/isr_change_notification")


class KafkaZkClient:
    def __init__(self, store: Z.CoordinationStore, session: int | None = None) -> None:
        self.store = store
        self.session = store.open_session() if session is None else session

    # -- sessions ------------------------------------------------------------------------
    def reconnect(self) -> None:
        """ZooKeeperClient.reinitialize: a new session after the old one expired.  Its
        ephemeral znodes and watches went with the old session."""
        self.session = self.store.open_session()

    def close(self) -> None:
        self.store.close_session(self.session)

    def ensure_paths(self) -> None:
        for p in PERSISTENT_PATHS:
            try:
                self.store.create(self.session, p)
            except Z.NodeExistsError:
                pass

    # -- brokers -----------------------------------------------------------------------
    def register_broker(self, broker_id: int) -> int:
        """Create the ephemeral /brokers/ids/<id>; returns the broker epoch (its czxid)."""
        path = f"/brokers/ids/{broker_id}"
        self.store.create(self.session, path, _enc({"version": 4, "host": f"broker-{broker_id}", "port": 9092,
                                                    "jmx_port": -1}), ephemeral=True)
        return self.store.exists(self.session, path).czxid

    def broker_epoch(self, broker_id: int) -> int | None:
        st = self.store.exists(self.session, f"/brokers/ids/{broker_id}")
        return st.czxid if st else None

    def is_registered(self, broker_id: int) -> bool:
        st = self.store.exists(self.session, f"/brokers/ids/{broker_id}")
        return st is not None and st.ephemeral_owner == self.session

    def get_all_broker_and_epochs(self, watch: bool = False) -> dict[int, int]:
        ids = self.store.get_children(self.session, "/brokers/ids", watch=watch)
        out = {}
        for i in ids:
            st = self.store.exists(self.session, f"/brokers/ids/{i}")
            if st is not None:
                out[int(i)] = st.czxid
        return out

    # -- controller --------------------------------------------------------------------
    def get_controller_id(self, watch: bool = False) -> int:
        try:
            data, _ = self.store.get_data(self.session, "/controller", watch=watch)
        except Z.NoNodeError:
            if watch:
                self.store.exists(self.session, "/controller", watch=True)
            return NO_LEADER
        return _dec(data)["brokerid"]

    def delete_controller(self) -> None:
        """An operator's ``rmr /controller``: the znode goes, whoever's session owns it."""
        try:
            self.store.delete(self.session, "/controller")
        except Z.NoNodeError:
            pass

    def controller_owner(self) -> int | None:
        st = self.store.exists(self.session, "/controller")
        return st.ephemeral_owner if st else None

    def get_controller_epoch(self) -> tuple[int, int]:
        """(epoch, znode version); (0, -1) before the first controller."""
        try:
            data, st = self.store.get_data(self.session, "/controller_epoch")
        except Z.NoNodeError:
            return 0, -1
        return int(data.decode()), st.version

    def register_controller_and_increment_controller_epoch(self, broker_id: int) -> tuple[int, int]:
        """Kafka 2.2+: create /controller and bump /controller_epoch in one transaction,
        conditional on the epoch version just read.  Returns (epoch, epoch zk version)."""
        epoch, version = self.get_controller_epoch()
        if version < 0:
            try:
                self.store.create(self.session, "/controller_epoch", b"0")
            except Z.NodeExistsError:
                pass
            epoch, version = self.get_controller_epoch()
        self.store.multi(self.session, [
            Z.Create("/controller", _enc({"version": 1, "brokerid": broker_id, "timestamp": "0"}), ephemeral=True),
            Z.SetData("/controller_epoch", str(epoch + 1).encode(), version),
        ])
        return epoch + 1, version + 1

    # -- topics ------------------------------------------------------------------------
    def create_topic(self, topic: str, assignment: dict[int, tuple], config: dict[str, str]) -> None:
        self.store.multi(self.session, [
            Z.Create(f"/config/topics/{topic}", _enc({"version": 1, "config": dict(config)})),
            Z.Create(f"/brokers/topics/{topic}",
                     _enc({"version": 1, "partitions": {str(p): list(r) for p, r in assignment.items()}})),
        ])

    def get_all_topics(self, watch: bool = False) -> list[str]:
        return self.store.get_children(self.session, "/brokers/topics", watch=watch)

    def topic_exists(self, topic: str) -> bool:
        return self.store.exists(self.session, f"/brokers/topics/{topic}") is not None

    def get_assignment(self, topic: str) -> dict[int, tuple]:
        data, _ = self.store.get_data(self.session, f"/brokers/topics/{topic}")
        return {int(p): tuple(r) for p, r in _dec(data)["partitions"].items()}

    def get_topic_config(self, topic: str) -> dict[str, str]:
        try:
            data, _ = self.store.get_data(self.session, f"/config/topics/{topic}")
        except Z.NoNodeError:
            return {}
        return dict(_dec(data)["config"])

    def get_partition_state(self, tp: TopicPartition) -> LeaderAndIsr | None:
        try:
            data, st = self.store.get_data(self.session, state_path(tp))
        except Z.NoNodeError:
            return None
        d = _dec(data)
        return LeaderAndIsr(d["leader"], d["leader_epoch"], tuple(d["isr"]), d["controller_epoch"], st.version)

    # -- conditional partition-state writes ----------------------------------------------
    def write_partition_state(self, tp: TopicPartition, leader: int, leader_epoch: int, isr, controller_epoch: int,
                              expected_version: int, epoch_zk_version: int | None) -> LeaderAndIsr:
        """Create (expected_version == -1) or conditionally update the state znode.  With
        ``epoch_zk_version`` (KAFKA-6082), the write is a transaction that also checks
        /controller_epoch still has that version: ControllerMovedError if not."""
        data = state_data(leader, leader_epoch, isr, controller_epoch)
        path = state_path(tp)
        if expected_version < 0:
            ops = [Z.Create(f"/brokers/topics/{tp.topic}/partitions"), Z.Create(f"/brokers/topics/{tp.topic}/partitions/{tp.partition}"),
                   Z.Create(path, data)]
            ops = [op for op in ops[:2] if self.store.exists(self.session, op.path) is None] + ops[2:]
        else:
            ops = [Z.SetData(path, data, expected_version)]
        self._controller_multi(ops, epoch_zk_version)
        st = self.store.exists(self.session, path)
        return LeaderAndIsr(leader, leader_epoch, tuple(isr), controller_epoch, st.version)

    def _controller_multi(self, ops: list, epoch_zk_version: int | None) -> list:
        if epoch_zk_version is None:
            return self.store.multi(self.session, ops)
        try:
            return self.store.multi(self.session, [Z.Check("/controller_epoch", epoch_zk_version)] + ops)
        except Z.BadVersionError:
            if self.get_controller_epoch()[1] != epoch_zk_version:
                raise ControllerMovedError("/controller_epoch moved") from None
            raise

    def update_isr(self, tp: TopicPartition, leader: int, leader_epoch: int, isr, controller_epoch: int,
                   expected_version: int) -> int | None:
        """The leader's ISR write (Partition.updateIsr): conditional on the version it holds.
        Returns the new version, or None if the znode moved on (the leader then keeps its
        ISR and waits for the controller's next LeaderAndIsr)."""
        try:
            st = self.store.set_data(self.session, state_path(tp), state_data(leader, leader_epoch, isr, controller_epoch),
                                     version=expected_version)
        except (Z.BadVersionError, Z.NoNodeError):
            return None
        return st.version

    def isr_write_would_succeed(self, tp: TopicPartition, expected_version: int) -> bool:
        """Would :meth:`update_isr` with ``expected_version`` go through?  Asked of
        ZooKeeper with a ``check`` op (the conditional write's own version check, which
        writes nothing), so that a driver asking it runs the BadVersion refusal."""
        try:
            self.store.multi(self.session, [Z.Check(state_path(tp), expected_version)])
        except (Z.BadVersionError, Z.NoNodeError):
            return False
        return True

    def partition_state_version(self, tp: TopicPartition) -> int:
        st = self.store.exists(self.session, state_path(tp))
        return st.version if st else -1

    # -- ISR change notifications ------------------------------------------------------------
    def propagate_isr_change(self, tp: TopicPartition) -> None:
        self.store.create(self.session, "/isr_change_notification/isr_change_",
                          _enc({"version": 1, "partitions": [{"topic": tp.topic, "partition": tp.partition}]}),
                          sequential=True)

    def get_isr_change_notifications(self, watch: bool = False) -> dict[str, list[TopicPartition]]:
        out = {}
        for child in self.store.get_children(self.session, "/isr_change_notification", watch=watch):
            try:
                data, _ = self.store.get_data(self.session, f"/isr_change_notification/{child}")
            except Z.NoNodeError:
                continue
            out[child] = [TopicPartition(x["topic"], x["partition"]) for x in _dec(data)["partitions"]]
        return out

    def delete_isr_change_notifications(self, names) -> None:
        for n in names:
            try:
                self.store.delete(self.session, f"/isr_change_notification/{n}")
            except Z.NoNodeError:
                pass

    # -- topic deletion ------------------------------------------------------------------
    def request_topic_deletion(self, topic: str) -> None:
        self.store.create(self.session, f"/admin/delete_topics/{topic}")

    def get_topic_deletions(self, watch: bool = False) -> list[str]:
        return self.store.get_children(self.session, "/admin/delete_topics", watch=watch)

    def delete_topic_znodes(self, topic: str, partitions, epoch_zk_version: int | None) -> None:
        """The end of a topic deletion: the state znodes, the topic, its config and the
        deletion request go in one transaction (fenced like every controller write)."""
        ops = []
        base = f"/brokers/topics/{topic}"
        if self.store.exists(self.session, f"{base}/partitions"):
            for p in partitions:
                ppath = f"{base}/partitions/{p}"
                if self.store.exists(self.session, ppath):
                    if self.store.exists(self.session, f"{ppath}/state"):
                        ops.append(Z.Delete(f"{ppath}/state"))
                    ops.append(Z.Delete(ppath))
            ops.append(Z.Delete(f"{base}/partitions"))
        ops.append(Z.Delete(base))
        for extra in (f"/config/topics/{topic}", f"/admin/delete_topics/{topic}"):
            if self.store.exists(self.session, extra):
                ops.append(Z.Delete(extra))
        self._controller_multi(ops, epoch_zk_version)

    # -- preferred replica election (admin) ----------------------------------------------------
    def create_preferred_replica_election(self, partitions) -> None:
        self.store.create(self.session, "/admin/preferred_replica_election",
                          _enc({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}))

    def get_preferred_replica_election(self) -> list[TopicPartition] | None:
        try:
            data, _ = self.store.get_data(self.session, "/admin/preferred_replica_election")
        except Z.NoNodeError:
            return None
        return [TopicPartition(x["topic"], x["partition"]) for x in _dec(data)["partitions"]]

    def delete_preferred_replica_election(self) -> None:
        try:
            self.store.delete(self.session, "/admin/preferred_replica_election")
        except Z.NoNodeError:
            pass


# -- partition reassignment (/admin/reassign_partitions) -------------------------------------------
def _reassign_data(entries: dict) -> bytes:
    return _enc({"version": 1, "partitions": [{"topic": tp.topic, "partition": tp.partition, "replicas": list(r)}
                                              for tp, r in sorted(entries.items())]})


def get_partition_reassignment(zk: KafkaZkClient, watch: bool = False) -> dict:
    """tp -> RAR of every pending reassignment ({} when there is none)."""
    try:
        data, _ = zk.store.get_data(zk.session, "/admin/reassign_partitions", watch=watch)
    except Z.NoNodeError:
        if watch:
            zk.store.exists(zk.session, "/admin/reassign_partitions", watch=True)
        return {}
    return {TopicPartition(x["topic"], x["partition"]): tuple(x["replicas"]) for x in _dec(data)["partitions"]}


def create_partition_reassignment(zk: KafkaZkClient, entries: dict) -> None:
    zk.store.create(zk.session, "/admin/reassign_partitions", _reassign_data(entries))


def remove_partition_reassignment(zk: KafkaZkClient, tp: TopicPartition, epoch_zk_version: int | None) -> None:
    """Take ``tp`` out of /admin/reassign_partitions; the znode goes with its last entry."""
    entries = get_partition_reassignment(zk)
    entries.pop(tp, None)
    if entries:
        op = Z.SetData("/admin/reassign_partitions", _reassign_data(entries))
    else:
        op = Z.Delete("/admin/reassign_partitions")
    zk._controller_multi([op], epoch_zk_version)


def set_assignment(zk: KafkaZkClient, tp: TopicPartition, replicas: tuple, epoch_zk_version: int | None) -> None:
    """Rewrite one partition's AR in /brokers/topics/<t> (reassignment steps 1 and 10)."""
    assignment = zk.get_assignment(tp.topic)
    assignment[tp.partition] = tuple(replicas)
    data = _enc({"version": 1, "partitions": {str(p): list(r) for p, r in sorted(assignment.items())}})
    zk._controller_multi([Z.SetData(f"/brokers/topics/{tp.topic}", data)], epoch_zk_version)
