"""The reference broker (impl/): conformance to the model, and its parts on their own.

Conformance here is a walk over the model's whole state graph (checker.graph): every
transition is taken once on the implementation, from a snapshot of the implementation
in the transition's source state, and the two observations must be equal afterwards.
With ``probe``, every action of the graph that the model does *not* enable in a state
must not be enabled in the implementation either.  ``kmc conform`` (checker/conform.py)
does the same from the command line with covering paths; this walk is the quicker way
to cover every edge.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from checker.config import resolve
from checker.conform import Harness, random_walks
from checker.graph import explore
from checker.model import action
from checker.prefixes import pickled
from checker.trace import load_trace
from impl import zk as Z
from impl.adapter import KafkaImplementation
from impl.log import UNDEFINED_EPOCH_OFFSET, Log
from impl.replica_manager import ReplicaManager
from impl.zkclient import TopicPartition
from spec.family import FAMILY
from tests.walk_support import LAST_ISR_MEMBER_SHUTTING_DOWN, STEP7_ELECTION_FAILS, prefix_path

ROOT = Path(__file__).resolve().parent.parent


def _canon(x) -> str:
    return json.dumps(x, sort_keys=True)


def walk_graph(preset: str, overrides: dict | None = None, *, probe: bool = False, every: int = 1) -> dict:
    """Take every ``every``-th transition of the preset's state graph on the
    implementation (all of them by default); the first divergence fails the test."""
    cfg = resolve(FAMILY, preset, overrides or {})
    model = FAMILY.build(cfg)
    g = explore(model)
    out = g.out_edges()
    vocabulary = list(dict.fromkeys(a for _s, a, _d in g.edges)) if probe else []
    root = g.initial[0]
    impls = {root: KafkaImplementation(dict(cfg))}
    assert _canon(impls[root].observe()) == _canon(model.observe(g.states[root]))
    taken = 0
    for n in range(len(g.states)):
        base = impls.pop(n)
        def where(n=n) -> str:
            return " ; ".join(str(e[1]) for e in g.path_to(n))

        if probe:
            enabled = {g.edges[ei][1] for ei in out[n]}
            for a in vocabulary:
                assert a in enabled or not base.enabled(a), f"impl can do {a} the model cannot, after: {where()}"
        for ei in out[n]:
            _src, a, dst = g.edges[ei]
            tree_edge = g.parent[dst] == ei
            if not tree_edge and ei % every:
                continue
            assert base.enabled(a), f"impl cannot do {a} after: {where()}"
            im = pickled(base)
            im.apply(a)
            got, want = im.observe(), model.observe(g.states[dst])
            if _canon(got) != _canon(want):
                from checker.conform import diff
                pytest.fail(f"{preset}: after {where()} ; {a}: " + "; ".join(
                    f"{k}: model {m!r}, impl {i!r}" for k, m, i in diff(want, got)[:6]))
            taken += 1
            if tree_edge:
                impls[dst] = im
    return {"states": len(g.states), "edges": len(g.edges), "taken": taken}


# -- impl/ is written independently of spec/ ------------------------------------------------------

def test_impl_never_imports_spec():
    for path in sorted((ROOT / "impl").glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] != "spec", f"{path.name} imports {name}: impl/ must not import spec/"


# -- conformance ------------------------------------------------------------------------------------

def test_tiny_conforms_on_every_transition_and_enables_nothing_more():
    r = walk_graph("tiny", probe=True)
    assert (r["states"], r["edges"], r["taken"]) == (1184, 2307, 2307)


def test_reassignment_conforms_on_every_transition_and_enables_nothing_more():
    r = walk_graph("reassign-rf", probe=True)
    assert (r["states"], r["edges"], r["taken"]) == (927, 2890, 2890)


def test_atomic_controller_data_path_conforms_on_every_transition():
    """atomic_controller=true (spec/atomic.py): the controller's reactions run inside the
    step of the event that caused them, on both sides; the data path with unclean
    election, whole graph."""
    r = walk_graph("data-unclean", {"atomic_controller": True, "max_controller_failovers": 0}, probe=True)
    assert (r["states"], r["edges"], r["taken"]) == (1828, 3164, 3164)


# Issue 11's rules on every transition, for each Kafka version: the HW when a broker
# becomes leader (new leader or only a new epoch, after an ISR change or a preferred
# election), the leader-epoch cache (2.1 records a new leader's epoch), a follower that
# keeps fetching through a new epoch of the same leader (before 2.1), the ISR expand rule.
_PREFERRED = {"max_records": 1, "max_crashes": 1, "max_isr_shrinks": 1, "preferred_election": True,
              "atomic_controller": True, "max_controller_failovers": 0}


@pytest.mark.parametrize("truncation", [pytest.param("high_watermark", marks=pytest.mark.slow), "kip101",
                                        pytest.param("kip279", marks=pytest.mark.slow), "kip320"])
def test_data_path_with_preferred_election_conforms_on_every_transition(truncation):
    r = walk_graph("data-kip320", {**_PREFERRED, "truncation": truncation}, probe=True)
    assert r["taken"] == r["edges"] > 1000


@pytest.mark.slow
@pytest.mark.parametrize("truncation", ["kip101", "kip320"])
def test_data_path_with_an_ar_reordering_reassignment_conforms_on_every_transition(truncation):
    """The reassignment's epoch bumps reach a follower whose leader does not change.
    On the full controller: the atomic one refuses reassignment (spec/config.py)."""
    r = walk_graph("data-kip320", {"max_records": 1, "max_crashes": 0, "max_isr_shrinks": 0,
                                   "preferred_election": True, "max_controller_failovers": 0,
                                   "reassignments": "1,0", "truncation": truncation})
    assert r["taken"] == r["edges"] > 8000


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["data-kip101-wide", "data-kip320-wide"])
def test_wide_presets_conform_on_random_walks(preset):
    """The wide presets' graphs are too large to walk whole (more than 400,000 states at
    depth 11): random walks, every fault kind on (about 5 CPU seconds each; docs/conformance.md
    gives the longer runs)."""
    cfg = resolve(FAMILY, preset, {})
    assert random_walks(Harness(FAMILY.build(cfg), KafkaImplementation, cfg), walks=15, depth=60) is None


@pytest.mark.parametrize("path", sorted((ROOT / "traces" / "known").glob("*.json")), ids=lambda p: p.stem)
def test_known_traces_replay_on_the_implementation(path):
    trace = load_trace(path)
    model = FAMILY.build(trace.config)
    impl = KafkaImplementation(trace.config)
    state = model.init_states()[0]
    assert _canon(impl.observe()) == _canon(model.observe(state))
    for step in trace.steps[1:]:
        a = step.action
        assert a in model.actions(state), f"{path.name} step {step.index}: {a} no longer fits the model"
        assert impl.enabled(a), f"{path.name} step {step.index}: impl cannot do {a}"
        impl.apply(a)
        state = model.next_state(state, a)
        assert _canon(impl.observe()) == _canon(model.observe(state)), f"{path.name} step {step.index}: {a}"


@pytest.mark.parametrize("name", ["NoAckedRecordLost-data-hw", "NoAckedRecordLost-data-unclean"])
def test_data_loss_counterexamples_lose_acknowledged_records_on_the_implementation(name):
    """The known-bad variants run on both sides: replayed on impl/ with the same switch
    (HW truncation; unclean election), the broker really loses a record its producer
    was told is committed, and only at the trace's last step."""
    [path] = sorted((ROOT / "traces" / "known").glob(f"{name}-*.json"))
    trace = load_trace(path)
    impl = KafkaImplementation(trace.config)
    for step in trace.steps[1:]:
        assert not impl.lost_acknowledged_records()
        impl.apply(step.action)
    assert impl.lost_acknowledged_records()


