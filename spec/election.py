"""Leader election strategies (seed 004, §6 of the protocol reference).

Each takes the assignment (AR, ordered: the first replica is the preferred one),
the ISR as the controller last read it, and the brokers the controller may elect
(``spec.controller.electable_brokers``: live and not in controlled shutdown, Kafka's
``liveBrokerIds``), and returns ``(leader, new_isr, clean)`` or None when no
leader can be chosen.  They are pure functions so that the model and its
properties can share them without sharing state.
"""

from __future__ import annotations


def new_partition(ar: tuple, live: tuple) -> tuple | None:
    """NewPartition -> OnlinePartition: the first live replica of the AR leads and
    the live AR is the ISR (a new partition has no data, so all are in sync)."""
    alive = tuple(r for r in ar if live[r])
    if not alive:
        return None
    return alive[0], tuple(sorted(alive)), True


def offline_partition(ar: tuple, isr: tuple, live: tuple, unclean: bool) -> tuple | None:
    """OfflinePartition: the first live replica of AR that is in the ISR; the new
    ISR is the surviving ISR.  If none and unclean election is allowed, the first
    live replica of AR with an ISR of just itself (committed data may be lost)."""
    for r in ar:
        if live[r] and r in isr:
            return r, tuple(sorted(x for x in isr if live[x])), True
    if unclean:
        for r in ar:
            if live[r]:
                return r, (r,), False
    return None


def preferred_replica(ar: tuple, leader: int, isr: tuple, live: tuple) -> tuple | None:
    """PreferredReplicaPartition: the preferred replica if it is alive, in the ISR
    and not already leader; never unclean.  The ISR is unchanged."""
    preferred = ar[0]
    if preferred != leader and live[preferred] and preferred in isr:
        return preferred, isr, True
    return None


def controlled_shutdown(ar: tuple, isr: tuple, live: tuple, shutting_down: tuple) -> tuple | None:
    """ControlledShutdownPartition: move leadership to a live ISR member that is
    not shutting down; the brokers shutting down leave the ISR."""
    for r in ar:
        if live[r] and r in isr and not shutting_down[r]:
            return r, tuple(x for x in isr if not shutting_down[x]), True
    return None


def reassign_partition(rar: tuple, isr: tuple, live: tuple) -> tuple | None:
    """ReassignPartition (step 7 of a reassignment): the first replica of RAR that is
    alive and in the ISR; the ISR is unchanged (the old replicas leave it at step 8).
    Never unclean: with no such replica the election fails (None), and the reassignment
    goes on with step 8 without it (spec/reassign.py ``_step7``)."""
    for r in rar:
        if live[r] and r in isr:
            return r, isr, True
    return None
