"""The statistics report: ``stats_result_{YYYYmmddHHMMSS}.csv``.

Columns: ``Index, OpType, LeftOp, RightOp, TensorIndex`` (then ``Rank, Iteration`` when any row
has them), ``LeftDataType, RightDataType, Shape``, then per compared statistic ``S`` (in
:data:`compare.stats.STAT_ORDER` order, e.g. ``Max``): ``LeftS, RightS, SDiff, SRelDiff``, then
``LeftSource, RightSource`` (then msprobe's own columns, :data:`compare.reports.cells.MSPROBE_COLUMNS`,
when a side is an msprobe tree), ``FailReason``, then ``Verdict`` when asked (``--verdicts``: the verdict
of the row's call, :func:`compare.reports.divergence.verdict_map`; ``not-compared`` for a call
without one). Numbers print at full precision (integral values
without decimals, others as Python's shortest round-trip ``repr``), ``nan`` / ``inf`` as such;
``NaN`` means "not available on that side"; text statistics (md5) print as they are and their
Diff cell says ``same`` / ``different``. Cells that could be read as spreadsheet formulas are
neutralised as in the network report. Written atomically (temporary file, then rename).
"""

from __future__ import annotations

import csv
import io
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from itertools import repeat
from operator import is_not
from pathlib import Path

from ..records import RowGrade
from ..stats import stat_label, stat_metrics
from ..stats_table import StatsResult, StatsTable
from .cells import MSPROBE_COLUMNS, NOT_COMPUTED, neutralise, shape_cell
from .files import atomic_write_chunks, is_stream, stamped_in_folder
from .float_text import repr_texts
from .table_columns import (
    BATCH_ROWS,
    batches,
    csv_field,
    csv_lines,
    each_distinct,
    msprobe_columns,
    text_column,
)

#: The metric of msprobe's checksum (``ChecksumDiff``: 0.0 same, 1.0 different).
(CHECKSUM_METRIC,) = stat_metrics("checksum")
#: Key of :func:`render_stats_csv`'s ``verdicts``: (rank, iteration, left op name), as
#: :func:`compare.reports.divergence.verdict_map` gives it.
VerdictKey = tuple[int | None, int | None, str]


#: msprobe's columns of its per-row reading (``RowGrade``), before FailReason when rows are graded.
GRADE_COLUMNS = ("Result", "Err_message")


def grade_cells(grade: RowGrade | None) -> list[str]:
    """The Result and Err_message cells of a row (messages joined by ``; ``; ``NaN`` when the row
    was not graded)."""
    if grade is None:
        return [NOT_COMPUTED, NOT_COMPUTED]
    return [grade.grade.value, "; ".join(grade.messages)]


def value_cell(value: object) -> str:
    """A statistic cell: full-precision number, ``nan``/``inf``, text as is, ``NaN`` if absent."""
    if type(value) is float and value - value == 0.0 and not value.is_integer():
        return repr(value)  # the common case first: a finite float with a fraction
    if value is None:
        return NOT_COMPUTED
    if isinstance(value, str):
        return value
    number = float(value)  # type: ignore[arg-type]
    if number - number != 0.0:  # NaN or an infinity
        return "nan" if number != number else ("inf" if number > 0 else "-inf")
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return repr(number)


def header(stats: Sequence[str], *, with_selection: bool = False, with_graph: bool = False, with_grade: bool = False,
           with_msprobe: bool = False,
           with_verdict: bool = False) -> list[str]:
    """The statistics report's header row (selection columns when parts were compared in turn;
    ``with_verdict``: the Verdict column, last)."""
    cols = ["Index", "OpType", "LeftOp", "RightOp", "TensorIndex"]
    if with_graph:
        cols += ["Rank", "Graph", "Iteration"]
    elif with_selection:
        cols += ["Rank", "Iteration"]
    cols += ["LeftDataType", "RightDataType", "Shape"]
    for name in stats:
        label = stat_label(name)
        cols += [f"Left{label}", f"Right{label}", f"{label}Diff", f"{label}RelDiff"]
    return (cols + ["LeftSource", "RightSource"] + (list(MSPROBE_COLUMNS) if with_msprobe else [])
            + (list(GRADE_COLUMNS) if with_grade else []) + ["FailReason"]
            + (["Verdict"] if with_verdict else []))


