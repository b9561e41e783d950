"""../shared/cases/bad_inputs: no traceback, every broken file named with its problem, the rest
of the network still compared with the reference's numbers."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import shared_path

from compare.runs.folders import run_network
from compare.cli import app
from compare.records import PairStatus

runner = CliRunner()


def _scenario(name: str) -> Path:
    return shared_path("cases", "bad_inputs", name)


def _run(name: str):
    case = _scenario(name)
    return run_network(case / "left", case / "right", case / "fusion.json")


def _reason(result, op: str) -> str:
    return " | ".join("; ".join(r.reasons) for r in result.rows if r.left_op == op)


def _oracle_numbers(name: str) -> dict[str, dict[str, str]]:
    (path,) = (_scenario("oracle") / name).glob("result_*.csv")
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {r["TensorIndex"]: r for r in rows if r["TensorIndex"] != "NaN" and r["CosineSimilarity"] != "NaN"}


def _healthy_rows_agree(name: str, result, skip: set[str] = frozenset()) -> None:
    ours = {r.tensor_id: r for r in result.rows if r.tensor_id}
    for tid, row in _oracle_numbers(name).items():
        if tid in skip or row["MaxAbsoluteError"] in ("nan",):
            continue
        mine = ours[tid]
        assert mine.status is PairStatus.COMPARED, (tid, mine.reasons)
        expected = float(row["MaxAbsoluteError"])
        assert math.isclose(mine.metrics["MaxAbsoluteError"], expected, abs_tol=1e-6, rel_tol=1e-5), tid


def test_truncated_dump_is_a_row_naming_the_truncation() -> None:
    result = _run("truncated_dump")
    reason = _reason(result, "conv1")
    assert "Conv2D.conv1.4.1.1700000000004805" in reason and "truncated" in reason and "1000 missing" in reason
    _healthy_rows_agree("truncated_dump", result)


def test_header_past_end() -> None:
    result = _run("header_past_end")
    reason = _reason(result, "pool1")
    assert "MaxPool.pool1.5.1.1700000000006280" in reason and "header length 164224" in reason
    _healthy_rows_agree("header_past_end", result)


def test_garbage_dumps() -> None:
    result = _run("garbage_dump")
    assert "Eltwise.res2a.9.1.1700000000012376" in _reason(result, "res2a")
    assert "not a valid DumpData" in _reason(result, "res2a")
    assert "nano" in _reason(result, "res2b")
    _healthy_rows_agree("garbage_dump", result)


def test_npy_shape_mismatch_is_refused_not_cropped() -> None:
    result = _run("npy_shape_mismatch")
    rows = {r.tensor_id: r for r in result.rows if r.tensor_id}
    for tid, golden in (("pool1:output:0", "pool1.0.1700000005006377.npy"), ("prob:output:0", "prob.0.1700000005061037.npy")):
        row = rows[tid]
        assert row.status is PairStatus.NOT_COMPARABLE
        text = "; ".join(row.reasons)
        assert golden in text and "golden" in text
    # every tensor whose golden is one of the two bad files is refused the same way (the reference
    # crops pool1 to 12x12 and reports garbage); everything else agrees with the reference
    bad = {r.tensor_id for r in result.rows if r.tensor_id and any(
        g in "; ".join(r.reasons) for g in ("pool1.0.1700000005006377.npy", "prob.0.1700000005061037.npy"))}
    assert {"pool1:output:0", "prob:output:0", "res2a_branch1:input:0"} <= bad
    assert all(rows[t].status is PairStatus.NOT_COMPARABLE for t in bad)
    _healthy_rows_agree("npy_shape_mismatch", result, skip=bad)


def test_bad_names_are_named_in_the_rows() -> None:
    result = _run("bad_names")
    assert "conv1_output_dump.bin" in _reason(result, "conv1")
    assert "MaxPool.pool1.x.y" in _reason(result, "pool1")
    res2b_out = next(r for r in result.rows if r.tensor_id == "res2b:output:0")
    assert "res2b_relu_output0.npy" in "; ".join(res2b_out.reasons)
    _healthy_rows_agree("bad_names", result)


def test_bad_task_type_skips_one_file_not_the_run() -> None:
    result = _run("bad_task_type")  # the reference aborts the whole run (exit 37)
    reason = _reason(result, "res2a")
    assert "Eltwise.res2a.9.1.1700000000012376.9.7.0.0" in reason and "task" in reason
    assert sum(1 for r in result.rows if r) > 50


@pytest.mark.parametrize("name,needle", [
    ("fusion_not_json", "fusion.json"),
    ("empty_dir", "empty_dir"),
    ("only_bad_names", "conv1_output_dump.bin"),
])
def test_cannot_run_scenarios_exit_2_with_diagnosis(name: str, needle: str, tmp_path: Path) -> None:
    case = _scenario(name)
    args = ["-l", str(case / "left"), "-r", str(case / "right"), "-f", str(case / "fusion.json"),
            "-o", str(tmp_path / "r.csv")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert needle in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "r.csv").exists()


def test_every_scenario_runs_through_the_cli_without_traceback(tmp_path: Path) -> None:
    for name in ("truncated_dump", "header_past_end", "garbage_dump", "npy_shape_mismatch", "bad_names",
                 "bad_task_type"):
        case = _scenario(name)
        out = tmp_path / f"{name}.csv"
        result = runner.invoke(app, ["-l", str(case / "left"), "-r", str(case / "right"),
                                     "-f", str(case / "fusion.json"), "-o", str(out)])
        assert result.exit_code == 0, (name, result.output)
        assert out.exists() and "Traceback" not in result.output
