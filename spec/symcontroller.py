"""The controller as z3 terms, after spec/controller.py (Kafka's KafkaController and its
PartitionStateMachine and ReplicaStateMachine), with the requests in flight that it sends."""

from __future__ import annotations

import z3

from checker.model import action
from checker.symbolic import SymAction
from spec.eventorder import STEP_STRATEGIES
from spec.state import NO_LEADER, NON_EXISTENT_REPLICA
from spec.symframe import (KFrame, LI, P_NEW, P_OFFLINE, P_ONLINE, RSTATES, R_INELIGIBLE, R_NEW,
                           R_OFFLINE, R_ONLINE, R_ORDER, R_STARTED, Updates, bit, first_of, if_li,
                           member)


class ControllerEncoding:
    """Mixin of KafkaSymbolic: the controller's actions and the requests it sends."""

    # controller (spec/controller.py)

    def _watching(self, f: KFrame, c: int):
        return z3.And(f.zk_controller == c, f.ctx[c].has, f.alive[c])

    def _live(self, f: KFrame, c: int, x: int):
        return f.ctx[c].live[x] > 0

    def _electable(self, f: KFrame, c: int, x: int):
        """spec.controller.electable_brokers, Kafka's ``liveBrokerIds``: live and not in
        controlled shutdown.  This encoding refuses controlled shutdown (``unsupported``),
        so no broker is ever shutting down and the set is the live one; the elections
        still ask for it by this name, the explicit model's."""
        return self._live(f, c, x)

    def _idle(self, f: KFrame, c: int):
        """spec.reassign.busy: a controller inside a reassignment event takes no other
        controller action (True without reassignment)."""
        if not self.re:
            return z3.BoolVal(True)
        busy = []
        for q in range(self.np):
            r = f.rctx[c][q]
            steps = z3.Or([r.step == R_ORDER.index(x) for x in ("2", "5", "8", "9a", "9b", "9", "10")])
            six = z3.And(r.step == R_ORDER.index("6"), self._step7(f, c, q)[0])
            # after step 1 or 7 the event ends when step 2's or 8's write fails on the mark
            marked = z3.And(z3.Or(r.step == R_ORDER.index("1"), r.step == R_ORDER.index("7")),
                            z3.Not(self._newer_mark(f, c, q)))
            busy.append(z3.And(r.has, z3.Or(steps, six, marked)))
        return z3.Not(z3.Or(busy))

    # the controller's event order (spec.eventorder.event_order)

    def _election_step(self, f: KFrame, c: int):
        """Controller ``c`` (not busy) has an election step of its current event
        enabled: ``ElectLeader`` new or offline (spec.eventorder.is_event_step)."""
        key = ("election_step", c)
        if key not in f.memo:
            f.memo[key] = z3.Or([self._elect_guard(f, c, q, st)
                                 for q in range(self.np) for st in sorted(STEP_STRATEGIES)])
        return f.memo[key]

    def _no_step(self, f: KFrame, c: int) -> list:
        """With ``controller_event_order``, the conjunct of a new event's guard: ``c`` has
        no step of its current event enabled (an election above, or
        ``RemoveReplicaFromIsr``).  Every step's guard holds only while ``c`` is not busy
        (``_idle``), which is spec.eventorder.event_order's exception for a controller
        inside a reassignment event.  No conjunct without the rule (the guards stay the
        terms they were)."""
        if not self.cfg.controller_event_order:
            return []
        key = ("no_step", c)
        if key not in f.memo:
            removes = [self._remove_guard(f, c, q, r) for q in range(self.np) for r in self.ar[q]]
            f.memo[key] = z3.Not(z3.Or(self._election_step(f, c), *removes))
        return [f.memo[key]]

    def _no_election_step(self, f: KFrame, c: int) -> list:
        """With ``controller_event_order``, the conjunct of ``RemoveReplicaFromIsr``'s
        guard: an event's elections come before its OfflineReplica transitions."""
        if not self.cfg.controller_event_order:
            return []
        return [z3.Not(self._election_step(f, c))]

    # the requests in flight: an array (prove) or one slot per step (bmc)

    def _no_requests(self, f: KFrame, b: int):
        if self.slots is None:
            return f.inbox[b] == self.empty
        return z3.And([z3.Not(valid) for q in range(self.np) for valid, _li in f.slot[b][q]])

    def _drop_requests(self, f: KFrame, u: Updates, b: int) -> None:
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

    def _send_stop(self, f: KFrame, u: Updates, stops: dict, target: int, q: int, cond, ce, delete: bool) -> None:
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

    def _flush_stops(self, f: KFrame, u: Updates, stops: dict) -> None:
        if self.slots is None:
            for r, v in stops.items():
                u[f.stop_inbox[r]] = v

    def _send(self, f: KFrame, u: Updates, inbox: dict, target: int, q: int, cond, ce, li: LI, replicas=None) -> None:
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

    def _flush(self, f: KFrame, u: Updates, inbox: dict) -> None:
        if self.slots is None:
            for r, v in inbox.items():
                u[f.inbox[r]] = v

    def _elect_controller(self, b: int) -> SymAction:
        def guard(f, p):
            return z3.And(f.zk_controller == NO_LEADER, f.alive[b], z3.Not(f.ctx[b].has), f.session[b] > 0)

        def update(f, p):
            u = Updates(f)
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
                    u[ctx.owe[q][i]] = z3.BoolVal(False)
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

    def _removal(self, cur: LI, r: int, ce) -> LI:
        """spec.controller.remove_replica's write: leader -1 if ``r`` leads, ``r`` out
        of the ISR unless it is the last member, leader epoch and version + 1."""
        leader = z3.If(cur.leader == r, self.k(NO_LEADER), cur.leader)
        isr = z3.If(cur.isr == bit(r, self.n), cur.isr, cur.isr & ~bit(r, self.n))
        return LI(leader, cur.leader_epoch + 1, isr, ce, cur.version + 1)

    def _broker_failure(self, c: int, x: int) -> SymAction:
        def guard(f, p):
            seen = f.ctx[c].live[x]
            return z3.And(self._watching(f, c), seen > 0, f.session[x] != seen, self._idle(f, c),
                          *self._no_step(f, c))

        def update(f, p):
            u = Updates(f)
            ctx = f.ctx[c]
            u[ctx.live[x]] = self.k(0)
            for q, ar in enumerate(self.ar):
                if x not in ar:
                    continue
                i = ar.index(x)
                inar = self.in_ar(q, self._ctx_ar(f, c, q), x)
                rs = ctx.rstate[q][i]
                u[rs] = z3.If(z3.And(inar, rs == R_STARTED), R_INELIGIBLE, rs)
                # onReplicasBecomeOffline: the event owes the replica's OfflineReplica step
                legal = z3.Or(rs == R_NEW, rs == R_ONLINE, rs == R_OFFLINE, rs == R_INELIGIBLE)
                owe = ctx.owe[q][i]
                u[owe] = z3.Or(owe, z3.And(inar, legal))
                ps = ctx.pstate[q]
                u[ps] = z3.If(z3.And(inar, ctx.cache[q].leader == x, z3.Or(ps == P_ONLINE, ps == P_NEW)),
                            P_OFFLINE, ps)
            return u.d
        return SymAction("BrokerFailure", (("controller", c), ("broker", x)), guard, update,
                         lambda ev, f, p: [action("BrokerFailure", controller=c, broker=x)])

    def _broker_startup(self, c: int, x: int) -> SymAction:
        def guard(f, p):
            return z3.And(self._watching(f, c), f.ctx[c].live[x] == 0, f.session[x] > 0, self._idle(f, c),
                          *self._no_step(f, c))

        def update(f, p):
            u = Updates(f)
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
                u[ctx.owe[q][i]] = z3.BoolVal(False)
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
        live = [self._electable(f, c, r) for r in range(n)]
        livemask = z3.BitVecVal(0, n)
        for r in range(n):
            livemask = livemask | z3.If(live[r], bit(r, n), z3.BitVecVal(0, n))
        if strategy == "new":
            conds = [live[r] for r in ar]
            isr = z3.BitVecVal(0, n)
            for r in ar:
                isr = isr | z3.If(live[r], bit(r, n), z3.BitVecVal(0, n))
            ok = z3.And(ctx.pstate[q] == P_NEW, z.version == -1, ctx.cache[q].version == -1, z3.Or(conds))
            return ok, first_of(self.k, ar, conds), isr, z3.BoolVal(True)
        if strategy == "offline":
            clean_conds = [z3.And(live[r], member(r, z.isr)) for r in ar]
            clean = z3.Or(clean_conds)
            if self.cfg.unclean_leader_election:
                unclean = z3.And(f.budget["unclean_elections"] > 0, z3.Or([live[r] for r in ar]))
            else:
                unclean = z3.BoolVal(False)
            leader = z3.If(clean, first_of(self.k, ar, clean_conds), first_of(self.k, ar, [live[r] for r in ar]))
            isr = z3.If(clean, z.isr & livemask, self._bit_of(leader))
            ok = z3.And(ctx.pstate[q] == P_OFFLINE, z3.Or(clean, unclean), z3.Not(self._newer_mark(f, c, q)))
            return ok, leader, isr, clean
        # preferred: never while the preferred replica shuts down (no controlled shutdown here)
        pref = ar[0]
        ok = z3.And(ctx.pstate[q] == P_ONLINE, z.leader != pref, live[pref], member(pref, z.isr),
                    z3.Not(self._newer_mark(f, c, q)))
        return ok, self.k(pref), z.isr, z3.BoolVal(True)

    def _bit_of(self, x) -> z3.BitVecRef:
        n = self.n
        out = z3.BitVecVal(0, n)
        for b in range(n):
            out = z3.If(x == b, bit(b, n), out)
        return out

    def _newer_mark(self, f: KFrame, c: int, q: int):
        """spec.controller.newer_mark: partition ``q``'s state znode holds a controller
        epoch greater than ``c``'s, so ``c`` leaves the partition alone."""
        return f.zk[q].controller_epoch > f.ctx[c].epoch

    def _fenced(self, f: KFrame, c: int):
        """conditional_write's controller-epoch condition (zk_epoch_fencing)."""
        if not self.cfg.zk_epoch_fencing:
            return z3.BoolVal(False)
        return f.zk_epoch != f.ctx[c].epoch

    def _write(self, f: KFrame, u: Updates, inbox: dict, c: int, q: int, cond, leader, isr, targets) -> None:
        """conditional_write (bump) when ``cond``, then LeaderAndIsr to ``targets``
        (pairs of broker and condition), carrying the controller's cached AR."""
        z = f.zk[q]
        ctx = f.ctx[c]
        new = LI(leader, z.leader_epoch + 1, isr, ctx.epoch, z.version + 1)
        u.li(z, if_li(cond, new, z))
        u.li(ctx.cache[q], if_li(cond, new, ctx.cache[q]))
        for r, rc in targets:
            self._send(f, u, inbox, r, q, z3.And(cond, rc), ctx.epoch, new, self._ctx_ar(f, c, q))

    def _ar_targets(self, f: KFrame, c: int, q: int, but: int | None = None) -> list:
        """The live replicas of the controller's cached AR (other than ``but``)."""
        car = self._ctx_ar(f, c, q)
        return [(r, z3.And(self.in_ar(q, car, r), self._live(f, c, r))) for r in self.ar[q] if r != but]

    def _elect_guard(self, f: KFrame, c: int, q: int, strategy: str):
        ok = self._election(f, c, q, strategy)[0]
        return z3.And(f.ctx[c].has, f.alive[c], ok, self._idle(f, c))

    def _elect_leader(self, c: int, q: int, strategy: str) -> SymAction:
        def guard(f, p):
            g = self._elect_guard(f, c, q, strategy)
            extra = [] if strategy in STEP_STRATEGIES else self._no_step(f, c)   # preferred: an event of its own
            return z3.And(g, *extra) if extra else g

        def update(f, p):
            u = Updates(f)
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

    def _remove_guard(self, f: KFrame, c: int, q: int, r: int):
        ctx = f.ctx[c]
        i = self.ar[q].index(r)
        rs = ctx.rstate[q][i]
        legal = z3.Or(rs == R_NEW, rs == R_ONLINE, rs == R_OFFLINE, rs == R_INELIGIBLE)
        return z3.And(ctx.has, f.alive[c], ctx.owe[q][i], legal, self._idle(f, c))

    def _remove_from_isr(self, c: int, q: int, r: int) -> SymAction:
        i = self.ar[q].index(r)

        def guard(f, p):
            g, extra = self._remove_guard(f, c, q, r), self._no_election_step(f, c)
            return z3.And(g, *extra) if extra else g

        def update(f, p):
            u = Updates(f)
            ctx = f.ctx[c]
            z = f.zk[q]
            newer = self._newer_mark(f, c, q)
            attempt = z3.And(z3.Not(newer), member(r, z.isr))
            fenced = z3.And(attempt, self._fenced(f, c))
            written = z3.And(attempt, z3.Not(fenced))
            u[ctx.has] = z3.Not(fenced)
            u[ctx.owe[q][i]] = z3.BoolVal(False)
            inbox: dict = {}
            new = self._removal(z, r, ctx.epoch)
            self._write(f, u, inbox, c, q, written, new.leader, new.isr, self._ar_targets(f, c, q, but=r))
            rs = ctx.rstate[q][i]
            u[rs] = z3.If(z3.Or(fenced, newer), rs, R_OFFLINE)
            self._flush(f, u, inbox)
            # spec.controller.remove_replica also sends the replica StopReplica(delete=false)
            # when the controller believes it live: only a controlled shutdown's replica,
            # and this encoding refuses controlled shutdown, so it sends none
            return u.d
        return SymAction("RemoveReplicaFromIsr", (("controller", c), ("partition", q), ("replica", r)), guard, update,
                         lambda ev, f, p: [action("RemoveReplicaFromIsr", controller=c, partition=q, replica=r)])

    def _isr_notification(self, c: int, q: int) -> SymAction:
        def guard(f, p):
            z, cache = f.zk[q], f.ctx[c].cache[q]
            return z3.And(self._watching(f, c), z.version > cache.version, z.leader == cache.leader,
                          z.leader_epoch == cache.leader_epoch, self._idle(f, c), *self._no_step(f, c))

        def update(f, p):
            u = Updates(f)
            u.li(f.ctx[c].cache[q], f.zk[q])
            return u.d
        return SymAction("IsrChangeNotification", (("controller", c), ("partition", q)), guard, update,
                         lambda ev, f, p: [action("IsrChangeNotification", controller=c, partition=q)])
