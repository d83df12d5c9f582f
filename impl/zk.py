"""The coordination store: ZooKeeper's data model and guarantees, in process.

The interface (``CoordinationStore``) is what a Kafka broker needs from ZooKeeper and
nothing a real ensemble cannot do: sessions, persistent / ephemeral / sequential
znodes, a version per znode with conditional ``set_data`` / ``delete``, ``multi``
transactions with ``check`` ops, and one-shot watches delivered to the session that
set them.  ``InMemoryStore`` implements it in one process; ``impl.zkstore.ZooKeeperStore``
puts the same interface on a real ensemble (kazoo maps one to one), and
tests/test_zk_contract.py runs one contract against both.

Two operations are not client operations and are marked so: ``expire_session`` is the
server expiring a session (what a GC pause or a partition does to a real client), and
``poll_events`` stands for the client's event thread handing over watch notifications.

    >>> zk = InMemoryStore()
    >>> s = zk.open_session()
    >>> zk.create(s, "/a", b"1")
    '/a'
    >>> stat = zk.set_data(s, "/a", b"2", version=0)
    >>> stat.version
    1
    >>> zk.set_data(s, "/a", b"3", version=0)   # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    impl.zk.BadVersionError: /a: expected version 0, found 1
    >>> _ = zk.exists(s, "/a", watch=True)
    >>> _ = zk.delete(s, "/a")
    >>> zk.poll_events(s)
    [WatchedEvent(type='NodeDeleted', path='/a')]
    >>> zk.poll_events(s)      # one-shot: delivered once
    []
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "BadVersionError",
    "Check",
    "CoordinationStore",
    "Create",
    "Delete",
    "InMemoryStore",
    "NoChildrenForEphemeralsError",
    "NoNodeError",
    "NodeExistsError",
    "NotEmptyError",
    "SessionExpiredError",
    "SetData",
    "Stat",
    "WatchedEvent",
    "ZkError",
]


# -- errors (ZooKeeper's KeeperException codes) ----------------------------------------

class ZkError(Exception):
    """A ZooKeeper error code; the operation changed nothing."""


class NoNodeError(ZkError):
    pass


class NodeExistsError(ZkError):
    pass


class BadVersionError(ZkError):
    pass


class NotEmptyError(ZkError):
    pass


class SessionExpiredError(ZkError):
    pass


class NoChildrenForEphemeralsError(ZkError):
    pass


# -- values -----------------------------------------------------------------------------

class Stat(NamedTuple):
    """The subset of ZooKeeper's Stat that Kafka reads."""

    czxid: int            # zxid of the create: Kafka 2.2+ uses it as the broker epoch
    mzxid: int
    version: int          # data version, bumped by every set_data
    cversion: int         # children version
    ephemeral_owner: int  # session id, 0 for a persistent znode
    num_children: int


class WatchedEvent(NamedTuple):
    type: str             # NodeCreated | NodeDeleted | NodeDataChanged | NodeChildrenChanged
    path: str


class Create(NamedTuple):
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False


class Delete(NamedTuple):
    path: str
    version: int = -1


class SetData(NamedTuple):
    path: str
    data: bytes
    version: int = -1


class Check(NamedTuple):
    """``multi`` only: fails the whole transaction unless the znode has this version."""

    path: str
    version: int


class CoordinationStore:
    """What the broker and the controller may ask of ZooKeeper.

    Every call names the client session it runs in; a closed or expired session gets
    ``SessionExpiredError``.  ``version=-1`` means unconditional.  ``watch=True`` sets
    a one-shot watch owned by the session: ``exists`` and ``get_data`` watch the
    znode's data (and, for ``exists``, its creation), ``get_children`` its children.
    """

    def open_session(self) -> int:
        raise NotImplementedError

    def close_session(self, session: int) -> None:
        raise NotImplementedError

    def session_alive(self, session: int) -> bool:
        raise NotImplementedError

    def create(self, session: int, path: str, data: bytes = b"", *, ephemeral: bool = False,
               sequential: bool = False) -> str:
        raise NotImplementedError

    def get_data(self, session: int, path: str, *, watch: bool = False) -> tuple[bytes, Stat]:
        raise NotImplementedError

    def exists(self, session: int, path: str, *, watch: bool = False) -> Stat | None:
        raise NotImplementedError

    def get_children(self, session: int, path: str, *, watch: bool = False) -> list[str]:
        raise NotImplementedError

    def set_data(self, session: int, path: str, data: bytes, *, version: int = -1) -> Stat:
        raise NotImplementedError

    def delete(self, session: int, path: str, *, version: int = -1) -> None:
        raise NotImplementedError

    def multi(self, session: int, ops: Sequence) -> list:
        raise NotImplementedError

    def poll_events(self, session: int) -> list[WatchedEvent]:
        """The client's event thread: the watch notifications delivered so far."""
        raise NotImplementedError


