"""Accuracy gates: check a run's rows against a :class:`~compare.verdict.policy.Policy` -> :class:`Verdict`.

A ``--gate`` is ``METRIC OP NUMBER`` (:func:`parse_gate`), ``OP`` one of ``>= <= > < ==``, the
metric any name, alias or index of :data:`compare.kernels.METRICS` except StandardDeviation (not a
single number), or a statistics metric (:data:`compare.stats.STAT_METRIC_NAMES`: ``MaxRelDiff``,
``L2NormDiff`` ..., ``ChecksumDiff==same``) for statistics rows, or ``ArgumentDiff`` (``ArgumentDiff==same``:
msprobe's non-tensor arguments must be equal; checked on argument rows only, every other metric
being undefined there). A policy file adds defaults,
rules and waivers (:mod:`compare.verdict.policy`).

:func:`evaluate`, row by row (docs/policy.md):

- a row with ``expected_gap`` (structurally not compared: a mixed-precision Cast without
  counterpart, a quant-filtered op, an overflow record, an NPU-only operator the fusion rule gives
  no golden, a Data/Const op the device does not dump) is counted in ``Verdict.expected_gaps``
  and not checked;
- strict policy (the default with any gate or file): a row that was not compared (unreadable or
  truncated dump, shape mismatch, missing counterpart) is one *incomplete* failure carrying the
  row's reasons; on a compared row, a gated metric that was not computed (``None``: e.g. cosine of
  an all-zero tensor, or not selected) is an incomplete failure too. Not strict: neither counts;
- a computed value that violates a bound fails, and a computed NaN violates every bound;
- metrics with no value for the data are not checked (counted in ``Verdict.undefined``): on a
  bool-vs-bool row only CosineSimilarity is defined (RelativeEuclideanDistance is checked when
  the kernel could compute it); on an empty tensor (a 0 in the shape) nothing is; on a
  statistics row, the statistics a side recorded as null (``MetricRow.undefined``: msprobe's
  mean of an int64 tensor);
- a bound of the other row kind (CosineSimilarity on a statistics row; MaxRelDiff on a tensor row
  whose sides recorded no statistics -- msprobe tensor dumps record them, and their rows carry
  the statistics metrics too) is not computed: an incomplete failure under strict, whose message
  says so; built-in bounds follow the row kind and apply only to rows with their statistic
  (``Bound.if_present``);
- a failure a valid waiver covers moves to ``Verdict.waived``; an expired waiver is an error.

Parts (``parts``: the :class:`~compare.records.PartReport` of each part of a run compared in turn,
``--rank all`` ...): a part that was not compared or was lost is one *incomplete* failure naming
the part and the reason, strict policy or not, and no waiver covers it -- a gated run with a part
missing is never PASSED. Its row (:meth:`~compare.records.PartReport.row`) is that failure's row
and is not checked again; without ``parts`` (a saved CSV or parquet table) that row is one more
row not compared.
Part failures come first, then the rows' in row order.

Outcome: FAILED if a value failure or an error remains; else INCOMPLETE if an incomplete failure
remains; else PASSED; NOT_GATED when the policy asks nothing (no bound, not strict).
"""

from __future__ import annotations

import datetime
import math
import operator
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..errors import OptionError
from ..kernels import BOOL_CAPABLE, METRIC_NAMES, metric_key, resolve_algorithms
from ..pairing.near import did_you_mean
from ..records import (ARGUMENT_METRIC, Bound, CheckFailure, MetricRow, Outcome, PairStatus, PartReport, RowKind,
                       Verdict)
from ..stats import STAT_METRIC_NAMES, STAT_METRIC_OF
from .policy import CHECKSUM_METRICS, BoundResolver, Policy, Waiver, metric_name

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    ">": operator.gt,
    "<": operator.lt,
}
#: Every run of comparison characters in a gate text: the five operators and the near misses
#: (``=>``, ``=<``, ``!=``, ``<>``, a lone ``=``) a typo makes.
_OP_RE = re.compile(r">=|<=|==|=>|=<|!=|<>|>|<|=")
#: The near misses with the operator meant (None: no such operator).
_NEAR_OPS: dict[str, str | None] = {"=>": ">=", "=<": "<=", "=": "==", "!=": None, "<>": None}
#: An -alg index, and the name of the file an unquoted ``>=NUMBER`` / ``>NUMBER`` leaves behind.
_INDEX_RE = re.compile(r"^[0-9]+$")
_LEFT_BEHIND_RE = re.compile(r"^=?[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$")
_FORM = "expected METRIC>=NUMBER (ops: >= <= > < ==), e.g. CosineSimilarity>=0.99"

