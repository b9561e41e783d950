"""Ascend dump data-type and format codes, and decoding of raw tensor bytes.

This module imports nothing from :mod:`compare`; errors are plain ``ValueError`` subclasses that
the dump reader wraps into :class:`compare.errors.DumpFormatError` with the file and offset.

Data types (``OutputDataType`` of ``dump_data.proto``) and the dtypes they decode to:

====================  =====  ============================  ========================================
code name             code   decoded dtype                 :func:`dtype_name`
====================  =====  ============================  ========================================
DT_UNDEFINED          0      int8                          ``int8`` (as the reference tool reads it)
DT_FLOAT              1      float32                       ``float32``
DT_FLOAT16            2      float16                       ``float16``
DT_INT8..DT_UINT64    3-10   int8..uint64                  ``int8`` ... ``uint64``
DT_BOOL               11     bool                          ``bool``
DT_DOUBLE             12     float64                       ``float64``
DT_COMPLEX64/128      16/17  complex64 / complex128        ``complex64`` / ``complex128``
DT_RESOURCE           23     int64                         ``int64``
DT_BF16               27     ``ml_dtypes.bfloat16``        ``bfloat16``
DT_INT4               28     ``ml_dtypes.int4``            ``int4`` (4 bits)
DT_UINT1              29     uint8, 8 bits per byte        ``uint1``
DT_INT2 / DT_UINT2    30/31  ``ml_dtypes.int2`` / uint2    ``int2`` / ``uint2`` (2 bits)
DT_COMPLEX32          32     complex64 (from 2 x fp16)     ``complex32``
DT_HIFLOAT8           33     float32 (a 256-entry table)   ``hifloat8``
DT_FLOAT8_E5M2        34     ``ml_dtypes.float8_e5m2``     ``float8_e5m2``
DT_FLOAT8_E4M3FN      35     ``ml_dtypes.float8_e4m3fn``   ``float8_e4m3fn``
DT_FLOAT8_E8M0        36     float32 (the device's table)  ``float8_e8m0`` (0x00 is 0.0)
DT_FLOAT6_E3M2/E2M3   37/38  ``ml_dtypes.float6_*fn``      ``float6_e3m2`` / ``float6_e2m3`` (6 bits)
DT_FLOAT4_E2M1        39     ``ml_dtypes.float4_e2m1fn``   ``float4_e2m1`` (4 bits)
DT_FLOAT4_E1M2        40     float32 (a 16-entry table)    ``float4_e1m2`` (4 bits)
DT_HIFLOAT4           41     float32 (a 16-entry table)    ``hifloat4`` (4 bits)
DT_HIFLOAT4_SCALE     42     not decoded (see below)       ``hifloat4_scale``
====================  =====  ============================  ========================================

The 8/6/4/2-bit types are :mod:`convert.codecs.narrow` (bit packing, packed or one-a-byte storage told by
the byte count, the HiFloat8 / e1m2 / e8m0 tables); COMPLEX32 is a little-endian float16 pair (real,
imaginary), widened exactly to complex64. Every other code (``DT_STRING``, ``DT_QINT8``,
``DT_DUAL``, ``DT_VARIANT``, codes not in the table ...) cannot be decoded: :func:`numpy_dtype`
raises :class:`UnsupportedDataType` and :func:`dtype_name` returns the enum name (``DT_STRING``)
or ``DT_<code>`` for an unknown integer.

DT_HIFLOAT4_SCALE (42; ``hifloat4_scale`` in the dump parser of hicann/oam-tools, which names it
and saves its bytes undecoded) is named but not decoded, and :func:`numpy_dtype` says why
(:data:`HIFLOAT4_SCALE`, an :class:`UndecodedCode`): its 4-byte elements are HiFloat4
block-scale words, not numbers. The one public definition of such a word (the PTO ISA's
``hif4-scale.asl``, PTO-ISA/pto-spec) packs an E6M2 base scale (bits 7-0) and 8 + 16 one-bit
exponent increments (bits 15-8, 31-16) that give 64 HiFloat4 lanes their scales; no public source
ties dump type 42 to that word, nor says which elements of which tensor a dumped word scales, so
a value per element cannot be made honestly (docs/dtypes.md).

All multi-byte values are little-endian (the byte order of every Ascend host).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from enum import IntEnum
from typing import Union

import numpy as np

from .narrow import NarrowType, Values, decode_codes, decoded_dtype, layout, packed_nbytes, same_bits_dtype
from .narrow import stored_nbytes as _narrow_nbytes

Buffer = Union[bytes, bytearray, memoryview, np.ndarray]


class DataType(IntEnum):
    """``OutputDataType`` codes of ``dump_data.proto``.

    CANN 8.1's proto stops at 29 (UINT1) and has no 28; newer dump writers (the adump
    ``ProtoDataType`` table) add 26 VARIANT, 28 INT4, 30-32 INT2/UINT2/COMPLEX32 and 33-41 for the
    8/6/4-bit float types. These codes differ from the graph (``ge::DataType``) codes that nano
    dumps carry; :mod:`convert.codecs.nano` maps those.
    """

    DT_UNDEFINED = 0
    DT_FLOAT = 1
    DT_FLOAT16 = 2
    DT_INT8 = 3
    DT_UINT8 = 4
    DT_INT16 = 5
    DT_UINT16 = 6
    DT_INT32 = 7
    DT_INT64 = 8
    DT_UINT32 = 9
    DT_UINT64 = 10
    DT_BOOL = 11
    DT_DOUBLE = 12
    DT_STRING = 13
    DT_DUAL_SUB_INT8 = 14
    DT_DUAL_SUB_UINT8 = 15
    DT_COMPLEX64 = 16
    DT_COMPLEX128 = 17
    DT_QINT8 = 18
    DT_QINT16 = 19
    DT_QINT32 = 20
    DT_QUINT8 = 21
    DT_QUINT16 = 22
    DT_RESOURCE = 23
    DT_STRING_REF = 24
    DT_DUAL = 25
    DT_VARIANT = 26
    DT_BF16 = 27
    DT_INT4 = 28
    DT_UINT1 = 29
    DT_INT2 = 30
    DT_UINT2 = 31
    DT_COMPLEX32 = 32
    DT_HIFLOAT8 = 33
    DT_FLOAT8_E5M2 = 34
    DT_FLOAT8_E4M3FN = 35
    DT_FLOAT8_E8M0 = 36
    DT_FLOAT6_E3M2 = 37
    DT_FLOAT6_E2M3 = 38
    DT_FLOAT4_E2M1 = 39
    DT_FLOAT4_E1M2 = 40
    DT_HIFLOAT4 = 41


@dataclass(frozen=True)
class UndecodedCode:
    """A data-type code newer dump writers use that vcompare names but does not decode on purpose.

    Kept out of :class:`DataType`, whose every member has a graph twin in
    :mod:`convert.codecs.nano` (no public graph code is known for these). ``label`` is the
    proto-style name for messages, ``name`` the DataType column, ``reason`` why it is not decoded.
    """

    code: int
    label: str
    name: str
    reason: str


#: DT_HIFLOAT4_SCALE (see the module docstring).
HIFLOAT4_SCALE = UndecodedCode(
    42, "DT_HIFLOAT4_SCALE", "hifloat4_scale",
    "dump type 42 (hifloat4_scale) is a HiFloat4 block-scale word (4 bytes: an E6M2 "
    "base scale and exponent-increment bits shared by 64 HiFloat4 lanes), not one number an element; "
    "the dump does not say which elements of which tensor a word scales")

#: The named, not decoded codes, by code.
_NOT_DECODED: dict[int, UndecodedCode] = {HIFLOAT4_SCALE.code: HIFLOAT4_SCALE}


def undecoded_reason(code: int) -> str:
    """Why a named data-type code is not decoded on purpose (:class:`UndecodedCode`), ``""`` for
    any other code."""
    undecoded = _NOT_DECODED.get(int(code))
    return undecoded.reason if undecoded is not None else ""


class Format(IntEnum):
    """``OutputFormat`` codes, named as layouts are written in logs, file names and plugins.

    The names are the proto names without ``FORMAT_``, except 15 (``DECONV_SP_STRIDE8_TRANS``)
    and 20-24 (``LOOKUP_*``). The reference tool has no string for 28 and 35; vcompare is
    lenient and calls them ``FRACTAL_ZZ`` and ``NC``. The long proto spellings of 15 and 20-24
    are accepted as aliases by :func:`format_code`.
    """

    NCHW = 0
    NHWC = 1
    ND = 2
    NC1HWC0 = 3
    FRACTAL_Z = 4
    NC1C0HWPAD = 5
    NHWC1C0 = 6
    FSR_NCHW = 7
    FRACTAL_DECONV = 8
    C1HWNC0 = 9
    FRACTAL_DECONV_TRANSPOSE = 10
    FRACTAL_DECONV_SP_STRIDE_TRANS = 11
    NC1HWC0_C04 = 12
    FRACTAL_Z_C04 = 13
    CHWN = 14
    DECONV_SP_STRIDE8_TRANS = 15
    HWCN = 16
    NC1KHKWHWC0 = 17
    BN_WEIGHT = 18
    FILTER_HWCK = 19
    LOOKUP_LOOKUPS = 20
    LOOKUP_KEYS = 21
    LOOKUP_VALUE = 22
    LOOKUP_OUTPUT = 23
    LOOKUP_HITS = 24
    C1HWNCoC0 = 25
    MD = 26
    NDHWC = 27
    FRACTAL_ZZ = 28
    FRACTAL_NZ = 29
    NCDHW = 30
    DHWCN = 31
    NDC1HWC0 = 32
    FRACTAL_Z_3D = 33
    CN = 34
    NC = 35
    DHWNC = 36
    FRACTAL_Z_3D_TRANSPOSE = 37
    FRACTAL_ZN_LSTM = 38
    FRACTAL_Z_G = 39
    RESERVED = 40
    ALL = 41
    NULL = 42
    ND_RNN_BIAS = 43
    FRACTAL_ZN_RNN = 44
    YUV = 45
    YUV_A = 46
    MAX = 255
    # Aliases: the proto spellings (without FORMAT_) where the log name differs.
    FRACTAL_DECONV_SP_STRIDE8_TRANS = 15
    HASHTABLE_LOOKUP_LOOKUPS = 20
    HASHTABLE_LOOKUP_KEYS = 21
    HASHTABLE_LOOKUP_VALUE = 22
    HASHTABLE_LOOKUP_OUTPUT = 23
    HASHTABLE_LOOKUP_HITS = 24

    @staticmethod
    def proto_suffix(member: "Format") -> str:
        """The proto enum name of ``member`` without its ``FORMAT_`` prefix."""
        return _PROTO_SPELLING.get(int(member), member.name)


_PROTO_SPELLING = {
    15: "FRACTAL_DECONV_SP_STRIDE8_TRANS",
    20: "HASHTABLE_LOOKUP_LOOKUPS",
    21: "HASHTABLE_LOOKUP_KEYS",
    22: "HASHTABLE_LOOKUP_VALUE",
    23: "HASHTABLE_LOOKUP_OUTPUT",
    24: "HASHTABLE_LOOKUP_HITS",
}


@functools.cache
def _bfloat16() -> np.dtype:
    """``ml_dtypes.bfloat16``, imported on first use (most dumps hold no bf16 tensor)."""
    import ml_dtypes  # here: ml_dtypes costs ~5 ms at start-up; most dumps hold no bf16 tensor

    return np.dtype(ml_dtypes.bfloat16)


#: Storage dtype of every decodable data type but DT_BF16 (:func:`_bfloat16`).
_STORAGE: dict[int, np.dtype] = {
    DataType.DT_UNDEFINED: np.dtype(np.int8),
    DataType.DT_FLOAT: np.dtype("<f4"),
    DataType.DT_FLOAT16: np.dtype("<f2"),
    DataType.DT_INT8: np.dtype(np.int8),
    DataType.DT_UINT8: np.dtype(np.uint8),
    DataType.DT_INT16: np.dtype("<i2"),
    DataType.DT_UINT16: np.dtype("<u2"),
    DataType.DT_INT32: np.dtype("<i4"),
    DataType.DT_INT64: np.dtype("<i8"),
    DataType.DT_UINT32: np.dtype("<u4"),
    DataType.DT_UINT64: np.dtype("<u8"),
    DataType.DT_BOOL: np.dtype(np.bool_),
    DataType.DT_DOUBLE: np.dtype("<f8"),
    DataType.DT_COMPLEX64: np.dtype("<c8"),
    DataType.DT_COMPLEX128: np.dtype("<c16"),
    DataType.DT_RESOURCE: np.dtype("<i8"),
    DataType.DT_UINT1: np.dtype(np.uint8),
}
#: The types of 8 bits or fewer an element (:mod:`convert.codecs.narrow`), by code.
_NARROW: dict[int, NarrowType] = {
    DataType.DT_INT4: NarrowType("int4", 4, Values.ML_DTYPES, "int4"),
    DataType.DT_INT2: NarrowType("int2", 2, Values.ML_DTYPES, "int2"),
    DataType.DT_UINT2: NarrowType("uint2", 2, Values.ML_DTYPES, "uint2"),
    DataType.DT_HIFLOAT8: NarrowType("hifloat8", 8, Values.HIFLOAT8),
    DataType.DT_FLOAT8_E5M2: NarrowType("float8_e5m2", 8, Values.ML_DTYPES, "float8_e5m2"),
    DataType.DT_FLOAT8_E4M3FN: NarrowType("float8_e4m3fn", 8, Values.ML_DTYPES, "float8_e4m3fn"),
    DataType.DT_FLOAT8_E8M0: NarrowType("float8_e8m0", 8, Values.E8M0, "float8_e8m0fnu"),
    DataType.DT_FLOAT6_E3M2: NarrowType("float6_e3m2", 6, Values.ML_DTYPES, "float6_e3m2fn"),
    DataType.DT_FLOAT6_E2M3: NarrowType("float6_e2m3", 6, Values.ML_DTYPES, "float6_e2m3fn"),
    DataType.DT_FLOAT4_E2M1: NarrowType("float4_e2m1", 4, Values.ML_DTYPES, "float4_e2m1fn"),
    DataType.DT_FLOAT4_E1M2: NarrowType("float4_e1m2", 4, Values.E1M2),
    DataType.DT_HIFLOAT4: NarrowType("hifloat4", 4, Values.E1M2),
}
#: Bytes of one COMPLEX32 element: two little-endian float16 (real, imaginary).
_COMPLEX32_BYTES = 4

#: Every decodable data-type code.
_DECODABLE = frozenset(_STORAGE) | frozenset(_NARROW) | {int(DataType.DT_BF16), int(DataType.DT_COMPLEX32)}

#: numpy-style names where they differ from ``str(storage dtype)``.
_SPECIAL_NAMES = {DataType.DT_BF16: "bfloat16", DataType.DT_UINT1: "uint1", DataType.DT_COMPLEX32: "complex32",
                  **{code: undecoded.name for code, undecoded in _NOT_DECODED.items()},
                  **{code: narrow.name for code, narrow in _NARROW.items()}}

#: Code written for each numpy dtype (by ``dtype.str`` without byte order, plus bfloat16).
_CODE_FOR_KIND: dict[tuple[str, int], int] = {
    ("f", 2): DataType.DT_FLOAT16,
    ("f", 4): DataType.DT_FLOAT,
    ("f", 8): DataType.DT_DOUBLE,
    ("i", 1): DataType.DT_INT8,
    ("i", 2): DataType.DT_INT16,
    ("i", 4): DataType.DT_INT32,
    ("i", 8): DataType.DT_INT64,
    ("u", 1): DataType.DT_UINT8,
    ("u", 2): DataType.DT_UINT16,
    ("u", 4): DataType.DT_UINT32,
    ("u", 8): DataType.DT_UINT64,
    ("b", 1): DataType.DT_BOOL,
    ("c", 8): DataType.DT_COMPLEX64,
    ("c", 16): DataType.DT_COMPLEX128,
}


class UnsupportedDataType(ValueError):
    """A data-type code (or numpy dtype) that vcompare cannot decode (or encode)."""


class DataSizeError(ValueError):
    """A tensor buffer holds fewer bytes than its shape and data type need."""

    def __init__(self, needed: int, present: int, detail: str = "") -> None:
        self.needed = needed
        self.present = present
        suffix = f" for {detail}" if detail else ""
        super().__init__(f"needs {needed} bytes{suffix} but only {present} are present")


def data_type_label(code: int) -> str:
    """``DT_FLOAT16 (2)`` style label for messages (``DT_HIFLOAT4_SCALE (42)`` for the named, not
    decoded codes); ``DT_<code>`` for unknown codes."""
    undecoded = _NOT_DECODED.get(int(code))
    if undecoded is not None:
        return f"{undecoded.label} ({undecoded.code})"
    try:
        return f"{DataType(code).name} ({int(code)})"
    except ValueError:
        return f"DT_{int(code)}"


def dtype_name(code: int) -> str:
    """numpy-style name of a data-type code (``float16``, ``bfloat16``, ``uint1``, ...).

    UNDEFINED (0) reads as ``int8`` and RESOURCE (23) as ``int64``, as in the reference tool.
    Undecodable codes give their enum name (``DT_STRING``); unknown integers ``DT_<code>``.
    (Remembered per code: a dump of many tensors asks for a few codes many times.)
    """
    code = int(code)
    known = _NAME_OF_CODE.get(code)
    if known is None:
        known = _dtype_name(code)
        if len(_NAME_OF_CODE) < 1024:
            _NAME_OF_CODE[code] = known
    return known


_NAME_OF_CODE: dict[int, str] = {}


def _dtype_name(code: int) -> str:
    if code in _SPECIAL_NAMES:
        return _SPECIAL_NAMES[code]
    if code in _STORAGE:
        return _STORAGE[code].name
    try:
        return DataType(code).name
    except ValueError:
        return f"DT_{code}"


def numpy_dtype(code: int) -> np.dtype:
    """dtype of a decoded tensor of a data-type code: the storage dtype of the plain types, bf16 ->
    ``ml_dtypes.bfloat16``, uint1 -> uint8, the narrow types -> their ml_dtypes type (int4 ->
    ``ml_dtypes.int4``, float8_e5m2 -> ``ml_dtypes.float8_e5m2`` ...) or float32 (HiFloat8,
    float8_e8m0, float4_e1m2, HiFloat4), complex32 -> complex64.

    Raises :class:`UnsupportedDataType` for codes that cannot be decoded; for a named code that is
    not decoded on purpose (DT_HIFLOAT4_SCALE) the message says why.
    """
    code = int(code)
    try:
        return _STORAGE[code]
    except KeyError:
        pass
    if code == DataType.DT_BF16:
        return _bfloat16()
    narrow = _NARROW.get(code)
    if narrow is not None:
        return decoded_dtype(narrow)
    if code == DataType.DT_COMPLEX32:
        return np.dtype(np.complex64)
    if code in _NOT_DECODED:
        raise UnsupportedDataType(f"data type {data_type_label(code)}: cannot decode: {_NOT_DECODED[code].reason}")
    raise UnsupportedDataType(
        f"data type {data_type_label(code)} cannot be decoded (supported: "
        + ", ".join(sorted({dtype_name(c) for c in _DECODABLE}))
        + ")"
    )


@functools.cache
def _narrow_codes_by_dtype() -> dict[np.dtype, int]:
    """The code written for each ml_dtypes type of :data:`_NARROW` (float8_e4m3fn -> 35,
    float8_e8m0fnu -> 36 ...): the types with the same bit patterns as a code's."""
    return {dtype: int(code) for code, n in _NARROW.items() if (dtype := same_bits_dtype(n)) is not None}


