"""Configuration of a model family: defaults, presets, ``--set`` and TOML files.

The order is fixed: every ``Parameter``'s default, then the preset's overrides, then
the user's overrides (a ``--config`` file, then ``--set key=value``).  Every key and
value is checked against the family's ``parameters``; anything wrong is a
``UsageError`` with a one-line message that names the key, the bad value, what is
allowed and how to fix it.

A parameter is a ``checker.model.Parameter``, read here by its attributes only: this
module sits below the model contract and imports none of it.

``--set`` values arrive as strings and are coerced to the parameter's type::

    >>> from checker.model import Parameter
    >>> parse_set(["brokers=3", "unclean=yes"])
    {'brokers': '3', 'unclean': 'yes'}
    >>> coerce(Parameter("brokers", 2, "number of brokers", 1, 5), "3")
    3
    >>> coerce(Parameter("unclean", False, "allow unclean election"), "yes")
    True
"""

from __future__ import annotations

import difflib
import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from checker.errors import ModelError, UsageError
from checker.inputfile import read_input

TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")

__all__ = ["resolve", "parse_set", "load_toml", "load_config_file", "ConfigFile", "coerce", "suggest"]


def suggest(name: str, known: list[str] | tuple[str, ...] | Any) -> str:
    """`` (did you mean 'x'?)`` for the closest known names, or an empty string."""
    close = difflib.get_close_matches(name, [str(k) for k in known], n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"


def _range_text(p: Any) -> str:
    if p.choices is not None:
        return "one of " + ", ".join(_show(c) for c in p.choices)
    if p.minimum is not None and p.maximum is not None:
        return f"{p.minimum}..{p.maximum}"
    if p.minimum is not None:
        return f">= {p.minimum}"
    if p.maximum is not None:
        return f"<= {p.maximum}"
    return ""


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _example(p: Any, style: str = "set") -> str:
    """A valid example for a parameter, used in the fix part of messages: a
    ``--set`` flag, or (``style="toml"``) a line of a TOML config file."""
    if p.choices:
        v = p.choices[0]
    elif p.type is bool:
        v = not p.default
    elif p.type is int and not isinstance(p.default, bool):
        v = p.default
        if p.minimum is not None and v < p.minimum:
            v = p.minimum
        if p.maximum is not None and v > p.maximum:
            v = p.maximum
    else:
        v = p.default
    if style == "toml":
        if isinstance(v, str):
            return f"{p.name} = {json.dumps(v)}"
        return f"{p.name} = {_show(v)}"
    return f"--set {p.name}={_show(v)}"


# A whole number as text: ASCII digits only (int() also takes '1_0' and other
# scripts' digits, which a user who wrote them did not mean as a count), and at most
# a thousand of them (int() refuses more than 4300 with an error of its own).
WHOLE_NUMBER = re.compile(r"[+-]?[0-9]{1,1000}")


def coerce(p: Any, value: Any, style: str = "set") -> Any:
    """Convert ``value`` (a string from ``--set`` or a TOML scalar) to ``p``'s type
    and check it against ``p``'s choices and range; ``UsageError`` otherwise, whose
    example fix is a ``--set`` flag or (``style="toml"``) a TOML line."""
    kind = p.type
    shown = repr(value) if isinstance(value, str) else _show(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    if kind is bool:
        if isinstance(value, bool):
            v = value
        elif isinstance(value, int) and value in (0, 1):
            v = bool(value)
        elif isinstance(value, str) and value.strip().lower() in TRUE_WORDS + FALSE_WORDS:
            v = value.strip().lower() in TRUE_WORDS
        else:
            raise UsageError(
                f"config key {p.name!r} expects a boolean (true/false, 1/0, yes/no, on/off), "
                f"got {shown}; e.g. {_example(p, style)}")
    elif kind is int:
        if isinstance(value, bool):
            v = None
        elif isinstance(value, int):
            v = value
        elif isinstance(value, str):
            v = int(value) if WHOLE_NUMBER.fullmatch(value.strip()) else None
        elif isinstance(value, float) and value.is_integer():
            v = int(value)
        else:
            v = None
        if v is None:
            rng = _range_text(p)
            raise UsageError(
                f"config key {p.name!r} expects an integer{' in ' + rng if rng else ''}, "
                f"got {shown}; e.g. {_example(p, style)}")
    elif kind is float:
        if isinstance(value, bool):
            v = None
        elif isinstance(value, (int, float)):
            v = float(value)
        elif isinstance(value, str) and "_" not in value and value.isascii():
            try:
                v = float(value.strip())
            except ValueError:
                v = None
        else:
            v = None
        if v is not None and not math.isfinite(v):
            v = None    # nan compares false with every bound: it passed any range
        if v is None:
            raise UsageError(f"config key {p.name!r} expects a number, got {shown}; e.g. {_example(p, style)}")
    elif kind is str:
        if not isinstance(value, str):
            raise UsageError(f"config key {p.name!r} expects a string, got {shown}; e.g. {_example(p, style)}")
        v = value
    else:
        # A parameter whose default is None or of another type: match the choices
        # by their text, or keep the value as given.
        v = value
        if p.choices is not None and isinstance(value, str):
            for c in p.choices:
                if value == _show(c) or value == str(c):
                    v = c
                    break
    if p.choices is not None and v not in p.choices:
        raise UsageError(
            f"config key {p.name!r} must be {_range_text(p)}, got {shown}; e.g. {_example(p, style)}")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        low_bad = p.minimum is not None and v < p.minimum
        high_bad = p.maximum is not None and v > p.maximum
        if low_bad or high_bad:
            raise UsageError(
                f"config key {p.name!r} = {_show(v)} is out of range (allowed: {_range_text(p)}); "
                f"pick a value in range, e.g. {_example(p, style)}")
    return v


def _unknown_key(family: Any, key: str) -> UsageError:
    known = list(family.parameters)
    return UsageError(
        f"unknown config key {key!r}{suggest(key, known)}; known keys: {', '.join(known) or '(none)'}"
        f" (see kmc list parameters)")


def resolve(family: Any, preset: str | None, overrides: Mapping[str, Any], *, style: str = "set") -> dict[str, Any]:
    """The full configuration: defaults, then ``preset``'s overrides, then ``overrides``.

    ``preset=None`` applies no preset.  The result has every parameter, in the
    family's declaration order.  Raises ``UsageError`` for an unknown preset or key
    or a bad value; ``ModelError`` when the family's own preset is inconsistent with
    its parameters.  ``style`` picks how the fix in a message is written: ``"set"``
    (``--set key=value``) or ``"toml"`` (``key = value``, for a config file).
    """
    params: Mapping[str, Any] = family.parameters
    config = {name: p.default for name, p in params.items()}
    if preset is not None:
        presets = family.presets
        if preset not in presets:
            known = ", ".join(sorted(presets)) or "(none)"
            raise UsageError(f"unknown preset {preset!r}{suggest(preset, list(presets))} (known: {known}); "
                             f"pick one with --preset NAME (see kmc list presets)")
        for key, value in presets[preset].overrides.items():
            if key not in params:
                raise ModelError(
                    f"preset {preset!r} of model family {family.name!r} sets unknown key {key!r}; "
                    f"fix the preset or declare the parameter")
            try:
                config[key] = coerce(params[key], value)
            except UsageError as e:
                raise ModelError(f"preset {preset!r} of model family {family.name!r}: {e}") from None
    for key, value in overrides.items():
        if key not in params:
            raise _unknown_key(family, key)
        config[key] = coerce(params[key], value, style)
    return config


def parse_set(items: list[str] | None) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``; the last of repeated keys wins."""
    out: dict[str, str] = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise UsageError(f"--set expects key=value, got {item!r}; write e.g. --set brokers=3")
        out[key] = value.strip()
    return out


@dataclass
class ConfigFile:
    """What a ``--config`` TOML file says: a preset, a model, parameter values."""

    path: str
    preset: str | None = None
    model: str | None = None
    values: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)   # key (or "preset", "model") -> line number

    def where(self, key: str) -> str:
        """``config file 'c.toml' line 3`` (without the line when it is not known)."""
        n = self.lines.get(key)
        return f"config file '{self.path}'" + (f" line {n}" if n else "")


_SCALARS = (bool, int, float, str)


def load_config_file(path: str | Path) -> ConfigFile:
    """Read a TOML config file.  Top-level ``preset = "name"``, optional
    ``model = "name"``, and parameter keys at top level or in a ``[config]`` table
    (both are accepted; a key set in both places is an error).  Nothing is imported
    here: ``model`` is kept as written, and the commands load only a registered
    family for it (``checker.cmdline.config_family``), so that a ``module:attr``
    read from a file is refused in words that name that file and line."""
    p = Path(path)
    try:
        raw = read_input(p, f"config file '{path}'", "give the path of a TOML file to --config")
    except FileNotFoundError:
        raise UsageError(f"config file '{path}' does not exist; check the path given to --config") from None
    except OSError as e:
        raise UsageError(f"cannot read config file '{path}': {e.strerror or e}; check the path and its permissions") from None
    try:
        text = raw.decode("utf-8-sig")     # a byte-order mark, as some editors write, is no TOML
    except UnicodeDecodeError as e:
        raise UsageError(f"config file '{path}' is not UTF-8 text (byte {e.start}); save it as UTF-8 TOML") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"config file '{path}' is not valid TOML: {e}; fix the syntax (see https://toml.io)") from None
    except RecursionError:             # tomllib parses nested arrays recursively
        raise UsageError(f"config file '{path}' nests arrays or tables too deeply to read; a config holds "
                         f"key = value lines (see kmc list parameters)") from None
    except ValueError as e:            # e.g. an integer of more than 4300 digits
        raise UsageError(f"config file '{path}' holds a value that cannot be read ({' '.join(str(e).split())}); "
                         f"fix that value") from None
    out = ConfigFile(path=str(path))

    def line_no(key: str) -> int | None:
        for n, line in enumerate(text.splitlines(), 1):
            s = line.strip()
            if s.startswith(key) and s[len(key):].lstrip().startswith(("=", ".")):
                return n
            if s in (f"[{key}]", f"[[{key}]]") or s.startswith(f"[{key}."):
                return n
        return None

    def line_of(key: str) -> str:
        n = line_no(key)
        return f" (line {n})" if n else ""

    for meta in ("preset", "model"):
        if meta in data:
            v = data.pop(meta)
            if not isinstance(v, str) or not v:
                raise UsageError(
                    f"config file '{path}'{line_of(meta)}: {meta} must be a non-empty string, got {v!r}; "
                    f'write e.g. {meta} = "{"default" if meta == "preset" else "kafka"}"')
            setattr(out, meta, v)
            n = line_no(meta)
            if n:
                out.lines[meta] = n
    table = data.pop("config", None)
    if table is not None and not isinstance(table, dict):
        raise UsageError(
            f"config file '{path}'{line_of('config')}: 'config' must be a table of key = value; "
            f"write [config] followed by key = value lines")
    for where, items in (("", data), ("[config].", table or {})):
        for key, value in items.items():
            if not isinstance(value, _SCALARS):
                kind = "table" if isinstance(value, dict) else "array" if isinstance(value, list) else type(value).__name__
                article = "an" if kind[0] in "aeiou" else "a"
                raise UsageError(
                    f"config file '{path}'{line_of(key)}: {where}{key} is {article} {kind}, but config values must be "
                    f"a boolean, integer or string; write e.g. {key} = 3")
            if key in out.values:
                raise UsageError(
                    f"config file '{path}'{line_of(key)}: {key} is set both at top level and in [config]; keep one")
            out.values[key] = value
            n = line_no(key)
            if n:
                out.lines[key] = n
    return out


def load_toml(path: str | Path) -> tuple[str | None, dict[str, Any]]:
    """``(preset or None, parameter values)`` of a TOML config file."""
    cf = load_config_file(path)
    return cf.preset, cf.values
