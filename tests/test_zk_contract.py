"""One contract for the coordination store, run against ``InMemoryStore`` and against
``ZooKeeperStore`` on a real 3-server ensemble: any semantic difference between the
two is a failing test here.  The ZooKeeper half is marked ``cluster`` (make test / CI)."""

from __future__ import annotations

import pytest

from impl import zk as Z
from tests.zk_support import zk_ensemble, zk_hosts  # noqa: F401 - fixtures


@pytest.fixture(params=["memory", pytest.param("zookeeper", marks=pytest.mark.cluster)])
def store(request):
    if request.param == "memory":
        yield Z.InMemoryStore()
        return
    from impl.zkstore import ZooKeeperStore
    s = ZooKeeperStore(request.getfixturevalue("zk_hosts"))
    try:
        yield s
    finally:
        s.close()


def test_versions_and_conditional_writes(store):
    s = store.open_session()
    assert store.create(s, "/p", b"a") == "/p"
    data, st = store.get_data(s, "/p")
    assert data == b"a" and st.version == 0 and st.ephemeral_owner == 0 and st.czxid == st.mzxid
    st1 = store.set_data(s, "/p", b"b", version=0)
    assert st1.version == 1 and st1.mzxid > st.mzxid and st1.czxid == st.czxid
    with pytest.raises(Z.BadVersionError):
        store.set_data(s, "/p", b"c", version=0)
    with pytest.raises(Z.BadVersionError):
        store.delete(s, "/p", version=0)
    assert store.get_data(s, "/p")[0] == b"b"
    assert store.set_data(s, "/p", b"u").version == 2            # version -1: unconditional
    with pytest.raises(Z.NodeExistsError):
        store.create(s, "/p")
    with pytest.raises(Z.NoNodeError):
        store.create(s, "/missing/child")
    with pytest.raises(Z.NoNodeError):
        store.get_data(s, "/missing")
    with pytest.raises(Z.NoNodeError):
        store.set_data(s, "/missing", b"x")
    assert store.exists(s, "/missing") is None
    store.create(s, "/p/c")
    assert store.get_children(s, "/p") == ["c"] and store.exists(s, "/p").num_children == 1
    with pytest.raises(Z.NotEmptyError):
        store.delete(s, "/p")
    store.delete(s, "/p/c", version=0)
    store.delete(s, "/p", version=2)
    assert store.exists(s, "/p") is None


def test_multi_is_all_or_nothing(store):
    s = store.open_session()
    store.create(s, "/epoch", b"1")
    with pytest.raises(Z.BadVersionError):
        store.multi(s, [Z.Create("/a"), Z.Check("/epoch", 5)])
    assert store.exists(s, "/a") is None
    with pytest.raises(Z.NodeExistsError):
        store.multi(s, [Z.SetData("/epoch", b"9"), Z.Create("/epoch")])
    assert store.get_data(s, "/epoch")[0] == b"1"
    out = store.multi(s, [Z.Check("/epoch", 0), Z.Create("/a"), Z.Create("/a/b"), Z.SetData("/epoch", b"2", 0),
                          Z.Delete("/a/b")])
    assert out[0] is None and out[1] == "/a" and out[2] == "/a/b" and out[3].version == 1 and out[4] is None
    assert store.exists(s, "/a/b") is None and store.get_data(s, "/epoch") == (b"2", store.exists(s, "/epoch"))
    with pytest.raises(Z.NoNodeError):
        store.multi(s, [Z.Delete("/nothing")])


def test_ephemerals_go_with_their_session_and_fire_watches(store):
    owner, watcher = store.open_session(), store.open_session()
    store.create(owner, "/ids")
    store.create(owner, "/ids/1", b"x", ephemeral=True)
    st = store.exists(watcher, "/ids/1")
    assert st.ephemeral_owner == owner and store.session_alive(owner)
    assert store.get_children(watcher, "/ids", watch=True) == ["1"]
    with pytest.raises(Z.NoChildrenForEphemeralsError):
        store.create(owner, "/ids/1/child")
    store.expire_session(owner)
    assert not store.session_alive(owner) and store.session_alive(watcher)
    assert store.exists(watcher, "/ids/1") is None
    assert store.poll_events(watcher) == [Z.WatchedEvent("NodeChildrenChanged", "/ids")]
    with pytest.raises(Z.SessionExpiredError):
        store.get_data(owner, "/ids")
    with pytest.raises(Z.SessionExpiredError):
        store.create(owner, "/ids/2", ephemeral=True)
    again = store.open_session()
    assert again != owner
    store.create(again, "/ids/1", b"x", ephemeral=True)
    assert store.exists(watcher, "/ids/1").czxid > st.czxid          # a new broker epoch
    assert store.poll_events(watcher) == []                          # the watch fired once and was not re-set
    store.close_session(again)
    assert store.exists(watcher, "/ids/1") is None and not store.session_alive(again)


