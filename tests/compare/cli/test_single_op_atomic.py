"""Interrupted single-operator runs: the folder holds the complete old result or the complete new one.

Every test runs the command line in a subprocess on a 1,000,000-element operator (the detail files
take a noticeable moment to write) into a folder that already holds a complete result of the same
operator, written with other options (``-ml 10000 -n 5``: 100 detail files; the new run uses
``-ml 20000 -n 7``: 50 detail files, other top-N files), next to a file of the user's. The folder
is compared name by name and byte by byte with the two complete results.

Moments of the interruption:

- while the result is being written: the test polls the folder (and our staging folders) and
  signals when the first detail file appears, when half the detail files are written, when the
  top-N files are written;
- during the swap-in: a small wrapper around ``os.replace`` in the child sends the signal itself
  right after the k-th file is renamed into the folder (deterministic, no timing);
- SIGKILL at both places: the following run in the folder completes or removes what it left.

No test measures time; polling has a generous timeout.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.signals import Interrupted, held, interruptible

TS = 1704110400001000
ELEMENTS = 1_000_000
OLD_ARGS = ("-ml", "10000", "-n", "5")
NEW_ARGS = ("-ml", "20000", "-n", "7")
#: Files the new run renames into the folder: 50 detail files, two top-N files, the summary.
NEW_FILES = ELEMENTS // 20000 + 3
PREFIX = "op_output_0"
DETAIL = re.compile(re.escape(PREFIX) + r"_\d+\.csv")
USER_FILE = "notes.txt"
POLL_TIMEOUT = 120.0

# the child of the swap-in tests: os.replace sends SIGNAL right after the K-th rename into OUT
CHILD = r"""
import os, sys
out, k, signum = os.path.realpath(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
real = os.replace
renamed = 0

def replace(src, dst, *args, **kwargs):
    global renamed
    real(src, dst, *args, **kwargs)
    if os.path.realpath(os.path.dirname(os.path.abspath(dst))) == out:
        renamed += 1
        if renamed == k:
            os.kill(os.getpid(), signum)

os.replace = replace
from compare.cli import main
main(sys.argv[4:])
"""


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The dump and golden folders (a big op and a small one) and the two complete results."""
    root = tmp_path_factory.mktemp("atomic")
    npu, gold = root / "npu", root / "golden"
    npu.mkdir()
    gold.mkdir()
    big = np.random.default_rng(0).standard_normal((1, ELEMENTS)).astype(np.float32)
    small = np.linspace(-1.0, 1.0, 64, dtype=np.float32).reshape(1, 64)
    for name, golden, ts in (("op", big, TS), ("small", small, TS + 1)):
        write_dump(npu / f"Conv2D.{name}.1.1.{ts}", op_name=name,
                   outputs=[TensorSpec(golden.astype(np.float16), format="ND")])
        np.save(gold / f"{name}.0.{ts + 5000000}.npy", golden)
    paths = {"npu": npu, "golden": gold, "old": root / "old", "new": root / "new"}
    for key, extra in (("old", OLD_ARGS), ("new", NEW_ARGS)):
        paths[key].mkdir()
        (paths[key] / USER_FILE).write_text("the user's file, never touched\n")
        done = _cli(paths, paths[key], *extra)
        assert done.returncode == 0, done.stderr
    return paths


def _argv(case: dict[str, Path], out: Path, *extra: str, op: str = "op") -> list[str]:
    return ["-l", str(case["npu"]), "-r", str(case["golden"]), "-d", op, "-o", str(out), "--quiet", *extra]


def _cli(case: dict[str, Path], out: Path, *extra: str, op: str = "op") -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from compare.cli import main; main()", *_argv(case, out, *extra, op=op)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def _snapshot(folder: Path) -> dict[str, str]:
    """Every entry of the folder (hidden ones too): name -> SHA-256 of the bytes, or ``<dir>``."""
    out: dict[str, str] = {}
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            out[entry.name] = "<dir>"
        else:
            out[entry.name] = hashlib.sha256(Path(entry.path).read_bytes()).hexdigest()
    return out


def _ours(name: str) -> bool:
    return name.startswith(".vcmp-")


def _prepared(case: dict[str, Path], tmp_path: Path) -> Path:
    """A copy of the folder holding the complete old result (mtimes kept: older than any new file)."""
    out = tmp_path / "out"
    shutil.copytree(case["old"], out)
    return out


def _new_files(out: Path, since: int) -> list[str]:
    """Names of files written after ``since`` (ns), in the folder and in our staging folders."""
    found: list[str] = []
    folders = [out]
    try:
        entries = list(os.scandir(out))
    except OSError:
        return found
    folders += [Path(e.path) for e in entries if _ours(e.name) and e.is_dir(follow_symlinks=False)]
    for folder in folders:
        try:
            for entry in os.scandir(folder):
                try:
                    if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime_ns >= since:
                        found.append(entry.name)
                except OSError:
                    continue
        except OSError:
            continue
    return found


def _reached(moment: str, names: list[str]) -> bool:
    if moment == "first":  # the first detail file exists (being written, or written)
        return any(DETAIL.fullmatch(n) for n in names)
    if moment == "middle":  # half the detail files are written
        return sum(1 for n in names if DETAIL.fullmatch(n)) >= (NEW_FILES - 3) // 2
    return any(n.endswith("_error_topn.csv") for n in names)  # "topn": only the summary is left


def _run_and_signal(case: dict[str, Path], out: Path, moment: str, signum: int) -> tuple[subprocess.Popen, str]:
    since = time.time_ns() - 1
    cmd = [sys.executable, "-c", "from compare.cli import main; main()", *_argv(case, out, *NEW_ARGS)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + POLL_TIMEOUT
    while proc.poll() is None and time.monotonic() < deadline:
        if _reached(moment, _new_files(out, since)):
            proc.send_signal(signum)
            break
    _, err = proc.communicate(timeout=POLL_TIMEOUT)
    return proc, err


def _assert_old_or_new(case: dict[str, Path], out: Path, proc: subprocess.Popen, err: str, signum: int) -> str:
    """The folder is exactly the old or the new complete result; the exit code and message fit."""
    got = _snapshot(out)
    old, new = _snapshot(case["old"]), _snapshot(case["new"])
    which = "old" if got == old else "new" if got == new else None
    assert which is not None, (
        f"a mix of two runs: {sorted(set(got) - set(old) - set(new))[:5]} new-only, "
        f"{sorted(n for n in got if n in old and n in new and got[n] == old[n] != new[n])[:5]} old, "
        f"{sorted(n for n in got if n in old and n in new and got[n] == new[n] != old[n])[:5]} new, "
        f"leftovers {[n for n in got if _ours(n)]}")
    assert "Traceback" not in err, err
    if proc.returncode == 0:  # finished before the signal
        assert which == "new"
    else:
        assert proc.returncode == 128 + signum, (proc.returncode, err)
        assert signal.Signals(signum).name in err
    return which


# ------------------------------------------------------------------------------ SIGINT / SIGTERM


@pytest.mark.parametrize(("signum", "moment"), [
    (signal.SIGINT, "first"), (signal.SIGINT, "middle"), (signal.SIGTERM, "middle"), (signal.SIGTERM, "topn"),
])
def test_signal_while_writing_keeps_the_old_result_whole(case: dict[str, Path], tmp_path: Path,
                                                         signum: int, moment: str) -> None:
    out = _prepared(case, tmp_path)
    proc, err = _run_and_signal(case, out, moment, signum)
    _assert_old_or_new(case, out, proc, err, signum)


@pytest.mark.parametrize(("signum", "k"), [
    (signal.SIGINT, 1),  # right after the first file is renamed into the folder
    (signal.SIGTERM, NEW_FILES - 1),  # before the summary
    (signal.SIGINT, NEW_FILES),  # after the summary, before the old detail files are removed
])
def test_signal_during_the_swap_in_gives_the_new_result_whole(case: dict[str, Path], tmp_path: Path,
                                                              signum: int, k: int) -> None:
    out = _prepared(case, tmp_path)
    cmd = [sys.executable, "-c", CHILD, str(out), str(k), str(int(signum)), *_argv(case, out, *NEW_ARGS)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signum, err  # the signal is delivered once the swap-in is complete
    assert _assert_old_or_new(case, out, proc, err, signum) == "new"
    assert "after writing" in err  # the stop message names the files written


def test_first_run_interrupted_leaves_no_result(case: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "fresh"
    proc, err = _run_and_signal(case, out, "middle", signal.SIGINT)
    names = sorted(p.name for p in out.iterdir()) if out.exists() else []
    if proc.returncode == 0:
        assert _snapshot(out) == {k: v for k, v in _snapshot(case["new"]).items() if k != USER_FILE}
    else:
        assert proc.returncode == 130 and names == [], names


# ------------------------------------------------------------------------------ SIGKILL


def test_sigkill_while_writing_then_the_next_run_cleans_up(case: dict[str, Path], tmp_path: Path) -> None:
    out = _prepared(case, tmp_path)
    proc, _ = _run_and_signal(case, out, "middle", signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    got = _snapshot(out)
    leftovers = [n for n in got if _ours(n)]
    assert leftovers  # SIGKILL cannot be handled: its temporaries stay ...
    assert {n: h for n, h in got.items() if not _ours(n)} == _snapshot(case["old"])  # ... but the old result is whole
    done = _cli(case, out, *NEW_ARGS)  # ... until the next run in the folder
    assert done.returncode == 0, done.stderr
    assert _snapshot(out) == _snapshot(case["new"])


@pytest.mark.parametrize("k", [1, NEW_FILES // 2, NEW_FILES])
def test_sigkill_during_the_swap_in_is_completed_by_the_next_run(case: dict[str, Path], tmp_path: Path,
                                                                 k: int) -> None:
    out = _prepared(case, tmp_path)
    cmd = [sys.executable, "-c", CHILD, str(out), str(k), str(int(signal.SIGKILL)), *_argv(case, out, *NEW_ARGS)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    # the next run in the folder, for another operator, finishes the swap-in first
    done = _cli(case, out, op="small")
    assert done.returncode == 0, done.stderr
    got = _snapshot(out)
    small = {n: h for n, h in got.items() if n.startswith("small_output_0")}
    assert len(small) == 4  # its own result: summary, one detail file, two top-N files
    assert {n: h for n, h in got.items() if n not in small} == _snapshot(case["new"])


# ------------------------------------------------------------------------------ what the cleaning spares


def test_cleaning_removes_only_dead_temporaries_of_ours(case: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "shared"
    out.mkdir()
    hour_ago = time.time() - 3600
    stale_file = out / ".vcmp-abcd1234.tmp"  # a killed run's temporary (the name today's writer uses)
    stale_stage = out / ".vcmp-dead0001.stage"  # a killed run's staging folder
    stale_stage.mkdir()
    (stale_stage / ".vcmp-lock").write_bytes(b"")
    (stale_stage / "small_output_0_0.csv").write_text("half")
    live_file = out / ".vcmp-live0001.tmp"  # a temporary of a run still writing
    live_stage = out / ".vcmp-live0002.stage"
    live_stage.mkdir()
    (live_stage / ".vcmp-lock").write_bytes(b"")
    (live_stage / "x_output_0_0.csv").write_text("being written")
    future = out / ".vcmp-fut00001.tmp"  # newer than the run: a run that started after this one
    not_ours = [out / ".vcmp-notes.txt", out / "x.tmp", out / ".vcmp-a.tmp", out / ".vcmp-toolong123.tmp",
                out / "vcmp-abcd1234.tmp", out / ".vcmp-dir00001.tmp", out / ".vcmp-link0001.tmp"]
    for path in (stale_file, live_file, future, *not_ours[:5]):
        path.write_text("x")
    not_ours[5].mkdir()  # a folder named like a temporary file
    not_ours[6].symlink_to(out / USER_FILE)  # a link named like one
    (out / USER_FILE).write_text("keep")
    for path in (stale_file, stale_stage / "small_output_0_0.csv", stale_stage / ".vcmp-lock", stale_stage,
                 live_file, live_stage, *not_ours[:6]):
        os.utime(path, (hour_ago, hour_ago))
    os.utime(future, (time.time() + 3600,) * 2)
    locks = []
    for path in (live_file, live_stage / ".vcmp-lock"):  # held by a live process: this one
        fd = os.open(path, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        locks.append(fd)
    try:
        done = _cli(case, out, op="small")
    finally:
        for fd in locks:
            os.close(fd)
    assert done.returncode == 0, done.stderr
    left = {p.name for p in out.iterdir()}
    assert stale_file.name not in left and stale_stage.name not in left
    assert {live_file.name, live_stage.name, future.name, USER_FILE, *(p.name for p in not_ours)} <= left
    assert (live_stage / "x_output_0_0.csv").read_text() == "being written"
    assert os.readlink(not_ours[6]) == str(out / USER_FILE)


# ------------------------------------------------------------------------------ held signals


def test_held_signals_are_delivered_when_the_block_ends() -> None:
    done: list[str] = []
    with pytest.raises(Interrupted) as info, interruptible():
        with held():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # the handler would run here if the signal were not held
                done.append("x")
            done.append("end of block")
    assert done[-1] == "end of block" and info.value.exit_code == 143


# ------------------------------------------------------------------------------ the sweep's rules


def test_a_killed_swap_in_that_a_later_result_replaced_is_not_completed(case: dict[str, Path],
                                                                        tmp_path: Path) -> None:
    from compare.reports.staging import sweep_leftovers

    out = _prepared(case, tmp_path)
    cmd = [sys.executable, "-c", CHILD, str(out), "1", str(int(signal.SIGKILL)), *_argv(case, out, *NEW_ARGS)]
    assert subprocess.run(cmd, capture_output=True, timeout=300).returncode == -signal.SIGKILL
    (stage,) = [p for p in out.iterdir() if _ours(p.name)]
    # a run that was live when this one died swapped its result in since: the first file is another inode
    later = out / "later.tmp"
    later.write_text("a later result\n")
    os.replace(later, out / f"{PREFIX}_0.csv")
    before = _snapshot(out)
    swept = sweep_leftovers(out, before=time.time())
    assert swept.removed == (stage,) and swept.completed == ()
    assert _snapshot(out) == {n: h for n, h in before.items() if n != stage.name}


def test_without_file_locks_only_day_old_leftovers_are_removed(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from compare.reports import staging

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(staging.fcntl, "flock", no_locks)
    hour, two_days = tmp_path / ".vcmp-hour0001.tmp", tmp_path / ".vcmp-days0001.tmp"
    for path, age in ((hour, 3600), (two_days, 2 * 86400)):
        path.write_text("x")
        os.utime(path, (time.time() - age,) * 2)
    swept = staging.sweep_leftovers(tmp_path, before=time.time())
    assert swept.removed == (two_days,) and hour.exists()


def test_swap_ins_into_one_folder_wait_for_each_other(tmp_path: Path) -> None:
    import threading

    from compare.reports.staging import ResultStage

    stage = ResultStage(tmp_path)
    target = stage.write_bytes("a_output_0_summary.txt", b"TotalCount:1\n")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another run's swap-in is under way
    worker = threading.Thread(target=stage.commit, args=(lambda name: False,))
    try:
        worker.start()
        worker.join(0.5)  # not a timing assertion: had it not waited, it would be done by now or later
        assert not target.exists()
    finally:
        os.close(fd)
    worker.join(POLL_TIMEOUT)
    assert target.read_bytes() == b"TotalCount:1\n" and [p.name for p in tmp_path.iterdir()] == [target.name]


def test_network_mode_cleans_leftovers_of_killed_runs(tmp_path: Path) -> None:
    """A network run sweeps its output folders too: an old, unlocked temporary of ours (what a
    SIGKILL leaves) is removed; a file that is not ours is kept."""
    from typer.testing import CliRunner

    from compare.cli import app

    out = tmp_path / "out"
    out.mkdir()
    stale = out / ".vcmp-abcd1234.tmp"
    stale.write_bytes(b"x" * 1000)
    other = out / ".vcmp-notours.txt"
    other.write_text("keep")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    demo = Path(__file__).resolve().parents[3] / "fixtures" / "demo"
    result = CliRunner().invoke(app, ["-l", str(demo / "npu"), "-r", str(demo / "golden"), "-f",
                                      str(demo / "model.json"), "-o", str(out / "r.csv")])
    assert result.exit_code == 0, result.output
    assert not stale.exists() and other.exists() and (out / "r.csv").is_file()
    assert "cleaned up 1 leftover temporary file(s)" in result.output
