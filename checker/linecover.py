"""Which lines of one package each unit of work runs, at close to full speed.

``kmc mutate`` replays, for each mutant, only the corpus units (traces) that run
one of its lines; the baseline run records those lines.  ``sys.settrace`` did it
by calling a Python function on every line of every frame, and on CPython 3.11
any trace function also switches the interpreter to its slow, unspecialised
path for all the code that runs, the model's included: the baseline took 4.4
times as long as the same corpus untraced.  Here, instead, the package's own
modules are compiled with a marker before each statement (a store into a dict,
``__kmc_hits__[k] = True``), by an import hook; nothing else is traced.

What counts as run is a superset of the lines the interpreter runs, which is
what selecting units needs (a unit that never runs a mutated line cannot tell
the mutant apart; a unit selected for nothing only costs time):

- a simple statement whose marker ran counts all its lines, those of the
  lambdas and comprehensions inside it included;
- a compound statement counts its header lines: the decorators, signature and
  defaults of a ``def`` or ``class``, the test of an ``if``/``elif``/``while``,
  the iterable of a ``for``, the items of a ``with``; a ``try`` counts its
  ``except`` clauses too and a ``match`` its cases, which are evaluated
  whether or not they match;
- a docstring, and a module's ``__future__`` imports, count when the block
  they open runs;
- the lines run while the package is imported go to the unit that is current
  then (see :meth:`LineRecorder.start`).

>>> import pathlib, sys, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp()) / "kmcdemo"
>>> d.mkdir()
>>> _ = (d / "__init__.py").write_text("'''Demo.'''\\ndef f(x):\\n    if x:\\n        return 1\\n    return (2 +\\n            3)\\n")
>>> sys.path.insert(0, str(d.parent))
>>> rec = LineRecorder(str(d))
>>> rec.install()
>>> rec.start("import")
>>> import kmcdemo
>>> rec.start("f(0)")
>>> kmcdemo.f(0)
5
>>> rec.stop()
>>> rec.uninstall()
>>> rec.units["import"], rec.units["f(0)"]
({'kmcdemo/__init__.py': [1, 2]}, {'kmcdemo/__init__.py': [3, 5, 6]})
>>> sys.path.remove(str(d.parent)); del sys.modules["kmcdemo"]
"""

from __future__ import annotations

import ast
import sys
from importlib.abc import MetaPathFinder
from importlib.machinery import PathFinder, SourceFileLoader
from typing import Any

__all__ = ["LineRecorder", "HITS"]

HITS = "__kmc_hits__"     # the module global the markers store into


