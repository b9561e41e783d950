"""Statistics-only comparison: statistics of a tensor, differences, CSV reading, the stats report."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from compare.runs.folders import run_network
from compare.cli import app
from compare.loaders.stats_csv import column_key, parse_shape, read_stats_csv
from compare.records import PairStatus
from compare.reports.stats import header, render_stats_csv, stats_output_path, value_cell, write_stats_report
from compare.stats import diff_stat, tensor_stats
from compare.stats_table import StatsResult
from compare.testing.synthetic_mindspore import make_trees


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_trees(tmp_path_factory.mktemp("stats"))


def test_tensor_stats_definitions() -> None:
    x = np.array([1.0, -2.0, 0.0, np.nan, np.inf, -np.inf, 3.0], dtype=np.float32)
    s = tensor_stats(x)
    assert (s["max"], s["min"]) == (math.inf, -math.inf)  # infinities count, NaN does not
    assert s["avg"] == pytest.approx(2.0 / 4) and s["l2norm"] == pytest.approx(math.sqrt(14))
    assert (s["count"], s["nan_count"], s["pos_inf_count"], s["neg_inf_count"], s["zero_count"]) == (7, 1, 1, 1, 1)
    assert (s["negative_count"], s["positive_count"]) == (2, 3)
    nan = tensor_stats(np.full(3, np.nan, np.float16))
    assert nan["max"] is None and nan["avg"] is None and nan["nan_count"] == 3
    assert tensor_stats(np.array([True, False]))["max"] == 1
    assert tensor_stats(np.arange(4, dtype=np.int8), with_hash=True)["md5"] == "37b59afd592725f9305e484a5d7f5168"


def test_diff_stat() -> None:
    d = diff_stat("max", 1.5, 1.0)
    assert (d.diff, d.rel) == (0.5, 0.5)
    assert diff_stat("max", 1.0, 0.0).rel == math.inf and diff_stat("max", 0.0, 0.0).rel == 0.0
    assert diff_stat("max", None, 1.0).diff is None
    assert diff_stat("md5", "ab", "ab").diff == "same" and diff_stat("md5", "ab", "cd").diff == "different"
    assert math.isnan(diff_stat("avg", math.nan, 1.0).diff)
    assert diff_stat("max", math.inf, math.inf).diff == 0.0


def test_column_keys_and_shapes() -> None:
    assert column_key("Max Value") == "max" and column_key("L2Norm Value") == "l2norm"
    assert column_key("Negative Zero Count") == "negative_count" and column_key("NaN Count") == "nan_count"
    assert column_key("Input/Output") == "io" and column_key("Slot") == column_key("Index") == "index"
    assert parse_shape("(1,3,224,224)") == (1, 3, 224, 224) and parse_shape("4x50x50x16") == (4, 50, 50, 16)
    assert parse_shape("()") == () and parse_shape("[2, 3]") == (2, 3)


def test_mindspore_statistic_csv_with_nulls(tmp_path: Path) -> None:
    path = tmp_path / "statistic.csv"
    path.write_text("Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,"
                    "Min Value,Avg Value,Count,Negative Zero Count,Positive Zero Count,NaN Count,Negative Inf Count,"
                    "Positive Inf Count,Zero Count,MD5\n"
                    'Add,Default--Add-op1,1,0,17,output,0,8,float32,"(2)",null,null,null,2,0,0,2,0,0,0,abc\n'
                    "Add,Default--Add-op1,1,0,17,input,0,8\n")
    parsed = read_stats_csv(path)
    assert len(parsed.records) == 1 and "row 3: 8 cells" in parsed.skipped[0][1]
    stats = parsed.records[0].stats
    assert stats["max"] is None and stats["nan_count"] == 2 and stats["md5"] == "abc"


def test_statistics_only_vs_tensors(trees: dict[str, Path]) -> None:
    result = run_network(trees["stats"], trees["sync"], iteration=0)
    assert result.stats is not None and len(result.rows) == len(result.stats.rows)
    assert result.summary()["compared"] == 10
    assert result.stats.stats[:4] == ["max", "min", "avg", "l2norm"]
    for row in result.stats.rows:
        if row.status is not PairStatus.COMPARED:
            continue
        assert row.left_source.startswith("statistic.csv row ") and row.right_source.startswith("computed from ")
        for name, value in row.values.items():
            assert abs(value.diff) <= 1e-6 * max(1.0, abs(value.right)), (row.tensor_id, name, value)
    assert any("statistics comparison: the left side" in n for n in result.notes)
    missing = [r for r in result.stats.rows if r.status is not PairStatus.COMPARED]
    assert {r.right_op for r in missing} == {"conv1.weight", "Default/network-relu1/ReLU-op2"}


def test_stats_report(tmp_path: Path, trees: dict[str, Path]) -> None:
    result = run_network(trees["stats"], trees["npy"], rank=0, iteration=0)
    assert result.stats is not None
    path = write_stats_report(result.stats, tmp_path)
    assert path.parent == tmp_path and path.name.startswith("stats_result_") and path.suffix == ".csv"
    with path.open() as f:
        rows = list(csv.reader(f))
    assert rows[0][:8] == ["Index", "OpType", "LeftOp", "RightOp", "TensorIndex", "LeftDataType", "RightDataType",
                           "Shape"]
    assert rows[0][8:12] == ["LeftMax", "RightMax", "MaxDiff", "MaxRelDiff"]
    assert rows[0][-3:] == ["LeftSource", "RightSource", "FailReason"]
    assert len(rows) == 1 + len(result.stats.rows)
    assert header(["l2norm"], with_selection=True)[5:7] == ["Rank", "Iteration"]
    assert value_cell(None) == "NaN" and value_cell(3.0) == "3" and value_cell(math.inf) == "inf"
    assert value_cell(0.1) == "0.1" and value_cell("x") == "x"
    assert stats_output_path(tmp_path / "my.csv") == tmp_path / "my.csv"
    assert render_stats_csv(StatsResult.of_rows([], [])).startswith("Index,OpType")


def test_stats_rows_carry_rank_and_iteration(trees: dict[str, Path]) -> None:
    result = run_network(trees["stats"], trees["npy"], iteration="all", rank=0)
    assert result.parts == [(0, 0)]
    text = render_stats_csv(result.stats)
    assert text.splitlines()[0].split(",")[5:7] == ["Rank", "Iteration"]


def test_cli_writes_the_stats_report(tmp_path: Path, trees: dict[str, Path]) -> None:
    runner = CliRunner()
    out = tmp_path / "out"
    out.mkdir()
    result = runner.invoke(app, ["-l", str(trees["stats"]), "-r", str(trees["npy"]), "--rank", "0",
                                 "--iteration", "0", "-o", str(out)])
    assert result.exit_code == 0, result.output
    files = list(out.glob("stats_result_*.csv"))
    assert len(files) == 1 and "result:" in result.stdout
    gated = runner.invoke(app, ["-l", str(trees["stats"]), "-r", str(trees["npy"]), "--rank", "0", "--iteration", "0",
                                "-o", str(out), "--gate", "CosineSimilarity>=0.99"])
    # a tensor metric cannot be computed on statistics rows: incomplete (exit 3), never PASSED
    assert gated.exit_code == 3 and "gate it with a statistics metric" in gated.output


def test_tensor_side_md5_when_the_other_recorded_it(tmp_path: Path) -> None:
    from compare.records import Pair, TensorKind, TensorRef
    from compare.stats_table import compare_stats_pair

    data = np.arange(6, dtype=np.float32)
    np.save(tmp_path / "x.npy", data)
    left = TensorRef(op_name="x", kind=TensorKind.OUTPUT, index=0, dtype="float32", format="ND", shape=(6,),
                          path=tmp_path / "statistic.csv", stats={"max": 5.0, "md5": "0" * 32})
    right = TensorRef(op_name="x", kind=TensorKind.OUTPUT, index=0, dtype="float32", format="ND", shape=(6,),
                      path=tmp_path / "x.npy", reader=lambda: data)
    row = compare_stats_pair(Pair(index=0, op_type=None, left_op="x", right_op="x", tensor_id="x:output:0",
                                  left=left, right=right))
    assert row.values["md5"].diff == "different" and row.values["max"].diff == 0
    assert list(row.values) == ["max", "md5"]
    unreadable = TensorRef(op_name="x", kind=TensorKind.OUTPUT, index=0, dtype="float32", format="ND", shape=(6,),
                           path=tmp_path / "gone.npy")
    row = compare_stats_pair(Pair(index=0, op_type=None, left_op="x", right_op="x", tensor_id="x:output:0",
                                  left=left, right=unreadable))
    assert row.status is PairStatus.NOT_COMPARABLE and "golden tensor unreadable" in row.reasons[0]


def test_verdict_column_last_when_asked(trees: dict[str, Path]) -> None:
    """--verdicts: the Verdict column comes last (after FailReason); a call the localisation did
    not judge reads ``not-compared``; without verdicts the header is unchanged."""
    result = run_network(trees["stats"], trees["sync"], iteration=0)
    stats = result.stats
    assert header(stats.stats)[-1] == "FailReason"
    assert header(stats.stats, with_verdict=True)[-2:] == ["FailReason", "Verdict"]
    first = stats.rows[0]
    verdicts = {(first.rank, first.iteration, first.left_op): "origin"}
    lines = list(csv.reader(render_stats_csv(stats, verdicts).splitlines()))
    assert lines[0][-1] == "Verdict"
    by_op = {line[2]: line[-1] for line in lines[1:]}
    assert by_op[first.left_op] == "origin"
    assert {v for op, v in by_op.items() if op != first.left_op} == {"not-compared"}
    assert "Verdict" not in render_stats_csv(stats).splitlines()[0]
