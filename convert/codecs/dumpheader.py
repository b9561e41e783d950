"""The metadata records of an Ascend dump file (:class:`TensorInfo`, :class:`DumpHeader`) and their
making from a decoded ``DumpData`` message (:mod:`convert.codecs.dump_proto`): the protobuf decode
with the byte of the field that fails, the size limit on shapes, and the data spans of the
version-2 layout.

:mod:`convert.codecs.dumpfile` finds the message in a file (version 1, version 2, nano) and builds
the header with :func:`assemble`; :mod:`convert.codecs.dumptensor` reads the data a
:class:`TensorInfo` points at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf.message import DecodeError, Message

from ..errors import DumpFormatError
from . import dump_proto
from .dtypes import UnsupportedDataType, count_for_nbytes, dtype_name, format_name
from .dumpwire import (
    DUMP_BUFFER,
    DUMP_INPUT,
    DUMP_OUTPUT,
    DUMP_SPACE,
    MAX_RANK,
    MAX_TENSOR_FIELDS,
    MAX_TOP_LEVEL_FIELDS,
    TOP_LEVEL_NAMES,
    WireError,
    WireField,
    walk_fields,
)


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

    ``version`` is 1 (pure protobuf), 2 (binary) or 3 (nano, :data:`convert.codecs.dumpfile.NANO_VERSION`);
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


def _tensor_info(path: Path, kind: str, index: int, msg: Message, offset: int, size: int) -> TensorInfo:
    """One tensor's :class:`TensorInfo`; a shape or original shape of more than :data:`MAX_RANK`
    dimensions is refused (DumpFormatError at ``offset``, the tensor's data). Each repeated field
    of the message is read once (protobuf attribute access is most of a small header's cost)."""
    has_shape = msg.HasField("shape")
    has_original = msg.HasField("original_shape")
    dims = msg.shape.dim
    original_dims = msg.original_shape.dim
    for shape_name, found in (("shape", dims), ("original_shape", original_dims)):
        rank = len(found)
        if rank > MAX_RANK:
            problem = (f"{kind} {index}: its {shape_name} has {rank} dimensions (more than {MAX_RANK}): "
                       "not a tensor shape")
            raise DumpFormatError(path, problem, offset=offset)
    code = int(msg.data_type)
    if has_shape:
        shape = tuple(map(int, dims))
    else:
        shape = (elements_in(code, size),)
    original = tuple(map(int, original_dims)) if has_original else ()
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


def elements_in(code: int, size: int) -> int:
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


def decode_dump_data(
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


def decode_small(data: bytes) -> Message | None:
    """The DumpData of a small header (see SMALL_HEADER_BYTES) when it decodes as it is; None
    otherwise -- then the field walk decodes it and diagnoses what is wrong, byte by byte. (A
    dump of many small tensors spends most of its header time in that walk.)"""
    if len(data) >= SMALL_HEADER_BYTES:
        return None
    try:
        return dump_proto.DumpData.FromString(data)
    except DecodeError:
        return None


def header_fields(path: Path, buf: object, start: int, end: int, base: int, what: str) -> list[WireField]:
    """Top-level fields of a version-2 header at ``buf[start:end]`` (``base + offset`` is where a
    byte of ``buf`` is in the file), or the wire-format diagnosis."""
    try:
        return list(walk_fields(buf, start, end, MAX_TOP_LEVEL_FIELDS, "the DumpData message: top-level"))
    except WireError as wire:
        where = base + wire.offset
        problem = f"{what} is not a valid DumpData protobuf ({wire.problem} at byte {where})"
        raise DumpFormatError(path, problem, offset=where) from None


def header_parts(path: Path, data: bytes, what: str, offset: int) -> list[tuple[int, int, bytes]]:
    """Top-level fields of a version-2 header (file offsets), or the wire-format diagnosis."""
    fields = header_fields(path, data, 0, len(data), offset, what)
    return [(f.number, offset + f.start, data[f.start : f.end]) for f in fields]


def assemble(
    path: Path,
    version: int,
    file_size: int,
    header_length: int,
    msg: Message,
    spans: dict[int, list[tuple[int, int]]],
) -> DumpHeader:
    # inputs then outputs, each in order: the first shape of too many dimensions is the one refused
    inputs = tuple(_tensor_info(path, "input", i, m, *spans[DUMP_INPUT][i]) for i, m in enumerate(msg.input))
    outputs = tuple(_tensor_info(path, "output", i, m, *spans[DUMP_OUTPUT][i]) for i, m in enumerate(msg.output))
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


def v2_spans(msg: Message, data_start: int) -> tuple[dict[int, list[tuple[int, int]]], int]:
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


__all__ = [
    "SMALL_HEADER_BYTES",
    "DumpHeader",
    "TensorInfo",
    "assemble",
    "decode_dump_data",
    "decode_small",
    "elements_in",
    "header_fields",
    "header_parts",
    "v2_spans",
]
