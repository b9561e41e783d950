"""msprobe's mapping files (-lm / -am / -dm / -cm / -fm) and the built-in API mapping between a
MindSpore and a PyTorch msprobe tree: small trees of our own, and msprobe's own fixture
(../shared/real_device/msprobe_ms_vs_pt_stats, skipped when absent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import shared_path

from compare.api import pair_runs
from compare.errors import OptionError, PairingError
from compare.loaders import load_run
from compare.pairing.api_mapping import builtin_candidates, parse_api_mapping
from compare.pairing.layer_mapping import framework_function, parse_layer_mapping
from compare.pairing.msprobe_mapping import cell_target, fuzzy_key
from compare.pairing.msprobe_names import DataName, argument_indexes, split_data_name
from compare.records import PairStatus, TensorKind

#: msprobe's MindSpore-vs-PyTorch fixture, inside ../shared
MSPROBE_MS_VS_PT = ("real_device", "msprobe_ms_vs_pt_stats")


def tensor(value: float, dtype: str = "float32", shape: tuple[int, ...] = (2, 2)) -> dict:
    count = 1
    for dim in shape:
        count *= dim
    return {"type": "torch.Tensor", "dtype": f"torch.{dtype}", "shape": list(shape), "Max": value, "Min": value,
            "Mean": value, "Norm": abs(value) * count ** 0.5, "requires_grad": False}


def call(inputs: list[float], outputs: list[float]) -> dict:
    return {"input_args": [tensor(v) for v in inputs], "input_kwargs": {}, "output": [tensor(v) for v in outputs]}


def write_tree(folder: Path, framework: str, calls: dict, construct: dict | None = None,
               stack: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dump.json").write_text(json.dumps({"task": "statistics", "level": "mix", "framework": framework,
                                                  "dump_data_dir": None, "data": calls}))
    if construct is not None:
        (folder / "construct.json").write_text(json.dumps(construct))
    if stack is not None:
        (folder / "stack.json").write_text(json.dumps(stack))
    return folder


def pairs_of(pairing) -> dict[tuple[str, str], list]:
    out: dict[tuple[str, str], list] = {}
    for p in pairing.pairs:
        out.setdefault((p.left_op, p.right_op), []).append(p)
    return out


@pytest.fixture()
def ms_pt(tmp_path: Path) -> tuple[Path, Path]:
    """A MindSpore and a PyTorch tree: one cell / module, Mint vs Torch, a renamed API, attributes renamed."""
    ms = write_tree(tmp_path / "ms", "mindspore", {
        "Cell.net.block.Block.forward.0": call([1.0], [2.0]),
        "Mint.matmul.0.forward": call([1.0, 2.0], [3.0]),
        "Functional.dense.0.forward": call([1.0], [4.0]),
        "Mint.relu.0.forward": call([5.0], [5.0]),
    }, construct={"Cell.net.block.Block.forward.0": None, "Mint.matmul.0.forward": "Cell.net.block.Block.forward.0",
                  "Functional.dense.0.forward": "Cell.net.block.Block.forward.0",
                  "Mint.relu.0.forward": "Cell.net.block.Block.forward.0"})
    pt = write_tree(tmp_path / "pt", "pytorch", {
        "Module.model.layer.Layer.forward.0": call([1.0], [2.0]),
        "Torch.matmul.0.forward": call([1.0, 2.0], [3.0]),
        "Functional.linear.0.forward": call([1.0], [4.0]),
        "Torch.relu.0.forward": call([5.0], [5.0]),
    }, construct={"Module.model.layer.Layer.forward.0": None,
                  "Torch.matmul.0.forward": "Module.model.layer.Layer.forward.0",
                  "Functional.linear.0.forward": "Module.model.layer.Layer.forward.0",
                  "Torch.relu.0.forward": "Module.model.layer.Layer.forward.0"})
    return ms, pt


def test_builtin_api_mapping_applies_between_mindspore_and_pytorch(ms_pt):
    ms, pt = ms_pt
    pairing = pair_runs(load_run(ms), load_run(pt))
    got = pairs_of(pairing)
    assert ("Mint.matmul.0.forward", "Torch.matmul.0.forward") in got
    assert ("Functional.dense.0.forward", "Functional.linear.0.forward") in got
    rows = got[("Mint.matmul.0.forward", "Torch.matmul.0.forward")]
    assert len(rows) == 3 and all(r.status is PairStatus.COMPARED for r in rows)
    assert all(r.reason == "paired by built-in API mapping" for r in rows)
    assert any("built-in API mapping applied" in n for n in pairing.notes)
    assert any(n.startswith("3 pair(s) made by the built-in API mapping") for n in pairing.notes)


def test_layer_mapping_renames_attributes(ms_pt, tmp_path):
    ms, pt = ms_pt
    lm = tmp_path / "layer_mapping.yaml"
    lm.write_text("TopLayer:\n  net: model\nBlock:\n  relu: relu\n")
    (tmp_path / "layer_mapping.yaml").write_text("TopLayer:\n  net: model\n  net.block: model.layer\n")
    pairing = pair_runs(load_run(ms), load_run(pt), layer_mapping=lm)
    got = pairs_of(pairing)
    assert ("Cell.net.block.Block.forward.0", "Module.model.layer.Layer.forward.0") in got
    assert ("Mint.matmul.0.forward", "Torch.matmul.0.forward") in got
    marks = [r.reason for r in got[("Cell.net.block.Block.forward.0", "Module.model.layer.Layer.forward.0")]]
    assert marks and all(m.startswith("paired by layer mapping (layer_mapping.yaml)") for m in marks)
    assert any("made by the layer mapping" in n for n in pairing.notes)


def test_user_api_mapping_pairs_listed_positions(ms_pt, tmp_path):
    ms, pt = ms_pt
    am = tmp_path / "api.yaml"
    am.write_text("- ms_api: Mint.matmul\n  pt_api: Torch.matmul\n  ms_args: [1]\n  pt_args: [0]\n"
                  "  ms_outputs: [0]\n  pt_outputs: [0]\n")
    got = pairs_of(pair_runs(load_run(ms), load_run(pt), api_mapping=am))
    rows = got[("Mint.matmul.0.forward", "Torch.matmul.0.forward")]
    ids = {(r.left.kind, r.left.index, r.right.kind, r.right.index) for r in rows}
    assert ids == {(TensorKind.INPUT, 1, TensorKind.INPUT, 0), (TensorKind.OUTPUT, 0, TensorKind.OUTPUT, 0)}
    assert all("paired by API mapping (api.yaml#1)" in r.reason for r in rows)
    # the tensors the file does not list are one-sided rows, not dropped
    left_only = got[("Mint.matmul.0.forward", "*")]
    assert [(r.left.kind, r.left.index) for r in left_only] == [(TensorKind.INPUT, 0)]
    right_only = got[("*", "Torch.matmul.0.forward")]
    assert [(r.right.kind, r.right.index) for r in right_only] == [(TensorKind.INPUT, 1)]


def test_data_mapping_pairs_tensors_and_na(ms_pt, tmp_path):
    ms, pt = ms_pt
    dm = tmp_path / "data.yaml"
    dm.write_text("Mint.relu.0.forward.input.0: Functional.linear.0.forward.input.0\n"
                  "Mint.relu.0.forward.output.0: N/A\n")
    got = pairs_of(pair_runs(load_run(ms), load_run(pt), data_mapping=dm))
    (row,) = got[("Mint.relu.0.forward", "Functional.linear.0.forward")]
    assert row.status is PairStatus.COMPARED and row.reason.startswith("paired by data mapping (data.yaml#1)")
    na = [r for r in got[("Mint.relu.0.forward", "*")] if r.left.kind is TensorKind.OUTPUT]
    assert na and na[0].status is PairStatus.MISSING_RIGHT and "no counterpart" in na[0].reason


def test_cell_mapping(ms_pt, tmp_path):
    ms, pt = ms_pt
    cm = tmp_path / "cell.yaml"
    cm.write_text("net.block.Block: model.layer.Layer\n")
    got = pairs_of(pair_runs(load_run(ms), load_run(pt), cell_mapping=cm))
    rows = got[("Cell.net.block.Block.forward.0", "Module.model.layer.Layer.forward.0")]
    assert rows and all(r.reason.startswith("paired by cell mapping (cell.yaml)") for r in rows)
    assert cell_target("Cell.fc1.Dense.backward.2", {"Dense": "Linear"}) == "Module.fc1.Linear.backward.2"
    assert cell_target("Mint.relu.0.forward", {}) is None


def test_fuzzy_match_pairs_differing_call_counts(tmp_path):
    left = write_tree(tmp_path / "a", "pytorch", {
        "Functional.relu.3.forward": call([1.0], [1.0]),
        "Module.fc.Linear.parameters_grad.0": {"weight": tensor(0.5)},
    })
    right = write_tree(tmp_path / "b", "pytorch", {
        "Functional.relu.5.forward": call([1.0], [1.0]),
        "Module.fc.Linear.parameters_grad.1": {"weight": tensor(0.5)},
    })
    with pytest.raises(PairingError, match="no operator"):
        pair_runs(load_run(left), load_run(right))  # nothing pairs by name: an error naming both sides
    pairing = pair_runs(load_run(left), load_run(right), fuzzy_match=True)
    got = pairs_of(pairing)
    assert ("Functional.relu.3.forward", "Functional.relu.5.forward") in got
    assert all(r.reason.startswith("paired by fuzzy match") for r in got[("Functional.relu.3.forward",
                                                                           "Functional.relu.5.forward")])
    assert any("made by the fuzzy match" in n for n in pairing.notes)
    assert fuzzy_key("Module.fc.Linear.parameters_grad.1") == fuzzy_key("Module.fc.Linear.parameters_grad.0")


def test_mapping_options_refused_on_other_runs_and_bad_files(tmp_path, ms_pt):
    ms, pt = ms_pt
    bad = tmp_path / "bad.yaml"
    bad.write_text("- 1\n- 2\n")
    with pytest.raises(OptionError, match="layer-mapping .*bad.yaml"):
        pair_runs(load_run(ms), load_run(pt), layer_mapping=bad)
    with pytest.raises(OptionError, match="api-mapping bad.yaml entry 1"):
        pair_runs(load_run(ms), load_run(pt), api_mapping=bad)
    with pytest.raises(OptionError, match="no such file"):
        pair_runs(load_run(ms), load_run(pt), data_mapping=tmp_path / "missing.yaml")
    with pytest.raises(OptionError, match="ms_args has 2 position"):
        parse_api_mapping({"ms_api": "A.b", "pt_api": "C.d", "ms_args": [0, 1], "pt_args": [0]}, "f")
    with pytest.raises(OptionError, match="not an msprobe data name"):
        split_data_name("relu.input.0")


def test_small_pieces():
    assert builtin_candidates("Mint", "cos") == ("Torch.cos",)
    assert builtin_candidates("Functional", "dense") == ("Functional.linear",)
    assert builtin_candidates("Functional", "abs") == ("Torch.abs", "Functional.abs")
    assert parse_layer_mapping({"Cell": {"a.b": "c(x)"}}, "f")["TopLayer"]["a"][0].target == "c"
    frames = ["File /x/msprobe/wrap_api.py, line 1, in api_function, \n return ApiTemplate(...)",
              "File /p/site-packages/mindspore/ops/utils.py, line 2, in _tensor_getitem, \n ...",
              "File /user/model.py, line 3, in construct, \n ..."]
    assert framework_function(frames, "mindspore") == "_tensor_getitem"
    assert framework_function(frames[:1] + frames[2:], "mindspore") is None


#: msprobe's own expectation for its fixture (test_layer_mapping.py; see SOURCE.md): left call -> right call.
EXPECTED = {
    "Tensor.__add__.0.forward": None,
    "Tensor.__bool__.1.forward": None,
    "Tensor.__add__.1.forward": "Tensor.__add__.0.forward",
    "Mint.logical_or.0.forward": "Tensor.__or__.0.forward",
    "Distributed.all_reduce.0.forward": "Distributed.all_reduce.0.forward",
    "Cell.network_with_loss.module.language_model.embedding.word_embeddings.VocabParallelEmbedding.forward.0":
        "Module.module.module.language_model.embedding.word_embeddings.VocabParallelEmbedding.forward.0",
    "Primitive.norm.RmsNorm.0.forward": "NPU.npu_rms_norm.0.forward",
    "Cell.network_with_loss.module.language_model.encoder.layers.0.ParallelTransformerLayer.forward.0":
        "Module.module.module.language_model.encoder.layers.0.ParallelTransformerLayer.forward.0",
    "Cell.network_with_loss.module.language_model.encoder.layers.0.input_norm.FusedRMSNorm.backward.0": None,
    "Cell.network_with_loss.module.language_model.encoder.layers.0.attention.ParallelAttention.forward.0":
        "Module.module.module.language_model.encoder.layers.0.self_attention.ParallelAttention.forward.0",
    "Mint.cos.0.forward": "Torch.cos.0.forward",
    "Functional.flash_attention_score.0.forward": "NPU.npu_fusion_attention.0.forward",
    "Functional.flash_attention_score.0.backward": "NPU.npu_fusion_attention.0.backward",
}


def test_msprobe_fixture_layer_mapping_makes_msprobes_pairs():
    fixture = shared_path(*MSPROBE_MS_VS_PT)
    pairing = pair_runs(load_run(fixture / "mindspore_data"), load_run(fixture / "pytorch_data"),
                        layer_mapping=fixture / "layer_mapping.yaml")
    for left, right in EXPECTED.items():
        rows = [p for p in pairing.pairs if p.left_op == left]
        assert rows, left
        if right is None:
            assert all(p.right_op == "*" and p.status is PairStatus.MISSING_RIGHT for p in rows), left
            assert all("layer mapping" in (p.reason or "") for p in rows), left
        else:
            assert any(p.right_op == right and p.status is PairStatus.COMPARED for p in rows), left
            assert all(p.right_op in (right, "*") for p in rows), left
    # int32 [5,2] vs int64 []: never compared
    add0 = [p for p in pairing.pairs if p.left_op == "Tensor.__add__.0.forward"]
    assert add0 and not any(p.status is PairStatus.COMPARED for p in add0)
    assert "13 pair(s) made by the layer mapping" in pairing.notes


def test_data_names_split_and_numbered_as_the_reader_numbers_tensors():
    assert split_data_name("Functional.flash_attention_score.0.forward.input.attn_mask") == DataName(
        "Functional.flash_attention_score.0.forward", "input.attn_mask")
    assert split_data_name("Module.output.Linear.forward.0.input.0") == DataName(
        "Module.output.Linear.forward.0", "input.0")
    assert split_data_name("Module.fc.Linear.parameters_grad.weight") == DataName(
        "Module.fc.Linear.parameters_grad", "weight")
    assert split_data_name("Torch.cos.0.forward") == DataName("Torch.cos.0.forward")
    entry = {"input_args": [tensor(1.0), [tensor(2.0), {"type": "int", "value": 3}], None],
             "input_kwargs": {"attn_mask": tensor(4.0), "scale": {"type": "float", "value": 0.5}},
             "output": [tensor(5.0)]}
    got = argument_indexes("Functional.f.0.forward", entry)
    assert got["input.0"] == (TensorKind.INPUT, 0)
    assert got["input.1.1"] == (TensorKind.INPUT, 2)
    assert got["input.2"] == (TensorKind.INPUT, 3)
    assert got["input.attn_mask"] == (TensorKind.INPUT, 4)
    assert got["output.0"] == (TensorKind.OUTPUT, 0)


def test_data_mapping_by_keyword_name(tmp_path):
    left = write_tree(tmp_path / "l", "mindspore", {"Functional.f.0.forward": {
        "input_args": [tensor(1.0)], "input_kwargs": {"mask": tensor(2.0)}, "output": [tensor(3.0)]}})
    right = write_tree(tmp_path / "r", "pytorch", {"NPU.g.0.forward": {
        "input_args": [tensor(1.0), tensor(9.0), tensor(2.0)], "input_kwargs": {}, "output": [tensor(3.0)]}})
    dm = tmp_path / "dm.yaml"
    dm.write_text("Functional.f.0.forward.input.mask: NPU.g.0.forward.input.2\n"
                  "Functional.f.0.forward.input.nothing: NPU.g.0.forward.input.0\n")
    pairing = pair_runs(load_run(left), load_run(right), data_mapping=dm)
    (row,) = [p for p in pairing.pairs if p.left is not None and p.right is not None]
    assert (row.left.index, row.right.index) == (1, 2) and row.reason.startswith("paired by data mapping (dm.yaml#1)")
    assert any("1 data-mapping line(s) not used: dm.yaml#2" in n for n in pairing.notes)
    # every other tensor of both calls is a one-sided row
    one_sided = {(p.left_op, p.right_op, (p.left or p.right).kind, (p.left or p.right).index)
                 for p in pairing.pairs if p.left is None or p.right is None}
    assert ("Functional.f.0.forward", "*", TensorKind.INPUT, 0) in one_sided
    assert ("*", "NPU.g.0.forward", TensorKind.INPUT, 0) in one_sided
    assert ("*", "NPU.g.0.forward", TensorKind.OUTPUT, 0) in one_sided


def test_fuzzy_match_across_frameworks_uses_the_builtin_api_names(tmp_path):
    left = write_tree(tmp_path / "a", "mindspore", {"Mint.cos.3.forward": call([1.0], [0.5]),
                                                   "Cell.net.Net.forward.0": call([1.0], [0.5])})
    right = write_tree(tmp_path / "b", "pytorch", {"Torch.cos.5.forward": call([1.0], [0.5]),
                                                  "Module.net.Net.forward.0": call([1.0], [0.5])})
    without = pairs_of(pair_runs(load_run(left), load_run(right)))
    assert ("Mint.cos.3.forward", "*") in without
    got = pairs_of(pair_runs(load_run(left), load_run(right), fuzzy_match=True))
    rows = got[("Mint.cos.3.forward", "Torch.cos.5.forward")]
    assert rows and all(r.reason.startswith("paired by fuzzy match") for r in rows)
