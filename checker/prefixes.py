"""A corpus of traces replayed with every shared prefix run once.

The traces of a covering set all start from an initial state, and most of them share
a long prefix with a trace before them: on the Kafka model's ``failover`` preset with
the controller's event order, 16,739 traces of 275,426 steps have 71,896 distinct
prefixes.  :meth:`checker.conform.Harness.run` replays each trace on a fresh
implementation, so it runs and checks every shared prefix again, once per trace.

:func:`replay` runs each prefix once.  It walks the trie of the traces in the
corpus's order; where a later trace leaves the path of the one being run (or ends on
it), it keeps a copy of the implementation (``snapshot``), and that later trace goes
on from the copy (``Harness.run(..., resume=)``).  A copy is dropped once the last
trace through its node has run.  A copy that fails (``snapshot`` raises) is not
kept: the traces that would go on from it start from a shallower copy or a fresh
implementation.  A harness that probes every state of every run (``probed`` None, as
while shrinking) shares nothing: its runs are made one by one.

It gives what running the traces one by one gives, in the same order: each trace's
first divergence or None, and the model-side errors (``NotInModel``) at the same
trace.  That holds when the implementation is a function of the actions applied to
it, and its copy behaves as it does; which is why the copy is the caller's choice.
An adapter of an in-process implementation can usually be copied with
``copy.deepcopy`` (the default) or :func:`pickled`; one that drives processes or
sockets cannot, and must be run trace by trace.  tests/test_prefixes.py compares the
two ways on conforming and on broken implementations.

    >>> from checker.conform import Harness
    >>> from checker.model import Model, action
    >>> class Counter(Model):
    ...     def init_states(self): return [0]
    ...     def actions(self, s): return [action("Inc"), action("Reset")] if s < 3 else [action("Reset")]
    ...     def next_state(self, s, a): return s + 1 if a.name == "Inc" else 0
    >>> class Impl:
    ...     def __init__(self, config): self.n = 0
    ...     def enabled(self, a): return a.name == "Reset" or self.n < 3
    ...     def apply(self, a): self.n = self.n + 1 if a.name == "Inc" else 0
    ...     def observe(self): return self.n
    >>> traces = [(None, [action("Inc")] * k + [action("Reset")]) for k in range(4)]
    >>> h = Harness(Counter(), Impl, {})
    >>> [d for _, d in replay(h, traces)], h.steps        # 10 steps one by one
    ([None, None, None, None], 7)
    >>> class Stuck(Impl):                               # cannot count past 2
    ...     def apply(self, a): self.n = min(self.n + 1, 2) if a.name == "Inc" else 0
    >>> [(i, d.step) for i, d in replay(Harness(Counter(), Stuck, {}), traces) if d]
    [(3, 3)]
"""

from __future__ import annotations

import copy
import pickle
from typing import Any, Callable, Iterable, Iterator, Sequence

from checker.divergence import Divergence
from checker.model import Action, State


def replay(harness: Any, traces: Iterable[tuple[State | None, Sequence[Action]]],
           snapshot: Callable[[Any], Any] = copy.deepcopy) -> Iterator[tuple[int, Divergence | None]]:
    """``(index, divergence or None)`` of each ``(init, actions)`` of ``traces`` in
    order, as ``harness.run(actions, init)`` gives it, each shared prefix run once
    (see the module docstring).  ``snapshot(impl)``: an independent copy of an
    implementation.  A ``NotInModel`` is raised at its trace's turn, as
    ``harness.run`` raises it."""
    traces = [(init, tuple(acts)) for init, acts in traces]
    if harness.probed is None:
        # Every run probes every state of its path (as while shrinking): a prefix
        # run once would be probed once, so nothing is shared.
        for k, (init, acts) in enumerate(traces):
            yield k, harness.run(acts, init)
        return
    paths, through = _trie(traces)
    kept: dict[int, Any] = {}     # node -> a copy of the implementation after its step
    for k, ((init, acts), path) in enumerate(zip(traces, paths)):
        resume = None
        for j in range(len(path) - 1, 0, -1):
            node = path[j]
            if node in kept:
                impl = kept.pop(node) if through[node] == 1 else _copy(snapshot, kept[node])
                resume = None if impl is None else (impl, j)    # no copy: a fresh implementation
                break

        def keep(i: int, impl: Any, path: list = path) -> None:
            node = path[i]
            later = through[node] - 1                          # traces after this one through node
            if later and node not in kept and (i + 1 == len(path) or through[path[i + 1]] < through[node]):
                copied = _copy(snapshot, impl)                 # one of them leaves this path here
                if copied is not None:
                    kept[node] = copied

        try:
            d = harness.run(acts, init, resume=resume, keep=keep)
        finally:
            for node in path:
                through[node] -= 1
                if not through[node]:
                    kept.pop(node, None)
        yield k, d


def pickled(impl: Any) -> Any:
    """A copy of ``impl`` through pickle: for an implementation whose classes pickle
    (module-level), often cheaper than ``copy.deepcopy`` (the reference broker's:
    0.34 ms against 0.88)."""
    return pickle.loads(pickle.dumps(impl, protocol=pickle.HIGHEST_PROTOCOL))


def _copy(snapshot: Callable[[Any], Any], impl: Any) -> Any:
    """``snapshot(impl)``, or None if it fails: the traces that would go on from
    that copy run from a shallower one or a fresh implementation instead."""
    try:
        return snapshot(impl)
    except Exception:  # noqa: BLE001 - sharing is only a saving
        return None


def _trie(traces: list) -> tuple[list[list[int]], list[int]]:
    """Each trace's path of trie nodes (its initial state's root, then one node per
    step), and how many traces pass through each node.  Initial states and actions
    are told apart by ``repr``, not ``==``: ``Add(v=1)`` equals ``Add(v=True)``,
    and an implementation may tell them apart."""
    roots: dict[Any, int] = {}
    child: dict[tuple[int, str], int] = {}
    through: list[int] = []
    paths = []
    for init, acts in traces:
        key = None if init is None else repr(init)
        node = roots.get(key)
        if node is None:
            node = roots[key] = len(through)
            through.append(0)
        through[node] += 1
        path = [node]
        for a in acts:
            edge = (node, repr(a))
            nxt = child.get(edge)
            if nxt is None:
                nxt = child[edge] = len(through)
                through.append(0)
            node = nxt
            through[node] += 1
            path.append(node)
        paths.append(path)
    return paths, through
