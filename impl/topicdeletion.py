"""Topic deletion in the controller: Kafka 2.x ``TopicDeletionManager``.

StartTopicDeletion moves every replica and partition of the topic offline; each replica
is then sent StopReplica(delete=true) (or marked ReplicaDeletionIneligible while its
broker is down, and retried once it is back); the topic's znodes go when every replica
is ReplicaDeletionSuccessful (``completeDeleteTopic``).  Each of these is one controller
step, as in the model (spec/controller.py), and none of them is a step of the event the
controller is in: with ``controller_event_order`` they stay unordered
(``impl/eventorder.py``'s ``UNORDERED_STEPS``).

A topic with a reassignment pending is ineligible for deletion (Kafka 2.x
``markTopicIneligibleForDeletion``).  A failed StopReplica leaves the replica in
ReplicaDeletionStarted: the model records success only (spec/broker.py
``deliver_stop_replica``).

A mixin of ``impl.controller.Controller``, as ``impl.reassignment.ReassignmentSteps``
is: it uses the controller's context, ZooKeeper client, state machines and
state-change log.  The module holds the TopicDeletion event's name, which the
controller's watch on /admin/delete_topics queues.
"""

from __future__ import annotations

from impl.requests import StopReplicaResponse
from impl.statemachines import (
    NON_EXISTENT_PARTITION,
    NON_EXISTENT_REPLICA,
    OFFLINE_PARTITION,
    OFFLINE_REPLICA,
    REPLICA_DELETION_INELIGIBLE,
    REPLICA_DELETION_STARTED,
    REPLICA_DELETION_SUCCESSFUL,
    VALID_PREVIOUS_PARTITION,
    VALID_PREVIOUS_REPLICA,
)
from impl.zkclient import ControllerMovedError, TopicPartition, get_partition_reassignment

#: the controller event queued by the /admin/delete_topics child watch
TOPIC_DELETION = "TopicDeletion"


class TopicDeletionSteps:
    """Mixed into Controller: ``TopicDeletionManager``'s steps, one replica at a time."""

    def topics_to_start_deleting(self) -> list[str]:
        if not self.config.delete_topic_enable or not self.is_active() or TOPIC_DELETION not in self.pending:
            return []
        # A topic with a reassignment pending is ineligible for deletion (Kafka 2.x).
        pending = {tp.topic for tp in get_partition_reassignment(self.zk)} | {tp.topic for tp in self.ctx.reassigning}
        return [t for t in self.zk.get_topic_deletions()
                if t not in self.ctx.topics_to_be_deleted and self.zk.topic_exists(t) and t not in pending
                and any(tp.topic == t for tp in self.ctx.assignments)]

    def start_topic_deletion(self, topic: str) -> list:
        ctx = self.ctx
        ctx.topics_to_be_deleted.add(topic)
        ctx.offline_owed = {(tp, r) for tp, r in ctx.offline_owed if tp.topic != topic}
        self._trace(f"Starting deletion of topic {topic}")
        for tp in ctx.partitions_of(topic):
            for r in ctx.assignments[tp]:
                st = ctx.replica_states.get((tp, r), NON_EXISTENT_REPLICA)
                if st in VALID_PREVIOUS_REPLICA[OFFLINE_REPLICA] or st == OFFLINE_REPLICA:
                    self._replica_state(tp, r, OFFLINE_REPLICA)
            st = ctx.partition_states.get(tp, NON_EXISTENT_PARTITION)
            if st in VALID_PREVIOUS_PARTITION[OFFLINE_PARTITION]:
                self._partition_state(tp, OFFLINE_PARTITION)
        if not [t for t in self.zk.get_topic_deletions(watch=True) if t not in ctx.topics_to_be_deleted]:
            self.pending.discard(TOPIC_DELETION)
        return []

    def deletion_steps(self) -> list[tuple[str, TopicPartition, int]]:
        """("start" | "retry", tp, replica) for every replica deletion that can proceed."""
        ctx = self.ctx
        out = []
        if ctx is None:
            return out
        for topic in sorted(ctx.topics_to_be_deleted):
            if not self.zk.topic_exists(topic):
                continue
            for tp in ctx.partitions_of(topic):
                for r in ctx.assignments[tp]:
                    st = ctx.replica_states.get((tp, r))
                    if st == OFFLINE_REPLICA:
                        out.append(("start", tp, r))
                    elif st == REPLICA_DELETION_INELIGIBLE and r in ctx.live_broker_epochs:
                        out.append(("retry", tp, r))
        return out

    def start_replica_deletion(self, tp: TopicPartition, replica: int) -> list:
        if replica in self.ctx.live_broker_epochs:
            self._replica_state(tp, replica, REPLICA_DELETION_STARTED)
            self._trace(f"Sending StopReplica (delete=true) to broker {replica} for partition {tp}")
            return self.send_stop_replica(tp, (replica,), delete=True)
        self._replica_state(tp, replica, REPLICA_DELETION_INELIGIBLE)
        return []

    def retry_replica_deletion(self, tp: TopicPartition, replica: int) -> list:
        self._replica_state(tp, replica, OFFLINE_REPLICA)
        return []

    def topics_deleted(self) -> list[str]:
        ctx = self.ctx
        if ctx is None:
            return []
        return [t for t in sorted(ctx.topics_to_be_deleted) if self.zk.topic_exists(t) and all(
            ctx.replica_states.get((tp, r)) == REPLICA_DELETION_SUCCESSFUL
            for tp in ctx.partitions_of(t) for r in ctx.assignments[tp])]

    def complete_topic_deletion(self, topic: str) -> list:
        ctx = self.ctx
        tps = ctx.partitions_of(topic)
        try:
            self.zk.delete_topic_znodes(topic, [tp.partition for tp in tps], self._epoch_check())
        except ControllerMovedError:
            self._trace(f"Controller moved while completing the deletion of {topic}; resigning")
            self.resign()
            return []
        for tp in tps:
            for r in ctx.assignments[tp]:
                self._replica_state(tp, r, NON_EXISTENT_REPLICA)
                del ctx.replica_states[(tp, r)]
            self._partition_state(tp, NON_EXISTENT_PARTITION)
            del ctx.partition_states[tp]
            ctx.leadership.pop(tp, None)
            del ctx.assignments[tp]
        ctx.topics_to_be_deleted.discard(topic)
        self._trace(f"Deletion of topic {topic} successfully completed")
        return []

    def handle_stop_replica_response(self, resp: StopReplicaResponse) -> None:
        """A failed StopReplica leaves the replica in ReplicaDeletionStarted, as the model
        records success only (spec/broker.py ``deliver_stop_replica``)."""
        ctx = self.ctx
        if ctx is None or ctx.epoch != resp.controller_epoch or resp.error != "NONE":
            return
        tp = resp.topic_partition
        if tp.topic in ctx.topics_to_be_deleted and ctx.replica_states.get((tp, resp.broker_id)) == \
                REPLICA_DELETION_STARTED:
            self._replica_state(tp, resp.broker_id, REPLICA_DELETION_SUCCESSFUL)
