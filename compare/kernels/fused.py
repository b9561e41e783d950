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

Passes (:func:`compare.kernels._compute` drives them through :mod:`compare.kernels.passes`)
------
1. :func:`_side_boxes` on the left side alone, in its own memory order: min, max, sum, sum of
   squares and the sum of squared deviations from the mean (for the standard deviation), and the
   counts of NaN, +-inf and float16-saturated (``|v| == 65504``) elements -- in the same pass,
   counted (:func:`_count_side`) only in the chunks whose extrema show one.
   2. The same on the right side (cached by the engine for a golden used twice).
3. :func:`_pair_boxes` on the pair: the cross terms (x*y, |x-y|, (x-y)^2, relative error) and
   the KL terms (the extrema and sums of passes 1-2 normalise them).

Each tile is processed in chunks of at most :data:`TILE` elements, gathered and decoded into
small float64 buffers (:func:`_gather`, reading along the unit stride; the next chunk is
prefetched -- in the paired pass, at a tile's last chunk, the next tile's first), then
reduced by :func:`_acc_side` / :func:`_acc_pair`, whose loops LLVM vectorises
(see the fast-math policy in :mod:`compare.kernels.native.jit`). Those two are compiled once
for float64 buffers whatever the storage types; only the small walkers are specialised per
storage type.

NaN semantics follow numpy's (what the reference tool uses): a NaN anywhere reaching a sum or a
max makes that result NaN. The loops stay free of branches and of NaN-aware float reductions
(which do not vectorise without fast-math ``nnan``): extrema are integer reductions over
order-preserving bit patterns, and NaN is decided from a sum that is NaN exactly when an element
is (see :func:`_acc_side`, :func:`_acc_pair`).

The kernels never raise and allocate only their tile buffers: they return tuples of floats
which :mod:`compare.kernels.passes` wraps in :class:`~compare.kernels._abi.SidePass` /
:class:`~compare.kernels._abi.PairPass` and :func:`compare.kernels.compare_arrays` turns into
metric values and edge-case notes. Do not call them directly; the public wrappers check and
prepare the arrays.

Scalar helpers (:func:`order_key`, :func:`key_value`, :func:`f64_bits`, :func:`bits_f64`,
:func:`load_f64`, :func:`load_f32`, :func:`logratio`, :func:`prefetch`, :func:`transpose8`) have plain Python bodies, used as they are under ``NUMBA_DISABLE_JIT=1``, and
numba overloads (LLVM intrinsics and bit manipulation) used when compiled.

One module on purpose, long as it is: numba's on-disk cache checks only the source file of the
function it caches, so a kernel cached from this file would not be recompiled when a helper it
inlined changed in another file. With every jitted function, overload and intrinsic here, any
edit invalidates all the cached machine code at once (the key of the native objects hashes this
file too, see :mod:`compare.kernels.native`).
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from ._abi import EPS32, EPS64, F16_MAX
from ._abi import CODE_BF16, CODE_F16, CODE_F32, CODE_F64, ITEMSIZE, NDIM, TILE  # noqa: F401 - NDIM: docs
from ._abi import CODE_BOOL, CODE_I8, CODE_I16, CODE_I32, CODE_I64, CODE_U8, CODE_U16, CODE_U32, CODE_U64  # noqa: F401
from .native.jit import jit

_DOUBLE = ir.DoubleType()
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
_FLOAT = ir.FloatType()


# --------------------------------------------------------------------------- scalar helpers


def order_key(v):  # pragma: no cover - plain-Python body, used without JIT only
    """An int64 whose signed order is the float order of ``v`` (NaN: see :func:`_acc_side`).

    The IEEE bits, with every bit but the sign flipped for negative numbers. Integer min/max
    reductions vectorise where float ones need fast-math (``nnan``) or slow NaN-propagating
    intrinsics.
    """
    b = int(np.asarray(v, dtype=np.float64).view(np.int64))
    return b ^ ((b >> 63) & _M63)


def key_value(k):  # pragma: no cover - plain-Python body, used without JIT only
    """The float of an :func:`order_key` (its own inverse)."""
    b = int(k) ^ ((int(k) >> 63) & _M63)
    return float(np.asarray(b, dtype=np.int64).view(np.float64))


def f64_bits(v):  # pragma: no cover - plain-Python body, used without JIT only
    """The IEEE bits of a float as an int64 (for ``v >= 0`` or +NaN, ordered like ``v``)."""
    return int(np.asarray(v, dtype=np.float64).view(np.int64))


def bits_f64(b):  # pragma: no cover - plain-Python body, used without JIT only
    """The float of IEEE bits (inverse of :func:`f64_bits`)."""
    return float(np.asarray(b, dtype=np.int64).view(np.float64))


def load_f64(buf, i):  # pragma: no cover - plain-Python body, used without JIT only
    """Element ``i`` of a storage buffer as a float (uint16: binary16 bits, int16: bfloat16 bits)."""
    v = buf[i]
    if buf.dtype == np.uint16:
        return float(np.asarray(v, dtype=np.uint16).view(np.float16))
    if buf.dtype == np.int16:
        bits = np.asarray(v, dtype=np.int16).view(np.uint16).astype(np.uint32) << np.uint32(16)
        return float(bits.view(np.float32))
    return float(v)


