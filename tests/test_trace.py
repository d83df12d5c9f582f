"""checker.trace: writing, loading, replaying and diffing JSON traces."""

from __future__ import annotations

import json
from typing import Any, Mapping

import pytest

from checker.bfs import check
from checker.config import resolve
from checker.errors import UsageError
from checker.model import Action, Model, ModelFamily, Parameter, Preset, action, always
from checker.result import VIOLATED
from checker.replay import replay
from checker.statediff import ABSENT, diff, flatten
from checker.staterender import render_change, render_changes, render_state, show_value
from checker.trace import FORMAT_VERSION, load_trace, refuse_trace_names, trace_clash, write_trace
from tests.toys import FAMILY


class Moves(Model):
    """A token on a line of ``n`` cells; actions carry a tuple argument."""

    name, version = "moves", "1"

    def __init__(self, n: int, bad: int):
        self.n, self.bad = n, bad

    def init_states(self):
        return [(0, ())]

    def actions(self, s):
        pos, _ = s
        return [action("Move", span=(pos, pos + 1), note=None)] if pos < self.n else []

    def next_state(self, s, a):
        pos, hist = s
        return (a.get("span")[1], hist + (pos,))

    def is_terminal(self, s):
        return True

    def properties(self):
        return [always("NotBad", lambda s: s[0] != self.bad, "the token never reaches the bad cell")]

    def describe(self, s):
        return {"pos": s[0], "hist": list(s[1]), "meta": {"n": self.n}}


class MovesFamily(ModelFamily):
    name, version = "moves", "1"
    parameters = {"n": Parameter("n", 4, "cells", 1, 10), "bad": Parameter("bad", 3, "bad cell", 0, 20)}
    presets = {"default": Preset("default", "n=4, bad=3")}

    def build(self, config: Mapping[str, Any]) -> Model:
        return Moves(config["n"], config["bad"])


MOVES = MovesFamily()
FAMILIES = {"moves": MOVES, "toys": FAMILY}


def resolver(ref: str):
    return FAMILIES[ref]


def violated(family, preset, overrides=None, **kw):
    cfg = resolve(family, preset, overrides or {})
    model = family.build(cfg)
    result = check(model, **kw)
    assert result.verdict == VIOLATED
    return model, cfg, result.violations[0]


def save(tmp_path, family_ref="moves", preset="default", overrides=None, command="kmc check test", **kw):
    family = FAMILIES[family_ref]
    model, cfg, v = violated(family, preset, overrides)
    return write_trace(tmp_path, family_ref=family_ref, model=model, config=cfg, preset=preset,
                       violation=v, command=command, **kw)


# ---------------------------------------------------------------------- diff


def test_flatten_and_diff():
    before = {"zk": {"partition": [{"leader": 1, "isr": (1, 2)}]}, "controller": 0, "empty": []}
    after = {"zk": {"partition": [{"leader": 2, "isr": (1,)}]}, "controller": 0, "empty": [], "new": True}
    assert flatten(before) == {"zk.partition[0].leader": 1, "zk.partition[0].isr[0]": 1,
                               "zk.partition[0].isr[1]": 2, "controller": 0, "empty": []}
    assert diff(before, after) == [("zk.partition[0].leader", 1, 2), ("zk.partition[0].isr[1]", 2, ABSENT),
                                   ("new", ABSENT, True)]
    assert diff(after, after) == []
    assert diff({"a": 1}, {"a": True}) == [("a", 1, True)]  # True == 1, but it is a change
    assert render_changes(diff(before, after))[0] == "  zk.partition[0].leader: 1 -> 2"
    assert render_changes([]) == ["  (no change)"]
    # A value that becomes a container (and back) is one change, shown inline.
    grown = diff({"p": None, "z": 1}, {"p": {"leader": 0, "isr": [0]}, "z": 1})
    assert grown == [("p", None, {"leader": 0, "isr": [0]})]
    assert render_changes(grown) == ["  p: None -> {leader: 0, isr: [0]}"]
    assert diff({"p": {"leader": 0}}, {"p": None}) == [("p", {"leader": 0}, None)]
    assert render_changes(diff({"p": {"leader": 0}}, {"p": None})) == ["  p: {leader: 0} -> None"]
    # New keys are placed where they belong.
    assert [k for k, _, _ in diff({"a": 1, "c": 1}, {"a": 2, "b": 1, "c": 2})] == ["a", "b", "c"]


