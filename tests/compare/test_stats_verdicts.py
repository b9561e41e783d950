"""Statistics rows are rows: JSON, JUnit, parquet, re-gating and the API see every statistics row;
statistics metrics gate; checksums are same/different; null statistics and mismatched pairs say so."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from conftest import shared_path
from typer.testing import CliRunner

from compare.api import compare_network, regate
from compare.cli import app, run
from compare.errors import OptionError
from compare.records import MetricRow, Outcome, PairStatus, RowKind, StatDiff, TensorKind, TensorRef
from compare.stats import STAT_METRIC_NAMES, StatsRow, diff_stat, dtype_class, mismatch_reason, shape_note
from compare.stats_table import StatsResult
from compare.testing.synthetic_msprobe import CALLS, T, write_msprobe_dump
from compare.verdict.gates import evaluate, parse_gate
from compare.verdict.policy import Policy, dtype_bounds
from compare.verdict.policy_file import load_policy

runner = CliRunner()


def _run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def _gate(*args: object) -> int:
    """``vcompare gate ARGS`` in-process (the subcommand dispatch of :func:`compare.cli.run`)."""
    return run(["gate", *(str(a) for a in args)])


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    base = tmp_path_factory.mktemp("stats")
    return {
        "base": write_msprobe_dump(base / "base", task="statistics"),
        "noisy": write_msprobe_dump(base / "noisy", task="statistics", noise=1e-2, seed=1),
        "ranks": write_msprobe_dump(base / "ranks", task="statistics", ranks=(0, 1)),
        "ranks_noisy": write_msprobe_dump(base / "ranks_noisy", task="statistics", ranks=(0, 1), noise=1e-2, seed=1),
    }


def _ref(dtype: str, shape: tuple[int, ...], fmt: str = "ND") -> TensorRef:
    return TensorRef("op", TensorKind.INPUT, 0, dtype, fmt, shape, Path("x"))


# ---------------------------------------------------------------------------------- unit level


def test_metric_row_holds_magnitudes_rel_and_checksums() -> None:
    row = StatsRow(0, "add", "a", "a", "a:input:0", "float32", "float32", (2,),
                   values={"max": diff_stat("max", 1.0, 2.0), "avg": diff_stat("avg", None, 3.0),
                           "checksum": diff_stat("checksum", "0xab", "0xac")})
    out = StatsResult.of_rows([row], list(row.values)).metric_rows()[0]
    assert out.kind is RowKind.STATISTICS
    assert out.metrics["MaxDiff"] == 1.0  # |1 - 2|: the table keeps the sign (-1)
    assert out.metrics["MaxRelDiff"] == 0.5
    assert out.metrics["AvgDiff"] is None and out.metrics["AvgRelDiff"] is None
    assert out.metrics["ChecksumDiff"] == 1.0
    assert out.undefined == {"AvgDiff", "AvgRelDiff"}
    assert out.statistics["max"].diff == -1.0


def test_xor_checksum_of_a_0d_float_is_same_or_different() -> None:
    """msprobe's xor mode writes a 0-d float's value itself: compared for equality, not subtracted."""
    assert diff_stat("checksum", 2.5, 2.5) == StatDiff(2.5, 2.5, "same")
    assert diff_stat("checksum", 2.5, 2.25).diff == "different"
    assert diff_stat("checksum", 2.5, 2.25).rel is None


@pytest.mark.parametrize("dtype, kind", [("int64", "integer"), ("bfloat16", "float"), ("bool", "bool"),
                                         ("float8_e4m3fn", "float"), ("complex64", "complex"), ("DT_STRING", None)])
def test_dtype_class(dtype: str, kind: str | None) -> None:
    got = dtype_class(dtype)
    assert (got.value if got is not None else None) == kind


def test_mismatch_reason_names_counts_and_kinds() -> None:
    text = mismatch_reason(_ref("int32", (5, 2)), _ref("int64", ()))
    assert "shapes differ: left [5, 2], right [] (10 and 1 elements)" in text and "not comparable" in text
    assert "kind" not in text  # int32 vs int64: the same class
    assert "data types differ in kind: left bool (bool), right float32 (float)" in mismatch_reason(
        _ref("bool", (2,)), _ref("float32", (2,)))
    assert mismatch_reason(_ref("float16", (2, 3)), _ref("float32", (2, 3))) == ""
    # statistics of a device layout are judged with its padding (count_reason), not refused
    assert mismatch_reason(_ref("float16", (1, 1, 2, 2, 16), "NC1HWC0"), _ref("float32", (1, 3, 2, 2), "NCHW")) == ""
    # tensors: the engine refuses different element counts itself; only the data-type class here
    assert mismatch_reason(_ref("float32", (2, 3)), _ref("float32", (3, 3)), tensors=True) == ""


def test_same_count_other_shape_is_a_note() -> None:
    """A reshaped view (MindSpore AMP runs record [8, 25] against [2, 4, 25]): compared, and said."""
    assert mismatch_reason(_ref("float32", (8, 25)), _ref("float32", (2, 4, 25))) == ""
    assert shape_note(_ref("float32", (8, 25)), _ref("float32", (2, 4, 25))) == (
        "shapes differ: left [8, 25], right [2, 4, 25] (the same 200 elements, compared in storage order)")
    assert shape_note(_ref("float32", (8, 25)), _ref("float32", (8, 25))) == ""


@pytest.mark.parametrize("text, metric, op, value", [
    ("L2NormRelDiff<=1e-4", "L2NormRelDiff", "<=", 1e-4), ("max_rel_diff < 0.01", "MaxRelDiff", "<", 0.01),
    ("ChecksumDiff==same", "ChecksumDiff", "==", 0.0), ("avgdiff<=2", "AvgDiff", "<=", 2.0),
    ("cos>=0.99", "CosineSimilarity", ">=", 0.99)])
def test_gates_name_statistics_metrics(text: str, metric: str, op: str, value: float) -> None:
    bound = parse_gate(text)
    assert (bound.metric, bound.op, bound.value) == (metric, op, value)


def test_unknown_gate_lists_statistics_metrics() -> None:
    with pytest.raises(OptionError, match="L2NormRelDiff"):
        parse_gate("L2NormRelativeThing<=1")


def test_builtin_statistics_bounds_follow_the_dtype() -> None:
    bounds = {b.metric: b for b in dtype_bounds("float32", "bfloat16", RowKind.STATISTICS)}
    assert set(bounds) == {"MaxRelDiff", "MinRelDiff", "L2NormRelDiff", "ChecksumDiff", "MD5Diff", "SHA1Diff"}
    assert bounds["L2NormRelDiff"].value == math.sqrt(2.0**-7) and bounds["L2NormRelDiff"].if_present
    assert bounds["ChecksumDiff"].op == "==" and bounds["ChecksumDiff"].value == 0.0
    assert {b.metric for b in dtype_bounds("int64", "int64", RowKind.STATISTICS)} == {
        "ChecksumDiff", "MD5Diff", "SHA1Diff"}
    assert {b.metric for b in dtype_bounds("float32", "float32")} == {"CosineSimilarity", "RelativeEuclideanDistance"}


def _stats_row(metrics: dict, **fields) -> MetricRow:
    return MetricRow(0, "add", "a", "a", "a:output:0", "float32", "float32", (4,), metrics=metrics,
                     kind=RowKind.STATISTICS, **fields)


def test_builtin_bounds_check_only_what_a_row_has() -> None:
    policy = Policy(dtype_defaults=True)
    ok = _stats_row({"MaxDiff": 0.0, "MaxRelDiff": 1e-5, "MinDiff": 0.0, "MinRelDiff": 0.0,
                     "L2NormDiff": 0.0, "L2NormRelDiff": 1e-5})
    assert evaluate([ok], policy).outcome is Outcome.PASSED  # no checksum on the row: not required
    bad = _stats_row({"ChecksumDiff": 1.0})
    verdict = evaluate([bad], policy)
    assert verdict.outcome is Outcome.FAILED and verdict.failures[0].metric == "ChecksumDiff"


def test_null_statistic_is_undefined_not_incomplete() -> None:
    row = _stats_row({"MaxRelDiff": 0.0, "AvgRelDiff": None}, undefined=frozenset({"AvgRelDiff"}),
                     reasons=["Avg recorded as null on both sides"])
    verdict = evaluate([row], Policy.from_gates([parse_gate("AvgRelDiff<=0.1")]))
    assert verdict.outcome is Outcome.PASSED and verdict.undefined == 1


def test_tensor_metric_on_a_statistics_row_is_incomplete_and_says_why() -> None:
    row = _stats_row({"MaxRelDiff": 0.0})
    verdict = evaluate([row], Policy.from_gates([parse_gate("CosineSimilarity>=0.9")]))
    assert verdict.outcome is Outcome.INCOMPLETE
    assert "statistics metric such as MaxRelDiff" in verdict.failures[0].message


def test_policy_file_takes_statistics_metrics_and_same(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('[defaults]\nL2NormRelDiff = 1e-3\nChecksumDiff = "same"\n'
                    '[[rule]]\nop = "Functional.*"\nMaxRelDiff = "<= 0.5"\n')
    policy = load_policy(path)
    assert {(b.metric, b.op, b.value) for b in policy.defaults} == {("L2NormRelDiff", "<=", 1e-3),
                                                                    ("ChecksumDiff", "==", 0.0)}
    assert policy.rules[0].bounds[0].metric == "MaxRelDiff"


# ---------------------------------------------------------------------------------- end to end


def test_json_rows_equal_table_rows_and_gates_exit(trees, tmp_path: Path) -> None:
    out, js, xml = tmp_path / "r.csv", tmp_path / "r.json", tmp_path / "r.xml"
    result = _run("-l", trees["noisy"].root, "-r", trees["base"].root, "-o", out, "--json", js, "--junit", xml,
                  "--gate", "L2NormRelDiff<=1e-6")
    assert result.exit_code == 1, result.output
    table = out.read_text().splitlines()[1:]
    document = json.loads(js.read_text())
    assert document["version"] == 2
    assert len(document["rows"]) == len(table) == document["counts"]["total"] > 0
    assert all(row["kind"] in ("statistics", "argument") for row in document["rows"])  # msprobe's arguments too
    assert "L2NormRelDiff" in document["metrics"]
    assert document["verdict"]["outcome"] == "failed"
    assert xml.read_text().count("<testcase") == len(table)
    assert _gate(js, "--gate", "L2NormRelDiff<=1e-6") == 1
    assert _gate(js, "--gate", "L2NormRelDiff<=1") == 0


def test_same_dump_passes_with_allow_same(trees, tmp_path: Path) -> None:
    result = _run("-l", trees["base"].root, "-r", trees["base"].root, "-o", tmp_path / "r.csv",
                  "--gate", "L2NormRelDiff<=1e-6", "--gate", "MaxRelDiff<=0", "--allow-same")
    assert result.exit_code == 0, result.output
    assert "PASSED" in result.output


def test_api_result_has_statistics_rows(trees) -> None:
    result = compare_network(trees["noisy"].root, trees["base"].root, gates=["MaxRelDiff<=1"])
    assert result.rows and all(r.kind in (RowKind.STATISTICS, RowKind.ARGUMENT) for r in result.rows)
    assert result.summary()["compared"] == len(result.rows)
    frame = result.frame
    assert len(frame) == len(result.rows) and "MaxRelDiff" in frame.columns
    assert result.passed


def test_multi_part_statistics_rows_carry_rank(trees, tmp_path: Path) -> None:
    js = tmp_path / "r.json"
    result = _run("-l", trees["ranks_noisy"].root, "-r", trees["ranks"].root, "--rank", "all",
                  "-o", tmp_path / "r.csv", "--json", js, "--gate", "L2NormRelDiff<=1")
    assert result.exit_code == 0, result.output
    rows = json.loads(js.read_text())["rows"]
    assert {row["rank"] for row in rows} == {0, 1}
    assert len(rows) == len((tmp_path / "r.csv").read_text().splitlines()) - 1


def test_parquet_of_statistics_rows(trees, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    out = tmp_path / "r.parquet"
    result = _run("-l", trees["noisy"].root, "-r", trees["base"].root, "-o", out)
    assert result.exit_code == 0, result.output
    saved = regate(out, gates=["MaxRelDiff<=1"])
    assert len(saved.rows) > 0 and "MaxRelDiff" in saved.metrics


def test_mismatched_tensor_pair_is_not_comparable(tmp_path: Path) -> None:
    """A call whose tensors differ in shape / kind between the sides: tensor and statistics mode."""
    left_calls = (("Functional.relu.0.forward", "Functional.relu.0.forward",
                   {"input_args": [T((2, 4))], "input_kwargs": {}, "output": [T((2, 4))]}),)
    right_calls = (("Functional.relu.0.forward", "Functional.relu.0.forward",
                    {"input_args": [T((3, 4))], "input_kwargs": {}, "output": [T((2, 4), "int64")]}),)
    for task in ("tensor", "statistics"):
        left = write_msprobe_dump(tmp_path / f"l_{task}", task=task, calls=left_calls)
        right = write_msprobe_dump(tmp_path / f"r_{task}", task=task, calls=right_calls)
        result = compare_network(left.root, right.root, gates=["MaxRelDiff<=1"] if task == "statistics"
                                 else ["CosineSimilarity>=0"])
        by_id = {row.tensor_id: row for row in result.rows}
        shape_row = by_id["Functional.relu.0.forward:input:0"]
        kind_row = by_id["Functional.relu.0.forward:output:0"]
        assert shape_row.status is PairStatus.NOT_COMPARABLE, task
        expected = "element counts differ" if task == "tensor" else "shapes differ: left [2, 4], right [3, 4]"
        assert any(expected in r for r in shape_row.reasons), shape_row.reasons
        assert kind_row.status is PairStatus.NOT_COMPARABLE
        assert any("data types differ in kind: left float32 (float), right int64 (integer)" in r
                   for r in kind_row.reasons)
        assert result.verdict.outcome is Outcome.INCOMPLETE, task


# ---------------------------------------------------------------------------------- real msprobe trees


def _real(name: str) -> Path:
    return shared_path("msprobe-real", "trees", name)


def test_real_statistics_acceptance(tmp_path: Path) -> None:
    left, right = _real("s_L1_perturb"), _real("s_L1_base")
    out, js = tmp_path / "r.csv", tmp_path / "r.json"
    result = _run("-l", left, "-r", right, "-o", out, "--json", js, "--gate", "L2NormRelDiff<=1e-4")
    assert result.exit_code == 1, result.output
    document = json.loads(js.read_text())
    assert len(document["rows"]) == len(out.read_text().splitlines()) - 1 == 380  # 310 tensors, 70 arguments
    assert _gate(js, "--gate", "L2NormRelDiff<=1e-4") == 1
    same = _run("-l", right, "-r", right, "-o", tmp_path / "s.csv", "--gate", "L2NormRelDiff<=1e-4", "--allow-same")
    assert same.exit_code == 0, same.output


def test_real_int64_null_mean_is_a_reason(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    assert _run("-l", _real("s_L1_perturb"), "-r", _real("s_L1_base"), "-o", out).exit_code == 0
    lines = [line for line in out.read_text().splitlines() if "cross_entropy.0.forward:input:1" in line]
    assert lines and "Avg, L2Norm recorded as null on both sides" in lines[0]


def test_real_checksum_modes(tmp_path: Path) -> None:
    for mode in ("md5", "xor"):
        js = tmp_path / f"{mode}.json"
        result = _run("-l", _real(f"s_L1_{mode}_perturb"), "-r", _real(f"s_L1_{mode}_base"),
                      "-o", tmp_path / f"{mode}.csv", "--json", js, "--gate", "ChecksumDiff==same")
        assert result.exit_code == 1, result.output
        rows = json.loads(js.read_text())["rows"]
        loss = next(r for r in rows if r["tensor_id"] == "Functional.cross_entropy.0.forward:output:0")
        assert loss["statistics"]["checksum"]["diff"] == "different"
        assert loss["metrics"]["ChecksumDiff"] == 1.0
        same = _run("-l", _real(f"s_L1_{mode}_base"), "-r", _real(f"s_L1_{mode}_base"), "-o", tmp_path / "s.csv",
                    "--gate", "ChecksumDiff==same", "--allow-same")
        assert same.exit_code == 0, same.output


def test_real_ms_vs_pt_shape_mismatch_is_not_comparable(tmp_path: Path) -> None:
    root = shared_path("real_device", "msprobe_ms_vs_pt_stats")
    result = compare_network(root / "mindspore_data", root / "pytorch_data")
    row = next(r for r in result.rows if r.tensor_id == "Tensor.__add__.0.forward:input:0")
    assert row.status is PairStatus.NOT_COMPARABLE
    assert any("shapes differ: left [5, 2], right []" in r for r in row.reasons)


def test_statistic_metric_names_are_unique() -> None:
    assert len(set(STAT_METRIC_NAMES)) == len(STAT_METRIC_NAMES)
    assert CALLS  # the synthetic network the end-to-end tests use


# ---------------------------------------------------------------------------------- msprobe's Result


def test_msprobe_runs_have_result_columns_and_json_grades(tmp_path: Path) -> None:
    """msprobe's Result / Err_message in the table (statistics and tensor) and the JSON rows."""
    for task in ("statistics", "tensor"):
        left = write_msprobe_dump(tmp_path / f"l_{task}", task=task, noise=0.6, seed=3)
        right = write_msprobe_dump(tmp_path / f"r_{task}", task=task)
        out, js = tmp_path / f"{task}.csv", tmp_path / f"{task}.json"
        result = _run("-l", left.root, "-r", right.root, "-o", out, "--json", js)
        assert result.exit_code == 0, result.output
        head = out.read_text().splitlines()[0].split(",")
        assert head[-3:] == ["Result", "Err_message", "FailReason"], head
        rows = json.loads(js.read_text())["rows"]
        assert all(row["grade"]["result"] in ("pass", "warning", "error") for row in rows)
        with open(out, newline="") as handle:
            cells = [row["Result"] for row in csv.DictReader(handle)]
        assert cells == [row["grade"]["result"] for row in rows], task
    txt = tmp_path / "t.txt"
    assert _run("-l", tmp_path / "l_tensor", "-r", tmp_path / "r_tensor", "-o", txt).exit_code == 0
    assert "Result" in txt.read_text().splitlines()[0]


