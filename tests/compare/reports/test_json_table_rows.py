"""The JSON rows of a statistics run written from its table (issue 31): the lines of a
:class:`~compare.stats_table.MetricRows` view, read from the table's columns, are byte for byte
those of the records the view builds (the records' lines are held to the dict-built reference in
``test_json_rows.py``), across batch boundaries, on random rows: missing statistics, None, NaN,
infinities, -0.0, whole numbers, text (checksums, ``same`` / ``different``), hostile names, msprobe
cells, grades, and argument rows kept by the table as records (metrics of their own); and no row's
record is built to write them or the document's head."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from compare import compare_network
from compare.records import ArgumentDiff, Grade, MetricRow, MsprobeCells, PairStatus, RowGrade, RowKind, StatDiff
from compare.reports import json_rows
from compare.reports.json_rows import RowEncoder, render_result, row_documents, write_result
from compare.stats import StatsRow, stat_metrics, statistics_metrics
from compare.stats_table import MetricRows, StatsResult, StatsTable

_NAMES = st.sampled_from(["conv", "Add", "", "%s", "%", 'q"uote', "line\nbreak", "\u00e9\u4e2d", "\udcff", "a,b"])
_VALUES = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6),
                    st.sampled_from([0.0, -0.0, 5e-324, -math.inf, 1e16, 1e-5, 9.999999999999999e-06, 5e-5,
                                     "d41d8cd9", "same", "different", "-1"]))
_RELS = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6),
                  st.sampled_from([0.0, -0.0, 1e-5, 5e-5]))
_STATS = ["max", "min", "l2norm", "md5"]
_HEAD = {"schema": "vcompare-result", "rows": []}


@st.composite
def _row(draw: st.DrawFn, index: int) -> tuple[StatsRow, MetricRow]:
    """A statistics row and its record; one row in five an argument row (kept as its record)."""
    cells = draw(st.none() | st.builds(MsprobeCells, _NAMES, _NAMES, _NAMES, _NAMES, st.none() | st.booleans(),
                                       st.none() | st.booleans(), st.lists(_NAMES, max_size=2).map(tuple), _NAMES))
    grade = draw(st.none() | st.just(RowGrade(Grade.PASS)) | st.builds(RowGrade, st.sampled_from(Grade),
                                                                         st.lists(_NAMES, max_size=2).map(tuple)))
    names = (draw(st.none() | _NAMES), draw(_NAMES), draw(_NAMES), draw(st.none() | _NAMES))
    dtypes = (draw(st.none() | _NAMES), draw(st.none() | _NAMES))
    shape = draw(st.none() | st.sampled_from([(2, 3), (16,), ()]))
    reasons = draw(st.lists(_NAMES, max_size=2))
    status = draw(st.sampled_from(PairStatus))
    if draw(st.integers(0, 4)) == 0:
        argument = ArgumentDiff(draw(_NAMES), draw(_NAMES), draw(st.none() | _NAMES), draw(st.none() | _NAMES),
                                draw(st.booleans()), draw(st.none() | st.floats()))
        metrics = {m: None for name in _STATS for m in stat_metrics(name)}
        metrics["ArgumentDiff"] = argument.diff
        record = MetricRow(index, *names, left_dtype=dtypes[0], right_dtype=dtypes[1], shape=shape, metrics=metrics,
                           reasons=list(reasons), status=status, kind=RowKind.ARGUMENT, msprobe=cells,
                           argument=argument, grade=grade, left_address=draw(st.none() | st.integers(0, 2**40)),
                           std=draw(st.none() | st.tuples(*[st.none() | st.floats()] * 4)),
                           undefined=frozenset(draw(st.lists(st.sampled_from(sorted(metrics)), max_size=2))))
        return StatsRow(*_record_fields(record), grade=grade, msprobe=cells, argument=argument), record
    values = {name: StatDiff(draw(_VALUES), draw(_VALUES), draw(_VALUES), draw(_RELS))
              for name in _STATS if draw(st.booleans())}
    row = StatsRow(index, *names, *dtypes, shape, values, draw(_NAMES), draw(_NAMES), list(reasons), status,
                   grade=grade, msprobe=cells)
    record = MetricRow(index, *names, metrics=statistics_metrics(values)[0], undefined=statistics_metrics(values)[1],
                       op_sequence=draw(st.none() | st.integers(0, 99)), kind=RowKind.STATISTICS, statistics=values)
    return row, record


def _record_fields(record: MetricRow) -> tuple:
    return (record.index, record.op_type, record.left_op, record.right_op, record.tensor_id, record.left_dtype,
            record.right_dtype, record.shape)


@st.composite
def _table(draw: st.DrawFn) -> StatsTable:
    count = draw(st.integers(1, 12))
    pairs = [draw(_row(i)) for i in range(count)]
    return StatsResult.of_rows([p[0] for p in pairs], _STATS, [p[1] for p in pairs]).table


@settings(max_examples=120, deadline=None)
@given(_table(), st.integers(1, 5), st.booleans())
def test_view_lines_are_the_records_lines(table: StatsTable, per_write: int, all_metrics: bool) -> None:
    """The document of the view is the document of its records, whatever the batch size; with
    document metrics that do not cover the table's (the records' way, for every row) too."""
    view = MetricRows(table)
    records = list(view)
    metrics = [m for name in table.stats for m in stat_metrics(name)] if all_metrics else ["MaxDiff", "Cosine"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_rows, "ROWS_PER_WRITE", per_write)
        text = render_result(_HEAD, view, metrics)
        assert text == render_result(_HEAD, records, metrics)
    assert row_documents(view, metrics) == row_documents(records, metrics)
    encoder = RowEncoder(metrics)
    assert encoder.lines(7, view, 1) == encoder.lines(7, records[1:])


def test_no_record_is_built_to_write_a_statistics_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A statistics run's head and rows are written from its table: no row's record is built
    (its argument rows are the records the table keeps)."""
    result = compare_network(FIXTURES / "msprobe_real" / "s_L1_perturb", FIXTURES / "msprobe_real" / "s_L1_base")
    assert isinstance(result.rows, MetricRows) and result.rows.table.kept
    records = list(result.rows)
    built: list[int] = []
    real = StatsTable.metric_row

    def counted(table: StatsTable, row: int) -> MetricRow:
        built.append(row)
        return real(table, row)

    monkeypatch.setattr(StatsTable, "metric_row", counted)
    head = result.to_dict(with_rows=False)  # one head for both writers: its "created" second is the same
    expected = render_result(head, records, result.metrics)
    assert write_result(head, tmp_path / "r.json", result.rows, result.metrics).read_text() == expected
    assert built == []


_REPEATING = st.sampled_from([0.0, -0.0, math.nan, -math.inf, 1e-5, 0.1, 5e-324, None, 0, 1, False, True, 2**70,
                               2**70 + 1]) | st.floats()


@settings(max_examples=300, deadline=None)
@given(st.lists(_REPEATING, min_size=20, max_size=200), st.lists(_REPEATING | _VALUES, min_size=20, max_size=200))
def test_repeated_values_are_written_once_each_with_its_own_text(values: list, with_text: list) -> None:
    """Equal values written once (0.0 and -0.0, 0 and False, 1 and 1.0 are equal keys; NaNs are
    not equal to themselves): each text is the value's own, as the field it sits in writes it
    (a statistic's left / right / diff: text as it is; any other field: a number)."""
    assert json_rows._float_texts(values, lambda i: False) == [json_rows._number(v) for v in values]
    at_stat = [i % 2 == 0 or isinstance(v, str) for i, v in enumerate(with_text)]
    assert (json_rows._float_texts(with_text, at_stat.__getitem__)
            == [json_rows._stat(v) if at_stat[i] else json_rows._number(v) for i, v in enumerate(with_text)])
