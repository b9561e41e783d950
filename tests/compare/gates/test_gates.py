"""Accuracy gates: parsing ``--gate`` and evaluating rows against a policy (compare.verdict.gates).

Rows are built directly as MetricRow objects and also through real comparisons
(fixtures/demo, fixtures/bad, synthetic quantised and mixed-precision runs).
"""

from __future__ import annotations

import datetime
import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES

from compare.errors import OptionError
from compare.records import Bound, MetricRow, Outcome, PairStatus
from compare.runs.folders import run_network
from compare.runs.network import NetworkResult
from compare.verdict.gates import evaluate, parse_gate
from compare.verdict.policy import Policy
from compare.verdict.policy_file import load_policy

DEMO = FIXTURES / "demo"
BAD = FIXTURES / "bad"
MANIFEST = json.loads((BAD / "MANIFEST.json").read_text())
TODAY = datetime.date(2026, 11, 23)


def _row(tid: str, cos: float | None = 0.999, status: PairStatus = PairStatus.COMPARED, *, op_type: str = "Conv2D",
         reasons: tuple[str, ...] = (), dtypes: tuple[str, str] = ("float16", "float32"),
         shape: tuple[int, ...] = (1, 8), **metrics: float | None) -> MetricRow:
    op = tid.split(":")[0]
    return MetricRow(0, op_type, op, op, tid, left_dtype=dtypes[0], right_dtype=dtypes[1], shape=shape,
                     metrics={"CosineSimilarity": cos, **metrics}, status=status, reasons=list(reasons))


def _gate(*texts: str) -> Policy:
    return Policy.from_gates([parse_gate(t) for t in texts])


def _policy(tmp_path: Path, text: str) -> Policy:
    path = tmp_path / "gates.toml"
    path.write_text(text)
    return load_policy(path)


# --------------------------------------------------------------------------------------------
# parse_gate


def test_parse_gate_forms() -> None:
    bound = parse_gate("CosineSimilarity>=0.99")
    assert bound == Bound("CosineSimilarity", ">=", 0.99, "--gate CosineSimilarity>=0.99")
    assert parse_gate(" MaxAbsoluteError <= 1e-3 ").value == 0.001
    assert parse_gate("0>0.5").metric == "CosineSimilarity"  # index form, as -alg accepts
    assert parse_gate("maxabs<inf").value == math.inf
    assert parse_gate("cos==1").source == "--gate cos==1"


@pytest.mark.parametrize("text", ["CosineSimilarity=>0.9", "Nope>=1", "StandardDeviation<1", "Cos>=abc", "",
                                  "cos>=nan", "all>=1"])
def test_parse_gate_rejects(text: str) -> None:
    with pytest.raises(OptionError) as info:
        parse_gate(text)
    message = str(info.value)
    assert "bad --gate" in message
    if "StandardDeviation" not in text:
        assert "METRIC>=NUMBER" in message  # the accepted form is shown


# --------------------------------------------------------------------------------------------
# evaluate: values


def test_value_failures_and_nan_and_full_precision_messages() -> None:
    rows = [_row("a:output:0", 0.999), _row("b:output:0", 0.98999999), _row("c:output:0", math.nan)]
    verdict = evaluate(rows, _gate("CosineSimilarity>=0.99"))
    assert verdict.outcome is Outcome.FAILED and verdict.exit_code == 1 and not verdict.passed
    assert [f.tensor_id for f in verdict.failures] == ["b:output:0", "c:output:0"]
    assert verdict.failures[0].message == (
        "CosineSimilarity = 0.98999999 violates CosineSimilarity>=0.99 (--gate CosineSimilarity>=0.99)")
    assert verdict.failures[1].message.startswith("CosineSimilarity = nan violates")
    assert not any(f.incomplete for f in verdict.failures)
    assert verdict.checked == 3 and verdict.bounds == [parse_gate("CosineSimilarity>=0.99")]


def test_tiny_errors_are_never_shown_as_zero() -> None:
    verdict = evaluate([_row("a:output:0", 1.0, MaxAbsoluteError=2.98e-7)], _gate("MaxAbsoluteError<=0"))
    assert verdict.failures[0].message.startswith("MaxAbsoluteError = 2.98e-07 violates MaxAbsoluteError<=0.0")
    verdict = evaluate([_row("a:output:0", 0.9999999999999998)], _gate("CosineSimilarity==1"))
    assert "0.9999999999999998 violates CosineSimilarity==1.0" in verdict.failures[0].message


def test_numpy_values_are_written_as_plain_floats() -> None:
    verdict = evaluate([_row("a:output:0", np.float64(0.25))], _gate("cos>=0.99"))
    assert verdict.failures[0].message.startswith("CosineSimilarity = 0.25 violates")