def test_real_statistics_result_agrees_with_msprobe(tmp_path: Path) -> None:
    """s_L1_bf16 vs s_L1_base: msprobe's own CSV says error on the 152 bf16-vs-fp32 tensors, pass on
    227 rows (tensors and non-tensor arguments) and warning on one."""
    out = tmp_path / "r.csv"
    assert _run("-l", _real("s_L1_bf16"), "-r", _real("s_L1_base"), "-o", out).exit_code == 0
    with open(out, newline="") as handle:
        results = [row["Result"] for row in csv.DictReader(handle)]
    assert (results.count("error"), results.count("pass"), results.count("warning")) == (152, 227, 1)


def test_real_tensor_trees_same_acceptance(tmp_path: Path) -> None:
    """The tensor trees: JSON rows = table rows, the statistics gate (recorded statistics) and a
    tensor gate exit 1, 0 on base vs itself, re-gating agrees, the first divergence is the
    perturbed weight's consumer, --verdicts adds its column."""
    left, right = _real("t_L1_perturb"), _real("t_L1_base")
    out, js = tmp_path / "r.csv", tmp_path / "r.json"
    for gate in ("L2NormRelDiff<=1e-4", "RelativeEuclideanDistance<=1e-4"):
        result = _run("-l", left, "-r", right, "-o", out, "--json", js, "--gate", gate, "--verdicts")
        assert result.exit_code == 1, result.output
        assert "first divergence: Functional.linear.2.forward" in result.output
        document = json.loads(js.read_text())
        assert len(document["rows"]) == len(out.read_text().splitlines()) - 1 == 380  # 310 tensors, 70 arguments
        assert out.read_text().splitlines()[0].endswith(",Verdict")
        assert _gate(js, "--gate", gate) == 1
        same = _run("-l", right, "-r", right, "-o", tmp_path / "s.csv", "--gate", gate, "--allow-same")
        assert same.exit_code == 0, same.output


