"""Admin operations of the seeds' tools, as a small Python API over a running cluster.

- topics (``kafka-topics``): create with a per-topic ``unclean.leader.election.enable``
  and ``min.insync.replicas``, describe, delete (``/admin/delete_topics``, acted on by
  the controller when ``delete.topic.enable``), alter a topic's configuration;
- preferred replica election (``kafka-preferred-replica-election``): writes
  ``/admin/preferred_replica_election``, which the active controller carries out;
- replica verification (``kafka-replica-verification``): fetches every replica's log
  and says whether the replicas agree below the leader's HW and who is in sync.

- partition reassignment (``kafka-reassign-partitions``): generate, execute
  (``/admin/reassign_partitions``, carried out by the controller in its 11 steps), verify.

    >>> from impl.cluster import Cluster
    >>> c = Cluster(3)
    >>> admin = Admin(c)
    >>> admin.create_topic("orders", partitions=2, replication_factor=2, config={"min.insync.replicas": "2"})
    >>> c.settle() > 0
    True
    >>> [(p.partition, p.leader, p.isr) for p in admin.describe_topic("orders").partitions]
    [(0, 0, (0, 1)), (1, 1, (1, 2))]
"""

from __future__ import annotations

import json
from typing import NamedTuple

from impl.zkclient import NO_LEADER, TopicPartition, get_partition_reassignment

TOPIC_CONFIGS = ("unclean.leader.election.enable", "min.insync.replicas")


class AdminError(Exception):
    """A request the tool refuses, with Kafka's error name first."""


class PartitionDescription(NamedTuple):
    partition: int
    leader: int                 # -1: no leader
    replicas: tuple             # AR, preferred replica first
    isr: tuple
    leader_epoch: int
    under_replicated: bool      # ISR smaller than AR
    offline: bool               # the leader is not a live broker


class TopicDescription(NamedTuple):
    name: str
    config: dict
    partitions: list
    marked_for_deletion: bool


class ReplicaVerification(NamedTuple):
    partition: int
    leader: int
    high_watermark: int
    log_end_offsets: dict        # replica -> LEO (None: broker down)
    in_sync: dict                # replica -> its log equals the leader's below the HW
    all_in_sync: bool


