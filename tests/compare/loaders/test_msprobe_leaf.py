""":func:`compare.loaders.msprobe._tensor` reads msprobe's usual leaf (four float statistics, a text
or no ``md5``) without :func:`~compare.loaders.msprobe._stats`'s general rules, and remembers data
types per ``dump.json``: on any leaf (NaN, inf, zero, integers, bools, null, text, missing keys)
it gives what the general rules give."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from compare.loaders.msprobe import _Files, _leaf_tensor, _stats, _tensor
from compare.records import TensorKind
from compare.tensor_table import TensorTable
from convert.names.msprobe import msprobe_dtype

JSON_PATH = Path("/d/dump.json")

values = (st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, math.nan, math.inf])
          | st.integers(-10**400, 10**400) | st.booleans() | st.none() | st.text(max_size=6))
dtypes = st.sampled_from(["torch.float32", "torch.bfloat16", "Float16", "torch.int64", "torch.bool", "weird", ""])


@st.composite
def leaves(draw: st.DrawFn) -> dict:
    item: dict = {"type": "torch.Tensor"}
    if draw(st.booleans()):  # msprobe's usual item: four floats, a text or no md5
        for key in ("Max", "Min", "Mean", "Norm"):
            item[key] = draw(st.floats(allow_nan=True, allow_infinity=True))
        if draw(st.booleans()):
            item["md5"] = draw(st.text(max_size=8))
    else:
        for key in ("Max", "Min", "Mean", "Norm", "md5"):
            if draw(st.booleans()):
                item[key] = draw(values)
    if draw(st.booleans()):
        item["dtype"] = draw(dtypes | st.integers())
    item["shape"] = draw(st.lists(st.integers(0, 5), max_size=3) | st.lists(values, max_size=2) | values)
    if draw(st.booleans()):
        item["requires_grad"] = draw(values)
    if draw(st.booleans()):
        item["data_name"] = draw(st.sampled_from(["-1", "", "a.pt", "b.npy", "../x.pt", "c.bin"]) | values)
    return item


def _itemsize(dtype: str) -> int:
    try:
        return np.dtype(dtype).itemsize
    except (TypeError, ValueError):
        return 0


@given(leaves(), st.sampled_from(TensorKind), st.integers(0, 9))
def test_leaf_as_the_general_rules(item: dict, kind: TensorKind, index: int) -> None:
    files = _Files(folder=Path("/d/dump_tensor_data"), names={"a.pt", "b.npy"}, used=set())
    ref, problem = _tensor("Functional.x.0.forward", kind, index, item, files, JSON_PATH, "label")
    dtype_text = item.get("dtype")
    dtype = msprobe_dtype(dtype_text) if isinstance(dtype_text, str) else "unknown"
    assert ref.dtype == dtype and ref.kind is kind and ref.index == index and ref.label == "label"
    grad = item.get("requires_grad")
    assert ref.requires_grad is (grad if grad is True or grad is False else None)
    shape = item["shape"]
    if problem is not None:  # a malformed shape: no statistics, the reader refuses
        assert ref.shape == () and ref.stats is None and ref.nbytes == 0 and ref.reader is not None
        return
    assert ref.shape == tuple(shape) and ref.nbytes == math.prod(shape) * _itemsize(dtype)
    expected = _stats(item)
    data_name = item.get("data_name")
    with_data = isinstance(data_name, str) and data_name not in ("", "-1")
    got = ref.stats
    if with_data:
        expected = expected or None
    assert (got is None) == (expected is None)
    if got is not None:
        assert list(got) == list(expected)
        for key in got:
            a, b = got[key], expected[key]
            assert type(a) is type(b), key
            assert a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)), key
    assert ref.stats_source == f"dump.json Functional.x.0.forward {kind.value} {index}"
    assert (ref.reader is None) == (not with_data)


def _fields(ref) -> tuple:
    return (ref.dtype, ref.shape, ref.nbytes, ref.stats_source, ref.requires_grad, repr(ref.stats),
            ref.reader is None)


@given(st.lists(leaves(), max_size=8))
def test_what_a_file_remembers_changes_nothing(items: list[dict]) -> None:
    """Types and shapes remembered across the leaves of one ``dump.json`` (a shape seen before is
    not checked again) give what each leaf gives alone."""
    shared = _Files(folder=Path("/d/dump_tensor_data"), names={"a.pt", "b.npy"}, used=set())
    for index, item in enumerate(items):
        alone = _Files(folder=Path("/d/dump_tensor_data"), names={"a.pt", "b.npy"}, used=set())
        ref, problem = _tensor("Functional.x.0.forward", TensorKind.INPUT, index, item, shared, JSON_PATH)
        ref_alone, problem_alone = _tensor("Functional.x.0.forward", TensorKind.INPUT, index, item, alone, JSON_PATH)
        assert problem == problem_alone and _fields(ref) == _fields(ref_alone)


@given(st.lists(st.tuples(leaves(), st.sampled_from(TensorKind)), max_size=6))
def test_a_leaf_as_columns_is_its_record(items: list[tuple[dict, TensorKind]]) -> None:
    """A tensor leaf appended to a TensorTable (:func:`_leaf_tensor`: columns for msprobe's usual
    statistics item, its record otherwise) gives back, as ``table.ref``, the record :func:`_tensor`
    builds of it, field for field; the problems and the file's counts are the same."""
    table = TensorTable(JSON_PATH, names=["Functional.x.0.forward"])
    table_files = _Files(folder=Path("/d/dump_tensor_data"), names={"a.pt", "b.npy"}, used=set())
    record_files = _Files(folder=Path("/d/dump_tensor_data"), names={"a.pt", "b.npy"}, used=set())
    problems: list[str] = []
    expected_problems = []
    rows: list[tuple] = []
    for index, (item, kind) in enumerate(items):
        _leaf_tensor(rows, table.special, 0, "Functional.x.0.forward", kind, index, item, table_files, JSON_PATH,
                     f"l{index}", problems)
        ref, problem = _tensor("Functional.x.0.forward", kind, index, item, record_files, JSON_PATH, f"l{index}")
        if problem is not None:
            expected_problems.append(problem)
        table.set_tensors(rows)
        got = table.ref(index)
        assert {k: v for k, v in vars(got).items() if k not in ("reader", "stats")} == {
            k: v for k, v in vars(ref).items() if k not in ("reader", "stats")}
        assert repr(got.stats) == repr(ref.stats) and (got.reader is None) == (ref.reader is None)
        assert table.is_input[index] is (kind is TensorKind.INPUT) and table.index[index] == index
    assert problems == expected_problems
    assert vars(table_files) == vars(record_files)
