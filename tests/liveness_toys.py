"""Toy models for liveness, with lassos known by hand (no tests here).

- ``Relay(drops)``: a sender sends (``Send``), the network delivers (``Deliver``)
  or drops the message (``Drop``, a fault: not fair).  ``Delivered`` is
  ``[]<>delivered``.  With unbounded drops (``drops=-1``) the behaviour
  Send, Drop, Send, Drop... is fair (``Deliver`` is enabled only after a ``Send``,
  so it is not *continuously* enabled), so ``Delivered`` fails with the lasso
  stem [] loop [Send, Drop]; with a drop budget the cycle is gone and it holds.
- ``Flap(fair_finish)``: states 0 and 1 flap into each other, ``Finish``
  (enabled in both) reaches 2.  With ``Finish`` fair, the flapping cycle keeps it
  enabled and never takes it: not a fair behaviour, so ``Done`` holds.  With
  ``Finish`` unfair, ``Done`` fails with stem [] loop [Flap, Flap].
- ``Grant(grant_fair)``: ``Request`` then ``Grant``; ``Granted`` is the leads-to
  ``requested ~> granted``; with ``Grant`` unfair the behaviour stops after
  ``Request`` (a stutter: only an unfair action is enabled).
- ``FAMILY``: these as a model family ``liveness-toys``
  (``--model tests.liveness_toys:FAMILY``).
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

from checker.model import (
    Model,
    ModelFamily,
    Parameter,
    Preset,
    action,
    always,
    eventually,
)


class Msg(NamedTuple):
    phase: str        # idle, sent, delivered
    drops: int        # drops left; -1 = unbounded


class Relay(Model):
    name, version = "relay", "1"

    def __init__(self, drops: int = -1):
        self.drops = drops

    def init_states(self):
        return [Msg("idle", self.drops)]

    def actions(self, s):
        if s.phase == "idle":
            return [action("Send")]
        if s.phase == "sent":
            out = [action("Deliver")]
            if s.drops != 0:
                out.append(action("Drop"))
            return out
        return []

    def next_state(self, s, a):
        if a.name == "Send":
            return s._replace(phase="sent")
        if a.name == "Deliver":
            return s._replace(phase="delivered")
        return Msg("idle", s.drops - 1 if s.drops > 0 else s.drops)

    def fair(self, a):
        return a.name != "Drop"

    def is_terminal(self, s):
        return s.phase == "delivered"

    def properties(self):
        return [
            always("PhaseOK", lambda s: s.phase in ("idle", "sent", "delivered"), "a known phase"),
            eventually("Delivered", lambda s: s.phase == "delivered",
                       "the message is delivered: drops are faults, so a bounded number of them "
                       "cannot stop delivery, an unbounded number can"),
        ]

    def describe(self, s):
        return {"phase": s.phase, "drops_left": s.drops}

    def config(self):
        return {"toy": "relay", "drops": self.drops}


class Flap(Model):
    name, version = "flap", "1"

    def __init__(self, fair_finish: bool = True):
        self.fair_finish = fair_finish

    def init_states(self):
        return [0]

    def actions(self, s):
        return [action("Flap"), action("Finish")] if s < 2 else []

    def next_state(self, s, a):
        return 1 - s if a.name == "Flap" else 2

    def fair(self, a):
        return self.fair_finish or a.name != "Finish"

    def is_terminal(self, s):
        return s == 2

    def properties(self):
        return [eventually("Done", lambda s: s == 2, "the flapping ends")]

    def describe(self, s):
        return {"at": s}


class Req(NamedTuple):
    requested: bool
    granted: bool


class Grant(Model):
    name, version = "grant", "1"

    def __init__(self, grant_fair: bool = True):
        self.grant_fair = grant_fair

    def init_states(self):
        return [Req(False, False)]

    def actions(self, s):
        if not s.requested:
            return [action("Request")]
        return [] if s.granted else [action("Grant")]

    def next_state(self, s, a):
        return s._replace(requested=True) if a.name == "Request" else s._replace(granted=True)

    def fair(self, a):
        return self.grant_fair or a.name != "Grant"

    def is_terminal(self, s):
        return s.granted

    def properties(self):
        return [eventually("Granted", lambda s: s.granted, "every request is granted",
                           trigger=lambda s: s.requested)]

    def describe(self, s):
        return s._asdict()


class LivenessToys(ModelFamily):
    name, version = "liveness-toys", "1"
    parameters = {
        "toy": Parameter("toy", "relay", "which toy", choices=("relay", "flap", "grant")),
        "drops": Parameter("drops", -1, "relay: drops the network may make (-1: unbounded)", -1, 5),
        "fair": Parameter("fair", True, "flap: Finish is fair; grant: Grant is fair"),
    }
    presets = {
        "lasso": Preset("lasso", "relay with unbounded drops: Delivered fails (Send, Drop for ever)", {}),
        "bounded": Preset("bounded", "relay with 2 drops: Delivered holds", {"drops": 2}),
        "flap": Preset("flap", "Finish fair: the flapping cycle is not fair, Done holds", {"toy": "flap"}),
        "flap-unfair": Preset("flap-unfair", "Finish unfair: Done fails (Flap for ever)",
                              {"toy": "flap", "fair": False}),
        "stutter": Preset("stutter", "Grant unfair: the request may never be granted",
                          {"toy": "grant", "fair": False}),
    }
    default_preset = "lasso"

    def build(self, config: Mapping[str, Any]) -> Model:
        if config["toy"] == "relay":
            return Relay(config["drops"])
        if config["toy"] == "flap":
            return Flap(config["fair"])
        return Grant(config["fair"])


FAMILY = LivenessToys()
