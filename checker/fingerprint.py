"""State fingerprints: a stable 64-bit digest of a state's canonical encoding.

The fingerprint is ``blake2b(model.encode(state), digest_size=8)`` read as a signed
little-endian 64-bit integer.  It never uses Python's ``hash()``, so it is the same
on every run, whatever ``PYTHONHASHSEED`` is, and the same in every process (the
local engine and Spark executors agree).

``model.encode`` defaults to ``repr(state).encode()``, which is canonical only for
plain values; ``validate_state`` checks that a state is made of tuples (NamedTuples
included), ints, bools, str and None, and names the first offending value.

A model whose states are a few small ints may give its own fingerprint instead
(``Model.exact_fingerprint``: an int in the signed 64-bit range, one per state),
which costs a few operations where the digest costs more than such a model's
``next_state``; every function here then returns it.
"""

from __future__ import annotations

import hashlib
from collections import namedtuple
from typing import Any, Callable

from checker.errors import ModelError

_blake2b = hashlib.blake2b
_MASK = (1 << 64) - 1


def fingerprint(model: Any, state: Any) -> int:
    """The signed 64-bit fingerprint of ``state`` under ``model.encode`` (or the
    model's ``exact_fingerprint``, checked, when it has one)."""
    exact = exact_fingerprint_fn(model)
    if exact is not None:
        return checked_exact(exact(state))
    return int.from_bytes(_blake2b(model.encode(state), digest_size=8).digest(), "little", signed=True)


def repr_encoded(model: Any) -> bool:
    """Whether ``model`` keeps the default ``encode`` (``repr``, marked
    ``repr_encoding``): then two states with one fingerprint are one value (``repr``
    of the plain values ``validate_state`` admits tells them apart), not only one
    state of the search."""
    return bool(getattr(getattr(type(model), "encode", None), "repr_encoding", False))


_NAMEDTUPLE_REPR = namedtuple("_Probe", "a").__repr__.__code__   # the repr every namedtuple class shares
MEMO_LIMIT = 1 << 16    # values remembered per position by state_repr_fn; then forgotten


def _repr_pieces(tp: type, n: int) -> tuple[tuple[str, ...], str] | None:
    """What ``repr`` puts before each of the ``n`` items of a tuple of class ``tp``,
    and after the last: ``("Name(f1=", ", f2=", ...), ")"`` for collections'
    namedtuple ``repr``, ``("(", ", ", ...), ")"`` (``",)"`` for one item) for
    ``tuple.__repr__`` (plain tuples, and NamedTuples that take it, as the Kafka
    model's do); None for any other ``repr``."""
    if not issubclass(tp, tuple) or not n:
        return None
    r = getattr(tp, "__repr__", None)
    fields = getattr(tp, "_fields", None)
    if r is tuple.__repr__:
        return ("(",) + (", ",) * (n - 1), ",)" if n == 1 else ")"
    if getattr(r, "__code__", None) is _NAMEDTUPLE_REPR and fields and len(fields) == n:
        return tuple((f"{tp.__name__}(" if i == 0 else ", ") + f"{name}=" for i, name in enumerate(fields)), ")"
    return None


def _memo(where: dict, pos: Any) -> dict:
    """The memo of position ``pos`` (a part, or an element of a plain tuple part),
    started afresh once it holds MEMO_LIMIT values."""
    m = where.get(pos)
    if m is None or len(m) >= MEMO_LIMIT:
        m = where[pos] = {}
    return m


def _shape(key: tuple[type, int] | None, memos: dict, copied: bool) -> tuple | None:
    """``(pieces, close, memo of each position)`` of a state of ``key``'s class and
    length, or None where its ``repr`` is not built from its parts (or, ``copied``,
    where a copy of its items would lose what its instances carry besides them: an
    instance ``__dict__``)."""
    pieces = None if key is None else _repr_pieces(*key)
    if pieces is None or (copied and key[0].__dictoffset__):
        return None
    return (*pieces, memos.setdefault(key, {}))


