"""The rows of the JSON result: the one encoder of a row, its line of text; the document streamed.

A row is never built as a dict to be encoded: :class:`RowEncoder` writes each row's line of
compact JSON straight from its fields (a dict then the encoder cost ~25 us a statistics row;
``--json`` and ``ComparisonResult.to_json`` write millions of rows). Each value becomes text
where it is read: strings through the json module's own C escaper (``ensure_ascii``: non-ASCII
and the surrogate escapes of undecodable file names written as ``\\uXXXX``), finite floats as
``float.__repr__`` writes them (the encoder's text; a batch at a time, below), non-finite floats
as the strings of :func:`~compare.reports.result_json.encode_float`, ``None`` as null. A field the records type as
text (``left_op``, msprobe's names ...) must be text; where a record allows several types (whole
numbers, flags, lists), a value of an unusual type goes through the encoder itself. Keys, their
order and every rule are docs/result-json.md's; the tests hold the lines to an independent
dict-built reference on every fixture family and on generated odd values.

The rows as dicts (``ComparisonResult.to_dict``, ``--overflow``) are these lines read back
(:func:`row_documents`, ``json.loads``): one encoder, so the dict and the text cannot disagree,
and ``dumps(to_dict())`` is ``to_json()`` byte for byte.

A batch of rows (:meth:`RowEncoder.lines`, :data:`ROWS_PER_WRITE` rows) is encoded column by
column: each field of all its rows made text at once (:class:`~compare.stats_table.RowColumns`:
the records' fields read once, or a statistics table's own lists; a value that repeats -- data
types, shapes, grades, stacks -- written once), the floats (13-21 a row: metrics, std,
statistics) gathered and formatted by one :func:`~compare.reports.float_text.repr_texts` call
(``repr``'s text, ~0.1 us a float instead of ~0.4; each distinct value once when they repeat),
each line one ``%`` of a template in which what is the same in every row of the batch is written
once. The rows of a statistics run (a :class:`~compare.stats_table.MetricRows` view) are read
from their table: no record is built a row (one was ~10-25 us). ``line()`` is ``lines()`` of
one row. (Issue 31, the 100k statistics case, one thread: the row lines ~21 -> ~9-10 us a row
with the records the view built; 10k small tensors ~7 -> ~6.)

:func:`write_result` and :func:`render_result` stream the document: the head (every key but
``rows``, :func:`~compare.reports.result_json.result_document`), the row lines a few thousand at
a time, the tail. Neither the rows' dicts nor the whole text are ever held
(:func:`write_result`), and the file is what :func:`~compare.reports.result_json.dumps` makes of
the full document (:func:`full_document`).
"""

from __future__ import annotations

import functools
import json
import os
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress, repeat
from json.encoder import encode_basestring_ascii
from operator import attrgetter, is_, is_not
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..records import ArgumentDiff, Grade, MetricRow, MsprobeCells, PairStatus, RowGrade, RowKind, ValueCounts
from ..stats import TEXT_STATS, stat_metrics
from ..stats_table import MetricRows, RowColumns, StatsTable
from .files import atomic_write
from .float_text import repr_texts
from .result_json import ROW_ENCODER, STD_KEYS, STD_NAME, dumps, encode_float, head_and_tail, write_json

_NONE = type(None)
#: Rows encoded per write (and per piece of :func:`render_result`).
ROWS_PER_WRITE = 2048

_text = encode_basestring_ascii  # a str as its quoted JSON text, exactly as the C encoder writes it
_encode = ROW_ENCODER.encode
_repr = float.__repr__  # the encoder's text of a finite float
#: The ``%`` template of a row's ``std`` object: its four values are the ``%s``.
_STD_LAYOUT = "{" + ",".join(_text(key) + ":%s" for key in STD_KEYS) + "}"
#: A statistic's four values, in the order its object writes them.
_STAT_VALUES = attrgetter("left", "right", "diff", "rel")
#: ``repr``'s text of a non-finite float -> its JSON text (:func:`encode_float`'s string).
_NON_FINITE = {"nan": '"nan"', "inf": '"inf"', "-inf": '"-inf"'}
#: The texts after a statistic's left, right, diff and rel in its object.
_STAT_KEYS = (',"right":', ',"diff":', ',"rel":', "}")
#: The text of each member of the closed sets a row holds (an enum's ``.value`` is a slow descriptor).
_STATUS = {status: _text(status.value) for status in PairStatus}
_KIND = {kind: _text(kind.value) for kind in RowKind}
_GRADE = {grade: _text(grade.value) for grade in Grade}


