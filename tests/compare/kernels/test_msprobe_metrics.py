"""msprobe's three metrics (EucDist, OneThousandthErrRatio, FiveThousandthsErrRatio): their edge
policies, the precision of the relative error, the selection flag, and the values msprobe itself
wrote in its compare CSVs for the shared real trees (skipped without ``../shared``)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from conftest import shared_path
from typer.testing import CliRunner

from compare.kernels import compare_arrays
from compare.kernels.metrics import DEFAULT_METRICS, MSPROBE_METRICS
from compare.testing.naive import close, reference_metrics

EUC, R1, R5 = MSPROBE_METRICS


def _values(x, y, dtype=np.float32) -> dict:
    return compare_arrays(np.array(x, dtype), np.array(y, dtype), metrics="msprobe").values


def test_names_and_defaults():
    assert MSPROBE_METRICS == ("EucDist", "OneThousandthErrRatio", "FiveThousandthsErrRatio")
    assert not set(MSPROBE_METRICS) & set(DEFAULT_METRICS)
    # the API's default is every metric; a selection without them does not compute them
    assert list(compare_arrays(np.ones(3), np.ones(3)).values) == list(DEFAULT_METRICS + MSPROBE_METRICS)
    assert set(compare_arrays(np.ones(3), np.ones(3), metrics="all").values) == set(DEFAULT_METRICS)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_simple_values(dtype):
    v = _values([1.0, 2.0, 3.0, 4.0], [1.0, 2.002, 3.0006, 5.0], dtype)
    assert v[EUC] == pytest.approx(math.sqrt(0.002 ** 2 + 0.0006 ** 2 + 1.0), rel=1e-6)
    # relative errors ~ 0, 0.000999, 0.0002, 0.2
    assert v[R1] == 0.75 and v[R5] == 0.75


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_zero_golden(dtype):
    # y == 0: r = |(x + eps) - eps| / eps: 0 when x is 0 too, huge otherwise
    v = _values([0.0, 1e-3, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], dtype)
    assert v[R1] == 0.75 and v[R5] == 0.75
    assert v[EUC] == pytest.approx(1e-3)


def test_special_values_at_the_same_positions_count_as_equal():
    nan, inf = math.nan, math.inf
    v = _values([nan, 1.0, inf, -inf, 2.0], [nan, 1.0, -inf, -inf, 2.5])
    assert v[EUC] == pytest.approx(0.5) and v[R1] == 0.8 and v[R5] == 0.8
    for x, y in [([nan, 1.0], [1.0, 1.0]), ([1.0, 1.0], [1.0, inf]), ([nan, 1.0], [inf, 1.0])]:
        v = _values(x, y)
        assert all(math.isnan(v[m]) for m in MSPROBE_METRICS), (x, y, v)


def test_empty_and_one_element():
    v = _values([], [])
    assert v == {EUC: 0.0, R1: None, R5: None}
    v = compare_arrays(np.array([[2.0]], np.float32), np.array([[2.003]], np.float32), metrics="msprobe").values
    assert v[R1] == 0.0 and v[R5] == 1.0 and v[EUC] == pytest.approx(0.003, rel=1e-4)


def test_float32_precision_like_msprobe():
    """float32 data: r in float32 against float32(0.001) -- an element the float64 computation puts
    just outside the threshold is inside in float32, as in msprobe."""
    y = np.float32(1.0)
    # smallest float32 x above 1 whose float64 relative error is >= 0.001
    x = np.nextafter(np.float32(1.001), np.float32(2))
    while (np.float64(x) - 1.0) < 0.001:
        x = np.nextafter(x, np.float32(2))
    r32 = np.abs((np.float32(x) - y) / y)
    inside32 = bool(r32 < np.float32(0.001))
    got = compare_arrays(np.array([x], np.float32), np.array([y], np.float32), metrics=[R1]).values[R1]
    assert got == (1.0 if inside32 else 0.0)
    got64 = compare_arrays(np.array([x], np.float64), np.array([y], np.float64), metrics=[R1]).values[R1]
    assert got64 == 0.0


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int32, np.bool_])
def test_against_twin_with_many_near_threshold(dtype):
    rng = np.random.default_rng(11)
    x = rng.standard_normal(20000).astype(np.float64)
    y = x * (1 + rng.uniform(-0.006, 0.006, x.size))
    if dtype == np.int32:
        x, y = np.round(x * 1000), np.round(y * 1000)
    if dtype == np.bool_:
        x, y = x > 0, y > 0.01
    x, y = x.astype(dtype), y.astype(dtype)
    y[::13] = 0
    got = compare_arrays(x, y, metrics="msprobe").values
    want = reference_metrics(x, y)
    for m in MSPROBE_METRICS:
        assert close(got[m], want[m], rel=1e-12, abs_=0.0), (m, got[m], want[m])


def test_bool_data_gets_msprobe_metrics():
    x = np.array([True, False, True, True])
    y = np.array([True, True, False, True])
    v = compare_arrays(x, y, metrics="msprobe").values
    assert v == {EUC: pytest.approx(math.sqrt(2)), R1: 0.5, R5: 0.5}


# ------------------------------------------------------------------ msprobe's own CSVs

#: msprobe's case -> (left tree, right tree) (see the README of ../shared/msprobe-real)
CASES = {"t_L1_perturb": ("t_L1_perturb", "t_L1_base"), "t_L1_bf16": ("t_L1_bf16", "t_L1_base"),
         "t_L1_self": ("t_L1_base", "t_L1_base")}
COLUMNS = {"EucDist": EUC, "One Thousandth Err Ratio": R1, "Five Thousandths Err Ratio": R5}


@pytest.mark.parametrize("case", list(CASES))
def test_msprobe_csv_values(case, tmp_path):
    """Every value msprobe's CSV gives for the three metrics equals ours to 1e-6 (rows matched
    by name: msprobe's ``X.input.0`` is our ``X:input:0``)."""
    msprobe_real = shared_path("msprobe-real")
    found = sorted((msprobe_real / "msprobe_compare" / case / "step0").glob("compare_result_*.csv"))
    left, right = (msprobe_real / "trees" / t for t in CASES[case])
    if not found or not left.is_dir() or not right.is_dir():
        pytest.skip(f"msprobe's compare CSV or trees for {case} not found under {msprobe_real}")
    from compare.cli import app

    out = tmp_path / "r.json"
    res = CliRunner().invoke(app, ["-l", str(left), "-r", str(right), "-o", str(tmp_path / "r.csv"),
                                   "--json", str(out), "-alg", "msprobe", "--allow-same"])
    assert out.is_file(), res.output
    rows = {r["tensor_id"].replace(":", "."): r for r in json.loads(out.read_text())["rows"]}
    checked = 0
    for line in csv.DictReader(found[0].open(newline="")):
        for column, metric in COLUMNS.items():
            try:
                want = float(line[column])
            except ValueError:  # msprobe's "unsupported" / "N/A": not defined there
                continue
            got = rows[line["NPU Name"]]["metrics"][metric]
            assert got is not None and abs(got - want) <= 1e-6, (line["NPU Name"], column, got, want)
            checked += 1
    assert checked >= 900  # 306 tensors of 310 (msprobe leaves the 0-d ones unsupported), 3 columns


