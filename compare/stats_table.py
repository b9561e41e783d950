"""The rows of a statistics comparison as columns: :class:`StatsTable`.

A statistics run (msprobe ``task: statistics``, MindSpore ``statistic.csv`` ...) has 10^5-10^6
rows of a few numbers each. Held as records, a row was ~17 Python objects (a StatsRow, a
MetricRow, a StatDiff per statistic, two dicts, a reasons list ...: ~2.3 KB a row). The table
holds one list (or float64 array) per field instead; what a row holds elsewhere (its names, data
types, shape, source texts, msprobe cells) is referenced, not copied.

Columns (one entry per row, all of the same length):

* the fields of :class:`~compare.stats.StatsRow` / :class:`~compare.records.MetricRow`: ``index``,
  ``op_type``, ``left_op``, ``right_op``, ``tensor_id``, ``left_dtype``, ``right_dtype``,
  ``shape``, ``status``, ``reasons`` (a tuple, the shared ``()`` when there is none),
  ``left_source``, ``right_source``, ``kind``, ``undefined``, ``msprobe``, ``argument``,
  ``grade``, ``rank``, ``iteration``, ``graph``, ``op_sequence``;
* per statistic compared anywhere (``stats``, in report order), a :class:`StatColumn`: both
  values (lists: the recorded objects themselves), ``diff`` and ``rel`` (float64 arrays) and
  ``has`` (whether the row compares that statistic). A ``diff`` that is not a float (a checksum's
  ``same`` / ``different``, ``None`` when a side has no value) is kept in ``special`` with its
  ``rel``; the arrays hold NaN there.

Rows that are not statistics rows (an msprobe argument row, a part missing from a run compared in
turn) keep their :class:`MetricRow` in ``kept`` (few a run) and have columns too (no statistic).

Records on demand: :meth:`StatsTable.metric_row` / :meth:`StatsTable.stats_row` build the records
of one row (equal field by field to those the records made: ``tests/compare/test_stats_table.py``);
:class:`MetricRows` / :class:`StatsRows` are read-only sequences of them (a statistics run's
``NetworkResult.rows`` and ``StatsResult.rows``). A record built so is a new object each time (a
kept record is itself): changing one does not change the table, whose writers are its methods
(:meth:`StatsTable.set_place`, :meth:`StatsTable.set_grades`, :meth:`StatsTable.arranged`,
:meth:`StatsTable.concat`).

Columns for the readers of many rows: :meth:`StatsTable.metric` gives a metric (``MaxRelDiff``
...) as a float64 array and its presence mask by the definitions of
:func:`compare.stats.statistics_metrics` (``LDiff = |diff|``, ``LRelDiff = rel``, a checksum 0.0 /
1.0), :meth:`StatsTable.keyed` which rows have it at all. :class:`RowColumns` gives any rows'
fields as columns -- a table's own lists, or each field read once from records -- so the
localisation, the grades, the gates, the JSON rows and the run summary read a table and records
with one implementation and build no record a row.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from itertools import repeat
from operator import attrgetter, contains, is_, is_not, itemgetter
from typing import Any, ClassVar, TypeVar, overload

import numpy as np

from .records import (
    ArgumentDiff,
    MetricRow,
    MsprobeCells,
    Pair,
    PairStatus,
    RowGrade,
    RowKind,
    StatDiff,
    built_item,
)
from .stats import (
    TEXT_STATS,
    Sides,
    StatsRow,
    float_diffs,
    ordered_stats,
    prepared_row,
    stat_diffs,
    stat_metrics,
    statistics_metrics,
)
from .tensor_table import STAT_KEYS, PairTable, gather

#: The record type of a :class:`_TableRows`.
R = TypeVar("R")
#: A row without reasons (shared).
NO_REASONS: tuple[str, ...] = ()
#: A row whose statistics are all defined (shared).
NO_UNDEFINED: frozenset[str] = frozenset()


@dataclass(eq=False)
class StatColumn:
    """One statistic over the rows of a table (module doc). ``left[i]`` / ``right[i]`` are the
    row's values (None where the row lacks the statistic or a side recorded none); ``diff[i]`` /
    ``rel[i]`` its differences when both are floats, else NaN and the pair in ``special[i]``."""

    name: str
    left: list[object]
    right: list[object]
    diff: np.ndarray
    rel: np.ndarray
    has: np.ndarray
    special: dict[int, tuple[object, object]] = field(default_factory=dict)

    @classmethod
    def empty(cls, name: str, rows: int) -> StatColumn:
        """A column of ``rows`` rows none of which has the statistic."""
        return cls(name, [None] * rows, [None] * rows, np.full(rows, np.nan), np.full(rows, np.nan),
                   np.zeros(rows, dtype=bool))

    def set(self, row: int, value: StatDiff) -> None:
        """Row ``row`` compares this statistic with ``value``'s numbers."""
        self.left[row], self.right[row] = value.left, value.right
        self.has[row] = True
        if type(value.diff) is float and type(value.rel) is float:
            self.diff[row], self.rel[row] = value.diff, value.rel
            self.special.pop(row, None)
        else:
            self.diff[row] = self.rel[row] = np.nan
            self.special[row] = (value.diff, value.rel)

    def value(self, row: int) -> StatDiff | None:
        """The statistic of row ``row`` as a :class:`StatDiff`, None when the row lacks it."""
        if not self.has[row]:
            return None
        found = self.special.get(row)
        if found is not None:
            return StatDiff(self.left[row], self.right[row], found[0], found[1])  # type: ignore[arg-type]
        return StatDiff(self.left[row], self.right[row], float(self.diff[row]), float(self.rel[row]))  # type: ignore[arg-type]

    def fields(self, start: int, stop: int) -> tuple[list[object], list[object], list[object], list[object]]:
        """Rows ``start:stop`` as four lists (left, right, diff, rel; ``None`` in all four where a
        row lacks the statistic), as the records would give them."""
        lefts, rights = self.left[start:stop], self.right[start:stop]
        diffs: list[object] = self.diff[start:stop].tolist()
        rels: list[object] = self.rel[start:stop].tolist()
        has = self.has[start:stop]
        if not has.all():
            for i in np.flatnonzero(~has).tolist():
                diffs[i] = rels[i] = None
        special = self.special
        if special:  # the fewer of the special entries and the rows of the range are looked at
            rows = (special if len(special) <= stop - start else [row for row in range(start, stop) if row in special])
            for row in rows:
                if start <= row < stop:
                    diffs[row - start], rels[row - start] = special[row]
        return lefts, rights, diffs, rels

    def taken(self, positions: np.ndarray, moved: np.ndarray) -> StatColumn:
        """This column's rows at ``positions`` (``-1``: a new row without the statistic);
        ``moved[old]``: where row ``old`` goes (``-1``: dropped)."""
        inside = positions >= 0
        safe = np.where(inside, positions, 0)
        special = {new: value for old, value in self.special.items() if (new := int(moved[old])) >= 0}
        ends = np.where(inside, positions, len(self.left)).tolist()  # -1 reads the None appended at the end
        gather = itemgetter(*ends) if len(ends) > 1 else (lambda column: tuple(column[i] for i in ends))
        return StatColumn(self.name, list(gather(self.left + [None])), list(gather(self.right + [None])),
                          np.where(inside, self.diff[safe], np.nan), np.where(inside, self.rel[safe], np.nan),
                          np.where(inside, self.has[safe], False), special)


