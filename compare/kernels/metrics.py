"""The metric table: the 10 built-in metrics, their aliases, their edge policies and their
finishing formulas.

One :data:`METRICS` dict (read by the command line, the reports, the gates and
:func:`compare.kernels.compare_arrays`): each :class:`Metric` carries its ``-alg`` index, its short
alias, a docstring giving the formula and the zero / NaN / empty policy, and its ``finish``: the
formula that turns the kernel passes' sums (a :class:`Finish`) into its value, adding the
:class:`Note` of any edge case it meets. :func:`selection` prepares a selection for the pair
loop. :func:`resolve_algorithms` turns an ``-alg`` style selection (indexes, names, aliases,
``all``) into canonical names; :func:`canonical` is the same for the
engine's already-canonical lists, remembered. :class:`ValueCounts` is the per-side count of NaN,
infinite and float16-saturated values that comes with the metrics. Pure Python: no numpy array is
touched here (the formulas read the passes' float64 results).
"""

from __future__ import annotations

import enum
import functools
import math
import re
from dataclasses import dataclass
from typing import Callable, Iterable, NamedTuple, Union

import numpy as np

from ..errors import OptionError
from ._abi import EPS64, PairPass, SidePass


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


class Note(enum.Enum):
    """Edge cases met while computing one pair; the engine turns them into report text."""

    SCALAR = "scalar-like shape: cosine similarity set to 1"
    LEFT_ALL_ZERO = "all data of the left side is zero: cosine similarity not computed"
    RIGHT_ALL_ZERO = "all data of the right side is zero: cosine similarity not computed"
    BOTH_ZERO = "both sides are all zero (or empty): cosine similarity is 1.0"
    KL_GOLDEN_ZERO = "KL divergence is inf: the golden data contains 0"
    EMPTY = "empty tensors"
    BOOL_DATA = ("both sides are bool: only cosine similarity (and RED for a golden without True) of the reference's "
                 "metrics is computed")
    COMPLEX_PAIRS = "complex data: compared as interleaved (real, imaginary) pairs"


class PairTerms(enum.Flag):
    """The optional parts of the paired pass (:class:`~compare.kernels._abi.PairPass`) a metric
    reads; the pass accumulates a part only when a selected metric asks for it. The cross terms
    (``sxy``, ``sabs``, ``ssq``, ``maxabs``) are always there: a metric reading only those asks
    for ``PairTerms(0)``."""

    #: the relative errors ``r_i``: ``srel``, ``maxrel``
    REL = 1
    #: the KL terms ``a``, ``su``, ``sw`` (accumulated only for ``n > 0`` and finite sides)
    KL = 2
    #: msprobe's terms ``efin``, ``emis``, ``w1``, ``w5`` (EucDist and the error ratios)
    ERR = 4


class Finish(NamedTuple):
    """What a metric's finishing formula reads: the three passes of one pair and its facts.

    ``pair`` holds the paired sums, ``left`` / ``right`` each side's one-side pass (extrema, sum,
    sum of squares, ``m2``); ``n`` is the number of values compared (``2n`` parts for complex
    data); ``scalar`` says the shape is scalar-like, ``bool_data`` that both sides are bool.
    ``kl_terms``: the pair pass accumulated the KL terms (KL selected, ``n > 0``, both sides
    finite); ``left_finite`` / ``right_finite``: no NaN or inf on that side (True when empty).
    ``notes``: the pair's edge cases so far; a formula adds the ones it meets.
    """

    pair: PairPass
    left: SidePass
    right: SidePass
    n: int
    scalar: bool
    bool_data: bool
    kl_terms: bool
    left_finite: bool
    right_finite: bool
    notes: set[Note]


