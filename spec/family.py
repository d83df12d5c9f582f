"""The Kafka model family: configuration keys, presets, and how to build a model.

This is what ``kmc`` finds through the ``kmc.models`` entry point.
"""

from __future__ import annotations

from dataclasses import fields

from checker.model import ModelFamily, Parameter, Preset
from spec.atomic import atomic_model_class
from spec.config import KafkaConfig
from spec.model import DOCS, MODEL_VERSION, KafkaModel
from spec.mutation import TARGETS as MUTATION_TARGETS

_DOCS = {
    "brokers": "number of brokers (ids 0..n-1)",
    "partitions": "partitions of the one topic",
    "replication_factor": "replicas per partition; the initial AR of partition p starts at broker p, round-robin",
    "controller_epoch_fencing": "brokers reject requests from an older controller epoch (StaleControllerEpoch)",
    "zk_epoch_fencing": "controller ZooKeeper writes are also conditional on the controller epoch (KAFKA-6082)",
    "unclean_leader_election": "unclean.leader.election.enable: elect a replica outside the ISR when no ISR member lives",
    "delete_topic_enable": "delete.topic.enable: the controller acts on /admin/delete_topics",
    "preferred_election": "auto.leader.rebalance.enable: move leadership back to the preferred replica",
    "max_records": "records producers may write in all; 0 turns the data path (logs, HW, fetch) off",
    "truncation": "how a new follower truncates: high_watermark (before KIP-101), kip101, kip279, kip320",
    "atomic_controller": "the controller's reactions to an event happen in the event's step: fewer interleavings, "
                         "every trace still one of the full model (spec/atomic.py); for deep data-path checks",
    "controller_event_order": "Kafka's single controller event thread: while a step of its current event (an "
                              "OfflineReplica transition, a new or offline partition's election) is enabled, a "
                              "controller takes no new event (the default; false allows every order, a coarser "
                              "model that Kafka's ControllerEventManager does not follow; docs/model.md)",
    "min_insync_replicas": "min.insync.replicas: acks=all is refused while the ISR is smaller",
    "metadata_cache": "the controller sends UpdateMetadata with every leadership change and brokers keep a "
                      "MetadataCache (behind the controller-epoch check); producers send to the leader a cache "
                      "names, and a broker that does not lead answers NOT_LEADER_FOR_PARTITION. Off: producers "
                      "write to any broker that believes it leads (see docs/model.md)",
    "producer_acks": "acks the producers use: all, 1, 0 (no answer, nothing promised), or both (all and 1)",
    "max_crashes": "broker crashes that may happen",
    "max_session_expiries": "ZooKeeper session expiries that may happen (the origin of zombies)",
    "max_controller_failovers": "times the active controller may be lost (crash, expiry, shutdown)",
    "max_isr_shrinks": "times a leader may shrink an ISR",
    "max_unclean_elections": "unclean elections that may happen (when enabled)",
    "max_controlled_shutdowns": "controlled shutdowns that may be requested",
    "max_topic_deletions": "topic deletions the admin may request",
    "check_availability": "also check EventuallyAvailable: every partition eventually has a live leader, "
                          "whatever its ISR (fails wherever all of a partition's replicas can stay down)",
    "create_topic_after_start": "the topic does not exist at start: the admin creates it (CreateTopic) and the "
                                "controller's /brokers/topics watch takes it up (TopicChange)",
    "controller_deletion": "an operator may delete /controller while the controller's session lives (a forced "
                           "re-election); each deletion spends one of max_controller_failovers",
    "reassignments": "partition reassignments the admin requests, in order, separated by ';': 'P:r,r,...' "
                     "(RAR of partition P) or 'r,r,...' (partition 0); '' turns reassignment off",
}

