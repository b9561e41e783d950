"""Reading a saved CSV result (``-o x.csv``, either ``--layout``) back: what the cells say.

Numbers are read as written (6 decimals by default, more with ``--digits``/``--float-format
repr``); ``NaN`` = not computed, ``nan``/``inf``/``-inf`` = computed. A StandardDeviation cell
gives back its four printed values. CSV has no status column, so the status is inferred, first
rule that applies: a metric cell holds a value -> compared; ``*`` as the right (left) op ->
missing on right (left); only the right (left) data type known -> missing on left (right); no
TensorIndex, or a FailReason -> not comparable; else compared. (A not-compared row is "not
compared" under each rule, so a strict gate judges it the same; which of the three it was is
exact only in JSON and parquet.) Reasons are split on ``"; "`` (vcompare layout) or on the commas
outside brackets and quotes (msaccucmp layout, whose ``,`` join is ambiguous when a reason itself
holds a comma). A text cell that the writer quoted for spreadsheets (``'=cmd``, ``' =cmd``) is
read back without the quote (so a name that really started with ``'=`` loses its quote); control
characters the writer escaped (``\\r``) stay escaped (:mod:`convert.textcells`). Rank, Graph and
Iteration columns are read when present. Addresses are read from the msaccucmp layout. A
statistics table (:mod:`compare.reports.stats`) gives statistics rows.

CSV does not record ``MetricRow.expected_gap`` (rows structurally not compared, which gates do
not fail): re-gate the JSON or parquet result to keep them apart.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from convert.textcells import unguard

from ..errors import DumpFormatError
from ..records import ARGUMENT_DIFFERS, ARGUMENT_METRIC, MetricRow, PairStatus, RowKind
from ..stats import NOT_SAME_TENSOR, NULL_STATISTIC, STAT_METRIC_OF
from .cells import MSPROBE_COLUMNS, NOT_COMPUTED
from .result_json import NON_FINITE, STD_NAME
from .saved_result import SavedKind, SavedResult
from .stats import GRADE_COLUMNS


@dataclass(frozen=True)
class _CsvPlan:
    """Column positions of one CSV header (either layout)."""

    index: int
    op_type: int
    left_op: int
    right_op: int
    left_dtype: int
    right_dtype: int
    tensor_id: int
    shape: int
    reasons: int
    metrics: tuple[tuple[str, int], ...]
    rank: int | None = None
    graph: int | None = None
    iteration: int | None = None
    left_address: int | None = None
    right_address: int | None = None
    msaccucmp: bool = False
    #: A statistics table: the rows are statistics rows (``RowKind.STATISTICS``).
    statistics: bool = False
    #: msprobe's ``Value`` column (an argument row has a value there: ``RowKind.ARGUMENT``), None without it.
    value: int | None = None


def _side_columns(header: list[str], start: int, stop: int) -> tuple[int, int | None]:
    """The DataType and Address columns of one side of an msaccucmp header (the columns from
    ``start`` up to ``stop``: after the side's op column); -1 and None where there is none."""
    dtype, address = -1, None
    for i in range(start, stop):
        if header[i] == "DataType":
            dtype = i
        elif header[i] == "Address":
            address = i
    return dtype, address


def _csv_plan(path: Path, header: list[str]) -> _CsvPlan:
    """Where each field is; :class:`DumpFormatError` (line 1) when the header is not ours."""
    msaccucmp = "NPUDump" in header
    left_name, right_name, last = ("NPUDump", "GroundTruth", "CompareFailReason") if msaccucmp \
        else ("LeftOp", "RightOp", "FailReason")
    needed = ["Index", "OpType", left_name, right_name, "TensorIndex", "Shape", last]
    missing = [name for name in needed if name not in header]
    end = len(header) - 1 if header[-1] != "Verdict" else len(header) - 2  # --verdicts: a last Verdict column
    if missing or header[end] != last:
        raise DumpFormatError(path, f"line 1: not a vcompare network result header (missing "
                                    f"{', '.join(missing) or last + ' as the last column'})")
    if "LeftSource" in header and "RightSource" in header:  # the statistics table (compare.reports.stats)
        return _stats_plan(path, header, end)
    pos = {name: header.index(name) for name in needed}
    left_address = right_address = None
    if msaccucmp:
        left_dtype, left_address = _side_columns(header, pos[left_name] + 1, pos[right_name])
        right_dtype, right_address = _side_columns(header, pos[right_name] + 1, pos["TensorIndex"])
    else:
        left_dtype = header.index("LeftDataType") if "LeftDataType" in header else -1
        right_dtype = header.index("RightDataType") if "RightDataType" in header else -1
    if left_dtype < 0 or right_dtype < 0:
        raise DumpFormatError(path, "line 1: the header lacks the two data type columns")
    metrics = tuple((header[i], i) for i in range(pos["Shape"] + 1, end)
                    if header[i] not in GRADE_COLUMNS and header[i] not in MSPROBE_COLUMNS)  # msprobe's text columns
    optional = {name: (header.index(name) if name in header[: pos["OpType"]] else None)
                for name in ("Rank", "Graph", "Iteration")}
    return _CsvPlan(pos["Index"], pos["OpType"], pos[left_name], pos[right_name], left_dtype, right_dtype,
                    pos["TensorIndex"], pos["Shape"], end, metrics, optional["Rank"],
                    optional["Graph"], optional["Iteration"], left_address, right_address, msaccucmp,
                    value=header.index("Value") if "Value" in header else None)


def _stats_plan(path: Path, header: list[str], end: int) -> _CsvPlan:
    """The plan of a statistics table (``Left{S}, Right{S}, {S}Diff, {S}RelDiff`` per statistic):
    its metrics are the ``{S}Diff`` / ``{S}RelDiff`` columns (:data:`compare.stats.STAT_METRIC_OF`)."""
    def at(name: str) -> int:
        return header.index(name)

    metrics = tuple((name, i) for i, name in enumerate(header[:end]) if name in STAT_METRIC_OF)
    optional = {name: (at(name) if name in header else None) for name in ("Rank", "Graph", "Iteration")}
    return _CsvPlan(at("Index"), at("OpType"), at("LeftOp"), at("RightOp"), at("LeftDataType"), at("RightDataType"),
                    at("TensorIndex"), at("Shape"), end, metrics, optional["Rank"], optional["Graph"],
                    optional["Iteration"], statistics=True, value=at("Value") if "Value" in header else None)


def _stat_metric_cell(cell: str, name: str) -> float | None:
    """A statistics metric read back as the row holds it (:func:`compare.stats.metric_row`): a
    Diff is the magnitude of the signed cell, ``same`` / ``different`` 0.0 / 1.0, a RelDiff as
    it is."""
    if cell in ("same", "different"):
        return 0.0 if cell == "same" else 1.0
    value = _float_cell(cell, name)
    if value is None or STAT_METRIC_OF[name][1]:
        return value
    return abs(value)


def read_csv_result(path: Path, text: str) -> SavedResult:
    """The rows of a CSV result's ``text`` (read from ``path``; either layout, or a statistics
    table); :class:`DumpFormatError` naming the line of the first malformed one."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise DumpFormatError(path, "line 1: empty file, no header") from None
    except csv.Error as exc:
        raise DumpFormatError(path, f"line 1: {exc}") from None
    plan = _csv_plan(path, header)
    rows = []
    try:
        for cells in reader:
            if not cells:
                continue
            if len(cells) != len(header):
                raise ValueError(f"{len(cells)} cells where the header has {len(header)}")
            rows.append(_csv_row(plan, cells))
    except csv.Error as exc:
        raise DumpFormatError(path, f"line {reader.line_num}: {exc}") from None
    except ValueError as exc:
        raise DumpFormatError(path, f"line {reader.line_num}: {exc}") from None
    return SavedResult(path, SavedKind.CSV, rows, [name for name, _ in plan.metrics])


def _text(cell: str) -> str | None:
    return None if cell == NOT_COMPUTED else unguard(cell)


def _int_cell(cell: str, column: str) -> int | None:
    if cell == NOT_COMPUTED or cell == "":
        return None
    try:
        return int(cell)
    except ValueError:
        raise ValueError(f"{column}: {cell!r} is not a whole number") from None


_CELL_NON_FINITE = {**NON_FINITE, "+inf": math.inf}


def _float_cell(cell: str, column: str) -> float | None:
    """``NaN`` -> None (not computed); ``nan``/``inf``/``-inf`` -> the value; else the number."""
    if cell == NOT_COMPUTED:
        return None
    if cell in _CELL_NON_FINITE:
        return _CELL_NON_FINITE[cell]
    try:
        return float(cell)
    except ValueError:
        raise ValueError(f"{column}: {cell!r} is not a number, NaN, nan or inf") from None


def _std_cell(cell: str) -> tuple[float, float, float, float] | None:
    """``(lm;ls),(rm;rs)`` -> four floats; ``NaN`` -> None."""
    if cell == NOT_COMPUTED:
        return None
    parts = cell.replace("(", "").replace(")", "").replace(",", ";").split(";")
    if len(parts) != 4:
        raise ValueError(f"{STD_NAME}: {cell!r} is not (mean;std),(mean;std)")
    values = [_float_cell(p, STD_NAME) for p in parts]
    if any(v is None for v in values):
        raise ValueError(f"{STD_NAME}: {cell!r} is not (mean;std),(mean;std)")
    lm, ls, rm, rs = (float(v) for v in values if v is not None)
    return lm, ls, rm, rs


def _shape_cell(cell: str) -> tuple[int, ...] | None:
    if cell == NOT_COMPUTED:
        return None
    if not (cell.startswith("[") and cell.endswith("]")):
        raise ValueError(f"Shape: {cell!r} is not [d0,d1,...]")
    inner = cell[1:-1].strip()
    try:
        return tuple(int(d) for d in inner.split(",")) if inner else ()
    except ValueError:
        raise ValueError(f"Shape: {cell!r} is not [d0,d1,...]") from None


def split_reasons(cell: str, *, msaccucmp: bool) -> list[str]:
    """A FailReason cell back into its reasons (see the module docstring for the ambiguity)."""
    cell = unguard(cell)
    if not cell:
        return []
    if not msaccucmp:
        return cell.split("; ")
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(cell):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(cell[start:i])
            start = i + 1
    parts.append(cell[start:])
    return [p.strip() for p in parts if p.strip()]


def _csv_status(row: MetricRow, computed: bool) -> PairStatus:
    """The status a CSV row implies (the rules of the module docstring, in order)."""
    if computed:  # a mismatched pair shows its numbers for reference, and its reason says so
        return PairStatus.NOT_COMPARABLE if any(NOT_SAME_TENSOR in r for r in row.reasons) else PairStatus.COMPARED
    if row.right_op == "*":
        return PairStatus.MISSING_RIGHT
    if row.left_op == "*":
        return PairStatus.MISSING_LEFT
    if (row.left_dtype is None) != (row.right_dtype is None):
        return PairStatus.MISSING_LEFT if row.left_dtype is None else PairStatus.MISSING_RIGHT
    if row.tensor_id is None or row.reasons:
        return PairStatus.NOT_COMPARABLE
    return PairStatus.COMPARED


def _csv_row(plan: _CsvPlan, cells: list[str]) -> MetricRow:
    metrics: dict[str, float | None] = {}
    std = None
    for name, i in plan.metrics:
        if name == STD_NAME:
            std = _std_cell(cells[i])
        elif plan.statistics:
            metrics[name] = _stat_metric_cell(cells[i], name)
        else:
            metrics[name] = _float_cell(cells[i], name)
    computed = any(v is not None for v in metrics.values()) or std is not None
    reasons = split_reasons(cells[plan.reasons], msaccucmp=plan.msaccucmp)
    left_op, right_op = unguard(cells[plan.left_op]), unguard(cells[plan.right_op])
    tensor_id = _text(cells[plan.tensor_id])
    index = _int_cell(cells[plan.index], "Index")
    row = MetricRow(
        index=0 if index is None else index, op_type=_text(cells[plan.op_type]), left_op=left_op,
        right_op=right_op, tensor_id=tensor_id, left_dtype=_text(cells[plan.left_dtype]),
        right_dtype=_text(cells[plan.right_dtype]), shape=_shape_cell(cells[plan.shape]), metrics=metrics,
        std=std, reasons=reasons,
        left_address=None if plan.left_address is None else _int_cell(cells[plan.left_address], "Address"),
        right_address=None if plan.right_address is None else _int_cell(cells[plan.right_address], "Address"),
        rank=None if plan.rank is None else _int_cell(cells[plan.rank], "Rank"),
        iteration=None if plan.iteration is None else _int_cell(cells[plan.iteration], "Iteration"),
        graph=None if plan.graph is None else _int_cell(cells[plan.graph], "Graph"),
        kind=RowKind.STATISTICS if plan.statistics else RowKind.TENSOR)
    if plan.value is not None and cells[plan.value] != NOT_COMPUTED:  # msprobe's non-tensor argument
        return _argument_row(row)
    row.status = _csv_status(row, computed)
    if plan.statistics and any(NULL_STATISTIC in r for r in reasons):  # not a gap: nothing to compare
        row.undefined = frozenset(name for name, value in metrics.items() if value is None)
    return row


def _argument_row(row: MetricRow) -> MetricRow:
    """An argument row read back (its Value cell is set): ``ArgumentDiff`` 1.0 when its reason says
    the values differ, 0.0 when both sides have one, None for a one-sided row; every other metric
    undefined (:mod:`compare.runs.msprobe_rows`)."""
    one_sided = row.left_op == "*" or row.right_op == "*" or row.left_dtype is None or row.right_dtype is None
    differs = any(r.startswith(ARGUMENT_DIFFERS) for r in row.reasons)
    row.kind = RowKind.ARGUMENT
    row.metrics = {**{m: None for m in row.metrics}, ARGUMENT_METRIC: None if one_sided else (1.0 if differs else 0.0)}
    row.undefined = frozenset(m for m in row.metrics if m != ARGUMENT_METRIC)
    row.status = _csv_status(row, False) if one_sided else PairStatus.COMPARED
    return row


__all__ = ["read_csv_result", "split_reasons"]
