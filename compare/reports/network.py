"""Whole-network reports: ``result.csv`` / ``result.txt`` from :class:`MetricRow` records.

Two layouts:

``vcompare`` (default)
    ``Index, OpType, LeftOp, LeftDataType, RightOp, RightDataType, TensorIndex, Shape,
    <selected metrics>, FailReason``; reasons joined with ``"; "``; ``\\n`` line endings.

``msaccucmp``
    The reference tool's header and cells (``NPUDump``, ``GroundTruth``, two ``DataType`` and
    ``Address`` columns, ``CompareFailReason``), ``\\r\\n`` line endings and ``,``-joined reasons,
    so scripts that parse msaccucmp results keep working. An ``Address`` column is left out for a
    side whose folder holds ``.npy`` files, as the reference does.

The txt form is the same table, whitespace-aligned, one row per line (FailReason included).
Metric cells print ``%.6f`` unless a :class:`~compare.reports.cells.FloatFormat` says otherwise
(``--digits N``, ``--float-format repr``). ``-o result.parquet`` writes the rows as a typed table
(:mod:`compare.reports.parquet`, raw float64s); ``-o result.xlsx`` the CSV table as an
Excel workbook (:mod:`compare.reports.xlsx`). Files are written atomically: a temporary file in
the target folder, then a rename, so an interrupted run never leaves a half-written result; a
failure to write raises :class:`~compare.errors.OutputError`.
"""

from __future__ import annotations

import csv
import io
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from pathlib import Path

from ..errors import OptionError
from ..records import MetricRow, count_by_status
from .cells import (
    DEFAULT_FLOAT_FORMAT,
    MSPROBE_COLUMNS,
    FloatFormat,
    metric_cell,
    msprobe_metric_order,
    msprobe_row_cells,
    neutralise,
    shape_cell,
    std_cell,
    text_cell,
)
from .files import atomic_write_text, is_stream, stamped_in_folder
from .overflow import OverflowColumn
from .parquet import require_pyarrow, write_parquet
from .stats import GRADE_COLUMNS, grade_cells
from .xlsx import mark_rule, require_openpyxl, row_marks, summary_items, write_workbook

STD_NAME = "StandardDeviation"


class Layout(str, Enum):
    VCOMPARE = "vcompare"
    MSACCUCMP = "msaccucmp"


class TableFormat(str, Enum):
    """The forms of the ``-o`` table, each named by its file-name extension (:data:`OUTPUT_SUFFIXES`);
    each is written by its writer of :data:`compare.runs.outputs.WRITERS`."""

    CSV = "csv"
    TXT = "txt"
    PARQUET = "parquet"
    XLSX = "xlsx"


#: What ``-o`` writes, by file-name extension (a folder gets a timestamped ``.csv``).
OUTPUT_SUFFIXES = {f".{table_format.value}": table_format for table_format in TableFormat}


def header(metrics: Sequence[str], layout: Layout = Layout.VCOMPARE, *, left_address: bool = True,
           right_address: bool = True, selection: bool = False, graph: bool = False,
           overflow: bool = False, op_sequence: bool = False) -> list[str]:
    """Column names of a network report, metrics in selection order.

    ``selection``: add ``Rank, Iteration`` after ``Index`` (rows of several ranks / iterations);
    ``graph``: ``Rank, Graph, Iteration`` (rows of several graphs, ``--graph all``); ``overflow``:
    ``OverFlow`` after ``Shape`` (``--overflow``, :class:`~compare.reports.overflow.OverflowColumn`);
    ``op_sequence``: ``OpSequence`` (the fusion-rule op id) second, as the reference adds it when
    ``-r`` / ``-s`` chose the operators (``--range`` / ``--select``).
    """
    sel = ["Rank", "Graph", "Iteration"] if graph else (["Rank", "Iteration"] if selection else [])
    sel = (["OpSequence"] if op_sequence else []) + sel
    metrics = (["OverFlow"] if overflow else []) + list(metrics)
    if layout is Layout.MSACCUCMP:
        cols = ["Index", *sel, "OpType", "NPUDump", "DataType"]
        if left_address:
            cols.append("Address")
        cols += ["GroundTruth", "DataType"]
        if right_address:
            cols.append("Address")
        return cols + ["TensorIndex", "Shape", *metrics, "CompareFailReason"]
    return ["Index", *sel, "OpType", "LeftOp", "LeftDataType", "RightOp", "RightDataType", "TensorIndex", "Shape",
            *metrics, "FailReason"]


