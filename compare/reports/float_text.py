"""Python's ``repr`` of many floats at once: the shortest text that reads back as the same float64.

A report of statistics rows prints 10-16 floats a row, and ``float.__repr__`` costs 0.35-0.5 us
a float: at 10^5-10^6 rows the float text is a large share of a table. orjson (a well-kept JSON
library) writes float64 arrays with a native shortest round-trip formatter, ~25x faster a float;
:func:`repr_texts` gives the texts of a column at once through it, :func:`repr_rows` the lines of
a table's number cells (each row's texts joined by ``,``) without a Python object a cell.

Policy -- the same text as ``repr``, always:

- orjson's **digits** are the shortest round-trip digits, as ``repr``'s (both pick, among the
  shortest texts that read back as the value, the one nearest to it). Its **layout** is ``repr``'s
  for ``1e-4 <= |x| < 1e16`` and for zero (positional, ``.0`` on integral values, ``-0.0``), and
  for the exponent forms with an exponent of two or more digits (``1.5e-10``, ``1e+16``).
  Three ranges differ and are rewritten: ``1e-9 <= |x| < 1e-5`` (:data:`PAD` to :data:`TINY`),
  whose one-digit exponent orjson leaves unpadded (``1e-7`` where ``repr`` writes ``1e-07``: a
  ``0`` inserted); ``1e-5 <= |x| < 1e-4`` (:data:`TINY` to :data:`LOW`), which orjson writes
  positionally (``0.000099``, ``-0.00001``) and ``repr`` in the exponent form (``9.9e-05``,
  ``-1e-05``: the digits after ``0.0000`` moved, the exponent always ``-05``); and NaN and the
  infinities, which orjson writes as ``null``: those are written by ``repr`` itself. The ranges are
  told apart by comparing the values with the floats of the powers of ten: a float ``x >= 1e-9``
  has a shortest text ``>= 1e-9`` (rounding to the nearest float is monotonic), so its exponent
  is the one the range says. (Statistics' differences are often below 1e-4: a third of the
  floats of a statistics run.)
- The first call checks the texts (rewritten) against ``repr`` on a fixed sample (range edges,
  halfway cases, powers of two, subnormals, 2,000 seeded random values of the positional range,
  2,000 of the ranges rewritten and 2,000 of the whole float64 range), written as the writers
  write them (an array, and a table with holes); if any text differs (a future orjson that formats
  otherwise), every float goes through ``repr``.
  tests/compare/reports/test_float_text.py holds the two equal over all float64 (hypothesis).
- Short columns (< :data:`MIN_BATCH` values) go through ``repr``: the call and the range masks
  cost more than they save.
- :func:`repr_texts` takes floats (``float`` or a subclass such as ``numpy.float64``, whose
  ``repr`` is taken as ``float.__repr__``'s; the column is read as a float64 array), and
  :func:`repr_rows` a float64 table; anything else is a caller's bug.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import numpy as np
import orjson

#: Below this many values a column is formatted by ``repr`` value by value.
MIN_BATCH = 16
#: The magnitudes orjson writes positionally as ``repr`` does (zero too), see the module docstring.
LOW, HIGH = 1e-4, 1e16
#: Below this magnitude (and from :data:`HIGH` on) both write the exponent form; from it to
#: :data:`LOW` orjson writes positionally where ``repr`` does not.
TINY = 1e-5
#: From this magnitude to :data:`TINY` the exponent has one digit (``-6`` to ``-9``), which
#: ``repr`` pads to two.
PAD = 1e-9

#: orjson's ``dumps`` of a numpy array.
Dumps = Callable[[np.ndarray], bytes]

#: orjson's ``null`` (a hole) to ``%s``: the byte table of :func:`_rows` (``l`` is deleted).
_PLACES = bytes.maketrans(b"nu", b"%s")

_repr = float.__repr__
_checked: list[bool] = []  # [agrees] once checked


def _sample() -> list[float]:
    """Values whose text would show a different formatter: the range edges, halfway and
    round-trip-hard cases, integral values up to 2^53, exponent forms of one to three digits,
    subnormals, and seeded random values of the positional range, of the ranges rewritten
    (:func:`_rewrite`) and of the whole float64 range."""
    edges = [LOW, 0.00010000000000000002, 0.00011, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 0.5, 1.0, 1.5, 2.0, 10.0,
             123456789.125, 2.0 ** 52, 2.0 ** 53, 2.0 ** 53 - 1, 1e15, 1e15 + 0.5, 9999999999999998.0,
             5e-5 + 5e-5, 0.1 + 0.2, 1.0 - 2.0 ** -53, 9007199254740993.0, 4.35, 0.30000000000000004,
             1.7976931348623157e15, 0.0, -0.0, -1.5, -0.0001, 9.999999999999999e-06, 1e-6, -1e-7, 1.5e-10,
             1e-99, 1e-100, 1e-300, 2.2250738585072014e-308, 5e-324, -5e-324, HIGH, -HIGH, 1.5e17, 1e22, 1e99,
             1e100, 1e300, 1.7976931348623157e308, TINY, -TINY, 2e-5, 9.9e-05, 0.00009999999999999999, 1.5e-05,
             PAD, -PAD, 9.99999999999e-10, 1.0000000000000001e-9, 1e-9 * (1 - 2 ** -52)]
    rnd = random.Random(20261128)
    spread = [rnd.uniform(-1.0, 1.0) * 10.0 ** rnd.randint(-3, 15) for _ in range(2000)]
    spread += [rnd.uniform(-1.0, 1.0) * 10.0 ** rnd.randint(-9, -4) for _ in range(2000)]
    spread += [rnd.uniform(-10.0, 10.0) * 10.0 ** rnd.randint(-320, 300) for _ in range(2000)]
    return edges + spread


def _texts(dumps: Dumps, values: np.ndarray) -> list[str]:
    """orjson's texts of a 1-D float64 array, as they are."""
    return dumps(values).decode()[1:-1].split(",")


