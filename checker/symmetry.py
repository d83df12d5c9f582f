"""Symmetry reduction: one canonical representative per orbit (``kmc check --symmetry``).

A model whose ids of some sort are interchangeable (brokers, say) declares it by
returning a :class:`Symmetry` from an optional ``symmetry()`` method: the group's
elements (identity included, closed under composition) and a function that applies
one to a whole state.  The checker never looks inside a state: the representative
of ``s`` is the permuted state whose canonical encoding (``model.encode``) is the
smallest, which is the same for every state of the orbit because the elements form
a group.

The search runs on :class:`Reduced`, the quotient model: its states are
representatives and ``next_state`` canonicalises the model's successor.  Every
engine explores it unchanged.  What makes that sound, and how it is checked:

- the model must really be symmetric: for every element ``g`` and state ``s``,
  the successors of ``g(s)`` are the ``g``-images of the successors of ``s``.
  :func:`validate` checks it on a sample of reachable states (orbits of the
  successors compared as sets of representatives) and rejects a declaration
  that breaks it, naming the state and the element;
- a state property is evaluated on every state of the representative's orbit
  (``_Orbit``): an ``always`` property holds on a representative when it holds on
  each member, a witness is reached when any member reaches it.  So its verdict is
  the full model's whatever the predicate says about ids (the members are all
  reachable, the group keeping the initial states), at one evaluation per group
  element.  Checking its symmetry on a sample alone let a user's invariant about
  broker 3 pass where the sample had no state that showed it;
- a step property ``p(s, a, t)`` must keep its value on the image transition:
  :func:`validate` evaluates each on the permuted transitions of the sample and
  rejects an asymmetric one by name.  That is a sample, so only the model's own
  step properties are taken (its tests compare reduced and full searches); a step
  property of an ``--invariants`` file is refused with ``--symmetry``;
- step properties are evaluated on the model's own transition ``(s, a, t)``, not on
  the representative of ``t``;
- a counterexample found on representatives is rebuilt as a path of the unreduced
  model (:func:`concretize`): from the real initial state, each step takes the
  enabled action whose successor lies in the orbit of the next representative,
  which exists by symmetry.  The result is an ordinary trace (``kmc replay``,
  ``kmc conform``).  It is a shortest counterexample too: orbits are reached at
  the depth of their nearest member.

``eventually`` properties are not checked on the quotient: fairness is per action
instance, and a permutation renames instances.

    >>> from checker.model import Model, action, always
    >>> class Pair(Model):   # two interchangeable counters, each up to 2
    ...     def init_states(self): return [(0, 0)]
    ...     def actions(self, s): return [action("Inc", i=i) for i in (0, 1) if s[i] < 2]
    ...     def next_state(self, s, a):
    ...         i = a.get("i"); return s[:i] + (s[i] + 1,) + s[i + 1:]
    ...     def is_terminal(self, s): return True
    ...     def symmetry(self): return Symmetry([(0, 1), (1, 0)], lambda s, g: (s[g.index(0)], s[g.index(1)]))
    >>> from checker.bfs import check
    >>> check(Pair()).stats.distinct, check(Reduced(Pair())).stats.distinct
    (9, 6)
"""

from __future__ import annotations

import random
from typing import Any, Callable, Iterable, Sequence

from checker.errors import ModelError, UsageError
from checker.fingerprint import fingerprint_fn
from checker.model import ALWAYS, EVENTUALLY, Action, Model, Property, State, optional_hook
from checker.result import Step, Violation

__all__ = ["Symmetry", "Reduced", "declared", "symmetry_of", "validate", "concretize", "sample_states", "reduce_properties",
           "refuse_foreign_steps"]


class Symmetry:
    """A model's symmetry group: ``elements`` (identity first) and ``apply(state, g)``."""

    def __init__(self, elements: Sequence[Any], apply: Callable[[State, Any], State], sort: str = "ids") -> None:
        self.elements = list(elements)
        self.apply = apply
        self.sort = sort
        if not self.elements:
            raise ValueError("a symmetry group has at least the identity")

    def __len__(self) -> int:
        return len(self.elements)

    def canonical(self, state: State, encode: Callable[[State], bytes]) -> State:
        best = state
        key = encode(state)
        apply = self.apply
        for g in self.elements[1:]:
            t = apply(state, g)
            k = encode(t)
            if k < key:
                best, key = t, k
        return best

    def orbit(self, state: State, encode: Callable[[State], bytes]) -> list[State]:
        """The distinct states of ``state``'s orbit, in element order."""
        out, keys = [], set()
        for g in self.elements:
            t = self.apply(state, g)
            k = encode(t)
            if k not in keys:
                keys.add(k)
                out.append(t)
        return out


