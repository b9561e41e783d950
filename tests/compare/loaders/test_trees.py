"""Issue 12, dump-tree resolution: graphs and iterations, single-operator-model trees, ranks in
several time folders, the TF-NPU model folder, and files with invalid names.

Every tree is synthetic, written with the names real dumps use (MindSpore 2.10 O0 ``.npy``
names as in ``../shared/mindspore-real``; Ascend dump files as in seeds 003/004).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from builders import tf_leaf

from compare.runs.folders import run_network
from compare.reports.frame import to_dataframe
from compare.cli import app
from compare.errors import CompareError, OptionError, PairingError
from compare.loaders import load_run
from compare.records import PairStatus
from compare.testing.synthetic_mindspore import BASE_TS, OPS, Op, _ascend_dump, ascend_file_op, make_trees, tensor_value

#: Kernels of a real MindSpore 2.10 O0 dump (scope names with ``/`` written ``_``).
MS_KERNELS = (
    ("Conv2D", "Default_network-WithLossCell__backbone-Net_stem-Conv2d_Conv2D-op0", (4, 8, 12, 12)),
    ("MatMul", "Default_network-WithLossCell__backbone-Net_fc2-Dense_MatMul-op0", (4, 10)),
    ("Softmax", "Default_network-WithLossCell__backbone-Net_attn-Attn_softmax-Softmax_Softmax-op0", (4, 9, 9)),
)
TS = 1795463530673000


def _ms_value(name: str, graph: int, iteration: int, shape: tuple[int, ...]) -> np.ndarray:
    return tensor_value(name, "output", 0, shape, iteration, graph)


def _ms_leaf(root: Path, graph: int, iteration: int, delta: float = 0.0) -> Path:
    """``rank_0/ResNetAttn/{graph}/{iteration}/`` with one output per kernel (real file names)."""
    leaf = root / "rank_0" / "ResNetAttn" / str(graph) / str(iteration)
    leaf.mkdir(parents=True, exist_ok=True)
    for k, (op_type, name, shape) in enumerate(MS_KERNELS):
        data = _ms_value(name, graph, iteration, shape) + np.float32(delta)
        np.save(leaf / f"{op_type}.{name}.0.0.{TS + 100 * k}.output.0.DefaultFormat.Float32.npy", data)
    return leaf


@pytest.fixture(scope="module")
def two_graphs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Training graph 0 (iterations 0, 1) then inference graph 1 (iteration 2), on two sides that
    differ by 0.25 in every element."""
    out = tmp_path_factory.mktemp("graphs")
    base, pert = out / "base", out / "pert"
    for root, delta in ((base, 0.0), (pert, 0.25)):
        for graph, iteration in ((0, 0), (0, 1), (1, 2)):
            _ms_leaf(root, graph, iteration, delta)
    return base, pert


# --------------------------------------------------------------------------------------------
# 1. Graphs and iterations


def test_iteration_of_another_graph_names_the_graph(two_graphs: tuple[Path, Path]) -> None:
    base, _ = two_graphs
    with pytest.raises(OptionError) as info:
        load_run(base, iteration=2)
    msg = str(info.value)
    assert "selects nothing in graph 0 of" in msg and "chosen by default" in msg
    assert "it has iteration 0, 1" in msg and "graph 1 has iteration 2" in msg and "--graph 1" in msg
    with pytest.raises(OptionError, match=r"graph 0 .*\(given with --graph\).*graph 1 has iteration 2"):
        load_run(base, iteration=2, graph=0)
    with pytest.raises(OptionError, match=r"no graph has it \(graph 0: 0, 1; graph 1: 2\)"):
        load_run(base, iteration=7)
    run = load_run(base, iteration=2, graph=1)
    assert (run.coords["graph"], run.iteration) == (1, 2)


