"""Conformance: does an implementation behave as the model says, step by step?

A model family may name an *implementation adapter* (``ModelFamily.implementation``,
``"module:attribute"``).  The harness drives the model and the adapter with the same
actions, and after every step compares the model's *observation* of its state with
the implementation's.  It knows nothing of any particular family: the adapter does
the mapping from actions to the implementation's operations, and the two ``observe``
functions are the abstraction function.

The contract between the harness and an adapter::

    class Implementation:            # what a family's implementation adapter provides
        def __init__(self, config: Mapping[str, Any]) -> None   # a fresh system in the model's initial state (config = the model's full config dict, as in traces)
        def enabled(self, act: checker.model.Action) -> bool      # can the implementation perform this action now?
        def apply(self, act: checker.model.Action) -> None        # perform it (raise on internal failure)
        def observe(self) -> Any                                  # the abstraction function: plain data (dict / list / int / str / bool / None)
        ignored: Mapping[str, str] = {}                           # implementation fields the projection leaves out, and why

    Model side: Model.observe(state) -> Any, new optional contract method in checker/model.py;
    its default is checker.conform.plain(state): NamedTuple → dict by field name,
    tuple/list → list, recursively. A family names its adapter with an optional attribute
    ModelFamily.implementation: str | None = None ("module:attribute"; the harness imports
    it, spec/ never imports impl/).

Observations are compared as JSON-canonical data: the key order of a dict does not
matter, a tuple equals a list, but ``True`` is not ``1``.

One optional addition to that contract (announced in COORD.md)::

        bounded: Mapping[str, str] = {}   # action names the model bounds and the implementation need not (fault budgets), and why

and one more, for settling (``Harness(..., settle=True)``)::

        def settle(self) -> None                 # left alone (no fault, no client): do every pending piece of work, until none is left
        own_actions: Mapping[str, str] = {}      # the model's actions the implementation takes on its own while it settles, and why

With probing on (``kmc conform --probe``, a ``vocabulary`` for :class:`Harness`), the
harness also asks the implementation about actions the model does *not* enable in a
state, and one it enables is a divergence.  A model bounds some actions only to keep
its state space finite (``max_crashes``...); an implementation that does not know those
bounds names the actions in ``bounded``, and they are not asked about.

With settling on, after the last step of a run the implementation is left alone to
settle (its own loop, whose order the model does not know), and its observation must
then be one of a state the model reaches from the run's last state by ``own_actions``
alone, in which none of them is enabled (a quiet state).  Where the model has no
quiet state within reach, nothing is checked.

What is checked (``Harness.run``): the implementation starts from ``config``; its
observation must equal the model's initial state's.  Before each step the action must
be enabled in the model (a trace that breaks this no longer fits the model: that is
:class:`NotInModel`, not a divergence) and in the implementation; after it the two
observations must be equal.  The first step where one of these fails is a
:class:`Divergence`, which :func:`shrink` cuts by delta debugging to a shorter action
sequence that is still legal in the model and still diverges.

Where the corpus comes from: saved traces, a :func:`covering_set` of paths that takes
every transition of a small state graph at least once (so every action the model
enables in every reachable state is offered to the implementation once), and
:func:`random_walks` (Hypothesis; the corpus of a graph too large to cover).

A toy model and an implementation of it that agree::

    >>> from checker.model import Model, action
    >>> class Counter(Model):
    ...     def init_states(self): return [0]
    ...     def actions(self, s): return [action("Inc")] if s < 2 else [action("Reset")]
    ...     def next_state(self, s, a): return s + 1 if a.name == "Inc" else 0
    >>> class Impl:
    ...     ignored = {}
    ...     def __init__(self, config): self.n = 0
    ...     def enabled(self, a): return (a.name == "Inc") == (self.n < 2)
    ...     def apply(self, a): self.n = self.n + 1 if a.name == "Inc" else 0
    ...     def observe(self): return self.n
    >>> h = Harness(Counter(), Impl, {})
    >>> cover = covering_set(explore(Counter()))
    >>> len(cover.traces), cover.steps, cover.covered, len(cover.graph.edges)
    (1, 3, 3, 3)
    >>> [h.run(acts, init) for init, acts in cover.traces]
    [None]
    >>> class Off(Impl):                        # forgets to reset
    ...     def apply(self, a): self.n = self.n + 1 if a.name == "Inc" else self.n
    >>> d = Harness(Counter(), Off, {}).run(cover.traces[0][1])
    >>> d.step, str(d.action), d.changes
    (3, 'Reset()', [('value', 0, 2)])

>>> from typing import NamedTuple
>>> class P(NamedTuple):
...     leader: int
...     isr: tuple
>>> plain((P(1, (1, 2)), None))
[{'leader': 1, 'isr': [1, 2]}, None]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from checker.bfs import replay_path
from checker.covering import CoveringSet, covering_set, fewest_steps
from checker.divergence import (EXTRA, INITIAL, KINDS, RAISED, REFUSED, SETTLED, STATE, Divergence,  # noqa: F401
                                NotInModel)
from checker.errors import ModelError, UsageError
from checker.errors import describe_exception as _exc
from checker.fingerprint import fingerprint_fn
from checker.fromstate import from_state
from checker.graph import explore  # noqa: F401 - explore: the doctests
from checker.imports import import_ref
from checker.inputfile import read_input
from checker.model import Action, Model, State, plain
from checker.observation import canonical, diff, view
from checker.result import INTERRUPTED, CheckResult, Violation
from checker.search import SAMPLE_SIZE, Search, Settings, Visitor
from checker.shrink import shrink
from checker.trace import action_from_json, action_to_json, write_trace
from checker.traceschema import loads

# The names below were all defined here before the harness's parts got their own
# modules (observation, divergence, covering); they stay importable from here.
__all__ = ["plain", "Harness", "Divergence", "NotInModel", "load_implementation", "shrink", "save", "canonical",
           "diff", "CoveringSet", "covering_set", "fewest_steps", "random_walks", "walk_machine", "KINDS",
           "INITIAL", "REFUSED", "RAISED", "STATE", "EXTRA", "SETTLED"]

CONTEXT = 5          # previous steps shown in a divergence report

SETTLE_LIMIT = 100_000   # model states explored for one run's quiet states

# Entries a harness keeps in each of its memos of the model's side (enabled actions,
# successors, observations, by fingerprint); a memo that reaches it is emptied.
MEMO_LIMIT = 1 << 16


# ------------------------------------------------------------------------ loading

def load_implementation(family: Any, family_ref: str = "") -> Callable[[Mapping[str, Any]], Any]:
    """The adapter class a family names in ``implementation`` (``module:attribute``).
    UsageError when the family names none or the name does not import."""
    ref = getattr(family, "implementation", None)
    name = getattr(family, "name", "?")
    label = f"model family {name!r}" + (f" ({family_ref})" if family_ref and family_ref != name else "")
    if not ref:
        raise UsageError(f"{label} has no implementation to check conformance against; set its "
                         f"ModelFamily.implementation = 'module:attribute' (see checker/conform.py)")
    modname, _, attr = str(ref).partition(":")
    if not modname or not attr:
        raise UsageError(f"{label} names its implementation {ref!r}; it must be 'module:attribute'")
    obj = import_ref(modname, attr, what=f"implementation {ref!r} of {label}",
                     fix="fix ModelFamily.implementation")
    if not callable(obj):
        raise UsageError(f"implementation {ref!r} of {label} is a {type(obj).__name__}, not a class; "
                         f"point ModelFamily.implementation at the adapter class")
    return obj


# ------------------------------------------------------------------------ replay


class Harness:
    """One model and one implementation adapter, configured alike.

    ``impl_factory(config)`` builds a fresh implementation for every run; ``config``
    is the model's full configuration dict.

    With a ``vocabulary`` (e.g. every action of a state graph), each state a run
    passes through is also *probed*: every action of the vocabulary that the model
    does not enable there must not be enabled in the implementation either (an
    implementation that can do more than the model is a divergence too).  Each
    distinct model state is probed once per harness (``probed``), except while
    shrinking, where every state of a candidate is.  With ``probe_path``, the
    vocabulary of a run also holds every action the model enables somewhere on its
    path (what a lone trace offers, without a state graph).

    With ``settle``, an implementation that has ``settle()`` is left alone after the
    last step of every run, and must settle where the model can (see the module's
    docstring); the model's quiet states are remembered per state (``quiet``).
    """

    def __init__(self, model: Model, impl_factory: Callable[[Mapping[str, Any]], Any],
                 config: Mapping[str, Any], vocabulary: Sequence[Action] = (), probe_path: bool = False,
                 settle: bool = False) -> None:
        self.model, self.factory, self.config = model, impl_factory, dict(config)
        self.settle = settle
        self.quiet: dict[int, list] = {}   # fingerprint -> the observations of the quiet states within reach
        self.vocabulary = list(dict.fromkeys(vocabulary))
        self.probe_path = probe_path
        self.probed: set | None = set()   # fingerprints of the states probed so far; None: probe every state
        self.steps = 0          # implementation steps taken, over every run (a cost measure)
        self.runs = 0
        self.probes = 0         # enabled() questions about actions the model does not enable
        self.sample_left = SAMPLE_SIZE   # successors whose contract is still to check (Harness.search)
        self._enabled: dict[int, tuple[list, frozenset]] = {}    # fingerprint -> its actions, and as a set
        self._successor: dict[tuple, tuple[State, int]] = {}     # (fingerprint, action) -> (state, fingerprint)
        self._observed: dict[int, tuple[Any, str]] = {}           # fingerprint -> (observation, canonical text)

    @property
    def _fp(self) -> Callable[[State], int]:
        if not hasattr(self, "_fp_fn"):
            self._fp_fn = fingerprint_fn(self.model)
        return self._fp_fn

    # -- the model side: its errors are the model's (ModelError), never a divergence
    def initial(self) -> State:
        try:
            inits = list(self.model.init_states())
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"init_states() raised {_exc(e)}") from e
        if not inits:
            raise ModelError("the model has no initial state")
        return inits[0]

    def observe_model(self, state: State, where: str) -> Any:
        try:
            obs = self.model.observe(state)
            canonical(obs)
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"{where}: {self.model.name}.observe() raised {_exc(e)}") from e
        return obs

    def enabled_in_model(self, state: State, where: str) -> list[Action]:
        try:
            return list(self.model.actions(state))
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"{where}: actions() raised {_exc(e)}") from e

    def next_state(self, state: State, act: Action, where: str) -> State:
        try:
            return self.model.next_state(state, act)
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"{where}: next_state(..., {act}) raised {_exc(e)}") from e

    def model_path(self, actions: Sequence[Action], init: State | None = None) -> list[State]:
        """The model's states along ``actions`` (NotInModel if one is not enabled)."""
        return self.walk(actions, init)[0]

    def walk(self, actions: Sequence[Action], init: State | None = None) -> tuple[list[State], list[int]]:
        """The model's states along ``actions`` and their fingerprints (NotInModel if
        one is not enabled)."""
        fp = self._fp
        state = self.initial() if init is None else init
        h = fp(state)
        states, fps = [state], [h]
        successor = self._successor
        for i, a in enumerate(actions, 1):
            enabled, allowed = self.enabled_at(state, h, f"step {i}")
            if a not in allowed:
                raise NotInModel(i, a, list(enabled))
            hit = successor.get((h, a))
            if hit is None:
                t = self.next_state(state, a, f"step {i}")
                hit = _remember(successor, (h, a), (t, fp(t)))
            state, h = hit
            states.append(state)
            fps.append(h)
        return states, fps

    def enabled_at(self, state: State, h: int, where: str) -> tuple[list[Action], frozenset]:
        """``state``'s enabled actions (its fingerprint ``h``), as a list and as a set."""
        hit = self._enabled.get(h)
        if hit is None:
            enabled = self.enabled_in_model(state, where)
            hit = _remember(self._enabled, h, (enabled, frozenset(enabled)))
        return hit

    def observation(self, state: State, h: int, where: str) -> tuple[Any, str]:
        """The model's observation of ``state`` (its fingerprint ``h``) and its canonical text."""
        hit = self._observed.get(h)
        if hit is None:
            try:
                obs = self.model.observe(state)
                text = canonical(obs)
            except Exception as e:  # noqa: BLE001
                raise ModelError(f"{where}: {self.model.name}.observe() raised {_exc(e)}") from e
            hit = _remember(self._observed, h, (obs, text))
        return hit

    def fits(self, actions: Sequence[Action], init: State | None = None) -> bool:
        try:
            self.model_path(actions, init)
        except NotInModel:
            return False
        return True

    def quiet_observations(self, state: State, own: set) -> list:
        """The observations (canonical, with the observation) of the states the model
        reaches from ``state`` by actions named in ``own`` alone, where none of them is
        enabled: where a system left alone can come to rest.  A search of the
        model's view from ``state`` (checker.fromstate) by the search core."""
        key = self._fp(state)
        if key in self.quiet:
            return self.quiet[key]
        quiet = _Quiet(self)
        result = self.search(from_state(self.model, state, own), SETTLE_LIMIT, None, quiet)
        if not result.stats.complete:
            raise ModelError(f"settling explored more than {SETTLE_LIMIT} model states from one state "
                             f"by the implementation's own actions ({', '.join(sorted(own))})")
        self.quiet[key] = list(quiet.out.items())
        return self.quiet[key]

    def search(self, view: Model, max_states: int | None, max_depth: int | None, visitor: Visitor) -> CheckResult:
        """Run the search core on ``view`` with ``visitor``, deadlocks unchecked.
        The model's contract (types, determinism) is checked on the first
        successors of all of this harness's searches, as in one search."""
        search = Search(view, [], Settings(max_states=max_states, max_depth=max_depth, check_deadlock=False),
                        visitor)
        search.ledger.sample_left = self.sample_left
        result = search.run()
        self.sample_left = search.ledger.sample_left
        if result.stats.stopped_by == INTERRUPTED:
            raise KeyboardInterrupt   # the core ends a search at Ctrl-C; conformance stops
        return result

    # -- both sides
    def run(self, actions: Sequence[Action], init: State | None = None, *, source: str = "",
            resume: tuple[Any, int] | None = None, keep: Callable[[int, Any], None] | None = None) -> Divergence | None:
        """Replay ``actions`` on the model (from ``init``, default its first initial
        state) and on a fresh implementation; the first divergence, or None.

        ``resume``: ``(impl, i)``, an implementation that an earlier run of the
        same first ``i`` actions left there, checked; the run goes on from it
        instead of from a fresh one.  ``keep(i, impl)`` is called after each step
        ``i`` that conforms (before settling).  :mod:`checker.prefixes` uses both
        to replay a corpus's shared prefixes once."""
        self.runs += 1
        states, fps = self.walk(actions, init)   # NotInModel before the implementation runs
        actions = tuple(actions)

        def model_obs(i: int) -> Any:
            return self.observation(states[i], fps[i], f"step {i}")[0]

        def diverge(kind: str, i: int, changes: list | None = None, detail: str = "",
                    extra: Action | None = None) -> Divergence:
            d = Divergence(kind, i, actions[i - 1] if i else None, actions[:i], changes or [], detail,
                           init=states[0], source=source, extra=extra)
            if i:
                d.model_changes = diff(view(model_obs(i - 1)), view(model_obs(i))) if kind == STATE else []
                last = i + 1 if kind == EXTRA else i       # an extra action comes after step i
                d.context = [(j, actions[j - 1], diff(view(model_obs(j - 1)), view(model_obs(j))))
                             for j in range(max(1, last - CONTEXT), last)]
            return d

        bounded: set | None = None
        vocabulary = self.vocabulary
        if self.probe_path:
            vocabulary = list(dict.fromkeys([*vocabulary, *(a for st, h in zip(states, fps)
                                                             for a in self.enabled_at(st, h, "a step")[0])]))

        def probe(impl: Any, i: int) -> Divergence | None:
            if not vocabulary:
                return None
            if bounded is None:
                return None
            if self.probed is not None:
                h = fps[i]
                if h in self.probed:
                    return None
                self.probed.add(h)
            allowed = self.enabled_at(states[i], fps[i], f"step {i}")[1]
            for a in vocabulary:
                if a in allowed:
                    continue
                self.probes += 1
                try:
                    if impl.enabled(a):
                        return diverge(EXTRA, i, extra=a)
                except Exception as e:  # noqa: BLE001
                    return diverge(RAISED, i, detail=f"in enabled({a}), an action the model does not enable "
                                                     f"here: {_exc(e)}")
            return None

        def impl_obs(impl: Any, i: int) -> tuple[Any, Divergence | None]:
            try:
                obs = impl.observe()
                text = canonical(obs)
            except Exception as e:  # noqa: BLE001 - the implementation's failure is a finding
                return None, diverge(RAISED, i, detail=f"in observe(): {_exc(e)}")
            if text != self.observation(states[i], fps[i], f"step {i}")[1]:
                return obs, diverge(INITIAL if i == 0 else STATE, i, diff(view(model_obs(i)), view(obs)))
            return obs, None

        if resume is None:
            try:
                impl = self.factory(self.config)
                bounded = set(getattr(impl, "bounded", None) or ())
            except Exception as e:  # noqa: BLE001
                return diverge(RAISED, 0, detail=f"building it raised {_exc(e)}")
            start = 0
        else:
            impl, start = resume
            bounded = set(getattr(impl, "bounded", None) or ())
        if bounded:
            vocabulary = [a for a in vocabulary if a.name not in bounded]
        if resume is None:
            _, d = impl_obs(impl, 0)
            if d or (d := probe(impl, 0)):
                return d
        for i, a in enumerate(actions[start:], start + 1):
            try:
                ok = impl.enabled(a)
            except Exception as e:  # noqa: BLE001
                return diverge(RAISED, i, detail=f"in enabled({a}): {_exc(e)}")
            if not ok:
                return diverge(REFUSED, i)
            try:
                impl.apply(a)
            except Exception as e:  # noqa: BLE001
                return diverge(RAISED, i, detail=f"in apply({a}): {_exc(e)}")
            self.steps += 1
            _, d = impl_obs(impl, i)
            if d or (d := probe(impl, i)):
                return d
            if keep is not None:
                keep(i, impl)
        if self.settle and hasattr(impl, "settle"):
            return self._settled(impl, states[-1], len(actions), diverge)
        return None

    def _settled(self, impl: Any, last: State, i: int, diverge: Callable[..., Divergence]) -> Divergence | None:
        quiet = self.quiet_observations(last, set(getattr(impl, "own_actions", None) or ()))
        if not quiet:
            return None          # the model does not come to rest from here: nothing to compare
        try:
            impl.settle()
            obs = impl.observe()
            text = canonical(obs)
        except Exception as e:  # noqa: BLE001 - the implementation's failure is a finding
            return diverge(RAISED, i, detail=f"while it settled after the last step: {_exc(e)}")
        if any(text == t for t, _ in quiet):
            return None
        changes = min((diff(view(o), view(obs)) for _, o in quiet), key=len)
        return diverge(SETTLED, i, changes)


