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

**Many small files** (a network of 10,000 small operators): an operator's inputs and outputs are
compared one after the other, each from the same dump file. Inside :func:`file_snapshots` (the
engine enters it around each group of pairs) a file of at most :data:`SNAPSHOT_MAX_BYTES` is read
whole with one ``open`` and one ``pread`` the first time one of its tensors is read, and its other
tensors are views of those bytes (a thread keeps one such file: the last one read). Outside it,
every tensor is read on its own, as before -- a long-lived process never sees an old copy of a
file that changed between two comparisons.

The plain data types (:data:`_VIEW_CODES`: floats, integers, bool, complex, bfloat16) are viewed
in place as :func:`~convert.codecs.dtypes.decode` would (its last step, the checks before it
already made here: a non-empty shape, exactly the bytes needed); decode's general path costs ~7 us
a tensor, the view ~1.5 (the tests hold both equal on random bytes and shapes).
"""

from __future__ import annotations

import functools
import math
import mmap
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from .dtypes import DataType, decode, narrow_type, nbytes_for, numpy_dtype

#: Tensors smaller than this are read, not mapped (a mapping costs a few system calls).
MIN_MAP_BYTES = 1 << 20

#: Data-type codes mapped: every code ``decode`` returns as a plain view of the bytes -- the
#: floats (DT_FLOAT 1, DT_FLOAT16 2, DT_DOUBLE 12, DT_BF16 27, fp8 e5m2 / e4m3fn 34-35), the
#: integers and bool (0, 3-11, DT_RESOURCE 23) and complex (16, 17) -- which the kernels read in
#: place, and float8_e8m0 (36), whose mapped bytes ``decode`` turns into a new float32 array (the
#: device's table: :func:`view_plain`). DT_UINT1 (29, bit-packed), the other sub-byte types,
#: HiFloat8 (a table) and complex32 are decoded into new arrays by ``read_tensor``.
_MAPPED_CODES = frozenset({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17, 23, 27, 34, 35, 36})

_PAGE = mmap.ALLOCATIONGRANULARITY

#: Files up to this size are read whole, once, inside :func:`file_snapshots` (the tensors read
#: from them are below :data:`MIN_MAP_BYTES` too: never mapped).
SNAPSHOT_MAX_BYTES = MIN_MAP_BYTES


class _Snapshot(threading.local):
    """This thread's :func:`file_snapshots` state: how deep it is entered, and the last small file
    read whole (its path, size and bytes)."""

    def __init__(self) -> None:
        self.depth = 0
        self.path: str | None = None
        self.size = -1
        self.data: bytes | None = None


_snapshot = _Snapshot()


@contextmanager
def file_snapshots() -> Iterator[None]:
    """Within the block, on this thread, :func:`read_tensor_mapped` reads a small file whole once
    and views its other tensors in those bytes (see the module docstring); the bytes are let go
    when the outermost block ends."""
    state = _snapshot
    state.depth += 1
    try:
        yield
    finally:
        state.depth -= 1
        if state.depth == 0:
            state.path, state.size, state.data = None, -1, None


def _snapshot_bytes(path: str, size: int) -> bytes | None:
    """The ``size`` bytes of the small file ``path`` (one ``open`` + ``pread`` the first time, then
    this thread's copy); None outside :func:`file_snapshots`, for a larger file, or when the file
    does not hold ``size`` bytes (the caller then reads the ordinary way, which reports it)."""
    state = _snapshot
    if state.depth == 0 or not 0 < size <= SNAPSHOT_MAX_BYTES:
        return None
    if state.path == path and state.size == size:
        return state.data
    data = _pread(path, 0, size)
    state.path, state.size, state.data = (path, size, data) if data is not None else (None, -1, None)
    return data


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
    data = _pread(path, offset, count)
    return None if data is None else np.frombuffer(data, dtype=np.uint8)


def _pread(path: str | os.PathLike[str], offset: int, count: int) -> bytes | None:
    """``count`` bytes of ``path`` at ``offset`` (one ``open`` + ``pread``), None when the file does
    not hold them all or cannot be read."""
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
    return data if len(data) == count else None


def read_tensor_mapped(header, info) -> np.ndarray:
    """:func:`convert.codecs.dumpfile.read_tensor` with the data memory-mapped (see the module docstring)."""
    code = int(info.data_type)
    shape = info.shape if type(info.shape) is tuple else tuple(int(d) for d in info.shape)
    if code in _MAPPED_CODES and shape and 0 < min(shape) and max(shape) < (1 << 63):
        needed = nbytes_for(code, math.prod(shape))
        offset = int(info.offset)
        if 0 < needed <= int(info.size) and offset >= 0 and offset + needed <= header.file_size:
            whole = _snapshot_bytes(str(header.path), int(header.file_size)) if needed < MIN_MAP_BYTES else None
            if whole is not None:
                raw = np.frombuffer(whole, dtype=np.uint8, count=needed, offset=offset)
            else:
                raw = map_bytes(header.path, offset, needed)
            if raw is not None:
                return view_plain(raw, code, shape)
    from . import dumpfile  # here: protobuf costs ~22 ms at start-up; the .npy codec needs only map_bytes

    return dumpfile.read_tensor(header, info)


@functools.lru_cache(maxsize=None)
def _plain_dtype(code: int) -> np.dtype | None:
    """The dtype :func:`~convert.codecs.dtypes.decode` views the bytes of a code of
    :data:`_MAPPED_CODES` as, or None when it decodes them otherwise (the narrow types, UINT1,
    COMPLEX32). Asked per code on first use (bfloat16's dtype imports ml_dtypes)."""
    if code not in _MAPPED_CODES or code in (DataType.DT_UINT1, DataType.DT_COMPLEX32) or narrow_type(code) is not None:
        return None
    return numpy_dtype(code)


def view_plain(raw: np.ndarray, code: int, shape: tuple[int, ...]) -> np.ndarray:
    """:func:`~convert.codecs.dtypes.decode` of ``raw`` -- uint8, exactly the bytes of ``shape``
    (no 0 in it) -- through its last step alone for the plain data types (a view), else decode
    itself."""
    dtype = _plain_dtype(code)
    if dtype is None:
        return decode(raw, code, shape)
    return raw.view(dtype).reshape(shape)


def is_mapped(array: np.ndarray) -> bool:
    """Whether ``array`` views a memory mapping (tests)."""
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return isinstance(base, mmap.mmap)


__all__ = ["MIN_MAP_BYTES", "SNAPSHOT_MAX_BYTES", "file_snapshots", "is_mapped", "map_bytes", "read_bytes",
           "read_tensor_mapped", "view_plain"]

