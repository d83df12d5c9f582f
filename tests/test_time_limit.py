"""``--time-limit`` and Ctrl-C: a search that cannot finish ends with the usual
summary (states, depth, why it stopped) instead of a bare "interrupted".

Grid(1000) has 1,002,001 states: far more than either limit lets a search reach
here, so every run below is stopped, never finished.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from checker import bfs
from checker.errors import UsageError
from checker.result import BOUNDED, TIME_LIMIT
from checker.search import Settings
from tests import cli_support
from tests.toys import Grid

ROOT = Path(__file__).resolve().parent.parent
BIG = ["--model", "tests.toys:FAMILY", "--set", "toy=grid", "--set", "n=1000"]


SLOW = """import time
from checker.model import always

def slow(s):
    time.sleep(0.0002)
    return True

Slow = always("Slow", slow, "takes its time, so that the search is still running when it is interrupted")
"""


def test_the_time_limit_is_a_bound():
    r = bfs.check(Grid(1000), settings=Settings(time_limit=0.3))
    st = r.stats
    assert r.verdict == BOUNDED and not st.complete and st.stopped_by == TIME_LIMIT
    assert 0 < st.distinct < 1_002_001 and st.seconds >= 0.3
    # A bound, not a broken search: the states stored are exactly those of the
    # first depths (Grid's level d holds d + 1 states) and part of the next.
    d = st.depth
    assert d * (d + 1) // 2 < st.distinct <= (d + 1) * (d + 2) // 2


@pytest.mark.parametrize("bad", [0, -1, True, "5"])
def test_a_time_limit_that_makes_no_sense_is_a_usage_error(bad):
    with pytest.raises(UsageError, match="time_limit must be a positive number of seconds"):
        Settings(time_limit=bad).validate()


def test_kmc_check_time_limit_reports_how_far_it_got(tmp_path):
    inv = tmp_path / "slow.py"
    inv.write_text(SLOW)
    r = cli_support.kmc("check", *BIG, "--invariants", inv, "--time-limit", "1", "--traces-dir", tmp_path, "--json",
                        timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "bounded" and doc["stopped_by"] == "time limit" and doc["complete"] is False
    assert 0 < doc["distinct"] < 1_002_001
    assert "time limit 1 s" in r.stderr              # the header names the bound
    assert "verdict: BOUNDED: no violation before the time limit ran out (--time-limit, after 1 s)" in r.stderr


def test_kmc_check_rejects_a_bad_time_limit(tmp_path):
    r = cli_support.kmc("check", *BIG, "--time-limit", "0", "--traces-dir", tmp_path)
    cli_support.one_line_error(r, "--time-limit", code=2)



def _interruptible() -> None:
    # A suite started in the background by a non-interactive shell inherits SIGINT
    # ignored, and Python then installs no KeyboardInterrupt handler: give the child
    # the default disposition, as a terminal's foreground job has.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_prints_the_summary_then_one_line(tmp_path, sig):
    """SIGTERM (timeout, a CI limit) ended the process at once, without the summary."""
    # Grid(1000) alone can finish in a few seconds, before a loaded machine delivers
    # the signal; a property that sleeps 0.2 ms a state makes the search take minutes.
    inv = tmp_path / "slow.py"
    inv.write_text(SLOW)
    args = [*BIG, "--invariants", str(inv), "--traces-dir", str(tmp_path)]
    proc = subprocess.Popen([sys.executable, "-m", "checker", "check", *args],
                            cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, preexec_fn=_interruptible)
    try:
        first = proc.stderr.readline()               # a progress line: the search is under way
        assert first.startswith("progress: "), first + proc.stderr.read()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
    assert proc.returncode == 130, err
    assert "verdict: BOUNDED: no violation before it was interrupted (Ctrl-C" in out
    assert "distinct states: " in out
    lines = [ln for ln in err.splitlines() if not ln.startswith("progress: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("kmc: interrupted; the summary above is how far the search got")
    assert lines[0].endswith(f"(reproduce: kmc check {' '.join(args)})")
