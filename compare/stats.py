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

Edge-case policy: a statistic recorded as ``null`` (msprobe writes ``"Mean": null`` and
``"Norm": null`` for integer tensors) is kept as not available on that side, and the row's
reason names it; a tensor that cannot be read makes its row NOT_COMPARABLE with the reason;
pairs without a counterpart keep their status and reason (rows are never dropped). Checksums
(``md5``, ``sha1``, msprobe's ``checksum``: a CRC-32 or XOR value, and for a 0-d float in xor mode
the value itself) are compared for equality only, whatever their type.

Not comparable (:func:`mismatch_reason`): two sides whose data-type classes differ (bool, integer,
float, complex) or whose shapes hold different element counts (plain layouts; a side in a device
layout holds padding, :func:`count_reason`) are NOT_COMPARABLE with the reason; their statistics
are still shown, but a strict gate counts the row as not compared. Shapes that differ with the
same element count (a reshaped view) are compared, and the reason says so (:func:`shape_note`).

**Rows for gates, JSON and the API** (:meth:`compare.stats_table.StatsTable.metric_row`): every statistics row is also a
:class:`~compare.records.MetricRow` whose ``metrics`` hold, for each statistic ``S`` compared
(label ``L`` from :data:`STAT_LABELS`: ``Max``, ``Min``, ``Avg``, ``L2Norm`` ...):
``LDiff = |left - right|`` (the magnitude: the table keeps the sign) and ``LRelDiff = |left -
right| / |right|``; a checksum gives ``LDiff`` = 0.0 (same) or 1.0 (different) and no RelDiff. A
statistic not available on a side is ``None`` (not computed) and is listed in
``MetricRow.undefined`` when the side recorded it as ``null`` (gates then do not check it).
"""

from __future__ import annotations

import functools
import hashlib
import math
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

import numpy as np

from convert.layouts.formats import PLAIN_AXES

from .errors import CompareError
from .records import ArgumentDiff, MetricRow, MsprobeCells, Pair, PairStatus, RowGrade, StatDiff, TensorRef

#: Column order of the statistics (others follow in name order).
STAT_ORDER = ("max", "min", "avg", "l2norm", "count", "nan_count", "neg_inf_count", "pos_inf_count", "zero_count",
              "negative_count", "positive_count", "md5", "sha1")
#: Statistics compared for equality only (``same`` / ``different``): hashes and checksums.
TEXT_STATS = frozenset({"md5", "sha1", "checksum"})
#: Report / metric label of the canonical statistics (others: :func:`stat_label`).
STAT_LABELS = {
    "max": "Max",
    "min": "Min",
    "avg": "Avg",
    "l2norm": "L2Norm",
    "count": "Count",
    "nan_count": "NanCount",
    "neg_inf_count": "NegativeInfCount",
    "pos_inf_count": "PositiveInfCount",
    "zero_count": "ZeroCount",
    "negative_count": "NegativeCount",
    "positive_count": "PositiveCount",
    "md5": "MD5",
    "sha1": "SHA1",
    "checksum": "Checksum",
}
#: Statistics computed from a tensor (md5 only when the other side recorded one).
COMPUTED = ("max", "min", "avg", "l2norm", "count", "nan_count", "neg_inf_count", "pos_inf_count", "zero_count",
            "negative_count", "positive_count")


def stat_label(name: str) -> str:
    """The label of a statistic (``l2norm`` -> ``L2Norm``; known ones from :data:`STAT_LABELS`)."""
    return STAT_LABELS.get(name, "".join(part.capitalize() for part in name.replace("-", "_").split("_")))


def stat_metrics(name: str) -> tuple[str, ...]:
    """The row metrics of one statistic: ``(LDiff, LRelDiff)``, or ``(LDiff,)`` for a checksum."""
    known = _METRICS_OF.get(name)
    if known is not None:
        return known
    label = stat_label(name)
    return (f"{label}Diff",) if name in TEXT_STATS else (f"{label}Diff", f"{label}RelDiff")


#: :func:`stat_metrics` of the canonical statistics, looked up once per row and statistic.
_METRICS_OF: dict[str, tuple[str, ...]] = {}
_METRICS_OF.update({name: stat_metrics(name) for name in STAT_LABELS})


#: Every statistics metric a gate or a policy may name, in report order (``MaxDiff``,
#: ``MaxRelDiff``, ... ``ChecksumDiff``).
STAT_METRIC_NAMES: tuple[str, ...] = tuple(m for name in STAT_LABELS for m in stat_metrics(name))
#: Statistic metric -> (statistic name, relative?): the inverse of :func:`stat_metrics`.
STAT_METRIC_OF: dict[str, tuple[str, bool]] = {
    metric: (name, metric.endswith("RelDiff")) for name in STAT_LABELS for metric in stat_metrics(name)}


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


def diff_stat(name: str, left: float | str | None, right: float | str | None) -> StatDiff:
    """Left, right, ``left - right`` and ``|diff| / |right|`` (text statistics: same/different).

    The definition for one statistic, any value types: a value ``None`` gives no difference; a
    checksum or a text value ``same`` / ``different``; NaN on a side gives NaN and NaN; an infinity
    on a side gives ``0`` and ``0`` when both are equal, else ``inf`` (two opposite infinities) or
    ``left - right`` and ``rel = inf``; else ``diff = left - right`` and ``rel = |diff| / |right|``
    (``0`` when ``diff`` and ``right`` are 0, ``inf`` when only ``right`` is 0). :func:`stat_diffs`
    computes the same for many statistics at once (floats in numpy columns; this function for
    the others); ``tests/compare/test_stat_columns.py`` holds the two equal."""
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


@dataclass(slots=True)
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
    #: msprobe's Result / Err_message (set with its MetricRow's, :func:`compare.engine.grades.grade_rows`).
    grade: RowGrade | None = None
    #: msprobe's own cells and an argument row's values (copied from its MetricRow's).
    msprobe: MsprobeCells | None = None
    argument: ArgumentDiff | None = None

    def __bool__(self) -> bool:
        return self.status is PairStatus.COMPARED


def stats_row(row: MetricRow) -> StatsRow:
    """The statistics-table row of a row without statistics (a part missing from a run compared
    in turn, :meth:`compare.records.PartReport.row`; an argument row): its names, status, reasons
    and msprobe cells."""
    return StatsRow(row.index, row.op_type, row.left_op, row.right_op, row.tensor_id, row.left_dtype,
                    row.right_dtype, row.shape, reasons=row.reasons, status=row.status, rank=row.rank,
                    iteration=row.iteration, graph=row.graph, grade=row.grade, msprobe=row.msprobe,
                    argument=row.argument)


def side_stats(ref: TensorRef, wanted: Iterable[str] = ()) -> tuple[dict[str, float | str | None], str]:
    """``(statistics, source)`` of one side: recorded ones, else computed from the tensor.

    Raises :class:`CompareError` when the tensor must be read and cannot be.
    """
    recorded = ref.stats
    if recorded:
        return recorded, ref.stats_source or ref.path.name  # read only: never changed here
    array = ref.load()
    return tensor_stats(array, with_hash="md5" in set(wanted)), f"computed from {ref.path.name}"


@dataclass(frozen=True)
class _Common:
    """The statistics two sides both have, in report order, and ``values(stats)``: a statistics
    dict's values of those names, as a tuple (one C call)."""

    names: list[str]
    values: Callable[[dict], tuple]


