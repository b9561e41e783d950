"""The JSON result streamed (issue 31): each row's line encoded straight from the record is byte for
byte the compact JSON of the row's dict, on every fixture family and on generated odd values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from compare import compare_network, regate
from compare.records import (ArgumentDiff, Grade, MetricRow, MsprobeCells, PairStatus, RowGrade, RowKind, StatDiff,
                             ValueCounts)
from compare.reports import json_rows
from compare.reports.json_rows import RowEncoder, render_result, write_result
from compare.reports.result_json import ROW_ENCODER, MetricNames, dumps, row_document

MSPROBE = FIXTURES / "msprobe_real"
MINDSPORE = FIXTURES / "mindspore"
#: One comparison per fixture family: Ascend with a fusion rule, MindSpore tensors, statistics and
#: TF-named dumps, real MindSpore trees (every rank and iteration), msprobe tensors, statistics,
#: mixed and md5 checksums (text statistics), and argument rows.
CASES = {
    "ascend": (FIXTURES / "demo" / "npu", FIXTURES / "demo" / "golden", FIXTURES / "demo" / "model.json", {}),
    "mindspore": (MINDSPORE / "sync", MINDSPORE / "async", None, {}),
    "mindspore_stats": (MINDSPORE / "stats", MINDSPORE / "stats", None, {}),
    "mindspore_tf": (MINDSPORE / "tf", MINDSPORE / "tf", None, {}),
    "mindspore_real": (FIXTURES / "mindspore_real" / "base", FIXTURES / "mindspore_real" / "perturb", None,
                       {"rank": "all", "iteration": "all"}),
    "msprobe_tensors": (MSPROBE / "t_L1_perturb", MSPROBE / "t_L1_base", None, {}),
    "msprobe_statistics": (MSPROBE / "s_L1_perturb", MSPROBE / "s_L1_base", None, {"gates": ["L2NormRelDiff<=1e-4"]}),
    "msprobe_mixed": (MSPROBE / "s_mix_perturb", MSPROBE / "s_mix_base", None, {}),
    "msprobe_md5": (MSPROBE / "s_L1_md5_perturb", MSPROBE / "s_L1_md5_base", None, {}),
}


def _dict_built(head: dict, rows: list[MetricRow], metrics: list[str]) -> str:
    names = MetricNames(metrics)
    return dumps({**head, "rows": [row_document(i, row, names) for i, row in enumerate(rows)]})


@pytest.mark.parametrize("family", sorted(CASES))
def test_streamed_document_is_the_dict_built_one(family: str, tmp_path: Path) -> None:
    left, right, rule, options = CASES[family]
    result = compare_network(left, right, rule, **options)
    assert result.rows
    head = result.to_dict(with_rows=False)
    text = render_result(head, result.rows, result.metrics)
    assert text == _dict_built(head, result.rows, result.metrics)
    assert write_result(head, tmp_path / "r.json", result.rows, result.metrics).read_text() == text
    saved = regate(tmp_path / "r.json", gates=["MaxDiff<=1e9"])  # rows read back from a saved document
    again = saved.to_dict(with_rows=False)
    assert render_result(again, saved.rows, saved.metrics) == _dict_built(again, saved.rows, saved.metrics)


def test_rows_written_in_pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """More rows than one write holds: the pieces join to the same file, each piece one write."""
    result = compare_network(MSPROBE / "s_L1_perturb", MSPROBE / "s_L1_base")
    monkeypatch.setattr(json_rows, "ROWS_PER_WRITE", 7)
    head = result.to_dict(with_rows=False)
    pieces = list(json_rows._pieces(head, result.rows, result.metrics))
    assert len(pieces) == 2 + math.ceil(len(result.rows) / 7)
    assert "".join(pieces) == _dict_built(head, result.rows, result.metrics)
    assert write_result(head, tmp_path / "r.json", result.rows, result.metrics).read_text() == "".join(pieces)


def test_no_rows_is_the_whole_document_indented(tmp_path: Path) -> None:
    head = {"schema": "vcompare-result", "counts": {"total": 0}, "rows": [], "verdict": None}
    assert render_result(head, [], ["CosineSimilarity"]) == dumps(head)
    assert write_result(head, tmp_path / "r.json", [], []).read_text() == dumps(head)


_FLOATS = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6),
                    st.sampled_from([0.0, -0.0, 5e-324, 1.7976931348623157e308, 1e16, 1e-7, 0.1 + 0.2]))
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=()) | st.sampled_from(["\udcff", "\udc80", "\"", "\\",
                                                                                       "\n", "\x00", "\u2028"]),
                max_size=12)
_STAT = st.one_of(_FLOATS, _TEXT)
_METRICS = ["CosineSimilarity", "StandardDeviation", "MaxAbsoluteError", "MaxDiff"]


@st.composite
def _rows(draw: st.DrawFn) -> MetricRow:
    names = st.sampled_from(_METRICS) | _TEXT
    optional_int = st.none() | st.integers(-2**70, 2**70)
    return MetricRow(
        draw(st.integers(0, 2**40)), draw(st.none() | _TEXT), draw(_TEXT), draw(_TEXT), draw(st.none() | _TEXT),
        draw(st.none() | _TEXT), draw(st.none() | _TEXT),
        draw(st.none() | st.lists(st.integers(0, 2**40), max_size=5).map(tuple)),
        draw(st.dictionaries(names, _FLOATS, max_size=6)),
        draw(st.none() | st.tuples(_FLOATS, _FLOATS, _FLOATS, _FLOATS)),
        draw(st.lists(_TEXT, max_size=3)), draw(optional_int), draw(optional_int),
        draw(st.sampled_from(PairStatus)), draw(optional_int), draw(optional_int), draw(optional_int),
        draw(optional_int), draw(st.none() | _TEXT),
        draw(st.none() | st.builds(ValueCounts, st.integers(0, 99), st.integers(0, 99), st.integers(0, 99))),
        draw(st.none() | st.builds(ValueCounts, st.integers(0, 99), st.integers(0, 99), st.integers(0, 99))),
        draw(st.none() | st.builds(RowGrade, st.sampled_from(Grade), st.lists(_TEXT, max_size=2).map(tuple))),
        draw(st.frozensets(names, max_size=3)), draw(st.sampled_from(RowKind)),
        draw(st.none() | st.dictionaries(_TEXT, st.builds(StatDiff, _STAT, _STAT, _STAT, _FLOATS), max_size=4)),
        draw(st.none() | st.builds(MsprobeCells, _TEXT, _TEXT, _TEXT, _TEXT, st.none() | st.booleans(),
                                   st.none() | st.booleans(), st.lists(_TEXT, max_size=3).map(tuple), _TEXT)),
        draw(st.none() | st.builds(ArgumentDiff, _TEXT, _TEXT, st.none() | _TEXT, st.none() | _TEXT, st.booleans(),
                                   _FLOATS)),
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(_rows(), min_size=1, max_size=4), st.lists(st.sampled_from(_METRICS) | _TEXT, max_size=5))
def test_row_line_is_the_encoded_row_document(rows: list[MetricRow], metrics: list[str]) -> None:
    """Odd floats (NaN, infinities, -0.0, subnormals, whole numbers), names with quotes, control
    characters, non-ASCII and surrogate escapes, metrics outside the document's: the same bytes."""
    names = MetricNames(metrics)
    line = RowEncoder(metrics).line
    for position, row in enumerate(rows):
        text = line(position, row)
        assert text == ROW_ENCODER.encode(row_document(position, row, names))
        assert text.isascii() and json.loads(text)["row"] == position
