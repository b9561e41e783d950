"""Verdict rules of compare.diverge on hand-made rows and graphs (every rule of the module doc)."""

from __future__ import annotations

import math

import pytest

from compare.diverge.graph import align, graph_from_order, graph_from_rule
from compare.diverge.records import GraphSource, InputEdge, NodeRole, OpGraph, OpNode, Verdict
from compare.diverge.verdicts import chain, localise
from compare.records import Bound, MetricRow, PairStatus
from compare.verdict.policy import Policy

GOOD = 1e-7  # RelativeEuclideanDistance of a clean float32 tensor
BAD = 0.05


def row(op: str, kind: str, index: int, red: float | None, *, dtype: str = "float32", op_type: str = "Conv2D",
        status: PairStatus = PairStatus.COMPARED, rank: int | None = None) -> MetricRow:
    metrics = {} if red is None else {"RelativeEuclideanDistance": red, "CosineSimilarity": 1.0 - red * red / 2}
    return MetricRow(index=0, op_type=op_type, left_op=op, right_op=op, tensor_id=f"{op}:{kind}:{index}",
                     left_dtype=dtype, right_dtype=dtype, metrics=metrics, status=status, rank=rank)


def graph(*nodes: OpNode, edges: bool = True) -> OpGraph:
    return OpGraph(nodes={n.name: n for n in nodes}, source=GraphSource.FUSION_RULE, edges=edges)


def edge(i: int, producer: str, role: NodeRole = NodeRole.COMPUTE) -> InputEdge:
    return InputEdge(index=i, producer=producer, role=role, name=producer)


def verdicts(loc) -> dict[str, Verdict]:
    return {v.op: v.verdict for v in loc.verdicts}


def test_origin_inherited_ok_in_a_chain() -> None:
    g = graph(OpNode("a"), OpNode("b", inputs=(edge(0, "a"),)), OpNode("c", inputs=(edge(0, "b"),)),
              OpNode("d", inputs=(edge(0, "c"),)))
    rows = [row("a", "output", 0, GOOD), row("b", "input", 0, GOOD), row("b", "output", 0, BAD),
            row("c", "input", 0, BAD), row("c", "output", 0, BAD), row("d", "input", 0, BAD),
            row("d", "output", 0, GOOD)]
    loc = localise(rows, g)
    assert verdicts(loc) == {"a": Verdict.OK, "b": Verdict.ORIGIN, "c": Verdict.INHERITED, "d": Verdict.OK}
    assert loc.first_divergence is not None and loc.first_divergence.op == "b"
    c = loc.verdict_of("c")
    assert c.blame == ("b",) and c.amplification == pytest.approx(1.0)
    b = loc.verdict_of("b")
    assert b.amplification == pytest.approx(BAD / GOOD)
    assert [v.op for v in chain(loc, "d")] == ["d", "c", "b"]


def test_input_without_row_judged_by_its_producer() -> None:
    """Golden folders hold outputs only: an op's input is the producer's output row."""
    g = graph(OpNode("a"), OpNode("b", inputs=(edge(0, "a"),)))
    loc = localise([row("a", "output", 0, BAD), row("b", "output", 0, BAD)], g)
    assert verdicts(loc) == {"a": Verdict.ORIGIN, "b": Verdict.INHERITED}
    assert loc.verdict_of("b").inputs[0].tensor_id == "a:output:0"


def test_parameter_input_differs_and_source_nodes() -> None:
    g = graph(OpNode("w", op_type="Const", role=NodeRole.CONST),
              OpNode("x"), OpNode("mm", inputs=(edge(0, "x"), edge(1, "w", NodeRole.CONST))),
              OpNode("p", op_type="Parameter", role=NodeRole.PARAMETER))
    rows = [row("x", "output", 0, GOOD), row("mm", "input", 0, GOOD), row("mm", "input", 1, BAD),
            row("mm", "output", 0, BAD), row("p", "output", 0, BAD, op_type="Parameter")]
    loc = localise(rows, g)
    assert verdicts(loc) == {"x": Verdict.OK, "mm": Verdict.INPUT_DIFFERS, "p": Verdict.INPUT_DIFFERS}
    assert loc.first_divergence.op == "mm" and loc.verdict_of("mm").blame == ("w",)


