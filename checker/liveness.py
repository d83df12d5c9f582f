"""Liveness under weak fairness: ``eventually`` properties on the explored graph.

A property ``trigger ~> goal`` (see :func:`checker.model.eventually`) fails when
some fair behaviour reaches a state where ``trigger`` holds and from then on never
reaches a ``goal`` state.  On a finite graph such a behaviour ends in a *lasso*:
a stem from an initial state, then a loop it can repeat forever, every state from
the trigger on violating ``goal``.  The loop is one of two kinds:

- a **stutter**: a state where no fair action is enabled (only faults, or
  nothing).  TLA+ behaviours may stutter forever there; nothing forces a fault.
- a **fair cycle** inside a strongly connected component ``C`` of the graph
  restricted to ``not goal`` states.  Weak fairness, per action instance
  ``(name, args)``: an action enabled in every state of the loop must be taken
  somewhere on it.  A walk that covers all of ``C`` infinitely often is fair iff
  every fair action enabled in *all* states of ``C`` labels an edge inside ``C``;
  if some such action only leaves ``C``, no behaviour can stay in ``C`` fairly (it
  is enabled in every state it visits), so one check per component decides it,
  without splitting components (strong fairness would need that).

Why per ``(name, args)`` and not per name: ``\\A p: WF(Elect(p))`` is the usual
TLA+ reading; with per-name fairness, electing partition 1 over and over would
count as "ElectLeader taken" while partition 0 is starved forever.

Results are deterministic: components are found on a graph whose nodes are the
exploration order, the stem is a shortest one (a 0-1 BFS over "before trigger" /
"after trigger" copies of the graph, edges in action order), and the loop is built
from shortest paths inside its component.

>>> from checker.model import Model, action, eventually
>>> from checker.graph import explore
>>> class Flap(Model):       # 0 <-> 1 flapping; Finish (enabled in both) reaches 2
...     def init_states(self): return [0]
...     def actions(self, s): return [action("Flap"), action("Finish")] if s < 2 else []
...     def next_state(self, s, a): return 1 - s if a.name == "Flap" else 2
...     def properties(self): return [eventually("Done", lambda s: s == 2)]
>>> [lasso_text(v) for v in check_liveness(explore(Flap()), Flap())]    # Finish stays enabled: it is taken
[]
>>> class Unfair(Flap):      # Finish is a fault now: nothing forces it
...     def fair(self, a): return a.name != "Finish"
>>> [lasso_text(v) for v in check_liveness(explore(Unfair()), Unfair())]
['Done: stem [] loop [Flap(), Flap()]']
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from checker.errors import USER_CODE_ERRORS, ModelError, UsageError
from checker.errors import describe_exception as _exc
from checker.graph import DEFAULT_MAX_STATES, GraphBuilder, StateGraph, explore
from checker.model import EVENTUALLY, Action, Model, Property
from checker.result import Step, Violation

__all__ = ["CheckRun", "Lasso", "check_liveness", "lasso_text", "loop_is_fair", "to_violation"]


@dataclass
class Lasso:
    """A violation of an ``eventually`` property, as edge indices of the graph:
    ``stem`` leads from an initial state to the loop's first node, ``loop`` (a
    closed walk, empty for a stutter) returns to it."""

    property: str
    stem: list[int]
    loop: list[int]
    node: int                 # the loop's first node
    trigger_at: int           # index into the path (0..len(stem)) where the trigger held
    unfair_enabled: list      # for a stutter: the (unfair) actions enabled there
    graph: StateGraph

    def path(self) -> list[Step]:
        g = self.graph
        first = g.edges[self.stem[0]][0] if self.stem else self.node
        steps = [Step(None, g.states[first], g.fingerprints[first])]
        for e in self.stem + self.loop:
            _src, a, dst = g.edges[e]
            steps.append(Step(a, g.states[dst], g.fingerprints[dst]))
        return steps

    def message(self) -> str:
        k = len(self.stem)
        if not self.loop:
            faults = ", ".join(str(a) for a in self.unfair_enabled[:4])
            more = f", ... {len(self.unfair_enabled) - 4} more" if len(self.unfair_enabled) > 4 else ""
            why = (f"only unfair actions are enabled there ({faults}{more}), and nothing forces them"
                   if faults else "no action is enabled there")
            loop = f"the behaviour can stop at step {k} for ever: {why}"
        else:
            n = len(self.loop)
            loop = (f"the behaviour can repeat steps {k + 1}..{k + n} for ever (back to the state of step "
                    f"{k}), taking every fair action that stays enabled on that loop")
        start = "the initial state" if self.trigger_at == 0 else f"step {self.trigger_at}"
        return f"the goal does not hold from {start} on, and {loop}"


def lasso_text(v: Lasso) -> str:
    """A compact one-line view, for doctests and debugging."""
    acts = [str(v.graph.edges[e][1]) for e in v.stem], [str(v.graph.edges[e][1]) for e in v.loop]
    return f"{v.property}: stem [{', '.join(acts[0])}] loop [{', '.join(acts[1])}]"


def to_violation(v: Lasso) -> Violation:
    """The lasso as an engine's :class:`checker.result.Violation` (for traces)."""
    return Violation(property=v.property, kind=EVENTUALLY, path=v.path(), message=v.message(),
                     loop_start=len(v.stem))


