"""Slow, obviously-right float64 numpy twins of the metrics (test oracle for the kernels).

Each metric is written the way the reference tool's specification states it (§5 of
``shared/spec/reference-tool.md``), with whole-array numpy operations in float64, no fusion and
no cleverness. Only the precision differs from the reference tool (float64 here, float32 there).
Values: ``None`` = not computed, ``nan`` = computed and NaN. ``StandardDeviation`` maps to the
tuple ``(mean x, std x, mean y, std y)`` (or None). :data:`TWINS` names the twin of each metric of
the table, :func:`reference_metrics` runs them all.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from compare.kernels.metrics import METRIC_NAMES

EPS64 = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps)

#: The metric names, in the report's order (labels only: the formulas below are this module's own).
NAMES = METRIC_NAMES


def as_f64(a) -> np.ndarray:
    """Flat float64 copy; complex -> interleaved (real, imag) values, 2 per element."""
    a = np.asarray(a)
    if a.dtype.kind == "c":
        return np.stack([a.real.astype(np.float64), a.imag.astype(np.float64)], axis=-1).reshape(-1)
    return np.asarray(a, dtype=np.float64).reshape(-1)


def cosine(x, y, scalar=False):
    if scalar:
        return 1.0
    nx = np.sqrt(np.sum(x * x))
    ny = np.sqrt(np.sum(y * y))
    if nx <= EPS64 and ny < EPS64:
        return 1.0
    if np.sqrt(nx) <= EPS64 or np.sqrt(ny) <= EPS64:
        return None
    c = float(np.sum((x / nx) * (y / ny)))
    return min(c, 1.0)


def max_abs(x, y):
    return float(np.max(np.abs(x - y))) if x.size else None


def rel_terms(x, y):
    return np.where(np.abs(y) > EPS64, np.abs(x / y - 1.0), 0.0)


def acc_rel(x, y):
    return float(np.sum(rel_terms(x, y)))


def max_rel(x, y):
    return float(np.max(rel_terms(x, y))) if x.size else None


def mean_rel(x, y):
    return float(np.mean(rel_terms(x, y)))


def red(x, y):
    s = np.sum(y**2)
    if np.sqrt(s) <= EPS64:
        return 0.0
    return float(np.sum((x - y) ** 2) / s) ** 0.5


def _kl_norm(a):
    mn, mx = np.min(a), np.max(a)
    if mx - mn != 0:
        a = (a - mn) / (mx - mn)
    return np.maximum(a, EPS32)


def kl(x, y):
    if not x.size:
        return None
    p = _kl_norm(x)
    q = _kl_norm(y)
    P = p / np.sum(p)
    Q = q / np.sum(q)
    v = float(np.sum(P * np.log(P / Q)))
    return 0.0 if abs(v) < EPS64 else v


def std(x, y):
    return (float(np.mean(x)), float(np.std(x)), float(np.mean(y)), float(np.std(y)))


def mean_abs(x, y):
    return float(np.mean(np.abs(x - y)))


def rmse(x, y):
    return float(np.sqrt(np.mean((x - y) ** 2)))


def msprobe_dtype(xa: np.ndarray, ya: np.ndarray) -> np.dtype:
    """The precision msprobe computes its relative errors in, ``numpy.result_type(x, y,
    float32)`` of the arrays it reads: float32 when both sides are floats of 4 bytes or fewer
    (msprobe reads bfloat16 and float8 as float32), float64 otherwise (int and bool are read as
    float64)."""
    def small(dt: np.dtype) -> bool:
        return (dt.kind == "f" and dt.itemsize <= 4) or (dt.kind == "V" and dt.itemsize <= 2 and not dt.names) \
            or (dt.kind == "c" and dt.itemsize <= 8)
    return np.dtype(np.float32) if small(xa.dtype) and small(ya.dtype) else np.dtype(np.float64)


def msprobe_clean(x, y):
    """msprobe's NaN/inf rule: copies with NaN (resp. inf) set to 0 where both sides have one at
    the same position; None when the NaN or the inf positions of the two sides differ."""
    xn, yn, xi, yi = np.isnan(x), np.isnan(y), np.isinf(x), np.isinf(y)
    if not (np.array_equal(xn, yn) and np.array_equal(xi, yi)):
        return None
    x, y = x.copy(), y.copy()
    x[xn | xi] = 0
    y[yn | yi] = 0
    return x, y


def euc_dist(x, y):
    """msprobe's EucDist: ``sqrt(sum (x - y)^2)`` in float64 after :func:`msprobe_clean`."""
    if not x.size:
        return 0.0
    clean = msprobe_clean(x, y)
    if clean is None:
        return math.nan
    d = clean[0].astype(np.float64) - clean[1].astype(np.float64)
    return float(np.sqrt(np.sum(d * d)))


