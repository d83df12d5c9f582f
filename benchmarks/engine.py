"""Benchmark: the search core's cost per state, before and after, and Spark per core.

Not a test: timings depend on the machine and its load (printed with every table).
Every figure is CPU time (``process_time`` in the process, or the whole process tree
for a subprocess: JVM, Python workers and driver), never a wall-clock limit.

In one run, side by side:

1. per preset, the local engine's states per CPU second **before** (the checker of
   commit ``--before``, extracted beside this one with ``git archive`` and run on the
   same model code) and **after** (this checker); the safety search alone, then the
   whole ``kmc check`` process (a preset with ``eventually`` properties explored
   twice before, once now);
2. the split between the model's own time and the engine's: the model's
   ``actions``/``next_state`` and every property, timed alone over the very states
   and transitions of the search, in the same process, against the whole search;
3. Spark ``local[1]`` and ``local[2]``: states/s and CPU seconds of the whole process
   tree against the local engine's (``--spark``; it starts a JVM per run).

    python benchmarks/engine.py                         # tiny small default
    python benchmarks/engine.py small default --spark   # and Spark on them
    python benchmarks/engine.py --before 6962db0 tiny
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "6962db0"   # main before issue 12: gc on, liveness explored in a second pass

# Runs in a subprocess: one safety search of a preset, its CPU seconds and counts.
SEARCH = r"""
import json, sys, time
from checker import bfs
from checker.config import resolve
from spec.family import FAMILY
m = FAMILY.build(resolve(FAMILY, sys.argv[1], {}))
props = [p for p in m.properties() if p.kind != "eventually"]
t = time.process_time()
r = bfs.check(m, properties=props)
import checker
print(json.dumps({"cpu": time.process_time() - t, "distinct": r.stats.distinct, "generated": r.stats.generated,
                  "depth": r.stats.depth, "verdict": r.verdict, "checker": checker.__file__}))
"""

# Runs in a subprocess of this checker: the model's own time over the search's states.
SPLIT = r"""
import json, sys, time
from checker import bfs
from checker.config import resolve
from checker.graph import explore
from spec.family import FAMILY
m = FAMILY.build(resolve(FAMILY, sys.argv[1], {}))
props = [p for p in m.properties() if p.kind != "eventually"]
t = time.process_time()
r = bfs.check(m, properties=props)
whole = time.process_time() - t
if not r.stats.complete:
    print(json.dumps({"whole": whole, "model": None})); sys.exit()
g = explore(m, max_states=r.stats.distinct)
states = g.states
state_preds = [p.predicate for p in props if p.kind in ("always", "sometimes") and not p.step]
step_preds = [p.predicate for p in props if p.step]
actions, next_state = m.actions, m.next_state
t = time.process_time()
for s in states:
    for a in actions(s):
        next_state(s, a)
model_next = time.process_time() - t
trans = [(states[a], act, states[b]) for a, act, b in g.edges]
t = time.process_time()
for s, a, u in trans:
    for p in step_preds:
        p(s, a, u)
for s in states:
    for p in state_preds:
        p(s)
model_props = time.process_time() - t
print(json.dumps({"whole": whole, "model": model_next + model_props, "next": model_next, "props": model_props}))
"""


def _tree_cpu(pid: int) -> float:
    """utime + stime of ``pid`` and its live descendants, from /proc (Linux)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, float] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            raw = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(d))
        stats[int(d)] = (int(fields[11]) + int(fields[12])) / tick
    stack = [pid]
    while stack:
        p = stack.pop()
        total += stats.get(p, 0.0)
        stack.extend(children.get(p, ()))
    return total


def run_tree(cmd: list[str], env: dict) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run ``cmd``; (result, CPU seconds of the whole process tree, wall seconds).
    The tree is sampled every 0.2 s from /proc (processes that end between two
    samples lose their last part) and compared with RUSAGE_CHILDREN (what waited
    for descendants report); the larger is kept."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, cwd=env.get("KMC_BENCH_CWD"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = 0.0
    while p.poll() is None:
        try:
            seen = max(seen, _tree_cpu(p.pid))
        except OSError:
            pass
        time.sleep(0.2)
    out, err = p.communicate()
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    waited = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return subprocess.CompletedProcess(cmd, p.returncode, out, err), max(seen, waited), wall


