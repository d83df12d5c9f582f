"""``kmc cluster``: run a model family's real cluster under random faults, check it,
and validate its logs against the model (checker.tracecheck).

The family names its cluster runner in ``ModelFamily.cluster`` (``module:attribute``;
Kafka's is impl/clusterrun.py).  The contract, kept small so that this command knows
nothing of any particular system::

    runner.options_error(options) -> str | None          # a one-line error for bad options
    runner.run(options, progress) -> result               # options: brokers, faults, seconds, seed, dir, broken
    result.checks: list[str]      # what was checked and held, one line each
    result.failures: list[str]    # what failed, one line each
    result.observed               # events, project, model_config() (checker.tracecheck.validate_observed)
    result.directory              # where the run's logs are

Exit 0: every check held and the observed trace is a behaviour of the model; 1: a
check failed or the trace was rejected (or the search ran out of budget: no verdict);
2: bad input.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from checker.cmdline import (
    EXIT_CODES, EXIT_FAIL, EXIT_OK, load_family, path_arg, positive, seed, sigterm_as_interrupt, wrap,
)
from checker.errors import UsageError
from checker.imports import import_ref
from checker.tracecheck import validate_observed


def register(sub: Any, fmt: Any) -> None:
    p = sub.add_parser(
        "cluster", help="run the family's real cluster under random faults, check it, validate its logs",
        allow_abbrev=False, formatter_class=fmt, epilog=EXIT_CODES,
        description=wrap("Start the model family's reference cluster for real (for Kafka: a 3-server ZooKeeper "
                          "ensemble and broker processes on loopback), produce with acks=all, inject one random "
                          "fault at a time for --seconds, then check that no acknowledged record was lost, that "
                          "at most one controller acted per controller epoch, that every partition recovered a "
                          "leader and that every log parses; finally merge the logs into an observed trace and "
                          "search the model for a path that explains it. Exit status of kmc cluster: 0 all "
                          "held, 1 a check failed or the trace is not a behaviour of the model, 2 bad input."))
    p.add_argument("--model", metavar="NAME|module:attr", help="model family (default: the registered one)")
    p.add_argument("--brokers", metavar="N", type=positive, default=3, help="brokers (default 3)")
    p.add_argument("--faults", metavar="KINDS", default="kill,stop",
                   help="comma-separated fault kinds to draw from (Kafka: kill, stop, zk, restart; default kill,stop)")
    p.add_argument("--seconds", metavar="S", type=positive, default=60,
                   help="how long to keep injecting faults (default 60)")
    p.add_argument("--seed", metavar="N", type=seed, default=0, help="seed of the fault choices (default 0)")
    p.add_argument("--dir", metavar="DIR", type=path_arg,
                   help="where the run's logs go (default: a new temporary folder)")
    p.add_argument("--broken", metavar="KIND",
                   help="run deliberately broken brokers (Kafka: election, controller-epoch-check), to see "
                        "validation reject them")
    p.add_argument("--max-transitions", metavar="N", type=positive, default=2_000_000,
                   help="model steps the validation may take before it gives up without a verdict")
    p.set_defaults(func=cmd_cluster)


def cmd_cluster(args: Any, command: str) -> int:
    family, ref = load_family(args.model)
    target = getattr(family, "cluster", None)
    if not target:
        raise UsageError(f"model family {family.name!r} has no cluster runner (ModelFamily.cluster); "
                         f"kmc cluster needs one")
    modname, _, attr = str(target).partition(":")
    options_error = import_ref(modname, "options_error", what=f"cluster runner {target!r}", fix="fix ModelFamily.cluster")
    run = import_ref(modname, attr, what=f"cluster runner {target!r}", fix="fix ModelFamily.cluster")
    options = {"brokers": args.brokers, "faults": args.faults, "seconds": args.seconds, "seed": args.seed,
               "dir": args.dir, "broken": args.broken}
    err = options_error(options)
    if err:
        raise UsageError(err)
    t0 = time.monotonic()

    def progress(text: str) -> None:
        print(f"[{time.monotonic() - t0:6.1f} s] {text}", file=sys.stderr, flush=True)

    with sigterm_as_interrupt("the ZooKeeper ensemble and the brokers were stopped"):
        result = run(options, progress)
    print(f"kmc cluster: {family.name} cluster run in {result.directory}")
    for line in result.checks:
        print(f"  checked: {line}")
    for line in result.failures:
        print(f"  FAILED: {line}")
    status = EXIT_FAIL if result.failures else EXIT_OK
    if result.observed is not None:
        progress(f"validating {len(result.observed.events)} observed events against the model")
        t1 = time.monotonic()
        v = validate_observed(family, result.observed, max_transitions=args.max_transitions)
        config = " ".join(f"{k}={v_}" for k, v_ in result.observed.model_config().items())
        print(f"  model configuration: {config}")
        for line in v.render().splitlines():
            print(f"  {line}")
        print(f"  validation took {time.monotonic() - t1:.1f} s")
        if not v.ok:
            status = EXIT_FAIL
    if status != EXIT_OK:
        print(f"reproduce: {command}")
    return status