@dataclass(eq=False)
class StatsTable:
    """The rows of a statistics comparison as columns (module doc)."""

    index: list[int]
    op_type: list[str | None]
    left_op: list[str]
    right_op: list[str]
    tensor_id: list[str | None]
    left_dtype: list[str | None]
    right_dtype: list[str | None]
    shape: list[tuple[int, ...] | None]
    status: list[PairStatus]
    reasons: list[tuple[str, ...]]
    left_source: list[str]
    right_source: list[str]
    kind: list[RowKind]
    undefined: list[frozenset[str]]
    msprobe: list[MsprobeCells | None]
    argument: list[ArgumentDiff | None]
    grade: list[RowGrade | None]
    rank: list[int | None]
    iteration: list[int | None]
    graph: list[int | None]
    op_sequence: list[int | None]
    #: Statistic names in report order, and their columns.
    stats: list[str]
    columns: dict[str, StatColumn]
    #: The records of the rows that are not statistics rows (argument rows, missing parts), by row.
    kept: dict[int, MetricRow] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.index)

    # ---------------------------------------------------------------------------------------
    # records on demand

    def values(self, row: int) -> dict[str, StatDiff]:
        """The statistics of row ``row`` by name, in report order (``StatsRow.values``)."""
        out = {}
        for name in self.stats:
            value = self.columns[name].value(row)
            if value is not None:
                out[name] = value
        return out

    def metric_row(self, row: int) -> MetricRow:
        """The :class:`MetricRow` of row ``row``: the kept record of a row that is not a
        statistics row, else a new record: kind STATISTICS, the row's fields, its statistics
        (:meth:`values`) and their metrics (:func:`compare.stats.statistics_metrics`)."""
        kept = self.kept.get(row)
        if kept is not None:
            return kept
        values = self.values(row)
        return MetricRow(self.index[row], self.op_type[row], self.left_op[row], self.right_op[row], self.tensor_id[row],
                         left_dtype=self.left_dtype[row], right_dtype=self.right_dtype[row], shape=self.shape[row],
                         metrics=statistics_metrics(values)[0], reasons=list(self.reasons[row]),
                         status=self.status[row], op_sequence=self.op_sequence[row], rank=self.rank[row],
                         iteration=self.iteration[row], graph=self.graph[row], undefined=self.undefined[row],
                         kind=self.kind[row], statistics=values, msprobe=self.msprobe[row],
                         argument=self.argument[row], grade=self.grade[row])

    def stats_row(self, row: int) -> StatsRow:
        """The statistics-table record of row ``row`` (``StatsRow``'s fields)."""
        return StatsRow(self.index[row], self.op_type[row], self.left_op[row], self.right_op[row],
                        self.tensor_id[row], self.left_dtype[row], self.right_dtype[row], self.shape[row],
                        self.values(row), self.left_source[row], self.right_source[row], list(self.reasons[row]),
                        self.status[row], self.rank[row], self.iteration[row], self.graph[row], self.grade[row],
                        self.msprobe[row], self.argument[row])

    # ---------------------------------------------------------------------------------------
    # columns

    def metric(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Metric ``name`` (``MaxDiff``, ``MaxRelDiff``, ``ChecksumDiff`` ...) of every row as
        float64 values and a presence mask (absent: the row lacks it or its value is None, as
        :func:`compare.stats.statistics_metrics` leaves it), by :meth:`StatsTable.metric_row`'s
        definitions: ``LDiff = |diff|``, ``LRelDiff = rel``, a checksum 0.0 same / 1.0 different.
        Rows kept as records give their own metric."""
        rows = len(self)
        values, present = np.full(rows, np.nan), np.zeros(rows, dtype=bool)
        found = _metric_parts(tuple(self.stats)).get(name)
        if found is not None:
            stat, part = found
            column = self.columns[stat]
            if part is not _Part.CHECKSUM:
                present = column.has.copy()
                source = np.abs(column.diff) if part is _Part.DIFF else column.rel
                values[present] = source[present]
            # a special entry by the definitions (compare.stats.statistics_metrics): a text diff or
            # None has no magnitude; its rel stands as it is; a checksum is 0.0 same / 1.0 different
            for row, (diff, rel) in column.special.items():
                if part is _Part.CHECKSUM:
                    value = None if diff is None else (0.0 if diff == "same" else 1.0)
                elif part is _Part.DIFF:
                    value = abs(diff) if isinstance(diff, float) else None
                else:
                    value = rel  # type: ignore[assignment]
                present[row] = value is not None
                values[row] = np.nan if value is None else value
        if self.kept:
            rows_kept = np.fromiter(self.kept, dtype=np.int64, count=len(self.kept))
            kept = [record.metrics.get(name) for record in self.kept.values()]
            present[rows_kept] = [value is not None for value in kept]
            values[rows_kept] = [np.nan if value is None else value for value in kept]
        return values, present

    def keyed(self, name: str) -> np.ndarray:
        """Whether each row's record has metric ``name`` among its ``metrics`` keys (its value None
        or not): a statistics row the metrics of the statistics it compares
        (:func:`compare.stats.statistics_metrics`), a kept record its own."""
        out = np.zeros(len(self), dtype=bool)
        found = _metric_parts(tuple(self.stats)).get(name)
        if found is not None:
            out |= self.columns[found[0]].has
        if self.kept:
            rows = np.fromiter(self.kept, dtype=np.int64, count=len(self.kept))
            out[rows] = [name in record.metrics for record in self.kept.values()]
        return out

    # ---------------------------------------------------------------------------------------
    # writers

    def set_place(self, rank: int | None, graph: int | None, iteration: int | None) -> None:
        """Tag every row with its part (a run compared in turn)."""
        rows = len(self)
        self.rank, self.graph, self.iteration = [rank] * rows, [graph] * rows, [iteration] * rows
        for record in self.kept.values():
            record.rank, record.graph, record.iteration = rank, graph, iteration

    def set_grades(self, grades: Sequence[RowGrade | None]) -> None:
        """Set every row's msprobe grade (kept records too)."""
        self.grade = list(grades)
        for row, record in self.kept.items():
            record.grade = self.grade[row]

    def arranged(self, order: Sequence[int | MetricRow]) -> StatsTable:
        """A new table whose rows are ``order``'s: a row of this table by position, or a new row
        kept as its record (an argument row; its statistics-table fields are the record's, with
        no statistic and no source)."""
        positions = np.array([item if type(item) is int else -1 for item in order], dtype=np.int64)
        records = {new: item for new, item in enumerate(order) if type(item) is not int}
        where = positions.tolist()
        # one C-level gather a column: position -1 (a new row) reads the None appended at the end
        gather = itemgetter(*[old if old >= 0 else len(self) for old in where]) if len(where) > 1 else None

        def take(column: list) -> list:
            if gather is None:
                return [column[old] if old >= 0 else None for old in where]
            return list(gather(column + [None]))

        moved = np.full(len(self), -1, dtype=np.int64)
        moved[positions[positions >= 0]] = np.flatnonzero(positions >= 0)
        table = StatsTable(**{name: take(_LIST_FIELD[name](self)) for name in _LIST_FIELDS}, stats=list(self.stats),
                           columns={name: column.taken(positions, moved) for name, column in self.columns.items()},
                           kept={new: record for old, record in self.kept.items() if (new := int(moved[old])) >= 0})
        for new, record in records.items():
            table.put_record(new, record)  # type: ignore[arg-type]
        return table

    def put_record(self, row: int, record: MetricRow, *, source: tuple[str, str] = ("", "")) -> None:
        """Row ``row`` is ``record``, kept as it is (not a statistics row: no statistic)."""
        self.index[row], self.op_type[row], self.left_op[row] = record.index, record.op_type, record.left_op
        self.right_op[row], self.tensor_id[row] = record.right_op, record.tensor_id
        self.left_dtype[row], self.right_dtype[row], self.shape[row] = record.left_dtype, record.right_dtype, record.shape
        self.status[row], self.reasons[row] = record.status, tuple(record.reasons)
        self.left_source[row], self.right_source[row] = source
        self.kind[row], self.undefined[row] = record.kind, record.undefined
        self.msprobe[row], self.argument[row], self.grade[row] = record.msprobe, record.argument, record.grade
        self.rank[row], self.iteration[row], self.graph[row] = record.rank, record.iteration, record.graph
        self.op_sequence[row] = record.op_sequence
        self.kept[row] = record

    @classmethod
    def concat(cls, pieces: Sequence[StatsTable | Sequence[MetricRow]], stats: Sequence[str]) -> StatsTable:
        """The rows of ``pieces`` one after the other: tables, or records (a part missing from a run
        compared in turn: kept as they are, no statistic); ``stats``: the columns, in report order
        (every statistic of every piece)."""
        tables = [piece if isinstance(piece, StatsTable) else _records_table(piece, stats) for piece in pieces]
        out = cls(**{name: [value for table in tables for value in _LIST_FIELD[name](table)] for name in _LIST_FIELDS},
                  stats=[], columns={})
        out.stats = list(stats)
        starts = np.cumsum([0] + [len(table) for table in tables[:-1]]).tolist()
        for name in stats:
            parts = [table.columns.get(name) or StatColumn.empty(name, len(table)) for table in tables]
            column = StatColumn(name, [v for part in parts for v in part.left], [v for part in parts for v in part.right],
                                np.concatenate([part.diff for part in parts]) if parts else np.empty(0),
                                np.concatenate([part.rel for part in parts]) if parts else np.empty(0),
                                np.concatenate([part.has for part in parts]) if parts else np.empty(0, dtype=bool))
            for start, part in zip(starts, parts):
                column.special.update({start + row: value for row, value in part.special.items()})
            out.columns[name] = column
        for start, table in zip(starts, tables):
            out.kept.update({start + row: record for row, record in table.kept.items()})
        return out

    @classmethod
    def blank(cls, rows: int, stats: Sequence[str] = ()) -> StatsTable:
        """A table of ``rows`` rows whose fields are all unset (None / no statistic): a builder
        fills them."""
        def nones() -> list:
            return [None] * rows

        return cls(index=nones(), op_type=nones(), left_op=nones(), right_op=nones(), tensor_id=nones(),
                   left_dtype=nones(), right_dtype=nones(), shape=nones(), status=nones(),
                   reasons=[NO_REASONS] * rows, left_source=[""] * rows, right_source=[""] * rows,
                   kind=[RowKind.STATISTICS] * rows, undefined=[NO_UNDEFINED] * rows, msprobe=nones(),
                   argument=nones(), grade=nones(), rank=nones(), iteration=nones(), graph=nones(),
                   op_sequence=nones(), stats=list(stats),
                   columns={name: StatColumn.empty(name, rows) for name in stats})




