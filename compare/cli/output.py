"""What the command line prints: messages, the terminal summary, the progress bar, what was
written (:func:`finish`). The output files are planned, checked and written by the library
(:mod:`compare.runs.outputs`)."""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import numpy as np
import typer

from convert.entries import special_file_problem
from convert.exits import EXIT_CANNOT_RUN
from convert.signals import check_interrupted

from ..errors import CompareError, OutputError
from ..kernels import METRICS
from ..records import PartNote
from ..stats_table import RowColumns
from ..verdict.policy import gated_metrics
from .echo import err

if TYPE_CHECKING:  # pragma: no cover
    from ..api import ComparisonResult
    from ..records import CheckFailure, MetricRow, Verdict


#: Failures and worst operators listed in the terminal summary.
SUMMARY_FAILURES = 5


SUMMARY_WORST = 3


SUMMARY_METRICS = 3


#: Parts named in a grouped note line (:func:`note_lines`) before "... ; --verbose lists all".
NOTE_PARTS_SHOWN = 3


def note_lines(notes: Sequence[str], part_notes: Sequence[PartNote], *, verbose: bool = False) -> list[str]:
    """The notes of a run as the terminal prints them: every note (``verbose``), or each kind of
    the parts' notes (:class:`~compare.records.PartNote`) once, where its first note stands, with
    the number of parts and the first few (:func:`grouped_note`). Notes of the run as a whole, and
    a kind only one part has, are printed as they are."""
    if verbose or not part_notes:
        return list(notes)
    kinds: dict[str, list[PartNote]] = {}
    of_text: dict[str, PartNote] = {}
    for note in part_notes:
        kinds.setdefault(note.kind, []).append(note)
        of_text[note.text] = note
    lines: list[str] = []
    printed: set[str] = set()
    for text in notes:
        note = of_text.get(text)
        if note is None:
            lines.append(text)
        elif note.kind not in printed:
            printed.add(note.kind)
            lines.append(grouped_note(kinds[note.kind]))
    return lines


def grouped_note(members: Sequence[PartNote]) -> str:
    """One line for the notes of one kind: the note itself when one part has it, else its text
    with ``...`` where the parts differ (a folder path, a count), then ``-- N parts (first
    NOTE_PARTS_SHOWN parts, ... ; --verbose lists all)``."""
    if len(members) == 1:
        return members[0].text
    parts = list(dict.fromkeys(note.part for note in members))
    named = ", ".join(parts[:NOTE_PARTS_SHOWN])
    if len(parts) > NOTE_PARTS_SHOWN:
        named += ", ... ; --verbose lists all"
    count = f"{len(parts)} parts" if len(parts) == len(members) else f"{len(members)} notes in {len(parts)} part(s)"
    return f"{_common_text([note.body for note in members])} -- {count} ({named})"


def _common_text(bodies: Sequence[str]) -> str:
    """The text the notes ``bodies`` (one kind: the same words but for their numbers) share, with
    ``...`` for a path that differs between them and for a number that differs elsewhere."""
    columns = zip(*(re.split(r"(\s+)", body) for body in bodies))
    return "".join(_common_word(list(words)) for words in columns)


def _common_word(words: list[str]) -> str:
    if all(word == words[0] for word in words):
        return words[0]
    if "/" in words[0] or os.sep in words[0]:
        return "..."
    pieces = zip(*(re.split(r"(\d+)", word) for word in words))
    return "".join(piece[0] if all(p == piece[0] for p in piece) else "..." for piece in pieces)


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
    """The worst compared tensors by each metric (full precision), one line per metric: NaN is the
    worst of all, then the lowest similarity / the largest error; ties in row order. Read from the
    rows' columns (:class:`~compare.stats_table.RowColumns`): only the rows shown are named."""
    columns = RowColumns(rows)
    lines = []
    for metric in metrics[:SUMMARY_METRICS]:
        higher = METRICS[metric].higher_is_better
        if higher is None:
            continue
        values, present = columns.metric(metric)
        where = np.flatnonzero(columns.compared & present)
        if not len(where):
            continue
        chosen = values[where]
        order = np.lexsort((chosen if higher else -chosen, ~np.isnan(chosen)))[:SUMMARY_WORST]  # stable
        worst = ", ".join(f"{columns.tensor_id[i] or columns.left_op[i]} {float(values[i])!r}"
                          for i in where[order].tolist())
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


__all__ = ["ProgressBar", "check_readable", "count_line", "failure_text", "finish", "grouped_note", "note_lines",
           "outcome_line", "summary_lines", "worst_lines"]
