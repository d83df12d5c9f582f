"""``kmc mutate``: how much does a corpus check?  Mutation testing of a model family's
implementation (against its conformance corpus) or of the model itself (against its
test suite), as the family declares them in ``mutation_targets``
(``checker.mutation.MutationTarget``).

``kmc mutate impl --sample 200 --seed 17`` generates every single-point mutant of
the target's modules (checker.mutation), takes a seeded sample, runs the corpus
against each in a fresh process (checker.mutation_run), ``--workers`` at a time or
one Spark task each (``--engine spark``), and prints killed, survived and timed out
per module and per operator, the score, the survivors with their diffs and the
killed ones with the first divergence.  Exit 0; 1 when the score is below
``--min-score`` (or the corpus fails on the unmutated code); 2 bad input.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from checker.cmdline import (
    EXIT_CODES, EXIT_FAIL, EXIT_OK, fail, load_family, nonneg, path_arg, percent, positive, registered_models,
    seed, sigterm_as_interrupt, wrap,
)
from checker.config import resolve
from checker.errors import UsageError
from checker.output import check_output, write_output
from checker.mutation import OPERATORS, CommandCorpus, collect, load_equivalents, sample, valid
from checker.mutation_run import (
    IGNORE, SURVIVED, Run, baseline, children_stopped, prepare_command, prepare_conform, report, run_all, score,
)

DEFAULT_SAMPLE = 200
DEFAULT_WORKERS = 2
DEFAULT_SEED = 17


def register(sub: Any, fmt: Any) -> None:
    p = sub.add_parser(
        "mutate", help="mutation testing: how many single-point mutants does the corpus kill?",
        allow_abbrev=False, formatter_class=fmt, epilog=EXIT_CODES,
        description=wrap("Generate deterministic single-point mutants of a target's modules (comparison "
                          "swaps, off-by-one constants, min/max, negations, and/or, +/-, True/False, deleted "
                          "statements, dropped return values), take a seeded sample, and run the target's corpus "
                          "against each mutant in a fresh process: the conformance corpus for an implementation, "
                          "the test suite for the model. A mutant the corpus does not tell from the original "
                          "survives. Mutants listed in the family's file of equivalent mutants are not run nor "
                          "scored. Exit status of kmc mutate: 0 done (and the score reaches --min-score), 1 the "
                          "score is below --min-score or the corpus fails on the unmutated code, 2 bad input."))
    p.add_argument("target", nargs="?", metavar="TARGET",
                   help="what to mutate: a target the family declares (kafka: impl, spec); default the first")
    p.add_argument("--model", metavar="NAME|module:attr", help="model family (default: the registered model)")
    p.add_argument("--sample", metavar="N", type=nonneg,
                   help=f"mutants to run, a seeded sample of all of them (default {DEFAULT_SAMPLE}; 0: all)")
    p.add_argument("--seed", metavar="S", type=seed,
                   help=f"seed of the sample (default {DEFAULT_SEED})")
    p.add_argument("--gate", action="store_true",
                   help="the target's CI gate: its sample size and seed, its corpus (the cheapest runs) and its "
                        "minimum score (so not with --sample or --seed)")
    p.add_argument("--module", metavar="GLOB", action="append", default=[],
                   help="only modules matching GLOB, e.g. 'impl/log.py' (repeatable)")
    p.add_argument("--operator", metavar="OP", action="append", default=[], choices=OPERATORS,
                   help=f"only these operators (repeatable): {', '.join(OPERATORS)}")
    p.add_argument("--mutant", metavar="ID", action="append", default=[],
                   help="only the mutant with this id (repeatable; not with --sample or --seed)")
    p.add_argument("--workers", metavar="W", type=positive,
                   help=f"mutants run at once (default {DEFAULT_WORKERS})")
    p.add_argument("--timeout", metavar="SEC", type=positive,
                   help="seconds one mutant may take (default: 4 x the unmutated run + 30)")
    p.add_argument("--engine", choices=("local", "spark"), default="local",
                   help="local: worker threads, each starting one process per mutant; spark: one Spark task "
                        "per mutant (default local)")
    p.add_argument("--spark-master", metavar="URL", help="with --engine spark: the master (default local[W])")
    p.add_argument("--min-score", metavar="PCT", type=percent,
                   help="exit 1 if the score is below PCT percent")
    p.add_argument("--json", metavar="FILE", type=path_arg,
                   help="also write every outcome as JSON to FILE (never overwritten)")
    p.add_argument("--list", action="store_true", help="list the sampled mutants and their diffs; run nothing "
                                                        "(so none of the flags of a run)")
    p.add_argument("--no-diffs", action="store_true", help="list survivors (or, with --list, the mutants) without "
                                                            "their diffs")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_mutate)


def _family_ref(ref: str) -> str:
    """The family as ``module:attribute``, which the child processes import."""
    if ":" in ref:
        return ref
    return registered_models()[ref].value


def _target(family: Any, name: str | None, command: str) -> tuple[str, Any]:
    targets = dict(getattr(family, "mutation_targets", None) or {})
    if not targets:
        raise UsageError(f"model family {family.name!r} declares no mutation targets; set "
                         f"ModelFamily.mutation_targets (see checker/mutation.py)")
    if name is None:
        name = next(iter(targets))
    if name not in targets:
        raise UsageError(f"model family {family.name!r} has no mutation target {name!r}; "
                         f"choose one of {', '.join(targets)}")
    return name, targets[name]


def cmd_mutate(args: argparse.Namespace, command: str) -> int:
    family, ref = load_family(args.model)
    name, target = _target(family, args.target, command)
    spec = importlib.util.find_spec(target.package)
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"mutation target {name!r}: package {target.package!r} is not importable")
    pkg_dir = Path(list(spec.submodule_search_locations)[0]).resolve()
    root = pkg_dir.parent
    modules = sorted(str(p.relative_to(root)).replace("\\", "/") for p in pkg_dir.rglob("*.py")
                     if "__pycache__" not in p.parts)
    modules = [m for m in modules if not any(fnmatch.fnmatch(m, x) for x in target.exclude)]
    if args.module:
        modules = [m for m in modules if any(fnmatch.fnmatch(m, g) for g in args.module)]
        if not modules:
            raise UsageError(f"no module of {target.package}/ matches {', '.join(args.module)}; give a glob of "
                             f"paths from the project's root, e.g. --module '{target.package}/*.py'")
    if args.list:   # what only a run does: each was accepted and had no effect
        given = [flag for flag, value in (("--json", args.json), ("--min-score", args.min_score),
                                          ("--timeout", args.timeout), ("--workers", args.workers),
                                          ("--spark-master", args.spark_master),
                                          ("--engine", None if args.engine == "local" else args.engine))
                 if value is not None]
        if given:
            raise UsageError(f"--list runs nothing, so {given[0]} has no effect; drop {given[0]}, or drop --list")
    if args.json:     # before the run, not after it: it exists, is a link, or its directory is missing
        check_output(args.json, None, "--json")
    if args.workers is None:
        args.workers = DEFAULT_WORKERS
    if args.list:
        return _measure(args, command, family, ref, name, target, root, modules, "")
    # Every mutant is a copy of one snapshot of the project, taken now: editing the
    # working tree while mutants run changes nothing.
    # SIGTERM (a CI timeout, kill) stops the run as Ctrl-C does: the running children are
    # killed (they run in sessions of their own, out of reach of both signals) and the
    # scratch directory is removed.
    with sigterm_as_interrupt("the running mutants were stopped and the scratch directory removed"):
        scratch = tempfile.mkdtemp(prefix="kmc-mutate-")
        try:
            snapshot = Path(scratch) / "snapshot"
            shutil.copytree(root, snapshot, ignore=IGNORE, symlinks=True)
            return _measure(args, command, family, ref, name, target, snapshot, modules, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            children_stopped()


def _measure(args: argparse.Namespace, command: str, family: Any, ref: str, name: str, target: Any, root: Path,
             modules: list, scratch: str) -> int:
    try:
        equivalents = load_equivalents(root / target.equivalents) if target.equivalents else {}
    except ValueError as e:
        raise UsageError(f"equivalent-mutants file: {e}; fix that line") from None
    size = (DEFAULT_SAMPLE if args.sample is None else args.sample) or None
    seed = DEFAULT_SEED if args.seed is None else args.seed
    min_score, corpus = args.min_score, target.corpus
    if args.gate:
        if not target.gate:
            raise UsageError(f"mutation target {name!r} declares no CI gate")
        for flag, value in (("--sample", args.sample), ("--seed", args.seed)):
            if value is not None:   # the gate's own would silently win
                raise UsageError(f"--gate runs the gate's own sample and seed ({target.gate.sample} mutants, "
                                 f"seed {target.gate.seed}); drop {flag}, or drop --gate")
        size, seed, corpus = target.gate.sample, target.gate.seed, target.gate.corpus or target.corpus
        min_score = target.gate.min_score if min_score is None else min_score
    if args.mutant:
        for flag, value in (("--sample", args.sample), ("--seed", args.seed)):
            if value is not None:   # the named mutants run, whatever the sample
                raise UsageError(f"--mutant runs the mutants it names, not a sample; drop {flag}, or drop --mutant")
    everything = collect(root, modules, args.operator or OPERATORS, validate=False)
    if args.mutant:
        chosen = [m for m in everything if m.id in set(args.mutant)]
        missing = set(args.mutant) - {m.id for m in chosen}
        if missing:
            raise UsageError(f"no mutant {', '.join(sorted(missing))} in {target.package}/ (ids change only "
                             f"when the mutated code does); list them with kmc mutate {name} --list")
    else:
        chosen = sample(everything, size, seed)
    sources = {mod: (root / mod).read_text(encoding="utf-8") for mod in {m.module for m in chosen}}
    chosen = [m for m in chosen if valid(m, sources[m.module])]     # parsing all of them costs minutes
    print(f"kmc mutate: family {ref}, target {name} ({target.package}/, {len(modules)} modules): "
          f"{len(everything)} mutants, running {len(chosen)}"
          + (f" (seeded sample, seed {seed})" if len(chosen) < len(everything) and not args.mutant else ""))
    if args.list:
        for m in chosen:
            eq = equivalents.get(m.id)
            print(m.label + (f"  [equivalent: {eq}]" if eq else ""))
            if not args.no_diffs:
                print("".join("    " + ln + "\n" for ln in m.diff((root / m.module).read_text()).splitlines()[2:]),
                      end="")
        return EXIT_OK

    note = (lambda s: None) if args.quiet else (lambda s: print(f"mutate: {s}", file=sys.stderr, flush=True))
    t0 = time.monotonic()
    if isinstance(corpus, CommandCorpus):
        job = prepare_command(corpus)
        print(f"corpus: {' '.join(corpus.argv)}")
    else:
        job = prepare_conform(family, _family_ref(ref), target.package, corpus, root, resolve, note)
        steps = sum(len(a) for r in job["runs"] for _, a in r["traces"])
        walks = sum(r["walks"] for r in job["runs"])
        print(f"corpus: {len(corpus.runs)} conformance runs, cheapest first: "
              f"{', '.join(r.label for r in corpus.runs)}; {steps} replayed steps"
              + (f" and {walks} random walks" if walks else "") + f" (prepared in {time.monotonic() - t0:.1f} s)")
    sys.stdout.flush()
    run = Run(root, job, chosen, {m.id: equivalents[m.id] for m in chosen if m.id in equivalents},
              workers=args.workers, timeout=args.timeout)
    job_path = str(Path(scratch) / "job.json")
    Path(job_path).write_text(json.dumps(job), encoding="utf-8")
    note("running the corpus on the unmutated code")
    base = baseline(run, scratch, job_path)
    if base["verdict"] != SURVIVED:
        print(f"the corpus does not pass on the unmutated code: {base['where']}: {base['detail']}")
        fail(f"the corpus of target {name!r} fails on the unmutated code ({base['verdict']}: "
              f"{base['detail'][:200]}); fix that before measuring mutants", command)
        return EXIT_FAIL
    run.baseline = base["seconds"]
    cov = base.get("coverage")
    print(f"baseline: the unmutated code passes the corpus in {run.baseline:.1f} s"
          + (f" ({base['wall']:.1f} s elapsed, {base['processes']} processes at once)"
             if base.get("processes", 1) > 1 else "")
          + (" (lines recorded: each mutant replays only the traces that execute its lines)" if cov else "")
          + (f"; timeout per mutant {run.timeout:.0f} s" if run.timeout else
             "; timeout per mutant 4 x its share of the baseline + 30 s")
          + f"; {args.workers} worker{'s' if args.workers != 1 else ''}"
          f"{' (Spark, one task per mutant)' if args.engine == 'spark' else ''}")
    sys.stdout.flush()
    last = [time.monotonic()]

    def progress(done: list) -> None:
        now = time.monotonic()
        if not args.quiet and (now - last[0] >= 10 or len(done) == len(chosen) - len(run.equivalents)):
            last[0] = now
            counts = {v: sum(d["verdict"] == v for d in done) for v in ("killed", "timeout", "survived")}
            note(f"{len(done)}/{len(chosen) - len(run.equivalents)} mutants, {counts['killed']} killed, "
                 f"{counts['timeout']} timed out, {counts['survived']} survived, {now - t0:.0f} s")

    outcomes = run_all(run, scratch, job_path, progress, args.engine, args.spark_master, base.get("coverage"))
    print()
    for line in report(outcomes, root, diffs=not args.no_diffs):
        print(line)
    detected, scored, pct = score(outcomes)
    eq = sum(o.verdict == "equivalent" for o in outcomes)
    text = "-" if pct is None else f"{pct:.1f}%"
    print(f"score: {detected} of {scored} non-equivalent mutants detected: {text} "
          f"({eq} equivalent not scored; {time.monotonic() - t0:.0f} s)")
    if args.json:
        doc = {"family": ref, "target": name, "package": target.package, "seed": seed, "sample": len(chosen),
               "mutants_total": len(everything), "gate": bool(args.gate),
               "corpus": list(corpus.argv) if isinstance(corpus, CommandCorpus) else [r.label for r in corpus.runs],
               "baseline_seconds": round(run.baseline, 2),
               "timeout_seconds": run.timeout, "detected": detected, "scored": scored,
               "score": pct, "outcomes": [o.to_json() for o in outcomes]}
        write_output(args.json, json.dumps(doc, indent=1).encode(), None, "--json")
    if min_score is not None and (pct is None or pct < min_score):
        # two decimals: 82.57% reads "82.6%" above, which must not look like the level it misses
        exact = "-" if pct is None else f"{pct:.2f}%"
        fail(f"mutation score {exact} is below the minimum {min_score:g}% ({scored - detected} survivors "
              f"listed above)", command)
        return EXIT_FAIL
    return EXIT_OK