def _records_table(records: Sequence[MetricRow], stats: Sequence[str]) -> StatsTable:
    """A table of records kept as they are (:meth:`StatsTable.concat`)."""
    table = StatsTable.blank(len(records), stats)
    for row, record in enumerate(records):
        table.put_record(row, record)
    return table


#: The list fields of a table (every field but ``stats``, ``columns`` and ``kept``), read by name.
_LIST_FIELDS = ("index", "op_type", "left_op", "right_op", "tensor_id", "left_dtype", "right_dtype", "shape", "status",
                "reasons", "left_source", "right_source", "kind", "undefined", "msprobe", "argument", "grade", "rank",
                "iteration", "graph", "op_sequence")
_LIST_FIELD = {name: attrgetter(name) for name in _LIST_FIELDS}


class _Part(Enum):
    """Which number of a statistic a metric is (:func:`compare.stats.stat_metrics`)."""

    DIFF = "diff"
    REL = "rel"
    CHECKSUM = "checksum"


@functools.lru_cache(maxsize=64)
def _metric_parts(stats: tuple[str, ...]) -> dict[str, tuple[str, _Part]]:
    """Metric name -> (statistic, part) for the statistics of a table."""
    out: dict[str, tuple[str, _Part]] = {}
    for stat in stats:
        names = stat_metrics(stat)
        if stat in TEXT_STATS:
            out[names[0]] = (stat, _Part.CHECKSUM)
        else:
            out[names[0]], out[names[1]] = (stat, _Part.DIFF), (stat, _Part.REL)
    return out


