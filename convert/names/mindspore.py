"""MindSpore's names: data types and formats as its dump files, statistics CSVs and
execution-order files write them, mapped to vcompare's (numpy-style dtype names, layout names);
the scope name a dump-file name spells (``--`` for ``/``) and the op type a kernel name carries."""

from __future__ import annotations

import re

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
