"""The cross-rank consistency check (issue 18): the rank whose replicas were perturbed is found,
and only it; clean trees are consistent; groups from dp:K, text and JSON files; everything that
cannot be checked is a row with its reason; the API, the reports and ``vcompare consistency``."""

from __future__ import annotations

import csv
import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from compare.cli import run
from compare.consistency.check import ConsistencyOptions, check_part, digest
from compare.consistency.groups import parse_groups
from compare.consistency.plan import plan_consistency
from compare.consistency.records import Consistency, ReplicaStatus, Replicated
from compare.consistency.run import check_consistency
from compare.errors import OptionError
from compare.reports.consistency import CSV_HEADER, consistency_document, csv_text, ranks_text, summary_lines
from compare.testing.synthetic_ranks import OpKind, Perturbation, make_rank_tree

RED = "RelativeEuclideanDistance"
GRADS = ("Gradients/Default/network-fc1/AllReduce-op5", "Gradients/Default/network-fc1/AllReduce-op6",
         "Gradients/Default/network-fc2/AllReduce-op4")


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory: pytest.TempPathFactory):
    """8 ranks x 2 iterations, data-parallel groups of 4, rank 5's all-reduced gradients x (1 + 1e-3)."""
    return make_rank_tree(tmp_path_factory.mktemp("perturbed"), ranks=8, iterations=2, dp=4,
                          perturb=Perturbation(rank=5, relative=1e-3))


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory):
    return make_rank_tree(tmp_path_factory.mktemp("clean"), ranks=8, iterations=2, dp=4)


def _small(tmp_path: Path, **kwargs: object):
    """A tree of 4 ranks (one group), one iteration: for tests that damage it."""
    return make_rank_tree(tmp_path / "tree", ranks=4, iterations=1, dp=4, **kwargs)  # type: ignore[arg-type]


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = run(["consistency", *[str(a) for a in args]])
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------------------------
# the acceptance: the perturbed rank, and only it


def test_finds_the_perturbed_rank_and_only_it(perturbed) -> None:
    result = check_consistency(perturbed.root, "dp:4", iteration="all")
    assert result.outcome is Consistency.INCONSISTENT and result.exit_code == 1
    assert result.disagreeing == {1: (5,)}
    rows = result.rows
    assert {row.rank for row in rows} == {5} and all(row.status is ReplicaStatus.DIFFERS for row in rows)
    # the three all-reduced gradients at both iterations; never an AllReduce input (local gradients
    # differ on every rank) nor an activation
    assert sorted((row.iteration, row.tensor_id) for row in rows) == sorted(
        (it, f"{name}:output:0") for it in (0, 1) for name in GRADS)
    for row in rows:
        assert row.why is Replicated.COLLECTIVE and row.op_type == "AllReduce"
        assert row.group == 1 and row.reference_rank == 4 and row.majority
        assert (row.holders, row.readable) == (3, 4)
        assert row.metrics[RED] == pytest.approx(1e-3, rel=1e-3)
        assert 0 < row.metrics["MaxAbsoluteError"] < 0.01 and row.metrics["CosineSimilarity"] > 0.999999
        assert row.dtype == row.reference_dtype == "float32" and row.shape == row.reference_shape
    # every group and iteration was checked: 3 parameters + 3 gradients on 4 ranks
    assert len(result.parts) == 4
    for part in result.parts:
        assert part.present == part.group.ranks and part.tensors == 6 and part.checked == 24
        assert part.disagreeing == ((5,) if part.group.index == 1 else ())


def test_a_perturbed_parameter_is_found_too_and_in_a_ge_tree(tmp_path: Path) -> None:
    params = make_rank_tree(tmp_path / "params", ranks=8, iterations=1, dp=4,
                            perturb=Perturbation(rank=2, relative=1e-4, kinds=(OpKind.PARAM,)))
    result = check_consistency(params.root, "dp:4")
    assert result.disagreeing == {0: (2,)}
    assert {row.why for row in result.rows} == {Replicated.PARAMETER}
    assert sorted(row.tensor_id for row in result.rows) == ["fc1_bias:output:0", "fc1_weight:output:0",
                                                           "fc2_weight:output:0"]
    ge = make_rank_tree(tmp_path / "ge", ranks=8, iterations=2, dp=4, layout="ge",
                        perturb=Perturbation(rank=5, relative=1e-2))
    result = check_consistency(ge.root, "dp:4", iteration="all")
    assert result.disagreeing == {1: (5,)}
    assert {row.op_type for row in result.rows} == {"HcomAllReduce"}
    assert len(result.rows) == 6 and all(row.dtype == "float16" for row in result.rows)


