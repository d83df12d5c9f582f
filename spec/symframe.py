"""The frame of the Kafka symbolic encoding: its constants, bit-vector sets of brokers,
the z3 views of a LeaderIsr and a controller context, and :class:`KFrame`, one state as
z3 constants.  Every part of :mod:`spec.symbolic` reads the state through these."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import z3

from checker.symbolic import Frame
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
)

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
    owe: tuple                    # per partition, per replica slot: its OfflineReplica step is owed (ctx.offline)


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

    def __init__(self, enc: Any, tag: Any) -> None:
        super().__init__(tag, [])
        n, np_, ar = enc.n, enc.np, enc.ar
        self.enc, self.n, self.partitions, self.ar = enc, n, np_, ar
        # terms built once per frame and shared by many guards (the event order's
        # "no step of controller c enabled")
        self.memo: dict = {}
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
                                for p in range(np_)),
                            tuple(tuple(self.var(f"{pre}.offline[{p}][{r}]", B) for r in ar[p])
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


class Updates:
    """Updates of a frame's variables, keyed by name for the generic engine."""

    def __init__(self, f: KFrame) -> None:
        self.f, self.d = f, {}

    def __setitem__(self, const, value) -> None:
        self.d[self.f.name_of(const)] = value

    def li(self, old: LI, new: LI) -> None:
        for o, v in zip(old, new):
            self[o] = v


def if_li(c, a: LI, b: LI) -> LI:
    return LI(*(z3.If(c, x, y) for x, y in zip(a, b)))


def first_of(k, ar, conds) -> Any:
    """The first replica of ``ar`` whose condition holds (NO_LEADER if none); ``k``
    makes a numeral of the encoding's integer sort."""
    out: Any = k(NO_LEADER)
    for r, c in reversed(list(zip(ar, conds))):
        out = z3.If(c, k(r), out)
    return out


def zmax(a, b):
    return z3.If(a >= b, a, b)


def extended(original: tuple, target: tuple) -> tuple:
    """spec.reassign.extended: OAR + RAR, ordered OAR first."""
    return original + tuple(x for x in target if x not in original)


def ar_closure(initial: tuple, targets: list) -> tuple:
    """Every ordered AR a partition can have: the initial AR, each RAR, and OAR + RAR
    for every AR reachable so far as OAR (a successor resumes from OAR + RAR).  Finite:
    sequences of distinct brokers of the replica slots."""
    out = [initial] + [t for t in targets if t != initial]
    i = 0
    while i < len(out):
        for t in targets:
            e = extended(out[i], t)
            if e not in out:
                out.append(e)
        i += 1
    return tuple(dict.fromkeys(out))
