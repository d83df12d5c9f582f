"""Broker-side actions: LeaderAndIsr and StopReplica handling (§4 of the protocol
reference, seed 000 "LeaderAndIsrRequest响应过程") and the leader's ISR changes.

A request in flight may be delivered in any order; delivery is the only way a
broker learns what the controller decided.
"""

from __future__ import annotations

from checker.model import Action, action
from spec import datapath, metadata
from spec.state import (
    NO_LEADER, NO_STATE, REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL,
    KafkaState, LeaderAndIsr, LeaderIsr, StopReplica, UpdateMetadata, put,
)

DOCS = {
    "DeliverLeaderAndIsr": "a broker handles a LeaderAndIsr request in flight: rejected if its controller "
                           "epoch is older than the broker has seen (StaleControllerEpoch) or its leader "
                           "epoch is not newer (StaleLeaderEpoch); else the broker becomes leader or follower, "
                           "except that a broker told to follow leader -1, or (metadata_cache) a leader its "
                           "cache does not list as live, keeps its partition as it was (ReplicaManager."
                           "makeFollowers: the new leader is unavailable)",
    "DeliverStopReplica": "a broker handles StopReplica: it stops fetching; with delete=true it also deletes "
                          "its replica (log included) and, during topic deletion, the controller that sent it "
                          "records ReplicaDeletionSuccessful",
    "DeliverUpdateMetadata": "a broker handles UpdateMetadata (metadata_cache only): rejected if its "
                             "controller epoch is older than the broker has seen; else its metadata cache "
                             "takes the partition's leader (no leader-epoch check, as Kafka's MetadataCache) "
                             "and the live brokers",
    "ShrinkIsr": "the leader removes a follower that fell behind or died from the ISR "
                 "(conditional write on the znode version it holds)",
    "ExpandIsr": "the leader adds back a follower that follows it in the current leader epoch",
}


def deliver_enabled(m, s: KafkaState, out: list) -> None:
    for b, br in enumerate(s.brokers):
        if not br.alive:
            continue
        for req in br.inbox:
            # The AR a request carries is an argument only when reassignment is
            # configured (without it, it is the static AR), and StopReplica's delete
            # flag only then or when it is false (an OfflineReplica's), so that actions
            # (hence traces) keep their earlier spelling.
            if type(req) is UpdateMetadata:
                if not metadata.update_metadata_waits(br, req):
                    out.append(action("DeliverUpdateMetadata", broker=b, partition=req.partition,
                                      controller_epoch=req.controller_epoch, leader=req.leader,
                                      leader_epoch=req.leader_epoch, live=req.live))
                continue
            if type(req) is LeaderAndIsr:
                if m.cfg.metadata_cache and metadata.leader_and_isr_waits(br, req):
                    continue
                extra = {"replicas": req.replicas} if m.reassign_targets else {}
                out.append(action("DeliverLeaderAndIsr", broker=b, partition=req.partition,
                                  controller_epoch=req.controller_epoch, leader=req.leader,
                                  leader_epoch=req.leader_epoch, isr=req.isr, version=req.version, **extra))
            else:
                if m.reassign_targets and any(type(q) is LeaderAndIsr and q.partition == req.partition
                                              and q.controller_epoch == req.controller_epoch for q in br.inbox):
                    continue   # FIFO: see _stop_replica_waits
                # delete=false is named outside reassignment too (an OfflineReplica's);
                # delete=true, a topic deletion's, keeps its old name there
                extra = {"delete": req.delete} if m.reassign_targets or not req.delete else {}
                out.append(action("DeliverStopReplica", broker=b, partition=req.partition,
                                  controller_epoch=req.controller_epoch, **extra))


# A controller's channel to a broker is FIFO; the model keeps requests in flight as a
# set (docs/model.md, where the model is coarser).  Reassignment needs one ordering: a StopReplica is delivered after the
# LeaderAndIsr requests its controller sent earlier for that partition.  Otherwise a
# LeaderAndIsr from before a replica was deleted (delete=true forgets its leader
# epoch) would make the deleted replica a leader again.  The controller sends a
# removed replica nothing for the partition after its StopReplica, so "earlier" is
# "from the same controller epoch".  Applied only when reassignment is configured,
# so that every other preset keeps its pinned numbers.  OfflineReplica's StopReplica
# (to a controlled shutdown's follower) breaks that premise: a LeaderAndIsr sent later
# (a reassignment's epoch bump) then holds it back, so the broker stops following after
# that LeaderAndIsr instead of before it.  Every state in between is still reached, so
# no safety verdict changes; docs/model.md lists it.


