"""Narrow device data types: the 8-, 6-, 4- and 2-bit codes of the adump ``ProtoDataType`` table.

:mod:`convert.codecs.dtypes` maps each data-type code to a :class:`NarrowType`; this module holds the
codec -- bit packing, the two storage layouts, the value tables of the types ml_dtypes lacks -- and
imports nothing from the rest of the package.

Element widths (the public ``ge::GetSizeByDataType`` table): 8 bits for HiFloat8 and the fp8 types
(e5m2, e4m3fn, e8m0); 6 bits for float6_e3m2 / float6_e2m3; 4 bits for int4, float4_e2m1,
float4_e1m2 and HiFloat4; 2 bits for int2 / uint2.

Packed storage (the device layout; :func:`pack_codes` / :func:`unpack_codes`). Elements are packed
little end first: element ``i`` is bits ``bits*i .. bits*i + bits-1`` of an LSB-first bit stream
whose bit ``b`` is bit ``b % 8`` of byte ``b // 8``. So for 4 bits element ``2k`` is the low nibble
(bits 0-3) of byte ``k`` and element ``2k+1`` the high nibble; for 2 bits element ``4k+j`` is bits
``2j, 2j+1`` of byte ``k``; for 6 bits four elements fill three bytes (element 1 = bits 6-7 of
byte 0 then bits 0-3 of byte 1). A tensor of ``n`` elements occupies ``ceil(n*bits/8)`` bytes; the
unused high bits of the last byte are ignored on reading and written as 0.

* The 4-bit nibble order is confirmed by public Ascend source: ``aclnnConvertWeightToINT4Pack``
  (hicann/ops-nn ``matmul/convert_weight_to_int4_pack/op_host/op_api/aclnn_convert_weight_to_int4_pack.cpp``,
  behind torch_npu's ``npu_convert_weight_to_int4pack``) packs two int4 or float4_e2m1 values a
  byte, the first in bits 0-3: element 0 in the low nibble of byte 0.
* The 2-bit and 6-bit orders are an assumption (the same little-end-first rule); no public
  source states them.

Unpacked storage: one element a byte, its code in the low ``bits`` bits. The high bits are ignored
on reading (they may be 0 or a sign extension, as an int8 holding an int4 value has) and written
as 0. Which layout a tensor has is told by its byte count (:func:`layout`): exactly one byte per
element, when that differs from the packed size, is unpacked; anything else is packed (extra
bytes are padding, as for every dump tensor). When the two sizes coincide (1 element of any
width; 2 or 3 elements of 6 bits) the bytes are read as packed.

Values. Codes of the types ml_dtypes has are decoded by viewing the code bytes as that type
(ml_dtypes keeps a sub-byte value in the low bits of one byte): float8_e5m2, float8_e4m3fn,
float6_e3m2fn, float6_e2m3fn, float4_e2m1fn, int4, int2, uint2. The others go through a float32
table built here from the device's definition (every value is exact in float32):

* **float8_e8m0** (the MX block scale): CANN's ``op::Float8E8M0`` (hicann/opbase
  ``src/nnopbase/common/utils/float8_e8m0.cpp``) decodes code ``0x00`` as **0.0**, ``0xFF`` as NaN
  and every other code ``c`` as ``2**(c - 127)`` (the float32 whose exponent field is ``c``:
  ``0x01`` is ``2**-126``, ``0xFE`` ``2**127``). ml_dtypes' ``float8_e8m0fnu`` (the OCP MX reading)
  has no zero and gives ``2**-127`` for ``0x00``; the device's reading is the one its tensors
  mean, so the table follows the device. Arrays of ``float8_e8m0fnu`` are still written as their
  bytes (the two agree on every code but 0x00's value).

* **HiFloat8** (Huawei's HiF8, arXiv:2409.16626). Bit 7 is the sign ``S``; bits 6-0 (the body)
  hold, from the top, a prefix-coded *dot* field giving the exponent width ``D``, the exponent,
  then the mantissa (``m`` bits, value ``M``):

  =======================  ===  =============  =============
  dot (top bits of body)   D    exponent bits  mantissa bits
  =======================  ===  =============  =============
  ``11``                   4    4              1
  ``10``                   3    3              2
  ``01``                   2    2              3
  ``001``                  1    1              3
  ``0001``                 0    0              3
  ``0000``                 --   denormal       3
  =======================  ===  =============  =============

  The exponent is sign-magnitude with an implicit leading 1 on the magnitude: its first bit is the
  sign, the other ``D-1`` bits follow a hidden 1, so ``|e|`` is ``2**(D-1) .. 2**D - 1`` (D = 0
  gives e = 0). Value ``(-1)**S * 2**e * (1 + M / 2**m)``. Denormals (dot ``0000``, mantissa
  ``M`` = 1..7): ``(-1)**S * 2**(M - 23)``. ``0x00`` is zero, ``0x80`` NaN (there is no -0),
  ``0x6F`` / ``0xEF`` (D = 4, e = +15, M = 1) are +Inf / -Inf, so the largest finite magnitude is
  ``0x6E`` = 2**15 (D = 4, e = +15, M = 0). Finite range 2**-22 .. 2**15. The same table as CANN's
  ``op::HiFloat8`` (hicann/opbase ``include/nnopbase/opdev/hifloat8.h``: NaN ``0x80``, Inf
  ``0x6F``, exponents -22 .. 15) and as the PTO ISA's ``hif8.asl`` (PTO-ISA/pto-spec).
* **float4_e1m2**: ``S E MM``, exponent bias 1, no Inf or NaN: ``E = 0`` gives ``(-1)**S * M/4``
  (so ``0x8`` is -0), ``E = 1`` gives ``(-1)**S * (1 + M/4)``; magnitudes 0 .. 1.75.
* **HiFloat4**: CANN's ``op::HiFloat4`` (opbase ``include/nnopbase/opdev/hifloat4.h``) defines it as
  1 sign, 1 exponent, 2 mantissa bits, bias 1, no NaN or Inf, denormal ``M/4`` at ``E = 0`` -- the
  same 16 values as float4_e1m2, and decoded with the same table. (No other public definition of
  the element values was found; its block scales are dump type 42, not decoded: see
  :mod:`convert.codecs.dtypes`.) Confirmed against ``src/nnopbase/common/utils/hifloat4.cpp``.

Why hand-written: numpy packs single bits only (``packbits``) and ml_dtypes stores one sub-byte
element per byte, has no HiFloat8 / e1m2 type and reads e8m0's 0x00 otherwise than the device, so
unpacking nibble, crumb and 6-bit streams and the three value tables are written here (the 6-bit
path uses numpy's little-order ``unpackbits`` / ``packbits``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import Enum

import numpy as np


class Values(Enum):
    """How the codes of a narrow type become numbers."""

    ML_DTYPES = "ml_dtypes"  #: viewed as the ml_dtypes type of :attr:`NarrowType.ml_name`
    HIFLOAT8 = "hifloat8"  #: the HiFloat8 table (float32)
    E1M2 = "e1m2"  #: the S1 E1 M2 bias-1 table (float32): float4_e1m2 and HiFloat4
    E8M0 = "e8m0"  #: the device's e8m0 table (float32): 0x00 is 0.0, 0xFF NaN, else 2**(c - 127)


class Layout(Enum):
    """Storage of a narrow tensor's elements (see the module docstring)."""

    PACKED = "packed"
    UNPACKED = "unpacked"


