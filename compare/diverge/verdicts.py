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

**On columns.** The rules run over arrays of the rows' checks and of the operators
(:mod:`compare.diverge.checks`, :mod:`compare.diverge.table`); the records of the verdicts are
built only for what is read (the first divergence, a chain; the whole list for the API or the
HTML), the verdict counts, the labels (``--verdicts``) and the JSON block of every verdict
(:class:`~compare.diverge.records.VerdictTable`) come from the columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import numpy as np

from ..errors import OptionError
from ..pairing.near import did_you_mean
from ..records import MetricRow
from ..stats_table import RowColumns
from ..verdict.policy import Policy
from .checks import Bounds, PartRows
from .records import Localisation, OpGraph, OpVerdict, Verdict, VerdictList
from .table import LazyVerdicts, PartVerdicts, judge_part

PartKey = tuple[int | None, int | None, int | None]


def parts_of(columns: RowColumns) -> dict[PartKey, PartRows]:
    """The rows of each (rank, iteration, graph) part, in row order (parts in order of their first row)."""
    ranks, iterations, graphs = columns.rank, columns.iteration, columns.graph
    if not ranks:
        return {}
    if len(set(ranks)) == len(set(iterations)) == len(set(graphs)) == 1:  # one part (the usual case): every row
        return {(ranks[0], iterations[0], graphs[0]): PartRows(columns)}
    positions: dict[PartKey, list[int]] = {}
    for i, key in enumerate(zip(ranks, iterations, graphs)):
        positions.setdefault(key, []).append(i)
    return {key: PartRows(columns, np.asarray(at, dtype=np.intp)) for key, at in positions.items()}


def localise(rows: Sequence[MetricRow] | RowColumns, graph: OpGraph | Mapping[tuple, OpGraph],
             policy: Policy | None = None) -> Localisation:
    """Every operator's verdict, the first divergence and the first NaN/Inf tensor (module doc).

    ``rows``: the rows, or their columns (:class:`~compare.stats_table.RowColumns`: read once for
    the graph and the verdicts). ``graph``: one graph for every part, or a graph per ``(rank,
    iteration, graph)`` part key. The verdicts are a :class:`~compare.diverge.table.LazyVerdicts`:
    records built when read.
    """
    columns = rows if isinstance(rows, RowColumns) else RowColumns(rows)
    bounds = Bounds(policy)
    parts: list[PartVerdicts] = []
    first_graph: OpGraph | None = None
    for key, part_rows in parts_of(columns).items():
        part_graph = graph.get(key) if isinstance(graph, Mapping) else graph
        if part_graph is None:
            continue
        first_graph = first_graph or part_graph
        parts.append(judge_part(part_rows, part_graph, bounds, key[0], key[1]))
    used = first_graph if first_graph is not None else (graph if isinstance(graph, OpGraph) else None)
    if used is None:
        raise ValueError("localise needs a graph")
    verdicts = LazyVerdicts(parts)
    return Localisation(verdicts=verdicts, graph=used, first_divergence=verdicts.first_diverging(),
                        first_nonfinite=verdicts.first_nonfinite(), bounds=bounds.text, notes=used.notes)


def chain(localisation: Localisation, op: str) -> list[OpVerdict]:
    """The chain of operators from ``op`` back to where its error came from: ``op``, then the
    producer of its first failing input (for ``inherited``: the first producer it blames), and so
    on, until an ``origin`` / ``input-differs`` / ``not-compared`` operator, or an ``ok`` one
    whose inputs all pass. Without graph edges an ``inherited`` operator leads to the closest
    earlier operator whose outputs fail. The chain is taken in the first part that has ``op``.

    Raises :class:`OptionError` when no operator of the report is ``op``, with the closest names
    (:func:`compare.pairing.near.did_you_mean`, as ``-d`` does), else a few of the names.
    """
    verdicts = localisation.verdicts
    current = localisation.verdict_of(op)
    if current is None:
        names = list(dict.fromkeys(key[2] for key in (verdicts.labels() if isinstance(verdicts, VerdictList)
                                                       else VerdictList(verdicts).labels())))
        hint = did_you_mean(op, names) or (f"operators are e.g. {', '.join(map(repr, names[:5]))}"
                                           if names else "no operator was judged")
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
        nxt = next((v for v in map(localisation.verdict_of, (*current.blame, *producers)) if v is not None), None)
        if nxt is None and current.verdict is Verdict.INHERITED:  # no edge: the closest earlier failing operator
            earlier = [v for v in verdicts if v.position < current.position
                       and v.rank == current.rank and v.iteration == current.iteration
                       and v.verdict in (Verdict.ORIGIN, Verdict.INPUT_DIFFERS, Verdict.INHERITED)]
            nxt = earlier[-1] if earlier else None
        current = nxt
    return out


__all__ = ["PartKey", "chain", "localise", "parts_of"]
