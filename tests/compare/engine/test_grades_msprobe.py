"""Agreement with msprobe's own Result / Err_message columns (../shared/msprobe-real): vcompare
compares the real msprobe trees, grades its rows (compare.engine.grades) and every tensor row's
grade must be msprobe's, Result and messages alike, except the documented difference below.

msprobe lists non-tensor arguments (ints, floats, bools, ``None`` items) as rows too; so does
vcompare (argument rows, compare.runs.msprobe_rows), and their grades are checked as well.
vcompare's TensorIndex numbers the leaves of a call's inputs (outputs) in turn, non-tensors
included, in msprobe's row order: msprobe's ``Functional.conv2d.0.forward.input.3.0`` is the
call's fourth input leaf. Statistics rows are built here from the statistics comparison
(``compare.stats``) with the metric names of statistics MetricRows (``MaxDiff`` ...
``L2NormRelDiff``, ``ChecksumDiff``)."""

from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from compare.api import compare_network
from compare.engine.grades import GradeMode, grade_rows
from compare.records import ARGUMENT_METRIC, MetricRow, RowGrade, RowKind
from compare.stats import StatsRow
from conftest import shared_path


@dataclass(frozen=True)
class Case:
    """One of msprobe's comparisons: its result folder, the two trees, the grading mode."""

    name: str
    left: str
    right: str
    mode: GradeMode


CASES = [
    Case("t_L1_perturb", "t_L1_perturb", "t_L1_base", GradeMode.TENSOR),
    Case("t_L1_bf16", "t_L1_bf16", "t_L1_base", GradeMode.TENSOR),
    Case("t_L1_self", "t_L1_base", "t_L1_base", GradeMode.TENSOR),
    Case("s_L1_bf16", "s_L1_bf16", "s_L1_base", GradeMode.STATISTICS),
    Case("s_L1_self", "s_L1_base", "s_L1_base", GradeMode.STATISTICS),
    Case("s_mix_perturb", "s_mix_perturb", "s_mix_base", GradeMode.STATISTICS),
    Case("s_L1_md5", "s_L1_md5_perturb", "s_L1_md5_base", GradeMode.STATISTICS),
]

#: Rows where vcompare's grade is known to differ from msprobe's (docs/msprobe.md), none since the
#: ``None`` items are rows too: msprobe's call finding on a ``None`` output 0 (``conv2d.0.backward``'s
#: gradient of the image) is now on vcompare's row for it as well.
KNOWN: dict[tuple[str, str], RowGrade] = {}

#: statistic name in compare.stats -> the metric stem of statistics MetricRows.
STAT_METRICS = {"max": "Max", "min": "Min", "avg": "Avg", "l2norm": "L2Norm"}


@dataclass(frozen=True)
class MsprobeRow:
    name: str
    dtype: str
    result: str
    messages: tuple[str, ...]


def msprobe_rows(case: str) -> list[MsprobeRow]:
    folder = shared_path("msprobe-real", "msprobe_compare", case, "step0")
    (path,) = sorted(folder.glob("compare_result_*.csv"))
    with path.open(newline="") as f:
        return [MsprobeRow(r["NPU Name"], r["NPU Dtype"], r["Result"], tuple(json.loads(r["Err_message"])))
                for r in csv.DictReader(f)]


def tensor_indexes(rows: list[MsprobeRow]) -> dict[str, str]:
    """msprobe row name -> vcompare TensorIndex: the leaves of each call's inputs (``input``,
    keyword arguments, ``parameters``) and outputs numbered in row order; the weight gradients of a
    ``{module}.parameters_grad.{n}`` call are its outputs for vcompare."""
    out: dict[str, str] = {}
    counters: Counter[tuple[str, str]] = Counter()
    for r in rows:
        if ".parameters_grad." in r.name:  # {module}.parameters_grad.{n}.{weight name}: vcompare's outputs
            call, kind = r.name.rsplit(".", 1)[0], "output"
        else:
            marker, kind = next(((m, k) for m, k in ((".output.", "output"), (".input.", "input"),
                                                     (".parameters.", "input")) if m in r.name), ("", ""))
            if not marker:
                continue
            call = r.name.split(marker, 1)[0]
        out[r.name] = f"{call}:{kind}:{counters[call, kind]}"
        counters[call, kind] += 1
    return out


