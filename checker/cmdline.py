"""What every ``kmc`` command shares: exit codes, argument types, finding a model
family and building its model, the configuration, wrapped output and the one-line
failure report.

It sits below :mod:`checker.cli` and the command modules of
:mod:`checker.commands`, which all import from here; it imports no command.

>>> count(1, "state"), count(2, "state")
('1 state', '2 states')
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import math
import os
import re
import signal
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any, Mapping, Sequence

from checker.config import WHOLE_NUMBER, parse_set, resolve, suggest
from checker.errors import ModelError, UsageError
from checker.errors import describe_exception as _exc
from checker.imports import import_ref
from checker.invariants import NotABool, load_all
from checker.model import ModelFamily, Property
from checker.shellquote import shell_quote
from checker.staterender import fill
from checker.staterender import width as terminal_width
from checker.traceschema import shown

GROUP = "kmc.models"
DEFAULT_MODEL = "kafka"

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_MODEL, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130

EXIT_CODES = """\
exit status:
  0    success (check: no violation, exhaustive or within the bounds;
       replay: the trace fits the model and still shows its violation or
       witness, or names a property the model does not declare)
  1    a property is violated and a trace was saved (check), or the trace
       no longer fits the model / no longer shows its violation or witness,
       or cannot be re-checked: its property of another kind than the
       model's, an eventually one without a loop, a step one without a step
       (replay; explore and conform too when a trace no longer fits)
  2    bad input: unknown preset, key, property or model, a value out of
       range, a malformed config or trace file, a bad flag
  3    the model broke its contract (e.g. next_state raised, a state holds a set)
  4    internal error of kmc (KMC_DEBUG=1 shows the traceback)
  130  interrupted"""


def registered_models() -> dict[str, importlib.metadata.EntryPoint]:
    eps = importlib.metadata.entry_points(group=GROUP)
    return {ep.name: ep for ep in sorted(eps, key=lambda e: e.name)}


def as_family(obj: Any, ref: str) -> Any:
    if isinstance(obj, type) and issubclass(obj, ModelFamily):
        try:
            obj = obj()
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"model family {ref!r}: constructing it raised {_exc(e)}") from e
    if not all(hasattr(obj, a) for a in ("build", "parameters", "presets")):
        raise UsageError(f"{ref!r} is a {type(obj).__name__}, not a model family (checker.model.ModelFamily); "
                         f"point --model at a ModelFamily object")
    return obj


def load_family(ref: str | None) -> tuple[Any, str]:
    """``(family, family_ref)`` for ``--model`` (an entry-point name or
    ``module:attribute``), or the registered default when ``ref`` is None."""
    if ref is not None and ":" in ref:
        modname, _, attr = ref.partition(":")
        if not modname or not attr:
            raise UsageError(f"--model {ref!r} must be NAME or module:attribute, e.g. --model tests.toys:FAMILY")
        obj = import_ref(modname, attr, what=f"--model {ref}", fix=f"check --model {ref}")
        return as_family(obj, ref), ref
    models = registered_models()
    if ref is None:
        if not models:
            raise UsageError(f"no model is registered in the {GROUP!r} entry-point group (is kmc installed? "
                             f"run pip install -e .); or name one with --model module:attribute")
        if len(models) == 1:
            ref = next(iter(models))
        elif DEFAULT_MODEL in models:
            ref = DEFAULT_MODEL
        else:
            raise UsageError(f"several models are registered ({', '.join(models)}); pick one with --model NAME")
    if ref not in models:
        known = ", ".join(models) or "none registered"
        raise UsageError(f"unknown model {ref!r}{suggest(ref, list(models))} (known: {known}); "
                         f"pick one with --model NAME or --model module:attribute")
    ep = models[ref]
    try:
        obj = ep.load()
    except ImportError as e:
        raise UsageError(f"model {ref!r} is registered as {ep.value} but cannot be imported: {e}; "
                         f"reinstall kmc (pip install -e .)") from None
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"loading model {ref!r} ({ep.value}) raised {_exc(e)}") from e
    return as_family(obj, ref), ref


def registered_name(ref: str) -> str:
    """The registered name of a family ref: ``kafka`` for ``spec.family:FAMILY`` when an
    entry point names that, else ``ref`` itself.  A string compare: nothing is imported."""
    models = registered_models()
    if ref in models:
        return ref
    return next((name for name, ep in models.items() if ep.value == ref), ref)


def trace_family(trace: Any, model: str | None) -> tuple[Any, str]:
    """``(family, family_ref)`` to replay ``trace`` with: ``--model`` when given, else
    the family the trace records, but only if it is registered (by name, or by the
    ``module:attribute`` an entry point names).  A trace is data: kmc never imports a
    module because a trace names it, so any other recorded family must be given on
    the command line."""
    if model is not None:
        return load_family(model)
    ref = registered_name(trace.family_ref)
    models = registered_models()
    if ref in models:
        return load_family(ref)
    known = ", ".join(models) or "none"
    raise UsageError(f"trace file '{trace.path}' was made with model family {shown(trace.family_ref, 60)}, which "
                     f"is not a registered model (registered: {known}); kmc never imports a module a trace names: "
                     f"name the family with --model NAME|module:attribute")


def config_family(model: str | None, file_cfg: Any) -> tuple[Any, str]:
    """``(family, family_ref)`` for a command that takes ``--model`` and ``--config``:
    ``--model`` when given, else the ``model`` a config file names, but only if it is
    registered (by name, or by the ``module:attribute`` an entry point names), else the
    registered default.  A config file is data, as a trace is: kmc never imports a
    module because a config file names it (importing runs the module's top-level code,
    and a config is shared like any other input), so a ``module:attribute`` there
    must be given on the command line, where the user names the code that runs.
    ``file_cfg`` is a :class:`checker.config.ConfigFile` or None."""
    named = file_cfg.model if file_cfg is not None else None
    if model is not None or named is None:
        return load_family(model)
    ref = registered_name(named)
    models = registered_models()
    if ":" in named and ref not in models:
        known = ", ".join(models) or "none"
        raise UsageError(f"{file_cfg.where('model')} names model family {shown(named, 60)}, which is not a "
                         f"registered model (registered: {known}); kmc never imports a module a config file "
                         f"names: pass --model {shell_quote(named)} on the command line instead")
    try:
        return load_family(ref)
    except UsageError as e:
        raise UsageError(f"{file_cfg.where('model')}: {e}") from None


def reopen_args(trace_path: str, family_ref: str, invariants: Sequence[str] = ()) -> str:
    """The arguments that open a trace this run saved again (``kmc replay ...``,
    ``kmc explore ...``): the path, ``--model`` when the family is not a registered
    model, since :func:`trace_family` never imports what a trace names, and each of
    the run's ``--invariants`` files as the user gave it, since replay never runs the
    files a trace records either (without them a user property cannot be re-checked).

    >>> reopen_args("traces/a b.json", "tests.toys:FAMILY", ["my inv.py"])
    "'traces/a b.json' --model tests.toys:FAMILY --invariants 'my inv.py'"
    """
    registered = registered_name(family_ref) in registered_models()
    return (shell_quote(trace_path) + ("" if registered else f" --model {shell_quote(family_ref)}")
            + "".join(f" --invariants {shell_quote(str(f))}" for f in invariants))


def build_model(family: Any, config: Mapping[str, Any]) -> Any:
    try:
        return family.build(config)
    except ValueError as e:
        msg = " ".join(str(e).split()) or "rejected by the model family"
        fix = "" if ";" in msg else "; change the values with --set key=value"
        raise UsageError(f"invalid configuration for model {family.name!r}: {msg}{fix}") from None
    except (UsageError, ModelError):
        raise
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"building model {family.name!r} raised {_exc(e)}") from e


def check_traces_dir(directory: str) -> None:
    """Fail before the search, not after it, when traces could not be saved."""
    p = Path(directory)
    if p.exists():
        if not p.is_dir():
            raise UsageError(f"--traces-dir '{directory}' is a file, not a directory; "
                             f"choose a directory with --traces-dir DIR")
        if not os.access(p, os.W_OK | os.X_OK):
            raise UsageError(f"--traces-dir '{directory}' is not writable; choose another with --traces-dir DIR")
        return
    parent = p.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        what = "is not a directory" if not parent.is_dir() else "is not writable"
        raise UsageError(f"cannot create --traces-dir '{directory}': '{parent}' {what}; "
                         f"choose another directory with --traces-dir DIR")


def model_properties(model: Any) -> list[Property]:
    try:
        return list(model.properties())
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"{model.name}.properties() raised {_exc(e)}") from e


def show(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def config_line(config: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={show(v)}" for k, v in config.items()) or "(no parameters)"


def count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def width() -> int:
    """The output width: the terminal's, or $COLUMNS, between 60 and 100 (trace.width)."""
    return terminal_width()


