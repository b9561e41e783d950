"""The cube-unit ("fractal") layouts: FRACTAL_Z (conv weights) and FRACTAL_NZ (matrices).

FRACTAL_Z, reading (§6.1). Source ``(C1*H*W, No, Ni, C0)``; C0, Ni and No come from the source
shape, H and W from the target shape (``(N, C, H, W)`` for NCHW, ``(H, W, C, N)`` for HWCN), and
``C1 = src[0] // (H*W)``. The data is viewed as ``(C1, H, W, No, Ni, C0)`` and element
``(c1, h, w, no, ni, c0)`` goes to ``(n, c, h, w) = (no*Ni + ni, c1*C0 + c0, h, w)`` (NCHW) or
``(h, w, c, n)`` (HWCN). C and N are then cropped to the target's C and N (crop rule:
:func:`~convert.layouts.shapes.crop_length`).

FRACTAL_Z with groups (``group = G >= 2``, a vcompare addition -- the reference's readers take no
group and fail). Let the target be ``(N, C, kh, kw)`` in NCHW terms, ``n = N // G`` output
channels per group and

    e   = min(lcm(lcm(C, 16) / C, lcm(n, 16) / n), G)   # groups packed into one cube column
    C1' = ceil(e*C / 16)

The device data has shape ``(ceil(G/e)*C1'*kh*kw, ceil(e*n/16), 16, 16)``. Source element
``w[g*n + ni, c, h, w]`` sits at ``[first, dn // 16, dn % 16, dc % 16]`` with ``ev = g % e``,
``dc = ev*C + c``, ``dn = ev*n + ni`` and

    first = (g // e)*C1'*kh*kw + (dc // 16)*kh*kw + h*kw + w.

Writing FRACTAL_Z (NCHW / NHWC / HWCN -> FRACTAL_Z) uses that mapping with C0 = N0 = 16, except
that by default the first term is ``(g // e)*(dc // 16)*kh*kw`` -- the reference tool's formula,
kept so the bytes match it. With more than one super-group (``ceil(G/e) > 1``) that formula
makes different source elements land on the same destination; the reference loops in
``(g, ni, c, h, w)`` order, so the last write wins, and so it does here.
``reference_quirk=False`` writes the layout described above (the one the reader inverts).

FRACTAL_NZ, reading (§6.1, the same for ND, NCHW and NHWC targets). Source ``(..., C1, No, Ni,
C0)``, target T. ``len(T) == 1``: ``B = 1, rows = 1, cols = T[0]``; ``len(T) == 2``: ``B = 1``;
otherwise ``B = prod(T[:-2])`` and ``(rows, cols) = T[-2:]``. The data is viewed as
``(B, C1, No, Ni, C0)`` and ``(b, c1, no, ni, c0) -> (b, no*Ni + ni, c1*C0 + c0)``; rows and cols
are cropped. The result is 2-D ``(rows, cols)`` when ``len(T) <= 2`` and 3-D ``(B, rows, cols)``
otherwise -- not the full rank of T, as in the reference. Without T nothing is cropped and
``B = prod(S[:-4])``.

FRACTAL_NZ, writing (ND -> FRACTAL_NZ): ``(..., r, c)`` (a 1-D source is one row) is zero-padded
to ``(..., R1*16, C1*C0)`` and laid out as ``(..., C1, R1, 16, C0)``; C0 defaults to 32 for
1-byte integers, else 16.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .nc1hwc0 import as_source, default_c0
from .shapes import LayoutError, Shape, as_shape, crop_length, shape_text, shaped

#: Edge of the cube unit used when writing FRACTAL_Z (C0 = N0 = 16) and FRACTAL_NZ rows.
CUBE = 16


# --------------------------------------------------------------------------- FRACTAL_Z reading


def _fractal_z_blocks(shape_from: Sequence[int], array: np.ndarray, h: int, w: int, fmt: str) -> np.ndarray:
    """The source viewed as ``(C1, H, W, No, Ni, C0)``."""
    src = as_shape(shape_from)
    if len(src) != 4:
        raise LayoutError(f"{fmt}: FRACTAL_Z data needs a 4-D source shape (C1*H*W, No, Ni, C0), got {shape_text(src)}")
    if h <= 0 or w <= 0 or src[0] % (h * w):
        raise LayoutError(
            f"{fmt}: the source's first dim {src[0]} is not C1*H*W for the target's H={h}, W={w}"
        )
    x = as_source(array, src, "FRACTAL_Z")
    return x.reshape(src[0] // (h * w), h, w, src[1], src[2], src[3])


def _target4(shape_to: Sequence[int] | None, fmt: str, letters: str) -> Shape:
    target = as_shape(shape_to)
    if len(target) != 4:
        raise LayoutError(
            f"{fmt} needs the 4-D target shape ({', '.join(letters)}) to know the kernel size; "
            f"got {shape_text(target)}"
        )
    return target


def fractal_z_to_nchw(
    shape_from: Sequence[int], shape_to: Sequence[int] | None, array: np.ndarray, group: int = 1
) -> np.ndarray:
    """FRACTAL_Z -> NCHW: ``(c1,h,w,no,ni,c0) -> (no*Ni+ni, c1*C0+c0, h, w)``, N and C cropped to T.

    ``group >= 2``: the group-conv inverse described in the module docstring.
    """
    n, c, h, w = _target4(shape_to, "FRACTAL_Z->NCHW", "NCHW")
    if group >= 2:
        return _fractal_z_group_to_nchw(shape_from, array, (n, c, h, w), int(group), "FRACTAL_Z->NCHW")
    x = _fractal_z_blocks(shape_from, array, h, w, "FRACTAL_Z->NCHW")
    c1, _, _, no, ni, c0 = x.shape
    out = x.transpose(3, 4, 0, 5, 1, 2).reshape(no * ni, c1 * c0, h, w)
    fmt = "FRACTAL_Z->NCHW"
    return out[: crop_length(no * ni, n, "N", fmt), : crop_length(c1 * c0, c, "C", fmt)]


def fractal_z_to_hwcn(
    shape_from: Sequence[int], shape_to: Sequence[int] | None, array: np.ndarray, group: int = 1
) -> np.ndarray:
    """FRACTAL_Z -> HWCN: ``(c1,h,w,no,ni,c0) -> (h, w, c1*C0+c0, no*Ni+ni)``, C and N cropped to T.

    T is read as ``(H, W, C, N)``. ``group >= 2``: the group-conv inverse, then transposed.
    """
    h, w, c, n = _target4(shape_to, "FRACTAL_Z->HWCN", "HWCN")
    if group >= 2:
        nchw = _fractal_z_group_to_nchw(shape_from, array, (n, c, h, w), int(group), "FRACTAL_Z->HWCN")
        return nchw.transpose(2, 3, 1, 0)
    x = _fractal_z_blocks(shape_from, array, h, w, "FRACTAL_Z->HWCN")
    c1, _, _, no, ni, c0 = x.shape
    out = x.transpose(1, 2, 0, 5, 3, 4).reshape(h, w, c1 * c0, no * ni)
    fmt = "FRACTAL_Z->HWCN"
    return out[:, :, : crop_length(c1 * c0, c, "C", fmt), : crop_length(no * ni, n, "N", fmt)]


# --------------------------------------------------------------------------- FRACTAL_Z with groups


def group_geometry(n_total: int, c: int, kh: int, kw: int, group: int) -> tuple[int, int, int, Shape]:
    """``(n, e, C1', device_shape)`` of a grouped FRACTAL_Z weight (see the module docstring)."""
    if group < 1:
        raise LayoutError(f"FRACTAL_Z: group must be >= 1, got {group}")
    n = n_total // group
    if n <= 0 or c <= 0:
        raise LayoutError(
            f"FRACTAL_Z: cannot split N={n_total} output channels with C={c} input channels into {group} groups"
        )
    e = min(math.lcm(math.lcm(c, CUBE) // c, math.lcm(n, CUBE) // n), group)
    c1 = math.ceil(e * c / CUBE)
    shape = (math.ceil(group / e) * c1 * kh * kw, math.ceil(e * n / CUBE), CUBE, CUBE)
    return n, e, c1, shape


def _group_flat_index(
    group: int, n: int, c: int, kh: int, kw: int, e: int, c1: int, n1: int, *, quirk: bool
) -> np.ndarray:
    """Flat destination index of every ``(g, ni, c, h, w)``, in that (C) order."""
    g = np.arange(group, dtype=np.int64).reshape(-1, 1, 1, 1, 1)
    ni = np.arange(n, dtype=np.int64).reshape(1, -1, 1, 1, 1)
    ci = np.arange(c, dtype=np.int64).reshape(1, 1, -1, 1, 1)
    hi = np.arange(kh, dtype=np.int64).reshape(1, 1, 1, -1, 1)
    wi = np.arange(kw, dtype=np.int64).reshape(1, 1, 1, 1, -1)
    ev = g % e
    dc = ev * c + ci
    dn = ev * n + ni
    block = (dc // CUBE) if quirk else c1
    first = (g // e) * block * kh * kw + (dc // CUBE) * kh * kw + hi * kw + wi
    flat = ((first * n1 + dn // CUBE) * CUBE + dn % CUBE) * CUBE + dc % CUBE
    return np.broadcast_to(flat, (group, n, c, kh, kw)).reshape(-1)


def _fractal_z_group_to_nchw(
    shape_from: Sequence[int], array: np.ndarray, target: Shape, group: int, fmt: str
) -> np.ndarray:
    n_total, c, kh, kw = target
    n, e, c1, device = group_geometry(n_total, c, kh, kw, group)
    if n * group != n_total:
        raise LayoutError(f"{fmt}: N={n_total} is not a multiple of group={group}")
    src = as_shape(shape_from)
    if src != device:
        raise LayoutError(
            f"{fmt}: a grouped (group={group}) weight of NCHW shape {shape_text(target)} is stored as "
            f"{shape_text(device)}, but the source shape is {shape_text(src)}"
        )
    flat = shaped(array, src, "FRACTAL_Z").reshape(-1)
    index = _group_flat_index(group, n, c, kh, kw, e, c1, device[1], quirk=False)
    return flat[index].reshape(n_total, c, kh, kw)


# --------------------------------------------------------------------------- FRACTAL_Z writing


def _to_fractal_z(x: np.ndarray, group: int, quirk: bool) -> np.ndarray:
    """NCHW array -> FRACTAL_Z bytes (see the module docstring for the mapping)."""
    group = max(int(group), 1)
    n_total, c, kh, kw = x.shape
    n, e, c1, device = group_geometry(n_total, c, kh, kw, group)
    out = np.zeros(device, dtype=x.dtype)
    values = x[: group * n].reshape(-1)
    index = _group_flat_index(group, n, c, kh, kw, e, c1, device[1], quirk=quirk)
    if quirk and math.ceil(group / e) > 1:
        # Collisions are possible: keep the last write of each destination, as a loop would.
        _, last_in_reversed = np.unique(index[::-1], return_index=True)
        keep = index.size - 1 - last_in_reversed
        index, values = index[keep], values[keep]
    out.reshape(-1)[index] = values
    return out


def nchw_to_fractal_z(
    shape_from: Sequence[int],
    shape_to: Sequence[int] | None,
    array: np.ndarray,
    group: int = 1,
    *,
    reference_quirk: bool = True,
) -> np.ndarray:
    """NCHW -> FRACTAL_Z with ``group`` (default 1); byte-identical to the reference by default."""
    return _to_fractal_z(shaped(array, as_shape(shape_from), "NCHW", 4), group, reference_quirk)


def nhwc_to_fractal_z(
    shape_from: Sequence[int],
    shape_to: Sequence[int] | None,
    array: np.ndarray,
    group: int = 1,
    *,
    reference_quirk: bool = True,
) -> np.ndarray:
    """NHWC -> FRACTAL_Z: transposed to NCHW ``(0, 3, 1, 2)`` first, then as NCHW."""
    x = shaped(array, as_shape(shape_from), "NHWC", 4).transpose(0, 3, 1, 2)
    return _to_fractal_z(x, group, reference_quirk)


def hwcn_to_fractal_z(
    shape_from: Sequence[int],
    shape_to: Sequence[int] | None,
    array: np.ndarray,
    group: int = 1,
    *,
    reference_quirk: bool = True,
) -> np.ndarray:
    """HWCN -> FRACTAL_Z: transposed to NCHW ``(3, 2, 0, 1)`` first, then as NCHW."""
    x = shaped(array, as_shape(shape_from), "HWCN", 4).transpose(3, 2, 0, 1)
    return _to_fractal_z(x, group, reference_quirk)


# --------------------------------------------------------------------------- FRACTAL_NZ


def nz_padded_shape(shape_from: Sequence[int]) -> Shape:
    """``S[:-4] + (No*Ni, C1*C0)``: the ND shape a FRACTAL_NZ source holds, padding included."""
    src = as_shape(shape_from)
    if len(src) < 4:
        raise LayoutError(f"FRACTAL_NZ data needs at least 4 dims (..., C1, No, Ni, C0), got {shape_text(src)}")
    return src[:-4] + (src[-3] * src[-2], src[-4] * src[-1])


def check_nz_target(shape_from: Sequence[int], shape_to: Sequence[int] | None) -> None:
    """Validate a FRACTAL_NZ target shape T against the source S (§6.3); LayoutError if it is wrong.

    With ``O = nz_padded_shape(S)``, T is valid when ``len(T) == len(O)``, the leading dims are
    equal and the last two dims lie within one padding unit below O's:
    ``O[-2] - Ni < T[-2] <= O[-2]`` and ``O[-1] - C0 < T[-1] <= O[-1]``. (The reference uses 16
    for both units; that is the same for 16x16 cubes and wrong for int8's C0 = 32.) An empty T is
    invalid. The message gives T and the recommended shape O.
    """
    src = as_shape(shape_from)
    padded = nz_padded_shape(src)
    target = as_shape(shape_to)
    row_unit, col_unit = src[-2], src[-1]
    ok = (
        len(target) == len(padded)
        and target[:-2] == padded[:-2]
        and padded[-2] - row_unit < target[-2] <= padded[-2]
        and padded[-1] - col_unit < target[-1] <= padded[-1]
    )
    if not ok:
        raise LayoutError(
            f"FRACTAL_NZ target shape {shape_text(target)} does not fit the source shape {shape_text(src)}; "
            f"the source holds {shape_text(padded)} with padding: give the same leading dims and the last two "
            f"dims within one cube of it (recommended shape {shape_text(padded)})"
        )


def fractal_nz_to_nd(
    shape_from: Sequence[int], shape_to: Sequence[int] | None, array: np.ndarray, group: int = 1
) -> np.ndarray:
    """FRACTAL_NZ -> ND / NCHW / NHWC: ``(b,c1,no,ni,c0) -> (b, no*Ni+ni, c1*C0+c0)``, cropped to T.

    Returns 2-D ``(rows, cols)`` when ``len(T) <= 2`` and 3-D ``(B, rows, cols)`` otherwise.
    """
    src = as_shape(shape_from)
    padded = nz_padded_shape(src)
    c1, no, ni, c0 = src[-4:]
    target = as_shape(shape_to)
    if not target:
        batch, rows, cols, two_d = math.prod(src[:-4]), no * ni, c1 * c0, len(src) == 4
    elif len(target) == 1:
        batch, rows, cols, two_d = 1, 1, target[0], True
    elif len(target) == 2:
        batch, (rows, cols), two_d = 1, target, True
    else:
        batch, (rows, cols), two_d = math.prod(target[:-2]), target[-2:], False
    data = array if getattr(array, "is_lazy_view", False) else np.asarray(array)
    if data.size != batch * c1 * no * ni * c0:
        raise LayoutError(
            f"FRACTAL_NZ: target {shape_text(target)} means {batch} matrices of {shape_text(src[-4:])}, "
            f"{batch * c1 * no * ni * c0} elements, but the data has {data.size} (source holds {shape_text(padded)})"
        )
    out = data.reshape(batch, c1, no, ni, c0).transpose(0, 2, 3, 1, 4).reshape(batch, no * ni, c1 * c0)
    out = out[:, : crop_length(no * ni, rows, "rows", "FRACTAL_NZ"), : crop_length(c1 * c0, cols, "cols", "FRACTAL_NZ")]
    return out[0] if two_d else out


def nd_to_fractal_nz(
    shape_from: Sequence[int],
    shape_to: Sequence[int] | None,
    array: np.ndarray,
    group: int = 1,
    *,
    c0: int | None = None,
) -> np.ndarray:
    """ND -> FRACTAL_NZ: ``(..., r, c) -> (..., c // C0, r // 16, r % 16, c % C0)``, zero-padded."""
    src = as_shape(shape_from)
    if not src:
        raise LayoutError("ND->FRACTAL_NZ needs at least a 1-D source shape")
    x = shaped(array, src, "ND")
    if x.ndim == 1:
        x = x.reshape(1, -1)
    c0 = c0 or default_c0(x.dtype)
    lead, (r, c) = x.shape[:-2], x.shape[-2:]
    r1, c1 = math.ceil(r / CUBE), math.ceil(c / c0)
    padded = np.zeros(lead + (r1 * CUBE, c1 * c0), dtype=x.dtype)
    padded[..., :r, :c] = x
    k = len(lead)
    blocks = padded.reshape(lead + (r1, CUBE, c1, c0))
    return np.ascontiguousarray(blocks.transpose(tuple(range(k)) + (k + 2, k, k + 1, k + 3)))
