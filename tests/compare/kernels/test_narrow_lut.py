"""The kernels read every decoded narrow-type array exactly: 1-byte ml_dtypes through the 256-entry
table (CODE_LUT8), the table types as float32 (compare.kernels.buffers)."""

from __future__ import annotations

import narrow_reference as ref
import numpy as np
import pytest

from compare.kernels import _abi
from compare.kernels.buffers import code_of, storage, table
from convert.codecs.dtypes import decode


@pytest.mark.parametrize("kind", ref.KINDS, ids=lambda k: k.name)
def test_decoded_arrays_reach_the_kernels_exactly(kind: ref.Kind) -> None:
    codes = np.arange(1 << kind.bits, dtype=np.uint8)
    array = decode(codes.tobytes(), kind.code, (codes.size,))  # one code a byte: unpacked (or 8-bit)
    buf, is_complex = storage(array)
    assert not is_complex
    if buf.dtype == np.float32:  # HiFloat8, float4_e1m2, HiFloat4
        values = buf.astype(np.float64)
    else:
        assert code_of(buf.dtype) == _abi.CODE_LUT8 and buf.dtype.itemsize == 1
        values = table(buf.dtype)[buf.view(np.uint8)]
    assert ref.same_values(values, ref.decode(kind.name, codes))
