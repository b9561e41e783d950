"""The ``.npy`` codec of the ground: read and check a header, map the data; never unpickles.

- :func:`read_npy_header` parses only the header (a header spelled as ``np.save`` writes it is
  read directly and remembered by its bytes; anything else goes to numpy's own parser) and
  :func:`check_npy_header` refuses what cannot be compared (Python objects, structured and
  non-numeric data types, a negative dimension).
- :func:`load_npy` maps the data read-only (:func:`convert.codecs.fastread.map_bytes`) after checking,
  with Python integers, that the file holds everything the header promises.
- :func:`logical_dtype_name`: the data type a user would name (bfloat16 for the bare 2-byte void
  ``np.save`` records for an ``ml_dtypes.bfloat16`` array).

Policy: the file is untrusted input. Every problem is a :class:`convert.errors.DumpFormatError`
naming the file (and the byte offset where it applies); nothing is allocated or read before the
sizes have been checked: the header length (at byte 8) against the file's size and numpy's own
bound, :data:`MAX_NPY_HEADER_BYTES`, before numpy's parser reads that many bytes (it allocated
what the field said, 4 GiB for a crafted 20-byte file); the data against the file's size.
"""

from __future__ import annotations

import io
import math
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from struct import error as struct_error
from typing import BinaryIO

import numpy as np

from ..errors import DumpFormatError
from .fastread import map_bytes


@dataclass(frozen=True)
class NpyHeader:
    """What the ``.npy`` header says: shape, dtype, Fortran order and where the data starts."""

    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    data_offset: int


#: What numpy's header parser raises on a malformed header. It tokenizes and evaluates a Python
#: literal, builds a dtype from it and reads the file, so the list is open-ended (ValueError,
#: SyntaxError, tokenize.TokenError, TypeError, RecursionError ...): on this untrusted input any
#: ``Exception`` except an I/O error (reported as such) means "bad header".
_HEADER_FAILURES = (Exception,)

#: The header exactly as ``np.save`` writes it (format 1.0 / 2.0), read directly: ~2 us, where
#: numpy's parser (which evaluates it as a Python literal) takes ~17 us a file. Any other
#: spelling goes to numpy's parser, which accepts it or says what is wrong.
_SAVED_HEADER = re.compile(
    r"\{'descr': '([<>|=]?[A-Za-z][0-9]*)', 'fortran_order': (True|False), 'shape': \(((?:[0-9]+, )*[0-9]+,?)?\), \} *\n"
)
_HEADER_LENGTH = {(1, 0): "<H", (2, 0): "<I"}
_MAX_SAVED_HEADER = 4096

#: The longest header read: numpy's own bound (``np.load``'s ``max_header_size``), which numpy
#: checks only after reading the header. A longer header length is refused before anything is read.
MAX_NPY_HEADER_BYTES = 10_000
#: Where the header length is and how it is stored, per format version (numpy reads no other).
_LENGTH_FIELD = {(1, 0): "<H", (2, 0): "<I", (3, 0): "<I"}
_LENGTH_AT = 8


