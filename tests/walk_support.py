"""Hand-driven paths through a model, for the tests that tell a story step by step.

``prefix_path(m, *wants)`` takes, at each step, the first enabled action whose text
starts with the next of ``wants``, so a test names its steps the way ``kmc replay``
prints them, only as far as it needs to tell them apart.  A step that is not
enabled fails the test with the actions that are."""

from __future__ import annotations


def prefix_path(m, *wants: str) -> tuple:
    """``(last state, actions taken)`` from the model's first initial state."""
    s, acts = m.init_states()[0], []
    for want in wants:
        a = next((a for a in m.actions(s) if str(a).startswith(want)), None)
        assert a is not None, f"{want} not enabled; enabled: {[str(x) for x in m.actions(s)]}"
        acts.append(a)
        s = m.next_state(s, a)
    return s, acts


# ``shutdown``: controller 0 shuts itself down, its controlled-shutdown election moves the
# leadership to broker 1, broker 0 rejoins the ISR, broker 1 crashes and the controller
# handles it: broker 0, in controlled shutdown, is the last live ISR member.
LAST_ISR_MEMBER_SHUTTING_DOWN = (
    "ElectController(broker=0)", "ElectLeader(controller=0, partition=0, leader=0",
    "ControlledShutdown(controller=0, broker=0)",
    "ElectLeader(controller=0, partition=0, leader=1, strategy='controlled_shutdown'",
    "DeliverLeaderAndIsr(broker=0, partition=0, controller_epoch=1, leader=1",
    "DeliverLeaderAndIsr(broker=1, partition=0, controller_epoch=1, leader=1",
    "ExpandIsr(leader=1, partition=0, replica=0)", "CrashBroker(broker=1)",
    "BrokerFailure(controller=0, broker=1)")


# ``reassign-rf`` with a controlled shutdown: broker 1 asks to stop, then the first
# reassignment ([0] -> [0, 1]) completes, leader 0 kept; the second ([0, 1] -> [1]) reaches
# step 6 with leader 0 outside RAR and broker 1, RAR's only replica, in controlled
# shutdown: step 7's election has no replica it may pick.
STEP7_ELECTION_FAILS = (
    "ElectController(broker=0)", "ElectLeader(controller=0, partition=0, leader=0, strategy='new'",
    "ControlledShutdown(controller=0, broker=1)", "ReassignPartitions(partition=0, replicas=(0, 1))",
    "StartReassignment(controller=0", "ReassignExtendAr(controller=0", "ReassignBumpLeaderEpoch(controller=0",
    "DeliverLeaderAndIsr(broker=0, partition=0, controller_epoch=1, leader=0, leader_epoch=1",
    "DeliverLeaderAndIsr(broker=1, partition=0, controller_epoch=1, leader=0, leader_epoch=1",
    "ExpandIsr(leader=0, partition=0, replica=1)", "ReassignStartNewReplicas(controller=0",
    "ReassignOnlineReplicas(controller=0", "ReassignCacheAr(controller=0",
    "ReassignElectLeader(controller=0, partition=0, leader=0)", "ReassignOfflineOldReplicas(controller=0",
    "ReassignStartReplicaDeletion(controller=0", "ReassignReplicaDeletionSuccessful(controller=0",
    "ReassignRemoveReplicas(controller=0", "ReassignShrinkAr(controller=0", "CompleteReassignment(controller=0",
    "ReassignPartitions(partition=0, replicas=(1,))", "StartReassignment(controller=0",
    "ReassignOnlineReplicas(controller=0", "ReassignCacheAr(controller=0")
