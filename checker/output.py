"""Writing a file a user named on the command line (``-o``, ``--html``, ``--report``,
``--junit``): checked before the work starts, written all or nothing, never over an
existing file without ``--force``.

Only a regular file is ever written or replaced, with or without ``--force``: a
directory, a FIFO, a device, a socket or a symbolic link (dangling or not) in the
target's place is refused.  The check is made before the work and again when the
file is written, in case the target changed during the run.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from checker.errors import UsageError


def _lstat(path: str | Path) -> os.stat_result | None:
    """None when nothing is there (or the path goes through a file: check_output's
    parent check says what is wrong)."""
    try:
        return os.lstat(path)
    except OSError:
        return None


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


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
    kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
    return (f"{flag} '{path}' is {kind}, not a regular file; kmc writes only regular files and never replaces "
            f"anything else, with or without --force: name a regular file, or remove '{path}' first")


def check_output(path: str, force: bool, flag: str = "-o") -> None:
    """Fail before the work, not after it, when ``path`` could not or must not be
    written: not a regular file (a link, a directory, a FIFO...), an existing file
    without ``force``, or a directory that is not there or not writable."""
    problem = not_regular(path, flag)
    if problem:
        raise UsageError(problem)
    p = Path(path)
    if _lstat(p) is not None and not force:
        raise UsageError(f"{flag} '{path}' exists; it is not overwritten: choose another name, or add --force")
    parent = p.absolute().parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {flag} '{path}': directory '{parent}' does not exist; create it first")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"cannot write {flag} '{path}': directory '{parent}' is not writable; choose another place")


def _temporary(p: Path, data: bytes, flag: str, path: str | Path) -> Path:
    tmp = p.absolute().parent / f".kmc-out-{os.getpid()}-{secrets.token_hex(4)}.tmp"
    try:
        with open(tmp, "xb") as f:
            f.write(data)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot write {flag} '{path}': {e.strerror or e}; choose another place") from None
    return tmp


def write_output(path: str, data: bytes, force: bool, flag: str = "-o") -> None:
    """All or nothing: a temporary file in the same directory, then renamed over
    the target (with --force) or linked to it (without: fails if it appeared).
    The target is checked again first: it may have become a link or a FIFO while
    the work ran."""
    problem = not_regular(path, flag)
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
            f"began); it is not overwritten: choose another name, or add --force")) from None
    except OSError as e:
        raise UsageError(f"cannot write {flag} '{path}': {e.strerror or e}; choose another place") from None
    finally:
        tmp.unlink(missing_ok=True)
