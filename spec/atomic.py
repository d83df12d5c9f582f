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
between two controller reactions, or between a reaction and a broker; that is why it
refuses controller failovers (a zombie's queued work would run at once and never
race the new controller) and is meant for data-path checks.

What stays visible: faults and healing, ``ElectController`` (which broker wins the
race for /controller is a choice), ``ControlledShutdown`` (the broker's request), the
admin's requests, and every broker action (deliveries, ISR changes, produce, fetch,
truncation).
"""

from __future__ import annotations

from checker.errors import ModelError
from spec import controller

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
    hidden reaction with the ISR before an ISR change that the same step made."""
    import dataclasses

    from spec.model import KafkaModel

    full_next = KafkaModel.next_state
    last: list = [None, None, None]   # (prev, act) -> micro path; the checker asks every step property in turn

    def micro(prev, act):
        if last[0] is prev and last[1] == act:
            return last[2]
        first = full_next(model, prev, act)
        path = [(prev, act, first)]
        settle(model, first, lambda s, a: full_next(model, s, a), path)
        last[:] = [prev, act, path]
        return path

    def predicate(prev, act, nxt, _p=prop.predicate):
        return all(_p(s, a, t) for s, a, t in micro(prev, act))

    return dataclasses.replace(prop, predicate=predicate)


def atomic_model_class():
    """The KafkaModel subclass with the atomic controller (imported late: spec.model
    builds it through the family, and this module must not import spec.model first)."""
    from spec.model import KafkaModel

    class AtomicKafkaModel(KafkaModel):
        def __init__(self, cfg):
            super().__init__(cfg)
            self._properties = [_micro_step(self, p) if p.step else p for p in self._properties]

        def init_states(self):
            full = super()
            return [settle(self, s, full.next_state) for s in full.init_states()]

        def actions(self, state):
            return [a for a in super().actions(state) if a.name not in HIDDEN]

        def next_state(self, state, act):
            full = super()
            return settle(self, full.next_state(state, act), full.next_state)

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
    from spec.model import KafkaModel

    full = KafkaModel(model.cfg)
    steps: list = []
    state = settle(full, full.init_states()[0], full.next_state, steps)
    for act in actions:
        after = full.next_state(state, act)
        steps.append((state, act, after))
        state = settle(full, after, full.next_state, steps)
    return [a for _, a, _ in steps]


def expand_trace(path: str, traces_dir: str) -> str:
    """Write the full-model trace of an atomic-controller trace; return its path.

    The property the trace violates is checked on every state of the expanded path
    and the trace stops at the first state that violates it (a hidden step may
    already do), so what is saved is a counterexample of ``atomic_controller=false``
    that ``kmc replay`` re-derives with the ordinary model.
    """
    from checker.bfs import replay_path
    from checker.config import resolve
    from checker.result import Violation
    from checker.trace import load_trace, write_trace
    from spec.family import FAMILY

    trace = load_trace(path)   # data only: the family and invariants it names are not loaded
    config = resolve(FAMILY, None, trace.config)
    if not config.get("atomic_controller"):
        raise ValueError(f"{path} was not made with atomic_controller=true; nothing to expand")
    model = FAMILY.build(config)
    actions = [st.action for st in trace.steps[1:]]
    state = model.init_states()[0]
    for i, act in enumerate(actions, 1):   # a trace is data: check it fits before expanding it
        if act not in model.actions(state):
            raise ValueError(f"{path}: step {i}'s action {act} is not enabled in the atomic model there; "
                             f"the trace no longer fits the model (kmc replay {path} shows where)")
        state = model.next_state(state, act)
    full_config = {**config, "atomic_controller": False}
    full = FAMILY.build(full_config)
    prop = next((p for p in full.properties() if p.name == trace.property_name), None)
    if prop is None or prop.kind != "always" or prop.step:
        raise ValueError(f"{trace.property_name!r} is not a state invariant of the model; cannot cut the trace")
    if prop.predicate(state):
        raise ValueError(f"{path} does not end in a violation of {trace.property_name!r}; nothing to expand "
                         f"(kmc replay {path} re-checks it)")
    steps = replay_path(full, expand(model, actions))
    for n, st in enumerate(steps):
        if not prop.predicate(st.state):
            break
    else:
        raise ValueError(f"the expanded trace does not violate {trace.property_name!r}: the atomic controller "
                         f"and the full model disagree (a bug in spec/atomic.py)")
    violation = Violation(trace.property_name, "always", steps[:n + 1])
    label = f"{trace.preset}-expanded" if trace.preset else "expanded"
    return str(write_trace(traces_dir, family_ref=trace.family_ref, model=full, config=full_config,
                           preset=None, violation=violation, label=label,
                           command=f"python -m spec.atomic {path} --traces-dir {traces_dir}"))


def main(argv=None) -> int:
    """``python -m spec.atomic TRACE [--traces-dir DIR]``: expand a trace.

    Exit 0 with the saved path, or 2 with one line on stderr for any bad input
    (a missing argument, a malformed trace, a trace the model no longer derives)."""
    import argparse
    import sys

    from checker.cmdline import one_line
    from checker.errors import ModelError, UsageError

    argv = list(sys.argv[1:] if argv is None else argv)
    command = " ".join(["python -m spec.atomic", *argv])

    def fail(message: str) -> int:
        sys.stdout.flush()
        print(one_line(f"spec.atomic: error: {' '.join(str(message).split())} (reproduce: {command})"),
              file=sys.stderr)
        return 2

    class Parser(argparse.ArgumentParser):
        def error(self, message: str):
            raise UsageError(f"{message}; usage: python -m spec.atomic TRACE [--traces-dir DIR]")

    p = Parser(prog="python -m spec.atomic", allow_abbrev=False,
               description="Expand an atomic-controller trace into a trace of the full model.")
    p.add_argument("trace", help="a trace of a run with atomic_controller=true (kmc check wrote it)")
    p.add_argument("--traces-dir", default="traces", help="where the expanded trace is saved (default: traces/)")
    try:
        args = p.parse_args(argv)
        out = expand_trace(args.trace, args.traces_dir)
    except (ValueError, UsageError) as e:
        return fail(e)
    except OSError as e:
        return fail(f"cannot write to --traces-dir: {e.strerror or e}; choose another directory with --traces-dir DIR")
    except ModelError as e:
        return fail(f"the trace does not replay on the model: {e}")
    except KeyboardInterrupt:
        return fail("interrupted")
    print(f"expanded trace saved to {out}; replay it: kmc replay {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
