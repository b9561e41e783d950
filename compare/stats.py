"""Statistics-only comparison: compare the statistics two dumps recorded (or that a tensor has).

Used when a side holds statistics and no tensor data (MindSpore ``statistic.csv`` with
``saved_data: statistic``, TensorFlow NPU ``dump_data=stats``). For every :class:`Pair` the
statistics of each side are taken from its CSV row (``TensorRef.stats``) or, for a side
with tensor data, computed from the tensor (:func:`tensor_stats`); the statistics **both** sides
have are compared: for each, the left value, the right value, ``diff = left - right`` and
``rel = |diff| / |right|`` (``0`` when both are 0, ``inf`` when only the right is 0). Text
statistics (``md5``, ``sha1``) are compared for equality (``diff`` ``same`` / ``different``).

Definitions of computed statistics (float64, bf16/fp16 widened exactly; complex: real part):

* ``max`` / ``min`` over the non-NaN elements (infinities included); ``None`` if all are NaN;
* ``avg`` and ``l2norm`` over the finite elements; ``None`` if none is finite;
* ``count`` elements; ``nan_count``, ``neg_inf_count``, ``pos_inf_count``, ``zero_count``;
  ``negative_count`` / ``positive_count`` (MindSpore's "Negative/Positive Zero Count": elements
  below / above zero, infinities included);
* ``md5`` of the tensor bytes as stored.

Layouts: statistics are layout-free, so no layout conversion is done -- a device-layout side
(``NC1HWC0`` statistics or tensor) is compared as stored. Its padding elements count (a reason
says so when the element counts differ: :func:`count_reason`).

Mixed sides: a run where some tensors have statistics and no data (``statistic.csv`` beside a
few ``.npy`` files) is compared by statistics as a whole (``stats_only``); its tensors with data
use their recorded row, else statistics computed from the data, so every pair is compared.

Edge-case policy: a statistic recorded as ``null`` counts as absent on that side; a tensor that
cannot be read makes its row NOT_COMPARABLE with the reason; pairs without a counterpart keep
their status and reason (rows are never dropped).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from convert.layouts.formats import PLAIN_AXES

from .errors import CompareError
from .records import Pair, PairStatus, TensorRef

#: Column order of the statistics (others follow in name order).
STAT_ORDER = ("max", "min", "avg", "l2norm", "count", "nan_count", "neg_inf_count", "pos_inf_count", "zero_count",
              "negative_count", "positive_count", "md5", "sha1")
TEXT_STATS = frozenset({"md5", "sha1"})
#: Statistics computed from a tensor (md5 only when the other side recorded one).
COMPUTED = ("max", "min", "avg", "l2norm", "count", "nan_count", "neg_inf_count", "pos_inf_count", "zero_count",
            "negative_count", "positive_count")


def tensor_stats(array: np.ndarray, *, with_hash: bool = False) -> dict[str, float | str | None]:
    """The statistics of an array (definitions in the module doc)."""
    raw = np.asarray(array)
    x = raw
    if np.iscomplexobj(x):
        x = x.real
    if x.dtype == np.bool_:
        x = x.astype(np.uint8)
    flat = np.asarray(x, dtype=np.float64).reshape(-1)
    nan = np.isnan(flat)
    finite = np.isfinite(flat)
    not_nan = flat[~nan]
    values = flat[finite]
    out: dict[str, float | str | None] = {
        "max": float(not_nan.max()) if not_nan.size else None,
        "min": float(not_nan.min()) if not_nan.size else None,
        "avg": float(values.mean()) if values.size else None,
        "l2norm": float(math.sqrt(float(np.dot(values, values)))) if values.size else None,
        "count": float(flat.size),
        "nan_count": float(nan.sum()),
        "neg_inf_count": float(np.isneginf(flat).sum()),
        "pos_inf_count": float(np.isposinf(flat).sum()),
        "zero_count": float((flat == 0).sum()),
        "negative_count": float((not_nan < 0).sum()),
        "positive_count": float((not_nan > 0).sum()),
    }
    if with_hash:
        out["md5"] = hashlib.md5(np.ascontiguousarray(raw).tobytes()).hexdigest()
    return out


@dataclass
class StatDiff:
    """One statistic of one row: both values and their differences (``None`` = not available)."""

    left: float | str | None
    right: float | str | None
    diff: float | str | None = None
    rel: float | None = None


def diff_stat(name: str, left: float | str | None, right: float | str | None) -> StatDiff:
    """Left, right, ``left - right`` and ``|diff| / |right|`` (text statistics: same/different)."""
    if left is None or right is None:
        return StatDiff(left, right)
    if name in TEXT_STATS or isinstance(left, str) or isinstance(right, str):
        return StatDiff(left, right, "same" if str(left) == str(right) else "different")
    a, b = float(left), float(right)
    if math.isnan(a) or math.isnan(b):
        return StatDiff(a, b, math.nan, math.nan)
    if math.isinf(a) or math.isinf(b):
        diff = 0.0 if a == b else (a - b if not (math.isinf(a) and math.isinf(b)) else math.inf)
        return StatDiff(a, b, diff, 0.0 if a == b else math.inf)
    diff = a - b
    if b == 0:
        rel = 0.0 if diff == 0 else math.inf
    else:
        rel = abs(diff) / abs(b)
    return StatDiff(a, b, diff, rel)


@dataclass
class StatsRow:
    """The statistics comparison of one :class:`Pair` (``values`` keyed by statistic name).

    ``left_source`` / ``right_source`` say where each side's numbers come from (the CSV and
    row, or ``computed from {file}``). ``rank`` / ``iteration`` (and ``graph`` when graphs
    are compared in turn) are set in compare-each-in-turn mode.
    """

# duplicates: the row fields mirror MetricRow's on purpose (same report columns for the statistics mode); the
# two records stay separate because their values differ (floats vs statistics)
    index: int
    op_type: str | None
    left_op: str
    right_op: str
    tensor_id: str | None
    left_dtype: str | None = None
    right_dtype: str | None = None
    shape: tuple[int, ...] | None = None
    values: dict[str, StatDiff] = field(default_factory=dict)
    left_source: str = ""
    right_source: str = ""
    reasons: list[str] = field(default_factory=list)
    status: PairStatus = PairStatus.COMPARED
    rank: int | None = None
    iteration: int | None = None
    graph: int | None = None

    def __bool__(self) -> bool:
        return self.status is PairStatus.COMPARED


def side_stats(ref: TensorRef, wanted: Iterable[str] = ()) -> tuple[dict[str, float | str | None], str]:
    """``(statistics, source)`` of one side: recorded ones, else computed from the tensor.

    Raises :class:`CompareError` when the tensor must be read and cannot be.
    """
    recorded = ref.stats
    if recorded:
        return dict(recorded), ref.stats_source or ref.path.name
    array = ref.load()
    return tensor_stats(array, with_hash="md5" in set(wanted)), f"computed from {ref.path.name}"


def ordered_stats(names: Iterable[str]) -> list[str]:
    """Statistic names in report order (:data:`STAT_ORDER`, then the others by name)."""
    names = set(names)
    known = [n for n in STAT_ORDER if n in names]
    return known + sorted(names - set(STAT_ORDER))


def compare_stats_pair(pair: Pair) -> StatsRow:
    """Compare the statistics of one pair (never raises for one pair's problem)."""
    row = StatsRow(index=pair.index, op_type=pair.op_type, left_op=pair.left_op, right_op=pair.right_op,
                   tensor_id=pair.tensor_id, left_dtype=pair.left.dtype if pair.left else None,
                   right_dtype=pair.right.dtype if pair.right else None,
                   shape=tuple(pair.left.shape) if pair.left else (tuple(pair.right.shape) if pair.right else None),
                   status=pair.status)
    if pair.reason:
        row.reasons.append(pair.reason)
    if pair.status is not PairStatus.COMPARED or pair.left is None or pair.right is None:
        if row.status is PairStatus.COMPARED:
            row.status = PairStatus.MISSING_LEFT if pair.left is None else PairStatus.MISSING_RIGHT
        return row
# duplicates: the two sides' statistics are read in turn (left, right): alike by shape, each with its own
# side's error
    other_recorded = {"left": set(pair.right.stats or {}), "right": set(pair.left.stats or {})}
    try:
        left, row.left_source = side_stats(pair.left, other_recorded["left"])
    except CompareError as exc:
        row.status = PairStatus.NOT_COMPARABLE
        row.reasons.append(f"left tensor unreadable: {exc}")
        return row
    try:
        right, row.right_source = side_stats(pair.right, other_recorded["right"])
    except CompareError as exc:
        row.status = PairStatus.NOT_COMPARABLE
        row.reasons.append(f"golden tensor unreadable: {exc}")
        return row
    common = ordered_stats(left.keys() & right.keys())
    if not common:
        row.status = PairStatus.NOT_COMPARABLE
        row.reasons.append(f"no statistic recorded on both sides (left: {', '.join(ordered_stats(left)) or 'none'}; "
                           f"right: {', '.join(ordered_stats(right)) or 'none'})")
        return row
    for name in common:
        row.values[name] = diff_stat(name, left[name], right[name])
    if pair.left.shape and pair.right.shape and math.prod(pair.left.shape) != math.prod(pair.right.shape):
        row.reasons.append(count_reason(pair.left, pair.right))
    return row


#: Layouts without padding (a tensor in any other format, a device layout, may hold padding).
_PLAIN_LAYOUTS = PLAIN_AXES | {"", "RESERVED"}


def count_reason(left: TensorRef, right: TensorRef) -> str:
    """The reason of a row whose sides hold different element counts; when a side is in a device
    layout (``NC1HWC0``, ``FRACTAL_Z`` ...) it says that its padding elements are counted (the
    statistics are taken as stored, without layout conversion: max, min and l2norm agree when
    the padding is zero, count, zero_count and avg do not)."""
    text = f"element counts differ: left {list(left.shape)}, right {list(right.shape)}"
    padded = [f"{side} is {ref.format}" for side, ref in (("left", left), ("right", right))
              if (ref.format or "").upper() not in _PLAIN_LAYOUTS]
    if padded:
        text += (f" ({' and '.join(padded)}: statistics are taken as stored, padding included, without layout "
                 "conversion; count, zero_count and avg include the padding elements)")
    return text


@dataclass
class StatsResult:
    """Rows of a statistics comparison and the statistic columns (in report order)."""

    rows: list[StatsRow]
    stats: list[str]
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        counts = {status.value: 0 for status in PairStatus}
        for row in self.rows:
            counts[row.status.value] += 1
        return counts


def compare_stats(pairs: Sequence[Pair]) -> StatsResult:
    """Compare every pair's statistics; columns are the statistics any row compared."""
    rows = []
    for pair in pairs:
        try:
            rows.append(compare_stats_pair(pair))
        except Exception as exc:  # noqa: BLE001 - one pair must never abort the run
            row = StatsRow(index=pair.index, op_type=pair.op_type, left_op=pair.left_op, right_op=pair.right_op,
                           tensor_id=pair.tensor_id, status=PairStatus.NOT_COMPARABLE)
            row.reasons.append(f"internal error while comparing statistics of {pair.tensor_id or pair.left_op}: "
                               f"{type(exc).__name__}: {exc} (please report)")
            rows.append(row)
    names = ordered_stats({n for row in rows for n in row.values})
    return StatsResult(rows, names)


def needs_stats_mode(left: object, right: object) -> bool:
    """Whether a comparison must be statistics-only: a side has tensors with statistics and no
    data (``stats_only``; the whole side, or some of its tensors beside tensor files)."""
    return bool(left.stats_only or right.stats_only)


__all__ = ["STAT_ORDER", "StatDiff", "StatsResult", "StatsRow", "compare_stats", "compare_stats_pair", "count_reason",
           "diff_stat", "needs_stats_mode", "ordered_stats", "side_stats", "tensor_stats"]
