"""Complete or not passed (issue 26, point 5): under any gate, a part of a multi-part run (a rank,
a step / iteration, a graph: ``--rank all`` ...) that could not be read or found makes the run
incomplete (exit 3, or 1 when a value fails too), never PASSED. The part is in the JSON
``parts`` with its reason, in the terminal verdict lines, and in the rows (one not-comparable row
naming it), so strict gates, JUnit and ``vcompare gate`` on the saved result see it; the same on
a Dask LocalCluster. Trees come from the synthetic generators (msprobe tensor and statistics
dumps, MindSpore ``.npy`` rank trees)."""

from __future__ import annotations

import importlib.util
import json
import logging
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from builders import comparable_result

from compare.api import compare_network, regate
from compare.cli import app, run
from compare.records import Outcome, PairStatus, PartStatus
from compare.testing.synthetic_msprobe import MsprobeDump, write_msprobe_dump
from compare.testing.synthetic_rank_trees import make_rank_trees

TENSORS = 19  # tensors of compare.testing.synthetic_msprobe.CALLS
ROWS = TENSORS + 5  # and its 5 non-tensor arguments (rows of their own)
GATE = ("--gate", "CosineSimilarity>=0.9")
HAVE_DASK = importlib.util.find_spec("distributed") is not None
needs_dask = pytest.mark.skipif(not HAVE_DASK, reason="dask[distributed] is not installed: pip install 'vcompare[dask]'"
                                                      " (it is part of the test extra)")


def _run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _garble(dump: MsprobeDump, step: int, rank: int) -> Path:
    """The rank folder's dump.json overwritten with text that is not an msprobe dump at all (the
    tree walk does not take the folder for a part)."""
    path = dump.folders[(step, rank)] / "dump.json"
    path.write_text("{broken")
    return path


def _truncate(dump: MsprobeDump, step: int, rank: int) -> Path:
    """The rank folder's dump.json cut in the middle (found as a part, unreadable as JSON)."""
    path = dump.folders[(step, rank)] / "dump.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    return path


@pytest.fixture
def msprobe(tmp_path: Path) -> dict[str, MsprobeDump]:
    """Two ranks, one step, on each side (the right a little noisy: every cosine passes 0.9)."""
    return {"left": write_msprobe_dump(tmp_path / "T", ranks=(0, 1)),
            "right": write_msprobe_dump(tmp_path / "T2", ranks=(0, 1), noise=1e-4, seed=3)}


def _part_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["tensor_id"] is None]


# --------------------------------------------------------------------------------------------
# the bug: a broken rank was a note and the gate said PASSED


@pytest.mark.parametrize("breaking", [_garble, _truncate])
def test_a_broken_rank_makes_a_gated_run_incomplete(msprobe: dict[str, MsprobeDump], tmp_path: Path,
                                                    breaking) -> None:
    left, right = msprobe["left"].root, msprobe["right"].root
    breaking(msprobe["right"], 0, 1)
    out, js, junit = tmp_path / "out.csv", tmp_path / "r.json", tmp_path / "r.xml"
    result = _run("-l", left, "-r", right, "--rank", "all", *GATE, "-o", out, "--json", js, "--junit", junit)
    assert result.exit_code == 3, result.output
    assert "gate: INCOMPLETE (exit 3)" in result.output and "1 part(s) missing" in result.output
    verdict_lines = result.output.split("gate: INCOMPLETE", 1)[1]
    assert "part rank 1 iteration 0 not compared: " in verdict_lines  # named in the verdict lines
    assert "compared 1 (rank, iteration) part(s) in turn: rank 0 iteration 0; 1 part(s) not compared: " \
           "rank 1 iteration 0" in result.output
    document = json.loads(js.read_text())
    assert [(p["rank"], p["status"]) for p in document["parts"]] == [(0, "compared"), (1, "not compared")]
    reason = document["parts"][1]["reason"]
    assert reason  # why: the rank is not in the right tree, or its dump.json is not JSON
    (row,) = _part_rows(document["rows"])
    assert (row["rank"], row["iteration"], row["status"]) == (1, 0, "not comparable")
    assert row["left_op"] == "rank 1 iteration 0"
    assert row["reasons"] == [f"part rank 1 iteration 0 not compared: {reason}"]
    assert document["verdict"]["outcome"] == "incomplete" and document["verdict"]["exit_code"] == 3
    failure = document["verdict"]["failures"][0]
    assert failure["part"] == "rank 1 iteration 0" and failure["incomplete"] and failure["row"] == row["row"]
    # the CSV table has the row, and JUnit has the part's test case in error (incomplete)
    frame = pd.read_csv(out)
    assert len(frame) == ROWS + 1 and frame.iloc[-1]["LeftOp"] == "rank 1 iteration 0"
    assert "not compared" in frame.iloc[-1]["FailReason"]
    (case,) = [c for c in ET.parse(junit).iter("testcase") if c.get("classname") == "rank 1 iteration 0"]
    error = case.find("error")
    assert error is not None and error.get("type") == "incomplete"
    assert error.get("message", "").startswith("part rank 1 iteration 0 not compared: ")
    # `--rank 1` alone could not run at all (exit 2): all of it is missing
    alone = _run("-l", left, "-r", right, "--rank", "1", *GATE, "-o", tmp_path / "one.csv")
    assert alone.exit_code == 2


