"""The smaller gaps of the seeds (issue 11): an operator deleting /controller, and the
__consumer_offsets replication-factor-1 incident, each with its preset, its verdict and
conformance of the reference broker."""

from __future__ import annotations

import pytest

from checker import bfs
from checker.config import resolve
from checker.conform import Harness, covering_set
from checker.graph import GraphBuilder, explore
from checker.liveness import check_liveness
from impl.adapter import TOPIC, KafkaImplementation
from impl.zkclient import NO_LEADER, TopicPartition
from spec.family import FAMILY

TP0 = TopicPartition(TOPIC, 0)


def _model(preset: str, over: dict | None = None):
    cfg = resolve(FAMILY, preset, over or {})
    return FAMILY.build(cfg), cfg


def test_controller_deleted_holds_and_conforms_on_every_transition():
    """rmr /controller while the controller's session lives: the old controller resigns
    when it notices, a broker (maybe the same) is elected with a new epoch, and every
    property holds (727 states).  The reference broker does the same on every
    transition of the graph."""
    m, cfg = _model("controller-deleted")
    r = bfs.check(m)
    assert r.verdict == "ok", r.violations
    assert (r.stats.distinct, r.stats.depth) == (727, 12)
    g = explore(m)
    assert any(a.name == "DeleteController" for _, a, _ in g.edges)
    h = Harness(m, KafkaImplementation, cfg)
    cover = covering_set(g)
    assert cover.covered == len(g.edges)
    for init, acts in cover.traces:
        d = h.run(acts, init)
        assert d is None, d.render()


def test_controller_deletion_forces_a_reelection_in_the_reference_broker():
    m, cfg = _model("controller-deleted")
    impl = KafkaImplementation(cfg)
    from checker.model import action
    for a in (action("ElectController", broker=0), action("DeleteController")):
        assert impl.enabled(a)
        impl.apply(a)
    assert impl.cluster.admin.get_controller_id() == NO_LEADER
    assert impl.cluster.controller(0) is not None            # its session lives; it has not noticed yet
    assert impl.enabled(action("Resign", broker=0))
    assert impl.enabled(action("ElectController", broker=1))
    assert not impl.enabled(action("DeleteController"))     # the one failover the budget allows is spent


def test_offsets_rf1_loses_availability_with_its_only_broker():
    """__consumer_offsets with RF 1: the partition's only broker is shut down and need
    not come back, so the partition (and the consumer groups it coordinates) stays
    without a leader for ever: EventuallyAvailable fails with a lasso, and the
    reference broker ends the same way."""
    m, cfg = _model("offsets-rf1")
    g = explore(m)
    prop = next(p for p in m.properties() if p.name == "EventuallyAvailable")
    (lasso,) = check_liveness(g, m, [prop])
    assert not lasso.loop                                    # it stops there: only RestartBroker is enabled
    acts = [s.action for s in lasso.path()[1:]]
    assert [a.name for a in acts][-2:] == ["ControlledShutdown", "ShutdownBroker"]
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None
    impl = KafkaImplementation(cfg)
    for a in acts:
        impl.apply(a)
    assert impl.cluster.servers[0] is None
    assert not any(s is not None and s.replica_manager.leader_partition(TP0) for s in impl.cluster.servers)


@pytest.mark.slow
def test_offsets_rf3_with_min_insync_2_holds():
    """The recommended fix, RF 3 and min.insync.replicas 2, under the same faults: every
    property holds, EventuallyAvailable included (326,085 states; 312,217 before
    OfflineReplica sent a controlled shutdown's follower StopReplica, and 302,909
    before the model took Kafka 2.1.0's ISR-expansion fence, KAFKA-7128).  One search gives
    both, as ``kmc check`` runs it: the safety verdict, and the state graph that
    liveness is checked on, built during that search."""
    m, _ = _model("offsets-rf3")
    builder = GraphBuilder(400_000)
    r = bfs.check(m, visitor=builder)
    assert r.verdict == "ok", r.violations
    assert r.stats.distinct == 326_085
    assert len(builder.graph.states) == r.stats.distinct and not builder.overflow
    assert check_liveness(builder.graph, m) == []


def test_topic_created_after_start_holds_and_conforms_on_every_transition():
    """The admin creates the topic after the cluster started: the controller's
    /brokers/topics watch (TopicChange) puts its replicas in NewReplica and its
    partition in NewPartition, the NewPartition election takes it OnlinePartition and
    the live replicas OnlineReplica.  Every property holds (510 states, depth 16), and
    the reference broker conforms on every transition (957)."""
    m, cfg = _model("topic-created")
    r = bfs.check(m)
    assert r.verdict == "ok", r.violations
    assert (r.stats.distinct, r.stats.depth) == (510, 16)
    g = explore(m)
    names = {a.name for _, a, _ in g.edges}
    assert {"CreateTopic", "TopicChange"} <= names
    h = Harness(m, KafkaImplementation, cfg)
    cover = covering_set(g)
    for init, acts in cover.traces:
        d = h.run(acts, init)
        assert d is None, d.render()


def test_topic_change_walks_the_state_machines():
    """NonExistent -> NewPartition/NewReplica on the watch, -> OnlinePartition/OnlineReplica
    with the election, on both sides."""
    m, cfg = _model("topic-created")
    s = m.init_states()[0]
    assert not s.zk.topic
    names = ["ElectController(broker=0)", "CreateTopic()", "TopicChange(controller=0)", "ElectLeader(controller=0"]
    acts = []
    states = []
    for w in names:
        a = next(a for a in m.actions(s) if str(a).startswith(w))
        acts.append(a)
        s = m.next_state(s, a)
        states.append(s.brokers[0].ctx)
    assert states[1].partition_states == ("NonExistentPartition",)
    assert states[2].partition_states == ("NewPartition",) and states[2].replica_states == (("NewReplica",) * 2,)
    assert states[3].partition_states == ("OnlinePartition",) and states[3].replica_states == (("OnlineReplica",) * 2,)
    assert Harness(m, KafkaImplementation, cfg).run(acts) is None
