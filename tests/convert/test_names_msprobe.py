"""msprobe data names and dtype names (convert.names.msprobe) and the pairing rung built on them."""

from __future__ import annotations

import pytest

from compare.pairing.names import SCOPE_RULES, NameRule, match_names
from convert.names.msprobe import CallKind, api_key, msprobe_dtype, parse_msprobe_name


@pytest.mark.parametrize("name, kind, prefix, api, count, direction, key", [
    ("Functional.relu.0.forward", CallKind.API, "Functional", "relu", 0, "forward", "relu.0.forward"),
    ("Tensor.__getitem__.12.backward", CallKind.API, "Tensor", "__getitem__", 12, "backward",
     "__getitem__.12.backward"),
    ("Aten.add.Tensor.3.forward", CallKind.API, "Aten", "add.Tensor", 3, "forward", "add.Tensor.3.forward"),
    ("Mint.matmul.0.forward", CallKind.API, "Mint", "matmul", 0, "forward", "matmul.0.forward"),
    ("Module.conv2.Conv2d.forward.0", CallKind.MODULE, "Module", "conv2.Conv2d", 0, "forward", "cell:conv2.forward.0"),
    ("Cell.layers.0.attn.Dense.backward.4", CallKind.MODULE, "Cell", "layers.0.attn.Dense", 4, "backward",
     "cell:layers.0.attn.backward.4"),
    ("Module.fc.Linear.parameters_grad.0", CallKind.MODULE, "Module", "fc.Linear", 0, "parameters_grad",
     "cell:fc.parameters_grad.0"),
])
def test_parse_and_key(name, kind, prefix, api, count, direction, key) -> None:
    parsed = parse_msprobe_name(name)
    assert parsed is not None
    assert (parsed.kind, parsed.prefix, parsed.api, parsed.count, parsed.direction) == (kind, prefix, api, count,
                                                                                        direction)
    assert api_key(name) == key


@pytest.mark.parametrize("name", ["conv1", "Default/network-conv1/Conv2D-op104", "Functional.relu.forward",
                                  "Functional.relu.0.sideways"])
def test_names_in_neither_form(name) -> None:
    assert parse_msprobe_name(name) is None and api_key(name) is None


@pytest.mark.parametrize("text, expected", [
    ("torch.float32", "float32"), ("torch.bfloat16", "bfloat16"), ("torch.half", "float16"), ("torch.long", "int64"),
    ("Float32", "float32"), ("BFloat16", "bfloat16"), ("Int64", "int64"), ("torch.qint8", "torch.qint8")])
def test_dtype_names(text, expected) -> None:
    assert msprobe_dtype(text) == expected


def test_msprobe_rung_pairs_across_frameworks_only_where_unique() -> None:
    left = ["Functional.relu.0.forward", "Torch.matmul.0.forward", "Module.fc.Linear.forward.0",
            "Torch.add.0.forward", "Tensor.add.0.forward"]
    right = ["Functional.relu.0.forward", "Mint.matmul.0.forward", "Cell.fc.Dense.forward.0", "Mint.add.0.forward"]
    found = match_names(left, right, SCOPE_RULES)
    assert found.matched == {"Functional.relu.0.forward": "Functional.relu.0.forward",
                             "Torch.matmul.0.forward": "Mint.matmul.0.forward",
                             "Module.fc.Linear.forward.0": "Cell.fc.Dense.forward.0"}
    # add.0.forward is two calls on the left (Torch.add, Tensor.add): ambiguous, left unpaired
    assert found.used[NameRule.MSPROBE_API.value] == 2 and found.used[NameRule.EXACT.value] == 1
