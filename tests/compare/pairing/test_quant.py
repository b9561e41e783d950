"""Quantized comparisons, close fusion, batch mode and the comparison-table scenarios.

- the six rows of the manual's comparison table on synthetic dumps made by ``compare.testing.synthetic``
  / ``compare.testing.synthetic_quant`` (real on-disk formats: binary Ascend dumps, ``.npy``, ``.pb``,
  ``.quant``), end to end through :func:`compare.runs.folders.run_network`;
- every unsupported folder/option combination is refused with the row the user needs;
- the quant filter, merge(offline, quant) and merge(open, close) on hand-built rules;
- the real ATC graphs of ../shared/real: op counts, fused-op counts, mappings, quant-filter counts;
- batch mode (a folder of rule files).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import shared_path

from compare.errors import OptionError, PairingError
from compare.loaders import load_run
from compare.pairing.fusion_groups import group_ops
from compare.pairing.fusion_rule import load_fusion_rule
from compare.pairing.quant_rule import (
    QuantOutput,
    apply_quant_filter,
    build_rule,
    merge_close,
    merge_quant,
    name_class,
    quant_filtered_names,
    quant_output_types,
)
from compare.pairing.rule_records import FusionRule, OutputDesc, RuleOp
from compare.pairing.scenarios import Strategy, check_scenario
from compare.records import PairStatus
from compare.runs.batch import BatchItem, run_batch
from compare.runs.folders import run_network
from compare.testing.synthetic import make_network
from compare.testing.synthetic_quant import make_close_fusion_network, make_quant_network, make_tf_network

S = PairStatus
MIDDLE_REASON = "between a quant and a dequant op: int8/int32 data has no float golden"


# --------------------------------------------------------------------------------------------
# Synthetic cases (made once per module).


@pytest.fixture(scope="module")
def quant_case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_quant_network(tmp_path_factory.mktemp("quant"), seed=3)


@pytest.fixture(scope="module")
def float_case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_network(tmp_path_factory.mktemp("float"), seed=5)


def _by_id(result) -> dict[str, Any]:
    return {row.tensor_id: row for row in result.rows if row.tensor_id}


def _compared(result) -> list[Any]:
    return [row for row in result.rows if row.status is S.COMPARED]


def _cos(row) -> float:
    return float(row.metrics["CosineSimilarity"])


# --------------------------------------------------------------------------------------------
# The six rows of the table.


def test_scenario_1_offline_vs_caffe_npy(float_case: dict[str, Path]) -> None:
    result = run_network(float_case["left"], float_case["right"], float_case["fusion_rule"])
    assert result.scenario is not None and result.scenario.row == 1 and result.pairing.mode == "fusion"
    assert "scenario 1 of the comparison table" in result.notes[1]
    assert len(_compared(result)) >= 8 and all(_cos(r) > 0.9 for r in _compared(result))


@pytest.mark.parametrize("golden", ["caffe", "caffe_pb"])
def test_scenario_2_quantized_offline_vs_caffe(quant_case: dict[str, Path], golden: str) -> None:
    """-f + -q: merge(offline, quant); middle ops are rows with a reason; .npy and .pb goldens."""
    result = run_network(quant_case["left"], quant_case[golden], quant_case["fusion_rule"],
                         quant_rule=quant_case["quant_rule"])
    assert result.scenario is not None and result.scenario.row == 2 and result.pairing.mode == "fusion+quant"
    rows = _by_id(result)
    for i in (1, 2):
        # AscendQuant: input only (float, vs the previous float layer); AscendDequant: output only
        assert f"conv{i}_quant_layer:input:0" in rows and f"conv{i}_quant_layer:output:0" not in rows
        assert f"conv{i}_dequant_layer:output:0" in rows and f"conv{i}_dequant_layer:input:0" not in rows
        dq = rows[f"conv{i}_dequant_layer:output:0"]
        assert dq.status is S.COMPARED and dq.right_op == f"conv{i}_dequant_layer,conv{i}_relu"
        assert result.pairing.pairs  # the golden file is the float model's relu output
        (pair,) = [p for p in result.pairing.pairs if p.tensor_id == f"conv{i}_dequant_layer:output:0"]
        assert pair.right is not None and pair.right.path.name.startswith(f"conv{i}_relu.0.")
        (middle,) = [r for r in result.rows if r.left_op == f"conv{i}"]
        assert middle.status is S.NOT_COMPARABLE and middle.tensor_id is None
        assert middle.right_op == f"conv{i},bn_conv{i},scale_conv{i}"  # merged through the quant rule
        assert MIDDLE_REASON in middle.reasons[0]
        assert f"compared after AscendDequant conv{i}_dequant_layer" in middle.reasons[0]
    assert rows["conv2_quant_layer:input:0"].right_op == "conv2_quant_layer"
    compared = _compared(result)
    assert len(compared) == 8 and all(_cos(r) > 0.999 for r in compared)


@pytest.mark.parametrize("left,golden", [("quant_caffe", "caffe"), ("quant_caffe_npy", "caffe_pb")])
def test_scenario_3_quantized_caffe_vs_caffe(quant_case: dict[str, Path], left: str, golden: str) -> None:
    """-q alone: output 0 of each deploy layer, compared as it is, with the float layer's output."""
    result = run_network(quant_case[left], quant_case[golden], quant_rule=quant_case["quant_rule"])
    assert result.scenario is not None and result.scenario.row == 3 and result.pairing.mode == "quant"
    assert all(row.tensor_id is None or row.tensor_id.endswith(":output:0") for row in result.rows)
    pairs = {p.tensor_id: p for p in result.pairing.pairs if p.tensor_id}
    assert pairs["conv1:output:0"].right is not None
    assert pairs["conv1:output:0"].right.path.name.startswith("scale_conv1.0.")  # conv+bn+scale fused by AMCT
    assert pairs["conv2_dequant_layer:output:0"].right.path.name.startswith("scale_conv2.0.")
    assert all(not p.convert for p in pairs.values() if p.status is S.COMPARED)
    rows = _by_id(result)
    assert rows["conv1_quant_layer:output:0"].status is S.MISSING_RIGHT  # no float counterpart
    compared = _compared(result)
    assert len(compared) == 8 and all(_cos(r) > 0.999 for r in compared)


