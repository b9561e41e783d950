"""The reader contract: what one dump family's reader offers the loader (xarray's backend shape).

A dump family (Ascend offline dumps, golden folders, MindSpore / TF-NPU trees, msprobe dumps, a
third party's format) is read by one :class:`Reader`, defined in the family's own module and
listed in :data:`compare.loaders.READERS` (or added with :func:`compare.loaders.register_reader`,
or through the ``vcompare.readers`` entry-point group). :func:`compare.loaders.load_run` and
:func:`compare.loaders.detect` are loops over that list; they know no family by name.

Two kinds of reader:

* :class:`Reader` reads one dump *folder* (the leaf :func:`convert.tree.resolve_dump_folder`
  found below the path the user gave): :meth:`Reader.guess_can_open` says whether the folder is
  its kind -- quietly: "not mine" is ``False``, never an exception; :meth:`Reader.explain` says
  why not (for the "no reader found" diagnosis); :meth:`Reader.open` reads it (a claimed folder
  that turns out corrupt raises :class:`~compare.errors.DumpFormatError` with path and offset);
  :meth:`Reader.kind_of` gives its :class:`RunKind` from the file names alone.
* :class:`TreeReader` also reads whole dump *trees* whose selection options (``--rank``,
  ``--iteration``, ``--graph``, ``--model-name``, ``--ge-graph``) choose among the leaves: it is
  asked first, with the path as the user gave it (:meth:`TreeReader.claim_tree`), before any
  folder resolution, and it reads the parts of a tree compared each in turn
  (:mod:`compare.loaders.parts`). In folder resolution it is used for a forced ``kind`` only
  when it also claims the folder.

Adding a family: its reader module (a subclass of :class:`Reader` or :class:`TreeReader`, and its
line in ``READERS``; a third party registers instead), its name grammar (:mod:`convert.names`),
its :class:`~compare.records.DumpLayout` member when its runs have a layout of their own (with
:data:`~compare.records.SCOPE_NAMED_LAYOUTS` when they are paired by scope name,
:data:`~compare.records.GRADED_LAYOUTS` when their rows are graded msprobe's way), its tests (the
contract suite ``tests/compare/loaders/test_reader_contract.py`` runs every registered reader
over every fixture tree, a fixture tree of the family included).

What the rest of vcompare asks of a family is asked of its reader, never by the family's name:
the graph recorded beside a run (:meth:`Reader.graph`, for :mod:`compare.diverge.graph`), which
file names are dump data (:meth:`Reader.is_data_file_name`, for outlining a URL tree), and of a
tree reader: the part a single comparison picks (:meth:`TreeReader.select_one`), its model
folders (:meth:`TreeReader.model_folders`), whether a default selection follows the other side
(``aligns``), how messages name its trees (``part_trees``) and whether the consistency check
reads them (``replica_trees``). The runs reach them through :mod:`compare.loaders.parts` and
:func:`compare.loaders.recorded_graph`; nothing in ``runs/``, ``consistency/`` or ``diverge/``
changes for a new family.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ..diverge.records import OpGraph
from ..records import Run, RunKind
from .selection import Candidate, Selection

#: Entries of a folder a tree reader classifies to decide what it holds: a part's
#: ``Candidate.files`` count stops there, so a part that reaches it is a big one.
MAX_SNIFF = 512


@dataclass(frozen=True)
class OpenRequest:
    """What a reader is asked to read with: the path the user gave (``root``), the selection
    options, the dump file version (``None``: auto) and the op-name clean-up options
    (``fusion_rule``, ``keep_raw_names``: ``-ffts``)."""

    root: Path
    selection: Selection
    version: int | None = None
    fusion_rule: bool = False
    keep_raw_names: bool = False


@dataclass(frozen=True)
class RecordedGraph:
    """The operator graph a dump family records beside a run (:meth:`Reader.graph`): ``graph``, and
    ``known``: graph node name -> the report's op name, the pairs the family's own reader matched
    (:func:`compare.diverge.graph.align` aligns the rest by name)."""

    graph: OpGraph
    known: Mapping[str, str] = field(default_factory=dict)


class Reader(ABC):
    """The reader of one kind of dump folder (subclass it; see the module doc).

    ``name`` is how the "no reader found" diagnosis names it; ``kinds`` are the run kinds it
    produces (a forced ``kind=`` picks the first reader that produces it).
    """

    name: ClassVar[str] = ""
    kinds: ClassVar[tuple[RunKind, ...]] = ()

    def guess_can_open(self, folder: Path) -> bool:
        """Whether ``folder`` is this reader's kind; never raises for "not mine"."""
        return False

    @abstractmethod
    def explain(self, folder: Path) -> str:
        """Why ``folder`` is not this reader's kind (one clause of the "no reader found" message)."""

    @abstractmethod
    def open(self, folder: Path, request: OpenRequest) -> Run:
        """Read ``folder`` as a :class:`Run` (metadata; tensors on demand)."""

    def kind_of(self, folder: Path) -> RunKind:
        """The kind of run ``folder`` gives, from its file names alone (:func:`compare.loaders.detect`)."""
        return self.kinds[0]

    def is_data_file_name(self, name: str) -> bool:
        """Whether a file of this name holds this family's dump data, by the name alone: what a
        cluster worker copies for itself when a URL tree is outlined (:func:`convert.remote.outline`;
        every other file is metadata, copied with the tree). False: none is (the whole tree is
        copied)."""
        return False

    def is_run_file(self, path: Path) -> bool:
        """Whether this one FILE stands for a whole run of this family (msprobe's ``dump.json``): a
        run given by such a file is compared as a run, never in two-file mode
        (:meth:`compare.request.CompareRequest.mode`). By the name alone; False: no file does."""
        return False

    def graph(self, run: Run, ops: Collection[str], notes: list[str]) -> RecordedGraph | None:
        """The operator graph this family records beside ``run`` (:mod:`compare.diverge.graph`), or
        None when there is none for it; a graph file that cannot be used is None with a note in
        ``notes`` saying why. ``ops``: the report's op names (the left ones), in row order."""
        return None


