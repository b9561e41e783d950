"""msprobe's per-row reading of a comparison: the ``Result`` (pass / warning / error) and the
``Err_message`` list of each row, by the rules ``msprobe compare`` applies (docs/msprobe.md,
"Result and Err_message"). The gate stays the CI decision; the grade is the reading msprobe users
know. Entry: :func:`grade_rows`.

Rows are read as they are (floats in, a :class:`~compare.records.RowGrade` out); nothing is
recomputed. They are read as columns (:class:`~compare.stats_table.RowColumns`: a statistics
table's own lists, or each field read once from records), so that a statistics run of 10^5 rows
builds no record: the call rules run over every call at once, the row rules mark the rows that
may have a finding, and only those are graded one by one (every other row shares one pass
grade). Two kinds of rule:

* **row rules** look at one row (its data types, its status, its special values);
* **call rules** compare a call's outputs with its inputs. A row's TensorIndex
  ``{call}:{input|output}:{i}`` names its call (``Functional.linear.2.forward:input:1``); the rows
  of one call (and one rank / iteration / graph) form a group. A call rule's finding goes to the
  group's *first output row* (lowest output index), or, for the "greater than 0.5" rule, to each
  output row it concerns. A row whose TensorIndex is in another form belongs to no group: only
  the row rules apply to it.

Thresholds (msprobe's, as observed in its output and source, see docs/msprobe.md):

===========================  ==========  ===========================================================
rule                         grade       condition
===========================  ==========  ===========================================================
special values (tensor)      error       the left (NPU) side has NaN or +-inf elements and the right
                                         (bench) side has none (``left_counts`` / ``right_counts``)
norm error (statistics)      error       largest input ``L2NormRelDiff`` < 0.1 and this output's
                                         ``L2NormRelDiff`` > 0.5
dtype                        error       both data types known and different (not for a bench call
                                         named ``*qkv*`` / ``*gate_up*``, fused weights)
not comparable               error       both sides present, vcompare could not compare them
                                         (vcompare's rule: msprobe's shape rule falls here)
norm ten times (statistics)  warning     largest output ``L2NormRelDiff`` > 10 x the largest input
                                         one; when the inputs' largest is 0: > 0.1
cosine (tensor)              warning     smallest input ``CosineSimilarity`` > 0.9 and it exceeds the
                                         smallest output one by more than 0.1
checksum (checksum runs)     error       ``ChecksumDiff`` is 1 (the two checksums differ)
checksum missing             warning     ``ChecksumDiff`` is None or NaN (a side has no checksum)
missing counterpart          warning     status MISSING_LEFT / MISSING_RIGHT (not an expected gap)
argument (non-tensor)        error       an argument row (``RowKind.ARGUMENT``) whose ``ArgumentDiff``
                                         is 1 (the values differ); of the other rules only the call
                                         rules' findings reach it (as msprobe, a call's finding goes
                                         to its output 0 even when that is a ``None`` item)
===========================  ==========  ===========================================================

Edge-case policy:

* a metric that is ``None`` (not computed, the side lacks the statistic) or NaN never takes part
  in a call rule's largest / smallest value; an infinite ``L2NormRelDiff`` (right-hand norm 0,
  or an infinite norm) does not take part in the largest value either, but an infinite output
  value is "> 0.5" (msprobe reads both so);
* the largest relative error starts at 0 and the smallest cosine at 1 (no value: that start), so
  a call without input rows compares its outputs with 0 / 1;
* special values need the side counts: a row without ``left_counts`` / ``right_counts`` (a
  statistics row, a row not compared) is not checked for them;
* calls msprobe leaves unjudged: every rule is skipped for the API names ``empty``,
  ``empty_like``, ``numpy``, ``to``, ``__setitem__``, ``empty_with_format``,
  ``new_empty_strided``, ``new_empty``, ``empty_strided``; for ``_reduce_scatter_base``,
  ``_all_gather_base``, ``all_to_all_single``, ``batch_isend_irecv`` only the row rules on output
  rows apply (the API name is the second dot-separated part of the call name);
* a ``*.parameters_grad.N`` call (module weight gradients, outputs in vcompare's TensorIndex) gets
  the row rules only: msprobe reads these tensors as the inputs of a call without outputs;
* rows that are expected gaps (``expected_gap`` set) pass without a message, as the gates count
  them without failing them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import is_not, ne
from typing import NamedTuple

import numpy as np

from convert.names.msprobe import parse_msprobe_name

from ..kernels.metrics import COSINE
from ..records import ARGUMENT_METRIC, Grade, Label, MetricRow, PairStatus, RowGrade, RowKind, TensorKind
from ..stats_table import RowColumns


class GradeMode(Label):
    """Which of msprobe's rule sets grades the rows: the one of its tensor comparison (rows with
    the tensor metrics) or of its statistics comparison (rows with the statistic differences;
    a statistics run whose rows carry ``ChecksumDiff`` is a checksum run, graded by the checksum
    rules alone, as msprobe's md5 mode is)."""

    TENSOR = "tensor"
    STATISTICS = "statistics"


#: The Err_message texts: msprobe's wording for its rules (users grep for them), vcompare's own
#: wording for the rows msprobe has no rule for (marked).
MSG_SPECIAL_VALUES = "error: There is nan/inf/-inf in the maximum or minimum value of NPU."
MSG_NORM_OUTPUT = "error: The NormRelativeErr of output is greater than 0.5."
MSG_DTYPE = "error: The dtype of NPU and Bench are inconsistent."
MSG_NOT_COMPARABLE = "error: The NPU and Bench tensors could not be compared."  # vcompare's wording
MSG_NORM_TEN_TIMES = "warning: The norm relative error of output is 10 times that of input."
MSG_COSINE = "warning: The input/parameters of Cosine > 0.9, and input/parameters - output > 0.1"
MSG_CHECKSUM = "error: The CRC-32 value of NPU differs from that of the bench."
MSG_CHECKSUM_MISSING = "warning: The parameter of NPU does not match the bench."
MSG_ARGUMENT = "error: The non-tensor argument of NPU differs from that of the bench."  # vcompare's wording
MSG_NO_BENCH = "warning: No bench data matched."  # vcompare's rule (msprobe: pass)
MSG_NO_NPU = "warning: No NPU data matched."  # vcompare's rule (msprobe lists no such row)

#: Thresholds of the call rules (module doc).
NORM_INPUT_LIMIT = 0.1
NORM_OUTPUT_LIMIT = 0.5
NORM_TIMES = 10.0
NORM_FROM_ZERO = 0.1
COSINE_INPUT_FLOOR = 0.9
COSINE_DROP = 0.1

#: The metric keys the rules read (vcompare's names; the statistics ones are the metrics of
#: statistics rows: diff = left - right, rel = |diff| / |right|, ChecksumDiff 0 same / 1 different).
COSINE_KEY = COSINE
NORM_KEY = "L2NormRelDiff"
CHECKSUM_KEY = "ChecksumDiff"

#: API names msprobe does not judge at all / judges only by the outputs' row rules.
UNJUDGED_APIS = frozenset({"empty", "empty_like", "numpy", "to", "__setitem__", "empty_with_format",
                           "new_empty_strided", "new_empty", "empty_strided"})
OUTPUTS_ONLY_APIS = frozenset({"_reduce_scatter_base", "_all_gather_base", "all_to_all_single", "batch_isend_irecv"})
#: Bench call names whose dtype is not compared (fused weights: a dtype change is by design).
FUSED_MARKS = ("qkv", "gate_up")

_SEVERITY = {Grade.PASS: 0, Grade.WARNING: 1, Grade.ERROR: 2}


class TensorPlace(NamedTuple):
    """Where a row's tensor sits: its call, input or output, and index (parsed TensorIndex)."""

    call: str
    kind: TensorKind
    index: int


@dataclass(frozen=True)
class _Finding:
    grade: Grade
    message: str


def tensor_place(tensor_id: str | None) -> TensorPlace | None:
    """The parsed TensorIndex ``{call}:{input|output}:{i}``, or None when it is in another form.
    :func:`_places` reads every row's so, inline (a call a row would double its time); a test
    holds the two equal (tests/compare/engine/test_grades_columns.py)."""
    if not tensor_id:
        return None
    parts = tensor_id.rsplit(":", 2)
    if len(parts) != 3 or not parts[0] or not parts[2].isdecimal():
        return None
    kind = _PLACE_KINDS.get(parts[1])
    return TensorPlace(parts[0], kind, int(parts[2])) if kind is not None else None


#: The TensorIndex kinds a call rule reads, by their text.
_PLACE_KINDS = {TensorKind.INPUT.value: TensorKind.INPUT, TensorKind.OUTPUT.value: TensorKind.OUTPUT}
#: Whether a TensorIndex kind is an output, by its text.
_IS_OUTPUT = {TensorKind.INPUT.value: False, TensorKind.OUTPUT.value: True}


def api_name(call: str) -> str:
    """msprobe's API name of a call: the second dot-separated part (``Tensor.to.0.forward`` ->
    ``to``); ``""`` when the name has no dot."""
    parts = call.split(".")
    return parts[1] if len(parts) > 1 else ""


@dataclass(frozen=True)
class _Places:
    """The call groups of the rows: ``group[i]`` row i's group (-1: none), ``output[i]`` whether
    it is an output, ``number[i]`` its output index (0 for the other rows); ``calls[g]`` group
    g's call. A group is one call of one part of a run (rank, iteration, graph, call)."""

    group: np.ndarray
    output: np.ndarray
    number: np.ndarray
    calls: list[str]


def _places(columns: RowColumns) -> _Places:
    """Each row's call group, by :func:`tensor_place`'s reading of its TensorIndex (the index
    after the last colon, decimal digits; the kind before it, ``input`` or ``output``; a call
    before that, not empty), one loop over the rows that builds no record (~0.4 us a row)."""
    groups: dict[tuple[int | None, int | None, int | None, str], int] = {}
    calls: list[str] = []
    group: list[int] = []
    output: list[bool] = []
    numbers: list[int] = []
    is_output = _IS_OUTPUT.get
    for tensor_id, rank, iteration, graph in zip(columns.tensor_id, columns.rank, columns.iteration, columns.graph):
        at, out = -1, False
        if tensor_id:
            head, _, index = tensor_id.rpartition(":")
            call, _, kind = head.rpartition(":")
            placed = is_output(kind)
            if placed is not None and call and index.isdecimal():
                key = (rank, iteration, graph, call)
                at = groups.get(key, -1)
                if at < 0:
                    at = groups[key] = len(calls)
                    calls.append(call)
                out = placed
                if out:
                    numbers.append(int(index))
        group.append(at)
        output.append(out)
    outputs = np.array(output, dtype=bool)
    number = np.zeros(len(output), dtype=np.int64)
    number[outputs] = numbers
    return _Places(np.array(group, dtype=np.int64), outputs, number, calls)


@dataclass(frozen=True)
class _CallFlags:
    """How msprobe judges a call (module doc): ``unjudged`` not at all, ``outputs_only`` by its
    outputs' row rules, ``call_rules`` whether the call rules apply (neither, and not a
    ``*.parameters_grad.N`` call)."""

    unjudged: bool
    outputs_only: bool
    call_rules: bool


def _call_flags(call: str) -> _CallFlags:
    name = api_name(call)
    unjudged, outputs_only = name in UNJUDGED_APIS, name in OUTPUTS_ONLY_APIS
    if unjudged or outputs_only:
        return _CallFlags(unjudged, outputs_only, call_rules=False)
    parsed = parse_msprobe_name(call)
    return _CallFlags(False, False, call_rules=parsed is None or parsed.direction != "parameters_grad")


class _Rows:
    """The columns the rules read (:class:`~compare.stats_table.RowColumns`), the rows' call
    groups, and each group's flags (read when a row of it has a finding)."""

    def __init__(self, columns: RowColumns, mode: GradeMode) -> None:
        self.columns = columns
        self.places = _places(columns)
        self._flags: dict[int, _CallFlags] = {}
        columns.load((NORM_KEY, CHECKSUM_KEY, ARGUMENT_METRIC) if mode is GradeMode.STATISTICS
                     else (COSINE_KEY, ARGUMENT_METRIC))

    def flags(self, group: int) -> _CallFlags:
        found = self._flags.get(group)
        if found is None:
            found = self._flags[group] = _call_flags(self.places.calls[group])
        return found

    def judged(self, row: int) -> bool:
        """Whether msprobe judges row ``row`` at all (the unjudged / outputs-only API names of its
        call; a row of no call is always judged)."""
        group = int(self.places.group[row])
        if group < 0:
            return True
        flags = self.flags(group)
        if flags.unjudged:
            return False
        if flags.outputs_only:
            return bool(self.places.output[row])
        return True


def _call_findings(rows: _Rows, mode: GradeMode) -> dict[int, list[_Finding]]:
    """The call rules of every group at once: findings by row position (errors and warnings
    apart, so that each keeps msprobe's place in the message order). Each group's largest
    ``L2NormRelDiff`` / smallest ``CosineSimilarity`` of its inputs and of its outputs is one
    ``ufunc.at`` over the rows (module doc: the start values, NaN / None / inf not taking part);
    a group's first output row is its lowest output index, then the first in row order."""
    places = rows.places
    count = len(places.calls)
    grouped = places.group >= 0
    outs = np.flatnonzero(grouped & places.output)
    if not len(outs):
        return {}
    ins = np.flatnonzero(grouped & ~places.output)
    in_groups, out_groups = places.group[ins], places.group[outs]
    order = np.lexsort((outs, places.number[outs], out_groups))
    sorted_groups = out_groups[order]
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    first = dict(zip(sorted_groups[starts].tolist(), outs[order][starts].tolist()))
    found: dict[int, list[_Finding]] = {}
    if mode is GradeMode.STATISTICS:
        values = rows.columns.metric(NORM_KEY)[0]
        sizes = np.where(np.isfinite(values), np.abs(values), 0.0)
        largest_in, largest_out = np.zeros(count), np.zeros(count)
        np.maximum.at(largest_in, in_groups, sizes[ins])
        np.maximum.at(largest_out, out_groups, sizes[outs])
        high = (largest_in[out_groups] < NORM_INPUT_LIMIT) & (np.abs(values[outs]) > NORM_OUTPUT_LIMIT)
        for row in outs[high].tolist():
            found[row] = [_Finding(Grade.ERROR, MSG_NORM_OUTPUT)]
        with np.errstate(divide="ignore", invalid="ignore"):
            ten_times = np.where(largest_in == 0.0, largest_out > NORM_FROM_ZERO, largest_out / largest_in > NORM_TIMES)
        flagged, finding = np.flatnonzero(ten_times), _Finding(Grade.WARNING, MSG_NORM_TEN_TIMES)
    else:
        values = rows.columns.metric(COSINE_KEY)[0]
        cosines = np.where(np.isnan(values), 1.0, values)
        smallest_in, smallest_out = np.ones(count), np.ones(count)
        np.minimum.at(smallest_in, in_groups, cosines[ins])
        np.minimum.at(smallest_out, out_groups, cosines[outs])
        drop = (smallest_in > COSINE_INPUT_FLOOR) & (smallest_in - smallest_out > COSINE_DROP)
        flagged, finding = np.flatnonzero(drop), _Finding(Grade.WARNING, MSG_COSINE)
    for group in flagged.tolist():
        at = first.get(group)
        if at is not None:
            found.setdefault(at, []).append(finding)
    group_of = places.group
    return {row: found[row] for row in sorted(found) if rows.flags(int(group_of[row])).call_rules}


def _special_value_findings(rows: _Rows, row: int) -> list[_Finding]:
    """The special-values rule (the first of msprobe's order): the left side has NaN / inf
    elements and the right side none (both counted)."""
    left, right = rows.columns.left_counts[row], rows.columns.right_counts[row]
    if left is None or right is None:
        return []
    return [_Finding(Grade.ERROR, MSG_SPECIAL_VALUES)] if left.nan + left.inf > 0 and right.nan + right.inf == 0 else []


def _dtype_findings(rows: _Rows, row: int) -> list[_Finding]:
    """The dtype and not-comparable rules (they follow the call rules' errors in msprobe's order)."""
    columns = rows.columns
    found = []
    left, right = columns.left_dtype[row], columns.right_dtype[row]
    if left and right and left != right and not any(mark in columns.right_op[row] for mark in FUSED_MARKS):
        found.append(_Finding(Grade.ERROR, MSG_DTYPE))
    if columns.status[row] is PairStatus.NOT_COMPARABLE:
        found.append(_Finding(Grade.ERROR, MSG_NOT_COMPARABLE))
    return found


def _checksum_findings(rows: _Rows, row: int) -> list[_Finding]:
    """The checksum rule of one compared row (``ChecksumDiff`` 0 same, else different; None or
    NaN: missing)."""
    value = float(rows.columns.metric(CHECKSUM_KEY)[0][row])
    if math.isnan(value):
        return [_Finding(Grade.WARNING, MSG_CHECKSUM_MISSING)]
    if value != 0.0:
        return [_Finding(Grade.ERROR, MSG_CHECKSUM)]
    return []


def _argument_differs(rows: _Rows, row: int) -> bool:
    """An argument row's ``ArgumentDiff`` is set and not 0 (the values differ; NaN counts as set)."""
    values, present = rows.columns.metric(ARGUMENT_METRIC)
    return bool(present[row]) and float(values[row]) != 0.0


#: The grade of a row with no finding (one record shared by every such row).
_PASSED = RowGrade(Grade.PASS)


def _grade(findings: Sequence[_Finding]) -> RowGrade:
    if not findings:
        return _PASSED
    worst = Grade.PASS
    for finding in findings:
        if _SEVERITY[finding.grade] > _SEVERITY[worst]:
            worst = finding.grade
    return RowGrade(worst, tuple(f.message for f in findings))


def _row_grade(rows: _Rows, row: int, calls: list[_Finding] | None, checksums: bool) -> RowGrade:
    """The grade of one row that may have a finding (:func:`_candidates`), by the rules' order."""
    columns = rows.columns
    if not rows.judged(row):
        return _PASSED
    status = columns.status[row]
    if columns.expected_gap[row]:
        return _PASSED
    if status is PairStatus.MISSING_RIGHT:
        return _grade([_Finding(Grade.WARNING, MSG_NO_BENCH)])
    if status is PairStatus.MISSING_LEFT:
        return _grade([_Finding(Grade.WARNING, MSG_NO_NPU)])
    if columns.kind[row] is RowKind.ARGUMENT:  # compared by value (an error when not the same), plus its call's findings
        differs = [_Finding(Grade.ERROR, MSG_ARGUMENT)] if _argument_differs(rows, row) else []
        return _grade([*differs, *(calls or ())])
    if checksums:
        return _grade(_checksum_findings(rows, row) if status is PairStatus.COMPARED
                      else [_Finding(Grade.ERROR, MSG_NOT_COMPARABLE)])
    if calls is None:
        return _grade([*_special_value_findings(rows, row), *_dtype_findings(rows, row)])
    errors = [f for f in calls if f.grade is Grade.ERROR]
    warnings = [f for f in calls if f.grade is not Grade.ERROR]
    return _grade([*_special_value_findings(rows, row), *errors, *_dtype_findings(rows, row), *warnings])


def _candidates(rows: _Rows, checksums: bool) -> np.ndarray:
    """Whether each row may have a finding of a row rule; every other row passes (an expected
    gap passes too). A superset, :func:`_row_grade` decides: a status other than COMPARED, an
    ``ArgumentDiff`` set and not 0 (an argument row that differs), both data types different
    (known or not, fused or not), both side counts known, and in a checksum run a
    ``ChecksumDiff`` that is not 0 (NaN: absent)."""
    columns = rows.columns
    count = len(columns)
    flags = ~columns.compared
    values, present = columns.metric(ARGUMENT_METRIC)
    flags |= present & (values != 0.0)
    flags |= np.fromiter(map(ne, columns.left_dtype, columns.right_dtype), dtype=bool, count=count)
    counted = np.fromiter(map(is_not, columns.left_counts, repeat(None)), dtype=bool, count=count)
    if counted.any():  # (a statistics table's rows have no counts)
        flags |= counted & np.fromiter(map(is_not, columns.right_counts, repeat(None)), dtype=bool, count=count)
    if checksums:
        flags |= columns.metric(CHECKSUM_KEY)[0] != 0.0
    return flags


def row_grades(rows: Sequence[MetricRow] | RowColumns, *, mode: GradeMode) -> list[RowGrade]:
    """The grade of each row (same order), by the rules of ``mode`` (module doc); rows unchanged.

    Read as columns (:class:`~compare.stats_table.RowColumns`: a statistics table's own lists, or
    each field read once from records): the call rules over every group at once
    (:func:`_call_findings`), the row rules' candidates as masks (:func:`_candidates`); only the
    rows with a possible finding are graded one by one, every other row shares the grade of a
    pass. No record is built."""
    columns = rows if isinstance(rows, RowColumns) else RowColumns(rows)
    count = len(columns)
    if not count:
        return []
    read = _Rows(columns, mode)
    checksums = mode is GradeMode.STATISTICS and bool(columns.metric(CHECKSUM_KEY)[1].any())
    call_found = {} if checksums else _call_findings(read, mode)
    flags = _candidates(read, checksums)
    if call_found:
        flags[np.fromiter(call_found, dtype=np.int64, count=len(call_found))] = True
    grades = [_PASSED] * count
    for row in np.flatnonzero(flags).tolist():
        grades[row] = _row_grade(read, row, call_found.get(row), checksums)
    return grades


def grade_rows(rows: Sequence[MetricRow], *, mode: GradeMode) -> None:
    """Set every row's :attr:`~compare.records.MetricRow.grade`: msprobe's Result and
    Err_message by the rules of ``mode`` (module doc; thresholds, edge cases and the differences
    from msprobe in docs/msprobe.md). Grade all rows of a run in one call: the call rules
    compare rows of the same call."""
    for row, grade in zip(rows, row_grades(rows, mode=mode)):
        row.grade = grade


__all__ = ["GradeMode", "TensorPlace", "api_name", "grade_rows", "row_grades", "tensor_place"]
