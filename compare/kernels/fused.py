"""Private jitted kernels: every metric of one tensor pair in three streaming passes.

Inputs
------
Each side is a raw 1-D **storage buffer** plus iteration plans:

- storage dtypes: ``float32``, ``float64``, ``uint16`` (IEEE binary16 bits -- float16 data viewed
  as uint16, decoded in the kernel) and ``int16`` (bfloat16 bits, likewise). Every element is
  widened to float64 on load; every accumulation is float64.
- a plan: ``nb`` boxes of :data:`NDIM` dims (``dims[nb, NDIM]``) with element strides and start
  offsets per side. A box is walked with its two last dims as a *tile* (``d1`` rows of ``d0``);
  the other dims are plain loops. This is how a device layout (NC1HWC0, FRACTAL_NZ, ...) is
  compared with a golden array without materialising a transposed copy:
  :mod:`convert.layouts.lazy` turns a pair into boxes whose element ``(i0..i5)`` is
  ``x[ox + sum i*sx]`` against ``y[oy + sum i*sy]``. A flat pair is one box ``(1,...,1,n)``.

Passes (:func:`compare.kernels._compute` drives them)
------
1. :func:`_side_boxes` on the left side alone, in its own memory order: min, max, sum, sum of
   squares. 2. The same on the right side (cached by the engine for a golden used twice).
3. :func:`_pair_boxes` on the pair: the cross terms (x*y, |x-y|, (x-y)^2, relative error), the KL
   terms (the extrema and sums of passes 1-2 normalise them) and the centred sums of the
   standard deviations (the means are known).

Each tile is processed in chunks of at most :data:`TILE` elements, gathered and decoded into
small float64 buffers (:func:`_gather`, reading along the unit stride; the next chunk is
prefetched), then reduced by :func:`_acc_side` / :func:`_acc_pair`, whose loops LLVM vectorises
(see the fast-math policy in :mod:`compare.kernels._jit`). Those two are compiled once for float64
buffers whatever the storage types; only the small walkers are specialised per storage type.

NaN semantics follow numpy's (what the reference tool uses): a NaN anywhere reaching a sum or a
max makes that result NaN. The running maxima/minima use ``llvm.maximum``/``llvm.minimum``
(NaN-propagating, vectorisable); sums propagate NaN in any order.

The kernels never raise and allocate only their tile buffers: they return tuples of floats
which :func:`compare.kernels.compare_arrays` turns into metric values and edge-case notes. Do not
call them directly; the public wrappers check and prepare the arrays.

Scalar helpers (:func:`fmax_nan`, :func:`fmin_nan`, :func:`load_f64`, :func:`flog`,
:func:`prefetch`) have plain Python bodies, used as they are under ``NUMBA_DISABLE_JIT=1``, and
numba overloads (LLVM intrinsics and bit manipulation) used when compiled.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from . import EPS32, EPS64
from ._jit import jit

#: Dims of a box (the iteration plan); the last two form the tile.
NDIM = 6
#: Elements per chunk (and per tile buffer: 2 x 16 KiB of float64, inside L1).
TILE = 2048

# Indices of the tuple returned by _pair_boxes (kept here, next to the kernel that fills it).
PR_SXY = 0  # sum x*y
PR_SABS = 1  # sum |x-y|
PR_SSQ = 2  # sum (x-y)^2
PR_MAXABS = 3  # max |x-y|            (0 for n == 0)
PR_SREL = 4  # sum r_i               (r_i = |x_i/y_i - 1| if |y_i| > EPS64 else 0)
PR_MAXREL = 5  # max r_i             (0 for n == 0)
PR_A = 6  # sum p*log(p/q*k)     (KL; see _acc_pair)
PR_SP = 7
PR_SQ = 8
PR_SDX = 9  # sum (x - meanx)
PR_SDX2 = 10  # sum (x - meanx)^2
PR_SDY = 11
PR_SDY2 = 12

_DOUBLE = ir.DoubleType()
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
_FLOAT = ir.FloatType()


# --------------------------------------------------------------------------- scalar helpers


def fmax_nan(a, b):  # pragma: no cover - plain-Python body, used without JIT only
    """``max(a, b)``, NaN if either is NaN (LLVM ``llvm.maximum``)."""
    if a != a or b != b:
        return math.nan
    return a if a >= b else b


def fmin_nan(a, b):  # pragma: no cover - plain-Python body, used without JIT only
    """``min(a, b)``, NaN if either is NaN (LLVM ``llvm.minimum``)."""
    if a != a or b != b:
        return math.nan
    return a if a <= b else b


def load_f64(buf, i):  # pragma: no cover - plain-Python body, used without JIT only
    """Element ``i`` of a storage buffer as a float (uint16: binary16 bits, int16: bfloat16 bits)."""
    v = buf[i]
    if buf.dtype == np.uint16:
        return float(np.asarray(v, dtype=np.uint16).view(np.float16))
    if buf.dtype == np.int16:
        bits = np.asarray(v, dtype=np.int16).view(np.uint16).astype(np.uint32) << np.uint32(16)
        return float(bits.view(np.float32))
    return float(v)


def prefetch(buf, i):  # pragma: no cover - plain-Python body, used without JIT only
    """Hint the CPU to fetch the cache line holding ``buf[i]`` (compiled: ``llvm.prefetch``)."""


def flog(v):  # pragma: no cover - plain-Python body, used without JIT only
    """Natural log of a positive, normal, finite float (compiled: fdlibm's algorithm, < 1 ulp)."""
    return math.log(v)


def _binary_intrinsic(name: str):
    @intrinsic
    def call(typingctx, a, b):
        sig = types.float64(types.float64, types.float64)

        def codegen(context, builder, signature, args):
            fn = builder.module.declare_intrinsic(name, [_DOUBLE], ir.FunctionType(_DOUBLE, [_DOUBLE, _DOUBLE]))
            return builder.call(fn, args)

        return sig, codegen

    return call


_llvm_maximum = _binary_intrinsic("llvm.maximum")
_llvm_minimum = _binary_intrinsic("llvm.minimum")


@intrinsic
def _f64_bits(typingctx, v):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], _I64)

    return types.int64(types.float64), codegen


