"""msprobe's Result / Err_message of each row (compare.engine.grades): each rule on rows built by
hand, its thresholds at their edges, the edge-case policy (None, NaN, inf, missing sides) and the
order of the messages."""

from __future__ import annotations

import math

import pytest

from compare.engine.grades import (
    MSG_CHECKSUM,
    MSG_CHECKSUM_MISSING,
    MSG_COSINE,
    MSG_DTYPE,
    MSG_NO_BENCH,
    MSG_NO_NPU,
    MSG_NORM_OUTPUT,
    MSG_NORM_TEN_TIMES,
    MSG_NOT_COMPARABLE,
    MSG_SPECIAL_VALUES,
    GradeMode,
    TensorPlace,
    api_name,
    grade_rows,
    row_grades,
    tensor_place,
)
from compare.records import Grade, MetricRow, PairStatus, RowGrade, TensorKind, ValueCounts

CALL = "Functional.linear.2.forward"
CLEAN = ValueCounts(nan=0, inf=0, saturated=0)


def row(tensor_id: str | None, *, call: str | None = None, status: PairStatus = PairStatus.COMPARED,
        left_dtype: str = "float32", right_dtype: str = "float32", rank: int | None = None,
        left_counts: ValueCounts | None = None, right_counts: ValueCounts | None = None,
        expected_gap: str | None = None, **metrics: float | None) -> MetricRow:
    """A row of ``call`` (default: the call of ``tensor_id``) with the given metrics."""
    op = call if call is not None else (tensor_id.rsplit(":", 2)[0] if tensor_id else "op")
    return MetricRow(index=0, op_type="linear", left_op=op, right_op=op, tensor_id=tensor_id,
                     left_dtype=left_dtype, right_dtype=right_dtype, metrics=dict(metrics), status=status,
                     rank=rank, left_counts=left_counts, right_counts=right_counts, expected_gap=expected_gap)


def stats_call(inputs: list[float | None], outputs: list[float | None], call: str = CALL) -> list[MetricRow]:
    """The rows of one call in statistics mode, with these L2NormRelDiff values."""
    return ([row(f"{call}:input:{i}", L2NormRelDiff=v) for i, v in enumerate(inputs)]
            + [row(f"{call}:output:{i}", L2NormRelDiff=v) for i, v in enumerate(outputs)])


def tensor_call(inputs: list[float | None], outputs: list[float | None], call: str = CALL) -> list[MetricRow]:
    """The rows of one call in tensor mode, with these CosineSimilarity values."""
    return ([row(f"{call}:input:{i}", CosineSimilarity=v) for i, v in enumerate(inputs)]
            + [row(f"{call}:output:{i}", CosineSimilarity=v) for i, v in enumerate(outputs)])


def results(rows: list[MetricRow], mode: GradeMode) -> list[Grade]:
    return [g.grade for g in row_grades(rows, mode=mode)]


PASS = RowGrade(Grade.PASS)


# --- TensorIndex and API names ---------------------------------------------------------------

def test_tensor_place_parses_the_tensor_index():
    assert tensor_place("Functional.linear.2.forward:input:1") == TensorPlace(CALL, TensorKind.INPUT, 1)
    assert tensor_place("Module.a:b.Linear.forward.0:output:0") == TensorPlace(
        "Module.a:b.Linear.forward.0", TensorKind.OUTPUT, 0)
    for odd in (None, "", "conv1", "conv1:output", "conv1:weight:0", "conv1:output:x", ":output:0"):
        assert tensor_place(odd) is None


def test_api_name_is_the_second_part_of_the_call():
    assert api_name("Tensor.to.0.forward") == "to"
    assert api_name("Module.conv1.Conv2d.forward.0") == "conv1"
    assert api_name("conv1_relu") == ""


# --- row rules -------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", list(GradeMode))
def test_same_rows_pass(mode):
    rows = stats_call([0.0, 0.0], [0.0]) if mode is GradeMode.STATISTICS else tensor_call([1.0], [1.0])
    assert row_grades(rows, mode=mode) == [PASS] * len(rows)


@pytest.mark.parametrize("mode", list(GradeMode))
def test_dtype_differs_is_an_error(mode):
    rows = [row(f"{CALL}:input:0", left_dtype="bfloat16"), row(f"{CALL}:output:0")]
    assert row_grades(rows, mode=mode) == [RowGrade(Grade.ERROR, (MSG_DTYPE,)), PASS]


