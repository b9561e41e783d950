"""The metric table: the 10 built-in metrics, their aliases and their edge policies.

One :data:`METRICS` dict (read by the command line, the reports and the gates): each
:class:`Metric` carries its ``-alg`` index, its short alias and a docstring giving the formula and
the zero / NaN / empty policy. :func:`resolve_algorithms` turns an ``-alg`` style selection
(indexes, names, aliases, ``all``) into canonical names; :func:`canonical` is the same for the
engine's already-canonical lists, remembered. :class:`ValueCounts` is the per-side count of NaN,
infinite and float16-saturated values that comes with the metrics. Pure Python: no numpy array is
touched here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Union

import numpy as np

from ..errors import OptionError

class ValueCounts(NamedTuple):
    """Special values among the elements of one side of a pair that were compared (the one-side
    pass counts them as it reads the side, see :func:`compare.kernels.fused._side_boxes`).

    - ``nan``: elements that are NaN (either sign);
    - ``inf``: elements that are +inf or -inf;
    - ``saturated``: elements with ``|v| == 65504.0``, the float16 maximum, counted only when the
      side is stored as float16; 0 for every other dtype (a float32 65504 is an ordinary value).

    Integer and bool data hold none of these: all three are 0. Complex data are counted over their
    interleaved ``(real, imag)`` parts, like ``KernelResult.count`` (a NaN real part and a NaN
    imaginary part count 2); a real side compared with complex data is counted after its
    conversion to complex128 (so without float16 saturation).
    """

    nan: int
    inf: int
    saturated: int


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
        "NaN anywhere: nan. Bool vs bool: 0.0 when the golden has no True, else None (the "
        "reference's bool subtraction fails).",
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


def metric_key(token: str) -> str:
    """Lookup key of a metric name: lower case, without ``_``, ``-`` and spaces."""
    return re.sub(r"[\s_\-]", "", token).lower()


#: Accepted spellings -> canonical name. Keys are normalised with :func:`metric_key` (case-insensitive,
#: ``_``/``-`` ignored), so ``max_abs``, ``MaxAbs`` and ``maxabsoluteerror`` all work.
ALIASES: dict[str, str] = {
    **{metric_key(m.name): m.name for m in METRICS.values()},
    **{metric_key(m.alias): m.name for m in METRICS.values()},
    "cosine": COSINE,
    "kld": KL,
    "stddev": STD,
}

#: The metrics computed when both inputs are numpy bool (the reference runs only these on bool
#: data). RelativeEuclideanDistance gets a number only for a golden without True (0.0, from its
#: all-zero-golden rule); otherwise the reference's bool subtraction fails and it stays None.
BOOL_CAPABLE: tuple[str, ...] = (COSINE, RED)

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
            canon = ALIASES.get(metric_key(tok))
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


#: Canonical lists already checked by :func:`canonical` (at most 64: a process uses a few).
_canonical_seen: dict[tuple, list[str]] = {}


def canonical(metrics: AlgorithmSpec) -> list[str]:
    """:func:`resolve_algorithms`, skipped for a list that is already canonical (the engine's;
    the answers for such lists are remembered: the engine asks once per pair)."""
    if isinstance(metrics, (list, tuple)) and metrics:
        key = tuple(metrics)
        known = _canonical_seen.get(key)
        if known is not None:
            return known
        if all(isinstance(m, str) and m in METRICS for m in metrics) and len(set(metrics)) == len(metrics):
            if len(_canonical_seen) < 64:
                _canonical_seen[key] = list(metrics)
            return list(metrics)
    return resolve_algorithms(metrics)


__all__ = [
    "ACC_REL",
    "ALIASES",
    "AlgorithmSpec",
    "BOOL_CAPABLE",
    "COSINE",
    "KL",
    "MAX_ABS",
    "MAX_REL",
    "MEAN_ABS",
    "MEAN_REL",
    "METRICS",
    "METRIC_NAMES",
    "Metric",
    "RED",
    "RMSE",
    "STD",
    "ValueCounts",
    "canonical",
    "metric_key",
    "resolve_algorithms",
]
