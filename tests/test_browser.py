"""The explorer, the replay page and the run report in a real browser (marker ``browser``).

Headless Chromium from Debian's packages (``scripts/ensure-chromium``, called by
``make test``), driven through Selenium and Debian's chromedriver, which shares the
browser's version.  Each test saves a screenshot under ``build/browser/`` (the test
artefacts; ``KMC_ARTEFACTS`` moves them).

What is checked against what: the timeline's arrows and marks against expectations
computed here from the trace alone (who was elected with which controller epoch, which
step delivers what); the highlighted fields against ``checker.statediff.diff`` of the
trace's recorded views; the text of each step against ``kmc replay``'s output.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import pytest

from checker.statediff import diff, flatten

from checker.trace import load_trace
from cli_support import ROOT, kmc

pytestmark = pytest.mark.browser

TRACES = sorted((ROOT / "traces" / "known").glob("ControllerEpochFencing-*.json"))
ZOMBIE = next(p for p in TRACES if "-zombie-" in p.name)
ARTEFACTS = Path(os.environ.get("KMC_ARTEFACTS", ROOT / "build" / "browser"))
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1400,1000"]


@pytest.fixture(scope="module")
def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("selenium is not installed: it is in the test extras (make .venv/.installed installs it)")

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_bin = shutil.which("chromedriver")
    if not chromium or not driver_bin:
        pytest.fail("headless Chromium is not installed: run `bash scripts/ensure-chromium` (make test does)")
    os.environ.setdefault("SE_OFFLINE", "true")         # Selenium Manager must not download anything
    profile = tempfile.mkdtemp(prefix="kmc-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    drv = webdriver.Chrome(service=Service(executable_path=driver_bin), options=opts)
    drv.set_page_load_timeout(60)
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    yield drv
    drv.quit()
    shutil.rmtree(profile, ignore_errors=True)


def shot(drv, name: str) -> Path:
    path = ARTEFACTS / f"{name}.png"
    drv.save_screenshot(str(path))
    return path


def wait(drv, condition, timeout: float = 30):
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(drv, timeout).until(lambda d: condition(d))


def js(drv, script: str, *args):
    return drv.execute_script(script, *args)


def start_explore(*args) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, "-m", "checker", "explore", *map(str, args), "--port", "0"], cwd=ROOT,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.search(r"http://[\d.]+:\d+/", line)
    if not m:
        p.kill()
        raise AssertionError(f"kmc explore did not start: {line}{p.stderr.read()}")
    return p, m.group(0)


def replay_blocks(trace_file: Path) -> dict[int, list[str]]:
    """``kmc replay``'s text per step: the ``step N ...`` line and the lines under it."""
    r = kmc("replay", trace_file)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    blocks: dict[int, list[str]] = {}
    current = None
    for line in r.stdout.splitlines():
        m = re.match(r"step (\d+)  ", line)
        if m:
            current = int(m.group(1))
            blocks[current] = [line]
        elif current is not None and line.startswith(" "):
            blocks[current].append(line)
        else:
            current = None
    return blocks


def expected_timeline(trace) -> tuple[set, set]:
    """From the trace alone: the requests delivered, as (step, sender lane, receiver
    lane), and the partition-state writes, as (step, writer lane)."""
    elected: dict[int, int] = {}
    deliveries, writes = set(), set()
    for i, st in enumerate(trace.steps[1:], 1):
        a = st.action
        if a.name == "ElectController":
            elected[trace.steps[i].state["zk"]["controller_epoch"]] = a.get("broker")
        if a.name.startswith("Deliver"):
            sender = elected[a.get("controller_epoch")]
            deliveries.add((i, f"broker {sender}", f"broker {a.get('broker')}"))
        if a.name == "ElectLeader":
            writes.add((i, f"broker {a.get('controller')}"))
    return deliveries, writes


def page_state(drv) -> dict:
    return js(drv, """
        const q = (s) => Array.from(document.querySelectorAll(s));
        return {
          cursor: Number((document.querySelector('#steps li.current') || {dataset: {step: -1}}).dataset.step),
          title: document.getElementById('step-title').textContent,
          changes: document.getElementById('changes').textContent,
          changed: q('#view .changed').map(e => e.dataset.key),
          leaves: Object.fromEntries(q('#view .field').map(e => [e.dataset.key, JSON.parse(e.dataset.value)])),
          arrows: q('svg.timeline .tl-arrow').map(e => [Number(e.dataset.step), e.dataset.source, e.dataset.lane,
                                                       e.dataset.category, e.dataset.label]),
          marks: q('svg.timeline .tl-mark').map(e => [Number(e.dataset.step), e.dataset.lane, e.dataset.category]),
          steps: q('#steps li').map(e => e.textContent),
        };""")


