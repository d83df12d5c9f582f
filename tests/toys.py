"""Toy models with answers known by hand, for the engines and the CLI.

No tests here, only models.  Every number quoted in a docstring is asserted by
tests/test_bfs.py (and cross-checked there by an independent graph search).

- ``Grid(n)``: two counters x, y in 0..n, each incremented: (n+1)^2 states,
  2n(n+1) transitions, depth 2n.  ``k`` adds the invariant ``x + y != k``, whose
  shortest counterexample is IncX * min(k, n) then IncY * (k - min(k, n)).
- ``DieHard(solve)``: the 3- and 5-gallon jugs: 16 states, 96 transitions; the
  witness ``Solved`` (big jug holds 4) is first reached at depth 6, and with
  ``solve=True`` the invariant ``BigNot4`` fails with the 6-step solution.
- ``Chain(n, terminal)``: 0 -> 1 -> ... -> n; n deadlocks unless terminal.
- ``Glitch(n, at)``: a counter whose ``Glitch`` action at ``at`` steps back by one;
  the step property ``NeverDecreases`` fails on Inc * at, Glitch.
- ``Raising(n, at)``: like Chain, but the ``Boom`` action enabled at ``at`` raises.
- ``Vacuous(n)``: a Grid with a witness that is never reached.
- ``Unbounded(limit)``: an infinite counter cut by ``within_boundary``.
- ``Graph(...)``: an explicit little graph, for hand-made corner cases.
- ``SetState()``: a model that puts a frozenset in a state (contract breach).
- ``FAMILY``: a ModelFamily ``toys`` over these, for CLI tests
  (``--model tests.toys:FAMILY``).
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

from checker.model import Model, ModelFamily, Parameter, Preset, action, always, sometimes


class Pos(NamedTuple):
    x: int
    y: int


INC_X = action("IncX")
INC_Y = action("IncY")


class Grid(Model):
    """Two counters x, y in 0..n; (n, n) is terminal."""

    name, version = "grid", "1"

    def __init__(self, n: int = 3, k: int | None = None, corner_terminal: bool = True):
        self.n, self.k, self.corner_terminal = n, k, corner_terminal

    def init_states(self):
        return [Pos(0, 0)]

    def actions(self, s):
        n = self.n
        if s.x < n:
            if s.y < n:
                return [INC_X, INC_Y]
            return [INC_X]
        if s.y < n:
            return [INC_Y]
        return []

    def next_state(self, s, a):
        if a.name == "IncX":
            return Pos(s.x + 1, s.y)
        return Pos(s.x, s.y + 1)

    def is_terminal(self, s):
        return self.corner_terminal and s.x == self.n and s.y == self.n

    def properties(self):
        n, k = self.n, self.k
        props = [
            always("InBounds", lambda s: 0 <= s.x <= n and 0 <= s.y <= n, "both counters stay in 0..n"),
            sometimes("ReachCorner", lambda s: s.x == n and s.y == n, "both counters can reach n"),
        ]
        if k is not None:
            props.append(always("SumNotK", lambda s: s.x + s.y != k, f"x + y never equals {k} (false if {k} <= 2n)"))
        return props

    def describe(self, s):
        return s._asdict()

    def config(self):
        return {"n": self.n, "k": self.k}


class Vacuous(Grid):
    """A Grid whose witness ``OffGrid`` (x > n) can never be reached."""

    name = "vacuous"

    def properties(self):
        n = self.n
        return [
            always("InBounds", lambda s: 0 <= s.x <= n and 0 <= s.y <= n, "both counters stay in 0..n"),
            sometimes("OffGrid", lambda s: s.x > n, "unreachable on purpose"),
        ]


class Jugs(NamedTuple):
    small: int   # 3-gallon jug
    big: int     # 5-gallon jug


DIEHARD_ACTIONS = tuple(action(n) for n in (
    "FillSmall", "FillBig", "EmptySmall", "EmptyBig", "SmallToBig", "BigToSmall"))


class DieHard(Model):
    """The jugs puzzle as in TLA+'s DieHard: every action is always enabled."""

    name, version = "diehard", "1"

    def __init__(self, solve: bool = False):
        self.solve = solve

    def init_states(self):
        return [Jugs(0, 0)]

    def actions(self, s):
        return DIEHARD_ACTIONS  # a tuple: the engine takes lists and tuples as they are

    def next_state(self, s, a):
        small, big = s
        name = a.name
        if name == "FillSmall":
            return Jugs(3, big)
        if name == "FillBig":
            return Jugs(small, 5)
        if name == "EmptySmall":
            return Jugs(0, big)
        if name == "EmptyBig":
            return Jugs(small, 0)
        if name == "SmallToBig":
            pour = min(small, 5 - big)
            return Jugs(small - pour, big + pour)
        if name == "BigToSmall":
            pour = min(big, 3 - small)
            return Jugs(small + pour, big - pour)
        raise ValueError(f"unknown action {a}")

    def properties(self):
        props = [
            always("TypeOK", lambda s: 0 <= s.small <= 3 and 0 <= s.big <= 5, "jugs hold what fits"),
            sometimes("Solved", lambda s: s.big == 4, "the big jug can hold exactly 4 gallons"),
        ]
        if self.solve:
            props.append(always("BigNot4", lambda s: s.big != 4, "false: its counterexample solves the puzzle"))
        return props

    def describe(self, s):
        return s._asdict()

    def config(self):
        return {"solve": self.solve}