_RANGES = {
    "brokers": (1, 16), "partitions": (1, 4), "replication_factor": (1, 6),
    "max_crashes": (0, 5), "max_session_expiries": (0, 5), "max_controller_failovers": (0, 5),
    "max_isr_shrinks": (0, 5), "max_unclean_elections": (0, 5), "max_controlled_shutdowns": (0, 3),
    "max_topic_deletions": (0, 1), "max_records": (0, 4), "min_insync_replicas": (1, 6),
}

_CHOICES = {
    "truncation": ("high_watermark", "kip101", "kip279", "kip320"),
    "producer_acks": ("all", "1", "0", "both"),
}


def _parameters() -> dict:
    out = {}
    default = KafkaConfig()
    for f in fields(KafkaConfig):
        lo, hi = _RANGES.get(f.name, (None, None))
        out[f.name] = Parameter(f.name, getattr(default, f.name), _DOCS[f.name], lo, hi, _CHOICES.get(f.name))
    return out


# The fault kinds a configuration bounds, each with how to tell that it is off.  A
# preset that leaves one off says which and why (_preset): the checker cannot find
# what a fault it never injects would break.  Unclean election, preferred election,
# reassignment and the metadata cache are settings or admin operations, not faults;
# a preset names those in its own words where it matters.
FAULT_KINDS = {
    "crashes": lambda c: c.max_crashes == 0,
    "session expiry": lambda c: c.max_session_expiries == 0,
    "ISR shrink": lambda c: c.max_isr_shrinks == 0,
    "controlled shutdown": lambda c: c.max_controlled_shutdowns == 0,
    "topic deletion": lambda c: c.max_topic_deletions == 0 or not c.delete_topic_enable,
    "/controller deletion": lambda c: not c.controller_deletion,
    # lost by a crash, an expiry, a shutdown or a deletion: off when none of those can happen
    "controller failover": lambda c: c.max_controller_failovers == 0 or not (
        c.max_crashes or c.max_session_expiries or c.max_controlled_shutdowns or c.controller_deletion),
}

# Why the three operator faults that every configuration leaves off by default are
# off: each has a preset of its own, and each multiplies the interleavings of any
# preset it joins.
_OWN_PRESET = "checked in shutdown, delete and controller-deleted"
_USUAL = {"controlled shutdown": _OWN_PRESET, "topic deletion": _OWN_PRESET, "/controller deletion": _OWN_PRESET}


def off_kinds(overrides: dict) -> list[str]:
    """The fault kinds (FAULT_KINDS) that a configuration leaves off."""
    cfg = KafkaConfig(**overrides)
    return [k for k, is_off in FAULT_KINDS.items() if is_off(cfg)]


def _preset(name: str, text: str, overrides: dict, why_off: dict | None = None) -> Preset:
    """A preset whose description ends with every fault kind it leaves off and why,
    those with one reason together.  A kind left off without a reason, or a reason
    for a kind that is on, is an error when this module loads."""
    kinds = off_kinds(overrides)
    reasons = {**_USUAL, **(why_off or {})}
    missing = [k for k in kinds if k not in reasons]
    stale = [k for k in (why_off or {}) if k not in kinds]
    if missing or stale:
        raise ValueError(f"preset {name}: fault kinds off without a reason: {missing}; reasons for kinds "
                         f"that are on: {stale}")
    groups: dict[str, list[str]] = {}
    for k in kinds:
        groups.setdefault(reasons[k], []).append(k)
    clause = "; ".join(f"{_and(ks)} ({why})" for why, ks in groups.items())
    return Preset(name, f"{text}. Off: {clause}" if kinds else text, overrides)


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


_TWO = {"brokers": 2, "replication_factor": 2}
_SMALL = "kept small for the tests and benchmarks that run it; failover and default have it"
_SHORTEST = "the counterexample needs none; fewer faults give the shortest one"
_DATA = {**_TWO, "max_records": 2, "max_crashes": 2, "max_session_expiries": 0, "max_isr_shrinks": 0,
         "preferred_election": False, "truncation": "kip320"}
_NARROW = ("narrow, kept for the tests that pin it and for the manual's anomaly table, which compares the "
           "four truncation rules at these bounds; the wide presets have them")
