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
from itertools import repeat
from operator import is_not, methodcaller

import numpy as np

from ..records import MetricRow, RowKind

#: The statistics metrics whose largest value is a statistics row's error (module doc).
ERROR_METRICS = ("MaxRelDiff", "MinRelDiff", "L2NormRelDiff")


def is_statistics_row(row: MetricRow) -> bool:
    """Whether ``row`` compares recorded statistics (``MetricRow.kind``, :mod:`compare.stats`)."""
    return row.kind is RowKind.STATISTICS


def metric_column(metrics: Sequence[Mapping[str, float | None]], name: str) -> tuple[np.ndarray, np.ndarray]:
    """Metric ``name`` of each row as float64 (NaN where not computed) and whether it was computed."""
    values = list(map(methodcaller("get", name), metrics))
    present = np.fromiter(map(is_not, values, repeat(None)), dtype=bool, count=len(values))
    return np.array(values, dtype=np.float64), present  # numpy reads None as NaN


def statistics_errors(columns: Sequence[tuple[np.ndarray, np.ndarray]], where: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The error of each statistics row at ``where`` (module doc): (float64 values, whether the row
    has one); ``columns``: the :data:`ERROR_METRICS` columns (:func:`metric_column`). The largest
    computed of the three (``np.maximum``, a metric not computed taken as -inf so that it never
    wins), NaN when one is NaN (``np.maximum`` propagates it); no error when none was computed."""
    worst = np.full(len(where), -np.inf)
    has = np.zeros(len(where), dtype=bool)
    for values, present in columns:
        computed = present[where]
        worst = np.maximum(worst, np.where(computed, values[where], -np.inf))
        has |= computed
    return worst, has


def statistics_error(row: MetricRow) -> float | None:
    """The error of one statistics row (:func:`statistics_errors`): the largest computed of
    :data:`ERROR_METRICS`, NaN when one is NaN, None when none was computed."""
    values, has = statistics_errors([metric_column([row.metrics], name) for name in ERROR_METRICS], np.zeros(1, int))
    return float(values[0]) if has[0] else None


__all__ = ["ERROR_METRICS", "is_statistics_row", "metric_column", "statistics_error", "statistics_errors"]
