"""The localisation of a compared network (:func:`localise_network`): the graph of each part from
what the run read (the fusion rule, the left dump leaf's MindSpore files, the rows' order), then
:func:`compare.diverge.localise` with the run's policy (or the built-in data-type bounds)."""

from __future__ import annotations

import numpy as np

from ..diverge.checks import PartRows
from ..diverge.graph import build_graph
from ..diverge.records import Localisation, OpGraph
from ..diverge.verdicts import PartKey, localise, parts_of
from ..heap import paused_gc
from ..stats_table import RowColumns
from ..verdict.policy import Policy
from .network import NetworkResult


def localise_network(result: NetworkResult, policy: Policy | None = None) -> Localisation | None:
    """Every operator's verdict and the first divergence of ``result`` (tensor rows, or the
    statistics rows of a statistics comparison: :mod:`compare.diverge.statistics`); None when the
    result has no rows."""
    if not result.rows:
        return None
    with paused_gc():  # ~10 records per operator, all long-lived: collections would only walk them (compare.heap)
        return _localise(result, policy)


def _localise(result: NetworkResult, policy: Policy | None) -> Localisation:
    columns = RowColumns(result.rows)  # the rows' fields as columns (a statistics table's own lists)
    if not result.parts:  # one run
        return localise(columns, build_graph(PartRows(columns), result.left, result.rule), policy)
    by_part = parts_of(columns)
    lefts = result.part_lefts if len(result.part_lefts) == len(result.parts) else [result.left] * len(result.parts)
    graphs_of_part = result.part_graphs or [None] * len(result.parts)
    graphs: dict[PartKey, OpGraph] = {}
    for (rank, iteration), graph_id, left in zip(result.parts, graphs_of_part, lefts):
        key = (rank, iteration, graph_id)
        rows = by_part.get(key)
        if rows is None:  # a part without rows
            rows = PartRows(columns, np.zeros(0, dtype=np.intp))
        graphs[key] = build_graph(rows, left, result.rule)
    return localise(columns, graphs, policy)


__all__ = ["localise_network"]
