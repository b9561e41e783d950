"""The runners of the command line: the main command (:func:`run_compare`: one ``match`` over
network, single-operator (``-d``) and batch (``-f DIR``) modes) and the ``gate`` / ``policy`` /
``consistency`` subcommands. Each runner returns the exit code; none raises ``typer.Exit``. This module loads
numpy, numba and the readers: the typer command modules import it only when a command runs."""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from convert.exits import EXIT_CANNOT_RUN, EXIT_OK
from convert.layouts import LayoutError
from convert.remote import is_url, local_path

from ..api import build_policy, check_rows, compare_network, gate_metrics, regate
from ..consistency.run import check_consistency
from ..diverge.verdicts import chain
from ..errors import CompareError, OptionError, OutputError
from ..kernels import native, preload, resolve_algorithms
from ..verdict.policy_file import starter_policy
from ..reports.cells import FloatFormat, parse_float_format
from ..reports.consistency import summary_lines, write_consistency_csv, write_consistency_json
from ..reports.divergence import divergence_lines, explain_lines
from ..reports.files import atomic_write_text, file_stamp, is_stream
from ..reports.mapping_table import mapping_path, write_mapping
from ..reports.network import Layout, TableFormat, write_report
from ..reports.single_op import MAX_LINES_DEFAULT, TOPN_DEFAULT, check_limits, render_top_table, write_operator_report
from ..reports.spool import PartSpool
from ..reports.staging import sweep_leftovers
from ..runs.batch import run_batch
from ..runs.each import selected_folder
from ..runs.mapping_table import mapping_table
from ..runs.op_range import OpChoice, parse_range, parse_select
from ..runs.single_op import compare_operator
from .echo import err
from .output import Outputs, ProgressBar, check_readable, failure_text, finish, outcome_line, preflight
from .startup import start_up_done
from .two_files import run_two_files

if TYPE_CHECKING:  # pragma: no cover
    from ..api import ComparisonResult
    from ..verdict.policy import Policy
    from ..reports.overflow import OverflowColumn


class Mode(Enum):
    """The main command's three modes, chosen by :func:`choose_mode`."""

    NETWORK = "network"  # the whole network, one row per tensor pair
    SINGLE_OP = "single-op"  # -d OP: one tensor element by element
    BATCH = "batch"  # -f DIR: every model of the dump tree with its rule file
    TWO_FILES = "two-files"  # -l FILE -r FILE: the two files' tensors compared as they are
    MAPPING_TABLE = "mapping-table"  # -map: the pairs listed, nothing compared


def choose_mode(single: "SingleOpArgs", fusion_rule: Optional[Path], left: "Path | str | None" = None,
                right: "Path | str | None" = None) -> Mode:
    """Two files (``-l`` and ``-r`` both local regular files) select two-file mode; else ``-d``
    selects single-operator mode; otherwise ``-f`` naming a folder selects batch mode. An fsspec URL
    (a ``str``) is never a local file."""
    if isinstance(left, Path) and isinstance(right, Path) and left.is_file() and right.is_file():
        return Mode.TWO_FILES
    if single.op is not None:
        return Mode.SINGLE_OP
    if fusion_rule is not None and fusion_rule.is_dir():
        return Mode.BATCH
    return Mode.NETWORK


@dataclass
class SingleOpArgs:
    """The single-operator options as given (``None`` = not given)."""

    op: Optional[str]
    tensor_type: Optional[str]
    index: Optional[int]
    topn: Optional[int]
    max_lines: Optional[int]
    no_details: bool

    def check(self) -> None:
        if self.op is None:
            given = [flag for flag, value in (("-t", self.tensor_type), ("-i", self.index), ("-n", self.topn),
                                              ("--max-lines", self.max_lines)) if value is not None]
            if self.no_details:
                given.append("--no-details")
            if given:
                verb = "applies" if len(given) == 1 else "apply"
                raise OptionError(f"{', '.join(given)} only {verb} to single-operator mode: add -d OP_NAME")
            return
        if not self.op.strip():
            raise OptionError("-d needs an operator name")
        kind = (self.tensor_type or "output").strip().lower()
        if kind not in ("input", "output"):
            raise OptionError(f"-t must be input or output, not {self.tensor_type!r}")
        self.tensor_type = kind


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