def _metric_cells(row: MetricRow, metrics: Sequence[str], float_format: FloatFormat) -> list[str]:
    """The metric cells of one row: :func:`metric_cell` for each value, :func:`std_cell` for
    StandardDeviation (inlined: a network report formats ten of these per row, 350,000 for a
    dump of 35,000 tensors)."""
    finite = float_format.finite
    values = row.metrics
    cells = []
    for name in metrics:
        if name == STD_NAME:
            cells.append(std_cell(row.std, float_format))
            continue
        value = values.get(name)
        if value is None:
            cells.append(metric_cell(None))
        elif value - value == 0.0:  # finite (inf - inf and nan - nan are nan)
            cells.append(finite(value))
        else:
            cells.append(metric_cell(value, float_format))
    return cells


def _address(value: int | None) -> str:
    return str(value) if value else "NaN"


def row_cells(row: MetricRow, metrics: Sequence[str], layout: Layout = Layout.VCOMPARE, *,
              left_address: bool = True, right_address: bool = True, selection: bool = False,
              graph: bool = False, float_format: FloatFormat = DEFAULT_FLOAT_FORMAT,
              overflow: str | None = None, op_sequence: bool = False) -> list[str]:
    """The text cells of one row, in :func:`header` order (``overflow``: the OverFlow cell, when
    the report has the column).

    Every cell is safe for a spreadsheet: the names come through :func:`text_cell`, the numbers
    are numbers, and the reasons cell is neutralised here.
    """
    sel = ([text_cell(row.rank), text_cell(row.graph), text_cell(row.iteration)] if graph
           else [text_cell(row.rank), text_cell(row.iteration)] if selection else [])
    if op_sequence:  # the rule op id; NaN for a row without one (a right-only row)
        sel = [str(row.op_sequence) if row.op_sequence is not None else "NaN", *sel]
    if layout is Layout.MSACCUCMP:
        cells = [str(row.index), *sel, text_cell(row.op_type), text_cell(row.left_op), text_cell(row.left_dtype)]
        if left_address:
            cells.append(_address(row.left_address))
        cells += [text_cell(row.right_op), text_cell(row.right_dtype)]
        if right_address:
            cells.append(_address(row.right_address))
        cells += [text_cell(row.tensor_id), shape_cell(row.shape) if row.tensor_id else "NaN"]
        cells += [overflow] if overflow is not None else []
        cells += _metric_cells(row, metrics, float_format)
        cells.append(neutralise(",".join(row.reasons)))
    else:
        cells = [str(row.index), *sel, text_cell(row.op_type), text_cell(row.left_op), text_cell(row.left_dtype),
                 text_cell(row.right_op), text_cell(row.right_dtype), text_cell(row.tensor_id),
                 shape_cell(row.shape) if row.tensor_id else "NaN"]
        cells += [overflow] if overflow is not None else []
        cells += _metric_cells(row, metrics, float_format)
        cells.append(neutralise("; ".join(row.reasons)) if row.reasons else "")
    return cells


def _has_selection(rows: Sequence[MetricRow]) -> bool:
    return any(r.rank is not None or r.iteration is not None for r in rows)


def _selection_columns(rows: Sequence[MetricRow]) -> dict[str, bool]:
    """Which selection columns the rows need: ``selection`` (Rank, Iteration), ``graph`` (and Graph)."""
    return {"selection": _has_selection(rows), "graph": any(r.graph is not None for r in rows)}


def _verdict_cell(row: MetricRow, verdicts: Mapping[tuple[int | None, int | None, str], str]) -> str:
    """The Verdict cell of a row: its operator's verdict, ``not-compared`` for an operator
    without one (a right-only row, a row without a left operator)."""
    return verdicts.get((row.rank, row.iteration, row.left_op), "not-compared")


