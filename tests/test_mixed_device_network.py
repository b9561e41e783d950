"""Issue 19's acceptance: one network mixing fp8, MX (fp4 elements + e8m0 scales) and int4 tensors,
written as ordinary binary dumps, as nano dumps and as FFTS+ slice files, against float32 goldens.

Every tensor must come out as exactly one row (nothing lost, nothing merged away), every row
compared, and every printed metric within print precision of a float64 reference computed from the
independent decoders of ``tests/narrow_reference.py`` (never the product's decoder).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import narrow_reference as ref
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.testing.naive import reference_metrics
from compare.testing.synthetic_ffts import write_sliced_op
from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.codecs.nano_write import NanoTensorSpec, write_nano

TS = 1710000000000000
SCALAR_METRICS = ("CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError", "RelativeEuclideanDistance",
                  "KullbackLeiblerDivergence", "MeanAbsoluteError", "RootMeanSquareError", "MaxRelativeError",
                  "MeanRelativeError")


@dataclass(frozen=True)
class Expected:
    """One output tensor of the network: its report type name, its bit patterns and its golden."""

    dtype: str
    codes: np.ndarray
    golden: np.ndarray
    source: str  # "binary" | "nano" | "ffts"


def _codes(name: str, array: np.ndarray) -> np.ndarray:
    return np.asarray(array).view(np.uint8) & ((1 << ref.KIND_BY_NAME[name].bits) - 1)


def _network(tmp_path: Path) -> dict[str, Expected]:
    rng = np.random.default_rng(19)
    npu, golden = tmp_path / "npu", tmp_path / "golden"
    npu.mkdir()
    golden.mkdir()
    truth = rng.standard_normal((4, 32)).astype(np.float32)
    scales = np.array([[0.5], [1.0], [2.0], [4.0]], np.float32)
    out: dict[str, Expected] = {}

    def golden_file(op: str, k: int, gold: np.ndarray) -> None:
        np.save(golden / f"{op}.0.{TS + k}.npy", np.asarray(gold, np.float32))

    # ordinary binary dumps: fp8, MX fp4 + e8m0 scales, packed int4
    fp8 = truth.astype(ml_dtypes.float8_e4m3fn)
    mx = (truth / scales).astype(ml_dtypes.float4_e2m1fn)
    e8m0 = np.array([[0.5], [1.0], [2.0], [8.0]], np.float32).astype(ml_dtypes.float8_e8m0fnu)
    int4 = rng.integers(-8, 8, (6, 5)).astype(ml_dtypes.int4)
    binary = {
        "bin_fp8": ("float8_e4m3fn", fp8, truth),
        "bin_mx_elements": ("float4_e2m1", mx, truth / scales),
        "bin_mx_scales": ("float8_e8m0", e8m0, scales),
        "bin_int4": ("int4", int4, np.asarray(int4, np.float32) + rng.uniform(-0.4, 0.4, (6, 5)).astype(np.float32)),
    }
    for k, (op, (name, array, gold)) in enumerate(binary.items()):
        write_dump(npu / f"Op.{op}.{k}.{TS + k}", outputs=[TensorSpec(array)], op_name=op)
        golden_file(op, k, gold)
        out[op] = Expected(name, _codes(name, array), np.asarray(gold, np.float32), "binary")

    # nano dumps: fp8 e5m2 and packed int4 outputs of one op, MX fp4 of another
    e5m2 = (truth * 1.5).astype(ml_dtypes.float8_e5m2)
    nano_int4 = rng.integers(-8, 8, (3, 7)).astype(ml_dtypes.int4)
    write_nano(npu / f"Op.nano_pair.10.1.{TS + 10}", outputs=[NanoTensorSpec(e5m2), NanoTensorSpec(nano_int4)])
    np.save(golden / f"nano_pair.0.{TS + 10}.npy", truth * 1.5)
    np.save(golden / f"nano_pair.1.{TS + 10}.npy", np.asarray(nano_int4, np.float32) + 0.25)
    out["nano_pair:0"] = Expected("float8_e5m2", _codes("float8_e5m2", e5m2), truth * 1.5, "nano")
    out["nano_pair:1"] = Expected("int4", _codes("int4", nano_int4), np.asarray(nano_int4, np.float32) + 0.25, "nano")
    nano_mx = (truth[:2] / 2).astype(ml_dtypes.float4_e2m1fn)
    write_nano(npu / f"Op.nano_mx.11.1.{TS + 11}", outputs=[NanoTensorSpec(nano_mx)])
    golden_file("nano_mx", 11, truth[:2] / 2)
    out["nano_mx"] = Expected("float4_e2m1", _codes("float4_e2m1", nano_mx), truth[:2] / 2, "nano")

    # FFTS+ slice files: an fp8 output cut on axis 0 in three pieces, merged into one tensor
    full = (rng.standard_normal((9, 16)) * 3).astype(ml_dtypes.float8_e4m3fn)
    write_sliced_op(npu, full, (2, 3, 4), 0, name="ffts_fp8", op_type="MatMul",
                    timestamps=(TS + 20, TS + 21, TS + 22))
    gold = np.asarray(full, np.float32) * np.float32(1.02)
    golden_file("ffts_fp8", 20, gold)
    out["ffts_fp8"] = Expected("float8_e4m3fn", _codes("float8_e4m3fn", full), gold, "ffts")
    return out


def _run(tmp_path: Path) -> pd.DataFrame:
    out = tmp_path / "result.csv"
    result = CliRunner().invoke(app, ["-l", str(tmp_path / "npu"), "-r", str(tmp_path / "golden"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out, keep_default_na=False)
    return table[table.TensorIndex.str.contains(":output:")]


def _key(row: pd.Series) -> str:
    op, _, index = row.TensorIndex.split(":")
    return f"{op}:{index}" if op == "nano_pair" else op


def test_one_row_per_tensor_nothing_lost(tmp_path: Path) -> None:
    expected = _network(tmp_path)
    rows = _run(tmp_path)
    assert sorted(_key(r) for _, r in rows.iterrows()) == sorted(expected)
    assert {e.source for e in expected.values()} == {"binary", "nano", "ffts"}
    ffts = rows[rows.TensorIndex.str.startswith("ffts_fp8:")]
    assert ffts.Shape.tolist() == ["[144]"]  # the three slices (2, 3 and 4 rows of 16) merged into one tensor


def test_every_metric_within_print_precision_of_float64(tmp_path: Path) -> None:
    expected = _network(tmp_path)
    for _, row in _run(tmp_path).iterrows():
        e = expected[_key(row)]
        assert row.LeftDataType == e.dtype, row.TensorIndex
        assert "cannot" not in row.FailReason and "not compared" not in row.FailReason, row.FailReason
        want = reference_metrics(ref.decode(e.dtype, e.codes), e.golden.astype(np.float64))
        for metric in SCALAR_METRICS:
            assert float(row[metric]) == pytest.approx(want[metric], abs=5.1e-7), (row.TensorIndex, metric)