def test_regating_the_saved_result_sees_the_missing_part(msprobe: dict[str, MsprobeDump], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    _truncate(msprobe["right"], 0, 1)
    out, js = tmp_path / "out.csv", tmp_path / "r.json"
    live = _run("-l", msprobe["left"].root, "-r", msprobe["right"].root, "--rank", "all", *GATE, "-o", out,
                "--json", js)
    assert live.exit_code == 3, live.output
    for saved in (js, out):  # the JSON keeps `parts`; the CSV keeps the part's row (strict gate)
        assert run(["gate", str(saved), *GATE]) == 3
        err = capsys.readouterr().err
        assert "gate: INCOMPLETE (exit 3)" in err and "rank 1 iteration 0" in err
    again = regate(js, gates=["CosineSimilarity>=0.9"])
    assert again.verdict.outcome is Outcome.INCOMPLETE and again.verdict.failures[0].part == "rank 1 iteration 0"
    assert again.to_dict()["verdict"]["failures"] == json.loads(js.read_text())["verdict"]["failures"]


def test_a_non_strict_policy_and_a_waiver_do_not_pass_a_missing_part(msprobe: dict[str, MsprobeDump],
                                                                     tmp_path: Path) -> None:
    _truncate(msprobe["right"], 0, 1)
    policy = tmp_path / "gates.toml"
    policy.write_text('strict = false\n[defaults]\nCosineSimilarity = 0.9\n'
                      '[[waiver]]\nrank = 1\nreason = "rank 1 is known broken"\n')
    result = _run("-l", msprobe["left"].root, "-r", msprobe["right"].root, "--rank", "all", "--policy", policy,
                  "-o", tmp_path / "out.csv")
    assert result.exit_code == 3, result.output
    assert "part rank 1 iteration 0 not compared" in result.output
    api = compare_network(msprobe["left"].root, msprobe["right"].root, rank="all", policy=policy)
    assert api.verdict.outcome is Outcome.INCOMPLETE and not api.verdict.waived
    assert [f.part for f in api.verdict.failures] == ["rank 1 iteration 0"]


def test_a_value_failure_with_a_missing_part_fails(msprobe: dict[str, MsprobeDump], tmp_path: Path) -> None:
    _truncate(msprobe["right"], 0, 1)
    result = compare_network(msprobe["left"].root, msprobe["right"].root, rank="all",
                             gates=["MaxAbsoluteError<=1e-9"])
    assert result.verdict.outcome is Outcome.FAILED and result.exit_code == 1
    assert result.verdict.failures[0].part == "rank 1 iteration 0"  # listed first, whatever follows


def test_without_a_gate_the_part_is_reported_and_the_run_exits_0(msprobe: dict[str, MsprobeDump],
                                                                 tmp_path: Path) -> None:
    _truncate(msprobe["right"], 0, 1)
    result = compare_network(msprobe["left"].root, msprobe["right"].root, rank="all")
    assert result.exit_code == 0 and result.verdict.outcome is Outcome.NOT_GATED
    assert [p.status for p in result.parts] == [PartStatus.COMPARED, PartStatus.NOT_COMPARED]
    assert result.summary()["not comparable"] == 1


@pytest.mark.parametrize("side", ["left", "right"])
def test_a_rank_on_one_side_only(tmp_path: Path, side: str) -> None:
    """A rank the other side lacks: on the left only (its part finds no counterpart), or on the
    right only (no left part runs for it: it is a missing part all the same)."""
    two = write_msprobe_dump(tmp_path / "two", ranks=(0, 1))
    one = write_msprobe_dump(tmp_path / "one", ranks=(0,), noise=1e-4, seed=3)
    left, right = (two.root, one.root) if side == "left" else (one.root, two.root)
    js = tmp_path / "r.json"
    result = _run("-l", left, "-r", right, "--rank", "all", *GATE, "-o", tmp_path / "out.csv", "--json", js)
    assert result.exit_code == 3, result.output
    document = json.loads(js.read_text())
    assert [(p["rank"], p["status"]) for p in document["parts"]] == [(0, "compared"), (1, "not compared")]
    (row,) = _part_rows(document["rows"])
    assert row["rank"] == 1 and row["reasons"][0].startswith("part rank 1 iteration 0 not compared: ")
    if side == "right":
        assert f"the right side has it: rank 1, iteration 0 ({two.folders[(0, 1)]})" in row["reasons"][0]
        assert any(n.startswith("[rank 1 iteration 0] not compared: the left side has no such part")
                   for n in document["notes"])
    else:
        assert "--rank 1 selects nothing" in row["reasons"][0]
    assert "part rank 1 iteration 0 not compared" in result.output.split("gate: INCOMPLETE", 1)[1]


def test_a_left_rank_whose_dump_json_is_garbled_is_missing(msprobe: dict[str, MsprobeDump], tmp_path: Path) -> None:
    """The bug from the other side: the left rank's folder is no part at all, the right has it."""
    _garble(msprobe["left"], 0, 1)
    result = compare_network(msprobe["left"].root, msprobe["right"].root, rank="all", gates=["cos>=0.9"])
    assert result.exit_code == 3
    assert [(p.rank, p.status) for p in result.parts] == [(0, PartStatus.COMPARED), (1, PartStatus.NOT_COMPARED)]
    assert "the left side has no such part" in result.verdict.failures[0].message


# --------------------------------------------------------------------------------------------
# MindSpore trees


def test_mindspore_parts_missing_on_either_side(tmp_path: Path) -> None:
    """A MindSpore ``.npy`` rank tree: iteration 1 of rank 0 has no golden; rank 1 iteration 0's
    left leaf is emptied (no left part: the right one is missing)."""
    trees = make_rank_trees(tmp_path / "ms", ranks=2, iterations=2, unmatched=((0, 1),))
    emptied = trees["left"] / "rank_1" / "Net" / "0" / "0"
    shutil.rmtree(emptied)
    emptied.mkdir()
    js = tmp_path / "r.json"
    result = _run("-l", trees["left"], "-r", trees["right"], "--rank", "all", "--iteration", "all", *GATE,
                  "-o", tmp_path / "out.csv", "--json", js)
    assert result.exit_code == 3, result.output
    document = json.loads(js.read_text())
    missing = [(p["rank"], p["iteration"]) for p in document["parts"] if p["status"] == "not compared"]
    assert missing == [(0, 1), (1, 0)]  # the left parts in order, then the right-only one
    assert [(r["rank"], r["iteration"]) for r in _part_rows(document["rows"])] == [(0, 1), (1, 0)]
    assert [f["part"] for f in document["verdict"]["failures"]] == ["rank 0 iteration 1", "rank 1 iteration 0"]
    lines = result.output.split("gate: INCOMPLETE", 1)[1]
    assert "part rank 0 iteration 1 not compared: --iteration 1 selects nothing" in lines
    assert "part rank 1 iteration 0 not compared: the left side has no such part" in lines


# --------------------------------------------------------------------------------------------
# statistics-only msprobe dumps (task statistics: no tensor files)


@pytest.fixture
def statistics(tmp_path: Path) -> dict[str, MsprobeDump]:
    dumps = {"left": write_msprobe_dump(tmp_path / "S", ranks=(0, 1), task="statistics"),
             "right": write_msprobe_dump(tmp_path / "S2", ranks=(0, 1), noise=1e-4, seed=3, task="statistics")}
    _truncate(dumps["right"], 0, 1)
    return dumps


def test_a_statistics_run_lists_the_missing_part_and_its_row(statistics: dict[str, MsprobeDump],
                                                             tmp_path: Path) -> None:
    js = tmp_path / "s.json"
    result = _run("-l", statistics["left"].root, "-r", statistics["right"].root, "--rank", "all",
                  "-o", tmp_path / "s.csv", "--json", js)
    assert result.exit_code == 0, result.output
    document = json.loads(js.read_text())
    assert [(p["rank"], p["status"]) for p in document["parts"]] == [(0, "compared"), (1, "not compared")]
    assert "dump.json" in document["parts"][1]["reason"]
    (row,) = _part_rows(document["rows"])
    assert row["left_op"] == "rank 1 iteration 0" and row["reasons"][0].startswith("part rank 1 iteration 0 not ")
    assert f"rows: {ROWS} compared, 1 not comparable" in result.output  # the statistics rows and the part's


def test_a_gated_statistics_run_with_a_missing_part_is_incomplete(statistics: dict[str, MsprobeDump],
                                                                  tmp_path: Path) -> None:
    js = tmp_path / "s.json"
    result = _run("-l", statistics["left"].root, "-r", statistics["right"].root, "--rank", "all", *GATE,
                  "-o", tmp_path / "s.csv", "--json", js)
    assert result.exit_code == 3, result.output
    assert "part rank 1 iteration 0 not compared" in result.output.split("gate: INCOMPLETE", 1)[1]
    document = json.loads(js.read_text())
    assert document["verdict"]["failures"][0]["part"] == "rank 1 iteration 0"
    assert [r["left_op"] for r in _part_rows(document["rows"])] == ["rank 1 iteration 0"]
    # the statistics table holds the part's row too, and a statistics gate sees the same
    assert "part rank 1 iteration 0 not compared" in (tmp_path / "s.csv").read_text()
    stats_gate = _run("-l", statistics["left"].root, "-r", statistics["right"].root, "--rank", "all",
                      "--gate", "L2NormRelDiff<=1", "-o", tmp_path / "t.csv")
    assert stats_gate.exit_code == 3, stats_gate.output


# --------------------------------------------------------------------------------------------
# Dask


@needs_dask
def test_a_local_cluster_gives_the_same_incomplete_verdict(tmp_path: Path) -> None:
    """A rank broken on the right and a rank only the right side has, in turn and on a
    LocalCluster: the same exit code, rows, parts and verdict."""
    from distributed import LocalCluster  # here: only with Dask installed

    left = write_msprobe_dump(tmp_path / "L", ranks=(0, 1))
    right = write_msprobe_dump(tmp_path / "R", ranks=(0, 1, 2), noise=1e-4, seed=3)
    _truncate(right, 0, 1)
    common = ("-l", left.root, "-r", right.root, "--rank", "all", *GATE)
    here = _run(*common, "-o", tmp_path / "here.csv", "--json", tmp_path / "here.json")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, silence_logs=logging.CRITICAL,
                      dashboard_address=":0") as cluster:
        there = _run(*common, "-o", tmp_path / "there.csv", "--json", tmp_path / "there.json",
                     "--scheduler", cluster.scheduler_address)
    assert here.exit_code == there.exit_code == 3, there.output
    assert (tmp_path / "here.csv").read_bytes() == (tmp_path / "there.csv").read_bytes()
    mine, theirs = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("here", "there"))
    assert comparable_result(mine) == comparable_result(theirs)
    assert [(p["rank"], p["status"]) for p in theirs["parts"]] == [(0, "compared"), (1, "not compared"),
                                                                   (2, "not compared")]
    assert [f["part"] for f in theirs["verdict"]["failures"]] == ["rank 1 iteration 0", "rank 2 iteration 0"]
    assert "part rank 2 iteration 0 not compared: the left side has no such part" in there.output


