"""The controller's partition and replica state machines (seed 004; Kafka 2.x
``PartitionStateMachine`` / ``ReplicaStateMachine``): the legal transitions.

Actions consult these tables before they change a state, and the step property
``LegalStateTransitions`` checks every generated transition against them
independently, so a model change that skips a state is caught either way.
"""

from spec.state import (
    NEW_PARTITION, NEW_REPLICA, NON_EXISTENT_PARTITION, NON_EXISTENT_REPLICA,
    OFFLINE_PARTITION, OFFLINE_REPLICA, ONLINE_PARTITION, ONLINE_REPLICA,
    REPLICA_DELETION_INELIGIBLE, REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL,
)

# target state -> the states it may be entered from
PARTITION_PREVIOUS = {
    NEW_PARTITION: {NON_EXISTENT_PARTITION},
    ONLINE_PARTITION: {NEW_PARTITION, ONLINE_PARTITION, OFFLINE_PARTITION},
    OFFLINE_PARTITION: {NEW_PARTITION, ONLINE_PARTITION, OFFLINE_PARTITION},
    NON_EXISTENT_PARTITION: {OFFLINE_PARTITION},
}

REPLICA_PREVIOUS = {
    NEW_REPLICA: {NON_EXISTENT_REPLICA},
    ONLINE_REPLICA: {NEW_REPLICA, ONLINE_REPLICA, OFFLINE_REPLICA, REPLICA_DELETION_INELIGIBLE},
    OFFLINE_REPLICA: {NEW_REPLICA, ONLINE_REPLICA, OFFLINE_REPLICA, REPLICA_DELETION_INELIGIBLE},
    REPLICA_DELETION_STARTED: {OFFLINE_REPLICA},
    REPLICA_DELETION_SUCCESSFUL: {REPLICA_DELETION_STARTED},
    REPLICA_DELETION_INELIGIBLE: {OFFLINE_REPLICA, REPLICA_DELETION_STARTED},
    NON_EXISTENT_REPLICA: {REPLICA_DELETION_SUCCESSFUL},
}


def legal_partition(before: str, after: str) -> bool:
    return before == after or before in PARTITION_PREVIOUS[after]


def legal_replica(before: str, after: str) -> bool:
    return before == after or before in REPLICA_PREVIOUS[after]
