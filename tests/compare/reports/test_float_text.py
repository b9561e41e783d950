"""compare.reports.float_text.repr_texts is ``repr`` a column at a time: the same text for every
float64 (hypothesis over all bit patterns, over the positional range orjson formats and over its
exponent forms), numpy floats
included, short columns and the checked sample too; repr_rows is each row's ``repr`` texts (or a
hole's fill, whatever text it holds) joined by ``,``, with and without orjson."""

from __future__ import annotations

import math
import struct

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compare.reports import float_text
from compare.reports.float_text import (
    HIGH,
    LOW,
    MIN_BATCH,
    PAD,
    TINY,
    repr_rows,
    repr_texts,
)

ANY = st.integers(0, 2 ** 64 - 1).map(lambda bits: struct.unpack("<d", struct.pack("<Q", bits))[0])
MID = st.floats(min_value=LOW, max_value=HIGH, exclude_max=True).flatmap(lambda v: st.sampled_from([v, -v]))
EDGES = st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf, 5e-324, LOW, math.nextafter(LOW, 0.0), HIGH,
                         math.nextafter(HIGH, 0.0), 1e15, 2.0 ** 53, 0.1, 1 / 3, 1.7976931348623157e308, TINY,
                         math.nextafter(TINY, 0.0), -TINY, PAD, -PAD, math.nextafter(PAD, 0.0), 1e-7, 1.5e-10, 1e-100, 1e22, 1e100, -1e300])
#: The exponent forms orjson writes (below TINY, from HIGH on): every exponent length, both signs.
EXPONENT = st.floats(min_value=5e-324, max_value=TINY, exclude_max=True) | st.floats(min_value=HIGH)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(ANY, MID, MID, EXPONENT.flatmap(lambda v: st.sampled_from([v, -v])), EDGES), min_size=0,
                max_size=3 * MIN_BATCH))
def test_the_texts_are_repr(values: list[float]) -> None:
    assert repr_texts(values) == [repr(v) for v in values]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(ANY, MID), min_size=MIN_BATCH, max_size=64))
def test_numpy_floats_are_written_as_floats(values: list[float]) -> None:
    column = list(np.array(values, dtype=np.float64))
    assert repr_texts(column) == [repr(float(v)) for v in values]


def test_the_batch_path_is_taken_and_checked_once() -> None:
    assert float_text._dumps() is not None  # orjson is a dependency, and it agrees with repr on the sample
    assert float_text._checked == [True]
    values = [i / 7 for i in range(1, 1000)] + [1e-7, 1e300, math.nan, -math.inf, -0.0, 5e-5, 2e-6, 1e-320, 1e16]
    assert repr_texts(values) == [repr(v) for v in values]


def test_a_formatter_that_disagrees_is_not_used(monkeypatch) -> None:
    monkeypatch.setattr(float_text, "_checked", [False])
    assert float_text._dumps() is None
    values = [i / 3 for i in range(100)]
    assert repr_texts(values) == [repr(v) for v in values]


#: Text a hole may hold (anything but ``[``): ``%`` signs, commas, ``]``, ``null``.
FILLS = st.lists(st.sampled_from(["%", "s", "%s", ",", "]", "],", "null", "NaN", "0", '"', "\n", "a", "-"]),
                 max_size=5).map("".join)


@st.composite
def _table(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows, width = draw(st.integers(0, 9)), draw(st.integers(1, 6))
    cells = rows * width
    values = np.array(draw(st.lists(st.one_of(ANY, MID, EXPONENT.flatmap(lambda v: st.sampled_from([v, -v])), EDGES),
                                    min_size=cells, max_size=cells)), dtype=np.float64).reshape(rows, width)
    holes = np.array(draw(st.lists(st.booleans(), min_size=cells, max_size=cells)), dtype=bool).reshape(rows, width)
    fills = np.empty((rows, width), dtype=object)
    for row, at in zip(*np.nonzero(holes)):
        fills[row, at] = draw(FILLS)
    return values, holes, fills


def _rows_by_repr(values: np.ndarray, holes: np.ndarray, fills: np.ndarray) -> list[str]:
    return [",".join(fills[row, at] if holes[row, at] else repr(float(values[row, at])) for at in range(values.shape[1]))
            for row in range(values.shape[0])]


@settings(max_examples=300, deadline=None)
@given(_table())
def test_the_rows_are_repr_of_each_cell_or_its_fill(table: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    values, holes, fills = table
    assert repr_rows(values, holes, fills) == _rows_by_repr(values, holes, fills)


@settings(max_examples=50, deadline=None)
@given(_table())
def test_the_rows_without_orjson_are_the_same(table: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    values, holes, fills = table
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(float_text, "_checked", [False])
        assert repr_rows(values, holes, fills) == _rows_by_repr(values, holes, fills)


def test_a_table_is_written_by_a_few_calls_not_one_a_cell(monkeypatch) -> None:
    """orjson writes the table once, and once each the values of the two ranges it lays out
    otherwise; ``repr`` only the NaN and the infinities."""
    float_text._dumps()
    calls = []

    def counted(values: np.ndarray) -> bytes:
        calls.append(values.size)
        return orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY)

    monkeypatch.setattr(float_text, "_orjson_dumps", counted)
    rnd = np.random.default_rng(5)
    values = rnd.standard_normal((2000, 16)) * 10.0 ** rnd.integers(-12, 12, size=(2000, 16))
    values[0, 0], values[1, 1] = math.nan, -math.inf
    holes = rnd.random((2000, 16)) < 0.2
    fills = np.where(holes, "0", None)
    assert repr_rows(values, holes, fills) == _rows_by_repr(values, holes, fills)
    assert len(calls) == 3 and calls[0] + calls[1] < values.size // 2 and calls[2] == values.size
