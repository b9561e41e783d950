"""Reading a saved result back (``vcompare gate RESULT``): JSON, CSV (both layouts) or parquet.

:func:`load_result` returns :class:`SavedResult` whose rows are the :class:`MetricRow` records
the run wrote, so gates can be evaluated again without recomputing anything.

What each source keeps:

- **JSON** (``--json``): everything, exactly -- raw float64s, status, reasons, NaN/inf (encoded as
  the strings ``"nan"``/``"inf"``/``"-inf"``), rank/graph/iteration, addresses, expected gaps.
- **parquet** (``-o x.parquet``): the same, from typed columns (null = not computed).
- **CSV** (``-o x.csv``, either ``--layout``): what the cells say. Numbers are read as written
  (6 decimals by default, more with ``--digits``/``--float-format repr``); ``NaN`` = not computed,
  ``nan``/``inf``/``-inf`` = computed. A StandardDeviation cell gives back its four printed values.
  CSV has no status column, so the status is inferred, first rule that applies: a metric cell
  holds a value -> compared; ``*`` as the right (left) op -> missing on right (left); only the
  right (left) data type known -> missing on left (right); no TensorIndex, or a FailReason ->
  not comparable; else compared. (A not-compared row is "not compared" under each rule, so a
  strict gate judges it the same; which of the three it was is exact only in JSON and parquet.)
  Reasons are split on ``"; "`` (vcompare layout) or on the commas outside brackets and quotes (msaccucmp layout, whose ``,`` join is ambiguous when a reason
  itself holds a comma). A text cell that the writer quoted for spreadsheets (``'=cmd``,
  ``' =cmd``) is read back without the quote (so a name that really started with ``'=`` loses
  its quote); control characters the writer escaped (``\\r``) stay escaped
  (:mod:`convert.textcells`). Rank, Graph and Iteration columns are read when present.
  Addresses are read from the msaccucmp layout.
  CSV does not record ``MetricRow.expected_gap`` (rows structurally not compared, which gates do
  not fail): re-gate the JSON or parquet result to keep them apart.

Errors name the file and, for CSV and JSON, the line (:class:`DumpFormatError`); a file of an
unknown kind raises :class:`OptionError`. JSON (the document and parquet's schema metadata) is
read by :func:`convert.jsonsafe.load_json`: nesting deeper than 100 levels (a row: its values), whole
numbers of more than 4,300 digits, numbers beyond float64's range (``1e400``) and ``NaN`` /
``Infinity`` literals are refused (vcompare writes ``"inf"``; a ``1e400`` read as infinity would
pass a ``>=`` gate). A parquet column of another type than the writer's (a text metric column)
is refused naming the column, before any row is read.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from convert.jsonsafe import load_json
from convert.textcells import unguard

from ..errors import DumpFormatError, OptionError
from ..records import Grade, MetricRow, PairStatus, RowGrade, RowKind, StatDiff, ValueCounts
from ..stats import NOT_SAME_TENSOR, NULL_STATISTIC, STAT_METRIC_OF
from .cells import NOT_COMPUTED
from .parquet import METADATA_KEY, STD_COLUMNS, require_pyarrow
from .result_json import STD_KEYS, STD_NAME, decode_float, load_document
from .stats import GRADE_COLUMNS


class SavedKind(str, Enum):
    JSON = "json"
    CSV = "csv"
    PARQUET = "parquet"


@dataclass
class SavedResult:
    """A result read back from disk.

    ``rows`` in file order; ``metrics`` the selected metric names in report order
    (StandardDeviation included when the file has it); ``document`` the parsed JSON document
    (None for CSV and parquet); ``kind`` the kind of file read.
    """

    path: Path
    kind: SavedKind
    rows: list[MetricRow]
    metrics: list[str]
    document: dict[str, Any] | None = None


_STATUS = {status.value: status for status in PairStatus}


def load_result(path: str | os.PathLike[str]) -> SavedResult:
    """Read a saved result; the kind is taken from the extension (``.json``, ``.csv``, ``.parquet``).

    Raises :class:`OptionError` for a missing file or an extension vcompare does not read, and
    :class:`DumpFormatError` (file and line) for a malformed one.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    kinds = {".json": SavedKind.JSON, ".csv": SavedKind.CSV, ".parquet": SavedKind.PARQUET}
    if suffix not in kinds:
        raise OptionError(f"{path}: cannot read {suffix or 'extension-less'} results; a saved result is a "
                          ".json (--json), .csv or .parquet (-o) file written by vcompare")
    if not path.is_file():
        raise OptionError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    kind = kinds[suffix]
    if kind is SavedKind.PARQUET:
        return _load_parquet(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise OptionError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DumpFormatError(path, f"line {line}: not UTF-8 text") from None
    if kind is SavedKind.JSON:
        return _load_json(path, text)
    return _load_csv(path, text)


# ---------------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------------


def _line_of_row(text: str, position: int) -> int:
    """The line of row ``position`` in a file written by :func:`result_json.dumps` (best effort)."""
    start = text.find('"rows": [')
    if start < 0:
        return 0
    return text.count("\n", 0, start) + 2 + position


def _load_json(path: Path, text: str) -> SavedResult:
    document = load_document(path, text)
    metrics = document.get("metrics")
    rows = document.get("rows")
    if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
        raise DumpFormatError(path, "\"metrics\" must be a list of metric names")
    if not isinstance(rows, list):
        raise DumpFormatError(path, "\"rows\" must be a list")
    out = []
    for i, item in enumerate(rows):
        try:
            out.append(_json_row(item))
        except RecursionError:  # a value nested too deeply for a message's repr
            raise DumpFormatError(path, f"line {_line_of_row(text, i)}: rows[{i}]: a value nested too deeply "
                                        "(a row's values nest at most 3 levels)") from None
        except (KeyError, TypeError, ValueError) as exc:
            detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise DumpFormatError(path, f"line {_line_of_row(text, i)}: rows[{i}]: {detail}") from None
    return SavedResult(path, SavedKind.JSON, out, list(metrics), document)


_INT_KEYS = ("index", "rank", "iteration", "graph", "left_address", "right_address", "op_sequence")
_TEXT_KEYS = ("op_type", "tensor_id", "left_dtype", "right_dtype", "expected_gap")


def _check_row(item: dict[str, Any]) -> None:
    """Type checks of one row object (the schema's rules); ``ValueError`` naming the key."""
    for key in _INT_KEYS:
        value = item.get(key)
        if value is not None and (type(value) is not int):
            raise ValueError(f"{key}: expected a whole number or null, not {value!r}")
    for key in _TEXT_KEYS:
        value = item.get(key)
        if value is not None and type(value) is not str:
            raise ValueError(f"{key}: expected text or null, not {value!r}")
    if type(item["left_op"]) is not str or type(item["right_op"]) is not str:
        raise ValueError("left_op / right_op: expected text")
    shape = item.get("shape")
    if shape is not None and (type(shape) is not list or not all(type(d) is int for d in shape)):
        raise ValueError(f"shape: expected a list of whole numbers or null, not {shape!r}")
    reasons = item.get("reasons", [])
    if type(reasons) is not list or not all(type(r) is str for r in reasons):
        raise ValueError("reasons: expected a list of texts")
    if type(item["metrics"]) is not dict:
        raise ValueError("metrics: expected an object")


def _json_row(item: dict[str, Any]) -> MetricRow:
    """One row object -> :class:`MetricRow` (checked; floats decoded; the hot loop of re-gating)."""
    if type(item) is not dict:
        raise TypeError(f"expected an object, not {type(item).__name__}")
    _check_row(item)
    status = _STATUS.get(item["status"])
    if status is None:
        raise ValueError(f"status: unknown status {item['status']!r} (one of {', '.join(_STATUS)})")
    metrics = {name: value if type(value) is float else decode_float(value, f"metrics.{name}")
               for name, value in item["metrics"].items()}
    std = item.get("std")
    shape = item.get("shape")
    get = item.get
    return MetricRow(
        index=get("index") or 0, op_type=get("op_type"), left_op=item["left_op"], right_op=item["right_op"],
        tensor_id=get("tensor_id"), left_dtype=get("left_dtype"), right_dtype=get("right_dtype"),
        shape=None if shape is None else tuple(shape), metrics=metrics,
        std=None if std is None else _std_values(std), reasons=list(get("reasons", [])),
        left_address=get("left_address"), right_address=get("right_address"), status=status,
        op_sequence=get("op_sequence"), rank=get("rank"), iteration=get("iteration"), graph=get("graph"),
        expected_gap=get("expected_gap"), left_counts=_counts(get("left_counts"), "left_counts"),
        right_counts=_counts(get("right_counts"), "right_counts"), kind=_kind(get("kind")),
        undefined=_undefined(get("undefined")), statistics=_statistics(get("statistics")), grade=_grade(get("grade")))


def _grade(value: object) -> RowGrade | None:
    """A row's ``grade`` (msprobe's Result and Err_message) back into a :class:`RowGrade`."""
    if value is None:
        return None
    if type(value) is not dict or type(value.get("messages", [])) is not list:
        raise ValueError(f"grade: expected an object with result and messages, not {value!r}")
    try:
        grade = Grade(value.get("result"))
    except ValueError:
        raise ValueError(f"grade.result: expected one of {', '.join(g.value for g in Grade)}") from None
    return RowGrade(grade, tuple(str(m) for m in value.get("messages", [])))


def _kind(value: object) -> RowKind:
    """A row's ``kind`` (absent in version 1 documents: a tensor row)."""
    if value is None:
        return RowKind.TENSOR
    try:
        return RowKind(value)
    except ValueError:
        raise ValueError(f"kind: expected one of {', '.join(k.value for k in RowKind)}, not {value!r}") from None


def _undefined(value: object) -> frozenset[str]:
    if value is None:
        return frozenset()
    if type(value) is not list or not all(type(v) is str for v in value):
        raise ValueError(f"undefined: expected a list of metric names, not {value!r}")
    return frozenset(value)


def _statistics(value: object) -> dict[str, StatDiff] | None:
    """A statistics row's ``statistics`` object back into :class:`StatDiff` values."""
    if value is None:
        return None
    if type(value) is not dict:
        raise ValueError(f"statistics: expected an object, not {value!r}")
    out: dict[str, StatDiff] = {}
    for name, item in value.items():
        if type(item) is not dict:
            raise ValueError(f"statistics.{name}: expected an object, not {item!r}")
        out[name] = StatDiff(*(_stat_value(item.get(key), f"statistics.{name}.{key}")
                               for key in ("left", "right", "diff")),
                             rel=decode_float(item.get("rel"), f"statistics.{name}.rel"))
    return out


def _stat_value(value: object, where: str) -> float | str | None:
    if isinstance(value, str) and value not in ("nan", "inf", "-inf"):
        return value
    return decode_float(value, where)


def _counts(value: object, key: str) -> ValueCounts | None:
    """A row's ``left_counts`` / ``right_counts`` object (absent or null: None)."""
    if value is None:
        return None
    if type(value) is not dict or not all(type(value.get(k)) is int for k in ("nan", "inf", "saturated")):
        raise ValueError(f"{key}: expected {{nan, inf, saturated}} whole numbers or null, not {value!r}")
    return ValueCounts(nan=value["nan"], inf=value["inf"], saturated=value["saturated"])


def _std_values(std: object) -> tuple[float, float, float, float]:
    if type(std) is not dict:
        raise ValueError(f"std: expected an object or null, not {std!r}")
    lm, ls, rm, rs = std.get("left_mean"), std.get("left_std"), std.get("right_mean"), std.get("right_std")
    if type(lm) is float and type(ls) is float and type(rm) is float and type(rs) is float:
        return lm, ls, rm, rs  # the common case: four finite floats
    lm, ls, rm, rs = (_std_value(std, key) for key in STD_KEYS)
    return lm, ls, rm, rs


def _std_value(std: dict[str, Any], key: str) -> float:
    value = decode_float(std[key], f"std.{key}")
    if value is None:
        raise ValueError(f"std.{key}: expected a number")
    return value


# ---------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _CsvPlan:
    """Column positions of one CSV header (either layout)."""

    index: int
    op_type: int
    left_op: int
    right_op: int
    left_dtype: int
    right_dtype: int
    tensor_id: int
    shape: int
    reasons: int
    metrics: tuple[tuple[str, int], ...]
    rank: int | None = None
    graph: int | None = None
    iteration: int | None = None
    left_address: int | None = None
    right_address: int | None = None
    msaccucmp: bool = False
    #: A statistics table: the rows are statistics rows (``RowKind.STATISTICS``).
    statistics: bool = False


def _csv_plan(path: Path, header: list[str]) -> _CsvPlan:
    """Where each field is; :class:`DumpFormatError` (line 1) when the header is not ours."""
    msaccucmp = "NPUDump" in header
    left_name, right_name, last = ("NPUDump", "GroundTruth", "CompareFailReason") if msaccucmp \
        else ("LeftOp", "RightOp", "FailReason")
    needed = ["Index", "OpType", left_name, right_name, "TensorIndex", "Shape", last]
    missing = [name for name in needed if name not in header]
    end = len(header) - 1 if header[-1] != "Verdict" else len(header) - 2  # --verdicts: a last Verdict column
    if missing or header[end] != last:
        raise DumpFormatError(path, f"line 1: not a vcompare network result header (missing "
                                    f"{', '.join(missing) or last + ' as the last column'})")
    if "LeftSource" in header and "RightSource" in header:  # the statistics table (compare.reports.stats)
        return _stats_plan(path, header, end)
    pos = {name: header.index(name) for name in needed}
    left_dtype = right_dtype = -1
    left_address = right_address = None
    if msaccucmp:
        for i in range(pos[left_name] + 1, pos[right_name]):
            if header[i] == "DataType":
                left_dtype = i
            elif header[i] == "Address":
                left_address = i
        for i in range(pos[right_name] + 1, pos["TensorIndex"]):
            if header[i] == "DataType":
                right_dtype = i
            elif header[i] == "Address":
                right_address = i
    else:
        left_dtype = header.index("LeftDataType") if "LeftDataType" in header else -1
        right_dtype = header.index("RightDataType") if "RightDataType" in header else -1
    if left_dtype < 0 or right_dtype < 0:
        raise DumpFormatError(path, "line 1: the header lacks the two data type columns")
    metrics = tuple((header[i], i) for i in range(pos["Shape"] + 1, end)
                    if header[i] not in GRADE_COLUMNS)  # msprobe's Result / Err_message: text, not metrics
    optional = {name: (header.index(name) if name in header[: pos["OpType"]] else None)
                for name in ("Rank", "Graph", "Iteration")}
    return _CsvPlan(pos["Index"], pos["OpType"], pos[left_name], pos[right_name], left_dtype, right_dtype,
                    pos["TensorIndex"], pos["Shape"], end, metrics, optional["Rank"],
                    optional["Graph"], optional["Iteration"], left_address, right_address, msaccucmp)


def _stats_plan(path: Path, header: list[str], end: int) -> _CsvPlan:
    """The plan of a statistics table (``Left{S}, Right{S}, {S}Diff, {S}RelDiff`` per statistic):
    its metrics are the ``{S}Diff`` / ``{S}RelDiff`` columns (:data:`compare.stats.STAT_METRIC_OF`)."""
    def at(name: str) -> int:
        return header.index(name)

    metrics = tuple((name, i) for i, name in enumerate(header[:end]) if name in STAT_METRIC_OF)
    optional = {name: (at(name) if name in header else None) for name in ("Rank", "Graph", "Iteration")}
    return _CsvPlan(at("Index"), at("OpType"), at("LeftOp"), at("RightOp"), at("LeftDataType"), at("RightDataType"),
                    at("TensorIndex"), at("Shape"), end, metrics, optional["Rank"], optional["Graph"],
                    optional["Iteration"], statistics=True)


def _stat_metric_cell(cell: str, name: str) -> float | None:
    """A statistics metric read back as the row holds it (:func:`compare.stats.metric_row`): a
    Diff is the magnitude of the signed cell, ``same`` / ``different`` 0.0 / 1.0, a RelDiff as
    it is."""
    if cell in ("same", "different"):
        return 0.0 if cell == "same" else 1.0
    value = _float_cell(cell, name)
    if value is None or STAT_METRIC_OF[name][1]:
        return value
    return abs(value)


def _load_csv(path: Path, text: str) -> SavedResult:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise DumpFormatError(path, "line 1: empty file, no header") from None
    except csv.Error as exc:
        raise DumpFormatError(path, f"line 1: {exc}") from None
    plan = _csv_plan(path, header)
    rows = []
    try:
        for cells in reader:
            if not cells:
                continue
            if len(cells) != len(header):
                raise ValueError(f"{len(cells)} cells where the header has {len(header)}")
            rows.append(_csv_row(plan, cells))
    except csv.Error as exc:
        raise DumpFormatError(path, f"line {reader.line_num}: {exc}") from None
    except ValueError as exc:
        raise DumpFormatError(path, f"line {reader.line_num}: {exc}") from None
    return SavedResult(path, SavedKind.CSV, rows, [name for name, _ in plan.metrics])


def _text(cell: str) -> str | None:
    return None if cell == NOT_COMPUTED else unguard(cell)


def _int_cell(cell: str, column: str) -> int | None:
    if cell == NOT_COMPUTED or cell == "":
        return None
    try:
        return int(cell)
    except ValueError:
        raise ValueError(f"{column}: {cell!r} is not a whole number") from None


_CELL_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "+inf": math.inf}


