"""Report tables a column at a time: the cells of the CSV and txt writers without per-cell layers.

A report of 100,000 rows has millions of cells; formatting them one call each costs more than
the comparison of a statistics dump. The writers (:mod:`compare.reports.stats`,
:mod:`compare.reports.network`) therefore build each column of a batch of rows with one list
comprehension, and format each *distinct* value of a text column once
(:func:`each_distinct`: op types, data types, shapes and names repeat from row to row). The
text is the one :mod:`compare.reports.cells` defines, cell for cell; the property tests of
``tests/compare/reports/test_table_columns.py`` hold the columns to the per-cell functions.

CSV lines are joined here rather than by :func:`csv.writer` (whose ``writerow`` alone costs
~5 us for a statistics row of 36 cells): :func:`csv_field` writes a cell as ``csv.writer`` with
the default dialect (``QUOTE_MINIMAL``, doubled quotes) writes it in a row of two or more cells
-- as it is without a delimiter, quote, CR or LF; quoted with its quotes doubled when it holds a
delimiter or a quote; and by the ``csv`` module itself when it holds a line break, whose quoting
depends on the line terminator.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Hashable, Sequence
from operator import itemgetter
from typing import TypeVar

from convert.textcells import BLANKS, DANGEROUS_START

from ..records import ArgumentDiff, MsprobeCells
from .cells import (
    NOT_COMPUTED,
    data_name_text,
    grad_consistent_cell,
    requires_grad_cell,
    text_cell,
)

#: Rows formatted together: the columns of one batch are alive at a time, so a report's text is
#: built without holding every cell of every row. Few enough that a batch's records stay in the
#: CPU cache while each column is read from them: 256 rows cost ~11-14 % less a row than 4,096
#: (the statistics and tensor CSV writers on the S100k and T10k results, same output).
BATCH_ROWS = 256

#: A character for which ``csv.writer`` (default dialect, ``QUOTE_MINIMAL``) may quote a cell.
_QUOTE_TRIGGER = re.compile('[,"\r\n]')

T = TypeVar("T", bound=Hashable)

#: First characters after which a text cell may change (formula guard, rule 1 of
#: :mod:`convert.textcells`): a cell starting otherwise, printable and without a CSV trigger
#: is its own cell and its own CSV field.
_GUARDED_FIRST = frozenset(DANGEROUS_START) | frozenset(BLANKS)
_first = itemgetter(0)
_ONLY_STR = frozenset({str})


def csv_field(cell: str, lineterminator: str = "\n") -> str:
    """``cell`` as ``csv.writer`` writes it inside a row of two or more cells: quoted (and its
    quotes doubled) when the ``csv`` module says so, else as it is."""
    if _QUOTE_TRIGGER.search(cell) is None:
        return cell
    if "\r" not in cell and "\n" not in cell:  # a delimiter or a quote: quoted, its quotes doubled
        return '"' + cell.replace('"', '""') + '"'
    buf = io.StringIO()
    csv.writer(buf, lineterminator=lineterminator).writerow([cell, ""])
    return buf.getvalue()[: -1 - len(lineterminator)]


def each_distinct(values: Sequence[T], cell: Callable[[T], str]) -> list[str]:
    """``[cell(v) for v in values]``, calling ``cell`` once per distinct value.

    Values are told apart by ``==`` and hash: a column holds one kind of value besides ``None``
    (names, ints, shape tuples), never both ``1`` and ``True`` or ``0.0`` and ``-0.0``.
    """
    table = {value: cell(value) for value in set(values)}
    return list(map(table.__getitem__, values))


def plain_text(values: Sequence[object]) -> bool:
    """Whether every value of a column is text that :func:`~compare.reports.cells.text_cell` and
    :func:`csv_field` leave as it is: a non-empty, printable ``str`` (exactly ``str``: a ``str``
    enum prints otherwise; no line break, no unpaired surrogate) whose first character is not one
    the formula guard looks at, with no ``,`` / ``"``. Checked on the column joined into one
    string: a few C passes for the lot."""
    if not _ONLY_STR.issuperset(map(type, values)):
        return False
    try:
        firsts = set(map(_first, values))
    except IndexError:  # an empty value
        return False
    joined = "a".join(values)  # type: ignore[arg-type]  # all str
    return _GUARDED_FIRST.isdisjoint(firsts) and printable(joined) and "," not in joined and '"' not in joined


#: The printable ASCII characters (``str.isprintable``'s among ASCII: space to ``~``), as bytes.
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F))


def printable(text: str) -> bool:
    """``text.isprintable()``; an ASCII text (a flag of the string, read in O(1)) is checked by
    deleting its printable bytes (one C pass at ~1 ns a byte, 5x faster than ``isprintable``'s
    per-character table walk on the batches of names a table writes)."""
    if text.isascii():
        return not text.encode("ascii").translate(None, _PRINTABLE_ASCII)
    return text.isprintable()


def text_column(values: Sequence[object], field: Callable[[str], str]) -> list[str]:
    """The cells of a column of text from the inputs: :func:`~compare.reports.cells.text_cell` of
    each value, then ``field`` (:func:`csv_field` for a CSV table). When the values other than
    ``None`` / ``""`` (``NaN`` cells) are :func:`plain_text`, they are their own cells; else
    each distinct value is formatted once."""
    present = [value for value in values if value is not None and value != ""]
    if plain_text(present):
        return list(values) if len(present) == len(values) else [value or NOT_COMPUTED for value in values]  # type: ignore[misc]
    return each_distinct(values, lambda value: field(text_cell(value)))  # type: ignore[arg-type]


def msprobe_columns(cells: Sequence[MsprobeCells | None], arguments: Sequence[ArgumentDiff | None],
                    field: Callable[[str], str]) -> list[list[str]]:
    """The :data:`~compare.reports.cells.MSPROBE_COLUMNS` of a batch of rows, column by column:
    :func:`~compare.reports.cells.msprobe_row_cells` of each row, each cell then passed through
    ``field`` (the CSV quoting of a CSV table)."""
    grads = [None if c is None else (c.left_grad, c.right_grad) for c in cells]
    return [text_column([None if c is None else c.left_name for c in cells], field),
            text_column([None if c is None else c.right_name for c in cells], field),
            each_distinct([data_name_text(c) for c in cells], lambda text: field(text_cell(text))),
            each_distinct(grads, lambda pair: field(requires_grad_cell(pair))),
            each_distinct([None if c is None else c.grad_consistent for c in cells],
                          lambda consistent: field(grad_consistent_cell(consistent))),
            text_column([None if c is None or a is None else a.cell for c, a in zip(cells, arguments)], field),
            text_column([None if c is None else c.source for c in cells], field)]


def csv_lines(columns: Sequence[Sequence[str]], lineterminator: str) -> str:
    """The CSV lines of a batch given its columns of CSV fields (:func:`csv_field`), each line
    ended by ``lineterminator``; empty text for a batch without rows."""
    if not columns or not columns[0]:
        return ""
    return lineterminator.join(map(",".join, zip(*columns))) + lineterminator


def batches(count: int) -> range:
    """The first row of each batch of :data:`BATCH_ROWS` rows out of ``count``."""
    return range(0, count, BATCH_ROWS)


__all__ = ["BATCH_ROWS", "batches", "csv_field", "csv_lines", "each_distinct", "msprobe_columns", "plain_text",
           "printable", "text_column"]