def _replay(name: str) -> KafkaImplementation:
    [path] = sorted((ROOT / "traces" / "known").glob(f"{name}-*.json"))
    trace = load_trace(path)
    impl = KafkaImplementation(trace.config)
    for step in trace.steps[1:]:
        impl.apply(step.action)
    return impl


def test_without_zk_epoch_fencing_a_zombie_controller_really_writes_zookeeper():
    impl = _replay("ControllerEpochFencing-zombie")
    zk = impl.cluster.admin
    state = zk.get_partition_state(TopicPartition("t", 0))
    assert state.controller_epoch < zk.get_controller_epoch()[0]      # written by the superseded controller
    assert impl.cluster.controller(0) is not None and not impl.cluster.controller(0).is_active()


def test_without_controller_epoch_fencing_a_broker_really_applies_a_stale_request(monkeypatch):
    applied = []
    real = ReplicaManager.handle_leader_and_isr

    def spy(self, req):
        seen = self.controller_epoch
        result = real(self, req)
        applied.append((req.controller_epoch < seen, result))
        return result

    monkeypatch.setattr(ReplicaManager, "handle_leader_and_isr", spy)
    _replay("ControllerEpochFencing-no-controller-fencing")
    assert applied[-1] == (True, "NONE")            # a request older than an epoch the broker has seen
    assert not any(stale for stale, _ in applied[:-1])


