"""Loaders: a dump folder or file -> Run of OpDump records (metadata now, tensors on demand).

One reader per dump family (:mod:`compare.loaders.reader`, xarray's backend shape), tried in
the order of :data:`READERS`:

1. ``msprobe`` (:mod:`compare.loaders.msprobe`): ``dump.json`` folders, with the ``rank`` /
   ``iteration`` (``step{N}``) options choosing the folder;
2. ``mindspore`` (:mod:`compare.loaders.trees`): MindSpore and TensorFlow-NPU dump trees, whose
   selection options (``rank``, ``iteration``, ``graph``, ``model_name``, ``ge_graph``) choose
   among the leaves of the whole tree;
3. ``ascend-offline`` (:mod:`compare.loaders.ascend_offline`) and ``golden-npy``
   (:mod:`compare.loaders.golden_npy`): one dump folder.

:func:`load_run` and :func:`detect` are loops over the registry and know no family by name:
first the *tree* readers (:class:`~compare.loaders.reader.TreeReader`) are asked, in order,
whether the path as given is their tree; then the path is resolved to its dump folder (a parent
of ``time/device/model_name/model_id/data_index`` is fine, see
:func:`convert.tree.resolve_dump_folder`) and the first reader whose ``guess_can_open`` says yes
reads it. When none does, the "no reader found" error names the folder, what each reader
looked for and the files that were not usable.

Third-party readers: :func:`register_reader`, or the ``vcompare.readers`` entry-point group
(each entry point names a :class:`~compare.loaders.reader.Reader` instance or class; they are
tried after the built-in readers, loaded on the first :func:`load_run` / :func:`detect`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Collection
from importlib.metadata import entry_points
from pathlib import Path

from convert.tree import resolve_dump_folder, walk_leaves

from ..errors import CompareError, DumpFormatError
from ..records import Run, RunKind
from . import ascend_offline, golden_npy, msprobe, trees
from .ascend import misnamed_summary
from .listing import cached_listing
from .reader import OpenRequest, Reader, RecordedGraph, TreeReader
from .selection import Selection
from .trees import MAX_DEPTH

__all__ = ["ENTRY_POINT_GROUP", "READERS", "OpenRequest", "Reader", "RecordedGraph", "TreeReader", "detect",
           "is_data_file_name", "is_run_file", "load_run", "readers", "recorded_graph", "register_reader", "resolve_dump_folder",
           "tree_readers"]

#: The entry-point group third-party readers are found by.
ENTRY_POINT_GROUP = "vcompare.readers"

#: The built-in readers, in the order :func:`detect` and :func:`load_run` try them (module doc).
READERS: list[Reader] = [msprobe.READER, trees.READER, ascend_offline.READER, golden_npy.READER]


def register_reader(reader: Reader, *, first: bool = False) -> None:
    """Add a reader (a third party's dump format); ``first=True`` tries it before the built-in ones."""
    if first:
        READERS.insert(0, reader)
    else:
        READERS.append(reader)


@functools.cache
def _plugin_readers() -> tuple[Reader, ...]:
    """The readers of the ``vcompare.readers`` entry points (an entry point may name a class: it is
    instantiated). Looked up once per process. Raises :class:`CompareError` naming the entry point
    when it cannot be loaded or is not a :class:`Reader`."""
    found = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = point.load()
            reader = loaded() if isinstance(loaded, type) else loaded
        except Exception as exc:  # a third party's import error, whatever it is: named, with the entry point
            raise CompareError(f"reader entry point {point.name} = {point.value} ({ENTRY_POINT_GROUP}) cannot be "
                               f"loaded: {type(exc).__name__}: {exc}") from exc
        if not isinstance(reader, Reader):
            raise CompareError(f"reader entry point {point.name} = {point.value} ({ENTRY_POINT_GROUP}) is not a "
                               f"compare.loaders.Reader: {reader!r}")
        found.append(reader)
    return tuple(found)


def readers() -> list[Reader]:
    """Every reader, in the order they are tried: :data:`READERS`, then the entry points'."""
    return [*READERS, *_plugin_readers()]


def tree_readers(kind: RunKind | None = None) -> list[TreeReader]:
    """The tree readers, in order: asked before folder resolution (those producing ``kind`` when it
    is forced), and for the parts of a tree compared each in turn (:mod:`compare.loaders.parts`)."""
    return [r for r in readers() if isinstance(r, TreeReader) and (kind is None or kind in r.kinds)]


def is_data_file_name(name: str) -> bool:
    """Whether a file of this name holds dump data of any reader's family, by the name alone
    (:meth:`~compare.loaders.reader.Reader.is_data_file_name`): what an outlined URL tree leaves
    to the worker that reads it (:func:`convert.remote.outline`)."""
    return any(reader.is_data_file_name(name) for reader in readers())


def is_run_file(path: str | os.PathLike) -> bool:
    """Whether a file stands for a whole run of some reader's family
    (:meth:`~compare.loaders.reader.Reader.is_run_file`: msprobe's ``dump.json``)."""
    return any(reader.is_run_file(Path(path)) for reader in readers())


def recorded_graph(run: Run, ops: Collection[str], notes: list[str]) -> RecordedGraph | None:
    """The operator graph recorded beside ``run``: that of the first reader that has one for it
    (:meth:`~compare.loaders.reader.Reader.graph`, in registry order); None when none has. A graph
    file that cannot be used is passed over with a note in ``notes``."""
    for reader in readers():
        found = reader.graph(run, ops, notes)
        if found is not None:
            return found
    return None


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


def _choose_reader(folder: Path, kind: RunKind | None, *, declined: tuple[Reader, ...] = (),
                   walked: list[tuple[Path, str]] | None = None) -> Reader:
    """The reader for ``folder``. ``declined``: tree readers that already declined this very folder
    (:meth:`~compare.loaders.reader.TreeReader.claim_tree`), so they decline without walking it
    again. ``walked``: what the walk to ``folder`` could not read (named by the error when no
    reader claims it). A forced ``kind`` takes the first reader producing it; a tree reader only
    when it also claims the folder."""
    if kind is not None:
        for reader in readers():
            if kind in reader.kinds:
                if isinstance(reader, TreeReader):
                    try:
                        if reader in declined or not reader.guess_can_open(folder):
                            continue
                    except Exception:  # a sniff must not raise; treat it as a decline
                        continue
                return reader
        raise CompareError(f"no reader produces runs of kind {kind.value!r}")
    tried = []
    for reader in readers():
        try:
            if reader not in declined and reader.guess_can_open(folder):
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


def _force_kind(run: Run, kind: RunKind | None) -> None:
    """A forced ``kind`` the files contradict: the run keeps the requested kind, with a note."""
    if kind is not None and run.kind is not kind:
        run.notes.append(f"run kind forced to {kind.value!r} (the files say {run.kind.value!r})")
        run.kind = kind


def detect(path: str | os.PathLike) -> RunKind:
    """The kind of dump folder ``path`` is (after resolving a parent tree to its leaf).

    Only file names are looked at (npy folders whose op names are quantized give QUANT).
    Raises :class:`CompareError` / :class:`DumpFormatError` when no reader claims the folder.
    """
    request = OpenRequest(root=Path(path), selection=Selection())
    declined: list[Reader] = []
    for reader in tree_readers(None):
        candidates = reader.claim_tree(path, request, [])
        if candidates is not None:
            return reader.tree_kind(path, candidates)
        declined.append(reader)
    folder, _ = resolve_dump_folder(path)
    reader = _choose_reader(folder, None, declined=tuple(declined) if folder == Path(path) else ())
    return reader.kind_of(folder)


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
    request = OpenRequest(root=Path(path), selection=selection, version=version, fusion_rule=fusion_rule,
                          keep_raw_names=keep_raw_names)
    walked: list[tuple[Path, str]] = []  # what the walks of the tree could not read
    declined: list[Reader] = []
    for tree_reader in tree_readers(kind):
        candidates = tree_reader.claim_tree(path, request, walked)
        if candidates is None:
            declined.append(tree_reader)
            continue
        run = tree_reader.open_tree(path, candidates, request)
        _add_walked(run, walked)
        _force_kind(run, kind)
        return run
    folder, notes = resolve_dump_folder(path, problems=walked)
    if selection.given:
        given = ", ".join(f"--{k.replace('_', '-')}" for k, v in vars(selection).items() if v is not None)
        notes.append(f"{given} ignored: {path} has no rank/iteration/graph/model levels")
    # a tree reader that declined the path with the selection declines it without one too
    # (a selection only adds candidates)
    reader = _choose_reader(folder, kind, declined=tuple(declined) if folder == Path(path) else (), walked=walked)
    run = reader.open(folder, request)
    run.root = Path(path)
    run.notes[:0] = notes
    _add_walked(run, walked)
    _force_kind(run, kind)
    return run
