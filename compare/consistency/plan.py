"""The parts of a consistency check: each rank group at each selected (graph, iteration) of a tree.

The tree is walked as the comparison modes walk it, by the tree readers whose trees the check
reads (:attr:`~compare.loaders.reader.TreeReader.replica_trees`: the MindSpore and TF-NPU / GE
layouts); every rank is kept, and the ``iteration`` / ``graph`` /
``model_name`` selection is applied as for ``vcompare --rank all`` (:mod:`compare.loaders.selection`):
no ``iteration`` -> the newest iteration, ``all`` or a list -> each selected iteration in turn;
no ``graph`` -> the graph with the most dump files. Every default choice is a note.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import OptionError
from ..loaders import tree_readers
from ..loaders.reader import OpenRequest
from ..loaders.selection import Candidate, Selection, listing_text
from .check import ConsistencyPart
from .groups import GroupSpec
from .records import RankGroup

#: Walk problems (unreadable folders, link loops) named one by one in the notes; the rest counted.
MAX_WALK_NOTES = 10


@dataclass
class ConsistencyPlan:
    """The groups over the tree's ranks and the parts to check, with the notes of the choices."""

    root: Path
    groups: tuple[RankGroup, ...]
    parts: list[ConsistencyPart]
    notes: list[str] = field(default_factory=list)


def _as_int(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def plan_consistency(tree: str | os.PathLike, spec: GroupSpec, *, iteration: object = None, graph: object = None,
                     model_name: str | None = None) -> ConsistencyPlan:
    """The plan (module doc). Raises :class:`OptionError` when ``tree`` is not a dump tree with
    rank folders, or when the selection selects nothing (the message lists what there is)."""
    root = Path(tree)
    selection = Selection(rank="all", iteration=iteration, graph=graph, model_name=model_name)
    selection.specs()  # the option syntax, checked before the walk
    walked: list[tuple[Path, str]] = []
    checked = [reader for reader in tree_readers() if reader.replica_trees]
    request = OpenRequest(root=root, selection=selection)
    for reader in checked:  # the first reader whose tree it is
        leaves = reader.claim_tree(root, request, walked)
        if leaves is not None:
            break
    else:
        raise OptionError(f"{root} is not a dump tree with ranks: the consistency check reads "
                          f"{', '.join(reader.replica_trees for reader in checked)} dump trees")
    notes: list[str] = []
    chosen = reader.select_parts(leaves, selection, where=str(root), notes=notes)
    ranked = [leaf for leaf in chosen if _as_int(leaf.get("rank")) is not None]
    if not ranked:
        raise OptionError(f"{root}: no rank or device folder level; the consistency check compares the ranks "
                          "of one dump tree")
    by_part: dict[tuple[int | None, int | None], dict[int, Candidate]] = {}
    for leaf in ranked:
        key = (_as_int(leaf.get("graph")), _as_int(leaf.get("iteration")))
        by_part.setdefault(key, {})[int(leaf.get("rank"))] = leaf  # type: ignore[arg-type]
    ranks = sorted({rank for found in by_part.values() for rank in found})
    groups = spec.resolve(ranks)
    grouped = {rank for group in groups for rank in group.ranks}
    outside = [rank for rank in ranks if rank not in grouped]
    if outside:
        notes.append(f"rank(s) {listing_text(outside)} of {root} are in no group of {spec.text}: not checked")
    for path, why in walked[:MAX_WALK_NOTES]:
        notes.append(f"not read while walking {root}: {path}: {why}")
    if len(walked) > MAX_WALK_NOTES:
        notes.append(f"... and {len(walked) - MAX_WALK_NOTES} more entries of {root} not read while walking it")
    parts = [ConsistencyPart(root, group, graph_id, iteration_id,
                             {rank: found[rank] for rank in group.ranks if rank in found})
             for (graph_id, iteration_id), found in sorted(by_part.items(), key=lambda item: _order(item[0]))
             for group in groups]
    return ConsistencyPlan(root, groups, parts, notes)


def _order(key: tuple[int | None, int | None]) -> tuple[int, int]:
    graph, iteration = key
    return (-1 if graph is None else graph, -1 if iteration is None else iteration)


__all__ = ["ConsistencyPlan", "plan_consistency"]
