"""convert.codecs.narrow: value tables bit pattern by bit pattern, packing, the packed/unpacked policy, encoding."""

from __future__ import annotations

import math

import ml_dtypes
import narrow_reference as ref
import numpy as np
import pytest

from convert.codecs.dtypes import narrow_type
from convert.codecs.narrow import (
    Layout,
    NarrowType,
    Values,
    decode_codes,
    encode_codes,
    hifloat8_value,
    layout,
    pack_codes,
    packed_nbytes,
    stored_nbytes,
    unpack_codes,
    value_table,
)

#: en_dtypes names of our types (the independent tables of the tests).
EN_DTYPES = {"hifloat8": "hifloat8", "float4_e1m2": "float4_e1m2", "float4_e2m1": "float4_e2m1",
             "float6_e2m3": "float6_e2m3", "float6_e3m2": "float6_e3m2", "float8_e8m0": "float8_e8m0"}


def _en_dtypes():
    return pytest.importorskip("en_dtypes", reason="en_dtypes is not installed (pip install en_dtypes: the test extra)")


def _all_codes(kind: ref.Kind) -> np.ndarray:
    return np.arange(1 << kind.bits, dtype=np.uint8)


@pytest.mark.parametrize("kind", ref.KINDS, ids=lambda k: k.name)
def test_every_code_decodes_as_the_formula_says(kind: ref.Kind) -> None:
    narrow = narrow_type(kind.code)
    assert narrow is not None and narrow.name == kind.name and narrow.bits == kind.bits
    codes = _all_codes(kind)
    ours = decode_codes(codes, narrow, codes.size, Layout.UNPACKED)
    assert ref.same_values(ours.astype(np.float64), ref.decode(kind.name, codes))


@pytest.mark.parametrize("name", sorted(EN_DTYPES))
def test_every_code_matches_en_dtypes(name: str) -> None:
    en_dtypes = _en_dtypes()
    kind = ref.KIND_BY_NAME[name]
    codes = _all_codes(kind)
    theirs = codes.view(getattr(en_dtypes, EN_DTYPES[name])).astype(np.float64)
    ours = decode_codes(codes, narrow_type(kind.code), codes.size, Layout.UNPACKED).astype(np.float64)
    if name == "float8_e8m0":  # en_dtypes reads 0x00 as 2**-127 (OCP MX); the device as 0.0 (docs/dtypes.md)
        assert theirs[0] == 2.0**-127 and ours[0] == 0.0
        codes = codes[1:]
    for code in codes.tolist():  # bit pattern by bit pattern, so that a failure names the pattern
        assert ref.same_values(ours[code:code + 1], theirs[code:code + 1]), f"{name} 0x{code:02X}: {ours[code]} != {theirs[code]}"


def test_hifloat8_landmarks() -> None:
    """The special and edge patterns of the definition (docs/dtypes.md)."""
    assert hifloat8_value(0x00) == 0.0 and math.isnan(hifloat8_value(0x80))
    assert hifloat8_value(0x6F) == math.inf and hifloat8_value(0xEF) == -math.inf
    assert hifloat8_value(0x08) == 1.0 and hifloat8_value(0x0F) == 1.875  # D = 0, 3 mantissa bits
    assert hifloat8_value(0x10) == 2.0 and hifloat8_value(0x18) == 0.5  # D = 1: e = +1 / -1
    assert hifloat8_value(0x6E) == 2.0**15 and hifloat8_value(0x6D) == 1.5 * 2.0**14  # largest finite
    assert hifloat8_value(0x01) == 2.0**-22 and hifloat8_value(0x07) == 2.0**-16  # denormals
    assert hifloat8_value(0x7F) == 1.5 * 2.0**-15 and hifloat8_value(0x9B) == -0.6875


def test_tables_are_read_only_float32() -> None:
    for values, size in ((Values.HIFLOAT8, 256), (Values.E8M0, 256), (Values.E1M2, 16)):
        table = value_table(values)
        assert table.dtype == np.float32 and table.size == size and not table.flags.writeable
    with pytest.raises(ValueError, match="no value table"):
        value_table(Values.ML_DTYPES)


def test_hifloat4_has_the_cann_definition() -> None:
    """CANN opbase hifloat4.h: 0x7 is 1.75, 0xF -1.75, 0x4 1.0, 0x1 0.25 (S1 E1 M2, bias 1)."""
    codes = np.array([0x7, 0xF, 0x4, 0x1, 0x0], np.uint8)
    out = decode_codes(codes, narrow_type(41), 5, Layout.UNPACKED)
    assert out.tolist() == [1.75, -1.75, 1.0, 0.25, 0.0]


