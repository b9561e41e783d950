"""``vcompare``: the command line. Options -> public API; errors -> exit codes, in one place.

Commands: ``vcompare -l LEFT -r RIGHT ...`` (compare; options only), ``vcompare gate RESULT``
(re-check a saved result, :func:`compare.api.regate`) and ``vcompare policy --init [PATH]``
(write the starter policy). :func:`run` picks the command from the first argument: the main
command takes no positional argument, so ``gate`` / ``policy`` there can only be a subcommand
(a folder named ``gate`` is given with ``-l gate`` and stays an option value).

Exit codes (README.md and docs/ci-gate.md document the same table):

- 0: the comparison ran and every gate passed, or there was no gate (``Verdict.exit_code``);
- 1: an accuracy gate failed -- a computed value violated a bound, or a waiver has expired;
- 3: incomplete -- only rows (or gated metrics) that should have been compared and were not failed;
- 2: could not run: bad option or policy, unreadable rule file, no valid dump, a gated
  comparison of a dump with itself, and every failure to write an output file (one line naming
  the path; the comparison's summary is still printed and the other outputs still written);
- 130 / 143: stopped by Ctrl-C / SIGTERM (:mod:`convert.signals`).
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from .errors import EXIT_CANNOT_RUN, EXIT_OK, CompareError, OptionError, OutputError

if TYPE_CHECKING:  # pragma: no cover
    from .api import ComparisonResult
    from .policy import Policy
    from .records import CheckFailure, MetricRow, Verdict

app = typer.Typer(
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

EXAMPLES = """
Examples:


  # Ascend dump vs Caffe/TF .npy goldens, through the ATC fusion rule (om -> json):
  vcompare -l dump/20240315101530 -r caffe_npy -f resnet50.json -o result.csv


  # NPU vs NPU (same model, two runs), as a CI accuracy gate:
  vcompare -l run1 -r run2 -o out/ --gate "CosineSimilarity>=0.99" --gate "MaxAbsoluteError<=0.001"


  # only three metrics, txt table as in the manual:
  vcompare -l npu -r golden -f model.json -alg 0,1,KullbackLeiblerDivergence -o result.txt


  # one operator element by element (summary, per-element CSVs, top-N worst elements):
  vcompare -l npu -r golden -f model.json -o detail/ -d pool5 -t output -i 0 -n 50


  # MindSpore GPU run vs Ascend run (npy / .bin dump trees), every iteration in turn:
  vcompare -l gpu_dump -r ascend_dump --rank 0 --iteration all -o out/


  # MindSpore vs a Caffe/TF golden folder through a names file (left,right per line):
  vcompare -l ms_dump -r caffe_npy --mapping map.csv


  # TF NPU dump: the model_name folder of the graph in a GE build file:
  vcompare -l npu_dump -r tf_golden --ge-graph ge_proto_00292_Build.txt


  # CI accuracy gate (docs/ci-gate.md): policy file, JSON and JUnit results, exit 0/1/3/2:
  vcompare -l npu -r golden -f model.json -o out/result.csv --policy gates.toml --json out/result.json


  # re-check a saved result without recomputing (same verdict, JSON and JUnit as the live run):
  vcompare gate out/result.json --policy gates.toml --junit out/junit.xml


  # write a commented starter policy file:
  vcompare policy --init gates.toml
