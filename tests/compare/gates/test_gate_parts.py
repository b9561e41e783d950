"""``evaluate(rows, policy, parts=...)``: a part of a multi-part run that is missing (not compared,
or lost) is one incomplete failure naming it, strict policy or not, never waived, listed first;
its row (``PartReport.row``) is that failure's row and is not failed a second time (docs/policy.md,
*Parts missing from a multi-part run*)."""

from __future__ import annotations

from pathlib import Path

from compare.records import MetricRow, Outcome, PairStatus, PartReport, PartStatus, part_name
from compare.verdict.gates import evaluate, parse_gate
from compare.verdict.policy import Policy
from compare.verdict.policy_file import load_policy

METRICS = ["CosineSimilarity"]


def _compared(rank: int, cos: float = 0.999) -> MetricRow:
    return MetricRow(0, "MatMul", "mm", "mm", "mm:output:0", left_dtype="float32", right_dtype="float32", shape=(4,),
                     metrics={"CosineSimilarity": cos}, rank=rank, iteration=0)


def _gate(text: str = "CosineSimilarity>=0.9") -> Policy:
    return Policy.from_gates([parse_gate(text)])


def _policy(tmp_path: Path, text: str) -> Policy:
    path = tmp_path / "gates.toml"
    path.write_text(text)
    return load_policy(path)


COMPARED = PartReport(0, None, 0, PartStatus.COMPARED, 0.1)
MISSING = PartReport(1, None, 0, PartStatus.NOT_COMPARED, 0.0, reason="dump.json (byte 12): not valid JSON")
LOST = PartReport(2, None, 0, PartStatus.LOST, 3.0, worker="tcp://w:1", reason="its cluster task failed 3 times")


def test_part_names_and_rows() -> None:
    assert part_name(1, None, 0) == "rank 1 iteration 0" and part_name(None, None, 3) == "iteration 3"
    assert part_name(0, 2, 1) == "rank 0 graph 2 iteration 1"
    row = MISSING.row(0, METRICS)
    assert (row.left_op, row.right_op, row.tensor_id, row.status) == ("rank 1 iteration 0", "rank 1 iteration 0", None,
                                                                      PairStatus.NOT_COMPARABLE)
    assert (row.rank, row.graph, row.iteration, row.metrics) == (1, None, 0, {"CosineSimilarity": None})
    assert row.reasons == ["part rank 1 iteration 0 not compared: dump.json (byte 12): not valid JSON"]
    assert MISSING.stands_for(row) and not LOST.stands_for(row) and not MISSING.stands_for(_compared(1))
    assert LOST.why == "part rank 2 iteration 0 lost: its cluster task failed 3 times"
    assert MISSING.missing and LOST.missing and not COMPARED.missing


def test_a_missing_part_fails_a_strict_gate_once() -> None:
    rows = [_compared(0), MISSING.row(0, METRICS)]
    verdict = evaluate(rows, _gate(), parts=[COMPARED, MISSING])
    assert verdict.outcome is Outcome.INCOMPLETE and verdict.exit_code == 3
    (failure,) = verdict.failures  # the part's failure, not also its row's "not compared"
    assert (failure.part, failure.row, failure.incomplete) == ("rank 1 iteration 0", 1, True)
    assert failure.message == MISSING.why and failure.left_op == "rank 1 iteration 0"
    # without the parts (a saved CSV), the part's row is one more row not compared: strict fails it
    (row_failure,) = evaluate(rows, _gate()).failures
    assert row_failure.part is None and row_failure.row == 1 and row_failure.incomplete


def test_a_missing_part_fails_a_non_strict_policy(tmp_path: Path) -> None:
    policy = _policy(tmp_path, "strict = false\n[defaults]\nCosineSimilarity = 0.9\n")
    rows = [_compared(0), MISSING.row(0, METRICS)]
    assert evaluate(rows, policy).outcome is Outcome.PASSED  # what the rows alone say
    verdict = evaluate(rows, policy, parts=[COMPARED, MISSING])
    assert verdict.outcome is Outcome.INCOMPLETE and [f.part for f in verdict.failures] == ["rank 1 iteration 0"]


def test_no_waiver_covers_a_missing_part(tmp_path: Path) -> None:
    policy = _policy(tmp_path, '[defaults]\ncos = 0.9\n[[waiver]]\nrank = [1, 2]\nreason = "known broken ranks"\n')
    rows = [_compared(0), MISSING.row(0, METRICS), LOST.row(0, METRICS)]
    verdict = evaluate(rows, policy, parts=[COMPARED, MISSING, LOST])
    assert verdict.outcome is Outcome.INCOMPLETE and not verdict.waived
    assert [(f.part, f.row) for f in verdict.failures] == [("rank 1 iteration 0", 1), ("rank 2 iteration 0", 2)]


def test_part_failures_come_first_and_a_value_failure_decides() -> None:
    rows = [_compared(0), MISSING.row(0, METRICS), _compared(3, cos=0.5)]
    verdict = evaluate(rows, _gate(), parts=[COMPARED, MISSING])
    assert verdict.outcome is Outcome.FAILED and verdict.exit_code == 1
    assert [(f.part, f.row, f.incomplete) for f in verdict.failures] == [("rank 1 iteration 0", 1, True),
                                                                           (None, 2, False)]


def test_a_part_without_its_row_still_fails() -> None:
    """A saved result written before missing parts had rows: the failure has no row (-1)."""
    verdict = evaluate([_compared(0)], _gate(), parts=[COMPARED, MISSING])
    assert verdict.outcome is Outcome.INCOMPLETE
    assert [(f.part, f.row) for f in verdict.failures] == [("rank 1 iteration 0", -1)]


def test_parts_named_alike_each_take_their_own_row() -> None:
    """Two ``proc{pid}`` parts of one step have no rank: the same name, one row each."""
    first = PartReport(None, None, 0, PartStatus.NOT_COMPARED, 0.0, reason="a")
    second = PartReport(None, None, 0, PartStatus.LOST, 0.0, reason="b")
    rows = [first.row(0, METRICS), second.row(0, METRICS)]
    verdict = evaluate(rows, _gate(), parts=[first, second])
    assert [(f.row, f.message) for f in verdict.failures] == [(0, "part iteration 0 not compared: a"),
                                                              (1, "part iteration 0 lost: b")]


def test_not_gated_stays_not_gated() -> None:
    verdict = evaluate([_compared(0), MISSING.row(0, METRICS)], Policy(strict=False), parts=[COMPARED, MISSING])
    assert verdict.outcome is Outcome.NOT_GATED and verdict.exit_code == 0 and not verdict.failures
