"""The search core: one breadth-first search that every consumer drives.

The local engine (:mod:`checker.bfs`), the state-graph builder
(:mod:`checker.graph`, hence liveness, ``kmc graph`` and conformance covering
sets), ``kmc check`` with ``eventually`` properties and every Spark partition
(:mod:`checker.spark.partition`, one level of its frontier at a time) all run
:class:`Search`, so both engines make the same calls and word every failure the
same way.  What a partition keeps for its driver instead of deciding it (which
outcome is first, which error stops the search) goes through the slow paths
(``found_dead_end``, ``failed_step_check``, ``reached_witness``,
``failed_state_check``) and ``error``, which a subclass overrides; the hot loop is
the same for both.  The split follows Stateright's: the model contract
(:mod:`checker.model`), a settings object (:class:`Settings`, in
:mod:`checker.settings`, shared by both engines), and a visitor
(:class:`Visitor`) that sees every stored state and every transition, which is
how the graph is built during the one search.

Property bookkeeping has one place, the search's :class:`checker.ledger.Ledger`
(``search.ledger``): which ``always``, step and ``sometimes`` properties are
still checked, the violations found (``found``), the witnesses' depths, the
counts and the contract sample left.  The Spark driver hands its own ledger to
the searches it runs, so the partitions' levels and the core's add up in one
set of books.  The counterexample paths are rebuilt here, from the parent links.


Level by level from the initial states, in the order the model gives them
(``init_states`` order, then ``actions`` order), so the visit order, the statistics
and every counterexample depend only on the model.  Distinct states are keyed by
fingerprint (checker.fingerprint).  The visited map holds, for each fingerprint, the
fingerprint of the state it was first reached from and the index of the action in
that state's action list (an initial state holds ``None`` and its index in
``init_states``); states themselves live only in the current and next frontier.  A
counterexample is rebuilt from those links by replaying the model from its initial
state, checking every fingerprint on the way.

What is checked:

- every ``always`` state property on every distinct state, initial ones included;
- every step property (``prop.step``) on every generated transition
  ``(prev, action, next)``, whether or not ``next`` is new;
- every ``sometimes`` property on every distinct state until it first holds; the
  depth of that state goes in ``stats.witnesses``;
- deadlock (``check_deadlock``): a state inside the boundary with no enabled action
  that the model does not call terminal.  States outside ``within_boundary`` are
  checked but not expanded and are never deadlocks.

Shortest counterexamples: states are discovered in order of depth, so the first
violation found for a property has a shortest path.  When the search stops at the
first violation (``keep_going=False``) the reported violation is a shortest one over
all properties and deadlock: a property found failing on a state of depth d+1 while
level d is expanded is reported only after the rest of level d has been scanned for
a deadlock (a deadlock there has a shorter path, d, and is reported instead).

Bounds: ``max_depth`` stops expanding states at that depth (they are still checked,
and checked for deadlock); ``max_states`` stops the search when a new state would be
stored beyond that many; ``time_limit`` stops it once that many seconds have passed,
and Ctrl-C (KeyboardInterrupt) stops it the same way (``stats.stopped_by`` says
which).  A bound that cut the search makes ``stats.complete`` False and the verdict
BOUNDED unless something failed.  Stopping at the first violation
also leaves ``stats.complete`` False: the counts are then those of a partial search.

A model that raises (``actions``, ``next_state``, ``encode``, a predicate...) stops
the search with a ModelError that names the call, the action, the depth and the
state; the original exception is chained.

Garbage collection: every object a search makes lives until the search ends (the
frontier, the visited map) or dies by reference counting (successors seen
before), so the cyclic collector only burns time walking the growing heap;
:meth:`Search.run` freezes what exists (``gc.freeze``) and turns the collector
off for the search, then restores it.
"""

from __future__ import annotations

import gc
import sys
import time
from hashlib import blake2b
from typing import Sequence