def test_a_consistent_tree_has_no_row(clean) -> None:
    import compare

    result = compare.check_consistency(clean.root, "dp:4")  # the package's lazy public API
    assert result.outcome is Consistency.CONSISTENT and result.exit_code == 0
    assert result.rows == [] and result.disagreeing == {}
    assert [part.iteration for part in result.parts] == [1, 1]  # the newest iteration, by default
    assert any("using iteration 1" in note for note in result.notes)
    assert sum(part.checked for part in result.parts) == 48


def test_wrong_groups_give_no_majority_everywhere(clean) -> None:
    """Groups of 8 over two data-parallel groups of 4: half the ranks hold each value."""
    result = check_consistency(clean.root, "dp:8")
    assert result.outcome is Consistency.INCONSISTENT
    assert result.disagreeing == {0: (4, 5, 6, 7)}
    assert all(not row.majority and row.reference_rank == 0 and row.holders == 4 for row in result.rows)
    assert any("no value of 6 tensor(s) is held by a majority" in line for line in summary_lines(result))


# --------------------------------------------------------------------------------------------
# groups


def test_group_files_text_and_json(perturbed, tmp_path: Path) -> None:
    text = tmp_path / "groups.txt"
    text.write_text("# data-parallel groups\n0,1,2,3\n\n4-7   # the second\n")
    js = tmp_path / "groups.json"
    js.write_text(json.dumps({"groups": [[0, 1, 2, 3], [4, 5, 6, 7]]}))
    expected = check_consistency(perturbed.root, "dp:4")
    for spec in (text, str(text), js, [[0, 1, 2, 3], [4, 5, 6, 7]]):
        result = check_consistency(perturbed.root, spec)
        assert result.disagreeing == expected.disagreeing == {1: (5,)}
        assert [row.tensor_id for row in result.rows] == [row.tensor_id for row in expected.rows]
    assert check_consistency(perturbed.root, text).groups_spec == str(text)
    # interleaved groups: each holds ranks of both data-parallel groups, so no value has a majority
    interleaved = check_consistency(perturbed.root, [[0, 2, 4, 6], [1, 3, 5, 7]])
    assert all(not row.majority for row in interleaved.rows)


def test_ranks_outside_every_group_are_named(perturbed) -> None:
    result = check_consistency(perturbed.root, [[0, 1, 2, 3]])
    assert result.outcome is Consistency.CONSISTENT  # rank 5 is in no group: not checked, and said
    assert any("rank(s) 4, 5, 6, 7" in note and "not checked" in note for note in result.notes)


def test_dp_blocks_cover_the_largest_rank() -> None:
    spec = parse_groups("dp:4")
    assert [g.ranks for g in spec.resolve([0, 1, 2, 3, 4, 5])] == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert [g.ranks for g in parse_groups(" DP : 2 ").resolve([0, 1])] == [(0, 1)]


@pytest.mark.parametrize("content, message", [
    ("0,1\n1,2\n", "rank 1 is listed also in"),
    ("0,0\n", "at least 2 different ranks"),
    ("0,1,1\n", "rank 1 is listed twice"),
    ("3\n", "at least 2 different ranks"),
    ("0,x\n", "'x' is not a rank"),
    ("5-3\n", "runs backwards"),
    ("# nothing\n\n", "no group"),
    ("[[0, 1], [2]]", "at least 2 different ranks"),
    ("[[0, -1]]", "is not a rank"),
    ('{"groups": 3}', "list of rank lists"),
    ("[[0, 1]", "not valid JSON"),
])
def test_bad_group_files_are_refused_with_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "groups.txt"
    path.write_text(content)
    with pytest.raises(OptionError, match="groups") as caught:
        parse_groups(path)
    assert message in str(caught.value)


