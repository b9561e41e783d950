"""The verdicts of a part on columns (:func:`judge_part`) and the records built on demand (:class:`LazyVerdicts`).

The rules are :mod:`compare.diverge.verdicts`'s (module doc there); here they run over arrays:

1. **Slots.** Each row's ``op:kind:index`` tensor id names a slot (the operator is the row's
   ``LeftOp`` unless that is empty or ``*``); the first row of a slot is its row; slots of
   operators the graph does not have are left out. The slots are sorted by (graph position,
   inputs before outputs, index): each operator's outputs and inputs in index order.
2. **Checks** per row on columns (:func:`compare.diverge.checks.row_checks`).
3. **Inputs** of each judged operator: its own input rows, each with the graph's edge of that
   index (the last edge of an index counts), then for each edge without a row of its own, in
   index order, its producer's output row when the producer was judged at or before this
   operator in graph order. An own input whose edge is of a source role is checked against the
   built-in bounds too; a producer's output keeps its own check.
4. **Verdicts** by masks over operators: ``compared`` (some output compared), ``out_fails``,
   and per operator whether some failing input comes from a source-role edge, from a producer
   of a source role (data), from no producer (data only without graph edges and before anything
   failed), or fails at all. *Before anything failed* is a prefix: the operators before the
   first that has a failing output or a differing source input (the first ``input-differs``
   not from its outputs), ``np.cumsum`` of that mask.

Records (:class:`~compare.diverge.records.OpVerdict`, :class:`~compare.diverge.records.TensorCheck`)
are built only when asked for, one operator at a time, and kept: the first divergence, a chain,
``--explain``; the whole list when the API, the HTML report, ``--verdicts`` or the JSON block
iterates it. Counts and labels come from the columns.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import overload

import numpy as np

from ..heap import paused_gc
from ..records import Bound
from ..verdict.gates import violations
from .checks import FAILS, NOT_COMPARED, Bounds, PartRows, RowChecks, row_checks
from .records import (
    SOURCE_ROLES,
    InputEdge,
    OpGraph,
    OpVerdict,
    TensorCheck,
    Verdict,
    VerdictList,
)

#: Verdict codes of the columns, in :class:`Verdict` order.
VERDICTS = tuple(Verdict)
_CODE = {verdict: code for code, verdict in enumerate(VERDICTS)}
OK, ORIGIN, INHERITED, INPUT_DIFFERS, NOT_JUDGED = (_CODE[Verdict.OK], _CODE[Verdict.ORIGIN], _CODE[Verdict.INHERITED],
                                                    _CODE[Verdict.INPUT_DIFFERS], _CODE[Verdict.NOT_COMPARED])
#: Input entries: own input rows, then producers' outputs (for the NaN/Inf order), then outputs.
_OWN, _PRODUCED, _OUTPUT = 0, 1, 2


@dataclass(frozen=True)
class PartVerdicts:
    """The judged operators of one part, on columns (module doc).

    ``names``: the judged operators in graph order, ``number``: name -> place among them,
    ``positions``: their graph positions;
    ``outputs`` / ``inputs``: per operator the slot rows (output rows by index; own input rows by
    index, with their index); ``codes``: the verdict code of each operator (:data:`VERDICTS`);
    ``failed_before``: whether an operator before it had a failing output or a differing source input.
    """

    rows: PartRows
    graph: OpGraph
    bounds: Bounds
    rank: int | None
    iteration: int | None
    names: list[str]
    number: dict[str, int]
    positions: list[int]
    outputs: list[dict[int, int]]
    inputs: list[dict[int, int]]
    checks: RowChecks
    codes: np.ndarray
    failed_before: np.ndarray
    first_nonfinite: str | None

    @cached_property
    def lists(self) -> RowLists:
        """The row checks as Python lists, for building records (read once per part, not per record)."""
        checks = self.checks
        errors = [e if has else None for e, has in zip(checks.error.tolist(), checks.has_error.tolist())]
        rows = self.rows
        counts = [(c.nan, c.inf, c.saturated) if c is not None else (None, None, None) for c in rows.left_counts]
        return RowLists(passed=checks.passed.tolist(), builtin=None if checks.builtin is None else checks.builtin.tolist(),
                        error=errors, tensor_ids=_tensor_ids(rows), counts=counts)


@dataclass(frozen=True)
class RowLists:
    """:class:`~compare.diverge.checks.RowChecks` as lists: ``passed`` / ``builtin`` codes, ``error``
    (None: none); the rows' ``tensor_ids`` (the left op when a row has none) and left ``counts``
    (nan, inf, saturated; None when not counted)."""

    passed: list[int]
    builtin: list[int] | None
    error: list[float | None]
    tensor_ids: list[str]
    counts: list[tuple[int | None, int | None, int | None]]


def _tensor_ids(rows: PartRows) -> list[str]:
    """The tensor id of each row, its left op when it has none."""
    return [tensor_id or left for tensor_id, left in zip(rows.tensor_id, rows.left_op)]


def _slots(rows: PartRows, number: dict[str, int]) -> tuple[list[dict[int, int]], list[dict[int, int]]]:
    """Per operator number (``number``: name -> number), its output and input slots: index -> row."""
    outputs: list[dict[int, int]] = [{} for _ in number]
    inputs: list[dict[int, int]] = [{} for _ in number]
    for i, (tensor_id, left) in enumerate(zip(rows.tensor_id, rows.left_op)):
        if not tensor_id:
            continue
        head, sep, index = tensor_id.rpartition(":")
        op, sep2, kind = head.rpartition(":")
        if not (sep and sep2) or not index.isdecimal():
            continue
        if kind == "output":
            side = outputs
        elif kind == "input":
            side = inputs
        else:
            continue
        j = number.get(left if left and left != "*" else op)
        if j is not None:
            side[j].setdefault(int(index), i)
    return outputs, inputs


def judge_part(rows: PartRows, graph: OpGraph, bounds: Bounds, rank: int | None,
               iteration: int | None) -> PartVerdicts:
    """The verdict of every operator of ``graph`` that has rows in ``rows`` (module doc)."""
    nodes = graph.nodes
    number_all = {name: p for p, name in enumerate(nodes)}
    outputs_all, inputs_all = _slots(rows, number_all)
    judged = [p for p in range(len(number_all)) if outputs_all[p] or inputs_all[p]]
    names_all = list(nodes)
    names = [names_all[p] for p in judged]
    number = {name: j for j, name in enumerate(names)}
    outputs = [dict(sorted(outputs_all[p].items())) for p in judged]
    inputs = [dict(sorted(inputs_all[p].items())) for p in judged]
    order = [r for j in range(len(judged)) for r in (*outputs[j].values(), *inputs[j].values())]
    source_inputs = [r for j, name in enumerate(names) if inputs[j] and bounds.custom
                     for index, r in inputs[j].items() if _source_edge(nodes[name].inputs, index)]
    checks = row_checks(rows, order, bounds, source_inputs)
    passed, builtin = checks.passed, checks.builtin
    n = len(names)

    out_op = [j for j in range(n) for _ in outputs[j]]
    out_rows = [r for slots in outputs for r in slots.values()]
    out_passed = passed[np.asarray(out_rows, dtype=np.intp)]
    out_at = np.asarray(out_op, dtype=np.intp)
    compared = np.bincount(out_at[out_passed != NOT_COMPARED], minlength=n) > 0
    out_fails = np.bincount(out_at[out_passed == FAILS], minlength=n) > 0

    # input entries: operator, row, edge class (source role / data producer / no producer), order
    ent_op: list[int] = []
    ent_row: list[int] = []
    ent_fails: list[bool] = []
    ent_source: list[bool] = []
    ent_data: list[bool] = []
    ent_free: list[bool] = []
    ent_kind: list[int] = []
    ent_order: list[int] = []
    role_source = np.zeros(n, dtype=bool)
    for j, name in enumerate(names):
        node = nodes[name]
        role_source[j] = node.role in SOURCE_ROLES
        own = inputs[j]
        by_index = {e.index: e for e in node.inputs}
        for index, r in own.items():
            edge = by_index.get(index)
            source = edge is not None and edge.role in SOURCE_ROLES
            fails = passed[r] == FAILS or (source and builtin is not None and builtin[r] == FAILS)
            ent_op.append(j)
            ent_row.append(r)
            ent_fails.append(bool(fails))
            ent_source.append(source)
            ent_data.append(edge is not None and edge.producer is not None and _source_node(graph, edge.producer))
            ent_free.append(edge is None or edge.producer is None)
            ent_kind.append(_OWN)
            ent_order.append(index)
        for index, edge in sorted(by_index.items()):
            if index in own or edge.producer is None:
                continue
            producer = number.get(edge.producer)
            if producer is None or producer > j:
                continue
            r = outputs[producer].get(edge.output)
            if r is None:
                continue
            ent_op.append(j)
            ent_row.append(r)
            ent_fails.append(bool(passed[r] == FAILS))
            ent_source.append(edge.role in SOURCE_ROLES)
            ent_data.append(_source_node(graph, edge.producer))
            ent_free.append(False)
            ent_kind.append(_PRODUCED)
            ent_order.append(index)
    e_op = np.asarray(ent_op, dtype=np.intp)
    e_fails = np.asarray(ent_fails, dtype=bool)
    e_source = np.asarray(ent_source, dtype=bool)

    def any_input(mask: np.ndarray) -> np.ndarray:
        return np.bincount(e_op[mask], minlength=n) > 0

    sources = any_input(e_fails & e_source)
    failing = any_input(e_fails)
    data = any_input(e_fails & np.asarray(ent_data, dtype=bool))
    free = any_input(e_fails & np.asarray(ent_free, dtype=bool))
    trigger = compared & (out_fails | (~role_source & sources))
    failed_before = (np.cumsum(trigger) - trigger) > 0
    if not graph.edges:
        data = data | (free & ~failed_before)
    codes = np.select([~compared, role_source & out_fails, role_source, sources, ~out_fails, data, failing],
                      [NOT_JUDGED, INPUT_DIFFERS, OK, INPUT_DIFFERS, OK, INPUT_DIFFERS, INHERITED],
                      default=ORIGIN).astype(np.int8)

    # the first NaN/Inf tensor: per operator its inputs (own, then producers'), then its outputs
    order_op = np.concatenate([e_op, out_at])
    order_kind = np.concatenate([np.asarray(ent_kind, dtype=np.intp), np.full(len(out_rows), _OUTPUT)])
    order_index = np.concatenate([np.asarray(ent_order, dtype=np.intp),
                                  np.asarray([i for slots in outputs for i in slots], dtype=np.intp)])
    order_row = np.concatenate([np.asarray(ent_row, dtype=np.intp), np.asarray(out_rows, dtype=np.intp)])
    hits = np.flatnonzero(checks.nonfinite[order_row])
    first_nonfinite = None
    if len(hits):
        first = hits[np.lexsort((order_index[hits], order_kind[hits], order_op[hits]))[0]]
        r = int(order_row[first])
        first_nonfinite = rows.tensor_id[r] or rows.left_op[r]
    return PartVerdicts(rows=rows, graph=graph, bounds=bounds, rank=rank, iteration=iteration, names=names,
                        number=number, positions=[number_all[name] for name in names], outputs=outputs, inputs=inputs,
                        checks=checks, codes=codes, failed_before=failed_before, first_nonfinite=first_nonfinite)


def _source_edge(edges: Sequence[InputEdge], index: int) -> bool:
    """Whether input ``index`` is fed by a source-role edge (the last edge of that index counts)."""
    edge = {e.index: e for e in edges}.get(index)
    return edge is not None and edge.role in SOURCE_ROLES


def _source_node(graph: OpGraph, name: str) -> bool:
    node = graph.nodes.get(name)
    return node is not None and node.role in SOURCE_ROLES


# ------------------------------------------------------------------------------ records on demand


def _worst(checks: Sequence[TensorCheck]) -> float | None:
    """The largest error of ``checks``; NaN is the worst (None when no check has an error)."""
    errors = [c.error for c in checks if c.error is not None]
    if not errors:
        return None
    return math.nan if any(map(math.isnan, errors)) else max(errors)


def _amplification(error: float | None, input_error: float | None) -> float | None:
    if error is None or input_error is None or math.isnan(error) or math.isnan(input_error):
        return None
    if input_error == 0.0:
        return math.inf if error > 0.0 else None
    return error / input_error


def _data_blame(checks: Sequence[TensorCheck]) -> tuple[str, ...]:
    """The differing data inputs by name: the graph's name of the source, else its producer, else
    the tensor id; each once, in input order."""
    return tuple(dict.fromkeys((c.producer.name or c.producer.producer or c.tensor_id)
                               if c.producer is not None else c.tensor_id for c in checks))


def _check(part: PartVerdicts, r: int, producer: InputEdge | None, own: bool) -> TensorCheck:
    """The record of row ``r``'s check; an own input fed by a source-role edge also against the
    built-in bounds (the bounds it broke are listed from :func:`compare.verdict.gates.violations`)."""
    lists = part.lists
    nan, inf, saturated = lists.counts[r]
    tensor_id = lists.tensor_ids[r]
    passed = lists.passed[r]
    if passed == NOT_COMPARED:
        return TensorCheck(tensor_id=tensor_id, passed=None, nan=nan, inf=inf, saturated=saturated, producer=producer)
    broken: list[tuple[Bound, float]] = []
    if passed == FAILS:  # the record of a failing row only (the bounds it broke)
        row = part.rows.record(r)
        broken = violations(row, part.bounds.of(row))
    if (not broken and own and producer is not None and producer.role in SOURCE_ROLES and lists.builtin is not None
            and lists.builtin[r] == FAILS):
        row = part.rows.record(r)
        broken = violations(row, part.bounds.builtin(row))
    failed = tuple([(bound.metric, value) for bound, value in broken]) if broken else ()
    return TensorCheck(tensor_id=tensor_id, passed=not broken, error=lists.error[r], failed=failed, nan=nan, inf=inf,
                       saturated=saturated, producer=producer)


def build_verdict(part: PartVerdicts, j: int) -> OpVerdict:
    """The record of the ``j``-th judged operator of ``part``, its checks and blame (module doc)."""
    name = part.names[j]
    node = part.graph.nodes[name]
    by_index = {e.index: e for e in node.inputs}
    outputs = [_check(part, r, None, False) for r in part.outputs[j].values()]
    own = part.inputs[j]
    inputs = [_check(part, r, by_index.get(index), True) for index, r in own.items()]
    for index, edge in sorted(by_index.items()):
        if index in own or edge.producer is None:
            continue
        producer = part.number.get(edge.producer)
        if producer is None or producer > j:
            continue
        r = part.outputs[producer].get(edge.output)
        if r is not None:
            produced = _check(part, r, None, False)
            inputs.append(TensorCheck(tensor_id=produced.tensor_id, passed=produced.passed, error=produced.error,
                                      failed=produced.failed, nan=produced.nan, inf=produced.inf,
                                      saturated=produced.saturated, producer=edge))
    error, input_error = _worst(outputs), _worst(inputs)
    verdict = VERDICTS[part.codes[j]]
    blame: tuple[str, ...] = ()
    failing = [c for c in inputs if c.passed is False]
    if verdict is Verdict.INPUT_DIFFERS and node.role not in SOURCE_ROLES:
        sources = [c for c in failing if c.producer is not None and c.producer.role in SOURCE_ROLES]
        blame = _data_blame(sources or [c for c in failing if _is_data(part, c, bool(part.failed_before[j]))])
    elif verdict is Verdict.INHERITED:
        blame = tuple(dict.fromkeys(c.producer.producer for c in failing
                                    if c.producer is not None and c.producer.producer is not None))
    return OpVerdict(op=name, op_type=node.op_type, position=part.positions[j], verdict=verdict,
                     outputs=tuple(outputs), inputs=tuple(inputs), error=error, input_error=input_error,
                     amplification=_amplification(error, input_error), blame=blame, source=node.source,
                     rank=part.rank, iteration=part.iteration)


def _is_data(part: PartVerdicts, check: TensorCheck, failed_before: bool) -> bool:
    edge = check.producer
    if edge is not None and edge.role in SOURCE_ROLES:
        return True
    if edge is not None and edge.producer is not None:
        return _source_node(part.graph, edge.producer)
    return not part.graph.edges and not failed_before


class LazyVerdicts(VerdictList):
    """The verdicts of every part, in part order then graph order, each record built on first use
    (:func:`build_verdict`) and kept, so that the same operator is always the same record."""

    def __init__(self, parts: Sequence[PartVerdicts]) -> None:
        super().__init__()
        self._parts = tuple(parts)
        self._starts = np.cumsum([0] + [len(p.names) for p in parts])
        self._built: dict[int, OpVerdict] = {}
        self._codes = np.concatenate([p.codes for p in parts]) if parts else np.zeros(0, dtype=np.int8)

    def __len__(self) -> int:
        return int(self._starts[-1])

    @overload
    def __getitem__(self, index: int) -> OpVerdict: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[OpVerdict]: ...

    def __getitem__(self, index: int | slice) -> OpVerdict | Sequence[OpVerdict]:
        if isinstance(index, slice):
            return tuple(self._at(i) for i in range(*index.indices(len(self))))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._at(index)

    def __iter__(self) -> Iterator[OpVerdict]:
        if len(self._built) < len(self):
            self._build_all()
        built = self._built
        return (built[i] for i in range(len(self)))

    def _build_all(self) -> None:
        """Every record not built yet, with the cyclic collector paused (:func:`compare.heap.paused_gc`:
        ~130,000 long-lived records of a 100k-row run would otherwise set off collections that walk
        the whole heap of the run, ~1.5 s CPU, to find no garbage)."""
        with paused_gc():
            for k, part in enumerate(self._parts):
                start = int(self._starts[k])
                for j in range(len(part.names)):
                    if start + j not in self._built:
                        self._built[start + j] = build_verdict(part, j)

    def _at(self, i: int) -> OpVerdict:
        built = self._built.get(i)
        if built is None:
            k = int(np.searchsorted(self._starts, i, side="right")) - 1
            built = self._built[i] = build_verdict(self._parts[k], i - int(self._starts[k]))
        return built

    def counts(self) -> dict[Verdict, int]:
        counts = np.bincount(self._codes, minlength=len(VERDICTS))
        return {verdict: int(counts[code]) for code, verdict in enumerate(VERDICTS)}

    def labels(self) -> dict[tuple[int | None, int | None, str], Verdict]:
        out: dict[tuple[int | None, int | None, str], Verdict] = {}
        for part in self._parts:
            for name, code in zip(part.names, part.codes.tolist()):
                out[(part.rank, part.iteration, name)] = VERDICTS[code]
        return out

    def first_of(self, op: str) -> OpVerdict | None:
        for k, part in enumerate(self._parts):
            j = part.number.get(op)
            if j is not None:
                return self._at(int(self._starts[k]) + j)
        return None

    def first_diverging(self) -> OpVerdict | None:
        """The first ``origin`` or ``input-differs`` operator, None when there is none."""
        hits = np.flatnonzero((self._codes == ORIGIN) | (self._codes == INPUT_DIFFERS))
        return self._at(int(hits[0])) if len(hits) else None

    def first_nonfinite(self) -> str | None:
        """The first tensor whose left side holds NaN/Inf (inputs before outputs), None when none does."""
        return next((p.first_nonfinite for p in self._parts if p.first_nonfinite is not None), None)


__all__ = ["LazyVerdicts", "PartVerdicts", "build_verdict", "judge_part"]