def test_dtype_of_fused_bench_calls_is_not_compared():
    for fused in ("Module.attn.qkv.Linear.forward.0", "Module.mlp.gate_up.Linear.forward.0"):
        rows = [row(f"{fused}:output:0", left_dtype="bfloat16")]
        assert row_grades(rows, mode=GradeMode.TENSOR) == [PASS]


def test_unknown_dtype_is_not_compared():
    rows = [row(f"{CALL}:output:0", left_dtype="")]
    assert row_grades(rows, mode=GradeMode.TENSOR) == [PASS]


def test_special_values_on_the_left_only_are_an_error():
    bad = ValueCounts(nan=1, inf=0, saturated=0)
    inf = ValueCounts(nan=0, inf=3, saturated=0)
    rows = [row(f"{CALL}:output:0", left_counts=bad, right_counts=CLEAN),
            row(f"{CALL}:output:1", left_counts=inf, right_counts=CLEAN),
            row(f"{CALL}:output:2", left_counts=bad, right_counts=inf),   # the bench has them too
            row(f"{CALL}:output:3", left_counts=CLEAN, right_counts=bad),  # only the bench
            row(f"{CALL}:output:4", left_counts=None, right_counts=None)]  # not counted
    assert results(rows, GradeMode.TENSOR) == [Grade.ERROR, Grade.ERROR, Grade.PASS, Grade.PASS, Grade.PASS]
    assert row_grades(rows, mode=GradeMode.TENSOR)[0].messages == (MSG_SPECIAL_VALUES,)


def test_saturated_values_are_not_special():
    rows = [row(f"{CALL}:output:0", left_counts=ValueCounts(nan=0, inf=0, saturated=5), right_counts=CLEAN)]
    assert results(rows, GradeMode.TENSOR) == [Grade.PASS]


def test_not_comparable_rows_are_errors():
    rows = [row(f"{CALL}:output:0", status=PairStatus.NOT_COMPARABLE)]
    assert row_grades(rows, mode=GradeMode.TENSOR) == [RowGrade(Grade.ERROR, (MSG_NOT_COMPARABLE,))]


@pytest.mark.parametrize("mode", list(GradeMode))
def test_missing_rows_are_warnings_and_expected_gaps_pass(mode):
    rows = [row(f"{CALL}:output:0", status=PairStatus.MISSING_RIGHT),
            row(f"{CALL}:output:1", status=PairStatus.MISSING_LEFT),
            row(f"{CALL}:output:2", status=PairStatus.MISSING_RIGHT, expected_gap="a Cast without counterpart"),
            row(None, status=PairStatus.MISSING_LEFT)]
    assert row_grades(rows, mode=mode) == [RowGrade(Grade.WARNING, (MSG_NO_BENCH,)),
                                           RowGrade(Grade.WARNING, (MSG_NO_NPU,)), PASS,
                                           RowGrade(Grade.WARNING, (MSG_NO_NPU,))]


def test_rows_outside_any_call_get_the_row_rules():
    rows = [row(None, left_dtype="float16"), row("conv1_relu", L2NormRelDiff=0.9)]
    assert results(rows, GradeMode.STATISTICS) == [Grade.ERROR, Grade.PASS]


# --- statistics: the norm rules --------------------------------------------------------------

def test_norm_output_greater_than_half_with_small_inputs_is_an_error():
    rows = stats_call([0.01, 0.04], [0.2, 0.51, 0.5])
    grades = row_grades(rows, mode=GradeMode.STATISTICS)
    assert grades[3] == RowGrade(Grade.ERROR, (MSG_NORM_OUTPUT,))
    assert grades[4].grade is Grade.PASS  # 0.5 is not greater than 0.5
    assert grades[2] == RowGrade(Grade.WARNING, (MSG_NORM_TEN_TIMES,))  # 0.51 / 0.04 > 10, on output 0


def test_norm_output_error_needs_inputs_below_a_tenth():
    rows = stats_call([0.1], [0.9])
    assert results(rows, GradeMode.STATISTICS) == [Grade.PASS, Grade.PASS]  # 0.9 / 0.1 = 9: no warning either


