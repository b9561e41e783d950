"""Acceptance (issue 26, point 4): the first divergence on statistics dumps.

- msprobe statistics trees written by msprobe itself (../shared/msprobe-real/trees, README
  there): ``s_L1_perturb`` vs ``s_L1_base`` -- ``blocks[0].mlp.fc1.weight`` scaled by ``1 +
  1e-3 N(0, 1)``, i.e. input 1 of ``Functional.linear.2.forward``, whose MaxRelDiff is 0.0017 while
  its L2NormRelDiff is 5.5e-6: the first divergence is that call, ``input-differs``, under the
  built-in bounds and under ``--gate L2NormRelDiff<=1e-4`` (the weight passes that gate; as a
  parameter input it is also held to the built-in data-type bounds). The tensor trees give the same
  call; mix, bf16, md5 / xor and base-vs-itself give sensible answers;
- synthetic msprobe trees (compare.testing.synthetic_msprobe) with one statistic changed by hand:
  a module parameter, an API weight argument, a computed output;
- a MindSpore ``statistic.csv`` pair (fixtures/mindspore/stats) with one output changed.

The statistics rows are built as main builds them (tests/stats_rows.py).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, shared_path
from stats_rows import compare_statistics

from compare import compare_network
from compare.api import ComparisonResult
from compare.diverge.records import GraphSource, NodeRole, Verdict
from compare.diverge.verdicts import chain
from compare.records import Bound
from compare.testing.synthetic_msprobe import write_msprobe_dump

LINEAR2 = "Functional.linear.2.forward"
GATE = Bound("L2NormRelDiff", "<=", 1e-4, "--gate L2NormRelDiff<=1e-4")


def _trees() -> Path:
    return shared_path("msprobe-real", "trees")


def _before_all_ok(result: ComparisonResult) -> None:
    first = result.first_divergence
    assert first is not None
    before = [v for v in result.verdicts if v.position < first.position]
    assert before and all(v.verdict in (Verdict.OK, Verdict.NOT_COMPARED) for v in before), [
        (v.op, v.verdict) for v in before if v.verdict is not Verdict.OK]


def _weight_differs(result: ComparisonResult, weight_name: str, metric: str = "MaxRelDiff",
                    value: float = 0.0017) -> None:
    first = result.first_divergence
    assert first is not None and first.op == LINEAR2 and first.verdict is Verdict.INPUT_DIFFERS
    failing = [c for c in first.inputs if c.passed is False]
    assert [c.tensor_id for c in failing] == [f"{LINEAR2}:input:1"]  # the weight, only
    weight = failing[0]
    assert weight.producer is not None and weight.producer.role is NodeRole.PARAMETER
    assert weight.producer.name == weight_name and first.blame == (weight_name,)
    assert dict(weight.failed)[metric] == pytest.approx(value, rel=0.01)
    assert first.source is not None and first.source.file.endswith("gen_dumps.py")
    _before_all_ok(result)


@pytest.mark.parametrize("gates", [(), (GATE,)], ids=["builtin-bounds", "gate-L2NormRelDiff"])
def test_real_statistics_perturbed_weight(gates: tuple[Bound, ...]) -> None:
    trees = _trees()
    result = compare_statistics(trees / "s_L1_perturb", trees / "s_L1_base", gates=gates)
    assert result.graph is not None and result.graph.source is GraphSource.MSPROBE_CALLS
    assert not result.graph.edges
    _weight_differs(result, f"{LINEAR2}.weight")
    row = next(r for r in result.rows if r.tensor_id == f"{LINEAR2}:input:1")
    assert row.metrics["L2NormRelDiff"] == pytest.approx(5.5e-6, rel=0.05)  # under the gate: the norm hides it
    assert result.localisation.bounds.startswith("the gate policy" if gates else "built-in")


def test_real_tensors_perturbed_weight_same_call() -> None:
    trees = _trees()
    result = compare_network(trees / "t_L1_perturb", trees / "t_L1_base")
    assert result.graph.source is GraphSource.MSPROBE_CALLS
    _weight_differs(result, f"{LINEAR2}.weight", "RelativeEuclideanDistance", 0.001)


def test_real_mix_names_the_module_parameter() -> None:
    """At level mix construct.json names the module the API ran in: the weight is fc1's."""
    trees = _trees()
    result = compare_statistics(trees / "s_mix_perturb", trees / "s_mix_base")
    _weight_differs(result, "blocks.0.mlp.fc1.weight")
    module = result.localisation.verdict_of("Module.blocks.0.mlp.fc1.Linear.forward.0")
    assert module is not None and module.verdict is Verdict.INPUT_DIFFERS
    assert module.blame == ("blocks.0.mlp.fc1.weight",)


