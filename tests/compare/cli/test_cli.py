"""The command line, through typer's runner, on the bundled demo fixtures (no ../shared needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, ROOT

from compare.cli import app
from compare.cli.main import normalise_argv as _normalise_argv

DEMO = FIXTURES / "demo"
runner = CliRunner()


def _run(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def _demo_args(out: Path) -> list[str]:
    return ["-l", str(DEMO / "npu"), "-r", str(DEMO / "golden"), "-f", str(DEMO / "model.json"), "-o", str(out)]


def test_demo_network_csv(tmp_path: Path) -> None:
    out = tmp_path / "result.csv"
    result = _run(*_demo_args(out))
    assert result.exit_code == 0, result.output
    assert f"result: {out}" in result.stdout
    df = pd.read_csv(out)
    assert list(df.columns[:8]) == ["Index", "OpType", "LeftOp", "LeftDataType", "RightOp", "RightDataType",
                                    "TensorIndex", "Shape"]
    assert df.columns[-1] == "FailReason"
    compared = df.dropna(subset=["TensorIndex"])
    assert set(compared.TensorIndex) >= {"conv1:input:0", "conv1:input:1", "conv1:output:0", "pool1:output:0",
                                         "fc1:output:0", "prob:output:0"}
    # fc1 carries the injected error: it is the first tensor below the clean ones
    worst = compared.sort_values("CosineSimilarity").iloc[0]
    assert worst.TensorIndex in {"fc1:output:0", "prob:input:0"}
    assert (compared.CosineSimilarity > 0.99).all()
    # operators without a dump are rows, never dropped
    data_row = df[df.LeftOp == "data"].iloc[0]
    assert "no dump file" in data_row.FailReason
    # the inserted TransData has no golden counterpart: '*'
    assert (df[df.LeftOp == "trans_TransData_0"].RightOp == "*").all()


def test_output_directory_and_txt(tmp_path: Path) -> None:
    result = _run(*_demo_args(tmp_path))
    assert result.exit_code == 0, result.output
    (written,) = tmp_path.glob("result_*.csv")
    assert written.name[len("result_"):-4].isdigit() and len(written.name) == len("result_20240101120000.csv")
    txt = tmp_path / "result.txt"
    assert _run(*_demo_args(txt)).exit_code == 0
    first = txt.read_text().splitlines()[0].split()
    assert first[:3] == ["Index", "OpType", "LeftOp"] and first[-1] == "FailReason"
    as_csv = tmp_path / "forced.txt"
    assert _run(*_demo_args(as_csv), "-csv").exit_code == 0
    assert as_csv.read_text().startswith("Index,OpType,")


def test_algorithm_selection_and_msaccucmp_layout(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    result = _run(*_demo_args(out), "-alg", "0,MaxAbsoluteError,kl", "--layout", "msaccucmp")
    assert result.exit_code == 0, result.output
    header = out.read_text().splitlines()[0]
    # golden side is an .npy folder: its Address column is dropped, as the reference does
    assert header == ("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,"
                      "CosineSimilarity,MaxAbsoluteError,KullbackLeiblerDivergence,CompareFailReason")
    assert out.read_bytes().count(b"\r\n") == len(out.read_text().splitlines())


def test_alg_space_separated_indexes_are_accepted() -> None:
    assert _normalise_argv(["-l", "a", "-alg", "0", "1", "5", "-o", "x"]) == ["-l", "a", "-alg", "0,1,5", "-o", "x"]
    assert _normalise_argv(["-alg", "0,1", "-o", "x"]) == ["-alg", "0,1", "-o", "x"]


def test_bare_api_mapping_means_the_built_in_table() -> None:
    """msprobe's ``-am`` without a file: the built-in API mapping (``-am builtin``)."""
    assert _normalise_argv(["-l", "a", "-am", "-o", "x"]) == ["-l", "a", "-am", "builtin", "-o", "x"]
    assert _normalise_argv(["-l", "a", "--api-mapping"]) == ["-l", "a", "--api-mapping", "builtin"]
    assert _normalise_argv(["-am", "api.yaml"]) == ["-am", "api.yaml"]


def test_gates_pass_and_fail(tmp_path: Path) -> None:
    ok = _run(*_demo_args(tmp_path / "a.csv"), "--gate", "CosineSimilarity>=0.99")
    assert ok.exit_code == 0, ok.output
    bad = _run(*_demo_args(tmp_path / "b.csv"), "--gate", "Cos>=0.9999", "--gate", "MaxAbsoluteError<=0.01")
    assert bad.exit_code == 1
    assert "fc1:output:0" in bad.stderr and "violates" in bad.stderr
    assert (tmp_path / "b.csv").exists()  # the report is written before the gate verdict


