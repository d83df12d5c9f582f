"""The ``kmc`` command line: the parser, ``main`` and ``kmc check`` (``kmc replay``, ``kmc list``
and the other commands are in :mod:`checker.commands`).

Models are found through the ``kmc.models`` entry-point group, or named as
``module:attribute`` with ``--model``; the CLI never imports ``spec/`` by name.

Exit status (every subcommand):

  0  success: the check found no violation (exhaustive, or within the bounds),
     the trace replays and still shows its violation, the listing was printed
  1  a property is violated (a trace is saved), or a trace no longer fits the model
  2  bad input: unknown preset/key/property/model, value out of range, malformed
     config or trace file, bad flag (one line on stderr, no traceback)
  3  the model broke its contract (next_state raised, a state holds a set, ...)
  4  an internal error of kmc itself (set KMC_DEBUG=1 for the traceback)
  130 interrupted (Ctrl-C)

Every failure line on stderr ends with the command that reproduces it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, NoReturn, Sequence, TextIO

from checker import bfs, commands
from checker.cmdline import (MODEL_HELP, deadlock_flags, family_properties, reopen_args, user_properties,
                             user_property_error)
from checker.cmdline import (
    EXIT_CODES, EXIT_FAIL, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_MODEL, EXIT_OK, EXIT_USAGE, config_family,
    load_family,
)
from checker.cmdline import build_model as _build
from checker.cmdline import check_traces_dir as _check_traces_dir
from checker.cmdline import config_text as _config_text
from checker.cmdline import fail as _fail
from checker.cmdline import model_properties as _model_properties
from checker.cmdline import nonneg as _nonneg
from checker.cmdline import engine_of, path_arg, sigterm_as_interrupt
from checker.cmdline import para as _para
from checker.cmdline import positive as _positive
from checker.cmdline import resolve_config as _resolve_config
from checker.cmdline import wrap as _wrap
from checker.config import load_config_file, parse_set, resolve, suggest
from checker.errors import ModelError, NoLongerFits, UsageError
from checker.reduction import plan as reduction_plan
from checker.errors import describe_exception as _exc
from checker.liveness import CheckRun
from checker.model import Property
from checker.output import check_outputs
from checker.report import CheckPlan, Report
from checker.result import DEADLOCK, INTERRUPTED, VIOLATED
from checker.runoutputs import check_junit, write_report
from checker.search import Settings
from checker.shellquote import shell_join
from checker.trace import refuse_trace_names, write_trace

__all__ = ["build_parser", "main", "load_family", "EXIT_CODES"]


class _ArgError(Exception):
    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line (exit 2) instead of usage + message."""

    def error(self, message: str) -> NoReturn:
        raise _ArgError(self.prog, message)


# -------------------------------------------------------------------------- check

def _unknown_property(family: Any, preset: str, custom: bool, name: str, known: list[str]) -> UsageError:
    names = known + ["Deadlock"]
    try:
        elsewhere = {p.name: where for p, where in family_properties(family)}
    except (UsageError, ModelError):
        elsewhere = {}
    if name in elsewhere:
        where = elsewhere[name]
        config = f"preset {preset}{' with your overrides' if custom else ''}"
        hint = (f"presets that declare it: {', '.join(where)}" if where
                else "no preset declares it; it needs other settings")
        return UsageError(f"property {name!r} is not declared by this configuration ({config}); {hint} "
                          f"(see kmc list properties)")
    return UsageError(f"unknown property {name!r}{suggest(name, names)} (known: {', '.join(names)}); "
                      f"see kmc list properties")


def _engine(args: argparse.Namespace) -> str:
    """``local`` or ``spark``: the Spark options imply ``--engine spark``."""
    return engine_of(args.engine, (("--spark-master", args.spark_master), ("--spark-partitions", args.spark_partitions),
                                   ("--checkpoint", args.checkpoint), ("--resume", args.resume),
                                   ("--spark-driver-states", args.spark_driver_states),
                                   ("--spark-placement", args.spark_placement)))


