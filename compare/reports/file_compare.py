"""The result file of ``vcompare file_compare``: ``DIR/file_result_{YYYYmmddHHMMSS}.txt``.

Layout (the reference tool's, byte for byte): one line per metric, in the order computed, each
``{Metric}: {value}`` followed by ``\\n``, the value printed ``%.6f``; a metric the data did not
allow prints ``nan`` / ``inf`` (computed) or ``NaN`` (not computed), as in every other report.
Example::

    CosineSimilarity: 0.861082
    MaxAbsoluteError: 5.000000

The file is written atomically (:mod:`compare.reports.files`); the folder is created if missing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from .cells import metric_cell
from .files import atomic_write_text, file_stamp


def file_result_text(values: Mapping[str, float | None]) -> str:
    """The file's text: ``{Metric}: {value %.6f}`` per metric, in ``values``' order, each ending ``\\n``."""
    return "".join(f"{name}: {metric_cell(value)}\n" for name, value in values.items())


def file_result_path(folder: Path, now: time.struct_time | None = None) -> Path:
    """``folder/file_result_{YYYYmmddHHMMSS}.txt`` (local time, as the reference)."""
    return Path(folder) / f"file_result_{file_stamp(now)}.txt"


def write_file_result(folder: Path, values: Mapping[str, float | None], *, now: time.struct_time | None = None
                      ) -> Path:
    """Write the result file into ``folder`` and return its path (:class:`~compare.errors.OutputError`
    when it cannot be written)."""
    return atomic_write_text(file_result_path(folder, now), file_result_text(values))
