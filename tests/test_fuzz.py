"""Fuzzing every entry point with hostile input (Hypothesis).

Inputs are mutated from valid ones: traces (a toy's, a Kafka counterexample, an
atomic-controller trace), TOML configs, ``--set`` values, invariants files and
checkpoint directories; by truncation, flipped bytes, swapped types, deep nesting,
huge numbers, unknown keys, and by naming a module or an invariants file that
writes a marker when run.  Every entry point (``check``, ``replay``, ``conform``,
``graph``, ``prove``, ``bmc``, ``list``, ``python -m spec.expand``, ``--resume``)
runs in process, and every run must keep the property of
:mod:`tests.fuzz_support`: exit 0, 1 or 2, one stderr line for 2, no traceback, no
file outside ``traces/`` touched, nothing the input names run.

The default suite runs a small derandomised sample of each (a few seconds each);
the ``slow`` tests run many more, and CI runs those.  Inputs that once broke the
property are kept under ``tests/data/fuzz/`` and replayed by
``test_the_corpus_keeps_the_property`` in the default suite.
"""

from __future__ import annotations

import json
import os
import shutil
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import fuzz_support as fz

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "fuzz"
TOYS = ["--model", "tests.toys:FAMILY"]
BOUND = ["--max-states", "300"]

# Derandomised, so that CI is reproducible; KMC_FUZZ_RANDOM=1 explores new inputs and
# KMC_FUZZ_EXAMPLES=N sets how many each test tries (for a long hunt by hand).
_RANDOM = os.environ.get("KMC_FUZZ_RANDOM") == "1"
_MANY = int(os.environ.get("KMC_FUZZ_EXAMPLES", "0") or 0)
COMMON = dict(deadline=None, database=None, derandomize=not _RANDOM, print_blob=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much, HealthCheck.large_base_example])
FAST = settings(max_examples=_MANY or 12, **COMMON)
SLOW = settings(max_examples=_MANY or 400, **COMMON)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return fz.workdir(tmp_path_factory.mktemp("fuzz"))


@lru_cache(maxsize=1)
def seed_traces() -> dict[str, tuple[dict, list[str]]]:
    """Valid traces to mutate: ``{name: (document, extra flags replay needs)}``."""
    import tempfile
    d = fz.workdir(Path(tempfile.mkdtemp(prefix="kmc-fuzz-seed-")))
    code, _, err = fz.run(d, ["check", *TOYS, "--preset", "broken", "--quiet", "--traces-dir", "traces"])
    assert code == 1, err
    (toy,) = (d / "traces").glob("*.json")
    kafka = next((ROOT / "traces" / "known").glob("ControllerEpochFencing-zombie-*.json"))
    return {
        "toy": (json.loads(toy.read_text()), TOYS),
        "kafka": (json.loads(kafka.read_text()), []),
        "atomic": (json.loads((ROOT / "tests" / "data" / "atomic-data-hw.json").read_text()), []),
    }


# ------------------------------------------------------------------------ traces

def trace_input(data, work: Path) -> tuple[Path, list[str]]:
    name = data.draw(st.sampled_from(sorted(seed_traces())), label="seed")
    doc, flags = seed_traces()[name]
    if data.draw(st.booleans(), label="structural"):
        raw = json.dumps(fz.mutate_doc(data, doc, st)).encode()
    else:
        raw = fz.mutate_bytes(data, json.dumps(doc, indent=1).encode(), st)
    p = work / "input.json"
    p.write_bytes(raw)
    return p, flags


def trace_run(data, work: Path) -> None:
    p, flags = trace_input(data, work)
    entry = data.draw(st.sampled_from(["replay", "replay-step", "conform", "atomic"]), label="entry")
    argv = {"replay": ["replay", p, *flags],
            "replay-step": ["replay", p, *flags, "--step", "1"],
            "conform": ["conform", p, *flags, "--quiet", "--traces-dir", "traces"],
            "atomic": ["spec.expand", p, "--traces-dir", "traces"]}[entry]
    fz.check(work, argv)


@FAST
@given(data=st.data())
def test_hostile_traces(work, data):
    trace_run(data, work)


@pytest.mark.slow
@SLOW
@given(data=st.data())
def test_hostile_traces_many(work, data):
    trace_run(data, work)


# ------------------------------------------------------------------ TOML configs

SCALARS = st.one_of(st.integers(-2, 40), st.sampled_from([2**63, -(2**63) - 1, 10**30]), st.booleans(),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
KEYS = st.one_of(st.sampled_from(["brokers", "replication_factor", "partitions", "max_crashes", "max_records",
                                  "truncation", "unclean_leader_election", "atomic_controller", "preset",
                                  "model"]), st.text(max_size=10))


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v)


