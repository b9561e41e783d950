"""TensorFlow NPU (``npu_device``) and GE dump leaves, the GE build graph file, stats CSVs.

Layout (seed 003): ``{dump_path}/{time}/{deviceid}/{model_name}/{model_id}/{data_index}/``
holding Ascend dump files ``{op_type}.{op_name}.{taskid}.{stream_id}.{timestamp}`` (``.``,
``/``, ``\\`` and spaces of op names written ``_``; names too long for the file system renamed to
random digits listed in ``mapping.csv``). ``model_name`` is the GE graph name with ``.``, ``/``,
``\\`` and spaces written ``_``; when several model_name folders exist, the one to read is the
one named after the first graph of the ``ge_proto_*_Build.txt`` file the user picked
(``--ge-graph``), or the one given by ``--model-name``. ``data_index`` is the iteration
(``dump_step``). MindSpore O2/GE dumps use the same layout (with a ``{step_id}`` folder above
``{time}`` for O2), plus ``Opdebug`` overflow records, ``statistic.csv`` and ``acl_dump_*.json``.

With ``dump_data=stats`` every dump file is replaced by ``{dump file name}.csv`` holding that
operator's tensor statistics (:mod:`compare.loaders.stats_csv`); such a leaf is read as a
statistics-only run (op names cleaned exactly like dump files, see
:func:`compare.loaders.ascend.clean_op_name`).
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

from convert.entries import special_file_problem
from convert.names.ascend import OfflineName, stats_csv_name
from convert.names.mindspore import is_ignored_name, is_overflow_name

from ..errors import OptionError
from ..records import DumpLayout, Run, RunKind
from .ascend import clean_op_name, no_valid_files_error
from .ascend_offline import scan_offline
from .listing import Classified, FolderListing, cached_listing
from .mindspore import read_overflow
from .ms_stats import merge_stats, stats_only_ops
from .stats_csv import read_stats_csv, refused_rows_note

_GRAPH_NAME_RE = re.compile(r'^\s*name:\s*"(.*)"\s*$')


def first_graph_name(path: str | os.PathLike) -> str:
    """The ``name`` of the first ``graph { ... }`` of a GE build file (protobuf text format).

    Reads only until that name (build files are megabytes). Raises :class:`OptionError` naming
    the file when it cannot be read or has no graph name.
    """
    path = Path(path)
    special = special_file_problem(path)  # never opened: a FIFO would block, a device never ends
    if special is not None:
        raise OptionError(f"--ge-graph {path}: {special}")
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            in_graph = False
            for number, line in enumerate(handle, start=1):
                stripped = line.strip()
                if not in_graph:
                    if stripped.startswith("graph") and stripped.endswith("{"):
                        in_graph = True
                    elif stripped.startswith('"graph"'):  # JSON form of a graph dump
                        in_graph = True
                    continue
                match = _GRAPH_NAME_RE.match(line)
                if match:
                    return match.group(1)
                json_match = re.match(r'^\s*"name"\s*:\s*"(.*?)"', line)
                if json_match:
                    return json_match.group(1)
                if number > 5000:
                    break
    except OSError as exc:
        raise OptionError(f"--ge-graph {path}: cannot read the file ({exc.strerror or exc})") from None
    raise OptionError(f"--ge-graph {path}: no 'graph {{ name: \"...\" }}' found (expected a ge_proto_*_Build.txt "
                      "graph dump in protobuf text format)")


def dump_model_name(graph_name: str) -> str:
    """A graph name as a model_name folder spells it (``.``, ``/``, ``\\``, space -> ``_``)."""
    for char in "./\\ ":
        graph_name = graph_name.replace(char, "_")
    return graph_name


def merged_listing(folder: Path, parts: tuple[Path, ...]) -> FolderListing:
    """One listing of the files of several folders (the op folders of a single-operator-model
    dump, ``{device_id}/{op_name}/``), named ``folder``; each file keeps its own path, and each
    folder's ``mapping.csv`` renamed its own hashed files."""
    merged = FolderListing(folder=folder)
    for part in parts:
        listing = cached_listing(part)
        merged.files.extend(listing.files)
        merged.skipped.extend(listing.skipped)
        merged.notes.extend(listing.notes)
    return merged


