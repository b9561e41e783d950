"""The localisation reads a statistics run's rows as columns (issue 31): the same localisation for
the :class:`~compare.stats_table.MetricRows` view of a table as for the list of its records (random
tables: NaN / inf / zero / missing / text statistics, argument rows, bool and empty rows, null
statistics, several parts, with and without a policy), and no row's record built."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compare.api import build_policy, compare_network
from compare.runs.localise import localise_network
from compare.diverge.records import GraphSource, InputEdge, Localisation, NodeRole, OpGraph, OpNode
from compare.diverge.verdicts import chain, localise
from compare.records import (
    ARGUMENT_METRIC,
    ArgumentDiff,
    MetricRow,
    PairStatus,
    RowKind,
    StatDiff,
)
from compare.reports.divergence import divergence_lines, localisation_document
from compare.stats import StatsRow, statistics_metrics
from compare.stats_table import MetricRows, StatsResult, StatsTable
from compare.testing.synthetic_msprobe import write_msprobe_dump
from compare.verdict.policy import Policy

OPS = ("a", "b", "c", "d")
STATS = ["max", "min", "mean", "norm", "md5"]
NUMBERS = st.sampled_from([None, math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-9, 1e-4, 0.01, 1.0, 2.5, -3.0])
TEXTS = st.sampled_from([None, "d41d8cd9", "0badf00d"])
POLICIES = st.sampled_from([None, build_policy(gates=["MaxRelDiff<=1e-3"]),
                            build_policy(gates=["L2NormRelDiff<0.1", "ChecksumDiff==0"]),
                            Policy(strict=False, dtype_defaults=True)])


def _stat(name: str, left: object, right: object) -> StatDiff:
    if name == "md5":
        diff = None if left is None or right is None else ("same" if left == right else "different")
        return StatDiff(left, right, diff, None)  # type: ignore[arg-type]
    if left is None or right is None:
        return StatDiff(left, right, None, None)  # type: ignore[arg-type]
    diff = left - right  # type: ignore[operator]
    rel = abs(diff) / abs(right) if right else (0.0 if not diff else math.inf)  # type: ignore[arg-type]
    return StatDiff(left, right, diff, rel)  # type: ignore[arg-type]


@st.composite
def tables(draw: st.DrawFn) -> StatsTable:
    """A statistics table of random rows; some are argument rows (kept records)."""
    count = draw(st.integers(1, 14))
    stats_rows: list[StatsRow] = []
    records: list[MetricRow] = []
    for index in range(count):
        op = draw(st.sampled_from(OPS + ("zz",)))
        tensor_id = draw(st.sampled_from([f"{op}:output:0", f"{op}:output:1", f"{op}:input:0", f"{op}:input:1",
                                          f"{op}:other:0", None]))
        rank = draw(st.sampled_from([None, None, 1]))
        dtype = draw(st.sampled_from([None, "float32", "float16", "bool", "int64"]))
        shape = draw(st.sampled_from([None, (2, 3), (0, 4), ()]))
        status = draw(st.sampled_from([PairStatus.COMPARED] * 4 + list(PairStatus)))
        if draw(st.integers(0, 4)) == 0:  # an msprobe argument row
            value = draw(st.sampled_from([0.0, 1.0, None, math.nan]))
            records.append(MetricRow(index, "arg", op, op, tensor_id, left_dtype=dtype, right_dtype=dtype, shape=shape,
                                     metrics={ARGUMENT_METRIC: value}, status=status, rank=rank, kind=RowKind.ARGUMENT,
                                     argument=ArgumentDiff("int", "int", "1", "1" if value == 0.0 else "2", value == 0.0)))
            stats_rows.append(StatsRow(index, "arg", op, op, tensor_id, dtype, dtype, shape, {}, status=status,
                                       rank=rank))
            continue
        values = {name: _stat(name, *draw(st.tuples(TEXTS, TEXTS) if name == "md5" else st.tuples(NUMBERS, NUMBERS)))
                  for name in STATS if draw(st.booleans())}
        row = StatsRow(index, draw(st.sampled_from([None, "Add"])), op, op, tensor_id, dtype, dtype, shape, values,
                       status=status, rank=rank)
        stats_rows.append(row)
        metrics, undefined = statistics_metrics(values)
        records.append(MetricRow(index, row.op_type, op, op, tensor_id, left_dtype=dtype, right_dtype=dtype,
                                 shape=shape, metrics=metrics, status=status, rank=rank, undefined=undefined,
                                 kind=RowKind.STATISTICS, statistics=values))
    return StatsResult.of_rows(stats_rows, STATS, records).table


@st.composite
def graphs(draw: st.DrawFn) -> OpGraph:
    names = draw(st.lists(st.sampled_from(OPS + ("p",)), unique=True, min_size=1, max_size=5))
    nodes = {}
    for name in names:
        edges = draw(st.lists(st.builds(InputEdge, index=st.integers(0, 2), producer=st.sampled_from([None, *OPS, "p"]),
                                        output=st.integers(0, 1), role=st.sampled_from(list(NodeRole)),
                                        name=st.sampled_from(["", "w"])), max_size=3))
        nodes[name] = OpNode(name=name, op_type="Add",
                             role=draw(st.sampled_from([NodeRole.COMPUTE, NodeRole.COMPUTE, NodeRole.PARAMETER])),
                             inputs=tuple(edges))
    return OpGraph(nodes=nodes, source=GraphSource.DUMP_ORDER, edges=draw(st.booleans()))


def _same(new: Localisation, old: Localisation) -> None:
    assert localisation_document(new) == localisation_document(old)
    assert divergence_lines(new) == divergence_lines(old)
    assert new.counts == old.counts
    assert new.verdicts.labels() == old.verdicts.labels()
    assert new.first_nonfinite == old.first_nonfinite
    for verdict in old.verdicts:
        assert [v.op for v in chain(new, verdict.op)] == [v.op for v in chain(old, verdict.op)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=tables(), graph=graphs(), other=graphs(), policy=POLICIES)
def test_the_view_localises_as_its_records(table: StatsTable, graph: OpGraph, other: OpGraph,
                                           policy: Policy | None) -> None:
    view = MetricRows(table)
    records = list(view)
    _same(localise(view, graph, policy), localise(records, graph, policy))
    graphs_of = {(None, None, None): graph, (1, None, None): other}
    if any(record.rank is None for record in records):  # else no part has a graph
        _same(localise(view, graphs_of, policy), localise(records, graphs_of, policy))


@pytest.fixture()
def built(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The rows whose record :meth:`StatsTable.metric_row` builds (kept records are not built)."""
    rows: list[int] = []
    original = StatsTable.metric_row

    def counted(self: StatsTable, row: int) -> MetricRow:
        if row not in self.kept:
            rows.append(row)
        return original(self, row)

    monkeypatch.setattr(StatsTable, "metric_row", counted)
    yield rows