def _call(pred: Callable, state: Any, what: str, node: int, g: StateGraph) -> bool:
    try:
        return bool(pred(state))
    except USER_CODE_ERRORS as e:  # noqa: BLE001 - model code
        raise ModelError(f"{what} raised {_exc(e)} on a state at depth {g.depth[node]}") from e


class _Fairness:
    """``model.fair`` per action, cached, and the fair actions enabled per node."""

    def __init__(self, model: Model, g: StateGraph, out: list[list[int]]) -> None:
        self.model, self.g, self.out = model, g, out
        self.cache: dict[Action, bool] = {}
        self._enabled: dict[int, tuple] = {}

    def fair(self, a: Action) -> bool:
        f = self.cache.get(a)
        if f is None:
            try:
                f = self.cache[a] = bool(self.model.fair(a))
            except USER_CODE_ERRORS as e:  # noqa: BLE001
                raise ModelError(f"{getattr(self.model, 'name', 'model')}.fair({a}) raised {_exc(e)}") from e
        return f

    def enabled(self, n: int) -> tuple:
        """The fair actions enabled at node ``n``, in action order."""
        got = self._enabled.get(n)
        if got is None:
            got = self._enabled[n] = tuple(self.g.edges[e][1] for e in self.out[n]
                                           if self.fair(self.g.edges[e][1]))
        return got


def _required(nodes: Sequence[int], taken: set, fairness: _Fairness) -> list:
    """Fair actions enabled at every one of ``nodes`` and not in ``taken``, in the
    first node's action order: what weak fairness still demands of a loop."""
    common = list(fairness.enabled(nodes[0]))
    for n in nodes[1:]:
        if not common:
            break
        here = set(fairness.enabled(n))
        common = [a for a in common if a in here]
    return [a for a in common if a not in taken]


def loop_is_fair(states: Sequence[Any], actions: Sequence[Action], model: Model) -> list:
    """The fair actions a closed walk over ``states`` (taking ``actions``) keeps
    enabled but never takes: empty iff the loop is weakly fair.  With no action,
    the loop is a stutter at ``states[0]`` and every fair action enabled there is
    returned.  Replay uses this to re-check a lasso on the model itself."""
    common: list | None = None
    for s in states:
        here = [a for a in model.actions(s) if model.fair(a)]
        common = here if common is None else [a for a in common if a in set(here)]
    taken = set(actions)
    return [a for a in (common or []) if a not in taken]