def declared(model: Model) -> Symmetry | None:
    """The group the model declares (``symmetry()``), or None."""
    return optional_hook(model, "symmetry", Symmetry)


def symmetry_of(model: Model) -> Symmetry | None:
    """The part of the model's declared symmetry that the search may use, or None.

    That is the *stabilizer* of the initial states: the elements that map the set
    of initial states onto itself.  Only then is the reachable set closed under the
    group, so that a representative stands for states that are all reachable (and
    the distinct representatives times their orbit sizes give the full count).  An
    element that moves an initial state out of the set renames something the
    configuration fixes: in the Kafka model, the order of an AR (its first replica
    is the preferred one, and elections follow the order), so with one partition
    whose AR holds every broker no broker permutation is left."""
    sym = declared(model)
    if sym is None:
        return None
    encode = model.encode
    inits = list(model.init_states())
    keys = {encode(s) for s in inits}
    keep = [g for g in sym.elements if {encode(sym.apply(s, g)) for s in inits} == keys]
    if len(keep) < 2:
        return None
    return Symmetry(keep, sym.apply, sym.sort)


CANONICAL_MEMO = 1 << 16   # canonical forms remembered by value, then forgotten


class Reduced(Model):
    """The quotient of ``model`` by its symmetry: states are orbit representatives."""

    def __init__(self, model: Model, sym: Symmetry | None = None) -> None:
        self.model = model
        self.sym = sym if sym is not None else symmetry_of(model)
        if self.sym is None:
            raise UsageError(f"model {model.name!r} has no symmetry in this configuration (none declared, or "
                             f"none that keeps the initial states); drop --symmetry")
        self.name, self.version = model.name, model.version
        self._encode = model.encode
        # Its states are the model's: where equal states encode equally, the engine's
        # cache of encodings by value holds, and so does a cache of canonical forms by
        # value (most successors were met before; each costs a permutation per element).
        self.equal_states_encode_equally = getattr(model, "equal_states_encode_equally", False)
        self._memo: dict | None = {} if self.equal_states_encode_equally else None
        # Representatives are the model's states: its Spark placement applies to them.
        self.partition_key = getattr(model, "partition_key", None)

    def canonical(self, s: State) -> State:
        return self.sym.canonical(s, self._encode)

    def init_states(self) -> Iterable[State]:
        out, seen = [], set()
        for s in self.model.init_states():
            c = self.canonical(s)
            k = self._encode(c)
            if k not in seen:
                seen.add(k)
                out.append(c)
        return out

    def actions(self, s: State) -> Iterable[Action]:
        return self.model.actions(s)

    def next_state(self, s: State, a: Action) -> State:
        t = self.model.next_state(s, a)
        memo = self._memo
        if memo is None:
            return self.sym.canonical(t, self._encode)
        c = memo.get(t)
        if c is None:
            if len(memo) >= CANONICAL_MEMO:
                memo.clear()
            c = memo[t] = self.sym.canonical(t, self._encode)
        return c

    def properties(self) -> Sequence[Property]:
        return reduce_properties(self.model, list(self.model.properties()), self.sym)

    def fair(self, a: Action) -> bool:
        return self.model.fair(a)

    def within_boundary(self, s: State) -> bool:
        return self.model.within_boundary(s)

    def is_terminal(self, s: State) -> bool:
        return self.model.is_terminal(s)

    def encode(self, s: State) -> bytes:
        return self._encode(s)

    def describe(self, s: State) -> Any:
        return self.model.describe(s)

    def config(self) -> Any:
        return self.model.config()

    def observe(self, s: State) -> Any:
        return self.model.observe(s)


class _RawStep:
    """A step property of the model, evaluated on the model's own transition: the
    quotient hands it the representative of the successor, which may be another
    member of the orbit than the one the action produced."""

    def __init__(self, model: Model, pred: Callable[..., bool]) -> None:
        self.model, self.pred = model, pred

    def __call__(self, s: State, a: Action, _t: State) -> bool:
        return self.pred(s, a, self.model.next_state(s, a))


class _Images:
    """The other members of the orbit of the state last asked about: the engine asks
    every state property about one state in a row, so each is renamed once."""

    def __init__(self, sym: "Symmetry") -> None:
        self.apply, self.others = sym.apply, sym.elements[1:]
        self.state: Any = None
        self.images: list = []

    def __call__(self, s: State) -> list:
        if s is not self.state:
            apply = self.apply
            self.images = [apply(s, g) for g in self.others]
            self.state = s
        return self.images


