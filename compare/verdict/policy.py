"""Accuracy policies: which bounds apply to which report row, and which failures are waived.

A :class:`Policy` comes from ``--gate`` options (:meth:`Policy.from_gates`), from a TOML policy
file (:func:`load_policy`, read with the standard library's :mod:`tomllib`), or both
(:meth:`Policy.with_gates`). :func:`compare.verdict.gates.evaluate` checks rows against it. The file format,
the built-in dtype bounds and how bounds combine are documented in ``docs/policy.md``; in short:

- **Layers, per metric** (a later layer replaces the earlier ones' bounds *on that metric*):
  built-in dtype bounds (``[defaults] dtype = true``) < ``[defaults]`` < each matching
  ``[[rule]]`` in file order. A rule value ``"off"`` removes the metric's bounds for its rows.
- **``--gate``** bounds are added to whatever the layers give: they apply to every row.
- **Selectors** (rules and waivers): every key given must match (AND); a list is any-of (OR).
  ``op``: glob on each operator name of the NPUDump / GroundTruth cells (comma-split) and on the
  TensorIndex; ``op_regex``: :func:`re.search` on the same strings (names of at most
  :data:`MAX_REGEX_NAME` characters; patterns bounded by :func:`regex_problem`); ``op_type``: glob on OpType;
  ``dtype``: glob on the left *or* the right data type (``left_dtype`` / ``right_dtype``: that
  side only; ``fp16``/``fp32``/``bf16``/``fp8`` read as numpy names); ``rank`` / ``iteration`` /
  ``graph``: integers (a row without that coordinate does not match).
- **Globs** (``op``, ``op_type``, ``dtype``) have :mod:`fnmatch`'s semantics and are matched in
  time linear in the name by :class:`Globs` (no regex backtracking; docs/policy.md, "Bounds of
  the file").
- **Waivers** need a ``reason``; ``expires`` (a TOML date) ends them: an expired waiver waives
  nothing and fails the run. ``metrics`` limits a waiver to those metrics and/or
  ``"not-compared"`` (rows or metrics that were not computed); without it, it waives everything
  its selector matches.
"""

from __future__ import annotations

import datetime
import fnmatch
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from ..kernels import ALIASES, METRIC_NAMES, METRICS, metric_key
from ..records import ARGUMENT_METRIC, Bound, MetricRow, RowKind
from ..stats import STAT_METRIC_NAMES, STAT_METRIC_OF, TEXT_STATS

if TYPE_CHECKING:
    from ..stats_table import RowColumns

#: The waiver ``metrics`` entry that covers rows (or gated metrics) that were not computed.
NOT_COMPARED = "not-compared"

#: Machine epsilon (spacing of 1.0 to the next value) of the data types with built-in bounds. int8
#: data is quantised: its resolution relative to the range is 1/127, about 2**-7 (like bfloat16's
#: 8 significant bits). fp8 names are matched by prefix (``float8_e4m3fn``, ``float8_e4m3fnuz`` ...).
#: The narrow device types (docs/dtypes.md): eps = 2**-(mantissa bits); HiFloat8's mantissa tapers
#: from 3 bits (magnitudes 2**-3 .. 2**4) to 1, its eps is taken where values are most common, near
#: 1; float8_e8m0 (powers of two: scale tensors) has 2**0; int4, like int8, 1/7 ~ 2**-3.
DTYPE_EPS: dict[str, float] = {
    "float32": 2.0**-23,
    "float16": 2.0**-10,
    "bfloat16": 2.0**-7,
    "int8": 2.0**-7,
    "float8_e4m3": 2.0**-3,
    "float8_e5m2": 2.0**-2,
    "hifloat8": 2.0**-3,
    "float8_e8m0": 2.0**0,
    "float6_e2m3": 2.0**-3,
    "float6_e3m2": 2.0**-2,
    "float4_e2m1": 2.0**-1,
    "float4_e1m2": 2.0**-2,
    "hifloat4": 2.0**-2,
    "int4": 2.0**-3,
}

