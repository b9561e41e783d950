"""The accuracy policy file (TOML, docs/policy.md): read into a :class:`compare.verdict.policy.Policy`, every
error naming the file and the key; and the commented starter file ``vcompare policy --init`` writes."""

from __future__ import annotations

import datetime
import math
import os
import re
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from convert.entries import special_file_problem

from ..errors import OptionError
from ..records import Bound
from .policy import (
    BOUND_OPS,
    BOUND_RE,
    CHECKSUM_METRICS,
    DTYPE_ALIASES,
    NOT_COMPARED,
    SELECTOR_KEYS,
    NameRegexes,
    Policy,
    Rule,
    Selector,
    Waiver,
    glob_lines,
    glob_regex,
    higher_is_better,
    metric_name,
    regex_problem,
)


class _Reader:
    """Reads one TOML policy file; every error names the file and the key."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.name

    def fail(self, where: str, message: str) -> OptionError:
        return OptionError(f"policy file {self.path}: {where}: {message}")

    def check_keys(self, where: str, table: dict[str, Any], allowed: Iterable[str], metrics: bool) -> None:
        allowed = set(allowed)
        for key in table:
            if key in allowed or (metrics and _metric_key(key) is not None):
                continue
            hint = "; metric names are accepted too" if metrics else ""
            raise self.fail(where, f"unknown key {key!r} (accepted: {', '.join(sorted(allowed))}{hint})")

    def metric(self, where: str, key: str) -> str:
        name = _metric_key(key)
        if name is None:
            raise self.fail(where, f"unknown metric {key!r}")
        if name == "StandardDeviation":
            raise self.fail(where, "StandardDeviation is not a single number and cannot be gated")
        return name

    def bounds(self, where: str, table: dict[str, Any], keys: Iterable[str], source: str
               ) -> tuple[tuple[Bound, ...], frozenset[str]]:
        """The metric keys of a table: ``Metric = 0.99`` (direction from the metric), ``">= 0.99"``,
        a list of such strings, or ``"off"``."""
        bounds: list[Bound] = []
        off: set[str] = set()
        for key in keys:
            metric = self.metric(f"{where}.{key}", key)
            value = table[key]
            items = value if isinstance(value, list) else [value]
            if not items:
                raise self.fail(f"{where}.{key}", "an empty list sets no bound (use \"off\" to remove bounds)")
            for item in items:
                if item == "off" and not isinstance(value, list):
                    off.add(metric)
                    continue
                if isinstance(item, bool) or not isinstance(item, (int, float, str)):
                    raise self.fail(f"{where}.{key}", f"expected a number, \"OP NUMBER\" (ops: >= <= > < ==) or "
                                                      f"\"off\", got {item!r}")
                if item == "same" and metric in CHECKSUM_METRICS:
                    bounds.append(Bound(metric, "==", 0.0, source))  # a checksum metric is 0.0 when the same
                    continue
                if isinstance(item, str):
                    match = BOUND_RE.match(item)
                    if not match:
                        raise self.fail(f"{where}.{key}", f"bad bound {item!r}: expected \"OP NUMBER\" with OP one of "
                                                          f"{' '.join(BOUND_OPS)}, e.g. \">= 0.99\" (or \"off\")")
                    op, number = match.group(1), float(match.group(2))
                    if math.isinf(number) and "inf" not in match.group(2):
                        raise self.fail(f"{where}.{key}", f"bound {_shown(match.group(2))} is beyond float64's "
                                                          "range (write inf for an infinite bound)")
                else:
                    higher = higher_is_better(metric)
                    op, number = (">=" if higher else "<="), float(item)
                if math.isnan(number):
                    raise self.fail(f"{where}.{key}", "a bound cannot be NaN")
                bounds.append(Bound(metric, op, number, source))
        return tuple(bounds), frozenset(off)

    def strings(self, where: str, value: Any) -> list[str]:
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(v, str) and v for v in items):
            raise self.fail(where, f"expected a non-empty string or list of strings, got {value!r}")
        return items

    def ints(self, where: str, value: Any) -> frozenset[int]:
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
            raise self.fail(where, f"expected an integer or a list of integers, got {value!r}")
        return frozenset(items)

    def selector(self, where: str, table: dict[str, Any]) -> Selector:
        given = {k: table[k] for k in SELECTOR_KEYS if k in table}
        if not given:
            raise self.fail(where, f"selects no rows: give at least one of {', '.join(SELECTOR_KEYS)} "
                                   "(bounds for every row go in [defaults])")
        text = ", ".join(f"{k} = {_toml_text(v)}" for k, v in given.items())
        fields: dict[str, Any] = {}
        for key, value in given.items():
            at = f"{where}.{key}"
            if key in ("rank", "iteration", "graph"):
                fields[key] = self.ints(at, value)
            elif key == "op_regex":
                patterns = []
                for pattern in self.strings(at, value):
                    shown = pattern if len(pattern) <= 60 else f"{pattern[:40]}... ({len(pattern)} characters)"
                    problem = regex_problem(pattern)
                    if problem is not None:
                        raise self.fail(at, f"regular expression {shown!r}: {problem}")
                    try:
                        patterns.append(re.compile(pattern, re.MULTILINE))
                    except (re.error, OverflowError, RecursionError) as exc:
                        raise self.fail(at, f"bad regular expression {shown!r}: {exc}") from None
                fields[key] = NameRegexes(patterns)
            elif key in ("dtype", "left_dtype", "right_dtype"):
                fields[key] = glob_regex([DTYPE_ALIASES.get(v.lower(), v) for v in self.strings(at, value)])
            elif key == "op":
                fields[key] = glob_lines(self.strings(at, value))
            else:
                fields[key] = glob_regex(self.strings(at, value))
        return Selector(text=text, **fields)

    def expires(self, where: str, value: Any) -> datetime.date:
        if isinstance(value, datetime.datetime) or not isinstance(value, (datetime.date, str)):
            raise self.fail(where, f"bad date {_toml_text(value)}: expected a date such as 2026-12-31")
        if isinstance(value, str):
            try:
                return datetime.date.fromisoformat(value)
            except ValueError:
                raise self.fail(where, f"bad date {value!r}: expected a date such as 2026-12-31") from None
        return value


def _toml_text(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_text(v) for v in value) + "]"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return repr(value)


def _metric_key(key: str) -> str | None:
    """The canonical metric a TOML key names (tensor metric name or alias, or statistics metric:
    :func:`compare.verdict.policy.metric_name`)."""
    return metric_name(key)


_TOP_KEYS = ("version", "strict", "defaults", "rule", "waiver")


_RULE_KEYS = (*SELECTOR_KEYS, "note")


_WAIVER_KEYS = (*SELECTOR_KEYS, "reason", "expires", "metrics")


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read a TOML policy file (format: docs/policy.md; a starter: :func:`starter_policy`).

    Raises :class:`OptionError` naming the file, and the key or TOML line, for every problem:
    unreadable file, TOML syntax, unknown key, unknown metric, bad bound, bad regular expression,
    bad date, a rule or waiver without selector, a waiver without reason.
    """
    path = Path(path)
    reader = _Reader(path)
    special = special_file_problem(path)  # never opened: a FIFO would block, a device never ends
    if special is not None:
        raise OptionError(f"cannot read policy file {path}: {special}")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise OptionError(f"cannot read policy file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise OptionError(f"policy file {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        return _policy(reader, _toml(path, text))
    except RecursionError:  # a value nested deeply enough to be read but not to be checked
        raise OptionError(f"policy file {path}: a value nested too deeply to check (a policy nests at most "
                          "3 levels)") from None


class _TomlNumber(ValueError):
    """A TOML number refused by :func:`_toml`'s hooks: ``literal`` as written, ``problem``."""

    def __init__(self, literal: str, problem: str) -> None:
        super().__init__(problem)
        self.literal = literal
        self.problem = problem


def _toml_float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value) and "inf" not in literal:
        raise _TomlNumber(literal, f"the number {_shown(literal)} is beyond float64's range (write inf for an "
                                   "infinite bound)")
    return value


def _shown(literal: str) -> str:
    return literal if len(literal) <= 40 else f"{literal[:20]}... ({len(literal)} characters)"


def _line_of(text: str, literal: str) -> str:
    at = text.find(literal)
    return f"line {text.count(chr(10), 0, at) + 1}" if at >= 0 else "a number"


def _toml(path: Path, text: str) -> dict[str, Any]:
    """``tomllib.loads`` with its hostile cases named (docs/policy.md, "Bounds of the file"):
    nesting deeper than Python's recursion limit, whole numbers of more than 4,300 digits and
    floats beyond float64's range are refused with the file and line."""
    try:
        return tomllib.loads(text, parse_float=_toml_float)
    except tomllib.TOMLDecodeError as exc:
        raise OptionError(f"policy file {path}: not valid TOML: {exc}") from None
    except _TomlNumber as exc:
        raise OptionError(f"policy file {path}: {_line_of(text, exc.literal)}: {exc.problem}") from None
    except RecursionError:
        raise OptionError(f"policy file {path}: not valid TOML: arrays or inline tables nested deeper than the "
                          f"TOML reader follows (Python's recursion limit, {sys.getrecursionlimit()}; a policy "
                          "nests at most 3 levels)") from None
    except ValueError:  # int(): a whole number of more digits than Python converts (4,300)
        digits = _LONG_NUMBER.search(text)
        where = f"line {text.count(chr(10), 0, digits.start()) + 1}" if digits else "a number"
        raise OptionError(f"policy file {path}: not valid TOML: {where}: a whole number of more than "
                          f"{sys.get_int_max_str_digits() or 'the allowed'} digits") from None


#: A run of digits (TOML allows ``_`` between them) longer than Python converts to an int.
_LONG_NUMBER = re.compile(r"[0-9][0-9_]{4299,}")


def _policy(reader: _Reader, data: dict[str, Any]) -> Policy:
    path = reader.path
    reader.check_keys("top level", data, _TOP_KEYS, metrics=False)
    version = data.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise reader.fail("version", f"unsupported version {version!r} (this vcompare reads version 1)")
    strict = data.get("strict", True)
    if not isinstance(strict, bool):
        raise reader.fail("strict", f"expected true or false, got {strict!r}")
    defaults, defaults_off, dtype = _defaults(reader, data.get("defaults", {}))
    rules = tuple(_rule(reader, i, table) for i, table in enumerate(_tables(reader, data, "rule"), start=1))
    waivers = tuple(_waiver(reader, i, table) for i, table in enumerate(_tables(reader, data, "waiver"), start=1))
    return Policy(defaults=defaults, rules=rules, waivers=waivers, strict=strict, dtype_defaults=dtype,
                  defaults_off=defaults_off, source=str(path))


def _tables(reader: _Reader, data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise reader.fail(key, f"write each {key} as a [[{key}]] table")
    return value


def _defaults(reader: _Reader, table: Any) -> tuple[tuple[Bound, ...], frozenset[str], bool]:
    if not isinstance(table, dict):
        raise reader.fail("defaults", "write it as a [defaults] table")
    reader.check_keys("[defaults]", table, ("dtype",), metrics=True)
    dtype = table.get("dtype", False)
    if not isinstance(dtype, bool):
        raise reader.fail("[defaults].dtype", f"expected true or false, got {dtype!r}")
    keys = [k for k in table if k != "dtype"]
    bounds, off = reader.bounds("[defaults]", table, keys, f"{reader.name} [defaults]")
    return bounds, off, dtype


def _rule(reader: _Reader, number: int, table: dict[str, Any]) -> Rule:
    where = f"rule {number}"
    reader.check_keys(where, table, _RULE_KEYS, metrics=True)
    selector = reader.selector(where, table)
    note = table.get("note", "")
    if not isinstance(note, str):
        raise reader.fail(f"{where}.note", f"expected a string, got {note!r}")
    keys = [k for k in table if k not in _RULE_KEYS]
    if not keys:
        raise reader.fail(where, "sets no bound: add metric keys such as CosineSimilarity = \">= 0.99\"")
    label = note or selector.text
    bounds, off = reader.bounds(where, table, keys, f"{reader.name} rule {number} ({label})")
    return Rule(selector, bounds, off, label)


def _waiver(reader: _Reader, number: int, table: dict[str, Any]) -> Waiver:
    where = f"waiver {number}"
    reader.check_keys(where, table, _WAIVER_KEYS, metrics=False)
    selector = reader.selector(where, table)
    reason = table.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise reader.fail(f"{where}.reason", "every waiver needs a reason (why the failure is accepted)")
    expires = reader.expires(f"{where}.expires", table["expires"]) if "expires" in table else None
    metrics: frozenset[str] | None = None
    if "metrics" in table:
        names = set()
        for item in reader.strings(f"{where}.metrics", table["metrics"]):
            names.add(NOT_COMPARED if item == NOT_COMPARED else reader.metric(f"{where}.metrics", item))
        metrics = frozenset(names)
    label = f"{reader.name} waiver {number} ({selector.text}; reason: {reason.strip()}"
    label += f"; expires {expires.isoformat()})" if expires else ")"
    return Waiver(selector, reason.strip(), label, expires, metrics)


_STARTER = '''\
# vcompare accuracy policy (docs/policy.md). Check a run with
#   vcompare -l NPU_DUMP -r GOLDEN ... --policy gates.toml
# or a saved result with
#   vcompare gate result.json --policy gates.toml
# Exit codes: 0 passed, 1 a value violated a bound (or a waiver expired),
# 3 incomplete (only rows that should have been compared and were not failed), 2 could not run.

version = 1

# Strict (the default): every row that should have been compared and was not -- unreadable or
# truncated dump, shape mismatch, missing counterpart, a gated metric not computed -- fails,
# unless a waiver below covers it. Rows that are structurally not compared (mixed-precision
# casts, quant-filtered ops, overflow records, NPU-only operators, Data/Const) never fail.
strict = true

[defaults]
# Built-in bounds from each row's data type (the coarser of the two sides): for machine
# epsilon eps, CosineSimilarity >= 1 - eps/2 and RelativeEuclideanDistance <= sqrt(eps):
#   float32 0.99999994 / 3.45e-4, float16 0.99951 / 0.03125, bfloat16 and int8 0.99609 / 0.0884,
#   fp8 e4m3 0.9375 / 0.354, fp8 e5m2 0.875 / 0.5.
dtype = false
# Bounds for every row (they replace the dtype bounds on the same metric). A bare number
# means ">=" for CosineSimilarity and "<=" for the error metrics.
CosineSimilarity = ">= 0.99"
# MaxAbsoluteError = "<= 1e-3"
# RelativeEuclideanDistance = 0.05

# Rules: bounds for the rows their selector matches; a later matching rule replaces the
# bounds of the metrics it names ("off" removes them). Selector keys (all given must match):
#   op = "conv*"             glob on the NPUDump / GroundTruth operator names and TensorIndex
#   op_regex = "^fc[0-9]+$"  regular expression (re.search) on the same names
#   op_type = "Softmax*"     glob on OpType
#   dtype = "float16"        left or right data type (left_dtype / right_dtype: one side)
#   rank = 0, iteration = [1, 2], graph = 3
# [[rule]]
# op_type = ["SoftmaxV2", "LayerNorm"]
# note = "reductions in fp16 lose more"
# CosineSimilarity = ">= 0.98"

# Waivers: accepted failures, with a reason; an expired waiver fails the run. A "metrics"
# list limits a waiver to those metrics and/or "not-compared" (without it: everything).
# [[waiver]]
# op = "pool1*"
# reason = "known fp16 accumulation issue, ticket 1234"
# expires = 2026-12-31
# metrics = ["CosineSimilarity", "not-compared"]
'''


def starter_policy() -> str:
    """The commented starter file ``vcompare policy --init`` writes (it loads with :func:`load_policy`)."""
    return _STARTER
