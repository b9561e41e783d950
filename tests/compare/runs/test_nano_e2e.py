"""End to end: a dump folder of nano files (named like offline dumps) compared against .npy
goldens, ordinary binary dumps and nano dumps -- one row per tensor, metrics equal to numpy's in
float64, a broken nano file a row with its diagnosis; through the API and the command line."""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.records import PairStatus
from compare.runs.folders import run_network
from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.codecs.nano_write import NanoTensorSpec, write_nano

runner = CliRunner()

#: (op type, op name, task id, left output dtype)
OPS = [("Conv2D", "conv1", 1, np.float16), ("Relu", "relu1", 2, np.float32), ("MatMul", "fc1", 3, ml_dtypes.bfloat16)]
TS = 1700000000000100
BROKEN = "Add.add1.4.1.1700000000000104"


def _file_name(op_type: str, name: str, task: int) -> str:
    return f"{op_type}.{name}.{task}.1.{TS + task}"


def _tensors(seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per op: (input, golden output) in float32."""
    rng = np.random.default_rng(seed)
    return {name: (rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((2, 3, 4)).astype(np.float32))
            for _, name, _, _ in OPS}


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    """left: nano dumps (+ one truncated nano file); right_npy / right_bin / right_nano: the goldens."""
    golden = _tensors(0)
    noise = np.random.default_rng(1)
    paths = {k: tmp_path / k for k in ("left", "right_npy", "right_bin", "right_nano")}
    for p in paths.values():
        p.mkdir()
    for op_type, name, task, dtype in OPS:
        x, y = golden[name]
        npu_y = (y + noise.standard_normal(y.shape).astype(np.float32) * 0.01).astype(dtype)
        npu_x = x.astype(dtype)
        file_name = _file_name(op_type, name, task)
        write_nano(paths["left"] / file_name, inputs=[npu_x],
                   outputs=[NanoTensorSpec(npu_y, origin_name=f"net/{name}")])
        np.save(paths["right_npy"] / f"{name}.0.{TS + task}.npy", y)
        write_dump(paths["right_bin"] / file_name, inputs=[x], outputs=[TensorSpec(y)], op_name=name)
        write_nano(paths["right_nano"] / file_name, inputs=[x], outputs=[y])
    broken = write_nano(paths["left"] / BROKEN, outputs=[np.ones(8, np.float32)])
    broken.write_bytes(broken.read_bytes()[:-4])
    y = np.ones(8, np.float32)
    np.save(paths["right_npy"] / f"add1.0.{TS + 4}.npy", y)
    write_dump(paths["right_bin"] / BROKEN, outputs=[y], op_name="add1")
    write_nano(paths["right_nano"] / BROKEN, outputs=[y])
    return paths


def _left_arrays() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The left side's values, as written (float64)."""
    golden = _tensors(0)
    noise = np.random.default_rng(1)
    out = {}
    for _, name, _, dtype in OPS:
        x, y = golden[name]
        npu_y = (y + noise.standard_normal(y.shape).astype(np.float32) * 0.01).astype(dtype)
        out[name] = (x.astype(dtype).astype(np.float64), npu_y.astype(np.float64))
    return out


def _expected(left: np.ndarray, right: np.ndarray) -> dict[str, float]:
    a, b = left.astype(np.float64).ravel(), right.astype(np.float64).ravel()
    return {
        "CosineSimilarity": float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))),
        "MaxAbsoluteError": float(np.max(np.abs(a - b))),
        "MeanAbsoluteError": float(np.mean(np.abs(a - b))),
        "RootMeanSquareError": float(np.sqrt(np.mean((a - b) ** 2))),
    }