def _spark_check(args: argparse.Namespace, model: Any, props: list, settings: Settings, out: TextIO,
                 visitor: Any = None) -> Any:
    try:
        from checker.spark import check as spark_check
        from checker.spark.checkpoint import check_directory, preflight, refuse_another_run, signing_key
    except ImportError as e:
        raise UsageError(f"the Spark engine needs pyspark and numpy ({e}); install kmc with its dependencies "
                         f"(pip install -e .) or use --engine local") from None
    if args.checkpoint:
        check_directory(args.checkpoint, "--checkpoint", must_exist=False)
        refuse_another_run(args.checkpoint, args.resume)
        signing_key(create=True)            # an unusable key is refused before Spark starts
    if args.resume:
        check_directory(args.resume, "--resume", must_exist=True)
        preflight(args.resume)              # a corrupt checkpoint is refused before Spark starts
    from checker.spark.session import failure, log_path
    again = args.checkpoint or args.resume
    try:
        result = spark_check(model, properties=props, settings=settings, master=args.spark_master,
                             partitions=args.spark_partitions, checkpoint=args.checkpoint, resume=args.resume,
                             visitor=visitor,
                             **({} if args.spark_driver_states is None else {"driver_states": args.spark_driver_states}),
                             **({} if args.spark_placement is None else {"placement": args.spark_placement}))
    except KeyboardInterrupt:
        hint = f"go on from the last complete level with --resume {again}; " if again else ""
        raise KeyboardInterrupt(f"{hint}Spark's log: {log_path()}") from None
    except (UsageError, ModelError):
        raise
    except Exception as e:  # noqa: BLE001 - a full disk, a dead executor: not kmc's bug
        raise failure(e, again) or e
    e = result.engine
    if not args.quiet:
        print(f"spark: {e['master']}, {e['partitions']} partition{'s' if e['partitions'] != 1 else ''}, "
              f"{len(e['levels'])} levels; Spark start-up {e['startup_seconds']:.1f} s (not in the time below); "
              f"visited set {e['visited_bytes_per_state']:.0f} bytes/state; executors' peak memory "
              f"{e['executor_peak_rss_bytes'] / 2**20:.0f} MiB", file=out)
    if args.checkpoint and not args.resume and e["levels"] and e["driver_levels"] == len(e["levels"]):
        # Levels are saved from the first one the partitions take; a run the driver's
        # core finishes (every level narrow) leaves the directory as it was.
        print(f"no checkpoint written to {args.checkpoint}: every level ran on the driver (no level wider than "
              f"--spark-driver-states, {e['driver_states']} states), so there is nothing to resume", file=out)
    return result


def resolve_check(args: argparse.Namespace, command: str) -> CheckPlan:
    """The command line resolved and checked, before anything runs: a bad flag,
    preset, key, property or --traces-dir fails here, in one line."""
    file_cfg = load_config_file(args.config) if args.config else None
    parse_set(args.set)  # report a malformed --set before loading anything
    _check_traces_dir(args.traces_dir)
    outputs = (("--report", args.report), ("--junit", args.junit))
    reads = [("--config", args.config), *(("--invariants", f) for f in args.invariants or [])]
    dirs = [("--checkpoint", args.checkpoint), ("--resume", args.resume)]
    check_outputs(outputs, args.force, reads=reads, dirs=dirs, early=True)    # before an input is run
    engine = _engine(args)
    if engine == "spark" and args.spark_master is not None:
        from checker.spark.session import master_problem
        problem = master_problem(args.spark_master)   # before anything is built or printed
        if problem:
            raise UsageError(f"--spark-master {problem}")
    family, family_ref = config_family(args.model, file_cfg)
    preset, config = _resolve_config(args, family, file_cfg)
    model = _build(family, config)
    model_props = _model_properties(model)
    user_props = user_properties(args.invariants or [], model_props)
    props = model_props + user_props
    custom = config != resolve(family, preset, {})
    deadlock_flags(args.property, args.no_deadlock)
    check_deadlock = not args.no_deadlock
    if args.property:
        known = [p.name for p in props]
        chosen: list[Property] = []
        want_deadlock = False
        for name in args.property:
            if name == "Deadlock":
                want_deadlock = True
                continue
            if name not in known:
                raise _unknown_property(family, preset, custom, name, known)
            chosen.extend(p for p in props if p.name == name and p not in chosen)
        props = chosen
        check_deadlock = check_deadlock and want_deadlock
    live = CheckRun(model, props, args.property, engine, args.max_depth, args.max_states, command,
                    resume=bool(args.resume))
    plan = CheckPlan(family=family, family_ref=family_ref, preset=preset, config=config, custom=custom,
                     model=model, props=props, model_props=model_props, user_props=user_props,
                     check_deadlock=check_deadlock, engine=engine, live=live, command=command,
                     invariants=list(args.invariants or []))
    # Again, now that the model's module is loaded (an output must not be its source)
    # and the names the run's traces may take are known (a trace is saved only after
    # the search, under a name known before it): a clash with one first.
    saved = [p.name for p in props] + ([DEADLOCK] if check_deadlock else [])
    refuse_trace_names(outputs, args.traces_dir, saved, [plan.label])
    check_outputs(outputs, args.force, reads=reads, dirs=dirs)
    return plan


