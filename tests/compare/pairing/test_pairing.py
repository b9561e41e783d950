"""Tests of the fusion-rule reader (compare/pairing/fusion_rule.py) and pairing (match.py).

- rule reader: every documented key and default, every error path with its JSON path;
- all real ATC om->json graphs of ../shared/real load, with op/group counts and mappings;
- pairing strategies on hand-built runs (no tensor bytes are ever read);
- the shared cases: rows equal the reference tool's result CSV (Index, OpType, NPUDump,
  GroundTruth, TensorIndex), row for row.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from builders import _AMCT, REAL, attr, desc, op, write_rule
from conftest import shared_path

from compare.errors import PairingError, RuleError
from compare.pairing.fusion_groups import golden_origin, group_key
from compare.pairing.fusion_rule import load_fusion_rule
from compare.pairing.match import pair_runs
from compare.pairing.rule_records import FusionRule, Origin, OutputDesc, Relation, RuleOp
from compare.records import OpDump, Pair, PairStatus, Run, RunKind, TensorKind, TensorRef

IN, OUT = TensorKind.INPUT, TensorKind.OUTPUT

# --------------------------------------------------------------------------------------------
# Builders of rule JSON.


def load_ops(tmp_path: Path, *graphs: list[dict[str, Any]]) -> FusionRule:
    return load_fusion_rule(write_rule(tmp_path, *graphs))


# --------------------------------------------------------------------------------------------
# Rule reader: keys and defaults.


def test_original_names_absent_maps_op_to_itself_and_fills_origin_names(tmp_path: Path) -> None:
    rule = load_ops(tmp_path, [op("data", "Data", descs=[desc(), desc()])])
    data = rule.ops["data"]
    assert data.original_names == ("data",)
    assert [(d.origin_name, d.origin_index) for d in data.descs] == [("data", 0), ("data", 1)]
    assert data.id == 0  # id absent -> 0
    assert rule.input_nodes == ["data"]


def test_original_names_list_without_s_is_one_empty_name(tmp_path: Path) -> None:
    node = op("trans_Cast_0", "Cast", attrs=[attr("_datadump_original_op_names", {"list": {"val_type": 1}})],
              descs=[desc()])
    rule = load_ops(tmp_path, [node])
    cast = rule.ops["trans_Cast_0"]
    assert cast.original_names == ("",)
    assert cast.descs[0].origin_name == ""  # not filled: the op has an (empty) mapping
    assert group_key(cast) == "trans_Cast_0"
    assert rule.groups[0].relation is Relation.ONE_TO_ONE


def test_output_desc_keys_and_defaults(tmp_path: Path) -> None:
    descs = [
        desc("a", 2, "NHWC", [1, 4, 4, 3]),
        {"dtype": "DT_FLOAT", "layout": "ND"},  # no attr: skipped, later positions move up
        desc("b", fmt="", plain_format="ND"),  # index absent -> position (1); format falls back
        {"attr": [attr("origin_shape", {"list": {"val_type": 2}}), attr("_datadump_origin_name", {"s": "c"})]},
    ]
    rule = load_ops(tmp_path, [op("x", names=("a", "b", "c"), descs=descs)])
    got = rule.ops["x"].descs
    assert got[0] == OutputDesc(0, "a", 2, "NHWC", (1, 4, 4, 3), "DT_FLOAT16", "NC1HWC0", (1, 1, 4, 4, 16))
    assert (got[1].position, got[1].origin_name, got[1].origin_index, got[1].origin_format) == (1, "b", 1, "ND")
    assert got[1].origin_shape is None  # origin_shape absent
    assert (got[2].origin_shape, got[2].origin_format, got[2].dtype, got[2].shape) == ((), "", "", None)


def test_inputs_control_edges_empty_and_lxslice(tmp_path: Path) -> None:
    ops = [
        op("a_lxslice12", "Relu", names=("a",), descs=[desc("a", 0)]),
        op("b", "Relu", inputs=["a_lxslice3:0", "", "ctrl:-1", "a:1"], names=("b",), descs=[desc("b", 0)]),
    ]
    rule = load_ops(tmp_path, ops)
    assert list(rule.ops) == ["a", "b"]
    assert rule.ops["b"].inputs == (("a", 0), ("a", 1))


def test_l1_number_multiop_flag_graphs_merged_and_sorted_by_id(tmp_path: Path) -> None:
    g0 = [
        op("late", "Relu", op_id=7, names=("late",), descs=[desc("late", 0)],
           attrs=[attr("_L1_fusion_sub_graph_no", {"s": "L1_3"}), attr("_datadump_is_multiop", {"b": True})]),
        op("early", "Relu", op_id=2, names=("early",), descs=[desc("early", 0)]),
    ]
    g1 = [op("other", "Relu", op_id=1, names=("other",), descs=[desc("other", 0)])]
    rule = load_ops(tmp_path, g0, g1)
    assert list(rule.ops) == ["other", "early", "late"]  # sorted by id
    assert [g.key for g in rule.groups] == ["L1_3", "early", "other"]  # first appearance
    assert rule.graph_names == ["g0", "g1"]
    late = rule.ops["late"]
    assert (late.l1_fusion_no, late.is_multiop, late.graph) == ("L1_3", True, "g0")
    assert rule.ops["other"].graph == "g1"


def test_duplicate_op_name_keeps_first_and_warns(tmp_path: Path) -> None:
    # an exact repeat of one operator, and L1 slices equal after _lxslice removal: first kept, warned
    same = op("x", "Relu", names=("a",), descs=[desc("a", 0)])
    ops = [same, dict(same), op("y_lxslice0", "Relu", names=("b",)), op("y_lxslice1", "Relu", names=("b",))]
    rule = load_ops(tmp_path, ops)
    assert rule.ops["x"].type == "Relu"
    assert set(rule.ops) == {"x", "y"}
    assert len(rule.warnings) == 2 and "graph[0].op[1]" in rule.warnings[0] and "'x'" in rule.warnings[0]
    assert "_lxslice" in rule.warnings[1]


def test_duplicate_op_name_of_two_different_ops_is_a_rule_error(tmp_path: Path) -> None:
    # behaviour changed deliberately (issue 7): the reference keeps the first one silently
    ops = [op("x", "Relu", names=("a",), descs=[desc("a", 0)]), op("x", "Conv2D", names=("b",), descs=[desc("b", 0)])]
    with pytest.raises(RuleError, match=r"graph\[0\]\.op\[0\] and graph\[0\]\.op\[1\]") as info:
        load_ops(tmp_path, ops)
    assert info.value.json_path == "graph[0].op[1]" and "'x'" in str(info.value)


def test_rename_node_adjustment(tmp_path: Path) -> None:
    ops = [
        # renamed op: single original name that is the group key -> empty origin names filled
        op("new_name", "Relu", names=("old_name",), descs=[desc(), desc("kept", 3)]),
        # no desc at all -> one desc (name, index unset)
        op("bare", "Relu", names=("orig_bare",)),
        # two ops in one group: not adjusted
        op("p1", "Relu", names=("shared",), descs=[desc()]),
        op("p2", "Relu", names=("shared",), descs=[desc()]),
    ]
    rule = load_ops(tmp_path, ops)
    assert [(d.origin_name, d.origin_index) for d in rule.ops["new_name"].descs] == [("old_name", 0), ("kept", 3)]
    assert rule.ops["bare"].descs == (OutputDesc(0, "orig_bare", None, "", None),)
    assert rule.ops["p1"].descs[0].origin_name == ""
    origin = golden_origin(rule, "bare", OUT, 2)
    assert isinstance(origin, Origin) and (origin.origin_name, origin.origin_index) == ("orig_bare", 2)


def test_groups_and_relations(tmp_path: Path) -> None:
    ops = [
        op("one", "Relu", names=("one",), descs=[desc("one", 0)]),
        op("fused", "Conv2D", names=("conv", "bn", "relu"), descs=[desc("relu", 0)]),
        op("split_a", "Add", names=("orig",), descs=[desc("orig", 0)]),
        op("split_b", "Mul", names=("orig",), descs=[desc()]),
        op("mm_a", "Add", names=("x", "y"), descs=[desc("x", 0)]),
        op("mm_b", "Mul", names=("x", "y"), descs=[desc("y", 0)]),
        op("l1_a", "Conv2D", names=("c1",), attrs=[attr("_L1_fusion_sub_graph_no", {"s": "7"})], descs=[desc("c1", 0)]),
        op("l1_b", "Conv2D", names=("c2",), attrs=[attr("_L1_fusion_sub_graph_no", {"s": "7"})], descs=[desc("c2", 0)]),
        op("none", "Relu", attrs=[attr("_datadump_original_op_names", {"list": {"s": []}})], descs=[desc()]),
    ]
    rule = load_ops(tmp_path, ops)
    got = [(g.index, [o.name for o in g.ops], g.relation) for g in rule.groups]
    assert got == [
        (0, ["one"], Relation.ONE_TO_ONE),
        (1, ["fused"], Relation.MULTI_TO_ONE),
        (2, ["split_a", "split_b"], Relation.ONE_TO_MULTI),
        (3, ["mm_a", "mm_b"], Relation.MULTI_TO_MULTI),
        (4, ["l1_a", "l1_b"], Relation.L1_FUSION),
        (5, ["none"], Relation.ONE_TO_ONE),
    ]
    assert re.fullmatch(r"[0-9a-f-]{36}", rule.groups[1].key)  # UUID3 of the concatenated names
    assert rule.groups[5].key == "none" and rule.ops["none"].original_names == ()
    assert rule.group_of["split_b"] is rule.groups[2]


def test_unknown_attr_value_shapes_are_tolerated(tmp_path: Path) -> None:
    weird = [
        attr("some_null", None),
        attr("list_ints", {"list": {"i": [1, 2], "val_type": "VT_LIST_INT"}}),
        attr("list_bools", {"list": {"b": [True, False]}}),
        attr("floats", {"list": {"f": [0.5]}}),
        attr("tensor", {"t": {"desc": {"dtype": "DT_FLOAT"}, "data": "AAAA"}}),
        attr("scalar", 3),
        {"key": "no_value"},
    ]
    d = desc("w", 0)
    d["attr"] += [attr("shape_range", None), attr("origin_shape_range", {"list": {"i": []}})]
    rule = load_ops(tmp_path, [op("w", "Relu", names=("w",), descs=[d], attrs=weird)])
    assert rule.ops["w"].descs[0].origin_name == "w"


def test_null_values_of_read_keys_count_as_absent(tmp_path: Path) -> None:
    d = {"attr": [attr("_datadump_origin_name", None), attr("_datadump_origin_output_index", None),
                  attr("origin_shape", None)]}
    rule = load_ops(tmp_path, [op("n", "Relu", attrs=[attr("_datadump_original_op_names", None)], descs=[d])])
    n = rule.ops["n"]
    assert n.original_names == ("n",)
    assert (n.descs[0].origin_name, n.descs[0].origin_index, n.descs[0].origin_shape) == ("n", 0, None)


# --------------------------------------------------------------------------------------------
# Rule reader: errors name the JSON path.


def _bad_ops_case(bad: dict[str, Any], n_before: int = 0) -> dict[str, Any]:
    good = [op(f"ok{i}", "Relu", op_id=i, names=(f"ok{i}",), descs=[desc(f"ok{i}", 0)]) for i in range(n_before)]
    return {"graph": [{"name": "g", "op": good + [bad]}]}


ERROR_CASES = [
    ([1, 2], "", "expected a JSON object"),
    ({"name": "m"}, "", "no 'graph' array"),
    ({"graph": {"op": []}}, "graph", "expected a JSON array"),
    ({"graph": [{"name": "g"}]}, "graph[0]", "without an 'op'"),
    ({"graph": [{"name": 5, "op": []}]}, "graph[0].name", "expected a string"),
    ({"graph": [{"op": [7]}]}, "graph[0].op[0]", "expected a JSON object"),
    (_bad_ops_case({"type": "Relu"}), "graph[0].op[0]", "without a 'name'"),
    (_bad_ops_case({"name": "x"}, 2), "graph[0].op[2]", "without a 'type'"),
    (_bad_ops_case({"name": ["x"], "type": "Relu"}), "graph[0].op[0].name", "expected a string"),
    (_bad_ops_case({"name": "x", "type": "Relu", "id": "3"}), "graph[0].op[0].id", "expected a JSON integer"),
    (_bad_ops_case({"name": "x", "type": "Relu", "input": "a:0"}), "graph[0].op[0].input", "expected a JSON array"),
    (_bad_ops_case({"name": "x", "type": "Relu", "input": ["a:0", "b:x"]}), "graph[0].op[0].input[1]",
     "not of the form 'producer:output_index'"),
    (_bad_ops_case({"name": "x", "type": "Relu", "input": ["noindex"]}), "graph[0].op[0].input[0]", "producer:"),
    (_bad_ops_case({"name": "x", "type": "Relu", "input": [3]}), "graph[0].op[0].input[0]", "expected a string"),
    (_bad_ops_case({"name": "x", "type": "Relu", "attr": {"key": "k"}}), "graph[0].op[0].attr", "JSON array"),
    (_bad_ops_case({"name": "x", "type": "Relu", "attr": [{"value": {}}]}), "graph[0].op[0].attr[0]",
     "without a 'key'"),
    (_bad_ops_case({"name": "x", "type": "Relu", "attr": [{"key": 1, "value": {}}]}), "graph[0].op[0].attr[0].key",
     "expected a string"),
    (_bad_ops_case(op("x", "Relu", attrs=[attr("_datadump_original_op_names", "conv1")])),
     "graph[0].op[0].attr[0].value", "expected a JSON object"),
    (_bad_ops_case(op("x", "Relu", attrs=[attr("_datadump_original_op_names", {"list": {"s": "conv1"}})])),
     "graph[0].op[0].attr[0].value.list.s", "expected a JSON array"),
    (_bad_ops_case(op("x", "Relu", attrs=[attr("_datadump_original_op_names", {"list": {"s": ["a", 2]}})])),
     "graph[0].op[0].attr[0].value.list.s[1]", "expected a string"),
    (_bad_ops_case(op("x", "Relu", attrs=[attr("_L1_fusion_sub_graph_no", {"s": 3})])),
     "graph[0].op[0].attr[0].value.s", "expected a string"),
    (_bad_ops_case(op("x", "Relu", attrs=[attr("_datadump_is_multiop", {"b": "true"})])),
     "graph[0].op[0].attr[0].value.b", "expected true or false"),
    (_bad_ops_case(op("x", "Relu", descs={"attr": []})), "graph[0].op[0].output_desc", "JSON array"),
    (_bad_ops_case(op("x", "Relu", descs=["d"])), "graph[0].op[0].output_desc[0]", "JSON object"),
    (_bad_ops_case(op("x", "Relu", descs=[{"attr": [], "shape": {"dim": [1, "2"]}}])),
     "graph[0].op[0].output_desc[0].shape.dim[1]", "expected a JSON integer"),
    (_bad_ops_case(op("x", "Relu", descs=[{"attr": [attr("_datadump_origin_name", {"s": ["a"]})]}])),
     "graph[0].op[0].output_desc[0].attr[0].value.s", "expected a string"),
    (_bad_ops_case(op("x", "Relu", descs=[{"attr": [attr("origin_shape", {"list": {"i": [1, 2.5]}})]}])),
     "graph[0].op[0].output_desc[0].attr[0].value.list.i[1]", "expected a JSON integer"),
    # the string origin index of the brief's example: op 12, attr 3
    (_bad_ops_case(op("x", "Relu", descs=[{"attr": [
        attr("origin_format", {"s": "NCHW"}), attr("_datadump_origin_name", {"s": "x"}),
        attr("_datadump_origin_format", {"s": "NCHW"}), attr("_datadump_origin_output_index", {"i": "0"})]}]), 12),
     "graph[0].op[12].output_desc[0].attr[3].value.i", "expected a JSON integer, found a string ('0')"),
]


@pytest.mark.parametrize(("doc", "json_path", "problem"), ERROR_CASES)
def test_bad_structure_names_json_path(tmp_path: Path, doc: Any, json_path: str, problem: str) -> None:
    path = write_rule(tmp_path, raw=doc)
    with pytest.raises(RuleError) as info:
        load_fusion_rule(path)
    err = info.value
    assert (err.json_path or "") == json_path
    assert problem in err.problem
    assert str(path) in str(err)
    if json_path:
        assert f"at {json_path}:" in str(err)


def test_not_json_names_line_and_column(tmp_path: Path) -> None:
    path = write_rule(tmp_path, raw='{\n  "graph": [\n    {"op": [}\n  ]\n}')
    with pytest.raises(RuleError, match=r"not valid JSON: .* at line 3 column 13") as info:
        load_fusion_rule(path)
    assert str(path) in str(info.value)


def test_unreadable_rule_files(tmp_path: Path) -> None:
    with pytest.raises(RuleError, match="cannot read the fusion rule"):
        load_fusion_rule(tmp_path / "missing.json")
    binary = tmp_path / "rule.om"
    binary.write_bytes(b"\x89IMOD\xff\xfe\x00")
    with pytest.raises(RuleError, match="not a UTF-8 text file"):
        load_fusion_rule(binary)


# --------------------------------------------------------------------------------------------
# Golden lookup (spec §3.5).


@pytest.fixture
def chain_rule(tmp_path: Path) -> FusionRule:
    cast_names = attr("_datadump_original_op_names", {"list": {"val_type": 1}})
    ops = [
        op("data", "Data", op_id=0, descs=[desc(shape=[1, 3, 4, 4])]),
        op("cast", "Cast", op_id=1, inputs=["data:0"], attrs=[cast_names], descs=[desc()]),
        op("trans", "TransData", op_id=2, inputs=["cast:0"], attrs=[cast_names], descs=[desc()]),
        op("w", "Const", op_id=3, descs=[desc()]),
        op("conv", "Conv2D", op_id=4, inputs=["trans:0", "w:0", "ghost:0"], names=("conv", "relu"),
           descs=[desc("relu", 0, "NCHW", [1, 8, 4, 4])]),
        op("split", "SplitD", op_id=5, inputs=["conv:0"], names=("split",),
           descs=[desc("split", 0), desc("split", 1)]),
        op("newop", "Relu", op_id=6, inputs=["split:5"], attrs=[cast_names], descs=[desc()]),
        op("nodesc", "Relu", op_id=7, inputs=["newop:0"], names=("a", "b")),
    ]
    return load_ops(tmp_path, ops)


def test_golden_origin_outputs_inputs_and_walk_back(chain_rule: FusionRule) -> None:
    rule = chain_rule
    assert golden_origin(rule, "conv", OUT, 0) == Origin("conv", "relu", 0, "NCHW", (1, 8, 4, 4))
    # input 0 of conv comes from TransData <- Cast <- data
    assert golden_origin(rule, "conv", IN, 0) == Origin("data", "data", 0, "NCHW", (1, 3, 4, 4))
    # outputs of Cast / TransData walk back too
    assert golden_origin(rule, "cast", OUT, 0) == Origin("data", "data", 0, "NCHW", (1, 3, 4, 4))
    assert golden_origin(rule, "trans", IN, 0) == Origin("data", "data", 0, "NCHW", (1, 3, 4, 4))
    assert golden_origin(rule, "conv", IN, 1) == Origin("w", "w", 0, "NCHW", None)
    assert golden_origin(rule, "split", OUT, 1) == Origin("split", "split", 1, "NCHW", None)
    # output index out of range -> output_desc[0], origin index stays that desc's
    assert golden_origin(rule, "newop", IN, 0) == Origin("split", "split", 0, "NCHW", None)


def test_golden_origin_reasons(chain_rule: FusionRule) -> None:
    rule = chain_rule
    assert golden_origin(rule, "conv", IN, 2) == (
        "input 2 of conv comes from 'ghost', which is not in the fusion rule"
    )
    assert "input 3 of conv has no data edge" in str(golden_origin(rule, "conv", IN, 3))
    assert "empty _datadump_origin_name" in str(golden_origin(rule, "newop", OUT, 0))
    assert "'nodesc' has no output_desc" in str(golden_origin(rule, "nodesc", OUT, 0))
    assert "not in the fusion rule" in str(golden_origin(rule, "nothere", OUT, 0))


# --------------------------------------------------------------------------------------------
# Real ATC om->json graphs.

@pytest.mark.parametrize("rel", sorted(REAL), ids=lambda rel: rel.split("/")[4 if rel.startswith(_AMCT) else -1])
def test_real_graphs_load(rel: str) -> None:
    n_ops, n_groups, mappings = REAL[rel]
    rule = load_fusion_rule(shared_path("real", rel))
    assert (len(rule.ops), len(rule.groups)) == (n_ops, n_groups)
    for name, original in mappings.items():
        assert rule.ops[name].original_names == original
    assert rule.warnings == []
    assert sum(len(g.ops) for g in rule.groups) == n_ops
    ids = [o.id for o in rule.ops.values()]
    assert ids == sorted(ids)


def test_real_graphs_found_all() -> None:
    """Every *.json under shared/real is listed in REAL (a new real graph needs counts here)."""
    root = shared_path("real")
    found = {p.relative_to(root).as_posix() for p in root.rglob("*.json")}
    assert found == set(REAL)


def test_real_graph_details() -> None:
    base = "Ascend-samples/python/level1_single_api/9_amct/"
    rule = load_fusion_rule(shared_path("real", base + "amct_onnx/resnet-101/src/nuq_conf/resnet-101_quantized.json"))
    # Conv input 0 walks back through TransData and Cast to the model input
    assert golden_origin(rule, "Conv_0Relu_2", IN, 0) == Origin("input", "input", 0, "NCHW", (1, 3, 224, 224))
    assert golden_origin(rule, "Conv_0Relu_2", OUT, 0) == Origin("Conv_0Relu_2", "Relu_2", 0, "NCHW", (1, 64, 112, 112))
    rule = load_fusion_rule(shared_path("real", "Ascend-msit/msit/test/UT/resource/analyze/dataset/model/test.om.json"))
    group = rule.group_of["trans_Cast_65PartitionedCall_RandomNormalLike_327_mul_171"]
    assert (group.key, group.relation, len(group.ops)) == ("RandomNormalLike_327", Relation.ONE_TO_MULTI, 3)
    assert rule.input_nodes == ["feats"] and rule.graph_names == ["tdnn_NPU_0"]
    tf_graph = "amct_tensorflow/resnet-50_v1/src/nuq_conf/resnet-50_v1_quantized.json"
    rule = load_fusion_rule(shared_path("real", base + tf_graph))
    conv = rule.ops["resnet_v1_50/conv1/Conv2Dresnet_v1_50/conv1/Relu"]
    assert (conv.descs[0].origin_name, conv.descs[0].origin_format) == ("resnet_v1_50/conv1/Relu", "NHWC")


# --------------------------------------------------------------------------------------------
# Hand-built runs.


def tref(op_name: str, kind: TensorKind, index: int, *, fmt: str = "NC1HWC0", shape: tuple[int, ...] = (1, 1, 4, 4, 16),
         original_shape: tuple[int, ...] = ()) -> TensorRef:
    return TensorRef(op_name, kind, index, "float16", fmt, shape, Path(f"/d/{op_name}"), original_shape)


def dump(name: str, op_type: str | None = "Conv2D", n_in: int = 0, n_out: int = 1, ts: int = 0, *,
         error: str | None = None, fmt: str = "NC1HWC0", shape: tuple[int, ...] = (1, 1, 4, 4, 16),
         out_indexes: tuple[int, ...] | None = None, original_shape: tuple[int, ...] = ()) -> OpDump:
    if error:
        return OpDump(name, op_type, Path(f"/d/{name}"), error=error, timestamp=ts)
    ins = tuple(tref(name, IN, i, fmt=fmt, shape=shape, original_shape=original_shape) for i in range(n_in))
    outs = tuple(tref(name, OUT, i, fmt=fmt, shape=shape, original_shape=original_shape)
                 for i in (out_indexes if out_indexes is not None else range(n_out)))
    return OpDump(name, op_type, Path(f"/d/{name}"), inputs=ins, outputs=outs, timestamp=ts)


def golden(name: str, *indexes: int, shape: tuple[int, ...] = (1, 16, 4, 4)) -> OpDump:
    outs = tuple(TensorRef(name, OUT, i, "float32", "RESERVED", shape, Path(f"/g/{name}.{i}.npy")) for i in indexes)
    return OpDump(name, None, Path(f"/g/{name}"), outputs=outs)


def run(kind: RunKind, *dumps: OpDump, where: str = "/run") -> Run:
    return Run(Path(where), Path(where), kind, {d.name: d for d in dumps})


def rows(pairing_pairs: list[Pair]) -> list[tuple]:
    return [(p.index, p.op_type, p.left_op, p.right_op, p.tensor_id, p.status) for p in pairing_pairs]


def make_rule(ops: list[RuleOp]) -> FusionRule:
    from compare.pairing.fusion_groups import group_ops

    groups = group_ops(ops)
    return FusionRule(Path("rule.json"), {o.name: o for o in ops}, groups,
                      {o.name: g for g in groups for o in g.ops}, ["g"], [])


def rop(name: str, op_type: str, op_id: int, names: tuple[str, ...], origins: list[tuple[str, int]] | None = None,
        inputs: tuple[tuple[str, int], ...] = (), fmt: str = "NCHW", shape: tuple[int, ...] | None = (1, 16, 4, 4),
        l1: str = "", multiop: bool = False, quant_filtered: bool = False) -> RuleOp:
    origins = origins if origins is not None else [(names[0] if names else "", 0)]
    descs = tuple(OutputDesc(k, o, i, fmt, shape) for k, (o, i) in enumerate(origins))
    return RuleOp(name, op_type, op_id, inputs, names, descs, l1, multiop, "g", quant_filtered)


S = PairStatus


def test_fusion_one_to_one_rows_and_fields(tmp_path: Path) -> None:
    rule = make_rule([
        rop("data", "Data", 0, ("data",)),
        rop("cast", "Cast", 1, ("",), [("", 0)], inputs=(("data", 0),)),
        rop("conv", "Conv2D", 2, ("conv", "relu"), [("relu", 0)], inputs=(("cast", 0), ("bias", 0)), fmt=""),
        rop("bias", "Const", 3, ("bias",)),
        rop("pool", "MaxPool", 4, ("pool",), inputs=(("conv", 0),), shape=(1, 16, 2, 2)),
        rop("broken", "Relu", 5, ("broken",), inputs=(("pool", 0),)),
        rop("empty", "Relu", 6, ("empty",)),
    ])
    left = run(RunKind.OFFLINE,
               dump("cast", "Cast", 1, 1, fmt="NCHW", shape=(1, 16, 4, 4)),
               dump("conv", "Conv2D", 2, 1, original_shape=(1, 16, 4, 4)),
               dump("pool", "MaxPool", 1, 1),
               dump("broken", "Relu", error="/d/broken: truncated header (byte 12)"),
               dump("empty", "Relu", 0, 0),
               dump("not_in_rule", "Relu", 1, 1))
    right = run(RunKind.NUMPY, golden("data", 0), golden("relu", 0), golden("pool", 0), golden("unused", 0))
    pairing = pair_runs(left, right, fusion_rule=rule)
    assert pairing.mode == "fusion"
    assert rows(pairing.pairs) == [
        (0, "Data", "data", "data", None, S.MISSING_LEFT),
        (1, "Cast", "cast", "*", "cast:input:0", S.COMPARED),
        (1, "Cast", "cast", "*", "cast:output:0", S.COMPARED),
        (2, "Conv2D", "conv", "conv,relu", "conv:input:0", S.COMPARED),
        (2, "Conv2D", "conv", "conv,relu", "conv:input:1", S.MISSING_RIGHT),
        (2, "Conv2D", "conv", "conv,relu", "conv:output:0", S.COMPARED),
        (3, "Const", "bias", "bias", None, S.MISSING_LEFT),
        (4, "MaxPool", "pool", "pool", "pool:input:0", S.COMPARED),
        (4, "MaxPool", "pool", "pool", "pool:output:0", S.COMPARED),
        (5, "Relu", "broken", "broken", None, S.NOT_COMPARABLE),
        (6, "Relu", "empty", "empty", None, S.NOT_COMPARABLE),
    ]
    by_id = {p.tensor_id: p for p in pairing.pairs if p.tensor_id}
    assert pairing.pairs[0].reason == "no dump file for operator 'data' (type Data) in the left folder"
    assert by_id["conv:input:1"].reason == (
        "no golden tensor for conv:input:1 (looked for bias output 0 in the right folder)"
    )
    assert by_id["conv:input:1"].left is not None and by_id["conv:input:1"].right is None
    assert pairing.pairs[9].reason == "/d/broken: truncated header (byte 12)"
    assert "holds no tensors" in str(pairing.pairs[10].reason)
    # golden lookup, format and target shape
    assert by_id["cast:output:0"].right is right.ops["data"].outputs[0]
    assert by_id["conv:output:0"].right is right.ops["relu"].outputs[0]
    assert by_id["conv:output:0"].golden_format == "NC1HWC0"  # rule format empty -> left format
    assert by_id["pool:output:0"].golden_format == "NCHW"
    assert by_id["pool:output:0"].target_shape == (1, 16, 2, 2)  # no original_shape -> origin_shape
    assert by_id["conv:input:0"].target_shape == (1, 16, 4, 4)  # left original_shape wins
    assert by_id["pool:input:0"].op_sequence == 4 and by_id["pool:input:0"].convert
    assert pairing.unmatched_left == ["not_in_rule"]
    assert pairing.unmatched_right == ["unused"]
    assert any("not_in_rule" in note for note in pairing.notes)


def test_fusion_quant_dequant_skips_and_quant_filter() -> None:
    rule = make_rule([
        rop("q", "AscendQuant", 0, ("q",)),
        rop("conv_dequant", "Conv2D", 1, ("conv_dequant",)),
        rop("dq", "AscendDequant", 2, ("dq",)),
        rop("filtered", "Relu", 3, ("filtered",), quant_filtered=True),
        rop("dq2", "AscendDequant", 4, ("dq2",)),
    ])
    left = run(RunKind.OFFLINE, dump("q", "AscendQuant", 1, 1), dump("conv_dequant", "Conv2D", 1, 1),
               dump("dq", "AscendDequant", 1, 1), dump("filtered", "Relu", 1, 1), dump("dq2", "AscendDequant", 1, 0))
    right = run(RunKind.NUMPY, golden("q", 0), golden("conv_dequant", 0), golden("dq", 0))
    pairs = pair_runs(left, right, fusion_rule=rule).pairs
    got = [(p.left_op, p.tensor_id, p.status) for p in pairs]
    assert got == [
        ("q", "q:input:0", S.MISSING_RIGHT),  # AscendQuant: inputs only (its input is not in the rule)
        ("conv_dequant", "conv_dequant:output:0", S.COMPARED),  # name ends in _dequant: outputs only
        ("dq", "dq:output:0", S.COMPARED),
        ("filtered", None, S.NOT_COMPARABLE),  # quant-filtered: one row with the reason, never dropped
        ("dq2", None, S.NOT_COMPARABLE),  # dq2: nothing left to compare
    ]
    assert "between a quant and a dequant op" in (pairs[3].reason or "")


def test_fusion_one_to_multi_and_multi_to_multi() -> None:
    rule = make_rule([
        rop("a", "Add", 0, ("orig",)),
        rop("inner", "Mul", 1, ("orig",), [("", 0)], multiop=True),
        rop("b", "Mul", 2, ("orig",), [("orig", 1)]),
        rop("m1", "Add", 3, ("x", "y"), [("x", 0)]),
        rop("m2", "Mul", 4, ("x", "y"), [("y", 0)]),
    ])
    left = run(RunKind.OFFLINE, dump("inner", "Mul", 0, 1), dump("b", "Mul", 1, 1))
    right = run(RunKind.NUMPY, golden("orig", 0, 1), golden("x", 0))
    pairing = pair_runs(left, right, fusion_rule=rule)
    assert rows(pairing.pairs) == [
        (0, "Mul", "a,inner,b", "orig", "b:input:0", S.MISSING_RIGHT),
        (0, "Mul", "a,inner,b", "orig", "b:output:0", S.COMPARED),
        (1, "Add", "m1,m2", "x,y", None, S.MISSING_LEFT),
    ]
    assert pairing.pairs[1].right is right.ops["orig"].outputs[1]
    reason = pairing.pairs[2].reason or ""
    assert "'m1'" in reason and "'m2'" in reason
    assert pairing.unmatched_left == ["inner"]  # inner node: never compared


def test_fusion_l1_latest_and_earliest() -> None:
    ops = [rop("l1a", "Conv2D", 0, ("c1",), l1="L1"), rop("l1b", "Conv2D", 1, ("c2",), l1="L1"),
           rop("l1c", "Conv2D", 2, ("c2",), l1="L1"),
           rop("m1", "Conv2D", 3, ("same",), l1="M"), rop("m2", "Conv2D", 4, ("same",), l1="M"),
           rop("n1", "Conv2D", 5, ("n",), l1="N"), rop("n2", "Conv2D", 6, ("n",), l1="N"),
           rop("solo", "Conv2D", 7, ("c2",), l1="S")]
    rule = make_rule(ops)
    left = run(RunKind.OFFLINE, dump("l1a", n_out=1, ts=30), dump("l1b", n_out=1, ts=10), dump("l1c", n_out=1, ts=20),
               dump("m1", n_out=1, ts=5), dump("m2", n_out=1, ts=1))
    right = run(RunKind.NUMPY, golden("c1", 0), golden("c2", 0), golden("same", 0))
    pairing = pair_runs(left, right, fusion_rule=rule)
    assert rows(pairing.pairs) == [
        (0, "Conv2D", "l1a,l1b,l1c", "c1,c2", "l1b:output:0", S.COMPARED),  # earliest (names differ)
        (0, "Conv2D", "l1a,l1b,l1c", "c1,c2", "l1a:output:0", S.COMPARED),  # latest
        (1, "Conv2D", "m1,m2", "same", "m1:output:0", S.COMPARED),  # latest only: same names
        (2, "Conv2D", "n1,n2", "n", None, S.MISSING_LEFT),
        (3, "Conv2D", "solo", "c2", None, S.MISSING_LEFT),  # one op: OneToOne despite its L1 number
    ]
    assert rule.groups[3].relation is Relation.ONE_TO_ONE
    assert "L1 fusion group 'N'" in (pairing.pairs[3].reason or "")


def test_fusion_offline_right_uses_golden_dump_format() -> None:
    rule = make_rule([rop("fused", "Conv2D", 0, ("conv", "relu"), [("relu", 0)])])
    left = run(RunKind.OFFLINE, dump("fused", n_out=1))
    right = run(RunKind.OFFLINE, dump("relu", "Relu", 1, 1, fmt="NHWC", shape=(1, 4, 4, 16)))
    pair = pair_runs(left, right, fusion_rule=rule).pairs[0]
    assert (pair.right, pair.golden_format, pair.target_shape) == (right.ops["relu"].outputs[0], "NHWC", (1, 4, 4, 16))


def test_fusion_normalised_names_on_both_sides() -> None:
    rule = make_rule([rop("net/conv.1", "Conv2D", 0, ("tf/conv.1",), [("tf/conv.1", 0)])])
    left = run(RunKind.OFFLINE, dump("net_conv_1", n_out=1))
    right = run(RunKind.NUMPY, golden("tf_conv_1", 0))
    pair = pair_runs(left, right, fusion_rule=rule).pairs[0]
    assert (pair.tensor_id, pair.status) == ("net/conv.1:output:0", S.COMPARED)


def test_fusion_rule_as_path_and_no_pairs_error(tmp_path: Path) -> None:
    path = write_rule(tmp_path, [op("conv", "Conv2D", names=("conv",), descs=[desc("conv", 0)])])
    left = run(RunKind.OFFLINE, dump("conv", n_out=1))
    assert pair_runs(left, run(RunKind.NUMPY, golden("conv", 0)), fusion_rule=path).pairs[0].status is S.COMPARED
    with pytest.raises(PairingError, match=r"pairs no tensor .*rule operators 'conv'.*right operators 'other'"):
        pair_runs(left, run(RunKind.NUMPY, golden("other", 0)), fusion_rule=path)
    with pytest.raises(PairingError, match=r"left operators 'elsewhere'"):
        pair_runs(run(RunKind.OFFLINE, dump("elsewhere")), run(RunKind.NUMPY, golden("conv", 0)), fusion_rule=path)


def test_npu_vs_npu_order_and_one_sided_ops() -> None:
    left = run(RunKind.OFFLINE, dump("b", "Relu", 1, 1, ts=5), dump("a", "Conv2D", 1, 1, ts=5),
               dump("first", "Data", 0, 1, ts=1), dump("left_only", "MaxPool", 1, 1, ts=9))
    right = run(RunKind.OFFLINE, dump("right_z", "Add", 1, 1, ts=3), dump("right_y", "Add", 1, 1, ts=3),
                dump("a", "Conv2D", 1, 1, ts=2), dump("b", "Relu", 1, 1), dump("first", "Data", 0, 1))
    pairing = pair_runs(left, right)
    assert pairing.mode == "npu-vs-npu"
    assert rows(pairing.pairs) == [
        (0, "Data", "first", "first", "first:output:0", S.COMPARED),
        (1, "Conv2D", "a", "a", "a:input:0", S.COMPARED),  # same timestamp: by name
        (1, "Conv2D", "a", "a", "a:output:0", S.COMPARED),
        (2, "Relu", "b", "b", "b:input:0", S.COMPARED),
        (2, "Relu", "b", "b", "b:output:0", S.COMPARED),
        (3, None, "left_only", "*", None, S.MISSING_RIGHT),
        (4, None, "*", "right_y", None, S.MISSING_LEFT),
        (5, None, "*", "right_z", None, S.MISSING_LEFT),
    ]
    assert all(not p.convert and p.golden_format is None for p in pairing.pairs)
    assert pairing.pairs[5].reason == "no dump file for operator 'left_only' (type MaxPool) in the right folder"
    assert pairing.pairs[6].reason == "no dump file for operator 'right_y' (type Add) in the left folder"
    assert pairing.pairs[1].right is right.ops["a"].inputs[0]
    assert (pairing.unmatched_left, pairing.unmatched_right) == (["left_only"], ["right_y", "right_z"])


def test_npu_vs_npu_group_mismatches() -> None:
    left = run(RunKind.OFFLINE,
               dump("count", "Relu", 1, 1, ts=1),
               dump("shape", "Conv2D", 1, 1, ts=2, shape=(1, 2, 16, 16, 16)),
               dump("both", "Add", 2, 1, ts=3, fmt="NCHW", shape=(1, 2, 3, 4)),
               dump("fmt", "Add", 1, 1, ts=4, fmt="NCHW"),
               dump("bad", "Add", ts=5, error="/d/bad: not a dump"),
               dump("nothing", "Add", 0, 0, ts=6))
    right = run(RunKind.OFFLINE,
                dump("count", "Relu", 1, 2),
                dump("shape", "Conv2D", 1, 1, shape=(1, 1, 16, 16, 16)),
                dump("both", "Add", 1, 1, fmt="NCHW", shape=(1, 2, 3, 5)),
                dump("fmt", "Add", 1, 1, fmt="NHWC"),
                dump("bad", "Add", 1, 1), dump("nothing", "Add", 0, 0))
    got = [(p.index, p.tensor_id, p.status, p.reason) for p in pair_runs(left, right).pairs]
    assert got == [
        (0, "count:input:0", S.COMPARED, None),
        (0, None, S.NOT_COMPARABLE, "output count differs: 1 on the left, 2 on the right"),
        (1, None, S.NOT_COMPARABLE,
         "input 0 shape differs: [1,2,16,16,16] vs [1,1,16,16,16]; "
         "output 0 shape differs: [1,2,16,16,16] vs [1,1,16,16,16]"),
        (2, None, S.NOT_COMPARABLE,
         "input count differs: 2 on the left, 1 on the right; output 0 shape differs: [1,2,3,4] vs [1,2,3,5]"),
        (3, None, S.NOT_COMPARABLE,
         "input 0 format differs: NCHW vs NHWC; output 0 format differs: NCHW vs NHWC"),
        (4, None, S.NOT_COMPARABLE, "left dump cannot be used: /d/bad: not a dump"),
        (5, None, S.NOT_COMPARABLE, "neither dump of 'nothing' holds a tensor"),
    ]


def test_npu_vs_npu_nothing_in_common() -> None:
    left = run(RunKind.OFFLINE, dump("a"), dump("b"), where="/left")
    right = run(RunKind.OFFLINE, dump("x"), where="/right")
    with pytest.raises(PairingError, match=r"/left vs /right.*left has 'a', 'b'; right has 'x'"):
        pair_runs(left, right)


def test_by_name_offline_vs_golden_outputs_only() -> None:
    left = run(RunKind.OFFLINE, dump("net_conv", "Conv2D", 1, 2, ts=2, original_shape=(1, 3, 4, 4)),
               dump("relu", "Relu", 1, 1, ts=1), dump("lonely", "Relu", 1, 1, ts=3))
    right = run(RunKind.NUMPY, golden("net/conv", 0, 2), golden("relu", 0, shape=(1, 8)), golden("extra", 0))
    pairing = pair_runs(left, right)
    assert pairing.mode == "by-name"
    assert [(p.index, p.left_op, p.right_op, p.tensor_id, p.status) for p in pairing.pairs] == [
        (0, "relu", "relu", "relu:output:0", S.COMPARED),
        (1, "net_conv", "net/conv", "net_conv:output:0", S.COMPARED),
        (1, "net_conv", "*", "net_conv:output:1", S.MISSING_RIGHT),
        (1, "*", "net/conv", "net/conv:output:2", S.MISSING_LEFT),
        (2, "lonely", "*", "lonely:output:0", S.MISSING_RIGHT),
        (3, "*", "extra", "extra:output:0", S.MISSING_LEFT),
    ]
    first, conv = pairing.pairs[0], pairing.pairs[1]
    assert (first.golden_format, first.target_shape, first.convert) == (None, (1, 8), True)
    assert conv.target_shape == (1, 3, 4, 4)  # original_shape wins
    assert pairing.pairs[2].reason == "the right folder has no output 1 of 'net/conv'"
    assert pairing.pairs[4].reason == "no operator 'lonely' in the right folder"
    assert (pairing.unmatched_left, pairing.unmatched_right) == (["lonely"], ["extra"])
    assert any("'/' and '.'" in n for n in pairing.notes) and any("only outputs" in n for n in pairing.notes)


def test_by_name_two_golden_folders_and_errors() -> None:
    left = run(RunKind.NUMPY, golden("a", 0), golden("b", 0), where="/l")
    right = run(RunKind.STANDARD, golden("a", 0), OpDump("b", None, Path("/g/b"), error="bad .pb"), where="/r")
    got = [(p.tensor_id, p.status, p.reason) for p in pair_runs(left, right).pairs]
    assert got == [("a:output:0", S.COMPARED, None), (None, S.NOT_COMPARABLE, "right dump cannot be used: bad .pb")]
    with pytest.raises(PairingError, match=r"no operator of /l matches one of /r2 .*right has 'zz'"):
        pair_runs(left, run(RunKind.NUMPY, golden("zz", 0), where="/r2"))


# --------------------------------------------------------------------------------------------
# Shared cases against the reference tool's result CSV.


def _load_case_runs(case: Path, data: dict[str, Any]) -> tuple[Run, Run]:
    """Both runs via compare.loaders.load_run, or minimal runs built from names if it is missing."""
    try:
        from compare.loaders import load_run
    except ImportError:
        return _runs_from_names(case, data)
    return load_run(case / data["left_dir"]), load_run(case / data["right_dir"])


def _runs_from_names(case: Path, data: dict[str, Any]) -> tuple[Run, Run]:
    """Fallback: runs from file names and case.json pairs (tensor metadata is made up)."""

    def offline(folder: Path, side: str) -> Run:
        ops: dict[str, OpDump] = {}
        for path in sorted(folder.iterdir()):
            fields = path.name.split(".")
            tensors = {(p[f"{side}_kind"], p[f"{side}_index"]) for p in data["pairs"]
                       if p.get(f"{side}_file") and p[f"{side}_file"].endswith(path.name)}
            refs = [tref(fields[1], TensorKind(k), i, fmt="ND", shape=(1,)) for k, i in sorted(tensors)]
            ops[fields[1]] = OpDump(fields[1], fields[0], path, inputs=tuple(r for r in refs if r.kind is IN),
                                    outputs=tuple(r for r in refs if r.kind is OUT), timestamp=int(fields[-1]))
        return Run(folder, folder, RunKind.OFFLINE, ops)

    left = offline(case / data["left_dir"], "left")
    right_dir = case / data["right_dir"]
    if any(p.suffix == ".npy" for p in right_dir.iterdir()):
        right = Run(right_dir, right_dir, RunKind.NUMPY, {})
        for path in sorted(right_dir.glob("*.npy")):
            name, index = re.fullmatch(r"(.+)\.(\d+)\.\d+\.npy", path.name).groups()  # type: ignore[union-attr]
            ref = TensorRef(name, OUT, int(index), "float32", "RESERVED", (1,), path)
            old = right.ops.get(name)
            outs = (old.outputs if old else ()) + (ref,)
            right.ops[name] = OpDump(name, None, path, outputs=outs)
        return left, right
    return left, offline(right_dir, "right")


def _oracle_rows(case: Path) -> list[tuple]:
    (result,) = (case / "oracle" / "network").glob("result_*.csv")
    with result.open(newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        cols = [header.index(c) for c in ("Index", "OpType", "NPUDump", "GroundTruth", "TensorIndex")]
        out = []
        for row in reader:
            index, op_type, left_op, right_op, tensor_id = (row[c] for c in cols)
            out.append((int(index), None if op_type == "NaN" else op_type, left_op, right_op,
                        None if tensor_id == "NaN" else tensor_id))
    return out


@pytest.mark.parametrize("name", ["ascend_vs_caffe_npy", "ascend_v1_protobuf", "ascend_vs_ascend"])
def test_shared_case_rows_equal_oracle(name: str) -> None:
    case = shared_path("cases", name)
    data = json.loads((case / "case.json").read_text())
    left, right = _load_case_runs(case, data)
    rule = load_fusion_rule(case / data["fusion_json"]) if data.get("fusion_json") else None
    pairing = pair_runs(left, right, fusion_rule=rule)
    ours = [(p.index, p.op_type, p.left_op, p.right_op, p.tensor_id) for p in pairing.pairs]
    assert ours == _oracle_rows(case)
    # every tensor pair the reference compared has the same golden file
    by_id = {p.tensor_id: p for p in pairing.pairs if p.tensor_id}
    for expected in data["pairs"]:
        pair = by_id[expected["tensor_id"]]
        assert pair.left is not None and pair.left.path.name == Path(expected["left_file"]).name
        if expected.get("right_file"):
            assert pair.right is not None, expected["tensor_id"]
            assert pair.right.path.name == Path(expected["right_file"]).name
            assert pair.right.kind.value == expected["right_kind"]
        else:
            assert pair.right is None and pair.status is S.MISSING_RIGHT
