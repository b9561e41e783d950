"""Report layouts: cell formatting rules and golden-file tests of whole tables."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from compare.records import MetricRow, PairStatus
from compare.reports.cells import metric_cell, neutralise, shape_cell, std_cell
from compare.reports.network import Layout, TableFormat, header, render_csv, render_txt, resolve_output, write_report
from conftest import TESTS

GOLDEN = TESTS / "golden"
METRICS = ["CosineSimilarity", "MaxAbsoluteError", "StandardDeviation", "KullbackLeiblerDivergence"]


def _rows() -> list[MetricRow]:
    return [
        MetricRow(0, "Data", "data", "data", None, status=PairStatus.MISSING_LEFT,
                  metrics={m: None for m in METRICS},
                  reasons=["no dump file for operator 'data' (type Data) in the left folder"]),
        MetricRow(1, "Conv2D", "conv1", "conv1,bn_conv1,scale_conv1", "conv1:output:0", "float16", "float32",
                  (1, 16, 32, 32), {"CosineSimilarity": 0.9999984, "MaxAbsoluteError": 0.017303,
                                    "KullbackLeiblerDivergence": -1e-9},
                  (0.40812, 0.6241, 0.4080, 0.0004), left_address=20619064705024),
        MetricRow(2, "Conv2D", "res2b", "res2b", "res2b:output:0", "float16", "float32", (1, 32),
                  {"CosineSimilarity": math.nan, "MaxAbsoluteError": math.inf, "KullbackLeiblerDivergence": None},
                  (math.nan, math.nan, 0.464, 0.674), reasons=["first", "second"]),
        MetricRow(3, "TransData", "=cmd", "*", "=cmd:output:0", "float16", None, (10,),
                  {m: None for m in METRICS}, status=PairStatus.MISSING_RIGHT,
                  reasons=["no golden tensor"]),
    ]


def test_metric_cell_conventions() -> None:
    assert metric_cell(None) == "NaN"
    assert metric_cell(math.nan) == "nan"
    assert metric_cell(math.inf) == "inf"
    assert metric_cell(-math.inf) == "-inf"
    assert metric_cell(0.9999995) == "1.000000"
    assert metric_cell(-1e-9) == "-0.000000"
    assert metric_cell(20.578012345) == "20.578012"


def test_std_cell_zeroes_small_values_and_keeps_nan() -> None:
    assert std_cell((-0.2841, 0.8312, -0.00049, 0.831)) == "(-0.284;0.831),(0.000;0.831)"
    assert std_cell((math.nan, math.nan, 2.0, 0.816)) == "(nan;nan),(2.000;0.816)"
    assert std_cell((math.inf, math.nan, 2.0, 0.816)) == "(inf;nan),(2.000;0.816)"
    assert std_cell(None) == "NaN"


def test_shape_cell() -> None:
    assert shape_cell((1, 3, 32, 32)) == "[1,3,32,32]"
    assert shape_cell(()) == "[]"
    assert shape_cell(None) == "NaN"


@pytest.mark.parametrize("cell,expected", [
    ("=SUM(A1)", "'=SUM(A1)"), ("+cmd", "'+cmd"), ("-op", "'-op"), ("@x", "'@x"),
    ("-0.000000", "-0.000000"), ("-1.5e-3", "-1.5e-3"), ("NaN", "NaN"), ("-inf", "-inf"), ("conv1", "conv1"),
])
def test_neutralise(cell: str, expected: str) -> None:
    assert neutralise(cell) == expected


def test_header_layouts() -> None:
    assert header(["CosineSimilarity"]) == ["Index", "OpType", "LeftOp", "LeftDataType", "RightOp", "RightDataType",
                                            "TensorIndex", "Shape", "CosineSimilarity", "FailReason"]
    ms = header(["CosineSimilarity"], Layout.MSACCUCMP, right_address=False)
    assert ms == ["Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType", "TensorIndex",
                  "Shape", "CosineSimilarity", "CompareFailReason"]


@pytest.mark.parametrize("name,render,layout", [
    ("network_vcompare.csv", render_csv, Layout.VCOMPARE),
    ("network_msaccucmp.csv", render_csv, Layout.MSACCUCMP),
    ("network_vcompare.txt", render_txt, Layout.VCOMPARE),
])
def test_golden_tables(name: str, render, layout: Layout, request: pytest.FixtureRequest) -> None:
    text = render(_rows(), METRICS, layout, left_address=True, right_address=False)
    golden = GOLDEN / name
    if request.config.getoption("--update-golden", default=False):
        golden.write_bytes(text.encode())
    assert text == golden.read_bytes().decode()


def test_resolve_output(tmp_path: Path) -> None:
    now = time.strptime("20261122 101500", "%Y%m%d %H%M%S")
    assert resolve_output(tmp_path, now=now) == (tmp_path / "result_20261122101500.csv", TableFormat.CSV)
    assert resolve_output(str(tmp_path / "new") + "/", now=now)[0] == tmp_path / "new" / "result_20261122101500.csv"
    assert resolve_output(tmp_path / "r.txt") == (tmp_path / "r.txt", TableFormat.TXT)
    assert resolve_output(tmp_path / "r.txt", csv_flag=True) == (tmp_path / "r.txt", TableFormat.CSV)
    assert resolve_output(tmp_path / "r.csv") == (tmp_path / "r.csv", TableFormat.CSV)


def test_write_report_is_atomic_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "result.csv"
    write_report(_rows(), target, METRICS)
    first = target.read_text()
    write_report(_rows()[:1], target, METRICS)
    assert target.read_text() != first
    assert [p.name for p in target.parent.iterdir()] == ["result.csv"]  # no temporary left behind