def _check_header(plan: CheckPlan, args: argparse.Namespace, out: TextIO) -> None:
    model = plan.model
    print(f"kmc check: model {model.name} {model.version} (family {plan.family_ref}), preset {plan.preset}"
          f"{' with overrides' if plan.custom else ''}", file=out)
    print(_config_text("config: ", plan.config), file=out)
    total = len(plan.model_props) + len(plan.user_props)
    what = f"{len(plan.props)} of {total} (--property)" if args.property else f"{len(plan.props)}"
    extra = f"; {len(plan.user_props)} from --invariants" if plan.user_props else ""
    bounds = []
    if args.max_depth is not None:
        bounds.append(f"max depth {args.max_depth}")
    if args.max_states is not None:
        bounds.append(f"max states {args.max_states}")
    if args.time_limit is not None:
        bounds.append(f"time limit {args.time_limit} s")
    print(f"properties: {what}{extra}; deadlock check {'on' if plan.check_deadlock else 'off'}"
          f"{'; ' + ', '.join(bounds) if bounds else ''}", file=out)
    if plan.engine == "spark":
        print(f"engine: spark on {args.spark_master or 'local[*] (embedded)'}"
              f"{f', {args.spark_partitions} partitions' if args.spark_partitions else ''}"
              f"{f'; resuming from {args.resume}' if args.resume else ''}"
              f"{f'; checkpoints in {args.checkpoint}' if args.checkpoint else ''}", file=out)
    out.flush()


def run_check(plan: CheckPlan, args: argparse.Namespace, out: TextIO, reduced: Any = None) -> Report:
    """The search (one, with the liveness graph built during it on either
    engine), the liveness check, and a trace saved for every violation with a path.
    ``reduced``: a checker.reduction.Plan (--symmetry, --por) the engine runs instead."""
    live = plan.live
    settings = Settings(max_depth=args.max_depth, max_states=args.max_states, keep_going=args.keep_going,
                        check_deadlock=plan.check_deadlock, progress=None if args.quiet else sys.stderr,
                        time_limit=args.time_limit)
    model, props = plan.model, plan.engine_props
    visitor = live.visitor
    if reduced is not None and reduced.model is not plan.model:
        model, props = reduced.model, reduced.props
        visitor = lambda: None      # noqa: E731 - the reduced graph is not the model's: liveness explores its own
    try:
        if plan.engine == "spark":
            result = _spark_check(args, model, props, settings, out, visitor())
        else:
            result = bfs.check(model, properties=props, settings=settings, visitor=visitor())
        if reduced is not None:
            result = reduced.finish(result)
        lassos = live.after_search(result, args.keep_going)
    except ModelError as e:
        raise user_property_error(e, args.invariants) or e
    if lassos:
        result.violations.extend(lassos)
        result.verdict = VIOLATED
    report = Report(plan, result, keep_going=args.keep_going)
    model = plan.model
    for v in result.violations:
        if not v.path:
            continue
        try:
            path = write_trace(args.traces_dir, family_ref=plan.family_ref, model=model, config=plan.config,
                               preset=plan.preset, violation=v, command=plan.command, properties=plan.props,
                               invariants=args.invariants or [], label=plan.label)
        except OSError as e:
            raise UsageError(f"cannot write a trace to '{args.traces_dir}': {e.strerror or e}; "
                             f"choose another directory with --traces-dir DIR") from None
        except (UsageError, ModelError):
            raise
        except Exception as e:  # noqa: BLE001 - describe() is model code
            raise ModelError(f"saving the trace of {v.property}: {model.name}.describe() raised {_exc(e)}") from e
        report.traces[id(v)] = str(path)
    return report