def err_ratio(x, y, threshold):
    """msprobe's error ratio: the share of ``|(x - y) / y| < threshold``, in the arrays' own
    precision (float32 or float64), ``y == 0`` replaced by ``eps`` on both sides' values
    (``x + eps``, ``eps``); after :func:`msprobe_clean`."""
    if not x.size:
        return None
    clean = msprobe_clean(x, y)
    if clean is None:
        return math.nan
    n, b = clean
    eps = np.finfo(n.dtype).eps
    zero = b == 0
    n[zero] += eps
    b[zero] += eps
    r = np.abs((n - b) / b)
    return float(np.count_nonzero(r < n.dtype.type(threshold)) / r.size)


#: The twin of each metric of :data:`compare.kernels.metrics.METRICS`: name -> ``(x, y, scalar) ->
#: value`` over flat float64 arrays (``scalar``: the shape is scalar-like; only cosine reads it);
#: msprobe's metrics (:data:`MSPROBE_TWINS`) get the arrays in msprobe's precision
#: (:func:`msprobe_dtype`) instead. A new metric adds its line here (and its function above).
TWINS = {
    "CosineSimilarity": cosine,
    "MaxAbsoluteError": lambda x, y, scalar: max_abs(x, y),
    "AccumulatedRelativeError": lambda x, y, scalar: acc_rel(x, y),
    "RelativeEuclideanDistance": lambda x, y, scalar: red(x, y),
    "KullbackLeiblerDivergence": lambda x, y, scalar: kl(x, y),
    "StandardDeviation": lambda x, y, scalar: std(x, y),
    "MeanAbsoluteError": lambda x, y, scalar: mean_abs(x, y),
    "RootMeanSquareError": lambda x, y, scalar: rmse(x, y),
    "MaxRelativeError": lambda x, y, scalar: max_rel(x, y),
    "MeanRelativeError": lambda x, y, scalar: mean_rel(x, y),
    "EucDist": lambda x, y, scalar: euc_dist(x, y),
    "OneThousandthErrRatio": lambda x, y, scalar: err_ratio(x, y, 0.001),
    "FiveThousandthsErrRatio": lambda x, y, scalar: err_ratio(x, y, 0.005),
}
#: The twins that take the arrays in msprobe's precision.
MSPROBE_TWINS = ("EucDist", "OneThousandthErrRatio", "FiveThousandthsErrRatio")


def reference_metrics(x, y, scalar: bool = False) -> dict:
    """Every metric of the table (:data:`NAMES` order) of left ``x`` vs golden ``y`` (any dtypes,
    same element count), each by its twin in :data:`TWINS`."""
    xa, ya = np.asarray(x), np.asarray(y)
    prec = msprobe_dtype(xa, ya)
    if xa.dtype.kind == "b" and ya.dtype.kind == "b":
        out = {name: None for name in NAMES}
        out["CosineSimilarity"] = cosine(as_f64(xa), as_f64(ya), scalar)
        if not ya.any():  # the reference's RED: 0 for an all-zero golden, before its bool x - y fails
            out["RelativeEuclideanDistance"] = 0.0
        for name in MSPROBE_TWINS:  # msprobe computes its metrics on bool data (as float64 0/1)
            out[name] = TWINS[name](as_f64(xa), as_f64(ya), scalar)
        return out
    if "c" in (xa.dtype.kind, ya.dtype.kind):  # a real side against complex: imaginary parts 0
        xa, ya = xa.astype(np.complex128), ya.astype(np.complex128)
    xf, yf = as_f64(xa), as_f64(ya)
    xm, ym = xf.astype(prec), yf.astype(prec)  # exact: the values are of that precision
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return {name: TWINS[name](xm, ym, scalar) if name in MSPROBE_TWINS else TWINS[name](xf, yf, scalar)
                for name in NAMES}


def close(a, b, rel: float = 1e-9, abs_: float = 1e-12) -> bool:
    """Equal within tolerance, with None == None, nan == nan and inf == inf (same sign)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(close(u, v, rel, abs_) for u, v in zip(a, b))
        )
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= abs_ + rel * max(abs(a), abs(b))