def run_batch_mode(left: Path, right: Path, rules_dir: Path, output: Optional[str], *, algorithm: str,
                   custom: Optional[Path], dump_version: Optional[int], layout, policy: "Policy | None",
                   max_cmp_size: int, quiet: bool, csv_flag: bool, quant_rule: Optional[Path],
                   float_format: object, ffts: bool = False) -> int:
    """``-f DIR``: compare every model of the dump tree with its rule file; one result file per model."""
    batch = run_batch(left, right, rules_dir, quant_rule=quant_rule, algorithms=algorithm, custom_dir=custom,
                      dump_version=dump_version, max_elements=max_cmp_size, extra_metrics=gate_metrics(policy),
                      ffts=ffts)
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
                               float_format=float_format)  # type: ignore[arg-type]
        typer.echo(f"result: {written}")
        if not quiet:
            err(f"{model}: " + ", ".join(f"{count} {status}" for status, count in result.summary().items()))
        rows.extend(result.rows)
    for note in batch.notes if not quiet else ():
        err(note)
    for leaf, message in batch.errors:
        err(f"not compared: {leaf}: {message}")
    return gate_exit(policy, rows, quiet)


def run_single_op(args: SingleOpArgs, left: Path, right: Path, fusion_rule: Optional[Path], output: Optional[str], *,
                  algorithm: str, custom: Optional[Path], dump_version: Optional[int], layout,
                  policy: "Policy | None", max_cmp_size: int, quiet: bool, quant_rule: Optional[Path] = None,
                  close_fusion_rule: Optional[Path] = None, mapping: Optional[Path] = None, ffts: bool = False) -> int:
    """``-d OP``: compare one tensor element by element, write the files, print the top-N tables.

    With ``--mapping`` the left operator's counterpart is the one the mapping file names (else the
    one the name rules find).

    Returns the exit code (0, or the verdict's code under a policy); CompareErrors propagate to
    the caller's handler (exit 2).
    """
    topn = args.topn if args.topn is not None else TOPN_DEFAULT
    max_lines = args.max_lines if args.max_lines is not None else MAX_LINES_DEFAULT
    check_limits(topn, max_lines)
    outdir = Path(output) if output else Path.cwd()
    if outdir.exists() and not outdir.is_dir():
        raise OptionError(f"-o {outdir}: in single-operator mode -o is an output folder, and this is a file")

    metrics = resolve_algorithms(algorithm)
    metrics += [name for name in gate_metrics(policy) if name not in metrics]
    result = compare_operator(left, right, args.op or "", fusion_rule=fusion_rule, quant_rule=quant_rule,
                              close_fusion_rule=close_fusion_rule, kind=args.tensor_type or "output",
                              index=args.index or 0, custom_dir=custom, dump_version=dump_version,
                              algorithms=metrics, mapping=mapping, ffts=ffts)
    files = write_operator_report(result, outdir, layout=layout, topn=topn, max_lines=max_lines,
                                  details=not args.no_details)
    if not quiet:
        if max_cmp_size:
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


@dataclass(frozen=True)
class CompareOptions:
    """The main command's options as given (see ``vcompare --help``); paths not checked yet.
    ``single``: the single-operator options (``-d`` and the options that go with it)."""

    #: A dump folder, or an fsspec URL (text): :mod:`convert.remote`.
    left: Path | str
    right: Path | str
    fusion_rule: Optional[Path]
    quant_rule: Optional[Path]
    close_fusion_rule: Optional[Path]
    output: Optional[str]
    csv_flag: bool
    algorithm: str
    custom: Optional[Path]
    dump_version: Optional[int]
    layout: str
    gate: tuple[str, ...]
    policy: Optional[Path]
    json_out: Optional[Path]
    junit_out: Optional[Path]
    digits: Optional[int]
    float_format: Optional[str]
    allow_same: bool
    progress: Optional[bool]
    max_cmp_size: int
    quiet: bool
    single: SingleOpArgs
    rank: Optional[str]
    iteration: Optional[str]
    graph: Optional[str]
    model_name: Optional[str]
    ge_graph: Optional[Path]
    mapping: Optional[Path]
    verdicts: bool = False
    explain: Optional[str] = None
    html_out: Optional[Path] = None
    consistency: Optional[str] = None
    dask_cluster: Optional[str] = None
    scheduler: Optional[str] = None
    #: ``-ffts``: FFTS+ slice files compared one by one (raw op names), not merged.
    ffts: bool = False
    mapping_table: bool = False
    op_range: Optional[str] = None
    op_select: Optional[str] = None

    def op_choice(self) -> "OpChoice | None":
        """``--range`` / ``--select`` parsed (syntax), checked against the other options; None
        when neither is given. Raises :class:`OptionError` (exit 2)."""
        if self.op_range is not None and self.op_select is not None:
            raise OptionError("--range and --select choose operators in two ways: give one of them")
        if self.op_range is None and self.op_select is None:
            return None
        flag = "--range" if self.op_range is not None else "--select"
        if self.single.op is not None:
            raise OptionError(f"{flag} chooses operators of a network comparison: not with -d (one operator)")
        if self.fusion_rule is None or self.fusion_rule.is_dir():
            raise OptionError(f"{flag} chooses operators by their id in the fusion rule: give one rule file with -f")
        return parse_range(self.op_range) if self.op_range is not None else parse_select(self.op_select or "")
    overflow: bool = False