def _float_cell(cell: str, column: str) -> float | None:
    """``NaN`` -> None (not computed); ``nan``/``inf``/``-inf`` -> the value; else the number."""
    if cell == NOT_COMPUTED:
        return None
    if cell in _CELL_NON_FINITE:
        return _CELL_NON_FINITE[cell]
    try:
        return float(cell)
    except ValueError:
        raise ValueError(f"{column}: {cell!r} is not a number, NaN, nan or inf") from None


def _std_cell(cell: str) -> tuple[float, float, float, float] | None:
    """``(lm;ls),(rm;rs)`` -> four floats; ``NaN`` -> None."""
    if cell == NOT_COMPUTED:
        return None
    parts = cell.replace("(", "").replace(")", "").replace(",", ";").split(";")
    if len(parts) != 4:
        raise ValueError(f"{STD_NAME}: {cell!r} is not (mean;std),(mean;std)")
    values = [_float_cell(p, STD_NAME) for p in parts]
    if any(v is None for v in values):
        raise ValueError(f"{STD_NAME}: {cell!r} is not (mean;std),(mean;std)")
    lm, ls, rm, rs = (float(v) for v in values if v is not None)
    return lm, ls, rm, rs


def _shape_cell(cell: str) -> tuple[int, ...] | None:
    if cell == NOT_COMPUTED:
        return None
    if not (cell.startswith("[") and cell.endswith("]")):
        raise ValueError(f"Shape: {cell!r} is not [d0,d1,...]")
    inner = cell[1:-1].strip()
    try:
        return tuple(int(d) for d in inner.split(",")) if inner else ()
    except ValueError:
        raise ValueError(f"Shape: {cell!r} is not [d0,d1,...]") from None