@pytest.mark.parametrize("ranks", [(0,), (0, 1)])
def test_a_statistics_run_builds_no_record(tmp_path: Path, built: list[int], ranks: tuple[int, ...]) -> None:
    """The localisation of a statistics run (its msprobe graph; two ranks: two parts of one table)
    builds the record of no row, its verdicts and their failing checks included (rows whose
    metrics may be undefined for their data too: their bounds are found once for all such rows);
    it is the localisation of the same rows as records."""
    left = write_msprobe_dump(tmp_path / "noisy", task="statistics", ranks=ranks, noise=1e-2, seed=1).root
    right = write_msprobe_dump(tmp_path / "base", task="statistics", ranks=ranks).root
    network = compare_network(left, right, rank="all" if len(ranks) > 1 else None).network
    assert network is not None and isinstance(network.rows, MetricRows) and len(network.parts) == (len(ranks) > 1) * 2
    built.clear()
    localisation = localise_network(network)
    assert localisation is not None and localisation.first_divergence is not None
    first = localisation.first_divergence
    assert any(check.passed is False for check in (*first.inputs, *first.outputs))
    assert not built  # the failing checks reported too: a record of the fields they read (PartRows.checked_row)
    assert len(list(localisation.verdicts)) and not built  # every verdict
    records = replace(network, rows=list(network.rows))
    built.clear()
    of_records = localise_network(records)
    assert not built and of_records is not None  # records in: no table read
    _same(localisation, of_records)