def walk_sample(preset: str, nodes: int) -> int:
    """``nodes`` states spread evenly over the BFS order (the deepest included): each is
    reached along its shortest path, comparing every step, and every transition leaving
    it is taken.  Returns the number of transitions checked."""
    cfg = resolve(FAMILY, preset, {})
    model = FAMILY.build(cfg)
    g = explore(model)
    out = g.out_edges()
    picks = sorted({round(i * (len(g.states) - 1) / (nodes - 1)) for i in range(nodes)})
    checked = 0
    for n in picks:
        impl = KafkaImplementation(dict(cfg))
        for _src, a, dst in g.path_to(n) + [g.edges[ei] for ei in out[n]]:
            im = impl if _src != n else pickled(impl)
            assert im.enabled(a), f"{preset}: impl cannot do {a} after {[str(e[1]) for e in g.path_to(_src)]}"
            im.apply(a)
            assert _canon(im.observe()) == _canon(model.observe(g.states[dst])), \
                f"{preset}: diverges at {a} after {[str(e[1]) for e in g.path_to(_src)]}"
            checked += 1
    return checked


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["delete", "data-unclean", "data-kip320",
                                    "reassign", "reassign-crash"])
def test_larger_presets_conform_on_a_sample_of_states(preset):
    """100 states of each larger preset, with every transition leaving them; with
    KMC_FULL_CONFORMANCE=1, every transition of the whole graph (minutes per preset)."""
    if os.environ.get("KMC_FULL_CONFORMANCE"):
        r = walk_graph(preset)
        assert r["taken"] == r["edges"]
    else:
        assert walk_sample(preset, 100) > 100


# -- the coordination store ------------------------------------------------------------------------

def test_store_versions_and_conditional_writes():
    zk = Z.InMemoryStore()
    s = zk.open_session()
    zk.create(s, "/p", b"a")
    assert zk.get_data(s, "/p")[1].version == 0
    assert zk.set_data(s, "/p", b"b", version=0).version == 1
    with pytest.raises(Z.BadVersionError):
        zk.set_data(s, "/p", b"c", version=0)
    with pytest.raises(Z.BadVersionError):
        zk.delete(s, "/p", version=0)
    assert zk.get_data(s, "/p")[0] == b"b"
    with pytest.raises(Z.NodeExistsError):
        zk.create(s, "/p")
    with pytest.raises(Z.NoNodeError):
        zk.create(s, "/missing/child")
    zk.create(s, "/p/c")
    with pytest.raises(Z.NotEmptyError):
        zk.delete(s, "/p")


def test_store_multi_is_all_or_nothing():
    zk = Z.InMemoryStore()
    s = zk.open_session()
    zk.create(s, "/epoch", b"1")
    with pytest.raises(Z.BadVersionError):
        zk.multi(s, [Z.Create("/a"), Z.Check("/epoch", 5)])
    assert zk.exists(s, "/a") is None
    zk.multi(s, [Z.Check("/epoch", 0), Z.Create("/a"), Z.Create("/a/b"), Z.SetData("/epoch", b"2", 0)])
    assert zk.exists(s, "/a/b") is not None and zk.get_data(s, "/epoch")[1].version == 1


def test_store_ephemerals_go_with_their_session_and_fire_watches():
    zk = Z.InMemoryStore()
    owner, watcher = zk.open_session(), zk.open_session()
    zk.create(owner, "/ids")
    zk.create(owner, "/ids/1", b"x", ephemeral=True)
    czxid = zk.exists(watcher, "/ids/1").czxid
    assert zk.get_children(watcher, "/ids", watch=True) == ["1"]
    with pytest.raises(Z.NoChildrenForEphemeralsError):
        zk.create(owner, "/ids/1/child")
    zk.expire_session(owner)
    assert zk.exists(watcher, "/ids/1") is None
    assert zk.poll_events(watcher) == [Z.WatchedEvent("NodeChildrenChanged", "/ids")]
    with pytest.raises(Z.SessionExpiredError):
        zk.get_data(owner, "/ids")
    again = zk.open_session()
    zk.create(again, "/ids/1", b"x", ephemeral=True)
    assert zk.exists(watcher, "/ids/1").czxid > czxid          # a new broker epoch
    assert zk.poll_events(watcher) == []                          # the watch fired once and was not re-set


