"""msprobe trees compared each in turn (``--rank all`` / ``--iteration all`` / lists; docs/msprobe.md):
parts paired by (rank, step), one row per tensor per part with exact metrics, a part on one side
only noted, ``proc{pid}`` folders, and the Dask path giving the in-turn CSV byte for byte."""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.loaders import load_run
from compare.records import TensorKind
from compare.testing import naive
from compare.testing.synthetic_msprobe import MsprobeDump, write_msprobe_dump

TENSORS = 19  # tensors of compare.testing.synthetic_msprobe.CALLS
ROWS = TENSORS + 5  # and its 5 non-tensor arguments (rows of their own, compared by value)
HAVE_DASK = importlib.util.find_spec("distributed") is not None


def _run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, MsprobeDump]:
    """2 ranks x 2 steps on each side, values differing from part to part; the right side noisy;
    ``one_rank``: the right side with rank 0 only; ``proc``: single-process trees (``proc{pid}``)."""
    base = tmp_path_factory.mktemp("msprobe_each")
    both = dict(steps=(0, 1), per_part=True)
    return {
        "left": write_msprobe_dump(base / "left", ranks=(0, 1), **both),
        "right": write_msprobe_dump(base / "right", ranks=(0, 1), noise=1e-2, seed=3, **both),
        "one_rank": write_msprobe_dump(base / "one_rank", ranks=(0,), noise=1e-2, seed=3, **both),
        "proc_left": write_msprobe_dump(base / "proc_left", ranks=(2016,), folder_name="proc{rank}", **both),
        "proc_right": write_msprobe_dump(base / "proc_right", ranks=(3120,), folder_name="proc{rank}", noise=1e-2,
                                         seed=3, **both),
    }


def _check_exact(rows: list[dict], left: MsprobeDump, right: MsprobeDump, *, right_rank: int | None = None) -> None:
    """Every row's metrics equal the naive float64 ones of its own part's arrays on both sides."""
    for row in rows:
        if row["kind"] == "argument":
            continue
        step = row["iteration"]
        rank = row["rank"]
        left_key = (step, rank if rank is not None else next(r for s, r in left.parts if s == step))
        right_key = (step, right_rank if right_rank is not None else left_key[1])
        op, kind, index = row["tensor_id"].rsplit(":", 2)
        name = load_run(left.folders[left_key]).ops[op].tensor(TensorKind(kind), int(index)).path.name
        x, y = naive.as_f64(left.parts[left_key][name]), naive.as_f64(right.parts[right_key][name])
        assert row["metrics"]["CosineSimilarity"] == pytest.approx(naive.cosine(x, y), rel=1e-12, abs=1e-15), row
        assert row["metrics"]["MaxAbsoluteError"] == pytest.approx(naive.max_abs(x, y), rel=1e-12), row


