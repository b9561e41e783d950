"""Python's ``repr`` of many floats at once: the shortest text that reads back as the same float64.

A report of statistics rows prints 10-16 floats a row, and ``float.__repr__`` costs 0.35-0.5 us
a float: at 10^5-10^6 rows the float text is a large share of a table. :func:`repr_texts` gives
the texts of a whole column at once through orjson (a well-kept JSON library; its float writer is
a native shortest round-trip formatter), ~4x faster a float, and the same text.

Policy -- the same text as ``repr``, always:

- orjson's **digits** are the shortest round-trip digits, as ``repr``'s (both pick, among the
  shortest texts that read back as the value, the one nearest to it). Its **layout** is ``repr``'s
  for ``1e-4 <= |x| < 1e16`` and for zero (positional, ``.0`` on integral values, ``-0.0``). Below
  ``1e-5`` and from ``1e16`` on, both write the exponent form (``1.5e-10``, ``1e+16``), orjson with
  the exponent's digits unpadded (``1e-7`` where ``repr`` writes ``1e-07``): those texts are
  padded (:func:`_batch`). For ``1e-5 <= |x| < 1e-4`` orjson writes positionally (``0.000099``
  where ``repr`` writes ``9.9e-05``), and NaN and the infinities as ``null``: those values are
  written by ``repr`` itself. (Statistics' differences are often below 1e-4: a third of the
  floats of a statistics run.)
- The first call checks orjson's texts (padded) against ``repr`` on a fixed sample (range edges,
  halfway cases, powers of two, subnormals, 2,000 seeded random values of the range and 2,000 of
  the whole float64 range); if any text differs (a future orjson that formats otherwise), every
  float goes through ``repr``.
  tests/compare/reports/test_float_text.py holds the two equal over all float64 (hypothesis).
- Short columns (< :data:`MIN_BATCH` values) go through ``repr``: the call and the range mask
  cost more than they save.
- The values must be floats (``float`` or a subclass such as ``numpy.float64``, whose ``repr`` is
  taken as ``float.__repr__``'s); anything else is a caller's bug (``TypeError``).
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

_repr = float.__repr__
_checked: list[bool] = []  # [agrees] once checked


def _sample() -> list[float]:
    """Values whose text would show a different formatter: the range edges, halfway and
    round-trip-hard cases, integral values up to 2^53, exponent forms of one to three digits,
    subnormals, and seeded random values of the positional range and of the whole float64 range;
    the values orjson is used for (:func:`_batch`)."""
    edges = [LOW, 0.00010000000000000002, 0.00011, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 0.5, 1.0, 1.5, 2.0, 10.0,
             123456789.125, 2.0 ** 52, 2.0 ** 53, 2.0 ** 53 - 1, 1e15, 1e15 + 0.5, 9999999999999998.0,
             5e-5 + 5e-5, 0.1 + 0.2, 1.0 - 2.0 ** -53, 9007199254740993.0, 4.35, 0.30000000000000004,
             1.7976931348623157e15, 0.0, -0.0, -1.5, -0.0001, 9.999999999999999e-06, 1e-6, -1e-7, 1.5e-10,
             1e-99, 1e-100, 1e-300, 2.2250738585072014e-308, 5e-324, -5e-324, HIGH, -HIGH, 1.5e17, 1e22, 1e99,
             1e100, 1e300, 1.7976931348623157e308]
    rnd = random.Random(20261128)
    spread = [rnd.uniform(-1.0, 1.0) * 10.0 ** rnd.randint(-3, 15) for _ in range(2000)]
    spread += [rnd.uniform(-10.0, 10.0) * 10.0 ** rnd.randint(-320, 300) for _ in range(2000)]
    return [v for v in edges + spread if not TINY <= abs(v) < LOW]


def _batch(dumps: Callable[[object], bytes], values: list[float], magnitude: np.ndarray) -> list[str]:
    """orjson's texts of the values (``magnitude`` their absolute values), each one-digit exponent
    padded to two as ``repr`` writes it (``1e-7`` -> ``1e-07``). Only the values of the exponent
    form are looked at (a ``str.replace`` or a regular expression over the whole text costs more
    than the formatting saves: each scans every character)."""
    texts = dumps(values).decode()[1:-1].split(",")
    for i in np.flatnonzero(((magnitude < TINY) & (magnitude > 0.0)) | (magnitude >= HIGH)).tolist():
        text = texts[i]
        if text[-2] in "+-":
            texts[i] = text[:-1] + "0" + text[-1]
    return texts


def _dumps() -> Callable[[object], bytes] | None:
    """orjson's ``dumps`` when it writes the sample as ``repr`` does, else None (checked once)."""
    if not _checked:
        sample = _sample()
        _checked.append(_batch(orjson.dumps, sample, np.abs(np.asarray(sample))) == [_repr(v) for v in sample])
    return orjson.dumps if _checked[0] else None


def repr_texts(values: Sequence[float]) -> list[str]:
    """``[repr(v) for v in values]`` for a sequence of floats, a column at a time (module docstring)."""
    dumps = _dumps() if len(values) >= MIN_BATCH else None
    if dumps is None:
        return [_repr(v) for v in values]
    magnitude = np.abs(np.asarray(values, dtype=np.float64))
    try:
        texts = _batch(dumps, values if type(values) is list else list(values), magnitude)
    except TypeError:  # a float subclass orjson does not take (numpy.float64): the same values as floats
        texts = _batch(dumps, [float(v) for v in values], magnitude)
    outside = np.flatnonzero(((magnitude >= TINY) & (magnitude < LOW)) | ~np.isfinite(magnitude))
    for i in outside.tolist():
        texts[i] = _repr(values[i])
    return texts


__all__ = ["HIGH", "LOW", "MIN_BATCH", "TINY", "repr_texts"]
