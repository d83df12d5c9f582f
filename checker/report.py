"""What ``kmc check`` found, as one object that renders both the human text and
the ``--json`` document, so the two can never disagree.

``kmc check`` is three steps (see :mod:`checker.cli`): resolve the command line
into a :class:`CheckPlan` (family, configuration, model, properties, engine),
run the plan (the search, liveness, the traces saved), and render the
:class:`Report`.  The JSON keys and their order are part of the command's
contract (scripts read them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from checker.cmdline import count, para, reopen_args, width
from checker.coverage import never_enabled_line, vocabulary
from checker.model import SOMETIMES, Property
from checker.result import BOUNDED, INTERRUPTED, OK, TIME_LIMIT, CheckResult
from checker.staterender import fill
from checker.trace import DEADLOCK_RATIONALE, trace_label

__all__ = ["CheckPlan", "Report", "JSON_ORDER", "violation_lines", "stop_reason"]

JSON_ORDER = ["distinct", "generated", "depth", "seconds", "states_per_second", "peak_memory_bytes",
              "verdict", "violated_property", "violated_properties", "trace_path", "trace_paths",
              "witnesses", "action_counts", "complete", "stopped_by", "violations", "model", "model_version",
              "family", "preset", "config", "engine", "liveness"]


@dataclass
class CheckPlan:
    """A ``kmc check`` command line resolved: everything the run needs, checked."""

    family: Any
    family_ref: str
    preset: str
    config: dict
    custom: bool
    model: Any
    props: list                 # what is checked (after --property)
    model_props: list           # what the model declares
    user_props: list            # from --invariants
    check_deadlock: bool
    engine: str                 # "local" or "spark"
    live: Any                   # checker.liveness.CheckRun
    command: str
    invariants: list = field(default_factory=list)   # the --invariants files, as given

    @property
    def engine_props(self) -> list:
        """The properties the engines check: the safety ones (liveness is separate)."""
        return [p for p in self.props if p not in self.live.props]

    @property
    def label(self) -> str:
        return trace_label(self.preset, self.custom)


@dataclass
class Report:
    """The outcome of a run: the plan, the engine's result (liveness lassos
    included), and the trace saved for each violation that has a path."""

    plan: CheckPlan
    result: CheckResult
    traces: dict = field(default_factory=dict)     # id(violation) -> trace path
    keep_going: bool = False

    @property
    def trace_paths(self) -> list[str]:
        return [self.traces[id(v)] for v in self.result.violations if id(v) in self.traces]

    def violated(self) -> list[str]:
        return list(dict.fromkeys(v.property for v in self.result.violations))

    # ------------------------------------------------------------------ text

    def text(self) -> str:
        """What ``kmc check`` prints after the search (the header comes before it)."""
        plan, result = self.plan, self.result
        st = result.stats
        lines = [f"distinct states: {st.distinct}  generated: {st.generated}  depth: {st.depth}",
                 f"time: {st.seconds:.2f} s  ({st.states_per_second:,.0f} states/s)  "
                 f"peak memory: {st.peak_memory_bytes / 2**20:.1f} MiB"]
        if st.action_counts:
            items = [f"{k}={v}," for k, v in sorted(st.action_counts.items())]
            items[-1] = items[-1].rstrip(",")
            lines += fill("actions: ", items, " ", width(), "         ")
        coverage = never_enabled_line(result, vocabulary(plan.model, plan.family))
        if coverage:
            lines.append(para("", coverage, 4))
        unreached = []
        for name, depth in sorted(st.witnesses.items()):
            if depth is not None:
                lines.append(f"witness {name}: reached at depth {depth}")
            elif st.complete:
                lines.append(f"witness {name}: NOT reached")
            else:
                unreached.append(name)
        if unreached:
            why = ("the first violation stopped the search; --continue goes on"
                   if result.violations and not self.keep_going else stop_reason(st))
            lines.append(para("", f"witnesses not reached yet ({why}): {', '.join(unreached)}", 4))
        if plan.live.props:
            lines.append(para("", plan.live.summary(), 4))
        by_name = {p.name: p for p in plan.props}
        for v in result.violations:
            prop = by_name.get(v.property)
            lines.append("")
            lines.append(f"VIOLATED: {v.property} ({v.kind}{', step' if prop is not None and prop.step else ''})")
            lines += violation_lines(v, prop)
            path = self.traces.get(id(v))
            if path is not None:
                loop = "" if v.loop_start is None else f" (a lasso: the loop starts at step {v.loop_start})"
                lines.append(f"  trace: {count(len(v.path), 'state')}, {count(len(v.path) - 1, 'action')}{loop}, "
                             f"saved to {path}")
                again = reopen_args(str(path), plan.family_ref, plan.invariants)
                lines.append(f"  replay it: kmc replay {again}")
                lines.append(f"  explore it: kmc explore {again}")
            elif v.kind == SOMETIMES and not v.message:
                lines.append("  the witness state was never reached, so the 'always' properties may hold vacuously")
        lines.append("")
        if result.verdict == OK:
            unchecked = plan.live.props and plan.live.skipped
            lines.append(f"verdict: OK: every property {'checked ' if unchecked else ''}holds on all {st.distinct} "
                         f"reachable states{' and every witness was reached' if st.witnesses else ''}"
                         f"{'; not checked: ' + ', '.join(p.name for p in plan.live.props) if unchecked else ''}")
        elif result.verdict == BOUNDED:
            until = "within the bounds" if st.stopped_by is None else f"before {stop_reason(st)}"
            lines.append(f"verdict: BOUNDED: no violation {until}; the search was not exhaustive "
                         f"({count(st.distinct, 'state')}, depth {st.depth})")
        else:
            lines.append(f"verdict: VIOLATED: {', '.join(self.violated())}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ JSON

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` document, keys in :data:`JSON_ORDER`."""
        plan, result = self.plan, self.result
        paths = self.trace_paths
        model = plan.model
        doc = {
            **result.stats.as_dict(),
            "verdict": result.verdict,
            "violated_property": result.violations[0].property if result.violations else None,
            "violated_properties": [v.property for v in result.violations],
            "trace_path": paths[0] if paths else None,
            "trace_paths": paths,
            "violations": [{"property": v.property, "kind": v.kind, "message": v.message,
                            "steps": len(v.path), "trace_path": self.traces.get(id(v)),
                            **({"loop_start": v.loop_start} if v.loop_start is not None else {})}
                           for v in result.violations],
            "stopped_by": result.stats.stopped_by,
            "liveness": plan.live.as_dict() if plan.live.props else None,
            "model": model.name,
            "model_version": str(model.version),
            "family": plan.family_ref,
            "preset": plan.preset,
            "config": plan.config,
            "engine": getattr(result, "engine", None) or {"engine": "local"},
        }
        return {k: doc[k] for k in JSON_ORDER}