def test_store_watches_are_one_shot_and_die_with_the_session():
    zk = Z.InMemoryStore()
    a, b = zk.open_session(), zk.open_session()
    zk.exists(a, "/controller", watch=True)
    zk.create(b, "/controller", ephemeral=True)
    zk.create(b, "/x")
    assert zk.poll_events(a) == [Z.WatchedEvent("NodeCreated", "/controller")]
    zk.get_data(a, "/x", watch=True)
    zk.set_data(b, "/x", b"1")
    zk.set_data(b, "/x", b"2")
    assert zk.poll_events(a) == [Z.WatchedEvent("NodeDataChanged", "/x")]
    zk.get_data(a, "/x", watch=True)
    zk.expire_session(a)
    zk.set_data(b, "/x", b"3")
    assert zk.poll_events(a) == []
    zk.close_session(b)
    c = zk.open_session()
    assert zk.exists(c, "/controller") is None and zk.exists(c, "/x") is not None


def test_store_sequential_nodes_count_per_parent():
    zk = Z.InMemoryStore()
    s = zk.open_session()
    zk.create(s, "/n")
    assert [zk.create(s, "/n/isr_change_", sequential=True) for _ in range(2)] == \
        ["/n/isr_change_0000000000", "/n/isr_change_0000000001"]


# -- the log -----------------------------------------------------------------------------------------

def _log(epochs, hw=0) -> Log:
    log = Log()
    for e in epochs:
        log.append(e)
    log.high_watermark_checkpoint = hw
    return log


def test_log_truncation_keeps_hw_and_epoch_cache_in_step():
    log = _log([0, 0, 1, 1, 3], hw=4)
    assert log.epochs.entries == [(0, 0), (1, 2), (3, 4)]
    assert log.truncate_to(3) and log.records == [0, 0, 1]
    assert log.high_watermark_checkpoint == 3 and log.epochs.entries == [(0, 0), (1, 2)]
    assert not log.truncate_to(5)


def test_kip101_end_offset_for_epoch():
    """Kafka 0.11's LeaderEpochFileCache.endOffsetFor."""
    log = _log([0, 0, 2, 2])
    assert log.epochs.end_offset_for(2, log.log_end_offset) == 4     # the latest epoch ends at the LEO
    assert log.epochs.end_offset_for(0, log.log_end_offset) == 2     # an earlier one where the next starts
    assert log.epochs.end_offset_for(1, log.log_end_offset) == 2     # never had it: the next epoch's start
    assert log.epochs.end_offset_for(3, log.log_end_offset) == UNDEFINED_EPOCH_OFFSET
    assert _log([1]).epochs.end_offset_for(0, 1) == UNDEFINED_EPOCH_OFFSET   # older than the first epoch
    assert Log().epochs.end_offset_for(0, 0) == UNDEFINED_EPOCH_OFFSET


def test_kip279_epoch_and_end_offset():
    """2.0's and 2.1's endOffsetFor: they differ on an epoch older than the first cached one."""
    log = _log([0, 0, 2, 2])
    assert log.epochs.epoch_and_end_offset_for(1, 4) == (0, 2)       # largest epoch <= 1 is 0, ending at 2
    assert log.epochs.epoch_and_end_offset_for(5, 4) == (-1, UNDEFINED_EPOCH_OFFSET)   # past the latest
    assert _log([3]).epochs.epoch_and_end_offset_for(1, 1) == (1, 0)                   # 2.1
    assert _log([3]).epochs.epoch_and_end_offset_for(1, 1, kafka_2_1=False) == (-1, UNDEFINED_EPOCH_OFFSET)
    assert Log().epochs.epoch_and_end_offset_for(1, 0) == (-1, UNDEFINED_EPOCH_OFFSET)


def test_kafka_2_1_cache_holds_a_new_leaders_epoch():
    """KAFKA-7415: the epoch assigned on becoming leader is the latest, with no record; the
    next append takes its place, a truncation that cuts records removes it."""
    log = _log([0, 1])
    log.epochs.assign(3, log.log_end_offset)
    assert log.epochs.entries == [(0, 0), (1, 1), (3, 2)] and log.epochs.latest_epoch == 3
    log.append(2)                                 # a follower copies an epoch-2 record from its leader
    assert log.epochs.entries == [(0, 0), (1, 1), (2, 2)]
    log.epochs.assign(4, log.log_end_offset)
    assert not log.truncate_to(3) and log.epochs.latest_epoch == 4   # nothing cut: the entry stays
    assert log.truncate_to(2) and log.epochs.entries == [(0, 0), (1, 1)]


