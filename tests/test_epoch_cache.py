"""The leader-epoch cache before Kafka 2.1, on both sides.

Kafka 0.11 to 2.0 (``LeaderEpochFileCache.assign``) add a cache entry only for an epoch
newer than the latest one; 2.1 (KAFKA-7415) replaces the entries a new one conflicts
with.  The difference shows when a leader of a stale epoch appends after a record of a
newer one: ``kmc simulate --stateful --preset data-kip101-wide --property
NoAckedRecordLost --seed 0`` once reported a lost acknowledged record that came only
from reading the cache off the records (the file below is that counterexample).  With
the pre-2.1 rule the follower asks about the newer epoch, keeps the record, and the
reference broker follows the model step by step.

The file was found before the controller's event order became the default, and that
order refuses its step 7 (a StartReassignment taken before the previous event's
step).  The point here is the brokers' cache rule (what a stale epoch's append does
to a broker's cache), which the controller's event order does not touch.  So the file
is replayed on the model without the rule (``controller_event_order=false``), as it
was found, and on the reference broker with the same setting;
``test_the_trace_needs_the_order_free_model`` pins that choice."""

from __future__ import annotations

from pathlib import Path

from checker.config import resolve
from checker.conform import Harness
from checker.trace import load_trace
from impl.adapter import KafkaImplementation
from impl.log import LeaderEpochCache
from spec import datapath
from spec.family import FAMILY

STALE = Path(__file__).parent / "data" / "stale-epoch-leader-data-kip101-wide.json"


def test_a_stale_epochs_append_adds_no_entry_before_2_1():
    old = LeaderEpochCache(kafka_2_1=False)
    old.assign(6, 0)
    old.assign(5, 1)
    assert old.entries == [(6, 0)]
    new = LeaderEpochCache(kafka_2_1=True)
    new.assign(6, 0)
    new.assign(5, 1)
    assert new.entries == [(5, 1)]


def _replay():
    trace = load_trace(STALE)
    cfg = resolve(FAMILY, None, {**trace.config, "controller_event_order": False})
    m = FAMILY.build(cfg)
    s = next(iter(m.init_states()))
    states = [s]
    for st in trace.steps[1:]:
        assert st.action in list(m.actions(s)), st.action
        s = m.next_state(s, st.action)
        states.append(s)
    return trace, cfg, m, states


def test_the_old_false_loss_is_no_longer_derived():
    """Every step of the old counterexample still runs, and the acknowledged record is
    still in every later leader's log at its end."""
    trace, _cfg, m, states = _replay()
    prop = next(p for p in m.properties() if p.name == trace.property_name)
    assert all(prop.predicate(s) for s in states)
    rule = datapath.rule(m)
    caches = {tuple(rule.cache(b.replicas[0])) for s in states for b in s.brokers}
    assert ((6, 0),) in caches and ((6, 0), (5, 1)) not in caches


def test_the_stale_epoch_leader_conforms():
    trace, cfg, m, _states = _replay()
    assert Harness(m, KafkaImplementation, cfg).run([st.action for st in trace.steps[1:]]) is None


def test_the_trace_needs_the_order_free_model():
    trace = load_trace(STALE)
    m = FAMILY.build(resolve(FAMILY, None, trace.config))
    assert m.cfg.controller_event_order
    s = next(iter(m.init_states()))
    for st in trace.steps[1:7]:
        assert st.action in m.actions(s)
        s = m.next_state(s, st.action)
    assert trace.steps[7].action.name == "StartReassignment" and trace.steps[7].action not in m.actions(s)
