"""Nano dumps (convert.codecs.nano, convert.codecs.nano_write): the graph data-type table, write -> read round
trips through every reader entry (read_header with any version, read_tensor, the mapped path,
read_nano), absent sections and sub-TLVs, and every malformed-file diagnosis with its byte."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from convert.codecs import dumpfile
from convert.codecs.dtypes import DataType
from convert.codecs.dumpfile import NANO_VERSION, read_header, read_tensor
from convert.codecs.dumpwire import MAX_HEADER_BYTES
from convert.codecs.dumpwrite import write_dump
from convert.codecs.fastread import MIN_MAP_BYTES, is_mapped, read_tensor_mapped
from convert.codecs.nano import (
    NANO_MAGIC,
    NANO_TO_PROTO,
    NanoDataType,
    UnknownNanoDataType,
    nano_data_type,
    parse_head,
    proto_data_type,
    read_nano,
)
from convert.codecs.nano_write import SUB_TLVS, NanoTensorSpec, nano_head, write_nano
from convert.errors import DumpFormatError

NAME = "Conv2D.conv1.3.1.1700000000000123"


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and bytes (NaNs included)."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ----------------------------------------------------------------------------- data-type table


@pytest.mark.parametrize(
    "graph, proto",
    [
        (0, DataType.DT_FLOAT), (1, DataType.DT_FLOAT16), (2, DataType.DT_INT8), (3, DataType.DT_INT32),
        (4, DataType.DT_UINT8), (6, DataType.DT_INT16), (7, DataType.DT_UINT16), (8, DataType.DT_UINT32),
        (9, DataType.DT_INT64), (10, DataType.DT_UINT64), (11, DataType.DT_DOUBLE), (12, DataType.DT_BOOL),
        (13, DataType.DT_STRING), (16, DataType.DT_COMPLEX64), (17, DataType.DT_COMPLEX128),
        (23, DataType.DT_RESOURCE), (27, DataType.DT_BF16), (28, DataType.DT_UNDEFINED),
        (29, DataType.DT_INT4), (30, DataType.DT_UINT1), (31, DataType.DT_INT2), (32, DataType.DT_UINT2),
        (33, DataType.DT_COMPLEX32), (34, DataType.DT_HIFLOAT8), (35, DataType.DT_FLOAT8_E5M2),
        (36, DataType.DT_FLOAT8_E4M3FN), (37, DataType.DT_FLOAT8_E8M0), (38, DataType.DT_FLOAT6_E3M2),
        (39, DataType.DT_FLOAT6_E2M3), (40, DataType.DT_FLOAT4_E2M1), (41, DataType.DT_FLOAT4_E1M2),
        (42, DataType.DT_HIFLOAT4),
    ],
)
def test_graph_codes_map_to_the_proto_code_of_the_same_name(graph: int, proto: DataType) -> None:
    assert proto_data_type(graph) == proto
    assert nano_data_type(proto) == graph


def test_the_table_is_complete_and_one_to_one() -> None:
    assert sorted(int(m) for m in NanoDataType) == [0, 1, 2, 3, 4, *range(6, 43)]
    assert len(set(NANO_TO_PROTO.values())) == len(NanoDataType) == len(DataType)
    assert all(proto.name == f"DT_{nano.name}" for nano, proto in NANO_TO_PROTO.items())


@pytest.mark.parametrize("code", [5, 43, 1000, -1])
def test_codes_no_graph_version_defines_are_refused(code: int) -> None:
    with pytest.raises(UnknownNanoDataType, match=f"graph data type code {code}"):
        proto_data_type(code)


# ----------------------------------------------------------------------------------- round trips

DTYPES = [np.float32, np.float16, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
          np.uint32, np.uint64, np.bool_, np.complex64, np.complex128, ml_dtypes.bfloat16]


def _array(dtype: object, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * 50
    if np.dtype(dtype).kind == "c":
        return (values + 1j * rng.standard_normal(shape)).astype(dtype)
    return values.astype(dtype)


@pytest.mark.parametrize("version", [None, 1, 2])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_every_plain_dtype_whatever_the_version(tmp_path: Path, dtype: object, version: int | None) -> None:
    x = _array(dtype, (2, 3, 4), 1)
    y = _array(dtype, (5,), 2)
    path = write_nano(tmp_path / NAME, inputs=[x], outputs=[NanoTensorSpec(y, origin_name="net/conv1")])
    header = read_header(path, version=version)
    assert header.version == NANO_VERSION and header.op_name == "conv1" and header.file_size == path.stat().st_size
    (info_in,), (info_out,) = header.inputs, header.outputs
    assert _same(read_tensor(header, info_in), x) and _same(read_tensor(header, info_out), y)
    assert info_in.shape == (2, 3, 4) and info_out.shape == (5,) and info_in.has_shape
    assert info_in.data_type == info_out.data_type == _proto_code(np.dtype(dtype))
    assert info_out.offset == info_in.offset + x.nbytes and info_out.size == y.nbytes


def _proto_code(dtype: np.dtype) -> int:
    from convert.codecs.dtypes import code_for_numpy

    return code_for_numpy(dtype)


def test_round_trip_keeps_every_descriptor_field(tmp_path: Path) -> None:
    a = np.arange(64, dtype=np.float16).reshape(1, 1, 2, 2, 16)
    b = np.arange(6, dtype=np.int32).reshape(2, 3)
    c = np.array(3.5, dtype=np.float32)
    outputs = [
        NanoTensorSpec(a, format="NC1HWC0", original_shape=(1, 3, 2, 2), origin_name="scope/conv1", address=0xDEAD,
                       address_type=2, device_offset=77, original_index=1, original_data_type=0, original_format=0),
        NanoTensorSpec(c, origin_name="标量"),
    ]
    path = write_nano(tmp_path / NAME, inputs=[NanoTensorSpec(b, format="NCHW", original_shape=(6,))], outputs=outputs,
                      version_id=7)
    dump = read_nano(path)
    assert dump.head.version_id == 7 and dump.head.has_inputs and dump.head.has_outputs
    assert dump.head.parsed_bytes == dump.head_length
    (i0,), (o0, o1) = dump.inputs, dump.outputs
    assert (i0.data_type, i0.format, i0.shape, i0.original_shape, i0.origin_name) == (3, 0, (2, 3), (6,), None)
    assert (o0.data_type, o0.format, o0.shape, o0.original_shape) == (1, 3, (1, 1, 2, 2, 16), (1, 3, 2, 2))
    assert (o0.origin_name, o0.address, o0.address_type, o0.device_offset) == ("scope/conv1", 0xDEAD, 2, 77)
    assert (o0.original_index, o0.original_data_type, o0.original_format) == (1, 0, 0)
    assert (o1.shape, o1.origin_name, o1.original_shape, o1.original_data_type) == ((), "标量", (), 0)
    header = read_header(path)
    assert [t.format_name for t in header.tensors] == ["NCHW", "NC1HWC0", "ND"]
    assert [t.original_shape for t in header.tensors] == [(6,), (1, 3, 2, 2), ()]
    assert header.outputs[0].address == 0xDEAD and header.header_length == dump.head_length
    for info, expected in zip(header.tensors, (b, a, c)):
        assert _same(read_tensor(header, info), expected)


def test_omitting_an_unknown_sub_tlv_is_refused() -> None:
    with pytest.raises(ValueError, match="are not sub-TLVs"):
        NanoTensorSpec(np.ones(2), omit=frozenset({"shape", "dims"}))


def test_uint1_empty_and_many_tensors(tmp_path: Path) -> None:
    bits = np.array([1, 0, 1, 1, 0, 0, 0, 1, 1, 1], dtype=np.uint8)
    empty = np.zeros((3, 0), dtype=np.float32)
    many = [np.full((i + 1,), i, dtype=np.int16) for i in range(40)]
    path = write_nano(tmp_path / NAME, inputs=many, outputs=[NanoTensorSpec(bits, data_type=NanoDataType.UINT1), empty])
    header = read_header(path)
    assert len(header.inputs) == 40
    assert all(_same(read_tensor(header, info), x) for info, x in zip(header.inputs, many))
    packed, void = header.outputs
    assert packed.dtype_name == "uint1" and packed.size == 2
    assert _same(read_tensor(header, packed), bits)
    assert _same(read_tensor(header, void), empty)


def test_a_large_float_tensor_takes_the_mapped_path(tmp_path: Path) -> None:
    big = _array(np.float32, (MIN_MAP_BYTES // 4 + 1000,), 3)
    path = write_nano(tmp_path / NAME, inputs=[np.ones(3, np.float16)], outputs=[big])
    header = read_header(path)
    array = read_tensor_mapped(header, header.outputs[0])
    assert is_mapped(array) and _same(array, big)


def test_same_records_as_a_binary_dump_of_the_same_tensors(tmp_path: Path) -> None:
    x, y = _array(np.float16, (4, 4), 4), _array(np.float32, (3,), 5)
    nano = read_header(write_nano(tmp_path / NAME, inputs=[x], outputs=[y]))
    binary = read_header(write_dump(tmp_path / "bin", inputs=[x], outputs=[y], op_name="conv1"))
    for a, b in zip(nano.tensors, binary.tensors):
        assert (a.kind, a.index, a.data_type, a.format, a.shape, a.size) == (b.kind, b.index, b.data_type, b.format,
                                                                            b.shape, b.size)
        assert _same(read_tensor(nano, a), read_tensor(binary, b))


def test_op_name_is_field_1_of_the_file_name_not_the_timestamp(tmp_path: Path) -> None:
    assert read_header(write_nano(tmp_path / "Add.add_1.5.2.1700000000000999", outputs=[np.ones(2)])).op_name == "add_1"
    assert read_header(write_nano(tmp_path / "plain", outputs=[np.ones(2)])).op_name == ""


# ------------------------------------------------------------------- absent sections and sub-TLVs


def test_absent_sub_tlvs(tmp_path: Path) -> None:
    x = np.arange(10, dtype=np.float32)
    path = write_nano(tmp_path / NAME, inputs=[NanoTensorSpec(x, omit=frozenset({"shape", "original_shape"}))],
                      outputs=[NanoTensorSpec(x[:3], omit=SUB_TLVS)])
    dump = read_nano(path)
    assert dump.inputs[0].shape is None and dump.inputs[0].original_shape is None
    assert dump.outputs[0].origin_name is None
    header = read_header(path)
    info = header.inputs[0]
    assert not info.has_shape and info.shape == (10,) and info.original_shape == ()
    assert _same(read_tensor(header, info), x)


def _file(tmp_path: Path, head: bytes, data: bytes = b"", name: str = NAME) -> Path:
    path = tmp_path / name
    path.write_bytes(struct.pack("<Q", len(head)) + head + data)
    return path


def test_only_an_output_section(tmp_path: Path) -> None:
    y = np.arange(4, dtype=np.float32)
    head, data = nano_head(outputs=[y])
    no_inputs = head[:8] + head[8 + 12:]  # drop the input section (tag, length, count 0)
    header = read_header(_file(tmp_path, no_inputs, data))
    assert header.inputs == () and _same(read_tensor(header, header.outputs[0]), y)
    assert not read_nano(tmp_path / NAME).head.has_inputs


def test_head_of_magic_and_version_only_is_a_dump_without_tensors(tmp_path: Path) -> None:
    header = read_header(_file(tmp_path, struct.pack("<II", NANO_MAGIC, 1)))
    assert header.tensors == () and header.version == NANO_VERSION


def test_later_tlvs_after_the_outputs_are_not_read(tmp_path: Path) -> None:
    y = np.arange(4, dtype=np.float32)
    head, data = nano_head(outputs=[y])
    longer = head + struct.pack("<II", 6, 4) + b"abcd"
    dump = read_nano(_file(tmp_path, longer, data))
    assert dump.head.parsed_bytes == len(head) and dump.head_length == len(longer)
    header = read_header(tmp_path / NAME)
    assert _same(read_tensor(header, header.outputs[0]), y)


def test_wrong_section_tag_makes_the_section_absent_and_consumes_nothing(tmp_path: Path) -> None:
    x = np.arange(4, dtype=np.float32)
    head, data = nano_head(inputs=[x])
    bad = bytearray(head)
    bad[8:12] = struct.pack("<I", 9)  # the input section's tag
    parsed = parse_head(tmp_path / NAME, bytes(bad))
    assert not parsed.has_inputs and not parsed.has_outputs and parsed.parsed_bytes == 8
    with pytest.raises(DumpFormatError) as info:
        read_header(_file(tmp_path, bytes(bad), data))
    assert "nano dump: 16 unexpected extra bytes after the declared tensor data" in str(info.value)
    assert info.value.offset == 8 + len(head)


def test_wrong_sub_tlv_tag_makes_the_field_absent(tmp_path: Path) -> None:
    x = np.arange(4, dtype=np.float32)
    head, data = nano_head(outputs=[NanoTensorSpec(x, original_shape=(2, 2), origin_name="n")])
    bad = bytearray(head)
    shape_tag_at = 8 + 12 + 12 + 52  # magic+version, empty input section, output section head, fixed fields
    assert struct.unpack_from("<II", bad, shape_tag_at) == (0, 8)
    bad[shape_tag_at:shape_tag_at + 4] = struct.pack("<I", 1)  # now it reads as the original shape
    (out,) = parse_head(tmp_path / NAME, bytes(bad)).outputs
    assert out.shape is None and out.original_shape == (4,)
    # the real original-shape TLV (tag 1) now sits where the origin name (tag 2) is expected
    assert out.origin_name is None


# ----------------------------------------------------------------------------- damaged files


def _good(tmp_path: Path) -> bytes:
    path = write_nano(tmp_path / "good", inputs=[np.arange(6, dtype=np.float16), np.ones((2, 2), np.int32)],
                      outputs=[NanoTensorSpec(np.arange(3, dtype=np.float32), original_shape=(3,), origin_name="o")])
    return path.read_bytes()


def test_truncated_at_every_byte_is_a_diagnosis_naming_file_and_offset(tmp_path: Path) -> None:
    data = _good(tmp_path)
    path = tmp_path / NAME
    for n in range(1, len(data)):
        path.write_bytes(data[:n])
        if n <= 12:  # too short to be detected as nano: a few bytes may even decode as a v1 DumpData
            try:
                header = read_header(path)
            except DumpFormatError as exc:
                assert str(path) in str(exc) and exc.offset is not None and 0 <= exc.offset <= n
            else:
                assert header.version == 1 and header.tensors == ()
            continue
        with pytest.raises(DumpFormatError) as info:
            read_header(path)
        assert str(path) in str(info.value) and info.value.offset is not None and 0 <= info.value.offset <= n
        assert "nano dump:" in info.value.problem


def test_head_truncated_at_every_byte_parses_or_names_the_field(tmp_path: Path) -> None:
    head, _ = nano_head(inputs=[np.arange(6, dtype=np.float16)],
                        outputs=[NanoTensorSpec(np.ones(3), original_shape=(3,), origin_name="name")])
    for n in range(8, len(head)):
        try:
            parsed = parse_head(tmp_path / NAME, head[:n])
        except DumpFormatError as exc:
            assert exc.problem.startswith("nano dump: ") and 8 <= exc.offset <= 8 + n
        else:  # it ends exactly where an optional field starts: that field is absent
            assert parsed.parsed_bytes <= n


@pytest.mark.parametrize("extra, needle, where", [
    (b"xx", "nano dump: 2 unexpected extra bytes after the declared tensor data", "end"),
    (None, "nano dump: truncated: the TLV head declares 40 bytes of tensor data after byte 293, but the 328-byte "
           "file holds only 35 (5 missing)", "size"),
])
def test_size_mismatch(tmp_path: Path, extra: bytes | None, needle: str, where: str) -> None:
    data = _good(tmp_path)
    damaged = data + extra if extra is not None else data[:-5]
    path = tmp_path / NAME
    path.write_bytes(damaged)
    with pytest.raises(DumpFormatError) as info:
        read_header(path)
    assert needle in str(info.value)
    assert info.value.offset == (len(data) if where == "end" else len(damaged))


def _patched(head: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(head)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def _input_head() -> bytes:
    head, _ = nano_head(inputs=[np.arange(4, dtype=np.float32)])
    return head


# byte offsets in _input_head() (the file offsets in messages are 8 more): 0 magic, 4 version,
# 8 tag 4, 12 length, 16 count, 20 descriptor (20 data_type, 24 format, 28 address_type, 32 address, 40 offset, 48 size, 56 list length,
# 60 shape tag, 64 shape length, 68 dims, 76 original shape), 92 the output section
@pytest.mark.parametrize("offset, fmt, value, needle, at", [
    (16, "<I", 2**32 - 1, "input count 4294967295 at byte 24: the", 24),
    (20, "<i", 5, "input 0 has data type code 5, which is not a graph (ge::DataType) code", 28),
    (20, "<i", -3, "input 0 has data type code -3", 28),
    (64, "<I", 12, "the shape of input 0 at byte 68 has length 12, not a multiple of 8", 68),
    (64, "<I", 8 * 300, "the shape of input 0 at byte 68 has 300 dimensions (more than 256)", 68),
    (64, "<I", 2**32 - 8, "has 536870911 dimensions", 68),
    (64, "<I", 64, "ends within the shape of input 0 (64 bytes at byte 76, 36 left)", 76),
    (0, "<I", 0x5A5A5A5B, "magic at byte 8 is 0x5A5A5A5B", 8),
])
def test_absurd_fields_in_the_head(tmp_path: Path, offset: int, fmt: str, value: int, needle: str, at: int) -> None:
    head = _patched(_input_head(), offset, fmt, value)
    with pytest.raises(DumpFormatError) as info:
        parse_head(tmp_path / NAME, head)
    assert needle in str(info.value) and info.value.offset == at


def test_a_lying_tensor_size_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    head = _patched(_input_head(), 48, "<Q", 2**63)
    with pytest.raises(DumpFormatError, match="truncated: the TLV head declares 9223372036854775808 bytes"):
        read_header(_file(tmp_path, head, bytes(16)))


def test_a_lying_origin_name_length(tmp_path: Path) -> None:
    head, data = nano_head(outputs=[NanoTensorSpec(np.ones(2, np.float32), origin_name="abc")])
    name_length_at = len(head) - 3 - 4
    bad = _patched(head, name_length_at, "<I", 2**32 - 1)
    with pytest.raises(DumpFormatError) as info:
        read_header(_file(tmp_path, bad, data))
    assert "ends within the origin name of output 0 (4294967295 bytes" in str(info.value)
    assert info.value.offset == 8 + name_length_at + 4


@pytest.mark.parametrize("length, needle", [
    (4, "TLV head length 4 at byte 0 is less than the 8 bytes of its magic and version"),
    (10**6, "TLV head length 1000000 at byte 0 points past the end of the"),
])
def test_bad_head_lengths(tmp_path: Path, length: int, needle: str) -> None:
    path = tmp_path / NAME
    path.write_bytes(struct.pack("<QI", length, NANO_MAGIC) + bytes(8))
    with pytest.raises(DumpFormatError) as info:
        read_header(path)
    assert needle in str(info.value) and info.value.offset == 0


def test_a_huge_head_length_in_a_sparse_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / NAME
    path.write_bytes(struct.pack("<QI", MAX_HEADER_BYTES + 1, NANO_MAGIC))
    os.truncate(path, MAX_HEADER_BYTES + 64)
    with pytest.raises(DumpFormatError, match=f"is more than the {MAX_HEADER_BYTES} bytes a dump header may take"):
        read_header(path)


def test_twelve_bytes_with_the_magic_are_not_nano(tmp_path: Path) -> None:
    path = tmp_path / NAME
    path.write_bytes(struct.pack("<QI", 4, NANO_MAGIC))
    with pytest.raises(DumpFormatError) as info:
        read_header(path)
    assert "nano" not in info.value.problem


def test_dumpfile_never_takes_the_quick_v2_path_for_nano(tmp_path: Path) -> None:
    path = write_nano(tmp_path / NAME, outputs=[np.ones(3, np.float32)])
    with open(path, "rb") as f:
        assert dumpfile._quick_v2(path, f, path.stat().st_size) is None
