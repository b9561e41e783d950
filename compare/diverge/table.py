"""The verdicts of a part on columns (:func:`judge_part`) and the records built on demand (:class:`LazyVerdicts`).

The rules are :mod:`compare.diverge.verdicts`'s (module doc there); here they run over arrays:

1. **Slots.** Each row's ``op:kind:index`` tensor id names a slot (the operator is the row's
   ``LeftOp`` unless that is empty or ``*``); the first row of a slot is its row; slots of
   operators the graph does not have are left out. The slots are sorted by (graph position,
   outputs before inputs, index): each operator's outputs and inputs in index order. Slots,
   edges and input entries are flat arrays keyed by (operator, rank of the index): one
   ``np.unique`` for the first row of each slot and for the last edge of each index,
   ``np.searchsorted`` to find an input's edge or a producer's output slot.
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
``--explain``; the whole list when the API or the HTML report iterates it; a failing check's
record lists the bounds its row broke from a record of the fields
:func:`compare.verdict.gates.violations` reads (no row's record is built). Counts and labels
come from the columns, and so does every operator's verdict for the JSON block
(:meth:`LazyVerdicts.table`, :func:`part_table`: the verdicts as columns, a failing check's
broken bounds by :func:`compare.diverge.checks.broken_bounds`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, compress, repeat
from operator import attrgetter, is_, is_not
from typing import overload

import numpy as np

from ..heap import paused_gc
from ..records import Bound, built_item
from ..verdict.gates import violations
from .checks import (
    FAILS,
    NOT_COMPARED,
    PASSES,
    Bounds,
    PartRows,
    RowChecks,
    broken_bounds,
    row_checks,
)
from .records import (
    SOURCE_ROLES,
    CheckColumns,
    InputEdge,
    NodeRole,
    OpGraph,
    OpVerdict,
    TensorCheck,
    Verdict,
    VerdictList,
    VerdictTable,
)

#: Verdict codes of the columns, in :class:`Verdict` order.
VERDICTS = tuple(Verdict)
_CODE = {verdict: code for code, verdict in enumerate(VERDICTS)}
OK, ORIGIN, INHERITED, INPUT_DIFFERS, NOT_JUDGED = (_CODE[Verdict.OK], _CODE[Verdict.ORIGIN], _CODE[Verdict.INHERITED],
                                                    _CODE[Verdict.INPUT_DIFFERS], _CODE[Verdict.NOT_COMPARED])
#: Input entries: own input rows, then producers' outputs (for the NaN/Inf order), then outputs.
_OWN, _PRODUCED, _OUTPUT = 0, 1, 2


@dataclass(frozen=True)
class Slots:
    """The output (or own input) slots of the judged operators of a part, flat: operator ``j``'s
    are places ``start[j]:start[j + 1]``, in index order; ``index`` the slot's index (as the
    tensor id gives it), ``row`` its row (the first row of that slot)."""

    start: np.ndarray
    index: list[int]
    row: np.ndarray

    def of(self, j: int) -> dict[int, int]:
        """Operator ``j``'s slots: index -> row, in index order."""
        begin, end = int(self.start[j]), int(self.start[j + 1])
        return dict(zip(self.index[begin:end], self.row[begin:end].tolist()))


@dataclass(frozen=True)
class Produced:
    """The producers' outputs that stand for inputs without a row of their own, flat: ``op`` the
    judged operator they feed, ``edge`` their edge (a place in :attr:`PartVerdicts.edges`), ``row``
    the producer's output row; by operator, then input index."""

    op: np.ndarray
    edge: np.ndarray
    row: np.ndarray


