"""Running a corpus against mutants: each one in a fresh process, in a copy of the
project that differs from it in one expression, in parallel, with a timeout.

A mutant never touches the project's own files.  Each runs in a copy of the
project root (without ``.git``, ``.venv`` and caches, about 2 MB) in which one
module is the mutant; the child process starts in that copy with it first on
``PYTHONPATH``, so that the copy's packages shadow the installed ones, for the
child and for every process it starts in turn (a test that runs ``kmc``).

Two kinds of corpus (``checker.mutation``): a *conformance* corpus, whose traces
are computed once here from the unmutated model and replayed in the child by
:func:`child_main` (``python -m checker.mutation_run JOB``), stopping at the
first divergence; or a *command* (a test suite), whose exit status is the verdict.
Before any mutant, the corpus runs on an unmutated copy: it must pass there, and
its time sets the timeout (``4 x`` it plus 30 s unless given).

Verdicts: ``killed`` (the corpus failed: a divergence, a failing test, a crash),
``timeout`` (the child did not finish in time: counted as detected, the corpus
noticed the mutant by not finishing), ``survived``, ``equivalent`` (listed in the
family's file of equivalent mutants: not run, not scored), ``error`` (the child
could not run the corpus at all: not scored, reported).

The score is detected / (killed + timeout + survived).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from checker.linecover import LineRecorder
from checker.mutation import CommandCorpus, ConformCorpus, Mutant

KILLED, TIMEOUT, SURVIVED, EQUIVALENT, ERROR = "killed", "timeout", "survived", "equivalent", "error"
DETECTED = (KILLED, TIMEOUT)
UNREACHED = "never executed by the corpus"
IGNORE = shutil.ignore_patterns(".git", ".venv", "venv", "__pycache__", "*.egg-info", "build", ".pytest_cache",
                                ".hypothesis", ".kmc-*", "spark-warehouse", "*.pyc")


@dataclass
class Outcome:
    """What running the corpus against one mutant gave."""

    mutant: Mutant
    verdict: str
    seconds: float = 0.0
    where: str = ""            # killed: the corpus run and trace (or test) that caught it
    detail: str = ""           # killed: the first divergence (or failure); error: why
    reason: str = ""           # equivalent: why

    def to_json(self) -> dict:
        return {"mutant": asdict(self.mutant), "verdict": self.verdict, "seconds": round(self.seconds, 2),
                "where": self.where, "detail": self.detail, "reason": self.reason}


# ------------------------------------------------------------------ the corpus, prepared once

def prepare_conform(family: Any, family_ref: str, package: str, corpus: ConformCorpus, root: Path,
                    resolve: Callable[[Any, str | None, dict], dict],
                    note: Callable[[str], None] = lambda s: None) -> dict:
    """The job a child replays: per run, the configuration, the traces (covering set of
    the preset's graph, or the saved traces) and the probing vocabulary.  Computed
    from the unmutated model, once for all mutants."""
    from checker.conform import covering_set
    from checker.graph import explore
    from checker.trace import action_to_json, load_trace

    runs = []
    for run in corpus.runs:
        if run.known:
            for path in sorted((root / run.known).glob("*.json")):
                trace = load_trace(path)
                if trace.family_ref not in (family_ref, getattr(family, "name", None)):
                    continue
                config = resolve(family, None, trace.config)
                model = family.build(config)
                inits = list(model.init_states())
                from checker.fingerprint import fingerprint, format_fingerprint
                want = trace.steps[0].fingerprint
                init = next((i for i, s in enumerate(inits)
                             if format_fingerprint(fingerprint(model, s)).lower() == want), 0)
                probe = [a for a in json.loads(path.read_text(encoding="utf-8")).get("probe", [])]
                runs.append({"label": f"{run.label}: {path.name}", "config": config, "probe_path": run.probe,
                             "settle": run.settle,
                             "vocabulary": probe, "traces": [[init, [action_to_json(s.action)
                                                                     for s in trace.steps[1:]]]],
                             "walks": 0, "depth": run.depth})
            continue
        config = resolve(family, run.preset, dict(run.overrides))
        model = family.build(config)
        traces: list = []
        vocabulary: list = []
        if run.cover:
            t0 = time.monotonic()
            graph = explore(model)
            inits = list(model.init_states())
            cover = covering_set(graph)
            traces = [[_index(inits, init), [action_to_json(a) for a in acts]] for init, acts in cover.traces]
            if run.probe:
                vocabulary = [action_to_json(a) for a in dict.fromkeys(a for _, a, _ in graph.edges)]
            note(f"{run.label}: {len(graph.states)} states, {len(cover.paths)} traces, {cover.steps} steps "
                 f"({time.monotonic() - t0:.1f} s)")
        runs.append({"label": run.label, "config": config, "probe_path": False, "settle": run.settle,
                     "vocabulary": vocabulary,
                     "traces": traces, "walks": run.walks, "depth": run.depth})
    return {"kind": "conform", "family": family_ref, "package": package, "runs": runs}


def _index(inits: list, state: Any) -> int:
    for i, s in enumerate(inits):
        if s == state:
            return i
    return 0


def prepare_command(corpus: CommandCorpus) -> dict:
    return {"kind": "command", "argv": [sys.executable if a == "{python}" else a for a in corpus.argv]}


# ------------------------------------------------------------------------------ the child

def child_main(job_path: str, selection: str | None = None, coverage: str | None = None) -> int:
    """Replay a conformance job against the implementation importable here; print one
    JSON line: ``{"verdict": "killed"|"survived", "where": ..., "detail": ...}``.

    ``selection``: a JSON file ``[[run, trace], ...]`` (trace -1: the run's random
    walks), the only units replayed.  ``coverage``: record, per unit, the lines of the
    implementation's package that ran (and those that ran while it was imported), and
    write them to that file."""
    from checker.conform import Harness, load_implementation, random_walks
    from checker.imports import import_ref
    from checker.trace import action_from_json

    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    only = None if selection is None else {tuple(u) for u in json.loads(Path(selection).read_text())}
    tracer = LineRecorder(str(Path.cwd() / job["package"])) if coverage else None
    if tracer:
        tracer.install()    # the package's modules get line markers when they are imported
    modname, _, attr = job["family"].partition(":")
    try:
        family = import_ref(modname, attr, what=f"model family {job['family']!r}", fix="fix the family")
        if tracer:
            tracer.start("import")
        impl = load_implementation(family, job["family"])
        if tracer:
            tracer.stop()
    except Exception as e:  # noqa: BLE001 - a mutant that breaks importing is caught by the corpus
        return _say(KILLED, "importing the implementation", f"{type(e).__name__}: {e}")
    for r, run in enumerate(job["runs"]):
        model = family.build(run["config"])
        inits = list(model.init_states())
        harness = Harness(model, impl, run["config"], vocabulary=[action_from_json(a) for a in run["vocabulary"]],
                          probe_path=run["probe_path"], settle=run.get("settle", False))
        n = len(run["traces"])
        for k, (init, acts) in enumerate(run["traces"]):
            if only is not None and (r, k) not in only:
                continue
            actions = [action_from_json(a) for a in acts]
            if tracer:
                tracer.start(f"{r} {k}")
            try:
                d = harness.run(actions, inits[init], source=run["label"])
            except Exception as e:  # noqa: BLE001
                return _say(KILLED, run["label"], f"the harness raised {type(e).__name__}: {e}")
            finally:
                if tracer:
                    tracer.stop()
            if d is not None:
                where = run["label"] if n == 1 else f"{run['label']}, trace {k + 1} of {n}"
                return _say(KILLED, where, d.summary)
        if run["walks"] and (only is None or (r, -1) in only):
            if tracer:
                tracer.start(f"{r} -1")
            try:
                d = random_walks(harness, run["walks"], run["depth"])
            finally:
                if tracer:
                    tracer.stop()
            if d is not None:
                return _say(KILLED, f"{run['label']}, random walks", d.summary)
    if tracer:
        Path(coverage).write_text(json.dumps(tracer.units), encoding="utf-8")
    return _say(SURVIVED, "", "")


def _say(verdict: str, where: str, detail: str) -> int:
    print(json.dumps({"verdict": verdict, "where": where, "detail": detail}), flush=True)
    return 0


# ------------------------------------------------------------------------------ one mutant

# The children running now, so that a run that is stopped (SIGTERM, Ctrl-C) can kill
# them: each starts in its own session, out of reach of the signals sent to kmc's.
_CHILDREN: set = set()
_CHILDREN_LOCK = threading.Lock()
_STOPPING = threading.Event()


def stop_children() -> None:
    """Kill every running child's process group and start no new one (the run is
    being stopped); each ``run_one`` then removes its own copy of the project."""
    with _CHILDREN_LOCK:
        _STOPPING.set()
        procs = list(_CHILDREN)
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def children_stopped() -> None:
    """The stopped run is cleaned up: children may start again (a later run in this process)."""
    _STOPPING.clear()


def _start(argv: list, cwd: Path, env: dict) -> subprocess.Popen | None:
    with _CHILDREN_LOCK:
        if _STOPPING.is_set():
            return None
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        _CHILDREN.add(proc)
        return proc


def run_one(root: str, job: dict, job_path: str, mutant: Mutant | None, timeout: float, scratch: str,
            selection: list | None = None, coverage: bool = False) -> dict:
    """Run the corpus against ``mutant`` (None: the unmutated code) in a fresh copy of
    ``root`` under ``scratch``; ``{"verdict", "seconds", "where", "detail"}``.  Also
    what a Spark task runs (one mutant per task)."""
    name = mutant.id if mutant else "unmutated"
    work = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=scratch))
    copy = work / "project"
    t0 = time.monotonic()
    try:
        shutil.copytree(root, copy, ignore=IGNORE, symlinks=True)
        if mutant is not None:
            target = copy / mutant.module
            source = (Path(root) / mutant.module).read_text(encoding="utf-8")
            target.unlink()
            target.write_text(mutant.apply(source), encoding="utf-8")
        env = dict(os.environ, PYTHONPATH=str(copy) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   PYTHONDONTWRITEBYTECODE="1", KMC_MUTANT=name)
        env.pop("PYTHONSAFEPATH", None)
        if job["kind"] == "conform":
            argv = [sys.executable, "-m", "checker.mutation_run", job_path]
            if selection is not None:
                (work / "selection.json").write_text(json.dumps(selection), encoding="utf-8")
                argv += ["--only", str(work / "selection.json")]
            if coverage:
                argv += ["--coverage", str(work / "coverage.json")]
        else:
            argv = list(job["argv"])
        proc = _start(argv, copy, env)
        if proc is None:
            return {"verdict": ERROR, "seconds": 0.0, "where": "", "detail": "the run was stopped"}
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            return {"verdict": TIMEOUT, "seconds": time.monotonic() - t0, "where": "",
                    "detail": f"no verdict within {timeout:.0f} s"}
        except BaseException:
            _kill(proc)                 # stopped (SIGTERM, Ctrl-C) while the child runs
            raise
        finally:
            with _CHILDREN_LOCK:
                _CHILDREN.discard(proc)
        seconds = time.monotonic() - t0
        if job["kind"] == "conform":
            verdict = {**_child_verdict(out, proc.returncode), "seconds": seconds}
            if coverage and (work / "coverage.json").exists():
                verdict["coverage"] = json.loads((work / "coverage.json").read_text(encoding="utf-8"))
            return verdict
        return {**_command_verdict(out, proc.returncode), "seconds": seconds}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def _child_verdict(out: str, code: int) -> dict:
    for line in reversed(out.splitlines()):
        if line.startswith("{") and '"verdict"' in line:
            try:
                return json.loads(line)
            except ValueError:
                break
    tail = _last_lines(out)
    # The child died without a verdict (a mutant that exits, or breaks the interpreter):
    # the corpus did not pass.
    return {"verdict": KILLED, "where": "the replay process", "detail": f"exit status {code}: {tail}"}


def _command_verdict(out: str, code: int) -> dict:
    if code == 0:
        return {"verdict": SURVIVED, "where": "", "detail": ""}
    failed = [ln for ln in out.splitlines() if ln.startswith(("FAILED ", "ERROR "))]
    if code in (1, 2) or failed:
        first = failed[0] if failed else _last_lines(out)
        test, _, why = first.partition(" - ")
        return {"verdict": KILLED, "where": test.split(" ", 1)[-1] if failed else "the test run",
                "detail": why.strip() or first}
    return {"verdict": ERROR, "where": "", "detail": f"exit status {code}: {_last_lines(out)}"}


def _last_lines(out: str, n: int = 3) -> str:
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    text = " / ".join(lines[-n:])
    return text if len(text) <= 400 else text[:397] + "..."


# ------------------------------------------------------------------------------ many mutants

@dataclass
class Run:
    """A mutation run: the mutants, the prepared corpus and where to work."""

    root: Path
    job: dict
    mutants: list
    equivalents: dict = field(default_factory=dict)
    workers: int = 2
    timeout: float | None = None
    baseline: float = 0.0
    outcomes: list = field(default_factory=list)


def baseline(run: Run, scratch: str, job_path: str) -> dict:
    """The corpus on the unmutated code: it must pass.  For a conformance corpus it also
    records which lines of the package each unit (trace, or run's walks) executes.

    With ``run.workers`` > 1 a conformance corpus is cut into that many stretches of
    consecutive units, of about equal steps, replayed at once, each in its own child:
    the baseline is the one step before the mutants that would otherwise leave all
    but one worker idle.  ``seconds`` is then the stretches' sum (the corpus's time in
    one process, which the mutants' timeouts scale), ``wall`` the time it took.  A
    unit records the same lines as in one process, or more (it may probe a state
    that a unit of an earlier stretch probed first), so no mutant replays fewer
    units for it; a failing stretch reports the failure of the earliest one."""
    timeout = run.timeout or 24 * 3600
    conform = run.job["kind"] == "conform"
    stretches = _stretches(run.job, run.workers) if conform else []
    if len(stretches) <= 1:
        out = run_one(str(run.root), run.job, job_path, None, timeout, scratch, coverage=conform)
        return {**out, "wall": out["seconds"], "processes": 1}
    t0 = time.monotonic()
    pool = ThreadPoolExecutor(max_workers=len(stretches))
    try:
        parts = list(pool.map(lambda sel: run_one(str(run.root), run.job, job_path, None, timeout, scratch, sel,
                                                  coverage=True), stretches))
    except BaseException:
        stop_children()     # stopped: as run_all does
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    wall = time.monotonic() - t0
    seconds = sum(p["seconds"] for p in parts)
    failed = next((p for p in parts if p["verdict"] != SURVIVED), None)
    if failed is not None:
        return {**failed, "seconds": seconds, "wall": wall, "processes": len(parts)}
    out = {"verdict": SURVIVED, "seconds": seconds, "wall": wall, "processes": len(parts), "where": "",
           "detail": ""}
    if all("coverage" in p for p in parts):
        coverage: dict[str, dict[str, list[int]]] = {}
        imported: dict[str, set[int]] = {}
        for p in parts:
            for unit, files in p["coverage"].items():
                if unit == "import":    # every child imports the package
                    for f, lines in files.items():
                        imported.setdefault(f, set()).update(lines)
                else:
                    coverage[unit] = files
        coverage["import"] = {f: sorted(v) for f, v in sorted(imported.items())}
        out["coverage"] = coverage
    return out


def _weights(job: dict) -> dict[str, int]:
    """Each unit of a conformance job (``"run trace"``, ``"run -1"`` for a run's random
    walks) and the steps it replays, in the corpus's order."""
    weight: dict[str, int] = {}
    for r, rn in enumerate(job["runs"]):
        for k, (_init, acts) in enumerate(rn["traces"]):
            weight[f"{r} {k}"] = len(acts) + 1
        if rn["walks"]:
            weight[f"{r} -1"] = rn["walks"] * rn["depth"]
    return weight


def _stretches(job: dict, n: int) -> list[list[list[int]]]:
    """The units of ``job`` cut into at most ``n`` stretches of consecutive units, of
    about equal steps (a ``--only`` selection each)."""
    weight = _weights(job)
    total = sum(weight.values())
    out: list[list[list[int]]] = [[]]
    done = 0
    for unit, w in weight.items():
        if out[-1] and len(out) < n and done + w / 2 > total * len(out) / n:     # its middle is past the cut
            out.append([])
        out[-1].append([int(x) for x in unit.split()])
        done += w
    return [sel for sel in out if sel]


def plan(run: Run, coverage: dict | None) -> dict[str, tuple[list | None, float]]:
    """Per mutant, ``(units, timeout)``: the corpus units that execute one of its lines
    (None: all of them, because its lines run when the package is imported; [] none:
    the mutant cannot change what the corpus sees), and a timeout in proportion.

    Why it is sound: a unit replays on a fresh implementation, and a unit that never
    executes the mutated lines runs exactly as it did on the unmutated code, so it
    cannot tell the mutant apart.  (A selected unit may probe states that an unselected
    earlier one probed in the full run: that can only find more.)"""
    base = float(run.baseline or 1.0)
    out: dict[str, tuple[list | None, float]] = {}
    if coverage is None:
        for m in run.mutants:
            out[m.id] = (None, float(run.timeout or 4 * base + 30))
        return out
    weight = _weights(run.job)
    total = max(1, sum(weight.values()))
    imported = coverage.get("import", {})
    for m in run.mutants:
        span = set(range(m.line, m.end_line + 1))
        if span & set(imported.get(m.module, ())):
            out[m.id] = (None, float(run.timeout or 4 * base + 30))
            continue
        units = [u for u, lines in coverage.items() if u != "import" and span & set(lines.get(m.module, ()))]
        share = sum(weight.get(u, 1) for u in units) / total
        sel = [[int(x) for x in u.split()] for u in units]
        sel.sort()
        out[m.id] = (sel, float(run.timeout or 4 * base * share + 30))
    return out


def run_all(run: Run, scratch: str, job_path: str, progress: Callable[[list], None],
            engine: str = "local", spark_master: str | None = None, coverage: dict | None = None) -> list[Outcome]:
    """Every mutant of ``run`` (the equivalent ones are not run), ``run.workers`` at a
    time; outcomes in the mutants' order whatever order they finish in.  With the
    corpus's ``coverage`` (see :func:`plan`) each mutant replays only the units that
    reach it, and one that no unit reaches survives without running."""
    todo = [m for m in run.mutants if m.id not in run.equivalents]
    plans = plan(run, coverage)
    results: dict[str, dict] = {}
    unreached = [m for m in todo if plans[m.id][0] == []]
    for m in unreached:
        results[m.id] = {"verdict": SURVIVED, "seconds": 0.0, "where": UNREACHED, "detail": ""}
    todo = [m for m in todo if plans[m.id][0] != []]
    if engine == "spark":
        results.update(_run_spark(run, todo, plans, scratch, job_path, spark_master))
        progress(list(results.values()))
    else:
        pool = ThreadPoolExecutor(max_workers=max(1, run.workers))
        try:
            futures = {pool.submit(run_one, str(run.root), run.job, job_path, m, plans[m.id][1], scratch,
                                   plans[m.id][0]): m for m in todo}
            done: list = list(results.values())
            for f in _as_completed(futures):
                m = futures[f]
                results[m.id] = f.result()
                done.append(results[m.id])
                progress(done)
        except BaseException:
            # Stopped: kill the running children (their threads then remove their
            # copies of the project) and start no other.
            stop_children()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
    out = []
    for m in run.mutants:
        if m.id in run.equivalents:
            out.append(Outcome(m, EQUIVALENT, reason=run.equivalents[m.id]))
        else:
            r = results[m.id]
            out.append(Outcome(m, r["verdict"], r["seconds"], r.get("where", ""), r.get("detail", "")))
    run.outcomes = out
    return out


def _as_completed(futures: dict):
    from concurrent.futures import as_completed
    return as_completed(futures)


def _run_spark(run: Run, todo: list, plans: dict, scratch: str, job_path: str, master: str | None) -> dict:
    """One Spark task per mutant: the task copies the project and starts the child on
    its executor (the project root and scratch directory must be on a file system
    the executors share; in local mode they are this machine's)."""
    from checker.spark.session import get_context

    sc, created = get_context(master or f"local[{max(1, run.workers)}]")
    root, job = str(run.root), run.job
    tasks = [(m.id, m, plans[m.id]) for m in todo]
    try:
        rdd = sc.parallelize(tasks, max(1, len(tasks)))
        pairs = rdd.map(lambda t: (t[0], run_one(root, job, job_path, t[1], t[2][1], scratch, t[2][0]))).collect()
    finally:
        if created:
            sc.stop()
    return dict(pairs)


# ------------------------------------------------------------------------------ the report

def tally(outcomes: Sequence[Outcome], key: Callable[[Outcome], str]) -> list[tuple]:
    """Rows ``(key, mutants, equivalent, killed, timeout, survived, error, score)``."""
    rows: dict[str, list[int]] = {}
    for o in outcomes:
        r = rows.setdefault(key(o), [0, 0, 0, 0, 0, 0])
        r[0] += 1
        r[1 + [EQUIVALENT, KILLED, TIMEOUT, SURVIVED, ERROR].index(o.verdict)] += 1
    return [(k, *v, _score(v[2] + v[3], v[2] + v[3] + v[4])) for k, v in sorted(rows.items())]


def _score(detected: int, scored: int) -> float | None:
    return None if scored == 0 else 100.0 * detected / scored


def score(outcomes: Sequence[Outcome]) -> tuple[int, int, float | None]:
    """``(detected, scored, percent)`` over the non-equivalent mutants that ran."""
    detected = sum(o.verdict in DETECTED for o in outcomes)
    scored = detected + sum(o.verdict == SURVIVED for o in outcomes)
    return detected, scored, _score(detected, scored)


def table(title: str, rows: list[tuple]) -> list[str]:
    head = (title, "mutants", "equiv", "killed", "timeout", "survived", "error", "score")
    body = [(str(k), *(str(x) for x in r[:6]), "-" if r[6] is None else f"{r[6]:.1f}%") for k, *r in rows]
    widths = [max(len(str(row[i])) for row in [head, *body]) for i in range(len(head))]
    fmt = lambda row: "  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                                       for i, (c, w) in enumerate(zip(row, widths)))
    return [fmt(head), *(fmt(r) for r in body)]


def report(outcomes: Sequence[Outcome], root: Path, *, diffs: bool = True) -> list[str]:
    """The tables per module and per operator, the score, and every mutant by verdict:
    survivors with their diffs, killed ones with the first divergence."""
    lines = ["by module:", *table("module", tally(outcomes, lambda o: o.mutant.module)), "",
             "by operator:", *table("operator", tally(outcomes, lambda o: o.mutant.operator)), ""]
    sources: dict[str, str] = {}

    def src(m: Mutant) -> str:
        if m.module not in sources:
            sources[m.module] = (root / m.module).read_text(encoding="utf-8")
        return sources[m.module]

    groups = {v: [o for o in outcomes if o.verdict == v] for v in (SURVIVED, ERROR, TIMEOUT, KILLED, EQUIVALENT)}
    if groups[SURVIVED]:
        lines.append(f"survived ({len(groups[SURVIVED])}): no run of the corpus told these from the original")
        for o in groups[SURVIVED]:
            lines.append(f"  {o.mutant.label}" + (f"  [{UNREACHED}]" if o.where == UNREACHED else ""))
            if diffs:
                lines.extend("      " + d for d in o.mutant.diff(src(o.mutant)).splitlines()[2:])
        lines.append("")
    if groups[ERROR]:
        lines.append(f"errors ({len(groups[ERROR])}): the corpus could not run (not scored)")
        lines.extend(f"  {o.mutant.label}\n      {o.detail}" for o in groups[ERROR])
        lines.append("")
    if groups[TIMEOUT]:
        lines.append(f"timed out ({len(groups[TIMEOUT])}): counted as detected")
        lines.extend(f"  {o.mutant.label}: {o.detail}" for o in groups[TIMEOUT])
        lines.append("")
    if groups[KILLED]:
        lines.append(f"killed ({len(groups[KILLED])}): where the corpus first told them apart")
        for o in groups[KILLED]:
            lines.append(f"  {o.mutant.label}")
            lines.append(f"      {o.where}: {o.detail}" if o.where else f"      {o.detail}")
        lines.append("")
    if groups[EQUIVALENT]:
        lines.append(f"equivalent ({len(groups[EQUIVALENT])}): not run, not scored")
        lines.extend(f"  {o.mutant.label}\n      {o.reason}" for o in groups[EQUIVALENT])
        lines.append("")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    opts = dict(zip(args[1::2], args[2::2]))
    if not args or len(args) % 2 != 1 or set(opts) - {"--only", "--coverage"}:
        print("usage: python -m checker.mutation_run JOB.json [--only UNITS.json] [--coverage OUT.json] "
              "(kmc mutate starts it)", file=sys.stderr)
        return 2
    return child_main(args[0], opts.get("--only"), opts.get("--coverage"))


if __name__ == "__main__":
    sys.exit(main())
