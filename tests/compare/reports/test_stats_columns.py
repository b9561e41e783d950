"""The statistics report built column by column (issue 31) is the row-by-row table of the per-cell
functions (:func:`~compare.reports.stats.value_cell`, :func:`~compare.reports.cells.text_cell`,
``csv.writer``), across batch boundaries: rows missing a statistic, text statistics, odd floats,
hostile names, graded and ungraded rows."""

from __future__ import annotations

import csv
import io
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compare.records import Grade, RowGrade, StatDiff
from compare.reports import stats as stats_report
from compare.reports.cells import neutralise, shape_cell, text_cell
from compare.reports.stats import grade_cells, header, render_stats_csv, value_cell
from compare.stats import StatsRow
from compare.stats_table import StatsResult

_NAMES = st.sampled_from(["conv", "=cmd", " +1", "a,b", 'q"uote', "line\nbreak", "Add", "", "%s"])
_VALUES = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6),
                    st.floats(-1e-4, 1e-4), st.floats(-1e-8, 1e-8),
                    st.sampled_from([0.0, -0.0, 5e-324, 1e15, 1e16, 1e-5, 123456.0, 3.0, 1e-9, 2.5e-7, "d41d8cd9", "=1+1",
                                     "same", "%s", "a],[b", "[1,2]"]))
_STATS = ["max", "min", "md5"]


def _cell(value: object) -> str:
    return neutralise(value) if isinstance(value, str) else value_cell(value)


@st.composite
def _rows(draw: st.DrawFn) -> StatsRow:
    values = {name: StatDiff(draw(_VALUES), draw(_VALUES), draw(_VALUES), draw(_VALUES))
              for name in _STATS if draw(st.booleans())}
    return StatsRow(draw(st.integers(0, 99)), draw(st.none() | _NAMES), draw(_NAMES), draw(_NAMES),
                    draw(st.none() | _NAMES), draw(st.none() | _NAMES), draw(st.none() | _NAMES),
                    draw(st.none() | st.sampled_from([(2, 3), (16,), ()])), values, draw(_NAMES), draw(_NAMES),
                    draw(st.lists(_NAMES, max_size=2)),
                    grade=draw(st.none() | st.builds(RowGrade, st.sampled_from(Grade),
                                                     st.lists(_NAMES, max_size=2).map(tuple))))


def _reference(result: StatsResult) -> str:
    """The report row by row: each cell by the per-cell functions, each row by ``csv.writer``."""
    with_grade = any(r.grade is not None for r in result.rows)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header(result.stats, with_grade=with_grade))
    for r in result.rows:
        cells = [str(r.index), text_cell(r.op_type), text_cell(r.left_op), text_cell(r.right_op),
                 text_cell(r.tensor_id), text_cell(r.left_dtype), text_cell(r.right_dtype),
                 shape_cell(r.shape if r.tensor_id else None)]
        for name in result.stats:
            d = r.values.get(name)
            cells += [_cell(None if d is None else v) for v in ((d.left, d.right, d.diff, d.rel) if d else (0,) * 4)]
        cells += [text_cell(r.left_source), text_cell(r.right_source)]
        if with_grade:
            cells += [neutralise(cell) for cell in grade_cells(r.grade)]
        writer.writerow(cells + [neutralise("; ".join(r.reasons))])
    return buf.getvalue()


@settings(max_examples=150, deadline=None)
@given(st.lists(_rows(), min_size=1, max_size=11))
def test_stats_csv_is_the_per_cell_table_across_batches(rows: list[StatsRow]) -> None:
    result = StatsResult.of_rows(rows, _STATS)
    whole = render_stats_csv(result)
    assert whole == _reference(result)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stats_report, "BATCH_ROWS", 3)
        patch.setattr(stats_report, "batches", lambda count: range(0, count, 3))
        assert render_stats_csv(result) == whole


def test_rows_missing_a_statistic_print_not_computed() -> None:
    rows = [StatsRow(0, "Add", "a", "a", "t0", values={"max": StatDiff(1.5, 1.5, 0.0, 0.0)}),
            StatsRow(1, "Add", "b", "b", "t1", values={"min": StatDiff(-math.inf, math.nan, None, None)})]
    lines = render_stats_csv(StatsResult.of_rows(rows, ["max", "min"])).splitlines()
    assert lines[1].split(",")[8:16] == ["1.5", "1.5", "0", "0", "NaN", "NaN", "NaN", "NaN"]
    assert lines[2].split(",")[8:16] == ["NaN", "NaN", "NaN", "NaN", "-inf", "nan", "NaN", "NaN"]
