"""The parts of a dump tree compared each in turn (``--rank`` / ``--iteration`` / ``--graph`` with
several values), behind one set of functions over the tree readers of the registry
(:class:`~compare.loaders.reader.TreeReader`: msprobe ``dump.json`` folders, MindSpore / TF-NPU
leaves).

Policy: the tree readers are asked in the order of :data:`compare.loaders.READERS` (msprobe
first, then MindSpore / TF-NPU trees) -- the order :func:`compare.loaders.load_run` uses, so an
in-turn run reads each part as a single run would. Every other function asks the reader that
owns the candidates (:meth:`~compare.loaders.reader.TreeReader.owns`); the selection rules
themselves stay in the readers' modules. What the runs ask of a tree beyond its parts goes
through here too (:func:`selected_part`, :func:`aligned_candidates`, :func:`model_folders`,
:func:`part_trees_text`), so that the runs know no family by name.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..records import Run
from . import tree_readers
from .reader import OpenRequest, TreeReader
from .selection import Candidate, Selection


def _owner(candidate: Candidate) -> TreeReader:
    """The tree reader whose candidate this is."""
    for reader in tree_readers():
        if reader.owns(candidate):
            return reader
    raise LookupError(f"no tree reader owns {candidate.path} (layout {candidate.layout.value!r})")


def claim_parts(path: str | os.PathLike, selection: Selection, *,
                problems: list[tuple[Path, str]] | None = None) -> list[Candidate] | None:
    """The part candidates of ``path``: those of the first tree reader that claims it (its msprobe
    dump folders, else its MindSpore / TF-NPU leaves); None when no tree reader does. What the
    walks could not read goes to ``problems``."""
    request = OpenRequest(root=Path(path), selection=selection)
    walked: list[tuple[Path, str]] = problems if problems is not None else []
    for reader in tree_readers():
        found = reader.claim_tree(path, request, walked)
        if found is not None:
            return found
    return None


def select_parts(candidates: list[Candidate], selection: Selection, *, where: str,
                 notes: list[str]) -> list[Candidate]:
    """Every part the selection keeps (one candidate per part), in (rank, [graph,] iteration) order.
    ``candidates``: as :func:`claim_parts` gave them (never empty)."""
    return _owner(candidates[0]).select_parts(candidates, selection, where=where, notes=notes)


def scan_part(candidate: Candidate, *, root: Path, version: int | None = None, keep_raw_names: bool = False) -> Run:
    """Read one part's folder as a run (its notes say which folder)."""
    return _owner(candidate).scan_part(candidate, root=root, version=version, keep_raw_names=keep_raw_names)


def load_part(path: str | os.PathLike, candidates: list[Candidate], selection: Selection, *,
              version: int | None = None, keep_raw_names: bool = False) -> Run:
    """The other side's run of one part: the candidate ``selection`` (the part's rank and
    iteration) picks. Raises :class:`~compare.errors.OptionError` when the side has no such part
    (the message lists what it has). ``candidates``: as :func:`claim_parts` gave them."""
    return _owner(candidates[0]).load_part(path, candidates, selection, version=version, keep_raw_names=keep_raw_names)


def part_op_names(candidate: Candidate) -> list[str]:
    """The op names a part's run will have (the owning reader's cheapest way to know them)."""
    return _owner(candidate).part_op_names(candidate)


def selected_part(path: str | os.PathLike, selection: Selection) -> Candidate | None:
    """The part a single comparison's ``selection`` picks in the tree at ``path`` (the one
    :func:`compare.loaders.load_run` reads); None when no tree reader claims ``path``. Raises
    :class:`~compare.errors.OptionError` when the selection matches nothing."""
    candidates = claim_parts(path, selection)
    if candidates is None:
        return None
    return _owner(candidates[0]).select_one(path, candidates, selection)


def aligned_candidates(path: str | os.PathLike, selection: Selection) -> list[Candidate] | None:
    """The part candidates of ``path`` when its reader lets a rank / graph / iteration left to the
    default follow the other side's run (:attr:`~compare.loaders.reader.TreeReader.aligns`); None
    when no tree reader claims ``path``, or when the one that does keeps its own defaults."""
    candidates = claim_parts(path, selection)
    if candidates is None or not _owner(candidates[0]).aligns:
        return None
    return candidates


def model_folders(path: str | os.PathLike, selection: Selection) -> dict[str, Candidate]:
    """The part each model folder of the tree at ``path`` gives under ``selection``
    (:meth:`~compare.loaders.reader.TreeReader.model_folders`: the first tree reader that finds two
    or more); empty when none does."""
    for reader in tree_readers():
        found = reader.model_folders(path, selection)
        if found:
            return found
    return {}


def part_trees_text() -> str:
    """The trees whose parts are compared each in turn, named for a message: every tree reader's
    :attr:`~compare.loaders.reader.TreeReader.part_trees`, alphabetically (a stable order whatever
    the registry's), the last after "or"."""
    phrases = sorted(phrase for reader in tree_readers() for phrase in reader.part_trees)
    if len(phrases) < 2:
        return "".join(phrases)
    return f"{', '.join(phrases[:-1])}{',' if len(phrases) > 2 else ''} or {phrases[-1]}"


__all__ = ["aligned_candidates", "claim_parts", "load_part", "model_folders", "part_op_names", "part_trees_text",
           "scan_part", "select_parts", "selected_part"]
