"""kmc explore (the server and its JSON), kmc replay --html, kmc check --report and
--junit, the coverage counts and the Kafka timeline, without a browser.  The browser
tests (tests/test_browser.py, marker ``browser``) drive the same pages in Chromium."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from checker.bfs import check
from checker.commands.explore import serve
from checker.config import resolve
from checker.errors import UsageError
from checker.explorer import Explorer
from checker.trace import load_trace
from cli_support import ROOT, kmc, one_line_error
from spec.family import FAMILY
from spec.timeline import KafkaTimeline
from toys import DieHard, Grid

ZOMBIE = next((ROOT / "traces" / "known").glob("ControllerEpochFencing-zombie-*.json"))
NO_FENCING = next((ROOT / "traces" / "known").glob("ControllerEpochFencing-no-controller-fencing-*.json"))


def kafka(preset: str):
    return FAMILY.build(resolve(FAMILY, preset, {}))


# ------------------------------------------------------------------ coverage


@pytest.mark.parametrize("model", [Grid(3), DieHard(), kafka("tiny")], ids=["grid", "diehard", "tiny"])
def test_coverage_counts_add_up(model):
    """Every state but the initial ones is new through exactly one transition; a
    transition is taken once per enabled instance; an action enabled in a state is
    taken there at least once."""
    r = check(model)
    cov = r.stats.coverage
    assert sum(cov.new.values()) == r.stats.distinct - len(list(model.init_states()))
    assert cov.taken == r.stats.action_counts
    for name, n in cov.enabled.items():
        assert 0 < n <= cov.taken[name] and cov.new.get(name, 0) <= cov.taken[name]
    assert [lv["level"] for lv in r.stats.levels] == list(range(len(r.stats.levels)))
    assert r.stats.levels[-1]["distinct"] == r.stats.distinct
    assert sum(lv["new"] for lv in r.stats.levels) == r.stats.distinct - len(list(model.init_states()))


def test_tiny_coverage_is_pinned_and_lists_the_actions_never_enabled():
    m = kafka("tiny")
    cov = check(m).stats.coverage
    assert cov.enabled["DeliverLeaderAndIsr"] == 745 and cov.taken["DeliverLeaderAndIsr"] == 1113
    assert cov.new["DeliverLeaderAndIsr"] == 438
    never = cov.never_enabled(m.action_names())
    # tiny has no session expiry, no controlled shutdown and no topic deletion
    assert {"ExpireSession", "ShutdownBroker", "DeleteTopic", "DeliverStopReplica"} <= set(never)
    assert "ElectLeader" not in never and "Produce" not in m.action_names()


# ------------------------------------------------------------------ explorer


def test_a_path_walks_the_same_states_as_the_trace():
    trace = load_trace(ZOMBIE)
    m = FAMILY.build(resolve(FAMILY, None, trace.config))
    ex = Explorer(m)
    path = ex.path_of([s.action for s in trace.steps[1:]])
    page = ex.page(path)
    assert page["view"] == trace.steps[-1].state
    assert [s["action"] for s in page["steps"][1:]] == [str(s.action) for s in trace.steps[1:]]
    assert [s["fingerprint"] for s in page["steps"]] == [s.fingerprint for s in trace.steps]
    assert {p["name"]: p["holds"] for p in page["properties"]}["ControllerEpochFencing"] is False
    # a prefix with the trace ahead: the steps are the trace's, the cursor at the prefix
    short = ex.page(path[:3], ahead=path)
    assert short["cursor"] == 2 and len(short["steps"]) == len(path) and short["full"] == path
    assert short["view"] == trace.steps[2].state


def test_a_bad_path_is_one_clear_error():
    ex = Explorer(Grid(2))
    with pytest.raises(UsageError, match="only 2 are enabled there"):
        ex.walk([0, 0, 5])
    with pytest.raises(UsageError, match="has 1"):
        ex.walk([3])


def test_the_kafka_timeline_draws_every_delivery_from_its_sender():
    """Each Deliver* step is one event on the receiving broker's lane; its source is the
    broker elected with the request's controller epoch (an arrow) unless it is the
    receiver itself (a mark)."""
    for path in (ZOMBIE, NO_FENCING):
        trace = load_trace(path)
        views = [s.state for s in trace.steps]
        acts = [{"name": s.action.name, "args": dict(s.action.args)} for s in trace.steps[1:]]
        draw = KafkaTimeline().draw(views, acts)
        assert draw["lanes"][0] == "ZooKeeper"
        elected = {}
        for i, s in enumerate(trace.steps[1:], 1):
            if s.action.name == "ElectController":
                elected[trace.steps[i].state["zk"]["controller_epoch"]] = s.action.get("broker")
            if s.action.name.startswith("Deliver"):
                evs = [e for e in draw["events"] if e["step"] == i and e["category"] in ("request", "rejected")]
                assert len(evs) == 1, (path.name, i, evs)
                sender = elected[s.action.get("controller_epoch")]
                assert evs[0]["lane"] == f"broker {s.action.get('broker')}"
                if sender != s.action.get("broker"):
                    assert evs[0]["kind"] == "message" and evs[0]["source"] == f"broker {sender}"
    # the no-controller-fencing trace ends with broker 1 applying the stale request
    trace = load_trace(NO_FENCING)
    last = len(trace.steps) - 1
    draw = KafkaTimeline().draw([s.state for s in trace.steps],
                                [{"name": s.action.name, "args": dict(s.action.args)} for s in trace.steps[1:]])
    stale = [e for e in draw["events"] if e["step"] == last and e["kind"] == "message"]
    assert stale and stale[0]["source"] == "broker 0" and stale[0]["lane"] == "broker 1"
    assert "applied" in stale[0]["detail"]
    # the labels name the request's fields, and an election its strategy
    labels = [(e["step"], e["category"], e["lane"], e["label"]) for e in draw["events"]]
    assert (3, "election", "ZooKeeper", "p0 leader none → 0 (new)") in labels
    assert (6, "request", "broker 1", "LeaderAndIsr p1 leader 1 epoch 0 isr [1]") in labels
    assert (7, "request", "broker 1", "LeaderAndIsr p0 leader 0 epoch 0 isr [0, 1]") in labels
    # a leader election's znode write is an arrow from the electing controller's broker
    elections = [e for e in draw["events"] if e["category"] == "election" and e["lane"] == "ZooKeeper"]
    assert elections
    for e in elections:
        c = trace.steps[e["step"]].action.get("controller")
        assert (e["kind"], e["source"]) == ("message", f"broker {c}"), e


# ------------------------------------------------------------------ the server


@pytest.fixture()
def server():
    trace = load_trace(ZOMBIE)
    m = FAMILY.build(resolve(FAMILY, None, trace.config))
    ex = Explorer(m, config=trace.config, preset=trace.preset)
    ex.trace_info = None
    srv = serve(ex, "0", "kafka", "127.0.0.1", 0)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.headers.get("Content-Type"), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read()


def test_the_server_serves_the_page_its_files_and_json(server):
    status, ctype, body = get(server + "/")
    assert status == 200 and "text/html" in ctype and b"/static/explorer.js" in body
    assert get(server + "/static/explorer.js")[0] == 200 and get(server + "/static/explorer.css")[0] == 200
    status, _, body = get(server + "/api/page?path=0.2")
    page = json.loads(body)
    assert status == 200 and page["steps"][1]["action"] == "ElectController(broker=0)"
    assert page["changes"][0]["key"] == "zk.controller"
    status, ctype, body = get(server + "/api/page?path=0.99")
    assert status == 400 and "application/json" in ctype and "enabled there" in json.loads(body)["error"]
    assert get(server + "/api/page?path=x")[0] == 400
    assert get(server + "/nothing")[0] == 404
    assert get(server + "/../../etc/passwd")[0] == 404


def test_a_request_for_another_host_name_is_refused(server):
    """A page on another site whose name was re-bound to 127.0.0.1 (DNS rebinding)
    sends its own name as Host: it must not read the model and the trace."""
    port = server.rsplit(":", 1)[1]
    for host, ok in (("evil.example", False), (f"evil.example:{port}", False), (f"localhost:{port}", True),
                     (f"127.0.0.1:{port}", True), (f"[::1]:{port}", True), ("127.0.0.1", True)):
        req = urllib.request.Request(server + "/api/page?path=0", headers={"Host": host})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status = r.status
        except urllib.error.HTTPError as e:
            status, body = e.code, json.loads(e.read())
            assert "this machine only" in body["error"]
        assert (status == 200) == ok, host


def test_an_unexpected_error_is_a_json_500_not_a_dropped_connection(server, monkeypatch):
    """A lone surrogate in a page's text raised UnicodeEncodeError in the handler:
    no answer, and a traceback on the server's terminal."""
    monkeypatch.setattr(Explorer, "page", lambda self, path, ahead=None: {"x": "\ud800"})
    status, ctype, body = get(server + "/api/page?path=0")
    assert status == 500 and "application/json" in ctype
    assert json.loads(body)["error"] == "internal error of kmc: UnicodeEncodeError"


