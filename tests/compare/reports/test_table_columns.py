"""The column-at-a-time cells of the CSV and txt tables give the per-cell text, cell for cell.

:mod:`compare.reports.table_columns` and the column functions of :mod:`compare.reports.cells`,
:mod:`compare.reports.stats` format whole columns; each property below holds a column to the
per-cell function it replaces (``value_cell`` for a row's statistic cells, ``metric_cell``, ``std_cell``, ``text_cell``,
``msprobe_row_cells``) and a CSV field to what :func:`csv.writer` writes, on random values and
hostile text (formula starts, blanks, line breaks, quotes, commas, lone surrogates).
"""

from __future__ import annotations

import csv
import io
import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compare.records import ArgumentDiff, MetricRow, MsprobeCells, PairStatus
from compare.reports import network
from compare.reports.cells import (
    DEFAULT_FLOAT_FORMAT,
    REPR_FLOAT_FORMAT,
    FloatFormat,
    metric_cell,
    metric_column,
    msprobe_row_cells,
    neutralise,
    shape_cell,
    std_cell,
    std_column,
    text_cell,
)
from compare.reports.network import header
from compare.reports.stats import ValueColumn, value_cell, value_rows
from compare.reports.table_columns import (
    BATCH_ROWS,
    batches,
    csv_field,
    csv_lines,
    each_distinct,
    msprobe_columns,
    plain_text,
    printable,
    text_column,
)
from convert.textcells import BLANKS, DANGEROUS_START

PROPS = settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)

#: Text a name can hold, with the characters the formula guard and the CSV quoting look at.
HOSTILE = st.text(st.sampled_from([*DANGEROUS_START, *BLANKS, ",", '"', "'", "a", "Z", "0", ".", "_", ":", " ",
                                   "\x00", "\x01", "\u2028", "\udcff", "\ud800", "\u00e9", "\u4e2d"]), max_size=8)
NAMES = st.one_of(st.none(), st.just(""), HOSTILE, st.from_regex(r"[A-Za-z][A-Za-z0-9_.]{0,20}", fullmatch=True))
FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**16, 10**16).map(float),
                   st.floats(-1e-4, 1e-4), st.floats(-1e-8, 1e-8),
                   st.sampled_from([0.0, -0.0, 1e15, -1e15, 999999999999999.0, 1e16, 0.1, 5e-324, 1e-4, 1e-5, 1e-9,
                                    9.99e-10, -2.5e-5, 1e-6, 1e300, -1e22]))
STAT_VALUES = st.one_of(st.none(), FLOATS, HOSTILE, st.integers(-10**20, 10**20), st.booleans())
FORMATS = st.one_of(st.just(DEFAULT_FLOAT_FORMAT), st.just(REPR_FLOAT_FORMAT),
                    st.integers(0, 40).map(lambda digits: FloatFormat(digits=digits)))


