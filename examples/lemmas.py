"""Strengthening lemmas for `kmc prove --lemmas examples/lemmas.py`.

An invariant can be true in every reachable state and still not be *inductive*: z3
finds a state that satisfies it, from which one action breaks it, but that state is
unreachable.  Each lemma below rules out one family of such states (its rationale
says why it holds), and each is itself proved: kmc prove checks that every action
preserves all of them together.

A lemma is a state predicate over the symbolic frame `f` (spec/symbolic.py documents
its fields); `f.in_flight(b, pred)` quantifies over the requests in flight to broker b.
"""

import z3

from checker.symbolic import lemma


def _copies(f, p):
    """Every copy of partition p's state znode a controller or a broker holds, each with
    the condition under which it counts: broker views, controllers' caches."""
    for b in range(f.n):
        yield z3.BoolVal(True), f.view[b][p]
        yield f.ctx[b].has, f.ctx[b].cache[p]


NoContextWhenDown = lemma(
    "NoContextWhenDown",
    lambda f: z3.And([z3.Implies(z3.Not(f.alive[b]), z3.Not(f.ctx[b].has)) for b in range(f.n)]),
    "a crash drops the controller context with the rest of the broker's memory")

ContextEpochsIssued = lemma(
    "ContextEpochsIssued",
    lambda f: z3.And([z3.Implies(f.ctx[b].has, f.ctx[b].epoch <= f.zk_epoch) for b in range(f.n)]),
    "a controller's epoch is one ZooKeeper handed out (so a new controller's epoch is new)")

NoStateBeforeCreation = lemma(
    "NoStateBeforeCreation",
    lambda f: z3.And([z3.Implies(z.version == -1, z3.And(z.leader == -1, z.leader_epoch == -1, z.isr == 0))
                      for z in f.zk]),
    "before the first election writes it, a partition's state znode does not exist")


def _not_ahead(f):
    c = []
    for p, z in enumerate(f.zk):
        c += [z3.Implies(cond, li.version <= z.version) for cond, li in _copies(f, p)]
    c += [f.in_flight(b, lambda p, r: r.version <= f.zk[p].version) for b in range(f.n)]
    return z3.And(c)


CopiesNotAhead = lemma(
    "CopiesNotAhead", _not_ahead,
    "every copy of a partition's state (views, caches, requests in flight) has a version ZooKeeper issued")


def _match(f):
    def same(p, li):
        z = f.zk[p]
        return z3.Implies(li.version == z.version,
                          z3.And(li.leader == z.leader, li.leader_epoch == z.leader_epoch, li.isr == z.isr))
    c = []
    for p in range(f.partitions):
        c += [z3.Implies(cond, same(p, li)) for cond, li in _copies(f, p)]
    c += [f.in_flight(b, same) for b in range(f.n)]
    return z3.And(c)


CopiesMatchZooKeeper = lemma(
    "CopiesMatchZooKeeper", _match,
    "a copy with ZooKeeper's current version holds ZooKeeper's leader, leader epoch and ISR: versions are "
    "issued once, by conditional writes")
