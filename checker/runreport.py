"""The run report of ``kmc check --report OUT.html``: one self-contained HTML file.

It holds what a reviewer of a check wants on one page: the configuration; a plot per
BFS level of the frontier, the new states and the states per second (inline SVG, drawn
here, no library and no network); the verdict of every property with its rationale;
TLC-style action coverage (:mod:`checker.coverage`) with the actions that were never
enabled; and a link to each counterexample's own page (``kmc replay --html``).

    >>> svg = level_plot([{"level": 0, "frontier": 1, "new": 2, "distinct": 3, "seconds": 0.1},
    ...                   {"level": 1, "frontier": 2, "new": 0, "distinct": 3, "seconds": 0.1}])
    >>> svg.startswith("<svg") and 'data-series="frontier"' in svg
    True
"""

from __future__ import annotations

import html
import os
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

SERIES = (("frontier", "frontier size", "#0969da"), ("new", "new states", "#1a7f37"),
          ("rate", "states/s", "#cf222e"))


@dataclass
class PropertyVerdict:
    name: str
    kind: str
    verdict: str           # "holds", "violated", "reached", "not reached", "not checked"
    rationale: str = ""
    detail: str = ""
    trace: str | None = None       # the trace file
    page: str | None = None        # its HTML page, relative to the report


@dataclass
class Report:
    title: str
    command: str
    model: str
    engine: str
    config: Mapping[str, Any]
    verdict: str
    summary: Sequence[tuple[str, str]]                  # (label, value) lines: states, depth, time...
    levels: Sequence[Mapping[str, Any]]
    properties: Sequence[PropertyVerdict]
    coverage: Sequence[tuple[str, int | None, int, int | None]]
    never_enabled: Sequence[str]
    notes: Sequence[str] = field(default_factory=list)


def _num(v: int | None) -> str:
    return "n/a" if v is None else f"{v:,}"


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def level_rows(levels: Sequence[Mapping[str, Any]]) -> list[dict[str, float]]:
    """Per level: frontier, new states and states/s (new states over the level's seconds)."""
    out = []
    for lv in levels:
        secs = float(lv.get("seconds") or 0.0)
        new = int(lv.get("new") or 0)
        out.append({"level": int(lv["level"]), "frontier": int(lv.get("frontier") or 0), "new": new,
                    "distinct": int(lv.get("distinct") or 0), "seconds": secs,
                    "rate": (new / secs) if secs > 0 else 0.0})
    return out


