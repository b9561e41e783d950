"""The statistics table (issue 31, rows as columns): the records it builds on demand are the
records the definitions give (``statistics_metrics`` of the row's statistics), its metric columns
are the records' metrics, and its writers (``arranged``, ``concat``, ``set_place``,
``set_grades``, ``of_rows``) keep every row; :class:`RowColumns` reads the same fields from a
table's lists as from records."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from compare.records import Grade, MetricRow, Pair, PairStatus, RowGrade, RowKind, TensorKind, TensorRef
from compare.stats import statistics_metrics
from compare.stats_table import MetricRows, RowColumns, StatsResult, StatsTable, compare_stats

FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                   st.sampled_from([0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 5e-324]))
VALUES = st.one_of(FLOATS, FLOATS, FLOATS, st.none(), st.integers(-3, 3), st.sampled_from(["ab", "cd"]))
STATS = st.dictionaries(st.sampled_from(["max", "min", "avg", "l2norm", "md5", "checksum", "custom_stat"]), VALUES,
                        min_size=0, max_size=5)
SIDES = st.lists(st.tuples(STATS, STATS, st.sampled_from(["float32", "int64", "float16"]),
                           st.sampled_from([(4,), (2, 2), (3,)]), st.sampled_from(["both", "left", "right"])),
                 min_size=1, max_size=12)


def _ref(stats: dict, dtype: str, shape: tuple[int, ...]) -> TensorRef:
    return TensorRef(op_name="op", kind=TensorKind.OUTPUT, index=0, dtype=dtype, format="ND", shape=shape,
                     path=Path("dump.json"), stats=stats, stats_source="dump.json op output 0")


def _pairs(sides: list[tuple[dict, dict, str, tuple[int, ...], str]]) -> list[Pair]:
    return [Pair(index=i, op_type="add", left_op=f"op{i}", right_op=f"op{i}", tensor_id=f"op{i}:output:0",
                 left=_ref(left, "float32", (4,)) if present != "right" else None,
                 right=_ref(right, dtype, shape) if present != "left" else None)
            for i, (left, right, dtype, shape, present) in enumerate(sides)]


def _key(value: object) -> object:
    """A value as compared bit for bit (a float by its IEEE bytes, NaN as one)."""
    if type(value) is float:
        return ("float", struct.pack("<d", value) if not math.isnan(value) else "nan")
    return (type(value).__name__, value)


def _metrics_key(metrics: dict) -> list:
    return [(name, _key(value)) for name, value in metrics.items()]


def _stats_key(values: dict | None) -> object:
    if values is None:
        return None
    return [(name, [_key(v) for v in (d.left, d.right, d.diff, d.rel)]) for name, d in values.items()]


def _row_key(row: MetricRow) -> tuple:
    """A record as compared bit for bit (its floats by their bytes: NaN equals NaN)."""
    return (row.index, row.op_type, row.left_op, row.right_op, row.tensor_id, row.left_dtype, row.right_dtype,
            row.shape, _metrics_key(row.metrics), row.reasons, row.status, row.rank, row.iteration, row.graph,
            row.op_sequence, row.undefined, row.kind, _stats_key(row.statistics), row.msprobe, row.argument, row.grade,
            row.expected_gap, row.std, row.left_counts, row.right_counts)


def _srow_key(row: object) -> tuple:
    return (row.index, row.op_type, row.left_op, row.right_op, row.tensor_id, row.left_dtype,  # type: ignore[attr-defined]
            row.right_dtype, row.shape, _stats_key(row.values), row.left_source, row.right_source,  # type: ignore[attr-defined]
            row.reasons, row.status, row.rank, row.iteration, row.graph, row.grade, row.msprobe,  # type: ignore[attr-defined]
            row.argument)  # type: ignore[attr-defined]


@settings(max_examples=150, deadline=None)
@given(SIDES)
def test_metric_records_follow_the_definitions(sides: list) -> None:
    result = compare_stats(_pairs(sides))
    for srow, mrow in zip(result.rows, result.metric_rows()):
        metrics, undefined = statistics_metrics(srow.values)
        assert _metrics_key(mrow.metrics) == _metrics_key(metrics)
        assert mrow.undefined == undefined and mrow.kind is RowKind.STATISTICS
        assert (mrow.index, mrow.left_op, mrow.tensor_id, mrow.status, mrow.reasons, mrow.shape) == (
            srow.index, srow.left_op, srow.tensor_id, srow.status, srow.reasons, srow.shape)
        assert _stats_key(mrow.statistics) == _stats_key(srow.values)


@settings(max_examples=150, deadline=None)
@given(SIDES)
def test_metric_columns_are_the_records_metrics(sides: list) -> None:
    result = compare_stats(_pairs(sides))
    records = list(result.metric_rows())
    for name in result.metrics:
        values, present = result.table.metric(name)
        for i, row in enumerate(records):
            value = row.metrics.get(name)
            assert bool(present[i]) == (value is not None), (name, i, value)
            if value is not None:
                assert _key(float(values[i])) == _key(value)


@settings(max_examples=80, deadline=None)
@given(SIDES)
def test_row_columns_of_a_view_are_those_of_its_records(sides: list) -> None:
    result = compare_stats(_pairs(sides))
    view = result.metric_rows()
    of_view, of_records = RowColumns(view), RowColumns(list(view))
    assert of_view.table is result.table and of_records.table is None
    for name in ("index", "op_type", "left_op", "right_op", "tensor_id", "left_dtype", "right_dtype", "shape",
                 "status", "kind", "undefined", "rank", "iteration", "graph", "op_sequence", "grade", "msprobe",
                 "argument", "expected_gap", "left_counts", "right_counts"):
        assert list(getattr(of_view, name)) == list(getattr(of_records, name)), name
    assert [list(r) for r in of_view.reasons] == [list(r) for r in of_records.reasons]
    for name in result.metrics:
        (a, pa), (b, pb) = of_view.metric(name), of_records.metric(name)
        assert pa.tolist() == pb.tolist() and [_key(x) for x in a[pa].tolist()] == [_key(x) for x in b[pb].tolist()]


def _argument_row(index: int) -> MetricRow:
    return MetricRow(index, "add", f"op{index}", f"op{index}", f"op{index}:input:1", left_dtype="int",
                     right_dtype="int", shape=(), metrics={"ArgumentDiff": 1.0}, reasons=["argument differs"],
                     kind=RowKind.ARGUMENT)


@settings(max_examples=60, deadline=None)
@given(SIDES, st.lists(st.integers(0, 11), max_size=4))
def test_arranged_concat_and_of_rows_keep_every_row(sides: list, inserted: list[int]) -> None:
    result = compare_stats(_pairs(sides))
    rows = len(result.table)
    order: list[int | MetricRow] = list(range(rows))
    for at in inserted:
        order.insert(min(at, len(order)), _argument_row(at))
    arranged = result.table.arranged(order)
    metric_rows = MetricRows(arranged)
    expected = [result.table.metric_row(item) if type(item) is int else item for item in order]
    assert list(map(_row_key, metric_rows)) == list(map(_row_key, expected))
    assert [metric_rows[i] is item for i, item in enumerate(order) if type(item) is not int] == [
        True for item in order if type(item) is not int]  # argument rows are kept as they are
    again = StatsResult.of_rows(list(StatsResult(arranged).rows), arranged.stats, list(metric_rows))
    assert list(map(_srow_key, again.rows)) == list(map(_srow_key, StatsResult(arranged).rows))
    assert list(map(_row_key, again.metric_rows())) == list(map(_row_key, expected))
    missing = [MetricRow(99, None, "gone", "*", None, metrics={"MaxDiff": None}, status=PairStatus.MISSING_RIGHT)]
    both = StatsTable.concat([arranged, missing, result.table], arranged.stats)
    assert list(map(_row_key, MetricRows(both))) == list(map(_row_key, expected + missing + list(result.metric_rows())))
    assert len(StatsResult(both).rows) == len(expected) + 1 + rows


def test_set_place_and_grades_reach_records_and_views() -> None:
    result = compare_stats(_pairs([({"max": 1.0}, {"max": 2.0}, "float32", (4,), "both")] * 3))
    table = result.table.arranged([0, _argument_row(0), 1, 2])
    table.set_place(3, None, 7)
    graded = RowGrade(Grade.WARNING, ("x",))
    table.set_grades([None, graded, None, graded])
    view = MetricRows(table)
    assert [(r.rank, r.iteration, r.grade) for r in view] == [(3, 7, None), (3, 7, graded), (3, 7, None), (3, 7, graded)]
    assert table.kept[1].rank == 3 and StatsResult(table).rows[3].grade is graded


def test_float_diffs_are_stored_as_float64_columns() -> None:
    """The common row (four floats a side) costs no object per difference: its diff and rel are
    float64 entries of the statistic's column."""
    result = compare_stats(_pairs([({"max": 1.5, "min": -2.0}, {"max": 1.0, "min": -2.0}, "float32", (4,), "both")]))
    column = result.table.columns["max"]
    assert isinstance(column.diff, np.ndarray) and column.diff.dtype == np.float64 and not column.special
    assert (column.diff[0], column.rel[0]) == (0.5, 0.5)


