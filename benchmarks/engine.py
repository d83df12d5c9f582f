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
   and transitions of the search, in the same process, against the whole search,
   against a hand-written breadth-first search of the same model (a set of the
   states, no fingerprints or paths, the collector off: the baseline issue 12 named),
   and against the floor: the same search keeping only what kmc must keep, the
   engine's fingerprint and a parent link per state (what it costs above the model,
   no engine that keeps those can avoid);
3. Spark ``local[1]`` and ``local[2]``: states/s and CPU seconds of the whole process
   tree against the local engine's (``--spark``; it starts a JVM per run).

Before and after alternate which runs first (preset by preset, and Spark run by
Spark run), and the local engine runs before and after the Spark runs, so a load
that changes during an invocation does not favour one side; ``--repeat N`` runs
each Spark column N times, interleaved.

    python benchmarks/engine.py                         # tiny small default
    python benchmarks/engine.py small default --spark   # and Spark on them
    python benchmarks/engine.py --before 6962db0 tiny
    python benchmarks/engine.py --model tests.toys:FAMILY default tiny:toy=grid,n=300
    python benchmarks/engine.py --spark-only --before 5d4989d --spark-before --repeat 2 small:max_records=1
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = {"ref": "spec.family:FAMILY"}   # the family every run builds its model from (--model)
BEFORE = "6962db0"   # main before issue 12: gc on, liveness explored in a second pass

# The start of every script run in a subprocess: the family named by --model, and the
# model of one configuration (argv: family reference, preset, JSON of its overrides).
PRELUDE = r"""
import importlib, json, sys, time
from checker.config import resolve
_mod, _, _attr = sys.argv[1].partition(":")
FAMILY = getattr(importlib.import_module(_mod), _attr)
m = FAMILY.build(resolve(FAMILY, sys.argv[2], json.loads(sys.argv[3])))
"""

# Runs in a subprocess: one safety search of a preset, its CPU seconds and counts.
SEARCH = PRELUDE + r"""
from checker import bfs
props = [p for p in m.properties() if p.kind != "eventually"]
t = time.process_time()
r = bfs.check(m, properties=props)
import checker
print(json.dumps({"cpu": time.process_time() - t, "distinct": r.stats.distinct, "generated": r.stats.generated,
                  "depth": r.stats.depth, "verdict": r.verdict, "checker": checker.__file__}))
"""

