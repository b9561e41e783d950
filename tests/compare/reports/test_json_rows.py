"""The JSON result streamed (issue 31): each row's line encoded straight from the record is byte for
byte the compact JSON of the row's dict as docs/result-json.md describes it (:func:`_reference`, an
independent dict-built reference kept here), on every fixture family and on generated odd values;
``to_dict()`` holds those lines read back (one encoder: its dumps is ``to_json()``)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from compare import compare_network, regate
from compare.records import (ArgumentDiff, Grade, MetricRow, MsprobeCells, PairStatus, RowGrade, RowKind, StatDiff,
                             ValueCounts)
from compare.reports import json_rows
from compare.reports.float_text import repr_texts
from compare.reports.json_rows import MetricNames, RowEncoder, full_document, render_result, row_documents, write_result
from compare.reports.result_json import ROW_ENCODER, STD_KEYS, dumps, encode_float

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


def _stat_value(value: float | str | None) -> Any:
    return value if isinstance(value, str) else encode_float(value)


def _reference(position: int, row: MetricRow, names: MetricNames) -> dict[str, Any]:
    """A row's dict, field by field as docs/result-json.md lists them: the reference the encoder's
    text is held to (encoded by the json module's encoder)."""
    values = row.metrics
    metric_names = list(names.names) + (names.others(values) if not names.known.issuperset(values) else [])
    document: dict[str, Any] = {
        "row": position, "index": row.index, "op_type": row.op_type, "left_op": row.left_op, "right_op": row.right_op,
        "tensor_id": row.tensor_id, "rank": row.rank, "graph": row.graph, "iteration": row.iteration,
        "left_dtype": row.left_dtype, "right_dtype": row.right_dtype,
        "shape": None if row.shape is None else [int(d) for d in row.shape], "status": row.status.value,
        "metrics": {name: encode_float(values.get(name)) for name in metric_names},
        "std": None if row.std is None else dict(zip(STD_KEYS, (encode_float(v) for v in row.std))),
        "reasons": list(row.reasons), "left_address": row.left_address, "right_address": row.right_address,
        "op_sequence": row.op_sequence, "expected_gap": row.expected_gap,
        "left_counts": None if row.left_counts is None else dataclasses.asdict(row.left_counts),
        "right_counts": None if row.right_counts is None else dataclasses.asdict(row.right_counts),
        "kind": row.kind.value, "undefined": sorted(row.undefined),
        "statistics": None if row.statistics is None else _statistics(row.statistics),
        "grade": None if row.grade is None else {"result": row.grade.grade.value, "messages": list(row.grade.messages)},
    }
    if row.msprobe is not None:
        cells = row.msprobe
        document["msprobe"] = {
            "left_name": cells.left_name, "right_name": cells.right_name, "left_data": cells.left_data,
            "right_data": cells.right_data, "left_requires_grad": cells.left_grad,
            "right_requires_grad": cells.right_grad, "requires_grad_consistent": cells.grad_consistent,
            "source": cells.source, "stack": list(cells.stack)}
    if row.argument is not None:
        argument = row.argument
        document["argument"] = {"left_type": argument.left_type, "right_type": argument.right_type,
                                "left": argument.left, "right": argument.right, "same": argument.same,
                                "diff": encode_float(argument.diff)}
    return document


def _statistics(statistics: Mapping[str, StatDiff]) -> dict[str, dict[str, Any]]:
    return {name: {"left": _stat_value(v.left), "right": _stat_value(v.right), "diff": _stat_value(v.diff),
                   "rel": encode_float(v.rel)} for name, v in statistics.items()}


def _dict_built(head: dict, rows: list[MetricRow], metrics: list[str]) -> str:
    names = MetricNames(metrics)
    return dumps({**head, "rows": [_reference(i, row, names) for i, row in enumerate(rows)]})


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
    whole = {**result.to_dict(), "created": head["created"]}  # the rows as dicts: the lines read back, one encoder
    assert whole["rows"] == json.loads(text)["rows"] == row_documents(result.rows, result.metrics)
    assert dumps(whole) == text and dumps(full_document(head, result.rows, result.metrics)) == text
    assert json.loads(result.to_json())["rows"] == whole["rows"]


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
                    st.sampled_from([0.0, -0.0, 5e-324, 1.7976931348623157e308, 1e16, 1e-7, 0.1 + 0.2, 1e-5,
                                                   9.999999999999999e-06, 5e-5, 1e-4, 2.5e-9, -1e300]))
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=()) | st.sampled_from(["\udcff", "\udc80", "\"", "\\",
                                                                                       "\n", "\x00", "\u2028", "%", "s"]),
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
        assert text == ROW_ENCODER.encode(_reference(position, row, names))
        assert text.isascii() and json.loads(text)["row"] == position
    assert row_documents(rows, metrics) == [json.loads(line(position, row)) for position, row in enumerate(rows)]


@settings(max_examples=200, deadline=None)
@given(st.lists(_rows(), min_size=1, max_size=24), st.lists(st.sampled_from(_METRICS) | _TEXT, max_size=5),
       st.integers(0, 10**6))
def test_a_batch_of_lines_is_each_row_encoded(rows: list[MetricRow], metrics: list[str], start: int) -> None:
    """A batch of mixed rows (NaN, infinities, None, text, whole numbers, -0.0, 1e-5, 1e16 among
    finite floats; rows with and without std, statistics, metrics of their own) formatted at once:
    each line is its row's reference and its line alone."""
    names = MetricNames(metrics)
    encoder = RowEncoder(metrics)
    lines = encoder.lines(start, rows)
    assert lines == [ROW_ENCODER.encode(_reference(start + i, row, names)) for i, row in enumerate(rows)]
    assert lines == [encoder.line(start + i, row) for i, row in enumerate(rows)]


def test_a_batch_formats_its_floats_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """The floats of all the rows of a write go to one repr_texts call (not one a row)."""
    result = compare_network(MSPROBE / "s_L1_perturb", MSPROBE / "s_L1_base")
    calls: list[int] = []

    def counted(values: list[float]) -> list[str]:
        calls.append(len(values))
        return repr_texts(values)

    monkeypatch.setattr(json_rows, "repr_texts", counted)
    head = result.to_dict(with_rows=False)
    assert render_result(head, result.rows, result.metrics) == _dict_built(head, result.rows, result.metrics)
    assert len(calls) == math.ceil(len(result.rows) / json_rows.ROWS_PER_WRITE) and sum(calls) > len(result.rows)