def _request(m, s: KafkaState, a: Action):
    p = a.get("partition")
    if a.name == "DeliverLeaderAndIsr":
        # Without reassignment the AR in ZooKeeper never changes, so it is the AR every
        # request carries (the state's, not the configuration's: a broker permutation,
        # spec/symmetry.py, renames it).
        return LeaderAndIsr(a.get("controller_epoch"), p, a.get("leader"), a.get("leader_epoch"), a.get("isr"),
                            a.get("version"), a.get("replicas", s.zk.ar[p]))
    if a.name == "DeliverUpdateMetadata":
        um = UpdateMetadata(a.get("controller_epoch"), p, a.get("leader"), a.get("leader_epoch"), a.get("live"), False)
        # at most one of the two is in flight (metadata.send_update_metadata)
        return um if um in s.brokers[a.get("broker")].inbox else um._replace(ahead=True)
    return StopReplica(a.get("controller_epoch"), p, a.get("delete", True))


def _fenced(m, br, req) -> bool:
    """StaleControllerEpoch: the check that fences a zombie controller's requests."""
    return m.cfg.controller_epoch_fencing and req.controller_epoch < br.controller_epoch_seen


def _receive(m, s: KafkaState, a: Action):
    """Take the delivered request out of the broker's inbox: ``(b, req, broker,
    fenced)``, the broker already without the request."""
    b = a.get("broker")
    req = _request(m, s, a)
    br = s.brokers[b]
    fenced = _fenced(m, br, req)
    return b, req, br._replace(inbox=tuple(r for r in br.inbox if r != req)), fenced


def deliver_leader_and_isr(m, s: KafkaState, a: Action) -> KafkaState:
    b, req, br, fenced = _receive(m, s, a)
    if not fenced:
        seen = max(br.controller_epoch_seen, req.controller_epoch)
        current = br.partitions[req.partition]
        parts = br.partitions
        applied = req.leader_epoch > current.leader_epoch and (req.leader == b or metadata.leader_alive(m, br, req.leader))
        assigned = br.assigned
        if applied:
            parts = put(parts, req.partition, LeaderIsr(req.leader, req.leader_epoch, req.isr,
                                                        req.controller_epoch, req.version))
            assigned = put(assigned, req.partition, req.replicas)
        br = br._replace(controller_epoch_seen=seen, partitions=parts, assigned=assigned)
        s = s._replace(brokers=put(s.brokers, b, br))
        if applied and m.cfg.data_path:
            if req.leader == b:
                s = datapath.on_become_leader(m, s, b, req.partition, current.leader == b)
            elif req.leader != NO_LEADER:
                s = datapath.on_become_follower(m, s, b, req.partition, current.leader)
        return s
    return s._replace(brokers=put(s.brokers, b, br))


def deliver_update_metadata(m, s: KafkaState, a: Action) -> KafkaState:
    """``KafkaApis.handleUpdateMetadataRequest`` -> ``ReplicaManager.maybeUpdateMetadataCache``:
    a request from an older controller epoch than the broker has seen is refused
    (STALE_CONTROLLER_EPOCH, with ``controller_epoch_fencing``); otherwise
    ``MetadataCache.updateCache`` takes the partition's state as it is, with no
    leader-epoch check, and the broker remembers the controller epoch."""
    b, req, br, fenced = _receive(m, s, a)
    if not fenced:
        br = metadata.apply_update_metadata(br, req)
        br = br._replace(controller_epoch_seen=max(br.controller_epoch_seen, req.controller_epoch))
    return s._replace(brokers=put(s.brokers, b, br))