def load_f32(buf, i):  # pragma: no cover - plain-Python body, used without JIT only
    """Element ``i`` of a float32, binary16-bits (uint16) or bfloat16-bits (int16) buffer as a
    float32 (exact: every such value is a float32)."""
    v = buf[i]
    if buf.dtype == np.uint16:
        return np.asarray(v, dtype=np.uint16).view(np.float16).astype(np.float32)
    if buf.dtype == np.int16:
        return (np.asarray(v, dtype=np.int16).view(np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)
    return np.float32(v)


def prefetch(buf, i):  # pragma: no cover - plain-Python body, used without JIT only
    """Hint the CPU to fetch the cache line holding ``buf[i]`` (compiled: ``llvm.prefetch``)."""


def transpose8(src, o, s0, dst, d, ds):  # pragma: no cover - plain-Python body, used without JIT only
    """``dst[d + k*ds + c] = src[o + c*s0 + k]`` as float64 for ``c, k`` in ``0..7``: an 8 x 8
    block of 8 contiguous runs of a storage buffer (float64, float32, binary16 or bfloat16 bits)
    transposed into rows of a float64 tile (compiled: 8 vector loads, the exact widening, 24
    shuffles and 8 vector stores, see ``_transpose8``)."""
    for c in range(8):
        for k in range(8):
            dst[d + k * ds + c] = load_f64(src, o + c * s0 + k)


def log_reduce(u, w):  # pragma: no cover - plain-Python body, used without JIT only
    """First half of ``log(u / w)`` (``u``, ``w`` positive, normal, finite): ``(num, den, e)``
    with ``log(u / w) = e*ln2 + log_finish(num / den)``; see the comment above
    ``_ov_log_reduce``. ``num`` is exact and ``den`` in ``[2, 6)``."""
    mu, eu = math.frexp(u)  # mantissas in [0.5, 1): their ratio is what matters
    mw, ew = math.frexp(w)
    up = 1.0 if mu > mw * _SQRT2 else 0.0
    down = 1.0 if mu * _SQRT2 < mw else 0.0
    un, wn = 2.0 * mu * (1.0 + down), 2.0 * mw * (1.0 + up)
    return un - wn, un + wn, float(eu - ew) + up - down


def log_finish(s, e):  # pragma: no cover - plain-Python body, used without JIT only
    """Second half of ``log(u / w)``: ``e*ln2 + 2 atanh(s)`` for ``|s| <= 0.1716``."""
    z = s * s
    w2 = z * z
    r = w2 * (_LG2 + w2 * (_LG4 + w2 * _LG6)) + z * (_LG1 + w2 * (_LG3 + w2 * (_LG5 + w2 * _LG7)))
    return e * _LN2_HI + (2.0 * s + (s * r + e * _LN2_LO))


def logratio(u, w):  # pragma: no cover - plain-Python body, used without JIT only
    """``log(u / w)`` of two positive, normal, finite floats, within ~2 ulp (one division)."""
    num, den, e = log_reduce(u, w)
    return log_finish(num / den, e)


def bregman(u, lr, w):  # pragma: no cover - plain-Python body, used without JIT only
    """One KL term ``u * lr + (w - u)`` (``lr = log(u / w)``), >= 0 up to rounding.

    Compiled as one fused multiply-add of ``u * lr`` and the exact ``w - u``, with the
    fast-math re-association the rest of the kernels allow switched off: re-associated into
    ``(u * lr + w) - u`` it cancels again (a 1e-7 difference between ``u`` and ``w`` left
    3 digits of the term)."""
    return u * lr + (w - u)


_M63 = 0x7FFFFFFFFFFFFFFF
#: The largest and smallest int64: the start of a chunk's extrema keys (beyond every float's key).
_KEY_MAX = _M63
_KEY_MIN = -_M63 - 1


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
def _select(typingctx, c, a, b):
    """``a if c else b`` as one LLVM ``select`` (no branch, no bool-to-float conversion)."""

    def codegen(context, builder, signature, args):
        return builder.select(args[0], args[1], args[2])

    return types.float64(types.boolean, types.float64, types.float64), codegen


@intrinsic
def _bregman(typingctx, u, lr, w):
    """:func:`bregman` with ``contract`` as its only fast-math flag: LLVM fuses the multiply and
    the add but cannot re-associate them (numba adds its flags only to instructions without any)."""

    def codegen(context, builder, signature, args):
        u, lr, w = args
        wmu = builder.fsub(w, u, flags=("contract",))
        prod = builder.fmul(u, lr, flags=("contract",))
        return builder.fadd(prod, wmu, flags=("contract",))

    return types.float64(types.float64, types.float64, types.float64), codegen


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


# duplicates: the float32 twins of the two decoders above; an intrinsic's LLVM types are fixed when it is
# defined, so each target type needs its own (the float32 ones feed the NaN / inf / saturation count)
@intrinsic
def _half_bits_to_f32(typingctx, v):
    """uint16 binary16 bits -> float32 (``fpext half``)."""

    def codegen(context, builder, signature, args):
        half = builder.bitcast(args[0], ir.HalfType())
        return builder.fpext(half, _FLOAT)

    return types.float32(types.uint16), codegen


@intrinsic
def _bf16_bits_to_f32(typingctx, v):
    """int16 bfloat16 bits -> float32: the bits are the top half of a float32."""

    def codegen(context, builder, signature, args):
        wide = builder.zext(args[0], _I32)
        return builder.bitcast(builder.shl(wide, ir.Constant(_I32, 16)), _FLOAT)

    return types.float32(types.int16), codegen


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


_V8D = ir.VectorType(_DOUBLE, 8)


def _shuffle(builder, a, b, mask):
    """``shufflevector a, b, mask`` (lanes ``0..7`` of ``a`` then ``8..15`` of ``b``)."""
    return builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(_I32, len(mask)), mask))


def _widen8(builder, vec, dtype):
    """Eight storage values (``<8 x T>``) as ``<8 x double>``: the vector form of
    :func:`load_f64`'s exact decoders (binary16 ``fpext half``; bfloat16 bits shifted into the top
    of a float32)."""
    if dtype == types.float64:
        return vec
    if dtype == types.float32:
        return builder.fpext(vec, _V8D)
    if dtype == types.uint16:
        return builder.fpext(builder.bitcast(vec, ir.VectorType(ir.HalfType(), 8)), _V8D)
    wide = ir.VectorType(_I32, 8)  # int16: bfloat16 bits
    bits = builder.shl(builder.zext(vec, wide), ir.Constant(wide, [16] * 8))
    return builder.fpext(builder.bitcast(bits, ir.VectorType(_FLOAT, 8)), _V8D)