def read_npy_header(path: str | os.PathLike) -> NpyHeader:
    """Parse only the header of a ``.npy`` file; :class:`DumpFormatError` if it is not a usable one.

    Policy: the header is untrusted input. Whatever numpy's parser raises on it becomes a
    DumpFormatError naming the file; then the header must describe an array vcompare can compare
    (:func:`check_npy_header`: no negative dimension, a numeric / bool / complex / bfloat16 data
    type). The data is not touched here; :func:`load_npy` checks that the file holds all of it.
    """
    path = path if isinstance(path, Path) else Path(path)
    fmt = np.lib.format
    try:
        # one read covers the magic string and a header as np.save writes it (~128 bytes);
        # anything else is parsed from the file itself by numpy
        raw = _peek(path)
        key = _header_bytes(raw)
        known = _KNOWN_HEADERS.get(key) if key is not None else None
        if known is not None:
            return known
        head = io.BytesIO(raw)
        try:
            version = fmt.read_magic(head)
        except (ValueError, EOFError, struct_error) as exc:
            raise DumpFormatError(path, f"not a .npy file (bad magic string: {exc})", offset=0) from None
        if version not in _HEADER_LENGTH:
            _check_header_length(path, raw, version)
            return check_npy_header(path, _header_via_mmap(path, version))
        saved = _saved_header(head, version)
        if saved is not None:
            shape, fortran, dtype = saved
            offset = head.tell()
        else:
            _check_header_length(path, raw, version)
            with open(path, "rb") as handle:
                handle.seek(8)  # the header length, for numpy's parser
                if version == (1, 0):
                    shape, fortran, dtype = fmt.read_array_header_1_0(handle)
                else:
                    shape, fortran, dtype = fmt.read_array_header_2_0(handle)
                offset = handle.tell()
    except DumpFormatError:
        raise
    except OSError as exc:
        raise DumpFormatError(path, f"cannot read the file: {exc.strerror or exc}") from None
    except _HEADER_FAILURES as exc:
        detail = str(exc) or type(exc).__name__
        raise DumpFormatError(path, f"bad .npy header: {detail}", offset=8) from None
    header = check_npy_header(path, NpyHeader(tuple(int(d) for d in shape), np.dtype(dtype), bool(fortran), offset))
    if key is not None and len(key) == offset and len(_KNOWN_HEADERS) < _KNOWN_HEADERS_MAX:
        _KNOWN_HEADERS[key] = header
    return header


#: Bytes read at once from the start of a ``.npy`` (its magic string and a saved header fit).
_PEEK_BYTES = 1024

#: Checked headers by their exact bytes (magic string to the end of the header): the goldens of
#: one network share a few shapes, so most files skip parsing and checking altogether. Bounded.
_KNOWN_HEADERS: dict[bytes, NpyHeader] = {}
_KNOWN_HEADERS_MAX = 4096


def _peek(path: Path) -> bytes:
    """The first :data:`_PEEK_BYTES` of a file, read with one ``pread`` (no buffered file object:
    ~10 us less a file, which counts with tens of thousands of goldens). Raises OSError."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        return os.pread(fd, _PEEK_BYTES, 0)
    finally:
        os.close(fd)


def _check_header_length(path: Path, raw: bytes, version: tuple[int, int]) -> None:
    """Refuse (DumpFormatError at byte 8) a header length that points past the end of the file or
    beyond :data:`MAX_NPY_HEADER_BYTES`, before numpy's parser reads (and allocates) that many
    bytes. Versions numpy does not read are left to numpy, which refuses them unread. Raises
    OSError when the file's size cannot be asked for."""
    layout = _LENGTH_FIELD.get(version)
    if layout is None:
        return
    start = _LENGTH_AT + struct.calcsize(layout)
    if len(raw) < start:
        raise DumpFormatError(path, f"bad .npy header: the file ends within the header length at byte {_LENGTH_AT}",
                              offset=_LENGTH_AT)
    (length,) = struct.unpack_from(layout, raw, _LENGTH_AT)
    size = os.stat(path).st_size
    if length > size - start:
        problem = (f"bad .npy header: header length {length} at byte {_LENGTH_AT} points past the end of the "
                   f"{size}-byte file")
        raise DumpFormatError(path, problem, offset=_LENGTH_AT)
    if length > MAX_NPY_HEADER_BYTES:
        problem = (f"bad .npy header: header length {length} at byte {_LENGTH_AT} is more than the "
                   f"{MAX_NPY_HEADER_BYTES} bytes numpy reads a header of")
        raise DumpFormatError(path, problem, offset=_LENGTH_AT)


def _header_bytes(raw: bytes) -> bytes | None:
    """The magic string and header of a version 1.0 / 2.0 ``.npy`` whose header lies within
    ``raw`` (the key of :data:`_KNOWN_HEADERS`), else None."""
    if raw[:6] != b"\x93NUMPY" or len(raw) < 12:
        return None
    if raw[6:8] == b"\x01\x00":
        end = 10 + int.from_bytes(raw[8:10], "little")
    elif raw[6:8] == b"\x02\x00":
        end = 12 + int.from_bytes(raw[8:12], "little")
    else:
        return None
    return raw[:end] if end <= len(raw) else None