@functools.lru_cache(maxsize=1024)
def _common_stats(left: tuple[str, ...], right: tuple[str, ...]) -> _Common:
    """:func:`ordered_stats` of the statistics both sides have, remembered (a dump records the
    same few statistic sets for every tensor). The record is shared: never changed."""
    names = ordered_stats(set(left) & set(right))
    if len(names) == 1:
        only = names[0]
        return _Common(names, lambda stats: (stats[only],))
    return _Common(names, operator.itemgetter(*names) if names else lambda stats: ())


def ordered_stats(names: Iterable[str]) -> list[str]:
    """Statistic names in report order (:data:`STAT_ORDER`, then the others by name)."""
    names = set(names)
    known = [n for n in STAT_ORDER if n in names]
    return known + sorted(names - set(STAT_ORDER))


class Prepared(NamedTuple):
    """A statistics row before its values (:func:`prepared_row`): status and reasons in their
    order, each side's source, and the statistics to compare (None when there is nothing to
    compare). A NamedTuple: one is built per row, in C."""

    status: PairStatus
    reasons: tuple[str, ...]
    left_source: str
    right_source: str
    sides: Sides | None


def prepared_row(pair: Pair) -> Prepared:
    """The row of one pair without its values: status and reasons in their order (the pair's own
    reason, a null statistic's, a mismatch's or a shape note), the sources, and the two sides'
    statistics to compare. Raises nothing for a side's problem: an unreadable tensor is the row's
    reason (the row's names, data types and shape are the pair's: :func:`compare.stats_table.compare_stats`)."""
    lref, rref = pair.left, pair.right
    status = pair.status
    reasons = [pair.reason] if pair.reason else []
    if status is not PairStatus.COMPARED or lref is None or rref is None:
        if status is PairStatus.COMPARED:
            status = PairStatus.MISSING_LEFT if lref is None else PairStatus.MISSING_RIGHT
        return Prepared(status, tuple(reasons), "", "", None)