def _shortest(g: StateGraph, out: list[list[int]], inside: set, start: int,
              goal_edge: Callable[[int], bool]) -> list[int]:
    """Shortest edge path from ``start`` staying in ``inside`` whose last edge
    satisfies ``goal_edge`` (BFS in action order, so deterministic)."""
    parent: dict[int, int] = {start: -1}
    queue = deque([start])
    while queue:
        n = queue.popleft()
        for e in out[n]:
            dst = g.edges[e][2]
            if dst not in inside:
                continue
            if goal_edge(e):
                path = [e]
                while parent[n] >= 0:
                    path.append(parent[n])
                    n = g.edges[parent[n]][0]
                return path[::-1]
            if dst not in parent:
                parent[dst] = e
                queue.append(dst)
    raise AssertionError("no path inside a strongly connected component")  # pragma: no cover


def _fair_loop(g: StateGraph, out: list[list[int]], comp: set, v: int, fairness: _Fairness) -> list[int]:
    """A closed walk from ``v`` inside component ``comp`` that is weakly fair: a
    shortest cycle through ``v``, plus a detour for each fair action the walk keeps
    enabled but does not take (to an edge taking it, or to a state where it is not
    enabled; both stay in ``comp``).  Detours only shrink what is continuously
    enabled and grow what is taken, so this ends."""
    walk = _shortest(g, out, comp, v, lambda e: g.edges[e][2] == v)
    while True:
        nodes = [g.edges[e][0] for e in walk]
        need = _required(nodes, {g.edges[e][1] for e in walk}, fairness)
        if not need:
            return walk
        def done(e: int, a: Action = need[0]) -> bool:
            return g.edges[e][1] == a or a not in fairness.enabled(g.edges[e][2])
        there = _shortest(g, out, comp, v, done)
        end = g.edges[there[-1]][2]
        back = [] if end == v else _shortest(g, out, comp, end, lambda e: g.edges[e][2] == v)
        walk = walk + there + back


def check_liveness(g: StateGraph, model: Model, properties: Sequence[Property] | None = None) -> list[Lasso]:
    """Every violated ``eventually`` property among ``properties`` (default: the
    model's), each with a lasso with a shortest stem; an empty list if all hold.

    States outside the model's boundary (``g.unexpanded``) are not explored, so
    no behaviour is known to stay there: they are never a stutter."""
    props = [p for p in (model.properties() if properties is None else properties) if p.kind == EVENTUALLY]
    if not props:
        return []
    out = g.out_edges()
    fairness = _Fairness(model, g, out)
    return [lasso for p in props if (lasso := _check_one(p, g, out, fairness)) is not None]


def _check_one(p: Property, g: StateGraph, out: list[list[int]], fairness: _Fairness) -> Lasso | None:
    """The lasso with a shortest stem that violates ``p``, or None."""
    import networkx as nx

    unexpanded = set(g.unexpanded)
    goal = [_call(p.predicate, s, f"the goal of property {p.name!r}", n, g) for n, s in enumerate(g.states)]
    bad = [n for n in range(len(g.states)) if not goal[n]]
    if not bad:
        return None
    stutter = {n for n in bad if n not in unexpanded and not fairness.enabled(n)}
    sub = nx.DiGraph()
    sub.add_nodes_from(bad)
    sub.add_edges_from((src, dst) for src, _a, dst in g.edges if not goal[src] and not goal[dst])
    comp_of: dict[int, set] = {}
    for comp in sorted((sorted(c) for c in nx.strongly_connected_components(sub)), key=lambda c: c[0]):
        cset = set(comp)
        inner = [e for n in comp for e in out[n] if g.edges[e][2] in cset]
        if not inner:
            continue                      # one state, no self-loop: no behaviour stays here
        if not _required(comp, {g.edges[e][1] for e in inner}, fairness):
            for n in comp:
                comp_of[n] = cset
    target = stutter | set(comp_of)
    if not target:
        return None
    # Nodes that can reach a target without meeting the goal.
    can = set(target)
    queue = deque(sorted(target))
    while queue:
        n = queue.popleft()
        for m in sub.predecessors(n):
            if m not in can:
                can.add(m)
                queue.append(m)
    trig_cache: dict[int, bool] = {}

    def triggered(n: int) -> bool:
        if p.trigger is None:
            return True
        t = trig_cache.get(n)
        if t is None:
            t = trig_cache[n] = _call(p.trigger, g.states[n], f"the trigger of property {p.name!r}", n, g)
        return t

    lasso = _stem(g, out, can, target, triggered)
    if lasso is None:
        return None
    stem, node, trigger_at = lasso
    if node in stutter:
        loop: list[int] = []
    else:
        loop = _fair_loop(g, out, comp_of[node], node, fairness)
    unfair = [g.edges[e][1] for e in out[node]] if not loop else []
    return Lasso(p.name, stem, loop, node, trigger_at, unfair, g)


