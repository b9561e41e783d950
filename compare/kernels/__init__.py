"""Kernels: arrays in, floats out. No I/O, no logging, no formatting.

The public, checked API of the comparison metrics:

- :data:`METRIC_NAMES` / :data:`METRICS` / :data:`ALIASES`: the one metric table (read by the CLI,
  the reports and the gates);
- :func:`resolve_algorithms`: an ``-alg`` style selection -> canonical metric names;
- :func:`compare_arrays`: two arrays -> :class:`KernelResult` (values, std tuple, notes);
- :func:`is_scalar_like`: the reference tool's "Scalar" shape test.

Numerics (our design decision): every element is widened to float64 and every sum is a float64
accumulation, so results are float64 truth (the reference tool computes in float32; the two
agree to ~1e-6). The numba kernels live in :mod:`compare.kernels.fused` and are imported on the
first comparison only: ``import compare.kernels`` does not import numba.

Values: ``None`` means "not computed" (the reference prints ``NaN``); ``float('nan')`` means
"computed and NaN" (printed ``nan``). Edge cases are reported as :class:`Note` flags, never as
text; the engine words them.
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass
from typing import Iterable, Sequence, Union

import numpy as np

from ..errors import CompareError, OptionError, ShapeError

#: float64 machine epsilon: the reference's zero threshold (cosine norms, relative-error mask, RED,
#: KL snap-to-zero).
EPS64: float = 2.220446049250313e-16
#: float32 machine epsilon (2**-23): the floor of the min-max-normalised KL inputs.
EPS32: float = 1.1920928955078125e-07

#: The 10 built-in metrics in the reference's order; the position is the ``-alg`` index and the
#: column order of ``all``.
METRIC_NAMES: tuple[str, ...] = (
    "CosineSimilarity",
    "MaxAbsoluteError",
    "AccumulatedRelativeError",
    "RelativeEuclideanDistance",
    "KullbackLeiblerDivergence",
    "StandardDeviation",
    "MeanAbsoluteError",
    "RootMeanSquareError",
    "MaxRelativeError",
    "MeanRelativeError",
)

COSINE, MAX_ABS, ACC_REL, RED, KL, STD, MEAN_ABS, RMSE, MAX_REL, MEAN_REL = METRIC_NAMES


@dataclass(frozen=True)
class Metric:
    """One built-in metric.

    ``higher_is_better`` is True for similarities, False for errors/divergences and None for
    StandardDeviation (a description of each side, not a distance). ``doc`` states the formula
    and the zero / NaN / empty policy (``x`` is the left (NPU) array, ``y`` the right (golden)
    one, ``N`` the element count, ``eps = 2.22e-16``); ``alias`` is the short name accepted by
    :func:`resolve_algorithms` (and usable as a column heading).
    """

    name: str
    index: int
    higher_is_better: bool | None
    doc: str
    alias: str


_DOCS: dict[str, tuple[bool | None, str, str]] = {
    COSINE: (
        True,
        "cos",
        "c = sum(x*y) / (|x| |y|), |v| = sqrt(sum v^2); reported as min(c, 1.0) (NaN stays NaN). "
        "Scalar-like shape (sum(shape) == len(shape)): 1.0 + Note.SCALAR. "
        "|x| <= eps and |y| < eps (incl. empty): 1.0 + Note.BOTH_ZERO (reference prints '1.0'). "
        "Else sqrt(|x|) <= eps: None + Note.LEFT_ALL_ZERO; sqrt(|y|) <= eps: None + "
        "Note.RIGHT_ALL_ZERO. NaN/inf data: nan.",
    ),
    MAX_ABS: (
        False,
        "maxabs",
        "max |x - y|. NaN anywhere: nan; inf: inf (inf-inf: nan). Empty: None.",
    ),
    ACC_REL: (
        False,
        "accrel",
        "sum r, r_i = |x_i / y_i - 1| if |y_i| > eps else 0 (note x/y - 1, not (x-y)/y; a NaN "
        "y_i is masked to 0, a NaN x_i over a non-zero y_i gives nan). Empty: 0.0.",
    ),
    RED: (
        False,
        "red",
        "sqrt(sum (x-y)^2 / sum y^2); 0.0 when sqrt(sum y^2) <= eps (all-zero golden, empty). "
        "NaN anywhere: nan.",
    ),
    KL: (
        False,
        "kl",
        "min-max normalise each side: p = (x - min x)/(max x - min x) if the range != 0 else x; "
        "p = max(p, eps32); same q from y; KL = sum P log(P/Q), P = p/sum p, Q = q/sum q. "
        "|KL| < eps: 0.0 (other tiny negatives are kept). Any NaN/inf on either side: nan. "
        "inf: Note.KL_GOLDEN_ZERO. Empty: None.",
    ),
    STD: (
        None,
        "std",
        "mean and population std (ddof=0) of each side, float64: KernelResult.std = "
        "(mean x, std x, mean y, std y), raw (the report zeroes |v| < 0.001). The metric's own "
        "value is None. NaN on a side: (nan, nan); inf: (+-inf or nan, nan). Empty: all nan.",
    ),
    MEAN_ABS: (
        False,
        "meanabs",
        "sum |x - y| / N. NaN anywhere: nan; inf: inf. Empty: nan.",
    ),
    RMSE: (
        False,
        "rmse",
        "sqrt(sum (x - y)^2 / N). NaN anywhere: nan; inf: inf. Empty: nan.",
    ),
    MAX_REL: (
        False,
        "maxrel",
        "max r (r as AccumulatedRelativeError; masked elements count as 0). Empty: None.",
    ),
    MEAN_REL: (
        False,
        "meanrel",
        "sum r / N over ALL N elements (masked ones count as 0). Empty: nan.",
    ),
}

#: name -> :class:`Metric`, in :data:`METRIC_NAMES` order.
METRICS: dict[str, Metric] = {
    name: Metric(name, i, higher_is_better=hib, doc=doc, alias=alias)
    for i, name in enumerate(METRIC_NAMES)
    for hib, alias, doc in [_DOCS[name]]
}


def _key(token: str) -> str:
    """Lookup key of a metric name: lower case, without ``_``, ``-`` and spaces."""
    return re.sub(r"[\s_\-]", "", token).lower()


#: Accepted spellings -> canonical name. Keys are normalised with ``_key`` (case-insensitive,
#: ``_``/``-`` ignored), so ``max_abs``, ``MaxAbs`` and ``maxabsoluteerror`` all work.
ALIASES: dict[str, str] = {
    **{_key(m.name): m.name for m in METRICS.values()},
    **{_key(m.alias): m.name for m in METRICS.values()},
    "cosine": COSINE,
    "kld": KL,
    "stddev": STD,
}

#: The metrics computed when both inputs are numpy bool (the reference runs only these on bool
#: data; RelativeEuclideanDistance then fails on bool subtraction, so only cosine remains).
BOOL_CAPABLE: tuple[str, ...] = (COSINE,)

AlgorithmSpec = Union[None, str, int, Iterable[Union[str, int]]]


def resolve_algorithms(spec: AlgorithmSpec) -> list[str]:
    """Turn an ``-alg`` style selection into canonical metric names.

    ``spec`` is ``None`` or ``"all"`` (any case) for the 10 built-ins in order; or a string such
    as ``"0,MaxAbsoluteError kl"`` (split on commas and whitespace); or an int; or a sequence of
    such strings / ints. A token is an index ``0``-``9``, a metric name or an alias (see
    :data:`ALIASES`; case-insensitive, ``_``/``-`` ignored), or ``all``. Names are de-duplicated
    keeping the order of first appearance (that order is the column order).

    Unlike the reference, which warns and drops unknown names, an unknown name raises
    :class:`compare.errors.OptionError` listing the valid ones: a typo must not silently remove a
    column. An empty selection raises too.
    """
    if spec is None:
        return list(METRIC_NAMES)
    items: list[str | int]
    if isinstance(spec, (str, int)):
        items = [spec]
    else:
        items = list(spec)

    tokens: list[str | int] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (str, int, np.integer)):
            raise OptionError(f"metric selection must be names or indexes, got {item!r}")
        if isinstance(item, str):
            tokens.extend(t for t in re.split(r"[,\s]+", item) if t)
        else:
            tokens.append(int(item))

    out: list[str] = []
    unknown: list[str] = []
    for tok in tokens:
        if isinstance(tok, int):
            names = [METRIC_NAMES[tok]] if 0 <= tok < len(METRIC_NAMES) else []
        elif tok.isdigit():
            idx = int(tok)
            names = [METRIC_NAMES[idx]] if idx < len(METRIC_NAMES) else []
        elif tok.lower() == "all":
            names = list(METRIC_NAMES)
        else:
            canon = ALIASES.get(_key(tok))
            names = [canon] if canon else []
        if not names:
            unknown.append(str(tok))
        for name in names:
            if name not in out:
                out.append(name)
    if unknown:
        valid = ", ".join(f"{m.index}={m.name} ({m.alias})" for m in METRICS.values())
        raise OptionError(
            f"unknown metric(s) {', '.join(map(repr, unknown))}; valid: all, {valid}"
        )
    if not out:
        raise OptionError("no metric selected (give 'all', indexes 0-9 or metric names)")
    return out


class Note(enum.Enum):
    """Edge cases met while computing one pair; the engine turns them into report text."""

    SCALAR = "scalar-like shape: cosine similarity set to 1"
    LEFT_ALL_ZERO = "all data of the left side is zero: cosine similarity not computed"
    RIGHT_ALL_ZERO = "all data of the right side is zero: cosine similarity not computed"
    BOTH_ZERO = "both sides are all zero (or empty): cosine similarity is 1.0"
    KL_GOLDEN_ZERO = "KL divergence is inf: the golden data contains 0"
    EMPTY = "empty tensors"
    BOOL_DATA = "both sides are bool: only cosine similarity is computed"
    COMPLEX_REAL_PART = "complex data: only the real part is compared"


@dataclass(frozen=True)
class KernelResult:
    """Metrics of one pair.

    ``values`` holds exactly the selected metrics, in selection order: a float, float nan
    ("computed, NaN") or None ("not computed"). StandardDeviation's value is always None; its
    numbers are ``std = (mean x, std x, mean y, std y)`` (raw, unrounded), which is None when
    StandardDeviation was not selected or not computed (bool data). ``notes`` are the edge
    cases met; ``count`` is the element count of each side.
    """

    values: dict[str, float | None]
    std: tuple[float, float, float, float] | None
    notes: frozenset[Note]
    count: int


def is_scalar_like(shape: Sequence[int]) -> bool:
    """The reference's "Scalar" shape type: ``sum(shape) == len(shape)``.

    True for ``()``, ``(1,)``, ``(1, 1, 1)``; False for ``(0,)`` and ``(2,)``.
    """
    dims = tuple(int(d) for d in shape)
    return sum(dims) == len(dims)


def _prepare(a: np.ndarray, side: str) -> tuple[np.ndarray, bool]:
    """Flatten and cast one side to a native-endian, C-contiguous float32/float64 1-D array.

    float16, bfloat16 (and other ml_dtypes), bool and ints up to 16 bits -> float32 (exact);
    wider ints -> float64; float32/float64 kept; longdouble -> float64; complex -> real part
    (returns True as the second item). Other dtypes raise CompareError.
    """
    kind = a.dtype.kind
    is_complex = False
    if kind == "c":
        a = a.real
        is_complex = True
        kind = "f"
    if kind == "f":
        if a.dtype.itemsize == 2:
            a = a.astype(np.float32)
        elif a.dtype.itemsize > 8:
            a = a.astype(np.float64)
    elif kind == "b":
        a = a.astype(np.float32)
    elif kind in "iu":
        a = a.astype(np.float32 if a.dtype.itemsize <= 2 else np.float64)
    elif kind == "V":  # ml_dtypes: bfloat16, float8_*, int4 ...
        try:
            a = a.astype(np.float32)
        except (TypeError, ValueError) as exc:
            raise CompareError(f"cannot compare {side} data of dtype {a.dtype}: {exc}") from exc
    else:
        raise CompareError(f"cannot compare {side} data of dtype {a.dtype}")
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    return np.ascontiguousarray(a.reshape(-1)), is_complex


def _div(a: float, n: int) -> float:
    """``a / n`` with numpy's empty-mean result (nan) for n == 0."""
    return a / n if n else math.nan


