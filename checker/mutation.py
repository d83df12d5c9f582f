"""Single-point mutants of Python modules, generated deterministically from the AST.

A *mutant* is the module's source with one small fault put in: a comparison
swapped, a constant off by one, ``min`` for ``max``, a condition negated, ``and``
for ``or``, a statement deleted, a return value dropped.  ``kmc mutate`` runs a
corpus (a conformance corpus, or a test suite) against each one: a corpus that
lets a mutant survive does not check the code the mutant changed.

Why not mutmut or cosmic-ray: both rewrite the files of the working tree in place
(mutmut 2) or through a session database and a worker per mutant (cosmic-ray),
their mutant identities are line numbers or database rows that move when the code
moves, and neither stops a run at the first divergence of a corpus that is not a
test suite.  What is needed here is small: a fixed list of operators, a mutant id
that survives unrelated edits (so that a checked-in list of equivalent mutants
stays valid), a text splice that changes one expression and leaves every other
byte of the file alone (so that the diff shows exactly the fault), and a seeded
sample.  About 250 lines of ``ast``.

Operators (``OPERATORS``)::

    compare     <  <->  <=,  >  <->  >=,  ==  <->  !=,  in  <->  not in,  is  <->  is not
    constant    an int constant n -> n + 1 and n -> n - 1
    minmax      min <-> max
    negate      the test of an if / while / conditional expression negated; not x -> x
    boolop      and <-> or
    arith       + <-> -
    bool        True <-> False
    delete      an expression statement, assignment or raise replaced by pass
    return      return <expr> -> return None

A mutant's id (``m-`` and 8 hex digits) is a hash of the module path, the
enclosing function, the operator, the original and mutated code, and the
occurrence number of that same change within the function: it stays the same
when lines are added elsewhere.

>>> src = "def f(x):\\n    if x < 2:\\n        return min(x, 1)\\n    return 0\\n"
>>> ms = mutants_of(src, "m.py")
>>> sorted({m.operator for m in ms})
['compare', 'constant', 'minmax', 'negate', 'return']
>>> m = next(m for m in ms if m.operator == "compare")
>>> m.original, m.mutated, m.line, m.scope
('x < 2', 'x <= 2', 2, 'f')
>>> print(m.apply(src).splitlines()[1])
    if (x <= 2):
>>> m.id == next(m for m in mutants_of("import os\\n\\n" + src, "m.py") if m.operator == "compare").id
True
"""

from __future__ import annotations

import ast
import difflib
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

OPERATORS = ("compare", "constant", "minmax", "negate", "boolop", "arith", "bool", "delete", "return")

_SWAP_CMP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
             ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


@dataclass(frozen=True)
class Mutant:
    """One single-point change of one module: replace the source text between
    (line, col) and (end_line, end_col) with ``replacement``."""

    id: str
    module: str           # path relative to the project root, with '/'
    operator: str
    scope: str            # the enclosing function or class ('' at module level)
    line: int
    col: int
    end_line: int
    end_col: int
    original: str         # the code replaced, as written
    mutated: str          # what replaces it
    replacement: str      # the text spliced in (``mutated``, parenthesised where it must be)

    @property
    def where(self) -> str:
        return f"{self.module}:{self.line}" + (f" ({self.scope})" if self.scope else "")

    @property
    def label(self) -> str:
        return f"{self.id} {self.where} {self.operator}: {_one_line(self.original)} -> {_one_line(self.mutated)}"

    def apply(self, source: str) -> str:
        lines = source.splitlines(keepends=True)
        start = _offset(lines, self.line, self.col)
        end = _offset(lines, self.end_line, self.end_col)
        return source[:start] + self.replacement + source[end:]

    def diff(self, source: str) -> str:
        """The unified diff of the mutant against ``source`` (3 lines of context)."""
        new = self.apply(source)
        return "".join(difflib.unified_diff(source.splitlines(keepends=True), new.splitlines(keepends=True),
                                            f"a/{self.module}", f"b/{self.module}", n=1))