@pytest.mark.parametrize("spec", ["all", "0,1", "0-1"])
def test_graph_all_compares_each_graph(two_graphs: tuple[Path, Path], spec: str) -> None:
    base, pert = two_graphs
    result = run_network(base, pert, graph=spec)
    assert result.parts == [(0, 1), (0, 2)] and result.part_graphs == [0, 1]
    assert {(r.rank, r.graph, r.iteration) for r in result.rows} == {(0, 0, 1), (0, 1, 2)}
    compared = [r for r in result.rows if r.status is PairStatus.COMPARED]
    assert len(compared) == 2 * len(MS_KERNELS)
    assert all(r.metrics["MaxAbsoluteError"] == pytest.approx(0.25) for r in compared)
    assert "compared 2 (rank, graph, iteration) part(s) in turn" in result.notes[0]
    assert list(to_dataframe(result).columns[:4]) == ["Index", "Rank", "Graph", "Iteration"]


def test_graph_all_with_an_iteration_of_one_graph(two_graphs: tuple[Path, Path]) -> None:
    base, pert = two_graphs
    result = run_network(base, pert, graph="all", iteration=2)
    assert result.part_graphs == [1] and result.parts == [(0, 2)]
    assert any("not in every selected graph (graph 0 has iteration 0, 1)" in n for n in result.notes)
    every = run_network(base, pert, graph="all", iteration="all")
    assert list(zip(every.part_graphs, every.parts)) == [(0, (0, 0)), (0, (0, 1)), (1, (0, 2))]


def test_cli_graph_all_writes_a_graph_column(two_graphs: tuple[Path, Path], tmp_path: Path) -> None:
    base, pert = two_graphs
    out = tmp_path / "r.csv"
    result = CliRunner().invoke(app, ["-l", str(base), "-r", str(pert), "--graph", "all", "-o", str(out)])
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert lines[0].startswith("Index,Rank,Graph,Iteration,")
    assert len(lines) == 1 + 2 * len(MS_KERNELS)
    refused = CliRunner().invoke(app, ["-l", str(base), "-r", str(pert), "--iteration", "2", "-o", str(out)])
    assert refused.exit_code == 2 and "graph 1 has iteration 2" in refused.output


def test_right_side_follows_the_left_graph(two_graphs: tuple[Path, Path]) -> None:
    base, pert = two_graphs
    result = run_network(base, pert, graph=1)
    assert result.right.coords["graph"] == 1 and result.right.iteration == 2
    compared = [r for r in result.rows if r.status is PairStatus.COMPARED]
    assert len(compared) == len(MS_KERNELS)


# --------------------------------------------------------------------------------------------
# 2. Single-operator-model trees: {dump_path}/{device_id}/{op_name}/


def _single_op_tree(root: Path, iteration_of: dict[str, int] | None = None) -> Path:
    for task, op in enumerate(OPS, start=1):
        folder = root / "0" / ascend_file_op(op.name)
        folder.mkdir(parents=True, exist_ok=True)
        iteration = (iteration_of or {}).get(op.name, 0)
        _ascend_dump(folder, op, task, BASE_TS + 1000 * task, iteration, 0)
        os.utime(folder, ns=(10**18 + task, 10**18 + task))  # the last op folder is the newest
    return root


def test_single_op_model_tree_reads_every_op_folder(tmp_path: Path) -> None:
    left = _single_op_tree(tmp_path / "left")
    right = _single_op_tree(tmp_path / "right", {OPS[1].name: 1})
    run = load_run(left)
    assert sorted(run.ops) == sorted(ascend_file_op(op.name) for op in OPS)
    assert any("single-operator model dump: 4 operator folders of device 0" in n for n in run.notes)
    result = run_network(left, right)
    ops = {r.left_op for r in result.rows if r.status is PairStatus.COMPARED}
    assert ops == {ascend_file_op(op.name) for op in OPS}
    changed = [r for r in result.rows if r.left_op == ascend_file_op(OPS[1].name)]
    assert changed and all(r.metrics["MaxAbsoluteError"] > 0 for r in changed)


