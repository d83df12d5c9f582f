"""Strengthening lemmas for the reassignment invariants, for the fault-free reassignment
presets (`reassign`, `reassign-rf`):

    kmc prove --preset reassign --brokers 5 --invariant ReassignmentIsrInAr \\
        --invariant LeaderInIsr --lemmas examples/lemmas_reassign.py

They are proved with the invariants like any lemma.  The first one pins the fault
budgets the preset configures (no crash, no session expiry, no ISR shrink): it is
inductive (no action gives budget back), so the proof covers every reachable state of
the configuration as given, for any number of brokers, but NOT the same preset with
faults: with a crash a controller can fail over in the middle of a reassignment (see
the reassign-crash preset and `kmc bmc`), which these lemmas do not describe.

examples/lemmas.py's CopiesMatchZooKeeper does not hold with reassignment: a
StopReplica(delete=false) leaves a broker's view with ZooKeeper's version and no
leader; CopiesMatch below allows that.
"""

import z3

from checker.symbolic import lemma
from spec.symbolic import R_ORDER, subset


def _ctx(f):
    for b in range(f.n):
        yield b, f.ctx[b]


NoFaultBudget = lemma(
    "NoFaultBudget",
    lambda f: z3.And(f.budget["crashes"] == 0, f.budget["session_expiries"] == 0, f.budget["isr_shrinks"] == 0),
    "the preset's fault budgets are 0 and no action gives budget back")

AllUp = lemma(
    "AllUp",
    lambda f: z3.And([z3.And(f.alive[b], f.session[b] > 0) for b in range(f.n)]),
    "without crashes or session expiries every broker stays up and registered")

OneController = lemma(
    "OneController",
    lambda f: z3.And([z3.Implies(c.has, z3.And(f.zk_controller == b, c.epoch == f.zk_epoch)) for b, c in _ctx(f)]
                     + [z3.Implies(f.zk_controller == b, c.has) for b, c in _ctx(f)]),
    "with nothing to lose the controller, the first one stays, with the current epoch")

NoNewerMark = lemma(
    "NoNewerMark",
    lambda f: z3.And([z.controller_epoch <= f.zk_epoch for z in f.zk]),
    "a state znode holds the epoch of a controller that wrote it, or that a leader's ISR write kept: never one "
    "ahead of /controller_epoch, so the one controller never finds a newer controller's mark (step 7 never "
    "fails on one)")

NoStateBeforeCreation = lemma(
    "NoStateBeforeCreation",
    lambda f: z3.And([z3.Implies(z.version == -1, z3.And(z.leader == -1, z.leader_epoch == -1, z.isr == 0))
                      for z in f.zk]),
    "before the first election writes it, a partition's state znode does not exist")


def _copies(f, p):
    for b in range(f.n):
        yield z3.BoolVal(True), f.view[b][p], True
        yield f.ctx[b].has, f.ctx[b].cache[p], False


def _not_ahead(f):
    c = []
    for p, z in enumerate(f.zk):
        c += [z3.Implies(cond, li.version <= z.version) for cond, li, _v in _copies(f, p)]
    c += [f.in_flight(b, lambda p, r: r.version <= f.zk[p].version) for b in range(f.n)]
    return z3.And(c)


CopiesNotAhead = lemma("CopiesNotAhead", _not_ahead, "versions are issued by ZooKeeper")


def _match(f):
    def same(p, li, view=False):
        z = f.zk[p]
        leader = z3.Or(li.leader == z.leader, li.leader == -1) if view else li.leader == z.leader
        return z3.Implies(li.version == z.version, z3.And(leader, li.leader_epoch == z.leader_epoch, li.isr == z.isr))
    c = []
    for p in range(f.partitions):
        c += [z3.Implies(cond, same(p, li, v)) for cond, li, v in _copies(f, p)]
    c += [f.in_flight(b, same) for b in range(f.n)]
    return z3.And(c)


CopiesMatch = lemma(
    "CopiesMatch", _match,
    "a copy with ZooKeeper's version holds ZooKeeper's leader, leader epoch and ISR, except that a broker's view "
    "loses its leader on StopReplica(delete=false)")


def _step(_r, name):
    return R_ORDER.index(name)


