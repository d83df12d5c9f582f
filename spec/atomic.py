"""An atomic controller: the controller reacts to each event within the event's step.

The data-path anomalies of KIP-279 and KIP-320 need three replicas, three records and
two crashes, and their counterexamples are 15 to 20 broker steps long.  With the
controller's bookkeeping interleaved (its watch events, each election, each
OfflineReplica transition, each ISR notification as a step of its own) they lie
deeper than any breadth-first search reaches on one machine.  Gustafson's
specifications of the replication protocol make the same cut: a controller without
state of its own, whose decisions land in ZooKeeper and in the LeaderAndIsr requests
in one step.

``atomic_controller=true`` keeps every controller rule and only removes interleavings:
after each visible action the active controller runs its enabled actions, first in
the model's action order, until it has nothing left to do.  So every trace of the
atomic model, expanded with the controller steps it hides, is a trace of the full
model: a counterexample found here is a real one.  What it cannot show is a race
between two controller reactions, or between a reaction and a broker; that is why
the presets that use it leave controller failovers out (a zombie's queued work would
run at once and never race the new controller), and it is meant for data-path checks.
It refuses reassignment (spec.config): the reassignment's steps stay visible, so a
hidden ISR notification ran between two of them, which Kafka's event thread does not
allow, and the atomic model reached states that the full model cannot (4,703 on
``reassign-crash``, with violations the full model does not have).

What stays visible: faults and healing, ``ElectController`` (which broker wins the
race for /controller is a choice), ``ControlledShutdown`` (the broker's request), the
admin's requests, and every broker action (deliveries, ISR changes, produce, fetch,
truncation).
"""

from __future__ import annotations

import dataclasses

from checker.errors import ModelError
from spec import controller, eventorder
from spec.model import KafkaModel

#: Controller reactions the atomic controller runs inside the step that caused them.
HIDDEN = frozenset(controller.APPLY) - {"ElectController", "ControlledShutdown"}

#: A controller that is still busy after this many reactions to one event is a model bug.
_LIMIT = 200


def _reactions(model, state) -> list:
    """The hidden actions enabled in ``state``, in the full model's order (only the
    controller's enabling functions can produce them)."""
    out: list = []
    for enabled in controller.ENABLED:
        enabled(model, state, out)
    if model.cfg.controller_event_order:
        out = eventorder.event_order(model, state, out)
    return [a for a in out if a.name in HIDDEN]


def settle(model, state, apply, steps: list | None = None):
    """Run the active controller's reactions on ``state`` until none is enabled.

    ``apply(state, action)`` is the full model's next-state function; the first
    enabled hidden action is taken each time, so the result is deterministic.  Each
    step taken is appended to ``steps`` as ``(before, action, after)`` when given
    (see ``expand`` and the step properties).
    """
    for _ in range(_LIMIT):
        hidden = _reactions(model, state)
        if not hidden:
            return state
        after = apply(state, hidden[0])
        if steps is not None:
            steps.append((state, hidden[0], after))
        state = after
    raise ModelError(f"the atomic controller did not settle after {_LIMIT} reactions "
                     f"(last: {hidden[0]}); this is a bug in spec/atomic.py or spec/controller.py")


def _micro_step(model, prop):
    """A step property of the atomic model holds on a macro step when it holds on
    every step of the full model the macro step is made of: judged on the macro
    step as a whole, ``LeaderElectedFromIsr`` would compare the leader elected in a
    hidden reaction with the ISR before an ISR change that the same step made.

    The micro path is the one ``next_state`` walked to compute the macro step: a
    checker asks the step properties right after it, so the path comes from the
    model's memo (``MicroPath``) instead of being walked a second time (that second
    walk was 60% of a search of ``offsets-rf3``).  Any other caller gets it walked."""
    def predicate(prev, act, nxt, _p=prop.predicate):
        return all(_p(s, a, t) for s, a, t in model.micro_path(prev, act))

    return dataclasses.replace(prop, predicate=predicate)


class MicroPath:
    """The last macro step ``next_state`` took, ``(prev, act)``, and its micro path
    ``[(before, action, after), ...]``: the visible action, then each hidden reaction.
    The memo holds ``prev`` itself, so an identity test cannot be fooled by a
    reused ``id``."""

    __slots__ = ("prev", "act", "path")

    def __init__(self) -> None:
        self.prev = self.act = self.path = None

    def get(self, prev, act):
        if self.prev is prev and self.act == act:
            return self.path
        return None

    def put(self, prev, act, path) -> None:
        self.prev, self.act, self.path = prev, act, path


class AtomicKafkaModel(KafkaModel):
    """The Kafka model with the atomic controller: a step is a visible action and
    every reaction it causes (``settle``)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self._last = MicroPath()
        self._properties = [_micro_step(self, p) if p.step else p for p in self._properties]

    def init_states(self):
        return [settle(self, s, self._full_next) for s in super().init_states()]

    def actions(self, state):
        return [a for a in super().actions(state) if a.name not in HIDDEN]

    def next_state(self, state, act):
        first = self._full_next(state, act)
        path = [(state, act, first)]
        after = settle(self, first, self._full_next, path)
        self._last.put(state, act, path)
        return after

    def _full_next(self, state, act):
        return KafkaModel.next_state(self, state, act)

    def micro_path(self, prev, act) -> list:
        """The full model's steps that make the macro step ``(prev, act)``."""
        path = self._last.get(prev, act)
        if path is None:
            self.next_state(prev, act)
            path = self._last.path
        return path


def atomic_model_class():
    """The KafkaModel subclass with the atomic controller (``spec.family`` builds it
    for ``atomic_controller=true``)."""
    return AtomicKafkaModel


def expand(model, actions) -> list:
    """The full model's actions for a path of the atomic ``model``: each visible
    action followed by the controller reactions it hid.  Replaying them with
    ``atomic_controller=false`` passes through every state of the atomic path.

    >>> from spec.config import KafkaConfig
    >>> m = atomic_model_class()(KafkaConfig(brokers=2, replication_factor=2, atomic_controller=True))
    >>> [a.name for a in expand(m, [m.actions(m.init_states()[0])[-1]])]
    ['ElectController', 'ElectLeader']
    """
    full = KafkaModel(model.cfg)
    steps: list = []
    state = settle(full, full.init_states()[0], full.next_state, steps)
    for act in actions:
        after = full.next_state(state, act)
        steps.append((state, act, after))
        state = settle(full, after, full.next_state, steps)
    return [a for _, a, _ in steps]
