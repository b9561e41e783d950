"""The three kernel passes of one pair, their raw float64 results read as named fields.

:func:`backend` picks the kernels: the cached native objects (:mod:`compare.kernels.native`, no
numba start-up), else numba's functions (numba is imported then, on the first comparison only).
:func:`pair_passes` prepares one pair's calls -- each side alone, then the paired pass -- and
wraps what each call returns in :class:`~compare.kernels._abi.SidePass` /
:class:`~compare.kernels._abi.PairPass` right where it returns (the compiled entry points keep
writing their plain ``out[]`` arrays, see :mod:`compare.kernels._abi`).

Every value gets ``+ 0.0``: the kernels may ignore the sign of zero (fast-math ``nsz``), and the
sequential sums they replace never gave ``-0.0``.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import TYPE_CHECKING, Callable, NamedTuple, Protocol

import numpy as np

from . import _abi
from ._abi import FLAG_ERR, FLAG_ERR32, FLAG_KL, FLAG_REL, TILE, ErrMode, PairPass, SidePass
from .buffers import raw, table, tile
from .plans import BoundPlan, addr

if TYPE_CHECKING:  # the loader itself is imported on the first comparison (see backend)
    from .native import Kernels

#: The KL parameters of the paired pass: ``(cx, ix, floor, cy, iy)``, see ``compare.kernels._kl_side``.
KLParams = tuple[float, float, float, float, float]


class SideCache(Protocol):
    """A store of goldens' one-side statistics shared between the engine's threads (implemented by
    :class:`compare.engine.goldens.SideStats`): ``compute()`` runs once per key, and a caller whose
    key another thread is computing runs ``meanwhile()`` before it waits for that result."""

    def get_or_compute(self, key: Hashable, compute: Callable[[], SidePass],
                       meanwhile: Callable[[], None] | None = None) -> SidePass:
        """The value of ``key``, computed by ``compute()`` unless known."""


class PairPasses(NamedTuple):
    """The kernel calls of one prepared pair: each side alone, then the paired pass."""

    left: Callable[[], SidePass]
    right: Callable[[], SidePass]
    #: ``pair(prm, do_rel, do_kl, err)``: the cross terms, the relative errors when ``do_rel``, the
    #: KL terms when ``do_kl`` (normalised by ``prm``) and msprobe's terms unless ``err`` is
    #: ``ErrMode.OFF``
    pair: Callable[[KLParams, bool, bool, ErrMode], PairPass]


def backend() -> Kernels:
    """The two kernel passes: the cached native objects (:mod:`compare.kernels.native`), else
    numba's functions (numba is imported here, on the first comparison only)."""
    from . import native  # here: loads numba/llvmlite only when the kernels are first needed

    loaded = native.kernels()
    if loaded is not None:
        return loaded
    from . import fused  # here: loads numba/llvmlite only when the kernels are first needed

    return native.Kernels(side=fused._side_boxes, pair=fused._pair_boxes)


class _Scratch(threading.local):
    """Per-thread tiles and result buffers of the native entry points (with their addresses)."""

    def __init__(self) -> None:
        self.xt, self.yt = tile(), tile()
        self.side_out = np.empty(_abi.SIDE_OUT, dtype=np.float64)
        self.pair_out = np.empty(_abi.PAIR_OUT, dtype=np.float64)
        self.prm = np.empty(5, dtype=np.float64)
        self.xt_a, self.yt_a = addr(self.xt), addr(self.yt)
        self.side_a, self.pair_a, self.prm_a = addr(self.side_out), addr(self.pair_out), addr(self.prm)


#: Per-thread scratch of the native path (created in each thread on first use).
_scratch = _Scratch()


def pair_passes(xf: np.ndarray, yf: np.ndarray, plan: BoundPlan) -> PairPasses:
    """The calls of the pair of storage buffers ``xf`` (left) and ``yf`` (right) walked by
    ``plan``, through the native entry points (arrays' addresses resolved once) when they are
    loaded, else numba's functions (or plain Python with ``NUMBA_DISABLE_JIT=1``)."""
    k = backend()
    if k.side_c is not None:
        return _native_passes(k, xf, yf, plan)
    return _numba_passes(k, xf, yf, plan)


def _native_passes(k: Kernels, xf: np.ndarray, yf: np.ndarray, plan: BoundPlan) -> PairPasses:
    """:func:`pair_passes` through the C entry points, with this thread's scratch buffers."""
    sc = _scratch
    side_c, pair_c = k.side_c, k.pair_c
    assert side_c is not None and pair_c is not None
    xb, xcode = raw(xf)
    yb, ycode = raw(yf)
    xcall = (addr(xb), xcode, xb.shape[0])
    ycall = (addr(yb), ycode, yb.shape[0])
    lut = _abi.CODE_LUT8
    xtable = table(xf.dtype) if xcode == lut else None
    ytable = table(yf.dtype) if ycode == lut else None

    def side(call: tuple, args: tuple, decode: np.ndarray | None) -> SidePass:
        if decode is not None:
            sc.xt[TILE:] = decode
        side_c(*call, *args, sc.xt_a, sc.side_a)
        return SidePass._make([v + 0.0 for v in sc.side_out.tolist()])

    def pair(prm: KLParams, do_rel: bool, do_kl: bool, err: ErrMode) -> PairPass:
        sc.prm[0], sc.prm[1], sc.prm[2], sc.prm[3], sc.prm[4] = prm
        if xtable is not None:
            sc.xt[TILE:] = xtable
        if ytable is not None:
            sc.yt[TILE:] = ytable
        flags = (FLAG_REL if do_rel else 0) | (FLAG_KL if do_kl else 0) | err
        pair_c(*xcall, *ycall, *plan.pair_args, sc.prm_a, flags, sc.xt_a, sc.yt_a, sc.pair_a)
        return PairPass._make([v + 0.0 for v in sc.pair_out.tolist()])

    return PairPasses(left=lambda: side(xcall, plan.left_args, xtable),
                      right=lambda: side(ycall, plan.right_args, ytable), pair=pair)


def _numba_passes(k: Kernels, xf: np.ndarray, yf: np.ndarray, plan: BoundPlan) -> PairPasses:
    """:func:`pair_passes` through numba's functions. ``errstate`` only matters without JIT, where
    the kernels run on numpy scalars: IEEE NaN/inf results are intended, not worth a warning."""

    def side(buf: np.ndarray, side_plan: tuple) -> SidePass:
        with np.errstate(all="ignore"):
            return SidePass._make([float(v) + 0.0 for v in k.side(*raw(buf), *side_plan, tile(buf))])

    def pair(prm: KLParams, do_rel: bool, do_kl: bool, err: ErrMode) -> PairPass:
        do_err, err32 = (err & FLAG_ERR) != 0, (err & FLAG_ERR32) != 0
        with np.errstate(all="ignore"):
            return PairPass._make([float(v) + 0.0 for v in k.pair(*raw(xf), *raw(yf), *plan.plan.pair, prm, do_rel,
                                                                  do_kl, do_err, err32, tile(xf), tile(yf))])

    return PairPasses(left=lambda: side(xf, plan.plan.left), right=lambda: side(yf, plan.plan.right), pair=pair)


__all__ = ["KLParams", "PairPasses", "SideCache", "backend", "pair_passes"]