@intrinsic
def _bits_f64(typingctx, v):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], _DOUBLE)

    return types.float64(types.int64), codegen


@intrinsic
def _half_bits_to_f64(typingctx, v):
    """uint16 binary16 bits -> float64 (``fpext half``: F16C / native instructions, vectorisable)."""

    def codegen(context, builder, signature, args):
        half = builder.bitcast(args[0], ir.HalfType())
        return builder.fpext(half, _DOUBLE)

    return types.float64(types.uint16), codegen


@intrinsic
def _bf16_bits_to_f64(typingctx, v):
    """int16 bfloat16 bits -> float64: the bits are the top half of a float32."""

    def codegen(context, builder, signature, args):
        wide = builder.zext(args[0], _I32)
        bits = builder.shl(wide, ir.Constant(_I32, 16))
        return builder.fpext(builder.bitcast(bits, _FLOAT), _DOUBLE)

    return types.float64(types.int16), codegen


@intrinsic
def _llvm_prefetch(typingctx, arr, idx):
    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = builder.module.declare_intrinsic("llvm.prefetch", [i8p], fnty)
        # read, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.none(arr, types.intp), codegen


@overload(prefetch, inline="always")
def _ov_prefetch(buf, i):
    return lambda buf, i: _llvm_prefetch(buf, i)


@overload(fmax_nan, inline="always")
def _ov_fmax_nan(a, b):
    return lambda a, b: _llvm_maximum(np.float64(a), np.float64(b))


@overload(fmin_nan, inline="always")
def _ov_fmin_nan(a, b):
    return lambda a, b: _llvm_minimum(np.float64(a), np.float64(b))


@overload(load_f64, inline="always")
def _ov_load_f64(buf, i):
    if buf.dtype == types.uint16:
        return lambda buf, i: _half_bits_to_f64(buf[i])
    if buf.dtype == types.int16:
        return lambda buf, i: _bf16_bits_to_f64(buf[i])
    return lambda buf, i: np.float64(buf[i])


