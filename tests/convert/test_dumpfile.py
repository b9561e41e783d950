"""convert.codecs.dumpfile / convert.codecs.dump_proto: Ascend dump files, v1 (protobuf) and v2 (binary)."""

from __future__ import annotations

import importlib
import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from conftest import shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compare.errors import DumpFormatError
from convert.codecs import dump_proto
from convert.codecs.dtypes import DataType, Format
from convert.codecs.dumpfile import DumpHeader, read_header, read_tensor
from convert.codecs.dumpwrite import TensorSpec, write_dump

LEAF = ("left", "20240315101530", "0", "resnet_small", "1", "0")

DTYPES = [
    np.float32,
    np.float16,
    np.float64,
    np.int8,
    np.uint8,
    np.int16,
    np.uint16,
    np.int32,
    np.int64,
    np.uint32,
    np.uint64,
    np.bool_,
    np.complex64,
    np.complex128,
    ml_dtypes.bfloat16,
]


def _random_array(rng: np.random.Generator, dtype: object, shape: tuple[int, ...]) -> np.ndarray:
    """Arbitrary bit patterns (NaNs included) of ``dtype``; bool as 0/1."""
    dt = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    if dt == np.bool_:
        return rng.integers(0, 2, count).astype(bool).reshape(shape)
    raw = rng.integers(0, 256, count * dt.itemsize, dtype=np.uint8)
    return raw.view(dt).reshape(shape)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _read_all(path: Path, version: int | None = None) -> tuple[DumpHeader, list[np.ndarray]]:
    header = read_header(path, version)
    return header, [read_tensor(header, t) for t in header.tensors]


# --------------------------------------------------------------------------- dump_proto


def test_dump_proto_field_numbers_match_the_spec() -> None:
    def numbers(cls: type) -> dict[str, int]:
        return {f.name: f.number for f in cls.DESCRIPTOR.fields}

    assert numbers(dump_proto.OpOutput) == {
        "data_type": 1, "format": 2, "shape": 3, "original_op": 4, "data": 5, "size": 6,
        "original_shape": 7, "sub_format": 8, "address": 9, "dim_range": 10, "offset": 11,
    }  # fmt: skip
    assert numbers(dump_proto.OpInput) == {
        "data_type": 1, "format": 2, "shape": 3, "data": 4, "size": 5, "original_shape": 6,
        "sub_format": 7, "address": 8, "offset": 9,
    }  # fmt: skip
    assert numbers(dump_proto.DumpData) == {
        "version": 1, "dump_time": 2, "output": 3, "input": 4, "buffer": 5, "op_name": 6,
        "attr": 7, "space": 8,
    }  # fmt: skip
    assert numbers(dump_proto.OriginalOp) == {"name": 1, "output_index": 2, "data_type": 3, "format": 4}
    assert numbers(dump_proto.Workspace) == {"type": 1, "data": 2, "size": 3}
    assert dump_proto.DumpData.DESCRIPTOR.full_name == "toolkit.dumpdata.DumpData"
    fmt = dump_proto.OpOutput.DESCRIPTOR.fields_by_name["format"].enum_type
    assert fmt.values_by_number[15].name == "FORMAT_FRACTAL_DECONV_SP_STRIDE8_TRANS"
    assert fmt.values_by_number[24].name == "FORMAT_HASHTABLE_LOOKUP_HITS"
    assert fmt.values_by_number[255].name == "FORMAT_MAX"
    dt = dump_proto.OpOutput.DESCRIPTOR.fields_by_name["data_type"].enum_type
    assert dt.values_by_number[29].name == "DT_UINT1"
    space = dump_proto.Workspace.DESCRIPTOR.fields_by_name["type"].enum_type
    assert space.full_name == "toolkit.dumpdata.Workspace.SpaceType"


