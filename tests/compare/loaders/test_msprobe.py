"""The msprobe reader: dump.json trees written by compare.testing.synthetic_msprobe (both frameworks)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from compare.errors import CompareError, DumpFormatError, OptionError
from compare.loaders import detect, load_run
from compare.loaders.msprobe_folders import claim
from compare.records import DumpLayout, RunKind, TensorKind
from compare.testing.synthetic_msprobe import write_msprobe_dump, write_pt


@pytest.fixture(scope="module")
def pt_dump(tmp_path_factory):
    return write_msprobe_dump(tmp_path_factory.mktemp("pt"), steps=(0, 1), ranks=(0, 1))


@pytest.fixture(scope="module")
def ms_dump(tmp_path_factory):
    return write_msprobe_dump(tmp_path_factory.mktemp("ms"), framework="mindspore")


def test_pytorch_tree_ops_tensors_and_data(pt_dump) -> None:
    run = load_run(pt_dump.folders[(1, 1)])
    assert run.family is DumpLayout.MSPROBE and run.kind is RunKind.NUMPY
    assert run.coords == {"rank": 1, "iteration": 1}
    assert list(run.ops) == ["Functional.conv2d.0.forward", "Torch.matmul.0.forward", "Torch.split.0.forward",
                             "Module.fc.Linear.forward.0", "Functional.relu.0.forward", "Functional.relu.0.backward",
                             "Module.fc.Linear.parameters_grad.0"]
    assert [run.order[name] for name in run.ops] == list(range(7))
    conv = run.ops["Functional.conv2d.0.forward"]
    # the null and the int argument keep their places: inputs 0 and 1 are the tensors, 2 and 3 are not
    assert [(t.index, t.shape) for t in conv.inputs] == [(0, (2, 3, 4, 4)), (1, (4, 3, 3, 3))]
    assert conv.op_type == "conv2d"
    split = run.ops["Torch.split.0.forward"]
    assert [(t.index, t.path.name) for t in split.outputs] == [(0, "Torch.split.0.forward.output.0.0.pt"),
                                                               (1, "Torch.split.0.forward.output.0.1.pt")]
    linear = run.ops["Module.fc.Linear.forward.0"]
    assert [t.dtype for t in linear.inputs] == ["bfloat16", "float32", "float32"]  # input, weight, bias
    assert linear.op_type == "Linear"
    grads = run.ops["Module.fc.Linear.parameters_grad.0"]
    assert not grads.inputs and [t.shape for t in grads.outputs] == [(4, 8), (4,)]
    for op in run.ops.values():
        for ref in (*op.inputs, *op.outputs):
            array = ref.load()
            np.testing.assert_array_equal(array, pt_dump.arrays[ref.path.name])
            assert ref.stats is not None and set(ref.stats) == {"max", "min", "avg", "l2norm"}
    assert run.ops["Torch.matmul.0.forward"].outputs[0].dtype == "float16"
    assert not run.stats_only and not run.skipped


def test_mindspore_tree_bfloat16_saved_as_float32(ms_dump) -> None:
    run = load_run(ms_dump.root)
    assert "Mint.matmul.0.forward" in run.ops and "Cell.fc.Dense.forward.0" in run.ops
    ref = run.ops["Cell.fc.Dense.forward.0"].inputs[0]
    assert ref.dtype == "bfloat16"  # as recorded
    assert ref.load().dtype == np.float32  # as saved
    assert ref.path.suffix == ".npy"


def test_loading_is_lazy(tmp_path: Path) -> None:
    dump = write_msprobe_dump(tmp_path)
    folder = dump.folders[(0, 0)]
    victim = folder / "dump_tensor_data" / "Torch.matmul.0.forward.input.0.pt"
    victim.write_bytes(b"not a zip")
    run = load_run(folder)  # the scan never opens the tensor files
    ref = run.ops["Torch.matmul.0.forward"].inputs[0]
    with pytest.raises(DumpFormatError, match="not readable without torch: not a zip archive"):
        ref.load()


def test_statistics_task_is_stats_only(tmp_path: Path) -> None:
    dump = write_msprobe_dump(tmp_path, task="statistics")
    run = load_run(tmp_path)
    assert run.stats_only
    assert not (dump.folders[(0, 0)] / "dump_tensor_data").exists()
    record = json.loads((dump.folders[(0, 0)] / "dump.json").read_text())["data"]["Functional.relu.0.forward"]
    ref = run.ops["Functional.relu.0.forward"].outputs[0]
    assert ref.reader is None
    assert ref.stats == {"max": record["output"][0]["Max"], "min": record["output"][0]["Min"],
                         "avg": record["output"][0]["Mean"], "l2norm": record["output"][0]["Norm"]}
    with pytest.raises(DumpFormatError, match="statistics only"):
        ref.load()


def test_selection_of_step_and_rank(pt_dump) -> None:
    run = load_run(pt_dump.root)
    assert run.coords == {"rank": 0, "iteration": 1}  # smallest rank, newest step, with notes
    assert any("using rank 0" in n for n in run.notes) and any("using iteration 1" in n for n in run.notes)
    assert load_run(pt_dump.root, rank=1, iteration=0).path == pt_dump.folders[(0, 1)]
    assert load_run(pt_dump.root / "step0", rank=1).path == pt_dump.folders[(0, 1)]
    assert load_run(pt_dump.folders[(1, 0)] / "dump.json").path == pt_dump.folders[(1, 0)]
    with pytest.raises(OptionError, match="--rank 7 selects nothing"):
        load_run(pt_dump.root, rank=7)
    assert detect(pt_dump.root) is RunKind.NUMPY


def test_other_tools_dump_json_is_not_claimed(tmp_path: Path) -> None:
    (tmp_path / "dump.json").write_text(json.dumps({"common_dump_settings": {"path": "/x", "saved_data": "tensor"}}))
    assert claim(tmp_path) is None


def test_bad_json_is_a_diagnosed_error(tmp_path: Path) -> None:
    dump = write_msprobe_dump(tmp_path)
    path = dump.folders[(0, 0)] / "dump.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(DumpFormatError, match=r"dump\.json \(byte \d+\): not valid JSON") as caught:
        load_run(tmp_path)
    assert str(path) in str(caught.value)
    path.write_text('{"task": "tensor", "framework": "pytorch", "data": [1]}')
    with pytest.raises(DumpFormatError, match='no "data" object'):
        load_run(tmp_path)


def _edit(folder: Path, change) -> None:
    path = folder / "dump.json"
    top = json.loads(path.read_text())
    change(top["data"])
    path.write_text(json.dumps(top))


def test_hostile_items_become_refusing_tensors(tmp_path: Path) -> None:
    dump = write_msprobe_dump(tmp_path)
    folder = dump.folders[(0, 0)]
    data_dir = folder / "dump_tensor_data"

    def change(data: dict) -> None:
        data["Functional.conv2d.0.forward"]["input_args"][0]["data_name"] = "../../etc/passwd"
        data["Functional.conv2d.0.forward"]["input_args"][1]["data_name"] = "/etc/passwd"
        data["Functional.relu.0.forward"]["output"][0]["shape"] = "x"
        data["Functional.relu.0.backward"]["output"][0]["data_name"] = "gone.pt"
        data["Weird.call"] = "not an object"
        data["Functional.relu.0.forward"]["extra_section"] = []

    _edit(folder, change)
    write_pt(data_dir / "Torch.matmul.0.forward.input.1.pt", np.zeros((8, 4), np.float32),
             extra_global=("builtins", "eval"))
    (data_dir / "stray.bin").write_bytes(b"x")
    run = load_run(folder)
    conv = run.ops["Functional.conv2d.0.forward"]
    for ref in conv.inputs:
        with pytest.raises(DumpFormatError, match="refused: not a file name inside dump_tensor_data"):
            ref.load()
    with pytest.raises(DumpFormatError, match="shape 'x' is not a list"):
        run.ops["Functional.relu.0.forward"].outputs[0].load()
    with pytest.raises(DumpFormatError, match="missing: dump.json names it"):
        run.ops["Functional.relu.0.backward"].outputs[0].load()
    with pytest.raises(DumpFormatError, match="builtins.eval"):
        run.ops["Torch.matmul.0.forward"].inputs[1].load()
    assert "not an object" in (run.ops["Weird.call"].error or "")
    skipped = {path.name: why for path, why in run.skipped}
    assert "not named by any data_name" in skipped["stray.bin"]
    assert "not named by any data_name" in skipped["Functional.conv2d.0.forward.input.0.pt"]
    notes = " | ".join(run.notes)
    assert "1 tensor file(s) named by dump.json are missing" in notes
    assert "2 data_name(s) refused" in notes
    assert "sections not read (not tensors of a call): extra_section" in notes


def test_empty_folder_is_not_msprobe(tmp_path: Path) -> None:
    assert claim(tmp_path) is None
    with pytest.raises(CompareError):
        load_run(tmp_path)


def test_inputs_numbered_across_args_kwargs_and_parameters(tmp_path: Path) -> None:
    dump = write_msprobe_dump(tmp_path)
    run = load_run(dump.folders[(0, 0)])
    relu = run.ops["Functional.relu.0.forward"]
    assert [t.index for t in relu.inputs] == [0]  # the kwarg 'inplace' (a bool) is input 1, not a tensor
    assert [t.kind for t in relu.outputs] == [TensorKind.OUTPUT]
    linear = run.ops["Module.fc.Linear.forward.0"]
    assert [t.path.name.split(".forward.0.")[1] for t in linear.inputs] == [
        "input.0.pt", "parameters.weight.pt", "parameters.bias.pt"]


def test_an_empty_dump_json_is_explained(tmp_path: Path) -> None:
    """msprobe's own test trees hold a ``dump.json`` of ``{}``: not claimed, and the reason says so."""
    from compare.loaders.msprobe_folders import explain

    (tmp_path / "dump.json").write_text("{}")
    assert claim(tmp_path) is None
    assert "is not an msprobe dump" in explain(tmp_path)
    assert "no dump.json" in explain(tmp_path / "missing")