# Runs in a subprocess of this checker: the model's own time over the search's states.
# Three rounds, each of: the search with the contract checks of its first successors
# (types, determinism: actions and next_state called twice; checker.search.SAMPLE_SIZE),
# the search without them, and the model alone over the states and transitions of
# the search; each figure is the smallest of its three, so that another job's load in
# one round does not tip the difference (engine = search - model).
SPLIT = PRELUDE + r"""
import gc
from checker import bfs
import checker.search as core
from checker.graph import explore
props = [p for p in m.properties() if p.kind != "eventually"]
sample = getattr(core, "SAMPLE_SIZE", None)
state_preds = [p.predicate for p in props if p.kind in ("always", "sometimes") and not p.step]
step_preds = [p.predicate for p in props if p.step]
actions, next_state = m.actions, m.next_state
runs = {True: [], False: []}
best = trans = None
hand = []
floor = []


# The end of a search timed with the collector off (t: its start): its CPU seconds
# into `into`, the collector back on, and its count checked against the search's.
def timed(into, t, found, distinct, who):
    into.append(time.process_time() - t)
    gc.enable()
    if found != distinct:
        sys.exit(f"the {who} found {found} states, the search {distinct}")


try:
    from checker.fingerprint import exact_fingerprint_fn, fingerprint_fn
    from checker.search import RECENT_LIMIT
except ImportError:     # a --before checker without them: no floor column
    fingerprint_fn = None
for _ in range(3):
    for checked in (True, False):
        if sample is not None:
            core.SAMPLE_SIZE = sample if checked else 0
        t = time.process_time()
        r = bfs.check(m, properties=props)
        runs[checked].append(time.process_time() - t)
    if sample is not None:
        core.SAMPLE_SIZE = sample
    if not r.stats.complete:
        print(json.dumps({"whole": min(runs[True]), "model": None})); sys.exit()
    if trans is None:
        g = explore(m, max_states=r.stats.distinct)
        states = g.states
        trans = [(states[a], act, states[b]) for a, act, b in g.edges]
    t = time.process_time()
    for s in states:
        for a in actions(s):
            next_state(s, a)
    model_next = time.process_time() - t
    t = time.process_time()
    for s, a, u in trans:
        for p in step_preds:
            p(s, a, u)
    for s in states:
        for p in state_preds:
            p(s)
    model_props = time.process_time() - t
    if best is None or model_next + model_props < sum(best):
        best = (model_next, model_props)
    # The hand-written explorer that issue 12 measured kmc against: a set of the states
    # themselves (no fingerprint, no path), the same model calls and properties, the
    # collector off.
    gc.disable()
    t = time.process_time()
    seen = set(m.init_states())
    frontier = list(seen)
    for u in frontier:
        for p in state_preds:
            p(u)
    while frontier:
        nxt = []
        for s in frontier:
            for a in actions(s):
                u = next_state(s, a)
                for p in step_preds:
                    p(s, a, u)
                if u not in seen:
                    seen.add(u)
                    nxt.append(u)
                    for p in state_preds:
                        p(u)
        frontier = nxt
    timed(hand, t, len(seen), r.stats.distinct, "hand-written explorer")
    del seen, frontier, nxt
    # The floor of a search that keeps what kmc must keep: the engine's own fingerprint
    # of each state (its determinism across processes is what lets Spark partition the
    # visited set) and a parent link per state (what a counterexample is rebuilt from),
    # a frontier of (fingerprint, state), the same model calls and properties, the
    # collector off; no coverage counts, contract checks, bounds or progress.  The
    # fingerprint is the hot loop's: the model's exact one as it is, else blake2b of
    # the encoding, skipped for a successor met recently where the model promises
    # equal_states_encode_equally.  What the engine costs above the model here, no
    # engine that keeps those can avoid.
    if fingerprint_fn is not None:
        fpf = exact_fingerprint_fn(m) or fingerprint_fn(m)
        recent = {} if getattr(m, "equal_states_encode_equally", False) else None
        gc.disable()
        t = time.process_time()
        visited = {}
        frontier = []
        for i, u in enumerate(m.init_states()):
            h = fpf(u)
            if h not in visited:
                visited[h] = (None, i)
                frontier.append((h, u))
                for p in state_preds:
                    p(u)
        while frontier:
            nxt = []
            add = nxt.append
            for sfp, s in frontier:
                for i, a in enumerate(actions(s)):
                    u = next_state(s, a)
                    for p in step_preds:
                        p(s, a, u)
                    h = None if recent is None else recent.get(u)
                    if h is None:
                        h = fpf(u)
                        if recent is not None:
                            if len(recent) >= RECENT_LIMIT:
                                recent.clear()
                            recent[u] = h
                    if h in visited:
                        continue
                    visited[h] = (sfp, i)
                    add((h, u))
                    for p in state_preds:
                        p(u)
            frontier = nxt
        timed(floor, t, len(visited), r.stats.distinct, "floor search")
        del visited, frontier, nxt, recent
whole, unchecked = min(runs[True]), (min(runs[False]) if sample is not None else None)
model_next, model_props = best
print(json.dumps({"whole": whole, "unchecked": unchecked, "model": model_next + model_props, "next": model_next,
                  "props": model_props, "distinct": r.stats.distinct, "generated": r.stats.generated,
                  "levels": len(r.stats.levels), "hand": min(hand), "floor": min(floor) if floor else None}))
"""


