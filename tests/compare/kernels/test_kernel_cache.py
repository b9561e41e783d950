"""The compiled-kernel cache: trusted, intact, serialised, and never a crash (issue 14).

Most tests use a *fake build* that copies the real objects of this machine (already loaded by
conftest) into the folder the loader chose, with a fresh index: fast, and the loader cannot tell
the difference. The checks under test all happen before anything is linked; ``_address`` (the
linker) is watched to prove that refused bytes never reach it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from compare.kernels import compare_arrays, native
from conftest import ROOT

IS_ROOT = hasattr(os, "getuid") and os.getuid() == 0


_REAL: list[tuple[Path, str]] = []


def _real_folder() -> tuple[Path, str]:
    """A folder holding this machine's real objects for the current key, and the key (found
    once: later calls happen inside kernels(), whose lock is not re-entrant)."""
    import llvmlite.binding as llvm

    if _REAL:
        return _REAL[0]
    if native.kernels() is None:
        pytest.skip(f"native kernels not available here: {native.status}")
    key = native._key(llvm, native._wide(llvm))
    for folder in (native._AOT, native._cache_dir(), native._cache_dir() / native._private_name()):
        if (folder / native._index_name(key)).is_file():
            _REAL.append((folder, key))
            return folder, key
    pytest.skip("the real objects are not in a known folder")


def _copy_objects(target: Path, key: str) -> None:
    """Write a valid cache for ``key`` into ``target`` (the real objects, a fresh index)."""
    source, real_key = _real_folder()
    index = json.loads((source / native._index_name(real_key)).read_text())
    target.mkdir(parents=True, exist_ok=True)
    objects = {}
    for part in ("side", "pair"):
        entry = index["objects"][part]
        data = (source / entry["file"]).read_bytes()
        name = f"vcompare-kernels-{key}.{part}.o"
        (target / name).write_bytes(data)
        os.chmod(target / name, 0o644)
        objects[part] = {"file": name, "symbol": entry["symbol"], "size": len(data),
                         "sha256": hashlib.sha256(data).hexdigest()}
    (target / native._index_name(key)).write_text(json.dumps({"version": 2, "key": key, "objects": objects}))


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Forget the loaded objects (restored afterwards), an empty cache in tmp_path/cache, no
    packaged objects, a fake build that records its calls, and a watched linker."""
    folder, key = _real_folder()
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    state = {"builds": [], "linked": [], "key": key}

    def fake_build(index: Path, llvm: object, wide: bool) -> None:
        state["builds"].append(index)
        _copy_objects(index.parent, key)

    real_address = native._address

    def watched(llvm: object, obj: bytes, symbol: str, label: str) -> int:
        state["linked"].append(hashlib.sha256(obj).hexdigest())
        return real_address(llvm, obj, symbol, label)

    monkeypatch.setattr(native, "_tried", False)
    monkeypatch.setattr(native, "_loaded", None)
    monkeypatch.setattr(native, "status", "not loaded yet")
    monkeypatch.setattr(native, "notes", [])
    monkeypatch.setattr(native, "_cache_dir", lambda: cache)
    monkeypatch.setattr(native, "_packaged_dir", lambda: tmp_path / "no-packaged")
    monkeypatch.setattr(native, "build", fake_build)
    monkeypatch.setattr(native, "_address", watched)
    monkeypatch.delenv("VCOMPARE_NATIVE", raising=False)
    monkeypatch.delenv("NUMBA_DISABLE_JIT", raising=False)
    state["cache"] = cache
    return state


def _index_of(folder: Path, key: str) -> dict:
    return json.loads((folder / native._index_name(key)).read_text())


def _works(k: native.Kernels | None) -> None:
    assert k is not None, native.status
    x = np.linspace(-1, 1, 1000)
    r = compare_arrays(x, x + 1e-3)
    assert r.values["MaxAbsoluteError"] == pytest.approx(1e-3)


# --------------------------------------------------------------------------- the happy paths


def test_key_hashes_files_that_exist() -> None:
    """Every kernel source the cache key hashes exists: a renamed file would make the key fail,
    turn the native kernels off (numba's are used, with a note) and these tests into skips."""
    missing = [name for name in native._SOURCES if not (native._KERNELS / name).is_file()]
    assert not missing, missing
    assert {"fused.py", "_abi.py", "native/__init__.py", "native/entry_points.py", "native/jit.py"} <= set(native._SOURCES)


