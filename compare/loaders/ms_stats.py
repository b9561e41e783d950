"""Statistics dumps of MindSpore and TF-NPU runs (``statistic.csv``, GE stats CSVs) joined to a run:
tensors with recorded statistics, and statistics-only operators (no tensor data was saved)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from convert.names.keys import name_key
from convert.names.mindspore import ms_format, scope_name

from ..records import OpDump, Run, TensorKind, TensorRef
from .stats_csv import StatRecord, read_stats_csv, refused_rows_note


def _stats_ref(name: str, record: StatRecord, format_default: str) -> TensorRef:
    """A tensor of statistics only (``reader`` None) from one statistics record."""
    return TensorRef(
        op_name=name, kind=record.kind, index=record.index, dtype=record.dtype or "unknown",
        format=ms_format(record.format) if record.format else format_default, shape=record.shape,
        path=record.path, nbytes=record.data_size or 0, reader=None, stats=dict(record.stats),
        stats_source=f"{record.path.name} row {record.line}")


def _latest_records(records: list[StatRecord], key) -> tuple[dict[tuple[str, TensorKind, int], StatRecord], int]:
    """One record per tensor ``(op name, kind, index)``: the latest timestamp wins (the last row
    on a tie), as with dump files. Returns them and how many earlier rows were superseded."""
    latest: dict[tuple[str, TensorKind, int], StatRecord] = {}
    superseded = 0
    for record in records:
        slot = (key(record.op_name), record.kind, record.index)
        previous = latest.get(slot)
        if previous is not None:
            superseded += 1
            if record.timestamp < previous.timestamp:
                continue
        latest[slot] = record
    return latest, superseded


def stats_only_ops(records: list[StatRecord], *, key=scope_name, format_default: str = "ND") -> dict[str, OpDump]:
    """Operators made of statistics records only (no tensor data; ``reader`` None).

    One tensor per ``(op, kind, index)``, the latest row winning; an op's ``timestamp`` is the
    earliest of its rows (its first dump).
    """
    latest, _ = _latest_records(records, key)
    grouped: dict[str, list[StatRecord]] = {}
    for (name, _, _), record in latest.items():
        grouped.setdefault(name, []).append(record)
    ops: dict[str, OpDump] = {}
    for name in sorted(grouped):
        ops[name] = _stats_op(name, grouped[name], format_default)
    return ops


def _stats_op(name: str, records: list[StatRecord], format_default: str, base: OpDump | None = None) -> OpDump:
    """``base`` (or a new op) with a statistics-only tensor added for each record."""
    refs: dict[TensorKind, list[TensorRef]] = {TensorKind.INPUT: [], TensorKind.OUTPUT: []}
    if base is not None:
        for kind in refs:
            refs[kind].extend(base.tensors(kind))
    stamps = [r.timestamp for r in records if r.timestamp > 0]
    if base is not None and base.timestamp > 0:
        stamps.append(base.timestamp)
    paths = tuple(dict.fromkeys(r.path for r in records))
    for record in records:
        refs[record.kind].append(_stats_ref(name, record, format_default))
    inputs = tuple(sorted(refs[TensorKind.INPUT], key=lambda r: r.index))
    outputs = tuple(sorted(refs[TensorKind.OUTPUT], key=lambda r: r.index))
    if base is not None:
        return OpDump(name=base.name, op_type=base.op_type, path=base.path, files=base.files + paths, inputs=inputs,
                      outputs=outputs, error=base.error, timestamp=min(stamps, default=0))
    return OpDump(name=name, op_type=records[0].op_type, path=paths[0], files=paths, inputs=inputs, outputs=outputs,
                  timestamp=min(stamps, default=0))


@dataclass(frozen=True)
class StatsMerge:
    """Where the rows of a run's statistics files went (each row counted once):
    ``attached`` gave a tensor file its statistics, ``stats_only`` became a tensor without data,
    ``superseded`` are earlier rows of a tensor that has a later one (an op run several times)."""

    rows: int
    attached: int
    stats_only: int
    superseded: int
    files: int

    def note(self, source: str) -> str:
        """The note for ``run.notes`` (``source`` names the statistics file)."""
        if self.stats_only and not self.attached and not self.files:
            text = f"statistics only: {self.stats_only} tensor(s) from {source} (no .npy data)"
        else:
            text = (f"{source}: {self.rows} row(s): {self.attached} gave a tensor file its statistics, "
                    f"{self.stats_only} are tensors with statistics only (no tensor file)")
        if self.superseded:
            text += (f"; {self.superseded} earlier row(s) of tensors dumped again later were superseded "
                     "(the latest row of each tensor is used)")
        if self.stats_only and self.files:
            text += (f"; as {self.stats_only} tensor(s) have statistics and no data, this side is compared by "
                     f"statistics: its {self.files} tensor file(s) give statistics computed from their data "
                     "(or their statistic.csv row)")
        return text


def merge_stats(run: Run, records: list[StatRecord], *, key=scope_name, format_default: str = "ND") -> StatsMerge:
    """Put every statistics record into ``run`` (nothing is left out; see :class:`StatsMerge`).

    The latest record of each tensor is used. A tensor of the run with that op name (exact, else
    the normalised name when it names one op) and kind and index gets the statistics (a
    :class:`TensorRef` keeping its reader); any other record becomes a statistics-only
    tensor (``reader`` None) of its op, which is created when the run has no file of it. When
    any tensor has statistics only, ``run.stats_only`` is set: the comparison is then by
    statistics (:mod:`compare.stats`), which computes the statistics of the tensors with data.
    """
    files = sum(len(op.inputs) + len(op.outputs) for op in run.ops.values())
    latest, superseded = _latest_records(records, key)
    by_key: dict[str, list[str]] = {}
    for name in run.ops:
        by_key.setdefault(name_key(name), []).append(name)
    attach: dict[str, dict[tuple[TensorKind, int], StatRecord]] = {}
    extra: dict[str, list[StatRecord]] = {}
    for (name, kind, index), record in latest.items():
        target = name if name in run.ops else None
        if target is None and len(by_key.get(name_key(name), ())) == 1:
            target = by_key[name_key(name)][0]
        if target is not None and run.ops[target].tensor(kind, index) is not None:
            attach.setdefault(target, {})[(kind, index)] = record
        else:
            extra.setdefault(target or name, []).append(record)
    for name, found in attach.items():
        run.ops[name] = _with_stats(run.ops[name], found)
    for name in sorted(extra):
        run.ops[name] = _stats_op(name, extra[name], format_default, base=run.ops.get(name))
    merge = StatsMerge(rows=len(records), attached=sum(len(v) for v in attach.values()),
                       stats_only=sum(len(v) for v in extra.values()), superseded=superseded, files=files)
    if merge.stats_only:
        run.stats_only = True
    return merge


def _with_stats(op: OpDump, found: dict[tuple[TensorKind, int], StatRecord]) -> OpDump:
    """``op`` with the tensors in ``found`` given their recorded statistics (reader kept)."""
    new: dict[TensorKind, list[TensorRef]] = {TensorKind.INPUT: [], TensorKind.OUTPUT: []}
    for kind in new:
        for ref in op.tensors(kind):
            record = found.get((kind, ref.index))
            if record is None:
                new[kind].append(ref)
                continue
            new[kind].append(replace(ref, stats=dict(record.stats),
                                            stats_source=f"{record.path.name} row {record.line}"))
    return OpDump(name=op.name, op_type=op.op_type, path=op.path, files=op.files, inputs=tuple(new[TensorKind.INPUT]),
                  outputs=tuple(new[TensorKind.OUTPUT]), error=op.error, timestamp=op.timestamp)


def merge_stats_files(run: Run, paths: list[Path]) -> None:
    """Read ``statistic.csv`` files into ``run`` (:func:`merge_stats`), with a note saying where
    every row went and one naming the refused rows (:func:`~compare.loaders.stats_csv.refused_rows_note`)."""

    parsed = [read_stats_csv(path) for path in paths]
    records = [record for item in parsed for record in item.records]
    for item in parsed:
        run.skipped.extend(item.skipped)
    if records:
        run.notes.append(merge_stats(run, records).note(str(paths[0]) if len(paths) == 1 else "statistic.csv"))
    refused = refused_rows_note(parsed)
    if refused:
        run.notes.append(f"statistics rows not used: {refused}")
