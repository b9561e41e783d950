"""Overflow reports: the records of an ``vcompare overflow`` analysis and their text / JSON
summary files, and the OverFlow column of the network report.

The analysis records live here (not in :mod:`compare.runs.overflow`, which builds them) because
reports may not import runs; they hold raw numbers and paths, and this module alone turns them
into text.

``overflow_summary_{YYYYmmddHHMMSS}.txt`` is the reference tool's summary, line for line (checked
against its own output on four cases, ``tests/compare/cli/test_overflow_reference.py``): one
block per analysed debug struct, in Opdebug timestamp order::

    =================================================[1]==================================================
    [Conv2D] conv1/Conv2D
     [AIC][TaskId:12][StreamId:3][Status:1]
     [timestamp:1700000000000200]
     Conv2D.conv1_Conv2D.12.3.1700000000000100.input.0.npy
     -[Format: NC1HWC0] [Shape: (1, 1, 4, 4, 16)] [Dtype: float16] [Max: 8.0] [Min: -8.0] [Mean: -0.03125]

1. the separator: 49 ``=``, ``[k]`` (1-based), 50 ``=``;
2. ``[{op_type}] {op_name}``: the linked dump's file-name op type and the op name recorded *inside*
   the dump (the file name's when the dump records none); no line when no dump is linked;
3. one ``[{entry}][TaskId:..][StreamId:..][Status:..]`` line per entry with a non-zero status, in
   struct order (old layout: ``DHA Atomic Add``, ``L2 Atomic Add``, ``AI Core``); a new-layout
   struct whose entries all have status 0 still shows its first entry (:func:`status_entries`);
4. ``[timestamp:..]``: the time stamp of the Opdebug record's file name;
5. each input, then each output of the linked dump: the base name of its ``.npy`` copy, then
   ``-[Format: ..] [Shape: ..] [Dtype: ..] [Max: ..] [Min: ..] [Mean: ..]``.

Lines end with ``\n``; no blank lines. The numbers are those numpy gives in the tensor's own type,
printed as numpy prints them (:class:`NumpyValue`, :func:`value_text`). What the reference does
not show and vcompare adds (docs/differences.md): a struct that cannot be decoded keeps its block,
``[timestamp:..]`` then ``[not decoded: ..]``; a tensor or dump that cannot be read says so on a
line of its own; an empty tensor's statistics read ``NaN``. Why no dump is linked is not in the
text (as the reference): the ``.json`` twin (``link_problem``) and the terminal say it.
``overflow_summary_{ts}.json`` beside it holds the analysis for machines (every decoded field of
every entry, the Opdebug file, the linked dump, the npy paths, float64 statistics).

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

import ml_dtypes  # noqa: F401  (registers bfloat16 and the narrow floats as numpy type names)
import numpy as np

from convert.codecs.opdebug import ADDRESS_FIELDS, OpDebugEntry, OpDebugLayout, OpDebugRecord

from ..records import MetricRow
from .files import atomic_write_text, file_stamp
from .result_json import dumps

#: Left data types whose values can overflow (the others get ``NaN``): the IEEE-like floats and
#: the narrow device floats (docs/dtypes.md; those without Inf/NaN encodings -- fp4, fp6 -- are
#: always ``NO``: a saturated narrow value is indistinguishable from a large one).
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64", "hifloat8", "float8_e5m2", "float8_e4m3fn",
                          "float8_e8m0", "float6_e3m2", "float6_e2m3", "float4_e2m1", "float4_e1m2", "hifloat4"})
YES, NO, NOT_APPLICABLE = "YES", "NO", "NaN"
#: The ``=`` before and after a block's ``[k]`` (the reference's widths).
BAR_BEFORE, BAR_AFTER = "=" * 49, "=" * 50


@dataclass(frozen=True)
class NumpyValue:
    """A statistic as numpy computes it: ``ndarray.max()`` / ``.min()`` / ``.mean()`` of a tensor
    in its own data type, kept as the exact Python value of the numpy scalar (``value``: an
    ``int`` for integer types, a ``bool`` for bool, else a ``float``, which holds any float16 /
    float32 / bfloat16 value exactly) and the scalar's numpy type name (``type_name``).

    numpy decides the type: max and min are in the tensor's type; the mean of a float16 tensor is
    a float16 (summed in float32), of float32 a float32, of an integer or bool tensor a float64.
    """

    value: int | float | bool
    type_name: str


@dataclass(frozen=True)
class ShownStatistics:
    """The max, min and mean the summary text prints (:class:`NumpyValue`)."""

    maximum: NumpyValue
    minimum: NumpyValue
    mean: NumpyValue


@dataclass(frozen=True)
class TensorSummary:
    """One tensor of a linked op dump: where its ``.npy`` copy went and its statistics.

    ``maximum`` / ``minimum`` / ``mean`` are float64 over every element (NaN when one is NaN), what
    the JSON twin holds; ``shown`` the same statistics in the tensor's own type, what the text
    prints. Both None when not computed (an empty tensor, a tensor that could not be read:
    ``problem``). ``npy`` is None when the copy could not be written (``problem`` says why).
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
    shown: ShownStatistics | None = None