def _integral(text: str) -> str:
    """:func:`value_cell` of a finite float whose ``repr`` is ``text`` and ends in ``.0``: the
    integer digits below 1e15 (``-0.0`` is ``0``), else ``text`` itself."""
    if text == "-0.0":
        return "0"
    return text[:-2] if len(text) - 2 - (text[0] == "-") <= 15 else text


def _other_value(value: object) -> str:
    """The cell of a statistic that is not a float: text neutralised (and CSV-quoted: a checksum,
    ``same`` / ``different``), ``NaN`` for None, other numbers as :func:`value_cell` writes them."""
    if isinstance(value, str):
        return csv_field(neutralise(value))
    return value_cell(value)


def value_column(values: Sequence[object]) -> list[str]:
    """The CSV fields of a column of statistic values: :func:`value_cell` of each number (zero is
    ``0``; a float's ``repr``, integral ones below 1e15 without ``.0``, which is ``repr``'s text
    cut, the texts of the column's floats made at once by :func:`~compare.reports.float_text.repr_texts`),
    text neutralised; a whole column in one comprehension."""
    texts = iter(repr_texts([value for value in values if type(value) is float and value != 0.0]))
    return [("0" if value == 0.0 else text if (text := next(texts))[-2:] != ".0" else _integral(text))
            if type(value) is float else NOT_COMPUTED if value is None else _other_value(value) for value in values]


def right_value_column(lefts: Sequence[object], rights: Sequence[object], left_cells: Sequence[str]) -> list[str]:
    """:func:`value_column` of ``rights``, reusing the left cell of a row whose two floats are equal
    (equal floats print alike here, ``0.0`` and ``-0.0`` both ``0``): statistics of matching
    runs are mostly equal, and a float's ``repr`` is the costly part of the table."""
    texts = iter(repr_texts([right for left, right in zip(lefts, rights)
                             if type(right) is float and not right == left and right != 0.0]))
    return [(cell if right == left else "0" if right == 0.0
             else text if (text := next(texts))[-2:] != ".0" else _integral(text)) if type(right) is float
            else NOT_COMPUTED if right is None else _other_value(right) for left, right, cell in zip(lefts, rights, left_cells)]


def _text_column(values: Sequence[object]) -> list[str]:
    """The CSV fields of a column of text from the inputs (:func:`text_cell`)."""
    return text_column(values, csv_field)


def _batch_columns(table: StatsTable, start: int, stop: int, columns: Mapping[str, bool],
                   verdicts: Mapping[VerdictKey, str] | None) -> list[list[str]]:
    """The CSV fields of rows ``start:stop`` of a table, column by column, in :func:`header`'s
    order (a column may hold two fields joined by ``,``: a line is its columns joined by ``,``)."""
    tensor_ids = table.tensor_id[start:stop]
    cols = [list(map(str, table.index[start:stop])), _text_column(table.op_type[start:stop]),
            _text_column(table.left_op[start:stop]), _text_column(table.right_op[start:stop]),
            _text_column(tensor_ids)]
    if columns["with_graph"]:
        cols += [_text_column(table.rank[start:stop]), _text_column(table.graph[start:stop]),
                 _text_column(table.iteration[start:stop])]
    elif columns["with_selection"]:
        cols += [_text_column(table.rank[start:stop]), _text_column(table.iteration[start:stop])]
    cols += [_text_column(table.left_dtype[start:stop]), _text_column(table.right_dtype[start:stop]),
             each_distinct([shape if tensor_id else None for shape, tensor_id in zip(table.shape[start:stop], tensor_ids)],
                           lambda shape: csv_field(shape_cell(shape)))]
    for name in table.stats:
        lefts, rights, diffs, rels = table.columns[name].fields(start, stop)
        left_cells = value_column(lefts)
        cols += [left_cells, right_value_column(lefts, rights, left_cells), value_column(diffs), value_column(rels)]
    cols += [_text_column(table.left_source[start:stop]), _text_column(table.right_source[start:stop])]
    if columns["with_msprobe"]:
        cols += msprobe_columns(table.msprobe[start:stop], table.argument[start:stop], csv_field)
    if columns["with_grade"]:  # Result and Err_message: two fields of one text, each distinct grade once
        cols.append(each_distinct(table.grade[start:stop],
                                  lambda grade: ",".join([csv_field(neutralise(cell)) for cell in grade_cells(grade)])))
    cols.append(each_distinct(["; ".join(reasons) for reasons in table.reasons[start:stop]],
                              lambda text: csv_field(neutralise(text))))
    if verdicts is not None:
        cols.append(each_distinct([verdicts.get(key, "not-compared") for key in
                                   zip(table.rank[start:stop], table.iteration[start:stop], table.left_op[start:stop])],
                                  csv_field))
    return cols