def _truncate(follower_log: tuple, hw: int, leader_log: tuple, ibp: str, fmark: int = -1, lmark: int = -1) -> int:
    """Run the follower's OffsetsForLeaderEpoch rounds against the leader; its new LEO."""
    from impl.config import BrokerConfig
    from impl.replica_manager import FetchState, Partition
    from impl.statechange import StateChangeLogger

    class _NoZk:
        def get_topic_config(self, _topic):
            return {}

    tp = TopicPartition("t", 0)
    f, ld = (ReplicaManager(b, BrokerConfig(inter_broker_protocol_version=ibp), {}, _NoZk(), StateChangeLogger(b),
                            lambda: 0) for b in (0, 1))
    f.logs[tp], ld.logs[tp] = _log(follower_log, hw), _log(leader_log)
    for rm, mark in ((f, fmark), (ld, lmark)):
        if mark >= 0:
            rm.logs[tp].epochs.assign(mark, rm.logs[tp].log_end_offset)
    for rm in (f, ld):
        rm.partitions[tp] = Partition(tp, (0, 1), 1, 5, (1,), 1, 0)
    f.fetchers[tp] = FetchState(1, 5, truncating=True)
    req = f.build_offsets_for_leader_epoch(tp)
    while req is not None:
        req = f.handle_offsets_for_leader_epoch_response(tp, ld.handle_offsets_for_leader_epoch(req))
    return f.logs[tp].log_end_offset


def test_truncation_rounds_agree_with_the_models_one_step_rules():
    """The reference broker's OffsetsForLeaderEpoch rounds (0.11, 2.0, 2.1) land where the
    model's strategy for the same version puts the follower in one step (spec/datapath.py),
    for every pair of logs of up to 3 records in epochs 0-3 where an epoch starts at the same
    offset on both logs (one leader per epoch makes it so), with and without an epoch the
    cache holds at the LEO (Kafka 2.1)."""
    import itertools

    from spec.datapath import RULES
    from spec.state import Replica

    logs = [()] + [c for n in (1, 2, 3) for c in itertools.combinations_with_replacement(range(4), n)]
    checked = 0
    for fl, ll in itertools.product(logs, logs):
        if any(fl.index(e) != ll.index(e) for e in set(fl) & set(ll)):
            continue
        for hw in range(len(fl) + 1):
            for ibp, name in (("0.11", "kip101"), ("2.0", "kip279"), ("2.1", "kip320")):
                marks = (-1, 4, 5) if name == "kip320" else (-1,)
                for fmark, lmark in itertools.product(marks, (-1, 5) if name == "kip320" else (-1,)):
                    if fmark == lmark == 5:
                        continue
                    fr = Replica(fl, hw, (), True, fmark)
                    lr = Replica(ll, 0, (), False, lmark)
                    want, _done = RULES[name].truncation(fr, lr)
                    got = _truncate(fl, hw, ll, ibp, fmark, lmark)
                    assert got == min(len(fl), want), (name, fl, hw, fmark, ll, lmark)
                    checked += 1
    assert checked > 5000


def test_the_cluster_finishes_a_broker_failure_before_it_sees_the_restart():
    """Cluster.settle follows Kafka's one event thread: after broker 1 crashes and comes
    back before the controller looked, the controller handles the failure event to its
    end, OfflineReplica included (broker 1 out of the ISR: leader epoch + 1), before the
    startup event.  Taking the startup first, as the settle order did before, leaves the
    restarted broker in the ISR without that write."""
    impl = KafkaImplementation(resolve(FAMILY, "failover", {}))
    c = impl.cluster
    c.settle()
    tp = TopicPartition("t", 0)
    before = c.admin.get_partition_state(tp)
    assert before.leader == 0 and before.isr == (0, 1)
    c.crash(1)
    c.start_broker(1)
    c.settle()
    after = c.admin.get_partition_state(tp)
    assert after.leader == 0 and after.leader_epoch == before.leader_epoch + 1
    assert after.isr == (0, 1)          # broker 1 caught up and the leader added it back