def config_input(data, work: Path) -> Path:
    if data.draw(st.booleans(), label="generated"):
        pairs = data.draw(st.lists(st.tuples(KEYS, SCALARS), max_size=5), label="pairs")
        section = data.draw(st.booleans(), label="section")
        lines = ['preset = "tiny"'] + (["[config]"] if section else [])
        for k, v in pairs:
            if k == "model":
                v = data.draw(st.sampled_from(["kafka", "nosuch", "", "a:b:c", ":x"]), label="model")
            lines.append(f"{json.dumps(k)} = {toml_value(v)}")
        raw = ("\n".join(lines) + "\n").encode()
    else:
        base = b'# my run\npreset = "tiny"\n[config]\nmax_crashes = 1\nunclean_leader_election = false\n'
        raw = fz.mutate_bytes(data, base, st)
    p = work / "input.toml"
    p.write_bytes(raw)
    return p


def config_run(data, work: Path) -> None:
    p = config_input(data, work)
    entry = data.draw(st.sampled_from(["check", "graph"]), label="entry")
    argv = (["check", "--config", p, *BOUND, "--quiet", "--no-deadlock", "--traces-dir", "traces"] if entry == "check"
            else ["graph", "--config", p, "--format", "dot", "--max-states", "200"])
    fz.check(work, argv)


@FAST
@given(data=st.data())
def test_hostile_configs(work, data):
    config_run(data, work)


@pytest.mark.slow
@SLOW
@given(data=st.data())
def test_hostile_configs_many(work, data):
    config_run(data, work)


# -------------------------------------------------------------------- --set values

SET_VALUES = st.one_of(st.text(max_size=12), st.integers(-5, 30).map(str),
                       st.sampled_from(["9" * 30, "9" * 5000, "1e3", "0x10", "-0", "true", "yes", "off", "", " 3",
                                        "kip320", "nan", "inf", "2.5", "None"]))
SET_KEYS = st.one_of(st.sampled_from(["brokers", "replication_factor", "partitions", "max_crashes",
                                      "max_records", "truncation", "unclean_leader_election", "max_isr_shrinks"]),
                     st.text(max_size=8))


def set_run(data, work: Path) -> None:
    sets = []
    for k, v in data.draw(st.lists(st.tuples(SET_KEYS, SET_VALUES), min_size=1, max_size=3), label="sets"):
        sets += ["--set", f"{k}={v}" if data.draw(st.booleans(), label="eq") or not k else k + v]
    entry = data.draw(st.sampled_from(["check", "graph", "prove", "bmc", "conform"]), label="entry")
    argv = {
        "check": ["check", "--preset", "tiny", *sets, *BOUND, "--quiet", "--traces-dir", "traces"],
        "graph": ["graph", "--preset", "tiny", *sets, "--format", "graphml", "--max-states", "200"],
        "prove": ["prove", "--preset", "tiny", *sets, "--invariant", "AtMostOneActiveController", "--quiet",
                  "--timeout", "10"],
        "bmc": ["bmc", "--preset", "tiny", *sets, "--steps", "2", "--quiet", "--timeout", "10",
                "--traces-dir", "traces"],
        "conform": ["conform", "--preset", "tiny", *sets, *BOUND, "--quiet", "--known", "none",
                    "--traces-dir", "traces"],
    }[entry]
    fz.check(work, argv)


@FAST
@given(data=st.data())
def test_hostile_set_values(work, data):
    set_run(data, work)


@pytest.mark.slow
@SLOW
@given(data=st.data())
def test_hostile_set_values_many(work, data):
    set_run(data, work)


# --------------------------------------------------------------- invariants files

PREDICATES = ["'yes'", "None", "1", "0", "s", "[]", "1 / 0", "s.nope", "len(s) > 0", "s == s",
              "(lambda f: f(f))(lambda f: f(f))", "all(b.alive for b in s.brokers)", "float('nan')"]


def invariants_input(data, work: Path) -> Path:
    if data.draw(st.booleans(), label="template"):
        expr = data.draw(st.sampled_from(PREDICATES), label="expr")
        kind = data.draw(st.sampled_from(["always", "sometimes"]), label="kind")
        name = data.draw(st.sampled_from(["Mine", "ZkLeaderIsRegistered", "", "Leader In Isr", "Deadlock"]),
                         label="name")
        raw = (f"from checker.model import always, sometimes\n"
               f"Mine = {kind}({name!r}, lambda s: {expr}, 'fuzzed')\n").encode()
    else:
        raw = fz.mutate_bytes(data, (ROOT / "examples" / "invariants.py").read_bytes(), st)
    p = work / "input_inv.py"
    p.write_bytes(raw)
    return p


def invariants_run(data, work: Path) -> None:
    p = invariants_input(data, work)
    fz.check(work, ["check", "--preset", "tiny", "--invariants", p, *BOUND, "--quiet", "--continue",
                    "--traces-dir", "traces"])


@FAST
@given(data=st.data())
def test_hostile_invariants_files(work, data):
    invariants_run(data, work)


@pytest.mark.slow
@SLOW
@given(data=st.data())
def test_hostile_invariants_files_many(work, data):
    invariants_run(data, work)


# ------------------------------------------------------------------- kmc list