def _exponent_form(texts: list[str]) -> list[str]:
    """orjson's positional texts of values of [:data:`TINY`, :data:`LOW`) (``0.0000`` then the
    digits, a ``-`` before) in ``repr``'s exponent form: the first digit, ``.`` and the others
    when there are others, ``e-05``."""
    return [(text[6] + "." + text[7:] + "e-05" if len(text) > 7 else text[6] + "e-05") if text[0] != "-"
            else ("-" + text[7] + "." + text[8:] + "e-05" if len(text) > 8 else "-" + text[7] + "e-05")
            for text in texts]


def _padded(dumps: Dumps, values: np.ndarray) -> list[str]:
    """The texts of values of [:data:`PAD`, :data:`TINY`): orjson's (``1.5e-7``, always a
    one-digit exponent there) with the exponent padded as ``repr`` pads it (``1.5e-07``), one
    ``str.replace`` for them all."""
    return dumps(values).decode()[1:-1].replace("e-", "e-0").split(",")


def _rewrite(dumps: Dumps, values: np.ndarray, magnitude: np.ndarray, texts: list[str]) -> None:
    """Put ``repr``'s text in ``texts`` (orjson's, one a value) where orjson's differs: the
    values of [PAD, TINY) padded, those of [TINY, LOW) in the exponent form, NaN and the
    infinities by ``repr`` (module doc)."""
    for mask, form in (((magnitude >= PAD) & (magnitude < TINY), _padded),
                       ((magnitude >= TINY) & (magnitude < LOW), _positional)):
        where = np.flatnonzero(mask)
        if len(where):
            for i, text in zip(where.tolist(), form(dumps, values[where])):
                texts[i] = text
    for i in np.flatnonzero(~np.isfinite(magnitude)).tolist():
        texts[i] = _repr(float(values[i]))


def _positional(dumps: Dumps, values: np.ndarray) -> list[str]:
    """The texts of values of [:data:`TINY`, :data:`LOW`) (:func:`_exponent_form` of orjson's)."""
    return _exponent_form(_texts(dumps, values))


def _orjson_dumps(values: np.ndarray) -> bytes:
    """orjson's text of a numpy array (C-contiguous, as numpy gives it)."""
    return orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY)


def _reprs(dumps: Dumps, values: np.ndarray) -> list[str]:
    """``repr``'s texts of values (NaN and the infinities, which orjson writes as ``null``;
    ``dumps`` unused: the forms :func:`_rows` applies share one signature)."""
    return [_repr(value) for value in values.tolist()]