def test_kip320_isr_expansion_from_the_epochs_start_conforms():
    """KAFKA-7128's fence on both sides: the reference broker adds a follower that fetched
    from where the leader's epoch starts while the HW lags in an older epoch, as the
    model does (tests/test_datapath.py tells the story), and refuses it one fetch
    earlier; every step's observation agrees."""
    cfg = resolve(FAMILY, "data-kip320-3", {})
    m = FAMILY.build(cfg)
    _, acts = prefix_path(m, *(
        "ElectController(broker=0)", "CrashBroker(broker=1)", "RestartBroker(broker=1)",
        "DeliverLeaderAndIsr(broker=0, partition=0, controller_epoch=1, leader=0, leader_epoch=0",
        "DeliverLeaderAndIsr(broker=1", "Produce(leader=0", "DeliverLeaderAndIsr(broker=0",
        "TruncateFollower(follower=1", "Fetch(follower=1", "Fetch(follower=1", "ExpandIsr(leader=0"))
    assert str(acts[-1]) == "ExpandIsr(leader=0, partition=0, replica=1)"
    h = Harness(m, KafkaImplementation, cfg)
    assert h.run(acts) is None
    impl = KafkaImplementation(cfg)
    for a in acts[:-2]:
        impl.apply(a)
    assert not impl.enabled(acts[-1])      # fetched from offset 0 only: below the epoch's start
    impl.apply(acts[-2])
    assert impl.enabled(acts[-1])


def test_kip320_a_restarted_leader_sent_its_own_epoch_again_starts_it_at_its_whole_leo():
    """KAFKA-7128's epoch start is the LEO of the last ``makeLeader``: broker 0 leads
    epoch 1 and appends two records, crashes and restarts before any controller
    handles it, and the new controller sends it epoch 1 again, so its fresh
    ``Partition`` starts epoch 1 at offset 2, not at the epoch's first record (0).
    Follower 1, fetching from offset 0, may not join; an earlier version of the model
    let it, and the reference broker refused (found by review)."""
    cfg = resolve(FAMILY, "data-kip320-3", {"max_controller_failovers": 1, "atomic_controller": False})
    m = FAMILY.build(cfg)
    s, acts = prefix_path(m, *(
        "ElectController(broker=0)", "CrashBroker(broker=1)", "ElectLeader(", "DeliverLeaderAndIsr(broker=0",
        "DeliverLeaderAndIsr(broker=2", "BrokerFailure(controller=0, broker=1)", "RemoveReplicaFromIsr(",
        "DeliverLeaderAndIsr(broker=0", "DeliverLeaderAndIsr(broker=2", "RestartBroker(broker=1)",
        "BrokerStartup(controller=0, broker=1)", "Produce(leader=0", "Produce(leader=0",
        "CrashBroker(broker=0)", "RestartBroker(broker=0)", "ElectController(broker=2)",
        "DeliverLeaderAndIsr(broker=0, partition=0, controller_epoch=2",
        "DeliverLeaderAndIsr(broker=1, partition=0, controller_epoch=1, leader=0, leader_epoch=1",
        "TruncateFollower(follower=1", "Fetch(follower=1"))
    view, lead = s.brokers[0].partitions[0], s.brokers[0].replicas[0]
    assert (view.leader_epoch, lead.log, lead.hw, lead.leos[1]) == (1, (1, 1), 0, 0)
    expand = action("ExpandIsr", leader=0, partition=0, replica=1)
    assert expand not in m.actions(s)
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None
    impl = KafkaImplementation(cfg)
    for a in acts:
        impl.apply(a)
    assert not impl.enabled(expand)


def test_a_controlled_shutdowns_follower_is_sent_stop_replica_and_stops_following():
    """Kafka's OfflineReplica batches StopReplica(delete=false) to the replica before
    it removes it from the ISR (``ReplicaStateMachine``, every version); for a live
    broker, which only a controlled shutdown's follower is, the request arrives and
    the broker stops following.  The model once sent none, and the reference broker
    still must agree step by step."""
    from spec.state import StopReplica
    cfg = resolve(FAMILY, "shutdown", {})
    m = FAMILY.build(cfg)
    s, acts = prefix_path(m, "ElectController(broker=0)", "ElectLeader(", "DeliverLeaderAndIsr(broker=1",
                          "ControlledShutdown(controller=0, broker=1)",
                          "RemoveReplicaFromIsr(controller=0, partition=0, replica=1)")
    assert StopReplica(1, 0, False) in s.brokers[1].inbox
    assert s.brokers[1].partitions[0].leader == 0
    s, acts = prefix_path(m, *map(str, acts), "DeliverStopReplica(broker=1, partition=0, controller_epoch=1, delete=False)")
    assert s.brokers[1].partitions[0].leader == -1
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None


