"""Statistics rows in the localisation: which rows are statistics rows, their error, and (until
the policy gives them) their built-in data-type bounds.

A **statistics row** is a :class:`~compare.records.MetricRow` of a statistics comparison (msprobe
``task: statistics``, MindSpore ``statistic.csv``): its metrics are those of
:data:`compare.reports.stats.STATS_METRICS` -- ``MaxDiff`` / ``MaxRelDiff``, ``MinDiff`` /
``MinRelDiff``, ``AvgDiff`` / ``AvgRelDiff``, ``L2NormDiff`` / ``L2NormRelDiff`` (``diff = left -
right``, ``rel = |diff| / |right|``, 0 when both are 0, inf when only the right is; None when a
side lacks the statistic) and ``ChecksumDiff`` (0.0 same, 1.0 different) -- and neither
CosineSimilarity nor RelativeEuclideanDistance.

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

import math
from collections.abc import Sequence

from ..policy import DTYPE_EPS, coarsest_family
from ..records import Bound, MetricRow
from ..reports.stats import CHECKSUM_METRIC, STATS_METRICS

#: The statistics metrics whose largest value is a statistics row's error (module doc).
ERROR_METRICS = ("MaxRelDiff", "MinRelDiff", "L2NormRelDiff")
#: Tensor-row metrics: a row holding one of them is a tensor row.
_TENSOR_METRICS = ("CosineSimilarity", "RelativeEuclideanDistance")


def is_statistics_row(row: MetricRow) -> bool:
    """Whether ``row`` is a statistics row (module doc): a statistics metric among its metrics
    and no tensor metric. A row without metrics (not compared) is not one."""
    metrics = row.metrics
    if any(name in metrics for name in _TENSOR_METRICS):
        return False
    return any(name in STATS_METRICS for name in metrics)


def statistics_error(row: MetricRow) -> float | None:
    """The error of a statistics row (module doc): the largest computed of :data:`ERROR_METRICS`,
    NaN when one is NaN, None when none was computed."""
    values = [float(v) for v in (row.metrics.get(name) for name in ERROR_METRICS) if v is not None]
    if not values:
        return None
    if any(math.isnan(v) for v in values):
        return math.nan
    return max(values)


# ------------------------------------------------------------------------------------------------
# RECONCILE WITH compare/policy.py ON MERGE: on main the policy's built-in data-type bounds
# (Policy(dtype_defaults=True), BoundResolver) give statistics rows these bounds themselves; then
# delete this function and its one call (_Bounds._resolve in compare/diverge/verdicts.py).
# ------------------------------------------------------------------------------------------------
def stats_dtype_bounds(left_dtype: str | None, right_dtype: str | None, have: Sequence[Bound] = ()
                       ) -> tuple[Bound, ...]:
    """The built-in data-type bounds of a statistics row, those on a metric ``have`` already
    bounds left out: with ``eps`` the coarser known data type's machine epsilon
    (:data:`compare.policy.DTYPE_EPS`), ``MaxRelDiff``, ``MinRelDiff`` and ``L2NormRelDiff <=
    sqrt(eps)`` (float32 3.45e-4, float16 0.03125, bfloat16 0.0884) and ``ChecksumDiff == 0``; none
    on ``AvgRelDiff`` (cancellation, module doc) nor on the absolute differences. No known data
    type: no bounds (as :func:`compare.policy.dtype_bounds`; the localisation then uses
    float32's)."""
    family = coarsest_family(left_dtype, right_dtype)
    if family is None:
        return ()
    eps = DTYPE_EPS[family]
    source = f"built-in default for {family} (eps 2**{round(math.log2(eps))}, statistics)"
    bounded = {b.metric for b in have}
    made = [Bound(name, "<=", math.sqrt(eps), source) for name in ERROR_METRICS]
    made.append(Bound(CHECKSUM_METRIC, "==", 0.0, source))
    return tuple(b for b in made if b.metric not in bounded)


__all__ = ["ERROR_METRICS", "is_statistics_row", "statistics_error", "stats_dtype_bounds"]
