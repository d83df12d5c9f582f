"""Controller actions: election of the controller, its reaction to broker changes,
partition leader elections, ISR removal, ISR-change notifications, controlled
shutdown and topic deletion.

Every controller action is taken by a broker that holds a ``ControllerContext``
and acts on that context, which may be stale: a zombie (a controller whose
session expired) keeps acting until it notices.  What stops it is fencing:
its ZooKeeper writes are conditional on the znode version it cached and, with
``zk_epoch_fencing``, on the controller epoch (KAFKA-6082); its requests carry its
controller epoch, which brokers check (``controller_epoch_fencing``).  Whatever the
fences, a controller leaves alone a partition whose state znode a newer controller
wrote (``newer_mark``).
"""

from __future__ import annotations

from checker.model import Action, action
from spec import election
from spec.metadata import failover_sends_ahead, send_all, send_update_metadata
from spec.state import (
    NEW_PARTITION, NEW_REPLICA, NO_LEADER, NO_STATE, NO_VERSION, NON_EXISTENT_PARTITION,
    NON_EXISTENT_REPLICA, OFFLINE_PARTITION, OFFLINE_REPLICA, ONLINE_PARTITION, ONLINE_REPLICA,
    REPLICA_DELETION_INELIGIBLE, REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL,
    ControllerContext, KafkaState, LeaderAndIsr, LeaderIsr, Reassignment, StopReplica, add_request,
    may_stop, put,
)
from spec.statemachines import legal_partition, legal_replica

DOCS = {
    "ElectController": "a live broker creates the ephemeral /controller, bumps the controller epoch, "
                       "reads ZooKeeper into its context and sends LeaderAndIsr for every partition",
    "BrokerFailure": "the controller's /brokers/ids watch fires for a broker whose session ended: "
                     "its replicas go OfflineReplica, partitions it led go OfflinePartition",
    "BrokerStartup": "the controller sees a new broker session: its replicas go OnlineReplica and it "
                     "is sent LeaderAndIsr for its partitions",
    "ElectLeader": "the controller elects a partition leader (strategy new, offline, preferred or "
                   "controlled_shutdown; clean=False for an unclean election) with a conditional "
                   "ZooKeeper write, then sends LeaderAndIsr",
    "RemoveReplicaFromIsr": "an OfflineReplica transition that a broker failure or a controlled shutdown "
                            "owes: a replica in the ISR is removed from it unless it is the last member, "
                            "and a leader is written out as leader -1 (conditional write, leader epoch + 1, "
                            "LeaderAndIsr to the others)",
    "TopicChange": "the controller's /brokers/topics watch fires for a new topic (onNewPartitionCreation): "
                   "its replicas go NewReplica and its partitions NewPartition; the NewPartition election "
                   "(ElectLeader strategy 'new') then takes them OnlinePartition and the live replicas "
                   "OnlineReplica",
    "IsrChangeNotification": "the controller reads an ISR change the leader wrote to ZooKeeper",
    "ControlledShutdown": "a broker asks the controller to move its leadership away before it stops",
    "StartTopicDeletion": "the controller starts deleting the topic in /admin/delete_topics",
    "StartReplicaDeletion": "ReplicaDeletionStarted (StopReplica sent) or ReplicaDeletionIneligible "
                            "(broker down) for one replica",
    "RetryReplicaDeletion": "a ReplicaDeletionIneligible replica whose broker is back goes OfflineReplica",
    "CompleteTopicDeletion": "every replica deleted: the controller removes the topic from ZooKeeper",
}


# -- helpers --------------------------------------------------------------------------

def with_ctx(s: KafkaState, c: int, ctx) -> KafkaState:
    b = s.brokers[c]
    return s._replace(brokers=put(s.brokers, c, b._replace(ctx=ctx)))


def live_brokers(ctx: ControllerContext) -> tuple:
    """Per broker, whether the controller believes it live, a broker in controlled
    shutdown included: Kafka's ``liveOrShuttingDownBrokerIds``, which requests go to."""
    return tuple(x > 0 for x in ctx.live)


