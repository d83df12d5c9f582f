"""Every command shown in the README and docs/ is run, so the manual cannot drift.

The checked list below names each command with how long it takes: ``fast`` ones run in
the default suite, ``slow`` and ``spark`` ones under their markers (``make test`` runs
them all).  A command shown in the docs and missing here fails, and so does a command
listed here that no page shows any more.  ``console`` blocks also have their output
compared (tests/docs_blocks.py says how); ``sh`` blocks have their exit status checked.

Each block runs in a scratch directory holding copies of ``examples/`` and
``traces/known/``, with ``kmc`` on the PATH, so a command that writes a trace or a
file writes it there.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from docs_blocks import ROOT, RUN_LANGS, SHOWN_LANGS, Block, blocks, doc_files, mismatch


@dataclass(frozen=True)
class Entry:
    speed: str                     # fast | slow | spark | never
    status: int = 0                # the exit status of an ``sh`` command
    needs: tuple[str, ...] = ()    # commands to run first, in the same directory
    why: str = ""                  # for ``never``: why no test can run it
    server: bool = False           # a server (kmc explore): started on a free port, asked for a page, stopped
    report: str = ""               # a run report the command writes (in the checkout): removed first, then checked


ZOMBIE = "kmc check --preset zombie"

COMMANDS: dict[str, Entry] = {
    "make run": Entry("spark", report="build/run-report.html"),
    "make test": Entry("never", why="it is the whole suite, this test included; CI runs it"),
    "kmc cluster --brokers 3 --faults kill,stop --seconds 60": Entry(
        "never", why="a minute of a real cluster; tests/test_trace_validation.py runs a bounded kmc cluster"),
    "kmc simulate --random-priority --preset data-hw --seed 0 --quiet": Entry("fast", status=1),
    "kmc check --preset tiny": Entry("fast"),
    ZOMBIE: Entry("fast", status=1),
    "kmc replay traces/ControllerEpochFencing-zombie-86b9dc15.json": Entry("fast", needs=(ZOMBIE,)),
    "kmc check --preset tiny --invariants examples/invariants.py --continue": Entry("fast", status=1),
    "kmc check --config examples/config.toml --set brokers=3": Entry("fast", status=1),
    "kmc check --preset small --invariants examples/invariants.py --continue": Entry("slow", status=1),
    "kmc replay traces/known/ControllerEpochFencing-zombie-86b9dc15.json --step 2": Entry("fast"),
    "kmc list presets": Entry("fast"),
    "kmc graph --preset tiny --format graphml -o tiny.graphml": Entry("fast"),
    "kmc prove --brokers 7 --invariant LeaderInIsr --lemmas examples/lemmas.py": Entry("slow"),
    "kmc bmc --preset zombie --brokers 5 --steps 4": Entry("slow", status=1),
    "kmc conform --preset tiny": Entry("slow"),
    "kmc conform traces/known/ControllerEpochFencing-zombie-86b9dc15.json": Entry("fast"),
    "kmc conform --preset failover --max-states 1000 --walks 100 --depth 60": Entry("slow"),
    "kmc conform --preset tiny --probe": Entry("slow"),
    "kmc conform --preset tiny --share-prefixes": Entry("slow"),
    "kmc check --preset zombie --set max_crashes=1 --property EventuallyLeaderElected": Entry("slow", status=1),
    "kmc replay traces/EventuallyLeaderElected-zombie-custom-5635afef.json": Entry(
        "slow", needs=("kmc check --preset zombie --set max_crashes=1 --property EventuallyLeaderElected",)),
    "kmc check --preset tiny --invariants examples/liveness.py --property EventuallyAnyLeader": Entry("fast"),
    "kmc check --preset tiny --set unclean_leader_election=true --invariants examples/liveness.py "
    "--property EventuallyAnyLeader": Entry("fast"),
    "kmc graph --preset tiny --format dot -o tiny.dot": Entry("fast"),
    "kmc graph --preset small --format dot": Entry("fast"),
    "kmc prove --brokers 3 --invariant AtMostOneActiveController": Entry("fast"),
    "kmc prove --brokers 7 --invariant AtMostOneActiveController --lemmas examples/lemmas.py --quiet": Entry("slow"),
    "kmc prove --preset zombie --invariant ControllerEpochFencing --confirm --quiet": Entry("fast"),
    "kmc bmc --preset zombie --brokers 7 --steps 5": Entry("slow"),
    "kmc prove --preset reassign --brokers 9 --invariant ReassignmentLeaderInRar --invariant ReassignmentIsrInAr "
    "--invariant LeaderInIsr --lemmas examples/lemmas_reassign.py --quiet": Entry("slow"),
    "kmc explore --preset zombie": Entry("fast", server=True),
    "kmc explore traces/known/ControllerEpochFencing-no-controller-fencing-07d46b54.json": Entry("fast", server=True),
    "kmc explore traces/ControllerEpochFencing-zombie-86b9dc15.json": Entry("fast", server=True, needs=(ZOMBIE,)),
    "kmc replay traces/known/ControllerEpochFencing-zombie-86b9dc15.json --html zombie.html": Entry("fast"),
    "kmc check --preset tiny --report tiny-report.html": Entry("fast"),
    "kmc check --preset zombie --junit check.xml": Entry("fast", status=1),
    "kmc conform traces/known/ControllerEpochFencing-zombie-86b9dc15.json --junit conform.xml": Entry("fast"),
    "kmc prove --brokers 3 --invariant ControllerEpochFencing --junit prove.xml": Entry("fast"),
    "kmc mutate impl --sample 200 --seed 17": Entry(
        "never", why="hours of CPU on 2 cores (the whole conformance corpus against 200 mutants); docs/mutation.md "
                     "gives its measured scores"),
    "kmc mutate spec --sample 100 --seed 17": Entry(
        "never", why="one default test suite per surviving mutant: hours; docs/mutation.md says how far it got"),
    "kmc check --preset data-kip101-3 --set atomic_controller=false --symmetry": Entry(
        "never", why="about 15 minutes of CPU and 4.4 GiB; the trace it finds is kept under traces/known/, where "
                     "tests/test_conform_kafka.py and tests/test_impl.py replay and conform it"),
    "kmc check --preset data-kip320-3 --set atomic_controller=false --symmetry": Entry(
        "never", why="about 22 minutes of CPU and 2.7 GiB for the whole graph, more than the suite can afford; "
                     "docs/reductions.md gives the measured run"),
    "kmc check --preset data-kip279-3 --set atomic_controller=false --symmetry": Entry(
        "never", why="about 15 minutes of CPU and 3.4 GiB; the trace it finds is kept under traces/known/, where "
                     "tests/test_conform_kafka.py and tests/test_impl.py replay and conform it"),
    "kmc mutate impl --gate": Entry("never", why="tests/test_mutation_gate.py runs it (slow; about 7 minutes of CPU)"),
    "kmc mutate impl --module impl/log.py --list": Entry("fast"),
    "kmc mutate spec-quick --sample 40 --seed 17": Entry(
        "never", why="about 37 minutes of CPU: each surviving mutant runs the spec-heavy test files"),
    "kmc mutate impl-before --sample 40 --seed 17": Entry(
        "never", why="about 8 minutes of CPU (docs/mutation.md gives the measured run); a survivor replays every "
                     "trace that reaches it"),
    "kmc mutate impl --sample 40 --seed 17": Entry(
        "never", why="about 14 minutes of CPU (docs/mutation.md gives the measured run): the whole conformance "
                     "corpus's traced baseline alone is minutes"),
    "kmc check --preset small --engine spark": Entry("spark"),
    "kmc check --preset small --engine spark --checkpoint ckpt/": Entry("spark"),
    "kmc check --preset small --engine spark --resume ckpt/": Entry(
        "spark", needs=("kmc check --preset small --engine spark --checkpoint ckpt/",)),
}

# Console output that no run reproduces as shown, and why; the command still runs.
NOT_COMPARED: dict[str, str] = {
    "docs/conformance.md": "the session shows kmc conform with a bug patched into impl/ "
                           "(tests/test_conform_kafka.py checks that divergence); unpatched, it conforms",
}

SPEED_RANK = {"fast": 0, "slow": 1, "spark": 2, "never": 3}


def all_blocks() -> list[Block]:
    return [b for p in doc_files() for b in blocks(p)]


def block_speed(b: Block) -> str:
    speeds = [COMMANDS[c.text].speed for c in b.commands if c.text in COMMANDS]
    return max((s for s in speeds if s != "never"), key=SPEED_RANK.__getitem__, default="fast")


def _params():
    out = []
    for b in all_blocks():
        if b.lang not in RUN_LANGS or not b.commands:
            continue
        speed = block_speed(b)
        marks = {"slow": [pytest.mark.slow], "spark": [pytest.mark.spark, pytest.mark.slow]}.get(speed, [])
        out.append(pytest.param(b, id=b.id, marks=marks))
    return out


def test_every_block_says_what_it_is():
    untagged = [b.id for b in all_blocks() if b.lang not in RUN_LANGS + SHOWN_LANGS]
    assert not untagged, f"fenced blocks without a known language tag ({RUN_LANGS + SHOWN_LANGS}): {untagged}"


def test_every_command_shown_is_listed_and_every_listed_command_is_shown():
    shown = {c.text for b in all_blocks() for c in b.commands}
    assert not shown - COMMANDS.keys(), f"commands in the docs that tests/test_docs.py does not list: {sorted(shown - COMMANDS.keys())}"
    assert not COMMANDS.keys() - shown, f"listed commands that no page shows: {sorted(COMMANDS.keys() - shown)}"
    for text, e in COMMANDS.items():
        assert e.speed in SPEED_RANK and (e.speed != "never" or e.why), text


def test_the_matcher_catches_drift():
    out = "a\nb 0.31 s\nc 12\nd\n"
    assert mismatch(["a", "b 9.9 s", "..."], out) is None
    assert mismatch(["...", "c 12", "d"], out) is None
    assert mismatch(["a", "c 12", "..."], out)           # not consecutive
    assert mismatch(["...", "c 13", "..."], out)         # a count changed
    assert mismatch(["a", "b ... s"], out)                # the output goes on
    assert mismatch(["a ... z", "..."], out)


def _scratch(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copytree(ROOT / "traces" / "known", tmp_path / "traces" / "known")
    return tmp_path


def _env() -> dict:
    # COLUMNS: the docs show output wrapped to 100 columns, whatever terminal (or test
    # runner) this suite itself runs in
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", COLUMNS="100",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    env.pop("KMC_DEBUG", None)
    return env


def _serve(text: str, cwd: Path) -> None:
    """Start a server command on a free port (``--port 0``), ask it for its first page,
    stop it: the command works if it serves."""
    argv = [sys.executable, "-m", "checker", *shlex.split(text)[1:], "--port", "0"]
    p = subprocess.Popen(argv, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        m = re.search(r"serving on (http://\S+/)", line)
        assert m, f"$ {text}: {line}{p.stderr.read() if p.poll() is not None else ''}"
        with urllib.request.urlopen(m.group(1) + "api/page?path=0", timeout=60) as r:
            assert r.status == 200 and json.load(r)["steps"]
    finally:
        p.terminate()
        p.wait(30)


def _run(text: str, cwd: Path) -> subprocess.CompletedProcess:
    argv = shlex.split(text)
    env = _env()
    if argv[0] == "kmc":
        argv = [sys.executable, "-m", "checker", *argv[1:]]
    elif argv[0] == "python":
        argv[0] = sys.executable
    elif argv[0] == "make":
        cwd = ROOT                 # the Makefile's targets work on the checkout itself
    return subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=3600)


def _check_report(path: Path, where: str) -> None:
    """A run report as the docs promise it: the per-level plot (three series) and a
    coverage table with every column counted (no n/a), plus the never-enabled list."""
    assert path.is_file(), f"{where}: no report at {path}"
    text = path.read_text(encoding="utf-8")
    assert re.findall(r'<polyline data-series="(\w+)"', text) == ["frontier", "new", "rate"], where
    table = text[text.index('<table id="coverage">'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r'<tr class="[^"]*" data-action="[^"]+">(.*?)</tr>', table)
    cells = [re.findall(r"<td class=n>([^<]*)</td>", row) for row in rows]
    assert rows and all(len(c) == 3 and all(re.fullmatch(r"[\d,]+", x) for x in c) for c in cells), (where, cells)
    assert any(int(c[0].replace(",", "")) > 0 for c in cells) and '<p id="never-enabled">' in text, where


@pytest.mark.parametrize("block", _params())
def test_the_commands_of_a_block_run_as_shown(block: Block, tmp_path):
    cwd = _scratch(tmp_path)
    for cmd in block.commands:
        entry = COMMANDS[cmd.text]
        if entry.speed == "never":
            continue
        for first in entry.needs:
            _run(first, cwd)
        if entry.server:
            _serve(cmd.text, cwd)
            continue
        if entry.report:
            (ROOT / entry.report).unlink(missing_ok=True)
        r = _run(cmd.text, cwd)
        where = f"{block.id}: $ {cmd.text}"
        assert "Traceback" not in r.stdout, f"{where}\n{r.stdout}"
        if entry.report:
            _check_report(ROOT / entry.report, where)
        if cmd.expected is None:
            assert r.returncode == entry.status, f"{where}: exit status {r.returncode}, expected {entry.status}\n{r.stdout[-3000:]}"
        elif block.path not in NOT_COMPARED:
            why = mismatch(cmd.expected, r.stdout)
            assert why is None, f"{where}: {why}\n---- output ----\n{r.stdout[-6000:]}"
