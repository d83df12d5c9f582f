"""The conformance driver's fault injector: which faults it may still inject.

Faults are bounded by the same parameters as the model's (docs/model.md "Actors,
faults and healing": crashes, session expiries, controller failovers, ISR shrinks,
unclean elections, controlled shutdowns, topic deletions, records the producers may
write, and one refused produce); healing is never bounded.  ``enabled`` asks the
broker whether it can do an action and this budget whether the fault may still
happen: with both, the driver's enabled set is exactly the model's.

Losing the active controller (a crash, a session expiry or the final stop of the
broker that holds /controller) is also a controller failover (Kafka's
``KafkaController.onControllerFailover`` on another broker), so it spends that bound
too.  A produce that the leader refuses (``Partition.appendRecordsToLeader``:
NotEnoughReplicas) is allowed once: more teaches nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from impl.driverbase import ClusterDriver


class FaultBudget:
    """What the test environment may still inject: the model's bounds (docs/model.md
    "Actors, faults and healing": faults are bounded, healing is not).  This is the driver's
    bookkeeping, not the broker's; it is not observed."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.records = int(config.get("max_records", 0))
        self.crashes = int(config.get("max_crashes", 1))
        self.session_expiries = int(config.get("max_session_expiries", 1))
        self.controller_failovers = int(config.get("max_controller_failovers", 1))
        self.isr_shrinks = int(config.get("max_isr_shrinks", 1))
        self.unclean_elections = int(config.get("max_unclean_elections", 1)) \
            if config.get("unclean_leader_election", False) else 0
        self.controlled_shutdowns = int(config.get("max_controlled_shutdowns", 0))
        self.topic_deletions = int(config.get("max_topic_deletions", 0))
        self.write_refused = False       # a producer sees NotEnoughReplicas once: more teaches nothing


class FaultInjector(ClusterDriver):
    """Mixed into the driver: the budget's check and its spending, per action.
    ``KafkaImplementation.__init__`` sets ``budget``."""

    def _may_fail(self, b: int) -> bool:
        """Losing the active controller is a controller failover: that bound counts too."""
        return self.cluster.admin.get_controller_id() != b or self.budget.controller_failovers > 0

    def _within_budget(self, act) -> bool:
        bud, name = self.budget, act.name
        if name == "CrashBroker":
            return bud.crashes > 0 and self._may_fail(act.get("broker"))
        if name == "ExpireSession":
            return bud.session_expiries > 0 and self._may_fail(act.get("broker"))
        if name == "ShutdownBroker":
            return self._may_fail(act.get("broker"))
        if name == "ShrinkIsr":
            return bud.isr_shrinks > 0
        if name == "ElectLeader":
            return act.get("clean") or bud.unclean_elections > 0
        if name == "ControlledShutdown":   # only while the asker's final stop can still happen
            return bud.controlled_shutdowns > 0 and self._may_fail(act.get("broker"))
        if name == "DeleteTopic":
            return bud.topic_deletions > 0
        if name == "DeleteController":
            return bud.controller_failovers > 0
        if name == "Produce":
            if self._rm(act.get("leader")).would_refuse(self._tp(act), act.get("acks")):
                return not bud.write_refused
            return bud.records > 0
        return True

    def _spend(self, act) -> None:
        bud, name = self.budget, act.name
        if name in ("CrashBroker", "ExpireSession", "ShutdownBroker"):
            if self.cluster.admin.get_controller_id() == act.get("broker"):
                bud.controller_failovers -= 1
            if name == "CrashBroker":
                bud.crashes -= 1
            elif name == "ExpireSession":
                bud.session_expiries -= 1
        elif name == "ShrinkIsr":
            bud.isr_shrinks -= 1
        elif name == "ElectLeader" and not act.get("clean"):
            bud.unclean_elections -= 1
        elif name == "ControlledShutdown":
            bud.controlled_shutdowns -= 1
        elif name == "DeleteTopic":
            bud.topic_deletions -= 1
        elif name == "DeleteController":
            bud.controller_failovers -= 1
        elif name == "Produce":
            if self._rm(act.get("leader")).would_refuse(self._tp(act), act.get("acks")):
                bud.write_refused = True
            elif self._leads(act.get("leader"), self._tp(act)):
                bud.records -= 1          # NOT_LEADER_FOR_PARTITION writes nothing
