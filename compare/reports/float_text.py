"""Python's ``repr`` of many floats at once: the shortest text that reads back as the same float64.

A report of statistics rows prints 10-16 floats a row, and ``float.__repr__`` costs 0.35-0.5 us
a float: at 10^5-10^6 rows the float text is a large share of a table. :func:`repr_texts` gives
the texts of a whole column at once through orjson (a well-kept JSON library; its float writer is
a native shortest round-trip formatter), ~4x faster a float, and the same text.

Policy -- the same text as ``repr``, always:

- orjson's **digits** are the shortest round-trip digits, as ``repr``'s (both pick, among the
  shortest texts that read back as the value, the one nearest to it). Its **layout** is ``repr``'s
  only for ``1e-4 <= |x| < 1e16`` and for zero (positional, ``.0`` on integral values, ``-0.0``):
  beyond, orjson's exponent form differs between its versions (``1e16`` / ``1e+16``) and it writes
  small values positionally (``0.000099`` where ``repr`` writes ``9.9e-05``), and it writes NaN and
  the infinities as ``null``. Every float outside that range is written by ``repr`` itself.
- The first call checks orjson against ``repr`` on a fixed sample (range edges, halfway cases,
  powers of two, 2,000 seeded random values of the range); if any text differs (a future orjson
  that formats otherwise), every float goes through ``repr``.
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
#: The magnitudes orjson writes as ``repr`` does (zero too), see the module docstring.
LOW, HIGH = 1e-4, 1e16

_repr = float.__repr__
_checked: list[bool] = []  # [agrees] once checked


def _sample() -> list[float]:
    """Values whose text would show a different formatter: the range edges, halfway and
    round-trip-hard cases, integral values up to 2^53, and seeded random values of the range."""
    edges = [LOW, 0.00010000000000000002, 0.00011, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 0.5, 1.0, 1.5, 2.0, 10.0,
             123456789.125, 2.0 ** 52, 2.0 ** 53, 2.0 ** 53 - 1, 1e15, 1e15 + 0.5, 9999999999999998.0,
             5e-5 + 5e-5, 0.1 + 0.2, 1.0 - 2.0 ** -53, 9007199254740993.0, 4.35, 0.30000000000000004,
             1.7976931348623157e15, 0.0, -0.0, -1.5, -0.0001]
    rnd = random.Random(20261128)
    spread = [rnd.uniform(-1.0, 1.0) * 10.0 ** rnd.randint(-3, 15) for _ in range(2000)]
    return [v for v in edges + spread if v == 0.0 or LOW <= abs(v) < HIGH]


def _dumps() -> Callable[[object], bytes] | None:
    """orjson's ``dumps`` when it writes the sample as ``repr`` does, else None (checked once)."""
    if not _checked:
        sample = _sample()
        _checked.append(orjson.dumps(sample).decode()[1:-1].split(",") == [_repr(v) for v in sample])
    return orjson.dumps if _checked[0] else None


def repr_texts(values: Sequence[float]) -> list[str]:
    """``[repr(v) for v in values]`` for a sequence of floats, a column at a time (module docstring)."""
    dumps = _dumps() if len(values) >= MIN_BATCH else None
    if dumps is None:
        return [_repr(v) for v in values]
    try:
        texts = dumps(values if type(values) is list else list(values)).decode()[1:-1].split(",")
    except TypeError:  # a float subclass orjson does not take (numpy.float64): the same values as floats
        texts = dumps([float(v) for v in values]).decode()[1:-1].split(",")
    array = np.asarray(values, dtype=np.float64)
    magnitude = np.abs(array)
    outside = np.flatnonzero(~((magnitude >= LOW) & (magnitude < HIGH)) & (array != 0.0))  # NaN too
    for i in outside.tolist():
        texts[i] = _repr(values[i])
    return texts


__all__ = ["HIGH", "LOW", "MIN_BATCH", "repr_texts"]
