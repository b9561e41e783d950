"""The suite's own plumbing (tests/conftest.py): a clone without ../shared skips the tests that
need it under one summary line (``SKIPPED [N] tests/conftest.py: ../shared not available ...``),
and a partial ../shared names the part that is missing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import conftest
import pytest
from conftest import ROOT, SHARED_ABSENT, shared_path


def test_an_absent_shared_skips_with_the_one_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "SHARED", tmp_path / "absent")
    with pytest.raises(pytest.skip.Exception) as info:
        shared_path("cases", "ascend_vs_ascend")
    assert info.value.msg == SHARED_ABSENT


def test_a_partial_shared_names_the_missing_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cases").mkdir()
    monkeypatch.setattr(conftest, "SHARED", tmp_path)
    assert shared_path("cases") == tmp_path / "cases"
    with pytest.raises(pytest.skip.Exception) as info:
        shared_path("cases", "ascend_vs_ascend")
    assert info.value.msg == f"{tmp_path / 'cases' / 'ascend_vs_ascend'} missing from ../shared: shared-case test skipped"


def test_without_shared_the_skips_fold_into_one_summary_line(tmp_path: Path) -> None:
    """Skips raised in a module-scoped fixture (test_shared_cases.py) and in test bodies (the
    msprobe mapping CLI test) alike: one SKIPPED line, counting every one of them."""
    env = {**os.environ, "VCOMPARE_SHARED": str(tmp_path / "absent")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                           "tests/test_shared_cases.py", "tests/compare/pairing/test_msprobe_mapping_cli.py"],
                          check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    closing = proc.stdout.strip().splitlines()[-1]
    skipped = re.search(r"(\d+) skipped", closing)
    assert skipped and int(skipped[1]) > 10 and "passed" in closing, proc.stdout[-3000:]
    summary = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert summary == [f"SKIPPED [{skipped[1]}] tests/conftest.py: {SHARED_ABSENT}"], proc.stdout[-3000:]