def state_repr_fn(model: Any) -> Callable[[Any], str]:
    """``repr`` of ``model``'s states, the very same string, made cheaper for a model
    that keeps the default encoding and promises ``equal_states_encode_equally``.

    A state's parts take few values although each successor builds new objects for
    them (on ``small``, 35,105 states hold 486 ``zk`` values and 2,418 brokers'): the
    ``repr`` of each part of the state, and of each element of a plain tuple part
    (the brokers), is remembered by its value and position, and hashing a part
    costs several times less than its ``repr``.  Sound by the promise: two equal
    values at one position of one class of state have one ``repr``, or two states
    differing only there would be equal with two encodings.  The state's own class must print as
    collections' namedtuple or as a tuple does; any other model or state gets
    ``repr``."""
    if not (repr_encoded(model) and getattr(model, "equal_states_encode_equally", False)):
        return repr
    shapes: dict[tuple[type, int], Any] = {}
    memos: dict[tuple[type, int], dict] = {}    # the state's (class, length) -> position -> {part: repr}
    unset = object()
    memo = _memo

    def rep(state: Any, _r=repr, _tuple=tuple, _isinstance=isinstance, _type=type, _len=len) -> str:
        key = (_type(state), _len(state)) if _isinstance(state, _tuple) else None
        shape = shapes.get(key, unset)
        if shape is unset:
            shape = shapes[key] = _shape(key, memos, copied=False)
        if shape is None:
            return _r(state)
        pieces, close, where = shape
        out = []
        add = out.append
        for i, part in enumerate(state):
            add(pieces[i])
            if _type(part) is _tuple:
                n = _len(part)
                if not n:
                    add("()")
                    continue
                add("(")
                for j, e in enumerate(part):
                    if j:
                        add(", ")
                    if _isinstance(e, _tuple):
                        m = where.get((i, j)) or memo(where, (i, j))
                        text = m.get(e)
                        if text is None:
                            if _len(m) >= MEMO_LIMIT:
                                m = memo(where, (i, j))
                            text = m[e] = _r(e)
                        add(text)
                    else:
                        add(_r(e))
                add(",)" if n == 1 else ")")
            elif _isinstance(part, _tuple):
                m = where.get(i) or memo(where, i)
                text = m.get(part)
                if text is None:
                    if _len(m) >= MEMO_LIMIT:
                        m = memo(where, i)
                    text = m[part] = _r(part)
                add(text)
            else:
                add(_r(part))
        add(close)
        return "".join(out)
    rep.memos = memos   # type: ignore[attr-defined]  # for tests and benchmarks
    return rep


def state_canon_fn(model: Any) -> Callable[[Any], tuple[str, Any]] | None:
    """``canon(state) -> (repr(state), copy)`` for the Spark engine's expand tasks,
    or None where :func:`state_repr_fn` does not apply.  ``copy == state``, with the
    same ``repr``, but each part that ``state_repr_fn`` remembers is the first equal
    part met at its position, one object for all.

    Pickle writes an object it met before in the same pickle as a reference to it
    (its memo is by identity), so a chunk of successors that share their parts'
    values by identity pickles each value once: on ``small:max_isr_shrinks=2``, 89
    bytes a state instead of 213, and several times fewer NamedTuples for the pickler
    to reduce and for the destination to build.  The parts are looked up where the
    ``repr`` looks them up, so the copy costs one tuple, and one for each plain
    tuple part.  Sound by the same promise as ``state_repr_fn``: equal values at one
    position print alike.  A state whose instances carry more than their items (an
    instance ``__dict__``: a class in its hierarchy without ``__slots__``) is not
    copied."""
    if not (repr_encoded(model) and getattr(model, "equal_states_encode_equally", False)):
        return None
    shapes: dict[tuple[type, int], Any] = {}
    memos: dict[tuple[type, int], dict] = {}    # (class, length) -> position -> {part: (repr, part)}
    unset = object()
    memo = _memo

    def canon(state: Any, _r=repr, _tuple=tuple, _isinstance=isinstance, _type=type, _len=len,
              _new=tuple.__new__) -> tuple[str, Any]:
        key = (_type(state), _len(state)) if _isinstance(state, _tuple) else None
        shape = shapes.get(key, unset)
        if shape is unset:
            shape = shapes[key] = _shape(key, memos, copied=True)
        if shape is None:
            return _r(state), state
        pieces, close, where = shape
        out = []
        add = out.append
        parts = []
        keep = parts.append
        for i, part in enumerate(state):
            add(pieces[i])
            if _type(part) is _tuple:
                n = _len(part)
                if not n:
                    add("()")
                    keep(part)
                    continue
                add("(")
                items = []
                for j, e in enumerate(part):
                    if j:
                        add(", ")
                    if _isinstance(e, _tuple):
                        m = where.get((i, j)) or memo(where, (i, j))
                        hit = m.get(e)
                        if hit is None:
                            if _len(m) >= MEMO_LIMIT:
                                m = memo(where, (i, j))
                            hit = m[e] = (_r(e), e)
                        add(hit[0])
                        items.append(hit[1])
                    else:
                        add(_r(e))
                        items.append(e)
                add(",)" if n == 1 else ")")
                keep(_tuple(items))
            elif _isinstance(part, _tuple):
                m = where.get(i) or memo(where, i)
                hit = m.get(part)
                if hit is None:
                    if _len(m) >= MEMO_LIMIT:
                        m = memo(where, i)
                    hit = m[part] = (_r(part), part)
                add(hit[0])
                keep(hit[1])
            else:
                add(_r(part))
                keep(part)
        add(close)
        return "".join(out), _new(key[0], parts)
    canon.memos = memos   # type: ignore[attr-defined]  # for tests and benchmarks
    return canon


