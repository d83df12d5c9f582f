"""Versioned JSON counterexample traces: write, load, replay, diff.

A trace stores the model family and its full configuration, the violated property,
and every step of the path as ``{index, action, fingerprint, state}`` where
``state`` is the model's ``describe()`` view.  ``replay`` rebuilds the model from
the family and configuration and re-derives every state from the recorded actions:
the trace is evidence only as long as the model still produces it.

A violated ``eventually`` property is a *lasso*: the trace adds ``loop_start``, the
index of the step whose state the loop starts from; steps ``loop_start+1..last``
are the loop and the last state is the state of step ``loop_start`` again (when
``loop_start`` is the last step, the loop is empty: the behaviour stutters there
for ever, no fair action being enabled).  The field is optional and additive, so
the format stays at version 1: a kmc that predates it replays the steps as a plain
path and says it cannot re-check an ``eventually`` property.

Diffs work on flattened ``describe()`` views, with dotted keys and ``[i]`` indices::

    >>> flatten({"zk": {"partition": [{"leader": 1, "isr": [1, 2]}]}, "controller": 0})
    {'zk.partition[0].leader': 1, 'zk.partition[0].isr[0]': 1, 'zk.partition[0].isr[1]': 2, 'controller': 0}
    >>> diff({"zk": {"partition": [{"leader": 1}]}}, {"zk": {"partition": [{"leader": 2}]}})
    [('zk.partition[0].leader', 1, 2)]
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from checker.errors import ModelError, UsageError
from checker.errors import describe_exception as _exc
from checker.config import resolve
from checker.fingerprint import fingerprint, format_fingerprint, parse_fingerprint
from checker.liveness import loop_is_fair
from checker.model import ALWAYS, EVENTUALLY, Action, Model, Property
from checker.traceschema import first_problem, loads, shown

FORMAT = "kmc-trace"
FORMAT_VERSION = 1

DEADLOCK_RATIONALE = ("a reachable state that is not terminal has no enabled action "
                      "(turn this check off with --no-deadlock)")


class _Absent:
    """Marks a key that exists on one side of a diff only."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT = _Absent()


class _Nested:
    """Marks a key whose value is a container on that side (its elements are listed)."""

    def __repr__(self) -> str:
        return "{...}"


NESTED = _Nested()


# --------------------------------------------------------------------------- diff

