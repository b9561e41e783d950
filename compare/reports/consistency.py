"""The consistency check's reports: the CSV table, the JSON document and the terminal summary.

**CSV** (``vcompare consistency -o report.csv``): one row per :class:`~compare.consistency.records.ReplicaRow`
(a rank whose replica differs, or a value that could not be checked; ranks that agree have no
row), columns :data:`CSV_HEADER`. Metric cells print the shortest text that reads back as the
same float64 (a relative difference of ``1e-9`` never prints as ``0.000000``); ``NaN`` means not
computed. Text cells follow :mod:`compare.reports.cells` (no formula injection, one line per row).

**JSON** (``--json report.json``): ``schema`` :data:`SCHEMA_ID`, ``version``
:data:`SCHEMA_VERSION`; the tree, the groups, the outcome and exit code, the disagreeing ranks
per group, each part's counts and every row with raw floats (encoded as in
:mod:`compare.reports.result_json`: ``"nan"``, ``"inf"``, ``null`` for not computed). Adding a
key is not a new version.

**Summary** (stderr): what was checked, then for each disagreeing rank its group, how many
tensors differ and the worst ones with their numbers (``repr``, full precision), then the rows
that could not be checked by status, and the outcome line with the exit code.
"""

from __future__ import annotations

import csv
import io
import os
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..consistency.records import ConsistencyResult, PartCheck, RankGroup, ReplicaRow, ReplicaStatus
from .cells import FloatFormat, metric_cell, shape_cell, text_cell
from .files import atomic_write_text
from .result_json import encode_float, write_json

SCHEMA_ID = "vcompare-consistency"
SCHEMA_VERSION = 1
#: The metrics of a differing rank, in column order (compare.consistency.check.CHECK_METRICS).
METRIC_COLUMNS = ("MaxAbsoluteError", "CosineSimilarity", "RelativeEuclideanDistance")
CSV_HEADER = ["Group", "GroupRanks", "Graph", "Iteration", "Rank", "Status", "TensorIndex", "OpType", "Replicated",
              "ReferenceRank", "Holders", "Readable", "Majority", "DataType", "ReferenceDataType", "Shape",
              "ReferenceShape", *METRIC_COLUMNS, "Reason"]
#: Metric cells: the shortest round-trip text.
SHORTEST = FloatFormat(shortest=True)
#: Tensors named per disagreeing rank in the summary (worst RED first); the rest are counted.
SUMMARY_TENSORS = 3


def ranks_text(ranks: Sequence[int]) -> str:
    """``4-7`` for consecutive ranks, ``0,8,16`` otherwise (ascending)."""
    ranks = sorted(ranks)
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ",".join(str(r) for r in ranks)


def _group_text(group: RankGroup) -> str:
    return f"group {group.index} (ranks {ranks_text(group.ranks)})"


def _int_cell(value: int | None) -> str:
    return "" if value is None else str(value)