"""


def _err(message: str) -> None:
    typer.echo(f"vcompare: {message}", err=True)


def _version_callback(value: bool) -> None:
    if value:
        from .api import tool_version

        typer.echo(f"vcompare {tool_version()}")
        raise typer.Exit(EXIT_OK)


@app.command(help="Compare two operator dumps tensor by tensor and write a result table.\n" + EXAMPLES)
def compare(
    left: Path = typer.Option(..., "-l", "--left", "-m", "--my_dump_path",
                              help="My Output: dump folder (or any parent of time/device/model/model_id/data_index)."),
    right: Path = typer.Option(..., "-r", "--right", "-g", "--golden_dump_path",
                               help="Ground Truth: golden .npy folder or another dump folder."),
    fusion_rule: Optional[Path] = typer.Option(None, "-f", "--fusion-rule", "--fusion_rule_file",
                                               help="ATC om->json network file (atc --mode=1)."),
    quant_rule: Optional[Path] = typer.Option(None, "-q", "--quant-rule", "--quant_fusion_rule_file",
                                              help="AMCT quantization fusion rule JSON (see docs/quant.md)."),
    close_fusion_rule: Optional[Path] = typer.Option(None, "-cf", "--close-fusion-rule", "--close_fusion_rule_file",
                                                     help="om->json of the same model built with fusion off "
                                                          "(NPU fused vs NPU un-fused)."),
    output: Optional[str] = typer.Option(None, "-o", "-out", "--output",
                                         help="Result file (.csv or .txt) or directory (-> result_{YYYYmmddHHMMSS}.csv)."),
    csv_flag: bool = typer.Option(False, "-csv", "--csv", help="Write CSV even when -o ends in .txt."),
    algorithm: str = typer.Option("all", "-alg", "--algorithm",
                                  help="Metrics by index 0-9 or name, comma-separated, e.g. 0,1,KullbackLeiblerDivergence."),
    custom: Optional[Path] = typer.Option(None, "-custom", "--custom", "-c", "--custom_script_path",
                                          help="Plugin root holding format_convert/convert_{FROM}_to_{TO}.py."),
    dump_version: Optional[int] = typer.Option(None, "-v", "--dump-version", min=1, max=2,
                                               help="Force dump layout: 1 = protobuf, 2 = binary (default: detect per file)."),
    layout: str = typer.Option("vcompare", "--layout", help="Column layout: vcompare or msaccucmp."),
    gate: List[str] = typer.Option([], "--gate", help='Accuracy gate, repeatable, added to --policy: '
                                                      '"CosineSimilarity>=0.99".'),
    policy: Optional[Path] = typer.Option(None, "--policy",
                                          help="Accuracy policy file (TOML, docs/policy.md; vcompare policy --init "
                                               "writes one). With it or --gate: exit 1 gate failed, 3 incomplete."),
    json_out: Optional[Path] = typer.Option(None, "--json",
                                            help="Also write the whole run as JSON (docs/result-json.md)."),
    junit_out: Optional[Path] = typer.Option(None, "--junit",
                                             help="Also write a JUnit XML report (one testcase per tensor pair)."),
    digits: Optional[int] = typer.Option(None, "--digits",
                                         help="Decimals of the metric cells of -o .csv/.txt [6, as the reference]."),
    float_format: Optional[str] = typer.Option(None, "--float-format",
                                               help="Metric cells: fixed (%.6f, or --digits) or repr (full float64)."),
    allow_same: bool = typer.Option(False, "--allow-same",
                                    help="Allow a gated comparison of a dump with itself (else exit 2)."),
    progress: Optional[bool] = typer.Option(None, "--progress/--no-progress",
                                            help="Progress bar on stderr [on a terminal, after 2 s]."),
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_version_callback,
                                 help="Print vcompare's version and exit."),
    max_cmp_size: int = typer.Option(0, "-max", "--max-cmp-size", min=0,
                                     help="Compare only the first N flattened elements of each tensor (0 = all)."),
    quiet: bool = typer.Option(False, "--quiet", help="Print only the result path and failures."),
    op: Optional[str] = typer.Option(None, "-d", "--op", "-op", "--op_name",
                                     help="Single-operator mode: compare this left operator element by element; "
                                          "-o is then the output folder."),
    tensor_type: Optional[str] = typer.Option(None, "-t", "--tensor-type",
                                              help="Single-operator mode: input or output tensor [output]."),
    index: Optional[int] = typer.Option(None, "-i", "--index", min=0,
                                        help="Single-operator mode: index of the input/output tensor [0]."),
    topn: Optional[int] = typer.Option(None, "-n", "--topn", min=1, max=10000,
                                       help="Single-operator mode: rows of the top-N error tables, 1-10000 [20]."),
    max_lines: Optional[int] = typer.Option(None, "--max-lines", "-ml", "--max_line", min=10000, max=1000000,
                                            help="Single-operator mode: rows per detail CSV, 10000-1000000 [1000000]."),
    no_details: bool = typer.Option(False, "--no-details", "--ignore_single_op_result",
                                    help="Single-operator mode: write the summary and top-N files only."),
    rank: Optional[str] = typer.Option(None, "--rank",
                                       help="Dump trees: rank/device to compare: N, list 0,1, range 0-3, or all "
                                            "(each in turn) [only one, else the first]."),
    iteration: Optional[str] = typer.Option(None, "--iteration",
                                            help="Dump trees: iteration to compare: N, list, range 0|5-8, or all "
                                                 "(each in turn) [only one, else the newest]."),
    graph: Optional[str] = typer.Option(None, "--graph",
                                        help="MindSpore dump trees: graph id: N, list, or all (each in turn) "
                                             "[the graph with most dump files]."),
    model_name: Optional[str] = typer.Option(None, "--model-name",
                                             help="TF-NPU / GE trees: the model_name folder to read [the one "
                                                  "whose ops pair with the other side]."),
    ge_graph: Optional[Path] = typer.Option(None, "--ge-graph",
                                            help="TF-NPU / GE trees: ge_proto_*_Build.txt whose first graph names "
                                                 "the model_name folder."),
    mapping: Optional[Path] = typer.Option(None, "--mapping",
                                           help="Pair operators through a names file (CSV left,right[:index]; "
                                                "YAML if PyYAML is installed) first, the others by name; with -d "
                                                "the left operator meets the one it maps to."),
) -> None:
    from .kernels import native, preload

    if not quiet and native.needs_build():
        _err("compiling the comparison kernels for this machine (once; about 20 s)")
    preload(blas=False)  # load the cached kernels now (or numba, without its optional SciPy/BLAS probe)
    for line in native.notes:  # refused, damaged or unwritable kernel caches: said even with --quiet
        _err(line)
    _start_up_done()
    from .reports.network import Layout

    try:
        try:
            report_layout = Layout(layout)
        except ValueError:
            raise typer.BadParameter(f"--layout must be vcompare or msaccucmp, not {layout!r}") from None
        from .api import build_policy
        from .reports.cells import parse_float_format

        number_format = parse_float_format(digits, float_format)
        if policy is not None:
            _check_readable(policy, "--policy")
        checked = build_policy(policy, gate)
        single = _SingleOpArgs(op, tensor_type, index, topn, max_lines, no_details)
        single.check()
        for path, flag in ((left, "-l"), (right, "-r"), (fusion_rule, "-f"), (quant_rule, "-q"),
                           (close_fusion_rule, "-cf"), (ge_graph, "--ge-graph"), (mapping, "--mapping")):
            if path is not None:
                _check_readable(path, flag)
        rules = {"quant_rule": quant_rule, "close_fusion_rule": close_fusion_rule}
        select = {"rank": rank, "iteration": iteration, "graph": graph, "model_name": model_name,
                  "ge_graph": ge_graph}
        modes = single.op is not None or (fusion_rule is not None and fusion_rule.is_dir())
        if modes and (json_out is not None or junit_out is not None):
            raise OptionError("--json and --junit describe a network comparison; single-operator mode (-d) and "
                              "batch mode (-f DIR) do not write them")
        if single.op is not None:
            if any(v is not None for v in select.values()):
                from .runs.each import selected_folder

                left, right = selected_folder(left, **select), selected_folder(right, **select)
            if fusion_rule is not None and fusion_rule.is_dir():
                raise OptionError("-d compares one operator of one model: -f must be a rule file, not a folder")
            _single_op(single, left, right, fusion_rule, output, algorithm=algorithm, custom=custom,
                       dump_version=dump_version, layout=report_layout, policy=checked, max_cmp_size=max_cmp_size,
                       quiet=quiet, mapping=mapping, **rules)
        if fusion_rule is not None and fusion_rule.is_dir():
            _batch(left, right, fusion_rule, output, algorithm=algorithm, custom=custom, dump_version=dump_version,
                   layout=report_layout, policy=checked, max_cmp_size=max_cmp_size, quiet=quiet, csv_flag=csv_flag,
                   quant_rule=quant_rule, float_format=number_format)
        outputs = _Outputs.plan(output, csv_flag, json_out, junit_out)
        from .api import compare_network

        bar = _ProgressBar(progress)
        try:
            result = compare_network(left, right, fusion_rule, algorithms=algorithm, custom_dir=custom,
                                     dump_version=dump_version, max_elements=max_cmp_size, mapping=mapping,
                                     policy=checked, allow_same=allow_same, progress=bar, **rules, **select)
        finally:
            bar.close()
        result.options.update(layout=report_layout.value, float_format=number_format.text, csv=csv_flag)
        written, failed = outputs.write(result, layout=report_layout, float_format=number_format)
    except CompareError as exc:
        _err(f"error: {exc}")
        raise typer.Exit(EXIT_CANNOT_RUN) from None
    except ValueError as exc:
        # a refused -custom plugin folder (convert.layouts.LayoutError) cannot run either: exit 2
        from convert.layouts import LayoutError

        if not isinstance(exc, LayoutError):
            raise
        _err(f"error: -custom {custom}: {exc}" if custom is not None else f"error: {exc}")
        raise typer.Exit(EXIT_CANNOT_RUN) from None

    network = result.network
    if not quiet:
        for note in result.notes:
            _err(note)
    elif network is not None and network.same_data is not None:
        _err(f"warning: {network.same_data}")
    raise typer.Exit(_finish(result, written, failed, quiet))


@dataclass
class _Outputs:
    """Where a network comparison writes: the ``-o`` table, ``--json``, ``--junit``.

    :meth:`plan` checks them all before the comparison runs (an ``-o`` extension vcompare does not
    write, a folder in the way, a parent that is a file or not writable: exit 2 at once, nothing
    computed in vain); :meth:`write` writes each one and collects the failures instead of
    stopping at the first, so one unwritable file never loses the others.
    """

    table: Path | None
    table_format: object
    output: Optional[str]
    json: Path | None
    junit: Path | None

    @classmethod
    def plan(cls, output: Optional[str], csv_flag: bool, json_out: Optional[Path], junit_out: Optional[Path]
             ) -> "_Outputs":
        from .reports.network import resolve_output

        table, table_format = resolve_output(output, csv_flag=csv_flag)
        for path in (table, json_out, junit_out):
            if path is not None:
                _preflight(Path(path))
        return cls(table, table_format, output, json_out, junit_out)

    def write(self, result: "ComparisonResult", *, layout: object, float_format: object
              ) -> tuple[list[tuple[str, Path]], list[OutputError]]:
        """Write every output: ``([(label, path) written], [failures])``."""
        from .reports.network import write_report

        written: list[tuple[str, Path]] = []
        failed: list[OutputError] = []
        network = result.network
        jobs: list[tuple[str, object]] = []
        if network is not None and network.stats is not None and not network.rows:
            from .reports.stats import write_stats_report

            jobs.append(("result", lambda: write_stats_report(network.stats, self.output)))
        elif network is not None:
            left_npy, right_npy = network.has_npy
            jobs.append(("result", lambda: write_report(
                result.rows, self.table, result.metrics, table_format=self.table_format, layout=layout,
                left_address=not left_npy, right_address=not right_npy, float_format=float_format)))
        if self.json is not None:
            from .reports.result_json import write_json

            jobs.append(("json", lambda: write_json(result.to_json(), self.json)))
        if self.junit is not None:
            from .reports.junit import write_junit

            jobs.append(("junit", lambda: write_junit(result.to_junit(), self.junit)))
        for label, job in jobs:
            try:
                written.append((label, job()))  # type: ignore[operator]
            except OutputError as exc:
                failed.append(exc)
        return written, failed


def _preflight(path: Path) -> None:
    """Refuse, before any work, an output that cannot be written: a folder in its place, or a
    nearest existing ancestor that is not a folder or not writable (:class:`OutputError`).
    Creates nothing; the write itself still reports any later failure (disk full ...)."""
    if path.is_dir():
        raise OutputError(path, "is a directory (give a file name)")
    parent = path.parent
    while not parent.exists():
        if parent == parent.parent:
            break
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise OutputError(path, f"{parent} is a file, not a folder")
    if parent.is_dir() and not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(path, f"permission denied: folder {parent} is not writable")


def _finish(result: "ComparisonResult", written: Sequence[tuple[str, Path]], failed: Sequence[OutputError],
            quiet: bool) -> int:
    """Print what was written, the verdict summary and any write failure; return the exit code."""
    for label, path in written:
        typer.echo(f"{label}: {path}")
    for line in summary_lines(result, quiet=quiet):
        _err(line)
    for exc in failed:
        _err(f"error: {exc}")
    if failed:
        _err(f"error: {len(failed)} output file(s) could not be written (the comparison itself ran; see the "
             f"summary above): exit {EXIT_CANNOT_RUN}")
        return EXIT_CANNOT_RUN
    return result.exit_code


#: Failures and worst operators listed in the terminal summary.
SUMMARY_FAILURES = 5
SUMMARY_WORST = 3
SUMMARY_METRICS = 3


def _count_line(summary: dict[str, int], expected: int) -> str:
    compared = summary.get("compared", 0)
    missing_left, missing_right = summary.get("missing on left", 0), summary.get("missing on right", 0)
    not_compared = sum(summary.values()) - compared - missing_left - missing_right
    gaps = f" ({expected} expected: not dumped / structural)" if expected else ""
    return (f"rows: {compared} compared, {not_compared} not comparable, {missing_left} missing on left, "
            f"{missing_right} missing on right{gaps}")


def _outcome_line(verdict: "Verdict", gated: bool) -> str:
    if not gated:
        return f"gate: none given (exit {verdict.exit_code})"
    real = sum(1 for f in verdict.failures if not f.incomplete)
    incomplete = len(verdict.failures) - real
    parts = [f"{verdict.checked} row(s) checked"]
    if real:
        parts.append(f"{real} value failure(s)")
    if incomplete:
        parts.append(f"{incomplete} not compared")
    if verdict.errors:
        parts.append(f"{len(verdict.errors)} policy error(s)")
    if verdict.waived:
        parts.append(f"{len(verdict.waived)} waived")
    return f"gate: {verdict.outcome.name} (exit {verdict.exit_code}): " + ", ".join(parts)


def _failure_text(failure: "CheckFailure") -> str:
    """A failure for the terminal: value failures get the tensor in front (incomplete ones name it)."""
    if failure.incomplete:
        return failure.message
    tensor = failure.tensor_id or (failure.left_op if failure.left_op != "*" else failure.right_op)
    return f"{tensor}: {failure.message}"


def _worst_lines(rows: Sequence["MetricRow"], metrics: Sequence[str]) -> list[str]:
    """The worst compared tensors by each metric (full precision), one line per metric."""
    from .kernels import METRICS
    from .records import PairStatus

    lines = []
    for metric in metrics[:SUMMARY_METRICS]:
        higher = METRICS[metric].higher_is_better
        values = [(row.metrics.get(metric), row) for row in rows if row.status is PairStatus.COMPARED]
        values = [(float(v), row) for v, row in values if v is not None]
        if not values or higher is None:
            continue
        # NaN is the worst of all; then the lowest similarity / the largest error
        values.sort(key=lambda item: (item[0] == item[0], item[0] if higher else -item[0]))
        worst = ", ".join(f"{row.tensor_id or row.left_op} {value!r}" for value, row in values[:SUMMARY_WORST])
        lines.append(f"worst by {metric}: {worst}")
    return lines


def summary_lines(result: "ComparisonResult", *, quiet: bool = False) -> list[str]:
    """The verdict printed at the end of every run (stderr, at most ~15 lines; one with ``quiet``):
    row counts, the gate outcome and exit code, the first failures with full-precision values, and
    the worst tensors by each gated metric (CosineSimilarity when there is no gate)."""
    from .policy import gated_metrics

    verdict = result.verdict
    counts = _count_line(result.summary(), verdict.expected_gaps)
    outcome = _outcome_line(verdict, result.gated)
    if quiet:
        return [f"{counts}; {outcome}"]
    lines = [counts, outcome]
    lines += [f"  {text}" for text in verdict.errors[:SUMMARY_FAILURES]]
    shown = verdict.failures[:SUMMARY_FAILURES]
    lines += [f"  {_failure_text(f)}" for f in shown]
    if len(verdict.failures) > len(shown):
        lines.append(f"  ... and {len(verdict.failures) - len(shown)} more failure(s) (all in --json / --junit)")
    metrics = gated_metrics(result.policy) if result.policy is not None else []
    if not metrics and "CosineSimilarity" in result.metrics:
        metrics = ["CosineSimilarity"]
    lines += _worst_lines(result.rows, metrics)
    return lines


class _ProgressBar:
    """``progress(done, total)`` for :func:`compare.api.compare_network`: a rich progress bar on stderr.

    Auto (``wanted`` None): only when stderr is a terminal and the comparison has run for
    :attr:`DELAY` seconds (short runs and CI logs never see it). ``--progress``: shown from the
    first pair, terminal or not. ``--no-progress``: never.
    """

    DELAY = 2.0

    def __init__(self, wanted: Optional[bool]) -> None:
        self.forced = wanted is True
        self.enabled = wanted if wanted is not None else _stderr_is_terminal()
        self.started = time.monotonic()
        self._bar: object = None
        self._task: object = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            if not self.forced and time.monotonic() - self.started < self.DELAY:
                return
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            console = Console(stderr=True)
            self._bar = Progress(TextColumn("comparing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                 console=console, transient=console.is_terminal)
            self._bar.start()  # type: ignore[attr-defined]
            self._task = self._bar.add_task("comparing", total=total)  # type: ignore[attr-defined]
        self._bar.update(self._task, completed=done, total=total)  # type: ignore[attr-defined]

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()  # type: ignore[attr-defined]
            self._bar = None


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


@dataclass
class _SingleOpArgs:
    """The single-operator options as given (``None`` = not given)."""

    op: Optional[str]
    tensor_type: Optional[str]
    index: Optional[int]
    topn: Optional[int]
    max_lines: Optional[int]
    no_details: bool

    def check(self) -> None:
        from .errors import OptionError

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


def _gate_exit(policy: "Policy | None", rows: list, quiet: bool) -> None:
    """Batch and single-operator modes: check ``rows`` against the policy, print the failures,
    end the run with the verdict's exit code (0 without a policy)."""
    from .api import check_rows

    verdict = check_rows(rows, policy)
    if policy is None:
        raise typer.Exit(EXIT_OK)
    _err(_outcome_line(verdict, True))
    if not quiet or not verdict.passed:
        for text in verdict.errors:
            _err(f"  {text}")
        for failure in verdict.failures:
            _err(f"  {_failure_text(failure)}")
    raise typer.Exit(verdict.exit_code)


