"""fixtures/bad (scripts/make_bad_fixtures.py): broken inputs of the project's own.

For every case: no traceback (API and CLI), every broken file named in the report with its
problem, every other tensor compared with exactly the numbers of the clean network. Rule cases
cannot run at all: a RuleError naming the file and the JSON path, exit 2 on the command line.
"""

from __future__ import annotations

import csv
import json
import math
from functools import lru_cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES

from compare.runs.network import NetworkResult
from compare.runs.folders import run_network
from compare.cli import app
from compare.errors import RuleError
from compare.records import PairStatus

BAD = FIXTURES / "bad"
MANIFEST = json.loads((BAD / "MANIFEST.json").read_text())
CASES = MANIFEST["cases"]
runner = CliRunner()


def _run(case: dict, rule: str | None = None) -> NetworkResult:
    return run_network(BAD / case["left"], BAD / case["right"], BAD / (rule or case["rule"]))


@lru_cache(maxsize=1)
def _clean() -> NetworkResult:
    return _run(MANIFEST["clean"])


def _reasons(result: NetworkResult, op: str) -> str:
    return " | ".join("; ".join(r.reasons) for r in result.rows if op in r.left_op.split(","))


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_the_clean_network_compares_everything_it_can() -> None:
    summary = _clean().summary()
    assert summary == {"compared": 11, "not comparable": 0, "missing on left": 2, "missing on right": 0}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_broken_file_is_named_with_its_problem(name: str) -> None:
    case = CASES[name]
    result = _run(case)
    assert not any("internal error" in "; ".join(r.reasons) for r in result.rows)
    for broken in case["broken"]:
        if broken.get("skipped"):
            # hashed files whose mapping.csv row was refused: listed with the reason in Run.skipped
            # (their operator's row says "no dump file"; see docs/reliability.md)
            text = " | ".join(f"{p.name}: {why}" for p, why in result.left.skipped)
            assert broken["file"] in text, (broken, text)
            entry = next(why for p, why in result.left.skipped if p.name == broken["file"]
                         and all(n in why for n in broken["needles"]))
            assert entry
            if broken["op"]:
                row = next(r for r in result.rows if r.left_op == broken["op"])
                assert row.status is PairStatus.MISSING_LEFT
            continue
        if broken["file"].endswith(".npy"):
            text = " | ".join("; ".join(r.reasons) for r in result.rows)
        elif "tensor" in broken:
            row = next(r for r in result.rows if r.tensor_id == broken["tensor"])
            assert row.status is PairStatus.NOT_COMPARABLE
            text = "; ".join(row.reasons)
        else:
            text = _reasons(result, broken["op"])
        assert broken["file"] in text, (name, broken["file"], text)
        for needle in broken["needles"]:
            assert needle in text, (name, broken["file"], needle, text)


@pytest.mark.parametrize("name", sorted(CASES))
def test_healthy_tensors_keep_the_clean_numbers(name: str) -> None:
    case = CASES[name]
    result = _run(case)
    clean = {r.tensor_id: r for r in _clean().rows if r.tensor_id}
    broken_files = [b["file"] for b in case["broken"]]
    healthy = 0
    for row in result.rows:
        text = "; ".join(row.reasons)
        if row.tensor_id is None or any(f in text for f in broken_files):
            continue
        reference = clean[row.tensor_id]
        assert row.status is reference.status, (row.tensor_id, row.reasons)
        for metric, value in reference.metrics.items():
            assert _same(row.metrics.get(metric), value), (name, row.tensor_id, metric)
        assert row.std == reference.std
        healthy += 1
    assert healthy >= 5
    # and nothing disappeared: every operator of the clean report still has its row(s)
    assert {r.left_op for r in _clean().rows} == {r.left_op for r in result.rows}
    assert sum(result.summary().values()) == len(result.rows)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_operator_of_both_sides_appears(name: str) -> None:
    result = _run(CASES[name])
    left_cells = {n for r in result.rows for n in r.left_op.split(",")}
    right_cells = {n for r in result.rows for n in r.right_op.split(",")}
    for op in result.left.ops:
        assert op in left_cells or op in result.pairing.unmatched_left, op
    for op in result.right.ops:
        assert op in right_cells or op in result.pairing.unmatched_right, op


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_runs_every_case_without_traceback(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    out = tmp_path / "result.csv"
    result = runner.invoke(app, ["-l", str(BAD / case["left"]), "-r", str(BAD / case["right"]),
                                 "-f", str(BAD / case["rule"]), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    text = "\n".join(r["FailReason"] for r in rows)
    for broken in case["broken"]:
        if not broken.get("skipped"):
            assert broken["file"] in text


@pytest.mark.parametrize("name", sorted(MANIFEST["rules"]))
def test_broken_rules_stop_the_run_with_the_json_path(name: str, tmp_path: Path) -> None:
    case = MANIFEST["rules"][name]
    with pytest.raises(RuleError) as info:
        _run(case, rule=f"rules/{name}")
    message = str(info.value)
    assert name in message
    for needle in case["needles"]:
        assert needle in message
    out = tmp_path / "r.csv"
    result = runner.invoke(app, ["-l", str(BAD / case["left"]), "-r", str(BAD / case["right"]),
                                 "-f", str(BAD / "rules" / name), "-o", str(out)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert name in result.stderr and not out.exists()


def test_manifest_names_only_files_that_exist() -> None:
    for case in CASES.values():
        for broken in case["broken"]:
            folder = BAD / (case["right"] if broken["file"].endswith(".npy") else case["left"])
            assert (folder / broken["file"]).is_file(), broken["file"]
