"""Overflow analysis: ``vcompare overflow -d DUMP -o OUT [-n N]`` and the Opdebug marks of the
network report's OverFlow column.

Steps (§7.8 of the reference-tool spec):

1. Find the overflow records, ``Opdebug.Node_OpDebug.{task}[.{stream}].{timestamp}[...]``, in every
   folder at most :data:`MAX_DEPTH` (30) levels below ``-d`` (``-d`` itself is level 0), and
   those a folder's ``mapping.csv`` lists under a hashed name. Symbolic-link loops are cut (each
   folder once); a folder that cannot be listed, or deeper than the limit, is said in the notes.
   A decoded JSON copy (``...output.{i}.json``) counts only when its Opdebug dump is not in the
   same folder. Files that start like a record but are neither (``.npy`` ...), and copies whose
   dump is read, are listed in ``skipped`` with the reason.
2. Sort them by the timestamp of their name (then by path) and keep the first ``n``.
3. Decode each (:func:`convert.codecs.opdebug.read_opdebug_file`): one finding per output tensor (debug
   struct); a file that cannot be decoded is one finding that says why.
4. Link each struct's reporting entry (:attr:`~convert.codecs.opdebug.OpDebugRecord.primary`) to the op
   dump *in the Opdebug file's folder* with the same task id and stream id (a name without a
   stream id counts as stream 0); when the entry has a context id / thread id and the dump name
   has one too (the long ``...{timestamp}.{task_type}.{context}.{thread}.{x}`` names), they must
   match as well. Of several, the earliest by timestamp (then by name) is taken. When no op dump
   matches, a tensor file converted from one (``{dump name}.{input|output}.{slot}[.{format}].npy``,
   what MindSpore's npy dumps hold) stands for it.
5. Read the linked dump: every input, then every output is written as
   ``{dump name}.{input|output}.{i}.npy`` into the output folder and its max / min / mean taken
   twice, over every element: in float64 (the JSON's) and in the tensor's own type as numpy
   gives them (the text's, as the reference prints them; an ml_dtypes type -- bfloat16, fp8,
   fp6, fp4, e8m0, int4 -- as float32 or int64, :func:`_numpy_native`); complex data: the real
   part. An
   operator known by converted tensor files only: those files are summarised where they are
   (nothing is copied).

Nothing stops the run but a bad ``-d`` or an output folder that cannot be written: every other
problem is stated in its block.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

import ml_dtypes
import numpy as np

from convert.codecs.dumpfile import read_header, read_tensor
from convert.codecs.npy import load_npy, logical_dtype_name, read_npy_header
from convert.codecs.opdebug import (
    OpDebugEntry,
    is_opdebug_name,
    parse_opdebug_json_name,
    parse_opdebug_name,
    read_opdebug_file,
    slice_ids,
)
from convert.entries import list_entries, os_problem
from convert.errors import CompareError, DumpFormatError, OptionError
from convert.names.ascend import OfflineName, parse_offline_name
from convert.names.hashed import is_hashed_name, read_mapping

from ..records import Run
from ..reports.files import NAME_MAX, atomic_write
from ..reports.overflow import (
    LinkedDump,
    NumpyValue,
    OverflowAnalysis,
    OverflowColumn,
    OverflowFinding,
    ShownStatistics,
    TensorSummary,
)

#: How deep below ``-d`` overflow records are looked for (as the reference tool).
MAX_DEPTH = 30
#: ``-n``: how many overflow records are analysed, at most.
MAX_RECORDS = 5


@dataclass(frozen=True)
class FolderFile:
    """A file of a dump folder under its real name (``path`` is the hashed file for names that
    ``mapping.csv`` maps)."""

    path: Path
    real_name: str


@dataclass(frozen=True)
class OpDebugSource:
    """An overflow record found on disk: the file, its real name, and that name's fields."""

    path: Path
    real_name: str
    name: OfflineName