def _batch(left: Path, right: Path, rules_dir: Path, output: Optional[str], *, algorithm: str,
           custom: Optional[Path], dump_version: Optional[int], layout, policy: "Policy | None", max_cmp_size: int,
           quiet: bool, csv_flag: bool, quant_rule: Optional[Path], float_format: object) -> None:
    """``-f DIR``: compare every model of the dump tree with its rule file; one result file per model."""
    import time

    from .api import gate_metrics
    from .runs.batch import run_batch
    from .reports.network import write_report

    batch = run_batch(left, right, rules_dir, quant_rule=quant_rule, algorithms=algorithm, custom_dir=custom,
                      dump_version=dump_version, max_elements=max_cmp_size, extra_metrics=gate_metrics(policy))
    outdir = Path(output) if output else Path.cwd()
    if outdir.exists() and not outdir.is_dir():
        raise OptionError(f"-o {outdir}: with a folder of rules (-f DIR) -o must be an output folder")
    stamp = time.strftime("%Y%m%d%H%M%S")
    rows = []
    for item in batch:
        model, result = item
        left_npy, right_npy = result.has_npy
        written = write_report(result.rows, outdir / item.output_name(stamp), result.metrics, layout=layout,
                               left_address=not left_npy, right_address=not right_npy,
                               float_format=float_format)  # type: ignore[arg-type]
        typer.echo(f"result: {written}")
        if not quiet:
            _err(f"{model}: " + ", ".join(f"{count} {status}" for status, count in result.summary().items()))
        rows.extend(result.rows)
    for note in batch.notes if not quiet else ():
        _err(note)
    for leaf, message in batch.errors:
        _err(f"not compared: {leaf}: {message}")
    _gate_exit(policy, rows, quiet)


