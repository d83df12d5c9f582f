"""Deliberately broken brokers, for showing that trace validation rejects them.

``python -m impl.node --broken KIND`` starts a broker with one known bug; nothing
else ever passes it.  The kinds:

- ``controller-epoch-check``: the broker applies LeaderAndIsr and StopReplica from an
  older controller epoch (``BrokerConfig.controller_epoch_check`` off, the model's
  ``controller_epoch_fencing=False``): a zombie controller's late request is applied.
  It only shows when a zombie's request arrives after a newer controller's, which a
  run may or may not produce.
- ``election``: as controller, the broker's offline-partition election picks the *last*
  live ISR member in AR order instead of the first (Kafka's
  ``offlinePartitionLeaderElection`` takes the first).  Every failover of a leader
  with two live ISR members shows it.
"""

from __future__ import annotations

from impl import election as E

KINDS = ("controller-epoch-check", "election")


def _last_live_isr_member(assignment, isr, live, unclean: bool):
    for r in reversed(assignment):
        if r in live and r in isr:
            return r, tuple(sorted(x for x in isr if x in live))
    return _correct(assignment, isr, live, unclean)


_correct = E.offline_partition_leader_election


def install(kind: str) -> None:
    """Break this process's broker (the controller calls ``E.<rule>`` at run time)."""
    if kind == "election":
        E.offline_partition_leader_election = _last_live_isr_member
    elif kind != "controller-epoch-check":        # a BrokerConfig switch: impl/node.py sets it
        raise ValueError(f"unknown broken kind {kind!r}; choose from {', '.join(KINDS)}")
