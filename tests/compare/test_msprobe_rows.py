"""msprobe users at home (issue 28, items 1 and 2): msprobe's names, DataName / RequiresGrad / Stack
columns, and non-tensor arguments as rows compared by value (gate ``ArgumentDiff==same``)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from conftest import shared_path
from typer.testing import CliRunner

from compare.cli import app
from compare.records import ARGUMENT_METRIC, MetricRow, MsprobeCells, RowKind
from compare.reports.cells import MSPROBE_COLUMNS, msprobe_metric_order
from compare.reports.network import render_csv
from compare.testing.synthetic_msprobe import CALLS, write_msprobe_dump

runner = CliRunner()
STACK = ["File /venv/lib/python3.11/site-packages/torch/nn/functional.py, line 10, in split, \n return x",
         "File /home/user/model.py, line 42, in forward, \n a, b = torch.split(x, 3, dim=1)",
         "File /home/user/train.py, line 7, in <module>, \n main()"]


def _run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def _changed_calls(value: int) -> tuple:
    """:data:`CALLS` with ``Torch.split``'s split size (a non-tensor argument) set to ``value``."""
    calls = []
    for pt_name, ms_name, sections in CALLS:
        if pt_name == "Torch.split.0.forward":
            sections = {**sections, "input_args": [sections["input_args"][0], {"type": "int", "value": value}]}
        calls.append((pt_name, ms_name, sections))
    return tuple(calls)


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("msrows")
    left = write_msprobe_dump(root / "left")
    same = write_msprobe_dump(root / "same", noise=1e-4)
    changed = write_msprobe_dump(root / "changed", calls=_changed_calls(2))
    folder = left.folders[(0, 0)]
    (folder / "stack.json").write_text(json.dumps({"0": [["Torch.split.0.forward"], STACK]}))
    return left.root, same.root, changed.root


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_msprobe_names_and_columns(trees, tmp_path: Path) -> None:
    left, same, _ = trees
    out = tmp_path / "r.csv"
    result = _run("-l", left, "-r", same, "-o", out)
    assert result.exit_code == 0, result.output
    rows = _rows(out)
    header = list(rows[0])
    assert header[-len(MSPROBE_COLUMNS) - 3:-3] == list(MSPROBE_COLUMNS)
    by_name = {r["LeftName"]: r for r in rows}
    # msprobe's forms: positional, nested list, keyword, parameters, parameters_grad
    for name in ("Functional.conv2d.0.forward.input.0", "Functional.conv2d.0.forward.input.2",
                 "Torch.split.0.forward.input.1", "Torch.split.0.forward.input.dim",
                 "Torch.split.0.forward.output.0.1", "Module.fc.Linear.forward.0.parameters.weight",
                 "Module.fc.Linear.parameters_grad.0.bias", "Functional.relu.0.forward.input.inplace"):
        assert name in by_name, name
        assert by_name[name]["RightName"] == name
    conv = by_name["Functional.conv2d.0.forward.input.0"]
    assert conv["DataName"] == "Functional.conv2d.0.forward.input.0.pt, Functional.conv2d.0.forward.input.0.pt"
    assert conv["TensorIndex"] == "Functional.conv2d.0.forward:input:0"  # vcompare's id stays
    # the None bias and the ints are argument rows, compared by value, in their places
    none = by_name["Functional.conv2d.0.forward.input.2"]
    assert (none["LeftDataType"], none["Value"], none["Result"]) == ("None", "None", "pass")
    names = [r["LeftName"] for r in rows if r["LeftOp"] == "Functional.conv2d.0.forward"]
    assert names[:4] == [f"Functional.conv2d.0.forward.input.{i}" for i in range(4)]
    split = by_name["Torch.split.0.forward.input.1"]
    assert (split["Value"], split["DataName"], split["FailReason"]) == ("3", "NaN", "")
    # the stack cell: the innermost frame outside the frameworks and site-packages
    assert split["Stack"] == "/home/user/model.py:42"
    assert by_name["Functional.relu.0.forward.input.0"]["Stack"] == "NaN"  # no stack recorded