def scan_binary(folder: Path, *, version: int | None = None, root: Path | None = None,
                coords: dict | None = None, family: DumpLayout = DumpLayout.GE, fusion_rule: bool = False,
                keep_raw_names: bool = False, listing: FolderListing | None = None) -> Run:
    """Scan a leaf of Ascend-format files (async r1.x, O2 ``bin``, GE, TF NPU).

    Dump files are read as Ascend offline dumps (:func:`compare.loaders.ascend_offline.scan_offline`);
    ``Opdebug.Node_OpDebug.*`` files become ``run.overflow`` records; per-operator stats CSVs
    and ``statistic.csv`` give statistics (a statistics-only run when no dump file is present);
    ``acl_dump_*.json`` and kernel-argument JSON files are ignored. ``listing``: the files to
    read instead of ``folder``'s own (:func:`merged_listing`).
    """
    folder = Path(folder)
    base = listing if listing is not None else cached_listing(folder)
    keep: list[Classified] = []
    overflow = []
    records = []
    skipped: list[tuple[Path, str]] = []
    stats_files = []
    for item in base.files:
        name = item.entry.name
        if is_overflow_name(name):
            overflow.append(read_overflow(item.entry.path))
            continue
        parsed_csv = stats_csv_name(name)
        if parsed_csv is not None:
            read = read_stats_csv(item.entry.path, op_type=parsed_csv.op_type, op_name=parsed_csv.op_name,
                                  task_id=parsed_csv.task_id, stream_id=parsed_csv.stream_id,
                                  timestamp=parsed_csv.timestamp)
            records.extend(read.records)
            skipped.extend(read.skipped)
            stats_files.append(read)
            continue
        if name == "statistic.csv":
            read = read_stats_csv(item.entry.path)
            records.extend(read.records)
            skipped.extend(read.skipped)
            stats_files.append(read)
            continue
        if is_ignored_name(name):
            continue
        keep.append(item)
    ignored_paths = {c.entry.path for c in base.files if c not in keep}
    trailing = [c.entry.path.name for c in keep
                if isinstance(c.parsed, OfflineName) and c.parsed.trailing]
    notes = []
    if trailing:
        notes.append(f"{len(trailing)} file name(s) in {folder} have text after the dump name, which was "
                     f"ignored (prefix match, as the reference tool): {', '.join(trailing[:10])}")
    refused = refused_rows_note(stats_files)
    if refused:
        notes.append(f"statistics rows not used: {refused}")
    listing = FolderListing(folder=folder, files=keep,
                            skipped=[s for s in base.skipped if s[0] not in ignored_paths] + skipped,
                            notes=notes)

    def clean(name: str) -> str:
        return clean_op_name(name, fusion_rule=fusion_rule, keep_raw_names=keep_raw_names) or name

    extra = dict(family=family, coords=dict(coords or {}), overflow=overflow)
    if listing.of_kind("offline"):
        run = replace(scan_offline(folder, version=version, root=root or folder, fusion_rule=fusion_rule,
                                   keep_raw_names=keep_raw_names, listing=listing), **extra)
        if records:
            run.notes.append(merge_stats(run, records, key=clean).note("statistics CSV"))
        return run
    if records:
        run = Run(root=Path(root) if root else folder, path=folder, kind=RunKind.OFFLINE,
                        skipped=listing.skipped, notes=list(listing.notes), stats_only=True, **extra)
        run.ops = stats_only_ops(records, key=clean)
        run.notes.append(f"statistics only (dump_data=stats): {len(records)} tensor(s) in {len(run.ops)} "
                         f"operator(s) of {folder}")
        return run
    if overflow:
        run = Run(root=Path(root) if root else folder, path=folder, kind=RunKind.OFFLINE,
                        skipped=listing.skipped, notes=list(listing.notes), **extra)
        run.notes.append(f"the folder holds only {len(overflow)} overflow record(s)")
        return run
    raise no_valid_files_error(folder, listing.skipped)


def check_model_folder(model_names: list[str], wanted: str, source: str) -> str:
    """The model_name folder matching ``wanted`` (exactly, or in its ``_`` spelling).

    Raises :class:`OptionError` listing the folders when none matches.
    """
    for candidate in (wanted, dump_model_name(wanted)):
        if candidate in model_names:
            return candidate
    raise OptionError(f"{source}: no model_name folder is named {wanted!r} (folders: "
                      f"{', '.join(sorted(model_names)) or 'none'})")


__all__ = ["check_model_folder", "dump_model_name", "first_graph_name", "merged_listing", "scan_binary"]