class _TableRows(Sequence[R]):
    """A table's rows as records, each built when read by ``_BUILD(table, row)`` (module doc)."""

    __slots__ = ("table",)
    _BUILD: ClassVar[Callable[[StatsTable, int], Any]]

    def __init__(self, table: StatsTable) -> None:
        self.table = table

    def __len__(self) -> int:
        return len(self.table)

    @overload
    def __getitem__(self, item: int) -> R: ...

    @overload
    def __getitem__(self, item: slice) -> list[R]: ...

    def __getitem__(self, item: int | slice) -> R | list[R]:
        return built_item(item, len(self.table), functools.partial(type(self)._BUILD, self.table))

    def __iter__(self) -> Iterator[R]:
        return map(type(self)._BUILD, repeat(self.table), range(len(self.table)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, type(self))):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} rows)"


class MetricRows(_TableRows[MetricRow]):
    """A table's rows as :class:`MetricRow` records, each built when read (:meth:`StatsTable.metric_row`).
    Equal to a list of the same records."""

    __slots__ = ()
    _BUILD = StatsTable.metric_row


class StatsRows(_TableRows[StatsRow]):
    """A table's rows as :class:`~compare.stats.StatsRow` records, each built when read
    (:meth:`StatsTable.stats_row`)."""

    __slots__ = ()
    _BUILD = StatsTable.stats_row


