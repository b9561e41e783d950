"""The 5-D / 6-D channel-blocked layouts NC1HWC0 and NDC1HWC0, in both directions.

C0 is always read from the source shape (there is no per-dtype table on the reading side).

Reading (device -> framework), with source index ``(n, c1, h, w, c0)`` and ``c = c1*C0 + c0``:

- NC1HWC0 -> NCHW: ``(n, c, h, w)``; result ``(N, C1*C0, H, W)``, **not cropped** -- the padded
  channels are removed later by slicing to the golden shape (``prepare.slice_to_golden``).
- NC1HWC0 -> NHWC: ``(n, h, w, c)``; result ``(N, H, W, C1*C0)``, not cropped.
- NC1HWC0 -> HWCN: ``(h, w, c, n)``; result ``(H, W, C1*C0, N)``, not cropped.
- NDC1HWC0 -> NCDHW, source ``(n, d, c1, h, w, c0)``: ``(n, c, d, h, w)``; C is cropped to
  ``shape_to[1]`` when ``shape_to`` has at least 2 dims.
- NDC1HWC0 -> ND: the same NCDHW result, cropped only when ``shape_to`` has exactly 5 dims.

Writing (framework -> device, used for fixtures): NCHW -> NC1HWC0 and NCDHW -> NDC1HWC0 pad C
with zeros up to ``C1 = ceil(C / C0)`` blocks; ``c0`` defaults to 32 for 1-byte integer data and
16 otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .shapes import as_shape, crop_length, shaped


# duplicates: the pack and unpack directions below are mirror images (reshape/transpose one way and back),
# kept apart for readability
def as_source(array, shape, fmt: str, rank: int | None = None):
    """:func:`shapes.shaped` for the reading converters, which also accept a lazy view
    (:class:`convert.layouts.lazy.LazyView`): the same checks and messages, then a view reshape."""
    if getattr(array, "is_lazy_view", False):
        shaped(array.dummy(), shape, fmt, rank)
        return array.reshape(shape)
    return shaped(array, shape, fmt, rank)


def default_c0(dtype: np.dtype) -> int:
    """C0 of the cube unit for ``dtype``: a C0 block is 32 bytes of 8-bit or 4-bit elements and 16
    elements of wider ones -- 64 for 4-bit types (int4, fp4 e2m1 / e1m2, as ml_dtypes hold them one a
    byte), 32 for every other 1-byte type (int8, uint8, fp8, HiFloat8, e8m0), 16 for the rest
    (float16, bfloat16, float32 ...). The 2-bit and 6-bit types (rare in device layouts) take 32,
    their one-a-byte storage; an explicit ``c0`` overrides it where a device says otherwise.
    """
    dtype = np.dtype(dtype)
    if dtype.itemsize != 1 or dtype.kind == "b":
        return 16
    return 64 if _element_bits(dtype) == 4 else 32


def _element_bits(dtype: np.dtype) -> int:
    """Bits of one element: ``finfo`` / ``iinfo`` of ml_dtypes for its narrow types, else 8 * itemsize."""
    if dtype.kind in "iu" and dtype.type.__module__.startswith("numpy"):
        return 8 * dtype.itemsize
    import ml_dtypes  # here: only the narrow device types reach this line

    for info in (ml_dtypes.finfo, ml_dtypes.iinfo):
        try:
            return int(info(dtype).bits)
        except (TypeError, ValueError):
            continue
    return 8 * dtype.itemsize


def nc1hwc0_to_nchw(
    shape_from: Sequence[int], shape_to: Sequence[int] | None, array: np.ndarray, group: int = 1
) -> np.ndarray:
    """NC1HWC0 -> NCHW: ``(n,c1,h,w,c0) -> (n, c1*C0+c0, h, w)``; uncropped ``(N, C1*C0, H, W)``."""
    x = as_source(array, as_shape(shape_from), "NC1HWC0", 5)
    n, c1, h, w, c0 = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)


def nc1hwc0_to_nhwc(
    shape_from: Sequence[int], shape_to: Sequence[int] | None, array: np.ndarray, group: int = 1
) -> np.ndarray:
    """NC1HWC0 -> NHWC: ``(n,c1,h,w,c0) -> (n, h, w, c1*C0+c0)``; uncropped ``(N, H, W, C1*C0)``."""
    x = as_source(array, as_shape(shape_from), "NC1HWC0", 5)
    n, c1, h, w, c0 = x.shape
    return x.transpose(0, 2, 3, 1, 4).reshape(n, h, w, c1 * c0)


def nc1hwc0_to_hwcn(
    shape_from: Sequence[int], shape_to: Sequence[int] | None, array: np.ndarray, group: int = 1
) -> np.ndarray:
    """NC1HWC0 -> HWCN: ``(n,c1,h,w,c0) -> (h, w, c1*C0+c0, n)``; uncropped ``(H, W, C1*C0, N)``."""
    x = as_source(array, as_shape(shape_from), "NC1HWC0", 5)
    n, c1, h, w, c0 = x.shape
    return x.transpose(2, 3, 1, 4, 0).reshape(h, w, c1 * c0, n)


def _ndc1hwc0_to_ncdhw_uncropped(shape_from: Sequence[int], array: np.ndarray) -> np.ndarray:
    x = as_source(array, as_shape(shape_from), "NDC1HWC0", 6)
    n, d, c1, h, w, c0 = x.shape
    return x.transpose(0, 2, 5, 1, 3, 4).reshape(n, c1 * c0, d, h, w)


def ndc1hwc0_to_ncdhw(
    shape_from: Sequence[int], shape_to: Sequence[int] | None, array: np.ndarray, group: int = 1
) -> np.ndarray:
    """NDC1HWC0 -> NCDHW: ``(n,d,c1,h,w,c0) -> (n, c1*C0+c0, d, h, w)``, C cropped to ``shape_to[1]``.

    Without a ``shape_to`` of at least 2 dims the result is uncropped ``(N, C1*C0, D, H, W)``.
    """
    out = _ndc1hwc0_to_ncdhw_uncropped(shape_from, array)
    target = as_shape(shape_to)
    if len(target) >= 2:
        out = out[:, : crop_length(out.shape[1], target[1], "C", "NDC1HWC0->NCDHW")]
    return out


def ndc1hwc0_to_nd(
    shape_from: Sequence[int], shape_to: Sequence[int] | None, array: np.ndarray, group: int = 1
) -> np.ndarray:
    """NDC1HWC0 -> ND: the NCDHW result; C is cropped to ``shape_to[1]`` only when it has 5 dims."""
    out = _ndc1hwc0_to_ncdhw_uncropped(shape_from, array)
    target = as_shape(shape_to)
    if len(target) == 5:
        out = out[:, : crop_length(out.shape[1], target[1], "C", "NDC1HWC0->ND")]
    return out


def _pad_channels(x: np.ndarray, axis: int, c0: int) -> np.ndarray:
    c = x.shape[axis]
    padded = math.ceil(c / c0) * c0
    if padded == c:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, padded - c)
    return np.pad(x, widths)


def nchw_to_nc1hwc0(
    shape_from: Sequence[int],
    shape_to: Sequence[int] | None,
    array: np.ndarray,
    group: int = 1,
    *,
    c0: int | None = None,
) -> np.ndarray:
    """NCHW -> NC1HWC0: ``(n, c, h, w) -> (n, c // C0, h, w, c % C0)``, C zero-padded to C1*C0."""
    x = shaped(array, as_shape(shape_from), "NCHW", 4)
    c0 = c0 or default_c0(x.dtype)
    x = _pad_channels(x, 1, c0)
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // c0, c0, h, w).transpose(0, 1, 3, 4, 2))


def ncdhw_to_ndc1hwc0(
    shape_from: Sequence[int],
    shape_to: Sequence[int] | None,
    array: np.ndarray,
    group: int = 1,
    *,
    c0: int | None = None,
) -> np.ndarray:
    """NCDHW -> NDC1HWC0: ``(n, c, d, h, w) -> (n, d, c // C0, h, w, c % C0)``, C zero-padded."""
    x = shaped(array, as_shape(shape_from), "NCDHW", 5)
    c0 = c0 or default_c0(x.dtype)
    x = _pad_channels(x, 1, c0)
    n, c, d, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // c0, c0, d, h, w).transpose(0, 3, 1, 4, 5, 2))
