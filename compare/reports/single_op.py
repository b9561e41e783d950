"""Single-operator reports: summary txt, per-element CSV chunks, top-N CSVs and tables.

Files, with ``P = {op}_{input|output}_{index}`` (``/`` in the op name becomes ``_``):

- ``P_summary.txt`` -- ``Key:value`` lines (:func:`render_summary`);
- ``P_{start}.csv`` -- one row per element, at most ``max_lines`` rows per file; ``start`` is the
  flat index of the file's first element (``_0``, ``_1000000``, ...);
- ``P_absolute_error_topn.csv`` / ``P_relative_error_topn.csv`` -- the worst elements, same row
  format;
- with ``--layout msaccucmp`` also ``P.npy``, the prepared left array (as the reference writes).

Layouts:

``vcompare`` (default)
    ``Index,<axes>,Left,Right,RelativeError,AbsoluteError``; numbers ``%.6f``, non-finite values
    ``nan`` / ``inf`` / ``-inf``, an undefined relative error ``-``. Summary: ``TotalCount``,
    ``LeftOp``, ``RightOp``, ``Format``, Min/Max Absolute/Relative error, then the network
    metrics as the network report prints them (minus the two Max* already given).
``msaccucmp``
    The reference's cells: ``Index,<format>,NPUDump,GroundTruth,AbsoluteError,RelativeError``,
    every number followed by a TAB (``0.000008\\t``), a relative error that is NaN/inf written
    ``-`` without TAB, an infinite absolute error written ``nan``, bool data as ``True``/``False``
    with ``-`` errors; in the top-N files every ``nan``/``inf`` substring becomes ``-``. Summary
    with ``NPUDump:`` / ``GroundTruth:`` (names joined by spaces) and no metric lines.

Spreadsheet safety: the per-element rows hold only numbers (and ``-`` / ``nan`` tokens) that the
report rendered; the header cells and the op names in ``simple_op_mapping.csv`` come from the
inputs and are neutralised (:func:`compare.reports.cells.neutralise_text`: a leading
``= + - @ %``, also after blanks, gets a ``'``; CR, LF and the other line breaks become
``\\r``, ``\\n`` escapes -- :mod:`convert.textcells`); the summary's names are escaped the same way.

Per-element rows are rendered without a per-row Python loop (:mod:`compare.reports.vectext`).

One tensor's files are one result, swapped in whole (:mod:`compare.reports.staging`): they are
written into a fresh staging folder ``.vcmp-XXXXXXXX.stage`` inside the output folder, then
renamed into place together, and only then are the files of an earlier run of the same tensor
that this run did not write again removed (chunk CSVs of another ``max_lines``, the detail files
after ``details=False``, ``P.npy`` after a default-layout run). An interrupted run (Ctrl-C,
SIGTERM) leaves the earlier result exactly as it was, or -- when the signal came during the swap,
which finishes first -- the complete new one. Before writing, the leftovers of killed runs in the
folder are completed or removed (:func:`~compare.reports.staging.sweep_leftovers`).

Long names: when ``P`` plus the longest suffix (``_relative_error_topn.csv``) exceeds 255 bytes,
``P`` becomes the first 150 bytes of the op name, ``-``, 16 hex digits of SHA-1 of ``P``, and
``_{kind}_{index}``; the pair is recorded in ``simple_op_mapping.csv`` in the output folder.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from convert.textcells import escape_line_breaks

from ..errors import OptionError, OutputError
from .cells import NOT_COMPUTED, metric_cell, neutralise_text, std_cell
from .files import NAME_MAX, atomic_write_bytes, os_reason
from .network import Layout
from .staging import ResultStage, Sweep, sweep_leftovers
from .vectext import const_block, fixed6_block, int_block, join_rows, token_block

if TYPE_CHECKING:
    from ..runs.single_op import OperatorResult

#: Default and allowed range of rows per detail file (``--max-lines``).
MAX_LINES_DEFAULT = 1_000_000
MAX_LINES_RANGE = (10_000, 1_000_000)
#: Default and allowed range of ``--topn``.
TOPN_DEFAULT = 20
TOPN_RANGE = (1, 10_000)
#: Longest suffix appended to the prefix.
_LONGEST_SUFFIX = len("_relative_error_topn.csv")
_HEAD_BYTES = 150
MAPPING_FILE = "simple_op_mapping.csv"
#: Rows rendered per block while streaming a detail file (bounds the temporary memory).
_BLOCK_ROWS = 1 << 18

ERROR_KINDS = ("absolute", "relative")


@dataclass
class SingleOpFiles:
    """What :func:`write_operator_report` wrote (final paths) and removed.

    ``removed``: files of an earlier run of the same tensor that this run did not write again;
    ``swept``: what the cleaning of killed runs' leftovers did in the folder before writing.
    """

    prefix: str
    summary: Path
    details: list[Path] = field(default_factory=list)
    topn: dict[str, Path] = field(default_factory=dict)
    npy: Path | None = None
    mapping: Path | None = None
    removed: list[Path] = field(default_factory=list)
    swept: Sweep = Sweep((), ())


# ------------------------------------------------------------------------------ names


def original_prefix(op: str, kind: str, index: int) -> str:
    """The detail files' name prefix before shortening: ``{op}_{kind}_{index}``, path separators as ``_``."""
    return f"{op.replace('/', '_').replace(os.sep, '_')}_{kind}_{index}"


