"""The single-operator (``-d``) and batch (``-f DIR``) modes of the main command; each runner
returns the exit code."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from ..errors import EXIT_OK, OptionError
from .output import err, failure_text, outcome_line

if TYPE_CHECKING:  # pragma: no cover
    from ..policy import Policy


class Mode(Enum):
    """The main command's three modes, chosen by :func:`choose_mode`."""

    NETWORK = "network"  # the whole network, one row per tensor pair
    SINGLE_OP = "single-op"  # -d OP: one tensor element by element
    BATCH = "batch"  # -f DIR: every model of the dump tree with its rule file


def choose_mode(single: "SingleOpArgs", fusion_rule: Optional[Path]) -> Mode:
    """``-d`` selects single-operator mode; otherwise ``-f`` naming a folder selects batch mode."""
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
    from ..api import check_rows

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
                   float_format: object) -> int:
    """``-f DIR``: compare every model of the dump tree with its rule file; one result file per model."""
    import time

    from ..api import gate_metrics
    from ..runs.batch import run_batch
    from ..reports.network import write_report

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
                  close_fusion_rule: Optional[Path] = None, mapping: Optional[Path] = None) -> int:
    """``-d OP``: compare one tensor element by element, write the files, print the top-N tables.

    With ``--mapping`` the left operator's counterpart is the one the mapping file names (else the
    one the name rules find).

    Returns the exit code (0, or the verdict's code under a policy); CompareErrors propagate to
    the caller's handler (exit 2).
    """
    from ..kernels import resolve_algorithms
    from ..reports.network import Layout
    from ..reports.single_op import (
        MAX_LINES_DEFAULT,
        TOPN_DEFAULT,
        check_limits,
        render_top_table,
        write_operator_report,
    )
    from ..single_op import compare_operator

    topn = args.topn if args.topn is not None else TOPN_DEFAULT
    max_lines = args.max_lines if args.max_lines is not None else MAX_LINES_DEFAULT
    check_limits(topn, max_lines)
    outdir = Path(output) if output else Path.cwd()
    if outdir.exists() and not outdir.is_dir():
        raise OptionError(f"-o {outdir}: in single-operator mode -o is an output folder, and this is a file")
    from ..api import gate_metrics

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
            err("note: -max is ignored in single-operator mode (every element is compared)")
        for note in result.notes:
            err(f"{result.tensor_id}: {note}")
        for which in ("absolute", "relative"):
            if layout is Layout.MSACCUCMP:
                err(f"{which.capitalize()} Error TopN")
            typer.echo(render_top_table(result, which, topn, layout))
        if files.mapping is not None:
            err(f"long name shortened to {files.prefix} (see {files.mapping})")
        err(f"{result.tensor_id}: {result.count} elements, {len(files.details)} detail file(s) in {outdir}")
    typer.echo(f"result: {files.summary}")
    return gate_exit(policy, [result.to_metric_row()], quiet)
