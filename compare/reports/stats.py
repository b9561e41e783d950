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
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import is_, is_not
from pathlib import Path
from typing import TypeVar

import numpy as np

from ..records import RowGrade
from ..stats import stat_label, stat_metrics
from ..stats_table import StatColumn, StatsResult, StatsTable
from .cells import MSPROBE_COLUMNS, NOT_COMPUTED, neutralise, shape_cell
from .files import atomic_write_chunks, is_stream, stamped_in_folder
from .float_text import repr_rows
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
#: The types of a list of statistic values read as numbers at once (:meth:`ValueColumn.of_values`).
_NONE = type(None)
_FLOAT_OR_NONE = frozenset({float, _NONE})
#: The types of a text column whose equal values print alike (:func:`_text_pair`).
_TEXT_TYPES = frozenset({str, _NONE})
#: A row's FailReason text: its reasons joined.
_REASONS_TEXT = "; ".join
T = TypeVar("T")


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


def _other_value(value: object) -> str:
    """The cell of a statistic that is neither a float nor None: text neutralised (and CSV-quoted:
    a checksum, ``same`` / ``different``), other numbers (an int, a numpy float) as
    :func:`value_cell` writes them."""
    if isinstance(value, str):
        return csv_field(neutralise(value))
    return value_cell(value)


@dataclass(frozen=True, eq=False)
class ValueColumn:
    """One column of statistic values over a batch of rows, as :func:`value_rows` reads it:
    ``numbers[i]`` is row ``i``'s value when it is a ``float`` (NaN otherwise), ``absent[i]``
    whether the row has no value (``None``: the cell ``NaN``), ``others`` the rows whose value is
    neither (text, an int, a float subclass), each written by :func:`_other_value`."""

    numbers: np.ndarray
    absent: np.ndarray
    others: Mapping[int, object]

    @classmethod
    def of_values(cls, values: list[object]) -> ValueColumn:
        """The column of a list of values (a statistic's left or right values)."""
        rows = len(values)
        kinds = set(map(type, values))
        if kinds <= _FLOAT_OR_NONE:  # numpy reads None as NaN: the NaN are the None when there are as many
            numbers = np.array(values, dtype=np.float64)
            if _NONE not in kinds:
                return cls(numbers, np.zeros(rows, dtype=bool), {})
            nan = np.isnan(numbers)
            if np.count_nonzero(nan) == values.count(None):
                return cls(numbers, nan, {})
            return cls(numbers, np.fromiter(map(is_, values, repeat(None)), dtype=bool, count=rows), {})
        return cls(np.array([value if type(value) is float else math.nan for value in values], dtype=np.float64),
                   np.array([value is None for value in values], dtype=bool),
                   {row: value for row, value in enumerate(values) if value is not None and type(value) is not float})


def _differences(column: StatColumn, start: int, stop: int) -> tuple[ValueColumn, ValueColumn]:
    """The Diff and RelDiff values of rows ``start:stop`` of a statistic (:class:`StatColumn`: a
    row without the statistic has none; a row's ``special`` pair stands for both numbers). The
    special rows of the range are found by looking at the fewer of the range's rows and the
    special entries (a checksum column is special on every row)."""
    absent = ~column.has[start:stop]
    diffs, rels = column.diff[start:stop], column.rel[start:stop]
    special = column.special
    rows = (special if len(special) <= stop - start else [row for row in range(start, stop) if row in special])
    found = [row for row in rows if start <= row < stop]
    if not found:
        return ValueColumn(diffs, absent, {}), ValueColumn(rels, absent, {})
    diffs, rels = diffs.copy(), rels.copy()
    diff_absent, rel_absent = absent.copy(), absent.copy()
    diff_others: dict[int, object] = {}
    rel_others: dict[int, object] = {}
    for row in found:
        diff, rel = special[row]
        at = row - start
        for value, numbers, missing, others in ((diff, diffs, diff_absent, diff_others), (rel, rels, rel_absent, rel_others)):
            missing[at] = value is None
            if type(value) is float:
                numbers[at] = value
            elif value is not None:
                others[at] = value
    return ValueColumn(diffs, diff_absent, diff_others), ValueColumn(rels, rel_absent, rel_others)


def value_rows(columns: Sequence[ValueColumn]) -> list[str]:
    """The statistic cells of a batch of rows, each row's cells joined by ``,``: :func:`value_cell`
    of each value (zero ``0``, an integral float below 1e15 its integer digits, another float
    its ``repr``, NaN and the infinities ``nan`` / ``inf`` / ``-inf``, ``NaN`` for no value), text
    neutralised and CSV-quoted (:func:`_other_value`).

    A table at a time: the cells fixed by the value (no value, zero, integral, text) are holes with
    their text, the other floats are written by :func:`~compare.reports.float_text.repr_rows`
    (``repr``'s text, no object a cell); a text holding ``[`` (which would cut a row there) or
    ``%`` is a hole ``%s``, filled row by row afterwards (the row's only ``%``)."""
    rows, width = len(columns[0].numbers), len(columns)
    values, absent = np.empty((rows, width)), np.empty((rows, width), dtype=bool)
    for at, column in enumerate(columns):
        values[:, at], absent[:, at] = column.numbers, column.absent
    zero = values == 0.0
    integral = ~zero & (values == np.trunc(values)) & (np.abs(values) < 1e15)  # NaN and inf are not
    fills = np.empty((rows, width), dtype=object)
    fills[absent] = NOT_COMPUTED
    fills[zero] = "0"
    holes = absent | zero | integral
    if integral.any():
        fills[integral] = np.array(list(map(str, values[integral].astype(np.int64).tolist())), dtype=object)
    later: dict[int, list[str]] = {}
    known: dict[object, str] = {}  # equal values print alike (value_cell reads a number as its float)
    for at, column in enumerate(columns):
        for row, value in column.others.items():
            text = known.get(value)
            if text is None:
                text = known[value] = _other_value(value)
            holes[row, at] = True
            if "[" in text or "%" in text:  # not a fill of repr_rows, nor text in a row filled later
                fills[row, at] = "%s"
                later.setdefault(row, []).append(text)
            else:
                fills[row, at] = text
    lines = repr_rows(values, holes, fills)
    for row, texts in later.items():
        lines[row] = lines[row] % tuple(texts)
    return lines