def test_changed_argument_fails_the_gate(trees, tmp_path: Path) -> None:
    left, same, changed = trees
    ok = _run("-l", left, "-r", same, "-o", tmp_path / "ok.csv", "--gate", "ArgumentDiff==same")
    assert ok.exit_code == 0, ok.output
    out, doc = tmp_path / "bad.csv", tmp_path / "bad.json"
    bad = _run("-l", left, "-r", changed, "-o", out, "--json", doc, "--gate", "ArgumentDiff==same")
    assert bad.exit_code == 1, bad.output
    assert "ArgumentDiff = 1.0 violates ArgumentDiff==0.0" in bad.output
    row = next(r for r in _rows(out) if r["LeftName"] == "Torch.split.0.forward.input.1")
    assert row["Value"] == "3 / 2"
    assert row["Result"] == "error"
    assert "argument differs: left int 3, right int 2 (difference 1.0)" in row["FailReason"]
    rows = json.loads(doc.read_text())["rows"]
    found = next(r for r in rows if r.get("msprobe", {}).get("left_name") == "Torch.split.0.forward.input.1")
    assert found["kind"] == "argument"
    assert found["argument"] == {"left_type": "int", "right_type": "int", "left": "3", "right": "2", "same": False,
                                 "diff": 1.0}
    assert found["metrics"][ARGUMENT_METRIC] == 1.0
    # a tensor gate does not make argument rows incomplete (their tensor metrics are undefined)
    tensor_gate = _run("-l", left, "-r", changed, "-o", tmp_path / "t.csv", "--gate", "MaxAbsoluteError<=1")
    assert tensor_gate.exit_code == 0, tensor_gate.output


def test_statistics_trees_have_argument_rows(tmp_path: Path) -> None:
    left = write_msprobe_dump(tmp_path / "l", task="statistics")
    right = write_msprobe_dump(tmp_path / "r", task="statistics", calls=_changed_calls(5))
    out = tmp_path / "s.csv"
    result = _run("-l", left.root, "-r", right.root, "-o", out, "--gate", "ArgumentDiff==same")
    assert result.exit_code == 1, result.output
    rows = _rows(out)
    row = next(r for r in rows if r["LeftName"] == "Torch.split.0.forward.input.1")
    assert row["Value"] == "3 / 5"
    assert next(r for r in rows if r["LeftName"] == "Torch.split.0.forward.input.0")["Value"] == "NaN"


def test_msprobe_metrics_take_msprobe_places() -> None:
    """EucDist and the error ratios (when selected) sit where msprobe's table has them."""
    metrics = ["CosineSimilarity", "MaxAbsoluteError", "MaxRelativeError", "FiveThousandthsErrRatio", "EucDist",
               "OneThousandthErrRatio", "MeanRelativeError"]
    assert msprobe_metric_order(metrics) == ["CosineSimilarity", "EucDist", "MaxAbsoluteError", "MaxRelativeError",
                                             "OneThousandthErrRatio", "FiveThousandthsErrRatio", "MeanRelativeError"]
    row = MetricRow(0, "conv2d", "A", "A", "A:input:0", "float32", "float32", (2,),
                    metrics={m: 0.5 for m in metrics}, msprobe=MsprobeCells("A.input.0", "A.input.0"))
    row.metrics["EucDist"] = 0.25
    lines = render_csv([row], metrics).splitlines()
    header, cells = lines[0].split(","), lines[1].split(",")
    assert header[header.index("CosineSimilarity") + 1] == "EucDist"
    assert cells[header.index("EucDist")] == "0.250000"
    # a table without msprobe rows keeps the order given
    plain = MetricRow(0, "conv2d", "A", "A", "A:input:0", metrics={m: 0.5 for m in metrics})
    assert render_csv([plain], metrics).splitlines()[0].split(",")[8:15] == metrics


def test_argument_row_kind_and_undefined(trees, tmp_path: Path) -> None:
    left, same, _ = trees
    doc = tmp_path / "r.json"
    assert _run("-l", left, "-r", same, "-o", tmp_path / "r.csv", "--json", doc).exit_code == 0
    rows = json.loads(doc.read_text())["rows"]
    arguments = [r for r in rows if r["kind"] == RowKind.ARGUMENT.value]
    assert arguments and all("CosineSimilarity" in r["undefined"] for r in arguments)
    assert all(r["msprobe"]["left_data"] == "" for r in arguments)


# ----------------------------------------------------------------------------------------------
# msprobe's own trees and compare CSVs (../shared/msprobe-real)
# ----------------------------------------------------------------------------------------------

def _msprobe_names(msprobe_real: Path, case: str) -> list[str]:
    (found,) = (msprobe_real / "msprobe_compare" / case / "step0").glob("compare_result_*.csv")
    return [r["NPU Name"] for r in _rows(found)]