class _Orbit:
    """A state property on the quotient: its value on every member of the orbit of a
    representative, ``all`` of them for an ``always`` property, ``any`` for a witness."""

    def __init__(self, images: _Images, pred: Callable[[State], bool], witness: bool) -> None:
        self.images, self.pred, self.witness = images, pred, witness

    def __call__(self, s: State) -> bool:
        pred = self.pred
        if self.witness:
            return bool(pred(s)) or any(pred(t) for t in self.images(s))
        return bool(pred(s)) and all(pred(t) for t in self.images(s))


def reduce_properties(model: Model, props: Sequence[Property], sym: "Symmetry | None" = None) -> list[Property]:
    """``props`` for the quotient: state properties on every member of the orbit
    (``_Orbit``, when ``sym`` is given), step properties on the raw transition,
    ``eventually`` properties left out."""
    out = []
    images = _Images(sym) if sym is not None and len(sym) > 1 else None
    for p in props:
        if p.kind == EVENTUALLY:
            continue
        if p.step:
            p = Property(p.name, p.kind, _RawStep(model, p.predicate), p.rationale, True)
        elif images is not None:
            p = Property(p.name, p.kind, _Orbit(images, p.predicate, p.kind != ALWAYS), p.rationale, False)
        out.append(p)
    return out


def refuse_foreign_steps(model: Model, props: Sequence[Property]) -> None:
    """A step property that the model does not declare (an ``--invariants`` file's)
    cannot be taken under symmetry: its symmetry is only sampled (see the module
    docstring)."""
    own = {p.name for p in model.properties()}
    foreign = [p.name for p in props if p.step and p.kind != EVENTUALLY and p.name not in own]
    if foreign:
        raise UsageError(f"step propert{'y' if len(foreign) == 1 else 'ies'} {', '.join(foreign)} cannot be "
                         f"checked with --symmetry: whether a step property of yours keeps its value when ids are "
                         f"permuted can only be sampled, not shown; check without --symmetry, or write it as a "
                         f"state property")


# ------------------------------------------------------------------- validation

def sample_states(model: Model, *, bfs_states: int = 300, walks: int = 30, steps: int = 60,
                  seed: int = 0) -> list[State]:
    """Reachable states to check a declaration on: the first ``bfs_states`` in
    breadth-first order, then those of ``walks`` random walks (deep states), in a
    deterministic order without duplicates."""
    encode = model.encode
    seen: set[bytes] = set()
    out: list[State] = []

    def add(s: State) -> bool:
        k = encode(s)
        if k in seen:
            return False
        seen.add(k)
        out.append(s)
        return True

    inits = list(model.init_states())
    frontier = [s for s in inits if add(s)]
    while frontier and len(out) < bfs_states:
        nxt = []
        for s in frontier:
            if not model.within_boundary(s):
                continue
            for a in model.actions(s):
                t = model.next_state(s, a)
                if add(t):
                    nxt.append(t)
                if len(out) >= bfs_states:
                    break
            if len(out) >= bfs_states:
                break
        frontier = nxt
    for w in range(walks):
        rng = random.Random(f"{seed}:sample:{w}")
        s = inits[rng.randrange(len(inits))]
        for _ in range(steps):
            if not model.within_boundary(s):
                break
            acts = list(model.actions(s))
            if not acts:
                break
            s = model.next_state(s, acts[rng.randrange(len(acts))])
            add(s)
    return out


def _describe(model: Model, s: State) -> str:
    import json
    try:
        return json.dumps(model.describe(s), default=repr)
    except Exception:  # noqa: BLE001
        return repr(s)


def validate(model: Model, sym: Symmetry, props: Sequence[Property], states: Sequence[State] | None = None) -> int:
    """Check, on ``states`` (default: :func:`sample_states`), that ``sym`` is a
    symmetry of the model and that every property is symmetric.  Returns how many
    states were checked; raises ModelError for a model that is not symmetric, and
    UsageError for a property that is not (naming it, the state and the element)."""
    encode = model.encode
    fp = fingerprint_fn(model)
    if states is None:
        states = sample_states(model)

    def canon_fp(s: State) -> int:
        return fp(sym.canonical(s, encode))

    for s in states:
        succ = sorted({canon_fp(model.next_state(s, a)) for a in model.actions(s)})
        for g in sym.elements[1:]:
            gs = sym.apply(s, g)
            if canon_fp(gs) != canon_fp(s):
                raise ModelError(f"the declared symmetry is not a group: applying {g} to a state leaves its orbit "
                                 f"(symmetry() must list every element of a group); state {_describe(model, s)}")
            gsucc = sorted({canon_fp(model.next_state(gs, a)) for a in model.actions(gs)})
            if gsucc != succ:
                raise ModelError(f"the model is not symmetric under {sym.sort} permutation {g}: the permuted state "
                                 f"has other successors (up to symmetry) than the state itself; the declaration in "
                                 f"symmetry() is wrong for this configuration. State: {_describe(model, s)}")
            for p in props:
                if p.kind == EVENTUALLY:
                    continue
                if p.step:
                    for a in model.actions(s):
                        t = model.next_state(s, a)
                        want = bool(p.predicate(s, a, t))
                        gt = sym.apply(t, g)
                        images = [b for b in model.actions(gs) if encode(model.next_state(gs, b)) == encode(gt)]
                        if images and all(bool(p.predicate(gs, b, gt)) != want for b in images):
                            raise UsageError(_asymmetric(p, g, sym, model, s, f" on the step {a}"))
                elif bool(p.predicate(s)) != bool(p.predicate(gs)):
                    raise UsageError(_asymmetric(p, g, sym, model, s, ""))
    return len(states)


