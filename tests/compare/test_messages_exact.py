"""Messages made exact (issue 30, "Noise"): the localisation's order line, the statistics note,
format names as dumps spell them, ``--explain`` of an operator whose inputs are exact, and the
consistency check that blames no rank when no value has a majority. Each test asserts the new
text and that the old wrong text is gone."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from compare.cli import run
from compare.consistency.run import check_consistency
from compare.diverge.records import GraphSource, OpVerdict, TensorCheck, Verdict
from compare.reports.consistency import summary_lines
from compare.reports.divergence import explain_lines
from compare.runs.folders import run_network
from compare.testing.synthetic_mindspore import make_trees
from compare.testing.synthetic_ranks import Perturbation, make_rank_tree
from convert.layouts import LayoutError, convert_layout
from convert.layouts.shapes import format_key, format_spelling

FC2 = "Gradients/Default/network-fc2/AllReduce-op4"
DOUBLED = re.compile(r"\b([A-Za-z]+) \1\b")


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two ranks; the right side's rank 1 all-reduced gradients x (1 + 1e-3); 2 and 3 replicas
    of which rank 1 differs (consistency)."""
    root = tmp_path_factory.mktemp("messages")
    return {
        "left": make_rank_tree(root / "left", ranks=2, iterations=1, dp=2).root,
        "right": make_rank_tree(root / "right", ranks=2, iterations=1, dp=2,
                                perturb=Perturbation(rank=1, relative=1e-3)).root,
        "three": make_rank_tree(root / "three", ranks=3, iterations=1, dp=3,
                                perturb=Perturbation(rank=1, relative=1e-3)).root,
    }


# --------------------------------------------------------------------------------------------
# the order line of the first divergence, and --explain


def test_every_graph_source_names_its_order_once() -> None:
    assert {source: source.order for source in GraphSource} == {
        GraphSource.FUSION_RULE: "fusion rule order", GraphSource.MINDSPORE_IR: "mindspore ir order",
        GraphSource.EXECUTION_ORDER: "execution order", GraphSource.MSPROBE_CALLS: "msprobe dump.json order",
        GraphSource.DUMP_ORDER: "dump order"}
    assert GraphSource.EXECUTION_ORDER.value == "execution order"  # the JSON graph_source keeps its value


