"""Issue 7 unit tests: hostile and broken inputs are refused with a diagnosis, before any
allocation; broken files become rows, not lost operators; plugins are loaded only from safe
places; spreadsheet formulas are neutralised in every CSV vcompare writes."""

from __future__ import annotations

import csv
import json
import os
import stat
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from compare.errors import CompareError, DumpFormatError, RuleError
from compare.loaders import load_run
from compare.loaders.ascend import read_dump_tensor
from compare.loaders.golden_npy import scan_golden
from compare.pairing.fusion_rule import load_fusion_rule
from compare.records import PairStatus
from compare.reports.cells import neutralise_text, text_cell
from compare.reports.network import write_report
from compare.reports.single_op import _record_mapping
from compare.runs.folders import run_network
from compare.testing.synthetic import make_network
from convert.codecs.dumpfile import read_header, read_tensor
from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.codecs.npy import load_npy, read_npy_header
from convert.layouts import LayoutError, load_plugins
from convert.names.hashed import read_mapping

runner = CliRunner()

#: Largest Python-heap peak (bytes) tolerated while refusing a huge tensor.
SMALL_PEAK = 1 << 20


def _npy_with_header(path: Path, shape: tuple, descr: str = "<f4", body: int = 40) -> Path:
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape!r}, }}"
    text += " " * ((-(len(text) + 11)) % 64) + "\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode() + bytes(body))
    return path


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


# ------------------------------------------------------------------ refused before allocating


@pytest.mark.parametrize("shape", [(10**8,), (10**6, 10**6), (2**32, 2**32, 2**32)])
def test_a_huge_dump_shape_is_refused_by_arithmetic(tmp_path: Path, shape: tuple) -> None:
    path = write_dump(tmp_path / "Op.x.1.1.1", outputs=[TensorSpec(np.ones(4, np.float32), shape=shape)])
    header = read_header(path)

    def read() -> None:
        with pytest.raises(DumpFormatError, match=r"needs \d+ bytes, but the dump holds 16 bytes"):
            read_tensor(header, header.outputs[0])

    assert _peak(read) < SMALL_PEAK


@pytest.mark.parametrize("shape", [(10**8,), (10**6, 10**6), (2**62, 2**62)])
def test_a_huge_npy_header_is_refused_by_arithmetic(tmp_path: Path, shape: tuple) -> None:
    path = _npy_with_header(tmp_path / "g.0.1.npy", shape)

    def read() -> None:
        with pytest.raises(DumpFormatError, match="truncated .npy: the header promises"):
            load_npy(path, read_npy_header(path))

    assert _peak(read) < SMALL_PEAK


def test_a_negative_dimension_written_as_uint64_is_named(tmp_path: Path) -> None:
    path = write_dump(tmp_path / "Op.x.1.1.1", outputs=[TensorSpec(np.ones(4, np.float32), shape=(2, 2**64 - 2))])
    header = read_header(path)
    with pytest.raises(DumpFormatError, match=r"is -2 as a signed 64-bit integer") as info:
        read_tensor(header, header.outputs[0])
    assert info.value.offset == header.outputs[0].offset and "Op.x.1.1.1" in str(info.value)


def test_zero_dimension_is_empty_only_without_data(tmp_path: Path) -> None:
    path = write_dump(tmp_path / "Op.x.1.1.1", outputs=[TensorSpec(np.ones(4, np.float32), shape=(4, 0)),
                                                       TensorSpec(np.ones(0, np.float32), shape=(0, 3))])
    header = read_header(path)
    with pytest.raises(DumpFormatError, match=r"\(4, 0\) \(0 elements\) but the dump holds 16 bytes"):
        read_tensor(header, header.outputs[0])
    assert read_tensor(header, header.outputs[1]).shape == (0, 3)


def test_extra_bytes_after_the_shape_are_accepted_as_the_reference_does(tmp_path: Path) -> None:
    path = write_dump(tmp_path / "Op.x.1.1.1", outputs=[TensorSpec(np.arange(6, dtype=np.float32), shape=(2, 2))])
    header = read_header(path)
    np.testing.assert_array_equal(read_tensor(header, header.outputs[0]), [[0, 1], [2, 3]])


