"""The protobuf wire-format walk of Ascend dump headers: where each field, and each tensor's
``data`` value, lies in the file -- without the protobuf runtime, so that a crafted file costs a
bounded walk before anything is decoded.

:mod:`convert.codecs.dumpfile` uses it in two ways:

- a version-2 header: :func:`walk_fields` lists its top-level fields (file offsets, for the
  diagnosis of a header that does not decode, and the :data:`MAX_TOP_LEVEL_FIELDS` limit);
- a version-1 (pure protobuf) file: :func:`strip_data` copies the ``DumpData`` message without the
  ``data`` values of its tensors, buffers and workspaces and records where those values are
  (:class:`Stripped`), so that a tensor is read at its offset as in a version-2 file.

A file is walked through a :class:`FileWindow` (``pread`` of a small window, nothing mapped), so
the walk of a 64 GiB (sparse) file reads the bytes it looks at and no more. Every length is checked
against the end of its message (hence the file) before anything is read past it, and what the walk
copies (the metadata) is bounded by :data:`MAX_HEADER_BYTES`: a field whose length would take the
copy past the bound is refused at its tag, before a byte of it is read.

Wire-format problems are :class:`WireError` (a problem and an absolute byte offset); the reader
turns them into :class:`convert.errors.DumpFormatError`. Groups are skipped iteratively (nested
start-group tags cannot exhaust the Python stack).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Union

Buffer = Union[bytes, bytearray, memoryview, mmap.mmap, "FileWindow"]

#: ``DumpData`` fields holding repeated elements with a ``data`` value (:mod:`convert.codecs.dump_proto`).
DUMP_OUTPUT, DUMP_INPUT, DUMP_BUFFER, DUMP_SPACE = 3, 4, 5, 8
#: The ``data`` field number of each such element (OpOutput 5, OpInput 4, OpBuffer / Workspace 2).
DATA_FIELD = {DUMP_OUTPUT: 5, DUMP_INPUT: 4, DUMP_BUFFER: 2, DUMP_SPACE: 2}

#: Names of the top-level ``DumpData`` fields, as diagnoses name them.
TOP_LEVEL_NAMES = {
    1: "version", 2: "dump_time", 3: "output", 4: "input", 5: "buffer", 6: "op_name", 7: "attr",
    8: "space",
}  # fmt: skip

_WIRE_VARINT, _WIRE_I64, _WIRE_LEN, _WIRE_SGROUP, _WIRE_EGROUP, _WIRE_I32 = 0, 1, 2, 3, 4, 5

#: Limits that bound the cost of reading a crafted header (docs/reliability.md). A real dump has
#: one top-level field per tensor, buffer, workspace, attribute and header value, about a dozen
#: fields per tensor, and shapes of rank <= 8; a file over a limit is refused (DumpFormatError at
#: the offending field) before the protobuf runtime decodes it, so a file of millions of tiny
#: fields costs a walk of at most the limit, not millions of Python objects.
MAX_TOP_LEVEL_FIELDS = 100_000
MAX_TENSOR_FIELDS = 10_000  # fields of one OpInput/OpOutput/OpBuffer/Workspace (version 1)
MAX_RANK = 256  # dimensions of a shape or original shape
#: The most bytes a dump's metadata may take: a version-2 header, or a version-1 DumpData without
#: the data values of its tensors, buffers and workspaces. A real header takes a few hundred bytes
#: a tensor (kilobytes; a few MB for tens of thousands of tensors). A header length or a field
#: beyond it is refused before anything is read or allocated, so a crafted or sparse file cannot
#: make the reader allocate what its length field says (a 64 GiB sparse file whose header length
#: is its size: refused at byte 0, nothing read).
MAX_HEADER_BYTES = 64 << 20


class WireError(Exception):
    """A protobuf wire-format problem at ``offset`` (absolute in the file)."""

    def __init__(self, problem: str, offset: int) -> None:
        super().__init__(problem)
        self.problem = problem
        self.offset = offset


class FieldLimit(WireError):
    """A message with more fields than its limit (see :data:`MAX_TOP_LEVEL_FIELDS`)."""


class FileWindow:
    """The bytes of an open file, read on demand through a small cached window (``os.pread``).

    ``w[i]`` gives an int and ``w[a:b]`` bytes, like ``bytes``, so the walk takes it as its buffer.
    Nothing is mapped -- the walk does not depend on the process's address space (a 64 GiB file
    under a 1 GiB ``RLIMIT_AS``) -- and only the bytes the walk looks at are read.

    Edge cases: only non-negative indexes and ``[a:b]`` slices with ``0 <= a <= b`` (what the
    walk asks for; anything else is IndexError / ValueError); a slice is read as asked, so its
    length must have been checked by the caller (:func:`strip_data` checks every copy against
    :data:`MAX_HEADER_BYTES`). A file that ends before ``size`` (truncated while it is read)
    raises :class:`WireError` at the first missing byte.
    """

    #: Bytes read at once for indexing (tags and varints are read one byte at a time).
    WINDOW = 1 << 16

    def __init__(self, fd: int, size: int) -> None:
        self._fd = fd
        self._size = size
        self._start = 0
        self._chunk = b""

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, key: int | slice) -> int | bytes:
        if key.__class__ is int:
            i = key - self._start
            if 0 <= i < len(self._chunk):
                return self._chunk[i]
            if not 0 <= key < self._size:
                raise IndexError(f"byte {key} is outside the {self._size}-byte file")
            self._chunk = self._read(key, min(self.WINDOW, self._size - key))
            self._start = key
            return self._chunk[0]
        if not isinstance(key, slice) or key.step is not None or key.start is None or key.stop is None:
            raise ValueError("FileWindow takes [start:stop] slices only")
        start, stop = key.start, min(key.stop, self._size)
        if start >= stop:
            return b""
        i = start - self._start
        if 0 <= i and stop - self._start <= len(self._chunk):
            return self._chunk[i : stop - self._start]
        return self._read(start, stop - start)

    def _read(self, offset: int, count: int) -> bytes:
        """``count`` bytes at ``offset`` (the caller keeps them within ``size``)."""
        pieces = []
        got = 0
        while got < count:
            piece = os.pread(self._fd, count - got, offset + got)
            if not piece:
                raise WireError("the file ends here (was it truncated while it was read?)", offset + got)
            pieces.append(piece)
            got += len(piece)
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)


@dataclass(frozen=True)
class WireField:
    """Where one field of a message lies: its tag, its value and its end (absolute offsets)."""

    number: int
    wire_type: int
    start: int  # first byte of the tag
    tag_end: int  # one past the tag
    value_start: int  # first byte of the value (after the length prefix for LEN fields)
    end: int  # one past the last byte


def _varint(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """Decode a base-128 varint at ``pos``; returns (value, position after it)."""
    start = pos
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise WireError("varint runs past the end of its message", start)
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise WireError("varint longer than 10 bytes", start)


def walk_fields(buf: Buffer, start: int, end: int, limit: int | None = None, what: str = "") -> Iterator[WireField]:
    """The fields of the message occupying ``buf[start:end]``, in wire order.

    With ``limit``, the field after the ``limit``-th raises ``FieldLimit`` (at its tag) saying
    that ``what`` has more than ``limit`` fields, before anything past it is read.
    """
    pos = start
    count = 0
    while pos < end:
        count += 1
        if limit is not None and count > limit:
            raise FieldLimit(f"{what} has more than {limit} fields (the limit for a dump)", pos)
        field = _next_field(buf, pos, end)
        if field.wire_type == _WIRE_EGROUP:
            raise WireError(f"unmatched end-group of field {field.number}", pos)
        yield field
        pos = field.end


_MAX_FIELD_NUMBER = (1 << 29) - 1


def _tag(buf: Buffer, pos: int, end: int) -> tuple[int, int, int]:
    """(field number, wire type, position after the tag) of the tag at ``pos``."""
    key, after = _varint(buf, pos, end)
    number, wire_type = key >> 3, key & 7
    if number == 0:
        raise WireError("field number 0 (not a protobuf tag)", pos)
    if number > _MAX_FIELD_NUMBER:
        raise WireError(f"field number {number} is out of the protobuf range", pos)
    if wire_type > _WIRE_I32:
        raise WireError(f"invalid wire type {wire_type} in the tag of field {number}", pos)
    return number, wire_type, after


def _skip_scalar(buf: Buffer, wire_type: int, pos: int, end: int) -> tuple[int, int]:
    """(value start, value end) of a varint / fixed / length-delimited value at ``pos``."""
    if wire_type == _WIRE_VARINT:
        return pos, _varint(buf, pos, end)[1]
    if wire_type == _WIRE_I64:
        return pos, pos + 8
    if wire_type == _WIRE_I32:
        return pos, pos + 4
    length, value_start = _varint(buf, pos, end)
    return value_start, value_start + length


def _next_field(buf: Buffer, pos: int, end: int) -> WireField:
    start = pos
    number, wire_type, tag_end = _tag(buf, pos, end)
    if wire_type == _WIRE_SGROUP:
        value_start, pos = tag_end, _skip_group(buf, number, tag_end, end)
    elif wire_type == _WIRE_EGROUP:
        value_start, pos = tag_end, tag_end
    else:
        value_start, pos = _skip_scalar(buf, wire_type, tag_end, end)
    if pos > end:
        problem = f"field {number} runs {pos - end} bytes past the end of its message"
        raise WireError(problem, start)
    return WireField(number, wire_type, start, tag_end, value_start, pos)


def _skip_group(buf: Buffer, number: int, pos: int, end: int) -> int:
    """Position after the end-group tag closing a group of field ``number`` (nesting allowed).

    Iterative, so a crafted file of nested start-group tags cannot exhaust the Python stack.
    """
    open_groups = [number]
    while pos < end:
        start = pos
        inner, wire_type, pos = _tag(buf, pos, end)
        if wire_type == _WIRE_SGROUP:
            open_groups.append(inner)
        elif wire_type == _WIRE_EGROUP:
            if inner != open_groups[-1]:
                problem = f"end-group of field {inner} closes group {open_groups[-1]}"
                raise WireError(problem, start)
            open_groups.pop()
            if not open_groups:
                return pos
        else:
            pos = _skip_scalar(buf, wire_type, pos, end)[1]
    raise WireError(f"group of field {open_groups[-1]} is not closed", pos)


def len_prefix(length: int) -> bytes:
    """The varint length prefix of a length-delimited value of ``length`` bytes."""
    out = bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        if length:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


@dataclass(frozen=True)
class Stripped:
    """A DumpData with its data values cut out, plus where those values are in the file.

    ``parts`` are the top-level fields as (field number, file offset of the tag, bytes without
    data values); their concatenation is the message to decode.
    """

    parts: tuple[tuple[int, int, bytes], ...]
    spans: dict[int, list[tuple[int, int]]]  # top-level field -> [(offset, size)] per element
    has_known_field: bool


def strip_data(buf: Buffer, start: int, end: int, budget: int = MAX_HEADER_BYTES) -> Stripped:
    """Copy the DumpData at ``buf[start:end]`` without the data values of tensors/buffers/spaces.

    ``spans[f]`` lists, per element of repeated field ``f`` (3 output, 4 input, 5 buffer,
    8 space) in wire order, the absolute offset and size of its (last) data value.

    The copy (everything but the data values) may take at most ``budget`` bytes: a field that
    would take it past is refused (WireError at its tag) before it is read -- the name, a string
    attribute or a shape cannot make the reader allocate what its length says.
    """
    parts: list[tuple[int, int, bytes]] = []
    spans: dict[int, list[tuple[int, int]]] = {f: [] for f in DATA_FIELD}
    known = False
    used = 0
    for field in walk_fields(buf, start, end, MAX_TOP_LEVEL_FIELDS, "the DumpData message: top-level"):
        known = known or (1 <= field.number <= 8)
        name = TOP_LEVEL_NAMES.get(field.number, f"field {field.number}")
        if field.number in DATA_FIELD and field.wire_type == _WIRE_LEN:
            name = f"{name} {len(spans[field.number])}"
            body, span = _strip_element(buf, field, DATA_FIELD[field.number], name, (budget - used, budget))
            spans[field.number].append(span)
            piece = bytes(buf[field.start : field.tag_end]) + len_prefix(len(body)) + body
        else:
            _check_budget(name, field.start, field.end - field.start, budget - used, budget)
            piece = bytes(buf[field.start : field.end])
        used += len(piece)
        parts.append((field.number, field.start, piece))
    return Stripped(tuple(parts), spans, known)


def _check_budget(name: str, offset: int, length: int, left: int, budget: int) -> None:
    """Refuse (WireError at ``offset``) a copy of ``length`` bytes when only ``left`` remain."""
    if length > left:
        problem = (
            f"its {name} takes {length} bytes, more than the {budget} bytes allowed for the "
            "metadata of a dump (the message without its tensor data)"
        )
        raise WireError(problem, offset)


def _strip_element(buf: Buffer, element: WireField, data_field: int, name: str,
                   budget: tuple[int, int] = (MAX_HEADER_BYTES, MAX_HEADER_BYTES)) -> tuple[bytes, tuple[int, int]]:
    """One OpInput/OpOutput/OpBuffer/Workspace without its data, and its data's (offset, size).

    ``name`` (e.g. ``input 0``) names the element in the diagnosis when it has more than
    :data:`MAX_TENSOR_FIELDS` fields (raised at the element's tag), or when its fields other
    than the data take more than the bytes left of the metadata budget (``budget``: left, in
    all; raised at the element's tag, before any of them is copied).
    """
    span = (element.value_start, 0)
    try:
        fields = list(walk_fields(buf, element.value_start, element.end, MAX_TENSOR_FIELDS, name))
    except FieldLimit as wire:
        raise FieldLimit(wire.problem, element.start) from None
    kept = [f for f in fields if not (f.number == data_field and f.wire_type == _WIRE_LEN)]
    _check_budget(name, element.start, sum(f.end - f.start for f in kept), *budget)
    for field in fields:
        if field.number == data_field and field.wire_type == _WIRE_LEN:
            span = (field.value_start, field.end - field.value_start)
    pieces = [bytes(buf[f.start : f.end]) for f in kept]
    return b"".join(pieces), span


__all__ = [
    "DATA_FIELD",
    "DUMP_BUFFER",
    "DUMP_INPUT",
    "DUMP_OUTPUT",
    "DUMP_SPACE",
    "MAX_HEADER_BYTES",
    "MAX_RANK",
    "MAX_TENSOR_FIELDS",
    "MAX_TOP_LEVEL_FIELDS",
    "TOP_LEVEL_NAMES",
    "FieldLimit",
    "FileWindow",
    "Stripped",
    "WireError",
    "WireField",
    "len_prefix",
    "strip_data",
    "walk_fields",
]
