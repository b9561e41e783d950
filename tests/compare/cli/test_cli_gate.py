"""The CI gate through the command line and the Python API (issue 13): exit codes 0/1/3/2, policy
and waivers, the same-data guard, output failures, --json/--junit, ``vcompare gate`` (re-checking a
saved run gives the live run's verdict, JSON verdict section and JUnit), ``vcompare policy --init``,
``--version``, the terminal summary and the progress bar.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, TESTS
from typer.testing import CliRunner

from compare.cli import app, run
from compare.runs import outputs as run_outputs

DEMO = FIXTURES / "demo"
BAD = FIXTURES / "bad"
MANIFEST = json.loads((BAD / "MANIFEST.json").read_text())
runner = CliRunner()


def _run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def _demo(*extra: object) -> list[str]:
    return ["-l", str(DEMO / "npu"), "-r", str(DEMO / "golden"), "-f", str(DEMO / "model.json"),
            *[str(e) for e in extra]]


def _bad(case: str, *extra: object) -> list[str]:
    spec = MANIFEST["cases"][case]
    return ["-l", str(BAD / spec["left"]), "-r", str(BAD / spec["right"]), "-f", str(BAD / spec["rule"]),
            *[str(e) for e in extra]]


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """``vcompare ARGS`` in-process through :func:`compare.cli.run` (the subcommand dispatch)."""
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------------------------
# exit codes


def test_exit_0_passed_and_1_failed(tmp_path: Path) -> None:
    ok = _run(*_demo("-o", tmp_path / "a.csv", "--gate", "CosineSimilarity>=0.99"))
    assert ok.exit_code == 0, ok.output
    assert "gate: PASSED (exit 0)" in ok.stderr
    bad = _run(*_demo("-o", tmp_path / "b.csv", "--gate", "cos>=0.9999"))
    assert bad.exit_code == 1, bad.output
    assert "gate: FAILED (exit 1)" in bad.stderr
    # the failures carry the full-precision value, never a 6-decimal rounding
    assert "fc1:output:0: CosineSimilarity = 0.9986019176292512 violates CosineSimilarity>=0.9999" in bad.stderr
    assert (tmp_path / "b.csv").exists()


@pytest.mark.parametrize("case", sorted(MANIFEST["cases"]))
def test_exit_3_on_not_compared_rows_and_0_with_a_waiver(case: str, tmp_path: Path) -> None:
    """Unreadable / truncated / unknown dumps used to pass a gate with exit 0 (issue 13)."""
    gated = _run(*_bad(case, "-o", tmp_path / "r.csv", "--gate", "CosineSimilarity>=0.99", "--json",
                       tmp_path / "r.json"))
    assert gated.exit_code == 3, gated.output
    assert "gate: INCOMPLETE (exit 3)" in gated.stderr and "not compared" in gated.stderr
    failures = json.loads((tmp_path / "r.json").read_text())["verdict"]["failures"]
    names = sorted({n for f in failures for n in f["left_op"].split(",") + f["right_op"].split(",") if n != "*"})
    policy = tmp_path / "gates.toml"
    policy.write_text("".join(f'[[waiver]]\nop = "{n}"\nreason = "broken on purpose"\nmetrics = ["not-compared"]\n'
                              for n in names))
    waived = _run(*_bad(case, "-o", tmp_path / "w.csv", "--gate", "CosineSimilarity>=0.99", "--policy", policy))
    assert waived.exit_code == 0, waived.output
    assert "waived" in waived.stderr
    ungated = _run(*_bad(case, "-o", tmp_path / "u.csv"))
    assert ungated.exit_code == 0  # without gates the run keeps its old behaviour


def test_expired_waiver_exit_1(tmp_path: Path) -> None:
    policy = tmp_path / "gates.toml"
    policy.write_text('[[waiver]]\nop = ["pool1", "fc1", "prob"]\nreason = "ticket 7"\nexpires = 2020-01-31\n')
    result = _run(*_bad("dumps_a", "-o", tmp_path / "r.csv", "--gate", "cos>=0.99", "--policy", policy))
    assert result.exit_code == 1, result.output
    assert "expired on 2020-01-31" in result.stderr


@pytest.mark.parametrize("text,needle", [
    ("[defaults]\nCosineSimilarty = 0.99\n", "CosineSimilarty"),
    ("not toml [", "not valid TOML"),
])
def test_bad_policy_exit_2(tmp_path: Path, text: str, needle: str) -> None:
    policy = tmp_path / "gates.toml"
    policy.write_text(text)
    result = _run(*_demo("-o", tmp_path / "r.csv", "--policy", policy))
    assert result.exit_code == 2 and needle in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "r.csv").exists()  # refused before comparing
    missing = _run(*_demo("-o", tmp_path / "r.csv", "--policy", tmp_path / "nope.toml"))
    assert missing.exit_code == 2 and "nope.toml" in missing.stderr


def test_policy_file_alone_gates_and_the_metrics_it_names_are_computed(tmp_path: Path) -> None:
    policy = tmp_path / "gates.toml"
    policy.write_text('[defaults]\nMaxAbsoluteError = "<= 1e-3"\n')
    result = _run(*_demo("-o", tmp_path / "r.csv", "-alg", "0", "--policy", policy, "--json", tmp_path / "r.json"))
    assert result.exit_code == 1, result.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert "MaxAbsoluteError" in doc["metrics"] and doc["verdict"]["outcome"] == "failed"
    assert "worst by MaxAbsoluteError" in result.stderr


# --------------------------------------------------------------------------------------------
# same-data guard


def _same_cases(tmp_path: Path) -> list[tuple[Path, Path]]:
    leaf = DEMO / "npu" / "20240101120000" / "0" / "demo_net" / "1" / "0"
    linked = tmp_path / "linked"
    linked.mkdir()
    for path in leaf.iterdir():
        (linked / path.name).symlink_to(path)
    return [(DEMO / "npu", DEMO / "npu"),  # the same folder
            (leaf, DEMO / "npu"),  # a parent folder that resolves to the same leaf
            (DEMO / "npu", linked)]  # the same files through symlinks


def test_same_data_guard(tmp_path: Path) -> None:
    for i, (left, right) in enumerate(_same_cases(tmp_path)):
        base = ["-l", left, "-r", right]
        plain = _run(*base, "-o", tmp_path / f"p{i}.csv")
        assert plain.exit_code == 0 and "warning:" in plain.stderr and "same" in plain.stderr, (left, right)
        gated = _run(*base, "-o", tmp_path / f"g{i}.csv", "--gate", "cos>=0.99")
        assert gated.exit_code == 2 and "--allow-same" in gated.stderr, (left, right, gated.output)
        assert not (tmp_path / f"g{i}.csv").exists()
        allowed = _run(*base, "-o", tmp_path / f"a{i}.csv", "--gate", "cos>=0.99", "--allow-same")
        assert allowed.exit_code == 0, allowed.output
    different = _run(*_demo("-o", tmp_path / "d.csv", "--gate", "cos>=0.99"))
    assert "same dump" not in different.stderr


def test_same_data_guard_in_the_api() -> None:
    from compare.api import compare_network
    from compare.runs.network import SameDataError

    with pytest.raises(SameDataError):
        compare_network(DEMO / "npu", DEMO / "npu", gates=["cos>=0.99"])
    result = compare_network(DEMO / "npu", DEMO / "npu")
    assert any("warning:" in note and "same dump" in note for note in result.notes)


# --------------------------------------------------------------------------------------------
# outputs


def test_unwritable_output_is_exit_2_one_line_before_comparing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = _run(*_demo("-o", blocker / "sub" / "r.csv"))
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(lines) == 1 and str(blocker / "sub" / "r.csv") in lines[0]
    assert "Traceback" not in result.output
    for flag in ("--json", "--junit"):
        other = _run(*_demo("-o", tmp_path / "r.csv", flag, blocker / "x"))
        assert other.exit_code == 2 and str(blocker / "x") in other.stderr
    folder = _run(*_demo("-o", tmp_path / "r.csv", "--json", tmp_path))
    assert folder.exit_code == 2 and "is a directory" in folder.stderr


def test_a_write_failure_after_comparing_is_exit_2_and_keeps_the_rest(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure the pre-flight check cannot see (disk full, a race): the other outputs are still
    written, the summary still printed, the failing path named on one line, exit 2."""
    monkeypatch.setattr(run_outputs, "preflight", lambda path: None)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    previous = tmp_path / "r.json"
    result = _run(*_demo("-o", blocker / "r.csv", "--json", previous, "--gate", "cos>=0.99"))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if "cannot write" in line]
    assert len(errors) == 1 and str(blocker / "r.csv") in errors[0]
    assert "gate: PASSED" in result.stderr  # the comparison is not wasted silently
    assert json.loads(previous.read_text())["verdict"]["outcome"] == "passed"
    assert blocker.read_text() == "x"