# duplicates: the two sides' statistics are read in turn (left, right): alike by shape, each with its own
# side's error
    try:
        left, left_source = side_stats(lref, rref.stats or ())
    except CompareError as exc:
        reasons.append(f"left tensor unreadable: {exc}")
        return Prepared(PairStatus.NOT_COMPARABLE, tuple(reasons), "", "", None)
    try:
        right, right_source = side_stats(rref, lref.stats or ())
    except CompareError as exc:
        reasons.append(f"golden tensor unreadable: {exc}")
        return Prepared(PairStatus.NOT_COMPARABLE, tuple(reasons), left_source, "", None)
    both = _common_stats(tuple(left), tuple(right))
    common = both.names
    if not common:
        reasons.append(f"no statistic recorded on both sides (left: {', '.join(ordered_stats(left)) or 'none'}; "
                       f"right: {', '.join(ordered_stats(right)) or 'none'})")
        return Prepared(PairStatus.NOT_COMPARABLE, tuple(reasons), left_source, right_source, None)
    lvalues, rvalues = both.values(left), both.values(right)
    floats = (_FLOAT_ONLY.issuperset(map(type, lvalues)) and _FLOAT_ONLY.issuperset(map(type, rvalues))
              and TEXT_STATS.isdisjoint(common))
    if not floats:  # a null statistic is None: never among floats
        null = null_reason(left, right, common)
        if null:
            reasons.append(null)
    sides = Sides(common, lvalues, rvalues, floats)
    if lref.dtype == rref.dtype and lref.format == rref.format and lref.shape == rref.shape:
        # the common case: same data type, layout and shape, nothing to say
        return Prepared(status, tuple(reasons), left_source, right_source, sides)
    mismatch = mismatch_reason(lref, rref)
    if mismatch:
        status = PairStatus.NOT_COMPARABLE
        reasons.append(mismatch)
    elif lref.shape and rref.shape and math.prod(lref.shape) != math.prod(rref.shape):
        reasons.append(count_reason(lref, rref))
    else:
        note = shape_note(lref, rref)
        if note:
            reasons.append(note)
    return Prepared(status, tuple(reasons), left_source, right_source, sides)


#: The value type of :class:`Sides` ``floats``.
_FLOAT_ONLY = frozenset({float})


class Sides(NamedTuple):
    """The statistics both sides of a row have (names in report order) and their values;
    ``floats``: every value a Python float and no checksum among them (:func:`compare.stats_table.compare_stats`
    computes those rows in one numpy column). A NamedTuple: one is built per row, in C."""

    names: list[str]
    left: tuple
    right: tuple
    floats: bool


def null_reason(left: dict, right: dict, common: Sequence[str]) -> str:
    """The reason of a row where a statistic both sides name is ``null`` on a side (msprobe writes
    no mean and norm for integer tensors), ``""`` when there is none."""
    left_null = [stat_label(n) for n in common if left.get(n) is None]
    right_null = [stat_label(n) for n in common if right.get(n) is None]
    if left_null == right_null:
        parts = [f"{', '.join(left_null)} {NULL_STATISTIC} on both sides"] if left_null else []
    else:
        parts = [f"{', '.join(names)} {NULL_STATISTIC} on the {side} side"
                 for side, names in (("left", left_null), ("right", right_null)) if names]
    if not parts:
        return ""
    return "; ".join(parts) + " (msprobe records no mean or norm for integer tensors): not compared, not gated"


class DtypeClass(str, Enum):
    """The kind of numbers a data type holds (:func:`dtype_class`)."""

    BOOL = "bool"
    INTEGER = "integer"
    FLOAT = "float"
    COMPLEX = "complex"


