"""What the command line prints: messages, the terminal summary, the progress bar, what was
written (:func:`finish`). The output files are planned, checked and written by the library
(:mod:`compare.runs.outputs`); :class:`Outputs` is the runners' handle on that plan."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from convert.entries import special_file_problem
from convert.exits import EXIT_CANNOT_RUN
from convert.signals import check_interrupted

from ..errors import CompareError, OutputError
from ..kernels import METRICS
from ..verdict.policy import gated_metrics
from ..records import PairStatus
from ..reports.cells import DEFAULT_FLOAT_FORMAT
from ..reports.files import preflight
from ..reports.network import Layout, TableFormat
from ..runs.outputs import OutputKind, OutputPlan, Target, WriteOptions, Written
from .echo import err

if TYPE_CHECKING:  # pragma: no cover
    from ..api import ComparisonResult
    from ..records import CheckFailure, MetricRow, Verdict
    from ..reports.cells import FloatFormat
    from ..reports.overflow import OverflowColumn


#: Failures and worst operators listed in the terminal summary.
SUMMARY_FAILURES = 5


SUMMARY_WORST = 3


SUMMARY_METRICS = 3


def count_line(summary: dict[str, int], expected: int) -> str:
    """The row counts line of the terminal summary (``expected``: rows structurally not compared)."""
    compared = summary.get("compared", 0)
    missing_left, missing_right = summary.get("missing on left", 0), summary.get("missing on right", 0)
    not_compared = sum(summary.values()) - compared - missing_left - missing_right
    gaps = f" ({expected} expected: not dumped / structural)" if expected else ""
    return (f"rows: {compared} compared, {not_compared} not comparable, {missing_left} missing on left, "
            f"{missing_right} missing on right{gaps}")


def outcome_line(verdict: "Verdict", gated: bool) -> str:
    """The gate line of the terminal summary: no gate, or the verdict with its counts and exit code."""
    if not gated:
        return f"gate: none given (exit {verdict.exit_code})"
    real = sum(1 for f in verdict.failures if not f.incomplete)
    missing_parts = sum(1 for f in verdict.failures if f.part is not None)
    incomplete = len(verdict.failures) - real - missing_parts
    parts = [f"{verdict.checked} row(s) checked"]
    if real:
        parts.append(f"{real} value failure(s)")
    if missing_parts:
        parts.append(f"{missing_parts} part(s) missing")
    if incomplete:
        parts.append(f"{incomplete} not compared")
    if verdict.errors:
        parts.append(f"{len(verdict.errors)} policy error(s)")
    if verdict.waived:
        parts.append(f"{len(verdict.waived)} waived")
    return f"gate: {verdict.outcome.name} (exit {verdict.exit_code}): " + ", ".join(parts)


def failure_text(failure: "CheckFailure") -> str:
    """A failure for the terminal: value failures get the tensor in front (incomplete ones name it)."""
    if failure.incomplete:
        return failure.message
    tensor = failure.tensor_id or (failure.left_op if failure.left_op != "*" else failure.right_op)
    return f"{tensor}: {failure.message}"


def worst_lines(rows: Sequence["MetricRow"], metrics: Sequence[str]) -> list[str]:
    """The worst compared tensors by each metric (full precision), one line per metric."""
    lines = []
    for metric in metrics[:SUMMARY_METRICS]:
        higher = METRICS[metric].higher_is_better
        values = [(row.metrics.get(metric), row) for row in rows if row.status is PairStatus.COMPARED]
        values = [(float(v), row) for v, row in values if v is not None]
        if not values or higher is None:
            continue
        # NaN is the worst of all; then the lowest similarity / the largest error
        values.sort(key=lambda item: (item[0] == item[0], item[0] if higher else -item[0]))
        worst = ", ".join(f"{row.tensor_id or row.left_op} {value!r}" for value, row in values[:SUMMARY_WORST])
        lines.append(f"worst by {metric}: {worst}")
    return lines


def summary_lines(result: "ComparisonResult", *, quiet: bool = False) -> list[str]:
    """The verdict printed at the end of every run (stderr, at most ~15 lines; one with ``quiet``):
    row counts, the gate outcome and exit code, the first failures with full-precision values, and
    the worst tensors by each gated metric (CosineSimilarity when there is no gate)."""
    verdict = result.verdict
    counts = count_line(result.summary(), verdict.expected_gaps)
    outcome = outcome_line(verdict, result.gated)
    if quiet:
        return [f"{counts}; {outcome}"]
    lines = [counts, outcome]
    lines += [f"  {text}" for text in verdict.errors[:SUMMARY_FAILURES]]
    shown = verdict.failures[:SUMMARY_FAILURES]
    lines += [f"  {failure_text(f)}" for f in shown]
    if len(verdict.failures) > len(shown):
        lines.append(f"  ... and {len(verdict.failures) - len(shown)} more failure(s) (all in --json / --junit)")
    metrics = gated_metrics(result.policy) if result.policy is not None else []
    if not metrics and "CosineSimilarity" in result.metrics:
        metrics = ["CosineSimilarity"]
    lines += worst_lines(result.rows, metrics)
    return lines


class ProgressBar:
    """``progress(done, total)`` for :func:`compare.api.compare_network`: a rich progress bar on stderr.

    Auto (``wanted`` None): only when stderr is a terminal and the comparison has run for
    :attr:`DELAY` seconds (short runs and CI logs never see it). ``--progress``: shown from the
    first pair, terminal or not. ``--no-progress``: never.
    """

    DELAY = 2.0

    def __init__(self, wanted: Optional[bool]) -> None:
        self.forced = wanted is True
        self.enabled = wanted if wanted is not None else stderr_is_terminal()
        self.started = time.monotonic()
        self._bar: object = None
        self._task: object = None

    def __call__(self, done: int, total: int) -> None:
        check_interrupted()  # after each pair: a signal swallowed in a __del__ or a callback ends the run now
        if not self.enabled:
            return
        if self._bar is None:
            if not self.forced and time.monotonic() - self.started < self.DELAY:
                return
            from rich.console import Console  # here: rich only for the progress bar on a terminal
            from rich.progress import (  # here: rich only for the progress bar on a terminal
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            console = Console(stderr=True)
            self._bar = Progress(TextColumn("comparing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                 console=console, transient=console.is_terminal)
            self._bar.start()  # type: ignore[attr-defined]
            self._task = self._bar.add_task("comparing", total=total)  # type: ignore[attr-defined]
        self._bar.update(self._task, completed=done, total=total)  # type: ignore[attr-defined]

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()  # type: ignore[attr-defined]
            self._bar = None


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal (False when it cannot be told, e.g. a closed stream)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


@dataclass(frozen=True)
class Outputs:
    """The command line's outputs of a network run or a saved result: the ``-o`` table,
    ``--json``, ``--junit``, ``--html``, planned, checked and written by the library's
    :class:`compare.runs.outputs.OutputPlan` (each through its writer of
    :data:`compare.runs.outputs.WRITERS`). The runners of :mod:`compare.cli.modes` call these
    names; the plan does the work."""

    table: Path | None
    table_format: TableFormat | None
    output: Optional[str]
    json: Path | None
    junit: Path | None
    html: Path | None = None
    #: Add the Verdict column to the table (``--verdicts``).
    verdicts: bool = False

    @classmethod
    def plan(cls, output: Optional[str], csv_flag: bool, json_out: Optional[Path], junit_out: Optional[Path],
             html_out: Optional[Path] = None, *, verdicts: bool = False) -> "Outputs":
        """The outputs checked before the run (:meth:`compare.runs.outputs.OutputPlan.plan`: exit 2 at once)."""
        table = OutputPlan.plan(output, csv_flag=csv_flag, json=json_out, junit=junit_out, html=html_out).table
        assert table is not None  # a network run always writes its table
        return cls(table.path, TableFormat(table.kind.value), output, json_out, junit_out, html_out, verdicts)

    def library_plan(self) -> OutputPlan:
        """The same outputs as the library's plan (already checked by :meth:`plan`)."""
        table = ([Target(OutputKind(self.table_format.value), self.table, self.output)]
                 if self.table is not None and self.table_format is not None else [])
        others = [Target(kind, Path(path)) for kind, path in
                  ((OutputKind.JSON, self.json), (OutputKind.JUNIT, self.junit), (OutputKind.HTML, self.html))
                  if path is not None]
        return OutputPlan(tuple(table + others))

    def folders(self) -> list[Path]:
        """The folders the outputs go to (each once, in option order)."""
        return self.library_plan().folders()

    def write(self, result: "ComparisonResult", *, layout: "Layout | None", float_format: "FloatFormat | None",
              overflow: "OverflowColumn | None" = None) -> tuple[list[Written], list[OutputError]]:
        """Write every output: ``([(label, path) written], [failures])``; ``layout`` and
        ``float_format`` None (a saved result, no table): the defaults."""
        options = WriteOptions(layout=layout if layout is not None else Layout.VCOMPARE,
                               float_format=float_format if float_format is not None else DEFAULT_FLOAT_FORMAT,
                               verdicts=self.verdicts, overflow=overflow)
        outcome = self.library_plan().write(result, options)
        return list(outcome.written), list(outcome.failed)


