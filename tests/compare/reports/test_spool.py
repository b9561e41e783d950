"""The spool of a cluster run (compare.reports.spool): each arriving part on disk at once, cells
as the final table's, the arrival order recorded, removed whole, never stopping the run."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compare.records import MetricRow, PairStatus, PartStatus
from compare.reports.cells import parse_float_format
from compare.reports.network import Layout, TableFormat, render_csv, render_txt
from compare.reports.spool import ARRIVALS, ARRIVALS_HEADER, PartSpool, SpooledPart

METRICS = ["CosineSimilarity", "MaxAbsoluteError"]


def _rows(part: int, count: int) -> list[MetricRow]:
    return [MetricRow(i, "MatMul", f"op{part}_{i}", f"op{part}_{i}", f"op{part}_{i}:output:0",
                      metrics={"CosineSimilarity": 1.0 - part * 1e-3 - i * 1e-7, "MaxAbsoluteError": i / 3},
                      rank=part // 2, iteration=part % 2) for i in range(count)]


def _part(index: int, count: int, status: PartStatus = PartStatus.COMPARED) -> SpooledPart:
    return SpooledPart(index, index // 2, None, index % 2, status, rows=_rows(index, count), metrics=METRICS,
                       reason=None if count else "nothing pairs")


def _body(text: str) -> str:
    return text.split("\n", 1)[1]


@settings(max_examples=25, deadline=None)
@given(counts=st.lists(st.integers(0, 4), min_size=1, max_size=6), data=st.data())
def test_parts_in_plan_order_are_the_final_table(tmp_path_factory: pytest.TempPathFactory, counts: list[int],
                                                 data: st.DataObject) -> None:
    """Whatever order the parts arrive in, the part files read in plan order hold the rows of the
    final CSV, cell for cell; arrivals.csv lists them in arrival order."""
    table = tmp_path_factory.mktemp("spool") / "result.csv"
    spool = PartSpool(table, float_format=parse_float_format(6, None))
    order = data.draw(st.permutations(range(len(counts))))
    for index in order:
        spool.append(_part(index, counts[index]))
    assert spool.problem is None and spool.written == list(order)
    every = [row for index in range(len(counts)) for row in _rows(index, counts[index])]
    final = render_csv(every, METRICS, float_format=parse_float_format(6, None))
    spooled = "".join(_body((spool.folder / f"part-{i:06d}.csv").read_text()) for i in range(len(counts))
                      if counts[i])
    assert final.split("\n", 1)[0] + "\n" + spooled == final if any(counts) else spooled == ""
    with open(spool.folder / ARRIVALS, newline="") as handle:
        lines = list(csv.reader(handle))
    assert tuple(lines[0]) == ARRIVALS_HEADER
    assert [int(line[1]) for line in lines[1:]] == list(order)
    assert [int(line[6]) for line in lines[1:]] == [counts[i] for i in order]
    assert all((line[7] == "") == (counts[int(line[1])] == 0) for line in lines[1:])
    spool.remove()
    assert not spool.folder.exists() and not table.exists()


def test_txt_and_msaccucmp_cells(tmp_path: Path) -> None:
    spool = PartSpool(tmp_path / "r.txt", table_format=TableFormat.TXT, layout=Layout.MSACCUCMP)
    spool.append(_part(3, 2))
    written = (tmp_path / "r.txt.parts" / "part-000003.txt").read_text()
    assert written == render_txt(_rows(3, 2), METRICS, Layout.MSACCUCMP)


def test_a_parquet_table_is_spooled_as_csv(tmp_path: Path) -> None:
    spool = PartSpool(tmp_path / "r.parquet", table_format=TableFormat.PARQUET)
    spool.append(_part(0, 1))
    assert (tmp_path / "r.parquet.parts" / "part-000000.csv").read_text() == render_csv(_rows(0, 1), METRICS)


def test_a_spool_of_an_earlier_run_is_replaced_and_user_files_are_kept(tmp_path: Path) -> None:
    earlier = PartSpool(tmp_path / "r.csv")
    earlier.append(_part(5, 1))
    earlier.append(_part(6, 1))
    mine = earlier.folder / "notes.txt"
    mine.write_text("the user's")
    spool = PartSpool(tmp_path / "r.csv")
    spool.append(_part(0, 2))
    assert sorted(p.name for p in spool.folder.iterdir()) == [ARRIVALS, "notes.txt", "part-000000.csv"]
    spool.remove()
    assert mine.read_text() == "the user's"  # the folder stays with it


def test_a_spool_that_cannot_be_written_stops_quietly(tmp_path: Path) -> None:
    (tmp_path / "r.csv.parts").write_text("in the way")
    spool = PartSpool(tmp_path / "r.csv")
    spool.append(_part(0, 1))
    spool.append(_part(1, 1))
    assert spool.written == [] and spool.problem is not None and "r.csv.parts" in spool.problem
    assert (tmp_path / "r.csv.parts").read_text() == "in the way"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        spool = PartSpool(folder / "r.csv")
        spool.append(_part(0, 1))
        assert spool.written == [] and "Permission denied" in str(spool.problem)
    finally:
        folder.chmod(0o700)


def test_a_lost_part_and_a_part_without_rows(tmp_path: Path) -> None:
    spool = PartSpool(tmp_path / "r.csv")
    lost = SpooledPart(2, 1, None, 0, PartStatus.LOST, rows=[
        MetricRow(0, None, "opA", "*", None, metrics={m: None for m in METRICS}, reasons=["not compared: died"],
                  status=PairStatus.NOT_COMPARABLE, rank=1, iteration=0)], metrics=METRICS, reason="died")
    spool.append(lost)
    spool.append(_part(1, 0, PartStatus.NOT_COMPARED))
    with open(spool.folder / ARRIVALS, newline="") as handle:
        lines = list(csv.DictReader(handle))
    assert [(r["part"], r["status"], r["rows"], r["file"], r["reason"]) for r in lines] == [
        ("2", "lost", "1", "part-000002.csv", "died"), ("1", "not compared", "0", "", "nothing pairs")]
    assert "not compared: died" in (spool.folder / "part-000002.csv").read_text()
