"""Files a user names as input (a trace, a config, an invariants file): only a
regular file of a sane size is read.

Reading a FIFO blocks until someone writes to it, and ``/dev/zero`` never ends: a
path that is a named pipe, a device or a socket would hang ``kmc`` or exhaust its
memory instead of giving the one-line error that bad input gets.  A symbolic link
to a regular file is read as that file.

>>> special_kind(0o010644)      # S_IFIFO
'a FIFO (named pipe)'
>>> special_kind(0o100644) is None
True
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from checker.errors import UsageError

__all__ = ["special_kind", "read_input", "local_path", "MAX_INPUT_BYTES"]

MAX_INPUT_BYTES = 1 << 28   # 256 MiB: far above any trace or config kmc writes

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def special_kind(mode: int) -> str | None:
    """What a file of ``mode`` is when it is a FIFO, a device or a socket, in words;
    None for anything else (a regular file, a directory, a link)."""
    return next((name for test, name in _KINDS if test(mode)), None)


def read_input(path: str | Path, what: str, fix: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file at ``path``.  A FIFO, device or socket, or a
    file larger than ``limit``, is a one-line UsageError that names ``what`` (e.g.
    "trace file 'x.json'") and ends with ``fix``; a missing file, a directory or an
    unreadable one raises the OSError, for the caller's own words."""
    st = os.stat(path)
    kind = special_kind(st.st_mode)
    if kind is not None:
        raise UsageError(f"{what} is {kind}, not a regular file; {fix}")
    if stat.S_ISREG(st.st_mode) and st.st_size > limit:
        raise UsageError(f"{what} is {st.st_size:,} bytes, more than the {limit:,} kmc reads; {fix}")
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise UsageError(f"{what} is more than the {limit:,} bytes kmc reads; {fix}")
    return data


def local_path(url: str) -> Path | None:
    """The local path a directory option names, which may be a Hadoop URL
    (``--checkpoint``, ``--resume``): ``file:`` URLs too; None for another file
    system, whose files kmc cannot look at without Spark.  ``file://localhost/x``
    is ``/x`` (RFC 8089: the host ``localhost`` is this machine, as no host is);
    a ``file:`` URL naming another host is not a path here either."""
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", url)
    if not m:
        return Path(url)
    if m.group(1).lower() != "file":
        return None
    rest = url[m.end():]
    if rest.startswith("//"):
        host, slash, path = rest[2:].partition("/")
        if host.lower() not in ("", "localhost"):
            return None
        rest = slash + path
    return Path(rest)
