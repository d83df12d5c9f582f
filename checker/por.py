"""Partial-order reduction: stubborn sets over declared footprints (``kmc check --por``).

Two actions that touch disjoint parts of the state commute: taking both in either
order reaches the same state, and neither enables or disables the other.  A search
that explores every order of such actions explores the same states many times over.
A model that declares its actions' *footprints* lets the checker explore, in each
state, only a *stubborn set* of the enabled actions.

The contract: an optional ``footprints()`` method returning a :class:`Footprints`:
a finite set of action *classes* (e.g. "deliver to broker 1"), for each the keys
of the state it may read (its enabling condition included) and may write, in any
state, the class of every action, and, for each property, the keys its predicate
reads.  Keys are any hashable values; the checker only intersects them.  Keys
declared *commuting* (history state that only properties read, updated by
commuting operations) make no two classes dependent.  An optional *guard* names,
for a class with no enabled action in a state, the keys whose values alone keep it
disabled; the stubborn set then adds only the writers of those keys for it (a
necessary enabling set), not the writers of everything the class reads.

The stubborn set of a state (Valmari's conditions, on the static classes): start
from one enabled class; for an enabled class in the set, add every class that
depends on it (one writes what the other reads or writes); for a disabled class in
the set, add every class that writes what it reads (those that could enable it).
The enabled actions of the classes in the set are explored; of the candidates from
each enabled class, the smallest is taken (ties: the first).

The provisos that make it preserve safety:

- visibility: a candidate holding an enabled action whose class writes a key that a
  property (``always``, ``sometimes``, step) reads is not used; a property without
  declared reads makes every action visible;
- cycle (suited to breadth-first search): a state is fully expanded when one of the
  successors its stubborn set gives was expanded before (or is the state itself).
  Breadth-first search expands states in the order it discovers them, so on any
  cycle of the reduced graph the cycle's first-discovered state is expanded before
  the state that closes the cycle back to it, which therefore sees it expanded:
  every cycle holds a fully expanded state, and no action is postponed forever.
  Only expanded states are remembered (one fingerprint each), and a state where no
  candidate is usable (every one holds a visible action, the usual case on a model
  whose properties read most of the state) costs one fingerprint and the
  candidates' closures, nothing more.

What is preserved: every reachable deadlock, and the verdict of every ``always``
(state or step) and ``sometimes`` property.  What is not: the *shortest*
counterexample (a reduced search may report a longer one; it is a real path of the
model, so it replays unchanged), the state count, and ``eventually`` properties
(they are not checked under ``--por``: that needs stronger provisos).  The cycle
proviso needs the set of states seen, so ``--por`` runs on the local engine only.

Declarations are checked (:func:`validate`) on a sample of reachable states: two
enabled actions of independent classes must commute and must not enable or disable
each other; an action that enables or disables another must write what that one's
class reads (and, with a guard, one of the keys the guard names for that class); an action of a class declared invisible to a property must not change
its value (a step property: must not be broken by it).  A wrong declaration is a
contract error naming the state and the actions.

    >>> from checker.model import Model, action, always
    >>> class Two(Model):      # two counters, each up to 3: 16 states, 4 along a diagonal
    ...     def init_states(self): return [(0, 0)]
    ...     def actions(self, s): return [action("Inc", i=i) for i in (0, 1) if s[i] < 3]
    ...     def next_state(self, s, a):
    ...         i = a.get("i"); return s[:i] + (s[i] + 1,) + s[i + 1:]
    ...     def is_terminal(self, s): return True
    ...     def properties(self): return [always("Small", lambda s: s[0] <= 3, "")]
    ...     def footprints(self):
    ...         return Footprints({i: ((i,), (i,)) for i in (0, 1)}, lambda a: a.get("i"), {"Small": (0,)})
    >>> from checker.bfs import check
    >>> check(Two()).stats.distinct, check(Ample(Two())).stats.distinct
    (16, 7)
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Mapping, Sequence

from checker.errors import ModelError, UsageError
from checker.fingerprint import fingerprint_fn
from checker.model import EVENTUALLY, Action, Model, Property, State, optional_hook

__all__ = ["Footprints", "Ample", "footprints_of", "validate"]


class Footprints:
    """Action classes with what each may read and write, and what properties read.

    ``classes``: class -> (reads, writes), iterables of hashable keys.
    ``class_of(action)``: the class of an action.
    ``property_reads``: property name -> keys its predicate reads; a property not
    listed reads everything (every action is visible to it)."""

    def __init__(self, classes: Mapping[Any, tuple], class_of: Callable[[Action], Any],
                 property_reads: Mapping[str, Iterable] | None = None, commuting: Iterable = (),
                 guard: Callable[[State, Any], Iterable | None] | None = None) -> None:
        self.order = list(classes)
        self.reads = {c: frozenset(r) for c, (r, _w) in classes.items()}
        self.writes = {c: frozenset(w) for c, (_r, w) in classes.items()}
        self.class_of = class_of
        self.property_reads = {k: frozenset(v) for k, v in (property_reads or {}).items()}
        # Keys whose updates commute and enable nothing, such as history (ghost) state
        # that only properties read: a flag only ever set, a set only ever added to.
        # They make no two classes dependent; they still count for visibility and for
        # enabling (a class that reads one to decide whether it is enabled).
        self.commuting = frozenset(commuting)
        # guard(state, cls), for a class none of whose actions is enabled in state: keys
        # whose values alone keep it disabled (a necessary enabling set: no action of
        # the class becomes enabled before one of them is written), or None for all
        # of its reads.
        self.guard = guard
        c = self.commuting
        self._r = {k: v - c for k, v in self.reads.items()}
        self._w = {k: v - c for k, v in self.writes.items()}

    def dependent(self, a: Any, b: Any) -> bool:
        wa, wb = self._w[a], self._w[b]
        return a == b or bool(wa & (self._r[b] | wb)) or bool(wb & self._r[a])


def footprints_of(model: Model) -> Footprints | None:
    return optional_hook(model, "footprints", Footprints)


class Ample(Model):
    """``model`` explored through stubborn sets (see the module docstring).

    ``base`` is what the footprints describe (``model`` itself, or the model under
    a symmetry reduction wrapping it)."""

    def __init__(self, model: Model, fps: Footprints | None = None, props: Sequence[Property] | None = None,
                 *, base: Model | None = None, cycle_proviso: bool = True) -> None:
        base = base if base is not None else model
        self.model = model
        self.fps = fps if fps is not None else footprints_of(base)
        if self.fps is None:
            raise UsageError(f"model {model.name!r} declares no action footprints for this configuration; drop --por")
        self.name, self.version = model.name, model.version
        # Its states are the model's: the engine's cache of encodings by value holds as well.
        self.equal_states_encode_equally = getattr(model, "equal_states_encode_equally", False)
        props = list(model.properties() if props is None else props)
        f = self.fps
        visible: set = set()
        for p in props:
            if p.kind == EVENTUALLY:
                continue
            reads = f.property_reads.get(p.name)
            for c in f.order:
                if reads is None or f.writes[c] & reads:
                    visible.add(c)
        self.visible = visible
        self.dep = {c: [d for d in f.order if f.dependent(c, d)] for c in f.order}
        self.enablers = {c: [d for d in f.order if f.writes[d] & f.reads[c]] for c in f.order}
        self._by_keys: dict = {}
        self.cycle_proviso = cycle_proviso
        self.fp = fingerprint_fn(model)
        self.seen: set[int] = set()            # fingerprints of the states expanded so far
        self.expanded = 0                      # distinct states expanded
        self.decided: dict[int, bool] = {}     # fingerprint -> fully expanded, where a candidate was found
        self._cache: tuple = (None, {})        # (state, {action: successor}) of the last expansion
        self.reduced_states = 0                # states explored through a proper subset
        self.full_by_proviso = 0

    # -- the stubborn set ---------------------------------------------------------

    def _class(self, a: Action) -> Any:
        c = self.fps.class_of(a)
        if c not in self.dep:
            raise ModelError(f"footprints(): action {a} has class {c!r}, which the declaration does not list")
        return c

    def enablers_in(self, s: State, c: Any) -> list:
        """The classes that could enable class c, disabled in s (its guard applied)."""
        guard = self.fps.guard
        keys = guard(s, c) if guard is not None else None
        if keys is None:
            return self.enablers[c]
        keys = frozenset(keys)
        out = self._by_keys.get(keys)
        if out is None:
            w = self.fps.writes
            out = self._by_keys[keys] = [d for d in self.fps.order if w[d] & keys]
        return out

    def stubborn(self, acts: list, s: State = None) -> list:
        """The smallest candidate stubborn set of enabled actions that is invisible."""
        if len(acts) <= 1:
            return acts
        by_class: dict = {}
        for a in acts:
            by_class.setdefault(self._class(a), []).append(a)
        best = acts
        for seed in by_class:
            if seed in self.visible:
                continue
            t = {seed}
            work = [seed]
            ok = True
            while work and ok:
                c = work.pop()
                more = self.dep[c] if c in by_class else (self.enablers[c] if s is None else self.enablers_in(s, c))
                for d in more:
                    if d not in t:
                        if d in by_class and d in self.visible:
                            ok = False
                            break
                        t.add(d)
                        work.append(d)
            if not ok:
                continue
            cand = [a for a in acts if self.fps.class_of(a) in t]
            if len(cand) < len(best):
                best = cand
                if len(best) == 1:
                    break
        return best

    # -- the model ------------------------------------------------------------------

    def init_states(self) -> Iterable[State]:
        return list(self.model.init_states())

    def actions(self, s: State) -> list:
        acts = list(self.model.actions(s))
        h = self.fp(s)
        if h not in self.seen:
            self.seen.add(h)
            self.expanded += 1
        full = self.decided.get(h)
        if full is not None:
            return acts if full else self.stubborn(acts, s)
        chosen = self.stubborn(acts, s)
        if len(chosen) == len(acts):
            # No usable candidate: decided by the state alone, so nothing to remember
            # (a replay decides the same) and no successor to look at.
            return acts
        succ = {a: self.model.next_state(s, a) for a in chosen}
        if self.cycle_proviso and any(self.fp(t) in self.seen for t in succ.values()):
            chosen = acts
            self.full_by_proviso += 1
        else:
            self.reduced_states += 1
        self.decided[h] = len(chosen) == len(acts)
        self._cache = (s, succ)
        return chosen

    def next_state(self, s: State, a: Action) -> State:
        cs, succ = self._cache
        if cs is s and a in succ:
            return succ[a]
        return self.model.next_state(s, a)

    def properties(self) -> Sequence[Property]:
        return [p for p in self.model.properties() if p.kind != EVENTUALLY]

    def fair(self, a: Action) -> bool:
        return self.model.fair(a)

    def within_boundary(self, s: State) -> bool:
        return self.model.within_boundary(s)

    def is_terminal(self, s: State) -> bool:
        return self.model.is_terminal(s)

    def encode(self, s: State) -> bytes:
        return self.model.encode(s)

    def describe(self, s: State) -> Any:
        return self.model.describe(s)

    def config(self) -> Any:
        return self.model.config()

    def observe(self, s: State) -> Any:
        return self.model.observe(s)


# ------------------------------------------------------------------- validation

def _describe(model: Model, s: State) -> str:
    try:
        return json.dumps(model.describe(s), default=repr)
    except Exception:  # noqa: BLE001
        return repr(s)


def validate(model: Model, fps: Footprints, props: Sequence[Property], states: Sequence[State]) -> int:
    """Check the declared footprints on ``states`` (see the module docstring);
    returns how many pairs of independent enabled actions were checked."""
    encode = model.encode
    ok_classes = set(fps.order)
    pairs = 0

    def bad(what: str, s: State, a: Action, b: Action | None = None) -> ModelError:
        acts = f"actions {a} and {b}" if b is not None else f"action {a}"
        return ModelError(f"footprints(): {what} ({acts}); the declared footprints are wrong: fix footprints(). "
                          f"State: {_describe(model, s)}")

    for s in states:
        acts = list(model.actions(s))
        cls = []
        for a in acts:
            c = fps.class_of(a)
            if c not in ok_classes:
                raise bad(f"class {c!r} is not declared", s, a)
            cls.append(c)
        succ = [model.next_state(s, a) for a in acts]
        enabled_keys = set(acts)
        guards = {}
        if fps.guard is not None:
            on = set(cls)
            for d in fps.order:
                if d not in on:
                    keys = fps.guard(s, d)
                    if keys is not None:
                        guards[d] = frozenset(keys)
        for i, a in enumerate(acts):
            t = succ[i]
            after = list(model.actions(t))
            after_set = set(after)
            # enabling and disabling must go through declared writes
            for b in after:
                if b not in enabled_keys and b != a:
                    cb = fps.class_of(b)
                    if cb in ok_classes and not (fps.writes[cls[i]] & fps.reads[cb]) and cb != cls[i]:
                        raise bad("the first enables the second, but its class writes nothing the second's "
                                  "class reads", s, a, b)
            # a disabled class stays disabled while its guard keys are not written
            if guards:
                after_cls = {fps.class_of(b) for b in after}
                for d, keys in guards.items():
                    if d in after_cls and not (fps.writes[cls[i]] & keys):
                        b = next(x for x in after if fps.class_of(x) == d)
                        raise bad(f"the first enables the second, but writes none of the keys {sorted(keys, key=repr)} "
                                  f"its class's guard names in the state", s, a, b)
            for j, b in enumerate(acts):
                if j == i:
                    continue
                if b not in after_set and fps.dependent(cls[i], cls[j]) is False:
                    raise bad("the first disables the second, yet their classes are declared independent", s, a, b)
            # invisibility
            for p in props:
                if p.kind == EVENTUALLY or p.name not in fps.property_reads:
                    continue
                if fps.writes[cls[i]] & fps.property_reads[p.name]:
                    continue
                if p.step:
                    if not p.predicate(s, a, t):
                        raise bad(f"step property {p.name!r} is broken by the action, yet its class writes "
                                  f"nothing the property is declared to read", s, a)
                    continue
                if bool(p.predicate(s)) != bool(p.predicate(t)):
                    raise bad(f"property {p.name!r} changes its value, yet the action's class writes nothing "
                              f"it is declared to read", s, a)
            # commutation of independent pairs
            for j in range(i + 1, len(acts)):
                b = acts[j]
                if fps.dependent(cls[i], cls[j]):
                    continue
                pairs += 1
                tb = succ[j]
                if b not in after_set or a not in set(model.actions(tb)):
                    raise bad("declared independent, but one disables the other", s, a, b)
                if encode(model.next_state(t, b)) != encode(model.next_state(tb, a)):
                    raise bad("declared independent, but they do not commute (the two orders reach different "
                              "states)", s, a, b)
    return pairs