class TreeReader(Reader):
    """The reader of a dump tree whose selection options choose the leaf (see the module doc).

    ``claim_tree`` returns the candidates (leaves or dump folders) of the tree, or None when the
    tree is not this reader's kind; ``problems`` receives what its walk could not read, as the
    reader sees fit to report it (also when it declines, if the walk is the tree's own).

    ``part_trees``: how the trees whose parts it compares each in turn are named in messages (noun
    phrases). ``replica_trees``: how the trees whose ranks the consistency check compares are named
    (:mod:`compare.consistency`); empty: the check does not read this reader's trees.
    ``aligns``: a rank / graph / iteration the user left to the default follows the other side's
    run in this reader's trees (:mod:`compare.runs.loading`); False: the reader's own default
    applies.
    """

    part_trees: ClassVar[tuple[str, ...]] = ()
    replica_trees: ClassVar[str] = ""
    aligns: ClassVar[bool] = False

    @abstractmethod
    def claim_tree(self, path: str | os.PathLike, request: OpenRequest,
                   problems: list[tuple[Path, str]]) -> list[Candidate] | None:
        """The candidates of the tree at ``path`` (as the user gave it), or None: not this reader's tree."""

    @abstractmethod
    def open_tree(self, path: str | os.PathLike, candidates: list[Candidate], request: OpenRequest) -> Run:
        """The run of the candidate the request's selection picks (its notes say which and why)."""

    def tree_kind(self, path: str | os.PathLike, candidates: list[Candidate]) -> RunKind:
        """The kind of run the tree gives with the default selection."""
        return self.kinds[0]

    # The parts of a tree compared each in turn (:mod:`compare.loaders.parts`).

    @abstractmethod
    def owns(self, candidate: Candidate) -> bool:
        """Whether ``candidate`` is one of this reader's (by its layout)."""

    @abstractmethod
    def select_one(self, path: str | os.PathLike, candidates: list[Candidate], selection: Selection) -> Candidate | None:
        """The candidate a single comparison's ``selection`` picks (the one :meth:`open_tree` reads)."""

    @abstractmethod
    def select_parts(self, candidates: list[Candidate], selection: Selection, *, where: str,
                     notes: list[str]) -> list[Candidate]:
        """Every part the selection keeps (one candidate per part), in (rank, [graph,] iteration) order."""

    @abstractmethod
    def scan_part(self, candidate: Candidate, *, root: Path, version: int | None = None,
                  keep_raw_names: bool = False) -> Run:
        """Read one part's folder as a run (its notes say which folder)."""

    @abstractmethod
    def load_part(self, path: str | os.PathLike, candidates: list[Candidate], selection: Selection, *,
                  version: int | None = None, keep_raw_names: bool = False) -> Run:
        """The run of the part ``selection`` picks among ``candidates``."""

    @abstractmethod
    def part_op_names(self, candidate: Candidate) -> list[str]:
        """The op names a part's run will have (cheaply, where the file names tell)."""

    def model_folders(self, path: str | os.PathLike, selection: Selection) -> dict[str, Candidate]:
        """The part each model folder of the tree at ``path`` gives under ``selection``, when it holds
        two or more (the runs choose the one that pairs: :func:`compare.runs.loading.choose_models`);
        empty otherwise. The default: this reader's trees have no model level."""
        return {}


__all__ = ["MAX_SNIFF", "OpenRequest", "Reader", "RecordedGraph", "TreeReader"]