def render_csv(rows: Iterable[MetricRow], metrics: Sequence[str], layout: Layout = Layout.VCOMPARE, *,
               float_format: FloatFormat = DEFAULT_FLOAT_FORMAT,
               verdicts: Mapping[tuple[int | None, int | None, str], str] | None = None,
               overflow: OverflowColumn | None = None, **address: bool) -> str:
    """The CSV report as text (the column layout, float format and address columns as for
    write_report). ``verdicts``: add a last ``Verdict`` column, (rank, iteration, op) -> verdict;
    ``overflow``: add the OverFlow column after Shape."""
    rows = list(rows)
    address = {**address, **_selection_columns(rows)}
    buf = io.StringIO()
    terminator = "\r\n" if layout is Layout.MSACCUCMP else "\n"
    writer = csv.writer(buf, lineterminator=terminator)
    graded = any(r.grade is not None for r in rows)
    msprobe = any(r.msprobe is not None for r in rows)
    if msprobe:
        metrics = msprobe_metric_order(metrics)
    names = header(metrics, layout, overflow=overflow is not None, **address)
    if msprobe:  # msprobe's own columns, before Result / Err_message and the reasons
        names[-1:-1] = list(MSPROBE_COLUMNS)
    if graded:  # msprobe's Result and Err_message, before the reasons (FailReason stays the last cell)
        names[-1:-1] = list(GRADE_COLUMNS)
    writer.writerow(names + (["Verdict"] if verdicts is not None else []))
    for row in rows:
        cells = row_cells(row, metrics, layout, float_format=float_format,
                          overflow=None if overflow is None else overflow.cell(row), **address)
        if msprobe:
            cells[-1:-1] = msprobe_row_cells(row.msprobe, row.argument)
        if graded:
            cells[-1:-1] = [neutralise(c) for c in grade_cells(row.grade)]
        if verdicts is not None:
            cells.append(_verdict_cell(row, verdicts))
        writer.writerow(cells)
    return buf.getvalue()


def render_txt(rows: Iterable[MetricRow], metrics: Sequence[str], layout: Layout = Layout.VCOMPARE, *,
               float_format: FloatFormat = DEFAULT_FLOAT_FORMAT,
               verdicts: Mapping[tuple[int | None, int | None, str], str] | None = None,
               overflow: OverflowColumn | None = None, **address: bool) -> str:
    """Whitespace-aligned table: every column padded to its widest cell, reasons last
    (``verdicts``: a Verdict column before them; ``overflow``: the OverFlow column after Shape)."""
    rows = list(rows)
    address = {**address, **_selection_columns(rows)}
    msprobe = any(r.msprobe is not None for r in rows)
    if msprobe:
        metrics = msprobe_metric_order(metrics)
    table = [header(metrics, layout, overflow=overflow is not None, **address)]
    table += [row_cells(r, metrics, layout, float_format=float_format,
                        overflow=None if overflow is None else overflow.cell(r), **address) for r in rows]
    if msprobe:  # msprobe's own columns, before Result / Err_message and the reasons
        table[0][-1:-1] = list(MSPROBE_COLUMNS)
        for row, line in zip(rows, table[1:]):
            line[-1:-1] = msprobe_row_cells(row.msprobe, row.argument)
    if any(r.grade is not None for r in rows):
        table[0][-1:-1] = list(GRADE_COLUMNS)
        for row, line in zip(rows, table[1:]):
            line[-1:-1] = [neutralise(c) for c in grade_cells(row.grade)]
    if verdicts is not None:
        table[0].insert(-1, "Verdict")
        for row, line in zip(rows, table[1:]):
            line.insert(-1, _verdict_cell(row, verdicts))
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]) - 1)]
    lines = []
    for line in table:
        padded = [cell.ljust(w) for cell, w in zip(line[:-1], widths)]
        lines.append("  ".join(padded + [line[-1]]).rstrip())
    return "\n".join(lines) + "\n"


