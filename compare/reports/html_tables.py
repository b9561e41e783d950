"""The two tables of the HTML report (:mod:`compare.reports.html`): one sortable line per
operator, and one per tensor (collapsed). A table longer than its limit keeps a window of lines
from just before the first divergence, and says so; the CSV / JSON results hold every row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..diverge.records import Localisation
from ..records import MetricRow
from .cells import shape_cell
from .html_operators import OpLine, row_op
from .html_text import COSINE, NOT_COMPUTED, badge, dtype_badge, esc, metric_text, number, shape_badge

#: The longest tables the page holds (about 230 bytes a line with 80-character op names): beyond,
#: a window of the lines from just before the first divergence (the CSV / JSON results hold every row).
OP_TABLE_LIMIT = 10_000
TENSOR_TABLE_LIMIT = 20_000


def _op_row(line: OpLine) -> str:
    return (f"<tr><td>{line.position}<td>{esc(line.op)}<td>{esc(line.op_type)}<td>{badge(line.verdict)}"
            f"<td>{number(line.error)}<td>{number(line.amplification)}<td>{metric_text(COSINE, line.cosine)}"
            f"<td>{dtype_badge(line.left_dtype, line.right_dtype)}<td>{shape_badge(line.shape)}<td>{esc(line.source)}")


def _head(columns: Sequence[tuple[str, bool]]) -> str:
    cells = "".join(f'<th{" data-t=n" if numeric else ""}>{esc(name)}' for name, numeric in columns)
    return f"<thead><tr>{cells}</thead>"


OP_COLUMNS = (("#", True), ("operator", False), ("type", False), ("verdict", False), ("worst output error", True),
              ("amplification", True), ("worst CosineSimilarity", True), ("dtype left/right", False),
              ("shape", False), ("source", False))


def window(total: int, anchor: int | None, limit: int) -> range:
    """The items a table shows: all of them up to ``limit``; else ``limit`` consecutive ones
    starting a tenth of the limit before ``anchor`` (the first divergence), or at the start."""
    if total <= limit:
        return range(total)
    start = min(max(0, (anchor or 0) - limit // 10), total - limit)
    return range(start, start + limit)


def _shown(kept: range, total: int, what: str) -> str:
    """The note of a cut table, or nothing when it holds everything."""
    if len(kept) == total:
        return ""
    return (f'<p class="cut">Showing {what} {kept.start + 1}–{kept.stop} of {total} (from just before the first '
            "divergence when there is one), to keep the page small; every row is in the CSV / JSON result.</p>")


def _first_divergence_index(items: Sequence[str], localisation: Localisation | None) -> int | None:
    first = localisation.first_divergence if localisation is not None else None
    if first is None:
        return None
    return next((i for i, name in enumerate(items) if name == first.op), None)


OP_HINT = ('<p class="hint">Click a column header to sort (again to reverse). <i>worst output error</i>: the '
           "relative error of the operator's worst output as the localisation measured it (RelativeEuclideanDistance,"
           " or 1 − CosineSimilarity when that is all there is); without localisation, the worst output "
           "RelativeEuclideanDistance. <i>amplification</i>: worst output error / worst input error. "
           "— not computed; nan / inf: computed and not finite.</p>")


def op_table(lines: Sequence[OpLine], localisation: Localisation | None) -> str:
    kept = window(len(lines), _first_divergence_index([line.op for line in lines], localisation), OP_TABLE_LIMIT)
    body = "".join(_op_row(lines[i]) for i in kept)
    return (f'<section id="operators"><h2>Operators ({len(lines)})</h2>{_shown(kept, len(lines), "operators")}'
            f"{OP_HINT}"
            f'<table class="grid sort ops">{_head(OP_COLUMNS)}<tbody>{body}</tbody></table></section>')


def metric_names(rows: Iterable[MetricRow]) -> list[str]:
    """Every metric name of the rows, in first-seen order."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row.metrics))
    return list(names)


def _where_columns(rows: Sequence[MetricRow]) -> list[str]:
    return [name for name in ("rank", "iteration", "graph") if any(getattr(r, name) is not None for r in rows)]


def _tensor_cell(row: MetricRow) -> str:
    """The tensor id without its operator prefix (the operator has its own column)."""
    tensor = row.tensor_id
    if tensor is None:
        return NOT_COMPUTED
    prefix = row_op(row) + ":"
    return esc(tensor[len(prefix):] if tensor.startswith(prefix) else tensor)


def _tensor_row(row: MetricRow, where: Sequence[str], metrics: Sequence[str]) -> str:
    """One line of the tensor table (plain text cells: the table may hold 10,000 lines)."""
    place = "".join(f"<td>{esc(getattr(row, name))}" for name in where)
    values = "".join(f"<td>{metric_text(name, row.metrics.get(name))}" for name in metrics)
    shape = NOT_COMPUTED if row.shape is None else shape_cell(row.shape)
    reasons = esc("; ".join(row.reasons)) if row.reasons else ""
    return (f"<tr><td>{row.index}<td>{esc(row_op(row))}{place}<td>{_tensor_cell(row)}<td>{esc(row.op_type)}"
            f"<td>{esc(row.status.value)}<td>{esc(row.left_dtype)}/{esc(row.right_dtype)}<td>{shape}{values}"
            f"<td>{reasons}")


def _within(lines: Iterable[str], budget: int) -> list[str]:
    """The first ``lines`` whose total length stays within ``budget`` (at least one)."""
    kept: list[str] = []
    used = 0
    for line in lines:
        used += len(line)
        if used > budget and kept:
            break
        kept.append(line)
    return kept


def tensor_table(rows: Sequence[MetricRow], localisation: Localisation | None, budget: int) -> str:
    """The rows (a window of them, see :data:`TENSOR_TABLE_LIMIT`) within ``budget`` characters."""
    window_ = window(len(rows), _first_divergence_index([row_op(row) for row in rows], localisation),
                     TENSOR_TABLE_LIMIT)
    where, metrics = _where_columns(rows), metric_names(rows)
    columns = ([("Index", True), ("operator", False)] + [(name, True) for name in where]
               + [("tensor", False), ("type", False), ("status", False),
                  ("dtype left/right", False), ("shape", False)]
               + [(name, True) for name in metrics] + [("reasons", False)])
    body = _within((_tensor_row(rows[i], where, metrics) for i in window_), budget)
    kept = range(window_.start, window_.start + len(body))
    return (f'<section id="tensors"><details><summary><h2>Tensors ({len(rows)})</h2></summary>'
            f'{_shown(kept, len(rows), "rows")}<table class="grid sort">{_head(columns)}<tbody>{"".join(body)}</tbody>'
            "</table></details></section>")


__all__ = ["OP_TABLE_LIMIT", "TENSOR_TABLE_LIMIT", "metric_names", "op_table", "tensor_table", "window"]