class Chain(Model):
    """0 -> 1 -> ... -> n by ``Inc``; n has no action: terminal or a deadlock."""

    name, version = "chain", "1"

    def __init__(self, n: int = 3, terminal: bool = False):
        self.n, self.terminal = n, terminal

    def init_states(self):
        return [0]

    def actions(self, s):
        return [action("Inc")] if s < self.n else []

    def next_state(self, s, a):
        return s + 1

    def is_terminal(self, s):
        return self.terminal and s == self.n

    def properties(self):
        n = self.n
        return [always("AtMostN", lambda s: s <= n, "never past n")]

    def describe(self, s):
        return {"value": s}


class Glitch(Model):
    """A counter in 0..n; at ``at`` the action ``Glitch`` steps back by one."""

    name, version = "glitch", "1"

    def __init__(self, n: int = 5, at: int = 3):
        self.n, self.at = n, at

    def init_states(self):
        return [0]

    def actions(self, s):
        acts = [action("Inc", by=1)] if s < self.n else []
        if s == self.at:
            acts.append(action("Glitch", by=-1))
        return acts

    def next_state(self, s, a):
        return s + a.get("by")

    def is_terminal(self, s):
        return s == self.n

    def properties(self):
        return [always("NeverDecreases", lambda s, a, t: t >= s, "the counter only grows", step=True)]

    def describe(self, s):
        return {"value": s}


class Raising(Model):
    """0 -> ... -> n by ``Inc``; at ``at`` the action ``Boom`` is enabled and its
    next_state raises ZeroDivisionError (a model bug)."""

    name, version = "raising", "1"

    def __init__(self, n: int = 5, at: int = 2):
        self.n, self.at = n, at

    def init_states(self):
        return [0]

    def actions(self, s):
        acts = [action("Inc")] if s < self.n else []
        if s == self.at:
            acts.append(action("Boom", at=s))
        return acts

    def next_state(self, s, a):
        if a.name == "Boom":
            return s // 0
        return s + 1

    def is_terminal(self, s):
        return s == self.n

    def describe(self, s):
        return {"value": s}


class Unbounded(Model):
    """An infinite counter; ``within_boundary`` stops expansion at ``limit``."""

    name, version = "unbounded", "1"

    def __init__(self, limit: int = 10):
        self.limit = limit

    def init_states(self):
        return [0]

    def actions(self, s):
        return [action("Inc")]

    def next_state(self, s, a):
        return s + 1

    def within_boundary(self, s):
        return s < self.limit


class Graph(Model):
    """An explicit graph: ``edges`` maps a state (a str) to its (action name,
    next state) pairs in order; ``bad`` states break the invariant ``NotBad``."""

    name, version = "graph", "1"

    def __init__(self, edges: Mapping[str, list], init=("a",), bad=(), terminal=(), witness=None):
        self.edges, self.init, self.bad, self.terminal, self.witness = dict(edges), tuple(init), tuple(bad), tuple(terminal), witness

    def init_states(self):
        return list(self.init)

    def actions(self, s):
        return [action(name, to=t) for name, t in self.edges.get(s, ())]

    def next_state(self, s, a):
        return a.get("to")

    def is_terminal(self, s):
        return s in self.terminal

    def properties(self):
        bad = self.bad
        props = [always("NotBad", lambda s: s not in bad, "no bad state is reachable")]
        if self.witness is not None:
            w = self.witness
            props.append(sometimes("Witness", lambda s: s == w, f"{w} is reachable"))
        return props


class PlacedGraph(Graph):
    """A Graph whose states the Spark engine places by ``place[state]``
    (Model.partition_key; a state not in ``place`` has the key ``""``): a few keys
    put most states on one partition, one key all of them."""

    name, version = "placed-graph", "1"

    def __init__(self, edges: Mapping[str, list], place: Mapping[str, Any], **kw):
        super().__init__(edges, **kw)
        self.place = dict(place)

    def partition_key(self, s):
        return self.place.get(s, "")