def test_dump_proto_can_be_imported_twice() -> None:
    blob = dump_proto.DumpData(op_name="x", dump_time=3).SerializeToString()
    again = importlib.reload(dump_proto)
    assert again.DumpData.FromString(blob).op_name == "x"


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_every_dtype(tmp_path: Path, version: int, dtype: object) -> None:
    rng = np.random.default_rng(0)
    a = _random_array(rng, dtype, (2, 3, 4))
    b = _random_array(rng, dtype, ())
    c = _random_array(rng, dtype, (0, 5))
    path = write_dump(tmp_path / "op", inputs=[a, b], outputs=[c, a[0]], version=version)
    header, arrays = _read_all(path)
    assert header.version == version
    for want, got in zip([a, b, c, a[0]], arrays):
        assert _same_bits(want, got)


@pytest.mark.parametrize("version", [1, 2])
def test_round_trip_metadata(tmp_path: Path, version: int) -> None:
    spec = TensorSpec(
        np.arange(32, dtype=np.float16),
        format="NC1HWC0",
        shape=(1, 1, 2, 1, 16),
        original_shape=(1, 3, 2, 1),
        address=123456789,
        sub_format=4,
    )
    path = write_dump(
        tmp_path / "Conv2D.conv1.4.1.1700000000004805",
        inputs=[spec, TensorSpec(np.ones(4, np.float32), format=Format.FRACTAL_Z)],
        outputs=[np.zeros((2, 2), np.int32)],
        op_name="conv1",
        dump_time=1700000000004,
        buffers=[b"abc", b""],
        version=version,
    )
    header = read_header(path)
    assert header.op_name == "conv1" and header.dump_time == 1700000000004
    assert header.file_size == path.stat().st_size
    assert (header.header_length > 0) == (version == 2)
    first = header.inputs[0]
    assert first.kind == "input" and first.index == 0
    assert first.format == Format.NC1HWC0 and first.format_name == "NC1HWC0"
    assert first.data_type == DataType.DT_FLOAT16 and first.dtype_name == "float16"
    assert first.shape == (1, 1, 2, 1, 16) and first.original_shape == (1, 3, 2, 1)
    assert first.address == 123456789 and first.sub_format == 4 and first.size == 64
    assert first.has_shape
    assert header.inputs[1].format_name == "FRACTAL_Z" and header.inputs[1].original_shape == ()
    assert header.outputs[0].kind == "output" and header.outputs[0].format_name == "ND"
    assert [size for _, size in header.buffers] == [3, 0]
    raw = path.read_bytes()
    assert raw[header.buffers[0][0] : header.buffers[0][0] + 3] == b"abc"
    for info in header.tensors:  # offsets are absolute in both layouts
        want = read_tensor(header, info).tobytes()
        assert raw[info.offset : info.offset + info.size] == want
    np.testing.assert_array_equal(read_tensor(header, first).ravel(), np.arange(32))


@pytest.mark.parametrize("version", [1, 2])
def test_round_trip_uint1(tmp_path: Path, version: int) -> None:
    bits = np.array([[1, 0, 1], [1, 1, 0], [0, 0, 1]], np.uint8)
    packed = np.packbits(bits.ravel())  # 2 bytes for 9 bits
    path = write_dump(
        tmp_path / "op",
        inputs=[TensorSpec(bits, data_type=DataType.DT_UINT1)],
        outputs=[TensorSpec(packed, data_type=DataType.DT_UINT1, shape=(3, 3))],
        version=version,
    )
    header, (got_in, got_out) = _read_all(path)
    assert header.inputs[0].size == 2 and header.inputs[0].dtype_name == "uint1"
    np.testing.assert_array_equal(got_in, bits)
    np.testing.assert_array_equal(got_out, bits)


def test_explicit_data_type_converts_values(tmp_path: Path) -> None:
    path = write_dump(
        tmp_path / "op",
        outputs=[
            TensorSpec(np.array([1.5, -2.0]), data_type=DataType.DT_BF16),
            TensorSpec(np.array([1, 0, 2]), data_type=DataType.DT_BOOL),
            TensorSpec(np.array([3], np.int64), data_type=DataType.DT_RESOURCE),
        ],
    )
    header, (bf, flags, res) = _read_all(path)
    assert bf.dtype == np.dtype(ml_dtypes.bfloat16) and bf.astype(np.float32).tolist() == [1.5, -2.0]
    assert flags.tolist() == [True, False, True] and header.outputs[1].data_type == DataType.DT_BOOL
    assert res.dtype == np.int64 and header.outputs[2].dtype_name == "int64"


