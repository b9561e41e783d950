"""Trust, round three, for dumps at URLs (convert.remote; issue 27): the mirror obeys the kernel
cache's trust rule (its cache folder, the private subfolder, its folders and files), copies keep
at most their source's permissions, a copy is reused only while its source is unchanged (size and
modification time), and every URL that cannot be read -- refused chains and indirect protocols,
closed ports, servers that never answer, stores whose library cannot load -- is one line naming
the URL and the cause, exit 2, never a traceback.

"Another user" is uid 65534 (nobody), given by ``os.chown``: those tests need root. No test needs
the network: closed ports and listening sockets on 127.0.0.1, and TEST-NET-1 (192.0.2.1)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import socket
import stat
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.testing.synthetic_rank_trees import make_rank_trees
from convert import remote
from convert.errors import OptionError
from convert.remote import (
    CACHE_ENV,
    INSTALL,
    RemoteFile,
    RemoteRoot,
    localise,
    materialise,
    open_root,
    outline,
)

needs_fsspec = pytest.mark.skipif(importlib.util.find_spec("fsspec") is None,
                                  reason=f"fsspec is not installed: {INSTALL}")
needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="giving a file to another user (os.chown) needs root")
OTHER = 65534
UID = os.getuid() if hasattr(os, "getuid") else 0
EVERY = ("--rank", "all", "--iteration", "all")


def _source(root: Path) -> dict[str, bytes]:
    files = {"rank_0/Net/0/0/MatMul.op1.output.0.npy": b"\x93NUMPY" + bytes(range(200)),
             "rank_0/Net/0/1/Add.op2.output.0.npy": b"other bytes",
             "mapping.csv": b"a,b\n"}
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return files


def _mirror(url: str, base: Path) -> Path:
    """Where the mirror of ``url`` lands in a trusted cache folder ``base``."""
    return base / hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]


def _plant(folder: Path, files: dict[str, bytes], owner: int | None = OTHER) -> None:
    """Same-size files of other bytes, each with its source's time, owned by ``owner``."""
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes(255 - b for b in data))
        if owner is not None:
            os.chown(path, owner, owner)
    if owner is not None:
        for path in [folder, *folder.rglob("*")]:
            os.chown(path, owner, owner)


def _one_line_exit_2(done, *needles: str) -> None:
    assert done.exit_code == 2, done.output
    assert "Traceback" not in done.output
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert len(lines) == 1, done.output
    for needle in needles:
        assert needle in lines[0], lines[0]


