"""Running kmc's entry points in process on hostile input, and the property they
must keep (for tests/test_fuzz.py; not a test module).

``run(cwd, argv)`` runs ``kmc ARGV`` (or ``python -m spec.expand`` when argv
starts with ``spec.expand``) in ``cwd`` with stdout and stderr captured, and
``verdict(...)`` checks the property every run must keep, whatever the input:

- the exit status is 0, 1 or 2;
- status 2 comes with at most one line on stderr;
- no traceback anywhere;
- no file outside ``cwd/traces`` was created, changed or removed;
- no code the input names ran: the marker that ``kmc_fuzz_evil.py`` and
  ``evil_inv.py`` would write is absent, and the module is not imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVIL_MODULE = "kmc_fuzz_evil"
EVIL_CODE = ("import pathlib\npathlib.Path(__file__).with_name('MARKER').write_text('ran')\n"
             "from checker.model import always\nFAMILY = None\nEvil = always('Evil', lambda s: False, 'x')\n")


def workdir(path: Path) -> Path:
    """A working directory holding the evil module and invariants file that a
    hostile input names; nothing may ever run them."""
    path.mkdir(parents=True, exist_ok=True)
    (path / f"{EVIL_MODULE}.py").write_text(EVIL_CODE)
    (path / "evil_inv.py").write_text(EVIL_CODE)
    return path


def snapshot(cwd: Path, ignore: tuple[str, ...] = ()) -> dict[str, str]:
    """Every file under ``cwd`` but ``traces/`` (and the ``ignore`` directories, such
    as a checkpoint that a resumed run goes on writing), with a digest of its bytes."""
    out = {}
    for p in sorted(cwd.rglob("*")):
        rel = p.relative_to(cwd)
        if rel.parts[0] in ("traces", "__pycache__", *ignore) or p.is_dir():
            continue
        out[str(rel)] = hashlib.blake2b(p.read_bytes(), digest_size=16).hexdigest()
    return out


@contextlib.contextmanager
def _inside(cwd: Path):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(old)


def run(cwd: Path, argv: list[str]) -> tuple[int, str, str]:
    """``(exit status, stdout, stderr)`` of one in-process run."""
    from checker.cli import main as kmc_main
    from spec.expand import main as atomic_main

    out, err = io.StringIO(), io.StringIO()
    with _inside(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            if argv and argv[0] == "spec.expand":
                code = atomic_main([str(a) for a in argv[1:]])
            else:
                code = kmc_main([str(a) for a in argv])
        except SystemExit as e:          # argparse's --help, or a bug: both are reported
            code = e.code if isinstance(e.code, int) else 99
        except BaseException as e:  # noqa: BLE001 - a crash is a finding, with its traceback
            import traceback
            err.write("Traceback (escaped the entry point):\n" + "".join(traceback.format_exception(e)))
            code = 99
    return code, out.getvalue(), err.getvalue()


def verdict(cwd: Path, argv: list, before: dict[str, str], result: tuple[int, str, str],
            ignore: tuple[str, ...] = ()) -> str | None:
    """What is wrong with one run, or None."""
    code, out, err = result
    shown = f"kmc {' '.join(map(str, argv))[:300]}: exit {code}; stderr: {err[-1500:]!r}"
    if code not in (0, 1, 2):
        return f"exit status {code} is not 0, 1 or 2 ({shown})"
    if code == 2 and len(err.strip().splitlines()) > 1:
        return f"more than one line on stderr for exit 2 ({shown})"
    if "Traceback" in out or "Traceback" in err:
        return f"a traceback ({shown})"
    if (cwd / "MARKER").exists() or EVIL_MODULE in sys.modules:
        return f"code named by the input ran ({shown})"
    after = snapshot(cwd, ignore)
    if after != before:
        changed = sorted(k for k in set(after) | set(before) if after.get(k) != before.get(k))
        return f"files outside traces/ changed: {changed[:5]} ({shown})"
    return None


def check(cwd: Path, argv: list, ignore: tuple[str, ...] = ()) -> tuple[int, str, str]:
    """Run and assert the property; return the result for further checks."""
    before = snapshot(cwd, ignore)
    result = run(cwd, argv)
    problem = verdict(cwd, argv, before, result, ignore)
    assert problem is None, problem
    return result


# --------------------------------------------------------------------- mutations

HOSTILE = [None, True, False, 0, -1, 1, 2**63, 2**64 + 1, 10**400, -1e308, 1e308, 0.5, "", "x", "0x",
           f"{EVIL_MODULE}:FAMILY", "this:s", "../../../etc/passwd", "\x00", "\x1b[31mred", "é" * 3,
           [], {}, [None], {"name": "x", "args": {}}, "0x0123456789abcdef"]


def nested(depth: int) -> object:
    v: object = 0
    for i in range(depth):
        v = [v] if i % 2 else {"k": v}
    return v


def paths(doc: object, limit: int = 4000) -> list[tuple]:
    """``(container, key)`` for every value inside ``doc`` (breadth first, at most
    ``limit``): where a mutation can apply."""
    out: list[tuple] = []
    queue = [doc]
    while queue and len(out) < limit:
        c = queue.pop(0)
        items = c.items() if isinstance(c, dict) else enumerate(c) if isinstance(c, list) else ()
        for k, v in items:
            out.append((c, k))
            if isinstance(v, (dict, list)):
                queue.append(v)
    return out


def mutate_doc(data, doc: dict, st) -> dict:
    """1 to 3 structural mutations of a JSON document: a key deleted, a value
    swapped for another type or a hostile one, an unknown key, deep nesting,
    a huge number, the evil module or invariants file named."""
    doc = json.loads(json.dumps(doc))
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        op = data.draw(st.sampled_from(["delete", "hostile", "unknown", "deep", "evil", "evil-inv", "type"]),
                       label="op")
        if op == "evil":
            doc.setdefault("model", {})
            if isinstance(doc["model"], dict):
                doc["model"]["family"] = f"{EVIL_MODULE}:FAMILY"
            continue
        if op == "evil-inv":
            doc["invariants"] = ["evil_inv.py", str(Path("evil_inv.py").absolute())]
            if isinstance(doc.get("property"), dict):
                doc["property"]["name"] = "Evil"
            continue
        where = paths(doc)
        if not where:
            continue
        c, k = where[data.draw(st.integers(0, len(where) - 1), label="where")]
        if op == "delete":
            del c[k]
        elif op == "hostile":
            c[k] = data.draw(st.sampled_from(HOSTILE), label="value")
        elif op == "unknown":
            target = c if isinstance(c, dict) else None
            if target is not None:
                target[data.draw(st.text(max_size=8), label="key")] = data.draw(st.sampled_from(HOSTILE))
        elif op == "deep":
            # Deeper nesting than json.dumps can write is mutate_bytes' "brackets".
            c[k] = nested(data.draw(st.sampled_from([50, 99, 101, 400]), label="depth"))
        elif op == "type":
            v = c[k]
            c[k] = (str(v) if not isinstance(v, str) else
                    int(v) if v.isdigit() and len(v) < 100 else [v])
    return doc


def mutate_bytes(data, raw: bytes, st) -> bytes:
    """A byte-level mutation of a file: truncation, a flipped byte, an inserted
    run of brackets, a huge number, or none."""
    op = data.draw(st.sampled_from(["truncate", "flip", "brackets", "digits", "none"]), label="byte-op")
    if not raw or op == "none":
        return raw
    at = data.draw(st.integers(0, len(raw) - 1), label="at")
    if op == "truncate":
        return raw[:at]
    if op == "flip":
        b = bytearray(raw)
        b[at] ^= data.draw(st.integers(1, 255), label="xor")
        return bytes(b)
    if op == "brackets":
        return raw[:at] + b"[" * data.draw(st.sampled_from([100, 1000, 200_000]), label="n") + raw[at:]
    return raw[:at] + b"9" * data.draw(st.sampled_from([20, 400, 5000]), label="n") + raw[at:]