@intrinsic
def _transpose8(typingctx, src, o, s0, dst, d, ds):
    """:func:`transpose8`: the eight runs loaded as vectors and widened (:func:`_widen8`), then
    transposed by three rounds of pairwise shuffles (lanes interleaved by 1, 2, then 4) -- what
    a column-by-column gather does one strided store at a time. Both arrays must be C-contiguous
    (elements addressed from the data pointer; other layouts do not compile), ``dst`` float64. No
    bounds checks: the caller keeps the block inside both arrays."""
    if (src.dtype not in (types.float64, types.float32, types.uint16, types.int16) or src.layout != "C"
            or dst.dtype != types.float64 or dst.layout != "C"):
        return None

    def codegen(context, builder, signature, args):
        sty, _, _, dty, _, _ = signature.args
        sa = context.make_array(sty)(context, builder, args[0])
        da = context.make_array(dty)(context, builder, args[3])
        o, s0, d, ds = args[1], args[2], args[4], args[5]
        elt = context.get_data_type(sty.dtype)
        vptr = ir.VectorType(elt, 8).as_pointer()
        v = []
        for c in range(8):
            ptr = builder.gep(sa.data, [builder.add(o, builder.mul(s0, ir.Constant(o.type, c)))], inbounds=True)
            vec = builder.load(builder.bitcast(ptr, vptr), align=context.get_abi_sizeof(elt))
            v.append(_widen8(builder, vec, sty.dtype))
        # round 1: lanes of runs 2i, 2i+1 interleaved -> (even k, odd k)
        a = [(_shuffle(builder, v[2 * i], v[2 * i + 1], [0, 8, 2, 10, 4, 12, 6, 14]),
              _shuffle(builder, v[2 * i], v[2 * i + 1], [1, 9, 3, 11, 5, 13, 7, 15])) for i in range(4)]
        # round 2: pairs of lanes -> runs 4j..4j+3 at k = p, p + 4 (h = 0) and p + 2, p + 6 (h = 1)
        q = {}
        for j in range(2):
            for p in range(2):
                q[j, p, 0] = _shuffle(builder, a[2 * j][p], a[2 * j + 1][p], [0, 1, 8, 9, 4, 5, 12, 13])
                q[j, p, 1] = _shuffle(builder, a[2 * j][p], a[2 * j + 1][p], [2, 3, 10, 11, 6, 7, 14, 15])
        # round 3: quads of lanes -> row k holds runs 0..7
        for p in range(2):
            for h in range(2):
                k = p + 2 * h
                for kk, mask in ((k, [0, 1, 2, 3, 8, 9, 10, 11]), (k + 4, [4, 5, 6, 7, 12, 13, 14, 15])):
                    row = _shuffle(builder, q[0, p, h], q[1, p, h], mask)
                    idx = builder.add(d, builder.mul(ds, ir.Constant(d.type, kk)))
                    ptr = builder.gep(da.data, [idx], inbounds=True)
                    builder.store(row, builder.bitcast(ptr, _V8D.as_pointer()), align=8)
        return context.get_dummy_value()

    return types.none(src, o, s0, dst, d, ds), codegen


@overload(transpose8, inline="always")
def _ov_transpose8(src, o, s0, dst, d, ds):
    return lambda src, o, s0, dst, d, ds: _transpose8(src, np.intp(o), np.intp(s0), dst, np.intp(d), np.intp(ds))


@overload(bregman, inline="always")
def _ov_bregman(u, lr, w):
    return lambda u, lr, w: _bregman(np.float64(u), np.float64(lr), np.float64(w))


@overload(f64_bits, inline="always")
def _ov_f64_bits(v):
    return lambda v: _f64_bits(np.float64(v))


@overload(bits_f64, inline="always")
def _ov_bits_f64(b):
    return lambda b: _bits_f64(np.int64(b))


@overload(order_key, inline="always")
def _ov_order_key(v):
    def impl(v):
        b = _f64_bits(np.float64(v))
        return b ^ ((b >> 63) & _M63)

    return impl


@overload(key_value, inline="always")
def _ov_key_value(k):
    def impl(k):
        k = np.int64(k)
        return _bits_f64(k ^ ((k >> 63) & _M63))

    return impl


@overload(load_f64, inline="always")
def _ov_load_f64(buf, i):
    if buf.dtype == types.uint16:
        return lambda buf, i: _half_bits_to_f64(buf[i])
    if buf.dtype == types.int16:
        return lambda buf, i: _bf16_bits_to_f64(buf[i])
    return lambda buf, i: np.float64(buf[i])


@overload(load_f32, inline="always")
def _ov_load_f32(buf, i):
    if buf.dtype == types.uint16:
        return lambda buf, i: _half_bits_to_f32(buf[i])
    if buf.dtype == types.int16:
        return lambda buf, i: _bf16_bits_to_f32(buf[i])
    return lambda buf, i: np.float32(buf[i])


# log(u/w) = e*ln2 + log(mu/mw), the mantissa ratio brought into [1/sqrt2, sqrt2]; then with
# s = (mu - mw)/(mu + mw), log(mu/mw) = 2 atanh(s) = 2s + s*R(s^2), R the minimax polynomial of
# fdlibm's e_log.c (Sun Microsystems, freely redistributable; |s| <= 0.1716, error < 2**-58).
# mu - mw is exact (Sterbenz), so the result is within ~2 ulp of log(u/w) itself: far more
# accurate than log of the rounded quotient u/w (whose rounding is an absolute 1e-16 error, large
# against a log near 0), and it needs one division instead of two.
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
_SQRT2 = 1.4142135623730951


@overload(log_reduce, inline="always")
def _ov_log_reduce(u, w):
    def impl(u, w):
        bu = _f64_bits(u)
        bw = _f64_bits(w)
        e = np.float64((bu >> 52) - (bw >> 52))
        mu = _bits_f64((bu & _MANT) | _ONE_BITS)
        mw = _bits_f64((bw & _MANT) | _ONE_BITS)
        up = mu > mw * _SQRT2
        down = mu * _SQRT2 < mw
        un = _select(down, mu * 2.0, mu)  # selects, not branches: keeps the loop vectorisable
        wn = _select(up, mw * 2.0, mw)
        return un - wn, un + wn, e + _select(up, 1.0, 0.0) - _select(down, 1.0, 0.0)

    return impl


@overload(log_finish, inline="always")
def _ov_log_finish(s, e):
    def impl(s, e):
        z = s * s
        w2 = z * z
        r = w2 * (_LG2 + w2 * (_LG4 + w2 * _LG6)) + z * (_LG1 + w2 * (_LG3 + w2 * (_LG5 + w2 * _LG7)))
        return e * _LN2_HI + (2.0 * s + (s * r + e * _LN2_LO))

    return impl