def file_prefix(op: str, kind: str, index: int) -> tuple[str, bool]:
    """``(prefix, shortened)``: the file-name prefix of a tensor's files (module doc)."""
    full = original_prefix(op, kind, index)
    if len(full.encode()) + _LONGEST_SUFFIX <= NAME_MAX:
        return full, False
    digest = hashlib.sha1(full.encode()).hexdigest()[:16]
    head = op.replace("/", "_").encode()[:_HEAD_BYTES].decode("utf-8", "ignore")
    return f"{head}-{digest}_{kind}_{index}", True


def _record_mapping(outdir: Path, prefix: str, op: str, kind: str, index: int) -> Path:
    path = outdir / MAPPING_FILE
    header = ["FilePrefix", "OpName", "TensorType", "Index"]
    rows: list[list[str]] = []
    if path.exists():
        with path.open(newline="", encoding="utf-8") as handle:
            rows = [r for r in csv.reader(handle)][1:]
    row = [neutralise_text(prefix), neutralise_text(op), kind, str(index)]
    if row not in rows:
        rows.append(row)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    atomic_write_bytes(path, buf.getvalue().encode())
    return path


# ------------------------------------------------------------------------------ atomic writes



def detail_header(result: OperatorResult, layout: Layout | str = Layout.VCOMPARE) -> str:
    """The header line of the detail and top-N CSVs.

    The format cell may come from the rule JSON (a golden layout name), so every cell is made
    safe (:func:`compare.reports.cells.neutralise_text`: formula guard, line breaks
    escaped) and quoted by the CSV rules when it holds a comma or a quote; the rows below it are
    numbers the report rendered.
    """
    layout = Layout(layout)
    if layout is Layout.MSACCUCMP:
        cells = ["Index", result.reference_format, "NPUDump", "GroundTruth", "AbsoluteError", "RelativeError"]
    else:
        cells = ["Index", result.format, "Left", "Right", "RelativeError", "AbsoluteError"]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([neutralise_text(cell) for cell in cells])
    return buf.getvalue()[:-1]


def render_rows(result: OperatorResult, indexes: np.ndarray, layout: Layout | str = Layout.VCOMPARE) -> bytes:
    """The CSV rows (no header) of the elements ``indexes``, ``\\n``-terminated, vectorised."""
    layout = Layout(layout)
    idx = np.asarray(indexes, dtype=np.int64)
    rows = idx.shape[0]
    if rows == 0:
        return b""
    comma = const_block(rows, ",")
    space = const_block(rows, " ")
    blocks: list[np.ndarray] = [int_block(idx), comma]
    coords = result.coordinates(idx)
    for k, axis in enumerate(coords):
        blocks.append(int_block(axis))
        blocks.append(space if k < len(coords) - 1 else comma)
    x = result.left_values[idx]
    y = result.right_values[idx]
    abs_err = result.absolute_error[idx]
    rel = result.relative_error[idx]
    if layout is Layout.MSACCUCMP:
        everything = np.ones(rows, dtype=bool)
        if result.is_bool:
            left = token_block(rows, [(x == 0, "False\t")], default="True\t")
            right = token_block(rows, [(y == 0, "False\t")], default="True\t")
            blocks += [left, comma, right, comma, token_block(rows, [], "-\t"), comma,
                       token_block(rows, [(everything, "-")])]
        else:
            blocks += [fixed6_block(x, suffix="\t"), comma, fixed6_block(y, suffix="\t"), comma,
                       fixed6_block(abs_err, suffix="\t", tokens=[(np.isinf(abs_err), "nan\t")]), comma,
                       fixed6_block(rel, suffix="\t", tokens=[(np.isnan(rel), "-")])]
    else:
        blocks += [fixed6_block(x), comma, fixed6_block(y), comma,
                   fixed6_block(rel, tokens=[(np.isnan(rel), "-")]), comma, fixed6_block(abs_err)]
    return join_rows(blocks)