def statistics_row(s: StatsRow) -> MetricRow:
    """The MetricRow of one statistics row, with the statistics MetricRows' metric names (an
    argument row: its ``ArgumentDiff``)."""
    if s.argument is not None:
        return MetricRow(index=s.index, op_type=s.op_type, left_op=s.left_op, right_op=s.right_op,
                         tensor_id=s.tensor_id, left_dtype=s.left_dtype, right_dtype=s.right_dtype, shape=s.shape,
                         metrics={ARGUMENT_METRIC: 0.0 if s.argument.same else 1.0}, status=s.status,
                         kind=RowKind.ARGUMENT)
    metrics: dict[str, float | None] = {}
    for name, stem in STAT_METRICS.items():
        value = s.values.get(name)
        metrics[f"{stem}Diff"] = float(value.diff) if value is not None and value.diff is not None else None
        metrics[f"{stem}RelDiff"] = float(value.rel) if value is not None and value.rel is not None else None
    checksum = s.values.get("checksum")
    if checksum is not None and checksum.diff is not None:
        metrics["ChecksumDiff"] = 0.0 if checksum.diff in ("same", 0.0) else 1.0
    return MetricRow(index=s.index, op_type=s.op_type, left_op=s.left_op, right_op=s.right_op,
                     tensor_id=s.tensor_id, left_dtype=s.left_dtype, right_dtype=s.right_dtype, shape=s.shape,
                     metrics=metrics, reasons=list(s.reasons), status=s.status, rank=s.rank,
                     iteration=s.iteration, graph=s.graph)


def graded_rows(case: Case) -> list[MetricRow]:
    trees: Path = shared_path("msprobe-real", "trees")
    result = compare_network(trees / case.left, trees / case.right, allow_same=True)
    if case.mode is GradeMode.TENSOR:
        rows = list(result.rows)
    else:
        assert result.network is not None and result.network.stats is not None
        rows = [statistics_row(s) for s in result.network.stats.rows]
    grade_rows(rows, mode=case.mode)
    return rows


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_result_and_messages_agree_with_msprobe(case: Case):
    expected = msprobe_rows(case.name)
    rows = graded_rows(case)
    by_index = {r.tensor_id: r for r in rows}
    indexes = tensor_indexes(expected)
    checked, skipped, differ = 0, 0, []
    for ms in expected:
        row = by_index.get(indexes.get(ms.name, ""))
        if row is None:
            assert not ms.dtype.startswith("torch."), f"{ms.name}: a tensor msprobe lists and vcompare does not"
            skipped += 1
            continue
        if ms.dtype.startswith("torch."):
            assert row.left_dtype is not None and f"torch.{row.left_dtype}" == ms.dtype, ms.name  # the same tensor
        else:  # a non-tensor argument: msprobe's <class 'int'>, N/A for None
            assert ms.dtype == ("N/A" if row.left_dtype == "None" else f"<class '{row.left_dtype}'>"), ms.name
        assert row.grade is not None
        checked += 1
        known = KNOWN.get((case.name, ms.name))
        if known is not None:
            assert row.grade == known, ms.name
            continue
        if (str(row.grade.grade), row.grade.messages) != (ms.result, ms.messages):
            differ.append(f"{ms.name}: msprobe {ms.result} {list(ms.messages)}, vcompare {row.grade}")
    assert not differ, "\n".join(differ)
    assert checked == len(rows)  # every vcompare row has its msprobe row
    assert checked + skipped == len(expected)


def test_the_cases_hold_every_grade():
    """The cases are worth checking: errors and warnings of each kind occur in msprobe's output."""
    seen = {(r.result, m) for case in CASES for r in msprobe_rows(case.name) for m in r.messages}
    assert {m.split(":", 1)[0] for _, m in seen} == {"error", "warning"}
    assert len({m for _, m in seen}) >= 5
