"""The optional timeline hook of the model contract: lanes and events along a path.

A model that can draw its runs as a sequence diagram returns a :class:`Timeline` from
``Model.timeline()``; the explorer (``kmc explore``) and ``kmc replay --html`` then show
one lane per actor and, at each step, the messages delivered between lanes and the
marks (elections, crashes...) the step made.  The checker draws what it is given and
knows nothing of what a lane or an event means: a family decides, the way Stateright's
``Model::as_svg`` lets an actor model draw its own sequence diagram.

Events are computed from the ``describe()`` views along a path and the actions between
them, so the hook reads what a trace already stores and works on a saved trace without
rebuilding a single state.

    >>> class Toy(Timeline):
    ...     def lanes(self, views):
    ...         return ["a", "b"]
    ...     def events(self, views, actions):
    ...         return [Event(step=i + 1, kind=MESSAGE, lane="b", source="a", label=a["name"])
    ...                 for i, a in enumerate(actions)]
    >>> draw = Toy().draw([{}, {}], [{"name": "Ping", "args": {}}])
    >>> draw["lanes"], draw["events"][0]["source"], draw["events"][0]["step"]
    (['a', 'b'], 'a', 1)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

MESSAGE = "message"
"""An arrow from ``source`` to ``lane``: a request delivered at this step."""
MARK = "mark"
"""A labelled point on ``lane``: something that happened there at this step."""
KINDS = (MESSAGE, MARK)


@dataclass(frozen=True)
class Event:
    step: int              # the step (1-based: step i is the action from state i-1 to state i)
    kind: str              # MESSAGE or MARK
    lane: str              # where the event lands: the receiver of a message
    label: str             # a short text shown on the diagram
    source: str = ""       # MESSAGE only: the sender's lane
    category: str = ""     # free text a family uses to colour events ("election", "crash"...)
    detail: str = ""       # a longer text shown on hover

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"timeline event kind must be one of {KINDS}, not {self.kind!r}")
        if (self.kind == MESSAGE) != bool(self.source):
            raise ValueError("a timeline message has a source lane, and only a message has one")


class Timeline:
    """What a family provides to draw a path: override both methods.

    ``views`` are the ``describe()`` views of the states of a path (state 0 first),
    ``actions`` the actions between them as ``{"name": str, "args": {...}}``
    (``len(actions) == len(views) - 1``)."""

    def lanes(self, views: Sequence[Mapping[str, Any]]) -> list[str]:
        raise NotImplementedError

    def events(self, views: Sequence[Mapping[str, Any]], actions: Sequence[Mapping[str, Any]]) -> list[Event]:
        raise NotImplementedError

    def draw(self, views: Sequence[Mapping[str, Any]], actions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The plain-data form the front end reads: ``{"lanes": [...], "events": [...]}``,
        with every event's lane one of the lanes."""
        lanes = list(self.lanes(views))
        events = list(self.events(views, actions))
        known = set(lanes)
        for e in events:
            for lane in (e.lane, e.source):
                if lane and lane not in known:
                    raise ValueError(f"timeline event {e.label!r} at step {e.step} names lane {lane!r}, "
                                     f"which is not one of the lanes {lanes}")
        return {"lanes": lanes, "events": [asdict(e) for e in events]}
