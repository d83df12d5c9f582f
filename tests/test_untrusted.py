"""A trace or a config file is data: loading one never runs code that the command
line did not name.

Each hostile trace here names a module or an invariants file that, if it ever ran,
would create a marker file.  ``kmc replay``, ``kmc conform`` and ``python -m
spec.expand`` must refuse such a trace in one line (exit 2), name the flag that
would supply what is missing, and leave no marker behind.  So must every command
that takes ``--config`` when the file names a module instead of a registered model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import cli_support

ROOT = Path(__file__).resolve().parent.parent
TOYS = ["--model", "tests.toys:FAMILY"]
EVIL = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\nprint('EVIL RAN')\n"


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``args`` (a python -m command line) from ``cwd``, with ``cwd`` importable too:
    the evil module would import if kmc tried."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(cwd)]))
    env.pop("KMC_DEBUG", None)
    return subprocess.run([sys.executable, "-m", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A valid toy trace, and in its directory an evil module and an evil invariants file."""
    d = tmp_path_factory.mktemp("hostile")
    r = cli_support.kmc("check", *TOYS, "--preset", "broken", "--traces-dir", d / "traces", "--quiet")
    assert r.returncode == 1, r.stderr
    (trace,) = (d / "traces").glob("*.json")
    marker = d / "MARKER"
    (d / "kmc_evil_mod.py").write_text(EVIL.format(marker=str(marker)) + "from tests.toys import FAMILY\n")
    (d / "evil_inv.py").write_text(EVIL.format(marker=str(marker))
                                   + "from checker.model import always\nEvil = always('Evil', lambda s: False, 'x')\n")
    return d, trace, marker


def tamper(d: Path, trace: Path, name: str, edit) -> Path:
    doc = json.loads(trace.read_text())
    edit(doc)
    p = d / name
    p.write_text(json.dumps(doc))
    return p


def no_marker(r: subprocess.CompletedProcess, marker: Path) -> None:
    assert not marker.exists(), "code named by the trace ran"
    assert "EVIL RAN" not in r.stdout + r.stderr


def one_line(r: subprocess.CompletedProcess, needle: str, prefix: str = "kmc: ") -> str:
    return cli_support.one_line_error(r, needle, code=2, prefix=prefix,
                                      reproduce="python -m spec.expand" if prefix.startswith("spec") else "kmc")


def test_a_module_named_by_a_trace_is_never_imported(hostile):
    d, trace, marker = hostile
    p = tamper(d, trace, "module.json", lambda doc: doc["model"].__setitem__("family", "kmc_evil_mod:FAMILY"))
    for args in (["checker", "replay", p], ["checker", "conform", p]):
        r = run(d, *args)
        line = one_line(r, "model family 'kmc_evil_mod:FAMILY', which is not a registered model")
        assert "kmc never imports a module a trace names: name the family with --model" in line
        assert r.stdout == ""
        no_marker(r, marker)
    # Named on the command line, the same module is the user's choice, and runs.
    r = run(d, "checker", "replay", p, "--model", "kmc_evil_mod:FAMILY")
    assert r.returncode == 0 and marker.exists(), r.stderr
    marker.unlink()


def test_the_standard_library_this_module_is_not_imported_either(hostile):
    d, trace, marker = hostile
    p = tamper(d, trace, "this.json", lambda doc: doc["model"].__setitem__("family", "this:s"))
    r = run(d, "checker", "replay", p)
    one_line(r, "model family 'this:s', which is not a registered model")
    assert "Beautiful is better than ugly" not in r.stdout + r.stderr


def test_an_invariants_file_named_by_a_trace_is_never_run(hostile):
    d, trace, marker = hostile

    def edit(doc):
        doc["invariants"] = [str(d / "evil_inv.py")]
        doc["property"]["name"] = "Evil"

    p = tamper(d, trace, "inv.json", edit)
    r = run(d, "checker", "replay", p, *TOYS)
    line = one_line(r, "violates property 'Evil', which its run loaded from invariants file")
    assert "kmc never runs a file a trace names: re-check the property with --invariants FILE.py" in line
    no_marker(r, marker)
    # A relative path next to the trace (the old fallback) is not run either.
    p2 = tamper(d, trace, "inv-relative.json", lambda doc: (edit(doc), doc.__setitem__("invariants", ["evil_inv.py"])))
    no_marker(run(d, "checker", "replay", p2, *TOYS), marker)
    r = run(d, "checker", "conform", p, "--model", "spec.family:FAMILY")
    assert r.returncode == 1 and "its config no longer fits model family" in r.stderr     # a toy's config
    no_marker(r, marker)
    r = run(d, "spec.expand", p, "--traces-dir", d / "out")
    one_line(r, "", prefix="spec.expand: error: ")
    no_marker(r, marker)
    assert not (d / "out").exists()