def split_reasons(cell: str, *, msaccucmp: bool) -> list[str]:
    """A FailReason cell back into its reasons (see the module docstring for the ambiguity)."""
    cell = unguard(cell)
    if not cell:
        return []
    if not msaccucmp:
        return cell.split("; ")
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(cell):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(cell[start:i])
            start = i + 1
    parts.append(cell[start:])
    return [p.strip() for p in parts if p.strip()]


def _csv_status(row: MetricRow, computed: bool) -> PairStatus:
    """The status a CSV row implies (the rules of the module docstring, in order)."""
    if computed:  # a mismatched pair shows its numbers for reference, and its reason says so
        return PairStatus.NOT_COMPARABLE if any(NOT_SAME_TENSOR in r for r in row.reasons) else PairStatus.COMPARED
    if row.right_op == "*":
        return PairStatus.MISSING_RIGHT
    if row.left_op == "*":
        return PairStatus.MISSING_LEFT
    if (row.left_dtype is None) != (row.right_dtype is None):
        return PairStatus.MISSING_LEFT if row.left_dtype is None else PairStatus.MISSING_RIGHT
    if row.tensor_id is None or row.reasons:
        return PairStatus.NOT_COMPARABLE
    return PairStatus.COMPARED


def _csv_row(plan: _CsvPlan, cells: list[str]) -> MetricRow:
    metrics: dict[str, float | None] = {}
    std = None
    for name, i in plan.metrics:
        if name == STD_NAME:
            std = _std_cell(cells[i])
        elif plan.statistics:
            metrics[name] = _stat_metric_cell(cells[i], name)
        else:
            metrics[name] = _float_cell(cells[i], name)
    computed = any(v is not None for v in metrics.values()) or std is not None
    reasons = split_reasons(cells[plan.reasons], msaccucmp=plan.msaccucmp)
    left_op, right_op = unguard(cells[plan.left_op]), unguard(cells[plan.right_op])
    tensor_id = _text(cells[plan.tensor_id])
    index = _int_cell(cells[plan.index], "Index")
    row = MetricRow(
        index=0 if index is None else index, op_type=_text(cells[plan.op_type]), left_op=left_op,
        right_op=right_op, tensor_id=tensor_id, left_dtype=_text(cells[plan.left_dtype]),
        right_dtype=_text(cells[plan.right_dtype]), shape=_shape_cell(cells[plan.shape]), metrics=metrics,
        std=std, reasons=reasons,
        left_address=None if plan.left_address is None else _int_cell(cells[plan.left_address], "Address"),
        right_address=None if plan.right_address is None else _int_cell(cells[plan.right_address], "Address"),
        rank=None if plan.rank is None else _int_cell(cells[plan.rank], "Rank"),
        iteration=None if plan.iteration is None else _int_cell(cells[plan.iteration], "Iteration"),
        graph=None if plan.graph is None else _int_cell(cells[plan.graph], "Graph"),
        kind=RowKind.STATISTICS if plan.statistics else RowKind.TENSOR)
    row.status = _csv_status(row, computed)
    if plan.statistics and any(NULL_STATISTIC in r for r in reasons):  # not a gap: nothing to compare
        row.undefined = frozenset(name for name, value in metrics.items() if value is None)
    return row


# ---------------------------------------------------------------------------------------------
# parquet
# ---------------------------------------------------------------------------------------------


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


def _load_parquet(path: Path) -> SavedResult:
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
        status = _STATUS.get(cols["Status"][i])
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
