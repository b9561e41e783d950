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


#: The twin of each metric of :data:`compare.kernels.metrics.METRICS`: name -> ``(x, y, scalar) ->
#: value`` over flat float64 arrays (``scalar``: the shape is scalar-like; only cosine reads it).
#: A new metric adds its line here (and its function above).
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
}


def reference_metrics(x, y, scalar: bool = False) -> dict:
    """Every metric of the table (:data:`NAMES` order) of left ``x`` vs golden ``y`` (any dtypes,
    same element count), each by its twin in :data:`TWINS`."""
    xa, ya = np.asarray(x), np.asarray(y)
    if xa.dtype.kind == "b" and ya.dtype.kind == "b":
        out = {name: None for name in NAMES}
        out["CosineSimilarity"] = cosine(as_f64(xa), as_f64(ya), scalar)
        if not ya.any():  # the reference's RED: 0 for an all-zero golden, before its bool x - y fails
            out["RelativeEuclideanDistance"] = 0.0
        return out
    if "c" in (xa.dtype.kind, ya.dtype.kind):  # a real side against complex: imaginary parts 0
        xa, ya = xa.astype(np.complex128), ya.astype(np.complex128)
    xf, yf = as_f64(xa), as_f64(ya)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return {name: TWINS[name](xf, yf, scalar) for name in NAMES}


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
