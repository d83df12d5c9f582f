"""Counterexamples and model errors found on the Spark executors, re-derived on
the driver.

The partitions report a violation or a model error by fingerprints and action
indices only.  The driver follows the parent links back to an initial state and
replays the model forwards, fingerprint by fingerprint, as the local engine's
``checker.search.Search`` rebuilds its counterexamples; a model error is raised
again by making the very calls the local engine makes at that state, so that the
user sees the same ``ModelError`` with the model's exception chained.
"""

from __future__ import annotations

from typing import Any, Callable

from checker.errors import USER_CODE_ERRORS, ModelError
from checker.fingerprint import format_fingerprint
from checker.model import Model
from checker.result import Step, Violation
from checker.search import Search, replay_chain
from checker.spark.tasks import MAX_INDEX, SAID

Checks = list   # [(property name, predicate)], the properties still checked at a key


class Rederive:
    """Rebuilds paths and re-raises errors for one Spark run.

    ``links(fps)`` returns the parent links ``{fp: (parent, action index)}`` of a
    set of fingerprints (an initial state is its own parent), wherever the run
    keeps them (the driver, or the partitions)."""

    def __init__(self, model: Model, search: Search, fp: Callable[[Any], int],
                 links: Callable[[set], dict]) -> None:
        self.model = model
        self.search = search
        self.fp = fp
        self.links = links

    def rebuild(self, fp: int) -> list[Step]:
        """Follow the parent links back to an initial state, then replay forwards
        (checker.search.Search.rebuild, with the links on the executors)."""
        chain = []
        cur = fp
        while True:
            link = self.links({cur}).get(cur)
            if link is None:
                raise RuntimeError(f"kmc spark engine: no parent link for {format_fingerprint(cur)}")
            par, idx = link
            chain.append((cur, idx))
            if par == cur:
                break
            cur = par
        chain.reverse()
        return replay_chain(self.model, self.fp, chain)

    def violation(self, name, kind, fp, extra, message) -> Violation:
        """The Violation of a found record (checker.search's shape): the path to
        ``fp``, plus the violating step ``extra = (action index, fingerprint)``."""
        path = self.rebuild(fp)
        if extra is not None:
            i, h = extra
            prev = path[-1].state
            act = list(self.model.actions(prev))[i]
            t = self.model.next_state(prev, act)
            got = self.fp(t)
            if got != h:
                raise self.search.nondeterministic(act, prev, len(path) - 1, h, got)
            path.append(Step(act, t, got))
            if message is None:
                message = self.search.message(name, f"is broken by the last step, {act}")
        return Violation(property=name, kind=kind, path=path, message=message)

    def raise_error(self, err: tuple, level: int, steps: Checks, wits: Checks, props: Checks,
                    scan: bool = False, boundary: bool = False):
        """Re-derive a model error found on an executor: rebuild the state from the
        parent links and make the calls checker.search makes there, with the
        properties it still checks there (``steps``, ``wits``, ``props``), so that
        the same ModelError is raised with the model's exception chained.  If the
        model does not fail again (it is not deterministic), raise the executor's
        message; as for a predicate that the executor found not deterministic
        (``kind`` SAID), whose message is already the local engine's."""
        key, phase, prop, kind, fp, idx, msg = err
        if kind == SAID:
            raise ModelError(msg)
        model = self.model
        d = level
        try:
            s = self.rebuild(fp)[-1].state
        except ModelError:
            raise
        except USER_CODE_ERRORS:  # noqa: BLE001
            raise ModelError(msg) from None
        if kind in ("state", "terminal"):
            self._state_error(s, d, kind, msg, scan, boundary)
        a = list(model.actions(s))[idx]
        if kind == "trans":
            self._transition_error(s, a, d, prop, msg, steps)
        self._new_state_error(s, a, d, msg, wits, props)

    def _state_error(self, s, d: int, kind: str, msg: str, scan: bool, boundary: bool):
        """Errors of within_boundary, actions and is_terminal at state ``s``."""
        model, search = self.model, self.search
        if scan:
            try:
                if not model.within_boundary(s):
                    raise ModelError(msg)
                acts = model.actions(s)
                if type(acts) is not list:
                    acts = search.as_list(acts, s, d)
                if not acts:
                    model.is_terminal(s)
            except ModelError:
                raise
            except USER_CODE_ERRORS as e:  # noqa: BLE001
                raise search.error("actions(state) or is_terminal(state)", s, d, e) from e
            raise ModelError(msg)
        within_overridden = getattr(type(model), "within_boundary", None) is not Model.within_boundary
        if within_overridden or boundary:
            try:
                inside = model.within_boundary(s)
            except USER_CODE_ERRORS as e:  # noqa: BLE001
                raise search.error("within_boundary(state)", s, d, e) from e
            if not inside:
                raise ModelError(msg)
        try:
            acts = model.actions(s)
        except USER_CODE_ERRORS as e:  # noqa: BLE001
            raise search.error("actions(state)", s, d, e) from e
        if type(acts) is not list and (boundary or type(acts) is not tuple):
            acts = search.as_list(acts, s, d)
        if kind == "state" and not boundary:
            search.check_actions(s, acts, d)
            if len(acts) > MAX_INDEX:
                raise ModelError(msg)
        if kind == "terminal":
            try:
                model.is_terminal(s)
            except USER_CODE_ERRORS as e:  # noqa: BLE001
                raise search.error("is_terminal(state)", s, d, e) from e
        raise ModelError(msg)

    def _transition_error(self, s, a, d: int, prop: int, msg: str, steps: Checks):
        """Errors of next_state, the successor's checks and encoding, and the step
        properties, on the transition ``(s, a)``."""
        model, search = self.model, self.search
        if prop < 0:
            try:
                t = model.next_state(s, a)
            except USER_CODE_ERRORS as e:  # noqa: BLE001
                raise search.error("next_state(state, action)", s, d, e, act=a) from e
            search.check_successor(s, a, t, d)
            try:
                self.fp(t)
            except USER_CODE_ERRORS as e:  # noqa: BLE001
                raise search.error("encode(state)", t, d + 1, e, via=a) from e
            raise ModelError(msg)
        t = model.next_state(s, a)
        _raise_predicate_error(search, steps, (s, a, t), s, d, "step property", act=a)
        raise ModelError(msg)

    def _new_state_error(self, s, a, d: int, msg: str, wits: Checks, props: Checks):
        """Errors of the witnesses, then the state properties, of the new state
        ``next_state(s, a)``."""
        search = self.search
        t = self.model.next_state(s, a)
        _raise_predicate_error(search, wits, (t,), t, d + 1, "sometimes property", via=a)
        _raise_predicate_error(search, props, (t,), t, d + 1, "property", via=a)
        raise ModelError(msg)


def _raise_predicate_error(search: Search, checks: Checks, args: tuple, state, depth: int, kind: str,
                           act=None, via=None) -> None:
    """Raise the error of the predicate in ``checks`` that raises on ``args``, as the
    local engine meets it: its fast pass stops at the first check that trips (a
    property false, a witness true) or raises, and then its slow path
    (``Search.failed_step_check`` and the like) evaluates every check in order
    through ``call_pred``, so the first that raises is the one reported.  Returns if
    none raises."""
    for name, pred in checks:
        search.call_pred(name, pred, args, state, depth, act, kind=kind, via=via)
