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
from checker.prefixes import pickled, replay
from impl.adapter import TOPIC, KafkaImplementation
from impl.replica_manager import NOT_LEADER_FOR_PARTITION
from impl.zkclient import TopicPartition
from spec import controller
from spec.family import FAMILY
from spec.state import NO_LEADER, NO_STATE, Broker, CachingBroker
from tests.walk_support import prefix_path

TP0 = TopicPartition(TOPIC, 0)
ONE = {"max_records": 1, "max_crashes": 0}


def _model(preset: str, over: dict):
    cfg = resolve(FAMILY, preset, over)
    return FAMILY.build(cfg), cfg


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
    s, acts = prefix_path(m, "ElectController(broker=0)", "ElectLeader(controller=0, partition=0, leader=0")
    assert not [a for a in m.actions(s) if a.name == "Produce"]
    # the failover's UpdateMetadata (no partition state yet, the live brokers) comes first
    assert {str(a) for a in m.actions(s) if a.name.startswith("Deliver")} == {
        f"DeliverUpdateMetadata(broker={b}, partition=0, controller_epoch=1, leader=-1, leader_epoch=-1, "
        f"live=(0, 1))" for b in (0, 1)}
    s, acts = prefix_path(m, *map(str, acts), "DeliverUpdateMetadata(broker=0", "DeliverUpdateMetadata(broker=1",
                    "DeliverLeaderAndIsr(broker=0", "DeliverLeaderAndIsr(broker=1", "DeliverUpdateMetadata(broker=1")
    assert s.brokers[1].metadata == (0,) and s.brokers[0].metadata == (NO_LEADER,)
    assert s.brokers[0].alive_brokers == s.brokers[1].alive_brokers == (0, 1)
    assert [str(a) for a in m.actions(s) if a.name == "Produce"] == ["Produce(leader=0, partition=0, acks='all')"]
    s, acts = prefix_path(m, *map(str, acts), "CrashBroker(broker=0)", "RestartBroker(broker=0)")
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
        br = s.brokers[1]._replace(controller_epoch_seen=2, inbox=(UpdateMetadata(1, 0, 0, 0, (0, 1), False),))
        s = s._replace(brokers=put(s.brokers, 1, br))
        a = next(a for a in m.actions(s) if a.name == "DeliverUpdateMetadata")
        nxt = m.next_state(s, a)
        assert nxt.brokers[1].metadata[0] == (NO_LEADER if fencing else 0)
        prop = next(p for p in m.properties() if p.name == "ControllerEpochFencing")
        assert prop.predicate(s, a, nxt) is fencing


def test_data_cache_conforms_on_every_transition_with_probe():
    """The covering set of the smallest cached data path (97 states) conforms, and in
    every state the reference broker refuses every action the model does not enable."""
    from tests import cli_support
    r = cli_support.kmc("conform", "--model", "spec.family:FAMILY", "--preset", "data-cache", "--set",
                        "max_records=1", "--set", "max_crashes=0", "--probe", "--quiet", timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    assert "transitions covered: 182/182 (100%)" in r.stdout
    assert "verdict: CONFORMS" in r.stdout


@pytest.mark.slow
def test_data_cache_with_a_crash_conforms_on_every_transition():
    """With a crash (8,933 states, 22,982 transitions; 7,863 and 20,819 before the live
    brokers were in the caches)."""
    m, cfg = _model("data-cache", {"max_records": 1})
    h = Harness(m, KafkaImplementation, cfg)
    cover = covering_set(explore(m))
    assert cover.covered == len(cover.graph.edges) == 22_982
    for _, d in replay(h, cover.traces, snapshot=pickled):   # shared prefixes once: tests/test_prefixes.py
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
    ("data-hw", {"max_records": 1, "max_crashes": 1}),                                   # 7,622 / 1,599 states
    pytest.param("data-unclean", {"max_records": 1}, marks=pytest.mark.slow),            # 48,821 / 6,251
    pytest.param("data-hw", {"max_records": 1}, marks=pytest.mark.slow),                 # 132,843 / 21,132
    pytest.param("data-cache", {"max_records": 1}, marks=pytest.mark.slow)])             # 8,933 / 1,837
