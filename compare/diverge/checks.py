"""The rows of a localisation against their bounds, on columns (:func:`row_checks`).

The bounds of a row (:class:`Bounds`) and what a check means are :mod:`compare.diverge.verdicts`'s
(module doc there: the gate policy's bounds, else the built-in data-type bounds; the error of a
tensor and of a statistics row). Here each rule is applied to every row at once:

- **passes**: a compared row passes when no bound of its own is broken, i.e. when
  :func:`compare.verdict.gates.violations` is empty: a bound breaks when its metric was computed
  and is NaN or fails the comparison. The rows are grouped by their bound tuple (one resolution
  per data-type pair and row kind when the policy has no rules, else one per row) and each bound
  is one numpy comparison over its metric's column. Rows for which a metric can be undefined for
  the data (an argument row, an empty tensor, bool against bool, a statistic recorded as null:
  ``violations``'s ``_defined`` / ``MetricRow.undefined``) are few and are checked one by one by
  ``violations`` itself, so the edge-case policy lives in one place.
- **error**: RelativeEuclideanDistance, else ``1 - CosineSimilarity``, else none, of a tensor row;
  :func:`compare.diverge.statistics.statistics_errors` of a statistics row; none when not compared.
- **nonfinite**: the left side holds a NaN or an infinity (``MetricRow.left_counts``).

Rows not compared (a status other than COMPARED, or an expected gap) neither pass nor fail.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, contains, eq, is_, is_not

import numpy as np

from ..records import Bound, MetricRow, PairStatus, RowKind
from ..verdict.gates import violations
from ..verdict.policy import BoundResolver, Policy, coarsest_family
from .statistics import ERROR_METRICS, is_statistics_row, statistics_errors

#: The policy used when the run has no gate: data-type bounds only (float32's for unknown types).
DEFAULT_POLICY = Policy(strict=False, dtype_defaults=True)
DEFAULT_BOUNDS_TEXT = ("built-in data-type bounds (cosine >= 1 - eps/2, RelativeEuclideanDistance <= sqrt(eps); "
                       "statistics: MaxRelDiff, MinRelDiff, L2NormRelDiff <= sqrt(eps), ChecksumDiff == 0; "
                       "of the coarser data type; float32's for other types)")

#: A check's outcome in a column: not compared, fails, passes.
NOT_COMPARED, FAILS, PASSES = -1, 0, 1

_NUMPY_OPS: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
    ">=": np.greater_equal, "<=": np.less_equal, "==": np.equal, ">": np.greater, "<": np.less}
_KIND = attrgetter("kind")
_LEFT_DTYPE = attrgetter("left_dtype")
_RIGHT_DTYPE = attrgetter("right_dtype")
_METRICS = attrgetter("metrics")
_STATUS = attrgetter("status")
_GAP = attrgetter("expected_gap")
_UNDEFINED = attrgetter("undefined")
_SHAPE = attrgetter("shape")
_LEFT_COUNTS = attrgetter("left_counts")


class Bounds:
    """Bounds per row: the policy's, else the default data-type bounds (float32's as fallback);
    :meth:`builtin`: the default data-type bounds whatever the policy (source inputs,
    :mod:`compare.diverge.verdicts`)."""

    def __init__(self, policy: Policy | None) -> None:
        has_bounds = policy is not None and bool(policy.defaults or policy.gates or policy.dtype_defaults
                                                 or any(rule.bounds for rule in policy.rules))
        self.policy = policy if has_bounds and policy is not None else DEFAULT_POLICY
        self.custom = self.policy is not DEFAULT_POLICY
        self._resolver = BoundResolver(self.policy)
        self._fallback: dict[bool, tuple[Bound, ...]] = {}
        # Without rules the bounds depend on the data types only: one resolution per kind and pair of types.
        self._by_dtypes: dict[tuple[bool, str | None, str | None], tuple[Bound, ...]] | None = (
            {} if not self.policy.rules else None)
        self._builtin: Bounds | None = Bounds(None) if self.custom else None

    def of(self, row: MetricRow) -> tuple[Bound, ...]:
        if self._by_dtypes is None:
            return self._resolve(row)
        key = (is_statistics_row(row), row.left_dtype, row.right_dtype)
        hit = self._by_dtypes.get(key)
        if hit is None:
            hit = self._by_dtypes[key] = self._resolve(row)
        return hit

    def builtin(self, row: MetricRow) -> tuple[Bound, ...]:
        """The built-in data-type bounds of ``row`` (float32's for a type without them)."""
        return self._builtin.of(row) if self._builtin is not None else self.of(row)

    @property
    def builtin_bounds(self) -> Bounds:
        """The built-in data-type bounds as a :class:`Bounds` (this one when it has no policy of its own)."""
        return self._builtin if self._builtin is not None else self

    def groups(self, rows: Sequence[MetricRow]) -> list[tuple[tuple[Bound, ...], list[int]]]:
        """The positions of ``rows`` grouped by their bounds (:meth:`of`), each group in row order;
        the bounds are resolved in row order (the first row of each data-type pair)."""
        if self._by_dtypes is None:
            by_bounds: dict[int, tuple[tuple[Bound, ...], list[int]]] = {}
            for i, row in enumerate(rows):
                bounds = self.of(row)
                by_bounds.setdefault(id(bounds), (bounds, []))[1].append(i)
            return list(by_bounds.values())
        keys = list(zip(map(_KIND, rows), map(_LEFT_DTYPE, rows), map(_RIGHT_DTYPE, rows)))
        last = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1)))  # key -> its first position
        first = dict(sorted(last.items(), key=lambda item: item[1]))  # in order of first appearance (:meth:`of`)
        if len(first) == 1:
            return [(self.of(rows[0]), list(range(len(rows))))] if rows else []
        positions: dict[tuple[RowKind, str | None, str | None], list[int]] = {key: [] for key in first}
        for i, key in enumerate(keys):
            positions[key].append(i)
        out: dict[int, tuple[tuple[Bound, ...], list[int]]] = {}
        for key, where in positions.items():
            bounds = self.of(rows[first[key]])
            group = out.setdefault(id(bounds), (bounds, []))
            group[1].extend(where)
        return [(bounds, sorted(where)) for bounds, where in out.values()]

    def _resolve(self, row: MetricRow) -> tuple[Bound, ...]:
        bounds = self._resolver.bounds(row)  # the built-in layer follows the row kind (compare.verdict.policy)
        statistics = is_statistics_row(row)
        if self.custom or (bounds and coarsest_family(row.left_dtype, row.right_dtype) is not None):
            return bounds  # (a statistics row of an unknown type has the checksum bounds only: float32's then)
        fallback = self._fallback.get(statistics)
        if fallback is None:
            probe = MetricRow(index=0, op_type=None, left_op="", right_op="", tensor_id=None,
                              left_dtype="float32", right_dtype="float32", metrics=dict.fromkeys(row.metrics),
                              kind=row.kind)
            fallback = self._fallback[statistics] = self._resolve(probe)
        return fallback

    @property
    def text(self) -> str:
        if not self.custom:
            return DEFAULT_BOUNDS_TEXT
        return "the gate policy" + (f" ({self.policy.source})" if self.policy.source else "")


