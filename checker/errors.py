"""The two kinds of failure the CLI reports without a traceback.

UsageError: the user's input is wrong (unknown preset or key, value out of range,
malformed TOML or trace file, unknown property, bad flag).  Exit status 2, one line
that names the problem and the fix.

ModelError: the model broke its contract while being explored (``next_state``
raised, a state holds a set, an action is not deterministic).  The message names
the state and the action so the model author can reproduce it.
"""

from __future__ import annotations

import os


# What the checker catches from model and user code (a model, a property, an
# adapter) and reports as that code's error: every Exception, and SystemExit too,
# since a ``sys.exit()`` in a predicate or ``next_state`` would otherwise end the run
# with its own status, as if the search had finished.
USER_CODE_ERRORS = (Exception, SystemExit)


class UsageError(Exception):
    """Bad input from the user: exit status 2, one line, no traceback."""


class NoLongerFits(Exception):
    """A trace the model no longer takes (a step no longer enabled, a state no
    longer derived, a config it no longer resolves): exit status 1, one line, as
    ``kmc replay`` says; raised where a command cannot go on without the trace."""


class ModelError(Exception):
    """The model violated the contract of checker.model while being explored."""


def describe_exception(e: BaseException) -> str:
    """``KeyError: 'x' (at spec/model.py:42)``: the exception and the innermost
    frame it was raised in, for one-line messages about model or user code.

    >>> describe_exception(ValueError("bad"))
    'ValueError: bad'
    """
    tb = e.__traceback__
    loc = ""
    while tb is not None:
        loc = f"{os.path.relpath(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
        tb = tb.tb_next
    msg = str(e)
    return f"{type(e).__name__}{': ' + msg if msg else ''}{' (at ' + loc + ')' if loc else ''}"