# fdlibm e_log.c (Sun Microsystems, freely redistributable): log(1+f) = f - hfsq + s*(hfsq+R).
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_MANT = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000
_SQRT2_BITS = 0x3FF6A09E667F3BCD  # mantissa bits above this: use m/2 and e+1 (m in [sqrt(.5), sqrt(2)))


@overload(flog, inline="always")
def _ov_flog(v):
    def impl(v):
        bits = _f64_bits(v)
        e = (bits >> 52) - 1023
        mb = (bits & _MANT) | _ONE_BITS
        big = np.int64(mb > _SQRT2_BITS)  # arithmetic, not a branch: keeps the loop vectorisable
        mb = mb - big * (1 << 52)
        k = np.float64(e + big)
        f = _bits_f64(mb) - 1.0
        s = f / (2.0 + f)
        z = s * s
        w = z * z
        t1 = w * (_LG2 + w * (_LG4 + w * _LG6))
        t2 = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
        r = t2 + t1
        hfsq = 0.5 * f * f
        return k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)

    return impl


# --------------------------------------------------------------------------- chunk loops


@jit
def _gather(src, o, s1, s0, rows, cols, dst):  # pragma: no cover - exercised through the kernels
    """``dst[r*cols + c] = src[o + r*s1 + c*s0]`` as float64, reading along the smaller stride.

    Not inlined: compiled once per storage type, shared by every walker that reads that type.

    (Indexing goes through non-negative slices: a plain ``src[o + i]`` makes numba add a
    negative-index wrap-around select that stops LLVM from vectorising.)
    """
    if s0 == 1 and (rows == 1 or s1 == cols):  # contiguous tile: one decode-copy loop
        row = src[o : o + rows * cols]
        for c in range(rows * cols):
            dst[c] = load_f64(row, c)
    elif s0 <= s1 or rows == 1:
        for r in range(rows):
            b = o + r * s1
            row = src[b : b + (cols - 1) * s0 + 1 : s0]
            out = dst[r * cols : (r + 1) * cols]
            for c in range(cols):
                out[c] = load_f64(row, c)
    else:
        for c in range(cols):
            b = o + c * s0
            col = src[b : b + (rows - 1) * s1 + 1 : s1]
            out = dst[c : c + (rows - 1) * cols + 1 : cols]
            for r in range(rows):
                out[r] = load_f64(col, r)


@jit
def _acc_side(xv, n, s):  # pragma: no cover - exercised through the kernels
    """One side over the first ``n`` elements of a float64 tile: ``(min, max, sum, sum of squares)``.

    Not inlined: compiled once for float64 tiles whatever the storage types (compile time)."""
    lo, hi, sm, sq = s
    for i in range(n):
        v = xv[i]
        lo = fmin_nan(lo, v)
        hi = fmax_nan(hi, v)
        sm += v
        sq += v * v
    return (lo, hi, sm, sq)