@pytest.mark.parametrize("right, with_inputs", [("right_npy", False), ("right_bin", True), ("right_nano", True)])
def test_nano_left_side_against_every_right_side(folders: dict[str, Path], right: str, with_inputs: bool) -> None:
    result = run_network(folders["left"], folders[right])
    rows = {r.tensor_id: r for r in result.rows if r.tensor_id}
    kinds = ("input", "output") if with_inputs else ("output",)
    expected_ids = {f"{name}:{kind}:0" for _, name, _, _ in OPS for kind in kinds}
    assert expected_ids <= set(rows)
    left, golden = _left_arrays(), _tensors(0)
    for _, name, _, _ in OPS:
        for kind, position in (("input", 0), ("output", 1)):
            if kind not in kinds:
                continue
            row = rows[f"{name}:{kind}:0"]
            assert row.status is PairStatus.COMPARED, row.reasons
            for metric, value in _expected(left[name][position], golden[name][position]).items():
                assert math.isclose(row.metrics[metric], value, rel_tol=1e-9, abs_tol=1e-12), (name, kind, metric)
    broken = [r for r in result.rows if r.left_op == "add1"]
    assert broken and all(r.status is not PairStatus.COMPARED for r in broken)
    reason = " ".join(" ".join(r.reasons) for r in broken)
    assert BROKEN in reason and "nano dump: truncated" in reason and "4 missing" in reason


def test_nano_on_the_right_side_only(folders: dict[str, Path]) -> None:
    result = run_network(folders["right_bin"], folders["right_nano"])
    rows = [r for r in result.rows if r.tensor_id]
    assert len(rows) == 2 * len(OPS) + 1
    assert all(r.status is PairStatus.COMPARED for r in rows)
    assert all(r.metrics["MaxAbsoluteError"] == 0.0 and r.metrics["CosineSimilarity"] == pytest.approx(1.0)
               for r in rows)


@pytest.mark.parametrize("version", ["1", "2"])
def test_cli_reads_nano_whatever_the_dump_version(folders: dict[str, Path], tmp_path: Path, version: str) -> None:
    out = tmp_path / "result.csv"
    result = runner.invoke(app, ["-l", str(folders["left"]), "-r", str(folders["right_npy"]), "-v", version,
                                 "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    df = pd.read_csv(out)
    compared = df.dropna(subset=["CosineSimilarity"])
    assert sorted(compared.TensorIndex) == sorted(f"{name}:output:0" for _, name, _, _ in OPS)
    assert dict(zip(compared.LeftOp, compared.LeftDataType)) == {"conv1": "float16", "relu1": "float32",
                                                                "fc1": "bfloat16"}
    left, golden = _left_arrays(), _tensors(0)
    for row in compared.itertuples():
        expected = _expected(left[row.LeftOp][1], golden[row.LeftOp][1])
        assert row.CosineSimilarity == pytest.approx(expected["CosineSimilarity"], abs=1e-6)
        assert row.MaxAbsoluteError == pytest.approx(expected["MaxAbsoluteError"], abs=1e-6)
    (broken,) = df[df.LeftOp == "add1"].itertuples()
    assert "nano dump: truncated" in broken.FailReason and BROKEN in broken.FailReason


def test_undecodable_type_is_one_row_and_an_unknown_code_the_operator_row(tmp_path: Path) -> None:
    from convert.codecs.nano import NanoDataType

    left, right = tmp_path / "left", tmp_path / "right"
    left.mkdir()
    right.mkdir()
    write_nano(left / "Cast.cast1.1.1.1700000000000001",
               outputs=[NanoTensorSpec(np.zeros(8, np.uint8), data_type=NanoDataType.STRING), np.ones(3, np.float32)])
    odd = write_nano(left / "Add.add1.2.1.1700000000000002", outputs=[np.ones(3, np.float32)])
    data = bytearray(odd.read_bytes())
    data[8 + 8 + 12 + 12] = 5  # output 0's data type: a code no graph version defines
    odd.write_bytes(bytes(data))
    np.save(right / "cast1.0.1700000000000001.npy", np.zeros(8, np.float32))
    np.save(right / "cast1.1.1700000000000001.npy", np.full(3, 2.0, np.float32))
    np.save(right / "add1.0.1700000000000002.npy", np.ones(3, np.float32))
    result = run_network(left, right)
    rows = {r.tensor_id: r for r in result.rows if r.tensor_id}
    assert rows["cast1:output:0"].status is not PairStatus.COMPARED
    assert "data type DT_STRING (13) of output 0 cannot be decoded" in " ".join(rows["cast1:output:0"].reasons)
    assert rows["cast1:output:1"].status is PairStatus.COMPARED
    assert rows["cast1:output:1"].metrics["MaxAbsoluteError"] == 1.0
    (add,) = [r for r in result.rows if r.left_op == "add1"]
    assert "output 0 has data type code 5, which is not a graph (ge::DataType) code" in " ".join(add.reasons)
