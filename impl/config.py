"""Broker configuration: the Kafka settings this reference broker honours, plus the
switches that reproduce the known-bad variants.

``inter_broker_protocol_version`` chooses how a new follower truncates, as it did in
Kafka's history: before 0.11 to its own HW; 0.11 (KIP-101) to the leader's end offset
for its last epoch; 2.0 (KIP-279) to the first offset where the logs diverge; 2.1
(KIP-320) the same, with every fetch and epoch query fenced by the leader epoch.

    >>> BrokerConfig(inter_broker_protocol_version="2.0").truncation
    'kip279'
"""

from __future__ import annotations

from dataclasses import dataclass

TRUNCATION_BY_IBP = {"0.10": "high_watermark", "0.11": "kip101", "2.0": "kip279", "2.1": "kip320"}
IBP_BY_TRUNCATION = {v: k for k, v in TRUNCATION_BY_IBP.items()}


@dataclass(frozen=True)
class BrokerConfig:
    inter_broker_protocol_version: str = "2.1"
    unclean_leader_election_enable: bool = False    # unclean.leader.election.enable (topic default)
    min_insync_replicas: int = 1                    # min.insync.replicas (topic default)
    delete_topic_enable: bool = False               # delete.topic.enable
    auto_leader_rebalance_enable: bool = True       # auto.leader.rebalance.enable
    # The controller sends UpdateMetadata and brokers keep a MetadataCache, which producers
    # route by.  Off, producers are driven to a broker directly: the scope of the model's
    # metadata_cache switch (conformance sets it from there).
    send_update_metadata: bool = False
    # Known-bad variants, for conformance with the model's flags.  Never turn these off
    # in anything but a test: each removes a fence Kafka relies on.
    controller_epoch_check: bool = True             # brokers reject StaleControllerEpoch
    controller_epoch_zk_check: bool = True          # controller writes check /controller_epoch (KAFKA-6082)

    def __post_init__(self) -> None:
        if self.inter_broker_protocol_version not in TRUNCATION_BY_IBP:
            raise ValueError(f"inter_broker_protocol_version must be one of {sorted(TRUNCATION_BY_IBP)}, "
                             f"not {self.inter_broker_protocol_version!r}")

    @property
    def truncation(self) -> str:
        return TRUNCATION_BY_IBP[self.inter_broker_protocol_version]
