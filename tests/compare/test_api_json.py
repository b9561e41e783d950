"""``ComparisonResult.to_json()`` is the text ``--json`` writes, ``to_dict()`` its document (issue 30)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import FIXTURES

from compare import compare_network, regate

DEMO = FIXTURES / "demo"


def test_to_json_is_the_text_json_writes_and_to_dict_its_document(tmp_path: Path) -> None:
    result = compare_network(DEMO / "npu", DEMO / "golden", DEMO / "model.json", gates=["cos>=0.99"])
    text = result.to_json()
    assert isinstance(text, str) and text == result.write_json(tmp_path / "r.json").read_text()
    document = result.to_dict()
    assert isinstance(document, dict) and json.loads(text) == document
    assert document["verdict"]["outcome"] == "passed" and len(document["rows"]) == len(result.rows)
    assert result.to_dict(with_rows=False)["rows"] == []  # the rows written in turn by --json
    again = regate(tmp_path / "r.json", gates=["cos>=0.99"])
    assert json.loads(again.to_json())["verdict"] == document["verdict"]
