"""The explored state graph, kept whole: every distinct state and every transition.

The BFS engines keep only fingerprints and parent links, which is all a safety check
needs.  Liveness (fair cycles), graph export and conformance covering sets need the
edges too, so this module explores a *small* configuration again and keeps them.
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
from checker.fingerprint import fingerprint_fn
from checker.model import Action, Model, State

__all__ = ["DEFAULT_MAX_STATES", "StateGraph", "explore"]

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


def explore(model: Model, max_states: int = DEFAULT_MAX_STATES, command: str = "") -> StateGraph:
    """Explore every reachable state of ``model``; refuse beyond ``max_states`` states.

    States outside ``model.within_boundary`` are kept but not expanded (as in the BFS
    engine) and make ``complete`` False.
    """
    fp = fingerprint_fn(model)
    g = StateGraph()
    index: dict[int, int] = {}

    def add(s: State, depth: int, parent: int) -> int:
        h = fp(s)
        n = index.get(h)
        if n is None:
            if len(g.states) >= max_states:
                hint = f" (reproduce: {command})" if command else ""
                raise UsageError(f"the state graph has more than {max_states} states; choose a smaller "
                                 f"configuration or raise the limit{hint}")
            n = index[h] = len(g.states)
            g.states.append(s)
            g.depth.append(depth)
            g.parent.append(parent)
            g.fingerprints.append(h)
        return n

    n = -1
    try:
        for s in model.init_states():
            i = add(s, 0, -1)
            if i not in g.initial:
                g.initial.append(i)
        n = 0
        while n < len(g.states):
            s = g.states[n]
            if not model.within_boundary(s):
                g.complete = False
                g.unexpanded.append(n)
            else:
                for a in model.actions(s):
                    t = model.next_state(s, a)
                    dst = add(t, g.depth[n] + 1, len(g.edges))
                    g.edges.append((n, a, dst))
            n += 1
    except (UsageError, ModelError):
        raise
    except Exception as e:  # noqa: BLE001 - model code broke the contract
        where = "init_states()" if n < 0 else f"expanding a state at depth {g.depth[n]}"
        raise ModelError(f"exploring the state graph: {where} raised {_exc(e)}") from e
    return g
