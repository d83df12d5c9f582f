"""Kafka's PartitionLeaderElectionAlgorithms (2.x), protocol reference §6.

Each takes the assignment (AR in order: the first replica is the preferred one), the
ISR read from ZooKeeper and the brokers the controller may elect, ``liveBrokerIds``
(live and not in controlled shutdown, as 2.x's ``PartitionStateMachine`` filters its
live replicas with ``ControllerContext.isReplicaOnline``), and returns
``(leader, new_isr)`` or None when there is no leader to elect.

    >>> offline_partition_leader_election((2, 0, 1), isr=(0, 1), live={0, 1, 2}, unclean=False)
    (0, (0, 1))
    >>> offline_partition_leader_election((2, 0), isr=(0,), live={2}, unclean=True)
    (2, (2,))
"""

from __future__ import annotations


def new_partition_leader_election(assignment, live) -> tuple | None:
    """NewPartition -> OnlinePartition: the first live replica leads; a new partition
    has no data, so every live replica is in sync."""
    alive = [r for r in assignment if r in live]
    return (alive[0], tuple(sorted(alive))) if alive else None


def offline_partition_leader_election(assignment, isr, live, unclean: bool) -> tuple | None:
    """The first live ISR member in AR order, keeping the live ISR; else, only when
    unclean.leader.election.enable, the first live replica alone (data may be lost)."""
    for r in assignment:
        if r in live and r in isr:
            return r, tuple(sorted(x for x in isr if x in live))
    if unclean:
        for r in assignment:
            if r in live:
                return r, (r,)
    return None


def preferred_replica_partition_leader_election(assignment, leader, isr, live) -> tuple | None:
    """Back to the preferred replica if it is alive, in the ISR and not leading; never unclean."""
    preferred = assignment[0]
    if preferred != leader and preferred in live and preferred in isr:
        return preferred, tuple(isr)
    return None


def controlled_shutdown_partition_leader_election(assignment, isr, live, shutting_down) -> tuple | None:
    """Leadership moves to a live ISR member that is not shutting down; the brokers
    shutting down leave the ISR."""
    for r in assignment:
        if r in live and r in isr and r not in shutting_down:
            return r, tuple(x for x in isr if x not in shutting_down)
    return None


def reassign_partition_leader_election(target, isr, live) -> int | None:
    """ReassignPartition (reassignment step 7): the first replica of RAR that is alive and
    in the ISR; never unclean (with none, the election fails and the reassignment goes on)."""
    for r in target:
        if r in live and r in isr:
            return r
    return None
