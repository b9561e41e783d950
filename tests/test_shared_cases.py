"""Agreement with the reference tool on the shared cases (../shared/cases).

For every case with ``oracle/network/result_*.csv``: every oracle row that has numbers is in our
result (same TensorIndex) with every metric within 1e-6 absolute + 1e-5 relative of the oracle,
or of ``oracle/ref_metrics.csv`` (float64 truth) where the reference's float32 arithmetic drifts;
StandardDeviation within 1e-3; computed-NaN and not-computed cells agree; every operator named in
the oracle appears in ours. Skipped (with a message) when ../shared is absent.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pytest

from conftest import shared_path

from compare.runs.folders import run_network
from compare.records import MetricRow, PairStatus

NETWORK_CASES = ["ascend_vs_caffe_npy", "ascend_vs_ascend", "ascend_v1_protobuf", "quant_vs_caffe"]
ABS_TOL, REL_TOL, STD_TOL = 1e-6, 1e-5, 1e-3
_STD_RE = re.compile(r"\(([^;]+);([^)]+)\),\(([^;]+);([^)]+)\)")


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


def _oracle(case: Path) -> tuple[list[str], list[list[str]]]:
    (result,) = sorted((case / "oracle" / "network").glob("result_*.csv"))
    return _read_csv(result)


def _ref_metrics(case: Path) -> dict[str, dict[str, str]]:
    header, rows = _read_csv(case / "oracle" / "ref_metrics.csv")
    return {row[0]: dict(zip(header, row)) for row in rows}


def _close(ours: float, expected: float) -> bool:
    return abs(ours - expected) <= ABS_TOL + REL_TOL * abs(expected)


def _std_close(ours: tuple[float, ...] | None, cell: str) -> bool:
    match = _STD_RE.fullmatch(cell)
    assert match, cell
    if ours is None:
        return False
    for value, text in zip(ours, match.groups()):
        expected = float(text)
        value = 0.0 if abs(value) < 0.001 else value
        if math.isnan(expected):
            if not math.isnan(value):
                return False
        elif math.isinf(expected):
            if value != expected:
                return False
        elif not abs(value - expected) <= STD_TOL:
            return False
    return True


def _run_case(name: str) -> tuple[Path, object]:
    case = shared_path("cases", name)
    spec = json.loads((case / "case.json").read_text())
    rule = case / spec["fusion_json"] if spec.get("fusion_json") else None
    quant = case / spec["quant_json"] if spec.get("quant_json") else None
    result = run_network(case / spec["left_dir"], case / spec["right_dir"], rule, quant_rule=quant)
    return case, result


@pytest.fixture(scope="module", params=NETWORK_CASES)
def case_result(request: pytest.FixtureRequest):
    return _run_case(request.param)


def test_every_numeric_oracle_row_agrees(case_result) -> None:
    case, result = case_result
    header, rows = _oracle(case)
    truth = _ref_metrics(case)
    ours: dict[str, MetricRow] = {r.tensor_id: r for r in result.rows if r.tensor_id}
    metric_cols = [c for c in header[header.index("Shape") + 1:] if c != "CompareFailReason"]
    problems = []
    for cells in rows:
        row = dict(zip(header, cells))
        tid = row["TensorIndex"]
        if tid == "NaN":
            continue
        has_numbers = any(row[m] not in ("NaN",) for m in metric_cols)
        if not has_numbers:
            continue
        mine = ours.get(tid)
        if mine is None:
            problems.append(f"{tid}: missing from our result")
            continue
        for metric in metric_cols:
            cell = row[metric]
            if metric == "StandardDeviation":
                if cell != "NaN" and not _std_close(mine.std, cell):
                    problems.append(f"{tid} {metric}: ours {mine.std} vs oracle {cell}")
                continue
            value = mine.metrics.get(metric)
            if cell == "NaN":
                if value is not None:
                    problems.append(f"{tid} {metric}: ours {value} but the oracle did not compute it")
            elif cell == "nan":
                if value is None or not math.isnan(value):
                    problems.append(f"{tid} {metric}: ours {value}, oracle nan")
            else:
                expected = float(cell)
                alt = truth.get(tid, {}).get(metric)
                ok = value is not None and (_close(value, expected) or (alt not in (None, "", "NaN", "nan")
                                                                        and _close(value, float(alt))))
                if not ok:
                    problems.append(f"{tid} {metric}: ours {value} vs oracle {cell} (float64 truth {alt})")
    assert not problems, "\n".join(problems)


def test_every_oracle_operator_is_reported(case_result) -> None:
    case, result = case_result
    header, rows = _oracle(case)
    left_col, right_col = header.index("NPUDump"), header.index("GroundTruth")
    ours_left = {r.left_op for r in result.rows}
    ours_right = {r.right_op for r in result.rows}
    missing = set()
    for cells in rows:
        if cells[left_col] != "*" and cells[left_col] not in ours_left:
            missing.add(cells[left_col])
        if cells[left_col] == "*" and cells[right_col] not in ours_right:
            missing.add(cells[right_col])
    assert not missing, f"operators in the oracle but not in our report: {sorted(missing)}"


def test_same_tensor_rows_as_oracle(case_result) -> None:
    """Not only the numeric rows: every oracle TensorIndex appears in ours."""
    case, result = case_result
    header, rows = _oracle(case)
    col = header.index("TensorIndex")
    oracle_ids = {cells[col] for cells in rows if cells[col] != "NaN"}
    ours = {r.tensor_id for r in result.rows if r.tensor_id}
    assert oracle_ids <= ours, sorted(oracle_ids - ours)


# --------------------------------------------------------------------------------------------
# quant_vs_caffe: the ops between a quant and a dequant op.


def test_quant_case_rows_and_skipped_middle_ops() -> None:
    """Row for row the oracle, plus one NOT_COMPARABLE row per op the quant filter skips.

    The reference writes no row at all for the int8/int32 Conv2D ops between AscendQuant and
    AscendDequant (case.json ``features.skipped_middle_ops``); we write one whose reason says why
    and where the comparison resumes.
    """
    case, result = _run_case("quant_vs_caffe")
    spec = json.loads((case / "case.json").read_text())
    skipped = spec["features"]["skipped_middle_ops"]
    header, rows = _oracle(case)
    cols = [header.index(c) for c in ("Index", "OpType", "NPUDump", "GroundTruth", "TensorIndex")]
    expected = [tuple(cells[c] for c in cols) for cells in rows]
    ours = [(str(r.index), r.op_type or "NaN", r.left_op, r.right_op, r.tensor_id or "NaN")
            for r in result.rows if r.left_op not in skipped]
    assert ours == expected
    middle = {r.left_op: r for r in result.rows if r.left_op in skipped}
    assert sorted(middle) == sorted(skipped)
    for name, row in middle.items():
        assert row.status is PairStatus.NOT_COMPARABLE and row.tensor_id is None and row.op_type == "Conv2D"
        reason = " ".join(row.reasons)
        assert "between a quant and a dequant op: int8/int32 data has no float golden" in reason
        assert f"compared after AscendDequant {name}_dequant_layer" in reason
    assert result.scenario is not None and result.scenario.row == 2
    assert result.pairing.mode == "fusion+quant"
