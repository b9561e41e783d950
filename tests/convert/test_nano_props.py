"""Property tests of the nano reader: any head parses or raises DumpFormatError (never another
exception, never an allocation a field asks for), and written files read back identically."""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from convert.codecs.dumpfile import read_header, read_tensor
from convert.codecs.nano import NANO_MAGIC, NanoHead, parse_head, read_nano
from convert.codecs.nano_write import NanoTensorSpec, nano_head, write_nano
from convert.errors import DumpFormatError

NAME = "Add.add1.2.1.1700000000000042"
_MAGIC = struct.pack("<II", NANO_MAGIC, 0)

#: A u32 that is a plausible tag, count or length, or an absurd one.
_u32 = st.one_of(st.integers(0, 8), st.integers(0, 2**32 - 1), st.sampled_from([2**32 - 1, 2**31, 8 * 257]))


@st.composite
def _structured_heads(draw: st.DrawFn) -> bytes:
    """Heads built from the format's pieces, each field drawn plausible or absurd."""
    parts = [_MAGIC]
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["u32", "u64", "i32", "tag", "bytes"]))
        if kind == "u32":
            parts.append(struct.pack("<I", draw(_u32)))
        elif kind == "u64":
            parts.append(struct.pack("<Q", draw(st.integers(0, 2**64 - 1))))
        elif kind == "i32":
            parts.append(struct.pack("<i", draw(st.integers(-(2**31), 2**31 - 1))))
        elif kind == "tag":
            parts.append(struct.pack("<I", draw(st.integers(0, 5))))
        else:
            parts.append(draw(st.binary(max_size=24)))
    return b"".join(parts)


@st.composite
def _mutated_heads(draw: st.DrawFn) -> bytes:
    """A real head with some of its bytes overwritten and possibly cut short."""
    arrays = [np.arange(draw(st.integers(0, 5)), dtype=np.float32) for _ in range(draw(st.integers(0, 3)))]
    outputs = [NanoTensorSpec(a, original_shape=a.shape, origin_name=draw(st.text(max_size=5))) for a in arrays]
    head, _ = nano_head(inputs=arrays, outputs=outputs)
    data = bytearray(head)
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(8, len(data) - 1))
        value = draw(st.sampled_from([0, 1, 2, 4, 5, 0xFF, 0x7F]))
        data[at] = value
    return bytes(data[: draw(st.integers(8, len(data)))])


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(head=st.one_of(_structured_heads(), _mutated_heads(), st.binary(max_size=200).map(lambda b: _MAGIC + b)))
def test_any_head_parses_or_is_a_diagnosis(head: bytes) -> None:
    try:
        parsed = parse_head(Path(NAME), head)
    except DumpFormatError as exc:
        assert exc.problem.startswith("nano dump: ") and 8 <= exc.offset <= 8 + len(head)
    else:
        assert isinstance(parsed, NanoHead) and parsed.parsed_bytes <= len(head)
        assert parsed.data_end == 8 + len(head) + sum(t.size for t in parsed.inputs + parsed.outputs)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(head=st.one_of(_structured_heads(), _mutated_heads()), data=st.binary(max_size=64))
def test_any_file_reads_or_is_a_diagnosis_tensor_by_tensor(head: bytes, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / NAME
        path.write_bytes(struct.pack("<Q", len(head)) + head + data)
        try:
            header = read_header(path)
        except DumpFormatError as exc:
            assert str(path) in str(exc) and exc.offset is not None
            return
        for info in header.tensors:
            try:
                array = read_tensor(header, info)
            except DumpFormatError as exc:
                assert exc.offset == info.offset
            else:
                assert array.shape == info.shape


_DTYPES = st.sampled_from([np.float16, np.float32, np.float64, np.int8, np.int32, np.uint16, np.int64, np.bool_])
_ARRAYS = _DTYPES.flatmap(lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)))


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(inputs=st.lists(_ARRAYS, max_size=3), outputs=st.lists(_ARRAYS, max_size=3),
       names=st.lists(st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"])),
                      min_size=3, max_size=3))
def test_write_then_read_is_identical(inputs: list[np.ndarray], outputs: list[np.ndarray], names: list[str]) -> None:
    specs = [NanoTensorSpec(a, original_shape=a.shape[::-1], origin_name=n) for a, n in zip(outputs, names)]
    with tempfile.TemporaryDirectory() as tmp:
        path = write_nano(Path(tmp) / NAME, inputs=inputs, outputs=specs)
        header = read_header(path)

        dump = read_nano(path)
        assert [t.origin_name for t in dump.outputs] == names[: len(outputs)]
        for info, expected in zip(header.tensors, inputs + outputs):
            got = read_tensor(header, info)
            assert got.dtype == expected.dtype and got.shape == expected.shape
            assert got.tobytes() == np.ascontiguousarray(expected).tobytes()
        assert [t.original_shape for t in header.outputs] == [a.shape[::-1] for a in outputs]
