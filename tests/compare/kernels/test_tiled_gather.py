"""The gather of unit-stride columns (the golden side of NC1HWC0 data) by 8 x 8 transposed blocks.

:func:`compare.kernels.fused._gather` fills a float64 tile with ``src[o + r*s1 + c*s0]`` at
``r*cols + c``; for ``s1 == 1`` it goes through :func:`compare.kernels.fused.transpose8` blocks
and scalar edges. The tile must hold exactly the values of that definition (every bit, NaN aside:
any NaN is a NaN to the kernels), whatever the storage type, the tile's shape and the values --
then every sum the paired pass takes over it is unchanged. End to end, a pair walked through the
NC1HWC0-like plan gives, to the bit, the paired pass of the same pairs laid out contiguously.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from compare.kernels import bind_plan, flat_kernel_plan, fused
from compare.kernels._abi import TILE, ErrMode
from compare.kernels.passes import pair_passes
from compare.kernels.plans import KernelPlan

#: Storage dtypes of the gather: binary16 bits, bfloat16 bits, float32, float64.
STORAGE = (np.uint16, np.int16, np.float32, np.float64)


def _decode(bits: np.ndarray) -> np.ndarray:
    """A storage buffer's values as float64 (the definition :func:`fused.load_f64` compiles)."""
    with np.errstate(invalid="ignore"):  # signalling NaNs: quiet NaNs, as the kernels make them
        return _widen(bits)