def narrow_type(code: int) -> NarrowType | None:
    """The :class:`~convert.codecs.narrow.NarrowType` of an 8/6/4/2-bit data-type code, else None."""
    return _NARROW.get(int(code))


def code_for_numpy(dtype: object) -> int:
    """Data-type code to write for a numpy dtype (bfloat16 -> 27, bool -> 11, float64 -> 12 ...).

    The ml_dtypes types of the narrow codes map to them (int4 -> 28, int2 -> 30, uint2 -> 31,
    float8_e5m2 -> 34, float8_e4m3fn -> 35, float8_e8m0fnu -> 36, float6_e3m2fn -> 37,
    float6_e2m3fn -> 38, float4_e2m1fn -> 39). HiFloat8, float4_e1m2, HiFloat4 and complex32 have
    no numpy dtype: give their code explicitly. Byte order is ignored (writers store
    little-endian). Raises :class:`UnsupportedDataType` for dtypes with no dump code (strings,
    objects, float128, datetime, float8_e4m3fnuz ...).
    """
    bfloat16 = _bfloat16()  # first, so that np.dtype("bfloat16") is known
    dt = np.dtype(dtype)
    if dt == bfloat16:
        return int(DataType.DT_BF16)
    narrow = _narrow_codes_by_dtype().get(dt)
    if narrow is not None:
        return narrow
    code = _CODE_FOR_KIND.get((dt.kind, dt.itemsize))
    if code is None:
        raise UnsupportedDataType(f"numpy dtype {dt} has no Ascend dump data type")
    return int(code)