def folder_files(folder: Path, notes: list[str] | None = None) -> list[FolderFile]:
    """The regular files of ``folder`` by real name: plain names, and hashed names that
    ``mapping.csv`` maps (a hashed file that mapping.csv does not list is left out; bad rows of
    mapping.csv go to ``notes``). Raises ``OSError`` when the folder cannot be listed."""
    entries = list_entries(folder)
    mapping, bad = read_mapping(folder)
    if notes is not None:
        notes += [f"{path}: {why}" for path, why in bad]
    out = []
    for entry in entries.files:
        if is_hashed_name(entry.name):
            real = mapping.get(entry.name)
            if real is not None:
                out.append(FolderFile(Path(entry.path), real))
            continue
        out.append(FolderFile(Path(entry.path), entry.name))
    return out


def opdebug_sources(files: Sequence[FolderFile]) -> tuple[list[OpDebugSource], list[tuple[Path, str]]]:
    """The overflow records among one folder's files, and the files named like one that are not
    read: ``(sources, skipped)``. A decoded JSON copy (``...output.{i}.json``) is a record of its
    own only when its Opdebug dump is not in the folder (else the dump is read)."""
    names = {item.real_name for item in files}
    sources: list[OpDebugSource] = []
    skipped: list[tuple[Path, str]] = []
    for item in files:
        if not is_opdebug_name(item.real_name):
            continue
        parsed = parse_opdebug_name(item.real_name)
        if parsed is not None:
            sources.append(OpDebugSource(item.path, item.real_name, parsed))
            continue
        copy = parse_opdebug_json_name(item.real_name)
        if copy is None:
            skipped.append((item.path, f"{item.real_name!r} starts like an overflow record but is none (neither "
                                       "an Opdebug dump nor its .output.N.json copy)"))
        elif copy.dump_name in names:
            skipped.append((item.path, f"a decoded copy of {copy.dump_name}, which is read instead"))
        else:
            sources.append(OpDebugSource(item.path, item.real_name, copy.name))
    return sources, skipped


def find_opdebug_files(root: Path, *, max_depth: int = MAX_DEPTH) -> tuple[list[OpDebugSource], list[tuple[Path, str]],
                                                                          list[str]]:
    """Every overflow record under ``root`` (module docstring, step 1): ``(sources, skipped, notes)``."""
    sources: list[OpDebugSource] = []
    skipped: list[tuple[Path, str]] = []
    notes: list[str] = []
    seen: set[tuple[int, int]] = set()
    deeper: list[Path] = []

    def walk(folder: Path, depth: int) -> None:
        try:
            st = folder.stat()
            if (st.st_dev, st.st_ino) in seen:
                return
            seen.add((st.st_dev, st.st_ino))
            files = folder_files(folder, notes)
            entries = list_entries(folder)
        except OSError as exc:
            notes.append(f"not searched: {os_problem(exc, folder)}")
            return
        notes.extend(f"not searched: {path}: {why}" for path, why in entries.unresolved)
        subfolders = entries.folders
        found, passed = opdebug_sources(files)
        sources.extend(found)
        skipped.extend(passed)
        for entry in subfolders:
            if depth >= max_depth:
                deeper.append(Path(entry.path))
            else:
                walk(Path(entry.path), depth + 1)

    walk(root, 0)
    if deeper:
        notes.append(f"{len(deeper)} folder(s) deeper than {max_depth} levels below {root} not searched, e.g. "
                     f"{deeper[0]}")
    sources.sort(key=lambda s: (s.name.timestamp, str(s.path)))
    return sources, skipped, notes


def _matches(entry: OpDebugEntry, name: OfflineName) -> bool:
    if name.task_id != entry.task_id or (name.stream_id or 0) != entry.stream_id:
        return False
    ids = slice_ids(name)
    if entry.context_id is not None and ids.context_id is not None and ids.context_id != entry.context_id:
        return False
    return not (entry.thread_id is not None and ids.thread_id is not None and ids.thread_id != entry.thread_id)


#: The trailing text of a tensor file converted from a dump: ``.{input|output}.{slot}[.{format}][...].npy``.
_CONVERTED_RE = re.compile(r"\.(input|output)\.([0-9]+)(?:\.([^.]+))?(?:\..*)?\.npy")


