"""Error paths of the command line (issue 30): every malformed ``--gate`` a one-line diagnosis
and exit 2 (the unquoted ``--gate cos>=0.99`` with its quoting hint and the file the shell made),
``--explain`` of an operator the report does not have exit 2 with the ``-d`` kind of suggestion."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from compare.cli import app
from compare.errors import OptionError
from compare.verdict.gates import gateable_metrics, parse_gate

DEMO = FIXTURES / "demo"
FORM = "expected METRIC>=NUMBER (ops: >= <= > < ==), e.g. CosineSimilarity>=0.99"


def _run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _demo(*args: object):
    return _run("-l", DEMO / "npu", "-r", DEMO / "golden", "-f", DEMO / "model.json", *args)


@pytest.mark.parametrize(("gate", "diagnosis"), [
    ("", "bad --gate '': empty; " + FORM),
    (">=0.99", "bad --gate '>=0.99': no metric before '>='; " + FORM),
    ("CosineSimilarity>=x", "bad --gate 'CosineSimilarity>=x': 'x' is not a number; " + FORM),
    ("CosineSimilarity=>0.99", "bad --gate 'CosineSimilarity=>0.99': '=>' is not a comparison; did you mean '>='? "
     + FORM),
    ("CosineSimilarity!=1", "bad --gate 'CosineSimilarity!=1': '!=' is not a comparison; " + FORM),
    ("cos<", "bad --gate 'cos<': no number after '<'; " + FORM),
    ("CosineSimilarity>=0.99>=1", "bad --gate 'CosineSimilarity>=0.99>=1': 2 comparisons (>= >=); a gate is one "
     "bound on one metric: give one --gate per bound, e.g. --gate 'CosineSimilarity>=0.99' --gate "
     "'MaxAbsoluteError<=1'"),
    ("Cosin>=0.99", "bad --gate 'Cosin>=0.99': unknown metric 'Cosin'; did you mean 'CosineSimilarity'? gateable "
     "metrics: CosineSimilarity, MaxAbsoluteError,"),
    ("maxreldif<=1", "unknown metric 'maxreldif'; did you mean 'MaxRelDiff'?"),
    ("all>=0.99", "bad --gate 'all>=0.99': 'all' is an -alg word that selects 10 metrics, not a metric a gate can "
     "bound; give one --gate per metric; gateable metrics: CosineSimilarity, "),
    ("msprobe<=0.01", "'msprobe' is an -alg word that selects 3 metrics"),
    ("std<=1", "bad --gate 'std<=1': StandardDeviation is not a single number and cannot be gated"),
    ("xyz", "bad --gate 'xyz': no comparison operator; " + FORM),
])
def test_each_malformed_gate_is_one_line_and_exit_2(gate: str, diagnosis: str, tmp_path: Path) -> None:
    result = _demo("-o", tmp_path / "r.csv", "--gate", gate)
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("vcompare: error: "), result.output
    assert diagnosis in lines[0]
    assert "Traceback" not in result.output and not (tmp_path / "r.csv").exists()


def test_all_is_never_offered_as_a_gateable_metric() -> None:
    with pytest.raises(OptionError) as info:
        parse_gate("all>=0.99")
    listed = str(info.value).split("gateable metrics: ", 1)[1]
    assert "all" not in [name.strip() for name in listed.replace(";", ",").split(",")]
    assert "StandardDeviation" not in listed and "ArgumentDiff" in listed
    assert "all" not in gateable_metrics() and "StandardDeviation" not in gateable_metrics()


def test_a_metric_alias_in_any_case_is_a_gate() -> None:
    assert parse_gate("Cos>=0.99").metric == "CosineSimilarity"  # the -alg alias 'cos', case ignored
    assert parse_gate("10<=0.5").metric == "EucDist"  # -alg indexes above 9 too


def test_unquoted_gate_hints_at_quoting_and_names_the_file_the_shell_made(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = _demo("--gate", "cos")  # what `--gate cos>=0.99` unquoted passes
    assert result.exit_code == 2
    assert result.output == ("vcompare: error: bad --gate 'cos': no comparison operator; did you mean --gate "
                             "'CosineSimilarity>=0.99'? (quote it: the shell reads > as a redirection; a file named "
                             "'=0.99' may have been created here)\n")
    (tmp_path / "=0.97").write_bytes(b"")  # the file `--gate red>=0.97` unquoted leaves
    (tmp_path / "=0.5").write_text("not empty: not the shell's")
    result = _demo("--gate", "red")
    assert result.exit_code == 2
    assert result.output == ("vcompare: error: bad --gate 'red': no comparison operator; did you mean --gate "
                             "'RelativeEuclideanDistance>=0.97'? (quote it: the shell read > as a redirection and "
                             "created the empty file '=0.97' here: remove it)\n")


def test_unquoted_strict_bound_names_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "1e-3").write_bytes(b"")  # `--gate maxabs>1e-3` unquoted
    with pytest.raises(OptionError, match=r"did you mean --gate 'MaxAbsoluteError>1e-3'\? .* the empty file '1e-3'"):
        parse_gate("maxabs")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("cosCOSalmx01.9e-_ <>=!+") + ["Cosine", "MaxRelDiff", "all", "nan", "inf"]),
                max_size=12).map("".join)
       | st.text(max_size=24))
def test_any_gate_text_parses_or_is_an_option_error(text: str) -> None:
    try:
        bound = parse_gate(text)
    except OptionError as exc:
        assert str(exc).startswith(f"bad --gate {text!r}: ") and "\n" not in str(exc).replace(repr(text), "")
    else:
        assert bound.metric in gateable_metrics() and bound.value == bound.value


def test_explain_of_an_unknown_operator_exits_2_with_a_suggestion(tmp_path: Path) -> None:
    result = _demo("-o", tmp_path / "r.csv", "--explain", "fc2")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == ("vcompare: error: --explain fc2: no operator 'fc2' in the report; "
                                              "did you mean 'fc1'?")
    assert (tmp_path / "r.csv").exists()  # the comparison ran and was written; only the operator was bad
    single = _demo("-d", "fc2")
    assert single.exit_code == 2 and "no operator 'fc2' in the left dump; did you mean 'fc1'?" in single.output


def test_explain_error_is_the_worst_exit_of_a_failed_gate(tmp_path: Path) -> None:
    result = _demo("-o", tmp_path / "r.csv", "--gate", "cos>=0.9999", "--explain", "fc2")
    assert result.exit_code == 2 and "gate: FAILED (exit 1)" in result.output  # the verdict, then the bad option


def test_no_operator_file_named_like_a_number_is_not_taken_for_a_folder(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    os.mkdir(tmp_path / "=0.9")  # a folder is never what the shell made
    with pytest.raises(OptionError, match="may have been created here"):
        parse_gate("cos")