def _single_op(args: _SingleOpArgs, left: Path, right: Path, fusion_rule: Optional[Path], output: Optional[str], *,
               algorithm: str, custom: Optional[Path], dump_version: Optional[int], layout,
               policy: "Policy | None", max_cmp_size: int, quiet: bool, quant_rule: Optional[Path] = None,
               close_fusion_rule: Optional[Path] = None, mapping: Optional[Path] = None) -> None:
    """``-d OP``: compare one tensor element by element, write the files, print the top-N tables.

    With ``--mapping`` the left operator's counterpart is the one the mapping file names (else the
    one the name rules find).

    Always ends with ``typer.Exit`` (0, or the verdict's code under a policy); CompareErrors
    propagate to the caller's handler (exit 2).
    """
    from .errors import OptionError
    from .kernels import resolve_algorithms
    from .reports.network import Layout
    from .reports.single_op import (
        MAX_LINES_DEFAULT,
        TOPN_DEFAULT,
        check_limits,
        render_top_table,
        write_operator_report,
    )
    from .single_op import compare_operator

    topn = args.topn if args.topn is not None else TOPN_DEFAULT
    max_lines = args.max_lines if args.max_lines is not None else MAX_LINES_DEFAULT
    check_limits(topn, max_lines)
    outdir = Path(output) if output else Path.cwd()
    if outdir.exists() and not outdir.is_dir():
        raise OptionError(f"-o {outdir}: in single-operator mode -o is an output folder, and this is a file")
    from .api import gate_metrics

    metrics = resolve_algorithms(algorithm)
    metrics += [name for name in gate_metrics(policy) if name not in metrics]
    result = compare_operator(left, right, args.op or "", fusion_rule=fusion_rule, quant_rule=quant_rule,
                              close_fusion_rule=close_fusion_rule, kind=args.tensor_type or "output",
                              index=args.index or 0, custom_dir=custom, dump_version=dump_version,
                              algorithms=metrics, mapping=mapping)
    files = write_operator_report(result, outdir, layout=layout, topn=topn, max_lines=max_lines,
                                  details=not args.no_details)
    if not quiet:
        if max_cmp_size:
            _err("note: -max is ignored in single-operator mode (every element is compared)")
        for note in result.notes:
            _err(f"{result.tensor_id}: {note}")
        for which in ("absolute", "relative"):
            if layout is Layout.MSACCUCMP:
                _err(f"{which.capitalize()} Error TopN")
            typer.echo(render_top_table(result, which, topn, layout))
        if files.mapping is not None:
            _err(f"long name shortened to {files.prefix} (see {files.mapping})")
        _err(f"{result.tensor_id}: {result.count} elements, {len(files.details)} detail file(s) in {outdir}")
    typer.echo(f"result: {files.summary}")
    _gate_exit(policy, [result.to_metric_row()], quiet)


