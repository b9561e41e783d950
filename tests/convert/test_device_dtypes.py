"""Device number formats by the device's own definitions (issue 32).

* float8_e8m0: CANN opbase ``Float8E8M0`` (hicann/opbase ``src/nnopbase/common/utils/float8_e8m0.cpp``,
  ``include/nnopbase/opdev/float8_e8m0.h``) decodes code 0x00 as 0.0, 0xFF as NaN and every other
  code ``c`` as ``2**(c - 127)`` -- not ml_dtypes' ``2**-127`` for 0x00.
* HiFloat8: the largest finite value is 0x6E = 2**15; 0x6F / 0xEF are +Inf / -Inf (hicann/opbase
  ``include/nnopbase/opdev/hifloat8.h``); docs/dtypes.md says so.
* dump data type 42 (``hifloat4_scale`` in the oam-tools dump parser): named, and refused with
  the reason, not an unknown ``DT_42``.

The rules are written here from the definitions, apart from :mod:`convert.codecs.narrow`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from conftest import ROOT
from hypothesis import given
from hypothesis import strategies as st

from convert.codecs.dtypes import (
    DataType,
    UnsupportedDataType,
    code_for_numpy,
    data_type_label,
    decode,
    dtype_name,
    numpy_dtype,
)
from convert.codecs.dumpfile import read_header, read_tensor
from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.codecs.narrow import hifloat8_value
from convert.errors import DumpFormatError

DTYPES_DOC = ROOT / "docs" / "dtypes.md"


def _e8m0_device(code: int) -> float:
    """The device rule: 0x00 is zero, 0xFF NaN, else the float32 whose exponent field is the code."""
    if code == 0x00:
        return 0.0
    if code == 0xFF:
        return math.nan
    return float(np.array(code << 23, np.uint32).view(np.float32))


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


@given(st.lists(st.integers(0, 255), min_size=1, max_size=64))
def test_every_e8m0_code_decodes_by_the_device_rule(codes: list[int]) -> None:
    raw = np.array(codes, np.uint8)
    out = decode(raw.tobytes(), DataType.DT_FLOAT8_E8M0, (raw.size,))
    assert out.dtype == np.float32
    for code, value in zip(codes, out.tolist()):
        assert _same(value, _e8m0_device(code)), f"0x{code:02X}: {value}"


def test_e8m0_landmarks() -> None:
    out = decode(bytes([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]), DataType.DT_FLOAT8_E8M0, (6,)).tolist()
    assert out[:5] == [0.0, 2.0**-126, 1.0, 2.0, 2.0**127] and math.isnan(out[5])
    assert numpy_dtype(DataType.DT_FLOAT8_E8M0) == np.float32 and dtype_name(36) == "float8_e8m0"


def test_e8m0_dump_round_trips_its_codes_and_values(tmp_path: Path) -> None:
    """An ml_dtypes float8_e8m0fnu array is written as its codes (code 36); a float array only with
    values the device type has (0.0 and the powers of two), exactly."""
    codes = np.array([0x00, 0x7E, 0x7F, 0x82, 0xFF], np.uint8)
    values = np.array([0.0, 0.5, 1.0, 8.0, 2.0**-126], np.float32)
    assert code_for_numpy(ml_dtypes.float8_e8m0fnu) == 36
    path = write_dump(tmp_path / "Op.x.1.2", op_name="x", outputs=[
        TensorSpec(codes.view(ml_dtypes.float8_e8m0fnu)),
        TensorSpec(values, data_type=DataType.DT_FLOAT8_E8M0)])
    header = read_header(path)
    first, second = (read_tensor(header, info) for info in header.outputs)
    assert header.outputs[0].data_type == 36 and first.dtype == np.float32
    assert first.tolist()[:4] == [0.0, 0.5, 1.0, 8.0] and math.isnan(first[4])
    assert second.tolist() == values.tolist()
    with pytest.raises(ValueError, match="not a float8_e8m0 value"):
        write_dump(tmp_path / "Op.y.1.2", op_name="y", outputs=[
            TensorSpec(np.array([3.0], np.float32), data_type=DataType.DT_FLOAT8_E8M0)])


@pytest.mark.parametrize("code, value", [
    (0x6E, 32768.0), (0x6F, math.inf), (0xEE, -32768.0), (0xEF, -math.inf), (0x6D, 24576.0), (0xED, -24576.0)])
def test_hifloat8_largest_finite_is_two_to_the_fifteen(code: int, value: float) -> None:
    assert hifloat8_value(code) == value
    assert decode(bytes([code]), DataType.DT_HIFLOAT8, (1,)).tolist() == [value]


def test_hifloat8_range_in_the_docs_is_the_decoders() -> None:
    """docs/dtypes.md states the finite range the decoder has: 2^-22 ... 2^15 (0x6E)."""
    finite = [abs(hifloat8_value(c)) for c in range(256) if math.isfinite(hifloat8_value(c)) and hifloat8_value(c)]
    assert (min(finite), max(finite)) == (2.0**-22, 2.0**15)
    text = DTYPES_DOC.read_text(encoding="utf-8")
    assert "Finite range `2^-22 ... 2^15`" in text
    assert "1.5 * 2^15" not in text.split("## Value definitions")[1].split("- **float8_e5m2")[0]


def test_dump_type_42_is_named_and_refused_with_the_reason(tmp_path: Path) -> None:
    """Code 42 is ``hifloat4_scale`` (the oam-tools dump parser's name), a 4-byte block-scale word:
    its DataType column says so, and reading it says why it is not decoded."""
    assert 42 not in DataType.__members__.values()  # no graph (nano) twin is known: not a DataType member
    assert dtype_name(42) == "hifloat4_scale" and data_type_label(42) == "DT_HIFLOAT4_SCALE (42)"
    with pytest.raises(UnsupportedDataType, match=re.escape(
            "cannot decode: dump type 42 (hifloat4_scale) is a HiFloat4 block-scale word")):
        numpy_dtype(42)
    path = write_dump(tmp_path / "Op.x.1.2", op_name="x", outputs=[
        TensorSpec(np.array([0x3F, 0x11], "<u4").view(np.uint8), data_type=42, shape=(2,))])
    header = read_header(path)
    assert header.outputs[0].dtype_name == "hifloat4_scale"
    refused = ("data type DT_HIFLOAT4_SCALE (42) of output 0 cannot be decoded: dump type 42 (hifloat4_scale) is a "
               "HiFloat4 block-scale word")
    with pytest.raises(DumpFormatError, match=re.escape(refused)):
        read_tensor(header, header.outputs[0])


def test_dtypes_doc_cites_the_device_sources() -> None:
    text = DTYPES_DOC.read_text(encoding="utf-8")
    for citation in ("hicann/opbase", "src/nnopbase/common/utils/float8_e8m0.cpp",
                     "include/nnopbase/opdev/hifloat8.h", "include/nnopbase/opdev/hifloat4.h",
                     "hicann/oam-tools", "PTO-ISA/pto-spec", "asl/arch/data-types/formats/hif4-scale.asl"):
        assert citation in text, citation
    assert "ConvertWeightToINT4Pack" in text and "no public source states them" in text


def test_a_large_e8m0_tensor_reads_by_the_device_rule_through_the_mapped_reader(tmp_path: Path) -> None:
    """Past the mapping threshold too, the codes go through the device's table (a float32 copy)."""
    from convert.codecs.fastread import MIN_MAP_BYTES, read_tensor_mapped

    codes = np.random.default_rng(5).integers(0, 256, MIN_MAP_BYTES + 3).astype(np.uint8)
    codes[:3] = [0x00, 0x7F, 0xFF]
    path = write_dump(tmp_path / "Op.x.1.2", op_name="x", outputs=[TensorSpec(codes, data_type=36)])
    header = read_header(path)
    array = read_tensor_mapped(header, header.outputs[0])
    assert array.dtype == np.float32 and array[0] == 0.0 and array[1] == 1.0 and math.isnan(array[2])
    sample = np.random.default_rng(6).integers(0, codes.size, 2000)
    for i in sample.tolist():
        assert _same(float(array[i]), _e8m0_device(int(codes[i])))
