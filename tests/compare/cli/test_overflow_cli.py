"""``vcompare overflow`` and ``--overflow`` / ``-overflow_detection``, through typer's runner and the
subcommand dispatch."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.cli.main import run
from compare.cli.overflow import overflow_app
from convert.codecs.dumpwrite import write_dump
from convert.codecs.opdebug import AccType, NewEntry, encode_new, encode_old, write_opdebug_file

TS = 1700000000000000
runner = CliRunner()


def _dump(folder: Path) -> Path:
    folder.mkdir(parents=True)
    write_dump(folder / f"Conv2D.conv1.3.1.{TS + 50}", outputs=[np.array([1, 65504], np.float16)], op_name="conv1")
    write_opdebug_file(folder / f"Opdebug.Node_OpDebug.9.1.{TS + 100}", [encode_old((0, 1, 3, 0, 0, 0), status=4)])
    return folder


def test_overflow_subcommand(tmp_path: Path) -> None:
    dump, out = _dump(tmp_path / "dump" / "0"), tmp_path / "out"
    result = runner.invoke(overflow_app, ["-d", str(tmp_path / "dump"), "-out", str(out)])
    assert result.exit_code == 0, result.output
    (txt,) = out.glob("overflow_summary_*.txt")
    (doc,) = out.glob("overflow_summary_*.json")
    assert f"summary: {txt}" in result.stdout and f"json: {doc}" in result.stdout
    lines = txt.read_text().splitlines()
    assert lines[1:3] == ["[Conv2D] conv1", " [AI Core][TaskId:3][StreamId:1][Status:4]"]
    assert "[Max: 6.55e+04] [Min: 1.0] [Mean: 3.275e+04]" in lines[-1]  # numpy's float16 text
    assert (out / f"Conv2D.conv1.3.1.{TS + 50}.output.0.npy").is_file()
    assert json.loads(doc.read_text())["findings"][0]["linked_dump"]["op_name"] == "conv1"
    assert "[1] AI Core task 3 stream 1 status 4: Conv2D conv1" in result.stderr
    assert dump.is_dir()


def test_overflow_exit_codes(tmp_path: Path) -> None:
    dump = _dump(tmp_path / "dump")
    (dump / f"Opdebug.Node_OpDebug.9.1.{TS + 200}").write_bytes(b"broken")
    two = runner.invoke(overflow_app, ["-d", str(dump), "-o", str(tmp_path / "a"), "-n", "2"])
    assert two.exit_code == 1, two.output  # one record could not be decoded: said in its block
    assert "1 not decoded" in two.stderr
    assert "not decoded" in next((tmp_path / "a").glob("*.txt")).read_text()
    assert runner.invoke(overflow_app, ["-d", str(dump), "-o", str(tmp_path / "b"), "-n", "1"]).exit_code == 0
    missing = runner.invoke(overflow_app, ["-d", str(tmp_path / "nowhere"), "-o", str(tmp_path / "c")])
    assert missing.exit_code == 2 and "no such file or directory" in missing.stderr
    assert runner.invoke(overflow_app, ["-d", str(dump), "-o", str(tmp_path / "d"), "-n", "6"]).exit_code == 2
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert runner.invoke(overflow_app, ["-d", str(dump), "-o", str(blocked)]).exit_code == 2


def test_dispatch_and_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert run(["overflow", "-d", str(tmp_path / "empty"), "-o", str(tmp_path / "out")]) == 0
    (txt,) = (tmp_path / "out").glob("overflow_summary_*.txt")
    assert "no overflow was recorded" in txt.read_text()


def _npu_pair(tmp_path: Path) -> tuple[Path, Path]:
    h = np.float16
    ops = {"Add.sat": (1, np.array([1, 65504, 3], h)), "Mul.infop": (2, np.array([1, np.inf, 3], h)),
           "Sub.nanop": (3, np.array([1, np.nan, 3], h)), "Relu.normal": (4, np.array([1, 2, 3], h)),
           "Cast.f32inf": (5, np.array([1, np.inf, 3], np.float32)), "Neg.f32ok": (6, np.array([1, 2, 3], np.float32)),
           "Abs.ints": (7, np.array([1, 2, 3], np.int32)), "Exp.linked": (8, np.array([1, 2, 3], np.float32))}
    for side in ("left", "right"):
        (tmp_path / side).mkdir()
        for key, (task, array) in ops.items():
            op_type, name = key.split(".")
            clean = np.where(np.isfinite(array.astype(np.float64)), array, 1).astype(array.dtype)
            write_dump(tmp_path / side / f"{op_type}.{name}.{task}.1.{TS + task}",
                       outputs=[array if side == "left" else clean], op_name=name)
    write_opdebug_file(tmp_path / "left" / f"Opdebug.Node_OpDebug.20.1.{TS + 100}",
                       [encode_new([NewEntry(AccType.AIC, {"task_id": 8, "stream_id": 1, "status": 1,
                                                           "context_id": 2**32 - 1, "thread_id": 2**32 - 1})])])
    return tmp_path / "left", tmp_path / "right"


def test_overflow_column_end_to_end(tmp_path: Path) -> None:
    left, right = _npu_pair(tmp_path)
    out, doc = tmp_path / "r.csv", tmp_path / "r.json"
    result = runner.invoke(app, ["-l", str(left), "-r", str(right), "-o", str(out), "--json", str(doc), "-alg", "0",
                                 "-overflow_detection"])
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out, keep_default_na=False)
    assert list(df.columns[7:10]) == ["Shape", "OverFlow", "CosineSimilarity"]
    cells = dict(zip(df.LeftOp, df.OverFlow))
    assert {k: cells[k] for k in ("sat", "infop", "nanop", "normal", "f32inf", "f32ok", "ints", "linked")} == {
        "sat": "YES", "infop": "YES", "nanop": "YES", "normal": "NO", "f32inf": "YES", "f32ok": "NO", "ints": "NaN",
        "linked": "YES"}
    rows = json.loads(doc.read_text())["rows"]
    assert {r["left_op"]: r["overflow"] for r in rows}["linked"] == "YES"
    assert "rows of linked marked OverFlow YES" in result.stderr
    plain = runner.invoke(app, ["-l", str(left), "-r", str(right), "-o", str(tmp_path / "p.csv"), "-alg", "0"])
    assert plain.exit_code == 0 and "OverFlow" not in (tmp_path / "p.csv").read_text().splitlines()[0]


def test_overflow_refused_for_parquet(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    left, right = _npu_pair(tmp_path)
    parquet = runner.invoke(app, ["-l", str(left), "-r", str(right), "-o", str(tmp_path / "r.parquet"), "--overflow"])
    assert parquet.exit_code == 2 and "parquet table has no OverFlow column" in parquet.stderr
    assert not (tmp_path / "r.parquet").exists()


def test_overflow_refused_in_single_op_mode(tmp_path: Path) -> None:
    left, right = _npu_pair(tmp_path)
    single = runner.invoke(app, ["-l", str(left), "-r", str(right), "-d", "sat", "-o", str(tmp_path / "s"),
                                 "--overflow"])
    assert single.exit_code == 2 and "--overflow describe a network comparison" in single.stderr


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["overflow", "--help"]) == 0
    out = capsys.readouterr().out
    assert "-out" in out and "--count" in out and "Examples" in out and "vcompare overflow -d" in out
    assert run(["--help"]) == 0
    out = capsys.readouterr().out
    assert "-overflow_detection" in out and "vcompare overflow" in out


def test_overflow_column_of_the_narrow_device_floats(tmp_path: Path) -> None:
    """fp8 / HiFloat8 left tensors: YES on an Inf or NaN element (counted in the kernels' LUT pass)."""
    import ml_dtypes

    from convert.codecs.dtypes import DataType
    from convert.codecs.dumpwrite import TensorSpec

    left, golden = tmp_path / "l", tmp_path / "g"
    left.mkdir()
    golden.mkdir()
    tensors = {
        "e4": TensorSpec(np.array([1, 2, 3, 4], np.float32).astype(ml_dtypes.float8_e4m3fn)),
        "e5": TensorSpec(np.array([1, 2, np.inf, 4], np.float32).astype(ml_dtypes.float8_e5m2)),
        "hf": TensorSpec(np.array([0x08, 0x80, 0x10, 0x20], np.uint8), data_type=DataType.DT_HIFLOAT8),  # 0x80 NaN
    }
    for k, (name, spec) in enumerate(tensors.items()):
        write_dump(left / f"Op.{name}.{k}.{TS + k}", outputs=[spec], op_name=name)
        np.save(golden / f"{name}.0.{TS + k}.npy", np.array([1, 2, 3, 4], np.float32))
    out = tmp_path / "r.csv"
    result = CliRunner().invoke(app, ["-l", str(left), "-r", str(golden), "--overflow", "-o", str(out)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out, keep_default_na=False).set_index("LeftOp")
    assert table.OverFlow.to_dict() == {"e4": "NO", "e5": "YES", "hf": "YES"}
    assert table.LeftDataType.to_dict() == {"e4": "float8_e4m3fn", "e5": "float8_e5m2", "hf": "hifloat8"}
