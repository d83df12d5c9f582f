"""``kmc conform``: replay traces against a model family's implementation and compare
the two, step by step (checker.conform does the work; this is the command line).

``kmc conform TRACE...`` replays saved traces.  ``kmc conform --preset P`` explores
the preset's state graph, replays a covering set of it (every transition taken at
least once), then the traces under ``--known`` (``traces/known/``) recorded with the
same configuration, then ``--walks N`` random walks of at most ``--depth D`` steps.
A divergence is shrunk, saved under ``--traces-dir`` and reported with the command
that reproduces it.  Exit 0: everything conforms; 1: a divergence (or a trace that no
longer fits the model); 2: bad input; 3: the model broke its contract.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from checker.cmdline import (
    EXIT_CODES, EXIT_FAIL, EXIT_OK, build_model, check_traces_dir, config_text, fail, load_family, nonneg,
    path_arg, positive, registered_name, trace_family, wrap,
)
from checker.errors import UsageError
from checker.junit import Case, junit_xml
from checker.output import check_output, write_output
from checker.errors import describe_exception as _exc
from checker.shellquote import shell_quote
from checker.trace import refuse_trace_names, trace_label

DEFAULT_DEPTH = 50
PROGRESS_SECONDS = 2.0
EXACT_BOUND_EDGES = 20_000      # beyond this, the min-cost flow takes longer than the replay


def register(sub: Any, fmt: Any) -> None:
    from checker.graph import DEFAULT_MAX_STATES

    p = sub.add_parser(
        "conform", help="replay traces against the model's implementation, comparing states step by step",
        allow_abbrev=False, formatter_class=fmt, epilog=EXIT_CODES,
        description=wrap("Drive the model and its implementation (the family's implementation adapter) with "
                          "the same actions: each action must be enabled in both, and after each step the "
                          "implementation's observed state must equal the model's. TRACE files are replayed as "
                          "recorded; --preset P replays a covering set of P's state graph (every transition at "
                          "least once), the traces in --known with the same configuration and, with --walks, "
                          "random walks. A divergence is shrunk and saved as a trace. Exit status of kmc "
                          "conform: 0 everything conforms, 1 a divergence (or a trace that no longer fits the "
                          "model), 2 bad input, 3 the model broke its contract."))
    p.add_argument("traces", nargs="*", metavar="TRACE", help="trace files to replay (kmc check / kmc conform wrote them)")
    p.add_argument("--model", metavar="NAME|module:attr",
                   help="model family (default: the one a trace names; with --preset, the registered model)")
    p.add_argument("--preset", metavar="P", help="generate the corpus from this preset's state graph")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                   help="override one parameter of --preset (repeatable)")
    p.add_argument("--walks", metavar="N", type=nonneg, default=0,
                   help="also run N random walks (Hypothesis, derandomized) on the preset's configuration")
    p.add_argument("--depth", metavar="D", type=positive, default=DEFAULT_DEPTH,
                   help=f"steps per random walk, at most (default {DEFAULT_DEPTH})")
    p.add_argument("--known", metavar="DIR", type=path_arg, default="traces/known",
                   help="with --preset, also replay the traces in DIR recorded with the same configuration "
                        "(default: traces/known; a missing directory is skipped)")
    p.add_argument("--max-states", metavar="N", type=positive, default=DEFAULT_MAX_STATES,
                   help=f"no covering set for a state graph larger than N states (default {DEFAULT_MAX_STATES}): "
                        f"an error, or with --walks the walks alone")
    p.add_argument("--traces-dir", metavar="DIR", type=path_arg, default="traces",
                   help="where a shrunk diverging trace is saved (default: traces/); never overwritten")
    p.add_argument("--probe", action="store_true",
                   help="also ask the implementation, once per state, about every action of the state graph (or "
                        "of the trace's states) that the model does NOT enable there: one it enables is a "
                        "divergence; actions the adapter declares 'bounded' (the model's fault budgets) are "
                        "not asked about. A trace saved from such a divergence probes its action by itself")
    p.add_argument("--share-prefixes", action="store_true",
                   help="with --preset, run each prefix that traces of the corpus share once, going on from a "
                        "pickle copy of the implementation where they part: the same verdict and divergence, "
                        "in about half the steps, for an implementation whose copy behaves as it does (in "
                        "memory; not one that drives processes or sockets)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--junit", metavar="OUT.xml", type=path_arg,
                   help="write JUnit XML: one test case per trace file and per preset, a divergence as a failure "
                        "with the command that replays it")
    p.add_argument("--force", action="store_true",
                   help="overwrite the --junit file if it exists (a regular file, never an input or a link)")
    p.set_defaults(func=cmd_conform)


class _Progress:
    def __init__(self, quiet: bool) -> None:
        self.quiet, self.start, self.last = quiet, time.monotonic(), time.monotonic()

    def tick(self, text: str) -> None:
        now = time.monotonic()
        if not self.quiet and now - self.last >= PROGRESS_SECONDS:
            self.last = now
            print(f"conform: {text}, {now - self.start:.1f} s", file=sys.stderr, flush=True)


def _trace_case(path: str, model_ref: str | None) -> dict[str, Any]:
    """Everything needed to replay one trace file; bad input raises UsageError."""
    from checker.config import resolve
    from checker.conform import load_implementation, probe_actions
    from checker.trace import load_trace

    trace = load_trace(path)
    family, ref = trace_family(trace, model_ref)   # never a module the trace names
    case = {"trace": trace, "family": family, "ref": ref, "impl": load_implementation(family, ref),
            "probe": probe_actions(path), "unfit": None}
    # A recorded config the model takes no more (a key it dropped, a value out of
    # its range or of another type) is a trace that no longer fits: exit 1 at its
    # turn, as kmc replay says (checker.replay), not bad input.
    try:
        case["config"] = resolve(family, None, trace.config)
    except UsageError as e:
        case["unfit"] = f"its config no longer fits model family {ref!r}: {e}"
        return case
    try:
        case["model"] = build_model(family, case["config"])
    except UsageError as e:     # the family's build raised ValueError
        case["unfit"] = f"its config is rejected by model family {ref!r}: {e}"
        return case
    custom = not trace.preset or trace.preset not in family.presets or \
        case["config"] != resolve(family, trace.preset, {})
    case["label"] = trace_label(trace.preset, custom)
    return case


def _fail(args: argparse.Namespace, message: str, command: str) -> None:
    """``fail``, and keep the message for --junit."""
    args.failures.append(message)
    fail(message, command)


def cmd_conform(args: argparse.Namespace, command: str) -> int:
    from checker.conform import PROPERTY

    if not args.traces and not args.preset:
        raise UsageError("nothing to replay: name trace files (kmc conform TRACE...) or a preset "
                         "(kmc conform --preset P)")
    if not args.preset:
        for flag, given in (("--set", args.set), ("--walks", args.walks)):
            if given:
                raise UsageError(f"{flag} needs --preset P (a trace carries its own configuration)")
        if args.share_prefixes:
            raise UsageError("--share-prefixes needs --preset P (it shares the prefixes of a preset's corpus; "
                             "trace files are replayed one by one): drop it or add --preset P")
    check_traces_dir(args.traces_dir)
    if args.preset and Path(args.known).exists() and not Path(args.known).is_dir():
        raise UsageError(f"--known '{args.known}' is a file, not a directory; give the directory of saved traces "
                         f"to replay with --known DIR (default traces/known), or replay the file itself with "
                         f"kmc conform FILE")
    reads = [("the trace", t) for t in args.traces]
    dirs = [("--known", args.known)] if args.preset else []
    if args.junit:      # before a trace file is read as a trace
        check_output(args.junit, args.force, "--junit", reads=reads, dirs=dirs, early=True)
    cases = [_trace_case(t, args.model) for t in args.traces]   # every file is checked before any replay
    plan = _preset_plan(args) if args.preset else None
    # Again, once the families' modules are loaded (never their source) and the names a
    # divergence's trace may be saved under are known (one label per trace file and
    # preset), before any replay: a clash with one first.
    labels = [c["label"] for c in cases if c["unfit"] is None] + ([plan["label"]] if plan else [])
    refuse_trace_names([("--junit", args.junit)], args.traces_dir, [PROPERTY], labels)
    if args.junit:
        check_output(args.junit, args.force, "--junit", reads=reads, dirs=dirs)
    progress = _Progress(args.quiet)
    status = EXIT_OK
    results: list[Case] = []
    t0 = time.monotonic()
    for t, case in zip(args.traces, cases):
        args.failures, start = [], time.monotonic()
        got = _conform_trace(t, case, args, command, progress)
        results.append(_junit_case(t, got, args.failures, time.monotonic() - start))
        status = max(status, got)
    if args.preset:
        args.failures, start = [], time.monotonic()
        got = _conform_preset(args, plan, command, progress)
        results.append(_junit_case(f"preset {args.preset}", got, args.failures, time.monotonic() - start))
        status = max(status, got)
    if args.junit:
        xml = junit_xml("kmc conform", results, time.monotonic() - t0)
        write_output(args.junit, xml.encode(), args.force, "--junit", reads=reads)
    return status


def _junit_case(name: str, status: int, failures: list[str], seconds: float) -> Case:
    """One JUnit test case per trace file or preset: conformance is the property."""
    if status == EXIT_OK:
        return Case(name, "kmc.conform", seconds=seconds)
    message = failures[-1] if failures else "the implementation does not conform"
    return Case(name, "kmc.conform", failure=message.split("; ")[0], text=message, seconds=seconds)


def _conform_trace(path: str, case: dict[str, Any], args: argparse.Namespace, command: str, progress: _Progress) -> int:
    from checker.conform import Harness, NotInModel
    from checker.fingerprint import fingerprint, format_fingerprint

    if case["unfit"] is not None:
        print(f"{path}: {case['unfit']}")
        _fail(args, f"trace '{path}' no longer fits the model: {case['unfit']}; see kmc replay {shell_quote(path)}",
              command)
        return EXIT_FAIL
    trace, model = case["trace"], case["model"]
    harness = Harness(model, case["impl"], case["config"], vocabulary=case["probe"], probe_path=args.probe)
    init = _initial(model, trace)
    actions = [s.action for s in trace.steps[1:]]
    n = len(actions)
    if init is None:
        print(f"{path}: the recorded initial state is not an initial state of the model, which has several")
        _fail(args, f"trace '{path}' no longer fits the model at step 0; see kmc replay {shell_quote(path)}", command)
        return EXIT_FAIL
    try:
        states = harness.model_path(actions, init)
    except NotInModel as e:
        print(f"{path}: {e}")
        _fail(args, f"trace '{path}' no longer fits the model ({e}); see kmc replay {shell_quote(path)}", command)
        return EXIT_FAIL
    stale = next((i for i, (s, rec) in enumerate(zip(states, trace.steps))
                  if format_fingerprint(fingerprint(model, s)).lower() != rec.fingerprint), None)
    d = harness.run(actions, init, source=path)
    if stale is not None:
        print(f"warning: {path}: from step {stale} the model no longer derives the recorded states "
              f"(kmc replay {shell_quote(path)} shows why); checked against the model as it is now")
    if d is None:
        print(f"{path}: conforms ({n} step{'s' if n != 1 else ''})")
        return EXIT_OK
    return _report(harness, d, args, command, case["ref"], trace.preset, case["label"],
                   given=(path, actions, case["probe"]))


def _initial(model: Any, trace: Any) -> Any:
    """The initial state a trace starts from: the one with its step-0 fingerprint, or
    the model's only one (a model change may have changed every fingerprint; what
    conformance replays is the actions).  None when neither is there."""
    from checker.errors import ModelError
    from checker.fingerprint import fingerprint, format_fingerprint
    try:
        inits = list(model.init_states())
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"init_states() raised {_exc(e)}") from e
    want = trace.steps[0].fingerprint
    found = next((s for s in inits if format_fingerprint(fingerprint(model, s)).lower() == want), None)
    return found if found is not None or len(inits) != 1 else inits[0]


def _report(harness: Any, d: Any, args: argparse.Namespace, command: str, ref: str, preset: str | None,
            label: str, given: tuple | None = None) -> int:
    """Shrink ``d``, save the shrunk path (unless the trace file ``given`` already holds
    it, and the action it probes if any), print the report and the one-line failure."""
    from checker.conform import EXTRA, save, shrink

    if not args.quiet:
        n = len(d.actions)
        print(f"conform: shrinking the diverging path ({n} step{'s' if n != 1 else ''})", file=sys.stderr, flush=True)
    small = shrink(harness, d)
    if given is not None and list(small.actions) == list(given[1]) and \
            (small.kind != EXTRA or small.extra in given[2]):
        path: Any = given[0]
    else:
        path = save(harness, small, args.traces_dir, family_ref=ref, preset=preset, label=label, command=command)
    small.trace_path = str(path)
    small.command = f"kmc conform {shell_quote(str(path))}"
    print()
    print(small.render())
    print()
    _fail(args, f"the implementation {small.original.summary}; shrunk to {len(small.actions)} "
          f"step{'s' if len(small.actions) != 1 else ''} in {path}; replay it with {small.command}", command)
    return EXIT_FAIL


def _preset_plan(args: argparse.Namespace) -> dict[str, Any]:
    """--preset's family, configuration, model, implementation and the label its
    divergence is saved under, resolved before any replay: bad input fails here, and
    the label names the trace --junit must not be."""
    from checker.config import parse_set, resolve
    from checker.conform import load_implementation

    family, ref = load_family(args.model)
    config = resolve(family, args.preset, parse_set(args.set))
    custom = config != resolve(family, args.preset, {})
    return {"family": family, "ref": ref, "config": config, "custom": custom, "model": build_model(family, config),
            "impl": load_implementation(family, ref), "label": trace_label(args.preset, custom)}


def _conform_preset(args: argparse.Namespace, plan: dict[str, Any], command: str, progress: _Progress) -> int:
    from checker.conform import Harness, NotInModel, covering_set, fewest_steps, random_walks
    from checker.graph import explore
    from checker.prefixes import pickled, replay

    family, ref, config, custom, model, impl, label = (
        plan[k] for k in ("family", "ref", "config", "custom", "model", "impl", "label"))
    print(f"kmc conform: model {model.name} {model.version} (family {ref}), preset {args.preset}"
          f"{' with overrides' if custom else ''}; implementation {family.implementation}")
    print(config_text("config: ", config))
    ignored = dict(getattr(impl, "ignored", {}) or {})
    if ignored:
        print("not compared (the implementation's fields the projection leaves out):")
        for k, why in ignored.items():
            print(f"  {k}: {why}")
    sys.stdout.flush()

    t0 = time.monotonic()
    try:
        graph = explore(model, max_states=args.max_states)
    except UsageError as e:
        if not args.walks:
            raise UsageError(f"{e} (--max-states N), or replay random walks only (--walks N)") from None
        graph = None
        print(f"state graph: more than {args.max_states} states, so no covering set: random walks only")
    corpus = []
    if graph is not None:
        cover = covering_set(graph)
        t_graph = time.monotonic() - t0
        edges = len(graph.edges)
        print(f"state graph: {len(graph.states)} states, {edges} transitions"
              f"{'' if graph.complete else ' (cut by the model boundary)'} ({t_graph:.1f} s)")
        if edges <= EXACT_BOUND_EDGES:
            best = fewest_steps(graph)
            bound = f"the fewest possible: {best} (min-cost flow), {cover.steps / max(1, best):.2f} x"
        else:
            bound = f"the exact minimum is computed up to {EXACT_BOUND_EDGES} transitions"
        print(f"covering set: {len(cover.paths)} traces, {cover.steps} steps for {edges} transitions "
              f"(lower bound: {edges} steps, one per transition; {bound})")
        corpus = [(f"covering-set trace {i + 1} of {len(cover.paths)} (preset {args.preset})", init, acts)
                  for i, (init, acts) in enumerate(cover.traces)]
    known = _known_traces(args.known, family, ref, config)
    if known:
        print(f"saved traces with this configuration in {args.known}: {len(known)} "
              f"({sum(len(a) for _, _, a in known)} steps)")
    corpus.extend(known)
    sys.stdout.flush()

    vocabulary = [a for _, a, _ in graph.edges] if args.probe and graph is not None else []
    harness = Harness(model, impl, config, vocabulary=vocabulary)
    t1 = time.monotonic()
    steps = 0
    if args.share_prefixes:     # the same (index, divergence) in the same order (checker.prefixes)
        runs = replay(harness, [(init, acts) for _, init, acts in corpus], snapshot=pickled)
    else:
        runs = ((i, harness.run(acts, init, source=source)) for i, (source, init, acts) in enumerate(corpus))
    for i, (source, init, acts) in enumerate(corpus):
        progress.tick(f"{i}/{len(corpus)} traces, {steps} steps")
        try:
            _, d = next(runs)
        except NotInModel as e:
            print(f"{source}: {e}")
            _fail(args, f"trace '{source}' no longer fits the model ({e}); see kmc replay {shell_quote(source)}", command)
            return EXIT_FAIL
        if d is not None:
            d.source = source
            print(f"divergence in {source}; stopped at the first divergence ({i} of {len(corpus)} traces conform)")
            return _report(harness, d, args, command, ref, args.preset, label)
        steps += len(acts)
    t_replay = time.monotonic() - t1
    probed = (f"; in each of {len(harness.probed)} states, the actions of the graph the model does not enable "
              f"there were refused ({harness.probes} questions)" if harness.vocabulary else "")
    shared = f"; {harness.steps} steps run, each shared prefix once" if args.share_prefixes else ""
    if corpus:
        print(f"replayed {len(corpus)} traces, {steps} steps: all conform{probed}{shared} ({t_replay:.1f} s)")
    walk_steps = 0
    if args.walks:
        t2 = time.monotonic()
        before = harness.steps
        d = random_walks(harness, args.walks, args.depth)
        walk_steps = harness.steps - before
        if d is not None:
            d.source = "a random walk"
            print(f"divergence in a random walk ({args.walks} walks of at most {args.depth} steps)")
            return _report(harness, d, args, command, ref, args.preset, label)
        print(f"random walks: {args.walks} of at most {args.depth} steps, {walk_steps} steps: all conform "
              f"({time.monotonic() - t2:.1f} s)")
    covered = (f"; transitions covered: {cover.covered}/{edges} ({100 * cover.covered / max(1, edges):.0f}%)"
               if graph is not None else "")
    print(f"corpus: {len(corpus)} traces, {steps} steps{f' + {walk_steps} random-walk steps' if args.walks else ''}"
          f"{covered}")
    print(f"verdict: CONFORMS ({time.monotonic() - t0:.1f} s)")
    return EXIT_OK


def _known_traces(directory: str, family: Any, ref: str, config: dict) -> list:
    """``(source, initial state, actions)`` of the traces in ``directory`` recorded from
    this family with this configuration, by file name."""
    from checker.config import resolve
    from checker.trace import load_trace

    d = Path(directory)
    if not d.is_dir():
        return []
    out = []
    model = None
    for path in sorted(d.glob("*.json")):
        trace = load_trace(path)
        if registered_name(trace.family_ref) != registered_name(ref):
            continue
        try:
            if resolve(family, None, trace.config) != config:
                continue
        except UsageError:
            continue
        if model is None:
            model = family.build(config)
        init = _initial(model, trace)
        if init is None:
            continue
        out.append((str(path), init, [s.action for s in trace.steps[1:]]))
    return out
