"""The mapping table (-map): the demo network's pairs against a golden file, the OpSequence column
under --select, and the options it needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, TESTS

from compare.errors import OptionError
from compare.reports.mapping_table import render_mapping
from compare.runs.mapping_table import mapping_table
from compare.runs.op_range import OpSelect
from compare.testing.synthetic_quant import make_quant_network

DEMO = FIXTURES / "demo"
GOLDEN = TESTS / "golden" / "mapping_demo.csv"


def _text(rows, op_sequence: bool) -> str:
    """The table with the fixture folder written as {DEMO} (the golden file holds no absolute path)."""
    return render_mapping(rows, op_sequence=op_sequence).replace(str(DEMO), "{DEMO}")


def test_demo_mapping_table_golden(request: pytest.FixtureRequest) -> None:
    table = mapping_table(DEMO / "npu", DEMO / "golden", DEMO / "model.json")
    assert not table.selected
    text = _text(table.rows, table.selected)
    if request.config.getoption("--update-golden", default=False):
        GOLDEN.write_bytes(text.encode())
    assert text == GOLDEN.read_bytes().decode()


def test_demo_rows() -> None:
    rows = mapping_table(DEMO / "npu", DEMO / "golden", DEMO / "model.json").rows
    assert [row.index for row in rows] == sorted(row.index for row in rows)
    data = rows[0]  # Data is never dumped: one row without tensor and paths
    assert (data.npu_dump, data.ground_truth, data.tensor_index, data.npu_path, data.golden_path) == (
        "data", "data", None, None, None)
    conv = [row for row in rows if row.npu_dump == "conv1"]
    assert [row.tensor_index for row in conv] == ["conv1:input:0", "conv1:input:1", "conv1:output:0"]
    assert {row.ground_truth for row in conv} == {"conv1,bn1,relu1"}
    assert conv[2].npu_path is not None and conv[2].npu_path.name.startswith("Conv2D.conv1.")
    assert conv[2].golden_path == DEMO / "golden" / "relu1.0.1704110405000004.npy"


def test_selected_rows_carry_op_sequence() -> None:
    table = mapping_table(DEMO / "npu", DEMO / "golden", DEMO / "model.json", ops=OpSelect((4, 5)))
    assert table.selected and {row.op_sequence for row in table.rows} == {4, 5}
    lines = _text(table.rows, True).split("\r\n")
    assert lines[0] == "Index,OpSequence,OpType,NPUDump,GroundTruth,TensorIndex,NPUDumpPath,GroundTruthPath"
    assert lines[1].startswith("4,4,Pooling,pool1,pool1,pool1:input:0,{DEMO}/npu/")
    assert any("--select 4,5: 2 of 7 operators selected" in note for note in table.notes)


def test_needs_a_rule() -> None:
    with pytest.raises(OptionError, match=r"needs|give one of them"):
        mapping_table(DEMO / "npu", DEMO / "golden")


def test_quant_rule_alone(tmp_path: Path) -> None:
    paths = make_quant_network(tmp_path)
    table = mapping_table(paths["quant_caffe"], paths["caffe"], quant_rule=paths["quant_rule"])
    conv = next(row for row in table.rows if row.npu_dump == "conv1")
    assert conv.tensor_index == "conv1:output:0"  # scenario 3: output 0 of each left op only
    assert conv.npu_path is not None and conv.npu_path.parent == paths["quant_caffe"]
    assert conv.golden_path is not None and conv.golden_path.parent == paths["caffe"]
    assert all(row.tensor_index is None or ":output:" in row.tensor_index for row in table.rows)