def cmd_check(args: argparse.Namespace, command: str) -> int:
    """resolve -> run -> render (text, and --json on stdout)."""
    out: TextIO = sys.stderr if args.json else sys.stdout
    plan = resolve_check(args, command)
    reduced = reduction_plan(plan.model, plan.engine_props, symmetry=args.symmetry, por=args.por,
                             engine=plan.engine)
    live = plan.live
    if reduced.model is not plan.model and live.active and not live.explicit:
        live.skipped = (f"{', '.join(p.name for p in live.props)} not checked: a reduced search does not build the "
                        f"model's state graph (check them without --symmetry/--por, or name them with --property)")
    if not args.quiet:
        _check_header(plan, args, out)
        for note in reduced.notes:
            print(_para("", note, 4), file=out)
        out.flush()
    report = run_check(plan, args, out, reduced)
    if reduced.ample is not None and not args.quiet:
        a = reduced.ample
        print(_para("", f"partial-order reduction: {a.reduced_states:,} of the {a.expanded:,} states expanded "
                        f"took a proper subset of their enabled actions ({a.full_by_proviso:,} expanded fully by "
                        f"the cycle proviso)", 4), file=out)
    print(report.text(), file=out)
    out.flush()
    traces_by_property: dict[str, str] = {}
    for v in report.result.violations:
        if id(v) in report.traces:
            traces_by_property.setdefault(v.property, report.traces[id(v)])
    common = dict(result=report.result, props=plan.props, check_deadlock=plan.check_deadlock, live=plan.live,
                  traces=traces_by_property)
    if args.report:
        written, notes = write_report(args.report, args.force, title=f"preset {plan.label}", command=command,
                                      model=plan.model, family=plan.family, engine=plan.engine,
                                      config=plan.config, avoid=[args.junit] if args.junit else [], **common)
        print(f"report: {written[0]}" + (f" (and {len(written) - 1} counterexample pages beside it)"
                                         if len(written) > 1 else ""), file=out)
        for note in notes:
            print(_para("", note, 4), file=out)
    if args.junit:
        check_junit(args.junit, args.force, suite=f"kmc check {plan.label}",
                    classname=f"{plan.model.name}.{plan.label}", family_ref=plan.family_ref,
                    invariants=plan.invariants, **common)
        print(f"junit: {args.junit}", file=out)
    out.flush()
    if args.json:
        sys.stdout.write(json.dumps(report.as_json(), default=str) + "\n")
        sys.stdout.flush()
    if report.result.stats.stopped_by == INTERRUPTED:
        raise KeyboardInterrupt("the summary above is how far the search got; "
                                "--time-limit SECONDS ends a search the same way")
    if report.result.verdict == VIOLATED:
        paths = report.trace_paths
        again = reopen_args(paths[0], plan.family_ref, plan.invariants) if paths else ""
        where = f"; replay the trace with kmc replay {again}" if paths else ""
        _fail(f"property violated: {', '.join(report.violated())}{where}", command)
        return EXIT_FAIL
    return EXIT_OK


# --------------------------------------------------------------------------- main