def test_rank_all_iteration_all_one_row_per_tensor_per_part(trees, tmp_path: Path) -> None:
    out, js = tmp_path / "r.csv", tmp_path / "r.json"
    result = _run("-l", trees["left"].root, "-r", trees["right"].root, "--rank", "all", "--iteration", "all",
                  "-o", out, "--json", js)
    assert result.exit_code == 0, result.output
    document = json.loads(js.read_text())
    rows = document["rows"]
    parts = [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [(p["rank"], p["iteration"]) for p in document["parts"]] == parts
    assert all(p["status"] == "compared" for p in document["parts"])
    assert len(rows) == 4 * ROWS and all(r["status"] == "compared" for r in rows)
    counted = {part: sum(1 for r in rows if (r["rank"], r["iteration"]) == part) for part in parts}
    assert counted == {part: ROWS for part in parts}
    _check_exact(rows, trees["left"], trees["right"])
    frame = pd.read_csv(out)
    assert list(frame.columns[:3]) == ["Index", "Rank", "Iteration"]
    assert len(frame) == 4 * ROWS
    assert "compared 4 (rank, iteration) part(s) in turn: rank 0 iteration 0, rank 0 iteration 1" in result.output


def test_a_rank_on_one_side_only_is_noted(trees, tmp_path: Path) -> None:
    js = tmp_path / "m.json"
    result = _run("-l", trees["left"].root, "-r", trees["one_rank"].root, "--rank", "all", "--iteration", "all",
                  "-o", tmp_path / "m.csv", "--json", js)
    assert result.exit_code == 0, result.output
    document = json.loads(js.read_text())
    statuses = {(p["rank"], p["iteration"]): p["status"] for p in document["parts"]}
    assert statuses == {(0, 0): "compared", (0, 1): "compared", (1, 0): "not compared", (1, 1): "not compared"}
    notes = document["notes"]
    assert any(n.startswith("[rank 1 iteration 0] not compared: --rank 1 selects nothing") for n in notes), notes
    # each missing part has a row of its own, naming it and its reason
    assert {(r["rank"], r["iteration"]) for r in document["rows"]} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    missing = [r for r in document["rows"] if r["rank"] == 1]
    assert [r["left_op"] for r in missing] == ["rank 1 iteration 0", "rank 1 iteration 1"]
    assert missing[0]["reasons"][0].startswith("part rank 1 iteration 0 not compared: --rank 1 selects nothing")
    _check_exact([r for r in document["rows"] if r["rank"] == 0], trees["left"], trees["one_rank"])
    # the other way round: the right side's extra rank has no left part, and a note says so
    js = tmp_path / "swapped.json"
    result = _run("-l", trees["one_rank"].root, "-r", trees["left"].root, "--rank", "all", "--iteration", "all",
                  "-o", tmp_path / "swapped.csv", "--json", js)
    assert result.exit_code == 0, result.output
    document = json.loads(js.read_text())
    extra = trees["left"].folders[(1, 1)]
    assert (f"[rank 1 iteration 1] not compared: the left side has no such part (missing, or not readable as a part "
            f"of its tree); the right side has it: rank 1, iteration 1 ({extra})") in document["notes"]
    # ... and is a part not compared, after the left parts
    assert [(p["rank"], p["iteration"], p["status"]) for p in document["parts"]][-2:] == [
        (1, 0, "not compared"), (1, 1, "not compared")]


def test_one_rank_every_iteration(trees, tmp_path: Path) -> None:
    js = tmp_path / "one.json"
    result = _run("-l", trees["left"].root, "-r", trees["right"].root, "--rank", "1", "--iteration", "all",
                  "-o", tmp_path / "one.csv", "--json", js)
    assert result.exit_code == 0, result.output
    document = json.loads(js.read_text())
    assert [(p["rank"], p["iteration"]) for p in document["parts"]] == [(1, 0), (1, 1)]
    assert len(document["rows"]) == 2 * ROWS
    _check_exact(document["rows"], trees["left"], trees["right"])
    # a list of ranks: the same as all here, in rank order
    result = _run("-l", trees["left"].root, "-r", trees["right"].root, "--rank", "0,1", "--iteration", "0",
                  "-o", tmp_path / "list.csv")
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(tmp_path / "list.csv")
    assert list(zip(frame.Rank, frame.Iteration)) == [(0, 0)] * ROWS + [(1, 0)] * ROWS


def test_proc_folders_are_parts_without_a_rank(trees, tmp_path: Path) -> None:
    """Single-process runs write step{N}/proc{pid}: one part per step, paired step by step (the
    pids differ), the notes naming the part by its step alone."""
    js = tmp_path / "proc.json"
    result = _run("-l", trees["proc_left"].root, "-r", trees["proc_right"].root, "--iteration", "all",
                  "-o", tmp_path / "proc.csv", "--json", js)
    assert result.exit_code == 0, result.output
    document = json.loads(js.read_text())
    assert [(p["rank"], p["iteration"]) for p in document["parts"]] == [(None, 0), (None, 1)]
    assert "compared 2 (rank, iteration) part(s) in turn: iteration 0, iteration 1" in document["notes"]
    assert len(document["rows"]) == 2 * ROWS
    _check_exact(document["rows"], trees["proc_left"], trees["proc_right"], right_rank=3120)


def test_proc_folders_beside_ranks_are_left_out_with_a_note(trees, tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    mixed = write_msprobe_dump(root, steps=(0,), ranks=(0,))
    write_msprobe_dump(root, steps=(0,), ranks=(77,), folder_name="proc{rank}")
    js = tmp_path / "mixed.json"
    result = _run("-l", root, "-r", trees["right"].root, "--rank", "all", "--iteration", "0", "-o",
                  tmp_path / "mixed.csv", "--json", js)
    assert result.exit_code == 0, result.output
    document = json.loads(js.read_text())
    # the right side's rank 1 has no left part: a part not compared
    assert [(p["rank"], p["iteration"], p["status"]) for p in document["parts"]] == [
        (0, 0, "compared"), (1, 0, "not compared")]
    assert any("not compared (no rank number, not a rank of this run)" in n and "proc77" in n
               for n in document["notes"]), document["notes"]
    assert mixed.folders[(0, 0)].name == "rank0"


@pytest.mark.skipif(not HAVE_DASK, reason="dask[distributed] is not installed: pip install 'vcompare[dask]'")
def test_local_cluster_gives_the_in_turn_csv(trees, tmp_path: Path) -> None:
    from distributed import LocalCluster  # here: only with Dask installed

    common = ("-l", trees["left"].root, "-r", trees["one_rank"].root, "--rank", "all", "--iteration", "all")
    here = _run(*common, "-o", tmp_path / "here.csv")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, silence_logs=logging.CRITICAL,
                      dashboard_address=":0") as cluster:
        there = _run(*common, "-o", tmp_path / "there.csv", "--scheduler", cluster.scheduler_address)
    assert here.exit_code == there.exit_code == 0, there.output
    assert (tmp_path / "here.csv").read_bytes() == (tmp_path / "there.csv").read_bytes()
    assert "dask dashboard: http" in there.output
    assert len(pd.read_csv(tmp_path / "there.csv")) == 2 * ROWS + 2  # and a row for each part of rank 1
