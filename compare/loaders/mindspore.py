"""MindSpore dump folders: leaf-folder scanning, run records.

Layouts (the tree walk and the selection of a leaf are in :mod:`compare.loaders.trees`; the
file-name grammars in :mod:`convert.names.mindspore`):

* **Synchronous dump, r1.x** -- ``{path}/{net}/device_{id}/iteration_{n}/`` (CPU: no
  ``device_{id}``) holding raw little-endian ``.bin`` files named
  ``{op_name}_{input|output}_{index}_shape_{d0}_{d1}..._{data_type}_{format}.bin`` (the
  ``shape_`` word is optional; a scalar has no dimension). ``/`` in scope names is written
  ``--``. ``data_type`` is a MindSpore type name (``Float32``, ``kNumberTypeFloat32``,
  ``UInt32``, ``Bool`` ...), ``format`` a layout (``DefaultFormat``, ``NCHW``, ``NC1HWC0``,
  ``FracZ`` ...). The bytes are the tensor, nothing else: ``prod(shape) * itemsize`` must be the
  file size.
* **Asynchronous dump, r1.x** -- ``{path}/{device_id}/{net}_graph_{graph_id}/{graph_id}/
  {iteration}/`` holding Ascend dump files ``{op_type}.{op_name}.{task_id}.{timestamp}`` (read
  as Ascend offline dumps); ``{path}/{device_id}/execution_order/
  ms_execution_order_graph_{graph_id}.csv`` orders the rows.
* **O0/O1 and CPU/GPU dumps** -- ``{path}/rank_{rank}/{net}/{graph_id}/{iteration}/`` holding
  ``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}.{input|output}.{slot}.{format}
  [.{dtype}].npy``, ``statistic.csv``, ``mapping.csv`` (rows ``random_digits,real_name`` for
  names too long for the file system), kernel-argument ``{op_type}.{op_name}.json`` files
  (ignored); ``{graph_id}/constants/Parameter.data-{id}.0.0.{ts}.output.0.DefaultFormat[.dtype].npy``
  (constants, read as operators of type ``Parameter``); ``rank_{rank}/execution_order/
  ms_execution_order_graph_{id}.csv`` (kernel order: used to order the rows) and
  ``ms_global_execution_order_graph_{id}.csv`` (the iterations in which the graph ran);
  ``.dump_metadata/`` and ``graphs/`` are ignored.
* **O2 / GE dumps** -- ``{path}/[{step_id}/]{time}/{device_id}/{model_name}/{model_id}/
  {iteration_id}/`` holding Ascend dump files or ``.npy`` files named as above,
  ``Opdebug.Node_OpDebug.{task_id}.{stream_id}.{timestamp}[.output.0.json]`` overflow records
  (reported as rows, never compared), ``statistic.csv``, ``mapping.csv``; ``acl_dump_{id}.json``
  is ignored.

Naming policy (the op name a run is keyed by): the **full scope name as MindSpore writes it in
its graphs** -- ``--`` in a ``.bin``/``.npy`` file name is turned back into ``/``
(``Default--network-conv1-op104`` -> ``Default/network-conv1-op104``). Ascend-format files
(async, O2 ``bin``) have ``/`` and ``.`` already replaced by ``_`` and keep that name; pairing
matches the two forms through the normalised key (see :mod:`compare.pairing.user_mapping`).

Data types: a ``.npy`` name's ``{dtype}`` field is the original type. MindSpore saves bfloat16
as float32, int4 as int8 and uint1 as uint8; when the name says ``bfloat16`` / ``int4`` /
``uint1`` and the array has that carrier type, the DataType column shows the original type
(the values are compared as saved). Any other disagreement keeps the array's type and adds a
note.

Edge-case policy: a file whose name matches no rule is listed in ``Run.skipped`` with the
reason; a ``.bin`` whose size disagrees with its name, or whose type cannot be decoded, keeps
its tensor row and that row's reason is the :class:`DumpFormatError` naming the file; of several
files for one tensor the one with the latest timestamp is used (all are in ``OpDump.files``).
An op's ``timestamp`` is the **earliest** timestamp of its files (statistics rows: of its rows),
i.e. its first dump; it places the ops an execution order file does not list
(:func:`apply_order`).
"""

from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import ml_dtypes
import numpy as np

from convert.codecs.dumpfile import read_header
from convert.codecs.npy import load_npy, logical_dtype_name, read_npy_header
from convert.entries import list_entries, os_problem
from convert.jsonsafe import load_json
from convert.names.hashed import is_hashed_name, lookup_hashed, read_mapping
from convert.names.mindspore import (
    NPY_CARRIERS,
    NPY_FORM,
    SYNC_FORM,
    NpyName,
    SyncName,
    is_ignored_name,
    is_overflow_name,
    kernel_type,
    ms_dtype,
    parse_npy_name,
    parse_overflow_name,
    parse_sync_name,
)