#: Metrics with a value on bool-vs-bool rows (the others are never computed there;
#: RelativeEuclideanDistance only for a golden without True).
_BOOL_METRICS = frozenset(BOOL_CAPABLE)
#: Of those, the ones whose ``None`` on a bool row is the data's doing, not a gap (not checked).
_BOOL_MAYBE = frozenset({"RelativeEuclideanDistance"})


#: The one metric an argument row has a value for (every other metric is undefined there).
_ARGUMENT_ONLY = frozenset({ARGUMENT_METRIC})
_ARGUMENT_KEY = metric_key(ARGUMENT_METRIC)


def parse_gate(text: str) -> Bound:
    """Parse ``Metric>=number`` into a :class:`Bound` whose source is ``--gate TEXT``.

    Raises :class:`OptionError` whose one line says what is wrong and the accepted form: an
    empty text, no operator (with the quoting hint of :func:`_no_operator`), two operators, a
    near-miss operator (``=>``), no metric or no number, a metric that is not one (with the
    closest names), a group of metrics (``all``), StandardDeviation, or a number that is not one
    (NaN included).
    """
    bad = f"bad --gate {text!r}"
    stripped = text.strip()
    if not stripped:
        raise OptionError(f"{bad}: empty; {_FORM}")
    ops = [m.group() for m in _OP_RE.finditer(stripped)]
    if not ops:
        raise OptionError(f"{bad}: {_no_operator(stripped)}")
    if len(ops) > 1:
        raise OptionError(f"{bad}: {len(ops)} comparisons ({' '.join(ops)}); a gate is one bound on one metric: "
                          "give one --gate per bound, e.g. --gate 'CosineSimilarity>=0.99' --gate "
                          "'MaxAbsoluteError<=1'")
    op = ops[0]
    if op not in _OPS:
        meant = _NEAR_OPS[op]
        fix = f"did you mean {meant!r}? " if meant else ""
        raise OptionError(f"{bad}: {op!r} is not a comparison; {fix}{_FORM}")
    name, _, number = (part.strip() for part in stripped.partition(op))
    if not name:
        raise OptionError(f"{bad}: no metric before {op!r}; {_FORM}")
    if not number:
        raise OptionError(f"{bad}: no number after {op!r}; {_FORM}")
    if metric_key(name) == _ARGUMENT_KEY:  # non-tensor arguments: 0.0 same, 1.0 different; only rows that have it
        if number.lower() == "same" and op == "==":
            number = "0"
        try:
            value = float(number)
        except ValueError:
            raise OptionError(f"{bad}: {number!r} is not a number or 'same'; e.g. {ARGUMENT_METRIC}==same") from None
        return Bound(metric=ARGUMENT_METRIC, op=op, value=value, source=f"--gate {stripped}", if_present=True)
    metric = _gate_metric(name, bad)
    if number.lower() == "same" and metric in CHECKSUM_METRICS and op == "==":
        number = "0"  # a checksum's metric is 0.0 when both sides are the same
    try:
        value = float(number)
    except ValueError:
        raise OptionError(f"{bad}: {number!r} is not a number; {_FORM}") from None
    if math.isnan(value):
        raise OptionError(f"{bad}: a bound cannot be NaN; {_FORM}")
    return Bound(metric=metric, op=op, value=value, source=f"--gate {stripped}")


#: The tensor metrics a gate can bound: all but StandardDeviation (four numbers, not one).
_TENSOR_GATEABLE = tuple(m for m in METRIC_NAMES if m != "StandardDeviation")