@dataclass(frozen=True)
class RowChecks:
    """The checks of a part's rows, one entry per row (module doc).

    ``passed``: :data:`NOT_COMPARED` / :data:`FAILS` / :data:`PASSES` (int8) against the run's
    bounds; ``builtin``: the same against the built-in data-type bounds when the run has a policy
    of its own, for the source inputs that pass the run's bounds (None without such a policy:
    then they are the run's bounds); ``error`` / ``has_error``: the
    row's error (float64) and whether it has one; ``nonfinite``: NaN/Inf on the left side.
    """

    passed: np.ndarray
    builtin: np.ndarray | None
    error: np.ndarray
    has_error: np.ndarray
    nonfinite: np.ndarray


class _Columns:
    """The rows' fields as columns (C-level ``map`` passes over the records; the metrics a part
    needs in one pass over the rows' metric dicts, :meth:`load`)."""

    def __init__(self, rows: Sequence[MetricRow]) -> None:
        self.rows = rows
        self.metrics = list(map(_METRICS, rows))
        self.kinds = list(map(_KIND, rows))
        self.left_dtypes = list(map(_LEFT_DTYPE, rows))
        self.right_dtypes = list(map(_RIGHT_DTYPE, rows))
        self._metric: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def load(self, names: Sequence[str]) -> None:
        """Read metrics ``names`` of every row in one pass (each: float64, NaN where not computed,
        and whether it was computed: numpy reads None as NaN, a NaN value is computed)."""
        names = [name for name in dict.fromkeys(names) if name not in self._metric]
        if not names:
            return
        n = len(self.rows)
        values = [tuple(map(metrics.get, names)) for metrics in self.metrics] if n else []
        columns = list(zip(*values)) if n else [() for _ in names]
        for name, column in zip(names, columns):
            values = np.array(column, dtype=np.float64)
            present = ~np.isnan(values)
            absent = np.flatnonzero(~present)  # NaN: a computed NaN, or None (not computed)
            present[absent] = np.fromiter(map(is_not, map(column.__getitem__, absent.tolist()), repeat(None)),
                                          dtype=bool, count=len(absent))
            self._metric[name] = (values, present)

    def metric(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Metric ``name`` of every row (:meth:`load`)."""
        self.load((name,))
        return self._metric[name]

    def compared(self) -> np.ndarray:
        """Whether each row was compared: status COMPARED and no expected gap."""
        n = len(self.rows)
        status = np.fromiter(map(is_, map(_STATUS, self.rows), repeat(PairStatus.COMPARED)), dtype=bool, count=n)
        gap = np.fromiter(map(bool, map(_GAP, self.rows)), dtype=bool, count=n)
        return status & ~gap

    def exceptional(self) -> np.ndarray:
        """Whether a metric may be undefined for each row's data (module doc): ``violations`` checks those."""
        rows, n = self.rows, len(self.rows)
        undefined = np.fromiter(map(bool, map(_UNDEFINED, rows)), dtype=bool, count=n)
        argument = np.fromiter(map(is_, self.kinds, repeat(RowKind.ARGUMENT)), dtype=bool, count=n)
        empty = np.fromiter(map(contains, [shape or () for shape in map(_SHAPE, rows)], repeat(0)), dtype=bool, count=n)
        left_bool = np.fromiter(map(eq, self.left_dtypes, repeat("bool")), dtype=bool, count=n)
        right_bool = np.fromiter(map(eq, self.right_dtypes, repeat("bool")), dtype=bool, count=n)
        return undefined | argument | empty | (left_bool & right_bool)

    def statistics(self) -> np.ndarray:
        return np.fromiter(map(is_, self.kinds, repeat(RowKind.STATISTICS)), dtype=bool, count=len(self.rows))

    def nonfinite(self) -> np.ndarray:
        """Whether each row's left side holds NaN or infinite elements (``left_counts``; False when not counted)."""
        out = np.zeros(len(self.rows), dtype=bool)
        hits = [i for i, c in enumerate(map(_LEFT_COUNTS, self.rows)) if c is not None and (c.nan or c.inf)]
        out[hits] = True
        return out


_Groups = list[tuple[tuple[Bound, ...], list[int]]]


def _passes(columns: _Columns, where: np.ndarray, groups: _Groups, exceptional: np.ndarray) -> np.ndarray:
    """Whether each row at ``where`` (compared rows, ``groups``: their positions by bounds) breaks
    none of its bounds (module doc)."""
    rows = columns.rows
    out = np.ones(len(where), dtype=bool)
    for group_bounds, positions in groups:
        at = np.asarray(positions, dtype=np.intp)
        row_at = where[at]
        ok = np.ones(len(at), dtype=bool)
        for bound in group_bounds:
            values, present = columns.metric(bound.metric)
            ok &= ~present[row_at] | _NUMPY_OPS[bound.op](values[row_at], bound.value)  # NaN fails every comparison
        out[at] = ok
        for i in np.flatnonzero(exceptional[row_at]).tolist():
            out[at[i]] = not violations(rows[int(row_at[i])], group_bounds)
    return out


def _errors(columns: _Columns, where: np.ndarray, statistics: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The error of each row at ``where`` (module doc; ``statistics``: whether each is a statistics row)
    and whether it has one."""
    error = np.full(len(where), np.nan)
    has = np.zeros(len(where), dtype=bool)
    tensor_at = np.flatnonzero(~statistics)
    if len(tensor_at):
        rows_at = where[tensor_at]
        red, has_red = (column[rows_at] for column in columns.metric("RelativeEuclideanDistance"))
        cosine, has_cosine = (column[rows_at] for column in columns.metric("CosineSimilarity"))
        error[tensor_at] = np.where(has_red, red, 1.0 - cosine)
        has[tensor_at] = has_red | has_cosine
    statistics_at = np.flatnonzero(statistics)
    if len(statistics_at):
        rows_at = where[statistics_at]
        values, present = statistics_errors([columns.metric(name) for name in ERROR_METRICS], rows_at)
        error[statistics_at] = values
        has[statistics_at] = present
    return error, has


def row_checks(rows: Sequence[MetricRow], order: Sequence[int], bounds: Bounds,
               source_inputs: Sequence[int] = ()) -> RowChecks:
    """The rows at ``order`` against ``bounds``, and those of ``source_inputs`` that pass them
    against the built-in bounds too when the run has a policy of its own, with their error and
    whether their left side holds NaN/Inf (:class:`RowChecks`; the other rows: not compared).

    ``order`` is the order the rows are judged in, and the bounds of a data-type pair are
    resolved for the first row of that pair in it (:meth:`Bounds.of` keeps them by data types and
    statistics or not: an argument row whose types equal a tensor row's gets the bounds of
    whichever of the two comes first, as a check row by row did).
    """
    n = len(rows)
    columns = _Columns(rows)
    compared_mask = columns.compared()
    compared = np.asarray([i for i in order if compared_mask[i]], dtype=np.intp)
    chosen = [rows[i] for i in compared.tolist()]
    groups = bounds.groups(chosen)
    statistics = columns.statistics()[compared]
    error_names = (("RelativeEuclideanDistance", "CosineSimilarity") if not statistics.all() else ()) + (
        ERROR_METRICS if statistics.any() else ())
    columns.load([b.metric for group, _ in groups for b in group] + list(error_names))
    exceptional = columns.exceptional()
    passed = np.full(n, NOT_COMPARED, dtype=np.int8)
    passed[compared] = np.where(_passes(columns, compared, groups, exceptional), PASSES, FAILS)
    builtin = None
    if bounds.custom:
        builtin = np.full(n, NOT_COMPARED, dtype=np.int8)
        again = np.asarray([i for i in source_inputs if passed[i] == PASSES], dtype=np.intp)
        builtin_groups = bounds.builtin_bounds.groups([rows[i] for i in again.tolist()])
        builtin[again] = np.where(_passes(columns, again, builtin_groups, exceptional), PASSES, FAILS)
    error = np.full(n, np.nan)
    has_error = np.zeros(n, dtype=bool)
    error[compared], has_error[compared] = _errors(columns, compared, statistics)
    return RowChecks(passed=passed, builtin=builtin, error=error, has_error=has_error, nonfinite=columns.nonfinite())


__all__ = ["DEFAULT_BOUNDS_TEXT", "DEFAULT_POLICY", "FAILS", "NOT_COMPARED", "PASSES", "Bounds", "RowChecks",
           "row_checks"]