def check_step(drv, trace, i: int, blocks: dict[int, list[str]]) -> dict:
    s = page_state(drv)
    assert s["cursor"] == i
    assert s["title"] == blocks[i][0]
    if i:
        assert s["changes"] == "\n".join(blocks[i][1:])
        keys = {k for k, _a, _b in diff(trace.steps[i - 1].state, trace.steps[i].state)}
        present = set(flatten(trace.steps[i].state))
        highlighted = set(s["changed"])
        for k in keys:
            if k in present:
                assert k in highlighted, (i, k)
            elif any(p.startswith(k + ".") or p.startswith(k + "[") for p in present):
                assert k in highlighted, (i, k)              # a container that appeared
        for h in highlighted:
            assert any(h == k or h.startswith(k + ".") or h.startswith(k + "[") for k in keys), (i, h)
    else:
        assert s["changed"] == []
    assert s["leaves"] == flatten(trace.steps[i].state)
    return s


@pytest.mark.parametrize("trace_file", TRACES, ids=lambda p: p.stem)
def test_step_through_a_fencing_trace(browser, trace_file):
    trace = load_trace(trace_file)
    blocks = replay_blocks(trace_file)
    proc, url = start_explore(trace_file)
    try:
        browser.get(url)
        wait(browser, lambda d: len(d.find_elements("css selector", "#steps li")) == len(trace.steps))
        s = check_step(browser, trace, 0, blocks)
        deliveries, writes = expected_timeline(trace)
        arrows = {(a[0], a[1], a[2]) for a in s["arrows"] if a[3] in ("request", "rejected")}
        marks = {(m[0], m[1]) for m in s["marks"] if m[2] in ("request", "rejected")}
        for step, sender, receiver in deliveries:
            assert (step, sender, receiver) in arrows or (sender == receiver and (step, receiver) in marks), \
                (step, sender, receiver, s["arrows"])
        assert len(arrows) == len({d for d in deliveries if d[1] != d[2]})
        elections = {(a[0], a[1]) for a in s["arrows"] if a[3] == "election" and a[2] == "ZooKeeper"}
        assert writes <= elections, (writes, s["arrows"])
        crashes = {(m[0], m[1]) for m in s["marks"] if m[2] == "fault"}
        for i, st in enumerate(trace.steps[1:], 1):
            if st.action.name == "ExpireSession":
                assert (i, f"broker {st.action.get('broker')}") in crashes
        for i in range(1, len(trace.steps)):
            browser.find_element("id", "forward").click()
            wait(browser, lambda d, i=i: page_state(d)["cursor"] == i)
            check_step(browser, trace, i, blocks)
        assert browser.find_element("id", "forward").get_attribute("disabled")
        # the zombie's write: the last step is an arrow from the superseded controller
        last = len(trace.steps) - 1
        if trace_file == ZOMBIE:
            assert (last, "broker 0") in elections
            violated = js(browser, "return Array.from(document.querySelectorAll('#properties .holds-false'))"
                                   ".map(e => e.dataset.property)")
            assert violated == ["ControllerEpochFencing"]
        browser.find_element("id", "back").click()
        wait(browser, lambda d: page_state(d)["cursor"] == last - 1)
        assert browser.current_url.endswith("#path=" + ".".join(map(str, json.loads(
            urllib.request.urlopen(url + "api/page?path=0", timeout=30).read())["full"][:last])))
        browser.find_element("id", "forward").click()
        wait(browser, lambda d: page_state(d)["cursor"] == last)
        shot(browser, f"explore-{trace_file.stem}")
    finally:
        proc.terminate()
        proc.wait(30)


