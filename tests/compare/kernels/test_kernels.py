"""Kernels against their naive float64 twins (compare/testing/naive.py), the spec's edge table, the
shared float64 truth, and once more without JIT."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
import zlib
from functools import lru_cache

import ml_dtypes
import numpy as np
import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from compare.errors import CompareError, OptionError, ShapeError
from compare.kernels import (
    ALIASES,
    BOOL_CAPABLE,
    EPS32,
    EPS64,
    METRIC_NAMES,
    METRICS,
    KernelResult,
    Note,
    compare_arrays,
    is_scalar_like,
    resolve_algorithms,
)
from compare.kernels.metrics import DEFAULT_METRICS, MSPROBE_METRICS, PairTerms, selection
from compare.testing.naive import TWINS, close, reference_metrics

NAN, INF = math.nan, math.inf

#: The reference tool's 10 metrics in its column order: the first entries of the metric table
#: (their positions are the reference's ``-alg`` indexes). The edge table and the shared oracle
#: give their cells as the reference prints them; a metric added after them has none there.
REFERENCE_NAMES = (
    "CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError",
    "RelativeEuclideanDistance", "KullbackLeiblerDivergence", "StandardDeviation",
    "MeanAbsoluteError", "RootMeanSquareError", "MaxRelativeError", "MeanRelativeError",
)

# --------------------------------------------------------------------------- helpers


def kernel_as_reference(r: KernelResult) -> dict:
    """KernelResult in the twin's shape (StandardDeviation -> the 4-tuple)."""
    out = dict(r.values)
    if "StandardDeviation" in out:
        out["StandardDeviation"] = r.std
    return out


def format6(v) -> str:
    """The reference's cell text (what the report helper will do; used to pin the edge table)."""
    if v is None:
        return "NaN"
    return "{:.6f}".format(v)


def format_std(std) -> str:
    if std is None:
        return "NaN"
    vals = [0.0 if abs(v) < 0.001 else v for v in std]
    return "(%.3f;%.3f),(%.3f;%.3f)" % tuple(vals)


def cells(r: KernelResult) -> list[str]:
    """The reference's 10 cells as it prints them."""
    out = []
    for name in REFERENCE_NAMES:
        if name == "StandardDeviation":
            out.append(format_std(r.std))
        elif name == "CosineSimilarity" and Note.BOTH_ZERO in r.notes:
            out.append("1.0")
        else:
            out.append(format6(r.values[name]))
    return out


# --------------------------------------------------------------------------- cases

DTYPES = {
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
    "bfloat16": ml_dtypes.bfloat16,
    "int32": np.int32,
    "bool": np.bool_,
}
FLOAT_DTYPES = {"float16", "float32", "float64", "bfloat16"}

CASES = [
    "random",
    "nan_left",
    "nan_right",
    "nan_both",
    "posinf_left",
    "neginf_right",
    "inf_both_same_place",
    "zeros_in_y",
    "all_zero_left",
    "all_zero_right",
    "both_zero",
    "empty",
    "one_element",
    "scalar_like",
    "negative",
    "constant_sides",
    "tiny_values",
    "large_n",
]
NONFINITE_CASES = {"nan_left", "nan_right", "nan_both", "posinf_left", "neginf_right",
                   "inf_both_same_place"}


def make_case(case: str, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(f"{case}/{dtype}".encode()))
    n = 100_000 if case == "large_n" else 257
    x = rng.standard_normal(n)
    y = x + rng.standard_normal(n) * 0.01
    if case == "nan_left":
        x[3] = NAN
    elif case == "nan_right":
        y[5] = NAN
        y[6] = 0.0
    elif case == "nan_both":
        x[3], y[7] = NAN, NAN
    elif case == "posinf_left":
        x[9] = INF
    elif case == "neginf_right":
        y[11] = -INF
    elif case == "inf_both_same_place":
        x[2], y[2] = INF, INF
    elif case == "zeros_in_y":
        y[::3] = 0
    elif case == "all_zero_left":
        x[:] = 0
    elif case == "all_zero_right":
        y[:] = 0
    elif case == "both_zero":
        x[:], y[:] = 0, 0
    elif case == "empty":
        x, y = x[:0], y[:0]
    elif case in ("one_element", "scalar_like"):
        x, y = x[:1], y[:1]
    elif case == "negative":
        x, y = -np.abs(x) - 1, -np.abs(y) - 1
    elif case == "constant_sides":
        x[:], y[:] = 3, 2
    elif case == "tiny_values":
        x, y = x * 1e-6, y * 1e-6
    if dtype == "int32":
        x, y = np.round(x * 50), np.round(y * 50)
    elif dtype == "bool":
        x, y = x > 0, y > 0.1
    x, y = x.astype(DTYPES[dtype]), y.astype(DTYPES[dtype])
    if case == "scalar_like":
        x, y = x.reshape(1, 1, 1), y.reshape(1, 1, 1)
    return x, y


