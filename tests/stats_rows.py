"""Test helper: a statistics comparison with its rows as MetricRows (one per statistics row, in
the same order), the form ``NetworkResult.rows`` takes for statistics runs on main.

TO REPLACE ON MERGE with main's StatsRow -> MetricRow conversion (compare/runs/network.py):
:func:`metric_row` spells out the row form the localisation expects -- ``{S}Diff`` /
``{S}RelDiff`` for max, min, avg, l2norm (None when a side lacks it) and ``ChecksumDiff`` (0.0
same, 1.0 different).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from compare.api import ComparisonResult, compare_network
from compare.records import MetricRow
from compare.reports.stats import CHECKSUM_METRIC, stat_label
from compare.stats import StatsRow

_NUMERIC = ("max", "min", "avg", "l2norm")


def metric_row(row: StatsRow) -> MetricRow:
    """The MetricRow of one statistics row (module doc)."""
    metrics: dict[str, float | None] = {}
    for name in _NUMERIC:
        value = row.values.get(name)
        diff = value.diff if value is not None and not isinstance(value.diff, str) else None
        rel = value.rel if value is not None else None
        metrics[f"{stat_label(name)}Diff"] = None if diff is None else float(diff)
        metrics[f"{stat_label(name)}RelDiff"] = None if rel is None else float(rel)
    for name in ("checksum", "md5"):
        value = row.values.get(name)
        if value is not None and isinstance(value.diff, str):
            metrics[CHECKSUM_METRIC] = 0.0 if value.diff == "same" else 1.0
    return MetricRow(index=row.index, op_type=row.op_type, left_op=row.left_op, right_op=row.right_op,
                     tensor_id=row.tensor_id, left_dtype=row.left_dtype, right_dtype=row.right_dtype, shape=row.shape,
                     metrics=metrics, reasons=list(row.reasons), status=row.status, rank=row.rank,
                     iteration=row.iteration, graph=row.graph)


def with_metric_rows(result: ComparisonResult) -> ComparisonResult:
    """``result`` of a statistics run with its rows filled as on main (network rows too)."""
    network = result.network
    assert network is not None and network.stats is not None, "not a statistics run"
    rows = [metric_row(r) for r in network.stats.rows]
    network = dataclasses.replace(network, rows=rows)
    return dataclasses.replace(result, rows=rows, network=network)


def compare_statistics(left: Path, right: Path, **options: object) -> ComparisonResult:
    """:func:`compare.compare_network` of two statistics dumps, rows as on main (``gates`` /
    ``policy`` are applied to the localisation only: the API refuses gates on statistics runs
    on this branch)."""
    gates = options.pop("gates", ())
    policy = options.pop("policy", None)
    result = with_metric_rows(compare_network(left, right, **options))  # type: ignore[arg-type]
    if gates or policy is not None:
        from compare.api import build_policy  # noqa: PLC0415 - only for gated calls

        result = dataclasses.replace(result, policy=build_policy(policy, gates))  # type: ignore[arg-type]
    return result