def _tree_cpu(pid: int, seen: dict[int, tuple[str, float]]) -> None:
    """utime + stime of ``pid`` and its live descendants, from /proc (Linux), into
    ``seen`` (pid -> (command name, the largest CPU seconds read))."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[str, float]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            raw = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        comm = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(d))
        stats[int(d)] = (comm, (int(fields[11]) + int(fields[12])) / tick)
    stack = [pid]
    while stack:
        p = stack.pop()
        if p in stats:
            comm, cpu = stats[p]
            seen[p] = (comm, max(cpu, seen.get(p, ("", 0.0))[1]))
        stack.extend(children.get(p, ()))


JVM_CPU: dict[str, float] = {}   # the last run_tree's shares (from /proc): "last" (the JVM), "driver", "workers"


def run_tree(cmd: list[str], env: dict) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run ``cmd``; (result, CPU seconds of the whole process tree, wall seconds).
    The tree is sampled every 0.2 s from /proc (processes that end between two
    samples lose their last part) and compared with RUSAGE_CHILDREN (what waited
    for descendants report); the larger is kept.  ``JVM_CPU["last"]``: the CPU
    seconds of the tree's ``java`` processes as sampled."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, cwd=env.get("KMC_BENCH_CWD"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs: dict[int, tuple[str, float]] = {}
    while p.poll() is None:
        try:
            _tree_cpu(p.pid, procs)
        except OSError:
            pass
        time.sleep(0.2)
    out, err = p.communicate()
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    waited = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    seen = sum(cpu for _, cpu in procs.values())
    JVM_CPU["last"] = sum(cpu for comm, cpu in procs.values() if comm == "java")
    JVM_CPU["driver"] = procs.get(p.pid, ("", 0.0))[1]
    JVM_CPU["workers"] = sum(cpu for pid, (comm, cpu) in procs.items() if comm != "java" and pid != p.pid)
    JVM_CPU["processes"] = sum(1 for pid, (comm, _) in procs.items() if comm != "java" and pid != p.pid)
    return subprocess.CompletedProcess(cmd, p.returncode, out, err), max(seen, waited), wall


def checker_at(rev: str, into: Path, model: bool = False) -> Path:
    """``checker/`` of commit ``rev`` (and ``spec/`` with ``model``), extracted under ``into``."""
    repo = os.environ.get("KMC_BENCH_GIT", str(ROOT))    # a copy of the tree outside its repository
    tar = subprocess.run(["git", "-C", repo, "archive", rev, "checker", *(["spec"] if model else [])],
                         capture_output=True)
    if tar.returncode:
        usage_error(f"--before {rev}: git archive could not extract it ({tar.stderr.decode().strip()[-200:]}); "
                    f"name a commit of this repository, or pass --no-before")
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar.stdout, check=True)
    return into


def usage_error(message: str) -> None:
    """A bad flag: one line on stderr, with the command as given, and exit status 2."""
    print(f"benchmark: {message} (reproduce: python benchmarks/engine.py {' '.join(sys.argv[1:])})", file=sys.stderr)
    sys.exit(2)


def env_with(first: Path | None) -> dict:
    """The environment of a run whose ``checker`` is ``first``'s (None: this tree's).
    Runs start in ``first`` (or ROOT): ``python -c`` and ``-m`` put the current
    directory first on sys.path, so it must hold the intended ``checker/``."""
    path = [str(first)] if first else []
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path + [str(ROOT)]), KMC_BENCH_CWD=str(first or ROOT))


def script_args(spec: str) -> list[str]:
    """The arguments of PRELUDE for ``spec`` (``preset`` or ``preset:key=value,...``)."""
    preset, sets = config_of(spec)
    return [MODEL["ref"], preset, json.dumps(sets)]


def search(preset: str, env: dict) -> dict:
    p = subprocess.run([sys.executable, "-c", SEARCH, *script_args(preset)], env=env, cwd=env["KMC_BENCH_CWD"],
                       capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"benchmark: the search of {preset} failed: {p.stderr.strip()[-400:]}")
    d = json.loads(p.stdout)
    if not d["checker"].startswith(env["KMC_BENCH_CWD"]):
        sys.exit(f"benchmark: the run meant for {env['KMC_BENCH_CWD']} imported {d['checker']}")
    return d


def whole_check(preset: str, env: dict, *extra: str) -> tuple[dict, float, float]:
    name, sets = config_of(preset)
    cmd = [sys.executable, "-m", "checker", "check", "--model", MODEL["ref"], "--preset", name,
           *[a for k, v in sets.items() for a in ("--set", f"{k}={json.dumps(v) if not isinstance(v, str) else v}")],
           "--json", "--quiet", "--traces-dir", tempfile.mkdtemp(prefix="kmc-bench-"), *extra]
    p, cpu, wall = run_tree(cmd, env)
    if p.returncode not in (0, 1):
        sys.exit(f"benchmark: {' '.join(cmd)} failed (exit {p.returncode}): {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout), cpu, wall


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("presets", nargs="*", default=["tiny", "small", "default"],
                    help="configurations: PRESET or PRESET:KEY=VALUE,... (default: tiny small default)")
    ap.add_argument("--model", default=MODEL["ref"],
                    help="the model family, module:attribute (default %(default)s; e.g. tests.toys:FAMILY)")
    ap.add_argument("--before", default=BEFORE, help=f"the commit whose checker is 'before' (default {BEFORE})")
    ap.add_argument("--spark", action="store_true", help="also run Spark local[1] and local[2]")
    ap.add_argument("--no-before", action="store_true", help="skip the 'before' runs")
    ap.add_argument("--spark-before", action="store_true", help="also run the 'before' checker on Spark")
    ap.add_argument("--spark-only", action="store_true", help="only the Spark table")
    ap.add_argument("--before-model", action="store_true",
                    help="the 'before' runs take spec/ from --before too (e.g. to compare the model's partition_key)")
    ap.add_argument("--repeat", type=int, default=1, help="run each Spark column this many times, interleaved")
    ap.add_argument("--split-before", action="store_true",
                    help="also split the 'before' checker's search between the model and the engine")
    ap.add_argument("--spark-fingerprint", action="store_true",
                    help="also run local[2] with states placed by fingerprint (the model's partition_key ignored)")
    args = ap.parse_args()
    MODEL["ref"] = args.model
    tmp = Path(tempfile.mkdtemp(prefix="kmc-before-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)    # the extracted 'before' checker, gone at the end
    old = None if args.no_before else checker_at(args.before, tmp, args.before_model)
    if old is not None and args.split_before and not (old / "checker" / "search.py").exists():
        usage_error(f"--split-before needs a 'before' checker with checker/search.py (the search core), which "
                    f"{args.before} does not have: pass --before 5d4989d or a later commit")
    new_env, old_env = env_with(None), env_with(old)

    if args.spark_only:
        spark_table(args.presets, new_env, old_env if args.spark_before and old else None, args.spark_fingerprint,
                    args.repeat)
        return
    print(f"# before = checker/ of {args.before}; after = this tree; {load()}")
    print()
    print("| preset | distinct | before st/CPU-s (search) | after st/CPU-s (search) | × | before kmc check CPU s "
          "| after kmc check CPU s | × |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for k, preset in enumerate(args.presets):
        # Before and after alternate which runs first, preset by preset, so that a
        # load that rises or falls during the run does not favour one side.
        flip = bool(k % 2) and old is not None
        b = search(preset, old_env) if flip else None
        a = search(preset, new_env)
        b = b or (search(preset, old_env) if old else None)
        cb = whole_check(preset, old_env)[1] if old and not flip else None
        _, ca, _ = whole_check(preset, new_env)
        cb = cb or (whole_check(preset, old_env)[1] if old else None)
        if b and (b["distinct"], b["verdict"]) != (a["distinct"], a["verdict"]):
            sys.exit(f"benchmark: {preset}: before and after disagree: {b} vs {a}")
        ra, rb = a["distinct"] / a["cpu"], (b["distinct"] / b["cpu"] if b else None)
        print(f"| `{preset}` | {a['distinct']:,} | {f'{rb:,.0f}' if rb else '-'} | {ra:,.0f} | "
              f"{f'{ra / rb:.2f}' if rb else '-'} | {f'{cb:.1f}' if cb else '-'} | {ca:.1f} | "
              f"{f'{cb / ca:.2f}' if cb else '-'} |", flush=True)
    print(f"\n({load()})\n")

    print("| preset | checker | distinct (transitions) | search CPU s | model CPU s (next states; properties) | "
          "engine CPU s | engine / model | first successors' checks CPU s | engine / model without them | "
          "hand-written BFS CPU s | search / hand-written | floor CPU s | floor's engine / model |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k, preset in enumerate(args.presets):
        sides = [("after", new_env), ("before", old_env if old and args.split_before else None)]
        for label, env in (sides[::-1] if k % 2 else sides):    # alternately first
            if env is None:
                continue
            p = subprocess.run([sys.executable, "-c", SPLIT, *script_args(preset)], env=env, cwd=env["KMC_BENCH_CWD"],
                               capture_output=True, text=True)
            if p.returncode:
                sys.exit(f"benchmark: the split of {preset} ({label}) failed: {p.stderr.strip()[-400:]}")
            d = json.loads(p.stdout)
            if d["model"] is None:
                print(f"| `{preset}` | {label} | - | {d['whole']:.2f} | (stopped early) | - | - | - | - | - | - | - | - |")
                continue
            eng, model, hand = d["whole"] - d["model"], d["model"], d["hand"]
            checks = "-" if d["unchecked"] is None else f"{d['whole'] - d['unchecked']:.3f}"
            bare = "-" if d["unchecked"] is None else f"{(d['unchecked'] - model) / model:.2f}"
            print(f"| `{preset}` | {label} | {d['distinct']:,} ({d['generated']:,}) | {d['whole']:.3f} | "
                  f"{model:.3f} ({d['next']:.3f}; {d['props']:.3f}) | {eng:.3f} | {eng / model:.2f} | {checks} | "
                  f"{bare} | {hand:.3f} | {d['whole'] / hand:.2f} | "
                  + ("- | - |" if d.get("floor") is None else f"{d['floor']:.3f} | {(d['floor'] - model) / model:.2f} |"),
                  flush=True)
    print(f"\n({load()}; each figure the smallest of three rounds in one process, each round the search with "
          f"and without the checks of the first 1,000 successors, then the model alone, then a hand-written "
          f"breadth-first search: a set of the states, the same model calls and properties, the collector off, "
          f"then the floor: the engine's fingerprints and a parent link per state, nothing else kept or "
          f"counted)\n")

    if args.spark:
        spark_table(args.presets, new_env, old_env if args.spark_before and old else None, args.spark_fingerprint,
                    args.repeat)


# Runs in a subprocess: one safety search on an engine; what it found.  No eventually
# property: kmc check skips them on Spark (only the local engine builds the state graph).
ENGINE = PRELUDE + r"""
from checker import bfs
engine = sys.argv[4]
if sys.argv[6:] == ["fingerprint"]:
    m.partition_key = None     # Spark places states by fingerprint, as for a model without the hook
