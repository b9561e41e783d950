"""Tiny, seeded MindSpore and TensorFlow-NPU dump trees in every layout vcompare reads.

:func:`make_trees` writes (under ``out``), for one small network of four kernels (:data:`OPS`):

===============  ===========================================================================
key              layout
===============  ===========================================================================
``sync``         r1.x synchronous ``.bin``: ``Net/device_0/iteration_{0,1}/`` + ``execution_order/``, ``.metadata/``
``sync_cpu``     the CPU form: ``Net/iteration_0/`` (no device level)
``npy``          O0/O1 ``.npy``: ``rank_{0,1}/Net/{0,1}/{0,1,2}/`` + ``constants/``, ``statistic.csv``,
                 ``mapping.csv`` (one random-digit name), a kernel-args json, ``execution_order/``
                 (graph 0 ran in iterations 0-2), ``.dump_metadata/``
``stats``        statistics only: ``rank_0/Net/0/0/statistic.csv``
``async``        r1.x asynchronous: ``0/Net_graph_0/0/{0,1}/{type}.{name}.{task}.{ts}`` Ascend dumps
                 (conv output in NC1HWC0)
``o2``           O2 ``bin``: ``1/20240101120000/0/Net_model/1/0/`` Ascend dumps + an ``Opdebug`` overflow
                 record, ``mapping.csv``, ``acl_dump_0.json``
``o2_npy``       O2 ``npy``: ``1/20240101120000/0/Net_model/1/0/`` npy files + ``Opdebug...output.0.json``
``tf``           TF NPU: ``20240101120000/0/{ge_default_..._1, ge_other_2}/1/{0,1}/`` + ``ge_proto_00001_Build.txt``
``tf_stats``     TF NPU ``dump_data=stats``: per-operator ``{dump name}.csv`` files
===============  ===========================================================================

Values are a pure function of (op name, kind, index, iteration) -- :func:`tensor_value` -- so a
test can check every tensor read back. ``npy``/``sync``/``stats`` hold float32 values
("GPU"-like); ``async``/``o2``/``tf`` hold them rounded to float16 ("Ascend"-like); one
bfloat16 tensor is saved as float32 with ``bfloat16`` in its name. Op names: scope names with
``/``; ``.npy``/``.bin`` names write them with ``--``, Ascend-format names with ``_``.
"""

from __future__ import annotations

import csv
import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.layouts import convert_layout

TIME_DIR = "20240101120000"
BASE_TS = 1704110400000000
GRAPH_NAME = "ge_default.20240101120000_1"  # folder: ge_default_20240101120000_1


@dataclass(frozen=True)
class Op:
    type: str
    name: str
    inputs: tuple[tuple[int, ...], ...]
    outputs: tuple[tuple[int, ...], ...]


#: The network: kernels in execution order.
OPS = (
    Op("Conv2D", "Default/network-conv1/Conv2D-op1", ((1, 3, 4, 4), (2, 3, 3, 3)), ((1, 2, 4, 4),)),
    Op("ReLU", "Default/network-relu1/ReLU-op2", ((1, 2, 4, 4),), ((1, 2, 4, 4),)),
    Op("MatMul", "Default/network-fc/MatMul-op3", ((1, 32), (32, 4)), ((1, 4),)),
    Op("Softmax", "Default/network-softmax/Softmax-op4", ((1, 4),), ((1, 4),)),
)
#: The tensor saved as float32 with ``bfloat16`` in its ``.npy`` name.
BF16_TENSOR = ("Default/network-softmax/Softmax-op4", "output", 0)
#: The tensor of the ``npy`` tree stored under a random-digit name (listed in mapping.csv).
HASHED_TENSOR = ("Default/network-fc/MatMul-op3", "input", 1)
HASHED_NAME = "1234567890123"


def tensor_value(op_name: str, kind: str, index: int, shape: tuple[int, ...], iteration: int = 0,
                 rank: int = 0) -> np.ndarray:
    """The float32 value of a tensor in every fixture (deterministic)."""
    seed = zlib.crc32(f"{op_name}|{kind}|{index}|{iteration}|{rank}".encode())
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(np.float32)


def ms_file_op(name: str) -> str:
    return name.replace("/", "--")


