"""The gates on columns (issue 31): :func:`compare.verdict.gates.evaluate` reads the rows through
:class:`~compare.stats_table.RowColumns` (bounds per distinct case, one numpy comparison a bound,
the rows whose metrics may have no value one by one). It gives the verdict the row-by-row check
it replaced gives (``_row_by_row`` below, that check as it was: one resolution, one dict lookup a
row and bound), on random rows and policies (NaN, infinities, zeros, missing and null metrics,
bool and empty tensors, argument, statistics and not-compared rows, expected gaps, rules, waivers,
missing parts), and the same verdict for a statistics table's :class:`~compare.stats_table.MetricRows`
view as for the list of its records -- building no record of a row for it."""

from __future__ import annotations

import datetime
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from compare.records import (ARGUMENT_METRIC, Bound, CheckFailure, MetricRow, Outcome, PairStatus, PartReport,
                             PartStatus, RowKind, Verdict)
from compare.runs.folders import run_network
from compare.stats import STAT_METRIC_OF, StatsRow, diff_stat
from compare.stats_table import MetricRows, RowColumns, StatsResult, StatsTable
from compare.verdict.gates import _BOOL_MAYBE, _BOOL_METRICS, evaluate, parse_gate
from compare.verdict.policy import (BoundResolver, Globs, NameRegexes, Policy, Rule, Selector, Waiver, names_of,
                                    names_text)
from compare.verdict.policy_file import load_policy

TODAY = datetime.date(2026, 3, 1)

# --------------------------------------------------------------------------------------------
# The row-by-row check the columns replaced (compare/verdict/gates.py before issue 31)

_OPS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le, "==": operator.eq,
                                                    ">": operator.gt, "<": operator.lt}


def _defined(row: MetricRow) -> frozenset[str] | None:
    if row.kind is RowKind.ARGUMENT:
        return frozenset({ARGUMENT_METRIC})
    if row.shape and 0 in row.shape:
        return frozenset()
    if row.left_dtype == "bool" and row.right_dtype == "bool":
        return _BOOL_METRICS
    return None


def _row_text(row: MetricRow) -> str:
    return row.tensor_id or (row.left_op if row.left_op != "*" else row.right_op)


def _reasons(row: MetricRow) -> str:
    return "; ".join(row.reasons) if row.reasons else "no reason recorded"


def _failure(i: int, row: MetricRow, metric: str | None, value: float | None, bound: Bound | None, message: str,
             incomplete: bool) -> CheckFailure:
    return CheckFailure(row=i, tensor_id=row.tensor_id, op_type=row.op_type, left_op=row.left_op,
                        right_op=row.right_op, metric=metric, value=value, bound=bound, message=message,
                        incomplete=incomplete)


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


