"""The calls and tensors of one msprobe ``dump.json`` as columns, and the pairs of two of them.

Why columns: a large-model ``dump.json`` holds 10^5-10^6 tensor leaves a side. As records, each
was a :class:`~compare.records.TensorRef` (~750 bytes with its dict of statistics, its label and
its source text) and each row a :class:`~compare.records.Pair`; building and holding them was
most of a statistics comparison's time and memory. Here a side is one :class:`TensorTable` (a
list a field, one slot a tensor; the texts a tensor shares with others -- data type, shape --
are shared objects), the pairs of two sides one :class:`PairTable` (row numbers into both
tables), and the statistics comparison, msprobe's cells and the argument rows read the columns
(:mod:`compare.stats_table`, :mod:`compare.runs.msprobe_rows`).

Records are still there for whoever asks, built from the columns on first use and then kept:
``run.ops`` of a tabled run is an :class:`OpsView` (a read-only mapping building each call's
:class:`~compare.records.OpDump` and its TensorRefs when it is looked up); a PairTable is a
sequence of Pairs built when read. Both give exactly the records the loader and the pairing
built before (tests hold them equal, field by field).

Which tensors are columns: a leaf of msprobe's usual statistics form -- a tensor ``type``, a
valid shape, four float statistics and a text or no ``md5``, no ``data_name`` (the statistics
task). Any other leaf (a tensor with a data file, a null or integer statistic, a malformed item)
is a *special* row: the loader builds its TensorRef as before and the table keeps it
(:attr:`TensorTable.special`); its columns hold its place only (call, kind, index). Every reader
of the columns takes a special row through its record, by the general rules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple, overload

from .records import Argument, OpDump, Pair, TensorKind, TensorRef, built_item

#: The kinds (a member read through its enum class is a Python-level lookup).
_INPUT, _OUTPUT = TensorKind.INPUT, TensorKind.OUTPUT

#: The format of every msprobe tensor.
FORMAT = "ND"

#: The float statistics of a columnar tensor, by their ``TensorRef.stats`` names.
STAT_KEYS = ("max", "min", "avg", "l2norm")

#: The tensor columns of a :class:`TensorTable`, in the order of a row tuple (:meth:`TensorTable.set_tensors`).
TENSOR_FIELDS = ("call", "is_input", "index", "dtype", "shape", "nbytes", "label", "grad", "high", "low", "mean",
                 "norm", "checksum")


def special_row(call: int, ref: TensorRef) -> tuple:
    """The row tuple of a special tensor (module doc): its place, no columns."""
    return (call, ref.kind is _INPUT, ref.index, None, None, 0, None, None, None, None, None, None, None)


@dataclass(eq=False)
class TensorTable:
    """One ``dump.json``'s calls (in file order) and their tensor leaves (calls in order, a call's
    items in item order), one list a field.

    Per call ``c``: ``names[c]``, ``op_types[c]``, ``arguments[c]`` (its non-tensor items),
    ``stacks[c]``, ``files[c]`` (``OpDump.files``), ``errors[c]`` (None, or why the call has no
    usable tensor), and its tensors ``starts[c]`` to ``starts[c + 1]`` (``starts`` has one item
    more than ``names``).

    Per tensor ``t``: ``call[t]``, ``is_input[t]``, ``index[t]`` (numbered with the call's other
    items of its kind), and for a columnar tensor ``dtype``, ``shape``, ``nbytes``, ``label``,
    ``grad`` (``requires_grad``: True, False or None), the four recorded statistics
    ``high`` / ``low`` / ``mean`` / ``norm`` (``Max`` / ``Min`` / ``Mean`` / ``Norm``, Python
    floats as parsed) and ``checksum`` (``md5``'s text, None when the item has none). A special
    row (module doc) has its record in ``special`` and None in the columns after ``index``.
    """

    json_path: Path
    names: list[str] = field(default_factory=list)
    op_types: list[str | None] = field(default_factory=list)
    arguments: list[tuple[Argument, ...]] = field(default_factory=list)
    stacks: list[tuple[str, ...]] = field(default_factory=list)
    files: list[tuple[Path, ...]] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    starts: list[int] = field(default_factory=lambda: [0])
    call: list[int] = field(default_factory=list)
    is_input: list[bool] = field(default_factory=list)
    index: list[int] = field(default_factory=list)
    dtype: list[str | None] = field(default_factory=list)
    shape: list[tuple[int, ...] | None] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)
    label: list[str | None] = field(default_factory=list)
    grad: list[bool | None] = field(default_factory=list)
    high: list[float | None] = field(default_factory=list)
    low: list[float | None] = field(default_factory=list)
    mean: list[float | None] = field(default_factory=list)
    norm: list[float | None] = field(default_factory=list)
    checksum: list[str | None] = field(default_factory=list)
    special: dict[int, TensorRef] = field(default_factory=dict)

    def __len__(self) -> int:
        """The number of tensors."""
        return len(self.call)

    def set_tensors(self, rows: list[tuple]) -> None:
        """Set the tensor columns from one tuple a tensor, in :data:`TENSOR_FIELDS` order (a
        loader appends one tuple a leaf -- one C call -- and the columns are made here at once)."""
        columns = [list(column) for column in zip(*rows)] if rows else [[] for _ in TENSOR_FIELDS]
        (self.call, self.is_input, self.index, self.dtype, self.shape, self.nbytes, self.label, self.grad, self.high,
         self.low, self.mean, self.norm, self.checksum) = columns

    def stat_columns(self) -> dict[str, list[float | None]]:
        """The recorded statistics' columns by their ``TensorRef.stats`` names (:data:`STAT_KEYS`)."""
        return {"max": self.high, "min": self.low, "avg": self.mean, "l2norm": self.norm}

    def stats_of(self, row: int) -> dict[str, float | str]:
        """The ``TensorRef.stats`` of a columnar tensor: ``max``, ``min``, ``avg``, ``l2norm`` and
        ``checksum`` when it has one."""
        checksum = self.checksum[row]
        stats: dict[str, float | str] = {"max": self.high[row], "min": self.low[row],  # type: ignore[dict-item]
                                         "avg": self.mean[row], "l2norm": self.norm[row]}
        if checksum is not None:
            stats["checksum"] = checksum
        return stats

    def source(self, row: int) -> str:
        """The ``TensorRef.stats_source`` of a tensor: ``dump.json {call} input 3``."""
        return self.sources((row,))[0]

    def sources(self, rows: Sequence[int]) -> list[str]:
        """:meth:`source` of each of ``rows``, in one pass."""
        name, names, call, is_input, index = self.json_path.name, self.names, self.call, self.is_input, self.index
        return [f"{name} {names[call[row]]} {'input' if is_input[row] else 'output'} {index[row]}" for row in rows]

    def ref(self, row: int) -> TensorRef:
        """The TensorRef of tensor ``row`` (a special row's own record; a columnar one built: the
        record the loader built before tensors became columns)."""
        special = self.special.get(row)
        if special is not None:
            return special
        kind = _INPUT if self.is_input[row] else _OUTPUT
        return TensorRef(self.names[self.call[row]], kind, self.index[row], self.dtype[row], FORMAT,  # type: ignore[arg-type]
                         self.shape[row], self.json_path, (), 0, 0, self.nbytes[row], None,  # type: ignore[arg-type]
                         self.stats_of(row), self.source(row), "", self.label[row], self.grad[row])  # type: ignore[arg-type]

    def rows_of(self, call: int) -> range:
        """The tensor rows of a call."""
        return range(self.starts[call], self.starts[call + 1])

    def op(self, call: int) -> OpDump:
        """The OpDump of a call, its TensorRefs built (:meth:`ref`)."""
        rows = self.rows_of(call)
        refs = [self.ref(row) for row in rows]
        is_input = self.is_input
        inputs = tuple(ref for row, ref in zip(rows, refs) if is_input[row])
        outputs = tuple(ref for row, ref in zip(rows, refs) if not is_input[row])
        return OpDump(self.names[call], self.op_types[call], self.json_path, self.files[call], inputs, outputs,
                      self.errors[call], call, self.arguments[call], self.stacks[call])

    def has_inputs(self) -> bool:
        """Whether any call has an input tensor."""
        return any(self.is_input)


class Call(NamedTuple):
    """What the argument rows and msprobe's cells read of a call: its name, non-tensor items and
    stack (an OpDump's fields of those names), without its tensors."""

    name: str
    arguments: tuple[Argument, ...]
    stack: tuple[str, ...]


class OpsView(Mapping[str, OpDump]):
    """``run.ops`` of a tabled run: call name -> OpDump, each built on first lookup and kept
    (:meth:`TensorTable.op`). Its names, length and membership come from the table, built
    nothing; ``values()`` / ``items()`` build every call (the general code paths that ask for
    them get the records they always had). ``built`` counts the calls built (tests check that a
    statistics comparison builds none)."""

    def __init__(self, table: TensorTable) -> None:
        self.table = table
        self._at = {name: call for call, name in enumerate(table.names)}
        self._built: dict[int, OpDump] = {}

    def __getitem__(self, name: str) -> OpDump:
        call = self._at[name]
        op = self._built.get(call)
        if op is None:
            op = self._built[call] = self.table.op(call)
        return op

    def __len__(self) -> int:
        return len(self._at)

    def __iter__(self) -> Iterator[str]:
        return iter(self.table.names)

    def __contains__(self, name: object) -> bool:
        return name in self._at

    def __repr__(self) -> str:
        return f"OpsView({len(self)} calls of {self.table.json_path})"

    @property
    def built(self) -> int:
        """How many calls have been built as OpDumps."""
        return len(self._built)

    def number(self, name: str) -> int | None:
        """The call number of ``name`` in the table, None when there is no such call."""
        return self._at.get(name)

    def call(self, name: str) -> Call | None:
        """The :class:`Call` of ``name`` (nothing built), None when there is no such call."""
        call = self._at.get(name)
        if call is None:
            return None
        table = self.table
        return Call(name, table.arguments[call], table.stacks[call])


def call_of(ops: Mapping[str, OpDump], name: str) -> Call | None:
    """The :class:`Call` of ``name`` in a run's ops (an :class:`OpsView` builds nothing for it)."""
    if isinstance(ops, OpsView):
        return ops.call(name)
    op = ops.get(name)
    return None if op is None else Call(op.name, op.arguments, op.stack)


def has_arguments(ops: Mapping[str, OpDump]) -> bool:
    """Whether any call of a run's ops has a non-tensor item."""
    if isinstance(ops, OpsView):
        return any(ops.table.arguments)
    return any(op.arguments for op in ops.values())


def has_inputs(ops: Mapping[str, OpDump]) -> bool:
    """Whether any op of a run's ops has an input tensor."""
    if isinstance(ops, OpsView):
        return ops.table.has_inputs()
    return any(op.inputs for op in ops.values())


def op_files(ops: Mapping[str, OpDump]) -> set[Path]:
    """Every file of a run's ops (``OpDump.files``, else its ``path``)."""
    if isinstance(ops, OpsView):
        table = ops.table
        return {path for files in table.files for path in files or (table.json_path,)}
    return {path for op in ops.values() for path in op.files or (op.path,)}


#: Builds the Pair of two matched tensors from the call's common fields (:func:`compare.pairing.user_mapping.tensor_pair`).
PairMaker = Callable[[dict, TensorRef, TensorRef], Pair]


@dataclass(eq=False)
class PairTable(Sequence[Pair]):
    """The pairs of two tabled runs, one list a field, one row a pair, in row order; a sequence of
    the Pairs the pairing built before (each built when read, by ``make``: its tensors'
    :meth:`TensorTable.ref`).

    Per row: ``index`` (the report Index, also its ``op_sequence``), ``op_type``, ``left_op`` /
    ``right_op`` (``*`` for no counterpart); a row of two tensors at the same place of two paired
    calls has their rows ``left_row`` / ``right_row``; any other row (calls whose items differ,
    a call of one side, a call that cannot be used) was made by the general rules and is kept in
    ``built`` (its ``left_row`` / ``right_row`` are -1; :meth:`extend` appends them)."""

    left: TensorTable
    right: TensorTable
    make: PairMaker
    index: list[int] = field(default_factory=list)
    op_type: list[str | None] = field(default_factory=list)
    left_op: list[str] = field(default_factory=list)
    right_op: list[str] = field(default_factory=list)
    left_row: list[int] = field(default_factory=list)
    right_row: list[int] = field(default_factory=list)
    built: dict[int, Pair] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.index)

    @overload
    def __getitem__(self, at: int) -> Pair: ...

    @overload
    def __getitem__(self, at: slice) -> list[Pair]: ...

    def __getitem__(self, at: int | slice) -> Pair | list[Pair]:
        return built_item(at, len(self), self._pair)

    def __iter__(self) -> Iterator[Pair]:
        return map(self._pair, range(len(self)))

    def _pair(self, row: int) -> Pair:
        pair = self.built.get(row)
        if pair is not None:
            return pair
        index = self.index[row]
        base = {"index": index, "op_type": self.op_type[row], "left_op": self.left_op[row],
                "right_op": self.right_op[row], "op_sequence": index}
        return self.make(base, self.left.ref(self.left_row[row]), self.right.ref(self.right_row[row]))

    def extend(self, pairs: Iterable[Pair]) -> None:
        """Append rows the general rules made (as ``list.extend``: the pairing appends to a list of
        Pairs or to a PairTable alike)."""
        for pair in pairs:
            self.built[len(self.index)] = pair
            self.index.append(pair.index)
            self.op_type.append(pair.op_type)
            self.left_op.append(pair.left_op)
            self.right_op.append(pair.right_op)
            self.left_row.append(-1)
            self.right_row.append(-1)

    def add_tensors(self, index: int, op_type: str | None, left_op: str, right_op: str, left_rows: Sequence[int],
                    right_rows: Sequence[int]) -> None:
        """Append the rows of two paired calls' tensors, ``left_rows[k]`` with ``right_rows[k]``."""
        count = len(left_rows)
        self.index += [index] * count
        self.op_type += [op_type] * count
        self.left_op += [left_op] * count
        self.right_op += [right_op] * count
        self.left_row += left_rows
        self.right_row += right_rows

    def columnar(self, row: int) -> bool:
        """Whether a row pairs two columnar tensors (no built Pair, no special side)."""
        return (row not in self.built and self.left_row[row] not in self.left.special
                and self.right_row[row] not in self.right.special)

    def place(self, row: int) -> tuple[int, int]:
        """(0 for an input, 1 for an output; the tensor's index) of a row's left tensor, else its
        right one; (-1, -1) for a row of no tensor."""
        pair = self.built.get(row)
        if pair is not None:
            ref = pair.left if pair.left is not None else pair.right
            if ref is None:
                return (-1, -1)
            return (0 if ref.kind is _INPUT else 1, ref.index)
        left_row = self.left_row[row]
        return (0 if self.left.is_input[left_row] else 1, self.left.index[left_row])


def gather(column: Sequence, rows: Sequence[int]) -> list:
    """``[column[r] for r in rows]``, through one ``itemgetter`` call."""
    if not rows:
        return []
    if len(rows) == 1:
        return [column[rows[0]]]
    return list(itemgetter(*rows)(column))


__all__ = ["FORMAT", "STAT_KEYS", "TENSOR_FIELDS", "Call", "OpsView", "PairMaker", "PairTable", "TensorTable", "call_of", "gather", "has_arguments",
           "has_inputs", "op_files", "special_row"]
