"""Reading one tensor of an Ascend dump file: :func:`read_tensor`, the data a
:class:`~convert.codecs.dumpheader.TensorInfo` points at, checked against the header before
anything is allocated or read (the length policy of :mod:`convert.codecs.dumpfile`).
:mod:`convert.codecs.fastread` is the memory-mapped twin for large float tensors.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ..errors import DumpFormatError
from .dtypes import (
    UnsupportedDataType,
    data_type_label,
    decode,
    dtype_name,
    element_count,
    numpy_dtype,
    stored_nbytes,
    undecoded_reason,
)
from .dumpheader import DumpHeader, TensorInfo

#: Dimensions at or above this are negative int64 values written into the uint64 ``Shape.dim``.
_INT64_SIGN = 1 << 63


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
        why = undecoded_reason(code)
        problem = f"data type {data_type_label(code)} of {info.label} cannot be decoded" + (f": {why}" if why else "")
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


__all__ = ["read_tensor"]
