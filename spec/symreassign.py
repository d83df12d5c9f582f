"""Partition reassignment as z3 terms, rule by rule after spec/reassign.py (Kafka's
KafkaController.onPartitionReassignment, steps 0 to 11)."""

from __future__ import annotations

import z3

from checker.model import action
from checker.symbolic import SymAction
from spec.state import (
    NEW_REPLICA,
    NO_LEADER,
    NON_EXISTENT_REPLICA,
    OFFLINE_REPLICA,
    ONLINE_REPLICA,
    REPLICA_DELETION_STARTED,
    REPLICA_DELETION_SUCCESSFUL,
)
from spec.statemachines import REPLICA_PREVIOUS
from spec.symframe import (KFrame, LI, P_NEW, P_OFFLINE, P_ONLINE, RSTATES, R_COMPLETE, R_ORDER,
                           Updates, bit, extended, first_of, if_li, mask, member, subset)


class ReassignEncoding:
    """Mixin of KafkaSymbolic: the reassignment actions and their helpers."""

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
        """spec.reassign._step7: ``(possible, leader, elected)`` as terms; ``leader`` is
        NO_LEADER for a failed election (no electable replica of RAR in the ISR, or a
        newer controller's mark), which is still taken; only the kept leader's epoch
        bump is impossible on a newer controller's mark."""
        z = f.zk[q]
        live = [self._electable(f, c, x) for x in range(self.n)]
        mark = self._newer_mark(f, c, q)

        def fn(t):
            keep = z3.Or([z3.And(z.leader == x, live[x]) for x in t])
            conds = [z3.And(z3.Not(mark), live[x], member(x, z.isr)) for x in t]
            return z3.If(keep, z.leader, first_of(self.k, t, conds)), z3.Not(keep)
        leader, elected = self._fold_ar(q, f.rctx[c][q].target, fn)
        return z3.Not(z3.And(z3.Not(elected), mark)), leader, elected

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
            u = Updates(f)
            u[f.zk_reassign[q]] = self.k(tid)
            u[f.budget["reassignments"]] = f.budget["reassignments"] - 1
            u[f.leader_moved[q]] = self.k(-1)
            return u.d
        return SymAction("ReassignPartitions", (("partition", q), ("index", i)), guard, update,
                         lambda ev, f, p: [action("ReassignPartitions", partition=q, replicas=rar)])

    def _start_reassignment(self, c: int, q: int) -> SymAction:
        def guard(f, p):
            return z3.And(self._watching(f, c), z3.Not(f.rctx[c][q].has), f.zk_reassign[q] != -1, self._idle(f, c),
                          *self._no_step(f, c))

        def update(f, p):
            u = Updates(f)
            r = f.rctx[c][q]
            u[r.has] = z3.BoolVal(True)
            u[r.target] = f.zk_reassign[q]
            u[r.original] = r.ar
            u[r.step] = self.k(0)
            return u.d
        return SymAction("StartReassignment", (("controller", c), ("partition", q)), guard, update,
                         lambda ev, f, p: [action("StartReassignment", controller=c, partition=q)])

    def _move(self, f: KFrame, u: Updates, c: int, q: int, cond, which, target: str) -> None:
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
            # _no_step: a step of a controller that is not busy waits for its current
            # event's steps like a new event (spec.eventorder.event_order)
            g = [f.ctx[c].has, f.alive[c], f.rctx[c][q].has, self._next_is(f, c, q, k), *self._no_step(f, c)]
            if name == "2":
                g.append(f.zk[q].version != -1)
            if name in ("2", "8"):
                g.append(z3.Not(self._newer_mark(f, c, q)))
            if name == "7":
                g.append(self._step7(f, c, q)[0])
            return z3.And(g)

        def removed(o, t):
            return tuple(x for x in o if x not in t)

        def update(f, p):
            u = Updates(f)
            ctx, r = f.ctx[c], f.rctx[c][q]
            z = f.zk[q]
            fenced = self._fenced(f, c)
            ok = z3.Not(fenced)
            inbox: dict = {}
            stops: dict = {}
            advance = z3.BoolVal(True)
            failed = z3.BoolVal(False)
            if name == "7":
                _ok, leader, elected = self._step7(f, c, q)
                # a failed election writes nothing, so no fence can stop it
                failed = z3.And(elected, leader == NO_LEADER)
            if name in ("1", "10", "11", "2", "7"):
                # conditional writes: a fenced controller resigns and goes no further
                u[ctx.has] = z3.Or(ok, failed)
                advance = z3.Or(ok, failed)
            if name == "1":
                ext = self._by_pair(f, c, q, lambda o, t: (self.k(self.ar_id(q, extended(o, t))),), (r.ar,))[0]
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
                ok = z3.And(ok, z3.Not(failed))
                new = LI(leader, z.leader_epoch + 1, z.isr, ctx.epoch, z.version + 1)
                u.li(z, if_li(ok, new, z))
                u.li(ctx.cache[q], if_li(ok, new, ctx.cache[q]))
                ps = ctx.pstate[q]
                u[ps] = z3.If(z3.And(ok, elected, z3.Or(ps == P_NEW, ps == P_ONLINE, ps == P_OFFLINE)),
                            self.k(P_ONLINE), ps)
                ext = self._by_pair(f, c, q, lambda o, t: (mask(extended(o, t), n),), (z3.BitVecVal(0, n),))[0]
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