DTYPE_ALIASES = {
    "fp32": "float32", "float": "float32", "fp16": "float16", "half": "float16", "bf16": "bfloat16",
    "fp64": "float64", "double": "float64", "fp8": "float8_*", "fp8_e4m3": "float8_e4m3*",
    "fp8_e5m2": "float8_e5m2*", "hif8": "hifloat8", "fp6": "float6_*", "fp4": "float4_*", "hif4": "hifloat4",
    "e8m0": "float8_e8m0",
}

BOUND_OPS = (">=", "<=", "==", ">", "<")
BOUND_RE = re.compile(r"^\s*(>=|<=|==|>|<)\s*([-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|[0-9]+\.|inf))\s*$")
SELECTOR_KEYS = ("op", "op_regex", "op_type", "dtype", "left_dtype", "right_dtype", "rank", "iteration", "graph")


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


def dtype_bounds(left: str | None, right: str | None, kind: RowKind = RowKind.TENSOR) -> tuple[Bound, ...]:
    """The built-in bounds of a row with these data types (docs/policy.md, "dtype defaults").

    The coarser of the two known types decides (an fp16 NPU tensor against an fp32 golden is held
    to fp16 precision). With ``eps`` that type's machine epsilon the error budget is half the
    significand bits, a relative L2 error of ``sqrt(eps)``.

    Tensor rows: ``RelativeEuclideanDistance <= sqrt(eps)`` and ``CosineSimilarity >= 1 - eps/2``
    (for an error of relative size ``d`` orthogonal to the data, ``cos = 1 - d**2/2``); no known
    type, no bounds.

    Statistics rows (:data:`compare.stats.STAT_METRIC_NAMES`): ``L2NormRelDiff <= sqrt(eps)``
    (by the triangle inequality ``| ||x|| - ||y|| | <= ||x - y||``, so any pair within the tensor
    bound is within it), ``MaxRelDiff`` and ``MinRelDiff <= sqrt(eps)`` (``|max x - max y| <= max
    |x - y|``: the same relative budget on the extreme elements); no bound on ``AvgRelDiff`` (the
    mean of a zero-centred tensor cancels, its relative difference has no scale) nor on the
    absolute diffs (they carry the data's units). Checksums (``ChecksumDiff``, ``MD5Diff``,
    ``SHA1Diff``) must be the same (``== 0``), whatever the data type. Each statistics bound
    applies only to rows that have its statistic (:attr:`Bound.if_present`).
    """
    return dtype_bounds_of(coarsest_family(left, right), kind)


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

#: The statistics metrics the built-in bounds hold to ``sqrt(eps)``, and the checksums held to same.
STATS_REL_BOUNDED = ("MaxRelDiff", "MinRelDiff", "L2NormRelDiff")
CHECKSUM_METRICS = tuple(m for m in STAT_METRIC_NAMES if STAT_METRIC_OF[m][0] in TEXT_STATS)


def _make_stats_bounds(family: str | None) -> tuple[Bound, ...]:
    checksums = tuple(Bound(m, "==", 0.0, "built-in default for checksums (the same on both sides)", if_present=True)
                      for m in CHECKSUM_METRICS)
    if family is None:
        return checksums
    eps = DTYPE_EPS[family]
    source = f"built-in statistics default for {family} (eps 2**{round(math.log2(eps))})"
    return tuple(Bound(m, "<=", math.sqrt(eps), source, if_present=True) for m in STATS_REL_BOUNDED) + checksums


_STATS_BOUNDS: dict[str | None, tuple[Bound, ...]] = {
    family: _make_stats_bounds(family) for family in (*DTYPE_EPS, None)}


#: Argument rows (msprobe's non-tensor arguments): the same value on both sides, whatever the type.
_ARGUMENT_BOUNDS = (Bound(ARGUMENT_METRIC, "==", 0.0, "built-in default for non-tensor arguments (the same on both "
                                                      "sides)", if_present=True),)


def metric_name(text: str) -> str | None:
    """The canonical metric a gate or policy key names: a tensor metric (name, alias or, in
    :func:`compare.verdict.gates.parse_gate`, index; :data:`compare.kernels.ALIASES`) or a statistics
    metric (``MaxRelDiff``, ``l2norm_rel_diff`` ...; case, ``_``, ``-`` and spaces ignored)."""
    key = metric_key(text)
    return ALIASES.get(key) or _STAT_KEYS.get(key)