def test_spec_expand_never_loads_what_a_trace_names(hostile, tmp_path):
    d, trace, marker = hostile
    atomic = ROOT / "tests" / "data" / "atomic-data-hw.json"

    def edit(doc):
        doc["model"]["family"] = "kmc_evil_mod:FAMILY"
        doc["invariants"] = [str(d / "evil_inv.py")]

    p = tamper(d, atomic, "atomic-evil.json", edit)
    r = run(d, "spec.expand", p, "--traces-dir", tmp_path)
    assert r.returncode == 0, r.stderr          # the family is a label: the expansion is the Kafka model's
    no_marker(r, marker)
    (out,) = tmp_path.glob("*.json")
    assert json.loads(out.read_text())["steps"][-1]["index"] > 0


# A config file is data too: every command that takes --config loads a registered
# family from it, and nothing else.  explore is refused before it starts serving.
CONFIG_COMMANDS = {
    "check": ["check", "--max-states", "10", "--traces-dir", "cfg-traces"],
    "graph": ["graph", "--format", "dot"],
    "simulate": ["simulate", "--walks", "1", "--traces-dir", "cfg-traces"],
    "bmc": ["bmc", "--steps", "1"],
    "prove": ["prove", "--invariant", "LeaderInIsr"],
    "explore": ["explore", "--port", "0"],
}


@pytest.mark.parametrize("command", list(CONFIG_COMMANDS))
def test_a_module_named_by_a_config_file_is_never_imported(hostile, command):
    d, _trace, marker = hostile
    cfg = d / f"evil-{command}.toml"
    cfg.write_text('preset = "tiny"\nmodel = "kmc_evil_mod:FAMILY"\n')
    r = run(d, "checker", *CONFIG_COMMANDS[command], "--config", cfg)
    line = one_line(r, f"config file '{cfg}' line 2 names model family 'kmc_evil_mod:FAMILY', which is not a "
                       f"registered model (registered: kafka)")
    assert ("kmc never imports a module a config file names: pass --model kmc_evil_mod:FAMILY on the command "
            "line instead") in line
    assert f"(reproduce: kmc {command} " in line
    assert r.stdout == ""
    no_marker(r, marker)
    assert not (d / "cfg-traces").exists()


def test_a_config_file_may_name_a_registered_model_or_what_the_command_line_names(hostile):
    d, _trace, marker = hostile
    for name, ref in (("registered", "kafka"), ("target", "spec.family:FAMILY")):
        cfg = d / f"{name}.toml"
        cfg.write_text(f'preset = "tiny"\nmodel = "{ref}"\n')
        r = run(d, "checker", "check", "--config", cfg, "--max-states", "50", "--quiet", "--traces-dir", d / "t")
        assert r.returncode == 0, r.stderr
        assert "verdict: BOUNDED" in r.stdout
    evil = d / "names-a-module.toml"
    evil.write_text('preset = "tiny"\nmodel = "kmc_evil_mod:FAMILY"\n')
    # --model wins over the config's model, whose module is then not imported.
    r = run(d, "checker", "check", "--config", evil, "--model", "kafka", "--max-states", "50", "--quiet",
            "--traces-dir", d / "t")
    assert r.returncode == 0, r.stderr
    no_marker(r, marker)
    # The same module:attribute on the command line is the user's choice, and runs.
    r = run(d, "checker", "check", "--config", evil, "--model", "kmc_evil_mod:FAMILY", "--quiet",
            "--traces-dir", d / "t")
    assert r.returncode == 0 and marker.exists(), r.stderr
    marker.unlink()


