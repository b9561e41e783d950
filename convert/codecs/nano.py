"""Reading *nano* operator dumps (the dump of the nano / lightweight device runtime).

A nano dump is an operator dump file named like any offline dump
(``{op_type}.{op_name}.{task}.{stream}.{timestamp}``) whose tensor descriptions are a little-endian
TLV head instead of a ``DumpData`` protobuf::

    byte 0      uint64 T                    length of the TLV head
    byte 8      T bytes: the TLV head       (below)
    byte 8+T    input[0].size bytes, input[1].size bytes, ...    (input order)
    then        output[0].size bytes, ...                         (output order)

    and 8 + T + sum(input sizes) + sum(output sizes) must equal the file size exactly.

The TLV head, read front to back (tags and lengths uint32; no padding anywhere)::

    uint32 magic 0x5A5A5A5A  (so the uint32 at byte 8 of the file: how nano files are detected)
    uint32 version_id
    input section:   uint32 tag 4, uint32 length (not used), uint32 count, then per input
        int32 data_type, int32 format, int32 address_type,
        uint64 address, uint64 offset, uint64 size, uint32 sub-TLV list length (not used),
        sub-TLV tag 0 shape:          uint32 length L, then L/8 uint64 dimensions
        sub-TLV tag 1 original shape: the same layout
    output section:  uint32 tag 5, uint32 length (not used), uint32 count, then per output
        int32 data_type, format, address_type, original_index, original_data_type,
        original_format, uint64 address, offset, size, uint32 sub-TLV list length (not used),
        sub-TLV tag 0 shape, sub-TLV tag 1 original shape,
        sub-TLV tag 2 origin name:    uint32 length L, then L bytes of text

Tag policy (as the reference tool reads these files): where a section or a sub-TLV is expected,
the uint32 there is *peeked*; if it is not the expected tag -- or the head ends before it -- the
field is absent and no byte is consumed; the parse goes on with the next field at the same byte.
A head that goes on after the output section (later TLVs) is accepted; those bytes are not read.

Data types are the graph (``ge::DataType``) codes, not the ``dump_data.proto`` codes:
:class:`NanoDataType` lists them and :func:`proto_data_type` maps each to the
:class:`convert.codecs.dtypes.DataType` member of the same name (RESOURCE -> DT_RESOURCE, read as int64;
UNDEFINED 28 -> DT_UNDEFINED 0; INT4, the fp8/fp6/fp4 types ... are mapped, not "unknown" as in
the reference tool). A code no graph version defines (5, 43 and above, negative) is a
DumpFormatError at that field's byte. Format codes are kept as they are (the graph and proto
format codes agree).

Bounds (a crafted head never makes the reader allocate what a field says): T must satisfy
``8 <= T <= size - 8`` and ``T <= MAX_HEADER_BYTES`` before the head is read; a tensor count must
fit the bytes left in the head at 40 (input) / 52 (output) bytes per descriptor before the first
one is parsed; a shape of more than :data:`~convert.codecs.dumpwire.MAX_RANK` dimensions, a shape length
that is not a multiple of 8 and any field running past the end of the head are refused at their
byte. The sizes are summed with Python integers (no overflow) and checked against the file size
before any tensor is read. Every failure is a :class:`~convert.errors.DumpFormatError` whose
message starts with ``nano dump:`` and whose ``offset`` is the absolute byte of the problem.

The origin name is decoded as UTF-8 (undecodable bytes replaced, trailing NUL bytes -- a C
string's terminator -- dropped).

Why a hand-written parser: the format is a private packed C layout of the device runtime (no
schema file, no library reads it); :mod:`struct` reads its fixed fields.

:mod:`convert.codecs.dumpfile` turns a :class:`NanoDump` into the ``DumpHeader`` every reader returns;
:mod:`convert.codecs.nano_write` writes these files (tests).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Union

from ..errors import DumpFormatError
from .dtypes import DataType
from .dumpwire import MAX_HEADER_BYTES, MAX_RANK
from .exactread import pread_exact

PathLike = Union[str, "os.PathLike[str]"]

NANO_MAGIC = 0x5A5A5A5A
#: The magic is the first field of the TLV head, right after the uint64 head length.
NANO_MAGIC_OFFSET = 8
HEAD_LENGTH_BYTES = 8
#: Section tags of the TLV head.
INPUT_SECTION_TAG = 4
OUTPUT_SECTION_TAG = 5
#: Sub-TLV tags of a tensor descriptor.
SHAPE_TAG = 0
ORIGINAL_SHAPE_TAG = 1
ORIGIN_NAME_TAG = 2
#: Fixed bytes of a descriptor before its sub-TLVs (the least one can take).
INPUT_DESCRIPTOR_BYTES = 3 * 4 + 3 * 8 + 4
OUTPUT_DESCRIPTOR_BYTES = 6 * 4 + 3 * 8 + 4

_INPUT_FIXED = struct.Struct("<iiiQQQI")
_OUTPUT_FIXED = struct.Struct("<iiiiiiQQQI")
_U32 = struct.Struct("<I")


class NanoDataType(IntEnum):
    """Graph (``ge::DataType``) data-type codes, as nano dumps write them."""

    FLOAT = 0
    FLOAT16 = 1
    INT8 = 2
    INT32 = 3
    UINT8 = 4
    INT16 = 6
    UINT16 = 7
    UINT32 = 8
    INT64 = 9
    UINT64 = 10
    DOUBLE = 11
    BOOL = 12
    STRING = 13
    DUAL_SUB_INT8 = 14
    DUAL_SUB_UINT8 = 15
    COMPLEX64 = 16
    COMPLEX128 = 17
    QINT8 = 18
    QINT16 = 19
    QINT32 = 20
    QUINT8 = 21
    QUINT16 = 22
    RESOURCE = 23
    STRING_REF = 24
    DUAL = 25
    VARIANT = 26
    BF16 = 27
    UNDEFINED = 28
    INT4 = 29
    UINT1 = 30
    INT2 = 31
    UINT2 = 32
    COMPLEX32 = 33
    HIFLOAT8 = 34
    FLOAT8_E5M2 = 35
    FLOAT8_E4M3FN = 36
    FLOAT8_E8M0 = 37
    FLOAT6_E3M2 = 38
    FLOAT6_E2M3 = 39
    FLOAT4_E2M1 = 40
    FLOAT4_E1M2 = 41
    HIFLOAT4 = 42


#: Every graph code -> the proto code of the same name (``DT_`` + the graph name).
NANO_TO_PROTO: dict[NanoDataType, DataType] = {member: DataType[f"DT_{member.name}"] for member in NanoDataType}
#: The inverse (a proto code -> the graph code a nano writer stores).
PROTO_TO_NANO: dict[DataType, NanoDataType] = {proto: nano for nano, proto in NANO_TO_PROTO.items()}


class UnknownNanoDataType(ValueError):
    """A graph data-type code that no graph version defines."""


def proto_data_type(code: int) -> int:
    """The ``dump_data.proto`` code of graph data-type ``code`` (see :data:`NANO_TO_PROTO`);
    raises :class:`UnknownNanoDataType` for a code not in :class:`NanoDataType`."""
    try:
        return int(NANO_TO_PROTO[NanoDataType(code)])
    except ValueError:
        raise UnknownNanoDataType(f"graph data type code {code} is not a known ge::DataType") from None


def nano_data_type(proto_code: int) -> int:
    """The graph code of ``dump_data.proto`` code ``proto_code`` (what a nano writer stores);
    raises :class:`UnknownNanoDataType` for a proto code with no graph twin."""
    try:
        return int(PROTO_TO_NANO[DataType(proto_code)])
    except ValueError:
        raise UnknownNanoDataType(f"proto data type code {proto_code} has no ge::DataType") from None


# ----------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class NanoTensor:
    """One input or output descriptor of a nano head, as the file says it.

    ``data_type`` is the *graph* code as written (:func:`proto_data_type` maps it);
    ``device_offset`` is the descriptor's own ``offset`` field (a device-side value, unused here);
    ``data_offset`` is the absolute byte of the tensor's bytes in the file and ``size`` their count.
    ``shape`` / ``original_shape`` / ``origin_name`` are None when their sub-TLV is absent; the
    ``original_*`` integers and ``origin_name`` exist for outputs only (None for inputs).
    ``descriptor_offset`` is the absolute byte where the descriptor starts (diagnoses).
    """

    kind: str
    index: int
    data_type: int
    format: int
    address_type: int
    address: int
    device_offset: int
    size: int
    data_offset: int
    descriptor_offset: int
    shape: tuple[int, ...] | None
    original_shape: tuple[int, ...] | None
    origin_name: str | None = None
    original_index: int | None = None
    original_data_type: int | None = None
    original_format: int | None = None

    @property
    def label(self) -> str:
        """``input 0`` / ``output 1``: how messages name this tensor."""
        return f"{self.kind} {self.index}"


@dataclass(frozen=True)
class NanoHead:
    """The parsed TLV head. ``has_inputs`` / ``has_outputs`` say whether the section's tag was
    there (a missing section gives no tensors); ``parsed_bytes`` is how much of the head the
    parse used (the rest, later TLVs, is not read); ``data_end`` is ``data_start`` plus all sizes.
    """

    version_id: int
    inputs: tuple[NanoTensor, ...]
    outputs: tuple[NanoTensor, ...]
    has_inputs: bool
    has_outputs: bool
    parsed_bytes: int
    data_end: int


@dataclass(frozen=True)
class NanoDump:
    """A nano dump file's metadata: its size, the head length T and the parsed head."""

    path: Path
    file_size: int
    head_length: int
    head: NanoHead

    @property
    def inputs(self) -> tuple[NanoTensor, ...]:
        return self.head.inputs

    @property
    def outputs(self) -> tuple[NanoTensor, ...]:
        return self.head.outputs


