"""The outputs of a comparison: planned before it runs, written after, each by one writer of one
table.

:class:`OutputPlan` says where each output goes (:class:`Target`: an :class:`OutputKind` and a
path). :meth:`OutputPlan.plan` checks them all before the comparison runs -- an ``-o`` extension
vcompare does not write, a folder in the way, a parent that is a file or not writable, ``--html``
without matplotlib, ``-o .xlsx`` without openpyxl -- so a run that could not be saved fails at
once (exit 2), nothing computed in vain. :meth:`OutputPlan.write` writes each one through
:data:`WRITERS` and collects the failures instead of stopping at the first, so one unwritable file
never loses the others.

Every writer has one signature, :data:`Writer`: ``(result, target, options) -> Path`` (the path
written). ``-o`` (csv, txt, parquet, xlsx), ``--json``, ``--junit`` and ``--html`` of a network run
and the ``--json`` / ``--junit`` of ``vcompare gate`` all go through the table.

Adding an output format (e.g. ``.xlsx``) touches two files, three when ``-o`` writes it:

1. its writer module, ``compare/reports/<format>.py``: records in, file out (atomically, through
   :mod:`compare.reports.files`), :class:`~compare.errors.OutputError` when it cannot be written;
2. here: an :class:`OutputKind` member and its one :data:`WRITERS` line, a function of the
   :data:`Writer` signature calling the writer module;
3. for a form of the ``-o`` table: its :class:`~compare.reports.network.TableFormat` member (one
   line, same value as its :class:`OutputKind`): ``-o`` then accepts its extension and names it
   when refusing another (:data:`~compare.reports.network.OUTPUT_SUFFIXES`); a new flag
   (``--json``-like) is instead a :meth:`OutputPlan.plan` argument and a command-line option.

Its tests go to ``tests/compare/reports/``; ``test_writer_table.py`` there checks that every
kind has a writer of the one signature.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..errors import OutputError
from ..heap import paused_gc
from ..reports.cells import DEFAULT_FLOAT_FORMAT, FloatFormat
from ..reports.divergence import verdict_map
from ..reports.files import preflight
from ..reports.json_rows import write_result
from ..reports.junit import write_junit
from ..reports.network import Layout, TableFormat, render_csv, resolve_output, write_report
from ..reports.overflow import OverflowColumn, add_overflow_to_document
from ..reports.result_json import write_json
from ..reports.stats import render_stats_csv, write_stats_report
from ..reports.xlsx import mark_rule, row_marks, summary_items, write_workbook
from .html import check_html, write_html_report

if TYPE_CHECKING:  # pragma: no cover
    from ..api import ComparisonResult
    from ..request import CompareRequest


class OutputKind(Enum):
    """What an output is; one :data:`WRITERS` entry each. The table kinds are what ``-o`` writes
    (:class:`~compare.reports.network.TableFormat`, same values)."""

    CSV = "csv"
    TXT = "txt"
    PARQUET = "parquet"
    JSON = "json"
    JUNIT = "junit"
    HTML = "html"
    XLSX = "xlsx"

    @property
    def is_table(self) -> bool:
        """Whether ``-o`` writes it (a form of the result table: a :class:`TableFormat` value)."""
        return any(self.value == table_format.value for table_format in TableFormat)


@dataclass(frozen=True)
class Target:
    """One planned output: its kind and path. ``given``: ``-o`` as given (a statistics-only run
    names its table from it, :func:`compare.reports.stats.stats_output_path`)."""

    kind: OutputKind
    path: Path
    given: str | None = None

    @property
    def label(self) -> str:
        """How the command line names it when written (``result: r.csv``, ``json: r.json``)."""
        return "result" if self.kind.is_table else self.kind.value


@dataclass(frozen=True)
class WriteOptions:
    """How the outputs are written: the table's ``layout`` (``--layout``), ``float_format``
    (``--digits`` / ``--float-format``), ``verdicts`` (the Verdict column, ``--verdicts``) and
    ``overflow`` (the OverFlow column of the table and the rows of the JSON result, ``--overflow``)."""

    layout: Layout = Layout.VCOMPARE
    float_format: FloatFormat = DEFAULT_FLOAT_FORMAT
    verdicts: bool = False
    overflow: OverflowColumn | None = None


#: The one signature of every writer: the result, where, how -> the path written.
Writer = Callable[["ComparisonResult", Target, WriteOptions], Path]


class Written(NamedTuple):
    """An output written: its :attr:`Target.label` and the path."""

    label: str
    path: Path


@dataclass(frozen=True)
class WriteOutcome:
    """What :meth:`OutputPlan.write` did: the outputs written (plan order) and the failures."""

    written: tuple[Written, ...]
    failed: tuple[OutputError, ...]


def _statistics_table(result: "ComparisonResult", target: Target, options: WriteOptions) -> Path | None:
    """The statistics report of a statistics-only live run (named from ``-o`` as given); None for
    any other result."""
    network = result.network
    if network is None or network.stats is None:
        return None
    verdicts = verdict_map(result.localisation) if options.verdicts else None
    return write_stats_report(network.stats, target.given, verdicts)


def _network_table(result: "ComparisonResult", target: Target, options: WriteOptions) -> Path:
    """The network report (:func:`compare.reports.network.write_report`) in the target's format;
    an Address column for a side whose folder holds no ``.npy`` files (both for a saved result)."""
    network = result.network
    left_npy, right_npy = network.has_npy if network is not None else (False, False)
    verdicts = verdict_map(result.localisation) if options.verdicts else None
    return write_report(result.rows, target.path, result.metrics, table_format=TableFormat(target.kind.value),
                        layout=options.layout, left_address=not left_npy, right_address=not right_npy,
                        float_format=options.float_format, verdicts=verdicts, overflow=options.overflow,
                        op_sequence=result.options.get("ops") is not None)


def write_text_table(result: "ComparisonResult", target: Target, options: WriteOptions) -> Path:
    """``-o .csv`` / ``.txt``: the network report, or the statistics report of a statistics-only run."""
    written = _statistics_table(result, target, options)
    return written if written is not None else _network_table(result, target, options)


def write_xlsx_table(result: "ComparisonResult", target: Target, options: WriteOptions) -> Path:
    """``-o .xlsx``: the table ``-o .csv`` writes -- the network report, or the statistics report of
    a statistics-only run -- as an Excel workbook (:mod:`compare.reports.xlsx`): rows highlighted by
    the gate outcome of each row when a gate was given, else by msprobe's grade or the status; a
    Summary sheet (inputs, rows per status, gate and exit code, first divergence, notes)."""
    network = result.network
    verdicts = verdict_map(result.localisation) if options.verdicts else None
    if network is not None and network.stats is not None:
        table = render_stats_csv(network.stats, verdicts)
    else:
        left_npy, right_npy = network.has_npy if network is not None else (False, False)
        table = render_csv(result.rows, result.metrics, options.layout, float_format=options.float_format,
                           verdicts=verdicts, overflow=options.overflow, left_address=not left_npy,
                           right_address=not right_npy, op_sequence=result.options.get("ops") is not None)
    gate = result.verdict if result.gated else None
    summary = summary_items(inputs=result.inputs, counts=result.summary(), verdict=result.verdict, gated=result.gated,
                            localisation=result.localisation, notes=result.notes)
    return write_workbook(target.path, table, row_marks(result.rows, gate), summary,
                          rule=mark_rule(result.rows, gate))


def write_parquet_table(result: "ComparisonResult", target: Target, options: WriteOptions) -> Path:
    """``-o .parquet``: the rows as a typed table (:mod:`compare.reports.parquet`), statistics rows too."""
    return _network_table(result, target, options)


def write_json_result(result: "ComparisonResult", target: Target, options: WriteOptions) -> Path:
    """``--json``: the JSON result (docs/result-json.md, :meth:`compare.api.ComparisonResult.to_dict`),
    its rows encoded and written in turn (:func:`compare.reports.json_rows.write_result`), its localisation
    block as text written from the verdicts' columns (:meth:`~compare.api.ComparisonResult.json_head`); with
    ``--overflow``, the whole document with each row's OverFlow added."""
    if options.overflow is None:
        return write_result(result.json_head(), target.path, result.rows, result.metrics)
    return write_json(add_overflow_to_document(result.to_dict(), options.overflow, result.rows), target.path)