def csv_text(result: ConsistencyResult) -> str:
    """The CSV report (module doc) as text, ``\\n`` line endings."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    group_ranks = {group.index: ranks_text(group.ranks) for group in result.groups}  # once per group, not per row
    for row in result.rows:
        writer.writerow([
            row.group, group_ranks.get(row.group, ""), _int_cell(row.graph),
            _int_cell(row.iteration), row.rank, row.status.value, text_cell(row.tensor_id), text_cell(row.op_type),
            row.why.value if row.why is not None else "", _int_cell(row.reference_rank),
            row.holders, row.readable, "yes" if row.majority else "no", text_cell(row.dtype),
            text_cell(row.reference_dtype), shape_cell(row.shape), shape_cell(row.reference_shape),
            *(metric_cell(row.metrics.get(name), SHORTEST) for name in METRIC_COLUMNS), text_cell(row.reason),
        ])
    return buffer.getvalue()


def write_consistency_csv(result: ConsistencyResult, path: str | os.PathLike[str]) -> Path:
    """Write the CSV report atomically (:func:`~compare.reports.files.atomic_write_text`)."""
    return atomic_write_text(Path(path), csv_text(result))


def _row_document(row: ReplicaRow) -> dict[str, Any]:
    return {
        "group": row.group,
        "graph": row.graph,
        "iteration": row.iteration,
        "rank": row.rank,
        "status": row.status.value,
        "tensor_id": row.tensor_id,
        "op_type": row.op_type,
        "replicated": row.why.value if row.why is not None else None,
        "reference_rank": row.reference_rank,
        "holders": row.holders,
        "readable": row.readable,
        "majority": row.majority,
        "dtype": row.dtype,
        "reference_dtype": row.reference_dtype,
        "shape": None if row.shape is None else [int(d) for d in row.shape],
        "reference_shape": None if row.reference_shape is None else [int(d) for d in row.reference_shape],
        "metrics": {name: encode_float(value) for name, value in row.metrics.items()},
        "reason": row.reason,
    }


def _part_document(part: PartCheck) -> dict[str, Any]:
    return {"group": part.group.index, "graph": part.graph, "iteration": part.iteration,
            "present": list(part.present), "tensors": part.tensors, "checked": part.checked,
            "within_tolerance": part.within_tolerance, "disagreeing": list(part.disagreeing),
            "rows": len(part.rows), "notes": list(part.notes)}


def consistency_document(result: ConsistencyResult) -> dict[str, Any]:
    """The JSON document (module doc)."""
    return {
        "schema": SCHEMA_ID,
        "version": SCHEMA_VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "tree": os.fsdecode(result.tree),
        "groups_spec": result.groups_spec,
        "groups": [{"group": g.index, "ranks": list(g.ranks)} for g in result.groups],
        "tensors": result.tensors,
        "tolerance": encode_float(result.tolerance),
        "outcome": result.outcome.value,
        "exit_code": result.exit_code,
        "disagreeing": [{"group": group, "ranks": list(ranks)} for group, ranks in result.disagreeing.items()],
        "status_counts": dict(Counter(row.status.value for row in result.rows)),
        "notes": list(result.notes),
        "parts": [_part_document(part) for part in result.parts],
        "rows": [_row_document(row) for row in result.rows],
    }


def write_consistency_json(result: ConsistencyResult, path: str | os.PathLike[str]) -> Path:
    """Write the JSON document atomically."""
    return write_json(consistency_document(result), path)


def _num(value: float | None) -> str:
    return "-" if value is None else repr(float(value))


def _level_text(graph: int | None, iteration: int | None) -> str:
    """``graph G iteration I``, the levels the tree has (empty for neither)."""
    return " ".join(f"{name} {value}" for name, value in (("graph", graph), ("iteration", iteration))
                    if value is not None)


def _worst(rows: Iterable[ReplicaRow]) -> list[ReplicaRow]:
    """Differing rows, the largest RED first (rows without a RED -- shapes differ -- first of all)."""
    def key(row: ReplicaRow) -> tuple[int, float]:
        red = row.metrics.get("RelativeEuclideanDistance")
        if red is None or red != red:
            return (0, 0.0)
        return (1, -float(red))
    return sorted(rows, key=key)


def _blamed(rows: Sequence[ReplicaRow]) -> dict[int, tuple[int, ...]]:
    """Group index -> the ranks blamed: those holding another value than a majority of the
    group's ranks for at least one tensor (the odd ones out), ascending."""
    found: dict[int, set[int]] = {}
    for row in rows:
        if row.status is ReplicaStatus.DIFFERS and row.majority:
            found.setdefault(row.group, set()).add(row.rank)
    return {group: tuple(sorted(ranks)) for group, ranks in sorted(found.items())}


def _suspects(result: ConsistencyResult) -> dict[int, tuple[int, ...]]:
    """Group index -> the ranks among which no value has a majority for some tensor (two replicas
    that differ, every rank different, wrong groups): the ranks read in the parts where that
    happened, none of them blamed over the others, ascending."""
    found: dict[int, set[int]] = {}
    for part in result.parts:
        unsure = [row for row in part.rows if row.status is ReplicaStatus.DIFFERS and not row.majority]
        if unsure:
            ranks = found.setdefault(part.group.index, set())
            ranks.update(part.present)
            ranks.update(rank for row in unsure for rank in (row.rank, row.reference_rank) if rank is not None)
    return {group: tuple(sorted(ranks)) for group, ranks in sorted(found.items())}


def _ranks_words(ranks: Sequence[int]) -> str:
    """``0 and 1``, ``0, 1 and 2``, ``4-7`` (:func:`ranks_text` for a longer run)."""
    ranks = sorted(ranks)
    if 2 <= len(ranks) <= 3:
        return ", ".join(str(r) for r in ranks[:-1]) + f" and {ranks[-1]}"
    return ranks_text(ranks)


def _worst_lines(rows: Sequence[ReplicaRow], *, named: bool = False) -> list[str]:
    """The :data:`SUMMARY_TENSORS` worst differing rows (``named``: each with its rank), then how many more."""
    worst = _worst(rows)
    lines = [_differs_line(row, named=named) for row in worst[:SUMMARY_TENSORS]]
    if len(worst) > SUMMARY_TENSORS:
        lines.append(f"    ... and {len(worst) - SUMMARY_TENSORS} more (see the report)")
    return lines


