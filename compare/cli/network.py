"""The main command, ``vcompare -l LEFT -r RIGHT ...``: its typer options, made into one
:class:`~compare.request.CompareRequest` (the request chooses the mode and checks the options)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from convert.exits import EXIT_OK

from .helppage import HelpPanel, HelpRow, PanelHelp

app = typer.Typer(
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

#: The panels of ``vcompare --help``, in this order; every option of the main command is in one.
INPUTS, PAIRING, OUTPUTS, GATE, MODES, PERFORMANCE, HELP = (
    "Inputs", "Pairing", "Outputs", "Gate", "Modes", "Performance", "Help")
PANELS = (INPUTS, PAIRING, OUTPUTS, GATE, MODES, PERFORMANCE, HELP)

#: The subcommands, as ``vcompare --help`` lists them (:data:`compare.cli.main.SUBCOMMANDS` runs them).
SUBCOMMAND_ROWS = (
    HelpRow("compare", "msaccucmp's (compare -m MY -g GOLDEN -f RULE -out DIR) and msprobe's (compare -tp T "
                       "-gp G -o DIR, compare -i compare.json) command lines, translated to this command "
                       "(docs/migration.md)"),
    HelpRow("gate", "check a saved result against a policy again, without recomputing"),
    HelpRow("policy", "write the starter policy file (policy --init gates.toml)"),
    HelpRow("consistency", "the replicas of each rank group of one tree"),
    HelpRow("file_compare", "two .npy files, msaccucmp's file_result_{ts}.txt"),
    HelpRow("overflow", "the overflow records of a dump linked to their operators"),
)


class MainHelp(PanelHelp):
    """``vcompare --help``: the usage names the subcommands too, and a panel lists them."""

    usage_lines = (f"vcompare {{{','.join(row.name for row in SUBCOMMAND_ROWS)}}} ...",)
    panels = (HelpPanel("Subcommands (vcompare SUBCOMMAND --help)", SUBCOMMAND_ROWS),)


EXAMPLES = """Examples:

  # Ascend dump vs Caffe/TF .npy goldens, through the ATC fusion rule (om -> json):
  vcompare -l dump/20240315101530 -r caffe_npy -f resnet50.json -o result.csv

  # NPU vs NPU (same model, two runs), as a CI accuracy gate:
  vcompare -l run1 -r run2 -o out/ --gate "CosineSimilarity>=0.99" --gate "MaxAbsoluteError<=0.001"

  # only three metrics, txt table as in the manual:
  vcompare -l npu -r golden -f model.json -alg 0,1,KullbackLeiblerDivergence -o result.txt

  # where it goes wrong: the Verdict column, the chain back from prob to its origin, an HTML report:
  vcompare -l npu -r golden -f model.json -o out/result.csv --verdicts --explain prob --html out/report.html

  # one operator element by element (summary, per-element CSVs, top-N worst elements):
  vcompare -l npu -r golden -f model.json -o detail/ -d pool5 -t output -i 0 -n 50

  # two files (.npy, .txt or dump files), every metric, the table on stdout and in result.csv:
  vcompare -l my_output.npy -r golden.npy -o result.csv

  # the fusion groups of rule ops 1, 11, 21 ... only (msaccucmp spelling: -m MY -g GOLDEN -r 1,-1,10):
  vcompare -l npu -r golden -f model.json --range 1,-1,10 -o result.csv

  # which left tensor meets which golden file (mapping_{ts}.csv in out/), nothing compared:
  vcompare -l npu -r golden -f model.json -map -o out/

  # the OverFlow column (inf / NaN / float16 +-65504 in the left tensor, or an Opdebug record names the op):
  vcompare -l npu -r golden -f model.json --overflow -o result.csv

  # FFTS+ sliced ops compared slice by slice (by default the slices are merged along the cut axis):
  vcompare -l npu -r npu_ref -ffts -o result.csv

  # msprobe dumps (PyTorch .pt / MindSpore .npy / statistics), NPU vs GPU, every rank and step:
  vcompare -l msprobe_npu -r msprobe_gpu --rank all --iteration all -o out/

  # msprobe statistics dumps gated (Max/Min/Mean/Norm; md5/xor dumps: --gate "ChecksumDiff==same"):
  vcompare -l stats_npu -r stats_gpu -o r.csv --json r.json --gate "L2NormRelDiff<=1e-4" --verdicts

  # MindSpore GPU run vs Ascend run (npy / .bin dump trees), every iteration in turn:
  vcompare -l gpu_dump -r ascend_dump --rank 0 --iteration all -o out/

  # every rank and iteration of an LLM training dump, on a Dask cluster (docs/distributed.md):
  vcompare -l npu_dump -r gpu_dump --rank all --iteration all -o out/ --scheduler tcp://HOST:8786

  # MindSpore vs a Caffe/TF golden folder through a names file (left,right per line):
  vcompare -l ms_dump -r caffe_npy --mapping map.csv

  # TF NPU dump: the model_name folder of the graph in a GE build file:
  vcompare -l npu_dump -r tf_golden --ge-graph ge_proto_00292_Build.txt

  # CI accuracy gate (docs/ci-gate.md): policy file, JSON and JUnit results, exit 0/1/3/2:
  vcompare -l npu -r golden -f model.json -o out/result.csv --policy gates.toml --json out/result.json

  # re-check a saved result without recomputing (same verdict, JSON and JUnit as the live run):
  vcompare gate out/result.json --policy gates.toml --junit out/junit.xml

  # write a commented starter policy file:
  vcompare policy --init gates.toml

  # two .npy files, the reference's eight metrics in out/file_result_{ts}.txt:
  vcompare file_compare -m my.npy -g golden.npy -out out

  # the ranks of one training dump whose replicas disagree (8 per DP group):
  vcompare consistency -l msdump --groups dp:8 -o out/consistency.csv

  # the operator each of the first 5 overflow records (Opdebug files) names:
  vcompare overflow -d npu_dump/20240315101530 -o out/overflow -n 5
