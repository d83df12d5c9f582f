"""KafkaModel: the ZooKeeper-era Kafka controller as a checker.model.Model.

The model is the union of three action families, enumerated in a fixed order:
faults (faults.py), controller actions (controller.py), broker actions
(broker.py).  Each family contributes the enabled actions of a state and a
function per action name that computes the next state.

    >>> from spec.config import KafkaConfig
    >>> m = KafkaModel(KafkaConfig(brokers=2, replication_factor=2))
    >>> s0 = m.init_states()[0]
    >>> [str(a) for a in m.actions(s0)][:3]
    ['CrashBroker(broker=0)', 'ExpireSession(broker=0)', 'CrashBroker(broker=1)']
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from checker.model import Action, Model
from spec import broker, controller, datapath, eventorder, faults, liveness, reassign
from spec.config import KafkaConfig
from spec.properties import properties
from spec.footprints import kafka_footprints
from spec.symmetry import broker_symmetry
from spec.timeline import KafkaTimeline
from spec.state import (
    NO_LEADER, NO_STATE, Broker, Budget, KafkaState, LeaderAndIsr, LeaderIsr, UpdateMetadata, Zk, new_broker, no_ghost,
)

MODEL_NAME = "kafka-controller"
MODEL_VERSION = "3"

_FAMILIES = (faults, controller, broker, datapath, reassign)
_KEYS: dict[int, tuple] = {}   # id(zk) -> (zk, its partition key): KafkaModel.partition_key
ENABLED = tuple(f for fam in _FAMILIES for f in fam.ENABLED)
APPLY = {name: fn for fam in _FAMILIES for name, fn in fam.APPLY.items()}
DOCS = {name: doc for fam in _FAMILIES for name, doc in fam.DOCS.items()}


class KafkaModel(Model):
    name = MODEL_NAME
    version = MODEL_VERSION
    equal_states_encode_equally = True   # every field keeps one type (tests/test_search.py checks it)

    def partition_key(self, state):
        """Spark places a state by its ZooKeeper part without the ISRs
        (checker.model.Model.partition_key): the controller, the sessions, the topic and
        its reassignment, and each partition's leader and leader epoch.  Most actions (a
        broker's fetch, append or request handling) leave ``zk`` as it is, and an ISR
        change (a leader's ShrinkIsr or ExpandIsr, the controller's
        RemoveReplicaFromIsr: the most frequent writes of ``zk``) keeps the rest.  On
        ``small:max_isr_shrinks=2`` on two partitions, 3.3% of the transitions change
        partition instead of 11.3% with the whole ``zk`` (half by fingerprint), and the
        larger partition holds 1.01 times the mean of the states (docs/spark.md).
        Remembered by the ``zk`` object, so that a successor that keeps it has its
        parent's very key (the engine then places it without hashing)."""
        zk = state.zk
        hit = _KEYS.get(id(zk))
        if hit is not None and hit[0] is zk:
            return hit[1]
        key = (zk.controller, zk.controller_epoch, zk.sessions, zk.topic,
               tuple([(p.leader, p.leader_epoch) for p in zk.partitions]), zk.delete_topic, zk.ar, zk.reassign)
        if len(_KEYS) >= 1 << 16:
            _KEYS.clear()
        _KEYS[id(zk)] = (zk, key)   # the zk object is held, so its id is not reused while it is here
        return key

    def __init__(self, cfg: KafkaConfig):
        self.cfg = cfg
        # The AR itself lives in ZooKeeper (``s.zk.ar``) and changes with reassignment.
        # ``ar`` is each partition's replica *slots*: the initial AR followed by every
        # broker a configured reassignment may add.  Per-replica tuples (replica states,
        # a leader's follower LEOs) are indexed by position here; without reassignment
        # the slots are exactly the AR.
        self.ar = tuple(cfg.replica_slots(p) for p in range(cfg.partitions))
        self.initial_ar = tuple(cfg.assignment(p) for p in range(cfg.partitions))
        self.reassign_targets = cfg.reassign_targets
        self._properties = properties(cfg, self) + liveness.liveness_properties(cfg)

    def init_states(self):
        """Every broker is up with a session; the topic exists in ZooKeeper with its
        AR but no partition state yet, and there is no controller: the first
        controller creates the partitions (NewPartition -> OnlinePartition)."""
        cfg = self.cfg
        n = cfg.brokers
        zk = Zk(NO_LEADER, 0, tuple(1 for _ in range(n)), not cfg.create_topic_after_start,
                tuple(NO_STATE for _ in range(cfg.partitions)), False, self.initial_ar,
                tuple(() for _ in range(cfg.partitions)))
        b = new_broker(cfg.metadata_cache, True, cfg.partitions, self.fresh_replicas())
        budget = Budget(cfg.max_records, cfg.max_crashes, cfg.max_session_expiries, cfg.max_controller_failovers,
                        cfg.max_isr_shrinks, cfg.max_unclean_elections if cfg.unclean_leader_election else 0,
                        cfg.max_controlled_shutdowns, cfg.max_topic_deletions, len(self.reassign_targets))
        return [KafkaState(zk, tuple(b for _ in range(n)), budget, no_ghost(cfg.partitions))]

    def fresh_replicas(self) -> tuple:
        """Every partition's replica as a broker that never held one has it: an empty
        log (also what a StopReplica(delete=true) leaves), or () without a data path."""
        if not self.cfg.data_path:
            return ()
        return tuple(datapath.fresh_replica(len(slots)) for slots in self.ar)

    def actions(self, state):
        out: list = []
        for enabled in ENABLED:
            enabled(self, state, out)
        busy = frozenset()
        if self.reassign_targets:
            busy = reassign.busy(self, state)
            if busy:
                out = [a for a in out if a.get("controller") not in busy or a.name in reassign.STEP]
        if self.cfg.controller_event_order:
            out = eventorder.event_order(self, state, out, busy)
        else:
            out = eventorder.stop_after_event(out, busy)
        return out

    def next_state(self, state, act: Action):
        return APPLY[act.name](self, state, act)

    def properties(self):
        return self._properties

    def symmetry(self):
        """Brokers are interchangeable, within each partition's replica slots
        (spec/symmetry.py); None with reassignment targets."""
        return broker_symmetry(self)

    def footprints(self):
        """What each action reads and writes, for partial-order reduction
        (spec/footprints.py); None with the atomic controller or reassignment."""
        return kafka_footprints(self)

    def fair(self, act: Action) -> bool:
        """Faults and the environment's free choices are not fair (spec/liveness.py)."""
        return liveness.fair(act)

    def is_terminal(self, state) -> bool:
        """Quiescent with an active controller: every fault spent or declined, every
        request delivered, nothing left to elect.  Any other state without an
        enabled action is a deadlock."""
        return state.zk.controller != NO_LEADER

    def config(self) -> Mapping[str, Any]:
        return self.cfg.as_dict()

    def action_names(self) -> list[str]:
        """The actions of the action families this configuration turns on: the data
        path's only with ``max_records > 0``, reassignment's only with reassignments."""
        on = [faults, controller, broker]
        if self.cfg.max_records > 0:
            on.append(datapath)
        if self.cfg.reassignments:
            on.append(reassign)
        names = {name for fam in on for name in fam.DOCS}
        if not self.cfg.metadata_cache:
            names.discard("DeliverUpdateMetadata")
        if not self.cfg.controller_deletion:
            names.discard("DeleteController")
        if not self.cfg.create_topic_after_start:
            names -= {"CreateTopic", "TopicChange"}
        return sorted(names)

    def timeline(self) -> KafkaTimeline:
        """One lane per broker and one for ZooKeeper (spec/timeline.py)."""
        return KafkaTimeline()

    def observe(self, s: KafkaState) -> dict:
        """What conformance compares with the reference broker (impl/projection.py
        ``observe``): ``zk`` and ``brokers`` as plain data.  ``budget`` and ``ghost`` are
        the model's own bookkeeping, except the acks=all records acknowledged to
        producers (with a data path), which the implementation's clients see too.  A
        broker's record of its followers' LEOs is shown only while it leads the
        partition, without its own entry: no action reads it otherwise (spec/datapath.py
        reads ``leos`` through ``_leader_view`` only)."""
        zk = {"controller": s.zk.controller, "controller_epoch": s.zk.controller_epoch,
              "sessions": list(s.zk.sessions), "topic": s.zk.topic,
              "partitions": [_obs_li(li) for li in s.zk.partitions], "delete_topic": s.zk.delete_topic}
        if self.reassign_targets:   # without reassignment the AR is static configuration
            zk["ar"] = [list(ar) for ar in s.zk.ar]
            zk["reassign"] = [list(r) for r in s.zk.reassign]
        out = {"zk": zk, "brokers": [self._obs_broker(b, br) for b, br in enumerate(s.brokers)]}
        if self.cfg.data_path:
            # what the producers were told: the implementation's clients track it too
            out["acked"] = [list(x) for x in sorted(s.ghost.inv_acked)]
        return out

    def _obs_broker(self, b: int, br: Broker) -> dict:
        c = br.ctx
        ctx = None if c is None else {
            "epoch": c.epoch, "live": list(c.live), "partitions": [_obs_li(li) for li in c.partitions],
            "partition_states": list(c.partition_states), "replica_states": [list(rs) for rs in c.replica_states],
            "shutting_down": list(c.shutting_down), "deleting": c.deleting,
            "offline": [list(x) for x in c.offline]}
        if ctx is not None and self.reassign_targets:
            ctx["ar"] = [list(ar) for ar in c.ar]
            ctx["reassigning"] = [None if r is None else {"target": list(r.target), "original": list(r.original),
                                                          "step": r.step} for r in c.reassigning]
        replicas = []
        for p, r in enumerate(br.replicas):
            leads = br.alive and br.partitions[p].leader == b
            leos = {str(x): r.leos[i] for i, x in enumerate(self.ar[p]) if x != b} if leads else None
            replicas.append({"log": list(r.log), "epochs": [list(x) for x in datapath.rule(self).cache(r)], "hw": r.hw,
                             "truncating": r.truncating, "follower_leos": leos})
        inbox = sorted((_obs_request(q) for q in br.inbox), key=lambda d: json.dumps(d, sort_keys=True))
        out = {"alive": br.alive, "controller_epoch_seen": br.controller_epoch_seen,
               "partitions": [_obs_li(li) for li in br.partitions], "inbox": inbox, "ctx": ctx,
               "replicas": replicas}
        if self.reassign_targets:
            out["assigned"] = [list(a) for a in br.assigned]
        if self.cfg.metadata_cache:
            out["metadata"] = list(br.metadata)
            out["alive_brokers"] = list(br.alive_brokers)
        return out

    def describe(self, s: KafkaState) -> dict:
        """Readable view for replay diffs: names, not tuple positions."""
        zk = s.zk
        out = {
            "zk": {
                "controller": zk.controller,
                "controller_epoch": zk.controller_epoch,
                "brokers": _ids(b for b, x in enumerate(zk.sessions) if x > 0),
                "session": _ids(zk.sessions),
                "topic": zk.topic,
                "delete_topic": zk.delete_topic,
                "partition": {str(p): _li(li) for p, li in enumerate(zk.partitions)},
                "ar": {str(p): _ids(ar) for p, ar in enumerate(zk.ar)},
                "reassign_partitions": {str(p): _ids(r) for p, r in enumerate(zk.reassign) if r},
            },
            "broker": {},
            "budget": s.budget._asdict(),
            "ghost": {k: _ghost(k, v) for k, v in s.ghost._asdict().items()},
        }
        for b, br in enumerate(s.brokers):
            d = {
                "alive": br.alive,
                "controller_epoch_seen": br.controller_epoch_seen,
                "partition": {str(p): _view(b, li, ar) for p, (li, ar) in enumerate(zip(br.partitions, br.assigned))},
                "in_flight": [_req(r) for r in br.inbox],
            }
            if self.cfg.metadata_cache:
                d["metadata_cache"] = {str(p): x for p, x in enumerate(br.metadata)}
                d["metadata_cache"]["alive_brokers"] = _ids(br.alive_brokers)
            if br.replicas:
                d["log"] = {str(p): {"epochs": _ids(r.log), "leo": len(r.log), "hw": r.hw,
                                     "epoch_cache": _ids(f"{e}@{o}" for e, o in datapath.rule(self).cache(r)),
                                     "truncating": r.truncating} for p, r in enumerate(br.replicas)}
            if br.ctx is not None:
                c = br.ctx
                d["controller"] = {
                    "epoch": c.epoch,
                    "live": _ids(x for x, v in enumerate(c.live) if v > 0),
                    "shutting_down": _ids(x for x, v in enumerate(c.shutting_down) if v),
                    "deleting": c.deleting,
                    "ar": {str(p): _ids(ar) for p, ar in enumerate(c.ar)},
                    "reassigning": {str(p): {"target": _ids(r.target), "original": _ids(r.original), "step": r.step}
                                    for p, r in enumerate(c.reassigning) if r is not None},
                    "partition": {str(p): _li(li) for p, li in enumerate(c.partitions)},
                    "partition_state": {str(p): st for p, st in enumerate(c.partition_states)},
                    "replica_state": {f"{p}.{r}": st for p, rs in enumerate(c.replica_states)
                                      for r, st in zip(self.ar[p], rs)},
                }
                if c.offline:   # OfflineReplica steps the controller's current event owes
                    d["controller"]["offline"] = [f"{p}.{r}" for p, r in c.offline]
            out["broker"][str(b)] = d
        return out


