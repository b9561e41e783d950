"""Dump folders at fsspec URLs (convert.remote): listed, mirrored with their layout into the
cache, fetched again only when missing or cut short; a local path never loads fsspec; without
fsspec a URL says how to install it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from convert.errors import OptionError
from convert.remote import (
    CACHE_ENV,
    INSTALL,
    RemoteFile,
    RemoteRoot,
    cache_base,
    is_url,
    local_path,
    localise,
    materialise,
    open_root,
)

needs_fsspec = pytest.mark.skipif(importlib.util.find_spec("fsspec") is None,
                                  reason=f"fsspec is not installed: {INSTALL}")


def _tree(root: Path) -> dict[str, bytes]:
    files = {"rank_0/Net/0/0/MatMul.op1.output.0.npy": b"\x93NUMPY" + bytes(range(200)),
             "rank_0/Net/0/1/MatMul.op1.output.0.npy": b"other",
             "rank_0/execution_order/ms_global_execution_order_graph_0.csv": b"1\n",
             "empty.txt": b""}
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return files


def _mirrored(local: Path) -> dict[str, bytes]:
    return {p.relative_to(local).as_posix(): p.read_bytes() for p in local.rglob("*") if p.is_file()}


@pytest.mark.parametrize("text, url", [
    ("s3://bucket/run", True), ("file:///tmp/x", True), ("memory://run/left", True), ("simplecache::s3://b/x", True),
    ("gs://b", True), ("/tmp/x", False), ("run/left", False), ("C:/dumps", False), ("a:b", False),
])
def test_is_url(text: str, url: bool) -> None:
    assert is_url(text) is url
    assert not is_url(Path(text))  # a Path is a path, always


def test_cache_base(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "c"))
    assert cache_base() == tmp_path / "c"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_base() == tmp_path / "xdg" / "vcompare" / "remote"


@needs_fsspec
def test_a_file_url_is_mirrored_with_its_layout(tmp_path: Path) -> None:
    files = _tree(tmp_path / "dump")
    os.utime(tmp_path / "dump" / "empty.txt", (1_600_000_000, 1_600_000_000))
    root = localise((tmp_path / "dump").as_uri(), cache=tmp_path / "cache")
    assert root.local.parent == tmp_path / "cache" and len(root.local.name) == 16
    assert _mirrored(root.local) == files
    assert (root.local / "empty.txt").stat().st_mtime == 1_600_000_000  # the listed time, for newest-folder choices
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [root.local.name]  # no staging folder left
    # the same URL: the same folder, nothing fetched again
    again = open_root((tmp_path / "dump").as_uri(), cache=tmp_path / "cache")
    assert again.local == root.local and materialise(again).fetched == 0


@needs_fsspec
def test_a_memory_url_and_a_file_cut_short(tmp_path: Path) -> None:
    import fsspec  # here: only with fsspec installed

    name = f"/vcompare-{uuid.uuid4().hex}"
    memory = fsspec.filesystem("memory")
    memory.pipe(f"{name}/a/x.bin", b"0123456789")
    memory.pipe(f"{name}/b/y.bin", b"abc")
    try:
        root = localise(f"memory://{name}", cache=tmp_path)
        assert _mirrored(root.local) == {"a/x.bin": b"0123456789", "b/y.bin": b"abc"}
        (root.local / "a" / "x.bin").write_bytes(b"01234")  # a copy cut short by a killed run
        done = materialise(root, lambda relative: relative.startswith("a/"))
        assert (done.fetched, done.present) == (1, 0) and (root.local / "a" / "x.bin").read_bytes() == b"0123456789"
    finally:
        memory.rm(name, recursive=True)


@needs_fsspec
def test_what_cannot_be_listed_or_escapes_the_mirror(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="no file below this URL"):
        open_root((tmp_path / "nothing").as_uri(), cache=tmp_path)
    with pytest.raises(OptionError, match="fsspec cannot open this URL"):
        open_root("nosuchprotocol-xyz://bucket/run", cache=tmp_path)
    hostile = RemoteRoot((tmp_path / "src").as_uri(), tmp_path / "mirror",
                         (RemoteFile("../escape.bin", 3), RemoteFile("/abs.bin", 3)))
    done = materialise(hostile)
    assert done.refused == ("../escape.bin", "/abs.bin") and done.fetched == 0
    assert not (tmp_path / "escape.bin").exists()


def test_a_path_never_imports_fsspec(tmp_path: Path) -> None:
    code = ("import sys; from convert.remote import local_path; p = local_path(sys.argv[1]); "
            "assert 'fsspec' not in sys.modules, 'fsspec imported'; print(p)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env,
                          check=False)
    assert done.returncode == 0 and done.stdout.strip() == str(tmp_path), done.stderr
    assert local_path(tmp_path) == tmp_path


def test_without_fsspec_a_url_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)
    with pytest.raises(OptionError, match=r"needs fsspec.*pip install 'vcompare\[remote\]'"):
        localise("s3://bucket/run")


@needs_fsspec
def test_a_url_naming_one_file(tmp_path: Path) -> None:
    (tmp_path / "x.npy").write_bytes(b"data")
    root = localise((tmp_path / "x.npy").as_uri(), cache=tmp_path / "cache")
    assert root.entry == "x.npy" and root.path == root.local / "x.npy" and root.path.read_bytes() == b"data"
    assert local_path((tmp_path / "x.npy").as_uri()) != tmp_path / "x.npy"  # the copy, not the original