@needs_dask
def test_a_lost_part_fails_a_non_strict_policy(tmp_path: Path) -> None:
    """A part whose cluster task fails every retry is lost: its row and an incomplete failure,
    even under ``strict = false`` (which does not fail its operators' not-comparable rows)."""
    from distributed import Client, LocalCluster  # here: only with Dask installed

    from compare.testing.dask_plugins import BreakPart  # here: imports distributed

    trees = make_rank_trees(tmp_path / "ms", ranks=2, iterations=1)
    policy = tmp_path / "gates.toml"
    policy.write_text("strict = false\n[defaults]\nCosineSimilarity = 0.9\n")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, silence_logs=logging.CRITICAL,
                      dashboard_address=":0") as running, Client(running, set_as_default=False) as client:
        client.register_plugin(BreakPart(1))  # rank 1 iteration 0
        result = compare_network(trees["left"], trees["right"], rank="all", iteration="all", policy=policy,
                                 scheduler=running.scheduler_address)
    assert [p.status for p in result.parts] == [PartStatus.COMPARED, PartStatus.LOST]
    assert result.verdict.outcome is Outcome.INCOMPLETE and result.exit_code == 3
    (failure,) = result.verdict.failures
    assert failure.part == "rank 1 iteration 0" and failure.message.startswith("part rank 1 iteration 0 lost: ")
    assert result.rows[failure.row].left_op == "rank 1 iteration 0"
    assert result.rows[failure.row].status is PairStatus.NOT_COMPARABLE
