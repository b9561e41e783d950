"""Writing nano operator dumps (:mod:`convert.codecs.nano` describes the layout): :func:`write_nano`.

Used by the tests (round trips, damaged files, end-to-end comparisons). The file is the uint64
head length T, the TLV head (magic, version id, input section tag 4, output section tag 5, each
descriptor followed by its sub-TLVs: 0 shape, 1 original shape, 2 origin name for outputs), then
the tensors' bytes in input then output order. Section and sub-TLV-list lengths are written as the
byte counts of what follows them (readers do not use them).

Encoding: the tensor bytes are what :func:`convert.codecs.dumpwrite.write_dump` stores for the same
array (:func:`convert.codecs.dumpwrite.tensor_bytes`, with the proto code of the graph data type); the
data type defaults to the graph code of the array's dtype. Every sub-TLV is written unless a spec
leaves it out (:attr:`NanoTensorSpec.omit`), to write the files a reader must accept without them.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Union

import numpy as np

from .dtypes import code_for_numpy, format_code
from .dumpwrite import tensor_bytes
from .nano import (
    INPUT_SECTION_TAG,
    NANO_MAGIC,
    ORIGIN_NAME_TAG,
    ORIGINAL_SHAPE_TAG,
    OUTPUT_SECTION_TAG,
    SHAPE_TAG,
    nano_data_type,
    proto_data_type,
)

#: Sub-TLVs a spec may leave out (:attr:`NanoTensorSpec.omit`).
SUB_TLVS = frozenset({"shape", "original_shape", "origin_name"})


@dataclass(frozen=True)
class NanoTensorSpec:
    """A tensor to write into a nano dump.

    ``data_type`` is a *graph* code (:class:`convert.codecs.nano.NanoDataType`); None: the graph code of
    ``array.dtype``. ``shape`` (default ``array.shape``) is recorded as given; ``original_shape``
    defaults to the shape; ``origin_name`` is written for outputs only. ``format`` is a name
    (``NC1HWC0``) or a code. ``original_data_type`` and ``original_format`` (outputs only) default
    to ``data_type`` and ``format``.

    Every sub-TLV is written, as the device runtime does, unless ``omit`` names it (``shape``,
    ``original_shape``, ``origin_name``). A reader peeks for the tag of an optional sub-TLV, so
    an omitted one is only absent when what follows does not start with its tag value: an input
    without its original shape followed by a float16 input (graph code 1) reads that input's
    data type as the tag 1 of an original shape -- the format is ambiguous there, readers and the
    reference tool alike.
    """

    array: np.ndarray
    format: str | int = "ND"
    data_type: int | None = None
    shape: tuple[int, ...] | None = None
    original_shape: tuple[int, ...] | None = None
    origin_name: str = ""
    address: int = 0
    address_type: int = 0
    device_offset: int = 0
    original_index: int = 0
    original_data_type: int | None = None
    original_format: int | None = None
    omit: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = set(self.omit) - SUB_TLVS
        if unknown:
            raise ValueError(f"omit: {sorted(unknown)} are not sub-TLVs (known: {sorted(SUB_TLVS)})")


NanoTensorLike = Union[NanoTensorSpec, np.ndarray]


@dataclass(frozen=True)
class _Encoded:
    descriptor: bytes
    payload: bytes


def _tlv(tag: int, value: bytes) -> bytes:
    return struct.pack("<II", tag, len(value)) + value


def _dims(tag: int, dims: Sequence[int]) -> bytes:
    return _tlv(tag, struct.pack(f"<{len(dims)}Q", *(int(d) for d in dims)))


def _encode(item: NanoTensorLike, output: bool) -> _Encoded:
    spec = item if isinstance(item, NanoTensorSpec) else NanoTensorSpec(np.asarray(item))
    array = np.asarray(spec.array)
    graph = int(spec.data_type) if spec.data_type is not None else nano_data_type(code_for_numpy(array.dtype))
    shape = tuple(int(d) for d in (array.shape if spec.shape is None else spec.shape))
    fmt = format_code(spec.format) if isinstance(spec.format, str) else int(spec.format)
    payload = tensor_bytes(array, proto_data_type(graph), shape)
    original = shape if spec.original_shape is None else tuple(int(d) for d in spec.original_shape)
    subs = b""
    if "shape" not in spec.omit:
        subs += _dims(SHAPE_TAG, shape)
    if "original_shape" not in spec.omit:
        subs += _dims(ORIGINAL_SHAPE_TAG, original)
    if output:
        if "origin_name" not in spec.omit:
            subs += _tlv(ORIGIN_NAME_TAG, spec.origin_name.encode("utf-8"))
        orig_dt = graph if spec.original_data_type is None else int(spec.original_data_type)
        orig_fmt = fmt if spec.original_format is None else int(spec.original_format)
        fixed = struct.pack("<iiiiiiQQQI", graph, fmt, spec.address_type, spec.original_index, orig_dt, orig_fmt,
                            spec.address, spec.device_offset, len(payload), len(subs))
    else:
        fixed = struct.pack("<iiiQQQI", graph, fmt, spec.address_type, spec.address, spec.device_offset,
                            len(payload), len(subs))
    return _Encoded(fixed + subs, payload)


def _section(tag: int, encoded: Sequence[_Encoded]) -> bytes:
    return _tlv(tag, struct.pack("<I", len(encoded)) + b"".join(e.descriptor for e in encoded))


def nano_head(
    inputs: Sequence[NanoTensorLike] = (), outputs: Sequence[NanoTensorLike] = (), *, version_id: int = 0
) -> tuple[bytes, bytes]:
    """(TLV head, tensor bytes) of a nano dump holding ``inputs`` and ``outputs``."""
    enc_in = [_encode(t, False) for t in inputs]
    enc_out = [_encode(t, True) for t in outputs]
    head = struct.pack("<II", NANO_MAGIC, version_id)
    head += _section(INPUT_SECTION_TAG, enc_in) + _section(OUTPUT_SECTION_TAG, enc_out)
    return head, b"".join(e.payload for e in enc_in + enc_out)


def write_nano(
    path: str | os.PathLike[str],
    *,
    inputs: Sequence[NanoTensorLike] = (),
    outputs: Sequence[NanoTensorLike] = (),
    version_id: int = 0,
) -> Path:
    """Write a nano dump file; return its path. Reading it back with
    :func:`convert.codecs.dumpfile.read_header` / :func:`~convert.codecs.dumpfile.read_tensor` (or
    :func:`convert.codecs.nano.read_nano` for every field) gives the same arrays, shapes and names."""
    head, data = nano_head(inputs, outputs, version_id=version_id)
    path = Path(path)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        f.write(data)
    return path


__all__ = ["SUB_TLVS", "NanoTensorLike", "NanoTensorSpec", "nano_head", "write_nano"]