def nbytes_for(code: int, count: int) -> int:
    """The fewest bytes ``count`` elements of data type ``code`` occupy: UINT1 ``ceil(count/8)``,
    the narrow types packed (``ceil(count*bits/8)``), COMPLEX32 ``4*count``, else
    ``count * itemsize``. (A narrow tensor may also be stored one element a byte: :func:`stored_nbytes`.)"""
    code = int(code)
    if code == DataType.DT_UINT1:
        return (count + 7) // 8
    narrow = _NARROW.get(code)
    if narrow is not None:
        return packed_nbytes(narrow.bits, count)
    if code == DataType.DT_COMPLEX32:
        return count * _COMPLEX32_BYTES
    return count * numpy_dtype(code).itemsize


def stored_nbytes(code: int, count: int, available: int) -> int:
    """The bytes a tensor of ``count`` elements uses when the dump holds ``available`` bytes for it.

    :func:`nbytes_for` for every type but the narrow ones of fewer than 8 bits, whose storage the
    byte count tells (:func:`convert.codecs.narrow.layout`): exactly ``count`` bytes, when that is not
    also the packed size, is one element a byte; anything else is packed (extra bytes are padding).
    """
    narrow = _NARROW.get(int(code))
    if narrow is not None:
        return _narrow_nbytes(narrow, count, available)
    return nbytes_for(code, count)