def electable_brokers(ctx: ControllerContext) -> tuple:
    """Per broker, whether the controller may elect it: live and not in controlled
    shutdown.  Kafka's elections take their live replicas from ``liveBrokerIds``
    (``liveOrShuttingDownBrokerIds -- shuttingDownBrokerIds``): 0.10's and 0.11's
    ``OfflinePartitionLeaderSelector``, ``ReassignedPartitionLeaderSelector``,
    ``PreferredReplicaPartitionLeaderSelector`` and ``initializeLeaderAndIsrForPartition``,
    2.x's ``ControllerContext.isReplicaOnline`` (``includeShuttingDownBrokers`` false) in
    every ``PartitionStateMachine`` election, so a broker that asked to stop never
    becomes leader (it leaves the ISR of an offline election too)."""
    return tuple(x > 0 and not sd for x, sd in zip(ctx.live, ctx.shutting_down))


def election_recipients(ctx: ControllerContext, strategy: str) -> tuple:
    """Per broker, whether an election's LeaderAndIsr goes to its replica.  An offline or
    NewPartition one leaves out a broker in controlled shutdown: its recipients are the
    live replicas of ``liveBrokerIds`` (0.10's and 0.11's ``OfflinePartitionLeaderSelector``
    and ``initializeLeaderAndIsrForPartition``; 2.x's ``leaderForOffline`` by
    ``isReplicaOnline``, and ``initializeLeaderAndIsrForPartitions`` sends to the new
    ISR, the same set).  A controlled-shutdown election sends to
    ``liveOrShuttingDownBrokerIds`` (0.10, 0.11, 2.1; 2.0's ``leaderForControlledShutdown``
    leaves shutting-down brokers out, KAFKA-7482) and a preferred one to the AR, of
    which only the live brokers have a channel."""
    return electable_brokers(ctx) if strategy in ("new", "offline") else live_brokers(ctx)


def send_leader_and_isr(m, s: KafkaState, epoch: int, p: int, li: LeaderIsr, targets, replicas: tuple,
                         live: tuple) -> KafkaState:
    """LeaderAndIsr for partition p to each target broker; ``replicas`` is the AR the
    controller knows (its cache), which the brokers adopt with the leadership.  Kafka's
    ``ControllerBrokerRequestBatch.addLeaderAndIsrRequestForBrokers`` adds an
    UpdateMetadata for the partition to every live broker (``live``: per broker, its
    session number as the controller knows it, 0 dead) to the same batch, sent after
    the LeaderAndIsr requests (``send_update_metadata``)."""
    req = LeaderAndIsr(epoch, p, li.leader, li.leader_epoch, li.isr, li.version, replicas)
    brokers = list(s.brokers)
    for r in targets:
        br = brokers[r]
        brokers[r] = br._replace(inbox=add_request(br.inbox, req))
    return send_update_metadata(m, s._replace(brokers=tuple(brokers)), epoch, p, li, live)


def send_stop_replica(s: KafkaState, ctx: ControllerContext, p: int, replicas, delete: bool) -> KafkaState:
    """StopReplica(delete) for ``p`` to each of ``replicas`` the controller believes
    live: ``ControllerChannelManager.sendRequest`` drops a request to a broker it
    removed when it handled that broker's failure."""
    req = StopReplica(ctx.epoch, p, delete)
    brokers = list(s.brokers)
    for x in replicas:
        if ctx.live[x] > 0:
            brokers[x] = brokers[x]._replace(inbox=add_request(brokers[x].inbox, req))
    return s._replace(brokers=tuple(brokers))


def newer_mark(s: KafkaState, ctx: ControllerContext, p: int) -> bool:
    """Kafka's "already written by another controller" check: before it elects a
    leader (``PartitionStateMachine.electLeaderForPartition`` in 0.10 and 0.11,
    ``doElectLeaderForPartitions`` in 2.0 and 2.1), removes a replica from the ISR
    (``KafkaController.removeReplicaFromIsr`` in 0.10 and 0.11,
    ``ReplicaStateMachine.getTopicPartitionStatesFromZk`` under ``removeReplicasFromIsr``
    in 2.0 and 2.1) or bumps a leader epoch for a reassignment
    (``KafkaController.updateLeaderEpoch``), the controller reads the partition's state
    znode and gives that partition up, without resigning and without a LeaderAndIsr,
    when the controller epoch written in it is greater than its own.  It is not a
    fence on the write: it is checked on the read, in every version, with
    ``zk_epoch_fencing`` or without.  Kafka writes conditionally on the version it
    read and reads again when that fails, so a newer controller's write between the
    read and the write is seen by the check on the next read; the model's step, read,
    check and write in one, is that loop's outcome."""
    return s.zk.partitions[p].controller_epoch > ctx.epoch