"""


def version_callback(value: bool) -> None:
    """``--version``: print the installed version and exit."""
    if value:
        from ..reports.files import tool_version  # here: --version alone needs no report module

        typer.echo(f"vcompare {tool_version()}")
        raise typer.Exit(EXIT_OK)


# no_args_is_help: a bare ``vcompare`` prints this help on stderr and exits 2 (a script whose
# options came out empty must not pass as a run)
@app.command(cls=MainHelp, no_args_is_help=True, epilog=EXAMPLES,
             help="Compare two operator dumps tensor by tensor and write a result table.")
def compare(
    # Inputs: what is compared, which part of a dump tree, how its files are read
    left: str = typer.Option(..., "-l", "--left", "-m", "--my_dump_path", rich_help_panel=INPUTS,
                             help="My Output: dump folder (or any parent of time/device/model/model_id/data_index), "
                                  "or an fsspec URL (s3://bucket/run/npu, needs vcompare[remote])."),
    right: str = typer.Option(..., "-r", "--right", "-g", "--golden_dump_path", rich_help_panel=INPUTS,
                              help="Ground Truth: golden .npy folder or another dump folder (or an fsspec URL)."),
    rank: Optional[str] = typer.Option(None, "--rank", rich_help_panel=INPUTS,
                                       help="Dump trees: rank/device to compare: N, list 0,1, range 0-3, or all "
                                            "(each in turn) [only one, else the first]."),
    iteration: Optional[str] = typer.Option(None, "--iteration", rich_help_panel=INPUTS,
                                            help="Dump trees: iteration to compare: N, list, range 0|5-8, or all "
                                                 "(each in turn) [only one, else the newest]."),
    graph: Optional[str] = typer.Option(None, "--graph", rich_help_panel=INPUTS,
                                        help="MindSpore dump trees: graph id: N, list, or all (each in turn) "
                                             "[the graph with most dump files]."),
    model_name: Optional[str] = typer.Option(None, "--model-name", rich_help_panel=INPUTS,
                                             help="TF-NPU / GE trees: the model_name folder to read [the one "
                                                  "whose ops pair with the other side]."),
    ge_graph: Optional[Path] = typer.Option(None, "--ge-graph", rich_help_panel=INPUTS,
                                            help="TF-NPU / GE trees: ge_proto_*_Build.txt whose first graph names "
                                                 "the model_name folder."),
    dump_version: Optional[int] = typer.Option(None, "-v", "--dump-version", min=1, max=2, rich_help_panel=INPUTS,
                                               help="Force dump layout: 1 = protobuf, 2 = binary (default: detect per file)."),
    custom: Optional[Path] = typer.Option(None, "-custom", "--custom", "-c", "--custom_script_path",
                                          rich_help_panel=INPUTS,
                                          help="Plugin root holding format_convert/convert_{FROM}_to_{TO}.py."),
    ffts: bool = typer.Option(False, "-ffts", "--ffts", rich_help_panel=INPUTS,
                              help="FFTS+ sliced ops: compare each slice file by itself, raw op names kept "
                                   "[merge an op's slices along the cut axis; docs/ffts.md]."),
    # Pairing: which left tensor meets which right one
    fusion_rule: Optional[Path] = typer.Option(None, "-f", "--fusion-rule", "--fusion_rule_file",
                                               rich_help_panel=PAIRING, help="ATC om->json network file (atc --mode=1)."),
    quant_rule: Optional[Path] = typer.Option(None, "-q", "--quant-rule", "--quant_fusion_rule_file",
                                              rich_help_panel=PAIRING,
                                              help="AMCT quantization fusion rule JSON (see docs/quant.md)."),
    close_fusion_rule: Optional[Path] = typer.Option(None, "-cf", "--close-fusion-rule", "--close_fusion_rule_file",
                                                     rich_help_panel=PAIRING,
                                                     help="om->json of the same model built with fusion off "
                                                          "(NPU fused vs NPU un-fused)."),
    mapping: Optional[Path] = typer.Option(None, "--mapping", rich_help_panel=PAIRING,
                                           help="Pair operators through a names file (CSV left,right[:index]; "
                                                "YAML if PyYAML is installed) first, the others by name; with -d "
                                                "the left operator meets the one it maps to."),
    layer_mapping: Optional[Path] = typer.Option(None, "-lm", "--layer-mapping", rich_help_panel=PAIRING,
                                                 help="msprobe trees: pair calls by where they ran, through msprobe's "
                                                      "layer_mapping.yaml (class: {attribute: other attribute}); "
                                                      "needs PyYAML (docs/msprobe-mapping.md)."),
    api_mapping: Optional[str] = typer.Option(None, "-am", "--api-mapping", metavar="FILE|builtin",
                                              rich_help_panel=PAIRING,
                                              help="msprobe trees: pair MindSpore APIs with PyTorch ones (Mint.* -> "
                                                   "Torch.* ...); 'builtin': the built-in table (applied anyway between "
                                                   "a MindSpore and a PyTorch tree); FILE: msprobe's api_mapping.yaml "
                                                   "(ms_api/pt_api/ms_args/pt_args...) first, then the table."),
    data_mapping: Optional[Path] = typer.Option(None, "-dm", "--data-mapping", rich_help_panel=PAIRING,
                                                help="msprobe trees: pair tensors as msprobe's data_mapping.yaml says "
                                                     "({call}.input.0: {call}.input.1; N/A: no counterpart)."),
    cell_mapping: Optional[Path] = typer.Option(None, "-cm", "--cell-mapping", rich_help_panel=PAIRING,
                                                help="msprobe trees: pair MindSpore cells with PyTorch modules through "
                                                     "msprobe's cell_mapping.yaml (path.Class: path.Class, or text: text)."),
    fuzzy_match: bool = typer.Option(False, "-fm", "--fuzzy-match", rich_help_panel=PAIRING,
                                     help="msprobe trees: pair calls whose names differ only in the call count "
                                          "(Functional.relu.3.forward with Functional.relu.5.forward), in order."),
    op_range: Optional[str] = typer.Option(None, "--range", rich_help_panel=PAIRING,
                                           help="Compare only the fusion groups of the -f rule's operators with ids "
                                                "start,end,step (end -1: the last; e.g. 1,-1,10). With -m/-g "
                                                "spelling, -r RANGE as in msaccucmp."),
    op_select: Optional[str] = typer.Option(None, "-s", "--select", rich_help_panel=PAIRING,
                                            help="Compare only the fusion groups of the -f rule's operators with "
                                                 "these ids: i1,i2,... (e.g. 3,7,12)."),
    # Outputs: the metrics, the files written and what is printed
    output: Optional[str] = typer.Option(None, "-o", "-out", "--output", rich_help_panel=OUTPUTS,
                                         help="Result file (.csv, .txt, .parquet or .xlsx) or directory (-> result_{YYYYmmddHHMMSS}.csv)."),
    algorithm: str = typer.Option("all", "-alg", "--algorithm", rich_help_panel=OUTPUTS,
                                  help="Metrics by index (0-9 the reference's, 10-12 msprobe's), name or group (all: the "
                                       "reference's 10; msprobe: EucDist and the two error ratios, added to all on "
                                       "msprobe trees), comma-separated, e.g. 0,1,kl."),
    csv_flag: bool = typer.Option(False, "-csv", "--csv", rich_help_panel=OUTPUTS,
                                  help="Write CSV even when -o ends in .txt."),
    layout: str = typer.Option("vcompare", "--layout", rich_help_panel=OUTPUTS,
                               help="Column layout: vcompare or msaccucmp."),
    digits: Optional[int] = typer.Option(None, "--digits", rich_help_panel=OUTPUTS,
                                         help="Decimals of the metric cells of -o .csv/.txt [6, as the reference]."),
    float_format: Optional[str] = typer.Option(None, "--float-format", rich_help_panel=OUTPUTS,
                                               help="Metric cells: fixed (%.6f, or --digits) or repr (full float64)."),
    verdicts: bool = typer.Option(False, "--verdicts", rich_help_panel=OUTPUTS,
                                  help="Add a Verdict column to the -o table: ok, origin, inherited, input-differs "
                                       "or not-compared (where the error starts; docs/localisation.md)."),
    json_out: Optional[Path] = typer.Option(None, "--json", rich_help_panel=OUTPUTS,
                                            help="Also write the whole run as JSON (docs/result-json.md)."),
    junit_out: Optional[Path] = typer.Option(None, "--junit", rich_help_panel=OUTPUTS,
                                             help="Also write a JUnit XML report (one testcase per tensor pair)."),
    html_out: Optional[Path] = typer.Option(None, "--html", rich_help_panel=OUTPUTS,
                                            help="Also write a self-contained HTML report (plots, sortable table; "
                                                 "needs vcompare[html])."),
    quiet: bool = typer.Option(False, "--quiet", rich_help_panel=OUTPUTS,
                               help="Print only the paths written, the summary in one line and the first divergence "
                                    "(if any): no notes, no failing rows, no worst tensors, no top-N tables."),
    verbose: bool = typer.Option(False, "--verbose", rich_help_panel=OUTPUTS,
                                 help="Every note in full: notes of each part listed one by one, not grouped by kind."),
    progress: Optional[bool] = typer.Option(None, "--progress/--no-progress", rich_help_panel=OUTPUTS,
                                            help="Progress bar on stderr [on a terminal, after 2 s]."),
    # Gate: the accuracy verdict and its exit code
    gate: List[str] = typer.Option([], "--gate", rich_help_panel=GATE,
                                   help='Accuracy gate, repeatable, added to --policy: "CosineSimilarity>=0.99".'),
    policy: Optional[Path] = typer.Option(None, "--policy", rich_help_panel=GATE,
                                          help="Accuracy policy file (TOML, docs/policy.md; vcompare policy --init "
                                               "writes one). With it or --gate: exit 1 gate failed, 3 incomplete."),
    allow_same: bool = typer.Option(False, "--allow-same", rich_help_panel=GATE,
                                    help="Allow a gated comparison of a dump with itself (else exit 2)."),
    # Modes: one operator element by element, the mapping table, localisation, consistency, overflow
    op: Optional[str] = typer.Option(None, "-d", "--op", "-op", "--op_name", rich_help_panel=MODES,
                                     help="Single-operator mode: compare this left operator element by element; "
                                          "-o is then the output folder."),
    tensor_type: Optional[str] = typer.Option(None, "-t", "--tensor-type", rich_help_panel=MODES,
                                              help="Single-operator mode: input or output tensor [output]."),
    index: Optional[int] = typer.Option(None, "-i", "--index", min=0, rich_help_panel=MODES,
                                        help="Single-operator mode: index of the input/output tensor [0]."),
    topn: Optional[int] = typer.Option(None, "-n", "--topn", min=1, max=10000, rich_help_panel=MODES,
                                       help="Single-operator mode: rows of the top-N error tables, 1-10000 [20]."),
    max_lines: Optional[int] = typer.Option(None, "--max-lines", "-ml", "--max_line", min=10000, max=1000000,
                                            rich_help_panel=MODES,
                                            help="Single-operator mode: rows per detail CSV, 10000-1000000 [1000000]."),
    no_details: bool = typer.Option(False, "--no-details", "--ignore_single_op_result", rich_help_panel=MODES,
                                    help="Single-operator mode: write the summary and top-N files only."),
    mapping_table: bool = typer.Option(False, "-map", "--mapping-table", rich_help_panel=MODES,
                                       help="Write the mapping table (which left tensor meets which golden tensor "
                                            "and their files) instead of comparing: needs -f or -q; -o FILE.csv or "
                                            "a folder (-> mapping_{YYYYmmddHHMMSS}.csv)."),
    explain: Optional[str] = typer.Option(None, "--explain", rich_help_panel=MODES,
                                          help="Print the chain from this operator back to where its error "
                                               "came from."),
    overflow: bool = typer.Option(False, "--overflow", "-overflow_detection", rich_help_panel=MODES,
                                  help="Add an OverFlow column (YES / NO / NaN) after Shape: YES for a float left "
                                       "tensor holding inf, NaN or (float16) +-65504, and for the operators the "
                                       "left folder's Opdebug records name (docs/overflow.md)."),
    consistency: Optional[str] = typer.Option(None, "--consistency", rich_help_panel=MODES,
                                              help="Also check the -l tree's cross-rank consistency: dp:K "
                                                   "(data-parallel groups of K ranks) or a group file; the "
                                                   "report goes beside -o (docs/consistency.md)."),
    # Performance: how much is compared and where
    max_cmp_size: int = typer.Option(0, "-max", "--max-cmp-size", min=0, rich_help_panel=PERFORMANCE,
                                     help="Compare only the first N flattened elements of each tensor (0 = all)."),
    dask_cluster: Optional[str] = typer.Option(None, "--dask-cluster", rich_help_panel=PERFORMANCE,
                                               help="Compare the (rank, iteration) parts on a Dask LocalCluster of "
                                                    "N worker processes here: local:N (needs vcompare[dask]; "
                                                    "docs/distributed.md)."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", rich_help_panel=PERFORMANCE,
                                            help="Compare the (rank, iteration) parts on the Dask cluster of this "
                                                 "scheduler: tcp://HOST:8786, or its --scheduler-file (workers read "
                                                 "the same paths)."),
    # Help: -h / --help joins this panel (compare.cli.helppage)
    version: bool = typer.Option(False, "--version", is_eager=True, callback=version_callback, rich_help_panel=HELP,
                                 help="Print vcompare's version and exit."),
) -> None:
    """The main command: the options into one :class:`~compare.request.CompareRequest`, then its runner."""
    if layout not in ("vcompare", "msaccucmp"):
        raise typer.BadParameter(f"--layout must be vcompare or msaccucmp, not {layout!r}")
    from ..request import CompareRequest  # here: as the runner (it loads the pairing records; --help does not)
    # here, not at the top: the runner imports numpy, numba and the readers (--help stays ~0.1 s)
    from .modes import run_compare

    raise typer.Exit(run_compare(CompareRequest(
        left=_dump_root(left), right=_dump_root(right), rank=rank, iteration=iteration, graph=graph,
        model_name=model_name, ge_graph=ge_graph, dump_version=dump_version, ffts=ffts, op_range=op_range,
        op_select=op_select,
        fusion_rule=fusion_rule, quant_rule=quant_rule, close_fusion_rule=close_fusion_rule, mapping=mapping,
        layer_mapping=layer_mapping, api_mapping=(True if api_mapping in ("", "builtin") else Path(api_mapping))
        if api_mapping is not None else None, data_mapping=data_mapping, cell_mapping=cell_mapping,
        fuzzy_match=fuzzy_match,
        custom_dir=custom,
        algorithms=algorithm, max_elements=max_cmp_size, allow_same=allow_same, cluster=dask_cluster,
        scheduler=scheduler,
        gates=tuple(gate), policy=policy,
        output=output, csv=csv_flag, json_out=json_out, junit_out=junit_out, html_out=html_out, verdicts=verdicts,
        layout=layout, digits=digits, float_format=float_format, quiet=quiet, verbose=verbose,
        progress_bar=progress,
        op=op, tensor_type=tensor_type, index=index, topn=topn, max_lines=max_lines, no_details=no_details,
        mapping_table=mapping_table, explain=explain, consistency=consistency, overflow=overflow)))


def _dump_root(text: str) -> "Path | str":
    """``-l`` / ``-r``: an fsspec URL stays text (a Path would fold its ``//``), anything else is a path."""
    from convert.remote import is_url  # here: keeps --help fast (fsspec itself is never imported for a path)

    return text if is_url(text) else Path(text)
