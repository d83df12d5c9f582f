"""The Kafka controller model's state: compact NamedTuples of small ints.

Everything here is a tuple, so ``repr`` is a canonical encoding and the checker's
fingerprint is stable.  Brokers are numbered 0..n-1 and every per-broker or
per-partition collection is a tuple indexed by that number.  Sets (ISR, live
brokers) are sorted tuples.

Layout, and who may read what:
- ``zk``       ZooKeeper, the only shared truth.  Changed by conditional writes only.
- ``brokers``  each broker's own memory: liveness, the highest controller epoch it
               has seen, its view of every partition, the requests in flight to it,
               and, if it believes it is the controller, its ``ControllerContext``.
- ``budget``   how many of each bounded fault may still happen (faults are bounded,
               healing is not).
- ``ghost``    GHOST STATE: history flags that only properties read; actions only
               ever set them, and no action's enabling condition looks at them.
"""

from __future__ import annotations

from typing import NamedTuple

NO_LEADER = -1
NO_VERSION = -1          # the partition's state znode does not exist

# Partition states (seed 004; Kafka's PartitionStateMachine).
NON_EXISTENT_PARTITION = "NonExistentPartition"
NEW_PARTITION = "NewPartition"
ONLINE_PARTITION = "OnlinePartition"
OFFLINE_PARTITION = "OfflinePartition"

# Replica states (Kafka's ReplicaStateMachine).
NEW_REPLICA = "NewReplica"
ONLINE_REPLICA = "OnlineReplica"
OFFLINE_REPLICA = "OfflineReplica"
REPLICA_DELETION_STARTED = "ReplicaDeletionStarted"
REPLICA_DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
REPLICA_DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
NON_EXISTENT_REPLICA = "NonExistentReplica"


class LeaderIsr(NamedTuple):
    """``/brokers/topics/<t>/partitions/<p>/state`` and the copies of it that the
    controller caches and brokers hold.  ``version`` is the znode version the
    holder last saw: conditional writes compare it with ZooKeeper's."""

    leader: int
    leader_epoch: int
    isr: tuple
    controller_epoch: int
    version: int


NO_STATE = LeaderIsr(NO_LEADER, -1, (), -1, NO_VERSION)


class Zk(NamedTuple):
    controller: int               # /controller (ephemeral); NO_LEADER when absent
    controller_epoch: int         # /controller_epoch
    sessions: tuple               # /brokers/ids/<b>: session number, 0 = not registered
    topic: bool                   # /brokers/topics/<t> exists
    partitions: tuple             # LeaderIsr per partition
    delete_topic: bool            # /admin/delete_topics/<t> pending
    ar: tuple                     # /brokers/topics/<t>: the AR of each partition (ordered; changed by reassignment)
    reassign: tuple               # /admin/reassign_partitions: RAR per partition, () when none is pending


class LeaderAndIsr(NamedTuple):
    """A LeaderAndIsr request in flight from a controller to one broker."""

    controller_epoch: int
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple
    version: int
    replicas: tuple               # the AR as the controller knows it (Kafka's PartitionState.replicas)


class StopReplica(NamedTuple):
    """A StopReplica request in flight: delete=true during topic deletion and for a
    reassignment's removed replicas (step 9), delete=false at step 8 (stop fetching,
    keep the log)."""

    controller_epoch: int
    partition: int
    delete: bool


class UpdateMetadata(NamedTuple):
    """An UpdateMetadata request in flight from a controller to one broker (with
    ``metadata_cache`` only): one partition's leadership and the live brokers, which
    the broker's ``MetadataCache`` takes if the controller epoch is not stale.
    Kafka's request also carries the ISR, the znode version and the replicas; only
    the leader and the live brokers are read (by the producers' routing and by
    ``ReplicaManager.makeFollowers``), so only they and the leader epoch (which
    orders one controller's requests for a partition) are kept.  Leader epoch -1:
    the request names no state for the partition (it has none yet) and carries only
    the live brokers.

    ``ahead``: sent on its own by ``KafkaController.sendUpdateMetadataRequest`` at
    the start of ``onControllerFailover`` (0.11 and later) or ``onBrokerStartup``,
    before that event's LeaderAndIsr requests (spec/broker.py orders them)."""

    controller_epoch: int
    partition: int
    leader: int
    leader_epoch: int
    live: tuple                   # the brokers the controller believes live (liveOrShuttingDownBrokerIds), sorted
    ahead: bool


