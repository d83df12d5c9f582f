"""A command line as text that a shell runs again as it was typed: the
``(reproduce: ...)`` of every failure and the ``command`` a trace records.

``shlex.join`` quotes for a POSIX shell, where a newline or an escape character
inside single quotes stays itself, so the text is right but not one line; kmc's
one-line messages then print such a character as ``\\n``, which a shell reads as
a backslash and an ``n``.  An argument holding a character that is not printable
is written in bash's ``$'...'`` quoting instead, whose escapes the shell decodes.

    >>> shell_join(["kmc", "check", "--config", "a b.toml"])
    "kmc check --config 'a b.toml'"
    >>> shell_join(["kmc", "check", "--config", "nl\\nname.toml"])
    "kmc check --config $'nl\\\\nname.toml'"
"""

from __future__ import annotations

import os
import shlex
from typing import Iterable

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", "'": "\\'"}


def shell_quote(arg: str) -> str:
    if arg.isprintable():
        return shlex.quote(arg)
    out = []
    for c in arg:
        if c in _NAMED:
            out.append(_NAMED[c])
        elif c.isprintable():
            out.append(c)
        else:
            # The bytes the name has on disk, as \xHH: bash's \u escapes depend on the
            # locale, and a name that is not UTF-8 reaches Python as a surrogate
            # (\udcff) whose bytes are the file system's, not \u's.
            try:
                raw = os.fsencode(c)
            except UnicodeEncodeError:      # a lone surrogate that names no byte
                raw = c.encode("utf-8", "surrogatepass")
            out.append("".join(f"\\x{b:02x}" for b in raw))
    return "$'" + "".join(out) + "'"


def shell_join(args: Iterable[str]) -> str:
    return " ".join(shell_quote(str(a)) for a in args)
