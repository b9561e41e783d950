"""The kernels' calling convention, shared by the numba kernels and the native loader.

Numba-free on purpose: :mod:`compare.kernels` and :mod:`compare.kernels.native` read these
without importing numba. The kernels themselves are in :mod:`compare.kernels.fused`; their raw
float64 results are read through :class:`SidePass` / :class:`PairPass` (see
:mod:`compare.kernels.passes`).
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import numpy as np

#: float64 machine epsilon: the reference's zero threshold (cosine norms, relative-error mask, RED,
#: KL snap-to-zero).
EPS64: float = 2.220446049250313e-16
#: float32 machine epsilon (2**-23): the floor of the min-max-normalised KL inputs.
EPS32: float = 1.1920928955078125e-07
#: The largest finite float16 (binary16) value: an element of float16 storage with ``|v|`` equal to it
#: is counted as saturated (:attr:`SidePass.saturated`).
F16_MAX: float = 65504.0

#: Dims of a box (the iteration plan); the last two form the tile.
NDIM = 6
#: Elements per chunk (and per tile buffer: 2 x 16 KiB of float64, inside L1).
TILE = 2048

#: Storage type codes: the walkers take every storage buffer as bytes plus one of these.
#: Codes up to CODE_F64 are floats (read in place even by the contiguous fast paths); the integer
#: and bool codes are converted exactly to float64 as they are gathered into the kernel's tile.
CODE_F16 = 0  # IEEE binary16 bits (uint16 storage)
CODE_BF16 = 1  # bfloat16 bits (int16 storage)
CODE_F32 = 2
CODE_F64 = 3
CODE_I8 = 4
CODE_U8 = 5
CODE_I16 = 6  # int16 integers (carried as the record dtype I16_CARRIER: int16 itself means bfloat16 bits)
CODE_U16 = 7  # uint16 integers (carried as U16_CARRIER: uint16 itself means binary16 bits)
CODE_I32 = 8
CODE_U32 = 9
CODE_I64 = 10
CODE_U64 = 11
CODE_BOOL = 12  # numpy bool bytes: any non-zero byte is True (1.0), as numpy's casts read it
CODE_LUT8 = 13  # a 1-byte type (ml_dtypes float8_*, float4/6, int4/uint4): decoded by a 256-entry table

#: Length of a kernel scratch buffer: the tile, then the 256-entry float64 decode table of a
#: CODE_LUT8 buffer (filled by the caller; unused by other codes).
SCRATCH = TILE + 256

#: The dtypes that carry int16 / uint16 *integers* in a storage buffer (one-field records, so that
#: they are never taken for the bfloat16 / binary16 bit carriers int16 / uint16).
I16_CARRIER = np.dtype([("int16", np.int16)])
U16_CARRIER = np.dtype([("uint16", np.uint16)])

#: storage dtype -> code
CODES: dict[np.dtype, int] = {
    np.dtype(np.uint16): CODE_F16,
    np.dtype(np.int16): CODE_BF16,
    np.dtype(np.float32): CODE_F32,
    np.dtype(np.float64): CODE_F64,
    np.dtype(np.int8): CODE_I8,
    np.dtype(np.uint8): CODE_U8,
    I16_CARRIER: CODE_I16,
    U16_CARRIER: CODE_U16,
    np.dtype(np.int32): CODE_I32,
    np.dtype(np.uint32): CODE_U32,
    np.dtype(np.int64): CODE_I64,
    np.dtype(np.uint64): CODE_U64,
    np.dtype(np.bool_): CODE_BOOL,
}
#: Bytes per element, by code.
ITEMSIZE = np.array([2, 2, 4, 8, 1, 1, 2, 2, 4, 4, 8, 8, 1, 1], dtype=np.int64)


class SidePass(NamedTuple):
    """The result of a one-side pass (:func:`fused._side_boxes`), fields in the order of the
    native entry point's ``out[SIDE_OUT]`` and of the kernel's returned tuple."""

    min: float  # NaN-propagating (a NaN on the side gives NaN)
    max: float
    sum: float  # sum v
    ssq: float  # sum v^2
    m2: float  # sum (v - mean)^2, combined tile by tile after Chan et al.
    #: The counts below are float64 like every field of the native ``out[]`` array, and exact (whole
    #: numbers, below 2**53): elements of the side's plan that are ...
    nan: float  # ... NaN (either sign)
    inf: float  # ... +inf or -inf
    saturated: float  # ... +-65504 (F16_MAX) in float16 storage (CODE_F16); 0 for every other storage type


class PairPass(NamedTuple):
    """The result of the paired pass (:func:`fused._pair_boxes`), fields in the order of the
    native entry point's ``out[PAIR_OUT]`` and of the kernel's returned tuple."""

    sxy: float  # sum x*y
    sabs: float  # sum |x-y|
    ssq: float  # sum (x-y)^2
    maxabs: float  # max |x-y|            (0 for n == 0)
    srel: float  # sum r_i               (r_i = |x_i/y_i - 1| if |y_i| > EPS64 else 0)
    maxrel: float  # max r_i             (0 for n == 0)
    a: float  # sum u*log(u/w) - u + w  (KL, u = p*k, w = q; see fused._acc_pair)
    su: float  # sum u
    sw: float  # sum w
    #: msprobe's terms (0 unless asked, see fused._acc_err), with x', y' the sides after NaN/inf
    #: found at the same position on both sides were set to 0:
    efin: float  # sum (x' - y')^2
    emis: float  # positions where only one side is NaN, or only one side is +-inf (exact count)
    w1: float  # elements whose relative error is < 0.001 (exact count)
    w5: float  # elements whose relative error is < 0.005 (exact count)


#: Bits of the paired entry point's ``flags``: the optional parts of the paired pass.
FLAG_REL = 1  # the relative errors (srel, maxrel)
FLAG_KL = 2  # the KL terms (a, su, sw)
FLAG_ERR = 4  # msprobe's terms (efin, emis, w1, w5)
FLAG_ERR32 = 8  # ... with the relative errors in float32 (see ErrMode)


class ErrMode(enum.IntEnum):
    """Whether and in which precision the paired pass accumulates msprobe's terms (EucDist and
    the error ratios, :func:`compare.kernels.fused._acc_err`). msprobe computes the relative
    errors in ``numpy.result_type(x, y, float32)``: float32 when both sides are float16 /
    bfloat16 / float32 (msprobe reads bfloat16 and float8 as float32), float64 otherwise (float64,
    integer and bool data are read as float64). The value is the mode's bits of the paired entry
    point's ``flags`` (an int enum: ``FLAG_REL | mode`` is a plain int)."""

    OFF = 0
    F64 = FLAG_ERR
    F32 = FLAG_ERR | FLAG_ERR32


#: Length of a one-side pass's result (the native entry point's ``out`` array).
SIDE_OUT = len(SidePass._fields)
#: Length of the paired pass's result (the native entry point's ``out`` array).
PAIR_OUT = len(PairPass._fields)