def _ghost(k: str, v) -> Any:
    if k == "inv_leader_moved":
        return {str(p): _ids(r) for p, r in enumerate(v) if r}
    return _records(v) if isinstance(v, tuple) else v


def _obs_li(li: LeaderIsr) -> dict:
    return {"leader": li.leader, "leader_epoch": li.leader_epoch, "isr": list(li.isr),
            "controller_epoch": li.controller_epoch, "version": li.version}


def _obs_request(r) -> dict:
    d = {"type": type(r).__name__, **r._asdict()}
    for k in ("isr", "live"):
        if k in d:
            d[k] = list(d[k])
    return d


def _records(xs) -> str:
    """Ghost record sets as "p0@1e0" (partition 0, offset 1, leader epoch 0)."""
    return "[" + ", ".join(f"p{p}@{o}e{e}" for p, o, e in xs) + "]"


def _ids(xs) -> str:
    """Broker-id lists print whole ("[0, 2]") so a diff shows the set that changed."""
    return "[" + ", ".join(str(x) for x in xs) + "]"


def _li(li: LeaderIsr) -> Any:
    if li.version == -1:
        return None
    return {"leader": li.leader, "leader_epoch": li.leader_epoch, "isr": _ids(li.isr),
            "controller_epoch": li.controller_epoch, "version": li.version}


def _view(b: int, li: LeaderIsr, ar: tuple) -> Any:
    d = _li(li)
    if d is not None:
        d["role"] = "leader" if li.leader == b else "follower"
        d["ar"] = _ids(ar)
    return d


def _req(r) -> str:
    if type(r) is LeaderAndIsr:
        return (f"LeaderAndIsr(controller_epoch={r.controller_epoch}, partition={r.partition}, "
                f"leader={r.leader}, leader_epoch={r.leader_epoch}, isr={_ids(r.isr)}, version={r.version}, "
                f"replicas={_ids(r.replicas)})")
    if type(r) is UpdateMetadata:
        return (f"UpdateMetadata(controller_epoch={r.controller_epoch}, partition={r.partition}, leader={r.leader}, "
                f"leader_epoch={r.leader_epoch}, live={_ids(r.live)}{', ahead' if r.ahead else ''})")
    return f"StopReplica(controller_epoch={r.controller_epoch}, partition={r.partition}, delete={r.delete})"
