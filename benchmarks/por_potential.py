"""Benchmark: what partial-order reduction could cut, and what its conditions let it cut.

Not a test.  On a sample of reachable states (``checker.symmetry.sample_states``:
the first 300 in breadth-first order plus 60 random walks of 60 steps), for a
preset of the Kafka family, it prints:

1. **semantic commutation**: of the pairs of enabled actions, how many commute in
   one step (both orders are enabled and reach the same state), and in how many
   states some enabled action commutes with every other one.  This is an upper
   bound of what any reduction built on one-step independence could hope for;
2. **visibility**: how many of the enabled action classes write something a
   property reads (with the preset's properties, or the one named by
   ``--property``).  A stubborn set holding one of them is not used;
3. **dependency closures**: in how many states the closure of some enabled class
   (``checker.por.Ample``'s construction: dependents of enabled classes, enablers
   of disabled ones, the guards applied) leaves out an enabled action, first
   ignoring visibility, then with it, which is what ``--por`` explores;
4. the most frequent dependency chains that pull every enabled action in.

    python benchmarks/por_potential.py data-kip279-3 --set atomic_controller=false
    python benchmarks/por_potential.py small --property LeaderInIsr
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from checker.config import parse_set, resolve  # noqa: E402
from checker.por import Ample  # noqa: E402
from checker.symmetry import sample_states  # noqa: E402
from spec.family import FAMILY  # noqa: E402


def _closure(ample: Ample, state, seeds, enabled) -> dict:
    """Class -> the class that pulled it in (None for a seed)."""
    parent = {c: None for c in seeds}
    work = list(seeds)
    while work:
        c = work.pop(0)
        for d in (ample.dep[c] if c in enabled else ample.enablers_in(state, c)):
            if d not in parent:
                parent[d] = c
                work.append(d)
    return parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("preset")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--property", action="append", default=[])
    args = ap.parse_args(argv)
    over = parse_set(args.set)
    m = FAMILY.build(resolve(FAMILY, args.preset, over))
    props = [p for p in m.properties() if not args.property or p.name in args.property]
    ample = Ample(m, None, props)
    states = sample_states(m, bfs_states=300, walks=60, steps=60)
    enc = m.encode
    n = pairs = commuting = lone = visible = classes = 0
    free = with_vis = 0
    chains: collections.Counter = collections.Counter()
    for s in states:
        acts = list(m.actions(s))
        if len(acts) < 2:
            continue
        n += 1
        succ = [m.next_state(s, a) for a in acts]
        after = [set(m.actions(t)) for t in succ]
        ok = [[True] * len(acts) for _ in acts]
        for i, j in itertools.combinations(range(len(acts)), 2):
            a, b = acts[i], acts[j]
            c = (b in after[i] and a in after[j]
                 and enc(m.next_state(succ[i], b)) == enc(m.next_state(succ[j], a)))
            ok[i][j] = ok[j][i] = c
            pairs += 1
            commuting += c
        lone += any(all(ok[i][j] for j in range(len(acts)) if j != i) for i in range(len(acts)))
        enabled = {ample.fps.class_of(a) for a in acts}
        classes += len(enabled)
        visible += len(enabled & ample.visible)
        best = len(acts)
        for seed in enabled:
            parent = _closure(ample, s, [seed], enabled)
            cut = sum(1 for a in acts if ample.fps.class_of(a) not in parent)
            if cut:
                best = 0
            else:
                for e in enabled - {seed}:
                    link = [e]
                    while parent[link[-1]] is not None:
                        link.append(parent[link[-1]])
                    chains[" -> ".join(f"{x[0]}{'' if x in enabled else '(disabled)'}"
                                       for x in reversed(link[:3]))] += 1
        free += best == 0
        with_vis += len(ample.stubborn(acts, s)) < len(acts)
    print(f"preset {args.preset} {over or ''}: {len(states)} sampled states, {n} with two or more enabled actions")
    print(f"  enabled pairs commuting in one step: {commuting} of {pairs} ({100 * commuting / max(pairs, 1):.0f}%); "
          f"states with an action commuting with every other: {lone} of {n}")
    print(f"  enabled classes visible to {len(props)} properties: {visible} of {classes}")
    print(f"  states with a dependency closure that leaves an enabled action out: {free} of {n} ignoring "
          f"visibility, {with_vis} of {n} with it (what --por explores)")
    print("  most frequent chains by which a seed pulls another enabled class in (last three links):")
    for chain, k in chains.most_common(8):
        print(f"    {k:6d}  {chain}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
