"""``vcompare file_compare -m A.npy -g B.npy -out DIR``: two ``.npy`` files, eight metrics, one result file."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .helppage import PanelHelp

file_compare_app = typer.Typer(add_completion=False, context_settings={"help_option_names": ["-h", "--help"]},
                               rich_markup_mode=None, pretty_exceptions_enable=False)


FILE_COMPARE_EXAMPLES = """Examples:

  # my output against the golden: out/file_result_{YYYYmmddHHMMSS}.txt, one "Metric: value" line each
  vcompare file_compare -m my.npy -g golden.npy -out out

  # .txt or dump files, every metric, a CSV or JSON result: the main command
  vcompare -l my.txt -r golden.npy -o result.csv
"""


# no_args_is_help: a bare ``vcompare file_compare`` prints this help on stderr and exits 2
@file_compare_app.command(cls=PanelHelp, no_args_is_help=True, epilog=FILE_COMPARE_EXAMPLES,
                          help="Compare two .npy files of identical shape with metrics 0,1,2,3,6,7,8,9 "
                               "(CosineSimilarity ... MeanRelativeError) and write "
                               "DIR/file_result_{YYYYmmddHHMMSS}.txt (docs/modes.md). Exit 2 when a file is "
                               "not .npy, the shapes differ or the result cannot be written.")
def file_compare_command(
    my: Path = typer.Option(..., "-m", "--my_dump_path", "-l", "--left", help="My output: a .npy file."),
    golden: Path = typer.Option(..., "-g", "--golden_dump_path", "-r", "--right", help="Ground truth: a .npy file."),
    output: Optional[Path] = typer.Option(None, "-out", "--output", "-o",
                                          help="Folder of the result file (created if missing) [the current one]."),
    quiet: bool = typer.Option(False, "--quiet", help="Print only the result path."),
) -> None:
    """``vcompare file_compare``: see the command's help."""
    from .two_files import run_file_compare  # here: the runner loads numpy and the kernels (--help stays fast)

    raise typer.Exit(run_file_compare(my, golden, output if output is not None else Path.cwd(), quiet=quiet))