def test_the_schema_ships_in_the_package_and_is_valid():
    import jsonschema

    from checker.traceschema import schema
    jsonschema.Draft202012Validator.check_schema(schema())
    assert schema()["properties"]["format"]["const"] == "kmc-trace"
    # Every saved trace of the repository is valid against it.
    validator = jsonschema.Draft202012Validator(schema())
    for p in sorted((ROOT / "traces").rglob("*.json")):
        validator.validate(json.loads(p.read_text()))


# ------------------------------------------------- the other failures of issue 14

def test_an_empty_preset_is_refused_not_the_default(tmp_path):
    r = cli_support.kmc("check", "--preset", "", "--traces-dir", tmp_path)
    cli_support.one_line_error(r, "--preset '' names no preset; pick one with --preset NAME")
    assert r.stdout == ""
    r = cli_support.kmc("conform", "--preset", "", "--traces-dir", tmp_path)
    cli_support.one_line_error(r, "--preset '' names no preset")


@pytest.mark.parametrize("value, needle", [
    ("'yes'", "returned 'yes', a str, not a bool"),
    ("None", "returned None, a NoneType, not a bool (a forgotten return?)"),
])
def test_a_predicate_must_return_a_bool(tmp_path, value, needle):
    inv = tmp_path / "inv.py"
    inv.write_text(f"from checker.model import always\n\n\ndef pred(s):\n    return {value}\n\n\n"
                   f"Mine = always('Mine', pred, 'fuzzed')\n")
    r = cli_support.kmc("check", *TOYS, "--invariants", inv, "--traces-dir", tmp_path / "traces")
    line = cli_support.one_line_error(r, f"the predicate of property 'Mine' (invariants file '{inv}' line 4) "
                                         f"{needle}")
    assert "fix the predicate: it must return True or False" in line
    assert not (tmp_path / "traces").exists()            # not reported as a violation with a trace