@dataclass(frozen=True)
class LinkedDump:
    """The op dump an overflow entry links to: same folder, same task and stream ids (and
    context / thread ids when both sides have them), the earliest by timestamp.

    ``op_type`` / ``op_name`` are the fields of its file name; ``recorded_op_name`` the op name
    stored inside the dump (``conv1/Conv2D`` for ``Conv2D.conv1_Conv2D...``), None when the dump
    could not be read, records none, or is known by converted tensor files only.
    """

    path: Path
    real_name: str
    op_type: str
    op_name: str
    timestamp: int
    tensors: tuple[TensorSummary, ...] = ()
    problem: str | None = None
    recorded_op_name: str | None = None


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


def value_text(value: NumpyValue) -> str:
    """A statistic as the reference prints it: ``str()`` of the numpy scalar.

    The rule, numpy 2's ``str`` of a scalar: integers in decimal, bool ``True`` / ``False``;
    floats as the shortest digits that read back to the same value *in the scalar's own type*,
    positional (trailing ``.0`` kept) when the value is 0 or ``1e-4 <= |x| < 10**p`` with p = 3
    for float16, 6 for float32, 16 for float64, else scientific with at least two exponent
    digits and no trailing zeros (float16 ``65504`` -> ``6.55e+04``, ``2048`` -> ``2.048e+03``;
    float32 ``1e6`` -> ``1e+06``); ``nan``, ``inf``, ``-inf``. (Tensors of an ml_dtypes type --
    bfloat16, fp8, fp6, fp4, e8m0, int4 -- are summarised as float32 / int64: see
    :mod:`compare.runs.overflow`, step 5.) A Python ``float`` would print
    float16 65504 as ``65504.0`` and the float16 mean 0.498 as ``0.498046875``: the type matters.
    """
    return str(np.dtype(value.type_name).type(value.value))


def shape_text(shape: Sequence[int]) -> str:
    """``(1, 3, 4, 4)``; ``(8,)`` for one dimension; ``()`` for a scalar."""
    return str(tuple(int(d) for d in shape))


def status_entries(record: OpDebugRecord) -> tuple[OpDebugEntry, ...]:
    """The entries a block shows a status line for: each with a non-zero status, in struct order
    (old layout: DHA Atomic Add, L2 Atomic Add, AI Core -- the reference's one line per such
    block); a new-layout struct none of whose entries has one shows its first entry (the
    reference shows the one entry it reads whatever its status)."""
    flagged = tuple(entry for entry in record.entries if entry.status)
    if flagged or record.layout is OpDebugLayout.OLD:
        return flagged
    return record.entries[:1]


def _statistics_text(shown: ShownStatistics | None) -> str:
    if shown is None:  # not computed: an empty tensor, a tensor that could not be read
        return f"[Max: {NOT_APPLICABLE}] [Min: {NOT_APPLICABLE}] [Mean: {NOT_APPLICABLE}]"
    return f"[Max: {value_text(shown.maximum)}] [Min: {value_text(shown.minimum)}] [Mean: {value_text(shown.mean)}]"


def _tensor_lines(linked: LinkedDump, tensor: TensorSummary) -> list[str]:
    name = tensor.npy.name if tensor.npy is not None else f"{linked.real_name}.{tensor.kind}.{tensor.index}.npy"
    lines = [f" {name}",
             f" -[Format: {tensor.format}] [Shape: {shape_text(tensor.shape)}] [Dtype: {tensor.dtype}] "
             + _statistics_text(tensor.shown)]
    if tensor.problem is not None:
        lines.append(f"  ({tensor.problem})")
    return lines


def block_lines(k: int, finding: OverflowFinding) -> list[str]:
    """The summary block of one finding (``k``: its 1-based number; layout: module docstring)."""
    lines = [f"{BAR_BEFORE}[{k}]{BAR_AFTER}"]
    linked, record = finding.linked, finding.record
    if linked is not None:
        lines.append(f"[{linked.op_type}] {linked.recorded_op_name or linked.op_name}")
    if record is not None:
        lines += [f" [{e.kind}][TaskId:{e.task_id}][StreamId:{e.stream_id}][Status:{e.status}]"
                  for e in status_entries(record)]
    lines.append(f" [timestamp:{finding.timestamp}]")
    if record is None:
        lines.append(f" [not decoded: {finding.problem}]")
    if linked is None:
        return lines
    if linked.problem is not None:
        lines.append(f" [op dump {linked.path} not read: {linked.problem}]")
    for tensor in linked.tensors:
        lines += _tensor_lines(linked, tensor)
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
    "NumpyValue", "ShownStatistics", "add_overflow_to_document", "block_lines", "finding_document",
    "shape_text", "status_entries", "summary_document", "summary_text", "value_text", "write_overflow_summary",
]