_FORMATS = [m for m in Format if m != Format.MAX]


@st.composite
def _tensor_specs(draw: st.DrawFn) -> tuple[TensorSpec, np.ndarray]:
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    seed = draw(st.integers(0, 2**32 - 1))
    array = _random_array(np.random.default_rng(seed), dtype, shape)
    fmt = draw(st.sampled_from(_FORMATS))
    as_name = draw(st.booleans())
    spec = TensorSpec(array, format=fmt.name if as_name else int(fmt))
    return spec, array


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ins=st.lists(_tensor_specs(), max_size=3),
    outs=st.lists(_tensor_specs(), max_size=3),
    version=st.sampled_from([1, 2]),
    op_name=st.text(max_size=12),
)
def test_random_round_trips(tmp_path_factory: pytest.TempPathFactory, ins, outs, version, op_name) -> None:
    path = tmp_path_factory.mktemp("rt") / "dump"
    write_dump(path, inputs=[s for s, _ in ins], outputs=[s for s, _ in outs], op_name=op_name, version=version)
    forced = read_header(path, version)
    header, arrays = _read_all(path)
    assert header == forced and header.version == version and header.op_name == op_name
    for (spec, want), info, got in zip(ins + outs, header.tensors, arrays):
        assert _same_bits(want, got)
        assert info.format == Format(spec.format if isinstance(spec.format, int) else Format[spec.format])


# ------------------------------------------------------------------------ no-shape tensors


def _raw_dump(path: Path, msg: object, payloads: list[bytes], version: int) -> Path:
    blob = msg.SerializeToString()
    path.write_bytes(blob if version == 1 else struct.pack("<Q", len(blob)) + blob + b"".join(payloads))
    return path


@pytest.mark.parametrize("version", [1, 2])
def test_tensor_without_shape_gets_element_count(tmp_path: Path, version: int) -> None:
    data = np.arange(5, dtype=np.float32).tobytes()
    msg = dump_proto.DumpData(version=f"{version}.0", op_name="noshape")
    out = msg.output.add(data_type=DataType.DT_FLOAT, size=len(data))
    empty = msg.output.add(data_type=DataType.DT_FLOAT16)
    bits = msg.input.add(data_type=DataType.DT_UINT1, size=1)
    if version == 1:
        out.data, bits.data = data, b"\xf0"
    path = _raw_dump(tmp_path / "op", msg, [b"\xf0", data], version)
    header, (got_bits, got, got_empty) = _read_all(path)
    assert header.outputs[0].has_shape is False and header.outputs[0].shape == (5,)
    np.testing.assert_array_equal(got, np.arange(5))
    assert header.outputs[1].shape == (0,) and got_empty.shape == (0,)
    assert header.inputs[0].shape == (8,) and got_bits.tolist() == [1, 1, 1, 1, 0, 0, 0, 0]


@pytest.mark.parametrize("version", [1, 2])
def test_undecodable_data_type(tmp_path: Path, version: int) -> None:
    spec = TensorSpec(np.frombuffer(b"hello", np.uint8), data_type=DataType.DT_STRING)
    path = write_dump(tmp_path / "op", outputs=[spec], version=version)
    header = read_header(path)
    assert header.outputs[0].dtype_name == "DT_STRING" and header.outputs[0].size == 5
    with pytest.raises(DumpFormatError, match=r"data type DT_STRING \(13\) of output 0 cannot be decoded") as info:
        read_tensor(header, header.outputs[0])
    assert info.value.offset == header.outputs[0].offset


@pytest.mark.parametrize("version", [1, 2])
def test_shape_larger_than_data(tmp_path: Path, version: int) -> None:
    spec = TensorSpec(np.zeros(3, np.float32), shape=(2, 3))
    path = write_dump(tmp_path / "op", inputs=[spec], version=version)
    header = read_header(path)
    with pytest.raises(DumpFormatError, match=r"input 0 has shape \(2, 3\) of float32, which needs 24 bytes, but the dump holds 12"):
        read_tensor(header, header.inputs[0])