from ..errors import CompareError, DumpFormatError
from ..records import DumpLayout, OpDump, OverflowRecord, Run, RunKind, TensorKind, TensorRef
from .ascend import no_valid_files_error
from .ms_stats import merge_stats_files


def _numpy_storage(name: str) -> np.dtype:
    if name == "bfloat16":
        return np.dtype(ml_dtypes.bfloat16)
    if name in ("int4", "uint1"):
        raise ValueError(name)
    return np.dtype(name).newbyteorder("<")


# --------------------------------------------------------------------------------------------
# Synchronous .bin files
# --------------------------------------------------------------------------------------------


def check_sync_file(path: Path, parsed: SyncName) -> np.dtype:
    """The storage dtype of a ``.bin``; :class:`DumpFormatError` if type or size is wrong."""
    dtype = parsed.dtype
    if dtype is None or dtype in ("int4", "uint1"):
        raise DumpFormatError(path, f"data type {parsed.dtype_text!r} of the file name cannot be decoded "
                                    "(known: Bool, Int8-64, UInt8-64, Float16/32/64, BFloat16, Complex64/128)")
    storage = _numpy_storage(dtype)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DumpFormatError(path, f"cannot read the file: {exc.strerror or exc}") from None
    expected = math.prod(parsed.shape) * storage.itemsize
    if size != expected:
        dims = "x".join(str(d) for d in parsed.shape) or "scalar"
        raise DumpFormatError(path, f"file size {size} bytes does not match the name: shape {dims} of "
                                    f"{parsed.dtype_text} needs {expected} bytes")
    return storage


def read_sync_bin(path: Path, parsed: SyncName) -> np.ndarray:
    """Read a synchronous ``.bin`` (memory-mapped, read-only) with the type and shape of its name."""
    storage = check_sync_file(path, parsed)
    if math.prod(parsed.shape) == 0:
        return np.empty(parsed.shape, dtype=storage)
    array = np.memmap(path, dtype=storage, mode="r", shape=parsed.shape or (1,))
    return array.reshape(parsed.shape)


# --------------------------------------------------------------------------------------------
# Execution order files
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Leaf scanning: synchronous .bin
# --------------------------------------------------------------------------------------------


def _files(folder: Path, skipped: list[tuple[Path, str]]) -> list[os.DirEntry]:
    """The regular files of a leaf, sorted by name; every other entry that could have been a dump
    file -- a FIFO, a device, a socket, a broken link, a link loop (never opened), or a folder
    under a dump file's name -- is added to ``skipped`` with what it is. Raises
    :class:`CompareError` (``cannot list dump folder: permission denied: PATH``) when the folder
    cannot be listed."""
    try:
        found = list_entries(folder)
    except OSError as exc:
        raise CompareError(f"cannot list dump folder: {os_problem(exc, folder)}") from exc
    skipped.extend(found.problems)
    for entry in found.folders:
        if parse_sync_name(entry.name) is not None or parse_npy_name(entry.name) is not None:
            skipped.append((Path(entry.path), "a folder under a dump file's name, not a dump file"))
    return list(found.files)


def scan_sync(folder: Path, *, root: Path | None = None, coords: dict | None = None) -> Run:
    """Scan a synchronous-dump ``iteration_{n}`` folder of ``.bin`` files.

    One :class:`OpDump` per op name (``--`` -> ``/``); inputs and outputs by index; the op type
    is the kernel name's ``{Type}-op{N}`` part (None for parameters). Sizes and
    types are checked when a tensor is read (its row then carries the DumpFormatError); a file
    whose size disagrees with its name is also noted in ``run.notes`` now.
    Raises :class:`CompareError` when the folder holds no ``.bin`` dump file.
    """
    folder = Path(folder)
    run = Run(root=Path(root) if root else folder, path=folder, kind=RunKind.NUMPY,
                    family=DumpLayout.MINDSPORE_SYNC, coords=dict(coords or {}))
    tensors: dict[str, dict[tuple[TensorKind, int], TensorRef]] = {}
    files: dict[str, list[Path]] = {}
    bad_sizes: list[str] = []
    for entry in _files(folder, run.skipped):
        path = Path(entry.path)
        parsed = parse_sync_name(entry.name)
        if parsed is None:
            if not is_ignored_name(entry.name):
                run.skipped.append((path, f"name matches no synchronous-dump rule, expected {SYNC_FORM}"))
            continue
        dtype = parsed.dtype or parsed.dtype_text
        try:
            storage = check_sync_file(path, parsed)
            nbytes = math.prod(parsed.shape) * storage.itemsize
        except DumpFormatError as exc:
            bad_sizes.append(str(exc))
            nbytes = 0
        kind = TensorKind(parsed.kind)
        ref = TensorRef(op_name=parsed.op_name, kind=kind, index=parsed.index, dtype=dtype,
                        format=parsed.format, shape=parsed.shape, path=path, nbytes=nbytes,
                        reader=functools.partial(read_sync_bin, path, parsed))
        tensors.setdefault(parsed.op_name, {})[(kind, parsed.index)] = ref
        files.setdefault(parsed.op_name, []).append(path)
    if not tensors:
        raise no_valid_files_error(folder, run.skipped)
    for name in sorted(tensors):
        refs = tensors[name]
        run.ops[name] = OpDump(
            name=name, op_type=kernel_type(name), path=files[name][0], files=tuple(files[name]),
            inputs=tuple(sorted((r for (k, _), r in refs.items() if k is TensorKind.INPUT), key=lambda r: r.index)),
            outputs=tuple(sorted((r for (k, _), r in refs.items() if k is TensorKind.OUTPUT), key=lambda r: r.index)),
        )
    if bad_sizes:
        shown = "; ".join(bad_sizes[:5]) + (f"; and {len(bad_sizes) - 5} more" if len(bad_sizes) > 5 else "")
        run.notes.append(f"{len(bad_sizes)} .bin file(s) do not match their names (their rows say why): {shown}")
    return run