def kernels_ready(quiet: bool) -> None:
    """Load the comparison kernels before a command's work (building them once, said on stderr),
    then end the start-up phase (:func:`~compare.cli.startup.start_up_done`)."""
    if not quiet and native.needs_build():
        err("compiling the comparison kernels for this machine (once; about 20 s)")
    preload(blas=False)  # load the cached kernels now (or numba, without its optional SciPy/BLAS probe)
    for line in native.notes:  # refused, damaged or unwritable kernel caches: said even with --quiet
        err(line)
    start_up_done()


def run_compare(o: CompareOptions) -> int:
    """The main command: kernels loaded, options checked, one mode run; returns the exit code
    (CompareErrors and refused ``-custom`` plugin folders: their message on stderr, exit 2)."""
    kernels_ready(o.quiet)
    left, right = o.left, o.right  # -d with --rank / --iteration may narrow them to one leaf
    try:
        report_layout = Layout(o.layout)  # checked by the command: vcompare or msaccucmp
        number_format = parse_float_format(o.digits, o.float_format)
        if o.policy is not None:
            check_readable(o.policy, "--policy")
        checked = build_policy(o.policy, o.gate)
        single = o.single
        mode = Mode.MAPPING_TABLE if o.mapping_table else choose_mode(single, o.fusion_rule, left, right)
        ops = o.op_choice()
        if mode not in (Mode.TWO_FILES, Mode.MAPPING_TABLE):  # two files: -t / -i choose a dump tensor (no -d)
            single.check()
        for path, flag in ((left, "-l"), (right, "-r"), (o.fusion_rule, "-f"), (o.quant_rule, "-q"),
                           (o.close_fusion_rule, "-cf"), (o.ge_graph, "--ge-graph"), (o.mapping, "--mapping")):
            if path is not None and not is_url(path):
                check_readable(path, flag)
        rules = {"quant_rule": o.quant_rule, "close_fusion_rule": o.close_fusion_rule}
        select = {"rank": o.rank, "iteration": o.iteration, "graph": o.graph, "model_name": o.model_name,
                  "ge_graph": o.ge_graph}
        if mode is not Mode.NETWORK:  # a network comparison localises URLs itself (a cluster's workers fetch parts)
            left, right = local_path(left), local_path(right)
        network_only = [flag for flag, given in (("--json", o.json_out is not None), ("--junit", o.junit_out is not None),
                                                 ("--html", o.html_out is not None), ("--verdicts", o.verdicts),
                                                 ("--explain", o.explain is not None),
                                                 ("--dask-cluster", o.dask_cluster is not None),
                                                 ("--scheduler", o.scheduler is not None),
                                                 ("--consistency", o.consistency is not None),
                                                 ("--overflow", o.overflow)) if given]
        if mode in (Mode.SINGLE_OP, Mode.BATCH, Mode.MAPPING_TABLE) and network_only:
            raise OptionError(f"{', '.join(network_only)} describe a network comparison; single-operator mode (-d), "
                              "batch mode (-f DIR) and the mapping table (-map) do not write them")
        if mode is Mode.TWO_FILES and o.overflow:
            raise OptionError("--overflow describes the operators of a dump folder, not two files")
        match mode:
            case Mode.SINGLE_OP:
                if any(v is not None for v in select.values()):
                    left, right = selected_folder(left, **select), selected_folder(right, **select)
                if o.fusion_rule is not None and o.fusion_rule.is_dir():
                    raise OptionError("-d compares one operator of one model: -f must be a rule file, not a folder")
                code = run_single_op(single, left, right, o.fusion_rule, o.output, algorithm=o.algorithm,
                                     custom=o.custom, dump_version=o.dump_version, layout=report_layout,
                                     policy=checked, max_cmp_size=o.max_cmp_size, quiet=o.quiet, mapping=o.mapping,
                                     ffts=o.ffts, **rules)
            case Mode.BATCH:
                assert o.fusion_rule is not None
                code = run_batch_mode(left, right, o.fusion_rule, o.output, algorithm=o.algorithm, custom=o.custom,
                                      dump_version=o.dump_version, layout=report_layout, policy=checked,
                                      max_cmp_size=o.max_cmp_size, quiet=o.quiet, csv_flag=o.csv_flag,
                                      quant_rule=o.quant_rule, float_format=number_format, ffts=o.ffts)
            case Mode.MAPPING_TABLE:
                code = run_mapping_table(o, ops, select)
            case Mode.TWO_FILES:
                if ops is not None:
                    raise OptionError("--range / --select choose operators of dump folders, not of two files")
                code = run_two_files(o, checked, layout=report_layout, number_format=number_format)
            case Mode.NETWORK:
                code = _network(o, checked, layout=report_layout, number_format=number_format, rules=rules,
                                select=select, ops=ops)
                if o.consistency is not None:
                    code = _worst_exit(code, _consistency_too(o))
    except CompareError as exc:
        err(f"error: {exc}")
        return EXIT_CANNOT_RUN
    except ValueError as exc:
        # a refused -custom plugin folder (convert.layouts.LayoutError) cannot run either: exit 2
        if not isinstance(exc, LayoutError):
            raise
        err(f"error: -custom {o.custom}: {exc}" if o.custom is not None else f"error: {exc}")
        return EXIT_CANNOT_RUN
    return code


