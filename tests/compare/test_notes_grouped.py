"""The notes of a multi-part run (``--rank all --iteration all``) on the terminal: one line per
kind with the number of parts and the first few (``--verbose``: every note of every part), while
the JSON result keeps every note in full (issue 30, "Notes grouped"; docs/mindspore.md)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from compare.api import compare_request
from compare.cli import run
from compare.cli.output import grouped_note, note_lines
from compare.records import PartNote
from compare.request import CompareRequest
from compare.testing.synthetic_ranks import Perturbation, make_rank_tree

PARTS = "rank 0 iteration 0, rank 0 iteration 1, rank 0 iteration 2, ... ; --verbose lists all"


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """2 ranks x 3 iterations (6 parts) on each side; the right side's rank 1 perturbed."""
    root = tmp_path_factory.mktemp("grouped")
    left = make_rank_tree(root / "left", ranks=2, iterations=3, dp=2).root
    right = make_rank_tree(root / "right", ranks=2, iterations=3, dp=2,
                           perturb=Perturbation(rank=1, relative=1e-3)).root
    return {"left": left, "right": right}


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_note_kind_is_the_note_without_its_part() -> None:
    first = PartNote.of("rank 0 iteration 0", "[rank 0 iteration 0] left: using folder /d/rank_0/Net/0/0 (12 of 30)")
    other = PartNote.of("rank 1 iteration 2", "[rank 1 iteration 2] left: using folder /d/rank_1/Net/0/2 (13 of 30)")
    assert first.kind == other.kind == "left: using folder /d/rank_#/Net/#/# (# of #)"
    assert first.body == "left: using folder /d/rank_0/Net/0/0 (12 of 30)"
    assert PartNote.of("rank 0 iteration 0", "[rank 0 iteration 0] paired by name").kind != first.kind


def test_note_lines_group_by_kind_in_place_of_the_first() -> None:
    texts = [f"[rank 0 iteration {i}] left: using folder /d/rank_0/Net/0/{i} (rank 0, iteration {i})" for i in range(5)]
    paired = [f"[rank 0 iteration {i}] paired by operator scope name and tensor index" for i in range(2)]
    lonely = "[rank 0 iteration 4] not compared: the right side has no iteration 4"
    part_notes = [PartNote.of(f"rank 0 iteration {i}", t) for i, t in enumerate(texts)]
    part_notes += [PartNote.of(f"rank 0 iteration {i}", t) for i, t in enumerate(paired)]
    part_notes.append(PartNote.of("rank 0 iteration 4", lonely))
    notes = ["compared 5 (rank, iteration) part(s) in turn: ...", *texts[:2], *paired, *texts[2:], lonely,
             "warning: a run-wide note"]
    assert note_lines(notes, part_notes) == [
        "compared 5 (rank, iteration) part(s) in turn: ...",
        "left: using folder ... (rank 0, iteration ...) -- 5 parts (rank 0 iteration 0, rank 0 iteration 1, "
        "rank 0 iteration 2, ... ; --verbose lists all)",
        "paired by operator scope name and tensor index -- 2 parts (rank 0 iteration 0, rank 0 iteration 1)",
        lonely,  # a kind only one part has: as it is, with its part
        "warning: a run-wide note",
    ]
    assert note_lines(notes, part_notes, verbose=True) == notes
    assert note_lines(notes, []) == notes  # a single comparison: nothing to group


def test_grouped_note_counts_notes_when_a_part_has_several_of_a_kind() -> None:
    members = [PartNote.of("rank 0 iteration 0", "[rank 0 iteration 0] left: 2 file(s) not used"),
               PartNote.of("rank 0 iteration 0", "[rank 0 iteration 0] left: 3 file(s) not used"),
               PartNote.of("rank 0 iteration 1", "[rank 0 iteration 1] left: 3 file(s) not used")]
    assert grouped_note(members) == ("left: ... file(s) not used -- 3 notes in 2 part(s) (rank 0 iteration 0, "
                                     "rank 0 iteration 1)")


def test_rank_all_iteration_all_notes_grouped_json_keeps_all(trees: dict[str, Path], tmp_path: Path) -> None:
    js = tmp_path / "r.json"
    result = compare_request(CompareRequest(left=trees["left"], right=trees["right"], rank="all", iteration="all",
                                            json_out=js))
    network = result.network
    assert network is not None and len(network.part_reports) == 6
    assert [note.text for note in network.part_notes] == [n for n in result.notes if n.startswith("[rank ")]
    assert len(network.part_notes) == 18  # left, right and pairing notes of each of the 6 parts
    lines = note_lines(result.notes, network.part_notes, verbose=False)
    assert lines[0].startswith("compared 6 (rank, iteration) part(s) in turn: rank 0 iteration 0, ")
    assert lines[1:] == [
        f"left: using mindspore-npy dump folder ... (rank ..., graph 0, iteration ...) -- 6 parts ({PARTS})",
        f"right: using mindspore-npy dump folder ... (rank ..., graph 0, iteration ...) -- 6 parts ({PARTS})",
        f"paired by operator scope name and tensor index -- 6 parts ({PARTS})",
    ]
    assert note_lines(result.notes, network.part_notes, verbose=True) == result.notes
    result.write_json(js)
    assert json.loads(js.read_text())["notes"] == result.notes  # every note of every part, in full
    assert sum(1 for n in result.notes if "] left: using mindspore-npy dump folder " in n) == 6


def test_cli_prints_one_line_per_kind(trees: dict[str, Path], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "-l", trees["left"], "-r", trees["right"], "--rank", "all", "--iteration", "all",
                        "-o", tmp_path / "r.csv")
    assert code == 0, err
    assert f"vcompare: paired by operator scope name and tensor index -- 6 parts ({PARTS})\n" in err
    assert "[rank 1 iteration 2] left:" not in err
    assert sum(1 for line in err.splitlines() if "dump folder" in line) == 2


def test_cli_verbose_lists_every_note(trees: dict[str, Path], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "-l", trees["left"], "-r", trees["right"], "--rank", "all", "--iteration", "all",
                        "-o", tmp_path / "r.csv", "--verbose")
    assert code == 0, err
    assert "vcompare: [rank 1 iteration 2] paired by operator scope name and tensor index\n" in err
    assert "--verbose lists all" not in err


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                    reason="dask[distributed] is not installed: pip install 'vcompare[dask]'")
def test_a_cluster_run_says_where_its_parts_were_compared(trees: dict[str, Path], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "-l", trees["left"], "-r", trees["right"], "--rank", "all", "--iteration", "all",
                        "-o", tmp_path / "r.csv", "--dask-cluster", "local:2")
    assert code == 0, err
    assert "vcompare: compared 6 (rank, iteration) part(s) on 2 worker(s) of local:2: rank 0 iteration 0, " in err
    assert "in turn" not in err
    assert f"vcompare: paired by operator scope name and tensor index -- 6 parts ({PARTS})\n" in err