def write_junit_report(result: "ComparisonResult", target: Target, options: WriteOptions) -> Path:
    """``--junit``: the JUnit XML report (:mod:`compare.reports.junit`)."""
    return write_junit(result.to_junit(), target.path)


def write_html_result(result: "ComparisonResult", target: Target, options: WriteOptions) -> Path:
    """``--html``: the self-contained HTML report of a live run (:func:`compare.runs.html.write_html_report`)."""
    return write_html_report(result, target.path)


#: The writer of each output kind: the one place a format is added (module doc).
WRITERS: dict[OutputKind, Writer] = {
    OutputKind.CSV: write_text_table,
    OutputKind.TXT: write_text_table,
    OutputKind.PARQUET: write_parquet_table,
    OutputKind.JSON: write_json_result,
    OutputKind.JUNIT: write_junit_report,
    OutputKind.HTML: write_html_result,
    OutputKind.XLSX: write_xlsx_table,
}


@dataclass(frozen=True)
class OutputPlan:
    """Where a comparison writes: its :class:`Target` s, in option order (``-o``, ``--json``,
    ``--junit``, ``--html``). Build it with :meth:`plan` (checked) or :meth:`saved`."""

    targets: tuple[Target, ...]

    @classmethod
    def plan(cls, output: str | os.PathLike[str] | None, *, csv_flag: bool = False, json: Path | None = None,
             junit: Path | None = None, html: Path | None = None) -> "OutputPlan":
        """The outputs of a network comparison, checked before it runs: the ``-o`` table
        (:func:`compare.reports.network.resolve_output`: always one, a timestamped ``.csv`` in the
        current folder when ``-o`` is not given) and the files asked for. Raises
        :class:`~compare.errors.OptionError` (an ``-o`` extension vcompare does not write, ``--html``
        without matplotlib) or :class:`OutputError` (:func:`compare.reports.files.preflight`)."""
        table, table_format = resolve_output(output, csv_flag=csv_flag)
        given = os.fspath(output) if output is not None else None
        targets = [Target(OutputKind(table_format.value), table, given)]
        targets += [Target(kind, Path(path)) for kind, path in
                    ((OutputKind.JSON, json), (OutputKind.JUNIT, junit), (OutputKind.HTML, html)) if path is not None]
        for target in targets:
            preflight(target.path)
        if html is not None:
            check_html()
        return cls(tuple(targets))

    @classmethod
    def of(cls, request: "CompareRequest") -> "OutputPlan":
        """The outputs a :class:`~compare.request.CompareRequest` asks for (its ``output``, ``csv``,
        ``json_out``, ``junit_out``, ``html_out``), checked as :meth:`plan` checks them."""
        return cls.plan(request.output, csv_flag=request.csv, json=request.json_out, junit=request.junit_out,
                        html=request.html_out)

    @classmethod
    def saved(cls, *, json: Path | None = None, junit: Path | None = None) -> "OutputPlan":
        """The outputs of a saved result checked again (``vcompare gate``): no table, checked
        (:func:`compare.reports.files.preflight`)."""
        targets = tuple(Target(kind, Path(path)) for kind, path in ((OutputKind.JSON, json), (OutputKind.JUNIT, junit))
                        if path is not None)
        for target in targets:
            preflight(target.path)
        return cls(targets)

    @property
    def table(self) -> Target | None:
        """The ``-o`` table, None when there is none (a saved result checked again)."""
        return next((t for t in self.targets if t.kind.is_table), None)

    def folders(self) -> list[Path]:
        """The folders the outputs go to (each once, in option order)."""
        return list(dict.fromkeys(t.path.parent for t in self.targets))

    def write(self, result: "ComparisonResult", options: WriteOptions = WriteOptions()) -> WriteOutcome:
        """Write every output through :data:`WRITERS`; an :class:`OutputError` is collected and the
        next output written (any other exception propagates)."""
        written: list[Written] = []
        failed: list[OutputError] = []
        with paused_gc():  # writing makes only short-lived, acyclic garbage: collections would walk every row
            for target in self.targets:
                try:
                    written.append(Written(target.label, WRITERS[target.kind](result, target, options)))
                except OutputError as exc:
                    failed.append(exc)
        return WriteOutcome(tuple(written), tuple(failed))


__all__ = ["WRITERS", "OutputKind", "OutputPlan", "Target", "WriteOptions", "WriteOutcome", "Writer", "Written",
           "write_html_result", "write_json_result", "write_junit_report", "write_parquet_table", "write_text_table",
           "write_xlsx_table"]
