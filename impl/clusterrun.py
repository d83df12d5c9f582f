"""``kmc cluster``'s Kafka side: a real cluster under random faults, its checks, and its
logs as an observed trace (the Kafka family names ``run`` as its cluster runner).

``run(options, progress)`` starts a 3-server ZooKeeper ensemble and the brokers
(impl/proccluster.py) in ``options["dir"]`` (a fresh temporary folder by default),
produces with acks=all throughout, and for ``seconds`` injects one random fault at a
time from ``faults`` (seeded: the same seed picks the same faults and victims; the
timing is the machine's):

- ``kill``: ``kill -9`` of a random broker (leader, follower or controller), restarted
  with its log directory after ``session timeout + 1`` seconds;
- ``stop``: ``SIGSTOP`` of a random broker past its session timeout, then ``SIGCONT``
  (a zombie, when it was the controller);
- ``zk``: ``SIGSTOP`` of a random ZooKeeper server (the ensemble's leader half the
  time) for two seconds;
- ``restart``: ``kill -9`` and an immediate restart (the log directory kept).

After each fault it waits until every live replica is back in the ISR.  At the end it
runs ``ProcessCluster.check`` and reads the logs into an observed trace
(impl/observed.py); the command validates that trace against the model.
"""

from __future__ import annotations

import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from impl.broken import KINDS as BROKEN_KINDS
from impl.observed import ObservedRun, read_run
from impl.proccluster import ClusterError, ProcessCluster
from impl.zkensemble import Ensemble, EnsembleError

FAULTS = ("kill", "stop", "zk", "restart")


@dataclass
class ClusterRun:
    directory: Path
    observed: ObservedRun | None = None
    checks: list = field(default_factory=list)        # what was checked, one line each
    failures: list = field(default_factory=list)      # what failed, one line each
    faults: list = field(default_factory=list)        # what was injected


def options_error(options: Mapping[str, Any]) -> str | None:
    faults = [f for f in str(options.get("faults", "kill,stop")).split(",") if f]
    bad = [f for f in faults if f not in FAULTS]
    if bad or not faults:
        return f"unknown fault kind {bad[0]!r}; choose from {', '.join(FAULTS)}" if bad else \
            f"--faults needs at least one of {', '.join(FAULTS)}"
    if not 3 <= int(options.get("brokers", 3)) <= 5:
        return "--brokers must be 3 to 5 (replication factor 3, min.insync.replicas=2)"
    broken = options.get("broken")
    if broken and broken not in BROKEN_KINDS:
        return f"unknown --broken kind {broken!r}; choose from {', '.join(BROKEN_KINDS)}"
    where = options.get("dir")
    if where and Path(where).exists() and not Path(where).is_dir():
        return f"--dir '{where}' is a file, not a directory; name a directory for the run's logs (new or existing)"
    return None


def run(options: Mapping[str, Any], progress: Callable[[str], None] = lambda s: None) -> ClusterRun:
    brokers = int(options.get("brokers", 3))
    seconds = float(options.get("seconds", 60))
    faults = [f for f in str(options.get("faults", "kill,stop")).split(",") if f]
    rng = random.Random(int(options.get("seed", 0)))
    directory = Path(options.get("dir") or tempfile.mkdtemp(prefix="kmc-cluster-"))
    directory.mkdir(parents=True, exist_ok=True)
    out = ClusterRun(directory)
    broken = {b: options["broken"] for b in range(brokers)} if options.get("broken") else None
    try:
        ens = Ensemble(3, directory / "zookeeper")
        ens.start()
    except EnsembleError as e:
        out.failures.append(f"ZooKeeper: {e}")
        return out
    c = None
    try:
        c = ProcessCluster(ens.connect_string + "/kafka", directory / "cluster", brokers=brokers, broken=broken)
        c.create_topic()
        c.start()
        c.wait_for_leaders()
        c.wait_for_full_isr()
        progress(f"cluster up: {brokers} brokers, controller {c.controller()}, leader {c.leader_of(0)}; "
                 f"logs in {c.dir}")
        t0 = time.monotonic()
        with c.producing() as prod:
            time.sleep(1.0)
            while time.monotonic() - t0 < seconds:
                kind = rng.choice(faults)
                what = _inject(c, ens, kind, rng)
                out.faults.append(what)
                progress(f"{time.monotonic() - t0:5.1f} s  {what}; {len(prod.acknowledged)} records acknowledged")
                c.wait_for_full_isr(60)
                time.sleep(0.5)
        report = c.check(prod.acknowledged)
        out.checks += [
            f"faults injected: {len(out.faults)} ({', '.join(sorted(set(f.split(':')[0] for f in out.faults)))})",
            f"acks=all records acknowledged: {report['acknowledged']} of {prod.attempts} attempts; lost: "
            f"{report['lost']} (min.insync.replicas=2, RF 3)",
            f"controller epochs: {report['controller_epochs']}, at most one controller acted in each",
            f"every partition with a live ISR member has a serving leader (recovered in "
            f"{report['recovery_seconds']} s)",
            f"every live broker's metadata cache names that leader (after {report['metadata_seconds']} s); "
            f"the producer's metadata requests: {prod.metadata_requests}",
            f"state-change logs parse: {report['log_lines']} lines",
        ]
    except ClusterError as e:
        out.failures.append(str(e))
    finally:
        if c is not None:
            c.stop()
        ens.stop()
    if c is not None:
        out.observed = read_run(c.dir, brokers)
        out.observed.notes and out.failures.extend(out.observed.notes)
    return out


def _inject(c: ProcessCluster, ens: Ensemble, kind: str, rng: random.Random) -> str:
    victims = sorted(c.live())
    b = rng.choice(victims)
    role = "controller" if b == c.controller() else "leader" if b == c.leader_of(0) else "follower"
    if kind == "kill":
        c.kill(b)
        time.sleep(c.session_timeout + 1.0)
        c.restart(b)
        return f"kill: kill -9 of broker {b} ({role}), restarted after {c.session_timeout + 1.0:.0f} s"
    if kind == "restart":
        c.restart(b)
        return f"restart: kill -9 and restart of broker {b} ({role}) with its log directory"
    if kind == "stop":
        c.pause(b)
        time.sleep(c.session_timeout + 1.5)
        c.resume(b)
        return f"stop: SIGSTOP of broker {b} ({role}) for {c.session_timeout + 1.5:.1f} s, then SIGCONT"
    leader = ens.leader()
    z = leader if leader is not None and rng.random() < 0.5 else rng.randrange(ens.n)
    ens.pause(z)
    time.sleep(2.0)
    ens.resume(z)
    ens.wait_for_quorum(30)
    return f"zk: SIGSTOP of ZooKeeper server {z}{' (the ensemble leader)' if z == leader else ''} for 2 s"