@overload(logratio, inline="always")
def _ov_logratio(u, w):
    def impl(u, w):
        num, den, e = log_reduce(u, w)
        return log_finish(num / den, e)

    return impl


# --------------------------------------------------------------------------- chunk loops


@jit(inline="always")
def _contiguous(s1, s0, rows, cols):  # pragma: no cover - inlined into the walkers
    """Whether a ``rows x cols`` tile with strides ``s1``, ``s0`` is one contiguous run."""
    return s0 == 1 and (rows == 1 or s1 == cols)


@jit(inline="always")
def _start(offsets, strides, b, i0, i1, i2, i3):  # pragma: no cover - inlined into the walkers
    """Element offset of the tile at outer indices ``(i0..i3)`` of box ``b``."""
    return (offsets[b] + i0 * strides[b, 0] + i1 * strides[b, 1] + i2 * strides[b, 2]
            + i3 * strides[b, 3])


@jit
def _gather(src, o, s1, s0, rows, cols, dst):  # pragma: no cover - exercised through the kernels
    """``dst[r*cols + c] = src[o + r*s1 + c*s0]`` as float64, reading along the smaller stride.

    Not inlined: compiled once per storage type, shared by every walker that reads that type.

    Columns of unit stride (``s1 == 1``: the golden side of NC1HWC0 data, 16 channels ``H*W``
    apart) are transposed in 8 x 8 blocks (:func:`transpose8`): writing them one strided element
    at a time cost 0.57 ns an element, the paired pass 0.84 ns instead of a flat pair's 0.30 (L2,
    float32 golden). Rows of unit stride (``s0 == 1``: the golden side of FRACTAL_NZ data, 16
    elements ``N`` apart) are copied through a slice whose unit step numba knows: the loop of the
    general row slice (its step a runtime value) made the FRACTAL_NZ paired pass 1.48 ns an
    element on B1.8 instead of 1.23-1.26. The tile holds the same values at the same places
    whichever branch fills it, so every sum over it is unchanged to the bit.

    (Indexing goes through non-negative slices: a plain ``src[o + i]`` makes numba add a
    negative-index wrap-around select that stops LLVM from vectorising.)
    """
    if _contiguous(s1, s0, rows, cols):  # one decode-copy loop
        row = src[o : o + rows * cols]
        for c in range(rows * cols):
            dst[c] = load_f64(row, c)
    elif s0 == 1:  # rows of contiguous runs (the golden of FRACTAL_NZ data: 16 elements, N apart)
        for r in range(rows):
            b = o + r * s1
            row = src[b : b + cols]
            out = dst[r * cols : (r + 1) * cols]
            for c in range(cols):
                out[c] = load_f64(row, c)
    elif s0 <= s1 or rows == 1:
        for r in range(rows):
            b = o + r * s1
            row = src[b : b + (cols - 1) * s0 + 1 : s0]
            out = dst[r * cols : (r + 1) * cols]
            for c in range(cols):
                out[c] = load_f64(row, c)
    elif s1 == 1:  # unit-stride columns (the golden of NC1HWC0 data): 8 x 8 blocks transposed
        c8 = cols - cols % 8
        r8 = rows - rows % 8
        for r0 in range(0, r8, 8):
            for c0 in range(0, c8, 8):
                transpose8(src, o + c0 * s0 + r0, s0, dst, r0 * cols + c0, cols)
        for c in range(cols):  # the edges: the last columns whole, the last rows of the others
            b = o + c * s0
            col = src[b : b + rows]
            out = dst[c : c + (rows - 1) * cols + 1 : cols]
            for r in range(r8 if c < c8 else 0, rows):
                out[r] = load_f64(col, r)
    else:
        for c in range(cols):
            b = o + c * s0
            col = src[b : b + (rows - 1) * s1 + 1 : s1]
            out = dst[c : c + (rows - 1) * cols + 1 : cols]
            for r in range(rows):
                out[r] = load_f64(col, r)


@jit
def _gather_cast(src, o, s1, s0, rows, cols, dst, nonzero):  # pragma: no cover - via the kernels
    """:func:`_gather` for integer and bool storage: each element converted exactly as
    ``astype(float64)`` converts it (``nonzero``: bool bytes, any non-zero byte is 1.0). Not
    :func:`load_f64`, which reads int16 / uint16 as bfloat16 / binary16 bits."""
    if _contiguous(s1, s0, rows, cols):
        row = src[o : o + rows * cols]
        if nonzero:
            for c in range(rows * cols):
                dst[c] = 1.0 if row[c] != 0 else 0.0
        else:
            for c in range(rows * cols):
                dst[c] = np.float64(row[c])
        return
    for r in range(rows):
        b = o + r * s1
        row = src[b : b + (cols - 1) * s0 + 1 : s0]
        out = dst[r * cols : (r + 1) * cols]
        for c in range(cols):
            v = row[c]
            out[c] = (1.0 if v != 0 else 0.0) if nonzero else np.float64(v)


@jit
def _gather_any(src, code, o, s1, s0, rows, cols, dst):  # pragma: no cover - via the kernels
    """:func:`_gather` from a byte buffer holding storage type ``code`` (see ``_abi.CODES``).

    The walkers take every storage type as bytes and a code, so they are compiled once (and
    the ahead-of-time object of :mod:`compare.kernels.native` holds one pair of entry points).
    Integer and bool codes go through :func:`_gather_cast` (read in place, converted here: no
    widened copy of the tensor is ever made)."""
    if code == CODE_F16:
        _gather(src.view(np.uint16), o, s1, s0, rows, cols, dst)
    elif code == CODE_BF16:
        _gather(src.view(np.int16), o, s1, s0, rows, cols, dst)
    elif code == CODE_F32:
        _gather(src.view(np.float32), o, s1, s0, rows, cols, dst)
    elif code == CODE_F64:
        _gather(src.view(np.float64), o, s1, s0, rows, cols, dst)
    elif code == CODE_I8:
        _gather_cast(src.view(np.int8), o, s1, s0, rows, cols, dst, False)
    elif code == CODE_U8:
        _gather_cast(src, o, s1, s0, rows, cols, dst, False)
    elif code == CODE_I16:
        _gather_cast(src.view(np.int16), o, s1, s0, rows, cols, dst, False)
    elif code == CODE_U16:
        _gather_cast(src.view(np.uint16), o, s1, s0, rows, cols, dst, False)
    elif code == CODE_I32:
        _gather_cast(src.view(np.int32), o, s1, s0, rows, cols, dst, False)
    elif code == CODE_U32:
        _gather_cast(src.view(np.uint32), o, s1, s0, rows, cols, dst, False)
    elif code == CODE_I64:
        _gather_cast(src.view(np.int64), o, s1, s0, rows, cols, dst, False)
    elif code == CODE_U64:
        _gather_cast(src.view(np.uint64), o, s1, s0, rows, cols, dst, False)
    elif code == CODE_BOOL:
        _gather_cast(src, o, s1, s0, rows, cols, dst, True)
    else:  # CODE_LUT8: dst is a scratch buffer whose tail (after TILE) holds the decode table
        _gather_table(src, o, s1, s0, rows, cols, dst)