def test_routing_without_the_cache_gives_the_caches_verdicts(preset, over, monkeypatch):
    """The presets without the cache route a producer to every broker that believes it
    leads, and count every leader but -1 as live.  With the cache, a broker that
    believes it leads is routable once its own UpdateMetadata (sent with its
    LeaderAndIsr) arrives, and the live brokers reach a broker before its LeaderAndIsr
    (Kafka's order from 0.11).  The same data-path verdicts must come out either way:
    measured here on small configurations, both ways, with every violated property
    (not only the first).  data-hw is 0.10, whose failover sends its UpdateMetadata last
    (next test); here it runs with 0.11's order."""
    monkeypatch.setattr(controller, "failover_sends_ahead", lambda cfg: True)
    on, _ = _model(preset, {**over, "metadata_cache": True})
    off, _ = _model(preset, {**over, "metadata_cache": False})
    assert _verdicts(on) == _verdicts(off)


def test_with_0_10s_failover_order_the_cache_hides_what_the_abstraction_finds():
    """0.10 sends the failover's UpdateMetadata after the LeaderAndIsr, so from the
    initial state (both brokers registered, no cache filled yet) the follower refuses
    its first LeaderAndIsr and never follows: the cache finds no violation where the
    model without it (which counts every leader as live) finds one (3,992 / 1,599
    states).  The abstraction errs on the side of a violation, never of hiding one."""
    over = {"max_records": 1, "max_crashes": 1}
    on, _ = _model("data-hw", {**over, "metadata_cache": True})
    off, _ = _model("data-hw", {**over, "metadata_cache": False})
    assert _verdicts(on) == set() and _verdicts(off) == {"HighWatermarkBelowIsrLeo"}


