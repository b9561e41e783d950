"""msprobe's own cells on the rows of msprobe runs, and their non-tensor arguments as rows.

**Cells** (:func:`annotate`): every row of a pair where a side was read from an msprobe tree gets
a :class:`~compare.records.MsprobeCells`: each side's name in msprobe's form (``TensorRef.label``:
``Functional.conv2d.0.forward.input.0``), data file (the ``.pt`` / ``.npy`` file name; ``""`` for a
statistics-only tensor), ``requires_grad``, and the left call's stack (``stack.json``) with its user
frame (:func:`compare.loaders.msprobe_graph.user_frame`). Rows of other families get none: their
tables are unchanged.

**Argument rows** (:func:`argument_rows`): the non-tensor items of a call (``OpDump.arguments``:
``int``, ``float``, ``bool``, ``None``, ``slice`` ...) are compared by value, one row each. The
arguments of two paired calls (a row of the pairing names both) are matched by their place (kind
and index, numbered with the tensors: a mapped call of another name matches too). A row:

* ``kind`` :attr:`~compare.records.RowKind.ARGUMENT`, ``TensorIndex`` ``{call}:{kind}:{index}``,
  data types the recorded type names (``int``, ``float``, ``None``), shape ``()``;
* metric :data:`~compare.records.ARGUMENT_METRIC` (``ArgumentDiff``) 0.0 when both sides hold the
  same type and value (two NaN floats are the same), 1.0 otherwise; ``None`` on a one-sided row;
  no other metric (not computed: ``NaN`` cells; listed in ``undefined``, so gates do not count
  them missing);
* :class:`~compare.records.ArgumentDiff`: both values as text (``repr`` of a float: exact), and
  ``diff = left - right`` (float64) when both are numbers (bool excluded);
* a differing argument's reason says ``argument differs: left X, right Y`` (and the difference);
  an argument of one side only is MISSING_LEFT / MISSING_RIGHT with the reason.

Only when both sides are msprobe runs (another family records no arguments). Rows are inserted
beside the rows of their call, in item order (kind, then index), so a table
reads as msprobe's. Nothing is read from disk: the values are in ``dump.json``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from ..loaders.msprobe_graph import user_frame
from ..records import (
    ARGUMENT_DIFFERS,
    ARGUMENT_METRIC,
    Argument,
    ArgumentDiff,
    DumpLayout,
    MetricRow,
    MsprobeCells,
    Pair,
    PairStatus,
    RowKind,
    Run,
    TensorKind,
    TensorRef,
)
from ..stats_table import RowColumns
from ..tensor_table import Call, PairTable, call_of, has_arguments

_NO_COUNTERPART = "*"
_KIND_ORDER = {TensorKind.INPUT: 0, TensorKind.OUTPUT: 1}


def msprobe_sides(left: Run, right: Run) -> bool:
    """Whether a side of the comparison is an msprobe run (its rows get msprobe's cells)."""
    return DumpLayout.MSPROBE in (left.family, right.family)


def _data_name(ref: TensorRef | None) -> str:
    """The Data_name cell of a side: its data file's name; ``""`` for no side, a statistics-only
    tensor (checked first: no path is looked at) or a tensor of ``dump.json``."""
    if ref is None or (ref.reader is None and ref.stats is not None):
        return ""
    name = ref.path.name
    return "" if name == "dump.json" else name


def _stack(left: Run, right: Run, left_op: str, right_op: str) -> tuple[str, ...]:
    call = call_of(left.ops, left_op) if left_op != _NO_COUNTERPART else None
    if call is None and right_op != _NO_COUNTERPART:
        call = call_of(right.ops, right_op)
    return call.stack if call is not None else ()


def msprobe_cells(pairs: Sequence[Pair], left: Run, right: Run) -> list[MsprobeCells]:
    """The :class:`MsprobeCells` of each pair's row, in pair order (module doc). The pairs of two
    msprobe tables are read as columns where both tensors are columnar (a statistics-only tensor
    has no data file: its Data_name cell is ``""``), from their Pairs elsewhere."""
    stacks: dict[tuple[str, str], tuple[str, ...]] = {}
    sources: dict[tuple[str, ...], str] = {}
    table = pairs if isinstance(pairs, PairTable) else None
    out = []
    for position in range(len(pairs)):
        if table is not None:
            left_op, right_op = table.left_op[position], table.right_op[position]
        else:
            pair = pairs[position]
            left_op, right_op = pair.left_op, pair.right_op
        key = (left_op, right_op)
        stack = stacks.get(key)
        if stack is None:
            stack = stacks[key] = _stack(left, right, left_op, right_op)
        source = sources.get(stack)
        if source is None:
            source = sources[stack] = user_frame(stack) if stack else ""
        if table is not None and table.columnar(position):
            lrow, rrow = table.left_row[position], table.right_row[position]
            out.append(MsprobeCells(table.left.label[lrow], table.right.label[rrow], "", "",  # type: ignore[arg-type]
                                    table.left.grad[lrow], table.right.grad[rrow], stack, source))
            continue
        pair = pairs[position]
        lref, rref = pair.left, pair.right
        out.append(MsprobeCells(  # left_name, right_name, left_data, right_data, left_grad, right_grad, stack, source
            lref.label if lref is not None else "", rref.label if rref is not None else "",
            _data_name(lref), _data_name(rref),
            lref.requires_grad if lref is not None else None,
            rref.requires_grad if rref is not None else None, stack, source))
    return out


def annotate(rows: Sequence[MetricRow], pairs: Sequence[Pair], left: Run, right: Run) -> None:
    """Set ``row.msprobe`` on each row of ``pairs`` (``rows[i]`` is the row of ``pairs[i]``): :func:`msprobe_cells`."""
    for row, cells in zip(rows, msprobe_cells(pairs, left, right)):
        row.msprobe = cells


def _same(a: Argument, b: Argument) -> bool:
    if a.type_name != b.type_name:
        return False
    if isinstance(a.value, float) and isinstance(b.value, float) and math.isnan(a.value) and math.isnan(b.value):
        return True
    return type(a.value) is type(b.value) and a.value == b.value


def _diff(a: Argument, b: Argument) -> float | None:
    if not (a.numeric and b.numeric):
        return None
    try:
        return float(a.value) - float(b.value)  # type: ignore[arg-type]
    except OverflowError:  # an integer beyond the float range
        return math.inf if a.value > b.value else -math.inf  # type: ignore[operator]


class CallBase(NamedTuple):
    """What an argument row takes from the first row of its call (:func:`argument_order`)."""

    index: int
    op_type: str | None
    left_op: str
    right_op: str
    op_sequence: int | None
    rank: int | None
    iteration: int | None
    graph: int | None


def _row(base: CallBase, op_name: str, left: Argument | None, right: Argument | None, stack: tuple[str, ...],
         undefined: frozenset[str]) -> MetricRow:
    """One argument row (module doc); ``base`` gives the call's index, names, op type and place."""
    some = left if left is not None else right
    assert some is not None
    values: dict[str, float | None] = {}  # the other metrics: absent (not computed), and undefined
    if left is not None and right is not None:
        same = _same(left, right)
        diff = _diff(left, right)
        values[ARGUMENT_METRIC] = 0.0 if same else 1.0
        status = PairStatus.COMPARED
        reasons = [] if same else [f"{ARGUMENT_DIFFERS}: left {left.type_name} {left.text}, right {right.type_name} "
                                   f"{right.text}" + (f" (difference {diff!r})" if diff is not None else "")]
    else:
        same, diff = False, None
        values[ARGUMENT_METRIC] = None
        status = PairStatus.MISSING_RIGHT if right is None else PairStatus.MISSING_LEFT
        side = "right" if right is None else "left"
        reasons = [f"argument {some.label or some.tensor_id(op_name)} has no counterpart on the {side}"]
    argument = ArgumentDiff(left_type=left.type_name if left is not None else None,
                            right_type=right.type_name if right is not None else None,
                            left=left.text if left is not None else None,
                            right=right.text if right is not None else None, same=same, diff=diff)
    cells = MsprobeCells(left_name=left.label if left is not None else "",
                         right_name=right.label if right is not None else "", stack=stack,
                         source=user_frame(stack) if stack else "")
    return MetricRow(base.index, base.op_type, base.left_op, base.right_op, some.tensor_id(op_name),
                     left_dtype=left.type_name if left is not None else None,
                     right_dtype=right.type_name if right is not None else None, shape=(), metrics=values,
                     reasons=reasons, status=status, op_sequence=base.op_sequence, rank=base.rank,
                     iteration=base.iteration, graph=base.graph,
                     undefined=undefined, kind=RowKind.ARGUMENT,
                     msprobe=cells, argument=argument)


def _place(pair: Pair) -> tuple[int, int]:
    ref = pair.left if pair.left is not None else pair.right
    if ref is None:
        return (-1, -1)
    return (_KIND_ORDER[ref.kind], ref.index)


def _places(pairs: Sequence[Pair], start: int, end: int) -> list[tuple[int, int]]:
    """The places (kind order, index) of the rows ``start`` to ``end`` of ``pairs`` (a table's
    from its columns)."""
    if isinstance(pairs, PairTable):
        return [pairs.place(row) for row in range(start, end)]
    return [_place(pair) for pair in pairs[start:end]]


def _call_arguments(left: Call | None, right: Call | None, base: CallBase, stack: tuple[str, ...],
                    undefined: frozenset[str]) -> list[tuple[tuple[int, int], MetricRow]]:
    """The argument rows of one call pair, with their places."""
    lefts = {(a.kind, a.index): a for a in left.arguments} if left is not None else {}
    rights = {(a.kind, a.index): a for a in right.arguments} if right is not None else {}
    out = []
    for key in sorted(lefts.keys() | rights.keys(), key=lambda k: (_KIND_ORDER[k[0]], k[1])):
        op_name = left.name if left is not None and key in lefts else (right.name if right is not None else "")
        out.append(((_KIND_ORDER[key[0]], key[1]), _row(base, op_name, lefts.get(key), rights.get(key), stack,
                                                        undefined)))
    return out


def with_arguments(rows: list[MetricRow], pairs: Sequence[Pair], left: Run, right: Run,
                   metrics: Sequence[str]) -> list[MetricRow]:
    """``rows`` (``rows[i]`` the row of ``pairs[i]``; rows after them, without a pair, are kept at
    the end) with the argument rows of each call inserted among its rows in item order
    (:func:`argument_order`)."""
    order = argument_order(RowColumns(rows), pairs, left, right, metrics)
    if order is None:
        return rows
    return [rows[item] if type(item) is int else item for item in order]  # type: ignore[misc]


def argument_order(rows: RowColumns, pairs: Sequence[Pair], left: Run, right: Run,
                   metrics: Sequence[str]) -> list[int | MetricRow] | None:
    """The rows of :func:`with_arguments`, in order: the position of a row of ``rows`` (their
    columns: a table's, or records') or a new argument row (module doc); None when there is no
    argument to add. Each call pair's arguments are added once, at its first group of rows."""
    if left.family is not DumpLayout.MSPROBE or right.family is not DumpLayout.MSPROBE:
        return None  # a golden / MindSpore side records no arguments: nothing to compare them with
    if not (has_arguments(left.ops) or has_arguments(right.ops)):
        return None
    undefined = frozenset(m for m in metrics if m != ARGUMENT_METRIC)  # one set for every argument row
    out: list[int | MetricRow] = []
    done: set[tuple[str, str, int | None, int | None, int | None]] = set()
    i = 0
    count = len(pairs)
    if isinstance(pairs, PairTable):
        left_ops, right_ops = pairs.left_op, pairs.right_op
    else:
        left_ops, right_ops = [pair.left_op for pair in pairs], [pair.right_op for pair in pairs]
    while i < count:
        left_op, right_op = left_ops[i], right_ops[i]
        j = i
        while j < count and left_ops[j] == left_op and right_ops[j] == right_op:
            j += 1
        lop = call_of(left.ops, left_op) if left_op != _NO_COUNTERPART else None
        rop = call_of(right.ops, right_op) if right_op != _NO_COUNTERPART else None
        extra = []
        if (lop is not None and lop.arguments) or (rop is not None and rop.arguments):
            base = CallBase(rows.index[i], rows.op_type[i], rows.left_op[i], rows.right_op[i], rows.op_sequence[i],
                            rows.rank[i], rows.iteration[i], rows.graph[i])
            key = (left_op, right_op, base.rank, base.iteration, base.graph)
            if key not in done:
                done.add(key)
                stack = (lop.stack if lop is not None else ()) or (rop.stack if rop is not None else ())
                extra = _call_arguments(lop, rop, base, stack, undefined)
        if not extra:
            out.extend(range(i, j))
        else:
            placed: list[tuple[tuple[int, int], int, int, int | MetricRow]] = [
                (place, 0, n, i + n) for n, place in enumerate(_places(pairs, i, j))]
            placed += [(place, 1, n, r) for n, (place, r) in enumerate(extra)]
            placed.sort(key=lambda item: (item[0], item[1], item[2]))
            out.extend(r for _, _, _, r in placed)
        i = j
    out.extend(range(count, len(rows)))
    return out


__all__ = ["annotate", "argument_order", "msprobe_cells", "msprobe_sides", "with_arguments"]
