"""Reading a z3 model back: a frame as the explicit model's ``describe`` keys it, and an
explicit state as a constraint on a frame (``abstract``), which is how a CTI is confirmed."""

from __future__ import annotations

from typing import Any

import z3

from spec.state import NO_LEADER, LeaderAndIsr, StopReplica
from spec.symframe import KFrame, LI, PSTATES, RSTATES, R_ORDER, mask, members


class KafkaView:
    """Mixin of KafkaSymbolic: ``describe`` and ``abstract``."""

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
                owed = [f"{q}.{r}" for q in range(self.np) for r, o in zip(self.ar[q], ctx.owe[q]) if ev(o)]
                if owed:
                    d["controller"]["offline"] = owed
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
                        r = LeaderAndIsr(ev(li.controller_epoch), q, ev(li.leader), ev(li.leader_epoch),
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
                r = LeaderAndIsr(ev(R.controller_epoch(key)), q, ev(R.leader(key)),
                                 ev(R.leader_epoch(key)), members(ev(R.isr(key)), self.n), ev(R.version(key)), reps)
                if r not in reqs:
                    reqs.append(r)
        reqs.sort()
        out = [f"LeaderAndIsr(controller_epoch={r.controller_epoch}, partition={r.partition}, leader={r.leader}, "
               f"leader_epoch={r.leader_epoch}, isr={ids_of(r.isr)}, version={r.version}"
               + (f", replicas={ids_of(r.replicas)})" if self.re else ")")
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
                    c += [o == ((q, r) in k.offline) for o, r in zip(ctx.owe[q], self.ar[q])]
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
