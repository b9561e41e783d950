"""Zero-copy layout conversion: a pair becomes an *iteration plan* instead of two flat copies.

:func:`prepare_pair` materialises the converted left array (NC1HWC0 -> NCHW, FRACTAL_NZ -> ND ...
are transposes whose final reshape merges axes numpy cannot merge without a copy) and then
flattens both sides. For the metrics only the pairing of elements matters, so the fast path
keeps the data where it is and describes the pairing:

- :class:`LazyView` is a numpy-like view over a flat buffer that can also represent what numpy
  cannot: an axis made of several *sub-axes* with unrelated strides (the channel axis
  ``c = c1*C0 + c0`` of NC1HWC0 data), cropped to a leading length (channel padding). It supports
  the operations the built-in reading converters and :func:`prepare.slice_to_golden` use --
  ``reshape``, ``transpose``, leading-block slicing and integer indexing of a leading axis -- and
  raises :class:`Unsupported` for anything else.
- :func:`plan_pair` / :func:`plan_decided` apply the very :class:`~.prepare.LayoutDecision` of
  :func:`prepare_pair` (``prepare.apply_decision``) to lazy views: the same decision, the same
  checks, the same exceptions (every call to :func:`convert_layout` is also replayed on a zero-stride dummy array, so errors come from the
  real dispatcher; the one case where the dispatcher warns is left to the ordinary path), and
  returns the two views. :func:`plan_boxes` turns them into the kernel plan
  of :mod:`compare.kernels.fused` (boxes of strided dims, the two innermost forming a tile).

Anything the lazy views cannot express (plugins, grouped FRACTAL_Z, empty tensors, exotic
reshapes) raises :class:`Unsupported` and the caller uses :func:`prepare_pair` instead; the
numbers are the same up to float64 summation order (tests/perf/test_performance_paths.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .dispatch import convert_layout
from .formats import PLAIN_4D
from .prepare import LayoutDecision, apply_decision, decide_layout
from .registry import LAYOUTS, Converter
from .shapes import format_key
from .transpose import PERMUTATIONS

#: Dims of one kernel box (compare.kernels.fused.NDIM).
NDIM = 6


class Unsupported(Exception):
    """The lazy path cannot represent this pair; use :func:`prepare_pair` (not a user error)."""


@dataclass(frozen=True)
class _Axis:
    """A logical axis: sub-axes ``(size, stride)`` major to minor, used up to ``limit`` elements."""

    subs: tuple[tuple[int, int], ...]
    limit: int

    @property
    def full(self) -> int:
        return math.prod(s for s, _ in self.subs)

    @property
    def cropped(self) -> bool:
        return self.limit != self.full

    def offset_of(self, index: int) -> int:
        off = 0
        for size, stride in reversed(self.subs):
            index, digit = divmod(index, size)
            off += digit * stride
        return off


def _simplify(subs: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Drop size-1 sub-axes and merge neighbours that are contiguous with each other."""
    out: list[tuple[int, int]] = []
    for size, stride in subs:
        if size == 1:
            continue
        if out and out[-1][1] == size * stride:
            out[-1] = (out[-1][0] * size, stride)
        else:
            out.append((size, stride))
    return tuple(out)


def _axis(subs: Sequence[tuple[int, int]], limit: int | None = None) -> _Axis:
    subs = _simplify(subs)
    full = math.prod(s for s, _ in subs)
    return _Axis(subs, full if limit is None else limit)


