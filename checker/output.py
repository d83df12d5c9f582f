"""Writing a file a user named on the command line (``-o``, ``--html``, ``--report``,
``--junit``): checked before the work starts, written all or nothing, never over an
existing file without ``--force``.

Only a regular file is ever written or replaced, with or without ``--force``: a
directory, a FIFO, a device, a socket or a symbolic link (dangling or not) in the
target's place is refused, as is a target that is one of the files the command reads
(a trace, ``--config``, ``--invariants``...) or the source of a Python module it runs
(the model family's), or lies in a directory it reads or keeps
(``--checkpoint``, ``--resume``, ``--known``), and two outputs of one command that
name the same file (a command's outputs and the traces it saves, in ``kmc check``,
``kmc conform`` and ``kmc prove --confirm``: :func:`checker.trace.trace_clash`).  The check is made before the work and again when
the file is written, in case the target changed during the run.
"""

from __future__ import annotations

import os
import secrets
import stat
import sys
from pathlib import Path
from typing import Iterable, Optional, Sequence

from checker.errors import UsageError
from checker.inputfile import local_path, special_kind

# (what, path): an option or argument and the path it names; a None path is an
# option not given.
Named = tuple[str, Optional[str]]


def _lstat(path: str | Path) -> os.stat_result | None:
    """None when nothing is there (or the path goes through a file: check_output's
    parent check says what is wrong)."""
    try:
        return os.lstat(path)
    except OSError:
        return None




def not_regular(path: str | Path, flag: str) -> str | None:
    """Why ``path`` must not be written or replaced (a symbolic link, a directory,
    a FIFO, a device, a socket), as one line; None when it is a regular file or
    nothing."""
    st = _lstat(path)
    if st is None or stat.S_ISREG(st.st_mode):
        return None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        dangling = "" if os.path.exists(path) else ", which does not exist"
        return (f"{flag} '{path}' is a symbolic link (to '{target}'{dangling}); kmc never writes through a link "
                f"or replaces one, with or without --force: name a regular file (the link's target itself, or "
                f"another name), or remove the link first")
    if stat.S_ISDIR(st.st_mode):
        suffix = Path(path).suffix or ".html"
        return (f"{flag} '{path}' is a directory; give a file name, e.g. {flag} "
                f"{os.path.join(str(path), 'out' + suffix)}")
    kind = special_kind(st.st_mode) or "not a regular file"
    return (f"{flag} '{path}' is {kind}, not a regular file; kmc writes only regular files and never replaces "
            f"anything else, with or without --force: name a regular file, or remove '{path}' first")


def same_file(a: str | Path, b: str | Path) -> bool:
    """Do ``a`` and ``b`` name one file: the same inode when both exist (links,
    ``..``, another spelling), else the same resolved path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def inside(path: str | Path, directory: str | Path) -> bool:
    """Is ``path`` ``directory`` or under it (resolved, links followed)?"""
    out, d = os.path.realpath(path), os.path.realpath(directory)
    return out == d or os.path.commonpath([out, d]) == d


def _module_at(path: str) -> str | None:
    """The name of a loaded module whose source file ``path`` is (``--model
    mymodel:FAMILY -o mymodel.py``), else None; checked before the work and again
    at write time, when the model's module is loaded in every command."""
    if _lstat(path) is None:
        return None
    for name, module in list(sys.modules.items()):
        src = getattr(module, "__file__", None)
        if isinstance(src, str) and os.path.basename(src) == os.path.basename(path) and same_file(path, src):
            return name
    return None


def input_problem(path: str, flag: str, reads: Iterable[Named] = (), dirs: Iterable[Named] = ()) -> str | None:
    """Why ``path`` must not be written: it is a file the command reads (``reads``),
    or lies in a directory it reads or keeps (``dirs``); None when it is neither."""
    for what, src in reads:
        if src is not None and same_file(path, src):
            return (f"{flag} '{path}' is the same file as {what} '{src}', which this command reads; an input is "
                    f"never overwritten, with or without --force: name another file for {flag}")
    module = _module_at(path)
    if module is not None:
        return (f"{flag} '{path}' is the source of Python module '{module}', which this command runs (the model "
                f"family, an --invariants file...); code is never overwritten, with or without --force: name "
                f"another file for {flag}")
    for what, directory in dirs:
        local = local_path(directory) if directory else None
        if local is not None and inside(path, str(local)):
            return (f"{flag} '{path}' is inside the {what} directory '{directory}', which this command reads or "
                    f"keeps; kmc writes nothing of its own there: name a file outside it for {flag}")
    return None


def _another_name(force: bool | None) -> str:
    """The fix for an output that exists: ``force`` None is a command without
    ``--force`` (it never overwrites), which must not suggest the flag."""
    return "choose another name" + (", or add --force" if force is not None else "")


