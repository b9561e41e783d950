"""Iteration plans: how the kernels walk a pair of storage buffers.

A :class:`KernelPlan` pairs the elements of two buffers (boxes of strided dims, built by
:func:`convert.layouts.lazy.plan_pair`, or :func:`flat_kernel_plan` for two flat buffers); a
:class:`BoundPlan` is the same made ready for many native calls (addresses resolved once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


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


def _i64(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous int64 array (itself when it already is one)."""
    return np.ascontiguousarray(a, dtype=np.int64)


def addr(a: np.ndarray) -> int:
    """The address of an array's first byte (what the C entry points take)."""
    return a.ctypes.data


@dataclass(frozen=True, eq=False)
class BoundPlan:
    """A :class:`KernelPlan` made ready for many calls: its arrays as C-contiguous int64 (kept
    alive here) with their addresses resolved once, and the right-side plan's bytes (part of the
    key of a golden's shared side statistics, see :func:`compare.kernels.compare_planned`).
    Operators of one network share a few shapes, so the engine binds each plan once; resolving an
    array's address costs about 2 us, a third of a small pair's kernel time.
    """

    plan: KernelPlan
    #: ``(dims, sx, sy, ox, oy)`` addresses and the box count (the paired pass)
    pair_args: tuple[int, int, int, int, int, int]
    #: ``(dims, strides, offsets)`` addresses and the box count (each side alone)
    left_args: tuple[int, int, int, int]
    right_args: tuple[int, int, int, int]
    right_sig: bytes


def bind_plan(plan: KernelPlan) -> BoundPlan:
    """Bind ``plan`` (see :class:`BoundPlan`): a :class:`KernelPlan` or the plain ``(pair, left,
    right)`` tuple of :func:`convert.layouts.lazy.kernel_plan` (which cannot import this module),
    hence the positions."""
    pair = tuple(_i64(a) for a in plan[0])
    left = tuple(_i64(a) for a in plan[1])
    right = tuple(_i64(a) for a in plan[2])
    kept = KernelPlan(pair, left, right)  # type: ignore[arg-type]
    return BoundPlan(
        plan=kept,
        pair_args=tuple(addr(a) for a in pair) + (int(pair[0].shape[0]),),  # type: ignore[arg-type]
        left_args=tuple(addr(a) for a in left) + (int(left[0].shape[0]),),  # type: ignore[arg-type]
        right_args=tuple(addr(a) for a in right) + (int(right[0].shape[0]),),  # type: ignore[arg-type]
        right_sig=b"".join(a.tobytes() for a in right),
    )


__all__ = ["BoundPlan", "KernelPlan", "addr", "bind_plan", "flat_kernel_plan"]
