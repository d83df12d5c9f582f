"""The controller's request channel in the conformance driver (Kafka's
``ControllerChannelManager``): which queued request a Deliver* action names, and
whether it may be delivered now.

Kafka keeps one FIFO queue per broker and a batch sends LeaderAndIsr before
UpdateMetadata (``ControllerBrokerRequestBatch.sendRequestsToBrokers``); the model
keeps the requests in flight as a set and orders only what the FIFO would
(spec/metadata.py, spec/broker.py).  The driver queues each request on
``Cluster.in_flight`` and delivers the one the action names, once nothing its
controller sent before it for that partition is still ahead of it.
"""

from __future__ import annotations

from impl.driverbase import ClusterDriver
from impl.requests import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest


class ControllerChannel(ClusterDriver):
    """Mixed into the driver: matching a Deliver* action to its request, and the
    FIFO orders.  ``KafkaImplementation.__init__`` sets ``metadata_cache`` and
    ``reassign_targets``."""

    def _find_request(self, act):
        b = act.get("broker")
        if not self._running(b):
            return None
        tp = self._tp(act)
        for req in self.cluster.in_flight[b]:
            if (act.name == "DeliverLeaderAndIsr" and isinstance(req, LeaderAndIsrRequest)
                    and req.topic_partition == tp and req.controller_epoch == act.get("controller_epoch")
                    and req.leader == act.get("leader") and req.leader_epoch == act.get("leader_epoch")
                    and tuple(req.isr) == tuple(act.get("isr")) and req.zk_version == act.get("version")
                    and tuple(act.get("replicas", req.replicas)) == tuple(req.replicas)):
                return req
            if (act.name == "DeliverUpdateMetadata" and isinstance(req, UpdateMetadataRequest)
                    and req.topic_partition == tp and req.controller_epoch == act.get("controller_epoch")
                    and req.leader == act.get("leader") and req.leader_epoch == act.get("leader_epoch")
                    and tuple(req.live_brokers) == tuple(act.get("live"))):
                return req
            if (act.name == "DeliverStopReplica" and isinstance(req, StopReplicaRequest)
                    and req.topic_partition == tp and req.controller_epoch == act.get("controller_epoch")
                    and act.get("delete", True) == req.delete_partition):
                return req
        return None

    def _deliverable(self, act) -> bool:
        """A Deliver* action's request is queued for the broker and nothing its
        controller sent before it for that partition is still ahead of it."""
        req = self._find_request(act)
        if req is None:
            return False
        if isinstance(req, UpdateMetadataRequest):
            return not self._update_metadata_waits(act.get("broker"), req)
        if isinstance(req, LeaderAndIsrRequest) and self.metadata_cache:
            return not self._leader_and_isr_waits(act.get("broker"), req)
        if isinstance(req, StopReplicaRequest) and self.reassign_targets:
            # The controller's channel is FIFO: a StopReplica does not overtake a
            # LeaderAndIsr its controller sent for that partition (spec/broker.py).
            return not any(isinstance(q, LeaderAndIsrRequest) and q.topic_partition == req.topic_partition
                           and q.controller_epoch == req.controller_epoch
                           for q in self.cluster.in_flight[act.get("broker")])
        return True

    def _update_metadata_waits(self, b: int, um: UpdateMetadataRequest) -> bool:
        """The controller's channel is FIFO and a batch sends LeaderAndIsr before
        UpdateMetadata: an UpdateMetadata waits for the LeaderAndIsr (leader epoch not
        newer) and the older UpdateMetadata its controller sent this broker for the
        partition; an ``ahead`` one at a broker that has applied nothing of its
        controller epoch waits for no LeaderAndIsr (spec/metadata.py keeps requests in
        flight as a set and orders these)."""
        first = um.ahead and self._rm(b).controller_epoch < um.controller_epoch
        for q in self.cluster.in_flight[b]:
            if q.topic_partition != um.topic_partition or q.controller_epoch != um.controller_epoch:
                continue
            if isinstance(q, LeaderAndIsrRequest) and q.leader_epoch <= um.leader_epoch and not first:
                return True
            if isinstance(q, UpdateMetadataRequest) and q.leader_epoch < um.leader_epoch:
                return True
        return False

    def _leader_and_isr_waits(self, b: int, lai: LeaderAndIsrRequest) -> bool:
        """A LeaderAndIsr waits for the UpdateMetadata its controller sent before it: one
        for the partition with an older leader epoch, and at a broker that has applied
        nothing of that controller epoch, an ``ahead`` one (spec/metadata.py)."""
        first = self._rm(b).controller_epoch < lai.controller_epoch
        return any(isinstance(q, UpdateMetadataRequest) and q.controller_epoch == lai.controller_epoch
                   and ((q.topic_partition == lai.topic_partition and q.leader_epoch < lai.leader_epoch)
                        or (first and q.ahead)) for q in self.cluster.in_flight[b])
