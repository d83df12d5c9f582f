"""How many brokers `kmc prove` handles within a minute, per invariant.

For each invariant with a symbolic encoding, run `kmc prove --brokers N --invariant
NAME --lemmas examples/lemmas.py --quiet` (the default preset, RF 3; for
AtMostOneLeaderPerEpoch also --lemmas examples/lemmas_epochs.py) for several N,
each in its own process with a 60 s limit, and report the largest N that finished in
time (found by galloping and bisection), its time and its verdict (PROVED, or NOT
INDUCTIVE with the action of the CTI).  N stops at the family's broker range (16).
A script, not a test: wall-clock times depend on the machine and its load (printed).

    python benchmarks/prove.py                 # every invariant
    python benchmarks/prove.py LeaderInIsr     # some
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 60.0
MAX_BROKERS = 16
INVARIANTS = ["LeaderInIsr", "IsrSubsetOfAssignedReplicas", "AtMostOneLeaderPerEpoch", "AtMostOneActiveController",
              "ControllerEpochFencing", "LegalStateTransitions", "EpochsMonotonic", "LeaderElectedFromIsr"]


# AtMostOneLeaderPerEpoch also needs the pairwise lemmas, which slow every proof down
EXTRA = {"AtMostOneLeaderPerEpoch": ["lemmas_epochs.py"]}


def run(name: str, brokers: int) -> tuple[float | None, str]:
    cmd = [sys.executable, "-m", "checker", "prove", "--model", "spec.family:FAMILY", "--brokers", str(brokers),
           "--invariant", name, "--quiet"]
    for f in ["lemmas.py", *EXTRA.get(name, [])]:
        cmd += ["--lemmas", str(ROOT / "examples" / f)]
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED="0")
    start = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=LIMIT, check=False)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    took = time.perf_counter() - start
    if p.returncode == 0:
        return took, "PROVED"
    if p.returncode == 1 and "NOT INDUCTIVE" in p.stdout:
        line = next(x for x in p.stdout.splitlines() if x.startswith("NOT INDUCTIVE"))
        return took, "CTI: " + line.split(" is broken by ")[1].split(" from ")[0]
    return took, f"exit {p.returncode}: {p.stderr.strip()[:120]}"


def largest(name: str) -> tuple[tuple[int, float, str] | None, str]:
    """The largest N in 3..MAX_BROKERS that finishes within LIMIT: a gallop (3, 5, 9,
    13, 16) and then a bisection, assuming the time grows with N (it does, roughly:
    more instances per action, more variables per frame)."""
    ok: dict[int, tuple[float, str]] = {}
    bad: dict[int, str] = {}

    def trial(n: int) -> bool:
        took, verdict = run(name, n)
        print(f"  {name} N={n}: {verdict} {'' if took is None else f'{took:.1f} s'}", file=sys.stderr, flush=True)
        if took is None:
            bad[n] = verdict
            return False
        ok[n] = (took, verdict)
        return True

    lo, hi = 2, None
    for n in (3, 5, 9, 13, MAX_BROKERS):
        if trial(n):
            lo = n
        else:
            hi = n
            break
    if hi is not None:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if trial(mid):
                lo = mid
            else:
                hi = mid
    best = (lo, *ok[lo]) if lo in ok else None
    nxt = f"N={hi}: over {LIMIT:.0f} s" if hi is not None else f"N > {MAX_BROKERS} not allowed"
    return best, nxt


def main(names: list[str]) -> None:
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; limit {LIMIT:.0f} s per run")
    print(f"| invariant | largest N within {LIMIT:.0f} s | seconds at that N | verdict | next N |")
    print("|---|---:|---:|---|---|")
    for name in names:
        best, nxt = largest(name)
        if best is None:
            print(f"| `{name}` | < 3 | | | {nxt} |", flush=True)
        else:
            print(f"| `{name}` | {best[0]} | {best[1]:.1f} | {best[2]} | {nxt} |", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:] or INVARIANTS)