def test_bad_group_options_are_refused(tmp_path: Path) -> None:
    for value, message in (("dp:1", "at least 2 ranks"), ("dp:x", "write dp:K"), (str(tmp_path / "nope"), "neither"),
                           ([[0, 1], "23"], "not a sequence"), ([[0, True]], "not a rank")):
        with pytest.raises(OptionError, match=message):
            parse_groups(value)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# what cannot be checked is a row


def test_missing_unreadable_and_absent_ranks_are_rows(tmp_path: Path) -> None:
    tree = _small(tmp_path)
    grad = f"{GRADS[0]}:output:0"
    tree.file(2, 0, grad).unlink()  # rank 2 did not dump an all-reduced gradient
    tree.file(1, 0, "fc1_bias:output:0").write_bytes(b"\x93NUMPY garbage")  # rank 1: a damaged .npy
    result = check_consistency(tree.root, "dp:4")
    assert result.outcome is Consistency.INCOMPLETE and result.exit_code == 3
    by_rank = {row.rank: row for row in result.rows}
    assert set(by_rank) == {1, 2}
    assert by_rank[2].status is ReplicaStatus.MISSING and by_rank[2].tensor_id == grad
    assert "did not dump" in by_rank[2].reason
    assert by_rank[1].status is ReplicaStatus.UNREADABLE and by_rank[1].tensor_id == "fc1_bias:output:0"
    assert "fc1_bias" in by_rank[1].reason
    # the other ranks were still checked: 6 tensors x 4 ranks, less the two lost values
    assert result.parts[0].checked == 22
    # a group rank with no dump folder at all
    shutil.rmtree(tree.root / "rank_3")
    result = check_consistency(tree.root, [[0, 1, 2, 3]])
    absent = [row for row in result.rows if row.status is ReplicaStatus.NO_DUMP]
    assert [(row.rank, row.tensor_id) for row in absent] == [(3, None)]
    assert "rank 3 has no dump folder for graph 0 iteration 0" in absent[0].reason


def test_an_unparseable_dump_file_is_a_row(tmp_path: Path) -> None:
    """GE: rank 2's HcomAllReduce file is damaged (the op keeps its error, no tensors)."""
    tree = make_rank_tree(tmp_path / "ge", ranks=4, iterations=1, layout="ge")
    tree.file(2, 0, "Gradients_Default_network-fc1_AllReduce-op5:output:0").write_bytes(b"\x00" * 7)
    result = check_consistency(tree.root, "dp:4")
    rows = result.rows
    assert [(row.rank, row.status, row.tensor_id) for row in rows] == [
        (2, ReplicaStatus.UNREADABLE, "Gradients_Default_network-fc1_AllReduce-op5:output:0")]
    assert rows[0].reason
    # damaged on every rank: still a row per rank (named by the op), never dropped
    for rank in range(4):
        tree.file(rank, 0, "Gradients_Default_network-fc1_AllReduce-op5:output:0").write_bytes(b"\x00" * 7)
    rows = check_consistency(tree.root, "dp:4").rows
    assert [(row.rank, row.tensor_id) for row in rows] == [(r, "Gradients_Default_network-fc1_AllReduce-op5")
                                                           for r in range(4)]
    assert all(row.status is ReplicaStatus.UNREADABLE for row in rows)


def test_a_rank_without_the_iteration_is_a_row(tmp_path: Path) -> None:
    tree = make_rank_tree(tmp_path / "t", ranks=4, iterations=2, dp=4)
    shutil.rmtree(tree.root / "rank_1" / "Net" / "0" / "1")
    result = check_consistency(tree.root, "dp:4", iteration="all")
    assert [(row.iteration, row.rank, row.status) for row in result.rows] == [(1, 1, ReplicaStatus.NO_DUMP)]
    assert [part.present for part in result.parts] == [(0, 1, 2, 3), (0, 2, 3)]


# --------------------------------------------------------------------------------------------
# tolerance, tensor choice, digest, one part on its own