@pytest.mark.parametrize("extra,needle", [
    (["--gate", "Cosine>>1"], "bad --gate"),
    (["-alg", "0,NoSuchMetric"], "NoSuchMetric"),
    (["--layout", "excel"], "layout"),
])
def test_bad_options_exit_2(tmp_path: Path, extra: list[str], needle: str) -> None:
    result = _run(*_demo_args(tmp_path / "r.csv"), *extra)
    assert result.exit_code == 2
    assert needle in result.output
    assert "Traceback" not in result.output


def test_missing_inputs_exit_2_with_one_line(tmp_path: Path) -> None:
    result = _run("-l", str(tmp_path / "nope"), "-r", str(DEMO / "golden"), "-o", str(tmp_path / "r.csv"))
    assert result.exit_code == 2
    assert "nope" in result.stderr and "Traceback" not in result.output
    bad_rule = tmp_path / "rule.json"
    bad_rule.write_text('{"graph": [')
    result = _run("-l", str(DEMO / "npu"), "-r", str(DEMO / "golden"), "-f", str(bad_rule), "-o", str(tmp_path / "r.csv"))
    assert result.exit_code == 2 and "rule.json" in result.stderr


def test_npu_vs_npu_and_golden_vs_golden(tmp_path: Path) -> None:
    out = tmp_path / "npu.csv"
    assert _run("-l", DEMO / "npu", "-r", DEMO / "npu", "-o", out).exit_code == 0
    df = pd.read_csv(out)
    assert (df.CosineSimilarity.dropna() == 1.0).all() and (df.MaxAbsoluteError.dropna() == 0).all()
    assert len(df) > 0 and df.TensorIndex.notna().all()
    out = tmp_path / "golden.csv"
    assert _run("-l", DEMO / "golden", "-r", DEMO / "golden", "-o", out).exit_code == 0
    df = pd.read_csv(out)
    assert set(df.LeftOp) >= {"conv1", "pool1", "prob"} and (df.CosineSimilarity.dropna() == 1.0).all()


def test_forced_dump_version_mismatch_is_rows_not_crash(tmp_path: Path) -> None:
    out = tmp_path / "v1.csv"
    result = _run(*_demo_args(out), "-v", "1")
    assert result.exit_code in (0, 2)
    if result.exit_code == 0:
        df = pd.read_csv(out)
        assert df.FailReason.str.contains("protobuf", na=False).any()
    assert "Traceback" not in result.output


def test_help_is_fast_and_documented() -> None:
    result = _run("--help")
    assert result.exit_code == 0
    for option in ("-l", "-r", "-f", "-q", "-cf", "-o", "-csv", "-alg", "-custom", "-d", "--gate", "--layout", "Examples"):
        assert option in result.stdout
    probe = "import sys, compare.cli; assert 'numba' not in sys.modules and 'pandas' not in sys.modules"
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=ROOT)


def test_python_api_dataframe() -> None:
    from compare import compare_network

    df = compare_network(DEMO / "npu", DEMO / "golden", fusion_rule=DEMO / "model.json").frame
    assert df["CosineSimilarity"].dtype == float
    assert {"LeftMean", "LeftStd", "RightMean", "RightStd", "Status"} <= set(df.columns)
    assert set(df.Status) >= {"compared", "missing on left"}


def test_batch_mode_with_a_folder_of_rules(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "model.json").write_bytes((DEMO / "model.json").read_bytes())
    out = tmp_path / "out"
    result = _run("-l", DEMO / "npu" / "20240101120000", "-r", DEMO / "golden", "-f", rules, "-o", out)
    assert result.exit_code == 0, result.output
    (written,) = out.glob("0_demo_net_0_result_*.csv")
    df = pd.read_csv(written)
    assert "conv1:output:0" in set(df.TensorIndex)


def test_quant_and_scenario_options_via_cli(tmp_path: Path) -> None:
    from conftest import shared_path

    case = shared_path("cases", "quant_vs_caffe")
    base = ["-l", case / "left", "-r", case / "right", "-f", case / "fusion.json"]
    ok = _run(*base, "-q", case / "quant.json", "-o", tmp_path / "q.csv")
    assert ok.exit_code == 0, ok.output
    df = pd.read_csv(tmp_path / "q.csv")
    skipped = df[df.LeftOp.isin(["conv1", "conv2", "conv3"])]
    assert len(skipped) == 3 and skipped.FailReason.str.contains("between a quant and a dequant").all()
    refused = _run(*base, "-o", tmp_path / "r.csv")  # quantized left without -q: scenario 2 needs it
    assert refused.exit_code == 2 and "scenario 2" in refused.stderr and "-q" in refused.stderr
    single = _run(*base, "-q", case / "quant.json", "-o", tmp_path / "single", "-d", "conv2_dequant_layer")
    assert single.exit_code == 0, single.output
    assert (tmp_path / "single" / "conv2_dequant_layer_output_0_summary.txt").exists()
