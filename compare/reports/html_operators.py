"""The operators the HTML report shows (:mod:`compare.reports.html`): the rows grouped per
operator, each operator one :class:`OpLine` (a line of the operator table, a point of the trend
plot), in graph order with a localisation, in row order without one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..diverge.records import Localisation, OpVerdict, Verdict
from ..records import MetricRow, RowKind
from .html_text import COSINE, RELATIVE


@dataclass(frozen=True)
class OpLine:
    """One operator as the report shows it (a line of the operator table, a point of the plot)."""

    position: int
    op: str
    op_type: str | None
    verdict: Verdict | None
    error: float | None
    amplification: float | None
    cosine: float | None
    worst_relative: float | None
    left_dtype: str | None
    right_dtype: str | None
    shape: tuple[int, ...] | None
    source: str


def tensor_kind(row: MetricRow) -> str:
    """``input`` / ``output`` from the tensor id ``{op}:{kind}:{index}``; ``""`` for op rows."""
    if row.tensor_id is None:
        return ""
    parts = row.tensor_id.rsplit(":", 2)
    return parts[1] if len(parts) == 3 else ""


def row_op(row: MetricRow) -> str:
    """The operator a row belongs to: its left op, its right op when it has no left side."""
    return row.right_op if row.left_op == "*" else row.left_op


OpKey = tuple[str, int | None, int | None]


def _key(row: MetricRow) -> OpKey:
    return row_op(row), row.rank, row.iteration


def rows_by_op(rows: Iterable[MetricRow]) -> dict[OpKey, list[MetricRow]]:
    """The rows of each operator (keyed by op, rank, iteration), operators in row order."""
    grouped: dict[OpKey, list[MetricRow]] = {}
    for row in rows:
        grouped.setdefault(_key(row), []).append(row)
    return grouped


def _worst(values: Iterable[float | None], *, highest: bool) -> float | None:
    """The worst of values already computed (a NaN is the worst); None when none is."""
    known = [float(v) for v in values if v is not None]
    if not known:
        return None
    if any(math.isnan(v) for v in known):
        return math.nan
    return max(known) if highest else min(known)


def _outputs(rows: Sequence[MetricRow]) -> list[MetricRow]:
    outputs = [row for row in rows if tensor_kind(row) == "output"]
    return outputs or list(rows)


def is_statistics(rows: Iterable[MetricRow]) -> bool:
    """Whether the rows are a statistics comparison's (``MetricRow.kind``; a missing part's row
    among them is a tensor-kind row)."""
    return any(row.kind is RowKind.STATISTICS for row in rows)


def _line(position: int, op: str, rows: Sequence[MetricRow], verdict: OpVerdict | None,
          statistics: bool = False) -> OpLine:
    """One operator; ``statistics``: its plotted error is the localisation's (the statistics error)."""
    outputs = _outputs(rows)
    first = outputs[0] if outputs else None
    relative = _worst((row.metrics.get(RELATIVE) for row in outputs), highest=True)
    if statistics and verdict is not None:
        relative = verdict.error
    source = verdict.source if verdict is not None else None
    row_type = first.op_type if first else None
    return OpLine(
        position=position, op=op,
        op_type=(verdict.op_type or row_type) if verdict is not None else row_type,
        verdict=verdict.verdict if verdict is not None else None,
        error=verdict.error if verdict is not None else relative,
        amplification=verdict.amplification if verdict is not None else None,
        cosine=_worst((row.metrics.get(COSINE) for row in outputs), highest=False),
        worst_relative=relative,
        left_dtype=first.left_dtype if first else None, right_dtype=first.right_dtype if first else None,
        shape=first.shape if first else None,
        source="" if source is None else str(source),
    )



def op_lines(rows: Sequence[MetricRow], localisation: Localisation | None) -> list[OpLine]:
    """The operators in graph order (the localisation's verdicts), or in row order without one."""
    grouped = rows_by_op(rows)
    if localisation is None:
        return [_line(i, key[0], rows, None) for i, (key, rows) in enumerate(grouped.items())]
    statistics = is_statistics(rows)
    return [_line(v.position, v.op, grouped.get((v.op, v.rank, v.iteration), []), v, statistics)
            for v in localisation.verdicts]


__all__ = ["OpKey", "OpLine", "is_statistics", "op_lines", "row_op", "rows_by_op", "tensor_kind"]