@jit
def _acc_pair(xv, yv, n, prm, do_rel, do_kl, s):  # pragma: no cover - via the kernels
    """The paired terms over the first ``n`` elements of two float64 tiles, continuing ``s``.

    Not inlined: compiled once for float64 tiles whatever the storage types (the heavy loops
    dominate the compile time; the walkers that gather into the tiles are small).

    ``prm = (cx, ix, cy, iy, k, meanx, meany)``: KL uses ``p = max((x - cx) * ix, EPS32)``,
    likewise ``q``, and the term ``p * log(p / q * k)``; std the centred ``x - meanx``.
    """
    sxy, sabs, ssq, maxabs, srel, maxrel, a, sp, sq, sdx, sdx2, sdy, sdy2 = s
    cx, ix, cy, iy, k, meanx, meany = prm
    if do_kl and do_rel:
        for i in range(n):
            xi = xv[i]
            yi = yv[i]
            sxy += xi * yi
            d = xi - yi
            ad = abs(d)
            sabs += ad
            ssq += d * d
            maxabs = fmax_nan(maxabs, ad)
            r = abs(xi / yi - 1.0) if abs(yi) > EPS64 else 0.0
            srel += r
            maxrel = fmax_nan(maxrel, r)
            p = fmax_nan((xi - cx) * ix, EPS32)
            q = fmax_nan((yi - cy) * iy, EPS32)
            sp += p
            sq += q
            a += p * flog(p / q * k)
            dx = xi - meanx
            sdx += dx
            sdx2 += dx * dx
            dy = yi - meany
            sdy += dy
            sdy2 += dy * dy
    elif do_kl:
        for i in range(n):
            xi = xv[i]
            yi = yv[i]
            sxy += xi * yi
            d = xi - yi
            ad = abs(d)
            sabs += ad
            ssq += d * d
            maxabs = fmax_nan(maxabs, ad)
            p = fmax_nan((xi - cx) * ix, EPS32)
            q = fmax_nan((yi - cy) * iy, EPS32)
            sp += p
            sq += q
            a += p * flog(p / q * k)
            dx = xi - meanx
            sdx += dx
            sdx2 += dx * dx
            dy = yi - meany
            sdy += dy
            sdy2 += dy * dy
    elif do_rel:
        for i in range(n):
            xi = xv[i]
            yi = yv[i]
            sxy += xi * yi
            d = xi - yi
            ad = abs(d)
            sabs += ad
            ssq += d * d
            maxabs = fmax_nan(maxabs, ad)
            r = abs(xi / yi - 1.0) if abs(yi) > EPS64 else 0.0
            srel += r
            maxrel = fmax_nan(maxrel, r)
            dx = xi - meanx
            sdx += dx
            sdx2 += dx * dx
            dy = yi - meany
            sdy += dy
            sdy2 += dy * dy
    else:
        for i in range(n):
            xi = xv[i]
            yi = yv[i]
            sxy += xi * yi
            d = xi - yi
            ad = abs(d)
            sabs += ad
            ssq += d * d
            maxabs = fmax_nan(maxabs, ad)
            dx = xi - meanx
            sdx += dx
            sdx2 += dx * dx
            dy = yi - meany
            sdy += dy
            sdy2 += dy * dy
    return (sxy, sabs, ssq, maxabs, srel, maxrel, a, sp, sq, sdx, sdx2, sdy, sdy2)


# --------------------------------------------------------------------------- box walkers