MATRIX = [
    (case, dtype)
    for case in CASES
    for dtype in DTYPES
    if not (case in NONFINITE_CASES and dtype not in FLOAT_DTYPES)
    and not (case == "tiny_values" and dtype in ("int32", "bool"))
]


@lru_cache(maxsize=None)
def _computed(case: str, dtype: str):
    x, y = make_case(case, dtype)
    scalar = is_scalar_like(x.shape)
    return compare_arrays(x, y, metrics=list(METRIC_NAMES), scalar=scalar), reference_metrics(x, y, scalar=scalar)


@pytest.mark.parametrize("metric", METRIC_NAMES)
@pytest.mark.parametrize("case,dtype", MATRIX)
def test_kernel_matches_twin(case, dtype, metric):
    got, want = _computed(case, dtype)
    g = kernel_as_reference(got)[metric]
    w = want[metric]
    assert close(g, w, rel=1e-9, abs_=1e-12), f"{metric} {case}/{dtype}: kernel {g!r} twin {w!r}"


@pytest.mark.parametrize("case,dtype", MATRIX)
def test_notes(case, dtype):
    got, _ = _computed(case, dtype)
    notes = got.notes
    assert got.count == make_case(case, dtype)[0].size
    assert (Note.EMPTY in notes) == (case == "empty")
    assert (Note.BOOL_DATA in notes) == (dtype == "bool")
    assert (Note.SCALAR in notes) == (case in ("one_element", "scalar_like"))
    if case == "all_zero_left":
        assert notes & {Note.LEFT_ALL_ZERO, Note.BOTH_ZERO}
        assert got.values["CosineSimilarity"] is None or Note.BOTH_ZERO in notes
    if case == "all_zero_right" and dtype != "bool":
        assert Note.RIGHT_ALL_ZERO in notes and got.values["CosineSimilarity"] is None
    if case in ("both_zero", "empty"):
        assert Note.BOTH_ZERO in notes and got.values["CosineSimilarity"] == 1.0
    if dtype == "bool":
        assert got.std is None
        assert all(v is None for k, v in got.values.items() if k not in BOOL_CAPABLE)
        golden_has_true = bool(make_case(case, dtype)[1].any())
        assert got.values["RelativeEuclideanDistance"] == (None if golden_has_true else 0.0)
    assert Note.KL_GOLDEN_ZERO not in notes


# ------------------------------------------------------------------ edge table (spec §5.2)

