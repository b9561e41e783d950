"""``vcompare compare``: msaccucmp's and msprobe's command lines, through typer's runner.

The runs use ``fixtures/demo`` (msaccucmp's form, and msprobe's ``-m offline_data`` form) and
synthetic msprobe trees (``compare.testing.synthetic_msprobe``), so the suite stands alone; the
real msprobe trees of ``../shared`` are compared when present. The mapping flags are checked on
the translated argv (the main command's ``--layer-mapping`` ... are another part of the work).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, shared_path

from compare.cli import app, compat_app
from compare.cli.compat import Spelling, translate
from compare.cli.main import run
from compare.testing.synthetic_msprobe import write_msprobe_dump
from convert.errors import OptionError

DEMO = FIXTURES / "demo"
STAMP = "20260102030405"
runner = CliRunner()


def _compat(*args: object):
    return runner.invoke(compat_app, [str(a) for a in args])


def _only(folder: Path, pattern: str) -> Path:
    """The one file of ``folder`` whose name matches ``pattern`` (and nothing else there)."""
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == 1 and re.fullmatch(pattern, names[0]), names
    return folder / names[0]


def _same_table(ours: Path, main: Path) -> None:
    """The translated run wrote the table the main command writes for the same comparison."""
    pd.testing.assert_frame_equal(pd.read_csv(ours), pd.read_csv(main))


# ----------------------------------------------------------------------------------------------
# msaccucmp's form on fixtures/demo
# ----------------------------------------------------------------------------------------------


def test_msaccucmp_network_writes_result_stamp_csv_in_out(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _compat("-m", DEMO / "npu", "-g", DEMO / "golden", "-f", DEMO / "model.json", "-out", out)
    assert result.exit_code == 0, result.output
    assert "msaccucmp's spelling, run as: vcompare -l" in result.stderr
    ours = _only(out, r"result_\d{14}\.csv")
    main = runner.invoke(app, ["-l", str(DEMO / "npu"), "-r", str(DEMO / "golden"), "-f", str(DEMO / "model.json"),
                               "-o", str(tmp_path / "main.csv")])
    assert main.exit_code == 0, main.output
    _same_table(ours, tmp_path / "main.csv")
    assert {"conv1:output:0", "pool1:output:0", "fc1:output:0"} <= set(pd.read_csv(ours).TensorIndex.dropna())


def test_msaccucmp_long_names_and_alg_digits(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _compat("--my_dump_path", DEMO / "npu", "--golden_dump_path", DEMO / "golden",
                     f"--fusion_rule_file={DEMO / 'model.json'}", "--output", out, "-alg", "0", "1", "5")
    assert result.exit_code == 0, result.output
    columns = list(pd.read_csv(_only(out, r"result_\d{14}\.csv")).columns)
    assert {"CosineSimilarity", "MaxAbsoluteError", "StandardDeviation"} <= set(columns)
    assert "KullbackLeiblerDivergence" not in columns


@pytest.mark.parametrize(("flags", "tensor"), [(["-op", "pool1", "-i", "0"], "pool1_input_0"),
                                               (["-op", "pool1", "-o", "0"], "pool1_output_0"),
                                               (["-d", "pool1", "-t", "output", "-i", "0"], "pool1_output_0")])
def test_msaccucmp_single_operator(tmp_path: Path, flags: list[str], tensor: str) -> None:
    out = tmp_path / "detail"
    result = _compat("-m", DEMO / "npu", "-g", DEMO / "golden", "-f", DEMO / "model.json", "-out", out, *flags)
    assert result.exit_code == 0, result.output
    summary = (out / f"{tensor}_summary.txt").read_text()
    assert "pool1" in summary
    assert (out / f"{tensor}_0.csv").is_file()


def test_msaccucmp_translation_table() -> None:
    line = translate(["-m", "npu", "-g", "gold", "-f", "m.json", "-q", "q.json", "-cf", "c.json", "-out", "o",
                      "-r", "1,-1,10", "-max", "100", "-v", "2", "-overflow_detection", "-c", "plugins", "-ffts"])
    assert line.spelling is Spelling.MSACCUCMP
    assert line.argv == ("-l", "npu", "-r", "gold", "-o", "o", "-f", "m.json", "-q", "q.json", "-cf", "c.json",
                         "-custom", "plugins", "--range", "1,-1,10", "-max", "100", "--dump-version", "2",
                         "--overflow", "-ffts")
    single = translate(["-m", "a", "-g", "b", "-op", "conv", "-o", "1", "-n", "50", "-ml", "20000",
                        "--ignore_single_op_result"])
    assert single.argv == ("-l", "a", "-r", "b", "-n", "50", "--max-lines", "20000", "--no-details",
                           "-d", "conv", "-t", "output", "-i", "1")
    # compare_vector's -o PATH (not a number): the result path
    assert translate(["-m", "a", "-g", "b", "-o", "r.txt", "-csv"]).argv == ("-l", "a", "-r", "b", "-o", "r.txt",
                                                                             "-csv")
    assert translate(["-m", "a", "-g", "b", "-s", "3,7", "-map", "-f", "m.json"]).argv == (
        "-l", "a", "-r", "b", "-f", "m.json", "--select", "3,7", "-map")


def test_vcompare_options_after_double_dash(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _compat("-m", DEMO / "npu", "-g", DEMO / "golden", "-f", DEMO / "model.json", "-out", out,
                     "--", "--json", tmp_path / "r.json", "--gate", "CosineSimilarity>=0.99999999")
    assert result.exit_code == 1, result.output  # fc1's cosine is 0.9986: the gate fails, its exit code stays
    assert json.loads((tmp_path / "r.json").read_text())["verdict"]["passed"] is False
    assert translate(["-m", "a", "-g", "b", "--", "--quiet", "-alg", "0"]).argv == ("-l", "a", "-r", "b", "--quiet",
                                                                                   "-alg", "0")


# ----------------------------------------------------------------------------------------------
# msprobe's form
# ----------------------------------------------------------------------------------------------


@pytest.fixture
def msprobe_pair(tmp_path: Path) -> tuple[Path, Path]:
    """Two synthetic PyTorch msprobe trees (the right one perturbed), as ``{root}/step0``."""
    write_msprobe_dump(tmp_path / "npu")
    write_msprobe_dump(tmp_path / "bench", noise=1e-3, seed=7)
    return tmp_path / "npu" / "step0", tmp_path / "bench" / "step0"


def test_msprobe_tp_gp_writes_compare_result_csv(tmp_path: Path, msprobe_pair: tuple[Path, Path]) -> None:
    npu, bench = msprobe_pair
    out = tmp_path / "output"
    result = _compat("-tp", npu, "-gp", bench, "-o", out)
    assert result.exit_code == 0, result.output
    assert "msprobe's spelling, run as: vcompare -l" in result.stderr
    ours = _only(out, r"compare_result_\d{14}\.csv")
    assert runner.invoke(app, ["-l", str(npu), "-r", str(bench), "-o", str(tmp_path / "main.csv")]).exit_code == 0
    _same_table(ours, tmp_path / "main.csv")
    assert len(pd.read_csv(ours)) > 5


def test_msprobe_default_output_folder(tmp_path: Path, msprobe_pair: tuple[Path, Path],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    npu, bench = msprobe_pair
    monkeypatch.chdir(tmp_path)
    result = _compat("--target_path", npu, "--golden_path", bench, "-o")  # -o without a folder: ./output
    assert result.exit_code == 0, result.output
    _only(tmp_path / "output", r"compare_result_\d{14}\.csv")


def test_msprobe_compare_json(tmp_path: Path, msprobe_pair: tuple[Path, Path],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    npu, _ = msprobe_pair
    (npu / "rank0" / "stack.json").write_text("{}")
    monkeypatch.chdir(tmp_path)  # compare.json's paths are read from the current folder, as msprobe reads them
    config = tmp_path / "compare.json"
    config.write_text(json.dumps({"npu_path": "npu/step0/rank0/dump.json", "bench_path": "bench/step0/rank0/dump.json",
                                  "stack_path": "npu/step0/rank0/stack.json", "is_print_compare_log": True}))
    result = _compat("-i", config, "-o", "out", "-s")
    assert result.exit_code == 0, result.output
    assert "note: is_print_compare_log" in result.stderr and "note: -s" in result.stderr
    ours = _only(tmp_path / "out", r"compare_result_\d{14}\.csv")
    assert "run as: vcompare -l npu/step0/rank0 -r bench/step0/rank0 -o out/compare_result_" in result.stderr
    main = runner.invoke(app, ["-l", "npu/step0/rank0", "-r", "bench/step0/rank0", "-o", "m.csv"])
    assert main.exit_code == 0, main.output
    _same_table(ours, tmp_path / "m.csv")


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "not JSON"),
    ("[1, 2]", "a JSON object is expected"),
    ('{"npu_path": "a"}', "bench_path must be a path"),
    ('{"npu_path": "a", "bench_path": "b", "npu_dump_data_dir": "c"}', "unknown field(s) npu_dump_data_dir"),
    ('{"npu_path": "a", "bench_path": "b", "is_print_compare_log": "yes"}', "must be true or false"),
    ('{"npu_path": "a/dump.json", "bench_path": "b", "stack_path": "elsewhere/stack.json"}',
     "vcompare reads the stack.json beside a/dump.json"),
])
def test_msprobe_compare_json_refused(tmp_path: Path, content: str, message: str) -> None:
    config = tmp_path / "compare.json"
    config.write_text(content)
    result = _compat("-i", config, "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_msprobe_compare_json_missing(tmp_path: Path) -> None:
    result = _compat("-i", tmp_path / "nowhere.json")
    assert result.exit_code == 2
    assert "cannot read" in result.stderr


def test_msprobe_mapping_flags_translation() -> None:
    line = translate(["-tp", "ms/step0", "-gp", "pt/step0", "-o", "out", "-fm", "-lm", "layer.yaml", "-am",
                      "-dm", "data.yaml", "-cm", "cell.yaml", "--rank", "0,1", "--step", "3"], stamp=STAMP)
    assert line.spelling is Spelling.MSPROBE
    assert line.argv == ("-l", "ms/step0", "-r", "pt/step0", "-o", f"out/compare_result_{STAMP}.csv",
                         "--fuzzy-match", "--layer-mapping", "layer.yaml", "--cell-mapping", "cell.yaml",
                         "--api-mapping", "builtin", "--data-mapping", "data.yaml", "--rank", "0,1", "--iteration", "3")
    with_file = translate(["--target_path", "a", "--golden_path=b", "--api_mapping", "api.yaml", "--xlsx",
                           "--fuzzy_match", "--layer_mapping=l.yaml"], stamp=STAMP)
    assert with_file.argv == ("-l", "a", "-r", "b", "-o", f"./output/compare_result_{STAMP}.xlsx", "--fuzzy-match",
                              "--layer-mapping", "l.yaml", "--api-mapping", "api.yaml")
    old = translate(["-tp", "a", "-gp", "b", "-f", "-c", "-hl"], stamp=STAMP)  # old msprobe: -f is fuzzy match
    assert old.argv == ("-l", "a", "-r", "b", "-o", f"./output/compare_result_{STAMP}.csv", "--fuzzy-match")
    assert old.notes == ("-hl: a .csv has no colours; --xlsx writes the workbook with failing rows highlighted",)


def test_msprobe_offline_data_mode_on_demo(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _compat("-m", "offline_data", "-tp", DEMO / "npu", "-gp", DEMO / "golden", "-fr", DEMO / "model.json",
                     "-o", out)
    assert result.exit_code == 0, result.output
    ours = _only(out, r"compare_result_\d{14}\.csv")
    assert "pool1:output:0" in set(pd.read_csv(ours).TensorIndex.dropna())


def test_msprobe_real_tree(tmp_path: Path) -> None:
    trees = shared_path("msprobe-real", "trees")
    npu, bench = trees / "t_L1_perturb" / "step0", trees / "t_L1_base" / "step0"
    out = tmp_path / "output"
    result = _compat("-tp", npu, "-gp", bench, "-o", out)
    assert result.exit_code == 0, result.output
    ours = _only(out, r"compare_result_\d{14}\.csv")
    assert runner.invoke(app, ["-l", str(npu), "-r", str(bench), "-o", str(tmp_path / "main.csv")]).exit_code == 0
    _same_table(ours, tmp_path / "main.csv")
    frame = pd.read_csv(ours)
    assert frame.LeftOp.str.startswith("Functional.linear.2.forward").any()


# ----------------------------------------------------------------------------------------------
# refusals and exit codes
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    (["-m", "a", "-tp", "b"], "mixed spellings: -m (msaccucmp) with -tp (msprobe)"),
    (["-m", "a", "-g", "b", "-fm"], "mixed spellings: -fm is msprobe's option, this line is in msaccucmp's"),
    (["-tp", "a", "-gp", "b", "-out", "o"], "mixed spellings: -out (msaccucmp) with -tp, -gp (msprobe)"),
    (["-tp", "a", "-gp", "b", "-q", "q.json"], "mixed spellings: -q is msaccucmp's option"),
    (["-l", "a", "-r", "b"], "-l / -r are vcompare's own spelling"),
    (["-f", "m.json"], "name the two dumps in msaccucmp's or msprobe's form"),
    (["-m", "a", "-g", "b", "--fusion_rule", "x"], "did you mean --fusion_rule_file?"),
    (["-m", "a", "-g", "b", "--gate", "CosineSimilarity>=0.9"], "--gate is vcompare's own option: put it after --"),
    (["-m", "a", "-g", "b", "-advisor"], "--verdicts"),
    (["-tp", "a", "-gp", "b", "-da"], "--verdicts"),
    (["-tp", "a", "-gp", "b", "-m", "torchair"], "-m torchair: vcompare compares dump trees"),
    (["-tp", "a", "-gp", "b", "-fr", "m.json"], "-fr: fusion rule files go with -m offline_data"),
    (["-tp", "a", "-gp", "b", "-lm"], "-lm needs a mapping FILE"),
    (["-tp", "a", "-gp", "b", "-i", "c.json"], "name the dumps once"),
    (["-tp", "a"], "msprobe's form needs -tp TARGET and -gp GOLDEN"),
    (["-m", "a", "-out", "o"], "msaccucmp's form needs both -m MY_DUMP and -g GOLDEN"),
    (["-m", "a", "-g", "b", "-g", "c"], "-g: given twice"),
    (["-m", "a", "-g", "b", "stray"], "unexpected argument 'stray'"),
    (["-m", "a", "-g", "b", "-f"], "-f needs a value"),
    (["-m", "a", "-g", "b", "-i", "0"], "give -op OP"),
    (["-m", "a", "-g", "b", "-op", "x", "-i", "0", "-o", "1"], "exclude each other"),
    (["-m", "a", "-g", "b", "-out", "o", "-o", "r.csv"], "two result paths"),
])
def test_refusals_exit_2_with_the_diagnosis(args: list[str], message: str) -> None:
    result = _compat(*args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    with pytest.raises(OptionError, match=re.escape(message)):
        translate(args, stamp=STAMP)


def test_mixed_refusal_names_both_forms() -> None:
    result = _compat("-m", "a", "-gp", "b")
    assert result.exit_code == 2
    assert "msaccucmp: vcompare compare -m MY_DUMP -g GOLDEN" in result.stderr
    assert "msprobe: vcompare compare -tp TARGET -gp GOLDEN -o FOLDER" in result.stderr
    assert "vcompare compare -i compare.json" in result.stderr


def test_main_command_errors_keep_their_exit_code(tmp_path: Path) -> None:
    result = _compat("-m", tmp_path / "missing", "-g", DEMO / "golden", "-out", tmp_path / "out")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


# ----------------------------------------------------------------------------------------------
# help and the console entry point
# ----------------------------------------------------------------------------------------------


def test_compare_help_lists_both_tools() -> None:
    result = _compat("--help")
    assert result.exit_code == 0
    assert "msaccucmp's options" in result.stdout and "msprobe's options" in result.stdout
    assert "-tp, --target_path VALUE" in result.stdout and "-am, --api_mapping [VALUE]" in result.stdout


def test_vcompare_help_lists_compare(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--help"]) == 0
    out = capsys.readouterr().out
    assert "Subcommands" in out
    assert re.search(r"^│ compare +msaccucmp's", out, re.MULTILINE)


def test_entry_point_runs_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert run(["compare", "-m", str(DEMO / "npu"), "-g", str(DEMO / "golden"), "-f", str(DEMO / "model.json"),
                "-out", str(out)]) == 0
    _only(out, r"result_\d{14}\.csv")
    assert run(["compare", "-m", "a", "-tp", "b"]) == 2
    assert "mixed spellings" in capsys.readouterr().err


def test_migration_doc_names_every_option() -> None:
    """docs/migration.md's two tables and the translator's tables hold the same options."""
    from conftest import ROOT

    from compare.cli.compat import MSACCUCMP_OPTIONS, MSPROBE_OPTIONS

    text = (ROOT / "docs" / "migration.md").read_text()
    documented = {name for cell in re.findall(r"^\| ((?:[^|\\]|\\.)+) \|", text, re.MULTILINE)
                  for name in re.findall(r"`(-[-\w]+)", cell)}
    known = {name for opt in (*MSACCUCMP_OPTIONS, *MSPROBE_OPTIONS) for name in opt.names}
    assert documented - known == set()
    # one row covers these: "-m torchair / offline_model / atb and their options"
    missing = known - documented - {"--input_data", "--input_shape", "--output_size", "--dym_shape_range", "-ofs",
                                    "--onnx_fusion_switch"}
    assert missing == set()
