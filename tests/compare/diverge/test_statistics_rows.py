"""Statistics rows in the verdict rules (compare.diverge.statistics): which rows, their error,
their built-in bounds, a parameter input judged by the built-in bounds under a gate too."""

from __future__ import annotations

import math

import pytest

from compare.diverge.records import GraphSource, InputEdge, NodeRole, OpGraph, OpNode, Verdict
from compare.diverge.statistics import is_statistics_row, statistics_error
from compare.diverge.verdicts import localise
from compare.records import Bound, MetricRow, PairStatus, RowKind
from compare.verdict.policy import Policy, dtype_bounds


def srow(op: str, kind: str, index: int, *, max_rel: float | None = 0.0, min_rel: float | None = 0.0,
         avg_rel: float | None = 0.0, norm_rel: float | None = 0.0, checksum: float | None = None,
         dtype: str = "float32", status: PairStatus = PairStatus.COMPARED) -> MetricRow:
    metrics: dict[str, float | None] = {"MaxDiff": 0.0, "MaxRelDiff": max_rel, "MinDiff": 0.0, "MinRelDiff": min_rel,
                                        "AvgDiff": 0.0, "AvgRelDiff": avg_rel, "L2NormDiff": 0.0,
                                        "L2NormRelDiff": norm_rel}
    if checksum is not None:
        metrics["ChecksumDiff"] = checksum
    return MetricRow(index=0, op_type="linear", left_op=op, right_op=op, tensor_id=f"{op}:{kind}:{index}",
                     left_dtype=dtype, right_dtype=dtype, metrics=metrics, status=status, kind=RowKind.STATISTICS)


def order_graph(*nodes: OpNode) -> OpGraph:
    return OpGraph(nodes={n.name: n for n in nodes}, source=GraphSource.MSPROBE_CALLS, edges=False)


WEIGHT = InputEdge(index=1, producer=None, role=NodeRole.PARAMETER, name="fc1.weight")


def test_which_rows_are_statistics_rows() -> None:
    assert is_statistics_row(srow("a", "output", 0))
    tensor = MetricRow(index=0, op_type=None, left_op="a", right_op="a", tensor_id="a:output:0",
                       metrics={"CosineSimilarity": 1.0, "MaxRelDiff": 0.0})
    assert not is_statistics_row(tensor)
    assert not is_statistics_row(MetricRow(index=0, op_type=None, left_op="a", right_op="a", tensor_id=None))


def test_error_is_the_largest_of_max_min_norm_never_the_average() -> None:
    assert statistics_error(srow("a", "output", 0, max_rel=1e-3, min_rel=2e-3, norm_rel=1e-6, avg_rel=0.9)) == 2e-3
    assert statistics_error(srow("a", "output", 0, max_rel=None, min_rel=None, norm_rel=4e-4)) == 4e-4
    assert math.isnan(statistics_error(srow("a", "output", 0, max_rel=math.nan, min_rel=1.0)))
    checksum_only = MetricRow(index=0, op_type=None, left_op="a", right_op="a", tensor_id="a:output:0",
                              metrics={"ChecksumDiff": 1.0}, kind=RowKind.STATISTICS)
    assert statistics_error(checksum_only) is None


def test_stats_dtype_bounds() -> None:
    f32 = {b.metric: (b.op, b.value) for b in dtype_bounds("float32", "float32", RowKind.STATISTICS)
           if b.metric in ("MaxRelDiff", "MinRelDiff", "L2NormRelDiff", "ChecksumDiff")}
    assert f32 == {"MaxRelDiff": ("<=", pytest.approx(3.4527e-4, rel=1e-4)),
                   "MinRelDiff": ("<=", pytest.approx(3.4527e-4, rel=1e-4)),
                   "L2NormRelDiff": ("<=", pytest.approx(3.4527e-4, rel=1e-4)), "ChecksumDiff": ("==", 0.0)}
    bf16 = {b.metric: b.value for b in dtype_bounds("bfloat16", "float32", RowKind.STATISTICS)}  # the coarser decides
    assert bf16["MaxRelDiff"] == pytest.approx(0.0884, rel=1e-3)
    assert "MaxRelDiff" not in {b.metric for b in dtype_bounds("int64", "int64", RowKind.STATISTICS)}