EDGE_TABLE = [
    ("both zeros", [0, 0, 0, 0], [0, 0, 0, 0],
     ["1.0", "0.000000", "0.000000", "0.000000", "0.000000", "(0.000;0.000),(0.000;0.000)",
      "0.000000", "0.000000", "0.000000", "0.000000"]),
    ("x=0, y=1", [0, 0, 0, 0], [1, 1, 1, 1],
     ["NaN", "1.000000", "4.000000", "1.000000", "0.000000", "(0.000;0.000),(1.000;0.000)",
      "1.000000", "1.000000", "1.000000", "1.000000"]),
    ("x=1, y=0", [1, 1, 1, 1], [0, 0, 0, 0],
     ["NaN", "1.000000", "0.000000", "0.000000", "0.000000", "(1.000;0.000),(0.000;0.000)",
      "1.000000", "1.000000", "0.000000", "0.000000"]),
    ("x has NaN", [1, NAN, 3], [1, 2, 3],
     ["nan", "nan", "nan", "nan", "nan", "(nan;nan),(2.000;0.816)", "nan", "nan", "nan", "nan"]),
    ("x has +inf", [1, INF, 3], [1, 2, 3],
     ["nan", "inf", "inf", "inf", "nan", "(inf;nan),(2.000;0.816)", "inf", "inf", "inf", "inf"]),
    ("x=-y", [-1, -2, -3], [1, 2, 3],
     ["-1.000000", "6.000000", "6.000000", "2.000000", "10.628255",
      "(-2.000;0.816),(2.000;0.816)", "4.000000", "4.320494", "2.000000", "2.000000"]),
    ("empty", [], [],
     ["1.0", "NaN", "0.000000", "0.000000", "NaN", "(nan;nan),(nan;nan)", "nan", "nan", "NaN",
      "nan"]),
    ("1-element", [2], [3],
     ["1.000000", "1.000000", "0.333333", "0.333333", "0.000000", "(2.000;0.000),(3.000;0.000)",
      "1.000000", "1.000000", "0.333333", "0.333333"]),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("label,x,y,expected", EDGE_TABLE, ids=[r[0] for r in EDGE_TABLE])
def test_edge_table(label, x, y, expected, dtype):
    r = compare_arrays(np.array(x, dtype), np.array(y, dtype))
    assert cells(r) == expected
    want = reference_metrics(np.array(x, dtype), np.array(y, dtype), scalar=len(x) == 1)
    for name in REFERENCE_NAMES:
        assert close(kernel_as_reference(r)[name], want[name]), name


def test_edge_table_notes():
    assert compare_arrays(np.zeros(4), np.ones(4)).notes == {Note.LEFT_ALL_ZERO}
    assert compare_arrays(np.ones(4), np.zeros(4)).notes == {Note.RIGHT_ALL_ZERO}
    assert compare_arrays(np.zeros(4), np.zeros(4)).notes == {Note.BOTH_ZERO}
    assert compare_arrays(np.zeros(0), np.zeros(0)).notes == {Note.BOTH_ZERO, Note.EMPTY}
    assert compare_arrays(np.array([2.0]), np.array([3.0])).notes == {Note.SCALAR}


def test_edge_table_bool_and_complex():
    x = np.array([True, False, True, True])
    y = np.array([True, True, False, True])
    r = compare_arrays(x, y)
    assert r.notes == {Note.BOOL_DATA}
    assert r.values["CosineSimilarity"] == pytest.approx(2 / 3)
    assert [k for k, v in r.values.items() if v is not None] == ["CosineSimilarity", *MSPROBE_METRICS]
    assert r.std is None
    # bool vs float: cast, every metric computed
    r = compare_arrays(x, y.astype(np.float32))
    assert Note.BOOL_DATA not in r.notes and r.values["MaxAbsoluteError"] == 1.0
    # complex: interleaved (real, imag) pairs; a real side has zero imaginary parts
    r = compare_arrays(np.array([1 + 5j, 2 - 1j]), np.array([1.0, 4.0]))
    assert Note.COMPLEX_PAIRS in r.notes
    assert r.values["MaxAbsoluteError"] == 5.0 and r.count == 4


def test_edge_table_nojit_probe():
    """In the NUMBA_DISABLE_JIT=1 subprocess, prove the kernels really ran as Python."""
    from compare.kernels import fused

    jit_disabled = os.environ.get("NUMBA_DISABLE_JIT") == "1"
    assert (not hasattr(fused._side_boxes, "py_func")) == jit_disabled


# --------------------------------------------------------------------------- policies


def test_cosine_clipped_and_negative():
    x = np.array([1.0, 2.0, 3.0]) * (1 + 1e-16)
    r = compare_arrays(x, np.array([1.0, 2.0, 3.0]))
    assert r.values["CosineSimilarity"] <= 1.0
    r = compare_arrays(np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    assert r.values["CosineSimilarity"] == 0.0


def test_cosine_zero_thresholds():
    # sqrt(|x|) <= eps64 means |x| <= eps64**2: tiny but non-zero left counts as all-zero
    tiny = np.full(4, 1e-33)
    r = compare_arrays(tiny, np.ones(4))
    assert r.values["CosineSimilarity"] is None and Note.LEFT_ALL_ZERO in r.notes
    # |x| <= eps and |y| < eps -> "1.0" even though neither is exactly zero
    r = compare_arrays(np.full(4, 1e-17), np.full(4, -1e-17))
    assert r.values["CosineSimilarity"] == 1.0 and Note.BOTH_ZERO in r.notes
    # left norm between eps**2 and eps, right large: an ordinary cosine
    r = compare_arrays(np.full(4, 1e-20), np.ones(4))
    assert r.values["CosineSimilarity"] == pytest.approx(1.0)


def test_scalar_overrides_everything_for_cosine():
    r = compare_arrays(np.zeros((1, 1)), np.ones((1, 1)))
    assert r.values["CosineSimilarity"] == 1.0 and r.notes == {Note.SCALAR}
    r = compare_arrays(np.array(5.0), np.array(-5.0))  # 0-d: shape () is scalar-like
    assert r.values["CosineSimilarity"] == 1.0
    r = compare_arrays(np.zeros((1, 1)), np.ones((1, 1)), scalar=False)
    assert r.values["CosineSimilarity"] is None and r.notes == {Note.LEFT_ALL_ZERO}
    # the caller's scalar flag wins over x's shape
    r = compare_arrays(np.array([1.0, 2.0]), np.array([2.0, 1.0]), scalar=True)
    assert r.values["CosineSimilarity"] == 1.0


@pytest.mark.parametrize(
    "shape,expected",
    [((), True), ((1,), True), ((1, 1, 1, 1), True), ((0,), False), ((2,), False),
     ((1, 2), False), ((0, 1), False),
     ((3, 0, 0), True)],  # the reference's formula, literally: an empty (3,0,0) is scalar-like
)
def test_is_scalar_like(shape, expected):
    assert is_scalar_like(shape) is expected


def test_relative_error_form_and_mask():
    x = np.array([1.0, 2.0, NAN, 5.0, 7.0])
    y = np.array([2.0, 0.0, 0.0, NAN, 1e-17])
    r = compare_arrays(x, y)
    # only element 0 is unmasked: |1/2 - 1| = 0.5; NaN y and |y| <= eps are masked to 0
    assert r.values["AccumulatedRelativeError"] == 0.5
    assert r.values["MaxRelativeError"] == 0.5
    assert r.values["MeanRelativeError"] == 0.5 / 5
    # x/y - 1 form: y = -inf gives |x/-inf - 1| = 1
    r = compare_arrays(np.array([3.0]), np.array([-INF]))
    assert r.values["MaxRelativeError"] == 1.0


def test_red_zero_golden():
    r = compare_arrays(np.array([1.0, 2.0]), np.array([0.0, 1e-17]))
    assert r.values["RelativeEuclideanDistance"] == 0.0


def test_kl_properties():
    x = np.array([0.1, 0.5, 0.9, 0.3])
    r = compare_arrays(x, x * 3 + 7)  # min-max normalisation makes these identical
    assert r.values["KullbackLeiblerDivergence"] == 0.0
    r = compare_arrays(np.array([5.0, 5.0, 5.0]), np.array([-1.0, -1.0, -1.0]))
    assert r.values["KullbackLeiblerDivergence"] == 0.0  # both constant (range 0)
    r = compare_arrays(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, NAN]))
    assert math.isnan(r.values["KullbackLeiblerDivergence"])