@jit
def _gather_table(src, o, s1, s0, rows, cols, dst):  # pragma: no cover - via the kernels
    """:func:`_gather` of a 1-byte type through its 256-entry float64 decode table, which the
    caller put in ``dst[TILE:TILE + 256]`` (``rows * cols <= TILE``: the tile never reaches it)."""
    table = dst[TILE : TILE + 256]
    for r in range(rows):
        b = o + r * s1
        row = src[b : b + (cols - 1) * s0 + 1 : s0]
        out = dst[r * cols : (r + 1) * cols]
        for c in range(cols):
            out[c] = table[row[c]]


@jit
def _side_direct(xb, code, o, m, s):  # pragma: no cover - via the kernels
    """:func:`_acc_side` on ``m`` contiguous elements at ``o`` of byte buffer ``xb`` (type
    ``code``), read in place: no decode-copy into a tile."""
    if code == CODE_F16:
        return _acc_side(xb.view(np.uint16)[o : o + m], m, s)
    if code == CODE_BF16:
        return _acc_side(xb.view(np.int16)[o : o + m], m, s)
    if code == CODE_F32:
        return _acc_side(xb.view(np.float32)[o : o + m], m, s)
    return _acc_side(xb.view(np.float64)[o : o + m], m, s)


@jit
def _count_side(xv, n, sat):  # pragma: no cover - exercised through the kernels
    """``(NaNs, infs, saturated)`` among the first ``n`` elements of ``xv`` (a float64 tile or a
    contiguous float64 piece of a storage buffer): int64 sums of comparisons of ``a = |v|``, no
    branch -- ``a != a``, ``a == inf`` and ``a == sat`` (``sat``: the float16 maximum for
    binary16 storage, NaN -- equal to nothing -- for every other type).

    Called by :func:`_side_boxes` only for a chunk whose extrema show such an element, right
    after :func:`_acc_side` read it: the chunk is still in L1, not read from memory again."""
    cn = 0
    ci = 0
    cs = 0
    for i in range(n):
        a = abs(load_f64(xv, i))
        cn += a != a
        ci += a == np.inf
        cs += a == sat
    return cn, ci, cs


@jit
def _count_side32(xv, n, sat):  # pragma: no cover - exercised through the kernels
    """:func:`_count_side` of float32, binary16 or bfloat16 storage, compared as float32 (exact:
    their values are float32 values) and summed as float32 (exact: ``n <= TILE`` < 2**24) --
    twice the vector lanes of float64 and int64: a chunk with a special value costs half."""
    one = np.float32(1.0)
    zero = np.float32(0.0)
    s32 = np.float32(sat)
    inf32 = np.float32(np.inf)
    cn = zero
    ci = zero
    cs = zero
    for i in range(n):
        a = abs(load_f32(xv, i))
        cn += one if a != a else zero
        ci += one if a == inf32 else zero
        cs += one if a == s32 else zero
    return np.int64(cn), np.int64(ci), np.int64(cs)


@jit
def _count_direct(xb, code, o, m, sat):  # pragma: no cover - via the kernels
    """The counts of ``m`` contiguous elements at ``o`` of byte buffer ``xb`` (type ``code``),
    read in place (the chunk :func:`_side_direct` just read): :func:`_count_side32`, or
    :func:`_count_side` for float64."""
    if code == CODE_F16:
        return _count_side32(xb.view(np.uint16)[o : o + m], m, sat)
    if code == CODE_BF16:
        return _count_side32(xb.view(np.int16)[o : o + m], m, sat)
    if code == CODE_F32:
        return _count_side32(xb.view(np.float32)[o : o + m], m, sat)
    return _count_side(xb.view(np.float64)[o : o + m], m, sat)


@jit
def _pair_direct(xt, yb, code, o, m, prm, do_rel, do_kl, do_err, err32, s):  # pragma: no cover - via the kernels
    """:func:`_acc_pair` of tile ``xt`` against ``m`` contiguous elements at ``o`` of byte buffer
    ``yb`` (type ``code``), read in place."""
    if code == CODE_F16:
        return _acc_pair(xt, yb.view(np.uint16)[o : o + m], m, prm, do_rel, do_kl, do_err, err32, s)
    if code == CODE_BF16:
        return _acc_pair(xt, yb.view(np.int16)[o : o + m], m, prm, do_rel, do_kl, do_err, err32, s)
    if code == CODE_F32:
        return _acc_pair(xt, yb.view(np.float32)[o : o + m], m, prm, do_rel, do_kl, do_err, err32, s)
    return _acc_pair(xt, yb.view(np.float64)[o : o + m], m, prm, do_rel, do_kl, do_err, err32, s)