def _plain(value: object) -> str:
    """A value written as it is (a text, a whole number, null, a flag ...), as the encoder writes it."""
    kind = type(value)
    if kind is str:
        return _text(value)
    if value is None:
        return "null"
    if kind is int:
        return int.__repr__(value)
    if kind is bool:
        return "true" if value else "false"
    return _encode(value)


def _number(value: float | None) -> str:
    """A float through :func:`encode_float`: ``repr`` when finite, ``"nan"`` / ``"inf"`` / ``"-inf"``, null."""
    if type(value) is float and value - value == 0.0:
        return _repr(value)
    return "null" if value is None else _encode(encode_float(value))


def _stat(value: float | str | None) -> str:
    """A statistic's value: text (a checksum, ``same`` / ``different``) as it is, else a float."""
    return _text(value) if isinstance(value, str) else _number(value)


def _positions(items: list[Any], item: object) -> list[int]:
    """The positions of ``item`` in ``items``, by ``list.index`` (C scans: the items are many, the hits few)."""
    positions = []
    at = -1
    try:
        while True:
            at = items.index(item, at + 1)
            positions.append(at)
    except ValueError:
        return positions


def _float_texts(values: list[Any], stat_at: Callable[[int], bool]) -> list[str]:
    """The JSON text of each value of a batch's float fields (metrics, std, statistics): all the
    floats formatted by one :func:`~compare.reports.float_text.repr_texts` call (``repr``'s text,
    ~0.11 us a float instead of ~0.4); a NaN or an infinity then as :func:`encode_float`'s string.

    None (a metric not computed, a statistic one side lacks; common: 7% of the values of a
    statistics run) is null in every field; its positions are found by one pass over the types. Any
    other value that is not a float (a checksum or ``same`` / ``different`` text, a whole number
    ...) is formatted alone, as the field it sits in writes it: a statistic's ``left`` / ``right``
    / ``diff`` (the positions ``i`` for which ``stat_at(i)``) by :func:`_stat`, any other field
    by :func:`_number`. Both stand in the float batch as 0.0, their text replacing 0.0's."""
    fast = _distinct_texts(values)
    if fast is not None:
        return fast
    kinds = list(map(type, values))
    floats_only = kinds.count(float)
    nones = [] if floats_only == len(kinds) else list(compress(range(len(kinds)), map(is_, kinds, repeat(_NONE))))
    odd = [] if floats_only + len(nones) == len(kinds) else [
        i for i in compress(range(len(kinds)), map(is_not, kinds, repeat(float))) if values[i] is not None]
    floats = values
    if nones or odd:
        floats = values.copy()
        for i in chain(nones, odd):
            floats[i] = 0.0
    texts = repr_texts(floats)
    for text, json_text in _NON_FINITE.items():  # repr's "nan", "inf", "-inf": not JSON numbers
        for i in _positions(texts, text):
            texts[i] = json_text
    for i in nones:
        texts[i] = "null"
    for i in odd:
        texts[i] = _stat(values[i]) if stat_at(i) else _number(values[i])
    return texts


