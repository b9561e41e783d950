"""compare.runs.overflow: finding Opdebug records (depth, mapping.csv), linking them to op dumps by
task / stream (/ context / thread) ids, the analysis and the Opdebug marks of the OverFlow column."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compare.errors import OptionError
from compare.records import Run, RunKind
from compare.runs.overflow import analyse_overflow, find_linked, find_opdebug_files, folder_files, opdebug_column
from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.codecs.opdebug import AccType, NewEntry, decode_opdebug, encode_new, encode_old, write_opdebug_file

TS = 1700000000000000


def _op(folder: Path, name: str, array: np.ndarray | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = np.array([1.0, -2.0, 4.0], np.float16) if array is None else array
    return write_dump(folder / name, inputs=[TensorSpec(data, format="NCHW")], outputs=[data], op_name=name)


def _aic(task: int, stream: int, *, context: int = 0xFFFFFFFF, thread: int = 0xFFFFFFFF) -> bytes:
    return encode_new([NewEntry(AccType.AIC, {"task_id": task, "stream_id": stream, "status": 1,
                                              "context_id": context, "thread_id": thread})])


def test_find_depth_mapping_and_order(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(4)])
    deep.mkdir(parents=True)
    write_opdebug_file(deep / f"Opdebug.Node_OpDebug.1.1.{TS + 300}", [encode_old()])
    write_opdebug_file(tmp_path / f"Opdebug.Node_OpDebug.2.1.{TS + 100}", [encode_old()])
    write_opdebug_file(tmp_path / "12345", [encode_old()])  # hashed name, mapped below
    (tmp_path / "mapping.csv").write_text(f"12345,Opdebug.Node_OpDebug.3.1.{TS + 200}\n")
    (tmp_path / f"Opdebug.Node_OpDebug.2.1.{TS + 100}.output.0.json").write_text("{}")
    sources, skipped, notes = find_opdebug_files(tmp_path)
    assert [s.name.timestamp for s in sources] == [TS + 100, TS + 200, TS + 300]
    assert sources[1].path.name == "12345" and sources[1].real_name.startswith("Opdebug.Node_OpDebug.3.1.")
    assert [p.name for p, _ in skipped] == [f"Opdebug.Node_OpDebug.2.1.{TS + 100}.output.0.json"]
    assert notes == []
    shallow, _, notes = find_opdebug_files(tmp_path, max_depth=2)
    assert len(shallow) == 2 and "deeper than 2 levels" in notes[0]


def test_link_by_task_and_stream_earliest(tmp_path: Path) -> None:
    _op(tmp_path, f"Conv2D.conv1.3.1.{TS + 50}")
    _op(tmp_path, f"Conv2D.conv1_again.3.1.{TS + 20}")  # same ids, earlier: chosen
    _op(tmp_path, f"Relu.relu1.3.2.{TS + 10}")  # other stream
    _op(tmp_path, f"Add.nostream.4.{TS + 10}")  # no stream field: stream 0
    files = folder_files(tmp_path)
    hit = find_linked(decode_opdebug(_aic(3, 1)).primary, files)
    assert hit is not None and hit.name.op_name == "conv1_again"
    hit0 = find_linked(decode_opdebug(_aic(4, 0)).primary, files)
    assert hit0 is not None and hit0.name.op_name == "nostream"
    assert find_linked(decode_opdebug(_aic(9, 1)).primary, files) is None


def test_link_by_context_and_thread(tmp_path: Path) -> None:
    _op(tmp_path, f"Add.slice_a.5.1.{TS + 10}.4.0.0.0")
    _op(tmp_path, f"Add.slice_b.5.1.{TS + 20}.4.1.0.0")
    _op(tmp_path, f"Add.slice_c.5.1.{TS + 30}.4.1.2.0")
    files = folder_files(tmp_path)

    def linked(**ids: int) -> str | None:
        hit = find_linked(decode_opdebug(_aic(5, 1, **ids)).primary, files)
        return None if hit is None else hit.name.op_name

    assert linked() == "slice_a"  # no valid context / thread in the record: task and stream only
    assert linked(context=1) == "slice_b"
    assert linked(context=1, thread=2) == "slice_c"
    assert linked(context=7) is None


def test_link_ignores_the_no_id_marker_65535(tmp_path: Path) -> None:
    """65535 (0xFFFF) is the device's "not an FFTS+ sub-task" context / thread id (the reference
    ignores it): such a record links by task and stream, whatever ids the dump names carry."""
    _op(tmp_path, f"Add.slice_b.5.1.{TS + 20}.4.1.0.0")
    _op(tmp_path, f"Add.slice_c.5.1.{TS + 30}.4.1.2.0")
    hit = find_linked(decode_opdebug(_aic(5, 1, context=0xFFFF, thread=0xFFFF)).primary, folder_files(tmp_path))
    assert hit is not None and hit.name.op_name == "slice_b"
    entry = decode_opdebug(_aic(5, 1, context=0xFFFF, thread=3)).primary
    assert (entry.context_id, entry.thread_id) == (None, 3)


def test_analyse_writes_npy_and_statistics(tmp_path: Path) -> None:
    dump, out = tmp_path / "dump" / "leaf", tmp_path / "out"
    _op(dump, f"Conv2D.conv1.3.1.{TS + 50}", np.array([[1, 65504], [-1, 2]], np.float16))
    write_opdebug_file(dump / f"Opdebug.Node_OpDebug.9.1.{TS + 100}", [encode_old((0, 1, 3, 0, 0, 0), status=4)])
    write_opdebug_file(dump / f"Opdebug.Node_OpDebug.9.1.{TS + 200}", [_aic(77, 1)])
    (dump / f"Opdebug.Node_OpDebug.9.1.{TS + 300}").write_bytes(b"not a dump")
    first = analyse_overflow(tmp_path / "dump", out, count=1)
    assert (first.found, first.selected, len(first.findings)) == (3, 1, 1)
    (finding,) = first.findings
    assert finding.linked is not None and finding.linked.op_name == "conv1" and finding.entry.status == 4
    tensor_in, tensor_out = finding.linked.tensors
    assert tensor_out.npy is not None and tensor_out.npy.name == f"Conv2D.conv1.3.1.{TS + 50}.output.0.npy"
    np.testing.assert_array_equal(np.load(tensor_out.npy), np.array([[1, 65504], [-1, 2]], np.float16))
    assert (tensor_out.maximum, tensor_out.minimum, tensor_out.mean) == (65504.0, -1.0, 16376.5)
    assert tensor_in.format == "NCHW" and tensor_in.shape == (2, 2) and tensor_in.dtype == "float16"
    every = analyse_overflow(tmp_path / "dump", out, count=5)
    assert len(every.findings) == 3 and every.undecodable == 1
    assert every.findings[1].linked is None and "task_id 77 and stream_id 1" in every.findings[1].link_problem
    assert every.findings[2].problem is not None and "byte" in every.findings[2].problem


def test_analyse_refuses_bad_options(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="1..5"):
        analyse_overflow(tmp_path, tmp_path / "out", count=6)
    with pytest.raises(OptionError, match="not a folder"):
        analyse_overflow(tmp_path / "missing", tmp_path / "out")


def test_opdebug_column_marks_linked_ops(tmp_path: Path) -> None:
    _op(tmp_path, f"Relu.relu1.4.1.{TS + 10}")
    write_opdebug_file(tmp_path / f"Opdebug.Node_OpDebug.9.1.{TS + 100}", [_aic(4, 1)])
    write_opdebug_file(tmp_path / f"Opdebug.Node_OpDebug.9.1.{TS + 200}", [_aic(40, 1)])
    (tmp_path / f"Opdebug.Node_OpDebug.9.1.{TS + 300}").write_bytes(b"bad")
    run = Run(root=tmp_path, path=tmp_path, kind=RunKind.OFFLINE, coords={"rank": "2", "iteration": "5"})
    column, notes = opdebug_column([run], by_part=False)
    assert column.linked == frozenset({(None, None, "relu1")})
    assert any("no op dump" in n and "task_id 40" in n for n in notes)
    assert any("not decoded" in n for n in notes)
    by_part, _ = opdebug_column([run], by_part=True)
    assert by_part.linked == frozenset({(2, 5, "relu1")})


def test_hashed_op_dump_is_linked_by_its_real_name(tmp_path: Path) -> None:
    _op(tmp_path, "98765")  # stored under a hashed name
    (tmp_path / "mapping.csv").write_text(f"98765,Conv2D.a_very_long_name.6.2.{TS + 5}\n")
    write_dump(tmp_path / "11111", outputs=[np.zeros(2, np.float16)], op_name="x")  # hashed, not in mapping.csv
    files = folder_files(tmp_path)
    assert sorted(f.real_name for f in files) == sorted([f"Conv2D.a_very_long_name.6.2.{TS + 5}", "mapping.csv"])
    hit = find_linked(decode_opdebug(_aic(6, 2)).primary, files)
    assert hit is not None and hit.file.path.name == "98765" and hit.name.op_name == "a_very_long_name"


def test_npy_names_stay_short(tmp_path: Path) -> None:
    from compare.runs.overflow import FolderFile, npy_name
    from convert.names.ascend import parse_offline_name

    long_real = f"Conv2D.{'x' * 240}.6.2.{TS}"
    name = parse_offline_name(long_real)
    assert name is not None
    plain = FolderFile(tmp_path / f"Conv2D.conv1.6.2.{TS}", f"Conv2D.conv1.6.2.{TS}")
    assert npy_name(plain, name, "output", 0) == f"Conv2D.conv1.6.2.{TS}.output.0.npy"
    assert npy_name(FolderFile(tmp_path / "98765", long_real), name, "input", 1) == "98765.input.1.npy"
    assert npy_name(FolderFile(tmp_path / long_real, long_real), name, "input", 1) == f"Conv2D.6.2.{TS}.input.1.npy"


def test_json_copies_count_only_without_their_dump(tmp_path: Path) -> None:
    import json

    from compare.runs.overflow import opdebug_sources

    copy = {"magic": "0x5a5a5a5a", "version": 1, "acc_list": {"valid": 1, "acc_type": "AIC", "rsv": 0, "data_len": 88,
            "data": {"model_id": 0, "stream_id": 1, "task_id": 4, "task_type": 0, "context_id": 2**32 - 1,
                     "thread_id": 2**32 - 1, "pc_start": "0x0", "para_base": "0x0", "core_id": 0, "block_id": 0,
                     "status": 1}}}
    _op(tmp_path, f"Relu.relu1.4.1.{TS + 10}")
    (tmp_path / f"Opdebug.Node_OpDebug.9.1.{TS + 100}.output.0.json").write_text(json.dumps(copy))
    (tmp_path / f"Opdebug.Node_OpDebug.9.1.{TS + 100}.npy").write_bytes(b"")
    sources, skipped = opdebug_sources(folder_files(tmp_path))
    assert [s.real_name for s in sources] == [f"Opdebug.Node_OpDebug.9.1.{TS + 100}.output.0.json"]
    assert [p.name for p, _ in skipped] == [f"Opdebug.Node_OpDebug.9.1.{TS + 100}.npy"]
    run = Run(root=tmp_path, path=tmp_path, kind=RunKind.NUMPY)
    column, _ = opdebug_column([run], by_part=False)  # MindSpore npy dumps hold only the JSON copies
    assert column.linked == frozenset({(None, None, "relu1")})
    analysis = analyse_overflow(tmp_path, tmp_path / "out")
    assert analysis.findings[0].linked is not None and analysis.findings[0].linked.op_name == "relu1"
    write_opdebug_file(tmp_path / f"Opdebug.Node_OpDebug.9.1.{TS + 100}", [_aic(4, 1)])  # now the dump is there
    sources, skipped = opdebug_sources(folder_files(tmp_path))
    assert [s.real_name for s in sources] == [f"Opdebug.Node_OpDebug.9.1.{TS + 100}"]
    assert any("a decoded copy of" in why for _, why in skipped)


def test_converted_tensor_files_stand_for_the_dump(tmp_path: Path) -> None:
    import ml_dtypes

    stem = f"Conv2D.conv1.6.2.{TS + 10}"
    np.save(tmp_path / f"{stem}.input.0.NCHW.npy", np.array([1.0, 2.0], np.float32))
    np.save(tmp_path / f"{stem}.output.0.DefaultFormat.npy", np.array([3.0, -1.0], ml_dtypes.bfloat16))
    (tmp_path / f"{stem}.output.1.ND.npy").write_bytes(b"broken")
    write_opdebug_file(tmp_path / f"Opdebug.Node_OpDebug.9.1.{TS + 100}", [_aic(6, 2)])
    files = folder_files(tmp_path)
    assert find_linked(decode_opdebug(_aic(6, 2)).primary, files) is None  # op dumps only
    analysis = analyse_overflow(tmp_path, tmp_path / "out")
    linked = analysis.findings[0].linked
    assert linked is not None and linked.op_name == "conv1" and linked.real_name == stem
    first, second, third = linked.tensors
    assert (first.kind, first.format, first.maximum, first.mean) == ("input", "NCHW", 2.0, 1.5)
    assert (second.kind, second.dtype, second.maximum, second.minimum) == ("output", "bfloat16", 3.0, -1.0)
    assert second.npy == tmp_path / f"{stem}.output.0.DefaultFormat.npy"  # summarised where it is
    assert third.problem is not None and third.maximum is None
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.npy"))
    run = Run(root=tmp_path, path=tmp_path, kind=RunKind.NUMPY)
    assert opdebug_column([run], by_part=False)[0].linked == frozenset({(None, None, "conv1")})


def test_link_loops_and_broken_links_are_said(tmp_path: Path) -> None:
    import os

    (tmp_path / "a").mkdir()
    os.symlink(tmp_path, tmp_path / "a" / "up")  # a loop back to the root: each folder once
    os.symlink(tmp_path / "missing", tmp_path / "a" / "broken")
    write_opdebug_file(tmp_path / "a" / f"Opdebug.Node_OpDebug.1.1.{TS}", [encode_old()])
    sources, _, notes = find_opdebug_files(tmp_path)
    assert len(sources) == 1
    assert any("broken" in n for n in notes)
