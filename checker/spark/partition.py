"""A Spark partition's part of a level, expanded by the search core.

Each expand task (:mod:`checker.spark.expand`) runs a :class:`PartitionSearch`:
the local engine's :class:`checker.search.Search`, over the partition's frontier,
for one level (``explore(..., one_level=True)``).  So both engines run one
successor loop, with the same model calls, contract checks, fingerprints, fast
property checks and error messages.  What a partition must do otherwise is in the
core's hooks, overridden here, because only the driver, which sees every
partition, knows which candidate is new and which event the local engine would
meet first (the order keys of :mod:`checker.spark.tasks`):

- its visited map holds the candidates of this level, and answers ``in`` for the
  fingerprints the driver published of earlier levels too (:class:`SeenOrKnown`):
  a successor visited before is dropped before it is shipped;
- a state property or witness that trips on a candidate is a flag on that
  candidate, and stays checked on the others (the driver keeps the flags of the
  candidates that turn out new); a step property's first failure in the partition
  and the first deadlock are kept with their keys;
- a model error does not end the task: it is kept with its key
  (``keep_error``), and the search goes on from the next state, because an
  event of a smaller key on another partition may come first, or the property
  whose predicate raised may have failed there already;
- the candidates' parent links, action indices, names, destinations and
  canonical copies (which pickle each part once) come from the visitor
  (:class:`Candidates`) and from the encoding that gave their fingerprints.

On a bound (the driver counting the transitions up to the key of the level's first
event) the same search runs without checks and stops after that key.
"""

from __future__ import annotations

import marshal
import operator
import struct
from typing import Any

import numpy as np

from checker.errors import USER_CODE_ERRORS, ModelError
from checker.model import Action
from checker.search import Search, Settings, StopSearch, Visitor
from checker.spark.tasks import (
    FAILED, MAX_INDEX, PH_DEAD, PH_NEXT, PH_STATE, PH_STEP, PROP_RAISED, PROP_UNSTEADY, REACHED, SAID, WITNESS_RAISED,
    WITNESS_UNSTEADY, Context, error_text, keep_error,
)

PACK = struct.Struct(">H").pack
PACKED = [PACK(i) for i in range(256)]
NO_KEY = object()   # the parent's partition_key raised: no successor's key is it


def keep_dead_end(search: Search, stats: dict, key: bytes, sfp: int, s: Any, depth: int) -> None:
    """A state with no enabled action: the partition's first deadlock (unless the
    model calls the state terminal), or the error of ``is_terminal``, with its key."""
    if stats["dead"] is not None:
        return
    try:
        terminal = search.model.is_terminal(s)
    except USER_CODE_ERRORS as e:  # noqa: BLE001
        keep_error(stats["errors"], (key, PH_DEAD, -1, "terminal", sfp, -1,
                                     error_text(search.error("is_terminal(state)", s, depth, e))))
        return
    if not terminal:
        stats["dead"] = (key, PH_DEAD, -1, sfp, -1, 0)


def action_key(i: int) -> bytes:
    """Action index ``i`` as the two bytes of an order key."""
    return PACKED[i] if i < 256 else PACK(i)


class SeenOrKnown(dict):
    """The partition's visited map for one level: ``fingerprint -> (parent
    fingerprint, action index)`` of its candidates; ``in`` also answers True for
    a fingerprint visited at an earlier level (``known``)."""

    __slots__ = ("known",)

    def __init__(self, known: set) -> None:
        super().__init__()
        self.known = known

    def __contains__(self, h: object) -> bool:
        return dict.__contains__(self, h) or h in self.known


