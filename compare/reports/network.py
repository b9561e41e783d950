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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from enum import Enum
from pathlib import Path

from ..errors import OptionError
from ..records import MetricRow, count_by_status
from ..stats_table import RowColumns
from .cells import (
    DEFAULT_FLOAT_FORMAT,
    MSPROBE_COLUMNS,
    FloatFormat,
    metric_column,
    msprobe_metric_order,
    neutralise,
    shape_cell,
    std_column,
)
from .files import atomic_write_chunks, atomic_write_text, is_stream, stamped_in_folder
from .overflow import OverflowColumn
from .parquet import require_pyarrow, write_parquet
from .stats import GRADE_COLUMNS, grade_cells
from .table_columns import (
    BATCH_ROWS,
    batches,
    csv_field,
    csv_lines,
    each_distinct,
    msprobe_columns,
    text_column,
)
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


def _address_cell(value: int | None) -> str:
    return str(value) if value else "NaN"


def _shape_key(row: MetricRow) -> tuple[int, ...] | None:
    return row.shape if row.tensor_id else None


def _std_column(rows: Sequence[MetricRow], float_format: FloatFormat, field: Callable[[str], str]) -> list[str]:
    """The StandardDeviation cells of a batch (:func:`~compare.reports.cells.std_column`), through ``field``."""
    return [field(cell) for cell in std_column([r.std for r in rows], float_format)]


def _batch_columns(rows: Sequence[MetricRow], metrics: Sequence[str], layout: Layout, *, float_format: FloatFormat,
                   overflow: OverflowColumn | None, msprobe: bool, graded: bool, field: Callable[[str], str],
                   left_address: bool = True, right_address: bool = True, selection: bool = False,
                   graph: bool = False, op_sequence: bool = False) -> list[list[str]]:
    """The cells of a batch of rows column by column, in :func:`header` order, then msprobe's
    columns (``msprobe``) and Result / Err_message (``graded``) before the reasons, which come last;
    every text cell passed through ``field`` (:func:`~compare.reports.table_columns.csv_field` for
    CSV, as it is for txt). Numbers are never quoted."""
    cols: list[list[str]] = [list(map(str, [r.index for r in rows]))]
    if op_sequence:  # the rule op id; NaN for a row without one (a right-only row)
        cols.append(["NaN" if r.op_sequence is None else str(r.op_sequence) for r in rows])
    if graph:
        cols += [text_column([r.rank for r in rows], field), text_column([r.graph for r in rows], field),
                 text_column([r.iteration for r in rows], field)]
    elif selection:
        cols += [text_column([r.rank for r in rows], field), text_column([r.iteration for r in rows], field)]
    op_type, left_op, left_dtype = (text_column([r.op_type for r in rows], field),
                                    text_column([r.left_op for r in rows], field),
                                    text_column([r.left_dtype for r in rows], field))
    right_op, right_dtype = text_column([r.right_op for r in rows], field), text_column([r.right_dtype for r in rows], field)
    tensor_id = text_column([r.tensor_id for r in rows], field)
    shape = each_distinct([_shape_key(r) for r in rows], lambda key: field(shape_cell(key)))
    if layout is Layout.MSACCUCMP:
        cols += [op_type, left_op, left_dtype]
        if left_address:
            cols.append([_address_cell(r.left_address) for r in rows])
        cols += [right_op, right_dtype]
        if right_address:
            cols.append([_address_cell(r.right_address) for r in rows])
        cols += [tensor_id, shape]
    else:
        cols += [op_type, left_op, left_dtype, right_op, right_dtype, tensor_id, shape]
    if overflow is not None:
        cols.append(each_distinct(overflow.cells(rows), field))
    for name in metrics:
        if name == STD_NAME:
            cols.append(_std_column(rows, float_format, field))
        else:
            cols.append(metric_column([r.metrics.get(name) for r in rows], float_format))
    if msprobe:
        cols += msprobe_columns([r.msprobe for r in rows], [r.argument for r in rows], field)
    if graded:
        grades = [r.grade for r in rows]
        cols += [each_distinct(grades, lambda grade: field(neutralise(grade_cells(grade)[0]))),
                 each_distinct(grades, lambda grade: field(neutralise(grade_cells(grade)[1])))]
    joiner = "," if layout is Layout.MSACCUCMP else "; "
    cols.append(each_distinct([joiner.join(r.reasons) for r in rows], lambda text: field(neutralise(text))))
    return cols


def _has_selection(rows: Sequence[MetricRow]) -> bool:
    return any(r.rank is not None or r.iteration is not None for r in rows)


def _selection_columns(rows: Sequence[MetricRow]) -> dict[str, bool]:
    """Which selection columns the rows need: ``selection`` (Rank, Iteration), ``graph`` (and Graph)."""
    return {"selection": _has_selection(rows), "graph": any(r.graph is not None for r in rows)}


def _verdict_cell(row: MetricRow, verdicts: Mapping[tuple[int | None, int | None, str], str]) -> str:
    """The Verdict cell of a row: its operator's verdict, ``not-compared`` for an operator
    without one (a right-only row, a row without a left operator)."""
    return verdicts.get((row.rank, row.iteration, row.left_op), "not-compared")


