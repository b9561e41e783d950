"""Accuracy policies: which bounds apply to which report row, and which failures are waived.

A :class:`Policy` comes from ``--gate`` options (:meth:`Policy.from_gates`), from a TOML policy
file (:func:`load_policy`, read with the standard library's :mod:`tomllib`), or both
(:meth:`Policy.with_gates`). :func:`compare.gates.evaluate` checks rows against it. The file format,
the built-in dtype bounds and how bounds combine are documented in ``docs/policy.md``; in short:

- **Layers, per metric** (a later layer replaces the earlier ones' bounds *on that metric*):
  built-in dtype bounds (``[defaults] dtype = true``) < ``[defaults]`` < each matching
  ``[[rule]]`` in file order. A rule value ``"off"`` removes the metric's bounds for its rows.
- **``--gate``** bounds are added to whatever the layers give: they apply to every row.
- **Selectors** (rules and waivers): every key given must match (AND); a list is any-of (OR).
  ``op``: glob on each operator name of the NPUDump / GroundTruth cells (comma-split) and on the
  TensorIndex; ``op_regex``: :func:`re.search` on the same strings; ``op_type``: glob on OpType;
  ``dtype``: glob on the left *or* the right data type (``left_dtype`` / ``right_dtype``: that
  side only; ``fp16``/``fp32``/``bf16``/``fp8`` read as numpy names); ``rank`` / ``iteration`` /
  ``graph``: integers (a row without that coordinate does not match).
- **Waivers** need a ``reason``; ``expires`` (a TOML date) ends them: an expired waiver waives
  nothing and fails the run. ``metrics`` limits a waiver to those metrics and/or
  ``"not-compared"`` (rows or metrics that were not computed); without it, it waives everything
  its selector matches.
"""

from __future__ import annotations

import datetime
import fnmatch
import math
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .errors import OptionError
from .kernels import ALIASES, METRIC_NAMES, METRICS
from .records import Bound, MetricRow

#: The waiver ``metrics`` entry that covers rows (or gated metrics) that were not computed.
NOT_COMPARED = "not-compared"

#: Machine epsilon (spacing of 1.0 to the next value) of the data types with built-in bounds. int8
#: data is quantised: its resolution relative to the range is 1/127, about 2**-7 (like bfloat16's
#: 8 significant bits). fp8 names are matched by prefix (``float8_e4m3fn``, ``float8_e4m3fnuz`` ...).
DTYPE_EPS: dict[str, float] = {
    "float32": 2.0**-23,
    "float16": 2.0**-10,
    "bfloat16": 2.0**-7,
    "int8": 2.0**-7,
    "float8_e4m3": 2.0**-3,
    "float8_e5m2": 2.0**-2,
}

_DTYPE_ALIASES = {
    "fp32": "float32", "float": "float32", "fp16": "float16", "half": "float16", "bf16": "bfloat16",
    "fp64": "float64", "double": "float64", "fp8": "float8_*", "fp8_e4m3": "float8_e4m3*",
    "fp8_e5m2": "float8_e5m2*",
}

_OPS = (">=", "<=", "==", ">", "<")
_BOUND_RE = re.compile(r"^\s*(>=|<=|==|>|<)\s*([-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|[0-9]+\.|inf))\s*$")
_SELECTOR_KEYS = ("op", "op_regex", "op_type", "dtype", "left_dtype", "right_dtype", "rank", "iteration", "graph")


def dtype_family(dtype: str | None) -> str | None:
    """The :data:`DTYPE_EPS` key of a data-type name (``float8_e4m3fn`` -> ``float8_e4m3``), or None."""
    if dtype is None:
        return None
    if dtype in DTYPE_EPS:
        return dtype
    for prefix in ("float8_e4m3", "float8_e5m2"):
        if dtype.startswith(prefix):
            return prefix
    return None


def dtype_bounds(left: str | None, right: str | None) -> tuple[Bound, ...]:
    """The built-in bounds of a row with these data types (docs/policy.md, "dtype defaults").

    The coarser of the two known types decides (an fp16 NPU tensor against an fp32 golden is held
    to fp16 precision); no known type, no bounds. With ``eps`` that type's machine epsilon the
    error budget is half the significand bits, a relative L2 error of ``sqrt(eps)``:
    ``RelativeEuclideanDistance <= sqrt(eps)`` and ``CosineSimilarity >= 1 - eps/2`` (for an
    error of relative size ``d`` orthogonal to the data, ``cos = 1 - d**2/2``).
    """
    family = coarsest_family(left, right)
    return _DTYPE_BOUNDS[family] if family is not None else ()


def coarsest_family(left: str | None, right: str | None) -> str | None:
    """The :data:`DTYPE_EPS` family of the coarser known data type of a row, or None."""
    families = [f for f in (dtype_family(left), dtype_family(right)) if f is not None]
    return max(families, key=lambda f: DTYPE_EPS[f]) if families else None


