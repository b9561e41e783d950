"""The runners of the command line: the main command (:func:`run_compare`: the request validated,
then one ``match`` over its mode: network, single-operator (``-d``), batch (``-f DIR``), two files,
mapping table) and the ``gate`` / ``policy`` / ``consistency`` subcommands. Each runner returns the
exit code; none raises ``typer.Exit``. This module loads numpy, numba and the readers: the typer
command modules import it only when a command runs."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from convert.exits import EXIT_CANNOT_RUN, EXIT_OK
from convert.layouts import LayoutError
from convert.remote import is_url, local_path

from ..api import build_policy, check_rows, compare_request, gate_metrics, regate
from ..consistency.run import check_consistency
from ..diverge.verdicts import chain
from ..errors import CompareError, OptionError, OutputError
from ..kernels import native, preload
from ..reports.cells import FloatFormat, parse_float_format
from ..reports.consistency import summary_lines, write_consistency_csv, write_consistency_json
from ..reports.divergence import divergence_lines, explain_lines
from ..reports.files import atomic_write_text, file_stamp, is_stream, preflight
from ..reports.mapping_table import mapping_path, write_mapping
from ..reports.network import Layout, TableFormat, write_report
from ..reports.single_op import MAX_LINES_DEFAULT, TOPN_DEFAULT, check_limits, render_top_table, write_operator_report
from ..reports.spool import PartSpool
from ..reports.staging import sweep_leftovers
from ..request import CompareRequest, Mode
from ..runs.batch import run_batch_request
from ..runs.folders import op_choice
from ..runs.mapping_table import mapping_table
from ..runs.outputs import OutputKind, OutputPlan, WriteOptions
from ..runs.single_op import operator_request
from ..verdict.policy_file import starter_policy
from .echo import err
from .output import ProgressBar, check_readable, failure_text, finish, note_lines, outcome_line
from .startup import keep_until_exit, start_up_done
from .two_files import run_two_files

if TYPE_CHECKING:  # pragma: no cover
    from ..api import ComparisonResult
    from ..reports.overflow import OverflowColumn
    from ..runs.op_range import OpChoice
    from ..verdict.policy import Policy


def gate_exit(policy: "Policy | None", rows: list, quiet: bool) -> int:
    """Batch and single-operator modes: check ``rows`` against the policy, print the failures,
    return the verdict's exit code (0 without a policy)."""
    verdict = check_rows(rows, policy)
    if policy is None:
        return EXIT_OK
    err(outcome_line(verdict, True))
    if not quiet or not verdict.passed:
        for text in verdict.errors:
            err(f"  {text}")
        for failure in verdict.failures:
            err(f"  {failure_text(failure)}")
    return verdict.exit_code


def run_batch_mode(request: CompareRequest, policy: "Policy | None", *, layout: Layout,
                   float_format: FloatFormat) -> int:
    """``-f DIR``: compare every model of the dump tree with its rule file; one result file per model."""
    batch = run_batch_request(request, extra_metrics=gate_metrics(policy))
    output, quiet = request.output, request.quiet
    outdir = Path(output) if output else Path.cwd()
    if outdir.exists() and not outdir.is_dir():
        raise OptionError(f"-o {outdir}: with a folder of rules (-f DIR) -o must be an output folder")
    stamp = file_stamp()
    rows = []
    for item in batch:
        model, result = item
        left_npy, right_npy = result.has_npy
        written = write_report(result.rows, outdir / item.output_name(stamp), result.metrics, layout=layout,
                               left_address=not left_npy, right_address=not right_npy,
                               float_format=float_format)
        typer.echo(f"result: {written}")
        if not quiet:
            err(f"{model}: " + ", ".join(f"{count} {status}" for status, count in result.summary().items()))
        rows.extend(result.rows)
    for note in batch.notes if not quiet else ():
        err(note)
    for leaf, message in batch.errors:
        err(f"not compared: {leaf}: {message}")
    return gate_exit(policy, rows, quiet)


