"""The Kafka controller model as z3 terms, for ``kmc prove`` and ``kmc bmc``.

The explicit model (spec/controller.py, broker.py, faults.py) is the reference; this
module restates the same rules over one frame of z3 variables, so that z3 can reason
about 5, 7 or 16 brokers at once.  Broker sets (ISRs, liveness) are bit-vectors of N
bits; epochs, versions and session numbers are integers; the requests in flight to a
broker are a set, a z3 array from a ``LeaderAndIsr`` record to Bool.  For BMC
(``bounded(K)``), the same rules run on exact finite forms: one request slot per step
and bit-vector integers wide enough for K steps.

What is covered: every action the explicit model can take when there is no data path
(``max_records=0``), no controlled shutdown (``max_controlled_shutdowns=0``) and no
topic deletion (``max_topic_deletions=0``) and not the atomic
controller: CrashBroker, RestartBroker, ExpireSession,
RegisterBroker, Resign, ElectController, BrokerFailure, BrokerStartup, ElectLeader
(strategies new, offline clean and unclean, preferred), RemoveReplicaFromIsr,
IsrChangeNotification, DeliverLeaderAndIsr, ShrinkIsr and ExpandIsr, with both
fencing flags; and partition reassignment (spec/reassign.py): ReassignPartitions,
StartReassignment, the steps Reassign* and CompleteReassignment, DeliverStopReplica
(FIFO after its controller's LeaderAndIsr), a controller inside a reassignment event
taking no other controller action (``reassign.busy``); and the controller's event order
(``controller_event_order``, spec.eventorder.event_order): a controller with a step of
its current event enabled takes no new event, elections before RemoveReplicaFromIsr.
With reassignment an AR is
the index of one of the finitely many ordered ARs the configured requests can
produce (``enc.ars[p]``: the initial AR, each RAR, OAR + RAR), kept as an index so
that elections keep the AR's order, and read as a bit-vector set with
``enc.ar_mask(p, i)``.  Other configurations are refused with a one-line error, so a proof is
never silently about a smaller model.  Each symbolic step is exactly one explicit
action with the same name and arguments, which is what lets a BMC counterexample be
replayed on the explicit model (``kmc replay``): that replay is the check that the two
encodings agree.  Ghost state is not encoded (it feeds only the ``sometimes``
witnesses, which are not proved here), except ``inv_leader_moved``, which
ReassignmentLeaderInRar reads.

Lemmas for ``kmc prove --lemmas FILE`` are state predicates over a :class:`KFrame`;
see examples/lemmas.py and examples/lemmas_epochs.py.  The frame's fields mirror
spec/state.py::

    f.zk_controller, f.zk_epoch, f.session[b]
    f.zk[p]                    .leader .leader_epoch .isr (bit-vector) .controller_epoch .version
    f.alive[b], f.seen[b]      (controller_epoch_seen), f.view[b][p] (a LeaderIsr as above)
    f.in_flight(b, pred)       every request in flight to b (for partition p) satisfies pred(p, req)
    f.in_flight_pairs(b1, b2, pred)   every pair of requests in flight to b1 and b2: pred(p1, r1, p2, r2)
    f.ctx[b]                   .has .epoch .live[x] .cache[p] .pstate[p] .rstate[p][i]
    f.budget[name]
    with reassignment: f.zk_ar[p], f.zk_reassign[p] (AR indices, -1 none), f.assigned[b][p],
    f.leader_moved[p] (ghost inv_leader_moved), f.rctx[b][p] .ar .has .target .original .step
    (an index of R_ORDER), f.stop_inbox[b] (StopReplica requests in flight)

>>> from spec.config import KafkaConfig
>>> from checker.symbolic import prove
>>> prove(KafkaSymbolic(KafkaConfig(brokers=3)), ["ControllerEpochFencing"]).proved
True
"""

from __future__ import annotations

from typing import Any

import z3

from checker.symbolic import SymAction, SymbolicModel
from spec.state import NO_LEADER
from spec.symframe import (BUDGET, BUDGET_REASSIGN, COVERAGE, KFrame, LI, P_OFFLINE, PSTATES, RSTATES, R_ORDER,
                           ar_closure, mask, member, subset)
