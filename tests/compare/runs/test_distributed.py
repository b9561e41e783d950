"""Compare-each-in-turn on a Dask cluster (issue 18; compare.runs.distributed, docs/distributed.md).

A LocalCluster of 2 worker processes gives the same report as the in-turn run, byte for byte
(CSV), and the same JSON but for the times and workers; a worker killed mid-run changes nothing;
a part whose task fails every retry is lost with its reason, never dropped. Without Dask the
options say how to install it. The Dask tests skip when ``dask[distributed]`` is not installed
(it is in the test extra)."""

from __future__ import annotations

import importlib.util
import json
import logging
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders import comparable_result, one_op_golden

from compare.api import compare_network, regate
from compare.cli import app
from compare.errors import OptionError
from compare.records import PairStatus, PartStatus
from compare.runs import distributed as cluster_runs
from compare.loaders.reader import MAX_SNIFF
from compare.runs.distributed import ClusterSpec, task_batches
from compare.runs.network import SameDataError
from compare.testing.synthetic_mindspore import make_trees
from compare.testing.synthetic_rank_trees import make_rank_trees

HAVE_DASK = importlib.util.find_spec("distributed") is not None
needs_dask = pytest.mark.skipif(not HAVE_DASK, reason="dask[distributed] is not installed: pip install 'vcompare[dask]'"
                                                      " (it is part of the test extra)")


def _run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """2 ranks x 3 iterations; rank 1 iteration 1 goes wrong at operator 3; rank 0 iteration 2
    has no golden (a part that is not compared)."""
    return make_rank_trees(tmp_path_factory.mktemp("ranks"), ranks=2, iterations=3, faulty=(1, 1, 3),
                           unmatched=((0, 2),))


@pytest.fixture(scope="module")
def local_cluster() -> Iterator[object]:
    """A LocalCluster of 2 worker processes shared by the tests that only read from it."""
    if not HAVE_DASK:
        pytest.skip("dask[distributed] is not installed: pip install 'vcompare[dask]'")
    from distributed import LocalCluster  # here: only with Dask installed

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, silence_logs=logging.CRITICAL,
                      dashboard_address=":0") as running:
        yield running


@needs_dask
def test_cli_local_cluster_gives_the_in_turn_report(ranks: dict[str, Path], tmp_path: Path) -> None:
    common = ("-l", ranks["left"], "-r", ranks["right"], "--rank", "all", "--iteration", "all")
    here = _run(*common, "-o", tmp_path / "here.csv", "--json", tmp_path / "here.json")
    there = _run(*common, "-o", tmp_path / "there.csv", "--json", tmp_path / "there.json", "--dask-cluster", "local:2",
                 "--progress")
    assert here.exit_code == there.exit_code == 0, there.output
    assert (tmp_path / "here.csv").read_bytes() == (tmp_path / "there.csv").read_bytes()
    mine, theirs = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("here", "there"))
    assert comparable_result(mine) == comparable_result(theirs)
    assert "dask dashboard: http" in there.output
    assert [p["status"] for p in theirs["parts"]] == ["compared", "compared", "not compared"] + ["compared"] * 3
    assert all(p["worker"].startswith("tcp://") for p in theirs["parts"]) and all(p["worker"] is None
                                                                                   for p in mine["parts"])
    assert theirs["localisation"]["first_divergence"]["op"] == "Default/layer0/LayerNorm-op3"
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parents[3] / "docs" / "result-schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(theirs)


@needs_dask
def test_api_on_a_scheduler_graphs_and_a_shared_golden(local_cluster: object, tmp_path: Path) -> None:
    trees = make_trees(tmp_path / "trees")
    right = tmp_path / "copy"
    shutil.copytree(trees["npy"], right)
    address = local_cluster.scheduler_address  # type: ignore[attr-defined]
    links: list[str] = []
    every = dict(rank="all", iteration="all", graph="all")
    here = compare_network(trees["npy"], right, **every)
    there = compare_network(trees["npy"], right, **every, scheduler=address, on_dashboard=links.append)
    assert comparable_result(here.to_dict()) == comparable_result(there.to_dict()) and len(links) == 1
    assert len(there.network.parts) == 8 and there.network.part_graphs[-1] == 1
    # a golden folder without levels: read once by the client and sent to the workers
    golden, mapping = one_op_golden(tmp_path)
    here = compare_network(trees["npy"], golden, rank="all", iteration="all", mapping=mapping)
    there = compare_network(trees["npy"], golden, rank="all", iteration="all", mapping=mapping, scheduler=address)
    assert comparable_result(here.to_dict()) == comparable_result(there.to_dict())
    assert there.network.right.path == golden
    assert there.network.right.ops  # the client's golden run itself, not the operator-less copy a task sends back


