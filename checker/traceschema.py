"""The trace format as a contract: ``kmc-trace.schema.json`` and reading untrusted JSON.

A trace is shared like any data file (attached to a bug report, kept in a
repository), so reading one must be safe whatever its bytes are.  The file is parsed
with limits (no ``NaN``, no number too long to convert, no nesting deeper than
``MAX_DEPTH``), then validated against the JSON Schema shipped with kmc, before any
semantic check.  Every problem is one line that names the file and the field.

The schema is the documented format; other tools can validate traces with it::

    >>> doc = {"format": "kmc-trace", "format_version": 1}
    >>> problems(doc)[0]
    "missing field 'model'"
    >>> schema()["properties"]["format"]["const"]
    'kmc-trace'
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

SCHEMA_FILE = "kmc-trace.schema.json"

# Deeper than any model's describe() view, and far below Python's recursion limit,
# which the diff and rendering code (recursive over a state) must never reach.
MAX_DEPTH = 100

_TOP = ["format", "format_version", "model", "config", "preset", "property", "engine", "created_by",
        "invariants", "steps", "loop_start"]
_JSON_TYPES = {"object": "an object", "array": "an array", "string": "a string", "integer": "an integer",
               "number": "a number", "boolean": "true or false", "null": "null"}


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The JSON Schema of format_version 1, as shipped in the package."""
    return json.loads(resources.files("checker").joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    base = jsonschema.Draft202012Validator
    # JSON Schema counts 1.0 as an integer; a trace's indices and versions are written
    # as 1, and Python would carry 1.0 on as a float, so only ints (never bools) count.
    checker = base.TYPE_CHECKER.redefine(
        "integer", lambda _c, v: isinstance(v, int) and not isinstance(v, bool))
    return jsonschema.validators.extend(base, type_checker=checker)(schema())


def loads(text: str) -> Any:
    """``json.loads`` for untrusted text: ValueError (with a message fit for a user)
    for NaN/Infinity, a number too long to convert, or nesting deeper than
    ``MAX_DEPTH``."""
    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        doc = json.loads(text, parse_constant=constant)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as e:
        at = "" if e.msg.endswith(" at") else " at"   # "Unterminated string starting at"
        raise ValueError(f"{e.msg}{at} line {e.lineno}, column {e.colno}") from None
    except ValueError as e:            # e.g. an integer of more than 4300 digits
        raise ValueError(" ".join(str(e).split()).rstrip(".")) from None
    if too_deep(doc, MAX_DEPTH):
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    bad = unpaired_surrogate(doc) if _may_hold_surrogates(text) else None
    if bad is not None:
        raise ValueError(f"a string holds {bad}, an unpaired UTF-16 surrogate, which is no character")
    return doc


def _may_hold_surrogates(text: str) -> bool:
    """Only a ``\\u`` escape, or a surrogate in ``text`` itself, puts one in the
    document: without either, the walk of :func:`unpaired_surrogate` (a Python pass
    over every value) is skipped; both tests here run in C."""
    if "\\u" in text:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def unpaired_surrogate(value: Any) -> str | None:
    """The escape of the first lone surrogate in a string of ``value`` (a key too),
    or None.  JSON's ``\\ud800`` escape makes one; the file's own text cannot, being
    UTF-8.  Iterative, as :func:`too_deep`."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as e:
                return f"\\u{ord(v[e.start]):04x}"
    return None


def too_deep(value: Any, limit: int) -> bool:
    """Does ``value`` nest containers more than ``limit`` deep?  Iterative, so that it
    is safe on any input."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            items = v.values()
        elif isinstance(v, list):
            items = v
        else:
            continue
        if d > limit:
            return True
        stack.extend((x, d + 1) for x in items if isinstance(x, (dict, list)))
    return False


def field_name(path: Any) -> str:
    """``steps[3].action.name`` from a JSON path ``["steps", 3, "action", "name"]``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def shown(v: Any, width: int = 40) -> str:
    """A value from the file, quoted and cut short: it is never trusted to be small
    or printable."""
    text = repr(v) if isinstance(v, str) else json.dumps(v)[:width + 1] if not isinstance(v, (dict, list)) \
        else ("an object" if isinstance(v, dict) else "an array")
    return text if len(text) <= width else text[:width - 3] + "..."


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true/false"
    if isinstance(v, (int, float)):
        return "a number"
    return {dict: "an object", list: "an array", str: "a string"}.get(type(v), type(v).__name__)


def _describe(err: Any) -> tuple[str, str]:
    """``(what is wrong, how to fix it)`` for one jsonschema error."""
    if err.validator == "anyOf" and err.context:  # "null or an action": say what the action lacks
        subs = [c for c in err.context if not (c.validator == "type" and c.validator_value == "null")]
        if subs:
            return _describe(min(subs, key=_rank))
    where = field_name(err.absolute_path)
    v = err.instance
    kind = err.validator
    if kind == "required":
        return f"missing field '{where + '.' if where else ''}{_missing(err)}'", ""
    if kind == "type":
        want = err.validator_value
        want = [want] if isinstance(want, str) else list(want)
        if where.endswith("action") and want == ["null"]:
            return f"field '{where}' must be null: step 0 is the initial state", ""
        if where.startswith("config.") and "null" in want:
            return f"field '{where}' must be a scalar (a string, number, true/false or null), got {_json_type(v)}", ""
        words = " or ".join(_JSON_TYPES.get(w, w) for w in want)
        return f"field '{where}' must be {words}, got {_json_type(v)}", ""
    if kind == "const" and where == "format":
        return f"field 'format' must be 'kmc-trace', got {shown(v)}", "is this a kmc trace?"
    if kind == "const" and where == "format_version":
        return (f"field 'format_version' is {shown(v)}, but this kmc reads format_version 1 only",
                "replay it with the kmc that wrote it, or re-create it with this kmc's kmc check")
    if kind == "pattern" and where.endswith("fingerprint"):
        return f"field '{where}' is not a fingerprint: {shown(v)}", "fingerprints look like 0x0123456789abcdef"
    if kind == "minItems" and where == "steps":
        return "field 'steps' is empty; a trace has at least the initial state", ""
    if kind == "minLength":
        return f"field '{where}' is empty", ""
    if kind == "minimum":
        return f"field '{where}' must be >= {err.validator_value}, got {shown(v)}", ""
    return f"field '{where or '(top level)'}' fails the schema's {kind!r} rule (value {shown(v)})", ""


def _missing(err: Any) -> str:
    """The field a ``required`` error is about (jsonschema keeps it in the message only)."""
    import ast
    m = re.fullmatch(r"(.*) is a required property", err.message, re.S)
    try:
        return str(ast.literal_eval(m.group(1))) if m else "?"
    except (ValueError, SyntaxError):
        return "?"


def _rank(err: Any) -> tuple:
    """Report errors in the file's own order: top-level fields as ``_TOP`` lists
    them, then by position (so the first bad step is the one named)."""
    path = list(err.absolute_path)
    if err.validator == "required":
        path.append(_missing(err))
    head = path[0] if path else ""
    top = _TOP.index(head) if head in _TOP else len(_TOP)
    return (top, [(0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in path[1:]])


def problems(doc: Any) -> list[str]:
    """Every schema violation of ``doc``, as ``what; fix`` texts, first one first."""
    errors = sorted(_validator().iter_errors(doc), key=_rank)
    out = []
    for err in errors:
        what, fix = _describe(err)
        out.append(f"{what}; {fix}" if fix else what)
    return out


def first_problem(doc: Any) -> tuple[str, str] | None:
    """The first schema violation of ``doc`` as ``(what, fix)`` (fix may be ''), or None."""
    if not isinstance(doc, dict):
        return ("the top level must be a JSON object", "")
    best = None
    for err in _validator().iter_errors(doc):
        if best is None or _rank(err) < _rank(best):
            best = err
    return None if best is None else _describe(best)
