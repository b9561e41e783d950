"""``vcompare gate RESULT`` (a saved result checked again) and ``vcompare policy --init``."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from .helppage import PanelHelp

gate_app = typer.Typer(add_completion=False, context_settings={"help_option_names": ["-h", "--help"]},
                       rich_markup_mode=None, pretty_exceptions_enable=False)


policy_app = typer.Typer(add_completion=False, context_settings={"help_option_names": ["-h", "--help"]},
                         rich_markup_mode=None, pretty_exceptions_enable=False)


GATE_EXAMPLES = """Examples:

  # the saved run of a CI job against the team's policy, with a JUnit report:
  vcompare gate out/result.json --policy gates.toml --junit out/junit.xml

  # a stricter bound on an older CSV result (CSV keeps the printed digits only):
  vcompare gate result.csv --gate "CosineSimilarity>=0.999"
"""


# no_args_is_help: a bare ``vcompare gate`` prints this help on stderr and exits 2
@gate_app.command(cls=PanelHelp, no_args_is_help=True, epilog=GATE_EXAMPLES,
                  help="Check a saved result (--json .json, -o .csv or .parquet) against a policy and/or "
                       "gates again, without recomputing. Same exit codes, JSON verdict and JUnit as the live "
                       "run.")
def gate_command(
    saved: Path = typer.Argument(..., metavar="RESULT", help="A saved result: .json (--json), .csv or .parquet (-o)."),
    policy: Optional[Path] = typer.Option(None, "--policy", help="Accuracy policy file (TOML, docs/policy.md)."),
    gate: List[str] = typer.Option([], "--gate", help='Accuracy gate, repeatable: "CosineSimilarity>=0.99".'),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the result with the new verdict as JSON."),
    junit_out: Optional[Path] = typer.Option(None, "--junit", help="Write a JUnit XML report."),
    quiet: bool = typer.Option(False, "--quiet", help="One summary line."),
) -> None:
    """``vcompare gate RESULT``: see the command's help."""
    from .modes import run_gate  # here: the runner loads the readers and numpy (--help stays fast)

    raise typer.Exit(run_gate(saved, policy=policy, gates=tuple(gate), json_out=json_out, junit_out=junit_out,
                              quiet=quiet))


#: Where ``vcompare policy --init`` writes when no path is given.
DEFAULT_POLICY = "gates.toml"


POLICY_EXAMPLES = """Examples:

  vcompare policy --init                # ./gates.toml

  vcompare policy --init ci/gates.toml --force
"""


@policy_app.command(cls=PanelHelp, epilog=POLICY_EXAMPLES,
                    help="Write the commented starter policy file (docs/policy.md).")
def policy_command(
    path: Optional[Path] = typer.Argument(None, metavar="[PATH]", help=f"Where to write it [{DEFAULT_POLICY}]."),
    init: bool = typer.Option(False, "--init", help="Write the starter policy file."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """``vcompare policy --init [PATH]``: see the command's help."""
    from .modes import run_policy_init  # here: see gate_command

    raise typer.Exit(run_policy_init(path if path is not None else Path(DEFAULT_POLICY), init=init, force=force))