def _run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections (the kernel's backlog) and never says a word."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield s.getsockname()[1]


# --- 1. trust ----------------------------------------------------------------------------------


@needs_fsspec
@needs_root
@pytest.mark.parametrize("how", ["another user's", "world-writable", "group-writable"])
def test_an_untrusted_cache_folder_is_not_used_its_planted_mirror_neither(tmp_path: Path, how: str) -> None:
    """The issue's case: another user planted same-size tensors in the shared cache; the run
    mirrors into a private ``vcompare-uid<N>`` folder and reads the source's bytes."""
    files = _source(tmp_path / "dump")
    url = (tmp_path / "dump").as_uri()
    base = tmp_path / "cache"
    base.mkdir()
    _plant(_mirror(url, base), files, owner=OTHER if how == "another user's" else None)
    if how == "another user's":
        os.chown(base, OTHER, OTHER)
    os.chmod(base, {"another user's": 0o755, "world-writable": 0o1777, "group-writable": 0o775}[how])
    root = localise(url, cache=base)
    assert {p.relative_to(root.local).as_posix(): p.read_bytes() for p in root.local.rglob("*") if p.is_file()} == files
    assert root.local.parent == base / f"vcompare-uid{UID}"
    assert stat.S_IMODE(root.local.parent.stat().st_mode) == 0o700


@needs_fsspec
@needs_root
def test_a_private_folder_planted_by_another_user_stops_the_run(tmp_path: Path) -> None:
    _source(tmp_path / "dump")
    base = tmp_path / "cache"
    base.mkdir(mode=0o777)
    os.chmod(base, 0o1777)
    (base / f"vcompare-uid{UID}").mkdir()
    os.chown(base / f"vcompare-uid{UID}", OTHER, OTHER)
    with pytest.raises(OptionError, match=rf"owned by uid {OTHER}.*set {CACHE_ENV}"):
        open_root((tmp_path / "dump").as_uri(), cache=base)


@needs_fsspec
@needs_root
@pytest.mark.parametrize("how", ["another user's", "world-writable"])
def test_a_planted_file_in_the_mirror_is_fetched_again(tmp_path: Path, how: str) -> None:
    files = _source(tmp_path / "dump")
    root = localise((tmp_path / "dump").as_uri(), cache=tmp_path / "cache")
    name = "rank_0/Net/0/0/MatMul.op1.output.0.npy"
    planted = root.local / name
    listed = os.stat(tmp_path / "dump" / name).st_mtime_ns
    planted.unlink()
    planted.write_bytes(bytes(255 - b for b in files[name]))  # same size, same time: only its owner tells
    os.utime(planted, ns=(listed, listed))
    if how == "another user's":
        os.chown(planted, OTHER, OTHER)
    else:
        os.chmod(planted, 0o666)
    done = materialise(open_root((tmp_path / "dump").as_uri(), cache=tmp_path / "cache"))
    assert (done.fetched, done.present) == (1, 2)
    assert planted.read_bytes() == files[name] and planted.stat().st_uid == UID
    assert stat.S_IMODE(planted.stat().st_mode) == 0o644


@needs_fsspec
@needs_root
def test_an_untrusted_mirror_folder_stops_the_run(tmp_path: Path) -> None:
    _source(tmp_path / "dump")
    url = (tmp_path / "dump").as_uri()
    root = localise(url, cache=tmp_path / "cache")
    os.chown(root.local / "rank_0" / "Net", OTHER, OTHER)
    with pytest.raises(OptionError, match=rf"mirror folder .*rank_0/Net: owned by uid {OTHER}.*remove it"):
        localise(url, cache=tmp_path / "cache")
    os.chown(root.local / "rank_0" / "Net", UID, UID)
    os.chmod(root.local / "rank_0", 0o777)
    with pytest.raises(OptionError, match=r"mirror folder .*rank_0: it is world-writable"):
        localise(url, cache=tmp_path / "cache")


@needs_fsspec
def test_a_link_in_the_mirror_is_not_followed(tmp_path: Path) -> None:
    files = _source(tmp_path / "dump")
    url = (tmp_path / "dump").as_uri()
    root = localise(url, cache=tmp_path / "cache")
    elsewhere = tmp_path / "elsewhere.npy"
    elsewhere.write_bytes(bytes(len(files["mapping.csv"])))
    (root.local / "mapping.csv").unlink()
    (root.local / "mapping.csv").symlink_to(elsewhere)
    assert materialise(open_root(url, cache=tmp_path / "cache")).fetched == 1
    assert not (root.local / "mapping.csv").is_symlink() and (root.local / "mapping.csv").read_bytes() == b"a,b\n"
    os.rename(root.local / "rank_0", tmp_path / "moved")
    (root.local / "rank_0").symlink_to(tmp_path / "moved")
    with pytest.raises(OptionError, match=r"rank_0: is not a folder \(a link or a file\)"):
        localise(url, cache=tmp_path / "cache")


@needs_fsspec
@needs_root
def test_the_cli_reads_the_source_not_a_planted_tensor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: the report of a URL whose shared cache holds another user's same-size tensors
    is the report of the paths."""
    trees = make_rank_trees(tmp_path / "trees", ranks=1, iterations=1)
    base = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(base))
    done = _run("-l", trees["left"], "-r", trees["right"], *EVERY, "-o", tmp_path / "paths.csv")
    assert done.exit_code == 0, done.output
    url = trees["left"].as_uri()
    mirror = _mirror(url, base)
    localise(url)  # a mirror made by ...
    for path in mirror.rglob("*.npy"):  # ... another user, with same-size tensors of other numbers
        data = path.read_bytes()
        path.write_bytes(data[:128] + bytes(len(data) - 128))
    for path in [base, *base.rglob("*")]:
        os.chown(path, OTHER, OTHER)
    os.chmod(base, 0o1777)
    done = _run("-l", url, "-r", trees["right"], *EVERY, "-o", tmp_path / "url.csv")
    assert done.exit_code == 0, done.output
    assert (tmp_path / "url.csv").read_bytes() == (tmp_path / "paths.csv").read_bytes()
    assert f"vcompare-uid{UID}" in done.output


# --- 2. permissions ----------------------------------------------------------------------------


@needs_fsspec
@pytest.mark.parametrize("source, copy", [(0o600, 0o600), (0o640, 0o640), (0o644, 0o644), (0o666, 0o644),
                                          (0o755, 0o644), (0o400, 0o400)])
def test_a_copy_keeps_at_most_its_sources_mode(tmp_path: Path, source: int, copy: int) -> None:
    _source(tmp_path / "dump")
    for path in (tmp_path / "dump").rglob("*"):
        if path.is_file():
            os.chmod(path, source)
    root = localise((tmp_path / "dump").as_uri(), cache=tmp_path / "cache")
    modes = {stat.S_IMODE(p.lstat().st_mode) for p in root.local.rglob("*") if p.is_file()}
    assert modes == {copy}
    folders = {stat.S_IMODE(p.lstat().st_mode) for p in [root.local, *root.local.rglob("*")] if p.is_dir()}
    assert folders == {0o700}


@needs_fsspec
def test_a_store_without_modes_gives_private_copies(tmp_path: Path) -> None:
    import fsspec  # here: only with fsspec installed

    name = f"/vcompare-{uuid.uuid4().hex}"
    memory = fsspec.filesystem("memory")
    memory.pipe(f"{name}/a/x.bin", b"0123456789")
    try:
        root = localise(f"memory://{name}", cache=tmp_path / "cache")
    finally:
        memory.rm(name, recursive=True)
    assert stat.S_IMODE((root.local / "a" / "x.bin").stat().st_mode) == 0o600
    assert stat.S_IMODE((root.local / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE(root.local.stat().st_mode) == 0o700


@needs_fsspec
def test_a_wider_copy_of_an_older_mirror_is_narrowed(tmp_path: Path) -> None:
    _source(tmp_path / "dump")
    os.chmod(tmp_path / "dump" / "mapping.csv", 0o600)
    root = localise((tmp_path / "dump").as_uri(), cache=tmp_path / "cache")
    os.chmod(root.local / "mapping.csv", 0o644)  # as an older vcompare left it
    assert materialise(root).fetched == 0
    assert stat.S_IMODE((root.local / "mapping.csv").stat().st_mode) == 0o600


# --- 3. freshness ------------------------------------------------------------------------------


@needs_fsspec
def test_a_source_changed_at_the_same_size_is_fetched_again(tmp_path: Path) -> None:
    _source(tmp_path / "dump")
    url = (tmp_path / "dump").as_uri()
    name = tmp_path / "dump" / "rank_0" / "Net" / "0" / "1" / "Add.op2.output.0.npy"
    root = localise(url, cache=tmp_path / "cache")
    name.write_bytes(b"OTHER BYTES")  # the same size
    os.utime(name, (1_700_000_000, 1_700_000_000))
    again = open_root(url, cache=tmp_path / "cache")
    assert materialise(again).fetched == 1
    copy = root.local / "rank_0" / "Net" / "0" / "1" / "Add.op2.output.0.npy"
    assert copy.read_bytes() == b"OTHER BYTES" and copy.stat().st_mtime == 1_700_000_000
    assert materialise(open_root(url, cache=tmp_path / "cache")).fetched == 0  # and then it is current


@needs_fsspec
def test_a_memory_source_rewritten_at_the_same_size_is_fetched_again(tmp_path: Path) -> None:
    import fsspec  # here: only with fsspec installed

    name = f"/vcompare-{uuid.uuid4().hex}"
    memory = fsspec.filesystem("memory")
    memory.pipe(f"{name}/x.bin", b"old")
    try:
        root = localise(f"memory://{name}", cache=tmp_path / "cache")
        time.sleep(0.01)
        memory.pipe(f"{name}/x.bin", b"new")
        assert localise(f"memory://{name}", cache=tmp_path / "cache").local == root.local
    finally:
        memory.rm(name, recursive=True)
    assert (root.local / "x.bin").read_bytes() == b"new"


@needs_fsspec
def test_without_a_listed_time_a_copy_is_fetched_each_time(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "x.bin").write_bytes(b"abc")
    root = RemoteRoot((tmp_path / "src").as_uri(), tmp_path / "cache" / "m", (RemoteFile("x.bin", 3),))
    assert materialise(root).fetched == 1
    assert materialise(root).fetched == 1  # freshness cannot be told without a time


@needs_fsspec
def test_an_outline_replaces_a_planted_file_by_a_placeholder(tmp_path: Path) -> None:
    files = _source(tmp_path / "dump")
    root = open_root((tmp_path / "dump").as_uri(), cache=tmp_path / "cache")
    name = "rank_0/Net/0/0/MatMul.op1.output.0.npy"
    planted = root.local / name
    planted.parent.mkdir(mode=0o700, parents=True)
    planted.write_bytes(bytes(len(files[name])))
    os.chmod(planted, 0o666)
    outline(root, lambda relative: relative.endswith(".npy"))
    assert planted.stat().st_size == 0 and stat.S_IMODE(planted.stat().st_mode) == 0o644
    materialise(root)
    assert planted.read_bytes() == files[name]


# --- 4. URLs that cannot be read ---------------------------------------------------------------


@needs_fsspec
@pytest.mark.parametrize("url, needle", [
    ("zip://x::file:///etc/passwd", "chained URLs"),
    ("simplecache::memory://x", "chained URLs"),
    ("zip://x", "the zip:// protocol"),
    ("tar://x", "the tar:// protocol"),
    ("reference://", "the reference:// protocol"),
    ("filecache://x", "the filecache:// protocol"),
    ("dir://x", "the dir:// protocol"),
])
def test_chains_and_indirect_protocols_are_refused(tmp_path: Path, url: str, needle: str) -> None:
    with pytest.raises(OptionError, match=needle):
        remote.check_url(url)
    _one_line_exit_2(_run("-l", url, "-r", tmp_path), url, needle)


@needs_fsspec
def test_a_closed_ftp_port(tmp_path: Path) -> None:
    url = f"ftp://127.0.0.1:{_closed_port()}/x"
    _one_line_exit_2(_run("-l", url, "-r", tmp_path), url, "ConnectionRefusedError")


@needs_fsspec
def test_a_server_that_never_answers_is_given_up_after_the_connect_timeout(
        tmp_path: Path, silent_server: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "CONNECT_TIMEOUT", 0.5)
    url = f"ftp://127.0.0.1:{silent_server}/x"
    start = time.monotonic()
    done = _run("-l", url, "-r", tmp_path)
    assert time.monotonic() - start < 10  # fsspec's own default is 30 s
    _one_line_exit_2(done, url, "timed out")


@needs_fsspec
def test_an_unroutable_ftp_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "CONNECT_TIMEOUT", 0.5)
    url = "ftp://192.0.2.1/x"  # TEST-NET-1: never routed (refused or timed out, by the machine)
    start = time.monotonic()
    done = _run("-l", url, "-r", tmp_path)
    assert time.monotonic() - start < 10
    _one_line_exit_2(done, url, "cannot open it")


@needs_fsspec
@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="pyarrow (fsspec's hdfs://) is not installed")
def test_hdfs_whose_library_cannot_load(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    url = f"hdfs://127.0.0.1:{_closed_port()}/x"
    done = _run("-l", url, "-r", tmp_path)
    _one_line_exit_2(done, url)
    assert "dlopen" not in capfd.readouterr().err  # libhdfs's lines are held back, not printed


# --- 5. a connection failure is named as such --------------------------------------------------


@needs_fsspec
def test_a_connection_failure_is_not_an_empty_folder(tmp_path: Path) -> None:
    """fsspec's walk omits a folder it cannot list (an OSError, as aiohttp's connection errors
    are), and HTTP's ``info`` wraps them in FileNotFoundError: the message names the failure."""
    import fsspec  # here: only with fsspec installed
    from fsspec.registry import _registry

    class Down(fsspec.AbstractFileSystem):
        protocol = "vcompare-down"

        def ls(self, path, detail=True, **kwargs):
            raise ConnectionRefusedError(111, "Connection refused")

        def info(self, path, **kwargs):
            try:
                self.ls(path)
            except OSError as exc:
                raise FileNotFoundError(path) from exc

    fsspec.register_implementation("vcompare-down", Down, clobber=True)
    try:
        with pytest.raises(OptionError, match=r"vcompare-down://host/x: cannot reach it \(ConnectionRefusedError"):
            open_root("vcompare-down://host/x", cache=tmp_path)
        _one_line_exit_2(_run("-l", "vcompare-down://host/x", "-r", tmp_path), "cannot reach it")
    finally:
        _registry.pop("vcompare-down", None)


@needs_fsspec
@pytest.mark.skipif(importlib.util.find_spec("aiohttp") is None, reason="aiohttp (fsspec's http://) is not installed")
def test_an_http_server_that_cannot_be_reached(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/x"
    _one_line_exit_2(_run("-l", url, "-r", tmp_path), url, "cannot reach it", "Cannot connect")