@pytest.mark.parametrize("kind", ["md5", "xor"])
def test_real_checksum_dumps(kind: str) -> None:
    trees = _trees()
    result = compare_statistics(trees / f"s_L1_{kind}_perturb", trees / f"s_L1_{kind}_base")
    first = result.first_divergence
    assert first is not None and first.op == LINEAR2 and first.verdict is Verdict.INPUT_DIFFERS
    weight = next(c for c in first.inputs if c.passed is False)
    assert ("ChecksumDiff", 1.0) in weight.failed
    _before_all_ok(result)


def test_real_bf16_forward_stays_within_bf16_bounds() -> None:
    """bf16 autocast against float32: every bf16 call stays within bfloat16's bounds (0.0884); the
    first call held to float32's bounds that leaves them is the float32 loss, whose input (the
    logits cast back to float32) already differs -- nothing before it failed, so in call order it
    is taken as differing data. Statistics and tensors agree."""
    trees = _trees()
    stats = compare_statistics(trees / "s_L1_bf16", trees / "s_L1_base")
    tensors = compare_network(trees / "t_L1_bf16", trees / "t_L1_base")
    for result in (stats, tensors):
        first = result.first_divergence
        assert first is not None and first.op == "Functional.cross_entropy.0.forward"
        _before_all_ok(result)
    forward = {v.op for v in stats.verdicts if v.position < stats.first_divergence.position}
    bf16 = [r for r in stats.rows if r.left_op in forward and r.left_dtype == "bfloat16"]
    assert bf16 and all((r.metrics.get("L2NormRelDiff") or 0.0) <= math.sqrt(2.0**-7) for r in bf16)


def test_real_base_against_itself_has_no_divergence() -> None:
    trees = _trees()
    result = compare_statistics(trees / "s_L1_base", trees / "s_L1_base")
    assert result.first_divergence is None
    assert {v.verdict for v in result.verdicts} == {Verdict.OK}
    assert all(v.error in (0.0, None) for v in result.verdicts)


# ------------------------------------------------------------------------------ synthetic msprobe


def _stats_pair(tmp_path: Path) -> tuple[Path, Path]:
    left = write_msprobe_dump(tmp_path / "left", task="statistics").folders[(0, 0)]
    right = write_msprobe_dump(tmp_path / "right", task="statistics").folders[(0, 0)]
    return left, right


def _scale(folder: Path, call: str, section: str, path: tuple[object, ...], factor: float,
           stats: tuple[str, ...] = ("Max",)) -> None:
    """Multiply statistics of one tensor item of ``dump.json`` by ``factor``."""
    document = json.loads((folder / "dump.json").read_text())
    item = document["data"][call][section]
    for key in path:
        item = item[key]
    for name in stats:
        item[name] = item[name] * factor
    (folder / "dump.json").write_text(json.dumps(document))


def test_synthetic_module_parameter_differs(tmp_path: Path) -> None:
    left, right = _stats_pair(tmp_path)
    _scale(left, "Module.fc.Linear.forward.0", "parameters", ("weight",), 1.01)
    result = compare_statistics(left, right)
    first = result.first_divergence
    assert first is not None and first.op == "Module.fc.Linear.forward.0"
    assert first.verdict is Verdict.INPUT_DIFFERS and first.blame == ("fc.weight",)
    # input_args holds one tensor (index 0), then parameters weight (1), bias (2)
    assert [c.tensor_id for c in first.inputs if c.passed is False] == ["Module.fc.Linear.forward.0:input:1"]
    assert all(c.passed for c in first.outputs)  # the outputs are the same: the data differs all the same
    _before_all_ok(result)