def _text_column(values: Sequence[object]) -> list[str]:
    """The CSV fields of a column of text from the inputs (:func:`text_cell`)."""
    return text_column(values, csv_field)


def _text_pair(lefts: Sequence[object], rights: Sequence[object]) -> list[list[str]]:
    """The CSV fields of a left and a right text column (:func:`_text_column` of each): the left's
    again when both hold the same text, row for row (names and data types mostly match; equal
    ``str`` or ``None`` values are the same cells, which equal values of other types need not be:
    ``1``, ``1.0`` and ``True`` print apart)."""
    left_cells = _text_column(lefts)
    if lefts == rights and _TEXT_TYPES.issuperset(map(type, lefts)) and _TEXT_TYPES.issuperset(map(type, rights)):
        return [left_cells, left_cells]
    return [left_cells, _text_column(rights)]


def _each_object(values: Sequence[T], cell: Callable[[T], str]) -> list[str]:
    """``[cell(v) for v in values]``, calling ``cell`` once per distinct object (by identity: the
    rows of a table share their records, such as msprobe's grades, and a record's hash may be
    costly; equal records that are not the same object are formatted again, to the same text)."""
    objects = dict(zip(map(id, values), values))
    texts = {key: cell(value) for key, value in objects.items()}
    return list(map(texts.__getitem__, map(id, values)))


def _grade_field(grade: RowGrade | None) -> str:
    """The Result and Err_message fields of a row (:func:`grade_cells`), joined by ``,``."""
    return ",".join([csv_field(neutralise(cell)) for cell in grade_cells(grade)])


def _batch_columns(table: StatsTable, start: int, stop: int, columns: Mapping[str, bool],
                   verdicts: Mapping[VerdictKey, str] | None) -> list[list[str]]:
    """The CSV fields of rows ``start:stop`` of a table, column by column, in :func:`header`'s
    order (a column may hold several fields joined by ``,``: a line is its columns joined by ``,``)."""
    tensor_ids = table.tensor_id[start:stop]
    shapes = table.shape[start:stop]
    cols = [list(map(str, table.index[start:stop])), _text_column(table.op_type[start:stop]),
            *_text_pair(table.left_op[start:stop], table.right_op[start:stop]), _text_column(tensor_ids)]
    if columns["with_graph"]:
        cols += [_text_column(table.rank[start:stop]), _text_column(table.graph[start:stop]),
                 _text_column(table.iteration[start:stop])]
    elif columns["with_selection"]:
        cols += [_text_column(table.rank[start:stop]), _text_column(table.iteration[start:stop])]
    cols += [*_text_pair(table.left_dtype[start:stop], table.right_dtype[start:stop]),
             each_distinct(shapes if all(tensor_ids) else
                           [shape if tensor_id else None for shape, tensor_id in zip(shapes, tensor_ids)],
                           lambda shape: csv_field(shape_cell(shape)))]
    if table.stats:  # the Left, Right, Diff and RelDiff cells of every statistic: one field a row
        values = []
        for name in table.stats:
            column = table.columns[name]
            values += [ValueColumn.of_values(column.left[start:stop]), ValueColumn.of_values(column.right[start:stop]),
                       *_differences(column, start, stop)]
        cols.append(value_rows(values))
    cols += _text_pair(table.left_source[start:stop], table.right_source[start:stop])
    if columns["with_msprobe"]:
        cols += msprobe_columns(table.msprobe[start:stop], table.argument[start:stop], csv_field)
    if columns["with_grade"]:  # Result and Err_message: two fields of one text, each grade once
        cols.append(_each_object(table.grade[start:stop], _grade_field))
    cols.append(each_distinct(list(map(_REASONS_TEXT, table.reasons[start:stop])), lambda text: csv_field(neutralise(text))))
    if verdicts is not None:
        keys = zip(table.rank[start:stop], table.iteration[start:stop], table.left_op[start:stop])
        cols.append(each_distinct(list(map(verdicts.get, keys, repeat("not-compared"))), csv_field))
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
    "ValueColumn",
    "VerdictKey",
    "grade_cells",
    "header",
    "render_stats_csv",
    "stat_label",
    "stats_output_path",
    "value_cell",
    "value_rows",
    "write_stats_report",
]