from spec.symbroker import BrokerEncoding
from spec.symcontroller import ControllerEncoding
from spec.syminvariants import KafkaInvariants
from spec.symreassign import ReassignEncoding
from spec.symview import KafkaView

# the frame's vocabulary, for lemma files (examples/lemmas_reassign.py imports it from here)
__all__ = ["KFrame", "KafkaSymbolic", "LI", "P_OFFLINE", "R_ORDER", "member", "subset", "unsupported"]


def unsupported(cfg) -> str | None:
    """Why the symbolic encoding does not cover ``cfg`` (None if it does)."""
    if cfg.max_records > 0:
        return "the data path (max_records > 0) is not encoded symbolically; set max_records=0"
    if cfg.max_controlled_shutdowns > 0:
        return "controlled shutdown is not encoded symbolically; set max_controlled_shutdowns=0"
    if getattr(cfg, "create_topic_after_start", False):
        return "topic creation after start is not encoded symbolically; set create_topic_after_start=false"
    if getattr(cfg, "controller_deletion", False):
        return "an operator's /controller deletion is not encoded symbolically; set controller_deletion=false"
    if cfg.max_topic_deletions > 0:
        return "topic deletion is not encoded symbolically; set max_topic_deletions=0"
    if getattr(cfg, "atomic_controller", False):
        return "the atomic controller (atomic_controller=true) is not encoded symbolically; set it to false"
    return None