def _row_by_row(rows: Sequence[MetricRow], policy: Policy, today: datetime.date,
                parts: Sequence[PartReport] = ()) -> Verdict:
    valid = [w for w in policy.waivers if not w.expired(today)]
    errors = [f"{w.label} expired on {w.expires.isoformat()} (today is {today.isoformat()}): renew it or remove it"
              for w in policy.waivers if w.expires is not None and w.expired(today)]
    if not policy.gated:
        return Verdict(Outcome.FAILED if errors else Outcome.NOT_GATED, errors=errors, checked=0,
                       expected_gaps=sum(1 for r in rows if r.expected_gap))
    missing: list[tuple[int, PartReport]] = []
    taken: set[int] = set()
    for part in (p for p in parts if p.missing):
        position = next((i for i, row in enumerate(rows) if row.tensor_id is None and row.status is not
                         PairStatus.COMPARED and row.left_op == part.name and i not in taken and part.stands_for(row)),
                        -1)
        taken.add(position)
        missing.append((position, part))
    part_rows = {position for position, _ in missing}
    resolver = BoundResolver(policy)
    failures: list[CheckFailure] = []
    expected = undefined = 0
    for i, row in enumerate(rows):
        if row.expected_gap:
            expected += 1
            continue
        bounds = resolver.bounds(row)
        if row.status is not PairStatus.COMPARED:
            if policy.strict and i not in part_rows:
                failures.append(_failure(i, row, None, None, None, f"{_row_text(row)} not compared "
                                         f"({row.status.value}): {_reasons(row)}", True))
            continue
        defined = _defined(row)
        for bound in bounds:
            metric = bound.metric
            if (defined is not None and metric not in defined) or metric in row.undefined:
                undefined += 1
                continue
            if bound.if_present and metric not in row.metrics:
                continue
            value = row.metrics.get(metric)
            if value is None:
                if defined is not None and metric in _BOOL_MAYBE:
                    undefined += 1
                elif policy.strict:
                    failures.append(_not_computed(i, row, bound))
            elif value != value or not _OPS[bound.op](value, bound.value):
                value = float(value)
                failures.append(_failure(i, row, metric, value, bound, f"{metric} = {value!r} violates {bound.text} "
                                         f"({bound.source})", False))
    kept: list[CheckFailure] = []
    waived: list[CheckFailure] = []
    for failure in failures:
        waiver = next((w for w in valid if w.selector.matches(rows[failure.row])
                       and w.covers(failure.metric, failure.incomplete)), None)
        if waiver is None:
            kept.append(failure)
        else:
            waived.append(replace(failure, waived_by=waiver.label))
    kept = [CheckFailure(row=position, tensor_id=None, op_type=None, left_op=part.name, right_op=part.name,
                         metric=None, value=None, bound=None, message=part.why, incomplete=True, part=part.name)
            for position, part in missing] + kept
    if errors or any(not f.incomplete for f in kept):
        outcome = Outcome.FAILED
    elif kept:
        outcome = Outcome.INCOMPLETE
    else:
        outcome = Outcome.PASSED
    return Verdict(outcome, kept, waived, errors, checked=len(rows) - expected, bounds=resolver.used,
                   expected_gaps=expected, undefined=undefined)


def _same(verdict: Verdict, expected: Verdict) -> None:
    """Equal verdicts, NaN values included (repr: a NaN is not equal to itself)."""
    assert repr(verdict) == repr(expected)


# --------------------------------------------------------------------------------------------
# Random rows and policies

_METRICS = ["CosineSimilarity", "RelativeEuclideanDistance", "MaxAbsoluteError", "MaxRelDiff", "L2NormRelDiff",
            "ChecksumDiff", ARGUMENT_METRIC]
_VALUES = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e-3, 0.99, 0.999999, 5e-324, float("nan"), float("inf")]))
_OPS_TEXT = st.sampled_from([">=", "<=", "==", ">", "<"])
_LIMITS = st.sampled_from([0.0, 1e-3, 0.5, 0.99, 1.0, float("inf"), -1.0])
_DTYPES = st.sampled_from([None, "float16", "float32", "bfloat16", "bool", "int8", "float8_e4m3fn", "int64"])
_SHAPES = st.sampled_from([None, (), (2, 3), (0, 4), (5,), (3, 0)])
_NAMES = st.sampled_from(["conv1", "bn1", "*", "conv1,bn1", "fc", "Default/relu-op1"])


@st.composite
def _rows(draw: st.DrawFn) -> MetricRow:
    kind = draw(st.sampled_from(RowKind))
    metrics = {name: draw(_VALUES) for name in _METRICS if draw(st.booleans())}
    left = draw(_DTYPES)
    right = left if draw(st.booleans()) else draw(_DTYPES)  # (bool against bool: the metrics defined sometimes)
    return MetricRow(draw(st.integers(0, 9)), draw(st.sampled_from([None, "Conv2D", "Add", "Cast"])), draw(_NAMES),
                     draw(_NAMES), draw(st.sampled_from([None, "conv1:output:0", "t:1"])), left_dtype=left,
                     right_dtype=right, shape=draw(_SHAPES), metrics=metrics,
                     reasons=draw(st.lists(st.sampled_from(["unreadable", "shape mismatch"]), max_size=2)),
                     status=draw(st.sampled_from([PairStatus.COMPARED] * 4 + list(PairStatus))),
                     rank=draw(st.sampled_from([None, 0, 1])), graph=draw(st.sampled_from([None, 0])),
                     expected_gap=draw(st.sampled_from([None] * 5 + ["mixed-precision Cast"])),
                     undefined=frozenset(draw(st.lists(st.sampled_from(_METRICS), max_size=2))), kind=kind)


