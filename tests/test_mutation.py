"""kmc mutate: the AST mutator (checker/mutation.py) and the runner
(checker/mutation_run.py), on a toy family whose implementation lives in its own
package (tests/data/mutate_toy): mutants are killed where the corpus sees them,
survive where it does not, equivalent ones are not scored, and the score gates."""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checker.mutation import OPERATORS, load_equivalents, mutants_of, sample
from tests import cli_support

TOY = Path(__file__).parent / "data" / "mutate_toy"
MODEL = ["--model", "toyfam:FAMILY"]

SOURCE = '''\
LIMIT = 3


def f(xs, y, flag=False):
    """A docstring is never mutated."""
    total = 0
    for x in xs:
        if x < y and not flag:
            total += x
        elif x in xs or x is None:
            total = total - 1
    print(f"total {total}")
    return min(total, LIMIT) if flag else True
'''


def test_every_operator_gives_code_that_parses_and_changes_one_place():
    ms = mutants_of(SOURCE, "m.py")
    assert set(OPERATORS) <= {m.operator for m in ms}
    assert len({m.id for m in ms}) == len(ms)
    for m in ms:
        new = m.apply(SOURCE)
        ast.parse(new)
        assert new != SOURCE
        old_lines, new_lines = SOURCE.splitlines(), new.splitlines()
        changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b]
        assert changed and min(changed) + 1 >= m.line and max(changed) + 1 <= m.end_line, m.label
    # docstrings and f-strings are not mutated (the print may be deleted)
    assert not any(m.line == 5 for m in ms)
    assert [m.operator for m in ms if m.line == 12] == ["delete"]


def test_a_mutant_keeps_its_id_when_other_code_moves():
    ms = {m.id: m for m in mutants_of(SOURCE, "m.py")}
    moved = {m.id: m for m in mutants_of("import os\n\n\n" + SOURCE, "m.py")}
    assert set(ms) <= set(moved)
    assert all(moved[i].line == ms[i].line + 3 for i in ms)
    # the same change twice in one function gets two ids
    twice = mutants_of("def g(a):\n    return a < 1 or a < 1\n", "m.py")
    assert len([m for m in twice if m.mutated == "a <= 1"]) == 2


def test_the_sample_is_seeded_and_in_source_order():
    ms = mutants_of(SOURCE, "m.py")
    a, b = sample(ms, 10, 7), sample(ms, 10, 7)
    assert [m.id for m in a] == [m.id for m in b] and len(a) == 10
    assert [m.id for m in sample(ms, 10, 8)] != [m.id for m in a]
    assert [m.line for m in a] == sorted(m.line for m in a)


def test_the_equivalent_mutants_file_needs_a_reason(tmp_path):
    good = tmp_path / "eq.txt"
    good.write_text("# comment\nm-0123abcd somewhere | because\n")
    assert load_equivalents(good) == {"m-0123abcd": "because"}
    bad = tmp_path / "bad.txt"
    bad.write_text("m-0123abcd no reason here\n")
    with pytest.raises(ValueError, match="bad.txt:1"):
        load_equivalents(bad)


@pytest.fixture
def toy(tmp_path):
    shutil.copytree(TOY, tmp_path / "toy")
    return tmp_path / "toy"


