"""Pairing's shortcuts (issue 31, load): tensors paired by place when both operators hold the same
indexes, ``ND`` pairs answered before the layout rules, the float rule's quant filter. Each must
give the rows and rules the general path gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from compare.pairing import rows as rows_module
from compare.pairing.fusion_groups import group_ops
from compare.pairing.quant_rule import DEQUANT_PATTERNS, PATTERN_CORE, QUANT_PATTERNS, apply_quant_filter
from compare.pairing.rows import KINDS, op_tensor_rows
from compare.pairing.rule_records import FusionRule, OutputDesc, RuleOp
from compare.pairing.user_mapping import tensor_pair
from compare.records import OpDump, PairStatus, TensorKind, TensorRef

PATH = Path("dump.json")


def _ref(op: str, kind: TensorKind, index: int, shape: tuple[int, ...] = (2, 3), fmt: str = "ND") -> TensorRef:
    return TensorRef(op, kind, index, "float32", fmt, shape, PATH)


def _op(name: str, inputs: tuple[int, ...], outputs: tuple[int, ...], fmt: str = "ND") -> OpDump:
    return OpDump(name=name, op_type="add", path=PATH,
                  inputs=tuple(_ref(name, TensorKind.INPUT, i, fmt=fmt) for i in inputs),
                  outputs=tuple(_ref(name, TensorKind.OUTPUT, i, fmt=fmt) for i in outputs))


def _by_lookup(monkeypatch: pytest.MonkeyPatch, *args) -> list:
    """The rows with the shortcut turned off (every tensor looked up by its index)."""
    with monkeypatch.context() as patch:
        patch.setattr(rows_module, "_same_indexes", lambda lefts, rights: False)
        return op_tensor_rows(*args)


@pytest.mark.parametrize("left,right", [
    (((0, 1), (0,)), ((0, 1), (0,))),  # the usual case: the shortcut
    (((0, 3), (1,)), ((0, 3), (1,))),  # gaps left by arguments: the shortcut too
    (((0, 1), (0,)), ((0, 2), (0, 1))),  # different indexes: looked up
    (((1, 0), ()), ((1, 0), ())),  # not increasing: looked up
    (((0, 0), ()), ((0, 0), ())),  # an index twice: looked up (the last one wins)
    (((), ()), ((), ())),  # no tensor: one row says so
])
def test_paired_by_place_is_paired_by_index(monkeypatch: pytest.MonkeyPatch, left, right) -> None:
    a, b = _op("l", *left), _op("r", *right)
    args = (3, KINDS, a, b, tensor_pair)
    assert op_tensor_rows(*args) == _by_lookup(monkeypatch, *args)


def test_one_sided_ops_keep_their_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    a = _op("l", (0, 2), (0,))
    for args in ((0, KINDS, a, None, tensor_pair), (0, KINDS, None, a, tensor_pair, "why")):
        rows = op_tensor_rows(*args)
        assert rows == _by_lookup(monkeypatch, *args)
        assert {r.status for r in rows} <= {PairStatus.MISSING_LEFT, PairStatus.MISSING_RIGHT}


@pytest.mark.parametrize("left_shape,right_shape", [((2, 3, 4, 5), (2, 3, 4, 5)), ((1, 2, 3, 4, 5),) * 2,
                                                    ((2, 3),) * 2, ((6,), (2, 3))])
def test_nd_pairs_as_the_layout_rules_say(left_shape, right_shape) -> None:
    base = dict(index=0, op_type="add", left_op="l", right_op="r", op_sequence=0)
    a = _ref("l", TensorKind.OUTPUT, 0, left_shape)
    b = _ref("r", TensorKind.OUTPUT, 0, right_shape)
    pair = tensor_pair(base, a, b)
    # the same pair through the general rules: "nd" is the same plain layout, not the string "ND"
    general = tensor_pair(base, _ref("l", TensorKind.OUTPUT, 0, left_shape, "nd"),
                          _ref("r", TensorKind.OUTPUT, 0, right_shape, "nd"))
    assert (pair.golden_format, pair.target_shape, pair.convert, pair.tensor_id) == (
        general.golden_format, general.target_shape, general.convert, general.tensor_id)


def test_every_quant_pattern_holds_the_core() -> None:
    assert all(PATTERN_CORE in pattern for pattern in (*QUANT_PATTERNS, *DEQUANT_PATTERNS))


def _rule(ops: list[RuleOp]) -> FusionRule:
    groups = group_ops(ops)
    return FusionRule(Path("rule.json"), {o.name: o for o in ops}, groups, {o.name: g for g in groups for o in g.ops},
                      ["g"], [], warnings=["a warning"])


def _rop(name: str, op_id: int, inputs: tuple[tuple[str, int], ...] = (), flagged: bool = False) -> RuleOp:
    return RuleOp(name, "Conv2D", op_id, inputs, (name,), (OutputDesc(0, name, 0, "NCHW", None, "DT_FLOAT16"),),
                  quant_filtered=flagged)


def test_a_float_rule_keeps_its_groups_flags_and_warnings() -> None:
    rule = _rule([_rop("a", 0), _rop("b", 1, (("a", 0),), flagged=True), _rop("c", 2, (("b", 0),))])
    filtered = apply_quant_filter(rule)
    assert filtered.quant_filter_applied and filtered.groups is rule.groups
    assert filtered.warnings == ["a warning"] and filtered.warnings is not rule.warnings
    assert filtered.skip_reasons == {"b": "between a quant and a dequant op: int8/int32 data has no float golden"}
    assert [o.name for o in filtered.ops.values() if o.quant_filtered] == ["b"]
