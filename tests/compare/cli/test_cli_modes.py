"""The reference's remaining switches through the command line: two files (-l FILE -r FILE),
file_compare, the mapping table (-map), --range / --select (and -r as --range in msaccucmp's
spelling), and --mapping for NPU vs NPU."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import FIXTURES, ROOT, TESTS
from typer.testing import CliRunner

from compare.cli import app, run
from compare.cli.file_compare import file_compare_app
from compare.cli.main import normalise_argv
from convert.codecs.dumpwrite import write_dump

DEMO = FIXTURES / "demo"
LEAF = DEMO / "npu" / "20240101120000" / "0" / "demo_net" / "1" / "0"
runner = CliRunner()

MY = np.array([[1, 2, 3], [4, 5, 6.5]], np.float32)
GOLDEN = np.array([[1, 2.1, 3], [4, 0, 6]], np.float32)


def _invoke(target, *args: object):
    return runner.invoke(target, [str(a) for a in args])


@pytest.fixture
def npys(tmp_path: Path) -> tuple[Path, Path]:
    np.save(tmp_path / "my.npy", MY)
    np.save(tmp_path / "golden.npy", GOLDEN)
    return tmp_path / "my.npy", tmp_path / "golden.npy"


# ---------------------------------------------------------------------------------------------- file_compare


def test_file_compare_writes_the_verified_result(npys: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _invoke(file_compare_app, "-m", npys[0], "-g", npys[1], "-out", out)
    assert result.exit_code == 0, result.output
    (written,) = out.glob("file_result_*.txt")
    assert len(written.name) == len("file_result_20261121234543.txt") and written.name[12:26].isdigit()
    assert f"result: {written}" in result.stdout
    assert written.read_bytes() == (TESTS / "golden" / "file_result.txt").read_bytes()


def test_file_compare_refusals(npys: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "g.txt"
    text.write_text("1 2 3\n")
    assert run(["file_compare", "-m", str(npys[0]), "-g", str(text), "-out", str(tmp_path)]) == 2
    assert "file_compare compares two .npy files" in capsys.readouterr().err
    np.save(tmp_path / "t.npy", GOLDEN.T)
    assert run(["file_compare", "-m", str(npys[0]), "-g", str(tmp_path / "t.npy"), "-out", str(tmp_path)]) == 2
    assert "shapes differ: left [2,3]" in capsys.readouterr().err
    assert not list(tmp_path.glob("file_result_*"))


# ---------------------------------------------------------------------------------------------- two files


def test_two_npy_files_table_and_csv(npys: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    result = _invoke(app, "-l", npys[0], "-r", npys[1], "-alg", "0,1,8", "-o", out)
    assert result.exit_code == 0, result.output
    assert "0.861082" in result.stdout and f"result: {out}" in result.stdout
    df = pd.read_csv(out)
    assert list(df.columns[-4:]) == ["CosineSimilarity", "MaxAbsoluteError", "MaxRelativeError", "FailReason"]
    assert df.loc[0, "Shape"] == "[2,3]" and df.loc[0, "MaxAbsoluteError"] == 5.0


def test_two_files_json_and_msaccucmp_spelling(npys: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = _invoke(app, "-m", npys[0], "-g", npys[1], "-o", out)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["options"]["mode"] == "two-files" and doc["counts"]["compared"] == 1
    assert doc["inputs"]["left_kind"] == "npy"
    assert [row["metrics"]["MaxAbsoluteError"] for row in doc["rows"]] == [5.0]
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, json.loads((ROOT / "docs" / "result-schema.json").read_text()))


def test_two_files_without_output_write_nothing(npys: tuple[Path, Path], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = _invoke(app, "-l", npys[0], "-r", npys[1])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["golden.npy", "my.npy"]


def test_two_files_shape_mismatch_exits_2(npys: tuple[Path, Path], tmp_path: Path) -> None:
    np.save(tmp_path / "t.npy", GOLDEN.reshape(3, 2))
    result = _invoke(app, "-l", npys[0], "-r", tmp_path / "t.npy")
    assert result.exit_code == 2
    assert "error: nothing compared: shapes differ: left [2,3] (my.npy) vs right [3,2] (t.npy)" in result.output


def test_two_files_refuse_folder_options(npys: tuple[Path, Path]) -> None:
    result = _invoke(app, "-l", npys[0], "-r", npys[1], "-f", DEMO / "model.json")
    assert result.exit_code == 2
    assert "-f: -l and -r are two files" in result.output


def test_dump_file_tensor_choice(tmp_path: Path) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    dump = write_dump(tmp_path / "Add.add1.3.1.1700000000000001", inputs=[a + 4], outputs=[a])
    np.save(tmp_path / "g.npy", a)
    default = _invoke(app, "-l", dump, "-r", tmp_path / "g.npy", "-alg", "1", "-o", tmp_path / "d.csv")
    assert default.exit_code == 0, default.output
    assert pd.read_csv(tmp_path / "d.csv").loc[0, "MaxAbsoluteError"] == 0.0
    chosen = _invoke(app, "-l", dump, "-r", tmp_path / "g.npy", "-alg", "1", "-t", "input", "-i", "0",
                     "-o", tmp_path / "i.csv")
    assert chosen.exit_code == 0, chosen.output
    frame = pd.read_csv(tmp_path / "i.csv")
    assert (frame.loc[0, "TensorIndex"], frame.loc[0, "MaxAbsoluteError"]) == ("add1:input:0", 4.0)
    both = _invoke(app, "-l", dump, "-r", dump, "-alg", "1", "-o", tmp_path / "b.csv")
    assert both.exit_code == 0, both.output
    assert list(pd.read_csv(tmp_path / "b.csv").TensorIndex) == ["add1:input:0", "add1:output:0"]


# ---------------------------------------------------------------------------------------------- -map


def _demo(*extra: object) -> list[object]:
    return ["-l", DEMO / "npu", "-r", DEMO / "golden", "-f", DEMO / "model.json", *extra]


def test_mapping_table_written_nothing_compared(tmp_path: Path) -> None:
    result = _invoke(app, *_demo("-map", "-o", tmp_path))
    assert result.exit_code == 0, result.output
    (written,) = tmp_path.glob("mapping_*.csv")
    assert f"mapping: {written}" in result.stdout
    expected = (TESTS / "golden" / "mapping_demo.csv").read_bytes().decode().replace("{DEMO}", str(DEMO))
    assert written.read_bytes().decode() == expected
    assert not list(tmp_path.glob("result_*"))


@pytest.mark.parametrize("extra,message", [
    (("-d", "conv1"), "-map lists the pairs of a whole network through -f / -q: not with -d"),
    (("-i", "1"), "not with -i"),
    (("--json", "x.json"), "--json describe a network comparison"),
])
def test_mapping_table_refusals(extra: tuple[str, ...], message: str, tmp_path: Path) -> None:
    result = _invoke(app, *_demo("-map", "-o", tmp_path / "m.csv", *extra))
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "m.csv").exists()


def test_mapping_table_needs_a_rule(tmp_path: Path) -> None:
    result = _invoke(app, "-l", DEMO / "npu", "-r", DEMO / "golden", "-map", "-o", tmp_path / "m.csv")
    assert result.exit_code == 2 and "give one of them" in result.output


# ---------------------------------------------------------------------------------------------- range / select


def test_normalise_argv_reads_r_as_range_in_msaccucmp_spelling() -> None:
    assert normalise_argv(["-m", "a", "-g", "b", "-r", "1,-1,2"]) == ["-m", "a", "-g", "b", "--range", "1,-1,2"]
    assert normalise_argv(["-l", "a", "-r", "b"]) == ["-l", "a", "-r", "b"]
    assert normalise_argv(["-m", "a", "--golden_dump_path", "b", "-r", ",,"])[-2] == "--range"


def test_range_in_msaccucmp_spelling(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.csv"
    code = run(["-m", str(DEMO / "npu"), "-g", str(DEMO / "golden"), "-f", str(DEMO / "model.json"), "-r", "2,-1,2",
                "-o", str(out), "--json", str(tmp_path / "r.json")])
    assert code == 0, capsys.readouterr().err
    frame = pd.read_csv(out)
    assert set(frame.LeftOp) == {"conv1_weight", "pool1", "prob"}
    assert list(frame.columns[:3]) == ["Index", "OpSequence", "OpType"]  # the reference's column 2 under -r / -s
    assert (frame.OpSequence == frame.Index).all()  # the demo rule's op ids are its indexes
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["options"]["ops"] == "--range 2,-1,2"
    assert any(note.startswith("--range 2,-1,2: 3 of 7 operators selected") for note in doc["notes"])


def test_select_keeps_the_groups_asked_for(tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    result = _invoke(app, *_demo("-s", "5,3,5", "-o", out))
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out)
    assert list(dict.fromkeys(frame.LeftOp)) == ["conv1", "fc1"]
    assert sorted(set(frame.OpSequence)) == [3, 5]


@pytest.mark.parametrize("extra,message", [
    (("--range", "1,2,1", "-s", "3"), "--range and --select choose operators in two ways"),
    (("--range", "1,9,1"), "end must be between start (1) and 6"),
    (("--range", "1,2"), "give start,end,step"),
    (("-s", "40"), "every id is above the largest operator id of the fusion rule, 6"),
    (("-s", "3", "-d", "conv1"), "not with -d"),
])
def test_range_select_refusals(extra: tuple[str, ...], message: str, tmp_path: Path) -> None:
    result = _invoke(app, *_demo("-o", tmp_path / "r.csv", *extra))
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "r.csv").exists()


def test_range_needs_a_rule_file(tmp_path: Path) -> None:
    result = _invoke(app, "-l", DEMO / "npu", "-r", DEMO / "golden", "--range", "1,-1,1", "-o", tmp_path / "r.csv")
    assert result.exit_code == 2 and "give one rule file with -f" in result.output


# ---------------------------------------------------------------------------------------------- --mapping, NPU vs NPU


def test_mapping_file_pairs_two_npu_dumps(tmp_path: Path) -> None:
    other = tmp_path / "npu2"
    shutil.copytree(LEAF, other)
    (other / "Conv2D.conv1.3.1.1704110400003000").rename(other / "Conv2D.conv1_v2.3.1.1704110400003000")
    names = tmp_path / "map.csv"
    names.write_text("conv1,conv1_v2\n")
    out = tmp_path / "r.csv"
    result = _invoke(app, "-l", DEMO / "npu", "-r", other, "--mapping", names, "-alg", "1", "-o", out)
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out)
    conv = frame[frame.LeftOp == "conv1"]
    assert set(conv.RightOp) == {"conv1_v2"} and len(conv) == 3
    assert (conv.MaxAbsoluteError == 0.0).all()
    assert "*" not in set(frame.LeftOp) | set(frame.RightOp)
    without = _invoke(app, "-l", DEMO / "npu", "-r", other, "-alg", "1", "-o", tmp_path / "w.csv")
    assert without.exit_code == 0
    assert "*" in set(pd.read_csv(tmp_path / "w.csv").RightOp)
