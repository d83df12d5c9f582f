"""``kmc graph``: export the explored state graph of a small configuration.

``kmc graph --preset tiny --format dot -o tiny.dot`` writes every reachable state
and every transition (checker.graph.explore) as Graphviz DOT text, or as GraphML
(networkx.write_graphml) for tools such as Gephi, yEd or networkx itself.  Node
labels are compact (the fields that differ from the initial state); GraphML nodes
also carry the whole ``describe()`` view as JSON.  Edges carry the action.

A graph too large for its format is refused, not cut: a DOT drawing of more than
a few thousand nodes is unreadable (and Graphviz takes minutes to lay it out), and
GraphML holds every state's whole view, 3-4 KB per Kafka state.  The
limits are defaults; ``--max-states N`` sets another.  An existing output file is
never overwritten without ``--force``.
"""

from __future__ import annotations

import argparse
import io
from typing import Any

from checker.cmdline import (
    EXIT_CODES, EXIT_OK, build_model, config_family, path_arg, positive, resolve_config, wrap,
)
from checker.errors import UsageError
from checker.output import check_output, write_output

LIMITS = {"dot": 2000, "graphml": 50_000}
WHY = {
    "dot": "a DOT drawing beyond a few thousand nodes is unreadable and slow to lay out",
    "graphml": ("GraphML stores every state's whole view (3-4 KB a Kafka state: 141 MB for the 39675 states "
                "of preset small)"),
}


def register(sub: Any, fmt: Any) -> None:

    p = sub.add_parser(
        "graph", help="export the explored state graph of a small configuration (GraphML or DOT)",
        allow_abbrev=False, formatter_class=fmt, epilog=EXIT_CODES,
        description=wrap("Explore every reachable state of a small configuration, keeping every transition, "
                          "and write the graph: nodes labelled with the fields that differ from the initial "
                          "state (GraphML also stores the whole state), edges with their actions, initial "
                          "states marked (DOT: double border; unfair actions dashed). Refuses a graph too "
                          f"large for its format (defaults: dot {LIMITS['dot']}, graphml {LIMITS['graphml']} "
                          "states)."))
    p.add_argument("--model", metavar="NAME|module:attr", help="model family (default: the registered model)")
    p.add_argument("--preset", metavar="P", help="configuration preset (default: the family's default preset)")
    p.add_argument("--config", metavar="FILE.toml", type=path_arg,
                   help="TOML file with preset, model and key = value lines")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                   help="override one parameter (repeatable)")
    p.add_argument("--format", required=True, choices=sorted(LIMITS), help="graphml or dot")
    p.add_argument("-o", "--output", metavar="FILE", type=path_arg,
                   help="write here (default, or -: standard output)")
    p.add_argument("--force", action="store_true",
                   help="overwrite FILE if it exists (a regular file, never --config or a link)")
    p.add_argument("--max-states", metavar="N", type=positive,
                   help="refuse a graph of more than N states (default: the format's limit)")
    p.set_defaults(func=cmd_graph)


def cmd_graph(args: argparse.Namespace, command: str) -> int:
    import sys

    import networkx as nx

    from checker.config import load_config_file, parse_set
    from checker.graph import explore
    from checker.graphview import labelled, write_dot

    fmt = args.format
    file_cfg = load_config_file(args.config) if args.config else None
    parse_set(args.set)
    if args.output == "-":     # the usual name of standard output, where the graph goes by default
        args.output = None
    if args.output:
        check_output(args.output, args.force, reads=[("--config", args.config)])
    family, _ref = config_family(args.model, file_cfg)
    preset, config = resolve_config(args, family, file_cfg)
    model = build_model(family, config)
    if args.output:     # again, now that the model's module is loaded: never its source
        check_output(args.output, args.force, reads=[("--config", args.config)])
    limit = args.max_states or LIMITS[fmt]
    try:
        g = explore(model, max_states=limit)
    except UsageError:
        smaller = " (e.g. --preset tiny)" if "tiny" in family.presets and preset != "tiny" else ""
        raise UsageError(f"the state graph of preset {preset} has more than {limit} states, too many for "
                         f"{fmt}: {WHY[fmt]}; choose a smaller preset{smaller} or raise --max-states "
                         f"(now {limit})") from None
    h = labelled(g, model)
    if fmt == "dot":
        text = io.StringIO()
        write_dot(h, text)
        data = text.getvalue().encode()
    else:
        buf = io.BytesIO()
        nx.write_graphml(h, buf)
        data = buf.getvalue()
    where = "standard output"
    if args.output:
        write_output(args.output, data, args.force, reads=[("--config", args.config)])
        where = args.output
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    partial = "" if g.complete else f"; {len(g.unexpanded)} states outside the model's boundary not expanded"
    print(f"kmc graph: preset {preset}: {len(g.states)} states, {len(g.edges)} transitions, "
          f"{len(g.initial)} initial, depth {max(g.depth, default=0)}{partial}; {fmt} ({len(data):,} bytes) "
          f"written to {where}", file=sys.stderr)
    return EXIT_OK