def test_unknown_format_code_is_refused_for_comparison_only(tmp_path: Path) -> None:
    path = write_dump(tmp_path / "Op.x.1.1.1", outputs=[TensorSpec(np.ones(4, np.float32), format=77)])
    header = read_header(path)
    assert read_tensor(header, header.outputs[0]).shape == (4,)  # the conversion tools still read it
    with pytest.raises(DumpFormatError, match="format code 77, which is not an Ascend dump format"):
        read_dump_tensor(header, header.outputs[0])


# ------------------------------------------------------------------ .npy headers


@pytest.mark.parametrize("descr,shape,needle", [
    ("<f4", (-3, 4), "negative dimension"),
    ("<U3", (3,), "cannot be compared"),
    ("|S4", (3,), "cannot be compared"),
    ("<M8[s]", (3,), "cannot be compared"),
    ("<f16", (3,), "cannot be compared"),
    ("|O", (3,), "never unpickles"),
])
def test_npy_headers_that_cannot_be_compared(tmp_path: Path, descr: str, shape: tuple, needle: str) -> None:
    path = _npy_with_header(tmp_path / "g.0.1.npy", shape, descr, body=400)
    with pytest.raises(DumpFormatError, match=needle) as info:
        read_npy_header(path)
    assert "g.0.1.npy" in str(info.value)


def test_structured_and_subarray_npy_are_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "s.0.1.npy", np.zeros(3, dtype=[("a", "<f4"), ("b", "<i4")]))
    np.save(tmp_path / "t.0.1.npy", np.zeros(3, dtype=("<f4", (2,))))  # numpy folds the sub-array
    with pytest.raises(DumpFormatError, match="structured"):
        read_npy_header(tmp_path / "s.0.1.npy")
    assert read_npy_header(tmp_path / "t.0.1.npy").shape == (3, 2)