def test_scenario_3_shapes_must_be_identical(quant_case: dict[str, Path], tmp_path: Path) -> None:
    left = tmp_path / "quant_npy"
    shutil.copytree(quant_case["quant_caffe_npy"], left)
    (pool,) = left.glob("pool.0.*.npy")
    np.save(pool, np.load(pool).reshape(1, -1))  # same elements, other rank
    result = run_network(left, quant_case["caffe"], quant_rule=quant_case["quant_rule"])
    row = _by_id(result)["pool:output:0"]
    assert row.status is S.NOT_COMPARABLE
    assert "shapes differ: left [1,16] " in row.reasons[0] and "golden [1,16,1,1]" in row.reasons[0]
    assert "rank included" in row.reasons[0]


def test_scenario_3_with_f_is_accepted_with_a_note(quant_case: dict[str, Path]) -> None:
    result = run_network(quant_case["quant_caffe"], quant_case["caffe"], quant_case["fusion_rule"],
                         quant_rule=quant_case["quant_rule"])
    assert result.scenario is not None and result.scenario.row == 3
    assert any("-f is not used in scenario 3" in note for note in result.notes)
    assert len(_compared(result)) == 8


@pytest.mark.parametrize("golden", ["quant_caffe", "quant_caffe_npy"])
def test_scenario_4_quantized_offline_vs_quantized_caffe(quant_case: dict[str, Path], golden: str) -> None:
    """-f only: the ATC rule names the deploy layers, which the quantized Caffe dump has."""
    right = load_run(quant_case[golden])
    assert right.kind.value == "quant" and right.quantized
    result = run_network(quant_case["left"], quant_case[golden], quant_case["fusion_rule"])
    assert result.scenario is not None and result.scenario.row == 4 and result.pairing.mode == "fusion"
    pairs = {p.tensor_id: p for p in result.pairing.pairs if p.tensor_id}
    assert pairs["conv1_dequant_layer:output:0"].right.path.name.startswith("conv1_relu.0.")
    assert pairs["conv2_quant_layer:input:0"].right.path.name.startswith("conv1_relu.0.")
    middle = [r for r in result.rows if r.left_op in ("conv1", "conv2")]
    assert [r.status for r in middle] == [S.NOT_COMPARABLE] * 2 and all(MIDDLE_REASON in r.reasons[0] for r in middle)
    compared = _compared(result)
    assert len(compared) == 8 and all(_cos(r) > 0.999 for r in compared)


def test_scenario_5_offline_vs_tensorflow(tmp_path: Path) -> None:
    """TF names with '/', tfdbg golden names with '_', NHWC origin format."""
    case = make_tf_network(tmp_path, seed=1)
    result = run_network(case["left"], case["right"], case["fusion_rule"])
    assert result.scenario is not None and result.scenario.row == 1  # 1 and 5 look alike on disk
    assert any("scenario 5 for a TensorFlow golden" in note for note in result.notes)
    rows = _by_id(result)
    fused = rows["net/conv1/Conv2Dnet/conv1/Relu:output:0"]
    assert fused.status is S.COMPARED and fused.shape == (1, 8, 8, 8) and _cos(fused) > 0.999
    assert len(_compared(result)) == 6 and all(_cos(r) > 0.999 for r in _compared(result))


def test_scenario_6_npu_vs_npu(tmp_path: Path) -> None:
    a = make_network(tmp_path / "a", seed=7)
    b = make_network(tmp_path / "b", seed=7, noise=0.01)
    result = run_network(a["left"], b["left"])
    assert result.scenario is not None and result.scenario.row == 6 and result.pairing.mode == "npu-vs-npu"
    assert len(_compared(result)) >= 8


