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
taking no other controller action (``reassign.busy``).  With reassignment an AR is
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

from collections.abc import Callable
from typing import Any, NamedTuple

import z3

from checker.model import action
from checker.symbolic import Frame, SymAction, SymbolicModel, SymInvariant
from spec.state import (
    NEW_PARTITION,
    NEW_REPLICA,
    NO_LEADER,
    NON_EXISTENT_PARTITION,
    NON_EXISTENT_REPLICA,
    OFFLINE_PARTITION,
    OFFLINE_REPLICA,
    ONLINE_PARTITION,
    ONLINE_REPLICA,
    REPLICA_DELETION_INELIGIBLE,
    REPLICA_DELETION_STARTED,
    REPLICA_DELETION_SUCCESSFUL,
    LeaderAndIsr,
    StopReplica,
)
from spec.statemachines import PARTITION_PREVIOUS, REPLICA_PREVIOUS

PSTATES = (NON_EXISTENT_PARTITION, NEW_PARTITION, ONLINE_PARTITION, OFFLINE_PARTITION)
RSTATES = (NEW_REPLICA, ONLINE_REPLICA, OFFLINE_REPLICA, REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL,
           REPLICA_DELETION_INELIGIBLE, NON_EXISTENT_REPLICA)
P_NEW, P_ONLINE, P_OFFLINE = (PSTATES.index(x) for x in (NEW_PARTITION, ONLINE_PARTITION, OFFLINE_PARTITION))
R_NEW, R_ONLINE, R_OFFLINE, R_STARTED, R_INELIGIBLE = (RSTATES.index(x) for x in (
    NEW_REPLICA, ONLINE_REPLICA, OFFLINE_REPLICA, REPLICA_DELETION_STARTED, REPLICA_DELETION_INELIGIBLE))

BUDGET = ("crashes", "session_expiries", "controller_failovers", "isr_shrinks", "unclean_elections")
BUDGET_REASSIGN = BUDGET + ("reassignments",)

# Reassignment steps (spec/reassign.py ORDER) as integers; 12 stands for step 11
# (CompleteReassignment), which ends the reassignment.
R_ORDER = ("0", "1", "2", "3", "5", "6", "7", "8", "9a", "9b", "9", "10")
R_COMPLETE = len(R_ORDER)

COVERAGE = ("every action of the explicit model without the data path, controlled shutdown or topic deletion, "
            "partition reassignment included; one symbolic step is one explicit action")


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


# ---------------------------------------------------------------------- bit sets

def bit(x: int, n: int) -> z3.BitVecRef:
    return z3.BitVecVal(1 << x, n)


def mask(xs, n: int) -> z3.BitVecRef:
    return z3.BitVecVal(sum(1 << x for x in set(xs)), n)


def member(x, bv: z3.BitVecRef) -> z3.BoolRef:
    """Broker ``x`` (an int or an Int term) is in the set ``bv``."""
    n = bv.size()
    if isinstance(x, int):
        return z3.Extract(x, x, bv) == 1 if 0 <= x < n else z3.BoolVal(False)
    return z3.Or([z3.And(x == b, z3.Extract(b, b, bv) == 1) for b in range(n)])


