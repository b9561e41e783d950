"""compare.reports.overflow: the summary file's exact lines for a small case, its JSON twin, and
the OverFlow column of the network report."""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from compare.records import MetricRow, PairStatus, ValueCounts
from compare.reports.network import header, render_csv, render_txt
from compare.reports.overflow import (
    NumpyValue,
    OverflowColumn,
    add_overflow_to_document,
    summary_document,
    summary_text,
    value_text,
    write_overflow_summary,
)
from compare.runs.overflow import analyse_overflow
from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.codecs.opdebug import AccType, NewEntry, encode_new, encode_old, write_opdebug_file

TS = 1700000000000000


def _case(tmp_path: Path) -> tuple[Path, Path]:
    dump, out = tmp_path / "dump", tmp_path / "out"
    dump.mkdir()
    write_dump(dump / f"Conv2D.conv1.3.1.{TS + 50}",
               inputs=[TensorSpec(np.array([[1, 2], [3, 4]], np.float16), format="NCHW")],
               outputs=[TensorSpec(np.array([65504, -1, np.inf], np.float16), format="ND"),
                        TensorSpec(np.array([np.nan, 1], np.float32), format="ND")], op_name="conv1")
    write_opdebug_file(dump / f"Opdebug.Node_OpDebug.9.1.{TS + 100}",
                       [encode_old((0, 1, 3, 0, 0x10, 0x20), status=4, kernel_code=0xAB)])
    write_opdebug_file(dump / f"Opdebug.Node_OpDebug.9.1.{TS + 200}",
                       [encode_new([NewEntry(AccType.AIV, {"task_id": 8, "stream_id": 1, "status": 2})])])
    (dump / f"Opdebug.Node_OpDebug.9.1.{TS + 300}").write_bytes(b"x")
    return dump, out


def test_summary_lines(tmp_path: Path) -> None:
    """The reference's layout: 49/50 ``=`` around ``[k]``, the recorded op name, the record's
    time stamp, base names of the copies, numbers in the tensor's own type; no op line and no
    reason when no dump is linked; an undecodable record keeps its block with the reason."""
    dump, out = _case(tmp_path)
    text = summary_text(analyse_overflow(dump, out, count=3))
    before, after = "=" * 49, "=" * 50
    stem = f"Conv2D.conv1.3.1.{TS + 50}"
    lines = text.splitlines()
    assert lines[:10] == [
        f"{before}[1]{after}",
        "[Conv2D] conv1",
        " [AI Core][TaskId:3][StreamId:1][Status:4]",
        f" [timestamp:{TS + 100}]",
        f" {stem}.input.0.npy",
        " -[Format: NCHW] [Shape: (2, 2)] [Dtype: float16] [Max: 4.0] [Min: 1.0] [Mean: 2.5]",
        f" {stem}.output.0.npy",
        " -[Format: ND] [Shape: (3,)] [Dtype: float16] [Max: inf] [Min: -1.0] [Mean: inf]",
        f" {stem}.output.1.npy",
        " -[Format: ND] [Shape: (2,)] [Dtype: float32] [Max: nan] [Min: nan] [Mean: nan]",
    ]
    assert lines[10:13] == [f"{before}[2]{after}", " [AIV][TaskId:8][StreamId:1][Status:2]", f" [timestamp:{TS + 200}]"]
    assert lines[13:15] == [f"{before}[3]{after}", f" [timestamp:{TS + 300}]"]
    assert lines[15].startswith(" [not decoded: ") and "(byte 0)" in lines[15]
    assert len(lines) == 16 and text.endswith("]\n")


def test_status_lines_of_every_flagged_block(tmp_path: Path) -> None:
    """Old layout: one line per block with a non-zero status, DHA, L2, AI Core order, the dump of
    the last such block linked; none when no block is flagged. New layout: every flagged entry,
    or the first entry when none is."""
    dump = tmp_path / "dump"
    dump.mkdir()
    write_dump(dump / f"Add.add1.8.2.{TS + 10}", outputs=[np.array([1, 2], np.int32)], op_name="blk/add1")
    write_opdebug_file(dump / f"Opdebug.Node_OpDebug.1.2.{TS + 100}",
                       [encode_old((0, 2, 8, 0, 0, 0), status=4, dha=(0, 2, 7, 0, 0, 0), dha_status=1,
                                   l2=(0, 2, 6, 0, 0, 0), l2_status=2),
                        encode_old((0, 2, 8, 0, 0, 0)),
                        encode_new([NewEntry(AccType.AIV, {"task_id": 8, "stream_id": 2})])])
    lines = summary_text(analyse_overflow(dump, tmp_path / "out")).splitlines()
    bars = [k for k, line in enumerate(lines) if line.startswith("=")]
    assert lines[1:5] == ["[Add] blk/add1", " [DHA Atomic Add][TaskId:7][StreamId:2][Status:1]",
                          " [L2 Atomic Add][TaskId:6][StreamId:2][Status:2]",
                          " [AI Core][TaskId:8][StreamId:2][Status:4]"]
    assert lines[bars[1] + 1:bars[1] + 3] == ["[Add] blk/add1", f" [timestamp:{TS + 100}]"]
    assert lines[bars[2] + 1:bars[2] + 3] == ["[Add] blk/add1", " [AIV][TaskId:8][StreamId:2][Status:0]"]
    assert " -[Format: ND] [Shape: (2,)] [Dtype: int32] [Max: 2] [Min: 1] [Mean: 1.5]" in lines


