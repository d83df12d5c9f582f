"""``kmc bmc``: bounded model checking with z3, beyond what the explicit engines reach.

``kmc bmc --preset zombie --brokers 7 --steps 6`` unrolls the family's symbolic
encoding one step at a time from the initial states and asks z3 for a violation of
each property after each step, so the first one found is a shortest one.  The
violation is decoded into the explicit model's actions and replayed on the explicit
model: only if every action is enabled there and the explicit property fails on the
last step is it reported, saved as an ordinary trace (``kmc replay`` shows it).  That
replay is the check that the two encodings agree.

Exit status: 0 no violation within the bound (not a proof: ``kmc prove`` proves),
1 a violation (trace saved), 2 bad input, 3 the two encodings disagree (the symbolic
counterexample does not replay on the explicit model: a bug in one of them; the
message says at which step and why).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from checker.cmdline import (
    EXIT_FAIL, EXIT_OK, build_model, check_traces_dir, fail, model_properties, path_arg, positive, reopen_args,
    wrap,
)
from checker.errors import ModelError, UsageError

EPILOG = """exit status:
  0    no violation within K steps (a bounded result, not a proof)
  1    a violation: replayed on the explicit model and saved as a trace; or z3
       gave up (--timeout) before deciding, which is no result
  2    bad input: unknown property, preset, key or flag, a configuration the
       encoding does not cover
  3    the symbolic and explicit encodings disagree: the symbolic counterexample
       does not replay on the explicit model (the message says where and why)
  4    internal error of kmc (KMC_DEBUG=1 shows the traceback)"""


def register(sub: Any, fmt: Any) -> None:
    from checker.commands._symbolic import add_config_options

    p = sub.add_parser(
        "bmc", help="bounded model checking with z3: look for a violation within K steps",
        allow_abbrev=False, formatter_class=fmt, epilog=EPILOG,
        description=wrap("Unroll the family's symbolic encoding K steps and ask z3 for a violation, depth by "
                          "depth (so the first one found is a shortest one). A violation is replayed on the "
                          "explicit model and saved as an ordinary trace; if it does not replay, the two "
                          "encodings disagree (exit 3)."))
    p.add_argument("--steps", metavar="K", type=positive, required=True, help="unroll at most K steps")
    p.add_argument("--property", metavar="NAME", action="append", default=[],
                   help="check only this property (repeatable; default: every property with a symbolic encoding)")
    p.add_argument("--traces-dir", metavar="DIR", type=path_arg, default="traces",
                   help="where the counterexample trace is saved (default: traces/); never overwritten")
    add_config_options(p)
    p.set_defaults(func=cmd_bmc)


def cmd_bmc(args: argparse.Namespace, command: str) -> int:
    from checker.commands._symbolic import header, load
    from checker.result import Step, Violation
    from checker.symbolic import bmc, select_invariants, to_explicit
    from checker.trace import trace_label, write_trace

    out = sys.stdout
    check_traces_dir(args.traces_dir)
    family, family_ref, preset, config, custom, sym = load(args)
    model = build_model(family, config)
    explicit = {p.name: p for p in model_properties(model)}
    encoded = [inv.name for inv in sym.invariants()]
    if args.property:
        names = list(dict.fromkeys(args.property))
        select_invariants(sym, names, "--property")
        for n in names:
            if n not in explicit:
                raise UsageError(f"property {n!r} is not declared by the explicit model in this configuration, "
                                 f"so a counterexample could not be replayed; see kmc list properties")
    else:
        names = [n for n in explicit if n in encoded]
        if not names:
            raise UsageError(f"no property of model {model.name!r} has a symbolic encoding; nothing to check")
    if not args.quiet:
        header("bmc", sym, family_ref, preset, custom, config, out)
        print(f"properties: {', '.join(names)}; at most {args.steps} steps", file=out, flush=True)
    res = bmc(sym, args.steps, names, progress=None if args.quiet else sys.stderr, timeout=args.timeout)
    if res.unknown is not None:
        print(f"UNKNOWN: z3 could not decide ({res.unknown})", file=out)
        fail(f"bmc gave up at {res.unknown}; raise --timeout or lower --steps", command)
        return EXIT_FAIL
    v = res.violation
    if v is None:
        print(f"no violation within {args.steps} steps ({res.seconds:.1f} s). This is a bounded result, not a "
              f"proof: kmc prove proves invariants for any number of steps.", file=out)
        return EXIT_OK
    prop = explicit[v.property]
    print(f"z3: {v.property} violated after {v.depth} step{'s' if v.depth != 1 else ''} ({res.seconds:.1f} s):",
          file=out)
    for i, a in enumerate(v.actions, 1):
        print(f"  {i}. {a}", file=out)
    path, why = to_explicit(model, v.actions, prop)
    if why is not None:
        raise ModelError(f"the symbolic and explicit encodings disagree: the symbolic counterexample to "
                         f"{v.property} ({'; '.join(str(a) for a in v.actions)}) does not replay on the explicit "
                         f"model: {' '.join(why.split())}")
    print(f"replayed on the explicit model {model.name} {model.version}: every action is enabled there and "
          f"{v.property} fails on the last {'step' if prop.step else 'state'}: the encodings agree", file=out)
    viol = Violation(v.property, "always", [Step(s.action, s.state, s.fingerprint) for s in path],
                     f"{v.property} is violated after {v.depth} steps (kmc bmc, replayed on the explicit model)")
    label = trace_label(preset, custom)
    try:
        trace = write_trace(args.traces_dir, family_ref=family_ref, model=model, config=config, preset=preset,
                            violation=viol, engine="bmc", command=command, label=label)
    except OSError as e:
        raise UsageError(f"cannot write a trace to '{args.traces_dir}': {e.strerror or e}; "
                         f"choose another directory with --traces-dir DIR") from None
    print(f"VIOLATED: {v.property}", file=out)
    print(f"  trace: {len(path)} states, {len(path) - 1} actions, saved to {trace}", file=out)
    again = reopen_args(str(trace), family_ref)
    print(f"  replay it: kmc replay {again}", file=out)
    print(f"  explore it: kmc explore {again}", file=out)
    fail(f"property violated: {v.property}; replay the trace with kmc replay {again}", command)
    return EXIT_FAIL