def _one_line(text: str) -> str:
    t = " ".join(text.split())
    return t if len(t) <= 70 else t[:67] + "..."


def _offset(lines: list[str], line: int, col: int) -> int:
    """Character offset of (1-based line, UTF-8 byte column) in the joined source."""
    before = sum(len(x) for x in lines[:line - 1])
    text = lines[line - 1] if line - 1 < len(lines) else ""
    return before + len(text.encode("utf-8")[:col].decode("utf-8", "replace"))


class _Collector(ast.NodeVisitor):
    """Walks a module in source order and records each mutation point."""

    def __init__(self, source: str, module: str) -> None:
        self.source, self.module = source, module
        self.lines = source.splitlines(keepends=True)
        self.scope: list[str] = []
        self.out: list[tuple[str, ast.AST, str, str]] = []   # (operator, node, mutated text, replacement)
        self.seen: dict[tuple, int] = {}
        self.found: list[Mutant] = []

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or ast.unparse(node)

    def add(self, op: str, node: ast.AST, mutated: str, paren: bool = True) -> None:
        original = self.segment(node)
        if mutated == original:
            return
        scope = ".".join(self.scope)
        key = (scope, op, original, mutated)
        k = self.seen.get(key, 0)
        self.seen[key] = k + 1
        h = hashlib.sha256(f"{self.module}\0{scope}\0{op}\0{original}\0{mutated}\0{k}".encode()).hexdigest()[:8]
        self.found.append(Mutant(f"m-{h}", self.module, op, scope, node.lineno, node.col_offset,
                                 node.end_lineno, node.end_col_offset, original, mutated,
                                 f"({mutated})" if paren else mutated))

    # -- scopes and what is never mutated
    def _scoped(self, node: ast.AST, name: str) -> None:
        self.scope.append(name)
        for d in getattr(node, "decorator_list", []):
            self.visit(d)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for default in [*node.args.defaults, *node.args.kw_defaults]:
                if default is not None:
                    self.visit(default)
        for s in _body_without_docstring(node.body):
            self.visit(s)
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scoped(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node, node.name)

    def visit_Module(self, node: ast.Module) -> None:
        for s in _body_without_docstring(node.body):
            if isinstance(s, (ast.Import, ast.ImportFrom)) or _is_all(s) or _is_type_checking(s):
                continue
            self.visit(s)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:          # the annotation is never evaluated (PEP 563)
            self.visit(node.value)
            self._delete(node)

    def visit_arg(self, node: ast.arg) -> None:
        pass                                # annotations

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        pass                                # message text

    # -- statements
    def _delete(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return
        self.add("delete", node, "pass", paren=False)

    def visit_Expr(self, node: ast.Expr) -> None:
        self._delete(node)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._delete(node)
        self.visit(node.value)              # never the targets

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._delete(node)
        if isinstance(node.op, (ast.Add, ast.Sub)):
            op = "-=" if isinstance(node.op, ast.Add) else "+="
            self.add("arith", node, f"{ast.unparse(node.target)} {op} {self.segment(node.value)}", paren=False)
        self.visit(node.value)

    def visit_Raise(self, node: ast.Raise) -> None:
        self._delete(node)                  # the message is not mutated

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            self.add("return", node, "return None", paren=False)
            self.visit(node.value)

    def visit_If(self, node: ast.If) -> None:
        self._negate(node.test)
        self.generic_visit(node)

    visit_While = visit_If

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._negate(node.test)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        pass                                # a check, not behaviour

    def _negate(self, test: ast.expr) -> None:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return                          # 'not x' -> 'x' is the UnaryOp rule's
        self.add("negate", test, f"not ({self.segment(test)})")

    # -- expressions
    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self.add("negate", node, self.segment(node.operand))
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            v = node.operand.value
            if isinstance(v, int) and not isinstance(v, bool):
                self.add("constant", node, str(-v + 1))
                self.add("constant", node, str(-v - 1))
                return
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for i, op in enumerate(node.ops):
            swap = _SWAP_CMP.get(type(op))
            if swap is not None:
                new = ast.Compare(node.left, [swap() if j == i else o for j, o in enumerate(node.ops)],
                                  node.comparators)
                self.add("compare", node, self._unparse_like(node, new))
        self.generic_visit(node)

    def _unparse_like(self, node: ast.AST, new: ast.AST) -> str:
        """``new`` written with the operands spelled as in the source."""
        if isinstance(node, ast.Compare):
            parts = [self.segment(node.left)]
            for op, c in zip(new.ops, node.comparators):
                parts += [_CMP_TEXT[type(op)], self.segment(c)]
            return " ".join(parts)
        return ast.unparse(new)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        other = " or " if isinstance(node.op, ast.And) else " and "
        self.add("boolop", node, other.join(_paren(self.segment(v)) for v in node.values))
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, (ast.Add, ast.Sub)) and not _is_text(node):
            sign = " - " if isinstance(node.op, ast.Add) else " + "
            self.add("arith", node, _paren(self.segment(node.left)) + sign + _paren(self.segment(node.right)))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            self.add("minmax", node.func, "max" if node.func.id == "min" else "min", paren=False)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        v = node.value
        if isinstance(v, bool):
            self.add("bool", node, str(not v), paren=False)
        elif isinstance(v, int):
            self.add("constant", node, str(v + 1), paren=False)
            self.add("constant", node, str(v - 1))

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self.visit(node.value)
        if not (isinstance(node.value, ast.Name) and node.value.id in _TYPE_NAMES):
            self.visit(node.slice)          # a type expression is not behaviour


