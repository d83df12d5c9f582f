"""The inter-broker requests the controller and the brokers exchange, and the
effects handlers return.

Kafka batches the partitions of one LeaderAndIsr / StopReplica request per broker
(``ControllerBrokerRequestBatch``); a broker applies a batch partition by partition
after one controller-epoch check for the whole request.  Here a request carries one
partition, so the driver can deliver them in any order, as the model does (its
``DeliverLeaderAndIsr`` is one partition's request).
"""

from __future__ import annotations

from typing import NamedTuple

from impl.zkclient import TopicPartition


class LeaderAndIsrRequest(NamedTuple):
    controller_id: int
    controller_epoch: int
    topic_partition: TopicPartition
    leader: int
    leader_epoch: int
    isr: tuple
    zk_version: int
    replicas: tuple


class StopReplicaRequest(NamedTuple):
    controller_id: int
    controller_epoch: int
    topic_partition: TopicPartition
    delete_partition: bool = True


class UpdateMetadataRequest(NamedTuple):
    """One partition's leadership for the broker's ``MetadataCache`` (sent to every
    live broker with each LeaderAndIsr batch, on failover, broker startup and ISR
    changes).  Kafka's carries the ISR, the znode version, the replicas and the live
    brokers as well; the producers' routing reads only the leader."""

    controller_id: int
    controller_epoch: int
    topic_partition: TopicPartition
    leader: int
    leader_epoch: int


class StopReplicaResponse(NamedTuple):
    broker_id: int
    controller_epoch: int
    topic_partition: TopicPartition
    error: str           # NONE | STALE_CONTROLLER_EPOCH


class Send(NamedTuple):
    """Effect: put ``request`` in flight to broker ``destination``."""

    destination: int
    request: object


class Respond(NamedTuple):
    """Effect: a response to the controller broker ``destination``."""

    destination: int
    response: object