class Reassignment(NamedTuple):
    """A reassignment the controller is working on (Kafka's partitionsBeingReassigned
    entry, plus how far this controller got, which Kafka keeps on its call stack).

    ``original`` is the AR in the controller's context when it took the reassignment
    up: OAR for the controller that starts it, OAR + RAR for a successor that resumes
    it after step 1.  Either way ``original - target`` is OAR - RAR."""

    target: tuple                 # RAR
    original: tuple
    step: str                     # the last of the 11 steps this controller finished: "0" (none), "1".."8",
                                  # "9a"/"9b" (replica deletion started/successful), "9", "10"


class ControllerContext(NamedTuple):
    """What a broker that believes it is the controller holds in memory.  It is a
    cache of ZooKeeper and may be stale; a zombie keeps acting on it."""

    epoch: int                    # the controller epoch it was elected with
    live: tuple                   # per broker: session number it last saw, 0 = dead
    partitions: tuple             # cached LeaderIsr per partition
    partition_states: tuple       # per partition: a partition state name
    replica_states: tuple         # per partition: replica state per replica slot (KafkaModel.ar)
    shutting_down: tuple          # per broker: controlled shutdown requested
    deleting: bool                # topic deletion in progress
    ar: tuple                     # per partition: cached AR (partitionReplicaAssignment)
    reassigning: tuple            # per partition: Reassignment in progress, or None
    offline: tuple = ()           # sorted (partition, replica) pairs whose OfflineReplica transition the
                                  # current event still owes (a broker failure, a controlled shutdown)


class Replica(NamedTuple):
    """A broker's replica of one partition: its log, its leader-epoch cache and its
    high watermark survive a restart (they are on disk); ``leos`` and ``truncating``
    are memory.

    A record is identified by (offset, leader epoch): only the leader of an epoch
    appends records in that epoch, and it appends each offset once, so the log is
    the tuple of the records' epochs."""

    log: tuple                    # leader epoch of the record at each offset
    hw: int                       # high watermark (exclusive)
    leos: tuple                   # as leader: LEO of each replica slot (KafkaModel.ar) it last saw fetch, -1 unknown;
                                  # its own slot: its LEO when it last became leader (datapath.epoch_start_offset)
    truncating: bool              # a new follower that has not truncated yet (KIP-101 and later)
    unwritten_epoch: int          # the leader-epoch cache's last entry when no record has it yet, at the LEO
                                  # (Kafka 2.1 records its epoch on becoming leader, KAFKA-7415); -1 none.
                                  # The other entries are read off the records' epochs (spec/datapath.py, per version)


class Broker(NamedTuple):
    alive: bool
    controller_epoch_seen: int    # highest controller epoch accepted (in memory)
    partitions: tuple             # per partition: LeaderIsr this broker applied, or NO_STATE
    inbox: tuple                  # sorted, duplicate-free requests in flight to it
    ctx: ControllerContext | None
    replicas: tuple               # per partition: Replica, or () when the data path is off
    assigned: tuple               # per partition: the AR of the last LeaderAndIsr it applied, () none


class CachingBroker(NamedTuple):
    """A broker with a metadata cache (``metadata_cache``): ``Broker``'s fields and
    ``metadata``.  A separate class, not a field of ``Broker``, so that the states of
    every configuration without the cache keep their encoding (and the recorded
    traces their fingerprints)."""

    alive: bool
    controller_epoch_seen: int
    partitions: tuple
    inbox: tuple
    ctx: ControllerContext | None
    replicas: tuple
    assigned: tuple
    metadata: tuple               # per partition: the leader its MetadataCache names, NO_LEADER none
    alive_brokers: tuple          # MetadataCache.aliveBrokers: the live list of the last UpdateMetadata applied


