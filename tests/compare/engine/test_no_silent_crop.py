"""Issue 12, numerics: no silent crop, true shapes in the Shape column, bool RED, complex parts.

- A left tensor with more elements than its golden is never cut down unless the extra elements
  are the padding of a device layout that was converted (both engine paths, by name and ``-f``).
- The Shape column shows the tensor's true shape (``[]`` for 0-d), except for the reference's
  flat ``[n]`` of unconverted data against reference golden files (checked against its reports).
- bool vs bool: RelativeEuclideanDistance is 0 when the golden has no True.
- complex: real and imaginary parts are both compared (interleaved pairs), checked against an
  independent float64 twin.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_path

from compare.engine import EngineOptions, compare_pairs
from compare.kernels import Note, compare_arrays
from compare.records import MetricRow, PairStatus
from compare.reports.cells import shape_cell
from compare.reports.network import render_csv
from compare.runs.folders import run_network
from compare.runs.loading import load_and_pair
from compare.testing.naive import close, reference_metrics
from compare.testing.synthetic import make_network
from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.layouts import LayoutError, prepare_pair
from convert.layouts.lazy import plan_pair

TS = 1710000000000000
ENGINE_PATHS = [pytest.param(True, id="zero-copy"), pytest.param(False, id="prepare_pair")]


def _ms_name(op_type: str, op: str, k: int, dtype: str, kind: str = "output", slot: int = 0) -> str:
    return f"{op_type}.{op}.0.0.{TS + k}.{kind}.{slot}.DefaultFormat.{dtype}.npy"


def _ms_folders(tmp_path: Path, tensors: dict[str, tuple[np.ndarray, np.ndarray]]) -> tuple[Path, Path]:
    """Two flat MindSpore npy folders, one output tensor per op: ``{name: (left, right)}``."""
    left, right = tmp_path / "left", tmp_path / "right"
    left.mkdir()
    right.mkdir()
    for k, (name, (a, b)) in enumerate(tensors.items()):
        dtype = {"b": "Bool", "c": "Complex64"}.get(a.dtype.kind, "Float32")
        file = _ms_name("Op", name, k, dtype)
        np.save(left / file, a)
        np.save(right / file, b)
    return left, right


def _rows(left: Path, right: Path, fast: bool, rule: Path | None = None) -> dict[str, MetricRow]:
    *_, pairing = load_and_pair(left, right, rule)
    rows = compare_pairs(pairing.pairs, EngineOptions(fast=fast, workers=1))
    return {r.tensor_id: r for r in rows if r.tensor_id}


# --------------------------------------------------------------------------------------------
# Silent crop


@pytest.mark.parametrize("fast", ENGINE_PATHS)
def test_by_name_larger_left_is_not_cropped(tmp_path: Path, fast: bool) -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal(640).astype(np.float32)
    left, right = _ms_folders(tmp_path, {
        "fc1.weight": (w.reshape(20, 32), w[:600].copy()),  # a wrong golden: its first 600 values agree
        "fc2.weight": (w[:600].copy(), w.reshape(20, 32)),  # and the other way round
        "fine": (w.reshape(20, 32), w.reshape(20, 32) + 0.5),
    })
    rows = _rows(left, right, fast)
    for name, shapes in (("fc1.weight", ("[20,32]", "[600]")), ("fc2.weight", ("[600]", "[20,32]"))):
        row = rows[f"{name}:output:0"]
        assert row.status is PairStatus.NOT_COMPARABLE, (name, row.metrics)
        assert row.metrics["CosineSimilarity"] is None
        reason = "; ".join(row.reasons)
        assert "640" in reason and "600" in reason and all(s in reason for s in shapes), reason
        assert "not cropped" in reason
    assert rows["fine:output:0"].status is PairStatus.COMPARED


@pytest.mark.parametrize("fast", ENGINE_PATHS)
def test_fusion_rule_larger_left_is_not_cropped(tmp_path: Path, fast: bool) -> None:
    paths = make_network(tmp_path)
    (golden,) = paths["right"].glob("fc1.0.*.npy")
    full = np.load(golden)  # (1, 10)
    np.save(golden, full.reshape(-1)[:8].copy())  # a golden .npy with 8 of the 10 values
    rows = _rows(paths["left"], paths["right"], fast, paths["fusion_rule"])
    row = rows["fc1:output:0"]
    assert row.status is PairStatus.NOT_COMPARABLE, row.metrics
    reason = "; ".join(row.reasons)
    assert "[1,10]" in reason and "[8]" in reason and "not cropped" in reason, reason
    assert row.shape == (1, 10)  # a failed row shows the left dump shape
    # the device-layout padding of the other tensors is still removed (NC1HWC0 C0 = 16 > C = 8)
    conv = rows["conv1:output:0"]
    assert conv.status is PairStatus.COMPARED and conv.shape == (1, 8, 16, 16)
    assert rows["prob:output:0"].status is PairStatus.COMPARED


@pytest.mark.parametrize("prepare", [prepare_pair, plan_pair], ids=["prepare_pair", "plan_pair"])
def test_unconverted_pair_with_different_counts_is_a_layout_error(prepare) -> None:
    left = np.arange(640, dtype=np.float32).reshape(20, 32)
    golden = np.arange(600, dtype=np.float32)
    with pytest.raises(LayoutError, match=r"left has 640 elements \[20,32\], golden has 600 \[600\]"):
        prepare(left, "ND", left.shape, golden, "ND")
    with pytest.raises(LayoutError, match="not cropped"):
        prepare(left, "ND", left.shape, golden.reshape(600, 1), "")


def test_conversion_with_unknown_padding_axes_crops_nothing() -> None:
    """A custom converter's output is not cropped to the golden: nothing says which axis is padding."""
    golden = np.ones((1, 3, 2, 2), dtype=np.float32)

    def custom(shape_from, shape_to, data):
        return np.ones((1, 4, 2, 2), dtype=np.float32)

    plugins = {("C1HWNCOC0", "NCHW"): custom}
    with pytest.raises(LayoutError, match="no axis of this conversion is known to hold layout padding"):
        prepare_pair(np.ones(16, np.float32), "C1HWNCOC0", (16,), golden, "NCHW", plugins=plugins)
    exact = {("C1HWNCOC0", "NCHW"): lambda shape_from, shape_to, data: np.ones((1, 3, 2, 2), np.float32)}
    _, _, shape = prepare_pair(np.ones(12, np.float32), "C1HWNCOC0", (12,), golden, "NCHW", plugins=exact)
    assert shape == (1, 3, 2, 2)