def test_a_raising_property_is_an_error_on_the_page_not_a_dropped_connection():
    from checker.model import always

    def shaky(s):
        if s.x == 1:
            raise KeyError("x")
        return True

    srv = serve(Explorer(Grid(2), properties=[always("Shaky", shaky)]), "", "toys", "127.0.0.1", 0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/api/page?path="
        assert get(url + "0.1")[0] == 200        # IncY: x stays 0
        status, ctype, body = get(url + "0.0")   # IncX
        assert status == 500 and "application/json" in ctype
        assert "the predicate of property 'Shaky' raised KeyError: 'x'" in json.loads(body)["error"]
    finally:
        srv.shutdown()
        srv.server_close()


def test_a_path_downloads_as_a_trace_that_kmc_replay_accepts(server, tmp_path):
    status, _, body = get(server + "/api/trace?path=0.2.0.2.2")
    assert status == 200
    doc = json.loads(body)
    assert doc["format"] == "kmc-trace" and len(doc["steps"]) == 5
    f = tmp_path / "path.json"
    f.write_bytes(body)
    r = kmc("replay", f)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "the trace replays: all 5 steps fit the model" in r.stdout
    assert [s["action"] for s in doc["steps"][1:]] == [s["action"] for s in json.loads(ZOMBIE.read_text())["steps"][1:]]


def _start(*args, cwd=ROOT):
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, "-m", "checker", "explore", *map(str, args), "--port", "0"], cwd=cwd,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.search(r"http://[\d.]+:\d+/", line)
    if not m:
        p.kill()
        raise AssertionError(line + p.stderr.read())
    return p, m.group(0)