def deliver_stop_replica(m, s: KafkaState, a: Action) -> KafkaState:
    b, req, br, fenced = _receive(m, s, a)
    if fenced:
        return s._replace(brokers=put(s.brokers, b, br))
    p = req.partition
    seen = max(br.controller_epoch_seen, req.controller_epoch)
    if req.delete:
        # The replica is deleted, log included: a later assignment starts it empty.
        replicas = put(br.replicas, p, m.fresh_replicas()[p]) if br.replicas else br.replicas
        br = br._replace(controller_epoch_seen=seen, partitions=put(br.partitions, p, NO_STATE),
                         assigned=put(br.assigned, p, ()), replicas=replicas)
    else:
        # Stop fetching: the fetcher goes (ReplicaManager.stopReplicas ->
        # removeFetcherForPartitions), and with it a truncation it still owed.  Nothing
        # else changes: the log, the leader epoch (Kafka keeps the Partition, so a stale
        # LeaderAndIsr is still refused) and a leader's leadership, which Kafka's
        # stopReplica(delete=false) leaves alone (a StopReplica sent before the
        # LeaderAndIsr that made the broker leader may arrive after it here, where
        # requests in flight form a set).
        li = br.partitions[p]
        if li.version != NO_STATE.version and li.leader != b:
            br = br._replace(partitions=put(br.partitions, p, li._replace(leader=NO_LEADER)))
        if br.replicas and br.replicas[p].truncating:
            br = br._replace(replicas=put(br.replicas, p, br.replicas[p]._replace(truncating=False)))
        br = br._replace(controller_epoch_seen=seen)
    s = s._replace(brokers=put(s.brokers, b, br))
    if not req.delete:
        return s
    # The response reaches the controller that sent the request, if it still runs
    # with that epoch; it records the replica as deleted.
    for c, cb in enumerate(s.brokers):
        ctx = cb.ctx
        if ctx is not None and cb.alive and ctx.epoch == req.controller_epoch and ctx.deleting:
            i = m.ar[req.partition].index(b)
            rs = ctx.replica_states[req.partition]
            if rs[i] == REPLICA_DELETION_STARTED:
                ctx = ctx._replace(replica_states=put(ctx.replica_states, req.partition,
                                                      put(rs, i, REPLICA_DELETION_SUCCESSFUL)))
                s = s._replace(brokers=put(s.brokers, c, cb._replace(ctx=ctx)))
    return s


def isr_change_enabled(m, s: KafkaState, out: list) -> None:
    if not s.zk.topic:
        return
    zkparts = s.zk.partitions
    for b, br in enumerate(s.brokers):
        if not br.alive:
            continue
        for p, li in enumerate(br.partitions):
            if li.leader != b or zkparts[p].version != li.version:
                continue  # not leader, or its conditional write would fail
            for f in br.assigned[p]:
                if f == b:
                    continue
                if f in li.isr:
                    if s.budget.isr_shrinks > 0:
                        out.append(action("ShrinkIsr", leader=b, partition=p, replica=f))
                elif m.cfg.data_path:
                    if datapath.isr_expand_allowed(m, s, b, p, f):
                        out.append(action("ExpandIsr", leader=b, partition=p, replica=f))
                else:
                    fb = s.brokers[f]
                    fl = fb.partitions[p]
                    # Caught up: the follower follows this leader in this leader epoch
                    # (without a data path, following is all that being in sync can mean).
                    if fb.alive and fl.leader == b and fl.leader_epoch == li.leader_epoch:
                        out.append(action("ExpandIsr", leader=b, partition=p, replica=f))


def _write_isr(s: KafkaState, b: int, p: int, isr: tuple) -> KafkaState:
    """The leader's conditional ISR write (``Partition.updateIsr``).  Kafka writes the
    controller epoch of the LeaderAndIsr's ``PartitionState``, the epoch the znode held
    at the version the leader cached; the write succeeds only at that version, so that
    is the znode's own epoch, which the znode keeps.  The leader's view keeps the epoch
    of the controller that sent it the request."""
    br = s.brokers[b]
    li = br.partitions[p]
    new = li._replace(isr=isr, version=li.version + 1)
    znode = new._replace(controller_epoch=s.zk.partitions[p].controller_epoch)
    s = s._replace(zk=s.zk._replace(partitions=put(s.zk.partitions, p, znode)))
    return s._replace(brokers=put(s.brokers, b, br._replace(partitions=put(br.partitions, p, new))))


def shrink_isr(m, s: KafkaState, a: Action) -> KafkaState:
    b, p, f = a.get("leader"), a.get("partition"), a.get("replica")
    isr = tuple(x for x in s.brokers[b].partitions[p].isr if x != f)
    s = _write_isr(s, b, p, isr)
    s = s._replace(budget=s.budget._replace(isr_shrinks=s.budget.isr_shrinks - 1),
                   ghost=s.ghost._replace(inv_isr_shrunk=True))
    if m.cfg.data_path:
        s = datapath.advance_hw(m, s, b, p)  # a smaller ISR may let the HW move
    return s


def expand_isr(m, s: KafkaState, a: Action) -> KafkaState:
    b, p, f = a.get("leader"), a.get("partition"), a.get("replica")
    isr = tuple(sorted(s.brokers[b].partitions[p].isr + (f,)))
    s = _write_isr(s, b, p, isr)
    if s.ghost.inv_isr_shrunk:
        s = s._replace(ghost=s.ghost._replace(inv_isr_reexpanded=True))
    return s


ENABLED = (deliver_enabled, isr_change_enabled)
APPLY = {
    "DeliverLeaderAndIsr": deliver_leader_and_isr,
    "DeliverStopReplica": deliver_stop_replica,
    "DeliverUpdateMetadata": deliver_update_metadata,
    "ShrinkIsr": shrink_isr,
    "ExpandIsr": expand_isr,
}