@dataclass(frozen=True)
class NarrowType:
    """A data type of 8 or fewer bits an element: its report name, width and value decoder.

    ``ml_name`` is the ml_dtypes type with the same bit patterns (empty when ml_dtypes has none):
    an array of it is written as its codes, and when ``values`` is ML_DTYPES it decodes the codes.
    """

    name: str
    bits: int
    values: Values
    ml_name: str = ""

    @property
    def mask(self) -> int:
        """The bits of a code: ``2**bits - 1``."""
        return (1 << self.bits) - 1


def packed_nbytes(bits: int, count: int) -> int:
    """Bytes ``count`` packed elements of ``bits`` bits occupy: ``ceil(count * bits / 8)``."""
    return (count * bits + 7) // 8


def layout(narrow: NarrowType, count: int, available: int) -> Layout:
    """The layout of ``count`` elements held in ``available`` bytes: UNPACKED when ``available ==
    count`` and that differs from the packed size, else PACKED (module docstring)."""
    if available == count and count != packed_nbytes(narrow.bits, count):
        return Layout.UNPACKED
    return Layout.PACKED


def stored_nbytes(narrow: NarrowType, count: int, available: int) -> int:
    """Bytes the ``count`` elements use out of ``available``: ``count`` unpacked, else the packed size."""
    if layout(narrow, count, available) is Layout.UNPACKED:
        return count
    return packed_nbytes(narrow.bits, count)