def flatten(view: Any, prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts / lists / tuples into ``{"a.b[0].c": scalar}``, in order.
    Empty containers stay as leaves so that they show up in diffs."""
    out: dict[str, Any] = {}

    def walk(v: Any, key: str) -> None:
        if isinstance(v, Mapping) and v:
            for k, sub in v.items():
                walk(sub, f"{key}.{k}" if key else str(k))
        elif isinstance(v, (list, tuple)) and v:
            for i, sub in enumerate(v):
                walk(sub, f"{key}[{i}]")
        else:
            if isinstance(v, tuple):
                v = []
            out[key] = v

    walk(view, prefix)
    return out


def _container(v: Any) -> bool:
    return isinstance(v, (Mapping, list, tuple))


def _children(v: Any, key: str) -> dict[str, Any]:
    """``{child key: child value}`` of a container, keys spelled as ``flatten`` does."""
    if isinstance(v, Mapping):
        return {(f"{key}.{k}" if key else str(k)): sub for k, sub in v.items()}
    return {f"{key}[{i}]": sub for i, sub in enumerate(v)}


def _merge_order(before: Sequence[str], after: Sequence[str]) -> list[str]:
    """``before``'s keys in order, with each key only ``after`` has placed after the
    nearest key before it that both have (and after the removed keys that follow it)."""
    bset, aset = set(before), set(after)
    follow: dict[str | None, list[str]] = {}
    anchor: str | None = None
    for k in after:
        if k in bset:
            anchor = k
        else:
            follow.setdefault(anchor, []).append(k)
    order: list[str] = []
    pending = follow.get(None, [])
    for k in before:
        if k in aset:
            order.extend(pending)
            pending = follow.get(k, [])
        order.append(k)
    order.extend(pending)
    return order


def diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """``[(key, old, new)]`` for every value that differs, keyed like ``flatten``; a
    missing side is ``ABSENT``.

    Where both sides are containers the diff goes inside them, so a changed leaf is
    one entry.  Where a container appears, disappears or replaces a scalar (a
    partition state ``None`` that becomes ``{leader: 0, ...}``) the entry holds the
    whole container, so it reads as one change rather than one line per element.
    Keys come in ``before``'s order, and a key only ``after`` has comes where
    ``after`` puts it: after the nearest common key before it."""
    out: list[tuple[str, Any, Any]] = []

    def walk(key: str, old: Any, new: Any) -> None:
        if isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
            seq(key, old, new)
        elif _container(old) and _container(new) and (old or new):
            cb, ca = _children(old, key), _children(new, key)
            for k in _merge_order(list(cb), list(ca)):
                walk(k, cb.get(k, ABSENT), ca.get(k, ABSENT))
        elif not same_value(old, new):
            out.append((key, old, new))

    def seq(key: str, old: Sequence[Any], new: Sequence[Any]) -> None:
        # Lists are aligned first, so that one element leaving a sorted list shows as
        # that element removed, not as every later element shifting by one.
        import difflib
        ka = [json.dumps(jsonable(x), sort_keys=True) for x in old]
        kb = [json.dumps(jsonable(x), sort_keys=True) for x in new]
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes():
            if op == "equal":
                continue
            if op == "replace" and i2 - i1 == j2 - j1:
                for i, j in zip(range(i1, i2), range(j1, j2)):
                    walk(f"{key}[{j}]", old[i], new[j])
                continue
            for i in range(i1, i2):
                out.append((f"{key}[{i}]", old[i], ABSENT))
            for j in range(j1, j2):
                out.append((f"{key}[{j}]", ABSENT, new[j]))

    walk("", before, after)
    return out


def same_value(a: Any, b: Any) -> bool:
    """Equal as a user reads a diff: a bool is not the int 1, a tuple is the list it prints as."""
    # True == 1 in Python, but a bool turning into an int is a change worth showing.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _container(a) or _container(b):
        return _container(a) and _container(b) and jsonable(a) == jsonable(b)
    return a == b


# ------------------------------------------------------------------- rendering

SHORT = 40          # a nested value at most this wide is shown inline in a group


def width() -> int:
    """The width output is wrapped to: the terminal's (``COLUMNS`` when set), else
    100; kept within 60..160 so that lines stay readable."""
    import shutil
    return max(60, min(shutil.get_terminal_size((100, 24)).columns, 160))


_LITERALS = {"None", "True", "False", "<absent>", "{...}", "[...]"}


def _bare(s: str) -> bool:
    """Can this string be shown without quotes and still not be mistaken for another value?"""
    if not s or s != s.strip() or s in _LITERALS or not s.isprintable() or s[0] in "'\"":
        return False
    try:
        float(s)
    except ValueError:
        return True
    return False


def show_value(v: Any) -> str:
    """A value as replay prints it: scalars as Python writes them, strings without
    quotes where that is unambiguous (``OnlinePartition``, ``[0, 2]``), and
    containers inline: ``{leader: 0, isr: [0, 1]}``."""
    if v is ABSENT:
        return "<absent>"
    if v is NESTED:
        return "{...}"
    if isinstance(v, str):
        return v if _bare(v) else repr(v)
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{k}: {show_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(show_value(x) for x in v) + "]"
    return repr(v)


def _short(v: Any) -> str:
    """A container on the old side of a change: inline when short, else elided."""
    text = show_value(v)
    if len(text) <= SHORT:
        return text
    return "{...}" if isinstance(v, Mapping) else "[...]"


def fill(head: str, items: Sequence[str], sep: str, width: int, cont: str) -> list[str]:
    """``head`` followed by ``items`` joined by ``sep``, wrapped to ``width`` only
    between items (never inside one); continuation lines start with ``cont``."""
    lines: list[str] = []
    cur = head
    fresh = True                      # nothing after the head / the indent yet
    for i, item in enumerate(items):
        piece = item if fresh else sep + item
        if not fresh and len(cur) + len(piece) > width:
            lines.append(cur.rstrip())
            cur, piece = cont, item
        cur += piece
        fresh = False
    lines.append(cur)
    return lines


def _tokens(v: Any) -> list[str]:
    """``show_value(v)`` cut into pieces that ``fill`` may wrap between: joined
    with single spaces, they give ``show_value(v)`` back."""
    if isinstance(v, Mapping) and v:
        parts = [(f"{k}: ", x) for k, x in v.items()]
        opening, closing = "{", "}"
    elif isinstance(v, (list, tuple)) and v:
        parts = [("", x) for x in v]
        opening, closing = "[", "]"
    else:
        return [show_value(v)]
    out: list[str] = []
    for n, (label, x) in enumerate(parts):
        sub = _tokens(x)
        sub[0] = label + sub[0]
        if n < len(parts) - 1:
            sub[-1] += ","
        out.extend(sub)
    out[0] = opening + out[0]
    out[-1] += closing
    return out


def render_change(key: str, old: Any, new: Any, indent: str = "  ", width_: int | None = None) -> list[str]:
    """One change as ``key: old -> new``; a container that appears is written
    inline and wrapped between its elements."""
    w = width_ or width()
    if _container(new) and new and not _container(old):
        return fill(f"{indent}{key}: {show_value(old)} -> ", _tokens(new), " ", w, indent + "    ")
    old_text = _short(old) if _container(old) and old else show_value(old)
    return [f"{indent}{key}: {old_text} -> {show_value(new)}"]


def render_changes(changes: Sequence[tuple[str, Any, Any]], indent: str = "  ",
                   width_: int | None = None) -> list[str]:
    if not changes:
        return [f"{indent}(no change)"]
    out: list[str] = []
    for k, old, new in changes:
        out.extend(render_change(k, old, new, indent, width_))
    return out


def render_state(view: Mapping[str, Any], indent: str = "  ", width_: int | None = None) -> list[str]:
    """A whole state, compactly: scalars at the top level one per line, and every
    nested record as one line of ``field=value`` pairs (wrapped), split into its
    sub-records only when it does not fit on a line::

        zk: controller=-1  controller_epoch=0  brokers=[0, 1]  topic=True
        broker.0: alive=True  controller_epoch_seen=0  partition.0=None
    """
    w = width_ or width()
    lines: list[str] = []

    def pairs(v: Any, key: str) -> list[str]:
        return [f"{k}={show_value(x)}" for k, x in flatten(v, key).items()]

    def group(path: str, node: Any) -> None:
        head = f"{indent}{path}: "
        whole = pairs(node, "")
        if len(head) + sum(len(p) + 2 for p in whole) - 2 <= w:
            lines.append(head + "  ".join(whole))
            return
        inline: list[str] = []
        subs: list[tuple[str, Any]] = []
        for k, v in _children(node, "").items():
            if _container(v) and v:
                mine = pairs(v, k)
                if sum(len(p) + 2 for p in mine) - 2 <= SHORT:
                    inline.extend(mine)
                else:
                    subs.append((f"{path}.{k}" if not k.startswith("[") else f"{path}{k}", v))
            else:
                inline.append(f"{k}={show_value(v)}")
        if inline:
            lines.extend(fill(head, inline, "  ", w, indent + "    "))
        for sub_path, v in subs:
            group(sub_path, v)

    for k, v in _children(view, "").items():
        if _container(v) and v:
            group(k, v)
        else:
            lines.append(f"{indent}{k}: {show_value(v)}")
    return lines


# ------------------------------------------------------------------ JSON helpers

def jsonable(v: Any) -> Any:
    """``v`` with tuples as lists and mapping keys as strings, what JSON can hold."""
    if isinstance(v, Mapping):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


def state_view(described: Any) -> dict[str, Any]:
    """describe() output as a JSON-able dict (a non-mapping is wrapped as ``value``)."""
    v = jsonable(described)
    return v if isinstance(v, dict) else {"value": v}


def _tuplify(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_tuplify(x) for x in v)
    return v


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


def default_command() -> str:
    return shlex.join(["kmc", *sys.argv[1:]])


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
    stem = f"{_safe(violation.property)}-{_safe(label or preset or 'custom')}-{steps[-1]['fingerprint'][2:10]}"
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
            other = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
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
        text = Path(path).read_text(encoding="utf-8")
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


# ------------------------------------------------------------------------ replay

@dataclass
class ReplayStep:
    index: int
    action: Action | None
    fingerprint: str
    view: dict[str, Any]                       # describe() of the re-derived state
    changes: list[tuple[str, Any, Any]]        # vs the previous step (empty for step 0)

    def render(self, width_: int | None = None) -> list[str]:
        """``step N  Action(...)`` and the changed fields; step 0 shows the whole
        initial state, compactly."""
        if self.index == 0:
            return [f"step 0  initial state  [{self.fingerprint}]", *render_state(self.view, width_=width_)]
        return [f"step {self.index}  {self.action}", *render_changes(self.changes, width_=width_)]


@dataclass
class ReplayResult:
    trace: Trace
    steps: list[ReplayStep] = field(default_factory=list)
    fits: bool = True                  # every replayed step matched the recording
    failed_step: int | None = None
    reason: str | None = None          # "step N: ..." when it does not fit
    mismatch: list[tuple[str, Any, Any]] = field(default_factory=list)  # recorded -> re-derived
    property_status: str = "unchecked"  # "violated", "holds", "unknown", "unchecked"
    property_note: str = ""
    stopped_at: int | None = None      # --step N
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The trace fits the model and, unless cut short, still shows its violation."""
        return self.fits and self.property_status != "holds"


def replay(trace: Trace, family_resolver: Callable[[str], Any], *, stop_at: int | None = None,
           property_loader: Callable[[], Sequence[Property]] | None = None) -> ReplayResult:
    """Re-derive every state of ``trace`` from its recorded actions.

    ``family_resolver(trace.family_ref)`` returns the model family.  Stops at the
    first step that does not fit (the action is not enabled, or the state differs
    from the recording) and says why; otherwise re-checks the trace's property on
    the final state (or final transition).  ``stop_at=N`` replays steps 0..N only.
    ``property_loader()`` loads the user properties the *caller* names (the command
    line's ``--invariants``); it is asked only when the trace's property is not the
    model's.  The invariant files a trace records are never run: without a loader,
    a property from them is a ``UsageError`` that says which flag supplies it.
    Raises ``UsageError`` for a ``stop_at`` out of range or a family that cannot be
    found, ``ModelError`` when the model raises.
    """

    last = len(trace.steps) - 1
    if stop_at is not None and not 0 <= stop_at <= last:
        raise UsageError(f"--step {stop_at} is out of range: trace '{trace.path}' has steps 0..{last}; "
                         f"pick one of them")
    result = ReplayResult(trace=trace, stopped_at=stop_at if stop_at is not None and stop_at < last else None)
    family = family_resolver(trace.family_ref)
    try:
        config = resolve(family, None, trace.config)
    except UsageError as e:
        result.fits, result.failed_step = False, 0
        result.reason = f"the trace's config no longer fits model family {trace.family_ref!r}: {e}"
        return result
    try:
        model = family.build(config)
    except ValueError as e:
        result.fits, result.failed_step = False, 0
        result.reason = f"the trace's config is rejected by model family {trace.family_ref!r}: {e}"
        return result
    except Exception as e:  # noqa: BLE001 - the model broke its contract
        raise ModelError(f"building the model of family {trace.family_ref!r} raised {_exc(e)}") from e
    if model.name != trace.model_name:
        result.warnings.append(f"the trace was recorded with model {trace.model_name!r}, "
                               f"this family builds {model.name!r}")
    elif str(model.version) != trace.model_version:
        result.warnings.append(f"the trace was recorded with {trace.model_name} version {trace.model_version}, "
                               f"this is version {model.version}")

    def fp_of(state: Any, where: str) -> str:
        try:
            return format_fingerprint(fingerprint(model, state)).lower()
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"{where}: encoding the state raised {_exc(e)}") from e

    def view_of(state: Any, where: str) -> dict[str, Any]:
        try:
            return state_view(model.describe(state))
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"{where}: describe() raised {_exc(e)}") from e

    def norm(fp: str) -> str:
        return format_fingerprint(parse_fingerprint(fp)).lower()

    # step 0
    rec0 = trace.steps[0]
    try:
        inits = list(model.init_states())
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"init_states() raised {_exc(e)}") from e
    state = None
    for s in inits:
        if fp_of(s, "step 0") == norm(rec0.fingerprint):
            state = s
            break
    if state is None:
        result.fits, result.failed_step = False, 0
        views = [view_of(s, "step 0") for s in inits]
        if views:
            best = min(views, key=lambda v: len(diff(rec0.state, v)))
            result.mismatch = diff(rec0.state, best)
        result.reason = (f"step 0: the recorded initial state is not an initial state of the model "
                         f"({len(inits)} initial state{'s' if len(inits) != 1 else ''})")
        return result
    prev_view = view_of(state, "step 0")
    result.steps.append(ReplayStep(0, None, norm(rec0.fingerprint), prev_view, []))
    states = [state]                   # the re-derived states, for a lasso's re-check
    prev, prev_state = state, None
    shown_view_warning = False
    end = last if stop_at is None else stop_at
    for rec in trace.steps[1:end + 1]:
        where = f"step {rec.index}"
        try:
            enabled = list(model.actions(prev))
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"{where}: actions() raised {_exc(e)}") from e
        if rec.action not in enabled:
            result.fits, result.failed_step = False, rec.index
            same = [a for a in enabled if a.name == rec.action.name]
            others = [a for a in enabled if a.name != rec.action.name]
            listed = same + others
            shown = ", ".join(str(a) for a in listed[:8])
            if len(listed) > 8:
                shown += f", ... {len(listed) - 8} more"
            result.reason = (f"{where}: action {rec.action} is not enabled here "
                             f"(enabled: {shown or 'none'})")
            return result
        try:
            nxt = model.next_state(prev, rec.action)
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"{where}: next_state(..., {rec.action}) raised {_exc(e)}") from e
        view = view_of(nxt, where)
        fp = fp_of(nxt, where)
        if fp != norm(rec.fingerprint):
            result.fits, result.failed_step = False, rec.index
            result.mismatch = diff(rec.state, view)
            result.reason = (f"{where}: state differs from the recorded one after {rec.action} "
                             f"(recorded {rec.fingerprint}, re-derived {fp})")
            result.steps.append(ReplayStep(rec.index, rec.action, fp, view, diff(prev_view, view)))
            return result
        result.steps.append(ReplayStep(rec.index, rec.action, fp, view, diff(prev_view, view)))
        if not shown_view_warning and diff(rec.state, view):
            shown_view_warning = True
            result.warnings.append(f"{where}: the recorded state view differs from the model's describe() "
                                   f"although the fingerprint matches (describe() changed?)")
        prev_state, prev, prev_view = prev, nxt, view
        states.append(nxt)
    if stop_at is not None and stop_at < last:
        result.property_note = f"stopped at step {stop_at} of {last}; property not re-checked"
        return result
    k = trace.loop_start
    if k is not None and result.steps[k].fingerprint != result.steps[-1].fingerprint:
        result.fits, result.failed_step = False, last
        result.reason = (f"step {last}: the loop does not return to the state of step {k} (re-derived "
                         f"{result.steps[-1].fingerprint}, step {k} is {result.steps[k].fingerprint})")
        return result
    _recheck(result, model, trace, prev_state, prev, property_loader, states)
    return result