FP_MIN, FP_MAX = -(1 << 63), (1 << 63) - 1


def exact_fingerprint_fn(model: Any) -> Callable[[Any], int] | None:
    """The model's ``exact_fingerprint`` (checker.model.Model), or None: the hot
    loops call it as it is; :func:`fingerprint_fn` wraps it with the check of
    what it returns."""
    fn = getattr(model, "exact_fingerprint", None)
    return fn if callable(fn) else None


def checked_exact(value: Any) -> int:
    """``value`` if it is a fingerprint (an int in the signed 64-bit range),
    else a ModelError that says what ``exact_fingerprint`` must return."""
    if type(value) is not int or not FP_MIN <= value <= FP_MAX:
        raise ModelError(f"exact_fingerprint(state) returned {value!r} ({type(value).__name__}); it must return an "
                         f"int in the signed 64-bit range, one per state: fix it, or remove it to have blake2b "
                         f"digests of encode(state)")
    return value


def fingerprint_fn(model: Any, rep: Callable[[Any], str] | None = None) -> Callable[[Any], int]:
    """The fingerprint function of ``model``, one call per state: every engine, the
    graph builder and conformance use this one, so they agree on every state.

    A model that keeps the default ``encode`` (``repr``, marked ``repr_encoding``)
    gets a function that skips the method call, and builds the ``repr`` with
    :func:`state_repr_fn` (the very same string: cheaper where the model promises
    ``equal_states_encode_equally``, plain ``repr`` otherwise).  ``rep``: that
    function, made already by the caller, so that one memo of parts serves both.
    A model with an ``exact_fingerprint`` gets that, checked."""
    exact = exact_fingerprint_fn(model)
    if exact is not None:
        def fp(state: Any, _x=exact, _c=checked_exact) -> int:
            return _c(_x(state))
    elif repr_encoded(model):
        def fp(state: Any, _b=_blake2b, _f=int.from_bytes, _r=rep or state_repr_fn(model)) -> int:
            return _f(_b(_r(state).encode(), digest_size=8).digest(), "little", signed=True)
    else:
        encode = model.encode

        def fp(state: Any, _b=_blake2b, _f=int.from_bytes) -> int:
            return _f(_b(encode(state), digest_size=8).digest(), "little", signed=True)
    return fp


def placement_fn(model: Any) -> Callable[[Any], int] | None:
    """The placement hash of ``model``'s states (``Model.partition_key``), or None
    when the model has no such hook: ``blake2b(repr(partition_key(state)))`` read as
    an unsigned 63-bit integer, so that it is the same in every process whatever
    ``PYTHONHASHSEED`` is.  A state lives on partition ``hash % n``.

    The key is usually a part of the state that most actions leave as it is (the
    very same object in the successor), so the hash is remembered by the key's
    identity: the cache holds the key itself, so an identity is never reused while
    it is in the cache.  A model that promises ``equal_states_encode_equally`` (every
    field keeps one type, so equal keys have one ``repr`` too) has it remembered by
    the key's value as well: a key that an action changed is a new object, but it
    takes few values (the Kafka model's ``zk``: about 900 over 151,637 states), and
    hashing it is several times cheaper than its ``repr`` and blake2b.  A key that
    raises is a ModelError naming the hook."""
    key = getattr(model, "partition_key", None)
    if not callable(key):
        return None
    cache: dict[int, tuple[Any, int]] = {}
    get = cache.get
    values: dict[Any, int] | None = {} if getattr(model, "equal_states_encode_equally", False) else None
    limit = 1 << 16

    def place(state: Any, _b=_blake2b, _f=int.from_bytes, _r=repr) -> int:
        try:
            k = key(state)
        except Exception as e:  # noqa: BLE001 - model code
            raise ModelError(f"model error: partition_key(state) raised {type(e).__name__}: {e}; fix the "
                             f"model's partition_key (it only places states on Spark partitions)") from e
        hit = get(id(k))
        if hit is not None and hit[0] is k:
            return hit[1]
        h = None
        if values is not None:
            try:
                h = values.get(k)
            except TypeError:       # unhashable (not a plain value): placed by its repr alone
                pass
        if h is None:
            h = _f(_b(_r(k).encode(), digest_size=8).digest(), "little") >> 1
            if values is not None:
                if len(values) >= limit:
                    values.clear()
                try:
                    values[k] = h
                except TypeError:
                    pass
        if len(cache) >= limit:
            cache.clear()
        cache[id(k)] = (k, h)
        return h
    return place


