"""The narrow device data types end to end: an Ascend dump folder of fp8, HiFloat8, MX fp4 with its
e8m0 scales and packed int4 against float32 .npy goldens, through the command line.

The expected metrics are computed in float64 (``compare.testing.naive``) from the tensors decoded by
the independent decoders of ``tests/narrow_reference.py`` -- never by the product's decoder.
"""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import narrow_reference as ref
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.testing.naive import reference_metrics
from convert.codecs.dtypes import DataType
from convert.codecs.dumpfile import read_header
from convert.codecs.dumpwrite import TensorSpec, write_dump

TS = 1700000000000000
SCALAR_METRICS = ("CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError", "RelativeEuclideanDistance",
                  "KullbackLeiblerDivergence", "MeanAbsoluteError", "RootMeanSquareError", "MaxRelativeError",
                  "MeanRelativeError")


def _codes(name: str, array: np.ndarray) -> np.ndarray:
    """The bit patterns of an ml_dtypes array (the low bits of each byte)."""
    return np.asarray(array).view(np.uint8) & ((1 << ref.KIND_BY_NAME[name].bits) - 1)


def _network(tmp_path: Path) -> dict[str, tuple[str, np.ndarray, np.ndarray]]:
    """Write the folders; return ``{op: (dtype name, left codes, golden)}``."""
    rng = np.random.default_rng(11)
    npu, golden = tmp_path / "npu", tmp_path / "golden"
    npu.mkdir()
    golden.mkdir()
    truth = rng.standard_normal((4, 32)).astype(np.float32)
    scales = np.array([[0.5], [1.0], [2.0], [4.0]], np.float32)  # one e8m0 scale per block of 32
    elements = (truth / scales).astype(ml_dtypes.float4_e2m1fn)
    hif8 = rng.integers(0, 256, (4, 8)).astype(np.uint8)
    hif8[np.isin(hif8, [0x80, 0x6F, 0xEF])] = 0x08  # no NaN/Inf: every metric is a number
    int4 = rng.integers(-8, 8, (6, 5)).astype(ml_dtypes.int4)  # 30 elements: 15 packed bytes
    tensors = {
        "fp8_e4m3": ("float8_e4m3fn", TensorSpec(truth.astype(ml_dtypes.float8_e4m3fn)), truth),
        "fp8_e5m2": ("float8_e5m2", TensorSpec(truth.astype(ml_dtypes.float8_e5m2)), truth),
        "hif8": ("hifloat8", TensorSpec(hif8, data_type=DataType.DT_HIFLOAT8),
                 ref.decode("hifloat8", hif8).reshape(4, 8).astype(np.float32) * np.float32(1.01)),
        "mx_elements": ("float4_e2m1", TensorSpec(elements), truth / scales),
        "mx_scales": ("float8_e8m0", TensorSpec(np.array([[0.5], [1.0], [2.0], [8.0]], np.float32)
                                                .astype(ml_dtypes.float8_e8m0fnu)), scales),
        "w_int4": ("int4", TensorSpec(int4), np.asarray(int4, np.float32) + rng.uniform(-0.4, 0.4, (6, 5)).astype(np.float32)),
    }
    out: dict[str, tuple[str, np.ndarray, np.ndarray]] = {}
    for k, (op, (name, spec, gold)) in enumerate(tensors.items()):
        write_dump(npu / f"Op.{op}.{k}.{TS + k}", outputs=[spec], op_name=op)
        np.save(golden / f"{op}.0.{TS + k}.npy", np.asarray(gold, np.float32))
        array = np.asarray(spec.array)
        codes = array if array.dtype == np.uint8 else _codes(name, array)
        out[op] = (name, codes, np.asarray(gold, np.float32))
    return out


def _pairs(cell: str) -> list[float]:
    return [float(v) for v in re.findall(r"[-+]?[0-9.]+(?:e[-+]?[0-9]+)?", cell)]


def test_narrow_types_against_float32_goldens(tmp_path: Path) -> None:
    ops = _network(tmp_path)
    # the int4 tensor is stored packed: 30 elements in 15 bytes
    assert read_header(tmp_path / "npu" / f"Op.w_int4.5.{TS + 5}").outputs[0].size == 15
    out = tmp_path / "result.csv"
    result = CliRunner().invoke(app, ["-l", str(tmp_path / "npu"), "-r", str(tmp_path / "golden"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out, keep_default_na=False)
    rows = table[table.TensorIndex != ""]
    assert sorted(rows.TensorIndex) == sorted(f"{op}:output:0" for op in ops)  # one row per tensor
    for _, row in rows.iterrows():
        op = row.LeftOp
        name, codes, gold = ops[op]
        assert row.LeftDataType == name and row.RightDataType == "float32"
        assert row.FailReason == "", (op, row.FailReason)
        expected = reference_metrics(ref.decode(name, codes), gold.astype(np.float64))
        for metric in SCALAR_METRICS:
            # printed with 6 decimals: within half a unit of the last place (plus float noise)
            assert float(row[metric]) == pytest.approx(expected[metric], abs=5.1e-7), (op, metric)
        mean_l, std_l, mean_r, std_r = _pairs(row.StandardDeviation)
        assert (mean_l, std_l, mean_r, std_r) == pytest.approx(expected["StandardDeviation"], abs=5.1e-4), op


def test_mx_scales_are_compared_as_their_own_values(tmp_path: Path) -> None:
    """e8m0 value = 2**(bits - 127): the scales [0.5, 1, 2, 8] vs the golden [0.5, 1, 2, 4]."""
    ops = _network(tmp_path)
    name, codes, _ = ops["mx_scales"]
    assert codes.reshape(-1).tolist() == [126, 127, 128, 130]
    out = tmp_path / "result.csv"
    result = CliRunner().invoke(app, ["-l", str(tmp_path / "npu"), "-r", str(tmp_path / "golden"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    row = pd.read_csv(out, keep_default_na=False).set_index("LeftOp").loc["mx_scales"]
    assert row.LeftDataType == "float8_e8m0" and float(row.MaxAbsoluteError) == 4.0
