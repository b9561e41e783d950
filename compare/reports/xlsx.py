"""The result table as an Excel workbook (``-o result.xlsx``): the rows, highlighted, and a summary.

**Sheets.** ``Rows``: the table ``-o result.csv`` would hold -- the same header and the same cell
texts, because the sheet is made from that CSV text (:func:`write_workbook` takes it as
:func:`compare.reports.network.render_csv` or :func:`compare.reports.stats.render_stats_csv`
made it), so a column any report adds is in the workbook too. A cell whose text is a number is
written as a number (:func:`is_number`) that reads back as the CSV text's float64, to the last
digit; every other cell as text (never as a formula), an empty cell empty. Then
``Summary``: the inputs, the rows per status, the gate's verdict and exit code, the first
divergence, the notes, and how the rows were highlighted and split.

**Highlighting** (:func:`row_marks`; the colours: :data:`FILLS`), one rule per run, the first
that applies:

1. a gate was given (``--gate`` / ``--policy``): the row's own gate outcome -- a failure of the
   row that decides the verdict (a value out of bounds, or a value that should have been
   computed and was not) is red (:attr:`RowMark.FAIL`), a failure a waiver covers is yellow
   (:attr:`RowMark.WARNING`), a row not compared without a failure (a structural gap, a row
   the policy does not check) is grey (:attr:`RowMark.NOT_COMPARED`), any other row plain;
2. else, in a run whose rows carry msprobe's ``Result`` (:class:`~compare.records.RowGrade`):
   ``error`` red, ``warning`` yellow, ``pass`` plain (a row without a grade: rule 3);
3. else the row's status: compared plain, anything else (not comparable, missing on a side) grey.

**Excel's limits.** A sheet holds :data:`EXCEL_MAX_ROWS` rows, the header included: a larger
table goes on in ``Rows (2)``, ``Rows (3)`` ... each with the header again, and the Summary
says which rows each sheet holds -- no row is ever left out. A cell holds :data:`EXCEL_MAX_TEXT`
characters: a longer text is cut there and ends with a marker saying how many characters were
cut (the whole text is in ``--json``). Characters an xlsx file cannot hold (control characters
other than tab) become visible ``\\xNN`` escapes.

Written with openpyxl's write-only mode (rows streamed to the file, memory flat in the rows),
atomically (:func:`compare.reports.files.atomic_write`). openpyxl is the ``xlsx`` extra:
:func:`require_openpyxl` refuses ``-o .xlsx`` before anything is compared when it is missing.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import Any, NamedTuple

from ..diverge.records import Localisation
from ..errors import OptionError
from ..records import Grade, MetricRow, PairStatus, Verdict
from .divergence import divergence_lines
from .files import atomic_write, tool_version

INSTALL_HINT = "pip install 'vcompare[xlsx]'"
#: Rows of one Excel sheet, its header row included.
EXCEL_MAX_ROWS = 1_048_576
#: Characters of one Excel cell.
EXCEL_MAX_TEXT = 32_767
ROWS_SHEET = "Rows"
SUMMARY_SHEET = "Summary"
#: Integers with more digits than this are kept as text: Excel shows 15 significant digits.
_MAX_INT_DIGITS = 15
#: A decimal number as the reports write one (no leading zeros, no sign but ``-``, no spaces).
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
#: Characters XML 1.0 (so xlsx) cannot hold: the C0 controls but tab, LF and CR.
_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
#: The end of a text cut at :data:`EXCEL_MAX_TEXT` characters (``{}``: the characters cut).
_CUT_MARKER = " [... {} more characters: the whole text is in --json]"
#: Widest column set from the header and the first rows (characters); long cells wrap past it.
_MAX_WIDTH = 60
_WIDTH_SAMPLE = 200


def require_openpyxl() -> Any:
    """The ``openpyxl`` module, or :class:`OptionError` saying how to install it."""
    try:
        import openpyxl  # here: openpyxl is an optional extra (xlsx)
    except ImportError as exc:
        raise OptionError(f"-o .xlsx needs openpyxl ({exc}); {INSTALL_HINT}") from None
    return openpyxl


class RowMark(str, Enum):
    """How a row is highlighted (module doc); ``PLAIN`` rows have no fill."""

    FAIL = "fail"
    WARNING = "warning"
    NOT_COMPARED = "not compared"
    PLAIN = "plain"


#: The fill colour (RGB) of each highlighted mark: Excel's own "bad", "neutral" and grey.
FILLS: Mapping[RowMark, str] = {RowMark.FAIL: "FFC7CE", RowMark.WARNING: "FFEB9C", RowMark.NOT_COMPARED: "D9D9D9"}

_GRADE_MARKS = {Grade.ERROR: RowMark.FAIL, Grade.WARNING: RowMark.WARNING, Grade.PASS: RowMark.PLAIN}


class MarkRule(str, Enum):
    """Which rule of the module doc highlighted a run's rows."""

    GATE = "the gate outcome of each row (red: fails the gate, yellow: failure waived, grey: not compared)"
    GRADE = "msprobe's Result of each row (red: error, yellow: warning, grey: not compared and not graded)"
    STATUS = "the status of each row (grey: not compared)"