@jit(inline="always")
def _prefetch_ahead(buf, start, count):  # pragma: no cover - exercised through the kernels
    """Prefetch ``buf[start : start + count]`` (clipped), one hint per 64-byte line.

    Page-cache mappings use 4 KiB pages, where the hardware prefetcher stops; fetching the next
    chunk while this one is computed measured 1.7x faster on memory-resident data.
    """
    n = buf.shape[0]
    end = min(start + count, n)
    step = max(64 // buf.itemsize, 1)
    for i in range(max(start, 0), end, step):
        prefetch(buf, i)


@jit(inline="always")
def _prefetch_tile(buf, o, s1, s0, rows, cols):  # pragma: no cover - exercised through the kernels
    """Prefetch the ``rows x cols`` tile at ``o`` (strides ``s1``, ``s0``): its whole span when
    that is dense, else row by row or column by column along a unit stride, else nothing."""
    span = (rows - 1) * s1 + (cols - 1) * s0 + 1
    if span <= 2 * rows * cols:
        _prefetch_ahead(buf, o, span)
    elif s0 == 1:
        for r in range(rows):
            _prefetch_ahead(buf, o + r * s1, cols)
    elif s1 == 1 and rows * buf.itemsize >= 64:
        for c in range(cols):
            _prefetch_ahead(buf, o + c * s0, rows)


@jit(inline="always")
def _chunk(d1, d0, j):  # pragma: no cover - exercised through the kernels
    """Chunk ``j`` of a ``d1 x d0`` tile: ``(first row, first col, rows, cols)``.

    Long rows are cut into segments of TILE, visited segment by segment and, within a segment,
    row by row: the rows of one segment (e.g. the 16 channels of an NC1HWC0 block, gathered from
    the same 64 KiB of device data) follow each other while that data is still in cache.
    """
    if d0 >= TILE:
        seg = j // d1
        r = j - seg * d1
        c = seg * TILE
        return r, c, 1, min(TILE, d0 - c)
    g = TILE // d0
    r = j * g
    return r, 0, min(g, d1 - r), d0


@jit(inline="always")
def _nchunks(d1, d0):  # pragma: no cover - exercised through the kernels
    if d0 >= TILE:
        return d1 * ((d0 + TILE - 1) // TILE)
    g = TILE // d0
    return (d1 + g - 1) // g


@jit
def _side_boxes(xb, dims, sx, ox):  # pragma: no cover - exercised through compare_arrays
    """One side over its own plan: ``(min, max, sum, sum of squares)``, NaN-propagating extrema."""
    xt = np.empty(TILE, dtype=np.float64)
    s = (np.inf, -np.inf, 0.0, 0.0)
    for b in range(dims.shape[0]):
        d1 = dims[b, 4]
        d0 = dims[b, 5]
        if d1 == 0 or d0 == 0:
            continue
        sx1 = sx[b, 4]
        sx0 = sx[b, 5]
        nch = _nchunks(d1, d0)
        for i0 in range(dims[b, 0]):
            for i1 in range(dims[b, 1]):
                for i2 in range(dims[b, 2]):
                    for i3 in range(dims[b, 3]):
                        xo = ox[b] + i0 * sx[b, 0] + i1 * sx[b, 1] + i2 * sx[b, 2] + i3 * sx[b, 3]
                        for j in range(nch):
                            r, c, rows, cols = _chunk(d1, d0, j)
                            xs = xo + r * sx1 + c * sx0
                            m = rows * cols
                            if j + 1 < nch:
                                r2, c2, rows2, cols2 = _chunk(d1, d0, j + 1)
                                _prefetch_tile(xb, xo + r2 * sx1 + c2 * sx0, sx1, sx0, rows2, cols2)
                            _gather(xb, xs, sx1, sx0, rows, cols, xt)
                            s = _acc_side(xt, m, s)
    return s


@jit
def _pair_boxes(xb, yb, dims, sx, sy, ox, oy, prm, do_rel, do_kl):  # pragma: no cover - via compare_arrays
    """The paired pass over the plan: ``(sxy, sabs, ssq, maxabs, srel, maxrel, A, Sp, Sq, sdx,
    sdx2, sdy, sdy2)`` (see :func:`_acc_pair`; ``srel``/``maxrel`` are 0 without ``do_rel``,
    ``A``/``Sp``/``Sq`` 0 without ``do_kl``)."""
    xt = np.empty(TILE, dtype=np.float64)
    yt = np.empty(TILE, dtype=np.float64)
    s = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for b in range(dims.shape[0]):
        d1 = dims[b, 4]
        d0 = dims[b, 5]
        if d1 == 0 or d0 == 0:
            continue
        sx1 = sx[b, 4]
        sx0 = sx[b, 5]
        sy1 = sy[b, 4]
        sy0 = sy[b, 5]
        nch = _nchunks(d1, d0)
        for i0 in range(dims[b, 0]):
            for i1 in range(dims[b, 1]):
                for i2 in range(dims[b, 2]):
                    for i3 in range(dims[b, 3]):
                        xo = ox[b] + i0 * sx[b, 0] + i1 * sx[b, 1] + i2 * sx[b, 2] + i3 * sx[b, 3]
                        yo = oy[b] + i0 * sy[b, 0] + i1 * sy[b, 1] + i2 * sy[b, 2] + i3 * sy[b, 3]
                        for j in range(nch):
                            r, c, rows, cols = _chunk(d1, d0, j)
                            xs = xo + r * sx1 + c * sx0
                            ys = yo + r * sy1 + c * sy0
                            m = rows * cols
                            if j + 1 < nch:
                                r2, c2, rows2, cols2 = _chunk(d1, d0, j + 1)
                                _prefetch_tile(xb, xo + r2 * sx1 + c2 * sx0, sx1, sx0, rows2, cols2)
                                _prefetch_tile(yb, yo + r2 * sy1 + c2 * sy0, sy1, sy0, rows2, cols2)
                            _gather(xb, xs, sx1, sx0, rows, cols, xt)
                            _gather(yb, ys, sy1, sy0, rows, cols, yt)
                            s = _acc_pair(xt, yt, m, prm, do_rel, do_kl, s)
    return s


#: The kernels under their historical names (the no-JIT probe test looks at ``_pass1``).
_pass1 = _side_boxes
_pass2 = _pair_boxes
