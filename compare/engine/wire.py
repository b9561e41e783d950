"""Rows sent back by the engine's worker processes, as columns (:class:`RowBatch`).

A worker compares a chunk of pairs the parent process already holds (it inherited them by fork),
so most of a row need not travel: every field of :func:`compare.engine._base_row` is a function
of the pair. What the comparison sets -- status, Shape, the metrics, std, the reasons and both
sides' :class:`~compare.records.ValueCounts` -- goes back as one list per field, and the parent
lays it over the base row it builds from its own pair.

Why: unpickling a chunk of :class:`~compare.records.MetricRow` objects cost the parent ~15 us a
row (T10k, 35,585 rows: 0.53 s of a parent that is the run's critical path), most of it
re-creating the two ``ValueCounts`` dataclasses and the enum of each row; the columns (plain
tuples and numbers, one ``names`` tuple object per distinct metric selection, so pickle's memo
sends it once a chunk) cost ~1.5 us a row to unpickle, plus the base row.

Policy: :meth:`RowBatch.rows` gives rows equal (``==``) to the worker's, field for field, or
raises ``ValueError`` when the batch and the base rows differ in length (a programming error,
never a partial chunk).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..records import MetricRow, PairStatus, ValueCounts

#: One side's :class:`ValueCounts` as ``(nan, inf, saturated)`` -- the record's fields in order.
Counts = tuple[int, int, int]


def _counts(counts: ValueCounts | None) -> Counts | None:
    return None if counts is None else (counts.nan, counts.inf, counts.saturated)


def _value_counts(counts: Counts | None) -> ValueCounts | None:
    if counts is None:
        return None
    nan, inf, saturated = counts
    return ValueCounts(nan=nan, inf=inf, saturated=saturated)


@dataclass(frozen=True)
class RowBatch:
    """The fields the engine sets on each row of a chunk, one list per field, in pair order.

    ``names[i]`` / ``values[i]``: row ``i``'s metrics dict as its keys and values (same order);
    ``left_counts`` / ``right_counts``: :data:`Counts` or None. The others are the row fields of
    the same name.
    """

    status: list[PairStatus]
    shape: list[tuple[int, ...] | None]
    names: list[tuple[str, ...]]
    values: list[tuple[float | None, ...]]
    std: list[tuple[float, float, float, float] | None]
    reasons: list[list[str]]
    left_counts: list[Counts | None]
    right_counts: list[Counts | None]

    @classmethod
    def of(cls, rows: Sequence[MetricRow]) -> RowBatch:
        """The batch of the worker's ``rows`` (each distinct metric-name tuple kept once)."""
        known: dict[tuple[str, ...], tuple[str, ...]] = {}
        names = []
        for row in rows:
            key = tuple(row.metrics)
            names.append(known.setdefault(key, key))
        return cls(status=[row.status for row in rows], shape=[row.shape for row in rows], names=names,
                   values=[tuple(row.metrics.values()) for row in rows], std=[row.std for row in rows],
                   reasons=[row.reasons for row in rows], left_counts=[_counts(row.left_counts) for row in rows],
                   right_counts=[_counts(row.right_counts) for row in rows])

    def __len__(self) -> int:
        return len(self.status)

    def rows(self, bases: Sequence[MetricRow]) -> Iterator[MetricRow]:
        """``bases`` (the rows :func:`compare.engine._base_row` gives for the chunk's pairs) with
        the batch's fields laid over them: the worker's rows."""
        if len(bases) != len(self):
            raise ValueError(f"a batch of {len(self)} rows for {len(bases)} pairs")
        for i, row in enumerate(bases):
            row.status = self.status[i]
            row.shape = self.shape[i]
            row.metrics = dict(zip(self.names[i], self.values[i]))
            row.std = self.std[i]
            row.reasons = self.reasons[i]
            row.left_counts = _value_counts(self.left_counts[i])
            row.right_counts = _value_counts(self.right_counts[i])
            yield row


__all__ = ["Counts", "RowBatch"]