@dataclass(frozen=True)
class Metric:
    """One built-in metric: one entry of :data:`METRICS`.

    ``higher_is_better`` is True for similarities, False for errors/divergences and None for
    StandardDeviation (a description of each side, not a distance). ``doc`` states the formula
    and the zero / NaN / empty policy (``x`` is the left (NPU) array, ``y`` the right (golden)
    one, ``N`` the element count, ``eps = 2.22e-16``); ``alias`` is the short name accepted by
    :func:`resolve_algorithms` (and usable as a column heading). ``finish`` turns the pair's
    passes into the value (:class:`Finish` -> float, nan or None), ``terms`` names the optional
    parts of the paired pass it reads, and ``on_bool`` says whether it is computed when both
    sides are bool (the reference computes only cosine and RED there). ``index`` is the
    ``-alg`` index: the position in :data:`METRIC_NAMES`. ``msprobe``: the metric is one of
    msprobe's (``msprobe compare``), not one of the reference tool's: it is computed only when
    named (not part of the default selection nor of ``all``, see :data:`DEFAULT_METRICS`).
    """

    name: str
    higher_is_better: bool | None
    alias: str
    doc: str
    finish: Callable[[Finish], float | None]
    terms: PairTerms = PairTerms(0)
    on_bool: bool = False
    msprobe: bool = False

    @property
    def index(self) -> int:
        """The ``-alg`` index (the position in :data:`METRIC_NAMES`)."""
        return METRIC_NAMES.index(self.name)


def _cosine(f: Finish) -> float | None:
    """Cosine similarity with the reference's special cases, in its order (see its doc)."""
    if f.scalar:
        f.notes.add(Note.SCALAR)
        return 1.0
    sxx, syy = f.left.ssq, f.right.ssq
    nx = math.sqrt(sxx)
    ny = math.sqrt(syy)
    if nx <= EPS64 and ny < EPS64:
        f.notes.add(Note.BOTH_ZERO)
        return 1.0
    if math.sqrt(nx) <= EPS64:
        f.notes.add(Note.LEFT_ALL_ZERO)
        return None
    if math.sqrt(ny) <= EPS64:
        f.notes.add(Note.RIGHT_ALL_ZERO)
        return None
    if f.pair.maxabs == 0.0 and f.left_finite and f.right_finite:
        # every element equal (max |x - y| is 0, no NaN or inf): exactly 1.0. The sums below come
        # from three passes that add in different orders (the paired pass, each side's pass), so
        # sum(x*y) and sum(x*x) of equal data may differ in their last bits (1 - 1e-16)
        return 1.0
    sxy = f.pair.sxy
    product = sxx * syy
    # one rounding; the two-division form is for products that overflow or underflow
    c = sxy / math.sqrt(product) if 1e-300 < product < math.inf else sxy / nx / ny
    return min(c, 1.0)  # Python min: a NaN c stays NaN


def _red(f: Finish) -> float | None:
    """Relative Euclidean distance; bool data: the reference's ``x - y`` fails (None)."""
    if math.sqrt(f.right.ssq) <= EPS64:
        return 0.0
    if f.bool_data:
        return None
    return math.sqrt(f.pair.ssq / f.right.ssq)


def _kl(f: Finish) -> float | None:
    """KL divergence from the conditioned terms of the paired pass (see ``compare.kernels``)."""
    if f.n == 0:
        return None
    if not f.kl_terms:
        return math.nan
    s = f.pair
    # sum P log(P/Q) with P = u/Su, Q = w/Sw and A = sum(u log(u/w) - u + w) >= 0:
    # = sum(u log(u/w))/Su + log(Sw/Su) = (A + Su - Sw)/Su + log1p(d) = A/Su + log1p(d) - d,
    # d = (Sw - Su)/Su; log1p(d) - d is second order in d, which the pass's k made tiny
    d = (s.sw - s.su) / s.su
    kl = s.a / s.su + (math.log1p(d) - d)
    if abs(kl) < EPS64:
        kl = 0.0
    if kl == math.inf:
        f.notes.add(Note.KL_GOLDEN_ZERO)
    return kl


def _std(m2: float, n: int) -> float:
    """Population std from the sum of squared deviations from the mean (``M2``)."""
    if n == 0 or m2 != m2:
        return math.nan
    return math.sqrt(m2 / n) if m2 > 0.0 else 0.0


def std_tuple(f: Finish) -> tuple[float, float, float, float]:
    """StandardDeviation's numbers, ``(mean x, std x, mean y, std y)``: a description of each
    side rather than one value, so they go to ``KernelResult.std`` and the metric's own
    ``finish`` gives None (the one metric whose result is not its value)."""
    n = f.n
    if n == 0:
        return (math.nan, math.nan, math.nan, math.nan)
    return (
        f.left.sum / n,
        _std(f.left.m2, n) if f.left_finite else math.nan,
        f.right.sum / n,
        _std(f.right.m2, n) if f.right_finite else math.nan,
    )


