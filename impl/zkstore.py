"""``CoordinationStore`` on a real ZooKeeper ensemble, through kazoo.

Every session of the interface is one ``KazooClient`` and its real ZooKeeper session;
the session number the interface hands out is ZooKeeper's own session id, so an
ephemeral znode's ``ephemeral_owner`` is the number its creator holds, as in
``InMemoryStore``.  The mapping is one to one: ``create`` / ``get_data`` / ``exists``
/ ``get_children`` / ``set_data`` / ``delete`` are kazoo's calls, ``multi`` is a kazoo
transaction (whose first failing operation's error is raised, the rest rolled back),
and a watch is a kazoo watcher that queues ZooKeeper's ``WatchedEvent`` for the session.

Four points where a real ensemble differs from one process, and what this class does:

- A server may lag behind the leader, so a read may miss a write another session
  completed.  Every read is preceded by a ``sync`` of its session (see ``_run``).

- Watch notifications arrive asynchronously.  ``poll_events`` first ``sync``s the
  session's server with the leader and waits for kazoo's callback thread to catch up,
  so it returns every notification for the writes that completed before the call
  (ZooKeeper sends a watch event before the response to any later request of the
  session).
- kazoo replaces an expired session with a new one on its own.  The interface's
  session number stays bound to the old session: once ZooKeeper expired it, every call
  with it raises ``SessionExpiredError`` (as a Kafka broker's ZooKeeperClient sees), and
  the caller opens a new session.
- A request in flight when the connection to a server drops has an unknown outcome:
  ``ConnectionLossError``.  Reads are retried (they change nothing); writes are not.

``expire_session`` is fault injection, as in ``InMemoryStore``: it is what ZooKeeper's
own tests do, a second connection with the session's id and password that closes it.

    >>> ZooKeeperStore("127.0.0.1:1", connect_timeout=0.2)   # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    impl.zkstore.ConnectionLossError: cannot reach ZooKeeper at 127.0.0.1:1 ...
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from kazoo import exceptions as KE
from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import Callback, EventType, KazooState

from impl import zk as Z

__all__ = ["ConnectionLossError", "ZooKeeperStore"]

# kazoo reports every dropped connection and reconnect as a warning; the faults here
# cause them on purpose, and a library does not print on its users' stderr.
logging.getLogger("kazoo").addHandler(logging.NullHandler())


class ConnectionLossError(Z.ZkError):
    """The connection to the server dropped with the request in flight: it may or may
    not have been applied (ZooKeeper's CONNECTIONLOSS)."""


_EVENTS = {EventType.CREATED: "NodeCreated", EventType.DELETED: "NodeDeleted",
           EventType.CHANGED: "NodeDataChanged", EventType.CHILD: "NodeChildrenChanged"}

_ERRORS = [
    (KE.NoNodeError, Z.NoNodeError), (KE.NodeExistsError, Z.NodeExistsError),
    (KE.BadVersionError, Z.BadVersionError), (KE.NotEmptyError, Z.NotEmptyError),
    (KE.NoChildrenForEphemeralsError, Z.NoChildrenForEphemeralsError),
    (KE.SessionExpiredError, Z.SessionExpiredError), (KE.ConnectionClosedError, Z.SessionExpiredError),
    (KE.ConnectionLoss, ConnectionLossError), (KazooTimeoutError, ConnectionLossError),
]


def _translate(e: BaseException, what: str) -> Z.ZkError:
    for kazoo_error, ours in _ERRORS:
        if isinstance(e, kazoo_error):
            return ours(f"{what}: {type(e).__name__}")
    if isinstance(e, KE.ZookeeperError):
        return Z.ZkError(f"{what}: {type(e).__name__}")
    raise e


def _stat(st) -> Z.Stat:
    return Z.Stat(st.czxid, st.mzxid, st.version, st.cversion, st.ephemeralOwner, st.numChildren)


class _Session:
    """One client session: its kazoo client and the watch notifications it received."""

    def __init__(self, client: KazooClient) -> None:
        self.client = client
        self.id = client.client_id[0]
        self.lock = threading.Lock()
        self.events: list[Z.WatchedEvent] = []
        self.expired = False
        client.add_listener(self._on_state)

    def _on_state(self, state) -> None:
        if state == KazooState.LOST:
            self.expired = True

    def watcher(self, event) -> None:
        kind = _EVENTS.get(event.type)
        if kind is not None and not self.expired:
            with self.lock:
                self.events.append(Z.WatchedEvent(kind, event.path))

    def current(self) -> bool:
        cid = self.client.client_id
        return not self.expired and cid is not None and cid[0] == self.id


class ZooKeeperStore(Z.CoordinationStore):
    """Sessions on the ensemble at ``hosts`` ("h:p,h:p", optionally with a chroot
    "h:p,h:p/root", created on first use).  ``session_timeout`` is what each session asks
    for (seconds); the servers clamp it to their min/maxSessionTimeout."""

    def __init__(self, hosts: str, *, session_timeout: float = 2.0, connect_timeout: float = 15.0,
                 request_timeout: float | None = None) -> None:
        self.hosts = hosts
        self.session_timeout = session_timeout
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout or max(4 * session_timeout, 5.0)
        self._sessions: dict[int, _Session] = {}
        self._lock = threading.Lock()
        base, slash, chroot = hosts.partition("/")
        if slash and chroot:
            admin = self._connect(base)
            try:
                admin.ensure_path("/" + chroot)
            finally:
                admin.stop()
                admin.close()
        # Fail early, in one line, if the ensemble is not there.
        self.close_session(self.open_session())

    def _connect(self, hosts: str) -> KazooClient:
        client = KazooClient(hosts=hosts, timeout=self.session_timeout,
                             connection_retry={"max_tries": -1, "delay": 0.05, "max_delay": 0.5})
        try:
            client.start(timeout=self.connect_timeout)
        except KazooTimeoutError:
            client.stop()
            client.close()
            raise ConnectionLossError(f"cannot reach ZooKeeper at {hosts} within {self.connect_timeout} s; "
                                      f"is the ensemble running?") from None
        return client

    # -- sessions ------------------------------------------------------------------------
    def open_session(self) -> int:
        s = _Session(self._connect(self.hosts))
        with self._lock:
            self._sessions[s.id] = s
        return s.id

    def session_alive(self, session: int) -> bool:
        s = self._sessions.get(session)
        return s is not None and s.current()

    def close_session(self, session: int) -> None:
        with self._lock:
            s = self._sessions.pop(session, None)
        if s is not None:
            s.expired = True
            s.client.stop()
            s.client.close()

    def close(self) -> None:
        for sid in list(self._sessions):
            self.close_session(sid)

    def expire_session(self, session: int) -> None:
        """SERVER SIDE (fault injection): ZooKeeper ends the session.  Its ephemeral
        znodes go (firing other sessions' watches) before this returns; the client learns
        of it on its next call (``SessionExpiredError``)."""
        s = self._sessions.get(session)
        if s is None or not s.current():
            return
        sid, passwd = s.client.client_id
        s.expired = True
        for attempt in range(5):     # a loaded machine may drop the twin's connection: try again
            twin = KazooClient(hosts=self.hosts, timeout=self.session_timeout, client_id=(sid, passwd))
            try:
                twin.start(timeout=self.connect_timeout)
                if twin.client_id is None or twin.client_id[0] != sid:
                    return           # the session had already expired: the server gave a new one
                twin.stop()          # closeSession: the server deletes the ephemerals first
                return
            except KE.SessionExpiredError:
                return
            except (KE.ConnectionLoss, KazooTimeoutError):
                if attempt == 4:
                    raise ConnectionLossError(f"could not expire session 0x{sid:x}: ZooKeeper unreachable") from None
            finally:
                twin.stop()
                twin.close()

    def _session(self, session: int) -> _Session:
        s = self._sessions.get(session)
        if s is None or not s.current():
            raise Z.SessionExpiredError(f"session 0x{session:x} expired or closed")
        return s

    def _run(self, session: int, what: str, call, *, retry: bool):
        """One request in ``session``; reads are retried over a connection loss.  A read
        goes after a ``sync`` in the same session (sent together: a session's requests
        are processed in order), so it sees every write completed before it, whichever
        server the session is on: the linearizable reads ``InMemoryStore`` gives and the
        model assumes (ZooKeeper alone only promises a session its own order)."""
        s = self._session(session)
        while True:
            try:
                if retry:
                    s.client.sync_async("/")
                result = call(s).get(timeout=self.request_timeout)
                break
            except Exception as e:  # noqa: BLE001 - translated or re-raised
                err = _translate(e, what)
                if isinstance(err, ConnectionLossError) and retry and s.current():
                    continue
                if isinstance(err, Z.SessionExpiredError):
                    s.expired = True
                raise err from None
        if not s.current():
            # kazoo opened a new session under us: whatever this did, the old session is gone
            raise Z.SessionExpiredError(f"session 0x{session:x} expired")
        return result

    # -- reads ---------------------------------------------------------------------------
    def get_data(self, session, path, *, watch=False):
        data, st = self._run(session, f"get_data {path}",
                             lambda s: s.client.get_async(path, watch=s.watcher if watch else None), retry=True)
        return data, _stat(st)

    def exists(self, session, path, *, watch=False):
        st = self._run(session, f"exists {path}",
                       lambda s: s.client.exists_async(path, watch=s.watcher if watch else None), retry=True)
        return _stat(st) if st is not None else None

    def get_children(self, session, path, *, watch=False):
        return sorted(self._run(session, f"get_children {path}",
                                lambda s: s.client.get_children_async(path, watch=s.watcher if watch else None),
                                retry=True))

    # -- writes --------------------------------------------------------------------------
    def create(self, session, path, data=b"", *, ephemeral=False, sequential=False):
        return self._run(session, f"create {path}",
                         lambda s: s.client.create_async(path, bytes(data), ephemeral=ephemeral, sequence=sequential),
                         retry=False)

    def set_data(self, session, path, data, *, version=-1):
        return _stat(self._run(session, f"set_data {path}",
                               lambda s: s.client.set_async(path, bytes(data), version), retry=False))

    def delete(self, session, path, *, version=-1):
        self._run(session, f"delete {path}", lambda s: s.client.delete_async(path, version), retry=False)

    def multi(self, session: int, ops: Sequence) -> list:
        """A ZooKeeper transaction: all or nothing.  Results as ``InMemoryStore``'s: the
        created path, None for a delete or check, the new Stat for a set_data."""
        ops = list(ops)
        if not ops:
            return []

        def commit(s: _Session):
            t = s.client.transaction()
            for op in ops:
                if isinstance(op, Z.Create):
                    t.create(op.path, bytes(op.data), ephemeral=op.ephemeral, sequence=op.sequential)
                elif isinstance(op, Z.Delete):
                    t.delete(op.path, op.version)
                elif isinstance(op, Z.SetData):
                    t.set_data(op.path, bytes(op.data), op.version)
                elif isinstance(op, Z.Check):
                    t.check(op.path, op.version)
                else:
                    raise TypeError(f"not a ZooKeeper op: {op!r}")
            return t.commit_async()

        results = self._run(session, "multi", commit, retry=False)
        for op, r in zip(ops, results):
            if isinstance(r, Exception) and not isinstance(r, (KE.RolledBackError, KE.RuntimeInconsistency)):
                raise _translate(r, f"multi: {type(op).__name__} {op.path}")
        if any(isinstance(r, Exception) for r in results):
            raise Z.ZkError("multi rolled back")
        out = []
        for op, r in zip(ops, results):
            if isinstance(op, Z.Create):
                out.append(r)
            elif isinstance(op, Z.SetData):
                out.append(_stat(r))
            else:
                out.append(None)
        return out

    # -- watches ---------------------------------------------------------------------------
    def poll_events(self, session: int) -> list[Z.WatchedEvent]:
        """The notifications for every write completed before this call: ``sync`` brings
        the session's server up to the leader (firing what it has to fire before it
        answers), then a marker through kazoo's callback queue waits for the watchers."""
        s = self._sessions.get(session)
        if s is None or not s.current():
            return []
        try:
            s.client.sync_async("/").get(timeout=self.request_timeout)
            done = threading.Event()
            s.client.handler.dispatch_callback(Callback("watch", done.set, ()))
            done.wait(self.request_timeout)
        except Exception as e:  # noqa: BLE001
            err = _translate(e, "sync")
            if isinstance(err, Z.SessionExpiredError):
                s.expired = True
                return []
            if not isinstance(err, ConnectionLossError):
                raise err from None
        with s.lock:
            out, s.events = s.events, []
        return out