def new_broker(cached: bool, alive: bool, partitions: int, replicas: tuple) -> Broker | CachingBroker:
    """A broker with an empty memory: started, or stopped (what survives is on disk:
    ``replicas``)."""
    empty = tuple(NO_STATE for _ in range(partitions))
    none = tuple(() for _ in range(partitions))
    if cached:
        return CachingBroker(alive, 0, empty, (), None, replicas, none, tuple(NO_LEADER for _ in range(partitions)), ())
    return Broker(alive, 0, empty, (), None, replicas, none)


class Budget(NamedTuple):
    """Faults that may still happen.  Healing actions (restart, re-register,
    elections, ISR expand, request delivery) have no budget."""

    records: int
    crashes: int
    session_expiries: int
    controller_failovers: int
    isr_shrinks: int
    unclean_elections: int
    controlled_shutdowns: int
    topic_deletions: int
    reassignments: int            # admin reassignment requests not yet made


class Ghost(NamedTuple):
    """GHOST STATE, read only by properties (prefix inv_ in Vanlightly's specs)."""

    inv_isr_shrunk: bool
    inv_isr_reexpanded: bool
    inv_partition_offline: bool
    inv_partition_back_online: bool
    inv_unclean_election: bool
    inv_shutdown_moved_leader: bool
    inv_write_refused: bool
    inv_follower_truncated: bool
    inv_pending: tuple            # (partition, offset, epoch) of acks=all writes not yet acknowledged
    inv_acked: tuple              # (partition, offset, epoch) acknowledged to an acks=all producer
    inv_read: tuple               # (partition, offset, epoch) exposed to consumers below a leader's HW
    inv_leader_moved: tuple       # per partition: RAR once some controller finished step 7 of its reassignment, else ()
    inv_reassigned: bool          # some reassignment completed (step 11 with AR = RAR in ZooKeeper)


def no_ghost(partitions: int) -> Ghost:
    return Ghost(False, False, False, False, False, False, False, False, (), (), (),
                 tuple(() for _ in range(partitions)), False)


class KafkaState(NamedTuple):
    zk: Zk
    brokers: tuple
    budget: Budget
    ghost: Ghost


# The canonical encoding the fingerprint hashes is repr(state).  NamedTuple's own
# __repr__ is Python code that prints field names; tuple's is C and prints values
# only.  Using it for every state class makes fingerprinting several times cheaper
# and keeps the encoding canonical (describe() gives the readable view).
for _cls in (LeaderIsr, Zk, LeaderAndIsr, StopReplica, UpdateMetadata, Reassignment, Replica, Broker,
             CachingBroker, Budget, Ghost, KafkaState):
    _cls.__repr__ = tuple.__repr__

_CTX_FIELDS = len(ControllerContext._fields) - 1


def _ctx_repr(ctx: ControllerContext) -> str:
    """A context owes no OfflineReplica transition in most states: it is then encoded
    as the nine fields it had before ``offline`` existed, so those states keep their
    fingerprints (and the recorded traces theirs).  The encoding stays canonical: a
    context with pending transitions has ten fields."""
    return tuple.__repr__(ctx if ctx.offline else ctx[:_CTX_FIELDS])


ControllerContext.__repr__ = _ctx_repr


def put(t: tuple, i: int, value) -> tuple:
    """Tuple ``t`` with element ``i`` replaced: the one update every action needs."""
    return t[:i] + (value,) + t[i + 1:]


def may_stop(s: KafkaState, b: int) -> bool:
    """Whether broker ``b`` may stop (crash, expire or end a controlled shutdown) within
    the budget: losing the active controller is a controller failover, so that bound
    counts too."""
    return s.zk.controller != b or s.budget.controller_failovers > 0


def with_broker(s: KafkaState, b: int, broker: Broker) -> KafkaState:
    return s._replace(brokers=put(s.brokers, b, broker))


def add_request(inbox: tuple, req) -> tuple:
    """Requests in flight form a set: a duplicate of a request already in flight
    changes nothing the receiver can observe (the second copy is rejected by the
    leader-epoch check), so it is not kept twice."""
    if req in inbox:
        return inbox
    return tuple(sorted(inbox + (req,), key=request_key))


def request_key(req) -> tuple:
    return (type(req).__name__,) + tuple(req)