def ascend_file_op(name: str) -> str:
    for char in "/.\\ ":
        name = name.replace(char, "_")
    return name


def _tensors(op: Op):
    for kind, shapes in (("input", op.inputs), ("output", op.outputs)):
        for index, shape in enumerate(shapes):
            yield kind, index, shape


def _ms_npy_name(op: Op, task: int, ts: int, kind: str, index: int, dtype: str | None) -> str:
    tail = f".{dtype}" if dtype else ""
    return f"{op.type}.{ms_file_op(op.name)}.{task}.0.{ts}.{kind}.{index}.DefaultFormat{tail}.npy"


def _stats_row(op: Op, task: int, ts: int, kind: str, index: int, data: np.ndarray, dtype: str) -> list[str]:
    flat = data.astype(np.float64).reshape(-1)
    shape = "(" + ",".join(str(d) for d in data.shape) + ")"
    return [op.type, ms_file_op(op.name), str(task), "0", str(ts), kind, str(index), str(data.nbytes), dtype,
            shape, repr(float(flat.max())), repr(float(flat.min())), repr(float(flat.mean())),
            repr(float(np.sqrt(np.dot(flat, flat)))), str(flat.size), str(int((flat < 0).sum())),
            str(int((flat > 0).sum())), "0", "0", "0", str(int((flat == 0).sum()))]


STATS_HEADER = ["Op Type", "Op Name", "Task ID", "Stream ID", "Timestamp", "IO", "Slot", "Data Size", "Data Type",
                "Shape", "Max Value", "Min Value", "Avg Value", "L2Norm Value", "Count", "Negative Zero Count",
                "Positive Zero Count", "NaN Count", "Negative Inf Count", "Positive Inf Count", "Zero Count"]


def _write_csv(path: Path, rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)


def _npy_leaf(leaf: Path, iteration: int, rank: int, *, ops=OPS, stats: bool = True, tensors: bool = True,
              hashed: bool = True) -> None:
    leaf.mkdir(parents=True, exist_ok=True)
    rows = [STATS_HEADER]
    mapping = []
    for task, op in enumerate(ops, start=1):
        ts = BASE_TS + 1000 * task + iteration
        for kind, index, shape in _tensors(op):
            data = tensor_value(op.name, kind, index, shape, iteration, rank)
            dtype = "bfloat16" if (op.name, kind, index) == BF16_TENSOR else "float32"
            name = _ms_npy_name(op, task, ts, kind, index, dtype)
            if tensors:
                target = name
                if hashed and (op.name, kind, index) == HASHED_TENSOR:
                    target = f"{HASHED_NAME}.npy"
                    mapping.append([HASHED_NAME, name])
                np.save(leaf / target, data)
            rows.append(_stats_row(op, task, ts, kind, index, data, dtype))
    if stats:
        _write_csv(leaf / "statistic.csv", rows)
    if mapping:
        _write_csv(leaf / "mapping.csv", mapping)
    if tensors:
        (leaf / "Conv2D.Default--network-conv1--Conv2D-op1.json").write_text('{"pad_mode": "same"}')


def _ascend_dump(leaf: Path, op: Op, task: int, ts: int, iteration: int, rank: int, *, stream: int | None = 1,
                 nc1hwc0: bool = True) -> Path:
    inputs, outputs = [], []
    for kind, index, shape in _tensors(op):
        data = tensor_value(op.name, kind, index, shape, iteration, rank).astype(np.float16)
        if nc1hwc0 and op.type == "Conv2D" and kind == "output":
            device = np.asarray(convert_layout(data, "NCHW", "NC1HWC0", data.shape))
            spec = TensorSpec(device, format="NC1HWC0", original_shape=shape)
        else:
            spec = TensorSpec(data, format="ND" if len(shape) != 4 else "NCHW", original_shape=shape)
        (inputs if kind == "input" else outputs).append(spec)
    middle = f"{task}.{stream}" if stream is not None else f"{task}"
    path = leaf / f"{op.type}.{ascend_file_op(op.name)}.{middle}.{ts}"
    return write_dump(path, inputs=inputs, outputs=outputs, op_name=op.name)


