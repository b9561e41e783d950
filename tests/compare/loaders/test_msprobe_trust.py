"""Trust in msprobe trees (issue 27, round three): a crafted ``.pt`` is one row and changes no other
row; expanded tensors are bounded; links out of the dump tree are refused and named; a ``dump.json``
holding a 5000-digit integer or nested 100,000 deep is a one-line error, exit 2, no traceback."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.errors import DumpFormatError
from compare.loaders import load_run
from compare.records import TensorKind
from compare.testing.synthetic_msprobe import tensor_pickle, write_msprobe_dump, write_pt

runner = CliRunner()
TENSORS = 19  # tensors of compare.testing.synthetic_msprobe.CALLS
ROWS = TENSORS + 5  # and its 5 non-tensor arguments (rows of their own, compared by value)
CONV_IN = "Functional.conv2d.0.forward.input.0.pt"
RELU_IN = "Functional.relu.0.forward.input.0.pt"


def _run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def _rows(js: Path) -> dict[str, dict]:
    return {row["tensor_id"]: row for row in json.loads(js.read_text())["rows"]}


@pytest.fixture(scope="module")
def right(tmp_path_factory):
    return write_msprobe_dump(tmp_path_factory.mktemp("right"), noise=1e-3, seed=1)


def _assert_clean(result) -> None:
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception


# --------------------------------------------------------------------------------------------
# A crafted .pt: one row with its reason, every other row unaffected
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", [("torch", "FloatStorage"), ("torch._utils", "_rebuild_tensor_v2"), "tensor"],
                         ids=lambda t: t if isinstance(t, str) else ".".join(t))
def test_build_in_one_left_file_is_its_row_only(tmp_path: Path, right, target) -> None:
    left = write_msprobe_dump(tmp_path / "l")
    evil = left.folders[(0, 0)] / "dump_tensor_data" / CONV_IN
    write_pt(evil, left.arrays[CONV_IN], build_on=target)
    for attempt in range(2):  # twice in one process: the first load left nothing behind
        js = tmp_path / f"r{attempt}.json"
        result = _run("-l", left.root, "-r", right.root, "--json", js, "-o", tmp_path / f"r{attempt}.csv")
        _assert_clean(result)
        assert result.exit_code == 0, result.output
        rows = _rows(js)
        assert len(rows) == ROWS
        bad = rows["Functional.conv2d.0.forward:input:0"]
        assert bad["status"] != "compared"
        reason = " ".join(bad["reasons"])
        assert "the pickle sets" in reason and str(evil) in reason
        others = [r for tid, r in rows.items() if tid != "Functional.conv2d.0.forward:input:0"]
        assert all(r["status"] == "compared" for r in others), [r["reasons"] for r in others if r["reasons"]]


def test_expanded_tensor_file_is_a_row_with_its_reason(tmp_path: Path, right) -> None:
    left = write_msprobe_dump(tmp_path / "l")
    path = left.folders[(0, 0)] / "dump_tensor_data" / CONV_IN
    with zipfile.ZipFile(path, "w") as out:  # a few hundred bytes asking for 37 GiB
        out.writestr("x/data.pkl", tensor_pickle("FloatStorage", 1, (100000, 100000), (0, 0)))
        out.writestr("x/data/0", np.float32(1).tobytes())
    assert path.stat().st_size < 1024
    js = tmp_path / "r.json"
    result = _run("-l", left.root, "-r", right.root, "--json", js, "-o", tmp_path / "r.csv")
    _assert_clean(result)
    assert result.exit_code == 0, result.output
    rows = _rows(js)
    assert "expanded tensor" in " ".join(rows["Functional.conv2d.0.forward:input:0"]["reasons"])
    assert sum(r["status"] == "compared" for r in rows.values()) == ROWS - 1


# --------------------------------------------------------------------------------------------
# Symbolic links
# --------------------------------------------------------------------------------------------


def _secret(tmp_path: Path) -> Path:
    return write_pt(tmp_path / "outside" / "secret.pt", np.full((2, 4), 1234.5, np.float32))


def test_link_out_of_the_tree_is_refused_and_named(tmp_path: Path, right) -> None:
    left = write_msprobe_dump(tmp_path / "l")
    data = left.folders[(0, 0)] / "dump_tensor_data"
    secret = _secret(tmp_path)
    (data / RELU_IN).unlink()
    (data / RELU_IN).symlink_to(secret)
    (data / "extra.pt").symlink_to(secret)  # named by no data_name: skipped with the same reason
    run = load_run(left.root)
    ref = run.ops["Functional.relu.0.forward"].tensor(TensorKind.INPUT, 0)
    with pytest.raises(DumpFormatError, match="outside the dump tree"):
        ref.reader()
    skipped = dict(run.skipped)
    assert "outside the dump tree" in skipped[data / RELU_IN]
    assert "outside the dump tree" in skipped[data / "extra.pt"]
    assert any("symbolic links out of the dump tree" in note for note in run.notes)
    js = tmp_path / "r.json"
    result = _run("-l", left.root, "-r", right.root, "--json", js, "-o", tmp_path / "r.csv")
    _assert_clean(result)
    assert result.exit_code == 0, result.output
    rows = _rows(js)
    bad = rows["Functional.relu.0.forward:input:0"]
    assert bad["status"] != "compared" and "outside the dump tree" in " ".join(bad["reasons"])
    assert "1234.5" not in json.dumps(bad)
    assert sum(r["status"] == "compared" for r in rows.values()) == ROWS - 1
    assert any("extra.pt" in json.dumps(s) for s in json.loads(js.read_text())["skipped"])


def test_link_inside_the_tree_is_followed(tmp_path: Path) -> None:
    left = write_msprobe_dump(tmp_path / "l")
    folder = left.folders[(0, 0)]
    data = folder / "dump_tensor_data"
    kept = folder / "kept"
    kept.mkdir()
    os.replace(data / RELU_IN, kept / RELU_IN)
    (data / RELU_IN).symlink_to(Path("..") / "kept" / RELU_IN)
    run = load_run(left.root)
    ref = run.ops["Functional.relu.0.forward"].tensor(TensorKind.INPUT, 0)
    np.testing.assert_array_equal(ref.reader(), left.arrays[RELU_IN])
    assert not any("outside the dump tree" in why for _, why in run.skipped)


def test_data_folder_linked_out_of_the_tree_refuses_every_file(tmp_path: Path) -> None:
    left = write_msprobe_dump(tmp_path / "l")
    folder = left.folders[(0, 0)]
    os.replace(folder / "dump_tensor_data", tmp_path / "elsewhere")
    (folder / "dump_tensor_data").symlink_to(tmp_path / "elsewhere")
    run = load_run(folder)
    refs = [r for op in run.ops.values() for r in (*op.inputs, *op.outputs)]
    assert len(refs) == TENSORS
    for ref in refs:
        with pytest.raises(DumpFormatError, match="outside the dump tree"):
            ref.reader()


def test_file_turned_into_a_link_after_listing_is_refused_when_read(tmp_path: Path) -> None:
    left = write_msprobe_dump(tmp_path / "l")
    data = left.folders[(0, 0)] / "dump_tensor_data"
    run = load_run(left.root)
    (data / RELU_IN).unlink()
    (data / RELU_IN).symlink_to(_secret(tmp_path))
    with pytest.raises(DumpFormatError, match="outside the dump tree"):
        run.ops["Functional.relu.0.forward"].tensor(TensorKind.INPUT, 0).reader()


# --------------------------------------------------------------------------------------------
# dump.json: long integers, deep nesting
# --------------------------------------------------------------------------------------------


def _rewrite(dump, replace: str) -> Path:
    path = dump.folders[(0, 0)] / "dump.json"
    text = path.read_text()
    assert '"requires_grad": false' in text
    path.write_text(text.replace('"requires_grad": false', f'"requires_grad": {replace}', 1))
    return path


@pytest.mark.parametrize("value, message", [
    ("9" * 5000, "an integer of 5000 digits"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
], ids=["5000-digits", "100000-deep"])
def test_unusable_dump_json_is_one_line_exit_2(tmp_path: Path, right, value: str, message: str) -> None:
    left = write_msprobe_dump(tmp_path / "l")
    path = _rewrite(left, value)
    with pytest.raises(DumpFormatError, match=message):
        load_run(left.root)
    result = _run("-l", left.root, "-r", right.root, "-o", tmp_path / "o.csv")
    _assert_clean(result)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if message in line]
    assert len(errors) == 1 and str(path) in errors[0] and len(errors[0]) < 400


def test_integer_statistic_beyond_float_range_is_infinite(tmp_path: Path, right) -> None:
    left = write_msprobe_dump(tmp_path / "l", task="statistics")
    path = left.folders[(0, 0)] / "dump.json"
    top = json.loads(path.read_text())
    top["data"]["Functional.relu.0.forward"]["input_args"][0]["Max"] = 10 ** 4000
    path.write_text(json.dumps(top))
    run = load_run(left.root)
    assert run.ops["Functional.relu.0.forward"].tensor(TensorKind.INPUT, 0).stats["max"] == float("inf")
    result = _run("-l", left.root, "-r", right.root, "-o", tmp_path / "o.csv")
    _assert_clean(result)
    assert result.exit_code == 0, result.output


def test_side_json_with_a_long_integer_is_a_note(tmp_path: Path, right) -> None:
    left = write_msprobe_dump(tmp_path / "l")
    (left.folders[(0, 0)] / "stack.json").write_text('{"0": ' + "7" * 5000 + "}")
    js = tmp_path / "r.json"
    result = _run("-l", left.root, "-r", right.root, "--json", js, "-o", tmp_path / "r.csv")
    _assert_clean(result)
    assert result.exit_code == 0, result.output
    assert len(_rows(js)) == ROWS


def test_mindspore_npy_link_out_of_the_tree_is_refused(tmp_path: Path) -> None:
    left = write_msprobe_dump(tmp_path / "l", framework="mindspore")
    data = left.folders[(0, 0)] / "dump_tensor_data"
    name = "Functional.relu.0.forward.input.0.npy"
    outside = tmp_path / "outside" / "secret.npy"
    outside.parent.mkdir()
    np.save(outside, np.full((2, 4), 1234.5, np.float32))
    (data / name).unlink()
    (data / name).symlink_to(outside)
    run = load_run(left.root)
    with pytest.raises(DumpFormatError, match="outside the dump tree"):
        run.ops["Functional.relu.0.forward"].tensor(TensorKind.INPUT, 0).reader()
    assert "outside the dump tree" in dict(run.skipped)[data / name]
