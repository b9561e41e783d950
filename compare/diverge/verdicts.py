"""Each operator's verdict and the first divergence (:func:`localise`).

**Rows.** Tensor rows (CosineSimilarity, RelativeEuclideanDistance ...) and statistics rows
(MaxRelDiff, MinRelDiff, L2NormRelDiff, ChecksumDiff ...: :mod:`.statistics`) are judged by the
same rules; only their bounds and their error differ.

**Bounds.** A tensor *fails* when one of its computed metric values breaks one of its bounds
(:func:`compare.verdict.gates.violations`: a NaN breaks every bound; a bound on a metric the row does not
have breaks nothing). The bounds are the gate policy's when the run has one (``--gate`` /
``--policy``: the bounds each row resolves to; waivers do not apply here, they excuse a failure,
they do not make it right). Otherwise the built-in data-type bounds of the coarser data type of
the row (:data:`compare.verdict.policy.DTYPE_EPS`): for a tensor row cosine >= 1 - eps/2 and
RelativeEuclideanDistance <= sqrt(eps) (float32 0.99999994 / 3.45e-4, float16 0.99951 / 0.03125,
bfloat16 and int8 0.99609 / 0.0884 ...); for a statistics row MaxRelDiff, MinRelDiff and
L2NormRelDiff <= sqrt(eps) and ChecksumDiff == 0 (:func:`compare.verdict.policy.dtype_bounds` of a statistics row; no
bound on AvgRelDiff nor on absolute differences). A data type with no entry there (float64,
integers, bool) gets the float32 bounds. A tensor not compared (missing counterpart, unreadable,
structural gap) neither passes nor fails.

**Source inputs.** An input the graph says comes from a Parameter / Data / Const (an
:class:`~compare.diverge.records.InputEdge` of a source role: a weight in a fusion rule or a MindSpore
``.ir``, a parameter argument of an msprobe call) *differs* when it breaks the run's bounds **or**
the built-in data-type bounds. A gate bounds what the user cares about in the results; a
parameter beyond its own data type's precision is different data whatever the gate says (a
perturbed weight whose L2NormRelDiff of 5.5e-6 passes ``L2NormRelDiff<=1e-4`` but whose
MaxRelDiff of 0.0017 is five times float32's sqrt(eps)).

**Error** of a tensor: its RelativeEuclideanDistance ``||x - y|| / ||y||``; ``1 - cosine`` when
that was not computed; None when neither was. Of a statistics row: the largest of its
MaxRelDiff, MinRelDiff and L2NormRelDiff (:func:`.statistics.statistics_error`, which says why
AvgRelDiff is left out).

**Verdict** of an operator, from its output tensors and its input tensors (its own input rows;
an input without a row of its own is judged by its producer's output row when the graph gives
the edge):

- ``not-compared`` -- no output tensor was compared;
- a source operator (a Parameter, Data or Const node that was dumped): ``input-differs`` when an
  output fails, else ``ok``;
- ``input-differs`` -- a source input differs (above), whatever the outputs did (the weight
  differs even when the call absorbed it); or an output fails and a failing input counts as data:
  without graph edges, a failing input counts as data when no operator before it in graph order
  has a failing output or was ``input-differs`` (nothing computed could have caused it);
- ``ok`` -- every compared output passes (error absorbed or none arrived);
- ``inherited`` -- an output fails and some input fails (``blame``: the producers of the failing
  inputs when the graph names them);
- ``origin`` -- an output fails while every compared input passes, or it has no compared input.

**Amplification**: the worst output error divided by the worst input error (None when either is
missing; ``inf`` when the inputs are exact and an output is not).

**First divergence**: the first ``origin`` or ``input-differs`` operator in graph order (for a
run of several ranks / iterations: in part order, then graph order). **First NaN/Inf**: the first
tensor, in the same order, whose left side holds a NaN or an infinity (inputs before outputs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import OptionError
from ..pairing.near import did_you_mean
from ..records import Bound, MetricRow, PairStatus
from ..verdict.gates import violations
from ..verdict.policy import BoundResolver, Policy, coarsest_family
from .records import (
    SOURCE_ROLES,
    InputEdge,
    Localisation,
    OpGraph,
    OpNode,
    OpVerdict,
    TensorCheck,
    Verdict,
)
from .statistics import is_statistics_row, statistics_error

#: The policy used when the run has no gate: data-type bounds only (float32's for unknown types).
DEFAULT_POLICY = Policy(strict=False, dtype_defaults=True)
DEFAULT_BOUNDS_TEXT = ("built-in data-type bounds (cosine >= 1 - eps/2, RelativeEuclideanDistance <= sqrt(eps); "
                       "statistics: MaxRelDiff, MinRelDiff, L2NormRelDiff <= sqrt(eps), ChecksumDiff == 0; "
                       "of the coarser data type; float32's for other types)")


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


class _Bounds:
    """Bounds per row: the policy's, else the default data-type bounds (float32's as fallback);
    :meth:`builtin`: the default data-type bounds whatever the policy (source inputs, module doc)."""

    def __init__(self, policy: Policy | None) -> None:
        has_bounds = policy is not None and bool(policy.defaults or policy.gates or policy.dtype_defaults
                                                 or any(rule.bounds for rule in policy.rules))
        self.policy = policy if has_bounds and policy is not None else DEFAULT_POLICY
        self.custom = self.policy is not DEFAULT_POLICY
        self._resolver = BoundResolver(self.policy)
        self._fallback: dict[bool, tuple[Bound, ...]] = {}
        # Without rules the bounds depend on the data types only: one resolution per kind and pair of types.
        self._by_dtypes: dict[tuple[bool, str | None, str | None], tuple[Bound, ...]] | None = (
            {} if not self.policy.rules else None)
        self._builtin: _Bounds | None = _Bounds(None) if self.custom else None

    def of(self, row: MetricRow) -> tuple[Bound, ...]:
        if self._by_dtypes is None:
            return self._resolve(row)
        key = (is_statistics_row(row), row.left_dtype, row.right_dtype)
        hit = self._by_dtypes.get(key)
        if hit is None:
            hit = self._by_dtypes[key] = self._resolve(row)
        return hit

    def builtin(self, row: MetricRow) -> tuple[Bound, ...]:
        """The built-in data-type bounds of ``row`` (float32's for a type without them)."""
        return self._builtin.of(row) if self._builtin is not None else self.of(row)

    def _resolve(self, row: MetricRow) -> tuple[Bound, ...]:
        bounds = self._resolver.bounds(row)  # the built-in layer follows the row kind (compare.verdict.policy)
        statistics = is_statistics_row(row)
        if self.custom or (bounds and coarsest_family(row.left_dtype, row.right_dtype) is not None):
            return bounds  # (a statistics row of an unknown type has the checksum bounds only: float32's then)
        fallback = self._fallback.get(statistics)
        if fallback is None:
            probe = MetricRow(index=0, op_type=None, left_op="", right_op="", tensor_id=None,
                              left_dtype="float32", right_dtype="float32", metrics=dict.fromkeys(row.metrics),
                              kind=row.kind)
            fallback = self._fallback[statistics] = self._resolve(probe)
        return fallback

    @property
    def text(self) -> str:
        if not self.custom:
            return DEFAULT_BOUNDS_TEXT
        return "the gate policy" + (f" ({self.policy.source})" if self.policy.source else "")


def tensor_error(row: MetricRow) -> float | None:
    """The error of a compared tensor (module doc), None when it has none."""
    if is_statistics_row(row):
        return statistics_error(row)
    red = row.metrics.get("RelativeEuclideanDistance")
    if red is not None:
        return float(red)
    cosine = row.metrics.get("CosineSimilarity")
    if cosine is not None:
        return 1.0 - float(cosine)
    return None


def _check(row: MetricRow, bounds: _Bounds, producer: InputEdge | None = None) -> TensorCheck:
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

    def __init__(self, rows: Sequence[MetricRow], graph: OpGraph, bounds: _Bounds) -> None:
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
        base = dict(op=name, op_type=node.op_type, position=position, outputs=tuple(outputs), inputs=tuple(inputs),
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


def localise(rows: Sequence[MetricRow], graph: OpGraph | Mapping[tuple, OpGraph], policy: Policy | None = None
             ) -> Localisation:
    """Every operator's verdict, the first divergence and the first NaN/Inf tensor (module doc).

    ``graph``: one graph for every part, or a graph per ``(rank, iteration, graph)`` part key.
    """
    bounds = _Bounds(policy)
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


def chain(localisation: Localisation, op: str) -> list[OpVerdict]:
    """The chain of operators from ``op`` back to where its error came from: ``op``, then the
    producer of its first failing input (for ``inherited``: the first producer it blames), and so
    on, until an ``origin`` / ``input-differs`` / ``not-compared`` operator, or an ``ok`` one
    whose inputs all pass. Without graph edges an ``inherited`` operator leads to the closest
    earlier operator whose outputs fail. The chain is taken in the first part that has ``op``.

    Raises :class:`OptionError` when no operator of the report is ``op``, with the closest names
    (:func:`compare.pairing.near.did_you_mean`, as ``-d`` does), else a few of the names.
    """
    by_op: dict[str, OpVerdict] = {}
    for verdict in localisation.verdicts:
        by_op.setdefault(verdict.op, verdict)
    current = by_op.get(op)
    if current is None:
        hint = did_you_mean(op, by_op) or (f"operators are e.g. {', '.join(map(repr, list(by_op)[:5]))}"
                                           if by_op else "no operator was judged")
        raise OptionError(f"no operator {op!r} in the report; {hint}")
    out: list[OpVerdict] = []
    seen: set[str] = set()
    while current is not None and current.op not in seen:
        out.append(current)
        seen.add(current.op)
        if current.verdict not in (Verdict.INHERITED, Verdict.OK):
            break
        producers = [c.producer.producer for c in current.inputs
                     if c.passed is False and c.producer is not None and c.producer.producer is not None]
        nxt = next((by_op[b] for b in (*current.blame, *producers) if b in by_op), None)
        if nxt is None and current.verdict is Verdict.INHERITED:  # no edge: the closest earlier failing operator
            earlier = [v for v in localisation.verdicts if v.position < current.position
                       and v.rank == current.rank and v.iteration == current.iteration
                       and v.verdict in (Verdict.ORIGIN, Verdict.INPUT_DIFFERS, Verdict.INHERITED)]
            nxt = earlier[-1] if earlier else None
        current = nxt
    return out


__all__ = ["DEFAULT_POLICY", "chain", "first_nonfinite", "localise", "tensor_error"]
