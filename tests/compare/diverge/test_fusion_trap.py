"""The ``-f`` trap (issue 30): an NPU dump paired by name with Caffe goldens names a fused operator
as the first divergence because it meets the golden of its first layer. The run says so (a
warning before the summary, the JSON notes) and its first divergence line says uncertain; with
``-f`` nothing changes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, shared_path
from typer.testing import CliRunner

from compare import compare_network
from compare.cli import app
from compare.diverge.fusion_doubt import doubt
from compare.diverge.records import GraphSource, Localisation, OpGraph, OpNode, OpVerdict, Verdict
from compare.pairing.fusion_trap import Regrouped, regrouped_goldens
from compare.pairing.scenarios import Scenario, Strategy
from compare.records import OpDump, Run, RunKind

DEMO = FIXTURES / "demo"
CURE = "run with -f MODEL.json (the model's fusion rule: atc --mode=1)"
UNCERTAIN = "vcompare: first divergence (uncertain: paired by name without -f; run with -f MODEL.json): conv1 [Conv2D]"


def _run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_demo_without_f_warns_before_the_summary_and_doubts_the_first_divergence(tmp_path: Path) -> None:
    result = _run("-l", DEMO / "npu", "-r", DEMO / "golden", "-o", tmp_path / "r.csv", "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    warning = ("warning: the first divergence (conv1) is uncertain: paired by name without -f, and the golden of conv1 "
               "is followed by 2 golden(s) no left operator has (bn1, relu1): the NPU most likely fused those layers "
               f"into conv1, whose output then meets the golden of the wrong layer; {CURE}")
    lines = result.output.splitlines()
    assert f"vcompare: {warning}" in lines
    assert lines.index(f"vcompare: {warning}") < next(i for i, line in enumerate(lines) if "vcompare: rows:" in line)
    assert any(line.startswith(UNCERTAIN) for line in lines)
    document = json.loads((tmp_path / "r.json").read_text())
    assert warning in document["notes"] and document["localisation"]["notes"] == [warning]
    assert document["localisation"]["first_divergence"]["op"] == "conv1"  # the verdicts stay as judged


def test_quiet_run_keeps_the_uncertain_line(tmp_path: Path) -> None:
    result = _run("-l", DEMO / "npu", "-r", DEMO / "golden", "-o", tmp_path / "r.csv", "--quiet")
    assert result.exit_code == 0 and "warning:" not in result.output
    assert result.output.splitlines()[-1].startswith(UNCERTAIN)


def test_with_f_nothing_is_in_doubt(tmp_path: Path) -> None:
    result = _run("-l", DEMO / "npu", "-r", DEMO / "golden", "-f", DEMO / "model.json", "-o", tmp_path / "r.csv")
    assert result.exit_code == 0
    assert "uncertain" not in result.output and "vcompare: first divergence: fc1 [FullyConnection]" in result.output
    api = compare_network(DEMO / "npu", DEMO / "golden", DEMO / "model.json")
    assert api.localisation is not None and api.localisation.uncertain is None and api.localisation.notes == ()


def test_first_operator_compared_failing_is_doubted_without_regrouped_goldens(tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    shutil.copytree(DEMO / "golden", golden)
    for extra in golden.glob("bn1.*"):
        extra.unlink()
    for extra in golden.glob("relu1.*"):
        extra.unlink()
    result = compare_network(DEMO / "npu", golden)
    assert result.network is not None and result.network.scenario is not None
    assert result.network.scenario.regrouped == ()
    assert result.localisation is not None and result.localisation.uncertain is not None
    assert result.notes[-1] == ("warning: the first divergence (conv1) is uncertain: paired by name without -f, and "
                                "conv1 is the first operator compared and fails: when the NPU fused layers, by-name "
                                f"pairing meets the golden of the wrong layer from the first operator on; {CURE}")


def _op(name: str, timestamp: int) -> OpDump:
    return OpDump(name=name, op_type=None, path=Path(f"{name}.0.{timestamp}.npy"), timestamp=timestamp)


def _folder(kind: RunKind, names: list[str]) -> Run:
    return Run(root=Path("."), path=Path("."), kind=kind, ops={n: _op(n, i) for i, n in enumerate(names)})


def test_regrouped_goldens_follow_their_operator_and_leave_the_next_ones_weight() -> None:
    left = _folder(RunKind.OFFLINE, ["conv1", "pool1", "res2a_branch1", "res2a"])
    right = _folder(RunKind.NUMPY, ["data", "conv1_weight", "conv1", "bn_conv1", "scale_conv1", "conv1_relu",
                                    "pool1", "res2a_branch1_weight", "res2a_branch1", "res2a_branch1_relu", "res2a",
                                    "res2a_relu"])
    assert regrouped_goldens(left, right) == (Regrouped("conv1", ("bn_conv1", "scale_conv1", "conv1_relu")),
                                              Regrouped("res2a_branch1", ("res2a_branch1_relu",)),
                                              Regrouped("res2a", ("res2a_relu",)))


def _localisation(*verdicts: Verdict) -> Localisation:
    ops = [OpVerdict(op=f"op{i}", op_type=None, position=i, verdict=v) for i, v in enumerate(verdicts)]
    first = next((v for v in ops if v.verdict in (Verdict.ORIGIN, Verdict.INPUT_DIFFERS)), None)
    graph = OpGraph(nodes={v.op: OpNode(v.op) for v in ops}, source=GraphSource.DUMP_ORDER, edges=False)
    return Localisation(verdicts=tuple(ops), graph=graph, first_divergence=first)


@pytest.mark.parametrize(("verdicts", "doubted"), [
    ((Verdict.NOT_COMPARED, Verdict.ORIGIN, Verdict.OK), True),  # the first compared fails
    ((Verdict.OK, Verdict.ORIGIN), False),  # something passed before it, and no golden regrouped
    ((Verdict.OK, Verdict.OK), False),  # nothing diverges
])
def test_doubt_only_in_the_trap(verdicts: tuple[Verdict, ...], doubted: bool) -> None:
    trap = Scenario(None, Strategy.BY_NAME, fusion_missing=True)
    localisation = _localisation(*verdicts)
    assert (doubt(localisation, trap).uncertain is not None) is doubted
    assert doubt(localisation, Scenario(1, Strategy.FUSION, use_fusion=True)) is localisation
    assert doubt(localisation, None) is localisation


def test_a_regrouped_first_divergence_is_doubted_after_passing_operators() -> None:
    localisation = _localisation(Verdict.OK, Verdict.ORIGIN)
    trap = Scenario(None, Strategy.BY_NAME, fusion_missing=True, regrouped=(Regrouped("op1", tuple("abcdefg")),))
    doubted = doubt(localisation, trap)
    assert doubted.uncertain == "paired by name without -f; run with -f MODEL.json"
    assert "followed by 7 golden(s) no left operator has (a, b, c, d, e and 2 more)" in doubted.notes[-1]


def test_shared_caffe_case_without_f(tmp_path: Path) -> None:
    case = shared_path("cases", "ascend_vs_caffe_npy")
    (left,) = sorted((case / "left").glob("*/0/*/*/0"))
    result = _run("-l", left, "-r", case / "right", "-o", tmp_path / "r.csv")
    assert result.exit_code == 0
    assert ("vcompare: warning: the first divergence (conv1) is uncertain: paired by name without -f, and the golden "
            "of conv1 is followed by 3 golden(s) no left operator has (bn_conv1, scale_conv1, conv1_relu)"
            in result.output)
    assert UNCERTAIN in result.output
    with_f = _run("-l", left, "-r", case / "right", "-f", case / "fusion.json", "-o", tmp_path / "f.csv")
    assert with_f.exit_code == 0 and "uncertain" not in with_f.output
