"""Kernels: arrays in, floats out. No I/O, no logging, no formatting.

The public, checked API of the comparison metrics:

- :data:`METRIC_NAMES` / :data:`METRICS` / :data:`ALIASES`: the one metric table (read by the CLI,
  the reports and the gates);
- :func:`resolve_algorithms`: an ``-alg`` style selection -> canonical metric names;
- :func:`compare_arrays`: two arrays -> :class:`KernelResult` (values, std tuple, notes);
- :func:`compare_planned`: the same over storage buffers and a :class:`KernelPlan` (the engine's
  zero-copy path: layouts walked in place, see :mod:`convert.layouts.lazy`);
- :func:`is_scalar_like`: the reference tool's "Scalar" shape test;
- :class:`SideStats`: goldens' one-side statistics shared by the engine's threads;
- :func:`preload`: get the compiled kernels ready ahead of the first comparison (command line).

Numerics (our design decision): every element is widened to float64 and every sum is a float64
accumulation, so results are float64 truth (the reference tool computes in float32; the two
agree to ~1e-6). The numba kernels live in :mod:`compare.kernels.fused`; their machine code is
compiled once per machine and loaded without numba by :mod:`compare.kernels.native` (the
compiled-code cache is the only file access of this package), else numba is imported on the
first comparison: ``import compare.kernels`` imports neither numba nor llvmlite.

Values: ``None`` means "not computed" (the reference prints ``NaN``); ``float('nan')`` means
"computed and NaN" (printed ``nan``). Edge cases are reported as :class:`Note` flags, never as
text; the engine words them.
"""

from __future__ import annotations

import enum
import functools
import math
import re
import threading
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Sequence, Union

import numpy as np

from ..errors import CompareError, OptionError, ShapeError
from . import _abi
from ._abi import CODES, EPS32, EPS64, TILE

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
    BOOL_DATA = "both sides are bool: only cosine similarity (and RED for a golden without True) is computed"
    COMPLEX_PAIRS = "complex data: compared as interleaved (real, imaginary) pairs"