def stats_csv_chunks(result: StatsResult, verdicts: Mapping[VerdictKey, str] | None = None) -> Iterator[str]:
    """The statistics report as CSV text, in chunks (``verdicts``: add the Verdict column, module
    doc): the header line, then :data:`~compare.reports.table_columns.BATCH_ROWS` rows at a time,
    built a column at a time from the result's table (:class:`compare.stats_table.StatsTable`)."""
    table = result.table
    rows = len(table)
    columns = {"with_selection": _any_set(table.rank) or _any_set(table.iteration),
               "with_graph": _any_set(table.graph), "with_grade": _any_set(table.grade),
               "with_msprobe": _any_set(table.msprobe)}
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(header(table.stats, **columns, with_verdict=verdicts is not None))
    yield buf.getvalue()
    for start in batches(rows):
        yield csv_lines(_batch_columns(table, start, min(start + BATCH_ROWS, rows), columns, verdicts), "\n")


def render_stats_csv(result: StatsResult, verdicts: Mapping[VerdictKey, str] | None = None) -> str:
    """The statistics report as CSV text (:func:`stats_csv_chunks` joined)."""
    return "".join(stats_csv_chunks(result, verdicts))


def _any_set(values: list[object]) -> bool:
    """Whether any entry of a column is not None (C-level passes, no comparison method called)."""
    return any(map(is_not, values, repeat(None)))


def stats_output_path(output: str | os.PathLike[str] | None, *, now: time.struct_time | None = None) -> Path:
    """Where the statistics report goes: a file path as given (``.csv``; a device or pipe such as
    ``/dev/stdout`` as it is), else
    ``{output or cwd}/stats_result_{YYYYmmddHHMMSS}.csv``."""
    stamped = stamped_in_folder(output, "stats_result", now=now)
    if stamped is not None:
        return stamped
    path = Path(os.fspath(output))  # type: ignore[arg-type]  # not None: stamped_in_folder said so
    if path.suffix.lower() != ".csv" and not is_stream(path):  # -o /dev/stdout: written through as it is
        return path.with_name(f"{path.stem}_stats.csv")
    return path


def write_stats_report(result: StatsResult, output: str | os.PathLike[str] | None = None,
                       verdicts: Mapping[VerdictKey, str] | None = None) -> Path:
    """Write the statistics report (see the module doc; ``verdicts``: with the Verdict column)
    and return its path."""
    return atomic_write_chunks(stats_output_path(output), stats_csv_chunks(result, verdicts))


__all__ = [
    "CHECKSUM_METRIC",
    "VerdictKey",
    "grade_cells",
    "header",
    "render_stats_csv",
    "right_value_column",
    "stat_label",
    "stats_output_path",
    "value_cell",
    "value_column",
    "write_stats_report",
]