def test_empty_cache_is_built_once_then_loaded(fresh) -> None:
    _works(native.kernels())
    assert len(fresh["builds"]) == 1 and fresh["builds"][0].parent == fresh["cache"]
    index = _index_of(fresh["cache"], fresh["key"])
    assert index["version"] == 2 and set(index["objects"]) == {"side", "pair"}
    for entry in index["objects"].values():
        data = (fresh["cache"] / entry["file"]).read_bytes()
        assert len(data) == entry["size"] and hashlib.sha256(data).hexdigest() == entry["sha256"]
    native._tried = False
    _works(native.kernels())
    assert len(fresh["builds"]) == 1  # the second process-equivalent loads, does not build


def test_packaged_objects_are_used_first(fresh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packaged = tmp_path / "aot"
    _copy_objects(packaged, fresh["key"])
    monkeypatch.setattr(native, "_packaged_dir", lambda: packaged)
    _works(native.kernels())
    assert fresh["builds"] == [] and native.status == "loaded (built at install time)"
    assert not any(fresh["cache"].iterdir())  # no user cache needed at all


# --------------------------------------------------------------------------- trust


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777])
def test_cache_writable_by_others_is_not_trusted(fresh, mode: int) -> None:
    """A group/world-writable cache folder (with objects planted in it) is not loaded from: a
    private folder inside it is used instead, and one note says so."""
    cache = fresh["cache"]
    _copy_objects(cache, fresh["key"])  # "planted" objects in the shared folder
    planted = (cache / native._index_name(fresh["key"])).read_bytes()
    os.chmod(cache, mode)
    _works(native.kernels())
    private = cache / native._private_name()
    assert fresh["builds"] and all(b.parent == private for b in fresh["builds"])
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert any("writable" in n and "private folder" in n for n in native.notes), native.notes
    assert (cache / native._index_name(fresh["key"])).read_bytes() == planted  # untouched, unused


@pytest.mark.skipif(not IS_ROOT, reason="needs root to give a folder to another user")
def test_cache_owned_by_another_user_is_not_trusted(fresh) -> None:
    cache = fresh["cache"]
    _copy_objects(cache, fresh["key"])
    os.chown(cache, 12345, 12345)
    _works(native.kernels())
    assert all(b.parent == cache / native._private_name() for b in fresh["builds"]) and fresh["builds"]
    assert any("owned by uid 12345" in n for n in native.notes), native.notes


@pytest.mark.skipif(not IS_ROOT, reason="needs root to give a file to another user")
def test_object_owned_by_another_user_is_refused_before_linking(fresh) -> None:
    import llvmlite.binding as llvm

    _copy_objects(fresh["cache"], fresh["key"])
    entry = _index_of(fresh["cache"], fresh["key"])["objects"]["pair"]
    os.chown(fresh["cache"] / entry["file"], 12345, 12345)
    with pytest.raises(native.CacheRefused, match="owned by uid 12345"):
        native._load_folder(fresh["cache"], fresh["key"], llvm)
    assert entry["sha256"] not in fresh["linked"]


@pytest.mark.parametrize("name", ["/etc/passwd", "../escape.o", "sub/x.o", "..", ""])
def test_index_naming_a_file_outside_the_folder_is_refused(fresh, name: str) -> None:
    import llvmlite.binding as llvm

    _copy_objects(fresh["cache"], fresh["key"])
    path = fresh["cache"] / native._index_name(fresh["key"])
    index = json.loads(path.read_text())
    index["objects"]["side"]["file"] = name
    path.write_text(json.dumps(index))
    with pytest.raises(native.CacheRefused):
        native._load_folder(fresh["cache"], fresh["key"], llvm)
    assert fresh["linked"] == []
    _works(native.kernels())  # the run goes on: rebuilt and loaded
    assert len(fresh["builds"]) == 1 and any("refused" in n for n in native.notes)


