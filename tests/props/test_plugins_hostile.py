"""Issue 17: ``-custom`` converter plugins are never silent and never end the run.

Through the command lines (``vcompare`` and ``vconvert``, typer's CliRunner): the loader says
what it loaded and what it ignored and why (stderr and the JSON result's notes); a ``-custom``
folder without ``format_convert/`` is refused with exit 2; a ``convert()`` of the wrong signature
is ignored at load time with a note; a plugin that calls ``sys.exit()`` (or raises any other
``BaseException``) fails its own conversion -- a row with the reason in a network comparison, a
failed file in vconvert -- and the run writes its result.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.cli import app
from convert.cli import app as vconvert_app

runner = CliRunner()

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"
LEAF = DEMO / "npu" / "20240101120000" / "0" / "demo_net" / "1" / "0"
#: The conversion every NC1HWC0 tensor of the demo network needs.
PLUGIN = "convert_NC1HWC0_to_NCHW.py"


def _custom(root: Path, files: dict[str, str], *, format_convert: bool = True) -> Path:
    """A ``-custom`` folder holding ``format_convert/{name}`` for each file (modes the plugin
    policy accepts: folders 0755, files 0644)."""
    root.mkdir()
    os.chmod(root, 0o755)
    if format_convert:
        folder = root / "format_convert"
        folder.mkdir()
        os.chmod(folder, 0o755)
        for name, body in files.items():
            path = folder / name
            if body == "<folder>":
                path.mkdir()
                continue
            path.write_text(body)
            os.chmod(path, 0o644)
    return root


def _compare(tmp_path: Path, custom: Path, *extra: str) -> tuple[object, dict | None]:
    """vcompare on the demo network with ``-custom``; the CliRunner result and the JSON result."""
    saved = tmp_path / "r.json"
    result = runner.invoke(app, ["-l", str(DEMO / "npu"), "-r", str(DEMO / "golden"), "-f", str(DEMO / "model.json"),
                                 "-o", str(tmp_path / "r.csv"), "--json", str(saved), "-custom", str(custom), *extra])
    return result, json.loads(saved.read_text()) if saved.is_file() else None


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The demo comparison without plugins (JSON result)."""
    out = tmp_path_factory.mktemp("plain") / "r.json"
    result = runner.invoke(app, ["-l", str(DEMO / "npu"), "-r", str(DEMO / "golden"), "-f", str(DEMO / "model.json"),
                                 "-o", str(out.with_suffix(".csv")), "--json", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


@pytest.mark.parametrize("body", [
    "import sys\ndef convert(shape_from, shape_to, array):\n    sys.exit(0)\n",
    "import sys\ndef convert(shape_from, shape_to, array):\n    sys.exit(3)\n",
    "class Stop(BaseException):\n    pass\ndef convert(shape_from, shape_to, array):\n    raise Stop('no')\n",
], ids=["exit0", "exit3", "base-exception"])
def test_a_plugin_that_exits_is_a_row_not_the_end_of_the_run(tmp_path: Path, plain: dict, body: str) -> None:
    custom = _custom(tmp_path / "custom", {PLUGIN: body})
    result, saved = _compare(tmp_path, custom)
    assert result.exit_code == 0, result.output  # ungated: per-pair failures do not fail the run
    assert saved is not None and (tmp_path / "r.csv").is_file(), "the run ended without its result"
    rows = saved["rows"]
    assert [(r["left_op"], r["tensor_id"]) for r in rows] == [(r["left_op"], r["tensor_id"]) for r in plain["rows"]]
    failed = [r for r in rows if any(PLUGIN in reason for reason in r["reasons"])]
    assert failed and all(r["status"] == "not comparable" for r in failed)
    assert all(("SystemExit" if "exit" in body else "Stop: no") in " ".join(r["reasons"]) for r in failed)
    untouched = {r["tensor_id"] for r in plain["rows"] if r["status"] == "compared"} - {r["tensor_id"] for r in failed}
    assert untouched and all(r["status"] == "compared" for r in rows if r["tensor_id"] in untouched)
    assert f"-custom: {PLUGIN} loaded: NC1HWC0 -> NCHW, replaces the built-in converter" in saved["notes"]


def test_a_plugin_that_exits_fails_its_files_in_vconvert(tmp_path: Path) -> None:
    custom = _custom(tmp_path / "custom", {PLUGIN: "import sys\ndef convert(a, b, c):\n    sys.exit(0)\n"})
    out = tmp_path / "out"
    result = runner.invoke(vconvert_app, ["dump", "-d", str(LEAF), "-out", str(out), "-f", "NCHW", "-custom",
                                          str(custom), "--workers", "1"])
    assert result.exit_code == 1, result.output  # some files failed, the run finished
    failed = (out / "convert_failed_file_list.txt").read_text().splitlines()
    assert failed and all(PLUGIN in line and "SystemExit: 0" in line for line in failed)
    assert any(path.suffix == ".npy" for path in out.iterdir())  # ND tensors were still converted
    assert f"-custom: {PLUGIN} loaded: NC1HWC0 -> NCHW" in result.output


def test_a_plugin_that_exits_on_import_is_refused(tmp_path: Path) -> None:
    custom = _custom(tmp_path / "custom", {PLUGIN: "import sys\nsys.exit(0)\n"})
    result, saved = _compare(tmp_path, custom)
    assert result.exit_code == 2 and saved is None
    assert f"{PLUGIN} failed to import: SystemExit: 0" in result.output


def test_a_plugin_that_exits_in_single_operator_mode_is_an_error(tmp_path: Path) -> None:
    custom = _custom(tmp_path / "custom", {PLUGIN: "import sys\ndef convert(a, b, c):\n    sys.exit(0)\n"})
    result = runner.invoke(app, ["-l", str(DEMO / "npu"), "-r", str(DEMO / "golden"), "-f", str(DEMO / "model.json"),
                                 "-d", "pool1", "-o", str(tmp_path / "single"), "-custom", str(custom)])
    assert result.exit_code == 2, result.output
    assert PLUGIN in result.output and "SystemExit: 0" in result.output


@pytest.mark.parametrize(("body", "why"), [
    ("def convert(shape_from, shape_to):\n    return shape_from\n",
     "convert() takes 2 parameters but must take 3 (shape_from, shape_to, array)"),
    ("def convert(shape_from, shape_to, *, array):\n    return array\n",
     "convert() takes 2 parameters but must take 3"),
    ("def convert(shape_from, shape_to, array, *, scale):\n    return array * scale\n",
     "keyword-only parameter(s) scale, which are never given"),
    ("def convert(*args):\n    return args[2]\n", "convert() takes 0 parameters but must take 3"),
    ("convert = 3\n", "it defines no convert() function"),
], ids=["two", "array-keyword-only", "required-keyword", "varargs", "not-callable"])
def test_a_plugin_of_the_wrong_signature_is_ignored_with_a_note(tmp_path: Path, plain: dict, body: str,
                                                                 why: str) -> None:
    custom = _custom(tmp_path / "custom", {PLUGIN: body})
    result, saved = _compare(tmp_path, custom)
    assert result.exit_code == 0, result.output
    assert saved is not None
    note = next(n for n in saved["notes"] if n.startswith(f"-custom: {PLUGIN} ignored: "))
    assert why in note and note in result.output
    assert saved["counts"] == plain["counts"]  # the built-in converter did the work


def test_misnamed_plugin_files_are_listed_as_ignored(tmp_path: Path) -> None:
    body = "def convert(shape_from, shape_to, array):\n    return array\n"
    custom = _custom(tmp_path / "custom", {"convert_NC1HWC0_to_NCHW.PY": body, "convert-NC1HWC0-to-NCHW.py": body,
                                           "NC1HWC0_to_NCHW.py": body, "README.txt": "plugins\n",
                                           "nested": "<folder>"})
    result, saved = _compare(tmp_path, custom)
    assert result.exit_code == 0, result.output
    assert saved is not None
    notes = saved["notes"]
    assert notes[0].startswith("-custom: 0 converter plugin(s) loaded from ") and "5 entries ignored" in notes[0]
    for name in ("convert_NC1HWC0_to_NCHW.PY", "convert-NC1HWC0-to-NCHW.py", "NC1HWC0_to_NCHW.py", "README.txt"):
        assert f"-custom: {name} ignored: not named convert_<FROM>_to_<TO>.py (FROM, TO: 1-128 letters, digits " \
               "or _)" in notes
    assert "-custom: nested ignored: a folder (plugins are read from format_convert/ itself)" in notes
    assert all(note in result.output for note in notes[:6])


@pytest.mark.parametrize("tool", ["vcompare", "vconvert"])
def test_a_custom_folder_without_format_convert_is_refused(tmp_path: Path, tool: str) -> None:
    custom = _custom(tmp_path / "custom", {}, format_convert=False)
    (custom / "convert_NC1HWC0_to_NCHW.py").write_text("def convert(a, b, c):\n    return c\n")
    if tool == "vcompare":
        result, saved = _compare(tmp_path, custom)
        assert saved is None
    else:
        result = runner.invoke(vconvert_app, ["dump", "-d", str(LEAF), "-out", str(tmp_path / "out"), "-f", "NCHW",
                                              "-custom", str(custom)])
    assert result.exit_code == 2, result.output
    assert f"{custom} has no format_convert folder: converter plugins are read from " \
           f"{custom}/format_convert/convert_<FROM>_to_<TO>.py" in result.output


def test_a_fractal_z_plugin_gets_its_group(tmp_path: Path) -> None:
    """A ``to_FRACTAL_Z`` plugin must take ``group``; it is given one for an ungrouped tensor too."""
    custom = _custom(tmp_path / "custom", {"convert_NCHW_to_FRACTAL_Z.py": (
        "def convert(shape_from, shape_to, array, group):\n    assert group == 1\n    return array\n")})
    source = next(LEAF.glob("TransData.*"))  # input 0: NCHW (1, 3, 16, 16)
    out = tmp_path / "out"
    result = runner.invoke(vconvert_app, ["dump", "-d", str(source), "-out", str(out), "-f", "FRACTAL_Z", "-i", "0",
                                          "-custom", str(custom)])
    assert result.exit_code == 0, result.output
    assert [p.name for p in out.glob("*.npy")] == [f"{source.name}.input.0.768.npy"]
