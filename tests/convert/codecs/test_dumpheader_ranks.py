"""A dump whose tensor shape has more than MAX_RANK dimensions is refused at that tensor's data,
inputs before outputs, shape before original shape (the check folded into _tensor_info)."""

from __future__ import annotations

import numpy as np
import pytest

from convert.codecs import dumpfile, dumpwrite
from convert.codecs.dumpwire import MAX_RANK
from convert.errors import DumpFormatError

_TOO_MANY = (1,) * (MAX_RANK + 1)


def _write(tmp_path, inputs, outputs):
    path = tmp_path / "Conv2D.conv.1.1.1700000000000000"
    return dumpwrite.write_dump(path, inputs=inputs, outputs=outputs, op_name="conv")


@pytest.mark.parametrize("bad", ["input", "output"])
def test_the_first_tensor_of_too_many_dimensions_is_named(tmp_path, bad):
    ok = dumpwrite.TensorSpec(np.zeros(4, np.float32))
    wide = dumpwrite.TensorSpec(np.zeros(1, np.float32), shape=_TOO_MANY)
    path = _write(tmp_path, [ok, wide] if bad == "input" else [ok, ok], [wide, wide] if bad == "output" else [ok])
    with pytest.raises(DumpFormatError) as error:
        dumpfile.read_header(path)
    assert f"{bad} {1 if bad == 'input' else 0}: its shape has {MAX_RANK + 1} dimensions" in str(error.value)


def test_max_rank_itself_is_read(tmp_path):
    spec = dumpwrite.TensorSpec(np.zeros(1, np.float32), shape=(1,) * MAX_RANK)
    header = dumpfile.read_header(_write(tmp_path, [spec], []))
    assert header.inputs[0].shape == (1,) * MAX_RANK
