"""A cluster run writes each part as it arrives (issue 18; compare.reports.spool): the spool
beside ``-o`` holds every finished part when the run stops before its report, and is removed once
the report is written; the report stays byte-identical to the in-turn run's."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.api import compare_network
from compare.cli import app
from compare.errors import OutputError
from compare.reports.spool import ARRIVALS, PartSpool
from compare.runs.outputs import OutputPlan, WriteOutcome
from compare.testing.synthetic_rank_trees import make_rank_trees

pytestmark = pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                                reason="dask[distributed] is not installed: pip install 'vcompare[dask]'")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """2 ranks x 3 iterations, rank 0 iteration 2 without a golden (a part not compared)."""
    return make_rank_trees(tmp_path_factory.mktemp("ranks"), ranks=2, iterations=3, faulty=(1, 1, 3),
                           unmatched=((0, 2),))


def _run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _arrivals(folder: Path) -> list[dict[str, str]]:
    with open(folder / ARRIVALS, newline="") as handle:
        return list(csv.DictReader(handle))


def test_the_spool_is_removed_once_the_report_is_written(ranks: dict[str, Path], tmp_path: Path) -> None:
    common = ("-l", ranks["left"], "-r", ranks["right"], "--rank", "all", "--iteration", "all")
    here = _run(*common, "-o", tmp_path / "here.txt")
    there = _run(*common, "-o", tmp_path / "there.txt", "--dask-cluster", "local:2", "--verdicts")
    assert here.exit_code == there.exit_code == 0, there.output
    assert f"each finished part is written to {tmp_path / 'there.txt.parts'}" in there.output
    assert not (tmp_path / "there.txt.parts").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here.txt", "there.txt"]
    assert "Verdict" in (tmp_path / "there.txt").read_text().splitlines()[0]


def test_a_run_stopped_before_its_report_keeps_every_finished_part(ranks: dict[str, Path], tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    common = ("-l", ranks["left"], "-r", ranks["right"], "--rank", "all", "--iteration", "all")
    assert _run(*common, "-o", tmp_path / "here.csv").exit_code == 0

    def broken_final_step(self: OutputPlan, result: object, options: object) -> WriteOutcome:
        raise KeyboardInterrupt  # the client stopped after the parts came in, before the report

    monkeypatch.setattr(OutputPlan, "write", broken_final_step)
    there = _run(*common, "-o", tmp_path / "there.csv", "--dask-cluster", "local:2")
    spool = tmp_path / "there.csv.parts"
    assert there.exit_code != 0 and not (tmp_path / "there.csv").exists()
    assert f"the 6 finished part(s) are kept in {spool}" in there.output
    arrivals = _arrivals(spool)
    assert sorted(int(a["part"]) for a in arrivals) == list(range(6))
    assert [a["status"] for a in sorted(arrivals, key=lambda a: int(a["part"]))] == (
        ["compared", "compared", "not compared"] + ["compared"] * 3)
    # the part files, in plan order, are the rows of the in-turn report, byte for byte
    report = (tmp_path / "here.csv").read_text()
    header, body = report.split("\n", 1)
    files = [spool / a["file"] for a in sorted(arrivals, key=lambda a: int(a["part"])) if a["file"]]
    assert len(files) == 6 and all(f.read_text().split("\n", 1)[0] == header for f in files)
    assert "".join(f.read_text().split("\n", 1)[1] for f in files) == body


def test_an_unwritable_report_keeps_the_spool(ranks: dict[str, Path], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(self: OutputPlan, result: object, options: object) -> WriteOutcome:
        return WriteOutcome((), (OutputError(self.targets[0].path, "No space left on device"),))

    monkeypatch.setattr(OutputPlan, "write", failing)
    there = _run("-l", ranks["left"], "-r", ranks["right"], "--rank", "all", "--iteration", "all",
                 "-o", tmp_path / "r.csv", "--dask-cluster", "local:2")
    assert there.exit_code == 2 and "No space left on device" in there.output
    assert "finished part(s) are kept in" in there.output and len(_arrivals(tmp_path / "r.csv.parts")) == 6


def test_the_api_spools_each_part(ranks: dict[str, Path], tmp_path: Path) -> None:
    spool = PartSpool(tmp_path / "api.csv")
    result = compare_network(ranks["left"], ranks["right"], rank="all", iteration="all", cluster="local:2",
                             spool=spool)
    assert sorted(spool.written) == list(range(6)) and spool.problem is None
    rows = sum(int(a["rows"]) for a in _arrivals(spool.folder))
    assert rows == len(result.rows)
    spool.remove()
    assert not spool.folder.exists()
