"""Loaders: a dump folder or file -> Run of OpDump records (metadata now, tensors on demand).

:func:`load_run` resolves the folder (a parent of ``time/device/model_name/model_id/data_index``
is fine, see :func:`convert.tree.resolve_dump_folder`), asks each reader of
:data:`READERS` whether the folder is its kind and lets the first that says yes scan it.

A reader is any object with ``name``, ``kinds`` (the :class:`RunKind` values it produces),
``sniff(folder) -> bool`` (declines quietly: never raises for "not mine"), ``explain(folder) ->
str`` (why it declined, for the "no reader found" message) and
``scan(folder, *, version=None, root=None) -> Run``.

MindSpore and TensorFlow-NPU dump trees (:mod:`compare.loaders.trees`) are claimed before the
Ascend folder resolution, because their selection options (``rank``, ``iteration``, ``graph``,
``model_name``, ``ge_graph``) choose among the leaves of the whole tree; the ``mindspore``
reader in :data:`READERS` makes :func:`detect` and ``kind=`` know them too. msprobe dumps
(``dump.json`` folders, :mod:`compare.loaders.msprobe`) are claimed before both, with the
``rank`` / ``iteration`` (``step{N}``) options choosing the folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from convert.names.ascend import OFFLINE_FORM
from convert.tree import resolve_dump_folder, walk_leaves

from ..errors import CompareError, DumpFormatError
from ..records import Run, RunKind
from . import msprobe
from .ascend import cached_listing, is_quantized_name, misnamed_summary, scan_offline
from .golden_npy import scan_golden
from .selection import Selection
from .trees import MAX_DEPTH, claim, load_selected, select

__all__ = ["READERS", "Reader", "detect", "load_run", "register_reader", "resolve_dump_folder"]


class Reader(Protocol):
    name: str
    kinds: tuple[RunKind, ...]

    def sniff(self, folder: Path) -> bool: ...

    def explain(self, folder: Path) -> str: ...

    def scan(self, folder: Path, *, version: int | None = None, root: Path | None = None) -> Run: ...


@dataclass(frozen=True)
class FunctionReader:
    """A reader made of plain functions (the built-in readers)."""

    name: str
    kinds: tuple[RunKind, ...]
    sniff: Callable[[Path], bool]
    explain: Callable[[Path], str]
    scan: Callable[..., Run]
    #: Used for a forced ``kind`` only when it also sniffs the folder (readers of specific trees).
    claims_only: bool = False


def _majority(folder: Path) -> str | None:
    try:
        return cached_listing(folder).majority()
    except CompareError:
        return None


def _sniff_family(folder: Path) -> bool:
    return claim(folder) is not None


def _explain_family(folder: Path) -> str:
    return ("no MindSpore dump (.bin / {op_type}.{op_name}...{input|output}.{slot}.{format}.npy / "
            "statistic.csv) and no rank_N, device_N, iteration_N or stats-CSV tree")


def _scan_family(folder: Path, *, version: int | None = None, root: Path | None = None) -> Run:
    candidates = claim(folder)
    if candidates is None:
        raise CompareError(f"{folder}: {_explain_family(folder)}")
    return load_selected(root or folder, candidates, Selection(), version=version)


def _sniff_offline(folder: Path) -> bool:
    return _majority(folder) == "offline"


def _sniff_golden(folder: Path) -> bool:
    return _majority(folder) in ("npy", "pb", "quant")


def _explain_offline(folder: Path) -> str:
    return f"no file named {OFFLINE_FORM}"


def _explain_golden(folder: Path) -> str:
    return "no file named {op_name}.{output_index}.{timestamp}.npy / .pb / .quant"


#: The reader of MindSpore / TF-NPU dump trees (:mod:`compare.loaders.trees`).
TREES_READER = FunctionReader(
    name="mindspore",
    kinds=(RunKind.NUMPY, RunKind.OFFLINE),
    sniff=_sniff_family,
    explain=_explain_family,
    scan=_scan_family,
    claims_only=True,
)

def _scan_msprobe(folder: Path, *, version: int | None = None, root: Path | None = None) -> Run:
    candidates = msprobe.claim(folder)
    if candidates is None:
        raise CompareError(f"{folder}: {msprobe.explain(folder)}")
    return msprobe.load_msprobe(root or folder, candidates, Selection())


#: The reader of msprobe dumps (``dump.json`` folders, :mod:`compare.loaders.msprobe`).
MSPROBE_READER = FunctionReader(name="msprobe", kinds=(RunKind.NUMPY,), sniff=msprobe.sniff, explain=msprobe.explain,
                                scan=_scan_msprobe, claims_only=True)

#: The readers tried, in order, by :func:`detect` and :func:`load_run`.
READERS: list[Reader] = [
    MSPROBE_READER,
    TREES_READER,
    FunctionReader(
        name="ascend-offline",
        kinds=(RunKind.OFFLINE,),
        sniff=_sniff_offline,
        explain=_explain_offline,
        scan=scan_offline,
    ),
    FunctionReader(
        name="golden-npy",
        kinds=(RunKind.NUMPY, RunKind.STANDARD, RunKind.QUANT),
        sniff=_sniff_golden,
        explain=_explain_golden,
        scan=scan_golden,
    ),
]


def register_reader(reader: Reader, *, first: bool = False) -> None:
    """Add a reader (e.g. MindSpore layouts); ``first=True`` tries it before the built-in ones."""
    if first:
        READERS.insert(0, reader)
    else:
        READERS.append(reader)


def _misnamed_below(root: Path, walked: list[tuple[Path, str]]) -> list[tuple[Path, list[tuple[Path, str]]]]:
    """Folders below ``root`` (the bounded walk) that hold files, none of them usable, with the
    files and why: what a dump tree of only misnamed files is made of. What the walk could not
    enter is added to ``walked``."""
    def holds_files(folder: Path) -> list[tuple[Path, str]] | None:
        try:
            listing = cached_listing(folder)
        except CompareError:
            return None
        return list(listing.skipped) if listing.skipped else None

    return walk_leaves(root, MAX_DEPTH, holds_files, skip_dir=lambda name: name.startswith("."), problems=walked)


def _described(problems: list[tuple[Path, str]], limit: int = 5) -> str:
    """``permission denied: PATH; PATH: a symbolic link loop (...)`` -- the first ``limit``."""
    shown = "; ".join(why if str(path) in why else f"{path}: {why}" for path, why in problems[:limit])
    return shown + (f"; and {len(problems) - limit} more" if len(problems) > limit else "")


def _no_reader_error(folder: Path, tried: list[str], walked: list[tuple[Path, str]] | None = None) -> CompareError:
    """The "no reader found" error: the folder, what was tried and why, and the unusable files.

    A folder of only sub-folders whose files are all misnamed (a dump tree written with a wrong
    naming) names those folders and files, not "empty"; a tree whose folders could not be read
    (``walked``: a folder the user may not list, a link loop) names them (``permission denied:
    PATH``), not "empty".
    """
    walked = walked if walked is not None else []
    try:
        listing = cached_listing(folder)
    except CompareError as exc:
        return exc
    why = "; ".join(tried)
    bad = listing.skipped
    if not listing.files and not bad:
        below = _misnamed_below(folder, walked)
        if not below and walked:
            return CompareError(f"dump folder {folder} holds no usable dump files: {len(walked)} folder(s) or "
                                f"link(s) below it could not be read: {_described(walked)}")
        if not below:
            return CompareError(f"dump folder {folder} holds no dump files (it is empty)")
        bad = [item for _, skipped in below for item in skipped]
        where = ", ".join(str(f) for f, _ in below[:3]) + (f" and {len(below) - 3} more" if len(below) > 3 else "")
        shown = "; ".join(f"{p.name} ({reason})" for p, reason in bad[:5])
        more = f"; and {len(bad) - 5} more" if len(bad) > 5 else ""
        unread = f"; could not be read: {_described(walked)}" if walked else ""
        return DumpFormatError(folder, f"no valid dump files: {misnamed_summary(bad)} in {len(below)} folder(s) "
                                       f"below it ({where}): {shown}{more}{unread}")
    shown = "; ".join(f"{p.name} ({reason})" for p, reason in bad[:10])
    more = f"; and {len(bad) - 10} more" if len(bad) > 10 else ""
    return DumpFormatError(
        folder,
        f"no valid dump files: {misnamed_summary(bad)}; {len(bad)} file(s) not usable: {shown}{more} (tried {why})",
    )


def _choose_reader(folder: Path, kind: RunKind | None, *, trees_declined: bool = False,
                   walked: list[tuple[Path, str]] | None = None) -> Reader:
    """The reader for ``folder``; ``trees_declined``: :func:`compare.loaders.trees.claim` already
    returned None for this very folder, so the MindSpore reader (whose sniff is that call) declines
    without walking it again. ``walked``: what the walk to ``folder`` could not read (named by the
    error when no reader claims it)."""

    def declined(reader: Reader) -> bool:
        return trees_declined and reader is TREES_READER

    if kind is not None:
        for reader in READERS:
            if kind in reader.kinds:
                if isinstance(reader, FunctionReader) and reader.claims_only:
                    try:
                        if declined(reader) or not reader.sniff(folder):
                            continue
                    except Exception:  # a sniff must not raise; treat it as a decline
                        continue
                return reader
        raise CompareError(f"no reader produces runs of kind {kind.value!r}")
    tried = []
    for reader in READERS:
        try:
            if not declined(reader) and reader.sniff(folder):
                return reader
        except Exception as exc:  # a sniff must not raise; treat it as a decline with the reason
            tried.append(f"{reader.name}: sniff failed ({exc})")
            continue
        tried.append(f"{reader.name}: {reader.explain(folder)}")
    raise _no_reader_error(folder, tried, walked)


def _add_walked(run: Run, walked: list[tuple[Path, str]]) -> None:
    """Add to ``run.skipped`` what the walk of its tree could not read (a folder the user may not
    list, a link loop, a broken link), each once."""
    known = {path for path, _ in run.skipped}
    run.skipped.extend((path, why) for path, why in walked if path not in known)


def detect(path: str | os.PathLike) -> RunKind:
    """The kind of dump folder ``path`` is (after resolving a parent tree to its leaf).

    Only file names are looked at (npy folders whose op names are quantized give QUANT).
    Raises :class:`CompareError` / :class:`DumpFormatError` when no reader claims the folder.
    """
    if msprobe.claim(path) is not None:
        return RunKind.NUMPY
    candidates = claim(path)
    if candidates is not None:
        chosen = select(candidates, Selection(), where=str(path))
        return RunKind.OFFLINE if chosen and chosen[0].kind == "offline" else RunKind.NUMPY
    folder, _ = resolve_dump_folder(path)
    reader = _choose_reader(folder, None)
    if reader.name == "golden-npy":
        listing = cached_listing(folder)
        majority = listing.majority()
        if majority == "npy":
            quantized = any(is_quantized_name(item.parsed.op_name) for item in listing.of_kind("npy"))
            return RunKind.QUANT if quantized else RunKind.NUMPY
        return RunKind.STANDARD if majority == "pb" else RunKind.QUANT
    return reader.kinds[0]


def load_run(
    path: str | os.PathLike,
    *,
    version: int | None = None,
    kind: RunKind | None = None,
    fusion_rule: bool = False,
    keep_raw_names: bool = False,
    rank: object = None,
    iteration: object = None,
    graph: object = None,
    model_name: str | None = None,
    ge_graph: str | os.PathLike | None = None,
) -> Run:
    """Load a dump folder as a :class:`Run` (metadata only; tensors are read on ``load()``).

    ``path``: the folder holding the dump files, or a parent of the Ascend
    ``time/device/model_name/model_id/data_index`` tree (the newest leaf is used; ``run.notes``
    says which). ``version``: dump file version (1 protobuf, 2 binary; ``None`` auto).
    ``kind``: force a reader instead of detecting one; if the folder's files say otherwise the
    run keeps the requested kind and a note says what was detected. ``fusion_rule`` /
    ``keep_raw_names`` steer the offline op-name clean-up; ``keep_raw_names`` (``-ffts``) also
    keeps the slice files of an FFTS+ op apart instead of merging them (docs/ffts.md).

    Selection (MindSpore / TensorFlow-NPU trees, see :mod:`compare.loaders.selection`):
    ``rank`` and ``iteration`` take a number, a list, a range (``0|5-8``) or ``all`` -- one run
    is returned, so a spec selecting several uses the largest with a note (compare each in turn
    with :func:`compare.runs.folders.run_network`); ``graph`` a graph id; ``model_name`` the model_name
    folder, ``ge_graph`` a ``ge_proto_*_Build.txt`` whose first graph names it. ``None`` = the
    only candidate or the newest, with a note. On a folder without these levels the options are
    ignored with a note.

    What the walk of a tree could not read -- a folder the user may not list, a link loop, a
    broken link, a link into a folder that cannot be entered -- is passed over (its siblings are
    still searched) and added to ``run.skipped``; so are FIFOs, devices and folders under dump
    file names in the leaf (never opened).

    Raises :class:`CompareError` for a missing or empty folder, a FIFO or device given as the
    folder, and a folder without any usable dump file (the message names the folder and lists the
    files and why, or ``permission denied: PATH`` for the folders that could not be read);
    :class:`~compare.errors.OptionError` when a selection matches nothing (listing what there is).
    """
    selection = Selection(rank=rank, iteration=iteration, graph=graph, model_name=model_name,
                          ge_graph=Path(ge_graph) if ge_graph is not None else None)
    selection.specs()  # validate the option syntax before touching the disk
    trees_declined = False
    walked: list[tuple[Path, str]] = []  # what the walks of the tree could not read
    if kind is None or kind is RunKind.NUMPY:
        probe_walked: list[tuple[Path, str]] = []  # kept only when msprobe claims the path (else walked below)
        probed = msprobe.claim(path, problems=probe_walked)
        if probed is not None:
            run = msprobe.load_msprobe(path, probed, selection)
            _add_walked(run, probe_walked)
            return run
    if kind is None or kind in (RunKind.NUMPY, RunKind.OFFLINE):
        candidates = claim(path, selection, problems=walked)
        trees_declined = candidates is None
        if candidates is not None:
            run = load_selected(path, candidates, selection, version=version, fusion_rule=fusion_rule,
                                keep_raw_names=keep_raw_names)
            _add_walked(run, walked)
            if kind is not None and run.kind is not kind:
                run.notes.append(f"run kind forced to {kind.value!r} (the files say {run.kind.value!r})")
                run.kind = kind
            return run
    folder, notes = resolve_dump_folder(path, problems=walked)
    if selection.given:
        given = ", ".join(f"--{k.replace('_', '-')}" for k, v in vars(selection).items() if v is not None)
        notes.append(f"{given} ignored: {path} has no rank/iteration/graph/model levels")
    # claim(path, selection) is None: then claim(path) is too (a selection only adds candidates)
    reader = _choose_reader(folder, kind, trees_declined=trees_declined and folder == Path(path), walked=walked)
    if reader.name == "ascend-offline":
        run = scan_offline(
            folder,
            version=version,
            root=path,
            fusion_rule=fusion_rule,
            keep_raw_names=keep_raw_names,
            listing=cached_listing(folder),
        )
    elif reader.name == "mindspore":
        run = _scan_family(folder, version=version, root=Path(path))
    elif reader.name == "golden-npy":
        run = scan_golden(folder, version=version, root=path, listing=cached_listing(folder))
    else:
        run = reader.scan(folder, version=version, root=Path(path))
    run.root = Path(path)
    run.notes[:0] = notes
    _add_walked(run, walked)
    if kind is not None and run.kind is not kind:
        run.notes.append(f"run kind forced to {kind.value!r} (the files say {run.kind.value!r})")
        run.kind = kind
    return run