def count_for_nbytes(code: int, nbytes: int) -> int:
    """Whole elements of data type ``code`` held by ``nbytes`` bytes (UINT1: ``8*nbytes``; the
    narrow types are taken as packed: ``8*nbytes // bits``; COMPLEX32 ``nbytes // 4``).

    Used for a tensor with no recorded shape; trailing bytes of a partial element are dropped.
    """
    code = int(code)
    if code == DataType.DT_UINT1:
        return nbytes * 8
    narrow = _NARROW.get(code)
    if narrow is not None:
        return nbytes * 8 // narrow.bits
    if code == DataType.DT_COMPLEX32:
        return nbytes // _COMPLEX32_BYTES
    return nbytes // numpy_dtype(code).itemsize


def _as_uint8(buf: Buffer) -> np.ndarray:
    """A flat uint8 view of ``buf`` (no copy for bytes, memoryview and contiguous arrays)."""
    if isinstance(buf, np.ndarray):
        flat = np.ascontiguousarray(buf).reshape(-1)
        return flat.view(np.uint8)
    return np.frombuffer(buf, dtype=np.uint8)


def element_count(shape: tuple[int, ...]) -> int:
    """``prod(shape)`` with Python integers (1 for ``()``)."""
    return math.prod(int(d) for d in shape)


