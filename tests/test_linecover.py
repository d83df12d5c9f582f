"""checker.linecover: the lines a unit runs, recorded by markers compiled into the
package instead of ``sys.settrace``.  What ``kmc mutate`` needs of it: every line
the interpreter runs during a unit is in that unit's record (a superset is sound
for choosing the units a mutant replays), and the markers change nothing else:
results, exceptions and their line numbers."""

from __future__ import annotations

import sys
import textwrap
import traceback

import pytest

from checker.linecover import LineRecorder

SOURCE = textwrap.dedent('''\
    """A module with one of each construct."""
    from __future__ import annotations

    import functools

    LIMIT = (3 +
             4)


    def deco(f):
        @functools.wraps(f)
        def inner(*a, **k):
            return f(*a, **k)
        return inner


    class Box:
        """A docstring."""
        size = 2

        def __init__(self, n=LIMIT):
            self.n = n

        @property
        def double(self):
            return self.n * self.size


    @deco
    def branches(x, items=()):
        total = 0
        if x > 5:
            total += 1
        elif (x > 2 and
              x < 4):
            total += 2
        else:
            total -= 1
        for i in items:
            if i % 2:
                continue
            total += i
        else:
            total += 100
        n = 0
        while n < x:
            n += 1
        try:
            total += {1: 1}[x]
        except (KeyError,
                IndexError) as e:
            total -= len(str(e))
        except ValueError:
            total = -1
        finally:
            total *= 1
        with open(__file__) as fh:
            total += len(fh.readline()) > 0
        squares = [i * i for i in range(x)
                   if i]
        pick = (lambda v:
                v + 1)
        total += pick(sum(squares))
        match x:
            case 0:
                total += 7
            case int() if x > 1:
                total += 8
            case _:
                pass
        return total + Box(x).double


    def raises(x):
        if x:
            raise ValueError(f"bad {x}")
        return x
''')

CALLS = [("branches", (0,)), ("branches", (1, (1, 2, 3))), ("branches", (3,)), ("branches", (7, (4,))),
         ("raises", (0,))]


def _package(tmp_path, name):
    pkg = tmp_path / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(SOURCE)
    return pkg


def _settrace_lines(mod, fn, args):
    """The reference: the line events of the module's frames under sys.settrace."""
    seen = set()
    path = mod.__file__

    def local(frame, event, arg):
        if event == "line":
            seen.add(frame.f_lineno)
        return local

    def glob(frame, event, arg):
        return local if frame.f_code.co_filename == path else None

    sys.settrace(glob)
    try:
        getattr(mod, fn)(*args)
    finally:
        sys.settrace(None)
    return seen


@pytest.fixture
def both(tmp_path, monkeypatch):
    plain_pkg = _package(tmp_path / "plain", "lcplain")
    marked_pkg = _package(tmp_path / "marked", "lcmarked")
    monkeypatch.syspath_prepend(str(plain_pkg.parent))
    monkeypatch.syspath_prepend(str(marked_pkg.parent))
    rec = LineRecorder(str(marked_pkg))
    rec.install()
    try:
        rec.start("import")
        import lcmarked.mod as marked
        import lcplain.mod as plain
        rec.stop()
        yield rec, plain, marked
    finally:
        rec.uninstall()
        for name in ("lcplain", "lcplain.mod", "lcmarked", "lcmarked.mod"):
            sys.modules.pop(name, None)


def test_every_line_the_interpreter_runs_is_recorded(both):
    rec, plain, marked = both
    for k, (fn, args) in enumerate(CALLS):
        rec.start(str(k))
        try:
            getattr(marked, fn)(*args)
        finally:
            rec.stop()
        got = set(rec.units[str(k)].get("lcmarked/mod.py", []))
        want = _settrace_lines(plain, fn, args)
        assert want <= got, (fn, args, sorted(want - got))
        assert got, (fn, args)
    # What runs at import: the module's own statements, a def's header, a class body,
    # and the decorator deco (11, 12, 14), which runs when it decorates branches.
    imported = set(rec.units["import"]["lcmarked/mod.py"])
    assert {1, 2, 4, 6, 7, 10, 11, 12, 14, 17, 18, 19, 21, 24, 25, 29, 30} <= imported
    assert not imported & {13, 22, 26, 31}          # these function bodies did not run


def test_a_branch_not_taken_is_not_recorded(both):
    rec, _plain, marked = both
    rec.start("x=0")
    marked.branches(0)
    rec.stop()
    lines = set(rec.units["x=0"]["lcmarked/mod.py"])
    body = SOURCE.splitlines()
    assert body[32].strip() == "total += 1" and 33 not in lines      # if x > 5: not taken
    assert body[53].strip() == "total = -1" and 54 not in lines      # except ValueError: not raised
    assert {50, 51, 52} <= lines                                      # except (KeyError,\n IndexError): taken
    assert {64, 65, 66, 67, 69} <= lines and 68 not in lines          # match: case int() if x > 1: not taken


def test_markers_change_no_result_and_no_line_number(both):
    _rec, plain, marked = both
    for fn, args in CALLS:
        assert getattr(marked, fn)(*args) == getattr(plain, fn)(*args)
    for mod in (plain, marked):
        with pytest.raises(ValueError) as info:
            mod.raises(3)
        assert traceback.extract_tb(info.tb)[-1].lineno == SOURCE.splitlines().index('        raise ValueError(f"bad {x}")') + 1
    assert marked.Box.__doc__ == "A docstring." and marked.__doc__ == plain.__doc__