from checker.errors import USER_CODE_ERRORS, ModelError
from checker.fingerprint import exact_fingerprint_fn, fingerprint_fn, state_repr_fn, validate_state
from checker.ledger import SAMPLE_SIZE, Ledger, peak_memory, unreached_witnesses
from checker.model import ALWAYS, Action, Model, Property, State
from checker.modelcalls import ModelCalls, describe_state, replay_chain
from checker.result import BOUNDED, DEADLOCK, INTERRUPTED, OK, TIME_LIMIT, VIOLATED, CheckResult, Step, Violation
from checker.settings import Settings

__all__ = ["Settings", "Visitor", "Search", "StopSearch", "Ledger", "replay_chain", "describe_state", "peak_memory",
           "SAMPLE_SIZE", "unreached_witnesses"]

PROGRESS_EVERY = 1000   # states expanded between two looks at the clock
RECENT_LIMIT = 1 << 17  # successors remembered by value (Model.equal_states_encode_equally); then forgotten


class Visitor:
    """What a consumer sees of a search, besides its result.

    ``state(fp, state, depth, parent)`` is called for every state stored, in the
    order they are stored (``parent`` is None for an initial state, else the
    parent's fingerprint); ``transition(src_fp, action, dst_fp)`` for every
    transition generated, in exploration order, after ``state`` for the
    destination if it was new; ``unexpanded(fp)`` for a state outside the model's
    boundary; ``dead_end(fp, state)`` for a state inside it where no action is
    enabled, terminal or not, at most once per state and in visit order (a
    deadlock is still reported as one).  A visitor may raise to stop the search
    (a UsageError for a limit)."""

    #: True once the visitor wants no more calls (a graph builder that gave its
    #: graph up past its limit).  The local engine makes them anyway, they cost it
    #: nothing; the Spark engine stops shipping each level's graph to its driver.
    done = False

    def state(self, fp: int, state: State, depth: int, parent: int | None) -> None:
        pass

    def transition(self, src: int, act: Action, dst: int) -> None:
        pass

    def unexpanded(self, fp: int) -> None:
        pass

    def dead_end(self, fp: int, state: State) -> None:
        pass


class StopSearch(BaseException):
    """Unwinds the search loop (first violation, or max_states reached).
    A BaseException so that no ``except Exception`` on the way can swallow it."""