@functools.lru_cache(maxsize=256)
def dtype_class(dtype: str | None) -> DtypeClass | None:
    """The class of a numpy-style data-type name (``int64`` -> INTEGER, ``bfloat16`` / ``float8_*`` /
    ``hifloat8`` -> FLOAT); None for a name it cannot tell (``DT_STRING``, ``unknown``)."""
    text = (dtype or "").lower()
    if text in ("bool", "uint1"):
        return DtypeClass.BOOL
    if text.startswith("complex"):
        return DtypeClass.COMPLEX
    if text.startswith(("float", "bfloat", "hifloat", "half", "double")):
        return DtypeClass.FLOAT
    if text.startswith(("int", "uint")):
        return DtypeClass.INTEGER
    return None


def mismatch_reason(left: TensorRef, right: TensorRef, *, tensors: bool = False) -> str:
    """Why a pair cannot be compared as the same tensor, ``""`` when it can: data-type classes
    that differ (bool / integer / float / complex; ``float16`` vs ``float32`` is the same class),
    or, for statistics rows (not ``tensors``: the engine refuses those itself), element counts
    that differ while both sides are in plain layouts (a device-layout side holds padding:
    :func:`count_reason`). Shapes with the same element count are :func:`shape_note`'s."""
    reasons = []
    left_class, right_class = dtype_class(left.dtype), dtype_class(right.dtype)
    if left_class is not None and right_class is not None and left_class is not right_class:
        reasons.append(f"data types differ in kind: left {left.dtype} ({left_class.value}), right {right.dtype} "
                       f"({right_class.value})")
    plain = all((ref.format or "").upper() in _PLAIN_LAYOUTS for ref in (left, right))
    if not tensors and plain and math.prod(left.shape) != math.prod(right.shape):
        reasons.append(f"shapes differ: left {list(left.shape)}, right {list(right.shape)} "
                       f"({math.prod(left.shape)} and {math.prod(right.shape)} elements)")
    if not reasons:
        return ""
    shown = "metrics" if tensors else "statistics"
    return "; ".join(reasons) + f": {NOT_SAME_TENSOR} ({shown} shown for reference)"


#: The words of a null statistic's reason (:func:`null_reason`), which a saved table read back knows.
NULL_STATISTIC = "recorded as null"
#: The words of a mismatched pair's reason (:func:`mismatch_reason`): a saved table read back
#: (:mod:`compare.reports.saved`) knows such a row was not comparable though its cells hold numbers.
NOT_SAME_TENSOR = "not the same tensor, not comparable"


def shape_note(left: TensorRef, right: TensorRef) -> str:
    """The reason of a pair whose sides record different shapes of the same element count in
    one plain layout (a MindSpore kernel that sees a reshaped view: ``[8, 25]`` against
    ``[2, 4, 25]``), ``""`` otherwise: such a pair is compared element by element in storage
    order, and the row says so."""
    fmt = (left.format or "").upper()
    if fmt != (right.format or "").upper() or fmt not in _PLAIN_LAYOUTS or tuple(left.shape) == tuple(right.shape):
        return ""
    count = math.prod(left.shape)
    if count != math.prod(right.shape):
        return ""
    return (f"shapes differ: left {list(left.shape)}, right {list(right.shape)} (the same {count} elements, "
            "compared in storage order)")


def recorded_statistics(left: TensorRef, right: TensorRef) -> dict[str, StatDiff] | None:
    """The statistics both sides of a tensor pair *recorded* (msprobe's ``dump.json`` keeps Max,
    Min, Mean and Norm in tensor mode too; MindSpore a ``statistic.csv`` row), compared as
    :func:`diff_stat` does; None when a side recorded none. No tensor is read."""
    if not left.stats or not right.stats:
        return None
    both = _common_stats(tuple(left.stats), tuple(right.stats))
    if not both.names:
        return None
    return dict(zip(both.names, stat_diffs(both.names, both.values(left.stats), both.values(right.stats))))


