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
    # the controller epoch of the partition's state as the controller cached it (Kafka's
    # PartitionState.controllerEpoch), not the sender's: the leader writes it with its ISR changes
    partition_controller_epoch: int


class StopReplicaRequest(NamedTuple):
    controller_id: int
    controller_epoch: int
    topic_partition: TopicPartition
    delete_partition: bool = True


class UpdateMetadataRequest(NamedTuple):
    """One partition's leadership and the live brokers for the broker's
    ``MetadataCache`` (sent to every live broker with each LeaderAndIsr batch, on
    failover, broker startup and failure, and ISR changes).  Kafka's carries the ISR,
    the znode version and the replicas as well; the producers' routing and
    ``makeFollowers`` read only the leader and the live brokers.  Leader epoch -1: no
    state for the partition yet, only the live brokers.  ``ahead``: sent on its own
    (``sendUpdateMetadataRequest``) before the event's LeaderAndIsr requests."""

    controller_id: int
    controller_epoch: int
    topic_partition: TopicPartition
    leader: int
    leader_epoch: int
    live_brokers: tuple = ()
    ahead: bool = False


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
