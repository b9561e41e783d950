"""Vectorised text rendering of numeric columns (no per-row Python loop).

Used by the single-operator detail files, which hold one row per tensor element (up to
1,000,000 rows per file). Each column is rendered into a ``(rows, width)`` uint8 matrix of
ASCII bytes, right-aligned, where unused leading cells hold :data:`PAD` (byte 0, which never
appears in the output text). :func:`join_rows` concatenates the blocks left to right, appends a
newline column and drops every PAD byte -- one boolean mask over the whole matrix.

Number formats:

- :func:`int_block` -- non-negative integers in decimal (``%d``);
- :func:`fixed6_block` -- floats exactly as Python's ``'%.6f' % v`` prints them, including the
  sign of negative values that round to zero (``-0.000000``) and round-half-even on exact binary
  ties. ``|v| * 1e6`` is computed with an error-free product (Dekker's TwoProduct) so that the
  rounding decision is made on the exact value, not on the rounded float64 product. Values with
  ``|v| >= 4e9`` (whose scaled value would not fit the float64 integer range exactly) and tokens
  are formatted one by one in Python; they are rare.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

#: Filler byte of unused cells; removed by :func:`join_rows`.
PAD = 0

_SCALE = 1_000_000.0
#: Above this magnitude the vectorised path hands over to Python formatting.
_FAST_LIMIT = 4.0e9
#: Veltkamp splitting constant for float64 (2**27 + 1).
_SPLIT = 134217729.0
_DIGIT0 = ord("0")

_FRACTIONS: np.ndarray | None = None


def _fraction_table() -> np.ndarray:
    """``table[k]`` = the 8 bytes ``.dddddd`` + PAD of the fraction k (0 <= k < 10**6), as uint64.

    Built once (8 MB); one gather then renders a whole column's fractions.
    """
    global _FRACTIONS
    if _FRACTIONS is None:
        k = np.arange(1_000_000, dtype=np.int64)
        table = np.zeros((1_000_000, 8), dtype=np.uint8)
        table[:, 0] = ord(".")
        for i in range(6):
            table[:, 1 + i] = _DIGIT0 + (k // 10 ** (5 - i)) % 10
        _FRACTIONS = table.view(np.uint64).reshape(-1)
    return _FRACTIONS


def const_block(rows: int, text: str | bytes) -> np.ndarray:
    """Every row holds ``text`` (e.g. a separator)."""
    data = text.encode() if isinstance(text, str) else text
    return np.broadcast_to(np.frombuffer(data, dtype=np.uint8), (rows, len(data)))


_INTS: np.ndarray | None = None


def _int_table() -> np.ndarray:
    """``table[k]`` = ``str(k)`` right-aligned in 8 bytes, PAD on the left (0 <= k < 10**6)."""
    global _INTS
    if _INTS is None:
        k = np.arange(1_000_000, dtype=np.int64)
        table = np.zeros((1_000_000, 8), dtype=np.uint8)
        for i in range(6):
            power = 10 ** (5 - i)
            table[:, 2 + i] = np.where(k >= power, _DIGIT0 + (k // power) % 10, PAD)
        table[0, 7] = _DIGIT0
        _INTS = table.view(np.uint64).reshape(-1)
    return _INTS


def _lookup(table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    return table[keys].view(np.uint8).reshape(keys.shape[0], 8)


def int_block(values: np.ndarray) -> np.ndarray:
    """Non-negative integers as decimal text (no leading zeros; 0 prints ``0``).

    Table lookups of 6 digits at a time (two tables of 10**6 entries, built once).
    """
    v = np.asarray(values, dtype=np.int64).reshape(-1)
    rows = v.shape[0]
    if rows and int(v.min()) < 0:
        raise ValueError("int_block renders non-negative integers only")
    top = int(v.max()) if rows else 0
    width = len(str(top))
    if top < 1_000_000:
        return _lookup(_int_table(), v)[:, 8 - width:]
    hi, lo = np.divmod(v, 1_000_000)
    head = int_block(hi)
    out = np.empty((rows, head.shape[1] + 6), dtype=np.uint8)
    out[:, :head.shape[1]] = head
    out[:, head.shape[1]:] = _lookup(_fraction_table(), lo)[:, 1:7]  # zero-padded 6 digits
    small = hi == 0
    if small.any():
        out[small] = PAD
        out[small, head.shape[1]:] = _lookup(_int_table(), lo[small])[:, 2:]
    return out


def _two_product_error(a: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``a * 1e6 - p`` exactly (sign and zero-ness are what matter), with ``p = fl(a * 1e6)``."""
    c = _SPLIT * a
    hi = c - (c - a)
    lo = a - hi
    return (hi * _SCALE - p) + lo * _SCALE


