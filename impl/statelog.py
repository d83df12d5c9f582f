"""Reading ``state-change.log`` back: every line a typed entry, or an error naming it.

impl/statechange.py writes ``[<time>] TRACE [Controller id=C epoch=E] <text>`` for the
controller's state machines and ``[<time>] TRACE [Broker id=B] <role> <text>`` for
what a broker applied.  ``parse_log`` turns a file into ``Entry`` values and refuses a
line of any other shape.  The one exception is a last line without its newline:
``kill -9`` may cut the line being written, and such a torn line is left out.  ``merge`` orders the entries of several brokers by time (then broker, then
line), the seeds' state-change-log merge tool.

    >>> es = parse_log("[5] TRACE [Controller id=1 epoch=1] Changed partition t-0 from NewPartition to "
    ...                "OnlinePartition\\n[7] TRACE [Broker id=1] Follower t-0 starts following leader 0 at "
    ...                "leader epoch 0\\n", 1)
    >>> [(e.time, e.controller, e.epoch, e.broker) for e in es]
    [(5, 1, 1, 1), (7, None, -1, 1)]
"""

from __future__ import annotations

import re
from typing import NamedTuple

_LINE = re.compile(r"^\[(?P<time>\d+)\] TRACE \[(?:Controller id=(?P<cid>\d+) epoch=(?P<epoch>-?\d+)|"
                   r"Broker id=(?P<bid>\d+))\] (?P<text>.*)$")


class StateLogError(ValueError):
    pass


class Entry(NamedTuple):
    time: int
    broker: int               # whose log it is
    line: int                 # line number in that log, from 1
    controller: int | None    # the controller id of a controller line
    epoch: int                # its controller epoch (-1 on a broker line)
    text: str


def parse_log(text: str, broker: int, name: str = "state-change.log") -> list[Entry]:
    out = []
    lines = text.split("\n")
    for i, line in enumerate(lines[:-1], 1):
        m = _LINE.match(line)
        if m is None:
            raise StateLogError(f"{name}:{i}: not a state-change log line: {line[:120]!r}")
        if m.group("bid") is not None and int(m.group("bid")) != broker:
            raise StateLogError(f"{name}:{i}: a line of broker {m.group('bid')} in broker {broker}'s log")
        cid = m.group("cid")
        if cid is not None and int(cid) != broker:
            raise StateLogError(f"{name}:{i}: controller {cid} wrote in broker {broker}'s log")
        out.append(Entry(int(m.group("time")), broker, i, int(cid) if cid is not None else None,
                         int(m.group("epoch")) if m.group("epoch") is not None else -1, m.group("text")))
    return out


def merge(logs: dict[int, list[Entry]]) -> list[Entry]:
    return sorted((e for es in logs.values() for e in es), key=lambda e: (e.time, e.broker, e.line))