# ----------------------------------------------------------------------------------- parsing


class _Cursor:
    """Sequential little-endian reads in the head bytes; ``base`` is the head's byte in the file.
    A read past the end raises the DumpFormatError naming the field and its byte."""

    def __init__(self, path: Path, data: bytes, base: int) -> None:
        self.path = path
        self.data = data
        self.base = base
        self.pos = 0

    @property
    def here(self) -> int:
        """Absolute file offset of the next byte."""
        return self.base + self.pos

    @property
    def left(self) -> int:
        return len(self.data) - self.pos

    def fail(self, problem: str, at: int | None = None) -> DumpFormatError:
        return DumpFormatError(self.path, f"nano dump: {problem}", offset=self.here if at is None else at)

    def need(self, count: int, what: str) -> None:
        if count > self.left:
            head = f"the TLV head ({len(self.data)} bytes at byte {self.base})"
            raise self.fail(f"{head} ends within {what} ({count} bytes at byte {self.here}, {self.left} left)")

    def unpack(self, layout: struct.Struct, what: str) -> tuple[int, ...]:
        self.need(layout.size, what)
        values = layout.unpack_from(self.data, self.pos)
        self.pos += layout.size
        return values

    def u32(self, what: str) -> int:
        return self.unpack(_U32, what)[0]

    def peek_tag(self, tag: int) -> bool:
        """Whether the next uint32 is ``tag`` (False at the end of the head); consumes it if so."""
        if self.left < _U32.size or _U32.unpack_from(self.data, self.pos)[0] != tag:
            return False
        self.pos += _U32.size
        return True

    def take(self, count: int, what: str) -> bytes:
        self.need(count, what)
        piece = self.data[self.pos : self.pos + count]
        self.pos += count
        return piece