def _make_dtype_bounds(family: str) -> tuple[Bound, ...]:
    eps = DTYPE_EPS[family]
    exponent = round(math.log2(eps))
    source = f"built-in default for {family} (eps 2**{exponent})"
    return (Bound("CosineSimilarity", ">=", 1.0 - eps / 2, source),
            Bound("RelativeEuclideanDistance", "<=", math.sqrt(eps), source))


_DTYPE_BOUNDS: dict[str, tuple[Bound, ...]] = {family: _make_dtype_bounds(family) for family in DTYPE_EPS}


def _glob_regex(patterns: Sequence[str]) -> re.Pattern[str]:
    """One pattern matching a whole string against any of ``patterns`` (case-sensitive globs)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


def _glob_lines(patterns: Sequence[str]) -> re.Pattern[str]:
    """One pattern that finds a line of :func:`names_text` matching any of the globs in full
    (``*`` and ``?`` never cross a line end)."""
    return re.compile("|".join(f"(?:^{_glob_body(p)}$)" for p in patterns), re.MULTILINE)


def _glob_body(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            out.append(r"[^\n]*")
        elif c == "?":
            out.append(r"[^\n]")
        elif c == "[":
            j = i + (1 if i < n and pattern[i] in "!]" else 0)
            j = j + (1 if j < n and pattern[j] == "]" else 0)
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(r"\[")
                continue
            body = pattern[i:j].replace("\\", "\\\\")
            i = j + 1
            if body.startswith("!"):
                body = "^\n" + body[1:]
            elif body.startswith("^"):
                body = "\\" + body
            out.append(f"[{body}]")
        else:
            out.append(re.escape(c))
    return "".join(out)


@dataclass(frozen=True)
class Selector:
    """Which rows a rule or waiver applies to (module docstring); ``text`` is the TOML it came from.

    Every field given must match; ``None`` means "any". Globs are compiled once into one regular
    expression per field; ``op`` and ``op_regex`` search :func:`names_text` (one name a line).
    """

    text: str
    op: re.Pattern[str] | None = None
    op_regex: tuple[re.Pattern[str], ...] | None = None
    op_type: re.Pattern[str] | None = None
    dtype: re.Pattern[str] | None = None
    left_dtype: re.Pattern[str] | None = None
    right_dtype: re.Pattern[str] | None = None
    rank: frozenset[int] | None = None
    iteration: frozenset[int] | None = None
    graph: frozenset[int] | None = None

    @property
    def uses_names(self) -> bool:
        return self.op is not None or self.op_regex is not None

    def matches(self, row: MetricRow) -> bool:
        """Whether ``row`` is selected."""
        return self.matches_fields(row) and (not self.uses_names or self.matches_names(names_text(row)))

    def matches_names(self, names: str) -> bool:
        """The ``op`` / ``op_regex`` part, on a row's :func:`names_text`."""
        if self.op is not None and self.op.search(names) is None:
            return False
        return self.op_regex is None or any(p.search(names) for p in self.op_regex)

    def name_test(self) -> Callable[[str], object]:
        """:meth:`matches_names` as the fastest callable (truthy = matches): a single pattern's
        own ``search`` when the selector has one name pattern."""
        patterns = ([self.op] if self.op is not None else []) + list(self.op_regex or ())
        if len(patterns) == 1:
            return patterns[0].search
        return self.matches_names

    def matches_fields(self, row: MetricRow) -> bool:
        """Everything but the names: rank, iteration, graph, OpType, data types (a function of
        :func:`field_key` alone)."""
        if self.rank is not None and row.rank not in self.rank:
            return False
        if self.iteration is not None and row.iteration not in self.iteration:
            return False
        if self.graph is not None and row.graph not in self.graph:
            return False
        if self.op_type is not None and not self.op_type.match(row.op_type or ""):
            return False
        if self.dtype is not None and not (_dt(self.dtype, row.left_dtype) or _dt(self.dtype, row.right_dtype)):
            return False
        if self.left_dtype is not None and not _dt(self.left_dtype, row.left_dtype):
            return False
        return self.right_dtype is None or _dt(self.right_dtype, row.right_dtype)


def field_key(row: MetricRow) -> tuple:
    """The row fields selectors read besides the names (rows of one network share a few)."""
    return (row.op_type, row.left_dtype, row.right_dtype, row.rank, row.iteration, row.graph)


def _dt(pattern: re.Pattern[str], dtype: str | None) -> bool:
    return dtype is not None and pattern.match(dtype) is not None