@FAST
@given(what=st.one_of(st.sampled_from(["presets", "properties", "actions", "flags", "parameters", "models"]),
                      st.text(max_size=10)),
       model=st.sampled_from([None, "kafka", "nosuch", "", ":", "a:", ":b", "a:b:c", "checker.model:Model",
                              "tests.toys:FAMILY", "tests.toys:NOPE", "os:path", "-x"]))
def test_hostile_list_arguments(work, what, model):
    fz.check(work, ["list", what, *(["--model", model] if model is not None else [])])


# ------------------------------------------------------------ checkpoint dirs

CHECKPOINT = CORPUS / "checkpoint"


@lru_cache(maxsize=1)
def signed_checkpoint() -> Path:
    """The stored checkpoint, written before checkpoints were signed, signed with the
    session's key as its owner would (else every input would be refused as outdated)."""
    import tempfile

    from tests.spark_support import sign_level
    d = Path(tempfile.mkdtemp(prefix="kmc-fuzz-ckpt-")) / "ckpt"
    shutil.copytree(CHECKPOINT, d)
    for level in sorted(d.glob("level-*")):
        sign_level(level)
    return d


def checkpoint_input(data, work: Path) -> Path:
    """A copy of a small checkpoint (a 4x4 toy grid, 2 partitions, its two newest
    levels) with one file damaged."""
    d = work / "ckpt"
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(signed_checkpoint(), d)
    files = sorted(p for p in d.rglob("*") if p.is_file())
    f = files[data.draw(st.integers(0, len(files) - 1), label="file")]
    op = data.draw(st.sampled_from(["bytes", "delete", "meta"]), label="ckpt-op")
    if op == "delete":
        f.unlink()
    elif op == "meta" and f.name == "part-00000" and f.parent.name == "meta":
        f.write_text(json.dumps(fz.mutate_doc(data, json.loads(f.read_text()), st)))
    else:
        f.write_bytes(fz.mutate_bytes(data, f.read_bytes(), st))
    return d


def checkpoint_preflight(data, work: Path) -> None:
    """Without Spark: the integrity check that runs before Spark starts either
    passes or refuses the directory in one line naming a level and a file."""
    from checker.errors import UsageError
    from checker.spark.checkpoint import preflight
    d = checkpoint_input(data, work)
    try:
        preflight(str(d))
    except UsageError as e:
        msg = str(e)
        assert "\n" not in msg and "Traceback" not in msg, msg
        assert "level " in msg and str(d) in msg, msg


@FAST
@given(data=st.data())
def test_damaged_checkpoints_are_refused_before_spark_starts(work, data):
    checkpoint_preflight(data, work)


@pytest.mark.slow
@pytest.mark.spark
@settings(max_examples=_MANY or 12, **COMMON)
@given(data=st.data())
def test_damaged_checkpoints_resume_in_one_line(spark_context, work, data):
    """``kmc check --resume`` itself, on Spark: a damaged checkpoint is refused in one
    line, or (a harmless change) the run resumes to the right answer."""
    d = checkpoint_input(data, work)
    code, out, _ = fz.check(work, ["check", *TOYS, "--set", "toy=grid", "--set", "n=3", "--engine", "spark",
                                   "--spark-partitions", "2", "--resume", d, "--traces-dir", "traces"],
                            ignore=("ckpt",))
    assert code == 2 or "distinct states: 16 " in out, out


@pytest.fixture(scope="module")
def spark_context():
    from tests.spark_support import spark_context as start
    sc = start("local[2]", 2)
    try:
        yield sc
    finally:
        sc.stop()


# ------------------------------------------------------------------ the corpus

def corpus_cases() -> list[tuple[str, list]]:
    """``(id, argv)`` for every kept input (the file's directory says how to run it)."""
    cases = []
    for p in sorted(CORPUS.glob("traces/*.json")):
        extra = TOYS if p.name.startswith("toy-") else []
        cases += [(f"replay/{p.name}", ["replay", p, *extra]),
                  (f"conform/{p.name}", ["conform", p, *extra, "--quiet", "--traces-dir", "traces"]),
                  (f"atomic/{p.name}", ["spec.expand", p, "--traces-dir", "traces"])]
    for p in sorted(CORPUS.glob("configs/*.toml")):
        cases.append((f"config/{p.name}", ["check", "--config", p, *BOUND, "--quiet", "--traces-dir", "traces"]))
    for p in sorted(CORPUS.glob("invariants/*.py")):
        cases.append((f"invariants/{p.name}", ["check", "--preset", "tiny", "--invariants", p, *BOUND, "--quiet",
                                               "--traces-dir", "traces"]))
    for p in sorted(CORPUS.glob("argv/*.json")):
        cases.append((f"argv/{p.name}", json.loads(p.read_text())))
    return cases


CASES = corpus_cases()


@pytest.mark.parametrize("argv", [a for _, a in CASES], ids=[i for i, _ in CASES])
def test_the_corpus_keeps_the_property(work, argv):
    fz.check(work, argv)
