"""Loaders: file-name rules, dump-folder resolution, mapping.csv, offline and golden scanning."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_path
from hypothesis import given, settings
from hypothesis import strategies as st

from compare.errors import CompareError, DumpFormatError
from compare.loaders import READERS, OpenRequest, Reader, detect, load_run
from compare.loaders.ascend import clean_op_name
from compare.loaders.ascend_offline import scan_offline
from compare.loaders.golden_npy import scan_golden
from compare.records import Run, RunKind, TensorKind
from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.codecs.npy import NpyHeader, load_npy, read_npy_header
from convert.names.ascend import OfflineName, parse_offline_name
from convert.names.golden import parse_golden_name
from convert.names.hashed import read_mapping
from convert.tree import resolve_dump_folder

TS = 1700000000004805  # a 16-digit timestamp


def _dump(folder: Path, name: str, *, outputs=None, inputs=None, version: int = 2) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if outputs is None:
        outputs = [np.arange(6, dtype=np.float16).reshape(2, 3)]
    return write_dump(folder / name, inputs=inputs or (), outputs=outputs, version=version)


def _npy(folder: Path, name: str, array=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with open(path, "wb") as handle:
        np.save(handle, np.arange(4, dtype=np.float32) if array is None else array)
    return path


# ------------------------------------------------------------------------------ name parsing


@pytest.mark.parametrize(
    "name, expected",
    [
        ("Conv2D.conv1.4.1700000000004805", ("Conv2D", "conv1", 4, None, 1700000000004805, None)),
        ("Conv2D.conv1.4.1.1700000000004805", ("Conv2D", "conv1", 4, 1, 1700000000004805, None)),
        ("Conv2D.conv1.4.1.1700000000004805.0.7.2.0", ("Conv2D", "conv1", 4, 1, 1700000000004805, 0)),
        ("Add.add-1_x.12.3.1700000000000001.4.1.0.0", ("Add", "add-1_x", 12, 3, 1700000000000001, 4)),
        ("Conv2D.conv1.4.1700000000004805.1.7.2.0", ("Conv2D", "conv1", 4, None, 1700000000004805, 1)),
        ("MatMul.mm.0.5", ("MatMul", "mm", 0, None, 5, None)),
    ],
)
def test_parse_offline_forms(name: str, expected: tuple) -> None:
    parsed = parse_offline_name(name)
    assert parsed is not None
    got = (parsed.op_type, parsed.op_name, parsed.task_id, parsed.stream_id, parsed.timestamp, parsed.task_type)
    assert got == expected
    assert parsed.trailing == ""


def test_parse_offline_long_form_fields() -> None:
    parsed = parse_offline_name("Eltwise.res2a.9.1.1700000000012376.2.7.3.0")
    assert parsed is not None
    assert parsed.timestamp_digits == "1700000000012376"
    assert parsed.task_type == 2
    assert parsed.extra == ("2", "7", "3", "0")
    assert parsed.task_type_problem is None


def test_parse_offline_trailing_text_is_tolerated_and_recorded() -> None:
    parsed = parse_offline_name("Eltwise.res2a.12.1.17000000000000.npy.tmp")
    assert parsed is not None
    assert (parsed.op_name, parsed.stream_id, parsed.timestamp) == ("res2a", 1, 17000000000000)
    assert parsed.trailing == ".npy.tmp"
    assert parsed.sort_key == 0  # 14 digits: sorts as 0


@pytest.mark.parametrize(
    "name",
    ["conv1_output_dump.bin", "MaxPool.pool1.x.y", "Conv2D.conv1.4", "Conv 2D.conv1.4.1", "Conv2D..4.1", ".a.1.2", "", "a.b"],
)
def test_parse_offline_bad_names(name: str) -> None:
    assert parse_offline_name(name) is None


def test_task_type_9_is_parsed_but_flagged() -> None:
    parsed = parse_offline_name("Eltwise.res2a.9.1.1700000000012376.9.7.0.0")
    assert parsed is not None and parsed.task_type == 9
    problem = parsed.task_type_problem
    assert problem is not None and "9" in problem and "0 AICORE" in problem and "exit 37" in problem


_word = st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True)
_num = st.integers(min_value=0, max_value=10**6)


@settings(max_examples=200, deadline=None)
@given(
    op_type=_word,
    op_name=_word,
    task=_num,
    stream=st.none() | _num,
    ts=st.integers(min_value=0, max_value=10**18),
    long=st.none() | st.tuples(st.integers(0, 4), _num, _num, _num),
)
def test_generated_names_parse_back(op_type, op_name, task, stream, ts, long) -> None:
    fields = [op_type, op_name, str(task)] + ([] if stream is None else [str(stream)]) + [str(ts)]
    if long is not None:
        fields += [str(v) for v in long]
    parsed = parse_offline_name(".".join(fields))
    assert isinstance(parsed, OfflineName)
    assert (parsed.op_type, parsed.op_name, parsed.task_id, parsed.stream_id) == (op_type, op_name, task, stream)
    assert parsed.timestamp == ts and parsed.timestamp_digits == str(ts)
    assert parsed.task_type == (None if long is None else long[0])
    assert parsed.sort_key == (ts if len(str(ts)) == 16 else 0)


@pytest.mark.parametrize(
    "raw, fusion, expected",
    [
        ("conv1_lxslice0", False, "conv1"),
        ("conv1_lxslice12", True, "conv1"),
        ("a_lxslice1_b", True, "a_b"),
        ("a_lxslice1_b", False, None),  # _lxslice left in the middle: ignored
        ("partitioncall_0_sgt_graph_3_conv1", False, "conv1"),
        ("x_sgt_graph_0_y_sgt_graph_12_conv1", False, "conv1"),
        ("tail_sgt_graph_3", False, "tail_sgt_graph_3"),  # match at the end: kept
        ("conv1", False, "conv1"),
    ],
)
def test_clean_op_name(raw: str, fusion: bool, expected: str | None) -> None:
    assert clean_op_name(raw, fusion_rule=fusion) == expected
    assert clean_op_name(raw, keep_raw_names=True) == raw


def test_parse_golden_names() -> None:
    g = parse_golden_name("a.b_c.1.1700000005000911.npy")
    assert g is not None and (g.kind, g.op_name, g.output_index, g.timestamp) == ("npy", "a.b_c", 1, 1700000005000911)
    assert parse_golden_name("conv1.0.123.pb").kind == "pb"
    assert parse_golden_name("a.b.0.123.pb") is None  # no dots in .pb names
    assert parse_golden_name("conv1.0.123.quant").kind == "quant"
    assert parse_golden_name("res2b_relu_output0.npy") is None
    assert parse_golden_name("Conv2D.conv1.4.1.1700000000004805") is None


# ----------------------------------------------------------------------- dump-folder search


def test_resolve_leaf_folder(tmp_path: Path) -> None:
    _dump(tmp_path, f"Conv2D.conv1.4.1.{TS}")
    folder, notes = resolve_dump_folder(tmp_path)
    assert folder == tmp_path and notes == []


def test_resolve_parent_tree_picks_newest(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    _dump(root / "20240315101530" / "0" / "net" / "1" / "0", f"Conv2D.old.4.1.{TS}")
    _dump(root / "20240316093012" / "0" / "net" / "1" / "0", f"Conv2D.mid.4.1.{TS}")
    _dump(root / "20240316093012" / "0" / "net" / "1" / "10", f"Conv2D.new.4.1.{TS}")
    _dump(root / "20240316093012" / "0" / "net" / "1" / "9", f"Conv2D.nine.4.1.{TS}")
    folder, notes = resolve_dump_folder(root)
    assert folder == root / "20240316093012" / "0" / "net" / "1" / "10"
    assert len(notes) == 1 and "newest of 4" in notes[0] and str(folder) in notes[0]
    run = load_run(root)
    assert list(run.ops) == ["new"] and run.root == root and run.path == folder
    assert any("newest of 4" in n for n in run.notes)


def test_resolve_single_candidate_note_and_stray_files(tmp_path: Path) -> None:
    (tmp_path / "README.txt").write_text("not a dump")
    leaf = tmp_path / "20240315101530" / "0" / "net" / "1" / "0"
    _dump(leaf, f"Conv2D.conv1.4.1.{TS}")
    folder, notes = resolve_dump_folder(tmp_path)
    assert folder == leaf and "found under" in notes[0]


def test_resolve_depth_is_bounded(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*"abcdefgh")
    _dump(deep, f"Conv2D.conv1.4.1.{TS}")
    folder, notes = resolve_dump_folder(tmp_path)
    assert folder == tmp_path and notes == []
    with pytest.raises(CompareError, match=str(tmp_path)):
        load_run(tmp_path)


def test_missing_and_file_paths(tmp_path: Path) -> None:
    with pytest.raises(CompareError, match="does not exist"):
        load_run(tmp_path / "nope")
    f = _dump(tmp_path, f"Conv2D.conv1.4.1.{TS}")
    with pytest.raises(CompareError, match="is a file"):
        load_run(f)


def test_empty_folder_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    with pytest.raises(CompareError, match=f"{tmp_path}.*empty"):
        load_run(tmp_path)
    with pytest.raises(CompareError, match="empty"):
        scan_offline(tmp_path)


def test_only_bad_names_lists_files_and_reasons(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"x")
    (tmp_path / "b.c.d.e").write_bytes(b"x")
    with pytest.raises(DumpFormatError) as info:
        load_run(tmp_path)
    msg = str(info.value)
    assert str(tmp_path) in msg and "2 file(s)" in msg
    assert "a.bin (name matches no dump naming rule" in msg and "b.c.d.e" in msg
    with pytest.raises(DumpFormatError, match="a.bin"):
        detect(tmp_path)


# -------------------------------------------------------------------------- offline scanning


def test_scan_offline_latest_timestamp_wins(tmp_path: Path) -> None:
    a = _dump(tmp_path, "Conv2D.conv1.4.1.1700000000000001", outputs=[np.zeros(2, np.float16)])
    b = _dump(tmp_path, "Conv2D.conv1.5.1.1700000000000002", outputs=[np.ones(3, np.float16)])
    short = _dump(tmp_path, "Conv2D.conv1.6.1.999", outputs=[np.ones(4, np.float16)])  # sorts as 0
    _dump(tmp_path, "Relu.relu1.7.1700000000000003", outputs=[np.ones(5, np.float32)])
    run = scan_offline(tmp_path)
    assert run.kind is RunKind.OFFLINE and sorted(run.ops) == ["conv1", "relu1"]
    op = run.ops["conv1"]
    assert op.path == b and op.files == (short, a, b) and op.timestamp == 1700000000000002
    assert op.op_type == "Conv2D" and op.error is None
    out = op.tensor(TensorKind.OUTPUT, 0)
    assert out is not None and out.shape == (3,) and out.dtype == "float16" and out.format == "ND"
    assert out.op_name == "conv1" and out.tensor_id == "conv1:output:0" and out.nbytes == 6
    np.testing.assert_array_equal(out.load(), np.ones(3, np.float16))


def test_scan_offline_ties_are_name_ordered(tmp_path: Path) -> None:
    _dump(tmp_path, "Conv2D.conv1.4.1.12")
    last = _dump(tmp_path, "Conv2D.conv1.4.1.13")
    assert scan_offline(tmp_path).ops["conv1"].path == last


def test_scan_offline_tensor_metadata(tmp_path: Path) -> None:
    x = np.arange(1 * 1 * 2 * 2 * 16, dtype=np.float16).reshape(1, 1, 2, 2, 16)
    w = np.arange(8, dtype=np.float32)
    _dump(
        tmp_path,
        f"Conv2D.conv1.4.1.{TS}",
        inputs=[TensorSpec(x, format="NC1HWC0", original_shape=(1, 3, 2, 2), address=4096), w],
        outputs=[TensorSpec(x, format="NC1HWC0", original_shape=(1, 3, 2, 2))],
    )
    op = scan_offline(tmp_path).ops["conv1"]
    i0, i1 = op.inputs
    assert (i0.kind, i0.index, i0.format, i0.shape, i0.original_shape, i0.address) == (
        TensorKind.INPUT, 0, "NC1HWC0", (1, 1, 2, 2, 16), (1, 3, 2, 2), 4096
    )
    assert i1.dtype == "float32" and i1.index == 1
    np.testing.assert_array_equal(op.outputs[0].load(), x)


def test_scan_offline_v1_protobuf(tmp_path: Path) -> None:
    _dump(tmp_path, f"Conv2D.conv1.4.{TS}", outputs=[np.ones((2, 2), np.float32)], version=1)
    for version in (None, 1):
        op = load_run(tmp_path, version=version).ops["conv1"]
        assert op.error is None
        np.testing.assert_array_equal(op.outputs[0].load(), np.ones((2, 2), np.float32))


def test_bad_header_keeps_op_with_error(tmp_path: Path) -> None:
    good = _dump(tmp_path, f"Conv2D.conv1.4.1.{TS}")
    bad = tmp_path / f"Relu.relu1.5.1.{TS}"
    bad.write_bytes(good.read_bytes()[:-5])
    run = load_run(tmp_path)
    op = run.ops["relu1"]
    assert op.error is not None and bad.name in op.error and "truncated" in op.error
    assert op.inputs == () and op.outputs == () and op.op_type == "Relu"
    assert run.ops["conv1"].error is None


def test_bad_names_and_task_type_are_skipped(tmp_path: Path) -> None:
    _dump(tmp_path, f"Conv2D.conv1.4.1.{TS}")
    bad_task = _dump(tmp_path, f"Eltwise.res2a.9.1.{TS}.9.7.0.0")
    (tmp_path / "junk.bin").write_bytes(b"")
    (tmp_path / "mapping.csv").write_text("")
    (tmp_path / "convert_failed_file_list.txt").write_text("")
    (tmp_path / "subdir").mkdir()
    run = load_run(tmp_path)
    assert list(run.ops) == ["conv1"]
    reasons = {p.name: r for p, r in run.skipped}
    assert set(reasons) == {bad_task.name, "junk.bin"}
    assert "task-type" in reasons[bad_task.name] and "matches no dump naming rule" in reasons["junk.bin"]


def test_only_bad_task_types_is_an_error(tmp_path: Path) -> None:
    _dump(tmp_path, f"Eltwise.res2a.9.1.{TS}.9.7.0.0")
    with pytest.raises(CompareError, match="task-type"):
        scan_offline(tmp_path)


def test_lxslice_files_group_under_clean_name(tmp_path: Path) -> None:
    _dump(tmp_path, "Conv2D.conv1_lxslice0.4.1.1700000000000001")
    last = _dump(tmp_path, "Conv2D.conv1_lxslice1.5.1.1700000000000002")
    mid = _dump(tmp_path, "Conv2D.a_lxslice1_b.6.1.1700000000000002")
    run = scan_offline(tmp_path)
    assert list(run.ops) == ["conv1"] and run.ops["conv1"].path == last
    assert [p for p, _ in run.skipped] == [mid]
    raw = scan_offline(tmp_path, keep_raw_names=True)
    assert sorted(raw.ops) == ["a_lxslice1_b", "conv1_lxslice0", "conv1_lxslice1"]
    fused = scan_offline(tmp_path, fusion_rule=True)
    assert sorted(fused.ops) == ["a_b", "conv1"]


def test_quantized_flag(tmp_path: Path) -> None:
    _dump(tmp_path, f"AscendQuant.conv1_quant_layer.4.1.{TS}")
    assert scan_offline(tmp_path).quantized
    other = tmp_path / "plain"
    _dump(other, f"Conv2D.conv1.4.1.{TS}")
    assert not scan_offline(other).quantized


def test_trailing_text_note(tmp_path: Path) -> None:
    _dump(tmp_path, f"Conv2D.conv1.4.1.{TS}.bak")
    run = load_run(tmp_path)
    assert list(run.ops) == ["conv1"]
    assert any(".bak" in note and "prefix" in note for note in run.notes)


# -------------------------------------------------------------------------------- mapping.csv


def test_mapping_csv_renames_hashed_files(tmp_path: Path) -> None:
    hashed = _dump(tmp_path, "1234567")
    _dump(tmp_path, "7654321")  # not in the map
    (tmp_path / "mapping.csv").write_text(
        f"1234567,Conv2D.a_very_long_name.4.1.{TS}\n"
        "99,too,many\n"
        "98,../escape\n"
        "\n"
        "97,sub/dir.1.2.3\n"
    )
    run = load_run(tmp_path)
    op = run.ops["a_very_long_name"]
    assert op.path == hashed and op.op_type == "Conv2D" and op.error is None
    reasons = [(p.name, r) for p, r in run.skipped]
    assert ("7654321", "hashed file name (not listed in mapping.csv), cannot tell which op it is") in reasons
    rows = sorted(r for n, r in reasons if n == "mapping.csv")
    assert len(rows) == 3
    assert rows[0].startswith("row 2: 3 columns") and rows[1].startswith("row 3:") and rows[2].startswith("row 5:")


def test_hashed_without_mapping_csv(tmp_path: Path) -> None:
    _dump(tmp_path, "1234567")
    _dump(tmp_path, f"Conv2D.conv1.4.1.{TS}")
    run = load_run(tmp_path)
    assert list(run.ops) == ["conv1"]
    assert run.skipped[0][0].name == "1234567" and "no mapping.csv" in run.skipped[0][1]


def test_mapping_hashed_npy(tmp_path: Path) -> None:
    path = _npy(tmp_path, "42.npy")
    (tmp_path / "mapping.csv").write_text("42,some_op.0.1700000005000911\n")
    run = load_run(tmp_path)
    assert run.kind is RunKind.NUMPY and run.ops["some_op"].outputs[0].path == path


def test_read_mapping_missing(tmp_path: Path) -> None:
    assert read_mapping(tmp_path) == ({}, [])


# ------------------------------------------------------------------------------ golden .npy


def test_scan_golden_npy(tmp_path: Path) -> None:
    _npy(tmp_path, "conv1_relu.0.1700000005000001.npy", np.zeros((1, 2), np.float32))
    new = _npy(tmp_path, "conv1_relu.0.1700000005000002.npy", np.ones((1, 3), np.float32))
    _npy(tmp_path, "conv1_relu.0.12.npy", np.ones(9, np.float32))  # short timestamp sorts as 0
    _npy(tmp_path, "slice5.0.1700000005000003.npy", np.ones(2, np.float16))
    s1 = _npy(tmp_path, "slice5.1.1700000005000004.npy", np.arange(5, dtype=np.float64))
    _npy(tmp_path, "a_b.c.0.1700000005000005.npy")
    (tmp_path / "bad_output0.npy").write_bytes(b"")
    run = load_run(tmp_path)
    assert detect(tmp_path) is RunKind.NUMPY
    assert run.kind is RunKind.NUMPY and not run.quantized
    assert sorted(run.ops) == ["a_b.c", "conv1_relu", "slice5"]
    op = run.ops["conv1_relu"]
    assert op.path == new and len(op.files) == 3 and op.op_type is None
    ref = op.outputs[0]
    assert (ref.index, ref.dtype, ref.format, ref.shape, ref.address) == (0, "float32", "RESERVED", (1, 3), 0)
    assert [r.index for r in run.ops["slice5"].outputs] == [0, 1]
    out1 = run.ops["slice5"].tensor(TensorKind.OUTPUT, 1)
    assert out1.path == s1 and out1.dtype == "float64"
    np.testing.assert_array_equal(out1.load(), np.arange(5, dtype=np.float64))
    assert run.find("a_b.c") is run.ops["a_b.c"]
    assert [p.name for p, _ in run.skipped] == ["bad_output0.npy"]


def test_golden_lookup_is_normalised(tmp_path: Path) -> None:
    _npy(tmp_path, "scope_conv_Conv2D.0.1700000005000001.npy")
    run = load_run(tmp_path)
    assert run.find("scope/conv/Conv2D") is run.ops["scope_conv_Conv2D"]


def test_npy_header_only_at_scan_time(tmp_path: Path) -> None:
    path = _npy(tmp_path, "x.0.1700000005000001.npy", np.ones((3, 4), ">f4"))
    header = read_npy_header(path)
    assert header.shape == (3, 4) and header.dtype == np.dtype(">f4")
    ref = scan_golden(tmp_path).ops["x"].outputs[0]
    assert ref.dtype == "float32" and ref.nbytes == 48
    np.testing.assert_array_equal(ref.load(), np.ones((3, 4), np.float32))


def test_pickled_npy_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "obj.0.1700000005000001.npy"
    with open(path, "wb") as handle:
        np.save(handle, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    # refused from the header alone (issue 7: before, the TensorRef was made and load() refused)
    op = load_run(tmp_path).ops["obj"]
    assert op.outputs == () and op.error is not None
    assert re.search(r"obj\.0\.1700000005000001\.npy.*(pickle|object)", op.error)
    with pytest.raises(DumpFormatError, match="never unpickles"):
        load_npy(path, NpyHeader((2,), np.dtype(object), False, 128))


def test_truncated_and_garbage_npy(tmp_path: Path) -> None:
    full = _npy(tmp_path, "t.0.1700000005000001.npy", np.ones(100, np.float32))
    full.write_bytes(full.read_bytes()[:-40])
    (tmp_path / "g.0.1700000005000001.npy").write_bytes(b"not an npy file at all")
    run = load_run(tmp_path)
    with pytest.raises(DumpFormatError, match="truncated"):
        run.ops["t"].outputs[0].load()
    g = run.ops["g"]
    assert g.outputs == () and g.error is not None and "g.0.1700000005000001.npy" in g.error


def test_empty_npy_array_loads(tmp_path: Path) -> None:
    _npy(tmp_path, "e.0.1700000005000001.npy", np.zeros((0, 3), np.float32))
    assert load_run(tmp_path).ops["e"].outputs[0].load().shape == (0, 3)


def test_quantized_npy_folder_is_quant(tmp_path: Path) -> None:
    _npy(tmp_path, "conv1_quant_layer.0.1700000005000001.npy")
    _npy(tmp_path, "conv1.0.1700000005000002.npy")
    run = load_run(tmp_path)
    assert run.kind is RunKind.QUANT and run.quantized
    assert detect(tmp_path) is RunKind.QUANT


def test_pb_and_quant_golden_files(tmp_path: Path) -> None:
    pb = tmp_path / "pb"
    _dump(pb, "conv1.0.1700000005000001.pb", outputs=[np.ones((2, 2), np.float32), np.zeros(3, np.float32)])
    _dump(pb, "conv1.1.1700000005000001.pb", outputs=[np.full(4, 2, np.float32)])
    run = load_run(pb)
    assert run.kind is RunKind.STANDARD and detect(pb) is RunKind.STANDARD
    outs = run.ops["conv1"].outputs
    assert [(r.index, r.shape) for r in outs] == [(0, (2, 2)), (1, (4,))]
    np.testing.assert_array_equal(outs[1].load(), np.full(4, 2, np.float32))
    quant = tmp_path / "quant"
    _dump(quant, "conv1.0.1700000005000001.quant")
    run = load_run(quant)
    assert run.kind is RunKind.QUANT and run.quantized


def test_mixed_folder_uses_majority(tmp_path: Path) -> None:
    for i in range(3):
        _npy(tmp_path, f"op{i}.0.1700000005000001.npy")
    stray = _dump(tmp_path, f"Conv2D.conv1.4.1.{TS}")
    run = load_run(tmp_path)
    assert run.kind is RunKind.NUMPY and sorted(run.ops) == ["op0", "op1", "op2"]
    assert [(p, "mixed" in r or "one kind" in r) for p, r in run.skipped] == [(stray, True)]
    forced = load_run(tmp_path, kind=RunKind.OFFLINE)
    assert list(forced.ops) == ["conv1"] and len(forced.skipped) == 3


def test_wrong_kind_scanners_explain(tmp_path: Path) -> None:
    _dump(tmp_path, f"Conv2D.conv1.4.1.{TS}")
    with pytest.raises(CompareError, match="Ascend offline dump file; this folder is read for golden .npy files"):
        scan_golden(tmp_path)
    golden = tmp_path / "golden"
    _npy(golden, "conv1.0.1700000005000001.npy")
    with pytest.raises(CompareError, match="golden .npy file; this folder is read for Ascend offline dump files"):
        scan_offline(golden)


def test_registry_declines_quietly_and_accepts_new_readers(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "a.bin").write_bytes(b"")
    assert [r.guess_can_open(tmp_path) for r in READERS] == [False] * len(READERS)

    class BinReader(Reader):
        name = "bin"
        kinds = (RunKind.NUMPY,)

        def guess_can_open(self, folder: Path) -> bool:
            return any(p.suffix == ".bin" for p in folder.iterdir())

        def explain(self, folder: Path) -> str:
            return "no .bin file"

        def open(self, folder: Path, request: OpenRequest) -> Run:
            return Run(root=request.root, path=folder, kind=RunKind.NUMPY)

    monkeypatch.setattr("compare.loaders.READERS", [*READERS, BinReader()])
    run = load_run(tmp_path)
    assert run.kind is RunKind.NUMPY and run.root == tmp_path


def test_third_party_readers_come_from_the_entry_point_group(tmp_path: Path, monkeypatch) -> None:
    """A ``vcompare.readers`` entry point (a Reader class or instance) is tried after the built-in
    readers; the "no reader found" message names it with the others."""
    import compare.loaders as loaders

    class TxtReader(Reader):
        name = "txt"
        kinds = (RunKind.NUMPY,)

        def explain(self, folder: Path) -> str:
            return "no .txt file"

        def open(self, folder: Path, request: OpenRequest) -> Run:
            return Run(root=request.root, path=folder, kind=RunKind.NUMPY)

    class Point:
        def load(self) -> type:
            return TxtReader

    monkeypatch.setattr(loaders, "entry_points", lambda group: [Point()] if group == loaders.ENTRY_POINT_GROUP else [])
    loaders._plugin_readers.cache_clear()
    try:
        assert [r.name for r in loaders.readers()][-1] == "txt"
        (tmp_path / "a.bin").write_bytes(b"x")
        with pytest.raises(CompareError, match="txt: no .txt file"):
            load_run(tmp_path)
    finally:
        loaders._plugin_readers.cache_clear()


def test_a_broken_reader_entry_point_is_named(tmp_path: Path, monkeypatch) -> None:
    import compare.loaders as loaders

    class Point:
        name, value = "broken", "broken_pkg:Reader"

        def load(self) -> object:
            raise ImportError("No module named 'broken_pkg'")

    class NotAReader(Point):
        name, value = "odd", "odd_pkg:thing"

        def load(self) -> object:
            return object()

    for point, message in ((Point(), "reader entry point broken = broken_pkg:Reader .* cannot be loaded: "
                                     "ImportError: No module named 'broken_pkg'"),
                           (NotAReader(), "reader entry point odd = odd_pkg:thing .* is not a compare.loaders.Reader")):
        monkeypatch.setattr(loaders, "entry_points", lambda group, point=point: [point])
        loaders._plugin_readers.cache_clear()
        try:
            with pytest.raises(CompareError, match=message):
                load_run(tmp_path)
        finally:
            loaders._plugin_readers.cache_clear()


# ---------------------------------------------------------------------------- shared cases


def _case(name: str) -> tuple[Path, dict]:
    root = shared_path("cases", name)
    return root, json.loads((root / "case.json").read_text())


def _golden_files(right: Path) -> int:
    return sum(1 for n in os.listdir(right) if n.endswith(".npy"))


def test_shared_ascend_vs_caffe_npy() -> None:
    root, case = _case("ascend_vs_caffe_npy")
    left = load_run(root / "left")  # the parent tree
    assert left.path == root / case["left_dir"]
    assert left.kind is RunKind.OFFLINE and len(left.ops) == 22 and not left.skipped
    assert any("found under" in n for n in left.notes)
    right = load_run(root / case["right_dir"])
    assert right.kind is RunKind.NUMPY and not right.quantized
    assert sum(len(op.outputs) for op in right.ops.values()) == case["n_golden_layers"] == _golden_files(root / "right")
    assert len(right.ops["slice5"].outputs) == 2
    for pair in case["pairs"]:
        op_name, kind, index = pair["tensor_id"].split(":")
        ref = left.ops[op_name].tensor(TensorKind(kind), int(index))
        assert ref is not None and ref.path == root / pair["left_file"]
        assert ref.format == pair["left_format"]
        if not pair["right_file"]:
            continue
        name = parse_golden_name(Path(pair["right_file"]).name)
        golden = right.find(name.op_name)
        assert golden is not None and golden.tensor(TensorKind.OUTPUT, name.output_index).path == root / pair["right_file"]
    conv1 = left.ops["conv1"]
    assert conv1.op_type == "Conv2D" and conv1.inputs[1].format == "FRACTAL_Z"
    data = conv1.outputs[0].load()
    assert data.dtype == np.float16 and data.shape == conv1.outputs[0].shape


def test_shared_ascend_v1_protobuf() -> None:
    root, case = _case("ascend_v1_protobuf")
    assert case["dump_version"] == 1
    for version in (1, None):
        left = load_run(root / "left", version=version)
        assert len(left.ops) == 22 and all(op.error is None for op in left.ops.values())
        assert all(op.path.name.count(".") == 3 for op in left.ops.values())  # no stream id
    op = left.ops["slice5"]
    assert len(op.outputs) == 2 and op.outputs[1].load().size > 0


def test_shared_ascend_vs_ascend() -> None:
    root, case = _case("ascend_vs_ascend")
    left, right = load_run(root / "left"), load_run(root / "right")
    assert left.path == root / case["left_dir"] and right.path == root / case["right_dir"]
    assert left.kind is right.kind is RunKind.OFFLINE
    assert set(case["one_sided_ops"]["left_only"]) == set(left.ops) - set(right.ops)
    assert set(case["one_sided_ops"]["right_only"]) == set(right.ops) - set(left.ops)
    assert detect(root / "right") is RunKind.OFFLINE


def _scenario(name: str) -> tuple[Path, dict]:
    root, case = _case("bad_inputs")
    return root / name, next(s for s in case["scenarios"] if s["name"] == name)


def test_shared_truncated_dump() -> None:
    folder, scenario = _scenario("truncated_dump")
    run = load_run(folder / "left")
    op = next(op for op in run.ops.values() if op.path.name == scenario["target"])
    assert op.error is not None and scenario["target"] in op.error and "truncated" in op.error
    assert op.inputs == () and op.outputs == ()
    assert sum(1 for o in run.ops.values() if o.error) == 1


@pytest.mark.parametrize("name", ["header_past_end", "garbage_dump"])
def test_shared_broken_headers_keep_ops(name: str) -> None:
    folder, scenario = _scenario(name)
    targets = scenario["target"] if isinstance(scenario["target"], list) else [scenario["target"]]
    run = load_run(folder / "left")
    broken = {op.path.name: op.error for op in run.ops.values() if op.error}
    assert set(broken) == set(targets)
    assert all(target in broken[target] for target in targets)


def test_shared_bad_names() -> None:
    folder, scenario = _scenario("bad_names")
    left = load_run(folder / "left")
    skipped = {p.name: r for p, r in left.skipped}
    assert set(skipped) == {"conv1_output_dump.bin", "MaxPool.pool1.x.y"}
    assert all("naming rule" in r for r in skipped.values())
    # The reference matches offline names by prefix, so this one still loads (as res2a); we note it.
    tmp = "Eltwise.res2a.12.1.17000000000000.npy.tmp"
    assert tmp in scenario["target"] and left.ops["res2a"].path.name == tmp
    assert any(tmp in n for n in left.notes)
    others = [n for n in os.listdir(folder / "left") if n not in skipped]
    assert len(left.ops) == len(others)
    right = load_run(folder / "right")
    assert [p.name for p, _ in right.skipped] == ["res2b_relu_output0.npy"]
    assert "res2b_relu" not in right.ops and len(right.ops) > 0


def test_shared_bad_task_type() -> None:
    folder, scenario = _scenario("bad_task_type")
    run = load_run(folder / "left")
    assert [p.name for p, _ in run.skipped] == [scenario["target"]]
    assert "task-type" in run.skipped[0][1]
    assert "res2a" not in run.ops and len(run.ops) == len(os.listdir(folder / "left")) - 1


def test_shared_empty_dir() -> None:
    folder, _ = _scenario("empty_dir")
    with pytest.raises(CompareError, match="empty_dir/left"):
        load_run(folder / "left")


def test_shared_only_bad_names() -> None:
    folder, scenario = _scenario("only_bad_names")
    with pytest.raises(CompareError) as info:
        load_run(folder / "left")
    msg = str(info.value)
    assert "only_bad_names/left" in msg and scenario["target"] in msg and "naming rule" in msg
