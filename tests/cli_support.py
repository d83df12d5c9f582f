"""Running ``kmc`` the way a user does, for the tests of every subcommand.

One subprocess runner and one check of the one-line error contract (exit status,
a single stderr line, no traceback, the command that reproduces it at the end),
instead of a copy in each test file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def kmc(*args, cwd: Path | str = ROOT, seed: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m checker ARGS`` from ``cwd`` with the repository importable;
    ``seed`` sets PYTHONHASHSEED (the determinism tests run under several)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if seed is not None:
        env["PYTHONHASHSEED"] = seed
    env.pop("KMC_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "checker", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def one_line_error(r: subprocess.CompletedProcess, needle: str = "", *, code: int = 2,
                   prefix: str = "kmc: ", reproduce: str = "kmc") -> str:
    """Assert ``r`` failed with ``code`` and one stderr line that starts with
    ``prefix``, contains ``needle`` and ends with ``(reproduce: <reproduce>...)``."""
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(prefix) and f"(reproduce: {reproduce}" in lines[0] and lines[0].endswith(")"), lines[0]
    assert needle in lines[0], lines[0]
    return lines[0]
