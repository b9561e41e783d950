"""Golden folders: ``{op_name}.{output_index}.{timestamp}.npy`` (Caffe / TF tfdbg) and DumpData
``.pb`` / ``.quant`` files.

Naming rules (§2.7, §2.8 of the reference-tool spec; the folder's top level only):

* ``.npy``: ``{op_name}.{output_index}.{timestamp}.npy``. ``op_name`` may hold letters, digits,
  ``_``, ``-`` and ``.``; it runs greedily up to the last ``.<digits>.<digits>.npy``.
* ``.pb`` (standard) and ``.quant`` (quantized Caffe): the same form, ``op_name`` without dots.
  These are DumpData files, read with ``convert.dumpfile.read_header``; the output
  ``output_index`` of the op is the file's *first* output, as the reference tool reads it.

The dumping tools have already replaced ``/`` and ``.`` in op names by ``_`` (tfdbg also turns
``:`` into ``.``); :meth:`compare.records.Run.find` normalises a lookup the same way, so the key
is the op name exactly as it is in the file name.

Of several files for one ``(op, output_index)`` the latest 16-digit timestamp wins (others sort
as 0; ties by file name). A ``.npy`` folder whose op names carry a quantization marker
(``_quant``, ``AscendQuant``, ...) is a QUANT run with ``quantized=True``; otherwise NUMPY.
``.pb`` folders are STANDARD and ``.quant`` folders QUANT.

Mixed folders: the reference tool refuses a folder that mixes kinds (error 18). vcompare uses the
kind most files have and lists the others in ``Run.skipped`` with the reason.
"""

from __future__ import annotations

import functools
import io
import math
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from struct import error as struct_error
from typing import BinaryIO

import ml_dtypes
import numpy as np

from convert.dtypes import dtype_name, format_name
from convert.fastread import map_bytes
from convert.names.golden import GoldenName

from ..errors import CompareError, DumpFormatError
from ..records import OpDump, Run, RunKind, TensorKind, TensorRef
from .ascend import is_quantized_name, list_folder, no_valid_files_error, read_dump_tensor

#: Format name of golden tensors (no layout information), as the reference tool.
GOLDEN_FORMAT = "RESERVED"


# --------------------------------------------------------------------------------------------
# .npy headers and lazy reading
# --------------------------------------------------------------------------------------------


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
            return check_npy_header(path, _header_via_mmap(path, version))
        saved = _saved_header(head, version)
        if saved is not None:
            shape, fortran, dtype = saved
            offset = head.tell()
        else:
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


def _npy_ref(op_name: str, index: int, path: Path) -> tuple[TensorRef | None, str | None]:
    try:
        header = read_npy_header(path)
    except DumpFormatError as exc:
        return None, str(exc)
    dtype = logical_dtype_name(header.dtype)
    ref = TensorRef(
        op_name=op_name,
        kind=TensorKind.OUTPUT,
        index=index,
        dtype=dtype,
        format=GOLDEN_FORMAT,
        shape=header.shape,
        path=path,
        nbytes=math.prod(header.shape) * header.dtype.itemsize,
        reader=functools.partial(load_npy, path, header),
    )
    return ref, None


def _dumpdata_ref(op_name: str, index: int, path: Path, version: int | None) -> tuple[TensorRef | None, str | None]:
    """Output ``index`` of a golden op from a DumpData ``.pb``/``.quant`` file: its first output."""
    from convert import dumpfile  # here, not at the top: protobuf costs ~22 ms, .npy goldens never need it

    try:
        header = dumpfile.read_header(path, version=version)
    except CompareError as exc:
        return None, str(exc)
    except OSError as exc:
        return None, str(DumpFormatError(path, f"cannot read the file: {exc.strerror or exc}"))
    if not header.outputs:
        return None, str(DumpFormatError(path, "the dump has no output tensor (a golden file needs one)"))
    info = header.outputs[0]
    ref = TensorRef(
        op_name=op_name,
        kind=TensorKind.OUTPUT,
        index=index,
        dtype=dtype_name(info.data_type),
        format=format_name(info.format),
        shape=tuple(int(d) for d in info.shape),
        path=path,
        original_shape=tuple(int(d) for d in info.original_shape),
        address=0,
        sub_format=int(info.sub_format),
        nbytes=int(info.size),
        reader=functools.partial(read_dump_tensor, header, info),
    )
    return ref, None