_BOUNDS = st.builds(Bound, st.sampled_from(_METRICS), _OPS_TEXT, _LIMITS, st.sampled_from(["--gate x", "file"]),
                    st.booleans())


@st.composite
def _selectors(draw: st.DrawFn) -> Selector:
    op = draw(st.none() | st.sampled_from([["conv*"], ["bn1", "fc"], ["*relu*"]]))
    regex = draw(st.none() | st.sampled_from(["^bn", "op1$"]))
    return Selector(text="selector", op=Globs(op) if op else None,
                    op_regex=NameRegexes([re.compile(regex, re.MULTILINE)]) if regex else None,
                    op_type=Globs(["Conv*"]) if draw(st.booleans()) else None,
                    dtype=Globs(["float16"]) if draw(st.booleans()) else None,
                    rank=frozenset({1}) if draw(st.booleans()) else None)


@st.composite
def _policies(draw: st.DrawFn) -> Policy:
    rules = tuple(Rule(draw(_selectors()), tuple(draw(st.lists(_BOUNDS, max_size=2))),
                       frozenset(draw(st.lists(st.sampled_from(_METRICS), max_size=1))), f"rule {n}")
                  for n in range(draw(st.integers(0, 2))))
    waivers = tuple(Waiver(draw(_selectors()), "known", f"waiver {n}",
                           draw(st.sampled_from([None, datetime.date(2026, 1, 1), datetime.date(2027, 1, 1)])),
                           draw(st.none() | st.sampled_from([frozenset({"not-compared"}),
                                                             frozenset({"CosineSimilarity", "MaxRelDiff"})])))
                    for n in range(draw(st.integers(0, 2))))
    return Policy(defaults=tuple(draw(st.lists(_BOUNDS, max_size=2))), rules=rules, waivers=waivers,
                  gates=tuple(draw(st.lists(_BOUNDS, max_size=3))), strict=draw(st.booleans()),
                  dtype_defaults=draw(st.booleans()))


@settings(max_examples=200, deadline=None)
@given(st.lists(_rows(), max_size=12), _policies())
def test_the_columns_give_the_row_by_row_verdict(rows: list[MetricRow], policy: Policy) -> None:
    _same(evaluate(rows, policy, today=TODAY), _row_by_row(rows, policy, TODAY))


@settings(max_examples=50, deadline=None)
@given(st.lists(_rows(), min_size=1, max_size=8), _policies())
def test_missing_parts_come_first_and_their_rows_are_not_checked_again(rows: list[MetricRow], policy: Policy) -> None:
    parts = [PartReport(0, None, 0, PartStatus.COMPARED, 0.1),
             PartReport(1, None, 0, PartStatus.NOT_COMPARED, 0.0, reason="dump.json: not valid JSON"),
             PartReport(2, None, 0, PartStatus.LOST, 3.0, reason="its task failed")]
    rows = [*rows, parts[1].row(len(rows), ["CosineSimilarity"])]
    _same(evaluate(rows, policy, today=TODAY, parts=parts), _row_by_row(rows, policy, TODAY, parts))


