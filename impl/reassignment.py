"""Partition reassignment in the controller: Kafka 2.x ``onPartitionReassignment``, the
11 steps of the protocol reference §7 (seed 000).

With OAR the AR when the controller takes the reassignment up and RAR the target:
1. AR in ZooKeeper := OAR + RAR;  2. leader epoch + 1, LeaderAndIsr to every replica in AR;
3. RAR - OAR -> NewReplica;  4. wait until RAR is in the ISR;  5. RAR -> OnlineReplica;
6. cached AR := RAR;  7. a leader outside RAR (or not live) is replaced (ReassignPartition
   election; if it fails, nothing is written and the event goes on);
8. OAR - RAR -> OfflineReplica: out of the ISR, StopReplica(delete=false);
9. OAR - RAR -> ReplicaDeletionStarted (StopReplica(delete=true)), -Successful, NonExistent;
10. AR in ZooKeeper := RAR;  11. the partition leaves /admin/reassign_partitions.

Each step is one controller operation (``reassignment_steps`` lists those that can run).
Kafka runs steps 1-3 in one event and 5-11 in another: while a controller is inside
one (``in_reassignment_event``), it handles no other event, which the driver respects;
other brokers and faults interleave freely.  A controller elected while a reassignment
is pending takes it up again from the AR in ZooKeeper (``initializePartitionReassignment``).

Choices shared with the model (spec/reassign.py): step 8's ISR removals of several
replicas are one conditional write; a removed leader leaves no leader and the last ISR
member stays; step 9's deletion does not wait for the StopReplica responses (Kafka 2.x);
the AR is ordered OAR, then RAR - OAR.
"""

from __future__ import annotations

from dataclasses import dataclass

from impl import election as E
from impl.statemachines import (
    NEW_REPLICA,
    NON_EXISTENT_REPLICA,
    OFFLINE_REPLICA,
    ONLINE_PARTITION,
    ONLINE_REPLICA,
    REPLICA_DELETION_STARTED,
    REPLICA_DELETION_SUCCESSFUL,
    VALID_PREVIOUS_PARTITION,
    VALID_PREVIOUS_REPLICA,
)
from impl.zkclient import (
    NO_LEADER,
    ControllerMovedError,
    TopicPartition,
    get_partition_reassignment,
    remove_partition_reassignment,
    set_assignment,
)

ORDER = ("0", "1", "2", "3", "5", "6", "7", "8", "9a", "9b", "9", "10")
STEP_NAMES = {
    "1": "ReassignExtendAr", "2": "ReassignBumpLeaderEpoch", "3": "ReassignStartNewReplicas",
    "5": "ReassignOnlineReplicas", "6": "ReassignCacheAr", "7": "ReassignElectLeader",
    "8": "ReassignOfflineOldReplicas", "9a": "ReassignStartReplicaDeletion",
    "9b": "ReassignReplicaDeletionSuccessful", "9": "ReassignRemoveReplicas", "10": "ReassignShrinkAr",
    "11": "CompleteReassignment",
}
IN_EVENT = frozenset(("1", "2", "5", "6", "7", "8", "9a", "9b", "9", "10"))


@dataclass
class ReassignedPartitionContext:
    target: tuple          # RAR
    original: tuple        # the AR when this controller took it up
    step: str = "0"        # the last step this controller finished

    @property
    def removed(self) -> tuple:
        return tuple(x for x in self.original if x not in self.target)

    @property
    def extended(self) -> tuple:
        return self.original + tuple(x for x in self.target if x not in self.original)