# ------------------------------------------------------------------ command line

@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from compare.testing.synthetic import make_network

    return make_network(tmp_path_factory.mktemp("net"))


def _cli(net: dict[str, Path], out: Path, *extra: str):
    from compare.cli import app

    args = ["-l", net["left"], "-r", net["right"], "-f", net["fusion_rule"], "-o", out, *extra]
    return CliRunner().invoke(app, [str(a) for a in args])


def test_cli_alg_names_the_new_columns_and_json_carries_them(net, tmp_path):
    plain = tmp_path / "plain.csv"
    assert _cli(net, plain).exit_code == 0
    header = plain.read_text().splitlines()[0].split(",")
    assert not set(MSPROBE_METRICS) & set(header)  # the default layout stays the reference's
    out = tmp_path / "r.csv"
    res = _cli(net, out, "-alg", "cos,euc,ratio1,FiveThousandthsErrRatio", "--json", str(tmp_path / "r.json"))
    assert res.exit_code == 0, res.output
    lines = list(csv.DictReader(out.open(newline="")))
    assert {"CosineSimilarity", *MSPROBE_METRICS} <= set(lines[0])
    rows = [r for r in json.loads((tmp_path / "r.json").read_text())["rows"] if r["status"] == "compared"]
    assert rows and all(set(MSPROBE_METRICS) <= set(r["metrics"]) for r in rows)
    ratios = [r["metrics"][R1] for r in rows if r["metrics"][R1] is not None]
    assert ratios and all(0.0 <= v <= 1.0 for v in ratios)
    assert all(r["metrics"][R1] <= r["metrics"][R5] for r in rows if r["metrics"][R1] is not None)


def test_cli_gates_on_the_new_metrics(net, tmp_path):
    ok = _cli(net, tmp_path / "a.csv", "-alg", "msprobe", "--gate", "EucDist<=1e12", "--gate",
              "OneThousandthErrRatio>=0")
    assert ok.exit_code == 0, ok.output
    bad = _cli(net, tmp_path / "b.csv", "-alg", "msprobe", "--gate", "EucDist<=0", "--gate",
               "FiveThousandthsErrRatio>=1.5")
    assert bad.exit_code != 0 and "EucDist" in bad.output + str(bad.stderr_bytes or b"")
