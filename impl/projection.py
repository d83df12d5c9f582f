"""The abstraction function of the conformance driver: from the reference broker's
state to the model's variables, and the checks of what the admin tools report.

The abstraction function ``observe`` reads ZooKeeper (through an admin session; each
partition's leader, leader epoch and ISR as kafka-topics --describe shows them), every
broker's ReplicaManager and controller context, the network and the logs, and returns
the model's variables ``zk`` and ``brokers`` (``budget`` and the ghost variables are
the model's own bookkeeping and are not projected).  Session numbers: the model numbers
a broker's registrations 1, 2, ...; here they are broker epochs (czxids), mapped to
their rank among the broker's registrations.  ``IGNORED`` lists what is left out.

At every observation the projection also checks what the model has no variable for
but a user reads: kafka-replica-verification's report (``ReplicaVerificationTool``)
against the logs, kafka-reassign-partitions --verify/--generate
(``ReassignPartitionsCommand``) against ZooKeeper, the tools' refusal of a missing
topic, the active controller's child watches (ZooKeeper's ``wchc``; Kafka's
``ZNodeChildChangeHandler``s) and the order of the merged state-change log (the seeds'
merge tool, ``StateChangeLogMerger``).  A disagreement raises: it is a bug of the tool
or the broker, not a divergence from the model.
"""

from __future__ import annotations

import json

from impl.admin import AdminError
from impl.controller import CHILD_WATCHES
from impl.driverbase import TOPIC, ClusterDriver
from impl.requests import LeaderAndIsrRequest, UpdateMetadataRequest
from impl.statechange import merge
from impl.statemachines import NON_EXISTENT_PARTITION, NON_EXISTENT_REPLICA
from impl.zkclient import NO_LEADER, TopicPartition, get_partition_reassignment

# What the projection leaves out, and why a bug there cannot go unseen (or cannot
# matter): each says where its effect is observed, or that nothing reads it.  Everything
# else of the cluster's state is observed (``observe``): the znodes' values, every
# running broker's partition views, fetchers' truncation, logs, leader epoch caches,
# HWs, metadata caches and controller context, and the requests in flight.
IGNORED = {
    "request.controller_id": "StopReplica responses are routed to it, so a wrong one leaves the deleting "
                             "controller's replica states behind (observed: ctx.replica_states); otherwise only "
                             "the state-change log reads it",
    "request.partition_controller_epoch": "the controller epoch of the partition's state in the controller's "
                                          "cache, which the leader writes with its ISR changes; a wrong one shows "
                                          "in the znode's controller epoch after that write (observed: "
                                          "zk.partitions)",
    "replica.partition_controller_epoch": "the same, as the leader keeps it (Partition.updateIsr writes it): "
                                          "observed in zk.partitions after each ISR write",
    "zk.isr_change_notification": "the controller's input only: a lost or extra notification changes whether "
                                  "IsrChangeNotification is enabled, and enabled sets are compared (and probed); "
                                  "the sequential names are read only to delete the znodes",
    "zk.admin.preferred_replica_election": "written by kafka-preferred-replica-election and carried out and "
                                           "deleted by the controller within the same ElectLeader step; a "
                                           "leftover znode makes the next run of the tool raise, a lost one "
                                           "shows as no election (zk.partitions)",
    "zk.ar without a reassignment": "written once, by kafka-topics --create, as the adapter's assignment; the "
                                    "controller's copy decides to whom it sends LeaderAndIsr (observed: inbox, "
                                    "with the AR as replicas) and whom it may elect (observed: leaders); "
                                    "with a reassignment zk.ar and ctx.ar are observed",
    "zk.stat": "czxid is observed as the broker epoch's rank (sessions, ctx.live); nothing in impl/ reads "
               "mzxid, cversion, ephemeral_owner or num_children (Kafka's controller watches children instead), "
               "and zxids are compared only with == and <",
    "zk.watches": "decide only which events reach a session, i.e. controller.pending (below); the active "
                  "controller's child watches are checked at every observation (ZooKeeper's wchc: each armed, "
                  "or its event queued), and no step reads the /controller watch (can_elect reads the znode)",
    "zk.controller_epoch.version": "read only by the controller's conditional writes (KAFKA-6082), whose success "
                                   "or failure shows in zk.partitions; the epoch itself is observed",
    "zk.config": "written once, through the admin tool, at topic creation; read by unclean election and "
                 "min.insync.replicas, whose effects (elections, refused produces, acked) are observed",
    "broker.broker_epoch": "observed, as the rank of the registration it names (sessions, ctx.live)",
    "broker.fetchers.leader/leader_epoch": "set from the partition state the broker applied (observed); a wrong "
                                           "one makes Fetch, TruncateFollower or ExpandIsr enabled when the "
                                           "model's is not, or moves other data (observed logs)",
    "replica.follower LEOs on a non-leader": "reset when the broker becomes leader (makeLeader), so no decision "
                                             "reads a stale one",
    "replica.leader's own LEO entry": "not stored: the leader's LEO is its log's length, and the log is observed",
    "replica.replicas without a reassignment": "the AR of the LeaderAndIsr it applied (observed in the inbox "
                                               "before delivery); the leader reads it for the followers whose "
                                               "LEOs it keeps (observed: follower_leos) and whom it may add to "
                                               "the ISR (observed: isr)",
    "replica.min_insync_replicas": "the topic's min.insync.replicas (zk.config); read only when a leader "
                                   "takes an acks=all write, whose refusal changes the enabled Produce steps "
                                   "(compared and probed) and nothing else",
    "controller.pending": "watch events not yet handled: a lost or duplicated one changes which controller "
                          "steps are enabled, and enabled sets are compared (and probed)",
    "controller.epoch_zk_version": "read only by the controller's conditional writes, whose effect shows in "
                                   "zk.partitions",
    "state-change.log": "written, never read by a broker or the controller; the order in time of its lines is "
                        "checked at every observation (the seeds' merge tool keeps what it gave as its "
                        "beginning); their text is not predicted: the model has no notion of "
                        "StateChangeLogger's wording, which is no Kafka contract",
    "cluster.time": "the state-change log's clock, read only to stamp its lines, whose merged order is checked",
    "cluster.registrations": "the driver's record of each broker's epochs, used only to rank them (sessions)",
    "producer.pending_acks": "the test client's state, not the cluster's; what it acknowledged is observed (acked)",
}


