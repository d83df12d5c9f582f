"""``kmc simulate``: swarm simulation, for configurations beyond exhaustive reach.

``kmc simulate --preset data-kip279-3 --set atomic_controller=false --seed 7``
runs random walks (checker.simulate: each walk draws which faults and free choices
it may take, how many times, and how much it favours each kind of action), checks
every property on every visited state, and stops at the first violation, which is
shrunk and saved as an ordinary trace (``kmc replay`` and ``kmc conform`` take
it).  The same ``--seed`` and ``--walks`` give the same counterexample on every
run and on both engines; ``--time-limit`` stops earlier, after a whole walk.
``--stateful`` makes each walk a randomized depth-first search and lets all walks
share one visited set (checker.stateful; local engine only).
``--random-priority`` runs one search with a visited set whose frontier is taken in
a random order fixed by the seed (checker.randompriority; local engine only).
Exit 0: no violation found (a simulation proves nothing: the verdict says how
much was seen); 1: a violation, trace saved; 2: bad input; 3: the model broke its
contract.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from checker.cmdline import (
    EXIT_CODES, EXIT_FAIL, EXIT_OK, build_model, check_traces_dir, config_family, config_text, count,
    deadlock_flags, engine_of, fail, model_properties, path_arg, positive, reopen_args, resolve_config, seed,
    user_properties, user_property_error, wrap,
)
from checker.errors import ModelError, UsageError


def register(sub: Any, fmt: Any) -> None:
    from checker.simulate import DEFAULT_MAX_STEPS, DEFAULT_WALKS
    from checker.stateful import DEFAULT_WALK_STATES

    p = sub.add_parser(
        "simulate", help="swarm simulation: random walks that check every property, for configurations too "
                         "large to explore",
        allow_abbrev=False, formatter_class=fmt, epilog=EXIT_CODES,
        description=wrap("Run random walks through the model (swarm testing: each walk draws which faults "
                          "and free choices it may take, how often, and how strongly it favours each kind of "
                          "action), check every property on every visited state, and stop at the first "
                          "violation: it is shrunk and saved as a trace that kmc replay and kmc conform take. "
                          "Deterministic from --seed and --walks, on either engine. Finding nothing proves "
                          "nothing; use kmc check for that."))
    p.add_argument("--model", metavar="NAME|module:attr", help="model family (default: the registered model)")
    p.add_argument("--preset", metavar="P", help="configuration preset (default: the family's default preset)")
    p.add_argument("--config", metavar="FILE.toml", type=path_arg,
                   help="TOML file with preset, model and key = value lines")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                   help="override one parameter (repeatable)")
    p.add_argument("--invariants", metavar="FILE.py", type=path_arg, action="append", default=[],
                   help="also check the properties defined in this Python file (repeatable)")
    p.add_argument("--property", metavar="NAME", action="append", default=[],
                   help="check only this property (repeatable; Deadlock names the deadlock check)")
    p.add_argument("--seed", metavar="N", type=seed, default=0, help="random seed (default 0)")
    p.add_argument("--walks", metavar="N", type=positive,
                   help=f"walks to run, at most (default {DEFAULT_WALKS}; with --stateful, no limit)")
    p.add_argument("--max-steps", metavar="N", type=positive, default=DEFAULT_MAX_STEPS,
                   help=f"steps per walk, at most (default {DEFAULT_MAX_STEPS})")
    p.add_argument("--time-limit", metavar="SECONDS", type=positive,
                   help="stop after the walk that ends past this many seconds (the counts then vary from run "
                        "to run; a violation found is still the one the seed gives)")
    p.add_argument("--stateful", action="store_true",
                   help="stateful swarm search: each walk is a randomized depth-first search, and all walks share "
                        "one set of visited states (local engine only; see docs/reductions.md)")
    p.add_argument("--random-priority", action="store_true",
                   help="random-priority search: one search that keeps every state seen and expands its frontier "
                        "in a random order fixed by --seed (local engine only; see docs/reductions.md)")
    p.add_argument("--walk-states", metavar="N", type=positive,
                   help="with --stateful: new distinct states a walk finds before the next walk starts "
                        f"(default {DEFAULT_WALK_STATES})")
    p.add_argument("--no-swarm", action="store_true",
                   help="plain uniform random walks: every enabled action equally likely, no budgets")
    p.add_argument("--no-shrink", action="store_true", help="save the violating walk as found, unshrunk")
    p.add_argument("--no-deadlock", action="store_true", help="do not report states without enabled actions")
    p.add_argument("--traces-dir", metavar="DIR", type=path_arg, default="traces",
                   help="where a counterexample trace is saved (default: traces/); never overwritten")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object on standard output")
    p.add_argument("--quiet", action="store_true", help="no header and no progress lines")
    p.add_argument("--engine", choices=["local", "spark"],
                   help="local (default): walks in this process; spark: independent walks per partition")
    p.add_argument("--spark-master", metavar="URL", help="Spark master (default local[*], embedded)")
    p.add_argument("--spark-partitions", metavar="N", type=positive,
                   help="Spark partitions (default: the context's default parallelism)")
    p.set_defaults(func=cmd_simulate)


def _select(args: argparse.Namespace, props: list) -> tuple[list, bool]:
    from checker.model import EVENTUALLY

    deadlock_flags(args.property, args.no_deadlock)
    check_deadlock = not args.no_deadlock
    if args.property:
        known = [p.name for p in props]
        chosen = []
        want_deadlock = False
        for name in args.property:
            if name == "Deadlock":
                want_deadlock = True
                continue
            if name not in known:
                raise UsageError(f"unknown property {name!r} (this configuration declares: "
                                 f"{', '.join(known + ['Deadlock'])}); see kmc list properties")
            chosen.extend(p for p in props if p.name == name and p not in chosen)
        for p in chosen:
            if p.kind == EVENTUALLY:     # it was dropped below: nothing checked, and exit 0
                raise UsageError(f"eventually property {p.name!r} cannot be checked by kmc simulate: a walk "
                                 f"stops after finitely many steps, which proves nothing about what happens "
                                 f"later; check it with kmc check, or drop --property {p.name}")
        props = chosen
        check_deadlock = check_deadlock and want_deadlock
    return [p for p in props if p.kind != EVENTUALLY], check_deadlock


def cmd_simulate(args: argparse.Namespace, command: str) -> int:
    from checker.config import load_config_file, parse_set, resolve
    from checker.result import VIOLATED
    from checker.simulate import DEFAULT_WALKS
    from checker.stateful import DEFAULT_WALK_STATES
    from checker.trace import trace_label, write_trace

    out: TextIO = sys.stderr if args.json else sys.stdout
    file_cfg = load_config_file(args.config) if args.config else None
    parse_set(args.set)
    check_traces_dir(args.traces_dir)
    engine = engine_of(args.engine, (("--spark-master", args.spark_master),
                                     ("--spark-partitions", args.spark_partitions)))
    if args.stateful and engine == "spark":
        raise UsageError("--stateful runs on the local engine only: its walks share one set of visited states, "
                         "so they cannot run apart on Spark partitions; use --engine local, or drop --stateful")
    if args.random_priority:
        for flag, given in (("--stateful", args.stateful), ("--walks", args.walks is not None),
                            ("--no-swarm", args.no_swarm), ("--walk-states", args.walk_states is not None)):
            if given:
                raise UsageError(f"--random-priority is one search with no walks or swarm draws, so {flag} has no "
                                 f"meaning with it; drop {flag} (--time-limit bounds the search)")
        if engine == "spark":
            raise UsageError("--random-priority runs on the local engine only: it is one search with one frontier, "
                             "not independent walks; use --engine local, or drop --random-priority")
    if args.walk_states is not None and not args.stateful:
        raise UsageError("--walk-states needs --stateful; add --stateful, or drop --walk-states")
    if args.walks is None and not args.stateful and not args.random_priority:
        args.walks = DEFAULT_WALKS
    family, family_ref = config_family(args.model, file_cfg)
    preset, config = resolve_config(args, family, file_cfg)
    model = build_model(family, config)
    model_props = model_properties(model)
    user_props = user_properties(args.invariants or [], model_props)
    custom = config != resolve(family, preset, {})
    props, check_deadlock = _select(args, model_props + user_props)
    if not args.quiet:
        print(f"kmc simulate: model {model.name} {model.version} (family {family_ref}), preset {preset}"
              f"{' with overrides' if custom else ''}", file=out)
        print(config_text("config: ", config), file=out)
        walks = f"at most {args.walks}" if args.walks is not None else "any number of"
        what = "uniform" if args.no_swarm else "swarm"
        what = (f"stateful {what} search, {args.walk_states or DEFAULT_WALK_STATES} new states a walk"
                if args.stateful else f"{what} walks")
        shape = f"{walks} walks of at most {args.max_steps} steps"
        if args.random_priority:
            what, shape = "random-priority search", f"one search to depth {args.max_steps}"
        print(f"seed {args.seed}, {shape}"
              f"{f', at most {args.time_limit} s' if args.time_limit else ''}; "
              f"{what}; {len(props)} properties; deadlock check "
              f"{'on' if check_deadlock else 'off'}; engine {engine}", file=out)
        out.flush()
    kw = dict(properties=props, seed=args.seed, walks=args.walks, max_steps=args.max_steps,
              swarm=not args.no_swarm, check_deadlock=check_deadlock, time_limit=args.time_limit,
              shrinking=not args.no_shrink, progress=None if args.quiet else sys.stderr)
    try:
        if args.stateful:
            from checker.stateful import search
            r = search(model, walk_states=args.walk_states or DEFAULT_WALK_STATES, **kw)
        elif args.random_priority:
            from checker.randompriority import search as rp_search
            del kw["walks"], kw["swarm"]
            r = rp_search(model, **kw)
        elif engine == "spark":
            try:
                from checker.spark.simulate import simulate as spark_simulate
            except ImportError as e:
                raise UsageError(f"the Spark engine needs pyspark ({e}); install kmc with its dependencies "
                                 f"(pip install -e .) or use --engine local") from None
            r = spark_simulate(model, master=args.spark_master, partitions=args.spark_partitions, **kw)
        else:
            from checker.simulate import simulate
            r = simulate(model, **kw)
    except ModelError as e:
        # a predicate of an --invariants file that raised is the user's to fix (exit 2), as in kmc check
        raise user_property_error(e, args.invariants or []) or e

    print(f"walks: {r.walks}  steps: {r.steps}  distinct states: {r.distinct}  deepest: {r.deepest}"
          f"{'  (every reachable state within --max-steps visited)' if r.exhausted else ''}", file=out)
    print(f"time: {r.seconds:.2f} s  ({r.walks / r.seconds if r.seconds > 0 else 0:,.0f} walks/s)", file=out)
    for name, depth in sorted(r.witnesses.items()):
        print(f"witness {name}: {'reached at depth ' + str(depth) if depth is not None else 'not reached'}",
              file=out)
    mode = "stateful" if args.stateful else "random-priority" if args.random_priority else engine
    trace_path = None
    rationale = {p.name: p for p in props}
    for v in r.violations:
        prop = rationale.get(v.property)
        print(file=out)
        print(f"VIOLATED: {v.property} ({v.kind}{', step' if prop is not None and prop.step else ''}) "
              f"in walk {r.walk}: {r.found_length} steps, shrunk to {len(v.path) - 1} "
              f"({r.shrink_replays} replays)", file=out)
        print(f"  {v.message}", file=out)
        label = trace_label(preset, custom)
        try:
            path = write_trace(args.traces_dir, family_ref=family_ref, model=model, config=config, preset=preset,
                               violation=v, engine=f"simulate-{mode}", command=command, properties=props,
                               invariants=args.invariants or [], label=label)
        except OSError as e:
            raise UsageError(f"cannot write a trace to '{args.traces_dir}': {e.strerror or e}; "
                             f"choose another directory with --traces-dir DIR") from None
        trace_path = str(path)
        print(f"  trace: {count(len(v.path) - 1, 'action')}, saved to {path}", file=out)
        again = reopen_args(trace_path, family_ref, args.invariants)
        print(f"  replay it: kmc replay {again}", file=out)
        print(f"  explore it: kmc explore {again}", file=out)
    print(file=out)
    if r.verdict == VIOLATED:
        print(f"verdict: VIOLATED: {r.violations[0].property}", file=out)
    else:
        print(f"verdict: NO VIOLATION FOUND in {count(r.walks, 'walk')} ({r.distinct} distinct states, deepest "
              f"{r.deepest}); a simulation is not exhaustive: kmc check proves", file=out)
    out.flush()
    if args.json:
        doc = {**r.as_dict(), "violated_property": r.violations[0].property if r.violations else None,
               "trace_path": trace_path, "engine": engine, "model": model.name, "family": family_ref,
               "preset": preset, "config": config}
        sys.stdout.write(json.dumps(doc, default=str) + "\n")
        sys.stdout.flush()
    if r.verdict == VIOLATED:
        fail(f"property violated: {r.violations[0].property}; replay the trace with kmc replay "
              f"{reopen_args(trace_path or '', family_ref, args.invariants)}", command)
        return EXIT_FAIL
    return EXIT_OK