def test_malformed_npy_header_text_is_a_diagnosis(tmp_path: Path) -> None:
    body = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\x0b(\n"
    path = tmp_path / "m.0.1.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(body)) + body.encode() + bytes(12))
    with pytest.raises(DumpFormatError, match="bad .npy header"):
        read_npy_header(path)


def test_big_endian_npy_comes_back_native(tmp_path: Path) -> None:
    np.save(tmp_path / "b.0.1.npy", np.arange(4, dtype=">f4"))
    array = load_npy(tmp_path / "b.0.1.npy", read_npy_header(tmp_path / "b.0.1.npy"))
    assert array.dtype.isnative and array.tolist() == [0, 1, 2, 3]


def test_one_broken_output_of_a_golden_op_keeps_the_others(tmp_path: Path) -> None:
    np.save(tmp_path / "g.0.1.npy", np.ones(3, np.float32))
    _npy_with_header(tmp_path / "g.1.1.npy", (-1,))
    run = scan_golden(tmp_path)
    op = run.ops["g"]
    assert op.error is None and [t.index for t in op.outputs] == [0]
    assert any(p.name == "g.1.1.npy" and "negative dimension" in why for p, why in run.skipped)


# ------------------------------------------------------------------ mapping.csv


def test_mapping_rows_pointing_outside_the_folder_are_refused(tmp_path: Path) -> None:
    (tmp_path / "mapping.csv").write_text(
        "1,../Conv2D.a.1.1.1\n2,/etc/passwd\n3,..\\\\x\n4,ok\x01name\n5,Conv2D.b.1.1.1\n5,Conv2D.c.1.1.1\n"
        "6,Conv2D.d.1.1.1,x\n7,Conv2D.e.1.1.1\n")
    mapping, bad = read_mapping(tmp_path)
    assert mapping == {"5": "Conv2D.b.1.1.1", "7": "Conv2D.e.1.1.1"}
    reasons = [why for _, why in bad]
    assert sum("points outside this folder" in why for why in reasons) == 3
    assert any("control character" in why for why in reasons)
    assert any("already mapped by row 5" in why for why in reasons)
    assert any("row 7: 3 columns" in why for why in reasons)


def test_a_hashed_file_says_which_mapping_row_was_refused(tmp_path: Path) -> None:
    write_dump(tmp_path / "Conv2D.good.1.1.1", outputs=[np.ones(2, np.float32)])
    write_dump(tmp_path / "1001", outputs=[np.ones(2, np.float32)])
    (tmp_path / "mapping.csv").write_text("1001,../../Conv2D.evil.1.1.1\n")
    run = load_run(tmp_path)
    assert set(run.ops) == {"good"}
    (why,) = [why for p, why in run.skipped if p.name == "1001"]
    assert "row 1 was refused" in why and "points outside this folder" in why


# ------------------------------------------------------------------ rule JSON


def _rule(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rule.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text,needle", [
    ('{"graph": ' + "[" * 5000 + "]" * 5000 + "}", "nested too deeply"),
    ('{"graph": [{"op": [{"name": "a", "type": "Relu", "id": ' + "9" * 5000 + "}]}]}", "4300 digits"),
    ('{"graph": [{"op": [{"name": "a\\ud800", "type": "Relu"}]}]}', "graph[0].op[0].name"),
    ('{"graph": [{"op": [{"name": "a", "type": "Relu", "id": NaN}]}]}', "graph[0].op[0].id"),
    ('{"graph": [{"op": [null]}]}', "graph[0].op[0]"),
    ('[1, 2]', "expected a JSON object"),
])
def test_hostile_rule_json_is_a_rule_error(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(RuleError) as info:
        load_fusion_rule(_rule(tmp_path, text))
    assert needle in str(info.value) and "rule.json" in str(info.value)


def test_duplicate_operator_names(tmp_path: Path) -> None:
    a = {"name": "x", "type": "Relu"}
    same = load_fusion_rule(_rule(tmp_path, json.dumps({"graph": [{"op": [a, dict(a)]}]})))
    assert list(same.ops) == ["x"] and "same operator repeated" in same.warnings[0]
    with pytest.raises(RuleError, match=r"graph\[0\]\.op\[0\] and graph\[1\]\.op\[0\]"):
        load_fusion_rule(_rule(tmp_path, json.dumps({"graph": [{"op": [a]}, {"op": [{"name": "x", "type": "Add"}]}]})))


# ------------------------------------------------------------------ network runs


def _corrupt_network(tmp_path: Path) -> dict[str, Path]:
    paths = make_network(tmp_path / "net", channels=4, size=8)
    leaf, right = paths["leaf"], paths["right"]
    pool = next(leaf.glob("Pooling.pool1.*"))
    pool.write_bytes(pool.read_bytes()[:-7])
    prob = next(leaf.glob("SoftmaxV2.prob.*"))
    prob.write_bytes(b"\xff" * 64)
    fc1 = next(right.glob("fc1.0.*.npy"))
    with open(fc1, "wb") as handle:
        np.save(handle, np.array([None], dtype=object), allow_pickle=True)
    np.save(right / "extra.0.1704110405000099.npy", np.zeros(3, np.float32))  # no rule op uses it
    return paths


def test_a_corrupted_network_loses_nothing(tmp_path: Path) -> None:
    clean_paths = make_network(tmp_path / "clean", channels=4, size=8)
    clean = run_network(clean_paths["left"], clean_paths["right"], clean_paths["fusion_rule"])
    paths = _corrupt_network(tmp_path)
    result = run_network(paths["left"], paths["right"], paths["fusion_rule"])
    # the golden 'extra' that no rule op refers to gets its own "missing on left" row
    assert result.summary() == {"compared": 6, "not comparable": 3, "missing on left": 3, "missing on right": 0}
    assert sum(result.summary().values()) == len(result.rows)
    # every operator of both sides appears in a row
    left_cells = {n for r in result.rows for n in r.left_op.split(",")}
    right_cells = {n for r in result.rows for n in r.right_op.split(",")}
    assert set(result.left.ops) <= left_cells
    assert set(result.right.ops) <= right_cells
    extra = next(r for r in result.rows if r.right_op == "extra")
    assert extra.left_op == "*" and "not referred to by the fusion rule" in extra.reasons[0]
    # each broken file is named with its problem
    reasons = {r.tensor_id or r.left_op: "; ".join(r.reasons) for r in result.rows}
    assert "Pooling.pool1" in reasons["pool1"] and "7 missing" in reasons["pool1"]
    assert "SoftmaxV2.prob" in reasons["prob"] and "header length" in reasons["prob"]
    assert "fc1.0." in reasons["fc1:output:0"] and "never unpickles" in reasons["fc1:output:0"]
    # each healthy tensor has the clean numbers
    before = {r.tensor_id: r for r in clean.rows if r.tensor_id}
    healthy = [r for r in result.rows if r.status is PairStatus.COMPARED]
    assert {r.tensor_id for r in healthy} == {"trans_TransData_0:input:0", "trans_TransData_0:output:0",
                                             "conv1:input:0", "conv1:input:1", "conv1:output:0", "fc1:input:0"}
    for row in healthy:
        assert row.metrics == before[row.tensor_id].metrics and row.std == before[row.tensor_id].std


# ------------------------------------------------------------------ plugins


def _plugin_dir(tmp_path: Path, body: str = "def convert(a, b, c):\n    return c\n") -> Path:
    root = tmp_path / "custom"
    folder = root / "format_convert"
    folder.mkdir(parents=True)
    os.chmod(root, 0o755)
    os.chmod(folder, 0o755)
    path = folder / "convert_NCHW_to_NHWC.py"
    path.write_text(body)
    os.chmod(path, 0o644)
    return root


@pytest.mark.parametrize("which,mode,why", [
    ("root", 0o777, "world-writable"), ("root", 0o775, "group-writable"),
    ("folder", 0o757, "world-writable"), ("folder", 0o770, "group-writable"),
])
def test_writable_plugin_folders_are_refused(tmp_path: Path, which: str, mode: int, why: str) -> None:
    marker = tmp_path / "ran"
    root = _plugin_dir(tmp_path, f"open({str(marker)!r}, 'w').close()\ndef convert(a, b, c):\n    return c\n")
    os.chmod(root if which == "root" else root / "format_convert", mode)
    with pytest.raises(LayoutError, match=f"refusing converter plugins in .*{why}"):
        load_plugins(root)
    assert not marker.exists()


def test_a_symlinked_plugin_is_refused(tmp_path: Path) -> None:
    root = _plugin_dir(tmp_path)
    real = tmp_path / "elsewhere.py"
    real.write_text("def convert(a, b, c):\n    return c\n")
    (root / "format_convert" / "convert_NHWC_to_NCHW.py").symlink_to(real)
    with pytest.raises(LayoutError, match="symbolic link"):
        load_plugins(root)


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown")
def test_a_plugin_of_another_user_is_refused(tmp_path: Path) -> None:
    root = _plugin_dir(tmp_path)
    os.chown(root / "format_convert" / "convert_NCHW_to_NHWC.py", 12345, 12345)
    with pytest.raises(LayoutError, match="owned by uid 12345"):
        load_plugins(root)
    os.chown(root / "format_convert", 12345, 12345)
    with pytest.raises(LayoutError, match="folder is owned by uid 12345"):
        load_plugins(root)


def test_a_safe_plugin_loads_and_runs(tmp_path: Path) -> None:
    root = _plugin_dir(tmp_path, "import numpy as np\ndef convert(a, b, c):\n    return np.asarray(c) * 2\n")
    plugins = load_plugins(root)
    assert set(plugins) == {("NCHW", "NHWC")}
    converter = plugins[("NCHW", "NHWC")]
    assert converter.function.__module__ == "format_convert.convert_NCHW_to_NHWC"
    assert converter([1], [1], np.ones(2)).tolist() == [2.0, 2.0]


def test_a_refused_plugin_stops_the_api_with_a_clear_message(tmp_path: Path) -> None:
    paths = make_network(tmp_path / "net", channels=4, size=8)
    root = _plugin_dir(tmp_path)
    os.chmod(root / "format_convert" / "convert_NCHW_to_NHWC.py", 0o666)
    with pytest.raises(LayoutError, match="world-writable"):
        run_network(paths["left"], paths["right"], paths["fusion_rule"], custom_dir=root)


def test_a_refused_plugin_exits_2_on_the_command_line(tmp_path: Path) -> None:
    from compare.cli import app

    paths = make_network(tmp_path / "net", channels=4, size=8)
    root = _plugin_dir(tmp_path)
    os.chmod(root / "format_convert", 0o777)
    result = runner.invoke(app, ["-l", str(paths["left"]), "-r", str(paths["right"]), "-f",
                                 str(paths["fusion_rule"]), "-c", str(root), "-o", str(tmp_path / "r.csv")])
    assert result.exit_code == 2 and "world-writable" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


# ------------------------------------------------------------------ spreadsheet formulas


def test_cells_are_always_encodable() -> None:
    from compare.reports.cells import encodable

    assert encodable("a\udcffb") == "a\\xffb" and encodable("x\ud800") == "x\\ud800"
    assert encodable("conv1 \u00e9") == "conv1 \u00e9" and neutralise_text("=\udcff") == "'=\\xff"


def test_text_cells_are_neutralised_even_when_they_look_numeric() -> None:
    assert [text_cell(v) for v in ("=cmd", "+1", "@x", "-op", "conv1", None)] == \
        ["'=cmd", "'+1", "'@x", "'-op", "conv1", "NaN"]
    assert neutralise_text("'=x") == "'=x"
    assert neutralise_text("\r=A1") == "'\\r=A1" and neutralise_text(" =A1") == "' =A1"


def _hostile_network(tmp_path: Path) -> dict[str, Path]:
    """The network with pool1 renamed to ``-op`` and prob standing for ``=cmd``, ``+1``, ``@x``."""
    paths = make_network(tmp_path / "net", channels=4, size=8)
    leaf = paths["leaf"]
    pool = next(leaf.glob("Pooling.pool1.*"))
    pool.rename(leaf / pool.name.replace(".pool1.", ".-op."))
    rule = json.loads(paths["fusion_rule"].read_text())
    for op in rule["graph"][0]["op"]:
        if op["name"] == "pool1":
            op["name"] = "-op"
        op["input"] = [i.replace("pool1:", "-op:") for i in op.get("input", [])]
        if op["name"] == "prob":
            op["attr"][0]["value"]["list"]["s"] = ["=cmd", "+1", "@x"]
    paths["fusion_rule"].write_text(json.dumps(rule))
    return paths


def test_network_csv_neutralises_hostile_operator_names(tmp_path: Path) -> None:
    paths = _hostile_network(tmp_path)
    result = run_network(paths["left"], paths["right"], paths["fusion_rule"])
    out = write_report(result.rows, tmp_path / "r.csv", result.metrics)
    with open(out, newline="") as handle:
        rows = list(csv.DictReader(handle))
    cells = {cell for row in rows for cell in row.values()}
    assert "'-op" in cells and "'-op:output:0" in cells and "'=cmd,+1,@x" in cells
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "@")), value
            assert not value.startswith("-") or value.replace(".", "").lstrip("-").isdigit() or value == "-inf", value


