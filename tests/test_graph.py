"""`kmc graph`: the explored state graph as GraphML (read back with networkx) and
DOT, and its refusals (unknown format, too large, an existing output file, an output
that is not a regular file or is the --config file)."""

from __future__ import annotations

import json
import os
import re
import stat
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest

from checker.bfs import check
from checker.config import resolve
from tests import cli_support
from tests.cli_support import kmc

ROOT = Path(__file__).resolve().parent.parent
KAFKA = ["--model", "spec.family:FAMILY"]
TOYS = ["--model", "tests.liveness_toys:FAMILY"]


def one_line_error(r, needle=""):
    return cli_support.one_line_error(r, needle, prefix="kmc: error: ", reproduce="kmc graph")


def test_tiny_as_graphml_reads_back(tmp_path):
    out = tmp_path / "tiny.graphml"
    r = kmc("graph", *KAFKA, "--preset", "tiny", "--format", "graphml", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "1184 states, 2307 transitions, 1 initial, depth 18" in r.stderr
    g = nx.read_graphml(out, force_multigraph=True)
    assert (g.number_of_nodes(), g.number_of_edges()) == (1184, 2307)
    assert [n for n, d in g.nodes(data=True) if d["initial"]] == ["0"]
    assert max(d["depth"] for _n, d in g.nodes(data=True)) == 18
    # Every edge is an action, as many of each as the BFS engine counts.
    from spec.family import FAMILY
    counts = check(FAMILY.build(resolve(FAMILY, "tiny", {}))).stats.action_counts
    assert Counter(d["action"] for _u, _v, d in g.edges(data=True)) == Counter(counts)
    first = next(d for u, v, d in g.edges(data=True) if u == "0" and v == "1")
    assert first["label"] == "CrashBroker(broker=0)" and json.loads(first["args"]) == {"broker": 0}
    assert first["fair"] is False                     # a fault
    state = json.loads(g.nodes["0"]["state"])        # the whole describe() view
    assert state["zk"]["controller"] == -1 and g.nodes["1"]["label"].startswith("#1\n")


def test_toy_as_dot(tmp_path):
    r = kmc("graph", *TOYS, "--preset", "bounded", "--set", "drops=1", "--format", "dot")
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert text.startswith('digraph "relay" {') and text.rstrip().endswith("}")
    nodes = re.findall(r"^  (\d+) \[label=", text, re.M)
    edges = re.findall(r'^  (\d+) -> (\d+) \[label="([^"]*)"(, style=dashed)?\];', text, re.M)
    assert nodes == [str(i) for i in range(6)]
    assert edges == [("0", "1", "Send()", ""), ("1", "2", "Deliver()", ""), ("1", "3", "Drop()", ", style=dashed"),
                     ("3", "4", "Send()", ""), ("4", "5", "Deliver()", "")]
    # "-o -" is standard output too, not a file named "-"
    dash = kmc("graph", *TOYS, "--preset", "bounded", "--set", "drops=1", "--format", "dot", "-o", "-", cwd=tmp_path)
    assert dash.returncode == 0 and dash.stdout == text and not (tmp_path / "-").exists()
    assert '0 [label="#0 initial\\l", peripheries=2' in text
    assert '3 [label="#3\\ldrops_left=0\\l"]' in text


def test_tiny_as_dot(tmp_path):
    out = tmp_path / "tiny.dot"
    assert kmc("graph", *KAFKA, "--preset", "tiny", "--format", "dot", "-o", out).returncode == 0
    text = out.read_text()
    assert len(re.findall(r"^  \d+ \[label=", text, re.M)) == 1184
    assert len(re.findall(r"^  \d+ -> \d+ \[", text, re.M)) == 2307


def test_bad_input_is_one_line_exit_2(tmp_path):
    one_line_error(kmc("graph", *TOYS, "--format", "svg"), "unknown choice 'svg'; choose one of dot, graphml")
    one_line_error(kmc("graph", *KAFKA, "--preset", "small", "--format", "dot"),
                   "more than 2000 states, too many for dot")
    line = one_line_error(kmc("graph", *KAFKA, "--preset", "tiny", "--format", "graphml", "--max-states", "100"),
                          "more than 100 states")
    assert "choose a smaller preset or raise --max-states (now 100)" in line
    out = tmp_path / "mine.dot"
    out.write_text("what the user wrote")
    one_line_error(kmc("graph", *TOYS, "--format", "dot", "-o", out), "exists; it is not overwritten")
    assert out.read_text() == "what the user wrote"
    one_line_error(kmc("graph", *TOYS, "--format", "dot", "-o", tmp_path / "no" / "x.dot"), "does not exist")
    assert kmc("graph", *TOYS, "--format", "dot", "-o", out, "--force").returncode == 0
    assert out.read_text().startswith('digraph "relay"')
    assert list(tmp_path.glob(".kmc-graph-*")) == []


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "force"])
def test_an_output_that_is_not_a_regular_file_is_refused(tmp_path, force):
    """A FIFO, a symbolic link and a dangling one stay what they were, with or
    without --force (as root, a device would have been replaced by a regular file)."""
    fifo = tmp_path / "pipe.dot"
    os.mkfifo(fifo)
    target = tmp_path / "theirs.dot"
    target.write_text("what the user wrote")
    link, dangling = tmp_path / "link.dot", tmp_path / "dangling.dot"
    link.symlink_to(target)
    dangling.symlink_to(tmp_path / "nowhere.dot")
    one_line_error(kmc("graph", *TOYS, "--format", "dot", "-o", fifo, *force),
                   f"-o '{fifo}' is a FIFO (named pipe), not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    for path, what in ((link, f"(to '{target}')"), (dangling, "which does not exist")):
        line = one_line_error(kmc("graph", *TOYS, "--format", "dot", "-o", path, *force),
                              f"-o '{path}' is a symbolic link")
        assert what in line and "name a regular file" in line
        assert path.is_symlink()
    assert os.readlink(link) == str(target) and target.read_text() == "what the user wrote"
    assert not (tmp_path / "nowhere.dot").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.dot", "link.dot", "pipe.dot", "theirs.dot"]


def test_an_output_that_is_the_config_file_is_refused(tmp_path):
    cfg = tmp_path / "e2.toml"
    cfg.write_text('preset = "bounded"\nmodel = "tests.liveness_toys:FAMILY"\n')
    before = cfg.read_bytes()
    (tmp_path / "sub").mkdir()
    os.link(cfg, tmp_path / "hard.toml")
    for out in (cfg, tmp_path / "sub" / ".." / "e2.toml", tmp_path / "hard.toml"):
        for force in ([], ["--force"]):
            line = one_line_error(kmc("graph", "--config", cfg, "--format", "dot", "-o", out, *force),
                                  f"-o '{out}' is the same file as --config '{cfg}', which this command reads")
            assert "never overwritten, with or without --force" in line
    assert cfg.read_bytes() == before


def test_an_output_that_is_the_models_source_is_refused(tmp_path):
    """``--model mymodel:FAMILY -o mymodel.py --force`` replaced the user's model with
    a graph; ``kmc check --report`` did the same after the search."""
    src = tmp_path / "mymodel.py"
    src.write_text("from tests.toys import FAMILY\n")
    before = src.read_bytes()
    for argv in (["graph", "--model", "mymodel:FAMILY", "--format", "dot", "-o", "mymodel.py", "--force"],
                 ["check", "--model", "mymodel:FAMILY", "--report", "mymodel.py", "--force"],
                 ["check", "--model", "mymodel:FAMILY", "--junit", "./mymodel.py", "--force"]):
        r = kmc(*argv, cwd=tmp_path)
        line = cli_support.one_line_error(r, "is the source of Python module 'mymodel', which this command runs")
        assert "distinct states" not in r.stdout and "transitions" not in r.stdout   # refused before the search
        assert "code is never overwritten, with or without --force" in line
    assert src.read_bytes() == before


def test_model_error_is_exit_3():
    r = kmc("graph", "--model", "tests.toys:FAMILY", "--preset", "crash", "--format", "dot")
    assert r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "the model broke its contract: exploring the state graph: expanding a state at depth 2 raised " \
           "ZeroDivisionError" in r.stderr
