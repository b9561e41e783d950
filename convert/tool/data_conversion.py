"""The manual's ``dump_data_conversion``: golden ``.npy`` files <-> dump files.

``-type`` says what the data is (``caffe``, ``tf``, ``quant``: golden model data; ``offline``,
``sim``: device dumps) and ``-target`` which way to go.

**-target dump** (:func:`numpy_to_dump`):

* ``caffe`` / ``tf``: each ``{op_name}.{output_index}.{timestamp}.npy`` becomes the standard
  golden dump ``{op_name}.{output_index}.{timestamp}.pb``; ``quant``: ``....quant``. The file is a
  DumpData with one output (the array: its dtype, shape and bytes; format ND), ``op_name`` and
  ``dump_time`` (the timestamp, 0 when it does not fit 64 bits) set; binary layout (``-v 2``,
  the default) or pure protobuf (``-v 1``). Dots in ``op_name`` become ``_`` in the ``.pb`` name
  (the golden ``.pb`` rule allows no dots; op lookups treat ``.`` and ``_`` alike).
  ``vcompare`` reads these files back to the same bytes, dtype and shape.
* ``offline`` / ``sim``: tensor files written by ``vconvert dump`` --
  ``{dumpfile}.{input|output}.{i}.npy``, the ``msnpy`` form ``....{i}.{FORMAT}.npy`` or the shaped
  form ``....{i}.{d0}x{d1}.npy`` -- are grouped by ``{dumpfile}`` into one dump file named
  ``{dumpfile}`` (format from the msnpy name, else ND). The indexes of each kind must run 0..n-1.
* Names that fit no rule, unreadable ``.npy`` files (object arrays...) and dtypes with no dump
  data type (strings...) are failures listed with their reason; the others are still written.
* A ``.npy`` of 2-byte void items (``|V2``, what ``numpy.save`` writes for an
  ``ml_dtypes.bfloat16`` array) is read as bfloat16 and written as DT_BF16.

**-target numpy** (:func:`dump_to_numpy`): golden dumps named ``{op}.{idx}.{ts}.pb|.quant`` give
``{op}.{idx}.{ts}.npy`` (their first output, in its own dtype -- bf16 stays bf16, written as
``numpy.save`` writes an ``ml_dtypes.bfloat16`` array -- so ``.npy -> dump -> .npy`` gives the
same bytes back; other tensors are noted and skipped); every other file is converted as
``vconvert dump`` does (``{dumpfile}.{input|output}.{i}.npy``, bf16 as float32). ``-type`` only
matters for the direction ``dump``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from ..codecs import npy
from ..codecs.dumpfile import read_header, read_tensor
from ..codecs.dumpwrite import TensorSpec, write_dump
from ..errors import OptionError
from ..names.ascend import parse_offline_name
from ..names.golden import explain_golden_name, parse_golden_name
from .batch import (
    ConvertReport,
    FileOutcome,
    SourceFile,
    Sources,
    finish,
    problem_of,
    run_files,
    start,
)
from .convert_dump import DumpConvertOptions, canonical_format, convert_dump_file, save_npy

DATA_TYPES = ("caffe", "tf", "quant", "offline", "sim")
TARGETS = ("dump", "numpy")
GOLDEN_SUFFIX = {"caffe": ".pb", "tf": ".pb", "quant": ".quant"}

_TENSOR_FILE = re.compile(
    r"(?P<base>.+)\.(?P<kind>input|output)\.(?P<index>[0-9]+)(?:\.(?P<extra>[A-Za-z0-9_]+))?\.npy"
)
_SHAPE_FIELD = re.compile(r"[0-9]+(x[0-9]+)*|scalar")
_UINT64_MAX = (1 << 64) - 1


def load_npy(path: str | os.PathLike[str]) -> np.ndarray:
    """A ``.npy`` read through the checked codec (:mod:`convert.codecs.npy`): never unpickles, the header
    length and the data size are checked against the file before anything is read or allocated
    (a header promising 10**8 values in a 200-byte file is refused by arithmetic), the data is
    mapped read-only; ``|V2`` items are read as bfloat16 (see the module doc). Raises
    :class:`convert.errors.DumpFormatError` naming the file."""
    path = Path(path)
    return npy.load_npy(path, npy.read_npy_header(path))


def _check_args(data_type: str, target: str, version: int | None) -> None:
    if data_type not in DATA_TYPES:
        raise OptionError(f"-type {data_type!r} is not one of {', '.join(DATA_TYPES)}")
    if target not in TARGETS:
        raise OptionError(f"-target {target!r} is not one of {', '.join(TARGETS)}")
    if version not in (None, 1, 2):
        raise OptionError(f"dump version {version!r} is not 1 or 2")


def _npy_to_golden_dump(source: SourceFile, out_dir: Path, suffix: str, version: int) -> FileOutcome:
    outcome = FileOutcome(source)
    parsed = parse_golden_name(source.name) if source.name.endswith(".npy") else None
    if parsed is None:
        why = explain_golden_name(source.name) if source.name.endswith(".npy") else "not a .npy file"
        outcome.errors.append(why)
        return outcome
    try:
        array = load_npy(source.path)
    except Exception as exc:  # noqa: BLE001 - listed, the other files go on
        outcome.errors.append(f"cannot load the .npy file: {problem_of(exc)}")
        return outcome
    op = parsed.op_name.replace(".", "_")
    name = f"{op}.{parsed.output_index}.{parsed.timestamp_digits}{suffix}"
    stamp = parsed.timestamp if parsed.timestamp <= _UINT64_MAX else 0

    def write(path: Path) -> None:
        write_dump(path, outputs=[TensorSpec(array, format="ND")], op_name=op, version=version, dump_time=stamp)

    try:
        outcome.save(out_dir, name, write)
    except ValueError as exc:
        outcome.errors.append(f"cannot write {name}: {problem_of(exc)}")
    return outcome


def _tensor_groups(sources: list[SourceFile], report: ConvertReport) -> dict[str, list[tuple[SourceFile, str, int, str]]]:
    groups: dict[str, list[tuple[SourceFile, str, int, str]]] = {}
    for source in sources:
        match = _TENSOR_FILE.fullmatch(source.name)
        if match is None:
            report.fail(source.path, "name is not {dumpfile}.{input|output}.{i}[.{FORMAT}].npy (a vconvert dump output)")
            continue
        extra = match.group("extra")
        fmt = "ND"
        if extra and not _SHAPE_FIELD.fullmatch(extra):
            try:
                fmt = canonical_format(extra)
            except OptionError:
                report.fail(source.path, f"{extra!r} in the name is neither a format nor a d0xd1x... shape")
                continue
        groups.setdefault(match.group("base"), []).append((source, match.group("kind"), int(match.group("index")), fmt))
    return groups


def _group_to_dump(base: str, members: list[tuple[SourceFile, str, int, str]], out_dir: Path,
                   version: int) -> FileOutcome:
    outcome = FileOutcome(members[0][0])
    tensors: dict[str, dict[int, TensorSpec]] = {"input": {}, "output": {}}
    for source, kind, index, fmt in members:
        if index in tensors[kind]:
            outcome.errors.append(f"{source.path.name}: a second file for {kind} {index} of {base}")
            return outcome
        try:
            tensors[kind][index] = TensorSpec(load_npy(source.path), format=fmt)
        except Exception as exc:  # noqa: BLE001
            outcome.errors.append(f"{source.path.name}: cannot load the .npy file: {problem_of(exc)}")
            return outcome
    for kind, found in tensors.items():
        if sorted(found) != list(range(len(found))):
            missing = sorted(set(range(max(found) + 1)) - set(found))
            outcome.errors.append(f"{base}: {kind} index(es) {missing} missing (files for {sorted(found)})")
            return outcome
    parsed = parse_offline_name(base)
    op_name = parsed.op_name if parsed else ""
    stamp = parsed.timestamp if parsed and parsed.timestamp <= _UINT64_MAX else 0

    def write(path: Path) -> None:
        write_dump(path, inputs=[tensors["input"][i] for i in range(len(tensors["input"]))],
                   outputs=[tensors["output"][i] for i in range(len(tensors["output"]))],
                   op_name=op_name, version=version, dump_time=stamp)

    try:
        outcome.save(out_dir, base, write)
    except ValueError as exc:
        outcome.errors.append(f"cannot write {base}: {problem_of(exc)}")
    return outcome


def numpy_to_dump(paths: Sources, out_dir: str | Path, data_type: str, *, version: int = 2,
                  workers: int | None = None) -> ConvertReport:
    """``.npy`` files -> dump files (see the module doc). Raises OptionError when nothing can run."""
    _check_args(data_type, "dump", version)
    report, sources = start(paths, out_dir, what=".npy")
    out = report.out_dir
    if data_type in GOLDEN_SUFFIX:
        suffix = GOLDEN_SUFFIX[data_type]
        outcomes = run_files(sources, lambda s: _npy_to_golden_dump(s, out, suffix, version), workers)
    else:
        groups = list(_tensor_groups(sources, report).items())
        outcomes = run_files(groups, lambda group: _group_to_dump(group[0], group[1], out, version), workers,
                             source_of=lambda group: group[1][0][0])
    for outcome in outcomes:
        report.add(outcome)
    return finish(report)


def _golden_dump_to_npy(source: SourceFile, out_dir: Path, version: int | None) -> FileOutcome:
    outcome = FileOutcome(source)
    try:
        header = read_header(source.path, version=version)
        if not header.outputs:
            outcome.errors.append("the dump has no output tensor (a golden dump holds one)")
            return outcome
        array = read_tensor(header, header.outputs[0])
    except Exception as exc:  # noqa: BLE001
        outcome.errors.append(problem_of(exc))
        return outcome
    others = len(header.tensors) - 1
    if others:
        outcome.notes.append(f"{source.path}: only output 0 written ({others} other tensor(s) skipped)")
    name = source.name.rsplit(".", 1)[0] + ".npy"
    outcome.save(out_dir, name, save_npy(array))
    return outcome


def dump_to_numpy(paths: Sources, out_dir: str | Path, data_type: str = "offline", *, version: int | None = None,
                  workers: int | None = None) -> ConvertReport:
    """Dump files -> ``.npy`` files (see the module doc). Raises OptionError when nothing can run."""
    _check_args(data_type, "numpy", version)
    report, sources = start(paths, out_dir)
    out = report.out_dir
    options = DumpConvertOptions(version=version)

    def job(source: SourceFile) -> FileOutcome:
        parsed = parse_golden_name(source.name)
        if parsed is not None and parsed.kind in ("pb", "quant"):
            return _golden_dump_to_npy(source, out, version)
        return convert_dump_file(source, out, options)

    for outcome in run_files(sources, job, workers):
        report.add(outcome)
    return finish(report)


def convert_data(paths: Sources, out_dir: str | Path, data_type: str, target: str, *,
                 version: int | None = None, workers: int | None = None) -> ConvertReport:
    """Dispatch ``-type``/``-target`` to :func:`numpy_to_dump` or :func:`dump_to_numpy`."""
    _check_args(data_type, target, version)
    if target == "dump":
        return numpy_to_dump(paths, out_dir, data_type, version=version or 2, workers=workers)
    return dump_to_numpy(paths, out_dir, data_type, version=version, workers=workers)


__all__ = ["DATA_TYPES", "TARGETS", "convert_data", "dump_to_numpy", "load_npy", "numpy_to_dump"]