def conditional_write(m, s: KafkaState, c: int, p: int, leader: int, isr: tuple, bump: bool):
    """The controller's conditional update of a partition's state znode.

    Kafka 2.x reads the partition state from ZooKeeper right before it elects a
    leader or removes a replica from the ISR, decides on what it read, and writes
    conditionally on the version read (seed 000 step 3.1-3.3).  The model takes the
    read, the decision and the write as one step, so the version condition always
    holds; what fences a zombie is the controller-epoch condition that
    ``zk_epoch_fencing`` adds: a controller that finds it has moved resigns on the
    spot and writes nothing.  Returns ``(state, written)``.
    """
    ctx = s.brokers[c].ctx
    zkp = s.zk.partitions[p]
    if m.cfg.zk_epoch_fencing and s.zk.controller_epoch != ctx.epoch:
        return with_ctx(s, c, None), False
    new = LeaderIsr(leader, zkp.leader_epoch + 1 if bump else zkp.leader_epoch, isr,
                    ctx.epoch, zkp.version + 1)
    s = s._replace(zk=s.zk._replace(partitions=put(s.zk.partitions, p, new)))
    s = with_ctx(s, c, ctx._replace(partitions=put(ctx.partitions, p, new)))
    return s, True


def running_controllers(s: KafkaState):
    """Brokers that believe they are the controller and are running, zombies
    included: they work through the elections and deletions already queued in
    their (stale) context."""
    for c, b in enumerate(s.brokers):
        if b.ctx is not None and b.alive:
            yield c, b.ctx


def watching_controllers(s: KafkaState):
    """Controllers that still receive ZooKeeper watch events.  A zombie's watches
    went with its session, so it reacts to no new broker, ISR, shutdown or
    deletion event; it only finishes what its context already holds."""
    c = s.zk.controller
    if c != NO_LEADER:
        b = s.brokers[c]
        if b.ctx is not None and b.alive:
            yield c, b.ctx


# -- ElectController ------------------------------------------------------------------

def elect_controller_enabled(m, s: KafkaState, out: list) -> None:
    zk = s.zk
    if zk.controller != NO_LEADER:
        return
    for b, br in enumerate(s.brokers):
        if br.alive and br.ctx is None and zk.sessions[b] > 0:
            out.append(action("ElectController", broker=b))


def elect_controller(m, s: KafkaState, a: Action) -> KafkaState:
    b = a.get("broker")
    zk = s.zk
    epoch = zk.controller_epoch + 1
    live = tuple(x if x > 0 else 0 for x in zk.sessions)
    pstates, rstates = [], []
    for p, zkp in enumerate(zk.partitions):
        ar = zk.ar[p]
        slots = m.ar[p]
        if not zk.topic:
            pstates.append(NON_EXISTENT_PARTITION)
            rstates.append(tuple(NON_EXISTENT_REPLICA for _ in slots))
            continue
        if zkp.version == NO_VERSION:
            pstates.append(NEW_PARTITION)
        elif zkp.leader != NO_LEADER and live[zkp.leader]:
            pstates.append(ONLINE_PARTITION)
        else:
            pstates.append(OFFLINE_PARTITION)
        # ReplicaStateMachine.startup: initializeReplicaState marks the replicas on dead
        # brokers ReplicaDeletionIneligible "to be on the safer side", then the live ones
        # go OnlineReplica.  That is all in 0.10 to 2.2, the versions the model follows:
        # 2.3 (KAFKA-3143) added "Triggering offline replica state changes", the dead
        # replicas' OfflineReplica (with its ISR and leader -1 writes) before the
        # elections; the model leaves it out (docs/model.md).
        # Slots outside the AR hold no replica (NonExistentReplica).
        rstates.append(tuple((ONLINE_REPLICA if live[r] else REPLICA_DELETION_INELIGIBLE) if r in ar
                             else NON_EXISTENT_REPLICA for r in slots))
    # initializePartitionReassignment: a pending /admin/reassign_partitions is resumed
    # from the AR in ZooKeeper, whatever step the predecessor reached.
    reassigning = tuple(Reassignment(rar, zk.ar[p], "0") if rar and zk.topic else None
                        for p, rar in enumerate(zk.reassign))
    ctx = ControllerContext(epoch, live, zk.partitions, tuple(pstates), tuple(rstates),
                            tuple(False for _ in s.brokers), False, zk.ar, reassigning)
    s = s._replace(zk=zk._replace(controller=b, controller_epoch=epoch))
    s = with_ctx(s, b, ctx)
    if zk.topic:
        # onControllerFailover: UpdateMetadata for every partition to every live broker
        # (from 0.11; 0.10 sends it last), then each live replica's LeaderAndIsr (the
        # replica state machine's startup).
        if failover_sends_ahead(m.cfg):
            s = send_all(m, s, epoch, zk.partitions, live)
        for p, zkp in enumerate(zk.partitions):
            if zkp.version != NO_VERSION:
                s = send_leader_and_isr(m, s, epoch, p, zkp, [r for r in zk.ar[p] if live[r]], zk.ar[p], live)
    return s