def test_one_op_folder_stays_a_plain_leaf(tmp_path: Path) -> None:
    folder = tmp_path / "0" / "conv"
    folder.mkdir(parents=True)
    _ascend_dump(folder, OPS[0], 1, BASE_TS, 0, 0)
    run = load_run(tmp_path)
    assert list(run.ops) == [ascend_file_op(OPS[0].name)] and type(run).__name__ == "Run"


# --------------------------------------------------------------------------------------------
# 3. --rank all across the time folders of one multi-device run


def test_rank_all_finds_every_time_folder(tmp_path: Path) -> None:
    sides = {}
    for side in ("a", "b"):
        root = tmp_path / side
        tf_leaf(root, "20240101120000", 0)
        # an older copy of rank 1 holding other values on the left: the newest must be used
        tf_leaf(root, "20240101120000", 1, value_iteration=5 if side == "a" else 0)
        tf_leaf(root, "20240101120105", 1)
        tf_leaf(root, "20240101120107", 2)
        sides[side] = root
    result = run_network(sides["a"], sides["b"], rank="all")
    assert result.parts == [(0, 0), (1, 0), (2, 0)]
    assert any("rank 1 is in 2 time folders (20240101120000, 20240101120105); using the newest, 20240101120105"
               in n for n in result.notes)
    compared = [r for r in result.rows if r.status is PairStatus.COMPARED]
    assert {r.rank for r in compared} == {0, 1, 2}
    assert all(r.metrics["MaxAbsoluteError"] == 0 for r in compared)
    one = load_run(sides["a"], rank=0)
    assert one.coords["time"] == "20240101120000"


# --------------------------------------------------------------------------------------------
# 4. TF-NPU: several model_name folders


REAL_OPS = tuple(Op("Conv2D", f"resnet/conv{i}", ((1, 2, 4, 4),), ((1, 2, 4, 4),)) for i in range(5))


def _helper_ops(graph_id: int) -> tuple[Op, ...]:
    """A GE helper graph: more ops than the model; their names carry the graph id (as GE's do)."""
    return tuple(Op("AtomicAddrClean", f"atomic_addr_clean{i}_{graph_id}", ((8,),), ((8,),)) for i in range(9))