def test_rows_are_grouped_as_resolved_one_by_one() -> None:
    """:meth:`BoundResolver.groups` gives each row the bounds :meth:`BoundResolver.bounds` gives it,
    and the same bounds used, in the same order."""
    rows = [MetricRow(i, "Conv2D" if i % 3 else "Add", f"op{i}", f"op{i}", None, left_dtype=dtype, right_dtype="float32",
                      kind=RowKind.STATISTICS if i % 4 == 0 else RowKind.TENSOR)
            for i, dtype in enumerate(["float16", "float32", "bfloat16", "float16", None, "int8", "float32"] * 3)]
    rule = Rule(Selector(text="x", op_type=Globs(["Conv*"])), (Bound("MaxAbsoluteError", "<=", 1.0, "rule"),))
    named = Rule(Selector(text="y", op=Globs(["op1*"])), (Bound("CosineSimilarity", ">=", 0.5, "named"),))
    for policy in (Policy(dtype_defaults=True), Policy(dtype_defaults=True, rules=(rule,)),
                   Policy(dtype_defaults=True, rules=(rule, named)), Policy(gates=(Bound("MaxRelDiff", "<", 1, "g"),))):
        one = BoundResolver(policy)
        each = [one.bounds(row) for row in rows]
        many = BoundResolver(policy)
        groups = many.groups(RowColumns(rows), np.arange(len(rows)))
        got: dict[int, tuple[Bound, ...]] = {int(i): bounds for bounds, where in groups for i in where}
        assert [got[i] for i in range(len(rows))] == each
        assert many.used == one.used
        assert [int(where[0]) for _, where in groups] == sorted(int(where[0]) for _, where in groups)


# --------------------------------------------------------------------------------------------
# A statistics table: its MetricRows view and the list of its records

_STATS = ["max", "min", "l2norm", "md5"]
_STAT_VALUES = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True),
                         st.sampled_from([0.0, -0.0, 1.0, 1.0001, 5e-324, "d41d8cd9", "e3b0c442"]))


@st.composite
def _stats_rows(draw: st.DrawFn) -> StatsRow:
    values = {}
    for name in _STATS:
        if draw(st.booleans()):
            left, right = draw(_STAT_VALUES), draw(_STAT_VALUES)
            if name == "md5":
                left, right = draw(st.sampled_from(["d41d8cd9", "e3b0c442", None])), draw(st.sampled_from(
                    ["d41d8cd9", None]))
            values[name] = diff_stat(name, left, right)
    return StatsRow(draw(st.integers(0, 99)), draw(st.sampled_from([None, "Conv2D", "Add"])), draw(_NAMES), draw(_NAMES),
                    draw(st.sampled_from([None, "a:input:0", "b:output:0"])), draw(_DTYPES), draw(_DTYPES),
                    draw(_SHAPES), values, reasons=draw(st.lists(st.sampled_from(["no data"]), max_size=1)),
                    status=draw(st.sampled_from([PairStatus.COMPARED] * 5 + list(PairStatus))),
                    rank=draw(st.sampled_from([None, 1])))


def _table(rows: list[StatsRow], arguments: list[MetricRow]) -> MetricRows:
    """The view of a table of ``rows`` then ``arguments`` (kept as records, as msprobe argument rows are)."""
    placeholders = [StatsRow(r.index, r.op_type, r.left_op, r.right_op, r.tensor_id) for r in arguments]
    metric_rows = [None] * len(rows) + arguments
    table = StatsResult.of_rows(rows + placeholders, _STATS, metric_rows if arguments else ()).table  # type: ignore[arg-type]
    return MetricRows(table)


_ARGUMENTS = st.lists(st.builds(lambda i, value, status: MetricRow(
    i, "Add", "add.0", "add.0", f"add.0:input:{i}", metrics={ARGUMENT_METRIC: value}, kind=RowKind.ARGUMENT,
    status=status), st.integers(0, 5), st.sampled_from([0.0, 1.0, None]),
    st.sampled_from([PairStatus.COMPARED, PairStatus.COMPARED, PairStatus.MISSING_LEFT])), max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(_stats_rows(), max_size=10), _ARGUMENTS, _policies())
def test_a_tables_view_and_its_records_give_one_verdict(rows: list[StatsRow], arguments: list[MetricRow],
                                                        policy: Policy) -> None:
    view = _table(rows, arguments)
    records = list(view)
    verdict = evaluate(view, policy, today=TODAY)
    _same(verdict, evaluate(records, policy, today=TODAY))
    _same(verdict, _row_by_row(records, policy, TODAY))