def _scaled_round(a: np.ndarray) -> np.ndarray:
    """``round_half_even(a * 1e6)`` on the exact product, as int64 (``0 <= a < 4e9``)."""
    p = a * _SCALE
    q = np.rint(p)
    floor = np.floor(p)
    tie = (p - floor) == 0.5
    if tie.any():
        err = _two_product_error(a[tie], p[tie])
        qt = q[tie]
        qt = np.where(err > 0, floor[tie] + 1.0, np.where(err < 0, floor[tie], qt))
        q[tie] = qt
    return q.astype(np.int64)


def fixed6_block(
    values: np.ndarray,
    *,
    suffix: str = "",
    tokens: Sequence[tuple[np.ndarray, str]] = (),
    nan: str = "nan",
    posinf: str = "inf",
    neginf: str = "-inf",
) -> np.ndarray:
    """Floats as ``'%.6f' + suffix``; non-finite values as ``nan`` / ``inf`` / ``-inf`` + suffix.

    ``tokens``: ``(mask, text)`` pairs whose rows get ``text`` instead (no suffix added; later
    pairs win). Returns the right-aligned ``(rows, width)`` byte matrix.
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    rows = v.shape[0]
    overrides: list[tuple[np.ndarray, bytes]] = []
    finite = np.isfinite(v)
    mag = np.abs(v)
    fast = finite & (mag < _FAST_LIMIT)
    if not finite.all():
        overrides.append((np.isnan(v), (nan + suffix).encode()))
        overrides.append((v == np.inf, (posinf + suffix).encode()))
        overrides.append((v == -np.inf, (neginf + suffix).encode()))
    slow_rows = np.flatnonzero(finite & ~fast)
    slow_text = [("%.6f" % float(v[i]) + suffix).encode() for i in slow_rows]
    for mask, text in tokens:
        overrides.append((np.asarray(mask, dtype=bool).reshape(-1), text.encode()))

    sfx = suffix.encode()
    q = _scaled_round(np.where(fast, mag, 0.0))
    whole = q // 1_000_000
    frac = q % 1_000_000
    head = int_block(whole)
    core = 1 + head.shape[1] + 7 + max(1, len(sfx))  # sign, digits, ".dddddd", suffix (or one PAD)
    width = max([core] + [len(t) for _, t in overrides] + [len(t) for t in slow_text])
    out = np.full((rows, width), PAD, dtype=np.uint8)
    start = width - core
    out[:, start] = np.where(np.signbit(v), ord("-"), PAD)
    pos = start + 1
    out[:, pos:pos + head.shape[1]] = head
    pos += head.shape[1]
    out[:, pos:pos + 8] = _fraction_table()[frac].view(np.uint8).reshape(rows, 8)
    if sfx:
        out[:, pos + 7:pos + 7 + len(sfx)] = np.frombuffer(sfx, dtype=np.uint8)
    for i, text in zip(slow_rows, slow_text):
        out[i] = PAD
        out[i, width - len(text):] = np.frombuffer(text, dtype=np.uint8)
    for mask, text in overrides:
        place(out, mask, text)
    return out


def place(block: np.ndarray, mask: np.ndarray, text: str | bytes) -> None:
    """Overwrite the rows of ``block`` selected by ``mask`` with ``text``, right-aligned."""
    data = text.encode() if isinstance(text, str) else text
    if not mask.any():
        return
    if len(data) > block.shape[1]:
        raise ValueError(f"token {data!r} is wider than its column ({block.shape[1]})")
    block[mask] = PAD
    if data:
        block[np.ix_(mask, np.arange(block.shape[1] - len(data), block.shape[1]))] = np.frombuffer(data, dtype=np.uint8)


def token_block(rows: int, mask_text: Iterable[tuple[np.ndarray, str]], default: str = "") -> np.ndarray:
    """A text column: ``default`` everywhere, ``text`` where ``mask`` (later pairs win)."""
    pairs = [(np.asarray(m, dtype=bool).reshape(-1), t.encode()) for m, t in mask_text]
    width = max([len(default.encode())] + [len(t) for _, t in pairs] + [1])
    out = np.full((rows, width), PAD, dtype=np.uint8)
    if default:
        place(out, np.ones(rows, dtype=bool), default)
    for mask, text in pairs:
        place(out, mask, text)
    return out


def join_rows(blocks: Sequence[np.ndarray], *, newline: str = "\n") -> bytes:
    """Concatenate column blocks left to right, end each row with ``newline``, drop PAD bytes."""
    if not blocks:
        return b""
    rows = blocks[0].shape[0]
    if rows == 0:
        return b""
    parts = list(blocks) + [const_block(rows, newline)]
    matrix = np.concatenate(parts, axis=1)
    flat = matrix.reshape(-1)
    return flat[flat != PAD].tobytes()


__all__ = ["PAD", "const_block", "fixed6_block", "int_block", "join_rows", "place", "token_block"]
