"""The engine: for each :class:`Pair`, load -> convert layout -> kernels -> :class:`MetricRow`.

Policy: a problem with one pair (unreadable dump, unknown data type, shapes that cannot be
reconciled) becomes that pair's row with the diagnosis as its reason; the engine never raises for
one pair and never drops one. Tensors are loaded one pair at a time and released afterwards; a
golden tensor used by several left tensors (a producer's output feeding several consumers) is
loaded once and kept while it is still needed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from .errors import CompareError
from .records import MetricRow, Pair, PairStatus, TensorRef

#: Golden arrays kept in memory at most (they are reused by consecutive pairs most of the time).
GOLDEN_CACHE_ENTRIES = 4


@dataclass
class EngineOptions:
    """What to compute and how.

    ``algorithms``: metric names in column order (``None`` = all ten). ``plugins``: custom layout
    converters from ``-custom DIR`` (see :func:`convert.layouts.load_plugins`). ``max_elements``:
    compare only the first N flattened elements (0 = all).
    """

    algorithms: Sequence[str] | None = None
    plugins: dict | None = None
    max_elements: int = 0
    progress: Callable[[int, int], None] | None = field(default=None, repr=False)


class _GoldenCache:
    """A small LRU of loaded golden arrays keyed by (file, tensor)."""

    def __init__(self, size: int = GOLDEN_CACHE_ENTRIES) -> None:
        self._size = size
        self._items: OrderedDict[tuple[str, str, int], np.ndarray] = OrderedDict()

    def load(self, ref: TensorRef) -> np.ndarray:
        key = (str(ref.path), ref.kind.value, ref.index)
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
            return hit
        array = ref.load()
        self._items[key] = array
        if len(self._items) > self._size:
            self._items.popitem(last=False)
        return array


def _base_row(pair: Pair) -> MetricRow:
    left, right = pair.left, pair.right
    return MetricRow(
        index=pair.index,
        op_type=pair.op_type,
        left_op=pair.left_op,
        right_op=pair.right_op,
        tensor_id=pair.tensor_id,
        left_dtype=left.dtype if left is not None else None,
        right_dtype=right.dtype if right is not None else None,
        shape=tuple(left.shape) if left is not None else None,
        left_address=(left.address or None) if left is not None else None,
        right_address=(right.address or None) if right is not None else None,
        status=pair.status,
        op_sequence=pair.op_sequence,
    )


def _not_compared(row: MetricRow, algorithms: Sequence[str], reason: str, status: PairStatus) -> MetricRow:
    row.metrics = {name: None for name in algorithms}
    row.std = None
    row.status = status
    if reason:
        row.reasons.append(reason)
    return row


def note_text(note: object, pair: Pair) -> str:
    """Plain-English reason for a kernel note (the kernels return flags, never text)."""
    from .kernels import Note

    left = pair.left.path.name if pair.left is not None else "left"
    right = pair.right.path.name if pair.right is not None else "right"
    texts = {
        Note.SCALAR: "scalar-like tensor: CosineSimilarity set to 1",
        Note.LEFT_ALL_ZERO: f"CosineSimilarity not computed: all data is zero in the left tensor ({left})",
        Note.RIGHT_ALL_ZERO: f"CosineSimilarity not computed: all data is zero in the golden tensor ({right})",
        Note.BOTH_ZERO: "both tensors are all zero: CosineSimilarity set to 1",
        Note.KL_GOLDEN_ZERO: "KullbackLeiblerDivergence is inf: the golden data contains 0",
        Note.EMPTY: "empty tensor (0 elements)",
        Note.BOOL_DATA: "bool data: only CosineSimilarity is computed",
        Note.COMPLEX_REAL_PART: "complex data: only the real parts are compared",
    }
    return texts.get(note, str(note))


#: Notes that do not need a reason text in the report (they restate the obvious).
_QUIET_NOTES = {"BOTH_ZERO"}


def compare_pair(pair: Pair, options: EngineOptions, goldens: _GoldenCache | None = None) -> MetricRow:
    """Compare one pair; every failure becomes the row's reason (never raises CompareError)."""
    from convert.layouts import LayoutError, prepare_pair

    from .kernels import compare_arrays, is_scalar_like, resolve_algorithms

    algorithms = list(options.algorithms) if options.algorithms else resolve_algorithms(None)
    row = _base_row(pair)
    if pair.status is not PairStatus.COMPARED or pair.left is None or pair.right is None:
        status = pair.status
        if status is PairStatus.COMPARED:  # a pair without one side cannot be compared
            status = PairStatus.MISSING_LEFT if pair.left is None else PairStatus.MISSING_RIGHT
        return _not_compared(row, algorithms, pair.reason or "", status)

    goldens = goldens or _GoldenCache()
    try:
        left = pair.left.load()
    except CompareError as exc:
        return _not_compared(row, algorithms, f"left tensor unreadable: {exc}", PairStatus.NOT_COMPARABLE)
    try:
        right = goldens.load(pair.right)
    except CompareError as exc:
        return _not_compared(row, algorithms, f"golden tensor unreadable: {exc}", PairStatus.NOT_COMPARABLE)

    if pair.convert:
        golden_format = pair.golden_format
        if not golden_format and pair.right.format == "RESERVED" != pair.left.format:  # dump vs .npy by name
            from convert.layouts import assumed_golden_format

            golden_format = assumed_golden_format(pair.left.format, np.ndim(right))
        try:
            x, y, shape = prepare_pair(
                left,
                pair.left.format,
                tuple(pair.left.shape),
                right,
                golden_format or "",
                target_shape=pair.target_shape,
                golden_shape=tuple(right.shape),
                sub_format=pair.left.sub_format,
                plugins=options.plugins,
            )
        except (LayoutError, ValueError) as exc:
            return _not_compared(
                row, algorithms, f"cannot bring {pair.tensor_id} to the golden layout of {pair.right.path.name}: {exc}", PairStatus.NOT_COMPARABLE
            )
        row.shape = tuple(int(d) for d in shape)
    else:
        x, y = np.ravel(left), np.ravel(right)
        if x.size != y.size:
            return _not_compared(
                row,
                algorithms,
                f"element counts differ: left {x.size} {list(pair.left.shape)}, right {y.size} {list(pair.right.shape)}",
                PairStatus.NOT_COMPARABLE,
            )
    if options.max_elements > 0:
        x, y = x[: options.max_elements], y[: options.max_elements]
    scalar = is_scalar_like(row.shape if row.shape is not None else ())
    try:
        result = compare_arrays(x, y, metrics=algorithms, scalar=scalar)
    except CompareError as exc:
        return _not_compared(row, algorithms, str(exc), PairStatus.NOT_COMPARABLE)
    row.metrics = dict(result.values)
    row.std = result.std
    for note in sorted(result.notes, key=lambda n: n.name):
        if note.name not in _QUIET_NOTES:
            row.reasons.append(note_text(note, pair))
    if pair.reason:
        row.reasons.insert(0, pair.reason)
    return row


def iter_compare(pairs: Iterable[Pair], options: EngineOptions | None = None) -> Iterator[MetricRow]:
    """Compare pairs one at a time, yielding rows in the same order (streaming-friendly)."""
    options = options or EngineOptions()
    goldens = _GoldenCache()
    pairs = list(pairs)
    for done, pair in enumerate(pairs, start=1):
        try:
            row = compare_pair(pair, options, goldens)
        except Exception as exc:  # noqa: BLE001 - one pair must never abort the run
            algorithms = list(options.algorithms or ())
            row = _not_compared(_base_row(pair), algorithms,
                                f"internal error while comparing {pair.tensor_id or pair.left_op}: "
                                f"{type(exc).__name__}: {exc} (please report)", PairStatus.NOT_COMPARABLE)
        yield row
        if options.progress is not None:
            options.progress(done, len(pairs))


def compare_pairs(pairs: Iterable[Pair], options: EngineOptions | None = None) -> list[MetricRow]:
    """Compare every pair; the rows come back in pair order (stable by Index)."""
    return list(iter_compare(pairs, options))
