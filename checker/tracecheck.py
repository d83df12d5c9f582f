"""Trace validation: is an observed run of a real system a behaviour of the model?

A real system's logs record some of what happens, in order.  Each record is an
*observed event*: constraints ``{key: value}`` on the system's state just after it
happened, in the vocabulary of a *projection* of the model's observation (the same
``Model.observe`` that conformance compares, flattened to the keys the logs record).
The run is a behaviour of the model if some path of the model, from an initial state,
takes for each event in order one step that makes the event's constraints true, with
any number of *internal* steps before it.  A step is internal if it changes no
projected key; a step explains an event if every projected key it changes is one the
event names and, afterwards, every constraint holds.  A key that leaves the projection
(a process's memory lost in a crash) changes nothing a log could have recorded.

The search keeps the set of model states consistent with the events so far (the
frontier), which is what makes it cheap: the logs pin the state down, and only the
internal steps between two events are explored breadth-first.  The first event no
state of the frontier can explain is reported, with the closest candidates: the steps
whose results violate the fewest of its constraints, and how.

Nothing here knows a particular model: the family supplies the events and the
projection (for Kafka: impl/observed.py).

    >>> from checker.model import Model, action
    >>> class Counter(Model):
    ...     def init_states(self): return [0]
    ...     def actions(self, s): return [action("Inc"), action("Tick")] if s < 3 else []
    ...     def next_state(self, s, a): return s + 1 if a.name == "Inc" else s
    ...     def observe(self, s): return {"n": s}
    >>> project = lambda obs: {"n": obs["n"]}
    >>> validate(Counter(), [Event("n=1", {"n": 1}), Event("n=2", {"n": 2})], project).ok
    True
    >>> r = validate(Counter(), [Event("n=1", {"n": 1}), Event("n=3", {"n": 3})], project)
    >>> r.ok, r.failed_at, r.candidates[0].mismatches
    (False, 1, [('n', 3, 2)])
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from checker.config import resolve
from checker.fingerprint import fingerprint_fn
from checker.model import Action, Model

__all__ = ["Event", "Candidate", "Validation", "validate", "validate_observed"]

ABSENT = object()


@dataclass(frozen=True)
class Event:
    """One observed event: a label for reports (where it was read) and its constraints."""

    label: str
    constraints: Mapping[str, Any]


@dataclass
class Candidate:
    """A model step that came closest to explaining an event."""

    action: Action
    mismatches: list          # (key, observed value, model value after the step)
    unlogged: list            # (key, before, after): projected keys the step changed that the event does not name


@dataclass
class Validation:
    ok: bool
    events: int                       # events in the trace
    validated: int                    # events explained, in order
    states: int                       # model states visited
    failed_at: int | None = None      # index of the first unexplained event
    event: Event | None = None
    candidates: list = field(default_factory=list)
    frontier: int = 0                 # states consistent with the events before the failure
    truncated: bool = False           # an internal search hit its state budget
    exhausted: bool = False           # the whole search hit ``max_transitions``: no verdict
    path: list = field(default_factory=list)   # one explaining path (actions), when ok

    def render(self, limit: int = 3) -> str:
        if self.exhausted:
            return (f"trace validation INCONCLUSIVE: the search budget ran out at event {self.failed_at + 1} of "
                    f"{self.events} ({self.event.label}) after {self.states} model steps; {self.validated} events "
                    f"were explained; raise max_transitions or shorten the run")
        if self.ok:
            return (f"trace validated: {self.validated} observed events explained by a path of "
                    f"{len(self.path)} model steps ({self.states} states visited)")
        lines = [f"trace REJECTED at event {self.failed_at + 1} of {self.events}: {self.event.label}",
                 f"  observed: {json.dumps(dict(self.event.constraints), sort_keys=True)}",
                 f"  {self.validated} events before it were explained; {self.frontier} model states fit them"
                 + (" (an internal search was cut at its state budget)" if self.truncated else "")]
        if not self.candidates:
            lines.append("  no model step from those states changes what this event records")
        for c in self.candidates[:limit]:
            lines.append(f"  candidate {c.action}:")
            for k, want, got in c.mismatches:
                lines.append(f"    {k}: observed {_show(want)}, model {_show(got)}")
            for k, a, b in c.unlogged:
                lines.append(f"    {k}: {_show(a)} -> {_show(b)} in the model, not in the log")
        return "\n".join(lines)


def _show(v: Any) -> str:
    return "<absent>" if v is ABSENT else json.dumps(v, sort_keys=True)


def _changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list:
    """Projected keys a step changed; a key that leaves the projection is no change."""
    return [(k, before.get(k, ABSENT), v) for k, v in after.items() if before.get(k, ABSENT) != v]


def validate(model: Model, events: Sequence[Event], project: Callable[[Any], Mapping[str, Any]], *,
             max_states: int = 200_000, max_transitions: int = 2_000_000,
             progress: Callable[[int, int], None] | None = None) -> Validation:
    """Search the model for a path that explains ``events`` in order (see the module
    docstring).  ``max_states`` bounds each internal search between two events;
    ``max_transitions`` the whole search (then the result is ``exhausted``: no verdict)."""
    fp = fingerprint_fn(model)
    proj_cache: dict[int, Mapping[str, Any]] = {}

    def proj(h: int, s) -> Mapping[str, Any]:
        p = proj_cache.get(h)
        if p is None:
            p = proj_cache[h] = dict(project(model.observe(s)))
        return p

    frontier: dict[int, tuple] = {}          # fingerprint -> (state, path so far)
    for s in model.init_states():
        frontier.setdefault(fp(s), (s, ()))
    visited = 0
    truncated = False
    for i, ev in enumerate(events):
        if progress is not None:
            progress(i, len(frontier))
        want = dict(ev.constraints)
        nxt: dict[int, tuple] = {}
        near: list[tuple] = []
        queue = deque(frontier.items())
        seen = set(frontier)
        while queue:
            h, (s, path) = queue.popleft()
            ps = proj(h, s)
            if visited > max_transitions:
                return Validation(False, len(events), i, visited, i, ev, [], len(frontier), truncated, exhausted=True)
            for a in model.actions(s):
                t = model.next_state(s, a)
                ht = fp(t)
                visited += 1
                pt = proj(ht, t)
                changed = _changes(ps, pt)
                if not changed:
                    if len(near) < 2000:
                        mism = [(k, v, pt.get(k, ABSENT)) for k, v in want.items() if pt.get(k, ABSENT) != v]
                        near.append((len(mism) + 1, str(a), Candidate(a, mism, [])))
                    if ht not in seen:
                        if len(seen) >= max_states:
                            truncated = True
                            continue
                        seen.add(ht)
                        queue.append((ht, (t, path + (a,))))
                    continue
                unlogged = [c for c in changed if c[0] not in want]
                mismatches = [(k, v, pt.get(k, ABSENT)) for k, v in want.items() if pt.get(k, ABSENT) != v]
                if not unlogged and not mismatches:
                    nxt.setdefault(ht, (t, path + (a,)))
                elif len(near) < 2000:
                    near.append((len(mismatches) + len(unlogged), str(a), Candidate(a, mismatches, unlogged)))
        if not nxt:
            near.sort(key=lambda x: (x[0], x[1]))
            cands, shown = [], set()
            for _, key, c in near:
                if key not in shown:
                    shown.add(key)
                    cands.append(c)
            return Validation(False, len(events), i, visited, i, ev, cands, len(frontier), truncated)
        frontier = nxt
    path = list(min(frontier.values(), key=lambda x: len(x[1]))[1]) if frontier else []
    return Validation(True, len(events), len(events), visited, path=path, frontier=len(frontier), truncated=truncated)


def validate_observed(family: Any, observed: Any, **kw: Any) -> Validation:
    """Validate a family's observed run against the family's model, built the way
    ``kmc conform`` builds it.  ``observed`` has ``events``, ``project`` (the
    projection of ``Model.observe``) and ``model_config()`` (the configuration keys
    the run needs, e.g. fault budgets that cover what happened; defaults fill the rest)."""
    config = resolve(family, None, {})
    config.update(observed.model_config())      # a long run may need budgets beyond the CLI's ranges
    model = family.build(config)
    return validate(model, observed.events, observed.project, **kw)
