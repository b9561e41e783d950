"""The exit codes of both command lines, ``vcompare`` and ``vconvert`` (README.md and
docs/ci-gate.md document the same table).

- 0: the command ran; every gate passed, or there was no gate; every file converted;
- 1: ``vcompare``: an accuracy gate failed; ``vconvert``: some files could not be converted;
  ``vcompare overflow``: some overflow record could not be decoded;
- 2: could not run: a bad option, an unreadable input, an output that cannot be written;
- 3: ``vcompare`` with a gate: incomplete (only rows that should have been compared and were not);
- 130 / 143: stopped by Ctrl-C / SIGTERM (:mod:`convert.signals`).
"""

from __future__ import annotations

EXIT_OK = 0
#: vcompare: an accuracy gate failed.
EXIT_GATE_FAILED = 1
#: vconvert: some of the files could not be converted (the others were); vcompare overflow: some
#: overflow record could not be decoded (the others were analysed).
EXIT_SOME_FAILED = 1
EXIT_CANNOT_RUN = 2
#: vcompare with a gate: rows that should have been compared were not.
EXIT_INCOMPLETE = 3
