"""Reading a saved result back (``vcompare gate RESULT``): JSON, CSV (both layouts) or parquet.

:func:`load_result` returns :class:`SavedResult` whose rows are the :class:`MetricRow` records
the run wrote, so gates can be evaluated again without recomputing anything.

What each source keeps:

- **JSON** (``--json``, :mod:`.saved_json`): everything, exactly -- raw float64s, status, reasons,
  NaN/inf (encoded as the strings ``"nan"``/``"inf"``/``"-inf"``), rank/graph/iteration,
  addresses, expected gaps.
- **parquet** (``-o x.parquet``, :mod:`.saved_parquet`): the same, from typed columns (null = not
  computed).
- **CSV** (``-o x.csv``, either ``--layout``, :mod:`.saved_csv`): what the cells say, numbers as
  printed; the status, which CSV has no column for, inferred from the cells (the rules are in
  :mod:`.saved_csv`); no ``MetricRow.expected_gap`` (re-gate the JSON or parquet result to keep
  rows structurally not compared apart).

Errors name the file and, for CSV and JSON, the line (:class:`DumpFormatError`); a file of an
unknown kind raises :class:`OptionError`. JSON (the document and parquet's schema metadata) is
read by :func:`convert.jsonsafe.load_json`: nesting deeper than 100 levels (a row: its values), whole
numbers of more than 4,300 digits, numbers beyond float64's range (``1e400``) and ``NaN`` /
``Infinity`` literals are refused (vcompare writes ``"inf"``; a ``1e400`` read as infinity would
pass a ``>=`` gate). A parquet column of another type than the writer's (a text metric column)
is refused naming the column, before any row is read.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import DumpFormatError, OptionError
from .saved_csv import read_csv_result
from .saved_json import read_json_result
from .saved_parquet import read_parquet_result
from .saved_result import SavedKind, SavedResult


def load_result(path: str | os.PathLike[str]) -> SavedResult:
    """Read a saved result; the kind is taken from the extension (``.json``, ``.csv``, ``.parquet``).

    Raises :class:`OptionError` for a missing file or an extension vcompare does not read, and
    :class:`DumpFormatError` (file and line) for a malformed one.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    kinds = {".json": SavedKind.JSON, ".csv": SavedKind.CSV, ".parquet": SavedKind.PARQUET}
    if suffix not in kinds:
        raise OptionError(f"{path}: cannot read {suffix or 'extension-less'} results; a saved result is a "
                          ".json (--json), .csv or .parquet (-o) file written by vcompare")
    if not path.is_file():
        raise OptionError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    kind = kinds[suffix]
    if kind is SavedKind.PARQUET:
        return read_parquet_result(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise OptionError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DumpFormatError(path, f"line {line}: not UTF-8 text") from None
    if kind is SavedKind.JSON:
        return read_json_result(path, text)
    return read_csv_result(path, text)


__all__ = ["load_result"]