def _saved_header(handle: BinaryIO, version: tuple[int, int]) -> tuple[tuple[int, ...], bool, np.dtype] | None:
    """``(shape, fortran_order, dtype)`` of a header spelled as ``np.save`` writes it, read from
    just after the magic string; None (the handle then anywhere in the header) for anything else."""
    size_format = _HEADER_LENGTH[version]
    size_bytes = handle.read(struct.calcsize(size_format))
    if len(size_bytes) != struct.calcsize(size_format):
        return None
    (length,) = struct.unpack(size_format, size_bytes)
    if length > _MAX_SAVED_HEADER:
        return None
    text = handle.read(length)
    match = _SAVED_HEADER.fullmatch(text.decode("latin1")) if len(text) == length else None
    if match is None:
        return None
    descr, fortran, dims = match.groups()
    try:
        dtype = np.dtype(descr)
    except TypeError:
        return None
    return tuple(int(d) for d in (dims or "").replace(",", " ").split()), fortran == "True", dtype


def check_npy_header(path: Path, header: NpyHeader) -> NpyHeader:
    """Refuse (DumpFormatError) a header whose array vcompare cannot compare; return it otherwise.

    Refused: a negative dimension; Python objects (a pickled array: vcompare never unpickles);
    structured, sub-array, string, datetime and other non-numeric data types; float128 /
    complex256. Accepted: bool, signed / unsigned integers, float16/32/64, complex64/128 and
    bfloat16 saved as a bare 2-byte void. A 0 dimension is accepted (an empty tensor).
    """
    if any(d < 0 for d in header.shape):
        raise DumpFormatError(path, f"the .npy header has a negative dimension in its shape {list(header.shape)}",
                              offset=8)
    dtype = header.dtype
    if dtype.hasobject:
        raise DumpFormatError(
            path, "holds Python objects (a pickled object array); vcompare never unpickles .npy files", offset=8
        )
    if not _comparable_dtype(dtype):
        raise DumpFormatError(
            path,
            f"data type {dtype.str if dtype.names is None else 'structured ' + str(dtype.descr)} cannot be "
            "compared (expected bool, integers, float16/32/64, complex64/128 or bfloat16)",
            offset=8,
        )
    return header


def _comparable_dtype(dtype: np.dtype) -> bool:
    if dtype.subdtype is not None or dtype.names is not None:
        return False
    if _is_bfloat16_void(dtype):
        return True
    return (dtype.kind, dtype.itemsize) in _COMPARABLE_KINDS


_COMPARABLE_KINDS = {("b", 1)} | {(k, n) for k in "iu" for n in (1, 2, 4, 8)} | {
    ("f", 2), ("f", 4), ("f", 8), ("c", 8), ("c", 16)}


def _header_via_mmap(path: Path, version: tuple[int, int]) -> NpyHeader:
    """Header of a .npy format version without a public header reader (3.0): via a memmap.

    ``np.load`` with ``mmap_mode`` maps the file and never reads (or allocates) the data, and it
    refuses a file shorter than its header says.
    """
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as exc:
        if "object" in str(exc).lower():
            return NpyHeader((), np.dtype(object), False, 0)
        raise DumpFormatError(path, f"bad .npy (format version {version[0]}.{version[1]}): {exc}") from None
    except OSError as exc:
        raise DumpFormatError(path, f"cannot read the file: {exc.strerror or exc}") from None
    except _HEADER_FAILURES as exc:
        detail = str(exc) or type(exc).__name__
        raise DumpFormatError(path, f"bad .npy (format version {version[0]}.{version[1]}): {detail}") from None
    offset = int(getattr(array, "offset", 0))
    return NpyHeader(tuple(array.shape), array.dtype, bool(np.isfortran(array)), offset)