def test_diff_aligns_lists():
    # One element leaving a sorted list is that element removed, not a shift of the rest.
    assert diff({"isr": [0, 1, 2]}, {"isr": [0, 2]}) == [("isr[1]", 1, ABSENT)]
    assert diff({"isr": [0, 2]}, {"isr": [0, 1, 2]}) == [("isr[1]", ABSENT, 1)]
    # Elements replaced in place are still compared field by field.
    assert diff({"p": [{"leader": 0, "epoch": 1}]}, {"p": [{"leader": 1, "epoch": 1}]}) == [("p[0].leader", 0, 1)]
    # A container appearing under a new key is one change, not one per element.
    assert diff({"b": {}}, {"b": {"ctx": {"epoch": 1, "live": [0]}}}) == [("b.ctx", ABSENT, {"epoch": 1, "live": [0]})]
    assert diff({"x": (1, 2)}, {"x": [1, 2]}) == []  # a tuple and its JSON list are the same value


def test_show_value_is_readable_and_unambiguous():
    assert show_value("OnlinePartition") == "OnlinePartition" and show_value("[0, 2]") == "[0, 2]"
    # Strings that would read as another value keep their quotes.
    for s in ("", "None", "True", "3", "-1", "0.5", " x", "a\nb", "'q'"):
        assert show_value(s) == repr(s), s
    assert show_value(None) == "None" and show_value(False) == "False" and show_value(ABSENT) == "<absent>"
    assert show_value({"leader": 0, "isr": (0, 1), "s": "x"}) == "{leader: 0, isr: [0, 1], s: x}"
    assert show_value([]) == "[]" and show_value({}) == "{}"


def test_render_change_wraps_a_new_container_between_elements():
    new = {"epoch": 1, "live": "[0, 1]", "partition": {"0": None, "1": None},
           "replica_state": {"0.0": "OnlineReplica", "0.1": "OnlineReplica"}}
    lines = render_change("broker.0.controller", ABSENT, new, width_=64)
    assert lines == ["  broker.0.controller: <absent> -> {epoch: 1, live: [0, 1],",
                     "      partition: {0: None, 1: None},",
                     "      replica_state: {0.0: OnlineReplica, 0.1: OnlineReplica}}"]
    assert " ".join(x.strip() for x in lines).endswith(show_value(new))
    # The old side of a container that goes away is elided when long.
    assert render_change("c", new, ABSENT) == ["  c: {...} -> <absent>"]
    assert render_change("p", {"leader": 0}, None) == ["  p: {leader: 0} -> None"]


def test_render_state_groups_records():
    view = {"zk": {"controller": -1, "epoch": 0, "brokers": "[0, 1]", "partition": {"0": None}},
            "broker": {"0": {"alive": True, "partition": {"0": None}, "in_flight": {}},
                       "1": {"alive": False, "partition": {"0": None}, "in_flight": {}}},
            "budget": {f"fault_{i}": i for i in range(8)},
            "round": 3}
    lines = render_state(view, width_=72)
    assert lines[0] == "  zk: controller=-1  epoch=0  brokers=[0, 1]  partition.0=None"
    assert lines[1] == "  broker.0: alive=True  partition.0=None  in_flight={}"
    assert lines[2] == "  broker.1: alive=False  partition.0=None  in_flight={}"
    assert lines[3].startswith("  budget: fault_0=0  fault_1=1") and lines[4].startswith("      fault_")
    assert all(len(line) <= 72 for line in lines)
    assert lines[-1] == "  round: 3"
    # A small state stays one field per line.
    assert render_state({"small": 0, "big": 5}) == ["  small: 0", "  big: 5"]


# ----------------------------------------------------------------- write/load


def test_write_and_load_roundtrip(tmp_path):
    path = save(tmp_path / "traces")
    assert path.parent == tmp_path / "traces" and path.name.startswith("NotBad-default-")
    doc = json.loads(path.read_text())
    assert doc["format"] == "kmc-trace" and doc["format_version"] == FORMAT_VERSION
    assert doc["model"] == {"name": "moves", "version": "1", "family": "moves"}
    assert doc["config"] == {"n": 4, "bad": 3} and doc["preset"] == "default"
    assert doc["property"]["name"] == "NotBad" and doc["property"]["kind"] == "always"
    assert doc["property"]["rationale"] == "the token never reaches the bad cell"
    assert doc["created_by"] == "kmc check test" and doc["engine"] == "local"
    assert doc["steps"][0]["action"] is None and doc["steps"][0]["index"] == 0
    assert doc["steps"][1]["action"] == {"name": "Move", "args": {"span": [0, 1], "note": None}}
    assert doc["steps"][-1]["fingerprint"].startswith("0x") and len(doc["steps"][-1]["fingerprint"]) == 18
    assert path.name.endswith(doc["steps"][-1]["fingerprint"][2:10] + ".json")
    trace = load_trace(path)
    assert trace.steps[1].action == action("Move", span=(0, 1), note=None)  # lists become tuples again
    assert isinstance(trace.steps[1].action, Action)
    assert len(trace.steps) == 4 and trace.property_name == "NotBad"