def test_ten_times_warning_goes_to_the_first_output():
    rows = stats_call([0.001], [0.0, 0.011])
    rows = [rows[0], rows[2], rows[1]]  # order of the rows does not matter: output 0 is the first
    grades = row_grades(rows, mode=GradeMode.STATISTICS)
    assert grades[2] == RowGrade(Grade.WARNING, (MSG_NORM_TEN_TIMES,))
    assert grades[0] == grades[1] == PASS


def test_ten_times_is_strict():
    assert results(stats_call([0.01], [0.1]), GradeMode.STATISTICS) == [Grade.PASS, Grade.PASS]
    assert results(stats_call([0.01], [0.1001]), GradeMode.STATISTICS)[1] is Grade.WARNING


def test_from_zero_inputs_the_outputs_must_exceed_a_tenth():
    assert results(stats_call([0.0], [0.1]), GradeMode.STATISTICS) == [Grade.PASS, Grade.PASS]
    assert results(stats_call([0.0], [0.11]), GradeMode.STATISTICS)[1] is Grade.WARNING
    assert results(stats_call([], [0.11]), GradeMode.STATISTICS) == [Grade.WARNING]  # no input: from 0


def test_none_and_nan_take_no_part():
    rows = stats_call([None, math.nan, 0.01], [None, math.nan, 0.6])
    grades = row_grades(rows, mode=GradeMode.STATISTICS)
    assert grades[3] == RowGrade(Grade.WARNING, (MSG_NORM_TEN_TIMES,))  # first output, though None
    assert grades[5] == RowGrade(Grade.ERROR, (MSG_NORM_OUTPUT,))
    assert grades[4] == PASS


def test_infinite_relative_errors():
    # an infinite input does not raise the inputs' largest value; an infinite output is > 0.5 but
    # takes no part in the outputs' largest value
    rows = stats_call([math.inf, 0.01], [math.inf, 0.05])
    grades = row_grades(rows, mode=GradeMode.STATISTICS)
    assert grades[2] == RowGrade(Grade.ERROR, (MSG_NORM_OUTPUT,))
    assert grades[3] == PASS  # 0.05 / 0.01 = 5


def test_message_order_follows_msprobe():
    bad = ValueCounts(nan=2, inf=0, saturated=0)
    rows = [row(f"{CALL}:input:0", L2NormRelDiff=0.001),
            row(f"{CALL}:output:0", left_dtype="bfloat16", left_counts=bad, right_counts=CLEAN, L2NormRelDiff=0.7)]
    grades = row_grades(rows, mode=GradeMode.STATISTICS)
    assert grades[1] == RowGrade(Grade.ERROR, (MSG_SPECIAL_VALUES, MSG_NORM_OUTPUT, MSG_DTYPE, MSG_NORM_TEN_TIMES))


def test_statistics_rules_do_not_read_cosine_and_tensor_rules_do_not_read_norms():
    rows = [row(f"{CALL}:input:0", CosineSimilarity=1.0, L2NormRelDiff=0.0),
            row(f"{CALL}:output:0", CosineSimilarity=0.5, L2NormRelDiff=0.0)]
    assert results(rows, GradeMode.STATISTICS) == [Grade.PASS, Grade.PASS]
    rows = stats_call([0.0], [0.9])
    assert results(rows, GradeMode.TENSOR) == [Grade.PASS, Grade.PASS]


# --- tensor: the cosine rule -----------------------------------------------------------------

def test_cosine_drop_is_a_warning_on_the_first_output():
    grades = row_grades(tensor_call([0.99, 0.95], [0.99, 0.84]), mode=GradeMode.TENSOR)
    assert grades[2] == RowGrade(Grade.WARNING, (MSG_COSINE,))
    assert grades[3] == grades[0] == grades[1] == PASS


def test_cosine_edges():
    assert results(tensor_call([0.95], [0.86]), GradeMode.TENSOR)[1] is Grade.PASS  # drop 0.09
    assert results(tensor_call([0.9], [0.1]), GradeMode.TENSOR)[1] is Grade.PASS  # inputs not above 0.9
    assert results(tensor_call([], [0.89]), GradeMode.TENSOR) == [Grade.WARNING]  # no input: from 1
    assert results(tensor_call([None, math.nan], [math.nan, None]), GradeMode.TENSOR) == [Grade.PASS] * 4


# --- calls msprobe does not judge ------------------------------------------------------------

