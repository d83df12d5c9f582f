"""UpdateMetadata and the brokers' metadata caches (``metadata_cache``), in spec/ and impl/.

The controller sends UpdateMetadata with every LeaderAndIsr batch, on failover, on a
broker's startup and on an ISR change (``ControllerBrokerRequestBatch``); a broker's
``MetadataCache`` takes it behind the controller-epoch check
(``ReplicaManager.maybeUpdateMetadataCache``).  Producers send to the leader a cache
names; a broker that does not lead answers NOT_LEADER_FOR_PARTITION.
"""

from __future__ import annotations

import pytest

from checker import bfs
from checker.config import resolve
from checker.conform import Harness, covering_set
from checker.graph import explore
from impl.adapter import TOPIC, KafkaImplementation
from impl.replica_manager import NOT_LEADER_FOR_PARTITION
from impl.zkclient import TopicPartition
from spec.family import FAMILY
from spec.state import NO_LEADER, Broker, CachingBroker

TP0 = TopicPartition(TOPIC, 0)
ONE = {"max_records": 1, "max_crashes": 0}


def _model(preset: str, over: dict):
    cfg = resolve(FAMILY, preset, over)
    return FAMILY.build(cfg), cfg


def _path(m, *wants):
    s, out = m.init_states()[0], []
    for w in wants:
        a = next((a for a in m.actions(s) if str(a).startswith(w)), None)
        assert a is not None, f"{w} not enabled; enabled: {[str(x) for x in m.actions(s)]}"
        out.append(a)
        s = m.next_state(s, a)
    return s, out


def test_without_the_cache_states_keep_their_encoding():
    """The cache is a separate broker class: every configuration without it keeps its
    states' encoding, so the recorded traces keep their fingerprints."""
    m, _ = _model("data-kip320", {})
    assert type(m.init_states()[0].brokers[0]) is Broker
    assert "DeliverUpdateMetadata" not in m.action_names()
    m, _ = _model("data-cache", {})
    assert type(m.init_states()[0].brokers[0]) is CachingBroker
    assert "DeliverUpdateMetadata" in m.action_names()


def test_producers_route_by_the_cache_and_a_non_leader_refuses():
    """No producer can send before some cache names a leader.  The leader's own
    UpdateMetadata waits for its LeaderAndIsr (FIFO channel).  After the leader
    crashes and restarts with an empty memory, the follower's cache still names it:
    the producer is routed there, and the broker answers NOT_LEADER_FOR_PARTITION
    (nothing changes, in the model and in the reference broker)."""
    m, cfg = _model("data-cache", {})
    s, acts = _path(m, "ElectController(broker=0)", "ElectLeader(controller=0, partition=0, leader=0")
    assert not [a for a in m.actions(s) if a.name == "Produce"]
    assert not [a for a in m.actions(s) if a.name == "DeliverUpdateMetadata" and a.get("broker") == 0]
    s, acts = _path(m, *map(str, acts), "DeliverLeaderAndIsr(broker=0", "DeliverLeaderAndIsr(broker=1",
                    "DeliverUpdateMetadata(broker=1")
    assert s.brokers[1].metadata == (0,) and s.brokers[0].metadata == (NO_LEADER,)
    assert [str(a) for a in m.actions(s) if a.name == "Produce"] == ["Produce(leader=0, partition=0, acks='all')"]
    s, acts = _path(m, *map(str, acts), "CrashBroker(broker=0)", "RestartBroker(broker=0)")
    produce = next(a for a in m.actions(s) if a.name == "Produce")
    assert produce.get("leader") == 0 and m.next_state(s, produce) == s      # NOT_LEADER_FOR_PARTITION
    assert Harness(m, KafkaImplementation, cfg).run(acts + [produce]) is None
    impl = KafkaImplementation(cfg)
    for a in acts:
        impl.apply(a)
    assert impl.cluster.produce(0, TP0, "all") == (NOT_LEADER_FOR_PARTITION, -1)


def test_a_stale_controllers_update_metadata_is_refused_unless_fencing_is_off():
    """maybeUpdateMetadataCache refuses an UpdateMetadata from an older controller epoch
    than the broker has seen; with controller_epoch_fencing off the cache takes it and
    ControllerEpochFencing names the step."""
    for fencing in (True, False):
        m, cfg = _model("data-no-controller-fencing", {"controller_epoch_fencing": fencing})
        s = m.init_states()[0]
        # broker 1 has seen controller epoch 2; an UpdateMetadata of epoch 1 reaches it
        from spec.state import UpdateMetadata, put
        br = s.brokers[1]._replace(controller_epoch_seen=2, inbox=(UpdateMetadata(1, 0, 0, 0),))
        s = s._replace(brokers=put(s.brokers, 1, br))
        a = next(a for a in m.actions(s) if a.name == "DeliverUpdateMetadata")
        nxt = m.next_state(s, a)
        assert nxt.brokers[1].metadata[0] == (NO_LEADER if fencing else 0)
        prop = next(p for p in m.properties() if p.name == "ControllerEpochFencing")
        assert prop.predicate(s, a, nxt) is fencing


