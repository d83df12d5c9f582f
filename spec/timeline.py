"""The Kafka family's timeline: one lane per broker and one for ZooKeeper.

A request a controller sends (LeaderAndIsr, StopReplica, and UpdateMetadata once the
model has it) is drawn as an arrow from the sending controller's broker to the
receiving broker, at the step where it is *delivered*: the step a broker's
``KafkaApis.handleLeaderAndIsrRequest`` would run.  The sender is the broker that was
elected with the request's controller epoch, which the path itself tells (each
``ElectController`` step bumps ``/controller_epoch``).  ZooKeeper's lane carries what
changed there: a new ``/controller``, and leader elections and ISR changes of each
partition's state znode, drawn as an arrow from the broker whose step wrote them (a
controller's election, a leader's ISR shrink), so a zombie's write stands out.  A broker's lane carries its crashes, restarts, session
expiries and resignations.  Every other step gets a small mark on the lane of the
broker that took it, so each step of a path shows somewhere.

Everything is read from ``KafkaModel.describe`` views, the form a trace stores, so a
saved trace draws without rebuilding a state.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from checker.timeline import MARK, MESSAGE, Event, Timeline

ZK = "ZooKeeper"
FAULTS = {
    "CrashBroker": "crash",
    "RestartBroker": "restart",
    "ExpireSession": "session expired",
    "RegisterBroker": "registers again",
    "ShutdownBroker": "shut down",
    "Resign": "resigns",
}


def lane(b: Any) -> str:
    return f"broker {b}"


def _get(view: Mapping[str, Any], *keys: str) -> Any:
    for k in keys:
        if not isinstance(view, Mapping) or k not in view:
            return None
        view = view[k]
    return view


class KafkaTimeline(Timeline):
    """Kafka's lanes and events (see the module docstring)."""

    def lanes(self, views: Sequence[Mapping[str, Any]]) -> list[str]:
        brokers = sorted((_get(views[0], "broker") or {}).keys(), key=int) if views else []
        return [ZK, *(lane(b) for b in brokers)]

    def events(self, views: Sequence[Mapping[str, Any]], actions: Sequence[Mapping[str, Any]]) -> list[Event]:
        out: list[Event] = []
        sender: dict[int, str] = {}          # controller epoch -> the lane of the broker elected with it
        if views:
            for b, bv in (_get(views[0], "broker") or {}).items():
                epoch = _get(bv, "controller", "epoch")
                if epoch is not None:
                    sender[epoch] = lane(b)
        for i, act in enumerate(actions, 1):
            before, after = views[i - 1], views[i]
            name, args = act["name"], act.get("args", {})
            actor = next((args[k] for k in ("broker", "controller", "leader") if k in args), None)
            zk_before, zk_after = _get(before, "zk", "controller_epoch"), _get(after, "zk", "controller_epoch")
            if zk_after is not None and zk_before is not None and zk_after > zk_before:
                who = _get(after, "zk", "controller")
                sender[zk_after] = lane(who)
                out.append(Event(i, MARK, lane(who), f"controller, epoch {zk_after}", category="controller",
                                 detail=f"{name}: broker {who} creates /controller and bumps /controller_epoch "
                                        f"to {zk_after}"))
                out.append(Event(i, MARK, ZK, f"/controller = {who}, epoch {zk_after}", category="controller"))
            if name.startswith("Deliver") and "broker" in args:
                out.append(self._delivery(i, name, args, before, after, sender))
            elif name in FAULTS and actor is not None:
                out.append(Event(i, MARK, lane(actor), FAULTS[name], category="fault", detail=_text(name, args)))
            writer = lane(actor) if actor is not None and lane(actor) in self.lanes(views) else ""
            out.extend(self._znode_changes(i, name, args, before, after, writer))
            if not any(e.step == i for e in out) and actor is not None and lane(actor) in self.lanes(views):
                out.append(Event(i, MARK, lane(actor), name, category="step", detail=_text(name, args)))
        return out

    @staticmethod
    def _delivery(i: int, name: str, args: Mapping[str, Any], before: Mapping[str, Any],
                  after: Mapping[str, Any], sender: Mapping[int, str]) -> Event:
        request = name[len("Deliver"):]
        b, p = args["broker"], args.get("partition")
        fields = [f"p{p}"] if p is not None else []
        if "leader" in args:
            fields.append(f"leader {args['leader']}")
        if "leader_epoch" in args:
            fields.append(f"epoch {args['leader_epoch']}")
        if "isr" in args:
            fields.append("isr [" + ", ".join(str(x) for x in args["isr"]) + "]")
        if "delete" in args:
            fields.append(f"delete={str(args['delete']).lower()}")
        label = f"{request} {' '.join(fields)}".strip()
        epoch = args.get("controller_epoch")
        applied = _broker_state_changed(before, after, b)
        changed = "the broker applied it" if applied else \
            "the broker rejected or ignored it (nothing but the request in flight changed)"
        detail = f"{_text(name, args)}: sent with controller epoch {epoch}; {changed}"
        source = sender.get(epoch)
        if source is None or source == lane(b):
            # A controller's request to its own broker, or a sender the path does not show.
            return Event(i, MARK, lane(b), label, category="request" if applied else "rejected", detail=detail)
        return Event(i, MESSAGE, lane(b), label, source=source,
                     category="request" if applied else "rejected", detail=detail)

    @staticmethod
    def _znode_changes(i: int, name: str, args: Mapping[str, Any], before: Mapping[str, Any],
                       after: Mapping[str, Any], writer: str) -> list[Event]:
        """Leader and ISR changes of the partition state znodes: an arrow from the broker
        whose step wrote them (a controller's election, a leader's ISR change), else a mark."""
        out = []

        def event(label: str, category: str, detail: str) -> Event:
            if writer:
                return Event(i, MESSAGE, ZK, label, source=writer, category=category, detail=detail)
            return Event(i, MARK, ZK, label, category=category, detail=detail)

        old_parts = _get(before, "zk", "partition") or {}
        new_parts = _get(after, "zk", "partition") or {}
        for p, new in new_parts.items():
            old = old_parts.get(p)
            if new == old:
                continue
            old_leader = _get(old, "leader") if old else None
            new_leader = _get(new, "leader") if new else None
            if new is not None and (old is None or old_leader != new_leader):
                how = f" ({args['strategy']})" if "strategy" in args else ""
                gone = "none" if new_leader == -1 else new_leader
                was = "none" if old_leader in (None, -1) else old_leader
                out.append(event(f"p{p} leader {was} → {gone}{how}", "election",
                                  f"{_text(name, args)}: partition {p} leader {was} -> {gone}, "
                                  f"leader epoch {_get(new, 'leader_epoch')}"))
            if new is not None and old is not None and _get(old, "isr") != _get(new, "isr"):
                out.append(event(f"p{p} ISR {_get(old, 'isr')} → {_get(new, 'isr')}", "isr",
                                  f"{_text(name, args)}: partition {p} ISR {_get(old, 'isr')} -> {_get(new, 'isr')}"))
        return out


def _broker_state_changed(before: Mapping[str, Any], after: Mapping[str, Any], b: Any) -> bool:
    """Did the delivery change the broker beyond removing the request from its inbox?"""
    old = dict(_get(before, "broker", str(b)) or {})
    new = dict(_get(after, "broker", str(b)) or {})
    old.pop("in_flight", None)
    new.pop("in_flight", None)
    return old != new


def _text(name: str, args: Mapping[str, Any]) -> str:
    return f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"
