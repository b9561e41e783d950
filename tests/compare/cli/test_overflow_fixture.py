"""``vcompare overflow`` on the project's own overflow fixture (fixtures/overflow, written by
scripts/make_overflow_fixtures.py): the summary text against its golden file, so the reference's
layout is checked without ../shared -- a missing linked dump, two old-layout structs with two
flagged blocks each (the link: the last flagged block), name order unlike time-stamp order,
float16 / float32 / int32 / uint8 statistics as numpy prints them. Rewrite the golden file with
``--update-golden`` (and review the diff)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.cli.overflow import overflow_app
from conftest import FIXTURES, ROOT

OVERFLOW = FIXTURES / "overflow"
GOLDEN = OVERFLOW / "expected_summary.txt"


def _script():  # scripts/ is not a package: the fixture's writer, loaded by path
    spec = importlib.util.spec_from_file_location("make_overflow_fixtures", ROOT / "scripts" / "make_overflow_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_summary_is_the_golden_text(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    result = CliRunner().invoke(overflow_app, ["-d", str(OVERFLOW / "dump"), "-o", str(tmp_path),
                                               "-n", str(_script().COUNT)])
    assert result.exit_code == 0, result.output
    (summary,) = [p for p in tmp_path.iterdir() if re.fullmatch(r"overflow_summary_[0-9]{14}\.txt", p.name)]
    text = summary.read_bytes()
    if request.config.getoption("--update-golden", default=False):
        GOLDEN.write_bytes(text)
    assert text == GOLDEN.read_bytes()
    assert "4 overflow record(s)" in result.stderr and "3 analysed" in result.stderr


def test_fixture_is_what_the_script_writes(tmp_path: Path) -> None:
    """The checked-in dump folder is the script's output, byte for byte (regenerate, do not edit)."""
    written = _script().make_dump(tmp_path / "dump")
    ours = sorted(p.relative_to(written) for p in written.rglob("*") if p.is_file())
    assert ours == sorted(p.relative_to(OVERFLOW / "dump") for p in (OVERFLOW / "dump").rglob("*") if p.is_file())
    for relative in ours:
        assert (written / relative).read_bytes() == (OVERFLOW / "dump" / relative).read_bytes(), relative