def test_scenario_6_close_fusion(tmp_path: Path) -> None:
    """-f + -cf: the fused conv1 (conv1+bn1+relu1) output is compared with relu1 of the un-fused build."""
    case = make_close_fusion_network(tmp_path, seed=2)
    result = run_network(case["left"], case["right"], case["fusion_rule"],
                         close_fusion_rule=case["close_fusion_rule"])
    assert result.scenario is not None and result.scenario.row == 6 and result.pairing.mode == "close-fusion"
    pairs = {p.tensor_id: p for p in result.pairing.pairs if p.tensor_id}
    conv = pairs["conv1:output:0"]
    assert conv.status is S.COMPARED and conv.right is not None and conv.right.path.name.startswith("Relu.relu1.")
    assert conv.golden_format == "NC1HWC0"  # the golden dump tensor's own format and shape
    assert pairs["pool1:input:0"].right.path.name.startswith("Relu.relu1.")
    assert pairs["pool1:output:0"].right.path.name.startswith("Pooling.pool1.")
    rows = _by_id(result)
    assert all(_cos(rows[t]) > 0.999 for t in ("conv1:output:0", "pool1:input:0", "pool1:output:0"))
    # without -cf the fused names are looked up directly: conv1's output (relu1) is still found,
    # since the un-fused build keeps the original names
    plain = run_network(case["left"], case["right"], case["fusion_rule"])
    assert plain.scenario is not None and plain.scenario.strategy is Strategy.FUSION
    assert any("add -cf" in note for note in plain.notes)


# --------------------------------------------------------------------------------------------
# Refused combinations.


@pytest.fixture(scope="module")
def runs(quant_case: dict[str, Path], float_case: dict[str, Path]) -> dict[str, Any]:
    return {
        "qnpu": load_run(quant_case["left"]),
        "npu": load_run(float_case["left"]),
        "caffe": load_run(quant_case["caffe"]),
        "pb": load_run(quant_case["caffe_pb"]),
        "qcaffe": load_run(quant_case["quant_caffe"]),
        "qnpy": load_run(quant_case["quant_caffe_npy"]),
    }


REFUSED = [
    # (left, right, options, expected text)
    ("qnpu", "caffe", "f", "scenario 2 of the comparison table (Dump data of the quantized offline model vs "
                           "non-quantized Caffe); it needs -f MODEL.json and -q QUANT_RULE.json (-q missing)"),
    ("qnpu", "pb", "", "it needs -f MODEL.json and -q QUANT_RULE.json (-f and -q missing)"),
    ("qnpu", "caffe", "q", "(-f missing)"),
    ("npu", "caffe", "fq", "-q is for a quantized left side, and no op name of the left dump carries a quantization"),
    ("npu", "qcaffe", "f", "a quantized Caffe golden goes with a quantized offline-model dump (scenario 4 of"),
    ("qnpu", "qcaffe", "fq", "scenario 4 of the comparison table (Dump data of the quantized offline model vs "
                             "quantized Caffe), which takes -f only"),
    ("qnpu", "qnpy", "", "scenario 4 of the comparison table (Dump data of the quantized offline model vs "
                         "quantized Caffe); it needs -f MODEL.json"),
    ("qnpu", "caffe", "fc", "-cf is only for two NPU dumps"),
    ("qcaffe", "caffe", "", "that is scenario 3 of the comparison table (Dump data or .npy of the quantized Caffe "
                            "model vs non-quantized Caffe); it needs -q QUANT_RULE.json"),
    ("qcaffe", "caffe", "f", "it needs -q QUANT_RULE.json"),
    ("qcaffe", "caffe", "qc", "-cf is only for two NPU dumps"),
    ("qcaffe", "qnpu", "q", "did you swap -l and -r?"),
    ("qnpy", "qcaffe", "q", "both sides are quantized Caffe data"),
    ("caffe", "pb", "f", "the left side (My Output) must be an offline-model dump"),
    ("pb", "qnpu", "fq", "did you swap -l and -r?"),
    ("caffe", "qcaffe", "", "a quantized Caffe golden goes with a quantized offline-model dump on the left"),
    ("qnpu", "npu", "", "only the left model is quantized"),
    ("npu", "qnpu", "f", "only the right model is quantized"),
    ("npu", "npu", "q", "-q is not used for two NPU dumps"),
    ("npu", "npu", "c", "-cf (the rule of the model built without fusion) needs -f"),
]


@pytest.mark.parametrize("left,right,options,expected", REFUSED)
def test_unsupported_combinations_name_the_row(runs: dict[str, Any], left: str, right: str, options: str,
                                               expected: str) -> None:
    with pytest.raises(PairingError) as info:
        check_scenario(runs[left], runs[right], fusion="f" in options, quant="q" in options, close="c" in options)
    message = str(info.value)
    assert expected in message
    assert message.startswith("the left folder holds ")