def _no_state() -> dict:
    return {"leader": NO_LEADER, "leader_epoch": -1, "isr": [], "controller_epoch": -1, "version": -1}


def _li(li) -> dict:
    if li is None:
        return _no_state()
    return {"leader": li.leader, "leader_epoch": li.leader_epoch, "isr": list(li.isr),
            "controller_epoch": li.controller_epoch, "version": li.zk_version}


def _sorted_requests(reqs: list) -> list:
    return sorted(reqs, key=lambda d: json.dumps(d, sort_keys=True))


class Projection(ClusterDriver):
    """Mixed into the driver: ``observe`` and the checks it runs."""

    ignored = IGNORED

    def _session_number(self, b: int, epoch) -> int:
        regs = self.cluster.registrations[b]
        return regs.index(epoch) + 1 if epoch in regs else 0

    def observe(self) -> dict:
        c = self.cluster
        zk = c.admin
        tps = [TopicPartition(TOPIC, p) for p in range(self.partitions)]
        sessions = []
        for b in range(self.n):
            k = len(c.registrations[b])
            sessions.append(k if zk.broker_epoch(b) == c.registrations[b][-1] else -k)
        desc = self.admin.describe_topic(TOPIC) if zk.topic_exists(TOPIC) else None   # kafka-topics --describe
        observed_zk = {
            "controller": zk.get_controller_id(),
            "controller_epoch": zk.get_controller_epoch()[0],
            "sessions": sessions,
            "topic": zk.topic_exists(TOPIC),
            "partitions": self._partition_states(tps, desc),
            # marked for deletion, as kafka-topics --describe says while the topic exists
            "delete_topic": desc.marked_for_deletion if desc else TOPIC in zk.get_topic_deletions(),
        }
        if self.reassign_targets:
            pending = get_partition_reassignment(zk)
            assignment = zk.get_assignment(TOPIC) if zk.topic_exists(TOPIC) else {}
            observed_zk["ar"] = [list(assignment.get(tp.partition, ())) for tp in tps]
            observed_zk["reassign"] = [list(pending.get(tp, ())) for tp in tps]
        brokers = []
        for b in range(self.n):
            s = c.servers[b]
            inbox = _sorted_requests([self._request(r) for r in c.in_flight[b]])
            if s is None:
                d = {"alive": False, "controller_epoch_seen": 0, "partitions": [_no_state() for _ in tps],
                     "inbox": inbox, "ctx": None}
            else:
                rm = s.replica_manager
                d = {"alive": True, "controller_epoch_seen": rm.controller_epoch,
                     "partitions": [self._view(rm.partitions.get(tp)) for tp in tps],
                     "inbox": inbox, "ctx": self._ctx(b, s.controller.ctx, tps)}
            d["replicas"] = [self._replica(b, tp) for tp in tps] if self.data_path else []
            if self.reassign_targets:
                parts = s.replica_manager.partitions if s is not None else {}
                d["assigned"] = [list(parts[tp].replicas) if tp in parts else [] for tp in tps]
            if self.metadata_cache:
                cache = s.replica_manager.metadata_cache if s is not None else {}
                d["metadata"] = [cache.get(tp, NO_LEADER) for tp in tps]
                d["alive_brokers"] = list(s.replica_manager.alive_brokers) if s is not None else []
            brokers.append(d)
        out = {"zk": observed_zk, "brokers": brokers}
        if self.data_path:
            out["acked"] = [[tp.partition, o, e] for tp, o, e in sorted(self.acknowledged)]
            if zk.topic_exists(TOPIC):
                self._check_replica_verification(tps)
        if self.reassign_targets and zk.topic_exists(TOPIC):
            self._check_reassignment_tools(tps)
        if not zk.topic_exists(TOPIC):
            self._check_tools_refuse_a_missing_topic()
        self._check_controller_watches()
        self._check_state_change_merge(tps)
        return out

    def _check_state_change_merge(self, tps) -> None:
        """The seeds' state-change-log merge tool (``impl.statechange.merge``), over every
        broker's log and per partition, must keep what it gave at the last observation as
        its beginning: the lines written since then come after it, never between earlier
        lines.  Each cluster operation writes at a later time than the last, so a line
        written later that merges before an earlier one (a clock that did not move, a
        time misread) misorders cause and effect for whoever reads the merged log."""
        logs = [d.state_log for d in self.cluster.disks]
        for key, merged in (("all", merge(logs)), *((tp.partition, merge(logs, tp.topic, tp.partition)) for tp in tps)):
            before = self._merged.get(key, [])
            if merged[:len(before)] != before:
                i = next(i for i, (x, y) in enumerate(zip(merged, before)) if x != y)
                raise RuntimeError(f"the merged state-change log ({'every partition' if key == 'all' else tps[key]}) "
                                   f"puts {merged[i]!r}, written since the last step, before {before[i]!r}")
            self._merged[key] = merged

    def _check_controller_watches(self) -> None:
        """The active controller watches the children of every path whose changes it
        handles (``CHILD_WATCHES``, ZooKeeper's ``wchc``), unless that path's event is
        already queued: a watch not re-armed is a change the controller never hears of,
        which the model's state does not show until the change comes."""
        store = self.cluster.store
        for s in self.cluster.servers:
            ctl = s.controller if s is not None else None
            if ctl is None or not store.session_alive(ctl.zk.session) or not ctl.is_active():
                continue
            watched = store.watches(ctl.zk.session)["children"]
            for path, event in sorted(CHILD_WATCHES.items()):
                if path not in watched and event not in ctl.pending:
                    raise RuntimeError(f"the active controller {ctl.broker_id} neither watches the children of "
                                       f"{path} nor has its {event} event queued")

    def _check_replica_verification(self, tps) -> None:
        """kafka-replica-verification (``Admin.verify_replicas``) must describe the logs
        ``observe`` shows: the leader's HW, every replica's LEO (None while its broker is
        down), and whether its log holds the leader's records below the HW.  A report
        that disagrees with the brokers' logs is a bug of the tool, raised here."""
        c = self.cluster
        for v in self.admin.verify_replicas(TOPIC):
            tp = tps[v.partition]
            logs = {r: (c.disks[r].logs[tp].records if tp in c.disks[r].logs else []) for r in v.log_end_offsets}
            lead = v.leader != NO_LEADER and self._running(v.leader)
            hw = c.disks[v.leader].logs[tp].high_watermark_checkpoint if lead and tp in c.disks[v.leader].logs \
                else (0 if lead else -1)
            leos = {r: len(logs[r]) if lead and self._running(r) else None for r in logs}
            in_sync = {r: lead and self._running(r) and logs[r][:hw] == logs[v.leader][:hw] for r in logs}
            want = (hw, leos, in_sync, lead and all(in_sync.values()))
            if (v.high_watermark, v.log_end_offsets, v.in_sync, v.all_in_sync) != want:
                raise RuntimeError(f"kafka-replica-verification reports {v} for {tp}; the logs say "
                                   f"(hw, leos, in_sync, all) = {want}")

    def _check_reassignment_tools(self, tps) -> None:
        """kafka-reassign-partitions --verify (``Admin.verify_reassignment``) on each
        target the admin wrote must say what ZooKeeper holds: "in progress" while
        /admin/reassign_partitions names the partition, else "completed" if its AR is
        the target and "failed" if not; and --generate's current assignment must be
        the topic's AR."""
        zk = self.cluster.admin
        pending = get_partition_reassignment(zk)
        ar = zk.get_assignment(TOPIC)
        for tp, target in sorted(self.written_targets.items()):
            got = self.admin.verify_reassignment({tp: target})[tp]
            want = "in progress" if tp in pending else "completed" if ar.get(tp.partition) == target else "failed"
            if got != want:
                raise RuntimeError(f"kafka-reassign-partitions --verify says {got!r} for {tp} -> {list(target)}; "
                                   f"ZooKeeper says {want!r}")
        current, _ = self.admin.generate_reassignment([TOPIC], range(self.n))
        if current != {tp: ar[tp.partition] for tp in tps if tp.partition in ar}:
            raise RuntimeError(f"kafka-reassign-partitions --generate's current assignment {current} is not the AR {ar}")

    def _check_tools_refuse_a_missing_topic(self) -> None:
        """Before the topic is created and after it is deleted, kafka-reassign-partitions
        --generate for it must refuse (UNKNOWN_TOPIC_OR_PARTITION), not propose an
        assignment from whatever is left in ZooKeeper."""
        try:
            self.admin.generate_reassignment([TOPIC], range(self.n))
        except AdminError:
            return
        raise RuntimeError(f"kafka-reassign-partitions --generate proposes an assignment for topic {TOPIC!r}, "
                           f"which does not exist")

    def _partition_states(self, tps, desc) -> list[dict]:
        """Each partition's state znode, its leader, leader epoch and ISR as the admin
        tool shows them while the topic exists (kafka-topics --describe ``desc``: what an
        operator reads)."""
        out = [_li(self.cluster.admin.get_partition_state(tp)) for tp in tps]
        if desc is not None:
            shown = {d.partition: d for d in desc.partitions}
            for p, o in enumerate(out):
                d = shown.get(p)
                if d is None:       # not in the topic's assignment: no state
                    o.update({k: v for k, v in _no_state().items() if k in ("leader", "leader_epoch", "isr")})
                else:
                    o.update(leader=d.leader, leader_epoch=d.leader_epoch, isr=list(d.isr))
        return out

    @staticmethod
    def _view(p) -> dict:
        if p is None:
            return _no_state()
        return {"leader": p.leader, "leader_epoch": p.leader_epoch, "isr": list(p.isr),
                "controller_epoch": p.controller_epoch, "version": p.zk_version}

    @staticmethod
    def _request(r) -> dict:
        if isinstance(r, LeaderAndIsrRequest):
            return {"type": "LeaderAndIsr", "controller_epoch": r.controller_epoch,
                    "partition": r.topic_partition.partition, "leader": r.leader, "leader_epoch": r.leader_epoch,
                    "isr": list(r.isr), "version": r.zk_version, "replicas": list(r.replicas)}
        if isinstance(r, UpdateMetadataRequest):
            return {"type": "UpdateMetadata", "controller_epoch": r.controller_epoch,
                    "partition": r.topic_partition.partition, "leader": r.leader, "leader_epoch": r.leader_epoch,
                    "live": list(r.live_brokers), "ahead": r.ahead}
        return {"type": "StopReplica", "controller_epoch": r.controller_epoch,
                "partition": r.topic_partition.partition, "delete": r.delete_partition}

    def _ctx(self, b: int, ctx, tps) -> dict | None:
        if ctx is None:
            return None
        out = {
            "epoch": ctx.epoch,
            "live": [self._session_number(x, ctx.live_broker_epochs[x]) if x in ctx.live_broker_epochs else 0
                     for x in range(self.n)],
            "partitions": [_li(ctx.leadership.get(tp)) for tp in tps],
            "partition_states": [ctx.partition_states.get(tp, NON_EXISTENT_PARTITION) for tp in tps],
            "replica_states": [[ctx.replica_states.get((tp, r), NON_EXISTENT_REPLICA) for r in self.slots[tp.partition]]
                               for tp in tps],
            "shutting_down": [x in ctx.shutting_down for x in range(self.n)],
            "deleting": TOPIC in ctx.topics_to_be_deleted,
            "offline": sorted([tp.partition, r] for tp, r in ctx.offline_owed),
        }
        if self.reassign_targets:
            out["ar"] = [list(ctx.assignments.get(tp, ())) for tp in tps]
            out["reassigning"] = [None if tp not in ctx.reassigning else {
                "target": list(ctx.reassigning[tp].target), "original": list(ctx.reassigning[tp].original),
                "step": ctx.reassigning[tp].step} for tp in tps]
        return out

    def _replica(self, b: int, tp: TopicPartition) -> dict:
        log = self.cluster.disks[b].logs.get(tp)
        records = list(log.records) if log else []
        hw = log.high_watermark_checkpoint if log else 0
        rm = self._rm(b)
        truncating = bool(rm and tp in rm.fetchers and rm.fetchers[tp].truncating)
        leos = None
        if rm is not None and rm.leader_partition(tp) is not None:
            p = rm.leader_partition(tp)
            leos = {str(r): p.remote_leos.get(r, -1) for r in self.slots[tp.partition] if r != b}
        epochs = [list(x) for x in log.epochs.entries] if log else []
        return {"log": records, "epochs": epochs, "hw": hw, "truncating": truncating, "follower_leos": leos}