def _differs_line(row: ReplicaRow, *, named: bool = False) -> str:
    numbers = ", ".join(f"{name} {_num(row.metrics.get(name))}" for name in METRIC_COLUMNS if name in row.metrics)
    held = f"held by {row.holders} of {row.readable}" + ("" if row.majority else ", no majority")
    where = _level_text(row.graph, row.iteration)
    text = (f"    {f'rank {row.rank}: ' if named else ''}{row.tensor_id}{f' ({where})' if where else ''}: "
            f"{numbers or 'not compared'} vs rank "
            f"{row.reference_rank} ({held})")
    if row.dtype != row.reference_dtype:
        text += f"; dtype {row.dtype} vs {row.reference_dtype}"
    if row.shape != row.reference_shape:
        text += f"; shape {shape_cell(row.shape)} vs {shape_cell(row.reference_shape)}"
    return text


def summary_lines(result: ConsistencyResult, *, quiet: bool = False) -> list[str]:
    """The terminal summary (module doc); ``quiet``: the outcome line and the disagreeing ranks only."""
    lines: list[str] = []
    parts = result.parts
    rows = result.rows
    tensors = sum(part.tensors for part in parts)
    checked = sum(part.checked for part in parts)
    within = sum(part.within_tolerance for part in parts)
    where = sorted({(p.graph, p.iteration) for p in parts},
                   key=lambda k: (-1 if k[0] is None else k[0], -1 if k[1] is None else k[1]))
    where_text = ", ".join(_level_text(g, i) for g, i in where) or "no part"
    if not quiet:
        rule = f"tensors matching {result.tensors!r}" if result.tensors else "parameters and collective outputs"
        exact = "bitwise equality" if result.tolerance is None else f"RED <= {result.tolerance!r}"
        lines.append(f"consistency of {os.fsdecode(result.tree)}: {len(result.groups)} group(s) from "
                     f"{result.groups_spec}, {where_text}; {rule}, {exact}")
        lines.append(f"checked {tensors} replicated tensor(s) of the groups, {checked} rank value(s)"
                     + (f", {within} within the tolerance" if within else ""))
    groups = {group.index: group for group in result.groups}
    blamed = _blamed(rows)
    for group_index, ranks in blamed.items():
        group = groups[group_index]
        for rank in ranks:
            differing = [r for r in rows if r.group == group_index and r.rank == rank
                         and r.status is ReplicaStatus.DIFFERS and r.majority]
            group_tensors = sum(p.tensors for p in parts if p.group.index == group_index)
            lines.append(f"rank {rank} disagrees with {_group_text(group)}: {len(differing)} of the {group_tensors} "
                         "replicated tensor(s) checked differ")
            if not quiet:
                lines.extend(_worst_lines(differing))
    suspects = _suspects(result)
    for group_index, ranks in suspects.items():
        unsure = [row for row in rows if row.group == group_index and row.status is ReplicaStatus.DIFFERS
                  and not row.majority]
        count = len({row.tensor_id for row in unsure})
        lines.append(f"{_group_text(groups[group_index])}: no value of {count} tensor(s) is held by a majority of "
                     f"the ranks (ranks {_ranks_words(ranks)} hold different values), so which rank is faulty "
                     f"cannot be told and none is blamed (are the groups right? {result.groups_spec})")
        if not quiet:
            lines.extend(_worst_lines(unsure, named=True))
    unchecked = Counter(row.status.value for row in rows if row.status is not ReplicaStatus.DIFFERS)
    if unchecked:
        by_status = ", ".join(f"{count} {status}" for status, count in sorted(unchecked.items()))
        lines.append(f"not checked: {by_status} (rows of the report, each with its reason)")
        if not quiet:
            for row in [r for r in rows if r.status is not ReplicaStatus.DIFFERS][:SUMMARY_TENSORS]:
                what = row.tensor_id or "its dump folder"
                lines.append(f"    rank {row.rank}, {what}: {row.status.value}: {row.reason}")
    culprits = "; ".join([f"rank{'s' if len(ranks) > 1 else ''} {ranks_text(ranks)} in {_group_text(groups[g])}"
                          for g, ranks in blamed.items()]
                         + [f"{_group_text(groups[g])}: ranks {_ranks_words(ranks)} differ, no majority, none blamed"
                            for g, ranks in suspects.items()])
    outcome = result.outcome.value.upper()
    lines.append(f"consistency: {outcome}" + (f": {culprits}" if culprits else "") + f" (exit {result.exit_code})")
    return lines


__all__ = ["CSV_HEADER", "METRIC_COLUMNS", "SCHEMA_ID", "SCHEMA_VERSION", "consistency_document", "csv_text",
           "ranks_text", "summary_lines", "write_consistency_csv", "write_consistency_json"]
