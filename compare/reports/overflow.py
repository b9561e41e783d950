"""Overflow reports: the records of an ``vcompare overflow`` analysis and their text / JSON
summary files, and the OverFlow column of the network report.

The analysis records live here (not in :mod:`compare.runs.overflow`, which builds them) because
reports may not import runs; they hold raw numbers and paths, and this module alone turns them
into text.

``overflow_summary_{YYYYmmddHHMMSS}.txt`` -- one block per decoded debug struct (file order =
Opdebug timestamp order), each block::

    ======================================[1]======================================
    [Conv2D] conv1
     [AI Core][TaskId:3][StreamId:1][Status:4]
     [timestamp:1700000000000100]
     input.0: /out/Conv2D.conv1.3.1.1700000000000100.input.0.npy
     -[Format: NCHW] [Shape: (1, 3, 4, 4)] [Dtype: float16] [Max: 65504.000000] [Min: -1.000000] [Mean: 2.500000]
     output.0: ...

then each output. Numbers print ``%.6f`` (``nan``, ``inf``, ``-inf`` as such; ``NaN`` for a
statistic that could not be computed, e.g. of an empty tensor). An Opdebug file that cannot be
decoded, or a struct without a linked op dump, still gets its block: the op line reads
``[?] ?`` and the next lines say why. The ``timestamp`` is the linked op dump's (the Opdebug
file's when none is linked). ``overflow_summary_{ts}.json`` beside it holds the same, for machines
(every decoded field of every entry, the Opdebug file, the linked dump, the npy files).

OverFlow column (``--overflow``): see :class:`OverflowColumn`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from convert.codecs.opdebug import ADDRESS_FIELDS, OpDebugEntry, OpDebugRecord

from ..records import MetricRow
from .files import atomic_write_text, file_stamp
from .result_json import dumps

#: Left data types whose values can overflow (the others get ``NaN``): the IEEE-like floats and
#: the narrow device floats (docs/dtypes.md; those without Inf/NaN encodings -- fp4, fp6 -- are
#: always ``NO``: a saturated narrow value is indistinguishable from a large one).
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64", "hifloat8", "float8_e5m2", "float8_e4m3fn",
                          "float8_e8m0", "float6_e3m2", "float6_e2m3", "float4_e2m1", "float4_e1m2", "hifloat4"})
YES, NO, NOT_APPLICABLE = "YES", "NO", "NaN"
SEPARATOR_WIDTH = 38


@dataclass(frozen=True)
class TensorSummary:
    """One tensor of a linked op dump: where its ``.npy`` copy went and its statistics.

    ``maximum`` / ``minimum`` / ``mean`` are float64 over every element (NaN when one is NaN);
    None when not computed (an empty tensor, a tensor that could not be read: ``problem``).
    ``npy`` is None when the copy could not be written (``problem`` says why).
    """

    kind: str
    index: int
    format: str
    shape: tuple[int, ...]
    dtype: str
    npy: Path | None
    maximum: float | None = None
    minimum: float | None = None
    mean: float | None = None
    problem: str | None = None


@dataclass(frozen=True)
class LinkedDump:
    """The op dump an overflow entry links to: same folder, same task and stream ids (and
    context / thread ids when both sides have them), the earliest by timestamp."""

    path: Path
    real_name: str
    op_type: str
    op_name: str
    timestamp: int
    tensors: tuple[TensorSummary, ...] = ()
    problem: str | None = None


@dataclass(frozen=True)
class OverflowFinding:
    """One block of the summary: a debug struct (output ``output_index`` of the Opdebug file
    ``source``) with the op dump it links to.

    ``problem`` says why the file or struct could not be decoded (then ``record`` is None);
    ``link_problem`` why no op dump is linked (then ``linked`` is None).
    """

    source: Path
    real_name: str
    timestamp: int
    output_index: int | None
    record: OpDebugRecord | None = None
    problem: str | None = None
    linked: LinkedDump | None = None
    link_problem: str | None = None

    @property
    def entry(self) -> OpDebugEntry | None:
        """The entry that reports the overflow (:attr:`OpDebugRecord.primary`)."""
        return None if self.record is None else self.record.primary


@dataclass
class OverflowAnalysis:
    """An ``vcompare overflow`` run: the Opdebug files found under ``root`` (``found``), the
    first ``selected`` of them by timestamp analysed into ``findings``; ``skipped``: files
    named like overflow records that are not (``(path, reason)``); ``notes``: what the user should
    know (depth limit, mapping.csv problems)."""

    root: Path
    found: int
    selected: int
    findings: list[OverflowFinding] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def undecodable(self) -> int:
        """Findings whose Opdebug file or struct could not be decoded."""
        return sum(1 for f in self.findings if f.problem is not None)


# --------------------------------------------------------------------------- summary text / JSON


def stat_text(value: float | None) -> str:
    """``%.6f``; ``nan`` / ``inf`` / ``-inf`` as such; ``NaN`` when not computed."""
    if value is None:
        return NOT_APPLICABLE
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.6f}"


def shape_text(shape: Sequence[int]) -> str:
    """``(1, 3, 4, 4)``; ``(8,)`` for one dimension; ``()`` for a scalar."""
    return str(tuple(int(d) for d in shape))


def _tensor_lines(tensor: TensorSummary) -> list[str]:
    where = str(tensor.npy) if tensor.npy is not None else "(no .npy written)"
    lines = [f" {tensor.kind}.{tensor.index}: {where}",
             f" -[Format: {tensor.format}] [Shape: {shape_text(tensor.shape)}] [Dtype: {tensor.dtype}] "
             f"[Max: {stat_text(tensor.maximum)}] [Min: {stat_text(tensor.minimum)}] [Mean: {stat_text(tensor.mean)}]"]
    if tensor.problem is not None:
        lines.append(f"  ({tensor.problem})")
    return lines


def block_lines(k: int, finding: OverflowFinding) -> list[str]:
    """The summary block of one finding (``k``: its 1-based number)."""
    bar = "=" * SEPARATOR_WIDTH
    lines = [f"{bar}[{k}]{bar}"]
    linked = finding.linked
    lines.append(f"[{linked.op_type}] {linked.op_name}" if linked is not None else "[?] ?")
    entry = finding.entry
    if entry is None:
        lines.append(f" [Opdebug file: {finding.source}]")
        lines.append(f" [not decoded: {finding.problem}]")
        return lines
    lines.append(f" [{entry.kind}][TaskId:{entry.task_id}][StreamId:{entry.stream_id}][Status:{entry.status}]")
    lines.append(f" [timestamp:{linked.timestamp if linked is not None else finding.timestamp}]")
    if linked is None:
        lines.append(f" [no linked op dump: {finding.link_problem}]")
        return lines
    if linked.problem is not None:
        lines.append(f" [op dump {linked.path} not read: {linked.problem}]")
    for tensor in linked.tensors:
        lines += _tensor_lines(tensor)
    return lines


def summary_text(analysis: OverflowAnalysis) -> str:
    """The whole ``overflow_summary_{ts}.txt``."""
    if not analysis.findings:
        return f"no overflow record (Opdebug.Node_OpDebug.*) under {analysis.root}: no overflow was recorded\n"
    lines: list[str] = []
    for k, finding in enumerate(analysis.findings, start=1):
        lines += block_lines(k, finding)
    return "\n".join(lines) + "\n"


def _number(value: float | None) -> float | str | None:
    if value is None or math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def _entry_document(entry: OpDebugEntry) -> dict[str, Any]:
    fields = {f.name: (hex(f.value) if f.name in ADDRESS_FIELDS else f.value) for f in entry.fields}
    return {"kind": entry.kind, "fields": fields}


def _tensor_document(t: TensorSummary) -> dict[str, Any]:
    return {"kind": t.kind, "index": t.index, "format": t.format, "shape": list(t.shape), "dtype": t.dtype,
            "npy": None if t.npy is None else str(t.npy), "max": _number(t.maximum), "min": _number(t.minimum),
            "mean": _number(t.mean), "problem": t.problem}


def finding_document(finding: OverflowFinding) -> dict[str, Any]:
    """One finding as JSON-ready data."""
    record, linked = finding.record, finding.linked
    return {
        "opdebug_file": str(finding.source),
        "opdebug_name": finding.real_name,
        "opdebug_timestamp": finding.timestamp,
        "output_index": finding.output_index,
        "problem": finding.problem,
        "layout": None if record is None else record.layout.value,
        "version": None if record is None else record.version,
        "notes": [] if record is None else list(record.notes),
        "entries": [] if record is None else [_entry_document(e) for e in record.entries],
        "primary": None if finding.entry is None else finding.entry.kind,
        "linked_dump": None if linked is None else {
            "path": str(linked.path), "name": linked.real_name, "op_type": linked.op_type, "op_name": linked.op_name,
            "timestamp": linked.timestamp, "problem": linked.problem,
            "tensors": [_tensor_document(t) for t in linked.tensors]},
        "link_problem": finding.link_problem,
    }


def summary_document(analysis: OverflowAnalysis) -> dict[str, Any]:
    """``overflow_summary_{ts}.json``: the analysis for machines."""
    return {
        "root": str(analysis.root),
        "opdebug_files_found": analysis.found,
        "opdebug_files_analysed": analysis.selected,
        "findings": [finding_document(f) for f in analysis.findings],
        "skipped": [{"path": str(p), "reason": r} for p, r in analysis.skipped],
        "notes": list(analysis.notes),
    }


def write_overflow_summary(analysis: OverflowAnalysis, out_dir: str | os.PathLike[str], *,
                           now: time.struct_time | None = None) -> tuple[Path, Path]:
    """Write ``overflow_summary_{YYYYmmddHHMMSS}.txt`` and ``.json`` (local time) in ``out_dir``;
    return both paths. Raises :class:`~compare.errors.OutputError` when one cannot be written."""
    stamp = file_stamp(now)
    folder = Path(out_dir)
    txt = atomic_write_text(folder / f"overflow_summary_{stamp}.txt", summary_text(analysis))
    doc = atomic_write_text(folder / f"overflow_summary_{stamp}.json", dumps(summary_document(analysis)))
    return txt, doc


# --------------------------------------------------------------------------- the OverFlow column


@dataclass(frozen=True)
class OverflowColumn:
    """The OverFlow cell of each network-report row (``--overflow`` / ``-overflow_detection``).

    - ``YES`` for a row of an operator an Opdebug file of the left dump folder links to
      (``linked``: ``(rank, iteration, left op)``; rank and iteration None for a single
      comparison);
    - otherwise, for a compared row whose left tensor is floating point (:data:`FLOAT_DTYPES`):
      ``YES`` when the kernel pass counted an infinite or NaN element, or (float16) an element of
      magnitude 65504, among the left's compared elements (:attr:`MetricRow.left_counts`), else
      ``NO``;
    - ``NaN``: other data types, and rows that were not compared (no counts).
    """

    linked: frozenset[tuple[int | None, int | None, str]] = frozenset()

    def cell(self, row: MetricRow) -> str:
        """The OverFlow cell of ``row``."""
        if (row.rank, row.iteration, row.left_op) in self.linked:
            return YES
        counts = row.left_counts
        if counts is None or row.left_dtype not in FLOAT_DTYPES:
            return NOT_APPLICABLE
        return YES if counts.inf or counts.nan or counts.saturated else NO

    def cells(self, rows: Sequence[MetricRow]) -> list[str]:
        return [self.cell(row) for row in rows]


def add_overflow_to_document(document: Mapping[str, Any], column: OverflowColumn,
                             rows: Sequence[MetricRow]) -> dict[str, Any]:
    """The JSON result with an ``overflow`` key in each row (the rows in document order)."""
    out = dict(document)
    out["rows"] = [{**doc, "overflow": column.cell(row)} for doc, row in zip(document.get("rows", []), rows)]
    return out


__all__ = [
    "FLOAT_DTYPES", "LinkedDump", "OverflowAnalysis", "OverflowColumn", "OverflowFinding", "TensorSummary",
    "add_overflow_to_document", "block_lines", "finding_document", "stat_text", "summary_document", "summary_text",
    "write_overflow_summary",
]
