"""The znode writes a broker makes, recorded for trace validation.

``RecordingStore`` wraps a ``CoordinationStore`` and appends one JSON line per
successful write to ``<dir>/broker-<id>/zk-writes.log``: the wall-clock time in
microseconds taken *before* the request was sent (so a consequence of the write seen
by another broker is always stamped later), the operations, and the zxid ZooKeeper
returned where it returns one (the new ``mzxid`` of a ``set_data``, also inside a
``multi``).  Reads pass through.  Failed writes changed nothing and are not recorded.

    >>> import io, json
    >>> from impl.zk import InMemoryStore
    >>> out = io.StringIO()
    >>> s = RecordingStore(InMemoryStore(), out.write, clock=lambda: 7)
    >>> sid = s.open_session()
    >>> _ = s.create(sid, "/a", b"x")
    >>> _ = s.set_data(sid, "/a", b"y")
    >>> [json.loads(x)["ops"] for x in out.getvalue().splitlines()]
    [[['create', '/a', 'x', False]], [['set', '/a', 'y', 1]]]
"""

from __future__ import annotations

import json
import time

from impl import zk as Z


def _clock() -> int:
    return time.time_ns() // 1000


class RecordingStore(Z.CoordinationStore):
    def __init__(self, inner: Z.CoordinationStore, write, clock=_clock) -> None:
        self.inner = inner
        self.write = write           # one line of text at a time
        self.clock = clock

    def __getattr__(self, name):     # close, expire_session, ... of the wrapped store
        return getattr(self.inner, name)

    def open_session(self):
        return self.inner.open_session()

    def close_session(self, session):
        return self.inner.close_session(session)

    def session_alive(self, session):
        return self.inner.session_alive(session)

    def get_data(self, session, path, *, watch=False):
        return self.inner.get_data(session, path, watch=watch)

    def exists(self, session, path, *, watch=False):
        return self.inner.exists(session, path, watch=watch)

    def get_children(self, session, path, *, watch=False):
        return self.inner.get_children(session, path, watch=watch)

    def poll_events(self, session):
        return self.inner.poll_events(session)

    def create(self, session, path, data=b"", *, ephemeral=False, sequential=False):
        return self.multi(session, [Z.Create(path, data, ephemeral, sequential)])[0]

    def set_data(self, session, path, data, *, version=-1):
        return self.multi(session, [Z.SetData(path, data, version)])[0]

    def delete(self, session, path, *, version=-1):
        self.multi(session, [Z.Delete(path, version)])

    def multi(self, session, ops):
        t = self.clock()
        if len(ops) == 1 and isinstance(ops[0], Z.Create):
            out = [self.inner.create(session, ops[0].path, ops[0].data, ephemeral=ops[0].ephemeral,
                                     sequential=ops[0].sequential)]
        elif len(ops) == 1 and isinstance(ops[0], Z.SetData):
            out = [self.inner.set_data(session, ops[0].path, ops[0].data, version=ops[0].version)]
        elif len(ops) == 1 and isinstance(ops[0], Z.Delete):
            self.inner.delete(session, ops[0].path, version=ops[0].version)
            out = [None]
        else:
            out = self.inner.multi(session, ops)
        rec, zxid = [], None
        for op, r in zip(ops, out):
            if isinstance(op, Z.Create):
                rec.append(["create", r, bytes(op.data).decode(errors="replace"), op.ephemeral])
            elif isinstance(op, Z.SetData):
                rec.append(["set", op.path, bytes(op.data).decode(errors="replace"), r.version])
                zxid = r.mzxid
            elif isinstance(op, Z.Delete):
                rec.append(["delete", op.path])
        if rec:
            self.write(json.dumps({"time": t, "session": session, "zxid": zxid, "ops": rec},
                                  separators=(",", ":")) + "\n")
        return out