@needs_dask
def test_a_scheduler_file_names_the_cluster(local_cluster: object, ranks: dict[str, Path], tmp_path: Path) -> None:
    """``--scheduler FILE``: the file ``dask scheduler --scheduler-file FILE`` writes (SLURM recipes)."""
    scheduler_file = tmp_path / "scheduler.json"
    scheduler_file.write_text(json.dumps({"address": local_cluster.scheduler_address}))  # type: ignore[attr-defined]
    common = ("-l", ranks["left"], "-r", ranks["right"], "--rank", "all", "--iteration", "all")
    here = _run(*common, "-o", tmp_path / "here.csv")
    there = _run(*common, "-o", tmp_path / "there.csv", "--scheduler", scheduler_file, "--quiet")
    assert here.exit_code == there.exit_code == 0, there.output
    assert (tmp_path / "here.csv").read_bytes() == (tmp_path / "there.csv").read_bytes()
    assert "dask dashboard" not in there.output  # --quiet


@needs_dask
def test_gated_run_on_the_same_data_is_refused_on_a_cluster(local_cluster: object, ranks: dict[str, Path]) -> None:
    with pytest.raises(SameDataError, match="same dump"):
        compare_network(ranks["left"], ranks["left"], rank="all", iteration="all", gates=["CosineSimilarity>=0.99"],
                        scheduler=local_cluster.scheduler_address)  # type: ignore[attr-defined]


@needs_dask
def test_a_worker_killed_mid_run_still_gives_the_whole_report(ranks: dict[str, Path], tmp_path: Path) -> None:
    from distributed import Client, LocalCluster  # here: only with Dask installed

    from compare.testing.dask_plugins import KillOnce  # here: imports distributed

    marker = tmp_path / "killed"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, silence_logs=logging.CRITICAL,
                      dashboard_address=":0") as running, Client(running, set_as_default=False) as client:
        client.register_plugin(KillOnce(marker, first=2))
        there = compare_network(ranks["left"], ranks["right"], rank="all", iteration="all",
                                scheduler=running.scheduler_address)
    assert marker.exists()  # a worker did die
    here = compare_network(ranks["left"], ranks["right"], rank="all", iteration="all")
    assert comparable_result(here.to_dict()) == comparable_result(there.to_dict())


@needs_dask
def test_a_part_failing_every_retry_is_lost_with_its_reason(ranks: dict[str, Path]) -> None:
    from distributed import Client, LocalCluster  # here: only with Dask installed

    from compare.testing.dask_plugins import BreakPart  # here: imports distributed

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, silence_logs=logging.CRITICAL,
                      dashboard_address=":0") as running, Client(running, set_as_default=False) as client:
        client.register_plugin(BreakPart(4))  # rank 1 iteration 1
        result = compare_network(ranks["left"], ranks["right"], rank="all", iteration="all",
                                 gates=["CosineSimilarity>=0.5"], scheduler=running.scheduler_address)
    lost = [r for r in result.rows if (r.rank, r.iteration) == (1, 1)]
    # one row per left operator, then the part's own row
    assert len(lost) == 9 and {r.status for r in lost} == {PairStatus.NOT_COMPARABLE}
    assert "part 4 breaks on purpose" in lost[0].reasons[0] and "failed 3 times" in lost[0].reasons[0]
    assert lost[-1].left_op == "rank 1 iteration 1" and lost[-1].reasons[0].startswith("part rank 1 iteration 1 lost: ")
    # the missing parts come first among the gate's failures: the one without golden, then the lost one
    assert [f.part for f in result.verdict.failures[:2]] == ["rank 0 iteration 2", "rank 1 iteration 1"]
    assert any(n.startswith("[rank 1 iteration 1] not compared: its cluster task failed") for n in result.notes)
    parts = result.to_dict()["parts"]
    assert parts[4]["status"] == PartStatus.LOST.value and "breaks on purpose" in parts[4]["reason"]
    assert [p["status"] for p in parts].count("compared") == 4
    assert result.exit_code == 3  # the gate: incomplete, not passed


