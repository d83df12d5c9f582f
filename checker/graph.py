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

from checker.bfs import _fingerprint_fn
from checker.errors import ModelError, UsageError
from checker.model import Action, Model, State

__all__ = ["DEFAULT_MAX_STATES", "StateGraph", "explore", "labelled", "node_label", "write_dot"]

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
    fp = _fingerprint_fn(model)
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
        from checker.trace import _exc
        where = "init_states()" if n < 0 else f"expanding a state at depth {g.depth[n]}"
        raise ModelError(f"exploring the state graph: {where} raised {_exc(e)}") from e
    return g


# ------------------------------------------------------------------ export

LABEL_LINES = 8      # a node label shows at most this many changed fields


def _flat_view(model: Model, state: State) -> dict[str, Any]:
    from checker.trace import _view, flatten
    return flatten(_view(model.describe(state)))


def node_label(n: int, view: dict[str, Any], base: dict[str, Any], initial: bool) -> str:
    """A compact label: the node id, then the fields that differ from the first
    initial state (all equal is the initial state itself), at most LABEL_LINES.

    >>> node_label(3, {"x": 1, "y": 0}, {"x": 0, "y": 0}, False)
    '#3\\nx=1'
    """
    from checker.trace import show_value
    head = f"#{n}" + (" initial" if initial else "")
    changed = [f"{k}={show_value(v)}" for k, v in view.items() if base.get(k, _MISSING) != v]
    changed += [f"{k} gone" for k in base if k not in view]
    if len(changed) > LABEL_LINES:
        changed = changed[:LABEL_LINES - 1] + [f"... {len(changed) - LABEL_LINES + 1} more"]
    return "\n".join([head, *changed])


_MISSING = object()


def labelled(g: StateGraph, model: Model) -> Any:
    """The graph as a ``networkx.MultiDiGraph`` with scalar attributes only (what
    GraphML can hold): per node ``label`` (compact), ``state`` (the full
    ``describe()`` view as JSON), ``depth``, ``initial``, ``fingerprint``; per edge
    ``label`` (the action as text), ``action`` (its name), ``args`` (JSON) and
    ``fair`` (``model.fair``)."""
    import networkx as nx

    out = nx.MultiDiGraph(name=getattr(model, "name", "model"))
    try:
        return _labelled(g, model, out)
    except (UsageError, ModelError):
        raise
    except Exception as e:  # noqa: BLE001 - describe() and fair() are model code
        from checker.trace import _exc
        raise ModelError(f"labelling the state graph: describe() or fair() raised {_exc(e)}") from e


def _labelled(g: StateGraph, model: Model, out: Any) -> Any:
    import json

    from checker.fingerprint import format_fingerprint
    from checker.trace import _jsonable, _view, flatten

    initial = set(g.initial)
    base = _flat_view(model, g.states[g.initial[0]]) if g.initial else {}
    for n, s in enumerate(g.states):
        view = _view(model.describe(s))
        out.add_node(n, label=node_label(n, flatten(view), base, n in initial),
                     state=json.dumps(view, sort_keys=False, ensure_ascii=False), depth=g.depth[n],
                     initial=n in initial, fingerprint=format_fingerprint(g.fingerprints[n]))
    for src, a, dst in g.edges:
        out.add_edge(src, dst, label=str(a), action=a.name,
                     args=json.dumps({str(k): _jsonable(v) for k, v in a.args}), fair=bool(model.fair(a)))
    return out


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\l") + '"'


def write_dot(h: Any, f: Any) -> None:
    """Graphviz DOT text for a graph made by :func:`labelled` (no pydot needed):
    left-aligned node labels, initial states double-bordered, unfair actions
    dashed.  ``dot -Tsvg`` draws it."""
    import json

    name = h.graph.get("name", "model")
    f.write(f"digraph {_dot_id(name)} {{\n")
    f.write('  node [shape=box, fontname="monospace", fontsize=10];\n')
    f.write('  edge [fontname="monospace", fontsize=9];\n')
    from checker.trace import render_state
    for n, d in h.nodes(data=True):
        # An initial state's label shows no field (the others show what differs from
        # the first one): its whole state is its tooltip.
        full = "\n".join(render_state(json.loads(d["state"]), indent="", width_=100))
        extra = f", peripheries=2, style=bold, tooltip={_dot_id(full)}" if d["initial"] else ""
        f.write(f"  {n} [label={_dot_id(d['label'] + chr(10))}{extra}];\n")
    for src, dst, d in h.edges(data=True):
        style = "" if d["fair"] else ", style=dashed"
        f.write(f"  {src} -> {dst} [label={_dot_id(d['label'])}{style}];\n")
    f.write("}\n")
