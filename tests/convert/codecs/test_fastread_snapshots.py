"""convert.codecs.fastread: the plain view equals decode; small files read whole once inside
file_snapshots (same arrays, one open a file), and never kept outside it."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convert.codecs import dumpfile, dumpwrite, fastread
from convert.codecs.dtypes import decode
from convert.codecs.fastread import file_snapshots, read_tensor_mapped, view_plain

_CODES = sorted(fastread._MAPPED_CODES)


@settings(max_examples=200, deadline=None)
@given(code=st.sampled_from(_CODES), shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), data=st.data())
def test_the_plain_view_is_decode(code, shape, data):
    """Random bytes (NaN, inf, zero and subnormal patterns among them) of every mapped code."""
    from convert.codecs.dtypes import nbytes_for

    shape = tuple(shape)
    needed = nbytes_for(code, math.prod(shape))
    raw = np.frombuffer(data.draw(st.binary(min_size=needed, max_size=needed)), dtype=np.uint8)
    got, want = view_plain(raw, code, shape), decode(raw, code, shape)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def _dump(path, arrays):
    dumpwrite.write_dump(path, inputs=[dumpwrite.TensorSpec(a) for a in arrays], outputs=[], op_name="conv")
    return dumpfile.read_header(path)


@pytest.fixture
def opens(monkeypatch):
    count = [0]
    real = os.open

    def counting(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    return count


_ARRAYS = [np.arange(12, dtype=np.float16).reshape(3, 4), np.array([np.nan, np.inf, -0.0, 1e-40], np.float32),
           np.arange(6, dtype=np.int64), np.array([True, False, True])]


def test_a_small_file_is_read_once_inside_snapshots(tmp_path, opens):
    header = _dump(tmp_path / "Conv2D.conv.1.1.1700000000000000", _ARRAYS)
    wanted = [dumpfile.read_tensor(header, info) for info in header.tensors]
    opens[0] = 0
    with file_snapshots():
        got = [read_tensor_mapped(header, info) for info in header.tensors]
        got += [read_tensor_mapped(header, info) for info in header.tensors]
    assert opens[0] == 1
    for a, b in zip(got, wanted + wanted):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        assert not a.flags.writeable
    assert fastread._snapshot.data is None  # let go when the block ends


def test_outside_snapshots_every_read_reads_the_file(tmp_path, opens):
    path = tmp_path / "Conv2D.conv.1.1.1700000000000000"
    header = _dump(path, [np.zeros(8, np.float32)])
    opens[0] = 0
    with file_snapshots():
        first = read_tensor_mapped(header, header.tensors[0])
    header = _dump(path, [np.ones(8, np.float32)])  # the same size, other values
    opens[0] = 0
    assert read_tensor_mapped(header, header.tensors[0]).tolist() == [1.0] * 8
    assert first.tolist() == [0.0] * 8 and opens[0] == 1


def test_snapshots_nest_and_take_turns_between_files(tmp_path, opens):
    one = _dump(tmp_path / "Conv2D.a.1.1.1700000000000000", _ARRAYS[:2])
    two = _dump(tmp_path / "Conv2D.b.1.1.1700000000000000", _ARRAYS[2:])
    opens[0] = 0
    with file_snapshots():
        with file_snapshots():
            read_tensor_mapped(one, one.tensors[0])
        read_tensor_mapped(one, one.tensors[1])  # the outer block still holds it
        read_tensor_mapped(two, two.tensors[0])
        back = read_tensor_mapped(one, one.tensors[0])  # a thread keeps the last file only
    assert opens[0] == 3 and back.tolist() == _ARRAYS[0].tolist()


def test_a_truncated_file_is_diagnosed_as_before(tmp_path):
    header = _dump(tmp_path / "Conv2D.conv.1.1.1700000000000000", _ARRAYS)
    info = header.tensors[-1]
    with open(header.path, "r+b") as f:
        f.truncate(info.offset + 1)
    with pytest.raises(dumpfile.DumpFormatError) as slow:
        dumpfile.read_tensor(header, info)
    with file_snapshots(), pytest.raises(dumpfile.DumpFormatError) as fast:
        read_tensor_mapped(header, info)
    assert str(fast.value) == str(slow.value)