def mark_rule(rows: Sequence[MetricRow], gate: Verdict | None) -> MarkRule:
    """The rule that highlights ``rows``: the gate's when ``gate`` is given (a gated run), else
    msprobe's grades when any row has one, else the statuses."""
    if gate is not None:
        return MarkRule.GATE
    return MarkRule.GRADE if any(row.grade is not None for row in rows) else MarkRule.STATUS


def _status_mark(status: PairStatus) -> RowMark:
    return RowMark.PLAIN if status is PairStatus.COMPARED else RowMark.NOT_COMPARED


def row_marks(rows: Sequence[MetricRow], gate: Verdict | None) -> list[RowMark]:
    """Each row's :class:`RowMark`, by :func:`mark_rule` (module doc). ``gate``: the verdict of a
    gated run (None when no gate was given); its failures name their row by position in ``rows``
    (a failure naming no row of ``rows``, ``row == -1``, marks none)."""
    rule = mark_rule(rows, gate)
    if rule is MarkRule.GATE:
        assert gate is not None
        marks = [_status_mark(row.status) for row in rows]
        for failures, mark in ((gate.waived, RowMark.WARNING), (gate.failures, RowMark.FAIL)):
            for failure in failures:
                if 0 <= failure.row < len(rows):
                    marks[failure.row] = mark
        return marks
    if rule is MarkRule.GRADE:
        return [_GRADE_MARKS[row.grade.grade] if row.grade is not None else _status_mark(row.status) for row in rows]
    return [_status_mark(row.status) for row in rows]


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def text_value(text: str) -> str:
    """A text cell as the workbook holds it: characters xlsx cannot hold escaped (``\\x01``), a
    text over :data:`EXCEL_MAX_TEXT` characters cut with a marker saying how much was cut."""
    if _ILLEGAL.search(text):
        text = _ILLEGAL.sub(_escape, text)
    if len(text) > EXCEL_MAX_TEXT:
        for digits in range(1, len(str(len(text))) + 1):  # the marker's count has this many digits
            keep = EXCEL_MAX_TEXT - len(_CUT_MARKER.format("9" * digits))
            if len(str(len(text) - keep)) == digits:
                break
        text = text[:keep] + _CUT_MARKER.format(len(text) - keep)
    return text


def is_number(text: str) -> bool:
    """Whether a CSV cell is written as a number: its text is a decimal number as the reports
    write one (``3``, ``-0.5``, ``1e-07``; no leading zeros, no ``+``) and, for an integer, of at
    most 15 digits (Excel's precision). Excel reads back the float64 the CSV text holds, to the last
    digit (a float openpyxl's 16 digits would round is stored as its CSV text). ``nan``, ``inf``,
    ``NaN`` (not computed), ``007``, longer integers and names stay text."""
    if not _NUMBER.fullmatch(text):
        return False
    return not _INTEGER.fullmatch(text) or len(text.lstrip("-")) <= _MAX_INT_DIGITS