def test_written_files(tmp_path: Path) -> None:
    dump, out = _case(tmp_path)
    analysis = analyse_overflow(dump, out, count=2)
    now = time.strptime("20240102030405", "%Y%m%d%H%M%S")
    txt, doc = write_overflow_summary(analysis, out, now=now)
    assert txt.name == "overflow_summary_20240102030405.txt" and doc.name == "overflow_summary_20240102030405.json"
    assert txt.read_text() == summary_text(analysis)
    data = json.loads(doc.read_text())
    assert (data["opdebug_files_found"], data["opdebug_files_analysed"]) == (3, 2)
    first, second = data["findings"]
    assert first["layout"] == "old" and first["primary"] == "AI Core"
    assert first["entries"][2]["fields"]["kernel_code"] == "0xab" and first["entries"][2]["fields"]["pc_start"] == "0x10"
    assert first["linked_dump"]["op_name"] == "conv1"
    assert first["linked_dump"]["tensors"][1]["max"] == "inf"
    assert second["linked_dump"] is None and "task_id 8" in second["link_problem"]


def test_no_record_text(tmp_path: Path) -> None:
    analysis = analyse_overflow(tmp_path, tmp_path / "out")
    assert summary_text(analysis) == f"no overflow record (Opdebug.Node_OpDebug.*) under {tmp_path}: no overflow was recorded\n"


def _row(op: str, dtype: str | None, counts: ValueCounts | None, *, rank: int | None = None) -> MetricRow:
    status = PairStatus.COMPARED if counts is not None else PairStatus.NOT_COMPARABLE
    return MetricRow(index=0, op_type="Add", left_op=op, right_op=op, tensor_id=f"{op}:output:0", left_dtype=dtype,
                     right_dtype=dtype, shape=(3,), metrics={"CosineSimilarity": 1.0}, status=status,
                     left_counts=counts, rank=rank)


@pytest.mark.parametrize("dtype, counts, cell", [
    ("float16", ValueCounts(nan=0, inf=0, saturated=1), "YES"),  # max|x| = 65504
    ("float16", ValueCounts(nan=0, inf=2, saturated=0), "YES"),  # inf
    ("float16", ValueCounts(nan=1, inf=0, saturated=0), "YES"),  # NaN (the reference says NO)
    ("float16", ValueCounts(nan=0, inf=0, saturated=0), "NO"),
    ("float32", ValueCounts(nan=0, inf=1, saturated=0), "YES"),
    ("float32", ValueCounts(nan=0, inf=0, saturated=0), "NO"),
    ("bfloat16", ValueCounts(nan=3, inf=0, saturated=0), "YES"),
    ("int32", ValueCounts(nan=0, inf=0, saturated=0), "NaN"),
    ("float16", None, "NaN"),  # not compared: no counts
])
def test_overflow_cells(dtype: str, counts: ValueCounts | None, cell: str) -> None:
    assert OverflowColumn().cell(_row("a", dtype, counts)) == cell


def test_linked_ops_are_yes() -> None:
    column = OverflowColumn(frozenset({(None, None, "relu1"), (1, None, "add1")}))
    clean = ValueCounts(0, 0, 0)
    assert column.cell(_row("relu1", "float32", clean)) == "YES"
    assert column.cell(_row("relu1", "int32", None)) == "YES"
    assert column.cell(_row("add1", "float16", clean)) == "NO"  # rank differs
    assert column.cell(_row("add1", "float16", clean, rank=1)) == "YES"


def test_column_in_csv_txt_and_json() -> None:
    rows = [_row("a", "float16", ValueCounts(0, 0, 1)), _row("b", "float32", ValueCounts(0, 0, 0)),
            _row("c", "int8", ValueCounts(0, 0, 0))]
    column = OverflowColumn()
    for layout in ("vcompare", "msaccucmp"):
        cols = header(["CosineSimilarity"], layout, overflow=True)  # type: ignore[arg-type]
        assert cols[cols.index("Shape") + 1] == "OverFlow" and cols[cols.index("OverFlow") + 1] == "CosineSimilarity"
        table = list(csv.reader(io.StringIO(render_csv(rows, ["CosineSimilarity"], layout,  # type: ignore[arg-type]
                                                       overflow=column))))
        at = table[0].index("OverFlow")
        assert [r[at] for r in table[1:]] == ["YES", "NO", "NaN"]
    assert "OverFlow" not in render_csv(rows, ["CosineSimilarity"]).splitlines()[0]
    txt = render_txt(rows, ["CosineSimilarity"], overflow=column).splitlines()
    assert txt[0].split()[8] == "OverFlow" and [line.split()[8] for line in txt[1:]] == ["YES", "NO", "NaN"]
    doc = add_overflow_to_document({"rows": [{"row": i} for i in range(3)], "schema": "x"}, column, rows)
    assert [r["overflow"] for r in doc["rows"]] == ["YES", "NO", "NaN"] and doc["schema"] == "x"