def test_read_tensor_notices_a_file_shrunk_after_the_header(tmp_path: Path) -> None:
    path = write_dump(tmp_path / "op", outputs=[np.ones(100, np.float32)])
    header = read_header(path)
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(DumpFormatError, match="file ends after 360 of the 400 data bytes"):
        read_tensor(header, header.outputs[0])


# ---------------------------------------------------------------------------- diagnoses


def _v2_bytes() -> bytes:
    msg = dump_proto.DumpData(version="2.0", op_name="op")
    msg.output.add(data_type=DataType.DT_FLOAT, size=16).shape.dim.extend([4])
    header = msg.SerializeToString()
    return struct.pack("<Q", len(header)) + header + bytes(16)


@pytest.mark.parametrize(
    "content, pattern, offset",
    [
        (b"", r"empty file \(0 bytes\)", 0),
        (b"\x01\x02\x03\x04\x05", "file has 5 bytes, too short for the 8-byte header length", 0),
        (struct.pack("<Q", 500) + bytes(20), "header length 500 at byte 0 points past the end of the 28-byte file", 0),
        (struct.pack("<Q", 0) + bytes(2), "header length at byte 0 is 0", 0),
        (struct.pack("<Q", 4) + b"\xff\xff\xff\xff", r"header of 4 bytes at byte 8 is not a valid DumpData protobuf", 8),
        (struct.pack("<Q", 4) + b"ZZZZ" + bytes(8), "nano dump: TLV head length 4 at byte 0 is less than the 8 bytes", 0),
    ],
)
def test_broken_files(tmp_path: Path, content: bytes, pattern: str, offset: int) -> None:
    path = tmp_path / "op"
    path.write_bytes(content)
    with pytest.raises(DumpFormatError, match=pattern) as info:
        read_header(path)
    assert info.value.offset == offset and info.value.path == str(path)


def test_truncated_v2_names_declared_and_present_bytes(tmp_path: Path) -> None:
    good = _v2_bytes()
    path = tmp_path / "op"
    path.write_bytes(good[:-6])
    start = len(good) - 16
    with pytest.raises(DumpFormatError) as info:
        read_header(path)
    msg = str(info.value)
    assert f"declares 16 bytes of tensor data after byte {start}" in msg
    assert f"holds only 10" in msg and "6 missing" in msg
    path.write_bytes(good + bytes(6))
    with pytest.raises(DumpFormatError, match="6 unexpected extra bytes after the declared tensor data"):
        read_header(path)


def test_forced_version_reads_only_that_layout(tmp_path: Path) -> None:
    v2 = tmp_path / "v2"
    v2.write_bytes(_v2_bytes())
    v1 = write_dump(tmp_path / "v1", outputs=[np.ones(3, np.float32)], version=1)
    assert read_header(v2, 2).version == 2 and read_header(v1, 1).version == 1
    with pytest.raises(DumpFormatError, match="points past the end"):
        read_header(v1, 2)
    with pytest.raises(DumpFormatError):
        read_header(v2, 1)
    with pytest.raises(ValueError, match="dump version"):
        read_header(v1, 3)


def test_missing_file_is_a_dump_format_error(tmp_path: Path) -> None:
    with pytest.raises(DumpFormatError, match="cannot be read"):
        read_header(tmp_path / "nope")


def test_v1_without_any_dumpdata_field(tmp_path: Path) -> None:
    path = tmp_path / "op"
    path.write_bytes(b"\xf8\xff\xff\x0f\x01" + bytes(3))  # field 33554431 varint, then zeros
    with pytest.raises(DumpFormatError):
        read_header(path)


@pytest.fixture(scope="module")
def valid_dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[int, bytes]:
    root = tmp_path_factory.mktemp("valid")
    rng = np.random.default_rng(1)
    out = {}
    for version in (1, 2):
        path = write_dump(
            root / f"v{version}",
            inputs=[TensorSpec(_random_array(rng, np.float16, (2, 3, 4)), format="NC1HWC0", original_shape=(2, 3))],
            outputs=[_random_array(rng, np.float32, (5,)), TensorSpec(np.ones(9, np.uint8), data_type=29)],
            op_name="mutant",
            buffers=[b"\x01\x02"],
            version=version,
        )
        out[version] = path.read_bytes()
    return out