# --------------------------------------------------------------------------------------------
# Shape column


@pytest.mark.parametrize("fast", ENGINE_PATHS)
def test_shape_column_is_the_true_shape_for_mindspore(tmp_path: Path, fast: bool) -> None:
    rng = np.random.default_rng(1)
    tensors = {
        "matmul": rng.standard_normal((32, 36)).astype(np.float32),
        "attn": rng.standard_normal((4, 8, 8)).astype(np.float32),
        "loss": np.array(2.5, dtype=np.float32),
        "flag": np.array(True),
        "one": np.ones((1, 1), dtype=np.float32),
    }
    left, right = _ms_folders(tmp_path, {k: (v, v) for k, v in tensors.items()})
    rows = _rows(left, right, fast)
    for name, value in tensors.items():
        row = rows[f"{name}:output:0"]
        assert row.status is PairStatus.COMPARED, row.reasons
        assert row.shape == value.shape, name
    assert shape_cell(rows["loss:output:0"].shape) == "[]"
    # the scalar rule of CosineSimilarity is unchanged for 0-d tensors
    assert rows["loss:output:0"].metrics["CosineSimilarity"] == 1.0


def test_one_sided_rows_show_the_shape_of_their_tensor(tmp_path: Path) -> None:
    left, right = _ms_folders(tmp_path, {"both": (np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))})
    np.save(right / _ms_name("Cast", "only_right", 9, "Float32"), np.ones((4, 5, 6), np.float32))
    np.save(left / _ms_name("Cast", "only_left", 8, "Float32"), np.ones((7, 2), np.float32))
    rows = {r.tensor_id: r for r in run_network(left, right).rows if r.tensor_id}
    assert rows["only_right:output:0"].status is PairStatus.MISSING_LEFT
    assert rows["only_right:output:0"].shape == (4, 5, 6)
    assert rows["only_left:output:0"].shape == (7, 2)