@dataclass(frozen=True)
class KernelResult:
    """Metrics of one pair.

    ``values`` holds exactly the selected metrics, in selection order: a float, float nan
    ("computed, NaN") or None ("not computed"). StandardDeviation's value is always None; its
    numbers are ``std = (mean x, std x, mean y, std y)`` (raw, unrounded), which is None when
    StandardDeviation was not selected or not computed (bool data). ``notes`` are the edge
    cases met; ``count`` is the number of values compared on each side (the element count; twice
    it for complex data, see :func:`compare_arrays`).
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


def preload(*, blas: bool = True) -> None:
    """Get the kernels ready now (what the first comparison would do): the cached native objects
    (:mod:`compare.kernels.native`, built on first use), else numba, imported and its CPU target
    initialised.

    ``blas=False`` skips numba's optional SciPy BLAS probe (importing ``scipy.linalg`` costs
    about 0.18 s of a command-line run): numba then cannot compile ``np.dot``/``np.linalg`` for
    the rest of the process, which vcompare's kernels never use. Only for processes that use
    numba through vcompare alone (the command line); a library user keeps the default. Has no
    effect when numba's CPU target is already initialised or ``scipy.linalg`` already imported.
    """
    import sys

    from . import native

    if native.kernels() is not None:
        return
    stub = not blas and "scipy.linalg" not in sys.modules and "numba.np.arraymath" not in sys.modules
    if stub:
        sys.modules["scipy.linalg"] = None  # type: ignore[assignment]  # "import scipy.linalg" fails
    try:
        from numba.core.registry import cpu_target

        from . import fused  # noqa: F401

        cpu_target.target_context.refresh()
    finally:
        if stub and "scipy.linalg" in sys.modules and sys.modules["scipy.linalg"] is None:
            del sys.modules["scipy.linalg"]


def _is_bfloat16(dtype: np.dtype) -> bool:
    return dtype.kind == "V" and dtype.itemsize == 2 and dtype.name == "bfloat16"


def storage(a: np.ndarray, side: str = "left") -> tuple[np.ndarray, bool]:
    """Flatten one side to a native-endian, C-contiguous 1-D **storage buffer** the kernels read.

    float16 -> its bits as uint16 and bfloat16 -> its bits as int16 (both decoded to float64 in
    the kernel, no widened copy); float32/float64 kept; bool, int8/uint8, int32/uint32 and
    int64/uint64 kept (converted exactly to float64 in the kernel as they are read: no widened
    copy); int16/uint16 kept as the record dtypes ``_abi.I16_CARRIER`` / ``U16_CARRIER`` (same
    bytes, a different name: int16/uint16 themselves mean bfloat16/binary16 bits); 1-byte
    ml_dtypes (float8_*, float4/float6, int4/uint4 stored one a byte) kept, decoded in the kernel
    through a 256-entry table (CODE_LUT8); longdouble -> float64; other ml_dtypes -> float32 (a
    widened copy); complex -> its interleaved ``(real, imag)`` floats, 2 values per element (returns
    True as the second item). A contiguous native-endian input is not copied. Other dtypes raise
    CompareError.
    """
    kind = a.dtype.kind
    is_complex = False
    if kind == "c":
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        parts = np.ascontiguousarray(a.reshape(-1))
        a = parts.view(np.dtype(f"f{parts.dtype.itemsize // 2}"))  # re0, im0, re1, im1, ...
        is_complex = True
        kind = "f"
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if kind == "f":
        if a.dtype.itemsize == 2:
            a = np.ascontiguousarray(a.reshape(-1)).view(np.uint16)
        elif a.dtype.itemsize > 8:
            a = a.astype(np.float64)
    elif kind == "b":
        pass  # read in place (CODE_BOOL)
    elif kind in "iu":
        if a.dtype.itemsize == 2:
            carrier = _abi.I16_CARRIER if kind == "i" else _abi.U16_CARRIER
            a = np.ascontiguousarray(a.reshape(-1)).view(carrier)
    elif kind == "V":  # ml_dtypes: bfloat16, float8_*, int4 ...
        if _is_bfloat16(a.dtype):
            a = np.ascontiguousarray(a.reshape(-1)).view(np.int16)
        elif a.dtype.itemsize == 1 and not a.dtype.names:
            pass  # read in place through a 256-entry decode table (CODE_LUT8)
        else:
            try:
                a = a.astype(np.float32)
            except (TypeError, ValueError) as exc:
                raise CompareError(f"cannot compare {side} data of dtype {a.dtype}: {exc}") from exc
    else:
        raise CompareError(f"cannot compare {side} data of dtype {a.dtype}")
    return np.ascontiguousarray(a.reshape(-1)), is_complex


#: Storage dtypes the kernels read directly (see :func:`storage`).
STORAGE_DTYPES = tuple(CODES)


def _div(a: float, n: int) -> float:
    """``a / n`` with numpy's empty-mean result (nan) for n == 0."""
    return a / n if n else math.nan


class KernelPlan(NamedTuple):
    """How the kernels walk a pair (int64 arrays; see :mod:`compare.kernels.fused`).

    ``pair = (dims, sx, sy, ox, oy)`` pairs the elements of the two storage buffers;
    ``left = (dims, strides, offsets)`` and ``right`` visit the same elements of one side each, in
    that side's own memory order (for the per-side extrema and sums).
    """

    pair: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    left: tuple[np.ndarray, np.ndarray, np.ndarray]
    right: tuple[np.ndarray, np.ndarray, np.ndarray]


def flat_kernel_plan(n: int) -> KernelPlan:
    """The plan of two contiguous 1-D buffers of ``n`` elements."""
    dims = np.ones((1, 6), dtype=np.int64)
    dims[0, -1] = n
    strides = np.zeros((1, 6), dtype=np.int64)
    strides[0, -1] = 1
    zero = np.zeros(1, dtype=np.int64)
    return KernelPlan((dims, strides, strides, zero, zero), (dims, strides, zero), (dims, strides, zero))


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
    cosine, RED only when the golden has no True (0.0), all others None, std None
    (+ Note.BOOL_DATA).

    Complex data (either side; a real side is taken as having zero imaginary parts) are compared
    as their interleaved ``(real, imag)`` floats, ``2n`` values for ``n`` elements
    (+ Note.COMPLEX_PAIRS): cosine is ``Re(sum x conj(y)) / (|x| |y|)``, RED the complex
    ``|x - y| / |y|``, MaxAbs / relative errors / KL / std are taken over the real and imaginary
    parts alike, and MeanAbs / RMSE average over the ``2n`` parts. ``count`` is then ``2n``.
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
    if (xa.dtype.kind == "c") != (ya.dtype.kind == "c"):  # the real side: imaginary parts 0
        xa, ya = (xa, _as_complex(ya, "right")) if xa.dtype.kind == "c" else (_as_complex(xa, "left"), ya)
    xf, xc = storage(xa, "left")
    yf, yc = storage(ya, "right")
    n = int(xf.shape[0])
    return _compute(xf, yf, bind_plan(flat_kernel_plan(n)), n, names, scalar, bool_data, xc or yc)