@dataclass(frozen=True)
class PartVerdicts:
    """The judged operators of one part, on columns (module doc).

    ``names``: the judged operators in graph order, ``number``: name -> place among them,
    ``positions``: their graph positions;
    ``outputs`` / ``inputs``: the operators' slot rows (output rows by index; own input rows by
    index); ``codes``: the verdict code of each operator (:data:`VERDICTS`);
    ``failed_before``: whether an operator before it had a failing output or a differing source input;
    ``edges``: the operators' input edges that count (the last of each index), ``own_edge``: the
    edge of each own input slot (a place in ``edges``, -1: none); ``produced``: the producers'
    output rows judged as inputs of the operators without an own row of that index, their
    operator, edge and row by operator then index (module doc, 3.).
    """

    rows: PartRows
    graph: OpGraph
    bounds: Bounds
    rank: int | None
    iteration: int | None
    names: list[str]
    number: dict[str, int]
    positions: list[int]
    outputs: Slots
    inputs: Slots
    checks: RowChecks
    codes: np.ndarray
    failed_before: np.ndarray
    first_nonfinite: str | None
    edges: list[InputEdge]
    own_edge: np.ndarray
    produced: Produced

    @cached_property
    def lists(self) -> RowLists:
        """The row checks as Python lists, for building records (read once per part, not per record)."""
        checks = self.checks
        return RowLists(passed=checks.passed.tolist(), builtin=None if checks.builtin is None else checks.builtin.tolist(),
                        error=checks.error.tolist(), has_error=checks.has_error.tolist())


@dataclass(frozen=True)
class RowLists:
    """:class:`~compare.diverge.checks.RowChecks` as lists: ``passed`` / ``builtin`` codes, ``error``
    and whether a row has one (``has_error``)."""

    passed: list[int]
    builtin: list[int] | None
    error: list[float]
    has_error: list[bool]


#: Slot sides, in judging order: an operator's outputs, then its own inputs.
_OUT_SIDE, _IN_SIDE = 0, 1


def _slot_rows(rows: PartRows, number: dict[str, int]) -> tuple[list[int], list[int], list[int], list[int]]:
    """Every row that names a slot (module doc, 1.): its operator's graph position (``number``:
    name -> position), side (:data:`_OUT_SIDE` / :data:`_IN_SIDE`), index and row, in row order.
    ``op:kind:index``: ``kind`` output or input, ``index`` decimal digits; other ids name none."""
    ops: list[int] = []
    sides: list[int] = []
    indexes: list[int] = []
    at: list[int] = []
    get = number.get
    for i, (tensor_id, left) in enumerate(zip(rows.tensor_id, rows.left_op)):
        if not tensor_id:
            continue
        parts = tensor_id.rsplit(":", 2)
        if len(parts) != 3:
            continue
        op, kind, index = parts
        if kind == "output":
            side = _OUT_SIDE
        elif kind == "input":
            side = _IN_SIDE
        else:
            continue
        if not index.isdecimal():
            continue
        j = get(left if left and left != "*" else op)
        if j is not None:
            ops.append(j)
            sides.append(side)
            indexes.append(int(index))
            at.append(i)
    return ops, sides, indexes, at


_INPUTS = attrgetter("inputs")
_INDEX = attrgetter("index")
_OUTPUT_OF = attrgetter("output")
_PRODUCER = attrgetter("producer")
_ROLE = attrgetter("role")


def _sources(roles: list[NodeRole]) -> np.ndarray:
    """Whether each role is a source role (:data:`SOURCE_ROLES`; by identity: an enum member
    hashes in Python, ``is`` runs in C)."""
    out = np.zeros(len(roles), dtype=bool)
    for role in SOURCE_ROLES:
        out |= np.fromiter(map(is_, roles, repeat(role)), dtype=bool, count=len(roles))
    return out


def _codes(values: list[int], code: dict[int, int]) -> np.ndarray:
    """``values`` by their rank among the indexes of a part (``code``: value -> rank), as int64
    (indexes are Python integers of any size; their ranks keep their order)."""
    return np.fromiter(map(code.__getitem__, values), dtype=np.int64, count=len(values))