def finish(result: "ComparisonResult", written: Sequence[tuple[str, Path]], failed: Sequence[OutputError],
            quiet: bool, *, after: Sequence[str] = ()) -> int:
    """Print what was written, the verdict summary, the ``after`` lines (the first divergence)
    and any write failure; return the exit code."""
    for label, path in written:
        typer.echo(f"{label}: {path}")
    for line in summary_lines(result, quiet=quiet):
        err(line)
    for line in after:
        err(line)
    for exc in failed:
        err(f"error: {exc}")
    if failed:
        err(f"error: {len(failed)} output file(s) could not be written (the comparison itself ran; see the "
             f"summary above): exit {EXIT_CANNOT_RUN}")
        return EXIT_CANNOT_RUN
    return result.exit_code


def check_readable(path: Path, flag: str) -> None:
    """Refuse (CompareError naming the option) a path that does not exist, cannot be read, or is
    (a link to) a FIFO, a device or a socket -- refused at once, never opened: reading a FIFO
    blocks until a writer comes, ``-f /dev/zero`` would be read until memory runs out."""
    if not path.exists():
        raise CompareError(f"{flag} {path}: no such file or directory")
    special = special_file_problem(path)
    if special is not None:
        raise CompareError(f"{flag} {path}: {special}")
    if not os.access(path, os.R_OK):
        raise CompareError(f"{flag} {path}: permission denied")


__all__ = ["Outputs", "ProgressBar", "check_readable", "count_line", "failure_text", "finish", "outcome_line",
           "preflight", "summary_lines", "worst_lines"]