def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog="kmc", allow_abbrev=False, formatter_class=fmt,
                     description="Model-check the Kafka controller model (or any kmc model family).",
                     epilog=EXIT_CODES)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    sub.required = True

    c = sub.add_parser("check", help="explore every reachable state and check the properties",
                       allow_abbrev=False, formatter_class=fmt, epilog=EXIT_CODES,
                       description=_wrap("Explore the state space breadth-first and check every property. "
                                   "A violation is saved as a JSON trace that `kmc replay` re-derives."))
    c.add_argument("--model", metavar="NAME|module:attr", help=MODEL_HELP)
    c.add_argument("--preset", metavar="P", help="configuration preset (default: the family's default preset; "
                                                 "see kmc list presets)")
    c.add_argument("--config", metavar="FILE.toml", type=path_arg,
                   help="TOML file with preset = \"...\", model = \"...\" and key = value lines (top level or "
                        "in [config])")
    c.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                   help="override one parameter (repeatable; applied after the preset and --config)")
    c.add_argument("--invariants", metavar="FILE.py", type=path_arg, action="append", default=[],
                   help="Python file defining extra properties with checker.model.always()/sometimes() "
                        "(repeatable)")
    c.add_argument("--property", metavar="NAME", action="append", default=[],
                   help="check only this property (repeatable; Deadlock is checked only if named too)")
    c.add_argument("--max-depth", metavar="N", type=_nonneg, help="stop expanding states at depth N")
    c.add_argument("--max-states", metavar="N", type=_positive,
                   help="stop after N distinct states (also the state-graph limit for eventually properties, "
                        "default 200000)")
    c.add_argument("--time-limit", metavar="SECONDS", type=_positive,
                   help="stop after this many seconds and report how far the search got, as a bound does "
                        "(the counts then vary from run to run); Ctrl-C also ends with that report")
    c.add_argument("--continue", dest="keep_going", action="store_true",
                   help="keep exploring after a violation (report every violated property)")
    c.add_argument("--no-deadlock", action="store_true", help="do not report states without enabled actions")
    c.add_argument("--symmetry", action="store_true",
                   help="symmetry reduction: store one state per orbit of the model's symmetric ids (checked on a "
                        "sample first); counterexamples are rebuilt on the full model")
    c.add_argument("--por", action="store_true",
                   help="partial-order reduction: explore stubborn sets of the enabled actions, from the model's "
                        "declared footprints (checked on a sample first); local engine only")
    c.add_argument("--traces-dir", metavar="DIR", type=path_arg, default="traces",
                   help="where counterexample traces are saved (default: traces/ in the current directory); "
                        "existing files are never overwritten")
    c.add_argument("--json", action="store_true",
                   help="print one JSON object with the results on stdout; human output goes to stderr")
    c.add_argument("--quiet", action="store_true", help="no header and no progress lines")
    c.add_argument("--engine", choices=["local", "spark"],
                   help="local: this process (the default); spark: the frontier and the visited set partitioned "
                        "across Spark executors, the same answers (implied by the options below)")
    c.add_argument("--spark-master", metavar="URL",
                   help="run on this Spark cluster (spark://host:7077, yarn, k8s://...; default: Spark embedded "
                        "in local mode on every core)")
    c.add_argument("--spark-partitions", metavar="N", type=_positive,
                   help="partitions of the state space (default: the cluster's default parallelism)")
    c.add_argument("--spark-driver-states", metavar="N", type=_nonneg,
                   help="expand the first levels on the driver, with the local engine's core, until one holds "
                        "more than N states (default 2000; 0: every level on Spark)")
    c.add_argument("--spark-placement", choices=["key", "fingerprint"],
                   help="which partition holds a state: key (the default), by the model's partition_key where it "
                        "has one, so most successors stay in their parent's partition; fingerprint: by fingerprint, "
                        "which spreads states evenly over many partitions")
    c.add_argument("--checkpoint", metavar="DIR", type=path_arg,
                   help="save every finished level in DIR (a local path or a Hadoop URL), for --resume")
    c.add_argument("--resume", metavar="DIR", type=path_arg,
                   help="go on with an interrupted run from its --checkpoint DIR")
    c.add_argument("--report", metavar="OUT.html", type=path_arg,
                   help="write a run report: configuration, a plot per BFS level, every property's verdict, "
                        "action coverage, and a page per counterexample (OUT-<trace>.html beside it)")
    c.add_argument("--junit", metavar="OUT.xml", type=path_arg, help="write JUnit XML: one test case per property")
    c.add_argument("--force", action="store_true",
                   help="overwrite the --report and --junit files if they exist (regular files only, never an "
                        "input or a link)")
    c.set_defaults(func=cmd_check)

    for module in commands.modules():
        module.register(sub, fmt)
    sub.metavar = "{" + ",".join(sub.choices) + "}"
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = shell_join(["kmc", *argv])
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:
            raise _ArgError(f"kmc {args.command}", f"unrecognized arguments: {' '.join(extra)}")
        if getattr(args, "preset", None) is not None and not args.preset.strip():
            raise UsageError(f"--preset {args.preset!r} names no preset; pick one with --preset NAME "
                             f"(see kmc list presets), or leave --preset out for the default")
        try:
            # SIGTERM (timeout, a CI limit, kill) stops every command as Ctrl-C does: a
            # search says how far it went, a Spark run how to resume; exit 130.
            with sigterm_as_interrupt("stopped as by Ctrl-C"):
                return int(args.func(args, command))
        except SystemExit as e:
            # No command of kmc exits by raising SystemExit; one that reaches here was
            # raised by the code the run called (a model, a property, an adapter).
            raise ModelError(f"model or user code called sys.exit({e.code!r}) (raised SystemExit) during the "
                             f"run; a model, property or adapter must return or raise an exception, never "
                             f"exit the process: fix it") from e
        except (Exception, KeyboardInterrupt, GeneratorExit):
            raise
        except BaseException as e:  # noqa: BLE001
            # Neither kmc nor Python raises another BaseException here: the code the run
            # called did (USER_CODE_ERRORS catches Exception and SystemExit only), and a
            # user's --invariants file is named with its line, as for an Exception.
            msg = " ".join(str(e).split())
            err = ModelError(f"model or user code raised {type(e).__name__}{': ' + msg if msg else ''}, which "
                             f"is a BaseException but no Exception; raise an Exception subclass instead")
            err.__cause__ = e
            raise user_property_error(err, getattr(args, "invariants", None) or []) or err from e
    except _ArgError as e:
        msg = str(e).replace("\n", " ")
        bad = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", msg)
        if e.prog == "kmc" and "required" in msg:
            names = list(parser._subparsers._group_actions[0].choices)
            msg = f"choose a command: {', '.join(names[:-1])} or {names[-1]}"
        elif bad:
            choices = [c.strip(" '") for c in bad.group(2).split(",")]
            noun = "command" if e.prog == "kmc" else "choice"
            msg = f"unknown {noun} {bad.group(1)!r}{suggest(bad.group(1), choices)}; choose one of {', '.join(choices)}"
        _fail(f"{msg}; see {e.prog} --help", command, "error: ")
        return EXIT_USAGE
    except UsageError as e:
        _fail(" ".join(str(e).split("\n")), command, "error: ")
        return EXIT_USAGE
    except NoLongerFits as e:
        _fail(" ".join(str(e).split("\n")), command)
        return EXIT_FAIL
    except ModelError as e:
        msg = str(e).strip()
        if msg.lower().startswith("model error:"):
            msg = msg[len("model error:"):].strip()
        _fail(msg, command, "the model broke its contract: ")
        return EXIT_MODEL
    except KeyboardInterrupt as e:
        _fail(f"interrupted{'; ' + str(e) if str(e) else ''}", command)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # noqa: BLE001
        if os.environ.get("KMC_DEBUG"):
            raise
        what = _exc(e).split("\n")[0]            # a Java error's message holds its whole stack
        what = what if len(what) <= 300 else what[:297] + "..."
        _fail(f"{what}; this is a bug in kmc: rerun with KMC_DEBUG=1 for the traceback and report it",
              command, "internal error: ")
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