def names_text(row: MetricRow) -> str:
    """What ``op`` / ``op_regex`` selectors look at, one name a line: each operator name of the
    NPUDump and GroundTruth cells (split on ``,``; the ``*`` of a missing side left out), then
    the TensorIndex. A glob must match a whole line; a regular expression is searched with
    ``re.MULTILINE`` (``^`` and ``$`` anchor at each name)."""
    left, right, tensor = row.left_op, row.right_op, row.tensor_id
    text = left if left != "*" else ""
    if right != left and right != "*":
        text = f"{text}\n{right}" if text else right
    if tensor:
        text = f"{text}\n{tensor}" if text else tensor
    return text.replace(",", "\n")


@dataclass(frozen=True)
class Rule:
    """Bounds for the rows a selector matches. ``off``: metrics whose bounds the rule removes."""

    selector: Selector
    bounds: tuple[Bound, ...]
    off: frozenset[str] = frozenset()
    label: str = ""


@dataclass(frozen=True)
class Waiver:
    """Failures a policy accepts: selector, reason, optional expiry, optional metrics.

    ``metrics`` None covers every failure of the matched rows; otherwise only failures on those
    metrics, plus not-compared ones when it holds :data:`NOT_COMPARED`.
    """

    selector: Selector
    reason: str
    label: str
    expires: datetime.date | None = None
    metrics: frozenset[str] | None = None

    def covers(self, metric: str | None, incomplete: bool) -> bool:
        if self.metrics is None:
            return True
        return (incomplete and NOT_COMPARED in self.metrics) or (metric is not None and metric in self.metrics)

    def expired(self, today: datetime.date) -> bool:
        return self.expires is not None and today > self.expires


@dataclass(frozen=True)
class Policy:
    """What a gated run is checked against (module docstring; docs/policy.md).

    ``defaults``: bounds for every row (``[defaults]``); ``rules`` in file order; ``gates``: the
    ``--gate`` bounds (added to every row); ``strict``: rows or gated metrics that were not
    computed fail (as incomplete); ``dtype_defaults``: apply :func:`dtype_bounds`; ``source``: the
    policy file, if any.
    """

    defaults: tuple[Bound, ...] = ()
    rules: tuple[Rule, ...] = ()
    waivers: tuple[Waiver, ...] = ()
    gates: tuple[Bound, ...] = ()
    strict: bool = True
    dtype_defaults: bool = False
    defaults_off: frozenset[str] = frozenset()
    source: str | None = None

    @classmethod
    def from_gates(cls, bounds: Iterable[Bound]) -> Policy:
        """A policy of ``--gate`` bounds only: strict when there is at least one bound; no bound at
        all is the ungated run (``evaluate`` says NOT_GATED)."""
        gates = tuple(bounds)
        return cls(gates=gates, strict=bool(gates))

    def with_gates(self, bounds: Iterable[Bound]) -> Policy:
        """This policy plus ``--gate`` bounds (they apply to every row, next to the file's)."""
        return replace(self, gates=self.gates + tuple(bounds))

    @property
    def gated(self) -> bool:
        """Whether the policy asks anything: a bound somewhere, or completeness (``strict``)."""
        return bool(self.strict or self.defaults or self.gates or self.dtype_defaults
                    or any(rule.bounds for rule in self.rules))


def gated_metrics(policy: Policy) -> list[str]:
    """The metrics the comparison must compute for this policy, in the report's column order."""
    wanted = {b.metric for b in policy.defaults + policy.gates}
    wanted.update(b.metric for rule in policy.rules for b in rule.bounds)
    if policy.dtype_defaults:
        wanted.update(b.metric for bounds in _DTYPE_BOUNDS.values() for b in bounds)
    return [name for name in METRIC_NAMES if name in wanted]