@settings(max_examples=150, deadline=None)
@given(
    version=st.sampled_from([1, 2]),
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
    cut=st.one_of(st.none(), st.integers(0, 10**6)),
    tail=st.binary(max_size=8),
)
def test_mutated_files_only_raise_dump_format_error(
    tmp_path_factory: pytest.TempPathFactory, valid_dumps: dict[int, bytes], version, edits, cut, tail
) -> None:
    data = bytearray(valid_dumps[version])
    for pos, value in edits:
        data[pos % len(data)] = value
    if cut is not None:
        data = data[: cut % (len(data) + 1)]
    data += tail
    path = tmp_path_factory.mktemp("mut") / "op"
    path.write_bytes(bytes(data))
    for forced in (None, 1, 2):
        try:
            _read_all(path, forced)
        except DumpFormatError as exc:
            assert exc.path == str(path) and exc.problem


# ------------------------------------------------------------------------- shared cases


@pytest.mark.shared
@pytest.mark.parametrize("case, version", [("ascend_vs_caffe_npy", 2), ("ascend_v1_protobuf", 1)])
def test_shared_dumps_match_reference_convert(case: str, version: int) -> None:
    left = shared_path("cases", case, *LEAF)
    oracle = shared_path("cases", case, "oracle", "convert_left")
    expected = {p.name for p in oracle.glob("*.npy")}
    seen = set()
    for path in sorted(left.iterdir()):
        header, arrays = _read_all(path)
        assert header.version == version and header.file_size == path.stat().st_size
        assert path.name.split(".")[1] == header.op_name
        for info, got in zip(header.tensors, arrays):
            name = f"{path.name}.{info.kind}.{info.index}.npy"
            want = np.load(oracle / name)
            assert got.dtype == want.dtype and got.shape == want.shape, name
            assert got.tobytes() == want.tobytes(), name
            seen.add(name)
    assert seen == expected


def _bad(scenario: str, name: str) -> Path:
    return shared_path("cases", "bad_inputs", scenario, "left", name)


@pytest.mark.shared
def test_shared_truncated_dump() -> None:
    path = _bad("truncated_dump", "Conv2D.conv1.4.1.1700000000004805")
    size = path.stat().st_size
    with pytest.raises(DumpFormatError, match="truncated") as info:
        read_header(path)
    msg = info.value.problem
    assert "declares 70144 bytes of tensor data after byte 130" in msg
    assert f"{size}-byte file holds only {size - 130}" in msg and "(1000 missing)" in msg


@pytest.mark.shared
def test_shared_header_past_end() -> None:
    path = _bad("header_past_end", "MaxPool.pool1.5.1.1700000000006280")
    size = path.stat().st_size
    with pytest.raises(DumpFormatError) as info:
        read_header(path)
    assert f"header length {4 * size} at byte 0 points past the end of the {size}-byte file" in str(info.value)
    assert info.value.offset == 0


@pytest.mark.shared
def test_shared_garbage_dumps() -> None:
    with pytest.raises(DumpFormatError, match="header of 64 bytes at byte 8 is not a valid DumpData protobuf"):
        read_header(_bad("garbage_dump", "Eltwise.res2a.9.1.1700000000012376"))
    with pytest.raises(DumpFormatError, match="nano dump: TLV head length 6510615555426900570 at byte 0 points past the end"):
        read_header(_bad("garbage_dump", "Eltwise.res2b.12.1.1700000000016905"))


@pytest.mark.shared
def test_shared_untouched_files_in_bad_cases_still_read() -> None:
    path = _bad("truncated_dump", "MaxPool.pool1.5.1.1700000000006280")
    header, arrays = _read_all(path)
    assert header.version == 2 and [a.shape for a in arrays] == [(1, 1, 32, 32, 16), (1, 1, 16, 16, 16)]