def _as_complex(a: np.ndarray, side: str) -> np.ndarray:
    """A real array as complex128 (imaginary parts 0), to be compared with a complex one."""
    try:
        return a.astype(np.complex128)
    except (TypeError, ValueError) as exc:
        raise CompareError(f"cannot compare {side} data of dtype {a.dtype} with complex data: {exc}") from exc


def compare_planned(
    xbuf: np.ndarray,
    ybuf: np.ndarray,
    plan: KernelPlan | BoundPlan,
    count: int,
    *,
    metrics: AlgorithmSpec = None,
    scalar: bool = False,
    right_cache: SideStats | None = None,
    right_key: Hashable = None,
) -> KernelResult:
    """:func:`compare_arrays` over an iteration plan instead of two flat arrays (the fast path).

    ``xbuf``/``ybuf`` are 1-D storage buffers (one of :data:`STORAGE_DTYPES`, see
    :func:`storage`); ``plan`` pairs their elements (:class:`KernelPlan`, or the same bound once
    by :func:`bind_plan` when it is used for many pairs), ``count`` elements in all. The numbers
    equal those of ``compare_arrays`` on the materialised arrays up to float64 rounding (the
    summation order follows the plan). Built by :func:`convert.layouts.lazy.plan_pair`.

    ``right_cache``/``right_key``: when the same golden tensor (``right_key`` names it, e.g. its
    file and index) is compared again with the same right-side plan, its one-side statistics are
    taken from ``right_cache`` instead of being computed again (a producer's output is compared
    as its own output and as the next operator's input); a thread that asks while another one
    computes them waits for that result (see :class:`SideStats`).
    """
    for buf in (xbuf, ybuf):
        if buf.ndim != 1 or _code_of(buf.dtype) is None or not buf.dtype.isnative:
            raise CompareError(f"not a kernel storage buffer: {buf.dtype} {buf.shape}")
    names = _canonical(metrics)
    bound = plan if isinstance(plan, BoundPlan) else bind_plan(plan)
    cache = None
    if right_cache is not None and right_key is not None:
        cache = (right_cache, (right_key, ybuf.dtype, bound.right_sig))
    return _compute(xbuf, ybuf, bound, int(count), names, bool(scalar), False, False, cache)


def _i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def _addr(a: np.ndarray) -> int:
    """The address of an array's first byte (what the C entry points take)."""
    return a.ctypes.data


@dataclass(frozen=True, eq=False)
class BoundPlan:
    """A :class:`KernelPlan` made ready for many calls: its arrays as C-contiguous int64 (kept
    alive here) with their addresses resolved once, and the right-side plan's bytes (part of
    the :class:`SideStats` key). Operators of one network share a few shapes, so the engine binds
    each plan once; resolving an array's address costs about 2 us, a third of a small pair's
    kernel time.
    """

    plan: KernelPlan
    #: ``(dims, sx, sy, ox, oy)`` addresses and the box count (the paired pass)
    pair_args: tuple[int, int, int, int, int, int]
    #: ``(dims, strides, offsets)`` addresses and the box count (each side alone)
    left_args: tuple[int, int, int, int]
    right_args: tuple[int, int, int, int]
    right_sig: bytes


def bind_plan(plan: KernelPlan) -> BoundPlan:
    """Bind ``plan`` (see :class:`BoundPlan`)."""
    pair = tuple(_i64(a) for a in plan[0])
    left = tuple(_i64(a) for a in plan[1])
    right = tuple(_i64(a) for a in plan[2])
    kept = KernelPlan(pair, left, right)  # type: ignore[arg-type]
    return BoundPlan(
        plan=kept,
        pair_args=tuple(_addr(a) for a in pair) + (int(pair[0].shape[0]),),  # type: ignore[arg-type]
        left_args=tuple(_addr(a) for a in left) + (int(left[0].shape[0]),),  # type: ignore[arg-type]
        right_args=tuple(_addr(a) for a in right) + (int(right[0].shape[0]),),  # type: ignore[arg-type]
        right_sig=b"".join(a.tobytes() for a in right),
    )