def resolve_output(output: str | os.PathLike[str] | None, *, csv_flag: bool = False,
                   now: time.struct_time | None = None) -> tuple[Path, TableFormat]:
    """Where the result goes and in which form.

    - an existing directory, or a path ending in a separator, or no suffix at all:
      ``DIR/result_{YYYYmmddHHMMSS}.csv`` (``.txt`` is never chosen for a directory);
    - ``*.txt``: txt table, unless ``-csv`` asks for CSV (then the name is kept as given);
    - ``*.csv``: CSV; ``*.parquet``: a parquet table (needs pyarrow, the ``parquet`` extra);
      ``*.xlsx``: an Excel workbook (needs openpyxl, the ``xlsx`` extra; :mod:`compare.reports.xlsx`);
    - a character device or FIFO without a suffix (``-o /dev/stdout``): CSV, written through;
    - any other extension (``.json``, ``.xls`` ...) raises :class:`OptionError` naming what
      ``-o`` writes: it is never silently written as CSV. The JSON result is ``--json``.
    """
    stamped = stamped_in_folder(output, "result", now=now)
    if stamped is not None:
        return stamped, TableFormat.CSV
    text = os.fspath(output)  # type: ignore[arg-type]  # not None: stamped_in_folder said so
    path = Path(text)
    kind = OUTPUT_SUFFIXES.get(path.suffix.lower())
    if kind is None and path.suffix == "" and is_stream(path):
        kind = TableFormat.CSV  # -o /dev/stdout, a FIFO: a CSV table, written through
    if kind is None:
        raise OptionError(
            f"-o {text}: vcompare does not write {path.suffix!r} files; -o writes {', '.join(OUTPUT_SUFFIXES)} "
            "or a folder (for a timestamped .csv); for a JSON result use --json FILE, for JUnit --junit FILE")
    if kind is TableFormat.PARQUET:
        require_pyarrow()
    if kind is TableFormat.XLSX:
        require_openpyxl()
    if kind is TableFormat.TXT and csv_flag:
        return path, TableFormat.CSV
    return path, kind


def write_report(rows: Sequence[MetricRow], path: str | os.PathLike[str], metrics: Sequence[str], *,
                 table_format: TableFormat | str = TableFormat.CSV, layout: Layout | str = Layout.VCOMPARE,
                 left_address: bool = True, right_address: bool = True,
                 float_format: FloatFormat = DEFAULT_FLOAT_FORMAT,
                 verdicts: Mapping[tuple[int | None, int | None, str], str] | None = None,
                 overflow: OverflowColumn | None = None, op_sequence: bool = False) -> Path:
    """Write a network report and return its path.

    ``float_format`` applies to the text tables; a parquet table always holds raw float64s
    (``layout``, the address switches and ``verdicts`` do not apply to it either). ``verdicts``:
    the opt-in Verdict column (:func:`compare.reports.divergence.verdict_map`); ``overflow``: the
    opt-in OverFlow column (text tables only: a parquet table with it is an OptionError);
    ``op_sequence``: the OpSequence column second (``--range`` / ``--select``; a parquet table
    always has it). An xlsx table is the CSV table as a workbook (:mod:`compare.reports.xlsx`; rows
    highlighted by msprobe's grade or their status: the gate's workbook is
    :func:`compare.runs.outputs.write_xlsx_table`'s). Raises
    :class:`~compare.errors.OutputError` when the file cannot be written.
    """
    layout = Layout(layout)
    table_format = TableFormat(table_format)
    if table_format is TableFormat.PARQUET:
        if overflow is not None:
            raise OptionError("--overflow adds a column to -o .csv / .txt and rows of --json; a parquet table has "
                              "no OverFlow column")
        return write_parquet(rows, path, metrics)
    address = {"left_address": left_address, "right_address": right_address, "op_sequence": op_sequence}
    if table_format is TableFormat.XLSX:  # the CSV table as a workbook; without a gate (compare.runs.outputs has it)
        table = render_csv(rows, metrics, layout, float_format=float_format, verdicts=verdicts, overflow=overflow,
                           **address)
        return write_workbook(path, table, row_marks(rows, None), summary_items(counts=count_by_status(rows)),
                              rule=mark_rule(rows, None))
    render = render_txt if table_format is TableFormat.TXT else render_csv
    return atomic_write_text(Path(path), render(rows, metrics, layout, float_format=float_format, verdicts=verdicts,
                                                overflow=overflow, **address))