# --------------------------------------------------------------------------------------------
# Scanning
# --------------------------------------------------------------------------------------------


def _build_op(
    op_name: str,
    by_index: dict[int, list[tuple[Path, GoldenName]]],
    version: int | None,
) -> tuple[OpDump, list[tuple[Path, str]]]:
    """One golden OpDump (for each output index the latest file; all files in ``files``), and the
    ``(file, diagnosis)`` of every output file that cannot be used.

    Policy for an unreadable file: when *no* output of the op can be used, ``error`` is the
    diagnosis (joined for several files) and every row of the op says it. When only some
    outputs are broken, the op keeps the good ones (their rows are compared as usual) and the
    broken files are returned for ``Run.skipped``, where the row of the missing output finds
    its diagnosis.
    """
    outputs: list[TensorRef] = []
    problems: list[tuple[Path, str]] = []
    all_files: list[tuple[Path, GoldenName]] = []
    chosen: list[tuple[Path, GoldenName]] = []
    for index in sorted(by_index):
        files = sorted(by_index[index], key=lambda f: (f[1].sort_key, f[0].name))
        all_files.extend(files)
        path, parsed = files[-1]
        chosen.append((path, parsed))
        if parsed.kind == "npy":
            ref, error = _npy_ref(op_name, index, path)
        else:
            ref, error = _dumpdata_ref(op_name, index, path, version)
        if ref is not None:
            outputs.append(ref)
        if error is not None:
            problems.append((path, error))
    all_files.sort(key=lambda f: (f[1].sort_key, f[0].name))
    path, parsed = chosen[0]
    error = "; ".join(message for _, message in problems) if problems and not outputs else None
    op = OpDump(
        name=op_name,
        op_type=None,
        path=path,
        files=tuple(p for p, _ in all_files),
        outputs=tuple(outputs),
        error=error,
        timestamp=parsed.timestamp,
    )
    return op, (problems if outputs else [])


def scan_golden(
    folder: str | os.PathLike,
    *,
    version: int | None = None,
    root: str | os.PathLike | None = None,
    listing=None,
) -> Run:
    """Scan a golden folder (``.npy``, ``.pb`` or ``.quant`` files) into a :class:`Run`.

    Ops are keyed by the op name of the file names; each op's outputs are TensorRefs with
    ``index`` = output index. For ``.npy`` only the header is parsed now (dtype and shape from it,
    format ``RESERVED``); data is memory-mapped when loaded, object arrays are refused. ``.pb`` /
    ``.quant`` headers are read with ``convert.dumpfile.read_header(version=version)``.

    The kind used is the golden kind most files have; files of other kinds (other golden suffixes
    or Ascend offline dumps) and files matching no naming rule go to ``run.skipped`` with the
    reason. Raises :class:`CompareError` (naming the folder and the files) when no golden file is
    usable.
    """
    folder = Path(folder)
    listing = listing if listing is not None else list_folder(folder)
    counts = listing.counts()
    golden_kinds = ("npy", "pb", "quant")
    kind = max(golden_kinds, key=lambda k: (counts[k], -golden_kinds.index(k)))
    skipped = list(listing.skipped) + listing.other_kinds_skipped(kind)
    if counts[kind] == 0:
        raise no_valid_files_error(folder, skipped)
    groups: dict[str, dict[int, list[tuple[Path, GoldenName]]]] = {}
    for item in listing.of_kind(kind):
        parsed = item.parsed
        assert isinstance(parsed, GoldenName)
        groups.setdefault(parsed.op_name, {}).setdefault(parsed.output_index, []).append((item.entry.path, parsed))
    run = Run(
        root=Path(root) if root is not None else folder,
        path=folder,
        kind=RunKind.NUMPY,
        skipped=skipped,
        notes=list(listing.notes),
    )
    for name in sorted(groups):
        run.ops[name], unusable = _build_op(name, groups[name], version)
        run.skipped.extend(unusable)
    if kind == "npy":
        run.quantized = any(is_quantized_name(name) for name in run.ops)
        run.kind = RunKind.QUANT if run.quantized else RunKind.NUMPY
    elif kind == "pb":
        run.kind = RunKind.STANDARD
    else:
        run.kind = RunKind.QUANT
        run.quantized = True
    return run