# -- broker changes -------------------------------------------------------------------

def broker_change_enabled(m, s: KafkaState, out: list) -> None:
    sessions = s.zk.sessions
    for c, ctx in watching_controllers(s):
        for b, seen in enumerate(ctx.live):
            now = sessions[b]
            if seen > 0 and now != seen:
                out.append(action("BrokerFailure", controller=c, broker=b))
            elif seen == 0 and now > 0:
                out.append(action("BrokerStartup", controller=c, broker=b))


def broker_failure(m, s: KafkaState, a: Action) -> KafkaState:
    c, b = a.get("controller"), a.get("broker")
    ctx = s.brokers[c].ctx
    pstates, rstates = list(ctx.partition_states), list(ctx.replica_states)
    owed = set(ctx.offline)
    for p, ar in enumerate(ctx.ar):   # replicasOnBrokers: from the cached AR
        if b not in ar:
            continue
        i = m.ar[p].index(b)
        rs = rstates[p]
        if rs[i] == REPLICA_DELETION_STARTED:
            rstates[p] = put(rs, i, REPLICA_DELETION_INELIGIBLE)
        # onReplicasBecomeOffline: the replicas not queued for deletion go OfflineReplica
        # after the elections, each in a RemoveReplicaFromIsr step this event owes.
        if not ctx.deleting and legal_replica(rs[i], OFFLINE_REPLICA):
            owed.add((p, b))
        if ctx.partitions[p].leader == b and pstates[p] in (ONLINE_PARTITION, NEW_PARTITION):
            pstates[p] = OFFLINE_PARTITION
    ctx = ctx._replace(live=put(ctx.live, b, 0), shutting_down=put(ctx.shutting_down, b, False),
                       partition_states=tuple(pstates), replica_states=tuple(rstates), offline=tuple(sorted(owed)))
    s = with_ctx(s, c, ctx)
    if OFFLINE_PARTITION in ctx.partition_states and not s.ghost.inv_partition_offline:
        s = s._replace(ghost=s.ghost._replace(inv_partition_offline=True))
    # onBrokerFailure: if no partition lost its leader, the brokers learn of the failure
    # from an UpdateMetadata to every live broker (elections and ISR removals send theirs).
    if s.zk.topic and (ctx.deleting or not any(li.leader == b for li in ctx.partitions)):
        s = send_all(m, s, ctx.epoch, ctx.partitions, ctx.live, ahead=False)
    return s


def broker_startup(m, s: KafkaState, a: Action) -> KafkaState:
    c, b = a.get("controller"), a.get("broker")
    ctx = s.brokers[c].ctx
    rstates = list(ctx.replica_states)
    targets = []
    for p, ar in enumerate(ctx.ar):
        if b not in ar:
            continue
        i = m.ar[p].index(b)
        if not ctx.deleting and ctx.replica_states[p][i] in (OFFLINE_REPLICA, REPLICA_DELETION_INELIGIBLE, NEW_REPLICA):
            rstates[p] = put(rstates[p], i, ONLINE_REPLICA)
        # A partition about to be elected (OfflinePartition) is not sent its cached,
        # dead leadership: Kafka elects it in the same event and the broker gets the
        # result (ElectLeader sends it here).
        if ctx.partitions[p].version != NO_VERSION and ctx.partition_states[p] == ONLINE_PARTITION:
            targets.append(p)
    # Only without controller_event_order can a startup come before the failure event's
    # OfflineReplica steps; the restarted replicas are online again and owe none.
    ctx = ctx._replace(live=put(ctx.live, b, s.zk.sessions[b]), replica_states=tuple(rstates),
                       offline=tuple(x for x in ctx.offline if x[1] != b))
    s = with_ctx(s, c, ctx)
    # onBrokerStartup: UpdateMetadata for every partition to every live broker (the new
    # one included), then the new broker's LeaderAndIsr.
    if s.zk.topic:
        s = send_all(m, s, ctx.epoch, ctx.partitions, ctx.live)
    for p in targets:
        s = send_leader_and_isr(m, s, ctx.epoch, p, ctx.partitions[p], [b], ctx.ar[p], ctx.live)
    return s