def run_single_op(request: CompareRequest, policy: "Policy | None", *, layout: Layout) -> int:
    """``-d OP``: compare one tensor element by element (:func:`compare.runs.single_op.operator_request`),
    write the files, print the top-N tables.

    With ``--mapping`` the left operator's counterpart is the one the mapping file names (else the
    one the name rules find).

    Returns the exit code (0, or the verdict's code under a policy); CompareErrors propagate to
    the caller's handler (exit 2).
    """
    topn = request.topn if request.topn is not None else TOPN_DEFAULT
    max_lines = request.max_lines if request.max_lines is not None else MAX_LINES_DEFAULT
    check_limits(topn, max_lines)
    output, quiet = request.output, request.quiet
    outdir = Path(output) if output else Path.cwd()
    if outdir.exists() and not outdir.is_dir():
        raise OptionError(f"-o {outdir}: in single-operator mode -o is an output folder, and this is a file")

    result = operator_request(request, extra_metrics=gate_metrics(policy))
    files = write_operator_report(result, outdir, layout=layout, topn=topn, max_lines=max_lines,
                                  details=not request.no_details)
    if not quiet:
        if request.max_elements:
            err("note: -max is ignored in single-operator mode (every element is compared)")
        for note in result.plugin_notes:
            err(note)
        for note in result.notes:
            err(f"{result.tensor_id}: {note}")
        for which in ("absolute", "relative"):
            if layout is Layout.MSACCUCMP:
                err(f"{which.capitalize()} Error TopN")
            typer.echo(render_top_table(result, which, topn, layout))
        if files.mapping is not None:
            err(f"long name shortened to {files.prefix} (see {files.mapping})")
        if files.swept.completed:
            err(f"finished swapping in the result of a killed run: {len(files.swept.completed)} file(s) in {outdir}")
        if files.swept.removed:
            err(f"removed {len(files.swept.removed)} leftover temporary file(s) or folder(s) of killed runs "
                f"from {outdir}")
        err(f"{result.tensor_id}: {result.count} elements, {len(files.details)} detail file(s) in {outdir}")
    typer.echo(f"result: {files.summary}")
    return gate_exit(policy, [result.to_metric_row()], quiet)


def kernels_ready(quiet: bool) -> None:
    """Load the comparison kernels before a command's work (building them once, said on stderr),
    then end the start-up phase (:func:`~compare.cli.startup.start_up_done`)."""
    if not quiet and native.needs_build():
        err("compiling the comparison kernels for this machine (once; about 20 s)")
    preload(blas=False)  # load the cached kernels now (or numba, without its optional SciPy/BLAS probe)
    for line in native.notes:  # refused, damaged or unwritable kernel caches: said even with --quiet
        err(line)
    start_up_done()


