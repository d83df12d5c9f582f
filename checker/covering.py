"""Covering sets: paths from the initial states that together take every transition
of a state graph at least once, so that a conformance run offers the
implementation every action the model enables in every reachable state.

:func:`covering_set` is greedy and deterministic; :func:`fewest_steps` is the exact
lower bound (a minimum-cost flow) it is measured against.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from checker.graph import StateGraph, explore  # noqa: F401 - explore: the doctests
from checker.model import Action, State

__all__ = ["CoveringSet", "covering_set", "fewest_steps"]



@dataclass
class CoveringSet:
    """Paths from the initial states that together take every transition of ``graph``.

    ``paths`` holds edge indices; ``traces`` the same as ``(initial state, actions)``.
    Every step takes one transition, so ``len(graph.edges)`` steps is a lower bound.
    """

    graph: StateGraph
    paths: list[list[int]]

    @property
    def traces(self) -> list[tuple[State, list[Action]]]:
        g = self.graph
        out = []
        for p in self.paths:
            out.append((g.states[g.edges[p[0]][0]] if p else None, [g.edges[e][1] for e in p]))
        return out

    @property
    def steps(self) -> int:
        return sum(len(p) for p in self.paths)

    @property
    def covered(self) -> int:
        return len({e for p in self.paths for e in p})


def covering_set(graph: StateGraph, max_length: int | None = None) -> CoveringSet:
    """A greedy covering set of ``graph``: each path starts with a shortest path from an
    initial state to the source of the first transition not yet taken (in exploration
    order, so the shallowest), then follows transitions not yet taken while there are
    any; when it is stuck it walks to the nearest state that has one, unless starting
    a new path from an initial state would get to one sooner (or the path has
    ``max_length`` steps).  Deterministic: ties go to exploration order.

    >>> from checker.model import Model, action
    >>> class Diamond(Model):       # 0 -a-> 1, 0 -b-> 2, 1 -c-> 3, 2 -d-> 3
    ...     def init_states(self): return [0]
    ...     def actions(self, s): return {0: [action("a"), action("b")], 1: [action("c")], 2: [action("d")]}.get(s, [])
    ...     def next_state(self, s, a): return {"a": 1, "b": 2, "c": 3, "d": 3}[a.name]
    >>> c = covering_set(explore(Diamond()))
    >>> [[str(a) for a in acts] for _, acts in c.traces], c.steps, c.covered
    ([['a()', 'c()'], ['b()', 'd()']], 4, 4)
    """
    edges = graph.edges
    out = graph.out_edges()
    covered = bytearray(len(edges))
    left = [len(o) for o in out]            # transitions not yet taken, per state
    remaining = len(edges)
    paths: list[list[int]] = []
    cursor = 0

    def take(e: int, path: list[int]) -> int:
        nonlocal remaining
        path.append(e)
        if not covered[e]:
            covered[e] = 1
            remaining -= 1
            left[edges[e][0]] -= 1
        return edges[e][2]

    def nearest(start: int, limit: int) -> list[int] | None:
        """Edges of a shortest path from ``start`` to a state with a transition not yet
        taken, if there is one within ``limit`` steps."""
        seen = {start: -1}
        frontier = deque([(start, 0)])
        while frontier:
            n, dist = frontier.popleft()
            if left[n] and n != start:
                route = []
                while n != start:
                    e = seen[n]
                    route.append(e)
                    n = edges[e][0]
                return route[::-1]
            if dist >= limit:
                continue
            for e in out[n]:
                m = edges[e][2]
                if m not in seen:
                    seen[m] = e
                    frontier.append((m, dist + 1))
        return None

    while remaining:
        while covered[cursor]:
            cursor += 1
        src = edges[cursor][0]
        path: list[int] = []
        for e in _path_edges(graph, src):
            take(e, path)
        node = src
        while True:
            # Prefer a transition that leads on to more untaken ones (a dead end ends the path).
            todo = next((e for e in out[node] if not covered[e] and left[edges[e][2]] - (edges[e][2] == node) > 0),
                        None)
            if todo is None:
                todo = next((e for e in out[node] if not covered[e]), None)
            if todo is not None:
                node = take(todo, path)
                continue
            if not remaining or (max_length is not None and len(path) >= max_length):
                break
            while covered[cursor]:
                cursor += 1
            restart = graph.depth[edges[cursor][0]]
            route = nearest(node, restart)
            if route is None:
                break
            for e in route:
                node = take(e, path)
        paths.append(path)
    return CoveringSet(graph, paths)


def fewest_steps(graph: StateGraph) -> int:
    """The fewest steps any covering set of ``graph`` can take: the minimum-cost flow
    in which every transition is taken at least once and every state other than an
    initial one is left at most as often as it is entered (a path may end anywhere).
    Such a flow splits into paths from the initial states, and the cycles it also
    splits into share states with them, so they splice in: the bound is exact.
    (networkx's network simplex; about a second for 3,000 transitions.)

    >>> from checker.model import Model, action
    >>> class Fork(Model):          # 0 -a-> 1, 0 -b-> 2: two paths, one step each
    ...     def init_states(self): return [0]
    ...     def actions(self, s): return [action("a"), action("b")] if s == 0 else []
    ...     def next_state(self, s, a): return 1 if a.name == "a" else 2
    >>> fewest_steps(explore(Fork()))
    2
    """
    import networkx as nx

    h = nx.DiGraph()
    base = [0] * len(graph.states)          # entries - exits when every transition is taken once
    for src, _a, dst in graph.edges:
        base[dst] += 1
        base[src] -= 1
    source, sink = ("start",), ("end",)
    for n, b in enumerate(base):
        h.add_node(n, demand=-b)
        h.add_edge(n, sink, weight=0)       # paths that end here
    for n in graph.initial:
        h.add_edge(source, n, weight=0)     # paths that start here
    h.add_edge(sink, source, weight=0)
    for src, _a, dst in graph.edges:
        if src != dst and not h.has_edge(src, dst):
            h.add_edge(src, dst, weight=1)  # each extra pass costs a step
    cost = nx.min_cost_flow_cost(h)
    return len(graph.edges) + cost


def _path_edges(graph: StateGraph, node: int) -> list[int]:
    """Edge indices of the shortest path from an initial state to ``node``."""
    path = []
    while graph.parent[node] >= 0:
        e = graph.parent[node]
        path.append(e)
        node = graph.edges[e][0]
    return path[::-1]