def test_refusal_message_says_what_each_side_holds(runs: dict[str, Any]) -> None:
    with pytest.raises(PairingError) as info:
        check_scenario(runs["qnpu"], runs["caffe"], fusion=True)
    assert str(info.value).startswith(
        "the left folder holds a quantized offline-model dump (op names such as 'conv1_quant_layer' carry a "
        "quantization marker) and the right a non-quantized Caffe/TensorFlow .npy folder: that is scenario 2")


def test_refused_before_any_rule_file_is_read(quant_case: dict[str, Path], tmp_path: Path) -> None:
    """The scenario is checked first: a missing -q file is not what the user hears about."""
    with pytest.raises(PairingError, match="needs -f MODEL.json and -q QUANT_RULE.json"):
        run_network(quant_case["left"], quant_case["caffe"], tmp_path / "no_such.json")


ACCEPTED = [
    ("npu", "caffe", "f", 1, Strategy.FUSION),
    ("npu", "pb", "", None, Strategy.BY_NAME),  # vcompare extension: paired by name, with a note
    ("qnpu", "pb", "fq", 2, Strategy.FUSION_QUANT),
    ("qcaffe", "pb", "q", 3, Strategy.QUANT),
    ("qnpy", "caffe", "fq", 3, Strategy.QUANT),
    ("qnpu", "qnpy", "f", 4, Strategy.FUSION),
    ("npu", "npu", "", 6, Strategy.NPU_VS_NPU),
    ("qnpu", "qnpu", "", 6, Strategy.NPU_VS_NPU),
    ("npu", "npu", "f", 6, Strategy.FUSION),
    ("npu", "npu", "fc", 6, Strategy.CLOSE_FUSION),
    ("caffe", "pb", "", None, Strategy.BY_NAME),  # two golden folders (vcompare extension)
    ("caffe", "npu", "", None, Strategy.BY_NAME),
]


@pytest.mark.parametrize("left,right,options,row,strategy", ACCEPTED)
def test_supported_combinations(runs: dict[str, Any], left: str, right: str, options: str, row: int | None,
                                strategy: Strategy) -> None:
    scenario = check_scenario(runs[left], runs[right], fusion="f" in options, quant="q" in options,
                              close="c" in options)
    assert (scenario.row, scenario.strategy) == (row, strategy)
    assert scenario.notes


# --------------------------------------------------------------------------------------------
# Quant filter, merges (hand-built rules).


def rop(name: str, op_type: str, op_id: int, names: tuple[str, ...], descs: list[tuple[str, int | None, str]],
        inputs: tuple[tuple[str, int], ...] = (), fmt: str = "NCHW", shape: tuple[int, ...] | None = None,
        quant_filtered: bool = False) -> RuleOp:
    """A rule op; ``descs`` = [(origin name, origin index, dtype)]."""
    out = tuple(OutputDesc(k, o, i, fmt, shape, dtype) for k, (o, i, dtype) in enumerate(descs))
    return RuleOp(name, op_type, op_id, inputs, names, out, quant_filtered=quant_filtered)


def make_rule(ops: list[RuleOp], path: str = "rule.json") -> FusionRule:
    groups = group_ops(ops)
    return FusionRule(Path(path), {o.name: o for o in sorted(ops, key=lambda o: o.id)}, groups,
                      {o.name: g for g in groups for o in g.ops}, ["g"], [])


@pytest.mark.parametrize("name,originals,op_type,expected", [
    ("conv1_quant_layer", (), "Conv2D", 2),
    ("conv1_dequant_layer", (), "Conv2D", 3),
    ("a_anti_quant_layer", (), "X", 5),  # holds both _anti_quant_layer and _quant_layer
    ("res2a_branch2ares2a_branch2a_dequant_layerres2a_branch2b_0_quant_layer", (), "Conv2D", 5),
    ("Conv_6Conv_6.dequantConv_10.quant", (), "Conv2D", 5),
    ("Conv_6.quant", (), "AscendQuant", 2),
    ("net/act_quant/AscendQuant", (), "AscendQuant", 2),
    ("net/dequant/AscendDequant", (), "AscendDequant", 3),
    ("fused", ("conv1_0_quant_layer", "conv1", "conv1_dequant_layer"), "Conv2D", 5),  # from the original names
    ("plain", ("conv", "relu"), "Conv2D", 0),
    ("x/anti_quant/AscendAntiQuant", (), "AscendAntiQuant", 3),  # by type (vcompare)
    ("q", (), "AscendQuant", 2),  # by type (vcompare)
])
def test_name_class(name: str, originals: tuple[str, ...], op_type: str, expected: int) -> None:
    assert name_class(rop(name, op_type, 0, originals, [])) == expected