def test_tolerance(perturbed) -> None:
    loose = check_consistency(perturbed.root, "dp:4", tolerance=1e-2)
    assert loose.outcome is Consistency.CONSISTENT and loose.rows == []
    assert sum(part.within_tolerance for part in loose.parts) == 3
    tight = check_consistency(perturbed.root, "dp:4", tolerance=1e-4)
    assert tight.disagreeing == {1: (5,)} and len(tight.rows) == 3
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(OptionError, match="--tolerance"):
            check_consistency(perturbed.root, "dp:4", tolerance=bad)


def test_tensors_pattern_replaces_the_default_rule(perturbed) -> None:
    only_bias = check_consistency(perturbed.root, "dp:4", tensors="fc1_bias")
    assert only_bias.outcome is Consistency.CONSISTENT and {p.tensors for p in only_bias.parts} == {1}
    one_grad = check_consistency(perturbed.root, "dp:4", tensors=r"AllReduce-op5:output")
    assert one_grad.disagreeing == {1: (5,)} and [r.why for r in one_grad.rows] == [Replicated.SELECTED]
    # activations differ on every rank: chosen by the pattern, no value has a majority
    activations = check_consistency(perturbed.root, "dp:4", tensors="^Default/")
    assert activations.disagreeing == {0: (1, 2, 3), 1: (5, 6, 7)}
    by_type = check_consistency(perturbed.root, "dp:4", tensors="^Parameter$")
    assert {p.tensors for p in by_type.parts} == {3} and by_type.outcome is Consistency.CONSISTENT
    with pytest.raises(OptionError, match="not a regular expression"):
        check_consistency(perturbed.root, "dp:4", tensors="(")


def test_digest_is_bitwise() -> None:
    a = np.array([0.0, 1.0, np.nan], dtype=np.float32)
    assert digest(a) == digest(a.copy())
    assert digest(a) != digest(np.array([-0.0, 1.0, np.nan], dtype=np.float32))
    assert digest(a) != digest(a.astype(np.float64))
    assert digest(a.reshape(3, 1)) != digest(a)
    assert digest(np.arange(6).reshape(2, 3).T) == digest(np.ascontiguousarray(np.arange(6).reshape(2, 3).T))


def test_a_part_is_a_plain_picklable_task(perturbed) -> None:
    """check_part runs on a part and options sent elsewhere (a worker process, a distributed task)."""
    from compare.consistency.tensors import TensorRule

    plan = plan_consistency(perturbed.root, parse_groups("dp:4"), iteration=1)
    options = ConsistencyOptions(TensorRule.of(None))
    sent = pickle.loads(pickle.dumps((plan.parts[1], options)))
    part = check_part(*sent)
    assert part.disagreeing == (5,) and part.group.ranks == (4, 5, 6, 7)
    assert pickle.loads(pickle.dumps(part)).rows == part.rows


def test_not_a_rank_tree_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(OptionError, match="not a dump tree with ranks"):
        check_consistency(tmp_path / "plain", "dp:2")


# --------------------------------------------------------------------------------------------
# reports and the command line


def test_reports(perturbed) -> None:
    result = check_consistency(perturbed.root, "dp:4")
    rows = list(csv.reader(csv_text(result).splitlines()))
    assert rows[0] == CSV_HEADER and len(rows) == 4
    record = dict(zip(rows[0], rows[1]))
    assert (record["Group"], record["GroupRanks"], record["Rank"], record["Status"]) == ("1", "4-7", "5", "differs")
    assert float(record[RED]) == result.rows[0].metrics[RED]  # full precision
    document = json.loads(json.dumps(consistency_document(result)))
    assert document["outcome"] == "inconsistent" and document["exit_code"] == 1
    assert document["disagreeing"] == [{"group": 1, "ranks": [5]}]
    assert len(document["rows"]) == 3 and document["rows"][0]["metrics"][RED] == result.rows[0].metrics[RED]
    assert ranks_text([4, 5, 6, 7]) == "4-7" and ranks_text([0, 8, 16]) == "0,8,16" and ranks_text([1, 2]) == "1,2"