def test_single_op_files_neutralise_hostile_names(tmp_path: Path) -> None:
    from compare.reports.single_op import write_operator_report
    from compare.runs.single_op import compare_operator

    paths = _hostile_network(tmp_path)
    result = compare_operator(paths["left"], paths["right"], "-op", fusion_rule=paths["fusion_rule"])
    files = write_operator_report(result, tmp_path / "single")
    for path in [*files.details, *files.topn.values()]:
        header = path.read_text().splitlines()[0].split(",")
        assert not any(cell.startswith(("=", "+", "-", "@")) for cell in header), header
    mapping = _record_mapping(tmp_path, "-x" * 200, "=cmd" * 100, "output", 0)
    _record_mapping(tmp_path, "-x" * 200, "=cmd" * 100, "output", 0)
    with open(mapping, newline="") as handle:
        rows = list(csv.reader(handle))
    assert len(rows) == 2 and rows[1][0].startswith("'-x") and rows[1][1].startswith("'=cmd")


def test_a_file_name_that_is_not_utf8_reaches_the_report_escaped(tmp_path: Path) -> None:
    paths = make_network(tmp_path / "net", channels=4, size=8)
    pool = next(paths["leaf"].glob("Pooling.pool1.*"))
    data = pool.read_bytes()[:-5]
    pool.unlink()
    Path(os.fsdecode(os.fsencode(pool) + b".\xff")).write_bytes(data)
    result = run_network(paths["left"], paths["right"], paths["fusion_rule"])
    out = write_report(result.rows, tmp_path / "r.csv", result.metrics)
    text = out.read_text(encoding="utf-8")
    assert "Pooling.pool1.4.1.1704110400004000.\\xff (byte" in text and "5 missing" in text


def test_cli_runs_a_corrupted_network_without_traceback(tmp_path: Path) -> None:
    from compare.cli import app

    paths = _corrupt_network(tmp_path)
    out = tmp_path / "r.csv"
    result = runner.invoke(app, ["-l", str(paths["left"]), "-r", str(paths["right"]), "-f",
                                 str(paths["fusion_rule"]), "-o", str(out)])
    assert result.exit_code == 0 and "Traceback" not in result.output and out.exists()
    assert "not comparable" in result.stderr


def test_compare_error_is_the_base_of_every_refusal() -> None:
    assert issubclass(DumpFormatError, CompareError) and issubclass(RuleError, CompareError)
    assert stat.S_IWOTH and stat.S_IWGRP  # the plugin checks rely on these bits
