"""``--help`` of every command (issue 30): the options in panels, each option in exactly one; the
examples verbatim at any terminal width; the usage and a panel list the subcommands; a bare
command prints its help on stderr and exits 2; ``--quiet`` / ``--verbose`` say what they do;
rich is loaded for a help page only; ``scripts/make_demo.py --help`` prints its usage.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from conftest import ROOT
from typer.core import TyperOption
from typer.testing import CliRunner

from compare.cli import app, run
from compare.cli.consistency import consistency_app
from compare.cli.file_compare import file_compare_app
from compare.cli.gate import gate_app, policy_app
from compare.cli.main import SUBCOMMANDS
from compare.cli.network import PANELS, SUBCOMMAND_ROWS
from compare.cli.overflow import overflow_app

#: Each typer app with examples, and the command line that asks for its help.
HELPS = {"": app, "gate": gate_app, "policy": policy_app, "consistency": consistency_app,
         "file_compare": file_compare_app, "overflow": overflow_app}


def _help(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``vcompare ARGS --help`` through :func:`compare.cli.run`: exit 0, the page on stdout only."""
    code = run([*args, "--help"])
    out, err = capsys.readouterr()
    assert code == 0 and err == "", err
    return out


def _options(typer_app: typer.Typer) -> list[TyperOption]:
    """The command's own options (not ``-h`` / ``--help``)."""
    return [param for param in typer.main.get_command(typer_app).params if isinstance(param, TyperOption)]


def test_every_main_option_is_in_exactly_one_panel(capsys: pytest.CaptureFixture[str]) -> None:
    options = _options(app)
    assert len(options) > 45
    assert {option.rich_help_panel for option in options} == set(PANELS)
    out = _help(capsys)
    titles = re.findall(r"^╭─ (\w[^─]*?) ─", out, re.MULTILINE)
    assert titles == [*PANELS, "Subcommands (vcompare SUBCOMMAND --help)"]
    command = typer.main.get_command(app)
    ctx = command.make_context("vcompare", ["-l", "a", "-r", "b"])
    for option in options:  # listed once, in its panel
        record = option.get_help_record(ctx)
        assert record is not None
        first = re.split(r"[ ,]", record[0])[0]
        rows = [m.start() for m in re.finditer(rf"^│ {re.escape(first)}[ ,]", out, re.MULTILINE)]
        assert len(rows) == 1, option.opts
        panel = out.rfind("╭─ ", 0, rows[0])
        assert out.startswith(f"╭─ {option.rich_help_panel} ─", panel), option.opts
    help_panel = out[out.index("╭─ Help"):out.index("╭─ Subcommands")]
    assert "-h, --help" in help_panel and "--version" in help_panel
    assert "\x1b[" not in out  # no terminal: click strips the styles


def test_consistency_help_has_panels(capsys: pytest.CaptureFixture[str]) -> None:
    out = _help(capsys, "consistency")
    assert re.findall(r"^╭─ (\w+) ─", out, re.MULTILINE) == ["Inputs", "Check", "Outputs"]
    assert {option.rich_help_panel for option in _options(consistency_app)} == {"Inputs", "Check", "Outputs"}


@pytest.mark.parametrize("columns", ["60", "80", "200"])
@pytest.mark.parametrize("command", sorted(HELPS))
def test_examples_verbatim_at_any_width(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                        command: str, columns: str) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    out = _help(capsys, *([command] if command else []))
    lines = out.splitlines()
    epilog = typer.main.get_command(HELPS[command]).epilog
    examples = [line for line in epilog.splitlines() if line.strip()]
    assert len(examples) >= 3
    for line in examples:
        assert line in lines, (command, columns, line)
    assert len(next(line for line in lines if line.startswith("╭─"))) == int(columns)  # panels fit the terminal