def placement_probe(model: Any, place: Callable[[Any], int], fp: Callable[[Any], int]) -> str:
    """A short digest of where ``place`` puts the initial states and their successors.

    A Spark checkpoint keeps each state in the partition its key placed it in, so a
    run that resumes it must place states the same way.  The model's name, version
    and configuration do not tell when only its ``partition_key`` changed; these
    placements usually do.  Paired with each state's fingerprint and sorted, the
    digest does not depend on the order the model yields states in."""
    states = list(model.init_states())
    for s in list(states):
        states.extend(model.next_state(s, a) for a in model.actions(s))
    pairs = sorted({(fp(s), place(s)) for s in states})
    return _blake2b(repr(pairs).encode(), digest_size=8).hexdigest()


def fingerprint_bytes(data: bytes) -> int:
    """The fingerprint of an already-encoded state."""
    return int.from_bytes(_blake2b(data, digest_size=8).digest(), "little", signed=True)


def format_fingerprint(fp: int) -> str:
    """``0x`` and 16 hex digits of the unsigned value: ``format_fingerprint(-1) == '0xffffffffffffffff'``."""
    return "0x%016x" % (fp & _MASK)


def parse_fingerprint(text: str) -> int:
    """Inverse of ``format_fingerprint``; raises ValueError on anything else.

    >>> parse_fingerprint(format_fingerprint(-2))
    -2
    """
    s = text.strip().lower()
    if s.startswith("0x"):
        s = s[2:]
    if not 1 <= len(s) <= 16 or any(c not in "0123456789abcdef" for c in s):
        raise ValueError(f"not a fingerprint: {text!r} (expected 0x followed by 16 hex digits)")
    value = int(s, 16)
    return value - (1 << 64) if value >= 1 << 63 else value


_SCALARS = (int, str)  # bool is an int; int/str subclasses (IntEnum) have a stable repr too
_PLAIN = frozenset((int, str, bool))


def validate_state(state: Any, where: str = "state", known: dict | None = None) -> None:
    """Raise ModelError unless ``state`` is built only from tuples (NamedTuples
    included), ints, bools, str and None.

    The message names the offending value's type and its path inside the state,
    e.g. ``state.zk.partitions[0].isr``.  Iterative, so deep states are fine.
    ``known`` (``id -> tuple``, kept by the caller across calls) skips the tuples
    validated before: a successor shares most of its parts with its parent, the
    very same objects, so validating the first successors of a search walks only
    what each action built.  It holds the tuples, so an ``id`` is not reused.
    """
    # A path is built only for a report: (parent's path, the parent's fields or None, index).
    stack: list = [(state, where)]
    pop = stack.pop
    push = stack.append
    seen = known.get if known is not None else None
    added: list[int] = []
    while stack:
        value, path = pop()
        if value is None or isinstance(value, _SCALARS):
            continue
        if isinstance(value, tuple):
            if seen is not None:
                known[id(value)] = value
                added.append(id(value))
            fields = getattr(type(value), "_fields", None)
            if fields is not None and len(fields) != len(value):
                fields = None
            # Push children in reverse so the first offending value in order is reported.
            for i in range(len(value) - 1, -1, -1):
                item = value[i]
                if item is None or type(item) in _PLAIN or (seen is not None and seen(id(item)) is item):
                    continue
                push((item, (path, fields, i)))
            continue
        for i in added:     # only tuples whose every part is valid stay known
            known.pop(i, None)
        parts = []
        while isinstance(path, tuple):
            path, fields, i = path
            parts.append(f".{fields[i]}" if fields else f"[{i}]")
        path = path + "".join(reversed(parts))
        kind = type(value).__name__
        raise ModelError(
            f"{path} is a {kind} ({_short(value)}): states may hold only tuples (NamedTuples "
            f"included), int, bool, str and None, so that repr() is a canonical encoding and the "
            f"fingerprint is stable across runs; use sorted tuples instead of a {kind}"
        )


def _short(value: Any, limit: int = 80) -> str:
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not hide the real problem
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