def _chunks(count: int, max_lines: int) -> Iterator[tuple[int, int]]:
    if count == 0:
        yield 0, 0
        return
    for start in range(0, count, max_lines):
        yield start, min(start + max_lines, count)


def detail_writer(result: OperatorResult, start: int, stop: int,
                  layout: Layout | str = Layout.VCOMPARE) -> Callable[[BinaryIO], None]:
    """What writes the detail file of elements ``[start, stop)``: header, then the rows block by block."""
    layout = Layout(layout)
    header = (detail_header(result, layout) + "\n").encode()

    def write(handle: BinaryIO) -> None:
        handle.write(header)
        for lo in range(start, stop, _BLOCK_ROWS):
            hi = min(lo + _BLOCK_ROWS, stop)
            handle.write(render_rows(result, np.arange(lo, hi, dtype=np.int64), layout))

    return write


# ------------------------------------------------------------------------------ summary


def render_summary(result: OperatorResult, layout: Layout | str = Layout.VCOMPARE) -> str:
    """The ``P_summary.txt`` text (module doc); line breaks in the names are escaped
    (``\\r``, ``\\n``: :func:`convert.textcells.escape_line_breaks`), so one key is one line."""
    layout = Layout(layout)
    s = result.summary
    lines = [f"TotalCount:{s['TotalCount']}"]
    if layout is Layout.MSACCUCMP:
        lines += [f"NPUDump:{escape_line_breaks(' '.join(_names(result.left_op)))}",
                  f"GroundTruth:{escape_line_breaks(' '.join(_names(result.right_op))) or '*'}",
                  f"Format:{escape_line_breaks(result.reference_format)}"]
    else:
        lines += [f"LeftOp:{escape_line_breaks(result.left_op)}",
                  f"RightOp:{escape_line_breaks(result.right_op)}", f"Format:{escape_line_breaks(result.format)}"]
    for key in ("MinAbsoluteError", "MaxAbsoluteError", "MinRelativeError", "MaxRelativeError"):
        value = s[key]
        lines.append(f"{key}:{NOT_COMPUTED if value is None else f'{value:.6f}'}")
    if layout is not Layout.MSACCUCMP:
        for name in result.metrics:
            if name in ("MaxAbsoluteError", "MaxRelativeError"):
                continue
            cell = std_cell(result.std) if name == "StandardDeviation" else metric_cell(result.metrics[name])
            lines.append(f"{name}:{cell}")
    return "\n".join(lines) + "\n"


def _names(cell: str) -> list[str]:
    return [n for n in cell.split(",") if n]


# ------------------------------------------------------------------------------ top-N


def top_rows(result: OperatorResult, which: str, topn: int, layout: Layout | str = Layout.VCOMPARE) -> str:
    """The top-N CSV text (header + rows) of ``which`` (``absolute`` / ``relative``) errors."""
    layout = Layout(layout)
    idx = result.top(which, topn, reference=layout is Layout.MSACCUCMP)
    text = render_rows(result, idx, layout).decode()
    if layout is Layout.MSACCUCMP:
        text = text.replace("nan", "-").replace("inf", "-")
    return detail_header(result, layout) + "\n" + text


def render_top_table(result: OperatorResult, which: str, topn: int, layout: Layout | str = Layout.VCOMPARE) -> str:
    """The top-N table printed on stdout: cells padded to the widest of their column.

    vcompare: a title line, then columns separated by two spaces. msaccucmp: the reference's
    table (cells left-justified, separated by a TAB, no title).
    """
    layout = Layout(layout)
    lines = top_rows(result, which, topn, layout).splitlines()
    table = list(csv.reader(line.replace("\t", "") for line in lines))  # the header may quote a cell
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    if layout is Layout.MSACCUCMP:
        return "\n".join("\t".join(c.ljust(w) for c, w in zip(row, widths)) for row in table) + "\n"
    title = f"Top {len(table) - 1} {which} errors of {result.tensor_id}"
    body = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
    return "\n".join([title, *body]) + "\n"