@dataclass(frozen=True)
class LinkedFile:
    """The op dump an entry links to: the file and its name's fields (``name.trailing`` is empty
    for an op dump, ``.output.0.NCHW.npy`` ... for a tensor file converted from one)."""

    file: FolderFile
    name: OfflineName

    @property
    def converted(self) -> bool:
        return bool(self.name.trailing)


def find_linked(entry: OpDebugEntry, files: Sequence[FolderFile], *, converted: bool = False) -> LinkedFile | None:
    """The op dump of ``files`` that ``entry`` links to (module docstring, step 4), or None.
    ``converted``: when no op dump matches, a tensor file converted from one
    (``{dump name}.{input|output}.{slot}[.{format}].npy``, as MindSpore's npy dumps and the
    conversion tools write them) may stand for it."""
    found: list[LinkedFile] = []
    stand_ins: list[LinkedFile] = []
    for item in files:
        if is_opdebug_name(item.real_name):
            continue
        name = parse_offline_name(item.real_name)
        if name is None or not _matches(entry, name):
            continue
        if not name.trailing:
            found.append(LinkedFile(item, name))
        elif converted and _CONVERTED_RE.fullmatch(name.trailing):
            stand_ins.append(LinkedFile(item, name))
    return min(found or stand_ins, key=lambda hit: (hit.name.timestamp, hit.file.real_name), default=None)


def _ids_text(entry: OpDebugEntry) -> str:
    text = f"task_id {entry.task_id} and stream_id {entry.stream_id}"
    if entry.context_id is not None:
        text += f", context_id {entry.context_id}"
    if entry.thread_id is not None:
        text += f", thread_id {entry.thread_id}"
    return text


def _statistics(array: np.ndarray) -> tuple[float | None, float | None, float | None, ShownStatistics | None]:
    """Max, min, mean in float64 (the JSON's), and the same in the tensor's own type as numpy
    computes them (``ndarray.max()`` / ``.min()`` / ``.mean()``: the text's, as the reference
    prints them, :class:`~compare.reports.overflow.NumpyValue`). All None for an empty array.
    Complex data: those of the real part; a bare 2-byte void (a bfloat16 ``.npy``) is read as
    bfloat16. NaN / inf arithmetic (``inf + -inf`` in a mean) gives NaN without a numpy warning."""
    if array.size == 0:
        return None, None, None, None
    if array.dtype.kind == "V" and array.dtype.itemsize == 2:
        array = array.view(ml_dtypes.bfloat16)
    values = np.real(array) if np.iscomplexobj(array) else array
    native = _numpy_native(values)
    with np.errstate(all="ignore"):
        shown = ShownStatistics(_numpy_value(native.max()), _numpy_value(native.min()), _numpy_value(native.mean()))
        wide = np.asarray(values, dtype=np.float64)
        return float(wide.max()), float(wide.min()), float(wide.mean()), shown


#: ml_dtypes' integer types (numpy's reductions would keep a mean of int4 data in int4).
_NARROW_INTEGERS = frozenset({"int2", "uint2", "int4", "uint4"})


def _numpy_native(values: np.ndarray) -> np.ndarray:
    """``values`` in a type numpy reduces properly: numpy's own types as they are; an ml_dtypes
    type (kind ``V``: bfloat16, the fp8 / fp6 / fp4 and e8m0 floats, int4 / int2) accumulates its
    sum in its own narrow type (a mean of e8m0 data overflows to NaN, of int2 data rounds to an
    int2), so its floats are summarised as float32 and its integers as int64, which hold every
    value exactly."""
    if values.dtype.kind != "V":
        return values
    return values.astype(np.int64 if values.dtype.name in _NARROW_INTEGERS else np.float32)


def _numpy_value(scalar: np.generic) -> NumpyValue:
    return NumpyValue(scalar.item(), scalar.dtype.name)