class ReassignmentSteps:
    """Mixed into Controller: uses its context, ZooKeeper client and state machines."""

    def _initialize_partition_reassignment(self) -> None:
        for tp, rar in sorted(get_partition_reassignment(self.zk, watch=True).items()):
            if tp in self.ctx.assignments:
                self.ctx.reassigning[tp] = ReassignedPartitionContext(rar, self.ctx.assignments[tp])

    # -- what can run ----------------------------------------------------------------------
    def in_reassignment_event(self) -> bool:
        ctx = self.ctx
        if ctx is None:
            return False
        return any(r.step in IN_EVENT and not self._event_ended(tp, r) for tp, r in ctx.reassigning.items())

    def _event_ended(self, tp: TopicPartition, r: ReassignedPartitionContext) -> bool:
        """The event stopped before its next step: step 7's kept leader's epoch bump, or
        step 2's or 8's write, fails on a newer controller's state (``updateLeaderEpoch``
        and ``removeReplicasFromIsr`` throw, which ends ``onPartitionReassignment``)."""
        if r.step == "6":
            return self._step7(tp, r) is None
        return r.step in ("1", "7") and self._written_by_newer(self.zk.get_partition_state(tp))

    def reassignments_to_start(self) -> list[TopicPartition]:
        if not self.is_active():
            return []
        pending = get_partition_reassignment(self.zk)
        return sorted(tp for tp in pending if tp in self.ctx.assignments and tp not in self.ctx.reassigning
                      and tp.topic not in self.ctx.topics_to_be_deleted and self.zk.topic_exists(tp.topic))

    def _next_step(self, tp: TopicPartition, r: ReassignedPartitionContext) -> str | None:
        li = self.zk.get_partition_state(tp)          # areReplicasInIsr reads ZooKeeper
        in_isr = li is not None and all(x in li.isr for x in r.target)
        if r.step == "0":
            if r.original == r.target:
                return "11"
            return "5" if in_isr else "1"
        if r.step == "3":
            return "5" if in_isr else None
        i = ORDER.index(r.step)
        return ORDER[i + 1] if i + 1 < len(ORDER) else "11"

    def _step7(self, tp: TopicPartition, r: ReassignedPartitionContext):
        """(leader, elected): leader NO_LEADER when the ReassignPartition election fails;
        None when a kept leader's epoch bump fails on a newer controller's write.  A
        leader in controlled shutdown is not kept and no broker in controlled shutdown
        is elected (``moveReassignedPartitionLeaderIfRequired`` tests ``liveBrokerIds``
        in 0.10 and 0.11, ``isReplicaOnline`` in 2.x).  The failed election (no live
        replica of RAR in the ISR, or a state a newer controller wrote) is logged and the
        event goes on with step 8 (0.10's ``handleStateChange`` catches the selector's
        exception, 2.x's ``electLeaderForPartitions`` logs its ``failedElections``);
        ``updateLeaderEpoch`` throws instead, which ends the event."""
        li = self.zk.get_partition_state(tp)
        newer = self._written_by_newer(li)
        live = self._live_broker_ids()
        if li is not None and li.leader in r.target and li.leader in live:
            return None if newer else (li.leader, False)
        found = None if newer else E.reassign_partition_leader_election(r.target, li.isr if li else (), live)
        return (NO_LEADER if found is None else found), True

    def reassignment_steps(self) -> list[tuple[str, TopicPartition, int | None]]:
        """(step, tp, leader for step 7) of every reassignment step this controller can take."""
        ctx = self.ctx
        out = []
        if ctx is None:
            return out
        active = self.is_active()
        for tp, r in sorted(ctx.reassigning.items()):
            if tp.topic in ctx.topics_to_be_deleted or not self.zk.topic_exists(tp.topic):
                continue
            k = self._next_step(tp, r)
            if k is None or (k == "5" and r.step == "3" and not active):
                continue      # step 4 ends on an ISR watch, which a zombie no longer gets
            if k in ("2", "8"):
                li = self.zk.get_partition_state(tp)      # one read for both tests
                if (k == "2" and li is None) or self._written_by_newer(li):
                    continue  # updateLeaderEpoch / removeReplicasFromIsr fail: no further for this one
            if k == "7":
                e = self._step7(tp, r)
                if e is not None:
                    out.append((k, tp, e[0]))
                continue
            out.append((k, tp, None))
        return out

    # -- the steps -------------------------------------------------------------------------------
    def start_reassignment(self, tp: TopicPartition) -> list:
        rar = get_partition_reassignment(self.zk)[tp]
        self.ctx.reassigning[tp] = ReassignedPartitionContext(rar, self.ctx.assignments[tp])
        self._trace(f"Handling reassignment of partition {tp} to new replicas {list(rar)}")
        return []

    def reassignment_step(self, step: str, tp: TopicPartition) -> list:
        r = self.ctx.reassigning[tp]
        try:
            out = getattr(self, f"_reassign_step_{step}")(tp, r)
        except ControllerMovedError:
            self._trace(f"Controller moved during step {step} of the reassignment of {tp}; resigning")
            self.resign()
            return []
        if self.ctx is not None and tp in self.ctx.reassigning:
            self.ctx.reassigning[tp].step = step
        return out

    def _move(self, tp, replicas, target: str) -> None:
        for x in replicas:
            current = self.ctx.replica_states.get((tp, x), NON_EXISTENT_REPLICA)
            if current == target or current in VALID_PREVIOUS_REPLICA[target]:
                self._replica_state(tp, x, target)

    def _reassign_step_1(self, tp, r):
        set_assignment(self.zk, tp, r.extended, self._epoch_check())
        self.ctx.assignments[tp] = r.extended
        return []

    def _reassign_step_2(self, tp, r):
        li = self.zk.get_partition_state(tp)
        new = self.zk.write_partition_state(tp, li.leader, self._next_leader_epoch(li), li.isr, self.ctx.epoch,
                                            li.zk_version, self._epoch_check())
        self.ctx.leadership[tp] = new
        live = self._live()
        return self._leader_and_isr(tp, new, [x for x in self.ctx.assignments[tp] if x in live])

    def _reassign_step_3(self, tp, r):
        self._move(tp, [x for x in r.target if x not in r.original], NEW_REPLICA)
        return []

    def _reassign_step_5(self, tp, r):
        self._move(tp, r.target, ONLINE_REPLICA)
        return []

    def _reassign_step_6(self, tp, r):
        self.ctx.assignments[tp] = r.target
        return []

    def _reassign_step_7(self, tp, r):
        leader, elected = self._step7(tp, r)
        if leader == NO_LEADER:
            self._trace(f"Failed to elect a leader for {tp} from the reassigned replicas {list(r.target)}; "
                        "going on with the reassignment")
            return []
        li = self.zk.get_partition_state(tp)
        new = self.zk.write_partition_state(tp, leader, self._next_leader_epoch(li), li.isr, self.ctx.epoch,
                                            li.zk_version, self._epoch_check())
        self.ctx.leadership[tp] = new
        if elected:
            if self.ctx.partition_states.get(tp) in VALID_PREVIOUS_PARTITION[ONLINE_PARTITION]:
                self._partition_state(tp, ONLINE_PARTITION, f" with state {new} (reassign election)")
            targets = self.ctx.assignments[tp]
        else:
            targets = r.extended         # updateLeaderEpochAndSendRequest: OAR + RAR, with AR = RAR
        live = self._live()
        return self._leader_and_isr(tp, new, [x for x in targets if x in live])

    def _reassign_step_8(self, tp, r):
        out = []
        li = self.zk.get_partition_state(tp)        # removeReplicasFromIsr reads ZooKeeper first
        leader, isr = li.leader, li.isr
        for x in r.removed:
            if x in isr:
                if x == leader:
                    leader = NO_LEADER
                if len(isr) > 1:
                    isr = tuple(y for y in isr if y != x)
        live = self._live()
        if (leader, isr) != (li.leader, li.isr):
            new = self.zk.write_partition_state(tp, leader, self._next_leader_epoch(li), isr, self.ctx.epoch,
                                                li.zk_version, self._epoch_check())
            self.ctx.leadership[tp] = new
            out += self._leader_and_isr(tp, new, [x for x in self.ctx.assignments[tp] if x in live])
        out += self.send_stop_replica(tp, r.removed, delete=False)
        self._move(tp, r.removed, OFFLINE_REPLICA)
        return out

    def _reassign_step_9a(self, tp, r):
        out = self.send_stop_replica(tp, r.removed, delete=True)
        self._move(tp, r.removed, REPLICA_DELETION_STARTED)
        return out

    def _reassign_step_9b(self, tp, r):
        self._move(tp, r.removed, REPLICA_DELETION_SUCCESSFUL)
        return []

    def _reassign_step_9(self, tp, r):
        for x in r.removed:
            if self.ctx.replica_states.get((tp, x)) == REPLICA_DELETION_SUCCESSFUL:
                self._replica_state(tp, x, NON_EXISTENT_REPLICA)
        return []

    def _reassign_step_10(self, tp, r):
        set_assignment(self.zk, tp, r.target, self._epoch_check())
        self.ctx.assignments[tp] = r.target
        return []

    def _reassign_step_11(self, tp, r):
        remove_partition_reassignment(self.zk, tp, self._epoch_check())
        del self.ctx.reassigning[tp]
        self._trace(f"Reassignment of partition {tp} to {list(r.target)} completed")
        return []