@dataclass
class StatsResult:
    """The rows of a statistics comparison (a :class:`StatsTable`) and the notes about them."""

    table: StatsTable
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of_rows(cls, rows: Sequence[StatsRow], stats: Sequence[str], metric_rows: Sequence[MetricRow] = (),
                notes: Sequence[str] = ()) -> StatsResult:
        """The result of records (rows read back, merged parts): ``stats`` in column order;
        ``metric_rows[i]``, when given, is row ``i``'s record, kept when it is not a statistics row."""
        return cls(table_of_rows(rows, stats, metric_rows), list(notes))

    @property
    def rows(self) -> StatsRows:
        """Every row as a :class:`~compare.stats.StatsRow`, built when read."""
        return StatsRows(self.table)

    @property
    def stats(self) -> list[str]:
        """The statistic columns, in report order."""
        return self.table.stats

    @property
    def metrics(self) -> list[str]:
        """The row metrics of the compared statistics, in column order (:func:`compare.stats.stat_metrics`)."""
        return [m for name in self.table.stats for m in stat_metrics(name)]

    def metric_rows(self) -> MetricRows:
        """Every row as a :class:`MetricRow` (:meth:`StatsTable.metric_row`'s), built when read."""
        return MetricRows(self.table)


def table_of_rows(rows: Sequence[StatsRow], stats: Sequence[str], metric_rows: Sequence[MetricRow] = ()) -> StatsTable:
    """A table of records (:meth:`StatsResult.of_rows`)."""
    count = len(rows)
    table = StatsTable.blank(count, stats)
    for position, row in enumerate(rows):
        record = metric_rows[position] if metric_rows else None
        if record is not None and record.kind is not RowKind.STATISTICS:
            table.put_record(position, record, source=(row.left_source, row.right_source))
            table.grade[position], table.msprobe[position], table.argument[position] = row.grade, row.msprobe, row.argument
            continue
        table.index[position], table.op_type[position], table.left_op[position] = row.index, row.op_type, row.left_op
        table.right_op[position], table.tensor_id[position] = row.right_op, row.tensor_id
        table.left_dtype[position], table.right_dtype[position], table.shape[position] = (
            row.left_dtype, row.right_dtype, row.shape)
        table.status[position], table.reasons[position] = row.status, tuple(row.reasons)
        table.left_source[position], table.right_source[position] = row.left_source, row.right_source
        table.rank[position], table.iteration[position], table.graph[position] = row.rank, row.iteration, row.graph
        table.grade[position], table.msprobe[position], table.argument[position] = row.grade, row.msprobe, row.argument
        if record is not None:
            table.op_sequence[position], table.undefined[position] = record.op_sequence, record.undefined
        else:
            table.undefined[position] = statistics_metrics(row.values)[1]
        for name, value in row.values.items():
            column = table.columns.get(name)
            if column is None:
                column = table.columns[name] = StatColumn.empty(name, count)
            column.set(position, value)
    return table


