"""convert.codecs.ffts: the FFTS+ slice-attribute JSON and the merge of slices (pure numpy)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from convert.codecs.dumpfile import read_header
from convert.codecs.dumpwrite import write_dump
from convert.codecs.ffts import (
    DimRange,
    SliceAttr,
    merge_pieces,
    merged_path,
    merged_shape,
    parse_slice_attr,
    slice_attr_of,
)
from convert.errors import DumpFormatError
from convert.names.ascend import parse_offline_name

AUTO = {"threadMode": 1, "slice_instance_num": 2, "outputCutList": [[2, 1], [1, 1]],
        "output_tensor_slice": [[[{"lower": 0, "higher": 3}, {"lower": 0, "higher": 4}]],
                                [[{"lower": 3, "higher": 6}, {"lower": 0, "higher": 4}]]]}


def test_parse_automatic_attr() -> None:
    attr = parse_slice_attr(json.dumps(AUTO), "f")
    assert attr.thread_mode is True
    assert attr.slice_instance_num == 2
    assert attr.cut_axes(0) == (0,) and attr.merge_axis(0) == 0
    assert attr.cut_axes(1) == () and attr.merge_axis(1) is None
    assert attr.cut_axes(7) == ()  # an output the list does not name is not cut
    assert attr.has_cut
    assert attr.thread_shape(0, 0) == (3, 4) and attr.thread_shape(1, 0) == (3, 4)
    assert attr.input_tensor_slice == ()


def test_json_round_trip() -> None:
    attr = SliceAttr(False, 3, ((1, 3, 1, 1),), input_tensor_slice=(((DimRange(0, 1),),),),
                     output_tensor_slice=(((DimRange(0, 2), DimRange(5, 9)),),))
    assert parse_slice_attr(attr.to_json()) == attr


def test_manual_attr_without_slices_and_thread_mode() -> None:
    attr = parse_slice_attr('{"slice_instance_num": 4, "outputCutList": [[1, 1, 4, 1]]}')
    assert attr.thread_mode is False and attr.merge_axis(0) == 2 and attr.output_tensor_slice == ()


def test_no_cut_anywhere() -> None:
    assert not parse_slice_attr('{"slice_instance_num": 2, "outputCutList": [[1, 1], []]}').has_cut


@pytest.mark.parametrize("text, expected", [
    ("{not json", "is not JSON"),
    ("[1, 2]", "a JSON list, not an object"),
    ('{"outputCutList": [[2]]}', "has no 'slice_instance_num' (keys: outputCutList)"),
    ('{"slice_instance_num": 2}', "has no 'outputCutList'"),
    ('{"slice_instance_num": "2", "outputCutList": [[2]]}', "slice_instance_num is '2', not an integer"),
    ('{"slice_instance_num": true, "outputCutList": [[2]]}', "slice_instance_num is True, not an integer"),
    ('{"slice_instance_num": 2, "outputCutList": [2]}', "outputCutList[0] is int, not a list"),
    ('{"slice_instance_num": 2, "outputCutList": [[2.5]]}', "outputCutList[0][0] is 2.5, not an integer"),
    ('{"slice_instance_num": 2, "outputCutList": [[2]], "output_tensor_slice": [[[{"lower": 0}]]]}',
     "output_tensor_slice[0][0][0] is {'lower': 0}, not"),
    ('{"slice_instance_num": 2, "outputCutList": [[2]], "input_tensor_slice": [[[{"lower": 0, "higher": "x"}]]]}',
     "input_tensor_slice[0][0][0].higher is 'x', not an integer"),
])
def test_malformed_attr_is_diagnosed(text: str, expected: str) -> None:
    with pytest.raises(DumpFormatError) as info:
        parse_slice_attr(text, "dump/Add.a.1.2.3.4.0.0.0")
    assert expected in str(info.value)
    assert str(info.value).startswith("dump/Add.a.1.2.3.4.0.0.0: FFTS+ slice attribute")


def test_no_attr_is_diagnosed() -> None:
    with pytest.raises(DumpFormatError, match="has no DumpData.attr"):
        slice_attr_of((), "x")
    assert slice_attr_of((("whatever", json.dumps(AUTO)), ("second", "not json")), "x").slice_instance_num == 2


def test_thread_shape_errors() -> None:
    attr = parse_slice_attr(json.dumps(AUTO))
    with pytest.raises(DumpFormatError, match="lists 2 thread"):
        attr.thread_shape(2, 0, "p")
    with pytest.raises(DumpFormatError, match=r"output_tensor_slice\[0\] lists 1 output\(s\), no output 1"):
        attr.thread_shape(0, 1, "p")
    bad = SliceAttr(True, 1, ((2,),), output_tensor_slice=(((DimRange(4, 1),),),))
    with pytest.raises(DumpFormatError, match="higher < lower"):
        bad.thread_shape(0, 0, "p")


def test_merged_shape_and_misfits() -> None:
    assert merged_shape([(2, 3), (4, 3)], 0, ["a", "b"]) == (6, 3)
    assert merged_shape([(2, 3), (2, 5)], 1, ["a", "b"]) == (2, 8)
    assert merged_shape([(2, 3), (9, 9)], None, ["a", "b"]) == (2, 3)
    with pytest.raises(DumpFormatError, match=r"^b: FFTS\+ slice of shape \[2, 4\] does not fit the first slice \[2, 3\]"):
        merged_shape([(2, 3), (2, 4)], 0, ["a", "b"])
    with pytest.raises(DumpFormatError, match="^b: .*does not fit"):
        merged_shape([(2, 3), (2, 3, 1)], 0, ["a", "b"])
    with pytest.raises(DumpFormatError, match="cut axis 2 is beyond the 2 dim"):
        merged_shape([(2, 3), (2, 3)], 2, ["a", "b"])


def test_merge_pieces_reshapes_flat_data() -> None:
    full = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    pieces = [full[:, :1].reshape(-1), full[:, 1:].reshape(-1)]
    merged = merge_pieces(pieces, [(2, 1, 4), (2, 2, 4)], 1, ["a", "b"])
    assert merged.dtype == np.float32 and np.array_equal(merged, full)
    assert np.array_equal(merge_pieces(pieces, [(2, 1, 4), (2, 2, 4)], None, ["a", "b"]), full[:, :1])
    with pytest.raises(DumpFormatError, match=r"^b: FFTS\+ slice holds 16 element\(s\), its piece shape \[2, 3, 4\] needs 24"):
        merge_pieces(pieces, [(2, 1, 4), (2, 3, 4)], 1, ["a", "b"])


def test_merged_path() -> None:
    assert merged_path(Path("/d/MatMul.mm.3.2.1700000000000000.4.0.1.0")) == "MatMul.mm.3.2.*"


def test_writer_attrs_read_back(tmp_path: Path) -> None:
    text = json.dumps(AUTO)
    for version in (1, 2):
        path = write_dump(tmp_path / f"Add.a.1.2.1700000000000000.4.0.0.{version}", outputs=[np.zeros(3, np.float32)],
                          attrs=[("ffts", text), ("other", "x")], version=version)
        header = read_header(path)
        assert header.attrs == (("ffts", text), ("other", "x"))
        assert slice_attr_of(header.attrs, path) == parse_slice_attr(text)


@st.composite
def _cut(draw):
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    axis = draw(st.integers(0, ndim - 1))
    cuts = sorted(draw(st.sets(st.integers(1, shape[axis] - 1), max_size=shape[axis] - 1))) if shape[axis] > 1 else []
    seed = draw(st.integers(0, 2**32 - 1))
    dtype = draw(st.sampled_from([np.float32, np.float16, np.int32]))
    return shape, axis, cuts, seed, dtype


@given(_cut())
def test_split_then_merge_is_identity(case) -> None:
    shape, axis, cuts, seed, dtype = case
    full = (np.random.default_rng(seed).standard_normal(shape) * 100).astype(dtype)
    pieces = np.split(full, cuts, axis=axis)
    shapes = [p.shape for p in pieces]
    paths = [f"slice{k}" for k in range(len(pieces))]
    assert merged_shape(shapes, axis, paths) == full.shape
    merged = merge_pieces([p.reshape(-1) for p in pieces], shapes, axis, paths)
    assert merged.dtype == full.dtype
    assert np.array_equal(merged, full)


def test_offline_names_give_thread_id_and_ffts_task_type() -> None:
    long = parse_offline_name("MatMul.mm.3.2.1700000000000001.4.0.7.0")
    assert long is not None and long.ffts and long.thread_id == 7 and long.timestamp == 1700000000000001
    no_stream = parse_offline_name("MatMul.mm.3.1700000000000001.4.0.5.0")
    assert no_stream is not None and no_stream.thread_id == 5 and no_stream.ffts
    aicore = parse_offline_name("MatMul.mm.3.2.1700000000000001.0.0.1.0")
    assert aicore is not None and not aicore.ffts and aicore.thread_id == 1
    short = parse_offline_name("MatMul.mm.3.2.1700000000000001")
    assert short is not None and short.thread_id is None and not short.ffts