def _stem(g: StateGraph, out: list[list[int]], can: set, target: set,
          triggered: Callable[[int], bool]) -> tuple[list[int], int, int] | None:
    """A shortest path from an initial state to a target node that passes a
    triggered node after which every node can still reach a target avoiding the
    goal.  0-1 BFS over (node, phase): phase 0 walks the whole graph, a triggered
    node of ``can`` switches to phase 1 at no cost, phase 1 walks ``can`` only."""
    dist: dict[tuple[int, int], int] = {}
    parent: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {}
    dq: deque = deque()
    for n in g.initial:
        key = (n, 0)
        if key not in dist:
            dist[key], parent[key] = 0, None
            dq.append(key)
    while dq:
        key = dq.popleft()
        n, phase = key
        d = dist[key]
        if phase == 1 and n in target:
            edges: list[int] = []
            switch = 0
            cur: tuple[int, int] | None = key
            while parent[cur] is not None:
                prev, e = parent[cur]
                if e >= 0:
                    edges.append(e)
                elif switch == 0:
                    switch = len(edges)
                cur = prev
            edges.reverse()
            return edges, n, len(edges) - switch
        if phase == 0 and n in can and triggered(n):
            k1 = (n, 1)
            if dist.get(k1, d + 1) > d:
                dist[k1], parent[k1] = d, (key, -1)
                dq.appendleft(k1)
        for e in out[n]:
            dst = g.edges[e][2]
            if phase == 1 and dst not in can:
                continue
            k2 = (dst, phase)
            if k2 not in dist or dist[k2] > d + 1:
                dist[k2], parent[k2] = d + 1, (key, e)
                dq.append(k2)
    return None


# ------------------------------------------------------------------ kmc check

