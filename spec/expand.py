"""``python -m spec.expand TRACE``: an atomic-controller trace made a trace of the full model.

A counterexample found with ``atomic_controller=true`` (spec/atomic.py) hides the
controller's reactions inside the steps of the events that caused them.  This
command puts them back, one step each, and cuts the result at the first state that
violates the trace's property, so that ``kmc replay`` and ``kmc conform`` take it
with the ordinary model.  It lives apart from spec/atomic.py because it needs the
model family (spec/family.py), which itself builds the atomic model.
"""

from __future__ import annotations

import argparse
import sys

from checker.bfs import replay_path
from checker.cmdline import one_line, path_arg
from checker.config import resolve
from checker.errors import ModelError, UsageError
from checker.result import Violation
from checker.shellquote import shell_join
from checker.trace import load_trace, write_trace
from spec.atomic import expand
from spec.family import FAMILY


def expand_trace(path: str, traces_dir: str) -> str:
    """Write the full-model trace of an atomic-controller trace; return its path.

    The property the trace violates is checked on every state of the expanded path
    and the trace stops at the first state that violates it (a hidden step may
    already do), so what is saved is a counterexample of ``atomic_controller=false``
    that ``kmc replay`` re-derives with the ordinary model.
    """
    trace = load_trace(path)   # data only: the family and invariants it names are not loaded
    config = resolve(FAMILY, None, trace.config)
    if not config.get("atomic_controller"):
        raise ValueError(f"{path} was not made with atomic_controller=true; nothing to expand")
    model = FAMILY.build(config)
    actions = [st.action for st in trace.steps[1:]]
    state = model.init_states()[0]
    for i, act in enumerate(actions, 1):   # a trace is data: check it fits before expanding it
        if act not in model.actions(state):
            raise ValueError(f"{path}: step {i}'s action {act} is not enabled in the atomic model there; "
                             f"the trace no longer fits the model (kmc replay {path} shows where)")
        state = model.next_state(state, act)
    full_config = {**config, "atomic_controller": False}
    full = FAMILY.build(full_config)
    prop = next((p for p in full.properties() if p.name == trace.property_name), None)
    if prop is None or prop.kind != "always" or prop.step:
        raise ValueError(f"{trace.property_name!r} is not a state invariant of the model; cannot cut the trace")
    if prop.predicate(state):
        raise ValueError(f"{path} does not end in a violation of {trace.property_name!r}; nothing to expand "
                         f"(kmc replay {path} re-checks it)")
    steps = replay_path(full, expand(model, actions))
    for n, st in enumerate(steps):
        if not prop.predicate(st.state):
            break
    else:
        raise ValueError(f"the expanded trace does not violate {trace.property_name!r}: the atomic controller "
                         f"and the full model disagree (a bug in spec/atomic.py)")
    violation = Violation(trace.property_name, "always", steps[:n + 1])
    label = f"{trace.preset}-expanded" if trace.preset else "expanded"
    return str(write_trace(traces_dir, family_ref=trace.family_ref, model=full, config=full_config,
                           preset=None, violation=violation, label=label,
                           command="python -m spec.expand " + shell_join([path, "--traces-dir", traces_dir])))


def main(argv=None) -> int:
    """``python -m spec.expand TRACE [--traces-dir DIR]``: expand a trace.

    Exit 0 with the saved path, or 2 with one line on stderr for any bad input
    (a missing argument, a malformed trace, a trace the model no longer derives)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = "python -m spec.expand " + shell_join(argv) if argv else "python -m spec.expand"

    def fail(message: str) -> int:
        sys.stdout.flush()
        print(one_line(f"spec.expand: error: {' '.join(str(message).split())} (reproduce: {command})"),
              file=sys.stderr)
        return 2

    class Parser(argparse.ArgumentParser):
        def error(self, message: str):
            raise UsageError(f"{message}; usage: python -m spec.expand TRACE [--traces-dir DIR]")

    p = Parser(prog="python -m spec.expand", allow_abbrev=False,
               description="Expand an atomic-controller trace into a trace of the full model.")
    p.add_argument("trace", help="a trace of a run with atomic_controller=true (kmc check wrote it)")
    p.add_argument("--traces-dir", default="traces", type=path_arg, help="where the expanded trace is saved (default: traces/)")
    try:
        args = p.parse_args(argv)
        out = expand_trace(args.trace, args.traces_dir)
    except (ValueError, UsageError) as e:
        return fail(e)
    except OSError as e:
        return fail(f"cannot write to --traces-dir: {e.strerror or e}; choose another directory with --traces-dir DIR")
    except ModelError as e:
        return fail(f"the trace does not replay on the model: {e}")
    except KeyboardInterrupt:
        return fail("interrupted")
    print(f"expanded trace saved to {out}; replay it: kmc replay {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
