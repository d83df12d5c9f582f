"""What ``kmc mutate`` runs for the Kafka family: the reference broker (impl/) against
the conformance corpus, and the model (spec/) against its default test suite.

The conformance corpus is ordered cheapest first, so that most mutants die in the
first seconds: a covering set of ``tiny`` with probing, then the presets whose
graphs reach the paths ``tiny`` does not (an unclean election, a reassignment, a
zombie controller), then every saved trace in ``traces/known``.

The equivalent mutants (``spec/equivalent_mutants.txt``) are mutants that no
corpus can kill because they do not change behaviour; each line says why.
"""

from __future__ import annotations

from dataclasses import replace

from checker.mutation import CommandCorpus, ConformCorpus, ConformRun, MutationGate, MutationTarget

ATOMIC = (("atomic_controller", True),)
NO_CRASH = (("max_crashes", 0),)
ONE_RECORD = (("max_records", 1), ("max_crashes", 1))
CREATE = (("create_topic_after_start", True),)

# Two unclean elections, one after each crash (an ISR shrink first): the smallest graph that
# spends the unclean-election budget twice (about 8 s of CPU unmutated; without the atomic
# controller about 54 s).
UNCLEAN_TWICE = ConformRun("unclean atomic (2 crashes, 2 unclean elections, no preferred election)", preset="unclean",
                           overrides=(*ATOMIC, ("max_crashes", 2), ("max_unclean_elections", 2),
                                      ("preferred_election", False)))

# The controller's event order (controller_event_order, the default, set here explicitly): a controlled
# shutdown's OfflineReplica step and the new controller's first election hold back its next
# event (impl/eventorder.py ``_controller_busy``).
EVENT_ORDER = ConformRun("shutdown (no crash, no preferred election) event order --probe", preset="shutdown",
                         overrides=(*NO_CRASH, ("preferred_election", False), ("controller_event_order", True)),
                         probe=True)

# The order-free model (controller_event_order=false, no longer the default) is a supported
# configuration: the adapter must then let a controller take any event at any time.
ORDER_FREE = ConformRun("tiny (order-free: controller_event_order=false) --probe", preset="tiny",
                        overrides=(("controller_event_order", False),), probe=True)

# The metadata caches' live brokers without the data path: a crash, the restarted broker's
# UpdateMetadata ahead of its LeaderAndIsr, a failover's, and makeFollowers' live-leader
# check (spec/metadata.py; 1,744 states, about 4 s of CPU probed).
CACHE_LIVE = ConformRun("data-cache (no record, 1 crash) --probe", preset="data-cache", overrides=(("max_records", 0),),
                        probe=True)

# Topic deletion with the atomic controller and a crash: a replica whose broker is down when
# its deletion starts goes ReplicaDeletionIneligible and is retried once the broker is back,
# inside the atomic controller's reactions (559 states, about 1 s of CPU probed).
DELETE_CRASH = ConformRun("delete atomic (1 crash, no controller failover, no shrink, no preferred election) --probe",
                          preset="delete", overrides=(*ATOMIC, ("max_controller_failovers", 0), ("max_isr_shrinks", 0),
                                                      ("preferred_election", False)), probe=True)

# Cheapest first.  The covering sets take every transition of their graph, probed (the
# implementation is asked about every action the model refuses); the walks reach the
# data path's truncation rules with three replicas, beyond any covering set.
CONFORMANCE = ConformCorpus((
    ConformRun("tiny --probe", preset="tiny", probe=True, settle=True),
    ConformRun("delete (no crash) --probe", preset="delete", overrides=NO_CRASH, probe=True, settle=True),
    ConformRun("tiny create-after-start (no crash) --probe", preset="tiny", overrides=(*NO_CRASH, *CREATE),
               probe=True, settle=True),
    ConformRun("data-cache (1 record, no crash, 1 ISR shrink) --probe", preset="data-cache",
               overrides=(("max_records", 1), *NO_CRASH, ("max_isr_shrinks", 1)), probe=True, settle=True),
    ConformRun("traces/known", known="traces/known", settle=True),
    ConformRun("unclean --probe", preset="unclean", probe=True, settle=True),
    ConformRun("reassign-rf --probe", preset="reassign-rf", probe=True, settle=True),
    ConformRun("data-kip320 (1 record, 1 crash) --probe", preset="data-kip320", overrides=ONE_RECORD, probe=True,
               settle=True),
    ConformRun("tiny (no controller failover) --probe", preset="tiny", overrides=(("max_controller_failovers", 0),),
               probe=True),
    ConformRun("tiny (2 partitions, no crash, 2 ISR shrinks, no preferred election)", preset="tiny",
               overrides=(("partitions", 2), *NO_CRASH, ("max_isr_shrinks", 2), ("preferred_election", False))),
    ConformRun("zombie --probe", preset="zombie", probe=True),
    ConformRun("data-kip101 atomic: walks", preset="data-kip101", overrides=ATOMIC, walks=100, depth=40, cover=False),
    ConformRun("data-kip279 atomic: walks", preset="data-kip279", overrides=ATOMIC, walks=100, depth=40, cover=False),
    ConformRun("data-hw atomic: walks", preset="data-hw", overrides=ATOMIC, walks=100, depth=40, cover=False),
    ConformRun("data-kip279-3: walks", preset="data-kip279-3", walks=100, depth=40, cover=False),
    ConformRun("data-kip320-3: walks", preset="data-kip320-3", walks=100, depth=40, cover=False),
    ConformRun("shutdown (no crash) --probe", preset="shutdown", overrides=NO_CRASH, probe=True),
    ConformRun("data-unclean atomic --probe", preset="data-unclean", overrides=ATOMIC, probe=True),
    EVENT_ORDER,
    ORDER_FREE,
    UNCLEAN_TWICE,
    CACHE_LIVE,
    DELETE_CRASH,
))