def test_cli_exit_codes_and_outputs(perturbed, clean, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_csv, out_json = tmp_path / "out" / "c.csv", tmp_path / "out" / "c.json"
    code, out, err = _cli(capsys, "-l", perturbed.root, "--groups", "dp:4", "-o", out_csv, "--json", out_json,
                          "--iteration", "all")
    assert code == 1, err
    assert f"report: {out_csv}" in out and f"json: {out_json}" in out
    assert "rank 5 disagrees with group 1 (ranks 4-7): 6 of the 12" in err
    assert "consistency: INCONSISTENT: rank 5 in group 1 (ranks 4-7) (exit 1)" in err
    assert len(list(csv.reader(out_csv.read_text().splitlines()))) == 7
    assert json.loads(out_json.read_text())["disagreeing"] == [{"group": 1, "ranks": [5]}]
    code, _, err = _cli(capsys, "-l", clean.root, "--groups", "dp:4", "--quiet")
    assert code == 0 and err.strip().endswith("consistency: CONSISTENT (exit 0)")
    assert "checked" not in err  # --quiet: the outcome line only
    code, _, _ = _cli(capsys, "-l", perturbed.root, "--groups", "dp:4", "--tolerance", "0.01")
    assert code == 0


def test_cli_incomplete_and_cannot_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _small(tmp_path)
    tree.file(2, 0, f"{GRADS[0]}:output:0").unlink()
    (tmp_path / "taken.csv").mkdir()
    code, _, err = _cli(capsys, "-l", tree.root, "--groups", "dp:4")
    assert code == 3 and "not checked: 1 missing" in err and "consistency: INCOMPLETE (exit 3)" in err
    for args, message in (
        (("-l", tmp_path / "nope", "--groups", "dp:4"), "no such file"),
        (("-l", tree.root, "--groups", "dp:1"), "at least 2 ranks"),
        (("-l", tree.root, "--groups", "dp:4", "-o", tmp_path / "c.txt"), "written as .csv"),
        (("-l", tree.root, "--groups", "dp:4", "--tensors", "("), "not a regular expression"),
        (("-l", tree.root, "--groups", "dp:4", "--iteration", "9"), "selects nothing"),
        (("-l", tree.root, "--groups", "dp:4", "-o", tmp_path / "taken.csv"), "is a directory"),
    ):
        code, _, err = _cli(capsys, *args)
        assert code == 2 and message in err, (args, err)


def test_cli_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "--help")
    assert code == 0 and "--groups" in out and "dp:8" in out and "--tolerance" in out
    code = run(["--help"])
    assert code == 0 and "vcompare consistency" in capsys.readouterr().out


def test_main_command_consistency_option(tmp_path: Path) -> None:
    """``vcompare -l TREE -r OTHER --consistency dp:4``: the comparison and the check of the -l tree;
    the consistency CSV beside -o; the exit code is the more serious of the two."""
    from typer.testing import CliRunner

    from compare.cli import app

    left = make_rank_tree(tmp_path / "left", ranks=8, iterations=1, dp=4, perturb=Perturbation(rank=5, relative=1e-3))
    right = make_rank_tree(tmp_path / "right", ranks=8, iterations=1, dp=4)
    out = tmp_path / "out" / "r.csv"
    result = CliRunner().invoke(app, ["-l", str(left.root), "-r", str(right.root), "--rank", "all", "-o", str(out),
                                      "--consistency", "dp:4"])
    assert result.exit_code == 1, result.output
    assert "rank 5 disagrees with group 1" in result.output
    assert out.is_file() and (out.parent / "r_consistency.csv").is_file()
    clean = CliRunner().invoke(app, ["-l", str(right.root), "-r", str(right.root), "--rank", "all", "-o",
                                     str(tmp_path / "c.csv"), "--consistency", "dp:4"])
    assert clean.exit_code == 0, clean.output
    single = CliRunner().invoke(app, ["-l", str(left.root), "-r", str(right.root), "-d", "x", "--consistency", "dp:4"])
    assert single.exit_code == 2 and "describe a network comparison" in single.output
