"""The localisation of a compared network (:func:`localise_network`): the graph of each part from
what the run read (the fusion rule, the left dump leaf's MindSpore files, the rows' order), then
:func:`compare.diverge.localise` with the run's policy (or the built-in data-type bounds)."""

from __future__ import annotations

from ..diverge.graph import build_graph
from ..diverge.records import Localisation, OpGraph
from ..diverge.verdicts import localise
from ..heap import paused_gc
from ..records import MetricRow
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
    if not result.parts:  # one run
        return localise(result.rows, build_graph(result.rows, result.left, result.rule), policy)
    by_part: dict[tuple[int | None, int | None, int | None], list[MetricRow]] = {}
    for row in result.rows:
        by_part.setdefault((row.rank, row.iteration, row.graph), []).append(row)
    lefts = result.part_lefts if len(result.part_lefts) == len(result.parts) else [result.left] * len(result.parts)
    graphs_of_part = result.part_graphs or [None] * len(result.parts)
    graphs: dict[tuple[int | None, int | None, int | None], OpGraph] = {}
    for (rank, iteration), graph_id, left in zip(result.parts, graphs_of_part, lefts):
        key = (rank, iteration, graph_id)
        rows = by_part.get(key, [])
        graphs[key] = build_graph(rows, left, result.rule)
    return localise(result.rows, graphs, policy)


__all__ = ["localise_network"]
