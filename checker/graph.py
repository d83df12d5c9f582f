"""The explored state graph, kept whole: every distinct state and every transition.

The BFS engines keep only fingerprints and parent links, which is all a safety check
needs.  Liveness (fair cycles), graph export and conformance covering sets need the
edges too: :class:`GraphBuilder` is the search core's visitor that keeps them, for a
*small* configuration.
Nodes are numbered in the local engine's visit order (initial states first, then
level by level in ``actions`` order), so node ids, edge order and everything derived
from them are deterministic.

>>> from checker.model import Model, action
>>> class Counter(Model):
...     def init_states(self): return [0]
...     def actions(self, s): return [action("Inc")] if s < 2 else [action("Reset")]
...     def next_state(self, s, a): return s + 1 if a.name == "Inc" else 0
>>> g = explore(Counter())
>>> g.states, g.edges
([0, 1, 2], [(0, Action(name='Inc', args=()), 1), (1, Action(name='Inc', args=()), 2), (2, Action(name='Reset', args=()), 0)])
>>> g.path_to(2)
[(0, Action(name='Inc', args=()), 1), (1, Action(name='Inc', args=()), 2)]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checker.errors import ModelError, UsageError
from checker.errors import describe_exception as _exc
from checker.model import Action, Model, State
from checker.search import Search, Settings, Visitor

__all__ = ["DEFAULT_MAX_STATES", "GraphBuilder", "StateGraph", "explore"]

DEFAULT_MAX_STATES = 200_000


@dataclass
class StateGraph:
    """States by node id, transitions as ``(src, action, dst)`` in exploration order."""

    states: list = field(default_factory=list)
    initial: list = field(default_factory=list)
    edges: list = field(default_factory=list)
    depth: list = field(default_factory=list)         # BFS depth of each node
    parent: list = field(default_factory=list)        # edge index that first reached each node, -1 initial
    fingerprints: list = field(default_factory=list)
    complete: bool = True                             # False when a state lies outside the model's boundary
    unexpanded: list = field(default_factory=list)    # nodes outside the boundary (kept, not expanded)

    def out_edges(self) -> list[list[int]]:
        """Edge indices leaving each node, in action order."""
        out: list[list[int]] = [[] for _ in self.states]
        for i, (src, _a, _dst) in enumerate(self.edges):
            out[src].append(i)
        return out

    def path_to(self, node: int) -> list[tuple[int, Action, int]]:
        """A shortest path of edges from an initial state to ``node``."""
        path = []
        while self.parent[node] >= 0:
            e = self.edges[self.parent[node]]
            path.append(e)
            node = e[0]
        return path[::-1]

    def to_networkx(self) -> Any:
        """A ``networkx.MultiDiGraph`` with ``state`` on nodes and ``action`` on edges."""
        import networkx as nx

        g = nx.MultiDiGraph()
        initial = set(self.initial)
        for n, s in enumerate(self.states):
            g.add_node(n, state=s, initial=n in initial, depth=self.depth[n])
        for src, a, dst in self.edges:
            g.add_edge(src, dst, action=a)
        return g


class GraphBuilder(Visitor):
    """The visitor of :mod:`checker.search` that keeps the whole graph: what
    :func:`explore` runs, and what ``kmc check`` passes to its one search when it
    has ``eventually`` properties to check.  Beyond ``max_states`` states it
    raises UsageError (``strict``), or stops recording and sets ``overflow``."""

    def __init__(self, max_states: int = DEFAULT_MAX_STATES, command: str = "", strict: bool = True,
                 refusal: str | None = None) -> None:
        self.graph = StateGraph()
        self.refusal = refusal
        self.index: dict[int, int] = {}
        self.max_states = max_states
        self.command = command
        self.strict = strict
        self.overflow = False

    @property
    def done(self) -> bool:
        return self.overflow

    def state(self, fp: int, state: State, depth: int, parent: int | None) -> None:
        g = self.graph
        if self.overflow:
            return
        if len(g.states) >= self.max_states:
            if self.strict and self.refusal:
                raise UsageError(self.refusal)
            if self.strict:
                hint = f" (reproduce: {self.command})" if self.command else ""
                raise UsageError(f"the state graph has more than {self.max_states} states; choose a smaller "
                                 f"configuration or raise the limit{hint}")
            self.overflow = True
            self.graph = StateGraph(complete=False)
            self.index = {}
            return
        n = self.index[fp] = len(g.states)
        g.states.append(state)
        g.depth.append(depth)
        g.parent.append(-1 if parent is None else len(g.edges))
        g.fingerprints.append(fp)
        if parent is None:
            g.initial.append(n)

    def transition(self, src: int, act: Action, dst: int) -> None:
        if not self.overflow:
            index = self.index
            self.graph.edges.append((index[src], act, index[dst]))

    def unexpanded(self, fp: int) -> None:
        if not self.overflow:
            self.graph.complete = False
            self.graph.unexpanded.append(self.index[fp])


def explore(model: Model, max_states: int = DEFAULT_MAX_STATES, command: str = "") -> StateGraph:
    """Explore every reachable state of ``model``; refuse beyond ``max_states`` states.

    States outside ``model.within_boundary`` are kept but not expanded (as in the BFS
    engine) and make ``complete`` False.  The search is :class:`checker.search.Search`
    with no property and no deadlock check, and a :class:`GraphBuilder`.
    """
    builder = GraphBuilder(max_states, command)
    try:
        Search(model, [], Settings(check_deadlock=False), builder).run()
    except ModelError as e:
        cause = e.__cause__
        if cause is None or isinstance(cause, (UsageError, ModelError)):
            raise
        depth = getattr(e, "depth", None)
        where = "init_states()" if depth is None else f"expanding a state at depth {depth}"
        raise ModelError(f"exploring the state graph: {where} raised {_exc(cause)}") from cause
    return builder.graph