def _widen(bits: np.ndarray) -> np.ndarray:
    if bits.dtype == np.uint16:
        return bits.view(np.float16).astype(np.float64)
    if bits.dtype == np.int16:
        return (bits.view(np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return bits.astype(np.float64)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal to the bit (the sign of zero included), any NaN equal to any NaN."""
    nan = np.isnan(a)
    return bool((nan == np.isnan(b)).all() and (a[~nan].view(np.int64) == b[~nan].view(np.int64)).all())


@st.composite
def _column_tiles(draw):
    """A storage buffer of any bit patterns (NaN, +-inf, +-0, subnormals included) and a tile of
    unit-stride columns ``s0`` apart inside it (``rows``, ``cols`` on both sides of multiples of 8)."""
    dtype = draw(st.sampled_from(STORAGE))
    rows = draw(st.integers(1, 40))
    cols = draw(st.integers(1, 20))
    rows = min(rows, TILE // cols)
    s0 = draw(st.integers(rows, rows + 9))
    o = draw(st.integers(0, 7))
    n = o + (cols - 1) * s0 + rows + draw(st.integers(0, 3))
    size = np.dtype(dtype).itemsize
    special = draw(st.lists(st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 65504.0]), max_size=6))
    raw = np.frombuffer(draw(st.binary(min_size=n * size, max_size=n * size)), dtype=dtype).copy()
    vals = np.array(special, dtype=np.float16 if size == 2 else dtype)
    places = draw(st.lists(st.integers(0, n - 1), min_size=len(special), max_size=len(special)))
    if size == 2:
        bits = vals.view(np.uint16) if dtype == np.uint16 else \
            (np.asarray(special, dtype=np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
        raw[places] = bits.view(dtype)
    else:
        raw[places] = vals
    return raw, o, s0, rows, cols


@given(_column_tiles())
def test_unit_stride_columns_fill_the_tile_of_the_definition(case) -> None:
    src, o, s0, rows, cols = case
    dst = np.full(TILE, 7.0)
    fused._gather(src, o, 1, s0, rows, cols, dst)
    r, c = np.divmod(np.arange(rows * cols), cols)
    expected = _decode(src[o + r + c * s0])
    assert _same(dst[: rows * cols], expected)
    assert (dst[rows * cols:] == 7.0).all()  # nothing written past the tile


@given(st.sampled_from(STORAGE), st.integers(8, 30), st.integers(0, 5), st.integers(0, 5))
def test_one_block_is_the_transpose(dtype, s0: int, o: int, d: int) -> None:
    """:func:`fused.transpose8` compiled (a jitted caller) and as plain Python agree with numpy."""
    rng = np.random.default_rng(s0 * 100 + o * 10 + d)
    src = rng.integers(0, 1 << 16, size=o + 8 * s0, dtype=np.uint16).view(dtype) if np.dtype(dtype).itemsize == 2 \
        else rng.standard_normal(o + 8 * s0).astype(dtype)
    dst = np.zeros(d + 8 * 11)
    fused._gather(src, o, 1, s0, 8, 8, dst[d:])  # through the compiled (or no-JIT) gather
    plain = np.zeros(d + 8 * 11)
    fused.transpose8(src, o, s0, plain, d, 8)  # the plain-Python body (what NUMBA_DISABLE_JIT=1 runs)
    k, c = np.divmod(np.arange(64), 8)
    expected = _decode(src[o + c * s0 + k])
    assert _same(dst[d : d + 64], expected)
    assert _same(plain[d : d + 64], expected)


def test_channel_blocked_pair_equals_its_contiguous_layout_to_the_bit() -> None:
    """An NC1HWC0-like pair (left: ``C1 x HW x 16`` contiguous; golden: ``C1*16 x HW``, channels
    ``HW`` apart) gives every field of the paired pass exactly as the contiguous pair whose golden
    was transposed beforehand: the chunks hold the same elements in the same order (``HW`` a
    multiple of the 128 rows of a chunk). NaN, infinities and zeros included."""
    rng = np.random.default_rng(5)
    c1, hw = 3, 256 + 128
    n = c1 * hw * 16
    x = rng.standard_normal(n).astype(np.float16)
    y = rng.standard_normal(n).astype(np.float32)
    y[[3, 500, 7000]] = [np.nan, np.inf, 0.0]
    x[[11, 4000]] = [np.inf, -0.0]
    dims = np.array([[1, 1, 1, c1, hw, 16]])
    sx = np.array([[0, 0, 0, hw * 16, 16, 1]])
    sy = np.array([[0, 0, 0, hw * 16, 1, hw]])
    zero = np.zeros(1, dtype=np.int64)
    flat = flat_kernel_plan(n)
    blocked = bind_plan(KernelPlan((dims, sx, sy, zero, zero), flat.left, flat.right))
    y_in_x_order = y.reshape(c1, 16, hw).transpose(0, 2, 1).reshape(-1).copy()
    prm = (0.0, 1.0, 1e-7, 0.0, 1.0)
    for err in (ErrMode.OFF, ErrMode.F32):
        for do_rel, do_kl in ((False, False), (True, False), (True, True)):
            a = pair_passes(x.view(np.uint16), y, blocked).pair(prm, do_rel, do_kl, err)
            b = pair_passes(x.view(np.uint16), y_in_x_order, bind_plan(flat)).pair(prm, do_rel, do_kl, err)
            assert _same(np.array(a), np.array(b)), (err, do_rel, do_kl)


@given(n1=st.integers(1, 4), m128=st.integers(1, 2), extra=st.integers(0, 15),
       ydtype=st.sampled_from((np.float32, np.float64, np.uint16)), seed=st.integers(0, 2**16))
def test_fractal_nz_pair_equals_its_contiguous_layout_to_the_bit(n1: int, m128: int, extra: int, ydtype,
                                                                  seed: int) -> None:
    """A FRACTAL_NZ-like pair (left: ``N1 x M x 16`` contiguous; golden: ``M x N`` rows, of which
    each tile reads 16 columns, ``N = 16 N1 + extra`` elements apart -- rows that start off a
    64-byte line, whose last byte the row prefetch hints, and tiles whose first chunk the previous
    tile's last prefetches) gives every field of the paired pass exactly as the contiguous pair
    whose golden was rearranged into the left's order beforehand (``M`` a multiple of the 128
    rows of a chunk: the chunks hold the same elements in the same order). NaN, infinities and
    zeros included; the golden's last row ends where its buffer does when ``extra`` is 0."""
    rng = np.random.default_rng(seed)
    m, n = 128 * m128, 16 * n1 + extra
    x = rng.standard_normal(n1 * m * 16).astype(np.float16)
    y = (rng.standard_normal(m * n) * 4).astype(np.float16 if ydtype == np.uint16 else ydtype)
    y[rng.integers(0, m * n, 3)] = [np.nan, np.inf, 0.0]
    x[rng.integers(0, x.size, 2)] = [-np.inf, -0.0]
    ybuf = y.view(np.uint16) if ydtype == np.uint16 else y
    dims = np.array([[1, 1, 1, n1, m, 16]])
    sx = np.array([[0, 0, 0, m * 16, 16, 1]])
    sy = np.array([[0, 0, 0, 16, n, 1]])
    zero = np.zeros(1, dtype=np.int64)
    flat = flat_kernel_plan(x.size)
    nz = bind_plan(KernelPlan((dims, sx, sy, zero, zero), flat.left, flat.right))
    y_in_x_order = y.reshape(m, n)[:, : 16 * n1].reshape(m, n1, 16).transpose(1, 0, 2).reshape(-1).copy()
    ybuf_flat = y_in_x_order.view(np.uint16) if ydtype == np.uint16 else y_in_x_order
    prm = (0.0, 1.0, 1e-7, 0.0, 1.0)
    for err in (ErrMode.OFF, ErrMode.F32):
        for do_rel, do_kl in ((False, False), (True, False), (True, True)):
            a = pair_passes(x.view(np.uint16), ybuf, nz).pair(prm, do_rel, do_kl, err)
            b = pair_passes(x.view(np.uint16), ybuf_flat, bind_plan(flat)).pair(prm, do_rel, do_kl, err)
            assert _same(np.array(a), np.array(b)), (err, do_rel, do_kl)


@st.composite
def _row_tiles(draw):
    """A storage buffer of any bit patterns (specials as in :func:`_column_tiles`) and a tile of
    unit-stride rows ``s1`` apart inside it (``s1`` below, at or above the row length)."""
    dtype = draw(st.sampled_from(STORAGE))
    cols = draw(st.integers(1, 40))
    rows = min(draw(st.integers(1, 40)), TILE // cols)
    s1 = draw(st.integers(0, cols + 20))
    o = draw(st.integers(0, 7))
    n = o + (rows - 1) * s1 + cols + draw(st.integers(0, 3))
    size = np.dtype(dtype).itemsize
    raw = np.frombuffer(draw(st.binary(min_size=n * size, max_size=n * size)), dtype=dtype).copy()
    special = draw(st.lists(st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0]), max_size=6))
    places = draw(st.lists(st.integers(0, n - 1), min_size=len(special), max_size=len(special)))
    vals = np.array(special, dtype=np.float16 if size == 2 else dtype)
    raw[places] = vals.view(dtype) if size == 2 else vals
    return raw, o, s1, rows, cols


@given(_row_tiles())
def test_unit_stride_rows_fill_the_tile_of_the_definition(case) -> None:
    """The rows branch of :func:`fused._gather` (``s0 == 1``: the golden of FRACTAL_NZ data) fills
    ``dst[r*cols + c] = src[o + r*s1 + c]``, every bit, and nothing past the tile."""
    src, o, s1, rows, cols = case
    dst = np.full(TILE, 7.0)
    fused._gather(src, o, s1, 1, rows, cols, dst)
    r, c = np.divmod(np.arange(rows * cols), cols)
    assert _same(dst[: rows * cols], _decode(src[o + r * s1 + c]))
    assert (dst[rows * cols:] == 7.0).all()
