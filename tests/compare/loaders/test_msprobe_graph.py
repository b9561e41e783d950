"""The msprobe call graph (compare.loaders.msprobe_graph): call order, parameter inputs with the
loader's input numbering, names from construct.json, source lines from stack.json, side files
missing or broken."""

from __future__ import annotations

import json
from pathlib import Path

from compare.diverge.records import GraphSource, NodeRole
from compare.loaders.msprobe import scan_msprobe
from compare.loaders.msprobe_graph import parameter_inputs, read_msprobe_graph
from compare.testing.synthetic_msprobe import CALLS, write_msprobe_dump


def _tensor(*shape: int) -> dict:
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": list(shape), "Max": 1.0, "Min": 0.0,
            "Mean": 0.5, "Norm": 1.0}


def _int(value: int) -> dict:
    return {"type": "int", "value": value}


def test_layer_norm_weight_index_counts_every_leaf_before_it() -> None:
    """layer_norm(x, [32, 4], w, b, eps): the ints of normalized_shape take indices 1 and 2."""
    entry = {"input_args": [_tensor(2, 32, 4), [_int(32), _int(4)], _tensor(32, 4), _tensor(32, 4),
                            {"type": "float", "value": 1e-5}], "input_kwargs": {}, "output": [_tensor(2, 32, 4)]}
    edges = parameter_inputs("Functional.layer_norm.0.forward", entry)
    assert [(e.index, e.name, e.role) for e in edges] == [
        (3, "Functional.layer_norm.0.forward.weight", NodeRole.PARAMETER),
        (4, "Functional.layer_norm.0.forward.bias", NodeRole.PARAMETER)]


def test_keyword_weight_none_bias_and_backward() -> None:
    entry = {"input_args": [_tensor(2, 8)], "input_kwargs": {"weight": _tensor(4, 8), "bias": None}}
    edges = parameter_inputs("Functional.linear.0.forward", entry, parent="Module.head.Linear.forward.0")
    assert [(e.index, e.name) for e in edges] == [(1, "head.weight")]
    assert parameter_inputs("Functional.linear.0.backward", entry) == ()
    assert parameter_inputs("Functional.relu.0.forward", {"input_args": [_tensor(2)]}) == ()
    assert parameter_inputs("not a call name", entry) == ()


def test_module_parameters_follow_the_loader_numbering(tmp_path: Path) -> None:
    dump = write_msprobe_dump(tmp_path, task="statistics")
    folder = dump.folders[(0, 0)]
    graph = read_msprobe_graph(folder)
    assert graph.source is GraphSource.MSPROBE_CALLS and not graph.edges
    assert list(graph.nodes) == [name for name, _, _ in CALLS]  # dump.json order
    run = scan_msprobe(folder)
    fc = graph.nodes["Module.fc.Linear.forward.0"]
    assert [(e.index, e.name) for e in fc.inputs] == [(1, "fc.weight"), (2, "fc.bias")]
    op = run.ops["Module.fc.Linear.forward.0"]
    assert [(r.index, r.shape) for r in op.inputs] == [(0, (2, 8)), (1, (4, 8)), (2, (4,))]
    conv = graph.nodes["Functional.conv2d.0.forward"]
    assert [(e.index, e.name) for e in conv.inputs] == [(1, "Functional.conv2d.0.forward.weight")]  # bias None
    assert all(node.source is None for node in graph.nodes.values())  # stack.json is {}


def test_construct_and_stack_json(tmp_path: Path) -> None:
    folder = write_msprobe_dump(tmp_path, task="statistics").folders[(0, 0)]
    (folder / "construct.json").write_text(json.dumps({"Functional.conv2d.0.forward": "Module.stem.Conv2d.forward.0",
                                                       "Module.fc.Linear.forward.0": None}))
    frames = ["File /venv/lib/python3.11/site-packages/torch/nn/modules/conv.py, line 560, in _conv_forward, \n"
              " return F.conv2d(",
              "File /home/me/net.py, line 12, in forward, \n x = self.conv(x)",
              "File /home/me/train.py, line 40, in main, \n y = net(x)"]
    (folder / "stack.json").write_text(json.dumps({"0": [["Functional.conv2d.0.forward"], frames]}))
    graph = read_msprobe_graph(folder)
    conv = graph.nodes["Functional.conv2d.0.forward"]
    assert conv.inputs[0].name == "stem.weight"
    assert conv.source is not None and (conv.source.file, conv.source.line) == ("/home/me/net.py", 12)
    assert conv.source.code == "x = self.conv(x)"


def test_broken_side_files_are_noted_not_fatal(tmp_path: Path) -> None:
    folder = write_msprobe_dump(tmp_path, task="statistics").folders[(0, 0)]
    (folder / "stack.json").write_text("{not json")
    (folder / "construct.json").unlink()
    graph = read_msprobe_graph(folder)
    assert len(graph.nodes) == len(CALLS)
    assert any("stack.json not used" in note for note in graph.notes)
