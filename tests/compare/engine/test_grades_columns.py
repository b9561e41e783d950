"""msprobe's grades read as columns (compare.engine.grades over compare.stats_table.RowColumns)
equal the record-based grading they replaced, kept here as the oracle (a TensorPlace a row, a
loop over each call's rows): the same Result and Err_message on random rows (tensor, statistics
and argument rows; NaN / inf / None / absent metrics; checksum runs; several calls, ranks,
iterations; unjudged, outputs-only and weight-gradient calls; malformed TensorIndexes; missing
sides, expected gaps, rows not comparable) in both modes; and the same grades for a statistics
table's rows read as its MetricRows view and as a list of the records built from it (random
tables, and the shared real msprobe trees), without building a record for the view."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compare.api import compare_network
from compare.engine import grades as engine_grades
from compare.engine.grades import (
    CHECKSUM_KEY,
    COSINE_KEY,
    NORM_KEY,
    OUTPUTS_ONLY_APIS,
    UNJUDGED_APIS,
    GradeMode,
    grade_rows,
    row_grades,
    tensor_place,
)
from compare.records import (
    ARGUMENT_METRIC,
    ArgumentDiff,
    MetricRow,
    PairStatus,
    RowGrade,
    RowKind,
    StatDiff,
    TensorKind,
    ValueCounts,
)
from compare.stats import StatsRow, diff_stat
from compare.stats_table import MetricRows, RowColumns, StatsResult, StatsTable
from conftest import shared_path

# ------------------------------------------------------------------------------ the oracle (the record-based grading)


def _oracle_value(row: MetricRow, key: str) -> float | None:
    value = row.metrics.get(key)
    if value is None or math.isnan(value):
        return None
    return float(value)


@dataclass
class _OracleGroup:
    unjudged: bool
    outputs_only: bool
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)


def _oracle_largest_norm(rows: Sequence[MetricRow], positions: Iterable[int]) -> float:
    largest = 0.0
    for i in positions:
        value = rows[i].metrics.get(NORM_KEY)
        if value is not None and math.isfinite(value):
            largest = max(largest, abs(float(value)))
    return largest


def _oracle_smallest_cosine(rows: Sequence[MetricRow], positions: Iterable[int]) -> float:
    smallest = 1.0
    for i in positions:
        value = _oracle_value(rows[i], COSINE_KEY)
        if value is not None:
            smallest = min(smallest, value)
    return smallest


def _oracle_row_findings(row: MetricRow) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(special values, dtype + not comparable) findings of one row."""
    special = []
    left, right = row.left_counts, row.right_counts
    if left is not None and right is not None and left.nan + left.inf > 0 and right.nan + right.inf == 0:
        special.append(("error", engine_grades.MSG_SPECIAL_VALUES))
    dtype = []
    if (row.left_dtype and row.right_dtype and row.left_dtype != row.right_dtype
            and not any(mark in row.right_op for mark in engine_grades.FUSED_MARKS)):
        dtype.append(("error", engine_grades.MSG_DTYPE))
    if row.status is PairStatus.NOT_COMPARABLE:
        dtype.append(("error", engine_grades.MSG_NOT_COMPARABLE))
    return special, dtype


def _oracle_grade(findings: list[tuple[str, str]]) -> RowGrade:
    if not findings:
        return RowGrade(engine_grades.Grade.PASS)
    worst = max(findings, key=lambda f: {"pass": 0, "warning": 1, "error": 2}[f[0]])[0]
    return RowGrade(engine_grades.Grade(worst), tuple(m for _, m in findings))


