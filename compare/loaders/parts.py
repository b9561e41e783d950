"""The parts of a dump tree compared each in turn (``--rank`` / ``--iteration`` / ``--graph`` with
several values): MindSpore / TF-NPU leaves (:mod:`compare.loaders.trees`) or msprobe ``dump.json``
folders (:mod:`compare.loaders.msprobe`), behind one set of functions.

Policy: a tree is tried as an msprobe dump first, then as a MindSpore / TF-NPU tree -- the order
:func:`compare.loaders.load_run` uses, so an in-turn run reads each part as a single run would.
Each function dispatches on the candidates' layout (:attr:`DumpLayout.MSPROBE` or not); the
selection rules themselves stay in the two modules.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..records import DumpLayout, Run
from . import msprobe, trees
from .selection import Candidate, Selection


def _is_msprobe(candidates: list[Candidate]) -> bool:
    return bool(candidates) and candidates[0].layout is DumpLayout.MSPROBE


def claim_parts(path: str | os.PathLike, selection: Selection, *,
                problems: list[tuple[Path, str]] | None = None) -> list[Candidate] | None:
    """The part candidates of ``path``: its msprobe dump folders, else its MindSpore / TF-NPU leaves
    (:func:`compare.loaders.trees.claim`); None when it is neither kind of tree. What the walks
    could not read goes to ``problems``."""
    probe_problems: list[tuple[Path, str]] = []
    found = msprobe.claim(path, problems=probe_problems)
    if found is not None:
        if problems is not None:
            problems.extend(probe_problems)
        return found
    return trees.claim(path, selection, problems=problems)


def select_parts(candidates: list[Candidate], selection: Selection, *, where: str,
                 notes: list[str]) -> list[Candidate]:
    """Every part the selection keeps (one candidate per part), in (rank, [graph,] iteration) order."""
    if _is_msprobe(candidates):
        return msprobe.select_parts(where, candidates, selection, notes)
    return trees.select(candidates, selection, where=where, keep_all=True, notes=notes)


def scan_part(candidate: Candidate, *, root: Path, version: int | None = None, keep_raw_names: bool = False) -> Run:
    """Read one part's folder as a run (its notes say which folder)."""
    if candidate.layout is DumpLayout.MSPROBE:
        run = msprobe.scan_msprobe(candidate.path, root=root, coords=dict(candidate.coords))
        run.notes.insert(0, f"using msprobe dump folder {candidate.path} ({candidate.describe()})")
        return run
    return trees.scan_candidate(candidate, root=root, version=version, keep_raw_names=keep_raw_names)


def load_part(path: str | os.PathLike, candidates: list[Candidate], selection: Selection, *,
              version: int | None = None, keep_raw_names: bool = False) -> Run:
    """The other side's run of one part: the candidate ``selection`` (the part's rank and
    iteration) picks. Raises :class:`~compare.errors.OptionError` when the side has no such part
    (the message lists what it has)."""
    if _is_msprobe(candidates):
        return msprobe.load_msprobe(path, candidates, selection)
    return trees.load_selected(path, candidates, selection, version=version, keep_raw_names=keep_raw_names)


def part_op_names(candidate: Candidate) -> list[str]:
    """The op names a part's run will have (:func:`compare.loaders.trees.leaf_op_names`; an msprobe
    folder is read, metadata only)."""
    if candidate.layout is DumpLayout.MSPROBE:
        return list(scan_part(candidate, root=candidate.path).ops)
    return trees.leaf_op_names(candidate)


__all__ = ["claim_parts", "load_part", "part_op_names", "scan_part", "select_parts"]