def decode(buf: Buffer, code: int, shape: tuple[int, ...]) -> np.ndarray:
    """Decode raw little-endian tensor bytes into an array of ``shape``.

    * ``count = prod(shape)`` (1 for ``()``); the first ``stored_nbytes(code, count, len(buf))``
      bytes are used and any extra bytes are ignored. Fewer than ``nbytes_for(code, count)`` bytes
      raise :class:`DataSizeError`.
    * A 0 anywhere in ``shape`` gives an empty array of that shape.
    * UINT1: bits are packed most-significant first; the first ``count`` bits become a uint8
      array of 0/1 values.
    * The narrow types (:mod:`convert.codecs.narrow`): packed little end first, or one element a byte when
      the buffer holds exactly ``count`` bytes (and that is not the packed size); decoded to their
      ml_dtypes type (a view for the 1-byte fp8 types) or, for HiFloat8 / float8_e8m0 / float4_e1m2
      / HiFloat4, to float32 through the format's value table.
    * COMPLEX32: (real, imaginary) float16 pairs widened exactly to complex64 (a copy).
    * The result is a zero-copy (read-only when ``buf`` is) view wherever the dtype allows.

    Raises :class:`UnsupportedDataType` for codes that cannot be decoded.
    """
    dt = numpy_dtype(code)
    code = int(code)
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    if 0 in shape:
        return np.empty(shape, dtype=dt)
    count = element_count(shape)
    raw = _as_uint8(buf)
    needed = nbytes_for(code, count)
    if raw.size < needed:
        raise DataSizeError(needed, int(raw.size), f"shape {shape} of {dtype_name(code)}")
    if code == DataType.DT_UINT1:
        return np.unpackbits(raw[:needed])[:count].reshape(shape)
    narrow = _NARROW.get(code)
    if narrow is not None:
        return decode_codes(raw, narrow, count, layout(narrow, count, int(raw.size))).reshape(shape)
    if code == DataType.DT_COMPLEX32:
        halves = raw[:needed].view("<f2").astype(np.float32)
        return halves.view(np.complex64).reshape(shape)
    return raw[:needed].view(dt).reshape(shape)