props = [p for p in m.properties() if p.kind != "eventually"]
if engine == "local":
    r = bfs.check(m, properties=props)
    extra = {}
else:
    from checker.spark import check
    r = check(m, properties=props, master=engine, partitions=int(sys.argv[5]))
    e = r.engine
    extra = {"startup": e.get("startup_seconds"), "levels": len(e.get("levels", [])),
             "driver_levels": e.get("driver_levels", 0), "executor_cpu": e.get("executor_cpu_seconds"),
             "shipped": sum(lv.get("shipped", 0) for lv in e.get("levels", [])),
             "encoded": sum(lv.get("encoded", 0) for lv in e.get("levels", []))}
    # Load balance over the Spark levels: the busiest partition's task CPU against the
    # mean (a level waits for its slowest task), and its share of the frontiers.
    spark_levels = [lv for lv in e.get("levels", []) if lv.get("part_cpu")]
    top = sum(max(lv["part_cpu"]) for lv in spark_levels)
    mean = sum(sum(lv["part_cpu"]) / len(lv["part_cpu"]) for lv in spark_levels)
    front = [sum(col) for col in zip(*[lv["part_frontier"] for lv in spark_levels])] or [0]
    extra["balance_cpu"] = top / mean if mean else 1.0
    extra["balance_states"] = max(front) / (sum(front) / len(front)) if sum(front) else 1.0
