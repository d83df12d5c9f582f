"""User invariants: extra properties written in a Python file, ``kmc check --invariants FILE``.

The file is ordinary Python.  Every ``checker.model.Property`` bound at module
level is collected (in definition order), plus the entries of an optional
module-level ``PROPERTIES`` list::

    from checker.model import always, sometimes

    LeaderInIsr = always(
        "LeaderInIsr",
        lambda s: ...,            # a predicate over the model's state
        "the leader of every partition is in its ISR",
    )

Any problem with the file (missing, a syntax error, an exception while it runs, no
property in it, two properties with one name, a name the model already uses) is a
one-line ``UsageError`` that names the file.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import inspect
import itertools
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Iterable

from checker.errors import UsageError
from checker.inputfile import read_input, special_kind
from checker.model import Property

_counter = itertools.count(1)

EXAMPLE = ('write e.g. `Name = always("Name", lambda s: ..., "why it must hold")` at module level '
           '(from checker.model import always)')


def load_invariants(path: str | os.PathLike, *, existing: Iterable[str] = ()) -> list[Property]:
    """Run the Python file at ``path`` and return the properties it defines.

    ``existing`` are property names already in use (the model's, earlier files'):
    a clash is a ``UsageError``.
    """
    name = str(path)
    module = run_user_file(path, kind="invariants", flag="--invariants")
    found: list[Property] = []
    seen: set[int] = set()
    values = list(module.__dict__.values())
    if "PROPERTIES" in module.__dict__:
        listed = module.__dict__["PROPERTIES"]
        if not isinstance(listed, (list, tuple)) or not all(isinstance(x, Property) for x in listed):
            raise UsageError(
                f"invariants file '{name}': PROPERTIES must be a list of Property objects "
                f"(built with always()/sometimes() from checker.model)")
        values = [*values, *listed]
    for v in values:
        if isinstance(v, Property) and id(v) not in seen:
            seen.add(id(v))
            found.append(v)
    if not found:
        raise UsageError(f"invariants file '{name}' defines no property; {EXAMPLE}")
    taken = set(existing)
    names: set[str] = set()
    for prop in found:
        if not isinstance(prop.name, str) or not prop.name.strip():
            raise UsageError(f"invariants file '{name}' defines a property named {prop.name!r}; give it a name "
                             f"(the first argument of always(), sometimes()...)")
        for what, fn in (("predicate", prop.predicate), ("trigger", prop.trigger)):
            if fn is not None and not callable(fn):
                shown = repr(fn) if len(repr(fn)) <= 40 else repr(fn)[:37] + "..."
                raise UsageError(f"invariants file '{name}': the {what} of property {prop.name!r} is {shown} "
                                 f"({type(fn).__name__}), not a function; pass a function of the state, e.g. "
                                 f"lambda s: ...")
            _check_arity(fn, 3 if prop.step else 1, name, prop.name, what)
        if prop.name in names:
            raise UsageError(f"invariants file '{name}' defines two properties named {prop.name!r}; rename one")
        if prop.name in taken:
            raise UsageError(
                f"invariants file '{name}': property {prop.name!r} is already defined by the model "
                f"or an earlier --invariants file; give it another name")
        names.add(prop.name)
    return [_strict(p, name) for p in found]


def _check_arity(fn: Any, n: int, path: str, prop: str, what: str) -> None:
    """A predicate that cannot take the state (a step property's: prev, action,
    next) raised TypeError on the first call, which read as the model's fault
    (exit 3); it is the file's, said at load time.  A callable whose signature
    Python cannot read (some builtins) is taken as it is."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        sig.bind(*range(n))
    except TypeError:
        line = _line_in(fn, path)
        args = "(prev, action, next), a step property's" if n == 3 else "the state"
        raise UsageError(f"invariants file '{path}'{line}: the {what} of property {prop!r} takes {sig}, not "
                         f"{args} arguments; write it as "
                         f"{'lambda prev, a, s: ...' if n == 3 else 'lambda s: ...'}") from None


class NotABool(TypeError):
    """A user's predicate returned something other than True or False."""


class StrictPredicate:
    """A user's predicate that must return a bool.  Python would take ``"yes"`` as
    true and a forgotten ``return`` (None) as false, that is, as a violation with a
    trace: both are bugs in the predicate, reported as such (exit 2).  A class at
    module level, so that the Spark engine pickles it by reference."""

    def __init__(self, predicate: Any, prop: str, what: str, where: str) -> None:
        self.predicate, self.prop, self.what, self.where = predicate, prop, what, where
        # The wrapped function's __module__ and names: the Spark engine ships the
        # code of a module executors cannot import (the user's file) by value.
        functools.update_wrapper(self, predicate)

    def __call__(self, *args: Any) -> bool:
        r = self.predicate(*args)
        if r is True or r is False:
            return r
        if type(r).__name__ == "bool_" and type(r).__module__ == "numpy":
            return bool(r)
        shown = repr(r) if len(repr(r)) <= 40 else repr(r)[:37] + "..."
        hint = " (a forgotten return?)" if r is None else ""
        raise NotABool(f"the {self.what} of property {self.prop!r} ({self.where}) returned {shown}, "
                       f"a {type(r).__name__}, not a bool{hint}")