def _npy_writer(array: np.ndarray) -> Callable[[BinaryIO], None]:
    """Writes ``array`` as ``.npy`` (C order, no pickles) into an open file."""

    def write(handle: BinaryIO) -> None:
        np.save(handle, np.ascontiguousarray(array), allow_pickle=False)

    return write


def npy_name(item: FolderFile, name: OfflineName, kind: str, index: int) -> str:
    """``{dump name}.{kind}.{index}.npy``; when that is too long for a file name (a dump stored
    under a hashed name because its real name is long), ``{hashed name}.{kind}.{index}.npy``, else
    ``{op_type}.{task_id}.{stream_id}.{timestamp}.{kind}.{index}.npy``."""
    suffix = f".{kind}.{index}.npy"  # vconvert's naming (convert.tool.naming, which only vconvert imports)
    for stem in (item.real_name, item.path.name,
                 f"{name.op_type}.{name.task_id}.{name.stream_id or 0}.{name.timestamp}"):
        if len((stem + suffix).encode("utf-8", "surrogateescape")) <= NAME_MAX:
            return stem + suffix
    return f"{name.task_id}.{name.timestamp}{suffix}"


def read_linked(item: FolderFile, name: OfflineName, out_dir: Path) -> LinkedDump:
    """Read the linked op dump: each tensor written as ``.npy`` into ``out_dir`` (:func:`npy_name`)
    with its statistics (a tensor or file that cannot be read is said, not raised). Raises
    :class:`~compare.errors.OutputError` when an ``.npy`` cannot be written."""
    linked = LinkedDump(item.path, item.real_name, name.op_type, name.op_name, name.timestamp)
    try:
        header = read_header(item.path)
    except DumpFormatError as exc:
        return replace(linked, problem=str(exc))
    linked = replace(linked, recorded_op_name=header.op_name or None)
    tensors = []
    for info in header.tensors:
        summary = TensorSummary(kind=info.kind, index=info.index, format=info.format_name, shape=tuple(info.shape),
                                dtype=info.dtype_name, npy=None)
        try:
            array = read_tensor(header, info)
        except CompareError as exc:
            tensors.append(replace(summary, problem=str(exc)))
            continue
        npy = atomic_write(out_dir / npy_name(item, name, info.kind, info.index), _npy_writer(array))
        maximum, minimum, mean, shown = _statistics(array)
        tensors.append(replace(summary, npy=npy, maximum=maximum, minimum=minimum, mean=mean, shown=shown))
    return replace(linked, tensors=tuple(tensors))


def read_converted(hit: LinkedFile, files: Sequence[FolderFile]) -> LinkedDump:
    """A linked operator known only by its converted tensor files (``.npy``): each file of the
    same dump name summarised where it is (nothing is copied), inputs then outputs by slot."""
    stem = hit.file.real_name[: len(hit.file.real_name) - len(hit.name.trailing)]
    tensors = []
    for item in files:
        match = _CONVERTED_RE.fullmatch(item.real_name[len(stem):]) if item.real_name.startswith(stem) else None
        if match is None:
            continue
        kind, slot, layout = match.group(1), int(match.group(2)), match.group(3) or "ND"
        try:
            header = read_npy_header(item.path)
            array = load_npy(item.path, header)
        except (CompareError, OSError) as exc:
            why = str(exc) if isinstance(exc, CompareError) else os_problem(exc, item.path)
            tensors.append(TensorSummary(kind=kind, index=slot, format=layout, shape=(), dtype="?", npy=item.path,
                                         problem=why))
            continue
        maximum, minimum, mean, shown = _statistics(array)
        tensors.append(TensorSummary(kind=kind, index=slot, format=layout, shape=tuple(array.shape),
                                     dtype=logical_dtype_name(array.dtype), npy=item.path, maximum=maximum,
                                     minimum=minimum, mean=mean, shown=shown))
    tensors.sort(key=lambda t: (t.kind != "input", t.index))
    name = hit.name
    return LinkedDump(hit.file.path, stem, name.op_type, name.op_name, name.timestamp, tuple(tensors))