def test_a_leader_keeps_leading_through_stop_replica_without_delete():
    """Kafka's stopReplica(delete=false) removes fetchers and nothing else.  Here broker
    1 leads, a preferred election moves the leadership to broker 0, and broker 1 asks
    to stop before that election's LeaderAndIsr reaches it: the StopReplica of the
    shutdown's OfflineReplica arrives while broker 1 still believes it leads (requests
    in flight form a set), and it must go on leading until the LeaderAndIsr comes.  The
    model and the reference broker once both dropped its leadership, and on a path
    that elected broker 1 in an offline election while it shut down the partition
    stayed leaderless for ever (EventuallyLeaderElected failed on ``shutdown`` in 14
    steps); Kafka's elections never pick a broker in controlled shutdown, and the
    model's no longer do (test_no_election_picks_a_broker_in_controlled_shutdown)."""
    cfg = resolve(FAMILY, "shutdown", {})
    m = FAMILY.build(cfg)
    s, acts = prefix_path(m, "CrashBroker(broker=0)", "ElectController(broker=1)", "RestartBroker(broker=0)",
                          "ElectLeader(controller=1, partition=0, leader=1", "BrokerStartup(controller=1, broker=0)",
                          "DeliverLeaderAndIsr(broker=0", "DeliverLeaderAndIsr(broker=1",
                          "ExpandIsr(leader=1, partition=0, replica=0)",
                          "ElectLeader(controller=1, partition=0, leader=0, strategy='preferred'",
                          "ControlledShutdown(controller=1, broker=1)",
                          "RemoveReplicaFromIsr(controller=1, partition=0, replica=1)",
                          "DeliverStopReplica(broker=1, partition=0, controller_epoch=1, delete=False)")
    assert s.zk.partitions[0].leader == 0
    assert s.brokers[1].partitions[0].leader == 1
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None


def test_no_election_picks_a_broker_in_controlled_shutdown():
    """Kafka's elections take their live replicas from ``liveBrokerIds``, which leaves
    out the brokers in controlled shutdown (``PartitionLeaderSelector`` in 0.10 and
    0.11, ``ControllerContext.isReplicaOnline`` in 2.x).  Controller 0 shuts itself
    down: its controlled-shutdown election moves the leadership to broker 1, broker 0
    follows and rejoins the ISR, then broker 1 crashes.  Broker 0 is the last live ISR
    member, but it is shutting down, so no offline election is enabled (the old rule
    elected it) and the OfflineReplica step leaves the partition without a leader, in
    the model and in the reference broker."""
    cfg = resolve(FAMILY, "shutdown", {})
    m = FAMILY.build(cfg)
    s, acts = prefix_path(m, *LAST_ISR_MEMBER_SHUTTING_DOWN)
    assert s.zk.partitions[0].isr == (0, 1) and s.brokers[0].ctx.shutting_down == (True, False)
    old = action("ElectLeader", controller=0, partition=0, leader=0, strategy="offline", clean=True)
    assert not [a for a in m.actions(s) if a.name == "ElectLeader"]
    s, acts = prefix_path(m, *map(str, acts), "RemoveReplicaFromIsr(controller=0, partition=0, replica=1)")
    assert (s.zk.partitions[0].leader, s.zk.partitions[0].isr) == (-1, (0,))
    assert not [a for a in m.actions(s) if a.name == "ElectLeader"]
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None
    impl = KafkaImplementation(cfg)
    for a in acts[:-1]:
        impl.apply(a)
    assert not impl.enabled(old)