def run_mapping_table(o: CompareOptions, ops: "OpChoice | None", select: dict) -> int:
    """``-map``: the mapping table written (its path on stdout, the notes on stderr), nothing
    compared; exit 0, or 2 (CompareErrors propagate to :func:`run_compare`)."""
    single = o.single
    refused = [flag for flag, given in (("-d", single.op is not None), ("-t", single.tensor_type is not None),
                                        ("-i", single.index is not None), ("-n", single.topn is not None),
                                        ("--max-lines", single.max_lines is not None),
                                        ("--no-details", single.no_details), ("--mapping", o.mapping is not None),
                                        ("-cf", o.close_fusion_rule is not None)) if given]
    if refused:
        raise OptionError(f"-map lists the pairs of a whole network through -f / -q: not with {', '.join(refused)}")
    if o.fusion_rule is not None and o.fusion_rule.is_dir():
        raise OptionError("-map lists the pairs of one model: -f must be a rule file, not a folder")
    target = mapping_path(o.output)
    preflight(target)
    table = mapping_table(o.left, o.right, o.fusion_rule, quant_rule=o.quant_rule, dump_version=o.dump_version,
                          ops=ops, select=select)
    written = write_mapping(table.rows, target, op_sequence=table.selected)
    if not o.quiet:
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


def _consistency_too(o: CompareOptions) -> int:
    """``--consistency GROUPS`` on the main command: :func:`run_consistency` on the ``-l`` tree,
    its CSV beside the ``-o`` table (``{stem}_consistency.csv``; none without ``-o``)."""
    table = Path(o.output) if o.output is not None and Path(o.output).suffix.lower() in (".csv", ".txt") else None
    output = table.with_name(f"{table.stem}_consistency.csv") if table is not None else None
    assert o.consistency is not None
    return run_consistency(ConsistencyArgs(
        tree=Path(local_path(o.left)), groups=o.consistency, output=output, json_out=None, tensors=None, tolerance=None,
        iteration=o.iteration, graph=o.graph, model_name=o.model_name, dump_version=o.dump_version, quiet=o.quiet))