def widened(array: np.ndarray) -> np.ndarray:
    """``array`` in a dtype numpy itself can save and print, with the same values.

    bfloat16 and the ml_dtypes floats (fp8, fp6, fp4, e8m0) -> float32 and the ml_dtypes integers
    (int4, int2, uint2 ...) -> int8 / uint8: every value is exact in the wider type. Any other array
    is returned as it is. (numpy saves an ml_dtypes array as raw ``|V1`` bytes -- or, for
    float8_e5m2, under a descriptor ``<f1`` that it cannot load back -- and cannot format one.)
    """
    dt = array.dtype
    if not (dt.kind == "V" and dt.names is None or dt.kind == "f" and dt.itemsize == 1):  # float8_e5m2 is "f"
        return array
    import ml_dtypes  # here: only for an ml_dtypes array, which has loaded it already

    try:
        ml_dtypes.finfo(dt)
    except ValueError:
        try:
            info = ml_dtypes.iinfo(dt)
        except ValueError:
            return array
        return array.astype(np.int8 if info.min < 0 else np.uint8)
    return array.astype(np.float32)


def format_name(code: int) -> str:
    """Layout name of a format code (``NC1HWC0``, ``FRACTAL_Z``, ...).

    Unknown codes give ``FORMAT_<code>``, which :func:`format_code` maps back.
    """
    try:
        return Format(int(code)).name
    except ValueError:
        return f"FORMAT_{int(code)}"


_FORMAT_BY_UPPER = {name.upper(): int(member) for name, member in Format.__members__.items()}


def format_code(name: str) -> int:
    """Format code of a layout name; case-insensitive, an optional ``FORMAT_`` prefix allowed.

    ``FORMAT_<digits>`` (what :func:`format_name` gives for unknown codes) maps to the number.
    Raises ``ValueError`` for anything else.
    """
    key = str(name).strip().upper()
    if key in _FORMAT_BY_UPPER:
        return _FORMAT_BY_UPPER[key]
    if key.startswith("FORMAT_"):
        rest = key[len("FORMAT_") :]
        if rest in _FORMAT_BY_UPPER:
            return _FORMAT_BY_UPPER[rest]
        if rest.isdigit():
            return int(rest)
    raise ValueError(f"unknown format name {name!r}")
