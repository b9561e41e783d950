"""Seeded synthetic cases for the comparison table's scenarios that ``make_network`` does not cover.

(``compare.testing.synthetic.make_network`` covers scenario 1 -- non-quantized NPU dump vs Caffe ``.npy``
-- and, used twice, scenario 6.) Everything is written in the real on-disk formats:

:func:`make_quant_network` -- an AMCT-quantized Caffe CNN (``blocks`` x quant -> conv(+bn+scale)
-> dequant -> relu, then a pooling layer):

- ``npu/{time}/0/quant_net/1/0/``: Ascend binary dump of the quantized offline model: TransData
  (fp32 NCHW -> fp16 NC1HWC0), per block AscendQuant (fp16 -> int8 NC1HWC0, C0=32), Conv2D
  (int8 -> int32), AscendDequant (int32 -> fp16, relu fused), then Pooling;
- ``model.json``: its ATC om->json rule (original names = AMCT *deploy* model layers);
- ``quant.json``: the AMCT quantization fusion rule (deploy layers -> float model layers, conv,
  bn and scale fused into one deploy convolution);
- ``caffe/`` (``.npy``) and ``caffe_pb/`` (``.pb`` DumpData): goldens of the float Caffe model;
- ``quant_caffe/`` (``.quant`` DumpData) and ``quant_caffe_npy/`` (``.npy``): the quantized
  (deploy) Caffe model's dump.

So: scenario 2 = ``npu`` vs ``caffe`` with ``model.json`` + ``quant.json``; scenario 3 =
``quant_caffe`` vs ``caffe`` with ``quant.json``; scenario 4 = ``npu`` vs ``quant_caffe`` with
``model.json``.

:func:`make_tf_network` -- scenario 5: a non-quantized NPU dump of a TensorFlow model (names with
``/``, NHWC origin format) and tfdbg-named ``.npy`` goldens.

:func:`make_close_fusion_network` -- scenario 6 with ``-cf``: NPU dump of a fused model and NPU
dump of the same model built with fusion switched off, with both ATC rules.

Left values are the goldens (rounded to fp16) plus seeded noise; the int8/int32 tensors between a
quant and a dequant op are arbitrary (they have no float golden).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from convert.codecs.dumpwrite import TensorSpec, write_dump

TIME_DIR = "20240101120000"
BASE_TS = 1704110400000000  # 16 digits, as the dump tools write
GOLDEN_TS = BASE_TS + 5_000_000


# --------------------------------------------------------------------------------------------
# Rule JSON builders.


@dataclass
class _Desc:
    dtype: str
    origin: str | None  # None: no _datadump_origin_name attribute
    origin_format: str = "NCHW"
    origin_shape: tuple[int, ...] = ()
    layout: str = "NC1HWC0"
    shape: tuple[int, ...] = ()


def _desc_json(d: _Desc) -> dict:
    attrs: list[dict] = []
    if d.origin is not None:
        attrs += [{"key": "_datadump_origin_name", "value": {"s": d.origin}},
                  {"key": "_datadump_origin_output_index", "value": {"i": 0}},
                  {"key": "_datadump_origin_format", "value": {"s": d.origin_format}}]
    attrs += [{"key": "origin_format", "value": {"s": d.origin_format}},
              {"key": "origin_shape", "value": {"list": {"i": list(d.origin_shape), "val_type": 2}}}]
    return {"dtype": d.dtype, "layout": d.layout, "shape": {"dim": list(d.shape)}, "attr": attrs}


def _op_json(name: str, op_type: str, op_id: int, inputs: list[str], originals: list[str] | None,
             descs: list[_Desc]) -> dict:
    """One rule op; ``originals`` None = attribute absent (maps to itself), [] = list without ``s``."""
    attrs: list[dict] = []
    if originals is not None:
        listing: dict = {"val_type": 1}
        if originals:
            listing["s"] = list(originals)
        attrs.append({"key": "_datadump_original_op_names", "value": {"list": listing}})
    node = {"name": name, "type": op_type, "id": op_id, "attr": attrs, "output_desc": [_desc_json(d) for d in descs]}
    if inputs:
        node["input"] = list(inputs)
    return node


def _write_rule(path: Path, name: str, ops: list[dict]) -> Path:
    path.write_text(json.dumps({"name": name, "graph": [{"name": name, "op": ops}]}, indent=1))
    return path


# --------------------------------------------------------------------------------------------
# Layouts and files.


def nc1hwc0(array: np.ndarray, c0: int = 16) -> np.ndarray:
    """NCHW -> NC1HWC0 with zero padding of C up to a multiple of ``c0``."""
    n, c, h, w = array.shape
    c1 = -(-c // c0)
    padded = np.zeros((n, c1 * c0, h, w), dtype=array.dtype)
    padded[:, :c] = array
    return np.ascontiguousarray(padded.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2))


def _npy(folder: Path, name: str, k: int, array: np.ndarray) -> None:
    np.save(folder / f"{name}.0.{GOLDEN_TS + k}.npy", array)


def _dumpdata(folder: Path, name: str, k: int, array: np.ndarray, suffix: str) -> None:
    """A golden DumpData file (``.pb`` / ``.quant``): one NCHW output."""
    fmt = "NCHW" if array.ndim == 4 else "ND"
    write_dump(folder / f"{name}.0.{GOLDEN_TS + k}.{suffix}", outputs=[TensorSpec(array, format=fmt)],
               op_name=name, dump_time=GOLDEN_TS + k)


def _device(array: np.ndarray, layout: str, c0: int = 16) -> np.ndarray:
    return nc1hwc0(array, c0) if layout == "NC1HWC0" else array


class _Noise:
    def __init__(self, rng: np.random.Generator, scale: float) -> None:
        self.rng, self.scale = rng, scale

    def __call__(self, value: np.ndarray, dtype=np.float16) -> np.ndarray:
        spread = float(np.abs(value).mean() or 1.0)
        noisy = value + self.rng.standard_normal(value.shape).astype(np.float32) * self.scale * spread
        return noisy.astype(dtype)


def _leaf(out: Path, model: str) -> Path:
    leaf = out / "npu" / TIME_DIR / "0" / model / "1" / "0"
    leaf.mkdir(parents=True, exist_ok=True)
    return leaf


def _dump(leaf: Path, task: int, op_type: str, name: str, inputs: list[TensorSpec], outputs: list[TensorSpec]) -> None:
    ts = BASE_TS + task * 1000
    write_dump(leaf / f"{op_type}.{name.replace('/', '_')}.{task}.1.{ts}", inputs=inputs, outputs=outputs,
               op_name=name, dump_time=ts)


# --------------------------------------------------------------------------------------------
# Scenarios 2, 3, 4: a quantized Caffe model.


def make_quant_network(out_dir: str | Path, *, seed: int = 0, channels: tuple[int, ...] = (8, 16), size: int = 8,
                       noise: float = 1e-3) -> dict[str, Path]:
    """Write the quantized-model case under ``out_dir`` (see the module doc); return its paths.

    Keys: ``left`` (NPU dump tree top), ``leaf`` (its data_index folder), ``fusion_rule``
    (model.json), ``quant_rule`` (quant.json), ``caffe`` (float ``.npy``), ``caffe_pb`` (float
    ``.pb``), ``quant_caffe`` (``.quant``), ``quant_caffe_npy`` (quantized ``.npy``).
    """
    out = Path(out_dir)
    rng = np.random.default_rng(seed)
    jitter = _Noise(rng, noise)
    s = size
    paths = {"caffe": out / "caffe", "caffe_pb": out / "caffe_pb", "quant_caffe": out / "quant_caffe",
             "quant_caffe_npy": out / "quant_caffe_npy"}
    for folder in paths.values():
        folder.mkdir(parents=True, exist_ok=True)

    # float model (golden) and the quantized deploy model's tensors
    data = rng.standard_normal((1, 3, s, s)).astype(np.float32)
    golden: dict[str, np.ndarray] = {"data": data}
    deploy: dict[str, np.ndarray] = {"data": data}
    block_in, c_in = data, 3
    for i, c in enumerate(channels, start=1):
        conv = rng.standard_normal((1, c, s, s)).astype(np.float32)
        bn = (conv * 0.5 + 0.1).astype(np.float32)
        scale = (bn * 1.5 - 0.2).astype(np.float32)
        relu = np.maximum(scale, 0).astype(np.float32)
        golden.update({f"conv{i}": conv, f"bn_conv{i}": bn, f"scale_conv{i}": scale, f"conv{i}_relu": relu})
        step = float(np.abs(block_in).max()) / 127
        deploy.update({f"conv{i}_quant_layer": (np.round(block_in / step) * step).astype(np.float32),
                       f"conv{i}": scale, f"conv{i}_dequant_layer": scale, f"conv{i}_relu": relu})
        block_in, c_in = relu, c
    pool = block_in.mean(axis=(2, 3), keepdims=True).astype(np.float32)
    golden["pool"] = deploy["pool"] = pool

    for k, (name, value) in enumerate(golden.items()):
        _npy(paths["caffe"], name, k, value)
        _dumpdata(paths["caffe_pb"], name, k, value, "pb")
    for k, (name, value) in enumerate(deploy.items()):
        left_value = jitter(value, np.float32)
        _npy(paths["quant_caffe_npy"], name, k, left_value)
        _dumpdata(paths["quant_caffe"], name, k, left_value, "quant")

    # the quant rule: deploy layers -> float layers
    q_ops = [_op_json("data", "Data", 0, [], None, [_Desc("DT_FLOAT", "data", layout="NCHW")])]
    prev = "data"
    for i in range(1, len(channels) + 1):
        n = len(q_ops)
        q_ops += [
            _op_json(f"conv{i}_quant_layer", "Quant", n, [f"{prev}:0"], None,
                     [_Desc("DT_FLOAT", f"conv{i}_quant_layer", layout="NCHW")]),
            _op_json(f"conv{i}", "Convolution", n + 1, [f"conv{i}_quant_layer:0"],
                     [f"conv{i}", f"bn_conv{i}", f"scale_conv{i}"], [_Desc("DT_FLOAT", f"scale_conv{i}", layout="NCHW")]),
            _op_json(f"conv{i}_dequant_layer", "DeQuant", n + 2, [f"conv{i}:0"], None,
                     [_Desc("DT_FLOAT", f"scale_conv{i}", layout="NCHW")]),
            _op_json(f"conv{i}_relu", "ReLU", n + 3, [f"conv{i}_dequant_layer:0"], None,
                     [_Desc("DT_FLOAT", f"conv{i}_relu", layout="NCHW")]),
        ]
        prev = f"conv{i}_relu"
    q_ops.append(_op_json("pool", "Pooling", len(q_ops), [f"{prev}:0"], None, [_Desc("DT_FLOAT", "pool", layout="NCHW")]))
    quant_rule = _write_rule(out / "quant.json", "quant_net_deploy", q_ops)

    # the quantized offline model: its rule and its dump
    leaf = _leaf(out, "quant_net")
    f_ops: list[dict] = [
        _op_json("data", "Data", 0, [], None, [_Desc("DT_FLOAT", None, layout="NCHW", shape=(1, 3, s, s))]),
        _op_json("trans_TransData_0", "TransData", 1, ["data:0"], [], [_Desc("DT_FLOAT16", "", shape=(1, 1, s, s, 16))]),
    ]
    x_dev = nc1hwc0(jitter(data))
    _dump(leaf, 1, "TransData", "trans_TransData_0", [TensorSpec(data, format="NCHW")],
          [TensorSpec(x_dev, format="NC1HWC0", original_shape=(1, 3, s, s))])
    prev, prev_dev, c_in = "trans_TransData_0", x_dev, 3
    for i, c in enumerate(channels, start=1):
        n = len(f_ops)
        q, conv, dq = f"conv{i}_quant_layer", f"conv{i}", f"conv{i}_dequant_layer"
        int8 = nc1hwc0(rng.integers(-128, 128, (1, c_in, s, s)).astype(np.int8), 32)
        int32 = nc1hwc0(rng.integers(-5000, 5000, (1, c, s, s)).astype(np.int32))
        weight = rng.integers(-128, 128, (c, c_in, 3, 3)).astype(np.int8)
        out_dev = nc1hwc0(jitter(golden[f"conv{i}_relu"]))
        f_ops += [
            _op_json(q, "AscendQuant", n, [f"{prev}:0"], [q], [_Desc("DT_INT8", q, shape=int8.shape)]),
            _op_json(f"{conv}_weight", "Const", n + 1, [], None,
                     [_Desc("DT_INT8", None, layout="NCHW", shape=weight.shape)]),
            _op_json(conv, "Conv2D", n + 2, [f"{q}:0", f"{conv}_weight:0"], [conv],
                     [_Desc("DT_INT32", conv, shape=int32.shape)]),
            _op_json(dq, "AscendDequant", n + 3, [f"{conv}:0"], [dq, f"conv{i}_relu"],
                     [_Desc("DT_FLOAT16", f"conv{i}_relu", origin_shape=(1, c, s, s), shape=out_dev.shape)]),
        ]
        _dump(leaf, n, "AscendQuant", q, [TensorSpec(prev_dev, format="NC1HWC0")],
              [TensorSpec(int8, format="NC1HWC0")])
        _dump(leaf, n + 2, "Conv2D", conv, [TensorSpec(int8, format="NC1HWC0"), TensorSpec(weight, format="NCHW")],
              [TensorSpec(int32, format="NC1HWC0")])
        _dump(leaf, n + 3, "AscendDequant", dq, [TensorSpec(int32, format="NC1HWC0")],
              [TensorSpec(out_dev, format="NC1HWC0", original_shape=(1, c, s, s))])
        prev, prev_dev, c_in = dq, out_dev, c
    n = len(f_ops)
    pool_dev = nc1hwc0(jitter(pool))
    f_ops.append(_op_json("pool", "Pooling", n, [f"{prev}:0"], ["pool"],
                          [_Desc("DT_FLOAT16", "pool", origin_shape=pool.shape, shape=pool_dev.shape)]))
    _dump(leaf, n, "Pooling", "pool", [TensorSpec(prev_dev, format="NC1HWC0")],
          [TensorSpec(pool_dev, format="NC1HWC0", original_shape=pool.shape)])
    fusion_rule = _write_rule(out / "model.json", "quant_net", f_ops)
    return {"left": out / "npu", "leaf": leaf, "fusion_rule": fusion_rule, "quant_rule": quant_rule, **paths}


# --------------------------------------------------------------------------------------------
# Scenario 5: a TensorFlow model.


def make_tf_network(out_dir: str | Path, *, seed: int = 0, channels: int = 8, size: int = 8,
                    noise: float = 1e-3) -> dict[str, Path]:
    """Scenario 5: NPU dump of a TF model (``net/conv1/Conv2D`` + ``net/conv1/Relu`` fused, NHWC
    origin format) and tfdbg-named NHWC ``.npy`` goldens (``/`` -> ``_``).

    Keys: ``left``, ``leaf``, ``right`` (golden folder), ``fusion_rule``.
    """
    out = Path(out_dir)
    rng = np.random.default_rng(seed)
    jitter = _Noise(rng, noise)
    c, s = channels, size
    right = out / "tf_golden"
    right.mkdir(parents=True, exist_ok=True)
    x = rng.standard_normal((1, s, s, 3)).astype(np.float32)  # NHWC
    conv = rng.standard_normal((1, s, s, c)).astype(np.float32)
    relu = np.maximum(conv, 0)
    pool = relu.reshape(1, s // 2, 2, s // 2, 2, c).max(axis=(2, 4))
    goldens = {"input": x, "net/conv1/Conv2D": conv, "net/conv1/Relu": relu, "net/pool/MaxPool": pool}
    for k, (name, value) in enumerate(goldens.items()):
        _npy(right, name.replace("/", "_"), k, value)

    def nchw(a: np.ndarray) -> np.ndarray:
        return a.transpose(0, 3, 1, 2)

    leaf = _leaf(out, "tf_net")
    fused = "net/conv1/Conv2Dnet/conv1/Relu"
    x_dev = nc1hwc0(jitter(nchw(x)))
    conv_dev = nc1hwc0(jitter(nchw(relu)))
    pool_dev = nc1hwc0(jitter(nchw(pool)))
    ops = [
        _op_json("input", "Data", 0, [], None, [_Desc("DT_FLOAT", None, "NHWC", x.shape, "NHWC", x.shape)]),
        _op_json("trans_TransData_0", "TransData", 1, ["input:0"], [], [_Desc("DT_FLOAT16", "", shape=x_dev.shape)]),
        _op_json(fused, "Conv2D", 2, ["trans_TransData_0:0"], ["net/conv1/Conv2D", "net/conv1/Relu"],
                 [_Desc("DT_FLOAT16", "net/conv1/Relu", "NHWC", relu.shape, shape=conv_dev.shape)]),
        _op_json("net/pool/MaxPool", "MaxPool", 3, [f"{fused}:0"], ["net/pool/MaxPool"],
                 [_Desc("DT_FLOAT16", "net/pool/MaxPool", "NHWC", pool.shape, shape=pool_dev.shape)]),
    ]
    _dump(leaf, 1, "TransData", "trans_TransData_0", [TensorSpec(x, format="NHWC")],
          [TensorSpec(x_dev, format="NC1HWC0")])
    _dump(leaf, 2, "Conv2D", fused, [TensorSpec(x_dev, format="NC1HWC0")], [TensorSpec(conv_dev, format="NC1HWC0")])
    _dump(leaf, 3, "MaxPool", "net/pool/MaxPool", [TensorSpec(conv_dev, format="NC1HWC0")],
          [TensorSpec(pool_dev, format="NC1HWC0")])
    rule = _write_rule(out / "tf_model.json", "tf_net", ops)
    return {"left": out / "npu", "leaf": leaf, "right": right, "fusion_rule": rule}


# --------------------------------------------------------------------------------------------
# Scenario 6 with -cf: fused vs un-fused build of one model.


def make_close_fusion_network(out_dir: str | Path, *, seed: int = 0, channels: int = 8, size: int = 8,
                              noise: float = 1e-3) -> dict[str, Path]:
    """Scenario 6 with close fusion: NPU dumps of a fused and an un-fused build of one model.

    Fused: ``conv1`` (conv1 + bn1 + relu1), ``pool1``. Un-fused: ``conv1``, ``bn1``, ``relu1``,
    ``pool1``. Keys: ``left`` / ``left_leaf`` (fused dump), ``right`` / ``right_leaf`` (un-fused
    dump), ``fusion_rule`` (fused model's json, ``-f``), ``close_fusion_rule`` (``-cf``).
    """
    out = Path(out_dir)
    rng = np.random.default_rng(seed)
    jitter = _Noise(rng, noise)
    c, s = channels, size
    x = rng.standard_normal((1, 3, s, s)).astype(np.float32)
    conv = rng.standard_normal((1, c, s, s)).astype(np.float32)
    bn = conv * 0.5
    relu = np.maximum(bn, 0)
    pool = relu.reshape(1, c, s // 2, 2, s // 2, 2).max(axis=(3, 5))
    x_dev = nc1hwc0(x.astype(np.float16))

    def spec(a: np.ndarray) -> TensorSpec:
        return TensorSpec(nc1hwc0(a), format="NC1HWC0", original_shape=tuple(v for v in a.shape))

    def trans_op(op_id: int) -> dict:
        return _op_json("trans_TransData_0", "TransData", op_id, ["data:0"], [],
                        [_Desc("DT_FLOAT16", "", shape=x_dev.shape)])

    data_op = _op_json("data", "Data", 0, [], None, [_Desc("DT_FLOAT", None, layout="NCHW", shape=x.shape)])

    # fused build (left)
    left_leaf = out / "fused" / TIME_DIR / "0" / "net" / "1" / "0"
    left_leaf.mkdir(parents=True, exist_ok=True)
    relu_left = jitter(relu)
    open_ops = [
        data_op, trans_op(1),
        _op_json("conv1", "Conv2D", 2, ["trans_TransData_0:0"], ["conv1", "bn1", "relu1"],
                 [_Desc("DT_FLOAT16", "relu1", origin_shape=relu.shape)]),
        _op_json("pool1", "Pooling", 3, ["conv1:0"], ["pool1"], [_Desc("DT_FLOAT16", "pool1", origin_shape=pool.shape)]),
    ]
    _dump(left_leaf, 1, "TransData", "trans_TransData_0", [TensorSpec(x, format="NCHW")],
          [TensorSpec(x_dev, format="NC1HWC0")])
    _dump(left_leaf, 2, "Conv2D", "conv1", [TensorSpec(x_dev, format="NC1HWC0")], [spec(relu_left)])
    _dump(left_leaf, 3, "Pooling", "pool1", [spec(relu_left)], [spec(jitter(pool))])
    open_rule = _write_rule(out / "fused.json", "net", open_ops)

    # un-fused build (right)
    right_leaf = out / "unfused" / TIME_DIR / "0" / "net" / "1" / "0"
    right_leaf.mkdir(parents=True, exist_ok=True)
    relu_right = relu.astype(np.float16)
    close_ops = [
        data_op, trans_op(1),
        _op_json("conv1", "Conv2D", 2, ["trans_TransData_0:0"], ["conv1"],
                 [_Desc("DT_FLOAT16", "conv1", origin_shape=conv.shape)]),
        _op_json("bn1", "BNInference", 3, ["conv1:0"], ["bn1"], [_Desc("DT_FLOAT16", "bn1", origin_shape=bn.shape)]),
        _op_json("relu1", "Relu", 4, ["bn1:0"], ["relu1"], [_Desc("DT_FLOAT16", "relu1", origin_shape=relu.shape)]),
        _op_json("pool1", "Pooling", 5, ["relu1:0"], ["pool1"], [_Desc("DT_FLOAT16", "pool1", origin_shape=pool.shape)]),
    ]
    _dump(right_leaf, 1, "TransData", "trans_TransData_0", [TensorSpec(x, format="NCHW")],
          [TensorSpec(x_dev, format="NC1HWC0")])
    _dump(right_leaf, 2, "Conv2D", "conv1", [TensorSpec(x_dev, format="NC1HWC0")], [spec(conv.astype(np.float16))])
    _dump(right_leaf, 3, "BNInference", "bn1", [spec(conv.astype(np.float16))], [spec(bn.astype(np.float16))])
    _dump(right_leaf, 4, "Relu", "relu1", [spec(bn.astype(np.float16))], [spec(relu_right)])
    _dump(right_leaf, 5, "Pooling", "pool1", [spec(relu_right)], [spec(pool.astype(np.float16))])
    close_rule = _write_rule(out / "unfused.json", "net", close_ops)
    return {"left": out / "fused", "left_leaf": left_leaf, "right": out / "unfused", "right_leaf": right_leaf,
            "fusion_rule": open_rule, "close_fusion_rule": close_rule}