_DATA_OFF = {"session expiry": _NARROW, "ISR shrink": _NARROW}
_DATA3 = {**_DATA, "brokers": 3, "replication_factor": 3, "max_controller_failovers": 0, "atomic_controller": True}
_DEEP = ("the counterexamples are 16 to 18 steps deep, beyond reach with more faults; the atomic controller "
         "that reaches them has no controller failover")
_DATA3_OFF = {"session expiry": _DEEP, "ISR shrink": _DEEP, "controller failover": _DEEP}

_PRESETS = {
    "tiny": _preset("tiny", "2 brokers, 1 partition, RF 2; one crash, one ISR shrink; every fix on",
                    {**_TWO, "max_session_expiries": 0}, {"session expiry": _SMALL}),
    "small": _preset("small", "3 brokers, 1 partition, RF 3; one crash, one ISR shrink; every fix on",
                     {"max_session_expiries": 0}, {"session expiry": _SMALL}),
    "default": _preset("default", "what `make run` checks: 3 brokers, 1 partition, RF 3; a controller "
                       "session expiry (zombie) and an ISR shrink, every fix on",
                       {"max_crashes": 0}, {"crashes": "with a crash too, 3 brokers and the expiry pass 3.3 "
                                                       "million states unfinished after 4 minutes, too long for make "
                                                       "run; failover has both, on 2 brokers"}),
    "failover": _preset("failover", "2 brokers, RF 2: a crash and a session expiry together, every fix on",
                        dict(_TWO)),
    "shutdown": _preset("shutdown", "2 brokers, RF 2: a controlled shutdown and a crash, every fix on",
                        {**_TWO, "max_session_expiries": 0, "max_controlled_shutdowns": 1},
                        {"session expiry": "kept small; failover has it"}),
    "delete": _preset("delete", "2 brokers, RF 2: topic deletion (delete.topic.enable) and a crash",
                      {**_TWO, "max_session_expiries": 0, "delete_topic_enable": True, "max_topic_deletions": 1},
                      {"session expiry": "kept small; failover has it"}),
    "zombie": _preset("zombie", "zk_epoch_fencing off (before KAFKA-6082): a zombie controller's "
                      "ZooKeeper writes are not fenced",
                      {**_TWO, "max_crashes": 0, "zk_epoch_fencing": False}, {"crashes": _SHORTEST}),
    "no-controller-fencing": _preset(
        "no-controller-fencing", "controller_epoch_fencing off: brokers apply a zombie's stale "
        "LeaderAndIsr (needs 2 partitions: with one, the leader-epoch check alone rejects it)",
        {**_TWO, "partitions": 2, "max_crashes": 0, "controller_epoch_fencing": False}, {"crashes": _SHORTEST}),
    "unclean": _preset("unclean", "unclean.leader.election.enable=true: a replica outside the ISR leads",
                       {**_TWO, "max_session_expiries": 0, "unclean_leader_election": True},
                       {"session expiry": "kept small; failover has it"}),
    # The data path (issue 3): the known-anomaly table.  The same bounds for every
    # truncation rule, so that the fixed rule holds where the older ones fail.
    # Narrow: crashes only.  Kept for the tests that pin them (data-kip320 and data-hw:
    # tests/test_anomalies.py, test_atomic.py, test_impl.py; data-kip101: test_por.py) and
    # for the manual's anomaly table, which compares the four rules at the same narrow
    # bounds (data-kip279 is there only); the wide presets below are the verdicts.
    "data-kip320": _preset("data-kip320", "data path, 2 brokers, 2 records, 2 crashes: truncation=kip320 "
                           "(every fix on); no preferred election or reassignment (see data-kip320-wide)",
                           _DATA, _DATA_OFF),
    "data-kip279": _preset("data-kip279", "as data-kip320 (narrow: no preferred election or reassignment, see "
                           "data-kip279-wide) with truncation=kip279", {**_DATA, "truncation": "kip279"}, _DATA_OFF),
    "data-kip101": _preset("data-kip101", "as data-kip320 (narrow) with truncation=kip101; holds only because it "
                           "leaves out preferred election and reassignment (see data-kip101-wide)",
                           {**_DATA, "truncation": "kip101"}, _DATA_OFF),
    "data-hw": _preset("data-hw", "as data-kip320 (narrow: no preferred election or reassignment, see "
                       "data-hw-wide) with truncation=high_watermark (before KIP-101): committed data lost",
                       {**_DATA, "truncation": "high_watermark"}, _DATA_OFF),
    # Three replicas: the holes KIP-279 and KIP-320 closed.  Their counterexamples are
    # 16-18 steps deep, beyond reach with the controller's steps interleaved, so these
    # run the atomic controller (spec/atomic.py); its traces are traces of the full model.
    "data-kip101-3": _preset("data-kip101-3", "data path, 3 brokers, 3 records, 2 crashes, atomic controller: "
                             "truncation=kip101 (before KIP-279): logs diverge",
                             {**_DATA3, "max_records": 3, "truncation": "kip101"}, _DATA3_OFF),
    "data-kip279-3": _preset("data-kip279-3", "data path, 3 brokers, 2 records, 2 crashes, atomic controller: "
                             "truncation=kip279 (before KIP-320): a stale follower fetches",
                             {**_DATA3, "truncation": "kip279"}, _DATA3_OFF),
    "data-kip320-3": _preset("data-kip320-3", "as data-kip279-3 with truncation=kip320: holds (slow; "
                             "its figures: docs/results.md)", dict(_DATA3),
                             {k: "as data-kip279-3, to compare with it" for k in _DATA3_OFF}),
    "data-unclean": _preset("data-unclean", "data path with unclean.leader.election.enable=true and an ISR "
                            "shrink: acknowledged data lost; no preferred election or reassignment",
                            {**_DATA, "unclean_leader_election": True, "max_crashes": 1, "max_isr_shrinks": 1},
                            {"session expiry": "a crash and a shrink are all the loss needs"}),
}


