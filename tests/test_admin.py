"""impl/admin.py: the seeds' admin tools over a running reference cluster."""

from __future__ import annotations

import pytest

from impl.admin import Admin, AdminError
from impl.cluster import Cluster, TopicPartition
from impl.config import BrokerConfig


def cluster(**cfg) -> tuple[Cluster, Admin]:
    c = Cluster(3, BrokerConfig(**cfg))
    return c, Admin(c)


def test_create_describe_and_refusals():
    c, admin = cluster()
    admin.create_topic("orders", partitions=3, replication_factor=3,
                       config={"min.insync.replicas": "2", "unclean.leader.election.enable": False})
    c.settle()
    d = admin.describe_topic("orders")
    assert d.config == {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
    assert [(p.leader, p.replicas, p.isr) for p in d.partitions] == [
        (0, (0, 1, 2), (0, 1, 2)), (1, (1, 2, 0), (0, 1, 2)), (2, (2, 0, 1), (0, 1, 2))]
    assert not any(p.under_replicated or p.offline for p in d.partitions)
    with pytest.raises(AdminError, match="TOPIC_ALREADY_EXISTS"):
        admin.create_topic("orders", 1, 1)
    with pytest.raises(AdminError, match="INVALID_REPLICATION_FACTOR"):
        admin.create_topic("big", 1, 4)
    with pytest.raises(AdminError, match="INVALID_CONFIG"):
        admin.create_topic("x", 1, 1, config={"retention.ms": "1"})
    with pytest.raises(AdminError, match="UNKNOWN_TOPIC"):
        admin.describe_topic("nope")


def test_min_insync_replicas_is_per_topic():
    c, admin = cluster()
    admin.create_topic("strict", 1, 2, config={"min.insync.replicas": "2"})
    admin.create_topic("lax", 1, 2, config={"min.insync.replicas": "1"})
    c.settle()
    c.crash(1)                                    # a follower of both partitions dies
    c.settle()                                    # the controller takes it out of both ISRs
    for t in ("strict", "lax"):
        assert admin.describe_topic(t).partitions[0].isr == (0,)
    assert c.produce(0, TopicPartition("strict", 0), "all") == ("NOT_ENOUGH_REPLICAS", -1)
    assert c.produce(0, TopicPartition("lax", 0), "all") == ("NONE", 0)
    assert c.produce(0, TopicPartition("strict", 0), "1") == ("NONE", 0)


def test_unclean_leader_election_is_per_topic():
    c, admin = cluster()
    admin.create_topic("safe", 1, 2, config={"unclean.leader.election.enable": "false"})
    admin.create_topic("risky", 1, 2, config={"unclean.leader.election.enable": "true"})
    c.settle()
    c.crash(1)
    c.settle()                                               # ISRs shrink to {0}
    for t in ("safe", "risky"):
        assert c.produce(0, TopicPartition(t, 0), "1") == ("NONE", 0)   # broker 1 never gets these
    c.crash(0)                                               # the only ISR member dies
    c.start_broker(1)
    c.settle()
    safe, risky = admin.describe_topic("safe").partitions[0], admin.describe_topic("risky").partitions[0]
    assert safe.offline and safe.leader == 0
    assert (risky.leader, risky.isr, risky.offline) == (1, (1,), False)
    assert c.servers[1].replica_manager.log(TopicPartition("risky", 0)).records == []   # the record is gone
    assert any("Unclean leader election" in line for line in c.disks[c.admin.get_controller_id()].state_log.lines)


def test_preferred_replica_election_moves_leadership_back():
    c, admin = cluster(auto_leader_rebalance_enable=False)
    admin.create_topic("t", 1, 3)
    c.settle()
    c.crash(0)
    c.settle()
    c.start_broker(0)
    c.settle()
    before = admin.describe_topic("t").partitions[0]
    assert before.leader != 0 and 0 in before.isr           # back in sync but not leading
    admin.preferred_replica_election([TopicPartition("t", 0)])
    c.settle()
    after = admin.describe_topic("t").partitions[0]
    assert after.leader == 0 and after.leader_epoch == before.leader_epoch + 1
    assert c.admin.get_preferred_replica_election() is None  # the request is removed once handled


def test_delete_topic_needs_delete_topic_enable():
    c, admin = cluster()
    admin.create_topic("t", 2, 2)
    c.settle()
    admin.delete_topic("t")
    c.settle()
    assert admin.describe_topic("t").marked_for_deletion    # delete.topic.enable=false: only marked
    c2, admin2 = cluster(delete_topic_enable=True)
    admin2.create_topic("t", 2, 2)
    c2.settle()
    admin2.delete_topic("t")
    c2.settle()
    assert admin2.list_topics() == []
    assert all(tp.topic != "t" for s in c2.servers for tp in s.replica_manager.logs)


def test_replica_verification():
    c, admin = cluster()
    admin.create_topic("t", 1, 3)
    c.settle()
    tp = TopicPartition("t", 0)
    for _ in range(3):
        assert c.produce(0, tp, "all")[0] == "NONE"
    c.settle()
    [v] = admin.verify_replicas("t")
    assert v.all_in_sync and v.high_watermark == 3 and v.log_end_offsets == {0: 3, 1: 3, 2: 3}
    c.crash(2)
    c.settle()
    c.produce(0, tp, "all")
    c.settle()
    [v] = admin.verify_replicas("t")
    assert v.high_watermark == 4 and v.log_end_offsets[2] is None and not v.all_in_sync
    assert v.in_sync == {0: True, 1: True, 2: False}


def test_reassignment_generate_execute_verify():
    c, admin = cluster()
    admin.create_topic("t", 2, 2)
    c.settle()
    current, proposed = admin.generate_reassignment(["t"], [1, 2])
    assert current == {TopicPartition("t", 0): (0, 1), TopicPartition("t", 1): (1, 2)}
    assert proposed == {TopicPartition("t", 0): (1, 2), TopicPartition("t", 1): (2, 1)}
    admin.execute_reassignment(proposed)
    assert set(admin.verify_reassignment(proposed).values()) == {"in progress"}
    with pytest.raises(AdminError, match="REASSIGNMENT_IN_PROGRESS"):
        admin.execute_reassignment(proposed)
    c.settle()
    assert set(admin.verify_reassignment(proposed).values()) == {"completed"}
    d = admin.describe_topic("t")
    assert [(p.replicas, p.leader in p.replicas, set(p.isr) == set(p.replicas)) for p in d.partitions] == [
        ((1, 2), True, True), ((2, 1), True, True)]
    assert TopicPartition("t", 0) not in c.servers[0].replica_manager.partitions   # the old replica is gone
    assert admin.verify_reassignment({TopicPartition("t", 0): (0, 2)}) == {TopicPartition("t", 0): "failed"}


def test_state_change_logs_are_written_and_merge_by_time(tmp_path):
    from impl.statechange import merge
    c = Cluster(2, state_change_dir=tmp_path)
    Admin(c).create_topic("t", 1, 2)
    c.settle()
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("state-change.log"))
    assert files == ["broker-0/state-change.log", "broker-1/state-change.log"]
    controller_lines = (tmp_path / "broker-0" / "state-change.log").read_text().splitlines()
    assert controller_lines == c.disks[0].state_log.lines
    assert any("from NewPartition to OnlinePartition" in line for line in controller_lines)
    merged = merge([d.state_log for d in c.disks], topic="t", partition=0)
    times = [int(line[1:line.index("]")]) for line in merged]
    assert times == sorted(times) and any("[Broker id=1]" in line for line in merged)