# --------------------------------------------------------------------------------------------
# Leaf scanning: .npy (O0/O1, CPU/GPU, O2 npy)
# --------------------------------------------------------------------------------------------


def _npy_ref(op_name: str, parsed: NpyName, path: Path, notes: list[str]) -> tuple[TensorRef | None, str | None]:
    try:
        header = read_npy_header(path)
    except DumpFormatError as exc:
        return None, str(exc)
    saved = logical_dtype_name(header.dtype)
    dtype = saved
    named = ms_dtype(parsed.dtype_text) if parsed.dtype_text else None
    if named is not None and named != saved:
        if NPY_CARRIERS.get(named) == saved:
            dtype = named
        else:
            notes.append(f"{path.name}: the name says {parsed.dtype_text} but the array holds {saved}; "
                         f"{saved} is reported")
    ref = TensorRef(op_name=op_name, kind=TensorKind(parsed.kind), index=parsed.slot, dtype=dtype, format=parsed.format,
                    shape=header.shape, path=path, nbytes=math.prod(header.shape) * header.dtype.itemsize,
                    reader=functools.partial(load_npy, path, header))
    return ref, None


@dataclass
class _NpyGroup:
    """All files of one op in one folder (several executions: latest timestamp wins)."""

    op_type: str
    by_tensor: dict[tuple[TensorKind, int], list[tuple[NpyName, Path]]] = field(default_factory=dict)


def _group_npy(entries: list[tuple[str, Path]], run: Run) -> dict[str, _NpyGroup]:
    groups: dict[str, _NpyGroup] = {}
    for name, path in entries:
        parsed = parse_npy_name(name)
        if parsed is None:
            run.skipped.append((path, f"name matches no MindSpore .npy dump rule, expected {NPY_FORM}"))
            continue
        group = groups.setdefault(parsed.op_name, _NpyGroup(parsed.op_type))
        group.by_tensor.setdefault((TensorKind(parsed.kind), parsed.slot), []).append((parsed, path))
    return groups


def _build_npy_op(name: str, group: _NpyGroup, run: Run) -> OpDump:
    inputs: list[TensorRef] = []
    outputs: list[TensorRef] = []
    errors: list[str] = []
    all_files: list[Path] = []
    first = 0
    for key in sorted(group.by_tensor, key=lambda k: (k[0] is TensorKind.OUTPUT, k[1])):
        files = sorted(group.by_tensor[key], key=lambda f: (f[0].timestamp, f[1].name))
        all_files.extend(p for _, p in files)
        parsed, path = files[-1]
        earliest = files[0][0].timestamp
        first = earliest if not first else min(first, earliest)
        ref, error = _npy_ref(name, parsed, path, run.notes)
        if ref is not None:
            (inputs if ref.kind is TensorKind.INPUT else outputs).append(ref)
        if error:
            errors.append(error)
    return OpDump(name=name, op_type=group.op_type, path=all_files[-1] if all_files else run.path,
                  files=tuple(all_files), inputs=tuple(inputs), outputs=tuple(outputs),
                  error="; ".join(errors) if errors and not inputs and not outputs else None, timestamp=first)