def _find(keys: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``wanted`` is in the sorted unique ``keys`` and whether it is there (absent:
    ``len(keys)``)."""
    at = np.searchsorted(keys, wanted)
    found = np.zeros(len(wanted), dtype=bool)
    inside = at < len(keys)
    found[inside] = keys[at[inside]] == wanted[inside]
    return np.where(found, at, len(keys)), found


def judge_part(rows: PartRows, graph: OpGraph, bounds: Bounds, rank: int | None,
               iteration: int | None) -> PartVerdicts:
    """The verdict of every operator of ``graph`` that has rows in ``rows`` (module doc).

    Slots, edges and input entries are flat arrays keyed by (operator, index rank): a slot's row
    is the first row of its (operator, side, index) (``np.unique``'s first occurrence); an
    operator's edge of an index is its last edge of that index (the first occurrence in reverse)."""
    nodes = graph.nodes
    names_all = list(nodes)
    number_all = {name: p for p, name in enumerate(names_all)}
    slot_ops, slot_sides, slot_indexes, slot_at = _slot_rows(rows, number_all)

    judged_at = np.unique(np.asarray(slot_ops, dtype=np.intp))  # graph positions of the judged operators
    names = [names_all[p] for p in judged_at.tolist()]
    n = len(names)
    number = {name: j for j, name in enumerate(names)}
    judged_of = np.full(len(names_all) + 1, -1, dtype=np.intp)  # graph position -> judged number; [-1]: none
    judged_of[judged_at] = np.arange(n)

    # the judged operators' edges, flat
    edge_lists = list(map(_INPUTS, map(nodes.__getitem__, names)))
    edges = list(chain.from_iterable(edge_lists))
    edge_op = np.repeat(np.arange(n, dtype=np.int64), list(map(len, edge_lists)))
    edge_index = list(map(_INDEX, edges))
    edge_output = list(map(_OUTPUT_OF, edges))
    code = {value: rank for rank, value in enumerate(sorted({*slot_indexes, *edge_index, *edge_output}))}
    width = max(len(code), 1)

    # slots: the first row of each (operator, side, index), sorted by operator, side, index
    slot_key = ((judged_of[np.asarray(slot_ops, dtype=np.intp)].astype(np.int64) * 2
                 + np.asarray(slot_sides, dtype=np.int64)) * width + _codes(slot_indexes, code))
    slot_key, first = np.unique(slot_key, return_index=True)
    slot_row = np.asarray(slot_at, dtype=np.intp)[first]
    slot_index = list(map(slot_indexes.__getitem__, first.tolist()))
    slot_op = slot_key // (2 * width)
    is_out = (slot_key // width) % 2 == _OUT_SIDE
    in_key = slot_key[~is_out] - width * (2 * slot_op[~is_out] + 1) + width * slot_op[~is_out]  # op * width + code
    out_key = slot_key[is_out] - width * slot_op[is_out]
    out_op, in_op = slot_op[is_out], slot_op[~is_out]
    out_rows, in_rows = slot_row[is_out], slot_row[~is_out]
    operators = np.arange(n + 1)
    outputs = Slots(start=np.searchsorted(out_op, operators), index=list(compress(slot_index, is_out.tolist())),
                    row=out_rows)
    inputs = Slots(start=np.searchsorted(in_op, operators), index=list(compress(slot_index, (~is_out).tolist())),
                   row=in_rows)

    # each operator's edge of an index: its last edge of that index
    source_node = np.append(_sources(list(map(_ROLE, nodes.values()))), False)  # graph position -> a source node; [-1]: none
    edge_key = edge_op * width + _codes(edge_index, code)
    edge_key, last = np.unique(edge_key[::-1], return_index=True)
    last = len(edges) - 1 - last
    kept = list(map(edges.__getitem__, last.tolist()))
    producers = list(map(_PRODUCER, kept))
    e_op = edge_op[last]
    e_source = _sources(list(map(_ROLE, kept)))
    e_producer = np.fromiter(map(is_not, producers, repeat(None)), dtype=bool, count=len(kept))
    e_from = np.fromiter(map(number_all.get, producers, repeat(-1)), dtype=np.intp, count=len(kept))
    e_data = source_node[e_from]  # a producer of a source role (a node of the graph)
    e_output = _codes(list(map(_OUTPUT_OF, kept)), code)

    # own inputs with their edge (``at``: the edge, ``len(kept)`` for none: the False appended)
    at, has_edge = _find(edge_key, in_key)
    own_source = np.append(e_source, False)[at]
    source_inputs = in_rows[own_source].tolist() if bounds.custom else []
    order = slot_row.tolist()  # per operator its outputs, then its inputs, each by index
    checks = row_checks(rows, order, bounds, source_inputs)
    passed, builtin = checks.passed, checks.builtin

    out_passed = passed[out_rows]
    compared = np.bincount(out_op[out_passed != NOT_COMPARED], minlength=n) > 0
    out_fails = np.bincount(out_op[out_passed == FAILS], minlength=n) > 0

    own_fails = passed[in_rows] == FAILS
    if builtin is not None:
        own_fails |= own_source & (builtin[in_rows] == FAILS)
    own_data = np.append(e_producer & e_data, False)[at]
    own_free = ~np.append(e_producer, False)[at]

    # producers' outputs for the edges without an own input: producer judged at or before the operator
    e_judged = judged_of[e_from]
    _, own = _find(in_key, edge_key)
    candidate = ~own & e_producer & (e_judged >= 0) & (e_judged <= e_op)
    produced_at, produced = _find(out_key, e_judged * width + e_output)
    use = np.flatnonzero(candidate & produced)
    made_rows = out_rows[produced_at[use]]
    role_source = source_node[judged_at]

    e_op_all = np.concatenate([in_op, e_op[use]]).astype(np.intp)
    e_fails = np.concatenate([own_fails, passed[made_rows] == FAILS])
    e_src = np.concatenate([own_source, e_source[use]])
    e_dat = np.concatenate([own_data, e_data[use]])
    e_free = np.concatenate([own_free, np.zeros(len(use), dtype=bool)])

    def any_input(mask: np.ndarray) -> np.ndarray:
        return np.bincount(e_op_all[mask], minlength=n) > 0

    sources = any_input(e_fails & e_src)
    failing = any_input(e_fails)
    data = any_input(e_fails & e_dat)
    free = any_input(e_fails & e_free)
    trigger = compared & (out_fails | (~role_source & sources))
    failed_before = (np.cumsum(trigger) - trigger) > 0
    if not graph.edges:
        data = data | (free & ~failed_before)
    codes = np.select([~compared, role_source & out_fails, role_source, sources, ~out_fails, data, failing],
                      [NOT_JUDGED, INPUT_DIFFERS, OK, INPUT_DIFFERS, OK, INPUT_DIFFERS, INHERITED],
                      default=ORIGIN).astype(np.int8)

    # the first NaN/Inf tensor: per operator its inputs (own, then producers'), then its outputs
    order_op = np.concatenate([e_op_all, out_op])
    order_kind = np.concatenate([np.full(len(in_rows), _OWN), np.full(len(use), _PRODUCED), np.full(len(out_rows), _OUTPUT)])
    order_index = np.concatenate([in_key % width, edge_key[use] % width, out_key % width])
    order_row = np.concatenate([in_rows, made_rows, out_rows]).astype(np.intp)
    hits = np.flatnonzero(checks.nonfinite[order_row])
    first_nonfinite = None
    if len(hits):
        first = hits[np.lexsort((order_index[hits], order_kind[hits], order_op[hits]))[0]]
        r = int(order_row[first])
        first_nonfinite = rows.tensor_id[r] or rows.left_op[r]
    return PartVerdicts(rows=rows, graph=graph, bounds=bounds, rank=rank, iteration=iteration, names=names,
                        number=number, positions=judged_at.tolist(), outputs=outputs, inputs=inputs,
                        checks=checks, codes=codes, failed_before=failed_before, first_nonfinite=first_nonfinite,
                        edges=kept, own_edge=np.where(has_edge, at, -1),
                        produced=Produced(op=e_op[use], edge=use, row=made_rows))


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
    rows = part.rows
    counts = rows.left_counts[r]
    nan, inf, saturated = (counts.nan, counts.inf, counts.saturated) if counts is not None else (None, None, None)
    tensor_id = rows.tensor_id[r] or rows.left_op[r]
    passed = lists.passed[r]
    if passed == NOT_COMPARED:
        return TensorCheck(tensor_id=tensor_id, passed=None, nan=nan, inf=inf, saturated=saturated, producer=producer)
    broken: list[tuple[Bound, float]] = []
    if passed == FAILS:  # the bounds a failing row broke
        bounds = part.bounds.of(rows.bounds_row(r))
        broken = violations(rows.checked_row(r, bounds), bounds)
    if (not broken and own and producer is not None and producer.role in SOURCE_ROLES and lists.builtin is not None
            and lists.builtin[r] == FAILS):
        bounds = part.bounds.builtin(rows.bounds_row(r))
        broken = violations(rows.checked_row(r, bounds), bounds)
    failed = tuple([(bound.metric, value) for bound, value in broken]) if broken else ()
    return TensorCheck(tensor_id=tensor_id, passed=not broken, error=lists.error[r] if lists.has_error[r] else None,
                       failed=failed, nan=nan, inf=inf, saturated=saturated, producer=producer)


def build_verdict(part: PartVerdicts, j: int) -> OpVerdict:
    """The record of the ``j``-th judged operator of ``part``, its checks and blame (module doc)."""
    name = part.names[j]
    node = part.graph.nodes[name]
    by_index = {e.index: e for e in node.inputs}
    outputs = [_check(part, r, None, False) for r in part.outputs.of(j).values()]
    own = part.inputs.of(j)
    inputs = [_check(part, r, by_index.get(index), True) for index, r in own.items()]
    for index, edge in sorted(by_index.items()):
        if index in own or edge.producer is None:
            continue
        producer = part.number.get(edge.producer)
        if producer is None or producer > j:
            continue
        r = part.outputs.of(producer).get(edge.output)
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


# ------------------------------------------------------------------------------ the verdicts as columns


def _worst_of(group: np.ndarray, error: np.ndarray, has: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_worst` of each group of checks (``group``: each check's group, in check order;
    ``error`` / ``has``: its error and whether it has one), and whether the group has one (None
    when no check of the group has an error): NaN when one is NaN, else the first of the largest
    (``max``'s pick: ``-0.0`` and ``0.0`` are equal, the first is kept)."""
    with_error = np.flatnonzero(has)
    values = error[with_error]
    where = group[with_error]
    nan = np.isnan(values)
    largest = np.full(groups, -np.inf)
    np.maximum.at(largest, where[~nan], values[~nan])
    top = np.flatnonzero(~nan & (values == largest[where]))
    _, first = np.unique(where[top], return_index=True)
    out = np.full(groups, np.nan)
    out[where[top[first]]] = values[top[first]]
    out[np.bincount(where[nan], minlength=groups) > 0] = np.nan
    return out, np.bincount(where, minlength=groups) > 0


def _amplifications(error: np.ndarray, has_error: np.ndarray, input_error: np.ndarray, has_input: np.ndarray
                    ) -> list[float | None]:
    """:func:`_amplification` of each operator, None where it gives None. Which operators have
    one is a mask of its own, not the NaN of the ratio: a ratio may itself be NaN (``-inf / -inf``),
    as :func:`_amplification`'s division gives it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = error / input_error
    zero = input_error == 0.0
    present = has_error & has_input & ~np.isnan(error) & ~np.isnan(input_error) & ~(zero & ~(error > 0.0))
    return _optional(np.where(zero, np.inf, ratio), present)


def _optional(values: np.ndarray, present: np.ndarray) -> list[float | None]:
    """The values as floats, None where not ``present``."""
    return [value if here else None for value, here in zip(values.tolist(), present.tolist())]


def part_table(part: PartVerdicts, record: Callable[[int], OpVerdict]) -> VerdictTable:
    """The verdicts of ``part`` as columns (:class:`~compare.diverge.records.VerdictTable`): what
    :func:`build_verdict` gives, operator by operator, built over arrays. Each operator's checks:
    its output slots, its own input slots, the producers' outputs it reads (:class:`Produced`),
    each by index. A check that passes or was not compared is read from the columns; a failing
    one is built by :func:`_check` (the bounds it broke, from
    :func:`compare.verdict.gates.violations`). Blame: of an ``inherited`` operator the producers of
    its failing inputs, from the columns; of an ``input-differs`` one the record's (``record``:
    operator ``j``'s record, :meth:`LazyVerdicts._at`).

    Both stay: :func:`build_verdict` makes the records the API and the text reports read one
    operator at a time (the first divergence, a chain), this the columns the JSON block of every
    operator is written from; tests/compare/diverge/test_localisation_columns.py holds the two
    equal (the block of the table is the block of the records, on random graphs and rows)."""
    n = len(part.names)
    outputs, inputs, produced = part.outputs, part.inputs, part.produced
    out_op = np.repeat(np.arange(n), np.diff(outputs.start))
    in_op = np.repeat(np.arange(n), np.diff(inputs.start))
    op = np.concatenate([out_op, in_op, produced.op]).astype(np.intp)
    side = np.concatenate([np.zeros(len(out_op), np.intp), np.ones(len(in_op), np.intp),
                           np.full(len(produced.op), 2, np.intp)])
    order = np.argsort(op * 3 + side, kind="stable")  # each side is by operator then index already
    op, side = op[order], side[order]
    row = np.concatenate([outputs.row, inputs.row, produced.row]).astype(np.intp)[order]
    edge = np.concatenate([np.full(len(out_op), -1, np.intp), part.own_edge, produced.edge]).astype(np.intp)[order]
    starts = np.searchsorted(op, np.arange(n + 1))
    first_input = np.searchsorted(op * 2 + (side > 0), np.arange(n) * 2 + 1)

    checks, rows = part.checks, part.rows
    code = checks.passed[row]
    own = side == 1
    edges = part.edges
    kept_source = np.fromiter((e.role in SOURCE_ROLES for e in edges), dtype=bool, count=len(edges))
    source = own & (edge >= 0) & np.append(kept_source, False)[edge]
    failing = code == FAILS
    if checks.builtin is not None:
        failing |= source & (checks.builtin[row] == FAILS)
    has = checks.has_error[row]
    row_list = row.tolist()
    tensor_ids, left_ops, counts = rows.tensor_id, rows.left_op, rows.left_counts
    ids = [tensor_ids[r] or left_ops[r] for r in row_list]
    passed: list[bool | None] = [_PASSED[c] for c in code.tolist()]
    error = [value if here else None for value, here in zip(checks.error[row].tolist(), has.tolist())]
    producer: list[InputEdge | None] = [edges[e] if e >= 0 else None for e in edge.tolist()]
    failed: list[tuple[tuple[str, float], ...]] = [()] * len(row_list)
    run_fails = code == FAILS
    for at, against in ((np.flatnonzero(run_fails), part.bounds), (np.flatnonzero(failing & ~run_fails), part.bounds.builtin_bounds)):
        distinct, inverse = np.unique(row[at], return_inverse=True)
        broken = broken_bounds(rows, distinct, against)
        for k, d in zip(at.tolist(), inverse.reshape(-1).tolist()):
            failed[k] = broken[d]
            passed[k] = not broken[d]
    count = [counts[r] for r in row_list]
    table_checks = CheckColumns(
        tensor_id=ids, passed=passed, error=error, failed=failed,
        nan=[c.nan if c is not None else None for c in count], inf=[c.inf if c is not None else None for c in count],
        saturated=[c.saturated if c is not None else None for c in count], producer=producer)

    worst, worst_present = _worst_of(op * 2 + (side > 0), checks.error[row], has, 2 * n)
    error_at, has_output_error, input_at, has_input_error = worst[0::2], worst_present[0::2], worst[1::2], worst_present[1::2]
    amplification = _amplifications(error_at, has_output_error, input_at, has_input_error)
    errors, input_errors = _optional(error_at, has_output_error), _optional(input_at, has_input_error)
    nodes = list(map(part.graph.nodes.__getitem__, part.names))
    verdicts = [VERDICTS[c] for c in part.codes.tolist()]
    blame: list[tuple[str, ...]] = [()] * n
    starts_list, inputs_list = starts.tolist(), first_input.tolist()
    for j in np.flatnonzero((part.codes == INHERITED) | (part.codes == INPUT_DIFFERS)).tolist():
        if verdicts[j] is Verdict.INPUT_DIFFERS:
            blame[j] = record(j).blame
        else:
            blame[j] = tuple(dict.fromkeys(
                e.producer for e, p in zip(producer[inputs_list[j]:starts_list[j + 1]], passed[inputs_list[j]:starts_list[j + 1]])
                if p is False and e is not None and e.producer is not None))
    return VerdictTable(op=list(part.names), op_type=[node.op_type for node in nodes], position=list(part.positions),
                        verdict=verdicts, rank=[part.rank] * n, iteration=[part.iteration] * n, error=errors,
                        input_error=input_errors, amplification=amplification,
                        blame=blame, source=[node.source for node in nodes], starts=starts_list,
                        inputs=inputs_list, checks=table_checks)


#: A check's ``passed`` from its code (:data:`~compare.diverge.checks.PASSES` ...); a failing one is its record's.
_PASSED = {NOT_COMPARED: None, FAILS: False, PASSES: True}


def _joined(tables: Sequence[VerdictTable]) -> VerdictTable:
    """Tables one after the other (their check places moved on)."""
    if len(tables) == 1:
        return tables[0]
    offsets = np.cumsum([0] + [len(t.checks.tensor_id) for t in tables]).tolist()

    def joined(column: Callable[[VerdictTable], list]) -> list:
        return list(chain.from_iterable(map(column, tables)))

    checks = CheckColumns(tensor_id=joined(lambda t: t.checks.tensor_id), passed=joined(lambda t: t.checks.passed),
                          error=joined(lambda t: t.checks.error), failed=joined(lambda t: t.checks.failed),
                          nan=joined(lambda t: t.checks.nan), inf=joined(lambda t: t.checks.inf),
                          saturated=joined(lambda t: t.checks.saturated), producer=joined(lambda t: t.checks.producer))
    starts = [offset + s for offset, t in zip(offsets, tables) for s in t.starts[:-1]] + [offsets[-1]]
    return VerdictTable(op=joined(attrgetter("op")), op_type=joined(attrgetter("op_type")),
                        position=joined(attrgetter("position")), verdict=joined(attrgetter("verdict")),
                        rank=joined(attrgetter("rank")), iteration=joined(attrgetter("iteration")),
                        error=joined(attrgetter("error")), input_error=joined(attrgetter("input_error")),
                        amplification=joined(attrgetter("amplification")), blame=joined(attrgetter("blame")),
                        source=joined(attrgetter("source")), starts=starts,
                        inputs=[offset + s for offset, t in zip(offsets, tables) for s in t.inputs], checks=checks)


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
        item = built_item(index, len(self), self._at)
        # a slice is a tuple, as VerdictList's
        return tuple(item) if isinstance(index, slice) else item  # type: ignore[arg-type]

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

    def table(self) -> VerdictTable:
        """The verdicts as columns, from the columns of each part (:func:`part_table`): no record
        an operator (those of the ``input-differs`` operators, for their blame)."""
        tables = [part_table(part, lambda j, start=int(self._starts[k]): self._at(start + j))
                  for k, part in enumerate(self._parts)]
        return _joined(tables) if tables else VerdictList().table()

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