def subset(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.BoolRef:
    return a & ~b == 0


def members(v: int, n: int) -> tuple:
    return tuple(b for b in range(n) if v >> b & 1)


class _Request(NamedTuple):
    controller_epoch: int
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple
    version: int
    replicas: Any = None


class LI(NamedTuple):
    """A LeaderIsr as z3 terms (zk, a broker's view, a controller's cache, a request)."""

    leader: Any
    leader_epoch: Any
    isr: Any
    controller_epoch: Any
    version: Any


class Ctx(NamedTuple):
    has: Any
    epoch: Any
    live: tuple
    cache: tuple
    pstate: tuple
    rstate: tuple


class RCtx(NamedTuple):
    """A controller's reassignment memory for one partition: its cached AR and the
    Reassignment it works on (``has`` false: None)."""

    ar: Any
    has: Any
    target: Any
    original: Any
    step: Any


class KFrame(Frame):
    """One Kafka state as z3 constants (see the module docstring for the fields)."""

    def __init__(self, enc: KafkaSymbolic, tag: Any) -> None:
        super().__init__(tag, [])
        n, np_, ar = enc.n, enc.np, enc.ar
        self.enc, self.n, self.partitions, self.ar = enc, n, np_, ar
        I, B, BV = enc.I, z3.BoolSort(), z3.BitVecSort(n)

        def li(prefix: str) -> LI:
            return LI(self.var(f"{prefix}.leader", I), self.var(f"{prefix}.leader_epoch", I),
                      self.var(f"{prefix}.isr", BV), self.var(f"{prefix}.controller_epoch", I),
                      self.var(f"{prefix}.version", I))

        self.zk_controller = self.var("zk.controller", I)
        self.zk_epoch = self.var("zk.controller_epoch", I)
        self.session = tuple(self.var(f"zk.session[{b}]", I) for b in range(n))
        self.zk = tuple(li(f"zk.partition[{p}]") for p in range(np_))
        self.alive = tuple(self.var(f"broker[{b}].alive", B) for b in range(n))
        self.seen = tuple(self.var(f"broker[{b}].controller_epoch_seen", I) for b in range(n))
        self.view = tuple(tuple(li(f"broker[{b}].partition[{p}]") for p in range(np_)) for b in range(n))
        if enc.slots is None:
            self.inbox = tuple(self.var(f"broker[{b}].in_flight", z3.ArraySort(enc.Req, B)) for b in range(n))
        else:
            # slot j of (b, p) holds the request sent to b for p at step j, if any
            self.slot = tuple(tuple(tuple(
                (self.var(f"broker[{b}].in_flight[{p}][{j}]", B), li(f"broker[{b}].in_flight[{p}][{j}]"))
                for j in range(enc.slots)) for p in range(np_)) for b in range(n))
        ctxs = []
        for b in range(n):
            pre = f"broker[{b}].ctx"
            ctxs.append(Ctx(self.var(pre, B), self.var(f"{pre}.epoch", I),
                            tuple(self.var(f"{pre}.live[{x}]", I) for x in range(n)),
                            tuple(li(f"{pre}.partition[{p}]") for p in range(np_)),
                            tuple(self.var(f"{pre}.partition_state[{p}]", I) for p in range(np_)),
                            tuple(tuple(self.var(f"{pre}.replica_state[{p}][{r}]", I) for r in ar[p])
                                  for p in range(np_))))
        self.ctx = tuple(ctxs)
        self.budget = {k: self.var(f"budget.{k}", I) for k in enc.budget_keys}
        if enc.re:
            # Reassignment: an AR is the index of one of the finitely many ordered ARs
            # the configuration can produce (enc.ars[p]; -1 = none), so that elections
            # keep the AR's order; enc.ar_mask gives it as a bit-vector set.
            self.zk_ar = tuple(self.var(f"zk.ar[{p}]", I) for p in range(np_))
            self.zk_reassign = tuple(self.var(f"zk.reassign[{p}]", I) for p in range(np_))
            self.assigned = tuple(tuple(self.var(f"broker[{b}].assigned[{p}]", I) for p in range(np_))
                                  for b in range(n))
            self.leader_moved = tuple(self.var(f"ghost.inv_leader_moved[{p}]", I) for p in range(np_))
            self.rctx = tuple(tuple(RCtx(self.var(f"broker[{b}].ctx.ar[{p}]", I),
                                         self.var(f"broker[{b}].ctx.reassigning[{p}]", B),
                                         self.var(f"broker[{b}].ctx.reassigning[{p}].target", I),
                                         self.var(f"broker[{b}].ctx.reassigning[{p}].original", I),
                                         self.var(f"broker[{b}].ctx.reassigning[{p}].step", I))
                                    for p in range(np_)) for b in range(n))
            if enc.slots is None:
                self.stop_inbox = tuple(self.var(f"broker[{b}].stop_replica", z3.ArraySort(enc.StopReq, B))
                                        for b in range(n))
            else:
                self.stop_slot = tuple(tuple(tuple(
                    (self.var(f"broker[{b}].stop_replica[{p}][{j}]", B),
                     self.var(f"broker[{b}].stop_replica[{p}][{j}].controller_epoch", I),
                     self.var(f"broker[{b}].stop_replica[{p}][{j}].delete", B))
                    for j in range(enc.slots)) for p in range(np_)) for b in range(n))
            if enc.slots is not None:
                self.slot_replicas = tuple(tuple(tuple(self.var(f"broker[{b}].in_flight[{p}][{j}].replicas", I)
                                                       for j in range(enc.slots)) for p in range(np_))
                                           for b in range(n))

    def in_flight(self, b: int, pred: Callable[..., z3.BoolRef], replicas: bool = False) -> z3.BoolRef:
        """Every LeaderAndIsr in flight to broker ``b`` for a partition p satisfies
        ``pred(p, req)`` (``req`` an :class:`LI` whose ``controller_epoch`` is the
        request's); a quantified formula over the set of requests.  With
        ``replicas=True`` (reassignment only): ``pred(p, req, ar)``, ``ar`` the AR index
        the request carries."""
        if self.enc.slots is not None:
            return z3.And([z3.Implies(valid, pred(p, li, self.slot_replicas[b][p][j]) if replicas else pred(p, li))
                           for p in range(self.partitions) for j, (valid, li) in enumerate(self.slot[b][p])])
        r = z3.Const(f"req_{b}{'r' if replicas else ''}", self.enc.Req)
        Req = self.enc.Req
        view = LI(Req.leader(r), Req.leader_epoch(r), Req.isr(r), Req.controller_epoch(r), Req.version(r))
        extra = (Req.replicas(r),) if replicas else ()
        body = z3.And([z3.Implies(Req.partition(r) == p, pred(p, view, *extra)) for p in range(self.partitions)]
                      + [z3.And(Req.partition(r) >= 0, Req.partition(r) < self.partitions)])
        return z3.ForAll([r], z3.Implies(self.inbox[b][r], body), patterns=[self.inbox[b][r]])


    def in_flight_pairs(self, b1: int, b2: int, pred: Callable[[int, LI, int, LI], z3.BoolRef]) -> z3.BoolRef:
        """Every pair of requests in flight, one to ``b1`` and one to ``b2`` (for
        partitions p1 and p2), satisfies ``pred(p1, r1, p2, r2)``; quantified over pairs."""
        if self.enc.slots is not None:
            return z3.And([z3.Implies(z3.And(v1, v2), pred(p1, l1, p2, l2))
                           for p1 in range(self.partitions) for v1, l1 in self.slot[b1][p1]
                           for p2 in range(self.partitions) for v2, l2 in self.slot[b2][p2]])
        Req = self.enc.Req
        r1, r2 = z3.Const(f"req1_{b1}_{b2}", Req), z3.Const(f"req2_{b1}_{b2}", Req)

        def view(r):
            return LI(Req.leader(r), Req.leader_epoch(r), Req.isr(r), Req.controller_epoch(r), Req.version(r))
        body = z3.And([z3.Implies(z3.And(Req.partition(r1) == p1, Req.partition(r2) == p2),
                                  pred(p1, view(r1), p2, view(r2)))
                       for p1 in range(self.partitions) for p2 in range(self.partitions)])
        return z3.ForAll([r1, r2], z3.Implies(z3.And(self.inbox[b1][r1], self.inbox[b2][r2]), body),
                         patterns=[z3.MultiPattern(self.inbox[b1][r1], self.inbox[b2][r2])])


class _U:
    """Updates of a frame's variables, keyed by name for the generic engine."""

    def __init__(self, f: KFrame) -> None:
        self.f, self.d = f, {}

    def __setitem__(self, const, value) -> None:
        self.d[self.f.name_of(const)] = value

    def li(self, old: LI, new: LI) -> None:
        for o, v in zip(old, new):
            self[o] = v


def _if_li(c, a: LI, b: LI) -> LI:
    return LI(*(z3.If(c, x, y) for x, y in zip(a, b)))


def _first(k, ar, conds) -> Any:
    """The first replica of ``ar`` whose condition holds (NO_LEADER if none); ``k``
    makes a numeral of the encoding's integer sort."""
    out: Any = k(NO_LEADER)
    for r, c in reversed(list(zip(ar, conds))):
        out = z3.If(c, k(r), out)
    return out


def _max(a, b):
    return z3.If(a >= b, a, b)


def _extended(original: tuple, target: tuple) -> tuple:
    """spec.reassign.extended: OAR + RAR, ordered OAR first."""
    return original + tuple(x for x in target if x not in original)


def _ar_closure(initial: tuple, targets: list) -> tuple:
    """Every ordered AR a partition can have: the initial AR, each RAR, and OAR + RAR
    for every AR reachable so far as OAR (a successor resumes from OAR + RAR).  Finite:
    sequences of distinct brokers of the replica slots."""
    out = [initial] + [t for t in targets if t != initial]
    i = 0
    while i < len(out):
        for t in targets:
            e = _extended(out[i], t)
            if e not in out:
                out.append(e)
        i += 1
    return tuple(dict.fromkeys(out))


class KafkaSymbolic(SymbolicModel):
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
            self.ars = tuple(_ar_closure(cfg.assignment(p), [t for q, t in self.targets if q == p])
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

    # partition reassignment (spec/reassign.py)

    def _pairs(self, q: int) -> list:
        """Every (original, target) pair of AR indices a Reassignment can hold."""
        tids = sorted({self.ar_id(q, t) for x, t in self.targets if x == q})
        return [(o, t) for o in range(len(self.ars[q])) for t in tids]

    def _by_pair(self, f: KFrame, c: int, q: int, fn, default):
        """``fn(original, target)`` (tuples of brokers) for the controller's Reassignment
        of ``q``, folded over the possible pairs; ``default`` for no pair."""
        r = f.rctx[c][q]
        out = default
        for o, t in reversed(self._pairs(q)):
            v = fn(self.ars[q][o], self.ars[q][t])
            out = tuple(z3.If(z3.And(r.original == o, r.target == t), a, b) for a, b in zip(v, out))
        return out

    def _step7(self, f: KFrame, c: int, q: int):
        """spec.reassign._step7: ``(possible, leader, elected)`` as terms."""
        z = f.zk[q]
        live = [self._live(f, c, x) for x in range(self.n)]

        def fn(t):
            keep = z3.Or([z3.And(z.leader == x, live[x]) for x in t])
            conds = [z3.And(live[x], member(x, z.isr)) for x in t]
            return (z3.Or(keep, z3.Or(conds)), z3.If(keep, z.leader, _first(self.k, t, conds)), z3.Not(keep))
        return self._fold_ar(q, f.rctx[c][q].target, fn)

    def _next_is(self, f: KFrame, c: int, q: int, k: int):
        """spec.reassign.next_step is step ``k`` (an R_ORDER index, or R_COMPLETE)."""
        r = f.rctx[c][q]
        in_isr = subset(self.ar_mask(q, r.target), f.zk[q].isr)
        same = r.original == r.target
        zero = r.step == 0
        if k == R_COMPLETE:
            return z3.Or(z3.And(zero, same), r.step == R_ORDER.index("10"))
        if k == R_ORDER.index("1"):
            return z3.And(zero, z3.Not(same), z3.Not(in_isr))
        if k == R_ORDER.index("5"):
            # step 4 ends on an ISR watch, which a zombie no longer gets
            return z3.Or(z3.And(zero, z3.Not(same), in_isr),
                         z3.And(r.step == R_ORDER.index("3"), in_isr, self._watching(f, c)))
        return r.step == k - 1

    def _reassign_actions(self) -> list[SymAction]:
        out: list[SymAction] = []
        for i, (q, rar) in enumerate(self.targets):
            out.append(self._reassign_partitions(i, q, rar))
        for c in range(self.n):
            for q in range(self.np):
                out.append(self._start_reassignment(c, q))
                for k, name in enumerate(R_ORDER[1:] + ("11",), start=1):
                    out.append(self._reassign_step(c, q, k, name))
        return out

    def _reassign_partitions(self, i: int, q: int, rar: tuple) -> SymAction:
        left = len(self.targets) - i
        tid = self.ar_id(q, rar)

        def guard(f, p):
            return z3.And(f.budget["reassignments"] == left, f.zk[q].version != -1,
                          *[x == -1 for x in f.zk_reassign])

        def update(f, p):
            u = _U(f)
            u[f.zk_reassign[q]] = self.k(tid)
            u[f.budget["reassignments"]] = f.budget["reassignments"] - 1
            u[f.leader_moved[q]] = self.k(-1)
            return u.d
        return SymAction("ReassignPartitions", (("partition", q), ("index", i)), guard, update,
                         lambda ev, f, p: [action("ReassignPartitions", partition=q, replicas=rar)])

    def _start_reassignment(self, c: int, q: int) -> SymAction:
        def guard(f, p):
            return z3.And(self._watching(f, c), z3.Not(f.rctx[c][q].has), f.zk_reassign[q] != -1, self._idle(f, c))

        def update(f, p):
            u = _U(f)
            r = f.rctx[c][q]
            u[r.has] = z3.BoolVal(True)
            u[r.target] = f.zk_reassign[q]
            u[r.original] = r.ar
            u[r.step] = self.k(0)
            return u.d
        return SymAction("StartReassignment", (("controller", c), ("partition", q)), guard, update,
                         lambda ev, f, p: [action("StartReassignment", controller=c, partition=q)])

    def _move(self, f: KFrame, u: _U, c: int, q: int, cond, which, target: str) -> None:
        """spec.reassign._move_replicas for the replicas ``which(original, target)``:
        each goes to ``target`` where that is a legal transition."""
        ctx = f.ctx[c]
        prev = [RSTATES.index(x) for x in REPLICA_PREVIOUS[target]]
        to = RSTATES.index(target)
        for i, x in enumerate(self.ar[q]):
            rs = ctx.rstate[q][i]
            moved = self._by_pair(f, c, q, lambda o, t, x=x: (z3.BoolVal(x in which(o, t)),), (z3.BoolVal(False),))[0]
            legal = z3.Or([rs == v for v in prev + [to]])
            u[rs] = z3.If(z3.And(cond, moved, legal), self.k(to), rs)

    def _reassign_step(self, c: int, q: int, k: int, name: str) -> SymAction:
        from spec.reassign import ACTION
        act_name = ACTION[name]
        n = self.n

        def guard(f, p):
            g = [f.ctx[c].has, f.alive[c], f.rctx[c][q].has, self._next_is(f, c, q, k)]
            if name == "2":
                g.append(f.zk[q].version != -1)
            if name == "7":
                g.append(self._step7(f, c, q)[0])
            return z3.And(g)

        def removed(o, t):
            return tuple(x for x in o if x not in t)

        def update(f, p):
            u = _U(f)
            ctx, r = f.ctx[c], f.rctx[c][q]
            z = f.zk[q]
            fenced = self._fenced(f, c)
            ok = z3.Not(fenced)
            inbox: dict = {}
            stops: dict = {}
            advance = z3.BoolVal(True)
            if name in ("1", "10", "11", "2", "7"):
                # conditional writes: a fenced controller resigns and goes no further
                u[ctx.has] = ok
                advance = ok
            if name == "1":
                ext = self._by_pair(f, c, q, lambda o, t: (self.k(self.ar_id(q, _extended(o, t))),), (r.ar,))[0]
                u[f.zk_ar[q]] = z3.If(ok, ext, f.zk_ar[q])
                u[r.ar] = z3.If(ok, ext, r.ar)
            elif name == "2":
                self._write(f, u, inbox, c, q, ok, z.leader, z.isr, self._ar_targets(f, c, q))
            elif name == "3":
                self._move(f, u, c, q, z3.BoolVal(True), lambda o, t: [x for x in t if x not in o], NEW_REPLICA)
            elif name == "5":
                self._move(f, u, c, q, z3.BoolVal(True), lambda o, t: t, ONLINE_REPLICA)
            elif name == "6":
                u[r.ar] = r.target
            elif name == "7":
                _ok, leader, elected = self._step7(f, c, q)
                new = LI(leader, z.leader_epoch + 1, z.isr, ctx.epoch, z.version + 1)
                u.li(z, _if_li(ok, new, z))
                u.li(ctx.cache[q], _if_li(ok, new, ctx.cache[q]))
                ps = ctx.pstate[q]
                u[ps] = z3.If(z3.And(ok, elected, z3.Or(ps == P_NEW, ps == P_ONLINE, ps == P_OFFLINE)),
                              self.k(P_ONLINE), ps)
                ext = self._by_pair(f, c, q, lambda o, t: (mask(_extended(o, t), n),), (z3.BitVecVal(0, n),))[0]
                car = self.ar_mask(q, r.ar)
                for x in self.ar[q]:
                    to = z3.If(elected, member(x, car), member(x, ext))
                    self._send(f, u, inbox, x, q, z3.And(ok, to, self._live(f, c, x)), ctx.epoch, new, r.ar)
                u[f.leader_moved[q]] = z3.If(ok, r.target, f.leader_moved[q])
            elif name == "8":
                def old_isr(o, t):
                    leader, isr = z.leader, z.isr
                    for x in removed(o, t):
                        inside = member(x, isr)
                        leader = z3.If(z3.And(inside, leader == x), self.k(NO_LEADER), leader)
                        several = isr & (isr - 1) != 0
                        isr = z3.If(z3.And(inside, several), isr & ~bit(x, n), isr)
                    return leader, isr
                leader, isr = self._by_pair(f, c, q, old_isr, (z.leader, z.isr))
                changed = z3.Or(leader != z.leader, isr != z.isr)
                write = z3.And(changed, ok)
                u[ctx.has] = z3.Not(z3.And(changed, fenced))
                advance = z3.Not(z3.And(changed, fenced))
                self._write(f, u, inbox, c, q, write, leader, isr, self._ar_targets(f, c, q))
                rem = self._by_pair(f, c, q, lambda o, t: (mask(removed(o, t), n),), (z3.BitVecVal(0, n),))[0]
                for x in self.ar[q]:
                    self._send_stop(f, u, stops, x, q, z3.And(advance, member(x, rem), ctx.live[x] > 0),
                                    ctx.epoch, False)
                self._move(f, u, c, q, advance, removed, OFFLINE_REPLICA)
            elif name == "9a":
                rem = self._by_pair(f, c, q, lambda o, t: (mask(removed(o, t), n),), (z3.BitVecVal(0, n),))[0]
                for x in self.ar[q]:
                    self._send_stop(f, u, stops, x, q, z3.And(member(x, rem), ctx.live[x] > 0), ctx.epoch, True)
                self._move(f, u, c, q, z3.BoolVal(True), removed, REPLICA_DELETION_STARTED)
            elif name == "9b":
                self._move(f, u, c, q, z3.BoolVal(True), removed, REPLICA_DELETION_SUCCESSFUL)
            elif name == "9":
                ok_ = RSTATES.index(REPLICA_DELETION_SUCCESSFUL)
                for i, x in enumerate(self.ar[q]):
                    rs = ctx.rstate[q][i]
                    moved = self._by_pair(f, c, q, lambda o, t, x=x: (z3.BoolVal(x in removed(o, t)),),
                                          (z3.BoolVal(False),))[0]
                    u[rs] = z3.If(z3.And(moved, rs == ok_), self.k(RSTATES.index(NON_EXISTENT_REPLICA)), rs)
            elif name == "10":
                u[f.zk_ar[q]] = z3.If(ok, r.target, f.zk_ar[q])
                u[r.ar] = z3.If(ok, r.target, r.ar)
            if name == "11":
                u[f.zk_reassign[q]] = z3.If(ok, self.k(-1), f.zk_reassign[q])
                u[r.has] = z3.And(r.has, z3.Not(ok))
            else:
                u[r.step] = z3.If(advance, self.k(R_ORDER.index(name)), r.step)
            self._flush(f, u, inbox)
            self._flush_stops(f, u, stops)
            return u.d

        def explicit(ev, f, p):
            if name == "7":
                return [action(act_name, controller=c, partition=q, leader=ev(self._step7(f, c, q)[1]))]
            return [action(act_name, controller=c, partition=q)]
        return SymAction(act_name, (("controller", c), ("partition", q)), guard, update, explicit)

    # faults (spec/faults.py)

    def _may_fail(self, f: KFrame, b: int):
        return z3.Or(f.zk_controller != b, f.budget["controller_failovers"] > 0)

    def _crash(self, b: int) -> SymAction:
        def guard(f, p):
            return z3.And(f.alive[b], f.budget["crashes"] > 0, self._may_fail(f, b))

        def update(f, p):
            u = _U(f)
            was = f.zk_controller == b
            u[f.budget["controller_failovers"]] = f.budget["controller_failovers"] - z3.If(was, self.k(1), self.k(0))
            u[f.budget["crashes"]] = f.budget["crashes"] - 1
            u[f.session[b]] = z3.If(f.session[b] > 0, -f.session[b], f.session[b])
            u[f.zk_controller] = z3.If(was, NO_LEADER, f.zk_controller)
            u[f.alive[b]] = z3.BoolVal(False)
            u[f.seen[b]] = self.k(0)
            for q in range(self.np):
                u.li(f.view[b][q], self.no_state())
                if self.re:
                    u[f.assigned[b][q]] = self.k(-1)
            self._drop_requests(f, u, b)
            u[f.ctx[b].has] = z3.BoolVal(False)
            return u.d
        return SymAction("CrashBroker", (("broker", b),), guard, update, lambda ev, f, p: [action("CrashBroker", broker=b)])

    def _restart(self, b: int) -> SymAction:
        def guard(f, p):
            return z3.Not(f.alive[b])

        def update(f, p):
            u = _U(f)
            u[f.alive[b]] = z3.BoolVal(True)
            u[f.session[b]] = z3.If(f.session[b] < 0, -f.session[b], f.session[b]) + 1
            return u.d
        return SymAction("RestartBroker", (("broker", b),), guard, update,
                         lambda ev, f, p: [action("RestartBroker", broker=b)])

    def _expire(self, b: int) -> SymAction:
        def guard(f, p):
            return z3.And(f.alive[b], f.session[b] > 0, f.budget["session_expiries"] > 0, self._may_fail(f, b))

        def update(f, p):
            u = _U(f)
            was = f.zk_controller == b
            u[f.budget["controller_failovers"]] = f.budget["controller_failovers"] - z3.If(was, self.k(1), self.k(0))
            u[f.budget["session_expiries"]] = f.budget["session_expiries"] - 1
            u[f.session[b]] = -f.session[b]
            u[f.zk_controller] = z3.If(was, NO_LEADER, f.zk_controller)
            return u.d
        return SymAction("ExpireSession", (("broker", b),), guard, update,
                         lambda ev, f, p: [action("ExpireSession", broker=b)])

    def _register(self, b: int) -> SymAction:
        def guard(f, p):
            return z3.And(f.alive[b], f.session[b] <= 0)

        def update(f, p):
            u = _U(f)
            u[f.session[b]] = z3.If(f.session[b] < 0, -f.session[b], f.session[b]) + 1
            return u.d
        return SymAction("RegisterBroker", (("broker", b),), guard, update,
                         lambda ev, f, p: [action("RegisterBroker", broker=b)])

    def _resign(self, b: int) -> SymAction:
        def guard(f, p):
            return z3.And(f.alive[b], f.ctx[b].has, f.zk_controller != b)

        def update(f, p):
            u = _U(f)
            u[f.ctx[b].has] = z3.BoolVal(False)
            return u.d
        return SymAction("Resign", (("broker", b),), guard, update, lambda ev, f, p: [action("Resign", broker=b)])

    # controller (spec/controller.py)

    def _watching(self, f: KFrame, c: int):
        return z3.And(f.zk_controller == c, f.ctx[c].has, f.alive[c])

    def _live(self, f: KFrame, c: int, x: int):
        return f.ctx[c].live[x] > 0

    def _idle(self, f: KFrame, c: int):
        """spec.reassign.busy: a controller inside a reassignment event takes no other
        controller action (True without reassignment)."""
        if not self.re:
            return z3.BoolVal(True)
        busy = []
        for q in range(self.np):
            r = f.rctx[c][q]
            steps = z3.Or([r.step == R_ORDER.index(x) for x in ("1", "2", "5", "7", "8", "9a", "9b", "9", "10")])
            six = z3.And(r.step == R_ORDER.index("6"), self._step7(f, c, q)[0])
            busy.append(z3.And(r.has, z3.Or(steps, six)))
        return z3.Not(z3.Or(busy))

    # the requests in flight: an array (prove) or one slot per step (bmc)

    def _no_requests(self, f: KFrame, b: int):
        if self.slots is None:
            return f.inbox[b] == self.empty
        return z3.And([z3.Not(valid) for q in range(self.np) for valid, _li in f.slot[b][q]])

    def _drop_requests(self, f: KFrame, u: _U, b: int) -> None:
        if self.slots is None:
            u[f.inbox[b]] = self.empty
        else:
            for q in range(self.np):
                for valid, _li in f.slot[b][q]:
                    u[valid] = z3.BoolVal(False)
        if self.re:
            if self.slots is None:
                u[f.stop_inbox[b]] = self.stop_empty
            else:
                for q in range(self.np):
                    for valid, _ce, _d in f.stop_slot[b][q]:
                        u[valid] = z3.BoolVal(False)

    def _no_stops(self, f: KFrame, b: int):
        if self.slots is None:
            return f.stop_inbox[b] == self.stop_empty
        return z3.And([z3.Not(v) for q in range(self.np) for v, _c, _d in f.stop_slot[b][q]])

    def _send_stop(self, f: KFrame, u: _U, stops: dict, target: int, q: int, cond, ce, delete: bool) -> None:
        """StopReplica(ce, q, delete) to ``target`` when ``cond`` (one per step and
        broker and partition, like LeaderAndIsr)."""
        if self.slots is None:
            req = self.StopReq.stop(ce, self.k(q), z3.BoolVal(delete))
            cur = stops.get(target, f.stop_inbox[target])
            stops[target] = z3.If(cond, z3.Store(cur, req, True), cur)
            return
        if (target, q) in stops:
            raise AssertionError(f"two StopReplica to broker {target} for partition {q} in one step")
        stops[(target, q)] = True
        valid, sce, sdel = f.stop_slot[target][q][f.tag]
        u[valid] = cond
        u[sce] = ce
        u[sdel] = z3.BoolVal(delete)

    def _flush_stops(self, f: KFrame, u: _U, stops: dict) -> None:
        if self.slots is None:
            for r, v in stops.items():
                u[f.stop_inbox[r]] = v

    def _send(self, f: KFrame, u: _U, inbox: dict, target: int, q: int, cond, ce, li: LI, replicas=None) -> None:
        """Add LeaderAndIsr(ce, q, li) to ``target``'s requests in flight when ``cond``
        holds.  Array updates collect in ``inbox`` (``_flush`` writes them); a slot is
        the pre-frame's step number, and a step sends at most one request per broker
        and partition."""
        if self.slots is None:
            req = self.req(ce, q, li, replicas)
            cur = inbox.get(target, f.inbox[target])
            inbox[target] = z3.Store(cur, req, True) if z3.is_true(cond) else z3.If(cond, z3.Store(cur, req, True), cur)
            return
        valid, slot = f.slot[target][q][f.tag]
        if (target, q) in inbox:
            raise AssertionError(f"two requests to broker {target} for partition {q} in one step")
        inbox[(target, q)] = True
        u[valid] = cond
        u.li(slot, LI(li.leader, li.leader_epoch, li.isr, ce, li.version))
        if self.re:
            u[f.slot_replicas[target][q][f.tag]] = replicas

    def _flush(self, f: KFrame, u: _U, inbox: dict) -> None:
        if self.slots is None:
            for r, v in inbox.items():
                u[f.inbox[r]] = v

    def _elect_controller(self, b: int) -> SymAction:
        def guard(f, p):
            return z3.And(f.zk_controller == NO_LEADER, f.alive[b], z3.Not(f.ctx[b].has), f.session[b] > 0)

        def update(f, p):
            u = _U(f)
            ctx = f.ctx[b]
            epoch = f.zk_epoch + 1
            live = [z3.If(s > 0, s, 0) for s in f.session]
            u[f.zk_controller] = self.k(b)
            u[f.zk_epoch] = epoch
            u[ctx.has] = z3.BoolVal(True)
            u[ctx.epoch] = epoch
            for x in range(self.n):
                u[ctx.live[x]] = live[x]
            inbox: dict = {}
            for q in range(self.np):
                z = f.zk[q]
                u.li(ctx.cache[q], z)
                leader_live = z3.Or([z3.And(z.leader == x, f.session[x] > 0) for x in range(self.n)])
                u[ctx.pstate[q]] = z3.If(z.version == -1, self.k(P_NEW),
                                         z3.If(z3.And(z.leader != NO_LEADER, leader_live), self.k(P_ONLINE),
                                               self.k(P_OFFLINE)))
                zar = f.zk_ar[q] if self.re else None
                for i, r in enumerate(self.ar[q]):
                    st = z3.If(f.session[r] > 0, self.k(R_ONLINE), self.k(R_INELIGIBLE))
                    if self.re:
                        st = z3.If(self.in_ar(q, zar, r), st, self.k(RSTATES.index(NON_EXISTENT_REPLICA)))
                    u[ctx.rstate[q][i]] = st
                for r in self.ar[q]:
                    self._send(f, u, inbox, r, q, z3.And(z.version != -1, f.session[r] > 0, self.in_ar(q, zar, r)),
                               epoch, z, zar)
                if self.re:
                    # initializePartitionReassignment: resumed from the AR in ZooKeeper
                    rc = f.rctx[b][q]
                    u[rc.ar] = zar
                    u[rc.has] = f.zk_reassign[q] != -1
                    u[rc.target] = f.zk_reassign[q]
                    u[rc.original] = zar
                    u[rc.step] = self.k(0)
            self._flush(f, u, inbox)
            return u.d
        return SymAction("ElectController", (("broker", b),), guard, update,
                         lambda ev, f, p: [action("ElectController", broker=b)])

    def _broker_failure(self, c: int, x: int) -> SymAction:
        def guard(f, p):
            seen = f.ctx[c].live[x]
            return z3.And(self._watching(f, c), seen > 0, f.session[x] != seen, self._idle(f, c))

        def update(f, p):
            u = _U(f)
            ctx = f.ctx[c]
            u[ctx.live[x]] = self.k(0)
            for q, ar in enumerate(self.ar):
                if x not in ar:
                    continue
                i = ar.index(x)
                inar = self.in_ar(q, self._ctx_ar(f, c, q), x)
                rs = ctx.rstate[q][i]
                u[rs] = z3.If(z3.And(inar, rs == R_STARTED), R_INELIGIBLE, rs)
                ps = ctx.pstate[q]
                u[ps] = z3.If(z3.And(inar, ctx.cache[q].leader == x, z3.Or(ps == P_ONLINE, ps == P_NEW)),
                              P_OFFLINE, ps)
            return u.d
        return SymAction("BrokerFailure", (("controller", c), ("broker", x)), guard, update,
                         lambda ev, f, p: [action("BrokerFailure", controller=c, broker=x)])

    def _broker_startup(self, c: int, x: int) -> SymAction:
        def guard(f, p):
            return z3.And(self._watching(f, c), f.ctx[c].live[x] == 0, f.session[x] > 0, self._idle(f, c))

        def update(f, p):
            u = _U(f)
            ctx = f.ctx[c]
            inbox: dict = {}
            for q, ar in enumerate(self.ar):
                if x not in ar:
                    continue
                i = ar.index(x)
                car = self._ctx_ar(f, c, q)
                inar = self.in_ar(q, car, x)
                rs = ctx.rstate[q][i]
                u[rs] = z3.If(z3.And(inar, z3.Or(rs == R_OFFLINE, rs == R_INELIGIBLE, rs == R_NEW)), R_ONLINE, rs)
                cache = ctx.cache[q]
                self._send(f, u, inbox, x, q, z3.And(inar, cache.version != -1, ctx.pstate[q] == P_ONLINE),
                           ctx.epoch, cache, car)
            u[ctx.live[x]] = f.session[x]
            self._flush(f, u, inbox)
            return u.d
        return SymAction("BrokerStartup", (("controller", c), ("broker", x)), guard, update,
                         lambda ev, f, p: [action("BrokerStartup", controller=c, broker=x)])

    def _election(self, f: KFrame, c: int, q: int, strategy: str):
        """``(enabled, leader, isr, clean)`` of spec.election's strategy, as terms, over
        the controller's cached AR."""
        out = self._fold_ar(q, self._ctx_ar(f, c, q), lambda ar: self._election_ar(f, c, q, strategy, ar))
        if self.re and strategy == "preferred":
            # Kafka leaves partitions being reassigned out of preferred-replica election.
            out = (z3.And(out[0], z3.Not(f.rctx[c][q].has)),) + tuple(out[1:])
        return out

    def _election_ar(self, f: KFrame, c: int, q: int, strategy: str, ar: tuple):
        n = self.n
        ctx = f.ctx[c]
        z = f.zk[q]
        live = [self._live(f, c, r) for r in range(n)]
        livemask = z3.BitVecVal(0, n)
        for r in range(n):
            livemask = livemask | z3.If(live[r], bit(r, n), z3.BitVecVal(0, n))
        if strategy == "new":
            conds = [live[r] for r in ar]
            isr = z3.BitVecVal(0, n)
            for r in ar:
                isr = isr | z3.If(live[r], bit(r, n), z3.BitVecVal(0, n))
            ok = z3.And(ctx.pstate[q] == P_NEW, z.version == -1, ctx.cache[q].version == -1, z3.Or(conds))
            return ok, _first(self.k, ar, conds), isr, z3.BoolVal(True)
        if strategy == "offline":
            clean_conds = [z3.And(live[r], member(r, z.isr)) for r in ar]
            clean = z3.Or(clean_conds)
            if self.cfg.unclean_leader_election:
                unclean = z3.And(f.budget["unclean_elections"] > 0, z3.Or([live[r] for r in ar]))
            else:
                unclean = z3.BoolVal(False)
            leader = z3.If(clean, _first(self.k, ar, clean_conds), _first(self.k, ar, [live[r] for r in ar]))
            isr = z3.If(clean, z.isr & livemask, self._bit_of(leader))
            return z3.And(ctx.pstate[q] == P_OFFLINE, z3.Or(clean, unclean)), leader, isr, clean
        # preferred: never while the preferred replica shuts down (no controlled shutdown here)
        pref = ar[0]
        ok = z3.And(ctx.pstate[q] == P_ONLINE, z.leader != pref, live[pref], member(pref, z.isr))
        return ok, self.k(pref), z.isr, z3.BoolVal(True)

    def _bit_of(self, x) -> z3.BitVecRef:
        n = self.n
        out = z3.BitVecVal(0, n)
        for b in range(n):
            out = z3.If(x == b, bit(b, n), out)
        return out

    def _fenced(self, f: KFrame, c: int):
        """conditional_write's controller-epoch condition (zk_epoch_fencing)."""
        if not self.cfg.zk_epoch_fencing:
            return z3.BoolVal(False)
        return f.zk_epoch != f.ctx[c].epoch

    def _write(self, f: KFrame, u: _U, inbox: dict, c: int, q: int, cond, leader, isr, targets) -> None:
        """conditional_write (bump) when ``cond``, then LeaderAndIsr to ``targets``
        (pairs of broker and condition), carrying the controller's cached AR."""
        z = f.zk[q]
        ctx = f.ctx[c]
        new = LI(leader, z.leader_epoch + 1, isr, ctx.epoch, z.version + 1)
        u.li(z, _if_li(cond, new, z))
        u.li(ctx.cache[q], _if_li(cond, new, ctx.cache[q]))
        for r, rc in targets:
            self._send(f, u, inbox, r, q, z3.And(cond, rc), ctx.epoch, new, self._ctx_ar(f, c, q))

    def _ar_targets(self, f: KFrame, c: int, q: int, but: int | None = None) -> list:
        """The live replicas of the controller's cached AR (other than ``but``)."""
        car = self._ctx_ar(f, c, q)
        return [(r, z3.And(self.in_ar(q, car, r), self._live(f, c, r))) for r in self.ar[q] if r != but]

    def _elect_leader(self, c: int, q: int, strategy: str) -> SymAction:
        def guard(f, p):
            ok = self._election(f, c, q, strategy)[0]
            return z3.And(f.ctx[c].has, f.alive[c], ok, self._idle(f, c))

        def update(f, p):
            u = _U(f)
            ctx = f.ctx[c]
            _ok, leader, isr, clean = self._election(f, c, q, strategy)
            fenced = self._fenced(f, c)
            written = z3.Not(fenced)
            u[ctx.has] = written
            inbox: dict = {}
            self._write(f, u, inbox, c, q, written, leader, isr, self._ar_targets(f, c, q))
            u[ctx.pstate[q]] = z3.If(written, P_ONLINE, ctx.pstate[q])
            if strategy == "offline" and self.cfg.unclean_leader_election:
                k = f.budget["unclean_elections"]
                u[k] = z3.If(z3.And(written, z3.Not(clean)), k - 1, k)
            self._flush(f, u, inbox)
            return u.d

        def explicit(ev, f, p):
            _ok, leader, _isr, clean = self._election(f, c, q, strategy)
            return [action("ElectLeader", controller=c, partition=q, leader=ev(leader), strategy=strategy,
                           clean=bool(ev(clean)))]
        return SymAction("ElectLeader", (("controller", c), ("partition", q), ("strategy", strategy)),
                         guard, update, explicit)

    def _remove_from_isr(self, c: int, q: int, r: int) -> SymAction:
        i = self.ar[q].index(r)

        def guard(f, p):
            ctx = f.ctx[c]
            rs = ctx.rstate[q][i]
            return z3.And(ctx.has, f.alive[c], z3.Or(rs == R_ONLINE, rs == R_NEW), ctx.live[r] == 0,
                          self.in_ar(q, self._ctx_ar(f, c, q), r), self._idle(f, c))

        def update(f, p):
            u = _U(f)
            ctx = f.ctx[c]
            z = f.zk[q]
            attempt = z3.And(member(r, z.isr), z.leader != r, z.leader != NO_LEADER)
            fenced = z3.And(attempt, self._fenced(f, c))
            written = z3.And(attempt, z3.Not(fenced))
            u[ctx.has] = z3.Not(fenced)
            inbox: dict = {}
            self._write(f, u, inbox, c, q, written, z.leader, z.isr & ~bit(r, self.n),
                        self._ar_targets(f, c, q, but=r))
            rs = ctx.rstate[q][i]
            u[rs] = z3.If(fenced, rs, R_OFFLINE)
            self._flush(f, u, inbox)
            return u.d
        return SymAction("RemoveReplicaFromIsr", (("controller", c), ("partition", q), ("replica", r)), guard, update,
                         lambda ev, f, p: [action("RemoveReplicaFromIsr", controller=c, partition=q, replica=r)])

    def _isr_notification(self, c: int, q: int) -> SymAction:
        def guard(f, p):
            z, cache = f.zk[q], f.ctx[c].cache[q]
            return z3.And(self._watching(f, c), z.version > cache.version, z.leader == cache.leader,
                          z.leader_epoch == cache.leader_epoch, self._idle(f, c))

        def update(f, p):
            u = _U(f)
            u.li(f.ctx[c].cache[q], f.zk[q])
            return u.d
        return SymAction("IsrChangeNotification", (("controller", c), ("partition", q)), guard, update,
                         lambda ev, f, p: [action("IsrChangeNotification", controller=c, partition=q)])

    # brokers (spec/broker.py)

    def delivered(self, f: KFrame, act: SymAction, p) -> LI:
        """The request a DeliverLeaderAndIsr instance delivers (controller_epoch is the
        request's), as terms over the pre-frame and the parameters."""
        b, q, j = act.get("broker"), act.get("partition"), act.get("slot")
        if j is not None:
            return f.slot[b][q][j][1]
        return LI(p["leader"], p["leader_epoch"], p["isr"], p["controller_epoch"], p["version"])

    def _deliver(self, b: int, q: int, j: int | None = None) -> SymAction:
        n = self.n
        args: tuple = (("broker", b), ("partition", q))
        if j is None:
            params: tuple = (("controller_epoch", self.I), ("leader", self.I),
                             ("leader_epoch", self.I), ("isr", z3.BitVecSort(n)), ("version", self.I))
            if self.re:
                params += (("replicas", self.I),)
        else:
            params, args = (), args + (("slot", j),)
        act: SymAction

        def req_of(f, p):
            r = self.delivered(f, act, p)
            return self.req(r.controller_epoch, q, r, self.delivered_replicas(f, act, p))

        def guard(f, p):
            if j is None:
                return z3.And(f.alive[b], f.inbox[b][req_of(f, p)])
            return z3.And(f.alive[b], f.slot[b][q][j][0])

        def update(f, p):
            u = _U(f)
            r = self.delivered(f, act, p)
            ce = r.controller_epoch
            fenced = z3.BoolVal(False)
            if self.cfg.controller_epoch_fencing:
                fenced = ce < f.seen[b]
            if j is None:
                u[f.inbox[b]] = z3.Store(f.inbox[b], req_of(f, p), False)
            else:
                # the requests in flight are a set: every slot holding this request empties
                for other_j, (valid, other) in enumerate(f.slot[b][q]):
                    if other is r:
                        same = z3.BoolVal(True)
                    else:
                        same = z3.And([x == y for x, y in zip(other, r)])
                        if self.re:
                            same = z3.And(same, f.slot_replicas[b][q][other_j] == f.slot_replicas[b][q][j])
                    u[valid] = z3.And(valid, z3.Not(same))
            u[f.seen[b]] = z3.If(fenced, f.seen[b], _max(f.seen[b], ce))
            view = f.view[b][q]
            applied = z3.And(z3.Not(fenced), r.leader_epoch > view.leader_epoch)
            u.li(view, _if_li(applied, r, view))
            if self.re:
                a = f.assigned[b][q]
                u[a] = z3.If(applied, self.delivered_replicas(f, act, p), a)
            return u.d

        def explicit(ev, f, p):
            r = self.delivered(f, act, p)
            extra = {"replicas": self._ar_value(q, ev(self.delivered_replicas(f, act, p)))} if self.re else {}
            return [action("DeliverLeaderAndIsr", broker=b, partition=q, controller_epoch=ev(r.controller_epoch),
                           leader=ev(r.leader), leader_epoch=ev(r.leader_epoch),
                           isr=members(ev(r.isr), n), version=ev(r.version), **extra)]
        act = SymAction("DeliverLeaderAndIsr", args, guard, update, explicit, params)
        return act

    def delivered_replicas(self, f: KFrame, act: SymAction, p):
        """The AR index a delivered LeaderAndIsr carries (None without reassignment)."""
        if not self.re:
            return None
        b, q, j = act.get("broker"), act.get("partition"), act.get("slot")
        return p["replicas"] if j is None else f.slot_replicas[b][q][j]

    def _ar_value(self, q: int, i: int) -> tuple:
        return self.ars[q][i] if 0 <= i < len(self.ars[q]) else ()

    def delivered_stop(self, f: KFrame, act: SymAction, p):
        """``(controller_epoch, delete)`` of the StopReplica a DeliverStopReplica delivers."""
        b, q, j = act.get("broker"), act.get("partition"), act.get("slot")
        if j is None:
            return p["controller_epoch"], p["delete"]
        return f.stop_slot[b][q][j][1], f.stop_slot[b][q][j][2]

    def _deliver_stop(self, b: int, q: int, j: int | None = None) -> SymAction:
        """DeliverStopReplica (spec/broker.py): FIFO after the LeaderAndIsr requests of
        the same controller epoch for the partition; delete=true forgets the replica,
        delete=false only its leadership.  (The response to a topic deletion's
        StopReplica is not encoded: topic deletion is refused.)"""
        args: tuple = (("broker", b), ("partition", q))
        if j is None:
            params: tuple = (("controller_epoch", self.I), ("delete", z3.BoolSort()))
        else:
            params, args = (), args + (("slot", j),)
        act: SymAction

        def stop_of(f, p):
            ce, d = self.delivered_stop(f, act, p)
            return self.StopReq.stop(ce, self.k(q), d)

        def no_earlier_lai(f, ce):
            if j is None:
                R = self.Req
                r = z3.Const(f"fifo_{b}_{q}", R)
                return z3.ForAll([r], z3.Not(z3.And(f.inbox[b][r], R.partition(r) == q, R.controller_epoch(r) == ce)),
                                 patterns=[f.inbox[b][r]])
            return z3.And([z3.Not(z3.And(valid, li.controller_epoch == ce)) for valid, li in f.slot[b][q]])

        def guard(f, p):
            ce, _d = self.delivered_stop(f, act, p)
            present = f.stop_inbox[b][stop_of(f, p)] if j is None else f.stop_slot[b][q][j][0]
            return z3.And(f.alive[b], present, no_earlier_lai(f, ce))

        def update(f, p):
            u = _U(f)
            ce, d = self.delivered_stop(f, act, p)
            if j is None:
                u[f.stop_inbox[b]] = z3.Store(f.stop_inbox[b], stop_of(f, p), False)
            else:
                for valid, oce, od in f.stop_slot[b][q]:
                    same = z3.And(oce == ce, od == d) if (oce is not ce) else z3.BoolVal(True)
                    u[valid] = z3.And(valid, z3.Not(same))
            fenced = ce < f.seen[b] if self.cfg.controller_epoch_fencing else z3.BoolVal(False)
            ok = z3.Not(fenced)
            u[f.seen[b]] = z3.If(ok, _max(f.seen[b], ce), f.seen[b])
            view = f.view[b][q]
            keep = LI(z3.If(view.version != -1, self.k(NO_LEADER), view.leader), view.leader_epoch, view.isr,
                      view.controller_epoch, view.version)
            u.li(view, _if_li(ok, _if_li(d, self.no_state(), keep), view))
            a = f.assigned[b][q]
            u[a] = z3.If(z3.And(ok, d), self.k(-1), a)
            return u.d

        def explicit(ev, f, p):
            ce, d = self.delivered_stop(f, act, p)
            return [action("DeliverStopReplica", broker=b, partition=q, controller_epoch=ev(ce), delete=bool(ev(d)))]
        act = SymAction("DeliverStopReplica", args, guard, update, explicit, params)
        return act

    def _assigned(self, f: KFrame, b: int, q: int, x: int):
        """``x`` is in the AR of the last LeaderAndIsr ``b`` applied for ``q`` (the
        static AR without reassignment)."""
        return self.in_ar(q, f.assigned[b][q], x) if self.re else z3.BoolVal(True)

    def _isr_writer(self, f: KFrame, b: int, q: int):
        view = f.view[b][q]
        return z3.And(f.alive[b], view.leader == b, f.zk[q].version == view.version)

    def _write_isr(self, f: KFrame, u: _U, b: int, q: int, isr) -> None:
        view = f.view[b][q]
        new = LI(view.leader, view.leader_epoch, isr, view.controller_epoch, view.version + 1)
        u.li(f.zk[q], new)
        u.li(view, new)

    def _shrink(self, b: int, q: int, fo: int) -> SymAction:
        def guard(f, p):
            return z3.And(self._isr_writer(f, b, q), member(fo, f.view[b][q].isr), f.budget["isr_shrinks"] > 0,
                          self._assigned(f, b, q, fo))

        def update(f, p):
            u = _U(f)
            self._write_isr(f, u, b, q, f.view[b][q].isr & ~bit(fo, self.n))
            u[f.budget["isr_shrinks"]] = f.budget["isr_shrinks"] - 1
            return u.d
        return SymAction("ShrinkIsr", (("leader", b), ("partition", q), ("replica", fo)), guard, update,
                         lambda ev, f, p: [action("ShrinkIsr", leader=b, partition=q, replica=fo)])

    def _expand(self, b: int, q: int, fo: int) -> SymAction:
        def guard(f, p):
            mine, theirs = f.view[b][q], f.view[fo][q]
            return z3.And(self._isr_writer(f, b, q), z3.Not(member(fo, mine.isr)), f.alive[fo],
                          theirs.leader == b, theirs.leader_epoch == mine.leader_epoch, self._assigned(f, b, q, fo))

        def update(f, p):
            u = _U(f)
            self._write_isr(f, u, b, q, f.view[b][q].isr | bit(fo, self.n))
            return u.d
        return SymAction("ExpandIsr", (("leader", b), ("partition", q), ("replica", fo)), guard, update,
                         lambda ev, f, p: [action("ExpandIsr", leader=b, partition=q, replica=fo)])

    # -- invariants (spec/properties.py) ---------------------------------------------------

    def invariants(self) -> list[SymInvariant]:
        return [
            SymInvariant("LeaderInIsr", self._leader_in_isr),
            SymInvariant("IsrSubsetOfAssignedReplicas", self._isr_subset_of_ar),
            SymInvariant("AtMostOneLeaderPerEpoch", self._one_leader_per_epoch),
            SymInvariant("AtMostOneActiveController", self._one_active_controller),
            SymInvariant("ControllerEpochFencing", self._controller_epoch_fencing, step=True),
            SymInvariant("LegalStateTransitions", self._legal_transitions, step=True, per_action=False),
            SymInvariant("EpochsMonotonic", self._epochs_monotonic, step=True, per_action=False),
            SymInvariant("LeaderElectedFromIsr", self._leader_elected_from_isr, step=True, per_action=False),
        ] + ([
            SymInvariant("ReassignmentIsrInAr", self._reassignment_isr_in_ar),
            SymInvariant("ReassignmentLeaderInRar", self._reassignment_leader_in_rar),
        ] if self.re else [])

    def _leader_in_isr(self, f: KFrame):
        return z3.And([z3.Implies(z3.And(z.version != -1, z.leader != NO_LEADER), member(z.leader, z.isr))
                       for z in f.zk])

    def _zk_ar_mask(self, f: KFrame, q: int):
        return self.ar_mask(q, f.zk_ar[q]) if self.re else mask(self.ar[q], self.n)

    def _isr_subset_of_ar(self, f: KFrame):
        return z3.And([subset(f.zk[q].isr, self._zk_ar_mask(f, q)) for q in range(self.np)])

    def _reassignment_isr_in_ar(self, f: KFrame):
        return z3.And([z3.And(z3.Implies(f.zk[q].leader != NO_LEADER, member(f.zk[q].leader, self._zk_ar_mask(f, q))),
                              subset(f.zk[q].isr, self._zk_ar_mask(f, q))) for q in range(self.np)])

    def _reassignment_leader_in_rar(self, f: KFrame):
        return z3.And([z3.Implies(z3.And(f.leader_moved[q] != -1, f.zk[q].leader != NO_LEADER),
                                  member(f.zk[q].leader, self.ar_mask(q, f.leader_moved[q])))
                       for q in range(self.np)])

    def _one_leader_per_epoch(self, f: KFrame):
        c = []
        for q in range(self.np):
            for b1 in range(self.n):
                for b2 in range(b1 + 1, self.n):
                    v1, v2 = f.view[b1][q], f.view[b2][q]
                    c.append(z3.Not(z3.And(f.alive[b1], f.alive[b2], v1.leader == b1, v2.leader == b2,
                                           v1.leader_epoch == v2.leader_epoch)))
        return z3.And(c)

    def _one_active_controller(self, f: KFrame):
        active = [z3.And(f.alive[b], f.ctx[b].has, f.ctx[b].epoch == f.zk_epoch) for b in range(self.n)]
        return z3.And([z3.Not(z3.And(active[i], active[j]))
                       for i in range(self.n) for j in range(i + 1, self.n)])

    def _zk_changed(self, f: KFrame, g: KFrame):
        c = [a != b for q in range(self.np) for a, b in zip(f.zk[q], g.zk[q])]
        if self.re:
            c += [a != b for a, b in zip(f.zk_ar + f.zk_reassign, g.zk_ar + g.zk_reassign)]
        return z3.Or(c)

    def _controller_epoch_fencing(self, f: KFrame, act: SymAction, p, g: KFrame):
        if act.name == "DeliverLeaderAndIsr":
            b = act.get("broker")
            changed = z3.Or([a != c for q in range(self.np) for a, c in zip(f.view[b][q], g.view[b][q])])
            return z3.Not(z3.And(changed, self.delivered(f, act, p).controller_epoch < f.seen[b]))
        if act.name == "DeliverStopReplica":
            b = act.get("broker")
            changed = z3.Or([a != c for q in range(self.np) for a, c in zip(f.view[b][q], g.view[b][q])])
            return z3.Not(z3.And(changed, self.delivered_stop(f, act, p)[0] < f.seen[b]))
        c = act.get("controller")
        if c is None:
            return z3.BoolVal(True)
        ctx = f.ctx[c]
        return z3.Not(z3.And(ctx.has, ctx.epoch < f.zk_epoch, self._zk_changed(f, g)))

    def _legal_transitions(self, f: KFrame, act: SymAction, p, g: KFrame):
        ppairs = sorted({(PSTATES.index(b), PSTATES.index(a)) for a, prev in PARTITION_PREVIOUS.items()
                         for b in prev})
        rpairs = sorted({(RSTATES.index(b), RSTATES.index(a)) for a, prev in REPLICA_PREVIOUS.items()
                         for b in prev})

        def legal(x, y, pairs):
            return z3.Or([x == y] + [z3.And(x == a, y == b) for a, b in pairs])

        c = []
        for b in range(self.n):
            fc, gc = f.ctx[b], g.ctx[b]
            same = z3.And(fc.has, gc.has, fc.epoch == gc.epoch)
            rules = [legal(x, y, ppairs) for x, y in zip(fc.pstate, gc.pstate)]
            rules += [legal(x, y, rpairs) for q in range(self.np) for x, y in zip(fc.rstate[q], gc.rstate[q])]
            c.append(z3.Implies(same, z3.And(rules)))
        return z3.And(c)

    def _epochs_monotonic(self, f: KFrame, act: SymAction, p, g: KFrame):
        c = [g.zk_epoch >= f.zk_epoch]
        c += [z3.Implies(gz.version != -1, gz.leader_epoch >= fz.leader_epoch) for fz, gz in zip(f.zk, g.zk)]
        for b in range(self.n):
            rules = [g.seen[b] >= f.seen[b]]
            rules += [z3.Implies(gv.version != -1, gv.leader_epoch >= fv.leader_epoch)
                      for fv, gv in zip(f.view[b], g.view[b])]
            c.append(z3.Implies(g.alive[b], z3.And(rules)))
        return z3.And(c)

    def _leader_elected_from_isr(self, f: KFrame, act: SymAction, p, g: KFrame):
        return z3.And([z3.Not(z3.And(fz.version != -1, gz.leader_epoch > fz.leader_epoch, gz.leader != NO_LEADER,
                                     gz.leader != fz.leader, z3.Not(member(gz.leader, fz.isr))))
                       for fz, gz in zip(f.zk, g.zk)])

    # -- decoding ---------------------------------------------------------------------------

    def describe(self, ev, f: KFrame) -> dict:
        """The frame under a z3 model, keyed like KafkaModel.describe."""
        n = self.n

        def ids(v) -> str:
            return "[" + ", ".join(str(x) for x in members(v, n)) + "]"

        def li(x: LI) -> Any:
            v = ev(x.version)
            if v == -1 and [ev(t) for t in x] == [NO_LEADER, -1, 0, -1, -1]:
                return None     # NO_STATE, as the explicit model prints it
            return {"leader": ev(x.leader), "leader_epoch": ev(x.leader_epoch), "isr": ids(ev(x.isr)),
                    "controller_epoch": ev(x.controller_epoch), "version": v}

        sessions = [ev(s) for s in f.session]
        out: dict = {
            "zk": {
                "controller": ev(f.zk_controller),
                "controller_epoch": ev(f.zk_epoch),
                "brokers": "[" + ", ".join(str(b) for b, s in enumerate(sessions) if s > 0) + "]",
                "session": "[" + ", ".join(str(s) for s in sessions) + "]",
                "partition": {str(q): li(z) for q, z in enumerate(f.zk)},
            },
            "broker": {},
            "budget": {k: ev(f.budget[k]) for k in self.budget_keys},
        }
        if self.re:
            out["zk"]["ar"] = {str(q): ids_of(self._ar_value(q, ev(f.zk_ar[q]))) for q in range(self.np)}
            out["zk"]["reassign_partitions"] = {str(q): ids_of(self._ar_value(q, ev(f.zk_reassign[q])))
                                                for q in range(self.np) if ev(f.zk_reassign[q]) != -1}
            out["ghost"] = {"inv_leader_moved": {str(q): ids_of(self._ar_value(q, ev(f.leader_moved[q])))
                                                 for q in range(self.np) if ev(f.leader_moved[q]) != -1}}
        for b in range(n):
            d: dict = {
                "alive": ev(f.alive[b]),
                "controller_epoch_seen": ev(f.seen[b]),
                "partition": {str(q): _role(b, li(v)) for q, v in enumerate(f.view[b])},
                "in_flight": self._requests(ev, f, b),
            }
            ctx = f.ctx[b]
            if ev(ctx.has):
                d["controller"] = {
                    "epoch": ev(ctx.epoch),
                    "live": "[" + ", ".join(str(x) for x in range(n) if ev(ctx.live[x]) > 0) + "]",
                    "partition": {str(q): li(cq) for q, cq in enumerate(ctx.cache)},
                    "partition_state": {str(q): _name(PSTATES, ev(s)) for q, s in enumerate(ctx.pstate)},
                    "replica_state": {f"{q}.{r}": _name(RSTATES, ev(s))
                                      for q in range(self.np) for r, s in zip(self.ar[q], ctx.rstate[q])},
                }
                if self.re:
                    rc = f.rctx[b]
                    d["controller"]["ar"] = {str(q): ids_of(self._ar_value(q, ev(rc[q].ar))) for q in range(self.np)}
                    d["controller"]["reassigning"] = {
                        str(q): {"target": ids_of(self._ar_value(q, ev(rc[q].target))),
                                 "original": ids_of(self._ar_value(q, ev(rc[q].original))),
                                 "step": _name(R_ORDER, ev(rc[q].step))}
                        for q in range(self.np) if ev(rc[q].has)}
            if self.re:
                for q in range(self.np):
                    if d["partition"][str(q)] is not None:
                        d["partition"][str(q)]["ar"] = ids_of(self._ar_value(q, ev(f.assigned[b][q])))
            out["broker"][str(b)] = d
        return out

    def _requests(self, ev, f: KFrame, b: int) -> list:
        """The requests in flight, as the explicit model prints them.  z3 gives an array
        as stores over a default; a default of True (all but finitely many) is shown."""
        reqs: list = []
        default = False
        if self.slots is not None:
            for q in range(self.np):
                for j, (valid, li) in enumerate(f.slot[b][q]):
                    if ev(valid):
                        reps = self._ar_value(q, ev(f.slot_replicas[b][q][j])) if self.re else None
                        r = _Request(ev(li.controller_epoch), q, ev(li.leader), ev(li.leader_epoch),
                                     members(ev(li.isr), self.n), ev(li.version), reps)
                        if r not in reqs:
                            reqs.append(r)
        else:
            entries, default = _array_entries(ev.model, f.inbox[b])
            R = self.Req
            for key, val in entries:
                if not val:
                    continue
                q = ev(R.partition(key))
                reps = self._ar_value(q, ev(R.replicas(key))) if self.re and 0 <= q < self.np else None
                r = _Request(ev(R.controller_epoch(key)), q, ev(R.leader(key)),
                             ev(R.leader_epoch(key)), members(ev(R.isr(key)), self.n), ev(R.version(key)), reps)
                if r not in reqs:
                    reqs.append(r)
        reqs.sort()
        def ids(xs) -> str:
            return "[" + ", ".join(str(x) for x in xs) + "]"
        out = [f"LeaderAndIsr(controller_epoch={r.controller_epoch}, partition={r.partition}, leader={r.leader}, "
               f"leader_epoch={r.leader_epoch}, isr={ids(r.isr)}, version={r.version}"
               + (f", replicas={ids(r.replicas)})" if self.re else ")")
               for r in reqs]
        if self.re:
            stops: list = []
            if self.slots is not None:
                for q in range(self.np):
                    for valid, ce, d in f.stop_slot[b][q]:
                        if ev(valid):
                            stops.append((ev(ce), q, bool(ev(d))))
            else:
                entries, sdefault = _array_entries(ev.model, f.stop_inbox[b])
                default = default or sdefault
                S = self.StopReq
                for key, val in entries:
                    if val:
                        stops.append((ev(S.controller_epoch(key)), ev(S.partition(key)), bool(ev(S.delete(key)))))
            out += [f"StopReplica(controller_epoch={ce}, partition={q}, delete={d})"
                    for ce, q, d in sorted(set(stops))]
        if default:
            out.append("(every other request: the solver chose a set that is not finite)")
        return out

    def abstract(self, s, f: KFrame) -> z3.BoolRef:
        """The explicit KafkaState ``s`` as a constraint on frame ``f`` (array form)."""
        if self.slots is not None:
            raise NotImplementedError("abstract() needs the array form of the requests in flight")
        n = self.n

        def li(x: LI, v) -> list:
            return [x.leader == v.leader, x.leader_epoch == v.leader_epoch, x.isr == mask(v.isr, n),
                    x.controller_epoch == v.controller_epoch, x.version == v.version]

        zk = s.zk
        c = [f.zk_controller == zk.controller, f.zk_epoch == zk.controller_epoch]
        c += [a == v for a, v in zip(f.session, zk.sessions)]
        for q in range(self.np):
            c += li(f.zk[q], zk.partitions[q])
        for b, br in enumerate(s.brokers):
            c += [f.alive[b] == br.alive, f.seen[b] == br.controller_epoch_seen]
            for q in range(self.np):
                c += li(f.view[b][q], br.partitions[q])
            arr = self.empty
            stops = self.stop_empty if self.re else None
            for r in br.inbox:
                if type(r) is StopReplica and self.re:
                    stops = z3.Store(stops, self.StopReq.stop(r.controller_epoch, r.partition, r.delete), True)
                    continue
                if type(r) is not LeaderAndIsr:
                    return z3.BoolVal(False)
                extra = (self.ar_id(r.partition, r.replicas),) if self.re else ()
                arr = z3.Store(arr, self.Req.req(r.controller_epoch, r.partition, r.leader, r.leader_epoch,
                                                 mask(r.isr, n), r.version, *extra), True)
            c.append(f.inbox[b] == arr)
            if self.re:
                c.append(f.stop_inbox[b] == stops)
                c += [f.assigned[b][q] == self.ar_id(q, br.assigned[q]) for q in range(self.np)]
            ctx = f.ctx[b]
            c.append(ctx.has == (br.ctx is not None))
            if br.ctx is not None:
                k = br.ctx
                c.append(ctx.epoch == k.epoch)
                c += [a == v for a, v in zip(ctx.live, k.live)]
                for q in range(self.np):
                    c += li(ctx.cache[q], k.partitions[q])
                    c.append(ctx.pstate[q] == PSTATES.index(k.partition_states[q]))
                    c += [a == RSTATES.index(v) for a, v in zip(ctx.rstate[q], k.replica_states[q])]
                    if self.re:
                        rc, ra = f.rctx[b][q], k.reassigning[q]
                        c += [rc.ar == self.ar_id(q, k.ar[q]), rc.has == (ra is not None)]
                        if ra is not None:
                            c += [rc.target == self.ar_id(q, ra.target), rc.original == self.ar_id(q, ra.original),
                                  rc.step == R_ORDER.index(ra.step)]
        bud = s.budget
        c += [f.budget[k] == getattr(bud, k) for k in self.budget_keys]
        if self.re:
            for q in range(self.np):
                c += [f.zk_ar[q] == self.ar_id(q, zk.ar[q]), f.zk_reassign[q] == self.ar_id(q, zk.reassign[q]),
                      f.leader_moved[q] == self.ar_id(q, s.ghost.inv_leader_moved[q])]
        return z3.And(c)


def ids_of(xs) -> str:
    return "[" + ", ".join(str(x) for x in xs) + "]"


def _role(b: int, d: Any) -> Any:
    if d is not None:
        d["role"] = "leader" if d["leader"] == b else "follower"
    return d


def _name(names: tuple, i: int) -> str:
    return names[i] if 0 <= i < len(names) else f"?{i}"


def _array_entries(m: z3.ModelRef, arr) -> tuple[list, bool]:
    """``([(key, value)], default)`` of an array term under model ``m``."""
    v = m.eval(arr, model_completion=True)
    entries: list = []
    seen: set = set()

    def add(key, value) -> None:
        k = m.eval(key, model_completion=True)
        if k.sexpr() not in seen:       # the outermost store of a key wins
            seen.add(k.sexpr())
            entries.append((k, value))

    while True:
        if z3.is_store(v):
            add(v.arg(1), z3.is_true(m.eval(v.arg(2), model_completion=True)))
            v = v.arg(0)
        elif z3.is_const_array(v):
            return entries, z3.is_true(m.eval(v.arg(0), model_completion=True))
        elif z3.is_as_array(v):
            fi = m[z3.get_as_array_func(v)]
            for e in fi.as_list()[:-1]:
                add(e[0], z3.is_true(e[1]))
            return entries, z3.is_true(fi.as_list()[-1]) if fi.as_list() else False
        else:
            return entries, False
