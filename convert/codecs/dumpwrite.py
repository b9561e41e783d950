"""Writing Ascend operator dump files: :func:`write_dump` and the :class:`TensorSpec` it takes.

Both layouts of :mod:`convert.codecs.dumpfile` are written -- version 2 (the binary "big dump": an 8-byte
header length, the serialized ``DumpData`` without ``data`` values, then the tensors' bytes in
input, output, buffer order) and version 1 (one serialized ``DumpData`` holding the bytes in its
``data`` fields). Used by ``vconvert data`` (``.npy`` -> dump) and by the synthetic test dumps;
reading a written file back gives the same bytes, dtypes and shapes.

Encoding: each tensor's array is stored in the dtype of its data-type code (the array's own code
unless one is given); UINT1 is packed MSB first; the narrow 8/6/4/2-bit types are packed little end
first (or one element a byte, on request) as :mod:`convert.codecs.narrow` describes; COMPLEX32 is written as
float16 (real, imaginary) pairs; an undecodable code (``DT_STRING`` ...) gets the
array's raw bytes. The recorded shape is the given one, even when it disagrees with the array.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Union

import numpy as np
from google.protobuf.message import Message

from . import dump_proto
from .dtypes import DataType, UnsupportedDataType, code_for_numpy, element_count, format_code, narrow_type, numpy_dtype
from .narrow import encode_codes, pack_codes


@dataclass
class TensorSpec:
    """A tensor to write into a dump.

    ``data_type`` defaults to the code of ``array.dtype`` (bool -> DT_BOOL, bfloat16 -> DT_BF16,
    float64 -> DT_DOUBLE ...); when given, a decodable type's array is converted to its storage
    dtype, and an undecodable type (``DT_STRING`` ...) gets the array's raw bytes. ``shape``
    (default ``array.shape``) is recorded as given, even if it disagrees with the array (useful
    for writing deliberately inconsistent files). ``format`` is a name (``NC1HWC0``) or code.

    UINT1 (``data_type=29``): ``array`` holds the bit values (nonzero = 1) with
    ``prod(shape)`` elements, packed MSB first on writing; a uint8 array of exactly
    ``ceil(prod(shape)/8)`` bytes (when that differs from ``prod(shape)``) is taken as already
    packed bits.

    The narrow types (``data_type`` 28, 30, 31, 33-41): a uint8 array holds the codes (bit
    patterns) themselves; any other array is converted by value -- to the ml_dtypes type of the
    code (int4, float8_e4m3fn, float4_e2m1fn ...; so an ml_dtypes array needs no ``data_type``),
    or, for HiFloat8 / float4_e1m2 / HiFloat4, looked up exactly in the type's values (a value the
    type does not have is a ValueError). ``packed`` (default) packs sub-byte elements little end
    first; ``packed=False`` writes one element a byte (its code in the low bits). COMPLEX32
    (``data_type=32``): a complex array, written as float16 (real, imaginary) pairs.
    """

    array: np.ndarray
    format: str | int = "ND"
    data_type: int | None = None
    shape: tuple[int, ...] | None = None
    original_shape: tuple[int, ...] | None = None
    address: int = 0
    sub_format: int = 0
    packed: bool = True


TensorLike = Union[TensorSpec, np.ndarray]


@dataclass(frozen=True)
class _Encoded:
    spec: TensorSpec
    code: int
    format: int
    shape: tuple[int, ...]
    payload: bytes


def _encode(item: TensorLike) -> _Encoded:
    spec = item if isinstance(item, TensorSpec) else TensorSpec(np.asarray(item))
    array = np.asarray(spec.array)
    code = int(spec.data_type) if spec.data_type is not None else code_for_numpy(array.dtype)
    shape = tuple(int(d) for d in (array.shape if spec.shape is None else spec.shape))
    fmt = format_code(spec.format) if isinstance(spec.format, str) else int(spec.format)
    return _Encoded(spec, code, fmt, shape, _payload(array, code, shape, packed=spec.packed))


def _payload(array: np.ndarray, code: int, shape: tuple[int, ...], *, packed: bool = True) -> bytes:
    if code == DataType.DT_UINT1:
        count = element_count(shape)
        packed_size = (count + 7) // 8
        if array.size != count and array.dtype == np.uint8 and array.size == packed_size:
            return array.tobytes()
        if array.size != count:
            raise ValueError(
                f"UINT1 tensor of shape {shape} needs {count} bit values or {packed_size} packed "
                f"bytes, got {array.size} elements"
            )
        return np.packbits(array.reshape(-1) != 0).tobytes()
    narrow = narrow_type(code)
    if narrow is not None:
        codes = encode_codes(array, narrow)
        return (pack_codes(codes, narrow.bits) if packed else codes).tobytes()
    if code == DataType.DT_COMPLEX32:
        parts = np.ascontiguousarray(array, dtype=np.complex64).reshape(-1).view(np.float32)
        return parts.astype("<f2").tobytes()
    try:
        storage = numpy_dtype(code)
    except UnsupportedDataType:
        return np.ascontiguousarray(array).tobytes()
    return np.ascontiguousarray(array, dtype=storage).tobytes()


def _fill(target: Message, enc: _Encoded, with_data: bool) -> None:
    target.data_type = enc.code
    target.format = enc.format
    target.shape.SetInParent()
    target.shape.dim.extend(enc.shape)
    if enc.spec.original_shape is not None:
        target.original_shape.SetInParent()
        target.original_shape.dim.extend(int(d) for d in enc.spec.original_shape)
    target.size = len(enc.payload)
    target.address = int(enc.spec.address)
    target.sub_format = int(enc.spec.sub_format)
    if with_data:
        target.data = enc.payload


def write_dump(
    path: str | os.PathLike[str],
    *,
    inputs: Sequence[TensorLike] = (),
    outputs: Sequence[TensorLike] = (),
    op_name: str = "",
    version: int = 2,
    dump_time: int = 0,
    buffers: Sequence[bytes] = (),
    attrs: Sequence[tuple[str, str]] = (),
) -> Path:
    """Write an Ascend dump file (version 2 binary or version 1 pure protobuf); return its path.

    ``inputs`` / ``outputs`` are :class:`TensorSpec` or plain arrays; ``buffers`` raw L1
    buffer contents; ``attrs`` the ``(name, value)`` pairs of ``DumpData.attr`` (an FFTS+ slice
    file's first attr holds its slice-attribute JSON, :mod:`convert.codecs.ffts`). The DumpData ``version`` string is ``"2.0"`` / ``"1.0"``. Reading the file
    back with :func:`convert.codecs.dumpfile.read_header` / :func:`~convert.codecs.dumpfile.read_tensor` gives
    the same bytes, dtypes and shapes.
    """
    if version not in (1, 2):
        raise ValueError(f"dump version must be 1 or 2, not {version!r}")
    enc_in = [_encode(t) for t in inputs]
    enc_out = [_encode(t) for t in outputs]
    inline = version == 1
    msg = dump_proto.DumpData(version=f"{version}.0", dump_time=int(dump_time), op_name=op_name)
    for enc in enc_out:
        _fill(msg.output.add(), enc, inline)
    for enc in enc_in:
        _fill(msg.input.add(), enc, inline)
    for name, value in attrs:
        msg.attr.add(name=name, value=value)
    for blob in buffers:
        buf = msg.buffer.add(buffer_type=0, size=len(blob))
        if inline:
            buf.data = bytes(blob)
    header = msg.SerializeToString()
    path = Path(path)
    with open(path, "wb") as f:
        if inline:
            f.write(header)
        else:
            f.write(struct.pack("<Q", len(header)))
            f.write(header)
            for enc in enc_in + enc_out:
                f.write(enc.payload)
            for blob in buffers:
                f.write(bytes(blob))
    return path


def tensor_bytes(array: np.ndarray, code: int, shape: tuple[int, ...]) -> bytes:
    """The bytes :func:`write_dump` stores for ``array`` as proto data type ``code`` recorded with
    ``shape`` (the encoding policy of the module docstring; :mod:`convert.codecs.nano_write` uses it)."""
    return _payload(np.asarray(array), int(code), tuple(int(d) for d in shape))


__all__ = ["TensorLike", "TensorSpec", "tensor_bytes", "write_dump"]
