"""Synthetic msprobe dumps (PyTorch ``.pt`` and MindSpore ``.npy``) for tests, and a ``.pt`` writer.

:func:`write_pt` writes a ``torch.save``-format zip (``{archive}/data.pkl``, ``{archive}/data/0``,
``{archive}/byteorder``, ``{archive}/version``) without torch: the pickle is spelled opcode by
opcode (protocol 2) -- ``GLOBAL torch._utils _rebuild_tensor_v2``, a ``MARK ... TUPLE`` of
``(BINPERSID ("storage", GLOBAL torch.{Type}Storage, "0", "cpu", numel), offset, size, stride,
False, GLOBAL collections.OrderedDict () REDUCE)``, ``REDUCE``, ``STOP``. Options make hostile
files: another global (``extra_global``), a ``BUILD`` that tries to change an allow-listed name or
the tensor (``build_on``), a non-contiguous stride, a storage offset, a missing storage, a
compressed storage.

:func:`write_msprobe_dump` writes ``{root}/step{s}/rank{r}/dump.json`` (+ ``dump_tensor_data``)
for a small network of calls (:data:`CALLS`: a conv with a ``null`` and an ``int`` argument, a
matmul, a split returning a nested list, a module with parameters, a relu forward and backward,
parameter gradients), named as msprobe names them for each framework (``Torch.matmul`` /
``Mint.matmul``, ``Module.fc.Linear`` / ``Cell.fc.Dense``). Values come from a seeded generator
keyed by the call's framework-neutral id, so both frameworks and every rank hold the same numbers;
``noise`` scales them by ``1 + noise * u`` (``u`` uniform in [-1, 1), seeded) to make a perturbed
side. The returned :class:`MsprobeDump` gives every tensor's array by data name, for exact checks.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import ml_dtypes
import numpy as np

_STORAGE = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage", "bfloat16": "BFloat16Storage",
    "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage", "int8": "CharStorage",
    "uint8": "ByteStorage", "bool": "BoolStorage", "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage",
}
_TORCH_DTYPE = {"float32": "torch.float32", "float16": "torch.float16", "bfloat16": "torch.bfloat16",
                "int64": "torch.int64", "bool": "torch.bool"}
_MS_DTYPE = {"float32": "Float32", "float16": "Float16", "bfloat16": "BFloat16", "int64": "Int64", "bool": "Bool"}


# --------------------------------------------------------------------------------------------
# .pt writer (pickle opcodes, no torch)
# --------------------------------------------------------------------------------------------


def _p_str(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _p_int(value: int) -> bytes:
    if -(1 << 31) <= value < (1 << 31):
        return b"J" + struct.pack("<i", value)
    raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
    if len(raw) > 255:  # LONG4
        return b"\x8b" + struct.pack("<I", len(raw)) + raw
    return b"\x8a" + bytes([len(raw)]) + raw


#: The state a hostile ``BUILD`` sets (``build_on``): a wrong dtype, a string shape.
HOSTILE_STATE = {"dtype": "junk", "name": "junk", "shape": "junk", "function": "junk"}


def _p_build(slots: bool) -> bytes:
    """A state dict of :data:`HOSTILE_STATE` and ``BUILD`` (``slots``: the ``(None, state)`` form,
    which sets attributes one by one)."""
    state = b"}(" + b"".join(_p_str(k) + _p_str(v) for k, v in HOSTILE_STATE.items()) + b"u"
    return (b"N" + state + b"\x86" if slots else state) + b"b"


def _p_tuple(items: list[bytes]) -> bytes:
    return b"(" + b"".join(items) + b"t"


def _p_global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def tensor_pickle(storage_type: str, numel: int, shape: tuple[int, ...], stride: tuple[int, ...], offset: int = 0,
                  *, key: str = "0", extra_global: tuple[str, str] | None = None, parameter: bool = False,
                  build_on: tuple[str, str] | str | None = None, build_slots: bool = False) -> bytes:
    """The ``data.pkl`` of one tensor (module doc); ``extra_global`` replaces the hooks' OrderedDict
    with a call of another global (a hostile file: the reader must refuse it, never import it);
    ``parameter`` wraps the tensor in ``torch._utils._rebuild_parameter(tensor, True, OrderedDict())``
    as ``torch.save`` writes an ``nn.Parameter``.

    ``build_on`` (hostile): a ``BUILD`` of :data:`HOSTILE_STATE` -- on the global ``(module,
    name)`` before the tensor (``GLOBAL m n``, state, ``BUILD``, ``POP``: it tries to change an
    allow-listed name for every later file), or on the tensor itself (``"tensor"``: after its
    ``REDUCE``); ``build_slots`` spells the state as ``(None, state)``."""
    storage = _p_tuple([_p_str("storage"), _p_global("torch", storage_type), _p_str(key), _p_str("cpu"),
                        _p_int(numel)]) + b"Q"
    hooks = (_p_global(*extra_global) + _p_tuple([_p_str("echo pwned")]) + b"R" if extra_global
             else _p_global("collections", "OrderedDict") + b")R")
    args = _p_tuple([storage, _p_int(offset), _p_tuple([_p_int(d) for d in shape]),
                     _p_tuple([_p_int(s) for s in stride]), b"\x89", hooks])
    tensor = _p_global("torch._utils", "_rebuild_tensor_v2") + args + b"R"
    if parameter:
        tensor = (_p_global("torch._utils", "_rebuild_parameter")
                  + _p_tuple([tensor, b"\x88", _p_global("collections", "OrderedDict") + b")R"]) + b"R")
    prelude = b""
    if build_on == "tensor":
        tensor += _p_build(build_slots)
    elif build_on is not None:
        prelude = _p_global(*build_on) + _p_build(build_slots) + b"0"
    return b"\x80\x02" + prelude + tensor + b"."


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def write_pt(path: Path, array: np.ndarray, *, archive: str | None = None, transpose: bool = False, offset: int = 0,
             extra_global: tuple[str, str] | None = None, drop_storage: bool = False, compress: bool = False,
             byteorder: str = "little", build_on: tuple[str, str] | str | None = None,
             build_slots: bool = False) -> Path:
    """Write ``array`` as a ``torch.save`` file (module doc; ``build_on`` / ``build_slots``: see
    :func:`tensor_pickle`).

    ``transpose``: store a 2-D array column-major and describe it with swapped strides (a
    non-contiguous tensor); ``offset``: put that many zero elements before the data and say so.
    """
    array = np.asarray(array)
    name = array.dtype.name if array.dtype != np.dtype(ml_dtypes.bfloat16) else "bfloat16"
    shape = tuple(array.shape)
    if transpose:
        assert array.ndim == 2
        flat = np.ascontiguousarray(array.T).reshape(-1)
        stride = (1, shape[0])
    else:
        flat = np.ascontiguousarray(array).reshape(-1)
        stride = _contiguous(shape)
    data = np.concatenate([np.zeros(offset, dtype=array.dtype), flat]) if offset else flat
    if byteorder == "big":  # bfloat16 (a numpy void type) has no big-endian form: swap its 2-byte words
        data = data.view("<u2").byteswap() if data.dtype.kind == "V" else data.astype(data.dtype.newbyteorder(">"))
    stem = archive or path.stem
    pickle_bytes = tensor_pickle(_STORAGE[name], data.size, shape, stride, offset, extra_global=extra_global,
                                 build_on=build_on, build_slots=build_slots)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as out:
        out.writestr(f"{stem}/data.pkl", pickle_bytes)
        out.writestr(f"{stem}/byteorder", byteorder)
        if not drop_storage:
            out.writestr(zipfile.ZipInfo(f"{stem}/data/0"), data.tobytes(),
                         compress_type=zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED)
        out.writestr(f"{stem}/version", "3\n")
    return path


# --------------------------------------------------------------------------------------------
# msprobe dump trees
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class T:
    """A tensor placeholder of :data:`CALLS`: shape and numpy-style dtype."""

    shape: tuple[int, ...]
    dtype: str = "float32"


def _int(value: int) -> dict:
    return {"type": "int", "value": value}


#: (PyTorch name, MindSpore name, sections) of the synthetic network, in call order.
CALLS: tuple[tuple[str, str, dict], ...] = (
    ("Functional.conv2d.0.forward", "Functional.conv2d.0.forward",
     {"input_args": [T((2, 3, 4, 4)), T((4, 3, 3, 3)), None, _int(1)], "input_kwargs": {},
      "output": [T((2, 4, 2, 2))]}),
    ("Torch.matmul.0.forward", "Mint.matmul.0.forward",
     {"input_args": [T((4, 8)), T((8, 4))], "input_kwargs": {}, "output": [T((4, 4), "float16")]}),
    ("Torch.split.0.forward", "Mint.split.0.forward",
     {"input_args": [T((4, 6)), _int(3)], "input_kwargs": {"dim": _int(1)}, "output": [[T((4, 3)), T((4, 3))]]}),
    ("Module.fc.Linear.forward.0", "Cell.fc.Dense.forward.0",
     {"input_args": [T((2, 8), "bfloat16")], "input_kwargs": {}, "output": [T((2, 4))],
      "parameters": {"weight": T((4, 8)), "bias": T((4,))}}),
    ("Functional.relu.0.forward", "Functional.relu.0.forward",
     {"input_args": [T((2, 4))], "input_kwargs": {"inplace": {"type": "bool", "value": False}}, "output": [T((2, 4))]}),
    ("Functional.relu.0.backward", "Functional.relu.0.backward",
     {"input": [T((2, 4))], "output": [T((2, 4))]}),
    ("Module.fc.Linear.parameters_grad.0", "Cell.fc.Dense.parameters_grad.0",
     {"weight": [T((4, 8))], "bias": [T((4,))]}),
)


@dataclass
class MsprobeDump:
    """What :func:`write_msprobe_dump` wrote: the dump root, each rank folder by (step, rank), and
    the array of every tensor by its data name (as stored: MindSpore bfloat16 as float32)."""

    root: Path
    folders: dict[tuple[int, int], Path] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    #: The arrays of each rank folder, by (step, rank), then by data name (they differ from part to
    #: part with ``per_part``).
    parts: dict[tuple[int, int], dict[str, np.ndarray]] = field(default_factory=dict)


def _values(key: str, t: T, noise: float, seed: int) -> np.ndarray:
    digest = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little")
    rng = np.random.default_rng(digest)
    base = rng.standard_normal(t.shape)
    if noise:
        jitter = np.random.default_rng(digest ^ (seed + 1)).uniform(-1.0, 1.0, t.shape)
        base = base * (1.0 + noise * jitter)
    if t.dtype == "bfloat16":
        return base.astype(ml_dtypes.bfloat16)
    return base.astype(t.dtype)


def _stats(array: np.ndarray) -> dict:
    x = np.asarray(array, dtype=np.float64)
    return {"Max": float(x.max()), "Min": float(x.min()), "Mean": float(x.mean()), "Norm": float(np.linalg.norm(x))}


def _item(t: T, framework: str, data_name: str | None, array: np.ndarray) -> dict:
    item = {"type": "torch.Tensor" if framework == "pytorch" else "mindspore.Tensor",
            "dtype": (_TORCH_DTYPE if framework == "pytorch" else _MS_DTYPE)[t.dtype], "shape": list(t.shape),
            **_stats(array)}
    if framework == "pytorch":
        item["requires_grad"] = False
    if data_name is not None:
        item["data_name"] = data_name
    return item


def _section(value: object, prefix: str, neutral: str, framework: str, task: str, noise: float, seed: int,
             data_dir: Path, arrays: dict[str, np.ndarray]) -> object:
    if isinstance(value, T):
        ext = ".pt" if framework == "pytorch" else ".npy"
        data_name = prefix + ext
        array = _values(neutral, value, noise, seed)
        if task == "tensor":
            if framework == "pytorch":
                write_pt(data_dir / data_name, array)
                arrays[data_name] = array
            else:
                stored = array.astype(np.float32) if value.dtype == "bfloat16" else array
                data_dir.mkdir(parents=True, exist_ok=True)
                np.save(data_dir / data_name, stored)
                arrays[data_name] = stored
        return _item(value, framework, data_name if task == "tensor" else None, array)
    if isinstance(value, list):
        return [_section(v, f"{prefix}.{i}", f"{neutral}.{i}", framework, task, noise, seed, data_dir, arrays)
                for i, v in enumerate(value)]
    if isinstance(value, dict) and "type" not in value:
        return {k: _section(v, f"{prefix}.{k}", f"{neutral}.{k}", framework, task, noise, seed, data_dir, arrays)
                for k, v in value.items()}
    return value


_CATEGORY = {"input_args": "input", "input_kwargs": "input", "parameters": "parameters", "input": "input",
             "output": "output"}


def write_msprobe_dump(root: Path, *, framework: str = "pytorch", task: str = "tensor", steps: tuple[int, ...] = (0,),
                       ranks: tuple[int, ...] = (0,), noise: float = 0.0, seed: int = 0,
                       calls: tuple[tuple[str, str, dict], ...] = CALLS, per_part: bool = False,
                       folder_name: str = "rank{rank}") -> MsprobeDump:
    """Write an msprobe dump tree (module doc) and return what was written.

    ``per_part``: the values of each (step, rank) folder differ (the generator's key names the
    step and rank), so a part compared with the wrong counterpart shows. ``folder_name``: the
    rank folder's name, formatted with ``rank`` (``proc{rank}`` writes the ``proc{pid}`` folders of
    processes without a rank, the "rank" then standing for the pid)."""
    out = MsprobeDump(root=Path(root))
    for step in steps:
        for rank in ranks:
            folder = out.root / f"step{step}" / folder_name.format(rank=rank)
            arrays: dict[str, np.ndarray] = {}
            salt = f"step{step}/rank{rank}/" if per_part else ""
            data_dir = folder / "dump_tensor_data"
            folder.mkdir(parents=True, exist_ok=True)
            data: dict[str, dict] = {}
            for pt_name, ms_name, sections in calls:
                name = pt_name if framework == "pytorch" else ms_name
                entry: dict[str, object] = {}
                for key, value in sections.items():
                    category = _CATEGORY.get(key)
                    if category is None:  # parameters_grad: {param: [tensor]}
                        prefix, neutral = f"{name}.{key}", f"{salt}{pt_name}/{key}"
                        entry[key] = [_section(v, prefix if len(value) == 1 else f"{prefix}.{i}", f"{neutral}.{i}",
                                               framework, task, noise, seed, data_dir, arrays)
                                      for i, v in enumerate(value)]
                        continue
                    prefix = f"{name}.{category}"
                    neutral = f"{salt}{pt_name}/{key}"
                    if isinstance(value, list):
                        entry[key] = [_section(v, f"{prefix}.{i}", f"{neutral}.{i}", framework, task, noise, seed,
                                               data_dir, arrays) for i, v in enumerate(value)]
                    else:
                        entry[key] = _section(value, prefix, neutral, framework, task, noise, seed, data_dir,
                                              arrays)
                data[name] = entry
            top = {"task": task, "level": "mix", "framework": framework, "dump_data_dir": str(data_dir)
                   if task == "tensor" else None, "data": data}
            (folder / "dump.json").write_text(json.dumps(top, indent=1))
            (folder / "stack.json").write_text("{}")
            (folder / "construct.json").write_text("{}")
            out.folders[(step, rank)] = folder
            out.parts[(step, rank)] = arrays
            out.arrays.update(arrays)
    return out


__all__ = ["CALLS", "HOSTILE_STATE", "MsprobeDump", "T", "tensor_pickle", "write_msprobe_dump", "write_pt"]