def _remember(memo: dict, key: Any, value: Any) -> Any:
    if len(memo) >= MEMO_LIMIT:
        memo.clear()
    memo[key] = value
    return value


class _Quiet(Visitor):
    """The observations of the dead ends of a settling search, in visit order."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.out: dict[str, Any] = {}

    def dead_end(self, fp: int, state: State) -> None:
        obs = self.harness.observe_model(state, "settling")
        self.out.setdefault(canonical(obs), obs)


PROPERTY = "Conformance"     # the property a saved divergence's trace names (and is named after)


def save(harness: Harness, d: Divergence, directory: str | Path, *, family_ref: str,
         preset: str | None = None, label: str | None = None, command: str | None = None) -> Path:
    """Save ``d``'s path as a trace (property ``Conformance``) in ``directory``; an
    existing file is never overwritten (see checker.trace.write_trace).  For an
    action only the implementation enables, the trace also lists it under ``probe``,
    so that replaying the file asks the implementation about it again."""

    try:
        path = replay_path(harness.model, d.actions, d.init)
    except ModelError:
        raise
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"replaying the diverging path in the model raised {_exc(e)}") from e
    v = Violation(PROPERTY, "conformance", path, message=d.summary)
    extra = {"probe": [action_to_json(d.extra)]} if d.kind == EXTRA and d.extra is not None else None
    try:
        return write_trace(directory, family_ref=family_ref, model=harness.model, config=harness.config,
                           preset=preset, violation=v, engine="conform", command=command, properties=[],
                           label=label, extra=extra)
    except OSError as e:
        raise UsageError(f"cannot write a trace to '{directory}': {e.strerror or e}; "
                         f"choose another directory with --traces-dir DIR") from None


def probe_actions(path: str | Path) -> list[Action]:
    """The actions a saved conformance trace asks the implementation about (``probe``)."""
    try:
        doc = loads(read_input(path, f"trace file '{path}'", "give the path of a .json trace").decode("utf-8"))
        return [action_from_json(a) for a in doc.get("probe", [])]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise UsageError(f"trace file '{path}': field 'probe' must be a list of actions {{name, args}}; "
                         f"re-create the trace with kmc conform") from None


# ---------------------------------------------------------------------- random walks

class DivergenceFound(AssertionError):
    def __init__(self, divergence: Divergence) -> None:
        super().__init__(divergence.summary)
        self.divergence = divergence


def walk_machine(harness: Harness) -> type:
    """A Hypothesis ``RuleBasedStateMachine`` over ``harness``: its one rule draws an
    index into the model's enabled actions and applies that action to the model and
    the implementation alike; its invariant is that the observations are equal.
    Hypothesis shrinks a failure towards fewer steps and lower indices (the earlier
    actions of ``actions()``)."""
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

    model = harness.model

    class ConformanceWalk(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.state = harness.initial()
            self.actions: list[Action] = []
            self.impl: Any = None

        def diverged(self) -> None:
            # The harness replays the path on a fresh implementation: one judge of a
            # divergence, one report, whether it came from a trace or a walk.
            d = harness.run(self.actions, source="a random walk")
            if d is None:
                raise AssertionError(f"the implementation diverged on a random walk but not when the same "
                                     f"{len(self.actions)} steps were replayed on a fresh one: it is not "
                                     f"deterministic ({', '.join(map(str, self.actions))})")
            raise DivergenceFound(d)

        @initialize()
        def start(self) -> None:
            try:
                self.impl = harness.factory(harness.config)
            except Exception:  # noqa: BLE001
                self.diverged()

        @rule(data=st.data())
        def step(self, data: Any) -> None:
            where = f"step {len(self.actions) + 1}"
            enabled = harness.enabled_in_model(self.state, where)
            if not enabled:
                return                      # a terminal state (or a deadlock): nothing to do
            a = enabled[data.draw(st.integers(0, len(enabled) - 1), label="action index")]
            self.state = harness.next_state(self.state, a, where)
            self.actions.append(a)
            try:
                ok = self.impl.enabled(a)
                if ok:
                    self.impl.apply(a)
                    harness.steps += 1
            except Exception:  # noqa: BLE001
                ok = False
            if not ok:
                self.diverged()

        @invariant()
        def observations_agree(self) -> None:
            if self.impl is None:
                return
            try:
                same = canonical(self.impl.observe()) == canonical(harness.observe_model(self.state, "walk"))
            except ModelError:
                raise
            except Exception:  # noqa: BLE001
                same = False
            if not same:
                self.diverged()

    ConformanceWalk.__name__ = f"ConformanceWalk_{model.name}"
    return ConformanceWalk


def random_walks(harness: Harness, walks: int, depth: int) -> Divergence | None:
    """``walks`` random walks of at most ``depth`` steps each (Hypothesis, derandomized,
    no example database: the same walks on every run).  The shrunk failing walk, or None."""
    from hypothesis import HealthCheck, Phase, Verbosity, settings
    from hypothesis.stateful import run_state_machine_as_test

    cfg = settings(max_examples=walks, stateful_step_count=max(1, depth), derandomize=True, database=None,
                   deadline=None, suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
                   report_multiple_bugs=False, print_blob=False,
                   phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink))
    try:
        run_state_machine_as_test(walk_machine(harness), settings=cfg)
    except DivergenceFound as e:
        return e.divergence
    return None