@pytest.mark.parametrize(("case", "left", "right"), [("t_L1_perturb", "t_L1_perturb", "t_L1_base"),
                                                     ("s_mix_perturb", "s_mix_perturb", "s_mix_base"),
                                                     ("s_L1_bf16", "s_L1_bf16", "s_L1_base")])
def test_every_msprobe_name_is_a_row(case: str, left: str, right: str, tmp_path: Path) -> None:
    msprobe_real = shared_path("msprobe-real")
    trees = msprobe_real / "trees"
    if not (trees / left).is_dir() or not (msprobe_real / "msprobe_compare" / case).is_dir():
        pytest.skip(f"{msprobe_real} ({case}) not present: msprobe's own trees and CSVs")
    out = tmp_path / "r.csv"
    result = _run("-l", trees / left, "-r", trees / right, "-o", out)
    assert result.exit_code == 0, result.output
    rows = _rows(out)
    ours = {r["LeftName"] for r in rows}
    expected = _msprobe_names(msprobe_real, case)
    assert [n for n in expected if n not in ours] == []
    assert len(rows) == len(expected)
    if case == "t_L1_perturb":
        conv = next(r for r in rows if r["LeftName"] == "Functional.conv2d.0.forward.input.0")
        assert conv["Stack"].endswith("gen_dumps.py:84")
        assert all("gen_dumps.py:" in r["Stack"] for r in rows
                   if r["LeftName"].startswith("Functional.") and ".forward." in r["LeftName"])
        eps = next(r for r in rows if r["LeftName"] == "Functional.layer_norm.0.forward.input.4")
        assert (eps["LeftDataType"], eps["Value"], eps["Result"]) == ("float", "1e-05", "pass")



def test_gate_reads_back_a_saved_msprobe_table(trees, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``vcompare gate`` on a saved msprobe CSV: the msprobe columns are text, argument rows come back."""
    from compare.cli import run

    left, _, changed = trees
    out = tmp_path / "saved.csv"
    assert _run("-l", left, "-r", changed, "-o", out).exit_code == 0
    assert run(["gate", str(out), "--gate", "ArgumentDiff==same"]) == 1
    assert "ArgumentDiff = 1.0 violates" in capsys.readouterr().err
    assert run(["gate", str(out), "--gate", "MaxAbsoluteError<=1"]) == 0


def test_msprobe_columns_in_txt_parquet_junit_and_frame(trees, tmp_path: Path) -> None:
    left, _, changed = trees
    txt, junit = tmp_path / "r.txt", tmp_path / "j.xml"
    result = _run("-l", left, "-r", changed, "-o", txt, "--junit", junit, "--gate", "ArgumentDiff==same")
    assert result.exit_code == 1, result.output
    lines = txt.read_text().splitlines()
    assert all(column in lines[0] for column in MSPROBE_COLUMNS)
    assert any("Torch.split.0.forward.input.1" in line and "3 / 2" in line for line in lines)
    xml = junit.read_text()
    assert 'name="Torch.split.0.forward.input.1"' in xml and "argument: left 3, right 2" in xml
    from compare.reports.frame import frame_of

    row = MetricRow(0, "split", "S", "S", "S:input:1", "int", "int", (), metrics={ARGUMENT_METRIC: 1.0},
                    kind=RowKind.ARGUMENT, msprobe=MsprobeCells("S.input.1", "S.input.1", source="/m.py:3"))
    frame = frame_of([row], ["CosineSimilarity"])
    columns = list(frame.columns)
    assert columns[columns.index("FailReason") - len(MSPROBE_COLUMNS):columns.index("FailReason")] == list(
        MSPROBE_COLUMNS)
    assert frame.Stack.iloc[0] == "/m.py:3"
    pytest.importorskip("pyarrow", reason="parquet needs pyarrow (the parquet extra)")
    import pyarrow.parquet as pq

    out = tmp_path / "r.parquet"
    assert _run("-l", left, "-r", changed, "-o", out).exit_code == 0
    table = pq.read_table(out).to_pylist()
    found = next(r for r in table if r["LeftName"] == "Torch.split.0.forward.input.1")
    assert (found["Kind"], found["LeftValue"], found["RightValue"], found[ARGUMENT_METRIC]) == ("argument", "3", "2",
                                                                                                1.0)
    conv = next(r for r in table if r["LeftName"] == "Functional.conv2d.0.forward.input.0")
    assert conv["LeftDataName"] == "Functional.conv2d.0.forward.input.0.pt" and conv["Kind"] == "tensor"