class SummaryItem(NamedTuple):
    """One line of the Summary sheet: its section, what it says, the value (text or number)."""

    section: str
    item: str
    value: str | int | float | None


class SheetPart(NamedTuple):
    """One sheet of the rows: its name and the rows it holds (1-based, ``first`` to ``last``)."""

    name: str
    first: int
    last: int


def sheet_parts(total: int, max_rows: int) -> list[SheetPart]:
    """The sheets ``total`` rows go on: ``max_rows - 1`` rows a sheet (a header row each),
    ``Rows``, ``Rows (2)``, ``Rows (3)`` ...; one sheet (perhaps empty) for no rows."""
    per_sheet = max_rows - 1
    if per_sheet < 1:
        raise ValueError(f"a sheet of {max_rows} row(s) holds no row under its header")
    parts = []
    for number, first in enumerate(range(0, max(total, 1), per_sheet), start=1):
        name = ROWS_SHEET if number == 1 else f"{ROWS_SHEET} ({number})"
        parts.append(SheetPart(name, first + 1, min(first + per_sheet, total)))
    return parts


def _summary_value(value: object) -> str | int | float | None:
    """A Summary value: text and numbers as they are, ``yes`` / ``no``, a path as text, anything
    else (a list, a mapping) as JSON."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)  # type: ignore[return-value]
    return json.dumps(value, default=str, ensure_ascii=False)


def summary_items(*, inputs: Mapping[str, object] | None = None, counts: Mapping[str, int],
                  verdict: Verdict | None = None, gated: bool = False, localisation: Localisation | None = None,
                  notes: Sequence[str] = ()) -> list[SummaryItem]:
    """The Summary sheet of a run: the tool version, ``inputs`` (as the JSON result names them),
    the rows per status (``counts``, :func:`compare.records.count_by_status`), the gate (``gated``:
    a gate was given; ``verdict``: its outcome, exit code and failure counts), the first divergence
    (:func:`compare.reports.divergence.divergence_lines` of ``localisation``) and the ``notes``.
    :func:`write_workbook` adds the highlighting rule and the sheets of the rows."""
    items = [SummaryItem("run", "tool", f"vcompare {tool_version()}")]
    items += [SummaryItem("inputs", key, _summary_value(value)) for key, value in (inputs or {}).items()]
    items.append(SummaryItem("rows", "total", sum(counts.values())))
    items += [SummaryItem("rows", status, count) for status, count in counts.items()]
    if verdict is not None:
        if gated:
            items.append(SummaryItem("gate", "verdict", verdict.outcome.value))
            items.append(SummaryItem("gate", "rows checked", verdict.checked))
            items.append(SummaryItem("gate", "failures", len(verdict.failures)))
            items.append(SummaryItem("gate", "waived", len(verdict.waived)))
            items += [SummaryItem("gate", "policy error", text) for text in verdict.errors]
        else:
            items.append(SummaryItem("gate", "verdict", "none given"))
        items.append(SummaryItem("gate", "exit code", verdict.exit_code))
    items += [SummaryItem("first divergence", "", line) for line in divergence_lines(localisation)]
    items += [SummaryItem("notes", "", note) for note in notes]
    return items


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text``, each with its ``\n``, one at a time (no copy of the whole text)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def csv_lines(text: str) -> Iterator[list[str]]:
    """The rows of a CSV table as :func:`compare.reports.network.render_csv` writes it (header
    first; a quoted cell holding a line break stays one cell)."""
    return csv.reader(_lines(text))


def _widths(header: Sequence[str], sample: Sequence[Sequence[str]]) -> list[float]:
    widths = [len(name) for name in header]
    for line in sample:
        for i, cell in enumerate(line[:len(widths)]):
            widths[i] = max(widths[i], len(cell))
    return [min(width, _MAX_WIDTH) + 2 for width in widths]


class _SheetWriter:
    """The rows sheets of one workbook, filled in turn (openpyxl write-only worksheets)."""

    def __init__(self, openpyxl: Any, workbook: Any, header: list[str], widths: list[float],
                 parts: list[SheetPart]) -> None:
        fill = openpyxl.styles.PatternFill
        self._cell = openpyxl.cell.WriteOnlyCell
        self._fills = {mark: fill("solid", start_color=rgb, end_color=rgb) for mark, rgb in FILLS.items()}
        self._bold = openpyxl.styles.Font(bold=True)
        self._letter = openpyxl.utils.get_column_letter
        self.workbook = workbook
        self.header = [text_value(name) for name in header]
        self.widths = widths
        self.parts = list(parts)
        self.sheet: Any = None
        self.left = 0  # rows the current sheet still takes
        #: Cell objects reused from row to row, per (mark, column): openpyxl writes a row as it is
        #: appended, so one cell per column and fill serves every row of a sheet.
        self._pool: dict[tuple[RowMark, int], Any] = {}

    def _pooled(self, mark: RowMark, column: int) -> Any:
        cell = self._pool.get((mark, column))
        if cell is None:
            cell = self._pool[(mark, column)] = self._cell(self.sheet)
            fill = self._fills.get(mark)
            if fill is not None:
                cell.fill = fill
        return cell

    def _next_sheet(self) -> None:
        part = self.parts.pop(0)
        sheet = self.workbook.create_sheet(part.name)
        for column, width in enumerate(self.widths, start=1):
            sheet.column_dimensions[self._letter(column)].width = width
        sheet.freeze_panes = "A2"
        columns = max(len(self.header), 1)
        sheet.auto_filter.ref = f"A1:{self._letter(columns)}{part.last - part.first + 2}"
        heading = []
        for name in self.header:
            cell = self._cell(sheet, value=name)
            cell.font = self._bold
            cell.data_type = "s"
            heading.append(cell)
        sheet.append(heading)
        self.sheet = sheet
        self._pool.clear()  # a cell belongs to its sheet
        self.left = part.last - part.first + 1

    def start(self) -> None:
        """The first sheet (with its header), even for a table without rows."""
        self._next_sheet()

    def append(self, line: Sequence[str], mark: RowMark) -> None:
        """One row: empty cells empty, numbers (:func:`is_number`) as numbers that read back as the
        CSV text's float64, any other cell as text (:func:`text_value`), never a formula; filled
        when marked. Plain values go to openpyxl as they are (its fast path); a cell object only
        where one is needed: a fill, a text starting with ``=``, a number openpyxl's 16 digits
        would not give back exactly (then stored as its CSV text)."""
        if self.left == 0:
            self._next_sheet()
        fill = self._fills.get(mark)
        cells: list[Any] = []
        for text in line:
            if not text:
                value: Any = None
                data_type = "n"
            elif is_number(text):
                value = int(text) if _INTEGER.fullmatch(text) else float(text)
                data_type = "n"
                if type(value) is float and float(f"{value:.16g}") != value:  # openpyxl writes %.16g
                    value = text  # the number as the CSV wrote it: the same float64 read back
            else:
                value = text_value(text)
                data_type = "s"
            if fill is None and value is not text and not (data_type == "s" and value.startswith("=")):
                cells.append(value)  # openpyxl types it as this number / text itself
                continue
            cell = self._pooled(mark, len(cells))
            cell.value = value
            if value is not None:
                cell.data_type = data_type  # a text is text, never a formula; a number kept as its text
            cells.append(cell)
        self.sheet.append(cells)
        self.left -= 1


def _summary_sheet(openpyxl: Any, workbook: Any, items: Sequence[SummaryItem]) -> None:
    """The Summary sheet: a bold header (Section, Item, Value), then one line per item."""
    cell_type = openpyxl.cell.WriteOnlyCell
    sheet = workbook.create_sheet(SUMMARY_SHEET)
    for letter, width in (("A", 18), ("B", 24), ("C", 100)):
        sheet.column_dimensions[letter].width = width
    bold = openpyxl.styles.Font(bold=True)
    heading = []
    for name in ("Section", "Item", "Value"):
        cell = cell_type(sheet, value=name)
        cell.font = bold
        heading.append(cell)
    sheet.append(heading)
    for item in items:
        line: list[Any] = []
        for value in (item.section, item.item, item.value):
            value = text_value(value) if isinstance(value, str) else value
            cell = cell_type(sheet, value=value)
            if isinstance(value, str):
                cell.data_type = "s"
            line.append(cell)
        sheet.append(line)


def write_workbook(path: str | os.PathLike[str], table: str, marks: Sequence[RowMark],
                   summary: Sequence[SummaryItem] = (), *, rule: MarkRule = MarkRule.STATUS,
                   max_rows: int | None = None) -> Path:
    """Write the workbook (module doc) and return its path.

    ``table``: the CSV text of the table (header first, then one line per row); ``marks``: each
    row's highlight, in row order (as many as the table has rows: a difference is a
    ``ValueError``, a bug); ``summary``: the Summary sheet's items, to which the highlighting
    ``rule`` and the sheets of the rows are added; ``max_rows``: rows of one sheet, header
    included (None: :data:`EXCEL_MAX_ROWS`, Excel's limit, looked up at the call). Raises
    :class:`OptionError` without openpyxl and :class:`~compare.errors.OutputError` when the file
    cannot be written.
    """
    openpyxl = require_openpyxl()
    max_rows = EXCEL_MAX_ROWS if max_rows is None else max_rows
    lines = csv_lines(table)
    header = next(lines, [])
    parts = sheet_parts(len(marks), max_rows)
    sample: list[list[str]] = []
    for line in lines:
        sample.append(line)
        if len(sample) == _WIDTH_SAMPLE:
            break
    items = list(summary)
    items.append(SummaryItem("highlighting", "rule", rule.value))
    items += [SummaryItem("highlighting", mark.value, f"fill #{rgb}") for mark, rgb in FILLS.items()]
    for part in parts:
        held = f"rows {part.first} to {part.last}" if part.last >= part.first else "no rows"
        items.append(SummaryItem("sheets", part.name, held))
    if len(parts) > 1:
        items.append(SummaryItem("sheets", "note", f"{len(marks)} rows are more than one Excel sheet holds "
                                 f"({max_rows - 1} under its header): they go on in {len(parts) - 1} more "
                                 "sheet(s), each with the header; no row is left out"))

    def write(handle: Any) -> None:
        workbook = openpyxl.Workbook(write_only=True)
        try:
            sheets = _SheetWriter(openpyxl, workbook, header, _widths(header, sample), parts)
            sheets.start()
            written = 0
            marks_iter = iter(marks)
            for line in _chain(sample, lines):
                mark = next(marks_iter, None)
                if mark is None:
                    raise ValueError(f"the table has more rows than the {len(marks)} highlight mark(s) given")
                sheets.append(line, mark)
                written += 1
            if written != len(marks):
                raise ValueError(f"the table has {written} row(s) and {len(marks)} highlight mark(s) were given")
            _summary_sheet(openpyxl, workbook, items)
        except BaseException:
            for sheet in workbook.worksheets:  # end each sheet's stream (openpyxl removes its file at exit)
                with contextlib.suppress(Exception):
                    sheet.close()
            raise
        workbook.save(handle)

    return atomic_write(Path(path), write)


def _chain(first: list[list[str]], rest: Iterator[list[str]]) -> Iterator[list[str]]:
    yield from first
    yield from rest


__all__ = ["EXCEL_MAX_ROWS", "EXCEL_MAX_TEXT", "FILLS", "INSTALL_HINT", "MarkRule", "RowMark", "SheetPart",
           "SummaryItem", "csv_lines", "is_number", "mark_rule", "require_openpyxl", "row_marks", "sheet_parts",
           "summary_items", "text_value", "write_workbook"]