def test_std_is_accurate_with_large_offset():
    rng = np.random.default_rng(1)
    x = 1e6 + rng.standard_normal(10_000)
    r = compare_arrays(x, x, metrics="std")
    assert r.values == {"StandardDeviation": None}
    assert r.std[1] == pytest.approx(np.std(x), rel=1e-12)
    assert r.std[0] == pytest.approx(math.fsum(x) / x.size, rel=1e-15)


def test_std_inf_sides():
    r = compare_arrays(np.array([1.0, -INF]), np.array([INF, -INF]), metrics=["std"])
    assert r.std[0] == -INF and math.isnan(r.std[1])
    assert math.isnan(r.std[2]) and math.isnan(r.std[3])


def test_metric_selection_limits_output():
    x, y = make_case("random", "float32")
    r = compare_arrays(x, y, metrics="kl, 0")
    assert list(r.values) == ["KullbackLeiblerDivergence", "CosineSimilarity"]
    assert r.std is None
    full = compare_arrays(x, y)
    assert r.values["KullbackLeiblerDivergence"] == full.values["KullbackLeiblerDivergence"]
    # notes belong to their metric: no cosine, no cosine note
    r = compare_arrays(np.zeros(3), np.ones(3), metrics="maxabs")
    assert r.notes == frozenset()


