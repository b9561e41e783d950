"""TensorFlow NPU (and GE) dump trees: the GE build file, model_name choice, stats CSV dumps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import shared_path

from compare.errors import OptionError
from compare.loaders import load_run
from compare.loaders.stats_csv import read_stats_csv
from compare.loaders.tf_npu import dump_model_name, first_graph_name
from compare.records import PairStatus, Run, RunKind, TensorKind
from compare.runs.folders import run_network
from compare.testing.synthetic_mindspore import GRAPH_NAME, OPS, ascend_file_op, make_trees, tensor_value
from convert.names.ascend import stats_csv_name

GE_BUILD = "real/hicann-oam-tools/test/st/msaicerr/res/ori_data/complie_path/ge_proto_00000062_Build.txt"


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_trees(tmp_path_factory.mktemp("tf"))


def test_first_graph_name_of_the_real_build_file() -> None:
    assert first_graph_name(shared_path(GE_BUILD)) == "ResNet-50_0"


def test_first_graph_name_errors(tmp_path: Path) -> None:
    empty = tmp_path / "ge_proto_1_Build.txt"
    empty.write_text("op { name: \"x\" }\n")
    with pytest.raises(OptionError, match="no 'graph"):
        first_graph_name(empty)
    with pytest.raises(OptionError, match="cannot read"):
        first_graph_name(tmp_path / "missing.txt")


def test_dump_model_name() -> None:
    assert dump_model_name("ge_default.2020/12 09\\x") == "ge_default_2020_12_09_x"
    assert dump_model_name(GRAPH_NAME) == "ge_default_20240101120000_1"


def test_plain_tree_without_options_keeps_the_ascend_reader(trees: dict[str, Path]) -> None:
    run = load_run(trees["tf"])
    assert type(run) is Run and run.kind is RunKind.OFFLINE  # unchanged behaviour: newest leaf


def test_ge_graph_picks_the_model_folder(trees: dict[str, Path]) -> None:
    run = load_run(trees["tf"], ge_graph=trees["tf_build"], iteration=0)
    assert run.family == "ge"
    assert run.coords["model_name"] == "ge_default_20240101120000_1" and run.iteration == 0
    assert any("first graph of ge_proto_00001_Build.txt" in n for n in run.notes)
    assert sorted(run.ops) == sorted(ascend_file_op(op.name) for op in OPS)
    conv = run.ops[ascend_file_op(OPS[0].name)]
    assert conv.outputs[0].format == "NC1HWC0" and conv.outputs[0].original_shape == (1, 2, 4, 4)
    relu = run.ops[ascend_file_op(OPS[1].name)].inputs[0]
    expected = tensor_value(OPS[1].name, "input", 0, (1, 2, 4, 4), 0).astype(np.float16)
    assert relu.dtype == "float16" and relu.load().tolist() == expected.tolist()


def test_model_name_option_and_default(trees: dict[str, Path]) -> None:
    other = load_run(trees["tf"], model_name="ge_other_2", iteration=1)
    assert other.coords["model_name"] == "ge_other_2" and list(other.ops) == [ascend_file_op(OPS[0].name)]
    spelled = load_run(trees["tf"], model_name=GRAPH_NAME, iteration=1)  # the graph name, '.' as in GE
    assert spelled.coords["model_name"] == "ge_default_20240101120000_1"
    default = load_run(trees["tf"], iteration=1)
    assert default.coords["model_name"] == "ge_default_20240101120000_1"
    assert any("2 model_name folders" in n and "--ge-graph" in n for n in default.notes)
    with pytest.raises(OptionError, match=r"no model_name folder is named 'nope' \(folders: ge_default_"):
        load_run(trees["tf"], model_name="nope")


def test_ge_graph_naming_a_missing_folder(trees: dict[str, Path], tmp_path: Path) -> None:
    build = tmp_path / "ge_proto_9_Build.txt"
    build.write_text('graph {\n  name: "other_graph"\n}\n')
    with pytest.raises(OptionError, match="first graph 'other_graph'"):
        load_run(trees["tf"], ge_graph=build)


def test_stats_csv_names() -> None:
    parsed = stats_csv_name("Conv2D.conv1.3.1.1704110400001000.csv")
    assert parsed is not None and (parsed.op_type, parsed.op_name, parsed.task_id) == ("Conv2D", "conv1", 3)
    assert stats_csv_name("statistic.csv") is None and stats_csv_name("Conv2D.conv1.3.1.170.npy") is None


def test_tf_stats_tree_is_statistics_only(trees: dict[str, Path]) -> None:
    run = load_run(trees["tf_stats"])
    assert run.stats_only and run.kind is RunKind.OFFLINE and run.family == "ge"
    ref = run.ops[ascend_file_op(OPS[0].name)].tensor(TensorKind.INPUT, 1)
    assert ref.stats is not None and ref.reader is None
    assert ref.shape == (2, 3, 3, 3) and ref.dtype == "float16" and ref.format == "NCHW"
    data = tensor_value(OPS[0].name, "input", 1, (2, 3, 3, 3)).astype(np.float16).astype(np.float64)
    assert ref.stats["max"] == data.max() and ref.stats["count"] == 54 and ref.stats["nan_count"] == 0


def test_tf_stats_vs_tensor_dump(trees: dict[str, Path]) -> None:
    result = run_network(trees["tf_stats"], trees["tf"], ge_graph=trees["tf_build"], iteration=0)
    assert result.stats is not None and len(result.rows) == len(result.stats.rows)
    assert result.stats.stats == ["max", "min", "avg", "count", "nan_count", "neg_inf_count", "pos_inf_count"]
    assert len(result.stats.rows) == 10 and all(r.status is PairStatus.COMPARED for r in result.stats.rows)
    for row in result.stats.rows:
        assert row.right_source.startswith("computed from ")
        assert row.values["max"].diff == 0 and row.values["count"].rel == 0
        assert abs(row.values["avg"].diff) < 1e-9


def test_aggregated_ge_statistic_csv(tmp_path: Path) -> None:
    path = tmp_path / "statistic.csv"
    path.write_text("Op Type,Op Name,Task ID,Stream ID,Timestamp,Input/Output,Slot,Data Size,Data Type,Format,Shape,"
                    "Max Value,Min Value,Avg Value,Count,Nan Count,Negative Inf Count,Positive Inf Count\n"
                    "Add,add_1,2,1,1704110400000001,Output,0,8,DT_FLOAT,ND,2,3,1,2,2,0,0,0\n"
                    "Add,add_1,2,1,1704110400000001,Sideways,0,8,DT_FLOAT,ND,2,3,1,2,2,0,0,0\n")
    parsed = read_stats_csv(path)
    assert len(parsed.records) == 1 and len(parsed.skipped) == 1 and "row 3" in parsed.skipped[0][1]
    record = parsed.records[0]
    assert (record.op_name, record.kind, record.index, record.dtype, record.shape) == (
        "add_1", TensorKind.OUTPUT, 0, "float32", (2,))
    assert record.stats["max"] == 3 and record.task_id == 2 and record.timestamp == 1704110400000001


def test_overflow_records_in_a_plain_ascend_leaf_are_rows(trees: dict[str, Path], tmp_path: Path) -> None:
    """npu-vs-npu pairing (the comparison table) still lists overflow records, not compared."""
    import shutil

    leaf = tmp_path / "leaf"
    shutil.copytree(trees["tf"] / "20240101120000" / "0" / "ge_default_20240101120000_1" / "1" / "0", leaf)
    shutil.copy(next((trees["o2"]).rglob("Opdebug.*")), leaf)
    result = run_network(leaf, leaf)
    assert result.pairing.mode == "npu-vs-npu"
    overflow = [r for r in result.rows if r.op_type == "Opdebug"]
    assert len(overflow) == 2 and all(r.status is PairStatus.NOT_COMPARABLE for r in overflow)
    assert sum(1 for r in result.rows if r.status is PairStatus.COMPARED) == 10