def test_shape_column_keeps_the_reference_flat_shape_against_golden_npy(tmp_path: Path) -> None:
    paths = make_network(tmp_path)
    rows = {r.tensor_id: r for r in run_network(paths["left"], paths["right"], paths["fusion_rule"]).rows
            if r.tensor_id}
    assert rows["prob:output:0"].shape == (10,)  # ND (1, 10) against a Caffe-style .npy: [10], as the reference
    assert rows["conv1:output:0"].shape == (1, 8, 16, 16)


@pytest.mark.parametrize("case", ["ascend_vs_caffe_npy", "ascend_vs_ascend", "ascend_v1_protobuf", "quant_vs_caffe"])
def test_shape_column_agrees_with_the_reference(case: str) -> None:
    folder = shared_path("cases", case)
    spec = json.loads((folder / "case.json").read_text())
    rule = folder / spec["fusion_json"] if spec.get("fusion_json") else None
    quant = folder / spec["quant_json"] if spec.get("quant_json") else None
    ours = {r.tensor_id: r for r in run_network(folder / spec["left_dir"], folder / spec["right_dir"], rule,
                                                quant_rule=quant).rows if r.tensor_id}
    (oracle,) = sorted((folder / "oracle" / "network").glob("result_*.csv"))
    with oracle.open(newline="") as handle:
        table = list(csv.DictReader(handle))
    checked = 0
    for cells in table:
        if cells["TensorIndex"] == "NaN" or cells["CosineSimilarity"] == "NaN":
            continue
        assert shape_cell(ours[cells["TensorIndex"]].shape) == cells["Shape"], cells["TensorIndex"]
        checked += 1
    assert checked > 5


@pytest.mark.parametrize("fast", ENGINE_PATHS)
def test_real_mindspore_tree_shapes_equal_the_npy_shapes(fast: bool) -> None:
    base = shared_path("mindspore-real", "K_base_kernels")
    perturb = shared_path("mindspore-real", "K_perturb_kernels")
    *_, pairing = load_and_pair(perturb, base)
    rows = compare_pairs(pairing.pairs, EngineOptions(fast=fast, workers=1))
    assert len(rows) == len(pairing.pairs) > 100
    shapes = set()
    for pair, row in zip(pairing.pairs, rows):
        assert row.status is PairStatus.COMPARED, row.reasons
        want = np.load(pair.left.path, mmap_mode="r").shape
        assert row.shape == want, (row.tensor_id, row.shape, want)
        shapes.add(len(want))
    assert {0, 2, 3, 4} <= shapes


# --------------------------------------------------------------------------------------------
# bool vs bool


@pytest.mark.parametrize("golden", [[False, False, False, False], [True, False, False, True]])
def test_bool_red_against_the_float64_twin(golden: list[bool]) -> None:
    x = np.array([True, False, True, True])
    y = np.array(golden)
    got = compare_arrays(x, y)
    want = reference_metrics(x, y)
    for name, value in got.values.items():
        assert close(value, want[name]), name
    red = got.values["RelativeEuclideanDistance"]
    if any(golden):
        assert red is None  # the reference's bool subtraction fails: NaN
    else:
        assert red == 0.0  # the reference's all-zero-golden rule comes first
        # the float64 twin of the same data (as floats) agrees for RED's zero case
        assert reference_metrics(x.astype(np.float64), y.astype(np.float64))["RelativeEuclideanDistance"] == 0.0
    assert Note.BOOL_DATA in got.notes and got.std is None


