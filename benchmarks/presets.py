"""Benchmark: distinct states per second and peak memory for each preset.

Not a test: wall-clock figures depend on the machine and its load.  Every preset
runs in its own process (peak RSS is per process), and the same command first runs
a baseline (the `tiny` preset), so each row is also reported as a ratio against a
baseline measured on the same machine at the same time.

    python benchmarks/presets.py                 # every preset of the kafka family
    python benchmarks/presets.py tiny small      # some of them
    python benchmarks/presets.py --repeat 3      # best of 3 for states/s
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BASELINE = "tiny"


def run(preset: str, traces: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "checker", "check", "--model", "spec.family:FAMILY", "--preset", preset,
           "--json", "--quiet", "--traces-dir", str(traces)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit(f"benchmark: preset {preset} failed (exit {p.returncode}): {p.stderr.strip()}")
    return json.loads(p.stdout)


def main() -> None:
    from spec.family import FAMILY

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("presets", nargs="*", help="presets to run (default: all)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per preset; the best states/s is kept")
    args = ap.parse_args()
    presets = args.presets or list(FAMILY.presets)
    unknown = [p for p in presets if p not in FAMILY.presets]
    if unknown:
        sys.exit(f"benchmark: unknown preset(s) {', '.join(unknown)}; known: {', '.join(FAMILY.presets)}")
    traces = Path(os.environ.get("TMPDIR", "/tmp")) / "kmc-bench-traces"

    def best(preset: str) -> dict:
        runs = [run(preset, traces) for _ in range(max(1, args.repeat))]
        return max(runs, key=lambda d: d["states_per_second"])

    base = best(BASELINE)
    header = f"{'preset':<22} {'verdict':<9} {'distinct':>9} {'depth':>5} {'seconds':>8} {'states/s':>9} " \
             f"{'peak MiB':>8} {'x base states/s':>15} {'x base memory':>13}"
    print(f"baseline: preset {BASELINE}: {base['states_per_second']:.0f} states/s, "
          f"{base['peak_memory_bytes'] / 2**20:.1f} MiB peak")
    print(header)
    print("-" * len(header))
    for preset in presets:
        d = base if preset == BASELINE else best(preset)
        print(f"{preset:<22} {d['verdict']:<9} {d['distinct']:>9} {d['depth']:>5} {d['seconds']:>8.2f} "
              f"{d['states_per_second']:>9.0f} {d['peak_memory_bytes'] / 2**20:>8.1f} "
              f"{d['states_per_second'] / base['states_per_second']:>15.2f} "
              f"{d['peak_memory_bytes'] / base['peak_memory_bytes']:>13.2f}")


if __name__ == "__main__":
    main()
