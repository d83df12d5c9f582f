"""The two kinds of failure the CLI reports without a traceback.

UsageError: the user's input is wrong (unknown preset or key, value out of range,
malformed TOML or trace file, unknown property, bad flag).  Exit status 2, one line
that names the problem and the fix.

ModelError: the model broke its contract while being explored (``next_state``
raised, a state holds a set, an action is not deterministic).  The message names
the state and the action so the model author can reproduce it.
"""


class UsageError(Exception):
    """Bad input from the user: exit status 2, one line, no traceback."""


class ModelError(Exception):
    """The model violated the contract of checker.model while being explored."""