def test_watches_are_one_shot_and_die_with_the_session(store):
    a, b = store.open_session(), store.open_session()
    assert store.exists(a, "/controller", watch=True) is None
    store.create(b, "/controller", ephemeral=True)
    store.create(b, "/x")
    assert store.poll_events(a) == [Z.WatchedEvent("NodeCreated", "/controller")]
    store.get_data(a, "/x", watch=True)
    store.exists(a, "/x", watch=True)                   # the same watch twice: one notification
    store.set_data(b, "/x", b"1")
    store.set_data(b, "/x", b"2")
    assert store.poll_events(a) == [Z.WatchedEvent("NodeDataChanged", "/x")]
    store.get_children(a, "/x", watch=True)
    store.create(b, "/x/c")
    store.delete(b, "/x/c")
    assert store.poll_events(a) == [Z.WatchedEvent("NodeChildrenChanged", "/x")]
    store.get_data(a, "/x", watch=True)
    store.delete(b, "/x")
    assert store.poll_events(a) == [Z.WatchedEvent("NodeDeleted", "/x")]
    store.create(b, "/x")
    store.get_data(a, "/x", watch=True)
    store.expire_session(a)
    store.set_data(b, "/x", b"3")
    assert store.poll_events(a) == []
    store.close_session(b)
    c = store.open_session()
    assert store.exists(c, "/controller") is None and store.exists(c, "/x") is not None


def test_a_watch_on_a_write_of_the_watching_session_itself(store):
    a = store.open_session()
    store.create(a, "/w")
    store.get_children(a, "/w", watch=True)
    store.multi(a, [Z.Create("/w/1"), Z.Create("/w/2")])
    assert store.poll_events(a) == [Z.WatchedEvent("NodeChildrenChanged", "/w")]


def test_sequential_nodes_count_per_parent(store):
    s = store.open_session()
    store.create(s, "/n")
    store.create(s, "/m")
    assert [store.create(s, "/n/isr_change_", sequential=True) for _ in range(2)] == \
        ["/n/isr_change_0000000000", "/n/isr_change_0000000001"]
    store.delete(s, "/n/isr_change_0000000000")          # a delete bumps cversion, not the sequence
    assert store.exists(s, "/n").cversion == 3
    assert store.create(s, "/n/isr_change_", b"d", sequential=True) == "/n/isr_change_0000000002"
    assert store.multi(s, [Z.Create("/m/x_", sequential=True)]) == ["/m/x_0000000000"]


def test_kafka_znodes_work_on_the_store(store):
    """KafkaZkClient's controller election and fenced writes, on either store."""
    from impl.zkclient import ControllerMovedError, KafkaZkClient, TopicPartition
    a, b = KafkaZkClient(store), KafkaZkClient(store)
    a.ensure_paths()
    b.ensure_paths()
    assert a.register_broker(0) < b.register_broker(1)
    assert a.get_all_broker_and_epochs() == b.get_all_broker_and_epochs()
    epoch, version = a.register_controller_and_increment_controller_epoch(0)
    assert (epoch, b.get_controller_id()) == (1, 0)
    with pytest.raises(Z.NodeExistsError):
        b.register_controller_and_increment_controller_epoch(1)
    a.create_topic("t", {0: (0, 1)}, {"min.insync.replicas": "2"})
    tp = TopicPartition("t", 0)
    li = a.write_partition_state(tp, 0, 0, (0, 1), epoch, -1, version)
    assert b.get_partition_state(tp) == li
    store.expire_session(a.session)
    a.reconnect()
    assert b.get_controller_id() == -1
    epoch2, version2 = b.register_controller_and_increment_controller_epoch(1)
    assert epoch2 == 2
    with pytest.raises(ControllerMovedError):            # the zombie's write is fenced (KAFKA-6082)
        a.write_partition_state(tp, 1, 1, (1,), epoch, li.zk_version, version)
    assert b.get_partition_state(tp) == li
    assert b.update_isr(tp, 0, 0, (0,), epoch, li.zk_version) == li.zk_version + 1
    b.propagate_isr_change(tp)
    assert list(b.get_isr_change_notifications().values()) == [[tp]]