def stop_reason(stats: Any) -> str:
    """Why a search that is not exhaustive stopped, for the summary's last lines."""
    if stats.stopped_by == TIME_LIMIT:
        return f"the time limit ran out (--time-limit, after {stats.seconds:,.0f} s)"
    if stats.stopped_by == INTERRUPTED:
        return f"it was interrupted (Ctrl-C, after {stats.seconds:,.0f} s)"
    return "the search stopped at the bounds"


def violation_lines(v: Any, prop: Property | None) -> list[str]:
    """What was violated, where, and why: the engine's message without the
    property name and rationale it repeats, then the rationale, wrapped."""
    msg = v.message or ""
    why = prop.rationale if prop is not None else ""
    if v.kind == "deadlock" and not why:
        why = DEADLOCK_RATIONALE
    if msg.startswith(v.property + " "):
        msg = msg[len(v.property) + 1:]
    if why and msg.endswith(": " + why):
        msg = msg[:-len(why) - 2]
    last = len(v.path) - 1
    if v.path:
        m = re.fullmatch(r"is broken by the last step, (.*)", msg, re.S)
        if m:
            msg = f"broken by step {last}: {m.group(1)}"
        elif msg == "does not hold in the last state":
            msg = ("does not hold in the initial state" if last == 0
                   else f"does not hold in the state after step {last}: {v.path[-1].action}")
    lines = []
    if msg:
        lines.append(para("  ", msg, 6))
    if why and why not in msg:
        lines.append(para("  rationale: ", why))
    return lines
