"""Subcommands beyond check, one module each.

Each module here defines ``register(sub, fmt)`` that adds its parser to
``kmc``'s subparsers (with ``set_defaults(func=...)``, where ``func(args,
command) -> int`` follows the exit codes of :mod:`checker.cli`). They are
found by listing this package, in name order, so adding a command touches no
shared file.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def modules() -> list[ModuleType]:
    """The command modules of this package, by their ``ORDER`` (replay and list come
    right after check), then by name: a deterministic help."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    found = [importlib.import_module(f"{__name__}.{n}") for n in names]
    return sorted(found, key=lambda m: getattr(m, "ORDER", 100))