_TYPE_NAMES = {"dict", "list", "tuple", "set", "frozenset", "type", "Mapping", "Sequence", "Iterable", "Callable",
               "Any", "Optional", "Union", "NamedTuple"}
_CMP_TEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.In: "in",
             ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}


def _paren(text: str) -> str:
    return text if text.isidentifier() or text.replace(".", "").isalnum() else f"({text})"


def _is_text(node: ast.BinOp) -> bool:
    return any(isinstance(x, (ast.Constant, ast.JoinedStr)) and isinstance(getattr(x, "value", ""), str)
               for x in (node.left, node.right))


def _body_without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def _is_all(s: ast.stmt) -> bool:
    return isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in s.targets)


def _is_type_checking(s: ast.stmt) -> bool:
    return isinstance(s, ast.If) and isinstance(s.test, ast.Name) and s.test.id == "TYPE_CHECKING"


def mutants_of(source: str, module: str, operators: Iterable[str] = OPERATORS, *,
               validate: bool = True) -> list[Mutant]:
    """Every mutant of one module's source, in source order (deterministic).  With
    ``validate`` each mutant's source is parsed and one the grammar does not allow is
    left out; without it (cheaper on thousands of mutants), use :func:`valid` on the
    ones you keep."""
    c = _Collector(source, module)
    c.visit(ast.parse(source))
    wanted = set(operators)
    out = [m for m in c.found if m.operator in wanted and (not validate or valid(m, source))]
    return sorted(out, key=lambda m: (m.line, m.col, m.end_line, m.end_col, OPERATORS.index(m.operator), m.id))


def valid(m: Mutant, source: str) -> bool:
    """Does the mutant's source parse?  (A parenthesised splice is valid almost
    everywhere an expression is.)"""
    try:
        ast.parse(m.apply(source))
    except SyntaxError:
        return False
    return True


def collect(root: Path, modules: Sequence[str], operators: Iterable[str] = OPERATORS, *,
            validate: bool = True) -> list[Mutant]:
    """Every mutant of ``modules`` (paths relative to ``root``), module by module."""
    ops = tuple(operators)
    out: list[Mutant] = []
    for mod in modules:
        out.extend(mutants_of((root / mod).read_text(encoding="utf-8"), mod, ops, validate=validate))
    return out