def _dims(cur: _Cursor, tag: int, what: str) -> tuple[int, ...] | None:
    """A shape sub-TLV (``tag``, uint32 L, L/8 uint64 dims), or None when its tag is absent."""
    start = cur.here
    if not cur.peek_tag(tag):
        return None
    length = cur.u32(f"the length of {what}")
    if length % 8:
        raise cur.fail(f"{what} at byte {start} has length {length}, not a multiple of 8 (uint64 dimensions)", start)
    rank = length // 8
    if rank > MAX_RANK:
        problem = f"{what} at byte {start} has {rank} dimensions (more than {MAX_RANK}): not a tensor shape"
        raise cur.fail(problem, start)
    raw = cur.take(length, what)
    return struct.unpack(f"<{rank}Q", raw)


def _origin_name(cur: _Cursor, what: str) -> str | None:
    if not cur.peek_tag(ORIGIN_NAME_TAG):
        return None
    length = cur.u32(f"the length of {what}")
    return cur.take(length, what).decode("utf-8", errors="replace").rstrip("\x00")


def _count(cur: _Cursor, kind: str, each: int) -> int:
    at = cur.here
    count = cur.u32(f"the {kind} count")
    room = cur.left // each
    if count > room:
        raise cur.fail(
            f"{kind} count {count} at byte {at}: the {cur.left} bytes left in the TLV head hold at most "
            f"{room} {kind} descriptors of at least {each} bytes",
            at,
        )
    return count