def _euc(f: Finish) -> float | None:
    """msprobe's EucDist from the paired pass's msprobe terms (see its doc)."""
    if f.n == 0:
        return 0.0
    if f.pair.emis:
        return math.nan
    return math.sqrt(f.pair.efin)


def _ratio(within: float, f: Finish) -> float | None:
    """The share of elements within a relative-error threshold (see the ratios' doc)."""
    if f.n == 0:
        return None
    if f.pair.emis:
        return math.nan
    return within / f.n


COSINE = "CosineSimilarity"
MAX_ABS = "MaxAbsoluteError"
ACC_REL = "AccumulatedRelativeError"
RED = "RelativeEuclideanDistance"
KL = "KullbackLeiblerDivergence"
STD = "StandardDeviation"
MEAN_ABS = "MeanAbsoluteError"
RMSE = "RootMeanSquareError"
MAX_REL = "MaxRelativeError"
MEAN_REL = "MeanRelativeError"
EUC = "EucDist"
ERR_RATIO_1 = "OneThousandthErrRatio"
ERR_RATIO_5 = "FiveThousandthsErrRatio"

#: msprobe's rule for the special values, shared by its three metrics.
_MSPROBE_SPECIALS = (
    "Special values as msprobe: where both sides are NaN, or both are +-inf (any signs), at the same "
    "position, both count as 0 (an equal element); a NaN or inf on one side only (or NaN against inf) "
    "anywhere: nan (msprobe: N/A). "
)
#: msprobe's relative error, shared by the two ratios.
_MSPROBE_REL = (
    "r_i = |(x_i - y_i) / y_i|; where y_i == 0: |((x_i + eps) - eps) / eps| (so 0 when x_i is 0 too). "
    "Computed as msprobe does, in float32 (each operation rounded, eps = 2**-23, thresholds float32(t)) "
    "when both sides are float16 / bfloat16 / float32 / a 1-byte float (msprobe reads bfloat16 and "
    "float8 as float32), else in float64 (eps = 2**-52; float64, integer and bool data). "
)