def test_a_failed_step_7_election_goes_on_with_steps_8_to_11():
    """Step 7 of a reassignment whose election finds no replica of RAR it may pick (the
    only one is in controlled shutdown) fails without a write, and the event goes on:
    0.10's and 0.11's ``PartitionStateMachine.handleStateChange`` log the
    ``ReassignedPartitionLeaderSelector``'s exception, 2.x's ``electLeaderForPartitions``
    logs the failed election, and ``onPartitionReassignment`` carries on with steps 8-11
    in every version.  Step 8 then takes the old leader out (leader -1, ISR = RAR) and
    tells RAR; once broker 1 stops and comes back, an election gives it the partition.
    The model used to wait at step 6 instead, and a broker failure's OfflineReplica bumped
    the leader epoch without telling the old leader, outside the cached AR, so it never
    learnt that it still led (EventuallyLeaderElected failed on reassign-rf with a
    controlled shutdown).  The reference broker takes the same steps."""
    cfg = resolve(FAMILY, "reassign-rf", {"max_controlled_shutdowns": 1})
    m = FAMILY.build(cfg)
    s, acts = prefix_path(m, *STEP7_ELECTION_FAILS)
    before = s.zk.partitions[0]
    assert (before.leader, before.isr, s.zk.ar[0]) == (0, (0, 1), (0, 1)) and s.brokers[0].ctx.shutting_down[1]
    s, acts = prefix_path(m, *map(str, acts), "ReassignElectLeader(controller=0, partition=0, leader=-1)")
    assert s.zk.partitions[0] == before and s.brokers[0].ctx.reassigning[0].step == "7"
    assert [a.name for a in m.actions(s) if a.get("controller") == 0] == ["ReassignOfflineOldReplicas"]
    s, acts = prefix_path(m, *map(str, acts), "ReassignOfflineOldReplicas(", "ReassignStartReplicaDeletion(",
                          "ReassignReplicaDeletionSuccessful(", "ReassignRemoveReplicas(", "ReassignShrinkAr(",
                          "CompleteReassignment(")
    li = s.zk.partitions[0]
    assert (li.leader, li.isr, s.zk.ar[0], s.zk.reassign[0]) == (-1, (1,), (1,), ())
    assert li.leader_epoch == before.leader_epoch + 1
    assert any(getattr(r, "leader", None) == -1 for r in s.brokers[1].inbox)
    assert sorted(r.delete for r in s.brokers[0].inbox if not hasattr(r, "leader")) == [False, True]
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None
    s, later = prefix_path(m, *map(str, acts), "ShutdownBroker(broker=1)", "BrokerFailure(controller=0, broker=1)",
                           "RemoveReplicaFromIsr(controller=0, partition=0, replica=1)", "RestartBroker(broker=1)",
                           "BrokerStartup(controller=0, broker=1)",
                           "ElectLeader(controller=0, partition=0, leader=1, strategy='preferred'")
    assert s.zk.partitions[0].leader == 1
    assert Harness(m, KafkaImplementation, cfg).run(later) is None


def _lai_to(observed_broker: dict, partition: int, leader_epoch: int) -> list:
    return [q for q in observed_broker["inbox"] if q["type"] == "LeaderAndIsr" and q["partition"] == partition
            and q["leader_epoch"] == leader_epoch]


@pytest.mark.parametrize("overrides, steps", [
    # offline: controller 1 shuts itself down while broker 0 leads; broker 0 crashes,
    # is written out (leader -1, ISR [0]), restarts, and the startup's offline election
    # makes it leader again in leader epoch 3
    ({}, ("ElectController(broker=1)", "ElectLeader(controller=1, partition=0, leader=0",
          "ControlledShutdown(controller=1, broker=1)", "RemoveReplicaFromIsr(controller=1, partition=0, replica=1)",
          "CrashBroker(broker=0)", "BrokerFailure(controller=1, broker=0)",
          "RemoveReplicaFromIsr(controller=1, partition=0, replica=0)", "RestartBroker(broker=0)",
          "BrokerStartup(controller=1, broker=0)",
          "ElectLeader(controller=1, partition=0, leader=0, strategy='offline'")),
    # NewPartition: controller 1 shuts itself down before the admin creates the topic
    ({"create_topic_after_start": True},
     ("ElectController(broker=1)", "ControlledShutdown(controller=1, broker=1)", "CreateTopic", "TopicChange",
      "ElectLeader(controller=1, partition=0, leader=0, strategy='new'")),
])
def test_an_offline_or_new_partition_election_does_not_tell_a_broker_in_controlled_shutdown(overrides, steps):
    """Kafka sends an offline or NewPartition election's LeaderAndIsr to the live replicas
    of ``liveBrokerIds`` alone (0.10's ``OfflinePartitionLeaderSelector`` and
    ``initializeLeaderAndIsrForPartition``; 2.x's ``leaderForOffline`` and
    ``initializeLeaderAndIsrForPartitions``), so broker 1, which asked to stop, is not
    told; the model and the reference broker once sent it one.  The preferred and
    controlled-shutdown elections still go to it (the previous tests)."""
    cfg = resolve(FAMILY, "shutdown", overrides)
    m = FAMILY.build(cfg)
    s, acts = prefix_path(m, *steps)
    epoch = s.zk.partitions[0].leader_epoch
    assert s.zk.partitions[0].leader == 0 and s.brokers[1].ctx.shutting_down == (False, True)
    assert _lai_to(m.observe(s)["brokers"][0], 0, epoch)
    assert not _lai_to(m.observe(s)["brokers"][1], 0, epoch)
    impl = KafkaImplementation(cfg)
    for a in acts:
        impl.apply(a)
    assert _lai_to(impl.observe()["brokers"][0], 0, epoch)
    assert not _lai_to(impl.observe()["brokers"][1], 0, epoch)
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None
