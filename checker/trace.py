"""Versioned JSON counterexample traces: the format, writing and loading.

A trace stores the model family and its full configuration, the violated property,
and every step of the path as ``{index, action, fingerprint, state}`` where
``state`` is the model's ``describe()`` view.  ``checker.replay.replay`` rebuilds the model
from the family and configuration and re-derives every state from the recorded actions:
the trace is evidence only as long as the model still produces it.

A violated ``eventually`` property is a *lasso*: the trace adds ``loop_start``, the
index of the step whose state the loop starts from; steps ``loop_start+1..last``
are the loop and the last state is the state of step ``loop_start`` again (when
``loop_start`` is the last step, the loop is empty: the behaviour stutters there
for ever, no fair action being enabled).  The field is optional and additive, so
the format stays at version 1: a kmc that predates it replays the steps as a plain
path and says it cannot re-check an ``eventually`` property.

Differences between states are :mod:`checker.statediff`; their text is
:mod:`checker.staterender`.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from checker.errors import UsageError
from checker.inputfile import read_input
from checker.fingerprint import format_fingerprint
from checker.model import Action, Model, Property
from checker.output import inside, same_file
from checker.shellquote import shell_join
from checker.traceschema import first_problem, loads
from checker.statediff import jsonable

FORMAT = "kmc-trace"
FORMAT_VERSION = 1

DEADLOCK_RATIONALE = ("a reachable state that is not terminal has no enabled action "
                      "(turn this check off with --no-deadlock)")


# ------------------------------------------------------------------ JSON helpers

def state_view(described: Any) -> dict[str, Any]:
    """describe() output as a JSON-able dict (a non-mapping is wrapped as ``value``)."""
    v = jsonable(described)
    return v if isinstance(v, dict) else {"value": v}


def _tuplify(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_tuplify(x) for x in v)
    return v


def _odd_arguments(v: Any, where: str):
    """``(field, value)`` for each value under ``v`` (a trace action's arguments) that
    no model action has: a float or an object.  ``0.0 == 0`` in Python, so a float
    would pass for the enabled action and reach ``next_state`` as a float."""
    if isinstance(v, dict) and where.endswith(".args"):
        for k, x in v.items():
            yield from _odd_arguments(x, f"{where}.{k}")
    elif isinstance(v, list):
        for j, x in enumerate(v):
            yield from _odd_arguments(x, f"{where}[{j}]")
    elif isinstance(v, (float, dict)):
        yield where, v


def action_to_json(a: Action | None) -> dict[str, Any] | None:
    if a is None:
        return None
    return {"name": a.name, "args": {str(k): jsonable(v) for k, v in a.args}}


def action_from_json(d: Mapping[str, Any]) -> Action:
    return Action(d["name"], tuple((k, _tuplify(v)) for k, v in d["args"].items()))


# ----------------------------------------------------------------------- writing

def _safe(s: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.+=-]+", "_", s).strip("._")
    return s or "x"


def _fp_text(fp: int) -> str:
    return format_fingerprint(fp)


def _trace_stem(prop: str, label: str) -> str:
    """A trace's name up to its fingerprint: ``<Property>-<label>``."""
    return f"{_safe(prop)}-{_safe(label)}"


def trace_clash(path: str, flag: str, directory: str, properties: Sequence[str], label: str) -> str | None:
    """Why the output ``path`` (``--report``, ``--junit``) clashes with the traces a
    run saves in ``directory`` (``--traces-dir``) under ``label``, checking
    ``properties`` (names): it is that directory or one above it, or it has a name
    ``write_trace`` may give the trace of one of the properties
    (``<Property>-<label>-<8 hex digits>[-N].json``, the fingerprint being known
    only after the work); None when it is neither.  Made before the work (a search,
    a replay, a proof), so that a clash is refused before it instead of after it."""
    if same_file(path, directory):
        return (f"--traces-dir '{directory}' and {flag} '{path}' are the same file; one would replace the other: "
                f"give each its own name")
    if inside(directory, path):
        return (f"--traces-dir '{directory}' is inside {flag} '{path}', which this command writes as a file: "
                f"give each its own name")
    if not same_file(Path(path).parent, directory):
        return None
    for prop in properties:
        pattern = re.escape(_trace_stem(prop, label)) + r"-[0-9a-f]{8}(-[1-9][0-9]*)?\.json"
        if re.fullmatch(pattern, Path(path).name):
            return (f"{flag} '{path}' is a name under which this command may save the trace of {prop} in "
                    f"--traces-dir '{directory}'; a trace is never overwritten, with or without --force: name "
                    f"another file for {flag}")
    return None


def refuse_trace_names(outputs: Sequence[tuple[str, str | None]], directory: str, properties: Sequence[str],
                       labels: Sequence[str]) -> None:
    """Raise UsageError, before the work, for the first output (``(flag, path)``; a
    None path is an option not given) that :func:`trace_clash` finds clashing with a
    trace the run may save under one of ``labels``: one for ``kmc check`` and ``kmc
    prove --confirm``, one per trace file replayed or preset explored for ``kmc
    conform``.  The commands call it before their other output checks, so that an
    output named as a trace in a ``--traces-dir`` not yet created is refused for
    what it is, not sent to create the directory first and be refused then."""
    for flag, path in outputs:
        for label in dict.fromkeys(labels):
            problem = path and trace_clash(path, flag, directory, properties, label)
            if problem:
                raise UsageError(problem)


def default_command() -> str:
    return shell_join(["kmc", *sys.argv[1:]])


def trace_label(preset: str | None, custom: bool) -> str:
    """The label a run's traces are saved under (``write_trace``'s ``label``, the name
    ``trace_clash`` reads): the preset, ``<preset>-custom`` when its parameters were
    overridden, ``custom`` for a configuration with no preset (a trace recorded
    without one)."""
    return f"{preset}-custom" if preset and custom else preset or "custom"


def write_trace(directory: str | Path, *, family_ref: str, model: Model, config: Mapping[str, Any],
                preset: str | None, violation: Any, engine: str = "local",
                command: str | None = None, properties: Sequence[Property] | None = None,
                invariants: Sequence[str] = (), label: str | None = None,
                extra: Mapping[str, Any] | None = None) -> Path:
    """Save ``violation``'s path as a JSON trace in ``directory`` and return its path.

    The file is named ``<Property>-<label>-<first 8 hex digits of the final
    fingerprint>.json``, where ``label`` defaults to the preset (``custom`` without
    one).  An existing file is never overwritten: a file holding this same trace
    (whatever command line created it) is reused, any other file gets a ``-2``,
    ``-3``... suffix.  ``properties`` (default ``model.properties()``) is where the
    property's rationale comes from; ``invariants`` lists the user invariant files
    the run loaded (stored as absolute paths), so that replay can re-check a user
    property from any directory.  ``extra`` adds top-level fields of the caller's own.
    """
    if not violation.path:
        raise ValueError(f"violation of {violation.property!r} has no path to save")
    props = {p.name: p for p in (properties if properties is not None else model.properties())}
    prop = props.get(violation.property)
    if prop is not None:
        pdoc = {"name": prop.name, "kind": prop.kind, "step": prop.step, "rationale": prop.rationale}
    else:
        pdoc = {"name": violation.property, "kind": violation.kind, "step": False,
                "rationale": DEADLOCK_RATIONALE if violation.kind == "deadlock" else ""}
    if violation.message:
        pdoc["message"] = violation.message
    steps = []
    for i, st in enumerate(violation.path):
        steps.append({
            "index": i,
            "action": action_to_json(st.action),
            "fingerprint": _fp_text(st.fingerprint),
            "state": state_view(model.describe(st.state)),
        })
    doc = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model": {"name": model.name, "version": str(model.version), "family": family_ref},
        "config": jsonable(dict(config)),
        "preset": preset,
        "property": pdoc,
        "engine": engine,
        "created_by": command if command is not None else default_command(),
        "invariants": [os.path.abspath(p) for p in invariants],
        "steps": steps,
    }
    loop_start = getattr(violation, "loop_start", None)
    if loop_start is not None:
        doc["loop_start"] = loop_start
    doc.update(extra or {})
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    same = _same_trace(doc)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"{_trace_stem(violation.property, label or preset or 'custom')}-{steps[-1]['fingerprint'][2:10]}"
    n = 1
    while True:
        path = directory / (f"{stem}.json" if n == 1 else f"{stem}-{n}.json")
        if not path.exists() and _publish(directory, path, text):
            return path
        if same(path):
            return path
        n += 1


