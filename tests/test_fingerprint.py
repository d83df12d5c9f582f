"""checker.fingerprint: stable digests, canonical formatting, state validation."""

from __future__ import annotations

import hashlib
from typing import NamedTuple

import pytest

from checker.errors import ModelError
from checker.fingerprint import fingerprint, format_fingerprint, parse_fingerprint, validate_state
from checker.model import Model


class Plain(Model):
    pass


class Upper(Model):
    def encode(self, state):
        return repr(state).upper().encode()


class Inner(NamedTuple):
    leader: int
    isr: tuple


class Outer(NamedTuple):
    name: str
    flag: bool
    parts: tuple
    extra: object = None


def test_fingerprint_is_blake2b_of_repr_signed_little_endian():
    digest = hashlib.blake2b(b"(1, 'a', None)", digest_size=8).digest()
    assert fingerprint(Plain(), (1, "a", None)) == int.from_bytes(digest, "little", signed=True)
    # Pinned values: changing the formula would silently invalidate every stored trace.
    assert fingerprint(Plain(), 0) == 8493733112532773764
    assert format_fingerprint(fingerprint(Plain(), (0, 0))) == "0x8dab5472e9937925"


def test_fingerprint_uses_model_encode():
    assert fingerprint(Upper(), ("a",)) == fingerprint(Plain(), ("A",))
    assert fingerprint(Upper(), ("a",)) != fingerprint(Plain(), ("a",))


def test_fingerprint_is_a_signed_64_bit_int_and_distinguishes_states():
    fps = {fingerprint(Plain(), (i, j)) for i in range(50) for j in range(50)}
    assert len(fps) == 2500
    assert all(-(1 << 63) <= f < (1 << 63) for f in fps)
    assert any(f < 0 for f in fps) and any(f > 0 for f in fps)


@pytest.mark.parametrize("fp", [0, 1, -1, 42, (1 << 63) - 1, -(1 << 63), -123456789012345])
def test_format_parse_round_trip(fp):
    text = format_fingerprint(fp)
    assert text.startswith("0x") and len(text) == 18
    assert text == text.lower()
    assert parse_fingerprint(text) == fp
    assert parse_fingerprint(text.upper().replace("0X", "0x")) == fp


def test_format_known_values():
    assert format_fingerprint(0) == "0x0000000000000000"
    assert format_fingerprint(-1) == "0xffffffffffffffff"
    assert format_fingerprint(255) == "0x00000000000000ff"


@pytest.mark.parametrize("bad", ["", "0x", "xyz", "0x" + "1" * 17, "0xg000000000000000", "-0x12", "1.5"])
def test_parse_rejects_junk(bad):
    with pytest.raises(ValueError):
        parse_fingerprint(bad)


def test_validate_accepts_plain_values():
    validate_state(Outer("t", True, (Inner(1, (1, 2)), Inner(-1, ())), None))
    validate_state((((), 0), "x", False, None))
    validate_state(7)


@pytest.mark.parametrize("bad, kind, path", [
    ({1, 2}, "set", "state"),
    ((0, frozenset({1})), "frozenset", "state[1]"),
    ((0, (1, {"a": 1})), "dict", "state[1][1]"),
    ((0, [1, 2]), "list", "state[1]"),
    ((0, 1.5), "float", "state[1]"),
    (Outer("t", False, (Inner(1, (0, 2)), Inner(2, [2]))), "list", "state.parts[1].isr"),
    (Outer("t", False, (), {3}), "set", "state.extra"),
])
def test_validate_rejects_with_type_and_path(bad, kind, path):
    with pytest.raises(ModelError) as e:
        validate_state(bad)
    msg = str(e.value)
    assert msg.startswith(f"{path} is a {kind} ")
    assert "use sorted tuples" in msg


def test_validate_reports_the_first_offender_in_order():
    with pytest.raises(ModelError, match=r"^state\[1\] is a list"):
        validate_state((0, [1], {2}))


# -- placement (Model.partition_key): where the Spark engine keeps a state -----------------

class Keyed(Model):
    def partition_key(self, state):
        return state[0]