_STAT_KEYS = {metric_key(m): m for m in STAT_METRIC_NAMES}


def higher_is_better(metric: str) -> bool:
    """Whether larger values of a metric are better (a bare number in a policy file is then a
    lower bound): CosineSimilarity; every other tensor metric and every statistics diff is an error."""
    return metric in METRICS and METRICS[metric].higher_is_better


def dtype_bounds_of(family: str | None, kind: RowKind) -> tuple[Bound, ...]:
    """:func:`dtype_bounds` of a data-type family already found (None: no known type)."""
    if kind is RowKind.STATISTICS:
        return _STATS_BOUNDS[family]
    if kind is RowKind.ARGUMENT:
        return _ARGUMENT_BOUNDS
    return _DTYPE_BOUNDS[family] if family is not None else ()


def _glob_parts(pattern: str) -> list[str]:
    """A glob cut at its stars: the star-free pieces between them, in order (``a*b*c`` ->
    ``["a", "b", "c"]``, ``*x*`` -> ``["", "x", ""]``). A ``*`` inside ``[...]`` is a class member,
    not a star; an unclosed ``[`` is a literal (the scan of :func:`fnmatch.translate`)."""
    parts: list[str] = []
    start = i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            parts.append(pattern[start:i])
            i += 1
            start = i
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            i = j + 1 if j < n else i + 1
        else:
            i += 1
    parts.append(pattern[start:])
    return parts


def _piece(text: str, *, at_end: bool) -> re.Pattern[str]:
    """One star-free piece as a regular expression of single-character atoms (:func:`fnmatch.translate`'s
    literals, ``?`` and classes; no quantifier, so no backtracking), anchored at the end if ``at_end``."""
    body = fnmatch.translate(text)
    body = body.removesuffix("\\Z").removesuffix("\\z")  # translate's end anchor (3.11: \Z; 3.14: \z)
    return re.compile(body + ("\\Z" if at_end else ""))


def _compiled(text: str, *, at_end: bool) -> str | re.Pattern[str]:
    """A star-free piece: itself when it is literal (no ``?``, no ``[``), else :func:`_piece`."""
    return text if "?" not in text and "[" not in text else _piece(text, at_end=at_end)


class _Glob:
    """One glob matched in linear time: the classic wildcard algorithm, no regex backtracking.

    The pattern is cut at its stars into star-free pieces (each matches a fixed number of
    characters). The first piece must match at the start, the last at the end, and each piece in
    between is found leftmost after the previous one: taking the leftmost match of a fixed-length
    piece never loses a match, so nothing is retried. The cost is at most (text length) x (piece
    length) per piece, against the exponential ``[^\\n]*`` backtracking of a translated regex
    (a 6,000-character name against ``*.*.*.attn*`` took 212 s). Literal pieces (the common
    case) use ``str.startswith`` / ``str.find`` / ``str.endswith``.
    """

    __slots__ = ("_whole", "_first", "_middle", "_last", "needs")

    def __init__(self, pattern: str) -> None:
        parts = _glob_parts(pattern)
        literal = [p for p in parts if "?" not in p and "[" not in p]
        #: A text this glob matches holds this piece: a name text without it is skipped at once.
        self.needs = max(literal, key=len) if literal else ""
        self._whole = _compiled(parts[0], at_end=True) if len(parts) == 1 else None
        self._first = _compiled(parts[0], at_end=False) if len(parts) > 1 and parts[0] else None
        self._middle = tuple(_compiled(p, at_end=False) for p in parts[1:-1] if p)
        self._last = _compiled(parts[-1], at_end=True) if len(parts) > 1 and parts[-1] else None

    def match(self, text: str) -> bool:
        """Whether the glob matches ``text`` in full (:func:`fnmatch.fnmatchcase`)."""
        whole = self._whole
        if whole is not None:
            return text == whole if type(whole) is str else whole.match(text) is not None
        pos = 0
        first = self._first
        if first is not None:
            if type(first) is str:
                if not text.startswith(first):
                    return False
                pos = len(first)
            else:
                found = first.match(text)
                if found is None:
                    return False
                pos = found.end()
        for piece in self._middle:
            if type(piece) is str:
                at = text.find(piece, pos)
                if at < 0:
                    return False
                pos = at + len(piece)
            else:
                found = piece.search(text, pos)
                if found is None:
                    return False
                pos = found.end()
        last = self._last
        if last is None:
            return True
        if type(last) is str:
            return len(text) - len(last) >= pos and text.endswith(last)
        return last.search(text, pos) is not None