def test_kmc_explore_opens_a_trace_and_a_preset_in_one_command():
    p, url = _start(ZOMBIE)
    try:
        page = json.loads(get(url + "api/page?path=0")[2])
        assert page["trace"]["name"] == ZOMBIE.name and len(page["full"]) == 5 and page["cursor"] == 0
        assert page["timeline"]["lanes"] == ["ZooKeeper", "broker 0", "broker 1"]
    finally:
        p.terminate()
        p.wait(30)
    p, url = _start("--preset", "small")
    try:
        page = json.loads(get(url + "api/page?path=0")[2])
        assert page["preset"] == "small" and page["enabled"] and page["trace"] is None
    finally:
        p.terminate()
        p.wait(30)


def test_an_escape_sequence_in_a_trace_never_reaches_the_terminal(tmp_path):
    """The property's name is in the line kmc explore prints when it starts: an
    escape sequence in it set the window title, cleared the screen or hid the line."""
    doc = json.loads(ZOMBIE.read_text())
    doc["property"]["name"] = "\x1b]0;TITLE\x07\x1b[2JRED\rN"
    (tmp_path / "esc.json").write_text(json.dumps(doc))
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, "-m", "checker", "explore", str(tmp_path / "esc.json"), "--port", "0"],
                         cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = p.stdout.readline()
    finally:
        p.terminate()
        p.communicate(timeout=30)
    assert b"serving on http://" in line and b"\x1b" not in line and b"\r" not in line, line


@pytest.mark.parametrize("args", [("--preset", "zombie"), ("--model", "tests.toys:FAMILY", "--preset", "broken")],
                         ids=["kafka", "toy"])