def test_same_trace_from_another_command_is_reused(tmp_path):
    first = save(tmp_path, command="kmc check --preset default")
    again = save(tmp_path, command="kmc check --preset default --json --traces-dir ./x")
    assert again == first and json.loads(first.read_text())["created_by"] == "kmc check --preset default"


def test_concurrent_writers_share_one_complete_file(tmp_path):
    from concurrent.futures import ThreadPoolExecutor
    family = FAMILIES["moves"]
    model, cfg, v = violated(family, "default")

    def write(i):
        return write_trace(tmp_path, family_ref="moves", model=model, config=cfg, preset="default",
                           violation=v, command=f"kmc check run {i}")

    with ThreadPoolExecutor(8) as pool:
        paths = set(pool.map(write, range(16)))
    assert len(paths) == 1 and [p.name for p in tmp_path.iterdir()] == [paths.pop().name]


def test_invariants_are_recorded_as_absolute_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = save(tmp_path / "traces", invariants=["inv.py"])
    assert json.loads(path.read_text())["invariants"] == [str(tmp_path / "inv.py")]


def test_never_overwrites(tmp_path):
    first = save(tmp_path)
    text = first.read_text()
    assert save(tmp_path) == first  # identical content: reused
    # Same file name (same property, preset and final state) but different content.
    second = save(tmp_path, invariants=["x.py"])
    assert second != first and second.name.endswith("-2.json")
    assert first.read_text() == text
    third = save(tmp_path, invariants=["y.py"])
    assert third.name.endswith("-3.json")
    # A user's own file with the trace's name is left alone.
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / first.name).write_text("my notes")
    fourth = save(mine)
    assert (mine / first.name).read_text() == "my notes" and fourth.name.endswith("-2.json")


def test_trace_clash_knows_every_name_write_trace_gives(tmp_path):
    """kmc check refuses, before its search, a --report or --junit that a trace of the
    run could be saved as: the names are write_trace's own (whatever characters the
    label holds, -2 as well), and only those."""
    first = save(tmp_path, label="zombie with/odd:chars")
    second = save(tmp_path, label="zombie with/odd:chars", invariants=["x.py"])
    assert second.name.endswith("-2.json")
    for written in (first, second):
        problem = trace_clash(str(written), "--report", str(tmp_path), ["Other", "NotBad"], "zombie with/odd:chars")
        assert problem == (f"--report '{written}' is a name under which this command may save the trace of NotBad "
                           f"in --traces-dir '{tmp_path}'; a trace is never overwritten, with or without --force: "
                           f"name another file for --report")
        # spelled another way, or before the directory exists
        assert trace_clash(str(tmp_path / "." / written.name), "--junit", str(tmp_path), ["NotBad"],
                           "zombie with/odd:chars")
        assert trace_clash(str(tmp_path / "new" / written.name), "--junit", str(tmp_path / "new"), ["NotBad"],
                           "zombie with/odd:chars")
    # another property, another label, another directory, another extension: no clash
    for args in ((str(first), "--junit", str(tmp_path), ["Other"], "zombie with/odd:chars"),
                 (str(first), "--junit", str(tmp_path), ["NotBad"], "zombie"),
                 (str(first), "--junit", str(tmp_path / "elsewhere"), ["NotBad"], "zombie with/odd:chars"),
                 (str(first.with_suffix(".html")), "--junit", str(tmp_path), ["NotBad"], "zombie with/odd:chars")):
        assert trace_clash(*args) is None, args
    # the directory itself, or one above it
    assert "are the same file" in trace_clash(str(tmp_path), "--junit", str(tmp_path), [], "x")
    assert (trace_clash(str(tmp_path / "o.html"), "--report", str(tmp_path / "o.html" / "t"), [], "x")
            == f"--traces-dir '{tmp_path / 'o.html' / 't'}' is inside --report '{tmp_path / 'o.html'}', which this "
               f"command writes as a file: give each its own name")


def test_refuse_trace_names_tries_every_output_and_label(tmp_path):
    """kmc conform saves a divergence under the label of each trace file it replays
    (and of --preset): a name under any of them is refused, an option not given
    (None) is skipped, a name under no label is not."""
    outputs = [("--report", None), ("--junit", str(tmp_path / "Conformance-b-custom-0123abcd.json"))]
    with pytest.raises(UsageError, match=r"^--junit '.*' is a name under which this command may save the trace "
                                         r"of Conformance"):
        refuse_trace_names(outputs, str(tmp_path), ["Conformance"], ["a", "b-custom", "a"])
    refuse_trace_names(outputs, str(tmp_path), ["Conformance"], ["a", "b"])
    refuse_trace_names(outputs, str(tmp_path), ["Other"], ["b-custom"])