#: value_text's rule (its docstring): positional from 1e-4 up to this bound, else scientific.
POSITIONAL_BELOW = {"float16": 1e3, "float32": 1e6, "float64": 1e16}
FLOAT_BITS = {"float16": (np.uint16, 16), "float32": (np.uint32, 32), "float64": (np.uint64, 64)}


def _rule(x: np.floating) -> str:
    """The rule stated in value_text's docstring, with numpy's two digit generators."""
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    size = abs(float(x))
    if size == 0 or 1e-4 <= size < POSITIONAL_BELOW[x.dtype.name]:
        return np.format_float_positional(x, unique=True, trim="0")
    return np.format_float_scientific(x, unique=True, trim="-", exp_digits=2)


@given(name=st.sampled_from(sorted(FLOAT_BITS)), data=st.data())
def test_float_statistics_print_by_the_stated_rule(name: str, data: st.DataObject) -> None:
    """Any float16 / float32 / float64 value (every bit pattern): the stated rule, the shortest
    digits that read back to the same value in its own type."""
    unsigned, bits = FLOAT_BITS[name]
    x = np.array([data.draw(st.integers(0, 2**bits - 1), label="bits")], unsigned).view(name)[0]
    text = value_text(NumpyValue(x.item(), name))
    assert text == _rule(x)
    if np.isfinite(x):
        back = np.dtype(name).type(text)
        assert back == x and np.signbit(back) == np.signbit(x)


@given(value=st.integers(-(2**63), 2**63 - 1))
def test_integer_statistics_print_in_decimal(value: int) -> None:
    assert value_text(NumpyValue(value, "int64")) == str(value)


@pytest.mark.parametrize("value, type_name, text", [
    (65504.0, "float16", "6.55e+04"), (-65504.0, "float16", "-6.55e+04"), (0.498046875, "float16", "0.498"),
    (-0.03125, "float16", "-0.03125"), (2048.0, "float16", "2.048e+03"), (8.0, "float16", "8.0"),
    (2.0, "float32", "2.0"), (1e6, "float32", "1e+06"), (28334.5, "float64", "28334.5"), (100000, "int32", "100000"),
    (-3, "int32", "-3"), (float("inf"), "float16", "inf"), (float("-inf"), "float32", "-inf"),
    (float("nan"), "float16", "nan"), (True, "bool", "True"),
])
def test_statistics_text_examples(value: float, type_name: str, text: str) -> None:
    """The reference cases' numbers (and a few at the rule's edges)."""
    assert value_text(NumpyValue(value, type_name)) == text


def test_statistics_not_computed_read_nan(tmp_path: Path) -> None:
    """An empty tensor has no max, min or mean (numpy raises): ``NaN`` in the text, null in the JSON."""
    dump = tmp_path / "dump"
    dump.mkdir()
    write_dump(dump / f"Add.add1.8.2.{TS + 10}", outputs=[np.zeros((0, 3), np.float16)], op_name="add1")
    write_opdebug_file(dump / f"Opdebug.Node_OpDebug.1.2.{TS + 100}", [encode_old((0, 2, 8, 0, 0, 0), status=4)])
    analysis = analyse_overflow(dump, tmp_path / "out")
    assert summary_text(analysis).splitlines()[-1] == (
        " -[Format: ND] [Shape: (0, 3)] [Dtype: float16] [Max: NaN] [Min: NaN] [Mean: NaN]")
    (tensor,) = summary_document(analysis)["findings"][0]["linked_dump"]["tensors"]
    assert (tensor["max"], tensor["min"], tensor["mean"]) == (None, None, None)


def test_narrow_types_are_summarised_in_a_wide_type(tmp_path: Path) -> None:
    """ml_dtypes tensors: numpy would sum them in their own narrow type (an e8m0 mean is NaN, an
    int4 mean an int4); their floats are summarised as float32, their integers as int64."""
    import ml_dtypes

    dump = tmp_path / "dump"
    dump.mkdir()
    write_dump(dump / f"Add.add1.8.2.{TS + 10}", op_name="add1",
               inputs=[TensorSpec(np.array([1, 2, 4], np.float32).astype(ml_dtypes.float8_e8m0fnu)),
                       TensorSpec(np.array([1, -3, 7], np.int8).astype(ml_dtypes.int4))],
               outputs=[TensorSpec(np.array([1, 2.5, 4], np.float32).astype(ml_dtypes.bfloat16))])
    write_opdebug_file(dump / f"Opdebug.Node_OpDebug.1.2.{TS + 100}", [encode_old((0, 2, 8, 0, 0, 0), status=4)])
    stats = [line.split("[Max: ")[1] for line in summary_text(analyse_overflow(dump, tmp_path / "out")).splitlines()
             if line.startswith(" -[")]
    assert stats == ["4.0] [Min: 1.0] [Mean: 2.3333333]", "7] [Min: -3] [Mean: 1.6666666666666667]",
                     "4.0] [Min: 1.0] [Mean: 2.5]"]
