"""Hashed dump-file names and ``mapping.csv``.

A dump file whose name is too long for the file system is saved under a hashed name: all
digits, or digits + ``.npy`` (:func:`is_hashed_name`). ``mapping.csv`` in the same folder maps it
back (rows ``hashed_name,real_file_name``). The data is always read from the hashed file itself;
the real name only says which operator and tensor it is.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

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
    is read without it.
    """
    mapping, bad, _ = read_mapping_rows(folder)
    return mapping, bad


def read_mapping_rows(folder: Path) -> tuple[dict[str, str], list[tuple[Path, str]], dict[str, str]]:
    """:func:`read_mapping` plus ``{hashed name: why its row was refused}``."""
    path = folder / "mapping.csv"
    mapping: dict[str, str] = {}
    bad: list[tuple[Path, str]] = []
    refused: dict[str, str] = {}
    if not path.is_file():
        return mapping, bad, refused
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as handle:
            rows = list(csv.reader(handle))
    except (OSError, csv.Error) as exc:
        return mapping, [(path, f"mapping.csv could not be read: {exc}")], refused
    first_row: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != 2:
            problem = f"{len(row)} columns, expected 2 (hashed_name,real_file_name)"
            bad.append((path, f"row {number}: {problem}"))
            if row[0].strip():
                refused.setdefault(row[0].strip(), f"mapping.csv row {number} was refused: {problem}")
            continue
        hashed, real = row[0].strip(), unguard(row[1].strip())
        problem = mapping_problem(hashed, real)
        if problem is None and hashed in first_row:
            problem = f"hashed name {hashed!r} is already mapped by row {first_row[hashed]}; the first row is kept"
        if problem:
            bad.append((path, f"row {number}: {problem}"))
            refused.setdefault(hashed, f"mapping.csv row {number} was refused: {problem}")
            continue
        first_row[hashed] = number
        mapping[hashed] = real
    return mapping, bad, refused


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
