"""--range / --select (compare.runs.op_range): syntax, the bounds against the rule's largest id,
which ids a range selects, whole fusion groups kept, and the note saying how many were selected."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import op, write_rule
from conftest import FIXTURES

from compare.errors import OptionError, PairingError
from compare.pairing.fusion_rule import load_fusion_rule
from compare.records import Pair, Pairing
from compare.runs.loading import load_and_pair
from compare.runs.op_range import OpRange, OpSelect, parse_range, parse_select, select_pairs, selected_ids

DEMO = FIXTURES / "demo"


def test_parse_range_defaults_and_refusals() -> None:
    assert parse_range("2,10,3") == OpRange(2, 10, 3)
    assert parse_range(",,") == OpRange(1, -1, 1)
    assert parse_range("5,-1,") == OpRange(5, -1, 1)
    for bad, match in (("1,2", "give start,end,step"), ("1,2,3,4", "give start,end,step"),
                       ("a,2,1", "start 'a' is not a whole number"), ("1,-2,1", "end '-2'"),
                       ("-1,5,1", "start '-1'"), ("1,5,1.5", "step '1.5'")):
        with pytest.raises(OptionError, match=match):
            parse_range(bad)


def test_parse_select() -> None:
    assert parse_select("3, 7,3,12") == OpSelect((3, 7, 12))
    for bad in ("", "1,,2", "1,x", "-3"):
        with pytest.raises(OptionError, match="give operator ids"):
            parse_select(bad)


IDS = list(range(0, 21))  # op_count 20


@pytest.mark.parametrize("choice,expected", [
    (OpRange(1, -1, 5), (1, 6, 11, 16, 20)),  # end (20) is selected even off the step
    (OpRange(3, 9, 4), (3, 7, 9)),
    (OpRange(4, 4, 2), (4,)),
    (OpRange(1, 20, 19), (1, 20)),
])
def test_range_selection(choice: OpRange, expected: tuple[int, ...]) -> None:
    assert selected_ids(choice, IDS) == (expected, ())


def test_range_in_a_sparse_rule_walks_the_ids_present() -> None:
    assert selected_ids(OpRange(2, 9, 3), [0, 2, 4, 5, 8, 9, 12]) == ((2, 5, 8, 9), ())


@pytest.mark.parametrize("choice,match", [
    (OpRange(0, 5, 1), "start must be between 1 and 20"),
    (OpRange(21, -1, 1), "start must be between 1 and 20"),
    (OpRange(5, 4, 1), r"end must be between start \(5\) and 20"),
    (OpRange(5, 21, 1), r"end must be between start \(5\) and 20"),
    (OpRange(1, 5, 0), "step must be at least 1 and below 20"),
    (OpRange(1, 5, 20), "step must be at least 1 and below 20"),
    (OpSelect((21, 40)), "every id is above the largest operator id of the fusion rule, 20"),
])
def test_bounds(choice: OpRange | OpSelect, match: str) -> None:
    with pytest.raises(OptionError, match=match):
        selected_ids(choice, IDS)


def test_select_drops_ids_above_op_count() -> None:
    assert selected_ids(OpSelect((30, 7, 3)), IDS) == ((3, 7), (30,))


@given(st.integers(1, 19), st.integers(1, 20), st.integers(1, 19))
def test_range_property(start: int, end: int, step: int) -> None:
    if end < start:
        with pytest.raises(OptionError):
            selected_ids(OpRange(start, end, step), IDS)
        return
    chosen, _ = selected_ids(OpRange(start, end, step), IDS)
    assert chosen[0] == start and chosen[-1] == end
    assert list(chosen) == sorted(set(chosen))
    assert all(i == end or (i - start) % step == 0 for i in chosen)
    assert len(chosen) == len(range(start, end + 1, step)) + (0 if (end - start) % step == 0 else 1)


def test_whole_fusion_groups_are_kept(tmp_path: Path) -> None:
    rule = load_fusion_rule(write_rule(tmp_path, [op("a", op_id=1, names=("x",)), op("b", op_id=2, names=("x",)),
                                                  op("c", op_id=3, names=("y",))]))
    pairs = [Pair(index=0, op_type="Conv2D", left_op="a,b", right_op="x", tensor_id=f"{name}:output:0", left=None,
                  right=None, op_sequence=op_id) for name, op_id in (("a", 1), ("b", 2))]
    pairs.append(Pair(index=1, op_type="Conv2D", left_op="c", right_op="y", tensor_id="c:output:0", left=None,
                      right=None, op_sequence=3))
    kept, selection = select_pairs(Pairing(pairs, ["stray"], ["gold"]), rule, OpSelect((2,)))
    assert [p.tensor_id for p in kept.pairs] == ["a:output:0", "b:output:0"]
    assert (kept.unmatched_left, kept.unmatched_right) == ([], [])
    assert (selection.selected, selection.groups, selection.op_count, selection.ops) == ((2,), 1, 3, 3)
    assert (selection.rows_kept, selection.rows_left_out) == (2, 1)
    assert kept.notes[-1] == ("--select 2: 1 of 3 operators selected (ids 2; 1 fusion group(s)): 2 row(s) written, "
                              "1 row(s) of the other operators not written")
    with pytest.raises(OptionError, match="give the rule with -f"):
        select_pairs(Pairing(pairs), None, OpSelect((2,)))


def test_nothing_selected_cannot_run(tmp_path: Path) -> None:
    rule = load_fusion_rule(write_rule(tmp_path, [op("a", op_id=1, names=("x",)), op("c", op_id=4, names=("y",))]))
    pairs = [Pair(index=0, op_type="Conv2D", left_op="a", right_op="x", tensor_id="a:output:0", left=None, right=None,
                  op_sequence=1)]
    with pytest.raises(PairingError, match=r"--range 2,3,1: no row of the comparison belongs to the operators "
                                           r"selected \(ids none of"):
        select_pairs(Pairing(pairs), rule, OpRange(2, 3, 1))


def test_on_the_demo_network() -> None:
    _, _, _, rule, pairing = load_and_pair(DEMO / "npu", DEMO / "golden", DEMO / "model.json")
    kept, selection = select_pairs(pairing, rule, OpRange(2, -1, 2))
    assert selection.selected == (2, 4, 6) and selection.op_count == 6
    assert {p.left_op for p in kept.pairs} == {"conv1_weight", "pool1", "prob"}
    assert all(p.op_sequence in (2, 4, 6) for p in kept.pairs)
