"""One loaded pairing compared: the rows, the notes, the unpaired tensors, the same-data guard."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..engine import EngineOptions, compare_pairs
from ..engine.grades import GradeMode, grade_rows, row_grades
from ..errors import CompareError, OptionError
from ..heap import paused_gc
from ..loaders.ascend import unused_files_note
from ..pairing.scenarios import Scenario
from ..records import (
    MetricRow,
    Pair,
    Pairing,
    PairingMode,
    PairStatus,
    PartNote,
    PartReport,
    Run,
    RunKind,
    SkippedFile,
    count_by_status,
)
from ..stats import mismatch_reason, recorded_statistics, shape_note, statistics_metrics
from ..stats_table import RowColumns, compare_stats
from ..tensor_table import PairTable, op_files
from .msprobe_rows import (
    annotate,
    argument_order,
    msprobe_cells,
    msprobe_sides,
    with_arguments,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..pairing.rule_records import FusionRule
    from ..stats_table import StatsResult

#: ``progress(done, total)``: called after each compared pair (see :func:`run_network`).
Progress = Callable[[int, int], None]


@dataclass
class NetworkResult:
    """Everything a network comparison produced (rows in report order).

    ``scenario`` is the row of the manual's comparison table the run was (see
    :mod:`compare.pairing.scenarios`); ``scenario.row`` is None for vcompare's by-name extension
    and for MindSpore / TF-NPU / mapping-file pairings. ``stats`` is set for a statistics-only
    comparison (a side holds statistics and no tensor data; see :mod:`compare.stats`; its rows
    feed the statistics table): ``rows`` then hold the same rows as :class:`MetricRow`
    (statistics metrics ``MaxDiff``, ``MaxRelDiff`` ..., :func:`compare.stats.metric_row`) and
    ``metrics`` their names. ``parts`` lists the ``(rank, iteration)`` compared in turn
    (``--rank all`` / ``--iteration all`` / ``--graph all``); ``left`` / ``right`` are then the runs
    of the last one. ``part_graphs`` gives the graph of each part when graphs were compared in turn
    (``--graph all`` or a list), else it is empty.
    """

    rows: Sequence[MetricRow]
    metrics: list[str]
    left: Run
    right: Run
    pairing: Pairing
    notes: list[str] = field(default_factory=list)
    scenario: Scenario | None = None
    stats: "StatsResult | None" = None
    parts: list[tuple[int | None, int | None]] = field(default_factory=list)
    part_graphs: list[int | None] = field(default_factory=list)
    #: Set when both sides are the same dump files (:func:`same_data`): what was found.
    same_data: str | None = None
    #: The ATC fusion rule the pairs came from (the last part's), None without ``-f``.
    rule: "FusionRule | None" = None
    #: The left run of each part, in ``parts`` order (one entry for a single run).
    part_lefts: list[Run] = field(default_factory=list)
    #: Every file of either side that was not used and why (``Run.skipped`` of each run read, each
    #: folder once): the full list behind the "file(s) not used" notes.
    skipped: list[SkippedFile] = field(default_factory=list)
    #: Every part of a compare-each-in-turn run, in plan order (failed ones too): status, seconds,
    #: worker (empty for a single comparison).
    part_reports: list[PartReport] = field(default_factory=list)
    #: The notes of the parts of a compare-each-in-turn run (each of them also in ``notes``, in
    #: full), with their part and kind: the terminal prints one line per kind (empty for a single
    #: comparison).
    part_notes: list[PartNote] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        """Row counts per status: compared / not comparable / missing on left / missing on right."""
        return count_by_status(RowColumns(self.rows).status)

    @property
    def has_npy(self) -> tuple[bool, bool]:
        """Whether each side is a folder of .npy files (the msaccucmp layout then drops Address)."""
        return self.left.kind is RunKind.NUMPY, self.right.kind is RunKind.NUMPY


def run_notes(side: str, run: Run, prefix: str = "", *, unused_files: bool = True) -> list[str]:
    """The notes of one loaded run for the user, then (``unused_files``) the files it did not use
    (count and the first few names with the reason, :func:`compare.loaders.ascend.unused_files_note`)."""
    notes = [f"{prefix}{side}: {n}" for n in run.notes]
    unused = unused_files_note(run.skipped, folder=run.path) if unused_files else None
    if unused:
        notes.append(f"{prefix}{side}: {unused}")
    return notes


def report_runs(left_run: Run, right_run: Run, prefix: str, reported: list[Run]
                ) -> tuple[list[str], list[SkippedFile]]:
    """The notes of both runs of one comparison and the files they did not use, each run once.

    ``reported``: runs whose notes were already given (a golden side shared by every part of a
    compare-each-in-turn run); their notes are not repeated, nor the unused files of a folder
    already reported (the same right leaf read for several parts). The runs given are added.
    """
    notes: list[str] = []
    skipped: list[SkippedFile] = []
    for side, run in (("left", left_run), ("right", right_run)):
        if not any(run is seen for seen in reported):
            first_time = all(seen.path != run.path for seen in reported)
            notes += run_notes(side, run, prefix, unused_files=first_time)
            if first_time:
                skipped += [SkippedFile(side, Path(path), why) for path, why in run.skipped]
            reported.append(run)
    return notes, skipped


def compare_loaded(left_run: Run, right_run: Run, scenario: Scenario | None, pairing: Pairing, metrics: list[str],
                 options: EngineOptions, prefix: str = "", *, reported: list[Run] | None = None,
                 refuse_same: bool = False, rule: "FusionRule | None" = None,
                 runs_noted: bool = True) -> NetworkResult:
    """Compare one pairing (metrics, or statistics when a side is statistics-only). Rows of an
    run whose layout is graded (:attr:`~compare.records.DumpLayout.graded`: msprobe's) get msprobe's
    Result / Err_message (:func:`compare.engine.grades.grade_rows`).

    ``reported``: see :func:`report_runs`. ``runs_noted`` False: the result's notes and
    ``skipped`` leave the runs out (the caller reports them with :func:`report_runs`, as the
    compare-each-in-turn merge does, in part order); only the pairing's notes are given.
    """
    reported = reported if reported is not None else []
    same = same_data(left_run, right_run)
    if same is not None and refuse_same:
        raise SameDataError(f"{prefix}{same}: a gate on a run compared with itself proves nothing; compare "
                            "different dumps, or add --allow-same (allow_same=True) if this is deliberate")
    notes: list[str] = []
    skipped: list[SkippedFile] = []
    if runs_noted:
        notes, skipped = report_runs(left_run, right_run, prefix, reported)
    notes += [f"{prefix}{n}" for n in pairing.notes]
    # compare.stats.needs_stats_mode, with the sides named for the note
    stats_sides = [side for side, run in (("left", left_run), ("right", right_run))
                   if run.stats_only]
    graded = any(run.family.graded for run in (left_run, right_run))
    if stats_sides:
        with paused_gc():  # ~4 long-lived records per row, no cycles: collections would only walk them (compare.heap)
            return _compare_statistics(left_run, right_run, scenario, pairing, prefix, stats_sides, notes, skipped,
                                       same=same, rule=rule, graded=graded)
    if isinstance(pairing.pairs, PairTable):  # tensor rows read their Pairs several times: built once
        pairing.pairs = list(pairing.pairs)
    rows = compare_pairs(pairing.pairs, options)
    if framework_dumps(left_run, right_run):
        check_framework_pairs(rows, pairing.pairs)
    if msprobe_sides(left_run, right_run):
        annotate(rows, pairing.pairs, left_run, right_run)
        rows = with_arguments(rows, pairing.pairs, left_run, right_run, metrics)
    rows += unpaired_rows(rows, pairing, metrics)
    explain_missing(rows, left_run, right_run)
    if graded:
        grade_rows(rows, mode=GradeMode.TENSOR)
    return NetworkResult(rows=rows, metrics=metrics, left=left_run, right=right_run, pairing=pairing, notes=notes,
                         scenario=scenario, same_data=same, rule=rule, part_lefts=[left_run], skipped=skipped)


def _compare_statistics(left_run: Run, right_run: Run, scenario: Scenario | None, pairing: Pairing, prefix: str,
                        stats_sides: list[str], notes: list[str], skipped: list[SkippedFile], *, same: str | None,
                        rule: "FusionRule | None", graded: bool) -> NetworkResult:
    """The statistics branch of :func:`compare_loaded`: every pair compared by its statistics into
    a table (:func:`compare.stats_table.compare_stats`), msprobe's cells and argument rows added
    to it, graded when ``graded`` (msprobe runs); the result's rows are the table's, as
    MetricRows built when read (:class:`compare.stats_table.MetricRows`)."""
    stats = compare_stats(pairing.pairs)
    which = "both sides hold" if len(stats_sides) == 2 else f"the {stats_sides[0]} side holds"
    notes.append(f"{prefix}statistics comparison: {which} tensors with statistics and no tensor "
                 "data, so every pair is compared by its statistics (computed from the data where a side has it)")
    if msprobe_sides(left_run, right_run):
        stats.table.msprobe = list(msprobe_cells(pairing.pairs, left_run, right_run))
        order = argument_order(RowColumns(stats.metric_rows()), pairing.pairs, left_run, right_run, stats.metrics)
        if order is not None:
            stats.table = stats.table.arranged(order)
    rows = stats.metric_rows()
    if graded:
        stats.table.set_grades(row_grades(rows, mode=GradeMode.STATISTICS))
    return NetworkResult(rows=rows, metrics=stats.metrics, left=left_run, right=right_run, pairing=pairing, notes=notes,
                         scenario=scenario, stats=stats, same_data=same, rule=rule, part_lefts=[left_run],
                         skipped=skipped)


def framework_dumps(left: Run, right: Run) -> bool:
    """Whether a side is a framework dump (msprobe, MindSpore), whose pairs are matched by name
    across frameworks and may meet a tensor of another shape or kind under the same name. Ascend
    and golden folders are compared as the reference tool does (layouts converted, quantized int8
    against float by design) and are not checked here."""
    return any(run.family.scope_named for run in (left, right))


def check_framework_pairs(rows: Sequence[MetricRow], pairs: Sequence[Pair]) -> None:
    """One pass over the compared rows of a framework dump (``rows[i]`` is the row of
    ``pairs[i]``, the engine's order):

    - a row whose two tensors differ in data-type class (:func:`compare.stats.mismatch_reason`;
      element counts that differ the engine refuses itself) becomes NOT_COMPARABLE with the
      reason, its metrics kept for reference; shapes of the same element count that differ are
      said in the reasons (:func:`compare.stats.shape_note`);
    - any other row whose two sides *recorded* statistics (msprobe's ``dump.json`` in tensor
      mode, a MindSpore ``statistic.csv`` beside the ``.npy`` files) gets the statistics metrics
      too (``MaxRelDiff``, ``L2NormRelDiff`` ...: :func:`compare.stats.recorded_statistics`), so
      a statistics gate checks a tensor dump as it checks a statistics dump. The row stays a
      tensor row (its built-in bounds are the tensor ones); nothing is read.
    """
    if len(rows) != len(pairs):
        raise CompareError(f"internal error: {len(rows)} rows for {len(pairs)} pairs (please report)")
    for row, pair in zip(rows, pairs):
        if row.status is not PairStatus.COMPARED or pair.left is None or pair.right is None:
            continue
        mismatch = mismatch_reason(pair.left, pair.right, tensors=True)
        if mismatch:
            row.status = PairStatus.NOT_COMPARABLE
            row.reasons.append(mismatch)
            continue
        note = shape_note(pair.left, pair.right)
        if note:
            row.reasons.append(note)
        values = recorded_statistics(pair.left, pair.right)
        if values is not None:
            metrics, undefined = statistics_metrics(values)
            row.metrics.update(metrics)
            row.statistics = values
            if undefined:
                row.undefined = row.undefined | undefined


class SameDataError(OptionError):
    """Both sides are the same dump files and a gate was asked for (exit 2 on the command line)."""


def _file_ids(run: Run) -> set[tuple[int, int]]:
    """(device, inode) of every dump file of a run (files that cannot be stat'ed are left out).
    Each distinct path is stat'ed once (the calls of an msprobe run all name one ``dump.json``)."""
    ids = set()
    for path in op_files(run.ops):
        try:
            st = os.stat(path)
        except (OSError, ValueError):  # ValueError: a name no file can have (NUL, a lone surrogate)
            continue
        ids.add((st.st_dev, st.st_ino))
    return ids


def same_data(left: Run, right: Run) -> str | None:
    """What makes the two runs the same dump, or None when they are not.

    Same: both resolve to the same folder (``-l X -r X``, a parent folder whose chosen leaf is
    the other side's folder, a symlinked folder), or both hold exactly the same files (same
    device and inode: hard links or symlinks to the same files). Cost: one ``stat`` per file,
    and only when both sides have as many operators.
    """
    left_dir, right_dir = Path(left.path).resolve(), Path(right.path).resolve()
    if left_dir == right_dir:
        return f"left and right are the same dump ({left_dir})"
    if len(left.ops) != len(right.ops) or not left.ops:
        return None
    ids = _file_ids(left)
    if ids and ids == _file_ids(right):
        return f"left ({left_dir}) and right ({right_dir}) hold the same {len(ids)} dump files"
    return None


def unpaired_rows(rows: Sequence[MetricRow], pairing: Pairing, metrics: Sequence[str]) -> list[MetricRow]:
    """Rows for operators that no row names yet, so that every operator of both sides appears.

    In fusion mode, a left operator that is not in the rule and a golden operator that the rule
    never refers to (neither compared nor listed in a GroundTruth cell) would otherwise be
    mentioned nowhere; each gets one row saying so, after the rule's rows.
    """
    named_left = {name for row in rows for name in row.left_op.split(",")}
    named_right = {name for row in rows for name in row.right_op.split(",")}
    index = max((row.index for row in rows), default=-1) + 1
    extra = []
    for name in pairing.unmatched_left:
        if name not in named_left:
            extra.append(MetricRow(index, None, name, "*", None, metrics={m: None for m in metrics},
                                   reasons=[f"operator '{name}' of the left dump is not in the fusion rule, so it "
                                            "has no known golden counterpart"], status=PairStatus.MISSING_RIGHT))
            index += 1
    for name in pairing.unmatched_right:
        if name not in named_right:
            extra.append(MetricRow(index, None, "*", name, None, metrics={m: None for m in metrics},
                                   reasons=[f"golden operator '{name}' is not referred to by the fusion rule "
                                            "(no NPU operator maps to it)"], status=PairStatus.MISSING_LEFT))
            index += 1
    return extra if pairing.mode is PairingMode.FUSION else []


def _skipped_for(run: Run, names: Sequence[str]) -> list[str]:
    """Skipped files whose name -- or whose reason (e.g. a refused mapping.csv row) -- mentions an op."""
    hints = []
    for path, why in run.skipped:
        file_name = Path(path).name
        if any(len(name) >= 3 and (name in file_name or f"'{name}'" in why or f" {name}." in why) for name in names):
            hints.append(f"file {file_name} was not used: {why}")
    return hints


def explain_missing(rows: Sequence[MetricRow], left: Run, right: Run) -> None:
    """Add to each missing-counterpart row the skipped files that probably belonged to it.

    A dump file with a bad name (or a bad task-type field) is skipped by the loader; the row of
    the operator it was meant for then says which file that was and why it was not used, so the
    user does not have to cross-check the log.
    """
    for row in rows:
        if row.status is PairStatus.MISSING_LEFT:
            names = [n for n in row.left_op.split(",") if n and n != "*"] or [row.right_op]
            row.reasons.extend(_skipped_for(left, names))
        elif row.status is PairStatus.MISSING_RIGHT:
            names = [n for n in row.right_op.split(",") if n and n != "*"]
            row.reasons.extend(_skipped_for(right, names))
