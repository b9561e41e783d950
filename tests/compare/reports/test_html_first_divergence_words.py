"""The HTML report's first-divergence block says what --explain and the terminal say: an infinite
amplification (exact inputs) in words, and the -f trap's uncertainty in its heading."""

from __future__ import annotations

from pathlib import Path

import pytest

from compare.cli import run
from compare.testing.synthetic_ranks import Perturbation, make_rank_tree

pytest.importorskip("matplotlib", reason="matplotlib is part of the test extra: pip install -e '.[test]'")

DEMO = Path(__file__).resolve().parents[3] / "fixtures" / "demo"


def _html(tmp_path: Path, *extra: str) -> str:
    code = run(["-l", str(DEMO / "npu"), "-r", str(DEMO / "golden"), *extra, "-o", str(tmp_path / "r.csv"),
                "--html", str(tmp_path / "r.html"), "--no-progress"])
    assert code == 0
    return (tmp_path / "r.html").read_text()


def test_without_fusion_rule_the_heading_says_uncertain(tmp_path: Path) -> None:
    page = _html(tmp_path)
    assert "<h3>First divergence (uncertain: paired by name without -f; run with -f MODEL.json): " in page
    assert "amplification inf" not in page


def test_with_fusion_rule_no_uncertainty_and_no_inf(tmp_path: Path) -> None:
    page = _html(tmp_path, "-f", str(DEMO / "model.json"))
    assert "<h3>First divergence: " in page and "uncertain" not in page
    assert "amplification inf" not in page


def test_exact_inputs_are_said_in_words_not_inf(tmp_path: Path) -> None:
    """Rank 1's all-reduced gradient x (1 + 1e-3) on the right: its inputs are exact, so the
    first divergence's amplification is infinite (the JSON's "inf")."""
    left = make_rank_tree(tmp_path / "left", ranks=2, iterations=1, dp=2).root
    right = make_rank_tree(tmp_path / "right", ranks=2, iterations=1, dp=2,
                           perturb=Perturbation(rank=1, relative=1e-3)).root
    code = run(["-l", str(left), "-r", str(right), "--rank", "1", "--iteration", "0", "-o", str(tmp_path / "r.csv"),
                "--html", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json"), "--no-progress"])
    assert code == 0
    page = (tmp_path / "r.html").read_text()
    assert "amplification — inputs exact: the error starts here</p>" in page
    assert "amplification inf" not in page
    assert '"amplification": "inf"' in (tmp_path / "r.json").read_text()  # the JSON keeps the number
