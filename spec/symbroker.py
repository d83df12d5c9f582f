"""The brokers' side as z3 terms: the faults of spec/faults.py and the deliveries and ISR
changes of spec/broker.py (Kafka's ReplicaManager.becomeLeaderOrFollower, Partition.maybeShrinkIsr)."""

from __future__ import annotations

import z3

from checker.model import action
from checker.symbolic import SymAction
from spec.state import NO_LEADER
from spec.symframe import (KFrame, LI, Updates, bit, if_li, member, members, zmax)


class BrokerEncoding:
    """Mixin of KafkaSymbolic: the fault actions and the brokers' actions."""

    # faults (spec/faults.py)

    def _may_fail(self, f: KFrame, b: int):
        return z3.Or(f.zk_controller != b, f.budget["controller_failovers"] > 0)

    def _crash(self, b: int) -> SymAction:
        def guard(f, p):
            return z3.And(f.alive[b], f.budget["crashes"] > 0, self._may_fail(f, b))

        def update(f, p):
            u = Updates(f)
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
            u = Updates(f)
            u[f.alive[b]] = z3.BoolVal(True)
            u[f.session[b]] = z3.If(f.session[b] < 0, -f.session[b], f.session[b]) + 1
            return u.d
        return SymAction("RestartBroker", (("broker", b),), guard, update,
                         lambda ev, f, p: [action("RestartBroker", broker=b)])

    def _expire(self, b: int) -> SymAction:
        def guard(f, p):
            return z3.And(f.alive[b], f.session[b] > 0, f.budget["session_expiries"] > 0, self._may_fail(f, b))

        def update(f, p):
            u = Updates(f)
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
            u = Updates(f)
            u[f.session[b]] = z3.If(f.session[b] < 0, -f.session[b], f.session[b]) + 1
            return u.d
        return SymAction("RegisterBroker", (("broker", b),), guard, update,
                         lambda ev, f, p: [action("RegisterBroker", broker=b)])

    def _resign(self, b: int) -> SymAction:
        def guard(f, p):
            return z3.And(f.alive[b], f.ctx[b].has, f.zk_controller != b)

        def update(f, p):
            u = Updates(f)
            u[f.ctx[b].has] = z3.BoolVal(False)
            return u.d
        return SymAction("Resign", (("broker", b),), guard, update, lambda ev, f, p: [action("Resign", broker=b)])

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
            u = Updates(f)
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
            u[f.seen[b]] = z3.If(fenced, f.seen[b], zmax(f.seen[b], ce))
            view = f.view[b][q]
            # ReplicaManager.makeFollowers: a follower of no leader (-1) keeps its partition
            alive = z3.Or(r.leader == b, r.leader != NO_LEADER)
            applied = z3.And(z3.Not(fenced), r.leader_epoch > view.leader_epoch, alive)
            u.li(view, if_li(applied, r, view))
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
        delete=false only its fetching (a leader keeps leading).  (The response to a topic deletion's
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
            u = Updates(f)
            ce, d = self.delivered_stop(f, act, p)
            if j is None:
                u[f.stop_inbox[b]] = z3.Store(f.stop_inbox[b], stop_of(f, p), False)
            else:
                for valid, oce, od in f.stop_slot[b][q]:
                    same = z3.And(oce == ce, od == d) if (oce is not ce) else z3.BoolVal(True)
                    u[valid] = z3.And(valid, z3.Not(same))
            fenced = ce < f.seen[b] if self.cfg.controller_epoch_fencing else z3.BoolVal(False)
            ok = z3.Not(fenced)
            u[f.seen[b]] = z3.If(ok, zmax(f.seen[b], ce), f.seen[b])
            view = f.view[b][q]
            keep = LI(z3.If(z3.And(view.version != -1, view.leader != self.k(b)), self.k(NO_LEADER), view.leader),
                      view.leader_epoch, view.isr,
                      view.controller_epoch, view.version)
            u.li(view, if_li(ok, if_li(d, self.no_state(), keep), view))
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

    def _write_isr(self, f: KFrame, u: Updates, b: int, q: int, isr) -> None:
        view = f.view[b][q]
        new = LI(view.leader, view.leader_epoch, isr, view.controller_epoch, view.version + 1)
        u.li(f.zk[q], LI(view.leader, view.leader_epoch, isr, f.zk[q].controller_epoch, view.version + 1))
        u.li(view, new)

    def _shrink(self, b: int, q: int, fo: int) -> SymAction:
        def guard(f, p):
            return z3.And(self._isr_writer(f, b, q), member(fo, f.view[b][q].isr), f.budget["isr_shrinks"] > 0,
                          self._assigned(f, b, q, fo))

        def update(f, p):
            u = Updates(f)
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
            u = Updates(f)
            self._write_isr(f, u, b, q, f.view[b][q].isr | bit(fo, self.n))
            return u.d
        return SymAction("ExpandIsr", (("leader", b), ("partition", q), ("replica", fo)), guard, update,
                         lambda ev, f, p: [action("ExpandIsr", leader=b, partition=q, replica=fo)])
