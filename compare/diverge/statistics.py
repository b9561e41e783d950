"""Statistics rows in the localisation: which rows are statistics rows and their error (their
built-in data-type bounds are the policy's: :func:`compare.verdict.policy.dtype_bounds`).

A **statistics row** is a :class:`~compare.records.MetricRow` of a statistics comparison (msprobe
``task: statistics``, MindSpore ``statistic.csv``), ``kind`` STATISTICS: its metrics are
:data:`compare.stats.STAT_METRIC_NAMES` -- ``MaxDiff`` / ``MaxRelDiff``, ``MinDiff`` /
``MinRelDiff``, ``AvgDiff`` / ``AvgRelDiff``, ``L2NormDiff`` / ``L2NormRelDiff`` (``|left -
right|``, ``rel = |left - right| / |right|``, 0 when both are 0, inf when only the right is;
None when a side lacks the statistic) and ``ChecksumDiff`` (0.0 same, 1.0 different).

**Error** of a statistics row (:func:`statistics_error`): the largest of ``MaxRelDiff``,
``MinRelDiff`` and ``L2NormRelDiff`` that was computed (a NaN is the largest); None when none
was (a checksum-only row: a checksum says *whether* the tensors differ, not by how much). Why
these three: each is the relative change of a quantity of the size of the tensor's values (its
extremes, its norm), so ``sqrt(eps)`` of the data type bounds them as it bounds the relative L2
error of a tensor row; ``L2NormRelDiff`` is a lower bound of the tensor's relative L2 error
(``| ||x|| - ||y|| | <= ||x - y||``), the extremes catch a change the norm averages away (one
perturbed weight of thousands). ``AvgRelDiff`` is left out: the mean of a centred tensor
(LayerNorm's output, a gradient) is a difference of nearly equal sums, its relative change is
large for rounding noise alone (cancellation), so it would make every such call look wrong.
Absolute differences are left out too: they have no scale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..records import MetricRow, RowKind

#: The statistics metrics whose largest value is a statistics row's error (module doc).
ERROR_METRICS = ("MaxRelDiff", "MinRelDiff", "L2NormRelDiff")


def is_statistics_row(row: MetricRow) -> bool:
    """Whether ``row`` compares recorded statistics (``MetricRow.kind``, :mod:`compare.stats`)."""
    return row.kind is RowKind.STATISTICS


def metric_column(metrics: Sequence[Mapping[str, float | None]], name: str) -> tuple[np.ndarray, np.ndarray]:
    """Metric ``name`` of each row as float64 (NaN where not computed) and whether it was computed."""
    values = [m.get(name) for m in metrics]
    present = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
    return np.array(values, dtype=np.float64), present  # numpy reads None as NaN


def statistics_errors(metrics: Sequence[Mapping[str, float | None]]) -> tuple[np.ndarray, np.ndarray]:
    """The error of each statistics row (module doc), from the rows' metrics: (float64 values,
    whether the row has one). The largest computed of :data:`ERROR_METRICS` (``np.maximum`` over
    the three columns, a metric not computed taken as -inf so that it never wins), NaN when one is
    NaN (``np.maximum`` propagates it); no error when none was computed."""
    worst = np.full(len(metrics), -np.inf)
    has = np.zeros(len(metrics), dtype=bool)
    for name in ERROR_METRICS:
        values, present = metric_column(metrics, name)
        worst = np.maximum(worst, np.where(present, values, -np.inf))
        has |= present
    return worst, has


def statistics_error(row: MetricRow) -> float | None:
    """The error of one statistics row (:func:`statistics_errors`): the largest computed of
    :data:`ERROR_METRICS`, NaN when one is NaN, None when none was computed."""
    values, has = statistics_errors([row.metrics])
    return float(values[0]) if has[0] else None


__all__ = ["ERROR_METRICS", "is_statistics_row", "metric_column", "statistics_error", "statistics_errors"]