def run_compare(request: CompareRequest) -> int:
    """The main command: kernels loaded, the request validated (:meth:`CompareRequest.validate`),
    its mode run; returns the exit code (CompareErrors and refused ``-custom`` plugin folders: their
    message on stderr, exit 2)."""
    kernels_ready(request.quiet)
    try:
        report_layout = Layout(request.layout)  # checked by the command: vcompare or msaccucmp
        number_format = parse_float_format(request.digits, request.float_format)
        if request.policy is not None:
            check_readable(Path(request.policy), "--policy")
        checked = build_policy(request.policy, request.gates)
        mode = request.validate()
        ops = op_choice(request)
        for path, flag in ((request.left, "-l"), (request.right, "-r"), (request.fusion_rule, "-f"),
                           (request.quant_rule, "-q"), (request.close_fusion_rule, "-cf"),
                           (request.ge_graph, "--ge-graph"), (request.mapping, "--mapping"),
                           (request.layer_mapping, "-lm"), (request.data_mapping, "-dm"), (request.cell_mapping, "-cm"),
                           (request.api_mapping if not isinstance(request.api_mapping, bool) else None, "-am")):
            if path is not None and not is_url(path):
                check_readable(Path(path), flag)  # type: ignore[arg-type]
        if mode is not Mode.NETWORK:  # a network comparison localises URLs itself (a cluster's workers fetch parts)
            request = replace(request, left=local_path(request.left), right=local_path(request.right))
        match mode:
            case Mode.SINGLE_OP:  # msprobe's mapping files read once, here (the network mode reads them in the API)
                code = run_single_op(replace(request, mapping=request.pairing_mapping()), checked,
                                     layout=report_layout)
            case Mode.BATCH:
                code = run_batch_mode(request, checked, layout=report_layout, float_format=number_format)
            case Mode.MAPPING_TABLE:
                code = run_mapping_table(request, ops)
            case Mode.TWO_FILES:
                code = run_two_files(request, checked, layout=report_layout, number_format=number_format)
            case Mode.NETWORK:
                code = _network(request, checked, layout=report_layout, number_format=number_format)
                if request.consistency is not None:
                    code = _worst_exit(code, _consistency_too(request))
    except CompareError as exc:
        err(f"error: {exc}")
        return EXIT_CANNOT_RUN
    except ValueError as exc:
        # a refused -custom plugin folder (convert.layouts.LayoutError) cannot run either: exit 2
        if not isinstance(exc, LayoutError):
            raise
        custom = request.custom_dir
        err(f"error: -custom {custom}: {exc}" if custom is not None else f"error: {exc}")
        return EXIT_CANNOT_RUN
    return code


def run_mapping_table(request: CompareRequest, ops: "OpChoice | None") -> int:
    """``-map``: the mapping table written (its path on stdout, the notes on stderr), nothing
    compared; exit 0, or 2 (CompareErrors propagate to :func:`run_compare`)."""
    target = mapping_path(request.output)
    preflight(target)
    table = mapping_table(request.left, request.right, request.fusion_rule, quant_rule=request.quant_rule,
                          dump_version=request.dump_version, ops=ops, select=request.select)
    written = write_mapping(table.rows, target, op_sequence=table.selected)
    if not request.quiet:
        for note in table.notes:
            err(note)
        err(f"mapping table: {len(table.rows)} row(s); nothing compared")
    typer.echo(f"mapping: {written}")
    return EXIT_OK


#: Exit codes from the least to the most serious (0 passed, 3 incomplete, 1 failed, 2 could not run).
_SEVERITY = (EXIT_OK, 3, 1, EXIT_CANNOT_RUN)


def _worst_exit(*codes: int) -> int:
    """The most serious of several exit codes (a signal's 130/143 above all)."""
    return max(codes, key=lambda c: _SEVERITY.index(c) if c in _SEVERITY else len(_SEVERITY))


def _consistency_too(request: CompareRequest) -> int:
    """``--consistency GROUPS`` on the main command: :func:`run_consistency` on the ``-l`` tree,
    its CSV beside the ``-o`` table file, whatever its form (``{stem}_consistency.csv``; none without
    ``-o`` or with ``-o`` naming a folder)."""
    o = request.output
    table = Path(o) if o is not None and Path(o).suffix.lower() in (".csv", ".txt", ".parquet", ".xlsx") else None
    output = table.with_name(f"{table.stem}_consistency.csv") if table is not None else None
    assert request.consistency is not None
    return run_consistency(ConsistencyArgs(
        tree=Path(local_path(request.left)), groups=request.consistency, output=output, json_out=None, tensors=None,
        tolerance=None, iteration=request.iteration, graph=request.graph, model_name=request.model_name,
        dump_version=request.dump_version, quiet=request.quiet))


