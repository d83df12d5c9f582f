"""What ``kmc check`` writes besides its terminal output: the coverage line, the run
report (``--report OUT.html``) and JUnit XML (``--junit OUT.xml``).

Every verdict here is read from the check's result, never recomputed: a property is
*holds* only after an exhaustive search, *violated* when the result has its violation,
and *not checked* (with the reason) when the search stopped before it could say.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from checker.cmdline import reopen_args
from checker.coverage import coverage_of, levels_of, vocabulary
from checker.junit import Case, junit_xml
from checker.model import EVENTUALLY, SOMETIMES, Property
from checker.output import write_beside, write_output
from checker.runreport import PropertyVerdict, Report, render
from checker.result import DEADLOCK, CheckResult
from checker.shellquote import shell_quote
from checker.trace import load_trace
from checker.tracehtml import trace_page


def verdicts(result: CheckResult, props: Sequence[Property], check_deadlock: bool, live: Any,
             traces: Mapping[str, str]) -> list[PropertyVerdict]:
    """One verdict per property checked (and Deadlock, when it is checked)."""
    st = result.stats
    violated = {}
    for v in result.violations:
        violated.setdefault(v.property, v)
    stopped = "the search stopped before it was exhaustive (a violation or a bound)"
    out = []
    rows = [(p.name, p.kind + (", step" if p.step else ""), p.rationale, p.kind) for p in props]
    if check_deadlock:
        rows.append((DEADLOCK, "deadlock", "a reachable state that is not terminal has no enabled action",
                     "deadlock"))
    for name, kind, rationale, base in rows:
        v = violated.get(name)
        trace = traces.get(name)
        if v is not None and base == SOMETIMES:
            verdict, detail = "not reached", v.message
        elif v is not None:
            verdict, detail = "violated", (f"{len(v.path) - 1} steps" if v.path else v.message)
        elif base == SOMETIMES:
            depth = st.witnesses.get(name)
            verdict, detail = ("reached", f"at depth {depth}") if depth is not None else ("not checked", stopped)
        elif base == EVENTUALLY:
            skipped = getattr(live, "skipped", None)
            if skipped or getattr(live, "graph", None) is None:
                verdict, detail = "not checked", skipped or "the state graph was not built"
            else:
                verdict, detail = "holds", "under weak fairness, on the whole state graph"
        elif st.complete:
            verdict, detail = "holds", f"on all {st.distinct:,} reachable states"
        else:
            verdict, detail = "not checked", stopped
        out.append(PropertyVerdict(name, kind, verdict, rationale, detail, trace))
    return out


def write_report(path: str, force: bool, *, title: str, command: str, model: Any, family: Any, engine: str,
                 config: Mapping[str, Any], result: CheckResult, props: Sequence[Property], check_deadlock: bool,
                 live: Any, traces: Mapping[str, str], avoid: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """Write the report and a page per counterexample beside it (``OUT-<trace>.html``);
    return the files written and a note for each page written under another name.

    A page's name is kmc's, not the user's: where something is there already that
    may not be replaced (any file without ``force``; a link, a FIFO... even with
    it), the page goes to the first free ``OUT-<trace>-2.html``, ``-3``... and the
    note says so, so that the run still ends with its verdict.  ``avoid``: the
    command's other outputs (``--junit``), never taken for a page."""
    written: list[str] = []
    renamed: list[str] = []
    vs = verdicts(result, props, check_deadlock, live, traces)
    reads = [("the trace", t) for t in traces.values()]
    report_path = Path(path)
    for v in vs:
        if not v.trace:
            continue
        want = report_path.with_name(f"{report_path.stem}-{Path(v.trace).stem}.html")
        trace = load_trace(v.trace)
        page = write_beside(want, trace_page(trace, model, props).encode(), force, "--report",
                            avoid=[path, *avoid, *traces.values(), *written])
        if page != want:
            why = ("exists already and is kept as it is" if os.path.lexists(want)
                   else "is taken by another file of this run")
            renamed.append(f"'{want}' {why}: the counterexample page of trace {v.trace} is '{page}'")
        written.append(str(page))
        v.page = page.name
        v.detail = f"{v.detail}: step through it"
    st = result.stats
    vocab = vocabulary(model, family)
    cov = coverage_of(result)
    notes = []
    if cov.new is None:
        notes.append(f"the {engine} engine resumed this run from a checkpoint that did not keep 'enabled' and "
                     f"'new state'; 'taken' counts the transitions each action took")
    summary = [("verdict", result.verdict.upper()), ("distinct states", f"{st.distinct:,}"),
               ("generated", f"{st.generated:,}"), ("depth", str(st.depth)),
               ("seconds", f"{st.seconds:.2f}"), ("states/s", f"{st.states_per_second:,.0f}"),
               ("peak memory", f"{st.peak_memory_bytes / 2**20:.1f} MiB"),
               ("exhaustive", "yes" if st.complete else "no: the search stopped early")]
    report = Report(title=title, command=command, model=f"{model.name} {model.version}", engine=engine,
                    config=config, verdict=result.verdict.upper(), summary=summary, levels=levels_of(result),
                    properties=vs, coverage=cov.rows(vocab), never_enabled=cov.never_enabled(vocab), notes=notes)
    write_output(path, render(report).encode(), force, "--report", reads=reads)
    return [path, *written], renamed


def check_junit(path: str, force: bool, *, suite: str, classname: str, result: CheckResult,
                props: Sequence[Property], check_deadlock: bool, live: Any, traces: Mapping[str, str],
                family_ref: str | None = None, invariants: Sequence[str] = ()) -> None:
    """``family_ref``: the run's model family, and ``invariants``: the run's
    ``--invariants`` files, so that the commands in a failure's text add ``--model``
    and ``--invariants`` when kmc could not reopen the trace without them."""
    cases = []
    for v in verdicts(result, props, check_deadlock, live, traces):
        if v.verdict in ("violated", "not reached"):
            again = ((shell_quote(v.trace) if family_ref is None else reopen_args(v.trace, family_ref, invariants))
                     if v.trace else "")
            replay = f"\nreplay it: kmc replay {again}\nexplore it: kmc explore {again}" if v.trace else ""
            cases.append(Case(v.name, classname, failure=f"{v.name} {v.verdict}: {v.detail}",
                              text=f"{v.rationale}{replay}"))
        elif v.verdict == "not checked":
            cases.append(Case(v.name, classname, skipped=v.detail))
        else:
            cases.append(Case(v.name, classname))
    write_output(path, junit_xml(suite, cases, result.stats.seconds).encode(), force, "--junit",
                 reads=[("the trace", t) for t in traces.values()])

