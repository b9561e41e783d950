"""convert.codecs.dtypes: code tables, numpy mapping and decoding of raw tensor bytes."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from convert.codecs.dtypes import (
    DataSizeError,
    DataType,
    Format,
    UnsupportedDataType,
    code_for_numpy,
    count_for_nbytes,
    decode,
    dtype_name,
    format_code,
    format_name,
    nbytes_for,
    numpy_dtype,
)

EXPECTED_NAMES = {
    0: "int8",
    1: "float32",
    2: "float16",
    3: "int8",
    4: "uint8",
    5: "int16",
    6: "uint16",
    7: "int32",
    8: "int64",
    9: "uint32",
    10: "uint64",
    11: "bool",
    12: "float64",
    13: "DT_STRING",
    14: "DT_DUAL_SUB_INT8",
    15: "DT_DUAL_SUB_UINT8",
    16: "complex64",
    17: "complex128",
    18: "DT_QINT8",
    19: "DT_QINT16",
    20: "DT_QINT32",
    21: "DT_QUINT8",
    22: "DT_QUINT16",
    23: "int64",
    24: "DT_STRING_REF",
    25: "DT_DUAL",
    26: "DT_VARIANT",
    27: "bfloat16",
    28: "int4",
    29: "uint1",
    30: "int2",
    31: "uint2",
    32: "complex32",
    33: "hifloat8",
    34: "float8_e5m2",
    35: "float8_e4m3fn",
    36: "float8_e8m0",
    37: "float6_e3m2",
    38: "float6_e2m3",
    39: "float4_e2m1",
    40: "float4_e1m2",
    41: "hifloat4",
    42: "hifloat4_scale",
    43: "DT_43",
    999: "DT_999",
}

SUPPORTED = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17, 23, 27, 29]
UNSUPPORTED = [13, 14, 15, 18, 19, 20, 21, 22, 24, 25, 26, 255, 10_000]


@pytest.mark.parametrize("code, name", sorted(EXPECTED_NAMES.items()))
def test_dtype_name(code: int, name: str) -> None:
    assert dtype_name(code) == name


def test_data_type_codes_match_the_proto() -> None:
    assert DataType.DT_BF16 == 27 and DataType.DT_UINT1 == 29 and DataType.DT_DUAL == 25
    # the newer adump proto codes (CANN 8.1 stops at 29; the graph codes of nano dumps differ)
    assert (DataType.DT_INT4, DataType.DT_HIFLOAT8, DataType.DT_FLOAT8_E4M3FN) == (28, 33, 35)
    assert (DataType.DT_FLOAT4_E1M2, DataType.DT_HIFLOAT4) == (40, 41)


@pytest.mark.parametrize("code", SUPPORTED)
def test_numpy_dtype_of_supported_codes(code: int) -> None:
    dt = numpy_dtype(code)
    if code == DataType.DT_BF16:
        assert dt == np.dtype(ml_dtypes.bfloat16)
    elif code == DataType.DT_UINT1:
        assert dt == np.uint8
    else:
        assert dt.name == dtype_name(code)


@pytest.mark.parametrize("code", UNSUPPORTED)
def test_numpy_dtype_of_unsupported_codes_raises(code: int) -> None:
    with pytest.raises(UnsupportedDataType, match=dtype_name(code)) as info:
        numpy_dtype(code)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "dtype, code",
    [
        (np.float32, 1),
        (np.float16, 2),
        (np.float64, 12),
        (np.int8, 3),
        (np.uint8, 4),
        (np.int16, 5),
        (np.uint16, 6),
        (np.int32, 7),
        (np.int64, 8),
        (np.uint32, 9),
        (np.uint64, 10),
        (np.bool_, 11),
        (np.complex64, 16),
        (np.complex128, 17),
        (ml_dtypes.bfloat16, 27),
        (ml_dtypes.int4, 28),
        (ml_dtypes.float8_e4m3fn, 35),
        (ml_dtypes.float4_e2m1fn, 39),
        (">f4", 1),
    ],
)
def test_code_for_numpy(dtype: object, code: int) -> None:
    assert code_for_numpy(dtype) == code
    assert numpy_dtype(code).itemsize == np.dtype(dtype).itemsize


@pytest.mark.parametrize("dtype", ["U3", object, "datetime64[s]", ml_dtypes.float8_e4m3fnuz, ml_dtypes.uint4])
def test_code_for_numpy_unsupported(dtype: object) -> None:
    with pytest.raises(UnsupportedDataType, match="no Ascend dump data type"):
        code_for_numpy(dtype)


def test_decode_is_zero_copy_for_arrays_and_bytes() -> None:
    src = np.arange(12, dtype=np.float32)
    raw = src.view(np.uint8)
    out = decode(raw, DataType.DT_FLOAT, (3, 4))
    assert out.shape == (3, 4) and np.shares_memory(out, raw)
    np.testing.assert_array_equal(out.ravel(), src)
    from_bytes = decode(src.tobytes(), DataType.DT_FLOAT, (12,))
    np.testing.assert_array_equal(from_bytes, src)
    from_view = decode(memoryview(src.tobytes()), DataType.DT_FLOAT, (2, 6))
    np.testing.assert_array_equal(from_view.ravel(), src)


def test_decode_scalar_shape_reads_one_element() -> None:
    out = decode(np.array([7.5, 1.0], np.float16).tobytes(), DataType.DT_FLOAT16, ())
    assert out.shape == () and out == np.float16(7.5)


def test_decode_zero_dim_gives_empty_array() -> None:
    out = decode(b"", DataType.DT_INT32, (3, 0, 2))
    assert out.shape == (3, 0, 2) and out.dtype == np.int32


def test_decode_ignores_extra_bytes() -> None:
    out = decode(np.arange(10, dtype=np.int16).tobytes() + b"xyz", DataType.DT_INT16, (2, 3))
    np.testing.assert_array_equal(out, np.arange(6).reshape(2, 3))


def test_decode_too_few_bytes_names_both_numbers() -> None:
    with pytest.raises(DataSizeError, match=r"needs 24 bytes.*only 20") as info:
        decode(bytes(20), DataType.DT_FLOAT, (2, 3))
    assert info.value.needed == 24 and info.value.present == 20
    assert isinstance(info.value, ValueError)


def test_decode_unsupported_raises() -> None:
    with pytest.raises(UnsupportedDataType, match="DT_STRING"):
        decode(b"abcd", DataType.DT_STRING, (4,))


def test_decode_uint1_msb_first() -> None:
    out = decode(bytes([0b10100000, 0b01000000]), DataType.DT_UINT1, (3, 3))
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out.ravel(), [1, 0, 1, 0, 0, 0, 0, 0, 0])
    assert decode(bytes([0xFF]), DataType.DT_UINT1, (8,)).tolist() == [1] * 8
    with pytest.raises(DataSizeError, match="needs 2 bytes"):
        decode(bytes([0xFF]), DataType.DT_UINT1, (9,))


def test_decode_bfloat16_and_bool_and_complex() -> None:
    bf = np.array([1.0, -2.5, 3.0e38, np.inf], dtype=ml_dtypes.bfloat16)
    out = decode(bf.tobytes(), DataType.DT_BF16, (4,))
    assert out.dtype == bf.dtype and out.tobytes() == bf.tobytes()
    assert decode(b"\x00\x01\x01", DataType.DT_BOOL, (3,)).tolist() == [False, True, True]
    cx = np.array([1 + 2j, -3j], np.complex64)
    np.testing.assert_array_equal(decode(cx.tobytes(), DataType.DT_COMPLEX64, (2,)), cx)


def test_undefined_and_resource_read_as_int8_and_int64() -> None:
    assert decode(b"\xff\x01", DataType.DT_UNDEFINED, (2,)).tolist() == [-1, 1]
    assert decode(np.int64(-5).tobytes(), DataType.DT_RESOURCE, ()).item() == -5


def test_nbytes_and_count_helpers() -> None:
    assert nbytes_for(DataType.DT_UINT1, 9) == 2 and count_for_nbytes(DataType.DT_UINT1, 2) == 16
    assert nbytes_for(DataType.DT_FLOAT16, 5) == 10 and count_for_nbytes(DataType.DT_FLOAT16, 11) == 5


_STORAGE_CODES = [c for c in SUPPORTED if c != DataType.DT_UINT1]


@settings(max_examples=60, deadline=None)
@given(
    code=st.sampled_from(_STORAGE_CODES),
    shape=st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple),
    seed=st.integers(0, 2**32 - 1),
    extra=st.integers(0, 9),
)
def test_decode_round_trips_random_bytes(code: int, shape: tuple, seed: int, extra: int) -> None:
    dt = numpy_dtype(code)
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.random.default_rng(seed).integers(0, 256, count * dt.itemsize + extra, dtype=np.uint8)
    out = decode(raw, code, shape)
    assert out.shape == shape and out.dtype == dt
    assert out.tobytes() == raw[: count * dt.itemsize].tobytes()


@settings(max_examples=40, deadline=None)
@given(bits=st.lists(st.integers(0, 1), min_size=1, max_size=70))
def test_decode_uint1_round_trips(bits: list) -> None:
    packed = np.packbits(np.array(bits, np.uint8))
    np.testing.assert_array_equal(decode(packed, DataType.DT_UINT1, (len(bits),)), bits)


# ------------------------------------------------------------------------------- formats

SPECIAL_FORMATS = {
    15: "DECONV_SP_STRIDE8_TRANS",
    20: "LOOKUP_LOOKUPS",
    21: "LOOKUP_KEYS",
    22: "LOOKUP_VALUE",
    23: "LOOKUP_OUTPUT",
    24: "LOOKUP_HITS",
    28: "FRACTAL_ZZ",
    35: "NC",
    0: "NCHW",
    2: "ND",
    3: "NC1HWC0",
    4: "FRACTAL_Z",
    25: "C1HWNCoC0",
    29: "FRACTAL_NZ",
    40: "RESERVED",
    46: "YUV_A",
    255: "MAX",
}


@pytest.mark.parametrize("code, name", sorted(SPECIAL_FORMATS.items()))
def test_format_names(code: int, name: str) -> None:
    assert format_name(code) == name
    assert format_code(name) == code
    assert format_code(name.lower()) == code


def test_format_round_trip_and_aliases() -> None:
    for member in Format:
        assert format_code(format_name(member)) == member
    assert format_code("hashtable_lookup_hits") == 24
    assert format_code("FRACTAL_DECONV_SP_STRIDE8_TRANS") == 15
    assert format_code("FORMAT_NC1HWC0") == 3
    assert format_name(99) == "FORMAT_99" and format_code("FORMAT_99") == 99


@pytest.mark.parametrize("name", ["NCHWX", "", "FORMAT_", "fractal"])
def test_format_code_unknown_raises(name: str) -> None:
    with pytest.raises(ValueError, match="unknown format"):
        format_code(name)


def test_dtypes_imports_nothing_from_compare() -> None:
    code = (
        "import sys, convert.codecs.dtypes; "
        "bad = [m for m in sys.modules if m == 'compare' or m.startswith('compare.')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