def compare_arrays(
    x: np.ndarray,
    y: np.ndarray,
    *,
    metrics: AlgorithmSpec = None,
    scalar: bool | None = None,
) -> KernelResult:
    """Compute the selected metrics of left ``x`` against golden ``y``.

    ``x`` and ``y`` may have any shape and dtype but must hold the same number of elements
    (else :class:`compare.errors.ShapeError` naming both counts); they are compared flat.
    ``metrics`` is anything :func:`resolve_algorithms` accepts (default: all 10). ``scalar``
    says whether the tensor's shape is scalar-like (cosine then reports 1.0 + Note.SCALAR); pass
    ``is_scalar_like(shape)`` of the shape the reference would use. ``None`` derives it from
    ``x.shape``.

    Each metric's formula and edge policy is in ``METRICS[name].doc``. Cross-metric rules:
    empty arrays give the reference's empty row (cos 1.0, MaxAbs None, AccRel 0, RED 0, KL None,
    std all nan, MeanAbs/RMSE/MeanRel nan, MaxRel None) + Note.EMPTY; bool-vs-bool data give
    only cosine (all others None, std None) + Note.BOOL_DATA; complex data are compared by their
    real part + Note.COMPLEX_REAL_PART.
    """
    names = resolve_algorithms(metrics)
    xa = np.asarray(x)
    ya = np.asarray(y)
    if xa.size != ya.size:
        raise ShapeError(
            f"element counts differ: left has {xa.size} elements {tuple(xa.shape)}, "
            f"right has {ya.size} elements {tuple(ya.shape)}"
        )
    if scalar is None:
        scalar = is_scalar_like(xa.shape)
    bool_data = xa.dtype.kind == "b" and ya.dtype.kind == "b"
    notes: set[Note] = set()

    xf, xc = _prepare(xa, "left")
    yf, yc = _prepare(ya, "right")
    if xc or yc:
        notes.add(Note.COMPLEX_REAL_PART)
    n = int(xf.shape[0])
    if n == 0:
        notes.add(Note.EMPTY)

    selected = set(names)
    if bool_data:
        notes.add(Note.BOOL_DATA)
        selected &= set(BOOL_CAPABLE)
    values: dict[str, float | None] = {name: None for name in names}
    std: tuple[float, float, float, float] | None = None

    if selected:
        from .fused import (  # numba is imported here, on the first comparison only
            P1_FINITEX,
            P1_FINITEY,
            P1_MAXABS,
            P1_MAXREL,
            P1_MAXX,
            P1_MAXY,
            P1_MINX,
            P1_MINY,
            P1_SABS,
            P1_SREL,
            P1_SSQ,
            P1_SUMX,
            P1_SUMY,
            P1_SXX,
            P1_SXY,
            P1_SYY,
            _pass1,
            _pass2,
        )

        do_rel = bool(selected & {ACC_REL, MAX_REL, MEAN_REL})
        # errstate only matters without JIT (NUMBA_DISABLE_JIT=1), where the kernels run on numpy
        # scalars: IEEE NaN/inf results are intended, not worth a RuntimeWarning.
        with np.errstate(all="ignore"):
            s = [float(v) for v in _pass1(xf, yf, do_rel)]

        if COSINE in selected:
            values[COSINE] = _cosine(s[P1_SXY], s[P1_SXX], s[P1_SYY], scalar, notes)
        if MAX_ABS in selected:
            values[MAX_ABS] = s[P1_MAXABS] if n else None
        if ACC_REL in selected:
            values[ACC_REL] = s[P1_SREL]
        if RED in selected:
            syy = s[P1_SYY]
            values[RED] = 0.0 if math.sqrt(syy) <= EPS64 else math.sqrt(s[P1_SSQ] / syy)
        if MEAN_ABS in selected:
            values[MEAN_ABS] = _div(s[P1_SABS], n)
        if RMSE in selected:
            values[RMSE] = math.sqrt(_div(s[P1_SSQ], n))
        if MAX_REL in selected:
            values[MAX_REL] = s[P1_MAXREL] if n else None
        if MEAN_REL in selected:
            values[MEAN_REL] = _div(s[P1_SREL], n)

        finx = s[P1_FINITEX] == 1.0
        finy = s[P1_FINITEY] == 1.0
        do_kl = KL in selected and n > 0 and finx and finy
        do_std = STD in selected and n > 0
        meanx = _div(s[P1_SUMX], n)
        meany = _div(s[P1_SUMY], n)
        if do_kl or (do_std and (finx or finy)):
            with np.errstate(all="ignore"):
                p2 = _pass2(
                    xf,
                    yf,
                    s[P1_MINX],
                    s[P1_MAXX],
                    s[P1_MINY],
                    s[P1_MAXY],
                    meanx,
                    meany,
                    do_kl,
                    do_std and finx,
                    do_std and finy,
                )
            a, sp, sq, sdx, sdx2, sdy, sdy2 = (float(v) for v in p2)
        else:
            a = sp = sq = sdx = sdx2 = sdy = sdy2 = math.nan
        if KL in selected:
            if n == 0:
                values[KL] = None
            elif not do_kl:
                values[KL] = math.nan
            else:
                kl = a / sp + math.log(sq / sp)
                if abs(kl) < EPS64:
                    kl = 0.0
                if kl == math.inf:
                    notes.add(Note.KL_GOLDEN_ZERO)
                values[KL] = kl
        if STD in selected:
            # The centred sums also refine the means (mean + sum(v - mean)/N).
            std = (
                meanx + sdx / n if finx and n else meanx,
                _std(sdx, sdx2, n) if finx else math.nan,
                meany + sdy / n if finy and n else meany,
                _std(sdy, sdy2, n) if finy else math.nan,
            )

    return KernelResult(values=values, std=std, notes=frozenset(notes), count=n)