def quant_chain() -> FusionRule:
    return make_rule([
        rop("data", "Data", 0, ("data",), [("data", 0, "DT_FLOAT")]),
        rop("q_quant_layer", "AscendQuant", 1, ("q_quant_layer",), [("q_quant_layer", 0, "DT_INT8")], (("data", 0),)),
        rop("w", "Const", 2, ("w",), [("w", 0, "DT_INT8")]),
        rop("conv", "Conv2D", 3, ("conv",), [("conv", 0, "DT_INT32")], (("q_quant_layer", 0), ("w", 0))),
        rop("bias", "Add", 4, ("bias",), [("bias", 0, "DT_INT32")], (("conv", 0),)),
        rop("dq_dequant_layer", "AscendDequant", 5, ("dq_dequant_layer", "relu"), [("relu", 0, "DT_FLOAT16")],
            (("bias", 0),)),
        rop("pool", "Pooling", 6, ("pool",), [("pool", 0, "DT_FLOAT16")], (("dq_dequant_layer", 0),)),
        rop("odd_quant_layer", "Quant", 7, ("odd_quant_layer",), [("odd_quant_layer", 0, "DT_FLOAT")],
            (("pool", 0),)),
    ])


def test_quant_filter_types_flags_and_reasons() -> None:
    rule = quant_chain()
    types, in_pairs, warnings = quant_output_types(rule)
    assert types["q_quant_layer"] == [QuantOutput.QUANT] and types["w"] == [QuantOutput.NORMAL]
    assert types["conv"] == [QuantOutput.MIDDLE] and types["bias"] == [QuantOutput.MIDDLE]
    assert types["dq_dequant_layer"] == [QuantOutput.DEQUANT] and in_pairs["dq_dequant_layer"]
    assert types["pool"] == [QuantOutput.NORMAL] and not in_pairs["pool"]
    assert types["odd_quant_layer"] == [QuantOutput.NORMAL]
    assert len(warnings) == 1 and "odd_quant_layer output 0 (DT_FLOAT)" in warnings[0]
    filtered = apply_quant_filter(rule)
    assert [o.name for o in filtered.ops.values() if o.quant_filtered] == ["conv", "bias"]
    assert filtered.skip_reasons["bias"] == (
        f"{MIDDLE_REASON}; compared after AscendDequant dq_dequant_layer (quantized by AscendQuant q_quant_layer)")
    assert filtered.warnings == warnings and rule.warnings == []  # the input rule is untouched
    assert not any(o.quant_filtered for o in rule.ops.values())
    assert quant_filtered_names(rule) == ["conv", "bias"]
    again = apply_quant_filter(filtered)
    assert quant_filtered_names(again) == ["conv", "bias"] and again.skip_reasons == filtered.skip_reasons


def test_quant_filter_only_adds_flags() -> None:
    rule = make_rule([rop("x", "Relu", 0, ("x",), [("x", 0, "DT_FLOAT16")], quant_filtered=True)])
    assert quant_filtered_names(rule) == ["x"]
    assert apply_quant_filter(rule).skip_reasons["x"].startswith(MIDDLE_REASON)


def test_quant_filter_without_a_dequant_downstream() -> None:
    rule = make_rule([
        rop("q_quant_layer", "AscendQuant", 0, ("q_quant_layer",), [("q_quant_layer", 0, "DT_INT8")]),
        rop("conv", "Conv2D", 1, ("conv",), [("conv", 0, "DT_INT32")], (("q_quant_layer", 0),)),
    ])
    assert "no dequantizing operator follows it" in apply_quant_filter(rule).skip_reasons["conv"]


def test_merge_quant_names_descs_and_groups() -> None:
    offline = make_rule([
        rop("a", "Conv2D", 0, ("q1", "missing"), [("q1", 0, "DT_FLOAT16")], fmt="NHWC", shape=(1, 2, 2, 3)),
        rop("b", "Conv2D", 1, ("q2",), [("q2", 0, "DT_FLOAT16"), ("q2", 5, "DT_FLOAT16")], fmt=""),
        rop("c", "Relu", 2, ("q3",), [("q3", None, "DT_FLOAT16"), ("other", 0, "DT_FLOAT16")], fmt=""),
        rop("d", "TransData", 3, ("",), [("", 0, "DT_FLOAT16")]),
        rop("e", "Add", 4, ("q1",), [("q1", 0, "DT_FLOAT16")]),
    ], "model.json")
    quant = make_rule([
        rop("q1", "Convolution", 0, ("conv", "bn", "scale"), [("scale", 0, "DT_FLOAT")], fmt="ND", shape=(9,)),
        rop("q2", "ReLU", 1, ("q2",), [("relu", 0, "DT_FLOAT")], fmt="NCHW", shape=(1, 3, 2, 2)),
        rop("q3", "Eltwise", 2, ("x", "y"), [("x", 0, "DT_FLOAT")]),
        rop("q3b", "Eltwise", 3, ("x", "y"), [("y", 0, "DT_FLOAT")]),
    ], "quant.json")
    merged = merge_quant(offline, quant)
    a, b, c, d, e = (merged.ops[n] for n in "abcde")
    assert a.original_names == ("conv", "bn", "scale")  # 'missing' is not in the quant rule: dropped (found names win)
    assert (a.descs[0].origin_name, a.descs[0].origin_format, a.descs[0].origin_shape) == ("scale", "NHWC", (1, 2, 2, 3))
    assert a.descs[0].dtype == "DT_FLOAT16"  # the compiled tensor's dtype is kept
    assert b.original_names == ("q2",)
    assert [(x.origin_name, x.origin_index, x.origin_format) for x in b.descs] == [("relu", 0, "NCHW"), ("", None, "")]
    assert c.original_names == ("x", "y")
    # index unset: every desc of every op of the group; a desc not in the quant rule stays in place
    assert [(x.position, x.origin_name) for x in c.descs] == [(0, "x"), (1, "y"), (2, "other")]
    assert d.original_names == ("",) and d.descs[0].origin_name == ""
    assert merged.group_of["a"] is merged.group_of["e"] and len(merged.group_of["a"].ops) == 2  # regrouped
    assert [g.index for g in merged.groups] == list(range(len(merged.groups)))
    assert any("'missing'" in w and "'other'" in w for w in merged.warnings)


