"""The record of a result read back from disk (:func:`compare.reports.saved.load_result`): the
rows the run wrote, its metrics, and which kind of file gave them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from ..records import MetricRow, PairStatus


class SavedKind(str, Enum):
    """The kind of file a result was read from."""

    JSON = "json"
    CSV = "csv"
    PARQUET = "parquet"


@dataclass
class SavedResult:
    """A result read back from disk.

    ``rows`` in file order; ``metrics`` the selected metric names in report order
    (StandardDeviation included when the file has it); ``document`` the parsed JSON document
    (None for CSV and parquet); ``kind`` the kind of file read.
    """

    path: Path
    kind: SavedKind
    rows: list[MetricRow]
    metrics: list[str]
    document: dict[str, Any] | None = None


#: Each status by the text the JSON and parquet results write for it.
STATUS_OF = {status.value: status for status in PairStatus}


__all__ = ["STATUS_OF", "SavedKind", "SavedResult"]
