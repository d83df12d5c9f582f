"""Import a ``module:attribute`` reference named by a user, with one-line errors.

``--model``, a family's ``implementation`` and the like all name an object this
way; what can go wrong (no such module, a dependency missing, the module raising,
no such attribute) is the same for each, only the words for the fix differ.

>>> import_ref("checker.model", "Model", what="--model checker.model:Model", fix="check --model").__name__
'Model'
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from checker.config import suggest
from checker.errors import ModelError, UsageError
from checker.errors import describe_exception as _exc


def import_ref(modname: str, attr: str, *, what: str, fix: str) -> Any:
    """``module.attr`` (dotted attributes allowed), the current directory importable.

    ``what`` names the reference in messages ("--model x:Y"); ``fix`` ends the
    message for a missing attribute.  UsageError for what the user can fix,
    ModelError when the module itself raises.
    """
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(modname)
    except ModuleNotFoundError as e:
        if e.name and (modname == e.name or modname.startswith(e.name + ".")):
            raise UsageError(f"cannot import module {modname!r} for {what}: no module named {e.name!r}; "
                             f"check the name and PYTHONPATH") from None
        raise UsageError(f"importing {modname!r} for {what} failed: {e}; install what it needs") from None
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"importing {modname!r} for {what} raised {_exc(e)}") from e
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            raise UsageError(f"module {modname!r} has no attribute {attr!r}{suggest(part, names)}; {fix}")
        obj = getattr(obj, part)
    return obj