def _reassigning(f):
    """Where the controller's cached AR and RAR stand against the AR in ZooKeeper, step by step."""
    enc = f.enc
    c = []
    for p in range(f.partitions):
        zar = enc.ar_mask(p, f.zk_ar[p])
        for b, ctx in _ctx(f):
            r = f.rctx[b][p]
            tgt = enc.ar_mask(p, r.target)
            between = z3.And(r.step >= _step(r, "6"), r.step <= _step(r, "10"))
            c.append(z3.Implies(ctx.has, z3.And(
                subset(enc.ar_mask(p, r.ar), zar),
                z3.Implies(r.has, f.zk_reassign[p] == r.target),
                z3.Implies(f.zk_reassign[p] == -1, z3.Not(r.has)),
                z3.Implies(z3.Or(z3.Not(r.has), z3.Not(between)), r.ar == f.zk_ar[p]),
                z3.Implies(z3.And(r.has, between), r.ar == r.target),
                z3.Implies(z3.And(r.has, r.step >= 1), subset(tgt, zar)),
                z3.Implies(z3.And(r.has, r.step == _step(r, "0")), r.original == r.ar),
                z3.Implies(z3.And(r.has, r.step >= _step(r, "7")), z3.And(
                    f.zk[p].leader != -1,
                    z3.Or([z3.And(f.zk[p].leader == x, enc.in_ar(p, r.target, x)) for x in enc.ar[p]]))),
                z3.Implies(z3.And(r.has, r.step >= _step(r, "5"), r.step <= _step(r, "7")), subset(tgt, f.zk[p].isr)),
                z3.Implies(z3.And(r.has, r.step >= _step(r, "8")), subset(f.zk[p].isr, tgt)),
                z3.Implies(z3.And(r.has, r.step >= 1), r.original != r.target),
                z3.Implies(z3.And(r.has, r.step >= 1, r.step < _step(r, "10")),
                           subset(zar, enc.ar_mask(p, r.original) | tgt)),
                z3.Implies(z3.And(r.has, r.step == _step(r, "10")), f.zk_ar[p] == r.target),
            )))
    return z3.And(c)


Reassigning = lemma(
    "Reassigning", _reassigning,
    "the controller's cached AR is within ZooKeeper's, equal to it outside steps 6-10 and RAR within them; RAR is "
    "within ZooKeeper's AR from step 1; from step 5 to step 7 RAR is within the ISR (so step 7's election "
    "never fails without faults); from step 7 the leader is in RAR, from step 8 the ISR too")


def _assigned(f):
    """A copy with ZooKeeper's version carries an AR within ZooKeeper's, within RAR from step 7."""
    c = []
    for p in range(f.partitions):
        for b in range(f.n):
            v = f.view[b][p]
            c.append(z3.Implies(z3.And(v.version == f.zk[p].version, v.version != -1), _ok(f, p, f.assigned[b][p])))
    for b in range(f.n):
        c.append(f.in_flight(b, lambda p, r, i: z3.Implies(r.version == f.zk[p].version, _ok(f, p, i)), replicas=True))
    return z3.And(c)


def _ok(f, p, i):
    enc = f.enc
    inside = subset(enc.ar_mask(p, i), enc.ar_mask(p, f.zk_ar[p]))
    late = [z3.Implies(z3.And(f.ctx[b].has, f.rctx[b][p].has, f.rctx[b][p].step >= _step(None, "7")),
                       subset(enc.ar_mask(p, i), enc.ar_mask(p, f.rctx[b][p].target))) for b in range(f.n)]
    return z3.And([inside] + late)


AssignedWithinAr = lemma(
    "AssignedWithinAr", _assigned,
    "the AR a broker applied with ZooKeeper's current version, and the AR of a request in flight with it, are "
    "within ZooKeeper's AR (within RAR once step 7 bumped the version): ExpandIsr adds only such replicas")


# -- ReassignmentLeaderInRar -----------------------------------------------------------------

LiveAsRegistered = lemma(
    "LiveAsRegistered",
    lambda f: z3.And([z3.Implies(f.ctx[b].has, z3.And([f.ctx[b].live[x] == f.session[x] for x in range(f.n)]))
                      for b in range(f.n)]),
    "without crashes or expiries no session changes after the controller read them: no BrokerFailure")

NoStateWithoutController = lemma(
    "NoStateWithoutController",
    lambda f: z3.And([z3.Implies(f.zk_controller == -1, z3.And(z.version == -1, m == -1))
                      for z, m in zip(f.zk, f.leader_moved)]),
    "only a controller writes a partition's state, and it stays")


def _online(f):
    from spec.symbolic import P_OFFLINE
    return z3.And([z3.Implies(f.ctx[b].has, ps != P_OFFLINE) for b in range(f.n) for ps in f.ctx[b].pstate])


NoOfflinePartition = lemma(
    "NoOfflinePartition", _online,
    "the controller starts before any partition exists, and no broker fails: no partition goes offline")


def _leader_moved(f):
    c = []
    for p in range(f.partitions):
        moved = f.leader_moved[p]
        for b in range(f.n):
            r = f.rctx[b][p]
            c.append(z3.Implies(f.ctx[b].has, z3.And(
                z3.Implies(z3.And(r.has, r.step < _step(None, "7")), moved == -1),
                z3.Implies(z3.And(r.has, r.step >= _step(None, "7")), moved == r.target),
                z3.Implies(z3.And(z3.Not(r.has), moved != -1), z3.And(r.ar == moved, f.zk_reassign[p] == -1)),
                z3.Implies(f.zk_reassign[p] != -1, z3.Or(r.has, moved == -1)))))
        c.append(z3.Implies(moved != -1, f.zk_controller != -1))
    return z3.And(c)


LeaderMoved = lemma(
    "LeaderMoved", _leader_moved,
    "inv_leader_moved is the RAR of the reassignment in progress from step 7 (the request resets it); once it "
    "completes, the controller's cached AR is that RAR, so a preferred election stays within it")