def _recheck(result: ReplayResult, model: Model, trace: Trace, before: Any, final: Any,
             property_loader: Callable[[], Sequence[Property]] | None,
             states: Sequence[Any] = ()) -> None:
    name, kind = trace.property["name"], trace.property["kind"]
    if kind == "deadlock":
        try:
            dead = not list(model.actions(final)) and not model.is_terminal(final)
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"final state: actions()/is_terminal() raised {_exc(e)}") from e
        result.property_status = "violated" if dead else "holds"
        result.property_note = ("deadlock: the final state has no enabled action and is not terminal" if dead
                                else "no deadlock any more: the final state has enabled actions or is terminal")
        return
    props = {p.name: p for p in model.properties()}
    if name not in props and property_loader is not None:
        for p in property_loader():
            props.setdefault(p.name, p)
    elif name not in props and trace.invariants:
        files = ", ".join(shown(f, 80) for f in trace.invariants[:3]) + (", ..." if len(trace.invariants) > 3 else "")
        raise UsageError(f"trace file '{trace.path}' violates property {shown(name, 60)}, which its run loaded "
                         f"from invariants file {files}; kmc never runs a file a trace names: re-check the "
                         f"property with --invariants FILE.py (or stop before the end with --step N)")
    prop = props.get(name)
    if prop is None:
        result.property_status = "unknown"
        result.property_note = f"property {name!r} is not declared by the model any more; not re-checked"
        return
    if prop.kind == EVENTUALLY and trace.loop_start is not None:
        _recheck_lasso(result, model, trace, prop, states)
        return
    if prop.kind != ALWAYS:
        result.property_status = "unknown"
        result.property_note = f"property {name!r} is a {prop.kind} property; a path cannot violate it"
        return
    try:
        if prop.step:
            if len(result.steps) < 2:
                result.property_status = "unknown"
                result.property_note = f"step property {name!r} needs a transition; the trace has none"
                return
            holds = bool(prop.predicate(before, result.steps[-1].action, final))
        else:
            holds = bool(prop.predicate(final))
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"property {name!r} raised {_exc(e)} on the final state") from e
    where = "transition" if prop.step else "state"
    if holds:
        result.property_status = "holds"
        result.property_note = f"property {name!r} now HOLDS on the final {where}: the trace no longer shows a violation"
    else:
        result.property_status = "violated"
        result.property_note = f"property {name!r} is still violated on the final {where} (step {len(result.steps) - 1})"


