"""Reading a saved JSON result (``--json``) back: everything, exactly -- raw float64s, status,
reasons, NaN/inf (encoded as the strings ``"nan"``/``"inf"``/``"-inf"``), rank/graph/iteration,
addresses, expected gaps. The document is parsed by :func:`compare.reports.result_json.load_document`;
each row is checked against the schema's types, and an error names the file, the line and the row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import DumpFormatError
from ..records import Grade, MetricRow, RowGrade, RowKind, StatDiff, ValueCounts
from .result_json import STD_KEYS, decode_float, load_document
from .saved_result import STATUS_OF, SavedKind, SavedResult


def _line_of_row(text: str, position: int) -> int:
    """The line of row ``position`` in a file written by :func:`result_json.dumps` (best effort)."""
    start = text.find('"rows": [')
    if start < 0:
        return 0
    return text.count("\n", 0, start) + 2 + position


def read_json_result(path: Path, text: str) -> SavedResult:
    """The rows of a JSON result's ``text`` (read from ``path``); :class:`DumpFormatError` naming
    the line and the row of the first malformed one."""
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
    status = STATUS_OF.get(item["status"])
    if status is None:
        raise ValueError(f"status: unknown status {item['status']!r} (one of {', '.join(STATUS_OF)})")
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


__all__ = ["read_json_result"]
