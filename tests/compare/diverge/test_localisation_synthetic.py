"""Acceptance (issue 16): on networks with errors injected at known operators
(compare.testing.synthetic_divergence), the origins found are exactly the injected operators, in
order; every operator downstream is inherited; the consumers of a perturbed weight are
input-differs; the rest is ok. Through the API, the JSON result and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare import compare_network
from compare.cli import app
from compare.diverge.records import GraphSource, Verdict
from compare.testing.synthetic_divergence import make_divergence_network

CASES = [
    dict(seed=0, inject={"a2": 0.05, "b4": 0.02}),
    dict(seed=1, inject={"b2": 0.05}, perturb_inputs={"w_m1": 0.05}),
    dict(seed=2, inject={"a4": 0.05, "c1": 0.5}),  # c1: the float16 head (fp16 bounds)
    dict(seed=3, inject={"a3": 0.05, "b2": 0.05}, perturb_inputs={"w_b4": 0.05}),
    dict(seed=4, perturb_inputs={"w_a1": 0.05}),
    dict(seed=5),
]


@pytest.mark.parametrize("spec", CASES, ids=lambda s: f"seed{s['seed']}")
def test_origins_are_the_injected_operators(tmp_path: Path, spec: dict) -> None:
    case = make_divergence_network(tmp_path, **spec)
    result = compare_network(case.left, case.right, case.rule)
    assert result.graph is not None and result.graph.source is GraphSource.FUSION_RULE
    by_verdict: dict[Verdict, list[str]] = {}
    for verdict in result.verdicts:
        by_verdict.setdefault(verdict.verdict, []).append(verdict.op)
    assert by_verdict.get(Verdict.ORIGIN, []) == [op for op in case.order if op in case.injected]
    assert by_verdict.get(Verdict.INPUT_DIFFERS, []) == [op for op in case.order if op in case.data_differs]
    assert sorted(by_verdict.get(Verdict.INHERITED, [])) == sorted(case.downstream)
    assert sorted(by_verdict.get(Verdict.OK, [])) == sorted(case.clean)
    first = result.first_divergence
    expected_first = next((op for op in case.order if op in case.injected or op in case.data_differs), None)
    assert (first.op if first is not None else None) == expected_first
    for verdict in result.verdicts:  # every inherited operator blames a producer that fails
        if verdict.verdict is Verdict.INHERITED:
            assert verdict.blame and set(verdict.blame) <= set(case.edges[verdict.op]) | {"merge"}


def test_json_cli_and_explain(tmp_path: Path) -> None:
    case = make_divergence_network(tmp_path / "case", seed=0, inject={"a2": 0.05})
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["-l", str(case.left), "-r", str(case.right), "-f", str(case.rule),
                                      "-o", str(out / "r.csv"), "--json", str(out / "r.json"), "--verdicts",
                                      "--explain", "out"])
    assert result.exit_code == 0, result.output
    assert "first divergence: a2 [Add]" in result.output and "wrong itself (origin)" in result.output
    assert "explain out:" in result.output and "a2 [Add]: origin" in result.output
    document = json.loads((out / "r.json").read_text())
    localisation = document["localisation"]
    assert localisation["first_divergence"]["op"] == "a2"
    assert {v["op"]: v["verdict"] for v in localisation["verdicts"]}["a5"] == "inherited"
    header, *lines = (out / "r.csv").read_text().splitlines()
    assert header.endswith(",Verdict")
    verdict_of = {line.split(",")[2]: line.rsplit(",", 1)[1] for line in lines}
    assert verdict_of["a2"] == "origin" and verdict_of["a1"] == "ok" and verdict_of["out"] == "inherited"


def test_without_graph_edges_the_dump_order_still_finds_the_first(tmp_path: Path) -> None:
    """Without -f (by name against the golden folder) there are no edges: the first divergence is
    still the injected operator (its inputs pass, its outputs fail)."""
    case = make_divergence_network(tmp_path, seed=0, inject={"b2": 0.05})
    result = compare_network(case.left, case.right)
    assert result.graph.source is GraphSource.DUMP_ORDER and not result.graph.edges
    assert result.first_divergence is not None and result.first_divergence.op == "b2"
    assert result.first_divergence.verdict is Verdict.ORIGIN


def test_first_nan_is_named(tmp_path: Path) -> None:
    """NaN/Inf counted in the kernel pass: the first tensor holding them is named, and its operator
    is the first divergence (a NaN breaks every bound)."""
    case = make_divergence_network(tmp_path, seed=0, nonfinite_at="b3")
    result = compare_network(case.left, case.right, case.rule)
    assert result.localisation.first_nonfinite == "b3:output:0"
    assert result.first_divergence.op == "b3" and result.first_divergence.verdict is Verdict.ORIGIN
    b3 = result.localisation.verdict_of("b3")
    assert b3.outputs[0].nan == 3 and b3.outputs[0].inf == 2
    row = next(r for r in result.rows if r.tensor_id == "b3:output:0")
    assert row.left_counts is not None and (row.left_counts.nan, row.left_counts.inf) == (3, 2)
    assert row.right_counts is not None and row.right_counts.nan == 0