def test_bool_red_in_the_report(tmp_path: Path) -> None:
    left, right = _ms_folders(tmp_path, {
        "mask": (np.array([True, False, True]), np.zeros(3, dtype=bool)),
        "hit": (np.array([True, False, True]), np.array([True, True, False])),
    })
    result = run_network(left, right)
    table = list(csv.DictReader(render_csv(result.rows, result.metrics).splitlines()))
    cells = {r["TensorIndex"]: r for r in table}
    assert cells["mask:output:0"]["RelativeEuclideanDistance"] == "0.000000"
    assert cells["hit:output:0"]["RelativeEuclideanDistance"] == "NaN"
    assert cells["mask:output:0"]["MaxAbsoluteError"] == "NaN"
    assert "bool data" in cells["mask:output:0"]["FailReason"]


# --------------------------------------------------------------------------------------------
# complex


def _complex_twin(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Float64 twin written with complex arithmetic (not with the interleaved view)."""
    x = x.astype(np.complex128).reshape(-1)
    y = y.astype(np.complex128).reshape(-1)
    d = x - y
    parts = np.concatenate([np.abs(d.real), np.abs(d.imag)])
    return {
        "CosineSimilarity": float(np.real(np.vdot(y, x)) / (np.linalg.norm(x) * np.linalg.norm(y))),
        "RelativeEuclideanDistance": float(np.linalg.norm(d) / np.linalg.norm(y)),
        "MaxAbsoluteError": float(parts.max()),
        "MeanAbsoluteError": float(parts.mean()),
        "RootMeanSquareError": float(math.sqrt(np.sum(np.abs(d) ** 2) / (2 * x.size))),
    }


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_compares_both_parts_against_the_float64_twin(dtype) -> None:
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(50) + 1j * rng.standard_normal(50)).astype(dtype)
    y = (x + (rng.standard_normal(50) + 2j * rng.standard_normal(50)) * 0.05).astype(dtype)
    got = compare_arrays(x, y)
    assert Note.COMPLEX_PAIRS in got.notes and got.count == 100
    for name, value in _complex_twin(x, y).items():
        assert got.values[name] == pytest.approx(value, rel=1e-9, abs=1e-12), name
    # imaginary parts alone differing is seen
    only_imag = compare_arrays(x, x.real + 1j * (x.imag + 1))
    assert only_imag.values["MaxAbsoluteError"] == pytest.approx(1.0)
    assert only_imag.values["CosineSimilarity"] < 1.0
    # a real side against a complex one: imaginary parts 0
    mixed = compare_arrays(x, x.real.astype(np.float32))
    assert mixed.values["MaxAbsoluteError"] == pytest.approx(float(np.abs(x.imag).max()), rel=1e-6)


def test_complex_in_the_report(tmp_path: Path) -> None:
    a = np.array([[1 + 2j, 3 - 1j], [-2 + 0.5j, 0.25j]], dtype=np.complex64)
    b = a + 0.5j
    folders = []
    for side, data in (("l", a), ("r", b)):
        folder = tmp_path / side
        folder.mkdir()
        write_dump(folder / f"Add.op1.1.1.{TS}", inputs=[TensorSpec(data)], outputs=[TensorSpec(data)], op_name="op1")
        folders.append(folder)
    row = next(r for r in run_network(*folders).rows if r.tensor_id)
    assert row.status is PairStatus.COMPARED
    assert row.left_dtype == "complex64" and row.shape == (2, 2)  # elements, not the 8 compared parts
    want = _complex_twin(a, b)
    assert row.metrics["MaxAbsoluteError"] == pytest.approx(0.5)
    assert row.metrics["CosineSimilarity"] == pytest.approx(want["CosineSimilarity"], rel=1e-6)
    assert any("(real, imaginary) pairs" in reason for reason in row.reasons)
