"""Ascend dump folders: file naming, folder resolution, ``mapping.csv`` and offline-dump scanning.

Naming rules (§2.8 of the reference-tool spec; the folder's top level only, no recursion):

* **Offline (NPU) dump**: ``{op_type}.{op_name}.{task_id}[.{stream_id}].{timestamp}`` and the
  longer ``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}.{task_type}.{context_id}.
  {thread_id}.{x}`` variants. ``op_type`` and ``op_name`` are ``[A-Za-z0-9_-]+``, every other
  field is digits. Only a *prefix* has to match (as in the reference tool): text after the last
  digit field is tolerated and reported in ``Run.notes``.
* **Golden** ``{op_name}.{output_index}.{timestamp}.npy`` / ``.pb`` / ``.quant``: see
  :mod:`convert.names`. A name is classified by its suffix first (``.npy``, ``.pb``,
  ``.quant``), every other name by the offline rule -- exactly as the reference tool does.
* ``mapping.csv`` and ``convert_failed_file_list.txt`` are not dump files; neither are folders.
* **Hashed names**: a file whose name is all digits (or digits + ``.npy``) is renamed through
  ``mapping.csv`` (rows ``hashed_name,real_file_name``) before it is classified; its physical path
  is kept for reading.

The dump tree of an Ascend run is ``{time}/{device_id}/{model_name}/{model_id}/{data_index}/``
with ``time`` formatted ``YYYYMMDDhhmmss``; :func:`resolve_dump_folder` finds the leaf.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from convert.codecs import dumpfile
from convert.codecs.dtypes import Format, dtype_name, format_name
from convert.codecs.fastread import read_tensor_mapped
from convert.codecs.ffts import FftsMode, SliceAttr, merge_pieces, merged_path, merged_shape, slice_attr_of
from convert.names.ascend import IGNORED_FILES, OfflineName, classify_name
from convert.names.hashed import is_hashed_name, lookup_hashed, read_mapping_rows
from convert.tree import list_entries, os_problem

from ..errors import CompareError, DumpFormatError
from ..records import OpDump, Run, RunKind, TensorKind, TensorRef

if TYPE_CHECKING:
    from convert.codecs.dumpfile import DumpHeader, TensorInfo

#: Substrings of an op name that mark a quantized model (§2.8 "Quant detection").
QUANT_MARKERS = (
    "_quant_layer",
    "_anti_quant_layer",
    "AscendQuant",
    "AscendWeightQuant",
    "AntiQuant",
    "_quant",
    "_weight_quant",
    "_anti_quant",
    "_dequant_layer",
    "AscendDequant",
    "_dequant",
)

_LXSLICE_ANY_RE = re.compile(r"_lxslice[0-9]+")
_LXSLICE_END_RE = re.compile(r".lxslice[0-9]+$")
_SGT_RE = re.compile(r"sgt_graph_[0-9]+")


# --------------------------------------------------------------------------------------------
# Op-name clean-up
# --------------------------------------------------------------------------------------------


def clean_op_name(name: str, *, fusion_rule: bool = False, keep_raw_names: bool = False) -> str | None:
    """Clean an op name from a file name as the reference tool does (without ``-ffts``).

    1. With a fusion rule, every ``_lxslice<digits>`` is removed; without one, a name *ending*
       in ``lxslice<digits>`` loses that suffix and the one character before it.
    2. If the name contains ``_sgt_graph``, everything up to and including the last
       ``sgt_graph_<digits>`` plus one separator character is dropped -- only when that match is
       not at the end of the name.
    3. If ``_lxslice`` is still present, the file is ignored: ``None`` is returned.

    ``keep_raw_names=True`` (the reference's ``-ffts``) returns the name unchanged.
    """
    if keep_raw_names:
        return name
    if fusion_rule and "_lxslice" in name:
        name = _LXSLICE_ANY_RE.sub("", name)
    else:
        end = _LXSLICE_END_RE.search(name)
        if end is not None:
            name = name[: end.start()]
    if "_sgt_graph" in name:
        last = None
        for last in _SGT_RE.finditer(name):
            pass
        if last is not None and last.end() < len(name):
            name = name[last.end() + 1:]
    if "_lxslice" in name:
        return None
    return name


def is_quantized_name(name: str) -> bool:
    """Whether an op name carries one of the quantization markers of §2.8."""
    return any(marker in name for marker in QUANT_MARKERS)


# --------------------------------------------------------------------------------------------
# Folder listing: mapping.csv, hashed names, classification
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DumpEntry:
    """One file of a dump folder: where it is and the name it is classified by.

    ``name`` is the physical file name, or the real name from ``mapping.csv`` for hashed files.
    """

    path: Path
    name: str

    @property
    def mapped(self) -> bool:
        return self.path.name != self.name


@dataclass(frozen=True)
class Classified:
    """A :class:`DumpEntry` with its kind (``offline``, ``npy``, ``pb``, ``quant``) and parse.

    ``parsed`` is an :class:`OfflineName` or a :class:`convert.names.golden.GoldenName`; ``None`` with ``reason``
    set when the name matched no rule.
    """

    entry: DumpEntry
    kind: str
    parsed: object | None = None
    reason: str | None = None


_KIND_ORDER = ("offline", "npy", "pb", "quant")
_KIND_LABEL = {
    "offline": "Ascend offline dump",
    "npy": "golden .npy",
    "pb": "golden .pb",
    "quant": "golden .quant",
}


@dataclass
class FolderListing:
    """All files of one dump folder, classified; bad names and bad ``mapping.csv`` rows listed."""

    folder: Path
    files: list[Classified] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[Classified]:
        return [c for c in self.files if c.kind == kind and c.parsed is not None]

    def counts(self) -> dict[str, int]:
        out = {kind: 0 for kind in _KIND_ORDER}
        for item in self.files:
            if item.parsed is not None:
                out[item.kind] += 1
        return out

    def majority(self) -> str | None:
        """The kind most files have (ties: offline, npy, pb, quant); ``None`` if none matched."""
        counts = self.counts()
        best = max(_KIND_ORDER, key=lambda k: (counts[k], -_KIND_ORDER.index(k)))
        return best if counts[best] else None

    def unmatched(self) -> list[Classified]:
        return [c for c in self.files if c.parsed is None]

    def other_kinds_skipped(self, used: str) -> list[tuple[Path, str]]:
        """``Run.skipped`` rows for valid files of another kind than ``used`` (mixed folder)."""
        count = self.counts()[used]
        out = []
        for item in self.files:
            if item.parsed is None or item.kind == used:
                continue
            if count:
                reason = (
                    f"{_KIND_LABEL[item.kind]} file in a folder of {count} {_KIND_LABEL[used]} "
                    "file(s): a folder holds one kind, the one most files have is used (the "
                    "reference tool refuses mixed folders)"
                )
            else:
                reason = f"{_KIND_LABEL[item.kind]} file; this folder is read for {_KIND_LABEL[used]} files"
            out.append((item.entry.path, reason))
        return out

    def no_dump_files_error(self) -> CompareError:
        """The error for a folder in which no file is usable, naming the folder and the files."""
        return no_valid_files_error(self.folder, self.skipped)


def is_misnamed(reason: str) -> bool:
    """Whether a ``run.skipped`` reason says the file's *name* was refused (no naming rule
    matched, or a random-digit name without a ``mapping.csv`` entry), as opposed to a file that
    was named well but could not be used."""
    return any(text in reason for text in ("naming rule", "dump rule", "hashed file name", "random-digit file name"))


def _distinct_paths(skipped: Sequence[tuple[Path, str]]) -> list[Path]:
    return list(dict.fromkeys(path for path, _ in skipped))


def _examples(paths: Sequence[Path], limit: int = 3) -> str:
    shown = ", ".join(path.name for path in paths[:limit])
    return shown + (", ..." if len(paths) > limit else "")


def misnamed_summary(skipped: Sequence[tuple[Path, str]]) -> str:
    """``N misnamed (e.g. a, b, c)`` plus ``M other file(s) not usable`` -- counts of distinct files."""
    misnamed = _distinct_paths([s for s in skipped if is_misnamed(s[1])])
    other = [p for p in _distinct_paths([s for s in skipped if not is_misnamed(s[1])]) if p not in set(misnamed)]
    parts = []
    if misnamed:
        parts.append(f"{len(misnamed)} misnamed (e.g. {_examples(misnamed)})")
    if other:
        parts.append(f"{len(other)} other file(s) not usable (e.g. {_examples(other)})")
    return ", ".join(parts)


_STATS_PROBLEM_RE = re.compile(r"row \d+:|statistics file ")


def is_statistics_problem(path: Path, reason: str) -> bool:
    """A refused row of a statistics CSV (or a statistics CSV that could not be read): reported
    by the statistics reader's own note (``statistics rows not used: ...``), not as a file.
    Refused ``mapping.csv`` rows are not: they are named by the unused-files note."""
    return (path.name.endswith(".csv") and path.name != "mapping.csv"
            and _STATS_PROBLEM_RE.match(reason) is not None)


def _shown_path(path: Path, folder: Path | None) -> str:
    """A file of the run's own folder by its name; anything else (a folder of the tree that
    could not be read, a file of a sub-folder, any path when there is no ``folder``) by its path."""
    if folder is not None and Path(path).parent == Path(folder):
        return Path(path).name
    return str(path)


def unused_files_note(skipped: Sequence[tuple[Path, str]], limit: int = 3, *, folder: Path | None = None) -> str | None:
    """The stderr note for the files a run did not use, ``None`` when none.

    Always given, whatever the pairing mode: ``N file(s) not used: K misnamed (e.g. a, b, c), ...``
    then the first ``limit`` reasons (the whole list: ``Run.skipped``, and the ``skipped`` list of
    the JSON result). Files of ``folder`` (the run's folder) are named by their name, other
    paths (a folder of the tree that could not be listed, a link loop above the leaf) in full.
    Refused statistics rows are left to the statistics note (:func:`is_statistics_problem`).
    """
    skipped = [(path, why) for path, why in skipped if not is_statistics_problem(path, why)]
    if not skipped:
        return None
    files = _distinct_paths(skipped)
    reasons = "; ".join(f"{_shown_path(path, folder)} ({why})" if str(path) not in why else why
                        for path, why in skipped[:limit])
    more = f"; and {len(skipped) - limit} more" if len(skipped) > limit else ""
    return f"{len(files)} file(s) not used: {misnamed_summary(skipped)}: {reasons}{more}"


def no_valid_files_error(folder: Path, skipped: list[tuple[Path, str]]) -> CompareError:
    """Error for a folder without any usable dump file: ``no valid dump files: N misnamed (e.g.
    a, b, c)``, then (up to 10) files and why; "it is empty" only when it holds no file at all."""
    if not skipped:
        return CompareError(f"dump folder {folder} holds no dump files (it is empty)")
    shown = "; ".join(f"{path.name} ({reason})" for path, reason in skipped[:10])
    more = f"; and {len(skipped) - 10} more" if len(skipped) > 10 else ""
    count = len(_distinct_paths(skipped))
    return DumpFormatError(
        folder, f"no valid dump files: {misnamed_summary(skipped)}; {count} file(s) not used: {shown}{more}"
    )


def list_folder(folder: Path) -> FolderListing:
    """List and classify the top level of a dump folder (sorted by file name).

    Folders, ``mapping.csv`` and ``convert_failed_file_list.txt`` are ignored. Hashed names are
    renamed through ``mapping.csv``; a hashed file without a map entry is skipped with a reason.
    Files matching no naming rule are kept in ``files`` with ``parsed=None`` and ``reason`` set
    (and also listed in ``skipped``). Trailing text after an offline name gives a note.

    Entries that are not regular files are never opened and never hidden: FIFOs, devices,
    sockets, broken links and link loops go to ``skipped`` with what they are (whatever their
    name), and so does a folder named like a dump file. Raises :class:`CompareError`
    (``cannot list dump folder: permission denied: PATH``) when the folder cannot be listed.
    """
    listing = FolderListing(folder=folder)
    try:
        found = list_entries(folder)
    except OSError as exc:
        raise CompareError(f"cannot list dump folder: {os_problem(exc, folder)}") from exc
    entries = found.files
    listing.skipped.extend((path, why) for path, why in found.problems if path.name not in IGNORED_FILES)
    for entry in found.folders:
        if classify_name(entry.name)[1] is not None:
            listing.skipped.append((Path(entry.path), "a folder under a dump file's name, not a dump file"))
    mapping: dict[str, str] | None = None
    refused: dict[str, str] = {}
    trailing: list[str] = []
    for entry in entries:
        if entry.name in IGNORED_FILES:
            continue
        path = Path(entry.path)
        name = entry.name
        if is_hashed_name(name):
            if mapping is None:
                mapping, bad_rows, refused = read_mapping_rows(folder)
                listing.skipped.extend(bad_rows)
            real = lookup_hashed(name, mapping)
            if real is None:
                table = folder / "mapping.csv"
                why = ("not listed in mapping.csv" if table.is_file() else "mapping.csv is not a regular file"
                       if os.path.lexists(table) else "no mapping.csv in the folder")
                stem = name[:-4] if name.endswith(".npy") else name
                why = refused.get(name) or refused.get(stem) or refused.get(stem + ".npy") or why
                listing.skipped.append((path, f"hashed file name ({why}), cannot tell which op it is"))
                continue
            name = real
        kind, parsed, reason = classify_name(name)
        item = Classified(DumpEntry(path, name), kind, parsed, reason)
        listing.files.append(item)
        if parsed is None:
            shown = reason if name == path.name else f"mapped to {name!r}: {reason}"
            listing.skipped.append((path, shown))
        elif isinstance(parsed, OfflineName) and parsed.trailing:
            trailing.append(f"{path.name} (ignored {parsed.trailing!r})")
    if trailing:
        shown = ", ".join(trailing[:10]) + (f" and {len(trailing) - 10} more" if len(trailing) > 10 else "")
        listing.notes.append(
            f"{len(trailing)} file name(s) in {folder} have text after the dump name, which was "
            f"ignored (prefix match, as the reference tool): {shown}"
        )
    return listing


def _listing_key(folder: Path) -> tuple[str, int, int]:
    def mtime(path: Path) -> int:
        try:
            return path.stat().st_mtime_ns
        except OSError:
            return -1

    return (str(folder), mtime(folder), mtime(folder / "mapping.csv"))


@functools.lru_cache(maxsize=8)
def _cached_listing(key: tuple[str, int, int]) -> FolderListing:
    return list_folder(Path(key[0]))


def cached_listing(folder: Path) -> FolderListing:
    """:func:`list_folder`, cached while the folder and its ``mapping.csv`` keep their mtimes.

    Sniffing and scanning the same folder then lists it once. Treat the result as read-only.
    """
    return _cached_listing(_listing_key(Path(folder)))


# --------------------------------------------------------------------------------------------
# Offline scanning
# --------------------------------------------------------------------------------------------


def _dumpfile():
    return dumpfile


def read_dump_tensor(header, info):
    """``convert.codecs.dumpfile.read_tensor`` for comparisons: a tensor whose format code is not an Ascend
    ``OutputFormat`` value is refused too, and a large float tensor is memory-mapped (read-only)
    instead of copied (:func:`convert.codecs.fastread.read_tensor_mapped`).

    Policy: the layout of such data is unknown, so comparing it -- even element by element
    against a golden of the same size -- could compare unrelated positions. The reference tool
    fails on it as well (no format name). The conversion tools still read such files.
    """
    if int(info.format) not in _format_codes():
        known = f"0-{max(int(f) for f in Format if int(f) < 255)} and 255"
        problem = f"{info.label} has format code {info.format}, which is not an Ascend dump format (known: {known})"
        raise DumpFormatError(header.path, problem, offset=info.offset) from None

    return read_tensor_mapped(header, info)  # large float tensors memory-mapped (read-only), others read


@functools.lru_cache(maxsize=1)
def _format_codes() -> frozenset[int]:
    """The Ascend ``OutputFormat`` codes (asked once per tensor read)."""
    return frozenset(int(f) for f in Format)


def _tensor_refs(op_name: str, header, path: Path) -> tuple[tuple[TensorRef, ...], tuple[TensorRef, ...]]:
    """TensorRefs (metadata + lazy reader) for the inputs and outputs of a parsed dump header."""
    read_tensor = read_dump_tensor

    def refs(infos: Iterable, kind: TensorKind) -> tuple[TensorRef, ...]:
        out = []
        for info in infos:
            out.append(
                TensorRef(
                    op_name=op_name,
                    kind=kind,
                    index=int(info.index),
                    dtype=dtype_name(info.data_type),
                    format=format_name(info.format),
                    shape=tuple(int(d) for d in info.shape),
                    path=path,
                    original_shape=tuple(int(d) for d in info.original_shape),
                    address=int(info.address),
                    sub_format=int(info.sub_format),
                    nbytes=int(info.size),
                    reader=functools.partial(read_tensor, header, info),
                )
            )
        return tuple(out)

    return refs(header.inputs, TensorKind.INPUT), refs(header.outputs, TensorKind.OUTPUT)


def _read_header(path: Path, version: int | None) -> tuple["DumpHeader | None", str | None]:
    """``(header, None)``, or ``(None, diagnosis)`` when the file's header cannot be read."""
    try:
        return _dumpfile().read_header(path, version=version), None
    except CompareError as exc:
        return None, str(exc)
    except OSError as exc:
        return None, str(DumpFormatError(path, f"cannot read the file: {exc.strerror or exc}"))


def build_offline_op(
    name: str, files: list[tuple[Path, OfflineName]], *, version: int | None = None
) -> OpDump:
    """One OpDump from all files of an op (sorted oldest first): the latest file's header is read.

    A header that cannot be parsed gives ``error=<diagnosis>`` and no tensors; the op is kept.
    """
    path, parsed = files[-1]
    inputs: tuple[TensorRef, ...] = ()
    outputs: tuple[TensorRef, ...] = ()
    header, error = _read_header(path, version)
    if header is not None:
        inputs, outputs = _tensor_refs(name, header, path)
    return OpDump(
        name=name,
        op_type=parsed.op_type,
        path=path,
        files=tuple(p for p, _ in files),
        inputs=inputs,
        outputs=outputs,
        error=error,
        timestamp=parsed.timestamp,
    )


# --------------------------------------------------------------------------------------------
# FFTS+ sliced ops: one op, several slice files, merged when a tensor is loaded
# --------------------------------------------------------------------------------------------

_SLICE_NUMBER_RE = re.compile(r"lxslice([0-9]+)")


def ffts_mode(files: Sequence[tuple[Path, OfflineName]]) -> FftsMode | None:
    """The FFTS+ mode of an op's files (§2.8): None unless there are several and every one has
    task type 4 (FFTSPLUS); then manual when a raw op name holds ``_lxslice``, else automatic."""
    if len(files) < 2 or not all(parsed.ffts for _, parsed in files):
        return None
    return FftsMode.MANUAL if any("_lxslice" in parsed.op_name for _, parsed in files) else FftsMode.AUTOMATIC


def slice_number(parsed: OfflineName) -> int:
    """A manual-mode file's slice number: the digits of the last ``lxslice<digits>`` of its raw op
    name (0 when there is none). The reference reads only the last character of the name, so slice
    10 would sort before slice 2 there."""
    found = _SLICE_NUMBER_RE.findall(parsed.op_name)
    return int(found[-1]) if found else 0


def slice_order(files: Sequence[tuple[Path, OfflineName]], mode: FftsMode) -> list[tuple[Path, OfflineName]]:
    """The slice files in merge order: by thread id (automatic) or slice number (manual), then by
    16-digit timestamp, then by file name. A piece's thread index is its position in this list."""

    def key(item: tuple[Path, OfflineName]) -> tuple[int, int, str]:
        path, parsed = item
        first = slice_number(parsed) if mode is FftsMode.MANUAL else (parsed.thread_id or 0)
        return (first, parsed.sort_key, path.name)

    return sorted(files, key=key)


def _refuse(path: str, problem: str) -> np.ndarray:
    """The reader of a tensor that cannot be loaded: raises the diagnosis found at scan time."""
    raise DumpFormatError(path, problem)


def _refused(ref: TensorRef, exc: DumpFormatError, remark: str = "") -> TensorRef:
    return replace(ref, reader=functools.partial(_refuse, exc.path, exc.problem), remark=remark)


def _read_merged(headers: "tuple[DumpHeader, ...]", infos: "tuple[TensorInfo, ...]",
                 shapes: tuple[tuple[int, ...], ...], axis: int | None) -> np.ndarray:
    """Read the slices of one output and merge them (:func:`convert.codecs.ffts.merge_pieces`)."""
    count = 1 if axis is None else len(infos)
    arrays = [read_dump_tensor(header, info) for header, info in zip(headers[:count], infos[:count])]
    return merge_pieces(arrays, shapes[:count], axis, [h.path for h in headers[:count]])


def _piece_shapes(attr: SliceAttr, mode: FftsMode, index: int,
                  headers: "Sequence[DumpHeader]") -> tuple[tuple[int, ...], ...]:
    """The shape of each slice file's piece of output ``index`` (§2.9): the thread shape of
    ``output_tensor_slice`` (automatic) or the file's own dump shape (manual)."""
    if mode is FftsMode.AUTOMATIC:
        return tuple(attr.thread_shape(t, index, h.path) for t, h in enumerate(headers))
    return tuple(tuple(int(d) for d in h.outputs[index].shape) for h in headers)


def _merged_output(base: TensorRef, headers: "Sequence[DumpHeader]", attr: SliceAttr, mode: FftsMode,
                   count_remark: str) -> TensorRef:
    """The TensorRef of an FFTS+ op's output (``base``: the first slice file's ref of it): the
    merged tensor's metadata and a reader that merges the slices when it is loaded. A slice that
    does not fit (no such output, another dtype, a shape that does not concatenate) gives a ref
    whose reader raises the diagnosis."""
    first, index = headers[0], base.index
    axis = attr.merge_axis(index)
    remarks = [count_remark] if count_remark else []
    if axis is None:
        remarks.append(f"FFTS+ output {index} has no cut axis in outputCutList: the first slice file's "
                       f"({first.path.name}) data is compared")
    remark = "; ".join(remarks)
    paths = [h.path for h in headers]
    try:
        for header in headers[1:]:
            if index >= len(header.outputs):
                raise DumpFormatError(header.path, f"FFTS+ slice file has {len(header.outputs)} output(s), the first "
                                                   f"slice file {first.path.name} has output {index}")
            if int(header.outputs[index].data_type) != int(first.outputs[index].data_type):
                raise DumpFormatError(header.path, f"FFTS+ slice output {index} is {header.outputs[index].dtype_name}, "
                                                   f"the first slice file's is {first.outputs[index].dtype_name}")
        shapes = _piece_shapes(attr, mode, index, headers)
        shape = merged_shape(shapes, axis, paths)
    except DumpFormatError as exc:
        return _refused(base, exc, remark)
    infos = tuple(h.outputs[index] for h in headers)
    try:
        original = merged_shape([tuple(int(d) for d in i.original_shape) for i in infos], axis, paths)
    except DumpFormatError:
        original = ()  # slices without (or with disagreeing) framework shapes: none for the merged tensor
    used = infos if axis is not None else infos[:1]
    return replace(base, shape=shape, original_shape=original if all(i.original_shape for i in infos) else (),
                   nbytes=sum(int(i.size) for i in used), remark=remark,
                   reader=functools.partial(_read_merged, tuple(headers), infos, shapes, axis))


def build_ffts_op(name: str, files: list[tuple[Path, OfflineName]], mode: FftsMode, *,
                  version: int | None = None) -> OpDump:
    """One OpDump for an FFTS+ op cut into several slice files (§2.9 of the reference-tool spec).

    Every slice file's header is read now (metadata); the data are read and merged when an
    output is loaded. Policy (nothing silent, the op is never dropped):

    * the slice-attribute JSON is the first slice file's ``DumpData.attr[0]``; when it is missing
      or malformed, every tensor of the op is listed (first slice file's metadata) with a reader
      that raises that diagnosis, so each row says why;
    * a slice count other than ``slice_instance_num``: the tensors are still merged and each row
      carries that remark (the reference warns and flags the row too);
    * no output with a cut axis: the latest file (16-digit timestamp, then name) is compared, as
      the reference does, and each row says so;
    * outputs: concatenated along their first cut axis (:mod:`convert.codecs.ffts`); inputs: the first
      slice file's (they are not merged), each input row says so;
    * a header that cannot be read: ``OpDump.error`` names the file.

    ``OpDump.path`` is the first slice file (in merge order), ``files`` all of them.
    """
    ordered = slice_order(files, mode)
    headers = []
    for path, _ in ordered:
        header, error = _read_header(path, version)
        if header is None:
            return OpDump(name=name, op_type=ordered[0][1].op_type, path=path, files=tuple(p for p, _ in files),
                          error=f"FFTS+ slice file of {name} cannot be read: {error}", timestamp=ordered[0][1].timestamp)
        headers.append(header)
    first_path, first = ordered[0]
    shown = merged_path(first_path)

    def op(inputs: tuple[TensorRef, ...], outputs: tuple[TensorRef, ...], path: Path, parsed: OfflineName) -> OpDump:
        return OpDump(name=name, op_type=parsed.op_type, path=path, files=tuple(p for p, _ in files),
                      inputs=inputs, outputs=outputs, timestamp=parsed.timestamp)

    inputs, outputs = _tensor_refs(name, headers[0], first_path)
    try:
        attr = slice_attr_of(headers[0].attrs, first_path)
    except DumpFormatError as exc:
        why = f"FFTS+ op {name} ({len(files)} {mode.value}-mode slice files {shown}) cannot be merged"
        return op(tuple(_refused(r, exc, why) for r in inputs), tuple(_refused(r, exc, why) for r in outputs),
                  first_path, first)
    count_remark = ""
    if len(files) != attr.slice_instance_num:
        count_remark = (f"FFTS+ op {name}: {len(files)} slice file(s) ({shown}) but slice_instance_num is "
                        f"{attr.slice_instance_num}")
    if not attr.has_cut:
        path, parsed = files[-1]
        header = headers[[p for p, _ in ordered].index(path)]
        remark = "; ".join(filter(None, [count_remark, (
            f"FFTS+ op {name} has {len(files)} slice files and no cut axis in outputCutList: the latest, "
            f"{path.name}, is compared")]))
        ins, outs = _tensor_refs(name, header, path)
        return op(tuple(replace(r, remark=remark) for r in ins), tuple(replace(r, remark=remark) for r in outs),
                  path, parsed)
    input_remark = "; ".join(filter(None, [count_remark, (
        f"FFTS+ op input: the first of {len(files)} slice files ({first_path.name}); inputs are not merged")]))
    merged = tuple(_merged_output(ref, headers, attr, mode, count_remark) for ref in outputs)
    return op(tuple(replace(r, remark=input_remark) for r in inputs), merged, first_path, first)


def group_offline(
    items: list[Classified], *, fusion_rule: bool = False, keep_raw_names: bool = False
) -> tuple[dict[str, list[tuple[Path, OfflineName]]], list[tuple[Path, str]]]:
    """Group offline files by cleaned op name (each group sorted oldest first) + skipped files.

    Sorting: by 16-digit timestamp (others count as 0), ties by file name -- deterministic.
    Files with an invalid task-type field, or whose name keeps ``_lxslice`` after clean-up, are
    skipped with a reason.

    ``keep_raw_names`` (``-ffts``): automatic-mode FFTS+ thread files share their raw op name;
    when one name has files of several thread ids, each thread becomes its own op
    ``{op_name}_thread{id}`` (compared by itself; the reference would keep only the latest).
    """
    groups: dict[str, list[tuple[Path, OfflineName]]] = {}
    skipped: list[tuple[Path, str]] = []
    for item in items:
        parsed = item.parsed
        assert isinstance(parsed, OfflineName)
        problem = parsed.task_type_problem
        if problem:
            skipped.append((item.entry.path, problem))
            continue
        name = clean_op_name(parsed.op_name, fusion_rule=fusion_rule, keep_raw_names=keep_raw_names)
        if name is None:
            skipped.append(
                (item.entry.path, f"op name {parsed.op_name!r} still contains '_lxslice' after clean-up; ignored as the reference tool does")
            )
            continue
        groups.setdefault(name, []).append((item.entry.path, parsed))
    if keep_raw_names:
        groups = _split_threads(groups)
    for files in groups.values():
        files.sort(key=lambda f: (f[1].sort_key, f[0].name))
    return groups, skipped


def _split_threads(groups: dict[str, list[tuple[Path, OfflineName]]]) -> dict[str, list[tuple[Path, OfflineName]]]:
    """``-ffts``: the groups with an automatic-mode FFTS+ op's thread files split by thread id."""
    out: dict[str, list[tuple[Path, OfflineName]]] = {}
    for name, files in groups.items():
        threads = {parsed.thread_id for _, parsed in files}
        if ffts_mode(files) is not FftsMode.AUTOMATIC or len(threads) < 2 or None in threads:
            out[name] = files
            continue
        for path, parsed in files:
            out.setdefault(f"{name}_thread{parsed.thread_id}", []).append((path, parsed))
    return out


def scan_offline(
    folder: str | os.PathLike,
    *,
    version: int | None = None,
    root: str | os.PathLike | None = None,
    fusion_rule: bool = False,
    keep_raw_names: bool = False,
    listing: FolderListing | None = None,
) -> Run:
    """Scan an Ascend offline dump folder (the leaf) into a :class:`Run` of kind OFFLINE.

    One :class:`OpDump` per cleaned op name; its file is the latest by 16-digit timestamp (ties:
    file-name order) and ``files`` lists all of them. Only the chosen file's header is read, via
    ``convert.codecs.dumpfile.read_header`` with ``version`` (``None``: auto); a header that cannot be
    parsed makes ``OpDump.error`` the diagnosis and leaves its tensors empty -- the op is never
    dropped.

    Edge-case policy (differences from the reference tool are deliberate):

    * files matching no naming rule, hashed files missing from ``mapping.csv`` and bad
      ``mapping.csv`` rows go to ``run.skipped`` with the reason;
    * a task-type field outside 0-4: the reference aborts the whole run (exit 37); vcompare skips
      that one file with the reason in ``run.skipped`` and goes on;
    * golden (``.npy``/``.pb``/``.quant``) files in the folder are skipped with a reason (the
      reference refuses mixed folders);
    * ``fusion_rule`` / ``keep_raw_names`` steer the op-name clean-up (:func:`clean_op_name`);
    * an FFTS+ op of several slice files (task type 4, :func:`ffts_mode`) is one op whose outputs
      are merged from the slices when loaded (:func:`build_ffts_op`); with ``keep_raw_names``
      (``-ffts``) every slice stays its own op, as the reference does.

    Raises :class:`CompareError` when the folder holds no usable dump file (naming the folder and
    listing the files and why).
    """
    folder = Path(folder)
    listing = listing if listing is not None else list_folder(folder)
    groups, skipped = group_offline(
        listing.of_kind("offline"), fusion_rule=fusion_rule, keep_raw_names=keep_raw_names
    )
    all_skipped = list(listing.skipped) + listing.other_kinds_skipped("offline") + skipped
    if not groups:
        raise no_valid_files_error(folder, all_skipped)
    run = Run(
        root=Path(root) if root is not None else folder,
        path=folder,
        kind=RunKind.OFFLINE,
        skipped=all_skipped,
        notes=list(listing.notes),
    )
    for name in sorted(groups):
        mode = None if keep_raw_names else ffts_mode(groups[name])
        if mode is not None:
            run.ops[name] = build_ffts_op(name, groups[name], mode, version=version)
        else:
            run.ops[name] = build_offline_op(name, groups[name], version=version)
    run.quantized = any(is_quantized_name(name) for name in run.ops)
    return run
