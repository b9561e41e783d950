"""Builders shared by several test modules (imported as ``builders``: ``tests/`` is on the path
through its conftest): fusion-rule JSON nodes, the real ATC graphs of ../shared, a TF-NPU leaf."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from compare.testing.synthetic_mindspore import BASE_TS, OPS, _ascend_dump, tensor_value

# --------------------------------------------------------------------------------------------
# Fusion-rule JSON.


def attr(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": value}


def names_attr(*names: str) -> dict[str, Any]:
    return attr("_datadump_original_op_names", {"list": {"s": list(names), "val_type": 1}})


def desc(
    origin: str | None = None,
    index: int | None = None,
    fmt: str | None = None,
    shape: list[int] | None = None,
    plain_format: str | None = "NCHW",
    **extra: Any,
) -> dict[str, Any]:
    attrs = []
    if plain_format is not None:
        attrs.append(attr("origin_format", {"s": plain_format}))
    if origin is not None:
        attrs.append(attr("_datadump_origin_name", {"s": origin}))
    if index is not None:
        attrs.append(attr("_datadump_origin_output_index", {"i": index}))
    if fmt is not None:
        attrs.append(attr("_datadump_origin_format", {"s": fmt}))
    if shape is not None:
        attrs.append(attr("origin_shape", {"list": {"i": shape, "val_type": 2}}))
    return {"dtype": "DT_FLOAT16", "layout": "NC1HWC0", "shape": {"dim": [1, 1, 4, 4, 16]}, "attr": attrs, **extra}


def op(name: str, op_type: str = "Conv2D", op_id: int | None = None, inputs: list[str] | None = None,
       names: tuple[str, ...] | None = None, descs: list[dict[str, Any]] | None = None,
       attrs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"name": name, "type": op_type}
    if op_id is not None:
        node["id"] = op_id
    if inputs is not None:
        node["input"] = inputs
    node["attr"] = list(attrs or [])
    if names is not None:
        node["attr"].append(names_attr(*names))
    if descs is not None:
        node["output_desc"] = descs
    return node


def write_rule(tmp_path: Path, *graphs: list[dict[str, Any]], raw: Any = None, name: str = "rule.json") -> Path:
    path = tmp_path / name
    doc = raw if raw is not None else {"graph": [{"name": f"g{i}", "op": ops} for i, ops in enumerate(graphs)]}
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


# --------------------------------------------------------------------------------------------
# Real ATC om->json graphs of ../shared/real: ops, groups, and some mappings each must give.

_AMCT = "Ascend-samples/python/level1_single_api/9_amct/"
REAL = {
    "Ascend-msit/msit/test/UT/resource/msquickcmp/om/model.json": (
        19, 18, {"boxes_all": ("boxes_all",), "trans_Cast_0": ("",)},
    ),
    "Ascend-msit/msit/test/UT/resource/analyze/dataset/model/test.om.json": (
        132, 130, {
            "PartitionedCall_Transpose_0_Transpose_1": ("Transpose_0", "Transpose_0"),
            "BatchNormalization_60_BNInferenceD": (
                "BatchNormalization_60", "Transpose_55", "Transpose_55", "Constant_56", "Constant_57",
                "Constant_58", "Constant_59"),
        },
    ),
    _AMCT + "amct_caffe/resnet50/src/nuq_files/resnet50_om_model.json": (
        224, 224, {
            "conv1conv1_relu": ("conv1_0_quant_layer", "conv1", "conv1_dequant_layer", "conv1_relu"),
            "pool1res2a_branch1_0_quant_layer": ("pool1", "res2a_branch1_0_quant_layer"),
        },
    ),
    _AMCT + "amct_onnx/resnet-101/src/nuq_conf/resnet-101_quantized.json": (
        327, 327, {"Conv_0Relu_2": ("BatchNormalization_1", "Conv_0", "Relu_2"), "input": ("input",)},
    ),
    _AMCT + "amct_pytorch/resnet-101/src/nuq_conf/resnet-101_quantized.json": (
        432, 432, {
            "Conv_1Relu_3": ("Conv_1", "Conv_1.quant", "Conv_1.dequant", "Relu_3"),
            "Conv_6Conv_6.dequantConv_10.quant": ("Conv_6", "Conv_6.dequant", "Conv_10.quant"),
        },
    ),
    _AMCT + "amct_tensorflow/resnet-50_v1/src/nuq_conf/resnet-50_v1_quantized.json": (
        229, 229, {
            "resnet_v1_50/pool1/MaxPoolresnet_v1_50/block1/unit_1/bottleneck_v1/shortcut/act_quant/AscendQuant": (
                "resnet_v1_50/pool1/MaxPool",
                "resnet_v1_50/block1/unit_1/bottleneck_v1/shortcut/act_quant/AscendQuant"),
        },
    ),
}


# --------------------------------------------------------------------------------------------
# Dump trees.


def tf_leaf(root: Path, time: str, device: int, *, iteration: int = 0, value_iteration: int = 0) -> None:
    """A TF-NPU (GE) leaf {time}/{device}/{model}/1/{iteration} of the synthetic ops."""
    leaf = root / time / str(device) / "ge_default_20240101120000_1" / "1" / str(iteration)
    leaf.mkdir(parents=True, exist_ok=True)
    for task, op in enumerate(OPS, start=1):
        _ascend_dump(leaf, op, task, BASE_TS + 1000 * task, value_iteration, device)


def one_op_golden(tmp_path: Path) -> tuple[Path, Path]:
    """A golden folder without rank / iteration levels holding one op of the synthetic MindSpore
    trees (the softmax output, as ``sm``), and the mapping file that pairs it: ``(golden, mapping)``."""
    golden = tmp_path / "golden"
    golden.mkdir()
    op = OPS[3]
    np.save(golden / "sm.0.1700000000000000.npy", tensor_value(op.name, "output", 0, op.outputs[0], 0, 0))
    mapping = tmp_path / "map.csv"
    mapping.write_text(f"{op.name},sm\n")
    return golden, mapping


def comparable_result(document: dict) -> dict:
    """A JSON result without what differs from run to run: creation time, timings, workers, and
    where the parts were compared (the first note: ``part(s) in turn`` / ``part(s) on 2 worker(s)
    of local:2``)."""
    document = dict(document)
    document.pop("created")
    document.pop("timing")
    document["parts"] = [{k: v for k, v in p.items() if k not in ("seconds", "worker")} for p in document["parts"]]
    document["notes"] = [re.sub(r" part\(s\) (in turn|on \d+ worker\(s\) of \S+): ", " part(s): ", note)
                         for note in document.get("notes", [])]
    return document
