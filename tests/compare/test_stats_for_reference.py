"""A not-comparable pair of an msprobe statistics run keeps its statistics in the statistics
table ("statistics shown for reference", docs/policy.md): its row is not replaced by an empty one.

The regression: the rows of the table were chosen with ``or``, and a StatsRow is falsy unless
compared, so a not-comparable row lost its values (every cell NaN, the sources empty) although
its reason said they were shown. Seen on msprobe's own MindSpore-vs-PyTorch fixture
(``Tensor.__add__.0.forward``, ``[5, 2]`` against ``[]``)."""

from __future__ import annotations

import json
from pathlib import Path

from compare.api import compare_network
from compare.records import PairStatus
from compare.testing.synthetic_msprobe import write_msprobe_dump


def test_a_not_comparable_statistics_row_keeps_its_values(tmp_path: Path) -> None:
    left = write_msprobe_dump(tmp_path / "l", task="statistics").folders[(0, 0)]
    right = write_msprobe_dump(tmp_path / "r", task="statistics").folders[(0, 0)]
    document = json.loads((right / "dump.json").read_text())
    call = next(iter(document["data"].values()))
    leaf = next(v for v in call.get("input_args", []) if isinstance(v, dict) and v.get("type") == "torch.Tensor")
    leaf["shape"] = [1]  # another element count: not the same tensor, not comparable
    (right / "dump.json").write_text(json.dumps(document))

    result = compare_network(left, right)
    stats = result.network.stats
    assert stats is not None
    refused = [row for row in stats.rows if row.status is PairStatus.NOT_COMPARABLE]
    assert refused, [row.status for row in stats.rows]
    for row in refused:
        assert "shown for reference" in "; ".join(row.reasons)
        assert row.values and row.left_source and row.right_source
        assert all(diff.left is not None and diff.right is not None for diff in row.values.values())
