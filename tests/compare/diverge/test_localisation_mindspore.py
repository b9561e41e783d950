"""Acceptance (issue 16) on dumps written by MindSpore itself: base vs one perturbed weight
(``fc1.weight += 0.05 * N(0, 1)``), iteration 0. The first divergence is the fc1 MatMul, because
its weight input (a Parameter) differs -- ``input-differs`` -- and nothing before it diverges.

- ../shared/mindspore-real/K_{base,perturb}_kernels keep ``graphs/*.ir``: the edges name the
  Parameter and the trace code gives the line of the user's net.py;
- fixtures/mindspore_real/{base,perturb} have no ``graphs/``: execution order only.
"""

from __future__ import annotations

from conftest import FIXTURES, shared_path

from compare import compare_network
from compare.diverge.records import GraphSource, NodeRole, Verdict

FC1 = "fc1-Dense_MatMul-op0"


def _check_first(result) -> None:
    first = result.first_divergence
    assert first is not None and first.op.endswith(FC1), first
    assert first.verdict is Verdict.INPUT_DIFFERS
    before = [v for v in result.verdicts if v.position < first.position and v.iteration == first.iteration]
    assert before and all(v.verdict is Verdict.OK for v in before)
    failing = [c for c in first.inputs if c.passed is False]
    assert [c.tensor_id.rsplit(":", 2)[1:] for c in failing] == [["input", "1"]]  # the weight, only
    after = [v for v in result.verdicts if v.position > first.position and v.verdict is Verdict.ORIGIN]
    assert not after  # everything after it that fails inherits (or meets the same weight)


def test_real_pair_with_ir_graph() -> None:
    root = shared_path("mindspore-real")
    result = compare_network(root / "K_base_kernels", root / "K_perturb_kernels", iteration=0)
    assert result.graph.source is GraphSource.MINDSPORE_IR and result.graph.edges
    _check_first(result)
    first = result.first_divergence
    weight = next(c for c in first.inputs if c.passed is False)
    assert weight.producer is not None and weight.producer.role is NodeRole.PARAMETER
    assert weight.producer.name == "fc1.weight" and first.blame == ("fc1.weight",)
    assert first.source is not None and first.source.file.endswith("net.py") and first.source.line > 0
    assert "site-packages" not in first.source.file
    assert result.localisation.first_nonfinite is None
    inherited = [v for v in result.verdicts if v.verdict is Verdict.INHERITED]
    assert len(inherited) >= 10  # the forward ops after fc1 and the whole backward pass


def test_real_pair_fixture_execution_order_only() -> None:
    base, perturb = FIXTURES / "mindspore_real" / "base", FIXTURES / "mindspore_real" / "perturb"
    result = compare_network(base, perturb)
    assert result.graph.source is GraphSource.EXECUTION_ORDER and not result.graph.edges
    _check_first(result)
