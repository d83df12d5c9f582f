"""Benchmark: the Spark engine against the local engine, side by side.

Not a test: wall-clock figures depend on the machine and on what else runs on it
(the load average is printed with every row).  For each configuration, from about
10^5 to over 10^6 distinct states, three runs, each in its own process: the local
engine, Spark local[1] (1 partition) and Spark local[2] (2 partitions).  Printed
side by side:

- states/s: distinct states per second of search (Spark: from the first level to
  the verdict; the JVM start-up is reported apart, it is paid once per run);
- fixed cost per level: the median time of the levels whose frontier holds at most
  100 states (their work is negligible), and of a 40-level chain of single states;
- peak memory: the driver (Python), the JVM (driver and, in local mode, executor),
  the executors' Python workers;
- bytes per visited state: the visited set and parent links (numpy arrays), and
  everything Spark holds for the last level (visited set and frontier) divided by
  the number of states.

Then the targets of issue 5 on the largest configuration.

    python benchmarks/spark.py                        # the default ladder (several minutes)
    python benchmarks/spark.py default                # some configurations
    python benchmarks/spark.py 'default:max_crashes=1'

A configuration is a Kafka preset, optionally with ``:key=value,key=value``
overrides.  The Kafka presets stop near 1.3 * 10^5 states, so the ladder's top
rungs are presets with larger bounds; no preset is added to the model for this.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LADDER = ["default", "small:max_records=1"]
FAMILY_REF = "spec.family:FAMILY"
SMALL_LEVEL = 100


def parse(cfg: str) -> tuple[str, dict[str, str]]:
    preset, _, rest = cfg.partition(":")
    over = {}
    for item in filter(None, rest.split(",")):
        k, _, v = item.partition("=")
        over[k.strip()] = v.strip()
    return preset, over


def build(cfg: str):
    from checker.cli import load_family
    from checker.config import resolve

    family, _ = load_family(FAMILY_REF)
    preset, over = parse(cfg)
    return family.build(resolve(family, preset, over))


def _jvm_hwm() -> int:
    """Peak RSS of the JVM this process started (local mode: driver and executor)."""
    best = 0
    me = str(os.getpid())
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = f.read().rsplit(")", 1)[1].split()[1]
            if ppid != me:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"java" not in f.read():
                    continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        best = max(best, int(line.split()[1]) * 1024)
        except (OSError, IndexError):
            continue
    return best


def child(args: argparse.Namespace) -> None:
    """One measured run, in its own process; prints one JSON line."""
    from checker import bfs

    model = build(args.config)
    if args.engine == "local":
        r = bfs.check(model)
        out = {"distinct": r.stats.distinct, "depth": r.stats.depth, "seconds": r.stats.seconds,
               "states_per_second": r.stats.states_per_second, "driver_peak": r.stats.peak_memory_bytes,
               "verdict": r.verdict}
    else:
        from checker.spark import check
        from checker.spark.session import get_context
        from tests.toys import Chain

        t0 = time.perf_counter()
        sc, _ = get_context(args.engine, args.partitions)
        startup = time.perf_counter() - t0
        chain = check(Chain(40, terminal=True), sc=sc, partitions=args.partitions)
        chain_level = statistics.median(lv["seconds"] for lv in chain.engine["levels"])
        r = check(model, sc=sc, partitions=args.partitions)
        levels = r.engine["levels"]
        small = [lv["seconds"] for lv in levels if lv["frontier"] <= SMALL_LEVEL]
        held = r.engine.get("held_bytes", 0)
        out = {"distinct": r.stats.distinct, "depth": r.stats.depth, "seconds": r.stats.seconds,
               "states_per_second": r.stats.states_per_second, "driver_peak": r.stats.peak_memory_bytes,
               "jvm_peak": _jvm_hwm(), "executor_peak": r.engine["executor_peak_rss_bytes"],
               "visited_bytes_per_state": r.engine["visited_bytes_per_state"],
               "held_bytes_per_state": held / r.stats.distinct if r.stats.distinct else 0.0,
               "startup": startup, "levels": len(levels), "executor_cpu": r.engine.get("executor_cpu_seconds", 0.0),
               "fixed_small_levels": statistics.median(small) if small else None,
               "fixed_chain": chain_level, "verdict": r.verdict}
        sc.stop()
    print(json.dumps(out))


def run(cfg: str, engine: str, partitions: int) -> dict:
    cmd = [sys.executable, __file__, "--child", "--engine", engine, "--partitions", str(partitions), cfg]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    load = os.getloadavg()[0]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        sys.exit(f"benchmark: {cfg} on {engine} failed (exit {p.returncode}):\n{p.stderr.strip()[-2000:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["load"] = load
    return out


def mib(b: float | None) -> str:
    return "-" if not b else f"{b / 2**20:.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", help=f"preset[:key=value,...] (default: {' '.join(LADDER)})")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--engine", default="local", help=argparse.SUPPRESS)
    ap.add_argument("--partitions", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--json", metavar="FILE", help="also write the measurements to FILE")
    args = ap.parse_args()
    if args.child:
        args.config = args.configs[0]
        child(args)
        return
    configs = args.configs or LADDER
    for cfg in configs:
        build(cfg)  # a bad configuration fails before anything runs
    rows = []
    print(f"machine: {os.cpu_count()} cores; load average printed per run; Java: ", end="", flush=True)
    from checker.spark.session import java_version
    print(java_version())
    for cfg in configs:
        row = {"config": cfg}
        for name, engine, parts in (("local", "local", 1), ("spark1", "local[1]", 1), ("spark2", "local[2]", 2)):
            r = run(cfg, engine, parts)
            row[name] = r
            print(f"  {cfg:<28} {name:<7} {r['distinct']:>9,} states  {r['states_per_second']:>8,.0f} states/s  "
                  f"load {r['load']:.1f}", flush=True)
        for other in ("spark1", "spark2"):
            if (row[other]["distinct"], row[other]["depth"]) != (row["local"]["distinct"], row["local"]["depth"]):
                sys.exit(f"benchmark: {cfg}: {other} found {row[other]['distinct']} states, local "
                         f"{row['local']['distinct']}: the engines disagree")
        rows.append(row)

    head = ("| configuration | distinct | depth | local st/s | local[1] st/s | local[2] st/s | local[2] / local[1] "
            "| Spark per core / local | fixed s/level (small levels; chain) | JVM start s | driver MiB (local; Spark) "
            "| JVM MiB | executor Python MiB | executor CPU s (local[1]; local[2]) "
            "| bytes/visited state (arrays; all Spark holds) |")
    print()
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for row in rows:
        lo, s1, s2 = row["local"], row["spark1"], row["spark2"]
        fixed = [x for x in (s1["fixed_small_levels"], s2["fixed_small_levels"]) if x is not None]
        per_core = min(s1["states_per_second"], s2["states_per_second"] / 2) / lo["states_per_second"]
        print(f"| `{row['config']}` | {lo['distinct']:,} | {lo['depth']} | {lo['states_per_second']:,.0f} "
              f"| {s1['states_per_second']:,.0f} | {s2['states_per_second']:,.0f} "
              f"| {s2['states_per_second'] / s1['states_per_second']:.2f} | {per_core:.2f} "
              f"| {max(fixed) if fixed else float('nan'):.2f}; {max(s1['fixed_chain'], s2['fixed_chain']):.2f} "
              f"| {s2['startup']:.1f} | {mib(lo['driver_peak'])}; {mib(max(s1['driver_peak'], s2['driver_peak']))} "
              f"| {mib(max(s1['jvm_peak'], s2['jvm_peak']))} | {mib(max(s1['executor_peak'], s2['executor_peak']))} "
              f"| {s1['executor_cpu']:.0f}; {s2['executor_cpu']:.0f} "
              f"| {s2['visited_bytes_per_state']:.0f}; {s2['held_bytes_per_state']:.0f} |")
    big = max(rows, key=lambda r: r["local"]["distinct"])
    lo, s1, s2 = big["local"], big["spark1"], big["spark2"]
    fixed = max(x for x in (s1["fixed_small_levels"], s2["fixed_small_levels"], s1["fixed_chain"],
                            s2["fixed_chain"]) if x is not None)
    per_core = min(s1["states_per_second"], s2["states_per_second"] / 2) / lo["states_per_second"]
    targets = [
        ("Spark states/s per core >= 1/2 of the local engine's", per_core >= 0.5, f"{per_core:.2f}"),
        ("local[2] >= 1.6 x local[1]", s2["states_per_second"] >= 1.6 * s1["states_per_second"],
         f"{s2['states_per_second'] / s1['states_per_second']:.2f}x"),
        ("fixed cost per level < 0.5 s", fixed < 0.5, f"{fixed:.2f} s"),
        ("visited set <= 32 bytes per state", s2["visited_bytes_per_state"] <= 32,
         f"{s2['visited_bytes_per_state']:.0f} B"),
    ]
    print()
    print(f"targets on the largest configuration, `{big['config']}` ({lo['distinct']:,} states):")
    for name, ok, value in targets:
        print(f"  {'met    ' if ok else 'NOT met'}  {name}: {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
