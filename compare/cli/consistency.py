"""``vcompare consistency -l TREE --groups dp:8``: the replicas of each rank group of one dump tree."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .helppage import PanelHelp

consistency_app = typer.Typer(add_completion=False, context_settings={"help_option_names": ["-h", "--help"]},
                              rich_markup_mode=None, pretty_exceptions_enable=False)

CONSISTENCY_EXAMPLES = """Examples:

  # groups of 8 data-parallel ranks: who holds other parameters / gradients?
  vcompare consistency -l dump --groups dp:8 -o out/consistency.csv

  # each iteration in turn, groups from a file (one per line: 0,8,16,24):
  vcompare consistency -l dump --groups groups.txt --iteration all

  # a relative difference up to 1e-7 still agrees; the whole check as JSON:
  vcompare consistency -l dump --groups dp:4 --tolerance 1e-7 --json c.json

  # other replicated tensors: a regular expression on tensor ids / op types:
  vcompare consistency -l dump --groups dp:4 --tensors 'AllReduce|LayerNorm'
"""


#: The panels of ``vcompare consistency --help``.
INPUTS, CHECK, OUTPUTS = "Inputs", "Check", "Outputs"


# no_args_is_help: a bare ``vcompare consistency`` prints this help on stderr and exits 2
@consistency_app.command(cls=PanelHelp, no_args_is_help=True, epilog=CONSISTENCY_EXAMPLES,
                         help="Check, within one dump tree, that the ranks of each data-parallel group hold the "
                              "same parameters and all-reduced gradients, and name the ranks that disagree "
                              "(docs/consistency.md). Exit 0 consistent, 1 a rank disagrees, 3 some values could "
                              "not be checked, 2 cannot run.")
def consistency_command(
    tree: Path = typer.Option(..., "-l", "--left", rich_help_panel=INPUTS,
                              help="The dump tree: MindSpore rank_N / device_N folders, or a TF-NPU / GE "
                                   "{time}/{device}/... tree."),
    iteration: Optional[str] = typer.Option(None, "--iteration", rich_help_panel=INPUTS,
                                            help="Iteration: N, list, range 0|5-8, or all (each in turn) "
                                                 "[the newest]."),
    graph: Optional[str] = typer.Option(None, "--graph", rich_help_panel=INPUTS,
                                        help="MindSpore graph id: N, list, or all [the graph with most dump files]."),
    model_name: Optional[str] = typer.Option(None, "--model-name", rich_help_panel=INPUTS,
                                             help="TF-NPU / GE trees: the model_name folder [the one with most dump "
                                                  "files]."),
    dump_version: Optional[int] = typer.Option(None, "-v", "--dump-version", min=1, max=2, rich_help_panel=INPUTS,
                                               help="Force dump layout: 1 = protobuf, 2 = binary [detect per file]."),
    groups: str = typer.Option(..., "--groups", rich_help_panel=CHECK,
                               help="dp:K (consecutive blocks of K ranks) or a rank-group file (one group per line, "
                                    "0,1,2,3 or 4-7; or JSON [[0,1],[2,3]])."),
    tensors: Optional[str] = typer.Option(None, "--tensors", rich_help_panel=CHECK,
                                          help="Regular expression choosing the replicated tensors by tensor id "
                                               "(op:output:0) or op type [Parameter outputs and AllReduce / "
                                               "AllGather / Broadcast outputs]."),
    tolerance: Optional[float] = typer.Option(None, "--tolerance", rich_help_panel=CHECK,
                                              help="A rank also agrees when its RelativeEuclideanDistance to the "
                                                   "reference is at most this [bitwise equality]."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", rich_help_panel=OUTPUTS,
                                          help="Write the rows (ranks that differ, values not checked) as CSV (.csv)."),
    json_out: Optional[Path] = typer.Option(None, "--json", rich_help_panel=OUTPUTS,
                                            help="Write the whole check as JSON."),
    quiet: bool = typer.Option(False, "--quiet", rich_help_panel=OUTPUTS,
                               help="Only the disagreeing ranks and the outcome line."),
) -> None:
    """``vcompare consistency``: see the command's help."""
    from .modes import ConsistencyArgs, run_consistency  # here: the runner loads the readers (--help stays fast)

    raise typer.Exit(run_consistency(ConsistencyArgs(
        tree=tree, groups=groups, output=output, json_out=json_out, tensors=tensors, tolerance=tolerance,
        iteration=iteration, graph=graph, model_name=model_name, dump_version=dump_version, quiet=quiet)))
