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