def test_passed_and_not_gated() -> None:
    rows = [_row("a:output:0", 0.999), _row("b:output:0", None, PairStatus.MISSING_RIGHT)]
    assert evaluate(rows[:1], _gate("cos>=0.99")).outcome is Outcome.PASSED
    ungated = evaluate(rows, Policy.from_gates([]))
    assert ungated.outcome is Outcome.NOT_GATED and ungated.exit_code == 0 and ungated.passed


# --------------------------------------------------------------------------------------------
# evaluate: strict by default


NOT_COMPARED_ROWS = {
    "unreadable": _row("u:output:0", None, PairStatus.NOT_COMPARABLE,
                       reasons=("left tensor unreadable: u.bin: truncated (100 bytes missing)",)),
    "all zero": _row("z:output:0", None, reasons=("CosineSimilarity not computed: all data is zero in the left "
                                                  "tensor (z.bin)",)),
    "shape mismatch": _row("s:output:0", None, PairStatus.NOT_COMPARABLE,
                           reasons=("output 0 shape differs: [1,8] vs [1,9]",)),
    "missing counterpart": _row("m:output:0", None, PairStatus.MISSING_RIGHT,
                                reasons=("no golden tensor for m:output:0",)),
}


@pytest.mark.parametrize("case", sorted(NOT_COMPARED_ROWS))
def test_not_compared_rows_fail_a_strict_gate_as_incomplete(case: str, tmp_path: Path) -> None:
    row = NOT_COMPARED_ROWS[case]
    verdict = evaluate([_row("ok:output:0"), row], _gate("CosineSimilarity>=0.99"))
    assert verdict.outcome is Outcome.INCOMPLETE and verdict.exit_code == 3
    (failure,) = verdict.failures
    assert failure.incomplete and failure.row == 1 and failure.value is None
    assert row.reasons[0] in failure.message  # the row's reason is the diagnosis
    waiver = f'[[waiver]]\nop = "{row.left_op}"\nreason = "known: {case}"\nexpires = 2027-01-01\n'
    policy = _policy(tmp_path, waiver).with_gates([parse_gate("CosineSimilarity>=0.99")])
    waived = evaluate([_row("ok:output:0"), row], policy, today=TODAY)
    assert waived.outcome is Outcome.PASSED and not waived.failures
    assert waived.waived[0].waived_by and f"known: {case}" in waived.waived[0].waived_by


def test_value_failure_wins_over_incomplete() -> None:
    rows = [NOT_COMPARED_ROWS["unreadable"], _row("b:output:0", 0.5)]
    verdict = evaluate(rows, _gate("CosineSimilarity>=0.99"))
    assert verdict.outcome is Outcome.FAILED and verdict.exit_code == 1
    assert [f.incomplete for f in verdict.failures] == [True, False]


def test_a_gated_metric_not_computed_names_the_bound() -> None:
    verdict = evaluate([_row("a:output:0", 0.999)], _gate("MaxAbsoluteError<=1"))  # not in row.metrics
    (failure,) = verdict.failures
    assert failure.incomplete and failure.metric == "MaxAbsoluteError"
    assert "MaxAbsoluteError not computed for a:output:0, required by MaxAbsoluteError<=1.0" in failure.message


def test_not_strict_policy_counts_only_values(tmp_path: Path) -> None:
    policy = _policy(tmp_path, 'strict = false\n[defaults]\nCosineSimilarity = 0.99\n')
    rows = [NOT_COMPARED_ROWS["missing counterpart"], NOT_COMPARED_ROWS["all zero"], _row("a:output:0")]
    assert evaluate(rows, policy).outcome is Outcome.PASSED
    assert evaluate(rows + [_row("b:output:0", 0.5)], policy).outcome is Outcome.FAILED


def test_a_strict_policy_without_bounds_checks_completeness(tmp_path: Path) -> None:
    policy = _policy(tmp_path, "strict = true\n")
    assert evaluate([_row("a:output:0")], policy).outcome is Outcome.PASSED
    assert evaluate([NOT_COMPARED_ROWS["unreadable"]], policy).outcome is Outcome.INCOMPLETE


# --------------------------------------------------------------------------------------------
# evaluate: rows and metrics that are legitimately not checked


def test_expected_gap_rows_are_counted_not_failed() -> None:
    gap = _row("cast:output:0", None, PairStatus.MISSING_RIGHT, reasons=("Cast kernel inserted by mixed precision",))
    gap.expected_gap = "mixed-precision cast"
    verdict = evaluate([gap, _row("a:output:0")], _gate("CosineSimilarity>=0.99"))
    assert verdict.outcome is Outcome.PASSED and verdict.expected_gaps == 1 and verdict.checked == 1