def _dumps() -> Dumps | None:
    """orjson's ``dumps`` of arrays when it writes the sample as ``repr`` does -- a column
    (:func:`repr_texts`) and a table with holes (:func:`repr_rows`) -- else None (checked once)."""
    if not _checked:
        sample = _sample()
        expected = [_repr(v) for v in sample]
        column = np.asarray(sample, dtype=np.float64)
        texts = _texts(_orjson_dumps, column)
        _rewrite(_orjson_dumps, column, np.abs(column), texts)
        width = 7  # a table of 7 columns, every 5th cell a hole
        table = np.asarray(sample[: len(sample) // width * width], dtype=np.float64).reshape(-1, width)
        holes = (np.arange(table.size) % 5 == 0).reshape(table.shape)
        fills = np.where(holes, "hole", None).astype(object)
        cells = [fill if hole else text for text, fill, hole in zip(expected, fills.ravel(), holes.ravel())]
        rows = [",".join(cells[i:i + width]) for i in range(0, table.size, width)]
        _checked.append(texts == expected and _rows(_orjson_dumps, table, holes, fills) == rows)
    return _orjson_dumps if _checked[0] else None


def repr_texts(values: Sequence[float]) -> list[str]:
    """``[repr(v) for v in values]`` for a sequence of floats, a column at a time (module docstring)."""
    dumps = _dumps() if len(values) >= MIN_BATCH else None
    if dumps is None:
        return [_repr(v) for v in values]
    column = np.asarray(values, dtype=np.float64)
    texts = _texts(dumps, column)
    _rewrite(dumps, column, np.abs(column), texts)
    return texts


def repr_rows(values: np.ndarray, holes: np.ndarray, fills: np.ndarray) -> list[str]:
    """The lines of a table of numbers: for each row of ``values`` (a 2-D float64 array), the
    ``repr`` of each value joined by ``,`` -- except where ``holes`` (a bool array of the same
    shape) is set, whose cell is ``fills``' (an object array of the same shape, of text, read
    where ``holes`` is set; no fill may hold ``[``, which would cut a row).

    orjson writes the whole table at once with NaN (``null``) in the holes and in the cells whose
    text it writes otherwise than ``repr`` (module doc); ``null`` becomes ``%s`` (one byte
    translation: orjson writes no other ``n``, ``u`` or ``l`` in a table of numbers), filled by one
    ``%`` of the holes' texts (``repr``'s for those cells), and the table is cut into rows at
    ``],[``: no Python object is made for the other cells. Without orjson's agreement (or for
    fewer than :data:`MIN_BATCH` cells) each cell is formatted by ``repr``.
    """
    dumps = _dumps() if values.size >= MIN_BATCH else None
    if dumps is None or not values.shape[1]:
        return [",".join([fill if hole else _repr(float(value)) for value, hole, fill in zip(*row)])
                for row in zip(values.tolist(), holes.tolist(), fills.tolist())]
    return _rows(dumps, values, holes, fills)


def _rows(dumps: Dumps, values: np.ndarray, holes: np.ndarray, fills: np.ndarray) -> list[str]:
    """:func:`repr_rows` through orjson (``dumps``), at least one column."""
    if not len(values):
        return []
    magnitude = np.abs(values)
    cells = fills.copy()
    spaced = holes.copy()
    for mask, form in ((~holes & (magnitude >= PAD) & (magnitude < TINY), _padded),
                       (~holes & (magnitude >= TINY) & (magnitude < LOW), _positional),
                       (~holes & ~np.isfinite(magnitude), _reprs)):
        if mask.any():
            cells[mask] = np.array(form(dumps, values[mask]), dtype=object)
            spaced |= mask
    written = dumps(np.where(spaced, np.nan, values))
    if not spaced.any():
        return written.decode()[2:-2].split("],[")
    # every "null" becomes "%s": n -> %, u -> s, l dropped (letters no number of orjson's holds),
    # one byte table pass (half a str.replace's cost)
    text = written.translate(_PLACES, b"l").decode() % tuple(cells[spaced].tolist())
    return text[2:-2].split("],[")


__all__ = ["HIGH", "LOW", "MIN_BATCH", "PAD", "TINY", "repr_rows", "repr_texts"]