# The battery issue 17 started from, which gave the "before" score (docs/mutation.md).
BEFORE = ConformCorpus((
    ConformRun("tiny --probe", preset="tiny", probe=True),
    ConformRun("traces/known", known="traces/known"),
    ConformRun("unclean", preset="unclean"),
    ConformRun("reassign-rf", preset="reassign-rf"),
    ConformRun("zombie", preset="zombie"),
    ConformRun("data-unclean atomic", preset="data-unclean", overrides=ATOMIC),
))

# The reference cluster's process shell on a real ZooKeeper and the validation of its
# logs (kmc cluster): conformance drives the in-memory cluster; these are checked by
# tests/test_cluster_faults.py (marker cluster), and impl/broken.py is a deliberately
# broken election for those tests.
PROCESS_SHELL = ("impl/node.py", "impl/proccluster.py", "impl/wire.py", "impl/zkstore.py", "impl/zkensemble.py",
                 "impl/zkrecord.py", "impl/statelog.py", "impl/observed.py", "impl/clusterrun.py", "impl/broken.py")

# The model's fast tests, those that pin the model's counts and traces first.
TESTS = CommandCorpus((
    "{python}", "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header",
    "tests/test_spec.py", "tests/test_datapath.py", "tests/test_reassign.py", "tests/test_anomalies.py",
    "tests/test_atomic.py", "tests/test_liveness.py", "tests/test_por.py", "tests/test_symbolic.py",
    "tests/test_explore.py::test_the_kafka_timeline_draws_every_delivery_from_its_sender", "tests",
))

# The spec-heavy files alone (test_por.py checks spec/footprints.py, the partial-order
# reduction's declarations), the z3 encoding's fast tests last (about 200 s of CPU, not
# the whole suite): a mutant they kill the whole suite kills too, so their score is a
# lower bound of the suite's.  (test_symbolic.py's intermittent "z3 lost the model" is
# fixed since kmc prove stopped fixing the CTI's least instance.)
SPEC_TESTS = CommandCorpus(TESTS.argv[:-1])

# The CI gate (tests/test_mutation_gate.py, kmc mutate impl --gate): 120 mutants against the
# corpus's eight cheapest runs (no random walk, no large covering set; the data path probed
# with one record) and two small covering sets that reach what those eight do not: a zombie
# controller (no ISR shrink) and a controlled shutdown (no crash, no shrink, no preferred
# election), each under 5 s of CPU unmutated, and two unclean elections with the atomic
# controller (about 8 s), and tiny on the order-free model (the adapter's
# controller_event_order=false, no longer the default), and the metadata caches' live brokers
# with a crash (no record), and topic deletion with the atomic controller and a crash; the whole gate about 5 minutes of CPU
# (docs/mutation.md).  Its four cheapest runs settle each trace's end (Cluster.settle,
# checked against the model's quiet states); the others do not, which keeps the gate's cost
# down (settling them killed nothing more in its sample).
# The level is the score measured on the code it was set on (docs/mutation.md), rounded
# down to the tenth shown (99 of 108 is 91.67%, so 91.6: a level of 91.7 fails the gate
# that measured it): a change to impl/ that the corpus does not check, or a weaker
# corpus, takes the gate below it.
SMALL = (("max_isr_shrinks", 0), ("preferred_election", False))
GATE = MutationGate(120, 17, 91.6, ConformCorpus((
    *(run if i < 4 else replace(run, settle=False) for i, run in enumerate(CONFORMANCE.runs[:8])),
    ConformRun("zombie (no shrink) --probe", preset="zombie", overrides=SMALL[:1], probe=True),
    ConformRun("shutdown (no crash, no shrink, no preferred election) --probe", preset="shutdown",
               overrides=(*NO_CRASH, *SMALL), probe=True),
    EVENT_ORDER,
    ORDER_FREE,
    UNCLEAN_TWICE,
    CACHE_LIVE,
    DELETE_CRASH,
)))

TARGETS = {
    "impl": MutationTarget("impl", CONFORMANCE, "the reference broker against the conformance corpus",
                           exclude=("impl/__init__.py", *PROCESS_SHELL), equivalents="spec/equivalent_mutants.txt",
                           gate=GATE),
    "impl-before": MutationTarget("impl", BEFORE, "the reference broker against the battery issue 17 started "
                                  "from (its before score)", exclude=("impl/__init__.py", *PROCESS_SHELL),
                                  equivalents="spec/equivalent_mutants.txt"),
    "spec": MutationTarget("spec", TESTS, "the model against its default test suite",
                           exclude=("spec/__init__.py", "spec/mutation.py"),
                           equivalents="spec/equivalent_mutants.txt", gate=None),
    "spec-quick": MutationTarget("spec", SPEC_TESTS, "the model against its spec-heavy test files only "
                                 "(a lower bound of the spec target's score)",
                                 exclude=("spec/__init__.py", "spec/mutation.py"),
                                 equivalents="spec/equivalent_mutants.txt"),
}