@settings(max_examples=100, deadline=None)
@given(st.lists(_stats_rows(), min_size=1, max_size=10), _ARGUMENTS, st.sampled_from(
    ["MaxRelDiff<=1e-3", "L2NormRelDiff<0.5", "ChecksumDiff==same", "ArgumentDiff==same", "MaxDiff<=0"]))
def test_a_gate_builds_no_record_of_a_tables_row(rows: list[StatsRow], arguments: list[MetricRow], gate: str) -> None:
    view = _table(rows, arguments)
    expected = _row_by_row(list(view), Policy.from_gates([parse_gate(gate)]), TODAY)
    built: list[int] = []
    metric_row = StatsTable.metric_row

    def counted(table: StatsTable, row: int) -> MetricRow:
        built.append(row)
        return metric_row(table, row)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(StatsTable, "metric_row", counted)
        verdict = evaluate(view, Policy.from_gates([parse_gate(gate)]), today=TODAY)
    assert built == []
    _same(verdict, expected)


# --------------------------------------------------------------------------------------------
# Real comparisons: the fixtures' networks under gates, built-in bounds and policy files

BAD = FIXTURES / "bad"
_POLICY_FILES = [
    '[defaults]\ndtype = true\n',
    ('[defaults]\nCosineSimilarity = 0.999\n[[rule]]\nop_type = "Conv*"\nCosineSimilarity = "off"\n'
     'MaxAbsoluteError = "<= 0.5"\n[[waiver]]\nop = "fc*"\nreason = "noisy"\n'),
    ('strict = false\n[defaults]\ndtype = true\n[[rule]]\nop_regex = "^(pool|prob)"\nRelativeEuclideanDistance = 0.01\n'
     '[[waiver]]\nop = "conv*"\nreason = "ticket 9"\nmetrics = ["not-compared"]\nexpires = 2026-01-31\n'),
    '[defaults]\nMaxRelDiff = 0.001\nL2NormRelDiff = 0.01\n[[rule]]\ndtype = "bf16"\nMaxRelDiff = "off"\n',
]


@cache
def _real(name: str) -> tuple[MetricRow, ...] | MetricRows:
    demo = FIXTURES / "demo"
    if name == "demo":
        return tuple(run_network(demo / "npu", demo / "golden", demo / "model.json").rows)
    if name == "dumps_a":
        return tuple(run_network(BAD / "dumps_a" / "left", BAD / "clean" / "right", BAD / "clean" / "model.json").rows)
    trees = FIXTURES / "msprobe_real"
    return run_network(trees / f"{name}_perturb", trees / f"{name}_base").rows  # type: ignore[return-value]


def _policy(tmp_path: Path, text: str) -> Policy:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return load_policy(path)


@pytest.mark.parametrize("name", ["demo", "dumps_a", "s_L1", "s_mix", "s_L1_md5", "t_L1"])
@pytest.mark.parametrize("policy_text", range(len(_POLICY_FILES) + 3))
def test_real_runs_give_the_row_by_row_verdict(name: str, policy_text: int, tmp_path: Path) -> None:
    if policy_text < len(_POLICY_FILES):
        policy = _policy(tmp_path, _POLICY_FILES[policy_text])
    else:
        gate = ["CosineSimilarity>=0.99", "MaxRelDiff<=1e-4", "ArgumentDiff==same"][policy_text - len(_POLICY_FILES)]
        policy = Policy.from_gates([parse_gate(gate)])
    rows = _real(name)
    records = list(rows)
    verdict = evaluate(rows, policy, today=TODAY)
    _same(verdict, _row_by_row(records, policy, TODAY))
    _same(verdict, evaluate(records, policy, today=TODAY))


def test_names_of_is_names_text() -> None:
    for row in (MetricRow(0, None, "conv1,bn1", "conv1", "conv1:output:0"), MetricRow(0, None, "*", "golden_op", None),
                MetricRow(0, None, "a", "*", "t")):
        assert names_of(row.left_op, row.right_op, row.tensor_id) == names_text(row)