def check_output(path: str, force: bool | None, flag: str = "-o", *, reads: Iterable[Named] = (),
                 dirs: Iterable[Named] = (), early: bool = False) -> None:
    """Fail before the work, not after it, when ``path`` could not or must not be
    written: not a regular file (a link, a directory, a FIFO...), one of the
    command's inputs (``reads``: (what, path) pairs; ``dirs``: directories it reads
    or keeps), an existing file without ``force`` (None: the command has no
    ``--force``), or a directory that is not there or not writable.

    ``early``: only what the path is (not a regular file, an input), for a check
    made before the command loads its inputs, which must not be run or read as
    anything else first.  The file there and its directory are then checked with
    the command's own rules, once it knows them (the names of the traces it may
    save: :func:`checker.trace.refuse_trace_names`), so that a name a trace may take
    in a ``--traces-dir`` not created yet is refused for that, not sent to create
    the directory (or add ``--force``) first and be refused then."""
    problem = not_regular(path, flag) or input_problem(path, flag, reads, dirs)
    if problem:
        raise UsageError(problem)
    if early:
        return
    p = Path(path)
    if _lstat(p) is not None and not force:
        raise UsageError(f"{flag} '{path}' exists; it is not overwritten: {_another_name(force)}")
    parent = p.absolute().parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {flag} '{path}': directory '{parent}' does not exist; create it first")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"cannot write {flag} '{path}': directory '{parent}' is not writable; choose another place")


def check_outputs(outputs: Sequence[Named], force: bool, *, reads: Iterable[Named] = (),
                  dirs: Iterable[Named] = (), early: bool = False) -> None:
    """``check_output`` for each output given (``(flag, path)``; a None path is an
    option not given), after refusing two outputs that name the same file."""
    given = [(flag, path) for flag, path in outputs if path is not None]
    reads, dirs = list(reads), list(dirs)
    for i, (flag, path) in enumerate(given):
        for other, other_path in given[:i]:
            if same_file(path, other_path):
                raise UsageError(f"{other} '{other_path}' and {flag} '{path}' are the same file; one would replace "
                                 f"the other: give each its own name")
    for flag, path in given:
        check_output(path, force, flag, reads=reads, dirs=dirs, early=early)


def _temporary(p: Path, data: bytes, flag: str, path: str | Path) -> Path:
    tmp = p.absolute().parent / f".kmc-out-{os.getpid()}-{secrets.token_hex(4)}.tmp"
    try:
        with open(tmp, "xb") as f:
            f.write(data)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot write {flag} '{path}': {e.strerror or e}; choose another place") from None
    return tmp


def write_output(path: str, data: bytes, force: bool | None, flag: str = "-o", *,
                 reads: Iterable[Named] = ()) -> None:
    """All or nothing: a temporary file in the same directory, then renamed over
    the target (with --force) or linked to it (without: fails if it appeared).
    The target is checked again first: it may have become a link, a FIFO or one of
    ``reads`` (files the command read) while the work ran."""
    problem = not_regular(path, flag) or input_problem(path, flag, reads)
    if problem:
        raise UsageError(problem)
    p = Path(path)
    tmp = _temporary(p, data, flag, path)
    try:
        if force:
            problem = not_regular(path, flag)     # the narrowest window before the rename
            if problem:
                raise UsageError(problem)
            os.replace(tmp, p)
        else:
            os.link(tmp, p)
    except FileExistsError:
        raise UsageError(not_regular(path, flag) or (
            f"{flag} '{path}' was created by something else while kmc ran (it did not exist when the run "
            f"began); it is not overwritten: {_another_name(force)}")) from None
    except OSError as e:
        raise UsageError(f"cannot write {flag} '{path}': {e.strerror or e}; choose another place") from None
    finally:
        tmp.unlink(missing_ok=True)


def write_beside(path: str | Path, data: bytes, force: bool, flag: str, *,
                 avoid: Iterable[str | Path] = ()) -> Path:
    """Write a file whose name kmc chose (a report's page per counterexample): at
    ``path`` if it is free (or, with ``force``, a regular file there), else at the
    first free ``<stem>-2<suffix>``, ``-3``...: nothing that is there is lost and
    the run still ends with its own verdict.  ``avoid``: files this name must not be
    (the command's other outputs and inputs, pages written before).  Returns the
    path written."""
    path = Path(path)
    avoid = list(avoid)
    n = 1
    while True:
        name = path if n == 1 else path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
        if any(same_file(name, a) for a in avoid):
            continue
        st = _lstat(name)
        if st is not None and not (force and stat.S_ISREG(st.st_mode)):
            continue
        tmp = _temporary(name, data, flag, name)
        try:
            if st is not None:
                os.replace(tmp, name)
            else:
                os.link(tmp, name)
            return name
        except FileExistsError:   # appeared meanwhile: the next name
            continue
        except OSError as e:
            raise UsageError(f"cannot write {flag} page '{name}': {e.strerror or e}; choose another place "
                             f"for {flag}") from None
        finally:
            tmp.unlink(missing_ok=True)
