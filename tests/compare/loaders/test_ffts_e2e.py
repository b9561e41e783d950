"""FFTS+ sliced dumps end to end through the command line: merged by default, apart with -ffts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from compare.cli import app
from compare.testing.synthetic_ffts import BASE_TIMESTAMP, write_sliced_op
from convert.codecs.dumpwrite import write_dump
from convert.codecs.ffts import FftsMode

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


def _origin(name: str) -> dict:
    return {"key": "_datadump_original_op_names", "value": {"list": {"s": [name]}}}


def test_fusion_rule_pairs_the_merged_tensor(tmp_path: Path) -> None:
    """-f: the merged 4-D output (manual mode, cut on axis 1 in uneven slices) meets its golden
    through the rule's output desc."""
    left, right = tmp_path / "npu", tmp_path / "golden"
    left.mkdir()
    right.mkdir()
    full = _ints((2, 8, 4, 4), 5)
    moved = full.copy()
    moved[1, 5, 2, 3] += 0.25  # in the second slice (channels 3..7)
    write_sliced_op(left, moved, (3, 5), 1, name="conv_fused", op_type="Conv2D", mode=FftsMode.MANUAL)
    np.save(right / f"conv_a.0.{BASE_TIMESTAMP}.npy", full)
    desc = {"dtype": "DT_FLOAT", "layout": "NCHW", "shape": {"dim": [2, 8, 4, 4]},
            "attr": [{"key": "origin_format", "value": {"s": "NCHW"}},
                     {"key": "origin_shape", "value": {"list": {"i": [2, 8, 4, 4]}}},
                     {"key": "_datadump_origin_name", "value": {"s": "conv_a"}},
                     {"key": "_datadump_origin_output_index", "value": {"i": 0}}]}
    rule = {"graph": [{"name": "g", "op": [{"name": "conv_fused", "type": "Conv2D", "id": 0,
                                            "attr": [_origin("conv_a")], "output_desc": [desc]}]}]}
    (tmp_path / "rule.json").write_text(json.dumps(rule))
    out = tmp_path / "result.csv"
    result = runner.invoke(app, ["-l", str(left), "-r", str(right), "-f", str(tmp_path / "rule.json"), "-o", str(out),
                                 "--float-format", "repr"])
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out)
    assert list(df.TensorIndex) == ["conv_fused:output:0"] and list(df.RightOp) == ["conv_a"]
    assert df.Shape[0] == "[2,8,4,4]" and df.MaxAbsoluteError[0] == 0.25
    assert df.MeanAbsoluteError[0] == 0.25 / full.size


def test_broken_slices_are_rows_with_reasons(tmp_path: Path) -> None:
    left, right = tmp_path / "npu", tmp_path / "golden"
    left.mkdir()
    right.mkdir()
    write_sliced_op(left, _ints((4, 2), 0), (2, 2), 0, name="badattr", attr_text="[1, 2")
    misfit = write_sliced_op(left, _ints((4, 2), 1), (2, 2), 0, name="misfit", mode=FftsMode.MANUAL)
    write_dump(misfit.files[1], outputs=[_ints((2, 3), 2)], attrs=[("ffts", misfit.attr.to_json())])
    for name in ("badattr", "misfit"):
        np.save(right / f"{name}.0.{BASE_TIMESTAMP}.npy", _ints((4, 2), 3))
    out = tmp_path / "result.csv"
    result = runner.invoke(app, ["-l", str(left), "-r", str(right), "-o", str(out)])
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out).set_index("TensorIndex")
    assert sorted(df.index) == ["badattr:output:0", "misfit:output:0"]
    assert df.CosineSimilarity.isna().all()
    assert "FFTS+ slice attribute (DumpData.attr[0].value) is not JSON" in df.FailReason["badattr:output:0"]
    assert "cannot be merged" in df.FailReason["badattr:output:0"]
    assert (f"{misfit.files[1].name}: FFTS+ slice of shape [2, 3] does not fit the first slice [2, 2]"
            in df.FailReason["misfit:output:0"])
