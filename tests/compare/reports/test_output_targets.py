"""Outputs never replace what they should not (issue 27): through ``atomic_write``, the command
line (``-o`` / ``--json`` / ``--junit`` / ``--html``) and a single-operator result's staged files.

Rule (docs/reliability.md, "Where outputs go"): a symbolic link is followed, the file it points
to replaced and the link kept; a character device or FIFO is written through, never renamed over;
a block device, a socket, a link loop or a FIFO without its reader is refused.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.errors import OutputError
from compare.reports.files import atomic_write_text
from compare.reports.staging import ResultStage
from conftest import FIXTURES, ROOT

DEMO = FIXTURES / "demo"
runner = CliRunner()


def _demo(*extra: object) -> list[str]:
    return ["-l", str(DEMO / "npu"), "-r", str(DEMO / "golden"), "-f", str(DEMO / "model.json"),
            *[str(e) for e in extra]]


def _char_device(tmp_path: Path) -> Path:
    """A private /dev/null (char 1,3) in tmp_path: the real /dev/null and /dev/stdout are never touched."""
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError) as exc:
        pytest.skip(f"cannot create a device node here ({exc}): needs root / CAP_MKNOD")
    return node


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".vcmp-"))


def test_atomic_write_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "store" / "report.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "report.json"
    link.symlink_to(real)
    assert atomic_write_text(link, "new") == link
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new"
    assert _leftovers(tmp_path) == [] and _leftovers(real.parent) == []


def test_atomic_write_to_a_fifo_writes_through(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="no reader"):  # never a hang, never a replaced FIFO
        atomic_write_text(fifo, "lost")
    got: list[bytes] = []
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)

    def read() -> None:
        os.set_blocking(fd, True)
        got.append(os.read(fd, 1 << 16))

    try:
        atomic_write_text(fifo, '{"ok": true}')
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(10)
    finally:
        os.close(fd)
    assert got == [b'{"ok": true}']
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _leftovers(tmp_path) == []


def test_atomic_write_to_a_char_device_is_not_replaced(tmp_path: Path) -> None:
    node = _char_device(tmp_path)
    atomic_write_text(node, "into the void")
    assert stat.S_ISCHR(os.lstat(node).st_mode) and os.lstat(node).st_rdev == os.makedev(1, 3)
    assert _leftovers(tmp_path) == []


def test_cli_json_junit_and_table_through_symlinks(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    links = {}
    for name in ("r.csv", "r.json", "r.xml", "r.html"):
        (store / name).write_text("old")
        links[name] = tmp_path / name
        links[name].symlink_to(store / name)
    result = runner.invoke(app, _demo("-o", links["r.csv"], "--json", links["r.json"], "--junit", links["r.xml"],
                                      "--html", links["r.html"]))
    assert result.exit_code == 0, result.output
    for name, link in links.items():
        assert link.is_symlink(), name
        assert (store / name).read_text() != "old", name
    assert "rows" in json.loads((store / "r.json").read_text())
    assert (store / "r.csv").read_text().startswith("Index,")


def test_cli_json_to_a_device_node_is_written_through(tmp_path: Path) -> None:
    node = _char_device(tmp_path)
    link = tmp_path / "stdout-like"
    link.symlink_to(node)
    result = runner.invoke(app, _demo("-o", tmp_path / "r.csv", "--json", node, "--junit", link))
    assert result.exit_code == 0, result.output
    table = runner.invoke(app, _demo("-o", node))  # no suffix, yet a device: a CSV table, not a folder
    assert table.exit_code == 0, table.output
    assert stat.S_ISCHR(os.lstat(node).st_mode) and os.lstat(node).st_rdev == os.makedev(1, 3)
    assert link.is_symlink() and os.readlink(link) == str(node)
    assert _leftovers(tmp_path) == []


def test_cli_refuses_a_socket_and_a_fifo_without_reader_before_or_at_writing(tmp_path: Path) -> None:
    import socket

    sock_path = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        refused = runner.invoke(app, _demo("-o", tmp_path / "r.csv", "--json", sock_path))
    assert refused.exit_code == 2, refused.output
    assert "a socket" in refused.stderr and not (tmp_path / "r.csv").exists()
    assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)
    fifo = tmp_path / "p.json"
    os.mkfifo(fifo)
    nobody = runner.invoke(app, _demo("-o", tmp_path / "r.csv", "--json", fifo))
    assert nobody.exit_code == 2, nobody.output
    assert "no reader" in nobody.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_staged_result_never_replaces_a_link_or_fifo(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("mine")
    out = tmp_path / "out"
    out.mkdir()
    (out / "a_summary.txt").symlink_to(elsewhere)
    with ResultStage(out) as stage:
        stage.write_bytes("a_summary.txt", b"new")
        with pytest.raises(OutputError, match="symbolic link"):
            stage.commit(lambda name: False)
    assert (out / "a_summary.txt").is_symlink() and elsewhere.read_text() == "mine"
    (out / "a_summary.txt").unlink()
    os.mkfifo(out / "a_summary.txt")
    with ResultStage(out) as stage:
        stage.write_bytes("a_summary.txt", b"new")
        with pytest.raises(OutputError, match="FIFO"):
            stage.commit(lambda name: False)
    assert stat.S_ISFIFO(os.lstat(out / "a_summary.txt").st_mode)
    assert sorted(p.name for p in out.iterdir()) == ["a_summary.txt"]


def test_json_to_dev_stdout_redirected_to_a_file(tmp_path: Path) -> None:
    """``vcompare --json /dev/stdout > out.txt`` (a subprocess: its /dev/stdout is out.txt): the
    JSON goes through descriptor 1, before the lines printed after it; /dev/stdout stays a link
    and no temporary file is left in /dev."""
    out = tmp_path / "out.txt"
    before = sorted(os.listdir("/dev"))
    with open(out, "wb") as handle:
        proc = subprocess.run([sys.executable, "-m", "compare.cli", *_demo("-o", tmp_path / "r.csv", "--json",
                                                                           "/dev/stdout")],
                              stdout=handle, stderr=subprocess.PIPE, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr.decode()
    text = out.read_text()
    document, end = json.JSONDecoder().raw_decode(text)
    assert document["schema"] == "vcompare-result"
    assert text[end:].split() == ["result:", str(tmp_path / "r.csv"), "json:", "/dev/stdout"]
    assert os.path.islink("/dev/stdout") and sorted(os.listdir("/dev")) == before


def test_table_to_dev_stdout_redirected_to_a_file(tmp_path: Path) -> None:
    """``vcompare -o /dev/stdout > out.txt``: the CSV table, then the printed lines; not a folder."""
    out = tmp_path / "out.txt"
    with open(out, "wb") as handle:
        proc = subprocess.run([sys.executable, "-m", "compare.cli", *_demo("-o", "/dev/stdout")],
                              stdout=handle, stderr=subprocess.PIPE, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr.decode()
    lines = out.read_text().splitlines()
    assert lines[0].startswith("Index,") and lines[-1] == "result: /dev/stdout"
    assert os.path.islink("/dev/stdout")


def test_stream_without_suffix_is_a_file_for_every_table(tmp_path: Path) -> None:
    """``-o`` onto a device or FIFO without a suffix is that file for the statistics and mapping
    tables too -- never a folder of that name, never ``<device>_stats.csv`` beside it."""
    from compare.reports.mapping_table import mapping_path
    from compare.reports.network import TableFormat, resolve_output
    from compare.reports.stats import stats_output_path

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert resolve_output(fifo) == (fifo, TableFormat.CSV)
    assert stats_output_path(fifo) == fifo
    assert mapping_path(fifo) == fifo
    assert stats_output_path(tmp_path / "plain").parent == tmp_path / "plain"  # a new suffix-less path: a folder
