"""``vcompare``: the command line. Options -> public API; errors -> exit codes, in one place.

Modules: :mod:`~compare.cli.main` (entry point, subcommand dispatch), :mod:`~compare.cli.network`
(the main command's options, made into one :class:`~compare.request.CompareRequest`),
:mod:`~compare.cli.modes` (the runner of each mode the request chooses: one ``match``; and the
``gate`` / ``policy`` / ``consistency`` runners), :mod:`~compare.cli.gate` (``gate``, ``policy``),
:mod:`~compare.cli.consistency` (``consistency``), :mod:`~compare.cli.compat` (``compare``), :mod:`~compare.cli.file_compare` (``file_compare``),
:mod:`~compare.cli.two_files` (the runners of two files: ``-l FILE -r FILE`` and ``file_compare``),
:mod:`~compare.cli.output` (messages, summary, progress bar, output files),
:mod:`~compare.cli.helppage` (every ``--help`` page: options in panels, examples verbatim) and
:mod:`~compare.cli.startup` (every start-up trick). Runners return exit codes; only the typer
command functions end with ``typer.Exit``.

Commands: ``vcompare -l LEFT -r RIGHT ...`` (compare; options only), ``vcompare gate RESULT``
(re-check a saved result, :func:`compare.api.regate`), ``vcompare compare -m MY -g GOLDEN -out DIR`` /
``vcompare compare -tp TARGET -gp GOLDEN -o DIR`` / ``vcompare compare -i compare.json`` (msaccucmp's
and msprobe's command lines translated into the main command's, :mod:`~compare.cli.compat`,
docs/migration.md), ``vcompare policy --init [PATH]``
(write the starter policy), ``vcompare consistency -l TREE --groups dp:8`` (the replicas of
each rank group of one tree, :func:`compare.consistency.check_consistency`; exit 0 consistent,
1 a rank disagrees, 3 values not checked, 2 cannot run), ``vcompare file_compare -m A.npy
-g B.npy -out DIR`` (the reference's ``file_result_{ts}.txt``, docs/modes.md) and ``vcompare
overflow -d DUMP -o OUT`` (the overflow records of a dump linked to their operators,
:mod:`~compare.cli.overflow`; exit 0 analysed, 1 a record not decoded, 2 cannot run). :func:`run`
picks the command from the first argument: the main command takes no positional argument, so
``gate`` / ``policy`` / ``consistency`` / ``file_compare`` / ``overflow`` / ``compare`` there can only be a
subcommand (a folder named ``gate`` is given with ``-l gate`` and stays an option value).

Exit codes (README.md and docs/ci-gate.md document the same table):

- 0: the comparison ran and every gate passed, or there was no gate (``Verdict.exit_code``);
- 1: an accuracy gate failed -- a computed value violated a bound, or a waiver has expired;
- 3: incomplete -- only rows (or gated metrics) that should have been compared and were not failed,
  or parts of a multi-part run that are missing (``--rank all`` ...; strict or not);
- 2: could not run: bad option or policy, unreadable rule file, no valid dump, a gated
  comparison of a dump with itself, and every failure to write an output file (one line naming
  the path; the comparison's summary is still printed and the other outputs still written);
- 130 / 143: stopped by Ctrl-C / SIGTERM (:mod:`convert.signals`).
"""
from __future__ import annotations

from .compat import compat_app
from .consistency import consistency_app
from .gate import gate_app, policy_app
from .main import main, run
from .network import app

__all__ = ["app", "compat_app", "consistency_app", "gate_app", "main", "policy_app", "run"]
