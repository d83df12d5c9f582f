"""The Spark engine's wire format for states (checker.spark.tasks.dumps_states):
NamedTuples pickled as ``tuple.__new__(cls, fields)``, everything else as pickle
does it; the bytes load with a plain ``pickle.loads`` (checkpoints included)."""

from __future__ import annotations

import pickle
import pickletools
from typing import NamedTuple

import pytest

pytest.importorskip("pyspark")

from checker.spark.tasks import dumps_states  # noqa: E402


class Inner(NamedTuple):
    a: int
    b: tuple


class Outer(NamedTuple):
    inner: Inner
    flag: bool
    name: str
    rest: tuple


class WithDict(Inner):
    """A subclass without __slots__: instances may carry attributes, so it keeps
    pickle's own reduction."""


class OwnReduce(NamedTuple):
    x: int

    def __reduce__(self):
        return (OwnReduce, (self.x + 0,))


def opcodes(data: bytes) -> set[str]:
    return {op.name for op, _, _ in pickletools.genops(data)}


def test_namedtuples_round_trip_with_their_classes_and_reprs():
    shared = Inner(1, (2, 3))
    states = [Outer(shared, True, "x", (shared, None, -5)), Outer(Inner(0, ()), False, "", ()), (1, (shared,))]
    data = dumps_states(states)
    back = pickle.loads(data)
    assert back == states
    assert [repr(s) for s in back] == [repr(s) for s in states]
    assert type(back[0]) is Outer and type(back[0].inner) is Inner and type(back[2][1][0]) is Inner
    assert back[0].inner is back[0].rest[0]     # shared parts stay shared (the pickler's memo)
    # No NEWOBJ: the class's Python __new__ is not called on loading (checker.spark.tasks._Reducers).
    assert "NEWOBJ" not in opcodes(data)
    assert "NEWOBJ" in opcodes(pickle.dumps(states, pickle.HIGHEST_PROTOCOL))


def test_other_classes_keep_pickles_own_reduction():
    w = WithDict(1, ())
    w.extra = 7
    back = pickle.loads(dumps_states([w, OwnReduce(4)]))
    assert type(back[0]) is WithDict and back[0] == (1, ()) and back[0].extra == 7
    assert type(back[1]) is OwnReduce and back[1] == (4,)
