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