def checker_at(rev: str, into: Path) -> Path:
    """``checker/`` of commit ``rev``, extracted under ``into``."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "checker"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar.stdout, check=True)
    return into


def env_with(first: Path | None) -> dict:
    """The environment of a run whose ``checker`` is ``first``'s (None: this tree's).
    Runs start in ``first`` (or ROOT): ``python -c`` and ``-m`` put the current
    directory first on sys.path, so it must hold the intended ``checker/``."""
    path = [str(first)] if first else []
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path + [str(ROOT)]), KMC_BENCH_CWD=str(first or ROOT))


def search(preset: str, env: dict) -> dict:
    p = subprocess.run([sys.executable, "-c", SEARCH, preset], env=env, cwd=env["KMC_BENCH_CWD"],
                       capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"benchmark: the search of {preset} failed: {p.stderr.strip()[-400:]}")
    d = json.loads(p.stdout)
    if not d["checker"].startswith(env["KMC_BENCH_CWD"]):
        sys.exit(f"benchmark: the run meant for {env['KMC_BENCH_CWD']} imported {d['checker']}")
    return d


def whole_check(preset: str, env: dict, *extra: str) -> tuple[dict, float, float]:
    cmd = [sys.executable, "-m", "checker", "check", "--model", "spec.family:FAMILY", "--preset", preset,
           "--json", "--quiet", "--traces-dir", tempfile.mkdtemp(prefix="kmc-bench-"), *extra]
    p, cpu, wall = run_tree(cmd, env)
    if p.returncode not in (0, 1):
        sys.exit(f"benchmark: {' '.join(cmd)} failed (exit {p.returncode}): {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout), cpu, wall


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("presets", nargs="*", default=["tiny", "small", "default"])
    ap.add_argument("--before", default=BEFORE, help=f"the commit whose checker is 'before' (default {BEFORE})")
    ap.add_argument("--spark", action="store_true", help="also run Spark local[1] and local[2]")
    ap.add_argument("--no-before", action="store_true", help="skip the 'before' runs")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kmc-before-"))
    old = None if args.no_before else checker_at(args.before, tmp)
    new_env, old_env = env_with(None), env_with(old)

    print(f"# before = checker/ of {args.before}; after = this tree; {load()}")
    print()
    print("| preset | distinct | before st/CPU-s (search) | after st/CPU-s (search) | × | before kmc check CPU s "
          "| after kmc check CPU s | × |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = {}
    for preset in args.presets:
        a = search(preset, new_env)
        b = search(preset, old_env) if old else None
        _, ca, _ = whole_check(preset, new_env)
        cb = whole_check(preset, old_env)[1] if old else None
        if b and (b["distinct"], b["verdict"]) != (a["distinct"], a["verdict"]):
            sys.exit(f"benchmark: {preset}: before and after disagree: {b} vs {a}")
        ra, rb = a["distinct"] / a["cpu"], (b["distinct"] / b["cpu"] if b else None)
        rows[preset] = (a, ca)
        print(f"| `{preset}` | {a['distinct']:,} | {f'{rb:,.0f}' if rb else '-'} | {ra:,.0f} | "
              f"{f'{ra / rb:.2f}' if rb else '-'} | {f'{cb:.1f}' if cb else '-'} | {ca:.1f} | "
              f"{f'{cb / ca:.2f}' if cb else '-'} |", flush=True)
    print(f"\n({load()})\n")

    print("| preset | search CPU s | model CPU s (next states; properties) | engine CPU s | engine / model |")
    print("|---|---:|---:|---:|---:|")
    for preset in args.presets:
        p = subprocess.run([sys.executable, "-c", SPLIT, preset], env=new_env, cwd=ROOT, capture_output=True,
                           text=True)
        if p.returncode:
            sys.exit(f"benchmark: the split of {preset} failed: {p.stderr.strip()[-400:]}")
        d = json.loads(p.stdout)
        if d["model"] is None:
            print(f"| `{preset}` | {d['whole']:.2f} | (stopped early) | - | - |")
            continue
        eng = d["whole"] - d["model"]
        print(f"| `{preset}` | {d['whole']:.2f} | {d['model']:.2f} ({d['next']:.2f}; {d['props']:.2f}) | "
              f"{eng:.2f} | {eng / d['model']:.2f} |", flush=True)
    print(f"\n({load()})\n")

    if not args.spark:
        return
    print("| preset | local st/s | local CPU s | local[1] st/s | local[1] tree CPU s | local[2] st/s "
          "| local[2] tree CPU s | local[1] CPU / local | local[2] CPU / local |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for preset in args.presets:
        loc, lcpu, lwall = whole_check(preset, new_env)
        out = [f"`{preset}`", f"{loc['distinct'] / (loc['seconds'] or lwall):,.0f}", f"{lcpu:.1f}"]
        cpus = []
        for master, parts in (("local[1]", "1"), ("local[2]", "2")):
            d, cpu, wall = whole_check(preset, new_env, "--engine", "spark", "--spark-master", master,
                                       "--spark-partitions", parts)
            if (d["distinct"], d["verdict"]) != (loc["distinct"], loc["verdict"]):
                sys.exit(f"benchmark: {preset}: Spark {master} disagrees with the local engine")
            eng = d.get("engine") or {}
            secs = d["seconds"] or wall
            out += [f"{d['distinct'] / secs:,.0f}", f"{cpu:.1f}"]
            cpus.append(cpu)
            _ = eng
        out += [f"{cpus[0] / lcpu:.2f}", f"{cpus[1] / lcpu:.2f}"]
        print("| " + " | ".join(out) + " |", flush=True)
    print(f"\n({load()}; Spark st/s are over the search's own seconds, JVM start-up excluded; "
          f"tree CPU includes the JVM, its start-up and the Python workers)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