@needs_dask
def test_one_part_is_compared_here_with_a_note(ranks: dict[str, Path]) -> None:
    result = compare_network(ranks["left"], ranks["right"], rank=0, iteration=0, cluster="local:2")
    assert result.network.parts == [] and "local:2: one part to compare" in result.notes[-1]


def test_parts_survive_a_regate(ranks: dict[str, Path], tmp_path: Path) -> None:
    """The JSON ``parts`` of a saved result are those of the re-checked one too (in-turn run)."""
    saved = tmp_path / "run.json"
    first = _run("-l", ranks["left"], "-r", ranks["right"], "--rank", "all", "--iteration", "all", "--json", saved,
                 "-o", tmp_path / "r.csv")
    assert first.exit_code == 0, first.output
    parts = json.loads(saved.read_text())["parts"]
    assert len(parts) == 6 and parts[2]["status"] == "not compared" and "selects nothing" in parts[2]["reason"]
    assert regate(saved, gates=["CosineSimilarity>=0.5"]).to_dict()["parts"] == parts


def test_without_dask_the_options_say_how_to_install(ranks: dict[str, Path], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    result = _run("-l", ranks["left"], "-r", ranks["right"], "--rank", "all", "-o", tmp_path / "r.csv",
                  "--dask-cluster", "local:2")
    assert result.exit_code == 2 and "pip install 'vcompare[dask]'" in result.output
    assert not (tmp_path / "r.csv").exists()


@pytest.mark.parametrize("args, message", [
    (("--dask-cluster", "local:2", "--scheduler", "tcp://h:8786"), "give one"),
    (("--dask-cluster", "4"), "expected local:N"),
    (("--dask-cluster", "local:0"), "expected local:N"),
    (("--scheduler", " "), "needs the Dask scheduler's address"),
    (("--dask-cluster", "local:2", "-d", "op"), "describe a network comparison"),
])
def test_cluster_options_refused(ranks: dict[str, Path], args: tuple[str, ...], message: str) -> None:
    result = _run("-l", ranks["left"], "-r", ranks["right"], "--rank", "all", *args)
    assert result.exit_code == 2 and message in result.output


@needs_dask
def test_an_unreachable_scheduler_is_an_option_error(ranks: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_runs, "CONNECT_TIMEOUT", 1)
    with pytest.raises(OptionError, match="cannot reach the Dask scheduler"):
        compare_network(ranks["left"], ranks["right"], rank="all", scheduler="tcp://127.0.0.1:9")


@needs_dask
def test_a_cluster_without_workers_is_waited_for_then_refused(ranks: dict[str, Path],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from distributed import LocalCluster  # here: only with Dask installed

    monkeypatch.setattr(cluster_runs, "WORKER_WAIT", 1)
    with LocalCluster(n_workers=0, processes=True, silence_logs=logging.CRITICAL, dashboard_address=":0") as empty:
        with pytest.raises(OptionError, match="no Dask worker joined the scheduler in 1 s"):
            compare_network(ranks["left"], ranks["right"], rank="all", scheduler=empty.scheduler_address)


def test_cluster_spec() -> None:
    assert ClusterSpec.parse(None, None) is None
    assert ClusterSpec.parse("local:3", None) == ClusterSpec(local_workers=3)
    assert ClusterSpec.parse(None, "tcp://h:8786").describe() == "tcp://h:8786"
    assert ClusterSpec(scheduler="tcp://h:8786").engine_threads() == 1


def test_task_batches() -> None:
    # small parts share a task up to the limit; a big part (the walk's count stopped) is alone
    assert task_batches([16] * 6, workers=2) == [[0, 1], [2, 3], [4, 5]]
    assert task_batches([MAX_SNIFF, 10, 10, MAX_SNIFF, 10], workers=1) == [[0], [1, 2], [3], [4]]
    # enough tasks for every worker: no batching when parts are few
    assert task_batches([100] * 4, workers=2) == [[0], [1], [2], [3]]
    assert task_batches([1] * 5000, workers=1)[0] == list(range(1024))