def gateable_metrics() -> tuple[str, ...]:
    """Every metric a gate can bound, canonical names: the tensor metrics but StandardDeviation
    (not a single number), the statistics metrics, ArgumentDiff."""
    return (*_TENSOR_GATEABLE, *STAT_METRIC_NAMES, ARGUMENT_METRIC)


def _gateable_text() -> str:
    return (f"gateable metrics: {', '.join(_TENSOR_GATEABLE)} (or their -alg aliases and indexes); statistics rows: "
            f"{', '.join(STAT_METRIC_NAMES)}; msprobe arguments: {ARGUMENT_METRIC}")


def _gate_metric(name: str, bad: str) -> str:
    """The canonical metric a gate's ``name`` is (a name, alias or -alg index); :class:`OptionError`
    for anything else: a group of metrics (``all``: an -alg word, not one metric), StandardDeviation,
    an unknown name (with the closest gateable ones)."""
    metric = _named_metric(name)
    if metric is None:
        try:
            group = resolve_algorithms(name)
        except OptionError:
            group = []
        if len(group) > 1:
            raise OptionError(f"{bad}: {name!r} is an -alg word that selects {len(group)} metrics, not a metric a "
                              "gate can bound; give one --gate per metric; "
                              f"{_gateable_text()}; {_FORM}")
        near = did_you_mean(name, gateable_metrics())
        raise OptionError(f"{bad}: unknown metric {name!r}; {near + ' ' if near else ''}{_gateable_text()}; {_FORM}")
    if metric == "StandardDeviation":
        raise OptionError(f"{bad}: StandardDeviation is not a single number and cannot be gated")
    return metric


def _named_metric(name: str) -> str | None:
    """The canonical metric ``name`` spells (:func:`~compare.verdict.policy.metric_name`) or whose
    -alg index it is; None otherwise."""
    if _INDEX_RE.match(name):
        return METRIC_NAMES[int(name)] if int(name) < len(METRIC_NAMES) else None
    return metric_name(name)


def _no_operator(text: str) -> str:
    """The diagnosis of a gate without operator. A metric name alone is most likely ``--gate
    cos>=0.99`` unquoted: the shell took ``>`` for a redirection, made a file ``=0.99`` and
    passed ``cos``; the file is looked for in the working folder (an empty file named
    ``=NUMBER`` or ``NUMBER``, the newest) to say so exactly."""
    metric = _named_metric(text)
    if metric is None:
        near = did_you_mean(text, gateable_metrics())
        return f"no comparison operator; {near + ' ' if near else ''}{_FORM}"
    left_behind = _redirect_file(Path("."))
    if left_behind is None:
        return (f"no comparison operator; did you mean --gate '{metric}>=0.99'? (quote it: the shell reads > as a "
                "redirection; a file named '=0.99' may have been created here)")
    op = ">=" if left_behind.startswith("=") else ">"
    bound = left_behind.removeprefix("=")
    return (f"no comparison operator; did you mean --gate '{metric}{op}{bound}'? (quote it: the shell read > as a "
            f"redirection and created the empty file {left_behind!r} here: remove it)")