# The data path under every fault kind that can touch it (issue 11): 2 brokers, a crash,
# a session expiry, an ISR shrink, preferred election, a controlled shutdown and one
# reassignment that only reorders the AR (so the preferred replica changes), with the
# full controller (every interleaving).  The issue expected high_watermark and kip101
# violated, kip279 and kip320 to hold; kip279 (Kafka 2.0.0) loses data too, by KAFKA-7415
# (traces/known/NoAckedRecordLost-data-kip279-wide-*.json).
_WIDE = {**_TWO, "max_records": 2, "max_crashes": 1, "max_session_expiries": 1, "max_isr_shrinks": 1,
         "preferred_election": True, "max_controlled_shutdowns": 1, "reassignments": "1,0",
         "max_controller_failovers": 1}
_WIDE_VERDICT = {"high_watermark": "committed data lost (before KIP-101)",
                 "kip101": "acknowledged data lost with two brokers (before KIP-279)",
                 "kip279": "acknowledged data lost by KAFKA-7415 (fixed in 2.1.0 and 2.0.1)",
                 "kip320": "must hold"}
_WIDE_OFF = {"topic deletion": "it removes the data by design",
             "/controller deletion": "it moves the controller, as the session expiry does"}
_PRESETS.update({
    f"data-{'hw' if t == 'high_watermark' else t}-wide": _preset(
        f"data-{'hw' if t == 'high_watermark' else t}-wide",
        f"data path, 2 brokers, 2 records; a crash, a session expiry, an ISR shrink, preferred election, a "
        f"controlled shutdown and a reassignment reordering the AR [0, 1] -> [1, 0]: truncation={t}: "
        f"{_WIDE_VERDICT[t]} (large: see docs/results.md); not modelled here: unclean election (loses data by "
        f"design, data-unclean) and the metadata cache (about eight times the interleavings; producers reach "
        f"every broker that believes it leads, data-cache)", {**_WIDE, "truncation": t}, _WIDE_OFF)
    for t in ("high_watermark", "kip101", "kip279", "kip320")
})


