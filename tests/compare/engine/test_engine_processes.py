"""The engine's worker processes (many small tensors): same rows as threads, in pair order, and a
worker that dies does not hang or abort the run."""

from __future__ import annotations

import math
import os

import pytest

from compare import engine
from compare.runs.loading import load_and_pair
from compare.engine import EngineOptions, compare_pairs, use_processes
from compare.testing.synthetic_large import make_large_network

pytestmark = pytest.mark.skipif(not engine._can_fork(), reason="worker processes need fork (Linux)")


@pytest.fixture(scope="module")
def network(tmp_path_factory):
    made = make_large_network(tmp_path_factory.mktemp("net"), size_gb=0.0004, n_ops=24, seed=3)
    _, _, _, _, pairing = load_and_pair(made["left"], made["right"], made["fusion_rule"])
    return pairing.pairs


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or (math.isnan(a) and math.isnan(b))


def _assert_rows_equal(left, right):
    assert [r.index for r in left] == [r.index for r in right]
    for x, y in zip(left, right):
        assert (x.left_op, x.right_op, x.tensor_id, x.status, x.shape, x.reasons) == \
               (y.left_op, y.right_op, y.tensor_id, y.status, y.shape, y.reasons)
        assert x.metrics.keys() == y.metrics.keys()
        assert all(_same(x.metrics[k], y.metrics[k]) for k in x.metrics), (x.metrics, y.metrics)
        assert (x.std is None) == (y.std is None)


def test_processes_give_the_rows_of_threads(network, monkeypatch):
    monkeypatch.setattr(engine, "PROCESS_CHUNK", 7)  # several chunks, cut between groups
    threads = compare_pairs(network, EngineOptions(workers=2, processes=False))
    seen = []
    forked = compare_pairs(network, EngineOptions(workers=2, processes=True,
                                                  progress=lambda done, total: seen.append((done, total))))
    assert len(network) > 40 and any(r for r in threads)
    _assert_rows_equal(threads, forked)
    assert seen[-1] == (len(network), len(network)) and [d for d, _ in seen] == list(range(1, len(network) + 1))


def test_chunks_cover_every_pair_once(network, monkeypatch):
    monkeypatch.setattr(engine, "PROCESS_CHUNK", 5)
    chunks = engine._chunks(list(network))
    assert chunks[0][0] == 0 and chunks[-1][1] == len(network)
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))


_REAL_CHILD_RUN = engine._child_run


def _dying_child_run(chunk):
    """The worker of the second chunk dies (as one killed by the OOM killer would)."""
    if chunk[0] > 0:
        os._exit(137)
    return _REAL_CHILD_RUN(chunk)


def test_a_dead_worker_neither_hangs_nor_loses_rows(network, monkeypatch):
    monkeypatch.setattr(engine, "PROCESS_CHUNK", 7)
    expected = compare_pairs(network, EngineOptions(workers=1))
    monkeypatch.setattr(engine, "_child_run", _dying_child_run)
    rows = compare_pairs(network, EngineOptions(workers=2, processes=True))
    _assert_rows_equal(expected, rows)


def test_when_processes_are_used(network):
    assert not use_processes(EngineOptions(), network[:10])  # few pairs: threads
    assert use_processes(EngineOptions(processes=True), network[:10])
    assert not use_processes(EngineOptions(processes=False), network * 100)
    assert use_processes(EngineOptions(), (network * 100)[: engine.PROCESS_MIN_PAIRS])


# --------------------------------------------------------------------------- the background rule parse


def test_background_rule_gives_the_rule_and_its_errors(tmp_path, monkeypatch):
    """A large fusion rule parsed in a forked process pairs exactly as one parsed here; a
    malformed one raises the same error as without the background parse."""
    from compare.runs import loading as api
    from compare.errors import CompareError

    made = make_large_network(tmp_path / "net", size_gb=0.0004, n_ops=24, seed=3)
    direct = load_and_pair(made["left"], made["right"], made["fusion_rule"])[4]
    monkeypatch.setattr(api, "BACKGROUND_RULE_BYTES", 1)  # every rule file in the background
    pending = api.BackgroundRule.start(made["fusion_rule"])
    assert pending is not None
    pending.close()
    background = load_and_pair(made["left"], made["right"], made["fusion_rule"])[4]
    assert [(p.left_op, p.right_op, p.tensor_id, p.status) for p in background.pairs] == \
           [(p.left_op, p.right_op, p.tensor_id, p.status) for p in direct.pairs]
    bad = tmp_path / "bad.json"
    bad.write_text('{"graph": [{"op": [{"name": 5}]}')
    monkeypatch.setattr(api, "BACKGROUND_RULE_BYTES", 10**12)
    with pytest.raises(CompareError) as plain:
        load_and_pair(made["left"], made["right"], bad)
    monkeypatch.setattr(api, "BACKGROUND_RULE_BYTES", 1)
    with pytest.raises(CompareError) as forked:
        load_and_pair(made["left"], made["right"], bad)
    assert type(forked.value) is type(plain.value) and str(forked.value) == str(plain.value)


def test_workers_die_with_their_parent(tmp_path):
    """A worker (die_with_parent) does not outlive a parent that exits at once, as a command line
    stopped by Ctrl-C does (it used to stay, blocked on a pipe the other worker kept open)."""
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "child.pid"
    code = (
        "import os, time\n"
        "from compare.engine import die_with_parent\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    die_with_parent()\n"
        f"    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "    time.sleep(60)\n"
        "    os._exit(0)\n"
        "while not os.path.exists(" + repr(str(pid_file)) + "): time.sleep(0.01)\n"
        "time.sleep(0.1)\n"
        "os._exit(130)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130, proc.stderr
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        try:
            with open(f"/proc/{child}/stat") as stat:  # a zombie waiting for init counts as gone
                if stat.read().split(")")[-1].split()[0] == "Z":
                    return
        except FileNotFoundError:
            return
        time.sleep(0.05)
    pytest.fail(f"worker {child} outlived its parent")
