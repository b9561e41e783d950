"""Kernels: arrays in, floats out. No I/O, no logging, no formatting, no threads of their own.

The public, checked API of the comparison metrics:

- :data:`METRIC_NAMES` / :data:`METRICS` / :data:`ALIASES`: the one metric table (read by the CLI,
  the reports and the gates), and :func:`resolve_algorithms`: an ``-alg`` style selection ->
  canonical metric names (both in :mod:`compare.kernels.metrics`); :data:`DEFAULT_METRICS` the
  reference tool's 10 (the command line's default and ``all``), :data:`MSPROBE_METRICS` msprobe's
  3 (:data:`EUC`, :data:`ERR_RATIO_1`, :data:`ERR_RATIO_5`: computed when named, see
  ``docs/metrics.md``);
- :func:`compare_arrays`: two arrays -> :class:`KernelResult` (values, std tuple, notes, and each
  side's :class:`ValueCounts` of NaN / inf / float16-saturated values);
- :func:`compare_planned`: the same over storage buffers (:func:`storage`,
  :mod:`compare.kernels.buffers`) and a :class:`KernelPlan` (:mod:`compare.kernels.plans`; the
  engine's zero-copy path: layouts walked in place, see :mod:`convert.layouts.lazy`);
- :func:`is_scalar_like`: the reference tool's "Scalar" shape test;
- :func:`preload`: get the compiled kernels ready ahead of the first comparison (command line).

Numerics (our design decision): every element is widened to float64 and every sum is a float64
accumulation, so results are float64 truth (the reference tool computes in float32; the two
agree to ~1e-6). The numba kernels live in :mod:`compare.kernels.fused`; their machine code is
compiled once per machine and loaded without numba by :mod:`compare.kernels.native` (the
compiled-code cache is the only file access of this package), else numba is imported on the
first comparison: ``import compare.kernels`` imports neither numba nor llvmlite. The passes'
results are read by name (:class:`~compare.kernels._abi.SidePass`,
:class:`~compare.kernels._abi.PairPass`, see :mod:`compare.kernels.passes`).

Values: ``None`` means "not computed" (the reference prints ``NaN``); ``float('nan')`` means
"computed and NaN" (printed ``nan``). Edge cases are reported as :class:`Note` flags, never as
text; the engine words them.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import CompareError, ShapeError
from ._abi import CODE_BF16, CODE_F16, CODE_F32, CODE_LUT8, EPS32, EPS64, ErrMode, SidePass
from .buffers import STORAGE_DTYPES, code_of, storage
from .metrics import (
    ACC_REL,
    ALIASES,
    BOOL_CAPABLE,
    COSINE,
    DEFAULT_METRICS,
    ERR_RATIO_1,
    ERR_RATIO_5,
    EUC,
    KL,
    MAX_ABS,
    MAX_REL,
    MEAN_ABS,
    MEAN_REL,
    METRIC_NAMES,
    METRICS,
    MSPROBE_METRICS,
    RED,
    RMSE,
    STD,
    AlgorithmSpec,
    Finish,
    Metric,
    Note,
    ValueCounts,
    canonical,
    metric_key,
    resolve_algorithms,
    selection,
    std_tuple,
)
from .passes import SideCache, pair_passes
from .plans import BoundPlan, KernelPlan, bind_plan, flat_kernel_plan


@dataclass(frozen=True)
class KernelResult:
    """Metrics of one pair.

    ``values`` holds exactly the selected metrics, in selection order: a float, float nan
    ("computed, NaN") or None ("not computed"). StandardDeviation's value is always None; its
    numbers are ``std = (mean x, std x, mean y, std y)`` (raw, unrounded), which is None when
    StandardDeviation was not selected or not computed (bool data). ``notes`` are the edge
    cases met; ``count`` is the number of values compared on each side (the element count; twice
    it for complex data, see :func:`compare_arrays`).

    ``left_counts`` / ``right_counts``: the NaN, +-inf and float16-saturated values among each
    side's compared elements (:class:`ValueCounts`, computed by the one-side passes that give the
    extrema and sums: no extra read of the data). :func:`compare_arrays` and
    :func:`compare_planned` always fill them -- integer and bool sides with zeros (they hold no
    such value; for bool data no kernel pass may run at all) -- so None means "not computed": a
    result built by other code.
    """

    values: dict[str, float | None]
    std: tuple[float, float, float, float] | None
    notes: frozenset[Note]
    count: int
    left_counts: ValueCounts | None = None
    right_counts: ValueCounts | None = None


def is_scalar_like(shape: Sequence[int]) -> bool:
    """The reference's "Scalar" shape type: ``sum(shape) == len(shape)``.

    True for ``()``, ``(1,)``, ``(1, 1, 1)``; False for ``(0,)`` and ``(2,)``.
    """
    dims = tuple(int(d) for d in shape)
    return sum(dims) == len(dims)


def preload(*, blas: bool = True) -> None:
    """Get the kernels ready now (what the first comparison would do): the cached native objects
    (:mod:`compare.kernels.native`, built on first use), else numba, imported and its CPU target
    initialised (see :func:`compare.kernels.native.jit.init_target` for ``blas=False``, which
    only a process using numba through vcompare alone should pass: the command line).
    """
    from . import native  # here: loads numba/llvmlite only when the kernels are first needed

    if native.kernels() is not None:
        return
    from . import fused  # noqa: F401 - numba and the kernels' definitions
    from .native import jit  # here: loads llvmlite only when the kernels are first needed

    jit.init_target(blas=blas)


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
    ``metrics`` is anything :func:`resolve_algorithms` accepts; ``None`` (the default) is every
    metric of the table, the reference tool's 10 and msprobe's 3 (the command line's default,
    ``resolve_algorithms(None)``, is the reference's 10). ``scalar``
    says whether the tensor's shape is scalar-like (cosine then reports 1.0 + Note.SCALAR); pass
    ``is_scalar_like(shape)`` of the shape the reference would use. ``None`` derives it from
    ``x.shape``.

    Each metric's formula and edge policy is in ``METRICS[name].doc``, its finishing formula in
    ``METRICS[name].finish`` (see :mod:`compare.kernels.metrics`). Cross-metric rules:
    empty arrays give the reference's empty row (cos 1.0, MaxAbs None, AccRel 0, RED 0, KL None,
    std all nan, MeanAbs/RMSE/MeanRel nan, MaxRel None) + Note.EMPTY; bool-vs-bool data give
    cosine, RED only when the golden has no True (0.0), all others None, std None
    (+ Note.BOOL_DATA).

    Complex data (either side; a real side is taken as having zero imaginary parts) are compared
    as their interleaved ``(real, imag)`` floats, ``2n`` values for ``n`` elements
    (+ Note.COMPLEX_PAIRS): cosine is ``Re(sum x conj(y)) / (|x| |y|)``, RED the complex
    ``|x - y| / |y|``, MaxAbs / relative errors / KL / std are taken over the real and imaginary
    parts alike, and MeanAbs / RMSE average over the ``2n`` parts. ``count`` is then ``2n``.

    ``left_counts`` / ``right_counts`` count NaN, +-inf and (float16 storage only) +-65504 values
    of each side (:class:`ValueCounts`; zeros for integer and bool data, over the ``2n`` parts for
    complex data).
    """
    names = list(METRIC_NAMES) if metrics is None else resolve_algorithms(metrics)
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
    right_cache: SideCache | None = None,
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
    computes them waits for that result (see :class:`~compare.kernels.passes.SideCache`). Those
    statistics are the whole :class:`~compare.kernels._abi.SidePass`, the golden's
    ``right_counts`` included.
    """
    for buf in (xbuf, ybuf):
        if buf.ndim != 1 or code_of(buf.dtype) is None or not buf.dtype.isnative:
            raise CompareError(f"not a kernel storage buffer: {buf.dtype} {buf.shape}")
    names = list(METRIC_NAMES) if metrics is None else canonical(metrics)
    bound = plan if isinstance(plan, BoundPlan) else bind_plan(plan)
    cache = None
    if right_cache is not None and right_key is not None:
        cache = (right_cache, (right_key, ybuf.dtype, bound.right_sig))
    return _compute(xbuf, ybuf, bound, int(count), names, bool(scalar), False, False, cache)


def _compute(
    xf: np.ndarray,
    yf: np.ndarray,
    plan: BoundPlan,
    n: int,
    names: list[str],
    scalar: bool,
    bool_data: bool,
    complex_data: bool,
    right_cache: tuple[SideCache, Hashable] | None = None,
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
    if bool_data:
        notes.add(Note.BOOL_DATA)

    chosen = selection(tuple(names), bool_data)
    # the metrics not computed on bool data stay None; the others are filled in selection order
    values: dict[str, float | None] = dict.fromkeys(names) if bool_data else {}
    std: tuple[float, float, float, float] | None = None
    # bool data (the only case without a computed metric): no NaN, inf or saturation, no pass needed
    left_counts = right_counts = ValueCounts(0, 0, 0)

    if chosen.finish:
        calls = pair_passes(xf, yf, plan)
        if right_cache is None:
            ys = calls.right()
            xs = calls.left()
        else:  # while another thread computes this golden's statistics, do the left side
            left: list[SidePass] = []

            def left_side() -> None:
                if not left:
                    left.append(calls.left())

            ys = right_cache[0].get_or_compute(right_cache[1], calls.right, meanwhile=left_side)
            left_side()
            xs = left[0]
        left_counts, right_counts = _value_counts(xs), _value_counts(ys)
        # min/max are NaN-propagating: a NaN or an inf on a side shows in its extrema.
        finx = n == 0 or (-math.inf < xs.min and xs.max < math.inf)
        finy = n == 0 or (-math.inf < ys.min and ys.max < math.inf)
        do_kl = chosen.kl and n > 0 and finx and finy
        cx, ix, spe = _kl_side(xs.min, xs.max, xs.sum, n)
        cy, iy, sqe = _kl_side(ys.min, ys.max, ys.sum, n)
        # Condition the KL sum: the terms use u = p*k, with k ~ Sq/Sp estimated from the one-side
        # sums, so Su ~ Sw and the final log1p(d) - d (d = Sw/Su - 1) is second order in a tiny d
        # (always applied: even k = 1 + 1e-7 left d's rounding at 1e-5 of a 1e-16 KL).
        k = sqe / spe if spe > 0.0 else 1.0
        if not 0.0 < k < math.inf:
            k = 1.0
        err = _err_mode(xf.dtype, yf.dtype) if chosen.err else _ERR_OFF
        s = calls.pair((cx, ix * k, EPS32 * k, cy, iy), chosen.rel, do_kl, err)

        # each metric's finishing formula is its METRICS entry's (compare.kernels.metrics); the
        # record is built by position (twice as fast as by keyword, once per pair): Finish's order
        done = Finish(s, xs, ys, n, scalar, bool_data, do_kl, finx, finy, notes)
        for name, finish in chosen.finish.items():
            values[name] = finish(done)
        if chosen.std:  # StandardDeviation's numbers are a 4-tuple, not its value
            std = std_tuple(done)

    return KernelResult(values=values, std=std, notes=frozenset(notes), count=n, left_counts=left_counts,
                        right_counts=right_counts)


_ERR_OFF = ErrMode.OFF
#: Storage codes of the data msprobe reads in float32 (float16, bfloat16, float32, the 1-byte floats).
_F32_CODES = frozenset({CODE_F16, CODE_BF16, CODE_F32, CODE_LUT8})


def _err_mode(xdtype: np.dtype, ydtype: np.dtype) -> ErrMode:
    """The precision of msprobe's relative errors for a pair of storage dtypes: float32 when both
    sides are float32 or narrower floats, else float64 (see :class:`~compare.kernels._abi.ErrMode`)."""
    return ErrMode.F32 if code_of(xdtype) in _F32_CODES and code_of(ydtype) in _F32_CODES else ErrMode.F64


def _value_counts(side: SidePass) -> ValueCounts:
    """The counts of a one-side pass (float64 in the kernels' ABI, exact) as ints."""
    return ValueCounts(int(side.nan), int(side.inf), int(side.saturated))  # by position: once per side and pair


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


__all__ = [
    "ACC_REL",
    "ALIASES",
    "BOOL_CAPABLE",
    "COSINE",
    "DEFAULT_METRICS",
    "ERR_RATIO_1",
    "ERR_RATIO_5",
    "EUC",
    "EPS32",
    "EPS64",
    "KL",
    "MAX_ABS",
    "MAX_REL",
    "MEAN_ABS",
    "MEAN_REL",
    "METRICS",
    "METRIC_NAMES",
    "MSPROBE_METRICS",
    "RED",
    "RMSE",
    "STD",
    "BoundPlan",
    "KernelPlan",
    "KernelResult",
    "Metric",
    "Note",
    "STORAGE_DTYPES",
    "ValueCounts",
    "bind_plan",
    "compare_arrays",
    "compare_planned",
    "flat_kernel_plan",
    "is_scalar_like",
    "preload",
    "resolve_algorithms",
    "storage",
    "metric_key",
]