def test_synthetic_api_weight_argument_differs(tmp_path: Path) -> None:
    """conv2d(x, w, None, 1): the weight is input 1 and a parameter; the None bias is no tensor."""
    left, right = _stats_pair(tmp_path)
    _scale(left, "Functional.conv2d.0.forward", "input_args", (1,), 1.01)
    result = compare_statistics(left, right)
    first = result.first_divergence
    assert first is not None and first.op == "Functional.conv2d.0.forward"
    assert first.verdict is Verdict.INPUT_DIFFERS and first.blame == ("Functional.conv2d.0.forward.weight",)
    node = result.graph.nodes["Functional.conv2d.0.forward"]
    assert [(e.index, e.role) for e in node.inputs] == [(1, NodeRole.PARAMETER)]


def test_synthetic_computed_output_is_the_origin(tmp_path: Path) -> None:
    """A call whose output statistics leave the bounds while its inputs pass is the origin; the
    average alone (cancellation) does not count."""
    left, right = _stats_pair(tmp_path)
    _scale(left, "Torch.split.0.forward", "output", (0, 1), 1.001, ("Max", "Min", "Norm"))
    _scale(left, "Torch.matmul.0.forward", "output", (0,), 1.5, ("Mean",))  # AvgRelDiff 0.5: not an error
    result = compare_statistics(left, right)
    first = result.first_divergence
    assert first is not None and first.op == "Torch.split.0.forward" and first.verdict is Verdict.ORIGIN
    assert first.error == pytest.approx(1e-3, rel=1e-3)
    assert {m for m, _ in first.outputs[1].failed} == {"MaxRelDiff", "MinRelDiff", "L2NormRelDiff"}
    matmul = result.localisation.verdict_of("Torch.matmul.0.forward")
    assert matmul is not None and matmul.verdict is Verdict.OK and matmul.error == 0.0
    assert [v.op for v in chain(result.localisation, "Torch.split.0.forward")] == ["Torch.split.0.forward"]


def test_synthetic_same_dump_no_divergence(tmp_path: Path) -> None:
    left, right = _stats_pair(tmp_path)
    result = compare_statistics(left, right)
    assert result.first_divergence is None
    assert all(v.verdict in (Verdict.OK, Verdict.NOT_COMPARED) for v in result.verdicts)


# ------------------------------------------------------------------------------ MindSpore statistic.csv


def _scale_csv(path: Path, op: str, io: str, slot: int, factor: float) -> None:
    lines = path.read_text().splitlines()
    head = lines[0].split(",")
    at = head.index("Max Value")
    out = [lines[0]]
    for line in lines[1:]:
        if op in line and f",{io},{slot}," in line:
            before, shape, after = line.split('"')
            cells = after.split(",")
            cells[at - head.index("Shape")] = repr(float(cells[at - head.index("Shape")]) * factor)
            line = '"'.join((before, shape, ",".join(cells)))
        out.append(line)
    path.write_text("\n".join(out) + "\n")


def test_mindspore_statistic_csv_origin(tmp_path: Path) -> None:
    source = FIXTURES / "mindspore" / "stats"
    left, right = tmp_path / "left", tmp_path / "right"
    shutil.copytree(source, left)
    shutil.copytree(source, right)
    csv_path = left / "rank_0" / "Net" / "0" / "0" / "statistic.csv"
    _scale_csv(csv_path, "ReLU-op2", "output", 0, 1.01)
    _scale_csv(csv_path, "MatMul-op3", "input", 0, 1.01)
    _scale_csv(csv_path, "MatMul-op3", "output", 0, 1.01)
    result = compare_statistics(left, right)
    assert result.graph.source in (GraphSource.EXECUTION_ORDER, GraphSource.DUMP_ORDER)
    verdicts = {v.op.rsplit("/", 1)[-1]: v.verdict for v in result.verdicts}
    assert verdicts["Conv2D-op1"] is Verdict.OK
    assert verdicts["ReLU-op2"] is Verdict.ORIGIN and verdicts["MatMul-op3"] is Verdict.INHERITED
    assert result.first_divergence is not None and result.first_divergence.op.endswith("ReLU-op2")
