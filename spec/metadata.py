"""UpdateMetadata and the brokers' metadata caches (``metadata_cache``).

A controller sends UpdateMetadata to every broker it believes live; a broker's
``MetadataCache`` keeps, per partition, the leader of the last one it applied, and
the live brokers of the last one (``MetadataCache.updateCache`` replaces
``aliveBrokers`` with every request).  Two readers: producers, which route by some
broker's cache (``KafkaApis.handleTopicMetadataRequest``), and
``ReplicaManager.makeFollowers``, which follows only a leader the cache lists as live.

The controller's channel to a broker is FIFO (``ControllerChannelManager``: one queue
per broker); the model keeps requests in flight as a set, so the orders that the
cache needs are rules here (``update_metadata_waits``, ``leader_and_isr_waits``),
within one controller epoch only: between controllers there is no order.
"""

from __future__ import annotations

from spec.state import NO_LEADER, KafkaState, LeaderAndIsr, LeaderIsr, UpdateMetadata, add_request, put


def live_ids(live: tuple) -> tuple:
    """The brokers a controller context's ``live`` (session number per broker, 0 dead)
    names: ``liveOrShuttingDownBrokerIds``."""
    return tuple(b for b, x in enumerate(live) if x > 0)


def send_update_metadata(m, s: KafkaState, epoch: int, p: int, li: LeaderIsr, live: tuple,
                         ahead: bool = False) -> KafkaState:
    """UpdateMetadata for partition p to every broker the controller believes live
    (``ControllerBrokerRequestBatch.addUpdateMetadataRequestForBrokers`` to
    ``liveOrShuttingDownBrokerIds``), with ``metadata_cache`` only: without it no
    action reads a broker's metadata cache (producers route to any broker that
    believes it leads, and every leader but -1 counts as live), so the requests would
    only multiply interleavings.  A request equal to one in flight but for ``ahead``
    is not sent twice: the second copy would find the cache already holding it."""
    if not m.cfg.metadata_cache:
        return s
    ids = live_ids(live)
    req = UpdateMetadata(epoch, p, li.leader, li.leader_epoch, ids, ahead)
    twin = req._replace(ahead=not ahead)
    brokers = list(s.brokers)
    for r in ids:
        if twin not in brokers[r].inbox:
            brokers[r] = brokers[r]._replace(inbox=add_request(brokers[r].inbox, req))
    return s._replace(brokers=tuple(brokers))


def send_all(m, s: KafkaState, epoch: int, partitions: tuple, live: tuple, ahead: bool = True) -> KafkaState:
    """``KafkaController.sendUpdateMetadataRequest(liveOrShuttingDownBrokerIds)`` on its
    own, ahead of the event's LeaderAndIsr requests: every partition's state (one with
    no state yet carries leader epoch -1: only the live brokers) to every live broker.
    ``onBrokerStartup`` does it in 0.10 to 2.1, so the new broker learns the live
    brokers before its LeaderAndIsr; ``onControllerFailover`` from 0.11 (0.10 sends it
    at the end of the failover, after the state machines' LeaderAndIsr).  With
    ``ahead`` false, the same request ordered as a batch's (``onBrokerFailure``'s)."""
    for p, li in enumerate(partitions):
        s = send_update_metadata(m, s, epoch, p, li, live, ahead=ahead)
    return s


def failover_sends_ahead(cfg) -> bool:
    """0.10 (``truncation=high_watermark``) sends the failover's UpdateMetadata last."""
    return cfg.truncation != "high_watermark"


def update_metadata_waits(br, um: UpdateMetadata) -> bool:
    """A batch sends its LeaderAndIsr requests before its UpdateMetadata: an
    UpdateMetadata waits for the LeaderAndIsr (leader epoch not newer) and the older
    UpdateMetadata (leader epoch older) its controller sent the broker for the
    partition.  An ``ahead`` one at a broker that has applied nothing of its
    controller epoch yet was sent before every request of that epoch there, and waits
    for nothing."""
    first = um.ahead and br.controller_epoch_seen < um.controller_epoch
    for q in br.inbox:
        if q.partition != um.partition or q.controller_epoch != um.controller_epoch:
            continue
        if type(q) is LeaderAndIsr and q.leader_epoch <= um.leader_epoch and not first:
            return True
        if type(q) is UpdateMetadata and q.leader_epoch < um.leader_epoch:
            return True
    return False


def leader_and_isr_waits(br, lai: LeaderAndIsr) -> bool:
    """With ``metadata_cache``: a LeaderAndIsr waits for the UpdateMetadata its
    controller sent the broker before it: one for the partition with an older leader
    epoch (a controller's leader epochs for a partition only grow), and, at a broker
    that has applied nothing of that controller epoch yet, an ``ahead`` one (Kafka's
    order at a broker's startup and at a failover: the broker learns the live brokers
    first, or ``makeFollowers`` would find its leader unavailable)."""
    first = br.controller_epoch_seen < lai.controller_epoch
    for q in br.inbox:
        if type(q) is not UpdateMetadata or q.controller_epoch != lai.controller_epoch:
            continue
        if (q.partition == lai.partition and q.leader_epoch < lai.leader_epoch) or (first and q.ahead):
            return True
    return False


def apply_update_metadata(br, req: UpdateMetadata):
    """``MetadataCache.updateCache``: the partition's leader (no leader-epoch check;
    none if the request carries no state for it) and the live brokers, replaced."""
    if req.leader_epoch >= 0:
        br = br._replace(metadata=put(br.metadata, req.partition, req.leader))
    return br._replace(alive_brokers=req.live)


def leader_alive(m, br, leader: int) -> bool:
    """``ReplicaManager.makeFollowers`` (the same in 0.10, 0.11, 2.0 and 2.1): a broker
    told to follow a leader that its ``MetadataCache.getAliveBrokers`` does not list
    stays as it was.  Leader -1 is never live.  Without ``metadata_cache`` the caches'
    live brokers are not modelled and every other leader counts as live."""
    if leader == NO_LEADER:
        return False
    return leader in br.alive_brokers if m.cfg.metadata_cache else True


def routed(s: KafkaState, b: int, p: int) -> bool:
    """A producer sends p's records to b if some running broker's metadata cache names
    b as p's leader and lists b as live (the producer asks any broker for metadata;
    ``MetadataCache.getPartitionMetadata`` answers LEADER_NOT_AVAILABLE, no leader,
    when the cached leader is not among its live brokers: 0.10 to 2.x)."""
    return any(br.alive and br.metadata[p] == b and b in br.alive_brokers for br in s.brokers)
