"""Where an output goes (convert.atomic, issue 27): a link is followed and kept, a device or FIFO
is written through, a block device / socket / link loop / FIFO without a reader is refused."""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from convert.atomic import OutputTarget, TargetKind, output_target, write_through
from convert.errors import OutputError
from convert.tool.batch import write_atomically


def _char_device(tmp_path: Path) -> Path:
    """A private copy of /dev/null (char 1,3) in tmp_path: the real one is never touched."""
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError) as exc:
        pytest.skip(f"cannot create a device node here ({exc}): needs root / CAP_MKNOD")
    return node


def test_regular_and_new_files_are_replaced(tmp_path: Path) -> None:
    assert output_target(tmp_path / "new.json") == OutputTarget(tmp_path / "new.json", TargetKind.REPLACE)
    (tmp_path / "old.json").write_text("x")
    assert output_target(tmp_path / "old.json").kind is TargetKind.REPLACE


def test_link_to_a_file_targets_the_file(tmp_path: Path) -> None:
    real = tmp_path / "real" / "r.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert output_target(link) == OutputTarget(real, TargetKind.REPLACE)
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "real" / "later.json")
    assert output_target(dangling) == OutputTarget(tmp_path / "real" / "later.json", TargetKind.REPLACE)


def test_link_loop_block_device_and_socket_are_refused(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(OutputError, match="symbolic link loop"):
        output_target(loop)
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        with pytest.raises(OutputError, match="a socket"):
            output_target(sock_path)
    block = tmp_path / "disk"
    try:
        os.mknod(block, stat.S_IFBLK | 0o600, os.makedev(7, 200))
    except OSError as exc:
        pytest.skip(f"cannot create a device node here ({exc})")
    with pytest.raises(OutputError, match="a block device"):
        output_target(block)


def test_char_device_and_fd_links_are_streams(tmp_path: Path) -> None:
    node = _char_device(tmp_path)
    assert output_target(node) == OutputTarget(node, TargetKind.STREAM)
    link = tmp_path / "to-null"
    link.symlink_to(node)
    assert output_target(link).kind is TargetKind.STREAM
    with open(tmp_path / "out.txt", "w") as handle:
        fd_link = Path(f"/proc/self/fd/{handle.fileno()}")
        if not fd_link.exists():
            pytest.skip("no /proc/self/fd here")
        assert output_target(fd_link) == OutputTarget(fd_link, TargetKind.STREAM, append=True, fd=handle.fileno())
        handle.write("before\n")
        handle.flush()
        write_through(output_target(fd_link), b"through the descriptor\n")
        handle.write("after\n")
    assert (tmp_path / "out.txt").read_text() == "before\nthrough the descriptor\nafter\n"
    assert not (tmp_path / "out.txt").is_symlink()


def test_fifo_without_reader_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    target = output_target(fifo)
    assert target.kind is TargetKind.STREAM
    with pytest.raises(OutputError, match="no reader"):
        write_through(target, b"data")  # opened without waiting: no hang
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_vconvert_writer_follows_links_and_writes_through_devices(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.npy"
    real.write_bytes(b"old")
    link = tmp_path / "out.npy"
    link.symlink_to(real)
    write_atomically(link, lambda path: path.write_bytes(b"new"))
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere.npy", "out.npy"]

    fifo = tmp_path / "pipe.npy"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="no reader"):
        write_atomically(fifo, lambda path: path.write_bytes(b"x"))
    got: list[bytes] = []
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the reader, there first
    try:
        reader = threading.Thread(target=lambda: got.append(_read_all(fd)), daemon=True)
        write_atomically(fifo, lambda path: path.write_bytes(b"through the pipe"))
        reader.start()
        reader.join(10)
    finally:
        os.close(fd)
    assert got == [b"through the pipe"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def _read_all(fd: int) -> bytes:
    os.set_blocking(fd, True)
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_vconvert_inplace_output_through_a_link_is_atomic_and_keeps_the_link(tmp_path: Path) -> None:
    """``vconvert inplace``'s prototxt output: written through the atomic writer (the link
    followed and kept), not opened and truncated in place."""
    from convert.tool.inplace import remove_inplace_file

    source = tmp_path / "net.prototxt"
    source.write_text('name: "n"\nlayer { name: "a" type: "ReLU" bottom: "x" top: "x" }\n')
    real = tmp_path / "store" / "out.prototxt"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "out.prototxt"
    link.symlink_to(real)
    before = real.stat().st_ino
    remove_inplace_file(source, link)
    assert link.is_symlink() and 'name: "a"' in real.read_text()
    assert real.stat().st_ino != before  # a new file renamed over the old one, never half-written in place
