"""The ladder of operator-name keys (convert/names/keys.py), as a table: each row a name as one
dump writes it and its key on every rung."""

from __future__ import annotations

import pytest

from convert.names.keys import ladder, name_key, normalize_golden_name, without_kernel_id

#: name, golden key (rung 2), scope key (rung 3), scope key without the kernel id (rung 4)
TABLE = [
    ("conv1", "conv1", "conv1", "conv1"),
    ("conv1/Conv2D", "conv1_Conv2D", "conv1_Conv2D", "conv1_Conv2D"),
    ("res2a.branch1", "res2a_branch1", "res2a_branch1", "res2a_branch1"),
    ("Default--network-conv1--Conv2D-op12", "Default--network-conv1--Conv2D-op12",
     "Default_network-conv1_Conv2D-op12", "Default_network-conv1_Conv2D"),
    ("Default/network-conv1/Conv2D-op12", "Default_network-conv1_Conv2D-op12",
     "Default_network-conv1_Conv2D-op12", "Default_network-conv1_Conv2D"),
    ("Default_network-conv1_Conv2D-op104", "Default_network-conv1_Conv2D-op104",
     "Default_network-conv1_Conv2D-op104", "Default_network-conv1_Conv2D"),
    ("Gradients/Default/a b\\c", "Gradients_Default_a b\\c", "Gradients_Default_a_b_c", "Gradients_Default_a_b_c"),
    ("Conv2D-op12", "Conv2D-op12", "Conv2D-op12", "Conv2D"),
    ("op-op", "op-op", "op-op", "op-op"),  # no kernel id: -op without digits
    ("x-op1-op2", "x-op1-op2", "x-op1-op2", "x-op1"),  # only the trailing id goes
]


@pytest.mark.parametrize("name, golden, scope, stripped", TABLE)
def test_every_rung(name: str, golden: str, scope: str, stripped: str) -> None:
    assert normalize_golden_name(name) == golden
    assert name_key(name) == scope
    assert without_kernel_id(name_key(name)) == stripped
    assert ladder(name) == (name, golden, scope, stripped)


@pytest.mark.parametrize("name", [row[0] for row in TABLE])
def test_rungs_are_idempotent(name: str) -> None:
    """A key of a key is the key (rung 4 strips one trailing id a time: ``x-op1-op2`` -> ``x-op1``)."""
    for key in (normalize_golden_name, name_key):
        assert key(key(name)) == key(name)


def test_one_matcher_golden_rules() -> None:
    """Ascend by-name pairing: exact first, then the golden key, each right name once."""
    from compare.pairing.names import GOLDEN_RULES, NameRule, match_names

    matched, used = match_names(["conv1/Conv2D", "conv1_Conv2D", "fc.w", "x"], ["conv1_Conv2D", "fc_w", "y"],
                                GOLDEN_RULES)
    assert matched == {"conv1_Conv2D": "conv1_Conv2D", "fc.w": "fc_w"}  # conv1/Conv2D: its key is taken
    assert used[NameRule.EXACT.value] == 1 and used[NameRule.GOLDEN_KEY.value] == 1
    # The golden rules never use the MindSpore rungs (-op ids, '--').
    assert match_names(["a-op1"], ["a-op2"], GOLDEN_RULES).matched == {}


def test_one_matcher_scope_rules_order() -> None:
    """Family pairing: the scope key is tried for every name before the kernel-id rung, and a
    stripped key two ops share (even one matched by its scope key) identifies neither."""
    from compare.pairing.names import SCOPE_RULES, match_names

    left = ["Default/net-A/Add-op1", "Default/net-A/Add-op2", "Default/net-B/Mul-op3"]
    right = ["Default_net-A_Add-op2", "Default_net-A_Add-op9", "Default_net-B_Mul-op7"]
    matched, used = match_names(left, right, SCOPE_RULES)
    assert matched == {"Default/net-A/Add-op2": "Default_net-A_Add-op2",
                       "Default/net-B/Mul-op3": "Default_net-B_Mul-op7"}
    assert used["normalised"] == 1 and used["kernel id"] == 1