def _is_bfloat16_void(dtype: np.dtype) -> bool:
    """``np.save`` of an ml_dtypes bfloat16 array records a bare 2-byte void (``|V2``)."""
    return dtype.kind == "V" and dtype.itemsize == 2 and dtype.names is None and dtype.subdtype is None


def logical_dtype_name(dtype: np.dtype) -> str:
    """The data type a user would name: bfloat16 for a bare 2-byte void, else numpy's name
    (remembered per dtype: a folder of goldens has a few)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        if dtype.hasobject:
            name = "object"
        else:
            name = "bfloat16" if _is_bfloat16_void(dtype) else dtype.name
        if len(_DTYPE_NAMES) < 256:
            _DTYPE_NAMES[dtype] = name
    return name


_DTYPE_NAMES: dict[np.dtype, str] = {}


def load_npy(path: Path, header: NpyHeader) -> np.ndarray:
    """Load a ``.npy`` lazily (memory-mapped, read-only); never unpickles.

    The header is checked again (:func:`check_npy_header`) and the file size is compared with
    ``data_offset + prod(shape) x itemsize`` -- Python integers, before anything is mapped or
    allocated -- so a header that promises 10**12 elements in a 200-byte file is refused by
    arithmetic. Non-native byte order is converted to native (a copy).

    Raises :class:`DumpFormatError` naming the file for object/pickled arrays, truncated data and
    any other unreadable file.
    """
    check_npy_header(path, header)
    count = math.prod(header.shape)
    # the data read first: it reads exactly what the header promises or gives None, and only then
    # is the file's size asked for the diagnosis (one system call less a file when all is well)
    array = _map_data(path, header, count) if count and not _too_large(header, count) else None
    if array is None:
        _check_size(path, header, count)
    try:
        if array is None and count == 0:
            array = np.load(path, allow_pickle=False)
        elif array is None:
            array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError, TypeError, OverflowError, MemoryError) as exc:
        raise DumpFormatError(path, f"cannot load .npy: {exc}") from None
    if tuple(array.shape) != header.shape or array.dtype != header.dtype:
        raise DumpFormatError(path, f"the .npy file changed while it was read (now {array.dtype} {array.shape})")
    if _is_bfloat16_void(array.dtype):
        import ml_dtypes  # here: ml_dtypes costs ~5 ms at start-up; only bfloat16 goldens need it

        array = array.view(ml_dtypes.bfloat16)
    elif not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return array


def _too_large(header: NpyHeader, count: int) -> bool:
    """Whether the data the header promises is beyond any file (then nothing is read at all)."""
    return header.data_offset + count * header.dtype.itemsize >= 1 << 62


def _check_size(path: Path, header: NpyHeader, count: int) -> None:
    """Refuse (DumpFormatError) a file shorter than its header promises -- Python integers, before
    anything is mapped or allocated -- or that cannot be asked for its size."""
    expected = header.data_offset + count * header.dtype.itemsize
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DumpFormatError(path, f"cannot read the file: {exc.strerror or exc}") from None
    if size < expected:
        raise DumpFormatError(
            path,
            f"truncated .npy: the header promises {count} x {logical_dtype_name(header.dtype)} "
            f"({expected} bytes in all) but the file has {size} bytes",
            offset=size,
        )


def _map_data(path: Path, header: NpyHeader, count: int) -> np.ndarray | None:
    """The data of a checked ``.npy`` mapped read-only, from the header already read (what
    ``np.load(mmap_mode="r")`` does, without parsing the header again: ~0.1 ms a file); None when
    the file cannot be mapped (the caller then lets numpy report the problem)."""
    dtype = header.dtype
    if dtype.hasobject or dtype.itemsize == 0:
        return None
    raw = map_bytes(path, header.data_offset, count * dtype.itemsize)
    if raw is None:
        return None
    return raw.view(dtype).reshape(header.shape, order="F" if header.fortran_order else "C")


__all__ = ["MAX_NPY_HEADER_BYTES", "NpyHeader", "check_npy_header", "load_npy", "logical_dtype_name", "read_npy_header"]