class Globs:
    """Any of several globs (case-sensitive, ``*`` ``?`` ``[...]`` as :mod:`fnmatch`), matched by
    :class:`_Glob` in time linear in the text (module docstring of :mod:`compare.verdict.policy`).

    :meth:`match`: a whole string (OpType, a data type); :meth:`search`: the lines of
    :func:`names_text`, true when a glob matches one line in full."""

    __slots__ = ("patterns", "_globs")

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(patterns)
        self._globs = tuple(_Glob(p) for p in self.patterns)

    def match(self, text: str) -> bool:
        return any(glob.match(text) for glob in self._globs)

    def search(self, names: str) -> bool:
        lines: list[str] | None = None
        for glob in self._globs:
            if glob.needs not in names:  # C-speed necessary condition: the usual "no match" exit
                continue
            if lines is None:
                lines = names.split("\n")
            if any(map(glob.match, lines)):
                return True
        return False


def glob_regex(patterns: Sequence[str]) -> Globs:
    """The globs matching a whole string against any of ``patterns`` (case-sensitive globs)."""
    return Globs(patterns)


def glob_lines(patterns: Sequence[str]) -> Globs:
    """The globs matching a line of :func:`names_text` in full (``*`` and ``?`` never cross a line
    end: :meth:`Globs.search`)."""
    return Globs(patterns)


#: ``op_regex`` bounds: a pattern of at most this many characters ...
MAX_REGEX_LENGTH = 1000
#: ... whose counted repetitions ``{m}`` / ``{m,n}`` stay at or below this (Python's own limit is
#: 4,294,967,294, and a large count makes a huge program) ...
MAX_REGEX_REPEAT = 1000
#: ... is searched in names of at most this many characters: a regular expression can take time
#: polynomial (nested quantifiers: exponential) in the name's length, and names come from the
#: dump. A longer name is not searched: an ``op_regex`` rule or waiver does not select it (``op``
#: globs, linear in time, still do).
MAX_REGEX_NAME = 1024

_REPEAT_RE = re.compile(r"(?<!\\)\{\s*(\d*)\s*(?:,\s*(\d*)\s*)?\}")


def regex_problem(pattern: str) -> str | None:
    """Why an ``op_regex`` pattern is refused (its length, a repetition count above the bounds),
    or None. Compiling it is the caller's (``re.error``, ``OverflowError``, ``RecursionError``)."""
    if len(pattern) > MAX_REGEX_LENGTH:
        return f"a regular expression of {len(pattern)} characters (at most {MAX_REGEX_LENGTH})"
    for found in _REPEAT_RE.finditer(pattern):
        for count in found.groups():
            if count and (len(count) > 6 or int(count) > MAX_REGEX_REPEAT):
                return (f"repetition {found.group()} counts above {MAX_REGEX_REPEAT} (write + or * for "
                        "an unbounded repetition)")
    return None


class NameRegexes:
    """``op_regex`` patterns searched (any of them) in the names of :func:`names_text` no longer
    than :data:`MAX_REGEX_NAME` characters."""

    __slots__ = ("patterns",)

    def __init__(self, patterns: Sequence[re.Pattern[str]]) -> None:
        self.patterns = tuple(patterns)

    def search(self, names: str) -> bool:
        if len(names) > MAX_REGEX_NAME:
            names = "\n".join(line for line in names.split("\n") if len(line) <= MAX_REGEX_NAME)
        return any(p.search(names) is not None for p in self.patterns)