class SetState(Model):
    """Breaks the contract: its successor state holds a frozenset."""

    name, version = "setstate", "1"

    def init_states(self):
        return [(0, ())]

    def actions(self, s):
        return [action("Add")] if s[0] == 0 else []

    def next_state(self, s, a):
        return (1, frozenset({1, 2}))

    def is_terminal(self, s):
        return True


# ---------------------------------------------------------------------------------

TOYS = ("diehard", "grid", "chain", "glitch", "raise", "vacuous", "unbounded")


class ExactGrid(Grid):
    """The grid with its own fingerprints (Model.exact_fingerprint): x and y below 2**11."""

    def exact_fingerprint(self, s):
        return s.x << 11 | s.y


class ExactDieHard(DieHard):
    def exact_fingerprint(self, s):
        return s.small << 4 | s.big


class ExactChain(Chain):
    def exact_fingerprint(self, s):
        return s


class ToysFamily(ModelFamily):
    """The toy models as one family, for CLI tests: ``--model tests.toys:FAMILY``."""

    name, version = "toys", "1"
    parameters = {
        "toy": Parameter("toy", "diehard", "which toy model", choices=TOYS),
        "n": Parameter("n", 3, "size: grid side, chain/glitch/raise length, unbounded limit", minimum=0, maximum=1000),
        "k": Parameter("k", -1, "grid: add the invariant x + y != k (-1: no such invariant)", minimum=-1, maximum=2000),
        "solve": Parameter("solve", False, "diehard: add the invariant BigNot4 (violated: the puzzle's solution)"),
        "terminal": Parameter("terminal", False, "chain: the last state is terminal (else it deadlocks)"),
        "exact": Parameter("exact", False, "diehard, grid, chain: the model gives its own exact fingerprints "
                                           "(Model.exact_fingerprint) instead of blake2b digests"),
    }
    presets = {
        "tiny": Preset("tiny", "a 3x3 grid: 9 states, everything holds", {"toy": "grid", "n": 2}),
        "default": Preset("default", "the die-hard jugs: 16 states, everything holds, Solved at depth 6", {}),
        "broken": Preset("broken", "the die-hard jugs with BigNot4: violated after 6 steps", {"solve": True}),
        "deadlock": Preset("deadlock", "a chain 0..3 whose end is not terminal: deadlock after 3 steps",
                           {"toy": "chain", "n": 3}),
        "crash": Preset("crash", "next_state raises on Boom at 2: a ModelError", {"toy": "raise", "n": 5}),
    }
    default_preset = "default"

    def build(self, config: Mapping[str, Any]) -> Model:
        toy = config.get("toy", "diehard")
        n = config.get("n", 3)
        exact = bool(config.get("exact", False))
        if toy == "diehard":
            return (ExactDieHard if exact else DieHard)(solve=bool(config.get("solve", False)))
        if toy == "grid":
            k = config.get("k", -1)
            return (ExactGrid if exact else Grid)(n, None if k < 0 else k)
        if toy == "chain":
            return (ExactChain if exact else Chain)(n, terminal=bool(config.get("terminal", False)))
        if toy == "glitch":
            if n < 1:
                raise ValueError("toy=glitch needs n >= 1")
            return Glitch(n, at=n // 2)
        if toy == "raise":
            if n < 1:
                raise ValueError("toy=raise needs n >= 1")
            return Raising(n, at=min(2, n - 1))
        if toy == "vacuous":
            return Vacuous(n)
        if toy == "unbounded":
            return Unbounded(n)
        raise ValueError(f"unknown toy {toy!r}; pick one of {', '.join(TOYS)}")

    def action_docs(self) -> Mapping[str, str]:
        return {
            "IncX": "grid: x += 1 (while x < n)",
            "IncY": "grid: y += 1 (while y < n)",
            "FillSmall": "diehard: fill the 3-gallon jug",
            "FillBig": "diehard: fill the 5-gallon jug",
            "EmptySmall": "diehard: empty the 3-gallon jug",
            "EmptyBig": "diehard: empty the 5-gallon jug",
            "SmallToBig": "diehard: pour the small jug into the big one until one is empty or full",
            "BigToSmall": "diehard: pour the big jug into the small one until one is empty or full",
            "Inc": "chain/glitch/raise/unbounded: counter += 1",
            "Glitch": "glitch: counter -= 1 (a bug the step property catches)",
            "Boom": "raise: next_state raises ZeroDivisionError (a model bug)",
        }

    def property_docs(self):
        """Every property of every toy, once each."""
        seen, out = set(), []
        for model in (DieHard(solve=True), Grid(3, 3), Chain(3), Glitch(3, 1), Vacuous(3)):
            for p in model.properties():
                if p.name not in seen:
                    seen.add(p.name)
                    out.append(p)
        return out


FAMILY = ToysFamily()