# -- leader elections -----------------------------------------------------------------

def _election(m, s: KafkaState, ctx: ControllerContext, p: int):
    """The election the controller would run for partition p now, if any:
    ``(strategy, leader, isr, clean)``."""
    if ctx.deleting:
        return None
    pstate = ctx.partition_states[p]
    ar = ctx.ar[p]
    live = electable_brokers(ctx)   # liveBrokerIds: a broker in controlled shutdown is never elected
    cached = s.zk.partitions[p]   # read from ZooKeeper, as Kafka 2.x does before electing
    if pstate == NEW_PARTITION:
        # NewPartition's write is a create; if the znode already exists (another
        # controller created it) the create fails and Kafka does not retry.
        if cached.version != NO_VERSION or ctx.partitions[p].version != NO_VERSION:
            return None
        r = election.new_partition(ar, live)
        return ("new",) + r if r else None
    if newer_mark(s, ctx, p):
        return None   # the election fails for this partition; the controller stays
    if pstate == OFFLINE_PARTITION:
        unclean = m.cfg.unclean_leader_election and s.budget.unclean_elections > 0
        r = election.offline_partition(ar, cached.isr, live, unclean)
        return ("offline",) + r if r else None
    if pstate != ONLINE_PARTITION:
        return None
    if cached.leader != NO_LEADER and ctx.shutting_down[cached.leader]:
        r = election.controlled_shutdown(ar, cached.isr, live, ctx.shutting_down)
        return ("controlled_shutdown",) + r if r else None
    # Kafka leaves partitions being reassigned out of preferred-replica election.
    if m.cfg.preferred_election and not ctx.shutting_down[ar[0]] and ctx.reassigning[p] is None:
        r = election.preferred_replica(ar, cached.leader, cached.isr, live)
        return ("preferred",) + r if r else None
    return None


def elect_leader_enabled(m, s: KafkaState, out: list) -> None:
    if not s.zk.topic:
        return
    for c, ctx in running_controllers(s):
        for p in range(m.cfg.partitions):
            e = _election(m, s, ctx, p)
            if e:
                strategy, leader, _isr, clean = e
                out.append(action("ElectLeader", controller=c, partition=p, leader=leader,
                                  strategy=strategy, clean=clean))


def elect_leader(m, s: KafkaState, a: Action) -> KafkaState:
    c, p = a.get("controller"), a.get("partition")
    ctx = s.brokers[c].ctx
    strategy, leader, isr, clean = _election(m, s, ctx, p)
    was_offline = ctx.partition_states[p] == OFFLINE_PARTITION
    s, written = conditional_write(m, s, c, p, leader, isr, bump=True)
    if not written:
        return s
    ctx = s.brokers[c].ctx
    ctx = ctx._replace(partition_states=put(ctx.partition_states, p, ONLINE_PARTITION))
    if strategy == "new":
        # onNewPartitionCreation: the partition's live NewReplica replicas go OnlineReplica
        # (a dead one stays NewReplica until its broker starts).
        rs = tuple(ONLINE_REPLICA if st == NEW_REPLICA and ctx.live[r] else st
                   for r, st in zip(m.ar[p], ctx.replica_states[p]))
        ctx = ctx._replace(replica_states=put(ctx.replica_states, p, rs))
    s = with_ctx(s, c, ctx)
    to = election_recipients(ctx, strategy)
    s = send_leader_and_isr(m, s, ctx.epoch, p, ctx.partitions[p], [r for r in ctx.ar[p] if to[r]], ctx.ar[p],
                             ctx.live)
    g = s.ghost
    if not clean:
        s = s._replace(budget=s.budget._replace(unclean_elections=s.budget.unclean_elections - 1))
        g = g._replace(inv_unclean_election=True)
    if was_offline and g.inv_partition_offline:
        g = g._replace(inv_partition_back_online=True)
    if strategy == "controlled_shutdown":
        g = g._replace(inv_shutdown_moved_leader=True)
    return s._replace(ghost=g)


