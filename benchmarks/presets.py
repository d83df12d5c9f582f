"""Benchmark: distinct states per CPU second and peak memory for each preset.

Not a test: the figures depend on the machine and its load, which is printed at the
start and at the end.  Every preset runs in its own ``kmc check`` process (peak RSS
is per process), timed in CPU seconds, which the shared machine's other jobs do not
inflate as they do wall time: "CPU s" is the command's own (``process_time`` after
the imports: the search, liveness, the report), "tree CPU s" the whole process with
its start-up (user + system of the waited-for child).  The same command first runs a
baseline (the ``tiny`` preset), so each row is also a ratio against a baseline
measured on the same machine at the same time.  Wall seconds are printed beside.

    python benchmarks/presets.py                 # every preset of the kafka family
    python benchmarks/presets.py tiny small      # some of them
    python benchmarks/presets.py --repeat 3      # the cheapest of 3 runs of each
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BASELINE = "tiny"

# The child: ``kmc check`` run in-process, its CPU seconds written to argv[1].  The
# clock starts after the imports, so that the interpreter's start-up (about half a
# CPU second, most of ``tiny``'s whole run) does not hide the search's cost.
CHILD = r"""
import sys, time
import checker.cli, spec.family
t = time.process_time()
try:
    code = checker.cli.main(sys.argv[2:])
except SystemExit as e:
    code = e.code
with open(sys.argv[1], "w") as f:
    f.write(repr(time.process_time() - t))
sys.exit(code)
"""


def usage_error(message: str) -> None:
    """Bad input: one line on stderr, with the command as given, and exit status 2."""
    print(f"benchmark: {message} (reproduce: python benchmarks/presets.py {' '.join(sys.argv[1:])})",
          file=sys.stderr)
    sys.exit(2)


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(preset: str, scratch: Path) -> dict:
    """One ``kmc check`` of ``preset``: its ``--json`` report, plus ``cpu`` (CPU
    seconds of the command, imports left out), ``tree`` (CPU seconds of the whole
    process tree, start-up included) and ``wall`` (seconds of the whole process)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    argv = ["check", "--model", "spec.family:FAMILY", "--preset", preset, "--json", "--quiet",
            "--traces-dir", str(scratch / "traces")]
    cpu_file = scratch / "cpu"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CHILD, str(cpu_file), *argv], env=env, cwd=ROOT,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 1):
        sys.exit(f"benchmark: preset {preset} failed (exit {p.returncode}): {p.stderr.strip()[-400:]} "
                 f"(reproduce: kmc {' '.join(argv)})")
    d = json.loads(p.stdout)
    d["cpu"] = float(cpu_file.read_text())
    d["tree"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    d["wall"] = wall
    return d


def main() -> None:
    from spec.family import FAMILY

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("presets", nargs="*", help="presets to run (default: all)")
    ap.add_argument("--repeat", default="1", help="runs per preset; the cheapest in CPU seconds is kept")
    ap.error = lambda message: usage_error(f"{message}; see --help")   # one line, not argparse's usage
    args = ap.parse_args()
    try:
        repeat = int(args.repeat)
    except ValueError:
        repeat = 0
    if repeat < 1:
        usage_error(f"--repeat {args.repeat}: give a whole number of runs, 1 or more")
    presets = args.presets or list(FAMILY.presets)
    unknown = [p for p in presets if p not in FAMILY.presets]
    if unknown:
        usage_error(f"unknown preset {unknown[0]!r}: name one of {', '.join(FAMILY.presets)}")

    with tempfile.TemporaryDirectory(prefix="kmc-bench-") as scratch:
        def best(preset: str) -> dict:
            runs = [run(preset, Path(scratch)) for _ in range(repeat)]
            return min(runs, key=lambda d: d["cpu"])

        print(f"# {load()}, {os.cpu_count()} cores; {repeat} run(s) per preset, the cheapest kept")
        base = best(BASELINE)
        rate = base["distinct"] / base["cpu"]
        print(f"baseline: preset {BASELINE}: {rate:.0f} states per CPU second, "
              f"{base['peak_memory_bytes'] / 2**20:.1f} MiB peak")
        header = f"{'preset':<22} {'verdict':<9} {'distinct':>9} {'depth':>5} {'CPU s':>7} {'st/CPU-s':>9} " \
                 f"{'tree CPU s':>10} {'wall s':>7} {'peak MiB':>8} {'x base st/CPU-s':>15} {'x base memory':>13}"
        print(header)
        print("-" * len(header))
        for preset in presets:
            d = base if preset == BASELINE else best(preset)
            r = d["distinct"] / d["cpu"]
            print(f"{preset:<22} {d['verdict']:<9} {d['distinct']:>9} {d['depth']:>5} {d['cpu']:>7.2f} "
                  f"{r:>9.0f} {d['tree']:>10.2f} {d['wall']:>7.2f} {d['peak_memory_bytes'] / 2**20:>8.1f} {r / rate:>15.2f} "
                  f"{d['peak_memory_bytes'] / base['peak_memory_bytes']:>13.2f}", flush=True)
        print(f"# {load()}")


if __name__ == "__main__":
    main()
