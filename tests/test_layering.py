"""checker/ is layered: no import cycle, no private name imported across modules.

Read with ``ast``, so imports inside functions count too (a function-local import
is still a dependency; hiding it in a function only hides the cycle).  The layers,
bottom up: errors, fingerprint and the state encoding; then model and config;
then the search core and the engines; then trace and rendering; the commands on
top.  The bottom two are pinned here; above them, any order without a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "checker"

BOTTOM = {"checker.errors", "checker.fingerprint", "checker.encoding"}
CONTRACT = {"checker.model", "checker.config"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, mods: dict[str, Path]) -> list[tuple[str, str, int]]:
    """``(target module, imported name or '', line)`` for every import of a checker
    module in ``path``, wherever it is (top level, function, class, if)."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                full = f"{target}.{alias.name}"
                if full in mods:           # from checker import bfs: the module itself
                    found.append((full, "", node.lineno))
                elif target in mods:
                    found.append((target, alias.name, node.lineno))
                elif target.split(".")[0] in ("spec", "impl"):
                    found.append((target, alias.name, node.lineno))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in mods or alias.name.split(".")[0] in ("spec", "impl"):
                    found.append((alias.name, "", node.lineno))
    return found


MODS = _modules()
EDGES = {name: _imports(name, path, MODS) for name, path in MODS.items()}


def _where(name: str, line: int) -> str:
    return f"{MODS[name].relative_to(ROOT.parent)}:{line}"


def test_no_private_name_is_imported_across_modules():
    bad = [f"{_where(m, line)} imports {target}.{what}" for m, edges in EDGES.items()
           for target, what, line in edges
           if what.startswith("_") and not what.startswith("__") and target != m]
    assert not bad, "private names imported across modules (give them a public name, lower down):\n" + "\n".join(bad)


def test_checker_never_imports_spec_or_impl():
    bad = [f"{_where(m, line)} imports {target}" for m, edges in EDGES.items()
           for target, _what, line in edges if target.split(".")[0] in ("spec", "impl")]
    assert not bad, "\n".join(bad)


def _cycle() -> list[str] | None:
    graph = {m: sorted({t for t, _w, _l in edges if t in MODS and t != m}) for m, edges in EDGES.items()}
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        colour[m] = 1
        stack.append(m)
        for t in graph[m]:
            if colour.get(t) == 1:
                return stack[stack.index(t):] + [t]
            if t not in colour:
                found = visit(t)
                if found:
                    return found
        stack.pop()
        colour[m] = 2
        return None

    for m in sorted(graph):
        if m not in colour:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycle():
    cycle = _cycle()
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("layer,allowed", [(BOTTOM, BOTTOM), (CONTRACT, BOTTOM | CONTRACT)],
                         ids=["bottom", "contract"])
def test_lower_layers_import_only_lower_ones(layer, allowed):
    bad = [f"{_where(m, line)} imports {target}" for m in sorted(layer & set(MODS))
           for target, _what, line in EDGES[m] if target in MODS and target not in allowed]
    assert not bad, "\n".join(bad)


def test_the_checks_see_function_local_imports(tmp_path):
    """The reader counts an import inside a function (what hid the old circle)."""
    mods = {"checker.a": tmp_path / "a.py", "checker.b": tmp_path / "b.py"}
    mods["checker.a"].write_text("def f():\n    from checker.b import _g\n    return _g\n")
    assert _imports("checker.a", mods["checker.a"], mods) == [("checker.b", "_g", 2)]
