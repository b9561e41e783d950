"""The spool of a cluster run: each part's rows on disk as soon as the part arrives.

A cluster run (``--dask-cluster`` / ``--scheduler``, docs/distributed.md) gets its parts back
in any order, and the report is written once every part is in. So that a client killed midway
(SIGKILL, a lost SSH session, a crash) loses none of the parts that came back, each arriving
part is written at once into the folder ``<table>.parts/`` beside the ``-o`` table:

- ``part-NNNNNN.<ext>`` (``NNNNNN``: the part's place in the plan, from 0, six digits): the
  part's rows as a table of its own, written by the final report's own writer
  (:func:`compare.reports.network.write_report`) with the same format, layout, float format and
  address columns, so every cell is the cell of the final report (a ``.parquet`` table, which
  has no cells, is spooled as CSV); a statistics-only part is its statistics CSV
  (:func:`compare.reports.stats.render_stats_csv`). A part not compared (or lost) is its own
  row (:meth:`compare.records.PartReport.row`; after a lost part's operator rows). The rows of
  the final table are the rows of the part files taken in plan order (the final table adds
  ``--verdicts`` and, for ``.txt``, pads to the widest cell of all parts).
- ``arrivals.csv``: one line a part, appended in arrival order and flushed at once: ``arrival``
  (from 1), ``part``, ``rank``, ``graph``, ``iteration``, ``status`` (compared / not compared /
  lost), ``rows``, ``file`` (empty when none), ``reason`` (why a part was not compared).

Each part file is written under a temporary name (``.part-NNNNNN.tmp``) and renamed, so a
file in the folder is always whole; the arrivals line is written after the rename. The spool
files are not result files: they are not named by the "stopped after writing ..." message
(:func:`convert.signals.note_written`), which is why they are not written by
:func:`compare.reports.files.atomic_write`.

Policy: the folder is created at the first arriving part (none for a run that ends before),
emptied of the files of an earlier run (a spool left by an interrupted run of the same ``-o``
is replaced, not mixed in), and removed by the caller once the report is written
(:meth:`PartSpool.remove`). A spool that cannot be written (disk full, read-only folder) never
stops the run: the first failure is kept in :attr:`PartSpool.problem` and the spool stops there.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from convert.signals import check_interrupted

from ..errors import OutputError
from ..records import MetricRow, PartStatus
from ..stats_table import StatsResult
from .cells import DEFAULT_FLOAT_FORMAT, FloatFormat
from .files import os_reason
from .network import Layout, TableFormat, render_csv, render_txt
from .stats import render_stats_csv

#: The spool folder's suffix after the table's file name.
SPOOL_SUFFIX = ".parts"
#: The arrivals index, appended in arrival order.
ARRIVALS = "arrivals.csv"
ARRIVALS_HEADER = ("arrival", "part", "rank", "graph", "iteration", "status", "rows", "file", "reason")
#: The names the spool writes (and only these are removed with it).
_OURS = re.compile(r"\.?part-\d{6}(\.stats)?\.(csv|txt)(\.tmp)?|arrivals\.csv")


@dataclass(frozen=True)
class SpooledPart:
    """One arriving part as the spool writes it: its place in the plan, coordinates, status,
    metric rows (or statistics), and the address columns of the final table (``left_address``
    / ``right_address``: False when that side is a folder of ``.npy`` files)."""

    index: int
    rank: int | None
    graph: int | None
    iteration: int | None
    status: PartStatus
    rows: Sequence[MetricRow]
    metrics: Sequence[str]
    stats: StatsResult | None = None
    left_address: bool = True
    right_address: bool = True
    reason: str | None = None


class PartSpool:
    """The spool folder of one ``-o`` table (module doc). ``table_format`` / ``layout`` /
    ``float_format``: those of the final table."""

    def __init__(self, table: Path, *, table_format: TableFormat = TableFormat.CSV,
                 layout: Layout = Layout.VCOMPARE, float_format: FloatFormat = DEFAULT_FLOAT_FORMAT) -> None:
        self.table = Path(table)
        self.folder = self.table.with_name(self.table.name + SPOOL_SUFFIX)
        self.table_format = TableFormat(table_format)
        self.layout = Layout(layout)
        self.float_format = float_format
        #: Parts written so far (in arrival order: their plan indices).
        self.written: list[int] = []
        #: Why the spool stopped (the first write that failed), else None.
        self.problem: str | None = None
        self._started = False

    def append(self, part: SpooledPart) -> None:
        """Write one arriving part (module doc); a failure is kept in :attr:`problem`, not raised."""
        if self.problem is not None:
            return
        try:
            if not self._started:
                self._start()
            name = self._write_part(part)
            self._index(part, name)
        except OutputError as exc:
            self.problem = str(exc)
            return
        except OSError as exc:
            self.problem = f"{self.folder}: {os_reason(exc)}"
            return
        self.written.append(part.index)

    def remove(self) -> None:
        """Remove the spool's files and its folder (kept when it holds anything else)."""
        if not self.folder.is_dir():
            return
        for entry in os.scandir(self.folder):
            if entry.is_file(follow_symlinks=False) and _OURS.fullmatch(entry.name):
                try:
                    os.unlink(entry.path)
                except FileNotFoundError:
                    pass
        try:
            self.folder.rmdir()
        except OSError:
            pass  # something of the user's in it: left alone

    def _start(self) -> None:
        if self.folder.exists() and not self.folder.is_dir():
            raise OutputError(self.folder, "is in the way of the spool folder (not a folder)")
        self.remove()
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / ARRIVALS, "w", encoding="utf-8", newline="") as index:
            csv.writer(index, lineterminator="\n").writerow(ARRIVALS_HEADER)
        self._started = True

    def _write_part(self, part: SpooledPart) -> str:
        """The part's file (its name; empty when the part has no rows)."""
        if part.rows:
            name = f"part-{part.index:06d}.{'txt' if self.table_format is TableFormat.TXT else 'csv'}"
            self._replace(name, lambda path: self._write_rows(part, path))
            return name
        if part.stats is not None and len(part.stats.table):
            name = f"part-{part.index:06d}.stats.csv"
            text = render_stats_csv(part.stats)
            self._replace(name, lambda path: path.write_text(text, encoding="utf-8"))
            return name
        return ""

    def _write_rows(self, part: SpooledPart, path: Path) -> None:
        render = render_txt if self.table_format is TableFormat.TXT else render_csv
        text = render(part.rows, part.metrics, self.layout, float_format=self.float_format,
                      left_address=part.left_address, right_address=part.right_address)
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)

    def _replace(self, name: str, write: Callable[[Path], object]) -> None:
        temporary = self.folder / f".{name}.tmp"
        try:
            write(temporary)
            check_interrupted()  # a signal swallowed while the part was made: no part after it
            os.replace(temporary, self.folder / name)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    def _index(self, part: SpooledPart, name: str) -> None:
        line = io.StringIO()
        csv.writer(line, lineterminator="\n").writerow(
            [len(self.written) + 1, part.index, _cell(part.rank), _cell(part.graph), _cell(part.iteration),
             part.status.value, len(part.rows), name, part.reason or ""])
        with open(self.folder / ARRIVALS, "a", encoding="utf-8", newline="") as index:
            index.write(line.getvalue())
            index.flush()


def _cell(value: int | None) -> str:
    return "" if value is None else str(value)


__all__ = ["ARRIVALS", "ARRIVALS_HEADER", "SPOOL_SUFFIX", "PartSpool", "SpooledPart"]
