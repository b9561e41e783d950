"""Statistics CSV files written instead of (or beside) tensor data.

Two producers, one reader:

* **MindSpore** ``statistic.csv`` (``saved_data`` ``statistic`` / ``full``), one per iteration
  folder, one row per tensor. Columns: ``Op Type, Op Name, Task ID, Stream ID, Timestamp, IO,
  Slot, Data Size, Data Type, Shape`` followed by the configured statistics (``Max Value, Min
  Value, Avg Value, L2Norm Value, Count, Negative Zero Count, Positive Zero Count, NaN Count,
  Negative Inf Count, Positive Inf Count, Zero Count, MD5`` ...). ``Shape`` is written
  ``"(d0,d1,...)"``; ``IO`` is ``input`` / ``output``; max/min/avg are ``null`` when the tensor
  holds no finite value.
* **Ascend GE** ``dump_data=stats`` (TensorFlow NPU, GE dumps): one file per operator named like
  the dump file plus ``.csv`` (``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}.csv``)
  with columns ``Input/Output, Index, Data Size, Data Type, Format, Shape, Max Value, Min Value,
  Avg Value, Count, Nan Count, Negative Inf Count, Positive Inf Count``; ``Shape`` is written
  ``d0xd1x...`` and data types as ``DT_FLOAT``. An aggregated form with the operator columns
  first (``Op Type, Op Name, Task ID, Stream ID, Timestamp, Input/Output, Slot, ...``) is read
  too.

Column names are matched case-insensitively, a trailing ``Value`` ignored. Statistic names are
canonicalised (:data:`STAT_COLUMNS`): ``max``, ``min``, ``avg``, ``l2norm``, ``count``,
``negative_count`` (MindSpore's "Negative Zero Count": elements below zero), ``positive_count``,
``nan_count``, ``neg_inf_count``, ``pos_inf_count``, ``zero_count``, ``md5``, ``sha1``.
Unknown columns are kept under their lower-cased name.

Trailing empty cells: MindSpore's writer ends every data row with a separator, so a row holds
one empty cell more than the header (``...,2,2,2,``); empty cells after the last header column
(and empty header cells at the end of the header) are ignored. A row with **more** non-empty
cells than the header, or with fewer cells, is refused.

Edge-case policy: a row that cannot be read (wrong cell count, bad IO/slot) is returned in
``skipped`` with ``"row N: why"`` and counted in :attr:`StatsFile.rows`;
:func:`refused_rows_note` gives the one-line summary a loader puts in ``run.notes``. ``null`` /
empty / ``-`` cells are ``None`` (not recorded).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

from convert.codecs.dtypes import DataType, dtype_name
from convert.names.mindspore import ms_dtype

from ..records import TensorKind

#: Header text (lower case, ``value`` suffix dropped) -> canonical statistic name.
STAT_COLUMNS: dict[str, str] = {
    "max": "max",
    "min": "min",
    "avg": "avg",
    "mean": "avg",
    "l2norm": "l2norm",
    "l2 norm": "l2norm",
    "l2": "l2norm",
    "norm": "l2norm",
    "count": "count",
    "negative zero count": "negative_count",
    "positive zero count": "positive_count",
    "negative count": "negative_count",
    "positive count": "positive_count",
    "nan count": "nan_count",
    "negative inf count": "neg_inf_count",
    "positive inf count": "pos_inf_count",
    "zero count": "zero_count",
    "md5": "md5",
    "sha1": "sha1",
}

#: Statistics that are text (compared for equality only).
TEXT_STATS = frozenset({"md5", "sha1"})

_META = {
    "op type": "op_type",
    "op name": "op_name",
    "task id": "task_id",
    "stream id": "stream_id",
    "timestamp": "timestamp",
    "io": "io",
    "input/output": "io",
    "slot": "index",
    "index": "index",
    "data size": "data_size",
    "data type": "data_type",
    "format": "format",
    "shape": "shape",
}

_NULLS = {"", "null", "none", "-", "nan(null)"}


@dataclass
class StatRecord:
    """Statistics of one tensor, from one row of a statistics CSV.

    ``op_name`` is as written in the file (the caller turns it into the run's op name);
    ``dtype`` is a numpy-style name when the type is known, else the text as written.
    """

    op_type: str | None
    op_name: str
    kind: TensorKind
    index: int
    dtype: str | None
    format: str | None
    shape: tuple[int, ...]
    stats: dict[str, float | str | None]
    path: Path
    line: int
    data_size: int | None = None
    task_id: int | None = None
    stream_id: int | None = None
    timestamp: int = 0


@dataclass
class StatsFile:
    """The records of one CSV and the rows that could not be read.

    ``rows`` counts the non-blank data rows (read or refused); ``refused_lines`` are the line
    numbers of the refused ones (their reasons are in ``skipped``).
    """

    path: Path
    records: list[StatRecord] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    rows: int = 0
    refused_lines: list[int] = field(default_factory=list)


def refused_rows_note(files: list[StatsFile], limit: int = 5) -> str | None:
    """``"{file}: N of M statistics row(s) refused (rows a, b, c ...): why"`` for every file
    with refused rows (or that could not be read at all), joined by ``"; "``; ``None`` when
    every row was read."""
    parts = []
    for item in files:
        if not item.skipped:
            continue
        if not item.refused_lines:
            unused = f", its {item.rows} row(s) unused" if item.rows else ""
            parts.append(f"{item.path}: not read ({item.skipped[0][1]}){unused}")
            continue
        lines = ", ".join(str(n) for n in item.refused_lines[:limit])
        more = f" and {len(item.refused_lines) - limit} more" if len(item.refused_lines) > limit else ""
        parts.append(f"{item.path}: {len(item.refused_lines)} of {item.rows} statistics row(s) refused "
                     f"(rows {lines}{more}; first: {item.skipped[0][1]})")
    return "; ".join(parts) if parts else None


def column_key(name: str) -> str:
    """Canonical key of a header cell: a metadata key, a statistic name, or the lower-cased text."""
    text = " ".join(name.strip().lower().split())
    if text in _META:
        return _META[text]
    if text.endswith(" value"):
        text = text[: -len(" value")]
    return STAT_COLUMNS.get(text, text)


def parse_shape(text: str) -> tuple[int, ...]:
    """``"(1,3,4)"``, ``"[1, 3, 4]"``, ``"1x3x4"`` or ``""`` (scalar) -> a tuple of ints."""
    cleaned = text.strip().strip("\"'").strip("()[]").strip()
    if not cleaned:
        return ()
    parts = re.split(r"[x,\s]+", cleaned)
    return tuple(int(p) for p in parts if p)


def parse_stat_value(key: str, text: str) -> float | str | None:
    """A statistic cell: ``None`` for null/empty, text for md5/sha1, else a float."""
    value = text.strip()
    if value.lower() in _NULLS:
        return None
    if key in TEXT_STATS:
        return value
    try:
        return float(value)
    except ValueError:
        return value


def normalise_dtype(text: str | None) -> str | None:
    """``DT_FLOAT`` / ``float32`` / ``Float32`` / ``kNumberTypeFloat32`` -> ``float32``."""
    if text is None or not text.strip():
        return None
    name = text.strip()
    if name.upper().startswith("DT_"):
        try:
            return dtype_name(int(DataType[name.upper()]))
        except KeyError:
            return name

    found = ms_dtype(name)
    return found if found is not None else name


def _kind(text: str) -> TensorKind | None:
    value = text.strip().lower()
    if value in ("input", "in"):
        return TensorKind.INPUT
    if value in ("output", "out"):
        return TensorKind.OUTPUT
    return None


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(str(text).strip())
    except ValueError:
        return None


def _without_trailing_empty(row: list[str], width: int) -> list[str]:
    """``row`` without the empty cells that follow its first ``width`` cells (MindSpore's trailing
    separator); a row with non-empty cells past ``width`` is returned unchanged."""
    if len(row) > width and all(not cell.strip() for cell in row[width:]):
        return row[:width]
    return row


def read_stats_csv(path: Path, *, op_type: str | None = None, op_name: str | None = None,
                   task_id: int | None = None, stream_id: int | None = None, timestamp: int = 0) -> StatsFile:
    """Read one statistics CSV (either producer; see the module doc).

    ``op_type`` ... ``timestamp`` give the operator of a per-operator file (from its file name);
    rows of an aggregated file carry their own. Never raises for bad rows (they go to
    ``skipped``); an unreadable file gives one ``skipped`` entry.
    """
    out = StatsFile(path=Path(path))
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as handle:
            rows = list(csv.reader(handle))
    except (OSError, csv.Error) as exc:
        out.skipped.append((Path(path), f"statistics file cannot be read: {exc}"))
        return out
    if not rows:
        out.skipped.append((Path(path), "statistics file is empty (no header row)"))
        return out
    header_cells = list(rows[0])
    while header_cells and not header_cells[-1].strip():
        header_cells.pop()
    header = [column_key(cell) for cell in header_cells]
    out.columns = header
    if "io" not in header or "index" not in header:
        out.rows = sum(1 for row in rows[1:] if any(cell.strip() for cell in row))
        out.skipped.append((Path(path), "statistics file has no IO / Input/Output and Slot / Index columns "
                                        f"(header: {', '.join(rows[0])})"))
        return out
    for number, row in enumerate(rows[1:], start=2):
        if not row or all(not c.strip() for c in row):
            continue
        out.rows += 1
        row = _without_trailing_empty(row, len(header))
        if len(row) != len(header):
            out.skipped.append((Path(path), f"row {number}: {len(row)} cells, the header has {len(header)}"))
            out.refused_lines.append(number)
            continue
        cells = dict(zip(header, row))
        kind = _kind(cells["io"])
        index = _int(cells["index"])
        if kind is None or index is None:
            out.skipped.append((Path(path), f"row {number}: IO {cells['io']!r} / slot {cells['index']!r} "
                                            "is not input|output and a number"))
            out.refused_lines.append(number)
            continue
        name = cells.get("op_name", op_name)
        if not name:
            out.skipped.append((Path(path), f"row {number}: no operator name"))
            out.refused_lines.append(number)
            continue
        try:
            shape = parse_shape(cells.get("shape", ""))
        except ValueError:
            out.skipped.append((Path(path), f"row {number}: shape {cells.get('shape')!r} is not a list of numbers"))
            out.refused_lines.append(number)
            continue
        stats = {key: parse_stat_value(key, value) for key, value in cells.items()
                 if key not in _META.values()}
        out.records.append(StatRecord(
            op_type=cells.get("op_type", op_type) or op_type,
            op_name=name,
            kind=kind,
            index=index,
            dtype=normalise_dtype(cells.get("data_type")),
            format=(cells.get("format") or None),
            shape=shape,
            stats=stats,
            path=Path(path),
            line=number,
            data_size=_int(cells.get("data_size")),
            task_id=_int(cells.get("task_id")) if "task_id" in cells else task_id,
            stream_id=_int(cells.get("stream_id")) if "stream_id" in cells else stream_id,
            timestamp=_int(cells.get("timestamp")) or timestamp if "timestamp" in cells else timestamp,
        ))
    return out


__all__ = ["STAT_COLUMNS", "TEXT_STATS", "StatRecord", "StatsFile", "column_key", "normalise_dtype",
           "parse_shape", "parse_stat_value", "read_stats_csv", "refused_rows_note"]
