"""The mapping table file (``-map``): ``mapping_{YYYYmmddHHMMSS}.csv``, or the ``-o`` ``.csv`` path.

Header (the reference tool's): ``Index,OpType,NPUDump,GroundTruth,TensorIndex,NPUDumpPath,GroundTruthPath``,
with ``OpSequence`` (the rule op id) as the second column when ``--range`` / ``--select`` chose
the operators. An absent value (no tensor, no file on that side, no op type) is ``NaN``; paths
are written as found (the folder given, joined with the file name). CSV as the reference writes
it: ``csv`` minimal quoting, ``\\r\\n`` line endings; every text cell passes the spreadsheet
guard of :func:`compare.reports.cells.text_cell`. Written atomically.
"""

from __future__ import annotations

import csv
import io
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import OptionError
from .cells import text_cell
from .files import atomic_write_text, is_stream, stamped_in_folder


@dataclass(frozen=True)
class MappingRow:
    """One row of the mapping table: the report Index, the rule op id (``op_sequence``, None
    outside a rule), the op type, the NPUDump / GroundTruth cells, the TensorIndex (None for an
    operator-level row) and the two files (None when that side has no tensor)."""

    index: int
    op_sequence: int | None
    op_type: str | None
    npu_dump: str
    ground_truth: str
    tensor_index: str | None
    npu_path: Path | None
    golden_path: Path | None


#: The columns without OpSequence.
MAPPING_HEADER = ("Index", "OpType", "NPUDump", "GroundTruth", "TensorIndex", "NPUDumpPath", "GroundTruthPath")


def mapping_header(op_sequence: bool) -> list[str]:
    """The header, with ``OpSequence`` second when ``op_sequence``."""
    cols = list(MAPPING_HEADER)
    if op_sequence:
        cols.insert(1, "OpSequence")
    return cols


def render_mapping(rows: Iterable[MappingRow], *, op_sequence: bool) -> str:
    """The CSV text of the rows (OpSequence second when ``op_sequence``)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(mapping_header(op_sequence))
    for row in rows:
        cells = [str(row.index), text_cell(row.op_type), text_cell(row.npu_dump), text_cell(row.ground_truth),
                 text_cell(row.tensor_index), text_cell(_path(row.npu_path)), text_cell(_path(row.golden_path))]
        if op_sequence:
            cells.insert(1, text_cell(row.op_sequence))
        writer.writerow(cells)
    return buf.getvalue()


def _path(path: Path | None) -> str | None:
    return os.fspath(path) if path is not None else None


def mapping_path(output: str | None, now: time.struct_time | None = None) -> Path:
    """Where the table goes: ``-o`` ending in ``.csv`` as given; ``-o`` a folder (existing, ending in
    a separator, or without suffix) or no ``-o`` (the current folder): ``mapping_{YYYYmmddHHMMSS}.csv`` there.
    Any other ``-o`` extension is refused (:class:`OptionError`)."""
    stamped = stamped_in_folder(output, "mapping", now=now)
    if stamped is not None:
        return stamped
    path = Path(output)  # type: ignore[arg-type]  # not None: stamped_in_folder said so
    if path.suffix.lower() != ".csv" and not is_stream(path):  # -o /dev/stdout: written through
        raise OptionError(f"-o {output}: the mapping table (-map) is written as .csv (or give a folder)")
    return path


def write_mapping(rows: Sequence[MappingRow], path: Path, *, op_sequence: bool) -> Path:
    """Write the table to ``path`` (:class:`~compare.errors.OutputError` when it cannot be)."""
    return atomic_write_text(path, render_mapping(rows, op_sequence=op_sequence))
