"""``state-change.log``: every broker's record of the state changes it applies.

Kafka's brokers write it through ``StateChangeLogger`` (logger ``state.change.logger``),
one line per change, prefixed with who made it: ``[Controller id=0 epoch=1]`` for the
controller's state machines, ``[Broker id=1]`` for what a broker applied.  Lines are kept
in memory; with a directory the broker also appends them to
``<dir>/broker-<id>/state-change.log``.  Time is the driver's step counter, so logs are
deterministic and can be merged by it (the state-change-log merge tool of the seeds).

    >>> log = StateChangeLogger(1)
    >>> log.broker(3, "Follower", "started")
    >>> log.lines
    ['[3] TRACE [Broker id=1] Follower started']
"""

from __future__ import annotations

from pathlib import Path


class StateChangeLogger:
    def __init__(self, broker_id: int, directory: str | Path | None = None, lines: list | None = None) -> None:
        self.broker_id = broker_id
        self.lines: list[str] = [] if lines is None else lines   # survives a restart: it is a file
        self.path = None
        if directory is not None:
            self.path = Path(directory) / f"broker-{broker_id}" / "state-change.log"
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def _write(self, time: int, text: str) -> None:
        line = f"[{time}] TRACE {text}"
        self.lines.append(line)
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line + "\n")

    def controller(self, time: int, epoch: int, text: str) -> None:
        self._write(time, f"[Controller id={self.broker_id} epoch={epoch}] {text}")

    def broker(self, time: int, role: str, text: str) -> None:
        self._write(time, f"[Broker id={self.broker_id}] {role} {text}")


def merge(logs, topic: str | None = None, partition: int | None = None) -> list[str]:
    """The seeds' state-change-log merge tool: every broker's lines in time order,
    optionally only those naming ``topic`` (and ``partition``)."""
    out = []
    for log in logs:
        for i, line in enumerate(log.lines):
            t = int(line[1:line.index("]")])
            if topic is not None:
                key = f"{topic}-{partition}" if partition is not None else topic
                if key not in line:
                    continue
            out.append((t, log.broker_id, i, line))
    return [x[3] for x in sorted(out)]
