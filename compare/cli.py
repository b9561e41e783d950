"""``vcompare``: the command line. Options -> public API; errors -> exit codes, in one place.

Exit codes:

- 0: the comparison ran and every ``--gate`` passed (missing operators are rows, not failures);
- 1: a gate failed (the failing rows are listed on stderr);
- 2: the comparison could not run (bad option, unreadable rule file, no valid dump at all);
  the one-line message names the file and the problem.
"""

from __future__ import annotations

import gc
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from .errors import EXIT_CANNOT_RUN, EXIT_GATE_FAILED, EXIT_OK, CompareError, OptionError

if TYPE_CHECKING:  # pragma: no cover
    from .gates import Gate

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
"""


def _err(message: str) -> None:
    typer.echo(f"vcompare: {message}", err=True)


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
    gate: List[str] = typer.Option([], "--gate", help='Accuracy gate, repeatable: "CosineSimilarity>=0.99".'),
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
        _err("compiling the comparison kernels for this machine (once; about 15 s)")
    preload(blas=False)  # load the cached kernels now (or numba, without its optional SciPy/BLAS probe)
    if not quiet and native.status.startswith("unavailable"):
        _err(f"compiled kernels {native.status}; using numba's (same numbers, ~0.4 s slower start)")
    _start_up_done()
    from .reports.network import Layout, resolve_output, write_report

    try:
        try:
            report_layout = Layout(layout)
        except ValueError:
            raise typer.BadParameter(f"--layout must be vcompare or msaccucmp, not {layout!r}") from None
        gates = _parse_gates(gate)
        single = _SingleOpArgs(op, tensor_type, index, topn, max_lines, no_details)
        single.check()
        for path, flag in ((left, "-l"), (right, "-r"), (fusion_rule, "-f"), (quant_rule, "-q"),
                           (close_fusion_rule, "-cf"), (ge_graph, "--ge-graph"), (mapping, "--mapping")):
            if path is not None:
                _check_readable(path, flag)
        rules = {"quant_rule": quant_rule, "close_fusion_rule": close_fusion_rule}
        select = {"rank": rank, "iteration": iteration, "graph": graph, "model_name": model_name,
                  "ge_graph": ge_graph}
        if single.op is not None:
            if any(v is not None for v in select.values()):
                from .api import selected_folder

                left, right = selected_folder(left, **select), selected_folder(right, **select)
            if fusion_rule is not None and fusion_rule.is_dir():
                raise OptionError("-d compares one operator of one model: -f must be a rule file, not a folder")
            _single_op(single, left, right, fusion_rule, output, algorithm=algorithm, custom=custom,
                       dump_version=dump_version, layout=report_layout, gates=gates, max_cmp_size=max_cmp_size,
                       quiet=quiet, mapping=mapping, **rules)
        if fusion_rule is not None and fusion_rule.is_dir():
            _batch(left, right, fusion_rule, output, algorithm=algorithm, custom=custom, dump_version=dump_version,
                   layout=report_layout, gates=gates, max_cmp_size=max_cmp_size, quiet=quiet, csv_flag=csv_flag,
                   quant_rule=quant_rule)
        from .api import run_network

        result = run_network(left, right, fusion_rule, algorithms=algorithm, custom_dir=custom,
                             dump_version=dump_version, max_elements=max_cmp_size,
                             extra_metrics=[g.metric for g in gates], mapping=mapping, **rules, **select)
        if result.stats is not None and not result.rows:
            from .reports.stats import write_stats_report

            if gates:
                raise OptionError("--gate checks tensor metrics, and this comparison is statistics-only (a side "
                                  "holds statistics and no tensor data); compare tensor dumps to use gates")
            written = write_stats_report(result.stats, output)
        else:
            path, table_format = resolve_output(output, csv_flag=csv_flag)
            left_npy, right_npy = result.has_npy
            written = write_report(result.rows, path, result.metrics, table_format=table_format,
                                   layout=report_layout, left_address=not left_npy, right_address=not right_npy)
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

    if not quiet:
        for note in result.notes:
            _err(note)
        summary = result.summary()
        _err("rows: " + ", ".join(f"{count} {status}" for status, count in summary.items()))
    typer.echo(f"result: {written}")
    _report_gates(gates, result.rows, quiet)


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


def _parse_gates(texts: List[str]) -> list[Gate]:
    """The ``--gate`` options as :class:`compare.gates.Gate` objects (the module is read only when given)."""
    if not texts:
        return []
    from .gates import parse_gate

    return [parse_gate(text) for text in texts]


def _report_gates(gates: list, rows: list, quiet: bool) -> None:
    """Print gate failures and end the run: exit 1 when any gate failed, else exit 0."""
    if not gates:
        raise typer.Exit(EXIT_OK)
    from .gates import evaluate

    failures = evaluate(gates, rows)
    if failures:
        _err(f"{len(failures)} gate check(s) failed:")
        for failure in failures:
            _err(f"  {failure.row.tensor_id}: {failure.gate.metric} = {failure.value:.6f} violates {failure.gate.text}")
        raise typer.Exit(EXIT_GATE_FAILED)
    if gates and not quiet:
        _err(f"all {len(gates)} gate(s) passed")
    raise typer.Exit(EXIT_OK)


def _batch(left: Path, right: Path, rules_dir: Path, output: Optional[str], *, algorithm: str,
           custom: Optional[Path], dump_version: Optional[int], layout, gates: list, max_cmp_size: int,
           quiet: bool, csv_flag: bool, quant_rule: Optional[Path]) -> None:
    """``-f DIR``: compare every model of the dump tree with its rule file; one result file per model."""
    import time

    from .api import run_batch
    from .reports.network import write_report

    batch = run_batch(left, right, rules_dir, quant_rule=quant_rule, algorithms=algorithm, custom_dir=custom,
                      dump_version=dump_version, max_elements=max_cmp_size, extra_metrics=[g.metric for g in gates])
    outdir = Path(output) if output else Path.cwd()
    if outdir.exists() and not outdir.is_dir():
        raise OptionError(f"-o {outdir}: with a folder of rules (-f DIR) -o must be an output folder")
    stamp = time.strftime("%Y%m%d%H%M%S")
    rows = []
    for item in batch:
        model, result = item
        left_npy, right_npy = result.has_npy
        written = write_report(result.rows, outdir / item.output_name(stamp), result.metrics, layout=layout,
                               left_address=not left_npy, right_address=not right_npy)
        typer.echo(f"result: {written}")
        if not quiet:
            _err(f"{model}: " + ", ".join(f"{count} {status}" for status, count in result.summary().items()))
        rows.extend(result.rows)
    for note in batch.notes if not quiet else ():
        _err(note)
    for leaf, message in batch.errors:
        _err(f"not compared: {leaf}: {message}")
    _report_gates(gates, rows, quiet)


def _single_op(args: _SingleOpArgs, left: Path, right: Path, fusion_rule: Optional[Path], output: Optional[str], *,
               algorithm: str, custom: Optional[Path], dump_version: Optional[int], layout, gates: list,
               max_cmp_size: int, quiet: bool, quant_rule: Optional[Path] = None,
               close_fusion_rule: Optional[Path] = None, mapping: Optional[Path] = None) -> None:
    """``-d OP``: compare one tensor element by element, write the files, print the top-N tables.

    With ``--mapping`` the left operator's counterpart is the one the mapping file names (else the
    one the name rules find).

    Always ends with ``typer.Exit`` (0, or 1 when a gate fails); CompareErrors propagate to the
    caller's handler (exit 2).
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
    metrics = resolve_algorithms(algorithm)
    metrics += [g.metric for g in gates if g.metric not in metrics]
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
    _report_gates(gates, [result.to_metric_row()], quiet)


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


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    global _gc_held

    if gc.isenabled():  # see _start_up_done
        gc.disable()
        _gc_held = True
    from .signals import Interrupted, interruptible, stop_message

    args = _normalise_argv(list(sys.argv[1:] if argv is None else argv))
    code = 0
    try:
        with interruptible():
            app(args=args, prog_name="vcompare")
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except Interrupted as stop:
        _err(stop_message(stop))
        code = stop.exit_code
    # Everything is written (atomically) and flushed: skip the interpreter's slow teardown of numba
    # and numpy (~0.15 s per run). Library callers never reach this; they call the API.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
