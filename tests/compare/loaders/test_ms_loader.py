"""Issue 12, MindSpore loader: MindSpore's own statistic.csv, statistics beside tensors, and the
execution order (order file header, unlisted ops placed by dump timestamp, r1.x async order)."""

from __future__ import annotations

import csv
import os
import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_path
from typer.testing import CliRunner

from compare.cli import app
from compare.errors import DumpFormatError
from compare.loaders import load_run
from compare.loaders.ms_order import apply_order, read_execution_order
from compare.loaders.stats_csv import read_stats_csv
from compare.records import OpDump, PairStatus, Run, RunKind
from compare.runs.folders import run_network
from compare.testing.synthetic_mindspore import OPS, make_trees
from convert.layouts import convert_layout

# The header MindSpore 2.x writes with the default statistic_category ["max", "min", "l2norm"]
# (seed 001: "Op Type, Op Name, Task ID, Stream ID, Timestamp, IO, Slot, Data Size, Data Type,
# Shape, and statistics items configured by the user"); every data row ends with a separator.
MS_HEADER = ("Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,"
             "L2Norm Value")
MS_FULL_HEADER = ("Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,"
                  "Avg Value,Count,Negative Zero Count,Positive Zero Count,NaN Count,Negative Inf Count,"
                  "Positive Inf Count,Zero Count,L2Norm Value")

#: (op type, op name as MindSpore 2.x writes it, input shapes, output shapes), in execution order.
NET = (
    ("Conv2D", "Default_network-WithLossCell__backbone-Net_conv-Conv2d_Conv2D-op0", ((1, 2, 4, 4), (2, 2, 3, 3)),
     ((1, 2, 4, 4),)),
    ("ReLU", "Default_network-WithLossCell__backbone-Net_relu-ReLU_ReLU-op0", ((1, 2, 4, 4),), ((1, 2, 4, 4),)),
    ("MatMul", "Default_network-WithLossCell__backbone-Net_fc-Dense_MatMul-op0", ((1, 32), (32, 4)), ((1, 4),)),
    ("Softmax", "Default_network-WithLossCell__backbone-Net_softmax-Softmax_Softmax-op0", ((1, 4),), ((1, 4),)),
)
BASE_TS = 1795463530816532


def _value(name: str, kind: str, index: int, shape: tuple[int, ...], shift: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(f"{name}|{kind}|{index}".encode()))
    return (rng.standard_normal(shape) + shift).astype(np.float32)


def _tensors(op: tuple) -> list[tuple[str, int, tuple[int, ...]]]:
    _, _, inputs, outputs = op
    return [("input", i, s) for i, s in enumerate(inputs)] + [("output", i, s) for i, s in enumerate(outputs)]


def _ms_row(op_type: str, name: str, ts: int, kind: str, index: int, data: np.ndarray, full: bool) -> str:
    """One data row as MindSpore's writer prints it (shape quoted, trailing separator)."""
    flat = data.astype(np.float64).reshape(-1)
    shape = '"(' + ",".join(str(d) for d in data.shape) + ')"'
    cells = [op_type, name, "0", "0", str(ts), kind, str(index), str(data.nbytes), "float32", shape,
             repr(float(flat.max())), repr(float(flat.min()))]
    if full:
        cells += [repr(float(flat.mean())), str(flat.size), str(int((flat < 0).sum())), str(int((flat > 0).sum())),
                  "0", "0", "0", str(int((flat == 0).sum()))]
    cells.append(repr(float(np.sqrt(np.dot(flat, flat)))))
    return ",".join(cells) + ","


def _write_leaf(leaf: Path, *, stats: bool = True, npy_ops: tuple[int, ...] = (), full: bool = False,
                shift: float = 0.0, constants: bool = False) -> int:
    """A MindSpore 2.x O0 iteration folder: statistic.csv in MindSpore's format for every tensor,
    ``.npy`` files for the kernels ``npy_ops``, and a constants/ Parameter; returns the row count."""
    leaf.mkdir(parents=True, exist_ok=True)
    lines = [MS_FULL_HEADER if full else MS_HEADER]
    ts = BASE_TS
    for number, op in enumerate(NET):
        op_type, name, _, _ = op
        for kind, index, shape in _tensors(op):
            ts += 100
            data = _value(name, kind, index, shape, shift)
            lines.append(_ms_row(op_type, name, ts, kind, index, data, full))
            if number in npy_ops:
                np.save(leaf / f"{op_type}.{name}.0.0.{ts}.{kind}.{index}.DefaultFormat.Float32.npy", data)
    if stats:
        (leaf / "statistic.csv").write_text("\n".join(lines) + "\n")
    if constants:
        folder = leaf.parent / "constants"
        folder.mkdir(exist_ok=True)
        np.save(folder / f"Parameter.fc_weight.0.0.{BASE_TS - 50}.output.0.DefaultFormat.Float32.npy",
                _value("fc_weight", "output", 0, (32, 4), shift))
    return len(lines) - 1