def _publish(directory: Path, path: Path, text: str) -> bool:
    """Create ``path`` with ``text``, complete or not at all (a concurrent run never
    reads half a trace); False if ``path`` exists already."""
    import secrets
    tmp = directory / f".kmc-{os.getpid()}-{secrets.token_hex(6)}.tmp"
    try:
        with open(tmp, "x", encoding="utf-8") as f:  # mode from the umask, like any file
            f.write(text)
        try:
            os.link(tmp, path)        # atomic, and fails if path exists
            return True
        except FileExistsError:
            return False
        except OSError:               # a file system without hard links
            try:
                with open(path, "x", encoding="utf-8") as f:
                    f.write(text)
                return True
            except FileExistsError:
                return False
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def _same_trace(doc: Mapping[str, Any]) -> Callable[[Path], bool]:
    """Is the file at a path this trace?  Everything but ``created_by`` must be equal:
    the same counterexample found by another command line (``--json``, another
    ``--traces-dir`` spelling) reuses the file instead of piling up copies."""
    mine = {k: v for k, v in doc.items() if k != "created_by"}

    def same(path: Path) -> bool:
        try:
            other = json.loads(read_input(path, f"trace file '{path}'", "").decode("utf-8"))
        except (OSError, UsageError, UnicodeDecodeError, ValueError):   # a FIFO, /dev/zero...: not this trace
            return False
        return (isinstance(other, dict) and other.get("format") == FORMAT and "created_by" in other
                and {k: v for k, v in other.items() if k != "created_by"} == mine)

    return same


