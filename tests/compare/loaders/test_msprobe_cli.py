"""msprobe dumps end to end through the command line (typer's runner): one row per tensor, exact metrics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.loaders import load_run
from compare.records import TensorKind
from compare.testing import naive
from compare.testing.synthetic_msprobe import write_msprobe_dump

runner = CliRunner()
TENSORS = 19  # tensors of compare.testing.synthetic_msprobe.CALLS
ROWS = TENSORS + 5  # and its 5 non-tensor arguments (rows of their own, compared by value)


def _run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    base = tmp_path_factory.mktemp("msprobe")
    return {
        "pt": write_msprobe_dump(base / "pt"),
        "pt_noisy": write_msprobe_dump(base / "pt_noisy", noise=1e-3, seed=1),
        "ms_noisy": write_msprobe_dump(base / "ms_noisy", framework="mindspore", noise=1e-3, seed=1),
        "stats": write_msprobe_dump(base / "stats", task="statistics", noise=1e-3, seed=1),
    }


def test_pytorch_vs_pytorch_exact_metrics(dumps, tmp_path: Path) -> None:
    out, js = tmp_path / "r.csv", tmp_path / "r.json"
    result = _run("-l", dumps["pt"].root, "-r", dumps["pt_noisy"].root, "-o", out, "--json", js)
    assert result.exit_code == 0, result.output
    rows = json.loads(js.read_text())["rows"]
    assert len(rows) == ROWS and all(r["status"] == "compared" for r in rows)
    left, right = dumps["pt"], dumps["pt_noisy"]
    run = load_run(left.root)
    for row in rows:
        if row["kind"] == "argument":
            assert row["argument"]["same"] and row["metrics"]["ArgumentDiff"] == 0.0
            continue
        op, kind, index = row["tensor_id"].rsplit(":", 2)
        name = run.ops[op].tensor(TensorKind(kind), int(index)).path.name
        x, y = naive.as_f64(left.arrays[name]), naive.as_f64(right.arrays[name])
        assert row["metrics"]["CosineSimilarity"] == pytest.approx(naive.cosine(x, y), rel=1e-12, abs=1e-15), name
        assert row["metrics"]["MaxAbsoluteError"] == pytest.approx(naive.max_abs(x, y), rel=1e-12), name
    assert len(pd.read_csv(out)) == ROWS


def test_pytorch_vs_mindspore_pairs_by_api_rung(dumps, tmp_path: Path) -> None:
    out, js = tmp_path / "x.csv", tmp_path / "x.json"
    result = _run("-l", dumps["pt"].root, "-r", dumps["ms_noisy"].root, "-o", out, "--json", js)
    assert result.exit_code == 0, result.output
    assert "4 msprobe call(s) matched by API name" in result.output
    rows = json.loads(js.read_text())["rows"]
    assert len(rows) == ROWS and all(r["status"] == "compared" for r in rows)
    pairs = {(r["left_op"], r["right_op"]) for r in rows}
    assert ("Torch.matmul.0.forward", "Mint.matmul.0.forward") in pairs
    assert ("Module.fc.Linear.parameters_grad.0", "Cell.fc.Dense.parameters_grad.0") in pairs
    matmul = next(r for r in rows if r["tensor_id"] == "Torch.matmul.0.forward:input:0")
    x = naive.as_f64(dumps["pt"].arrays["Torch.matmul.0.forward.input.0.pt"])
    y = naive.as_f64(dumps["ms_noisy"].arrays["Mint.matmul.0.forward.input.0.npy"])
    assert matmul["metrics"]["CosineSimilarity"] == pytest.approx(naive.cosine(x, y), rel=1e-12)


def test_statistics_dump_against_tensor_dump(dumps, tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    result = _run("-l", dumps["stats"].root, "-r", dumps["pt"].root, "-o", out)
    assert result.exit_code == 0, result.output
    assert "statistics comparison" in result.output
    df = pd.read_csv(out)
    assert len(df) == ROWS
    row = df[df.TensorIndex == "Functional.relu.0.forward:output:0"].iloc[0]
    record = json.loads((dumps["stats"].folders[(0, 0)] / "dump.json").read_text())
    recorded = record["data"]["Functional.relu.0.forward"]["output"][0]
    assert row.LeftMax == pytest.approx(recorded["Max"])
    assert row.RightMax == pytest.approx(float(dumps["pt"].arrays["Functional.relu.0.forward.output.0.pt"].max()))


def test_hostile_tree_gives_rows_not_a_crash(tmp_path: Path, dumps) -> None:
    dump = write_msprobe_dump(tmp_path / "h")
    path = dump.folders[(0, 0)] / "dump.json"
    top = json.loads(path.read_text())
    top["data"]["Functional.relu.0.forward"]["input_args"][0]["data_name"] = "../../../../etc/passwd"
    path.write_text(json.dumps(top))
    out = tmp_path / "h.csv"
    result = _run("-l", dump.root, "-r", dumps["pt"].root, "-o", out)
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out)
    bad = df[df.TensorIndex == "Functional.relu.0.forward:input:0"].iloc[0]
    assert "refused: not a file name inside dump_tensor_data" in bad.FailReason
    assert len(df) == ROWS


def test_bad_json_is_an_error_message(tmp_path: Path, dumps) -> None:
    dump = write_msprobe_dump(tmp_path / "b")
    (dump.folders[(0, 0)] / "dump.json").write_text('{"task": "tensor", "data": {"x": [}')
    result = _run("-l", dump.root, "-r", dumps["pt"].root, "-o", tmp_path / "b.csv")
    assert result.exit_code == 2
    assert "not valid JSON" in result.output and "Traceback" not in result.output


def test_msprobe_against_a_golden_npy_folder(tmp_path: Path, dumps) -> None:
    golden = tmp_path / "golden"
    golden.mkdir()
    relu = dumps["pt"].arrays["Functional.relu.0.forward.output.0.pt"]
    np.save(golden / "Functional.relu.0.forward.0.1700000000000000.npy", relu)
    np.save(golden / "conv1.0.1700000000000000.npy", np.ones(3, np.float32))
    out = tmp_path / "g.csv"
    result = _run("-l", dumps["pt"].root, "-r", golden, "-o", out)
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out)
    compared = df[df.RightOp == "Functional.relu.0.forward"]
    assert len(compared) == 1 and compared.CosineSimilarity.iloc[0] == pytest.approx(1.0)
    assert (df[df.LeftOp == "*"].RightOp == "conv1").all()
    assert (df.RightOp == "*").sum() >= 5  # msprobe outputs without a golden file are rows, never dropped