def _tree(root: Path, **kwargs) -> tuple[Path, int]:
    rows = _write_leaf(root / "rank_0" / "Net" / "0" / "0", **kwargs)
    return root, rows


def _tensor_count() -> int:
    return sum(len(_tensors(op)) for op in NET)


# --------------------------------------------------------------------------------------------
# MindSpore's statistic.csv
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("full", [False, True])
def test_mindspore_statistic_csv_with_trailing_separator_is_read(tmp_path: Path, full: bool) -> None:
    _, rows = _tree(tmp_path, full=full)
    parsed = read_stats_csv(tmp_path / "rank_0" / "Net" / "0" / "0" / "statistic.csv")
    assert not parsed.skipped and len(parsed.records) == rows == parsed.rows == _tensor_count()
    record = parsed.records[0]
    expected = _value(NET[0][1], "input", 0, (1, 2, 4, 4)).astype(np.float64)
    assert record.shape == (1, 2, 4, 4) and record.dtype == "float32"
    assert record.stats["max"] == pytest.approx(expected.max())
    assert record.stats["l2norm"] == pytest.approx(np.sqrt((expected ** 2).sum()))
    assert "" not in record.stats  # the trailing empty cell is not a statistic


def test_older_l2_value_column_is_l2norm(tmp_path: Path) -> None:
    path = tmp_path / "statistic.csv"
    path.write_text("Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,"
                    "L2 Value\nAdd,Default_Add-op0,0,0,7,output,0,4,float32,\"()\",2,2,\n")
    record = read_stats_csv(path).records[0]
    assert record.shape == () and record.stats == {"max": 2.0, "l2norm": 2.0}