def _network(request: CompareRequest, policy: "Policy | None", *, layout: Layout, number_format: "FloatFormat") -> int:
    """The network comparison: outputs checked, compared (with the progress bar), written; the
    notes, the summary and the first divergence printed (and the ``--explain`` chain). Returns the
    exit code; CompareErrors propagate (exit 2)."""
    started = time.time()
    o = request
    outputs = OutputPlan.of(request)
    if o.overflow and outputs.table is not None and outputs.table.kind is OutputKind.PARQUET:
        raise OptionError(f"--overflow adds a column to -o .csv / .txt and to the rows of --json; -o {o.output}: a "
                          "parquet table has no OverFlow column")
    bar = ProgressBar(o.progress_bar)
    spool = _cluster_spool(o, outputs, layout, number_format)
    try:
        # the policy built (and its file checked) once, before the run: the request carries it as built
        result = compare_request(replace(request, policy=policy, gates=()), progress=bar, spool=spool,
                                 on_dashboard=None if o.quiet else _dashboard_line)
    except BaseException:
        _spool_kept(spool)
        raise
    finally:
        bar.close()
    keep_until_exit(result)
    result.options.update(layout=layout.value, float_format=number_format.text, csv=o.csv,
                          verdicts=o.verdicts, explain=o.explain)
    swept = [sweep_leftovers(folder, before=started) for folder in outputs.folders()]
    network = result.network
    column, overflow_notes = _overflow_column(o, result)
    try:
        outcome = outputs.write(result, WriteOptions(layout=layout, float_format=number_format, verdicts=o.verdicts,
                                                     overflow=column))
    except BaseException:
        _spool_kept(spool)
        raise
    if spool is not None:
        if any(written.label == "result" for written in outcome.written):
            spool.remove()
        else:
            _spool_kept(spool)
    for sweep, folder in zip(swept, outputs.folders()):
        if sweep.removed or sweep.completed:
            err(f"cleaned up {len(sweep.removed) + len(sweep.completed)} leftover temporary file(s) or folder(s) of "
                f"killed runs from {folder}")
    if not o.quiet:
        part_notes = network.part_notes if network is not None else []
        for note in note_lines(result.notes + overflow_notes, part_notes, verbose=o.verbose):
            err(note)
    elif network is not None and network.same_data is not None:
        err(f"warning: {network.same_data}")
    lines = divergence_lines(result.localisation)
    if o.quiet:  # one line, and only when something diverges
        lines = lines[:1] if result.first_divergence is not None else []
    after = list(lines)
    unexplained: OptionError | None = None
    if o.explain is not None and result.localisation is not None:
        try:
            after += explain_lines(o.explain, chain(result.localisation, o.explain))
        except OptionError as exc:  # an operator the report does not have: said after the summary, exit 2
            unexplained = exc
    code = finish(result, outcome.written, outcome.failed, o.quiet, after=after)
    if unexplained is None:
        return code
    err(f"error: --explain {o.explain}: {unexplained}")
    return _worst_exit(code, EXIT_CANNOT_RUN)


def _overflow_column(o: CompareRequest, result: "ComparisonResult") -> tuple["OverflowColumn | None", list[str]]:
    """``--overflow``: the OverFlow column (the left runs' Opdebug records looked for and linked)
    and its notes; ``(None, [])`` without the option or a network result."""
    network = result.network
    if not o.overflow or network is None:
        return None, []
    from ..runs.overflow import opdebug_column  # here: only --overflow reads the Opdebug records

    lefts = network.part_lefts or [network.left]
    return opdebug_column(lefts, by_part=len(network.parts) > 1)


def _cluster_spool(o: CompareRequest, outputs: OutputPlan, layout: Layout, number_format: "FloatFormat"
                   ) -> PartSpool | None:
    """The spool of a cluster run (``<table>.parts/``, :mod:`compare.reports.spool`), said on stderr
    before the run (so that a client killed outright has said where its finished parts are). None
    for a table written through a device or pipe (``-o /dev/stdout``): no folder beside it is the user's."""
    table = outputs.table
    if (o.cluster is None and o.scheduler is None) or table is None or is_stream(table.path):
        return None
    spool = PartSpool(table.path, table_format=TableFormat(table.kind.value), layout=layout,
                      float_format=number_format)
    if not o.quiet:
        err(f"dask: each finished part is written to {spool.folder} as it arrives (removed once the report is "
            "written)")
    return spool


