"""Kernel objects built on another machine (a wheel built on x86-64 installed on an aarch64 Ascend
host, or the reverse) are never linked: they are keyed to the machine that built them, so the
loader does not find them under this machine's key, says it will compile, and builds this
machine's objects into the user cache (issue 30, "honest wheel tags"; docs/install.md).

The "foreign" objects here are ELF headers of an aarch64 object (``e_machine`` 183) and the index
is named after a key of other CPU settings: exactly what an aarch64 wheel would carry. The build
is a fake that copies this machine's real objects (as in test_kernel_cache.py), and the linker is
watched, so the test proves which bytes reach it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from compare.kernels import compare_arrays, native

#: The first bytes of a 64-bit little-endian ELF relocatable object for aarch64 (EM_AARCH64 = 183).
AARCH64_OBJECT = (b"\x7fELF\x02\x01\x01" + bytes(9) + (1).to_bytes(2, "little") + (183).to_bytes(2, "little")
                  + bytes(44))


def _this_machine() -> tuple[Path, str]:
    """The folder holding this machine's real objects and their key (loaded by conftest)."""
    import llvmlite.binding as llvm

    if native.kernels() is None:
        pytest.skip(f"native kernels not available here: {native.status}")
    key = native._key(llvm, native._wide(llvm))
    for folder in (native._AOT, native._cache_dir(), native._cache_dir() / native._private_name()):
        if (folder / native._index_name(key)).is_file():
            return folder, key
    pytest.skip("the real objects are not in a known folder")


class Obj(NamedTuple):
    """One object to write: its bytes and the symbol its index names."""

    data: bytes
    symbol: str


FOREIGN = {"side": Obj(AARCH64_OBJECT, "cfunc_side"), "pair": Obj(AARCH64_OBJECT + b"pair", "cfunc_pair")}


def _write_index(folder: Path, file_key: str, recorded_key: str, objects: dict[str, Obj]) -> None:
    """An index named for ``file_key`` that records ``recorded_key``, with its objects."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = {}
    for part, obj in objects.items():
        name = f"vcompare-kernels-{file_key}.{part}.o"
        (folder / name).write_bytes(obj.data)
        entries[part] = {"file": name, "symbol": obj.symbol, "size": len(obj.data),
                         "sha256": hashlib.sha256(obj.data).hexdigest()}
    (folder / native._index_name(file_key)).write_text(
        json.dumps({"version": native.INDEX_VERSION, "key": recorded_key, "objects": entries}))


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict:
    """Forget the loaded kernels (restored afterwards); packaged objects in tmp_path/aot (empty),
    an empty user cache in tmp_path/cache, a fake build and a watched linker."""
    real, key = _this_machine()
    real_index = json.loads((real / native._index_name(key)).read_text())
    state: dict = {"key": key, "builds": [], "linked": [], "aot": tmp_path / "aot", "cache": tmp_path / "cache"}
    state["aot"].mkdir(mode=0o755)
    state["cache"].mkdir(mode=0o700)

    mine = {part: Obj((real / entry["file"]).read_bytes(), entry["symbol"])
            for part, entry in real_index["objects"].items()}

    def fake_build(index: Path, llvm: object, wide: bool) -> None:
        state["builds"].append(index)
        _write_index(index.parent, key, key, mine)

    real_address = native._address

    def watched(llvm: object, obj: bytes, symbol: str, label: str) -> int:
        state["linked"].append(obj)
        return real_address(llvm, obj, symbol, label)

    monkeypatch.setattr(native, "_tried", False)
    monkeypatch.setattr(native, "_loaded", None)
    monkeypatch.setattr(native, "status", "not loaded yet")
    monkeypatch.setattr(native, "notes", [])
    monkeypatch.setattr(native, "_packaged_dir", lambda: state["aot"])
    monkeypatch.setattr(native, "_cache_dir", lambda: state["cache"])
    monkeypatch.setattr(native, "build", fake_build)
    monkeypatch.setattr(native, "_address", watched)
    monkeypatch.delenv("VCOMPARE_NATIVE", raising=False)
    monkeypatch.delenv("NUMBA_DISABLE_JIT", raising=False)
    return state


def _compares(k: native.Kernels | None) -> None:
    assert k is not None, native.status
    x = np.linspace(-1, 1, 1000)
    assert compare_arrays(x, x + 1e-3).values["MaxAbsoluteError"] == pytest.approx(1e-3)


def _foreign_key(key: str) -> str:
    """The key of the same kernel sources built with other settings (another CPU)."""
    sources, settings = key.split("-")
    return f"{sources}-{hashlib.sha256(b'aarch64 neoverse-n1 ' + settings.encode()).hexdigest()[:12]}"


def test_objects_of_another_machine_are_not_found_and_this_machine_builds(machine: dict) -> None:
    """A wheel built elsewhere: its index is named after the other machine's key, so it is not
    this machine's; the command line is told to announce the compile (needs_build), the objects
    are built into the user cache, and the foreign bytes never reach the linker."""
    _write_index(machine["aot"], _foreign_key(machine["key"]), _foreign_key(machine["key"]), FOREIGN)
    assert native.needs_build()  # -> "compiling the comparison kernels for this machine (once; about 20 s)"
    _compares(native.kernels())
    assert [index.parent for index in machine["builds"]] == [machine["cache"]]
    assert native.status == "loaded" and native.notes == []
    assert not any(obj.startswith(AARCH64_OBJECT) for obj in machine["linked"])
    assert len(machine["linked"]) == 2  # this machine's side and pair objects


def test_foreign_index_under_this_machines_name_is_refused_with_a_note(machine: dict) -> None:
    """Objects of another machine renamed to this machine's key (a copied folder, a hand-made
    wheel): the index records the key it was built for, so it is refused before anything is
    linked, with one note, and this machine's objects are built into the user cache."""
    _write_index(machine["aot"], machine["key"], _foreign_key(machine["key"]), FOREIGN)
    _compares(native.kernels())
    assert [index.parent for index in machine["builds"]] == [machine["cache"]]
    assert native.notes == [f"kernel objects built at install time refused ({machine['aot'] / native._index_name(machine['key'])}: "
                            "an index of another version or build); using the user cache"]
    assert not any(obj.startswith(AARCH64_OBJECT) for obj in machine["linked"])


def test_objects_of_this_machine_in_the_package_are_used(machine: dict) -> None:
    """The control: this machine's objects where the install step puts them are linked as they
    are, nothing is built."""
    native.build(machine["aot"] / native._index_name(machine["key"]), None, False)  # the fake: this machine's objects
    machine["builds"].clear()
    assert not native.needs_build()
    _compares(native.kernels())
    assert machine["builds"] == [] and native.status == "loaded (built at install time)"
    assert len(machine["linked"]) == 2