def test_a_violation_prints_the_explore_and_replay_commands_and_both_work(tmp_path, args):
    """After a violation, check prints the exact commands that open its trace:
    they run as printed (with --model when the family is not registered, since
    kmc never imports a module a trace names)."""
    r = kmc("check", *args, "--traces-dir", tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  replay it: "))
    assert lines[at + 1].startswith("  explore it: kmc explore ")
    replay_cmd = shlex.split(lines[at].split(": ", 1)[1])
    explore_cmd = shlex.split(lines[at + 1].split(": ", 1)[1])
    saved = Path(replay_cmd[2])
    assert saved.parent == tmp_path and saved.is_file() and explore_cmd[2:] == replay_cmd[2:]
    assert ("--model" in explore_cmd) == ("--model" in args)
    replayed = kmc(*replay_cmd[1:])
    assert replayed.returncode == 0 and "the trace replays" in replayed.stdout, replayed.stdout + replayed.stderr
    p, url = _start(*explore_cmd[2:])
    try:
        page = json.loads(get(url + "api/page?path=0")[2])
        assert page["trace"]["name"] == saved.name and len(page["full"]) == len(load_trace(saved).steps)
    finally:
        p.terminate()
        p.wait(30)


def test_the_commands_printed_for_a_user_property_name_its_invariants_file(tmp_path):
    """A trace of an --invariants property re-checks only with that file named again
    (kmc never runs a file a trace records): check, simulate and the JUnit text print
    it, shell-quoted as the user gave it, and the commands work as printed."""
    inv = tmp_path / "my inv.py"
    inv.write_text("from checker.model import always\n"
                   "SmallNot2 = always('SmallNot2', lambda s: s.small != 2, 'the small jug never holds 2')\n")
    toys = ("--model", "tests.toys:FAMILY")
    r = kmc("check", *toys, "--invariants", inv, "--property", "SmallNot2", "--traces-dir", tmp_path / "t",
            "--junit", tmp_path / "j.xml")
    assert r.returncode == 1, r.stdout + r.stderr
    lines = [line.strip() for line in r.stdout.splitlines()]
    replay_cmd = next(line for line in lines if line.startswith("replay it: ")).split(": ", 1)[1]
    explore_cmd = next(line for line in lines if line.startswith("explore it: ")).split(": ", 1)[1]
    assert replay_cmd.endswith(f" --invariants '{inv}'") and f"replay the trace with {replay_cmd} (" in r.stderr
    failure = ET.parse(tmp_path / "j.xml").getroot().find("testsuite/testcase/failure")
    assert failure.text.endswith(f"\nreplay it: {replay_cmd}\nexplore it: {explore_cmd}")
    replayed = kmc(*shlex.split(replay_cmd)[1:])
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "property 'SmallNot2' is still violated" in replayed.stdout
    p, url = _start(*shlex.split(explore_cmd)[2:])
    try:
        page = json.loads(get(url + "api/page?path=0")[2])
        assert page["trace"]["property"] == "SmallNot2"
        assert "SmallNot2" in [v["name"] for v in page["properties"]]
    finally:
        p.terminate()
        p.wait(30)
    # Without the file, explore says which flag supplies it, and no flag it lacks.
    trace = shlex.split(explore_cmd)[2]
    line = one_line_error(kmc("explore", trace, *toys, "--port", "0"), "re-check the property with --invariants "
                                                                        "FILE.py (reproduce: kmc explore")
    assert "--step" not in line
    r = kmc("simulate", *toys, "--invariants", inv, "--traces-dir", tmp_path / "s")
    assert r.returncode == 1, r.stdout + r.stderr
    replay_cmd = next(line.strip() for line in r.stdout.splitlines() if line.strip().startswith("replay it: "))
    assert replay_cmd.endswith(f" --invariants '{inv}'")
    replayed = kmc(*shlex.split(replay_cmd.split(": ", 1)[1])[1:])
    assert replayed.returncode == 0 and "still violated" in replayed.stdout, replayed.stdout + replayed.stderr


def test_simulate_prints_the_same_commands(tmp_path):
    """kmc simulate (and bmc, prove --confirm: the same helper) prints both commands too."""
    r = kmc("simulate", "--model", "tests.toys:FAMILY", "--preset", "broken", "--seed", "0", "--traces-dir", tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = [line.strip() for line in r.stdout.splitlines()]
    replay_cmd = next(line for line in lines if line.startswith("replay it: ")).split(": ", 1)[1]
    explore_cmd = next(line for line in lines if line.startswith("explore it: ")).split(": ", 1)[1]
    assert shlex.split(replay_cmd)[2:] == shlex.split(explore_cmd)[2:]
    assert replay_cmd.endswith(" --model tests.toys:FAMILY") and f"replay the trace with {replay_cmd} (" in r.stderr
    replayed = kmc(*shlex.split(replay_cmd)[1:])
    assert replayed.returncode == 0 and "the trace replays" in replayed.stdout, replayed.stdout + replayed.stderr


def test_kmc_explore_bad_input_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    one_line_error(kmc("explore", bad, "--port", "0"), "not valid JSON")
    one_line_error(kmc("explore", ZOMBIE, "--preset", "tiny", "--port", "0"), "carries its own configuration")
    one_line_error(kmc("explore", "--preset", "nope", "--port", "0"), "nope")
    one_line_error(kmc("explore", "--port", "70000"), "out of range")
    # a trace the model no longer takes is exit 1, as kmc replay says, not bad input
    stale = json.loads(ZOMBIE.read_text())
    stale["steps"][2]["fingerprint"] = "0x" + "0" * 16
    (tmp_path / "stale.json").write_text(json.dumps(stale))
    one_line_error(kmc("explore", tmp_path / "stale.json", "--port", "0"), "no longer fits the model", code=1)
    assert kmc("replay", tmp_path / "stale.json").returncode == 1
    # An empty host would mean every interface to the socket layer, not the default.
    for host in ("", " \t"):
        line = one_line_error(kmc("explore", "--host", host, "--port", "0"), f"--host {host!r} names no address")
        assert "--host 127.0.0.1" in line and "--host 0.0.0.0 to listen on every interface" in line


# ------------------------------------------------------------------ files


def test_replay_html_is_one_self_contained_file(tmp_path):
    out = tmp_path / "z.html"
    r = kmc("replay", ZOMBIE, "--html", out)
    assert r.returncode == 0 and f"html: {out}" in r.stdout, r.stdout + r.stderr
    text = out.read_text()
    assert "window.KMC_STATIC" in text and "<script src" not in text and 'rel="stylesheet"' not in text
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    data = json.loads(re.search(r"window.KMC_STATIC = (\{.*?\});</script>", text, re.S).group(1))
    assert len(data["states"]) == 5 and data["timeline"]["lanes"][0] == "ZooKeeper"
    one_line_error(kmc("replay", ZOMBIE, "--html", out), "exists; it is not overwritten")
    assert kmc("replay", ZOMBIE, "--html", out, "--force").returncode == 0


def test_replay_html_refuses_a_fifo_a_link_and_the_trace_itself(tmp_path):
    """With or without --force: the FIFO is still a FIFO, the link still the same
    link (its target untouched), the trace byte for byte what it was."""
    trace = tmp_path / "z2.json"
    shutil.copy(ZOMBIE, trace)
    before = trace.read_bytes()
    fifo, target, link, dangling = (tmp_path / n for n in ("pipe.html", "theirs.html", "link.html", "gone.html"))
    os.mkfifo(fifo)
    target.write_text("what the user wrote")
    link.symlink_to(target)
    dangling.symlink_to(tmp_path / "nowhere.html")
    for force in ([], ["--force"]):
        one_line_error(kmc("replay", trace, "--html", fifo, *force), f"--html '{fifo}' is a FIFO (named pipe)")
        one_line_error(kmc("replay", trace, "--html", link, *force), f"--html '{link}' is a symbolic link")
        # was: "appeared while it was being written", after the replay
        one_line_error(kmc("replay", trace, "--html", dangling, *force),
                       f"--html '{dangling}' is a symbolic link (to '{tmp_path / 'nowhere.html'}', which does not "
                       f"exist)")
        for out in (trace, tmp_path / "." / "z2.json"):
            line = one_line_error(kmc("replay", trace, "--html", out, *force),
                                  f"--html '{out}' is the same file as the trace '{trace}', which this command reads")
            assert "name another file for --html" in line
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert link.is_symlink() and os.readlink(link) == str(target) and target.read_text() == "what the user wrote"
    assert dangling.is_symlink() and not (tmp_path / "nowhere.html").exists()
    assert trace.read_bytes() == before


def test_write_output_checks_the_target_again_when_it_writes(tmp_path):
    """The target may change while the work runs: what it has become is named, and
    nothing there is replaced."""
    from checker.output import write_output
    fifo = tmp_path / "now-a-pipe.xml"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="is a FIFO"):
        write_output(str(fifo), b"<x/>", True, "--junit")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    appeared = tmp_path / "appeared.xml"
    appeared.write_text("someone else's")
    with pytest.raises(UsageError, match="was created by something else while kmc ran"):
        write_output(str(appeared), b"<x/>", False, "--junit")
    assert appeared.read_text() == "someone else's"
    with pytest.raises(UsageError, match="is the same file as the trace"):
        write_output(str(appeared), b"<x/>", True, "--junit", reads=[("the trace", str(appeared))])
    assert appeared.read_text() == "someone else's" and list(tmp_path.glob(".kmc-out-*")) == []


def test_check_report_and_junit(tmp_path):
    report, junit = tmp_path / "r.html", tmp_path / "r.xml"
    r = kmc("check", "--preset", "zombie", "--report", report, "--junit", junit,
            "--traces-dir", tmp_path / "traces", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    text = report.read_text()
    assert 'data-series="frontier"' in text and 'data-series="new"' in text and 'data-series="rate"' in text
    assert 'id="coverage"' in text and 'id="never-enabled"' in text
    page = next(tmp_path.glob("r-ControllerEpochFencing-zombie-*.html"))
    assert f'href="./{page.name}"' in text
    suite = ET.parse(junit).getroot().find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    failure = cases["ControllerEpochFencing"].find("failure")
    assert failure is not None and suite.get("failures") == "1"
    saved = next((tmp_path / "traces").glob("ControllerEpochFencing-zombie-*.json"))
    assert failure.text.endswith(f"\nreplay it: kmc replay {saved}\nexplore it: kmc explore {saved}")
    assert cases["LeaderInIsr"].find("skipped") is not None      # the search stopped at the violation
    r = kmc("check", "--preset", "tiny", "--report", tmp_path / "t.html", "--junit", tmp_path / "t.xml",
            "--quiet", cwd=tmp_path)
    assert r.returncode == 0
    assert "coverage: never enabled (11 of 22): CompleteTopicDeletion" in r.stdout
    suite = ET.parse(tmp_path / "t.xml").getroot().find("testsuite")
    assert suite.get("failures") == "0" and suite.get("skipped") == "0"
    assert len(suite.findall("testcase")) == 13       # 12 properties and Deadlock
    one_line_error(kmc("check", "--preset", "tiny", "--report", tmp_path / "t.html", cwd=tmp_path),
                   "exists; it is not overwritten")


def test_check_outputs_are_refused_before_the_search(tmp_path):
    """Two outputs of one run naming one file (was: the whole search, then a
    misleading "appeared while it was being written", or with --force the JUnit file
    silently in the report's place), an output that is an input, a FIFO, a link:
    refused before the search, so no trace is saved and no header printed."""
    traces = tmp_path / "traces"
    cfg = tmp_path / "c.toml"
    cfg.write_text('preset = "zombie"\n')
    inv = tmp_path / "inv.py"
    inv.write_text("from checker.model import always\n")
    fifo, link = tmp_path / "pipe.html", tmp_path / "link.html"
    os.mkfifo(fifo)
    (tmp_path / "theirs.html").write_text("what the user wrote")
    link.symlink_to(tmp_path / "theirs.html")
    inputs = {cfg: cfg.read_bytes(), inv: inv.read_bytes()}
    cases = [
        (["--report", "r1.html", "--junit", "r1.html"], "--report 'r1.html' and --junit 'r1.html' are the same file"),
        (["--report", "r1.html", "--junit", "sub/../r1.html"], "are the same file; one would replace the other"),
        (["--config", cfg, "--report", cfg], f"--report '{cfg}' is the same file as --config '{cfg}'"),
        (["--invariants", inv, "--junit", inv], f"--junit '{inv}' is the same file as --invariants '{inv}'"),
        (["--report", fifo], f"--report '{fifo}' is a FIFO (named pipe), not a regular file"),
        (["--junit", link], f"--junit '{link}' is a symbolic link"),
        (["--checkpoint", "ck", "--report", "ck/r.html"], "--report 'ck/r.html' is inside the --checkpoint directory"),
    ]
    (tmp_path / "sub").mkdir()
    for args, needle in cases:
        for force in ([], ["--force"]):
            preset = [] if "--config" in args else ["--preset", "zombie"]
            r = kmc("check", *preset, *args, *force, "--traces-dir", traces, cwd=tmp_path)
            one_line_error(r, needle)
            assert "kmc check: model" not in r.stdout and not traces.exists(), (args, force)
    assert all(path.read_bytes() == data for path, data in inputs.items())
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink()
    assert (tmp_path / "theirs.html").read_text() == "what the user wrote"
    assert not (tmp_path / "r1.html").exists() and not (tmp_path / "ck").exists()


def test_check_refuses_an_output_a_trace_could_be_saved_as_before_the_search(tmp_path):
    """--report or --junit named as a trace the run may save (was: the whole search,
    the trace saved, then "is the same file as the trace" and exit 2, the violation's
    exit 1 lost), or as --traces-dir itself or a directory above it: refused before the
    search, so no header, no search output, and no trace or page saved."""
    traces = tmp_path / "traces"
    r = kmc("check", "--preset", "zombie", "--traces-dir", traces, "--quiet", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    saved = next(traces.glob("ControllerEpochFencing-zombie-*.json"))
    text = saved.read_text()
    name = f"traces/{saved.name}"
    cases = [
        (["--report", name], f"--report '{name}' is a name under which this command may save the trace of "
                             f"ControllerEpochFencing in --traces-dir 'traces'; a trace is never overwritten, with "
                             f"or without --force: name another file for --report"),
        (["--junit", f"traces/{saved.stem}-2.json"], "is a name under which this command may save the trace of"),
        (["--junit", "traces/Deadlock-zombie-0123abcd.json"], "may save the trace of Deadlock"),
        (["--junit", "t2", "--traces-dir", "t2"], "--traces-dir 't2' and --junit 't2' are the same file"),
        (["--report", "o.html", "--traces-dir", "o.html/t"], "--traces-dir 'o.html/t' is inside --report 'o.html'"),
    ]
    for present in (True, False):       # the trace there (from the run above) or not (yet)
        if not present:
            saved.unlink()
        for args, needle in cases:
            for force in ([], ["--force"]):     # the trace there: the clash, not "exists" (add --force)
                r = kmc("check", "--preset", "zombie", *args, *force, cwd=tmp_path)
                one_line_error(r, needle)
                assert r.stdout == "" and "distinct states" not in r.stderr, (args, force)
                assert not (tmp_path / "t2").exists() and not (tmp_path / "o.html").exists()
                assert list(tmp_path.rglob("*.html")) == []
                assert [p.name for p in traces.iterdir()] == ([saved.name] if present else []), (args, force)
                assert not present or saved.read_text() == text
    # a trace's name for another preset (label) or another directory is a file like any other
    r = kmc("check", "--preset", "zombie", "--report", f"traces/{saved.stem.replace('zombie', 'tiny')}.json",
            "--junit", saved.name, "--quiet", cwd=tmp_path)
    assert r.returncode == 1 and "property violated: ControllerEpochFencing" in r.stderr, r.stdout + r.stderr
    assert (tmp_path / saved.name).read_text().startswith("<?xml")
    assert load_trace(saved).property_name == "ControllerEpochFencing"
    assert (tmp_path / f"traces/{saved.stem.replace('zombie', 'tiny')}.json").read_text().startswith("<!")
    # a --traces-dir not created yet: the clash is refused, not the missing directory first
    r = kmc("check", "--preset", "zombie", "--traces-dir", "new", "--report", f"new/{saved.name}", cwd=tmp_path)
    one_line_error(r, f"--report 'new/{saved.name}' is a name under which this command may save the trace of")
    assert r.stdout == "" and not (tmp_path / "new").exists()


def test_a_report_links_its_pages_whatever_characters_its_name_holds(tmp_path):
    """The page's name came from --report's: 'r#1.html' linked to a fragment, and
    'javascript:x.html' to a script URL."""
    for name in ("r#1.html", "javascript:alert(1);x.html", "a%20b?.html"):
        r = kmc("check", "--preset", "zombie", "--report", tmp_path / name, "--traces-dir", tmp_path / "t",
                "--quiet", cwd=tmp_path)
        assert r.returncode == 1, r.stdout + r.stderr
        page = next(p for p in tmp_path.glob("*.html") if p.name.startswith(name[:-5] + "-"))
        href = re.search(r'<a href="([^"]*)"', (tmp_path / name).read_text()).group(1)
        assert href.startswith("./") and urllib.parse.unquote(href[2:]) == page.name, href
        page.unlink()


def test_check_report_page_that_exists_gets_a_free_name(tmp_path):
    """A counterexample page whose name is taken (was: exit 2 after the search, the
    violation's exit 1 and the report lost) goes to a free name, -2 as traces do, and
    the run says which; the report links it; the file there is kept."""
    traces = tmp_path / "traces"
    r = kmc("check", "--preset", "zombie", "--report", tmp_path / "first.html", "--traces-dir", traces, "--quiet")
    assert r.returncode == 1, r.stdout + r.stderr
    stem = next(traces.glob("ControllerEpochFencing-zombie-*.json")).stem
    mine = tmp_path / f"r-{stem}.html"
    mine.write_text("what the user wrote")
    r = kmc("check", "--preset", "zombie", "--report", tmp_path / "r.html", "--junit", tmp_path / "r.xml",
            "--traces-dir", traces, "--quiet")
    assert r.returncode == 1 and "property violated: ControllerEpochFencing" in r.stderr, r.stdout + r.stderr
    page = tmp_path / f"r-{stem}-2.html"
    assert mine.read_text() == "what the user wrote" and "window.KMC_STATIC" in page.read_text()
    assert f'href="./{page.name}"' in (tmp_path / "r.html").read_text() and (tmp_path / "r.xml").exists()
    said = " ".join(r.stdout.split())
    assert f"'{mine}' exists already and is kept as it is: the counterexample page of trace " in said
    assert f"is '{page}'" in said
    # --force replaces the pages of a previous run, but never what is not a regular file.
    mine.unlink()
    os.mkfifo(mine)
    r = kmc("check", "--preset", "zombie", "--report", tmp_path / "r.html", "--traces-dir", traces, "--quiet",
            "--force")
    assert r.returncode == 1, r.stdout + r.stderr
    assert stat.S_ISFIFO(os.lstat(mine).st_mode) and "window.KMC_STATIC" in page.read_text()
    assert not (tmp_path / f"r-{stem}-3.html").exists() and f'href="./{page.name}"' in (tmp_path / "r.html").read_text()


def test_conform_and_prove_refuse_a_junit_that_is_an_input(tmp_path):
    trace = tmp_path / "z.json"
    shutil.copy(ZOMBIE, trace)
    lemmas = tmp_path / "lemmas.py"
    lemmas.write_text("# the user's lemmas\n")
    before = trace.read_bytes(), lemmas.read_bytes()
    for force in ([], ["--force"]):
        one_line_error(kmc("conform", trace, "--junit", trace, *force),
                       f"--junit '{trace}' is the same file as the trace '{trace}'")
        one_line_error(kmc("prove", "--brokers", "3", "--invariant", "LeaderInIsr", "--lemmas", lemmas,
                           "--junit", lemmas, *force),
                       f"--junit '{lemmas}' is the same file as --lemmas '{lemmas}'")
    assert (trace.read_bytes(), lemmas.read_bytes()) == before
    # nor the source of the --model family: refused before the trace is replayed
    (tmp_path / "kmodel.py").write_text("from spec.family import FAMILY\n")
    r = kmc("conform", trace, "--model", "kmodel:FAMILY", "--junit", "kmodel.py", "--force", cwd=tmp_path)
    one_line_error(r, "--junit 'kmodel.py' is the source of Python module 'kmodel'")
    assert "steps" not in r.stdout and (tmp_path / "kmodel.py").read_text() == "from spec.family import FAMILY\n"


def test_conform_refuses_a_junit_a_trace_could_be_saved_as_before_any_replay(tmp_path):
    """--junit named as the trace a divergence may be saved as (was: the whole replay,
    the trace saved, then "was created by something else while kmc ran" and exit 2,
    the divergence's exit 1 lost; with --force the JUnit XML in the trace's place),
    or as --traces-dir: refused before any replay, also when --traces-dir does not
    exist yet (the clash, not "create it first")."""
    model = ("--model", "tests.conform_toys:FAMILY")
    preset = (*model, "--preset", "deeper", "--set", "bug=truncate-off-by-one")
    r = kmc("conform", *preset, "--traces-dir", "traces", "--quiet", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    traces = tmp_path / "traces"
    saved = next(traces.glob("Conformance-deeper-custom-*.json"))
    text = saved.read_text()
    other = f"Conformance-deeper-custom-{'0' * 8}.json"     # the name another divergence may take
    cases = [
        # --preset: the preset's label; a trace file: the label of its preset and config
        (preset, "traces", f"traces/{saved.stem}-2.json", "may save the trace of Conformance in --traces-dir 'traces'"),
        ((saved, *model), "traces", f"traces/{other}", "may save the trace of Conformance"),
        ((ZOMBIE,), "traces", "traces/Conformance-zombie-0123abcd.json", "may save the trace of Conformance"),
        (preset, "new", f"new/{other}", f"--junit 'new/{other}' is a name under which this command may save"),
        ((ZOMBIE,), "t2", "t2", "--traces-dir 't2' and --junit 't2' are the same file"),
    ]
    for args, directory, junit, needle in cases:
        for force in ([], ["--force"]):
            r = kmc("conform", *args, "--traces-dir", directory, "--junit", junit, *force, cwd=tmp_path)
            one_line_error(r, needle)
            assert r.stdout == "", (args, force)            # no header, nothing replayed
            assert sorted(p.name for p in tmp_path.iterdir()) == ["traces"], (args, force)
            assert [p.name for p in traces.iterdir()] == [saved.name] and saved.read_text() == text
    # another label's name is a file like any other
    r = kmc("conform", *preset, "--junit", "traces/Conformance-tiny-0123abcd.json", "--quiet", cwd=tmp_path)
    assert r.returncode == 1 and (traces / "Conformance-tiny-0123abcd.json").read_text().startswith("<?xml")


def test_prove_confirm_refuses_a_junit_its_trace_could_be_saved_as_before_proving(tmp_path):
    """kmc prove --confirm saves a trace: --junit named as it, or as --traces-dir, is
    refused before z3 is asked (whether --traces-dir exists yet or not); without
    --confirm no trace is saved, and the name is a file like any other."""
    prove = ("prove", "--preset", "zombie", "--invariant", "ControllerEpochFencing")
    name = "ControllerEpochFencing-zombie-86b9dc15.json"     # the trace --confirm saves (tests/test_symbolic.py)
    cases = [
        (["--junit", f"traces/{name}"], f"--junit 'traces/{name}' is a name under which this command may save the "
                                        f"trace of ControllerEpochFencing in --traces-dir 'traces'"),
        (["--junit", "traces/LeaderInIsr-zombie-0123abcd-2.json"], "may save the trace of LeaderInIsr"),
        (["--junit", "t", "--traces-dir", "t"], "--traces-dir 't' and --junit 't' are the same file"),
    ]
    for present in (False, True):
        if present:
            (tmp_path / "traces").mkdir()
        for args, needle in cases:
            for force in ([], ["--force"]):
                r = kmc(*prove, "--confirm", *args, *force, cwd=tmp_path)
                one_line_error(r, needle)
                assert r.stdout == "", (args, force)    # no header, no proof, no CTI
                assert sorted(p.name for p in tmp_path.rglob("*")) == (["traces"] if present else []), (args, force)
    r = kmc(*prove, "--quiet", "--junit", f"traces/{name}", cwd=tmp_path)
    assert r.returncode == 1 and "NOT INDUCTIVE" in r.stdout, r.stdout + r.stderr
    assert (tmp_path / "traces" / name).read_text().startswith("<?xml")


def test_conform_and_prove_write_junit(tmp_path):
    model = ("--model", "tests.conform_toys:FAMILY")
    r = kmc("conform", *model, "--preset", "deeper", "--set", "bug=truncate-off-by-one", "--traces-dir",
            tmp_path / "traces", "--quiet", "--junit", tmp_path / "c.xml")
    assert r.returncode == 1, r.stdout + r.stderr
    suite = ET.parse(tmp_path / "c.xml").getroot().find("testsuite")
    (case,) = suite.findall("testcase")
    saved = next((tmp_path / "traces").glob("Conformance-deeper-custom-*.json"))
    assert case.get("name") == "preset deeper" and suite.get("failures") == "1"
    assert f"kmc conform {saved}" in case.find("failure").text
    r = kmc("conform", ZOMBIE, "--junit", tmp_path / "ok.xml")
    assert r.returncode == 0 and ET.parse(tmp_path / "ok.xml").getroot().get("failures") == "0"

    r = kmc("prove", "--brokers", "3", "--invariant", "AtMostOneActiveController", "--invariant", "LeaderInIsr",
            "--quiet", "--junit", tmp_path / "p.xml")
    assert r.returncode == 1
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "p.xml").getroot().iter("testcase")}
    assert "RestartBroker" in cases["AtMostOneActiveController"].find("failure").get("message")
    assert "reproduce: kmc prove" in cases["AtMostOneActiveController"].find("failure").text
    assert cases["LeaderInIsr"].find("skipped") is not None
    r = kmc("prove", "--brokers", "3", "--invariant", "ControllerEpochFencing", "--quiet", "--junit", tmp_path / "q.xml")
    assert r.returncode == 0 and ET.parse(tmp_path / "q.xml").getroot().get("failures") == "0"
    one_line_error(kmc("prove", "--brokers", "3", "--invariant", "LeaderInIsr", "--junit", tmp_path / "q.xml"),
                   "exists; it is not overwritten")
