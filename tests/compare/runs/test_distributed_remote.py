"""Dump trees given as fsspec URLs (convert.remote; issue 18): the same report as from the paths,
in this process and on a LocalCluster, whose workers fetch the files of their parts when their
machine lacks them; without fsspec the URL says how to install it."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders import one_op_golden
from compare.api import compare_network
from compare.cli import app
from compare.reports.network import render_csv
from compare.runs import distributed as cluster_runs
from compare.testing.synthetic_mindspore import make_trees
from compare.testing.synthetic_rank_trees import make_rank_trees
from convert.remote import CACHE_ENV

needs_fsspec = pytest.mark.skipif(importlib.util.find_spec("fsspec") is None,
                                  reason="fsspec is not installed: pip install 'vcompare[remote]'")
needs_dask = pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                                reason="dask[distributed] is not installed: pip install 'vcompare[dask]'")
EVERY = ("--rank", "all", "--iteration", "all")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    trees = make_rank_trees(tmp_path_factory.mktemp("ranks"), ranks=2, iterations=3, faulty=(1, 1, 3),
                            unmatched=((0, 2),))
    report = trees["left"].parent / "paths.csv"
    done = _run("-l", trees["left"], "-r", trees["right"], *EVERY, "-o", report)
    assert done.exit_code == 0, done.output
    return {**trees, "report": report}


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def _run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _cells(path: Path) -> bytes:
    """A report's bytes with the folder that the part without golden names in its row (the right
    side's path, or the local copy of its URL) put as ``RIGHT``: the rest is byte for byte."""
    return re.sub(rb"selects nothing in [^:]+:", b"selects nothing in RIGHT:", path.read_bytes())


@needs_fsspec
def test_file_and_memory_urls_give_the_report_of_the_paths(ranks: dict[str, Path], tmp_path: Path,
                                                           cache: Path) -> None:
    done = _run("-l", ranks["left"].as_uri(), "-r", ranks["right"].as_uri(), *EVERY, "-o", tmp_path / "file.csv")
    assert done.exit_code == 0, done.output
    assert _cells(tmp_path / "file.csv") == _cells(ranks["report"])
    assert f"left: {ranks['left'].as_uri()} read through its local copy {cache}" in done.output

    import fsspec  # here: only with fsspec installed

    memory = fsspec.filesystem("memory")
    name = f"/vcompare-{uuid.uuid4().hex}"
    for side in ("left", "right"):
        memory.put(str(ranks[side]), f"{name}/{side}", recursive=True)
    try:
        done = _run("-l", f"memory://{name}/left", "-r", f"memory://{name}/right", *EVERY,
                    "-o", tmp_path / "memory.csv")
    finally:
        memory.rm(name, recursive=True)
    assert done.exit_code == 0, done.output
    assert _cells(tmp_path / "memory.csv") == _cells(ranks["report"])


@needs_fsspec
@needs_dask
def test_a_file_url_on_a_local_cluster(ranks: dict[str, Path], tmp_path: Path, cache: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Byte-identical to the path run, the client planning from placeholders (the data is read by
    the worker that compares it); and with the client's copy gone once the plan is made (as on
    workers of other machines), the workers fetch what their parts read."""
    common = ("-l", ranks["left"].as_uri(), "-r", ranks["right"].as_uri(), *EVERY, "--dask-cluster", "local:2")
    planned = cluster_runs.task_batches
    at_plan: list[int] = []

    def sizes_at_plan(files: list[int], workers: int) -> list[list[int]]:
        at_plan.extend(p.stat().st_size for p in cache.rglob("*.npy"))
        return planned(files, workers)

    monkeypatch.setattr(cluster_runs, "task_batches", sizes_at_plan)
    done = _run(*common, "-o", tmp_path / "cluster.csv")
    assert done.exit_code == 0, done.output
    assert _cells(tmp_path / "cluster.csv") == _cells(ranks["report"])
    assert len(at_plan) == 176 and set(at_plan) == {0}  # every tensor a placeholder when the plan is made
    assert all(p.stat().st_size > 0 for p in cache.rglob("*.npy"))  # and fetched by the workers since

    def copy_gone(files: list[int], workers: int) -> list[list[int]]:
        shutil.rmtree(cache)  # after the plan, before the first task
        return planned(files, workers)

    monkeypatch.setattr(cluster_runs, "task_batches", copy_gone)
    done = _run(*common, "-o", tmp_path / "fetched.csv")
    assert done.exit_code == 0, done.output
    assert _cells(tmp_path / "fetched.csv") == _cells(ranks["report"])
    mirrored = [p.relative_to(cache).parts for p in cache.rglob("*.npy")]
    assert ("rank_1", "Net", "0", "1") in {m[1:5] for m in mirrored}
    # every part's leaves are back (the part without a golden too: its left leaf is read to say so)
    assert len(mirrored) == sum(1 for side in ("left", "right") for _ in ranks[side].rglob("*.npy"))


def test_a_url_without_fsspec_says_how_to_install(ranks: dict[str, Path], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)
    done = _run("-l", "s3://bucket/run/npu", "-r", ranks["right"], *EVERY, "-o", tmp_path / "r.csv")
    assert done.exit_code == 2 and "pip install 'vcompare[remote]'" in done.output
    assert not (tmp_path / "r.csv").exists()


@needs_fsspec
@needs_dask
def test_a_golden_url_without_levels_on_a_local_cluster(tmp_path: Path) -> None:
    """A golden side without rank / iteration levels is read by the client (copied whole) and sent
    to the workers; the left tree's tensors are copied by the workers: the same rows."""
    trees = make_trees(tmp_path / "trees")
    (tmp_path / "g").mkdir()
    golden, mapping = one_op_golden(tmp_path / "g")
    here = compare_network(trees["npy"], golden, rank="all", iteration="all", mapping=mapping)
    there = compare_network(Path(trees["npy"]).as_uri(), golden.as_uri(), rank="all", iteration="all",
                            mapping=mapping, cluster="local:2")
    assert render_csv(there.rows, there.metrics) == render_csv(here.rows, here.metrics)
    assert [r.status for r in there.network.part_reports] == [r.status for r in here.network.part_reports]