def test_three_clicks_match_kmc_replay(browser, tmp_path):
    proc, url = start_explore("--preset", "zombie")
    try:
        browser.get(url)
        wait(browser, lambda d: d.find_elements("css selector", "#enabled button"))
        labels = []
        for k in range(3):
            buttons = browser.find_elements("css selector", "#enabled button")
            b = buttons[-1] if k == 1 else buttons[0]            # not always the first action
            labels.append(b.get_attribute("data-action"))
            b.click()
            wait(browser, lambda d, k=k: page_state(d)["cursor"] == k + 1)
        shown = page_state(browser)
        assert [line.split("  ", 1)[1] for line in shown["steps"][1:]] == labels
        link = browser.find_element("id", "link").get_attribute("value")
        assert link == browser.current_url and re.search(r"#path=\d+(\.\d+){3}$", link)
        href = browser.find_element("id", "download").get_attribute("href")
        trace_file = tmp_path / "clicked.json"
        trace_file.write_bytes(urllib.request.urlopen(href, timeout=30).read())
        r = kmc("replay", trace_file)
        assert r.returncode == 0 and "the trace replays: all 4 steps fit the model" in r.stdout, r.stdout + r.stderr
        blocks = replay_blocks(trace_file)
        trace = load_trace(trace_file)
        assert [str(s.action) for s in trace.steps[1:]] == labels
        for i in (3, 2, 1, 0):
            if i < 3:
                browser.find_element("css selector", f'#steps li[data-step="{i}"]').click()
                wait(browser, lambda d, i=i: page_state(d)["cursor"] == i)
            check_step(browser, trace, i, blocks)
        # the copied link opens the same path in a fresh page
        browser.get(link)
        wait(browser, lambda d: page_state(d)["cursor"] == 3)
        assert page_state(browser)["leaves"] == flatten(trace.steps[3].state)
        shot(browser, "explore-three-clicks")
    finally:
        proc.terminate()
        proc.wait(30)


def test_the_replay_page_opens_from_disk(browser, tmp_path):
    out = tmp_path / "zombie.html"
    r = kmc("replay", ZOMBIE, "--html", out)
    assert r.returncode == 0, r.stdout + r.stderr
    trace = load_trace(ZOMBIE)
    blocks = replay_blocks(ZOMBIE)
    browser.get(out.as_uri())
    wait(browser, lambda d: len(d.find_elements("css selector", "#steps li")) == len(trace.steps))
    for i in range(len(trace.steps)):
        if i:
            browser.find_element("id", "forward").click()
            wait(browser, lambda d, i=i: page_state(d)["cursor"] == i)
        check_step(browser, trace, i, blocks)
    remote = js(browser, "return performance.getEntriesByType('resource').map(e => e.name)"
                         ".filter(n => !n.startsWith('file:'))")
    assert remote == []                                # nothing fetched: the file is all there is
    assert not browser.find_element("id", "download").is_displayed()
    shot(browser, "replay-html-zombie")


def test_the_run_report_opens_and_links_its_counterexample(browser, tmp_path):
    r = kmc("check", "--preset", "tiny", "--report", tmp_path / "tiny.html", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    browser.get((tmp_path / "tiny.html").as_uri())
    info = js(browser, """return {
        verdict: document.getElementById('verdict').textContent,
        series: Array.from(document.querySelectorAll('svg.plot polyline')).map(e => e.dataset.series),
        levels: document.querySelectorAll('#levels tr').length - 1,
        actions: Array.from(document.querySelectorAll('#coverage tr[data-action]')).map(e => e.dataset.action),
        never: document.getElementById('never-enabled').textContent};""")
    assert info["verdict"] == "OK" and info["series"] == ["frontier", "new", "rate"]
    assert info["levels"] == 19                        # tiny: depth 18, levels 0..18
    assert "ElectLeader" in info["actions"] and "DeleteTopic" in info["actions"]
    assert info["never"].startswith("never enabled: CompleteTopicDeletion")
    shot(browser, "report-tiny")

    r = kmc("check", "--preset", "zombie", "--report", tmp_path / "zombie.html", "--quiet",
            "--traces-dir", tmp_path / "traces", cwd=tmp_path)
    assert r.returncode == 1
    browser.get((tmp_path / "zombie.html").as_uri())
    row = browser.find_element("css selector", 'tr[data-property="ControllerEpochFencing"]')
    assert "violated" in row.text
    row.find_element("css selector", "a").click()
    wait(browser, lambda d: len(d.find_elements("css selector", "#steps li")) == 5)
    assert "ControllerEpochFencing" in browser.title
    shot(browser, "report-zombie-counterexample")
