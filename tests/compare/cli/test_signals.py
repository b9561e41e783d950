"""SIGINT / SIGTERM: a clean stop, no half-written or temporary files, an existing result untouched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compare.engine import EngineOptions, compare_pairs
from compare.records import Pair, TensorKind, TensorRef
from compare.reports.files import atomic_write
from convert.signals import Interrupted, interruptible


def test_signals_raise_interrupted_and_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted) as info, interruptible():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)
    assert info.value.exit_code == 143 and "SIGTERM" in str(info.value)
    assert signal.getsignal(signal.SIGTERM) is before


def test_atomic_writer_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "result.csv"
    target.write_text("old complete result\n")

    def write(handle) -> None:
        handle.write(b"half of a new res")
        raise Interrupted(signal.SIGINT)

    with pytest.raises(Interrupted):
        atomic_write(target, write)
    assert target.read_text() == "old complete result\n"
    assert [p.name for p in tmp_path.iterdir()] == ["result.csv"]


def test_engine_does_not_turn_an_interrupt_into_a_row(tmp_path: Path) -> None:
    def reader():
        raise Interrupted(signal.SIGINT)

    ref = TensorRef("op", TensorKind.OUTPUT, 0, "float32", "ND", (4,), tmp_path / "x", reader=reader)
    pair = Pair(0, "Add", "op", "op", "op:output:0", ref, ref)
    with pytest.raises(Interrupted):
        compare_pairs([pair], EngineOptions())


def test_sigterm_during_a_run(tmp_path: Path) -> None:
    from compare.testing.synthetic_large import make_large_network

    case = make_large_network(tmp_path / "case", size_gb=0.03, n_ops=20)
    out = tmp_path / "out"
    cmd = [sys.executable, "-c", "from compare.cli import main; main()", "-l", str(case["left"]),
           "-r", str(case["right"]), "-f", str(case["fusion_rule"]), "-o", str(out / "result.csv")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.8)  # usually inside the comparison; either outcome below is correct
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    leftovers = [p.name for p in out.iterdir()] if out.exists() else []
    if leftovers == ["result.csv"]:  # the run finished (or had written its result) before the signal
        assert proc.returncode in (0, 143, -signal.SIGTERM)
        header = (out / "result.csv").read_text().splitlines()[0]
        assert header.startswith("Index,") and header.endswith("FailReason")
    else:
        assert proc.returncode in (143, -signal.SIGTERM)
        assert leftovers == []  # no result, no temporary file
        if proc.returncode == 143:
            assert b"SIGTERM" in err and b"Traceback" not in err


# --------------------------------------------------------------------------------------------
# an interrupt swallowed where Python cannot propagate it (a __del__, a GC or weakref callback)


class _SignalOnDelete:
    """Sends ``signum`` to this process from its ``__del__``: the handler's Interrupted is raised
    inside ``__del__``, where Python can only print "Exception ignored" and carry on -- what
    matplotlib's callbacks did to ~1 in 3 interrupts of an ``--html`` run."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        signal.raise_signal(self.signum)


def test_swallowed_interrupt_is_raised_at_the_end_of_the_block() -> None:
    from convert.signals import check_interrupted

    with pytest.raises(Interrupted) as info, interruptible():
        _SignalOnDelete(signal.SIGINT)  # dropped at once: the exception is swallowed in __del__
        assert True  # the block goes on ...
    assert info.value.exit_code == 130  # ... but does not end normally
    check_interrupted()  # outside the block: nothing pending any more


def test_swallowed_interrupt_stops_the_writer_before_the_rename(tmp_path: Path) -> None:
    target = tmp_path / "result.json"
    target.write_text("old")

    def write(handle) -> None:
        handle.write(b"new and complete")
        _SignalOnDelete(signal.SIGTERM)

    with pytest.raises(Interrupted), interruptible():
        atomic_write(target, write)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_swallowed_while_rendering_html_ends_the_run(tmp_path: Path, signum: int,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The signal arrives inside a ``__del__`` while the --html report is drawn: the run ends with
    130 / 143, the HTML is not written, nothing temporary is left, no "Exception ignored"."""
    from compare.cli import run
    from compare.reports import html
    from conftest import FIXTURES

    real = html.render_html

    def render(data):  # type: ignore[no-untyped-def]
        text = real(data)
        _SignalOnDelete(signum)
        return text

    monkeypatch.setattr(html, "render_html", render)
    demo = FIXTURES / "demo"
    code = run(["-l", str(demo / "npu"), "-r", str(demo / "golden"), "-f", str(demo / "model.json"),
                "-o", str(tmp_path / "r.csv"), "--html", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert code == 128 + signum, err
    assert not (tmp_path / "r.html").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert signal.Signals(signum).name in err
    assert "Exception ignored" not in err and "Traceback" not in err


def test_sigterm_at_several_moments_of_an_html_run(tmp_path: Path) -> None:
    """A real signal at several delays into an ``--html`` run: each run ends with 143 (or had
    finished, exit 0, with every file complete); never a temporary file, a half file, or an
    "Exception ignored"."""
    from compare.testing.synthetic_large import make_large_network

    case = make_large_network(tmp_path / "case", size_gb=0.01, n_ops=12)
    for delay in (0.3, 0.6, 0.9, 1.2):
        out = tmp_path / f"out-{delay}"
        cmd = [sys.executable, "-c", "from compare.cli import main; main()", "-l", str(case["left"]),
               "-r", str(case["right"]), "-f", str(case["fusion_rule"]), "-o", str(out / "result.csv"),
               "--html", str(out / "r.html")]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert b"Exception ignored" not in err and b"Traceback" not in err, err.decode()
        names = sorted(p.name for p in out.iterdir()) if out.exists() else []
        assert all(not name.startswith(".") for name in names), names
        if proc.returncode == 0:  # finished before the signal came
            assert names == ["r.html", "result.csv"]
        else:
            assert proc.returncode in (143, -signal.SIGTERM), err.decode()
        if "r.html" in names:
            assert (out / "r.html").read_text().rstrip().endswith("</html>")
