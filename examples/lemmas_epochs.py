"""More lemmas, for `AtMostOneLeaderPerEpoch`: use with examples/lemmas.py,

    kmc prove --invariant AtMostOneLeaderPerEpoch --lemmas examples/lemmas.py --lemmas examples/lemmas_epochs.py

Two brokers never believe they lead a partition in the same leader epoch because a
leader epoch is handed out once, with one leader, by a conditional write, and every
copy of a partition's state (a broker's view, a controller's cache, a request in
flight) is a copy of one of ZooKeeper's past values.  Inductively that needs: every
two copies with the same leader epoch name the same leader (pairs of requests in
flight included, the costly part), a copy in ZooKeeper's current leader epoch names
ZooKeeper's leader, and the copies are well formed (a missing state is NO_STATE,
epochs and versions are not negative).  Each was found from a counterexample to
induction that kmc prove printed without it; they are kept apart from
examples/lemmas.py because the pairwise one makes every proof slower.
"""

import z3

from checker.symbolic import lemma


def _no_state(li):
    return z3.And(li.leader == -1, li.leader_epoch == -1)


def _well_formed(li):
    return z3.And(li.version >= -1, z3.Implies(li.version == -1, _no_state(li)),
                  z3.Implies(li.version != -1, z3.And(li.leader_epoch >= 0, li.version >= 0)))


def _copies(f, p):
    """(condition, copy) for every copy of partition p's state outside ZooKeeper but
    the requests in flight."""
    for b in range(f.n):
        yield z3.BoolVal(True), f.view[b][p]
        yield f.ctx[b].has, f.ctx[b].cache[p]


def _well_formed_copies(f):
    c = [_well_formed(z) for z in f.zk]
    for p in range(f.partitions):
        c += [z3.Implies(cond, _well_formed(li)) for cond, li in _copies(f, p)]
    c += [f.in_flight(b, lambda p, r: z3.And(r.leader_epoch >= 0, r.version >= 0)) for b in range(f.n)]
    return z3.And(c)


CopiesWellFormed = lemma(
    "CopiesWellFormed", _well_formed_copies,
    "a missing partition state is NO_STATE everywhere; a written one has an epoch and a version >= 0")


def _down(f):
    return z3.And([z3.Implies(z3.Not(f.alive[b]), z3.And([_no_state(v) for v in f.view[b]] + [f.seen[b] == 0]))
                   for b in range(f.n)])


DownBrokerForgets = lemma(
    "DownBrokerForgets", _down, "a crashed broker holds no partition state and has seen no controller epoch")


def _one_leader(f):
    c = []
    for p in range(f.partitions):
        z = f.zk[p]
        copies = list(_copies(f, p))

        def agrees(r, z=z, copies=copies):
            k = [r.leader_epoch <= z.leader_epoch,
                 z3.Implies(r.leader_epoch == z.leader_epoch, r.leader == z.leader)]
            k += [z3.Implies(z3.And(cond, li.version != -1, li.leader_epoch == r.leader_epoch), li.leader == r.leader)
                  for cond, li in copies]
            return z3.And(k)

        for i, (ci, a) in enumerate(copies):
            c.append(z3.Implies(z3.And(ci, a.version != -1), agrees(a)))
        c += [f.in_flight(b, lambda q, r, p=p, agrees=agrees: agrees(r) if q == p else z3.BoolVal(True))
              for b in range(f.n)]
    for b1 in range(f.n):
        for b2 in range(b1, f.n):
            c.append(f.in_flight_pairs(b1, b2, lambda p1, r1, p2, r2: z3.Implies(
                r1.leader_epoch == r2.leader_epoch, r1.leader == r2.leader) if p1 == p2 else z3.BoolVal(True)))
    return z3.And(c)


EpochHasOneLeader = lemma(
    "EpochHasOneLeader", _one_leader,
    "every two copies of a partition's state with the same leader epoch name the same leader, and none is ahead "
    "of ZooKeeper's leader epoch: a leader epoch is written once, with one leader")