def para(head: str, text: str, indent: int | None = None) -> str:
    """``head`` + ``text`` wrapped to the output width, continuation lines indented
    under the text (or by ``indent`` spaces); words are never broken."""
    cont = " " * (len(head) if indent is None else indent)
    return textwrap.fill(text, width=width(), initial_indent=head, subsequent_indent=cont,
                         break_long_words=False, break_on_hyphens=False) or head.rstrip()


def config_text(head: str, config: Mapping[str, Any]) -> str:
    """The config as wrapped ``key=value`` pairs (a pair is never split)."""
    items = [f"{k}={show(v)}" for k, v in config.items()] or ["(no parameters)"]
    return "\n".join(fill(head, items, " ", width(), " " * len(head)))


def resolve_config(args: argparse.Namespace, family: Any, file_cfg: Any) -> tuple[str, dict[str, Any]]:
    # An empty --preset '' is a name like any other (an unknown one), never "the default".
    preset = (args.preset if args.preset is not None
              else file_cfg.preset if file_cfg is not None and file_cfg.preset is not None
              else family.default_preset)
    if args.preset is None and file_cfg is not None and file_cfg.preset is not None:
        try:
            resolve(family, preset, {})
        except UsageError as e:
            raise UsageError(f"{file_cfg.where('preset')}: {e}") from None
    file_values = file_cfg.values if file_cfg else {}
    for key, value in file_values.items():  # one at a time, to name the line
        try:
            resolve(family, preset, {key: value}, style="toml")
        except UsageError as e:
            raise UsageError(f"{file_cfg.where(key)}: {e}") from None
    overrides = {**file_values, **parse_set(args.set)}
    return preset, resolve(family, preset, overrides)