def test_ranks_compared_in_turn_keep_each_row_in_its_place(tmp_path: Path) -> None:
    """msprobe statistics of two ranks with argument rows, compared in turn: the statistics table
    holds each rank's rows once, in the rows' order (the merge used to take the next statistics
    row for each statistics row only, so argument rows were written twice and the last rows of
    the run were lost)."""
    from compare.api import compare_network
    from compare.reports.stats import render_stats_csv
    from compare.testing.synthetic_msprobe import write_msprobe_dump

    left = write_msprobe_dump(tmp_path / "a", task="statistics", ranks=(0, 1)).root
    right = write_msprobe_dump(tmp_path / "b", task="statistics", ranks=(0, 1), noise=1e-2, seed=1).root
    result = compare_network(left, right, rank="all")
    stats = result.network.stats
    assert stats is not None
    places = [(row.rank, row.tensor_id) for row in result.rows]
    assert any(row.kind is RowKind.ARGUMENT for row in result.rows) and len(set(places)) == len(places)
    assert [(row.rank, row.tensor_id) for row in stats.rows] == places
    lines = render_stats_csv(stats).splitlines()[1:]
    assert [line.split(",")[4] for line in lines] == [tensor_id for _, tensor_id in places]


def test_metric_columns_of_special_entries_follow_the_definitions() -> None:
    """An entry whose diff is not a float (text, None, an integer read back) keeps its rel; a
    checksum is 0.0 same / 1.0 different; the columns say what the records say."""
    from compare.records import StatDiff
    from compare.stats import StatsRow

    rows = [StatsRow(0, None, "a", "a", "a:output:0", values={"max": StatDiff(1, 2, None, 0.5),
                                                              "checksum": StatDiff("x", "y", "different")}),
            StatsRow(1, None, "b", "b", "b:output:0", values={"max": StatDiff("p", "p", "same"),
                                                              "checksum": StatDiff("x", "x", "same")})]
    result = StatsResult.of_rows(rows, ["max", "checksum"])
    records = list(result.metric_rows())
    for name in ("MaxDiff", "MaxRelDiff", "ChecksumDiff"):
        values, present = result.table.metric(name)
        assert [float(v) if p else None for v, p in zip(values, present)] == [r.metrics.get(name) for r in records]


@settings(max_examples=60, deadline=None)
@given(SIDES, st.lists(st.integers(0, 11), max_size=3))
def test_keyed_is_the_records_keys(sides: list, inserted: list[int]) -> None:
    result = compare_stats(_pairs(sides))
    order: list[int | MetricRow] = list(range(len(result.table)))
    for at in inserted:
        order.insert(min(at, len(order)), _argument_row(at))
    view = MetricRows(result.table.arranged(order))
    for name in result.metrics + ["ArgumentDiff", "CosineSimilarity"]:
        assert RowColumns(view).keyed(name).tolist() == RowColumns(list(view)).keyed(name).tolist()
        assert RowColumns(list(view)).keyed(name).tolist() == [name in row.metrics for row in view]