def _line_in(fn: Any, path: Any) -> str:
    """`` line N`` where the function ``fn`` is defined in the file ``path``, else ""
    (a lambda made elsewhere, a builtin, a callable object)."""
    code = getattr(fn, "__code__", None)
    if code is None or os.path.abspath(code.co_filename) != os.path.abspath(path):
        return ""
    return f" line {code.co_firstlineno}"


def _strict(prop: Property, path: Any) -> Property:
    def wrap(fn: Any, what: str) -> Any:
        if fn is None or isinstance(fn, StrictPredicate):
            return fn
        return StrictPredicate(fn, prop.name, what, f"invariants file '{path}'{_line_in(fn, path)}")

    kind = "goal" if prop.kind == "eventually" else "predicate"
    return dataclasses.replace(prop, predicate=wrap(prop.predicate, kind), trigger=wrap(prop.trigger, "trigger"))


def load_all(paths: Iterable[str | os.PathLike], *, existing: Iterable[str] = ()) -> list[Property]:
    """Load several invariant files, checking names across all of them."""
    taken = set(existing)
    out: list[Property] = []
    for path in paths:
        props = load_invariants(path, existing=taken)
        taken.update(p.name for p in props)
        out.extend(props)
    return out


def check_user_file(path: str | os.PathLike, *, kind: str = "invariants", flag: str = "--invariants") -> None:
    """That ``path`` is a file kmc could run, without running it: a command that runs
    it only when it needs it (``kmc replay`` of a built-in property) still refuses a
    path that names nothing usable, instead of ignoring it."""
    p = Path(path)
    if not p.is_file():
        try:
            special = special_kind(p.stat().st_mode)
        except OSError:
            special = None
        what = ("is a directory" if p.is_dir() else f"is {special}, not a regular file" if special
                else "does not exist")
        raise UsageError(f"{kind} file '{path}' {what}; give the path of a Python file to {flag}")


def run_user_file(path: str | os.PathLike, *, kind: str, flag: str) -> Any:
    """Run the user's Python file at ``path`` as a fresh module and return it.

    ``kind`` names the file in messages ("invariants file 'x.py' ...") and ``flag`` is
    the option that gave it.  A missing or unreadable file, a syntax error or an
    exception while it runs (even SystemExit) is a one-line UsageError.
    """
    name = str(path)
    p = Path(path)
    check_user_file(path, kind=kind, flag=flag)
    try:
        source = read_input(p, f"{kind} file '{name}'", f"give the path of a Python file to {flag}")
    except OSError as e:
        raise UsageError(f"cannot read {kind} file '{name}': {e.strerror or e}; check its permissions") from None
    digest = hashlib.blake2b(str(p.resolve()).encode(), digest_size=4).hexdigest()
    modname = f"_kmc_{kind}_{digest}_{next(_counter)}"
    try:
        code = compile(source, str(p), "exec")
    except SyntaxError as e:
        where = f" line {e.lineno}" if e.lineno else ""
        raise UsageError(f"{kind} file '{name}'{where}: {type(e).__name__}: {e.msg}; fix the Python syntax") from None
    except ValueError as e:  # e.g. null bytes in the source
        raise UsageError(f"{kind} file '{name}' is not Python source ({e}); give a .py file") from None
    except (RecursionError, MemoryError) as e:  # an expression nested past what the compiler takes
        raise UsageError(f"{kind} file '{name}' is nested too deeply for Python to compile "
                         f"({type(e).__name__}); split its expressions") from None
    spec = importlib.util.spec_from_file_location(modname, p)
    if spec is None:
        raise UsageError(f"{kind} file '{name}' cannot be loaded as a Python module; give a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        exec(code, module.__dict__)
    except BaseException as e:  # noqa: BLE001 - a user's file may raise anything, even SystemExit
        if isinstance(e, KeyboardInterrupt):
            raise
        sys.modules.pop(modname, None)
        line = ""
        for frame in reversed(traceback.extract_tb(e.__traceback__)):
            if frame.filename == str(p):
                line = f" line {frame.lineno}"
                break
        msg = str(e)
        raise UsageError(
            f"{kind} file '{name}'{line} raised {type(e).__name__}{': ' + msg if msg else ''}; "
            f"fix the file so that it runs (python {name})") from None
    return module