def _model(root: Path, name: str, ops: tuple[Op, ...], mtime: int) -> None:
    leaf = root / "20240101120000" / "0" / name / "1" / "0"
    leaf.mkdir(parents=True, exist_ok=True)
    for task, op in enumerate(ops, start=1):
        _ascend_dump(leaf, op, task, BASE_TS + 1000 * task, 0, 0, nc1hwc0=False)
    os.utime(leaf, ns=(mtime, mtime))


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two TF NPU runs, each with the real model and a GE helper graph that has more dump files
    and the newest folder; and the golden .npy folder of the real model."""
    out = tmp_path_factory.mktemp("models")
    npu, npu2, golden = out / "npu", out / "npu2", out / "golden"
    _model(npu, "ge_default_20240101120000_71", REAL_OPS, 10**18)
    _model(npu, "ge_default_20240101120000_1", _helper_ops(1), 2 * 10**18)
    _model(npu2, "ge_default_20240102080000_75", REAL_OPS, 10**18)
    _model(npu2, "ge_default_20240102080000_3", _helper_ops(3), 2 * 10**18)
    golden.mkdir()
    for op in REAL_OPS:
        data = tensor_value(op.name, "output", 0, (1, 2, 4, 4)).astype(np.float16)
        np.save(golden / f"{op.name.replace('/', '_')}.0.{BASE_TS}.npy", data)
    return {"npu": npu, "npu2": npu2, "golden": golden}


def test_model_folder_that_pairs_is_chosen(models: dict[str, Path]) -> None:
    result = run_network(models["npu"], models["golden"])
    assert result.left.coords["model_name"] == "ge_default_20240101120000_71"
    assert sum(r.status is PairStatus.COMPARED for r in result.rows) == len(REAL_OPS)
    note = next(n for n in result.notes if "model folder" in n)
    assert note.startswith("left: model folder ge_default_20240101120000_71 chosen: 5 of 5 ops pair with the "
                           "right side") and "ge_default_20240101120000_1: 0" in note


def test_model_folders_on_both_sides_and_on_the_right(models: dict[str, Path]) -> None:
    both = run_network(models["npu"], models["npu2"])
    assert both.left.coords["model_name"] == "ge_default_20240101120000_71"
    assert both.right.coords["model_name"] == "ge_default_20240102080000_75"
    assert sum(r.status is PairStatus.COMPARED for r in both.rows) == 2 * len(REAL_OPS)
    right_only = run_network(models["golden"], models["npu2"])
    assert right_only.right.coords["model_name"] == "ge_default_20240102080000_75"
    assert any(n.startswith("right: model folder ge_default_20240102080000_75 chosen") for n in right_only.notes)
    each = run_network(models["npu"], models["golden"], rank="all")
    assert each.left.coords["model_name"] == "ge_default_20240101120000_71"


def test_model_name_still_forces_the_folder(models: dict[str, Path]) -> None:
    with pytest.raises(PairingError, match="atomic_addr_clean"):
        run_network(models["npu"], models["golden"], model_name="ge_default_20240101120000_1")


# --------------------------------------------------------------------------------------------
# 5. Files with invalid names


BAD_NAMES = ("conv1_output.bin", "relu.npy", "weird name.dat")


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_trees(tmp_path_factory.mktemp("syn"))


def _add_bad(folder: Path, names: tuple[str, ...] = BAD_NAMES[:2]) -> None:
    for name in names:
        (folder / name).write_bytes(b"x")


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def _unused_notes(result, side: str = "left") -> list[str]:
    return [n for n in result.notes if f"{side}: " in n and "file(s) not used" in n]


def test_misnamed_files_listed_in_by_name_mode(synthetic: dict[str, Path], tmp_path: Path,
                                               two_graphs: tuple[Path, Path]) -> None:
    # MindSpore .npy (O0, real names)
    ms = _copy(two_graphs[0], tmp_path / "ms")
    _add_bad(ms / "rank_0" / "ResNetAttn" / "1" / "2")
    result = run_network(ms, two_graphs[1], graph=1)
    notes = _unused_notes(result)
    assert len(notes) == 1 and "2 file(s) not used: 2 misnamed (e.g. conv1_output.bin, relu.npy)" in notes[0]
    # MindSpore synchronous .bin
    sync = _copy(synthetic["sync"], tmp_path / "sync")
    _add_bad(sync / "Net" / "device_0" / "iteration_1", ("garbage.bin",))
    notes = _unused_notes(run_network(sync, synthetic["sync"]))
    assert len(notes) == 1 and "1 misnamed (e.g. garbage.bin)" in notes[0]
    # TF NPU leaf, read through the tree (an option given)
    tf = _copy(synthetic["tf"], tmp_path / "tf")
    _add_bad(tf / "20240101120000" / "0" / "ge_default_20240101120000_1" / "1" / "1", ("not_a_dump",))
    notes = _unused_notes(run_network(tf, synthetic["tf"], iteration=1))
    assert len(notes) == 1 and "1 misnamed (e.g. not_a_dump)" in notes[0]


def test_misnamed_files_listed_for_ascend_and_golden(synthetic: dict[str, Path], tmp_path: Path) -> None:
    leaf = synthetic["tf"] / "20240101120000" / "0" / "ge_default_20240101120000_1" / "1" / "1"
    ascend = _copy(leaf, tmp_path / "ascend")
    _add_bad(ascend, ("Conv2D.conv1.x",))
    result = run_network(ascend, leaf)  # NPU vs NPU, paired by name
    notes = _unused_notes(result)
    assert len(notes) == 1 and "1 misnamed (e.g. Conv2D.conv1.x)" in notes[0]
    golden = tmp_path / "golden"
    golden.mkdir()
    np.save(golden / "sm.0.1700000000000000.npy", np.zeros(4, np.float32))
    _add_bad(golden, ("junk.npy",))
    mapping = tmp_path / "map.csv"
    mapping.write_text(f"{OPS[3].name},sm\n")
    each = run_network(synthetic["npy"], golden, rank="all", iteration=0, mapping=mapping)
    right = _unused_notes(each, "right")
    assert len(right) == 1 and "1 misnamed (e.g. junk.npy)" in right[0]  # once, not once per rank


def test_cli_prints_the_misnamed_files(two_graphs: tuple[Path, Path], tmp_path: Path) -> None:
    ms = _copy(two_graphs[0], tmp_path / "ms")
    _add_bad(ms / "rank_0" / "ResNetAttn" / "1" / "2")
    result = CliRunner().invoke(app, ["-l", str(ms), "-r", str(two_graphs[1]), "--graph", "1",
                                      "-o", str(tmp_path / "r.csv")])
    assert result.exit_code == 0, result.output
    assert "left: 2 file(s) not used: 2 misnamed (e.g. conv1_output.bin, relu.npy)" in result.output


@pytest.mark.parametrize("layout", ["ascend", "golden", "ms_npy", "ms_bin", "tf"])
def test_only_misnamed_files_is_not_empty(tmp_path: Path, layout: str) -> None:
    folder = {
        "ascend": tmp_path / "d",
        "golden": tmp_path / "d",
        "ms_npy": tmp_path / "d" / "rank_0" / "Net" / "0" / "0",
        "ms_bin": tmp_path / "d" / "Net" / "device_0" / "iteration_0",
        "tf": tmp_path / "d" / "20240101120000" / "0" / "ge_m" / "1" / "0",
    }[layout]
    folder.mkdir(parents=True)
    _add_bad(folder, BAD_NAMES)
    with pytest.raises(CompareError) as info:
        load_run(tmp_path / "d")
    msg = str(info.value)
    assert "no valid dump files: 3 misnamed (e.g. conv1_output.bin, relu.npy, weird name.dat)" in msg
    assert "empty" not in msg and "naming rule" in msg


def test_statistics_report_has_a_graph_column() -> None:
    from compare.reports.stats import render_stats_csv
    from compare.stats import StatsRow
    from compare.stats_table import StatsResult

    row = StatsRow(0, "Conv2D", "a", "a", "a:output:0", rank=0, iteration=2, graph=1)
    header, cells = render_stats_csv(StatsResult.of_rows([row], [])).splitlines()[:2]
    assert header.startswith("Index,OpType,LeftOp,RightOp,TensorIndex,Rank,Graph,Iteration,")
    assert cells.startswith("0,Conv2D,a,a,a:output:0,0,1,2,")


def test_tf_statistics_rows_refused_are_said_once(synthetic: dict[str, Path], tmp_path: Path) -> None:
    tree = _copy(synthetic["tf_stats"], tmp_path / "tf_stats")
    csv_file = sorted(tree.rglob("ReLU.*.csv"))[0]
    with open(csv_file, "a") as handle:
        handle.write("garbage,row\n")
    result = run_network(tree, synthetic["tf_stats"], iteration=0)
    said = [n for n in result.notes if csv_file.name in n]
    assert len(said) == 1 and "left: statistics rows not used:" in said[0] and "1 of 3 statistics row(s)" in said[0]
    assert not _unused_notes(result)


def test_misnamed_files_of_one_right_leaf_said_once(synthetic: dict[str, Path], tmp_path: Path) -> None:
    right = _copy(synthetic["sync_cpu"], tmp_path / "cpu")  # no rank level: one leaf read for every rank
    _add_bad(right / "Net" / "iteration_0", ("garbage.bin",))
    result = run_network(synthetic["npy"], right, rank="all", iteration=0)
    assert result.parts == [(0, 0), (1, 0)]
    assert len(_unused_notes(result, "right")) == 1