class Search(ModelCalls):
    """One search of ``model`` for ``props`` under ``settings``; :meth:`run` gives
    the CheckResult.  ``visitor`` (optional) sees every state and transition.
    ``ledger`` (optional): the books to keep, a :class:`checker.ledger.Ledger` over
    the same ``props``, which the search goes on from (the Spark driver passes its
    own); by default a new one."""

    def __init__(self, model: Model, props: Sequence[Property], settings: Settings | None = None,
                 visitor: Visitor | None = None, ledger: Ledger | None = None) -> None:
        settings = (settings or Settings()).validate()
        self.settings = settings
        self.model = model
        self.max_depth = settings.max_depth
        self.max_states = settings.max_states
        self.keep_going = settings.keep_going
        self.check_deadlock = settings.check_deadlock
        self.progress = settings.progress
        self.interval = float(settings.progress_interval)
        self.visitor = visitor

        # The books (counts, what was found, the checks still active): a new
        # Ledger, or the one a caller keeps across searches (the Spark driver's).
        self.ledger = Ledger(props) if ledger is None else ledger
        self.visited: dict[int, tuple[int | None, int]] = {}
        self.nxt: list = []                   # next frontier (for progress lines)
        self.frontier_iter = None             # rest of the level, for the deadlock scan
        self.handoff: list | None = None      # the level explore(handoff=) stopped before
        self.rep = state_repr_fn(model)                # repr, cheaper (checker.fingerprint)
        self.fp = fingerprint_fn(model, self.rep)     # one memo of parts for both
        # How explore fingerprints a successor: the model's own fingerprint, else its
        # encode, else rep (the default encoding, repr).  Attributes, so that a
        # subclass (a Spark partition) can wrap them.
        self.exact = exact_fingerprint_fn(model)
        self.enc = None if getattr(type(model), "encode", None) is Model.encode else model.encode
        # States met recently, by value: a successor equal to one of them has its
        # fingerprint without being encoded.  Only for a model that promises that
        # equal states have equal encodings (Model.equal_states_encode_equally);
        # kept across the levels and the explore calls of this search.
        self.recent: dict | None = {} if getattr(model, "equal_states_encode_equally", False) else None
        self.start = time.perf_counter()
        self.last_report = self.start
        self.deadline = None if settings.time_limit is None else self.start + settings.time_limit

    # -- driver -----------------------------------------------------------------

    def run(self) -> CheckResult:
        collecting = gc.isenabled() and not self.settings.collect_garbage
        if collecting:
            gc.freeze()
            gc.disable()
        try:
            frontier = self.initial()
            self.explore(frontier)
        except StopSearch:
            pass
        except KeyboardInterrupt:
            # Ctrl-C ends the search as a bound does: the caller gets how far it went
            # (kmc check prints the summary, then exits 130).
            self.ledger.cut = True
            self.ledger.stopped_by = INTERRUPTED
        finally:
            if collecting:
                gc.enable()
                gc.unfreeze()
        led = self.ledger
        stats = led.stats(len(self.visited), time.perf_counter() - self.start, led.levels)
        violations = [self.violation(*rec) for rec in led.found]
        complete = stats.complete
        if complete:
            violations += unreached_witnesses(led.witnesses)
        verdict = VIOLATED if violations else (OK if complete else BOUNDED)
        return CheckResult(verdict, violations, stats)

    def initial(self) -> list:
        model = self.model
        try:
            inits = list(model.init_states())
        except USER_CODE_ERRORS as e:
            raise ModelError(f"init_states() raised {type(e).__name__}: {e}") from e
        if not inits:
            raise ModelError("the model has no initial state: init_states() returned nothing")
        frontier = []
        visited = self.visited
        cap = self.max_states
        for i, s in enumerate(inits):
            if s is None:
                raise ModelError(f"initial state #{i} is None")
            try:
                validate_state(s, "initial state")
            except ModelError as e:
                raise ModelError(f"{e} (initial state #{i})") from None
            h = self.encode_fp(s, 0, None, "init_states")
            if h in visited:
                continue
            if cap is not None and len(visited) >= cap:
                self.ledger.cut = True
                raise StopSearch
            visited[h] = (None, i)
            if self.visitor is not None:
                self.visitor.state(h, s, 0, None)
            self._new_state(s, h, 0)
            frontier.append((h, s))
        return frontier

    def _new_state(self, t, h, depth) -> None:
        """Checks on a state stored for the first time (slow path, initial states)."""
        if self.ledger.wit_checks:
            self.reached_witness(t, depth)
        for name, pred in self.ledger.state_checks:
            if not self.call_pred(name, pred, (t,), t, depth, None):
                self.failed_state_check(t, h, depth)
                break

    # -- the hot loop -------------------------------------------------------------

    def explore(self, frontier: list, handoff: int | None = None, depth: int = 0, one_level: bool = False) -> None:
        """Expand ``frontier`` (the level at ``depth``, the initial one by default)
        level by level.  ``handoff``: stop before expanding a level of more than
        that many states, leaving it in ``self.handoff`` (``(fp, state)`` in BFS
        order); the books (counts, what was found, the checks still active, the
        successors still to validate) are in ``self.ledger`` however it ends.  The
        Spark engine runs its narrow levels here and the wide ones on its
        partitions: it gives the search its own ledger and sets ``visited`` before
        calling this.  ``one_level``: expand ``frontier`` only, leaving the new
        states in ``self.nxt`` (how a Spark partition expands its part of a level)."""
        model = self.model
        visited = self.visited
        counts = self.ledger.counts
        cget = counts.get
        ecounts, ncounts = self.ledger.enabled_counts, self.ledger.new_counts
        if ecounts is None or ncounts is None:
            ecounts, ncounts = {}, {}   # books resumed without coverage: it stays n/a
        eget, nget = ecounts.get, ncounts.get
        actions = model.actions
        next_state = model.next_state
        within = None if getattr(type(model), "within_boundary", None) is Model.within_boundary else model.within_boundary
        enc = self.enc
        b2, from_bytes, rep = blake2b, int.from_bytes, self.rep
        exact = self.exact     # the model's own fingerprint, if it gives one
        cap = self.max_states if self.max_states is not None else sys.maxsize
        max_depth = self.max_depth
        state_checks = self.ledger.state_checks
        step_checks = self.ledger.step_checks
        wit_checks = self.ledger.wit_checks
        visitor = self.visitor
        recent = self.recent
        recent_get = recent.get if recent is not None else None
        on_state = visitor.state if visitor is not None else None
        on_edge = visitor.transition if visitor is not None else None
        sample = self.ledger.sample_left
        tick = PROGRESS_EVERY
        reporting = self.progress is not None
        deadline = self.deadline
        watching = reporting or deadline is not None

        # The sample left goes back into the books however the loop ends (a
        # violation, a bound, a model error): the next search goes on from it.
        try:
            while frontier:
                self.ledger.level = depth
                self.ledger.stored_at_level = len(visited)
                if max_depth is not None and depth >= max_depth:
                    self._boundary_level(frontier, depth)
                    return
                if handoff is not None and len(frontier) > handoff:
                    self.handoff = frontier
                    return
                nxt = []
                self.nxt = nxt
                append = nxt.append
                it = iter(frontier)
                self.frontier_iter = it
                d1 = depth + 1
                pos = 0
                level_start = time.perf_counter()
                for sfp, s in it:
                    pos += 1
                    tick -= 1
                    if not tick:
                        tick = PROGRESS_EVERY
                        if watching:
                            now = time.perf_counter()
                            if reporting and now - self.last_report >= self.interval:
                                self._report(len(frontier) - pos + len(nxt), depth)
                            if deadline is not None and now >= deadline:
                                self.ledger.cut = True
                                self.ledger.stopped_by = TIME_LIMIT
                                raise StopSearch
                    if within is not None:
                        try:
                            inside = within(s)
                        except USER_CODE_ERRORS as e:
                            raise self.error("within_boundary(state)", s, depth, e) from e
                        if not inside:
                            if visitor is not None:
                                visitor.unexpanded(sfp)
                            continue
                    try:
                        acts = actions(s)
                    except USER_CODE_ERRORS as e:
                        raise self.error("actions(state)", s, depth, e) from e
                    if type(acts) is not list and type(acts) is not tuple:
                        acts = self.as_list(acts, s, depth)
                    if sample:
                        self.check_actions(s, acts, depth)
                    if not acts:
                        if visitor is not None:
                            visitor.dead_end(sfp, s)
                        if self.check_deadlock:
                            self.found_dead_end(sfp, s, depth)
                        continue
                    for name in {a[0] for a in acts}:
                        ecounts[name] = eget(name, 0) + 1
                    for i, a in enumerate(acts):
                        try:
                            t = next_state(s, a)
                        except USER_CODE_ERRORS as e:
                            raise self.error("next_state(state, action)", s, depth, e, act=a) from e
                        if sample:
                            sample -= 1
                            self.check_successor(s, a, t, depth)
                        name = a[0]
                        counts[name] = cget(name, 0) + 1
                        h = None if recent is None else recent_get(t)
                        if h is None:
                            try:
                                if exact is not None:
                                    h = exact(t)
                                else:
                                    h = from_bytes(b2(rep(t).encode() if enc is None else enc(t), digest_size=8).digest(),
                                                   "little", signed=True)
                            except USER_CODE_ERRORS as e:
                                raise self.error("exact_fingerprint(state)" if exact is not None else "encode(state)",
                                                 t, d1, e, via=a) from e
                            if recent is not None:
                                if len(recent) >= RECENT_LIMIT:
                                    recent.clear()
                                recent[t] = h
                        if step_checks:
                            try:
                                for chk in step_checks:
                                    if not chk[1](s, a, t):
                                        break
                                else:
                                    chk = None
                            except USER_CODE_ERRORS:
                                pass    # chk raised: the slow path words it
                            if chk is not None:
                                self.failed_step_check(s, sfp, i, a, t, h, depth, chk[0])
                                step_checks = self.ledger.step_checks
                        if h in visited:
                            if on_edge is not None:
                                on_edge(sfp, a, h)
                            continue
                        if len(visited) >= cap:
                            self.ledger.cut = True
                            raise StopSearch
                        visited[h] = (sfp, i)
                        ncounts[name] = nget(name, 0) + 1
                        if on_edge is not None:
                            on_state(h, t, d1, sfp)
                            on_edge(sfp, a, h)
                        if wit_checks:
                            try:
                                for chk in wit_checks:
                                    if chk[1](t):
                                        break
                                else:
                                    chk = None
                            except USER_CODE_ERRORS:
                                pass    # chk raised: the slow path words it
                            if chk is not None:
                                self.reached_witness(t, d1, a, chk[0])
                                wit_checks = self.ledger.wit_checks
                        if state_checks:
                            try:
                                for chk in state_checks:
                                    if not chk[1](t):
                                        break
                                else:
                                    chk = None
                            except USER_CODE_ERRORS:
                                pass    # chk raised: the slow path words it
                            if chk is not None:
                                self.failed_state_check(t, h, d1, a, chk[0])
                                state_checks = self.ledger.state_checks
                        append((h, t))
                self.ledger.levels.append({"level": depth, "frontier": len(frontier), "new": len(nxt),
                                           "distinct": len(visited), "seconds": time.perf_counter() - level_start})
                if one_level:
                    return      # the new states stay in self.nxt
                frontier = nxt
                depth = d1
        finally:
            self.ledger.sample_left = sample
        self.nxt = []

    # -- rare paths -------------------------------------------------------------------

    def _boundary_level(self, frontier, depth) -> None:
        """States at max_depth: checked already, not expanded; a state with enabled
        actions means the bound cut the search, one with none may be a deadlock."""
        self.nxt = []
        model = self.model
        for sfp, s in frontier:
            try:
                if not model.within_boundary(s):
                    continue
            except USER_CODE_ERRORS as e:
                raise self.error("within_boundary(state)", s, depth, e) from e
            try:
                acts = model.actions(s)
            except USER_CODE_ERRORS as e:
                raise self.error("actions(state)", s, depth, e) from e
            if type(acts) is not list:
                acts = self.as_list(acts, s, depth)
            if acts:
                self.ledger.cut = True
                if not self.check_deadlock or DEADLOCK in self.ledger.found_names:
                    if self.visitor is None:
                        return
            else:
                if self.visitor is not None:
                    self.visitor.dead_end(sfp, s)
                if self.check_deadlock:
                    self.found_dead_end(sfp, s, depth)

    # The slow paths: explore calls these when a state has no enabled action, or
    # when a fast check of the properties tripped (one failed, was reached, or
    # raised); each evaluates every check on its own.  They record what they find
    # in the ledger and raise a ModelError for a predicate that raises, or that
    # gives another answer than the fast check had (``tripped``: the check that
    # tripped there; a predicate that is not deterministic).  A Spark
    # partition (checker.spark.partition) overrides them to keep every outcome for
    # its driver instead.

    def found_dead_end(self, sfp, s, depth) -> None:
        if DEADLOCK in self.ledger.found_names:
            return
        try:
            terminal = self.model.is_terminal(s)
        except USER_CODE_ERRORS as e:
            raise self.error("is_terminal(state)", s, depth, e) from e
        if not terminal:
            self._record(DEADLOCK, "deadlock", sfp, None, depth,
                         "no action is enabled in the last state and model.is_terminal() is False")

    def reached_witness(self, t, depth, via=None, tripped=None) -> None:
        """``via``: the action that reached ``t``, for the error message;
        ``tripped``: the witness the fast check found (or that raised there)."""
        keep = []
        for name, pred in self.ledger.wit_checks:
            if self.call_pred(name, pred, (t,), t, depth, None, kind="sometimes property", via=via):
                self.ledger.witnesses[name] = depth
            else:
                keep.append((name, pred))
        if tripped is not None and len(keep) == len(self.ledger.wit_checks):
            raise self.unsteady(tripped, "sometimes property", t, depth, via=via)
        self.ledger.wit_checks = keep

    def failed_state_check(self, t, h, depth, via=None, tripped=None) -> None:
        failed = [name for name, pred in self.ledger.state_checks
                  if not self.call_pred(name, pred, (t,), t, depth, None, via=via)]
        if tripped is not None and not failed:
            raise self.unsteady(tripped, "property", t, depth, via=via)
        self.ledger.state_checks = [c for c in self.ledger.state_checks if c[0] not in failed]
        for name in failed:
            self._record(name, ALWAYS, h, None, depth, self.message(name, "does not hold in the last state"))

    def failed_step_check(self, s, sfp, i, a, t, h, depth, tripped=None) -> None:
        failed = [name for name, pred in self.ledger.step_checks
                  if not self.call_pred(name, pred, (s, a, t), s, depth, a, kind="step property")]
        if tripped is not None and not failed:
            raise self.unsteady(tripped, "step property", s, depth, act=a)
        self.ledger.step_checks = [c for c in self.ledger.step_checks if c[0] not in failed]
        for name in failed:
            self._record(name, ALWAYS, sfp, (i, h), depth + 1,
                         self.message(name, f"is broken by the last step, {a}"))

    def message(self, name, what) -> str:
        return self.ledger.message(name, what)

    def _record(self, name, kind, fp, extra, length, message) -> None:
        if not self.ledger.add_found((name, kind, fp, extra, message)):
            return
        if self.keep_going:
            return
        self.ledger.stopped = True
        if length > self.ledger.level and self.check_deadlock and name != DEADLOCK and self.frontier_iter is not None:
            self._scan_for_shorter_deadlock()
        raise StopSearch

    def _scan_for_shorter_deadlock(self) -> None:
        """A violation one level deeper was found: a deadlock in the rest of the
        current level has a shorter path, so it is reported instead."""
        model = self.model
        depth = self.ledger.level
        for sfp, s in self.frontier_iter:
            try:
                if not model.within_boundary(s):
                    continue
                acts = model.actions(s)
                if type(acts) is not list:
                    acts = self.as_list(acts, s, depth)
                if acts or model.is_terminal(s):
                    continue
            except ModelError:
                raise
            except USER_CODE_ERRORS as e:
                raise self.error("actions(state) or is_terminal(state)", s, depth, e) from e
            self.ledger.found = [(DEADLOCK, "deadlock", sfp, None,
                           "no action is enabled in the last state and model.is_terminal() is False")]
            self.ledger.found_names = {DEADLOCK}
            return

    def _report(self, queue, depth) -> None:
        now = time.perf_counter()
        self.last_report = now
        elapsed = now - self.start
        distinct = len(self.visited)
        rate = distinct / elapsed if elapsed > 0 else 0.0
        self.progress.write(
            f"progress: distinct={distinct} generated={sum(self.ledger.counts.values())} "
            f"depth={depth} queue={queue} states/s={rate:.0f} elapsed={elapsed:.1f}s\n"
        )
        try:
            self.progress.flush()
        except Exception:
            pass

    # -- counterexamples ----------------------------------------------------------

    def violation(self, name, kind, fp, extra, message) -> Violation:
        path = self.rebuild(fp)
        if extra is not None:
            i, h = extra
            prev = path[-1].state
            acts = list(self.model.actions(prev))
            act = acts[i]
            t = self.model.next_state(prev, act)
            got = self.fp(t)
            if got != h:
                raise self.nondeterministic(act, prev, len(path) - 1, h, got)
            path.append(Step(act, t, got))
        return Violation(property=name, kind=kind, path=path, message=message)

    def rebuild(self, fp) -> list[Step]:
        """Follow parent links back to an initial state, then replay forwards."""
        chain = []
        visited = self.visited
        while fp is not None:
            parent, idx = visited[fp]
            chain.append((fp, idx))
            fp = parent
        chain.reverse()
        return replay_chain(self.model, self.fp, chain)