@pytest.mark.parametrize(
    "lt,rt",
    [(np.float32, np.float64), (np.float64, np.float32), (np.float16, np.float64),
     (np.int64, np.float32), (np.uint8, ml_dtypes.bfloat16), (np.int16, np.bool_)],
)
def test_mixed_dtypes(lt, rt):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(1000) * 20).astype(lt)
    y = (rng.standard_normal(1000) * 20).astype(rt)
    got = kernel_as_reference(compare_arrays(x, y, metrics=list(METRIC_NAMES), scalar=False))
    want = reference_metrics(x, y)
    for name in METRIC_NAMES:
        assert close(got[name], want[name]), name


def test_layouts_and_views():
    rng = np.random.default_rng(4)
    base = rng.standard_normal((40, 50)).astype(np.float32)
    other = rng.standard_normal((50, 40)).astype(np.float32)
    for x, y in [
        (base.T, other),  # F-ordered view
        (base[:, ::2], other[::2, :]),  # strided
        (base.astype(">f4"), other.astype(">f8")),  # big-endian
    ]:
        got = kernel_as_reference(compare_arrays(x, y, metrics=list(METRIC_NAMES)))
        want = reference_metrics(x, y)
        for name in METRIC_NAMES:
            assert close(got[name], want[name]), name
    ro = np.frombuffer(base.tobytes(), dtype=np.float32)  # read-only buffer
    assert not ro.flags.writeable
    got = compare_arrays(ro, other)
    assert close(got.values["CosineSimilarity"], reference_metrics(ro, other)["CosineSimilarity"])


def test_length_mismatch_raises_with_both_counts():
    with pytest.raises(ShapeError, match=r"left has 3 .*right has 4"):
        compare_arrays(np.zeros(3), np.zeros(4))


def test_unsupported_dtype():
    with pytest.raises(CompareError, match="dtype"):
        compare_arrays(np.array(["a", "b"]), np.array([1.0, 2.0]))


# --------------------------------------------------------------------------- property test

finite_or_not = st.floats(width=32, allow_nan=True, allow_infinity=True)
moderate = st.floats(min_value=-1e4, max_value=1e4, width=32)


@st.composite
def pairs(draw):
    n = draw(st.integers(0, 60))
    elems = draw(st.sampled_from([moderate, finite_or_not]))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    x = draw(hnp.arrays(dtype, n, elements=elems))
    y = draw(hnp.arrays(np.float32, n, elements=elems))
    return x, y


@settings(max_examples=int(os.environ.get("VCOMPARE_HYPO_EXAMPLES", "300")), deadline=None)
@given(pairs())
def test_property_kernel_equals_twin(xy):
    x, y = xy
    got = kernel_as_reference(compare_arrays(x, y, metrics=list(METRIC_NAMES), scalar=False))
    want = reference_metrics(x, y, scalar=False)
    finite = np.abs(np.concatenate([x, y]).astype(np.float64))
    finite = finite[np.isfinite(finite)]
    # a mean can cancel (e.g. -3e38 + 3e38): its rounding error scales with max |v|, not |mean|
    scale = float(finite.max()) if finite.size else 1.0
    for name in METRIC_NAMES:
        abs_ = 1e-12 * scale + 1e-9 if name == "StandardDeviation" else 1e-9
        assert close(got[name], want[name], rel=1e-9, abs_=abs_), (name, got[name], want[name])


# --------------------------------------------------------------------------- metric table


def test_metric_table():
    assert METRIC_NAMES[: len(REFERENCE_NAMES)] == REFERENCE_NAMES
    assert list(METRICS) == list(METRIC_NAMES)
    for i, name in enumerate(METRIC_NAMES):
        m = METRICS[name]
        assert (m.name, m.index) == (name, i)
        assert m.doc and m.alias
        assert ALIASES[m.alias] == name
        assert callable(m.finish)
    assert METRICS["CosineSimilarity"].higher_is_better is True
    assert METRICS["StandardDeviation"].higher_is_better is None
    assert METRICS["RootMeanSquareError"].higher_is_better is False
    assert BOOL_CAPABLE == ("CosineSimilarity", "RelativeEuclideanDistance", "EucDist", "OneThousandthErrRatio",
                            "FiveThousandthsErrRatio")
    assert DEFAULT_METRICS == REFERENCE_NAMES and METRIC_NAMES == REFERENCE_NAMES + MSPROBE_METRICS
    assert [METRICS[n].higher_is_better for n in MSPROBE_METRICS] == [False, True, True]
    assert EPS64 == np.finfo(np.float64).eps and EPS32 == np.finfo(np.float32).eps


