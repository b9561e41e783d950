"""Ascend dump folders listed and classified: every file of a folder's top level by its name.

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

The Ascend offline reader (:mod:`compare.loaders.ascend_offline`) and the golden reader
(:mod:`compare.loaders.golden_npy`) read what :func:`list_folder` classified; both sniff a folder
by its :meth:`FolderListing.majority`, through :func:`cached_listing` (one listing per folder).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

from convert.names.ascend import IGNORED_FILES, OfflineName, classify_name
from convert.names.hashed import is_hashed_name, lookup_hashed, read_mapping_rows
from convert.tree import list_entries, os_problem

from ..errors import CompareError


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
    base = Path(folder)
    for entry in entries:
        if entry.name in IGNORED_FILES:
            continue
        path = base / entry.name  # entry.path is this path as text; joining a name costs half of parsing it
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


def majority_kind(folder: Path) -> str | None:
    """The kind most files of ``folder`` have (:meth:`FolderListing.majority`, listed once through
    :func:`cached_listing`); None when none matched or the folder cannot be listed (a reader's
    sniff declines quietly)."""
    try:
        return cached_listing(folder).majority()
    except CompareError:
        return None



__all__ = ["Classified", "DumpEntry", "FolderListing", "cached_listing", "list_folder", "majority_kind"]
