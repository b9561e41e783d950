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

Text cells (op names and types, data types, tensor ids, reasons) follow the one policy of
:mod:`convert.textcells`, shared with vconvert's ``mapping.csv``: a cell a spreadsheet could
take for a formula -- starting with ``= + - @ %``, a tab or a CR, also after leading blanks
(``" =1+1"``, ``"\\r=1+1"``) -- gets a leading ``'``; every line break (CR, LF, the other
``str.splitlines`` breaks) becomes a visible escape (``\\r``, ``\\n``, ``\\xNN``),
so one row is one line in the CSV and txt reports whatever reads them (a bare CR is otherwise
left unquoted by ``csv.writer`` with ``\\n`` line endings, and readers split the row there).
Computed numbers (``-0.5``, ``-inf``) are left alone by :func:`neutralise`; text from the
inputs is guarded even when it looks numeric (:func:`neutralise_text`, :func:`text_cell`).
The JSON and parquet results keep the exact text.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from convert.textcells import encodable, neutralise, neutralise_text  # noqa: F401 - the report writers' text cells

from ..errors import OptionError
from ..records import ArgumentDiff, MsprobeCells

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


def metric_column(values: Sequence[float | None], float_format: FloatFormat = DEFAULT_FLOAT_FORMAT) -> list[str]:
    """:func:`metric_cell` of each value of a column, in one comprehension (a network report
    formats ten metrics a row)."""
    if float_format.shortest:
        return [NOT_COMPUTED if value is None else repr(float(value)) if value - value == 0.0
                else metric_cell(value, float_format) for value in values]
    spec = _FIXED_SPECS[float_format.digits]
    return [NOT_COMPUTED if value is None else format(value, spec) if value - value == 0.0
            else metric_cell(value, float_format) for value in values]


def _std_parts(values: list[float], float_format: FloatFormat) -> list[str]:
    """:func:`_std_part` of each value of a column (``format`` and ``repr(float(v))`` print an
    int or a numpy float as :func:`std_cell`'s ``float(v)`` does)."""
    if not float_format.is_default:
        return metric_column(values, float_format)  # finite: the format; else nan / inf / -inf
    return [("0.000" if abs(value) < STD_ZERO_BELOW else format(value, ".3f")) if value - value == 0.0
            else _non_finite(value) for value in values]


def std_column(stds: Sequence[Sequence[float] | None], float_format: FloatFormat = DEFAULT_FLOAT_FORMAT) -> list[str]:
    """:func:`std_cell` of each quadruple of a column (``NaN`` for ``None``): the four values of
    every row formatted as one column, then put back together."""
    parts = iter(_std_parts([value for std in stds if std is not None for value in std], float_format))
    cells = [f"({lm};{ls}),({rm};{rs})" for lm, ls, rm, rs in zip(parts, parts, parts, parts)]
    if len(cells) == len(stds):
        return cells
    present = iter(cells)
    return [NOT_COMPUTED if std is None else next(present) for std in stds]


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


# --------------------------------------------------------------------------------------------
# msprobe's own columns (rows of msprobe runs: MetricRow.msprobe)
# --------------------------------------------------------------------------------------------

#: The columns msprobe users read, added (before Result / Err_message and FailReason) to the
#: tables of comparisons where a side is an msprobe tree; tables of other families never have them.
#: ``LeftName`` / ``RightName``: msprobe's ``NPU Name`` / ``Bench Name``; ``DataName``: both data
#: files (``Data_name``), ``left, right``, ``-`` for a side without one; ``RequiresGrad``:
#: ``left/right`` (``N/A`` when not recorded); ``RequiresGradConsistent``: ``True`` / ``False``
#: (``NaN`` when a side did not record it); ``Value``: a non-tensor argument's value (``left /
#: right`` when they differ); ``Stack``: ``file:line`` of the user's frame of the call.
MSPROBE_COLUMNS = ("LeftName", "RightName", "DataName", "RequiresGrad", "RequiresGradConsistent", "Value", "Stack")

#: msprobe's metrics that sit beside vcompare's own in its tables: name -> the metric it follows
#: (None: first). Picked by name from the selected metrics; absent ones are not added.
MSPROBE_METRIC_PLACES = {"EucDist": "CosineSimilarity", "OneThousandthErrRatio": "MaxRelativeError",
                         "FiveThousandthsErrRatio": "OneThousandthErrRatio"}


def msprobe_metric_order(metrics: Sequence[str]) -> list[str]:
    """The metric columns of an msprobe table: ``metrics`` in their order, each of
    :data:`MSPROBE_METRIC_PLACES` present moved right after the metric it follows in msprobe's
    table (``EucDist`` after ``CosineSimilarity``, the two error ratios after ``MaxRelativeError``);
    one whose anchor is not selected stays where it was."""
    order = [m for m in metrics if m not in MSPROBE_METRIC_PLACES]
    for name, anchor in MSPROBE_METRIC_PLACES.items():
        if name not in metrics:
            continue
        if anchor in order:
            order.insert(order.index(anchor) + 1, name)
        else:
            order.insert(min(list(metrics).index(name), len(order)), name)
    return order


def _grad(value: bool | None) -> str:
    return "N/A" if value is None else str(value)


def requires_grad_cell(grads: tuple[bool | None, bool | None] | None) -> str:
    """The RequiresGrad cell of a row's (left, right) requires-grad (``None``: no msprobe cells)."""
    if grads is None or grads == (None, None):
        return NOT_COMPUTED
    return f"{_grad(grads[0])}/{_grad(grads[1])}"


def grad_consistent_cell(consistent: bool | None) -> str:
    """The RequiresGradConsistent cell: ``True`` / ``False``, ``NaN`` when a side did not record it."""
    return NOT_COMPUTED if consistent is None else str(consistent)


def data_name_text(cells: MsprobeCells | None) -> str | None:
    """The DataName text of a row (both data files, ``-`` for a side without one; ``None``: none)."""
    if cells is None or not (cells.left_data or cells.right_data):
        return None
    return f"{cells.left_data or '-'}, {cells.right_data or '-'}"


def msprobe_row_cells(cells: MsprobeCells | None, argument: ArgumentDiff | None) -> list[str]:
    """The :data:`MSPROBE_COLUMNS` cells of one row (``NaN`` for a row without msprobe cells)."""
    if cells is None:
        return [NOT_COMPUTED] * len(MSPROBE_COLUMNS)
    return [text_cell(cells.left_name), text_cell(cells.right_name), text_cell(data_name_text(cells)),
            requires_grad_cell((cells.left_grad, cells.right_grad)), grad_consistent_cell(cells.grad_consistent),
            text_cell(argument.cell) if argument is not None else NOT_COMPUTED, text_cell(cells.source)]