def _writer_field(cell: str, lineterminator: str) -> str:
    """``cell`` as ``csv.writer`` writes it in a row of two cells (the second empty)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator=lineterminator).writerow([cell, ""])
    return buf.getvalue()[: -1 - len(lineterminator)]


@PROPS
@given(HOSTILE, st.sampled_from(["\n", "\r\n"]))
def test_csv_field_is_the_csv_writers_field(cell: str, lineterminator: str) -> None:
    assert csv_field(cell, lineterminator) == _writer_field(cell, lineterminator)


@PROPS
@given(st.lists(st.lists(HOSTILE, min_size=3, max_size=3), max_size=5), st.sampled_from(["\n", "\r\n"]))
def test_csv_lines_are_the_csv_writers_rows(rows: list[list[str]], lineterminator: str) -> None:
    columns = [[csv_field(row[i], lineterminator) for row in rows] for i in range(3)]
    buf = io.StringIO()
    csv.writer(buf, lineterminator=lineterminator).writerows(rows)
    assert csv_lines(columns, lineterminator) == buf.getvalue()


@PROPS
@given(st.lists(NAMES, max_size=12))
def test_text_column_is_text_cell_of_each_value(values: list[str | None]) -> None:
    assert text_column(values, csv_field) == [csv_field(text_cell(v)) for v in values]
    assert text_column(values, lambda cell: cell) == [text_cell(v) for v in values]


@PROPS
@given(st.lists(st.one_of(st.none(), st.integers(-3, 3)), max_size=8))
def test_text_column_of_numbers(values: list[int | None]) -> None:
    """Ranks and iterations: ``0`` is a cell, not a missing value."""
    assert text_column(values, csv_field) == [text_cell(v) for v in values]


def test_plain_text_leaves_no_guarded_cell_through() -> None:
    assert plain_text(["Functional.conv2d.0.forward", "a b", "x'y"])
    for bad in ["", "=1", " =1", "a,b", 'a"b', "a\nb", "\ud800", "\ufeffx", "-1"]:
        assert not plain_text(["ok", bad])
    assert not plain_text(["ok", None]) and not plain_text([1, 2])
    assert not plain_text([PairStatus.COMPARED])  # a str enum: text_cell prints str() of it


def _stat_field(value: object) -> str:
    """The CSV field of one statistic value, by the per-cell functions."""
    return csv_field(neutralise(value)) if isinstance(value, str) else value_cell(value)


@PROPS
@given(st.integers(1, 5).flatmap(lambda width: st.lists(st.lists(STAT_VALUES, min_size=width, max_size=width),
                                                        max_size=12)))
def test_value_rows_are_value_cell_of_each_value(rows: list[list[object]]) -> None:
    """Each row's cells by :func:`value_cell` (text neutralised and quoted), joined by ``,``: NaN,
    infinities, zeros of both signs, integral floats around 1e15, the ranges orjson writes
    otherwise, ints, bools, text with quotes, commas, ``%`` and line breaks, ``None``."""
    if not rows:
        return
    columns = [ValueColumn.of_values([row[at] for row in rows]) for at in range(len(rows[0]))]
    assert value_rows(columns) == [",".join(_stat_field(value) for value in row) for row in rows]


@PROPS
@given(st.integers(1, 4).flatmap(lambda width: st.lists(st.lists(st.one_of(st.none(), FLOATS), min_size=width,
                                                                 max_size=width), min_size=1, max_size=40)))
def test_value_rows_of_numbers_only(rows: list[list[float | None]]) -> None:
    """Columns of floats and None only (the lists read at once by numpy), rows without any value."""
    columns = [ValueColumn.of_values([row[at] for row in rows]) for at in range(len(rows[0]))]
    assert value_rows(columns) == [",".join(_stat_field(value) for value in row) for row in rows]


@PROPS
@given(st.lists(st.one_of(st.none(), FLOATS), max_size=12), FORMATS)
def test_metric_column_is_metric_cell_of_each_value(values: list[float | None], float_format: FloatFormat) -> None:
    assert metric_column(values, float_format) == [metric_cell(v, float_format) for v in values]


STDS = st.one_of(st.none(), st.tuples(*[st.one_of(FLOATS, st.floats(-0.01, 0.01), st.integers(-3, 3),
                                               st.floats(-2, 2, width=32).map(np.float32))] * 4))


@PROPS
@given(st.lists(STDS, max_size=12), FORMATS)
def test_std_column_is_std_cell_of_each_quadruple(stds: list, float_format: FloatFormat) -> None:
    assert std_column(stds, float_format) == [std_cell(s, float_format) for s in stds]


OPTIONAL_BOOL = st.one_of(st.none(), st.booleans())
TEXT = st.one_of(st.just(""), HOSTILE)
MSPROBE = st.one_of(st.none(), st.builds(MsprobeCells, left_name=TEXT, right_name=TEXT, left_data=TEXT,
                                         right_data=TEXT, left_grad=OPTIONAL_BOOL, right_grad=OPTIONAL_BOOL,
                                         source=TEXT))
ARGUMENTS = st.one_of(st.none(), st.builds(ArgumentDiff, left_type=st.none(), right_type=st.none(), left=NAMES,
                                           right=NAMES, same=st.booleans()))


@PROPS
@given(st.lists(st.tuples(MSPROBE, ARGUMENTS), max_size=8))
def test_msprobe_columns_are_msprobe_row_cells(rows: list) -> None:
    cells, arguments = [r[0] for r in rows], [r[1] for r in rows]
    columns = msprobe_columns(cells, arguments, csv_field)
    expected = [[csv_field(c) for c in msprobe_row_cells(m, a)] for m, a in rows]
    assert [list(row) for row in zip(*columns)] == expected
    assert len(columns) == 7


def test_each_distinct_formats_each_distinct_value_once() -> None:
    calls: list[object] = []

    def cell(value: object) -> str:
        calls.append(value)
        return f"<{value}>"

    assert each_distinct(["a", "b", "a", None, "a"], cell) == ["<a>", "<b>", "<a>", "<None>", "<a>"]
    assert sorted(calls, key=str) == [None, "a", "b"]


def test_batches_cover_every_row_once() -> None:
    count = 2 * BATCH_ROWS + 5
    starts = list(batches(count))
    assert starts == [0, BATCH_ROWS, 2 * BATCH_ROWS]
    assert not list(batches(0))


def _metric_rows(count: int, seed: int) -> list[MetricRow]:
    """Rows with hostile names, repeated and unique, every kind of metric value and reasons."""
    rng = random.Random(seed)
    names = ["conv", "=cmd|' /C calc'!A0", " +1", "a,b", 'q"uote', "line\nbreak", "\ufeff-x", "Add", "", "\udcff"]
    values = [0.0, -0.0, 1.0, 0.5, -1e-9, 1e300, math.nan, math.inf, -math.inf, None, 123456.789]

    def value() -> float | None:
        return rng.choice(values) if rng.random() < 0.5 else rng.uniform(-2, 2)

    return [MetricRow(index=i, op_type=rng.choice(names) or None, left_op=rng.choice(names) + str(i % 7),
                      right_op=rng.choice(names), tensor_id=rng.choice([None, "output:0", "input:1", rng.choice(names)]),
                      left_dtype=rng.choice(["float16", None, "=x"]), right_dtype="float32",
                      shape=rng.choice([None, (2, 3), (16,), ()]),
                      metrics={"CosineSimilarity": value(), "MaxAbsoluteError": value()},
                      std=rng.choice([None, (value() or 0.0, 0.25, 1e-4, -3.0)]),
                      reasons=rng.choice([[], ["no data"], ["a", "=b"]])) for i in range(count)]


def _reference_csv(rows: list[MetricRow], metrics: list[str], float_format: FloatFormat) -> str:
    """The vcompare-layout CSV as the per-cell functions and csv.writer write it, row by row."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header(metrics))
    for r in rows:
        writer.writerow([str(r.index), text_cell(r.op_type), text_cell(r.left_op), text_cell(r.left_dtype),
                         text_cell(r.right_op), text_cell(r.right_dtype), text_cell(r.tensor_id),
                         shape_cell(r.shape) if r.tensor_id else "NaN",
                         *[std_cell(r.std, float_format) if m == "StandardDeviation" else
                           metric_cell(r.metrics.get(m), float_format) for m in metrics],
                         neutralise("; ".join(r.reasons)) if r.reasons else ""])
    return buf.getvalue()