def test_bool_rows_skip_metrics_undefined_for_bool() -> None:
    flags = _row("mask:output:0", 1.0, dtypes=("bool", "bool"), RelativeEuclideanDistance=None,
                 MaxAbsoluteError=None)
    verdict = evaluate([flags], _gate("MaxAbsoluteError<=0.1", "RelativeEuclideanDistance<=0.1", "cos>=0.99"))
    assert verdict.outcome is Outcome.PASSED and verdict.undefined == 2
    flags.metrics["CosineSimilarity"] = 0.5  # cosine is defined for bool data and still checked
    assert evaluate([flags], _gate("cos>=0.99")).outcome is Outcome.FAILED
    flags.metrics["CosineSimilarity"] = None  # an all-False tensor: not computed, incomplete
    assert evaluate([flags], _gate("cos>=0.99")).outcome is Outcome.INCOMPLETE


def test_empty_tensors_have_nothing_to_check() -> None:
    empty = _row("e:output:0", 1.0, shape=(0, 4), MeanAbsoluteError=math.nan, MaxAbsoluteError=None)
    verdict = evaluate([empty], _gate("MeanAbsoluteError<=0.1", "MaxAbsoluteError<=0.1"))
    assert verdict.outcome is Outcome.PASSED and verdict.undefined == 2


# --------------------------------------------------------------------------------------------
# Through real comparisons


@lru_cache(maxsize=None)
def _network(name: str) -> NetworkResult:
    if name == "demo":
        return run_network(DEMO / "npu", DEMO / "golden", DEMO / "model.json")
    case = MANIFEST["clean"] if name == "clean" else MANIFEST["cases"][name]
    return run_network(BAD / case["left"], BAD / case["right"], BAD / case["rule"])


def test_demo_passes_a_gate_and_data_const_rows_are_expected_gaps() -> None:
    result = _network("demo")
    verdict = evaluate(result.rows, _gate("CosineSimilarity>=0.99"))
    assert verdict.outcome is Outcome.PASSED
    gaps = [r for r in result.rows if r.expected_gap]
    assert sorted(r.op_type for r in gaps) == ["Const", "Data"]  # the device never dumps them
    assert verdict.expected_gaps == 2 and verdict.checked == len(result.rows) - 2


def test_demo_dtype_defaults_catch_the_noisy_layer(tmp_path: Path) -> None:
    verdict = evaluate(_network("demo").rows, _policy(tmp_path, "[defaults]\ndtype = true\n"))
    assert verdict.outcome is Outcome.FAILED
    assert {f.tensor_id for f in verdict.failures} == {"fc1:output:0", "prob:input:0"}  # fc1 has 0.1 noise
    assert all("built-in default for float16" in f.message for f in verdict.failures)


@pytest.mark.parametrize("case", sorted(MANIFEST["cases"]))
def test_bad_fixtures_fail_a_strict_gate_and_pass_with_waivers(case: str, tmp_path: Path) -> None:
    rows = _network(case).rows
    gate = parse_gate("CosineSimilarity>=0.99")
    verdict = evaluate(rows, Policy.from_gates([gate]))
    assert verdict.outcome is Outcome.INCOMPLETE and verdict.exit_code == 3
    assert all(f.incomplete for f in verdict.failures)
    broken = sorted({name for f in verdict.failures for name in f.left_op.split(",") + f.right_op.split(",")
                     if name != "*"})
    waivers = "".join(f'[[waiver]]\nop = "{name}"\nreason = "broken fixture"\nmetrics = ["not-compared"]\n'
                      for name in broken)
    policy = _policy(tmp_path, waivers).with_gates([gate])
    waived = evaluate(rows, policy, today=TODAY)
    assert waived.outcome is Outcome.PASSED and len(waived.waived) == len(verdict.failures)
    assert evaluate(_network("clean").rows, Policy.from_gates([gate])).outcome is Outcome.PASSED


def test_an_expired_waiver_fails_a_real_run(tmp_path: Path) -> None:
    rows = _network("dumps_a").rows
    text = '[[waiver]]\nop = ["pool1", "fc1", "prob"]\nreason = "ticket 7"\nexpires = 2026-01-31\n'
    policy = _policy(tmp_path, text).with_gates([parse_gate("CosineSimilarity>=0.99")])
    assert evaluate(rows, policy, today=datetime.date(2026, 1, 31)).outcome is Outcome.PASSED  # last valid day
    verdict = evaluate(rows, policy, today=datetime.date(2026, 2, 1))
    assert verdict.outcome is Outcome.FAILED and verdict.exit_code == 1
    (error,) = verdict.errors
    assert "waiver 1" in error and "expired on 2026-01-31" in error and "ticket 7" in error
    assert verdict.failures and not verdict.waived  # an expired waiver waives nothing


