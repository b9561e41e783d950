"""The rows a worker process sends back as columns (RowBatch) are the rows it made, field for field."""

from __future__ import annotations

import copy
import math
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compare.engine.wire import RowBatch
from compare.records import MetricRow, PairStatus, ValueCounts

_floats = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.just(0.0), st.just(-0.0))
_counts = st.one_of(st.none(), st.builds(ValueCounts, st.integers(0, 9), st.integers(0, 9), st.integers(0, 9)))
_names = st.sampled_from([("CosineSimilarity", "MaxAbsoluteError"), ("CosineSimilarity",), ()])


@st.composite
def _row(draw, index: int) -> MetricRow:
    names = draw(_names)
    return MetricRow(
        index=index, op_type=draw(st.one_of(st.none(), st.text(max_size=4))), left_op="a", right_op="b",
        tensor_id=draw(st.one_of(st.none(), st.text(max_size=6))),
        shape=draw(st.one_of(st.none(), st.tuples(st.integers(0, 5), st.integers(0, 5)))),
        metrics={name: draw(_floats) for name in names},
        std=draw(st.one_of(st.none(), st.tuples(_floats, _floats, _floats, _floats))),
        reasons=draw(st.lists(st.text(max_size=8), max_size=3)),
        status=draw(st.sampled_from(list(PairStatus))), left_counts=draw(_counts), right_counts=draw(_counts))


def _base(row: MetricRow) -> MetricRow:
    """What the parent's base row of the same pair holds: the pair's fields, nothing compared."""
    return MetricRow(index=row.index, op_type=row.op_type, left_op=row.left_op, right_op=row.right_op,
                     tensor_id=row.tensor_id, reasons=["a remark"])


def _key(value):
    """NaN compared by being NaN (a pickled NaN is another object, and NaN != NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, (tuple, list)):
        return tuple(_key(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _key(v)) for k, v in value.items())
    return value


def _fields(row: MetricRow) -> tuple:
    return tuple(_key(getattr(row, name)) for name in row.__dataclass_fields__)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 12).flatmap(lambda n: st.tuples(*[_row(i) for i in range(n)])))
def test_a_batch_gives_back_the_workers_rows(rows):
    rows = list(rows)
    batch = pickle.loads(pickle.dumps(RowBatch.of(rows), protocol=pickle.HIGHEST_PROTOCOL))
    again = list(batch.rows([_base(row) for row in rows]))
    assert [_fields(r) for r in again] == [_fields(r) for r in rows]
    assert all(list(r.metrics) == list(o.metrics) for r, o in zip(again, rows))  # the metrics' order too


def test_one_names_tuple_a_selection():
    rows = [MetricRow(index=i, op_type=None, left_op="a", right_op="b", tensor_id=None,
                      metrics={"CosineSimilarity": 1.0, "MaxAbsoluteError": 0.0}) for i in range(3)]
    batch = RowBatch.of(rows)
    assert batch.names[0] is batch.names[1] is batch.names[2]


def test_a_batch_refuses_other_pairs():
    row = MetricRow(index=0, op_type=None, left_op="a", right_op="b", tensor_id=None)
    with pytest.raises(ValueError):
        list(RowBatch.of([row]).rows([copy.copy(row), copy.copy(row)]))
