"""Hashed dump-file names and ``mapping.csv``.

A dump file whose name is too long for the file system is saved under a hashed name: all
digits, or digits + ``.npy`` (:func:`is_hashed_name`). ``mapping.csv`` in the same folder maps it
back (rows ``hashed_name,real_file_name``). The data is always read from the hashed file itself;
the real name only says which operator and tensor it is.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

from ..entries import entry_problem
from ..textcells import unguard

_HASHED_RE = re.compile(r"[0-9]+(?:\.npy)?")


def is_hashed_name(name: str) -> bool:
    """Whether a file name is a hashed name to look up in ``mapping.csv`` (digits[.npy])."""
    return _HASHED_RE.fullmatch(name) is not None


def read_mapping(folder: Path) -> tuple[dict[str, str], list[tuple[Path, str]]]:
    """Read ``folder/mapping.csv``: ``({hashed: real}, bad rows)``.

    Rows must have exactly two columns; the real name must be a plain file name (no ``/`` or
    ``\\``, not ``.``/``..``, no control characters: :func:`mapping_problem`). A hashed name
    listed twice keeps its first row. Bad rows are returned as ``(mapping.csv path, "row N:
    ...")``; blank lines are ignored. A missing file gives an empty map. A real name written with
    the spreadsheet guard (``'=x.npy``, as vconvert writes ``=x.npy``: :mod:`convert.textcells`)
    is read without it. Edge cases: see :func:`read_mapping_rows`.
    """
    mapping, bad, _ = read_mapping_rows(folder)
    return mapping, bad


def read_mapping_rows(folder: Path) -> tuple[dict[str, str], list[tuple[Path, str]], dict[str, str]]:
    """:func:`read_mapping` plus ``{hashed name: why its row was refused}``.

    Edge cases: a UTF-8 byte-order mark (spreadsheet exports) is dropped; bytes that are not
    UTF-8 become U+FFFD; a row with a field longer than ``csv.field_size_limit()`` (131,072
    characters) is refused on its own (``row N: field larger than field limit``; the rows after
    it are read); a ``mapping.csv`` that is not a regular file (a FIFO, a device, a folder) is
    never opened: one bad row says what it is and the map is empty.
    """
    path = folder / "mapping.csv"
    mapping: dict[str, str] = {}
    bad: list[tuple[Path, str]] = []
    refused: dict[str, str] = {}
    if not path.is_file():
        if os.path.lexists(path):
            bad.append((path, f"mapping.csv not read: {_not_a_file(path)}"))
        return mapping, bad, refused
    first_row: dict[str, int] = {}
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as handle:
            reader = csv.reader(handle)
            number = 0
            while True:
                number += 1
                try:
                    row = next(reader)
                except StopIteration:
                    break
                except csv.Error as exc:
                    line = f" (line {reader.line_num})" if reader.line_num != number else ""
                    bad.append((path, f"row {number}{line}: {exc}; this row is skipped"))
                    continue
                _take_row(path, number, row, mapping, bad, refused, first_row)
    except OSError as exc:
        return mapping, [*bad, (path, f"mapping.csv could not be read: {exc.strerror or exc}")], refused
    return mapping, bad, refused


def _not_a_file(path: Path) -> str:
    """What ``path`` (which exists and is not a regular file) is, without opening it."""
    found = entry_problem(path)
    return found[0] if found is not None else "a folder, not a file"


def _take_row(path: Path, number: int, row: list[str], mapping: dict[str, str], bad: list[tuple[Path, str]],
              refused: dict[str, str], first_row: dict[str, int]) -> None:
    """Check one row of mapping.csv and add it to ``mapping`` (or ``bad`` / ``refused``)."""
    if not row or all(not cell.strip() for cell in row):
        return
    if len(row) != 2:
        problem = f"{len(row)} columns, expected 2 (hashed_name,real_file_name)"
        bad.append((path, f"row {number}: {problem}"))
        if row[0].strip():
            refused.setdefault(row[0].strip(), f"mapping.csv row {number} was refused: {problem}")
        return
    hashed, real = row[0].strip(), unguard(row[1].strip())
    problem = mapping_problem(hashed, real)
    if problem is None and hashed in first_row:
        problem = f"hashed name {hashed!r} is already mapped by row {first_row[hashed]}; the first row is kept"
    if problem:
        bad.append((path, f"row {number}: {problem}"))
        refused.setdefault(hashed, f"mapping.csv row {number} was refused: {problem}")
        return
    first_row[hashed] = number
    mapping[hashed] = real


def mapping_problem(hashed: str, real: str) -> str | None:
    """Why a ``hashed,real`` row of mapping.csv is refused, or None.

    Policy: the real name only *names* a file of this folder (the data is always read from the
    hashed file itself), so it must be a plain file name: no ``/`` or ``\\`` (which would point
    into another folder, e.g. ``../../etc/x`` or ``/abs/path``), not ``.`` / ``..``, and no NUL
    or other control characters.
    """
    if not hashed or not real:
        return "empty hashed or real file name"
    if "/" in real or "\\" in real or real in (".", ".."):
        return f"real file name {real!r} points outside this folder (it must be a plain file name)"
    for name in (real, hashed):
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
            return f"file name {name!r} holds a control character"
    return None


def lookup_hashed(name: str, mapping: dict[str, str], *, npy_suffix: bool = True) -> str | None:
    """The real name of hashed file ``name`` in ``mapping``, or None when it is not listed.

    ``123.npy`` is looked up as ``123.npy`` then ``123``; ``123`` as ``123`` then ``123.npy``.
    ``npy_suffix``: a ``.npy`` file found under its bare hashed name keeps its suffix (the real
    name gains ``.npy`` when the row lacks it: Ascend folders, whose kind is told by the suffix);
    False returns the row's real name as written (MindSpore folders, whose names carry the
    suffix themselves).
    """
    if name in mapping:
        return mapping[name]
    if name.endswith(".npy"):
        real = mapping.get(name[:-4])
        if npy_suffix and real is not None and not real.endswith(".npy"):
            return real + ".npy"
        return real
    return mapping.get(name + ".npy")