@pytest.mark.parametrize("float_format", [DEFAULT_FLOAT_FORMAT, REPR_FLOAT_FORMAT, FloatFormat(digits=9)])
def test_network_csv_is_the_per_cell_table_across_batches(float_format: FloatFormat,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _metric_rows(41, seed=7)
    metrics = ["CosineSimilarity", "StandardDeviation", "MaxAbsoluteError"]
    whole = network.render_csv(rows, metrics, float_format=float_format)
    assert whole == _reference_csv(rows, metrics, float_format)
    txt = network.render_txt(rows, metrics, float_format=float_format)
    monkeypatch.setattr(network, "BATCH_ROWS", 4)
    monkeypatch.setattr(network, "batches", lambda count: range(0, count, 4))
    assert network.render_csv(rows, metrics, float_format=float_format) == whole
    assert network.render_txt(rows, metrics, float_format=float_format) == txt
    assert len(txt.splitlines()) == len(rows) + 1


@given(st.text() | st.text(alphabet=st.characters(max_codepoint=0x7F)) | st.text(alphabet=st.characters(
    min_codepoint=0x1F, max_codepoint=0x81)))
def test_printable_is_isprintable(text: str) -> None:
    """The ASCII fast path of :func:`printable` says what ``str.isprintable`` says (control
    characters, DEL, text beyond ASCII, the empty text)."""
    assert printable(text) is text.isprintable()