def test_kmc_mutate_on_a_toy_reports_killed_survived_equivalent_and_the_score(toy):
    r = cli_support.kmc("mutate", *MODEL, "--json", "out.json", "--quiet", cwd=toy, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    doc = json.loads((toy / "out.json").read_text())
    verdicts = {o["mutant"]["id"]: o for o in doc["outcomes"]}
    assert doc["mutants_total"] == len(verdicts) == 32
    # killed ones say where the corpus first told them apart
    inc = verdicts["m-294e951a"]                 # self.n += 1 -> self.n -= 1
    assert inc["verdict"] == "killed" and inc["where"] == "two --probe"
    assert "diverges at step 1, Inc(): value: model 1, implementation -1" in inc["detail"]
    # only the probe sees an implementation that can do more than the model
    assert "enables Inc(), which the model does not" in verdicts["m-da9a6aa8"]["detail"]
    # the projection never shows `resets`: listed as equivalent, not run, not scored
    eq = [o for o in doc["outcomes"] if o["verdict"] == "equivalent"]
    assert len(eq) == 6 and all(o["reason"] == "resets is never observed" for o in eq)
    # debug() is never run by the corpus: its mutants survive without a process
    unreached = [o for o in doc["outcomes"] if o["where"] == "never executed by the corpus"]
    assert {o["mutant"]["scope"] for o in unreached} == {"CounterImpl.debug"} and len(unreached) == 4
    assert all(o["verdict"] == "survived" for o in unreached)
    survived = [o for o in doc["outcomes"] if o["verdict"] == "survived"]
    killed = [o for o in doc["outcomes"] if o["verdict"] == "killed"]
    assert len(killed) + len(survived) + len(eq) == 32
    assert doc["detected"] == len(killed) and doc["scored"] == 26
    assert f"score: {len(killed)} of 26 non-equivalent mutants detected: {100 * len(killed) / 26:.1f}%" in out
    # the tables, and the survivors with their diffs
    assert "by module:" in out and "by operator:" in out and "toyimpl/counter.py" in out
    assert "-        return max(self.n, 0)\n      +        return min(self.n, 0)" in out
    assert "killed (" in out and "equivalent (6): not run, not scored" in out
    # never overwritten
    again = cli_support.kmc("mutate", *MODEL, "--json", "out.json", cwd=toy)
    line = cli_support.one_line_error(again, "--json 'out.json' exists; it is not overwritten: choose another name",
                                      reproduce="kmc mutate")
    assert "--force" not in line      # kmc mutate has no --force


def test_the_baseline_in_stretches_records_what_one_process_records(toy, tmp_path, monkeypatch):
    """With two workers the baseline is cut into two stretches replayed at once
    (checker.mutation_run.baseline): the corpus's units get the lines they get in one
    process (or more), so no mutant replays fewer of them, and a failing stretch fails
    the baseline."""
    from checker.config import resolve
    from checker.mutation import OPERATORS, collect
    from checker.mutation_run import KILLED, SURVIVED, Run, baseline, plan, prepare_conform

    monkeypatch.syspath_prepend(str(toy))
    before = set(sys.modules)
    try:
        from toyfam import FAMILY
    finally:
        for name in set(sys.modules) - before:     # toyfam goes with the test
            if name.split(".")[0] in ("toyfam", "toyimpl"):
                monkeypatch.delitem(sys.modules, name)

    target = FAMILY.mutation_targets["impl"]
    job = prepare_conform(FAMILY, "toyfam:FAMILY", "toyimpl", target.corpus, toy, resolve)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    job_path = scratch / "job.json"
    job_path.write_text(json.dumps(job))
    units = sum(len(r["traces"]) for r in job["runs"])
    assert units >= 2
    one, two = (baseline(Run(toy, job, [], workers=w), str(scratch), str(job_path)) for w in (1, 2))
    assert one["verdict"] == two["verdict"] == SURVIVED and (one["processes"], two["processes"]) == (1, 2)
    assert set(one["coverage"]) == set(two["coverage"]) and len(one["coverage"]) == units + 1   # and "import"
    for unit, files in one["coverage"].items():
        for f, lines in files.items():
            assert set(lines) <= set(two["coverage"][unit][f]), (unit, f)
    # both ways pick the same units for every mutant
    mutants = collect(toy, ["toyimpl/counter.py"], OPERATORS, validate=False)
    plans = [plan(Run(toy, job, mutants, baseline=b["seconds"]), b["coverage"]) for b in (one, two)]
    assert {m: u for m, (u, _) in plans[0].items()} == {m: u for m, (u, _) in plans[1].items()}
    # a failure in the second stretch only (the run "three": Inc from 2 adds 2) fails the
    # baseline, where one process says it fails
    src = toy / "toyimpl" / "counter.py"
    src.write_text(src.read_text().replace("self.n += 1", "self.n += 1 if self.n < 2 else 2"))
    bad, alone = (baseline(Run(toy, job, [], workers=w), str(scratch), str(job_path)) for w in (2, 1))
    assert bad["verdict"] == alone["verdict"] == KILLED and bad["processes"] == 2
    assert bad["where"] == alone["where"] and bad["where"].startswith("three"), bad


def test_a_json_file_that_is_a_dangling_link_is_refused_up_front(toy):
    """Path.exists() follows the link: the run went on, and open(..., "x") failed at its end."""
    (toy / "out.json").symlink_to(toy / "nowhere.json")
    # (a --mutant that does not exist: the run would stop there, after the check)
    r = cli_support.kmc("mutate", *MODEL, "--json", "out.json", "--mutant", "m-00000000", cwd=toy)
    cli_support.one_line_error(r, "--json 'out.json' is a symbolic link", reproduce="kmc mutate")
    assert (toy / "out.json").is_symlink() and not (toy / "nowhere.json").exists()


def test_a_json_file_in_a_missing_directory_is_refused_up_front(toy):
    # Before, only an existing file was refused up front: a missing directory failed
    # with a traceback at the end of the run.
    r = cli_support.kmc("mutate", *MODEL, "--json", "nodir/out.json", "--mutant", "m-00000000", cwd=toy)
    cli_support.one_line_error(r, "cannot write --json 'nodir/out.json': directory", reproduce="kmc mutate")


def test_the_score_gates_and_a_sample_is_reproducible(toy):
    r = cli_support.kmc("mutate", *MODEL, "--sample", "5", "--seed", "3", "--min-score", "100", "--quiet", cwd=toy)
    listed = cli_support.kmc("mutate", *MODEL, "--sample", "5", "--seed", "3", "--list", cwd=toy)
    ids = [ln.split()[0] for ln in listed.stdout.splitlines() if ln.startswith("m-")]
    assert len(ids) == 5 and all(i in r.stdout for i in ids)
    score = [ln for ln in r.stdout.splitlines() if ln.startswith("score:")][0]
    if "100.0%" in score:
        assert r.returncode == 0
    else:
        cli_support.one_line_error(r, "below the minimum 100%", code=1, reproduce="kmc mutate")


def test_the_gate_runs_its_own_sample_and_corpus_and_fails_below_its_level(toy):
    r = cli_support.kmc("mutate", *MODEL, "--gate", "--json", "gate.json", "--quiet", cwd=toy)
    doc = json.loads((toy / "gate.json").read_text())
    assert doc["gate"] and doc["sample"] == 6 and doc["seed"] == 3 and doc["corpus"] == ["two --probe"]
    assert "corpus: 1 conformance runs, cheapest first: two --probe;" in r.stdout
    listed = cli_support.kmc("mutate", *MODEL, "--sample", "6", "--seed", "3", "--list", cwd=toy)
    assert [o["mutant"]["id"] for o in doc["outcomes"]] == \
        [ln.split()[0] for ln in listed.stdout.splitlines() if ln.startswith("m-")]
    # the toy's gate asks for 100%: a survivor fails it (exit 1, one line)
    assert doc["detected"] < doc["scored"]
    cli_support.one_line_error(r, "below the minimum 100%", code=1, reproduce="kmc mutate")


@pytest.mark.parametrize("args, needle", [
    (["nosuch"], "no mutation target 'nosuch'; choose one of impl"),
    (["--module", "nothing/*.py"], "no module of toyimpl/ matches"),
    (["--mutant", "m-00000000"], "no mutant m-00000000"),
    (["--operator", "swap"], "unknown choice 'swap'"),
    # nan compared false with every score: a gate that always passed
    (["--min-score", "nan"], "argument --min-score: expects a percentage from 0 to 100, got 'nan'"),
    (["--min-score", "101"], "expects a percentage from 0 to 100, got '101'"),
    (["--min-score", "-1"], "expects a percentage from 0 to 100, got '-1'"),
    # the gate's own sample and seed silently won
    (["--gate", "--sample", "5"], "--gate runs the gate's own sample and seed"),
    (["--gate", "--seed", "1"], "drop --seed, or drop --gate"),
    # the named mutants ran whatever --sample said
    (["--mutant", "m-00000000", "--sample", "5"], "--mutant runs the mutants it names, not a sample; drop --sample"),
    (["--mutant", "m-00000000", "--seed", "1"], "drop --seed, or drop --mutant"),
    # --list runs nothing: these were accepted and had no effect (--json wrote no file)
    (["--list", "--json", "out.json"], "--list runs nothing, so --json has no effect; drop --json, or drop --list"),
    (["--list", "--min-score", "50"], "so --min-score has no effect"),
    (["--list", "--min-score", "0"], "so --min-score has no effect"),
    (["--list", "--workers", "3"], "so --workers has no effect"),
    (["--list", "--timeout", "9"], "so --timeout has no effect"),
    (["--list", "--engine", "spark"], "so --engine has no effect"),
    (["--module", "nothing/*.py"], "e.g. --module 'toyimpl/*.py'"),
])
def test_bad_input_is_one_line_exit_2(toy, args, needle):
    cli_support.one_line_error(cli_support.kmc("mutate", *MODEL, *args, cwd=toy), needle, reproduce="kmc mutate")


def test_list_shows_the_diffs_unless_no_diffs(toy):
    """--no-diffs was accepted with --list and the diffs printed anyway."""
    with_diffs = cli_support.kmc("mutate", *MODEL, "--list", "--sample", "3", cwd=toy)
    without = cli_support.kmc("mutate", *MODEL, "--list", "--sample", "3", "--no-diffs", cwd=toy)
    assert with_diffs.returncode == without.returncode == 0
    labels = [ln for ln in with_diffs.stdout.splitlines() if ln.startswith("m-")]
    assert len(labels) == 3 and any(ln.startswith("    ") for ln in with_diffs.stdout.splitlines())
    assert [ln for ln in without.stdout.splitlines() if ln.startswith("m-")] == labels
    assert not any(ln.startswith("    ") for ln in without.stdout.splitlines())


def test_a_bad_equivalents_line_and_a_failing_corpus_are_reported(toy):
    (toy / "equivalent.txt").write_text("m-1234 oops\n")
    cli_support.one_line_error(cli_support.kmc("mutate", *MODEL, cwd=toy), "equivalent.txt:1",
                               reproduce="kmc mutate")
    (toy / "equivalent.txt").write_text("")
    src = toy / "toyimpl" / "counter.py"
    src.write_text(src.read_text().replace("self.n = 0\n        self.resets", "self.n = 1\n        self.resets"))
    r = cli_support.kmc("mutate", *MODEL, "--quiet", cwd=toy)
    cli_support.one_line_error(r, "fails on the unmutated code", code=1, reproduce="kmc mutate")


def test_sigterm_stops_the_running_mutants_and_removes_the_scratch_directory(toy, tmp_path):
    pids, scratch = tmp_path / "pids", tmp_path / "scratch"
    pids.mkdir()
    scratch.mkdir()
    env = dict(os.environ, PYTHONPATH=str(cli_support.ROOT), TOY_PIDS=str(pids), TMPDIR=str(scratch))
    proc = subprocess.Popen([sys.executable, "-m", "checker", "mutate", "slow", *MODEL, "--sample", "4",
                             "--workers", "2", "--quiet"], cwd=toy, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while len(list(pids.iterdir())) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        children = [int(p.read_text() or 0) for p in pids.iterdir()]
        assert len(children) == 2 and all(children), (proc.poll(), children)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    cli_support.one_line_error(subprocess.CompletedProcess(proc.args, proc.returncode, out, err),
                               "terminated (SIGTERM)", code=130, reproduce="kmc mutate")
    for pid in children:                           # killed, and no third mutant started
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert len(list(pids.iterdir())) == 2
    assert list(scratch.iterdir()) == []           # the snapshot and every mutant's copy removed


@pytest.mark.spark
def test_spark_runs_one_mutant_per_task_with_the_same_verdicts(toy):
    local = cli_support.kmc("mutate", *MODEL, "--sample", "12", "--json", "local.json", "--quiet", cwd=toy)
    spark = cli_support.kmc("mutate", *MODEL, "--sample", "12", "--json", "spark.json", "--engine", "spark",
                            "--quiet", cwd=toy, timeout=900)
    assert local.returncode == spark.returncode == 0, spark.stderr
    pick = lambda f: [(o["mutant"]["id"], o["verdict"], o["where"], o["detail"])  # noqa: E731
                      for o in json.loads((toy / f).read_text())["outcomes"]]
    assert pick("local.json") == pick("spark.json")