def _asymmetric(p: Property, g: Any, sym: Symmetry, model: Model, s: State, where: str) -> str:
    return (f"property {p.name!r} is not symmetric: it changes its value when {sym.sort} are permuted by {g}"
            f"{where}, so --symmetry cannot check it; check it without --symmetry. State: {_describe(model, s)}")


# ---------------------------------------------------------------- counterexamples

def concretize(model: Model, sym: Symmetry, violation: Violation, props: Sequence[Property] = ()) -> Violation:
    """``violation`` (a path of representatives) as a path of the unreduced model from
    its real initial state: each step takes the first enabled action whose successor
    is in the orbit of the next representative; the last step of a step property's
    violation is one that breaks it (``props`` holds the property)."""
    if not violation.path:
        return violation
    encode = model.encode
    fp = fingerprint_fn(model)

    def key(s: State) -> bytes:
        return encode(sym.canonical(s, encode))

    want = [key(st.state) for st in violation.path]
    start = next((s for s in model.init_states() if key(s) == want[0]), None)
    if start is None:
        raise ModelError("symmetry: no initial state of the model is in the orbit of the counterexample's first state")
    path = [Step(None, start, fp(start))]
    s = start
    last = len(violation.path) - 1
    step_prop = next((p for p in props if p.name == violation.property and p.step), None)
    for i in range(1, last + 1):
        act = violation.path[i].action
        acts = list(model.actions(s))
        # the recorded action first: with the identity (the common case) it fits as is
        order = ([act] if act in acts else []) + [a for a in acts if a != act]
        a, t = _step_into(model, s, order, lambda a, t, i=i, s=s: key(t) == want[i] and (
            i < last or step_prop is None or not step_prop.predicate(s, a, t)),
            f"symmetry: step {i} of a reduced counterexample has no image in the unreduced model; the declared "
            f"symmetry is wrong")
        path.append(Step(a, t, fp(t)))
        s = t
    state_prop = next((p for p in props if p.name == violation.property and not p.step
                       and p.kind == ALWAYS), None)
    if state_prop is not None and state_prop.predicate(s):
        # The orbit's violating member is another one than this path reached: the
        # whole path, renamed by the element that maps its end onto that member.
        g = next((g for g in sym.elements[1:] if not state_prop.predicate(sym.apply(s, g))), None)
        if g is not None:
            path = _renamed(model, sym, path, g, fp)
    return Violation(violation.property, violation.kind, path, violation.message, violation.loop_start)


def _renamed(model: Model, sym: Symmetry, path: list, g: Any, fp: Callable[[State], int]) -> list:
    """``path`` with every state renamed by ``g``: a path of the model too, since it
    is symmetric and ``g`` keeps its initial states; each action is the one of the
    renamed state that reaches the next renamed state."""
    encode = model.encode
    s = sym.apply(path[0].state, g)
    out = [Step(None, s, fp(s))]
    for st in path[1:]:
        want = encode(sym.apply(st.state, g))
        a, t = _step_into(model, s, model.actions(s), lambda a, t, want=want: encode(t) == want,
                          "symmetry: a renamed counterexample has no step into its next state; the declared "
                          "symmetry is wrong")
        out.append(Step(a, t, fp(t)))
        s = t
    return out


def _step_into(model: Model, s: State, acts: Iterable[Action], fits: Callable[[Action, State], bool],
               fail: str) -> tuple[Action, State]:
    """The first action of ``acts`` whose successor of ``s`` fits, and that successor;
    none is a contract error (``fail``, with the state)."""
    for a in acts:
        t = model.next_state(s, a)
        if fits(a, t):
            return a, t
    raise ModelError(f"{fail}. State: {_describe(model, s)}")