def oracle_grades(rows: Sequence[MetricRow], mode: GradeMode) -> list[RowGrade]:
    """Today's record-based row_grades before the columns (one record a row, a loop a call)."""
    groups: dict[tuple, _OracleGroup] = {}
    keys: list[tuple | None] = []
    places = [tensor_place(row.tensor_id) for row in rows]
    for i, (row, place) in enumerate(zip(rows, places)):
        if place is None:
            keys.append(None)
            continue
        key = (row.rank, row.iteration, row.graph, place.call)
        group = groups.get(key)
        if group is None:
            name = engine_grades.api_name(place.call)
            group = groups[key] = _OracleGroup(name in UNJUDGED_APIS, name in OUTPUTS_ONLY_APIS)
        (group.inputs if place.kind is TensorKind.INPUT else group.outputs).append(i)
        keys.append(key)
    for group in groups.values():
        group.outputs.sort(key=lambda i: places[i].index)  # type: ignore[union-attr]
    checksums = mode is GradeMode.STATISTICS and any(row.metrics.get(CHECKSUM_KEY) is not None for row in rows)
    found: dict[int, list[tuple[str, str]]] = {}
    if not checksums:
        for key, group in groups.items():
            if group.unjudged or group.outputs_only or not group.outputs:
                continue
            parsed = engine_grades.parse_msprobe_name(key[3])
            if parsed is not None and parsed.direction == "parameters_grad":
                continue
            first = group.outputs[0]
            if mode is GradeMode.STATISTICS:
                largest_in = _oracle_largest_norm(rows, group.inputs)
                largest_out = _oracle_largest_norm(rows, group.outputs)
                if largest_in < 0.1:
                    for i in group.outputs:
                        value = _oracle_value(rows[i], NORM_KEY)
                        if value is not None and abs(value) > 0.5:
                            found.setdefault(i, []).append(("error", engine_grades.MSG_NORM_OUTPUT))
                ten = largest_out > 0.1 if largest_in == 0.0 else largest_out / largest_in > 10.0
                if ten:
                    found.setdefault(first, []).append(("warning", engine_grades.MSG_NORM_TEN_TIMES))
            else:
                smallest_in = _oracle_smallest_cosine(rows, group.inputs)
                smallest_out = _oracle_smallest_cosine(rows, group.outputs)
                if smallest_in > 0.9 and smallest_in - smallest_out > 0.1:
                    found.setdefault(first, []).append(("warning", engine_grades.MSG_COSINE))
    grades = []
    for i, row in enumerate(rows):
        key, place = keys[i], places[i]
        if key is not None:
            group = groups[key]
            if group.unjudged or (group.outputs_only and place.kind is not TensorKind.OUTPUT):  # type: ignore[union-attr]
                grades.append(_oracle_grade([]))
                continue
        if row.expected_gap:
            grades.append(_oracle_grade([]))
        elif row.status is PairStatus.MISSING_RIGHT:
            grades.append(_oracle_grade([("warning", engine_grades.MSG_NO_BENCH)]))
        elif row.status is PairStatus.MISSING_LEFT:
            grades.append(_oracle_grade([("warning", engine_grades.MSG_NO_NPU)]))
        elif row.kind is RowKind.ARGUMENT:
            differs = [("error", engine_grades.MSG_ARGUMENT)] if row.metrics.get(ARGUMENT_METRIC) else []
            grades.append(_oracle_grade([*differs, *found.get(i, ())]))
        elif checksums:
            if row.status is not PairStatus.COMPARED:
                grades.append(_oracle_grade([("error", engine_grades.MSG_NOT_COMPARABLE)]))
                continue
            value = row.metrics.get(CHECKSUM_KEY)
            if value is None or math.isnan(value):
                grades.append(_oracle_grade([("warning", engine_grades.MSG_CHECKSUM_MISSING)]))
            else:
                grades.append(_oracle_grade([("error", engine_grades.MSG_CHECKSUM)] if value != 0.0 else []))
        else:
            special, dtype = _oracle_row_findings(row)
            calls = found.get(i)
            if calls is None:
                grades.append(_oracle_grade([*special, *dtype]))
            else:
                errors = [f for f in calls if f[0] == "error"]
                warnings = [f for f in calls if f[0] != "error"]
                grades.append(_oracle_grade([*special, *errors, *dtype, *warnings]))
    return grades


# ------------------------------------------------------------------------------ random rows

CALLS = ["Functional.linear.2.forward", "Functional.linear.3.forward", "Torch.matmul.0.backward",
         "Module.attn.qkv.Linear.forward.0", "Tensor.to.0.forward", "Distributed.all_to_all_single.1.forward",
         "Module.layer.Linear.parameters_grad.0", "conv1", "Module.a:b.Linear.forward.0", "x"]
ODD_IDS = [None, "", "conv1", "conv1:output", "conv1:weight:0", "conv1:output:x", ":output:0", "a:input:²",
           "a:input:-1", "input:0", "a:output:07", "a:output:٣"]
