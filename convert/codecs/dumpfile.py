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

The codec's rooms: this module finds the header in a file (the three layouts, the detection, the
length checks of the header) and is the codec's front (:func:`read_header`, :func:`read_tensor`,
the records); :mod:`convert.codecs.dumpheader` holds the records and makes them from the decoded
``DumpData`` message; :mod:`convert.codecs.dumptensor` reads a tensor's data (:func:`read_tensor`).
Writing dump files is :mod:`convert.codecs.dumpwrite`.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import BinaryIO, Union

from ..errors import DumpFormatError
from . import nano
from .dumpheader import (
    DumpHeader,
    TensorInfo,
    assemble,
    decode_dump_data,
    decode_small,
    elements_in,
    header_fields,
    header_parts,
    v2_spans,
)
from .dumptensor import read_tensor
from .dumpwire import MAX_HEADER_BYTES, FileWindow, WireError, strip_data
from .exactread import pread_exact

PathLike = Union[str, "os.PathLike[str]"]

HEADER_LENGTH_BYTES = 8
NANO_MAGIC = nano.NANO_MAGIC
NANO_MAGIC_OFFSET = nano.NANO_MAGIC_OFFSET
#: ``DumpHeader.version`` of a nano dump.
NANO_VERSION = 3


# ---------------------------------------------------------------------------------- reading


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
            header_fields(path, FileWindow(fd, size), HEADER_LENGTH_BYTES, data_start, 0, what)
        data = pread_exact(path, fd, HEADER_LENGTH_BYTES, hlen)
        msg = decode_small(data)
        if msg is None:
            parts = header_parts(path, data, what, HEADER_LENGTH_BYTES)
            msg = decode_dump_data(path, what, parts, HEADER_LENGTH_BYTES)
    except DumpFormatError as exc:
        raise _V2Failure(exc, False) from None
    spans, cursor = v2_spans(msg, data_start)
    _check_v2_size(path, size, data_start, cursor)
    return assemble(path, 2, size, hlen, msg, spans)


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
    msg = decode_dump_data(path, "the file", stripped.parts, 0)
    return assemble(path, 1, size, 0, msg, stripped.spans)


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
    shape = tensor.shape if tensor.shape is not None else (elements_in(code, tensor.size),)
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
        # a descriptor, not a buffered file object (~15 us less a file, which counts with tens of
        # thousands of dumps); the buffered object only for the readers that need one
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                raise DumpFormatError(path, "empty file (0 bytes)", offset=0)
            if version != 1:
                quick = _quick_v2(path, fd, size)
                if quick is not None:
                    return quick
            with open(fd, "rb", closefd=False) as f:
                nano_header = _nano_header(path, f, size)
                if nano_header is not None:
                    return nano_header
                return _read_any(path, f, size, version)
        finally:
            os.close(fd)
    except OSError as exc:
        raise DumpFormatError(path, f"cannot be read ({exc.strerror or exc})") from None


#: Bytes read at once from the start of a dump by :func:`_quick_v2`: a header of a few tensors
#: takes ~100 bytes; a longer one (more than ~40 tensors) goes to the full reader.
QUICK_READ_BYTES = 4096


def _quick_v2(path: Path, f: BinaryIO | int, size: int) -> DumpHeader | None:
    """A version-2 dump whose header is small and sound, from one read of its first bytes; None
    for anything else (a nano dump, a long or undecodable header, sizes that do not add up):
    then the full reader diagnoses it. A dump of many small tensors spends its header time in
    system calls; this reads each file once instead of four times. ``f``: the open file, or its
    descriptor (what :func:`read_header` has)."""
    head = os.pread(f if isinstance(f, int) else f.fileno(), min(size, QUICK_READ_BYTES), 0)
    if len(head) < HEADER_LENGTH_BYTES + 4:
        return None
    if int.from_bytes(head[NANO_MAGIC_OFFSET : NANO_MAGIC_OFFSET + 4], "little") == NANO_MAGIC:
        return None
    hlen = int.from_bytes(head[:HEADER_LENGTH_BYTES], "little")
    if hlen == 0 or HEADER_LENGTH_BYTES + hlen > len(head):
        return None
    msg = decode_small(head[HEADER_LENGTH_BYTES : HEADER_LENGTH_BYTES + hlen])
    if msg is None:
        return None
    data_start = HEADER_LENGTH_BYTES + hlen
    spans, cursor = v2_spans(msg, data_start)
    if cursor != size:
        return None
    return assemble(path, 2, size, hlen, msg, spans)


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


__all__ = [
    "NANO_VERSION",
    "DumpHeader",
    "TensorInfo",
    "read_header",
    "read_tensor",
]
