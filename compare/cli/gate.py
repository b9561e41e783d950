"""``vcompare gate RESULT`` (a saved result checked again) and ``vcompare policy --init``."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ..errors import EXIT_CANNOT_RUN, EXIT_OK, CompareError, OptionError
from .output import Outputs, check_readable, err, finish, preflight
from .startup import start_up_done

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
    from ..api import regate

    start_up_done()
    try:
        if policy is not None:
            check_readable(policy, "--policy")
        outputs = Outputs(None, None, None, json_out, junit_out)
        for path in (json_out, junit_out):
            if path is not None:
                preflight(path)
        result = regate(saved, policy=policy, gates=gate)
        written, failed = outputs.write(result, layout=None, float_format=None)
    except CompareError as exc:
        err(f"error: {exc}")
        raise typer.Exit(EXIT_CANNOT_RUN) from None
    raise typer.Exit(finish(result, written, failed, quiet))


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
    from ..policy import starter_policy
    from ..reports.files import atomic_write_text

    target = path if path is not None else Path(DEFAULT_POLICY)
    try:
        if not init:
            raise OptionError("vcompare policy: nothing to do; vcompare policy --init [PATH] writes a starter file")
        if target.exists() and not force:
            raise OptionError(f"{target} exists; add --force to overwrite it")
        written = atomic_write_text(target, starter_policy())
    except CompareError as exc:
        err(f"error: {exc}")
        raise typer.Exit(EXIT_CANNOT_RUN) from None
    typer.echo(f"policy: {written}")
    err(f"edit it, then: vcompare -l LEFT -r RIGHT ... --policy {written}")
    raise typer.Exit(EXIT_OK)
