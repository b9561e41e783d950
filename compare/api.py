"""Whole-network comparison as one call: load both runs, pair them, compare, tabulate.

>>> from compare import compare_network
>>> df = compare_network("dumps/npu", "dumps/caffe", fusion_rule="model.json")  # doctest: +SKIP
>>> df.sort_values("CosineSimilarity").head()                                   # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .engine import EngineOptions, compare_pairs
from .records import MetricRow, Pairing, PairStatus, Run, RunKind

PathLike = str | os.PathLike[str]


@dataclass
class NetworkResult:
    """Everything a network comparison produced (rows in report order)."""

    rows: list[MetricRow]
    metrics: list[str]
    left: Run
    right: Run
    pairing: Pairing
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        """Row counts per status: compared / not comparable / missing on left / missing on right."""
        counts = Counter(row.status for row in self.rows)
        return {status.value: counts.get(status, 0) for status in PairStatus}

    @property
    def has_npy(self) -> tuple[bool, bool]:
        """Whether each side is a folder of .npy files (the msaccucmp layout then drops Address)."""
        return self.left.kind is RunKind.NUMPY, self.right.kind is RunKind.NUMPY


def run_network(
    left: PathLike,
    right: PathLike,
    fusion_rule: PathLike | None = None,
    *,
    algorithms: Sequence[str | int] | str | None = None,
    custom_dir: PathLike | None = None,
    dump_version: int | None = None,
    max_elements: int = 0,
    extra_metrics: Sequence[str] = (),
) -> NetworkResult:
    """Load, pair and compare two dump folders; see :func:`compare_network` for the arguments."""
    from convert.layouts import load_plugins

    from .kernels import resolve_algorithms
    from .loaders import load_run
    from .pairing.match import pair_runs

    metrics = resolve_algorithms(algorithms)
    for name in extra_metrics:
        if name not in metrics:
            metrics.append(name)
    rule = None
    if fusion_rule is not None:
        from .pairing.fusion_rule import load_fusion_rule

        rule = load_fusion_rule(fusion_rule)
    plugins = load_plugins(custom_dir) if custom_dir else None
    left_run = load_run(left, version=dump_version)
    right_run = load_run(right, version=dump_version)
    pairing = pair_runs(left_run, right_run, fusion_rule=rule)
    rows = compare_pairs(pairing.pairs, EngineOptions(algorithms=metrics, plugins=plugins, max_elements=max_elements))
    explain_missing(rows, left_run, right_run)
    notes = [f"left: {n}" for n in left_run.notes] + [f"right: {n}" for n in right_run.notes] + list(pairing.notes)
    if rule is not None:
        notes += [f"fusion rule: {w}" for w in getattr(rule, "warnings", [])]
    return NetworkResult(rows=rows, metrics=metrics, left=left_run, right=right_run, pairing=pairing, notes=notes)


def _skipped_for(run: Run, names: Sequence[str]) -> list[str]:
    hints = []
    for path, why in run.skipped:
        file_name = Path(path).name
        if any(len(name) >= 3 and name in file_name for name in names):
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


def to_dataframe(result: NetworkResult):
    """The report as a pandas DataFrame: the default report's columns, metrics as floats.

    Not-computed metrics are NaN; ``StandardDeviation`` keeps its ``(mean;std),(mean;std)`` text
    and the four numbers are also given as float columns ``LeftMean, LeftStd, RightMean,
    RightStd``; ``Status`` says whether the row was compared (and if not, why in FailReason).
    """
    import pandas as pd

    from .reports.cells import std_cell
    from .reports.network import header

    nan = float("nan")
    records = []
    for row in result.rows:
        rec: dict[str, object] = {
            "Index": row.index,
            "OpType": row.op_type,
            "LeftOp": row.left_op,
            "LeftDataType": row.left_dtype,
            "RightOp": row.right_op,
            "RightDataType": row.right_dtype,
            "TensorIndex": row.tensor_id,
            "Shape": list(row.shape) if (row.shape is not None and row.tensor_id) else None,
        }
        for name in result.metrics:
            if name == "StandardDeviation":
                rec[name] = std_cell(row.std) if row.std is not None else None
            else:
                value = row.metrics.get(name)
                rec[name] = nan if value is None else float(value)
        rec["FailReason"] = "; ".join(row.reasons)
        std = row.std if row.std is not None else (nan, nan, nan, nan)
        rec.update(LeftMean=std[0], LeftStd=std[1], RightMean=std[2], RightStd=std[3], Status=row.status.value)
        records.append(rec)
    columns = header(result.metrics) + ["LeftMean", "LeftStd", "RightMean", "RightStd", "Status"]
    return pd.DataFrame.from_records(records, columns=columns)


def compare_network(
    left: PathLike,
    right: PathLike,
    fusion_rule: PathLike | None = None,
    *,
    algorithms: Sequence[str | int] | str | None = None,
    custom_dir: PathLike | None = None,
    dump_version: int | None = None,
    max_elements: int = 0,
):
    """Compare two dump folders operator by operator and return a pandas DataFrame.

    ``left`` is "my output" (e.g. an Ascend dump folder or any parent of its
    ``time/device/model/model_id/data_index`` tree), ``right`` the ground truth (golden ``.npy``
    folder, or another Ascend dump). ``fusion_rule`` is the ATC om->json file (``-f``).
    ``algorithms``: metric names/indices (default all ten). ``custom_dir``: plugin root holding
    ``format_convert/convert_X_to_Y.py``. ``dump_version``: force 1 (protobuf) or 2 (binary).

    Raises :class:`compare.errors.CompareError` only when the comparison cannot run at all
    (unreadable rule, no valid dump); per-operator problems are rows with a FailReason.
    """
    result = run_network(left, right, fusion_rule, algorithms=algorithms, custom_dir=custom_dir,
                         dump_version=dump_version, max_elements=max_elements)
    return to_dataframe(result)