# ------------------------------------------------------------------------------ everything


def check_limits(topn: int, max_lines: int) -> None:
    """Raise :class:`OptionError` when ``topn`` / ``max_lines`` are outside their ranges."""
    lo, hi = TOPN_RANGE
    if not lo <= int(topn) <= hi:
        raise OptionError(f"--topn must be in {lo}..{hi}, not {topn}")
    lo, hi = MAX_LINES_RANGE
    if not lo <= int(max_lines) <= hi:
        raise OptionError(f"--max-lines must be in {lo}..{hi}, not {max_lines}")


def result_names(prefix: str) -> Callable[[str], bool]:
    """Whether a file name is one of the files of the tensor result ``prefix`` (module doc).

    ``P_summary.txt``, ``P_<digits>.csv``, ``P_absolute_error_topn.csv``,
    ``P_relative_error_topn.csv``, ``P.npy``. Another tensor's files never match: every prefix
    ends with ``{input|output}_{index}``, which ``P_<digits>`` never does, so no other prefix is
    ``P_<digits>`` and another prefix's chunk ``Q_<digits>.csv`` is ``P_<digits>.csv`` only when
    ``Q == P``.
    """
    fixed = {f"{prefix}_summary.txt", f"{prefix}.npy", *(f"{prefix}_{which}_error_topn.csv" for which in ERROR_KINDS)}
    chunk = re.compile(re.escape(prefix) + r"_\d+\.csv")
    return lambda name: name in fixed or chunk.fullmatch(name) is not None


def write_operator_report(
    result: OperatorResult,
    outdir: str | os.PathLike[str],
    *,
    layout: Layout | str = Layout.VCOMPARE,
    topn: int = TOPN_DEFAULT,
    max_lines: int = MAX_LINES_DEFAULT,
    details: bool = True,
) -> SingleOpFiles:
    """Write the summary, the detail chunks (unless ``details=False``) and the two top-N files.

    The files of one call are one result, swapped in whole (module doc): an exception or a signal
    before the swap leaves the folder's earlier result of the tensor as it was; files of an
    earlier run of the same tensor that this run did not write again are removed after the swap,
    so the folder never mixes two runs. The leftovers of killed runs in the folder are completed
    or removed first. ``simple_op_mapping.csv`` (long names) is shared by the folder's results
    and written on its own, before the result: its rows only say which name stands for which.
    """
    started = time.time()
    layout = Layout(layout)
    check_limits(topn, max_lines)
    out = Path(outdir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(out, f"cannot create the folder: {os_reason(exc)}") from None
    swept = sweep_leftovers(out, before=started)
    prefix, shortened = file_prefix(result.op, result.kind, result.index)
    files = SingleOpFiles(prefix=prefix, summary=out / f"{prefix}_summary.txt", swept=swept)
    if shortened:
        files.mapping = _record_mapping(out, prefix, result.op, result.kind, result.index)
    with ResultStage(out) as stage:
        if layout is Layout.MSACCUCMP:
            array = np.asarray(result.left).reshape(result.shape) if result.count == int(np.prod(result.shape)) \
                else np.asarray(result.left)
            buf = io.BytesIO()
            np.save(buf, array)
            files.npy = stage.write_bytes(f"{prefix}.npy", buf.getvalue())
        if details:
            for start, stop in _chunks(result.count, max_lines):
                files.details.append(stage.write(f"{prefix}_{start}.csv", detail_writer(result, start, stop, layout)))
        for which in ERROR_KINDS:
            files.topn[which] = stage.write_bytes(f"{prefix}_{which}_error_topn.csv",
                                                  top_rows(result, which, topn, layout).encode())
        stage.write_bytes(files.summary.name, render_summary(result, layout).encode())
        files.removed = stage.commit(result_names(prefix))
    return files


__all__ = [
    "MAX_LINES_DEFAULT",
    "MAX_LINES_RANGE",
    "TOPN_DEFAULT",
    "TOPN_RANGE",
    "SingleOpFiles",
    "check_limits",
    "detail_header",
    "detail_writer",
    "file_prefix",
    "render_rows",
    "render_summary",
    "render_top_table",
    "result_names",
    "top_rows",
    "write_operator_report",
]
