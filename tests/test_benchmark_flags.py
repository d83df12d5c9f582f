"""benchmarks/engine.py is not a test, but its bad flags are input: a one-line
error that names the fix, and exit status 2, before any search runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bench(*args: str, repo: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, KMC_BENCH_GIT=str(repo))    # the repository 'before' is extracted from
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "engine.py"), *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def old_checker(tmp_path: Path) -> Path:
    """A repository whose one commit has a checker/ without the search core."""
    repo = tmp_path / "repo"
    (repo / "checker").mkdir(parents=True)
    (repo / "checker" / "__init__.py").write_text("")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "old"], check=True)
    return repo


def test_split_before_needs_a_checker_with_the_search_core(tmp_path):
    r = bench("--before", "HEAD", "--split-before", "tiny", repo=old_checker(tmp_path))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "pass --before 5d4989d or a later commit" in r.stderr
    assert "(reproduce: python benchmarks/engine.py --before HEAD --split-before tiny)" in r.stderr


def test_an_unknown_before_commit_is_a_one_line_error(tmp_path):
    r = bench("--before", "nosuchrev", "tiny", repo=old_checker(tmp_path))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "--before nosuchrev: git archive could not extract it" in r.stderr and "--no-before" in r.stderr


def test_the_extracted_checker_is_removed_on_the_way_out(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = dict(os.environ, KMC_BENCH_GIT=str(old_checker(tmp_path)), TMPDIR=str(scratch))
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "engine.py"), "--before", "HEAD", "--split-before",
                        "tiny"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert list(scratch.iterdir()) == []


def presets_bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "presets.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_presets_bad_flags_are_one_line_errors():
    for args, says in ((["nope"], "unknown preset 'nope': name one of tiny, "),
                       (["--repeat", "0", "tiny"], "--repeat 0: give a whole number of runs, 1 or more"),
                       (["--repeat", "x"], "--repeat x: give a whole number of runs"),
                       (["--repeat"], "argument --repeat: expected one argument; see --help"),
                       (["--bogus"], "unrecognized arguments: --bogus; see --help")):
        r = presets_bench(*args)
        assert (r.returncode, r.stdout, r.stderr.count("\n")) == (2, "", 1), (args, r)
        assert says in r.stderr and f"(reproduce: python benchmarks/presets.py {' '.join(args)})" in r.stderr


def test_presets_measures_cpu_against_the_baseline():
    r = presets_bench("tiny", "unclean")
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines()
            if line.split() and line.split()[0] in ("tiny", "unclean")}
    assert rows["tiny"][1:4] == ["ok", "1184", "18"] and rows["unclean"][1:4] == ["violated", "293", "7"]
    assert float(rows["tiny"][-2]) == 1.0     # the baseline against itself
    cpu, rate, tree = (float(x) for x in rows["unclean"][4:7])
    assert 0 < cpu <= tree and abs(rate * cpu - 293) <= 0.005 * rate + 1    # cpu is printed to 0.01 s
    assert r.stdout.startswith("# load average ") and "# load average " in r.stdout.splitlines()[-1]