def _overflow_bin(path: Path) -> None:
    status = np.zeros(64, dtype=np.uint8)
    status[:4] = (1, 0, 0, 0)
    write_dump(path, outputs=[TensorSpec(status, format="ND")], op_name="Node_OpDebug")


def make_trees(out: str | Path) -> dict[str, Path]:
    """Write every fixture tree under ``out`` (see the module doc); return ``{key: root}``."""
    out = Path(out)
    roots: dict[str, Path] = {}

    # --- synchronous r1.x .bin
    sync = out / "sync"
    for iteration in (0, 1):
        leaf = sync / "Net" / "device_0" / f"iteration_{iteration}"
        leaf.mkdir(parents=True, exist_ok=True)
        for op in OPS:
            for kind, index, shape in _tensors(op):
                data = tensor_value(op.name, kind, index, shape, iteration)
                type_name = "kNumberTypeFloat32" if op.type == "MatMul" else "Float32"
                dims = "_".join(str(d) for d in shape)
                name = f"{ms_file_op(op.name)}_{kind}_{index}_shape_{dims}_{type_name}_DefaultFormat.bin"
                data.tofile(leaf / name)
        mask = np.arange(8, dtype=np.uint32)
        mask.tofile(leaf / f"{ms_file_op(OPS[1].name)}_output_1_shape_8_UInt32_DefaultFormat.bin")
        weight = tensor_value("conv1.weight", "output", 0, (2, 3, 3, 3), iteration)
        weight.tofile(leaf / "conv1.weight_output_0_shape_2_3_3_3_Float32_NCHW.bin")
    order = sync / "Net" / "device_0" / "execution_order"
    _write_csv(order / "ms_execution_order_graph_0.csv", [[op.name] for op in reversed(OPS)])
    (sync / "Net" / "device_0" / "graphs").mkdir(parents=True, exist_ok=True)
    (sync / "Net" / "device_0" / "graphs" / "ms_output_trace_code_graph_0.ir").write_text("# graph\n")
    (sync / ".metadata").mkdir(parents=True, exist_ok=True)
    (sync / ".metadata" / "data_dump.json").write_text(json.dumps({"common_dump_settings": {"net_name": "Net"}}))
    roots["sync"] = sync
    cpu = out / "sync_cpu"
    leaf = cpu / "Net" / "iteration_0"
    leaf.mkdir(parents=True, exist_ok=True)
    for op in OPS[:2]:
        for kind, index, shape in _tensors(op):
            dims = "_".join(str(d) for d in shape)
            tensor_value(op.name, kind, index, shape, 0).tofile(
                leaf / f"{ms_file_op(op.name)}_{kind}_{index}_shape_{dims}_Float32_DefaultFormat.bin")
    roots["sync_cpu"] = cpu

    # --- O0/O1 .npy, two ranks, two graphs, three iterations
    npy = out / "npy"
    for rank in (0, 1):
        base = npy / f"rank_{rank}"
        for iteration in (0, 1, 2):
            _npy_leaf(base / "Net" / "0" / str(iteration), iteration, rank)
        _npy_leaf(base / "Net" / "1" / "0", 0, rank, ops=OPS[3:], stats=False, hashed=False)
        constants = base / "Net" / "0" / "constants"
        constants.mkdir(parents=True, exist_ok=True)
        np.save(constants / f"Parameter.data-1.0.0.{BASE_TS}.output.0.DefaultFormat.float32.npy",
                tensor_value("Parameter.data-1", "output", 0, (4,), 0, rank))
        _write_csv(base / "execution_order" / "ms_execution_order_graph_0.csv", [[op.name] for op in OPS])
        _write_csv(base / "execution_order" / "ms_global_execution_order_graph_0.csv", [["0"], ["1"], ["2"]])
        (base / ".dump_metadata").mkdir(parents=True, exist_ok=True)
        (base / ".dump_metadata" / "data_dump.json").write_text("{}")
        (base / "graphs").mkdir(parents=True, exist_ok=True)
    roots["npy"] = npy

    # --- statistics only
    stats = out / "stats"
    _npy_leaf(stats / "rank_0" / "Net" / "0" / "0", 0, 0, tensors=False)
    roots["stats"] = stats

    # --- asynchronous r1.x (Ascend dump files, 4-field names)
    asy = out / "async"
    for iteration in (0, 1):
        leaf = asy / "0" / "Net_graph_0" / "0" / str(iteration)
        leaf.mkdir(parents=True, exist_ok=True)
        for task, op in enumerate(OPS, start=1):
            _ascend_dump(leaf, op, task, BASE_TS + 1000 * task + iteration, iteration, 0, stream=None)
    roots["async"] = asy

    # --- O2 bin (step/time/device/model/model_id/iteration) with an overflow record
    o2 = out / "o2"
    leaf = o2 / "1" / TIME_DIR / "0" / "Net_model" / "1" / "0"
    leaf.mkdir(parents=True, exist_ok=True)
    for task, op in enumerate(OPS, start=1):
        _ascend_dump(leaf, op, task, BASE_TS + 1000 * task, 0, 0)
    _overflow_bin(leaf / f"Opdebug.Node_OpDebug.9.1.{BASE_TS + 9000}")
    long_name = leaf / f"Softmax.{ascend_file_op(OPS[3].name)}.4.1.{BASE_TS + 4000}"
    long_name.rename(leaf / "987654321")
    _write_csv(leaf / "mapping.csv", [["987654321", long_name.name]])
    (o2 / "acl_dump_0.json").write_text('{"dump": {"dump_path": "."}}')
    roots["o2"] = o2

    # --- O2 npy with a JSON overflow record
    o2n = out / "o2_npy"
    leaf = o2n / "1" / TIME_DIR / "0" / "Net_model" / "1" / "0"
    _npy_leaf(leaf, 0, 0, stats=False, hashed=False)
    (leaf / f"Opdebug.Node_OpDebug.9.1.{BASE_TS + 9000}.output.0.json").write_text(
        json.dumps({"AI Core": {"status": 1, "task_id": 9}}))
    roots["o2_npy"] = o2n

    # --- TF NPU: two model_name folders, GE build file naming one of them
    tf = out / "tf"
    folder_name = ascend_file_op(GRAPH_NAME)
    for model, ops in ((folder_name, OPS), ("ge_other_2", OPS[:1])):
        for data_index in (0, 1):
            leaf = tf / TIME_DIR / "0" / model / "1" / str(data_index)
            leaf.mkdir(parents=True, exist_ok=True)
            for task, op in enumerate(ops, start=1):
                _ascend_dump(leaf, op, task, BASE_TS + 1000 * task + data_index, data_index, 0)
    build = tf / "ge_proto_00001_Build.txt"
    build.write_text(f'graph {{\n  name: "{GRAPH_NAME}"\n  op {{\n    name: "atomic_addr_clean0_1"\n'
                     '    type: "AtomicAddrClean"\n  }\n}\n')
    roots["tf"] = tf
    roots["tf_build"] = build

    # --- TF NPU dump_data=stats
    tfs = out / "tf_stats"
    leaf = tfs / TIME_DIR / "0" / folder_name / "1" / "0"
    leaf.mkdir(parents=True, exist_ok=True)
    for task, op in enumerate(OPS, start=1):
        rows = [["Input/Output", "Index", "Data Size", "Data Type", "Format", "Shape", "Max Value", "Min Value",
                 "Avg Value", "Count", "Nan Count", "Negative Inf Count", "Positive Inf Count"]]
        for kind, index, shape in _tensors(op):
            data = tensor_value(op.name, kind, index, shape, 0).astype(np.float16).astype(np.float64)
            rows.append([kind.capitalize(), str(index), str(data.size * 2), "DT_FLOAT16",
                         "NCHW" if len(shape) == 4 else "ND", "x".join(str(d) for d in shape),
                         repr(float(data.max())), repr(float(data.min())), repr(float(data.mean())), str(data.size),
                         "0", "0", "0"])
        _write_csv(leaf / f"{op.type}.{ascend_file_op(op.name)}.{task}.1.{BASE_TS + 1000 * task}.csv", rows)
    roots["tf_stats"] = tfs
    return roots


__all__ = ["BF16_TENSOR", "GRAPH_NAME", "HASHED_TENSOR", "OPS", "Op", "ascend_file_op", "make_trees", "ms_file_op",
           "tensor_value"]