def _distinct_texts(values: list[Any]) -> list[str] | None:
    """:func:`_float_texts` of a batch whose values repeat (a batch of statistics rows holds many
    equal ones: zero differences, both sides' equal values, None; a tenth of them distinct on the
    100k case), each distinct value written once: None as null, a float by one
    :func:`~compare.reports.float_text.repr_texts` call (a NaN or an infinity as
    :func:`encode_float`'s string), any other value by :func:`_number` (what it writes of a
    whole number or a flag is the text of the float equal to it, in every field: values equal as
    keys have the same text), but for 0.0 and -0.0 (equal keys, different texts), whose texts
    are then set by their sign. None (the values formatted one by one) when most values are
    distinct (telling them apart costs ~0.08 us a value; a sample of the batch tells first), or
    when one is text (a checksum's: its text depends on the field it sits in) or not a number."""
    try:
        sample = values[::max(1, len(values) // _SAMPLE)]
        if len(dict.fromkeys(sample)) > _REPEATED * len(sample):  # mostly distinct (a tensor run's metrics)
            return None
        distinct = list(dict.fromkeys(values))
    except TypeError:  # not a number: written one by one (where it raises)
        return None
    if len(distinct) > _REPEATED * len(values):
        return None
    kinds = list(map(type, distinct))
    if str in kinds:
        return None
    floats = [value for value, kind in zip(distinct, kinds) if kind is float]
    known = dict(zip(floats, repr_texts(floats)))
    for text, json_text in _NON_FINITE.items():  # repr's "nan", "inf", "-inf": not JSON numbers
        for value in [value for value, written in known.items() if written == text]:
            known[value] = json_text
    try:
        for value, kind in zip(distinct, kinds):
            if kind is not float:
                known[value] = "null" if value is None else _number(value)
        texts = list(map(known.__getitem__, values))
        if 0.0 in known:
            numbers = np.array(values, dtype=np.float64)  # None: NaN
            negative = np.signbit(numbers) & (numbers == 0.0)
            if negative.any():
                wrong = negative if known[0.0] == "0.0" else (numbers == 0.0) & ~negative
                for i in np.flatnonzero(wrong).tolist():
                    texts[i] = "0.0" if known[0.0] == "-0.0" else "-0.0"
    except (TypeError, ValueError, OverflowError):  # not a number: written one by one (where it raises)
        return None
    return texts


#: Above this share of distinct values, a batch's values are formatted each (:func:`_distinct_texts`),
#: as told first by every n-th value, about this many of them.
_REPEATED = 0.7
_SAMPLE = 256


def _texts(items: Sequence[str]) -> str:
    """A list of texts; a list holding anything else is written by the encoder."""
    if not items:
        return "[]"
    try:
        return "[" + ",".join(map(_text, items)) + "]"
    except TypeError:  # not all texts
        return _encode(list(items))


def _shape(shape: tuple[int, ...] | None) -> str:
    return "null" if shape is None else "[" + ",".join([int.__repr__(int(d)) for d in shape]) + "]"


def _counts(counts: ValueCounts | None) -> str:
    if counts is None:
        return "null"
    return f'{{"nan":{_plain(counts.nan)},"inf":{_plain(counts.inf)},"saturated":{_plain(counts.saturated)}}}'


@functools.lru_cache(maxsize=256)
def _stat_layout(names: tuple[str, ...]) -> str:
    """The ``%`` template of a ``statistics`` object of these names (their text escaped once, a
    ``%`` in a name doubled): each statistic's left, right, diff and rel are its ``%s``."""
    return "{" + ",".join(_text(name).replace("%", "%%") + ':{"left":%s,"right":%s,"diff":%s,"rel":%s}'
                          for name in names) + "}"


def _grade(grade: RowGrade | None) -> str:
    if grade is None:
        return "null"
    return f'{{"result":{_GRADE[grade.grade]},"messages":{_texts(grade.messages)}}}'


#: The ``%`` template of a row's ``msprobe`` object (with its key): its nine values are the ``%s``.
_MSPROBE_LAYOUT = (',"msprobe":{"left_name":%s,"right_name":%s,"left_data":%s,"right_data":%s,'
                   '"left_requires_grad":%s,"right_requires_grad":%s,"requires_grad_consistent":%s,"source":%s,'
                   '"stack":%s}')
#: The text fields of :class:`MsprobeCells` written first, then its flags, its source and its stack.
_CELL_TEXTS = ("left_name", "right_name", "left_data", "right_data")
_CELL_FLAGS = ("left_grad", "right_grad", "grad_consistent")
_SOURCE = attrgetter("source")
_STACK = attrgetter("stack")


def _argument(argument: ArgumentDiff) -> str:
    return (f',"argument":{{"left_type":{_plain(argument.left_type)},"right_type":{_plain(argument.right_type)},'
            f'"left":{_plain(argument.left)},"right":{_plain(argument.right)},"same":{_plain(argument.same)},'
            f'"diff":{_number(argument.diff)}}}')


class MetricNames:
    """The metric keys of every row of a document, worked out once: the document's metrics (not
    StandardDeviation, each once) in order, then a row's own others (checked per row with one set test)."""

    def __init__(self, metrics: Sequence[str]) -> None:
        self.names = tuple(dict.fromkeys(m for m in metrics if m != STD_NAME))
        self.known = frozenset(self.names) | {STD_NAME}

    def others(self, values: Mapping[str, float | None]) -> list[str]:
        """A row's metrics that are not among the document's, in the row's order."""
        return [m for m in values if m not in self.known]


class RowEncoder:
    """The line of each row of one document (its metric names worked out once, their keys
    escaped once): ``line(position, row)`` is the row's object at ``position`` of the document's
    ``rows``, as compact JSON (docs/result-json.md: its keys in order; ``msprobe`` only in rows of
    msprobe runs, ``argument`` only in argument rows).

    A batch of rows is encoded column by column (:meth:`lines`): each field of every row made text
    at once (:class:`~compare.stats_table.RowColumns`: the records' fields, or the lists of a
    statistics table), the floats by one :func:`_float_texts` call, each line one ``%`` of a
    template in which the fields that are the same in every row of the batch are written once.
    The floats of records are read from their metric, std and statistics dicts
    (:meth:`_record_floats`); those of the rows of a :class:`~compare.stats_table.MetricRows` view
    from its table's statistic columns (:meth:`_table_lines`, :meth:`_table_objects`: no record
    is built), a row kept as a record by the table (an argument row) from that record. Both
    give the bytes of the records the view builds (``tests/compare/reports/test_json_table_rows.py``).
    A table whose statistics have metrics the document does not name is written by its records
    (rows with metrics of their own: rare, and the records' way handles them)."""

    def __init__(self, metrics: Sequence[str]) -> None:
        self._names = MetricNames(metrics)
        self._keys = tuple(_text(name) + ":" for name in self._names.names)
        self._layout = "{" + ",".join(key.replace("%", "%%") + "%s" for key in self._keys) + "}"

    def line(self, position: int, row: MetricRow) -> str:
        """The row's object on one line (no indentation, no trailing comma): :meth:`lines` of the one row."""
        return self.lines(position, (row,))[0]

    def lines(self, start: int, rows: Sequence[MetricRow], first: int = 0, stop: int | None = None) -> list[str]:
        """The lines of ``rows[first:stop]`` (all of ``rows`` by default) at positions ``start``,
        ``start + 1`` ... of the document's ``rows``.

        The float fields of all the rows (metrics, std, statistics) are turned into text at once
        (:func:`_float_texts`), then each row's metrics, std and statistics objects are made of
        their texts, and each line of its fields (:func:`_joined`)."""
        stop = len(rows) if stop is None else min(stop, len(rows))
        if first >= stop:
            return []
        table = rows.table if isinstance(rows, MetricRows) else None
        if table is not None and self._names.known.issuperset(_table_metrics(tuple(table.stats))):
            return self._table_lines(start, table, RowColumns(rows), first, stop)
        batch = list(rows[first:stop])
        floats = self._record_floats(batch)
        texts = _float_texts(floats.values, floats.stat_at)
        metrics, std, statistics = self._record_objects(batch, floats, texts, 0)
        return _joined(range(start, start + len(batch)), _field_texts(RowColumns(batch), 0, len(batch), batch),
                       [metrics], [std], [statistics])

    def _record_floats(self, rows: Sequence[MetricRow]) -> _Floats:
        """The float fields of records in the order their lines write them: each row's metrics
        (the document's, then its own others), its std's four values, its statistics' four values
        each (left, right, diff, rel)."""
        names = self._names.names
        known = self._names.known
        values: list[Any] = []
        starts: list[int] = []  # each statistics block [start, end) of ``values``
        ends: list[int] = []
        own: dict[int, tuple[str, ...]] = {}  # row -> its metric names, when it has others than the document's
        for i, row in enumerate(rows):
            metrics = row.metrics
            if known.issuperset(metrics):
                values += map(metrics.get, names)
            else:
                own[i] = row_names = names + tuple(self._names.others(metrics))
                values += map(metrics.get, row_names)
            if row.std is not None:
                values += row.std
            if row.statistics is not None:
                starts.append(len(values))
                values += chain.from_iterable(map(_STAT_VALUES, row.statistics.values()))
                ends.append(len(values))
        return _Floats(values, starts, ends, own)

    def _record_objects(self, rows: Sequence[MetricRow], floats: _Floats, texts: list[str],
                        at: int) -> tuple[list[str], list[str], list[str]]:
        """The metrics, std and statistics objects of records, their floats' texts read from
        ``texts[at:]`` in :meth:`_record_floats`' order."""
        names = self._names.names
        own = floats.own
        metrics_texts, std_texts, statistics_texts = [], [], []
        width = len(names)
        for i, row in enumerate(rows):
            row_names = own.get(i) if own else None
            if row_names is None:
                metrics_texts.append(self._layout % tuple(texts[at:at + width]))
                at += width
            else:
                keys = self._keys + tuple(_text(name) + ":" for name in row_names[width:])
                metrics_texts.append("{" + ",".join(map(str.__add__, keys, texts[at:at + len(row_names)])) + "}")
                at += len(row_names)
            if row.std is None:
                std_texts.append("null")
            else:
                std_texts.append(_STD_LAYOUT % tuple(texts[at:at + 4]))
                at += 4
            if row.statistics is None:
                statistics_texts.append("null")
            else:
                end = at + 4 * len(row.statistics)
                statistics_texts.append(_stat_layout(tuple(row.statistics)) % tuple(texts[at:end]))
                at = end
        return metrics_texts, std_texts, statistics_texts

    def _table_lines(self, start: int, table: StatsTable, columns: RowColumns, first: int, stop: int) -> list[str]:
        """The lines of a statistics table's rows ``first:stop`` (:meth:`lines`): the floats of its
        statistic columns (each one's left, right and diff, then each one's rel), with those of
        the rows it keeps as records (:meth:`_record_floats`) after them in the same
        :func:`_float_texts` call; a kept row's line is then made of its record alone."""
        count = stop - first
        stats = table.stats
        parts = [table.columns[name].fields(first, stop) for name in stats]
        values: list[Any] = []
        for left, right, diff, _rel in parts:
            values += left
            values += right
            values += diff
        split = len(values)  # statistics' left / right / diff before, rel after
        for part in parts:
            values += part[3]
        kept = [(row, table.kept[row]) for row in filter(table.kept.__contains__, range(first, stop))]
        records = [record for _, record in kept]
        own = self._record_floats(records)
        base = len(values)
        values += own.values

        def stat_at(i: int) -> bool:
            return i < split if i < base else own.stat_at(i - base)

        texts = _float_texts(values, stat_at)
        metrics, statistics = self._table_objects(table, first, stop, texts, split)
        fields = _field_texts(columns, first, stop, None, [row for row, _ in kept])
        lines = _joined(range(start, start + count), fields, metrics, ["null"], statistics)
        if kept:
            objects = self._record_objects(records, own, texts, base)
            positions = [start + row - first for row, _ in kept]
            again = _joined(positions, _field_texts(RowColumns(records), 0, len(records), records),
                            *([column] for column in objects))
            for position, line in zip(positions, again):
                lines[position - start] = line
        return lines

    def _table_objects(self, table: StatsTable, first: int, stop: int, texts: list[str],
                       split: int) -> tuple[_Parts, _Parts]:
        """The metrics and statistics objects of a table's rows ``first:stop`` as parts of their
        lines (:func:`_joined`: each value a column of the object's template), of the texts of
        their statistics' values (``texts``: each statistic's left, right and diff columns in
        turn, then each one's rel column from ``split``).

        A row's metrics are its statistics' (:func:`compare.stats.statistics_metrics`): ``LDiff``
        is ``|diff|`` when the diff is a float (its text without a leading minus; ``"-inf"`` is
        ``"inf"``), null otherwise; ``LRelDiff`` the rel as it is (the same text); a checksum's
        0.0 when its diff is ``same``, 1.0 when it is another value, null when None. A metric of
        the document no statistic of the table has is null. A row's statistics object holds the
        statistics it compares, in the table's order: when the rows of the batch differ in that
        set, each row's object is made alone (a column of objects)."""
        count = stop - first
        stats = table.stats
        by_stat: dict[str, tuple[list[str], list[str], list[str], list[str]]] = {}
        for k, name in enumerate(stats):
            at = 3 * k * count
            rel_at = split + k * count
            by_stat[name] = (texts[at:at + count], texts[at + count:at + 2 * count],
                             texts[at + 2 * count:at + 3 * count], texts[rel_at:rel_at + count])
        metric_texts: dict[str, list[str]] = {}
        for name in stats:
            column = table.columns[name]
            names = stat_metrics(name)
            if name in TEXT_STATS:
                diffs = column.fields(first, stop)[2]
                metric_texts[names[0]] = ["null" if diff is None else ("0.0" if diff == "same" else "1.0")
                                          for diff in diffs]
                continue
            diff_texts = by_stat[name][2]
            magnitudes = [text[1:] if text[0] == "-" else text for text in diff_texts]
            for i in _positions(magnitudes, '"-inf"'):
                magnitudes[i] = '"inf"'
            special = column.special
            for row in filter(special.__contains__, range(first, stop)) if special else ():
                if not isinstance(special[row][0], float):
                    magnitudes[row - first] = "null"
            metric_texts[names[0]], metric_texts[names[1]] = magnitudes, by_stat[name][3]
        nulls = ["null"]
        metrics: _Parts = ["{}"]
        if self._names.names:
            metrics = []
            for key, name in zip(self._keys, self._names.names):
                metrics += ["," + key, metric_texts.get(name, nulls)]
            metrics[0] = "{" + self._keys[0]
            metrics.append("}")
        if not stats:
            return metrics, ["{}"]
        has = np.stack([table.columns[name].has[first:stop] for name in stats], axis=1)
        sets, which = np.unique(has, axis=0, return_inverse=True)
        if len(sets) == 1:
            names = [name for name, there in zip(stats, sets[0].tolist()) if there]
            if not names:
                return metrics, ["{}"]
            parts: _Parts = []
            for name in names:
                parts.append(',' + _text(name) + ':{"left":')
                parts.extend(chain.from_iterable(zip(by_stat[name], _STAT_KEYS)))
            parts[0] = "{" + parts[0][1:]
            parts[-1] = "}}"
            return metrics, parts
        statistics: list[str] = [""] * count
        for number, present in enumerate(sets.tolist()):
            names = [name for name, there in zip(stats, present) if there]
            layout = _stat_layout(tuple(names))
            columns = [text for name in names for text in by_stat[name]]
            rows = np.flatnonzero(which.reshape(-1) == number).tolist()
            if not names:
                for row in rows:
                    statistics[row] = "{}"
                continue
            picked = [list(map(column.__getitem__, rows)) for column in columns]
            for row, text in zip(rows, map(layout.__mod__, zip(*picked))):
                statistics[row] = text
        return metrics, [statistics]


@dataclass(frozen=True)
class _Floats:
    """The float fields of some records in line order (:meth:`RowEncoder._record_floats`):
    ``values``; each statistics block ``[starts[k], ends[k])``; ``own``: row -> its metric names,
    for the rows with metrics of their own (not the document's)."""

    values: list[Any]
    starts: list[int]
    ends: list[int]
    own: dict[int, tuple[str, ...]]

    def stat_at(self, i: int) -> bool:
        """Whether value ``i`` is a statistic's left, right or diff (written as text when it is text)."""
        block = bisect_right(self.starts, i) - 1
        return block >= 0 and i < self.ends[block] and (i - self.starts[block]) % 4 != 3


@functools.lru_cache(maxsize=64)
def _table_metrics(stats: tuple[str, ...]) -> frozenset[str]:
    """The metrics of a table's statistics (:func:`compare.stats.stat_metrics`)."""
    return frozenset(m for name in stats for m in stat_metrics(name))


def _nones(values: list[Any]) -> int:
    """How many values are None (by identity: ``list.count`` would call each record's ``__eq__``)."""
    return sum(map(is_, values, repeat(None)))


def _nullable(values: list[Any], write: Callable[[Any], str]) -> list[str]:
    """Each value's text by ``write``; None is null (a column of nulls: one shared text)."""
    nones = _nones(values)
    if nones == len(values):
        return ["null"] * len(values)
    if not nones:
        return list(map(write, values))
    return ["null" if value is None else write(value) for value in values]


def _remembered(values: list[Any], write: Callable[[Any], str]) -> list[str]:
    """Each value's text by ``write``, worked out once per distinct value (shapes, data types,
    grades ... repeat; values equal as keys have the same text in every field this writes);
    values that cannot be dict keys are each written."""
    try:
        texts = {value: write(value) for value in set(values)}
    except TypeError:  # unhashable (a list)
        return list(map(write, values))
    return list(map(texts.__getitem__, values))


def _by_identity(values: list[Any], write: Callable[[Any], str]) -> list[str]:
    """Each value's text by ``write``, worked out once per object (grades, stacks and a table's
    empty reasons are shared by many rows; hashing them by value costs more than writing them)."""
    ids = list(map(id, values))
    texts = {key: write(value) for key, value in dict(zip(ids, values)).items()}
    return list(map(texts.__getitem__, ids))


_INT = {int}


def _whole_texts(values: list[Any]) -> list[str]:
    """Whole numbers (or null, or anything :func:`_plain` writes) as text."""
    if _nones(values) == len(values):
        return ["null"] * len(values)
    if set(map(type, values)) == _INT:
        return list(map(int.__repr__, values))
    return list(map(_plain, values))


def _text_or_null(value: str | None) -> str:
    return "null" if value is None else _text(value)


def _undefined(names: frozenset[str]) -> str:
    return _texts(sorted(names)) if names else "[]"


def _reasons(reasons: Sequence[str]) -> str:
    return _texts(reasons) if reasons else "[]"


def _extras(cells: list[MsprobeCells | None], arguments: list[ArgumentDiff | None]) -> list[str]:
    """The objects a row has only sometimes, each with its key: its msprobe cells (:data:`_MSPROBE_LAYOUT`,
    a field of all the rows' cells at a time), its argument (:func:`_argument`)."""
    count = len(cells)
    out = [""] * count
    nones = _nones(cells)
    if nones < count:
        where = list(range(count)) if not nones else [i for i, c in enumerate(cells) if c is not None]
        present = cells if not nones else [cells[i] for i in where]
        columns = [list(map(_text, map(attrgetter(name), present))) for name in _CELL_TEXTS]
        columns += [_flags(list(map(attrgetter(name), present))) for name in _CELL_FLAGS]
        columns.append(list(map(_text, map(_SOURCE, present))))
        columns.append(_by_identity(list(map(_STACK, present)), _texts))
        for i, text in zip(where, map(_MSPROBE_LAYOUT.__mod__, zip(*columns))):
            out[i] = text
    if _nones(arguments) < count:
        for i, argument in enumerate(arguments):
            if argument is not None:
                out[i] += _argument(argument)
    return out


def _flags(values: list[bool | None]) -> list[str]:
    """Flags (or null) as the encoder writes them; a column holding anything else through :func:`_plain`."""
    if set(map(type, values)) <= _FLAG_TYPES:
        return list(map(_FLAG_TEXTS.__getitem__, values))
    return list(map(_plain, values))


_FLAG_TYPES = {bool, _NONE}
_FLAG_TEXTS = {None: "null", True: "true", False: "false"}


#: The texts of a batch's fields (:func:`_field_texts`): (key, one text a row) in the line's order,
#: the grades' and the extra objects' (:func:`_extra`).
_Fields = tuple[list[tuple[str, list[str]]], list[str], list[str]]


def _field_texts(columns: RowColumns, first: int, stop: int, records: Sequence[MetricRow] | None,
                 skipped: Sequence[int] = ()) -> _Fields:
    """The text of each field of rows ``first:stop`` (but the row number and the floats' objects)
    as (key, one text a row), in the line's order; ``records``: the rows' records, for the fields
    only records hold (std's absence, addresses, expected gap, counts); None for a table's rows,
    which have none of them. ``skipped``: rows whose line is made otherwise (a table's kept
    rows): their arguments are not written."""
    count = stop - first
    nulls = ["null"] * count

    def read(column: list[Any]) -> list[Any]:
        return column[first:stop]

    if records is None:
        left_address = right_address = expected_gap = left_counts = right_counts = nulls
    else:
        left_address = _nullable(list(map(_LEFT_ADDRESS, records)), _plain)
        right_address = _nullable(list(map(_RIGHT_ADDRESS, records)), _plain)
        expected_gap = _nullable(read(columns.expected_gap), _text)
        left_counts = _nullable(read(columns.left_counts), _counts)
        right_counts = _nullable(read(columns.right_counts), _counts)
    arguments = read(columns.argument)
    for row in skipped:
        arguments[row - first] = None
    return [
        ("index", _whole_texts(read(columns.index))),
        ("op_type", _remembered(read(columns.op_type), _text_or_null)),
        ("left_op", list(map(_text, read(columns.left_op)))),
        ("right_op", list(map(_text, read(columns.right_op)))),
        ("tensor_id", _nullable(read(columns.tensor_id), _text)),
        ("rank", _nullable(read(columns.rank), _plain)),
        ("graph", _nullable(read(columns.graph), _plain)),
        ("iteration", _nullable(read(columns.iteration), _plain)),
        ("left_dtype", _remembered(read(columns.left_dtype), _text_or_null)),
        ("right_dtype", _remembered(read(columns.right_dtype), _text_or_null)),
        ("shape", _remembered(read(columns.shape), _shape)),
        ("status", list(map(_STATUS.__getitem__, read(columns.status)))),
        ("reasons", _by_identity(read(columns.reasons), _reasons)),
        ("left_address", left_address),
        ("right_address", right_address),
        ("op_sequence", _nullable(read(columns.op_sequence), _plain)),
        ("expected_gap", expected_gap),
        ("left_counts", left_counts),
        ("right_counts", right_counts),
        ("kind", list(map(_KIND.__getitem__, read(columns.kind)))),
        ("undefined", _remembered(read(columns.undefined), _undefined)),
    ], _by_identity(read(columns.grade), _grade), _extras(read(columns.msprobe), arguments)


#: Parts of a line (:func:`_joined`): a text, the same in every row, or a column of texts (one a
#: row, or one for all: the same in every row).
_Parts = list[str | list[str]]


def _joined(positions: Sequence[int], fields: _Fields, metrics: _Parts, std: _Parts, statistics: _Parts) -> list[str]:
    """The lines of rows: each ``%`` of one template, in which the texts and the columns whose
    text is the same in every row are written once (their ``%`` doubled) and every other column
    is a ``%s``."""
    head, grade, extra = fields
    parts: _Parts = ['{"row":', list(map(int.__repr__, positions))]
    for key, texts in head[:12]:
        parts += [f',"{key}":', texts]
    parts += [',"metrics":', *metrics, ',"std":', *std]
    for key, texts in head[12:]:
        parts += [f',"{key}":', texts]
    parts += [',"statistics":', *statistics, ',"grade":', grade, extra, "}"]
    pieces = []
    variable = []
    for part in parts:
        if type(part) is str:
            pieces.append(part.replace("%", "%%"))
        elif part.count(part[0]) == len(part):
            pieces.append(part[0].replace("%", "%%"))
        else:
            pieces.append("%s")
            variable.append(part)
    template = "".join(pieces)
    if not variable:
        return [template % ()] * len(positions)
    return list(map(template.__mod__, zip(*variable)))


_LEFT_ADDRESS = attrgetter("left_address")
_RIGHT_ADDRESS = attrgetter("right_address")


def _pieces(head: Mapping[str, Any], rows: Sequence[MetricRow], metrics: Sequence[str]) -> Iterator[str]:
    """The text of a document with rows, in pieces: the head, row lines by :data:`ROWS_PER_WRITE`, the tail."""
    head_text, tail = head_and_tail(head)
    yield head_text
    lines = RowEncoder(metrics).lines
    separator = "  "
    for start in range(0, len(rows), ROWS_PER_WRITE):
        yield separator + ",\n  ".join(lines(start, rows, start, start + ROWS_PER_WRITE))
        separator = ",\n  "
    yield tail


def row_documents(rows: Sequence[MetricRow], metrics: Sequence[str]) -> list[dict[str, Any]]:
    """The ``rows`` of a document as dicts: each row's line (:meth:`RowEncoder.line`) read back
    by ``json.loads`` (:meth:`RowEncoder.lines`, a batch at a time) -- the one encoder, so a dict
    holds exactly what the text says (floats, ``"nan"`` / ``"inf"`` strings, lists where the record
    has tuples)."""
    lines = RowEncoder(metrics).lines
    return [json.loads(line) for start in range(0, len(rows), ROWS_PER_WRITE)
            for line in lines(start, rows, start, start + ROWS_PER_WRITE)]


def full_document(head: Mapping[str, Any], rows: Sequence[MetricRow], metrics: Sequence[str]) -> dict[str, Any]:
    """``head`` (a document of :func:`~compare.reports.result_json.result_document`) with ``rows``
    (its records, ``metrics`` the document's metric names) as its ``rows``, as dicts
    (:func:`row_documents`): the whole document, what ``ComparisonResult.to_dict`` returns."""
    return {**head, "rows": row_documents(rows, metrics)}


def render_result(head: Mapping[str, Any], rows: Sequence[MetricRow], metrics: Sequence[str]) -> str:
    """The JSON result's text: ``head`` (a document of :func:`~compare.reports.result_json.result_document`) with ``rows``
    (its records, ``metrics`` the document's metric names) as its ``rows``; the same text as
    :func:`~compare.reports.result_json.dumps` of the full document."""
    if not rows:
        return dumps({**head, "rows": []})
    return "".join(_pieces(head, rows, metrics))


def write_result(head: Mapping[str, Any], path: str | os.PathLike[str], rows: Sequence[MetricRow],
                 metrics: Sequence[str]) -> Path:
    """Write :func:`render_result`'s text atomically (umask honoured), the rows encoded and
    written a few thousand at a time; :class:`OutputError` when it cannot be."""
    if not rows:
        return write_json({**head, "rows": []}, path)

    def write(handle: BinaryIO) -> None:
        for piece in _pieces(head, rows, metrics):
            handle.write(piece.encode("ascii"))

    return atomic_write(Path(path), write)


__all__ = ["ROWS_PER_WRITE", "MetricNames", "RowEncoder", "full_document", "render_result", "row_documents",
           "write_result"]
