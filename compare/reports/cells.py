"""Turning raw numbers into report cells -- the one place that decides how numbers print.

Conventions (shared with the reference tool, so existing parsers keep working):

- a metric prints ``%.6f``; a computed NaN prints ``nan``, infinities ``inf`` / ``-inf``;
- ``NaN`` (capitalised) means "not computed" (no data, no counterpart, failed);
- StandardDeviation prints ``(mean;std),(mean;std)`` with 3 decimals, left first, values whose
  magnitude is below 0.001 printed as 0;
- a shape prints ``[d0,d1,...]`` without spaces;
- ``*`` marks a missing counterpart (set by pairing in the op cells).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

NOT_COMPUTED = "NaN"

#: |v| below this prints as 0.000 in the StandardDeviation cell (as the reference does).
STD_ZERO_BELOW = 0.001

_FLOAT_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(nan|inf|NaN|Infinity)$")
_DANGEROUS_START = ("=", "+", "-", "@", "%", "\t", "\r", "＝", "＋", "－")


def metric_cell(value: float | None) -> str:
    """``%.6f`` for a number, ``nan``/``inf`` for non-finite results, ``NaN`` for not computed."""
    if value is None:
        return NOT_COMPUTED
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.6f}"


def _std_part(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if abs(value) < STD_ZERO_BELOW:
        value = 0.0
    return f"{value:.3f}"


def std_cell(std: Sequence[float] | None) -> str:
    """``(left_mean;left_std),(right_mean;right_std)`` or ``NaN``."""
    if std is None:
        return NOT_COMPUTED
    lm, ls, rm, rs = (float(v) for v in std)
    return f"({_std_part(lm)};{_std_part(ls)}),({_std_part(rm)};{_std_part(rs)})"


def shape_cell(shape: Sequence[int] | None) -> str:
    if shape is None:
        return NOT_COMPUTED
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def text_cell(value: object) -> str:
    """A text cell from the inputs (op name, op type, data type, tensor id); ``None`` -> ``NaN``.

    The text is neutralised with :func:`neutralise_text`: it comes from file names and rule
    JSON, so even a number-looking name such as ``+1`` is kept as the text it is.
    """
    return NOT_COMPUTED if value is None or value == "" else neutralise_text(str(value))


def encodable(cell: str) -> str:
    """``cell`` made encodable as UTF-8: unpaired surrogates become backslash escapes.

    File names that are not valid UTF-8 reach Python as surrogate escapes (``\\udcff`` for the
    byte 0xFF) and end up in reasons; written as they are, they would abort the report. They are
    shown as ``\\xff`` (the byte) or ``\\ud800`` (any other lone surrogate).
    """
    try:
        cell.encode("utf-8")
        return cell
    except UnicodeEncodeError:
        pass
    out = []
    for ch in cell:
        if "\ud800" <= ch <= "\udfff":
            code = ord(ch)
            out.append(f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def neutralise(cell: str) -> str:
    """Guard against spreadsheet formula injection, for any cell (numbers pass).

    A cell that does not read as a number and starts with ``= + - @ %`` (or a tab/CR, or the
    full-width forms) is prefixed with ``'`` so a spreadsheet shows it as text. The reference tool
    aborts the whole run on such a cell instead (e.g. an op name starting with ``-``). A cell that
    already starts with ``'`` is left alone, so neutralising twice changes nothing. The cell is
    also made encodable (:func:`encodable`).
    """
    cell = encodable(cell)
    if cell and cell.startswith(_DANGEROUS_START) and not _FLOAT_RE.match(cell):
        return "'" + cell
    return cell


def neutralise_text(cell: str) -> str:
    """Like :func:`neutralise`, for text that comes from the inputs: no exemption for numbers.

    An op named ``+1`` or ``-2`` is not a number the report computed; a spreadsheet would turn it
    into one (or into a formula), so it is quoted as well: ``'+1``.
    """
    cell = encodable(cell)
    if cell and cell.startswith(_DANGEROUS_START):
        return "'" + cell
    return cell


def neutralise_csv_line(line: str) -> str:
    """Neutralise every cell of one comma-separated line of plain cells (no quoting inside)."""
    return ",".join(neutralise_text(cell) for cell in line.split(","))
