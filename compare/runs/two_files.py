"""Two files compared as they are: ``vcompare -l FILE -r FILE`` and ``vcompare file_compare``.

A side is one file, of one of three kinds (chosen by its name, then by its bytes):

- ``.npy``: one tensor (header read and checked by :mod:`convert.codecs.npy`, never unpickled);
- ``.txt``: whitespace-separated numbers, one row of the array per line (``#`` starts a
  comment), read as float64 by :func:`numpy.loadtxt` (a line of N numbers is a row of N, a
  single line a 1-D array, a single number a 1-element array);
- anything else: an Ascend dump file (version 2 binary or version 1 protobuf, :mod:`convert.codecs.dumpfile`;
  ``-v`` forces one), holding inputs and outputs.

Which tensors meet (:func:`pair_files`):

- **dump vs dump**: every input *i* with input *i* and every output *i* with output *i* of the
  other file; a tensor the other file lacks is a one-sided row (never dropped). ``choice``
  (``-t input|output -i N``) narrows this to that one tensor on both sides.
- **dump vs .npy / .txt** (either way round): the dump's output 0, or the tensor ``choice``
  names, against the single tensor of the other file.
- **.npy / .txt vs .npy / .txt**: the two tensors.

Policy: the shapes must be **identical** (the reference's error 23): a pair whose shapes differ,
even with equal element counts (``[2,3]`` vs ``[3,2]``), is a not-comparable row whose reason
names both shapes; no reshape or layout conversion is attempted (device-layout dump tensors are
compared as stored against a dump of the same layout). Equal shapes are compared flat, element
for element, by the engine (:func:`compare.engine.compare_pairs`): every metric of ``-alg``.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

import numpy as np

from convert.names.ascend import OfflineName, parse_offline_name

from ..engine import EngineOptions, compare_pairs
from ..engine.prepare import NO_LAYOUT
from ..errors import DumpFormatError, OptionError, ShapeError
from ..kernels import resolve_algorithms
from ..loaders.ascend import build_offline_op
from ..loaders.golden_npy import npy_ref
from ..pairing.rows import KINDS, op_tensor_rows, shape_text
from ..records import MetricRow, OpDump, Pair, PairStatus, TensorKind, TensorRef

#: The metrics of ``vcompare file_compare``, by index: 0, 1, 2, 3, 6, 7, 8, 9 (no KL divergence, no
#: standard deviation), in this order.
FILE_COMPARE_METRICS = "0,1,2,3,6,7,8,9"


class FileKind(str, Enum):
    """What one side of a two-file comparison is."""

    NPY = "npy"
    TEXT = "txt"
    DUMP = "dump"


@dataclass(frozen=True)
class FileSide:
    """One file read: its kind and its tensors as an :class:`OpDump` (a ``.npy`` / ``.txt``
    file holds one tensor, output 0, named after the file)."""

    path: Path
    kind: FileKind
    op: OpDump


@dataclass(frozen=True)
class TensorChoice:
    """The dump tensor to compare (``-t input|output -i N``)."""

    kind: TensorKind
    index: int

    @property
    def text(self) -> str:
        return f"{self.kind.value} {self.index}"


@dataclass(frozen=True)
class FilesResult:
    """The rows of a two-file comparison (one per tensor pair, in input-then-output order), the
    metric columns, both sides, and notes for the user."""

    left: FileSide
    right: FileSide
    rows: list[MetricRow]
    metrics: list[str]
    notes: list[str]

    @property
    def compared(self) -> int:
        return sum(1 for row in self.rows if row)


def file_kind(path: Path) -> FileKind:
    """The kind of a file by its name: ``.npy``, ``.txt`` (any case), else a dump file."""
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return FileKind.NPY
    if suffix == ".txt":
        return FileKind.TEXT
    return FileKind.DUMP


def read_text_tensor(path: Path) -> np.ndarray:
    """A ``.txt`` file's numbers as float64 (see the module doc for the shape).

    Raises :class:`DumpFormatError` naming the file for a token that is not a number, lines of
    different lengths, or a file without any number.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy warns "input contained no data": refused below instead
            array = np.loadtxt(path, dtype=np.float64, ndmin=1)
    except ValueError as exc:
        raise DumpFormatError(path, f"not a text file of whitespace-separated numbers: {exc}") from None
    except OSError as exc:
        raise DumpFormatError(path, f"cannot read the file: {exc.strerror or exc}") from None
    if array.size == 0:
        raise DumpFormatError(path, "holds no number (a .txt side is whitespace-separated numbers)")
    return array


def _single(path: Path, kind: FileKind, ref: TensorRef) -> FileSide:
    op = OpDump(name=path.name, op_type=None, path=path, files=(path,), outputs=(ref,))
    return FileSide(path, kind, op)


def read_side(path: Path, *, version: int | None = None) -> FileSide:
    """Read one side's file (metadata now; a ``.npy`` / dump tensor's bytes when it is compared).

    Raises :class:`DumpFormatError` (file and byte offset) when the file cannot be read as its kind.
    """
    path = Path(path)
    kind = file_kind(path)
    if kind is FileKind.NPY:
        return _single(path, kind, npy_ref(path.name, 0, path))
    if kind is FileKind.TEXT:
        array = read_text_tensor(path)
        ref = TensorRef(op_name=path.name, kind=TensorKind.OUTPUT, index=0, dtype=str(array.dtype), format=NO_LAYOUT,
                        shape=tuple(array.shape), path=path, nbytes=array.nbytes,
                        reader=functools.partial(np.asarray, array))
        return _single(path, kind, ref)
    parsed = parse_offline_name(path.name)
    name = parsed.op_name if parsed is not None else path.name
    if parsed is None:  # any file name will do: the header says what the file holds
        parsed = OfflineName(op_type="", op_name=name, task_id=0, stream_id=None, timestamp=0, timestamp_digits="")
    op = build_offline_op(name, [(path, parsed)], version=version)
    if op.error is not None:
        raise DumpFormatError(path, f"neither .npy, .txt nor a readable dump file ({op.error})")
    return FileSide(path, kind, replace(op, op_type=op.op_type or None))


