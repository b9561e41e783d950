"""Accuracy gates: check a run's rows against a :class:`~compare.verdict.policy.Policy` -> :class:`Verdict`.

A ``--gate`` is ``METRIC OP NUMBER`` (:func:`parse_gate`), ``OP`` one of ``>= <= > < ==``, the
metric any name, alias or index of :data:`compare.kernels.METRICS` except StandardDeviation (not a
single number), or a statistics metric (:data:`compare.stats.STAT_METRIC_NAMES`: ``MaxRelDiff``,
``L2NormDiff`` ..., ``ChecksumDiff==same``) for statistics rows, or ``ArgumentDiff`` (``ArgumentDiff==same``:
msprobe's non-tensor arguments must be equal; checked on argument rows only, every other metric
being undefined there). A policy file adds defaults,
rules and waivers (:mod:`compare.verdict.policy`).

:func:`evaluate` checks each row (docs/policy.md; on columns, :func:`evaluate`'s docstring):

- a row with ``expected_gap`` (structurally not compared: a mixed-precision Cast without
  counterpart, a quant-filtered op, an overflow record, an NPU-only operator the fusion rule gives
  no golden, a Data/Const op the device does not dump) is counted in ``Verdict.expected_gaps``
  and not checked;
- strict policy (the default with any gate or file): a row that was not compared (unreadable or
  truncated dump, shape mismatch, missing counterpart) is one *incomplete* failure carrying the
  row's reasons; on a compared row, a gated metric that was not computed (``None``: e.g. cosine of
  an all-zero tensor, or not selected) is an incomplete failure too. Not strict: neither counts;
- a computed value that violates a bound fails, and a computed NaN violates every bound;
- metrics with no value for the data are not checked (counted in ``Verdict.undefined``): on a
  bool-vs-bool row only CosineSimilarity is defined (RelativeEuclideanDistance is checked when
  the kernel could compute it); on an empty tensor (a 0 in the shape) nothing is; on a
  statistics row, the statistics a side recorded as null (``MetricRow.undefined``: msprobe's
  mean of an int64 tensor);
- a bound of the other row kind (CosineSimilarity on a statistics row; MaxRelDiff on a tensor row
  whose sides recorded no statistics -- msprobe tensor dumps record them, and their rows carry
  the statistics metrics too) is not computed: an incomplete failure under strict, whose message
  says so; built-in bounds follow the row kind and apply only to rows with their statistic
  (``Bound.if_present``);
- a failure a valid waiver covers moves to ``Verdict.waived``; an expired waiver is an error.

Parts (``parts``: the :class:`~compare.records.PartReport` of each part of a run compared in turn,
``--rank all`` ...): a part that was not compared or was lost is one *incomplete* failure naming
the part and the reason, strict policy or not, and no waiver covers it -- a gated run with a part
missing is never PASSED. Its row (:meth:`~compare.records.PartReport.row`) is that failure's row
and is not checked again; without ``parts`` (a saved CSV or parquet table) that row is one more
row not compared.
Part failures come first, then the rows' in row order.

Outcome: FAILED if a value failure or an error remains; else INCOMPLETE if an incomplete failure
remains; else PASSED; NOT_GATED when the policy asks nothing (no bound, not strict).
"""

from __future__ import annotations

import datetime
import functools
import math
import operator
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from itertools import repeat
from operator import attrgetter, eq, is_
from pathlib import Path

import numpy as np

from ..errors import OptionError
from ..kernels import BOOL_CAPABLE, METRIC_NAMES, metric_key, resolve_algorithms
from ..pairing.near import did_you_mean
from ..records import (ARGUMENT_METRIC, Bound, CheckFailure, MetricRow, Outcome, PairStatus, PartReport, RowKind,
                       Verdict)
from ..stats import STAT_METRIC_NAMES, STAT_METRIC_OF
from ..stats_table import RowColumns
from .policy import CHECKSUM_METRICS, BoundResolver, Policy, RowFields, Selector, Waiver, distinct, metric_name

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    ">": operator.gt,
    "<": operator.lt,
}
#: The same comparisons over a column.
_NUMPY_OPS: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
    ">=": np.greater_equal, "<=": np.less_equal, "==": np.equal, ">": np.greater, "<": np.less}