def scan_npy(folder: Path, *, root: Path | None = None, coords: dict | None = None,
             constants: Path | None = None, family: DumpLayout = DumpLayout.MINDSPORE_NPY) -> Run:
    """Scan a MindSpore ``.npy`` iteration folder (O0/O1, CPU/GPU, or O2 with ``file_format`` npy).

    Tensors come from the ``.npy`` files (hashed names renamed through ``mapping.csv``); the
    ``constants/`` folder, when given, adds its Parameter files. Every ``statistic.csv`` row goes
    into the run (:func:`merge_stats`): a tensor with a file gets its statistics, a row without a
    file becomes a statistics-only tensor (and makes the run ``stats_only``); refused rows are
    counted in a note naming the file and the rows.
    Overflow records (``Opdebug...json``) go to ``run.overflow``. Raises :class:`CompareError`
    when the folder holds neither tensors nor statistics.
    """
    folder = Path(folder)
    run = Run(root=Path(root) if root else folder, path=folder, kind=RunKind.NUMPY, family=family,
                    coords=dict(coords or {}))
    entries: list[tuple[str, Path]] = []
    stats_files: list[Path] = []
    mapping: dict[str, str] | None = None
    for entry in _files(folder, run.skipped):
        path, name = Path(entry.path), entry.name
        if name == "statistic.csv":
            stats_files.append(path)
            continue
        if is_overflow_name(name):
            run.overflow.append(read_overflow(path))
            continue
        if is_ignored_name(name):
            continue
        if is_hashed_name(name):
            if mapping is None:
                mapping, bad = read_mapping(folder)
                run.skipped.extend(bad)
            real = lookup_hashed(name, mapping, npy_suffix=False)
            if real is None:
                run.skipped.append((path, "random-digit file name not listed in mapping.csv: cannot tell which "
                                          "tensor it is"))
                continue
            name = real
        entries.append((name, path))
    if constants is not None and constants.is_dir():
        const_entries = [(e.name, Path(e.path)) for e in _files(constants, run.skipped) if e.name.endswith(".npy")]
        entries.extend(const_entries)
        if const_entries:
            run.notes.append(f"{len(const_entries)} constant(s) read from {constants}")
    groups = _group_npy(entries, run)
    for name in sorted(groups):
        run.ops[name] = _build_npy_op(name, groups[name], run)
    merge_stats_files(run, stats_files)
    if not run.ops:
        if run.overflow:
            run.notes.append(f"the folder holds only {len(run.overflow)} overflow record(s)")
            return run
        raise no_valid_files_error(folder, run.skipped)
    return run


def constants_folder(leaf: Path) -> Path | None:
    """The ``constants/`` folder of an O0/O1 iteration folder: beside it, else one level up."""
    for folder in (leaf.parent / "constants", leaf.parent.parent / "constants"):
        if folder.is_dir():
            return folder
    return None


# --------------------------------------------------------------------------------------------
# Overflow records
# --------------------------------------------------------------------------------------------


def read_overflow(path: Path) -> OverflowRecord:
    """Decode an ``Opdebug.Node_OpDebug.*`` file enough to report it (never raises).

    ``.json`` (O2 npy format): its top-level keys and values, shortened. Binary (Ascend dump
    format): the number and sizes of its tensors and buffers, read with the dump reader.
    """
    parsed = parse_overflow_name(path.name)
    task, stream, ts = (parsed.task_id, parsed.stream_id, parsed.timestamp) if parsed else (None, None, 0)
    if path.name.endswith(".json"):
        try:
            content = load_json(path.read_text(encoding="utf-8", errors="replace"), path, finite=False)
            text = json.dumps(content, separators=(",", ":"), sort_keys=True)
            summary = text if len(text) <= 300 else text[:297] + "..."
        except DumpFormatError as exc:  # deep nesting, 4,300-digit numbers, not JSON: convert.jsonsafe
            summary = f"unreadable JSON ({exc.problem})"
        except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested deeper than Python reads
            summary = f"unreadable JSON ({str(exc)[:200]})"
    else:
        try:
            header = read_header(path)
            parts = [f"{len(header.outputs)} output(s) of {', '.join(str(int(o.size)) for o in header.outputs) or 0} "
                     f"bytes", f"{len(header.inputs)} input(s)"]
            buffers = getattr(header, "buffers", ())
            if buffers:
                parts.append(f"{len(buffers)} buffer(s)")
            summary = "; ".join(parts)
        except CompareError as exc:
            summary = f"undecodable ({exc})"
        except OSError as exc:
            summary = f"unreadable ({exc.strerror or exc})"
    return OverflowRecord(path=path, task_id=task, stream_id=stream, timestamp=ts or 0, summary=summary)


__all__ = [
    "check_sync_file",
    "constants_folder",
    "read_overflow",
    "read_sync_bin",
    "scan_npy",
    "scan_sync",
]
