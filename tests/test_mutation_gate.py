"""The CI mutation gate (slow): a fixed seeded sample of the reference broker's mutants
must be detected by the gate's corpus at least as often as when issue 17 measured it.
The sample, seed, corpus (the conformance corpus's cheapest runs) and minimum score are
the impl target's ``gate`` (spec/mutation.py); ``kmc mutate impl --gate`` is the same
run by hand.  Cost: docs/mutation.md gives the measured CPU time (a few minutes on 2
cores): the corpus runs cheapest first, its traced baseline takes seconds, each mutant
replays only the traces that execute its lines and stops at its first divergence."""

from __future__ import annotations

import json

import pytest

from spec.family import FAMILY
from tests import cli_support


@pytest.mark.slow
def test_the_conformance_corpus_keeps_its_mutation_score(tmp_path):
    gate = FAMILY.mutation_targets["impl"].gate
    r = cli_support.kmc("mutate", "impl", "--gate", "--workers", "2", "--quiet", "--no-diffs",
                        "--json", tmp_path / "gate.json", timeout=3600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr
    doc = json.loads((tmp_path / "gate.json").read_text())
    assert doc["gate"] and doc["sample"] == gate.sample and doc["seed"] == gate.seed
    assert doc["corpus"] == [run.label for run in gate.corpus.runs]
    assert doc["score"] >= gate.min_score