@jit
def _acc_side(xv, n, s):  # pragma: no cover - exercised through the kernels
    """One side over the first ``n`` (>= 1) elements of ``xv``, continuing ``s``.

    ``xv`` is a float64 tile or a contiguous piece of a storage buffer (decoded on load: numba
    compiles one version per storage type). ``s = (min key, max key, sum, sum of squares, mean,
    M2, count)``: the extrema as :func:`order_key` integers (vectorisable integer reductions; a
    NaN's key lands at one end or the other, so :func:`_side_boxes` decides NaN from the sum of
    squares instead, which is NaN exactly when an element is); ``mean``/``M2`` (sum of squared
    deviations from the mean) for the standard deviation, exact two-pass per chunk -- the chunk
    is in L1 -- and merged across chunks with Chan et al.'s pairwise update, so no pass over the
    pair is needed for it."""
    lo, hi, sm, sq, mean, m2, cnt = s
    ts = 0.0
    for i in range(n):
        v = load_f64(xv, i)
        k = order_key(v)
        lo = lo if lo < k else k
        hi = hi if hi > k else k
        ts += v
        sq += v * v
    tm = ts / n
    t2 = 0.0
    for i in range(n):
        dv = load_f64(xv, i) - tm
        t2 += dv * dv
    tot = cnt + n
    delta = tm - mean
    mean += delta * (n / tot)
    m2 += t2 + delta * delta * (cnt * (n / tot))
    return (lo, hi, sm + ts, sq, mean, m2, tot)


@jit(inline="always")
def _cross(xi, yi, sxy, sabs, ssq, mab):  # pragma: no cover - inlined into _acc_pair
    """The cross terms of one element pair; also returns ``|x - y|``."""
    sxy += xi * yi
    d = xi - yi
    ad = abs(d)
    b = f64_bits(ad)
    return sxy, sabs + ad, ssq + d * d, (mab if mab > b else b), ad


@jit(inline="always")
def _kl_reduce(xi, yi, prm):  # pragma: no cover - inlined into _acc_pair
    """KL inputs of one element pair: ``(num, den, e, u, w, ya, keep)`` -- :func:`log_reduce` of
    ``u / w``, the two normalised values, and ``|y|`` for the relative error (1 where masked,
    ``keep`` False)."""
    cx, ixk, uk, cy, iy = prm
    u = (xi - cx) * ixk
    u = u if u > uk else uk
    w = (yi - cy) * iy
    w = w if w > EPS32 else EPS32
    num, den, e = log_reduce(u, w)
    ay = abs(yi)
    keep = ay > EPS64
    return num, den, e, u, w, (ay if keep else 1.0), keep


#: msprobe's error-ratio thresholds (0.1 % and 0.5 %), and the same rounded to float32: msprobe
#: compares a float32 array of relative errors with them, which numpy does in float32.
ERR_T1 = 0.001
ERR_T5 = 0.005
ERR_T1_F32 = float(np.float32(ERR_T1))
ERR_T5_F32 = float(np.float32(ERR_T5))


@jit(inline="always")
def _msprobe_clean(xi, yi):  # pragma: no cover - inlined into _acc_err
    """msprobe's special-value rule on one element pair: ``(x', y', mismatch)`` -- both 0 when both
    are NaN or both are infinite, ``mismatch`` 1.0 when only one is NaN or only one is +-inf."""
    xsp = not (abs(xi) < math.inf)  # NaN or +-inf
    ysp = not (abs(yi) < math.inf)
    mis = 1.0 if ((xi != xi) != (yi != yi) or xsp != ysp) else 0.0
    both = xsp and ysp
    return (0.0 if both else xi), (0.0 if both else yi), mis


@jit
def _acc_err(xv, yv, n, err32, efin, emis, w1, w5):  # pragma: no cover - via the kernels
    """msprobe's terms over the first ``n`` elements of ``xv`` and ``yv`` (as :func:`_acc_pair`),
    continuing ``(efin, emis, w1, w5)``; called by :func:`_acc_pair` on the chunk it has just
    reduced, still in L1 (no second read of the data from memory).

    msprobe first looks at the special values: where both sides are NaN, or both are +-inf (of any
    signs), at the same position, both become 0; a position where only one side is NaN, or only
    one is infinite, is counted in ``emis`` (the finishing formulas then give nan: msprobe's
    "N/A"). Then, with ``x'``, ``y'`` the values so cleaned:

    - ``efin += (x' - y')^2`` (EucDist's sum);
    - the relative error ``r = |(a - b) / b|`` with ``a = x'``, ``b = y'``, except where
      ``y' == 0``: ``a = x' + eps``, ``b = eps`` -- computed in float32 when ``err32`` (each
      operation rounded to float32, ``eps = EPS32``: msprobe's precision for float16 / bfloat16 /
      float32 data), else in float64 (``eps = EPS64``);
    - ``w1`` / ``w5`` count ``r < 0.001`` / ``r < 0.005`` (the thresholds rounded to float32
      when ``err32``; a NaN or inf ``r`` is never within).

    Counts are float64 (exact below 2**53), like every field of the pass's result.
    """
    if err32:  # two loops, the branch hoisted: each vectorises on its own
        for i in range(n):
            xc, yc, mis = _msprobe_clean(xv[i], load_f64(yv, i))
            emis += mis
            d = xc - yc
            efin += d * d
            z = yc == 0.0
            b = EPS32 if z else yc
            a = np.float64(np.float32(xc + EPS32)) if z else xc
            r = abs(np.float64(np.float32(np.float64(np.float32(a - b)) / b)))
            w1 += 1.0 if r < ERR_T1_F32 else 0.0
            w5 += 1.0 if r < ERR_T5_F32 else 0.0
    else:
        for i in range(n):
            xc, yc, mis = _msprobe_clean(xv[i], load_f64(yv, i))
            emis += mis
            d = xc - yc
            efin += d * d
            z = yc == 0.0
            b = EPS64 if z else yc
            a = xc + EPS64 if z else xc
            r = abs((a - b) / b)
            w1 += 1.0 if r < ERR_T1 else 0.0
            w5 += 1.0 if r < ERR_T5 else 0.0
    return efin, emis, w1, w5