@pytest.mark.slow
def test_data_cache_holds():
    """data-cache: every property holds, every witness is reached (21,459 states, depth 31;
    19,120 and 27 before the live brokers were in the caches)."""
    m, _ = _model("data-cache", {})
    r = bfs.check(m)
    assert r.verdict == "ok", r.violations
    assert (r.stats.distinct, r.stats.depth) == (21_459, 31)


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
    s, acts = prefix_path(m, "ElectController(broker=0)", "ExpireSession(broker=0)",
                    "ElectLeader(controller=0, partition=0, leader=0", "ElectController(broker=1)",
                    "ElectLeader(controller=1, partition=0, leader=1", "DeliverUpdateMetadata(broker=0",
                    "DeliverLeaderAndIsr(broker=0",
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

    for msg in (UpdateMetadataRequest(1, 2, TP0, 0, 3, (0, 1), True), W.UpdateMetadataResponse(0, "STALE_CONTROLLER_EPOCH"),
                W.MetadataRequest(TP0), W.MetadataResponse("LEADER_NOT_AVAILABLE", NO_LEADER)):
        frame = W.encode(msg)
        assert W.decode(frame[4:]) == msg


def test_a_new_controller_refuses_a_dead_leader_the_live_list_does_not_name():
    """2.x's new controller sends every live broker its UpdateMetadata first (the live
    brokers without the dead leader), then each live replica the leadership it read from
    ZooKeeper, the dead leader's included.  ``makeFollowers`` finds the leader missing
    from ``MetadataCache.getAliveBrokers`` and leaves the partition as it was; the
    partition's election follows.  A producer that asks broker 1 is told
    LEADER_NOT_AVAILABLE: its cache names broker 0, which its live list does not, even
    once broker 0 runs again.  The same path conforms on the reference broker."""
    m, cfg = _model("data-cache", {"max_records": 1})
    s, acts = prefix_path(m, "ElectController(broker=0)", "ElectLeader(controller=0, partition=0, leader=0",
                    "DeliverUpdateMetadata(broker=0", "DeliverLeaderAndIsr(broker=0", "CrashBroker(broker=0)",
                    "ElectController(broker=1)")
    # broker 1 has applied nothing of epochs 1 and 2: each epoch's LeaderAndIsr waits for its UpdateMetadata
    assert not [a for a in m.actions(s) if a.name == "DeliverLeaderAndIsr"]
    s, acts = prefix_path(m, *map(str, acts), "DeliverUpdateMetadata(broker=1, partition=0, controller_epoch=2",
                    "DeliverLeaderAndIsr(broker=1, partition=0, controller_epoch=2, leader=0")
    b1 = s.brokers[1]
    assert b1.alive_brokers == (1,) and b1.metadata == (0,)
    assert b1.partitions[0] == NO_STATE and b1.controller_epoch_seen == 2   # refused, the epoch learnt
    s, acts = prefix_path(m, *map(str, acts), "RestartBroker(broker=0)")
    assert not [a for a in m.actions(s) if a.name == "Produce"]           # LEADER_NOT_AVAILABLE
    s, acts = prefix_path(m, *map(str, acts), "ElectLeader(controller=1, partition=0, leader=1, strategy='offline'",
                    "DeliverLeaderAndIsr(broker=1", "DeliverUpdateMetadata(broker=1, partition=0, controller_epoch=2, leader=1")
    assert s.brokers[1].partitions[0].leader == 1 and s.brokers[1].metadata == (1,)
    assert [a.get("leader") for a in m.actions(s) if a.name == "Produce"] == [1]
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None


def test_a_restarted_brokers_update_metadata_comes_before_its_leader_and_isr():
    """``onBrokerStartup`` sends every live broker (the new one included) its
    UpdateMetadata, then the new broker its LeaderAndIsr, on one FIFO channel: the
    restarted broker, whose cache a crash emptied, learns the live brokers first and
    follows its leader.  Without that order its LeaderAndIsr would be refused."""
    m, cfg = _model("data-cache", {"max_records": 1})
    s, acts = prefix_path(m, "ElectController(broker=0)", "ElectLeader(controller=0, partition=0, leader=0",
                    "DeliverUpdateMetadata(broker=0", "DeliverUpdateMetadata(broker=1", "DeliverLeaderAndIsr(broker=0",
                    "DeliverLeaderAndIsr(broker=1", "DeliverUpdateMetadata(broker=0", "DeliverUpdateMetadata(broker=1",
                    "CrashBroker(broker=1)", "RestartBroker(broker=1)")
    assert s.brokers[1].alive_brokers == () and s.brokers[1].metadata == (NO_LEADER,)       # a crash empties it
    s, acts = prefix_path(m, *map(str, acts), "BrokerFailure(controller=0, broker=1)",
                    "RemoveReplicaFromIsr(controller=0, partition=0, replica=1)", "BrokerStartup(controller=0, broker=1)")
    waiting = [a for a in m.actions(s) if a.name == "DeliverLeaderAndIsr" and a.get("broker") == 1]
    assert not waiting
    s, acts = prefix_path(m, *map(str, acts), "DeliverUpdateMetadata(broker=1")
    assert s.brokers[1].alive_brokers == (0, 1)
    s, acts = prefix_path(m, *map(str, acts), "DeliverLeaderAndIsr(broker=1")
    assert s.brokers[1].partitions[0].leader == 0
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None


def test_kafka_0_10_sends_the_failovers_update_metadata_last():
    """0.10's ``onControllerFailover`` sends its UpdateMetadata after the state machines'
    LeaderAndIsr: a follower whose cache is still empty (it never had an UpdateMetadata)
    refuses the first LeaderAndIsr, "cannot become follower since the new leader 0 is
    unavailable" (0.11 moved the UpdateMetadata ahead for this reason)."""
    m, cfg = _model("data-cache", {"max_records": 1, "truncation": "high_watermark"})
    s, acts = prefix_path(m, "ElectController(broker=0)", "ElectLeader(controller=0, partition=0, leader=0",
                    "DeliverLeaderAndIsr(broker=1")
    assert s.brokers[1].partitions[0] == NO_STATE and s.brokers[1].controller_epoch_seen == 1
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None


def test_the_cache_with_a_topic_created_after_start_is_refused_in_one_line():
    """Before the topic exists Kafka's UpdateMetadata carries only the live brokers; the
    model's carry a partition, so the combination is refused, not modelled wrongly."""
    from tests import cli_support
    r = cli_support.kmc("check", "--preset", "data-cache", "--set", "create_topic_after_start=true")
    assert r.returncode == 2 and "create_topic_after_start" in r.stderr and len(r.stderr.strip().splitlines()) == 1
