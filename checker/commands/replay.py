"""``kmc replay``: re-derive a saved trace step by step and show what changed.

Only the invariants files the command line names are run, never the ones the trace
records; the trace's own words are shown escaped.  ``--step N`` stops at step N and
shows the whole state there; ``--html`` also writes the trace as one page.  ``--set``
replays with one key of the trace's config changed: a trace saved without a key takes
the key's current default, so a trace saved before a default changed replays with
the old value set again.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from checker.cmdline import (
    EXIT_CODES, EXIT_FAIL, EXIT_OK, build_model, config_text, count, fail, model_properties, nonneg, one_line,
    para, path_arg, trace_family, user_property_error, wrap,
)
from checker.config import parse_set, resolve
from checker.errors import ModelError, UsageError
from checker.invariants import check_user_file, load_all
from checker.output import check_output, write_output
from checker.replay import replay
from checker.staterender import render_changes, render_state
from checker.trace import load_trace
from checker.tracehtml import trace_page

ORDER = 1    # kmc --help lists check, replay and list first


def register(sub: Any, fmt: Any) -> None:
    r = sub.add_parser("replay", help="re-derive a saved trace step by step and show what changed",
                       allow_abbrev=False, formatter_class=fmt, epilog=EXIT_CODES,
                       description=wrap("Rebuild the model from the trace's family and config, re-execute every "
                                   "recorded action, verify every fingerprint, print a diff per step, and "
                                   "re-check the violated property on the final state."))
    r.add_argument("file", metavar="FILE", type=path_arg, help="a trace written by kmc check (traces/*.json)")
    r.add_argument("--step", metavar="N", type=nonneg, help="stop after step N and show the whole state there")
    r.add_argument("--model", metavar="NAME|module:attr",
                   help="use this model family instead of the one recorded in the trace")
    r.add_argument("--invariants", metavar="FILE.py", type=path_arg, action="append", default=[],
                   help="re-check the trace's user property from this file instead of the file the trace "
                        "records (repeatable)")
    r.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                   help="replay with this value for one key of the trace's config (repeatable): a key the trace "
                        "does not record takes its current default, so a trace saved before a default changed "
                        "needs the old value set")
    r.add_argument("--html", metavar="OUT.html", type=path_arg,
                   help="also write the trace as one self-contained HTML page (no server, no network)")
    r.add_argument("--force", action="store_true",
                   help="overwrite OUT.html if it exists (a regular file, never the trace or a link)")
    r.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace, command: str) -> int:
    overrides = parse_set(args.set)   # a malformed --set before loading anything
    trace = load_trace(args.file)
    if args.html:
        check_output(args.html, args.force, "--html",
                     reads=[("the trace", args.file), *(("--invariants", f) for f in args.invariants)])
    last = len(trace.steps) - 1
    if args.step is not None and args.step > last:
        raise UsageError(f"--step {args.step} is out of range: trace '{args.file}' has steps 0..{last}; "
                         f"pick one of them")
    for f in args.invariants:
        check_user_file(f)        # run only if the trace's property is one of its own
    family, family_ref = trace_family(trace, args.model)
    unrecorded = {k: p.default for k, p in family.parameters.items() if k not in trace.config and k not in overrides}
    if overrides:   # an unknown key or a bad value is bad input (exit 2), not a trace that no longer fits
        trace = dataclasses.replace(trace, config=resolve(family, None, {**trace.config, **overrides}))

    def resolver(ref: str) -> Any:
        return family

    # Only the files the command line names are run, never the ones the trace records.
    loader = (lambda: load_all(args.invariants)) if args.invariants else None
    try:
        res = replay(trace, resolver, stop_at=args.step, property_loader=loader)
    except ModelError as e:
        raise user_property_error(e, args.invariants) or e

    # The trace's own words are data: a control character or an escape sequence in
    # them is shown escaped, never sent to the terminal.
    prop = {k: one_line(v) if isinstance(v, str) else v for k, v in trace.property.items()}
    kind = f"{prop['kind']}{', step' if prop.get('step') else ''}"
    print(f"replaying {args.file}")
    k = trace.loop_start
    print(f"  property:  {prop['name']} ({kind}), {'reached' if prop['kind'] == 'sometimes' else 'violated'} "
          + (f"at step {last}" if k is None else f"by a lasso: stem steps 0..{k}, then "
             + (f"the loop of steps {k + 1}..{last} for ever" if k < last else f"a stop at step {k} for ever")))
    if prop.get("rationale"):
        print(para("  rationale: ", prop["rationale"]))
    print(one_line(f"  model:     {trace.model_name} {trace.model_version} (family {family_ref}), "
                   f"preset {trace.preset or '-'}"))
    print(config_text("  config:    ", {k: one_line(v) if isinstance(v, str) else v for k, v in trace.config.items()}))
    if overrides:
        print(one_line("  --set:     " + " ".join(f"{k}={v}" for k, v in overrides.items())
                       + " (replayed with these values, not the trace's own)"))
    print(f"  trace:     {count(last + 1, 'state')} (steps 0..{last}), {count(last, 'action')}")
    print(one_line(f"  created:   {trace.created_by}"))
    print()
    shown = 0
    for step in res.steps:
        if not res.fits and step.index == res.failed_step:
            break
        if k is not None and step.index == k + 1:
            print(f"---- loop: from the state of step {k}, steps {k + 1}..{last} repeat for ever ----")
        print("\n".join(step.render()))
        shown += 1
        if k is not None and step.index == last and res.stopped_at is None:
            print(f"---- back at the state of step {k} [{step.fingerprint}]: the loop closes ----" if k < last
                  else f"---- the lasso ends here: the behaviour stays at step {k} for ever (a stutter) ----")
    for w in res.warnings:
        print(f"warning: {w}")
    if not res.fits:
        if shown or res.warnings:
            print()
        print(f"MISMATCH: {res.reason}")
        if res.mismatch:
            print("  recorded -> re-derived:")
            print("\n".join(render_changes(res.mismatch, indent="    ")))
        elif res.failed_step is not None and "differ" in (res.reason or ""):
            print("  the recorded and re-derived describe() views are identical: the difference is in a part "
                  "of the state describe() does not show, or the recorded fingerprint was edited")
        if unrecorded:
            shown_default = {k: str(v).lower() if isinstance(v, bool) else v for k, v in unrecorded.items()}
            print(one_line("note: the trace does not record " + ", ".join(f"{k} (replayed with its default, {v})"
                                                                          for k, v in shown_default.items())
                           + "; if it was saved before a default changed, replay it with --set KEY=VALUE"))
        fail(f"trace no longer fits the model: {res.reason}", command)
        return EXIT_FAIL
    print()
    if res.stopped_at is not None and res.stopped_at > 0:
        print(f"state at step {res.stopped_at}  [{res.steps[-1].fingerprint}]:")
        print("\n".join(render_state(res.steps[-1].view)))
        print()
    if res.stopped_at is not None:
        print(f"stopped after step {res.stopped_at} of {last}: every step so far fits the model and "
              f"every fingerprint matches")
        return EXIT_OK
    print(f"the trace replays: all {last + 1} steps fit the model and every fingerprint matches")
    if args.html:
        model = build_model(family, resolve(family, None, trace.config))
        write_output(args.html, trace_page(trace, model, model_properties(model)).encode(), args.force, "--html",
                     reads=[("the trace", args.file)])
        print(f"html: {args.html} (one self-contained page: open it in a browser)")
    if res.property_status == "undeclared":
        print(f"warning: {res.property_note}")
        return EXIT_OK
    print(res.property_note)
    if res.property_status in ("holds", "unreached"):
        fail(f"the trace replays but {res.property_note}", command)
        return EXIT_FAIL
    if res.property_status == "unknown":
        # Exit 0 promises that the trace still shows what it recorded; a script that
        # replays saved traces after a change must not pass one it could not re-check.
        fail(f"the trace replays but what it shows cannot be re-checked: {res.property_note}", command)
        return EXIT_FAIL
    return EXIT_OK