def test_build_rule_filters_before_the_merge() -> None:
    """The flags come from the compiled model's dtypes, not from the quant rule's DT_FLOAT."""
    offline = quant_chain()
    quant = make_rule([rop("conv", "Convolution", 0, ("conv", "bn"), [("bn", 0, "DT_FLOAT")])], "quant.json")
    rule = build_rule(offline, quant)
    assert rule is not None and rule.ops["conv"].quant_filtered and rule.ops["conv"].original_names == ("conv", "bn")
    assert "conv" in rule.skip_reasons
    assert build_rule() is None
    assert build_rule(quant_rule=quant) is not None


def test_merge_close_maps_to_close_ops_and_drops_duplicates() -> None:
    open_rule = make_rule([
        rop("t", "TransData", 0, ("",), [("", 0, "DT_FLOAT16")]),
        rop("t2", "TransData", 1, ("",), [("", 0, "DT_FLOAT16")]),
        rop("convbnrelu", "Conv2D", 2, ("conv", "bn", "relu"), [("relu", 0, "DT_FLOAT16")]),
        rop("split_a", "Mul", 3, ("mm",), [("mm", 0, "DT_FLOAT16")]),
        rop("split_b", "Add", 4, ("mm",), [("mm", 0, "DT_FLOAT16")]),
        rop("gone", "Relu", 5, ("ghost",), [("ghost", 0, "DT_FLOAT16")]),
        rop("two", "Split", 6, ("sp",), [("sp", 0, "DT_FLOAT16"), ("sp", 1, "DT_FLOAT16")]),
    ], "open.json")
    close = make_rule([
        rop("conv_bn", "Conv2D", 0, ("conv", "bn"), [("bn", 0, "DT_FLOAT16")]),
        rop("relu", "Relu", 1, ("relu",), [("relu", 0, "DT_FLOAT16")]),
        rop("mm", "MatMul", 2, ("mm",), [("mm", 0, "DT_FLOAT16")]),
        rop("sp", "Split", 3, ("sp",), [("sp", 1, "DT_FLOAT16"), ("sp", 0, "DT_FLOAT16")]),
    ], "close.json")
    merged = merge_close(open_rule, close)
    assert list(merged.ops) == ["t", "t2", "convbnrelu", "split_b", "gone", "two"]  # split_a: mm already taken
    fused = merged.ops["convbnrelu"]
    assert fused.original_names == ("conv_bn", "relu")
    assert (fused.descs[0].origin_name, fused.descs[0].origin_index) == ("relu", 0)
    assert merged.ops["t"].original_names == ("",) and merged.ops["t2"].original_names == ("",)
    assert merged.ops["gone"].original_names == () and merged.ops["gone"].descs[0].origin_name == "ghost"
    # origin index = position of the same (name, index) desc in the close op
    assert [(x.origin_name, x.origin_index) for x in merged.ops["two"].descs] == [("sp", 1), ("sp", 0)]
    text = " ".join(merged.warnings)
    assert "split_a (its original op 'mm' is compared through a later op)" in text
    assert "'ghost'" in text


# --------------------------------------------------------------------------------------------
# Real ATC graphs.

_AMCT = "Ascend-samples/python/level1_single_api/9_amct/"

