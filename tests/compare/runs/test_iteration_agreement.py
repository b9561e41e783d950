"""Iterations that do not line up (a single comparison without ``--iteration``).

When both sides have iterations and their newest differ, the newest iteration both have is
compared on both sides, and a note says which and what else each side has; when they share
none, each side's newest is compared (as before) with a note, and a pairing that then finds no
operator says so in its error, naming ``--iteration`` and each side's iterations. Checked on
synthetic MindSpore sync trees, msprobe ``step{N}`` trees, and the real MindSpore GPU dump of
``../shared/real/mindspore`` (left iterations 2 and 3, right only 2). ``--iteration`` given and
equal newest iterations are unchanged; ``--rank all`` (compared each in turn) applies the rule to
each rank.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import shared_path
from typer.testing import CliRunner

from compare.cli import app
from compare.errors import PairingError
from compare.runs.loading import load_and_pair
from compare.testing.synthetic_mindspore import make_trees
from compare.testing.synthetic_msprobe import write_msprobe_dump

AGREED = "iteration {it} chosen: the newest iteration both sides have (left has {left}; right has {right}); " \
         "choose another with --iteration"


def _run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def sync(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The synthetic r1.x sync tree (iterations 0 and 1) and copies of it: ``only0`` (iteration 0
    only), ``only5`` (its iteration 1 renamed 5), ``other5`` (iteration 5 holding another kernel)."""
    base = tmp_path_factory.mktemp("iterations")
    left = make_trees(base / "trees")["sync"]
    device = Path("Net") / "device_0"
    only0 = base / "only0"
    shutil.copytree(left, only0)
    shutil.rmtree(only0 / device / "iteration_1")
    only5 = base / "only5"
    shutil.copytree(left, only5)
    shutil.rmtree(only5 / device / "iteration_0")
    (only5 / device / "iteration_1").rename(only5 / device / "iteration_5")
    other5 = base / "other5"
    leaf = other5 / device / "iteration_5"
    leaf.mkdir(parents=True)
    (leaf / "Default--other--Abs-op9_output_0_shape_4_Float32_DefaultFormat.bin").write_bytes(bytes(16))
    return {"left": left, "only0": only0, "only5": only5, "other5": other5}


def test_newest_shared_iteration_is_compared(sync: dict[str, Path]) -> None:
    left_run, right_run, _, _, pairing = load_and_pair(sync["left"], sync["only0"])
    assert left_run.coords["iteration"] == 0 and right_run.coords["iteration"] == 0
    assert AGREED.format(it=0, left="0, 1", right="0") in left_run.notes
    assert pairing.pairs


def test_the_other_way_round(sync: dict[str, Path]) -> None:
    left_run, right_run, _, _, _ = load_and_pair(sync["only0"], sync["left"])
    assert left_run.coords["iteration"] == 0 and right_run.coords["iteration"] == 0
    assert AGREED.format(it=0, left="0", right="0, 1") in left_run.notes


def test_iteration_given_is_kept(sync: dict[str, Path]) -> None:
    left_run, right_run, _, _, _ = load_and_pair(sync["left"], sync["only0"], iteration=0)
    assert left_run.coords["iteration"] == right_run.coords["iteration"] == 0
    assert not [n for n in left_run.notes + right_run.notes if "newest iteration both sides have" in n]


def test_same_newest_is_unchanged(sync: dict[str, Path]) -> None:
    left_run, right_run, _, _, _ = load_and_pair(sync["left"], sync["left"])
    assert left_run.coords["iteration"] == right_run.coords["iteration"] == 1
    assert not [n for n in left_run.notes + right_run.notes if "both sides" in n]
    assert "rank 0 and iteration 1 chosen to match the left side" in right_run.notes


def test_no_shared_iteration_compares_each_newest_with_a_note(sync: dict[str, Path]) -> None:
    left_run, right_run, _, _, pairing = load_and_pair(sync["left"], sync["only5"])
    assert left_run.coords["iteration"] == 1 and right_run.coords["iteration"] == 5
    assert ("the two sides share no iteration (left has 0, 1; right has 5): left iteration 1 is compared with "
            "right iteration 5") in left_run.notes
    assert pairing.pairs