class Admin:
    def __init__(self, cluster) -> None:
        self.cluster = cluster
        self.zk = cluster.admin

    # -- topics ------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, replication_factor: int, config: dict | None = None,
                     assignment: dict | None = None) -> None:
        """Kafka's AdminUtils assignment without the random start: replica i of partition p
        is broker (p + i) mod n, so preferred replicas spread over the brokers."""
        config = dict(config or {})
        bad = sorted(set(config) - set(TOPIC_CONFIGS))
        if bad:
            raise AdminError(f"INVALID_CONFIG: unknown topic config {bad[0]!r}; use one of {', '.join(TOPIC_CONFIGS)}")
        n = self.cluster.brokers
        if not 1 <= replication_factor <= n:
            raise AdminError(f"INVALID_REPLICATION_FACTOR: {replication_factor} with {n} brokers")
        if "min.insync.replicas" in config and not 1 <= int(config["min.insync.replicas"]) <= replication_factor:
            raise AdminError("INVALID_CONFIG: min.insync.replicas must be between 1 and the replication factor")
        if self.zk.topic_exists(name):
            raise AdminError(f"TOPIC_ALREADY_EXISTS: topic {name!r} already exists")
        if assignment is None:
            assignment = {p: tuple((p + i) % n for i in range(replication_factor)) for p in range(partitions)}
        self.cluster.create_topic(name, assignment, {k: str(v).lower() if isinstance(v, bool) else str(v)
                                                     for k, v in config.items()})

    def alter_topic_config(self, name: str, config: dict) -> None:
        self._require(name)
        current = self.zk.get_topic_config(name)
        current.update({k: str(v) for k, v in config.items()})
        self.zk.store.set_data(self.zk.session, f"/config/topics/{name}",
                               json.dumps({"version": 1, "config": current}, sort_keys=True).encode())

    def list_topics(self) -> list[str]:
        return self.zk.get_all_topics()

    def describe_topic(self, name: str) -> TopicDescription:
        self._require(name)
        live = set(self.zk.get_all_broker_and_epochs())
        parts = []
        for p, ar in sorted(self.zk.get_assignment(name).items()):
            li = self.zk.get_partition_state(TopicPartition(name, p))
            leader = li.leader if li else NO_LEADER
            isr = li.isr if li else ()
            parts.append(PartitionDescription(p, leader, ar, isr, li.leader_epoch if li else -1,
                                              len(isr) < len(ar), leader not in live))
        return TopicDescription(name, self.zk.get_topic_config(name), parts,
                                name in self.zk.get_topic_deletions())

    def delete_topic(self, name: str) -> None:
        self._require(name)
        if name in self.zk.get_topic_deletions():
            return                              # already marked for deletion
        self.cluster.delete_topic(name)

    def _require(self, name: str) -> None:
        if not self.zk.topic_exists(name):
            raise AdminError(f"UNKNOWN_TOPIC_OR_PARTITION: topic {name!r} does not exist")

    # -- preferred replica election ---------------------------------------------------------------
    def preferred_replica_election(self, partitions=None) -> None:
        """Ask the controller to move leadership back to the preferred replicas of
        ``partitions`` (every partition of every topic by default)."""
        if partitions is None:
            partitions = [TopicPartition(t, p) for t in self.zk.get_all_topics()
                          for p in sorted(self.zk.get_assignment(t))]
        if self.zk.get_preferred_replica_election() is not None:
            raise AdminError("a preferred replica election is already in progress")
        self.cluster.request_preferred_replica_election([tuple(tp) for tp in partitions])

    # -- partition reassignment (kafka-reassign-partitions) ---------------------------------------
    def generate_reassignment(self, topics, brokers) -> tuple[dict, dict]:
        """--generate: (current, proposed) assignments moving ``topics`` onto ``brokers``,
        each partition's replicas round-robin from a different broker, the replication
        factor kept."""
        brokers = sorted(brokers)
        current, proposed = {}, {}
        for t in topics:
            self._require(t)
            for p, ar in sorted(self.zk.get_assignment(t).items()):
                tp = TopicPartition(t, p)
                current[tp] = ar
                if len(ar) > len(brokers):
                    raise AdminError(f"INVALID_REPLICATION_FACTOR: {tp} has {len(ar)} replicas, only "
                                     f"{len(brokers)} brokers given")
                proposed[tp] = tuple(brokers[(p + i) % len(brokers)] for i in range(len(ar)))
        return current, proposed

    def execute_reassignment(self, assignment: dict) -> None:
        """--execute: write /admin/reassign_partitions; refused while one is in progress."""
        if get_partition_reassignment(self.zk):
            raise AdminError("REASSIGNMENT_IN_PROGRESS: a partition reassignment is already running")
        live = set(self.zk.get_all_broker_and_epochs())
        for tp, rar in assignment.items():
            self._require(tp.topic)
            if len(set(rar)) != len(rar) or not set(rar) <= set(range(self.cluster.brokers)):
                raise AdminError(f"INVALID_REPLICA_ASSIGNMENT: {tp} -> {list(rar)}")
            if not set(rar) & live:
                raise AdminError(f"INVALID_REPLICA_ASSIGNMENT: no broker of {list(rar)} is alive")
        self.cluster.reassign_partitions({TopicPartition(*tp): tuple(r) for tp, r in assignment.items()})

    def verify_reassignment(self, assignment: dict) -> dict:
        """--verify: per partition "completed", "in progress" or "failed" (the AR is not
        the target and nothing is running)."""
        pending = get_partition_reassignment(self.zk)
        out = {}
        for tp, rar in assignment.items():
            tp = TopicPartition(*tp)
            if tp in pending:
                out[tp] = "in progress"
            else:
                out[tp] = "completed" if self.zk.get_assignment(tp.topic).get(tp.partition) == tuple(rar) else "failed"
        return out

    # -- replica verification -------------------------------------------------------------------------
    def verify_replicas(self, name: str) -> list[ReplicaVerification]:
        """For each partition: every replica's LEO, and whether its log holds exactly the
        leader's records below the leader's HW (what ReplicaVerificationTool checks)."""
        self._require(name)
        out = []
        for p, ar in sorted(self.zk.get_assignment(name).items()):
            tp = TopicPartition(name, p)
            li = self.zk.get_partition_state(tp)
            leader = li.leader if li else NO_LEADER
            lserver = self.cluster.servers[leader] if leader != NO_LEADER else None
            if lserver is None:
                out.append(ReplicaVerification(p, leader, -1, {r: None for r in ar}, {r: False for r in ar}, False))
                continue
            llog = lserver.replica_manager.logs.get(tp)     # a read-only tool: it creates no log
            hw = llog.high_watermark_checkpoint if llog else 0
            committed = llog.records[:hw] if llog else []
            leos, in_sync = {}, {}
            for r in ar:
                s = self.cluster.servers[r]
                log = s.replica_manager.logs.get(tp) if s is not None else None
                leos[r] = None if s is None else (log.log_end_offset if log else 0)
                in_sync[r] = s is not None and (log.records if log else [])[:hw] == committed
            out.append(ReplicaVerification(p, leader, hw, leos, in_sync, all(in_sync.values())))
        return out