def test_unjudged_apis_pass():
    call = "Tensor.to.0.forward"
    rows = [row(f"{call}:input:0", left_dtype="bfloat16"), row(f"{call}:output:0", CosineSimilarity=0.0,
                                                                status=PairStatus.MISSING_RIGHT)]
    assert row_grades(rows, mode=GradeMode.TENSOR) == [PASS, PASS]


def test_outputs_only_apis_get_the_row_rules_on_outputs():
    call = "Distributed.all_to_all_single.0.forward"
    rows = [row(f"{call}:input:0", left_dtype="bfloat16", L2NormRelDiff=0.0),
            row(f"{call}:output:0", left_dtype="bfloat16", L2NormRelDiff=0.9)]
    assert row_grades(rows, mode=GradeMode.STATISTICS) == [PASS, RowGrade(Grade.ERROR, (MSG_DTYPE,))]


def test_parameter_gradients_get_the_row_rules_only():
    call = "Module.fc1.Linear.parameters_grad.0"
    rows = [row(f"{call}:output:0", L2NormRelDiff=0.9), row(f"{call}:output:1", left_dtype="bfloat16")]
    assert row_grades(rows, mode=GradeMode.STATISTICS) == [PASS, RowGrade(Grade.ERROR, (MSG_DTYPE,))]


def test_calls_of_other_ranks_are_other_groups():
    rows = [row(f"{CALL}:input:0", rank=0, L2NormRelDiff=0.0), row(f"{CALL}:output:0", rank=0, L2NormRelDiff=0.05),
            row(f"{CALL}:input:0", rank=1, L2NormRelDiff=0.5), row(f"{CALL}:output:0", rank=1, L2NormRelDiff=0.2)]
    assert results(rows, GradeMode.STATISTICS) == [Grade.PASS, Grade.PASS, Grade.PASS, Grade.PASS]
    # rank 0 alone: 0.2 from inputs of 0 warns; mixed with rank 1 (inputs' largest 0.5) it would not
    rows[1].metrics["L2NormRelDiff"] = 0.2
    assert results(rows, GradeMode.STATISTICS) == [Grade.PASS, Grade.WARNING, Grade.PASS, Grade.PASS]


# --- checksum runs ---------------------------------------------------------------------------

def test_checksum_runs_compare_the_checksums_only():
    rows = [row(f"{CALL}:input:0", ChecksumDiff=0.0, L2NormRelDiff=0.0),
            row(f"{CALL}:output:0", ChecksumDiff=1.0, L2NormRelDiff=0.9, left_dtype="bfloat16"),
            row(f"{CALL}:output:1", ChecksumDiff=None),
            row(f"{CALL}:output:2", ChecksumDiff=math.nan),
            row(f"{CALL}:output:3", status=PairStatus.MISSING_RIGHT),
            row(f"{CALL}:output:4", status=PairStatus.NOT_COMPARABLE)]
    assert row_grades(rows, mode=GradeMode.STATISTICS) == [
        PASS, RowGrade(Grade.ERROR, (MSG_CHECKSUM,)), RowGrade(Grade.WARNING, (MSG_CHECKSUM_MISSING,)),
        RowGrade(Grade.WARNING, (MSG_CHECKSUM_MISSING,)), RowGrade(Grade.WARNING, (MSG_NO_BENCH,)),
        RowGrade(Grade.ERROR, (MSG_NOT_COMPARABLE,))]


def test_checksums_are_not_read_in_tensor_mode():
    rows = [row(f"{CALL}:output:0", ChecksumDiff=1.0, CosineSimilarity=1.0)]
    assert row_grades(rows, mode=GradeMode.TENSOR) == [PASS]


# --- the entry -------------------------------------------------------------------------------

def test_grade_rows_sets_each_rows_grade():
    rows = stats_call([0.0], [0.9])
    assert all(r.grade is None for r in rows)
    grade_rows(rows, mode=GradeMode.STATISTICS)
    assert [r.grade for r in rows] == [PASS, RowGrade(Grade.ERROR, (MSG_NORM_OUTPUT, MSG_NORM_TEN_TIMES))]
    assert str(rows[1].grade.grade) == "error"


def test_grade_rows_of_nothing():
    grade_rows([], mode=GradeMode.TENSOR)
    assert row_grades([], mode=GradeMode.STATISTICS) == []