class CheckRun:
    """What ``kmc check`` does with ``eventually`` properties: decide up front
    whether they can be checked (no depth bound; on Spark, not from a checkpoint),
    give the one safety search a graph builder (:meth:`visitor`), on either
    engine, and check them on its graph after it.

    Properties named with ``--property`` must be checked, so anything in the way
    is a usage error; properties checked by default are skipped with a note
    instead, so that a plain ``kmc check`` of a large preset (or a resumed Spark
    run) still checks its safety properties."""

    def __init__(self, model: Model, props: Sequence[Property], named: Sequence[str], engine: str,
                 max_depth: int | None, max_states: int | None, command: str, resume: bool = False) -> None:

        self.model, self.command = model, command
        self.props = [p for p in props if p.kind == EVENTUALLY]
        self.explicit = [p.name for p in self.props if p.name in named]
        self.limit = max_states or DEFAULT_MAX_STATES
        self.skipped: str | None = None
        self.graph: StateGraph | None = None
        self.builder: GraphBuilder | None = None
        self.lassos: list[Lasso] = []
        self.seconds = 0.0
        names = ", ".join(p.name for p in self.props)
        why = None
        if engine == "spark" and resume:
            why = "they need the whole state graph, and a run resumed from a checkpoint never sees the levels before it"
            fix = "run without --resume"
        elif max_depth is not None:
            why = "a depth bound cuts behaviours short, and a cut behaviour proves nothing about what happens later"
            fix = "drop --max-depth"
        if why and self.explicit:
            one = len(self.explicit) == 1
            raise UsageError(f"eventually propert{'y' if one else 'ies'} {', '.join(self.explicit)} cannot be "
                             f"checked here: {why.replace('they need', 'it needs' if one else 'they need')}; {fix}")
        if why:
            why = why.replace("they need", "it needs" if len(self.props) == 1 else "they need")
            self.skipped = f"{names} not checked: {why} ({fix})"

    @property
    def active(self) -> bool:
        return bool(self.props) and self.skipped is None

    def refusal(self) -> str:
        one = len(self.explicit) == 1
        return (f"eventually propert{'y' if one else 'ies'} {', '.join(self.explicit)} need{'s' if one else ''} "
                f"the whole state graph, which has more than {self.limit} states; choose a smaller preset or "
                f"raise --max-states (now {self.limit})")

    def visitor(self) -> GraphBuilder | None:
        """The graph builder to pass to the one search (None: nothing to build).
        Named properties refuse a graph beyond the limit as soon as it is reached;
        properties checked by default give up the graph and are skipped."""
        if not self.active:
            return None
        self.builder = GraphBuilder(self.limit, self.command, strict=bool(self.explicit),
                                    refusal=self.refusal() if self.explicit else None)
        return self.builder

    def before_search(self) -> None:
        """Nothing any more: the graph is built during the search (see visitor);
        kept for callers of the old two-pass protocol."""

    def after_search(self, result: Any, keep_going: bool) -> list[Violation]:
        """Check the properties on the graph the search built; the violations
        found, as lassos.  Properties checked by default are checked only after an
        exhaustive safety search of a state space that fits the limit.  Named
        properties are checked whatever stopped the safety search: if it stopped
        early (the first violation, a bound), the graph is explored on its own."""
        if not self.active:
            return []
        st = result.stats
        if st.stopped_by is not None:
            # The user gave the run a time budget or stopped it: exploring the graph
            # again on its own would overrun it.
            self.skipped = (f"{', '.join(p.name for p in self.props)} not checked: the search was stopped "
                            f"({st.stopped_by})")
            return []
        builder = self.builder
        if builder is not None and st.complete and not builder.overflow:
            self.graph = builder.graph
        elif self.explicit:
            self._explore()
        else:
            names = ", ".join(p.name for p in self.props)
            if not st.complete:
                why = ("the first violation stopped the search (--continue checks them too)"
                       if result.violations and not keep_going else "the search stopped at its bounds")
                self.skipped = f"{names} not checked: {why}"
                return []
            if st.distinct > self.limit or builder is None or builder.overflow:
                self.skipped = (f"{names} not checked: the state graph has {st.distinct} states, more than "
                                f"{self.limit} (raise --max-states, or name them with --property)")
                return []
        t = time.perf_counter()
        self.lassos = check_liveness(self.graph, self.model, self.props)
        self.seconds += time.perf_counter() - t
        return [to_violation(v) for v in self.lassos]

    def _explore(self) -> None:
        t = time.perf_counter()
        try:
            self.graph = explore(self.model, max_states=self.limit)
        except UsageError:
            raise UsageError(self.refusal()) from None
        self.seconds = time.perf_counter() - t

    def summary(self) -> str:
        if self.skipped:
            return f"liveness: {self.skipped}"
        g = self.graph
        assert g is not None
        n = len(self.props)
        bad = len(self.lassos)
        verdict = "all hold" if not bad else f"{bad} violated"
        partial = "" if g.complete else "; states outside the model's boundary are not expanded"
        return (f"liveness: {n} eventually propert{'y' if n == 1 else 'ies'} under weak fairness on the state "
                f"graph ({len(g.states)} states, {len(g.edges)} edges, {self.seconds:.2f} s): {verdict}{partial}")

    def as_dict(self) -> dict[str, Any]:
        return {"properties": [p.name for p in self.props], "skipped": self.skipped,
                "graph_states": len(self.graph.states) if self.graph is not None else None,
                "violated": [v.property for v in self.lassos]}