PLACE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from checker.fingerprint import placement_fn
from tests.test_fingerprint import Keyed
place = placement_fn(Keyed())
print(json.dumps([place((k, i)) for i in range(3) for k in ("zk", "brokers", ("a", 1), 7, None)]))
"""


def test_placement_is_the_same_whatever_the_hash_seed():
    """Placement must agree between the driver and every executor process: it hashes
    repr(key) with blake2b, never hash(), whose str hashes PYTHONHASHSEED changes."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    runs = [json.loads(subprocess.run([sys.executable, "-c", PLACE, root], capture_output=True, text=True, check=True,
                                      env=dict(os.environ, PYTHONHASHSEED=seed)).stdout) for seed in ("1", "2")]
    assert runs[0] == runs[1]
    assert len(set(runs[0])) == 5 and all(0 <= h < 1 << 63 for h in runs[0])
    h = int.from_bytes(hashlib.blake2b(b"'zk'", digest_size=8).digest(), "little") >> 1
    assert runs[0][0] == h


def test_placement_depends_on_the_key_only_and_is_optional():
    from checker.fingerprint import placement_fn

    assert placement_fn(Plain()) is None      # no hook: states are placed by fingerprint
    place = placement_fn(Keyed())
    key = ("zk", (1, 2))
    assert place((key, 1)) == place((key, 2)) == place((("zk", (1, 2)), 3))   # by value, cached by identity
    assert place((("zk", (1, 3)), 1)) != place((key, 1))


class CountedKey(tuple):
    """A key whose repr counts its calls (still a plain tuple's repr)."""

    calls = 0

    def __repr__(self) -> str:
        CountedKey.calls += 1
        return tuple.__repr__(self)


class PromisedKeyed(Keyed):
    equal_states_encode_equally = True


@pytest.mark.parametrize("model, reprs", [(Keyed(), 3), (PromisedKeyed(), 1)])
def test_placement_remembers_equal_keys_by_value_when_the_model_promises_it(model, reprs):
    """A changed key is a new object each time; a model whose equal states (hence
    equal keys) encode equally has the hash remembered by the key's value, so three
    equal keys cost one repr, and the placement is the one repr gives."""
    from checker.fingerprint import placement_fn

    place = placement_fn(model)
    CountedKey.calls = 0
    got = {place((CountedKey(("zk", (1, i - i))), i)) for i in range(3)}   # three equal, distinct keys
    assert CountedKey.calls == reprs
    assert got == {int.from_bytes(hashlib.blake2b(b"('zk', (1, 0))", digest_size=8).digest(), "little") >> 1}
    assert place((("zk", [1]), 0)) == place((("zk", [1]), 1))   # unhashable: by repr alone, no error


def test_a_raising_partition_key_names_the_hook():
    from checker.fingerprint import placement_fn

    with pytest.raises(ModelError, match=r"^model error: partition_key\(state\) raised IndexError: .*; fix the model"):
        placement_fn(Keyed())(())


# -- state_repr_fn: repr of a state, remembered by part ------------------------------------

class Part(NamedTuple):          # collections' own namedtuple repr: Part(a=1, b=(2,))
    a: int
    b: tuple


class Packed(NamedTuple):        # prints as a tuple, as the Kafka model's state classes do
    x: int
    y: tuple


Packed.__repr__ = tuple.__repr__   # type: ignore[method-assign]


class Whole(NamedTuple):
    head: Part
    parts: tuple
    packed: Packed
    one: tuple
    none: object
    word: str


class Promised(Model):
    equal_states_encode_equally = True


def _wholes():
    for i in range(4):
        for j in range(3):
            yield Whole(Part(i % 2, (j,)), (Part(j, ()), Packed(i, (True, None)), 5, "s", (), (i,)),
                        Packed(-i, ((j, "q"),)), (Part(1, (j % 2,)),), None if j else (i,), "w'\"")
    yield Packed(1, (2, 3))
    yield (Part(1, ()),)
    yield (Part(1, ()), ((1,),))
    yield ()
    yield 7
    yield "text"


def test_state_repr_is_repr_and_remembers_parts_by_position():
    """The fingerprint hashes repr(state): the cheaper function must give the very
    same string, for namedtuple and tuple-printing classes, plain tuple parts (of
    one element too), scalars, and states that are not tuples at all; the second
    time round, every part comes from the memo, which is kept by position and
    per class of state: a part of one class never prints as another's)."""
    from checker.fingerprint import state_repr_fn

    rep = state_repr_fn(Promised())
    for s in list(_wholes()) * 2:
        assert rep(s) == repr(s)
    at = rep.memos[(Whole, 6)]          # remembered per class of state and position
    assert at[0] == {Part(i, (j,)): repr(Part(i, (j,))) for i in range(2) for j in range(3)}
    assert at[(1, 1)] == {Packed(i, (True, None)): repr((i, (True, None))) for i in range(4)}
    assert rep.memos[(tuple, 1)][0] == {Part(1, ()): "Part(a=1, b=())"}


