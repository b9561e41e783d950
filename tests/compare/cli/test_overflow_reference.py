"""``vcompare overflow`` against the reference tool's own output on the four overflow cases of
``../shared/cases/overflow_reference`` (new layout, old layout with two status blocks, three
records in a nested tree with ``-n 2``, a record whose operator dump is missing): the summary
text, line for line, and the ``.npy`` copies of the linked dumps.

The reference names its summary ``overflow_summary_{YYYYmmddHHMMSS}.txt`` after the local time
of its run, so the names differ; the test finds each side's one summary by that pattern and
compares the contents. Skipped with a clear message when ../shared is absent."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from compare.cli.overflow import overflow_app
from conftest import shared_path

CASES = ("new_layout_conv2d", "old_layout_dha_aicore", "three_records_top2", "missing_linked_dump")
#: The reference's summary name: the local time of the run, to the second.
SUMMARY_NAME = re.compile(r"overflow_summary_[0-9]{14}\.txt")


def _summary(folder: Path) -> Path:
    (found,) = [p for p in folder.iterdir() if SUMMARY_NAME.fullmatch(p.name)]
    return found


def _run(case: Path, out: Path) -> None:
    top_n = json.loads((case / "case.json").read_text())["top_n"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # inf + -inf in a mean: no numpy warning on the terminal
        result = CliRunner().invoke(overflow_app, ["-d", str(case / "input"), "-out", str(out), "-n", str(top_n)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("name", CASES)
def test_summary_text_is_the_reference_text(name: str, tmp_path: Path) -> None:
    case = shared_path("cases", "overflow_reference", name)
    _run(case, tmp_path)
    expected = _summary(case / "reference_out").read_text().splitlines(keepends=True)
    assert _summary(tmp_path).read_text().splitlines(keepends=True) == expected


@pytest.mark.parametrize("name", CASES)
def test_tensor_copies_are_the_reference_copies(name: str, tmp_path: Path) -> None:
    case = shared_path("cases", "overflow_reference", name)
    _run(case, tmp_path)
    reference = sorted(p.name for p in (case / "reference_out").glob("*.npy"))
    assert sorted(p.name for p in tmp_path.glob("*.npy")) == reference
    for file_name in reference:
        ours, theirs = np.load(tmp_path / file_name), np.load(case / "reference_out" / file_name)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        assert ours.tobytes() == theirs.tobytes()
