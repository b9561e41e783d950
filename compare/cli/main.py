"""The console-script entry point: the subcommand dispatch, ``-alg 0 1 5``, a fast exit."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from convert.signals import Interrupted, interruptible, stop_message

from .compat import compat_app
from .consistency import consistency_app
from .echo import err
from .file_compare import file_compare_app
from .gate import gate_app, policy_app
from .network import app
from .overflow import overflow_app
from .startup import hold_gc


#: The golden-side spellings of msaccucmp; on a command line using one, ``-r`` is its ``--range``.
MSACCUCMP_GOLDEN = ("-g", "--golden_dump_path")


def normalise_argv(argv: list[str]) -> list[str]:
    """Accept the reference tool's spellings: ``-alg 0 1 5`` (several index tokens) as
    ``-alg 0,1,5``; on a command line in msaccucmp's spelling (``-g`` / ``--golden_dump_path``
    present, so the golden side is not ``-r``), ``-r START,END,STEP`` as ``--range``; and msprobe's
    bare ``-am`` / ``--api-mapping`` (no file: the built-in API mapping) as ``-am builtin``."""
    msaccucmp = any(token in MSACCUCMP_GOLDEN or token.startswith("--golden_dump_path=") for token in argv)
    out: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if msaccucmp and token == "-r":
            token = "--range"
        out.append(token)
        if token in ("-am", "--api-mapping") and (i + 1 == len(argv) or argv[i + 1].startswith("-")):
            out.append("builtin")
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


#: Subcommands, by their first argument (the main command takes options only; ``vcompare --help``
#: describes them: :data:`compare.cli.network.SUBCOMMAND_ROWS`).
SUBCOMMANDS = {"gate": gate_app, "policy": policy_app, "consistency": consistency_app,
               "file_compare": file_compare_app, "overflow": overflow_app, "compare": compat_app}

def run(argv: Sequence[str]) -> int:
    """Run one command line (without the program name) and return its exit code.

    The first argument picks the subcommand (``gate``, ``policy``, ``consistency``, ``file_compare``,
    ``overflow``, ``compare``: msaccucmp's and msprobe's lines, :mod:`~compare.cli.compat`); anything
    else is the main comparison, whose msaccucmp spellings are normalised first
    (:func:`normalise_argv`); its ``--help`` lists the subcommands
    (:data:`compare.cli.network.SUBCOMMAND_ROWS`), and so does a bare ``vcompare`` (on stderr, exit 2).
    Ctrl-C / SIGTERM give 130 / 143.
    """
    args = list(argv)
    target, name = app, "vcompare"
    if args and args[0] in SUBCOMMANDS:
        target, name = SUBCOMMANDS[args[0]], f"vcompare {args[0]}"
        args = args[1:]
    else:
        args = normalise_argv(args)
    code = 0
    try:
        with interruptible():
            target(args=args, prog_name=name)
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except Interrupted as stop:
        err(stop_message(stop))
        code = stop.exit_code
    return code


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: :func:`run`, then a fast exit."""
    hold_gc()  # see compare.cli.startup
    code = run(sys.argv[1:] if argv is None else argv)
    # Everything is written (atomically) and flushed: skip the interpreter's slow teardown of numba
    # and numpy (~0.15 s per run). Library callers never reach this; they call the API.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