def test_state_repr_is_plain_repr_without_the_promise_or_with_a_custom_repr():
    from checker.fingerprint import state_repr_fn

    assert state_repr_fn(Plain()) is repr           # no promise: equal parts may print differently
    assert state_repr_fn(Upper()) is repr           # its own encode
    rep = state_repr_fn(Promised())

    class Custom(NamedTuple):
        a: int

        def __repr__(self) -> str:
            return "custom"

    assert rep(Custom(1)) == "custom" and rep((Custom(1), 2)) == repr((Custom(1), 2))


def test_state_repr_forgets_a_full_memo_and_stays_exact(monkeypatch):
    import checker.fingerprint as fpmod

    monkeypatch.setattr(fpmod, "MEMO_LIMIT", 3)
    rep = fpmod.state_repr_fn(Promised())
    for i in range(20):
        s = (Part(i, ()), (Part(i, (i,)), Part(0, ())))
        assert rep(s) == repr(s)
    assert all(len(m) <= 3 for m in rep.memos[(tuple, 2)].values())


def test_state_canon_is_repr_and_an_equal_copy_that_shares_equal_parts():
    """The Spark expand tasks fingerprint a successor with ``canon`` and ship its
    copy: the string must be repr, the copy equal, of the same class and printing
    alike; equal parts met at one position become one object, so that a chunk of
    states pickles each value once and loads back equal."""
    import pickle

    from checker.fingerprint import state_canon_fn

    canon = state_canon_fn(Promised())
    firsts: dict = {}
    for s in list(_wholes()) * 2:
        text, c = canon(s)
        assert text == repr(s) == repr(c) and c == s and type(c) is type(s)
        if isinstance(s, Whole):
            # equal parts of distinct states (heads repeat with i % 2) are one object;
            # a plain tuple part is a new tuple of the shared elements
            assert firsts.setdefault(("head", s.head), c.head) is c.head
            assert firsts.setdefault(("one", s.one[0]), c.one[0]) is c.one[0]
            assert firsts.setdefault(("parts", s.parts[1]), c.parts[1]) is c.parts[1]
    fresh = [Whole(Part(1, (2,)), (Part(2, ()), Packed(3, (True, None))), Packed(-3, ((2, "q"),)), (), None, "w")
             for _ in range(50)]
    copies = [canon(s)[1] for s in fresh]
    assert copies == fresh and len(pickle.dumps(copies)) < len(pickle.dumps(fresh)) / 2
    assert pickle.loads(pickle.dumps(copies)) == fresh


def test_state_canon_is_none_without_the_promise_and_leaves_loose_classes_alone():
    from checker.fingerprint import state_canon_fn

    assert state_canon_fn(Plain()) is None and state_canon_fn(Upper()) is None
    canon = state_canon_fn(Promised())

    class Loose(Part):          # a NamedTuple's subclass without __slots__: may carry attributes
        pass

    s = Loose(1, (Part(2, ()),))
    s.note = "kept"
    text, c = canon(s)
    assert text == repr(s) and c is s

    class Slotted(Loose):       # empty __slots__ below a class without: instances still have a __dict__
        __slots__ = ()

    s = Slotted(1, (Part(2, ()),))
    s.note = "kept"
    text, c = canon(s)
    assert text == repr(s) and c is s and c.note == "kept"


def test_validate_with_known_parts_skips_them_and_forgets_a_failed_walk():
    """``known`` skips tuples already validated (a successor's shared parts) but a
    tuple whose walk failed is not known: validating it again fails again."""
    known: dict = {}
    good = Outer("t", True, (Inner(1, (1, 2)),), None)
    validate_state(good, "state", known)
    assert known[id(good.parts)] is good.parts
    bad = Inner(2, [2])
    shell = Outer("t", False, (bad,), None)
    for _ in range(2):
        with pytest.raises(ModelError, match=r"^next state\.parts\[0\]\.isr is a list"):
            validate_state(shell, "next state", known)
    assert id(shell) not in known and id(bad) not in known
    again = good._replace(flag=False)           # shares parts with good: walked once
    validate_state(again, "state", known)
    assert known[id(again)] is again
