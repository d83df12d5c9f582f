"""``kmc prove``: prove invariants inductive with z3, for any number of steps.

``kmc prove --brokers 7 --invariant AtMostOneActiveController --lemmas examples/lemmas.py``
asks z3, for every action, whether a state that satisfies the invariants, TypeOK and
the lemmas can step to one that does not.  If none can, and the initial states satisfy
them, they hold in every reachable state of that configuration (exit 0).  Otherwise
the counterexample to induction (CTI) is printed: the state before, the action, and
what changed (exit 1).  A CTI may be unreachable: then the invariant is true but too
weak to be proved alone, and a lemma that rules the CTI out is the fix.  ``--confirm``
searches the explicit model's reachable states (small configurations) for a state
where the same action breaks the same invariant, and saves the path to it as an
ordinary trace that ``kmc replay`` shows.

Lemmas (``--lemmas FILE``) are state predicates over the family's symbolic frame,
written with ``checker.symbolic.lemma``; see examples/lemmas.py.  Exit status: 0
proved, 1 not inductive (or z3 could not decide), 2 bad input, 3 the model broke its
contract.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from checker.cmdline import (
    EXIT_FAIL, EXIT_OK, build_model, check_traces_dir, fail, model_properties, para, path_arg, positive, reopen_args,
    wrap,
)
from checker.errors import UsageError
from checker.junit import Case, junit_xml
from checker.output import check_output, write_output
from checker.trace import refuse_trace_names, trace_label

CONFIRM_MAX_STATES = 200_000   # --confirm's default bound on the explicit state graph

EPILOG = """exit status:
  0    proved: the invariants hold in every reachable state of this configuration
  1    not inductive (the counterexample to induction is printed), or z3 gave up
  2    bad input: unknown invariant, preset, key or flag, a configuration the
       encoding does not cover, a broken lemmas file
  3    the model broke its contract: the encoding raised, or (--confirm) the
       explicit model breaks the invariant where z3 says it cannot
  4    internal error of kmc (KMC_DEBUG=1 shows the traceback)"""


def register(sub: Any, fmt: Any) -> None:
    from checker.commands._symbolic import add_config_options

    p = sub.add_parser(
        "prove", help="prove invariants inductive with z3 (for any number of steps)",
        allow_abbrev=False, formatter_class=fmt, epilog=EPILOG,
        description=wrap("Check with z3 that every action preserves the named invariants (together with "
                          "TypeOK and any --lemmas) from every state that satisfies them, and that the initial "
                          "states satisfy them. A failure prints the counterexample to induction: the state "
                          "before, the action and what it changed. Needs a model family with a symbolic "
                          "encoding."))
    p.add_argument("--invariant", metavar="NAME", action="append", default=[], required=True,
                   help="an invariant to prove (repeatable: they are proved together, each strengthening the "
                        "others); a step invariant is checked on every step from the states the others allow")
    p.add_argument("--lemmas", metavar="FILE.py", type=path_arg, action="append", default=[],
                   help="Python file of strengthening lemmas (checker.symbolic.lemma), proved together with "
                        "the invariants (repeatable)")
    p.add_argument("--confirm", action="store_true",
                   help="on a CTI, search the explicit model's reachable states for one where the same action "
                        "breaks the same invariant, and save the path to it as a trace (small configurations)")
    p.add_argument("--max-states", metavar="N", type=positive,
                   help=f"with --confirm, refuse an explicit state graph larger than N states (default {CONFIRM_MAX_STATES})")
    p.add_argument("--traces-dir", metavar="DIR", type=path_arg,
                   help="where --confirm saves the trace (default: traces/)")
    p.add_argument("--junit", metavar="OUT.xml", type=path_arg,
                   help="write JUnit XML: one test case per invariant, a CTI as a failure")
    p.add_argument("--force", action="store_true",
                   help="overwrite the --junit file if it exists (a regular file, never an input or a link)")
    add_config_options(p)
    p.set_defaults(func=cmd_prove)


def cmd_prove(args: argparse.Namespace, command: str) -> int:
    from checker.commands._symbolic import header, load
    from checker.symbolic import TYPE_OK, load_lemmas, prove, select_invariants
    from checker.statediff import diff
    from checker.staterender import render_changes, render_state

    out = sys.stdout
    # --max-states and --traces-dir only act on --confirm's search: given without it,
    # they would be accepted and do nothing, so they are refused.
    for flag, value in (("--max-states", args.max_states), ("--traces-dir", args.traces_dir)):
        if value is not None and not args.confirm:
            raise UsageError(f"{flag} only applies to --confirm's search; add --confirm or drop {flag}")
    if args.max_states is None:
        args.max_states = CONFIRM_MAX_STATES
    if args.traces_dir is None:
        args.traces_dir = "traces"
    if args.confirm:
        check_traces_dir(args.traces_dir)
    if args.junit:      # before --config is read
        check_output(args.junit, args.force, "--junit", reads=_reads(args), early=True)
    family, family_ref, preset, config, custom, sym = load(args)
    # Again, now that the family's module is loaded (never its source) and, with
    # --confirm, the names its trace may be saved under are known (a property of the
    # explicit model, as kmc check's), before z3 is asked: a clash with one first.
    if args.confirm and args.junit:
        saved = [p.name for p in model_properties(build_model(family, config))]
        refuse_trace_names([("--junit", args.junit)], args.traces_dir, saved, [trace_label(preset, custom)])
    if args.junit:
        check_output(args.junit, args.force, "--junit", reads=_reads(args))
    names = list(dict.fromkeys(args.invariant))
    select_invariants(sym, names)  # an unknown name is bad input before any work
    taken = [inv.name for inv in sym.invariants()] + [TYPE_OK]
    lemmas = []
    probe = sym.frame("lemma-check")
    for path in args.lemmas:
        got = load_lemmas(path, existing=taken + [lem.name for lem in lemmas])
        for lem in got:
            _check_lemma(lem, path, probe)
        lemmas.extend(got)
    if not args.quiet:
        header("prove", sym, family_ref, preset, custom, config, out)
        extra = f"; lemmas: {', '.join(lem.name for lem in lemmas)}" if lemmas else ""
        print(f"proving: {', '.join(names)} (with {TYPE_OK}{extra})", file=out, flush=True)
    res = prove(sym, names, lemmas=lemmas, progress=None if args.quiet else sys.stderr, timeout=args.timeout)
    if args.junit:
        _write_junit(args, names, res, command)
    together = ", ".join(c for c in res.conjuncts if c not in names)
    if res.proved:
        nacts = len({a.name for a in sym.actions()})
        print(f"PROVED: {', '.join(names)}: true initially and preserved by every action ({nacts} actions, "
              f"{len(sym.actions())} instances) from every state that satisfies {', '.join(res.conjuncts)}; "
              f"so {'it holds' if len(names) == 1 else 'they hold'} in every reachable state of this "
              f"configuration ({res.seconds:.1f} s)", file=out)
        return EXIT_OK
    if res.unknown is not None:
        print(f"UNKNOWN: z3 could not decide ({res.unknown})", file=out)
        fail(f"not proved: z3 gave up ({res.unknown}); raise --timeout or simplify the lemmas", command)
        return EXIT_FAIL
    cti = res.cti
    assert cti is not None
    if cti.initial:
        print(f"NOT PROVED: {cti.broken} does not hold in the initial state:", file=out)
        print("\n".join(render_state(cti.before)), file=out)
        fail(f"{cti.broken} is false initially", command)
        return EXIT_FAIL
    what = "the step invariant" if cti.broken in names and cti.broken not in res.conjuncts else ""
    print(f"NOT INDUCTIVE: {what + ' ' if what else ''}{cti.broken} is broken by {cti.action.name} from a state "
          f"that satisfies {', '.join(res.conjuncts)}", file=out)
    print(f"counterexample to induction ({res.seconds:.1f} s):", file=out)
    print("state before:", file=out)
    print("\n".join(render_state(cti.before, indent="  ")), file=out)
    print(f"action: {'; '.join(str(a) for a in cti.explicit)}", file=out)
    print("what it changes:", file=out)
    print("\n".join(render_changes(diff(cti.before, cti.after), indent="  ")), file=out)
    print(para("", "This state may be unreachable: then the invariants are true but too weak to prove "
                "alone; add a lemma (--lemmas) that rules it out. --confirm looks for a reachable state "
                "where the same action breaks it (small configurations)."), file=out)
    if args.confirm:
        _confirm(args, command, family_ref, family, preset, config, custom, sym, names, lemmas, cti, out)
    why = f"{cti.broken} is not inductive{' with ' + together if together else ''}: {cti.action.name} breaks it"
    fail(why, command)
    return EXIT_FAIL


def _write_junit(args: argparse.Namespace, names: list[str], res: Any, command: str) -> None:
    """One test case per invariant: proved, the one a CTI breaks (a failure), or not
    proved because it was proved together with one that is not inductive (skipped)."""
    cases = []
    for name in names:
        if res.proved:
            cases.append(Case(name, "kmc.prove", seconds=res.seconds))
        elif res.unknown is not None:
            cases.append(Case(name, "kmc.prove", skipped=f"z3 could not decide ({res.unknown})"))
        elif res.cti is not None and res.cti.broken == name:
            cti = res.cti
            why = ("false in the initial state" if cti.initial else
                   f"not inductive: {cti.action.name} breaks it from a state that satisfies {', '.join(res.conjuncts)}")
            cases.append(Case(name, "kmc.prove", failure=f"{name} {why}",
                              text=f"action: {'; '.join(str(a) for a in cti.explicit)}\nreproduce: {command}",
                              seconds=res.seconds))
        else:
            broken = res.cti.broken if res.cti is not None else "another invariant"
            cases.append(Case(name, "kmc.prove",
                              skipped=f"not proved: proved together with {broken}, which is not inductive"))
    write_output(args.junit, junit_xml("kmc prove", cases, res.seconds).encode(), args.force, "--junit",
                 reads=_reads(args))


def _reads(args: argparse.Namespace) -> list:
    """The files kmc prove reads, which --junit must never be."""
    return [("--config", args.config), *(("--lemmas", f) for f in args.lemmas)]


def _check_lemma(lem: Any, path: str, frame: Any) -> None:
    """A lemma that cannot be built is the user's to fix: one line, exit 2."""
    import z3
    try:
        term = lem.predicate(frame)
    except Exception as e:  # noqa: BLE001 - a user's predicate may raise anything
        msg = " ".join(str(e).split())
        raise UsageError(f"lemma {lem.name!r} in lemmas file '{path}' raised {type(e).__name__}"
                         f"{': ' + msg if msg else ''}; fix the predicate (the frame's fields are listed in the "
                         f"family's symbolic encoding)") from None
    if not isinstance(term, z3.BoolRef):
        raise UsageError(f"lemma {lem.name!r} in lemmas file '{path}' returns {type(term).__name__}, not a z3 Bool; "
                         f"build it with z3 (z3.And, z3.Implies, ==, ...)")


