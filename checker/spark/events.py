"""The events of one Spark level, read the way the local engine would meet them.

Every task of a level reports its events (checker.spark.tasks: property
outcomes, deadlocks, model errors), each with the order key of where the local
engine would meet it.  The driver gathers them here and decides what the local
engine does at that level: where it stops (the first violation, a deadlock, the
``max_states`` cut), what it reports (with ``keep_going``, every event before the
stop, in key order), which witnesses it reaches, and whether it meets a model
error first (then that error is raised again on the driver, see
checker.spark.rederive).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from checker.model import ALWAYS, Property
from checker.result import DEADLOCK
from checker.spark.tasks import KEY_BYTES, PH_DEAD, PH_PROP, PH_STEP, PH_WITNESS, error_order

DEADLOCK_MESSAGE = "no action is enabled in the last state and model.is_terminal() is False"


def event_order(ev: tuple) -> tuple:
    """Where the local engine meets an outcome event: by key, phase, property."""
    return (ev[0], ev[1], ev[2], 0)


def dead_record(dead: tuple) -> tuple:
    """The found record (checker.search's shape) of a deadlock event."""
    return (DEADLOCK, "deadlock", dead[3], None, DEADLOCK_MESSAGE)


@dataclass
class Decision:
    """What the local engine does at this level: ``stop`` is the ``(key, phase)``
    where it stops (None: the level is whole), ``report`` the found records in the
    order it finds them, ``cut``/``stopped`` as in checker.search; ``error`` a model
    error it meets first (``scan``: met while scanning the rest of the level for a
    shorter deadlock)."""

    stop: tuple | None = None
    report: list = field(default_factory=list)
    cut: bool = False
    stopped: bool = False
    error: tuple | None = None
    scan: bool = False


class LevelEvents:
    """The events the expand tasks (``ex``) and merge tasks (``mg``) of one level
    reported; ``message(name, what)`` words a violation as the core does."""

    def __init__(self, ex: list, mg: list, props: list[Property], message: Callable[[str, str], str]) -> None:
        self.props = props
        self.message = message
        deads = [x["dead"] for x in ex if x["dead"] is not None]
        self.dead = min(deads) if deads else None
        self.steps = [ev for x in ex for ev in x["steps"].values()]
        outcomes = [ev for x in mg for ev in x["events"].values()]
        self.fails = [ev for ev in outcomes if ev[1] == PH_PROP]
        self.wits = [ev for ev in outcomes if ev[1] == PH_WITNESS]
        first_of: dict[int, bytes] = {}   # property -> key of its first outcome at this level
        for ev in self.steps + outcomes:
            if ev[2] not in first_of or ev[0] < first_of[ev[2]]:
                first_of[ev[2]] = ev[0]
        self.first_of = first_of
        self.errors = [e for x in ex + mg for e in x["errors"].values() if self.relevant(e)]

    def relevant(self, e: tuple) -> bool:
        """Would the local engine meet this error?  Not in a predicate of a property
        it no longer checks there, nor in is_terminal() after a deadlock."""
        key, phase, prop, kind = e[:4]
        if prop >= 0 and prop in self.first_of and self.first_of[prop] < key:
            return False
        if kind == "terminal" and self.dead is not None and self.dead[:2] < e[:2]:
            return False
        return True

    def active_at(self, indices: list, key: bytes) -> list:
        """``(name, predicate)`` of the properties ``indices`` the local engine still
        checks at ``key`` (none of their outcomes came before it)."""
        first = self.first_of
        return [(self.props[i].name, self.props[i].predicate) for i in indices
                if i not in first or first[i] >= key]

    def outcome_record(self, ev: tuple) -> tuple:
        """The found record (checker.search's shape) of a failure event."""
        key, phase, prop, sfp, i, tfp = ev
        name = self.props[prop].name
        if phase == PH_STEP:
            return (name, ALWAYS, sfp, (i, tfp), None)   # message: see Rederive.violation
        return (name, ALWAYS, tfp, None, self.message(name, "does not hold in the last state"))

    def decide(self, *, keep_going: bool, check_deadlock: bool, deadlock_found: bool,
               cap: tuple | None) -> Decision:
        """What the local engine does at this level; ``cap`` is ``(key, PH_CAP)`` of
        the state at which ``max_states`` stops it, or None."""
        err = min(self.errors, key=error_order) if self.errors else None
        dead = self.dead
        out = Decision()
        if not keep_going:
            cands = [event_order(ev) for ev in self.steps + self.fails] + \
                ([event_order(dead)] if dead is not None else [])
            if cap is not None:
                cands.append((cap[0], cap[1], -1, 0))
            first = min(cands) if cands else None
            if err is not None and (first is None or error_order(err) < first):
                out.error = err
                return out
            if first is not None:
                out.stop = first[:2]
                if cap is not None and out.stop == cap:
                    out.cut = True
                elif dead is not None and out.stop == dead[:2]:
                    out.report = [dead_record(dead)]
                else:
                    ev = next(ev for ev in self.steps + self.fails if event_order(ev) == first)
                    out.report = [self.outcome_record(ev)]
                    if check_deadlock:
                        late = self._shorter_deadlock(first, out)
                        if out.error is not None:
                            return out
                        out.report = late or out.report
                    out.stopped = True
                if out.report and out.report[0][0] == DEADLOCK:
                    out.stopped = True
            return out
        if cap is not None:
            out.stop = cap
            out.cut = True
        stop = out.stop
        if err is not None and (stop is None or error_order(err) < (stop[0], stop[1], -1, 0)):
            out.error = err
            return out
        events = [ev for ev in self.steps + self.fails if stop is None or ev[:2] < stop]
        if dead is not None and not deadlock_found and (stop is None or dead[:2] < stop):
            events.append(dead)
        seen = set()
        for ev in sorted(events, key=event_order):
            rec = dead_record(ev) if ev[1] == PH_DEAD and ev[2] == -1 else self.outcome_record(ev)
            if rec[0] not in seen:
                seen.add(rec[0])
                out.report.append(rec)
        return out

    def _shorter_deadlock(self, first: tuple, out: Decision) -> list | None:
        """checker.search scans the rest of the level for a deadlock when the first
        violation is one level deeper: a deadlock (or an error of actions() or
        is_terminal() on the way to it) after the violating state wins."""
        dead = self.dead
        skey = first[0][:-KEY_BYTES]
        late = [e for e in self.errors if e[3] in ("state", "terminal") and e[0] > skey]
        err = min(late, key=error_order) if late else None
        if err is not None and (dead is None or err[:2] < dead[:2]):
            out.error, out.scan = err, True
            return None
        if dead is not None:
            return [dead_record(dead)]
        return None

    def reached(self, stop: tuple | None) -> list[str]:
        """The names of the witnesses reached at this level before ``stop``."""
        return [self.props[ev[2]].name for ev in self.wits if stop is None or ev[:2] < stop]