@jit
def _acc_pair(xv, yv, n, prm, do_rel, do_kl, do_err, err32, s):  # pragma: no cover - via the kernels
    """The paired terms over the first ``n`` elements of ``xv`` (a float64 tile) and ``yv`` (a
    float64 tile or a contiguous piece of a storage buffer, decoded on load), continuing ``s``.

    Not inlined: the heavy loops are compiled once per type of ``yv`` whatever the walkers.

    The maxima of ``|x - y|`` and ``r`` are kept as IEEE bits (int64): both are >= 0 or +NaN,
    whose bits order like the values (NaN above inf), so an integer max reduction -- which
    vectorises -- propagates NaN like numpy's max. ``r = |x/y - 1|`` (masked to 0 where
    ``|y| <= EPS64``); the KL loop, whose data are finite, computes it as ``|x - y| / |y|``
    (from the exact difference: within 1 ulp of the true value).

    ``prm = (cx, ixk, uk, cy, iy)``: KL uses ``u = max((x - cx) * ixk, uk)`` (``= p * k``, with
    ``p`` the min-max normalised left side, ``ixk = k / range``, ``uk = EPS32 * k``) and
    ``w = max((y - cy) * iy, EPS32)`` (``= q``), and accumulates the sums of ``u``, of ``w`` and
    of ``u * log(u / w) - u + w`` (:func:`log_reduce`, :func:`log_finish`, :func:`bregman`): terms that are all
    >= 0 (about ``(u - w)^2 / 2w``), so their sum carries no cancellation -- the plain
    ``u * log(u / w)`` terms are +-|u - w| and cancel down to the KL, often 1e-5 of them, losing
    that much relative precision. Both sides must be finite (the caller skips KL otherwise), so
    plain maxima clamp.

    The KL loop shares one division between the relative error and the log (``1/(a b)`` gives
    ``1/a`` and ``1/b``; ``b`` is scaled into ``[1/4, 3/4)`` so ``a b`` neither overflows nor
    underflows): a float64 vector division costs about 2 cycles an element. (A float32 division
    refined by Newton steps measured slower: it lengthens the loop's dependency chain beyond what
    the out-of-order window overlaps.)
    """
    sxy, sabs, ssq, mab, srel, mrb, a, su, sw, efin, emis, w1, w5 = s
    if do_err:  # msprobe's terms, over the same chunk while it is in L1 (see _acc_err)
        efin, emis, w1, w5 = _acc_err(xv, yv, n, err32, efin, emis, w1, w5)
    if do_kl:  # one loop computes KL (with the relative errors), whatever the selection
        for i in range(n):
            xi = xv[i]
            yi = load_f64(yv, i)
            sxy, sabs, ssq, mab, ad = _cross(xi, yi, sxy, sabs, ssq, mab)
            num, den, e, u, w, ya, keep = _kl_reduce(xi, yi, prm)
            inv = 1.0 / (ya * (den * 0.125))
            r = ad * ((den * 0.125) * inv) if keep else 0.0
            srel += r
            b = f64_bits(r)
            mrb = mrb if mrb > b else b
            a += bregman(u, log_finish(num * (ya * inv * 0.125), e), w)  # >= 0: no cancellation
            su += u
            sw += w
    elif do_rel:
        for i in range(n):
            xi = xv[i]
            yi = load_f64(yv, i)
            sxy, sabs, ssq, mab, ad = _cross(xi, yi, sxy, sabs, ssq, mab)
            r = abs(xi / yi - 1.0) if abs(yi) > EPS64 else 0.0  # x/y: 1 for an infinite y
            srel += r
            b = f64_bits(r)
            mrb = mrb if mrb > b else b
    else:
        for i in range(n):
            sxy, sabs, ssq, mab, ad = _cross(xv[i], load_f64(yv, i), sxy, sabs, ssq, mab)
    return (sxy, sabs, ssq, mab, srel, mrb, a, su, sw, efin, emis, w1, w5)


# --------------------------------------------------------------------------- box walkers


@jit(inline="always")
def _prefetch_ahead(buf, start, count):  # pragma: no cover - exercised through the kernels
    """Prefetch bytes ``buf[start : start + count]`` (clipped), one hint per 64-byte line.

    Page-cache mappings use 4 KiB pages, where the hardware prefetcher stops; fetching the next
    chunk while this one is computed measured 1.7x faster on memory-resident data.
    """
    end = min(start + count, buf.shape[0])
    for i in range(max(start, 0), end, 64):
        prefetch(buf, i)