#: Every run of comparison characters in a gate text: the five operators and the near misses
#: (``=>``, ``=<``, ``!=``, ``<>``, a lone ``=``) a typo makes.
_OP_RE = re.compile(r">=|<=|==|=>|=<|!=|<>|>|<|=")
#: The near misses with the operator meant (None: no such operator).
_NEAR_OPS: dict[str, str | None] = {"=>": ">=", "=<": "<=", "=": "==", "!=": None, "<>": None}
#: An -alg index, and the name of the file an unquoted ``>=NUMBER`` / ``>NUMBER`` leaves behind.
_INDEX_RE = re.compile(r"^[0-9]+$")
_LEFT_BEHIND_RE = re.compile(r"^=?[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$")
_FORM = "expected METRIC>=NUMBER (ops: >= <= > < ==), e.g. CosineSimilarity>=0.99"

#: Metrics with a value on bool-vs-bool rows (the others are never computed there;
#: RelativeEuclideanDistance only for a golden without True).
_BOOL_METRICS = frozenset(BOOL_CAPABLE)
#: Of those, the ones whose ``None`` on a bool row is the data's doing, not a gap (not checked).
_BOOL_MAYBE = frozenset({"RelativeEuclideanDistance"})


#: The one metric an argument row has a value for (every other metric is undefined there).
_ARGUMENT_ONLY = frozenset({ARGUMENT_METRIC})
_ARGUMENT_KEY = metric_key(ARGUMENT_METRIC)


def parse_gate(text: str) -> Bound:
    """Parse ``Metric>=number`` into a :class:`Bound` whose source is ``--gate TEXT``.

    Raises :class:`OptionError` whose one line says what is wrong and the accepted form: an
    empty text, no operator (with the quoting hint of :func:`_no_operator`), two operators, a
    near-miss operator (``=>``), no metric or no number, a metric that is not one (with the
    closest names), a group of metrics (``all``), StandardDeviation, or a number that is not one
    (NaN included).
    """
    bad = f"bad --gate {text!r}"
    stripped = text.strip()
    if not stripped:
        raise OptionError(f"{bad}: empty; {_FORM}")
    ops = [m.group() for m in _OP_RE.finditer(stripped)]
    if not ops:
        raise OptionError(f"{bad}: {_no_operator(stripped)}")
    if len(ops) > 1:
        raise OptionError(f"{bad}: {len(ops)} comparisons ({' '.join(ops)}); a gate is one bound on one metric: "
                          "give one --gate per bound, e.g. --gate 'CosineSimilarity>=0.99' --gate "
                          "'MaxAbsoluteError<=1'")
    op = ops[0]
    if op not in _OPS:
        meant = _NEAR_OPS[op]
        fix = f"did you mean {meant!r}? " if meant else ""
        raise OptionError(f"{bad}: {op!r} is not a comparison; {fix}{_FORM}")
    name, _, number = (part.strip() for part in stripped.partition(op))
    if not name:
        raise OptionError(f"{bad}: no metric before {op!r}; {_FORM}")
    if not number:
        raise OptionError(f"{bad}: no number after {op!r}; {_FORM}")
    if metric_key(name) == _ARGUMENT_KEY:  # non-tensor arguments: 0.0 same, 1.0 different; only rows that have it
        if number.lower() == "same" and op == "==":
            number = "0"
        try:
            value = float(number)
        except ValueError:
            raise OptionError(f"{bad}: {number!r} is not a number or 'same'; e.g. {ARGUMENT_METRIC}==same") from None
        return Bound(metric=ARGUMENT_METRIC, op=op, value=value, source=f"--gate {stripped}", if_present=True)
    metric = _gate_metric(name, bad)
    if number.lower() == "same" and metric in CHECKSUM_METRICS and op == "==":
        number = "0"  # a checksum's metric is 0.0 when both sides are the same
    try:
        value = float(number)
    except ValueError:
        raise OptionError(f"{bad}: {number!r} is not a number; {_FORM}") from None
    if math.isnan(value):
        raise OptionError(f"{bad}: a bound cannot be NaN; {_FORM}")
    return Bound(metric=metric, op=op, value=value, source=f"--gate {stripped}")


