"""``-o result.xlsx`` (compare/reports/xlsx.py): the workbook holds the CSV table's columns and
cells (numbers as the same float64s), highlights rows by the gate / msprobe's grade / the status,
has a Summary sheet, splits past a sheet's row limit without losing a row, and is refused before
anything is compared when openpyxl is missing."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, shared_path
from typer.testing import CliRunner

from compare.cli import app
from compare.errors import OptionError
from compare.records import CheckFailure, Grade, MetricRow, Outcome, PairStatus, RowGrade, Verdict
from compare.reports import xlsx
from compare.reports.cells import FloatFormat
from compare.reports.network import TableFormat, render_csv, resolve_output, write_report
from compare.reports.xlsx import (FILLS, MarkRule, RowMark, is_number, row_marks, sheet_parts, text_value,
                                  write_workbook)
from compare.runs.outputs import WRITERS, OutputKind, OutputPlan, write_xlsx_table
from compare.testing.synthetic_msprobe import write_msprobe_dump

openpyxl = pytest.importorskip("openpyxl", reason="the xlsx extra (openpyxl) is not installed")

DEMO = FIXTURES / "demo"
METRICS = ["CosineSimilarity", "MaxAbsoluteError"]
RED, YELLOW, GREY = (f"00{FILLS[m]}" for m in (RowMark.FAIL, RowMark.WARNING, RowMark.NOT_COMPARED))


def _run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _demo(*args: object):
    return _run("-l", DEMO / "npu", "-r", DEMO / "golden", "-f", DEMO / "model.json", *args)


def _rows_sheets(path: Path) -> list[str]:
    return [name for name in openpyxl.load_workbook(path, read_only=True).sheetnames if name.startswith("Rows")]


def _table(path: Path) -> list[list[object]]:
    """Every row of every Rows sheet (the header once), values as openpyxl reads them."""
    book = openpyxl.load_workbook(path, read_only=True)
    table: list[list[object]] = []
    for number, name in enumerate(n for n in book.sheetnames if n.startswith("Rows")):
        lines = [list(line) for line in book[name].iter_rows(values_only=True)]
        table += lines if number == 0 else lines[1:]
    return table


def _fills(path: Path, sheet: str = "Rows") -> list[str]:
    """The fill colour of each data row (every cell of a row has it: checked)."""
    colours = []
    for line in openpyxl.load_workbook(path)[sheet].iter_rows(min_row=2):
        row = {cell.fill.fgColor.rgb for cell in line}
        assert len(row) == 1, row
        colours.append(row.pop())
    return colours


def _summary(path: Path) -> list[tuple[object, ...]]:
    return [tuple(line) for line in openpyxl.load_workbook(path, read_only=True)["Summary"].iter_rows(values_only=True)]


def _assert_same_as_csv(table: list[list[object]], text: str) -> None:
    """Each workbook cell is its CSV cell: the same text, or a number equal to the CSV text's float64
    (an empty cell for an empty one)."""
    lines = list(csv.reader(io.StringIO(text, newline="")))
    assert len(table) == len(lines)
    assert [str(v) for v in table[0]] == lines[0]
    for values, cells in zip(table, lines):
        values = values + [None] * (len(cells) - len(values))
        assert len(values) == len(cells)
        for value, cell in zip(values, cells):
            if value is None:
                assert cell == ""
            elif isinstance(value, str):
                assert value == text_value(cell)  # the cell's text (an xlsx-illegal character escaped)
            else:
                assert is_number(cell) and value == float(cell), (value, cell)


def _rows() -> list[MetricRow]:
    return [
        MetricRow(0, "Conv2D", "conv", "conv", "conv:output:0", "float16", "float32", (1, 2),
                  {"CosineSimilarity": 0.1234567890123456789, "MaxAbsoluteError": 2.7766172885894775}),
        MetricRow(1, "Add", "=add", "=add", "=add:output:0", "float16", "float32", (3,),
                  {"CosineSimilarity": float("nan"), "MaxAbsoluteError": float("inf")}, reasons=["nan in data"]),
        MetricRow(2, "Relu", "relu", "*", "relu:output:0", "float16", None, (3,), {"CosineSimilarity": None},
                  reasons=["no counterpart"], status=PairStatus.MISSING_RIGHT),
        MetricRow(3, "Mul", "mul\x01x", "mul", "mul:output:0", "int64", "int64", (2,),
                  {"CosineSimilarity": -0.5, "MaxAbsoluteError": 1e-07}),
    ]


def test_workbook_holds_the_csv_cells_numbers_as_numbers(tmp_path: Path) -> None:
    rows = _rows()
    shortest = FloatFormat(shortest=True)
    path = write_report(rows, tmp_path / "r.xlsx", METRICS, table_format=TableFormat.XLSX, float_format=shortest)
    table = _table(path)
    text = render_csv(rows, METRICS, float_format=shortest)
    assert table[0] == ["Index", "OpType", "LeftOp", "LeftDataType", "RightOp", "RightDataType", "TensorIndex",
                        "Shape", *METRICS, "FailReason"]
    assert table[1][8:10] == [0.12345678901234568, 2.7766172885894775]  # full precision, as numbers
    assert table[2][2] == "'=add" and table[2][8:10] == ["nan", "inf"]  # the CSV's guard kept; text, no formula
    assert table[3][8] == "NaN" and table[3][4] == "*"
    assert table[4][2] == "mul\\x01x"  # a character xlsx cannot hold, shown as its escape
    _assert_same_as_csv(table, text)
    assert _fills(path) == ["00000000", "00000000", GREY, "00000000"]
    sheet = openpyxl.load_workbook(path)["Rows"]
    assert sheet.freeze_panes == "A2" and sheet.auto_filter.ref == "A1:K5"
    assert sheet["A1"].font.bold and sheet["B2"].data_type == "s" and sheet["I2"].data_type == "n"


@pytest.mark.parametrize(("text", "number"), [
    ("3", True), ("-0.5", True), ("0.000000", True), ("1e-07", True), ("2.7766172885894775", True),
    ("123456789012345", True), ("1234567890123456", False), ("007", False), ("+1", False), ("nan", False),
    ("inf", False), ("-inf", False), ("NaN", False), ("1.", False), (" 1", False), ("[1,2]", False), ("", False)])
def test_which_cells_are_numbers(text: str, number: bool) -> None:
    assert is_number(text) is number


def test_long_text_is_cut_with_a_marker_never_silently() -> None:
    long = "x" * (xlsx.EXCEL_MAX_TEXT + 100)
    cut = text_value(long)
    assert len(cut) == xlsx.EXCEL_MAX_TEXT
    assert cut.endswith("more characters: the whole text is in --json]")
    kept = xlsx.EXCEL_MAX_TEXT - len(cut[cut.rindex(" [... "):])
    assert f"[... {len(long) - kept} more characters" in cut
    assert text_value("tab\tok") == "tab\tok" and text_value("a\x1fb") == "a\\x1fb"


def _failure(row: int, *, incomplete: bool = False) -> CheckFailure:
    return CheckFailure(row, None, None, "op", "op", "CosineSimilarity", 0.5, None, "bad", incomplete=incomplete)


def test_marks_follow_the_gate_then_the_grade_then_the_status() -> None:
    rows = _rows()
    rows[0].grade = RowGrade(Grade.ERROR)
    rows[3].grade = RowGrade(Grade.WARNING)
    gate = Verdict(Outcome.FAILED, failures=[_failure(1), _failure(2, incomplete=True), _failure(-1)],
                   waived=[_failure(3)])
    assert row_marks(rows, gate) == [RowMark.PLAIN, RowMark.FAIL, RowMark.FAIL, RowMark.WARNING]
    assert xlsx.mark_rule(rows, gate) is MarkRule.GATE
    assert row_marks(rows, None) == [RowMark.FAIL, RowMark.PLAIN, RowMark.NOT_COMPARED, RowMark.WARNING]
    assert xlsx.mark_rule(rows, None) is MarkRule.GRADE
    plain = _rows()
    assert row_marks(plain, None) == [RowMark.PLAIN, RowMark.PLAIN, RowMark.NOT_COMPARED, RowMark.PLAIN]
    assert xlsx.mark_rule(plain, None) is MarkRule.STATUS


def test_graded_rows_are_filled_and_the_summary_says_the_rule(tmp_path: Path) -> None:
    rows = _rows()
    rows[0].grade = RowGrade(Grade.ERROR, ("cosine below 0.9",))
    rows[1].grade = RowGrade(Grade.WARNING)
    rows[3].grade = RowGrade(Grade.PASS)
    path = write_report(rows, tmp_path / "g.xlsx", METRICS, table_format="xlsx")
    assert _fills(path) == [RED, YELLOW, GREY, "00000000"]
    table = _table(path)
    assert table[0][-3:] == ["Result", "Err_message", "FailReason"]
    assert table[1][-3:-1] == ["error", "cosine below 0.9"]
    _assert_same_as_csv(table, render_csv(rows, METRICS))
    summary = _summary(path)
    assert ("highlighting", "rule", MarkRule.GRADE.value) in summary
    assert ("rows", "total", 4) in summary and ("rows", "missing on right", 1) in summary


def test_split_past_the_row_limit_keeps_every_row(tmp_path: Path) -> None:
    rows = [MetricRow(i, "Add", f"op{i}", f"op{i}", f"op{i}:output:0", "float32", "float32", (1,),
                      {"CosineSimilarity": 1.0 - i / 100}, status=PairStatus.COMPARED if i % 3 else
                      PairStatus.NOT_COMPARABLE) for i in range(7)]
    text = render_csv(rows, ["CosineSimilarity"])
    path = write_workbook(tmp_path / "s.xlsx", text, row_marks(rows, None), max_rows=4)
    assert _rows_sheets(path) == ["Rows", "Rows (2)", "Rows (3)"]
    book = openpyxl.load_workbook(path, read_only=True)
    assert [len(list(book[n].iter_rows())) for n in _rows_sheets(path)] == [4, 4, 2]  # the header on each
    assert next(book["Rows (3)"].iter_rows(values_only=True))[0] == "Index"
    _assert_same_as_csv(_table(path), text)
    assert _fills(path, "Rows (2)") == [GREY, "00000000", "00000000"]  # rows 4-6 keep their own marks
    summary = _summary(path)
    assert ("sheets", "Rows (2)", "rows 4 to 6") in summary and ("sheets", "Rows (3)", "rows 7 to 7") in summary
    assert any(item[1] == "note" and "no row is left out" in str(item[2]) for item in summary)
    assert sheet_parts(0, 4) == [xlsx.SheetPart("Rows", 1, 0)]
    with pytest.raises(ValueError, match="highlight mark"):
        write_workbook(tmp_path / "bad.xlsx", text, row_marks(rows[:-1], None))
    assert not (tmp_path / "bad.xlsx").exists()


def test_split_through_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xlsx, "EXCEL_MAX_ROWS", 6)
    result = _demo("-o", tmp_path / "r.xlsx")
    assert result.exit_code == 0, result.output
    assert _rows_sheets(tmp_path / "r.xlsx") == ["Rows", "Rows (2)", "Rows (3)"]  # 13 rows, 5 a sheet
    assert _demo("-o", tmp_path / "r.csv").exit_code == 0
    _assert_same_as_csv(_table(tmp_path / "r.xlsx"), (tmp_path / "r.csv").read_text())


def test_missing_openpyxl_is_refused_before_comparing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openpyxl", None)
    with pytest.raises(OptionError, match=r"pip install 'vcompare\[xlsx\]'"):
        resolve_output(tmp_path / "r.xlsx")
    from compare.cli import modes

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("compared although the workbook could not be written")

    monkeypatch.setattr(modes, "compare_request", never)
    result = _demo("-o", tmp_path / "r.xlsx")
    assert result.exit_code == 2, result.output
    assert "-o .xlsx needs openpyxl" in result.output and "pip install 'vcompare[xlsx]'" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "r.xlsx").exists()


def test_writer_table_line_and_plan(tmp_path: Path) -> None:
    assert WRITERS[OutputKind.XLSX] is write_xlsx_table and OutputKind.XLSX.is_table
    plan = OutputPlan.plan(str(tmp_path / "R.XLSX"))
    assert plan.table is not None and plan.table.kind is OutputKind.XLSX


def test_demo_gated_run_end_to_end(tmp_path: Path) -> None:
    """A failing gate: its failing rows red, the rows not compared grey, the Summary says the
    verdict and exit code, the inputs and the first divergence; the cells are the CSV's."""
    gate = "CosineSimilarity>=0.9999"
    result = _demo("-o", tmp_path / "r.xlsx", "--gate", gate, "--verdicts")
    assert result.exit_code == 1, result.output
    assert f"result: {tmp_path / 'r.xlsx'}" in result.output
    assert _demo("-o", tmp_path / "r.csv", "--gate", gate, "--verdicts").exit_code == 1
    text = (tmp_path / "r.csv").read_text()
    table = _table(tmp_path / "r.xlsx")
    _assert_same_as_csv(table, text)
    assert table[0][-1] == "Verdict"
    lines = list(csv.DictReader(io.StringIO(text)))
    cosine = [float(line["CosineSimilarity"]) if is_number(line["CosineSimilarity"]) else None for line in lines]
    fills = _fills(tmp_path / "r.xlsx")
    assert fills == [RED if c is not None and c < 0.9999 else GREY if c is None else "00000000" for c in cosine]
    assert RED in fills and GREY in fills
    summary = _summary(tmp_path / "r.xlsx")
    assert ("gate", "verdict", "failed") in summary and ("gate", "exit code", 1) in summary
    assert ("inputs", "left", str(DEMO / "npu")) in summary
    assert ("highlighting", "rule", MarkRule.GATE.value) in summary
    assert any(item[0] == "first divergence" and "fc1" in str(item[2]) for item in summary)


