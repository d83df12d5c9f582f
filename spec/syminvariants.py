"""The invariants of spec/properties.py as z3 predicates, for ``kmc prove`` and ``kmc bmc``."""

from __future__ import annotations

import z3

from checker.symbolic import SymAction, SymInvariant
from spec.state import NO_LEADER
from spec.statemachines import PARTITION_PREVIOUS, REPLICA_PREVIOUS
from spec.symframe import (KFrame, PSTATES, RSTATES, mask, member, subset)


class KafkaInvariants:
    """Mixin of KafkaSymbolic: ``invariants()`` and their predicates."""

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
