"""Every data type of the DumpData spec goes through the whole pipeline (NPU vs NPU and by name)."""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from compare.records import PairStatus
from compare.runs.folders import run_network
from convert.codecs.dtypes import DataType
from convert.codecs.dumpwrite import TensorSpec, write_dump

TS = 1700000000000000


def _pair_dirs(tmp_path: Path, left: TensorSpec, right: TensorSpec, name: str = "op1") -> tuple[Path, Path]:
    dirs = []
    for side, spec in (("l", left), ("r", right)):
        folder = tmp_path / side
        folder.mkdir(exist_ok=True)
        write_dump(folder / f"Add.{name}.1.1.{TS}", inputs=[spec], outputs=[spec], op_name=name)
        dirs.append(folder)
    return dirs[0], dirs[1]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
                                   "uint32", "int64", "uint64", "bfloat16"])
def test_numeric_dtypes_are_compared(tmp_path: Path, dtype: str) -> None:
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(1)
    base = rng.integers(1, 100, size=(2, 3, 4)).astype(np.float32)
    left, right = _pair_dirs(tmp_path, TensorSpec(base.astype(np_dtype)), TensorSpec((base + 1).astype(np_dtype)))
    result = run_network(left, right)
    rows = [r for r in result.rows if r.tensor_id]
    assert [r.tensor_id for r in rows] == ["op1:input:0", "op1:output:0"]
    for row in rows:
        assert row.status is PairStatus.COMPARED, row.reasons
        assert row.left_dtype == dtype
        assert row.metrics["MaxAbsoluteError"] == pytest.approx(1.0)
        assert row.shape == (2, 3, 4)


def test_bool_compares_cosine_only(tmp_path: Path) -> None:
    data = np.array([True, False, True, True])
    left, right = _pair_dirs(tmp_path, TensorSpec(data), TensorSpec(data))
    row = next(r for r in run_network(left, right).rows if r.tensor_id)
    assert row.left_dtype == "bool"
    assert row.metrics["CosineSimilarity"] == pytest.approx(1.0)
    assert row.metrics["MaxAbsoluteError"] is None
    assert any("bool" in reason for reason in row.reasons)


def test_uint1_is_unpacked(tmp_path: Path) -> None:
    bits = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1], dtype=np.uint8)
    spec = TensorSpec(bits, data_type=int(DataType.DT_UINT1))
    left, right = _pair_dirs(tmp_path, spec, spec)
    row = next(r for r in run_network(left, right).rows if r.tensor_id)
    assert row.left_dtype == "uint1" and row.status is PairStatus.COMPARED
    assert row.metrics["MaxAbsoluteError"] == 0.0


def test_complex_real_and_imaginary_parts_with_reason(tmp_path: Path) -> None:
    a = np.array([1 + 2j, 3 - 1j, -2 + 0.5j], dtype=np.complex64)
    left, right = _pair_dirs(tmp_path, TensorSpec(a), TensorSpec(a + 1j))  # imaginary parts differ only
    row = next(r for r in run_network(left, right).rows if r.tensor_id)
    assert row.left_dtype == "complex64" and row.shape == (3,)
    assert row.metrics["MaxAbsoluteError"] == 1.0  # the imaginary parts count (was 0.0: real part only)
    assert any("(real, imaginary) pairs" in reason for reason in row.reasons)


def test_unknown_data_type_is_a_row_with_reason(tmp_path: Path) -> None:
    raw = np.frombuffer(b"abcdefgh", dtype=np.uint8)
    spec = TensorSpec(raw, data_type=int(DataType.DT_STRING))
    ok = TensorSpec(np.ones(4, np.float32))
    for side, first in (("l", spec), ("r", spec)):
        folder = tmp_path / side
        folder.mkdir()
        write_dump(folder / f"Add.op1.1.1.{TS}", inputs=[ok], outputs=[first], op_name="op1")
    result = run_network(tmp_path / "l", tmp_path / "r")
    rows = {r.tensor_id: r for r in result.rows if r.tensor_id}
    assert rows["op1:input:0"].status is PairStatus.COMPARED  # the healthy tensor of the op is still compared
    bad = rows["op1:output:0"]
    assert bad.status is PairStatus.NOT_COMPARABLE
    assert "DT_STRING" in "; ".join(bad.reasons)


def test_dump_converted_from_npy_pairs_with_its_source(tmp_path: Path) -> None:
    """Users need it, the reference refuses it: a dump folder vs the .npy folder it came from."""
    golden = tmp_path / "npy"
    golden.mkdir()
    dump = tmp_path / "dump"
    dump.mkdir()
    rng = np.random.default_rng(3)
    for k, name in enumerate(["conv1", "pool1", "fc"]):
        array = rng.standard_normal((1, 4, 2, 2)).astype(np.float32)
        np.save(golden / f"{name}.0.{TS + k}.npy", array)
        write_dump(dump / f"Op.{name}.{k}.{TS + k}", outputs=[TensorSpec(array, format="NCHW")], op_name=name)
    result = run_network(dump, golden)
    rows = [r for r in result.rows if r.tensor_id]
    assert {r.tensor_id for r in rows} == {"conv1:output:0", "pool1:output:0", "fc:output:0"}
    assert all(r.status is PairStatus.COMPARED and r.metrics["MaxAbsoluteError"] == 0.0 for r in rows)
    assert all(math.isclose(r.metrics["CosineSimilarity"], 1.0) for r in rows)


def test_bfloat16_golden_npy_is_decoded(tmp_path: Path) -> None:
    """np.save writes bfloat16 as a bare 2-byte void; the golden loader must read it as bfloat16."""
    values = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    for side in ("l", "r"):
        (tmp_path / side).mkdir()
        np.save(tmp_path / side / f"conv1.0.{TS}.npy", values.astype(ml_dtypes.bfloat16))
    row = next(r for r in run_network(tmp_path / "l", tmp_path / "r").rows if r.tensor_id)
    assert row.status is PairStatus.COMPARED, row.reasons
    assert row.left_dtype == "bfloat16" and row.metrics["MaxAbsoluteError"] == 0.0
