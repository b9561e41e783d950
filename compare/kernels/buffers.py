"""Storage buffers: one side of a pair as the kernels read it (a flat, native-endian buffer and
its type code, see :mod:`compare.kernels._abi`), and the kernels' scratch tiles.

:func:`storage` makes a buffer from any array (no copy for the dtypes the kernels decode
themselves); :func:`raw` hands one to a kernel as bytes plus code; :func:`tile` is a scratch buffer
(with the 256-entry decode table of a 1-byte type).
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import CompareError
from . import _abi
from ._abi import CODES, TILE


def _is_bfloat16(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is ml_dtypes' bfloat16 (a 2-byte void type to numpy)."""
    return dtype.kind == "V" and dtype.itemsize == 2 and dtype.name == "bfloat16"


def storage(a: np.ndarray, side: str = "left") -> tuple[np.ndarray, bool]:
    """Flatten one side to a native-endian, C-contiguous 1-D **storage buffer** the kernels read.

    float16 -> its bits as uint16 and bfloat16 -> its bits as int16 (both decoded to float64 in
    the kernel, no widened copy); float32/float64 kept; bool, int8/uint8, int32/uint32 and
    int64/uint64 kept (converted exactly to float64 in the kernel as they are read: no widened
    copy); int16/uint16 kept as the record dtypes ``_abi.I16_CARRIER`` / ``U16_CARRIER`` (same
    bytes, a different name: int16/uint16 themselves mean bfloat16/binary16 bits); 1-byte
    ml_dtypes (float8_*, float4/float6, int4/uint4 stored one a byte) kept, decoded in the kernel
    through a 256-entry table (CODE_LUT8); longdouble -> float64; other ml_dtypes -> float32 (a
    widened copy); complex -> its interleaved ``(real, imag)`` floats, 2 values per element (returns
    True as the second item). A contiguous native-endian input is not copied. Other dtypes raise
    CompareError.
    """
    kind = a.dtype.kind
    is_complex = False
    if kind == "c":
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        parts = np.ascontiguousarray(a.reshape(-1))
        a = parts.view(np.dtype(f"f{parts.dtype.itemsize // 2}"))  # re0, im0, re1, im1, ...
        is_complex = True
        kind = "f"
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if kind == "f":
        if a.dtype.itemsize == 2:
            a = np.ascontiguousarray(a.reshape(-1)).view(np.uint16)
        elif a.dtype.itemsize > 8:
            a = a.astype(np.float64)
    elif kind == "b":
        pass  # read in place (CODE_BOOL)
    elif kind in "iu":
        if a.dtype.itemsize == 2:
            carrier = _abi.I16_CARRIER if kind == "i" else _abi.U16_CARRIER
            a = np.ascontiguousarray(a.reshape(-1)).view(carrier)
    elif kind == "V":  # ml_dtypes: bfloat16, float8_*, int4 ...
        if _is_bfloat16(a.dtype):
            a = np.ascontiguousarray(a.reshape(-1)).view(np.int16)
        elif a.dtype.itemsize == 1 and not a.dtype.names:
            pass  # read in place through a 256-entry decode table (CODE_LUT8)
        else:
            try:
                a = a.astype(np.float32)
            except (TypeError, ValueError) as exc:
                raise CompareError(f"cannot compare {side} data of dtype {a.dtype}: {exc}") from exc
    else:
        raise CompareError(f"cannot compare {side} data of dtype {a.dtype}")
    return np.ascontiguousarray(a.reshape(-1)), is_complex


#: Storage dtypes the kernels read directly (see :func:`storage`).
STORAGE_DTYPES = tuple(CODES)



def code_of(dtype: np.dtype) -> int | None:
    """The storage code of a storage buffer's dtype (see :func:`storage`), or None."""
    code = CODES.get(dtype)
    if code is None and dtype.kind in "fV" and dtype.itemsize == 1 and not dtype.names:  # float8_e5m2 is "f"
        return _abi.CODE_LUT8
    return code


def raw(buf: np.ndarray) -> tuple[np.ndarray, int]:
    """A storage buffer as the kernels take it: its bytes (always a read-only view, whether the
    buffer is a writable array or a read-only file map, so numba's dispatch compiles each pass for
    one array type, not two) and its type code."""
    view = buf.view(np.uint8)
    view.flags.writeable = False
    return view, code_of(buf.dtype)  # type: ignore[return-value]


@functools.lru_cache(maxsize=64)
def table(dtype: np.dtype) -> np.ndarray:
    """The float64 value of each of the 256 bytes of a 1-byte type (NaN where the type has NaN)."""
    with np.errstate(all="ignore"):
        return np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64)


def tile(buf: np.ndarray | None = None) -> np.ndarray:
    """A kernel scratch buffer (the kernels allocate nothing themselves): the tile, then the
    decode table of ``buf`` when it is a 1-byte CODE_LUT8 buffer."""
    scratch = np.empty(_abi.SCRATCH, dtype=np.float64)
    if buf is not None and code_of(buf.dtype) == _abi.CODE_LUT8:
        scratch[TILE:] = table(buf.dtype)
    return scratch


__all__ = ["STORAGE_DTYPES", "code_of", "raw", "storage", "table", "tile"]