@jit(inline="always")
def _prefetch_tile(buf, isz, o, s1, s0, rows, cols):  # pragma: no cover - exercised through the kernels
    """Prefetch the ``rows x cols`` tile at element ``o`` (strides ``s1``, ``s0``; ``isz`` bytes an
    element) of byte buffer ``buf``: its whole span when that is dense, else row by row or column
    by column along a unit stride, else nothing.

    Row by row, each row's last byte gets a hint of its own: a row that does not start on a line
    boundary ends in one line more than its length in lines (the golden of FRACTAL_NZ data: rows
    of 16 float32 = 64 bytes, ``N`` elements apart, ``N`` seldom a multiple of 16 -- without it
    every such row's second line was a miss). Only here: a dense span's last line is hinted by
    its neighbour chunk's first, and the side passes (dense spans) keep their loop as it was."""
    span = (rows - 1) * s1 + (cols - 1) * s0 + 1
    if span <= 2 * rows * cols:
        _prefetch_ahead(buf, o * isz, span * isz)
    elif s0 == 1:  # rows apart: each row's last byte hinted too (see the docstring)
        for r in range(rows):
            b = (o + r * s1) * isz
            _prefetch_ahead(buf, b, cols * isz)
            prefetch(buf, min(b + cols * isz, buf.shape[0]) - 1)
    elif s1 == 1 and rows * isz >= 64:
        for c in range(cols):
            _prefetch_ahead(buf, (o + c * s0) * isz, rows * isz)


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
# duplicates: _side_boxes and _pair_boxes walk the same plan boxes; numba compiles each loop nest for its own
# tile work (a shared walker taking a callback would not inline)
def _side_boxes(xb, xcode, dims, sx, ox, xt):  # pragma: no cover - exercised through compare_arrays
    """One side over its own plan: ``(min, max, sum, sum of squares, M2, NaNs, infs, saturated)``
    (the fields of :class:`compare.kernels._abi.SidePass`, which the callers wrap it in; all
    float64, the counts exact).

    ``xb``: the storage buffer as bytes, ``xcode`` its type (``_abi.CODES``); ``xt``: a float64
    scratch tile of :data:`TILE` elements. The extrema are NaN when an element is (numpy's
    min/max), +-inf for an empty plan; ``M2`` is the sum of squared deviations from the mean (0
    for an empty plan).

    The counts are of the elements the plan visits: NaN, +-inf, and ``|v| == 65504`` (the float16
    maximum) for binary16 storage only (``_abi.CODE_F16``; 0 for every other type). They cost
    nothing on ordinary data: each chunk goes through :func:`_acc_side` from the extreme int64
    keys, so it returns the chunk's own extrema (merged here), and only a chunk whose extrema
    reach ``|v| >= t`` -- ``t`` = 65504 for binary16, else inf -- or a NaN (whose key lies beyond
    both infinities') is counted, by :func:`_count_side` / :func:`_count_side32` on the data
    still in L1. Measured on 50M elements (AVX-512): the pass takes the same time as without
    counts on ordinary data, and 1.2x (float32) / 1.4x (float16) when every chunk holds a special
    value; counting in :func:`_acc_side`'s loop instead cost 1.4x / 1.6x on every tensor, and just
    carrying three more numbers through its state 1.05x."""
    isz = ITEMSIZE[xcode]
    f16 = xcode == CODE_F16
    sat = F16_MAX if f16 else np.nan
    t = F16_MAX if f16 else np.inf
    klo = order_key(-t)  # a chunk with a key <= klo or >= khi is counted
    khi = order_key(t)
    lo = order_key(np.inf)
    hi = order_key(-np.inf)
    sm, sq, mean, m2, cnt = 0.0, 0.0, 0.0, 0.0, 0.0
    cn, ci, cs = 0, 0, 0
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
                        xo = _start(ox, sx, b, i0, i1, i2, i3)
                        for j in range(nch):
                            r, c, rows, cols = _chunk(d1, d0, j)
                            xs = xo + r * sx1 + c * sx0
                            m = rows * cols
                            if j + 1 < nch:
                                r2, c2, rows2, cols2 = _chunk(d1, d0, j + 1)
                                _prefetch_tile(xb, isz, xo + r2 * sx1 + c2 * sx0, sx1, sx0, rows2, cols2)
                            s = (_KEY_MAX, _KEY_MIN, sm, sq, mean, m2, cnt)  # the chunk's own extrema
                            direct = xcode <= CODE_F64 and _contiguous(sx1, sx0, rows, cols)
                            if direct:  # read in place
                                s = _side_direct(xb, xcode, xs, m, s)
                            else:
                                _gather_any(xb, xcode, xs, sx1, sx0, rows, cols, xt)
                                s = _acc_side(xt, m, s)
                            clo, chi, sm, sq, mean, m2, cnt = s
                            lo = lo if lo < clo else clo
                            hi = hi if hi > chi else chi
                            if clo <= klo or chi >= khi:  # a NaN, infinity or saturated value: count
                                if direct:
                                    c = _count_direct(xb, xcode, xs, m, sat)
                                else:
                                    c = _count_side(xt, m, sat)
                                cn += c[0]
                                ci += c[1]
                                cs += c[2]
    counts = (float(cn), float(ci), float(cs))
    if sq != sq:  # an element is NaN (v*v >= 0 or +inf otherwise, and their sum never NaN)
        return (np.nan, np.nan, sm, sq, m2) + counts
    return (key_value(lo), key_value(hi), sm, sq, m2) + counts


@jit
def _pair_boxes(xb, xcode, yb, ycode, dims, sx, sy, ox, oy, prm, do_rel, do_kl, do_err, err32, xt, yt):  # pragma: no cover
    """The paired pass over the plan: ``(sxy, sabs, ssq, maxabs, srel, maxrel, A, Su, Sw, efin,
    emis, w1, w5)`` (the fields of :class:`compare.kernels._abi.PairPass`, which the callers wrap
    it in; see :func:`_acc_pair`; ``srel``/``maxrel`` are 0 without ``do_rel`` or ``do_kl``,
    ``A``/``Su``/``Sw`` 0 without ``do_kl``, msprobe's terms ``efin``/``emis``/``w1``/``w5`` 0
    without ``do_err``, see :func:`_acc_err`). Buffers as bytes with their type codes and scratch
    tiles as in :func:`_side_boxes`."""
    xsz = ITEMSIZE[xcode]
    ysz = ITEMSIZE[ycode]
    s = (0.0, 0.0, 0.0, f64_bits(0.0), 0.0, f64_bits(0.0), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
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
                        xo = _start(ox, sx, b, i0, i1, i2, i3)
                        yo = _start(oy, sy, b, i0, i1, i2, i3)
                        for j in range(nch):
                            r, c, rows, cols = _chunk(d1, d0, j)
                            xs = xo + r * sx1 + c * sx0
                            ys = yo + r * sy1 + c * sy0
                            m = rows * cols
                            if j + 1 < nch:
                                r2, c2, rows2, cols2 = _chunk(d1, d0, j + 1)
                                _prefetch_tile(xb, xsz, xo + r2 * sx1 + c2 * sx0, sx1, sx0, rows2, cols2)
                                _prefetch_tile(yb, ysz, yo + r2 * sy1 + c2 * sy0, sy1, sy0, rows2, cols2)
                            elif i3 + 1 < dims[b, 3]:  # the next tile's first chunk
                                r2, c2, rows2, cols2 = _chunk(d1, d0, 0)
                                _prefetch_tile(xb, xsz, xo + sx[b, 3], sx1, sx0, rows2, cols2)
                                _prefetch_tile(yb, ysz, yo + sy[b, 3], sy1, sy0, rows2, cols2)
                            _gather_any(xb, xcode, xs, sx1, sx0, rows, cols, xt)
                            if ycode <= CODE_F64 and _contiguous(sy1, sy0, rows, cols):  # read in place
                                s = _pair_direct(xt, yb, ycode, ys, m, prm, do_rel, do_kl, do_err, err32, s)
                            else:
                                _gather_any(yb, ycode, ys, sy1, sy0, rows, cols, yt)
                                s = _acc_pair(xt, yt, m, prm, do_rel, do_kl, do_err, err32, s)
    sxy, sabs, ssq, mab, srel, mrb, a, su, sw, efin, emis, w1, w5 = s
    return (sxy, sabs, ssq, bits_f64(mab), srel, bits_f64(mrb), a, su, sw, efin, emis, w1, w5)