class _Scratch(threading.local):
    """Per-thread tiles and result buffers of the native entry points (with their addresses)."""

    def __init__(self) -> None:
        self.xt, self.yt = _tile(), _tile()
        self.side_out = np.empty(_abi.SIDE_OUT, dtype=np.float64)
        self.pair_out = np.empty(_abi.PAIR_OUT, dtype=np.float64)
        self.prm = np.empty(5, dtype=np.float64)
        self.xt_a, self.yt_a = _addr(self.xt), _addr(self.yt)
        self.side_a, self.pair_a, self.prm_a = _addr(self.side_out), _addr(self.pair_out), _addr(self.prm)



class SideStats:
    """Thread-safe store of goldens' one-side statistics for :func:`compare_planned`.

    Each key is computed once: a thread asking for a key another thread is computing waits for
    that result instead of computing it again (two threads often compare a producer's output and
    its consumer's input, the same golden, at the same time). If the computing thread fails,
    a waiting one computes the key itself.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)  # notified whenever a computation ends
        self._done: dict = {}
        self._busy: set = set()

    def __len__(self) -> int:
        return len(self._done)

    def get_or_compute(self, key: Hashable, compute, meanwhile=None):
        """The value of ``key``, computed by ``compute()`` unless known; when another thread is
        computing it, ``meanwhile()`` (other work of the caller) runs before waiting."""
        with self._lock:
            if key in self._done:
                return self._done[key]
            owner = key not in self._busy
            if owner:
                self._busy.add(key)
        if not owner:
            if meanwhile is not None:
                meanwhile()
            with self._ready:
                while key in self._busy:
                    self._ready.wait()
                if key in self._done:
                    return self._done[key]
            return self.get_or_compute(key, compute)  # the owner failed: take over
        value = None
        try:
            value = compute()
        finally:
            with self._ready:
                if value is not None:
                    self._done[key] = value
                self._busy.discard(key)
                self._ready.notify_all()
        return value


_canonical_seen: dict[tuple, list[str]] = {}


def _canonical(metrics: AlgorithmSpec) -> list[str]:
    """resolve_algorithms, skipped for a list that is already canonical (the engine's; the
    answers for such lists are remembered: the engine asks once per pair)."""
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


def _compute(
    xf: np.ndarray,
    yf: np.ndarray,
    plan: BoundPlan,
    n: int,
    names: list[str],
    scalar: bool,
    bool_data: bool,
    complex_data: bool,
    right_cache: tuple | None = None,
) -> KernelResult:
    """The metric values of a prepared pair (storage buffers + plan); see compare_arrays.

    Three kernel calls: each side alone in its own memory order (extrema, sum, sum of squares, the
    squared deviations for std: cheap, no gather), then the paired pass (cross terms, KL with the
    extrema known).
    """
    notes: set[Note] = set()
    if complex_data:
        notes.add(Note.COMPLEX_PAIRS)
    if n == 0:
        notes.add(Note.EMPTY)

    selected = set(names)
    if bool_data:
        notes.add(Note.BOOL_DATA)
        selected &= set(BOOL_CAPABLE)
    values: dict[str, float | None] = {name: None for name in names}
    std: tuple[float, float, float, float] | None = None

    if selected:
        F = _passes()
        if F.side_c is not None:  # the native entry points, arrays' addresses resolved once
            sc = _scratch
            xb, xcode = _raw(xf)
            yb, ycode = _raw(yf)
            xcall = (_addr(xb), xcode, xb.shape[0])
            ycall = (_addr(yb), ycode, yb.shape[0])
            lut = _abi.CODE_LUT8
            xtable = _table(xf.dtype) if xcode == lut else None
            ytable = _table(yf.dtype) if ycode == lut else None

            def side(call: tuple, args: tuple, table: np.ndarray | None) -> tuple:
                if table is not None:
                    sc.xt[TILE:] = table
                F.side_c(*call, *args, sc.xt_a, sc.side_a)
                # + 0.0: the kernels may ignore the sign of zero (nsz); sequential sums never gave -0.0
                return tuple(v + 0.0 for v in sc.side_out.tolist())

            def pair(prm: tuple, do_rel: bool, do_kl: bool) -> list:
                sc.prm[0], sc.prm[1], sc.prm[2], sc.prm[3], sc.prm[4] = prm
                if xtable is not None:
                    sc.xt[TILE:] = xtable
                if ytable is not None:
                    sc.yt[TILE:] = ytable
                flags = (1 if do_rel else 0) | (2 if do_kl else 0)
                F.pair_c(*xcall, *ycall, *plan.pair_args, sc.prm_a, flags, sc.xt_a, sc.yt_a, sc.pair_a)
                return [v + 0.0 for v in sc.pair_out.tolist()]

            xside, yside = (xcall, plan.left_args, xtable), (ycall, plan.right_args, ytable)
        else:  # numba's functions (or plain Python with NUMBA_DISABLE_JIT=1)
            def side(buf: np.ndarray, side_plan: tuple) -> tuple:
                # errstate only matters without JIT, where the kernels run on numpy scalars: IEEE
                # NaN/inf results are intended, not worth a RuntimeWarning.
                with np.errstate(all="ignore"):
                    return tuple(float(v) + 0.0 for v in F.side(*_raw(buf), *side_plan, _tile(buf)))

            def pair(prm: tuple, do_rel: bool, do_kl: bool) -> list:
                with np.errstate(all="ignore"):
                    return [float(v) + 0.0 for v in F.pair(*_raw(xf), *_raw(yf), *plan.plan.pair, prm, do_rel,
                                                           do_kl, _tile(xf), _tile(yf))]

            xside, yside = (xf, plan.plan.left), (yf, plan.plan.right)

        left: list = []

        def left_side() -> None:
            if not left:
                left.append(side(*xside))

        if right_cache is None:
            right = side(*yside)
        else:  # while another thread computes this golden's statistics, do the left side
            right = right_cache[0].get_or_compute(right_cache[1], lambda: side(*yside), meanwhile=left_side)
        left_side()
        minx, maxx, sumx, sxx, m2x = left[0]
        miny, maxy, sumy, syy, m2y = right
        # min/max are NaN-propagating: a NaN or an inf on a side shows in its extrema.
        finx = n == 0 or (-math.inf < minx and maxx < math.inf)
        finy = n == 0 or (-math.inf < miny and maxy < math.inf)
        do_rel = bool(selected & {ACC_REL, MAX_REL, MEAN_REL})
        do_kl = KL in selected and n > 0 and finx and finy
        cx, ix, spe = _kl_side(minx, maxx, sumx, n)
        cy, iy, sqe = _kl_side(miny, maxy, sumy, n)
        # Condition the KL sum: the terms use u = p*k, with k ~ Sq/Sp estimated from the one-side
        # sums, so Su ~ Sw and the final log1p(d) - d (d = Sw/Su - 1) is second order in a tiny d
        # (always applied: even k = 1 + 1e-7 left d's rounding at 1e-5 of a 1e-16 KL).
        k = sqe / spe if spe > 0.0 else 1.0
        if not 0.0 < k < math.inf:
            k = 1.0
        s = pair((cx, ix * k, EPS32 * k, cy, iy), do_rel, do_kl)

        if COSINE in selected:
            values[COSINE] = _cosine(s[_abi.PR_SXY], sxx, syy, scalar, notes)
        if MAX_ABS in selected:
            values[MAX_ABS] = s[_abi.PR_MAXABS] if n else None
        if ACC_REL in selected:
            values[ACC_REL] = s[_abi.PR_SREL]
        if RED in selected and math.sqrt(syy) <= EPS64:
            values[RED] = 0.0
        elif RED in selected and not bool_data:  # bool: the reference's x - y fails (None)
            values[RED] = math.sqrt(s[_abi.PR_SSQ] / syy)
        if MEAN_ABS in selected:
            values[MEAN_ABS] = _div(s[_abi.PR_SABS], n)
        if RMSE in selected:
            values[RMSE] = math.sqrt(_div(s[_abi.PR_SSQ], n))
        if MAX_REL in selected:
            values[MAX_REL] = s[_abi.PR_MAXREL] if n else None
        if MEAN_REL in selected:
            values[MEAN_REL] = _div(s[_abi.PR_SREL], n)
        if KL in selected:
            if n == 0:
                values[KL] = None
            elif not do_kl:
                values[KL] = math.nan
            else:
                # sum P log(P/Q) with P = u/Su, Q = w/Sw and A = sum(u log(u/w) - u + w) >= 0:
                # = sum(u log(u/w))/Su + log(Sw/Su) = (A + Su - Sw)/Su + log1p(d) = A/Su + log1p(d) - d,
                # d = (Sw - Su)/Su; log1p(d) - d is second order in d, which k made tiny
                a, su, sw = s[_abi.PR_A], s[_abi.PR_SU], s[_abi.PR_SW]
                d = (sw - su) / su
                kl = a / su + (math.log1p(d) - d)
                if abs(kl) < EPS64:
                    kl = 0.0
                if kl == math.inf:
                    notes.add(Note.KL_GOLDEN_ZERO)
                values[KL] = kl
        if STD in selected and n > 0:
            std = (
                sumx / n,
                _std(m2x, n) if finx else math.nan,
                sumy / n,
                _std(m2y, n) if finy else math.nan,
            )
        elif STD in selected:
            std = (math.nan, math.nan, math.nan, math.nan)

    return KernelResult(values=values, std=std, notes=frozenset(notes), count=n)


def _passes():
    """The two kernel passes: the cached native objects (:mod:`compare.kernels.native`, no numba
    start-up), else numba's functions (numba is imported here, on the first comparison only)."""
    from . import native

    loaded = native.kernels()
    if loaded is not None:
        return loaded
    from . import fused

    return native.Kernels(side=fused._side_boxes, pair=fused._pair_boxes)


