"""What the runs, the consistency check and the localisation ask of a dump family go through the
reader registry (:mod:`compare.loaders.reader`, :mod:`compare.loaders.parts`): a new family's
reader joins every one of them without a line in ``runs/``, ``consistency/`` or ``diverge/``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from compare.consistency.groups import parse_groups
from compare.consistency.plan import plan_consistency
from compare.diverge.records import GraphSource
from compare.errors import OptionError
from compare.loaders import (
    READERS,
    OpenRequest,
    RecordedGraph,
    TreeReader,
    is_data_file_name,
    recorded_graph,
)
from compare.loaders.msprobe import scan_msprobe
from compare.loaders.parts import (
    aligned_candidates,
    model_folders,
    part_trees_text,
    selected_part,
)
from compare.loaders.selection import Candidate, Selection
from compare.records import DumpLayout, Run, RunKind
from compare.runs.each import plan_each, selected_folder
from compare.testing.synthetic_msprobe import write_msprobe_dump

#: The text the compare-each-in-turn error named the tree kinds with before the registry built it.
BUILT_IN_PART_TREES = ("MindSpore rank_N / device_N / graph / iteration folders, a TF-NPU / GE tree, or an msprobe "
                       "step{N}/rank{R} tree")


class FakeTreeReader(TreeReader):
    """A third family: ``part{N}/`` folders each holding ``*.fake`` files (one part per folder, rank N)."""

    name = "fake"
    kinds = (RunKind.NUMPY,)
    part_trees = ("a fake part{N} tree",)
    replica_trees = "fake (part{N} folders)"

    def explain(self, folder: Path) -> str:
        return "no part{N} folder"

    def open(self, folder: Path, request: OpenRequest) -> Run:
        return Run(root=folder, path=folder, kind=RunKind.NUMPY)

    def claim_tree(self, path: str | os.PathLike, request: OpenRequest,
                   problems: list[tuple[Path, str]]) -> list[Candidate] | None:
        root = Path(path)
        found = sorted(root.glob("part*")) if root.is_dir() else []
        return [Candidate(path=p, layout=DumpLayout.PLAIN, coords={"rank": int(p.name[4:])}, kind="fake")
                for p in found] or None

    def open_tree(self, path: str | os.PathLike, candidates: list[Candidate], request: OpenRequest) -> Run:
        return self.open(candidates[0].path, request)

    def owns(self, candidate: Candidate) -> bool:
        return candidate.kind == "fake"

    def select_one(self, path: str | os.PathLike, candidates: list[Candidate], selection: Selection) -> Candidate | None:
        return next((c for c in candidates if c.get("rank") == selection.rank), candidates[0])

    def select_parts(self, candidates: list[Candidate], selection: Selection, *, where: str,
                     notes: list[str]) -> list[Candidate]:
        return candidates

    def scan_part(self, candidate: Candidate, *, root: Path, version: int | None = None,
                  keep_raw_names: bool = False) -> Run:
        return Run(root=root, path=candidate.path, kind=RunKind.NUMPY, coords=dict(candidate.coords))

    def load_part(self, path: str | os.PathLike, candidates: list[Candidate], selection: Selection, *,
                  version: int | None = None, keep_raw_names: bool = False) -> Run:
        return self.scan_part(self.select_one(path, candidates, selection) or candidates[0], root=Path(path))

    def part_op_names(self, candidate: Candidate) -> list[str]:
        return sorted(p.stem for p in candidate.path.glob("*.fake"))

    def model_folders(self, path: str | os.PathLike, selection: Selection) -> dict[str, Candidate]:
        candidates = self.claim_tree(path, OpenRequest(root=Path(path), selection=selection), []) or []
        return {c.path.name: c for c in candidates} if len(candidates) > 1 else {}

    def is_data_file_name(self, name: str) -> bool:
        return name.endswith(".fake")

    def graph(self, run: Run, ops, notes: list[str]) -> RecordedGraph | None:
        return None


@pytest.fixture
def fake_tree(tmp_path: Path, monkeypatch) -> Path:
    """A tree of the fake family (two parts), the fake reader registered first."""
    monkeypatch.setattr("compare.loaders.READERS", [FakeTreeReader(), *READERS])
    for rank in (0, 1):
        (tmp_path / f"part{rank}").mkdir()
        (tmp_path / f"part{rank}" / "conv.fake").write_bytes(b"")
    return tmp_path


def test_the_tree_kinds_of_a_message_are_the_readers(monkeypatch) -> None:
    assert part_trees_text() == BUILT_IN_PART_TREES
    monkeypatch.setattr("compare.loaders.READERS", [FakeTreeReader(), *READERS])
    assert part_trees_text() == ("MindSpore rank_N / device_N / graph / iteration folders, a TF-NPU / GE tree, "
                                 "a fake part{N} tree, or an msprobe step{N}/rank{R} tree")


def test_the_in_turn_error_names_the_readers_trees(tmp_path: Path) -> None:
    select = {"rank": "all", "iteration": None, "graph": None, "model_name": None, "ge_graph": None}
    with pytest.raises(OptionError) as caught:
        plan_each(tmp_path, tmp_path, select, None)
    assert str(caught.value) == (f"--rank / --graph / --iteration with several values: {tmp_path} is not a dump tree "
                                 f"with ranks or iterations ({BUILT_IN_PART_TREES})")


def test_a_new_tree_family_answers_the_runs(fake_tree: Path) -> None:
    chosen = selected_part(fake_tree, Selection(rank=1))
    assert chosen is not None and chosen.path == fake_tree / "part1"
    assert selected_folder(fake_tree, rank=1) == fake_tree / "part1"
    assert sorted(model_folders(fake_tree, Selection())) == ["part0", "part1"]
    assert aligned_candidates(fake_tree, Selection()) is None  # the fake reader keeps its own defaults
    assert is_data_file_name("x.fake") and not is_data_file_name("x.txt")


def test_a_new_tree_family_joins_the_consistency_check(fake_tree: Path, tmp_path_factory) -> None:
    plan = plan_consistency(fake_tree, parse_groups([[0, 1]]))
    assert [sorted(part.leaves) for part in plan.parts] == [[0, 1]]
    with pytest.raises(OptionError) as caught:
        plan_consistency(tmp_path_factory.mktemp("empty"), parse_groups([[0, 1]]))
    assert str(caught.value).endswith("the consistency check reads fake (part{N} folders), MindSpore (rank_N / "
                                      "device_N folders) and TF-NPU / GE ({time}/{device}/...) dump trees")


def test_the_built_in_consistency_message_is_unchanged(tmp_path: Path) -> None:
    with pytest.raises(OptionError) as caught:
        plan_consistency(tmp_path, parse_groups([[0, 1]]))
    assert str(caught.value) == (f"{tmp_path} is not a dump tree with ranks: the consistency check reads MindSpore "
                                 "(rank_N / device_N folders) and TF-NPU / GE ({time}/{device}/...) dump trees")


def test_the_layout_says_how_rows_are_graded() -> None:
    assert [layout for layout in DumpLayout if layout.graded] == [DumpLayout.MSPROBE]


def test_the_reader_gives_the_recorded_graph(tmp_path: Path) -> None:
    dump = write_msprobe_dump(tmp_path / "mp")
    folder = dump.folders[(0, 0)]
    run = scan_msprobe(folder)
    notes: list[str] = []
    found = recorded_graph(run, list(run.ops), notes)
    assert found is not None and found.graph.source is GraphSource.MSPROBE_CALLS and notes == []
    (folder / "dump.json").write_text("not json")
    assert recorded_graph(run, list(run.ops), notes) is None
    assert len(notes) == 1 and notes[0].startswith("msprobe call graph not used: ")
    assert recorded_graph(Run(root=tmp_path, path=tmp_path, kind=RunKind.NUMPY), [], notes) is None