def unpack_codes(raw: np.ndarray, bits: int, count: int) -> np.ndarray:
    """The first ``count`` codes of the packed uint8 stream ``raw`` (a fresh uint8 array, one code a
    byte). ``raw`` must hold at least ``packed_nbytes(bits, count)`` bytes; 8-bit codes are ``raw``
    itself (a view)."""
    nbytes = packed_nbytes(bits, count)
    raw = raw[:nbytes]
    if bits == 8:
        return raw
    if bits == 4:
        out = np.empty((nbytes, 2), dtype=np.uint8)
        np.bitwise_and(raw, 0x0F, out=out[:, 0])
        np.right_shift(raw, 4, out=out[:, 1])
        return out.reshape(-1)[:count]
    if bits == 2:
        out = np.empty((nbytes, 4), dtype=np.uint8)
        for j in range(4):
            np.bitwise_and(np.right_shift(raw, 2 * j), 0x03, out=out[:, j])
        return out.reshape(-1)[:count]
    stream = np.unpackbits(raw, bitorder="little")[: count * bits].reshape(count, bits)
    return np.packbits(stream, axis=1, bitorder="little").reshape(count)


def pack_codes(codes: np.ndarray, bits: int) -> np.ndarray:
    """Pack codes (uint8, each ``< 2**bits``) into the little-end-first stream; inverse of
    :func:`unpack_codes`. The unused high bits of the last byte are 0."""
    codes = np.ascontiguousarray(codes, dtype=np.uint8).reshape(-1)
    if bits == 8:
        return codes
    per_byte = 8 // bits if 8 % bits == 0 else 0
    if per_byte:
        padded = np.zeros(packed_nbytes(bits, codes.size) * per_byte, dtype=np.uint8)
        padded[: codes.size] = codes
        lanes = padded.reshape(-1, per_byte)
        out = np.zeros(lanes.shape[0], dtype=np.uint8)
        for j in range(per_byte):
            out |= np.left_shift(lanes[:, j], bits * j).astype(np.uint8)
        return out
    stream = np.unpackbits(codes[:, None], axis=1, bitorder="little")[:, :bits].reshape(-1)
    return np.packbits(stream, bitorder="little")


@functools.cache
def _ml_dtype(name: str) -> np.dtype:
    import ml_dtypes  # here: ml_dtypes costs ~5 ms at start-up; most dumps hold no narrow tensor

    return np.dtype(getattr(ml_dtypes, name))


def e8m0_value(code: int) -> float:
    """The device's value of one e8m0 code: 0.0 for ``0x00``, NaN for ``0xFF``, else ``2**(code - 127)``."""
    if code == 0x00:
        return 0.0
    if code == 0xFF:
        return float("nan")
    return 2.0 ** (code - 127)


def hifloat8_value(code: int) -> float:
    """The value of one HiFloat8 byte, from the definition in the module docstring."""
    negative = bool(code & 0x80)
    body = code & 0x7F
    if body == 0:
        return float("nan") if negative else 0.0
    sign = -1.0 if negative else 1.0
    if body >> 5 == 0b11:
        width, dot_bits = 4, 2
    elif body >> 5 == 0b10:
        width, dot_bits = 3, 2
    elif body >> 5 == 0b01:
        width, dot_bits = 2, 2
    elif body >> 4 == 0b001:
        width, dot_bits = 1, 3
    elif body >> 3 == 0b0001:
        width, dot_bits = 0, 4
    else:  # dot 0000: denormal, mantissa 1..7
        return sign * 2.0 ** ((body & 0x07) - 23)
    mantissa_bits = 7 - dot_bits - width
    mantissa = body & ((1 << mantissa_bits) - 1)
    field = (body >> mantissa_bits) & ((1 << width) - 1)
    exponent = 0
    if width:
        magnitude = (1 << (width - 1)) | (field & ((1 << (width - 1)) - 1))
        exponent = -magnitude if field >> (width - 1) else magnitude
    if width == 4 and exponent == 15 and mantissa == 1:
        return sign * float("inf")
    return sign * 2.0**exponent * (1.0 + mantissa / (1 << mantissa_bits))


def e1m2_value(code: int) -> float:
    """The value of one S1 E1 M2 (bias 1) code: ``±M/4`` at ``E = 0``, ``±(1 + M/4)`` at ``E = 1``."""
    sign = -1.0 if code & 0x8 else 1.0
    mantissa = code & 0x3
    return sign * (mantissa / 4 if not code & 0x4 else 1.0 + mantissa / 4)


@functools.cache
def value_table(values: Values) -> np.ndarray:
    """The float32 value of every code of a table type (256 entries for HiFloat8 and e8m0, 16 for e1m2)."""
    if values is Values.HIFLOAT8:
        table = [hifloat8_value(c) for c in range(256)]
    elif values is Values.E8M0:
        table = [e8m0_value(c) for c in range(256)]
    elif values is Values.E1M2:
        table = [e1m2_value(c) for c in range(16)]
    else:
        raise ValueError(f"{values.name} types have no value table")
    out = np.array(table, dtype=np.float32)
    out.setflags(write=False)
    return out


