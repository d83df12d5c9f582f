"""The state graph as something to look at: GraphML attributes and Graphviz DOT.

``kmc graph`` writes what :func:`labelled` returns; node labels show only the
fields that differ from the first initial state, so a graph of a few hundred
states stays readable.  This is a rendering layer above :mod:`checker.graph`
(which only explores) and beside :mod:`checker.trace` (whose views it reuses).
"""

from __future__ import annotations

import json
from typing import Any

from checker.errors import ModelError, UsageError
from checker.errors import describe_exception as _exc
from checker.fingerprint import format_fingerprint
from checker.graph import StateGraph
from checker.model import Model, State
from checker.statediff import flatten, jsonable
from checker.staterender import render_state, show_value
from checker.trace import state_view

__all__ = ["LABEL_LINES", "labelled", "node_label", "write_dot"]

LABEL_LINES = 8      # a node label shows at most this many changed fields


def _flat_view(model: Model, state: State) -> dict[str, Any]:
    return flatten(state_view(model.describe(state)))


def node_label(n: int, view: dict[str, Any], base: dict[str, Any], initial: bool) -> str:
    """A compact label: the node id, then the fields that differ from the first
    initial state (all equal is the initial state itself), at most LABEL_LINES.

    >>> node_label(3, {"x": 1, "y": 0}, {"x": 0, "y": 0}, False)
    '#3\\nx=1'
    """
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
        raise ModelError(f"labelling the state graph: describe() or fair() raised {_exc(e)}") from e


def _labelled(g: StateGraph, model: Model, out: Any) -> Any:
    initial = set(g.initial)
    base = _flat_view(model, g.states[g.initial[0]]) if g.initial else {}
    for n, s in enumerate(g.states):
        view = state_view(model.describe(s))
        out.add_node(n, label=node_label(n, flatten(view), base, n in initial),
                     state=json.dumps(view, sort_keys=False, ensure_ascii=False), depth=g.depth[n],
                     initial=n in initial, fingerprint=format_fingerprint(g.fingerprints[n]))
    for src, a, dst in g.edges:
        out.add_edge(src, dst, label=str(a), action=a.name,
                     args=json.dumps({str(k): jsonable(v) for k, v in a.args}), fair=bool(model.fair(a)))
    return out


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\l") + '"'


def write_dot(h: Any, f: Any) -> None:
    """Graphviz DOT text for a graph made by :func:`labelled` (no pydot needed):
    left-aligned node labels, initial states double-bordered, unfair actions
    dashed.  ``dot -Tsvg`` draws it."""
    name = h.graph.get("name", "model")
    f.write(f"digraph {_dot_id(name)} {{\n")
    f.write('  node [shape=box, fontname="monospace", fontsize=10];\n')
    f.write('  edge [fontname="monospace", fontsize=9];\n')
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
