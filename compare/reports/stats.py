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
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..records import RowGrade, StatDiff
from ..stats import StatsResult, StatsRow, stat_label, stat_metrics
from .cells import MSPROBE_COLUMNS, NOT_COMPUTED, msprobe_row_cells, neutralise, shape_cell, text_cell
from .files import atomic_write_text, is_stream, stamped_in_folder

#: The metric of msprobe's checksum (``ChecksumDiff``: 0.0 same, 1.0 different).
(CHECKSUM_METRIC,) = stat_metrics("checksum")
#: Key of :func:`row_cells`' ``verdicts``: (rank, iteration, left op name), as
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


_ABSENT = [NOT_COMPUTED] * 4


def _value_cells(value: StatDiff) -> list[str]:
    """The four cells of one statistic: numbers as :func:`value_cell` writes them (a number is
    never formula-like), text (a checksum, ``same`` / ``different``) neutralised."""
    return [neutralise(item) if isinstance(item, str) else value_cell(item)
            for item in (value.left, value.right, value.diff, value.rel)]


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


def row_cells(row: StatsRow, stats: Sequence[str], *, with_selection: bool = False,
              with_graph: bool = False, verdicts: Mapping[VerdictKey, str] | None = None,
              with_grade: bool = False, with_msprobe: bool = False) -> list[str]:
    """The cells of one statistics row, in :func:`header`'s order (``verdicts``: the Verdict cell
    of the row's call, ``not-compared`` when the call has none)."""
    # text cells are neutralised as they are made (text_cell, neutralise); numbers need not be
    cells = [str(row.index), text_cell(row.op_type), text_cell(row.left_op), text_cell(row.right_op),
             text_cell(row.tensor_id)]
    if with_graph:
        cells += [text_cell(row.rank), text_cell(row.graph), text_cell(row.iteration)]
    elif with_selection:
        cells += [text_cell(row.rank), text_cell(row.iteration)]
    cells += [text_cell(row.left_dtype), text_cell(row.right_dtype),
              shape_cell(row.shape) if row.tensor_id else NOT_COMPUTED]
    values = row.values
    for name in stats:
        value = values.get(name)
        if value is None:
            cells += _ABSENT
        else:
            cells += _value_cells(value)
    cells += [text_cell(row.left_source), text_cell(row.right_source)]
    if with_msprobe:
        cells += msprobe_row_cells(row.msprobe, row.argument)
    if with_grade:
        cells += [neutralise(c) for c in grade_cells(row.grade)]
    cells.append(neutralise("; ".join(row.reasons)))
    if verdicts is not None:
        cells.append(verdicts.get((row.rank, row.iteration, row.left_op), "not-compared"))
    return cells


def render_stats_csv(result: StatsResult, verdicts: Mapping[VerdictKey, str] | None = None) -> str:
    """The statistics report as CSV text (``verdicts``: add the Verdict column, module doc)."""
    columns = {"with_selection": any(r.rank is not None or r.iteration is not None for r in result.rows),
               "with_graph": any(r.graph is not None for r in result.rows),
               "with_grade": any(r.grade is not None for r in result.rows),
               "with_msprobe": any(r.msprobe is not None for r in result.rows)}
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header(result.stats, **columns, with_verdict=verdicts is not None))
    for row in result.rows:
        writer.writerow(row_cells(row, result.stats, **columns, verdicts=verdicts))
    return buf.getvalue()


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
    return atomic_write_text(stats_output_path(output), render_stats_csv(result, verdicts))


__all__ = ["CHECKSUM_METRIC", "VerdictKey", "grade_cells", "header", "render_stats_csv", "row_cells",
           "stat_label", "stats_output_path", "value_cell", "write_stats_report"]