class KafkaSymbolic(ControllerEncoding, BrokerEncoding, ReassignEncoding, KafkaInvariants, KafkaView,
                    SymbolicModel):
    """The symbolic encoding of one configuration (a ``spec.config.KafkaConfig``)."""

    name = "kafka-controller-symbolic"

    def __init__(self, cfg, slots: int | None = None) -> None:
        """``slots=None``: the form ``prove`` uses (mathematical integers, the requests
        in flight as an array: unbounded, so a proof covers every run).  ``slots=K``:
        the form for runs of at most K steps (see ``bounded``)."""
        why = unsupported(cfg)
        if why:
            raise ValueError(why)
        self.cfg, self.slots = cfg, slots
        self.n, self.np = cfg.brokers, cfg.partitions
        # Integers: unbounded for proofs; for K steps every epoch, version and session
        # number stays within K + a few, so signed bit-vectors represent them exactly
        # (and z3 bit-blasts the whole unrolling, which is much faster).
        self.width = None if slots is None else max(8, (4 * (slots + self.n + 8)).bit_length() + 1)
        self.I = z3.IntSort() if self.width is None else z3.BitVecSort(self.width)
        # Replica slots, as the explicit model's m.ar: the AR itself without reassignment.
        self.ar = tuple(cfg.replica_slots(p) for p in range(cfg.partitions))
        self.re = bool(cfg.reassign_targets)
        self.budget_keys = BUDGET_REASSIGN if self.re else BUDGET
        if self.re:
            self.targets = cfg.reassign_targets
            self.ars = tuple(ar_closure(cfg.assignment(p), [t for q, t in self.targets if q == p])
                           for p in range(cfg.partitions))
        fields = [("controller_epoch", self.I), ("partition", self.I), ("leader", self.I),
                  ("leader_epoch", self.I), ("isr", z3.BitVecSort(self.n)), ("version", self.I)]
        if self.re:
            fields.append(("replicas", self.I))
        dt = z3.Datatype(f"LeaderAndIsr{self.n}{'r' if self.re else ''}")
        dt.declare("req", *fields)
        self.Req = dt.create()
        self.empty = z3.K(self.Req, z3.BoolVal(False))
        if self.re:
            st = z3.Datatype("StopReplica")
            st.declare("stop", ("controller_epoch", self.I), ("partition", self.I), ("delete", z3.BoolSort()))
            self.StopReq = st.create()
            self.stop_empty = z3.K(self.StopReq, z3.BoolVal(False))
        self._actions: list[SymAction] | None = None

    def coverage(self) -> str:
        return COVERAGE

    def bounded(self, steps: int) -> KafkaSymbolic:
        """For BMC: the requests in flight as one slot per step (the request sent to a
        broker for a partition at step j, at most one), instead of an array.  Exact
        for runs of at most ``steps`` steps, and much cheaper for z3."""
        return type(self)(self.cfg, slots=max(steps, 1))

    def frame(self, tag: Any) -> KFrame:
        return KFrame(self, tag)

    BROKER_ARGS = ("broker", "controller", "leader", "replica")

    def symmetry(self) -> list:
        """Brokers outside every partition's AR are interchangeable: they start alike,
        and no rule tells them apart (elections pick from the ordered AR, ISRs hold AR
        members only).  BMC searches only runs that first use them in increasing order."""
        used = {r for ar in self.ar for r in ar}
        return [(self.BROKER_ARGS, [b for b in range(self.n) if b not in used])]

    # -- helpers ---------------------------------------------------------------------

    def k(self, v: int) -> z3.ExprRef:
        """The numeral ``v`` in the encoding's integer sort."""
        return z3.IntVal(v) if self.width is None else z3.BitVecVal(v, self.width)

    def no_state(self) -> LI:
        k = self.k
        return LI(k(NO_LEADER), k(-1), z3.BitVecVal(0, self.n), k(-1), k(-1))

    def req(self, ce, p: int, li: LI, replicas=None) -> z3.ExprRef:
        extra = (replicas,) if self.re else ()
        return self.Req.req(ce, self.k(p), li.leader, li.leader_epoch, li.isr, li.version, *extra)

    def _is_no_state(self, li: LI) -> z3.BoolRef:
        return z3.And([a == b for a, b in zip(li, self.no_state())])

    # reassignment: ARs as indices into self.ars[p] (-1: none)

    def ar_mask(self, q: int, i) -> z3.BitVecRef:
        """The AR with index term ``i`` as a bit-vector set (empty for -1)."""
        out = z3.BitVecVal(0, self.n)
        for j, ar in reversed(list(enumerate(self.ars[q]))):
            out = z3.If(i == j, mask(ar, self.n), out)
        return out

    def in_ar(self, q: int, i, x: int) -> z3.BoolRef:
        """Broker ``x`` is in the AR with index term ``i`` (always, without reassignment:
        the slots are the AR)."""
        if not self.re:
            return z3.BoolVal(True)
        js = [j for j, ar in enumerate(self.ars[q]) if x in ar]
        return z3.Or([i == j for j in js]) if js else z3.BoolVal(False)

    def ar_id(self, q: int, ar: tuple) -> int:
        return self.ars[q].index(tuple(ar)) if ar else -1

    def _ctx_ar(self, f: KFrame, c: int, q: int):
        return f.rctx[c][q].ar if self.re else None

    def _fold_ar(self, q: int, i, fn):
        """``fn(ar)`` for the AR with index term ``i``: a tuple of terms folded over the
        possible ARs (without reassignment, ``fn`` of the static AR)."""
        if not self.re:
            return fn(self.ar[q])
        out = None
        for j, ar in reversed(list(enumerate(self.ars[q]))):
            v = fn(ar)
            out = v if out is None else tuple(z3.If(i == j, a, b) for a, b in zip(v, out))
        return out

    # -- init and TypeOK ----------------------------------------------------------------

    def init(self, f: KFrame) -> z3.BoolRef:
        cfg = self.cfg
        c = [f.zk_controller == NO_LEADER, f.zk_epoch == 0]
        c += [s == 1 for s in f.session]
        for p in range(self.np):
            c.append(self._is_no_state(f.zk[p]))
        for b in range(self.n):
            c += [f.alive[b], f.seen[b] == 0, z3.Not(f.ctx[b].has), self._no_requests(f, b)]
            c += [self._is_no_state(f.view[b][p]) for p in range(self.np)]
        start = {"crashes": cfg.max_crashes, "session_expiries": cfg.max_session_expiries,
                 "controller_failovers": cfg.max_controller_failovers, "isr_shrinks": cfg.max_isr_shrinks,
                 "unclean_elections": cfg.max_unclean_elections if cfg.unclean_leader_election else 0}
        if self.re:
            start["reassignments"] = len(self.targets)
            for q in range(self.np):
                c += [f.zk_ar[q] == 0, f.zk_reassign[q] == -1, f.leader_moved[q] == -1]
            for b in range(self.n):
                c += [f.assigned[b][q] == -1 for q in range(self.np)]
                c.append(self._no_stops(f, b))
        c += [f.budget[k] == start[k] for k in self.budget_keys]
        return z3.And(c)

    def wellformed(self, f: KFrame) -> z3.BoolRef:
        """TypeOK: ranges that need nothing about the requests in flight."""
        n = self.n
        c = [f.zk_controller >= NO_LEADER, f.zk_controller < n, f.zk_epoch >= 0]
        c += [s != 0 for s in f.session]
        for p in range(self.np):
            z = f.zk[p]
            c += [z.leader >= NO_LEADER, z.leader < n, z.version >= -1]
        for b in range(n):
            c += [f.seen[b] >= 0]
            ctx = f.ctx[b]
            k = [x >= 0 for x in ctx.live] + [ctx.epoch >= 1]
            for p in range(self.np):
                k += [ctx.pstate[p] >= 0, ctx.pstate[p] < len(PSTATES)]
                k += [z3.And(r >= 0, r < len(RSTATES)) for r in ctx.rstate[p]]
            c.append(z3.Implies(ctx.has, z3.And(k)))
        c += [f.budget[k] >= 0 for k in self.budget_keys]
        if self.re:
            c.append(f.budget["reassignments"] <= len(self.targets))
            for q in range(self.np):
                m = len(self.ars[q])
                tids = sorted({self.ar_id(q, t) for x, t in self.targets if x == q})
                c += [f.zk_ar[q] >= 0, f.zk_ar[q] < m]
                c.append(z3.Or([f.zk_reassign[q] == t for t in [-1] + tids]))
                c.append(z3.Or([f.leader_moved[q] == t for t in [-1] + tids]))
                for b in range(n):
                    # (a broker's assigned AR comes from a request: no range here, as
                    # TypeOK says nothing of the requests; an unknown index is no AR)
                    r = f.rctx[b][q]
                    c.append(z3.Implies(f.ctx[b].has, z3.And(
                        r.ar >= 0, r.ar < m,
                        z3.Implies(r.has, z3.And(z3.Or([r.target == t for t in tids]), r.original >= 0,
                                               r.original < m, r.step >= 0, r.step < len(R_ORDER))))))
        return z3.And(c)

    # -- actions -------------------------------------------------------------------------

    def actions(self) -> list[SymAction]:
        if self._actions is None:
            self._actions = self._build_actions()
        return self._actions

    def _build_actions(self) -> list[SymAction]:
        n, np_ = self.n, self.np
        out: list[SymAction] = []
        B = range(n)
        for b in B:
            out.append(self._crash(b))
        for b in B:
            out.append(self._restart(b))
        for b in B:
            out.append(self._expire(b))
        for b in B:
            out.append(self._register(b))
        for b in B:
            out.append(self._resign(b))
        for b in B:
            out.append(self._elect_controller(b))
        for c in B:
            for x in B:
                out.append(self._broker_failure(c, x))
        for c in B:
            for x in B:
                out.append(self._broker_startup(c, x))
        strategies = ["new", "offline"] + (["preferred"] if self.cfg.preferred_election else [])
        for c in B:
            for p in range(np_):
                for st in strategies:
                    out.append(self._elect_leader(c, p, st))
        for c in B:
            for p in range(np_):
                for r in self.ar[p]:
                    out.append(self._remove_from_isr(c, p, r))
        for c in B:
            for p in range(np_):
                out.append(self._isr_notification(c, p))
        for b in B:
            for p in range(np_):
                for j in ([None] if self.slots is None else range(self.slots)):
                    out.append(self._deliver(b, p, j))
        for b in B:
            for p in range(np_):
                for fo in self.ar[p]:
                    if fo != b:
                        out.append(self._shrink(b, p, fo))
        for b in B:
            for p in range(np_):
                for fo in self.ar[p]:
                    if fo != b:
                        out.append(self._expand(b, p, fo))
        if self.re:
            for b in B:
                for p in range(np_):
                    for j in ([None] if self.slots is None else range(self.slots)):
                        out.append(self._deliver_stop(b, p, j))
            out += self._reassign_actions()
        return out