@dataclass(frozen=True)
class Selector:
    """Which rows a rule or waiver applies to (module docstring); ``text`` is the TOML it came from.

    Every field given must match; ``None`` means "any". Globs are :class:`Globs` (linear-time
    matching); ``op`` and ``op_regex`` search :func:`names_text` (one name a line).
    """

    text: str
    op: Globs | None = None
    op_regex: NameRegexes | None = None
    op_type: Globs | None = None
    dtype: Globs | None = None
    left_dtype: Globs | None = None
    right_dtype: Globs | None = None
    rank: frozenset[int] | None = None
    iteration: frozenset[int] | None = None
    graph: frozenset[int] | None = None

    @property
    def uses_names(self) -> bool:
        return self.op is not None or self.op_regex is not None

    def matches(self, row: MetricRow) -> bool:
        """Whether ``row`` is selected."""
        return self.selects(RowFields.of(row), row.left_op, row.right_op, row.tensor_id)

    def selects(self, fields: RowFields, left_op: str, right_op: str, tensor_id: str | None) -> bool:
        """Whether the row of these fields and names is selected (:meth:`matches` of its parts)."""
        return self.matches_fields(fields) and (
            not self.uses_names or self.matches_names(names_of(left_op, right_op, tensor_id)))

    def matches_names(self, names: str) -> bool:
        """The ``op`` / ``op_regex`` part, on a row's :func:`names_text`."""
        if self.op is not None and not self.op.search(names):
            return False
        return self.op_regex is None or self.op_regex.search(names)

    def name_test(self) -> Callable[[str], object]:
        """:meth:`matches_names` as the fastest callable (truthy = matches): the one name test's
        own ``search`` when the selector has only ``op`` or only ``op_regex``."""
        if self.op_regex is None and self.op is not None:
            return self.op.search
        if self.op is None and self.op_regex is not None:
            return self.op_regex.search
        return self.matches_names

    def matches_fields(self, row: RowFields) -> bool:
        """Everything but the names: rank, iteration, graph, OpType, data types (:class:`RowFields`)."""
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


@dataclass(frozen=True, slots=True)
class RowFields:
    """The fields of a row selectors and built-in bounds read besides the names (rows of one
    network share a few: :class:`BoundResolver` works once per distinct value)."""

    op_type: str | None
    left_dtype: str | None
    right_dtype: str | None
    rank: int | None
    iteration: int | None
    graph: int | None
    kind: RowKind

    @classmethod
    def of(cls, row: MetricRow) -> RowFields:
        return cls(row.op_type, row.left_dtype, row.right_dtype, row.rank, row.iteration, row.graph, row.kind)

    @classmethod
    def at(cls, columns: RowColumns, row: int) -> RowFields:
        """The fields of row ``row`` of ``columns``."""
        return cls(columns.op_type[row], columns.left_dtype[row], columns.right_dtype[row], columns.rank[row],
                   columns.iteration[row], columns.graph[row], columns.kind[row])


def _dt(pattern: Globs, dtype: str | None) -> bool:
    return dtype is not None and pattern.match(dtype)


def names_text(row: MetricRow) -> str:
    """What ``op`` / ``op_regex`` selectors look at, one name a line: each operator name of the
    NPUDump and GroundTruth cells (split on ``,``; the ``*`` of a missing side left out), then
    the TensorIndex. A glob must match a whole line; a regular expression is searched with
    ``re.MULTILINE`` (``^`` and ``$`` anchor at each name)."""
    return names_of(row.left_op, row.right_op, row.tensor_id)


def names_of(left: str, right: str, tensor: str | None) -> str:
    """:func:`names_text` of a row whose NPUDump, GroundTruth and TensorIndex cells are these."""
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


#: The built-in layer of a row: (data-type family, row kind), None without ``dtype = true``.
_Family: TypeAlias = "tuple[str | None, RowKind] | None"
#: What the fields of a row decide (:meth:`BoundResolver._by_fields`): its built-in layer, the rules
#: it matches without a name test, the (rule, name test) pairs still to run on its names.
_Known: TypeAlias = "tuple[_Family, tuple[int, ...], tuple[tuple[int, Callable[[str], object]], ...]]"