# The largest count or number of seconds a flag takes: a signed 64-bit integer's
# range, which a float holds too (a larger one overflowed in a deadline's sum).
MAX_FLAG = 10 ** 18


def at_least(text: str, low: int, high: int | None = MAX_FLAG) -> int:
    """An argparse type: a whole number from ``low`` to ``high`` (None: no upper
    bound); the message names the bound the flag has (">= 1" for a count, not ">= 0")."""
    if not WHOLE_NUMBER.fullmatch(text.strip()):
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise argparse.ArgumentTypeError(f"expects a whole number >= {low}, got {shown!r}")
    v = int(text)
    if v < low:
        raise argparse.ArgumentTypeError(f"expects a number >= {low}, got {v}")
    if high is not None and v > high:
        shown = str(v) if len(str(v)) <= 40 else str(v)[:37] + "..."
        raise argparse.ArgumentTypeError(f"expects a number from {low} to {high}, got {shown}")
    return v


def engine_of(engine: str | None, spark_flags: Sequence[tuple[str, Any]]) -> str:
    """``local`` or ``spark``: a Spark option given (``(flag, value)``, any value
    but None, so an empty ``--spark-master ''`` too) implies ``--engine spark``,
    and contradicts ``--engine local``."""
    given = [flag for flag, value in spark_flags if value is not None]
    chosen = engine or ("spark" if given else "local")
    if chosen == "local" and given:
        raise UsageError(f"{given[0]} needs the Spark engine; use --engine spark, or drop {given[0]}")
    return chosen


def user_properties(files: Sequence[str], model_props: Sequence[Property]) -> list[Property]:
    """The properties of the ``--invariants`` files, whose names must differ from
    the model's (``model_props``) and from the built-in ``Deadlock``."""
    return load_all(files, existing=[p.name for p in model_props] + ["Deadlock"])


def deadlock_flags(properties: list[str] | None, no_deadlock: bool) -> None:
    """``--property Deadlock`` with ``--no-deadlock`` would check nothing of what was
    asked and still say every property holds: refused."""
    if no_deadlock and "Deadlock" in (properties or ()):
        raise UsageError("--property Deadlock names the deadlock check that --no-deadlock turns off; "
                         "drop one of the two")


_DECIMAL = re.compile(r"[+-]?(?:[0-9]{1,20}(?:\.[0-9]{0,20})?|\.[0-9]{1,20})")     # ASCII, as WHOLE_NUMBER


def percent(text: str) -> float:
    """An argparse type: a percentage, a finite number from 0 to 100 (``nan`` would
    compare false with every score, and make a gate that always passes)."""
    v = float(text) if _DECIMAL.fullmatch(text.strip()) else math.nan
    if not 0 <= v <= 100:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise argparse.ArgumentTypeError(f"expects a percentage from 0 to 100, got {shown!r}")
    return v