def test_real_statistics_first_divergence_and_verdicts(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    result = _run("-l", _real("s_L1_perturb"), "-r", _real("s_L1_base"), "-o", out, "--verdicts",
                  "--gate", "L2NormRelDiff<=1e-4")
    assert result.exit_code == 1
    assert "first divergence: Functional.linear.2.forward" in result.output
    with open(out, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["Verdict"] for r in rows if r["LeftOp"] == "Functional.linear.2.forward"} == {"input-differs"}


def test_statistics_table_regates_as_the_json(tmp_path: Path) -> None:
    """The statistics CSV read back: Diff cells as magnitudes, same/different as 0/1, a null
    statistic undefined, a trailing Verdict column allowed: the same verdict as the JSON."""
    for left, right, gate in (("s_L1_perturb", "s_L1_base", "L2NormRelDiff<=1e-4"),
                              ("s_L1_md5_perturb", "s_L1_md5_base", "ChecksumDiff==same"),
                              ("s_L1_bf16", "s_L1_base", "MaxRelDiff<=0.01")):
        out, js = tmp_path / f"{left}.csv", tmp_path / f"{left}.json"
        assert _run("-l", _real(left), "-r", _real(right), "-o", out, "--json", js, "--verdicts").exit_code == 0
        by_csv, by_json = regate(out, gates=[gate]), regate(js, gates=[gate])
        assert by_csv.verdict.outcome is by_json.verdict.outcome
        assert [f.message for f in by_csv.verdict.failures] == [f.message for f in by_json.verdict.failures]
        assert all(r.kind in (RowKind.STATISTICS, RowKind.ARGUMENT) for r in by_csv.rows)  # msprobe's arguments too


def test_statistics_csv_of_a_mismatched_pair_reads_back_not_comparable(tmp_path: Path) -> None:
    left_calls = (("Functional.relu.0.forward", "Functional.relu.0.forward",
                   {"input_args": [T((2, 4))], "input_kwargs": {}, "output": [T((2, 4))]}),)
    right_calls = (("Functional.relu.0.forward", "Functional.relu.0.forward",
                    {"input_args": [T((3, 4))], "input_kwargs": {}, "output": [T((2, 4))]}),)
    left = write_msprobe_dump(tmp_path / "l", task="statistics", calls=left_calls)
    right = write_msprobe_dump(tmp_path / "r", task="statistics", calls=right_calls)
    out = tmp_path / "r.csv"
    assert _run("-l", left.root, "-r", right.root, "-o", out).exit_code == 0
    saved = regate(out, gates=["MaxRelDiff<=1"])
    statuses = {r.tensor_id: r.status for r in saved.rows}
    assert statuses["Functional.relu.0.forward:input:0"] is PairStatus.NOT_COMPARABLE
    assert saved.verdict.outcome is Outcome.INCOMPLETE