def test_every_metric_has_a_twin():
    """The naive twins cover the table exactly: a new metric without its twin fails here."""
    assert list(TWINS) == list(METRIC_NAMES)


def test_selection_asks_the_pass_for_what_its_metrics_read():
    plain = selection(("CosineSimilarity", "MaxAbsoluteError"), False)
    assert list(plain.finish) == ["CosineSimilarity", "MaxAbsoluteError"]
    assert (plain.rel, plain.kl, plain.std, plain.err) == (False, False, False, False)
    rel = selection(("MeanRelativeError", "RootMeanSquareError"), False)
    assert (rel.rel, rel.kl, rel.std, rel.err) == (True, False, False, False)
    every = selection(tuple(METRIC_NAMES), False)
    assert list(every.finish) == list(METRIC_NAMES)
    assert (every.rel, every.kl, every.std, every.err) == (True, True, True, True)
    # bool data: only the metrics computed on bool, in selection order; nothing else is asked for
    on_bool = selection(tuple(reversed(METRIC_NAMES)), True)
    assert list(on_bool.finish) == ["FiveThousandthsErrRatio", "OneThousandthErrRatio", "EucDist",
                                    "RelativeEuclideanDistance", "CosineSimilarity"]
    assert (on_bool.rel, on_bool.kl, on_bool.std, on_bool.err) == (False, False, False, True)
    assert selection(("CosineSimilarity", "RelativeEuclideanDistance"), True).err is False
    assert {n for n, m in METRICS.items() if PairTerms.ERR in m.terms} == set(MSPROBE_METRICS)
    assert METRICS["KullbackLeiblerDivergence"].terms == PairTerms.KL
    assert {n for n, m in METRICS.items() if PairTerms.REL in m.terms} == {
        "AccumulatedRelativeError", "MaxRelativeError", "MeanRelativeError"}


@pytest.mark.parametrize("case,dtype", MATRIX)
def test_each_metric_alone_equals_its_value_among_all(case, dtype):
    """A metric selected alone gets the value it gets among all: its entry's ``terms`` ask the
    paired pass for every sum its ``finish`` reads (a missing one would read 0 alone). Equal up to
    rounding only: the pass accumulates in another loop when it also computes other terms."""
    full, _ = _computed(case, dtype)
    x, y = make_case(case, dtype)
    for name in METRIC_NAMES:
        alone = compare_arrays(x, y, metrics=[name], scalar=is_scalar_like(x.shape))
        assert close(alone.values[name], full.values[name], rel=1e-12, abs_=1e-15), (
            name, alone.values[name], full.values[name])
        assert alone.notes <= full.notes, name
        if name == "StandardDeviation":
            assert close(alone.std, full.std, rel=0.0, abs_=0.0)


@pytest.mark.parametrize(
    "spec,expected",
    [
        (None, list(REFERENCE_NAMES)),
        ("all", list(REFERENCE_NAMES)),
        ("ALL", list(REFERENCE_NAMES)),
        ("msprobe", ["EucDist", "OneThousandthErrRatio", "FiveThousandthsErrRatio"]),
        ("all,msprobe", list(METRIC_NAMES)),
        ("euc,12 ratio1", ["EucDist", "FiveThousandthsErrRatio", "OneThousandthErrRatio"]),
        (["EucDist", "one_thousandth_err_ratio", "Five-Thousandths-Err-Ratio", "euclidean_distance",
          "one_thousand_err_ratio"], ["EucDist", "OneThousandthErrRatio", "FiveThousandthsErrRatio"]),
        ("0", ["CosineSimilarity"]),
        (7, ["RootMeanSquareError"]),
        ("0,MaxAbsoluteError,kl", ["CosineSimilarity", "MaxAbsoluteError",
                                   "KullbackLeiblerDivergence"]),
        ("9 8,  ,7", ["MeanRelativeError", "MaxRelativeError", "RootMeanSquareError"]),
        ("kl,4,KullbackLeiblerDivergence,kullback_leibler_divergence",
         ["KullbackLeiblerDivergence"]),
        (["cos", 1, "max_abs", "RED", "Std"], ["CosineSimilarity", "MaxAbsoluteError",
                                               "RelativeEuclideanDistance",
                                               "StandardDeviation"]),
        (["meanrel,meanabs", "accrel", "maxrel", "rmse"],
         ["MeanRelativeError", "MeanAbsoluteError", "AccumulatedRelativeError",
          "MaxRelativeError", "RootMeanSquareError"]),
        ("3,all", ["RelativeEuclideanDistance"]
         + [n for n in REFERENCE_NAMES if n != "RelativeEuclideanDistance"]),
        ((np.int64(5),), ["StandardDeviation"]),
    ],
)
def test_resolve_algorithms(spec, expected):
    assert resolve_algorithms(spec) == expected


