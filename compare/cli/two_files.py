"""The runners of two-file comparisons: the main command given two files (``vcompare -l FILE -r FILE``)
and the ``file_compare`` subcommand. Each returns the exit code: 0 (or the gate's 1 / 3), and 2
when nothing could be compared, an input is refused or an output cannot be written."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from convert.exits import EXIT_CANNOT_RUN, EXIT_OK

from ..api import ComparisonResult, check_rows
from ..errors import CompareError, OptionError, OutputError
from ..records import TensorKind
from ..reports.cells import FloatFormat
from ..reports.file_compare import write_file_result
from ..reports.files import preflight
from ..reports.junit import write_junit
from ..reports.network import Layout, TableFormat, render_txt, resolve_output, write_report
from ..reports.result_json import write_json
from ..request import CompareRequest
from ..runs.two_files import FileKind, FilesResult, TensorChoice, compare_files, compare_npy_files
from .echo import err
from .output import check_readable, count_line, finish

if TYPE_CHECKING:  # pragma: no cover
    from ..verdict.policy import Policy


def tensor_choice(request: CompareRequest) -> TensorChoice | None:
    """``-t`` / ``-i`` as the dump tensor to compare (None when neither is given; ``-t`` alone: index 0).
    ``-t`` is input or output (:meth:`CompareRequest.validate` refused anything else)."""
    if request.tensor_type is None and request.index is None:
        return None
    return TensorChoice(TensorKind(request.tensor_kind), request.index or 0)


def _result(files: FilesResult, policy: "Policy | None", o: CompareRequest) -> ComparisonResult:
    inputs: dict[str, object] = {"left": str(o.left), "right": str(o.right), "left_kind": files.left.kind.value,
                                 "right_kind": files.right.kind.value,
                                 "policy": policy.source if policy is not None else None}
    options = {"algorithms": o.algorithms, "dump_version": o.dump_version, "max_elements": o.max_elements,
               "tensor_type": o.tensor_type, "index": o.index, "mode": "two-files"}
    return ComparisonResult(files.rows, files.metrics, check_rows(files.rows, policy), policy, list(files.notes),
                            inputs, options)


def run_two_files(o: CompareRequest, policy: "Policy | None", *, layout: Layout, number_format: FloatFormat) -> int:
    """``vcompare -l FILE -r FILE``: the files compared, the table printed (stdout) and written to
    ``-o`` (``.csv`` / ``.txt`` / ``.parquet``, or ``.json`` for the JSON result), ``--json`` and
    ``--junit`` when given; nothing is written without them. Exit 2 when no pair could be compared
    (the reasons on stderr); CompareErrors propagate to the caller (exit 2). The request is
    validated (:meth:`CompareRequest.validate`: no folder, rule or operator option)."""
    choice = tensor_choice(o)
    json_paths = [Path(o.json_out)] if o.json_out is not None else []
    table: Path | None = None
    table_format = TableFormat.CSV
    if o.output is not None and Path(o.output).suffix.lower() == ".json":
        json_paths.append(Path(o.output))
    elif o.output is not None:
        table, table_format = resolve_output(o.output, csv_flag=o.csv)
    for path in (table, *json_paths, o.junit_out):
        if path is not None:
            preflight(Path(path))
    files = compare_files(Path(o.left), Path(o.right), algorithms=o.algorithms, choice=choice,
                          dump_version=o.dump_version, max_elements=o.max_elements)
    result = _result(files, policy, o)
    if not o.quiet:
        typer.echo(render_txt(files.rows, files.metrics, layout, float_format=number_format,
                              left_address=files.left.kind is FileKind.DUMP,
                              right_address=files.right.kind is FileKind.DUMP), nl=False)
        for note in files.notes:
            err(note)
    jobs: list[tuple[str, object]] = []
    if table is not None:
        jobs.append(("result", lambda: write_report(
            files.rows, table, files.metrics, table_format=table_format, layout=layout,
            left_address=files.left.kind is FileKind.DUMP, right_address=files.right.kind is FileKind.DUMP,
            float_format=number_format)))
    for path in json_paths:
        jobs.append(("json", lambda path=path: write_json(result.to_dict(), path)))
    junit = Path(o.junit_out) if o.junit_out is not None else None
    if junit is not None:
        jobs.append(("junit", lambda: write_junit(result.to_junit(), junit)))
    written: list[tuple[str, Path]] = []
    failed: list[OutputError] = []
    for label, job in jobs:
        try:
            written.append((label, job()))  # type: ignore[operator]
        except OutputError as exc:
            failed.append(exc)
    if files.compared == 0:  # the outputs hold the rows and their reasons; the run itself failed
        for label, path in written:
            typer.echo(f"{label}: {path}")
        err(count_line(result.summary(), 0))
        for exc in failed:
            err(f"error: {exc}")
        reasons = "; ".join(reason for row in files.rows for reason in row.reasons) or "no tensor pair"
        err(f"error: nothing compared: {reasons}")
        return EXIT_CANNOT_RUN
    return finish(result, written, failed, o.quiet)


def run_file_compare(my: Path, golden: Path, output: Path, *, quiet: bool) -> int:
    """``vcompare file_compare``: the result file written, its path on stdout, the values as a
    two-line table on stderr; exit 2 for a refused input (not ``.npy``, shapes differ, unreadable)
    or an unwritable folder."""
    try:
        for path, flag in ((my, "-m"), (golden, "-g")):
            check_readable(path, flag)
        if output.exists() and not output.is_dir():
            raise OptionError(f"-out {output}: file_compare writes into a folder, and this is a file")
        result = compare_npy_files(my, golden)
        (row,) = result.rows
        values = {name: row.metrics.get(name) for name in result.metrics}
        written = write_file_result(output, values)
    except CompareError as exc:
        err(f"error: {exc}")
        return EXIT_CANNOT_RUN
    if not quiet:
        for reason in row.reasons:
            err(f"{row.tensor_id}: {reason}")
        cells = [(name, "NaN" if value is None else f"{value:.6f}") for name, value in values.items()]
        widths = [max(len(name), len(cell)) for name, cell in cells]
        err("  ".join(name.ljust(w) for (name, _), w in zip(cells, widths)).rstrip())
        err("  ".join(cell.ljust(w) for (_, cell), w in zip(cells, widths)).rstrip())
    typer.echo(f"result: {written}")
    return EXIT_OK
