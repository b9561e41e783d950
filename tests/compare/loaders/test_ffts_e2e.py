"""FFTS+ sliced dumps end to end through the command line: merged by default, apart with -ffts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from convert.ffts import FftsMode

from compare.cli import app
from compare.testing.synthetic_ffts import BASE_TIMESTAMP, write_sliced_op

runner = CliRunner()


def _ints(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Small integer values as float32: every metric below is exact."""
    return np.random.default_rng(seed).integers(1, 9, size=shape).astype(np.float32)


def _network(tmp_path: Path) -> tuple[Path, Path]:
    """Left: three sliced ops (automatic 2-D on axis 0, manual 4-D on axis 2, automatic with a
    wrong slice count); right: the full tensors as .npy goldens. The left of ``auto2d`` differs
    from its golden by 0.5 at one element of its second slice."""
    left, right = tmp_path / "npu", tmp_path / "golden"
    left.mkdir()
    right.mkdir()
    auto2d, manual4d, short = _ints((6, 4), 0), _ints((1, 2, 6, 16), 1), _ints((4, 2), 2)
    moved = auto2d.copy()
    moved[4, 1] += 0.5
    write_sliced_op(left, moved, (3, 3), 0, name="auto2d", op_type="MatMul", inputs=[_ints((6, 4), 9)])
    write_sliced_op(left, manual4d, (1, 3, 2), 2, name="manual4d", op_type="Conv2D", mode=FftsMode.MANUAL)
    write_sliced_op(left, short, (2, 2), 0, name="short", op_type="Relu", declared=4)
    for name, full in (("auto2d", auto2d), ("manual4d", manual4d), ("short", short)):
        np.save(right / f"{name}.0.{BASE_TIMESTAMP}.npy", full)
    return left, right


def test_network_compare_merges_slices(tmp_path: Path) -> None:
    left, right = _network(tmp_path)
    out = tmp_path / "result.csv"
    result = runner.invoke(app, ["-l", str(left), "-r", str(right), "-o", str(out), "--float-format", "repr"])
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out).set_index("TensorIndex")
    assert sorted(df.index) == ["auto2d:output:0", "manual4d:output:0", "short:output:0"]  # one row per tensor
    auto = df.loc["auto2d:output:0"]
    assert auto.MaxAbsoluteError == 0.5
    assert auto.MeanAbsoluteError == 0.5 / 24
    assert auto.CosineSimilarity < 1.0
    manual = df.loc["manual4d:output:0"]
    assert manual.CosineSimilarity == 1.0 and manual.MaxAbsoluteError == 0.0 and manual.RootMeanSquareError == 0.0
    assert pd.isna(manual.FailReason)
    short = df.loc["short:output:0"]
    assert short.MaxAbsoluteError == 0.0  # still compared ...
    assert "2 slice file(s) (Relu.short.3.2.*) but slice_instance_num is 4" in short.FailReason  # ... and flagged


def test_ffts_option_compares_each_slice(tmp_path: Path) -> None:
    left, _ = _network(tmp_path)
    out = tmp_path / "result.csv"
    result = runner.invoke(app, ["-l", str(left), "-r", str(left), "-ffts", "-o", str(out)])
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out)
    outputs = sorted(t for t in df.TensorIndex if t.endswith(":output:0"))
    assert outputs == ["auto2d_thread0:output:0", "auto2d_thread1:output:0", "manual4d_lxslice0:output:0",
                       "manual4d_lxslice1:output:0", "manual4d_lxslice2:output:0", "short_thread0:output:0",
                       "short_thread1:output:0"]
    shapes = dict(zip(df.TensorIndex, df.Shape))
    assert shapes["manual4d_lxslice1:output:0"] == "[1,2,3,16]"
    assert (df.CosineSimilarity == 1.0).all()


def test_single_operator_mode_merged_and_apart(tmp_path: Path) -> None:
    left, right = _network(tmp_path)
    merged = runner.invoke(app, ["-l", str(left), "-r", str(right), "-d", "short", "-o", str(tmp_path / "one")])
    assert merged.exit_code == 0, merged.output
    assert "FFTS+ op short: 2 slice file(s) (Relu.short.3.2.*) but slice_instance_num is 4" in merged.output
    summary = (tmp_path / "one" / "short_output_0_summary.txt").read_text()
    assert "TotalCount:8" in summary and "MaxAbsoluteError:0.000000" in summary
    apart = runner.invoke(app, ["-l", str(left), "-r", str(left), "-ffts", "-d", "manual4d_lxslice1",
                                "-o", str(tmp_path / "two")])
    assert apart.exit_code == 0, apart.output
    assert "TotalCount:96" in (tmp_path / "two" / "manual4d_lxslice1_output_0_summary.txt").read_text()