def _data_type(cur: _Cursor, code: int, what: str, at: int) -> int:
    try:
        NanoDataType(code)
    except ValueError:
        problem = f"{what} has data type code {code}, which is not a graph (ge::DataType) code (known: 0-4, 6-42)"
        raise cur.fail(problem, at) from None
    return code


def parse_head(
    path: PathLike, data: bytes, *, base: int = HEAD_LENGTH_BYTES, data_start: int | None = None
) -> NanoHead:
    """Parse the TLV head ``data`` (found at byte ``base`` of the file) -- see the module doc.

    ``data_start`` (default ``base + len(data)``) is where the first tensor's bytes start; the
    tensors' ``data_offset`` follow from it and their sizes. Raises DumpFormatError.
    """
    cur = _Cursor(Path(path), bytes(data), base)
    at = cur.here
    magic = cur.u32("the magic")
    if magic != NANO_MAGIC:
        raise cur.fail(f"magic at byte {at} is 0x{magic:08X}, not 0x{NANO_MAGIC:08X}", at)
    version_id = cur.u32("the version id")
    cursor = base + len(cur.data) if data_start is None else data_start

    inputs: list[NanoTensor] = []
    has_inputs = cur.peek_tag(INPUT_SECTION_TAG)
    if has_inputs:
        cur.u32("the input section length")
        for i in range(_count(cur, "input", INPUT_DESCRIPTOR_BYTES)):
            start = cur.here
            what = f"input {i}"
            dt, fmt, atype, addr, dev_off, size, _ = cur.unpack(_INPUT_FIXED, f"the descriptor of {what}")
            _data_type(cur, dt, what, start)
            shape = _dims(cur, SHAPE_TAG, f"the shape of {what}")
            original = _dims(cur, ORIGINAL_SHAPE_TAG, f"the original shape of {what}")
            inputs.append(NanoTensor(
                kind="input", index=i, data_type=dt, format=fmt, address_type=atype, address=addr,
                device_offset=dev_off, size=size, data_offset=cursor, descriptor_offset=start,
                shape=shape, original_shape=original,
            ))
            cursor += size

    outputs: list[NanoTensor] = []
    has_outputs = cur.peek_tag(OUTPUT_SECTION_TAG)
    if has_outputs:
        cur.u32("the output section length")
        for i in range(_count(cur, "output", OUTPUT_DESCRIPTOR_BYTES)):
            start = cur.here
            what = f"output {i}"
            fields = cur.unpack(_OUTPUT_FIXED, f"the descriptor of {what}")
            dt, fmt, atype, orig_index, orig_dt, orig_fmt, addr, dev_off, size, _ = fields
            _data_type(cur, dt, what, start)
            shape = _dims(cur, SHAPE_TAG, f"the shape of {what}")
            original = _dims(cur, ORIGINAL_SHAPE_TAG, f"the original shape of {what}")
            name = _origin_name(cur, f"the origin name of {what}")
            outputs.append(NanoTensor(
                kind="output", index=i, data_type=dt, format=fmt, address_type=atype, address=addr,
                device_offset=dev_off, size=size, data_offset=cursor, descriptor_offset=start,
                shape=shape, original_shape=original, origin_name=name, original_index=orig_index,
                original_data_type=orig_dt, original_format=orig_fmt,
            ))
            cursor += size
    return NanoHead(
        version_id=version_id, inputs=tuple(inputs), outputs=tuple(outputs), has_inputs=has_inputs,
        has_outputs=has_outputs, parsed_bytes=cur.pos, data_end=cursor,
    )


