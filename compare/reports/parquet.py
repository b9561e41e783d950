"""``-o result.parquet``: the network rows as a typed table, raw float64s (needs pyarrow).

One row per :class:`MetricRow`, columns in this order:

``Index`` (int64), ``Rank`` / ``Graph`` / ``Iteration`` (int64, null when not set), ``OpType``,
``LeftOp``, ``LeftDataType``, ``RightOp``, ``RightDataType``, ``TensorIndex`` (string, null when
absent), ``Shape`` (list<int64>, null when unknown), ``LeftAddress`` / ``RightAddress`` (int64),
``OpSequence`` (int64), ``ExpectedGap`` (string: why the row is structurally not compared, null
otherwise), one float64 column per selected metric (null = not computed, NaN =
computed and NaN, +-inf kept), for StandardDeviation four float64 columns
``StandardDeviation.LeftMean``, ``.LeftStd``, ``.RightMean``, ``.RightStd``, then, only when a side
is an msprobe tree, msprobe's own columns (docs/msprobe.md): ``Kind`` (``tensor`` / ``statistics`` /
``argument``), ``LeftName`` / ``RightName``, ``LeftDataName`` / ``RightDataName`` (string, null when
none), ``LeftRequiresGrad`` / ``RightRequiresGrad`` / ``RequiresGradConsistent`` (bool, null when not
recorded), ``LeftValue`` / ``RightValue`` (an argument's values as text), ``ArgumentDiff`` (float64),
``Stack`` (the user's ``file:line``) and ``StackFrames`` (list<string>); then ``Status``
(the :class:`PairStatus` value) and ``FailReason`` (list<string>, one item per reason). Text
from file names that are not valid UTF-8 is stored with ``\\xNN`` escapes (:func:`encodable`).

The schema metadata key ``vcompare`` holds ``{"schema_version": 1, "metrics": [...]}`` so
:func:`compare.reports.saved.load_result` restores the metric order. Pandas users: read with
``pandas.read_parquet(path, dtype_backend="pyarrow")`` to keep null (not computed) apart from NaN.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import OptionError
from ..records import ARGUMENT_METRIC, MetricRow
from .cells import encodable
from .files import atomic_write

STD_NAME = "StandardDeviation"
STD_COLUMNS = tuple(f"{STD_NAME}.{part}" for part in ("LeftMean", "LeftStd", "RightMean", "RightStd"))
METADATA_KEY = b"vcompare"
PARQUET_SCHEMA_VERSION = 1
INSTALL_HINT = "pip install 'vcompare[parquet]'"


def require_pyarrow() -> Any:
    """The ``pyarrow`` module, or :class:`OptionError` saying how to install it."""
    try:
        import pyarrow  # here: pyarrow is an optional extra (parquet)
        import pyarrow.parquet  # noqa: F401  (the submodule must import too)
    except ImportError as exc:
        raise OptionError(f"parquet output and input need pyarrow ({exc}); {INSTALL_HINT}") from None
    return pyarrow


def _value_columns(metrics: Sequence[str]) -> list[str]:
    return [m for m in metrics if m != STD_NAME]


def parquet_table(rows: Sequence[MetricRow], metrics: Sequence[str]) -> Any:
    """The rows as a ``pyarrow.Table`` (see the module docstring for the columns)."""
    pa = require_pyarrow()
    integer, text, real = pa.int64(), pa.string(), pa.float64()
    columns: dict[str, tuple[list[Any], Any]] = {
        "Index": ([r.index for r in rows], integer),
        "Rank": ([r.rank for r in rows], integer),
        "Graph": ([r.graph for r in rows], integer),
        "Iteration": ([r.iteration for r in rows], integer),
        "OpType": ([_text(r.op_type) for r in rows], text),
        "LeftOp": ([_text(r.left_op) for r in rows], text),
        "LeftDataType": ([_text(r.left_dtype) for r in rows], text),
        "RightOp": ([_text(r.right_op) for r in rows], text),
        "RightDataType": ([_text(r.right_dtype) for r in rows], text),
        "TensorIndex": ([_text(r.tensor_id) for r in rows], text),
        "Shape": ([None if r.shape is None else [int(d) for d in r.shape] for r in rows], pa.list_(integer)),
        "LeftAddress": ([r.left_address for r in rows], integer),
        "RightAddress": ([r.right_address for r in rows], integer),
        "OpSequence": ([r.op_sequence for r in rows], integer),
        "ExpectedGap": ([_text(r.expected_gap) for r in rows], text),
    }
    for name in _value_columns(metrics):
        columns[name] = ([_float_or_none(r.metrics.get(name)) for r in rows], real)
    if STD_NAME in metrics:
        for i, name in enumerate(STD_COLUMNS):
            columns[name] = ([None if r.std is None else float(r.std[i]) for r in rows], real)
    if any(r.msprobe is not None for r in rows):
        columns.update(_msprobe_columns(pa, rows))
    columns["Status"] = ([r.status.value for r in rows], text)
    columns["FailReason"] = ([[encodable(x) for x in r.reasons] for r in rows], pa.list_(text))
    arrays = {name: pa.array(values, type=kind, from_pandas=False) for name, (values, kind) in columns.items()}
    meta = {"schema_version": PARQUET_SCHEMA_VERSION, "metrics": list(metrics)}
    return pa.table(arrays).replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()})


def _msprobe_columns(pa: Any, rows: Sequence[MetricRow]) -> dict[str, tuple[list[Any], Any]]:
    """msprobe's own columns (module doc), for tables where a side is an msprobe tree."""
    text, flag, real = pa.string(), pa.bool_(), pa.float64()
    cells = [r.msprobe for r in rows]
    arguments = [r.argument for r in rows]
    return {
        "Kind": ([r.kind.value for r in rows], text),
        "LeftName": ([None if c is None else _text(c.left_name) or None for c in cells], text),
        "RightName": ([None if c is None else _text(c.right_name) or None for c in cells], text),
        "LeftDataName": ([None if c is None else _text(c.left_data) or None for c in cells], text),
        "RightDataName": ([None if c is None else _text(c.right_data) or None for c in cells], text),
        "LeftRequiresGrad": ([None if c is None else c.left_grad for c in cells], flag),
        "RightRequiresGrad": ([None if c is None else c.right_grad for c in cells], flag),
        "RequiresGradConsistent": ([None if c is None else c.grad_consistent for c in cells], flag),
        "LeftValue": ([None if a is None else _text(a.left) for a in arguments], text),
        "RightValue": ([None if a is None else _text(a.right) for a in arguments], text),
        ARGUMENT_METRIC: ([_float_or_none(r.metrics.get(ARGUMENT_METRIC)) for r in rows], real),
        "Stack": ([None if c is None else _text(c.source) or None for c in cells], text),
        "StackFrames": ([None if c is None else [encodable(f) for f in c.stack] for c in cells], pa.list_(text)),
    }


def _text(value: str | None) -> str | None:
    """Text as UTF-8 can hold it: names from undecodable file names keep ``\\xNN`` escapes."""
    return None if value is None else encodable(value)


def _float_or_none(value: float | None) -> float | None:
    return None if value is None else float(value)


def write_parquet(rows: Sequence[MetricRow], path: str | os.PathLike[str], metrics: Sequence[str]) -> Path:
    """Write the rows as a parquet file, atomically; :class:`OutputError` when it cannot be."""
    require_pyarrow()
    import pyarrow.parquet as pq  # here: pyarrow is an optional extra (parquet)

    table = parquet_table(rows, metrics)
    return atomic_write(Path(path), lambda handle: pq.write_table(table, handle))
