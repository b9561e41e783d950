"""The msprobe loader's shortcuts for the shapes msprobe writes (issue 31, load): the flat walk,
the statistics read as written, and ``dump.json`` parsed once for the call graph. Each shortcut
must give what the general path gives."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compare.loaders import msprobe_graph
from compare.loaders.msprobe import _flat, _stats, scan_msprobe
from compare.loaders.msprobe_graph import read_msprobe_graph
from compare.loaders.msprobe_json import _is_tensor, named_leaves
from compare.records import TensorKind, TensorRef
from convert.names.msprobe import item_name


def _tensor(*shape: int, **fields: object) -> dict:
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": list(shape), "Max": 1.0, "Min": -1.0,
            "Mean": 0.0, "Norm": 2.0, "requires_grad": False, **fields}


def _write(folder: Path, data: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch",
                                                  "dump_data_dir": None, "data": data}))
    return folder


@pytest.mark.parametrize("section", [
    [_tensor(2), None, {"type": "int", "value": 3}],
    {"weight": _tensor(4), "bias": None},
])
def test_flat_sections_are_named_and_numbered_as_the_general_walk(tmp_path: Path, section: object) -> None:
    assert _flat(section)  # type: ignore[arg-type]
    call = "Functional.x.0.forward"
    op = scan_msprobe(_write(tmp_path / "d", {call: {"input_args": section}})).ops[call]
    items = sorted([*op.inputs, *op.arguments], key=lambda item: item.index)
    assert [(item.index, item.label) for item in items] == [
        (number, item_name(call, "input_args", place)) for number, (place, _) in enumerate(named_leaves(section))]


@pytest.mark.parametrize("section", [
    [_tensor(2), [_tensor(3), _tensor(3)]],  # a nested list: the general walk numbers it
    [_tensor(2), 5],  # a bare value
    _tensor(2),  # a section that is itself a leaf
])
def test_other_sections_take_the_general_walk(section: object) -> None:
    assert not _flat(section)  # type: ignore[arg-type]


def test_flat_and_nested_sections_give_msprobes_names_and_indexes(tmp_path: Path) -> None:
    call = "Torch.cat.0.forward"
    entry = {"input_args": [[_tensor(2), _tensor(3)], {"type": "int", "value": 0}],
             "input_kwargs": {"out": None, "scale": _tensor(1)},
             "output": [_tensor(5)]}
    run = scan_msprobe(_write(tmp_path / "d", {call: entry}))
    op = run.ops[call]
    assert [(t.index, t.label) for t in op.inputs] == [
        (0, item_name(call, "input_args", (0, 0))), (1, item_name(call, "input_args", (0, 1))),
        (4, item_name(call, "input_kwargs", ("scale",)))]
    assert [(a.index, a.label) for a in op.arguments] == [
        (2, item_name(call, "input_args", (1,))), (3, item_name(call, "input_kwargs", ("out",)))]
    assert [(t.index, t.label, t.kind) for t in op.outputs] == [(0, f"{call}.output.0", TensorKind.OUTPUT)]


@pytest.mark.parametrize("item,expected", [
    (_tensor(2), {"max": 1.0, "min": -1.0, "avg": 0.0, "l2norm": 2.0}),
    (_tensor(2, md5="abc123"), {"max": 1.0, "min": -1.0, "avg": 0.0, "l2norm": 2.0, "checksum": "abc123"}),
    (_tensor(2, md5=None), {"max": 1.0, "min": -1.0, "avg": 0.0, "l2norm": 2.0, "checksum": None}),
    (_tensor(2, Max=3, Mean=None), {"max": 3.0, "min": -1.0, "avg": None, "l2norm": 2.0}),
    (_tensor(2, Max=True, Norm=10 ** 400), {"max": 1.0, "min": -1.0, "avg": 0.0, "l2norm": math.inf}),
    ({"type": "torch.Tensor", "Min": "x", "md5": 7}, {"checksum": 7.0}),
])
def test_statistics_as_written_and_by_the_general_rules(item: dict, expected: dict) -> None:
    got = _stats(item)
    assert got == expected and list(got) == list(expected)  # the order of the report's columns too


def test_the_call_graph_uses_the_loaders_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = {"Functional.linear.0.forward": {"input_args": [_tensor(2, 8), _tensor(4, 8), _tensor(4)],
                                            "input_kwargs": {}, "output": [_tensor(2, 4)]},
            "Module.fc.Linear.forward.0": {"input_args": [_tensor(2, 8)], "parameters": {"weight": _tensor(4, 8)},
                                           "output": [_tensor(2, 4)]}}
    folder = _write(tmp_path / "d", data)
    run = scan_msprobe(folder)
    parses: list[Path] = []
    real = msprobe_graph.read_dump_json
    monkeypatch.setattr(msprobe_graph, "read_dump_json", lambda path: parses.append(path) or real(path))
    shared = read_msprobe_graph(run.path)
    assert parses == []  # handed over by the loader
    monkeypatch.setattr(msprobe_graph, "_REMEMBERED", {})
    parsed = read_msprobe_graph(run.path)
    assert parses == [folder / "dump.json"]  # nothing remembered: parsed here
    assert shared == parsed
    assert [(e.index, e.name) for e in shared.nodes["Functional.linear.0.forward"].inputs] == [
        (1, "Functional.linear.0.forward.weight"), (2, "Functional.linear.0.forward.bias")]
    assert [(e.index, e.name) for e in shared.nodes["Module.fc.Linear.forward.0"].inputs] == [(1, "fc.weight")]


def test_a_dump_json_changed_since_loading_is_parsed_again(tmp_path: Path) -> None:
    folder = _write(tmp_path / "d", {"Functional.relu.0.forward": {"input_args": [_tensor(2)]}})
    scan_msprobe(folder)
    _write(folder, {"Functional.relu.0.forward": {"input_args": [_tensor(2)]},
                    "Functional.relu.1.forward": {"input_args": [_tensor(2)]}})
    assert list(read_msprobe_graph(folder).nodes) == ["Functional.relu.0.forward", "Functional.relu.1.forward"]


def test_only_a_few_dump_jsons_are_remembered(tmp_path: Path) -> None:
    for number in range(msprobe_graph._REMEMBER_AT_MOST + 3):
        scan_msprobe(_write(tmp_path / str(number), {"Functional.relu.0.forward": {"input_args": [_tensor(2)]}}))
    assert len(msprobe_graph._REMEMBERED) <= msprobe_graph._REMEMBER_AT_MOST


_LEAVES = st.one_of(
    st.builds(lambda n, grad: _tensor(n, requires_grad=grad), st.integers(0, 4), st.booleans()),
    st.none(),
    st.builds(lambda v: {"type": "int", "value": v}, st.integers(-3, 3)),
    st.just({"dtype": "torch.int64", "shape": [2]}),  # a tensor by dtype and shape
    st.just({"type": "slice", "value": [0, 1, None]}),
)
_ITEMS = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=3), max_leaves=6)
_SECTIONS = st.lists(_ITEMS, max_size=5) | st.dictionaries(st.sampled_from(["a", "b", "dim", "weight"]), _ITEMS,
                                                           max_size=3)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=_SECTIONS, kwargs=_SECTIONS, output=_SECTIONS)
def test_any_sections_are_named_and_numbered_as_the_general_walk(tmp_path_factory: pytest.TempPathFactory,
                                                                 args: object, kwargs: object, output: object) -> None:
    """Flat sections (the loader's one loop) and nested ones (the general walk) alike: every leaf
    in :func:`named_leaves` order, numbered across the sections of its kind, named by
    :func:`item_name`, a tensor when it is one."""
    call = "Functional.x.0.forward"
    entry = {"input_args": args, "input_kwargs": kwargs, "output": output}
    op = scan_msprobe(_write(tmp_path_factory.mktemp("d"), {call: entry})).ops[call]
    for kind, sections in ((TensorKind.INPUT, ("input_args", "input_kwargs")), (TensorKind.OUTPUT, ("output",))):
        expected = [(item_name(call, key, place), leaf) for key in sections for place, leaf in named_leaves(entry[key])]
        got = sorted([*(t for t in (*op.inputs, *op.outputs) if t.kind is kind),
                      *(a for a in op.arguments if a.kind is kind)], key=lambda item: item.index)
        assert [(item.index, item.label) for item in got] == [(n, label) for n, (label, _) in enumerate(expected)]
        assert [isinstance(item, TensorRef) for item in got] == [_is_tensor(leaf) for _, leaf in expected]


def test_tensors_of_one_shape_share_it_and_ops_without_files_share_theirs(tmp_path: Path) -> None:
    """One tuple per shape of a ``dump.json`` and one ``(dump.json,)`` for the ops without data
    files: 10^5 tensors hold a few hundred shapes (~80 bytes a tensor less)."""
    data = {f"Functional.relu.{n}.forward": {"input_args": [_tensor(2, 3)], "output": [_tensor(2, 3), _tensor(4)]}
            for n in range(3)}
    run = scan_msprobe(_write(tmp_path / "d", data))
    refs = [ref for op in run.ops.values() for ref in (*op.inputs, *op.outputs)]
    assert len({id(ref.shape) for ref in refs if ref.shape == (2, 3)}) == 1
    assert [ref.nbytes for ref in refs] == [24, 24, 16] * 3
    assert len({id(op.files) for op in run.ops.values()}) == 1
    assert next(iter(run.ops.values())).files == (run.path / "dump.json",)
