"""The columnar localisation (compare.diverge.checks / table) equals the record-based one it
replaced, kept here as the oracle (a TensorCheck a row, a loop over operators): the same verdicts,
checks, errors, blame, first divergence, first NaN/Inf, counts and chains on random small graphs
with random rows (NaN / inf / zero / missing metrics, rows not compared, expected gaps, malformed
tensor ids, operators the graph lacks, statistics / argument / bool / empty rows, several parts),
with and without a gate policy, with and without graph edges."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compare.api import build_policy
from compare.diverge.checks import Bounds
from compare.diverge.records import (
    SOURCE_ROLES,
    GraphSource,
    InputEdge,
    Localisation,
    NodeRole,
    OpGraph,
    OpNode,
    OpVerdict,
    TensorCheck,
    Verdict,
    VerdictList,
)
from compare.diverge.statistics import ERROR_METRICS
from compare.diverge.table import _amplifications
from compare.diverge.verdicts import chain, localise
from compare.records import ARGUMENT_METRIC, MetricRow, PairStatus, RowKind, ValueCounts
from compare.reports.divergence import (
    divergence_lines,
    localisation_document,
    localisation_text,
    verdict_document,
    verdict_documents,
)
from compare.reports.result_json import ROW_ENCODER
from compare.verdict.gates import violations
from compare.verdict.policy import Policy

# ------------------------------------------------------------------------------ the oracle (the record-based localisation)


@dataclass(frozen=True)
class _TensorRows:
    """The rows of one operator, by kind and index."""

    inputs: dict[int, MetricRow]
    outputs: dict[int, MetricRow]


def _parse_tensor_id(tensor_id: str | None) -> tuple[str, str, int] | None:
    """``op:kind:index`` -> (op, kind, index); None when the id has another form."""
    if not tensor_id:
        return None
    head, sep, index = tensor_id.rpartition(":")
    op, sep2, kind = head.rpartition(":")
    if not (sep and sep2) or kind not in ("input", "output") or not index.isdigit():
        return None
    return op, kind, int(index)


def _statistics_error(row: MetricRow) -> float | None:
    values = [float(v) for v in (row.metrics.get(name) for name in ERROR_METRICS) if v is not None]
    if not values:
        return None
    if any(math.isnan(v) for v in values):
        return math.nan
    return max(values)


def tensor_error(row: MetricRow) -> float | None:
    """The error of a compared tensor (module doc), None when it has none."""
    if row.kind is RowKind.STATISTICS:
        return _statistics_error(row)
    red = row.metrics.get("RelativeEuclideanDistance")
    if red is not None:
        return float(red)
    cosine = row.metrics.get("CosineSimilarity")
    if cosine is not None:
        return 1.0 - float(cosine)
    return None


def _check(row: MetricRow, bounds: Bounds, producer: InputEdge | None = None) -> TensorCheck:
    """``row`` against its bounds; a source input (``producer`` of a source role) also against the
    built-in data-type bounds (module doc: a source input differs beyond either)."""
    counts = row.left_counts
    nan = counts.nan if counts is not None else None
    inf = counts.inf if counts is not None else None
    saturated = counts.saturated if counts is not None else None
    if row.status is not PairStatus.COMPARED or row.expected_gap:
        return TensorCheck(tensor_id=row.tensor_id or row.left_op, passed=None, nan=nan, inf=inf,
                           saturated=saturated, producer=producer)
    broken = violations(row, bounds.of(row))
    if not broken and producer is not None and producer.role in SOURCE_ROLES and bounds.custom:
        broken = violations(row, bounds.builtin(row))
    return TensorCheck(tensor_id=row.tensor_id or row.left_op, passed=not broken, error=tensor_error(row),
                       failed=tuple((b.metric, value) for b, value in broken), nan=nan, inf=inf,
                       saturated=saturated, producer=producer)


def _worst(checks: Sequence[TensorCheck]) -> float | None:
    errors = [c.error for c in checks if c.error is not None]
    if not errors:
        return None
    return max(errors, key=lambda e: (math.isnan(e), e))  # NaN is the worst


def _amplification(error: float | None, input_error: float | None) -> float | None:
    if error is None or input_error is None or math.isnan(error) or math.isnan(input_error):
        return None
    if input_error == 0.0:
        return math.inf if error > 0.0 else None
    return error / input_error


class _Part:
    """The localisation of one (rank, iteration, graph) part of a run."""

    def __init__(self, rows: Sequence[MetricRow], graph: OpGraph, bounds: Bounds) -> None:
        self.graph = graph
        self.bounds = bounds
        self.by_op: dict[str, _TensorRows] = {}
        for row in rows:
            parsed = _parse_tensor_id(row.tensor_id)
            if parsed is None:
                continue
            op, kind, index = parsed
            op = row.left_op if row.left_op and row.left_op != "*" else op
            entry = self.by_op.setdefault(op, _TensorRows({}, {}))
            (entry.inputs if kind == "input" else entry.outputs).setdefault(index, row)
        self.output_checks: dict[str, dict[int, TensorCheck]] = {}

    def verdicts(self, rank: int | None, iteration: int | None) -> list[OpVerdict]:
        out: list[OpVerdict] = []
        failed_before = False
        for position, (name, node) in enumerate(self.graph.nodes.items()):
            entry = self.by_op.get(name)
            if entry is None:
                continue
            verdict = self._judge(node, entry, position, failed_before, rank, iteration)
            out.append(verdict)
            failed_before = (failed_before or verdict.verdict is Verdict.INPUT_DIFFERS
                             or any(c.passed is False for c in verdict.outputs))
        return out

    def _inputs(self, entry: _TensorRows, edges: Sequence[InputEdge]) -> list[TensorCheck]:
        by_index = {e.index: e for e in edges}
        checks = [_check(row, self.bounds, by_index.get(i)) for i, row in sorted(entry.inputs.items())]
        for index, edge in sorted(by_index.items()):  # inputs without a row of their own: the producer's output
            if index in entry.inputs or edge.producer is None:
                continue
            produced = self.output_checks.get(edge.producer, {}).get(edge.output)
            if produced is not None:
                checks.append(TensorCheck(tensor_id=produced.tensor_id, passed=produced.passed, error=produced.error,
                                          failed=produced.failed, nan=produced.nan, inf=produced.inf,
                                          saturated=produced.saturated, producer=edge))
        return checks

    def _judge(self, node: OpNode, entry: _TensorRows, position: int, failed_before: bool, rank: int | None,
               iteration: int | None) -> OpVerdict:
        name, role = node.name, node.role
        outputs = [_check(row, self.bounds) for _, row in sorted(entry.outputs.items())]
        self.output_checks[name] = {i: c for i, c in zip(sorted(entry.outputs), outputs)}
        inputs = self._inputs(entry, node.inputs)
        error, input_error = _worst(outputs), _worst(inputs)
        base = dict(op=name, op_type=node.op_type, position=position, outputs=tuple(outputs), inputs=tuple(inputs),  # noqa: C408
                    error=error, input_error=input_error, amplification=_amplification(error, input_error),
                    source=node.source, rank=rank, iteration=iteration)
        if not any(c.passed is not None for c in outputs):
            return OpVerdict(verdict=Verdict.NOT_COMPARED, **base)
        out_fails = any(c.passed is False for c in outputs)
        if role in SOURCE_ROLES:
            return OpVerdict(verdict=Verdict.INPUT_DIFFERS if out_fails else Verdict.OK, **base)
        sources = [c for c in inputs if c.passed is False and c.producer is not None
                   and c.producer.role in SOURCE_ROLES]
        if sources:  # a differing parameter / data / const input: the data differs, whatever the outputs did
            return OpVerdict(verdict=Verdict.INPUT_DIFFERS, blame=_data_blame(sources), **base)
        if not out_fails:
            return OpVerdict(verdict=Verdict.OK, **base)
        failing = [c for c in inputs if c.passed is False]
        data = [c for c in failing if self._is_data(c, failed_before)]
        if data:
            return OpVerdict(verdict=Verdict.INPUT_DIFFERS, blame=_data_blame(data), **base)
        if failing:
            blame = tuple(dict.fromkeys(c.producer.producer for c in failing
                                        if c.producer is not None and c.producer.producer is not None))
            return OpVerdict(verdict=Verdict.INHERITED, blame=blame, **base)
        return OpVerdict(verdict=Verdict.ORIGIN, **base)

    def _is_data(self, check: TensorCheck, failed_before: bool) -> bool:
        edge = check.producer
        if edge is not None and edge.role in SOURCE_ROLES:
            return True
        if edge is not None and edge.producer is not None:
            producer = self.graph.nodes.get(edge.producer)
            return producer is not None and producer.role in SOURCE_ROLES
        return not self.graph.edges and not failed_before


def _data_blame(checks: Sequence[TensorCheck]) -> tuple[str, ...]:
    """The differing data inputs by name: the graph's name of the source, else its producer, else
    the tensor id; each once, in input order."""
    return tuple(dict.fromkeys((c.producer.name or c.producer.producer or c.tensor_id)
                               if c.producer is not None else c.tensor_id for c in checks))


def _parts(rows: Sequence[MetricRow]) -> dict[tuple[int | None, int | None, int | None], list[MetricRow]]:
    parts: dict[tuple[int | None, int | None, int | None], list[MetricRow]] = {}
    for row in rows:
        parts.setdefault((row.rank, row.iteration, row.graph), []).append(row)
    return parts


def first_nonfinite(verdicts: Sequence[OpVerdict]) -> str | None:
    """The first tensor whose left side holds NaN/Inf (module doc), None when none does."""
    for verdict in verdicts:
        for check in (*verdict.inputs, *verdict.outputs):
            if check.nonfinite:
                return check.tensor_id
    return None


def record_localise(rows: Sequence[MetricRow], graph: OpGraph | Mapping[tuple, OpGraph], policy: Policy | None = None
             ) -> Localisation:
    """Every operator's verdict, the first divergence and the first NaN/Inf tensor (module doc).

    ``graph``: one graph for every part, or a graph per ``(rank, iteration, graph)`` part key.
    """
    bounds = Bounds(policy)
    verdicts: list[OpVerdict] = []
    first_graph: OpGraph | None = None
    for key, part_rows in _parts(rows).items():
        part_graph = graph.get(key) if isinstance(graph, Mapping) else graph
        if part_graph is None:
            continue
        first_graph = first_graph or part_graph
        verdicts += _Part(part_rows, part_graph, bounds).verdicts(key[0], key[1])
    first = next((v for v in verdicts if v.verdict in (Verdict.ORIGIN, Verdict.INPUT_DIFFERS)), None)
    used = first_graph if first_graph is not None else (graph if isinstance(graph, OpGraph) else None)
    if used is None:
        raise ValueError("localise needs a graph")
    return Localisation(verdicts=tuple(verdicts), graph=used, first_divergence=first,
                        first_nonfinite=first_nonfinite(verdicts), bounds=bounds.text, notes=used.notes)



# ------------------------------------------------------------------------------ random cases

OPS = ("a", "b", "c", "d", "e")
VALUES = st.sampled_from([None, math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-9, 1e-5, 3e-4, 0.01, 0.5, 1.0,
                          0.99999, 0.9, 2.0, -1.0])
METRIC_NAMES = ("CosineSimilarity", "RelativeEuclideanDistance", "MaxRelDiff", "MinRelDiff", "L2NormRelDiff",
                "AvgRelDiff", "ChecksumDiff", ARGUMENT_METRIC)
DTYPES = st.sampled_from([None, "float32", "float16", "bfloat16", "bool", "int32", "float64"])


@st.composite
def graphs(draw: st.DrawFn) -> OpGraph:
    names = draw(st.lists(st.sampled_from(OPS + ("p", "w")), unique=True, min_size=1, max_size=6))
    nodes = {}
    for name in names:
        role = draw(st.sampled_from([NodeRole.COMPUTE] * 3 + [NodeRole.PARAMETER, NodeRole.DATA, NodeRole.CONST]))
        edges = draw(st.lists(st.builds(
            InputEdge, index=st.integers(0, 3), producer=st.sampled_from([None, "x", *OPS, "p", "w"]),
            output=st.integers(0, 2), role=st.sampled_from(list(NodeRole)), name=st.sampled_from(["", "fc.weight"])),
            max_size=4))
        nodes[name] = OpNode(name=name, op_type=draw(st.sampled_from([None, "Conv2D", "Const"])), role=role,
                             inputs=tuple(edges))
    return OpGraph(nodes=nodes, source=draw(st.sampled_from(list(GraphSource))), edges=draw(st.booleans()))


@st.composite
def metric_rows(draw: st.DrawFn) -> MetricRow:
    op = draw(st.sampled_from(OPS + ("p", "w", "zz")))
    tensor_id = draw(st.sampled_from([f"{op}:output:0", f"{op}:output:1", f"{op}:input:0", f"{op}:input:1",
                                      f"{op}:input:3", f"x:{op}:output:2", f"{op}:other:0", f"{op}:input", None, ""]))
    left = draw(st.sampled_from([op, op, "*", "", "a"]))
    kind = draw(st.sampled_from([RowKind.TENSOR, RowKind.TENSOR, RowKind.STATISTICS, RowKind.ARGUMENT]))
    metrics = {name: draw(VALUES) for name in draw(st.lists(st.sampled_from(METRIC_NAMES), unique=True))}
    counts = draw(st.one_of(st.none(), st.builds(ValueCounts, nan=st.integers(0, 2), inf=st.integers(0, 1),
                                                 saturated=st.integers(0, 1))))
    return MetricRow(index=0, op_type=draw(st.sampled_from([None, "Conv2D"])), left_op=left, right_op=op,
                     tensor_id=tensor_id, left_dtype=draw(DTYPES), right_dtype=draw(DTYPES),
                     shape=draw(st.sampled_from([None, (2, 3), (0, 4), ()])), metrics=metrics,
                     status=draw(st.sampled_from([PairStatus.COMPARED] * 4 + list(PairStatus))),
                     rank=draw(st.sampled_from([None, None, 1])),
                     expected_gap=draw(st.sampled_from([None, None, None, "a Cast"])), left_counts=counts,
                     undefined=draw(st.sampled_from([frozenset(), frozenset({"MinRelDiff"})])), kind=kind)


POLICIES = st.sampled_from([None, build_policy(gates=["CosineSimilarity>=0.999", "MaxRelDiff<=1e-3"]),
                            build_policy(gates=["RelativeEuclideanDistance<0.1", "ChecksumDiff==0"]),
                            Policy(strict=False, dtype_defaults=True)])


def _same(new: Localisation, old: Localisation) -> None:
    assert localisation_document(new) == localisation_document(old)  # every verdict, check, error (NaN as text)
    # the JSON block from the columns (VerdictList.table) is the block of the records, built one by one
    assert verdict_documents(new.verdicts.table()) == [verdict_document(v) for v in list(new.verdicts)]
    # the block's text, from the columns (--json), is the compact encoder's text of the block
    assert localisation_text(new) == ROW_ENCODER.encode(localisation_document(old))
    assert divergence_lines(new) == divergence_lines(old)
    assert new.counts == old.counts
    assert new.verdicts.labels() == VerdictList(old.verdicts).labels()
    assert (new.first_divergence is None) == (old.first_divergence is None)
    for verdict in old.verdicts:
        ours = new.verdict_of(verdict.op)
        assert ours is not None and ours.verdict is VerdictList(old.verdicts).first_of(verdict.op).verdict
        assert [v.op for v in chain(new, verdict.op)] == [v.op for v in chain(old, verdict.op)]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs(), rows=st.lists(metric_rows(), max_size=14), policy=POLICIES)
def test_the_columns_judge_as_the_records_did(graph: OpGraph, rows: list[MetricRow], policy: Policy | None) -> None:
    _same(localise(rows, graph, policy), record_localise(rows, graph, policy))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs(), other=graphs(), rows=st.lists(metric_rows(), max_size=14), policy=POLICIES)
def test_parts_judge_as_the_records_did(graph: OpGraph, other: OpGraph, rows: list[MetricRow],
                                        policy: Policy | None) -> None:
    graphs_of = {(None, None, None): graph, (1, None, None): other}
    try:
        old = record_localise(rows, graphs_of, policy)
    except ValueError:  # no part has a graph
        with pytest.raises(ValueError):
            localise(rows, graphs_of, policy)
        return
    _same(localise(rows, graphs_of, policy), old)


def test_a_plain_run_builds_no_record() -> None:
    """Counts, labels, the first NaN/Inf come from the columns: only the first divergence is built."""
    rows = [MetricRow(index=0, op_type=None, left_op=op, right_op=op, tensor_id=f"{op}:output:0",
                      left_dtype="float32", right_dtype="float32",
                      metrics={"RelativeEuclideanDistance": red, "CosineSimilarity": 1.0})
            for op, red in (("a", 0.0), ("b", 0.5), ("c", 0.5))]
    graph = OpGraph(nodes={n: OpNode(n) for n in "abc"}, source=GraphSource.DUMP_ORDER, edges=False)
    loc = localise(rows, graph)
    assert loc.counts == {Verdict.OK: 1, Verdict.ORIGIN: 2, Verdict.INHERITED: 0, Verdict.INPUT_DIFFERS: 0,
                          Verdict.NOT_COMPARED: 0}  # rows of outputs only: nothing says where c's input came from
    assert loc.verdicts.labels()[(None, None, "c")] is Verdict.ORIGIN
    assert loc.first_divergence is not None and loc.first_divergence.op == "b"
    assert len(loc.verdicts._built) == 1  # the first divergence only
    assert list(loc.verdicts)[1] is loc.first_divergence  # the same record, built once
    assert len(loc.verdicts._built) == 3


_EDGE_FLOATS = st.none() | st.sampled_from([0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan]) | st.floats()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_EDGE_FLOATS, _EDGE_FLOATS), min_size=1, max_size=12))
def test_amplifications_as_the_record_rule(pairs: list[tuple[float | None, float | None]]) -> None:
    """The operators' amplifications over arrays are the record rule's, operator by operator: None
    where it gives None, and a NaN ratio (``-inf / -inf``, found by CI) kept as NaN, not taken for
    None."""
    error = np.array([e if e is not None else 0.0 for e, _ in pairs])
    input_error = np.array([i if i is not None else 0.0 for _, i in pairs])
    got = _amplifications(error, np.array([e is not None for e, _ in pairs]), input_error,
                          np.array([i is not None for _, i in pairs]))
    want = [_amplification(e, i) for e, i in pairs]
    assert [repr(g) for g in got] == [repr(w) for w in want]