class BoundResolver:
    """The bounds of each row under a policy, with the matching work done once per distinct case.

    Per distinct :class:`RowFields` (OpType, data types, rank, iteration, graph, row kind) the
    data-type family and the rules whose other fields match are found once; per row only the
    ``op`` / ``op_regex`` patterns of those rules are searched. The bound tuple of each (family,
    matched rules) is computed once (the same tuple object each time). :attr:`used` lists every
    distinct bound returned so far, in first-seen order.

    :meth:`groups` resolves many rows of a :class:`~compare.stats_table.RowColumns` at once: the
    bounds of a row depend only on its data types and kind when the policy has no rules (on
    nothing without ``dtype = true``), on its :class:`RowFields` when no rule tests names; then
    one resolution per distinct value, made in the order of each value's first row, gives the
    bounds and :attr:`used` a row-by-row resolution gives. Rules that test names are searched
    row by row, in row order, each row's fields matched once per distinct value.
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._cache: dict[tuple[_Family, tuple[int, ...]], tuple[Bound, ...]] = {}
        self._fields: dict[RowFields, _Known] = {}
        self._tests = [rule.selector.name_test() if rule.selector.uses_names else None for rule in policy.rules]

    def bounds(self, row: MetricRow) -> tuple[Bound, ...]:
        """The bounds of ``row``."""
        return self.bounds_of(RowFields.of(row), row.left_op, row.right_op, row.tensor_id)

    def bounds_of(self, fields: RowFields, left_op: str, right_op: str, tensor_id: str | None) -> tuple[Bound, ...]:
        """The bounds of the row of these fields and names (:meth:`bounds`)."""
        return self._named(self._known(fields), left_op, right_op, tensor_id)

    def _known(self, fields: RowFields) -> _Known:
        """:meth:`_by_fields` of ``fields``, once."""
        known = self._fields.get(fields)
        if known is None:
            known = self._fields[fields] = self._by_fields(fields)
        return known

    def _named(self, known: _Known, left_op: str, right_op: str, tensor_id: str | None) -> tuple[Bound, ...]:
        """The bounds of a row whose fields are ``known`` and whose names are these."""
        family, matched, by_name = known
        if by_name:
            names = names_of(left_op, right_op, tensor_id)
            more = [i for i, test in by_name if test(names)]
            if more:
                matched = tuple(sorted(matched + tuple(more)))
        key = (family, matched)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._combine(family, matched)
        return hit

    def groups(self, columns: RowColumns, positions: np.ndarray) -> list[tuple[tuple[Bound, ...], np.ndarray]]:
        """The rows at ``positions`` (increasing) grouped by their bounds: each group's bounds and
        positions (increasing), groups in the order of their first row (class docstring)."""
        if not len(positions):
            return []
        if not self.policy.rules and not self.policy.dtype_defaults:  # the same bounds for every row
            return [(self.bounds_of(RowFields.at(columns, int(positions[0])), "", "", None), positions)]
        where = positions.tolist()
        kinds = list(map(id, columns.kind))  # the members are singletons; an Enum's hash is a Python call
        if self.policy.rules:
            fields = [columns.op_type, columns.left_dtype, columns.right_dtype, columns.rank, columns.iteration,
                      columns.graph, kinds]
        else:
            fields = [kinds, columns.left_dtype, columns.right_dtype]
        if len(where) != len(columns):
            fields = [list(map(field.__getitem__, where)) for field in fields]
        first, number = distinct(fields, len(where))
        if any(test is not None for test in self._tests):  # the names of each row are searched, in row order
            known = [self._known(RowFields.at(columns, where[at])) for at in first.tolist()]
            by_bounds: dict[int, tuple[tuple[Bound, ...], list[int]]] = {}
            left_op, right_op, tensor_id = columns.left_op, columns.right_op, columns.tensor_id
            for i, k in zip(where, number.tolist()):
                bounds = self._named(known[k], left_op[i], right_op[i], tensor_id[i])
                by_bounds.setdefault(id(bounds), (bounds, []))[1].append(i)
            return [(bounds, np.asarray(rows, dtype=np.intp)) for bounds, rows in by_bounds.values()]
        if len(first) == 1:
            return [(self.bounds_of(RowFields.at(columns, where[0]), "", "", None), positions)]
        by_number = np.argsort(number, kind="stable")
        ends = np.cumsum(np.bincount(number, minlength=len(first))).tolist()
        out: dict[int, tuple[tuple[Bound, ...], list[np.ndarray]]] = {}
        for k, at in enumerate(first.tolist()):
            bounds = self.bounds_of(RowFields.at(columns, where[at]), "", "", None)
            out.setdefault(id(bounds), (bounds, []))[1].append(by_number[ends[k - 1] if k else 0:ends[k]])
        return [(bounds, positions[np.sort(np.concatenate(parts)) if len(parts) > 1 else parts[0]])
                for bounds, parts in out.values()]

    def _by_fields(self, fields: RowFields) -> _Known:
        """((data-type family, row kind) when built-in bounds apply, rules matched without a name test, (rule, name test) still to run)."""
        family = ((coarsest_family(fields.left_dtype, fields.right_dtype), fields.kind)
                  if self.policy.dtype_defaults else None)
        plain: list[int] = []
        by_name: list[tuple[int, Callable[[str], object]]] = []
        for i, rule in enumerate(self.policy.rules):
            if rule.selector.matches_fields(fields):
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

    def _combine(self, family: _Family, matched: tuple[int, ...]) -> tuple[Bound, ...]:
        policy = self.policy
        per_metric: dict[str, tuple[Bound, ...]] = {}
        _layer(per_metric, dtype_bounds_of(*family) if family is not None else (), frozenset())
        _layer(per_metric, policy.defaults, policy.defaults_off)
        for i in matched:
            rule = policy.rules[i]
            _layer(per_metric, rule.bounds, rule.off)
        return tuple(b for bounds in per_metric.values() for b in bounds) + policy.gates


def distinct(columns: Sequence[Sequence[object]], rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``columns`` (each ``rows`` long; hashable values): the position of
    the first row of each, in order of appearance, and each row's number in that order.

    Each column is numbered by a dict of its distinct values and the numbers are combined as
    integers: no tuple is made a row (100,000 tuples kept alive wake the garbage collector, whose
    passes over a large heap cost more than the grouping)."""
    code = np.zeros(rows, dtype=np.int64)
    span = 1
    for column in columns:
        numbers = {value: k for k, value in enumerate(dict.fromkeys(column))}
        if span * len(numbers) >= 2**62:
            code = np.unique(code, return_inverse=True)[1].astype(np.int64)
            span = int(code.max()) + 1
        code = code * len(numbers) + np.fromiter(map(numbers.__getitem__, column), dtype=np.int64, count=rows)
        span *= len(numbers)
    if not rows:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    _, first, number = np.unique(code, return_index=True, return_inverse=True)
    order = np.argsort(first)  # distinct values by first appearance
    renumber = np.empty(len(order), dtype=np.intp)
    renumber[order] = np.arange(len(order))
    return first[order], renumber[number.reshape(-1)]


def _layer(per_metric: dict[str, tuple[Bound, ...]], bounds: Sequence[Bound], off: frozenset[str]) -> None:
    """Apply one layer: its bounds replace earlier bounds on the same metric; ``off`` removes them."""
    for metric in off:
        per_metric.pop(metric, None)
    fresh: dict[str, list[Bound]] = {}
    for bound in bounds:
        fresh.setdefault(bound.metric, []).append(bound)
    for metric, items in fresh.items():
        per_metric[metric] = tuple(items)


__all__ = ["CHECKSUM_METRICS", "DTYPE_EPS", "MAX_REGEX_LENGTH", "MAX_REGEX_NAME", "MAX_REGEX_REPEAT", "NOT_COMPARED",
           "STATS_REL_BOUNDED", "BoundResolver", "Globs", "NameRegexes", "Policy", "RowFields", "Rule", "Selector",
           "Waiver", "distinct", "dtype_bounds", "dtype_bounds_of", "dtype_family", "gated_metrics", "glob_lines",
           "glob_regex", "higher_is_better", "metric_name", "names_of", "names_text", "regex_problem"]
