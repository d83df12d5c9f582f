"""Writing a file a user named on the command line (``-o``, ``--html``, ``--report``,
``--junit``): checked before the work starts, written all or nothing, never over an
existing file without ``--force``.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from checker.errors import UsageError


def check_output(path: str, force: bool, flag: str = "-o") -> None:
    """Fail before the work, not after it, when ``path`` could not be written."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{flag} '{path}' is a directory; give a file name, e.g. {flag} "
                         f"{os.path.join(path, 'out' + (p.suffix or '.html'))}")
    if p.exists() and not force:
        raise UsageError(f"{flag} '{path}' exists; it is not overwritten: choose another name, or add --force")
    parent = p.absolute().parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {flag} '{path}': directory '{parent}' does not exist; create it first")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"cannot write {flag} '{path}': directory '{parent}' is not writable; choose another place")


def write_output(path: str, data: bytes, force: bool, flag: str = "-o") -> None:
    """All or nothing: a temporary file in the same directory, then renamed over
    the target (with --force) or linked to it (without: fails if it appeared)."""
    p = Path(path)
    tmp = p.absolute().parent / f".kmc-out-{os.getpid()}-{secrets.token_hex(4)}.tmp"
    try:
        tmp.write_bytes(data)
        if force:
            os.replace(tmp, p)
        else:
            try:
                os.link(tmp, p)
            except FileExistsError:
                raise UsageError(f"{flag} '{path}' appeared while it was being written; it is not overwritten: "
                                 f"choose another name, or add --force") from None
    finally:
        tmp.unlink(missing_ok=True)