def write_doc(tmp_path, doc, name="t.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize("edit,needle", [
    (lambda d: d.pop("steps"), "missing field 'steps'"),
    (lambda d: d.__setitem__("format_version", 2), "this kmc reads format_version 1"),
    (lambda d: d.__setitem__("format", "other"), "field 'format'"),
    (lambda d: d["model"].pop("family"), "'model.family'"),
    (lambda d: d.__setitem__("config", []), "field 'config' must be an object"),
    (lambda d: d["steps"][1].__setitem__("fingerprint", "zz"), "steps[1].fingerprint"),
    (lambda d: d["steps"][1].__setitem__("index", 7), "steps[1].index"),
    (lambda d: d["steps"][1].__setitem__("action", None), "steps[1].action"),
    (lambda d: d["steps"][1]["action"].pop("args"), "steps[1].action.args"),
    (lambda d: d["steps"][0].__setitem__("action", {"name": "X", "args": {}}), "step 0 is the initial state"),
    (lambda d: d.__setitem__("steps", []), "'steps' is empty"),
])
def test_load_rejects_malformed(tmp_path, edit, needle):
    doc = json.loads(save(tmp_path / "ok").read_text())
    edit(doc)
    p = write_doc(tmp_path, doc)
    with pytest.raises(UsageError) as e:
        load_trace(p)
    assert needle in str(e.value) and str(p) in str(e.value) and "\n" not in str(e.value)


def test_load_rejects_non_json_and_missing(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{not json")
    with pytest.raises(UsageError, match="not valid JSON .*line 1"):
        load_trace(p)
    with pytest.raises(UsageError, match="does not exist"):
        load_trace(tmp_path / "nope.json")


# -------------------------------------------------------------------- replay


def test_replay_ok(tmp_path):
    trace = load_trace(save(tmp_path))
    res = replay(trace, resolver)
    assert res.ok and res.fits and res.property_status == "violated"
    assert [s.index for s in res.steps] == [0, 1, 2, 3]
    assert res.steps[1].changes == [("pos", 0, 1), ("hist[0]", ABSENT, 0)]
    assert res.steps[1].render()[0] == "step 1  Move(span=(0, 1), note=None)"
    assert res.steps[0].render()[0].startswith("step 0  initial state")


def test_replay_stop_at(tmp_path):
    trace = load_trace(save(tmp_path))
    res = replay(trace, resolver, stop_at=1)
    assert res.fits and len(res.steps) == 2 and res.stopped_at == 1 and res.property_status == "unchecked"
    with pytest.raises(UsageError, match="out of range"):
        replay(trace, resolver, stop_at=4)


def test_replay_detects_disabled_action(tmp_path):
    doc = json.loads(save(tmp_path / "ok").read_text())
    doc["steps"][2]["action"]["args"]["span"] = [5, 6]
    res = replay(load_trace(write_doc(tmp_path, doc)), resolver)
    assert not res.fits and res.failed_step == 2
    assert res.reason.startswith("step 2: action Move(span=(5, 6), note=None) is not enabled here (enabled: Move(")


def test_replay_detects_state_change(tmp_path):
    doc = json.loads(save(tmp_path / "ok").read_text())
    doc["steps"][2]["fingerprint"] = "0x0000000000000001"
    doc["steps"][2]["state"]["pos"] = 7
    res = replay(load_trace(write_doc(tmp_path, doc)), resolver)
    assert not res.fits and res.failed_step == 2
    assert res.reason.startswith("step 2: state differs from the recorded one")
    assert res.mismatch == [("pos", 7, 2)]


def test_replay_when_the_model_changed(tmp_path):
    trace = load_trace(save(tmp_path))
    trace.config["bad"] = 9  # the "fixed" model no longer violates NotBad on this path
    res = replay(trace, resolver)
    assert res.fits and res.property_status == "holds" and not res.ok
    trace.config["zzz"] = 1
    res = replay(trace, resolver)
    assert not res.fits and "no longer fits" in res.reason
    # a property the model does not declare is not re-checked, and still ok (a path
    # saved from kmc explore names one)
    trace = load_trace(save(tmp_path / "renamed"))
    trace.property["name"] = "Renamed"
    res = replay(trace, resolver)
    assert res.fits and res.property_status == "undeclared" and res.ok
    # recorded as another kind than the model's: cannot be re-checked, not ok
    trace.property.update(name="NotBad", kind="sometimes")
    res = replay(trace, resolver)
    assert res.fits and res.property_status == "unknown" and not res.ok


def test_replay_step_property_and_deadlock(tmp_path):
    glitch = save(tmp_path, "toys", None, {"toy": "glitch", "n": 4})
    res = replay(load_trace(glitch), resolver)
    assert res.ok and res.property_status == "violated" and "transition" in res.property_note
    dead = save(tmp_path, "toys", "deadlock")
    res = replay(load_trace(dead), resolver)
    assert res.ok and res.property_status == "violated"
    assert load_trace(dead).property["kind"] == "deadlock"
