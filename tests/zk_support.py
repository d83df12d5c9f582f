"""The real ZooKeeper ensemble the ``cluster`` tests run on.

``zk_ensemble`` (module scope) starts three servers on free loopback ports with data
directories in a temporary folder and short ticks (impl/zkensemble.py), and stops
them when the module's tests are done, also when one failed: the fixture's teardown
and ``Ensemble.stop`` kill every server it started, paused or not.  ZooKeeper comes
from Debian's package (``scripts/ensure-zookeeper``, which ``make test`` runs); a
machine without it skips nothing silently: the fixture fails with the command to run.

Each test gets its own chroot (``zk_hosts``), so tests share the ensemble and nothing else.
"""

from __future__ import annotations

import itertools

import pytest

from impl.zkensemble import Ensemble

_chroots = itertools.count()


@pytest.fixture(scope="module")
def zk_ensemble(tmp_path_factory):
    ensemble = Ensemble(3, tmp_path_factory.mktemp("zk"))
    ensemble.start()
    try:
        yield ensemble
    finally:
        ensemble.stop()


@pytest.fixture
def zk_hosts(zk_ensemble, request):
    """The ensemble's connect string with a fresh chroot for this test."""
    name = "".join(c if c.isalnum() else "_" for c in request.node.name)[:60]
    return f"{zk_ensemble.connect_string}/t{next(_chroots)}_{name}"


def validate_run(cluster, reassignments: str = ""):
    """Trace validation of a ProcessCluster's run against the Kafka model (through the
    family, as kmc conform builds it): (observed run, Validation)."""
    from checker.tracecheck import validate_observed
    from impl.observed import read_run
    from spec.family import FAMILY
    run = read_run(cluster.dir, cluster.n, partitions=cluster.partitions, reassignments=reassignments)
    return run, validate_observed(FAMILY, run)