class BoundResolver:
    """The bounds of each row under a policy, with the matching work done once per distinct case.

    Per distinct :func:`field_key` (OpType, data types, rank, iteration, graph) the data-type
    family and the rules whose other fields match are found once; per row only the ``op`` /
    ``op_regex`` patterns of those rules are searched. The bound tuple of each (family, matched
    rules) is computed once. :attr:`used` lists every distinct bound returned so far.
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._cache: dict[tuple[str | None, tuple[int, ...]], tuple[Bound, ...]] = {}
        self._fields: dict[tuple, tuple[str | None, tuple[int, ...], tuple[tuple[int, Callable[[str], object]], ...]]] = {}
        self._tests = [rule.selector.name_test() if rule.selector.uses_names else None for rule in policy.rules]

    def bounds(self, row: MetricRow) -> tuple[Bound, ...]:
        fields = field_key(row)
        known = self._fields.get(fields)
        if known is None:
            known = self._fields[fields] = self._by_fields(row)
        family, matched, by_name = known
        if by_name:
            names = names_text(row)
            more = [i for i, test in by_name if test(names)]
            if more:
                matched = tuple(sorted(matched + tuple(more)))
        key = (family, matched)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._combine(family, matched)
        return hit

    def _by_fields(self, row: MetricRow
                   ) -> tuple[str | None, tuple[int, ...], tuple[tuple[int, Callable[[str], object]], ...]]:
        """(data-type family, rules matched without a name test, (rule, name test) still to run)."""
        family = coarsest_family(row.left_dtype, row.right_dtype) if self.policy.dtype_defaults else None
        plain: list[int] = []
        by_name: list[tuple[int, Callable[[str], object]]] = []
        for i, rule in enumerate(self.policy.rules):
            if rule.selector.matches_fields(row):
                test = self._tests[i]
                if test is None:
                    plain.append(i)
                else:
                    by_name.append((i, test))
        return family, tuple(plain), tuple(by_name)

    @property
    def used(self) -> list[Bound]:
        """The distinct bounds of every row resolved so far, in first-seen order."""
        return list(dict.fromkeys(b for bounds in self._cache.values() for b in bounds))

    def _combine(self, family: str | None, matched: tuple[int, ...]) -> tuple[Bound, ...]:
        policy = self.policy
        per_metric: dict[str, tuple[Bound, ...]] = {}
        _layer(per_metric, _DTYPE_BOUNDS[family] if family is not None else (), frozenset())
        _layer(per_metric, policy.defaults, policy.defaults_off)
        for i in matched:
            rule = policy.rules[i]
            _layer(per_metric, rule.bounds, rule.off)
        return tuple(b for bounds in per_metric.values() for b in bounds) + policy.gates


def _layer(per_metric: dict[str, tuple[Bound, ...]], bounds: Sequence[Bound], off: frozenset[str]) -> None:
    """Apply one layer: its bounds replace earlier bounds on the same metric; ``off`` removes them."""
    for metric in off:
        per_metric.pop(metric, None)
    fresh: dict[str, list[Bound]] = {}
    for bound in bounds:
        fresh.setdefault(bound.metric, []).append(bound)
    for metric, items in fresh.items():
        per_metric[metric] = tuple(items)


# --------------------------------------------------------------------------------------------
# The policy file.


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
                if isinstance(item, str):
                    match = _BOUND_RE.match(item)
                    if not match:
                        raise self.fail(f"{where}.{key}", f"bad bound {item!r}: expected \"OP NUMBER\" with OP one of "
                                                          f"{' '.join(_OPS)}, e.g. \">= 0.99\" (or \"off\")")
                    op, number = match.group(1), float(match.group(2))
                else:
                    higher = METRICS[metric].higher_is_better
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
        given = {k: table[k] for k in _SELECTOR_KEYS if k in table}
        if not given:
            raise self.fail(where, f"selects no rows: give at least one of {', '.join(_SELECTOR_KEYS)} "
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
                    try:
                        patterns.append(re.compile(pattern, re.MULTILINE))
                    except re.error as exc:
                        raise self.fail(at, f"bad regular expression {pattern!r}: {exc}") from None
                fields[key] = tuple(patterns)
            elif key in ("dtype", "left_dtype", "right_dtype"):
                fields[key] = _glob_regex([_DTYPE_ALIASES.get(v.lower(), v) for v in self.strings(at, value)])
            elif key == "op":
                fields[key] = _glob_lines(self.strings(at, value))
            else:
                fields[key] = _glob_regex(self.strings(at, value))
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
    """The canonical metric a TOML key names (name or alias, see :data:`compare.kernels.ALIASES`)."""
    return ALIASES.get(re.sub(r"[\s_\-]", "", key).lower())


_TOP_KEYS = ("version", "strict", "defaults", "rule", "waiver")
_RULE_KEYS = (*_SELECTOR_KEYS, "note")
_WAIVER_KEYS = (*_SELECTOR_KEYS, "reason", "expires", "metrics")


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read a TOML policy file (format: docs/policy.md; a starter: :func:`starter_policy`).

    Raises :class:`OptionError` naming the file, and the key or TOML line, for every problem:
    unreadable file, TOML syntax, unknown key, unknown metric, bad bound, bad regular expression,
    bad date, a rule or waiver without selector, a waiver without reason.
    """
    path = Path(path)
    reader = _Reader(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise OptionError(f"cannot read policy file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise OptionError(f"policy file {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise OptionError(f"policy file {path}: not valid TOML: {exc}") from None
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


# --------------------------------------------------------------------------------------------
# vcompare policy --init


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


__all__ = ["DTYPE_EPS", "NOT_COMPARED", "BoundResolver", "Policy", "Rule", "Selector", "Waiver", "dtype_bounds",
           "dtype_family", "field_key", "gated_metrics", "load_policy", "names_text", "starter_policy"]
