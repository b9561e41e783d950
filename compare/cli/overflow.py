"""``vcompare overflow -d DUMP -o OUT [-n N]``: the overflow records of a dump, decoded and linked to
the operators that overflowed (:func:`compare.runs.overflow.analyse_overflow`, docs/overflow.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from convert.exits import EXIT_CANNOT_RUN, EXIT_OK, EXIT_SOME_FAILED

from ..errors import CompareError
from .echo import err
from .helppage import PanelHelp

overflow_app = typer.Typer(add_completion=False, context_settings={"help_option_names": ["-h", "--help"]},
                           rich_markup_mode=None, pretty_exceptions_enable=False)

OVERFLOW_EXAMPLES = """Examples:

  # the first overflow record below a dump tree, by timestamp, its operator:
  vcompare overflow -d npu_dump/20240315101530 -o out/overflow

  # the first five overflow records, with the reference tool's option names:
  vcompare overflow -d npu_dump -out out/overflow -n 5
"""


# no_args_is_help: a bare ``vcompare overflow`` prints this help on stderr and exits 2
@overflow_app.command(cls=PanelHelp, no_args_is_help=True, epilog=OVERFLOW_EXAMPLES,
                      help="Decode the overflow records (Opdebug.Node_OpDebug.*) under a dump folder, link each to "
                           "the operator dump it reports and write overflow_summary_{time}.txt and .json "
                           "(docs/overflow.md). Exit 0 analysed, 1 some record could not be decoded, 2 cannot run.")
def overflow_command(
    dump: Path = typer.Option(..., "-d", "--dump", "--dump_path",
                              help="Dump folder; overflow records are looked for up to 30 levels below it."),
    output: Path = typer.Option(..., "-o", "-out", "--output", help="Output folder (created if missing)."),
    count: int = typer.Option(1, "-n", "--count", min=1, max=5,
                              help="Analyse the first N overflow records by timestamp, 1-5 [1]."),
    quiet: bool = typer.Option(False, "--quiet", help="Only the written files and failures."),
) -> None:
    """``vcompare overflow``: see the command's help."""
    raise typer.Exit(run_overflow(dump, output, count=count, quiet=quiet))


def run_overflow(dump: Path, output: Path, *, count: int, quiet: bool) -> int:
    """The analysis run, its summary files written, one line per finding printed; the exit code
    (0 analysed, 1 some record not decoded, 2 cannot run)."""
    from ..reports.files import preflight  # here: see below
    from ..reports.overflow import write_overflow_summary  # here: loads numpy (--help stays fast)
    from ..runs.overflow import analyse_overflow  # here: loads numpy and the dump readers
    from .output import check_readable  # here: output.py loads the report writers

    try:
        check_readable(dump, "-d")
        preflight(output / "overflow_summary.txt")
        analysis = analyse_overflow(dump, output, count=count)
        txt, doc = write_overflow_summary(analysis, output)
    except CompareError as exc:
        err(f"error: {exc}")
        return EXIT_CANNOT_RUN
    typer.echo(f"summary: {txt}")
    typer.echo(f"json: {doc}")
    if not quiet:
        for note in analysis.notes:
            err(note)
        for path, why in analysis.skipped:
            err(f"not read: {path}: {why}")
        for k, finding in enumerate(analysis.findings, start=1):
            entry, linked = finding.entry, finding.linked
            if entry is None:
                err(f"[{k}] {finding.real_name}: not decoded: {finding.problem}")
                continue
            target = (f"{linked.op_type} {linked.recorded_op_name or linked.op_name}" if linked is not None
                      else f"no op dump ({finding.link_problem})")
            err(f"[{k}] {entry.kind} task {entry.task_id} stream {entry.stream_id} status {entry.status}: {target}")
    err(f"{analysis.found} overflow record(s) under {dump}, {analysis.selected} analysed"
        + (f", {analysis.undecodable} not decoded" if analysis.undecodable else ""))
    return EXIT_SOME_FAILED if analysis.undecodable else EXIT_OK