import checker
print(json.dumps({"distinct": r.stats.distinct, "generated": r.stats.generated, "depth": r.stats.depth,
                  "verdict": r.verdict, "seconds": r.stats.seconds, "checker": checker.__file__, **extra}))
"""


def config_of(spec: str) -> tuple[str, dict]:
    """``small`` or ``small:max_records=1,brokers=3``: a preset and its overrides."""
    preset, _, rest = spec.partition(":")
    sets = {}
    for item in filter(None, rest.split(",")):
        k, _, v = item.partition("=")
        sets[k] = json.loads(v) if v[:1].isdigit() or v in ("true", "false") else v
    return preset, sets


def engine_run(spec: str, env: dict, engine: str, parts: int = 0, placement: str = "model") -> tuple[dict, float, float]:
    cmd = [sys.executable, "-c", ENGINE, *script_args(spec), engine, str(parts), placement]
    p, cpu, wall = run_tree(cmd, env)
    if p.returncode:
        sys.exit(f"benchmark: {spec} on {engine} failed (exit {p.returncode}): {p.stderr.strip()[-600:]}")
    d = json.loads(p.stdout.strip().splitlines()[-1])
    if not d["checker"].startswith(env["KMC_BENCH_CWD"]):
        sys.exit(f"benchmark: the run meant for {env['KMC_BENCH_CWD']} imported {d['checker']}")
    d["jvm"] = JVM_CPU.get("last", 0.0)
    d["driver_cpu"], d["workers_cpu"] = JVM_CPU.get("driver", 0.0), JVM_CPU.get("workers", 0.0)
    d["processes"] = JVM_CPU.get("processes", 0)
    return d, cpu, wall


def spark_table(specs: list[str], env: dict, before: dict | None, fingerprint: bool = False, repeat: int = 1) -> None:
    """Spark local[1] (1 partition) and local[2] (2 partitions) against the local
    engine on the same safety search: CPU seconds of the whole process tree.
    ``fingerprint``: also local[2] with states placed by fingerprint (the model's
    ``partition_key`` ignored), in the same run.  ``before``: the same Spark runs of
    the 'before' checker.

    The order is chosen so that a load that changes during the invocation biases no
    column: the local engine runs first and again last (the ratios are against the
    mean of the two), and each Spark run of this checker is paired with the same run
    of the 'before' one, the pair's order alternating (after/before, then
    before/after, ...).  ``repeat`` runs every Spark column that many times,
    interleaved the same way; each run's figure is printed."""
    runs = [("local[1]", 1, "model"), ("local[2]", 2, "model")]
    runs += [("local[2]", 2, "fingerprint")] if fingerprint else []
    names = [master if placement == "model" else f"{master} by fingerprint" for master, _, placement in runs]
    cols = ["configuration", "distinct", "depth", "local CPU s (first; last)"]
    for name in names:
        cols += [f"{name} tree CPU s (JVM)", f"{name} / local"] + ([f"before: {name} / local"] if before and
                                                                   "fingerprint" not in name else [])
    cols += ["levels (on the driver)", "shipped / distinct (" + "; ".join(n[6:].replace("]", "") for n in names) + ")"]
    print(f"# Spark against the local engine, whole process tree CPU; {load()}")
    print("| " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * (len(cols) - 1))
    split = []
    for spec in specs:
        loc, first, _ = engine_run(spec, env, "local")
        print(f"({spec} local: {first:.1f} CPU s, {load()})", file=sys.stderr, flush=True)
        got: dict[tuple[str, str], list[tuple[float, dict]]] = {}
        k = 0
        for _ in range(repeat):
            for (master, parts, placement), name in zip(runs, names):
                sides = [("after", env)] + ([("before", before)] if before and placement == "model" else [])
                if k % 2:
                    sides.reverse()
                k += 1
                for side, side_env in sides:
                    d, cpu, _ = engine_run(spec, side_env, master, parts, placement)
                    if (d["distinct"], d["generated"], d["depth"], d["verdict"]) != \
                            (loc["distinct"], loc["generated"], loc["depth"], loc["verdict"]):
                        sys.exit(f"benchmark: {spec}: Spark {master} ({side}) disagrees with the local engine: "
                                 f"{d} vs {loc}")
                    got.setdefault((side, name), []).append((cpu, d))
                    ld = load()
                    print(f"({spec} {name} {side}: {cpu:.1f} CPU s, {ld})", file=sys.stderr, flush=True)
                    split.append(f"| `{spec}` | {name} | {side} | {cpu:.1f} | {d['driver_cpu']:.1f} | {d['jvm']:.1f} | "
                                 f"{d['workers_cpu']:.1f} ({d['processes']}) | {d['executor_cpu']:.1f} | "
                                 f"{d['startup']:.1f} | {d['balance_cpu']:.2f}; {d['balance_states']:.2f} | "
                                 f"{d.get('encoded', 0) / max(1, d['distinct']):.2f} | {ld.split()[2]} |")
        _, last, _ = engine_run(spec, env, "local")
        print(f"({spec} local again: {last:.1f} CPU s, {load()})", file=sys.stderr, flush=True)
        lcpu = (first + last) / 2
        row = [f"`{spec}`", f"{loc['distinct']:,}", str(loc["depth"]), f"{first:.1f}; {last:.1f}"]
        ship, lev = [], ""
        for name in names:
            after = got[("after", name)]
            row += [", ".join(f"{cpu:.1f} ({d['jvm']:.1f})" for cpu, d in after),
                    ", ".join(f"**{cpu / lcpu:.2f}**" for cpu, _ in after)]
            if ("before", name) in got:
                row.append(", ".join(f"{cpu / lcpu:.2f}" for cpu, _ in got[("before", name)]))
            d = after[-1][1]
            ship.append(f"{d['shipped'] / max(1, d['distinct']):.2f}")
            lev = f"{d['levels']} ({d['driver_levels']})"
        row += [lev, "; ".join(ship)]
        print("| " + " | ".join(row) + " |", flush=True)
    print(f"\n({load()}; tree CPU = the driver, the JVM (in brackets, sampled from /proc) and the Python "
          f"workers, JVM start-up included; the same safety properties on every engine; ratios against the "
          f"mean of the local engine's first and last runs)")
    print("\n| configuration | master | checker | tree CPU s | driver CPU s | JVM CPU s | Python workers CPU s "
          "(processes) | in the tasks CPU s | start-up wall s | balance: CPU; states | encoded / distinct | "
          "load (1 min) after |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(split))
    print("\n(in the order run; driver: the Python process that runs the search; workers: every other non-JVM "
          "process of the tree (pyspark.daemon and its workers); in the tasks: the CPU the expand and merge tasks "
          "measure themselves; balance: over the Spark levels, the busiest partition's task CPU against the mean "
          "partition's, and the largest partition's share of the frontiers against the mean (1.00: even); encoded: "
          "the successors the expand tasks fingerprinted, the others being known to their successor cache)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