def level_plot(levels: Sequence[Mapping[str, Any]], width: int = 760, height: int = 260) -> str:
    """Three polylines over the BFS levels, each scaled to its own maximum (the axis
    labels say the maxima), as an inline SVG element."""
    rows = level_rows(levels)
    left, right, top, bottom = 50, 170, 20, 40
    w, h = width - left - right, height - top - bottom
    parts = [f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="per BFS level: frontier, new states, states/s">',
             f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#d8dee4"/>']
    n = max(len(rows) - 1, 1)

    def x(i: int) -> float:
        return left + w * i / n

    for i, r in enumerate(rows):
        if len(rows) <= 40 or i % max(1, len(rows) // 20) == 0:
            parts.append(f'<text x="{x(i):.1f}" y="{top + h + 14}" font-size="10" text-anchor="middle">'
                         f'{r["level"]}</text>')
    parts.append(f'<text x="{left + w / 2}" y="{height - 6}" font-size="11" text-anchor="middle">BFS level</text>')
    for k, (key, label, colour) in enumerate(SERIES):
        peak = max((r[key] for r in rows), default=0) or 1
        pts = " ".join(f"{x(i):.1f},{top + h - h * r[key] / peak:.1f}" for i, r in enumerate(rows))
        parts.append(f'<polyline data-series="{key}" fill="none" stroke="{colour}" stroke-width="2" points="{pts}"/>')
        for i, r in enumerate(rows):
            parts.append(f'<circle cx="{x(i):.1f}" cy="{top + h - h * r[key] / peak:.1f}" r="2" fill="{colour}">'
                         f'<title>level {r["level"]}: {label} {r[key]:,.0f}</title></circle>')
        # The maximum on a line of its own: a large count beside the label would not fit.
        ly = top + 14 + 32 * k
        parts.append(f'<line x1="{left + w + 12}" y1="{ly - 4}" x2="{left + w + 30}" y2="{ly - 4}" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{left + w + 34}" y="{ly}" font-size="11">{_e(label)}'
                     f'<tspan x="{left + w + 34}" dy="13">(max {peak:,.0f})</tspan></text>')
    parts.append("</svg>")
    return "".join(parts)


CSS = """
body { font: 14px/1.45 system-ui, sans-serif; color: #1d2329; margin: 24px auto; max-width: 1100px; padding: 0 16px; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; border-bottom: 1px solid #d8dee4; }
table { border-collapse: collapse; font-size: 13px; } td, th { padding: 3px 10px; border-bottom: 1px solid #eaeef2; text-align: left; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font: 12px ui-monospace, monospace; } pre { background: #f6f8fa; padding: 8px; white-space: pre-wrap; }
.verdict-OK, .v-holds, .v-reached { color: #1a7f37; font-weight: 600; }
.verdict-VIOLATED, .v-violated, .v-not-reached { color: #cf222e; font-weight: 600; }
.verdict-BOUNDED, .v-not-checked { color: #9a6700; font-weight: 600; }
tr.never td { color: #cf222e; } .muted { color: #6a737d; }
"""


def render(r: Report) -> str:
    p: list[str] = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
                    f"<title>kmc check report: {_e(r.title)}</title><style>{CSS}</style></head><body>",
                    f"<h1>kmc check: {_e(r.title)}</h1>",
                    f'<p>verdict: <span id="verdict" class="verdict-{_e(r.verdict)}">{_e(r.verdict)}</span></p>',
                    f"<p class=muted>command: <code>{_e(r.command)}</code><br>model: {_e(r.model)}; "
                    f"engine: {_e(r.engine)}</p>",
                    '<table id="summary">' + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>"
                                                      for k, v in r.summary) + "</table>"]
    for note in r.notes:
        p.append(f"<p class=muted>{_e(note)}</p>")
    p.append("<h2>Configuration</h2><table id=\"config\">" + "".join(
        f"<tr><th>{_e(k)}</th><td><code>{_e(v)}</code></td></tr>" for k, v in r.config.items()) + "</table>")
    p.append("<h2>Search, per BFS level</h2>")
    if r.levels:
        p.append(level_plot(r.levels))
        p.append('<table id="levels"><tr><th class=n>level</th><th class=n>frontier</th><th class=n>new states</th>'
                 '<th class=n>distinct</th><th class=n>seconds</th><th class=n>states/s</th></tr>' + "".join(
                     f'<tr><td class=n>{x["level"]}</td><td class=n>{x["frontier"]:,}</td><td class=n>{x["new"]:,}</td>'
                     f'<td class=n>{x["distinct"]:,}</td><td class=n>{x["seconds"]:.3f}</td>'
                     f'<td class=n>{x["rate"]:,.0f}</td></tr>' for x in level_rows(r.levels)) + "</table>")
    else:
        p.append("<p class=muted>no level was expanded</p>")
    p.append('<h2>Properties</h2><table id="properties"><tr><th>property</th><th>kind</th><th>verdict</th>'
             '<th>rationale</th><th>counterexample</th></tr>')
    for v in r.properties:
        cls = "v-" + v.verdict.replace(" ", "-")
        link = ""
        if v.page:
            # A relative URL of the file's name: '#', '?', '%' or a scheme ("javascript:x.html")
            # in the name the user gave --report would read as URL syntax.
            href = "./" + urllib.parse.quote(os.fsencode(v.page))     # the name's bytes, as on disk
            link = f'<a href="{_e(href)}">{_e(v.detail or "trace")}</a><br><code>{_e(v.trace or "")}</code>'
        elif v.detail:
            link = _e(v.detail)
        p.append(f'<tr data-property="{_e(v.name)}"><td><code>{_e(v.name)}</code></td><td>{_e(v.kind)}</td>'
                 f'<td class="{cls}">{_e(v.verdict)}</td><td>{_e(v.rationale)}</td><td>{link}</td></tr>')
    p.append("</table>")
    p.append('<h2>Coverage</h2><p>For each action: the expanded states in which it was enabled, the transitions '
             'it labels (a breadth-first search takes every enabled action), and those that led to a state seen '
             'for the first time. An action never enabled is the first sign of a vacuous check.</p>')
    p.append('<table id="coverage"><tr><th>action</th><th class=n>enabled</th><th class=n>taken</th>'
             '<th class=n>new state</th></tr>' + "".join(
                 f'<tr class="{"never" if n in r.never_enabled else ""}" data-action="{_e(n)}">'
                 f'<td><code>{_e(n)}</code></td><td class=n>{_num(e)}</td><td class=n>{_num(t)}</td>'
                 f'<td class=n>{_num(w)}</td></tr>' for n, e, t, w in r.coverage) + "</table>")
    never = ", ".join(r.never_enabled) if r.never_enabled else "none"
    p.append(f'<p id="never-enabled">never enabled: {_e(never)}</p>')
    p.append("</body></html>\n")
    return "".join(p)
