"""The hand-written ``__init__`` of the graph records a fusion rule's graph makes by the 10^4
(:class:`InputEdge`, :class:`OpNode`) and of the verdict records (:class:`TensorCheck`,
:class:`OpVerdict`): the same parameters, order and defaults as the dataclass fields, and the
same record as the generated constructor would build."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from record_init import assert_init_is_the_fields, generated

from compare.diverge.records import (
    InputEdge,
    NodeRole,
    OpNode,
    OpVerdict,
    SourceLine,
    TensorCheck,
    Verdict,
)

RECORDS = (InputEdge, OpNode, TensorCheck, OpVerdict)


@pytest.mark.parametrize("record", RECORDS)
def test_init_parameters_are_the_fields(record: type) -> None:
    assert_init_is_the_fields(record)


def _same(record: type, kwargs: dict, positional: int) -> None:
    names = [f.name for f in dataclasses.fields(record)]
    args = [kwargs[n] for n in names[:positional]]
    rest = {n: v for n, v in kwargs.items() if n not in names[:positional]}
    made = record(*args, **rest)
    assert vars(made) == vars(generated(record)(*args, **rest))
    assert list(vars(made)) == names
    assert made == record(**kwargs) and hash(made) == hash(record(**kwargs))
    assert pickle.loads(pickle.dumps(made)) == made
    assert dataclasses.replace(made) == made
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.index = 1  # type: ignore[misc]


texts = st.text(max_size=6)
roles = st.sampled_from(list(NodeRole))


@given(st.integers(0, 9), st.none() | texts, st.integers(0, 3), roles, texts, st.integers(0, 5))
def test_input_edge_as_generated(index: int, producer: str | None, output: int, role: NodeRole, name: str,
                                 positional: int) -> None:
    _same(InputEdge, {"index": index, "producer": producer, "output": output, "role": role, "name": name}, positional)


@given(texts, st.none() | texts, roles, st.integers(0, 2), st.booleans(), st.integers(0, 5))
def test_op_node_as_generated(name: str, op_type: str | None, role: NodeRole, edges: int, source: bool,
                              positional: int) -> None:
    inputs = tuple(InputEdge(i, name) for i in range(edges))
    _same(OpNode, {"name": name, "op_type": op_type, "role": role, "inputs": inputs,
                   "source": SourceLine("f.py", 3) if source else None}, positional)


def test_defaults() -> None:
    assert InputEdge(0, None) == InputEdge(index=0, producer=None, output=0, role=NodeRole.COMPUTE, name="")
    assert OpNode("a") == OpNode(name="a", op_type=None, role=NodeRole.COMPUTE, inputs=(), source=None)


floats = st.none() | st.floats(allow_nan=False)


@given(texts, st.sampled_from([None, True, False]), floats, st.integers(0, 2), st.integers(0, 8))
def test_tensor_check_as_generated(tensor_id: str, passed: bool | None, error: float | None, broken: int,
                                   positional: int) -> None:
    _same(TensorCheck, {"tensor_id": tensor_id, "passed": passed, "error": error,
                        "failed": tuple(("MaxRelDiff", float(i)) for i in range(broken)), "nan": broken, "inf": None,
                        "saturated": 0, "producer": InputEdge(broken, tensor_id) if broken else None}, positional)


@given(texts, st.none() | texts, st.integers(0, 9), st.sampled_from(list(Verdict)), floats, st.integers(0, 13))
def test_op_verdict_as_generated(op: str, op_type: str | None, position: int, verdict: Verdict,
                                 error: float | None, positional: int) -> None:
    check = TensorCheck(op, None)
    _same(OpVerdict, {"op": op, "op_type": op_type, "position": position, "verdict": verdict, "outputs": (check,),
                      "inputs": (), "error": error, "input_error": None, "amplification": error, "blame": (op,),
                      "source": SourceLine(op, 1), "rank": None, "iteration": position}, positional)