def test_statistics_verdicts_with_builtin_bounds() -> None:
    g = order_graph(OpNode("a"), OpNode("b"), OpNode("c"))
    rows = [srow("a", "input", 0), srow("a", "output", 0, avg_rel=0.5),  # the average alone: ok
            srow("b", "input", 0), srow("b", "output", 0, max_rel=1e-3),  # origin
            srow("c", "input", 0, max_rel=1e-3), srow("c", "output", 0, norm_rel=2e-3)]  # inherited
    loc = localise(rows, g)
    assert {v.op: v.verdict for v in loc.verdicts} == {"a": Verdict.OK, "b": Verdict.ORIGIN, "c": Verdict.INHERITED}
    b = loc.verdict_of("b")
    assert b.error == 1e-3 and b.input_error == 0.0 and b.amplification == math.inf
    assert [m for m, _ in b.outputs[0].failed] == ["MaxRelDiff"]
    c = loc.verdict_of("c")
    assert c.amplification == pytest.approx(2.0)


def test_int64_rows_get_float32_bounds_and_bf16_rows_their_own() -> None:
    g = order_graph(OpNode("a"), OpNode("b"))
    rows = [srow("a", "output", 0, max_rel=1e-3, avg_rel=None, norm_rel=None, dtype="int64"),
            srow("b", "output", 0, max_rel=0.05, dtype="bfloat16")]
    assert {v.op: v.verdict for v in localise(rows, g).verdicts} == {"a": Verdict.ORIGIN, "b": Verdict.OK}


def test_checksum_rows() -> None:
    g = order_graph(OpNode("a"))
    rows = [srow("a", "input", 0, checksum=0.0), srow("a", "output", 0, checksum=1.0)]
    loc = localise(rows, g)
    assert loc.first_divergence is not None and loc.first_divergence.verdict is Verdict.ORIGIN
    assert loc.first_divergence.outputs[0].failed == (("ChecksumDiff", 1.0),)


def test_parameter_input_differs_even_when_outputs_pass_and_under_a_gate() -> None:
    """A parameter input beyond its data-type bounds makes its call input-differs whatever the
    outputs did; under a gate it is held to the gate and to the built-in bounds."""
    g = order_graph(OpNode("x"), OpNode("fc1", inputs=(WEIGHT,)), OpNode("y"))
    rows = [srow("x", "output", 0),
            srow("fc1", "input", 0), srow("fc1", "input", 1, max_rel=1.7e-3, norm_rel=5.5e-6),
            srow("fc1", "output", 0, max_rel=1e-5),
            srow("y", "input", 0, norm_rel=5e-4), srow("y", "output", 0, norm_rel=5e-4)]
    for policy in (None, Policy(gates=(Bound("L2NormRelDiff", "<=", 1e-4, "--gate"),))):
        loc = localise(rows, g, policy)
        first = loc.first_divergence
        assert first is not None and first.op == "fc1" and first.verdict is Verdict.INPUT_DIFFERS
        assert first.blame == ("fc1.weight",)
        weight = first.inputs[1]
        assert weight.passed is False and [m for m, _ in weight.failed] == ["MaxRelDiff"]
        assert loc.verdict_of("y").verdict is Verdict.INHERITED  # something diverged before it
    gated = localise(rows, g, Policy(gates=(Bound("L2NormRelDiff", "<=", 1e-4, "--gate"),)))
    assert gated.verdict_of("fc1").inputs[0].passed is True  # a computed input: the gate only


def test_a_non_parameter_input_is_judged_by_the_gate_only() -> None:
    g = order_graph(OpNode("fc1"))
    rows = [srow("fc1", "input", 0, max_rel=1.7e-3, norm_rel=5.5e-6), srow("fc1", "output", 0, max_rel=1e-3)]
    gated = localise(rows, g, Policy(gates=(Bound("L2NormRelDiff", "<=", 1e-4, "--gate"),)))
    assert gated.first_divergence is None
