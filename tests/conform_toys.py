"""A toy model and an implementation of it, written separately, for the conformance
harness (tests/test_conform.py).  No tests here.

The model, ``Pair``: two replicas of a log, one of them the leader.
- ``Append()`` (while writes are left): the leader appends an entry of its epoch.
- ``Replicate(follower=f)``: the follower copies the leader's next entry.
- ``AdvanceHw()``: the high watermark becomes the shorter log's length.
- ``Failover()`` (while failovers are left): the other replica leads in epoch + 1,
  and the old leader truncates its log to the high watermark.

The implementation, ``PairSystem``, keeps the same protocol in another shape: nodes
with logs of records (offset, epoch, payload), a leader id and epoch held by a
``Coordinator``, a request counter the model does not have (listed in ``ignored``).
``config["bug"]`` injects one deliberate bug into it (the model ignores the key):

- ``no-epoch-bump``: a failover keeps the old epoch (caught at the Failover, 1 step).
- ``hw-past-follower``: the HW advances to the leader's log end, past the follower's
  (Append, Replicate, Append, AdvanceHw: 4 steps).
- ``truncate-off-by-one``: the old leader truncates to HW + 1 (Append, Failover: 2 steps).
- ``append-budget``: an off-by-one in the budget check refuses the last Append
  (Append, Append with max_writes=2: 2 steps).
- ``replicate-crash``: Replicate raises when the follower's log is empty after a
  failover (Failover, Append, Replicate: 3 steps).
- ``failover-unbounded``: the implementation offers a failover when none is left
  (caught only when the harness probes the actions the model does not enable:
  after Failover, 1 step).
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

from checker.model import Model, ModelFamily, Parameter, Preset, action

BUGS = ("none", "no-epoch-bump", "hw-past-follower", "truncate-off-by-one", "append-budget", "replicate-crash",
        "failover-unbounded")


class PairState(NamedTuple):
    leader: int
    epoch: int
    logs: tuple          # per replica: the epochs of its entries
    hw: int
    writes_left: int
    failovers_left: int


class Pair(Model):
    name, version = "pair", "1"

    def __init__(self, max_writes: int = 2, max_failovers: int = 1, config: Mapping[str, Any] | None = None):
        self.max_writes, self.max_failovers = max_writes, max_failovers
        self._config = dict(config or {"max_writes": max_writes, "max_failovers": max_failovers})

    def init_states(self):
        return [PairState(0, 1, ((), ()), 0, self.max_writes, self.max_failovers)]

    def actions(self, s):
        acts = []
        if s.writes_left:
            acts.append(action("Append"))
        f = 1 - s.leader
        lead, foll = s.logs[s.leader], s.logs[f]
        if len(foll) < len(lead) and lead[:len(foll)] == foll:
            acts.append(action("Replicate", follower=f))
        if min(len(x) for x in s.logs) > s.hw:
            acts.append(action("AdvanceHw"))
        if s.failovers_left:
            acts.append(action("Failover"))
        return acts

    def next_state(self, s, a):
        logs = list(s.logs)
        if a.name == "Append":
            logs[s.leader] = logs[s.leader] + (s.epoch,)
            return s._replace(logs=tuple(logs), writes_left=s.writes_left - 1)
        if a.name == "Replicate":
            f = a.get("follower")
            logs[f] = s.logs[s.leader][:len(logs[f]) + 1]
            return s._replace(logs=tuple(logs))
        if a.name == "AdvanceHw":
            return s._replace(hw=min(len(x) for x in s.logs))
        if a.name == "Failover":
            old = s.leader
            logs[old] = logs[old][:s.hw]
            return s._replace(leader=1 - old, epoch=s.epoch + 1, logs=tuple(logs),
                              failovers_left=s.failovers_left - 1)
        raise ValueError(f"unknown action {a}")

    def is_terminal(self, s):
        return True

    def describe(self, s):
        return self.observe(s)

    def config(self):
        return dict(self._config)


# ------------------------------------------------------------ the implementation

class Record:
    def __init__(self, offset: int, epoch: int, payload: str) -> None:
        self.offset, self.epoch, self.payload = offset, epoch, payload


class Node:
    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.log: list[Record] = []

    def end_offset(self) -> int:
        return len(self.log)

    def truncate_to(self, offset: int) -> None:
        del self.log[offset:]


class Coordinator:
    def __init__(self) -> None:
        self.leader_id = 0
        self.leader_epoch = 1


class PairSystem:
    """The implementation adapter (checker.conform's contract)."""

    ignored = {"requests": "a count of requests served, for operators; the model has no such counter",
               "payload": "record payloads; the model tracks only each entry's epoch"}

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.bug = config.get("bug", "none")
        self.nodes = [Node(0), Node(1)]
        self.coordinator = Coordinator()
        self.high_watermark = 0
        self.writes = int(config["max_writes"])
        self.failovers = int(config["max_failovers"])
        self.requests = 0

    def leader(self) -> Node:
        return self.nodes[self.coordinator.leader_id]

    def follower(self) -> Node:
        return self.nodes[1 - self.coordinator.leader_id]

    def enabled(self, act) -> bool:
        if act.name == "Append":
            return self.writes > (1 if self.bug == "append-budget" else 0)
        if act.name == "Replicate":
            f, lead = self.nodes[act.get("follower")], self.leader()
            if f is lead or f.end_offset() >= lead.end_offset():
                return False
            return all(r.epoch == lead.log[r.offset].epoch for r in f.log)
        if act.name == "AdvanceHw":
            return min(n.end_offset() for n in self.nodes) > self.high_watermark
        if act.name == "Failover":
            return self.failovers > 0 or self.bug == "failover-unbounded"
        return False

    def apply(self, act) -> None:
        self.requests += 1
        lead = self.leader()
        if act.name == "Append":
            lead.log.append(Record(lead.end_offset(), self.coordinator.leader_epoch, f"r{self.requests}"))
            self.writes -= 1
        elif act.name == "Replicate":
            f = self.nodes[act.get("follower")]
            if self.bug == "replicate-crash" and not f.log and self.coordinator.leader_epoch > 1:
                raise RuntimeError("fetch from an empty log in a new epoch")
            src = lead.log[f.end_offset()]
            f.log.append(Record(src.offset, src.epoch, src.payload))
        elif act.name == "AdvanceHw":
            ends = [n.end_offset() for n in self.nodes]
            self.high_watermark = lead.end_offset() if self.bug == "hw-past-follower" else min(ends)
        elif act.name == "Failover":
            old = lead
            self.coordinator.leader_id = 1 - old.node_id
            if self.bug != "no-epoch-bump":
                self.coordinator.leader_epoch += 1
            old.truncate_to(self.high_watermark + (1 if self.bug == "truncate-off-by-one" else 0))
            self.failovers -= 1
        else:
            raise ValueError(f"unknown action {act}")

    def observe(self) -> dict:
        return {
            "hw": self.high_watermark,
            "leader": self.coordinator.leader_id,
            "epoch": self.coordinator.leader_epoch,
            "logs": [[r.epoch for r in n.log] for n in self.nodes],
            "writes_left": self.writes,
            "failovers_left": self.failovers,
        }


class PairFamily(ModelFamily):
    name, version = "pair", "1"
    parameters = {
        "max_writes": Parameter("max_writes", 2, "entries the leader may append", minimum=0, maximum=5),
        "max_failovers": Parameter("max_failovers", 1, "failovers that may happen", minimum=0, maximum=3),
        "bug": Parameter("bug", "none", "a bug injected into the implementation (the model ignores it)",
                         choices=BUGS),
    }
    presets = {
        "tiny": Preset("tiny", "2 writes, 1 failover", {}),
        "deeper": Preset("deeper", "3 writes, 2 failovers", {"max_writes": 3, "max_failovers": 2}),
        **{b: Preset(b, f"tiny with the implementation bug {b}", {"bug": b}) for b in BUGS[1:]},
    }
    default_preset = "tiny"
    implementation = "tests.conform_toys:PairSystem"

    def build(self, config: Mapping[str, Any]) -> Model:
        return Pair(config["max_writes"], config["max_failovers"], config)


FAMILY = PairFamily()


class NoImplFamily(PairFamily):
    """The same family without an implementation adapter (kmc conform refuses it)."""

    implementation = None


NO_IMPL = NoImplFamily()