def _code_of(dtype: np.dtype) -> int | None:
    """The storage code of a storage buffer's dtype (see :func:`storage`), or None."""
    code = CODES.get(dtype)
    if code is None and dtype.kind in "fV" and dtype.itemsize == 1 and not dtype.names:  # float8_e5m2 is "f"
        return _abi.CODE_LUT8
    return code


def _raw(buf: np.ndarray) -> tuple[np.ndarray, int]:
    """A storage buffer as the kernels take it: its bytes and its type code."""
    return buf.view(np.uint8), _code_of(buf.dtype)  # type: ignore[return-value]


@functools.lru_cache(maxsize=64)
def _table(dtype: np.dtype) -> np.ndarray:
    """The float64 value of each of the 256 bytes of a 1-byte type (NaN where the type has NaN)."""
    with np.errstate(all="ignore"):
        return np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64)


def _tile(buf: np.ndarray | None = None) -> np.ndarray:
    """A kernel scratch buffer (the kernels allocate nothing themselves): the tile, then the
    decode table of ``buf`` when it is a 1-byte CODE_LUT8 buffer."""
    scratch = np.empty(_abi.SCRATCH, dtype=np.float64)
    if buf is not None and _code_of(buf.dtype) == _abi.CODE_LUT8:
        scratch[TILE:] = _table(buf.dtype)
    return scratch


