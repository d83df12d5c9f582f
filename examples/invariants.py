"""Example user invariants for `kmc check --invariants examples/invariants.py`.

A property is a plain Python predicate over the model's state (see spec/state.py
for the fields: s.zk, s.brokers[b], s.brokers[b].ctx ...), wrapped with
`always` or `sometimes` and bound at module level.
"""

from checker.model import always, sometimes

NO_LEADER = -1


def no_broker_ahead_of_zookeeper(s):
    # A broker can only have seen controller epochs that ZooKeeper handed out.
    return all(b.controller_epoch_seen <= s.zk.controller_epoch for b in s.brokers)


NoBrokerAheadOfZooKeeper = always(
    "NoBrokerAheadOfZooKeeper", no_broker_ahead_of_zookeeper,
    "controller epochs come from /controller_epoch only; a broker never sees one ZooKeeper did not issue")


def zk_leader_is_registered_or_none(s):
    # Deliberately too strong: a crashed leader stays in ZooKeeper until the
    # controller reacts, so this fails and kmc writes the trace that shows why.
    return all(p.leader == NO_LEADER or s.zk.sessions[p.leader] > 0 for p in s.zk.partitions)


ZkLeaderIsRegistered = always(
    "ZkLeaderIsRegistered", zk_leader_is_registered_or_none,
    "too strong on purpose: the leader in ZooKeeper is always a registered broker")


ThreeControllerEpochs = sometimes(
    "ThreeControllerEpochs", lambda s: s.zk.controller_epoch >= 3,
    "a third controller is elected (needs two controller failovers)")
