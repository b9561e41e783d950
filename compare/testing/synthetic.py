"""Synthetic, seeded dump networks in the real on-disk formats (for the demo, tests, benchmarks).

:func:`make_network` writes one comparison case:

- ``npu/{time}/{device}/{model}/{model_id}/{data_index}/`` -- Ascend binary dumps
  ``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}`` with fp16 tensors in device layouts
  (NC1HWC0 activations, FRACTAL_Z convolution weights, ND fully-connected tensors);
- ``golden/{op_name}.{output_index}.{timestamp}.npy`` -- float32 NCHW goldens (Caffe naming);
- ``model.json`` -- the ATC om->json graph pairing them (fused conv+bn+relu layers, an inserted
  TransData with no golden counterpart).

The left tensors are the goldens rounded to fp16 plus seeded noise; one layer (``fc1`` by
default) gets a visibly larger error so that a demo shows something to find.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.layouts import convert_layout

C0 = 16
TIME_DIR = "20240101120000"
BASE_TS = 1704110400000000


@dataclass
class _Op:
    name: str
    type: str
    inputs: list[str]
    originals: list[str] | None  # None: attribute absent (maps to itself); []: inserted op, no counterpart
    out_layout: str
    out_shape: tuple[int, ...]  # device shape
    origin_shape: tuple[int, ...]
    origin_format: str = "NCHW"
    dumped: bool = True
    extra: dict = field(default_factory=dict)


def _attr_s(key: str, value: str) -> dict:
    return {"key": key, "value": {"s": value}}


def _attr_list_i(key: str, values: tuple[int, ...]) -> dict:
    return {"key": key, "value": {"list": {"i": list(values), "val_type": 2}}}


def _rule_op(op: _Op, op_id: int) -> dict:
    attrs = []
    if op.originals is not None:
        listing: dict = {"val_type": 1}
        if op.originals:
            listing["s"] = list(op.originals)
        attrs.append({"key": "_datadump_original_op_names", "value": {"list": listing}})
    desc = {
        "dtype": "DT_FLOAT16" if op.dumped else "DT_FLOAT",
        "layout": op.out_layout,
        "shape": {"dim": list(op.out_shape)},
        "attr": [_attr_s("origin_format", op.origin_format), _attr_list_i("origin_shape", op.origin_shape)],
    }
    if op.originals:  # a fused op says which original layer's output its output is
        desc["attr"] = [_attr_s("_datadump_origin_name", op.originals[-1]),
                        {"key": "_datadump_origin_output_index", "value": {"i": 0}},
                        _attr_s("_datadump_origin_format", op.origin_format)] + desc["attr"]
    entry = {"name": op.name, "type": op.type, "id": op_id, "attr": attrs, "output_desc": [desc]}
    if op.inputs:
        entry["input"] = list(op.inputs)
    return entry


def _nc1hwc0_shape(nchw: tuple[int, ...]) -> tuple[int, ...]:
    n, c, h, w = nchw
    return (n, -(-c // C0), h, w, C0)


def _to_device(array: np.ndarray, layout: str, origin_format: str) -> np.ndarray:
    if layout == "NC1HWC0":
        return np.asarray(convert_layout(array, "NCHW", "NC1HWC0", array.shape))
    if layout == "FRACTAL_Z":
        return np.asarray(convert_layout(array, "NCHW", "FRACTAL_Z", array.shape))
    return array


def _fractal_z_shape(nchw: tuple[int, ...]) -> tuple[int, ...]:
    n, c, h, w = nchw
    return (-(-c // C0) * h * w, -(-n // C0), C0, C0)


def make_network(out_dir: str | Path, *, seed: int = 0, channels: int = 8, size: int = 16, classes: int = 10,
                 noisy_layer: str = "fc1", noise: float = 0.1) -> dict[str, Path]:
    """Write a small fused CNN comparison case under ``out_dir``; return its paths.

    Keys of the result: ``left`` (the dump tree's top folder), ``leaf`` (the data_index folder),
    ``right`` (golden .npy folder), ``fusion_rule`` (model.json).
    """
    out = Path(out_dir)
    rng = np.random.default_rng(seed)
    c, s = channels, size
    goldens: dict[str, np.ndarray] = {
        "data": rng.standard_normal((1, 3, s, s)).astype(np.float32),
        "conv1_weight": (rng.standard_normal((c, 3, 3, 3)) * 0.3).astype(np.float32),
        "conv1": rng.standard_normal((1, c, s, s)).astype(np.float32),
        "pool1": np.abs(rng.standard_normal((1, c, s // 2, s // 2))).astype(np.float32),
        "fc1": rng.standard_normal((1, classes)).astype(np.float32),
    }
    exp = np.exp(goldens["fc1"] - goldens["fc1"].max())
    goldens["prob"] = (exp / exp.sum()).astype(np.float32)
    # the golden model's un-fused layers around conv1 (Caffe dumps every layer)
    goldens["bn1"] = goldens["conv1"] * 0.5
    goldens["relu1"] = np.maximum(goldens["conv1"], 0)

    ops = [
        _Op("data", "Data", [], None, "NCHW", (1, 3, s, s), (1, 3, s, s), dumped=False),
        _Op("trans_TransData_0", "TransData", ["data:0"], [], "NC1HWC0", _nc1hwc0_shape((1, 3, s, s)), (1, 3, s, s)),
        _Op("conv1_weight", "Const", [], None, "FRACTAL_Z", _fractal_z_shape((c, 3, 3, 3)), (c, 3, 3, 3),
            dumped=False),
        _Op("conv1", "Conv2D", ["trans_TransData_0:0", "conv1_weight:0"], ["conv1", "bn1", "relu1"], "NC1HWC0",
            _nc1hwc0_shape((1, c, s, s)), (1, c, s, s)),
        _Op("pool1", "Pooling", ["conv1:0"], ["pool1"], "NC1HWC0", _nc1hwc0_shape((1, c, s // 2, s // 2)),
            (1, c, s // 2, s // 2)),
        _Op("fc1", "FullyConnection", ["pool1:0"], ["fc1"], "ND", (1, classes), (1, classes), origin_format="ND"),
        _Op("prob", "SoftmaxV2", ["fc1:0"], ["prob"], "ND", (1, classes), (1, classes), origin_format="ND"),
    ]
    # what the golden holds for each op output (the conv1 group's output is relu1's)
    produced = {"data": goldens["data"], "trans_TransData_0": goldens["data"], "conv1_weight": goldens["conv1_weight"],
                "conv1": goldens["relu1"], "pool1": goldens["pool1"], "fc1": goldens["fc1"], "prob": goldens["prob"]}
    layouts = {op.name: op.out_layout for op in ops}

    def left_value(name: str) -> np.ndarray:
        value = produced[name]
        scale = noise if name == noisy_layer else 1e-3
        noisy = value + rng.standard_normal(value.shape).astype(np.float32) * scale * float(np.abs(value).mean() or 1)
        return noisy.astype(np.float16)

    leaf = out / "npu" / TIME_DIR / "0" / "demo_net" / "1" / "0"
    leaf.mkdir(parents=True, exist_ok=True)
    right = out / "golden"
    right.mkdir(parents=True, exist_ok=True)

    left_arrays = {name: left_value(name) for name in produced}
    for task, op in enumerate(ops):
        if not op.dumped:
            continue
        ins = []
        for entry in op.inputs:
            src = entry.split(":")[0]
            arr = left_arrays[src]
            ins.append(TensorSpec(_to_device(arr, layouts[src], "NCHW"), format=layouts[src]))
        out_arr = _to_device(left_arrays[op.name], op.out_layout, op.origin_format)
        outs = [TensorSpec(out_arr, format=op.out_layout, original_shape=op.origin_shape)]
        ts = BASE_TS + task * 1000
        write_dump(leaf / f"{op.type}.{op.name}.{task}.1.{ts}", inputs=ins, outputs=outs, op_name=op.name,
                   dump_time=ts)

    golden_names = ["data", "conv1_weight", "conv1", "bn1", "relu1", "pool1", "fc1", "prob"]
    for k, name in enumerate(golden_names):
        value = goldens[name]
        np.save(right / f"{name}.0.{BASE_TS + 5000000 + k}.npy", value)

    rule = {"name": "demo_net", "graph": [{"name": "demo_net", "op": [_rule_op(op, i) for i, op in enumerate(ops)]}]}
    rule_path = out / "model.json"
    rule_path.write_text(json.dumps(rule, indent=1))
    return {"left": out / "npu", "leaf": leaf, "right": right, "fusion_rule": rule_path}