def compare_stats(pairs: Sequence[Pair]) -> StatsResult:
    """Compare every pair's statistics into a table; its columns are the statistics any row compared.

    Two passes: each pair's row without values (:func:`compare.stats.prepared_row`), then the
    values: of all rows whose values are floats at once (one float64 column of every such
    statistic, :func:`compare.stats.float_diffs`), of the others by
    :func:`compare.stats.stat_diffs`. A pair whose work raises becomes a NOT_COMPARABLE row that
    says so (one pair never aborts the run).

    The pairs of two msprobe tables (:class:`~compare.tensor_table.PairTable`) are read as
    columns: a row of two columnar tensors of one data type and shape, not both with a checksum
    (msprobe's usual statistics row) is made from the columns without its Pair
    (:func:`_columnar_rows`: the row :func:`~compare.stats.prepared_row` makes of it, a property
    test holds the two equal); every other row from its Pair, as above."""
    count = len(pairs)
    table = StatsTable.blank(count)
    todo: list[tuple[int, Sides]] = []
    flat = _Flat()
    if isinstance(pairs, PairTable):
        table.index, table.op_type = list(pairs.index), list(pairs.op_type)
        table.left_op, table.right_op = list(pairs.left_op), list(pairs.right_op)
        others = _columnar_rows(table, pairs, flat)
    else:
        others = range(count)
    for position in others:
        pair = pairs[position]
        try:
            _prepared(table, position, pair, todo)
        except Exception as exc:  # noqa: BLE001 - one pair must never abort the run
            _internal_error(table, position, pair, exc)
    names = ordered_stats({name for _, sides in todo for name in sides.names} | set(flat.names))
    table.columns = {name: StatColumn.empty(name, count) for name in names}
    order = {name: number for number, name in enumerate(table.columns)}
    flat.add_sides([item for item in todo if item[1].floats], order)
    flat.add_columns(order)
    _float_values(table, flat)
    for position, sides in todo:
        if sides.floats:
            continue
        try:
            values = dict(zip(sides.names, stat_diffs(sides.names, sides.left, sides.right)))
        except Exception as exc:  # noqa: BLE001 - one pair must never abort the run
            _internal_error(table, position, pairs[position], exc)
            continue
        for name, value in values.items():
            table.columns[name].set(position, value)
        table.undefined[position] = statistics_metrics(values)[1]
    table.stats = [name for name in names if table.columns[name].has.any()]
    for name in names:
        if name not in table.stats:
            del table.columns[name]
    return StatsResult(table)


def _prepared(table: StatsTable, position: int, pair: Pair, todo: list[tuple[int, Sides]]) -> None:
    """Row ``position`` of the table from its pair (:func:`compare.stats.prepared_row`); its
    statistics, when it has some to compare, to ``todo``."""
    prepared = prepared_row(pair)
    lref, rref = pair.left, pair.right
    table.index[position], table.op_type[position], table.left_op[position] = pair.index, pair.op_type, pair.left_op
    table.right_op[position], table.tensor_id[position] = pair.right_op, pair.tensor_id
    table.left_dtype[position] = lref.dtype if lref is not None else None
    table.right_dtype[position] = rref.dtype if rref is not None else None
    table.shape[position] = (tuple(lref.shape) if lref is not None
                             else (tuple(rref.shape) if rref is not None else None))
    table.status[position], table.reasons[position] = prepared.status, prepared.reasons
    table.left_source[position], table.right_source[position] = prepared.left_source, prepared.right_source
    if prepared.sides is not None:
        todo.append((position, prepared.sides))


@dataclass
class _Flat:
    """The float statistics of many rows, flattened for one :func:`compare.stats.float_diffs`:
    each value's statistic number (its column's place), row, and both sides' values. ``names``:
    the statistics of the columnar rows (:func:`_columnar_rows`), whose ``rows`` / ``lefts`` /
    ``rights`` (per statistic: a column of values) are added by :meth:`add_columns`."""

    stat_of: list[int] = field(default_factory=list)
    row_of: list[int] = field(default_factory=list)
    lefts: list[object] = field(default_factory=list)
    rights: list[object] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    left_columns: list[list] = field(default_factory=list)
    right_columns: list[list] = field(default_factory=list)

    def add_sides(self, rows: list[tuple[int, Sides]], order: dict[str, int]) -> None:
        """Add rows of :class:`~compare.stats.Sides` whose values are all floats."""
        ids: dict[int, tuple[list[str], list[int]]] = {}  # id(names) -> (names kept alive, their statistic numbers)
        for position, sides in rows:
            found = ids.get(id(sides.names))
            if found is None:
                found = ids[id(sides.names)] = (sides.names, [order[name] for name in sides.names])
            self.stat_of += found[1]
            self.row_of += [position] * len(found[1])
            self.lefts += sides.left
            self.rights += sides.right

    def add_columns(self, order: dict[str, int]) -> None:
        """Add the columnar rows, one statistic at a time."""
        count = len(self.rows)
        for name, lefts, rights in zip(self.names, self.left_columns, self.right_columns):
            self.stat_of += [order[name]] * count
            self.row_of += self.rows
            self.lefts += lefts
            self.rights += rights