METRIC_VALUES = [None, math.nan, math.inf, -math.inf, 0.0, -0.0, 0.05, 0.1, 0.5, 0.51, 0.8, 0.85, 0.95, 1.0, 2.0, 20.0]
COUNTS = [None, ValueCounts(0, 0, 0), ValueCounts(1, 0, 0), ValueCounts(0, 2, 0), ValueCounts(0, 0, 3)]
DTYPES = [None, "", "float32", "bfloat16"]


@st.composite
def tensor_ids(draw: st.DrawFn) -> str | None:
    if draw(st.integers(0, 7)) == 0:
        return draw(st.sampled_from(ODD_IDS))
    return f"{draw(st.sampled_from(CALLS))}:{draw(st.sampled_from(['input', 'output']))}:{draw(st.integers(0, 3))}"


@st.composite
def metric_dicts(draw: st.DrawFn, keys: Sequence[str]) -> dict[str, float | None]:
    out = {}
    for key in keys:
        if draw(st.booleans()):
            out[key] = draw(st.sampled_from(METRIC_VALUES))
    return out


@st.composite
def metric_rows(draw: st.DrawFn, keys: Sequence[str]) -> MetricRow:
    tensor_id = draw(tensor_ids())
    op = tensor_id.rsplit(":", 2)[0] if tensor_id else "op"
    return MetricRow(
        index=0, op_type="linear", left_op=op, right_op=draw(st.sampled_from([op, "Module.mlp.gate_up.Linear.forward.0"])),
        tensor_id=tensor_id, left_dtype=draw(st.sampled_from(DTYPES)), right_dtype=draw(st.sampled_from(DTYPES)),
        metrics=draw(metric_dicts(keys)), status=draw(st.sampled_from(list(PairStatus))),
        rank=draw(st.sampled_from([None, 0, 1])), iteration=draw(st.sampled_from([None, 3])),
        graph=draw(st.sampled_from([None, 0])), expected_gap=draw(st.sampled_from([None, None, None, "", "a Cast"])),
        left_counts=draw(st.sampled_from(COUNTS)), right_counts=draw(st.sampled_from(COUNTS)),
        kind=draw(st.sampled_from([RowKind.TENSOR, RowKind.STATISTICS, RowKind.ARGUMENT])))


KEYS = {GradeMode.TENSOR: (COSINE_KEY, ARGUMENT_METRIC),
        GradeMode.STATISTICS: (NORM_KEY, CHECKSUM_KEY, ARGUMENT_METRIC)}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), mode=st.sampled_from(list(GradeMode)), checksum=st.booleans())
def test_columns_grade_random_records_as_the_record_loop_did(data: st.DataObject, mode: GradeMode, checksum: bool):
    keys = KEYS[mode] if checksum else tuple(k for k in KEYS[mode] if k != CHECKSUM_KEY)
    rows = data.draw(st.lists(metric_rows(keys), max_size=24))
    expected = oracle_grades(rows, mode)
    assert row_grades(rows, mode=mode) == expected
    assert row_grades(RowColumns(rows), mode=mode) == expected
    grade_rows(rows, mode=mode)
    assert [row.grade for row in rows] == expected


@settings(max_examples=300, deadline=None)
@given(tensor_id=st.one_of(tensor_ids(), st.text(alphabet=":abc.01²٣\n", max_size=12)))
def test_the_row_loop_reads_each_tensor_index_as_tensor_place(tensor_id: str | None):
    places = engine_grades._places(RowColumns([MetricRow(0, None, "a", "a", tensor_id)]))
    place = tensor_place(tensor_id)
    if place is None:
        assert places.group.tolist() == [-1] and places.output.tolist() == [False]
    else:
        assert places.calls == [place.call] and places.group.tolist() == [0]
        assert places.output.tolist() == [place.kind is TensorKind.OUTPUT]
        assert places.number.tolist() == [place.index if place.kind is TensorKind.OUTPUT else 0]


# ------------------------------------------------------------------------------ a statistics table: view and records