def sample(mutants: Sequence[Mutant], size: int | None, seed: int) -> list[Mutant]:
    """A seeded sample of ``size`` mutants (all of them when ``size`` is None or
    larger), in the order they were given.  A mutant's place in the draw is a hash of
    the seed and its id, so the sample of unchanged code stays the same when other code
    changes (a CI gate keeps measuring the same mutants), and a smaller sample of one
    seed is part of every larger one.

    >>> ms = mutants_of("x = 1\\ny = 2\\nz = x + y\\n", "m.py")
    >>> [m.id for m in sample(ms, 2, seed=1)] == [m.id for m in sample(ms, 2, seed=1)]
    True
    >>> set(sample(ms, 2, seed=1)) <= set(sample(ms, 4, seed=1))
    True
    """
    if size is None or size >= len(mutants):
        return list(mutants)
    rank = sorted(range(len(mutants)),
                  key=lambda i: hashlib.sha256(f"{seed}:{mutants[i].id}".encode()).hexdigest())
    picked = sorted(rank[:size])
    return [mutants[i] for i in picked]


def load_equivalents(path: Path) -> dict[str, str]:
    """The equivalent mutants listed in ``path``: ``id -> reason``.  One mutant per
    line, ``m-xxxxxxxx <where and what, for the reader> | <reason>``; ``#`` starts a
    comment line.  ValueError names the first bad line."""
    out: dict[str, str] = {}
    if not path.exists():
        return out
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        ident = line.split()[0]
        reason = line.rpartition(" | ")[2].strip() if " | " in line else ""
        if not (ident.startswith("m-") and len(ident) == 10) or not reason:
            raise ValueError(f"{path}:{n}: expected 'm-xxxxxxxx <what> | <reason>', got {raw.strip()[:60]!r}")
        out[ident] = reason
    return out


# ------------------------------------------------------------------- what a family declares

@dataclass(frozen=True)
class ConformRun:
    """One run of a conformance corpus: the covering set of ``preset``'s state graph
    (with ``overrides``), optionally probed, plus ``walks`` random walks of at most
    ``depth`` steps; or, with ``known``, every saved trace of the family in that
    directory (relative to the project root), each with its own configuration.  With
    ``settle``, the harness leaves the implementation alone after each trace
    (:class:`checker.conform.Harness`)."""

    label: str
    preset: str | None = None
    overrides: tuple = ()            # ((key, value), ...)
    probe: bool = False
    walks: int = 0
    depth: int = 50
    known: str | None = None
    cover: bool = True               # False: the walks alone (a graph too large to cover)
    settle: bool = False             # each trace's end: the implementation left alone must settle as the model can


@dataclass(frozen=True)
class ConformCorpus:
    """The conformance corpus a mutant of the implementation must pass, cheapest run
    first (a run stops at the first divergence, and so does the corpus)."""

    runs: tuple


@dataclass(frozen=True)
class CommandCorpus:
    """A command run in (a copy of) the project root against each mutant: exit 0 means
    the mutant survived, 1 or 2 that it was killed (pytest: a test failed, or
    collection failed).  ``{python}`` stands for this interpreter."""

    argv: tuple


@dataclass(frozen=True)
class MutationTarget:
    """What ``kmc mutate TARGET`` mutates and runs: the modules of ``package`` (a
    top-level package of the project) except ``exclude``, against ``corpus``.
    ``equivalents`` is the checked-in list of equivalent mutants (a path relative to
    the project root); ``gate`` is the CI gate (:class:`MutationGate`)."""

    package: str
    corpus: ConformCorpus | CommandCorpus
    doc: str = ""
    exclude: tuple = ()
    equivalents: str | None = None
    gate: MutationGate | None = None


@dataclass(frozen=True)
class MutationGate:
    """A CI gate: a fixed seeded sample of ``sample`` mutants whose score may not fall
    below ``min_score`` percent.  ``corpus`` (default: the target's) is what the gate
    runs; a gate that must stay cheap names the target's cheapest runs only, so that
    its traced baseline and each mutant cost seconds, not minutes."""

    sample: int
    seed: int
    min_score: float
    corpus: ConformCorpus | CommandCorpus | None = None
