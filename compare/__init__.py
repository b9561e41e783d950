"""vcompare: accuracy comparison of ML operator dumps.

Public API (imported lazily so that ``vcompare --help`` stays fast):

- :class:`CompareRequest` -- every option of one comparison (``vcompare --help``) in one frozen
  record; ``request.validate()`` checks which go together (:mod:`compare.request`)
- :func:`load_run` -- a dump folder or file -> :class:`compare.records.Run`
- :func:`pair_runs` -- two runs (+ rule files or a mapping file) -> :class:`compare.records.Pairing`,
  paired as the command line pairs them (MindSpore / msprobe by scope name, overflow rows)
- :func:`compare_pairs` -- pairs -> list of :class:`compare.records.MetricRow`
- :func:`compare_request` -- a request: all of the above, gates checked -> :class:`compare.api.ComparisonResult`
  (``.frame`` DataFrame, ``.rows``, ``.verdict``, ``.passed``, ``.exit_code``, ``.to_json()`` text, ``.to_dict()``)
- :func:`compare_network` -- the same from keywords: ``compare_network(left, right, fusion_rule, **fields)``
- :func:`regate` -- a saved result (.json / .csv / .parquet) checked again -> ``ComparisonResult``
- :func:`write_report` -- rows -> result.csv / result.txt
- :func:`compare_operator` -- one tensor element by element -> :class:`compare.runs.single_op.OperatorResult`
- :func:`check_consistency` -- one dump tree, rank groups (``"dp:8"``) -> the ranks whose replicas
  disagree, :class:`compare.consistency.records.ConsistencyResult` (docs/consistency.md)
"""

from __future__ import annotations

import importlib
from typing import Any

#: Used only when the package metadata is absent (a source tree never installed); the installed
#: version comes from ``importlib.metadata`` (:func:`compare.reports.files.tool_version`).
__version__ = "0.1.0"

_API = {
    "CompareRequest": "compare.request",
    "load_run": "compare.loaders",
    "pair_runs": "compare.api",
    "compare_pairs": "compare.engine",
    "compare_network": "compare.api",
    "compare_request": "compare.api",
    "ComparisonResult": "compare.api",
    "regate": "compare.api",
    "write_report": "compare.reports.network",
    "compare_operator": "compare.runs.single_op",
    "check_consistency": "compare.consistency.run",
}

__all__ = sorted(_API) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'compare' has no attribute {name!r}")

    return getattr(importlib.import_module(module), name)