def _columnar_rows(table: StatsTable, pairs: PairTable, flat: _Flat) -> list[int]:
    """Fill the rows of ``pairs`` that pair two columnar tensors of one data type and shape, not
    both with a checksum, from the tables' columns (their statistics go to ``flat``); the others'
    positions are returned, in order.

    Such a row is what :func:`compare.stats.prepared_row` makes of its Pair: COMPARED, no reason,
    the two tensors' sources, the left tensor's name (``{call}:{input|output}:{index}``), data
    types and shape; its statistics are ``max``, ``min``, ``avg`` and ``l2norm`` (a checksum of
    one side only is no statistic of both), all floats."""
    left, right = pairs.left, pairs.right
    lspecial, rspecial, built = left.special, right.special, pairs.built
    lsum, rsum, ldtype, rdtype, lshape, rshape = (left.checksum, right.checksum, left.dtype, right.dtype, left.shape,
                                                  right.shape)
    rows: list[int] = []
    others: list[int] = []
    for position, (lrow, rrow) in enumerate(zip(pairs.left_row, pairs.right_row)):
        if (position in built or lrow in lspecial or rrow in rspecial
                or (lsum[lrow] is not None and rsum[rrow] is not None)
                or ldtype[lrow] != rdtype[rrow] or lshape[lrow] != rshape[rrow]):
            others.append(position)
        else:
            rows.append(position)
    if not rows:
        return others
    lrows, rrows = gather(pairs.left_row, rows), gather(pairs.right_row, rows)
    words = ["input" if is_input else "output" for is_input in gather(left.is_input, lrows)]
    indexes = gather(left.index, lrows)
    for position, call, word, index, dtype, other_dtype, shape, left_source, right_source in zip(
            rows, gather(pairs.left_op, rows), words, indexes, gather(ldtype, lrows), gather(rdtype, rrows),
            gather(lshape, lrows), left.sources(lrows), right.sources(rrows)):
        table.tensor_id[position] = f"{call}:{word}:{index}"
        table.left_dtype[position], table.right_dtype[position], table.shape[position] = dtype, other_dtype, shape
        table.status[position], table.reasons[position] = _COMPARED, ()
        table.left_source[position], table.right_source[position] = left_source, right_source
    flat.names = ordered_stats(STAT_KEYS)
    flat.rows = rows
    left_stats, right_stats = left.stat_columns(), right.stat_columns()
    for stat in flat.names:
        flat.left_columns.append(gather(left_stats[stat], lrows))
        flat.right_columns.append(gather(right_stats[stat], rrows))
    return others


#: ``PairStatus.COMPARED`` (an enum member read through its class is a Python-level lookup).
_COMPARED = PairStatus.COMPARED


def _float_values(table: StatsTable, flat: _Flat) -> None:
    """The values of the rows whose statistics are all floats (``flat``), set at once in the
    table's new (empty) columns: one float64 column of every value,
    :func:`compare.stats.float_diffs`, then each statistic's part scattered into its column."""
    if not flat.stat_of:
        return
    count = len(table)
    lefts, rights = flat.lefts, flat.rights
    left, right = np.array(lefts, dtype=np.float64), np.array(rights, dtype=np.float64)
    diffs, rels = float_diffs(left, right)
    stat_at, row_at = np.array(flat.stat_of, dtype=np.int64), np.array(flat.row_of, dtype=np.int64)
    left_objects, right_objects = np.array(lefts, dtype=object), np.array(rights, dtype=object)
    for number, column in enumerate(table.columns.values()):
        mine = stat_at == number
        if not mine.any():
            continue
        where = row_at[mine]
        column.diff[where], column.rel[where], column.has[where] = diffs[mine], rels[mine], True
        # the values themselves (the recorded float objects) by one object-array scatter each: the
        # columns are new (no row has a value yet)
        placed_left, placed_right = np.full(count, None, dtype=object), np.full(count, None, dtype=object)
        placed_left[where], placed_right[where] = left_objects[mine], right_objects[mine]
        column.left, column.right = placed_left.tolist(), placed_right.tolist()


def _internal_error(table: StatsTable, position: int, pair: Pair, exc: Exception) -> None:
    """Row ``position`` is the row of a pair whose comparison raised: NOT_COMPARABLE, the error as
    its reason, no data type, shape, source or statistic."""
    table.index[position], table.op_type[position], table.left_op[position] = pair.index, pair.op_type, pair.left_op
    table.right_op[position], table.tensor_id[position] = pair.right_op, pair.tensor_id
    table.left_dtype[position] = table.right_dtype[position] = table.shape[position] = None
    table.left_source[position] = table.right_source[position] = ""
    table.status[position] = PairStatus.NOT_COMPARABLE
    table.reasons[position] = (f"internal error while comparing statistics of {pair.tensor_id or pair.left_op}: "
                               f"{type(exc).__name__}: {exc} (please report)",)
    table.undefined[position] = NO_UNDEFINED
    for column in table.columns.values():
        column.left[position] = column.right[position] = None
        column.has[position] = False
        column.diff[position] = column.rel[position] = np.nan
        column.special.pop(position, None)


def compare_stats_pair(pair: Pair) -> StatsRow:
    """Compare the statistics of one pair (never raises for one pair's problem): the row
    :func:`compare_stats` makes of it."""
    return compare_stats((pair,)).rows[0]


def _field(name: str) -> Callable[[RowColumns], list]:
    """A :class:`RowColumns` field: the table's own list when the rows are a table's, else one
    ``map`` over the records (read once, then kept)."""
    read = attrgetter(name)

    def column(self: RowColumns) -> list:
        table = self.table
        if table is not None:
            return read(table)  # the table's own list (a field of the same name)
        return list(map(read, self.rows))

    column.__name__ = name
    column.__doc__ = f"``{name}`` of every row."
    return column


