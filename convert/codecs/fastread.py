"""Zero-copy reads of large tensors: memory-map the bytes instead of reading them into a buffer.

:func:`convert.codecs.dumpfile.read_tensor` reads a tensor's bytes into a fresh ``bytearray`` (a copy
from the page cache, plus page faults on the new memory) and decodes them as a view. For a
comparison that reads every byte once or twice, mapping the file is cheaper: the pages already in
the page cache are mapped, not copied, and they are released (``munmap``) when the array is
garbage collected.

- :func:`map_bytes` maps ``count`` bytes of a file at ``offset`` as a read-only uint8 array.
- :func:`read_tensor_mapped` is :func:`convert.codecs.dumpfile.read_tensor` through :func:`map_bytes`
  for the plain case -- a tensor of a plain dtype (float, integer, bool, complex) with a non-empty shape whose
  bytes are all in the file. It returns the same values (a read-only view: mapped, or below
  :data:`MIN_MAP_BYTES` read with one ``pread``). Anything else goes to ``read_tensor`` itself,
  which makes the checks and reports the errors. So this is never *less* strict than ``read_tensor``: its
  conditions are a subset of ``read_tensor``'s success conditions. Every dump layout -- version 1,
  version 2 and nano (:mod:`convert.codecs.nano`) -- gives the same ``TensorInfo`` (proto data-type code,
  absolute offset and size of the bytes), so they are all mapped alike.

A file truncated by another process while it is mapped makes the next access to a vanished page
fail with SIGBUS; ``np.load(mmap_mode="r")`` (the golden ``.npy`` reader) has the same property.
The file's size is checked when it is mapped.
"""

from __future__ import annotations

import math
import mmap
import os

import numpy as np

from .dtypes import decode, nbytes_for

#: Tensors smaller than this are read, not mapped (a mapping costs a few system calls).
MIN_MAP_BYTES = 1 << 20

#: Data-type codes mapped: every code ``decode`` returns as a plain view of the bytes -- the
#: floats (DT_FLOAT 1, DT_FLOAT16 2, DT_DOUBLE 12, DT_BF16 27, fp8 e5m2 / e4m3fn / e8m0 34-36),
#: the integers and bool (0, 3-11, DT_RESOURCE 23) and complex (16, 17). The kernels read them in
#: place; DT_UINT1 (29, bit-packed), the sub-byte types, HiFloat8 (a table) and complex32 are
#: decoded into new arrays by ``read_tensor``.
_MAPPED_CODES = frozenset({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17, 23, 27, 34, 35, 36})

_PAGE = mmap.ALLOCATIONGRANULARITY


def map_bytes(path: str | os.PathLike[str], offset: int, count: int) -> np.ndarray | None:
    """``count`` bytes of ``path`` at ``offset`` as a read-only uint8 array backed by a mapping
    -- or, below :data:`MIN_MAP_BYTES`, by one ``pread`` into a private buffer (a mapping costs
    more system calls and page faults than reading a few KB: many small tensors).

    Returns None when the file does not hold them all (or cannot be mapped): the caller then
    reads the file the ordinary way, which reports the problem.
    """
    if offset < 0 or count <= 0:
        return None
    if count < MIN_MAP_BYTES:
        return read_bytes(path, offset, count)
    start = offset - offset % _PAGE
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size < offset + count:
                return None
            mapped = mmap.mmap(f.fileno(), offset + count - start, access=mmap.ACCESS_READ, offset=start)
    except (OSError, ValueError, OverflowError):
        return None
    return np.frombuffer(mapped, dtype=np.uint8, count=count, offset=offset - start)


def read_bytes(path: str | os.PathLike[str], offset: int, count: int) -> np.ndarray | None:
    """``count`` bytes of ``path`` at ``offset`` read with one ``pread`` as a read-only uint8
    array; None when the file does not hold them all or cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except (OSError, ValueError):
        return None
    try:
        data = os.pread(fd, count, offset)
    except (OSError, ValueError, OverflowError):
        return None
    finally:
        os.close(fd)
    if len(data) != count:
        return None
    return np.frombuffer(data, dtype=np.uint8)


def read_tensor_mapped(header, info) -> np.ndarray:
    """:func:`convert.codecs.dumpfile.read_tensor` with the data memory-mapped (see the module docstring)."""
    from . import dumpfile  # here: protobuf costs ~22 ms at start-up; the .npy codec needs only map_bytes

    code = int(info.data_type)
    shape = info.shape if type(info.shape) is tuple else tuple(int(d) for d in info.shape)
    if code in _MAPPED_CODES and shape and 0 < min(shape) and max(shape) < (1 << 63):
        needed = nbytes_for(code, math.prod(shape))
        if 0 < needed <= int(info.size) and info.offset >= 0 and info.offset + needed <= header.file_size:
            raw = map_bytes(header.path, int(info.offset), needed)
            if raw is not None:
                return decode(raw, code, shape)
    return dumpfile.read_tensor(header, info)


def is_mapped(array: np.ndarray) -> bool:
    """Whether ``array`` views a memory mapping (tests)."""
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return isinstance(base, mmap.mmap)


__all__ = ["MIN_MAP_BYTES", "is_mapped", "map_bytes", "read_bytes", "read_tensor_mapped"]

