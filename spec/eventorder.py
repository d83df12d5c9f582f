"""Kafka's controller event order (``controller_event_order``): one event at a time.

Kafka's controller runs every event on one thread (``ControllerEventManager``), so
the steps an event enables (its elections, its OfflineReplica transitions) run before
the controller takes its next event.  This module is that rule over the enabled
actions that spec.controller and spec.reassign offer; spec.model and spec.atomic
apply it, and spec.symcontroller encodes the same rule for z3 from
``STEP_STRATEGIES``, so the two cannot drift apart.
"""

from __future__ import annotations

from checker.model import Action
from spec.state import KafkaState

#: Steps that finish the event a controller is in: Kafka's controller runs them inside
#: the event that enabled them, on its one event thread (``ControllerEventManager``).
#: ``KafkaController.onReplicasBecomeOffline`` (a broker failure) and
#: ``onBrokerStartup`` run ``PartitionStateMachine.triggerOnlinePartitionStateChange``
#: (the new and offline partitions' elections); the failure then takes the dead
#: replicas OfflineReplica (``ReplicaStateMachine.handleStateChanges``, which removes a
#: follower from the ISR, ``removeReplicasFromIsr``).  ``onControllerFailover`` runs the
#: same elections (``PartitionStateMachine.startup``) and ``onNewPartitionCreation``
#: the NewPartition one.  ``ControlledShutdown`` (``doControlledShutdown``) elects for
#: the partitions the broker leads, then takes its follower replicas OfflineReplica.
STEP_STRATEGIES = frozenset(("new", "offline"))


def is_event_step(a: Action) -> bool:
    """A step of the controller's current event (see ``STEP_STRATEGIES``).

    A preferred election is an event of its own (``AutoPreferredReplicaLeaderElection``,
    the rebalance timer, or the admin's ``PreferredReplicaLeaderElection``), and so is
    a controlled-shutdown election: the first one belongs to the ``ControlledShutdown``
    event, but one that an ISR change enables later is the broker's retry of its
    request (``controlled.shutdown.max.retries``), a new event; the model cannot tell
    the two apart and lets both wait, as the coarser choice."""
    return a.name == "RemoveReplicaFromIsr" or (a.name == "ElectLeader" and a.get("strategy") in STEP_STRATEGIES)


#: Controller actions that are not events and not ordered by this rule: topic deletion's
#: per-replica steps (``TopicDeletionManager``, driven by StopReplica responses, which
#: are events of their own in Kafka; the model does not order them).
UNORDERED = frozenset(("StartReplicaDeletion", "RetryReplicaDeletion", "CompleteTopicDeletion"))


def event_order(m, s: KafkaState, out: list, busy=frozenset()) -> list:
    """``controller_event_order``: a controller with a step of its current event enabled
    starts no new event (a broker change, an ISR notification, a controlled shutdown, a
    topic change or deletion, a preferred or controlled-shutdown election, a
    reassignment event), as Kafka's single event thread finishes one event before it
    takes the next.  Within the event its elections come before its OfflineReplica
    transitions (``onReplicasBecomeOffline``, ``doControlledShutdown``).  Other actors
    (brokers, ZooKeeper sessions, faults, other controllers) still interleave with the
    steps: ZooKeeper writes and requests are asynchronous to them.  A controller inside
    a reassignment event (``busy``, spec/reassign.py) already takes only that event's
    steps and is left as it is.  A controller inside an event does not stop cleanly
    before the event is done (``stop_after_event``).

    A step that another actor enables while no event of this controller would (an
    offline election that a ZooKeeper ISR write makes possible) is also taken before
    the next event; Kafka would run it only at its next broker change."""
    electing, removing = set(), set()
    for a in out:
        if is_event_step(a):
            c = a.get("controller")
            if c not in busy:
                (removing if a.name == "RemoveReplicaFromIsr" else electing).add(c)
    if not electing and not removing:
        return stop_after_event(out, busy)
    inside = electing | removing
    kept = []
    for a in out:
        c = a.get("controller")
        if c in inside and not (is_event_step(a) or a.name in UNORDERED):
            continue          # a new event waits for the current one
        if c in electing and a.name == "RemoveReplicaFromIsr":
            continue          # the event's elections come first
        kept.append(a)
    return stop_after_event(kept, inside | busy)


def stop_after_event(out: list, inside) -> list:
    """A broker that stops cleanly (``ShutdownBroker``) while it is a controller inside
    an event (``inside``: one with a step of its current event enabled, or inside a
    reassignment event) waits until the event is done.  Kafka's clean stop,
    ``KafkaServer.shutdown``, first shuts the request handler pool, joining its threads
    (``KafkaRequestHandlerPool.shutdown``), then calls ``KafkaController.shutdown``,
    which in 0.10 takes the ``controllerLock`` that the ZooKeeper listeners' handlers
    hold (0.10's controlled-shutdown handler releases it between partitions, but the
    pool shutdown has already waited for it), and from 1.1 (2.0, 2.1)
    ``ControllerEventManager.close``, which puts ``ShutdownEventThread`` in place of the
    queued events and waits for the event thread to finish the event in progress
    (uninterruptible from 1.1); only a crash stops the controller mid-event.  0.11
    and 1.0 interrupt the event thread instead (``ShutdownableThread.shutdown``),
    which may abort the event at its next blocking call, as a crash does
    (docs/model.md)."""
    if not inside:
        return out
    return [a for a in out if not (a.name == "ShutdownBroker" and a.get("broker") in inside)]