def _kl_side(lo: float, hi: float, total: float, n: int) -> tuple[float, float, float]:
    """KL normalisation of one side: ``(c, inv, S_est)`` with ``p = max((v - c) * inv, EPS32)``.

    The range ``hi - lo`` normalises unless it is 0. Then the metric's ``p = max(v, EPS32)`` is
    one constant, and KL only sees ``P = p / sum p = 1/N``: any constant gives the same KL, so
    ``inv = 0`` makes ``p = EPS32``. Either way ``p`` stays in ``[EPS32, 1]``, which keeps the
    kernel's log argument a normal number. ``S_est`` estimates ``sum p`` from the pass-1 sum.
    """
    rng = hi - lo
    if rng != 0.0 and rng == rng:
        inv = 1.0 / rng
        est = (total - n * lo) * inv
        return lo, inv, max(est, n * EPS32) if est == est else n * EPS32
    return 0.0, 0.0, n * EPS32


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
    product = sxx * syy
    # one rounding: identical sides give exactly 1.0 (sqrt of an exact square is exact); the
    # two-division form is for products that overflow or underflow
    c = sxy / math.sqrt(product) if 1e-300 < product < math.inf else sxy / nx / ny
    return min(c, 1.0)  # Python min: a NaN c stays NaN


def _std(m2: float, n: int) -> float:
    """Population std from the sum of squared deviations from the mean (``M2``)."""
    if n == 0 or m2 != m2:
        return math.nan
    return math.sqrt(m2 / n) if m2 > 0.0 else 0.0


#: Per-thread scratch of the native path (created in each thread on first use).
_scratch = _Scratch()

__all__ = [
    "ALIASES",
    "BOOL_CAPABLE",
    "EPS32",
    "EPS64",
    "METRICS",
    "METRIC_NAMES",
    "KernelPlan",
    "KernelResult",
    "Metric",
    "Note",
    "STORAGE_DTYPES",
    "SideStats",
    "compare_arrays",
    "compare_planned",
    "flat_kernel_plan",
    "is_scalar_like",
    "preload",
    "resolve_algorithms",
    "storage",
]