class Candidates(Visitor):
    """The successors a partition ships: each new one (``state``) with its parent,
    then the transition that stored it (``transition``: the first one to reach it
    after it was stored) gives its action's index and name.  ``count`` is the
    number of transitions of the state being expanded (``src``) so far."""

    def __init__(self, search: "PartitionSearch") -> None:
        self.search = search
        self.fps: list = []
        self.parents: list = []
        self.states: list = []       # canonical copies (or the states themselves)
        self.acts: list = []
        self.names: list = []
        self.dests: list = []
        self.src: Any = None
        self.count = 0
        self.pending = False        # a state was stored; the next transition stored it
        self.canon = search.canon
        self.last_canon = search.last_canon
        self.place = search.place
        self.keyed: Any = None      # the parent whose partition_key is skey
        self.skey: Any = NO_KEY

    def state(self, fp: int, state: Any, depth: int, parent: int | None) -> None:
        self.fps.append(fp)
        self.parents.append(parent)
        self.pending = True
        last = self.last_canon
        if self.canon is None:
            copy = state
        elif last[0] is state:
            copy = last[1]
        else:
            copy = self.canon(state)[1]    # its fingerprint came from the recent memo
        self.states.append(copy)
        if self.place is not None:
            search = self.search
            if parent != self.keyed:
                self.keyed, self.skey = parent, search.parent_key(parent)
            try:
                same = search.key_of(state) is self.skey
            except USER_CODE_ERRORS:  # noqa: BLE001 - place words it as a model error
                same = False
            if same:
                self.dests.append(search.pid)
            else:
                search.stage = "place"      # its error ends the task (checker.spark.session words it)
                self.dests.append(self.place(state) % search.n)

    def transition(self, src: int, act: Any, dst: int) -> None:
        if src == self.src:
            i = self.count
            if i > MAX_INDEX:
                self.too_many()
        else:
            self.src, i = src, 0
        self.count = i + 1
        if self.pending:
            self.pending = False
            self.names.append(act[0])
            self.acts.append(i)

    def too_many(self) -> None:
        self.search.stage = "state"
        raise ModelError(f"actions(state) returned more than {MAX_INDEX} actions at depth {self.search.level}; "
                         f"the Spark engine numbers actions with 16 bits and supports at most {MAX_INDEX} per state")


def strict_key(act: Any) -> Any:
    """A key under which two actions meet only if they print alike: ``True == 1``
    in Python, so ``Set(v=True)`` and ``Set(v=1)`` are one dict key, and the driver
    would show whichever the partition met first, which depends on the
    partitioning.  marshal tells a bool from an int and is C (about 0.4 us an
    action, against 3 for ``repr``); anything it cannot encode falls back to ``repr``."""
    if type(act) is Action:
        try:
            return act.name, marshal.dumps(act.args)
        except ValueError:
            pass
    return repr(act)


class Edges(Candidates):
    """The candidates, plus what the driver's visitor must see of the level
    (checker.spark.graph): every transition, as the position of its source in the
    frontier, its destination and its action (an index into this partition's
    table of the actions it met), and the states not expanded (outside the
    model's boundary) and the dead ends, by position (a dead end with its state)."""

    def __init__(self, search: "PartitionSearch") -> None:
        super().__init__(search)
        self.position = search.position
        self.t_src: list = []
        self.t_dst: list = []
        self.t_act: list = []
        self.table: list = []          # the actions met, first object of each
        self.keys: dict = {}           # strict_key(action) -> index into table
        self.at: tuple = (None, 0)     # (fingerprint, position) of the state being expanded
        self.outside: list = []
        self.ends: list = []
        self.end_states: list = []

    def transition(self, src: int, act: Any, dst: int) -> None:
        Candidates.transition(self, src, act, dst)
        at = self.at
        if at[0] != src:
            at = self.at = (src, self.position[src])
        self.t_src.append(at[1])
        self.t_dst.append(dst)
        key = strict_key(act)
        ix = self.keys.get(key)
        if ix is None:
            ix = self.keys[key] = len(self.table)
            self.table.append(act)
        self.t_act.append(ix)

    def unexpanded(self, fp: int) -> None:
        self.outside.append(self.position[fp])

    def dead_end(self, fp: int, state: Any) -> None:
        self.ends.append(self.position[fp])
        self.end_states.append(state)

    def level_graph(self, f_fp, keys: bytes) -> tuple:
        """What the driver reads of this partition (checker.spark.graph.replay),
        with the frontier's fingerprints and order keys."""
        i32 = np.int32
        return (f_fp, keys, np.array(self.t_src, dtype=i32), np.array(self.t_dst, dtype=np.int64),
                np.array(self.t_act, dtype=np.uint32), tuple(self.table), np.array(self.outside, dtype=i32),
                np.array(self.ends, dtype=i32), self.end_states)


class Bounded(Candidates):
    """Counting the transitions up to the bound's key (inclusive or not), and no
    further: the first transition after it stops the search, and is not counted."""

    def transition(self, src: int, act: Any, dst: int) -> None:
        i = self.count if src == self.src else 0
        bkey, inclusive = self.search.bound
        tkey = self.search.key(src) + action_key(i)
        if tkey > bkey or (tkey == bkey and not inclusive):
            counts = self.search.ledger.counts
            counts[act[0]] -= 1      # counted before it reached the visitor
            if not counts[act[0]]:
                del counts[act[0]]
            raise StopSearch
        super().transition(src, act, dst)