def test_first_divergence_and_explain_lines(ranks: dict[str, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "-l", ranks["left"], "-r", ranks["right"], "--rank", "1", "--iteration", "0",
                        "-o", tmp_path / "r.csv", "--explain", FC2)
    assert code == 0, err
    assert f"vcompare: first divergence: {FC2} [AllReduce], operator 6 in dump order: wrong itself (origin)\n" in err
    line = next(line for line in err.splitlines() if line.startswith(f"vcompare: 1. {FC2}"))
    assert re.fullmatch(rf"vcompare: 1\. {FC2} \[AllReduce\]: origin, inputs exact, output error "
                        r"0\.000999\d+: the error starts here", line), line
    assert "order order" not in err and "amplification inf" not in err and " inf" not in line
    assert not [line for line in err.splitlines() if DOUBLED.search(line.removeprefix("vcompare: "))]


def test_explain_keeps_the_ratio_when_the_inputs_differ() -> None:
    check = TensorCheck(tensor_id="a:output:0", passed=False, error=0.5)
    verdicts = [OpVerdict("a", "MatMul", 3, Verdict.INPUT_DIFFERS, outputs=(check,), error=0.5, input_error=0.25,
                          amplification=2.0),
                OpVerdict("b", None, 2, Verdict.ORIGIN, error=0.25, input_error=0.0, amplification=float("inf"))]
    lines = explain_lines("a", verdicts)
    assert lines[1] == "1. a [MatMul]: input-differs, output error 0.5, worst input error 0.25, amplification 2.0"
    assert lines[3] == "2. b: origin, inputs exact, output error 0.25: the error starts here"


# --------------------------------------------------------------------------------------------
# the statistics note


def test_statistics_on_both_sides_say_both(tmp_path: Path) -> None:
    trees = make_trees(tmp_path / "trees")
    result = run_network(trees["stats"], trees["stats"], iteration=0)
    stated = [n for n in result.notes if "statistics comparison:" in n]
    assert stated == ["statistics comparison: both sides hold tensors with statistics and no tensor data, so every "
                      "pair is compared by its statistics (computed from the data where a side has it)"]
    assert not any("left and right side" in n for n in result.notes)
    one = run_network(trees["stats"], trees["sync"], iteration=0)
    assert any(n.startswith("statistics comparison: the left side holds tensors with statistics") for n in one.notes)


# --------------------------------------------------------------------------------------------
# format names as dumps write them


def test_format_names_keep_the_device_spelling() -> None:
    assert format_key("c1hwncoc0") == "C1HWNCOC0"  # lookups stay case-insensitive
    assert format_spelling("c1hwncoc0") == format_spelling(25) == "C1HWNCoC0"
    assert format_spelling("nchw") == "NCHW" and format_spelling("MyLayout") == "MYLAYOUT"
    with pytest.raises(LayoutError) as caught:
        convert_layout(np.zeros(16), "NC1HWC0", "c1hwncoc0", (1, 1, 2, 2, 4), (1, 4, 2, 2))
    assert str(caught.value) == ("no conversion from NC1HWC0 to C1HWNCoC0 (built-ins: NC1HWC0->NCHW, NC1HWC0->NHWC, "
                                 "NC1HWC0->HWCN; custom: none)")
    assert "C1HWNCOC0" not in str(caught.value)


def test_vconvert_echoes_c1hwncoc0_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from convert.cli import main as vconvert

    dump = (Path(__file__).resolve().parents[2] / "fixtures" / "demo" / "npu" / "20240101120000" / "0" / "demo_net"
            / "1" / "0" / "Conv2D.conv1.3.1.1704110400003000")
    with pytest.raises(SystemExit):
        vconvert(["dump", "-d", str(dump), "-out", str(tmp_path), "-f", "C1HWNCoC0"])
    err = capsys.readouterr().err
    assert "no conversion from NC1HWC0 to C1HWNCoC0 (built-ins:" in err and "C1HWNCOC0" not in err


# --------------------------------------------------------------------------------------------
# consistency: no majority, no blame


def test_two_replicas_that_differ_blame_neither(ranks: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    result = check_consistency(ranks["right"], "dp:2")
    lines = summary_lines(result)
    assert lines[2] == ("group 0 (ranks 0,1): no value of 3 tensor(s) is held by a majority of the ranks (ranks 0 and "
                        "1 hold different values), so which rank is faulty cannot be told and none is blamed (are the "
                        "groups right? dp:2)")
    assert all(line.startswith("    rank 1: Gradients/") and line.endswith("(held by 1 of 2, no majority)")
               for line in lines[3:6])
    assert lines[-1] == "consistency: INCONSISTENT: group 0 (ranks 0,1): ranks 0 and 1 differ, no majority, none blamed (exit 1)"
    assert not any(line.startswith("rank 1 disagrees") for line in lines)
    assert summary_lines(result, quiet=True) == [lines[2], lines[-1]]
    reason = result.rows[0].reason
    assert reason == ("differs from rank 0, but no value is held by a majority (2 distinct values among 2 ranks; rank 0 "
                      "is the reference only as the lowest rank of the largest set, 1 of 2): which rank is faulty "
                      "cannot be told")
    code, _, err = _cli(capsys, "consistency", "-l", ranks["right"], "--groups", "dp:2")
    assert code == 1
    assert "vcompare: consistency: INCONSISTENT: group 0 (ranks 0,1): ranks 0 and 1 differ, no majority, none blamed " \
           "(exit 1)\n" in err
    assert "rank 1 in group" not in err and "rank 1 disagrees" not in err


def test_three_replicas_blame_the_odd_one_out(ranks: dict[str, Path]) -> None:
    lines = summary_lines(check_consistency(ranks["three"], "dp:3"))
    assert lines[2] == "rank 1 disagrees with group 0 (ranks 0-2): 3 of the 6 replicated tensor(s) checked differ"
    assert lines[-1] == "consistency: INCONSISTENT: rank 1 in group 0 (ranks 0-2) (exit 1)"
    assert not any("cannot be told" in line for line in lines)