#: The tensor metrics a gate can bound: all but StandardDeviation (four numbers, not one).
_TENSOR_GATEABLE = tuple(m for m in METRIC_NAMES if m != "StandardDeviation")


def gateable_metrics() -> tuple[str, ...]:
    """Every metric a gate can bound, canonical names: the tensor metrics but StandardDeviation
    (not a single number), the statistics metrics, ArgumentDiff."""
    return (*_TENSOR_GATEABLE, *STAT_METRIC_NAMES, ARGUMENT_METRIC)


def _gateable_text() -> str:
    return (f"gateable metrics: {', '.join(_TENSOR_GATEABLE)} (or their -alg aliases and indexes); statistics rows: "
            f"{', '.join(STAT_METRIC_NAMES)}; msprobe arguments: {ARGUMENT_METRIC}")


def _gate_metric(name: str, bad: str) -> str:
    """The canonical metric a gate's ``name`` is (a name, alias or -alg index); :class:`OptionError`
    for anything else: a group of metrics (``all``: an -alg word, not one metric), StandardDeviation,
    an unknown name (with the closest gateable ones)."""
    metric = _named_metric(name)
    if metric is None:
        try:
            group = resolve_algorithms(name)
        except OptionError:
            group = []
        if len(group) > 1:
            raise OptionError(f"{bad}: {name!r} is an -alg word that selects {len(group)} metrics, not a metric a "
                              "gate can bound; give one --gate per metric; "
                              f"{_gateable_text()}; {_FORM}")
        near = did_you_mean(name, gateable_metrics())
        raise OptionError(f"{bad}: unknown metric {name!r}; {near + ' ' if near else ''}{_gateable_text()}; {_FORM}")
    if metric == "StandardDeviation":
        raise OptionError(f"{bad}: StandardDeviation is not a single number and cannot be gated")
    return metric


def _named_metric(name: str) -> str | None:
    """The canonical metric ``name`` spells (:func:`~compare.verdict.policy.metric_name`) or whose
    -alg index it is; None otherwise."""
    if _INDEX_RE.match(name):
        return METRIC_NAMES[int(name)] if int(name) < len(METRIC_NAMES) else None
    return metric_name(name)


def _no_operator(text: str) -> str:
    """The diagnosis of a gate without operator. A metric name alone is most likely ``--gate
    cos>=0.99`` unquoted: the shell took ``>`` for a redirection, made a file ``=0.99`` and
    passed ``cos``; the file is looked for in the working folder (an empty file named
    ``=NUMBER`` or ``NUMBER``, the newest) to say so exactly."""
    metric = _named_metric(text)
    if metric is None:
        near = did_you_mean(text, gateable_metrics())
        return f"no comparison operator; {near + ' ' if near else ''}{_FORM}"
    left_behind = _redirect_file(Path("."))
    if left_behind is None:
        return (f"no comparison operator; did you mean --gate '{metric}>=0.99'? (quote it: the shell reads > as a "
                "redirection; a file named '=0.99' may have been created here)")
    op = ">=" if left_behind.startswith("=") else ">"
    bound = left_behind.removeprefix("=")
    return (f"no comparison operator; did you mean --gate '{metric}{op}{bound}'? (quote it: the shell read > as a "
            f"redirection and created the empty file {left_behind!r} here: remove it)")