# Counts read off the files (they match a raw-JSON recount in test_real_graph_counts):
# - ops: entries of graph[].op; fused: ops whose _datadump_original_op_names lists > 1 name.
# - quant-filtered ops. The filter flags an op fed by a QUANT/MIDDLE output unless all its
#   outputs are DEQUANT. In these graphs that is exactly "reads an int8 tensor of another op and
#   writes an int8 or int32 tensor", which the test recounts from the raw JSON:
#   * Caffe ResNet-50: 53 Conv2D; the fused convs whose name holds both `_dequant_layer` and
#     `_quant_layer` (conv + dequant + the next layer's quant) and that read int8: 35 with one
#     DT_INT8 output (e.g. res2a_branch2ares2a_branch2a_dequant_layerres2a_branch2b_0_quant_layer)
#     and 12 residual-block ends with outputs (DT_FLOAT16 res?_relu, DT_INT8 next quant), e.g.
#     res2a_branch1res2a_branch1_dequant_layerres2ares2a_relures2b_branch2a_0_quant_layer -> 47.
#     The 2 Pooling ops with an int8 output (pool1..., pool5fc1000_0_quant_layer) read float: they
#     are the quant ops themselves, not flagged.
#   * PyTorch ResNet-101: the same pattern with `.dequant`/`.quant` names: 69 int8-only Conv2D +
#     29 (float16, int8) Conv2D -> 98; the 2 AscendQuant ops read float.
#   * TF ResNet-50 v1: 38 int8-only Conv2D + 9 (float16, int8) Conv2D + the int32 logits
#     FullyConnection after logits/act_quant/AscendQuant -> 48. The 3 AscendAntiQuant ops read
#     int8 but write float16 (the shortcut MaxPool output): the reference flags them (their names
#     match no pattern), vcompare classifies them as dequant by type and compares them.
#   * ONNX ResNet-101 (fp16, not quantized) and the msit graphs: 0.
REAL: dict[str, tuple[int, int, int, dict[str, tuple[str, ...]]]] = {
    _AMCT + "amct_caffe/resnet50/src/nuq_files/resnet50_om_model.json": (224, 56, 47, {
        "conv1conv1_relu": ("conv1_0_quant_layer", "conv1", "conv1_dequant_layer", "conv1_relu"),
        "res2a_branch1res2a_branch1_dequant_layerres2ares2a_relures2b_branch2a_0_quant_layer": (
            "res2a_branch1", "res2a_branch1_dequant_layer", "res2a", "res2a_relu", "res2b_branch2a_0_quant_layer"),
        "fc1000fc1000_dequant_layer": ("fc1000", "fc1000_dequant_layer"),
        "trans_TransData_0": ("",),
    }),
    _AMCT + "amct_pytorch/resnet-101/src/nuq_conf/resnet-101_quantized.json": (432, 105, 98, {
        "Conv_1Relu_3": ("Conv_1", "Conv_1.quant", "Conv_1.dequant", "Relu_3"),
        "Conv_6.quant": ("Conv_6.quant",),
        "Conv_16Conv_16.dequantAdd_17Relu_19Conv_21.quant": (
            "Conv_16", "Conv_16.dequant", "Add_17", "Relu_19", "Conv_21.quant"),
    }),
    _AMCT + "amct_tensorflow/resnet-50_v1/src/nuq_conf/resnet-50_v1_quantized.json": (229, 58, 48, {
        "resnet_v1_50/pool1/MaxPoolresnet_v1_50/block1/unit_1/bottleneck_v1/shortcut/act_quant/AscendQuant": (
            "resnet_v1_50/pool1/MaxPool", "resnet_v1_50/block1/unit_1/bottleneck_v1/shortcut/act_quant/AscendQuant"),
        "resnet_v1_50/logits/act_quant/AscendQuant": ("resnet_v1_50/logits/act_quant/AscendQuant",),
    }),
    _AMCT + "amct_onnx/resnet-101/src/nuq_conf/resnet-101_quantized.json": (327, 104, 0, {
        "Conv_0Relu_2": ("BatchNormalization_1", "Conv_0", "Relu_2"),
    }),
    "Ascend-msit/msit/test/UT/resource/analyze/dataset/model/test.om.json": (132, 31, 0, {
        "PartitionedCall_Transpose_0_Transpose_1": ("Transpose_0", "Transpose_0"),
    }),
    "Ascend-msit/msit/test/UT/resource/msquickcmp/om/model.json": (19, 0, 0, {"boxes_all": ("boxes_all",)}),
}


def _raw_recount(path: Path) -> tuple[int, int, int]:
    """(ops, fused ops, ops reading int8 and writing int8/int32) straight from the JSON."""
    doc = json.loads(path.read_text())
    ops = [op for graph in doc["graph"] for op in graph["op"]]
    by_name = {op["name"]: op for op in ops}

    def names(op: dict) -> list[str]:
        for entry in op.get("attr", []):
            if entry["key"] == "_datadump_original_op_names":
                return ((entry.get("value") or {}).get("list") or {}).get("s", [""])
        return [op["name"]]

    def dtypes(op: dict) -> list[str]:
        return [d.get("dtype", "") for d in op.get("output_desc", [])]

    def reads_int8(op: dict) -> bool:
        for edge in op.get("input") or []:
            if not edge or edge.endswith(":-1"):
                continue
            producer, index = edge.rsplit(":", 1)
            produced = dtypes(by_name[producer]) if producer in by_name else []
            if int(index) < len(produced) and produced[int(index)] == "DT_INT8":
                return True
        return False

    fused = sum(len(names(op)) > 1 for op in ops)
    middle = sum(reads_int8(op) and bool({"DT_INT8", "DT_INT32"} & set(dtypes(op))) for op in ops)
    return len(ops), fused, middle