def test_usage_and_a_panel_list_the_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    out = _help(capsys)
    assert out.splitlines()[:2] == [
        "Usage: vcompare [OPTIONS]",
        "       vcompare {compare,gate,policy,consistency,file_compare,overflow} ..."]
    assert {row.name for row in SUBCOMMAND_ROWS} == set(SUBCOMMANDS)
    for row in SUBCOMMAND_ROWS:
        assert re.search(rf"^│ {row.name} +{re.escape(row.text[:20])}", out, re.MULTILINE), row.name
    assert out.count("Subcommands (vcompare SUBCOMMAND --help)") == 1


@pytest.mark.parametrize("command, usage", [
    ([], "Usage: vcompare [OPTIONS]"),
    (["gate"], "Usage: vcompare gate [OPTIONS] {RESULT}"),
    (["consistency"], "Usage: vcompare consistency [OPTIONS]"),
    (["file_compare"], "Usage: vcompare file_compare [OPTIONS]"),
    (["overflow"], "Usage: vcompare overflow [OPTIONS]"),
    (["compare"], "Usage: vcompare compare [msaccucmp's or msprobe's options]"),
])
def test_a_bare_command_prints_its_help_and_exits_2(capsys: pytest.CaptureFixture[str], command: list[str],
                                                    usage: str) -> None:
    code = run(command)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert usage in err and "Examples:" in err
    assert "Missing" not in err and "Traceback" not in err


def test_a_usage_error_stays_one_plain_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["-l", "a", "-r", "b", "--no-such-option"])
    _, err = capsys.readouterr()
    assert code == 2 and "Error: No such option: --no-such-option" in err and "╭" not in err


def test_quiet_and_verbose_help(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out = _help(capsys)
    assert ("Print only the paths written, the summary in one line and the first divergence (if any): no notes, "
            "no failing rows, no worst tensors, no top-N tables.") in out
    assert "Every note in full: notes of each part listed one by one, not grouped by kind." in out
    outputs = out[out.index("╭─ Outputs"):out.index("╭─ Gate")]
    assert "--quiet" in outputs and "--verbose" in outputs


def test_verbose_reaches_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    from compare.cli import modes

    seen = []

    def record(request: object) -> int:
        seen.append(request)
        return 0

    monkeypatch.setattr(modes, "run_compare", record)
    runner = CliRunner()
    assert runner.invoke(app, ["-l", "a", "-r", "b", "--verbose"]).exit_code == 0
    assert runner.invoke(app, ["-l", "a", "-r", "b"]).exit_code == 0
    assert [request.verbose for request in seen] == [True, False]


def test_rich_is_loaded_for_the_help_page_only() -> None:
    probe = ("import sys\n"
             "from compare.cli.main import run\n"
             "assert run(['--version']) == 0 and 'rich' not in sys.modules\n"
             "assert run(['-l', 'missing_a', '-r', 'missing_b']) == 2 and 'rich' not in sys.modules\n"
             "assert run(['--help']) == 0 and 'rich' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_make_demo_help_writes_nothing(tmp_path: Path) -> None:
    script = ROOT / "scripts" / "make_demo.py"
    done = subprocess.run([sys.executable, str(script), "--help"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and "usage: make_demo.py [-h] [OUT_DIR]" in done.stdout
    assert "(default: fixtures/demo)" in done.stdout
    assert list(tmp_path.iterdir()) == []
    done = subprocess.run([sys.executable, str(script), "--bogus"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2 and "unrecognized arguments: --bogus" in done.stderr
    assert list(tmp_path.iterdir()) == [] and "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, str(script), "demo"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and (tmp_path / "demo" / "model.json").is_file()


def test_help_on_a_stream_that_holds_ascii_only() -> None:
    """A terminal whose encoding has no box-drawing characters gets ASCII panels, not a traceback."""
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "COLUMNS": "80"}
    done = subprocess.run([sys.executable, "-m", "compare.cli", "--help"], cwd=ROOT, env=env, capture_output=True,
                          text=True, encoding="ascii")
    assert done.returncode == 0 and done.stderr == ""
    assert "+- Inputs " in done.stdout and "Examples:" in done.stdout
