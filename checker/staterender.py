"""Text rendering of states and of changes between states, wrapped to the terminal's
width: what ``kmc replay``, ``kmc check`` and ``kmc prove`` print for each step of a trace.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from checker.statediff import ABSENT, NESTED, children, flatten, is_container


# ------------------------------------------------------------------- rendering

SHORT = 40          # a nested value at most this wide is shown inline in a group


def width() -> int:
    """The width output is wrapped to: the terminal's (``COLUMNS`` when set), else
    100; kept within 60..160 so that lines stay readable."""
    import shutil
    return max(60, min(shutil.get_terminal_size((100, 24)).columns, 160))


_LITERALS = {"None", "True", "False", "<absent>", "{...}", "[...]"}


def _bare(s: str) -> bool:
    """Can this string be shown without quotes and still not be mistaken for another value?"""
    if not s or s != s.strip() or s in _LITERALS or not s.isprintable() or s[0] in "'\"":
        return False
    try:
        float(s)
    except ValueError:
        return True
    return False


def show_value(v: Any) -> str:
    """A value as replay prints it: scalars as Python writes them, strings without
    quotes where that is unambiguous (``OnlinePartition``, ``[0, 2]``), and
    containers inline: ``{leader: 0, isr: [0, 1]}``."""
    if v is ABSENT:
        return "<absent>"
    if v is NESTED:
        return "{...}"
    if isinstance(v, str):
        return v if _bare(v) else repr(v)
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{k}: {show_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(show_value(x) for x in v) + "]"
    return repr(v)


def _short(v: Any) -> str:
    """A container on the old side of a change: inline when short, else elided."""
    text = show_value(v)
    if len(text) <= SHORT:
        return text
    return "{...}" if isinstance(v, Mapping) else "[...]"


def fill(head: str, items: Sequence[str], sep: str, width: int, cont: str) -> list[str]:
    """``head`` followed by ``items`` joined by ``sep``, wrapped to ``width`` only
    between items (never inside one); continuation lines start with ``cont``."""
    lines: list[str] = []
    cur = head
    fresh = True                      # nothing after the head / the indent yet
    for i, item in enumerate(items):
        piece = item if fresh else sep + item
        if not fresh and len(cur) + len(piece) > width:
            lines.append(cur.rstrip())
            cur, piece = cont, item
        cur += piece
        fresh = False
    lines.append(cur)
    return lines


def _tokens(v: Any) -> list[str]:
    """``show_value(v)`` cut into pieces that ``fill`` may wrap between: joined
    with single spaces, they give ``show_value(v)`` back."""
    if isinstance(v, Mapping) and v:
        parts = [(f"{k}: ", x) for k, x in v.items()]
        opening, closing = "{", "}"
    elif isinstance(v, (list, tuple)) and v:
        parts = [("", x) for x in v]
        opening, closing = "[", "]"
    else:
        return [show_value(v)]
    out: list[str] = []
    for n, (label, x) in enumerate(parts):
        sub = _tokens(x)
        sub[0] = label + sub[0]
        if n < len(parts) - 1:
            sub[-1] += ","
        out.extend(sub)
    out[0] = opening + out[0]
    out[-1] += closing
    return out


def render_change(key: str, old: Any, new: Any, indent: str = "  ", width_: int | None = None) -> list[str]:
    """One change as ``key: old -> new``; a container that appears is written
    inline and wrapped between its elements."""
    w = width_ or width()
    if is_container(new) and new and not is_container(old):
        return fill(f"{indent}{key}: {show_value(old)} -> ", _tokens(new), " ", w, indent + "    ")
    old_text = _short(old) if is_container(old) and old else show_value(old)
    return [f"{indent}{key}: {old_text} -> {show_value(new)}"]


def render_changes(changes: Sequence[tuple[str, Any, Any]], indent: str = "  ",
                   width_: int | None = None) -> list[str]:
    if not changes:
        return [f"{indent}(no change)"]
    out: list[str] = []
    for k, old, new in changes:
        out.extend(render_change(k, old, new, indent, width_))
    return out


def render_state(view: Mapping[str, Any], indent: str = "  ", width_: int | None = None) -> list[str]:
    """A whole state, compactly: scalars at the top level one per line, and every
    nested record as one line of ``field=value`` pairs (wrapped), split into its
    sub-records only when it does not fit on a line::

        zk: controller=-1  controller_epoch=0  brokers=[0, 1]  topic=True
        broker.0: alive=True  controller_epoch_seen=0  partition.0=None
    """
    w = width_ or width()
    lines: list[str] = []

    def pairs(v: Any, key: str) -> list[str]:
        return [f"{k}={show_value(x)}" for k, x in flatten(v, key).items()]

    def group(path: str, node: Any) -> None:
        head = f"{indent}{path}: "
        whole = pairs(node, "")
        if len(head) + sum(len(p) + 2 for p in whole) - 2 <= w:
            lines.append(head + "  ".join(whole))
            return
        inline: list[str] = []
        subs: list[tuple[str, Any]] = []
        for k, v in children(node, "").items():
            if is_container(v) and v:
                mine = pairs(v, k)
                if sum(len(p) + 2 for p in mine) - 2 <= SHORT:
                    inline.extend(mine)
                else:
                    subs.append((f"{path}.{k}" if not k.startswith("[") else f"{path}{k}", v))
            else:
                inline.append(f"{k}={show_value(v)}")
        if inline:
            lines.extend(fill(head, inline, "  ", w, indent + "    "))
        for sub_path, v in subs:
            group(sub_path, v)

    for k, v in children(view, "").items():
        if is_container(v) and v:
            group(k, v)
        else:
            lines.append(f"{indent}{k}: {show_value(v)}")
    return lines