@pytest.mark.parametrize(
    "spec,lists_valid",
    [("", False), (" , ", False), ([], False), (str(len(METRIC_NAMES)), True), ("0,Foo", True),
     (["cos", "nope"], True), (-1, True), ([True], False), ([1.5], False)],
)
def test_resolve_algorithms_refuses(spec, lists_valid):
    with pytest.raises(OptionError) as info:
        resolve_algorithms(spec)
    if lists_valid:  # an unknown name: the message lists the valid ones
        assert "0=CosineSimilarity (cos)" in str(info.value)


# --------------------------------------------------------------------------- shared float64 truth


def _truth_value(cell: str):
    if cell == "NaN":
        return None
    return float(cell)  # "nan", "inf", "1.0", "0.123456"


def test_shared_mindspore_truth():
    """Every pair of the shared mindspore_npy case (raw .npy both sides, no layout conversion)
    against the oracle's float64 ref_metrics.csv (values printed with 6 decimals)."""
    from conftest import shared_path

    case = shared_path("cases", "mindspore_npy")
    info = json.loads((case / "case.json").read_text())
    with (case / "oracle" / "ref_metrics.csv").open(newline="") as f:
        truth = {row["TensorIndex"]: row for row in csv.DictReader(f)}
    checked = 0
    for pair in info["pairs"]:
        row = truth[pair["tensor_id"]]
        x = np.load(case / pair["left_file"])
        y = np.load(case / pair["right_file"])
        r = compare_arrays(x, y, scalar=is_scalar_like(x.shape))
        for name in REFERENCE_NAMES:
            cell = row[name]
            if name == "StandardDeviation":
                assert format_std(r.std) == cell, (pair["tensor_id"], name)
                continue
            if name == "CosineSimilarity":
                assert (Note.BOTH_ZERO in r.notes) == (cell == "1.0"), pair["tensor_id"]
            want, got = _truth_value(cell), r.values[name]
            assert close(got, want, rel=1e-7, abs_=1e-6), (pair["tensor_id"], name, got, cell)
        checked += 1
    assert checked == len(truth) == 62


# --------------------------------------------------------------------------- import / no-JIT runs


def test_import_does_not_load_numba():
    code = "import compare.kernels, sys; assert 'numba' not in sys.modules, 'numba imported'"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="already without JIT")
def test_suite_subset_without_jit():
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider", "-n", "0",  # in this process
         "-k", "edge_table or relative_error or kl_properties"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout


# ------------------------------------------------------------------ scipy as an independent reference


@pytest.mark.parametrize("seed", range(5))
def test_cosine_and_kl_agree_with_scipy(seed):
    """Two metrics against SciPy's own implementations (written independently of ours):
    CosineSimilarity = 1 - scipy.spatial.distance.cosine, KullbackLeiblerDivergence =
    scipy.stats.entropy of the min-max-normalised, eps32-floored sides (METRICS doc)."""
    distance = pytest.importorskip("scipy.spatial.distance", reason="scipy is part of the test extra")
    stats = pytest.importorskip("scipy.stats", reason="scipy is part of the test extra")
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5000))
    y = rng.standard_normal(n).astype(np.float32)
    x = (y + rng.standard_normal(n).astype(np.float32) * 0.05).astype(np.float32)
    result = compare_arrays(x, y)

    assert result.values["CosineSimilarity"] == pytest.approx(1.0 - distance.cosine(x.astype(np.float64),
                                                                                   y.astype(np.float64)),
                                                              rel=1e-12, abs=1e-12)

    def normalised(v: np.ndarray) -> np.ndarray:
        v = v.astype(np.float64)
        span = v.max() - v.min()
        p = (v - v.min()) / span if span != 0 else v
        return np.maximum(p, float(np.finfo(np.float32).eps))

    expected = stats.entropy(normalised(x), normalised(y))
    assert result.values["KullbackLeiblerDivergence"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