def _mindspore_tree(root: Path, ops: list[tuple[str, str, str]]) -> Path:
    leaf = root / "rank_0" / "Net" / "0" / "0"
    leaf.mkdir(parents=True)
    for ts, (op_type, name, dtype) in enumerate(ops, start=1795470093100000):
        value = (np.arange(6).reshape(2, 3) + 1).astype(np.float16 if dtype == "Float16" else np.float32)
        np.save(leaf / f"{op_type}.{name}.0.0.{ts}.output.0.DefaultFormat.{dtype}.npy", value)
    return root


def test_mixed_precision_casts_do_not_fail(tmp_path: Path) -> None:
    net = "Default_network-WithLossCell__backbone-Net"
    amp = "Default_network-WithLossCell__backbone-_OutputTo32__backbone-Net"
    base = _mindspore_tree(tmp_path / "fp32", [("MatMul", f"{net}_fc1-Dense_MatMul-op0", "Float32")])
    mixed = _mindspore_tree(tmp_path / "amp", [("Cast", f"{amp}_Cast-op0", "Float16"),
                                               ("MatMul", f"{amp}_fc1-Dense_MatMul-op0", "Float32")])
    result = run_network(base, mixed)
    casts = [r for r in result.rows if r.op_type == "Cast"]
    assert casts and all(r.status is PairStatus.MISSING_LEFT and r.expected_gap for r in casts)
    verdict = evaluate(result.rows, _gate("CosineSimilarity>=0.99"))
    assert verdict.outcome is Outcome.PASSED and verdict.expected_gaps == len(casts)


def test_quant_filtered_rows_do_not_fail(tmp_path: Path) -> None:
    from compare.testing.synthetic_quant import make_quant_network

    case = make_quant_network(tmp_path, seed=3)
    result = run_network(case["left"], case["caffe"], case["fusion_rule"], quant_rule=case["quant_rule"])
    middle = [r for r in result.rows if r.left_op in ("conv1", "conv2")]
    assert middle and all(r.status is PairStatus.NOT_COMPARABLE and r.expected_gap == "quant filter" for r in middle)
    verdict = evaluate(result.rows, _gate("CosineSimilarity>=0.99"))
    assert not [f for f in verdict.failures if f.left_op in ("conv1", "conv2")]
    assert verdict.expected_gaps >= len(middle)


def test_npu_only_operator_rows_do_not_fail(tmp_path: Path) -> None:
    """An output the fusion rule gives no original operator (empty _datadump_origin_name) has no golden
    by construction: an expected gap. A golden the rule names but the folder lacks still fails."""
    rule = json.loads((DEMO / "model.json").read_text())
    for node in rule["graph"][0]["op"]:
        if node["name"] == "fc1":
            node["attr"] = [{"key": "_datadump_original_op_names", "value": {"list": {"val_type": 1, "s": [""]}}}]
            for item in node["output_desc"][0]["attr"]:
                if item["key"] == "_datadump_origin_name":
                    item["value"] = {"s": ""}
    (tmp_path / "model.json").write_text(json.dumps(rule))
    result = run_network(DEMO / "npu", DEMO / "golden", tmp_path / "model.json")
    (row,) = [r for r in result.rows if r.tensor_id == "fc1:output:0"]
    assert row.status is PairStatus.MISSING_RIGHT and row.expected_gap == "NPU operator without golden"
    verdict = evaluate(result.rows, _gate("CosineSimilarity>=0.99"))
    assert not [f for f in verdict.failures if f.tensor_id == "fc1:output:0"]


def test_overflow_records_do_not_fail() -> None:
    o2, npy = FIXTURES / "mindspore" / "o2", FIXTURES / "mindspore" / "npy"
    if not o2.is_dir():
        pytest.skip("fixtures/mindspore not generated (python scripts/make_mindspore_fixtures.py)")
    result = run_network(o2, npy, rank=0, iteration=0)
    (overflow,) = [r for r in result.rows if r.op_type == "Opdebug"]
    assert overflow.status is PairStatus.NOT_COMPARABLE and overflow.expected_gap == "overflow record"
    verdict = evaluate(result.rows, _gate("CosineSimilarity>=0.99"))
    assert verdict.expected_gaps == 1 and not [f for f in verdict.failures if f.op_type == "Opdebug"]