def test_two_files_mode_writes_a_workbook(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.arange(6, dtype=np.float32))
    np.save(tmp_path / "b.npy", np.arange(6, dtype=np.float32) + 1e-3)
    result = _run("-l", tmp_path / "a.npy", "-r", tmp_path / "b.npy", "-o", tmp_path / "r.xlsx")
    assert result.exit_code == 0, result.output
    table = _table(tmp_path / "r.xlsx")
    assert table[0][0] == "Index" and len(table) == 2 and isinstance(table[1][-2], float | int)


@pytest.mark.parametrize("task", ["tensor", "statistics"])
def test_msprobe_tree_end_to_end(tmp_path: Path, task: str) -> None:
    """An msprobe tree (tensor data, or statistics only): the workbook is the CSV table (the
    statistics table for statistics), rows filled by msprobe's Result."""
    left = write_msprobe_dump(tmp_path / "left", task=task)
    right = write_msprobe_dump(tmp_path / "right", task=task, noise=5e-2, seed=3)
    args = ["-l", left.root, "-r", right.root]
    result = _run(*args, "-o", tmp_path / "r.xlsx")
    assert result.exit_code == 0, result.output
    assert _run(*args, "-o", tmp_path / "r.csv").exit_code == 0
    text = (tmp_path / "r.csv").read_text()
    table = _table(tmp_path / "r.xlsx")
    _assert_same_as_csv(table, text)
    if task == "statistics":
        assert "LeftMax" in table[0] and "LeftSource" in table[0]
    lines = list(csv.DictReader(io.StringIO(text)))
    expected = {"error": RED, "warning": YELLOW, "pass": "00000000"}
    assert _fills(tmp_path / "r.xlsx") == [expected.get(line["Result"], GREY) for line in lines]
    assert ("highlighting", "rule", MarkRule.GRADE.value) in _summary(tmp_path / "r.xlsx")


@pytest.mark.shared
@pytest.mark.parametrize("case", ["t_L1", "s_L1"])
def test_real_msprobe_trees_every_row(tmp_path: Path, case: str) -> None:
    """msprobe's own trees (../shared/msprobe-real): every row of the CSV table is in the workbook,
    the cells the same; the one row msprobe reads as a warning on t_L1 is yellow."""
    trees = shared_path("msprobe-real", "trees")
    args = ["-l", trees / f"{case}_perturb", "-r", trees / f"{case}_base", "--quiet"]
    assert _run(*args, "-o", tmp_path / "r.xlsx").exit_code == 0
    assert _run(*args, "-o", tmp_path / "r.csv").exit_code == 0
    _assert_same_as_csv(_table(tmp_path / "r.xlsx"), (tmp_path / "r.csv").read_text())
    if case == "t_L1":
        assert _fills(tmp_path / "r.xlsx").count(YELLOW) == 1
