"""The narrow data types and complex32 through the dump writer and the real dump reader.

Every file is written by :func:`convert.codecs.dumpwrite.write_dump` and read back by
:func:`convert.codecs.dumpfile.read_tensor` (and the memory-mapped reader); the values are checked against
the independent decoders of ``tests/narrow_reference.py``.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import narrow_reference as ref
import numpy as np
import pytest

from convert.codecs.dtypes import (
    DataSizeError,
    DataType,
    code_for_numpy,
    count_for_nbytes,
    decode,
    dtype_name,
    nbytes_for,
    numpy_dtype,
    stored_nbytes,
    widened,
)
from convert.codecs.dumpfile import read_header, read_tensor
from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.codecs.fastread import read_tensor_mapped
from convert.errors import DumpFormatError

SHAPE = (3, 5)  # 15 elements: a partial last byte for every width below 8 bits


def _write_and_read(tmp_path: Path, spec: TensorSpec, version: int = 2):
    path = write_dump(tmp_path / f"Op.x.1.{version}", outputs=[spec], op_name="x", version=version)
    header = read_header(path)
    info = header.outputs[0]
    return info, read_tensor(header, info), read_tensor_mapped(header, info)


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "unpacked"])
@pytest.mark.parametrize("kind", ref.KINDS, ids=lambda k: k.name)
@pytest.mark.parametrize("version", [1, 2])
def test_codes_round_trip(tmp_path: Path, kind: ref.Kind, packed: bool, version: int) -> None:
    codes = np.random.default_rng(kind.code).integers(0, 1 << kind.bits, SHAPE).astype(np.uint8)
    codes.reshape(-1)[: min(codes.size, 1 << kind.bits)] = np.arange(min(codes.size, 1 << kind.bits))
    info, array, mapped = _write_and_read(tmp_path, TensorSpec(codes, data_type=kind.code, packed=packed), version)
    count = codes.size
    expected_size = count if (not packed or kind.bits == 8) else (count * kind.bits + 7) // 8
    assert info.size == expected_size and info.dtype_name == kind.name
    assert array.shape == SHAPE and array.dtype == numpy_dtype(kind.code)
    assert ref.same_values(array.astype(np.float64), ref.decode(kind.name, codes))
    assert ref.same_values(mapped.astype(np.float64), ref.decode(kind.name, codes))


@pytest.mark.parametrize("kind", [k for k in ref.KINDS if k.bits < 8], ids=lambda k: k.name)
def test_packed_bytes_are_the_reference_packing(tmp_path: Path, kind: ref.Kind) -> None:
    codes = np.random.default_rng(7).integers(0, 1 << kind.bits, 13).astype(np.uint8)
    path = write_dump(tmp_path / "Op.x.1.2", outputs=[TensorSpec(codes, data_type=kind.code)], op_name="x")
    info = read_header(path).outputs[0]
    assert path.read_bytes()[info.offset:info.offset + info.size] == ref.pack(codes, kind.bits)


@pytest.mark.parametrize("dtype, code", [
    (ml_dtypes.int4, 28), (ml_dtypes.int2, 30), (ml_dtypes.uint2, 31), (ml_dtypes.float8_e5m2, 34),
    (ml_dtypes.float8_e4m3fn, 35), (ml_dtypes.float8_e8m0fnu, 36), (ml_dtypes.float6_e3m2fn, 37),
    (ml_dtypes.float6_e2m3fn, 38), (ml_dtypes.float4_e2m1fn, 39),
])
@pytest.mark.parametrize("packed", [True, False], ids=["packed", "unpacked"])
def test_ml_dtypes_arrays_round_trip(tmp_path: Path, dtype: object, code: int, packed: bool) -> None:
    values = np.array([[0.5, 1, -1, 2], [3, -0.25, 4, 0]], np.float32)
    if code == 31:
        values = np.abs(values)
    if code == 36:
        values = np.abs(values) + 0.5
    array = values.astype(dtype)
    assert code_for_numpy(array.dtype) == code
    info, back, _ = _write_and_read(tmp_path, TensorSpec(array, packed=packed))
    decoded = np.float32 if code == 36 else dtype  # e8m0: the device's table, float32 (docs/dtypes.md)
    assert info.data_type == code and back.dtype == np.dtype(decoded)
    np.testing.assert_array_equal(back.astype(np.float64), array.astype(np.float64))


def test_table_types_round_trip_by_value(tmp_path: Path) -> None:
    values = np.array([1.0, -0.5, 2.0**-22, 32768.0, np.inf, np.nan], np.float32)
    _, back, _ = _write_and_read(tmp_path, TensorSpec(values, data_type=DataType.DT_HIFLOAT8))
    assert back.dtype == np.float32 and ref.same_values(back, values)


def test_complex32_round_trips(tmp_path: Path) -> None:
    values = np.array([[1 + 2j, -0.5 - 3j], [65504 + 0j, 2.0**-24 * 1j]], np.complex64)
    info, back, mapped = _write_and_read(tmp_path, TensorSpec(values, data_type=DataType.DT_COMPLEX32))
    assert info.size == 16 and info.dtype_name == "complex32" and back.dtype == np.complex64
    np.testing.assert_array_equal(back, values)
    np.testing.assert_array_equal(mapped, values)
    raw = np.array([1.5, -2.0, 0.25, 8.0], "<f2").tobytes()  # independent: two fp16 pairs
    assert decode(raw, DataType.DT_COMPLEX32, (2,)).tolist() == [1.5 - 2j, 0.25 + 8j]


@pytest.mark.parametrize("code, count, packed_bytes, bits, used_of_count", [
    (28, 15, 8, 4, 15), (30, 15, 4, 2, 15), (37, 15, 12, 6, 15), (37, 3, 3, 6, 3), (33, 15, 15, 8, 15),
    (32, 3, 12, 32, 12), (39, 1, 1, 4, 1)])
def test_size_helpers(code: int, count: int, packed_bytes: int, bits: int, used_of_count: int) -> None:
    """``used_of_count``: the bytes used when the dump holds exactly ``count`` bytes (unpacked where
    that is not the packed size; complex32 needs 4 a element, so it has too few then)."""
    assert nbytes_for(code, count) == packed_bytes
    assert stored_nbytes(code, count, packed_bytes + 1) == packed_bytes  # padding is ignored
    assert stored_nbytes(code, count, count) == used_of_count
    assert count_for_nbytes(code, packed_bytes) == packed_bytes * 8 // bits


def test_too_few_bytes_is_a_size_error() -> None:
    with pytest.raises(DataSizeError, match="needs 8 bytes for shape \\(15,\\) of int4 but only 7"):
        decode(bytes(7), DataType.DT_INT4, (15,))
    with pytest.raises(DataSizeError, match="needs 12 bytes"):
        decode(bytes(11), DataType.DT_COMPLEX32, (3,))


def test_dump_with_a_size_fitting_neither_layout_is_diagnosed(tmp_path: Path) -> None:
    spec = TensorSpec(np.zeros(4, np.uint8), data_type=DataType.DT_FLOAT4_E2M1, shape=(10,))  # 2 bytes for 10
    path = write_dump(tmp_path / "Op.x.1.2", outputs=[spec], op_name="x")
    header = read_header(path)
    with pytest.raises(DumpFormatError, match=r"shape \(10,\) of float4_e2m1, which needs 5 bytes, but the dump holds 2"):
        read_tensor(header, header.outputs[0])


def test_hifloat4_and_names_in_the_unsupported_message() -> None:
    assert dtype_name(DataType.DT_HIFLOAT4) == "hifloat4" and numpy_dtype(41) == np.float32
    with pytest.raises(ValueError, match=r"DT_VARIANT \(26\) cannot be decoded \(supported: .*hifloat8.*int4"):
        numpy_dtype(DataType.DT_VARIANT)


def test_shapeless_narrow_tensor_is_taken_as_packed() -> None:
    assert count_for_nbytes(DataType.DT_INT4, 6) == 12 and count_for_nbytes(DataType.DT_FLOAT6_E2M3, 3) == 4


@pytest.mark.parametrize("dtype, wide", [
    (ml_dtypes.bfloat16, np.float32), (ml_dtypes.float8_e5m2, np.float32), (ml_dtypes.float8_e4m3fn, np.float32),
    (ml_dtypes.float8_e8m0fnu, np.float32), (ml_dtypes.float6_e3m2fn, np.float32), (ml_dtypes.float4_e2m1fn, np.float32),
    (ml_dtypes.int4, np.int8), (ml_dtypes.int2, np.int8), (ml_dtypes.uint2, np.uint8),
])
def test_widened_keeps_every_value(dtype: object, wide: type) -> None:
    codes = np.arange(256, dtype=np.uint8)
    array = codes.view(dtype)
    out = widened(array)
    assert out.dtype == wide
    np.testing.assert_array_equal(out.astype(np.float64), array.astype(np.float64))


def test_widened_leaves_plain_arrays_alone() -> None:
    for array in (np.ones(2, np.float16), np.ones(2, np.float32), np.ones(2, np.int8), np.ones(2, bool),
                  np.ones(2, np.complex64), np.zeros(2, "V3")):
        assert widened(array) is array


def test_vconvert_dump_and_txt_write_the_values(tmp_path: Path, capsys) -> None:
    from convert.cli import run

    dump = tmp_path / "dump"
    dump.mkdir()
    hif8 = np.array([0x08, 0x10, 0x98, 0x01], np.uint8)
    write_dump(dump / f"Op.a.1.{1700000000000000}", op_name="a", outputs=[
        TensorSpec(np.array([0.5, -1.5, 6.0, 0.0], np.float32).astype(ml_dtypes.float8_e5m2)),
        TensorSpec(np.array([-8, 7, 3], np.int8).astype(ml_dtypes.int4)),
        TensorSpec(hif8, data_type=DataType.DT_HIFLOAT8)])
    assert run(["dump", "-d", str(dump), "-out", str(tmp_path / "npy")]) == 0
    loaded = {p.name.split(".")[-2]: np.load(p) for p in (tmp_path / "npy").glob("*.npy")}
    assert loaded["0"].dtype == np.float32 and loaded["0"].tolist() == [0.5, -1.5, 6.0, 0.0]
    assert loaded["1"].dtype == np.int8 and loaded["1"].tolist() == [-8, 7, 3]
    assert loaded["2"].tolist() == ref.decode("hifloat8", hif8).tolist() == [1.0, 2.0, -0.5, 2.0**-22]
    assert run(["txt", "-i", str(dump), "-o", str(tmp_path / "txt")]) == 0
    text = (tmp_path / "txt" / f"Op.a.1.{1700000000000000}.output.1.txt").read_text().splitlines()
    assert text == ["# shape=[3] dtype=int4 format=ND", "-8", "7", "3"]
    capsys.readouterr()


@pytest.mark.parametrize("dtype", [ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn])
def test_large_fp8_tensors_are_memory_mapped(tmp_path: Path, dtype: object) -> None:
    from convert.codecs.fastread import MIN_MAP_BYTES, is_mapped

    codes = np.random.default_rng(3).integers(0, 256, MIN_MAP_BYTES + 5).astype(np.uint8)
    path = write_dump(tmp_path / "Op.x.1.2", outputs=[TensorSpec(codes.view(dtype))], op_name="x")
    header = read_header(path)
    array = read_tensor_mapped(header, header.outputs[0])
    assert is_mapped(array) and array.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(array.view(np.uint8), codes)
