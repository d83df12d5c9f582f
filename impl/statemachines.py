"""The controller's partition and replica states, and which state each may be entered from.

They follow Kafka's ``PartitionStateMachine`` and ``ReplicaStateMachine`` (their
``validPreviousStates``).  They live apart from the controller because the
reassignment steps (impl/reassignment.py), which the controller drives, move replicas
and partitions through the same machines: both import this module, and neither
imports the other's internals.
"""

from __future__ import annotations

# Partition states (PartitionStateMachine)
NEW_PARTITION = "NewPartition"
ONLINE_PARTITION = "OnlinePartition"
OFFLINE_PARTITION = "OfflinePartition"
NON_EXISTENT_PARTITION = "NonExistentPartition"
# Replica states (ReplicaStateMachine)
NEW_REPLICA = "NewReplica"
ONLINE_REPLICA = "OnlineReplica"
OFFLINE_REPLICA = "OfflineReplica"
REPLICA_DELETION_STARTED = "ReplicaDeletionStarted"
REPLICA_DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
REPLICA_DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
NON_EXISTENT_REPLICA = "NonExistentReplica"

# target -> the states it may be entered from (Kafka's validPreviousStates)
VALID_PREVIOUS_PARTITION = {
    NEW_PARTITION: {NON_EXISTENT_PARTITION},
    ONLINE_PARTITION: {NEW_PARTITION, ONLINE_PARTITION, OFFLINE_PARTITION},
    OFFLINE_PARTITION: {NEW_PARTITION, ONLINE_PARTITION, OFFLINE_PARTITION},
    NON_EXISTENT_PARTITION: {OFFLINE_PARTITION},
}
VALID_PREVIOUS_REPLICA = {
    NEW_REPLICA: {NON_EXISTENT_REPLICA},
    ONLINE_REPLICA: {NEW_REPLICA, ONLINE_REPLICA, OFFLINE_REPLICA, REPLICA_DELETION_INELIGIBLE},
    OFFLINE_REPLICA: {NEW_REPLICA, ONLINE_REPLICA, OFFLINE_REPLICA, REPLICA_DELETION_INELIGIBLE},
    REPLICA_DELETION_STARTED: {OFFLINE_REPLICA},
    REPLICA_DELETION_SUCCESSFUL: {REPLICA_DELETION_STARTED},
    REPLICA_DELETION_INELIGIBLE: {OFFLINE_REPLICA, REPLICA_DELETION_STARTED},
    NON_EXISTENT_REPLICA: {REPLICA_DELETION_SUCCESSFUL},
}
