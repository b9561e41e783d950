"""Rank / iteration / graph selection in dump trees, and comparing each selected part in turn."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from builders import one_op_golden
from compare.runs.folders import run_network
from compare.runs.each import selected_folder
from compare.reports.frame import to_dataframe
from compare.cli import app
from compare.errors import OptionError
from compare.loaders import load_run
from compare.loaders.selection import Candidate, Spec, filter_by, parse_spec
from compare.loaders.trees import claim, locate, select
from compare.loaders.selection import Selection
from compare.records import PairStatus
from compare.testing.synthetic_mindspore import OPS, make_trees, tensor_value


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_trees(tmp_path_factory.mktemp("sel"))


# --------------------------------------------------------------------------------------------
# Spec syntax


def test_parse_spec_forms() -> None:
    assert parse_spec(None, "--iteration") is None
    assert parse_spec(3, "--iteration") == Spec("3", ranges=((3, 3),))
    spec = parse_spec("0|5-8|100-120", "--iteration")
    assert spec is not None and spec.matches(0) and spec.matches(6) and spec.matches(120) and not spec.matches(9)
    assert spec.single is None and parse_spec("7", "x").single == 7  # type: ignore[union-attr]
    assert parse_spec("0,3", "x").ranges == ((0, 0), (3, 3))  # type: ignore[union-attr]
    assert parse_spec([1, 2], "x").ranges == ((1, 1), (2, 2))  # type: ignore[union-attr]
    every = parse_spec("ALL", "--rank")
    assert every is not None and every.every and every.matches(99)


@pytest.mark.parametrize("text,message", [("x", "is not a number or a range"), ("5-2", "runs backwards"),
                                          ("", "is empty"), ("1|", "is not a number")])
def test_parse_spec_errors(text: str, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_spec(text, "--iteration")
    with pytest.raises(OptionError, match="must not be negative"):
        parse_spec(-1, "--rank")


def test_filter_by_defaults_and_errors() -> None:
    cands = [Candidate(Path(f"/x/{i}"), "ge", {"iteration": i}) for i in (0, 2, 10)]
    notes: list[str] = []
    kept = filter_by(cands, "iteration", None, option="--iteration", where="w", default="max", notes=notes)
    assert [c.get("iteration") for c in kept] == [10] and "using iteration 10 (the newest" in notes[0]
    kept = filter_by(cands, "iteration", parse_spec("0-2", "i"), option="--iteration", where="w", default="max",
                     notes=notes, keep_all=True)
    assert [c.get("iteration") for c in kept] == [0, 2]
    notes.clear()
    kept = filter_by(cands, "iteration", parse_spec("0-2", "i"), option="--iteration", where="w", default="max",
                     notes=notes)
    assert [c.get("iteration") for c in kept] == [2] and "selects 2 iterations" in notes[0]
    with pytest.raises(OptionError, match="--iteration 5 selects nothing in w: it has iteration 0, 2, 10"):
        filter_by(cands, "iteration", parse_spec("5", "i"), option="--iteration", where="w", default="max", notes=[])
    plain = [Candidate(Path("/y"), "plain", {})]
    notes.clear()
    assert filter_by(plain, "rank", parse_spec("1", "r"), option="--rank", where="w", default="min",
                     notes=notes) == plain
    assert "--rank 1 ignored" in notes[0]


# --------------------------------------------------------------------------------------------
# Tree layouts and selection


def test_locate_layouts(tmp_path: Path) -> None:
    assert locate(tmp_path / "rank_3" / "Net" / "1" / "7", "npy") == (
        "mindspore-npy", {"rank": 3, "net": "Net", "graph": 1, "iteration": 7})
    assert locate(tmp_path / "2" / "Net_graph_4" / "4" / "5", "offline")[0] == "mindspore-async"
    assert locate(tmp_path / "Net" / "device_1" / "iteration_9", "sync")[1] == {"rank": 1, "iteration": 9,
                                                                                   "net": "Net"}
    assert locate(tmp_path / "20240101120000" / "0" / "m" / "1" / "3", "offline")[0] == "ge"
    assert locate(tmp_path / "4" / "20240101120000" / "0" / "m" / "1" / "3", "offline")[1]["step"] == 4
    assert locate(tmp_path / "anything", "offline") == ("plain", {})


def test_claim_leaves_other_folders_alone(tmp_path: Path, trees: dict[str, Path]) -> None:
    golden = tmp_path / "golden"
    golden.mkdir()
    np.save(golden / "conv1.0.1700000000000000.npy", np.zeros(3, np.float32))
    assert claim(golden) is None
    assert claim(trees["tf"]) is None  # a plain GE tree without options: the Ascend reader's
    assert claim(trees["tf"], Selection(iteration=0)) is not None
    assert claim(tmp_path / "missing") is None


def test_rank_iteration_graph_selection(trees: dict[str, Path]) -> None:
    run = load_run(trees["npy"], rank=1, iteration="1", graph=0)
    assert (run.rank, run.iteration, run.coords["graph"]) == (1, 1, 0)
    data = run.ops[OPS[0].name].outputs[0].load()
    assert data.tolist() == tensor_value(OPS[0].name, "output", 0, (1, 2, 4, 4), 1, 1).tolist()
    several = load_run(trees["npy"], rank=0, iteration="0|1")
    assert several.iteration == 1 and any("selects 2 iterations" in n for n in several.notes)
    with pytest.raises(OptionError, match="--rank 5 selects nothing .* it has rank 0, 1"):
        load_run(trees["npy"], rank=5)
    every = load_run(trees["npy"], graph="all")  # one run: the largest graph, with a note
    assert every.coords["graph"] == 1 and any("--graph all selects 2 graphs" in n for n in every.notes)


def test_a_leaf_given_directly(trees: dict[str, Path]) -> None:
    leaf = trees["npy"] / "rank_1" / "Net" / "0" / "2"
    run = load_run(leaf)
    assert (run.rank, run.iteration) == (1, 2)  # its ancestors still name it
    with pytest.raises(OptionError, match="it has iteration 2"):
        load_run(leaf, iteration=0)


def test_options_ignored_on_a_golden_folder(tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    golden.mkdir()
    np.save(golden / "conv1.0.1700000000000000.npy", np.zeros(3, np.float32))
    run = load_run(golden, iteration=3, rank=0)
    assert any("--rank, --iteration ignored" in n for n in run.notes)


def test_select_single_and_all(trees: dict[str, Path]) -> None:
    leaves = claim(trees["npy"])
    assert leaves is not None
    one = select(leaves, Selection(), where="npy")
    assert [(c.get("rank"), c.get("iteration")) for c in one] == [(0, 2)]
    every = select(leaves, Selection(rank="all", iteration="all"), where="npy", keep_all=True)
    assert [(c.get("rank"), c.get("iteration")) for c in every] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]


# --------------------------------------------------------------------------------------------
# Compare each in turn


def test_iteration_all_compares_each_in_turn(trees: dict[str, Path]) -> None:
    result = run_network(trees["npy"], trees["sync"], rank=0, iteration="all")
    # the left has iterations 0-2, the right 0-1: iteration 2 is reported as not compared
    assert result.parts == [(0, 0), (0, 1)]
    assert any(n.startswith("[rank 0 iteration 2] not compared") and "selects nothing" in n for n in result.notes)
    # iteration 2's own row says so (the gate fails it as incomplete)
    assert {(r.rank, r.iteration) for r in result.rows} == {(0, 0), (0, 1), (0, 2)}
    (missing,) = [r for r in result.rows if r.iteration == 2]
    assert missing.left_op == "rank 0 iteration 2" and missing.reasons[0].startswith("part rank 0 iteration 2 not ")
    compared = [r for r in result.rows if r.status is PairStatus.COMPARED]
    assert len(compared) == 20 and all(r.metrics["MaxAbsoluteError"] == 0 for r in compared)
    frame = to_dataframe(result)
    assert list(frame.columns[:3]) == ["Index", "Rank", "Iteration"]


def test_rank_all_against_one_golden(trees: dict[str, Path], tmp_path: Path) -> None:
    golden, mapping = one_op_golden(tmp_path)
    result = run_network(trees["npy"], golden, rank="all", iteration=0, mapping=mapping)
    assert result.parts == [(0, 0), (1, 0)]
    rows = {r.rank: r for r in result.rows if r.right_op == "sm" and r.status is PairStatus.COMPARED}
    assert rows[0].metrics["MaxAbsoluteError"] == 0 and rows[1].metrics["MaxAbsoluteError"] > 0


def test_single_values_do_not_loop(trees: dict[str, Path]) -> None:
    result = run_network(trees["npy"], trees["npy"], rank=1, iteration=2)
    assert result.parts == [] and all(r.rank is None for r in result.rows)


def test_each_in_turn_needs_a_tree(tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    golden.mkdir()
    np.save(golden / "conv1.0.1700000000000000.npy", np.zeros(3, np.float32))
    with pytest.raises(OptionError, match="is not a dump tree with ranks or iterations"):
        run_network(golden, golden, iteration="all")


def test_selected_folder(trees: dict[str, Path]) -> None:
    assert selected_folder(trees["npy"], rank=1, iteration=0) == trees["npy"] / "rank_1" / "Net" / "0" / "0"
    with pytest.raises(OptionError, match="single-operator mode compares one tensor"):
        selected_folder(trees["npy"], iteration="all")


# --------------------------------------------------------------------------------------------
# Command line


def test_cli_selection_options(trees: dict[str, Path], tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "r.csv"
    result = runner.invoke(app, ["-l", str(trees["npy"]), "-r", str(trees["sync"]), "--rank", "0",
                                 "--iteration", "0-1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "compared 2 (rank, iteration) part(s) in turn" in result.output
    assert out.read_text().count("\n") > 20
    bad = runner.invoke(app, ["-l", str(trees["npy"]), "-r", str(trees["sync"]), "--iteration", "x", "-o", str(out)])
    assert bad.exit_code == 2 and "--iteration 'x'" in bad.output
    single = runner.invoke(app, ["-l", str(trees["npy"]), "-r", str(trees["sync"]), "--rank", "0", "--iteration", "1",
                                 "-d", OPS[0].name, "-o", str(tmp_path / "single")])
    assert single.exit_code == 0, single.output
    tf = runner.invoke(app, ["-l", str(trees["tf"]), "-r", str(trees["tf"]), "--ge-graph", str(trees["tf_build"]),
                             "--iteration", "0", "-o", str(tmp_path / "tf.csv")])
    assert tf.exit_code == 0, tf.output
    assert "first graph of ge_proto_00001_Build.txt" in tf.output
