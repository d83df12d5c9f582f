"""A saved trace as one self-contained HTML page (``kmc replay --html``, the run report).

The page is the explorer's front end with every step embedded: the steps, each
state's ``describe()`` view with what its action changed highlighted, the verdict of
every ``always`` property at each step, and the model's timeline when it has one.  It
needs no server and no network, so it can be attached to a bug report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from checker.explorer import Explorer
from checker.fingerprint import parse_fingerprint
from checker.model import Model, Property
from checker.trace import Trace
from checker.webpage import static_page


def trace_bundle(trace: Trace, model: Model, properties: Sequence[Property] | None = None) -> dict[str, Any]:
    """The data of the page: ``Explorer.static_bundle`` of the trace's path, plus the trace."""
    ex = Explorer(model, properties=properties, config=trace.config, preset=trace.preset,
                  title=f"{model.name} {model.version}: {trace.property_name}")
    path = ex.path_of([s.action for s in trace.steps[1:]], parse_fingerprint(trace.steps[0].fingerprint))
    bundle = ex.static_bundle(path)
    bundle["trace"] = {"name": Path(trace.path).name, "property": trace.property_name,
                       "rationale": trace.property.get("rationale", ""), "created_by": trace.created_by,
                       "loop_start": trace.loop_start}
    return bundle


def trace_page(trace: Trace, model: Model, properties: Sequence[Property] | None = None) -> str:
    bundle = trace_bundle(trace, model, properties)
    return static_page(bundle, title=f"kmc replay: {bundle['title']} ({bundle['trace']['name']})")