def test_four_bit_packing_is_low_nibble_first() -> None:
    """Element 0 in the low nibble of byte 0 (Ascend's int4 pack: bits 0, 4, ... of an int32)."""
    assert pack_codes(np.array([1, 2, 3], np.uint8), 4).tolist() == [0x21, 0x03]
    assert unpack_codes(np.array([0x21, 0xF3], np.uint8), 4, 3).tolist() == [1, 2, 3]
    assert pack_codes(np.array([1, 2, 3, 0, 1], np.uint8), 2).tolist() == [0b00111001, 0b01]
    # 6 bits: element 1 = bits 6-7 of byte 0 then bits 0-3 of byte 1
    assert pack_codes(np.array([1, 2, 3, 1], np.uint8), 6).tolist() == [0x81, 0x30, 0x04]


@pytest.mark.parametrize("bits", [2, 4, 6, 8])
@pytest.mark.parametrize("count", [0, 1, 2, 3, 4, 5, 7, 8, 9, 17])
def test_pack_matches_the_integer_reference(bits: int, count: int) -> None:
    codes = np.random.default_rng(count * 10 + bits).integers(0, 1 << bits, count).astype(np.uint8)
    packed = pack_codes(codes, bits)
    assert packed.tobytes() == ref.pack(codes, bits)
    assert packed.size == packed_nbytes(bits, count)
    np.testing.assert_array_equal(unpack_codes(packed, bits, count), codes)


def test_layout_policy() -> None:
    int4, fp6, fp8 = narrow_type(28), narrow_type(37), narrow_type(35)
    assert layout(int4, 10, 10) is Layout.UNPACKED and stored_nbytes(int4, 10, 10) == 10
    assert layout(int4, 10, 5) is Layout.PACKED and stored_nbytes(int4, 10, 5) == 5
    assert layout(int4, 10, 32) is Layout.PACKED and stored_nbytes(int4, 10, 32) == 5  # padding
    assert layout(int4, 1, 1) is Layout.PACKED  # the two layouts are the same byte
    assert layout(fp6, 3, 3) is Layout.PACKED  # 3 x 6 bits = 3 bytes too: ambiguous, read packed
    assert layout(fp6, 4, 4) is Layout.UNPACKED and packed_nbytes(6, 4) == 3
    assert layout(fp8, 7, 7) is Layout.PACKED and stored_nbytes(fp8, 7, 9) == 7


def test_unpacked_high_bits_are_ignored() -> None:
    """An int8 holding an int4 value (sign-extended) reads as that int4."""
    raw = np.array([-8, -1, 7, 0x35], np.int8).view(np.uint8)
    out = decode_codes(raw, narrow_type(28), 4, Layout.UNPACKED)
    assert out.dtype == np.dtype(ml_dtypes.int4) and out.astype(np.int8).tolist() == [-8, -1, 7, 5]


def test_eight_bit_ml_dtypes_decode_is_a_view() -> None:
    raw = np.frombuffer(bytes([0x38, 0x40]), np.uint8)
    out = decode_codes(raw, narrow_type(35), 2, Layout.PACKED)
    assert out.dtype == np.dtype(ml_dtypes.float8_e4m3fn) and np.shares_memory(out, raw)
    assert out.astype(np.float32).tolist() == [1.0, 2.0]


def test_encode_from_uint8_codes_checks_the_width() -> None:
    int4 = narrow_type(28)
    assert encode_codes(np.array([0, 15], np.uint8), int4).tolist() == [0, 15]
    with pytest.raises(ValueError, match="4-bit: 16 does not fit"):
        encode_codes(np.array([3, 16], np.uint8), int4)


def test_encode_by_value_ml_dtypes_and_tables() -> None:
    assert encode_codes(np.array([-1, 7, -8], np.int32), narrow_type(28)).tolist() == [15, 7, 8]
    assert encode_codes(np.array([1.0, -6.0], np.float32), narrow_type(39)).tolist() == [0x2, 0xF]
    hif8 = narrow_type(33)
    codes = encode_codes(np.array([1.0, -0.5, np.nan, np.inf, -0.0, 2.0**-22]), hif8)
    assert codes.tolist() == [0x08, 0x98, 0x80, 0x6F, 0x00, 0x01]
    e1m2 = narrow_type(40)
    assert encode_codes(np.array([-0.0, 0.0, 1.75]), e1m2).tolist() == [0x8, 0x0, 0x7]  # e1m2 has -0


def test_encode_refuses_values_a_table_type_lacks() -> None:
    with pytest.raises(ValueError, match=r"0\.3 is not a hifloat8 value"):
        encode_codes(np.array([1.0, 0.3]), narrow_type(33))
    with pytest.raises(ValueError, match="nan is not a float4_e1m2 value"):
        encode_codes(np.array([np.nan]), narrow_type(40))


def test_a_table_type_round_trips_every_code() -> None:
    for code, narrow in ((33, narrow_type(33)), (40, narrow_type(40))):
        assert isinstance(narrow, NarrowType)
        codes = np.arange(1 << narrow.bits, dtype=np.uint8)
        values = decode_codes(codes, narrow, codes.size, Layout.UNPACKED)
        np.testing.assert_array_equal(encode_codes(values, narrow), codes, err_msg=str(code))
