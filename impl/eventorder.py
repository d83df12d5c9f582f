"""The controller's one event thread in the conformance driver (Kafka's
``ControllerEventManager``): which controller steps the driver may take, and in
what order, as the model's spec/eventorder.py and spec/atomic.py allow them.

With ``controller_event_order`` (docs/model.md, "The controller's event order") a
controller with a step of its current event left (a new or offline partition's
election, an OfflineReplica transition) is refused every new event, and its
OfflineReplica transitions wait for its elections, as in the model.

With ``atomic_controller`` (spec/atomic.py) the controller's reactions (``HIDDEN``) are
not actions: after every action the driver runs them, first enabled first, in the
model's enumeration order, until none is left.

A controller inside a reassignment event (steps 1-3, 5-11 of impl/reassignment.py)
handles no other event, with or without the event order.  A broker that is a
controller inside an event does not stop cleanly (``ShutdownBroker``) before the
event is done.
"""

from __future__ import annotations

from checker.model import action  # the shared action vocabulary (names + args)
from impl.controller import EVENT_STEP_STRATEGIES
from impl.driverbase import REASSIGN_STEPS, TOPIC, ClusterDriver
from impl.zkclient import TopicPartition

#: with controller_event_order, topic deletion's per-replica steps are not ordered (the
#: event's steps are impl.controller's EVENT_STEP_STRATEGIES elections and RemoveReplicaFromIsr)
UNORDERED_STEPS = frozenset(("StartReplicaDeletion", "RetryReplicaDeletion", "CompleteTopicDeletion"))

#: with atomic_controller, the controller's reactions run inside the step that caused them
HIDDEN = frozenset(("BrokerFailure", "BrokerStartup", "TopicChange", "ElectLeader", "RemoveReplicaFromIsr", "IsrChangeNotification",
                    "StartTopicDeletion", "StartReplicaDeletion", "RetryReplicaDeletion", "CompleteTopicDeletion"))


class EventOrder(ClusterDriver):
    """Mixed into the driver: ``_controller_busy`` refuses what the event thread would
    not run yet; ``_react`` runs the atomic controller's reactions.  They use the
    driver's ``_possible``, ``_within_budget`` and ``_apply``, and the ``event_order``
    flag that ``KafkaImplementation.__init__`` sets."""

    def _controller_busy(self, act) -> bool:
        """A controller inside a reassignment event handles no other event.  With
        ``controller_event_order``, one with a step of its current event left (a new or
        offline partition's election, an OfflineReplica transition) takes no new event,
        and takes its elections before its OfflineReplica transitions, as Kafka's one
        event thread does (``onReplicasBecomeOffline``, ``doControlledShutdown``)."""
        if act.name == "ShutdownBroker":
            return self._inside_event(act.get("broker"))
        c = act.get("controller")
        if c is None:
            return False
        ctl = self._ctl(c)
        if ctl is None:
            return False
        if ctl.in_reassignment_event():
            return act.name not in REASSIGN_STEPS
        if not self.event_order or act.name in UNORDERED_STEPS:
            return False
        electing = self._event_elections(c, ctl)
        if act.name == "RemoveReplicaFromIsr":
            return electing
        if act.name == "ElectLeader" and act.get("strategy") in EVENT_STEP_STRATEGIES:
            return False
        return electing or bool(ctl.replicas_to_take_offline())

    def _inside_event(self, b: int) -> bool:
        """Whether broker ``b`` is a controller inside an event, which a clean stop waits
        for: ``KafkaServer.shutdown`` joins the request handlers, then
        ``KafkaController.shutdown`` takes the ``controllerLock`` of the listeners'
        handlers in 0.10, and from 1.1 ``ControllerEventManager.close`` lets the event
        thread finish the event in progress (spec/eventorder.py ``stop_after_event``)."""
        ctl = self._ctl(b)
        if ctl is None:
            return False
        if ctl.in_reassignment_event():
            return True
        return self.event_order and (self._event_elections(b, ctl) or bool(ctl.replicas_to_take_offline()))

    def _event_elections(self, c: int, ctl) -> bool:
        """Whether controller ``c`` has a new or offline partition's election it may run
        now (an unclean one only while the fault budget allows it)."""
        for p in range(self.partitions):
            e = ctl.pending_election(TopicPartition(TOPIC, p))
            if e is not None and e[0] in EVENT_STEP_STRATEGIES and self._within_budget(
                    action("ElectLeader", controller=c, partition=p, leader=e[1], strategy=e[0], clean=e[3])):
                return True
        return False

    def _reactions(self):
        """The controller's reactions the driver may run now, in a fixed order: broker
        changes, elections, OfflineReplica transitions, ISR notifications, deletion steps
        (the order in which the model enumerates them: spec/atomic.py)."""
        c = self.cluster
        tps = [TopicPartition(TOPIC, p) for p in range(self.partitions)]
        controllers = [b for b in range(self.n) if self._ctl(b) is not None]
        active = c.admin.get_controller_id()
        watching = [active] if active in controllers else []
        for ctl in watching:
            for b, kind in sorted(self._ctl(ctl).broker_changes().items()):
                yield action("BrokerFailure" if kind == "failure" else "BrokerStartup", controller=ctl, broker=b)
        for ctl in watching:
            if TOPIC in self._ctl(ctl).new_topics():
                yield action("TopicChange", controller=ctl)
        for ctl in controllers:
            for tp in tps:
                e = self._ctl(ctl).pending_election(tp)
                if e:
                    yield action("ElectLeader", controller=ctl, partition=tp.partition, leader=e[1], strategy=e[0],
                                 clean=e[3])
        for ctl in controllers:
            for tp, r in self._ctl(ctl).replicas_to_take_offline():
                yield action("RemoveReplicaFromIsr", controller=ctl, partition=tp.partition, replica=r)
        for ctl in watching:
            for tp in self._ctl(ctl).isr_changed_partitions():
                yield action("IsrChangeNotification", controller=ctl, partition=tp.partition)
        for ctl in controllers:
            x = self._ctl(ctl)
            if TOPIC in x.topics_to_start_deleting():
                yield action("StartTopicDeletion", controller=ctl)
            for step, tp, r in x.deletion_steps():
                yield action("StartReplicaDeletion" if step == "start" else "RetryReplicaDeletion",
                             controller=ctl, partition=tp.partition, replica=r)
            if TOPIC in x.topics_deleted():
                yield action("CompleteTopicDeletion", controller=ctl)

    def _react(self) -> None:
        for _ in range(200):
            act = next((a for a in self._reactions() if self._possible(a) and self._within_budget(a)), None)
            if act is None:
                return
            self._apply(act)
        raise RuntimeError("the controller did not settle after 200 reactions")