# -- the in-process implementation -----------------------------------------------------------

@dataclass
class _Node:
    data: bytes
    czxid: int
    mzxid: int
    version: int = 0
    cversion: int = 0
    ephemeral_owner: int = 0
    children: set = field(default_factory=set)
    created_children: int = 0     # the next sequential suffix: children ever created here

    def stat(self) -> Stat:
        return Stat(self.czxid, self.mzxid, self.version, self.cversion, self.ephemeral_owner,
                    len(self.children))


def _parent(path: str) -> str:
    p = path.rsplit("/", 1)[0]
    return p or "/"


def _check_path(path: str) -> None:
    if not path.startswith("/") or (path != "/" and path.endswith("/")) or "//" in path:
        raise ValueError(f"invalid znode path {path!r}")


class InMemoryStore(CoordinationStore):
    """A single-server ZooKeeper: a tree of znodes, a global zxid, sessions.

    Deterministic: session ids and zxids count up from 1; a sequential suffix counts
    the children ever created under the parent, as in ZooKeeper 3.8; watch notifications are queued per session
    in the order the server fired them.
    """

    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {"/": _Node(b"", 0, 0)}
        self._zxid = 0
        self._next_session = 1
        self._sessions: set[int] = set()
        self._ephemerals: dict[int, set[str]] = {}
        # one-shot watches: path -> sessions watching
        self._data_watches: dict[str, set[int]] = {}
        self._child_watches: dict[str, set[int]] = {}
        self._events: dict[int, list[WatchedEvent]] = {}

    # -- sessions ------------------------------------------------------------------------
    def open_session(self) -> int:
        sid = self._next_session
        self._next_session += 1
        self._sessions.add(sid)
        self._ephemerals[sid] = set()
        self._events[sid] = []
        return sid

    def session_alive(self, session: int) -> bool:
        return session in self._sessions

    def close_session(self, session: int) -> None:
        self._end_session(session)

    def expire_session(self, session: int) -> None:
        """SERVER SIDE (fault injection): the session times out.  Its ephemeral znodes
        are deleted (firing other sessions' watches) and its own watches are dropped;
        the client learns of it on its next call (``SessionExpiredError``)."""
        self._end_session(session)

    def _end_session(self, session: int) -> None:
        if session not in self._sessions:
            return
        self._sessions.discard(session)
        for watches in (self._data_watches, self._child_watches):
            for ws in watches.values():
                ws.discard(session)
        self._events.pop(session, None)
        for path in sorted(self._ephemerals.pop(session, ()), reverse=True):
            if path in self._nodes:
                self._zxid += 1
                self._remove(path)

    def _alive(self, session: int) -> None:
        if session not in self._sessions:
            raise SessionExpiredError(f"session 0x{session:x} expired or closed")

    # -- watches -----------------------------------------------------------------------
    def _fire(self, watches: dict, path: str, kind: str) -> None:
        for sid in sorted(watches.pop(path, ())):
            self._events[sid].append(WatchedEvent(kind, path))

    def watches(self, session: int) -> dict[str, list[str]]:
        """ZooKeeper's ``wchc`` four-letter word for one session: the paths it holds a
        one-shot watch on, by kind ("data": exists/get_data, "children": get_children)."""
        return {kind: sorted(p for p, ws in watches.items() if session in ws)
                for kind, watches in (("data", self._data_watches), ("children", self._child_watches))}

    def poll_events(self, session: int) -> list[WatchedEvent]:
        ev = self._events.get(session, [])
        if session in self._events:
            self._events[session] = []
        return ev

    # -- reads ---------------------------------------------------------------------------
    def _node(self, path: str) -> _Node:
        _check_path(path)
        n = self._nodes.get(path)
        if n is None:
            raise NoNodeError(path)
        return n

    def get_data(self, session, path, *, watch=False):
        self._alive(session)
        n = self._node(path)
        if watch:
            self._data_watches.setdefault(path, set()).add(session)
        return n.data, n.stat()

    def exists(self, session, path, *, watch=False):
        self._alive(session)
        _check_path(path)
        if watch:
            self._data_watches.setdefault(path, set()).add(session)
        n = self._nodes.get(path)
        return n.stat() if n else None

    def get_children(self, session, path, *, watch=False):
        self._alive(session)
        n = self._node(path)
        if watch:
            self._child_watches.setdefault(path, set()).add(session)
        return sorted(n.children)

    # -- writes --------------------------------------------------------------------------
    def create(self, session, path, data=b"", *, ephemeral=False, sequential=False):
        return self.multi(session, [Create(path, data, ephemeral, sequential)])[0]

    def set_data(self, session, path, data, *, version=-1):
        return self.multi(session, [SetData(path, data, version)])[0]

    def delete(self, session, path, *, version=-1):
        self.multi(session, [Delete(path, version)])

    def multi(self, session, ops):
        """All or nothing: every op is validated against the tree as the earlier ops
        of the transaction leave it; the first failure aborts the lot."""
        self._alive(session)
        self._validate(session, ops)
        return [self._apply(session, op) for op in ops]

    def _validate(self, session: int, ops) -> None:
        exists = {}      # path -> bool, as the earlier ops of this transaction leave it
        versions = {}
        children: dict[str, int] = {}

        def present(p):
            return exists.get(p, p in self._nodes)

        def version(p):
            return versions[p] if p in versions else self._nodes[p].version

        def nchildren(p):
            return children.get(p, len(self._nodes[p].children) if p in self._nodes else 0)

        for op in ops:
            _check_path(op.path)
            if isinstance(op, Create):
                parent = _parent(op.path)
                if not present(parent):
                    raise NoNodeError(parent)
                if parent in self._nodes and self._nodes[parent].ephemeral_owner:
                    raise NoChildrenForEphemeralsError(parent)
                if not op.sequential and present(op.path):
                    raise NodeExistsError(op.path)
                exists[op.path], versions[op.path] = True, 0
                children[parent] = nchildren(parent) + 1
            elif isinstance(op, Delete):
                if not present(op.path):
                    raise NoNodeError(op.path)
                if op.version != -1 and version(op.path) != op.version:
                    raise BadVersionError(f"{op.path}: expected version {op.version}, found {version(op.path)}")
                if nchildren(op.path):
                    raise NotEmptyError(op.path)
                exists[op.path] = False
                children[_parent(op.path)] = nchildren(_parent(op.path)) - 1
            elif isinstance(op, (SetData, Check)):
                if not present(op.path):
                    raise NoNodeError(op.path)
                if op.version != -1 and version(op.path) != op.version:
                    raise BadVersionError(f"{op.path}: expected version {op.version}, found {version(op.path)}")
                if isinstance(op, SetData):
                    versions[op.path] = version(op.path) + 1
            else:
                raise TypeError(f"not a ZooKeeper op: {op!r}")

    def _apply(self, session: int, op):
        if isinstance(op, Check):
            return None
        self._zxid += 1
        z = self._zxid
        if isinstance(op, Create):
            parent = self._nodes[_parent(op.path)]
            path = op.path
            if op.sequential:
                # ZooKeeper 3.8's sequence number counts the children ever created under
                # the parent (a delete bumps cversion, not the sequence: tests/test_zk_contract.py)
                path = f"{op.path}{parent.created_children:010d}"
            self._nodes[path] = _Node(bytes(op.data), z, z, ephemeral_owner=session if op.ephemeral else 0)
            if op.ephemeral:
                self._ephemerals[session].add(path)
            parent.children.add(path.rsplit("/", 1)[1])
            parent.cversion += 1
            parent.created_children += 1
            self._fire(self._data_watches, path, "NodeCreated")
            self._fire(self._child_watches, _parent(path), "NodeChildrenChanged")
            return path
        if isinstance(op, Delete):
            self._remove(op.path)
            return None
        n = self._nodes[op.path]
        n.data, n.mzxid, n.version = bytes(op.data), z, n.version + 1
        self._fire(self._data_watches, op.path, "NodeDataChanged")
        return n.stat()

    def _remove(self, path: str) -> None:
        n = self._nodes.pop(path)
        if n.ephemeral_owner and n.ephemeral_owner in self._ephemerals:
            self._ephemerals[n.ephemeral_owner].discard(path)
        parent = self._nodes[_parent(path)]
        parent.children.discard(path.rsplit("/", 1)[1])
        parent.cversion += 1
        self._fire(self._data_watches, path, "NodeDeleted")
        self._fire(self._child_watches, path, "NodeDeleted")
        self._fire(self._child_watches, _parent(path), "NodeChildrenChanged")