def analyse_source(source: OpDebugSource, out_dir: Path, *, version: int | None = None) -> list[OverflowFinding]:
    """The findings of one overflow record: one per debug struct, or one that says why the file
    cannot be decoded."""
    base = OverflowFinding(source=source.path, real_name=source.real_name, timestamp=source.name.timestamp,
                           output_index=None)
    try:
        record_file = read_opdebug_file(source.path, source.real_name, version=version)
    except DumpFormatError as exc:
        return [replace(base, problem=str(exc))]
    folder = source.path.parent
    folder_problem = None
    try:
        files = folder_files(folder)
    except OSError as exc:
        files, folder_problem = [], f"the folder cannot be listed: {os_problem(exc, folder)}"
    findings = []
    for record in record_file.records:
        entry = record.primary
        hit = find_linked(entry, files, converted=True)
        if hit is None:
            why = folder_problem or f"no op dump in {folder} has {_ids_text(entry)}"
            findings.append(replace(base, output_index=record.output_index, record=record, link_problem=why))
            continue
        linked = read_converted(hit, files) if hit.converted else read_linked(hit.file, hit.name, out_dir)
        findings.append(replace(base, output_index=record.output_index, record=record, linked=linked))
    return findings


def analyse_overflow(root: str | os.PathLike[str], out_dir: str | os.PathLike[str], *, count: int = 1,
                     version: int | None = None) -> OverflowAnalysis:
    """The whole analysis (module docstring). Raises :class:`OptionError` for a ``-d`` that is not a
    folder or an ``n`` outside 1..5, :class:`~compare.errors.OutputError` when the output folder
    cannot be written."""
    root = Path(root)
    if not 1 <= count <= MAX_RECORDS:
        raise OptionError(f"-n {count}: the number of overflow records to analyse must be 1..{MAX_RECORDS}")
    if not root.is_dir():
        raise OptionError(f"-d {root}: not a folder")
    sources, skipped, notes = find_opdebug_files(root)
    chosen = sources[:count]
    analysis = OverflowAnalysis(root=root, found=len(sources), selected=len(chosen), skipped=skipped, notes=notes)
    for source in chosen:
        analysis.findings += analyse_source(source, Path(out_dir), version=version)
    return analysis


def opdebug_column(runs: Sequence[Run], *, by_part: bool) -> tuple[OverflowColumn, list[str]]:
    """The OverFlow column of a network report, with the rows of the operators that the
    overflow records of each left run's folder (``run.path``, top level and ``mapping.csv``)
    link to marked ``YES``; ``by_part``: key the marks by the run's rank and iteration (rows of
    several parts). Returns the column and notes (records that could not be decoded or linked)."""
    linked: set[tuple[int | None, int | None, str]] = set()
    notes: list[str] = []
    for run in runs:
        try:
            files = folder_files(run.path, notes)
        except OSError as exc:
            notes.append(f"--overflow: overflow records not looked for: {os_problem(exc, run.path)}")
            continue
        sources, _ = opdebug_sources(files)
        for source in sources:
            try:
                record_file = read_opdebug_file(source.path, source.real_name)
            except DumpFormatError as exc:
                notes.append(f"--overflow: overflow record not decoded: {exc}")
                continue
            for record in record_file.records:
                hit = find_linked(record.primary, files, converted=True)
                if hit is None:
                    notes.append(f"--overflow: {source.real_name}: no op dump in {run.path} has "
                                 f"{_ids_text(record.primary)}")
                    continue
                rank, iteration = (run.rank, run.iteration) if by_part else (None, None)
                linked.add((rank, iteration, hit.name.op_name))
                notes.append(f"--overflow: {source.real_name} links to {hit.file.real_name}: rows of "
                             f"{hit.name.op_name} marked OverFlow YES")
    return OverflowColumn(frozenset(linked)), notes


__all__ = ["MAX_DEPTH", "MAX_RECORDS", "FolderFile", "OpDebugSource", "analyse_overflow", "analyse_source",
           "LinkedFile", "find_linked", "find_opdebug_files", "folder_files", "npy_name", "opdebug_column", "opdebug_sources",
           "read_converted",
           "read_linked"]
