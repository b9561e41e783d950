"""The rows of a localisation against their bounds, on columns (:func:`row_checks`).

The bounds of a row (:class:`Bounds`) and what a check means are :mod:`compare.diverge.verdicts`'s
(module doc there: the gate policy's bounds, else the built-in data-type bounds; the error of a
tensor and of a statistics row). Here each rule is applied to every row at once, on the columns
of the rows (:class:`PartRows`: a statistics table's own lists, one ``map`` a field over records),
building no row's record:

- **passes**: a compared row passes when no bound of its own is broken, i.e. when
  :func:`compare.verdict.gates.violations` is empty: a bound breaks when its metric was computed
  and is NaN or fails the comparison. The rows are grouped by their bound tuple (one resolution
  per class of rows -- kind and data types, :class:`RowClasses` -- when the policy has no rules,
  else one per row, from a record of the fields bounds depend on) and each bound is one numpy
  comparison over its metric's column. For rows whose metrics can be undefined for the data (an
  argument row, an empty tensor, bool against bool, a statistic recorded as null: ``violations``'s
  ``_defined`` / ``MetricRow.undefined``) ``violations`` itself says which bounds it checks, asked
  once per kind of such row (:func:`_checked`), so the edge-case policy lives in one place.
- **error**: RelativeEuclideanDistance, else ``1 - CosineSimilarity``, else none, of a tensor row;
  :func:`compare.diverge.statistics.statistics_errors` of a statistics row; none when not compared.
- **nonfinite**: the left side holds a NaN or an infinity (``MetricRow.left_counts``).

Rows not compared (a status other than COMPARED, or an expected gap) neither pass nor fail.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, is_not

import numpy as np

from ..records import Bound, MetricRow, RowKind
from ..stats_table import RowColumns
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

    def groups(self, part: PartRows, where: np.ndarray) -> list[tuple[tuple[Bound, ...], np.ndarray]]:
        """The places ``k`` of ``where`` (rows of ``part``) grouped by the bounds of row
        ``where[k]`` (:meth:`of`), each group in order; the bounds are resolved in order (the
        first row of each data-type pair), from the row's fields (:meth:`PartRows.bounds_row`).
        Without rules, one bound resolution a class of rows (:attr:`PartRows.classes`)."""
        if self._by_dtypes is None:
            by_bounds: dict[int, tuple[tuple[Bound, ...], list[int]]] = {}
            for k, r in enumerate(where.tolist()):
                bounds = self.of(part.bounds_row(r))
                by_bounds.setdefault(id(bounds), (bounds, []))[1].append(k)
            return [(bounds, np.asarray(at, dtype=np.intp)) for bounds, at in by_bounds.values()]
        if not len(where):
            return []
        classes = part.classes.code[where]
        distinct, first = np.unique(classes, return_index=True)
        out: dict[int, tuple[tuple[Bound, ...], list[np.ndarray]]] = {}
        for k in np.argsort(first, kind="stable").tolist():  # in order of first appearance (:meth:`of`)
            bounds = self.of(part.bounds_row(int(where[first[k]])))
            out.setdefault(id(bounds), (bounds, []))[1].append(np.flatnonzero(classes == distinct[k]))
        return [(bounds, at[0] if len(at) == 1 else np.sort(np.concatenate(at))) for bounds, at in out.values()]

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


@dataclass(frozen=True)
class RowClasses:
    """The rows of a part by class, a class being a (kind, left data type, right data type):
    ``code[r]`` is row ``r``'s class (0, 1 ... in order of first appearance), ``first[c]`` the
    first row of class ``c``. What depends on these fields only (bounds without rules, whether a
    row is a statistics row, whether its metrics may be undefined) is found once a class."""

    code: np.ndarray
    first: list[int]

    def per_row(self, per_class: Sequence[bool]) -> np.ndarray:
        """A value a class as a value a row."""
        return np.asarray(per_class, dtype=bool)[self.code]


def _part_field(name: str) -> Callable[[PartRows], list]:
    """A :class:`PartRows` field: the part's entries of the run's column ``name`` (read once, then kept)."""
    read = attrgetter(name)

    def column(self: PartRows) -> list:
        return self.part_of(read(self.columns))

    column.__name__ = name
    column.__doc__ = f"``{name}`` of the part's rows."
    return column


class PartRows:
    """The rows of one part of a run (a ``(rank, iteration, graph)`` key, or the whole run) as
    columns: the run's :class:`~compare.stats_table.RowColumns` and the part's positions in them
    (``at``, in row order; None: every row). A part's row ``r`` is the run's row ``at[r]``.

    Every reader of many rows reads these columns (the table's own lists for a statistics run,
    one ``map`` a field over records otherwise, each read once then kept); no row's record is
    built (a reported check reads a record of the fields it needs: :meth:`checked_row`)."""

    def __init__(self, columns: RowColumns, at: np.ndarray | None = None) -> None:
        self.columns = columns
        self.at = at
        self._at_list: list[int] | None = at.tolist() if at is not None else None
        self._metrics: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.columns) if self.at is None else len(self.at)

    def run_row(self, r: int) -> int:
        """The run's position of the part's row ``r``."""
        return r if self._at_list is None else self._at_list[r]

    def part_of(self, column: list) -> list:
        """The part's entries of a run's column (the column itself for a whole run)."""
        return column if self._at_list is None else list(map(column.__getitem__, self._at_list))

    status = functools.cached_property(_part_field("status"))
    expected_gap = functools.cached_property(_part_field("expected_gap"))
    undefined = functools.cached_property(_part_field("undefined"))
    kind = functools.cached_property(_part_field("kind"))
    shape = functools.cached_property(_part_field("shape"))
    left_dtype = functools.cached_property(_part_field("left_dtype"))
    right_dtype = functools.cached_property(_part_field("right_dtype"))
    left_counts = functools.cached_property(_part_field("left_counts"))
    tensor_id = functools.cached_property(_part_field("tensor_id"))
    left_op = functools.cached_property(_part_field("left_op"))
    op_type = functools.cached_property(_part_field("op_type"))

    @functools.cached_property
    def classes(self) -> RowClasses:
        """The rows by (kind, left data type, right data type) (:class:`RowClasses`): each field
        coded by its distinct values (a kind by identity: an enum member hashes in Python), the
        three codes combined, then numbered in order of first appearance."""
        n = len(self)
        combined = np.zeros(n, dtype=np.int64)  # < len(RowKind) * n * n: no overflow below 10^9 rows
        for column in (list(map(id, self.kind)), self.left_dtype, self.right_dtype):
            number = {value: code for code, value in enumerate(dict.fromkeys(column))}
            combined = combined * len(number) + np.fromiter(map(number.__getitem__, column), dtype=np.int64, count=n)
        _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # the classes in order of first appearance
        rank = np.empty(len(order), dtype=np.intp)
        rank[order] = np.arange(len(order))
        return RowClasses(code=rank[inverse.reshape(-1)], first=first[order].tolist())

    @functools.cached_property
    def empty(self) -> np.ndarray:
        """Whether each row's shape has a zero dimension (no element)."""
        out = np.zeros(len(self), dtype=bool)
        out[[i for i, shape in enumerate(self.shape) if shape and 0 in shape]] = True
        return out

    def metric(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Metric ``name`` of the part's rows (:meth:`compare.stats_table.RowColumns.metric`)."""
        found = self._metrics.get(name)
        if found is None:
            values, present = self.columns.metric(name)
            found = self._metrics[name] = (values, present) if self.at is None else (values[self.at], present[self.at])
        return found

    def load(self, names: Sequence[str]) -> None:
        """Read metrics ``names`` of the run at once (:meth:`compare.stats_table.RowColumns.load`)."""
        self.columns.load(names)

    def bounds_row(self, r: int) -> MetricRow:
        """A record of the fields of row ``r`` that its bounds depend on (those
        :class:`~compare.verdict.policy.BoundResolver` reads: :func:`~compare.verdict.policy.field_key`
        and :func:`~compare.verdict.policy.names_text`), without metrics: resolving bounds builds
        no row's record."""
        c, i = self.columns, self.run_row(r)
        return MetricRow(index=c.index[i], op_type=c.op_type[i], left_op=c.left_op[i], right_op=c.right_op[i],
                         tensor_id=c.tensor_id[i], left_dtype=c.left_dtype[i], right_dtype=c.right_dtype[i],
                         rank=c.rank[i], iteration=c.iteration[i], graph=c.graph[i], kind=c.kind[i])

    def checked_row(self, r: int, bounds: Sequence[Bound]) -> MetricRow:
        """A record of what :func:`~compare.verdict.gates.violations` reads of row ``r`` against
        ``bounds``: :meth:`bounds_row`'s fields, the shape and undefined metrics, and the metrics of
        ``bounds`` the row has (from the metric columns: the record's own values), for a reported
        check without building the row's record."""
        row = self.bounds_row(r)
        i = self.run_row(r)
        row.shape, row.undefined = self.columns.shape[i], self.columns.undefined[i]
        for bound in bounds:
            values, present = self.columns.metric(bound.metric)
            if present[i]:
                row.metrics[bound.metric] = float(values[i])
        return row


def compared(part: PartRows) -> np.ndarray:
    """Whether each row of ``part`` was compared: status COMPARED and no expected gap."""
    status = part.columns.compared if part.at is None else part.columns.compared[part.at]
    gap = np.fromiter(map(bool, part.expected_gap), dtype=bool, count=len(part))
    return status & ~gap


def exceptional(part: PartRows) -> np.ndarray:
    """Whether a metric may be undefined for each row's data (module doc): an argument row, an
    empty tensor, bool against bool (``violations``'s ``_defined``), a statistic recorded as null
    (``MetricRow.undefined``)."""
    kinds, lefts, rights = part.kind, part.left_dtype, part.right_dtype
    classes = part.classes
    unusual = classes.per_row([kinds[r] is RowKind.ARGUMENT or lefts[r] == rights[r] == "bool" for r in classes.first])
    return unusual | part.empty | np.fromiter(map(bool, part.undefined), dtype=bool, count=len(part))


def statistics(part: PartRows) -> np.ndarray:
    """Whether each row of ``part`` is a statistics row (:func:`compare.diverge.statistics.is_statistics_row`)."""
    classes = part.classes
    return classes.per_row([part.kind[r] is RowKind.STATISTICS for r in classes.first])


def nonfinite(part: PartRows) -> np.ndarray:
    """Whether each row's left side holds NaN or infinite elements (``left_counts``; False when not counted)."""
    counts = part.left_counts
    counted = np.flatnonzero(np.fromiter(map(is_not, counts, repeat(None)), dtype=bool, count=len(counts))).tolist()
    out = np.zeros(len(counts), dtype=bool)
    out[[i for i in counted if counts[i].nan or counts[i].inf]] = True
    return out


_Groups = list[tuple[tuple[Bound, ...], np.ndarray]]


def _passes(part: PartRows, where: np.ndarray, groups: _Groups, exceptional: np.ndarray) -> np.ndarray:
    """Whether each row at ``where`` (compared rows, ``groups``: their positions by bounds) breaks
    none of its bounds (module doc): each bound one comparison over its metric's column; for the
    exceptional rows, only the bounds :func:`~compare.verdict.gates.violations` checks for such a
    row (:func:`_checked`)."""
    out = np.ones(len(where), dtype=bool)
    for group_bounds, at in groups:
        row_at = where[at]
        unusual = np.flatnonzero(exceptional[row_at])
        ok = np.ones(len(at), dtype=bool)
        for bound in group_bounds:
            ok &= _holds(part, bound, row_at)
        if len(unusual):
            ok[unusual] = True
            for checked, places in _checked(part, row_at[unusual], group_bounds):
                for bound in checked:
                    ok[unusual[places]] &= _holds(part, bound, row_at[unusual[places]])
        out[at] = ok
    return out


def _holds(part: PartRows, bound: Bound, rows: np.ndarray) -> np.ndarray:
    """Whether ``bound`` holds for each of ``rows``: its metric not computed, or computed and not
    NaN and within the bound (NaN fails every comparison)."""
    values, present = part.metric(bound.metric)
    return ~present[rows] | _NUMPY_OPS[bound.op](values[rows], bound.value)


def _checked(part: PartRows, rows: np.ndarray, bounds: tuple[Bound, ...]
             ) -> list[tuple[list[Bound], np.ndarray]]:
    """The bounds :func:`~compare.verdict.gates.violations` checks for each of ``rows`` (places in
    ``rows`` by the bounds checked). Which bounds it skips depends on the row's data (kind, data
    types, an empty shape: its ``_defined``) and its undefined metrics only, so it is asked once
    for each such signature, with a record of those fields whose bound metrics are all NaN (NaN
    breaks every bound it checks): the edge-case policy stays in ``violations``."""
    classes, empty, undefined = part.classes, part.empty, part.undefined
    row_list = rows.tolist()
    sets = list(map(undefined.__getitem__, row_list))
    set_number = {value: number for number, value in enumerate(dict.fromkeys(sets))}
    signature = ((classes.code[rows].astype(np.int64) * 2 + empty[rows]) * len(set_number)
                 + np.fromiter(map(set_number.__getitem__, sets), dtype=np.int64, count=len(sets)))
    _, first, inverse = np.unique(signature, return_index=True, return_inverse=True)
    nan_metrics = dict.fromkeys((bound.metric for bound in bounds), math.nan)
    out = []
    for number, k in enumerate(first.tolist()):
        r = row_list[k]
        probe = MetricRow(index=0, op_type=None, left_op="", right_op="", tensor_id=None,
                          left_dtype=part.left_dtype[r], right_dtype=part.right_dtype[r],
                          shape=(0,) if empty[r] else None, metrics=dict(nan_metrics), undefined=sets[k],
                          kind=part.kind[r])
        out.append(([bound for bound, _ in violations(probe, bounds)], np.flatnonzero(inverse == number)))
    return out


def broken_bounds(part: PartRows, rows: np.ndarray, bounds: Bounds) -> list[tuple[tuple[str, float], ...]]:
    """The bounds each of ``rows`` (compared rows of ``part``) breaks, as ``(metric, value)`` in its
    bounds' order: :func:`~compare.verdict.gates.violations` of each row, on columns (the bounds
    grouped as :func:`row_checks` groups them; for the exceptional rows only the bounds
    ``violations`` checks for such a row, :func:`_checked`)."""
    out: list[list[tuple[str, float]]] = [[] for _ in range(len(rows))]
    unusual = exceptional(part)
    for group_bounds, at in bounds.groups(part, rows):
        row_at = rows[at]
        checked = [(list(group_bounds), np.flatnonzero(~unusual[row_at]))]
        odd = np.flatnonzero(unusual[row_at])
        if len(odd):
            checked += [(some, odd[places]) for some, places in _checked(part, row_at[odd], group_bounds)]
        for some, places in checked:
            for bound in some:
                r = row_at[places]
                values, present = part.metric(bound.metric)
                broken = places[present[r] & ~_NUMPY_OPS[bound.op](values[r], bound.value)]
                for k, value in zip(at[broken].tolist(), values[row_at[broken]].tolist()):
                    out[k].append((bound.metric, value))
        # (each row's bounds are taken in order: a row is in one place of ``checked`` only)
    return [tuple(found) for found in out]


def _errors(part: PartRows, where: np.ndarray, statistics: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The error of each row at ``where`` (module doc; ``statistics``: whether each is a statistics row)
    and whether it has one."""
    error = np.full(len(where), np.nan)
    has = np.zeros(len(where), dtype=bool)
    tensor_at = np.flatnonzero(~statistics)
    if len(tensor_at):
        rows_at = where[tensor_at]
        red, has_red = (column[rows_at] for column in part.metric("RelativeEuclideanDistance"))
        cosine, has_cosine = (column[rows_at] for column in part.metric("CosineSimilarity"))
        error[tensor_at] = np.where(has_red, red, 1.0 - cosine)
        has[tensor_at] = has_red | has_cosine
    statistics_at = np.flatnonzero(statistics)
    if len(statistics_at):
        rows_at = where[statistics_at]
        values, present = statistics_errors([part.metric(name) for name in ERROR_METRICS], rows_at)
        error[statistics_at] = values
        has[statistics_at] = present
    return error, has


def row_checks(part: PartRows, order: Sequence[int], bounds: Bounds, source_inputs: Sequence[int] = ()) -> RowChecks:
    """The rows of ``part`` at ``order`` against ``bounds``, and those of ``source_inputs`` that
    pass them against the built-in bounds too when the run has a policy of its own, with their
    error and whether their left side holds NaN/Inf (:class:`RowChecks`; the other rows: not compared).

    ``order`` is the order the rows are judged in, and the bounds of a data-type pair are
    resolved for the first row of that pair in it (:meth:`Bounds.of` keeps them by data types and
    statistics or not: an argument row whose types equal a tensor row's gets the bounds of
    whichever of the two comes first, as a check row by row did).
    """
    n = len(part)
    compared_mask = compared(part)
    ordered = np.asarray(order, dtype=np.intp)
    compared_at = ordered[compared_mask[ordered]]
    groups = bounds.groups(part, compared_at)
    statistics_at = statistics(part)[compared_at]
    error_names = (("RelativeEuclideanDistance", "CosineSimilarity") if not statistics_at.all() else ()) + (
        ERROR_METRICS if statistics_at.any() else ())
    part.load([b.metric for group, _ in groups for b in group] + list(error_names))
    unusual = exceptional(part)
    passed = np.full(n, NOT_COMPARED, dtype=np.int8)
    passed[compared_at] = np.where(_passes(part, compared_at, groups, unusual), PASSES, FAILS)
    builtin = None
    if bounds.custom:
        builtin = np.full(n, NOT_COMPARED, dtype=np.int8)
        inputs = np.asarray(source_inputs, dtype=np.intp)
        again = inputs[passed[inputs] == PASSES]
        builtin_groups = bounds.builtin_bounds.groups(part, again)
        builtin[again] = np.where(_passes(part, again, builtin_groups, unusual), PASSES, FAILS)
    error = np.full(n, np.nan)
    has_error = np.zeros(n, dtype=bool)
    error[compared_at], has_error[compared_at] = _errors(part, compared_at, statistics_at)
    return RowChecks(passed=passed, builtin=builtin, error=error, has_error=has_error, nonfinite=nonfinite(part))


__all__ = ["DEFAULT_BOUNDS_TEXT", "DEFAULT_POLICY", "FAILS", "NOT_COMPARED", "PASSES", "Bounds", "PartRows", "RowChecks",
           "broken_bounds", "compared", "exceptional", "nonfinite", "row_checks", "statistics"]