def decoded_dtype(narrow: NarrowType) -> np.dtype:
    """dtype of a decoded tensor: the ml_dtypes type, or float32 for the table types."""
    if narrow.values is Values.ML_DTYPES:
        return _ml_dtype(narrow.ml_name)
    return np.dtype(np.float32)


def same_bits_dtype(narrow: NarrowType) -> np.dtype | None:
    """The ml_dtypes type whose arrays hold ``narrow``'s codes as they are (written byte for byte),
    or None when ml_dtypes has no such type (HiFloat8, float4_e1m2, HiFloat4)."""
    return _ml_dtype(narrow.ml_name) if narrow.ml_name else None


def decode_codes(raw: np.ndarray, narrow: NarrowType, count: int, storage: Layout) -> np.ndarray:
    """The ``count`` elements of ``raw`` (uint8, holding at least the bytes of ``storage``) as a
    flat array of :func:`decoded_dtype`. 8-bit ml_dtypes types are a view of ``raw``."""
    if storage is Layout.UNPACKED and narrow.bits < 8:
        codes = np.bitwise_and(raw[:count], narrow.mask)
    else:
        codes = unpack_codes(raw, narrow.bits, count)
    if narrow.values is Values.ML_DTYPES:
        return codes.view(_ml_dtype(narrow.ml_name))
    return value_table(narrow.values)[codes]


def encode_codes(array: np.ndarray, narrow: NarrowType) -> np.ndarray:
    """The codes (uint8, one an element, flat) of ``array`` as type ``narrow``.

    * A uint8 array holds the codes (bit patterns) themselves; each must be ``< 2**bits``.
    * An array of the type's same-bits ml_dtypes type (:func:`same_bits_dtype`) holds its codes too.
    * Otherwise, for an ml_dtypes type: the array converted to it (ml_dtypes rounds to nearest even).
    * Otherwise, for a table type: each value must be one of the type's values (looked up exactly;
      NaN takes the type's NaN code, -0.0 the +0 code where the type has no -0); anything else is a
      ValueError naming the first such value -- no rounding rule is guessed.
    """
    array = np.asarray(array)
    flat = array.reshape(-1)
    if array.dtype == np.uint8:
        if flat.size and int(flat.max()) > narrow.mask:
            bad = int(flat[np.argmax(flat > narrow.mask)])
            raise ValueError(f"{narrow.name} codes are {narrow.bits}-bit: {bad} does not fit")
        return np.ascontiguousarray(flat)
    same_bits = same_bits_dtype(narrow)
    if same_bits is not None and array.dtype == same_bits:
        return np.bitwise_and(np.ascontiguousarray(flat).view(np.uint8), narrow.mask)
    if narrow.values is Values.ML_DTYPES:
        converted = np.ascontiguousarray(flat.astype(_ml_dtype(narrow.ml_name)))
        return np.bitwise_and(converted.view(np.uint8), narrow.mask)
    return _codes_of_values(flat.astype(np.float64), narrow)


def _codes_of_values(values: np.ndarray, narrow: NarrowType) -> np.ndarray:
    table = value_table(narrow.values).astype(np.float64)
    by_bits: dict[int, int] = {}
    nan_code = None
    for code in range(table.size):
        value = table[code]
        if np.isnan(value):
            nan_code = code if nan_code is None else nan_code
            continue
        by_bits.setdefault(int(np.array(value).view(np.uint64)), code)
    positive_zero = by_bits[0]
    unique, inverse = np.unique(values.view(np.uint64), return_inverse=True)
    mapped = np.empty(unique.size, dtype=np.uint8)
    for k, key in enumerate(unique.tolist()):
        value = float(np.array(key, dtype=np.uint64).view(np.float64))
        if np.isnan(value) and nan_code is not None:
            mapped[k] = nan_code
        elif key in by_bits:
            mapped[k] = by_bits[key]
        elif value == 0.0:
            mapped[k] = positive_zero
        else:
            raise ValueError(f"{value!r} is not a {narrow.name} value (only exact values are encoded)")
    return mapped[inverse.reshape(-1)]


__all__ = ["Layout", "NarrowType", "Values", "decode_codes", "decoded_dtype", "e1m2_value", "e8m0_value",
           "encode_codes", "hifloat8_value", "layout", "pack_codes", "packed_nbytes", "same_bits_dtype",
           "stored_nbytes", "unpack_codes", "value_table"]
