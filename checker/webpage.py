"""The explorer's front end, shipped as package data (``checker/web/``), and the one
function that inlines it into a self-contained HTML file.

The front end is three small files with no build step: ``explorer.html``, ``.css`` and
``.js``.  ``kmc explore`` serves them as they are; ``kmc replay --html`` and the run
report inline them, with the data as JSON, so the file opens from disk with no server
and no network.  JSON goes into a ``<script>`` element with ``<`` escaped, so no text
in a state (a broker named ``</script>``...) can end the element early.

    >>> "</script>" in embed_json({"x": "</script>"})
    False
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

ASSETS = ("explorer.html", "explorer.css", "explorer.js")


def asset(name: str) -> str:
    """The text of one front-end file."""
    if name not in ASSETS:
        raise KeyError(name)
    return resources.files("checker").joinpath("web", name).read_text(encoding="utf-8")


def embed_json(data: Any) -> str:
    """``data`` as JSON that is safe inside a ``<script>`` element."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _replace(page: str, marker: str, text: str) -> str:
    pattern = re.compile(f"<!--KMC:{marker}-->.*?<!--/KMC:{marker}-->", re.S)
    if not pattern.search(page):
        raise ValueError(f"explorer.html has no KMC:{marker} marker")
    return pattern.sub(lambda _m: text, page, count=1)


def served_page(start: str) -> str:
    """The explorer's page as ``kmc explore`` serves it; ``start`` is the path shown first."""
    return _replace(asset("explorer.html"), "DATA", f"<script>window.KMC_START = {embed_json(start)};</script>")


def static_page(bundle: Any, title: str = "") -> str:
    """One self-contained HTML file that shows ``bundle`` (``Explorer.static_bundle``)."""
    page = asset("explorer.html")
    page = _replace(page, "STYLE", f"<style>\n{asset('explorer.css')}</style>")
    page = _replace(page, "DATA", f"<script>window.KMC_STATIC = {embed_json(bundle)};</script>")
    page = _replace(page, "SCRIPT", f"<script>\n{asset('explorer.js')}</script>")
    if title:
        page = page.replace("<title>kmc explore</title>", f"<title>{_escape(title)}</title>", 1)
    return page


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
