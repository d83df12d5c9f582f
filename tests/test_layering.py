"""checker/, spec/ and impl/ are layered: no import cycle, no private name imported
across modules (the developers' guide's rule for every package).

Read with ``ast``, so imports inside functions count too (a function-local import
is still a dependency; hiding it in a function only hides the cycle).  The layers,
bottom up: errors, and fingerprint with the state encoding; then model and config;
then the search core and the engines; then trace and rendering; the commands on
top.  The bottom two are pinned here; above them, any order without a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parent.parent
PACKAGES = ("checker", "spec", "impl")

BOTTOM = {"checker.errors", "checker.fingerprint", "checker.inputfile"}   # the state encoding lives in fingerprint; inputfile reads what a user names
CONTRACT = {"checker.model", "checker.config"}


def _modules(package: str) -> dict[str, Path]:
    out = {}
    for path in sorted((TOP / package).rglob("*.py")):
        rel = path.relative_to(TOP).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, mods: dict[str, Path]) -> list[tuple[str, str, int]]:
    """``(target module, imported name or '', line)`` for every import of a module of
    ``mods`` in ``path``, wherever it is (top level, function, class, if), and every
    import of spec or impl (which checker must never make)."""
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


PACKAGE_MODS = {pkg: _modules(pkg) for pkg in PACKAGES}
PACKAGE_EDGES = {pkg: {name: _imports(name, path, mods) for name, path in mods.items()}
                 for pkg, mods in PACKAGE_MODS.items()}
MODS = PACKAGE_MODS["checker"]
EDGES = PACKAGE_EDGES["checker"]
ALL_MODS = {name: path for mods in PACKAGE_MODS.values() for name, path in mods.items()}


def _where(name: str, line: int) -> str:
    return f"{ALL_MODS[name].relative_to(TOP)}:{line}"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_private_name_is_imported_across_modules(package):
    bad = [f"{_where(m, line)} imports {target}.{what}" for m, edges in PACKAGE_EDGES[package].items()
           for target, what, line in edges
           if what.startswith("_") and not what.startswith("__") and target != m]
    assert not bad, "private names imported across modules (give them a public name, lower down):\n" + "\n".join(bad)


def test_checker_never_imports_spec_or_impl():
    bad = [f"{_where(m, line)} imports {target}" for m, edges in EDGES.items()
           for target, _what, line in edges if target.split(".")[0] in ("spec", "impl")]
    assert not bad, "\n".join(bad)


def _cycle(package: str) -> list[str] | None:
    mods, edges_of = PACKAGE_MODS[package], PACKAGE_EDGES[package]
    graph = {m: sorted({t for t, _w, _l in edges if t in mods and t != m}) for m, edges in edges_of.items()}
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


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle(package):
    cycle = _cycle(package)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("layer,allowed", [(BOTTOM, BOTTOM), (CONTRACT, BOTTOM | CONTRACT)],
                         ids=["bottom", "contract"])
def test_lower_layers_import_only_lower_ones(layer, allowed):
    assert layer <= set(MODS), f"a pinned layer names no module: {sorted(layer - set(MODS))}"
    bad = [f"{_where(m, line)} imports {target}" for m in sorted(layer)
           for target, _what, line in EDGES[m] if target in MODS and target not in allowed]
    assert not bad, "\n".join(bad)


def test_the_checks_see_function_local_imports(tmp_path):
    """The reader counts an import inside a function (what hid the old circle)."""
    mods = {"checker.a": tmp_path / "a.py", "checker.b": tmp_path / "b.py"}
    mods["checker.a"].write_text("def f():\n    from checker.b import _g\n    return _g\n")
    assert _imports("checker.a", mods["checker.a"], mods) == [("checker.b", "_g", 2)]


def test_impl_never_imports_spec():
    """impl/ and spec/ share only the vocabulary of actions (the developers' guide)."""
    bad = [f"{_where(m, line)} imports {target}" for m, edges in PACKAGE_EDGES["impl"].items()
           for target, _what, line in edges if target.split(".")[0] == "spec"]
    assert not bad, "\n".join(bad)


def test_tests_import_no_private_name_of_the_packages():
    tests = {f"tests.{p.stem}": p for p in sorted((TOP / "tests").glob("*.py"))}
    bad = [f"{p.relative_to(TOP)}:{line} imports {target}.{what}" for name, p in tests.items()
           for target, what, line in _imports(name, p, ALL_MODS)
           if what.startswith("_") and not what.startswith("__")]
    assert not bad, "tests import private names (test the public API, or make the name public):\n" + "\n".join(bad)
