"""The localisation on the command line: the first divergence printed, --verdicts, --explain,
--html (written, refused without matplotlib before anything is compared), and the options refused
outside network mode."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from compare.cli import app

DEMO = FIXTURES / "demo"


def _run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _demo(*args: object):
    return _run("-l", DEMO / "npu", "-r", DEMO / "golden", "-f", DEMO / "model.json", *args)


def test_html_report_is_written_and_names_the_first_divergence(tmp_path: Path) -> None:
    result = _demo("-o", tmp_path / "r.csv", "--html", tmp_path / "report.html")
    assert result.exit_code == 0, result.output
    assert f"html: {tmp_path / 'report.html'}" in result.output
    page = (tmp_path / "report.html").read_text()
    assert "First divergence" in page and "fc1" in page and "<svg" in page
    assert "http://" not in page.replace("http://www.w3.org", "")  # nothing fetched at view time


def test_html_without_matplotlib_is_refused_before_comparing(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = _demo("-o", tmp_path / "r.csv", "--html", tmp_path / "report.html")
    assert result.exit_code == 2
    assert "pip install 'vcompare[html]'" in result.output
    assert not (tmp_path / "r.csv").exists() and not (tmp_path / "report.html").exists()


def test_first_divergence_verdict_column_and_explain(tmp_path: Path) -> None:
    result = _demo("-o", tmp_path / "r.txt", "--verdicts", "--explain", "prob")
    assert result.exit_code == 0, result.output
    assert "first divergence: fc1 [FullyConnection]" in result.output
    assert "explain prob: 2 operator(s) back to the origin" in result.output
    header, *lines = (tmp_path / "r.txt").read_text().splitlines()
    assert header.split()[-2:] == ["Verdict", "FailReason"]
    unknown = _demo("-o", tmp_path / "r2.csv", "--explain", "no_such_op")
    assert unknown.exit_code == 2  # the run is reported, then the bad operator (tests/compare/cli/test_cli_errors.py)
    assert "error: --explain no_such_op: no operator 'no_such_op' in the report; operators are e.g." in unknown.output


def test_default_table_is_unchanged_without_verdicts(tmp_path: Path) -> None:
    assert _demo("-o", tmp_path / "a.csv").exit_code == 0
    assert "Verdict" not in (tmp_path / "a.csv").read_text().splitlines()[0]


@pytest.mark.parametrize("flag", [["--verdicts"], ["--explain", "fc1"], ["--html", "x.html"]])
def test_network_only_options_are_refused_in_single_op_mode(tmp_path: Path, flag: list[str]) -> None:
    result = _demo("-o", tmp_path / "detail", "-d", "fc1", *flag)
    assert result.exit_code == 2 and "describe a network comparison" in result.output


def test_control_characters_from_inputs_are_shown_not_obeyed() -> None:
    """A name holding ESC / CR reaches stderr as visible escapes (no terminal control)."""
    from compare.cli.echo import visible

    assert visible("op\x1b[2J\rname\tx\u2028") == "op\\x1b[2J\\rname\\tx\\u2028"
    assert visible("plain name\nnext line") == "plain name\nnext line"