# UpdateMetadata and the brokers' metadata caches (metadata_cache): the producers' routing.
# Only these presets turn the cache on.  Without the data path nothing reads a cache; with
# it, the cache multiplies the interleavings (one UpdateMetadata to every live broker per
# leadership change: data-kip320 grows about eightfold), so the narrow and wide data
# presets keep the abstraction "a producer reaches every broker that believes it leads",
# whose verdicts tests/test_metadata.py compares with the cache's.
_CACHE = {**_TWO, "max_records": 2, "metadata_cache": True, "truncation": "kip320"}
_CACHE_COST = "the cache's own cost: see docs/model.md"
_PRESETS.update({
    "data-cache": _preset("data-cache", "data path with metadata caches (UpdateMetadata; producers route by a "
                          "broker's cache), 2 brokers, 2 records, 1 crash, every fix on: holds; no preferred "
                          "election",
                          {**_CACHE, "max_crashes": 1, "max_session_expiries": 0, "max_isr_shrinks": 0,
                           "preferred_election": False}, {"session expiry": _CACHE_COST, "ISR shrink": _CACHE_COST}),
    "data-zombie": _preset("data-zombie", "zombie (zk_epoch_fencing off) with the data path and metadata caches: "
                           "2 brokers, 2 records, a crash, a session expiry and an ISR shrink; what a zombie's "
                           "UpdateMetadata does to producers (large: see docs/results.md)",
                           {**_CACHE, "zk_epoch_fencing": False}),
    "data-no-controller-fencing": _preset(
        "data-no-controller-fencing", "no-controller-fencing (2 partitions) with the data path and metadata "
        "caches: 2 brokers, 2 records, a session expiry and an ISR shrink; brokers apply a zombie's "
        "UpdateMetadata (large: see docs/results.md)",
        {**_CACHE, "partitions": 2, "max_crashes": 0, "controller_epoch_fencing": False}, {"crashes": _SHORTEST}),
})


# Operators and admins (seed gaps of issue 11).
_PRESETS.update({
    "topic-created": _preset("topic-created", "2 brokers, RF 2: the admin creates the topic after the cluster "
                             "started (the controller's /brokers/topics watch, NewPartition -> OnlinePartition, "
                             "NewReplica -> OnlineReplica), with a crash",
                             {**_TWO, "create_topic_after_start": True, "max_session_expiries": 0,
                              "max_isr_shrinks": 0},
                             {k: "kept small: the creation's own steps are what it checks; failover and tiny have "
                                 "it" for k in ("session expiry", "ISR shrink")}),
    "controller-deleted": _preset("controller-deleted", "2 brokers, RF 2: an operator deletes /controller while "
                                  "the controller's session lives (forced re-election), and an ISR shrink",
                                  {**_TWO, "max_crashes": 0, "max_session_expiries": 0, "controller_deletion": True},
                                  {k: "the deletion is the controller's loss it checks; failover has them"
                                   for k in ("crashes", "session expiry")}),
})


# The __consumer_offsets incident: an internal topic created with replication factor 1
# (offsets.topic.replication.factor=1) loses the only broker of a partition, which stays
# offline, and with it the consumer groups it coordinates.  The recommended fix: RF 3 and
# min.insync.replicas 2.  The same faults in both: a controlled shutdown of a broker.
# Atomic controller, so no controller failover: the broker shut down is not the controller.
_OFFSETS = {"brokers": 3, "max_records": 1, "max_crashes": 0, "max_session_expiries": 0, "max_isr_shrinks": 1,
            "max_controlled_shutdowns": 1, "check_availability": True, "preferred_election": False,
            "atomic_controller": True, "max_controller_failovers": 0}
_INCIDENT = ("the incident is a controlled shutdown, the same fault for RF 1 and its fix; a crash that stays down "
             "breaks EventuallyAvailable at any RF")
