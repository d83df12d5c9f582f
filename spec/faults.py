"""Faults and their healing: crashes, ZooKeeper session expiry (the zombie
controller's origin), restarts, re-registration, controller resignation,
controlled shutdown's final stop, and the admin's delete-topic request.

Faults spend the budget; healing actions (restart, re-register, resign) never do.
"""

from __future__ import annotations

from checker.model import Action, action
from spec import datapath
from spec.state import NO_LEADER, CachingBroker, KafkaState, may_stop, new_broker, put

DOCS = {
    "CrashBroker": "a broker process dies: its ZooKeeper session ends (ephemeral /brokers/ids and "
                   "/controller go), requests in flight to it are dropped, its memory is lost",
    "RestartBroker": "a crashed broker starts with a new session and an empty memory",
    "ExpireSession": "ZooKeeper expires a running broker's session (GC pause, network loss); "
                     "a controller carries on as a zombie until it notices",
    "RegisterBroker": "a broker whose session expired registers /brokers/ids again with a new session",
    "Resign": "a broker that believes it is the controller notices /controller is not its own "
              "and drops its context",
    "ShutdownBroker": "a broker that asked for controlled shutdown stops (a controller only once its event "
                      "in progress is done)",
    "DeleteController": "an operator deletes /controller while the controller's session lives: every "
                        "broker's watch fires and they race to create it again; the old controller resigns "
                        "when it notices (a forced re-election, one controller failover)",
    "CreateTopic": "the admin tool creates the topic (kafka-topics --create writes /brokers/topics/<t> with "
                   "its assignment), after the cluster started",
    "DeleteTopic": "the admin tool writes /admin/delete_topics (acted on only if delete.topic.enable)",
}


def _spend_failover(s: KafkaState, b: int) -> KafkaState:
    if s.zk.controller != b:
        return s
    return s._replace(budget=s.budget._replace(controller_failovers=s.budget.controller_failovers - 1))


def _stop(s: KafkaState, b: int) -> KafkaState:
    """What a process stop does to ZooKeeper and to the broker's memory."""
    s = _spend_failover(s, b)
    zk = s.zk
    sessions = zk.sessions
    if sessions[b] > 0:
        sessions = put(sessions, b, -sessions[b])
    controller = NO_LEADER if zk.controller == b else zk.controller
    old = s.brokers[b]
    dead = new_broker(type(old) is CachingBroker, False, len(old.partitions), datapath.on_stop(old.replicas))
    return s._replace(zk=zk._replace(sessions=sessions, controller=controller),
                      brokers=put(s.brokers, b, dead))


def faults_enabled(m, s: KafkaState, out: list) -> None:
    budget = s.budget
    zk = s.zk
    for b, br in enumerate(s.brokers):
        if br.alive:
            may_fail = may_stop(s, b)
            if budget.crashes > 0 and may_fail:
                out.append(action("CrashBroker", broker=b))
            if zk.sessions[b] > 0:
                if budget.session_expiries > 0 and may_fail:
                    out.append(action("ExpireSession", broker=b))
            else:
                out.append(action("RegisterBroker", broker=b))
            if br.ctx is not None and zk.controller != b:
                out.append(action("Resign", broker=b))
            # Only the session that asked for controlled shutdown stops; a restarted
            # broker is a new process that asked for nothing.  A controller stops only
            # after its event in progress (spec.eventorder.stop_after_event).
            if may_fail and any(cb.ctx is not None and cb.alive and cb.ctx.shutting_down[b]
                                and cb.ctx.live[b] == zk.sessions[b] for cb in s.brokers):
                out.append(action("ShutdownBroker", broker=b))
        else:
            out.append(action("RestartBroker", broker=b))
    if zk.topic and not zk.delete_topic and budget.topic_deletions > 0:
        out.append(action("DeleteTopic"))
    if (m.cfg.create_topic_after_start and not zk.topic
            and budget.topic_deletions == m.cfg.max_topic_deletions):   # once: never re-created after a deletion
        out.append(action("CreateTopic"))
    if m.cfg.controller_deletion and zk.controller != NO_LEADER and budget.controller_failovers > 0:
        out.append(action("DeleteController"))


def crash(m, s: KafkaState, a: Action) -> KafkaState:
    s = _stop(s, a.get("broker"))
    return s._replace(budget=s.budget._replace(crashes=s.budget.crashes - 1))


def shutdown(m, s: KafkaState, a: Action) -> KafkaState:
    return _stop(s, a.get("broker"))


def _new_session(s: KafkaState, b: int) -> tuple:
    return put(s.zk.sessions, b, abs(s.zk.sessions[b]) + 1)


def restart(m, s: KafkaState, a: Action) -> KafkaState:
    b = a.get("broker")
    br = s.brokers[b]._replace(alive=True)
    return s._replace(zk=s.zk._replace(sessions=_new_session(s, b)), brokers=put(s.brokers, b, br))


def expire(m, s: KafkaState, a: Action) -> KafkaState:
    b = a.get("broker")
    s = _spend_failover(s, b)
    zk = s.zk
    zk = zk._replace(sessions=put(zk.sessions, b, -zk.sessions[b]),
                     controller=NO_LEADER if zk.controller == b else zk.controller)
    return s._replace(zk=zk, budget=s.budget._replace(session_expiries=s.budget.session_expiries - 1))


def register(m, s: KafkaState, a: Action) -> KafkaState:
    b = a.get("broker")
    return s._replace(zk=s.zk._replace(sessions=_new_session(s, b)))


def resign(m, s: KafkaState, a: Action) -> KafkaState:
    b = a.get("broker")
    return s._replace(brokers=put(s.brokers, b, s.brokers[b]._replace(ctx=None)))


def delete_controller(m, s: KafkaState, a: Action) -> KafkaState:
    """``rmr /controller`` by an operator (the usual way to force a re-election): only the
    znode goes; the old controller's session, and its context, stay until it notices
    (``KafkaController``'s ``Reelect``/``ControllerChange`` event: ``onControllerResignation``
    then ``elect``), which is ``Resign`` here."""
    s = _spend_failover(s, s.zk.controller)
    return s._replace(zk=s.zk._replace(controller=NO_LEADER))


def create_topic(m, s: KafkaState, a: Action) -> KafkaState:
    """``AdminUtils.createTopic``: /brokers/topics/<t> with the assignment; no partition
    state yet (the controller creates it: NewPartition -> OnlinePartition)."""
    return s._replace(zk=s.zk._replace(topic=True, ar=m.initial_ar))


def delete_topic(m, s: KafkaState, a: Action) -> KafkaState:
    return s._replace(zk=s.zk._replace(delete_topic=True),
                      budget=s.budget._replace(topic_deletions=s.budget.topic_deletions - 1))


ENABLED = (faults_enabled,)
APPLY = {
    "CrashBroker": crash,
    "RestartBroker": restart,
    "ExpireSession": expire,
    "RegisterBroker": register,
    "Resign": resign,
    "ShutdownBroker": shutdown,
    "DeleteTopic": delete_topic,
    "DeleteController": delete_controller,
    "CreateTopic": create_topic,
}
