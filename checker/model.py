"""The model contract: everything the checker knows about a model, in one file.

The checker explores any object that meets this contract; it never imports `spec/`.
The shape follows Stateright: initial states, the enabled actions of a state in a
deterministic order, the next state of (state, action), named properties, an optional
state bound.  Counterexamples are stored as the sequence of actions and rebuilt by
replay, so everything a model returns must be deterministic: no set iteration order,
no ``hash()``, no randomness.

States are plain values built from tuples (NamedTuples included), ints, bools, str and
None.  That restriction is what makes ``repr(state)`` a canonical encoding, and the
fingerprint a stable function of the state whatever ``PYTHONHASHSEED`` is.  Sets and
dicts are rejected: use sorted tuples.

A minimal model, explored exhaustively::

    >>> from checker.model import Model, action, always
    >>> class Counter(Model):
    ...     name, version = "counter", "1"
    ...     def init_states(self):
    ...         return [0]
    ...     def actions(self, s):
    ...         return [action("Inc")] if s < 3 else []
    ...     def next_state(self, s, a):
    ...         return s + 1
    ...     def is_terminal(self, s):
    ...         return s == 3
    ...     def properties(self):
    ...         return [always("Small", lambda s: s <= 3, "never past 3")]
    >>> from checker.bfs import check
    >>> check(Counter()).stats.distinct
    4
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from checker.config import resolve
from checker.errors import ModelError, UsageError

State = Any
"""A state: nested tuples / NamedTuples of int, bool, str and None."""


class Action(NamedTuple):
    """One choice of the model: a name and keyword arguments, in a fixed order.

    ``args`` is a tuple of ``(key, value)`` pairs rather than a dict so that an
    action is hashable, cheap to build and prints the same way every time.
    Argument values must be JSON-representable scalars (int, bool, str, None) or
    tuples of them, because traces store actions as JSON.
    """

    name: str
    args: tuple = ()

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.args)
        return f"{self.name}({inner})"

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.args)

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.args:
            if k == key:
                return v
        return default


def action(name: str, **kwargs: Any) -> Action:
    """Build an action record: ``action("ElectLeader", partition=0, leader=2)``."""
    return Action(name, tuple(kwargs.items()))


ALWAYS = "always"
SOMETIMES = "sometimes"
EVENTUALLY = "eventually"
KINDS = (ALWAYS, SOMETIMES, EVENTUALLY)


@dataclass(frozen=True)
class Property:
    """A named property with a rationale that says what it checks and what it allows.

    kind ``always``: must hold on every reachable state (initial ones included).
    kind ``sometimes``: a witness that must be reachable, so that the ``always``
    properties cannot hold vacuously.

    kind ``eventually``: a liveness property, TLA+'s leads-to ``trigger ~> goal``
    on every *fair* behaviour: whenever ``trigger(state)`` holds, ``goal`` holds
    then or later.  Without a trigger it is ``True ~> goal``, i.e. ``[]<>goal``:
    from every reachable state, ``goal`` holds again eventually.  Fair behaviours
    are those of weak fairness on the actions ``Model.fair`` accepts, per action
    *instance* (name and args); a behaviour may stop (stutter forever) in a state
    where no fair action is enabled.  A violation is a lasso: a path to a cycle
    (possibly a stutter) that the system can stay in forever without ``goal``.
    Only the local engine checks it, on the whole explored graph
    (:mod:`checker.liveness`); the BFS engines skip it.

    A *step* property (``step=True``, only for ``always``) is a predicate over a
    transition ``(prev, action, next)`` instead of a state: it states rules such as
    "epochs never go backwards" or "only legal state-machine transitions", which
    are about change, without adding history to the state.  It is checked on every
    generated transition, and its counterexample ends with the offending action.
    """

    name: str
    kind: str
    predicate: Callable[..., bool]
    rationale: str = ""
    step: bool = False
    trigger: Callable[..., bool] | None = None   # eventually only: the P of P ~> goal

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"property {self.name!r}: kind must be one of {KINDS}, not {self.kind!r}")
        if self.step and self.kind != ALWAYS:
            raise ValueError(f"property {self.name!r}: only 'always' properties can be step properties")
        if self.trigger is not None and self.kind != EVENTUALLY:
            raise ValueError(f"property {self.name!r}: only 'eventually' properties have a trigger")


def always(name: str, predicate: Callable[..., bool], rationale: str = "", *, step: bool = False) -> Property:
    """An invariant: ``predicate(state)`` (or ``predicate(prev, action, next)`` if step)."""
    return Property(name, ALWAYS, predicate, rationale, step)


def sometimes(name: str, predicate: Callable[[State], bool], rationale: str = "") -> Property:
    """A reachability witness: some reachable state satisfies ``predicate(state)``."""
    return Property(name, SOMETIMES, predicate, rationale)


def eventually(name: str, goal: Callable[[State], bool], rationale: str = "", *,
               trigger: Callable[[State], bool] | None = None) -> Property:
    """A liveness property under weak fairness: ``trigger ~> goal`` (leads-to), or
    ``[]<>goal`` without a trigger.  ``goal(state)`` is the property's predicate.

    >>> p = eventually("Done", lambda s: s == 3, "the counter reaches 3")
    >>> p.kind, p.trigger is None
    ('eventually', True)
    """
    return Property(name, EVENTUALLY, goal, rationale, False, trigger)


class Model:
    """Base class of a model.  Subclasses override the first four methods.

    ``actions`` returns only *enabled* actions, in an order that depends on the
    state alone; ``next_state`` is then defined for each of them.
    """

    name: str = "model"
    version: str = "0"

    equal_states_encode_equally: bool = False
    """A promise that lets the search skip encoding a successor it met recently:
    two states that compare equal (``==``) always have the same ``encode``.  Plain
    tuples break it where a position holds ``True`` in one state and ``1`` in
    another (``True == 1``), or a NamedTuple of one class and an equal tuple of
    another class with another ``repr``.  A model whose every field keeps one type
    (a bool stays a bool) says True; the search then recognises a successor equal
    to one of the last ~10^5 it encoded by hashing it, several times cheaper than
    ``repr`` (:mod:`checker.search`).  Counts and verdicts do not change."""

    exact_fingerprint: Callable[[State], int] | None = None
    """Optional: ``exact_fingerprint(state)``, the state's fingerprint given by the
    model, an int in the signed 64-bit range that no other reachable state of the
    model has (e.g. ``x << 20 | y`` for two counters below 2**20).  By default
    (None) a fingerprint is a 64-bit blake2b digest of ``encode(state)``, which
    costs more than the whole ``next_state`` of a model whose states are a few
    small ints.  Every engine, the graph builder, conformance, traces and
    checkpoints then use this function instead: counts, depths, verdicts and the
    steps of every counterexample stay those of the digest (a digest may
    collide; an exact fingerprint does not), only the fingerprints change, so a
    trace or checkpoint written before the model had the hook no longer matches
    it.  A promise, as ``encode`` is: two different states with one fingerprint
    are one state to the search; the first 1,000 successors of a search check
    that it returns such an int (:mod:`checker.fingerprint`)."""

    partition_key: Callable[[State], Any] | None = None
    """Optional: ``partition_key(state)``, the part of a state that places it on a
    Spark partition.  By default (None) the Spark engine places a state by its
    fingerprint, so half of all successors (on two partitions) belong to another
    partition than their parent: each is shipped, and one reached from two
    partitions in a level is encoded, checked and shipped twice.  A model that
    names a part of its state that most actions leave unchanged (a method
    returning, e.g., ``state.zk``) keeps most successors in their parent's
    partition.  The key must be a plain value like a state (tuples, ints, bools,
    str, None) and should take many values, or one partition gets most states.
    Only placement changes: counts, depths, verdicts and counterexamples are the
    same; the local engine never calls it.  (See docs/spark.md.)"""

    def init_states(self) -> Iterable[State]:
        raise NotImplementedError

    def actions(self, state: State) -> Iterable[Action]:
        raise NotImplementedError

    def next_state(self, state: State, act: Action) -> State:
        raise NotImplementedError

    def properties(self) -> Sequence[Property]:
        return ()

    def fair(self, act: Action) -> bool:
        """Is ``act`` weakly fair: if it stays enabled forever, is it eventually taken?

        Only ``eventually`` properties read this.  Default: every action is fair.
        Faults (crashes, expiries, a client's writes) should say False: they may
        happen, within their budgets, but nothing forces them, so the liveness
        checker never counts on a fault to make progress nor blames a behaviour
        for not taking one.  The fairness constraint is per action instance
        ``(name, args)``, like TLA+'s ``\\A p: WF(Elect(p))``: one partition's
        election cannot be starved by another's being taken."""
        return True

    def within_boundary(self, state: State) -> bool:
        """States outside the boundary are checked but not expanded (a state bound)."""
        return True

    def is_terminal(self, state: State) -> bool:
        """A state with no enabled action that is a legitimate end, not a deadlock."""
        return False

    def encode(self, state: State) -> bytes:
        """Canonical encoding that the fingerprint is computed from."""
        return repr(state).encode()

    encode.repr_encoding = True  # type: ignore[attr-defined]  # checker.fingerprint.fingerprint_fn skips the call

    def describe(self, state: State) -> Mapping[str, Any]:
        """A readable, JSON-able view of a state: a flat or nested dict of named
        fields.  Replay diffs it field by field, so name the fields the way a user
        thinks of them (``controller``, ``zk.partition[0].leader``...)."""
        return {"state": repr(state)}

    def config(self) -> Mapping[str, Any]:
        """The full configuration the model was built from (stored in traces)."""
        return {}

    def action_names(self) -> Sequence[str] | None:
        """Optional: every action name this configuration of the model can take, so a
        run's coverage can list the ones never enabled (a vacuous check's first sign).
        None, the default: the family's ``action_docs()`` names, or the actions seen."""
        return None

    def timeline(self) -> Any:
        """Optional: a ``checker.timeline.Timeline`` that draws a path as lanes and
        events (``kmc explore``, ``kmc replay --html``); None, the default, draws none."""
        return None

    def observe(self, state: State) -> Any:
        """What an implementation must agree with after every step (``kmc conform``):
        plain data (dict / list / int / str / bool / None).  The default is every
        field of the state (:func:`plain`); a model whose state holds
        ghost or bookkeeping fields an implementation cannot have leaves them out."""
        return plain(state)


def optional_hook(model: Any, name: str, kind: type) -> Any:
    """The value of the model's optional hook ``name()`` (``symmetry``, ``footprints``...),
    or None when the model has none.  Model code that raises, or a value of another
    type than ``kind``, is a ModelError naming the hook: a reduction built on a bad
    declaration would give wrong verdicts, not a traceback."""
    fn = getattr(model, name, None)
    if not callable(fn):
        return None
    try:
        value = fn()
    except (UsageError, ModelError):
        raise
    except Exception as e:  # noqa: BLE001 - model code
        raise ModelError(f"model error: {name}() raised {type(e).__name__}: {e}; fix the model") from e
    if value is not None and not isinstance(value, kind):
        raise ModelError(f"{name}() must return a {kind.__module__}.{kind.__qualname__} or None, "
                         f"not {type(value).__name__}")
    return value


def plain(state: Any) -> Any:
    """The default observation of a model state (``Model.observe``): NamedTuples
    become dicts by field name, tuples and lists become lists, recursively;
    scalars stay as they are.

    >>> plain((1, (True, None)))
    [1, [True, None]]
    """
    if isinstance(state, tuple) and hasattr(state, "_fields"):
        return {f: plain(v) for f, v in zip(state._fields, state)}
    if isinstance(state, (tuple, list)):
        return [plain(v) for v in state]
    if isinstance(state, Mapping):
        return {k: plain(v) for k, v in state.items()}
    return state


@dataclass(frozen=True)
class Parameter:
    """One configuration key of a model family, with its range and meaning."""

    name: str
    default: Any
    doc: str
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple | None = None

    @property
    def type(self) -> type:
        return type(self.default)


@dataclass(frozen=True)
class Preset:
    name: str
    doc: str
    overrides: Mapping[str, Any] = field(default_factory=dict)


class ModelFamily:
    """What the CLI loads: a family of models built from a configuration.

    Registered under the ``kmc.models`` entry-point group (see pyproject.toml), or
    named on the command line as ``module:attribute``.  The CLI validates keys and
    ranges against ``parameters`` before calling ``build``; ``build`` may still
    raise ``ValueError`` for combinations that are invalid together, and the CLI
    turns that into a one-line error.
    """

    name: str = "model"
    version: str = "0"
    parameters: Mapping[str, Parameter] = {}
    presets: Mapping[str, Preset] = {}
    default_preset: str = "default"
    implementation: str | None = None
    """``"module:attribute"`` of the implementation adapter ``kmc conform`` drives
    (checker.conform documents its contract); None: the family has none."""
    cluster: str | None = None
    """``"module:attribute"`` of the real-cluster runner ``kmc cluster`` drives
    (checker/commands/cluster.py documents its contract); None: the family has none."""

    def build(self, config: Mapping[str, Any]) -> Model:
        raise NotImplementedError

    def action_docs(self) -> Mapping[str, str]:
        """Action name -> one-line meaning, for ``kmc list``."""
        return {}

    def property_docs(self) -> Sequence[Property]:
        """Every property the family can declare (some only under some flags),
        for ``kmc list``; defaults to those of the default preset's model."""
        return self.build(resolve(self, self.default_preset, {})).properties()