def _shape_reason(a: TensorRef, b: TensorRef) -> str:
    """Why two tensors of different shapes are not compared (equal counts said explicitly)."""
    count_a, count_b = math.prod(a.shape), math.prod(b.shape)
    counts = (f"both hold {count_a} elements, but a two-file comparison needs identical shapes: reshape one first"
              if count_a == count_b else f"{count_a} vs {count_b} elements")
    return (f"shapes differ: left {shape_text(a.shape)} ({a.path.name}) vs right {shape_text(b.shape)} "
            f"({b.path.name}); {counts}")


def tensor_pair(base: dict, a: TensorRef, b: TensorRef) -> Pair:
    """The pair of two tensors: compared flat when the shapes are identical, else a row saying why not."""
    if tuple(a.shape) != tuple(b.shape):
        return Pair(**base, tensor_id=a.tensor_id, left=a, right=b, status=PairStatus.NOT_COMPARABLE,
                    reason=_shape_reason(a, b), convert=False)
    return Pair(**base, tensor_id=a.tensor_id, left=a, right=b, convert=False)


def _chosen(side: FileSide, choice: TensorChoice | None) -> TensorRef:
    """The tensor of one side that is compared (see the module doc); CompareError when absent."""
    if side.kind is not FileKind.DUMP:
        return side.op.outputs[0]
    wanted = choice or TensorChoice(TensorKind.OUTPUT, 0)
    ref = side.op.tensor(wanted.kind, wanted.index)
    if ref is None:
        held = [f"{t.kind.value} {t.index}" for t in (*side.op.inputs, *side.op.outputs)]
        raise OptionError(f"{side.path}: the dump has no {wanted.text} (it holds {', '.join(held) or 'no tensor'}); "
                          "-t input|output and -i N choose the dump tensor to compare")
    return ref


def pair_files(left: FileSide, right: FileSide, choice: TensorChoice | None = None) -> list[Pair]:
    """The pairs of two files, Index 0, 1, ... (see the module doc)."""
    if left.kind is FileKind.DUMP and right.kind is FileKind.DUMP and choice is None:
        pairs = op_tensor_rows(0, KINDS, left.op, right.op, tensor_pair)
    else:
        a, b = _chosen(left, choice), _chosen(right, choice)
        base = dict(index=0, op_type=left.op.op_type or right.op.op_type, left_op=left.op.name,
                    right_op=right.op.name, op_sequence=None)
        pairs = [tensor_pair(base, a, b)]
    return [replace(pair, index=i) for i, pair in enumerate(pairs)]


def compare_files(left: Path, right: Path, *, algorithms: Sequence[str | int] | str | None = None,
                  choice: TensorChoice | None = None, dump_version: int | None = None,
                  max_elements: int = 0) -> FilesResult:
    """Compare two files (see the module doc): every metric of ``algorithms`` (default all ten).

    Raises :class:`CompareError` when a file cannot be read or the chosen dump tensor does not
    exist; a pair that cannot be compared (shapes differ, unreadable data) is a row with its reason.
    """
    left_side, right_side = read_side(left, version=dump_version), read_side(right, version=dump_version)
    return _compare_sides(left_side, right_side, algorithms=algorithms, choice=choice, max_elements=max_elements)


def _compare_sides(left_side: FileSide, right_side: FileSide, *, algorithms: Sequence[str | int] | str | None,
                   choice: TensorChoice | None = None, max_elements: int = 0) -> FilesResult:
    """The comparison of two sides already read (:func:`compare_files`)."""
    metrics = resolve_algorithms(algorithms)
    notes = []
    if choice is not None and FileKind.DUMP not in (left_side.kind, right_side.kind):
        notes.append(f"-t/-i ({choice.text}) ignored: neither file is a dump (a .npy / .txt file holds one tensor)")
    pairs = pair_files(left_side, right_side, choice)
    options = EngineOptions(algorithms=metrics, max_elements=max_elements, workers=1, processes=False)
    rows = compare_pairs(pairs, options)
    return FilesResult(left_side, right_side, rows, metrics, notes)


def compare_npy_files(my: Path, golden: Path) -> FilesResult:
    """``vcompare file_compare``: two ``.npy`` files of identical shape, metrics 0, 1, 2, 3, 6, 7, 8, 9.

    Raises :class:`OptionError` when a path does not end in ``.npy`` (the reference's error 24) and
    :class:`ShapeError` when the shapes differ (its error 23); the result has exactly one row.
    """
    for flag, path in (("-m", my), ("-g", golden)):
        if Path(path).suffix.lower() != ".npy":
            raise OptionError(f"{flag} {path}: file_compare compares two .npy files (for .txt or dump files use "
                              "vcompare -l FILE -r FILE)")
    left_side, right_side = read_side(Path(my)), read_side(Path(golden))
    a, b = left_side.op.outputs[0], right_side.op.outputs[0]
    if tuple(a.shape) != tuple(b.shape):
        raise ShapeError(_shape_reason(a, b))
    return _compare_sides(left_side, right_side, algorithms=FILE_COMPARE_METRICS)


__all__ = ["FILE_COMPARE_METRICS", "FileKind", "FileSide", "FilesResult", "TensorChoice", "compare_files",
           "compare_npy_files", "pair_files", "read_side", "read_text_tensor"]