def _table_columns(rows: Sequence[MetricRow], metrics: Sequence[str]) -> tuple[list[str], bool, bool]:
    """The metric columns in table order, and whether the table has msprobe's and the grade columns."""
    msprobe = any(r.msprobe is not None for r in rows)
    return (msprobe_metric_order(metrics) if msprobe else list(metrics)), msprobe, any(r.grade is not None for r in rows)


def _header(metrics: Sequence[str], layout: Layout, overflow: bool, msprobe: bool, graded: bool,
            address: Mapping[str, bool]) -> list[str]:
    """The header of a text table, msprobe's and the grade columns before the reasons."""
    names = header(metrics, layout, overflow=overflow, **address)
    if msprobe:  # msprobe's own columns, before Result / Err_message and the reasons
        names[-1:-1] = list(MSPROBE_COLUMNS)
    if graded:  # msprobe's Result and Err_message, before the reasons (FailReason stays the last cell)
        names[-1:-1] = list(GRADE_COLUMNS)
    return names


def render_csv(rows: Iterable[MetricRow], metrics: Sequence[str], layout: Layout = Layout.VCOMPARE, *,
               float_format: FloatFormat = DEFAULT_FLOAT_FORMAT,
               verdicts: Mapping[tuple[int | None, int | None, str], str] | None = None,
               overflow: OverflowColumn | None = None, **address: bool) -> str:
    """The CSV report as text (:func:`csv_chunks` joined)."""
    return "".join(csv_chunks(rows, metrics, layout, float_format=float_format, verdicts=verdicts, overflow=overflow,
                              **address))


def csv_chunks(rows: Iterable[MetricRow], metrics: Sequence[str], layout: Layout = Layout.VCOMPARE, *,
               float_format: FloatFormat = DEFAULT_FLOAT_FORMAT,
               verdicts: Mapping[tuple[int | None, int | None, str], str] | None = None,
               overflow: OverflowColumn | None = None, **address: bool) -> Iterator[str]:
    """The CSV report as text, in chunks (the column layout, float format and address columns as
    for write_report): the header line, then :data:`~compare.reports.table_columns.BATCH_ROWS`
    rows at a time, built a column at a time. ``verdicts``: add a last ``Verdict`` column, (rank,
    iteration, op) -> verdict; ``overflow``: add the OverFlow column after Shape."""
    rows = list(rows)
    address = {**address, **_selection_columns(rows)}
    terminator = "\r\n" if layout is Layout.MSACCUCMP else "\n"
    metrics, msprobe, graded = _table_columns(rows, metrics)
    buf = io.StringIO()
    names = _header(metrics, layout, overflow is not None, msprobe, graded, address)
    csv.writer(buf, lineterminator=terminator).writerow(names + (["Verdict"] if verdicts is not None else []))
    yield buf.getvalue()

    def field(cell: str) -> str:
        return csv_field(cell, terminator)

    for start in batches(len(rows)):
        batch = rows[start:start + BATCH_ROWS]
        columns = _batch_columns(batch, metrics, layout, float_format=float_format, overflow=overflow,
                                 msprobe=msprobe, graded=graded, field=field, **address)
        if verdicts is not None:
            columns.append(each_distinct([_verdict_cell(row, verdicts) for row in batch], field))
        yield csv_lines(columns, terminator)


def _as_is(cell: str) -> str:
    return cell


def render_txt(rows: Iterable[MetricRow], metrics: Sequence[str], layout: Layout = Layout.VCOMPARE, *,
               float_format: FloatFormat = DEFAULT_FLOAT_FORMAT,
               verdicts: Mapping[tuple[int | None, int | None, str], str] | None = None,
               overflow: OverflowColumn | None = None, **address: bool) -> str:
    """Whitespace-aligned table: every column padded to its widest cell, reasons last
    (``verdicts``: a Verdict column before them; ``overflow``: the OverFlow column after Shape)."""
    rows = list(rows)
    address = {**address, **_selection_columns(rows)}
    metrics, msprobe, graded = _table_columns(rows, metrics)
    names = _header(metrics, layout, overflow is not None, msprobe, graded, address)
    columns = _batch_columns(rows, metrics, layout, float_format=float_format, overflow=overflow, msprobe=msprobe,
                             graded=graded, field=_as_is, **address)
    if verdicts is not None:
        names.insert(-1, "Verdict")
        columns.insert(-1, [_verdict_cell(row, verdicts) for row in rows])
    widths = [max(len(name), max(map(len, column), default=0)) for name, column in zip(names, columns[:-1])]
    for column, width in zip(columns, widths):  # padded in place: one column's copy alive at a time
        column[:] = [cell.ljust(width) for cell in column]
    lines = ["  ".join([name.ljust(width) for name, width in zip(names, widths)] + [names[-1]]).rstrip()]
    lines += [line.rstrip() for line in map("  ".join, zip(*columns))]
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
        return write_workbook(path, table, row_marks(rows, None),
                              summary_items(counts=count_by_status(RowColumns(rows).status)), rule=mark_rule(rows, None))
    if table_format is TableFormat.TXT:  # column widths need the whole table
        return atomic_write_text(Path(path), render_txt(rows, metrics, layout, float_format=float_format,
                                                        verdicts=verdicts, overflow=overflow, **address))
    # written as it is made: the text of a large table is never whole in memory
    return atomic_write_chunks(Path(path), csv_chunks(rows, metrics, layout, float_format=float_format,
                                                      verdicts=verdicts, overflow=overflow, **address))