def test_without_edges_a_failing_input_is_data_until_something_failed() -> None:
    g = graph(OpNode("a"), OpNode("b"), OpNode("c"), edges=False)
    rows = [row("a", "input", 0, GOOD), row("a", "output", 0, GOOD),
            row("b", "input", 1, BAD), row("b", "output", 0, BAD),
            row("c", "input", 0, BAD), row("c", "output", 0, BAD)]
    loc = localise(rows, g)
    assert verdicts(loc) == {"a": Verdict.OK, "b": Verdict.INPUT_DIFFERS, "c": Verdict.INHERITED}
    assert [v.op for v in chain(loc, "c")] == ["c", "b"]


def test_not_compared_and_nan() -> None:
    g = graph(OpNode("a"), OpNode("b", inputs=(edge(0, "a"),)))
    rows = [row("a", "output", 0, None, status=PairStatus.MISSING_RIGHT), row("b", "input", 0, GOOD),
            row("b", "output", 0, math.nan)]
    loc = localise(rows, g)
    assert verdicts(loc) == {"a": Verdict.NOT_COMPARED, "b": Verdict.ORIGIN}


def test_dtype_bounds_and_policy_bounds() -> None:
    g = graph(OpNode("a"))
    fp16 = [row("a", "output", 0, 0.01, dtype="float16")]
    assert verdicts(localise(fp16, g)) == {"a": Verdict.OK}  # fp16: RED <= 0.03125
    assert verdicts(localise([row("a", "output", 0, 0.01)], g)) == {"a": Verdict.ORIGIN}  # fp32: 3.45e-4
    int32 = [row("a", "output", 0, 0.01, dtype="int32")]
    assert verdicts(localise(int32, g)) == {"a": Verdict.ORIGIN}  # float32's bounds for other types
    strict = Policy(gates=(Bound("RelativeEuclideanDistance", "<=", 0.001, "--gate"),))
    assert verdicts(localise(fp16, g, strict)) == {"a": Verdict.ORIGIN}
    loose = Policy(gates=(Bound("RelativeEuclideanDistance", "<=", 0.1, "--gate"),))
    assert verdicts(localise([row("a", "output", 0, 0.01)], g, loose)) == {"a": Verdict.OK}


def test_parts_are_judged_apart_and_first_divergence_in_part_order() -> None:
    g = graph(OpNode("a"), OpNode("b", inputs=(edge(0, "a"),)))
    rows = [row("a", "output", 0, GOOD, rank=0), row("b", "output", 0, GOOD, rank=0),
            row("a", "output", 0, GOOD, rank=1), row("b", "output", 0, BAD, rank=1)]
    loc = localise(rows, g)
    assert [(v.rank, v.op, v.verdict) for v in loc.verdicts] == [
        (0, "a", Verdict.OK), (0, "b", Verdict.OK), (1, "a", Verdict.OK), (1, "b", Verdict.ORIGIN)]
    assert loc.first_divergence.rank == 1


def test_graph_from_rule_ignores_control_edges_and_orders_topologically(tmp_path) -> None:
    from builders import desc, op, write_rule

    from compare.pairing.fusion_rule import load_fusion_rule

    ops = [op("late", "Add", 1, inputs=["w:0", "early:0", "ctl:-1"], descs=[desc()]),
           op("w", "Const", 2, descs=[desc()]), op("early", "Conv2D", 3, inputs=["data:0"], descs=[desc()]),
           op("data", "Data", 4, descs=[desc()]), op("ctl", "NoOp", 5, descs=[desc()])]
    g = graph_from_rule(load_fusion_rule(write_rule(tmp_path, ops)))
    order = list(g.nodes)
    assert order.index("early") < order.index("late") and order.index("data") < order.index("early")
    late = g.nodes["late"]
    assert [(e.index, e.producer, e.role) for e in late.inputs] == [(0, "w", NodeRole.CONST),
                                                                   (1, "early", NodeRole.COMPUTE)]
    assert g.nodes["data"].role is NodeRole.DATA


def test_align_renames_and_places_unknown_ops() -> None:
    g = graph_from_order(["Default/net/conv-op1", "Default/net/relu-op2"], {}, GraphSource.EXECUTION_ORDER)
    rows = {"Default_net_conv-op1": "Conv2D", "extra": "Add", "Default_net_relu-op7": "ReLU"}
    aligned = align(g, rows)
    assert list(aligned.nodes) == ["Default_net_conv-op1", "extra", "Default_net_relu-op7"]
    assert aligned.notes and "extra" in aligned.notes[0]