#: The metric table: name -> :class:`Metric`, the 10 built-ins in the reference's order (the
#: position is the ``-alg`` index and the column order of ``all``). Adding a metric: one entry
#: here (see ``docs/recipes/metric.md``).
METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric(
        COSINE, True, "cos",
        "c = sum(x*y) / (|x| |y|), |v| = sqrt(sum v^2); reported as min(c, 1.0) (NaN stays NaN). "
        "Scalar-like shape (sum(shape) == len(shape)): 1.0 + Note.SCALAR. "
        "|x| <= eps and |y| < eps (incl. empty): 1.0 + Note.BOTH_ZERO (reference prints '1.0'). "
        "Else sqrt(|x|) <= eps: None + Note.LEFT_ALL_ZERO; sqrt(|y|) <= eps: None + "
        "Note.RIGHT_ALL_ZERO. Else every element equal (max |x - y| == 0, all finite): exactly 1.0. "
        "NaN/inf data: nan.",
        _cosine, on_bool=True,
    ),
    Metric(
        MAX_ABS, False, "maxabs",
        "max |x - y|. NaN anywhere: nan; inf: inf (inf-inf: nan). Empty: None.",
        lambda f: f.pair.maxabs if f.n else None,
    ),
    Metric(
        ACC_REL, False, "accrel",
        "sum r, r_i = |x_i / y_i - 1| if |y_i| > eps else 0 (note x/y - 1, not (x-y)/y; a NaN "
        "y_i is masked to 0, a NaN x_i over a non-zero y_i gives nan). Empty: 0.0.",
        lambda f: f.pair.srel, PairTerms.REL,
    ),
    Metric(
        RED, False, "red",
        "sqrt(sum (x-y)^2 / sum y^2); 0.0 when sqrt(sum y^2) <= eps (all-zero golden, empty). "
        "NaN anywhere: nan. Bool vs bool: 0.0 when the golden has no True, else None (the "
        "reference's bool subtraction fails).",
        _red, on_bool=True,
    ),
    Metric(
        KL, False, "kl",
        "min-max normalise each side: p = (x - min x)/(max x - min x) if the range != 0 else x; "
        "p = max(p, eps32); same q from y; KL = sum P log(P/Q), P = p/sum p, Q = q/sum q. "
        "|KL| < eps: 0.0 (other tiny negatives are kept). Any NaN/inf on either side: nan. "
        "inf: Note.KL_GOLDEN_ZERO. Empty: None.",
        _kl, PairTerms.KL,
    ),
    Metric(
        STD, None, "std",
        "mean and population std (ddof=0) of each side, float64: KernelResult.std = "
        "(mean x, std x, mean y, std y), raw (the report zeroes |v| < 0.001). The metric's own "
        "value is None. NaN on a side: (nan, nan); inf: (+-inf or nan, nan). Empty: all nan.",
        lambda f: None,  # its numbers are std_tuple's, see there
    ),
    Metric(
        MEAN_ABS, False, "meanabs",
        "sum |x - y| / N. NaN anywhere: nan; inf: inf. Empty: nan.",
        lambda f: f.pair.sabs / f.n if f.n else math.nan,
    ),
    Metric(
        RMSE, False, "rmse",
        "sqrt(sum (x - y)^2 / N). NaN anywhere: nan; inf: inf. Empty: nan.",
        lambda f: math.sqrt(f.pair.ssq / f.n) if f.n else math.nan,
    ),
    Metric(
        MAX_REL, False, "maxrel",
        "max r (r as AccumulatedRelativeError; masked elements count as 0). Empty: None.",
        lambda f: f.pair.maxrel if f.n else None, PairTerms.REL,
    ),
    Metric(
        MEAN_REL, False, "meanrel",
        "sum r / N over ALL N elements (masked ones count as 0). Empty: nan.",
        lambda f: f.pair.srel / f.n if f.n else math.nan, PairTerms.REL,
    ),
    Metric(
        EUC, False, "euc",
        "msprobe's EucDist, the absolute Euclidean distance sqrt(sum (x - y)^2), float64. "
        + _MSPROBE_SPECIALS + "Empty: 0.0. Computed on bool (as 0/1) and scalar-like shapes too "
        "(msprobe leaves tensors of one element 'unsupported'). Complex: over the (real, imag) parts.",
        _euc, PairTerms.ERR, on_bool=True, msprobe=True,
    ),
    Metric(
        ERR_RATIO_1, True, "ratio1",
        "msprobe's One Thousandth Err Ratio: (count of r_i < 0.001) / N. " + _MSPROBE_REL
        + _MSPROBE_SPECIALS + "Empty: None. Computed on bool (as 0/1) and scalar-like shapes too "
        "(msprobe leaves tensors of one element 'unsupported'). Complex: over the 2N (real, imag) parts.",
        lambda f: _ratio(f.pair.w1, f), PairTerms.ERR, on_bool=True, msprobe=True,
    ),
    Metric(
        ERR_RATIO_5, True, "ratio5",
        "msprobe's Five Thousandths Err Ratio: (count of r_i < 0.005) / N; r_i and every edge policy "
        "as OneThousandthErrRatio.",
        lambda f: _ratio(f.pair.w5, f), PairTerms.ERR, on_bool=True, msprobe=True,
    ),
)}

#: The built-in metric names in table order; the position is the ``-alg`` index.
METRIC_NAMES: tuple[str, ...] = tuple(METRICS)

#: The default selection and ``all``: the reference tool's 10 metrics, in its order (the layout
#: of its CSV stays the reference's). msprobe's metrics (:attr:`Metric.msprobe`) are computed
#: when named (``-alg euc,ratio1`` or ``-alg all,msprobe``).
DEFAULT_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS.values() if not m.msprobe)
#: msprobe's metrics, in table order (the ``msprobe`` token of an ``-alg`` selection).
MSPROBE_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS.values() if m.msprobe)


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
    "euclideandistance": EUC,
    "onethousanderrratio": ERR_RATIO_1,  # msprobe's own keys (one_thousand_err_ratio, ...)
    "fivethousanderrratio": ERR_RATIO_5,
}

