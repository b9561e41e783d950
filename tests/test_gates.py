"""Accuracy gates: parsing and evaluation policy."""

from __future__ import annotations

import math

import pytest

from compare.errors import OptionError
from compare.gates import evaluate, parse_gate
from compare.records import MetricRow, PairStatus


def _row(tid: str, cos: float | None, status: PairStatus = PairStatus.COMPARED) -> MetricRow:
    return MetricRow(0, "Conv2D", "a", "a", tid, metrics={"CosineSimilarity": cos}, status=status)


def test_parse_gate_forms() -> None:
    gate = parse_gate("CosineSimilarity>=0.99")
    assert (gate.metric, gate.op, gate.bound) == ("CosineSimilarity", ">=", 0.99)
    assert parse_gate(" MaxAbsoluteError <= 1e-3 ").bound == 0.001
    assert parse_gate("0>0.5").metric == "CosineSimilarity"  # index form, as -alg accepts


@pytest.mark.parametrize("text", ["CosineSimilarity=>0.9", "Nope>=1", "StandardDeviation<1", "Cos>=abc", ""])
def test_parse_gate_rejects(text: str) -> None:
    with pytest.raises(OptionError):
        parse_gate(text)


def test_evaluate_policy() -> None:
    gate = parse_gate("CosineSimilarity>=0.99")
    rows = [_row("a:output:0", 0.999), _row("b:output:0", 0.5), _row("c:output:0", math.nan),
            _row("d:output:0", None), _row("e:output:0", None, PairStatus.MISSING_RIGHT)]
    failed = [f.row.tensor_id for f in evaluate([gate], rows)]
    assert failed == ["b:output:0", "c:output:0"]