@pytest.mark.parametrize("rel", sorted(REAL), ids=lambda rel: rel.split("/")[-1 if "msit" in rel else 4])
def test_real_graph_counts(rel: str) -> None:
    n_ops, n_fused, n_filtered, mappings = REAL[rel]
    path = shared_path("real", rel)
    rule = load_fusion_rule(path)
    assert len(rule.ops) == n_ops
    assert sum(len(op.original_names) > 1 for op in rule.ops.values()) == n_fused
    for name, original in mappings.items():
        assert rule.ops[name].original_names == original
    filtered = apply_quant_filter(rule)
    flagged = [op for op in filtered.ops.values() if op.quant_filtered]
    assert len(flagged) == n_filtered
    assert _raw_recount(path) == (n_ops, n_fused, n_filtered)
    for op in flagged:
        assert filtered.skip_reasons[op.name].startswith(MIDDLE_REASON)
    # the filter changes no grouping
    assert [len(g.ops) for g in filtered.groups] == [len(g.ops) for g in rule.groups]


def test_real_caffe_graph_reasons_and_merges() -> None:
    rule = apply_quant_filter(load_fusion_rule(shared_path("real", _AMCT + "amct_caffe/resnet50/src/nuq_files/"
                                                                            "resnet50_om_model.json")))
    name = "res2a_branch2ares2a_branch2a_dequant_layerres2a_branch2b_0_quant_layer"
    assert rule.ops[name].quant_filtered
    assert rule.skip_reasons[name] == (
        f"{MIDDLE_REASON}; compared after Conv2D res2a_branch2cres2a_branch2c_dequant_layer "
        "(quantized by Pooling pool1res2a_branch1_0_quant_layer)")
    assert not rule.ops["conv1conv1_relu"].quant_filtered  # class 5 from its original names, float16 = dequant
    # a rule merged with itself keeps every op and mapping (each name maps to its own group)
    assert len(merge_quant(rule, rule).ops) == 224
    merged = merge_close(rule, rule)
    assert merged.ops["conv1conv1_relu"].descs[0].origin_name == "conv1conv1_relu"


# --------------------------------------------------------------------------------------------
# Batch mode.


def _batch_tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A dump time folder with three models, a rule folder with two graphs, one golden folder."""
    case = make_network(tmp_path / "src", seed=11)
    root = tmp_path / "dump" / "20240101120000"
    rules = tmp_path / "rules"
    rules.mkdir()
    for model, step in (("demo.net", "0"), ("ge_default_20240101_7", "9"), ("ge_default_20240101_7", "10"),
                        ("lonely", "0")):
        target = root / "0" / model.replace(".", "_") / "1" / step
        shutil.copytree(case["leaf"], target)
    doc = json.loads(case["fusion_rule"].read_text())
    for graph_name, file_name in (("demo.net", "a.json"), ("ge_default_20230505_7", "b.json")):
        doc["graph"][0]["name"] = graph_name
        (rules / file_name).write_text(json.dumps(doc))
    return root, case["right"], rules


def test_run_batch(tmp_path: Path) -> None:
    root, golden, rules = _batch_tree(tmp_path)
    batch = run_batch(root, golden, rules)
    assert [(item.model_name, item.step, item.rule.name) for item in batch] == [
        ("demo_net", "0", "a.json"), ("ge_default_20240101_7", "10", "b.json")]  # step 10 > 9
    for model_name, result in batch:
        assert result.scenario is not None and result.scenario.row == 1 and len(_compared(result)) >= 8
    item = batch[1]
    assert isinstance(item, BatchItem) and item.output_name("20240101000000") == (
        "0_ge_default_20240101_7_10_result_20240101000000.csv")
    assert any("by its id 7" in note for note in batch.notes)
    assert any("'lonely'" in note and "not compared" in note for note in batch.notes)
    assert batch.errors == []


def test_run_batch_errors(tmp_path: Path) -> None:
    root, golden, rules = _batch_tree(tmp_path)
    with pytest.raises(OptionError, match="no \\*.json rule file"):
        run_batch(root, golden, tmp_path)
    with pytest.raises(OptionError, match="no <device>/<model_name>/<model_id>/<step> dump folder"):
        run_batch(rules, golden, rules)
    (rules / "a.json").unlink()
    (rules / "b.json").unlink()
    other = json.loads(json.dumps({"graph": [{"name": "unrelated", "op": [{"name": "x", "type": "Relu"}]}]}))
    (rules / "c.json").write_text(json.dumps(other))
    with pytest.raises(PairingError, match="batch mode compared no model"):
        run_batch(root, golden, rules)