def test_no_shared_iteration_and_no_pair_names_iteration(sync: dict[str, Path]) -> None:
    with pytest.raises(PairingError) as caught:
        load_and_pair(sync["left"], sync["other5"])
    text = str(caught.value)
    assert text.startswith("no operator of ")
    assert text.endswith("; the two sides share no iteration (left has 0, 1; right has 5): left iteration 1 was "
                         "compared with right iteration 5 -- --iteration N applies to both sides, so to compare "
                         "other iterations give each side's iteration folder as -l / -r")


def test_cli_exit_and_notes(sync: dict[str, Path], tmp_path: Path) -> None:
    result = _run("-l", sync["left"], "-r", sync["only0"], "-o", tmp_path / "r.csv", "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    note = "left: " + AGREED.format(it=0, left="0, 1", right="0")
    assert note in result.output
    assert note in json.loads((tmp_path / "r.json").read_text())["notes"]


def test_rank_all_is_unchanged(sync: dict[str, Path], tmp_path: Path) -> None:
    """Compared each in turn, the same newest iteration on both sides: the parts are chosen as
    before (each side's newest per rank), with no iteration note."""
    result = _run("-l", sync["left"], "-r", sync["left"], "--rank", "all", "-o", tmp_path / "r.csv",
                  "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "r.json").read_text())
    assert not [n for n in document["notes"] if "newest iteration both sides have" in n], result.output
    assert {row["iteration"] for row in document["rows"]} == {1}


# --------------------------------------------------------------------------------------------
# msprobe step{N} trees: the same --iteration selection
# --------------------------------------------------------------------------------------------

def test_msprobe_steps(tmp_path: Path) -> None:
    left = write_msprobe_dump(tmp_path / "left", steps=(0, 1), per_part=True).root
    right = write_msprobe_dump(tmp_path / "right", steps=(0,), per_part=True, noise=1e-3, seed=3).root
    left_run, right_run, _, _, pairing = load_and_pair(left, right)
    assert left_run.coords["iteration"] == right_run.coords["iteration"] == 0
    assert AGREED.format(it=0, left="0, 1", right="0") in left_run.notes
    assert pairing.pairs


def test_msprobe_same_steps_unchanged(tmp_path: Path) -> None:
    left = write_msprobe_dump(tmp_path / "left", steps=(0, 1)).root
    left_run, right_run, _, _, _ = load_and_pair(left, left)
    assert left_run.coords["iteration"] == right_run.coords["iteration"] == 1
    assert not [n for n in left_run.notes if "both sides" in n]


# --------------------------------------------------------------------------------------------
# the real MindSpore GPU dump
# --------------------------------------------------------------------------------------------

def test_real_gpu_dump_default_run(tmp_path: Path) -> None:
    dumps = shared_path("real", "mindspore", "tests", "ut", "data", "dump", "gpu_dumps")
    result = _run("-l", dumps / "sync_trans_false", "-r", dumps / "sync_trans_true", "-o", tmp_path / "r.csv",
                  "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    note = "left: " + AGREED.format(it=2, left="2, 3", right="2")
    assert note in result.output
    document = json.loads((tmp_path / "r.json").read_text())
    assert note in document["notes"]
    assert {row["iteration"] for row in document["rows"]} <= {2, None}
    assert document["rows"]


def test_rank_all_takes_the_iteration_both_sides_have(sync: dict[str, Path], tmp_path: Path) -> None:
    """Compared each in turn without ``--iteration``: a rank whose newest iteration the right side
    lacks is compared at the newest iteration both sides have, with a note (before: the part was
    not compared, "--iteration 1 selects nothing", exit 2)."""
    result = _run("-l", sync["left"], "-r", sync["only0"], "--rank", "all", "-o", tmp_path / "r.csv",
                  "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "r.json").read_text())
    assert {row["iteration"] for row in document["rows"]} == {0}
    assert [n for n in document["notes"] if "iteration 0 chosen: the newest iteration both sides have (left has 0, "
            "1; right has 0)" in n], document["notes"]


def test_rank_all_with_no_shared_iteration_is_a_part_not_compared(sync: dict[str, Path], tmp_path: Path) -> None:
    result = _run("-l", sync["left"], "-r", sync["other5"], "--rank", "all", "-o", tmp_path / "r.csv")
    assert result.exit_code != 0 and "Traceback" not in result.output