_OFFSETS_OFF = {"crashes": _INCIDENT, "session expiry": _INCIDENT,
                "controller failover": "the atomic controller that this depth needs has none"}
_PRESETS.update({
    "offsets-rf1": _preset("offsets-rf1", "__consumer_offsets with replication factor 1: 3 brokers, 1 record, a "
                           "controlled shutdown of a broker that is not the controller, an ISR shrink, atomic "
                           "controller; violates EventuallyAvailable (the partition's only broker stops)",
                           {**_OFFSETS, "replication_factor": 1}, _OFFSETS_OFF),
    "offsets-rf3": _preset("offsets-rf3", "offsets-rf1 with the recommended fix, replication factor 3 and "
                           "min.insync.replicas 2: holds (slow)", {**_OFFSETS, "replication_factor": 3,
                                                                  "min_insync_replicas": 2}, _OFFSETS_OFF),
})


# Partition reassignment (issue 4): kept small, because tests/test_spark_kafka.py
# runs every preset on Spark too.
_REASSIGN = {"max_crashes": 0, "max_session_expiries": 0, "max_isr_shrinks": 0}
_QUIET = ("the reassignment's own steps without faults, kept small because the Spark tests run every preset; "
          "reassign-crash and the wide data presets move partitions under faults")
_REASSIGN_OFF = {k: _QUIET for k in ("crashes", "session expiry", "ISR shrink", "controller failover")}
_PRESETS.update({
    "reassign": _preset("reassign", "3 brokers, RF 2: reassign partition 0 from [0, 1] to the overlapping [1, 2] "
                        "(the shape of {1,2,3} -> {2,3,4}), no fault: the 11 steps complete",
                        {**_REASSIGN, "replication_factor": 2, "reassignments": "1,2"}, _REASSIGN_OFF),
    "reassign-rf": _preset("reassign-rf", "2 brokers: replication factor 1 -> 2 ([0] -> [0, 1]), then 2 -> 1 "
                           "moving the partition ([0, 1] -> [1]), no fault",
                           {**_REASSIGN, **_TWO, "replication_factor": 1, "reassignments": "0,1;1"}, _REASSIGN_OFF),
    "reassign-crash": _preset("reassign-crash", "2 brokers, RF 1: move [0] -> [1] with one crash (the controller "
                              "may fail over mid-way): violates ReassignmentLeaderInRar (see docs/results.md)",
                              {**_REASSIGN, **_TWO, "replication_factor": 1, "reassignments": "1", "max_crashes": 1},
                              {"session expiry": "the violation needs only the crash",
                               "ISR shrink": "the violation needs only the crash; with --set max_isr_shrinks=1, "
                                             "ReassignmentIsrInAr fails too, in 19 steps: a shrink inside the "
                                             "event fails step 7's election, see docs/results.md"}),
})


class KafkaFamily(ModelFamily):
    name = "kafka"
    version = MODEL_VERSION
    parameters = _parameters()
    presets = _PRESETS
    default_preset = "default"
    implementation = "impl.adapter:KafkaImplementation"   # the reference broker's conformance adapter
    mutation_targets = MUTATION_TARGETS                      # kmc mutate impl / spec (spec/mutation.py)
    cluster = "impl.clusterrun:run"                       # kmc cluster: brokers as processes on real ZooKeeper

    def build(self, config) -> KafkaModel:
        cfg = KafkaConfig(**config)
        return atomic_model_class()(cfg) if cfg.atomic_controller else KafkaModel(cfg)

    def action_docs(self):
        return dict(DOCS)

    def symbolic(self, config):
        """The z3 encoding of this configuration (spec/symbolic.py) for kmc prove and
        kmc bmc; ValueError for a configuration it does not cover."""
        from spec.symbolic import KafkaSymbolic
        return KafkaSymbolic(KafkaConfig(**config))


FAMILY = KafkaFamily()