def _redirect_file(folder: Path) -> str | None:
    """The name of the newest empty file in ``folder`` named ``=NUMBER`` or ``NUMBER`` (what an
    unquoted ``>=NUMBER`` / ``>NUMBER`` leaves behind), or None."""
    found: list[tuple[float, str]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return None
    for entry in entries:
        if not _LEFT_BEHIND_RE.match(entry.name):
            continue
        try:
            stat = entry.stat(follow_symlinks=False)
        except (ValueError, OSError):
            continue
        if entry.is_file(follow_symlinks=False) and stat.st_size == 0:
            found.append((stat.st_mtime, entry.name))
    return max(found)[1] if found else None


def _row_text(row: MetricRow) -> str:
    return row.tensor_id or (row.left_op if row.left_op != "*" else row.right_op)


def _reasons(row: MetricRow) -> str:
    return "; ".join(row.reasons) if row.reasons else "no reason recorded"


def _failure(i: int, row: MetricRow, metric: str | None, value: float | None, bound: Bound | None, message: str,
             incomplete: bool) -> CheckFailure:
    return CheckFailure(row=i, tensor_id=row.tensor_id, op_type=row.op_type, left_op=row.left_op,
                        right_op=row.right_op, metric=metric, value=value, bound=bound, message=message,
                        incomplete=incomplete)


def _defined(row: MetricRow) -> frozenset[str] | None:
    """Metrics that have a value for this row's data (None: all of them); see the module docstring."""
    if row.kind is RowKind.ARGUMENT:
        return _ARGUMENT_ONLY
    shape = row.shape
    if shape and 0 in shape:
        return frozenset()
    if row.left_dtype == "bool" and row.right_dtype == "bool":
        return _BOOL_METRICS
    return None


def _not_compared(i: int, row: MetricRow) -> CheckFailure:
    return _failure(i, row, None, None, None, f"{_row_text(row)} not compared ({row.status.value}): {_reasons(row)}",
                    True)


def _not_computed(i: int, row: MetricRow, bound: Bound) -> CheckFailure:
    why = _reasons(row)
    if row.kind is RowKind.STATISTICS and bound.metric not in STAT_METRIC_OF:
        why = "this row compares recorded statistics (no tensor data), gate it with a statistics metric such as " \
              "MaxRelDiff or L2NormRelDiff"
    elif row.kind is RowKind.TENSOR and bound.metric in STAT_METRIC_OF:
        why = ("a statistics metric: this tensor row has no statistics recorded on both sides (msprobe's dump.json, "
               "a MindSpore statistic.csv) to compare")
    elif bound.metric in STAT_METRIC_OF and bound.metric not in row.metrics:
        why = f"the statistic was not recorded on both sides; {why}"
    message = f"{bound.metric} not computed for {_row_text(row)}, required by {bound.text} ({bound.source}): {why}"
    return _failure(i, row, bound.metric, None, bound, message, True)


def _violation(i: int, row: MetricRow, bound: Bound, value: float) -> CheckFailure:
    value = float(value)  # repr of a Python float: the shortest text that reads back exactly
    message = f"{bound.metric} = {value!r} violates {bound.text} ({bound.source})"
    return _failure(i, row, bound.metric, value, bound, message, False)


def violations(row: MetricRow, bounds: Sequence[Bound]) -> list[tuple[Bound, float]]:
    """The bounds a compared row's computed values break, with the value (the value rules of
    :func:`evaluate`: a NaN breaks every bound; a metric not computed or undefined for the data
    breaks nothing here -- completeness is :func:`evaluate`'s business)."""
    defined = _defined(row)
    out: list[tuple[Bound, float]] = []
    for bound in bounds:
        if defined is not None and bound.metric not in defined:
            continue
        if bound.metric in row.undefined:
            continue
        value = row.metrics.get(bound.metric)
        if value is not None and (value != value or not _OPS[bound.op](value, bound.value)):
            out.append((bound, float(value)))
    return out


def evaluate(rows: Sequence[MetricRow], policy: Policy, *, today: datetime.date | None = None,
             parts: Sequence[PartReport] = ()) -> Verdict:
    """Check every row against ``policy`` (module docstring); ``today`` decides waiver expiry
    (the local date when None); ``parts``: the parts of a run compared in turn (each missing one
    fails). Failures come part failures first, then in row order, one row's in bound order."""
    today = today or datetime.date.today()
    valid, errors = _waivers(policy, today)
    if not policy.gated:
        return Verdict(Outcome.FAILED if errors else Outcome.NOT_GATED, errors=errors, checked=0,
                       expected_gaps=sum(1 for r in rows if r.expected_gap))
    missing = _missing_parts(rows, parts)
    part_rows = {position for position, _ in missing}
    resolver = BoundResolver(policy)
    resolve = resolver.bounds
    strict = policy.strict
    compared = PairStatus.COMPARED
    checks: dict[int, tuple[tuple[str, Callable[[float, float], bool], float, Bound], ...]] = {}
    failures: list[CheckFailure] = []
    expected = undefined = 0
    for i, row in enumerate(rows):  # the hot loop: 100k rows in well under 0.5 s (docs/policy.md)
        if row.expected_gap:
            expected += 1
            continue
        bounds = resolve(row)
        if row.status is not compared:
            if strict and i not in part_rows:
                failures.append(_not_compared(i, row))
            continue
        prepared = checks.get(id(bounds))  # the resolver keeps each bounds tuple alive: ids are stable
        if prepared is None:
            prepared = checks[id(bounds)] = tuple((b.metric, _OPS[b.op], b.value, b) for b in bounds)
        defined = _defined(row)
        metrics = row.metrics
        for metric, op, limit, bound in prepared:
            if (defined is not None and metric not in defined) or metric in row.undefined:
                undefined += 1
                continue
            if bound.if_present and metric not in metrics:
                continue
            value = metrics.get(metric)
            if value is None:
                if defined is not None and metric in _BOOL_MAYBE:  # bool RED: a number only sometimes
                    undefined += 1
                elif strict:
                    failures.append(_not_computed(i, row, bound))
            elif value != value or not op(value, limit):  # a NaN violates every bound
                failures.append(_violation(i, row, bound, value))
    failures, waived = _apply_waivers(failures, valid, rows)
    failures = [_part_missing(position, part) for position, part in missing] + failures
    if errors or any(not f.incomplete for f in failures):
        outcome = Outcome.FAILED
    elif failures:
        outcome = Outcome.INCOMPLETE
    else:
        outcome = Outcome.PASSED
    return Verdict(outcome, failures, waived, errors, checked=len(rows) - expected, bounds=resolver.used,
                   expected_gaps=expected, undefined=undefined)


def _missing_parts(rows: Sequence[MetricRow], parts: Sequence[PartReport]) -> list[tuple[int, PartReport]]:
    """Each missing part with the position of its row (-1 when the rows have none: a saved result
    written before parts had rows), in part order; each row stands for one part at most."""
    missing = [part for part in parts if part.missing]
    if not missing:
        return []
    by_name: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        if row.tensor_id is None and row.status is not PairStatus.COMPARED:
            by_name.setdefault(row.left_op, []).append(i)
    taken: set[int] = set()
    found: list[tuple[int, PartReport]] = []
    for part in missing:
        position = next((i for i in by_name.get(part.name, ()) if i not in taken and part.stands_for(rows[i])), -1)
        taken.add(position)
        found.append((position, part))
    return found


def _part_missing(position: int, part: PartReport) -> CheckFailure:
    return CheckFailure(row=position, tensor_id=None, op_type=None, left_op=part.name, right_op=part.name,
                        metric=None, value=None, bound=None, message=part.why, incomplete=True, part=part.name)


def _waivers(policy: Policy, today: datetime.date) -> tuple[list[Waiver], list[str]]:
    """(waivers still valid today, one error per expired waiver naming it and its date)."""
    valid: list[Waiver] = []
    errors: list[str] = []
    for waiver in policy.waivers:
        if waiver.expires is not None and waiver.expired(today):
            errors.append(f"{waiver.label} expired on {waiver.expires.isoformat()} (today is {today.isoformat()}): "
                          "renew it or remove it")
        else:
            valid.append(waiver)
    return valid, errors


def _apply_waivers(failures: list[CheckFailure], waivers: list[Waiver], rows: Sequence[MetricRow]
                   ) -> tuple[list[CheckFailure], list[CheckFailure]]:
    """Split failures into (kept, waived): the first valid waiver matching the row and covering
    the failure waives it (``waived_by`` = the waiver's label)."""
    if not waivers:
        return failures, []
    kept: list[CheckFailure] = []
    waived: list[CheckFailure] = []
    matching: dict[int, list[Waiver]] = {}
    for failure in failures:
        candidates = matching.get(failure.row)
        if candidates is None:
            candidates = matching[failure.row] = [w for w in waivers if w.selector.matches(rows[failure.row])]
        waiver = next((w for w in candidates if w.covers(failure.metric, failure.incomplete)), None)
        if waiver is None:
            kept.append(failure)
        else:
            waived.append(replace(failure, waived_by=waiver.label))
    return kept, waived


__all__ = ["evaluate", "gateable_metrics", "parse_gate", "violations"]
