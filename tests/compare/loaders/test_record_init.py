"""The hand-written ``__init__`` of the frozen records loaders and pairing make by the 10^5
(:class:`TensorRef`, :class:`OpDump`, :class:`Pair`): the same parameters, order and defaults as the
dataclass fields, and the same record as the generated constructor would build."""

from __future__ import annotations

import dataclasses
import pickle
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from record_init import assert_init_is_the_fields, generated

from compare.records import OpDump, Pair, PairStatus, TensorKind, TensorRef

RECORDS = (TensorRef, OpDump, Pair)


@pytest.mark.parametrize("record", RECORDS)
def test_init_parameters_are_the_fields(record: type) -> None:
    assert_init_is_the_fields(record)


texts = st.text(max_size=8)
optional_texts = st.none() | texts
shapes = st.lists(st.integers(0, 9), max_size=4).map(tuple)


@st.composite
def tensors(draw: st.DrawFn) -> dict:
    return dict(op_name=draw(texts), kind=draw(st.sampled_from(TensorKind)), index=draw(st.integers(0, 99)),
                dtype=draw(texts), format=draw(texts), shape=draw(shapes), path=Path("x") / draw(texts),
                original_shape=draw(shapes), address=draw(st.integers(0, 9)), nbytes=draw(st.integers(0, 99)),
                stats=draw(st.none() | st.dictionaries(texts, st.floats(allow_nan=True) | texts, max_size=3)),
                stats_source=draw(texts), remark=draw(texts), label=draw(texts),
                requires_grad=draw(st.none() | st.booleans()))


def _same(record: type, kwargs: dict, positional: int) -> None:
    names = [f.name for f in dataclasses.fields(record)]
    args = [kwargs[n] for n in names[:positional]]
    rest = {n: v for n, v in kwargs.items() if n not in names[:positional]}
    made = record(*args, **rest)
    built = generated(record)(*args, **rest)
    assert vars(made) == vars(built)
    assert list(vars(made)) == names
    assert made == record(**kwargs) and hash(made) == hash(record(**kwargs))
    assert pickle.loads(pickle.dumps(made)) == made
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.index = 1  # type: ignore[misc]


@given(tensors(), st.integers(0, 7))
def test_tensor_ref_as_generated(kwargs: dict, positional: int) -> None:
    _same(TensorRef, kwargs, positional)
    ref = TensorRef(**kwargs)
    assert dataclasses.replace(ref, index=ref.index + 1).index == ref.index + 1


@given(tensors(), texts, optional_texts, st.integers(0, 9), st.integers(0, 3))
def test_op_dump_and_pair_as_generated(tensor: dict, name: str, error: str | None, index: int,
                                       positional: int) -> None:
    ref = TensorRef(**tensor)
    _same(OpDump, dict(name=name, op_type=error, path=Path(name or "p"), files=(Path("f"),), inputs=(ref,),
                       outputs=(), error=error, timestamp=index, arguments=(), stack=(name,)), positional)
    _same(Pair, dict(index=index, op_type=error, left_op=name, right_op="*", tensor_id=error, left=ref, right=None,
                     status=PairStatus.MISSING_RIGHT, reason=error, golden_format=None, target_shape=(index,),
                     convert=False, op_sequence=index, expected_gap=error), positional)


@pytest.mark.parametrize("record", RECORDS)
def test_instances_share_one_key_table(record: type) -> None:
    """The fields are stored one by one in field order, so every instance's ``__dict__`` is a
    split dict sharing the class's key table: smaller than the same dict built whole (bytes, not time)."""
    names = [f.name for f in dataclasses.fields(record)]
    made = [record(*[Path(str(i)) if n == "path" else i for n in names]) for i in range(3)]
    for one in made:
        assert sys.getsizeof(vars(one)) < sys.getsizeof(dict(vars(one)))
