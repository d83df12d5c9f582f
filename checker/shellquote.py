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
            code = ord(c)
            # \xHH is a byte in bash: past ASCII, the character's own escape
            out.append(f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "$'" + "".join(out) + "'"


def shell_join(args: Iterable[str]) -> str:
    return " ".join(shell_quote(str(a)) for a in args)