# -- ISR removal by the controller (OfflineReplica) -------------------------------------

def remove_from_isr_enabled(m, s: KafkaState, out: list) -> None:
    """The OfflineReplica transitions the controller's current event owes (``ctx.offline``,
    written by ``broker_failure`` and ``controlled_shutdown``), one step each.  A replica
    whose broker merely looks dead is not one: reassignment step 5 may take a dead
    broker's replica OnlineReplica, and no Kafka event takes it offline until that
    broker's next change."""
    if not s.zk.topic:
        return
    for c, ctx in running_controllers(s):
        if ctx.deleting:
            continue
        for p, r in ctx.offline:
            # ReplicaStateMachine.handleStateChanges skips an invalid transition
            if legal_replica(ctx.replica_states[p][m.ar[p].index(r)], OFFLINE_REPLICA):
                out.append(action("RemoveReplicaFromIsr", controller=c, partition=p, replica=r))


def remove_from_isr(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, r = a.get("controller"), a.get("partition"), a.get("replica")
    ctx = s.brokers[c].ctx
    s = with_ctx(s, c, ctx._replace(offline=tuple(x for x in ctx.offline if x != (p, r))))
    return remove_replica(m, s, c, p, r)


def remove_replica(m, s: KafkaState, c: int, p: int, r: int) -> KafkaState:
    """One OfflineReplica transition (``ReplicaStateMachine.doHandleStateChanges``, and
    ``removeReplicasFromIsr``, 1.1 to 2.x): read the partition's state in ZooKeeper and,
    if ``r`` is in the ISR, write it with leader -1 (``LeaderAndIsr.NoLeader``) if ``r``
    leads and with ``r`` out of the ISR unless it is the last member (0.10 and 0.11 keep
    the last member only with unclean election off; the model follows 2.x); then
    LeaderAndIsr to the other live replicas and UpdateMetadata.  A znode that a newer
    controller wrote fails the transition before the ISR is looked at (``newer_mark``):
    nothing is written and the replica keeps its state, as Kafka leaves a replica whose
    transition failed.  Either way the replica is sent StopReplica(delete=false), so
    that it stops fetching: Kafka batches it before the ISR removal, in every version
    (a controlled shutdown's follower is the only live one; a dead broker's is dropped).
    A write the controller-epoch fence fails sends nothing: 2.1's
    ``ControllerMovedException`` leaves the batch unsent (Kafka's controlled shutdown
    has sent the follower its own StopReplica before, which the model leaves out:
    docs/model.md)."""
    cached = s.zk.partitions[p]   # removeReplicasFromIsr reads ZooKeeper first
    if newer_mark(s, s.brokers[c].ctx, p):
        return send_stop_replica(s, s.brokers[c].ctx, p, (r,), delete=False)
    if r in cached.isr:
        leader = NO_LEADER if cached.leader == r else cached.leader
        isr = cached.isr if len(cached.isr) == 1 else tuple(x for x in cached.isr if x != r)
        s, written = conditional_write(m, s, c, p, leader, isr, bump=True)
        if not written:
            return s
        ctx = s.brokers[c].ctx
        live = live_brokers(ctx)
        s = send_leader_and_isr(m, s, ctx.epoch, p, ctx.partitions[p],
                                 [x for x in ctx.ar[p] if live[x] and x != r], ctx.ar[p], ctx.live)
    ctx = s.brokers[c].ctx
    s = send_stop_replica(s, ctx, p, (r,), delete=False)
    i = m.ar[p].index(r)
    rs = put(ctx.replica_states[p], i, OFFLINE_REPLICA)
    return with_ctx(s, c, ctx._replace(replica_states=put(ctx.replica_states, p, rs)))


def topic_change_enabled(m, s: KafkaState, out: list) -> None:
    if not m.cfg.create_topic_after_start or not s.zk.topic:
        return
    for c, ctx in watching_controllers(s):
        if all(st == NON_EXISTENT_PARTITION for st in ctx.partition_states) and not ctx.deleting:
            out.append(action("TopicChange", controller=c))


def topic_change(m, s: KafkaState, a: Action) -> KafkaState:
    """``KafkaController.onNewPartitionCreation`` (the ``TopicChange`` event): the new
    topic's AR goes into the context, its replicas to NewReplica and its partitions
    to NewPartition (``initializeLeaderAndIsrForPartitions`` follows as ElectLeader)."""
    c = a.get("controller")
    ctx = s.brokers[c].ctx
    ar = s.zk.ar
    rstates = tuple(tuple(NEW_REPLICA if r in ar[p] else NON_EXISTENT_REPLICA for r in slots)
                    for p, slots in enumerate(m.ar))
    ctx = ctx._replace(ar=ar, partition_states=tuple(NEW_PARTITION for _ in ar), replica_states=rstates)
    return with_ctx(s, c, ctx)


def isr_notification_enabled(m, s: KafkaState, out: list) -> None:
    for c, ctx in watching_controllers(s):
        for p, zkp in enumerate(s.zk.partitions):
            cached = ctx.partitions[p]
            # /isr_change_notification: only the leader's own ISR writes notify.
            if (zkp.version > cached.version and zkp.leader == cached.leader
                    and zkp.leader_epoch == cached.leader_epoch):
                out.append(action("IsrChangeNotification", controller=c, partition=p))


def isr_notification(m, s: KafkaState, a: Action) -> KafkaState:
    c, p = a.get("controller"), a.get("partition")
    ctx = s.brokers[c].ctx
    s = with_ctx(s, c, ctx._replace(partitions=put(ctx.partitions, p, s.zk.partitions[p])))
    # processUpdateNotifications: UpdateMetadata for the partition to every live broker.
    return send_update_metadata(m, s, ctx.epoch, p, s.zk.partitions[p], ctx.live)


# -- controlled shutdown ------------------------------------------------------------------

def controlled_shutdown_enabled(m, s: KafkaState, out: list) -> None:
    """KafkaController.controlledShutdown: a live broker asks to stop.  When the asker is
    the active controller itself (KafkaServer.controlledShutdown sends the request to
    whichever broker is controller, itself included), its final stop loses /controller:
    that is a controller failover, and ShutdownBroker is bounded by that budget.  So the
    request is offered only while its stop can still happen; otherwise the broker would
    wait in controlled shutdown for ever, a state real Kafka never rests in (the broker
    stops after the controller's answer), and ReassignmentCompletesWhenQuiescent would
    take it for a quiescent cluster (found by ``kmc simulate --preset data-kip320-wide
    --seed 1``)."""
    if s.budget.controlled_shutdowns == 0:
        return
    for c, ctx in watching_controllers(s):
        for b, seen in enumerate(ctx.live):
            if seen > 0 and not ctx.shutting_down[b] and s.brokers[b].alive and may_stop(s, b):
                out.append(action("ControlledShutdown", controller=c, broker=b))


def controlled_shutdown(m, s: KafkaState, a: Action) -> KafkaState:
    c, b = a.get("controller"), a.get("broker")
    ctx = s.brokers[c].ctx
    # doControlledShutdown: leadership moves in ElectLeader(strategy='controlled_shutdown');
    # the replicas of the partitions the broker follows (AR of more than one, a leader
    # known, not queued for deletion) go OfflineReplica in RemoveReplicaFromIsr steps.
    owed = set(ctx.offline)
    if not ctx.deleting:
        for p, ar in enumerate(ctx.ar):
            li = ctx.partitions[p]
            if (b in ar and len(ar) > 1 and li.version != NO_VERSION and li.leader != b
                    and legal_replica(ctx.replica_states[p][m.ar[p].index(b)], OFFLINE_REPLICA)):
                owed.add((p, b))
    ctx = ctx._replace(shutting_down=put(ctx.shutting_down, b, True), offline=tuple(sorted(owed)))
    s = with_ctx(s, c, ctx)
    return s._replace(budget=s.budget._replace(controlled_shutdowns=s.budget.controlled_shutdowns - 1))


# -- topic deletion ---------------------------------------------------------------------------

def deletion_enabled(m, s: KafkaState, out: list) -> None:
    if not m.cfg.delete_topic_enable or not s.zk.topic:
        return
    for c, ctx in running_controllers(s):
        if not ctx.deleting:
            # A topic with a reassignment pending is ineligible for deletion (Kafka 2.x).
            if (s.zk.delete_topic and s.zk.controller == c and not any(s.zk.reassign)
                    and all(r is None for r in ctx.reassigning)):
                out.append(action("StartTopicDeletion", controller=c))
            continue
        all_done = True
        live = live_brokers(ctx)
        for p, ar in enumerate(ctx.ar):
            for r in ar:
                st = ctx.replica_states[p][m.ar[p].index(r)]
                if st != REPLICA_DELETION_SUCCESSFUL:
                    all_done = False
                if st == OFFLINE_REPLICA:
                    out.append(action("StartReplicaDeletion", controller=c, partition=p, replica=r))
                elif st == REPLICA_DELETION_INELIGIBLE and live[r]:
                    out.append(action("RetryReplicaDeletion", controller=c, partition=p, replica=r))
        if all_done:
            out.append(action("CompleteTopicDeletion", controller=c))


def start_topic_deletion(m, s: KafkaState, a: Action) -> KafkaState:
    c = a.get("controller")
    ctx = s.brokers[c].ctx
    rstates = tuple(
        tuple(OFFLINE_REPLICA if legal_replica(st, OFFLINE_REPLICA) else st for st in rs)
        for rs in ctx.replica_states)
    pstates = tuple(OFFLINE_PARTITION if legal_partition(st, OFFLINE_PARTITION) else st
                    for st in ctx.partition_states)
    return with_ctx(s, c, ctx._replace(deleting=True, replica_states=rstates, partition_states=pstates, offline=()))


def start_replica_deletion(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, r = a.get("controller"), a.get("partition"), a.get("replica")
    ctx = s.brokers[c].ctx
    i = m.ar[p].index(r)
    st = REPLICA_DELETION_STARTED if ctx.live[r] > 0 else REPLICA_DELETION_INELIGIBLE
    s = send_stop_replica(s, ctx, p, (r,), delete=True)
    ctx = s.brokers[c].ctx
    return with_ctx(s, c, ctx._replace(replica_states=put(ctx.replica_states, p, put(ctx.replica_states[p], i, st))))


def retry_replica_deletion(m, s: KafkaState, a: Action) -> KafkaState:
    c, p, r = a.get("controller"), a.get("partition"), a.get("replica")
    ctx = s.brokers[c].ctx
    i = m.ar[p].index(r)
    return with_ctx(s, c, ctx._replace(
        replica_states=put(ctx.replica_states, p, put(ctx.replica_states[p], i, OFFLINE_REPLICA))))


def complete_topic_deletion(m, s: KafkaState, a: Action) -> KafkaState:
    c = a.get("controller")
    ctx = s.brokers[c].ctx
    if m.cfg.zk_epoch_fencing and s.zk.controller_epoch != ctx.epoch:
        return with_ctx(s, c, None)
    n = m.cfg.partitions
    ctx = ctx._replace(
        deleting=False,
        partition_states=tuple(NON_EXISTENT_PARTITION for _ in range(n)),
        replica_states=tuple(tuple(NON_EXISTENT_REPLICA for _ in ar) for ar in m.ar),
        partitions=tuple(NO_STATE for _ in range(n)))
    s = s._replace(zk=s.zk._replace(topic=False, delete_topic=False,
                                    partitions=tuple(NO_STATE for _ in range(n))))
    return with_ctx(s, c, ctx)


ENABLED = (
    elect_controller_enabled, broker_change_enabled, topic_change_enabled, elect_leader_enabled,
    remove_from_isr_enabled, isr_notification_enabled, controlled_shutdown_enabled, deletion_enabled,
)

APPLY = {
    "ElectController": elect_controller,
    "BrokerFailure": broker_failure,
    "BrokerStartup": broker_startup,
    "ElectLeader": elect_leader,
    "RemoveReplicaFromIsr": remove_from_isr,
    "IsrChangeNotification": isr_notification,
    "TopicChange": topic_change,
    "ControlledShutdown": controlled_shutdown,
    "StartTopicDeletion": start_topic_deletion,
    "StartReplicaDeletion": start_replica_deletion,
    "RetryReplicaDeletion": retry_replica_deletion,
    "CompleteTopicDeletion": complete_topic_deletion,
}