class PartitionSearch(Search):
    """One partition's expansion of one level (see the module docstring).

    ``frontier``: the partition's ``(fp, state)`` of the level, in key order;
    ``keys``: their order keys, ``kl`` bytes each, concatenated.  ``params`` are the
    expand task's (checker.spark.expand.expand); ``stats`` receives the counts
    and the events."""

    def __init__(self, ctx: Context, params: dict, frontier: list, keys: bytes, stats: dict, pid: int) -> None:
        self.bound = params.get("bound")
        counting = self.bound is not None
        super().__init__(ctx.model, ctx.props,
                         Settings(keep_going=True, check_deadlock=bool(params.get("deadlock")) and not counting),
                         visitor=None)
        led = self.ledger
        led.state_checks = [] if counting else led.checks(params.get("props", ()))
        led.step_checks = [] if counting else led.checks(params.get("steps", ()))
        led.wit_checks = [] if counting else led.checks(params.get("witnesses", ()))
        led.sample_left = 0 if counting else params.get("sample", 0)
        self.stats = stats
        self.errors = stats["errors"]
        self.steps_failed = stats["steps"]
        self.flags: list = []        # (candidate index, prop, outcome, message)
        self.frontier = frontier
        self.keys = keys
        self.kl = len(keys) // len(frontier) if frontier else 0
        self.level = params["level"]
        self.pid = pid
        self.n = params["n"]
        self.place = ctx.place if params.get("placed") and self.n > 1 else None
        self.key_of = ctx.model.partition_key if self.place is not None else None
        self.position = {fp: j for j, (fp, _) in enumerate(frontier)}
        self.stage: str | None = None    # where the last model error arose: "state", "trans" or "place"
        self.encoded = 0
        self.recent = ctx.search.recent  # kept across the levels of the run, in the worker
        known = None if counting else ctx.visited_before(params.get("known", ()))
        if known is not None:
            self.visited = SeenOrKnown(known)
        # The successors' encoding: the model's own fingerprint, its encode, or the
        # canonical repr (the worker's, whose memo of parts lasts the run), which
        # also gives the copy that is shipped.
        self.canon = None
        self.last_canon: list = [None, None]
        if self.exact is not None:
            self.exact = self._counted(self.exact)
        elif self.enc is not None:
            self.enc = self._counted(self.enc)
        elif ctx.canon is not None:
            self.canon = ctx.canon
            self.rep = self._canonical(ctx.canon)
        else:
            self.rep = self._counted(ctx.search.rep)
        self.visitor = Bounded(self) if counting else Edges(self) if params.get("graph") else Candidates(self)

    def _counted(self, f):
        def counted(t: Any) -> Any:
            self.encoded += 1
            return f(t)
        return counted

    def _canonical(self, canon):
        last = self.last_canon

        def rep(t: Any) -> str:
            self.encoded += 1
            text, last[1] = canon(t)
            last[0] = t
            return text
        return rep

    # -- keys ---------------------------------------------------------------------

    def key(self, fp: int) -> bytes:
        j = self.position[fp]
        return self.keys[j * self.kl:(j + 1) * self.kl]

    def parent_key(self, fp: int) -> Any:
        try:
            return self.key_of(self.frontier[self.position[fp]][1])
        except USER_CODE_ERRORS:  # noqa: BLE001 - every successor then goes through place, which words the error
            return NO_KEY

    # -- the level ----------------------------------------------------------------

    def expand_level(self) -> None:
        """Expand the frontier; a model error is kept and the search goes on from the
        next state (on a bound, the frontier stops at the bound's state)."""
        frontier = self.frontier
        if self.bound is not None:
            last = self.bound[0][:self.kl]
            frontier = [fs for j, fs in enumerate(frontier) if self.keys[j * self.kl:(j + 1) * self.kl] <= last]
        start = 0
        while start < len(frontier):
            rest = frontier[start:] if start else frontier
            try:
                self.explore(rest, depth=self.level, one_level=True)
                break
            except StopSearch:
                break
            except ModelError as e:
                if self.stage == "place":
                    raise
                j = start + len(rest) - operator.length_hint(self.frontier_iter) - 1
                self._keep(frontier[j][0], e)
                start = j + 1

    def _keep(self, sfp: int, e: ModelError) -> None:
        key = self.key(sfp)
        if self.stage == "trans":
            i = self.visitor.count if self.visitor.src == sfp else 0
            keep_error(self.errors, (key + action_key(i), PH_NEXT, -1, "trans", sfp, i, error_text(e)))
        else:
            keep_error(self.errors, (key, PH_STATE, -1, "state", sfp, -1, error_text(e)))

    def record(self) -> tuple:
        """The candidates, as checker.spark.expand buckets them: fingerprints,
        parents, action indices, keys, copies, flags, action-name indices, the
        names they index, destinations (None without placement)."""
        v = self.visitor
        names: dict[str, int] = {}
        name_ix = []
        for name in v.names:
            ni = names.get(name)
            if ni is None:
                ni = names[name] = len(names)
            name_ix.append(ni)
        keys = [self.key(p) + action_key(i) for p, i in zip(v.parents, v.acts)]
        return (v.fps, v.parents, v.acts, keys, v.states, self.flags, name_ix, tuple(names),
                v.dests if self.place is not None else None)

    # -- the model's calls: where an error arose ----------------------------------

    def error(self, call, state, depth, exc, act=None, via=None) -> ModelError:
        self.stage = "trans" if act is not None or via is not None else "state"
        return super().error(call, state, depth, exc, act=act, via=via)

    def as_list(self, acts, s, depth) -> list:
        self.stage = "state"
        return super().as_list(acts, s, depth)

    def check_actions(self, s, acts, depth) -> None:
        self.stage = "state"
        super().check_actions(s, acts, depth)

    def check_successor(self, s, a, t, depth) -> None:
        self.stage = "trans"
        super().check_successor(s, a, t, depth)

    # -- the slow paths: outcomes kept for the driver --------------------------------

    def found_dead_end(self, sfp, s, depth) -> None:
        keep_dead_end(self, self.stats, self.key(sfp), sfp, s, depth)

    def failed_step_check(self, s, sfp, i, a, t, h, depth, tripped=None) -> None:
        """Every step property on its own; a failure or an error is kept, and that
        property is no longer checked in this partition (a later outcome of it here
        cannot be the level's first).  If none failed or raised, the one that
        tripped the fast check is not deterministic: that is kept as its error."""
        led = self.ledger
        tkey = self.key(sfp) + action_key(i)
        keep = []
        for name, pred in led.step_checks:
            p = led.index[name]
            try:
                ok = pred(s, a, t)
            except USER_CODE_ERRORS as e:  # noqa: BLE001
                keep_error(self.errors, (tkey, PH_STEP, p, "trans", sfp, i, error_text(
                    self.error(f"the predicate of step property {name!r}", s, depth, e, act=a))))
                continue
            if not ok:
                self.steps_failed[p] = (tkey, PH_STEP, p, sfp, i, h)
                continue
            keep.append((name, pred))
        if tripped is not None and len(keep) == len(led.step_checks):
            keep_error(self.errors, (tkey, PH_STEP, led.index[tripped], SAID, sfp, i, error_text(
                self.unsteady(tripped, "step property", s, depth, act=a))))
        led.step_checks = keep

    def reached_witness(self, t, depth, via=None, tripped=None) -> None:
        """Every witness on the candidate just stored, each on its own; all stay
        checked.  If none held or raised, ``tripped`` is not deterministic
        (Search.reached_witness): kept as its error."""
        index = len(self.visitor.fps) - 1
        led = self.ledger
        flagged = len(self.flags)
        for name, pred in led.wit_checks:
            try:
                if pred(t):
                    self.flags.append((index, led.index[name], REACHED, None))
            except USER_CODE_ERRORS as e:  # noqa: BLE001
                self.flags.append((index, led.index[name], WITNESS_RAISED, error_text(self.error(
                    f"the predicate of sometimes property {name!r}", t, depth, e, via=via))))
        if tripped is not None and len(self.flags) == flagged:
            self.flags.append((index, led.index[tripped], WITNESS_UNSTEADY, error_text(
                self.unsteady(tripped, "sometimes property", t, depth, via=via))))

    def failed_state_check(self, t, h, depth, via=None, tripped=None) -> None:
        """Every state property on the candidate just stored, each on its own; all
        stay checked.  If none failed or raised, ``tripped`` is not deterministic
        (Search.failed_state_check): kept as its error."""
        index = len(self.visitor.fps) - 1
        led = self.ledger
        flagged = len(self.flags)
        for name, pred in led.state_checks:
            try:
                if not pred(t):
                    self.flags.append((index, led.index[name], FAILED, None))
            except USER_CODE_ERRORS as e:  # noqa: BLE001
                self.flags.append((index, led.index[name], PROP_RAISED, error_text(self.error(
                    f"the predicate of property {name!r}", t, depth, e, via=via))))
        if tripped is not None and len(self.flags) == flagged:
            self.flags.append((index, led.index[tripped], PROP_UNSTEADY, error_text(
                self.unsteady(tripped, "property", t, depth, via=via))))
