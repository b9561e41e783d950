"""The -lm / -am / -dm / -cm / -fm options through the command line (typer's CliRunner)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from conftest import shared_path
from typer.testing import CliRunner

from compare.cli import app

#: msprobe's MindSpore-vs-PyTorch fixture, inside ../shared
MSPROBE_MS_VS_PT = ("real_device", "msprobe_ms_vs_pt_stats")


def _tree(folder: Path, framework: str, calls: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / "dump.json").write_text(json.dumps({"task": "statistics", "level": "mix", "framework": framework,
                                                  "dump_data_dir": None, "data": calls}))
    return folder


def _call(value: float) -> dict:
    t = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": value, "Min": value, "Mean": value,
         "Norm": 2 * abs(value), "requires_grad": False}
    return {"input_args": [t], "input_kwargs": {}, "output": [t]}


def _run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_fuzzy_match_option(tmp_path):
    left = _tree(tmp_path / "l", "pytorch", {"Functional.gelu.2.forward": _call(1.0)})
    right = _tree(tmp_path / "r", "pytorch", {"Functional.gelu.7.forward": _call(1.0)})
    out = tmp_path / "out.csv"
    result = _run("-l", left, "-r", right, "-fm", "-o", out)
    assert result.exit_code == 0, result.output
    assert "1 pair(s) made by the fuzzy match" in result.output
    rows = _rows(out)
    assert {(r["LeftOp"], r["RightOp"]) for r in rows} == {("Functional.gelu.2.forward", "Functional.gelu.7.forward")}
    assert all("paired by fuzzy match" in (r.get("FailReason") or r.get("Err_message") or "") for r in rows)


def test_api_mapping_file_and_builtin(tmp_path):
    left = _tree(tmp_path / "l", "mindspore", {"Mint.erf.0.forward": _call(0.5)})
    right = _tree(tmp_path / "r", "pytorch", {"Torch.special_erf.0.forward": _call(0.5)})
    am = tmp_path / "am.yaml"
    am.write_text("ms_api: Mint.erf\npt_api: Torch.special_erf\n")
    out = tmp_path / "out.csv"
    result = _run("-l", left, "-r", right, "-am", am, "-o", out)
    assert result.exit_code == 0, result.output
    assert "1 pair(s) made by the API mapping" in result.output
    assert {(r["LeftOp"], r["RightOp"]) for r in _rows(out)} == {("Mint.erf.0.forward", "Torch.special_erf.0.forward")}
    result = _run("-l", left, "-r", right, "-am", "builtin", "-o", tmp_path / "b.csv")
    assert result.exit_code == 2 and "special_erf" in result.output  # the built-in table has no erf rename


def test_options_refused_where_they_do_not_apply(tmp_path):
    left = _tree(tmp_path / "l", "pytorch", {"Functional.gelu.2.forward": _call(1.0)})
    right = _tree(tmp_path / "r", "pytorch", {"Functional.gelu.2.forward": _call(1.0)})
    rule = tmp_path / "rule.json"
    rule.write_text("{}")
    result = _run("-l", left, "-r", right, "-fm", "-f", rule)
    assert result.exit_code == 2 and "-fm pair msprobe calls by their names" in result.output
    result = _run("-l", left, "-r", right, "-lm", tmp_path / "none.yaml")
    assert result.exit_code == 2 and "-lm" in result.output


def test_layer_mapping_on_msprobes_fixture(tmp_path):
    fixture = shared_path(*MSPROBE_MS_VS_PT)
    out = tmp_path / "lm.csv"
    result = _run("-l", fixture / "mindspore_data", "-r", fixture / "pytorch_data", "-lm", fixture / "layer_mapping.yaml",
                  "-o", out)
    assert result.exit_code == 0, result.output
    assert "13 pair(s) made by the layer mapping" in result.output
    assert "built-in API mapping applied" in result.output
    rows = _rows(out)
    pairs = {(r["LeftOp"], r["RightOp"]) for r in rows if r["LeftOp"] != "*" and r["RightOp"] != "*"}
    assert ("Mint.logical_or.0.forward", "Tensor.__or__.0.forward") in pairs
    assert ("Functional.flash_attention_score.0.backward", "NPU.npu_fusion_attention.0.backward") in pairs
    assert len(pairs) == 10
    add0 = [r for r in rows if r["LeftOp"] == "Tensor.__add__.0.forward"]
    assert add0 and all(r["RightOp"] == "*" for r in add0)


def test_mapping_options_refused_on_a_mindspore_dump():
    tree = Path(__file__).resolve().parents[3] / "fixtures" / "mindspore" / "async"
    result = _run("-l", tree, "-r", tree, "-fm", "--allow-same")
    assert result.exit_code == 2
    assert "pair msprobe dumps (dump.json trees); the left side is not one" in result.output
    assert "Traceback" not in result.output
