"""Turning raw numbers into report cells -- the one place that decides how numbers print.

Conventions (shared with the reference tool, so existing parsers keep working):

- a metric prints ``%.6f`` by default (:class:`FloatFormat`: ``--digits N`` for ``%.Nf``,
  ``--float-format repr`` for the shortest text that reads back as the same float64); a computed
  NaN prints ``nan``, infinities ``inf`` / ``-inf``;
- ``NaN`` (capitalised) means "not computed" (no data, no counterpart, failed);
- StandardDeviation prints ``(mean;std),(mean;std)`` with 3 decimals, left first, values whose
  magnitude is below 0.001 printed as 0 (with a non-default :class:`FloatFormat` the four values
  use that format instead, and nothing is zeroed);
- a shape prints ``[d0,d1,...]`` without spaces;
- ``*`` marks a missing counterpart (set by pairing in the op cells).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import OptionError

NOT_COMPUTED = "NaN"

#: Decimals of the reference layout (``%.6f``).
DEFAULT_DIGITS = 6
#: Largest ``--digits`` accepted: beyond 17 significant digits a float64 carries nothing more,
#: and ``%.Nf`` of a small value needs its exponent's worth of zeros -- use ``repr`` for those.
MAX_DIGITS = 40


@dataclass(frozen=True)
class FloatFormat:
    """How the metric cells of a text report print a finite float.

    ``digits`` N: fixed ``%.Nf`` (the default, 6, is the reference layout); ``shortest``: the
    shortest decimal text that reads back as the same float64 (Python's ``repr``, e.g.
    ``2.98e-07``), so no value is ever rounded to 0. Non-finite values print ``nan`` / ``inf`` /
    ``-inf`` and "not computed" prints ``NaN`` in every format.
    """

    digits: int = DEFAULT_DIGITS
    shortest: bool = False

    @property
    def is_default(self) -> bool:
        return not self.shortest and self.digits == DEFAULT_DIGITS

    @property
    def text(self) -> str:
        """The option spelling: ``repr`` or ``%.Nf``."""
        return "repr" if self.shortest else f"%.{self.digits}f"

    def finite(self, value: float) -> str:
        return repr(float(value)) if self.shortest else format(value, _FIXED_SPECS[self.digits])


_FIXED_SPECS = tuple(f".{d}f" for d in range(MAX_DIGITS + 1))

#: The reference layout, ``%.6f``.
DEFAULT_FLOAT_FORMAT = FloatFormat()
#: Full float64 precision (``repr``).
REPR_FLOAT_FORMAT = FloatFormat(shortest=True)

FLOAT_STYLES = ("fixed", "repr")


def parse_float_format(digits: int | None = None, style: str | None = None) -> FloatFormat:
    """``--digits N`` and ``--float-format fixed|repr`` -> :class:`FloatFormat`.

    Neither: the reference ``%.6f``. ``style="repr"``: shortest round-trip float64 (``digits``
    must then be absent). ``digits`` alone or with ``style="fixed"``: ``%.Nf`` for
    ``0 <= N <= MAX_DIGITS``. Anything else raises :class:`OptionError`.
    """
    if style is not None and style not in FLOAT_STYLES:
        raise OptionError(f"--float-format must be one of {', '.join(FLOAT_STYLES)}, not {style!r}")
    if digits is not None:
        if isinstance(digits, bool) or not isinstance(digits, int):
            raise OptionError(f"--digits must be a whole number, not {digits!r}")
        if not 0 <= digits <= MAX_DIGITS:
            raise OptionError(f"--digits must be between 0 and {MAX_DIGITS}, not {digits} "
                              "(use --float-format repr for full float64 precision)")
        if style == "repr":
            raise OptionError("--digits and --float-format repr exclude each other: repr always "
                              "writes the shortest text that reads back as the same float64")
        return FloatFormat(digits=digits)
    if style == "repr":
        return REPR_FLOAT_FORMAT
    return DEFAULT_FLOAT_FORMAT

#: |v| below this prints as 0.000 in the StandardDeviation cell (as the reference does).
STD_ZERO_BELOW = 0.001

_FLOAT_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(nan|inf|NaN|Infinity)$")
DANGEROUS_START = ("=", "+", "-", "@", "%", "\t", "\r", "＝", "＋", "－")


def _non_finite(value: float) -> str:
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def metric_cell(value: float | None, float_format: FloatFormat = DEFAULT_FLOAT_FORMAT) -> str:
    """``%.6f`` (or ``float_format``) for a number, ``nan``/``inf`` for non-finite results,
    ``NaN`` for not computed."""
    if value is None:
        return NOT_COMPUTED
    if not math.isfinite(value):
        return _non_finite(value)
    return float_format.finite(value)


def _std_part(value: float, float_format: FloatFormat) -> str:
    if not math.isfinite(value):
        return _non_finite(value)
    if not float_format.is_default:
        return float_format.finite(value)
    if abs(value) < STD_ZERO_BELOW:
        value = 0.0
    return f"{value:.3f}"


def std_cell(std: Sequence[float] | None, float_format: FloatFormat = DEFAULT_FLOAT_FORMAT) -> str:
    """``(left_mean;left_std),(right_mean;right_std)`` or ``NaN``.

    Default format: 3 decimals, magnitudes below ``STD_ZERO_BELOW`` printed as 0 (the reference
    cell); any other ``float_format``: the four values in that format, nothing zeroed.
    """
    if std is None:
        return NOT_COMPUTED
    lm, ls, rm, rs = [_std_part(float(v), float_format) for v in std]
    return f"({lm};{ls}),({rm};{rs})"


def shape_cell(shape: Sequence[int] | None) -> str:
    """The Shape cell: ``[d0,d1,...]``, or the not-computed mark when there is no shape."""
    if shape is None:
        return NOT_COMPUTED
    if type(shape) is tuple:
        return _shape_text(shape)
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


@functools.lru_cache(maxsize=4096)
def _shape_text(shape: tuple) -> str:
    """:func:`shape_cell` of a tuple, remembered (a network has a few shapes)."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def text_cell(value: object) -> str:
    """A text cell from the inputs (op name, op type, data type, tensor id); ``None`` -> ``NaN``.

    The text is neutralised with :func:`neutralise_text`: it comes from file names and rule
    JSON, so even a number-looking name such as ``+1`` is kept as the text it is.
    """
    if value is None or value == "":
        return NOT_COMPUTED
    return _text_cell(value) if type(value) is str else neutralise_text(str(value))


@functools.lru_cache(maxsize=16384)
def _text_cell(value: str) -> str:
    """:func:`neutralise_text`, remembered: op names, types and data types repeat from row to row."""
    return neutralise_text(value)


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
    if cell and cell.startswith(DANGEROUS_START) and not _FLOAT_RE.match(cell):
        return "'" + cell
    return cell


def neutralise_text(cell: str) -> str:
    """Like :func:`neutralise`, for text that comes from the inputs: no exemption for numbers.

    An op named ``+1`` or ``-2`` is not a number the report computed; a spreadsheet would turn it
    into one (or into a formula), so it is quoted as well: ``'+1``.
    """
    cell = encodable(cell)
    if cell and cell.startswith(DANGEROUS_START):
        return "'" + cell
    return cell


def neutralise_csv_line(line: str) -> str:
    """Neutralise every cell of one comma-separated line of plain cells (no quoting inside)."""
    return ",".join(neutralise_text(cell) for cell in line.split(","))