def is_nano(first_bytes: bytes, file_size: int) -> bool:
    """Whether a file of ``file_size`` bytes starting with ``first_bytes`` is a nano dump: more
    than 12 bytes and the uint32 at byte 8 is :data:`NANO_MAGIC` (whatever the dump version)."""
    end = NANO_MAGIC_OFFSET + 4
    if file_size <= end or len(first_bytes) < end:
        return False
    return _U32.unpack_from(first_bytes, NANO_MAGIC_OFFSET)[0] == NANO_MAGIC


def read_nano_fd(path: Path, fd: int, size: int) -> NanoDump:
    """Read the nano dump open as ``fd`` (``size`` bytes): head length checks, the head, the size
    check (see the module doc). Reads bytes ``0 .. 8+T`` only."""
    if size < HEAD_LENGTH_BYTES + 8:
        problem = f"nano dump: file has {size} bytes, too short for a head length and magic"
        raise DumpFormatError(path, problem, offset=0)
    (length,) = struct.unpack("<Q", pread_exact(path, fd, 0, HEAD_LENGTH_BYTES, label="nano dump: "))
    if length < 8:
        problem = f"nano dump: TLV head length {length} at byte 0 is less than the 8 bytes of its magic and version"
        raise DumpFormatError(path, problem, offset=0)
    if length > size - HEAD_LENGTH_BYTES:
        problem = f"nano dump: TLV head length {length} at byte 0 points past the end of the {size}-byte file"
        raise DumpFormatError(path, problem, offset=0)
    if length > MAX_HEADER_BYTES:
        problem = (f"nano dump: TLV head length {length} at byte 0 is more than the {MAX_HEADER_BYTES} bytes a dump "
                   "header may take")
        raise DumpFormatError(path, problem, offset=0)
    data_start = HEAD_LENGTH_BYTES + length
    raw = pread_exact(path, fd, HEAD_LENGTH_BYTES, length, label="nano dump: ")
    head = parse_head(path, raw, base=HEAD_LENGTH_BYTES, data_start=data_start)
    declared, present = head.data_end - data_start, size - data_start
    if head.data_end > size:
        problem = (
            f"nano dump: truncated: the TLV head declares {declared} bytes of tensor data after byte "
            f"{data_start}, but the {size}-byte file holds only {present} ({declared - present} missing)"
        )
        raise DumpFormatError(path, problem, offset=size)
    if head.data_end < size:
        problem = (
            f"nano dump: {size - head.data_end} unexpected extra bytes after the declared tensor data "
            f"(the TLV head declares {declared} bytes after byte {data_start}; the file has {size})"
        )
        raise DumpFormatError(path, problem, offset=head.data_end)
    return NanoDump(path=path, file_size=size, head_length=length, head=head)


def read_nano(path: PathLike) -> NanoDump:
    """Read a nano dump's metadata (not its tensor data); DumpFormatError for a malformed one."""
    path = path if isinstance(path, Path) else Path(path)
    try:
        with open(path, "rb") as f:
            return read_nano_fd(path, f.fileno(), os.fstat(f.fileno()).st_size)
    except OSError as exc:
        raise DumpFormatError(path, f"cannot be read ({exc.strerror or exc})") from None


__all__ = [
    "NANO_MAGIC",
    "NANO_TO_PROTO",
    "NanoDataType",
    "NanoDump",
    "NanoHead",
    "NanoTensor",
    "UnknownNanoDataType",
    "is_nano",
    "nano_data_type",
    "parse_head",
    "proto_data_type",
    "read_nano",
    "read_nano_fd",
]
