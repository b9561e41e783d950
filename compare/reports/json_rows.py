"""The rows of the JSON result: the one encoder of a row, its line of text; the document streamed.

A row is never built as a dict to be encoded: :class:`RowEncoder` writes each row's line of
compact JSON straight from the record (a dict then the encoder cost ~25 us a statistics row;
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

The floats (13-21 a row: metrics, std, statistics) are made text a batch of rows at a time
(:meth:`RowEncoder.lines`, :data:`ROWS_PER_WRITE` rows): gathered in the order the lines write
them, formatted by one :func:`~compare.reports.float_text.repr_texts` call (``repr``'s text,
~0.1 us a float instead of ~0.4), each line then built from its slice; ``line()`` is ``lines()``
of one row. (Measured for issue 31: a batch encoded column by column -- each field by one
comprehension, each line by one ``%`` of a template -- is no faster than row by row, the records
being read in a worse order; only the floats pay to batch. On the 100k statistics case the row
lines cost ~16 -> ~14 us a row, on 10k small tensors ~10 -> ~7.4.)

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
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, compress, repeat
from json.encoder import encode_basestring_ascii
from operator import attrgetter, is_not
from pathlib import Path
from typing import Any, BinaryIO

from ..records import ArgumentDiff, Grade, MetricRow, MsprobeCells, PairStatus, RowGrade, RowKind, ValueCounts
from .files import atomic_write
from .float_text import repr_texts
from .result_json import ROW_ENCODER, STD_KEYS, STD_NAME, dumps, encode_float, head_and_tail, write_json

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


def _float_texts(values: list[Any], starts: Sequence[int], ends: Sequence[int]) -> list[str]:
    """The JSON text of each value of a batch's float fields (metrics, std, statistics): all the
    floats formatted by one :func:`~compare.reports.float_text.repr_texts` call (``repr``'s text,
    ~0.11 us a float instead of ~0.4); a NaN or an infinity then as :func:`encode_float`'s string.

    None (a metric not computed, a statistic one side lacks; common: 7% of the values of a
    statistics run) is null in every field; its positions are found by ``list.index`` scans. Any
    other value that is not a float (a checksum or ``same`` / ``different`` text, a whole number
    ...) is formatted alone, as the field it sits in writes it: a statistic's ``left`` / ``right``
    / ``diff`` (positions ``starts[k] + 4j + 0..2`` of a statistics block ``[starts[k], ends[k])``)
    by :func:`_stat`, any other field by :func:`_number`. Both stand in the float batch as 0.0,
    their text replacing 0.0's."""
    kinds = list(map(type, values))
    floats_only = kinds.count(float)
    nones = [] if floats_only == len(kinds) else _positions(kinds, type(None))
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
        block = bisect_right(starts, i) - 1
        in_stat = block >= 0 and i < ends[block] and (i - starts[block]) % 4 != 3
        texts[i] = _stat(values[i]) if in_stat else _number(values[i])
    return texts


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