def _redirect_file(folder: Path) -> str | None:
    """The name of the newest empty file in ``folder`` named ``=NUMBER`` or ``NUMBER`` (what an
    unquoted ``>=NUMBER`` / ``>NUMBER`` leaves behind), or None."""
    found: list[tuple[float, str]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return None
    for entry in entries:
        if not _LEFT_BEHIND_RE.match(entry.name):
            continue
        try:
            stat = entry.stat(follow_symlinks=False)
        except (ValueError, OSError):
            continue
        if entry.is_file(follow_symlinks=False) and stat.st_size == 0:
            found.append((stat.st_mtime, entry.name))
    return max(found)[1] if found else None


def _defined(row: MetricRow) -> frozenset[str] | None:
    """Metrics that have a value for this row's data (None: all of them); see the module docstring."""
    return _defined_for(row.kind, _empty(row.shape), row.left_dtype, row.right_dtype)


def _empty(shape: tuple[int, ...] | None) -> bool:
    """Whether a shape is that of an empty tensor (a 0 in it)."""
    return bool(shape) and 0 in shape  # type: ignore[operator]


def _defined_for(kind: RowKind, empty: bool, left_dtype: str | None, right_dtype: str | None
                 ) -> frozenset[str] | None:
    """:func:`_defined` of a row of this kind, emptiness (:func:`_empty`) and data types: an argument
    row has ArgumentDiff only, an empty tensor nothing, bool against bool :data:`BOOL_CAPABLE`."""
    if kind is RowKind.ARGUMENT:
        return _ARGUMENT_ONLY
    if empty:
        return frozenset()
    if left_dtype == "bool" and right_dtype == "bool":
        return _BOOL_METRICS
    return None


def violations(row: MetricRow, bounds: Sequence[Bound]) -> list[tuple[Bound, float]]:
    """The bounds a compared row's computed values break, with the value (the value rules of
    :func:`evaluate`: a NaN breaks every bound; a metric not computed or undefined for the data
    breaks nothing here -- completeness is :func:`evaluate`'s business)."""
    defined = _defined(row)
    out: list[tuple[Bound, float]] = []
    for bound in bounds:
        if defined is not None and bound.metric not in defined:
            continue
        if bound.metric in row.undefined:
            continue
        value = row.metrics.get(bound.metric)
        if value is not None and (value != value or not _OPS[bound.op](value, bound.value)):
            out.append((bound, float(value)))
    return out


class _Failing(Enum):
    """Why the rows of a :class:`_Found` fail."""

    NOT_COMPARED = "not compared"
    NOT_COMPUTED = "not computed"
    VIOLATION = "violation"


@dataclass(frozen=True)
class _Found:
    """Rows (positions, increasing) failing one way; ``bound`` is their bound (None: not compared)
    and ``order`` its position in the rows' bounds (-1: not compared), the order of one row's failures."""

    failing: _Failing
    rows: np.ndarray
    bound: Bound | None
    order: int


class _Rows:
    """What :func:`evaluate` reads of the rows: a :class:`~compare.stats_table.RowColumns` and
    the columns it derives from them (kept once read)."""

    def __init__(self, rows: Sequence[MetricRow]) -> None:
        self.columns = RowColumns(rows)
        self._keyed: dict[str, np.ndarray] = {}

    def keyed(self, metric: str) -> np.ndarray:
        """Whether each row's ``metrics`` has the key ``metric`` (None value or not): the rows a
        :attr:`Bound.if_present` bound checks (:meth:`load_keyed`)."""
        self.load_keyed((metric,))
        return self._keyed[metric]

    def load_keyed(self, metrics: Sequence[str]) -> None:
        """Read :meth:`keyed` of ``metrics`` (:meth:`~compare.stats_table.RowColumns.keyed`)."""
        for metric in dict.fromkeys(metrics):
            if metric not in self._keyed:
                self._keyed[metric] = self.columns.keyed(metric)

    @functools.cached_property
    def cases(self) -> np.ndarray:
        """Per row, what :func:`_defined_for` reads as bits: 4 an argument row, 2 an empty tensor
        (:func:`_empty`), 1 bool against bool (int8). Each test over every row only when a C-level
        ``in`` (a set of the distinct shapes) finds a row it can be true for."""
        columns, n = self.columns, len(self.columns)
        shapes = columns.shape
        empties = {shape for shape in set(shapes) if _empty(shape)}  # judged once per distinct shape
        out = np.zeros(n, dtype=np.int8)
        if empties:
            out |= np.fromiter(map(empties.__contains__, shapes), dtype=bool, count=n).astype(np.int8) * 2
        if any(map(is_, columns.kind, repeat(RowKind.ARGUMENT))):
            out |= np.fromiter(map(is_, columns.kind, repeat(RowKind.ARGUMENT)), dtype=bool, count=n).astype(np.int8) * 4
        left, right = columns.left_dtype, columns.right_dtype
        if "bool" in left and "bool" in right:
            out |= (np.fromiter(map(eq, left, repeat("bool")), dtype=bool, count=n)
                    & np.fromiter(map(eq, right, repeat("bool")), dtype=bool, count=n)).astype(np.int8)
        return out

    def exceptional(self) -> np.ndarray:
        """Whether some metric may be undefined for each row's data (:func:`_defined_for` is not
        None: :attr:`cases` not 0, or a statistic recorded as null): those rows are checked one by one."""
        columns = self.columns
        return np.fromiter(map(bool, columns.undefined), dtype=bool, count=len(columns)) | (self.cases != 0)

    def row_text(self, i: int) -> str:
        columns = self.columns
        left = columns.left_op[i]
        return columns.tensor_id[i] or (left if left != "*" else columns.right_op[i])

    def reasons(self, i: int) -> str:
        reasons = self.columns.reasons[i]
        return "; ".join(reasons) if reasons else "no reason recorded"

    def failure(self, i: int, metric: str | None, value: float | None, bound: Bound | None, message: str,
                incomplete: bool) -> CheckFailure:
        columns = self.columns
        return CheckFailure(row=i, tensor_id=columns.tensor_id[i], op_type=columns.op_type[i],
                            left_op=columns.left_op[i], right_op=columns.right_op[i], metric=metric, value=value,
                            bound=bound, message=message, incomplete=incomplete)

    def not_compared(self, i: int) -> CheckFailure:
        status = self.columns.status[i]
        return self.failure(i, None, None, None, f"{self.row_text(i)} not compared ({status.value}): {self.reasons(i)}",
                            True)

    def not_computed(self, i: int, bound: Bound) -> CheckFailure:
        why = self.reasons(i)
        kind = self.columns.kind[i]
        if kind is RowKind.STATISTICS and bound.metric not in STAT_METRIC_OF:
            why = "this row compares recorded statistics (no tensor data), gate it with a statistics metric such as " \
                  "MaxRelDiff or L2NormRelDiff"
        elif kind is RowKind.TENSOR and bound.metric in STAT_METRIC_OF:
            why = ("a statistics metric: this tensor row has no statistics recorded on both sides (msprobe's dump.json, "
                   "a MindSpore statistic.csv) to compare")
        elif bound.metric in STAT_METRIC_OF and not self.keyed(bound.metric)[i]:
            why = f"the statistic was not recorded on both sides; {why}"
        message = f"{bound.metric} not computed for {self.row_text(i)}, required by {bound.text} ({bound.source}): {why}"
        return self.failure(i, bound.metric, None, bound, message, True)

    def violations(self, rows: np.ndarray, bound: Bound) -> list[CheckFailure]:
        """The failures of the rows at ``rows`` whose value violates ``bound``."""
        columns = self.columns
        metric = bound.metric
        values = columns.metric(metric)[0][rows].tolist()  # Python floats: repr, the shortest exact text
        tensor_id, op_type, left_op, right_op = columns.tensor_id, columns.op_type, columns.left_op, columns.right_op
        end = f" violates {bound.text} ({bound.source})"
        return [CheckFailure(row=i, tensor_id=tensor_id[i], op_type=op_type[i], left_op=left_op[i],
                             right_op=right_op[i], metric=metric, value=value, bound=bound,
                             message=f"{metric} = {value!r}{end}", incomplete=False)
                for i, value in zip(rows.tolist(), values)]

    def made(self, found: _Found) -> list[CheckFailure]:
        """The failures of ``found``, in its row order."""
        bound = found.bound
        if found.failing is _Failing.NOT_COMPARED or bound is None:
            return [self.not_compared(i) for i in found.rows.tolist()]
        if found.failing is _Failing.NOT_COMPUTED:
            return [self.not_computed(i, bound) for i in found.rows.tolist()]
        return self.violations(found.rows, bound)

    def selects(self, selector: Selector, i: int) -> bool:
        """Whether ``selector`` selects row ``i``."""
        columns = self.columns
        return selector.selects(RowFields.at(columns, i), columns.left_op[i], columns.right_op[i],
                                columns.tensor_id[i])


_METRICS = attrgetter("metrics")


def evaluate(rows: Sequence[MetricRow], policy: Policy, *, today: datetime.date | None = None,
             parts: Sequence[PartReport] = ()) -> Verdict:
    """Check every row against ``policy`` (module docstring); ``today`` decides waiver expiry
    (the local date when None); ``parts``: the parts of a run compared in turn (each missing one
    fails). Failures come part failures first, then in row order, one row's in bound order.

    On columns (:class:`~compare.stats_table.RowColumns`: a statistics table's own lists, one
    ``map`` over records): the rows are grouped by their bounds (:meth:`BoundResolver.groups`,
    resolved once per distinct data types and kind when the policy has no rules) and each bound
    is one numpy comparison over its metric's column (``~(value OP limit)`` is true for NaN: a NaN
    violates every bound). The rows for which a metric may have no value for the data (an
    argument row, an empty tensor, bool against bool, a statistic recorded as null) say so one
    by one (:func:`_defined_for`); only failing rows are read further (their failure's fields)."""
    today = today or datetime.date.today()
    valid, errors = _waivers(policy, today)
    read = _Rows(rows)
    columns = read.columns
    n = len(columns)
    gaps = columns.expected_gap
    gap = np.fromiter(map(bool, gaps), dtype=bool, count=n) if any(gaps) else np.zeros(n, dtype=bool)
    expected = int(gap.sum())
    if not policy.gated:
        return Verdict(Outcome.FAILED if errors else Outcome.NOT_GATED, errors=errors, checked=0,
                       expected_gaps=expected)
    missing = _missing_parts(columns, parts)
    resolver = BoundResolver(policy)
    groups = resolver.groups(columns, np.flatnonzero(~gap))
    compared = columns.compared
    strict = policy.strict
    found: list[_Found] = []
    if strict:
        lost = ~gap & ~compared
        lost[[position for position, _ in missing if position >= 0]] = False
        found.append(_Found(_Failing.NOT_COMPARED, np.flatnonzero(lost), None, -1))
    columns.load([bound.metric for bounds, _ in groups for bound in bounds if not bound.if_present])
    read.load_keyed([bound.metric for bounds, _ in groups for bound in bounds if bound.if_present])
    exceptional = read.exceptional()
    undefined = 0
    for bounds, where in groups:
        at = where[compared[where]]
        if not len(at) or not bounds:
            continue
        odd = np.flatnonzero(exceptional[at])
        no_value, maybe = _one_by_one(read, bounds, at[odd].tolist())
        for order, bound in enumerate(bounds):
            live = np.ones(len(at), dtype=bool)
            if len(odd):
                live[odd] = ~no_value[order]
            undefined += len(at) - int(live.sum())
            if bound.if_present:
                live &= read.keyed(bound.metric)[at]
                if not live.any():  # (a checksum bound on rows without checksums: the metric is not read)
                    continue
            values, present = columns.metric(bound.metric)
            has = present[at]
            absent = live & ~has
            if len(odd):
                bool_maybe = np.zeros(len(at), dtype=bool)
                bool_maybe[odd] = maybe[order]
                undefined += int((absent & bool_maybe).sum())
                absent &= ~bool_maybe
            if strict and absent.any():
                found.append(_Found(_Failing.NOT_COMPUTED, at[absent], bound, order))
            broken = live & has & ~_NUMPY_OPS[bound.op](values[at], bound.value)
            if broken.any():
                found.append(_Found(_Failing.VIOLATION, at[broken], bound, order))
    failures = _in_order(read, found)
    failures, waived = _apply_waivers(failures, valid, read)
    failures = [_part_missing(position, part) for position, part in missing] + failures
    if errors or any(not f.incomplete for f in failures):
        outcome = Outcome.FAILED
    elif failures:
        outcome = Outcome.INCOMPLETE
    else:
        outcome = Outcome.PASSED
    return Verdict(outcome, failures, waived, errors, checked=n - expected, bounds=resolver.used,
                   expected_gaps=expected, undefined=undefined)


def _one_by_one(read: _Rows, bounds: Sequence[Bound], rows: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """For the rows whose metrics may have no value for their data (``rows``), per bound (first
    axis) and row: whether the bound's metric has no value for the row's data (not checked, counted
    undefined), and whether a missing value is the data's doing (bool RelativeEuclideanDistance:
    a number only sometimes; counted undefined when missing, not incomplete). Worked out once per
    distinct (:attr:`_Rows.cases`, null statistics) of the rows (:func:`distinct`): what
    :func:`_defined_for` and the nulls read."""
    columns = read.columns
    kind, left, right, nulls = columns.kind, columns.left_dtype, columns.right_dtype, columns.undefined
    cases = read.cases[rows]
    first, number = distinct([cases.tolist(), list(map(nulls.__getitem__, rows))], len(rows))
    no_value = np.zeros((len(bounds), len(first)), dtype=bool)
    maybe = np.zeros((len(bounds), len(first)), dtype=bool)
    for k, at in enumerate(first.tolist()):
        i = rows[at]
        defined = _defined_for(kind[i], bool(cases[at] & 2), left[i], right[i])
        for order, bound in enumerate(bounds):
            metric = bound.metric
            if (defined is not None and metric not in defined) or metric in nulls[i]:
                no_value[order, k] = True
            elif defined is not None and metric in _BOOL_MAYBE:
                maybe[order, k] = True
    return no_value[:, number], maybe[:, number]


def _in_order(read: _Rows, found: list[_Found]) -> list[CheckFailure]:
    """The failures of ``found`` in row order, one row's in the order of its bounds."""
    found = [f for f in found if len(f.rows)]
    if not found:
        return []
    made = [failure for f in found for failure in read.made(f)]
    if len(found) == 1:
        return made
    rows = np.concatenate([f.rows for f in found])
    orders = np.concatenate([np.full(len(f.rows), f.order) for f in found])
    return list(map(made.__getitem__, np.lexsort((orders, rows)).tolist()))


def _missing_parts(columns: RowColumns, parts: Sequence[PartReport]) -> list[tuple[int, PartReport]]:
    """Each missing part with the position of its row (-1 when the rows have none: a saved result
    written before parts had rows), in part order; each row stands for one part at most."""
    missing = [part for part in parts if part.missing]
    if not missing:
        return []
    compared = PairStatus.COMPARED
    by_name: dict[str, list[int]] = {}
    for i, (tensor_id, status, left_op) in enumerate(zip(columns.tensor_id, columns.status, columns.left_op)):
        if tensor_id is None and status is not compared:
            by_name.setdefault(left_op, []).append(i)
    rows = columns.rows
    taken: set[int] = set()
    found: list[tuple[int, PartReport]] = []
    for part in missing:
        position = next((i for i in by_name.get(part.name, ()) if i not in taken and part.stands_for(rows[i])), -1)
        taken.add(position)
        found.append((position, part))
    return found


def _part_missing(position: int, part: PartReport) -> CheckFailure:
    return CheckFailure(row=position, tensor_id=None, op_type=None, left_op=part.name, right_op=part.name,
                        metric=None, value=None, bound=None, message=part.why, incomplete=True, part=part.name)


def _waivers(policy: Policy, today: datetime.date) -> tuple[list[Waiver], list[str]]:
    """(waivers still valid today, one error per expired waiver naming it and its date)."""
    valid: list[Waiver] = []
    errors: list[str] = []
    for waiver in policy.waivers:
        if waiver.expires is not None and waiver.expired(today):
            errors.append(f"{waiver.label} expired on {waiver.expires.isoformat()} (today is {today.isoformat()}): "
                          "renew it or remove it")
        else:
            valid.append(waiver)
    return valid, errors


def _apply_waivers(failures: list[CheckFailure], waivers: list[Waiver], read: _Rows
                   ) -> tuple[list[CheckFailure], list[CheckFailure]]:
    """Split failures into (kept, waived): the first valid waiver matching the row and covering
    the failure waives it (``waived_by`` = the waiver's label)."""
    if not waivers:
        return failures, []
    kept: list[CheckFailure] = []
    waived: list[CheckFailure] = []
    matching: dict[int, list[Waiver]] = {}
    for failure in failures:
        candidates = matching.get(failure.row)
        if candidates is None:
            candidates = matching[failure.row] = [w for w in waivers if read.selects(w.selector, failure.row)]
        waiver = next((w for w in candidates if w.covers(failure.metric, failure.incomplete)), None)
        if waiver is None:
            kept.append(failure)
        else:
            waived.append(replace(failure, waived_by=waiver.label))
    return kept, waived


__all__ = ["evaluate", "gateable_metrics", "parse_gate", "violations"]