@contextlib.contextmanager
def sigterm_as_interrupt(what: str):
    """Within the block, SIGTERM (a CI timeout, ``kill``, ``timeout``) stops the
    command as Ctrl-C does: KeyboardInterrupt, whose ``finally`` blocks stop the
    processes the command started, then exit 130 with ``what`` in the line.  Python's
    default for SIGTERM ends the process at once, leaving them running."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        # A second SIGTERM (some runners send two) must not cut the cleanup short.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt(f"terminated (SIGTERM): {what}")

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def path_arg(text: str) -> str:
    """An argparse type for a file or directory: an empty name names none (it was
    read as the current directory, or left the option out without a word)."""
    if not text:
        raise argparse.ArgumentTypeError(f"expects a path, got {text!r}")
    return text


def nonneg(text: str) -> int:
    return at_least(text, 0)


def seed(text: str) -> int:
    """A random seed: an id, not a count, so any size (a clock's nanoseconds, 2^64 - 1)."""
    return at_least(text, 0, None)


def positive(text: str) -> int:
    return at_least(text, 1)


# z3 takes its timeout as an unsigned 32-bit number of milliseconds: a larger one wrapped
# round (4294968 s gave up at once, as if it were 1 ms).
Z3_MAX_SECONDS = (2 ** 32 - 1) // 1000


def z3_seconds(text: str) -> int:
    return at_least(text, 1, Z3_MAX_SECONDS)


def wrap(text: str) -> str:
    return textwrap.fill(text, width=78)


def one_line(text: str) -> str:
    """``text`` with every character that could break or hide a line (a newline, a
    NEL, an escape sequence) written as its Python escape, so that an error stays
    one readable line whatever the input held.

    >>> one_line("got '\\x85' and\\nmore")
    "got '\\\\x85' and\\\\nmore"
    """
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def fail(message: str, command: str, kind: str = "") -> None:
    sys.stdout.flush()
    print(one_line(f"kmc: {kind}{message} (reproduce: {command})"), file=sys.stderr)
    sys.stderr.flush()


MODEL_HELP = ("model family: a name registered in the kmc.models entry-point group, or module:attribute "
              "(default: the registered model, 'kafka' if there are several)")


def family_properties(family: Any) -> list[tuple[Property, list[str] | None]]:
    """Every property the family documents, plus any that only some presets declare,
    each with the presets that declare it (None: every preset, or not known)."""
    try:
        docs = list(family.property_docs())
    except (UsageError, ModelError):
        raise
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"{family.name}.property_docs() raised {_exc(e)}") from e
    declared: dict[str, list[str]] = {}
    extra: dict[str, Property] = {}
    presets = list(family.presets)
    built = 0
    for name in presets:
        try:
            props = family.build(resolve(family, name, {})).properties()
        except Exception:  # noqa: BLE001 - a broken preset is reported when it is used
            continue
        built += 1
        for p in props:
            declared.setdefault(p.name, []).append(name)
            if p.name not in extra:
                extra[p.name] = p
    out: list[tuple[Property, list[str] | None]] = []
    names = {p.name for p in docs}
    for p in [*docs, *(p for n, p in extra.items() if n not in names)]:
        where = declared.get(p.name, [])
        out.append((p, where if presets and built == len(presets) and len(where) < built else None))
    return out


def user_property_error(e: ModelError, files: Sequence[str]) -> UsageError | None:
    """A ModelError whose cause was raised inside a user's --invariants file is the
    user's to fix (exit 2), with the file and line, not the model's (exit 3).  So is
    a user's predicate that returned something other than a bool (the Spark engine
    reports it by message only)."""
    cause = e.__cause__
    text = str(e)
    d = re.search(r"at depth (\d+)", text)
    at = f" on a state at depth {d.group(1)}" if d else ""
    wrong = re.search(r"NotABool: (.*? not a bool(?: \(a forgotten return\?\))?)", text)
    if isinstance(cause, NotABool) or wrong:
        msg = " ".join(str(cause).split()) if isinstance(cause, NotABool) else wrong.group(1)
        return UsageError(f"{msg}{at}; fix the predicate: it must return True or False on every reachable "
                          f"state of the model")
    if cause is None or not files:
        return None
    targets = {os.path.abspath(f): f for f in files}
    where = None
    tb = cause.__traceback__
    while tb is not None:
        path = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if path in targets:
            where = (targets[path], tb.tb_lineno)
        tb = tb.tb_next
    if where is None:
        return None
    m = re.search(r"propert(?:y|ies) '([^']+)'", text)
    what = f"property {m.group(1)!r}" if m else "a property"
    msg = " ".join(str(cause).split())
    return UsageError(f"{what} in invariants file '{where[0]}' line {where[1]} raised "
                      f"{type(cause).__name__}{': ' + msg if msg else ''}{at}; fix the predicate: it must "
                      f"return a bool on every reachable state of the model")
