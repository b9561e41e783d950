"""The worst tensors of the run summary, read from columns: the same lines as sorting the records
(NaN first, then the lowest similarity / the largest error, ties in row order)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from compare.cli.output import SUMMARY_METRICS, SUMMARY_WORST, worst_lines
from compare.kernels import METRICS
from compare.records import MetricRow, PairStatus

VALUES = st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.0, 0.5, math.nan, math.inf, -math.inf]),
                   st.floats(allow_nan=True, allow_infinity=True))
ROWS = st.lists(st.tuples(VALUES, VALUES, st.sampled_from([PairStatus.COMPARED, PairStatus.COMPARED,
                                                          PairStatus.NOT_COMPARABLE]), st.booleans()),
                max_size=30)


def _records_lines(rows: list[MetricRow], metrics: list[str]) -> list[str]:
    """The per-record implementation the columns replace (the oracle)."""
    lines = []
    for metric in metrics[:SUMMARY_METRICS]:
        higher = METRICS[metric].higher_is_better
        values = [(row.metrics.get(metric), row) for row in rows if row.status is PairStatus.COMPARED]
        values = [(float(v), row) for v, row in values if v is not None]
        if not values or higher is None:
            continue
        values.sort(key=lambda item: (item[0] == item[0], item[0] if higher else -item[0]))
        worst = ", ".join(f"{row.tensor_id or row.left_op} {value!r}" for value, row in values[:SUMMARY_WORST])
        lines.append(f"worst by {metric}: {worst}")
    return lines


@settings(max_examples=200, deadline=None)
@given(ROWS)
def test_worst_lines_are_the_sorted_records(spec: list) -> None:
    rows = [MetricRow(i, "add", f"op{i}", f"op{i}", f"op{i}:output:0" if named else None,
                      metrics={"CosineSimilarity": cos, "MaxAbsoluteError": err}, status=status)
            for i, (cos, err, status, named) in enumerate(spec)]
    metrics = ["CosineSimilarity", "MaxAbsoluteError"]
    assert worst_lines(rows, metrics) == _records_lines(rows, metrics)