def _msprobe(cells: MsprobeCells) -> str:
    return (f',"msprobe":{{"left_name":{_text(cells.left_name)},"right_name":{_text(cells.right_name)},'
            f'"left_data":{_text(cells.left_data)},"right_data":{_text(cells.right_data)},'
            f'"left_requires_grad":{_plain(cells.left_grad)},"right_requires_grad":{_plain(cells.right_grad)},'
            f'"requires_grad_consistent":{_plain(cells.grad_consistent)},"source":{_text(cells.source)},'
            f'"stack":{_texts(cells.stack)}}}')


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
    msprobe runs, ``argument`` only in argument rows)."""

    def __init__(self, metrics: Sequence[str]) -> None:
        self._names = MetricNames(metrics)
        self._keys = tuple(_text(name) + ":" for name in self._names.names)
        self._layout = "{" + ",".join(key.replace("%", "%%") + "%s" for key in self._keys) + "}"

    def line(self, position: int, row: MetricRow) -> str:
        """The row's object on one line (no indentation, no trailing comma): :meth:`lines` of the one row."""
        return self.lines(position, (row,))[0]

    def lines(self, start: int, rows: Sequence[MetricRow]) -> list[str]:
        """The lines of ``rows`` at positions ``start``, ``start + 1`` ... of the document's ``rows``.

        The float fields of all the rows (metrics, std, statistics) are gathered in the order the
        lines write them, turned into text at once (:func:`_float_texts`), and each line takes its
        slice: a row's metrics (the document's, then its own others), its std's four values, its
        statistics' four values each."""
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
        texts = _float_texts(values, starts, ends)
        lines = []
        at = 0
        width = len(names)
        for i, row in enumerate(rows):
            row_names = own.get(i) if own else None
            if row_names is None:
                metrics = self._layout % tuple(texts[at:at + width])
                at += width
            else:
                keys = self._keys + tuple(_text(name) + ":" for name in row_names[width:])
                metrics = "{" + ",".join(map(str.__add__, keys, texts[at:at + len(row_names)])) + "}"
                at += len(row_names)
            if row.std is None:
                std = "null"
            else:
                std = _STD_LAYOUT % tuple(texts[at:at + 4])
                at += 4
            if row.statistics is None:
                statistics = "null"
            else:
                end = at + 4 * len(row.statistics)
                statistics = _stat_layout(tuple(row.statistics)) % tuple(texts[at:end])
                at = end
            lines.append(self._line(start + i, row, metrics, std, statistics))
        return lines

    @staticmethod
    def _line(position: int, row: MetricRow, metrics: str, std: str, statistics: str) -> str:
        """The row's line, its metrics, std and statistics given as text."""
        plain = _plain
        text = (f'{{"row":{int.__repr__(position)},"index":{plain(row.index)},'
                f'"op_type":{"null" if row.op_type is None else _text(row.op_type)},'
                f'"left_op":{_text(row.left_op)},"right_op":{_text(row.right_op)},'
                f'"tensor_id":{"null" if row.tensor_id is None else _text(row.tensor_id)},'
                f'"rank":{"null" if row.rank is None else plain(row.rank)},'
                f'"graph":{"null" if row.graph is None else plain(row.graph)},'
                f'"iteration":{"null" if row.iteration is None else plain(row.iteration)},'
                f'"left_dtype":{"null" if row.left_dtype is None else _text(row.left_dtype)},'
                f'"right_dtype":{"null" if row.right_dtype is None else _text(row.right_dtype)},'
                f'"shape":{_shape(row.shape)},"status":{_STATUS[row.status]},'
                f'"metrics":{metrics},"std":{std},'
                f'"reasons":{_texts(row.reasons)},'
                f'"left_address":{"null" if row.left_address is None else plain(row.left_address)},'
                f'"right_address":{"null" if row.right_address is None else plain(row.right_address)},'
                f'"op_sequence":{"null" if row.op_sequence is None else plain(row.op_sequence)},'
                f'"expected_gap":{"null" if row.expected_gap is None else _text(row.expected_gap)},'
                f'"left_counts":{_counts(row.left_counts)},"right_counts":{_counts(row.right_counts)},'
                f'"kind":{_KIND[row.kind]},'
                f'"undefined":{_texts(sorted(row.undefined)) if row.undefined else "[]"},'
                f'"statistics":{statistics},"grade":{_grade(row.grade)}')
        if row.msprobe is not None:
            text += _msprobe(row.msprobe)
        if row.argument is not None:
            text += _argument(row.argument)
        return text + "}"


def _pieces(head: Mapping[str, Any], rows: Sequence[MetricRow], metrics: Sequence[str]) -> Iterator[str]:
    """The text of a document with rows, in pieces: the head, row lines by :data:`ROWS_PER_WRITE`, the tail."""
    head_text, tail = head_and_tail(head)
    yield head_text
    lines = RowEncoder(metrics).lines
    separator = "  "
    for start in range(0, len(rows), ROWS_PER_WRITE):
        yield separator + ",\n  ".join(lines(start, rows[start:start + ROWS_PER_WRITE]))
        separator = ",\n  "
    yield tail


def row_documents(rows: Sequence[MetricRow], metrics: Sequence[str]) -> list[dict[str, Any]]:
    """The ``rows`` of a document as dicts: each row's line (:meth:`RowEncoder.line`) read back
    by ``json.loads`` (:meth:`RowEncoder.lines`, a batch at a time) -- the one encoder, so a dict
    holds exactly what the text says (floats, ``"nan"`` / ``"inf"`` strings, lists where the record
    has tuples)."""
    lines = RowEncoder(metrics).lines
    return [json.loads(line) for start in range(0, len(rows), ROWS_PER_WRITE)
            for line in lines(start, rows[start:start + ROWS_PER_WRITE])]


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