@st.composite
def stat_values(draw: st.DrawFn, checksum: bool) -> dict[str, StatDiff]:
    """Random statistics of a row, as the comparison makes them (:func:`compare.stats.diff_stat`:
    relative errors 0, 0.05, 0.5, 0.51, 2, 20, inf, NaN; a side without a value)."""
    values = {}
    for name in ("max", "l2norm"):
        if draw(st.integers(0, 4)):
            left = draw(st.sampled_from([None, 1.0, 1.05, 1.5, 1.51, 3.0, 21.0, -1.0, math.nan, math.inf]))
            right = draw(st.sampled_from([None, 1.0, 1.0, 1.0, 0.0, math.inf]))
            values[name] = diff_stat(name, left, right)
    if checksum and draw(st.integers(0, 3)):
        values["checksum"] = diff_stat("checksum", "a", draw(st.sampled_from(["a", "b", None])))
    return values


@st.composite
def stats_tables(draw: st.DrawFn) -> StatsTable:
    """A table of random statistics rows and argument rows (kept as records), several parts."""
    checksum = draw(st.booleans())
    count = draw(st.integers(0, 20))
    stats_rows, records = [], []
    for index in range(count):
        tensor_id = draw(tensor_ids())
        op = tensor_id.rsplit(":", 2)[0] if tensor_id else "op"
        status = draw(st.sampled_from([PairStatus.COMPARED, PairStatus.COMPARED, *PairStatus]))
        rank, iteration = draw(st.sampled_from([None, 0, 1])), draw(st.sampled_from([None, 2]))
        left_dtype, right_dtype = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
        values = draw(stat_values(checksum)) if status is PairStatus.COMPARED else {}
        if draw(st.integers(0, 4)) == 0:  # an argument row
            same = draw(st.booleans())
            argument = ArgumentDiff("int", "int", "1", "1" if same else "2", same)
            record = MetricRow(index, "linear", op, op, tensor_id, left_dtype=left_dtype, right_dtype=right_dtype,
                               metrics={ARGUMENT_METRIC: draw(st.sampled_from([None, 0.0, 1.0, math.nan]))},
                               status=status, rank=rank, iteration=iteration, kind=RowKind.ARGUMENT, argument=argument)
            stats_rows.append(StatsRow(index, "linear", op, op, tensor_id, left_dtype, right_dtype, status=status,
                                       rank=rank, iteration=iteration, argument=argument))
            records.append(record)
            continue
        stats_rows.append(StatsRow(index, "linear", op, op, tensor_id, left_dtype, right_dtype, values=values,
                                   status=status, rank=rank, iteration=iteration))
        records.append(MetricRow(index, "linear", op, op, tensor_id, kind=RowKind.STATISTICS))
    stats = [name for name in ("max", "l2norm", "checksum") if any(name in row.values for row in stats_rows)]
    return StatsResult.of_rows(stats_rows, stats, records).table


class _Counting(MetricRows):
    """A MetricRows view that counts the records it builds."""

    built = 0

    def __getitem__(self, item):  # type: ignore[override]
        _Counting.built += 1
        return super().__getitem__(item)

    def __iter__(self):
        for row in super().__iter__():
            _Counting.built += 1
            yield row


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=stats_tables())
def test_a_tables_view_grades_as_its_records_without_building_them(table: StatsTable):
    view = _Counting(table)
    records = list(MetricRows(table))
    _Counting.built = 0
    graded = row_grades(view, mode=GradeMode.STATISTICS)
    assert _Counting.built == 0
    assert graded == row_grades(records, mode=GradeMode.STATISTICS) == oracle_grades(records, GradeMode.STATISTICS)


@pytest.mark.parametrize("left, right", [("s_L1_bf16", "s_L1_base"), ("s_mix_perturb", "s_mix_base"),
                                         ("s_L1_md5_perturb", "s_L1_md5_base")])
def test_real_statistics_runs_grade_the_view_as_the_records(left: str, right: str):
    trees = shared_path("msprobe-real", "trees")
    result = compare_network(trees / left, trees / right, allow_same=True)
    view = result.rows
    assert isinstance(view, MetricRows)
    records = list(view)
    graded = row_grades(view, mode=GradeMode.STATISTICS)
    assert graded == row_grades(records, mode=GradeMode.STATISTICS) == oracle_grades(records, GradeMode.STATISTICS)
    assert graded == [row.grade for row in records]  # the run's own grades (set on its table) are these
    assert any(grade.messages for grade in graded)
