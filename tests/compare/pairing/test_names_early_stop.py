"""match_names stops once a side has nothing left to pair: the later rules are not run (their
keys would be computed for nothing), and the matching is the one every rule would give."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compare.pairing import names
from compare.pairing.names import SCOPE_RULES, NameRule, match_names

NAMES = st.lists(st.sampled_from(["Default/conv1-Conv2d/Conv2D-op1", "Conv2D-op1", "Default/relu-ReLU/ReLU-op2",
                                  "Default_fc-Dense_MatMul-op3", "MatMul-op3", "a", "b"]), max_size=6)


def test_later_rules_do_not_run_when_every_left_name_matched(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[NameRule] = []
    for rule, apply in list(names._APPLY.items()):
        monkeypatch.setitem(names._APPLY, rule, lambda state, rule=rule, apply=apply: (ran.append(rule), apply(state)))
    found = match_names(["x", "y"], ["y", "x", "z"])
    assert found.matched == {"x": "x", "y": "y"}
    assert ran == [NameRule.EXACT]


def test_later_rules_run_while_both_sides_have_names_left(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[NameRule] = []
    for rule, apply in list(names._APPLY.items()):
        monkeypatch.setitem(names._APPLY, rule, lambda state, rule=rule, apply=apply: (ran.append(rule), apply(state)))
    match_names(["x", "Default/conv1-Conv2d/Conv2D-op1"], ["x", "Conv2D-op1"])
    assert ran[0] is NameRule.EXACT and len(ran) > 1


def _every_rule(left: list[str], right: list[str]) -> dict[str, str]:
    state = names._State(list(left), list(right))
    for rule in SCOPE_RULES:
        names._APPLY[rule](state)
    return state.matched


@given(NAMES, NAMES)
def test_stopping_early_gives_the_matching_of_every_rule(left: list[str], right: list[str]) -> None:
    assert match_names(left, right).matched == _every_rule(left, right)