def _confirm(args, command, family_ref, family, preset, config, custom, sym, names, lemmas, cti, out) -> None:
    from checker.result import Step, Violation
    from checker.symbolic import confirm_cti
    from checker.trace import write_trace

    model = build_model(family, config)
    print(f"confirm: exploring the explicit model for a reachable state where {cti.action.name} breaks "
          f"{cti.broken} ...", file=out, flush=True)
    try:
        found = confirm_cti(sym, model, cti, names, lemmas, max_states=args.max_states)
    except NotImplementedError:
        raise UsageError("--confirm needs the family's symbolic encoding to implement abstract(state, frame); "
                         "drop --confirm") from None
    if found is None:
        print(f"confirm: no reachable state of the explicit model lets {cti.action.name} break {cti.broken} "
              f"(the CTI is not reachable in this configuration)", file=out)
        return
    path, act = found
    from checker.bfs import replay_path
    steps = replay_path(model, [a for _s, a, _d in path] + [act])
    v = Violation(cti.broken, "always", [Step(s.action, s.state, s.fingerprint) for s in steps],
                  f"{cti.broken} is broken by {act} from a reachable state (kmc prove --confirm)")
    trace = write_trace(args.traces_dir, family_ref=family_ref, model=model, config=config, preset=preset,
                        violation=v, engine="prove", command=command, label=trace_label(preset, custom))
    print(f"CONFIRMED: reachable in {len(steps) - 1} steps: the explicit {cti.broken} fails on the last step, "
          f"and z3 agrees (that state satisfies every conjunct, and its symbolic step to the explicit successor "
          f"breaks {cti.broken})", file=out)
    print(f"  trace saved to {trace}", file=out)
    again = reopen_args(str(trace), family_ref)
    print(f"  replay it: kmc replay {again}", file=out)
    print(f"  explore it: kmc explore {again}", file=out)