def test_unknown_output_extension_exit_2(tmp_path: Path) -> None:
    for name in ("r.json", "r.xls"):
        result = _run(*_demo("-o", tmp_path / name))
        assert result.exit_code == 2 and "--json" in result.stderr, result.output
        assert not (tmp_path / name).exists()


def test_result_files_honour_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        assert _run(*_demo("-o", tmp_path / "r.csv", "--json", tmp_path / "r.json", "--junit",
                           tmp_path / "j.xml")).exit_code == 0
    finally:
        os.umask(old)
    for name in ("r.csv", "r.json", "j.xml"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644


def test_json_and_junit_are_written_and_valid(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    xmlschema = pytest.importorskip("xmlschema")
    result = _run(*_bad("dumps_a", "-o", tmp_path / "r.csv", "--gate", "cos>=0.99", "--json", tmp_path / "r.json",
                        "--junit", tmp_path / "j.xml"))
    assert result.exit_code == 3
    assert f"json: {tmp_path / 'r.json'}" in result.stdout and f"junit: {tmp_path / 'j.xml'}" in result.stdout
    doc = json.loads((tmp_path / "r.json").read_text())
    schema = json.loads((ROOT / "docs" / "result-schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert doc["verdict"]["exit_code"] == 3 and doc["options"]["gates"] == ["CosineSimilarity>=0.99"]
    xmlschema.XMLSchema(str(TESTS / "junit.xsd")).validate(str(tmp_path / "j.xml"))
    assert "<error" in (tmp_path / "j.xml").read_text()


def _cells(path: Path, column: str) -> list[str]:
    with path.open(newline="") as handle:
        return [row[column] for row in csv.DictReader(handle) if row[column] not in ("NaN", "")]


def test_digits_and_float_format(tmp_path: Path) -> None:
    assert _run(*_demo("-o", tmp_path / "r.csv", "-alg", "1", "--float-format", "repr")).exit_code == 0
    cells = _cells(tmp_path / "r.csv", "MaxAbsoluteError")
    assert cells and any(len(c.split(".")[-1]) > 6 or "e" in c for c in cells)
    assert _run(*_demo("-o", tmp_path / "d.csv", "-alg", "1", "--digits", "9")).exit_code == 0
    cells = _cells(tmp_path / "d.csv", "MaxAbsoluteError")
    assert cells and all(len(c.split(".")[-1]) == 9 for c in cells)
    bad = _run(*_demo("-o", tmp_path / "x.csv", "--digits", "3", "--float-format", "repr"))
    assert bad.exit_code == 2 and "exclude each other" in bad.stderr


# --------------------------------------------------------------------------------------------
# vcompare gate: re-checking a saved run


def test_regate_gives_the_live_verdict_json_and_junit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "gates.toml"
    policy.write_text('[defaults]\ndtype = true\n[[waiver]]\nop = "prob"\nreason = "softmax in fp16"\n')
    for case in (["dumps_a"], ["demo"]):
        live_args = _bad(case[0]) if case[0] != "demo" else _demo()
        code, _, live_err = _cli(capsys, *live_args, "-o", tmp_path / "r.csv", "--policy", policy, "--gate",
                                 "cos>=0.999", "--json", tmp_path / "live.json", "--junit", tmp_path / "live.xml")
        assert code in (1, 3), live_err
        again, _, err = _cli(capsys, "gate", tmp_path / "live.json", "--policy", policy, "--gate", "cos>=0.999",
                             "--json", tmp_path / "again.json", "--junit", tmp_path / "again.xml")
        assert again == code, err
        live = json.loads((tmp_path / "live.json").read_text())
        redo = json.loads((tmp_path / "again.json").read_text())
        assert redo["verdict"] == live["verdict"] and redo == live
        assert (tmp_path / "again.xml").read_text() == (tmp_path / "live.xml").read_text()
        # the summary's gate line is the live run's too
        assert [ln for ln in err.splitlines() if "gate:" in ln] == [ln for ln in live_err.splitlines() if "gate:" in ln]


def test_regate_csv_and_parquet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = _cli(capsys, *_demo("-o", tmp_path / "r.csv", "--gate", "cos>=0.9999"))
    assert code == 1
    assert _cli(capsys, "gate", tmp_path / "r.csv", "--gate", "cos>=0.9999")[0] == 1
    assert _cli(capsys, "gate", tmp_path / "r.csv", "--gate", "cos>=0.99")[0] == 3  # CSV: Data/Const not compared
    pytest.importorskip("pyarrow")
    assert _cli(capsys, *_demo("-o", tmp_path / "r.parquet", "--gate", "cos>=0.9999"))[0] == 1
    assert _cli(capsys, "gate", tmp_path / "r.parquet", "--gate", "cos>=0.9999")[0] == 1
    assert _cli(capsys, "gate", tmp_path / "r.parquet", "--gate", "cos>=0.99")[0] == 0


def test_regate_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "gate", tmp_path / "nope.json", "--gate", "cos>=0.9")
    assert code == 2 and "nope.json" in err
    (tmp_path / "r.json").write_text("{")
    code, _, err = _cli(capsys, "gate", tmp_path / "r.json", "--gate", "cos>=0.9")
    assert code == 2 and "not valid JSON" in err and "Traceback" not in err
    code, _, err = _cli(capsys, "gate", tmp_path / "r.json")
    assert code == 2 and "--policy" in err


def test_regate_api(tmp_path: Path) -> None:
    from compare import compare_network, regate

    live = compare_network(DEMO / "npu", DEMO / "golden", DEMO / "model.json", gates=["cos>=0.9999"])
    path = tmp_path / "r.json"
    path.write_text(json.dumps(live.to_dict()))
    again = regate(path, gates=["cos>=0.9999"])
    assert again.verdict == live.verdict and again.exit_code == live.exit_code == 1 and not again.passed
    assert again.to_dict()["verdict"] == live.to_dict()["verdict"]


# --------------------------------------------------------------------------------------------
# subcommand dispatch, policy --init, --version


def test_a_folder_named_gate_or_policy_is_still_an_option_value(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("gate", "policy"):
        os.symlink(DEMO / "npu", tmp_path / name)
        code, out, err = _cli(capsys, "-l", name, "-r", DEMO / "golden", "-f", DEMO / "model.json", "-o",
                              tmp_path / f"{name}.csv")
        assert code == 0, err
        assert (tmp_path / f"{name}.csv").exists()
    code, out, _ = _cli(capsys, "-l", DEMO / "npu", "-r", DEMO / "golden", "-alg", "0", "1", "-o", tmp_path / "x.csv")
    assert code == 0  # -alg 0 1 is still normalised


def test_policy_init_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from compare.verdict.policy_file import load_policy, starter_policy

    target = tmp_path / "ci" / "gates.toml"
    code, out, _ = _cli(capsys, "policy", "--init", target)
    assert code == 0 and f"policy: {target}" in out
    assert target.read_text() == starter_policy()
    assert load_policy(target).gated
    target.write_text("# mine\n")
    code, _, err = _cli(capsys, "policy", "--init", target)
    assert code == 2 and "--force" in err and target.read_text() == "# mine\n"
    assert _cli(capsys, "policy", "--init", target, "--force")[0] == 0 and target.read_text() == starter_policy()
    assert _cli(capsys, "policy")[0] == 2
    # the starter policy gates a real run
    assert _cli(capsys, *_demo("-o", tmp_path / "r.csv", "--policy", target))[0] == 0


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    code, out, _ = _cli(capsys, "--version")
    assert code == 0 and out.strip() == f"vcompare {version('vcompare')}"


def test_help_of_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "gate", "--help")
    assert code == 0 and "RESULT" in out and "--policy" in out
    code, out, _ = _cli(capsys, "policy", "--help")
    assert code == 0 and "--init" in out
    code, out, _ = _cli(capsys, "--help")
    assert code == 0 and "vcompare gate" in out and "--policy" in out and "--json" in out


# --------------------------------------------------------------------------------------------
# terminal summary, progress, API


def test_summary_is_short_and_quiet_is_one_line(tmp_path: Path) -> None:
    result = _run(*_bad("dumps_a", "-o", tmp_path / "r.csv", "--gate", "cos>=0.99", "--gate", "maxabs<=1"))
    summary = [line for line in result.stderr.splitlines() if line.startswith(("vcompare: rows:", "vcompare: gate:",
                                                                               "vcompare:   ", "vcompare: worst"))]
    assert 3 <= len(summary) <= 15
    assert any(line.startswith("vcompare: worst by CosineSimilarity:") for line in summary)
    assert any(line.startswith("vcompare: worst by MaxAbsoluteError:") for line in summary)
    quiet = _run(*_bad("dumps_a", "-o", tmp_path / "q.csv", "--gate", "cos>=0.99", "--quiet"))
    assert quiet.exit_code == 3
    assert len(quiet.stderr.strip().splitlines()) == 1 and "INCOMPLETE (exit 3)" in quiet.stderr
    plain = _run(*_demo("-o", tmp_path / "p.csv"))
    assert "gate: none given (exit 0)" in plain.stderr and "worst by CosineSimilarity" in plain.stderr


def test_progress_bar_only_when_asked_or_on_a_terminal(tmp_path: Path) -> None:
    shown = _run(*_demo("-o", tmp_path / "a.csv", "--progress"))
    assert shown.exit_code == 0 and "comparing" in shown.stderr
    hidden = _run(*_demo("-o", tmp_path / "b.csv"))  # CliRunner's stderr is not a terminal
    assert "comparing" not in hidden.stderr
    off = _run(*_demo("-o", tmp_path / "c.csv", "--progress", "--no-progress"))
    assert "comparing" not in off.stderr


def test_api_progress_callback_counts_every_pair() -> None:
    from compare import compare_network

    calls: list[tuple[int, int]] = []
    result = compare_network(DEMO / "npu", DEMO / "golden", DEMO / "model.json",
                             progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1][0] == calls[-1][1] == len(result.network.pairing.pairs)
    assert [d for d, _ in calls] == list(range(1, len(calls) + 1))


def test_api_result_object() -> None:
    from compare import ComparisonResult, compare_network
    from compare.records import Outcome

    result = compare_network(DEMO / "npu", DEMO / "golden", DEMO / "model.json")
    assert isinstance(result, ComparisonResult)
    assert result.verdict.outcome is Outcome.NOT_GATED and result.passed and result.exit_code == 0
    assert len(result.frame) == len(result.rows) and result.to_dict()["verdict"] is None
    gated = compare_network(DEMO / "npu", DEMO / "golden", DEMO / "model.json", gates=["cos>=0.9999"])
    assert not gated.passed and gated.exit_code == 1 and gated.to_dict()["verdict"]["outcome"] == "failed"
    assert "<failure" in gated.to_junit()


def test_py_typed_is_shipped() -> None:
    root = ROOT
    assert (root / "compare" / "py.typed").exists()
    assert "py.typed" in (root / "pyproject.toml").read_text()


def test_api_progress_counts_across_parts(tmp_path: Path) -> None:
    """--rank all compares parts in turn: the count runs on from part to part, never back."""
    from builders import tf_leaf as _tf_leaf

    from compare import compare_network

    sides = {}
    for side in ("a", "b"):
        for device in (0, 1):
            _tf_leaf(tmp_path / side, "20240101120000", device, value_iteration=0)
        sides[side] = tmp_path / side
    calls: list[tuple[int, int]] = []
    result = compare_network(sides["a"], sides["b"], rank="all", progress=lambda d, t: calls.append((d, t)))
    assert len(result.network.parts) == 2
    done = [d for d, _ in calls]
    assert done == list(range(1, len(calls) + 1))
    assert calls[-1][0] == calls[-1][1] and calls[0][1] < calls[-1][1]
