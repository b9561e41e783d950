"""Reading Ascend operator dump files (``{op_type}.{op_name}.{task}...{timestamp}``).

Two layouts exist; both carry one ``DumpData`` message (:mod:`convert.codecs.dump_proto`).

Version 2, "big dump" (the default of the dump tools)::

    byte 0      uint64 H, little-endian
    byte 8      H bytes: serialized DumpData; every ``data`` field empty, ``size`` fields set
    byte 8+H    input[0].size bytes, input[1].size bytes, ...   (input order)
    then        output[0].size bytes, ...                        (output order)
    then        buffer[0].size bytes, ..., then space[0].size bytes, ...

    and 8 + H + (sum of all sizes) must equal the file size exactly.

Version 1, pure protobuf: the whole file is one serialized DumpData and the tensor bytes are the
``data`` fields of ``OpInput`` (field 4) / ``OpOutput`` (field 5). The reader walks the
protobuf wire format of the top-level message (:mod:`convert.codecs.dumpwire`) to find where each
``data`` value starts in the file, so that :func:`read_tensor` reads one tensor at its offset like
for version 2; the rest of the message (with the ``data`` values cut out) is decoded by the
protobuf runtime.

Auto-detection (``version=None``), per file:

1. A file of more than 12 bytes whose uint32 at byte 8 is ``0x5A5A5A5A`` is a *nano* dump
   (:mod:`convert.codecs.nano`), whatever the version asked for. Its header has ``version`` 3
   (:data:`NANO_VERSION`), ``header_length`` the TLV head length T, the graph data-type codes
   mapped to proto codes, the op name from the file name (field 1; nano heads carry none) and
   ``dump_time`` 0; the tensor policy below applies as to the other layouts.
2. Version 2 if ``0 < H <= size - 8``, the H header bytes decode as DumpData and the declared
   sizes add up to the file size.
3. Otherwise version 1, if the whole file decodes as a DumpData with at least one known field.
4. Otherwise the version-2 diagnosis is raised. If the version-2 header decoded (only the sizes
   disagree) it is raised alone ("truncated: ..."); otherwise it also says why the file is not
   a version-1 dump either.

Policy on odd tensors:

* A tensor with no ``shape`` submessage and ``size > 0`` gets ``has_shape=False`` and the shape
  ``(size // itemsize,)`` (``(8*size,)`` for UINT1; ``(size,)`` for undecodable types). The
  reference tool uses ``(size,)`` -- a byte count -- and then fails to reshape; an element count
  is what the data actually holds. With no shape and no data the shape is ``(0,)``.
* For version 1, ``TensorInfo.size`` is the length of the ``data`` value actually present (the
  declared ``size`` field is not trusted); for version 2 it is the declared ``size``.
* Tensors with an undecodable data type (``DT_STRING`` ...) are listed; :func:`read_tensor`
  raises for them.

Size limits (bounded cost for crafted files, :mod:`convert.codecs.dumpwire`): more than
:data:`~convert.codecs.dumpwire.MAX_TOP_LEVEL_FIELDS` top-level fields (v1 file or v2 header), more than
:data:`~convert.codecs.dumpwire.MAX_TENSOR_FIELDS` fields in one v1 element, or a shape of more than
:data:`~convert.codecs.dumpwire.MAX_RANK` dimensions is refused, at the offending field's byte.

Lengths read from the file (policy: checked before anything is allocated or read, so that what a
reader allocates is bounded by what the file holds *and* by a sane bound, whatever the length
fields say -- a 64 GiB sparse file costs what a small one does):

* the version-2 header length H must satisfy ``0 < H <= size - 8`` and
  ``H <= MAX_HEADER_BYTES`` (:data:`~convert.codecs.dumpwire.MAX_HEADER_BYTES`, 64 MiB); a header of
  more than :data:`WALK_IN_FILE_BYTES` is walked in the file (:class:`~convert.codecs.dumpwire.FileWindow`)
  before it is read, so a header of zeros or garbage is refused after a few bytes;
* a version-1 file is walked in the file, never mapped or read whole; every field's length is
  checked against the end of its message, and the metadata copied (everything but the tensor
  data) against ``MAX_HEADER_BYTES``;
* tensor data: see :func:`read_tensor` (shape x itemsize against the bytes the dump holds for it and
  the file's size; a tensor the process cannot hold in memory is a DumpFormatError too).

Every failure is a :class:`convert.errors.DumpFormatError` whose message is the diagnosis and
whose ``offset`` is the byte where the problem is.

Writing dump files is :mod:`convert.codecs.dumpwrite`.
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Union

import numpy as np
from google.protobuf.message import DecodeError, Message

from . import dump_proto, nano
from .dtypes import (
    UnsupportedDataType,
    count_for_nbytes,
    data_type_label,
    decode,
    dtype_name,
    element_count,
    format_name,
    numpy_dtype,
    stored_nbytes,
)
from .dumpwire import (
    DUMP_BUFFER,
    DUMP_INPUT,
    DUMP_OUTPUT,
    DUMP_SPACE,
    MAX_HEADER_BYTES,
    MAX_RANK,
    MAX_TENSOR_FIELDS,
    MAX_TOP_LEVEL_FIELDS,
    TOP_LEVEL_NAMES,
    FileWindow,
    WireError,
    WireField,
    strip_data,
    walk_fields,
)
from ..errors import DumpFormatError
from .exactread import pread_exact

PathLike = Union[str, "os.PathLike[str]"]

HEADER_LENGTH_BYTES = 8
#: Dimensions at or above this are negative int64 values written into the uint64 ``Shape.dim``.
_INT64_SIGN = 1 << 63
NANO_MAGIC = nano.NANO_MAGIC
NANO_MAGIC_OFFSET = nano.NANO_MAGIC_OFFSET
#: ``DumpHeader.version`` of a nano dump.
NANO_VERSION = 3


# ----------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class TensorInfo:
    """Metadata of one input or output tensor of a dump.

    ``offset`` is the absolute byte offset of the tensor's data in the file and ``size`` its
    byte count (for both layouts). ``original_shape`` is ``()`` when the dump has none.
    ``has_shape`` is False when the dump recorded no shape (see the module policy).
    """

    kind: str
    index: int
    data_type: int
    format: int
    shape: tuple[int, ...]
    original_shape: tuple[int, ...]
    size: int
    offset: int
    address: int = 0
    sub_format: int = 0
    has_shape: bool = True

    @property
    def dtype_name(self) -> str:
        """numpy-style data-type name (``float16``, ``bfloat16``, ``DT_STRING`` ...)."""
        return dtype_name(self.data_type)

    @property
    def format_name(self) -> str:
        """Layout name (``NC1HWC0``, ``FRACTAL_Z``, ``ND`` ...)."""
        return format_name(self.format)

    @property
    def label(self) -> str:
        """``input 0`` / ``output 1``: how messages name this tensor."""
        return f"{self.kind} {self.index}"


@dataclass(frozen=True)
class DumpHeader:
    """Everything a dump file says except the tensor bytes.

    ``version`` is 1 (pure protobuf), 2 (binary) or 3 (nano, :data:`NANO_VERSION`);
    ``header_length`` is H for version 2, T (the TLV head) for nano and 0 for version 1.
    ``buffers`` and ``spaces`` are ``(offset, size)`` pairs; ``attrs`` the ``(name, value)`` pairs
    of ``DumpData.attr`` (none for nano).
    """

    path: Path
    version: int
    file_size: int
    header_length: int
    op_name: str
    dump_time: int
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    buffers: tuple[tuple[int, int], ...] = ()
    spaces: tuple[tuple[int, int], ...] = ()
    attrs: tuple[tuple[str, str], ...] = ()

    @property
    def tensors(self) -> tuple[TensorInfo, ...]:
        """Inputs then outputs."""
        return self.inputs + self.outputs




# ---------------------------------------------------------------------------------- reading


def _tensor_info(kind: str, index: int, msg: Message, offset: int, size: int) -> TensorInfo:
    has_shape = msg.HasField("shape")
    code = int(msg.data_type)
    if has_shape:
        shape = tuple(int(d) for d in msg.shape.dim)
    else:
        shape = (_elements_in(code, size),)
    original = ()
    if msg.HasField("original_shape"):
        original = tuple(int(d) for d in msg.original_shape.dim)
    return TensorInfo(
        kind=kind,
        index=index,
        data_type=code,
        format=int(msg.format),
        shape=shape,
        original_shape=original,
        size=int(size),
        offset=int(offset),
        address=int(msg.address),
        sub_format=int(msg.sub_format),
        has_shape=has_shape,
    )


def _elements_in(code: int, size: int) -> int:
    try:
        return count_for_nbytes(code, size)
    except UnsupportedDataType:
        return size


def _undecodable_part(parts: Sequence[tuple[int, int, bytes]]) -> tuple[str, int] | None:
    """(description, file offset) of the first top-level field that does not decode alone."""
    seen: dict[int, int] = {}
    for number, offset, piece in parts:
        index = seen.get(number, 0)
        seen[number] = index + 1
        try:
            dump_proto.DumpData.FromString(piece)
        except DecodeError:
            name = TOP_LEVEL_NAMES.get(number, f"field {number}")
            if number in (3, 4, 5, 7, 8):
                name = f"{name} {index}"
            why = "is not valid UTF-8" if number in (1, 6) else "does not decode"
            return f"its {name} at byte {offset} {why}", offset
    return None


def _decode_dump_data(
    path: Path, what: str, parts: Sequence[tuple[int, int, bytes]], offset: int
) -> Message:
    """Decode the concatenated ``parts`` as DumpData or raise a DumpFormatError saying where."""
    try:
        return dump_proto.DumpData.FromString(b"".join(piece for _, _, piece in parts))
    except DecodeError as exc:
        detail, where = str(exc) or "decode error", offset
        located = _undecodable_part(parts)
        if located is not None:
            detail, where = located
        problem = f"{what} is not a valid DumpData protobuf ({detail})"
        raise DumpFormatError(path, problem, offset=where) from None


#: Headers shorter than this are decoded by the protobuf runtime directly (no field walk first):
#: they cannot hold more than MAX_TENSOR_FIELDS fields of 2 bytes in one message, nor
#: MAX_TOP_LEVEL_FIELDS, so the walk's limits cannot be reached and decoding them is bounded.
SMALL_HEADER_BYTES = 2 * min(MAX_TENSOR_FIELDS, MAX_TOP_LEVEL_FIELDS)


def _decode_small(data: bytes) -> Message | None:
    """The DumpData of a small header (see SMALL_HEADER_BYTES) when it decodes as it is; None
    otherwise -- then the field walk decodes it and diagnoses what is wrong, byte by byte. (A
    dump of many small tensors spends most of its header time in that walk.)"""
    if len(data) >= SMALL_HEADER_BYTES:
        return None
    try:
        return dump_proto.DumpData.FromString(data)
    except DecodeError:
        return None


def _header_fields(path: Path, buf: object, start: int, end: int, base: int, what: str) -> list[WireField]:
    """Top-level fields of a version-2 header at ``buf[start:end]`` (``base + offset`` is where a
    byte of ``buf`` is in the file), or the wire-format diagnosis."""
    try:
        return list(walk_fields(buf, start, end, MAX_TOP_LEVEL_FIELDS, "the DumpData message: top-level"))
    except WireError as wire:
        where = base + wire.offset
        problem = f"{what} is not a valid DumpData protobuf ({wire.problem} at byte {where})"
        raise DumpFormatError(path, problem, offset=where) from None


def _header_parts(path: Path, data: bytes, what: str, offset: int) -> list[tuple[int, int, bytes]]:
    """Top-level fields of a version-2 header (file offsets), or the wire-format diagnosis."""
    fields = _header_fields(path, data, 0, len(data), offset, what)
    return [(f.number, offset + f.start, data[f.start : f.end]) for f in fields]


def _assemble(
    path: Path,
    version: int,
    file_size: int,
    header_length: int,
    msg: Message,
    spans: dict[int, list[tuple[int, int]]],
) -> DumpHeader:
    _check_ranks(path, msg, spans)
    inputs = tuple(
        _tensor_info("input", i, m, *spans[DUMP_INPUT][i]) for i, m in enumerate(msg.input)
    )
    outputs = tuple(
        _tensor_info("output", i, m, *spans[DUMP_OUTPUT][i]) for i, m in enumerate(msg.output)
    )
    return DumpHeader(
        path=path,
        version=version,
        file_size=file_size,
        header_length=header_length,
        op_name=msg.op_name,
        dump_time=int(msg.dump_time),
        inputs=inputs,
        outputs=outputs,
        buffers=tuple(spans[DUMP_BUFFER]),
        spaces=tuple(spans[DUMP_SPACE]),
        attrs=tuple((a.name, a.value) for a in msg.attr),
    )


def _check_ranks(path: Path, msg: Message, spans: dict[int, list[tuple[int, int]]]) -> None:
    """Refuse a shape of more than :data:`MAX_RANK` dimensions (offset: that tensor's data)."""
    for kind, field, items in (("input", DUMP_INPUT, msg.input), ("output", DUMP_OUTPUT, msg.output)):
        for i, item in enumerate(items):
            for shape_name, shape in (("shape", item.shape), ("original_shape", item.original_shape)):
                rank = len(shape.dim)
                if rank > MAX_RANK:
                    problem = (
                        f"{kind} {i}: its {shape_name} has {rank} dimensions (more than {MAX_RANK}): "
                        "not a tensor shape"
                    )
                    raise DumpFormatError(path, problem, offset=spans[field][i][0])


class _V2Failure(Exception):
    """A version-2 read failed; ``header_decoded`` says whether only the sizes disagree."""

    def __init__(self, error: DumpFormatError, header_decoded: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.header_decoded = header_decoded


#: Version-2 headers longer than this are walked in the file (:class:`FileWindow`) before they
#: are read: a header length that points over a hole or garbage is refused after a few bytes.
WALK_IN_FILE_BYTES = 1 << 20


def _read_v2(path: Path, f: BinaryIO, size: int) -> DumpHeader:
    """Version-2 header; reads only bytes ``0 .. 8+H``, after checking H (see the module's length
    policy). Raises :class:`_V2Failure`."""
    if size < HEADER_LENGTH_BYTES:
        need = f"the {HEADER_LENGTH_BYTES}-byte header length"
        problem = f"file has {size} bytes, too short for {need}"
        raise _V2Failure(DumpFormatError(path, problem, offset=0), False)
    fd = f.fileno()
    (hlen,) = struct.unpack("<Q", pread_exact(path, fd, 0, HEADER_LENGTH_BYTES))
    if hlen == 0:
        problem = "header length at byte 0 is 0 (no DumpData header)"
        raise _V2Failure(DumpFormatError(path, problem, offset=0), False)
    if hlen > size - HEADER_LENGTH_BYTES:
        problem = f"header length {hlen} at byte 0 points past the end of the {size}-byte file"
        raise _V2Failure(DumpFormatError(path, problem, offset=0), False)
    if hlen > MAX_HEADER_BYTES:
        problem = (
            f"header length {hlen} at byte 0 is more than the {MAX_HEADER_BYTES} bytes a dump header may "
            f"take (the file has {size} bytes)"
        )
        raise _V2Failure(DumpFormatError(path, problem, offset=0), False)
    data_start = HEADER_LENGTH_BYTES + hlen
    what = f"header of {hlen} bytes at byte {HEADER_LENGTH_BYTES}"
    try:
        if hlen > WALK_IN_FILE_BYTES:
            _header_fields(path, FileWindow(fd, size), HEADER_LENGTH_BYTES, data_start, 0, what)
        data = pread_exact(path, fd, HEADER_LENGTH_BYTES, hlen)
        msg = _decode_small(data)
        if msg is None:
            parts = _header_parts(path, data, what, HEADER_LENGTH_BYTES)
            msg = _decode_dump_data(path, what, parts, HEADER_LENGTH_BYTES)
    except DumpFormatError as exc:
        raise _V2Failure(exc, False) from None
    spans, cursor = _v2_spans(msg, data_start)
    _check_v2_size(path, size, data_start, cursor)
    return _assemble(path, 2, size, hlen, msg, spans)


def _v2_spans(msg: Message, data_start: int) -> tuple[dict[int, list[tuple[int, int]]], int]:
    """(offset, size) of every data block, laid out inputs, outputs, buffers, spaces."""
    cursor = data_start
    spans: dict[int, list[tuple[int, int]]] = {}
    for field, items in (
        (DUMP_INPUT, msg.input),
        (DUMP_OUTPUT, msg.output),
        (DUMP_BUFFER, msg.buffer),
        (DUMP_SPACE, msg.space),
    ):
        spans[field] = []
        for item in items:
            spans[field].append((cursor, int(item.size)))
            cursor += int(item.size)
    return spans, cursor


def _check_v2_size(path: Path, size: int, data_start: int, data_end: int) -> None:
    declared, present = data_end - data_start, size - data_start
    if size < data_end:
        problem = (
            f"truncated: the header declares {declared} bytes of tensor data after byte "
            f"{data_start}, but the {size}-byte file holds only {present} "
            f"({declared - present} missing)"
        )
        raise _V2Failure(DumpFormatError(path, problem, offset=size), True)
    if size > data_end:
        problem = (
            f"{size - data_end} unexpected extra bytes after the declared tensor data "
            f"(the header declares {declared} bytes after byte {data_start}; the file has {size})"
        )
        raise _V2Failure(DumpFormatError(path, problem, offset=data_end), True)


def _read_v1(path: Path, f: BinaryIO, size: int) -> DumpHeader:
    """Version-1 header: walk the whole message in the file (read through a small window, never
    mapped or read whole), decode it without its data values."""
    try:
        stripped = strip_data(FileWindow(f.fileno(), size), 0, size)
    except WireError as wire:
        detail = f"{wire.problem} at byte {wire.offset}"
        problem = f"the file is not a valid DumpData protobuf ({detail})"
        raise DumpFormatError(path, problem, offset=wire.offset) from None
    if not stripped.has_known_field:
        problem = "the file is not a DumpData protobuf (none of the DumpData fields 1-8 is present)"
        raise DumpFormatError(path, problem, offset=0)
    msg = _decode_dump_data(path, "the file", stripped.parts, 0)
    return _assemble(path, 1, size, 0, msg, stripped.spans)


def _nano_header(path: Path, f: BinaryIO, size: int) -> DumpHeader | None:
    """The header of a nano dump (:mod:`convert.codecs.nano`), or None when the file is not one."""
    if not nano.is_nano(os.pread(f.fileno(), NANO_MAGIC_OFFSET + 4, 0), size):
        return None
    dump = nano.read_nano_fd(path, f.fileno(), size)
    return DumpHeader(
        path=path,
        version=NANO_VERSION,
        file_size=size,
        header_length=dump.head_length,
        op_name=_op_name_of_file(path.name),
        dump_time=0,
        inputs=tuple(_nano_tensor_info(t) for t in dump.inputs),
        outputs=tuple(_nano_tensor_info(t) for t in dump.outputs),
    )


def _op_name_of_file(name: str) -> str:
    """Field 1 of an offline dump file name (``Type.Name.task...``), or ``''`` when there is none.
    (The reference tool takes field 4, the timestamp, for nano dumps: a bug.)"""
    fields = name.split(".")
    return fields[1] if len(fields) > 1 else ""


def _nano_tensor_info(tensor: nano.NanoTensor) -> TensorInfo:
    """A nano descriptor as a TensorInfo: proto data-type code; a missing shape sub-TLV gives
    ``has_shape=False`` and the element count of its bytes (the module's policy)."""
    code = nano.proto_data_type(tensor.data_type)
    has_shape = tensor.shape is not None
    shape = tensor.shape if tensor.shape is not None else (_elements_in(code, tensor.size),)
    return TensorInfo(
        kind=tensor.kind,
        index=tensor.index,
        data_type=code,
        format=tensor.format,
        shape=shape,
        original_shape=tensor.original_shape or (),
        size=tensor.size,
        offset=tensor.data_offset,
        address=tensor.address,
        has_shape=has_shape,
    )


def read_header(path: PathLike, version: int | None = None) -> DumpHeader:
    """Read a dump file's metadata (not its tensor data); see the module doc for the layouts.

    ``version`` forces a layout (1 pure protobuf, 2 binary); ``None`` detects it per file. A nano
    dump is read as such whatever ``version`` says (:mod:`convert.codecs.nano`).
    Raises :class:`DumpFormatError` with the diagnosis for every malformed file.
    """
    if version not in (None, 1, 2):
        raise ValueError(f"dump version must be 1, 2 or None (auto), not {version!r}")
    path = path if isinstance(path, Path) else Path(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                raise DumpFormatError(path, "empty file (0 bytes)", offset=0)
            if version != 1:
                quick = _quick_v2(path, f, size)
                if quick is not None:
                    return quick
            nano_header = _nano_header(path, f, size)
            if nano_header is not None:
                return nano_header
            return _read_any(path, f, size, version)
    except OSError as exc:
        raise DumpFormatError(path, f"cannot be read ({exc.strerror or exc})") from None


#: Bytes read at once from the start of a dump by :func:`_quick_v2`: a header of a few tensors
#: takes ~100 bytes; a longer one (more than ~40 tensors) goes to the full reader.
QUICK_READ_BYTES = 4096


def _quick_v2(path: Path, f: BinaryIO, size: int) -> DumpHeader | None:
    """A version-2 dump whose header is small and sound, from one read of its first bytes; None
    for anything else (a nano dump, a long or undecodable header, sizes that do not add up):
    then the full reader diagnoses it. A dump of many small tensors spends its header time in
    system calls; this reads each file once instead of four times."""
    head = os.pread(f.fileno(), min(size, QUICK_READ_BYTES), 0)
    if len(head) < HEADER_LENGTH_BYTES + 4:
        return None
    if int.from_bytes(head[NANO_MAGIC_OFFSET : NANO_MAGIC_OFFSET + 4], "little") == NANO_MAGIC:
        return None
    hlen = int.from_bytes(head[:HEADER_LENGTH_BYTES], "little")
    if hlen == 0 or HEADER_LENGTH_BYTES + hlen > len(head):
        return None
    msg = _decode_small(head[HEADER_LENGTH_BYTES : HEADER_LENGTH_BYTES + hlen])
    if msg is None:
        return None
    data_start = HEADER_LENGTH_BYTES + hlen
    spans, cursor = _v2_spans(msg, data_start)
    if cursor != size:
        return None
    return _assemble(path, 2, size, hlen, msg, spans)


def _read_any(path: Path, f: BinaryIO, size: int, version: int | None) -> DumpHeader:
    if version == 1:
        return _read_v1(path, f, size)
    try:
        return _read_v2(path, f, size)
    except _V2Failure as v2:
        if version == 2:
            raise v2.error from None
        failure = v2
    try:
        return _read_v1(path, f, size)
    except DumpFormatError as v1:
        if failure.header_decoded:
            raise failure.error from None
        problem = f"{failure.error.problem}; as a pure-protobuf (v1) dump: {v1.problem}"
        raise DumpFormatError(path, problem, offset=failure.error.offset) from None


# ------------------------------------------------------------------------------ tensor data


def read_tensor(header: DumpHeader, info: TensorInfo) -> np.ndarray:
    """Decode one tensor of ``header`` into an array of ``info.shape`` (native dtype).

    Only the bytes the shape needs are read, at ``info.offset``. bf16 comes back as
    ``ml_dtypes.bfloat16``, UINT1 as uint8 0/1 values, the narrow and complex32 types as
    :func:`convert.codecs.dtypes.decode` gives them (a narrow tensor whose dump size is exactly one byte
    an element is read unpacked, else packed).

    Checks, all made from the metadata *before* anything is allocated or read, each raising
    :class:`DumpFormatError` (file, byte offset of the tensor's data, the problem):

    * the data type must be decodable (``DT_STRING``, ``DT_QINT8``, unknown codes are refused);
    * no dimension may be negative, nor ``>= 2**63`` (a negative int64 stored in the uint64 shape
      field: ``-1`` reads as ``18446744073709551615``);
    * ``prod(shape) x itemsize`` (Python integers: no overflow) must not exceed the bytes the
      dump holds for the tensor -- so a shape of ``[2**40, 2**40]`` is refused by arithmetic,
      never by a failed allocation. *Extra* bytes are accepted and ignored, as the reference
      tool does (device buffers may be padded);
    * a shape with a 0 dimension is an empty tensor only when the dump also holds 0 bytes for it;
      a 0 dimension next to a non-empty data block means the shape and the size disagree;
    * the bytes must lie within the file. A tensor that passes all this but does not fit in the
      process's memory (a 3 GiB tensor under a 1 GiB ``RLIMIT_AS``) is a DumpFormatError too,
      not a MemoryError.
    """
    code = info.data_type
    try:
        numpy_dtype(code)
    except UnsupportedDataType:
        problem = f"data type {data_type_label(code)} of {info.label} cannot be decoded"
        raise DumpFormatError(header.path, problem, offset=info.offset) from None
    shape = tuple(int(d) for d in info.shape)
    if any(d < 0 for d in shape):
        problem = f"{info.label} has a negative dimension in its shape {shape}"
        raise DumpFormatError(header.path, problem, offset=info.offset)
    wrapped = [d for d in shape if d >= _INT64_SIGN]
    if wrapped:
        signed = wrapped[0] - (1 << 64)
        problem = (
            f"{info.label} has shape {shape}: dimension {wrapped[0]} is {signed} as a signed 64-bit "
            "integer (a negative dimension written into the unsigned shape field)"
        )
        raise DumpFormatError(header.path, problem, offset=info.offset)
    if 0 in shape:
        if info.size > 0:
            problem = (
                f"{info.label} has shape {shape} (0 elements) but the dump holds "
                f"{info.size} bytes for it: the shape and the size disagree"
            )
            raise DumpFormatError(header.path, problem, offset=info.offset)
        nonzero = math.prod(d for d in shape if d)
        if nonzero * 16 >= 2**63:  # numpy refuses such a shape even with 0 elements ("array is too big")
            problem = (f"{info.label} has shape {shape}: 0 elements, but its other dimensions multiply to "
                       f"{nonzero}, more than an array can index")
            raise DumpFormatError(header.path, problem, offset=info.offset)
        return decode(b"", code, shape)
    needed = stored_nbytes(code, element_count(shape), info.size)  # a narrow type's layout: by its size
    if needed > info.size:
        problem = (
            f"{info.label} has shape {shape} of {dtype_name(code)}, which needs {needed} "
            f"bytes, but the dump holds {info.size} bytes for it"
        )
        raise DumpFormatError(header.path, problem, offset=info.offset)
    end = info.offset + needed
    if info.offset < 0 or end > header.file_size:
        problem = (
            f"{info.label}: its {needed} data bytes at byte {info.offset} run past the end of "
            f"the {header.file_size}-byte file"
        )
        raise DumpFormatError(header.path, problem, offset=info.offset)
    try:
        raw = _read_bytes(header.path, info.offset, needed)
    except MemoryError:
        problem = f"{info.label}: its {needed} data bytes at byte {info.offset} do not fit in the process's memory"
        raise DumpFormatError(header.path, problem, offset=info.offset) from None
    if len(raw) < needed:
        problem = f"{info.label}: file ends after {len(raw)} of the {needed} data bytes"
        raise DumpFormatError(header.path, problem, offset=info.offset + len(raw))
    try:
        return decode(raw, code, shape)
    except (ValueError, OverflowError, MemoryError) as exc:
        raise DumpFormatError(header.path, f"{info.label}: {exc}", offset=info.offset) from None


def _read_bytes(path: Path, offset: int, count: int) -> bytearray:
    """``count`` bytes at ``offset`` (fewer at the end of the file), one ``preadv`` into a fresh buffer."""
    buf = bytearray(count)
    if count == 0:
        return buf
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            got = 0
            view = memoryview(buf)
            while got < count:  # one call reads at most ~2 GiB on Linux
                n = (os.preadv(fd, [view[got:]], offset + got) if hasattr(os, "preadv")
                     else _read_at(fd, view[got:], offset + got))
                if n <= 0:
                    break
                got += n
        finally:
            os.close(fd)
    except OSError as exc:
        problem = f"cannot be read ({exc.strerror or exc})"
        raise DumpFormatError(path, problem, offset=offset) from None
    return buf if got == count else buf[:got]


def _read_at(fd: int, buf: memoryview, offset: int) -> int:
    """``preadv`` where the platform lacks it (one read after a seek)."""
    os.lseek(fd, offset, os.SEEK_SET)
    with open(fd, "rb", closefd=False) as f:
        return f.readinto(buf) or 0


__all__ = [
    "NANO_VERSION",
    "DumpHeader",
    "TensorInfo",
    "read_header",
    "read_tensor",
]