def _cosine(sxy: float, sxx: float, syy: float, scalar: bool, notes: set[Note]) -> float | None:
    """Cosine similarity with the reference's special cases, in its order (see METRICS doc)."""
    if scalar:
        notes.add(Note.SCALAR)
        return 1.0
    nx = math.sqrt(sxx)
    ny = math.sqrt(syy)
    if nx <= EPS64 and ny < EPS64:
        notes.add(Note.BOTH_ZERO)
        return 1.0
    if math.sqrt(nx) <= EPS64:
        notes.add(Note.LEFT_ALL_ZERO)
        return None
    if math.sqrt(ny) <= EPS64:
        notes.add(Note.RIGHT_ALL_ZERO)
        return None
    c = sxy / nx / ny
    return min(c, 1.0)  # Python min: a NaN c stays NaN


def _std(sd: float, sd2: float, n: int) -> float:
    """Population std from centred sums (two-pass with the rounding-error correction)."""
    if n == 0:
        return math.nan
    var = (sd2 - sd * sd / n) / n
    if var != var:
        return math.nan
    return math.sqrt(var) if var > 0.0 else 0.0


__all__ = [
    "ALIASES",
    "BOOL_CAPABLE",
    "EPS32",
    "EPS64",
    "METRICS",
    "METRIC_NAMES",
    "KernelResult",
    "Metric",
    "Note",
    "compare_arrays",
    "is_scalar_like",
    "resolve_algorithms",
]
