"""A process cluster's run as an observed trace, for trace validation against the model.

What the run left on disk, per broker (impl/node.py): ``state-change.log`` and
``zk-writes.log`` (impl/zkrecord.py).  The observed events, merged in time order
(the writes stamped before they were sent, the log lines after what they record, on
one machine's clock; where ZooKeeper returned a zxid, zxid order must agree, and
``read_run`` checks it):

- a controller election, the ``/controller`` create and ``/controller_epoch`` set of
  one transaction: ``zk.controller``, ``zk.controller_epoch``;
- a partition state znode written (by a controller's election or ISR removal, or by a
  leader's ISR change): ``zk.p<P>.leader``, ``.leader_epoch``, ``.isr``,
  ``.controller_epoch``, ``.version``; a leader's ISR change also sets its own view
  (``b<B>.p<P>.isr``, ``.version``), paired with its ``ISR updated`` log line;
- a LeaderAndIsr request a broker applied (the shell's ``Handled LeaderAndIsr`` line
  with result NONE): the broker's whole view of the partition, ``b<B>.p<P>.*``, unless
  the line before it said the broker "cannot become follower" (``makeFollowers``: the
  view stayed as it was);
- a broker's registration after its first (``/brokers/ids/<B>`` created in a new
  session, after a restart or a session expiry): ``zk.s<B>``, the model's session
  number, and ``b<B>.alive``;
- a ``kill -9`` the harness made (``harness.log``): ``b<B>.alive`` false, the model's
  CrashBroker (the session's end follows later in reality; the model's controller
  notices either way only through its own BrokerFailure step).

``project`` is the same abstraction on the model's side: it flattens the observation
conformance compares (impl/projection.py ``observe`` has the same shape) to those keys.
A key is absent while its thing does not exist (no controller, no partition state
yet, a broker down or without a view), so a crash, which no log records, changes
nothing the trace could contradict.

This module reads files and plain data; it imports nothing from spec/.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from checker.tracecheck import Event
from impl.statelog import parse_log

_STATE = re.compile(r"^/brokers/topics/(?P<topic>[^/]+)/partitions/(?P<p>\d+)/state$")
_HANDLED = re.compile(r"^Handled LeaderAndIsr request from controller (?P<c>-?\d+) epoch (?P<e>-?\d+) for partition "
                      r"(?P<topic>.+)-(?P<p>\d+) leader (?P<l>-?\d+) leader epoch (?P<k>-?\d+) isr \[(?P<isr>[\d, ]*)\] "
                      r"zkVersion (?P<v>-?\d+): (?P<err>\w+)$")
_REFUSED = re.compile(r"^ ?Received LeaderAndIsr request with correlation id \d+ from controller -?\d+ epoch -?\d+ for "
                      r"partition (?P<topic>.+)-(?P<p>\d+) but cannot become follower since the new leader -?\d+ is "
                      r"unavailable\.$")
_ISR = re.compile(r"^Leader (?P<topic>.+)-(?P<p>\d+) ISR updated from \[[\d, ]*\] to \[(?P<isr>[\d, ]*)\] and "
                  r"zkVersion updated to \[(?P<v>\d+)\]$")
FIELDS = ("leader", "leader_epoch", "isr", "controller_epoch", "version")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.replace(" ", "").split(",") if x]


class ObservedRunError(ValueError):
    pass


@dataclass
class ObservedRun:
    brokers: int
    events: list[Event]
    partitions: int = 1
    reassignments: str = ""        # the model's ``reassignments`` for the admin requests the run made
    registrations: int = 0         # broker registrations after each broker's first
    kills: int = 0                 # kill -9 of a broker (harness.log)
    pauses: int = 0                # SIGSTOP of a broker (harness.log)
    elections: int = 0             # controller elections
    isr_shrinks: int = 0
    isr_expansions: int = 0
    lines: int = 0                 # state-change log lines read
    writes: int = 0                # znode writes read
    notes: list = field(default_factory=list)

    @staticmethod
    def project(obs: dict) -> dict:
        return project(obs)

    def model_config(self) -> dict:
        """The model configuration whose fault budgets cover what this run did (the
        data path is off: acknowledged records are checked on the cluster itself)."""
        cap = 50        # beyond the CLI's ranges: kmc cluster builds the model through the family directly
        return {"brokers": self.brokers, "partitions": self.partitions,
                "replication_factor": min(3, self.brokers), "max_records": 0, "reassignments": self.reassignments,
                "preferred_election": True, "unclean_leader_election": False,
                # a kill -9 is a crash (its session ends with it); every other new
                # registration followed the end of a session the process outlived
                "max_crashes": min(cap, self.kills),
                "max_session_expiries": min(cap, max(0, self.registrations - self.kills)),
                "max_controller_failovers": min(cap, max(0, self.elections - 1)),
                "max_isr_shrinks": min(cap, self.isr_shrinks)}


def read_run(directory: Path, brokers: int, topic: str = "t", partitions: int = 1,
             reassignments: str = "") -> ObservedRun:
    directory = Path(directory)
    timed: list[tuple] = []
    run = ObservedRun(brokers, [], partitions, reassignments)
    isr_lines: dict[tuple, list] = {}
    entries = {}
    for b in range(brokers):
        path = directory / f"broker-{b}" / "state-change.log"
        entries[b] = parse_log(path.read_text(), b, str(path)) if path.exists() else []
        run.lines += len(entries[b])
        refused = set()     # partitions whose next Handled line changed nothing (makeFollowers refused)
        for e in entries[b]:
            m = _REFUSED.match(e.text)
            if m and m.group("topic") == topic:
                refused.add(int(m.group("p")))
                continue
            m = _ISR.match(e.text)
            if m and m.group("topic") == topic:
                isr_lines.setdefault((b, int(m.group("p")), int(m.group("v"))), []).append(_ints(m.group("isr")))
            m = _HANDLED.match(e.text)
            if m and m.group("topic") == topic and int(m.group("p")) in refused:
                refused.discard(int(m.group("p")))
                continue
            if m and m.group("topic") == topic and m.group("err") == "NONE":
                p = int(m.group("p"))
                view = {"leader": int(m.group("l")), "leader_epoch": int(m.group("k")), "isr": _ints(m.group("isr")),
                        "controller_epoch": int(m.group("e")), "version": int(m.group("v"))}
                timed.append((e.time, b, 1, e.line, None,
                              Event(f"broker {b} state-change.log:{e.line}: {e.text}",
                                    {f"b{b}.p{p}.{k}": v for k, v in view.items()})))
    registered = {}
    zxids = []
    for b in range(brokers):
        path = directory / f"broker-{b}" / "zk-writes.log"
        if not path.exists():
            continue
        for n, raw in enumerate(path.read_text().split("\n")[:-1], 1):
            try:
                rec = json.loads(raw)
            except ValueError:
                raise ObservedRunError(f"{path}:{n}: not a JSON line") from None
            run.writes += 1
            where = f"broker {b} zk-writes.log:{n}"
            if rec.get("zxid") is not None:
                zxids.append((rec["time"], rec["zxid"], where))
            cons, what = {}, []
            for op in rec["ops"]:
                kind, zpath = op[0], op[1]
                if kind == "create" and zpath == f"/brokers/ids/{b}":
                    registered[b] = registered.get(b, 0) + 1
                    if registered[b] > 1:         # the first registration is the model's initial state
                        cons[f"zk.s{b}"] = registered[b]
                        cons[f"b{b}.alive"] = True    # a restart brings the process back; an expiry kept it
                        what.append(f"registration {registered[b]} of broker {b}")
                if zpath == "/controller" and kind == "create":
                    cons["zk.controller"] = json.loads(op[2])["brokerid"]
                elif zpath == "/controller_epoch" and kind == "set":
                    cons["zk.controller_epoch"] = int(op[2])
                    run.elections += 1
                m = _STATE.match(zpath)
                if m and m.group("topic") == topic and kind in ("create", "set"):
                    p = int(m.group("p"))
                    d = json.loads(op[2])
                    version = 0 if kind == "create" else op[3]
                    for k in FIELDS:
                        cons[f"zk.p{p}.{k}"] = version if k == "version" else d[k]
                    isr_after = isr_lines.get((b, p, version))
                    if isr_after and kind == "set":
                        cons[f"b{b}.p{p}.isr"] = d["isr"]
                        cons[f"b{b}.p{p}.version"] = version
                        what.append("its ISR change")
                    what.append(f"{kind} {zpath} {op[2]}")
            if cons:
                timed.append((rec["time"], b, 0, n, rec.get("zxid"), Event(f"{where}: {'; '.join(what) or rec['ops']}", cons)))
    run.registrations = sum(max(0, k - 1) for k in registered.values())
    harness = directory / "harness.log"
    if harness.exists():
        text = harness.read_text()
        run.kills = text.count("] kill -9 broker ")
        run.pauses = text.count("] SIGSTOP broker ")
        for n, line in enumerate(text.split("\n")[:-1], 1):
            m = re.match(r"^\[(\d+)\] kill -9 broker (\d+)$", line)
            if m:                        # the process is gone: the model's CrashBroker
                kb = int(m.group(2))
                timed.append((int(m.group(1)), kb, 2, n, None,
                              Event(f"harness.log:{n}: kill -9 broker {kb}", {f"b{kb}.alive": False})))
    zxids.sort()
    for (t1, z1, w1), (t2, z2, w2) in zip(zxids, zxids[1:]):
        if z2 < z1:
            run.notes.append(f"time order and zxid order disagree: {w1} (zxid {z1:#x}) before {w2} (zxid {z2:#x})")
    timed.sort(key=lambda x: (x[0], x[1], x[2], x[3]))
    prev_isr: dict[int, list] = {}
    for *_, ev in timed:
        for k, v in ev.constraints.items():
            if k.startswith("zk.p") and k.endswith(".isr"):
                p = int(k[4:k.index(".", 4)])
                if p in prev_isr and ev.label.find("its ISR change") >= 0:
                    if len(v) < len(prev_isr[p]):
                        run.isr_shrinks += 1
                    elif len(v) > len(prev_isr[p]):
                        run.isr_expansions += 1
                prev_isr[p] = v
        run.events.append(ev)
    return run


def project(obs: dict) -> dict:
    """The model's (or the adapter's) observation, flattened to the logged keys."""
    out = {}
    zk = obs["zk"]
    if zk["controller"] != -1:
        out["zk.controller"] = zk["controller"]
    out["zk.controller_epoch"] = zk["controller_epoch"]
    for b, k in enumerate(zk["sessions"]):
        if k > 0:                             # registered in its k-th session; an ended session is absent
            out[f"zk.s{b}"] = k
    for p, li in enumerate(zk["partitions"]):
        if li["version"] >= 0:
            for k in FIELDS:
                out[f"zk.p{p}.{k}"] = list(li[k]) if k == "isr" else li[k]
    for b, br in enumerate(obs["brokers"]):
        out[f"b{b}.alive"] = br["alive"]
        if not br["alive"]:
            continue
        for p, li in enumerate(br["partitions"]):
            if li["leader_epoch"] >= 0:
                for k in FIELDS:
                    out[f"b{b}.p{p}.{k}"] = list(li[k]) if k == "isr" else li[k]
    return out
