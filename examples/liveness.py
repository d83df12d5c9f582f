"""An example liveness property for `kmc check --invariants examples/liveness.py`.

`eventually(name, goal, rationale, trigger=None)` is TLA+'s leads-to
`trigger ~> goal` under weak fairness of the model's fair actions (without a
trigger: from every reachable state, goal holds again eventually).  The Kafka
model declares EventuallyLeaderElected, scoped to partitions with a live ISR
member (spec/liveness.py).  This is the same property WITHOUT that scope, and it
is meant to fail: with unclean.leader.election.enable off, a partition whose ISR
members are all down stays offline until one of them comes back, and a crashed
broker need not come back (RestartBroker is a fault, not fair).

    kmc check --preset tiny --invariants examples/liveness.py --property EventuallyAnyLeader
        -> VIOLATED: ShrinkIsr leaves ISR = {0}, broker 0 crashes, broker 1 is
           alive but not in the ISR; the cluster rests there for ever
    kmc check --preset tiny --set unclean_leader_election=true \\
              --invariants examples/liveness.py --property EventuallyAnyLeader
        -> holds: the controller elects broker 1 uncleanly
"""

from checker.model import eventually

NO_LEADER = -1


def every_partition_led(s):
    # Every created partition of a live topic has a registered leader that
    # applied its current leadership (topic deletion aside).
    if not s.zk.topic or s.zk.delete_topic:
        return True
    for p, li in enumerate(s.zk.partitions):
        if li.version == -1:
            continue
        if li.leader == NO_LEADER or s.zk.sessions[li.leader] <= 0:
            return False
        mine = s.brokers[li.leader].partitions[p]
        if mine.leader != li.leader or mine.leader_epoch != li.leader_epoch:
            return False
    return True


EventuallyAnyLeader = eventually(
    "EventuallyAnyLeader", every_partition_led,
    "every partition eventually has a leader, even when its whole ISR is down: too strong without unclean "
    "election, on purpose (the partition stays offline by design)")