def _network(o: CompareOptions, policy: "Policy | None", *, layout: Layout, number_format: "FloatFormat",
             rules: dict, select: dict, ops: "OpChoice | None" = None) -> int:
    """The network comparison: outputs checked, compared (with the progress bar), written; the
    notes, the summary and the first divergence printed (and the ``--explain`` chain). Returns the
    exit code; CompareErrors propagate (exit 2)."""
    started = time.time()
    outputs = Outputs.plan(o.output, o.csv_flag, o.json_out, o.junit_out, o.html_out, verdicts=o.verdicts)
    if o.overflow and outputs.table_format is TableFormat.PARQUET:
        raise OptionError(f"--overflow adds a column to -o .csv / .txt and to the rows of --json; -o {o.output}: a "
                          "parquet table has no OverFlow column")
    bar = ProgressBar(o.progress)
    spool = _cluster_spool(o, outputs, layout, number_format)
    try:
        result = compare_network(o.left, o.right, o.fusion_rule, algorithms=o.algorithm, custom_dir=o.custom,
                                 dump_version=o.dump_version, max_elements=o.max_cmp_size, mapping=o.mapping,
                                 policy=policy, allow_same=o.allow_same, progress=bar, cluster=o.dask_cluster,
                                 scheduler=o.scheduler, on_dashboard=None if o.quiet else _dashboard_line,
                                 ffts=o.ffts, ops=ops, spool=spool, **rules, **select)
    except BaseException:
        _spool_kept(spool)
        raise
    finally:
        bar.close()
    result.options.update(layout=layout.value, float_format=number_format.text, csv=o.csv_flag,
                          verdicts=o.verdicts, explain=o.explain)
    swept = [sweep_leftovers(folder, before=started) for folder in outputs.folders()]
    network = result.network
    column, overflow_notes = _overflow_column(o, result)
    try:
        written, failed = outputs.write(result, layout=layout, float_format=number_format, overflow=column)
    except BaseException:
        _spool_kept(spool)
        raise
    if spool is not None:
        if any(label == "result" for label, _path in written):
            spool.remove()
        else:
            _spool_kept(spool)
    for sweep, folder in zip(swept, outputs.folders()):
        if sweep.removed or sweep.completed:
            err(f"cleaned up {len(sweep.removed) + len(sweep.completed)} leftover temporary file(s) or folder(s) of "
                f"killed runs from {folder}")
    if not o.quiet:
        for note in result.notes + overflow_notes:
            err(note)
    elif network is not None and network.same_data is not None:
        err(f"warning: {network.same_data}")
    lines = divergence_lines(result.localisation)
    if o.quiet:  # one line, and only when something diverges
        lines = lines[:1] if result.first_divergence is not None else []
    after = list(lines)
    if o.explain is not None and result.localisation is not None:
        after += explain_lines(o.explain, chain(result.localisation, o.explain), result.localisation)
    return finish(result, written, failed, o.quiet, after=after)


def _overflow_column(o: CompareOptions, result: "ComparisonResult") -> tuple["OverflowColumn | None", list[str]]:
    """``--overflow``: the OverFlow column (the left runs' Opdebug records looked for and linked)
    and its notes; ``(None, [])`` without the option or a network result."""
    network = result.network
    if not o.overflow or network is None:
        return None, []
    from ..runs.overflow import opdebug_column  # here: only --overflow reads the Opdebug records

    lefts = network.part_lefts or [network.left]
    return opdebug_column(lefts, by_part=len(network.parts) > 1)
def _cluster_spool(o: CompareOptions, outputs: Outputs, layout: Layout, number_format: "FloatFormat"
                   ) -> PartSpool | None:
    """The spool of a cluster run (``<table>.parts/``, :mod:`compare.reports.spool`), said on stderr
    before the run (so that a client killed outright has said where its finished parts are). None
    for a table written through a device or pipe (``-o /dev/stdout``): no folder beside it is the user's."""
    if (o.dask_cluster is None and o.scheduler is None) or outputs.table is None or is_stream(outputs.table):
        return None
    spool = PartSpool(outputs.table, table_format=outputs.table_format, layout=layout,  # type: ignore[arg-type]
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
        outputs = Outputs(None, None, None, json_out, junit_out)
        for path in (json_out, junit_out):
            if path is not None:
                preflight(path)
        result = regate(saved, policy=policy, gates=list(gates))
        written, failed = outputs.write(result, layout=None, float_format=None)
    except CompareError as exc:
        err(f"error: {exc}")
        return EXIT_CANNOT_RUN
    return finish(result, written, failed, quiet)


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
