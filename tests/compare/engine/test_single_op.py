"""Single-operator mode (``-d OP``): selection, detail preparation, files, top-N, CLI, API, oracles."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import shared_path
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import compare
from compare.cli import app
from compare.errors import CompareError, OptionError
from compare.reports.single_op import (
    MAPPING_FILE,
    file_prefix,
    render_rows,
    render_summary,
    render_top_table,
    top_rows,
    write_operator_report,
)
from compare.reports.vectext import fixed6_block, int_block, join_rows
from compare.runs.single_op import OperatorNotFound, compare_operator, top_indexes
from compare.testing.synthetic import make_network
from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.layouts import LAYOUTS, convert_layout

runner = CliRunner()
TS = 1704110400001000


def _run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_network(tmp_path_factory.mktemp("net"))


def _net_args(net: dict[str, Path], out: Path, *extra: object) -> list[object]:
    return ["-l", net["left"], "-r", net["right"], "-f", net["fusion_rule"], "-o", out, *extra]


def _one_op_case(root: Path, left: np.ndarray, golden: np.ndarray, *, fmt: str = "NCHW",
                 original_shape: tuple[int, ...] | None = None, name: str = "op") -> tuple[Path, Path]:
    """An Ascend dump of one op (output 0 = ``left`` in ``fmt``) and its golden .npy (by-name pairing)."""
    npu, gold = root / "npu", root / "golden"
    npu.mkdir(parents=True, exist_ok=True)
    gold.mkdir(parents=True, exist_ok=True)
    write_dump(npu / f"Conv2D.{name}.1.1.{TS}", op_name=name,
               outputs=[TensorSpec(left, format=fmt, original_shape=original_shape)])
    np.save(gold / f"{name}.0.{TS + 5000000}.npy", golden)
    return npu, gold


def _csv_rows(path: Path) -> list[list[str]]:
    with path.open(newline="") as handle:
        return list(csv.reader(handle))


# ------------------------------------------------------------------------------ vectorised text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1, max_size=50))
def test_fixed6_matches_python_formatting(values: list[float]) -> None:
    got = join_rows([fixed6_block(np.array(values))]).decode().splitlines()
    assert got == ["%.6f" % v for v in values]


def test_fixed6_exact_ties_and_hard_cases() -> None:
    rng = np.random.default_rng(3)
    values = np.concatenate([
        [0.0, -0.0, 1 / 128, 3 / 128, -4e-7, 4e-7, 3.999999e9, 4e9, 1e10, -1e15, 5e-324, 0.0000005, 2.5e-6],
        (rng.integers(0, 2**20, 20000) + 0.5) / 1e6,  # near decimal ties
        rng.integers(0, 2**30, 20000) / 2.0 ** rng.integers(0, 40, 20000),  # exact binary fractions
        rng.standard_normal(20000).astype(np.float16),
    ])
    got = join_rows([fixed6_block(values)]).decode().splitlines()
    assert got == ["%.6f" % v for v in values]
    assert join_rows([fixed6_block(np.array([1.0, np.nan]), suffix="\t", tokens=[(np.array([False, True]), "-")])]) \
        == b"1.000000\t\n-\n"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**62), min_size=1, max_size=40))
def test_int_block_matches_str(values: list[int]) -> None:
    assert join_rows([int_block(np.array(values, dtype=np.int64))]).decode().split() == [str(v) for v in values]


def test_top_indexes_stable_and_bounded() -> None:
    key = np.array([1.0, 3.0, 3.0, 2.0, 3.0, 0.0])
    assert top_indexes(key, 2).tolist() == [1, 2]
    assert top_indexes(key, 4).tolist() == [1, 2, 4, 3]
    assert top_indexes(key, 4, ties_ascending=False).tolist() == [4, 2, 1, 3]
    assert top_indexes(key, 20).tolist() == [1, 2, 4, 3, 0, 5]  # min(topn, N) rows
    assert top_indexes(np.zeros(0), 5).tolist() == []


# ------------------------------------------------------------------------------ API on the synthetic network


def test_api_output_nc1hwc0_to_nchw(net: dict[str, Path]) -> None:
    res = compare.compare_operator(net["left"], net["right"], "conv1", fusion_rule=net["fusion_rule"])
    assert res.tensor_id == "conv1:output:0" and res.kind == "output" and res.index == 0
    assert res.shape == (1, 8, 16, 16) and res.axes == ("N", "C", "H", "W") and res.count == 2048
    golden = np.load(next(net["right"].glob("relu1.*.npy")))
    frame = res.frame
    assert list(frame.columns) == ["N", "C", "H", "W", "Left", "Right", "AbsoluteError", "RelativeError"]
    # coordinates address the golden (NCHW) array
    sample = frame.sample(50, random_state=0)
    assert np.array_equal(golden[sample.N, sample.C, sample.H, sample.W], sample.Right.to_numpy())
    # left side: the device NC1HWC0 data converted independently, channel padding cut off
    header_path = next(net["leaf"].glob("Conv2D.conv1.*"))
    from convert.codecs.dumpfile import read_header, read_tensor

    header = read_header(header_path)
    device = read_tensor(header, header.outputs[0])
    nchw = np.asarray(convert_layout(device, "NC1HWC0", "NCHW", device.shape, (1, 8, 16, 16)))[:, :8]
    assert np.array_equal(nchw.reshape(-1).astype(np.float64), frame.Left.to_numpy())
    assert np.allclose(frame.AbsoluteError, np.abs(frame.Left - frame.Right))
    s = res.summary
    assert s["TotalCount"] == 2048 and s["Format"] == "N C H W" and s["RightOp"] == "conv1,bn1,relu1"
    assert s["MaxAbsoluteError"] == pytest.approx(frame.AbsoluteError.max())
    assert s["CosineSimilarity"] == pytest.approx(res.metrics["CosineSimilarity"]) and s["CosineSimilarity"] > 0.99
    # relu golden holds zeros: their relative error is undefined and counts as 0 in the minimum
    assert (golden == 0).any() and frame.RelativeError.isna().sum() >= (golden == 0).sum()
    assert s["MinRelativeError"] == 0.0


def test_api_inputs_and_fractal_z(net: dict[str, Path]) -> None:
    weight = compare_operator(net["left"], net["right"], "conv1", fusion_rule=net["fusion_rule"], kind="input", index=1)
    golden = np.load(next(net["right"].glob("conv1_weight.*.npy")))
    assert weight.tensor_id == "conv1:input:1" and weight.shape == golden.shape == (8, 3, 3, 3)
    assert weight.reference_format == "N C H W" and weight.axes == ("N", "C", "H", "W")
    assert np.array_equal(weight.right_values, golden.reshape(-1).astype(np.float64))
    assert weight.metrics["CosineSimilarity"] > 0.999
    data = compare_operator(net["left"], net["right"], "conv1", fusion_rule=net["fusion_rule"], kind="input", index=0)
    assert data.shape == (1, 3, 16, 16) and data.right_op == "conv1,bn1,relu1"
    fc = compare_operator(net["left"], net["right"], "fc1", fusion_rule=net["fusion_rule"])
    assert fc.shape == (1, 10) and fc.coord_shape == (1, 10, 1, 1) and fc.metrics["CosineSimilarity"] < 0.999


def test_api_errors_are_compare_errors(net: dict[str, Path]) -> None:
    kwargs = dict(fusion_rule=net["fusion_rule"])
    with pytest.raises(OperatorNotFound, match=r"did you mean 'conv1'"):
        compare_operator(net["left"], net["right"], "conv2", **kwargs)
    with pytest.raises(OperatorNotFound, match=r"no output 3; its tensors are: input 0, input 1, output 0"):
        compare_operator(net["left"], net["right"], "conv1", index=3, **kwargs)
    with pytest.raises(OperatorNotFound, match="trans_TransData_0:output:0 cannot be compared element by element: "
                                               "no operator 'trans_TransData_0' in the right folder"):
        compare_operator(net["left"], net["right"], "trans_TransData_0")  # by name: no golden counterpart
    with pytest.raises(OperatorNotFound, match="Ground Truth op"):
        compare_operator(net["left"], net["right"], "relu1", **kwargs)
    with pytest.raises(OperatorNotFound, match="no dump file"):
        compare_operator(net["left"], net["right"], "data", **kwargs)
    with pytest.raises(OptionError):
        compare_operator(net["left"], net["right"], "conv1", kind="weights", **kwargs)
    assert issubclass(OperatorNotFound, CompareError)


def test_npu_vs_npu_raw_layout(net: dict[str, Path]) -> None:
    res = compare_operator(net["left"], net["left"], "pool1")
    assert res.mode == "npu-vs-npu" and not res.converted
    assert res.shape == (1, 1, 8, 8, 16) and res.axes == ("N", "C1", "H", "W", "C0")
    assert res.reference_format == "N C H W"
    assert res.summary["MaxAbsoluteError"] == 0.0 and res.metrics["CosineSimilarity"] == pytest.approx(1.0)


def test_npu_vs_npu_one_sided_ops(net: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    right = tmp_path / "right"
    right.mkdir()
    shutil.copy(next(net["leaf"].glob("Pooling.pool1.*")), right)
    write_dump(right / f"Relu.extra.9.1.{TS}", op_name="extra", outputs=[np.ones((1, 4), np.float16)])
    with pytest.raises(OperatorNotFound, match="'extra' is only in the right folder"):
        compare_operator(net["leaf"], right, "extra")
    with pytest.raises(OperatorNotFound, match="'conv1' cannot be compared: no dump file .* in the right folder"):
        compare_operator(net["leaf"], right, "conv1")
    assert compare_operator(net["leaf"], right, "pool1").summary["MaxAbsoluteError"] == 0.0


def test_fractal_nz_by_name(tmp_path: Path) -> None:
    golden = np.random.default_rng(0).standard_normal((2, 20, 40)).astype(np.float32)
    nz = LAYOUTS[("ND", "FRACTAL_NZ")](golden.shape, None, golden.reshape(-1))
    npu, gold = _one_op_case(tmp_path, np.asarray(nz).astype(np.float16), golden, fmt="FRACTAL_NZ",
                             original_shape=golden.shape, name="mm")
    res = compare_operator(npu, gold, "mm")
    assert res.mode == "by-name" and res.shape == (2, 20, 40) and res.coord_shape == (2, 20, 40, 1)
    assert np.array_equal(res.right_values, golden.reshape(-1).astype(np.float64))
    assert res.summary["MaxAbsoluteError"] < 1e-3


def test_nan_and_zero_right(tmp_path: Path) -> None:
    golden = np.arange(1, 33, dtype=np.float32).reshape(1, 2, 4, 4)
    golden[0, 0, 0, :2] = 0.0
    left = golden.copy()
    left[0, 0, 0, 1] = 5.0  # right is 0 -> relative error undefined
    left[0, 1, 2, 3] = np.nan
    left[0, 1, 3, 3] += 0.5
    npu, gold = _one_op_case(tmp_path, left, golden)
    res = compare_operator(npu, gold, "op")
    nan_at = 1 * 16 + 2 * 4 + 3
    assert math.isnan(res.absolute_error[nan_at]) and math.isnan(res.relative_error[nan_at])
    assert math.isnan(res.relative_error[0]) and math.isnan(res.relative_error[1]) and res.absolute_error[1] == 5.0
    # NaN ranks first among absolute errors; undefined relative errors last
    assert res.top("absolute", 3).tolist() == [nan_at, 1, 31]
    assert res.top("relative", 32).tolist()[-3:] == [0, 1, nan_at]
    s = res.summary
    assert s["MinAbsoluteError"] == 0.0 and s["MaxAbsoluteError"] == 5.0  # NaN counts as 0 (reference rule)
    assert s["MinRelativeError"] == 0.0 and s["MaxRelativeError"] == pytest.approx(0.5 / 32)
    assert math.isnan(res.metrics["CosineSimilarity"])
    lines = render_rows(res, np.array([0, 1, nan_at]), "vcompare").decode().splitlines()
    assert lines == ["0,0 0 0 0,0.000000,0.000000,-,0.000000", "1,0 0 0 1,5.000000,0.000000,-,5.000000",
                     f"{nan_at},0 1 2 3,nan,28.000000,-,nan"]
    ref = render_rows(res, np.array([1, nan_at]), "msaccucmp").decode().splitlines()
    assert ref == ["1,0 0 0 1,5.000000\t,0.000000\t,5.000000\t,-", f"{nan_at},0 1 2 3,nan\t,28.000000\t,nan\t,-"]
    # reference ranking: NaN counts as 0, ties by descending index; nan/inf shown as '-' in top-N files
    top_ref = top_rows(res, "absolute", 2, "msaccucmp").splitlines()
    assert top_ref[1].startswith("1,") and top_ref[2].startswith("31,")
    assert "-\t" in top_rows(res, "absolute", 40, "msaccucmp")
    summary = render_summary(res).splitlines()
    assert "CosineSimilarity:nan" in summary and summary[:4] == ["TotalCount:32", "LeftOp:op", "RightOp:op",
                                                                 "Format:N C H W"]


def test_bool_data_msaccucmp_cells(tmp_path: Path) -> None:
    golden = np.array([[True, False], [True, True]]).reshape(1, 1, 2, 2)
    npu, gold = _one_op_case(tmp_path, golden.copy(), golden)
    res = compare_operator(npu, gold, "op")
    assert res.is_bool
    assert render_rows(res, np.array([0, 1]), "msaccucmp").decode().splitlines() == [
        "0,0 0 0 0,True\t,True\t,-\t,-", "1,0 0 0 1,False\t,False\t,-\t,-"]
    assert render_rows(res, np.array([1]), "vcompare") == b"1,0 0 0 1,0.000000,0.000000,-,0.000000\n"


# ------------------------------------------------------------------------------ files


def test_files_and_chunk_split(tmp_path: Path) -> None:
    golden = np.random.default_rng(1).standard_normal((1, 1, 25, 1000)).astype(np.float32)
    npu, gold = _one_op_case(tmp_path, golden.astype(np.float16), golden)
    res = compare_operator(npu, gold, "op")
    out = tmp_path / "out"
    files = write_operator_report(res, out, max_lines=10_000)
    assert [p.name for p in files.details] == ["op_output_0_0.csv", "op_output_0_10000.csv", "op_output_0_20000.csv"]
    counts = [len(_csv_rows(p)) - 1 for p in files.details]
    assert counts == [10_000, 10_000, 5_000]
    last = _csv_rows(files.details[-1])
    assert last[0] == ["Index", "N C H W", "Left", "Right", "RelativeError", "AbsoluteError"]
    assert last[1][:2] == ["20000", "0 0 20 0"] and last[-1][:2] == ["24999", "0 0 24 999"]
    assert files.summary.name == "op_output_0_summary.txt"
    assert {p.name for p in files.topn.values()} == {"op_output_0_absolute_error_topn.csv",
                                                      "op_output_0_relative_error_topn.csv"}
    df = pd.read_csv(files.topn["absolute"])
    assert len(df) == 20 and df.AbsoluteError.is_monotonic_decreasing
    assert df.AbsoluteError.iloc[0] == pytest.approx(res.summary["MaxAbsoluteError"], abs=1e-6)
    # a rerun with another split or without details removes the stale chunks
    files = write_operator_report(res, out, max_lines=1_000_000)
    assert sorted(p.name for p in out.glob("op_output_0_[0-9]*.csv")) == ["op_output_0_0.csv"]
    write_operator_report(res, out, details=False)
    assert not list(out.glob("op_output_0_[0-9]*.csv"))
    with pytest.raises(OptionError):
        write_operator_report(res, out, max_lines=9_999)
    with pytest.raises(OptionError):
        write_operator_report(res, out, topn=0)


def test_real_million_row_split(tmp_path: Path) -> None:
    n = 1_000_001
    golden = np.linspace(-1, 1, n, dtype=np.float32).reshape(1, n)
    npu, gold = _one_op_case(tmp_path, golden.astype(np.float16), golden, fmt="ND")
    res = compare_operator(npu, gold, "op")
    files = write_operator_report(res, tmp_path / "out")
    assert [p.name for p in files.details] == ["op_output_0_0.csv", "op_output_0_1000000.csv"]
    tail = _csv_rows(files.details[1])
    assert len(tail) == 2 and tail[1][:2] == ["1000000", "0 1000000 0 0"]
    with files.details[0].open() as handle:
        assert sum(1 for _ in handle) == 1_000_001  # header + 1e6 rows


def test_long_names_are_shortened(tmp_path: Path) -> None:
    name = "layer_" + "x" * 224  # .npy name 253 chars: fits; result names would not
    left, right = tmp_path / "a", tmp_path / "b"
    for folder, value in ((left, 1.0), (right, 2.0)):
        folder.mkdir()
        np.save(folder / f"{name}.0.{TS}.npy", np.full((1, 2, 2, 2), value, dtype=np.float32))
    prefix, shortened = file_prefix(name, "output", 0)
    assert shortened and len(prefix.encode()) + len("_relative_error_topn.csv") <= 255
    assert file_prefix(name, "output", 0) == (prefix, True)  # deterministic
    assert file_prefix("conv1", "output", 0) == ("conv1_output_0", False)
    out = tmp_path / "out"
    result = _run("-l", left, "-r", right, "-o", out, "-d", name)
    assert result.exit_code == 0, result.output
    assert max(len(p.name.encode()) for p in out.iterdir()) <= 255
    rows = _csv_rows(out / MAPPING_FILE)
    assert rows == [["FilePrefix", "OpName", "TensorType", "Index"], [prefix, name, "output", "0"]]
    assert (out / f"{prefix}_summary.txt").read_text().startswith("TotalCount:8\n")
    assert _run("-l", left, "-r", right, "-o", out, "-d", name).exit_code == 0
    assert len(_csv_rows(out / MAPPING_FILE)) == 2  # not duplicated


# ------------------------------------------------------------------------------ CLI


def test_cli_single_op(net: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "detail"
    result = _run(*_net_args(net, out, "-d", "pool1", "-n", "5"))
    assert result.exit_code == 0, result.output
    assert "Top 5 absolute errors of pool1:output:0" in result.stdout
    assert "Top 5 relative errors of pool1:output:0" in result.stdout
    assert f"result: {out / 'pool1_output_0_summary.txt'}" in result.stdout
    names = sorted(p.name for p in out.iterdir())
    assert names == ["pool1_output_0_0.csv", "pool1_output_0_absolute_error_topn.csv",
                     "pool1_output_0_relative_error_topn.csv", "pool1_output_0_summary.txt"]
    summary = (out / "pool1_output_0_summary.txt").read_text().splitlines()
    keys = [line.split(":", 1)[0] for line in summary]
    assert keys == ["TotalCount", "LeftOp", "RightOp", "Format", "MinAbsoluteError", "MaxAbsoluteError",
                    "MinRelativeError", "MaxRelativeError", "CosineSimilarity", "AccumulatedRelativeError",
                    "RelativeEuclideanDistance", "KullbackLeiblerDivergence", "StandardDeviation",
                    "MeanAbsoluteError", "RootMeanSquareError", "MeanRelativeError"]
    assert summary[0] == "TotalCount:512" and summary[3] == "Format:N C H W"
    assert summary[12].startswith("StandardDeviation:(") and "),(" in summary[12]
    assert len(pd.read_csv(out / "pool1_output_0_absolute_error_topn.csv")) == 5


def test_cli_aliases_inputs_and_layout(net: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "o"
    result = _run(*_net_args(net, out, "-op", "conv1", "--tensor-type", "input", "--index", "1",
                             "--ignore_single_op_result", "--layout", "msaccucmp", "-ml", "10000"))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "conv1_input_1.npy", "conv1_input_1_absolute_error_topn.csv", "conv1_input_1_relative_error_topn.csv",
        "conv1_input_1_summary.txt"]
    summary = (out / "conv1_input_1_summary.txt").read_text().splitlines()
    assert summary[1:4] == ["NPUDump:conv1", "GroundTruth:conv1 bn1 relu1", "Format:N C H W"]
    assert len(summary) == 8
    top = (out / "conv1_input_1_absolute_error_topn.csv").read_text().splitlines()
    assert top[0] == "Index,N C H W,NPUDump,GroundTruth,AbsoluteError,RelativeError" and top[1].endswith("\t")
    assert "Absolute Error TopN" in result.stderr and "Index\tN C H W" in result.stdout
    assert np.load(out / "conv1_input_1.npy").shape == (8, 3, 3, 3)


@pytest.mark.parametrize("extra,needle", [
    (["-d", "conv2"], "did you mean 'conv1'"),
    (["-d", "conv1", "-i", "4"], "no output 4"),
    (["-d", "conv1", "-t", "input", "-i", "2"], "no input 2"),
    (["-d", "data"], "operator 'data' cannot be compared: no dump file"),
    (["-d", "conv1", "-t", "weights"], "-t must be input or output"),
    (["-n", "3"], "-n only applies to single-operator mode"),
    (["--no-details", "-i", "1"], "only apply to single-operator mode"),
    (["-d", "conv1", "-n", "0"], "topn"),
    (["-d", "conv1", "--max-lines", "100"], "max-lines"),
])
def test_cli_bad_single_op_exit_2(net: dict[str, Path], tmp_path: Path, extra: list[str], needle: str) -> None:
    result = _run(*_net_args(net, tmp_path / "o", *extra))
    assert result.exit_code == 2, result.output
    assert needle in result.output
    assert "Traceback" not in result.output


def test_cli_no_golden_counterpart_exit_2(net: dict[str, Path], tmp_path: Path) -> None:
    result = _run("-l", net["left"], "-r", net["right"], "-o", tmp_path, "-d", "trans_TransData_0")
    assert result.exit_code == 2
    assert "no operator 'trans_TransData_0' in the right folder" in result.stderr
    assert "Traceback" not in result.output and not list(tmp_path.iterdir())


def test_cli_output_must_be_a_folder_and_gates(net: dict[str, Path], tmp_path: Path) -> None:
    blocker = tmp_path / "file.csv"
    blocker.write_text("x")
    result = _run(*_net_args(net, blocker, "-d", "pool1"))
    assert result.exit_code == 2 and "output folder" in result.stderr
    ok = _run(*_net_args(net, tmp_path / "g", "-d", "pool1", "--gate", "CosineSimilarity>=0.99", "--quiet"))
    assert ok.exit_code == 0 and "Top" not in ok.stdout
    bad = _run(*_net_args(net, tmp_path / "g", "-d", "fc1", "--gate", "CosineSimilarity>=0.9999"))
    assert bad.exit_code == 1 and "fc1:output:0" in bad.stderr


def test_top_table_rendering(net: dict[str, Path]) -> None:
    res = compare_operator(net["left"], net["right"], "prob", fusion_rule=net["fusion_rule"])
    table = render_top_table(res, "relative", 50).splitlines()
    assert table[0] == "Top 10 relative errors of prob:output:0"  # min(topn, N) rows
    assert table[1].split() == ["Index", "N", "C", "H", "W", "Left", "Right", "RelativeError", "AbsoluteError"]
    assert len(table) == 12
    ref = render_top_table(res, "relative", 3, "msaccucmp").splitlines()
    assert ref[0].split("\t")[0].rstrip() == "Index" and len(ref) == 4


# ------------------------------------------------------------------------------ agreement with the reference

_ORACLE_CASES = ["ascend_vs_caffe_npy", "ascend_v1_protobuf", "ascend_vs_ascend", "quant_vs_caffe"]
_CASE_RUNS = {"ascend_vs_ascend": ["single_conv1_o0", "single_res2a_o0"],
              "quant_vs_caffe": ["single_conv2_dequant_o0", "single_conv1_quant_i0"]}


def _oracle_runs() -> list[tuple[str, str]]:
    return [(case, name) for case in _ORACLE_CASES
            for name in _CASE_RUNS.get(case, ["single_res2a_branch2a_o0", "single_slice5_o1"])]


def _summary(path: Path) -> dict[str, str]:
    return dict(line.split(":", 1) for line in path.read_text().splitlines())


@pytest.mark.shared
@pytest.mark.parametrize("case,run_name", _oracle_runs())
def test_agrees_with_reference(case: str, run_name: str, tmp_path: Path) -> None:
    root = shared_path("cases", case)
    spec = json.loads((root / "case.json").read_text())
    run = next(r for r in spec["oracle_runs"] if r["name"] == run_name)
    kind, index = ("output", run["o"]) if "o" in run else ("input", run["i"])
    res = compare_operator(root / run["m"], root / run["g"], run["op"], kind=kind, index=index,
                           fusion_rule=root / run["f"] if run.get("f") else None,
                           quant_rule=root / run["q"] if run.get("q") else None,
                           dump_version=spec.get("dump_version"))
    oracle = root / "oracle" / run_name
    prefix = f"{run['op']}_{kind}_{index}"
    expected = _summary(oracle / f"{prefix}_summary.txt")
    ours = res.summary
    assert int(expected["TotalCount"]) == ours["TotalCount"] == res.count
    assert expected["NPUDump"].split() == res.left_op.split(",")
    assert expected["GroundTruth"].split() == res.right_op.split(",")
    assert expected["Format"] == res.reference_format
    # the reference computes the errors in the arrays' own dtype (float16 - float16 -> float16 relative
    # errors in NPU vs NPU): allow that rounding on top of 1e-6
    native = float(np.finfo(np.float16).eps) if res.left.dtype == np.float16 and res.right.dtype == np.float16 else 0.0
    for key in ("MinAbsoluteError", "MaxAbsoluteError", "MinRelativeError", "MaxRelativeError"):
        value = float(expected[key])
        assert ours[key] == pytest.approx(value, abs=1e-6 + native * abs(value)), key

    # element count and coordinates: the reference's detail CSV, row by row
    ref_rows = _csv_rows(oracle / f"{prefix}_0.csv")
    assert ref_rows[0] == ["Index", res.reference_format, "NPUDump", "GroundTruth", "AbsoluteError", "RelativeError"]
    assert len(ref_rows) - 1 == res.count
    ours_rows = render_rows(res, np.arange(res.count), "msaccucmp").decode().splitlines()
    assert [r[:2] for r in ref_rows[1:]] == [line.split(",")[:2] for line in ours_rows]
    ref_left = np.array([float(r[2]) for r in ref_rows[1:]])
    assert np.allclose(ref_left, res.left_values, atol=1e-6, equal_nan=True)

    # top-N sets agree, ties at the boundary allowed
    for which in ("absolute", "relative"):
        ref_top = _csv_rows(oracle / f"{prefix}_{which}_error_topn.csv")[1:]
        ref_idx = {int(r[0]) for r in ref_top}
        errors = np.where(np.isfinite(res.error(which)), res.error(which), 0.0)
        ours_idx = set(res.top(which, len(ref_top)).tolist())
        cut = min(errors[list(ours_idx)])
        tol = 1e-6 + native * cut
        for i in ours_idx ^ ref_idx:
            assert abs(errors[i] - cut) <= tol, (which, i, errors[i], cut)

    # fusion-rule cases: msaccucmp layout reproduces the reference's files byte for byte
    if not native:
        out = tmp_path / "out"
        write_operator_report(res, out, layout="msaccucmp")
        for name in (f"{prefix}_summary.txt", f"{prefix}_0.csv", f"{prefix}_absolute_error_topn.csv",
                     f"{prefix}_relative_error_topn.csv"):
            assert (out / name).read_bytes() == (oracle / name).read_bytes(), name


def test_single_op_counts_nan_inf_and_saturation(tmp_path: Path) -> None:
    """The element-wise comparison carries the kernel pass's counts into its metric row (gates, JSON)."""
    golden = np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 64)
    left = golden.astype(np.float16)
    left[0, :3] = np.nan
    left[0, 3:5] = np.inf
    left[0, 5] = 65504
    npu, gold = _one_op_case(tmp_path, left, golden, fmt="ND")
    res = compare_operator(npu, gold, "op")
    row = res.to_metric_row()
    assert (row.left_counts.nan, row.left_counts.inf, row.left_counts.saturated) == (3, 2, 1)
    assert (row.right_counts.nan, row.right_counts.inf) == (0, 0)