def test_symbolic_link_object_is_refused(fresh, tmp_path: Path) -> None:
    import llvmlite.binding as llvm

    _copy_objects(fresh["cache"], fresh["key"])
    entry = _index_of(fresh["cache"], fresh["key"])["objects"]["side"]
    target = tmp_path / "elsewhere.o"
    shutil.move(fresh["cache"] / entry["file"], target)
    os.symlink(target, fresh["cache"] / entry["file"])
    with pytest.raises(native.CacheRefused):
        native._load_folder(fresh["cache"], fresh["key"], llvm)
    assert fresh["linked"] == []


# --------------------------------------------------------------------------- integrity


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "empty":
        data = bytearray()
    elif how == "truncated":
        data = data[: len(data) // 2]
    elif how == "bitflip":
        data[len(data) // 3] ^= 0x10
    elif how == "random":
        data = bytearray(np.random.default_rng(0).integers(0, 256, len(data), dtype=np.uint8).tobytes())
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["empty", "truncated", "bitflip", "random"])
def test_damaged_object_is_detected_before_linking(fresh, how: str) -> None:
    import llvmlite.binding as llvm

    _copy_objects(fresh["cache"], fresh["key"])
    entry = _index_of(fresh["cache"], fresh["key"])["objects"]["pair"]
    _damage(fresh["cache"] / entry["file"], how)
    bad = hashlib.sha256((fresh["cache"] / entry["file"]).read_bytes()).hexdigest()
    with pytest.raises(native.CacheRefused, match="damaged"):
        native._load_folder(fresh["cache"], fresh["key"], llvm)
    _works(native.kernels())  # rebuilt once, then loaded
    assert len(fresh["builds"]) == 1 and bad not in fresh["linked"]


def test_swapped_index_entries_are_detected(fresh) -> None:
    _copy_objects(fresh["cache"], fresh["key"])
    path = fresh["cache"] / native._index_name(fresh["key"])
    index = json.loads(path.read_text())
    side, pair = index["objects"]["side"], index["objects"]["pair"]
    side["file"], pair["file"] = pair["file"], side["file"]
    path.write_text(json.dumps(index))
    _works(native.kernels())
    assert len(fresh["builds"]) == 1


@pytest.mark.parametrize("text", ["", "{", "[]", '{"version": 2}', '{"version": 1, "side": ["a.o", "s"]}', "\xff\xfe"])
def test_damaged_index_is_rebuilt(fresh, text: str) -> None:
    (fresh["cache"] / native._index_name(fresh["key"])).write_text(text, errors="surrogateescape")
    _works(native.kernels())
    assert len(fresh["builds"]) == 1


def test_recent_failure_is_not_retried_an_old_one_is(fresh) -> None:
    failed = (fresh["cache"] / native._index_name(fresh["key"])).with_suffix(".failed")
    failed.write_text("RuntimeError: no compiler today")
    assert native.kernels() is None and fresh["builds"] == []
    assert "an earlier build failed" in native.status and "no compiler today" in native.status
    old = time.time() - native.FAILED_RETRY_SECONDS - 5
    os.utime(failed, (old, old))
    native._tried = False
    _works(native.kernels())
    assert len(fresh["builds"]) == 1 and not failed.exists()


# --------------------------------------------------------------------------- processes


def _child_env(cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VCOMPARE_NATIVE", "NUMBA_DISABLE_JIT", "NUMBA_CACHE_DIR")}
    env.update(VCOMPARE_CACHE_DIR=str(cache), VCOMPARE_PACKAGED_KERNELS="0", PYTHONPATH=str(ROOT), **extra)
    return env


def test_two_first_runs_at_once_leave_one_consistent_cache(tmp_path: Path) -> None:
    """Two processes start on an empty cache together: the lock makes one build (here a slow
    fake build, copying the real objects) and the other wait and load it; the cache is consistent."""
    folder, key = _real_folder()
    code = textwrap.dedent(f"""
        import json, shutil, sys, time
        from pathlib import Path
        sys.path[:0] = [{str(Path(__file__).resolve().parent)!r}, {str(ROOT / "tests")!r}]
        from compare.kernels import native
        import test_kernel_cache as t
        calls = []
        def slow_build(index, llvm, wide):
            calls.append(index)
            time.sleep(1.5)  # a wide window for the other process
            t._copy_objects(index.parent, {key!r})
        native.build = slow_build
        t._REAL.append((Path({str(folder)!r}), {key!r}))
        k = native.kernels()
        print(len(calls), k is not None, native.status)
    """)
    cache = tmp_path / "shared-cache"
    env = _child_env(cache)
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    builds = [int(out.split()[0]) for out, _ in outs]
    assert sorted(builds) == [0, 1], outs  # one built, the other waited and loaded
    assert all(out.split()[1] == "True" for out, _ in outs), outs
    index = _index_of(cache, key)
    for entry in index["objects"].values():
        data = (cache / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    assert not list(cache.glob("*.tmp"))


def _can_drop_privileges() -> bool:
    return IS_ROOT and shutil.which("setpriv") is not None


@pytest.mark.skipif(not _can_drop_privileges(), reason="needs root and setpriv to run with an unwritable home")
@pytest.mark.parametrize("native_on", ["1", "0"])
def test_unwritable_home_and_package_still_compare(tmp_path: Path, native_on: str) -> None:
    """Home, cache and package all unwritable (a read-only copy, capabilities dropped so that
    root obeys permissions): the kernels still import and run, exit 0, right numbers. With the
    objects built at install time a whole comparison uses them; with VCOMPARE_NATIVE=0 numba
    compiles in memory -- checked on one small kernel of the fused pass (its side accumulation),
    not the whole pass: compiling that in memory costs ~20 s of CPU a run, and what can fail
    without a writable cache (numba's "no locator available" when a kernel is decorated, see
    compare.kernels.native.jit) happens on import, for every kernel alike."""
    copy = tmp_path / "ro"
    for package in ("compare", "convert"):
        shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    _folder, key = _real_folder()
    _copy_objects(copy / "compare" / "kernels" / "_aot", key)  # as the install step leaves them
    home = tmp_path / "home"
    home.mkdir()
    for path in [copy, *copy.rglob("*"), home]:
        os.chmod(path, (0o555 if path.is_dir() else 0o444))
    if native_on == "1":
        code = ("import numpy as np; from compare.kernels import compare_arrays, native; "
                "r = compare_arrays(np.arange(6.0), np.arange(6.0) + 0.5); "
                "print(r.values['MaxAbsoluteError']); print(native.status); print(native.notes)")
    else:  # the side accumulation of 0.5, 1.5, ..., 5.5: its sum of squares is 71.5 (one kernel, compiled here)
        code = ("import numpy as np; from compare.kernels import fused, native; native.kernels(); "
                "s = fused._acc_side(np.arange(6.0) + 0.5, 6, (0, 0, 0.0, 0.0, 0.0, 0.0, 0)); "
                "print(s[3] - 71.0); print(native.status); print(native.notes)")
    env = {k: v for k, v in os.environ.items()
           if k not in ("VCOMPARE_CACHE_DIR", "NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "NUMBA_DISABLE_JIT")}
    env.update(HOME=str(home), PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1", VCOMPARE_NATIVE=native_on)
    proc = subprocess.run(["setpriv", "--inh-caps=-all", "--bounding-set=-all", sys.executable, "-c", code],
                          env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    value, status, notes = proc.stdout.strip().splitlines()
    assert float(value) == 0.5
    if native_on == "1":
        assert status == "loaded (built at install time)", (status, notes)
    else:
        assert status.startswith("disabled") and "compiled in memory" in notes, notes


def test_numba_cache_dir_naming_a_file_says_not_a_folder(tmp_path: Path) -> None:
    """``NUMBA_CACHE_DIR`` set to a plain file: the note says it is not a folder (numba compiles
    in memory), not that others could plant code there; the kernel cache says the same."""
    plain = tmp_path / "cache-file"
    plain.write_text("not a folder")
    code = ("import compare.kernels.native as n, compare.kernels.native.jit\n"
            "print(repr(n.notes)); print(repr(n._usable_cache()))")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(plain), "PYTHONPATH": str(ROOT)}
    env.pop("VCOMPARE_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "plant" not in proc.stdout
    assert f"numba's cache {plain}: not a folder" in proc.stdout
    assert f"{plain} is not a folder" in proc.stdout
    assert "File exists" not in proc.stdout
    assert plain.read_text() == "not a folder"