class LineRecorder:
    """Records, per unit, the lines of the package in ``package_dir`` that ran.
    ``units``: ``{unit: {path relative to the package's parent: [line, ...]}}``."""

    def __init__(self, package_dir: str) -> None:
        self.prefix = package_dir.rstrip("/") + "/"
        self.root = package_dir.rstrip("/").rsplit("/", 1)[0] + "/"
        self.hits: dict[int, bool] = {}
        self.spans: list[tuple[str, tuple[tuple[int, int], ...]]] = []   # marker -> (file, line ranges)
        self.units: dict[str, dict[str, list[int]]] = {}
        self.unit: str | None = None
        self._finder = _Finder(self)

    def install(self) -> None:
        """Compile the package's modules with markers from now on (an import hook:
        modules imported already are not affected)."""
        sys.meta_path.insert(0, self._finder)

    def uninstall(self) -> None:
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)

    def start(self, unit: str) -> None:
        """Lines run from now on belong to ``unit`` (the previous one is closed)."""
        if self.unit is not None:
            self.stop()
        self.unit = unit
        self.hits.clear()

    def stop(self) -> None:
        if self.unit is None:
            return
        out: dict[str, set[int]] = {}
        spans = self.spans
        for k in self.hits:
            path, ranges = spans[k]
            lines = out.setdefault(path, set())
            for a, b in ranges:
                lines.update(range(a, b + 1))
        self.units[self.unit] = {f: sorted(v) for f, v in sorted(out.items())}
        self.unit = None
        self.hits.clear()

    # -- instrumenting ------------------------------------------------------------------

    def instrument(self, source: bytes, path: str) -> Any:
        """The code of one module, with a marker before each statement."""
        tree = ast.parse(source, path)
        rel = path[len(self.root):] if path.startswith(self.root) else path
        tree.body = self._block(tree.body, rel, top=True)
        return compile(tree, path, "exec", dont_inherit=True)

    def _block(self, body: list, rel: str, top: bool = False) -> list:
        out: list = []
        rest = list(body)
        # A docstring stays first, and __future__ imports stay before everything else:
        # one marker after them stands for their lines.
        if rest and isinstance(rest[0], ast.Expr) and isinstance(rest[0].value, ast.Constant) \
                and isinstance(rest[0].value.value, str):
            out.append(rest.pop(0))
        while top and rest and isinstance(rest[0], ast.ImportFrom) and rest[0].module == "__future__":
            out.append(rest.pop(0))
        if out:
            out.append(self._marker(out[-1], rel, tuple((x.lineno, x.end_lineno or x.lineno) for x in out)))
        for stmt in rest:
            out.append(self._marker(stmt, rel))
            self._children(stmt, rel)
            out.append(stmt)
        return out

    def _children(self, stmt: ast.stmt, rel: str) -> None:
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(stmt, field, self._block(block, rel))
        for h in getattr(stmt, "handlers", ()):
            h.body = self._block(h.body, rel)
        for case in getattr(stmt, "cases", ()):
            case.body = self._block(case.body, rel)

    def _marker(self, stmt: ast.stmt, rel: str, ranges: tuple | None = None) -> ast.stmt:
        k = len(self.spans)
        self.spans.append((rel, _ranges(stmt) if ranges is None else ranges))
        node = ast.Assign(targets=[ast.Subscript(value=ast.Name(id=HITS, ctx=ast.Load()),
                                                 slice=ast.Constant(value=k), ctx=ast.Store())],
                          value=ast.Constant(value=True))
        ast.copy_location(node, stmt)
        ast.fix_missing_locations(node)
        return node


def _ranges(stmt: ast.stmt) -> tuple[tuple[int, int], ...]:
    """The lines a statement's marker stands for (see the module docstring)."""
    first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
    body = getattr(stmt, "body", None)
    if isinstance(stmt, ast.Match):
        # No body of its own: the header is the subject, up to the first case.
        out = [(first, max(stmt.lineno, stmt.cases[0].pattern.lineno - 1))]
        for case in stmt.cases:
            out.append((case.pattern.lineno, max(case.pattern.lineno, case.body[0].lineno - 1)))
        return tuple(out)
    if not (isinstance(body, list) and body and isinstance(body[0], ast.stmt)):
        return ((first, stmt.end_lineno or stmt.lineno),)
    out = [(first, max(stmt.lineno, body[0].lineno - 1))]
    for h in getattr(stmt, "handlers", ()):
        out.append((h.lineno, max(h.lineno, h.body[0].lineno - 1)))
    return tuple(out)


class _Loader(SourceFileLoader):
    def __init__(self, fullname: str, path: str, recorder: LineRecorder) -> None:
        super().__init__(fullname, path)
        self.recorder = recorder

    def get_code(self, fullname: str) -> Any:
        # Never the cached bytecode: it has no markers.
        return self.recorder.instrument(self.get_data(self.path), self.path)

    def exec_module(self, module: Any) -> None:
        module.__dict__[HITS] = self.recorder.hits
        super().exec_module(module)


class _Finder(MetaPathFinder):
    def __init__(self, recorder: LineRecorder) -> None:
        self.recorder = recorder

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        spec = PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, SourceFileLoader) or spec.origin is None \
                or not spec.origin.startswith(self.recorder.prefix):
            return spec
        spec.loader = _Loader(fullname, spec.origin, self.recorder)
        return spec