def _record_field(name: str, default: object) -> Callable[[RowColumns], list]:
    """A :class:`RowColumns` field the table does not hold (its statistics rows have ``default``;
    its kept records their own)."""
    read = attrgetter(name)

    def column(self: RowColumns) -> list:
        table = self.table
        if table is None:
            return list(map(read, self.rows))
        out = [default] * len(table)
        for row, record in table.kept.items():
            out[row] = read(record)
        return out

    column.__name__ = name
    column.__doc__ = f"``{name}`` of every row."
    return column


class RowColumns:
    """The fields of a run's rows as columns, for the readers of many rows (localisation, grades,
    gates, summaries): the lists of a :class:`StatsTable` when the rows are its
    :class:`MetricRows`, else each field read once from the records (one C-level ``map``). Each
    field is read when first asked for, then kept; :meth:`metric` gives a metric as a float64
    column and whether each row has it (None: not computed; a NaN value is computed)."""

    def __init__(self, rows: Sequence[MetricRow]) -> None:
        self.rows = rows
        self.table: StatsTable | None = rows.table if isinstance(rows, MetricRows) else None
        self._metrics: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.rows)

    index = functools.cached_property(_field("index"))
    op_type = functools.cached_property(_field("op_type"))
    left_op = functools.cached_property(_field("left_op"))
    right_op = functools.cached_property(_field("right_op"))
    tensor_id = functools.cached_property(_field("tensor_id"))
    left_dtype = functools.cached_property(_field("left_dtype"))
    right_dtype = functools.cached_property(_field("right_dtype"))
    shape = functools.cached_property(_field("shape"))
    status = functools.cached_property(_field("status"))
    kind = functools.cached_property(_field("kind"))
    undefined = functools.cached_property(_field("undefined"))
    rank = functools.cached_property(_field("rank"))
    iteration = functools.cached_property(_field("iteration"))
    graph = functools.cached_property(_field("graph"))
    op_sequence = functools.cached_property(_field("op_sequence"))
    grade = functools.cached_property(_field("grade"))
    msprobe = functools.cached_property(_field("msprobe"))
    argument = functools.cached_property(_field("argument"))
    expected_gap = functools.cached_property(_record_field("expected_gap", None))
    left_counts = functools.cached_property(_record_field("left_counts", None))
    right_counts = functools.cached_property(_record_field("right_counts", None))

    @functools.cached_property
    def compared(self) -> np.ndarray:
        """Whether each row's status is COMPARED (bool; expected gaps not looked at)."""
        return np.fromiter(map(is_, self.status, repeat(PairStatus.COMPARED)), dtype=bool, count=len(self))

    @functools.cached_property
    def reasons(self) -> list[Sequence[str]]:
        """``reasons`` of every row (a table's tuples, the records' lists)."""
        if self.table is not None:
            return self.table.reasons
        return [row.reasons for row in self.rows]

    def metric(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Metric ``name`` of every row: float64 values (NaN where absent) and whether each row has
        it (:meth:`load`)."""
        found = self._metrics.get(name)
        if found is None:
            self.load((name,))
            found = self._metrics[name]
        return found

    def keyed(self, name: str) -> np.ndarray:
        """Whether each row's ``metrics`` has the key ``name`` (its value None or not): a table's
        :meth:`StatsTable.keyed`, else one ``in`` a record."""
        if self.table is not None:
            return self.table.keyed(name)
        return np.fromiter(map(contains, map(_METRICS, self.rows), repeat(name)), dtype=bool, count=len(self.rows))

    def load(self, names: Sequence[str]) -> None:
        """Read metrics ``names`` of every row: a table's by :meth:`StatsTable.metric`; records'
        from their metric dicts, one list a metric (numpy reads None as NaN, a NaN value is computed)."""
        names = [name for name in dict.fromkeys(names) if name not in self._metrics]
        if not names:
            return
        if self.table is not None:
            for name in names:
                self._metrics[name] = self.table.metric(name)
            return
        dicts = list(map(_METRICS, self.rows))
        # a list a metric (a tuple a row would be a new container a row: the collector would walk them)
        for name in names:
            column = [metrics.get(name) for metrics in dicts]
            array = np.array(column, dtype=np.float64)
            present = ~np.isnan(array)
            absent = np.flatnonzero(~present)  # NaN: a computed NaN, or None (not computed)
            present[absent] = np.fromiter(map(is_not, map(column.__getitem__, absent.tolist()), repeat(None)),
                                          dtype=bool, count=len(absent))
            self._metrics[name] = (array, present)


_METRICS = attrgetter("metrics")


__all__ = ["MetricRows", "NO_REASONS", "NO_UNDEFINED", "RowColumns", "StatColumn", "StatsResult", "StatsRows", "StatsTable",
           "compare_stats", "compare_stats_pair", "table_of_rows"]
