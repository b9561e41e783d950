"""Reading a saved parquet result (``-o x.parquet``) back: everything the JSON result keeps, from
typed columns (null = not computed). A column of another type than the writer's (a text metric
column) is refused naming the column, before any row is read; the ``vcompare`` schema metadata
is read by :func:`convert.jsonsafe.load_json`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from convert.jsonsafe import load_json

from ..errors import DumpFormatError
from ..records import MetricRow, RowKind
from ..stats import STAT_METRIC_OF
from .parquet import METADATA_KEY, STD_COLUMNS, require_pyarrow
from .result_json import STD_NAME
from .saved_result import STATUS_OF, SavedKind, SavedResult

#: The type each fixed column of a parquet result must have (module docstring of
#: :mod:`compare.reports.parquet`); metric and StandardDeviation columns are float64 (or any
#: floating type). A column of another type is refused naming it, before any row is read.
_PARQUET_TYPES = {
    **{name: "int" for name in ("Index", "Rank", "Graph", "Iteration", "LeftAddress", "RightAddress", "OpSequence")},
    **{name: "text" for name in ("OpType", "LeftOp", "LeftDataType", "RightOp", "RightDataType", "TensorIndex",
                                 "ExpectedGap", "Status")},
    "Shape": "list<int>", "FailReason": "list<text>",
}
#: Columns that may not hold a null.
_PARQUET_NOT_NULL = ("Index", "LeftOp", "RightOp", "Status")


def _parquet_kind(pa: Any, arrow_type: Any) -> str:
    """``int``, ``float``, ``text``, ``list<...>`` of those, or the arrow type's own name."""
    types = pa.types
    if types.is_integer(arrow_type):
        return "int"
    if types.is_floating(arrow_type):
        return "float"
    if types.is_string(arrow_type) or types.is_large_string(arrow_type):
        return "text"
    if types.is_list(arrow_type) or types.is_large_list(arrow_type):
        return f"list<{_parquet_kind(pa, arrow_type.value_type)}>"
    return str(arrow_type)


def _parquet_metrics(path: Path, meta: bytes) -> list[str]:
    """The ``metrics`` list of the ``vcompare`` schema metadata (a list of names), checked."""
    document = load_json(meta, f"{path} (schema metadata 'vcompare')")
    metrics = document.get("metrics") if isinstance(document, dict) else None
    if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
        raise DumpFormatError(path, "the 'vcompare' schema metadata is not valid (\"metrics\" must be a list of "
                                    "metric names)")
    return metrics


def _check_parquet_columns(path: Path, table: Any, metrics: Sequence[str]) -> None:
    """Every column the reader uses exists, has its type and, where it must, no null."""
    pa = require_pyarrow()
    wanted = dict(_PARQUET_TYPES)
    for name in metrics:
        for column in (STD_COLUMNS if name == STD_NAME else (name,)):
            wanted[column] = "float"
    schema = table.schema
    for name, kind in wanted.items():
        if name not in schema.names:
            raise DumpFormatError(path, f"column '{name}' is missing")
        found = _parquet_kind(pa, schema.field(name).type)
        if found != kind and not (kind == "float" and found == "int"):
            raise DumpFormatError(path, f"column '{name}': {found}, where a vcompare result has {kind}")
    for name in _PARQUET_NOT_NULL:
        if table.column(name).null_count:
            raise DumpFormatError(path, f"column '{name}': {table.column(name).null_count} null value(s)")


def read_parquet_result(path: Path) -> SavedResult:
    """The rows of the parquet result at ``path``; :class:`DumpFormatError` naming the column
    or the row of the first problem (pyarrow must be importable: :func:`require_pyarrow`)."""
    require_pyarrow()
    import pyarrow.parquet as pq  # here: pyarrow is an optional extra (parquet)

    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError family for a bad file
        raise DumpFormatError(path, f"not a readable parquet file ({' '.join(str(exc).split())})") from None
    meta = (table.schema.metadata or {}).get(METADATA_KEY)
    if meta is None:
        raise DumpFormatError(path, "not a vcompare parquet result (no 'vcompare' schema metadata)")
    metrics = _parquet_metrics(path, meta)
    try:
        _check_parquet_columns(path, table, metrics)
        cols = {name: table.column(name).to_pylist() for name in table.column_names}
    except UnicodeDecodeError as exc:  # a column name or a text cell that is not UTF-8
        raise DumpFormatError(path, f"text that is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    # a table of statistics metrics only is a statistics comparison's (the writer has no kind column)
    kind = RowKind.STATISTICS if metrics and all(m in STAT_METRIC_OF for m in metrics) else RowKind.TENSOR
    value_names = [m for m in metrics if m != STD_NAME]
    std_cols = [cols[c] for c in STD_COLUMNS] if STD_NAME in metrics else None
    rows = []
    for i in range(table.num_rows):
        std = None
        if std_cols is not None and std_cols[0][i] is not None:
            if any(c[i] is None for c in std_cols):
                raise DumpFormatError(path, f"row {i}: the four {STD_NAME} columns are not all set")
            lm, ls, rm, rs = (float(c[i]) for c in std_cols)
            std = (lm, ls, rm, rs)
        status = STATUS_OF.get(cols["Status"][i])
        if status is None:
            raise DumpFormatError(path, f"row {i}: unknown Status {cols['Status'][i]!r}")
        shape = cols["Shape"][i]
        if shape is not None and any(d is None for d in shape):
            raise DumpFormatError(path, f"row {i}: column 'Shape': {shape!r} holds a null")
        rows.append(MetricRow(
            index=cols["Index"][i], op_type=cols["OpType"][i], left_op=cols["LeftOp"][i],
            right_op=cols["RightOp"][i], tensor_id=cols["TensorIndex"][i], left_dtype=cols["LeftDataType"][i],
            right_dtype=cols["RightDataType"][i], shape=None if shape is None else tuple(shape),
            metrics={m: _parquet_float(cols[m][i]) for m in value_names}, std=std,
            reasons=[r for r in cols["FailReason"][i] or [] if r is not None],
            left_address=cols["LeftAddress"][i], right_address=cols["RightAddress"][i], status=status,
            op_sequence=cols["OpSequence"][i], rank=cols["Rank"][i], iteration=cols["Iteration"][i],
            graph=cols["Graph"][i], expected_gap=cols["ExpectedGap"][i], kind=kind))
    return SavedResult(path, SavedKind.PARQUET, rows, metrics)


def _parquet_float(value: float | int | None) -> float | None:
    """A metric cell: null stays None (not computed); a whole-number column's value as a float."""
    return None if value is None else float(value)


__all__ = ["read_parquet_result"]
