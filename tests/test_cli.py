"""The kmc command line, run as a real subprocess: ``python -m checker``.

Every run uses ``--model tests.toys:FAMILY`` (cwd and PYTHONPATH = the repository
root), so nothing here depends on kmc being installed or on the Kafka model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from checker.traceschema import shown
from tests import cli_support

ROOT = Path(__file__).resolve().parent.parent
TOYS = ["--model", "tests.toys:FAMILY"]


def kmc(*args: str, cwd: Path | str = ROOT) -> subprocess.CompletedProcess:
    return cli_support.kmc(*args, cwd=cwd, timeout=60)


def check(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return kmc("check", *TOYS, "--traces-dir", tmp_path / "traces", *args)


def assert_one_line_error(r: subprocess.CompletedProcess, code: int = 2, needle: str = "") -> str:
    return cli_support.one_line_error(r, needle, code=code)


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    """One violated run, shared: (completed process, JSON result, trace path)."""
    d = tmp_path_factory.mktemp("broken")
    r = kmc("check", *TOYS, "--preset", "broken", "--traces-dir", d / "traces", "--json")
    doc = json.loads(r.stdout)
    return r, doc, Path(doc["trace_path"])


# ------------------------------------------------------------------------ check

def test_check_ok(tmp_path):
    r = check(tmp_path, "--preset", "tiny")
    assert r.returncode == 0, r.stderr
    assert "preset tiny" in r.stdout and "toy=grid n=2" in r.stdout
    assert "distinct states: 9" in r.stdout and "verdict: OK" in r.stdout
    assert "witness ReachCorner: reached at depth 4" in r.stdout
    assert "MiB" in r.stdout and "states/s" in r.stdout and "IncX=" in r.stdout
    assert not (tmp_path / "traces").exists()


def test_check_bounded_exits_0_and_says_so(tmp_path):
    r = check(tmp_path, "--max-depth", "2", "--quiet")
    assert r.returncode == 0, r.stderr
    assert "no violation within the bounds; the search was not exhaustive" in r.stdout


def test_check_violation_json(broken):
    r, doc, trace = broken
    assert r.returncode == 1
    assert r.stdout.count("\n") == 1  # exactly one JSON object on stdout
    for key in ("distinct", "generated", "depth", "seconds", "states_per_second", "peak_memory_bytes",
                "verdict", "violated_property", "violated_properties", "trace_path", "trace_paths",
                "witnesses", "action_counts", "complete", "model", "preset", "config"):
        assert key in doc, key
    assert doc["verdict"] == "violated" and doc["violated_property"] == "BigNot4"
    assert doc["violated_properties"] == ["BigNot4"] and doc["trace_paths"] == [doc["trace_path"]]
    assert doc["preset"] == "broken" and doc["config"]["solve"] is True and doc["model"] == "diehard"
    assert doc["witnesses"] == {"Solved": 6}
    assert trace.is_file() and trace.name.startswith("BigNot4-broken-")
    # Human output went to stderr, ending with the failure line.
    assert "VIOLATED: BigNot4" in r.stderr and f"kmc replay {trace}" in r.stderr
    assert r.stderr.strip().splitlines()[-1].endswith("(reproduce: kmc check --model tests.toys:FAMILY "
                                                      f"--preset broken --traces-dir {trace.parent} --json)")
    saved = json.loads(trace.read_text())
    assert saved["property"]["name"] == "BigNot4" and len(saved["steps"]) == 7
    assert saved["model"]["family"] == "tests.toys:FAMILY"


def test_check_violation_human(tmp_path):
    r = check(tmp_path, "--preset", "deadlock")
    assert r.returncode == 1
    assert "VIOLATED: Deadlock" in r.stdout and "trace: 4 states, 3 actions" in r.stdout
    (trace,) = (tmp_path / "traces").iterdir()
    assert f"kmc replay {trace}" in r.stdout and "rationale:" in r.stdout
    assert "Traceback" not in r.stderr
    r2 = check(tmp_path, "--preset", "deadlock", "--no-deadlock", "--quiet")
    assert r2.returncode == 0, r2.stderr


def test_default_traces_dir_is_cwd_traces(tmp_path):
    r = kmc("check", *TOYS, "--preset", "broken", "--quiet", cwd=tmp_path)
    assert r.returncode == 1
    assert len(list((tmp_path / "traces").glob("BigNot4-broken-*.json"))) == 1


def test_model_error_exits_3(tmp_path):
    r = check(tmp_path, "--preset", "crash", "--quiet")
    line = assert_one_line_error(r, 3, "ZeroDivisionError")
    assert "the model broke its contract" in line


def test_sys_exit_in_a_predicate_is_an_error_not_a_silent_end(tmp_path):
    # Before, SystemExit left kmc with the predicate's status and no verdict: exit 0.
    inv = tmp_path / "exits.py"
    inv.write_text("import sys\nfrom checker.model import always\n"
                   "def later(s):\n    if s.x + s.y == 2:\n        sys.exit(0)\n    return True\n"
                   "Exits = always('Exits', later, 'calls sys.exit on the second level')\n")
    r = check(tmp_path, "--preset", "tiny", "--invariants", inv, "--quiet")
    assert "property 'Exits' in invariants file" in assert_one_line_error(r, 2, "raised SystemExit: 0")
    r = kmc("simulate", *TOYS, "--preset", "tiny", "--invariants", inv, "--traces-dir", tmp_path / "traces")
    assert "property 'Exits' in invariants file" in assert_one_line_error(r, 2, "raised SystemExit: 0")


def test_simulate_reports_a_raising_invariants_predicate_as_check_does(tmp_path):
    # kmc check: exit 2, the user's file and line; kmc simulate said exit 3, "the model broke its contract"
    inv = tmp_path / "raises.py"
    inv.write_text("from checker.model import always\n"
                   "def bad(s):\n    if s.x == 1:\n        raise KeyError('x')\n    return True\n"
                   "Raises = always('Raises', bad, 'raises on x = 1')\n")
    for command in ("check", "simulate"):
        r = kmc(command, *TOYS, "--preset", "tiny", "--invariants", inv, "--traces-dir", tmp_path / "traces")
        assert_one_line_error(r, 2, f"property 'Raises' in invariants file '{inv}' line 4 raised KeyError: 'x'")


def test_sys_exit_anywhere_in_model_code_is_exit_3(tmp_path):
    # A family whose build() exits: no engine call site is around it, the CLI is.
    (tmp_path / "exiting.py").write_text(
        "import sys\nfrom tests.toys import ToysFamily\n"
        "class Exiting(ToysFamily):\n    def build(self, config):\n        sys.exit(0)\n"
        "FAMILY = Exiting()\n")
    r = cli_support.kmc("check", "--model", "exiting:FAMILY", "--traces-dir", tmp_path / "traces", cwd=tmp_path,
                        timeout=60)
    assert "never exit the process" in assert_one_line_error(r, 3, "called sys.exit(0)")


def test_property_deadlock_with_no_deadlock_is_refused(tmp_path):
    # Before, it checked nothing and said every property holds.
    for command in ("check", "simulate"):
        r = kmc(command, *TOYS, "--preset", "tiny", "--property", "Deadlock", "--no-deadlock",
                "--traces-dir", tmp_path / "traces")
        assert_one_line_error(r, 2, "--property Deadlock names the deadlock check that --no-deadlock turns off")


# ----------------------------------------------------------------------- replay

def test_replay_ok(broken):
    _, _, trace = broken
    r = kmc("replay", trace, *TOYS)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "step 0  initial state" in out and "  small: 0" in out and "  big: 0" in out
    assert "step 1  FillBig()" in out and "  big: 0 -> 5" in out
    assert "step 6  " in out and "every fingerprint matches" in out
    assert "'BigNot4' is still violated" in out
    assert r.stderr == ""


def test_replay_step(broken):
    _, _, trace = broken
    r = kmc("replay", trace, *TOYS, "--step", "2")
    assert r.returncode == 0, r.stderr
    assert "step 2  " in r.stdout and "step 3  " not in r.stdout and "stopped after step 2 of 6" in r.stdout
    assert_one_line_error(kmc("replay", trace, *TOYS, "--step", "7"), 2, "--step 7 is out of range")
    assert_one_line_error(kmc("replay", trace, *TOYS, "--step", "-1"), 2, "--step")


def tampered(tmp_path: Path, trace: Path, edit) -> Path:
    doc = json.loads(trace.read_text())
    edit(doc)
    p = tmp_path / "tampered.json"
    p.write_text(json.dumps(doc))
    return p


def test_replay_tampered_fingerprint(tmp_path, broken):
    p = tampered(tmp_path, broken[2], lambda d: d["steps"][3].__setitem__("fingerprint", "0x0123456789abcdef"))
    r = kmc("replay", p, *TOYS)
    assert_one_line_error(r, 1, "step 3: state differs from the recorded one")
    assert "MISMATCH" in r.stdout and "step 2  " in r.stdout


def test_replay_tampered_action(tmp_path, broken):
    p = tampered(tmp_path, broken[2], lambda d: d["steps"][2]["action"].__setitem__("args", {"x": 1}))
    r = kmc("replay", p, *TOYS)
    assert_one_line_error(r, 1, "step 2: action")
    assert "is not enabled here (enabled: " in r.stderr


def test_replay_when_the_model_changed(tmp_path):
    r = check(tmp_path, "--set", "toy=grid", "--set", "k=2", "--quiet")
    assert r.returncode == 1
    (trace,) = (tmp_path / "traces").glob("SumNotK-default-custom-*.json")
    # The path still fits, but with k=5 the final state no longer violates SumNotK.
    fixed = tampered(tmp_path, trace, lambda d: d["config"].__setitem__("k", 5))
    r = kmc("replay", fixed, *TOYS)
    assert_one_line_error(r, 1, "now HOLDS on the final state")
    # Without k the model does not declare SumNotK: nothing to re-check (as for a path
    # saved from kmc explore), which replay says, exit 0.
    gone = tampered(tmp_path, trace, lambda d: d["config"].__setitem__("k", -1))
    r = kmc("replay", gone, *TOYS)
    assert r.returncode == 0 and "warning: property 'SumNotK' is not declared by the model" in r.stdout
    # A property recorded as another kind than the model declares cannot be re-checked
    # (exit 1: it was exit 0, "a path cannot violate it").
    some = tampered(tmp_path, trace, lambda d: d["property"].__setitem__("name", "ReachCorner"))
    r = kmc("replay", some, *TOYS)
    assert_one_line_error(r, 1, "the trace records 'ReachCorner' as of kind 'always', the model declares it "
                                "sometimes")
    # a kind that is no kind, even an empty one, is shown quoted (it crashed on "")
    for kind in ("", "\x1b[31mred"):
        odd = tampered(tmp_path, trace, lambda d: d["property"].update(name="ReachCorner", kind=kind))
        r = kmc("replay", odd, *TOYS)
        assert_one_line_error(r, 1, f"as of kind {kind!r}, the model declares it sometimes")
        assert "\x1b" not in r.stdout
    # A witness trace is re-checked: this path ends at x + y = 2, not at the corner.
    witness = tampered(tmp_path, trace, lambda d: d["property"].update(name="ReachCorner", kind="sometimes"))
    r = kmc("replay", witness, *TOYS)
    assert_one_line_error(r, 1, "witness 'ReachCorner' does NOT hold on the final state (step 2) any more")


def test_replay_set_replays_with_one_key_changed(tmp_path):
    """``--set`` replays the trace with another value for a key of its config: the
    trace saved with k=2, edited to k=5, violates again with --set k=2."""
    r = check(tmp_path, "--set", "toy=grid", "--set", "k=2", "--quiet")
    assert r.returncode == 1
    (trace,) = (tmp_path / "traces").glob("SumNotK-default-custom-*.json")
    edited = tampered(tmp_path, trace, lambda d: d["config"].__setitem__("k", 5))
    r = kmc("replay", edited, *TOYS, "--set", "k=2")
    assert r.returncode == 0, r.stderr
    assert "  --set:     k=2 (replayed with these values, not the trace's own)" in r.stdout
    assert "'SumNotK' is still violated" in r.stdout
    assert_one_line_error(kmc("replay", edited, *TOYS, "--set", "nokey=1"), 2, "unknown config key 'nokey'")
    assert_one_line_error(kmc("replay", edited, *TOYS, "--set", "k"), 2, "--set expects key=value")


@pytest.mark.parametrize("edit,needle", [
    (lambda d: d.pop("property"), "missing field 'property'"),
    (lambda d: d.__setitem__("format_version", 99), "this kmc reads format_version 1"),
    (lambda d: d["steps"][1].__setitem__("fingerprint", 12), "steps[1].fingerprint"),
    # 0.0 == 0: a float argument passed for the enabled action and crashed next_state (exit 3)
    (lambda d: d["steps"][1]["action"].__setitem__("args", {"broker": 0.0}),
     "field 'steps[1].action.args.broker' is 0.0, a float; an action's arguments are integers, strings"),
    (lambda d: d["steps"][1]["action"].__setitem__("args", {"isr": [0, {"a": 1}]}),
     "field 'steps[1].action.args.isr[1]' is {'a': 1}, a dict"),
])
def test_replay_malformed(tmp_path, broken, edit, needle):
    p = tampered(tmp_path, broken[2], edit)
    assert_one_line_error(kmc("replay", p), 2, needle)


def test_replay_refuses_an_invariants_file_that_is_not_there(tmp_path, broken):
    # Before, the file was loaded only for a property of its own: a built-in one
    # replayed with exit 0 and the typo went unnoticed.
    assert_one_line_error(kmc("replay", broken[2], "--invariants", tmp_path / "nope.py"), 2,
                          f"invariants file '{tmp_path / 'nope.py'}' does not exist")
    assert_one_line_error(kmc("replay", broken[2], "--invariants", tmp_path), 2, "is a directory")


def test_replay_invalid_json_and_missing_file(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"format": "kmc-trace",')
    assert_one_line_error(kmc("replay", p), 2, "not valid JSON")
    assert_one_line_error(kmc("replay", tmp_path / "nope.json"), 2, "does not exist")


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("args,needle", [
    (["--preset", "smal"], "unknown preset 'smal' (known: broken, crash, deadlock, default, tiny)"),
    (["--preset", "tinyy"], "unknown preset 'tinyy' (did you mean 'tiny'?)"),
    (["--set", "n=abc"], "config key 'n' expects an integer in 0..1000, got 'abc'"),
    (["--set", "toy=glitch", "--set", "n=0"], "invalid configuration for model 'toys': toy=glitch needs n >= 1; "
                                              "change the values with --set key=value"),
    (["--max-states", "0"], "argument --max-states: expects a number >= 1, got 0"),
    (["--model", "nosuchmodel"], "unknown model 'nosuchmodel'"),
    (["--set", "nn=3"], "unknown config key 'nn'"),
    (["--set", "n=5000"], "out of range"),
    (["--set", "toy=nope"], "must be one of diehard"),
    (["--set", "solve=maybe"], "expects a boolean"),
    (["--set", "n"], "--set expects key=value"),
    (["--property", "Nope"], "unknown property 'Nope'"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--max-depth", "x"], "--max-depth"),
    (["--config", "/nonexistent/c.toml"], "does not exist"),
])
def test_check_bad_input(tmp_path, args, needle):
    assert_one_line_error(check(tmp_path, *args), 2, needle)


def test_bad_model_and_subcommand():
    assert_one_line_error(kmc("check", "--model", "tests.nosuch:FAMILY"), 2, "cannot import module")
    assert_one_line_error(kmc("check", "--model", "tests.toys:NOPE"), 2, "has no attribute 'NOPE'")
    assert_one_line_error(kmc("frobnicate"), 2, "unknown command 'frobnicate'; choose one of check, replay, list")
    assert_one_line_error(kmc("chek"), 2, "unknown command 'chek' (did you mean 'check'?)")
    assert_one_line_error(kmc(), 2, "choose a command")


def test_malformed_toml(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('preset = "tiny"\nn = = 2\n')
    line = assert_one_line_error(check(tmp_path, "--config", f), 2, "is not valid TOML")
    assert "line 2" in line and str(f) in line


def test_toml_config_file(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('preset = "tiny"\n[config]\nn = 3\n')
    r = check(tmp_path, "--config", f, "--set", "n=1")
    assert r.returncode == 0, r.stderr
    assert "preset tiny" in r.stdout and "toy=grid n=1" in r.stdout


def test_toml_names_the_model(tmp_path):
    """A config's module:attribute is taken when the command line names the same
    module (the command line is what may import code; see tests/test_untrusted.py)."""
    f = tmp_path / "c.toml"
    f.write_text('model = "tests.toys:FAMILY"\npreset = "broken"\n')
    r = kmc("check", "--config", f, *TOYS, "--traces-dir", tmp_path / "traces", "--quiet")
    assert r.returncode == 1 and "VIOLATED: BigNot4" in r.stdout


def test_property_filter(tmp_path):
    r = check(tmp_path, "--preset", "broken", "--property", "TypeOK", "--quiet")
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------------ invariants

def test_user_invariant_fails_and_trace_names_it(tmp_path):
    inv = tmp_path / "inv.py"
    inv.write_text("from checker.model import always\n"
                   "SmallNot2 = always('SmallNot2', lambda s: s.small != 2, 'the small jug never holds 2')\n")
    r = check(tmp_path, "--invariants", inv, "--quiet")
    assert r.returncode == 1, r.stderr
    (trace,) = (tmp_path / "traces").glob("*.json")
    assert trace.name.startswith("SmallNot2-default-")
    doc = json.loads(trace.read_text())
    assert doc["property"]["name"] == "SmallNot2" and doc["property"]["rationale"] == "the small jug never holds 2"
    r = kmc("replay", trace, *TOYS, "--invariants", inv)
    assert r.returncode == 0, r.stderr
    assert "'SmallNot2' is still violated" in r.stdout


@pytest.mark.parametrize("text,needle", [
    ("def broken(:\n", "line 1: SyntaxError"),
    ("x = 1\ny = 1 / 0\n", "line 2 raised ZeroDivisionError"),
    ("x = 1\n", "defines no property"),
    ("from checker.model import always\nTypeOK = always('TypeOK', lambda s: True)\n", "already defined"),
    # a predicate that is no function was called on the first state: exit 3, the state in the message
    ("from checker.model import always\nA = always('A', 5)\n", "the predicate of property 'A' is 5 (int), not a "
                                                                 "function"),
    ("from checker.model import always\nA = always('', lambda s: True)\n", "defines a property named ''"),
    # a predicate that cannot take the state raised TypeError on the first call: the model's fault, exit 3
    ("from checker.model import always\nA = always('A', lambda: True)\n",
     "line 2: the predicate of property 'A' takes (), not the state arguments; write it as lambda s: ..."),
    ("from checker.model import always\nA = always('A', lambda s: True, step=True)\n",
     "the predicate of property 'A' takes (s), not (prev, action, next), a step property's arguments"),
    ("from checker.model import eventually\nA = eventually('A', lambda s: True, trigger=lambda a, b: 1)\n",
     "the trigger of property 'A' takes (a, b)"),
    # nested past what Python's compiler takes: an internal error (exit 4)
    ("x = " + "1+" * 100000 + "1\n", "is nested too deeply for Python to compile (RecursionError)"),
])
def test_bad_invariants_file(tmp_path, text, needle):
    inv = tmp_path / "inv.py"
    inv.write_text(text)
    line = assert_one_line_error(check(tmp_path, "--invariants", inv), 2, needle)
    assert str(inv) in line


def test_a_predicate_raising_a_base_exception_is_the_files_fault(tmp_path):
    """An exception class derived from BaseException, not Exception, went past every
    handler: a traceback, and exit 1 as if a property were violated."""
    inv = tmp_path / "inv.py"
    inv.write_text("from checker.model import always\nclass Stop(BaseException):\n    pass\n"
                   "def boom(s):\n    raise Stop('boom')\nA = always('A', boom)\n")
    line = assert_one_line_error(check(tmp_path, "--invariants", inv), 2, "line 5 raised Stop: boom")
    assert str(inv) in line
    r = kmc("simulate", *TOYS, "--walks", "2", "--invariants", inv, "--traces-dir", tmp_path / "t", cwd=tmp_path)
    assert r.returncode == 2 and "line 5 raised Stop: boom" in r.stderr and "Traceback" not in r.stderr


# ------------------------------------------------------------ never overwrite

def test_existing_traces_are_never_overwritten(tmp_path):
    traces = tmp_path / "traces"
    r1 = check(tmp_path, "--preset", "broken", "--quiet")
    (first,) = traces.glob("*.json")
    content = first.read_text()
    # Same run again: identical content, the file is reused, not duplicated.
    check(tmp_path, "--preset", "broken", "--quiet")
    assert list(traces.glob("*.json")) == [first]
    # The same counterexample from another command line (--json, another spelling of
    # --traces-dir) is the same trace: reused too, the first command stays recorded.
    r2 = kmc("check", *TOYS, "--preset", "broken", "--json", "--traces-dir", "traces", cwd=tmp_path)
    assert r1.returncode == r2.returncode == 1
    assert json.loads(r2.stdout)["trace_path"] == "traces/" + first.name
    assert list(traces.glob("*.json")) == [first] and first.read_text() == content
    # Same property, preset and final state, but a different trace (it records an
    # invariants file): a new file next to it.
    inv = tmp_path / "inv.py"
    inv.write_text("from checker.model import always\nTrue_ = always('Tautology', lambda s: True)\n")
    r3 = check(tmp_path, "--preset", "broken", "--quiet", "--invariants", inv)
    assert r3.returncode == 1
    names = {f.name for f in traces.glob("*.json")}
    assert names == {first.name, first.name.replace(".json", "-2.json")}
    assert first.read_text() == content
    # A user's own file under the trace's name is never touched.
    first.write_text("my notes")
    r4 = check(tmp_path, "--preset", "broken", "--quiet")
    assert first.read_text() == "my notes" and first.name.replace(".json", "-3.json") in r4.stdout


# ------------------------------------------------------------------------ list

def test_list_everything():
    r = kmc("list", *TOYS)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for needle in ("presets (default: default;", "broken", "[solve=true]", "parameters", "n ", "0..1000",
                   "flags", "terminal", "properties (", "NeverDecreases  always (step)", "actions:",
                   "FillBig", "Deadlock"):
        assert needle in out, needle


def test_list_sections():
    r = kmc("list", "flags", *TOYS)
    assert r.returncode == 0 and "solve" in r.stdout and "presets" not in r.stdout
    assert_one_line_error(kmc("list", "bogus", *TOYS), 2, "unknown choice 'bogus'; choose one of presets")


def test_help_documents_exit_codes():
    for cmd in ("check", "replay", "list"):
        r = kmc(cmd, "--help")
        assert r.returncode == 0 and "exit status:" in r.stdout and "130" in r.stdout


# ---------------------------------------------------------------- entry points

def test_models_found_through_entry_points(tmp_path):
    """A distribution on sys.path that registers the toys under kmc.models."""
    site = tmp_path / "site"
    info = site / "kmc_toys-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kmc-toys\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[kmc.models]\ntoys = tests.toys:FAMILY\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(site)]))

    def run(*args):
        return subprocess.run([sys.executable, "-m", "checker", *map(str, args)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)

    r = run("list", "models")
    assert r.returncode == 0 and "toys" in r.stdout and "tests.toys:FAMILY" in r.stdout
    r = run("check", "--model", "toys", "--preset", "broken", "--quiet")
    assert r.returncode == 1, r.stderr
    (trace,) = (tmp_path / "traces").glob("*.json")
    assert json.loads(trace.read_text())["model"]["family"] == "toys"
    r = run("replay", trace)
    assert r.returncode == 0, r.stderr
    assert_one_line_error(run("check", "--model", "toyz"), 2, "unknown model 'toyz' (did you mean 'toys'?")
    if "kafka" not in run("list", "models").stdout:  # kmc itself is not installed here
        r = run("check", "--preset", "tiny", "--quiet")
        assert r.returncode == 0 and "verdict: OK" in r.stdout


# ------------------------------------------------------- errors found by a user

def test_toml_with_unknown_key(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('preset = "tiny"\n[config]\nnn = 3\n')
    line = assert_one_line_error(check(tmp_path, "--config", f), 2, "unknown config key 'nn' (did you mean 'n'?)")
    assert str(f) in line


def test_user_invariant_that_raises_is_the_users_error(tmp_path):
    """A typo in a user's predicate is bad input (exit 2) naming the file and line,
    not a model that broke its contract (exit 3)."""
    inv = tmp_path / "inv.py"
    inv.write_text("from checker.model import always\n\n"
                   "Typo = always('Typo', lambda s: s.no_such_field < 4, 'a typo')\n")
    line = assert_one_line_error(check(tmp_path, "--invariants", inv, "--quiet"), 2,
                                 f"property 'Typo' in invariants file '{inv}' line 3 raised AttributeError")
    assert "at depth 0" in line and "fix the predicate" in line
    # The model's own bugs are still exit 3, with an invariants file loaded too.
    inv.write_text("from checker.model import always\nFine = always('Fine', lambda s: True, 'holds')\n")
    assert_one_line_error(check(tmp_path, "--preset", "crash", "--invariants", inv, "--quiet"), 3,
                          "ZeroDivisionError")


def test_property_declared_only_by_other_presets(tmp_path):
    line = assert_one_line_error(check(tmp_path, "--preset", "tiny", "--property", "BigNot4"), 2,
                                 "property 'BigNot4' is not declared by this configuration (preset tiny)")
    assert "presets that declare it: broken" in line
    line = assert_one_line_error(check(tmp_path, "--preset", "tiny", "--set", "n=3", "--property", "OffGrid"), 2,
                                 "(preset tiny with your overrides); no preset declares it")


def test_traces_dir_problems_fail_before_the_search(tmp_path):
    f = tmp_path / "afile"
    f.write_text("")
    r = kmc("check", *TOYS, "--preset", "broken", "--traces-dir", f)
    assert_one_line_error(r, 2, f"--traces-dir '{f}' is a file, not a directory")
    assert r.stdout == ""  # nothing was explored
    r = kmc("check", *TOYS, "--preset", "broken", "--traces-dir", f / "sub")
    assert_one_line_error(r, 2, f"cannot create --traces-dir '{f / 'sub'}': '{f}' is not a directory")


def test_replay_unknown_family_prints_nothing_first(tmp_path, broken):
    p = tampered(tmp_path, broken[2], lambda d: d["model"].__setitem__("family", "tests.nosuch:FAMILY"))
    r = kmc("replay", p)
    assert_one_line_error(r, 2, f"trace file '{p}' was made with model family 'tests.nosuch:FAMILY', which is "
                                f"not a registered model")
    assert "name the family with --model" in r.stderr and r.stdout == ""
    r = kmc("replay", p, "--model", "tests.nosuch:FAMILY")
    assert_one_line_error(r, 2, "cannot import module 'tests.nosuch' for --model tests.nosuch:FAMILY")
    p = tampered(tmp_path, broken[2], lambda d: d["model"].__setitem__("family", "nosuch"))
    assert_one_line_error(kmc("replay", p), 2, "model family 'nosuch', which is not a registered model")
    # --model names a family that is there.
    r = kmc("replay", p, "--model", "tests.toys:FAMILY")
    assert r.returncode == 0, r.stderr


def test_list_with_a_bad_model_prints_nothing_first():
    r = kmc("list", "--model", "tests.toys:NOPE")
    assert_one_line_error(r, 2, "has no attribute 'NOPE'")
    assert r.stdout == ""


def test_list_wraps_and_says_which_presets_declare_a_property():
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="80")
    r = subprocess.run([sys.executable, "-m", "checker", "list", *TOYS], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    # Every line fits, but for the one row whose (32+ wide) range cell overflows.
    assert [line for line in r.stdout.splitlines() if len(line) > 80] == [
        line for line in r.stdout.splitlines() if line.startswith("  toy       str in {")], r.stdout
    assert "BigNot4" in r.stdout and "[declared in presets: broken]" in r.stdout.replace("\n" + " " * 33, " ")


def test_violation_report_is_readable(tmp_path):
    r = check(tmp_path, "--preset", "broken")
    assert r.returncode == 1
    block = r.stdout[r.stdout.index("VIOLATED: BigNot4"):]
    lines = block.splitlines()
    assert lines[1] == "  does not hold in the state after step 6: BigToSmall()"
    assert lines[2] == "  rationale: false: its counterexample solves the puzzle"
    assert lines[3].startswith("  trace: 7 states, 6 actions, saved to ") and lines[4].startswith("  replay it: ")
    assert block.count("its counterexample solves the puzzle") == 1  # the rationale is not repeated
    r = check(tmp_path, "--set", "toy=glitch", "--set", "n=4", "--quiet")
    assert "  broken by step 3: Glitch(by=-1)\n" in r.stdout


def test_properties_line_counts_the_filter(tmp_path):
    inv = tmp_path / "inv.py"
    inv.write_text("from checker.model import always\nSmall = always('Small', lambda s: s.small <= 3, 'fits')\n")
    r = check(tmp_path, "--invariants", inv, "--property", "Small")
    assert r.returncode == 0, r.stderr
    assert "properties: 1 of 3 (--property); 1 from --invariants; deadlock check off" in r.stdout


def test_replay_step_shows_the_state_there(broken):
    r = kmc("replay", broken[2], *TOYS, "--step", "2")
    assert r.returncode == 0, r.stderr
    assert "state at step 2  [0x" in r.stdout
    after = r.stdout[r.stdout.index("state at step 2"):]
    assert "  small: " in after and "  big: " in after


def test_replay_runs_only_the_invariants_the_command_line_names(tmp_path):
    inv = tmp_path / "inv.py"
    inv.write_text("from checker.model import always\n"
                   "SmallNot2 = always('SmallNot2', lambda s: s.small != 2, 'the small jug never holds 2')\n")
    r = kmc("check", *TOYS, "--invariants", "inv.py", "--quiet", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    (trace,) = (tmp_path / "traces").glob("*.json")
    assert json.loads(trace.read_text())["invariants"] == [str(inv)]   # recorded, for the reader
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = kmc("replay", trace, *TOYS, cwd=elsewhere)
    # The file's path is shown cut to 80 characters, as kmc shows every value a trace names.
    line = assert_one_line_error(r, 2, f"violates property 'SmallNot2', which its run loaded from invariants "
                                       f"file {shown(str(inv), 80)}; kmc never runs a file a trace names")
    assert "--invariants FILE.py" in line and r.stdout == ""
    # --step stops before the property is re-checked: no file is needed.
    assert kmc("replay", trace, *TOYS, "--step", "1", cwd=elsewhere).returncode == 0
    moved = tmp_path / "moved.py"
    inv.rename(moved)
    r = kmc("replay", trace, *TOYS, "--invariants", moved, cwd=elsewhere)
    assert r.returncode == 0 and "'SmallNot2' is still violated" in r.stdout, r.stdout


@pytest.mark.parametrize("text,needle", [
    ('preset = "tiny"\nn = "three"\n', "line 2: config key 'n' expects an integer in 0..1000, got 'three'; e.g. n = 3"),
    ('# mine\npreset = "tinyy"\n', "line 2: unknown preset 'tinyy' (did you mean 'tiny'?)"),
    ('[config]\ntoy = "glitch"\nn = 0\n', "invalid configuration for model 'toys': toy=glitch needs n >= 1"),
])
def test_config_file_errors_name_the_file_and_line(tmp_path, text, needle):
    f = tmp_path / "c.toml"
    f.write_text(text)
    line = assert_one_line_error(check(tmp_path, "--config", f), 2, needle)
    if "line" in needle:
        assert f"config file '{f}' line" in line


def test_config_file_model_names_the_file(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('model = "tests.nosuch:FAMILY"\n')
    assert_one_line_error(kmc("check", "--config", f), 2, f"config file '{f}' line 1 names model family "
                                                          f"'tests.nosuch:FAMILY', which is not a registered model")
    f.write_text('\nmodel = "kafak"\n')
    assert_one_line_error(kmc("check", "--config", f), 2, f"config file '{f}' line 2: unknown model 'kafak' "
                                                          f"(did you mean 'kafka'?)")


def test_unreached_witnesses_are_summed_up_with_the_reason(tmp_path):
    r = check(tmp_path, "--preset", "tiny", "--max-depth", "1", "--quiet")
    assert r.returncode == 0, r.stderr
    assert "witnesses not reached yet (the search stopped at the bounds): ReachCorner" in r.stdout
    assert "(1 state," not in r.stdout and "states, depth 1)" in r.stdout