def _check_readable(path: Path, flag: str) -> None:
    if not path.exists():
        raise CompareError(f"{flag} {path}: no such file or directory")
    if not os.access(path, os.R_OK):
        raise CompareError(f"{flag} {path}: permission denied")


def _normalise_argv(argv: list[str]) -> list[str]:
    """Accept the reference tool's ``-alg 0 1 5`` (several index tokens) as ``-alg 0,1,5``."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        out.append(token)
        if token in ("-alg", "--algorithm") and i + 1 < len(argv):
            values = [argv[i + 1]]
            i += 2
            while i < len(argv) and argv[i].isdigit() and len(argv[i]) == 1 and values[-1].isdigit():
                values.append(argv[i])
                i += 1
            out.append(",".join(values))
            continue
        i += 1
    return out


#: True while :func:`main` holds the cyclic garbage collector off during start-up.
_gc_held = False


def _start_up_done() -> None:
    """End of start-up (numba and numpy imported): in the console-script process only, turn the
    garbage collector back on, with the start-up objects frozen out of its scans.

    Start-up creates ~150,000 long-lived objects (numba's typing registries above all) and next
    to no garbage; with the collector on, the ~250 collections it triggers re-scan them again and again
    (full collections included): ~60 ms of every run. Library callers and tests (which invoke
    ``app`` directly) keep their collector settings untouched.
    """
    global _gc_held
    if _gc_held:
        _gc_held = False
        gc.freeze()
        gc.enable()


gate_app = typer.Typer(add_completion=False, context_settings={"help_option_names": ["-h", "--help"]},
                       rich_markup_mode=None, pretty_exceptions_enable=False)
policy_app = typer.Typer(add_completion=False, context_settings={"help_option_names": ["-h", "--help"]},
                         rich_markup_mode=None, pretty_exceptions_enable=False)

GATE_EXAMPLES = """
Examples:


  # the saved run of a CI job against the team's policy, with a JUnit report:
  vcompare gate out/result.json --policy gates.toml --junit out/junit.xml


  # a stricter bound on an older CSV result (CSV keeps the printed digits only):
  vcompare gate result.csv --gate "CosineSimilarity>=0.999"
"""


@gate_app.command(help="Check a saved result (--json .json, -o .csv or .parquet) against a policy and/or "
                       "gates again, without recomputing. Same exit codes, JSON verdict and JUnit as the live "
                       "run.\n" + GATE_EXAMPLES)
def gate_command(
    saved: Path = typer.Argument(..., metavar="RESULT", help="A saved result: .json (--json), .csv or .parquet (-o)."),
    policy: Optional[Path] = typer.Option(None, "--policy", help="Accuracy policy file (TOML, docs/policy.md)."),
    gate: List[str] = typer.Option([], "--gate", help='Accuracy gate, repeatable: "CosineSimilarity>=0.99".'),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the result with the new verdict as JSON."),
    junit_out: Optional[Path] = typer.Option(None, "--junit", help="Write a JUnit XML report."),
    quiet: bool = typer.Option(False, "--quiet", help="One summary line."),
) -> None:
    from .api import regate

    _start_up_done()
    try:
        if policy is not None:
            _check_readable(policy, "--policy")
        outputs = _Outputs(None, None, None, json_out, junit_out)
        for path in (json_out, junit_out):
            if path is not None:
                _preflight(path)
        result = regate(saved, policy=policy, gates=gate)
        written, failed = outputs.write(result, layout=None, float_format=None)
    except CompareError as exc:
        _err(f"error: {exc}")
        raise typer.Exit(EXIT_CANNOT_RUN) from None
    raise typer.Exit(_finish(result, written, failed, quiet))


#: Where ``vcompare policy --init`` writes when no path is given.
DEFAULT_POLICY = "gates.toml"


@policy_app.command(help="Write the commented starter policy file (docs/policy.md).\n\nExamples:\n\n\n"
                         "  vcompare policy --init                # ./gates.toml\n\n"
                         "  vcompare policy --init ci/gates.toml --force")
def policy_command(
    path: Optional[Path] = typer.Argument(None, metavar="[PATH]", help=f"Where to write it [{DEFAULT_POLICY}]."),
    init: bool = typer.Option(False, "--init", help="Write the starter policy file."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    from .policy import starter_policy
    from .reports.files import atomic_write_text

    target = path if path is not None else Path(DEFAULT_POLICY)
    try:
        if not init:
            raise OptionError("vcompare policy: nothing to do; vcompare policy --init [PATH] writes a starter file")
        if target.exists() and not force:
            raise OptionError(f"{target} exists; add --force to overwrite it")
        written = atomic_write_text(target, starter_policy())
    except CompareError as exc:
        _err(f"error: {exc}")
        raise typer.Exit(EXIT_CANNOT_RUN) from None
    typer.echo(f"policy: {written}")
    _err(f"edit it, then: vcompare -l LEFT -r RIGHT ... --policy {written}")
    raise typer.Exit(EXIT_OK)


#: Subcommands, by their first argument (the main command takes options only).
SUBCOMMANDS = {"gate": gate_app, "policy": policy_app}


def run(argv: Sequence[str]) -> int:
    """Run one command line (without the program name) and return its exit code.

    The first argument picks the subcommand (``gate``, ``policy``); anything else is the main
    comparison, whose ``-alg 0 1 5`` form is normalised first. Ctrl-C / SIGTERM give 130 / 143.
    """
    from convert.signals import Interrupted, interruptible, stop_message

    args = list(argv)
    target, name = app, "vcompare"
    if args and args[0] in SUBCOMMANDS:
        target, name = SUBCOMMANDS[args[0]], f"vcompare {args[0]}"
        args = args[1:]
    else:
        args = _normalise_argv(args)
    code = 0
    try:
        with interruptible():
            target(args=args, prog_name=name)
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except Interrupted as stop:
        _err(stop_message(stop))
        code = stop.exit_code
    return code


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: :func:`run`, then a fast exit."""
    global _gc_held

    if gc.isenabled():  # see _start_up_done
        gc.disable()
        _gc_held = True
    code = run(sys.argv[1:] if argv is None else argv)
    # Everything is written (atomically) and flushed: skip the interpreter's slow teardown of numba
    # and numpy (~0.15 s per run). Library callers never reach this; they call the API.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
