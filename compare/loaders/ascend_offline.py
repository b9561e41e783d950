"""The Ascend offline reader: a folder of ``{op_type}.{op_name}.{task_id}...`` dump files -> Run.

The folder's files are listed and classified by :mod:`compare.loaders.listing` (naming rules,
``mapping.csv``); this module groups the offline dump files by cleaned op name
(:func:`group_offline`), reads each op (:func:`compare.loaders.ascend.build_offline_op`, or
:func:`compare.loaders.ffts_ops.build_ffts_op` for FFTS+ slice files) and registers the reader
(:data:`READER`, ``ascend-offline``) that claims a folder most of whose files are offline dumps.
"""

from __future__ import annotations

import os
from pathlib import Path

from convert.codecs.ffts import FftsMode
from convert.names.ascend import OFFLINE_FORM, OfflineName

from ..records import Run, RunKind
from .ascend import build_offline_op, clean_op_name, is_quantized_name, no_valid_files_error
from .ffts_ops import build_ffts_op, ffts_mode
from .listing import Classified, FolderListing, cached_listing, list_folder, majority_kind
from .reader import OpenRequest, Reader


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


class AscendOfflineReader(Reader):
    """The ``ascend-offline`` reader: a folder most of whose files are Ascend offline dumps."""

    name = "ascend-offline"
    kinds = (RunKind.OFFLINE,)

    def guess_can_open(self, folder: Path) -> bool:
        return majority_kind(folder) == "offline"

    def explain(self, folder: Path) -> str:
        return f"no file named {OFFLINE_FORM}"

    def open(self, folder: Path, request: OpenRequest) -> Run:
        return scan_offline(folder, version=request.version, root=request.root, fusion_rule=request.fusion_rule,
                            keep_raw_names=request.keep_raw_names, listing=cached_listing(folder))


#: The Ascend offline reader (:data:`compare.loaders.READERS`).
READER = AscendOfflineReader()
