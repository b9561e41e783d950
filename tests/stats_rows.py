"""Test helper: a statistics comparison through the API, gates and policy applied (statistics
rows are MetricRows on main: :meth:`compare.stats_table.StatsTable.metric_row`)."""

from __future__ import annotations

from pathlib import Path

from compare.api import ComparisonResult, compare_network


def compare_statistics(left: Path, right: Path, **options: object) -> ComparisonResult:
    """:func:`compare.compare_network` of two statistics dumps (``gates`` / ``policy`` as there)."""
    return compare_network(left, right, **options)  # type: ignore[arg-type]
