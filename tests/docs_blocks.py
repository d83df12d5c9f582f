"""The fenced blocks of the README and docs/, read as tests (tests/test_docs.py).

A block's language tag says what it is: ``console`` is a session (``$ command`` lines,
each followed by what it prints), ``sh`` a list of commands, and anything else
(``text``, ``toml``, ``python``) is shown, not run.  A block without a tag is an
error, so a new command cannot slip into the docs untested.

Output is compared the way doctest's ELLIPSIS does it: a line ``...`` stands for any
number of lines, ``...`` inside a line for any text, and a time (``0.39 s``) matches
any time, since times depend on the machine.  Every other line must appear exactly,
and consecutive shown lines must be consecutive in the output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN_LANGS = ("console", "sh")
SHOWN_LANGS = ("text", "toml", "python", "json", "xml", "html")


@dataclass
class Command:
    text: str                      # the command as shown, without "$ " or "# comment"
    expected: list[str] | None     # the output shown (console), or None (sh)


@dataclass
class Block:
    path: str                      # relative to the repository
    line: int                      # 1-based line of the opening fence
    lang: str
    lines: list[str]
    commands: list[Command] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"


def doc_files(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def blocks(path: Path, root: Path = ROOT) -> list[Block]:
    """Every fenced block of one Markdown file, with its commands parsed."""
    out: list[Block] = []
    current: Block | None = None
    rel = str(path.relative_to(root))
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            if current is None:
                current = Block(rel, no, line.strip()[3:].strip(), [])
            else:
                current.commands = _commands(current)
                out.append(current)
                current = None
        elif current is not None:
            current.lines.append(line)
    if current is not None:
        raise ValueError(f"{rel}:{current.line}: a fenced block is never closed")
    return out


def _strip_comment(line: str) -> str:
    return re.sub(r"\s+#\s.*$", "", line).strip()


def _commands(block: Block) -> list[Command]:
    if block.lang == "sh":
        return [Command(_strip_comment(l), None) for l in block.lines
                if l.strip() and not l.strip().startswith("#")]
    if block.lang != "console":
        return []
    cmds: list[Command] = []
    for l in block.lines:
        if l.startswith("$ "):
            cmds.append(Command(_strip_comment(l[2:]), []))
        elif cmds:
            cmds[-1].expected.append(l.rstrip())
        elif l.strip():
            raise ValueError(f"{block.path}:{block.line}: a console block must start with a '$ ' command")
    return cmds


_TIME = re.compile(r"\d+(?:\.\d+)? s\b")


def _line_pattern(expected: str) -> re.Pattern:
    parts = []
    for i, chunk in enumerate(expected.split("...")):
        if i:
            parts.append(".*")
        pos = 0
        for m in _TIME.finditer(chunk):
            parts.append(re.escape(chunk[pos:m.start()]))
            parts.append(r"\d+(?:\.\d+)? s\b")
            pos = m.end()
        parts.append(re.escape(chunk[pos:]))
    return re.compile("".join(parts) + r"\s*$")


def mismatch(expected: list[str], actual: str) -> str | None:
    """None if ``actual`` shows ``expected`` (see the module's docstring), else why not."""
    got = [l.rstrip() for l in actual.splitlines()]
    while got and not got[-1]:
        got.pop()
    want = list(expected)
    while want and not want[-1].strip():
        want.pop()
    pos, gap = 0, False
    for w in want:
        if w.strip() == "...":
            gap = True
            continue
        pat = _line_pattern(w)
        if gap:
            hit = next((i for i in range(pos, len(got)) if pat.match(got[i])), None)
        else:
            hit = pos if pos < len(got) and pat.match(got[pos]) else None
        if hit is None:
            where = "anywhere after" if gap else "right after"
            before = got[pos - 1] if pos else "(the start of the output)"
            return f"the line {w!r} is not {where} {before!r}"
        pos, gap = hit + 1, False
    if not gap and pos < len(got) and want:
        return f"the output goes on after {want[-1]!r} (end the block with '...'): {got[pos]!r}"
    return None