# ----------------------------------------------------------------------- loading

@dataclass
class TraceStep:
    index: int
    action: Action | None
    fingerprint: str
    state: dict[str, Any]


@dataclass
class Trace:
    path: str
    format_version: int
    model_name: str
    model_version: str
    family_ref: str
    config: dict[str, Any]
    preset: str | None
    property: dict[str, Any]
    engine: str
    created_by: str
    steps: list[TraceStep]
    invariants: list[str] = field(default_factory=list)
    loop_start: int | None = None      # a lasso: steps loop_start+1.. are the loop

    @property
    def property_name(self) -> str:
        return self.property["name"]


def load_trace(path: str | Path) -> Trace:
    """Read and validate a trace file; every problem is a one-line ``UsageError``
    naming the file and the field.

    The file is data only: it is parsed with limits, validated against
    ``kmc-trace.schema.json`` (see checker.traceschema), and then checked for what a
    schema cannot say (indices in order, a loop that closes).  Nothing it names (a
    model family, an invariants file) is imported or run here, or by ``replay``."""
    name = str(path)

    def bad(what: str, fix: str = "re-create the trace with kmc check") -> UsageError:
        return UsageError(f"trace file '{name}': {what}; {fix or 're-create the trace with kmc check'}")

    try:
        text = read_input(path, f"trace file '{name}'", "give the path of a .json trace").decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"trace file '{name}' does not exist; check the path (traces are saved under traces/)") from None
    except IsADirectoryError:
        raise UsageError(f"trace file '{name}' is a directory; give the path of a .json trace in it") from None
    except UnicodeDecodeError:
        raise bad("not UTF-8 text") from None
    except OSError as e:
        raise UsageError(f"cannot read trace file '{name}': {e.strerror or e}; check the path and permissions") from None
    try:
        doc = loads(text)
    except ValueError as e:
        raise bad(f"not valid JSON ({e})", "restore the file or re-create it with kmc check") from None
    problem = first_problem(doc)
    if problem is not None:
        raise bad(*problem)
    model, config, prop = doc["model"], doc["config"], doc["property"]
    steps = []
    for i, s in enumerate(doc["steps"]):
        if s["index"] != i:
            raise bad(f"field 'steps[{i}].index' is {s['index']}, expected {i}",
                      "steps must be numbered 0, 1, 2... in order")
        a = s["action"]
        if i > 0 and a is None:
            raise bad(f"field 'steps[{i}].action' must be an object {{name, args}}, got null")
        odd = None if a is None else next(_odd_arguments(a["args"], f"steps[{i}].action.args"), None)
        if odd is not None:
            shown = repr(odd[1]) if len(repr(odd[1])) <= 60 else repr(odd[1])[:57] + "..."
            raise bad(f"field '{odd[0]}' is {shown}, a {type(odd[1]).__name__}; an action's arguments are "
                      f"integers, strings, booleans, null or lists of them, as kmc writes them")
        steps.append(TraceStep(i, None if a is None else action_from_json(a), s["fingerprint"].lower(), s["state"]))
    loop_start = doc.get("loop_start")
    if loop_start is not None:
        if not 0 <= loop_start < len(steps):
            raise bad(f"field 'loop_start' is {loop_start}, but the steps are 0..{len(steps) - 1}")
        if steps[loop_start].fingerprint != steps[-1].fingerprint:
            raise bad(f"the loop does not close: step {len(steps) - 1}'s fingerprint differs from step "
                      f"{loop_start}'s (field 'loop_start')")
    return Trace(path=name, format_version=doc["format_version"], model_name=model["name"],
                 model_version=str(model["version"]), family_ref=model["family"], config=dict(config),
                 preset=doc.get("preset"), property=dict(prop), engine=doc["engine"],
                 created_by=doc["created_by"], steps=steps, invariants=list(doc.get("invariants") or []),
                 loop_start=loop_start)