def _spool_kept(spool: PartSpool | None) -> None:
    """Say where the finished parts of a cluster run that wrote no report are (and why a spool stopped)."""
    if spool is None:
        return
    if spool.written:
        err(f"the {len(spool.written)} finished part(s) are kept in {spool.folder} (arrivals.csv lists them)")
    if spool.problem is not None:
        err(f"the spool of finished parts stopped: {spool.problem}")


def _dashboard_line(link: str) -> None:
    """The Dask dashboard's address, on stderr when the cluster is up (``--dask-cluster`` / ``--scheduler``)."""
    err(f"dask dashboard: {link}")


def run_gate(saved: Path, *, policy: Optional[Path], gates: tuple[str, ...], json_out: Optional[Path],
             junit_out: Optional[Path], quiet: bool) -> int:
    """``vcompare gate RESULT``: a saved result checked again; its outputs written; the exit code."""
    start_up_done()
    try:
        if policy is not None:
            check_readable(policy, "--policy")
        outputs = OutputPlan.saved(json=json_out, junit=junit_out)
        result = regate(saved, policy=policy, gates=list(gates))
        outcome = outputs.write(result)
    except CompareError as exc:
        err(f"error: {exc}")
        return EXIT_CANNOT_RUN
    return finish(result, outcome.written, outcome.failed, quiet)


def run_policy_init(target: Path, *, init: bool, force: bool) -> int:
    """``vcompare policy --init [PATH]``: the commented starter policy written; the exit code."""
    try:
        if not init:
            raise OptionError("vcompare policy: nothing to do; vcompare policy --init [PATH] writes a starter file")
        if target.exists() and not force:
            raise OptionError(f"{target} exists; add --force to overwrite it")
        written = atomic_write_text(target, starter_policy())
    except CompareError as exc:
        err(f"error: {exc}")
        return EXIT_CANNOT_RUN
    typer.echo(f"policy: {written}")
    err(f"edit it, then: vcompare -l LEFT -r RIGHT ... --policy {written}")
    return EXIT_OK


@dataclass(frozen=True)
class ConsistencyArgs:
    """``vcompare consistency``'s options as given (see its ``--help``); paths not checked yet."""

    tree: Path
    groups: str
    output: Optional[Path]
    json_out: Optional[Path]
    tensors: Optional[str]
    tolerance: Optional[float]
    iteration: Optional[str]
    graph: Optional[str]
    model_name: Optional[str]
    dump_version: Optional[int]
    quiet: bool


def run_consistency(args: ConsistencyArgs) -> int:
    """``vcompare consistency``: the check run, its reports written, the notes and summary printed.

    Returns 0 consistent, 1 a rank disagrees, 3 some values could not be checked (and none
    differs), 2 cannot run (a bad option, not a dump tree with ranks, an output that cannot be
    written: the other output and the summary are still given).
    """
    kernels_ready(args.quiet)
    try:
        check_readable(args.tree, "-l")
        if args.output is not None and args.output.suffix.lower() != ".csv":
            raise OptionError(f"-o {args.output}: the consistency report is written as .csv (--json FILE writes "
                              "the JSON document)")
        for path in (args.output, args.json_out):
            if path is not None:
                preflight(path)
        result = check_consistency(args.tree, args.groups, iteration=args.iteration, graph=args.graph,
                                   model_name=args.model_name, tensors=args.tensors, tolerance=args.tolerance,
                                   version=args.dump_version)
    except CompareError as exc:
        err(f"error: {exc}")
        return EXIT_CANNOT_RUN
    failed: list[OutputError] = []
    for label, path, write in (("report", args.output, write_consistency_csv),
                               ("json", args.json_out, write_consistency_json)):
        if path is None:
            continue
        try:
            typer.echo(f"{label}: {write(result, path)}")
        except OutputError as exc:
            failed.append(exc)
    if not args.quiet:
        for note in result.notes:
            err(note)
    for line in summary_lines(result, quiet=args.quiet):
        err(line)
    for exc in failed:
        err(f"error: {exc}")
    return EXIT_CANNOT_RUN if failed else result.exit_code
