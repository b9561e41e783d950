"""A large, seeded, realistic comparison case for benchmarks (``scripts/bench.py``).

:func:`make_large_network` writes a chain of ``n_ops`` operators whose Ascend binary dumps add up
to about ``size_gb`` gigabytes (fp16; inputs are the producers' outputs, as real dumps repeat them):

- most operators are convolutions: NC1HWC0 activations (C padded to C0 = 16) and a FRACTAL_Z
  weight input;
- every 7th is a MatMul with a FRACTAL_NZ output, every 11th an elementwise ND operator;
- float32 NCHW / ND golden ``.npy`` files for every output and weight, and the ATC om->json rule.

Sizes vary per operator (seeded), so the largest tensor pair -- which bounds peak memory -- is
about twice the average.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.layouts import LAYOUTS, convert_layout

from .synthetic import BASE_TS, TIME_DIR, _fractal_z_shape, _nc1hwc0_shape, _Op, _rule_op

CHANNELS = 48  # not a multiple of 16: NC1HWC0 carries padding, as real networks often do


def _conv_shape(elements: int) -> tuple[int, int, int, int]:
    side = max(2, int(math.sqrt(elements / CHANNELS)))
    return (1, CHANNELS, side, side)


def _nz_shape(elements: int) -> tuple[int, int]:
    rows = max(2, int(math.sqrt(elements)) // 16 * 16 + 5)  # not a multiple of 16 either
    return (rows, max(2, elements // rows))


def make_large_network(out_dir: str | Path, *, size_gb: float = 1.8, n_ops: int = 300, seed: int = 0,
                       noise: float = 1e-3) -> dict[str, Path]:
    """Write the case under ``out_dir``; return ``left`` (dump tree), ``leaf``, ``right``, ``fusion_rule``.

    ``size_gb`` is the size of the left dump files (the goldens, float32, are about as large).
    """
    out = Path(out_dir)
    rng = np.random.default_rng(seed)
    leaf = out / "npu" / TIME_DIR / "0" / "bench_net" / "1" / "0"
    right = out / "golden"
    leaf.mkdir(parents=True, exist_ok=True)
    right.mkdir(parents=True, exist_ok=True)
    per_op = size_gb * 1e9 / n_ops  # bytes of left dump per operator, about 2 bytes x (input + output)
    mean_elements = per_op / 4

    def noisy(golden: np.ndarray) -> np.ndarray:
        return (golden + rng.standard_normal(golden.shape, dtype=np.float32) * noise).astype(np.float16)

    first = _conv_shape(int(mean_elements))
    data = rng.standard_normal(first, dtype=np.float32)
    np.save(right / f"data.0.{BASE_TS}.npy", data)
    ops = [_Op("data", "Data", [], None, "NCHW", first, first, dumped=False)]
    # producer's output: (name, left device array, device layout)
    prev = ("data", convert_layout(noisy(data), "NCHW", "NC1HWC0", first), "NC1HWC0")
    for k in range(n_ops):
        ts = BASE_TS + 1000 * (k + 1)
        elements = int(mean_elements * rng.uniform(0.5, 1.5))
        name = f"op{k}"
        ins = [TensorSpec(prev[1], format=prev[2])]
        inputs = [f"{prev[0]}:0"]
        if k % 11 == 10:
            op_type, layout = "Add", "ND"
            shape = (elements,)
            golden = rng.standard_normal(shape, dtype=np.float32)
            device, origin_format, rule_shape = noisy(golden), "ND", shape
        elif k % 7 == 6:
            op_type, layout = "MatMul", "FRACTAL_NZ"
            shape = _nz_shape(elements)
            golden = rng.standard_normal(shape, dtype=np.float32)
            device = np.asarray(LAYOUTS[("ND", "FRACTAL_NZ")](shape, shape, noisy(golden)))
            origin_format, rule_shape = "ND", tuple(device.shape)
        else:
            op_type, layout = "Conv2D", "NC1HWC0"
            shape = _conv_shape(elements)
            golden = rng.standard_normal(shape, dtype=np.float32)
            device = convert_layout(noisy(golden), "NCHW", "NC1HWC0", shape)
            origin_format, rule_shape = "NCHW", _nc1hwc0_shape(shape)
            weight_shape = (CHANNELS, CHANNELS, 3, 3)
            weight = (rng.standard_normal(weight_shape, dtype=np.float32) * 0.1)
            np.save(right / f"{name}_weight.0.{ts}.npy", weight)
            ops.append(_Op(f"{name}_weight", "Const", [], None, "FRACTAL_Z", _fractal_z_shape(weight_shape),
                           weight_shape, dumped=False))
            ins.append(TensorSpec(convert_layout(weight.astype(np.float16), "NCHW", "FRACTAL_Z", weight_shape),
                                  format="FRACTAL_Z"))
            inputs.append(f"{name}_weight:0")
        write_dump(leaf / f"{op_type}.{name}.{k + 2}.1.{ts}", inputs=ins,
                   outputs=[TensorSpec(device, format=layout, original_shape=shape)], op_name=name, dump_time=ts)
        np.save(right / f"{name}.0.{ts}.npy", golden)
        ops.append(_Op(name, op_type, inputs, [name], layout, rule_shape, shape, origin_format=origin_format))
        prev = (name, device, layout)

    rule = {"name": "bench_net", "graph": [{"name": "bench_net", "op": [_rule_op(op, i) for i, op in enumerate(ops)]}]}
    rule_path = out / "model.json"
    rule_path.write_text(json.dumps(rule))
    return {"left": out / "npu", "leaf": leaf, "right": right, "fusion_rule": rule_path}