#: The metrics computed when both inputs are numpy bool (the reference runs only these on bool
#: data; :attr:`Metric.on_bool`). RelativeEuclideanDistance gets a number only for a golden without
#: True (0.0, from its all-zero-golden rule); otherwise the reference's bool subtraction fails and
#: it stays None.
BOOL_CAPABLE: tuple[str, ...] = tuple(m.name for m in METRICS.values() if m.on_bool)


class Selection(NamedTuple):
    """A selection of metrics made ready for one pair (see :func:`selection`).

    ``finish``: the finishing formula of each metric that gets a value, in selection order (for
    bool data, only the metrics computed on bool); ``rel`` / ``kl``: whether the paired pass must
    accumulate the relative errors / the KL terms (a computed metric reads them,
    :attr:`Metric.terms`); ``err``: the same for msprobe's terms; ``std``: StandardDeviation is computed (its numbers go to
    ``KernelResult.std``, see :func:`std_tuple`).
    """

    finish: dict[str, Callable[[Finish], float | None]]
    rel: bool
    kl: bool
    std: bool
    err: bool


@functools.lru_cache(maxsize=64)
def selection(names: tuple[str, ...], bool_data: bool) -> Selection:
    """The :class:`Selection` of canonical metric ``names`` for a pair (bool data or not);
    remembered, as the engine asks once per pair with the same few selections."""
    computed = [METRICS[name] for name in names if METRICS[name].on_bool or not bool_data]
    terms = PairTerms(0)
    for m in computed:
        terms |= m.terms
    return Selection(finish={m.name: m.finish for m in computed}, rel=PairTerms.REL in terms,
                     kl=PairTerms.KL in terms, std=any(m.name == STD for m in computed),
                     err=PairTerms.ERR in terms)


AlgorithmSpec = Union[None, str, int, Iterable[Union[str, int]]]

#: The group tokens of a selection: ``all`` (the reference's 10) and ``msprobe`` (msprobe's 3).
_GROUPS: dict[str, tuple[str, ...]] = {"all": DEFAULT_METRICS, "msprobe": MSPROBE_METRICS}


def resolve_algorithms(spec: AlgorithmSpec) -> list[str]:
    """Turn an ``-alg`` style selection into canonical metric names.

    ``spec`` is ``None`` or ``"all"`` (any case) for the reference tool's 10 metrics in order
    (:data:`DEFAULT_METRICS`); or a string such as ``"0,MaxAbsoluteError kl"`` (split on commas
    and whitespace); or an int; or a sequence of such strings / ints. A token is an index (``0``-``9``
    the reference's, ``10``-``12`` msprobe's), a metric name or an alias (see :data:`ALIASES`;
    case-insensitive, ``_``/``-`` ignored), ``all``, or ``msprobe`` (:data:`MSPROBE_METRICS`). Names are de-duplicated
    keeping the order of first appearance (that order is the column order).

    Unlike the reference, which warns and drops unknown names, an unknown name raises
    :class:`compare.errors.OptionError` listing the valid ones: a typo must not silently remove a
    column. An empty selection raises too.
    """
    if spec is None:
        return list(DEFAULT_METRICS)
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
        elif tok.isdecimal():  # not isdigit(): a superscript digit is a digit int() refuses
            idx = int(tok)
            names = [METRIC_NAMES[idx]] if idx < len(METRIC_NAMES) else []
        elif tok.lower() in _GROUPS:
            names = list(_GROUPS[tok.lower()])
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
            f"unknown metric(s) {', '.join(map(repr, unknown))}; valid: all (the first {len(DEFAULT_METRICS)}), msprobe (the last {len(MSPROBE_METRICS)}), {valid}"
        )
    if not out:
        raise OptionError(f"no metric selected (give 'all', indexes 0-{len(METRIC_NAMES) - 1} or metric names)")
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
    "DEFAULT_METRICS",
    "ERR_RATIO_1",
    "ERR_RATIO_5",
    "EUC",
    "KL",
    "MAX_ABS",
    "MAX_REL",
    "MEAN_ABS",
    "MEAN_REL",
    "METRICS",
    "METRIC_NAMES",
    "MSPROBE_METRICS",
    "Finish",
    "Metric",
    "Note",
    "PairTerms",
    "RED",
    "RMSE",
    "STD",
    "Selection",
    "ValueCounts",
    "canonical",
    "metric_key",
    "resolve_algorithms",
    "selection",
    "std_tuple",
]