def stat_diffs(names: Sequence[str], lefts: Sequence[object], rights: Sequence[object]) -> list[StatDiff]:
    """:func:`diff_stat` of many statistics at once (``names[i]`` with values ``lefts[i]`` and
    ``rights[i]``), the same records: where both values are Python floats and the statistic is not
    a checksum, ``diff`` and ``rel`` are computed in float64 numpy columns with the policy of
    :func:`diff_stat` as masks (NaN on a side: NaN, NaN; an infinity on a side: 0, 0 when equal,
    else ``inf`` for two infinities or ``left - right``, and ``rel = inf``; else ``left - right``
    and ``|diff| / |right|``, 0 / inf when ``right`` is 0), the same IEEE operations in the same
    order, so the floats are bit-identical; any other entry (``None``, text, an integer, a
    checksum) goes through :func:`diff_stat`. Raises what :func:`diff_stat` raises."""
    count = len(names)
    floats = [i for i in range(count) if type(lefts[i]) is float and type(rights[i]) is float
              and names[i] not in TEXT_STATS]
    out: list[StatDiff | None] = [None] * count
    if len(floats) < count:
        chosen = set(floats)
        for i in range(count):
            if i not in chosen:
                out[i] = diff_stat(names[i], lefts[i], rights[i])  # type: ignore[arg-type]
    if floats:
        left = np.array([lefts[i] for i in floats], dtype=np.float64)
        right = np.array([rights[i] for i in floats], dtype=np.float64)
        diffs, rels = float_diffs(left, right)
        for i, a, b, d, r in zip(floats, left.tolist(), right.tolist(), diffs.tolist(), rels.tolist()):
            out[i] = StatDiff(a, b, d, r)
    return out  # type: ignore[return-value]


def float_diffs(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``diff`` and ``rel`` of float64 columns by :func:`diff_stat`'s policy (see :func:`stat_diffs`)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diff = left - right
        rel = np.abs(diff) / np.abs(right)
    nan = np.isnan(left) | np.isnan(right)
    inf = ~nan & (np.isinf(left) | np.isinf(right))
    equal = left == right
    zero_right = right == 0
    rel = np.where(zero_right, np.where(diff == 0, 0.0, np.inf), rel)
    inf_diff = np.where(equal, 0.0, np.where(np.isinf(left) & np.isinf(right), np.inf, diff))
    diff = np.where(inf, inf_diff, diff)
    rel = np.where(inf, np.where(equal, 0.0, np.inf), rel)
    diff = np.where(nan, np.nan, diff)
    rel = np.where(nan, np.nan, rel)
    return diff, rel


def statistics_metrics(values: dict[str, StatDiff]) -> tuple[dict[str, float | None], frozenset[str]]:
    """The row metrics of some statistics (:meth:`compare.stats_table.StatsTable.metric_row`'s: ``LDiff`` magnitudes,
    ``LRelDiff``, checksums 0.0 / 1.0) and the metrics a null statistic leaves undefined."""
    metrics: dict[str, float | None] = {}
    nulls: list[str] = []
    for (text, names), value in zip(_metric_plan(tuple(values)), values.values()):
        diff = value.diff
        if text:
            metrics[names[0]] = None if diff is None else (0.0 if diff == "same" else 1.0)
        else:
            metrics[names[0]] = abs(diff) if isinstance(diff, float) else None
            metrics[names[1]] = value.rel
        if value.left is None or value.right is None:
            nulls += names
    return metrics, frozenset(nulls) if nulls else _NO_NULLS


_NO_NULLS: frozenset[str] = frozenset()


@functools.lru_cache(maxsize=1024)
def _metric_plan(names: tuple[str, ...]) -> tuple[tuple[bool, tuple[str, ...]], ...]:
    """For each statistic of a row (a dump records the same few sets for every tensor):
    whether it is a checksum, and its metric names (:func:`stat_metrics`)."""
    return tuple((name in TEXT_STATS, stat_metrics(name)) for name in names)


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


def needs_stats_mode(left: object, right: object) -> bool:
    """Whether a comparison must be statistics-only: a side has tensors with statistics and no
    data (``stats_only``; the whole side, or some of its tensors beside tensor files)."""
    return bool(left.stats_only or right.stats_only)


__all__ = ["NOT_SAME_TENSOR", "NULL_STATISTIC", "STAT_LABELS", "STAT_METRIC_NAMES", "STAT_METRIC_OF", "STAT_ORDER",
           "DtypeClass", "Prepared", "Sides", "StatDiff", "StatsRow", "count_reason", "float_diffs", "prepared_row",
           "diff_stat", "dtype_class", "mismatch_reason", "needs_stats_mode", "null_reason",
           "ordered_stats", "recorded_statistics", "shape_note", "side_stats", "stat_diffs", "stat_label", "stat_metrics",
           "statistics_metrics", "stats_row", "tensor_stats"]