def _recheck_lasso(result: ReplayResult, model: Model, trace: Trace, prop: Property,
                   states: Sequence[Any]) -> None:
    """A lasso still violates ``trigger ~> goal`` if the goal fails on every state
    from some step on (the loop included), the trigger holds at one of those
    steps, and the loop is weakly fair (or, empty, stutters where no fair action
    is enabled): then the behaviour that repeats the loop for ever is fair and
    never meets the goal again."""

    name, k, last = prop.name, trace.loop_start, len(states) - 1

    def call(pred: Callable, i: int, what: str) -> bool:
        try:
            return bool(pred(states[i]))
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"the {what} of property {name!r} raised {_exc(e)} on the state of step {i}") from e

    first = last + 1                   # the first step of the final run of goal-less states
    while first > 0 and not call(prop.predicate, first - 1, "goal"):
        first -= 1
    holds = None
    if first > k:
        holds = f"its goal holds at step {first - 1}, inside the loop"
    elif prop.trigger is not None and not any(call(prop.trigger, i, "trigger") for i in range(first, last + 1)):
        holds = f"its trigger never holds from step {first} on, where its goal stops holding"
    else:
        if prop.trigger is not None:
            first = next(i for i in range(first, last + 1) if call(prop.trigger, i, "trigger"))
        loop_states = states[k:last] if last > k else [states[k]]
        try:
            missing = loop_is_fair(loop_states, [s.action for s in result.steps[k + 1:]], model)
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"checking the loop's fairness (actions()/fair()) raised {_exc(e)}") from e
        if missing:
            what = ", ".join(str(a) for a in missing[:3]) + (", ..." if len(missing) > 3 else "")
            holds = (f"the loop is not fair: {what} stays enabled on it and is never taken" if last > k
                     else f"the behaviour cannot stop at step {k}: fair actions are enabled there ({what})")
    if holds:
        result.property_status = "holds"
        result.property_note = f"property {name!r} now HOLDS on this lasso: {holds}"
        return
    result.property_status = "violated"
    loop = (f"the fair loop of steps {k + 1}..{last}" if last > k
            else f"a stop at step {k}, where no fair action is enabled")
    result.property_note = (f"property {name!r} is still violated: its goal fails from step {first} on"
                            f"{' (where its trigger holds)' if prop.trigger is not None else ''} and "
                            f"the lasso ends in {loop}")