def test_data_cache_conforms_on_every_transition_with_probe():
    """The covering set of the smallest cached data path (75 states) conforms, and in
    every state the reference broker refuses every action the model does not enable."""
    from tests import cli_support
    r = cli_support.kmc("conform", "--model", "spec.family:FAMILY", "--preset", "data-cache", "--set",
                        "max_records=1", "--set", "max_crashes=0", "--probe", "--quiet", timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    assert "transitions covered: 138/138 (100%)" in r.stdout
    assert "verdict: CONFORMS" in r.stdout


@pytest.mark.slow
def test_data_cache_with_a_crash_conforms_on_every_transition():
    """With a crash (7,863 states, 20,819 transitions; 11,035 and 30,653 without the
    controller's event order)."""
    m, cfg = _model("data-cache", {"max_records": 1})
    h = Harness(m, KafkaImplementation, cfg)
    cover = covering_set(explore(m))
    assert cover.covered == len(cover.graph.edges) == 20_819
    for init, acts in cover.traces:
        d = h.run(acts, init)
        assert d is None, d.render()


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["data-zombie", "data-no-controller-fencing"])
def test_fencing_off_with_caches_random_walks_conform(preset):
    """The fencing-off presets with caches are too large for a covering set: random walks."""
    from checker.conform import random_walks
    m, cfg = _model(preset, {"max_records": 1})
    assert random_walks(Harness(m, KafkaImplementation, cfg), walks=20, depth=40) is None


def _verdicts(m) -> set:
    r = bfs.check(m, keep_going=True)
    return {v.property for v in r.violations}


@pytest.mark.parametrize("preset, over", [
    ("data-hw", {"max_records": 1, "max_crashes": 1}),                                   # 1,599 / 6,711 states
    pytest.param("data-unclean", {"max_records": 1}, marks=pytest.mark.slow),            # 6,251 / 41,003
    pytest.param("data-hw", {"max_records": 1}, marks=pytest.mark.slow),                 # 21,132 / 151,843
    pytest.param("data-cache", {"max_records": 1}, marks=pytest.mark.slow)])
def test_routing_without_the_cache_gives_the_caches_verdicts(preset, over):
    """The presets without the cache route a producer to every broker that believes it
    leads.  With the cache, a broker that believes it leads is routable once its own
    UpdateMetadata (sent with its LeaderAndIsr) arrives, so the same data-path
    verdicts must come out either way: measured here on small configurations, both ways,
    with every violated property (not only the first)."""
    on, _ = _model(preset, {**over, "metadata_cache": True})
    off, _ = _model(preset, {**over, "metadata_cache": False})
    assert _verdicts(on) == _verdicts(off)


@pytest.mark.slow
def test_data_cache_holds():
    """data-cache: every property holds, every witness is reached (19,120 states, depth 27)."""
    m, _ = _model("data-cache", {})
    r = bfs.check(m)
    assert r.verdict == "ok", r.violations
    assert (r.stats.distinct, r.stats.depth) == (19_120, 27)


def test_a_zombies_update_metadata_routes_a_producer_to_the_former_leader_with_every_fence_on():
    """The data consequence, with every fence on: broker 0, controller with epoch 1, has
    its session expire, and as a zombie still creates the partition (leader 0).
    Broker 1 becomes controller with epoch 2 and, broker 0 being dead to it, elects
    itself (leader epoch 1).  Broker 0 has not heard of epoch 2, so nothing refuses
    the zombie's LeaderAndIsr and UpdateMetadata: its cache names broker 0, the producer
    sends there, and the deposed leader appends the record in leader epoch 0.  An
    acks=all write is never acknowledged (the HW waits for broker 1, which follows no
    one there); an acks=1 write would be, and is lost when broker 0 follows broker 1.
    The same path conforms on the reference broker."""
    m, cfg = _model("data-cache", {"max_session_expiries": 1, "max_crashes": 0})
    s, acts = _path(m, "ElectController(broker=0)", "ExpireSession(broker=0)",
                    "ElectLeader(controller=0, partition=0, leader=0", "ElectController(broker=1)",
                    "ElectLeader(controller=1, partition=0, leader=1", "DeliverLeaderAndIsr(broker=0",
                    "DeliverUpdateMetadata(broker=0, partition=0, controller_epoch=1, leader=0",
                    "Produce(leader=0")
    assert s.zk.controller_epoch == 2 and s.zk.partitions[0].leader == 1
    assert s.brokers[0].metadata == (0,) and s.brokers[0].replicas[0].log == (0,)
    assert s.ghost.inv_pending == ((0, 0, 0),) and s.ghost.inv_acked == ()
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None


def test_the_process_clusters_wire_carries_update_metadata_and_metadata_requests():
    """impl/node.py serves UpdateMetadata and the clients' MetadataRequest over impl/wire.py
    (the cluster tests run them for real); every one of these frames decodes to itself."""
    from impl import wire as W
    from impl.requests import UpdateMetadataRequest

    for msg in (UpdateMetadataRequest(1, 2, TP0, 0, 3), W.UpdateMetadataResponse(0, "STALE_CONTROLLER_EPOCH"),
                W.MetadataRequest(TP0), W.MetadataResponse("LEADER_NOT_AVAILABLE", NO_LEADER)):
        frame = W.encode(msg)
        assert W.decode(frame[4:]) == msg
