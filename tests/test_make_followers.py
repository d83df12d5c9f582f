"""``ReplicaManager.makeFollowers``' live-leader check (Kafka 0.10 to 2.x), on both
sides: a broker told to follow a leader that is not alive (leader -1 never is) keeps
its partition as it was, while a request naming a live leader is applied.  No preset
reaches such a request today (docs/model.md says why), so the rule is driven here
directly, on the model and on the reference broker, and the two must agree."""

from __future__ import annotations

from checker.config import resolve
from impl.config import BrokerConfig
from impl.observed import read_run
from impl.replica_manager import FetchState, Partition, ReplicaManager
from impl.requests import LeaderAndIsrRequest
from impl.statechange import StateChangeLogger
from impl.zkclient import TopicPartition
from spec.family import FAMILY
from spec.state import NO_LEADER, LeaderAndIsr, LeaderIsr, put

TP = TopicPartition("t", 0)


def _model_follower():
    """tiny's model with broker 1 following broker 0 at leader epoch 1 (controller epoch 1)."""
    m = FAMILY.build(resolve(FAMILY, "tiny", {"max_records": 1}))
    s = next(iter(m.init_states()))
    b1 = s.brokers[1]
    b1 = b1._replace(controller_epoch_seen=1, partitions=put(b1.partitions, 0, LeaderIsr(0, 1, (0, 1), 1, 1)),
                     assigned=put(b1.assigned, 0, s.zk.ar[0]))
    return m, s._replace(brokers=put(s.brokers, 1, b1))


def _deliver_model(leader: int, controller_epoch: int = 2):
    m, s = _model_follower()
    req = LeaderAndIsr(controller_epoch, 0, leader, 2, (0,), 2, s.zk.ar[0])
    s = s._replace(brokers=put(s.brokers, 1, s.brokers[1]._replace(inbox=(req,))))
    acts = [a for a in m.actions(s) if a.name == "DeliverLeaderAndIsr"]
    assert len(acts) == 1
    return s, m.next_state(s, acts[0])


def _impl_follower(lines: list):
    class _NoZk:
        def get_topic_config(self, _topic):
            return {}

    rm = ReplicaManager(1, BrokerConfig(), {}, _NoZk(), StateChangeLogger(1, lines=lines), lambda: 0)
    rm.controller_epoch = 1
    rm.partitions[TP] = Partition(TP, (0, 1), 0, 1, (0, 1), 1, 1)
    rm.fetchers[TP] = FetchState(0, 1, truncating=False)
    return rm


def test_a_follower_told_to_follow_no_leader_keeps_its_partition_in_the_model():
    before, after = _deliver_model(NO_LEADER)
    b = after.brokers[1]
    assert b.partitions[0] == before.brokers[1].partitions[0]       # no new leader epoch
    assert b.assigned[0] == before.brokers[1].assigned[0]
    assert b.controller_epoch_seen == 2 and b.inbox == ()          # the request was taken, its epoch learnt
    assert after.brokers[1].replicas[0] == before.brokers[1].replicas[0]
    # a live leader in the same request is followed
    _, followed = _deliver_model(0)
    assert followed.brokers[1].partitions[0] == LeaderIsr(0, 2, (0,), 2, 2)


def test_a_follower_told_to_follow_no_leader_keeps_its_partition_in_the_reference_broker():
    lines: list = []
    rm = _impl_follower(lines)
    err = rm.handle_leader_and_isr(LeaderAndIsrRequest(0, 2, TP, NO_LEADER, 2, (0,), 2, (0, 1), 2))
    assert err == "NONE"                                            # Kafka answers NONE for the partition
    p = rm.partitions[TP]
    assert (p.leader, p.leader_epoch, p.isr, p.zk_version) == (0, 1, (0, 1), 1)
    assert rm.fetchers[TP] == FetchState(0, 1, truncating=False)    # the same fetcher
    assert rm.controller_epoch == 2 and TP in rm.logs               # the local replica exists
    assert "but cannot become follower since the new leader -1 is unavailable." in lines[-1]
    # the model agrees, field for field
    _, after = _deliver_model(NO_LEADER)
    mv = after.brokers[1].partitions[0]
    assert (mv.leader, mv.leader_epoch, mv.isr, mv.version) == (p.leader, p.leader_epoch, p.isr, p.zk_version)
    # a live leader is followed
    rm = _impl_follower([])
    rm.handle_leader_and_isr(LeaderAndIsrRequest(0, 2, TP, 0, 2, (0,), 2, (0, 1), 2))
    assert rm.partitions[TP].leader_epoch == 2


def test_trace_validation_reads_no_view_from_a_refused_request(tmp_path):
    """A process broker logs ``Handled LeaderAndIsr ...: NONE`` after a refusal too; the
    refusal line before it tells impl/observed.py that the view did not change."""
    lines: list = []
    rm = _impl_follower(lines)
    rm.handle_leader_and_isr(LeaderAndIsrRequest(0, 2, TP, NO_LEADER, 2, (0,), 2, (0, 1), 2))
    handled = ("[1] TRACE [Broker id=1] Handled LeaderAndIsr request from controller 0 epoch 2 for partition t-0 "
               "leader {l} leader epoch {k} isr [0] zkVersion {v}: NONE")
    d = tmp_path / "broker-1"
    d.mkdir()
    (d / "state-change.log").write_text("\n".join(lines + [handled.format(l=-1, k=2, v=2),
                                                           handled.format(l=0, k=3, v=3)]) + "\n")
    run = read_run(tmp_path, 2)
    views = [e.constraints for e in run.events]
    assert views == [{"b1.p0.leader": 0, "b1.p0.leader_epoch": 3, "b1.p0.isr": [0], "b1.p0.controller_epoch": 2,
                      "b1.p0.version": 3}]
