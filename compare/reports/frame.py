"""Rows as a pandas DataFrame (the API's table: one row per tensor pair, metrics as floats)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..records import MetricRow
from .cells import MSPROBE_COLUMNS, msprobe_row_cells, std_cell
from .network import header

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from ..runs.network import NetworkResult

def to_dataframe(result: NetworkResult) -> "pd.DataFrame":
    """The report of a :class:`NetworkResult` as a pandas DataFrame (see :func:`frame_of`)."""
    return frame_of(result.rows, result.metrics)


def frame_of(rows: Sequence[MetricRow], metrics: Sequence[str]) -> "pd.DataFrame":
    """The report as a pandas DataFrame: the default report's columns, metrics as floats.

    Not-computed metrics are NaN; ``StandardDeviation`` keeps its ``(mean;std),(mean;std)`` text
    and the four numbers are also given as float columns ``LeftMean, LeftStd, RightMean,
    RightStd``; ``Status`` says whether the row was compared (and if not, why in FailReason).
    ``Rank`` and ``Iteration`` follow ``Index`` when ranks / iterations were compared in turn
    (``Rank, Graph, Iteration`` when graphs were). Rows of msprobe runs add msprobe's own columns
    (:data:`compare.reports.cells.MSPROBE_COLUMNS`, text) before ``FailReason``.
    """
    import pandas as pd  # here: pandas (~0.3 s) only for DataFrames (the API's .frame)

    nan = float("nan")
    records = []
    with_selection = any(row.rank is not None or row.iteration is not None for row in rows)
    for row in rows:
        rec: dict[str, object] = {
            "Index": row.index,
            "Rank": row.rank,
            "Graph": row.graph,
            "Iteration": row.iteration,
            "OpType": row.op_type,
            "LeftOp": row.left_op,
            "LeftDataType": row.left_dtype,
            "RightOp": row.right_op,
            "RightDataType": row.right_dtype,
            "TensorIndex": row.tensor_id,
            "Shape": list(row.shape) if (row.shape is not None and row.tensor_id) else None,
        }
        for name in metrics:
            if name == "StandardDeviation":
                rec[name] = std_cell(row.std) if row.std is not None else None
            else:
                value = row.metrics.get(name)
                rec[name] = nan if value is None else float(value)
        if row.msprobe is not None:
            rec.update(zip(MSPROBE_COLUMNS, msprobe_row_cells(row.msprobe, row.argument)))
        rec["FailReason"] = "; ".join(row.reasons)
        std = row.std if row.std is not None else (nan, nan, nan, nan)
        rec.update(LeftMean=std[0], LeftStd=std[1], RightMean=std[2], RightStd=std[3], Status=row.status.value)
        records.append(rec)
    columns = header(metrics) + ["LeftMean", "LeftStd", "RightMean", "RightStd", "Status"]
    if any(row.msprobe is not None for row in rows):  # msprobe's own columns, before FailReason (docs/msprobe.md)
        at = columns.index("FailReason")
        columns[at:at] = list(MSPROBE_COLUMNS)
    if any(row.graph is not None for row in rows):
        columns[1:1] = ["Rank", "Graph", "Iteration"]
    elif with_selection:
        columns[1:1] = ["Rank", "Iteration"]
    return pd.DataFrame.from_records(records, columns=columns)
