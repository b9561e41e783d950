"""MindSpore's names: data types and formats as its dump files, statistics CSVs and
execution-order files write them, mapped to vcompare's (numpy-style dtype names, layout names);
the scope name a dump-file name spells (``--`` for ``/``) and the op type a kernel name carries;
the grammars of its dump file names: synchronous ``.bin`` (:func:`parse_sync_name`), ``.npy``
(:func:`parse_npy_name`), overflow records and the files of a leaf that hold no tensor."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from .ascend import IGNORED_FILES

#: MindSpore type names (lower case, ``knumbertype`` prefix dropped) -> numpy-style names.
_MS_TYPES = {
    "bool": "bool",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "int": "int32",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "uint": "uint32",
    "float16": "float16",
    "float32": "float32",
    "float64": "float64",
    "float": "float32",
    "double": "float64",
    "bfloat16": "bfloat16",
    "complex64": "complex64",
    "complex128": "complex128",
    "int4": "int4",
    "uint1": "uint1",
}

#: Original types MindSpore stores in a wider carrier type in ``.npy`` files.
NPY_CARRIERS = {"bfloat16": "float32", "int4": "int8", "uint1": "uint8"}

#: MindSpore format names -> vcompare layout names (others: upper-cased as written).
_MS_FORMATS = {
    "defaultformat": "ND",
    "default": "ND",
    "fracz": "FRACTAL_Z",
    "fractal_z": "FRACTAL_Z",
    "frac_nz": "FRACTAL_NZ",
    "fractal_nz": "FRACTAL_NZ",
    "fracnz": "FRACTAL_NZ",
    "fractal_z_3d": "FRACTAL_Z_3D",
    "nc1hwc0": "NC1HWC0",
    "ndc1hwc0": "NDC1HWC0",
    "c1hwncoc0": "C1HWNCoC0",
    "nc1hwc0_c04": "NC1HWC0_C04",
    "fractal_z_c04": "FRACTAL_Z_C04",
}


def ms_dtype(text: str) -> str | None:
    """numpy-style name of a MindSpore type name (``Float32``, ``kNumberTypeUInt32``), or None."""
    key = text.strip().lower()
    for prefix in ("knumbertype", "kobjecttype"):
        if key.startswith(prefix):
            key = key[len(prefix):]
    return _MS_TYPES.get(key)


def ms_format(text: str) -> str:
    """vcompare layout name of a MindSpore format name (``DefaultFormat`` -> ``ND``)."""
    key = text.strip()
    return _MS_FORMATS.get(key.lower(), key.upper())


def scope_name(file_op_name: str) -> str:
    """The op name of a file name: ``--`` back to ``/`` (see the module doc)."""
    return file_op_name.replace("--", "/")


_KERNEL_RE = re.compile(r"([A-Za-z][A-Za-z0-9_]*)-op\d+")


def kernel_type(op_name: str) -> str | None:
    """The op type a kernel name carries (``.../conv3-Conv2d/Conv2D-op12`` -> ``Conv2D``), or None."""
    match = _KERNEL_RE.fullmatch(op_name.rsplit("/", 1)[-1])
    return match.group(1) if match else None


# --------------------------------------------------------------------------------------------
# Synchronous .bin names
# --------------------------------------------------------------------------------------------

SYNC_FORM = "{op_name}_{input|output}_{index}_shape_{d0}_..._{data_type}_{format}.bin"

_SYNC_RE = re.compile(
    r"(?P<op>.+)_(?P<kind>input|output)_(?P<index>\d+)_(?:shape_?)?(?P<dims>(?:\d+_)*)"
    r"(?P<dtype>[A-Za-z][A-Za-z0-9]*)_(?P<fmt>[A-Za-z][A-Za-z0-9_]*)\.bin"
)


@dataclass(frozen=True)
class SyncName:
    """Fields of a synchronous ``.bin`` name; ``op_file_name`` keeps the ``--`` form; ``kind`` is
    ``input`` or ``output``."""

    op_file_name: str
    kind: str
    index: int
    shape: tuple[int, ...]
    dtype_text: str
    format_text: str

    @property
    def op_name(self) -> str:
        return scope_name(self.op_file_name)

    @property
    def dtype(self) -> str | None:
        return ms_dtype(self.dtype_text)

    @property
    def format(self) -> str:
        return ms_format(self.format_text)


def parse_sync_name(name: str) -> SyncName | None:
    """Parse a synchronous-dump ``.bin`` name, or ``None`` when it is not one."""
    match = _SYNC_RE.fullmatch(name)
    if match is None:
        return None
    dims = tuple(int(d) for d in match.group("dims").split("_") if d)
    return SyncName(
        op_file_name=match.group("op"),
        kind=match.group("kind"),
        index=int(match.group("index")),
        shape=dims,
        dtype_text=match.group("dtype"),
        format_text=match.group("fmt"),
    )


# --------------------------------------------------------------------------------------------
# O0/O1, CPU/GPU and O2 .npy names
# --------------------------------------------------------------------------------------------

NPY_FORM = "{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}.{input|output}.{slot}.{format}[.{dtype}].npy"

_NPY_RE = re.compile(
    r"(?P<type>[^.]+)\.(?P<op>.+)\.(?P<task>\d+)\.(?P<stream>\d+)\.(?P<ts>\d+)\."
    r"(?P<kind>input|output)\.(?P<slot>\d+)\.(?P<fmt>[A-Za-z][A-Za-z0-9_]*)(?:\.(?P<dtype>[A-Za-z][A-Za-z0-9_]*))?\.npy"
)


@dataclass(frozen=True)
# duplicates: NpyName and SyncName share the dtype / format properties: two file grammars, two records
class NpyName:
    """Fields of a MindSpore ``.npy`` dump name; ``op_file_name`` keeps the ``--`` form; ``kind`` is
    ``input`` or ``output``."""

    op_type: str
    op_file_name: str
    task_id: int
    stream_id: int
    timestamp: int
    kind: str
    slot: int
    format_text: str
    dtype_text: str | None

    @property
    def op_name(self) -> str:
        return scope_name(self.op_file_name)

    @property
    def format(self) -> str:
        return ms_format(self.format_text)


def parse_npy_name(name: str) -> NpyName | None:
    """Parse a MindSpore ``.npy`` dump name, or ``None`` when it is not one."""
    match = _NPY_RE.fullmatch(name)
    if match is None:
        return None
    return NpyName(
        op_type=match.group("type"),
        op_file_name=match.group("op"),
        task_id=int(match.group("task")),
        stream_id=int(match.group("stream")),
        timestamp=int(match.group("ts")),
        kind=match.group("kind"),
        slot=int(match.group("slot")),
        format_text=match.group("fmt"),
        dtype_text=match.group("dtype"),
    )


_OVERFLOW_RE = re.compile(r"Opdebug\.Node_OpDebug\.(\d+)\.(\d+)\.(\d+)(?:\..*)?")
_ACL_JSON_RE = re.compile(r"acl_dump_\d+\.json")



class OverflowName(NamedTuple):
    """The numbers of an overflow record's name, ``Opdebug.Node_OpDebug.{task_id}.{stream_id}.{timestamp}``."""

    task_id: int
    stream_id: int
    timestamp: int


def parse_overflow_name(name: str) -> OverflowName | None:
    """The numbers of an overflow record's file name, None when it is not one."""
    match = _OVERFLOW_RE.fullmatch(name)
    return OverflowName(*(int(match.group(i)) for i in (1, 2, 3))) if match else None


def is_overflow_name(name: str) -> bool:
    """Whether a file name is an overflow record (``Opdebug.Node_OpDebug.*``)."""
    return _OVERFLOW_RE.fullmatch(name) is not None


def is_ignored_name(name: str) -> bool:
    """Files that are part of a dump folder but hold no tensor (configuration, kernel args)."""
    if name in IGNORED_FILES or _ACL_JSON_RE.fullmatch(name):
        return True
    # {op_type}.{op_name}.json kernel-argument files (save_kernel_args)
    return name.endswith(".json") and not is_overflow_name(name)


__all__ = ["NPY_CARRIERS", "NPY_FORM", "SYNC_FORM", "NpyName", "OverflowName", "SyncName", "is_ignored_name",
           "is_overflow_name", "kernel_type", "ms_dtype", "ms_format", "parse_npy_name", "parse_overflow_name",
           "parse_sync_name", "scope_name"]