def test_deeply_nested_json_is_one_line_everywhere(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text("[" * 200_000)
    for args in (["checker", "replay", p], ["checker", "conform", p]):
        one_line(run(tmp_path, *args), "nested more than 100 levels deep")
    one_line(run(tmp_path, "spec.expand", p), "nested more than 100 levels deep", prefix="spec.expand: error: ")


def test_an_unpaired_surrogate_is_refused_where_a_trace_is_read(tmp_path):
    """JSON's \\ud800 escape makes a string that no UTF-8 output can hold: kmc replay
    --html failed with an internal error, and kmc explore dropped the connection."""
    doc = json.loads(next((ROOT / "traces" / "known").glob("ControllerEpochFencing-zombie-*.json")).read_text())
    doc["preset"] = "PLACE"
    p = tmp_path / "surrogate.json"
    p.write_text(json.dumps(doc).replace("PLACE", "\\ud800"))
    one_line(run(tmp_path, "checker", "replay", p, "--html", tmp_path / "x.html"),
             "a string holds \\ud800, an unpaired UTF-16 surrogate")
    assert not (tmp_path / "x.html").exists()
    p.write_text(json.dumps(doc).replace("PLACE", "\\ud83d\\ude00"))     # a pair is a character
    assert run(tmp_path, "checker", "replay", p).returncode == 0


def test_truncated_json_says_where(tmp_path):
    p = tmp_path / "cut.json"
    p.write_text('{"format": "kmc-trace", "model": "abc')
    line = one_line(run(tmp_path, "checker", "replay", p), "not valid JSON (Unterminated string starting at line 1")
    assert "at at" not in line


def test_spec_expand_without_an_argument_is_one_line(tmp_path):
    one_line(run(tmp_path, "spec.expand"), "the following arguments are required: trace; usage: python -m "
                                           "spec.expand TRACE", prefix="spec.expand: error: ")


def test_conform_known_must_be_a_directory(tmp_path):
    f = tmp_path / "a-trace.json"
    f.write_text("{}")
    r = cli_support.kmc("conform", "--preset", "tiny", "--known", f, "--traces-dir", tmp_path)
    cli_support.one_line_error(r, f"--known '{f}' is a file, not a directory")


@pytest.mark.parametrize("args, needle", [
    (["check", "--max-states", "-3"], "--max-states: expects a number >= 1, got -3"),
    (["check", "--max-states", "0"], "--max-states: expects a number >= 1, got 0"),
    (["check", "--max-depth", "-1"], "--max-depth: expects a number >= 0, got -1"),
    (["check", "--spark-partitions", "x"], "--spark-partitions: expects a whole number >= 1, got 'x'"),
    (["conform", "--preset", "tiny", "--depth", "-2"], "--depth: expects a number >= 1, got -2"),
    # int() took these as 10 and 3
    (["check", "--max-states", "1_0"], "--max-states: expects a whole number >= 1, got '1_0'"),
    (["check", "--max-states", "\u0663"], "--max-states: expects a whole number >= 1"),
    # a deadline of 1e309 s overflowed a float: an internal error (exit 4)
    (["check", "--time-limit", "1" + "0" * 309], "--time-limit: expects a number from 1 to 1000000000000000000"),
    (["simulate", "--time-limit", "1" + "0" * 19], "--time-limit: expects a number from 1 to"),
    # z3 takes 32 bits of milliseconds: 4294968 s wrapped round to 1 ms and gave up at once
    (["bmc", "--preset", "tiny", "--steps", "2", "--timeout", "4294968"],
     "--timeout: expects a number from 1 to 4294967, got 4294968"),
    (["prove", "--preset", "tiny", "--timeout", "99999999999"], "--timeout: expects a number from 1 to 4294967"),
    # a config value: ASCII digits only; nan passed every range
    (["check", "--set", "brokers=1_0"], "config key 'brokers' expects an integer"),
    (["check", "--set", "brokers=\u0662"], "config key 'brokers' expects an integer"),
    (["check", "--set", "reassignments=0:1,1"], "must list distinct broker ids in 0..2; write e.g. "
                                                "reassignments=\"0:1,0\""),
    # an empty path named nothing: the output was skipped without a word, or the directory was '.'
    (["check", "--report", ""], "argument --report: expects a path, got ''"),
    (["check", "--traces-dir", ""], "argument --traces-dir: expects a path, got ''"),
    (["explore", ""], "argument TRACE: expects a path, got ''"),
    # a seed is an id: any size; a count is at most 10^18, and at most a thousand digits long
    (["check", "--max-states", "1" * 5000], "--max-states: expects a whole number >= 1, got '1111"),
    (["check", "--set", "brokers=" + "1" * 5000], "config key 'brokers' expects an integer in 1..16, got '111"),
    (["mutate", "--list", "--min-score", "5_0"], "--min-score: expects a percentage from 0 to 100, got '5_0'"),
    (["explore", "--port", "8_080"], "--port: expects a whole number >= 0, got '8_080'"),
    (["replay", "traces/known/ControllerEpochFencing-zombie-86b9dc15.json", "--html", ""], "--html: expects a path"),
    (["prove", "--preset", "tiny", "--junit", ""], "--junit: expects a path"),
    (["conform", "--preset", "tiny", "--junit", ""], "--junit: expects a path"),
    (["graph", "--format", "dot", "-o", ""], "-o/--output: expects a path"),
    (["mutate", "--list", "--json", ""], "--json: expects a path"),
])
def test_bounds_say_the_bound_the_flag_has(args, needle):
    cli_support.one_line_error(cli_support.kmc(*args), needle)


def test_a_recorded_family_ref_and_its_registered_name_are_the_same_family():
    """`kmc conform --preset P` (family `kafka`) replays the saved traces recorded as
    `spec.family:FAMILY`, the entry point's target; the match is by name, nothing is
    imported for it."""
    from checker.cmdline import registered_name

    assert registered_name("spec.family:FAMILY") == "kafka"
    assert registered_name("kafka") == "kafka"
    assert registered_name("no.such.module:FAMILY") == "no.such.module:FAMILY"
    assert "no.such.module" not in sys.modules


def test_a_fifo_or_a_device_is_refused_as_input_not_read(tmp_path):
    # Reading a FIFO blocks until someone writes, and /dev/zero never ends: both once
    # hung kmc (or ran it out of memory) where bad input gets one line.
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO (named pipe)"), (Path("/dev/zero"), "a character device")):
        for args, what in ((["checker", "replay", path], "trace file"), (["checker", "conform", path], "trace file"),
                           (["checker", "check", "--config", path], "config file"),
                           (["checker", "check", *TOYS, "--invariants", path], "invariants file")):
            one_line(run(tmp_path, *args), f"{what} '{path}' is {kind}, not a regular file; give the path of ")
        one_line(run(tmp_path, "spec.expand", path), f"'{path}' is {kind}, not a regular file",
                 prefix="spec.expand: error: ")
    assert fifo.is_fifo()


def test_a_fifo_where_a_trace_would_go_is_passed_over(tmp_path):
    first = cli_support.kmc("check", *TOYS, "--preset", "broken", "--traces-dir", tmp_path / "a", "--json")
    name = Path(json.loads(first.stdout)["trace_path"]).name
    (tmp_path / "b").mkdir()
    os.mkfifo(tmp_path / "b" / name)
    r = cli_support.kmc("check", *TOYS, "--preset", "broken", "--traces-dir", tmp_path / "b", "--json", timeout=60)
    assert r.returncode == 1 and json.loads(r.stdout)["trace_path"].endswith(name.replace(".json", "-2.json"))
    assert (tmp_path / "b" / name).is_fifo()


def test_a_file_url_names_the_local_directory_in_any_case(tmp_path):
    """``file:`` is a URL scheme, so any case of it names the local directory that
    --checkpoint and --resume are checked against before Spark starts (``FILE:``
    was read as a relative path, so a run over another run's checkpoint was not
    refused); checker.spark.checkpoint.check_directory reads it the same way."""
    from checker.errors import UsageError
    from checker.inputfile import local_path
    from checker.spark.checkpoint import check_directory

    for url in (f"file://{tmp_path}", f"FILE://{tmp_path}", f"File:{tmp_path}", str(tmp_path)):
        assert local_path(url) == tmp_path, url
    assert local_path(f"file://localhost{tmp_path}") == local_path(f"FILE://LocalHost{tmp_path}") == tmp_path
    assert local_path("hdfs://nn/ck") is None
    assert local_path("file://otherhost/ck") is None
    with pytest.raises(UsageError, match="does not exist"):
        check_directory(f"FILE://{tmp_path}/missing", "--resume", True)


def test_the_reproduce_command_quotes_a_control_character_so_that_a_shell_reads_it_back(tmp_path):
    """The one-line message printed a newline in an argument as \\n inside single
    quotes, which a shell reads as a backslash and an n: another path."""
    import subprocess

    bad = tmp_path / "nl\nname.toml"
    bad.write_text("brokers = nine\n")
    line = cli_support.one_line_error(cli_support.kmc("check", "--config", bad), "not valid TOML")
    command = line.rsplit("(reproduce: ", 1)[1][:-1]
    assert "$'" in command
    echoed = subprocess.run(["bash", "-c", "printf '%s\\0' " + command.split(" ", 1)[1]], capture_output=True)
    assert echoed.stdout.split(b"\0")[:-1] == [b"check", b"--config", str(bad).encode()]


@pytest.mark.parametrize("locale", ["C", "C.UTF-8"])
def test_a_quoted_argument_reads_back_as_its_bytes_in_any_locale(locale):
    """bash's \\u escapes depend on the locale, and a file name that is not UTF-8
    reaches Python as a surrogate (\\udcff), which \\u wrote as other bytes."""
    import subprocess

    from checker.shellquote import shell_join

    names = ["nl\nname", "x\x85y", "esc\x1b[31m", "q'uote\\", "tab\there", "plain", os.fsdecode(b"r\xff.html"),
             "line\u2028sep", "$(touch x)`y`"]
    for name in names:
        out = subprocess.run(["bash", "-c", shell_join(["printf", "%s", name])], capture_output=True,
                             env=dict(os.environ, LC_ALL=locale)).stdout
        assert out == os.fsencode(name), (name, shell_join([name]))


def test_a_seed_may_be_any_size():
    """A seed is an id, not a count: a clock's nanoseconds or 2^64 - 1 is a seed."""
    r = cli_support.kmc("simulate", "--preset", "tiny", "--walks", "1", "--seed", str(2 ** 64 - 1), "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
