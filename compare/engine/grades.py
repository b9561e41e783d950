"""msprobe's per-row reading of a comparison: the ``Result`` (pass / warning / error) and the
``Err_message`` list of each row, by the rules ``msprobe compare`` applies (docs/msprobe.md,
"Result and Err_message"). The gate stays the CI decision; the grade is the reading msprobe users
know. Entry: :func:`grade_rows`.

Rows are read as they are (floats in, a :class:`~compare.records.RowGrade` out); nothing is
recomputed. Two kinds of rule:

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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from convert.names.msprobe import parse_msprobe_name

from ..kernels.metrics import COSINE
from ..records import ARGUMENT_METRIC, Grade, Label, MetricRow, PairStatus, RowGrade, RowKind, TensorKind


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


class GroupKey(NamedTuple):
    """One call of one part of a run (rank / iteration / graph are None when not set); a
    NamedTuple: hashed once per row, in C."""

    rank: int | None
    iteration: int | None
    graph: int | None
    call: str


@dataclass
class _Group:
    """The rows of one call: positions into the row list, by kind; ``unjudged`` /
    ``outputs_only``: its API name is one msprobe does not judge / judges by the outputs only."""

    unjudged: bool
    outputs_only: bool
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class _Finding:
    grade: Grade
    message: str


def tensor_place(tensor_id: str | None) -> TensorPlace | None:
    """The parsed TensorIndex ``{call}:{input|output}:{i}``, or None when it is in another form."""
    if not tensor_id:
        return None
    parts = tensor_id.rsplit(":", 2)
    if len(parts) != 3 or not parts[0] or not parts[2].isdecimal():
        return None
    kind = _PLACE_KINDS.get(parts[1])
    return TensorPlace(parts[0], kind, int(parts[2])) if kind is not None else None


#: The TensorIndex kinds a call rule reads, by their text.
_PLACE_KINDS = {TensorKind.INPUT.value: TensorKind.INPUT, TensorKind.OUTPUT.value: TensorKind.OUTPUT}


def api_name(call: str) -> str:
    """msprobe's API name of a call: the second dot-separated part (``Tensor.to.0.forward`` ->
    ``to``); ``""`` when the name has no dot."""
    parts = call.split(".")
    return parts[1] if len(parts) > 1 else ""


def _value(row: MetricRow, key: str) -> float | None:
    """A metric of the row as a float, None when absent, not computed or NaN."""
    value = row.metrics.get(key)
    if value is None or math.isnan(value):
        return None
    return float(value)


def _largest_norm(rows: Sequence[MetricRow], positions: Iterable[int]) -> float:
    """The largest finite ``L2NormRelDiff`` (absolute) of those rows; 0 when none (NaN, None:
    not finite)."""
    largest = 0.0
    for i in positions:
        value = rows[i].metrics.get(NORM_KEY)
        if value is not None and math.isfinite(value):
            largest = max(largest, abs(float(value)))
    return largest


def _smallest_cosine(rows: Sequence[MetricRow], positions: Iterable[int]) -> float:
    """The smallest ``CosineSimilarity`` of those rows; 1 when none."""
    smallest = 1.0
    for i in positions:
        value = _value(rows[i], COSINE_KEY)
        if value is not None:
            smallest = min(smallest, value)
    return smallest


def _has_special_values(row: MetricRow) -> bool:
    """The left side has NaN / inf elements and the right side none (both counted)."""
    left, right = row.left_counts, row.right_counts
    if left is None or right is None:
        return False
    return left.nan + left.inf > 0 and right.nan + right.inf == 0


def _is_fused(row: MetricRow) -> bool:
    return any(mark in row.right_op for mark in FUSED_MARKS)


def _special_value_findings(row: MetricRow) -> list[_Finding]:
    """The special-values rule (the first of msprobe's order)."""
    return [_Finding(Grade.ERROR, MSG_SPECIAL_VALUES)] if _has_special_values(row) else []


def _dtype_findings(row: MetricRow) -> list[_Finding]:
    """The dtype and not-comparable rules (they follow the call rules' errors in msprobe's order)."""
    found = []
    if row.left_dtype and row.right_dtype and row.left_dtype != row.right_dtype and not _is_fused(row):
        found.append(_Finding(Grade.ERROR, MSG_DTYPE))
    if row.status is PairStatus.NOT_COMPARABLE:
        found.append(_Finding(Grade.ERROR, MSG_NOT_COMPARABLE))
    return found


def _checksum_findings(row: MetricRow) -> list[_Finding]:
    """The checksum rule of one compared row (``ChecksumDiff`` 0 same, else different)."""
    value = row.metrics.get(CHECKSUM_KEY)
    if value is None or math.isnan(value):
        return [_Finding(Grade.WARNING, MSG_CHECKSUM_MISSING)]
    if value != 0.0:
        return [_Finding(Grade.ERROR, MSG_CHECKSUM)]
    return []


def _missing_findings(row: MetricRow) -> list[_Finding] | None:
    """The finding of a row with a side missing or an expected gap; None for the other rows."""
    if row.expected_gap:
        return []
    if row.status is PairStatus.MISSING_RIGHT:
        return [_Finding(Grade.WARNING, MSG_NO_BENCH)]
    if row.status is PairStatus.MISSING_LEFT:
        return [_Finding(Grade.WARNING, MSG_NO_NPU)]
    return None


def _groups(rows: Sequence[MetricRow]) -> tuple[dict[GroupKey, _Group], list[GroupKey | None], list[TensorPlace | None]]:
    """The call groups, each row's group (None: no group) and each row's place."""
    groups: dict[GroupKey, _Group] = {}
    keys: list[GroupKey | None] = []
    places: list[TensorPlace | None] = []
    for i, row in enumerate(rows):
        place = tensor_place(row.tensor_id)
        places.append(place)
        if place is None:
            keys.append(None)
            continue
        key = GroupKey(row.rank, row.iteration, row.graph, place.call)
        group = groups.get(key)
        if group is None:
            name = api_name(place.call)
            group = groups[key] = _Group(name in UNJUDGED_APIS, name in OUTPUTS_ONLY_APIS)
        (group.inputs if place.kind is TensorKind.INPUT else group.outputs).append(i)
        keys.append(key)
    for group in groups.values():
        if len(group.outputs) > 1:
            group.outputs.sort(key=lambda i: _output_index(places[i]))
    return groups, keys, places


def _output_index(place: TensorPlace | None) -> int:
    return place.index if place is not None else 0


def _judged(group: _Group, place: TensorPlace | None) -> bool:
    """Whether msprobe judges a row of this call at all (the unjudged / outputs-only API names;
    a row of no call is always judged)."""
    if group.unjudged:
        return False
    if group.outputs_only:
        return place is not None and place.kind is TensorKind.OUTPUT
    return True


def _has_call_rules(key: GroupKey, group: _Group) -> bool:
    """Whether the call rules apply to a call (not unjudged, not outputs-only, not weight gradients)."""
    if group.unjudged or group.outputs_only:
        return False
    parsed = parse_msprobe_name(key.call)
    return parsed is None or parsed.direction != "parameters_grad"


def _call_findings(rows: Sequence[MetricRow], group: _Group, mode: GradeMode) -> dict[int, list[_Finding]]:
    """The call rules of one group: findings by row position (errors and warnings apart, so
    that each keeps msprobe's place in the message order)."""
    found: dict[int, list[_Finding]] = {}
    if not group.outputs:
        return found
    first = group.outputs[0]
    if mode is GradeMode.STATISTICS:
        largest_in = _largest_norm(rows, group.inputs)
        largest_out = _largest_norm(rows, group.outputs)
        if largest_in < NORM_INPUT_LIMIT:
            for i in group.outputs:
                value = _value(rows[i], NORM_KEY)
                if value is not None and abs(value) > NORM_OUTPUT_LIMIT:
                    found.setdefault(i, []).append(_Finding(Grade.ERROR, MSG_NORM_OUTPUT))
        if largest_in == 0.0:
            ten_times = largest_out > NORM_FROM_ZERO
        else:
            ten_times = largest_out / largest_in > NORM_TIMES
        if ten_times:
            found.setdefault(first, []).append(_Finding(Grade.WARNING, MSG_NORM_TEN_TIMES))
    else:
        smallest_in = _smallest_cosine(rows, group.inputs)
        smallest_out = _smallest_cosine(rows, group.outputs)
        if smallest_in > COSINE_INPUT_FLOOR and smallest_in - smallest_out > COSINE_DROP:
            found.setdefault(first, []).append(_Finding(Grade.WARNING, MSG_COSINE))
    return found


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


def _is_checksum_run(rows: Sequence[MetricRow]) -> bool:
    """Whether a statistics run compares checksums: some row carries a ``ChecksumDiff``."""
    return any(row.metrics.get(CHECKSUM_KEY) is not None for row in rows)


def row_grades(rows: Sequence[MetricRow], *, mode: GradeMode) -> list[RowGrade]:
    """The grade of each row (same order), by the rules of ``mode`` (module doc); rows unchanged."""
    groups, keys, places = _groups(rows)
    checksums = mode is GradeMode.STATISTICS and _is_checksum_run(rows)
    call_found: dict[int, list[_Finding]] = {}
    if not checksums:
        for key, group in groups.items():
            if _has_call_rules(key, group):
                call_found.update(_call_findings(rows, group, mode))
    grades = []
    for i, row in enumerate(rows):
        key = keys[i]
        if key is not None and not _judged(groups[key], places[i]):
            grades.append(_PASSED)
            continue
        if row.expected_gap or row.status is PairStatus.MISSING_RIGHT or row.status is PairStatus.MISSING_LEFT:
            grades.append(_grade(_missing_findings(row)))  # type: ignore[arg-type]
            continue
        if row.kind is RowKind.ARGUMENT:  # compared by value (an error when not the same), plus its call's findings
            differs = [_Finding(Grade.ERROR, MSG_ARGUMENT)] if row.metrics.get(ARGUMENT_METRIC) else []
            grades.append(_grade([*differs, *call_found.get(i, ())]))
            continue
        if checksums:
            grades.append(_grade(_checksum_findings(row) if row.status is PairStatus.COMPARED
                                 else [_Finding(Grade.ERROR, MSG_NOT_COMPARABLE)]))
            continue
        calls = call_found.get(i)
        if calls is None:
            grades.append(_grade([*_special_value_findings(row), *_dtype_findings(row)]))
            continue
        errors = [f for f in calls if f.grade is Grade.ERROR]
        warnings = [f for f in calls if f.grade is not Grade.ERROR]
        grades.append(_grade([*_special_value_findings(row), *errors, *_dtype_findings(row), *warnings]))
    return grades


def grade_rows(rows: Sequence[MetricRow], *, mode: GradeMode) -> None:
    """Set every row's :attr:`~compare.records.MetricRow.grade`: msprobe's Result and
    Err_message by the rules of ``mode`` (module doc; thresholds, edge cases and the differences
    from msprobe in docs/msprobe.md). Grade all rows of a run in one call: the call rules
    compare rows of the same call."""
    for row, grade in zip(rows, row_grades(rows, mode=mode)):
        row.grade = grade


__all__ = ["GradeMode", "GroupKey", "TensorPlace", "api_name", "grade_rows", "row_grades", "tensor_place"]