class LazyView:
    """A read-only, numpy-like view of ``base`` (a flat array) that never copies.

    Only what the reading converters need is implemented; everything else raises
    :class:`Unsupported`. ``materialize()`` gives the equivalent ndarray (tests).
    """

    is_lazy_view = True

    def __init__(self, base: np.ndarray, offset: int, axes: Sequence[_Axis]) -> None:
        self.base = base
        self.offset = int(offset)
        self.axes = tuple(axes)

    @classmethod
    def of(cls, array: np.ndarray) -> LazyView:
        """A lazy view of an ndarray (any strides) over its own memory, without copying."""
        array = np.asarray(array)
        if array.size == 0:
            raise Unsupported("empty tensor")
        if array.ndim == 0:
            array = array.reshape(1)
        itemsize = array.dtype.itemsize
        if any(s % itemsize or s < 0 for s in array.strides):
            raise Unsupported("strides that are not positive multiples of the item size")
        strides = [s // itemsize for s in array.strides]
        # The flat buffer: from the first element to the last one the view touches.
        extent = 1 + sum((d - 1) * s for d, s in zip(array.shape, strides))
        base = np.lib.stride_tricks.as_strided(array, shape=(extent,), strides=(itemsize,), writeable=False)
        axes = [_axis([(d, s)]) if d != 1 else _Axis((), 1) for d, s in zip(array.shape, strides)]
        return cls(base, 0, axes)

    # ------------------------------------------------------------------ numpy-like surface

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(ax.limit for ax in self.axes)

    @property
    def ndim(self) -> int:
        return len(self.axes)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.base.dtype

    def dummy(self) -> np.ndarray:
        """A zero-stride ndarray of the same shape and dtype (for replaying checks)."""
        return np.broadcast_to(np.zeros((), dtype=self.dtype), self.shape)

    def transpose(self, *axes) -> LazyView:
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if not axes:
            axes = tuple(reversed(range(self.ndim)))
        if sorted(int(a) for a in axes) != list(range(self.ndim)):
            raise ValueError("axes don't match array")
        return LazyView(self.base, self.offset, [self.axes[int(a)] for a in axes])

    def reshape(self, *shape) -> LazyView:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        dims = [int(d) for d in shape]
        if dims.count(-1) == 1:
            known = math.prod(d for d in dims if d != -1)
            dims[dims.index(-1)] = self.size // known if known else 0
        if math.prod(dims) != self.size or any(d < 0 for d in dims):
            raise ValueError(f"cannot reshape array of size {self.size} into shape {tuple(shape)}")
        if tuple(dims) == self.shape:
            return self
        old = [ax for ax in self.axes if ax.limit != 1]
        new = [d for d in dims if d != 1]
        made: list[_Axis] = []
        i = j = 0
        while i < len(old) or j < len(new):
            group_old, group_new = [old[i]], [new[j]]
            i, j = i + 1, j + 1
            po, pn = group_old[0].limit, group_new[0]
            while po != pn:
                if po < pn:
                    group_old.append(old[i])
                    po *= old[i].limit
                    i += 1
                else:
                    group_new.append(new[j])
                    pn *= new[j]
                    j += 1
            made.extend(_regroup(group_old, group_new))
        axes: list[_Axis] = []
        it = iter(made)
        for d in dims:
            axes.append(_Axis((), 1) if d == 1 else next(it))
        return LazyView(self.base, self.offset, axes)

    def __getitem__(self, key) -> LazyView:
        if not isinstance(key, tuple):
            key = (key,)
        if any(k is Ellipsis or k is None for k in key) or len(key) > self.ndim:
            raise Unsupported(f"index {key!r}")
        offset = self.offset
        axes: list[_Axis] = []
        for pos, ax in enumerate(self.axes):
            k = key[pos] if pos < len(key) else slice(None)
            if isinstance(k, slice):
                start, stop, step = k.indices(ax.limit)
                if step != 1 or start != 0:
                    raise Unsupported("only leading-block slices")
                if stop <= 0:
                    raise Unsupported("empty slice")
                axes.append(_Axis(ax.subs, stop) if stop != ax.limit else ax)
            elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
                index = int(k) + (ax.limit if k < 0 else 0)
                if not 0 <= index < ax.limit:
                    raise IndexError(f"index {int(k)} is out of bounds for axis {pos} with size {ax.limit}")
                offset += ax.offset_of(index)
            else:
                raise Unsupported(f"index {k!r}")
        return LazyView(self.base, offset, axes)

    def __array__(self, dtype=None, copy=None):
        raise Unsupported("a lazy view must not be converted to an ndarray implicitly")

    def materialize(self) -> np.ndarray:
        """The ndarray this view stands for (a copy; for tests and debugging)."""
        index = np.full(self.shape, self.offset, dtype=np.int64)
        for pos, ax in enumerate(self.axes):
            shape = [1] * self.ndim
            shape[pos] = ax.limit
            offs = np.array([ax.offset_of(i) for i in range(ax.limit)], dtype=np.int64)
            index = index + offs.reshape(shape)
        return self.base[index]


def _regroup(old: list[_Axis], new: list[int]) -> list[_Axis]:
    """Reshape one group of axes (same element count) into the new dims."""
    if len(old) == 1 and len(new) == 1:
        return [old[0]]
    if any(ax.cropped for ax in old):
        raise Unsupported("reshape across a cropped axis")
    subs = [s for ax in old for s in ax.subs]
    out: list[_Axis] = []
    for d in new:
        need, take = d, []
        while need > 1:
            size, stride = subs[0]
            if size <= need and need % size == 0:
                take.append((size, stride))
                need //= size
                subs.pop(0)
            elif size > need and size % need == 0:
                take.append((need, stride * (size // need)))
                subs[0] = (size // need, stride)
                need = 1
            else:
                raise Unsupported("reshape that splits a sub-axis unevenly")
        out.append(_axis(take))
    return out


# --------------------------------------------------------------------------- conversion


def _replay(array: LazyView, src: str, dst: str, src_shape, dst_shape, group, plugins) -> tuple[int, ...]:
    """Run the real dispatcher on a dummy of ``array``: its exceptions/warnings, its result shape."""
    return tuple(convert_layout(array.dummy(), src, dst, src_shape, dst_shape, group=group, plugins=plugins).shape)


def lazy_convert_layout(
    array: LazyView,
    src_format: object,
    dst_format: object,
    src_shape: Sequence[int],
    dst_shape: Sequence[int] | None = None,
    *,
    group: int = 1,
    plugins: Mapping[tuple[str, str], Converter] | None = None,
) -> LazyView:
    """:func:`convert_layout` on a lazy view (built-in reading converters only)."""
    src, dst = format_key(src_format), format_key(dst_format)
    shape_from = tuple(int(d) for d in src_shape)
    shape_to = tuple(int(d) for d in dst_shape or ())
    if any(format_key(a) == src and format_key(b) == dst for a, b in (plugins or {})):
        raise Unsupported("custom converter")
    if group >= 2:
        raise Unsupported("grouped FRACTAL_Z")
    if (src, dst) == ("FRACTAL_NZ", "ND") and len(shape_to) > 2 and len(shape_from) >= 4 and (
        array.size != math.prod(shape_to[:-2]) * math.prod(shape_from[-4:])
    ):
        raise Unsupported("FRACTAL_NZ batch mismatch (the dispatcher warns and reshapes)")
    expected = _replay(array, src, dst, src_shape, dst_shape, group, plugins)
    if src == "ND" or (src in PLAIN_4D and len(shape_from) != 4) or src == dst:
        out = array.reshape(shape_from)  # the dispatcher's reshape-only cases
    elif (src, dst) in PERMUTATIONS:
        out = array.reshape(shape_from).transpose(PERMUTATIONS[(src, dst)])
    elif (src, dst) in LAYOUTS and src in ("NC1HWC0", "NDC1HWC0", "FRACTAL_Z", "FRACTAL_NZ"):
        out = LAYOUTS[(src, dst)](shape_from, shape_to, array)
    else:
        raise Unsupported(f"{src}->{dst}")
    if tuple(out.shape) != expected:
        raise Unsupported(f"lazy {src}->{dst} gave {out.shape}, the converter {expected}")
    return out


# duplicates: the signature and the body are prepare_pair's on purpose (layouts/prepare.py): the lazy plan takes
# exactly the arguments of the eager conversion it replaces, decides the same way (decide_layout), and only the
# applying differs (plan_decided here, prepare_decided there)
def plan_pair(
    left: np.ndarray,
    left_format: object,
    left_shape: Sequence[int],
    golden: np.ndarray,
    golden_format: object,
    *,
    target_shape: Sequence[int] | None = None,
    golden_shape: Sequence[int] | None = None,
    sub_format: int = 0,
    plugins: Mapping[tuple[str, str], Converter] | None = None,
    detail: bool = False,
) -> tuple[LazyView, LazyView, tuple[int, ...]]:
    """:func:`prepare_pair` without copies: ``(left view, golden view, left shape after)``.

    Same arguments, same checks and exceptions (LayoutError ..., among them the refusal to crop
    anything but the padding of a converted device layout), same final shape; the two views
    have the same shape and pair the elements exactly as the flattened arrays of
    :func:`prepare_pair` would. Raises :class:`Unsupported` when the lazy views cannot express
    the pair -- call :func:`prepare_pair` then. :func:`decide_layout` then :func:`plan_decided`.
    """
    x = _view(left)
    y = _view(golden)
    decision = decide_layout(left_format, left_shape, golden_format,
                             golden_shape=y.shape if golden_shape is None else golden_shape,
                             target_shape=target_shape, sub_format=sub_format)
    return plan_decided(decision, x, y, plugins=plugins, detail=detail)


def plan_decided(
    decision: LayoutDecision,
    left: np.ndarray | LazyView,
    golden: np.ndarray | LazyView,
    *,
    plugins: Mapping[tuple[str, str], Converter] | None = None,
    detail: bool = False,
) -> tuple[LazyView, LazyView, tuple[int, ...]]:
    """:func:`plan_pair` for a pair whose :class:`LayoutDecision` is already made (the decision
    :func:`convert.layouts.prepare.prepare_decided` applies eagerly)."""
    a, g, shape = apply_decision(decision, _view(left), _view(golden), plugins=plugins, detail=detail,
                                 convert=lazy_convert_layout)
    if a.shape != g.shape:
        if a.ndim == 1 or g.ndim == 1:
            a, g = a.reshape(-1) if a.ndim != 1 else a, g.reshape(-1) if g.ndim != 1 else g
        else:
            g = g.reshape(a.shape)
    return a, g, shape


def _view(array: np.ndarray | LazyView) -> LazyView:
    return array if isinstance(array, LazyView) else LazyView.of(array)


# --------------------------------------------------------------------------- kernel plan


def _common_radix(xa: _Axis, ya: _Axis) -> tuple[list[int], list[int], list[int]]:
    """Sub-axis sizes and x/y strides for walking one logical axis on both sides at once."""
    if len(ya.subs) <= 1 or [s for s, _ in xa.subs] == [s for s, _ in ya.subs]:
        ref, other = xa, ya
    elif len(xa.subs) <= 1:
        ref, other = ya, xa
    else:
        raise Unsupported("both sides split the same axis differently")
    sizes = [s for s, _ in ref.subs]
    ref_strides = [t for _, t in ref.subs]
    if len(other.subs) == len(ref.subs):
        other_strides = [t for _, t in other.subs]
    else:  # other is affine: one sub-axis (or none: a length-1 axis)
        step = other.subs[0][1] if other.subs else 0
        place = [math.prod(sizes[k + 1:]) for k in range(len(sizes))]
        other_strides = [p * step for p in place]
    if ref is xa:
        return sizes, ref_strides, other_strides
    return sizes, other_strides, ref_strides


def _prefix_boxes(sizes: list[int], limit: int) -> list[list[tuple[int, int]]]:
    """``[(start, length) per sub-axis]`` boxes covering indexes ``0 .. limit-1`` of a mixed radix."""
    full = math.prod(sizes)
    if limit == full:
        return [[(0, s) for s in sizes]]
    digits, rest = [], limit
    for s in reversed(sizes):
        rest, d = divmod(rest, s)
        digits.append(d)
    digits.reverse()
    boxes = []
    for level in range(len(sizes)):
        if digits[level] == 0:
            continue
        box = [(digits[k], 1) for k in range(level)] + [(0, digits[level])] + [(0, s) for s in sizes[level + 1:]]
        boxes.append(box)
    return boxes


def plan_boxes(x: LazyView, y: LazyView) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The kernel plan ``(dims, sx, sy, ox, oy)`` pairing two lazy views of one shape.

    Element strides and offsets are relative to ``x.base`` / ``y.base``. Dims are simplified
    (length-1 dropped, neighbours contiguous on both sides merged) and ordered for the kernel:
    the innermost dim is contiguous on the golden side when one is, the next one extends it, the
    others follow in the golden side's memory order. Raises :class:`Unsupported` when more than
    :data:`NDIM` dims remain.
    """
    if x.shape != y.shape:
        raise Unsupported(f"shapes {x.shape} and {y.shape}")
    per_axis = []
    for xa, ya in zip(x.axes, y.axes):
        if xa.limit == 1:
            continue
        sizes, sxs, sys_ = _common_radix(xa, ya)
        per_axis.append([(box, sxs, sys_) for box in _prefix_boxes(sizes, xa.limit)])
    rows = []
    for combo in itertools.product(*per_axis):
        dims, sx, sy = [], [], []
        ox, oy = x.offset, y.offset
        for box, sxs, sys_ in combo:
            for (start, length), tx, ty in zip(box, sxs, sys_):
                ox += start * tx
                oy += start * ty
                dims.append(length)
                sx.append(tx)
                sy.append(ty)
        rows.append(_order(dims, sx, sy) + (ox, oy))
    n = len(rows)
    dims = np.ones((n, NDIM), dtype=np.int64)
    sxa = np.zeros((n, NDIM), dtype=np.int64)
    sya = np.zeros((n, NDIM), dtype=np.int64)
    oxa = np.zeros(n, dtype=np.int64)
    oya = np.zeros(n, dtype=np.int64)
    for b, (d, tx, ty, ox, oy) in enumerate(rows):
        k = NDIM - len(d)
        dims[b, k:], sxa[b, k:], sya[b, k:] = d, tx, ty
        oxa[b], oya[b] = ox, oy
    return dims, sxa, sya, oxa, oya


def _side_plan(v: LazyView) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dims, strides, offsets)`` visiting the elements of one view in its memory order."""
    subs = [sub for ax in v.axes for sub in ax.subs]
    if not any(ax.cropped for ax in v.axes) and _simplify(subs) in (((v.size, 1),), ()):
        dims = np.ones((1, NDIM), dtype=np.int64)  # one contiguous run (the common golden case)
        dims[0, -1] = v.size
        strides = np.zeros((1, NDIM), dtype=np.int64)
        strides[0, -1] = 1
        return dims, strides, np.array([v.offset], dtype=np.int64)
    d, s, _, o, _ = plan_boxes(v, v)
    return d, s, o


def kernel_plan(x: LazyView, y: LazyView):
    """``(pair, left, right)``: :func:`plan_boxes` of the pair, and a plan of each side alone
    (``(dims, strides, offsets)`` in that side's own memory order) -- a
    :class:`compare.kernels.KernelPlan`."""
    return plan_boxes(x, y), _side_plan(x), _side_plan(y)


def _merge(dims: list[int], sx: list[int], sy: list[int]) -> tuple[list[int], list[int], list[int]]:
    out_d, out_x, out_y = [], [], []
    for d, tx, ty in zip(dims, sx, sy):
        if d == 1:
            continue
        if out_d and out_x[-1] == d * tx and out_y[-1] == d * ty:
            out_d[-1] *= d
            out_x[-1], out_y[-1] = tx, ty
        else:
            out_d.append(d)
            out_x.append(tx)
            out_y.append(ty)
    return out_d, out_x, out_y


def _order(dims: list[int], sx: list[int], sy: list[int]) -> tuple[list[int], list[int], list[int]]:
    """Simplify and order the dims of one box for the kernel (see :func:`plan_boxes`)."""
    dims, sx, sy = _merge(dims, sx, sy)
    if not dims:  # a single element
        return [1], [1], [1]
    idx = list(range(len(dims)))
    # Innermost: contiguous on the left (device) side if possible, else on the golden side. The
    # left side is the one in a device layout (NC1HWC0's C0 run, a fractal's 16 x 16 block): read
    # in place, its float16 decodes in a vectorised loop, and the golden is gathered with a stride.
    # On small tensors (in cache) the paired pass then takes 1.3-2.1 ns an element instead of
    # 3.7-5.7 (KL included: 4.7-5.5 instead of 6.7-9.2); large ones are memory-bound either way
    # (docs/performance.md). The outer dims follow the left side's memory order.
    inner = next((i for i in idx if sx[i] == 1), None)
    if inner is None:
        inner = next((i for i in idx if sy[i] == 1), min(idx, key=lambda i: sx[i]))
    rest = [i for i in idx if i != inner]
    tile = [inner]
    if rest:
        ext = next((i for i in rest if sx[i] == sx[inner] * dims[inner]), None)
        if ext is None:
            ext = next((i for i in rest if sy[i] == sy[inner] * dims[inner]), None)
        if ext is None:
            ext = min(rest, key=lambda i: sy[i])  # the golden side's next-closest elements
        rest.remove(ext)
        tile.insert(0, ext)
    rest.sort(key=lambda i: -sx[i])
    order = rest + tile
    dims, sx, sy = _merge([dims[i] for i in order], [sx[i] for i in order], [sy[i] for i in order])
    if len(dims) > NDIM:
        raise Unsupported(f"{len(dims)} dims")
    return dims, sx, sy


__all__ = ["LazyView", "Unsupported", "kernel_plan", "lazy_convert_layout", "plan_boxes", "plan_decided", "plan_pair"]
