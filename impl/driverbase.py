"""What every part of the conformance driver looks up on the running cluster: the
topic it drives, an action's partition, and a broker's running parts.

The driver (``impl.adapter.KafkaImplementation``) is one class made of mixins of one
concept each, as Kafka's ``KafkaController`` is made of its state machines and
managers: the abstraction function (impl/projection.py), the fault injector's budget
(impl/faultbudget.py), the controller's one event thread (impl/eventorder.py), the
controller's request channel (impl/channel.py) and the followers' fetch rounds
(impl/fetchrounds.py).  They share these lookups, which live here, below all of them,
so that none of them imports another.

A broker that is down has no ReplicaManager or controller (``KafkaServer.shutdown``
drops them with the process): each lookup answers None or False for it, which the
callers read as "cannot act" (Kafka's NOT_CONTROLLER, or a request that waits in the
controller's queue until the broker is back).
"""

from __future__ import annotations

from impl.zkclient import TopicPartition

#: the one topic the model has
TOPIC = "t"

#: the model's reassignment actions, each the step of impl/reassignment.py it names
#: (``ReassignmentSteps.reassignment_steps``)
REASSIGN_STEPS = {
    "ReassignExtendAr": "1", "ReassignBumpLeaderEpoch": "2", "ReassignStartNewReplicas": "3",
    "ReassignOnlineReplicas": "5", "ReassignCacheAr": "6", "ReassignElectLeader": "7",
    "ReassignOfflineOldReplicas": "8", "ReassignStartReplicaDeletion": "9a",
    "ReassignReplicaDeletionSuccessful": "9b", "ReassignRemoveReplicas": "9", "ReassignShrinkAr": "10",
    "CompleteReassignment": "11",
}


class ClusterDriver:
    """The base of the driver's mixins.  ``KafkaImplementation.__init__`` sets
    ``cluster`` (``impl.cluster.Cluster``), ``n`` (brokers) and ``partitions``."""

    def _tp(self, act) -> TopicPartition:
        return TopicPartition(TOPIC, act.get("partition"))

    def _running(self, b) -> bool:
        return isinstance(b, int) and 0 <= b < self.n and self.cluster.servers[b] is not None

    def _ctl(self, c):
        return self.cluster.controller(c) if self._running(c) else None

    def _rm(self, b):
        return self.cluster.servers[b].replica_manager if self._running(b) else None

    def _leads(self, b, tp) -> bool:
        rm = self._rm(b)
        return rm is not None and rm.leader_partition(tp) is not None