def test_statistics_only_comparison_of_mindspore_csv_exits_0(tmp_path: Path) -> None:
    left, rows = _tree(tmp_path / "left", full=True)
    right, _ = _tree(tmp_path / "right", full=True, shift=0.01)
    out = tmp_path / "out"
    out.mkdir()
    result = CliRunner().invoke(app, ["-l", str(left), "-r", str(right), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert f"rows: {rows} compared, 0 not comparable" in result.output
    report = next(out.glob("stats_result_*.csv"))
    with report.open() as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == rows and all(not r["FailReason"] for r in table)
    assert all(r["LeftSource"].startswith("statistic.csv row ") for r in table)


def test_refused_rows_are_counted_and_named(tmp_path: Path) -> None:
    root, rows = _tree(tmp_path / "bad")
    path = root / "rank_0" / "Net" / "0" / "0" / "statistic.csv"
    lines = path.read_text().splitlines()
    lines[2] = lines[2] + "9"  # a non-empty cell past the header: refused
    lines[4] = lines[4].replace(",input,", ",sideways,")
    path.write_text("\n".join(lines) + "\n")
    run = load_run(root)
    note = next(n for n in run.notes if "statistics rows not used" in n)
    assert str(path) in note and f"2 of {rows} statistics row(s) refused (rows 3, 5" in note
    assert sum(len(op.inputs) + len(op.outputs) for op in run.ops.values()) == rows - 2
    right, _ = _tree(tmp_path / "good")
    result = CliRunner().invoke(app, ["-l", str(root), "-r", str(right), "-o", str(tmp_path / "out") + "/"])
    assert result.exit_code == 0, result.output
    assert "2 of" in result.output and "refused (rows 3, 5" in result.output


# --------------------------------------------------------------------------------------------
# Statistics beside tensors
# --------------------------------------------------------------------------------------------


def test_statistics_beside_constants_are_all_used(tmp_path: Path) -> None:
    left, rows = _tree(tmp_path / "stats", constants=True)
    run = load_run(left)
    assert run.stats_only and run.ops["fc_weight"].outputs[0].reader is not None
    kernels = [run.ops[op[1]] for op in NET]
    assert all(t.stats is not None and t.reader is None for op in kernels for t in op.inputs + op.outputs)
    assert any(f"{rows} row(s): 0 gave a tensor file its statistics, {rows} are tensors with statistics only" in n
               for n in run.notes)
    right, _ = _tree(tmp_path / "tensors", stats=False, npy_ops=tuple(range(len(NET))), constants=True)
    result = run_network(left, right)
    assert result.stats is not None and len(result.rows) == len(result.stats.rows)
    compared = [r for r in result.stats.rows if r.status is PairStatus.COMPARED]
    assert len(compared) == len(result.stats.rows) == rows + 1  # every row and the constant
    for row in compared:
        for name in ("max", "min", "l2norm"):
            value = row.values[name]
            assert abs(value.diff) <= 1e-6 * max(1.0, abs(value.right)), (row.tensor_id, name)
    param = next(r for r in compared if r.left_op == "fc_weight")
    assert param.left_source.startswith("computed from") and param.right_source.startswith("computed from")


def test_statistics_beside_a_few_kernels(tmp_path: Path) -> None:
    left, rows = _tree(tmp_path / "mixed", npy_ops=(0,))
    run = load_run(left)
    conv = run.ops[NET[0][1]]
    assert all(t.stats is not None and t.reader is not None for t in conv.inputs + conv.outputs)
    assert run.stats_only and run.ops[NET[2][1]].inputs[1].reader is None
    attached = len(_tensors(NET[0]))
    assert any(f"{rows} row(s): {attached} gave a tensor file its statistics, {rows - attached} are tensors with "
               "statistics only" in n and "compared by statistics" in n for n in run.notes)
    right, _ = _tree(tmp_path / "tensors", stats=False, npy_ops=tuple(range(len(NET))))
    result = run_network(left, right)
    assert result.stats is not None
    assert [r.status for r in result.stats.rows] == [PairStatus.COMPARED] * rows
    assert {r.left_source.split(" row ")[0] for r in result.stats.rows} == {"statistic.csv"}


def test_repeated_rows_of_a_tensor_keep_the_latest(tmp_path: Path) -> None:
    root, rows = _tree(tmp_path / "again")
    path = root / "rank_0" / "Net" / "0" / "0" / "statistic.csv"
    lines = path.read_text().splitlines()
    cells = next(csv.reader([lines[1]]))
    cells[4] = str(int(cells[4]) + 10 ** 6)  # the same tensor dumped again later
    cells[10] = "123.0"
    cells[9] = f'"{cells[9]}"'
    path.write_text("\n".join([*lines, ",".join(cells)]) + "\n")
    run = load_run(root)
    ref = run.ops[NET[0][1]].inputs[0]
    assert ref.stats is not None and ref.stats["max"] == 123.0
    assert any("1 earlier row(s) of tensors dumped again later were superseded" in n for n in run.notes)
    assert sum(len(op.inputs) + len(op.outputs) for op in run.ops.values()) == rows


def test_statistics_only_tensor_says_so_when_loaded(tmp_path: Path) -> None:
    root, _ = _tree(tmp_path)
    ref = load_run(root).ops[NET[1][1]].outputs[0]
    with pytest.raises(DumpFormatError, match="has statistics only .*statistic.csv row .*no tensor data"):
        ref.load()


def test_nc1hwc0_tensor_against_statistics_needs_no_conversion(tmp_path: Path) -> None:
    stats, _ = _tree(tmp_path / "stats", full=True)
    leaf = tmp_path / "device" / "rank_0" / "Net" / "0" / "0"
    leaf.mkdir(parents=True)
    ts = BASE_TS
    for op in NET:
        op_type, name, _, _ = op
        for kind, index, shape in _tensors(op):
            ts += 100
            data = _value(name, kind, index, shape)
            fmt = "DefaultFormat"
            if op_type == "Conv2D" and kind == "output":
                data = np.asarray(convert_layout(data, "NCHW", "NC1HWC0", data.shape))  # C=2 padded to 16
                fmt = "NC1HWC0"
            np.save(leaf / f"{op_type}.{name}.0.0.{ts}.{kind}.{index}.{fmt}.Float32.npy", data)
    result = run_network(tmp_path / "device", stats)
    assert result.stats is not None
    row = next(r for r in result.stats.rows if r.tensor_id and r.tensor_id.endswith("Conv2D-op0:output:0"))
    assert row.status is PairStatus.COMPARED
    for name in ("max", "min", "l2norm"):  # the padding is zero: these agree as stored
        assert abs(row.values[name].diff) <= 1e-6 * max(1.0, abs(row.values[name].right))
    assert row.values["count"].left == 16 * 16 and row.values["count"].right == 32
    assert "left is NC1HWC0" in row.reasons[0] and "padding" in row.reasons[0]


# --------------------------------------------------------------------------------------------
# Execution order
# --------------------------------------------------------------------------------------------


def test_order_file_header_is_not_a_kernel(tmp_path: Path) -> None:
    path = tmp_path / "ms_execution_order_graph_0.csv"
    path.write_text("NodeExecutionOrder-FullNameWithScope\nDefault/network/Conv2D-op0\nDefault/network/ReLU-op0\n")
    assert read_execution_order(path) == ["Default/network/Conv2D-op0", "Default/network/ReLU-op0"]
    path.write_text("Default/network/Conv2D-op0\nDefault/network/ReLU-op0\n")  # no header
    assert read_execution_order(path) == ["Default/network/Conv2D-op0", "Default/network/ReLU-op0"]


def _run_of(ops: dict[str, int]) -> Run:
    run = Run(root=Path("."), path=Path("."), kind=RunKind.NUMPY, family="mindspore-npy")
    for name, ts in ops.items():
        run.ops[name] = OpDump(name=name, op_type=None, path=Path(name), timestamp=ts)
    return run


def test_every_op_gets_a_position_unlisted_ones_by_timestamp() -> None:
    run = _run_of({
        "Default_a_Conv2D-op0": 100, "Default_a_ReLU-op0": 200,
        "Grad_a_Conv2DBackpropFilter-op0": 300,  # listed as -op2 in the order file
        "Default_a_MatMul-op0": 400, "weight": 50, "moments": 900, "nameless": 0,
    })
    order = ["Default/a/Conv2D-op0", "Default/a/ReLU-op0", "Grad/a/Conv2DBackpropFilter-op2", "Default/a/MatMul-op0"]
    apply_order(run, order)
    ranked = [name for name, _ in sorted(run.order.items(), key=lambda kv: kv[1])]
    assert ranked == ["weight", "Default_a_Conv2D-op0", "Default_a_ReLU-op0", "Grad_a_Conv2DBackpropFilter-op0",
                      "Default_a_MatMul-op0", "moments", "nameless"]
    assert set(run.order.values()) == set(range(len(run.ops)))
    note = run.notes[-1]
    assert "3 of 7 found in it" in note and "the other 3" in note and "first dump timestamp" in note
    assert "1 without a dump timestamp put last" in note


def test_listed_ops_keep_the_file_order_when_times_disagree() -> None:
    # the optimizer update ran (was dumped) before its place in the file: the file decides
    run = _run_of({"A-op0": 10, "B-op0": 30, "Update-op0": 20, "extra": 35})
    apply_order(run, ["A-op0", "B-op0", "C-op0", "Update-op0"])
    ranked = [name for name, _ in sorted(run.order.items(), key=lambda kv: kv[1])]
    assert ranked == ["A-op0", "B-op0", "extra", "Update-op0"]  # extra: after B, dumped last before it


def test_rows_follow_the_order_file_with_parameters_and_other_op_ids(tmp_path: Path) -> None:
    trees = {}
    for side in ("left", "right"):
        root, _ = _tree(tmp_path / side, stats=False, npy_ops=tuple(range(len(NET))), constants=True)
        order = root / "rank_0" / "execution_order"
        order.mkdir()
        names = [op[1].replace("_", "/", 1) for op in NET]
        names[1] = names[1].replace("ReLU-op0", "ReLU-op7")  # the file names say -op0
        (order / "ms_execution_order_graph_0.csv").write_text(
            "NodeExecutionOrder-FullNameWithScope\n" + "\n".join(names) + "\n")
        trees[side] = root
    result = run_network(trees["left"], trees["right"])
    seen: list[str] = []
    for row in result.rows:
        if row.left_op not in seen:
            seen.append(row.left_op)
    assert seen == ["fc_weight", *(op[1] for op in NET)]
    assert not any(name.startswith("NodeExecutionOrder") for name in seen)
    assert any("(3 of 5 found in it; the other 2" in n for n in result.notes)


def test_async_dump_rows_follow_its_execution_order(tmp_path: Path) -> None:
    roots = make_trees(tmp_path)
    order = roots["async"] / "0" / "execution_order"
    order.mkdir()
    (order / "ms_execution_order_graph_0.csv").write_text("\n".join(op.name for op in reversed(OPS)) + "\n")
    run = load_run(roots["async"], iteration=0)
    assert run.family == "mindspore-async"
    ranked = [name for name, _ in sorted(run.order.items(), key=lambda kv: kv[1])]
    assert ranked == [op.name.replace("/", "_") for op in reversed(OPS)]
    result = run_network(roots["async"], roots["async"], iteration=0)
    first_rows = [row.left_op for row in result.rows if row.tensor_id and row.tensor_id.endswith(":output:0")]
    assert first_rows == ranked


# --------------------------------------------------------------------------------------------
# Real MindSpore 2.10 dumps (../shared/mindspore-real)
# --------------------------------------------------------------------------------------------


def _first_dump_times(leaf: Path) -> dict[str, int]:
    first: dict[str, int] = {}
    for name in os.listdir(leaf):
        if name.endswith(".npy"):
            parts = name.split(".")
            first[parts[1]] = min(first.get(parts[1], int(parts[4])), int(parts[4]))
    return first


def test_real_kernels_dump_rows_in_execution_order(tmp_path: Path) -> None:
    left = shared_path("mindspore-real", "K_perturb_kernels")
    right = shared_path("mindspore-real", "K_base_kernels")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["-l", str(left), "-r", str(right), "-o", str(out) + "/"])
    assert result.exit_code == 0, result.output
    assert "29 of 34 found in it; the other 5" in result.output
    with next(out.glob("*.csv")).open() as handle:
        rows = list(csv.DictReader(handle))
    seen: list[str] = []
    for row in rows:
        if row["LeftOp"] not in seen:
            seen.append(row["LeftOp"])
    times = _first_dump_times(left / "rank_0" / "ResNetAttn" / "0" / "1")
    assert seen == sorted(times, key=times.__getitem__)


def test_real_iteration_dump_orders_every_op() -> None:
    root = shared_path("mindspore-real", "I_base_iter")
    run = load_run(root, iteration=0)
    assert set(run.order) == set(run.ops) and sorted(run.order.values()) == list(range(len(run.ops)))
    names = read_execution_order(root / "rank_0" / "execution_order" / "ms_execution_order_graph_0.csv")
    assert names[0].endswith("Conv2D-op0") and not any("NodeExecutionOrder" in n for n in names)
    ranked = [name for name, _ in sorted(run.order.items(), key=lambda kv: kv[1])]
    from convert.names.keys import name_key

    position = {name_key(n): i for i, n in reversed(list(enumerate(names)))}
    listed = [position[name_key(n)] for n in ranked if name_key(n) in position]
    assert listed == sorted(listed)  # listed kernels in the file's order
    params = [n for n in ranked if run.ops[n].op_type == "Parameter"]
    assert params and ranked[-len(params):] == params  # dumped after every kernel of the step


def test_ascend_format_leaf_keeps_statistics_rows_without_dump_files(tmp_path: Path) -> None:
    roots = make_trees(tmp_path)
    leaf = next(p.parent for p in roots["o2"].rglob("mapping.csv"))
    conv = OPS[0].name.replace("/", "_")
    data = np.ones((1, 2, 4, 4), np.float32)
    (leaf / "statistic.csv").write_text("\n".join([
        MS_HEADER,
        _ms_row("Conv2D", conv, BASE_TS + 1000, "output", 0, data, False),
        _ms_row("Add", "Default_network-extra_Add-op9", BASE_TS + 9500, "output", 0, data, False),
    ]) + "\n")
    run = load_run(roots["o2"])
    assert run.stats_only and run.ops["Default_network-extra_Add-op9"].outputs[0].reader is None
    ref = run.ops[conv].outputs[0]
    assert ref.stats is not None and ref.reader is not None and ref.stats["max"] == 1.0
    assert any("2 row(s): 1 gave a tensor file its statistics, 1 are tensors with statistics only" in n
               for n in run.notes)
