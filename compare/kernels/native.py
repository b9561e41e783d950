"""The kernels' machine code, compiled once and loaded without numba.

Importing numba and initialising its CPU target costs about 0.35 s of every command-line run
(more than comparing a few hundred MB). So numba compiles the two kernel passes once per machine
as C-callable entry points (:mod:`compare.kernels._native_build`, in a child process); their
ELF objects are cached, and each run loads them with llvmlite's in-process linker (~20 ms) and
calls them through ctypes, which releases the GIL like numba's ``nogil``. Same source, same
compiler: this is numba's code for :func:`compare.kernels.fused._side_boxes` and
:func:`compare.kernels.fused._pair_boxes`, not a second implementation. The numbers equal the
numba path's up to summation order (~1e-13 relative) when the vector widths differ (below).

:func:`kernels` returns the pair of callables with the numba walkers' signatures, or None --
then :mod:`compare.kernels` calls the numba functions as before. None when:

- ``VCOMPARE_NATIVE=0`` (or ``NUMBA_DISABLE_JIT=1``, which asks for Python kernels);
- llvmlite cannot load the objects, or the build fails (the reason is kept in
  :data:`status` for ``scripts/bench.py`` and debugging; a run never fails because of it). A
  failed build leaves a ``.failed`` note next to where its objects would be, so later runs do not
  try it again (delete the note to retry; new kernel sources try again by themselves).

Cache: ``VCOMPARE_CACHE_DIR``, else ``NUMBA_CACHE_DIR``, else this package's ``__pycache__``
when writable, else ``~/.cache/vcompare``. The file names carry a hash of the kernel sources and
one of the numba and llvmlite versions, the Python version and the CPU (name and features), so a
change of any of them builds again; a build removes the files of older kernel sources.

On a CPU with AVX-512 the build asks LLVM for 512-bit vectors (numba's default prefers 256-bit
ones): on the machine of docs/performance.md the 1.8 GB benchmark took 2.07 s instead of 2.21 s.
``VCOMPARE_NATIVE_WIDE=0`` keeps numba's default.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from ._abi import PAIR_OUT, SIDE_OUT

_HERE = Path(__file__).resolve().parent
#: Files whose content defines the machine code.
_SOURCES = ("fused.py", "_jit.py", "_abi.py", "_native_build.py", "native.py", "__init__.py")
#: Seconds a build may take before it is abandoned (then the numba path is used).
BUILD_TIMEOUT = 900

_P = ctypes.c_void_p
_I = ctypes.c_int64
_SIDE_T = ctypes.CFUNCTYPE(None, _P, _I, _I, _P, _P, _P, _I, _P, _P)
_PAIR_T = ctypes.CFUNCTYPE(None, _P, _I, _I, _P, _I, _I, _P, _P, _P, _P, _P, _I, _P, _I, _P, _P, _P)


class Kernels(NamedTuple):
    """The two passes, called like :func:`fused._side_boxes` / :func:`fused._pair_boxes`."""

    side: Callable[..., tuple]
    pair: Callable[..., tuple]
    #: The raw C entry points (ctypes functions taking addresses, see ``_native_build.SIDE_ARGS`` /
    #: ``PAIR_ARGS``), for callers that resolve their arrays' addresses once (None on numba).
    side_c: Callable[..., None] | None = None
    pair_c: Callable[..., None] | None = None


#: Why the native kernels are or are not in use (set by :func:`kernels`).
status: str = "not loaded yet"

_lock = threading.Lock()
_loaded: Kernels | None = None
_tried = False
_keep: list = []  # ctypes callbacks and execution engines that must outlive every call


def enabled() -> bool:
    """False when the environment asks for the numba (or the pure Python) kernels."""
    if os.environ.get("VCOMPARE_NATIVE", "1").strip().lower() in ("0", "no", "false", "off"):
        return False
    return os.environ.get("NUMBA_DISABLE_JIT", "0").strip() in ("", "0")


def kernels(build: bool = True) -> Kernels | None:
    """The native kernels, loaded once per process (building them first if ``build`` and they
    are not cached); None when they cannot be used (see the module docstring)."""
    global _loaded, _tried, status
    if _tried:
        return _loaded
    with _lock:
        if _tried:
            return _loaded
        if not enabled():
            status = "disabled by VCOMPARE_NATIVE=0 or NUMBA_DISABLE_JIT=1"
        else:
            try:
                _loaded = _load(build)
                status = "loaded" if _loaded is not None else "not built"
            except Exception as exc:  # noqa: BLE001 - any failure means: use numba instead
                _loaded = None
                status = f"unavailable ({type(exc).__name__}: {exc})"
        _tried = build or _loaded is not None
        return _loaded


def needs_build() -> bool:
    """True when the native kernels are enabled, not loaded yet and not cached for this machine
    (the next comparison builds them: a command line says so before it waits)."""
    if _tried or not enabled():
        return False
    try:
        import llvmlite.binding as llvm

        index = _index(llvm)
        return not index.is_file() and not index.with_suffix(".failed").is_file()
    except Exception:  # noqa: BLE001 - then kernels() reports the problem and numba is used
        return False


def _cache_dir() -> Path:
    for var in ("VCOMPARE_CACHE_DIR", "NUMBA_CACHE_DIR"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    here = _HERE / "__pycache__"
    try:
        here.mkdir(exist_ok=True)
        if os.access(here, os.W_OK):
            return here
    except OSError:
        pass
    return Path("~/.cache/vcompare").expanduser()


def _wide(llvm) -> bool:
    """512-bit vectors: the CPU has AVX-512 and VCOMPARE_NATIVE_WIDE is not 0."""
    if os.environ.get("VCOMPARE_NATIVE_WIDE", "1").strip().lower() in ("0", "no", "false", "off"):
        return False
    return "+avx512f" in llvm.get_host_cpu_features().flatten().split(",")


def _key(llvm, wide: bool) -> str:
    """``SOURCES-SETTINGS``: a digest of the kernel sources, then one of everything else the
    machine code depends on (numba and llvmlite versions, Python, CPU, vector width)."""
    sources = hashlib.sha256()
    for name in _SOURCES:
        sources.update((_HERE / name).read_bytes())
    settings = hashlib.sha256()
    for package in ("numba", "llvmlite"):  # their versions, without importing numba
        spec = importlib.util.find_spec(package)
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        version = origin.with_name("_version.py") if origin is not None else None
        settings.update(version.read_bytes() if version is not None and version.is_file() else package.encode())
    settings.update(sys.version.encode())
    settings.update(llvm.get_host_cpu_name().encode())
    settings.update(llvm.get_host_cpu_features().flatten().encode())
    settings.update(b"wide" if wide else b"default")
    return f"{sources.hexdigest()[:12]}-{settings.hexdigest()[:12]}"


_index_cache: dict = {}


def _index(llvm) -> Path:
    """The index file of this machine's objects (the key hashes the kernel sources: computed once
    per process and settings, though the command line asks before loading)."""
    place = (str(_cache_dir()), _wide(llvm))
    if place not in _index_cache:
        _index_cache[place] = _cache_dir() / f"vcompare-kernels-{_key(llvm, place[1])}.json"
    return _index_cache[place]


def _prune(folder: Path, key: str) -> None:
    """Remove the objects built from other versions of the kernel sources (never used again);
    builds of these sources for other machines or settings stay."""
    current = key.split("-")[0]
    for path in folder.glob("vcompare-kernels-*"):
        stem_key = path.name[len("vcompare-kernels-"):].split(".")[0]
        if stem_key.split("-")[0] != current:
            try:
                path.unlink()
            except OSError:
                pass


def build(index: Path, llvm, wide: bool) -> None:
    """Compile the entry points in a child process (its numba settings stay out of this one)."""
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    if wide:
        env["NUMBA_CPU_NAME"] = llvm.get_host_cpu_name()
        env["NUMBA_CPU_FEATURES"] = llvm.get_host_cpu_features().flatten() + ",-prefer-256-bit"
    with tempfile.TemporaryDirectory(prefix="vcompare-build-") as scratch:
        env["NUMBA_CACHE_DIR"] = scratch  # a fresh compile, not another process's cache
        root = str(_HERE.parent.parent)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        done = subprocess.run(
            [sys.executable, "-m", "compare.kernels._native_build", str(index)],
            env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False,
        )
    if done.returncode != 0 or not index.is_file():
        tail = (done.stderr or done.stdout or "").strip().splitlines()[-3:]
        raise RuntimeError(f"kernel build failed (exit {done.returncode}): {' | '.join(tail)}")


def _load(build_missing: bool) -> Kernels | None:
    import llvmlite.binding as llvm

    index = _index(llvm)
    folder, key = index.parent, index.name[len("vcompare-kernels-"):-len(".json")]
    failed = index.with_suffix(".failed")
    if not index.is_file():
        if failed.is_file():  # a build of these sources already failed here: do not pay it again
            raise RuntimeError(f"an earlier build failed ({failed}): {failed.read_text()[:300]}")
        if not build_missing:
            return None
        folder.mkdir(parents=True, exist_ok=True)
        try:
            build(index, llvm, _wide(llvm))
        except Exception as exc:
            try:
                failed.write_text(f"{type(exc).__name__}: {exc}")
            except OSError:
                pass
            raise
        _prune(folder, key)
    entries = json.loads(index.read_text())
    side = _SIDE_T(_address(llvm, folder / entries["side"][0], entries["side"][1]))
    pair = _PAIR_T(_address(llvm, folder / entries["pair"][0], entries["pair"][1]))
    return Kernels(side=_side_caller(side), pair=_pair_caller(pair), side_c=side, pair_c=pair)


def _address(llvm, obj: Path, symbol: str) -> int:
    """Link one object into its own in-process engine and return ``symbol``'s address."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    _provide_runtime_symbols(llvm)
    machine = llvm.Target.from_default_triple().create_target_machine(codemodel="jitdefault")
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj.read_bytes()))
    engine.finalize_object()
    address = engine.get_function_address(symbol)
    if not address:
        raise RuntimeError(f"{obj.name}: symbol {symbol} not found")
    _keep.append(engine)
    return address


# The objects reference three numba runtime helpers. Their code paths never run here (the
# kernels allocate nothing, and raise nothing with error_model="numpy"), but the linker needs
# an address for each; when numba is loaded in this process its own helpers are used instead.


def _noop(_ptr: int) -> None:  # pragma: no cover - unreachable by construction
    return None


def _gil_ensure(state: int) -> None:  # pragma: no cover - only on a kernel exception
    ctypes.cast(state, ctypes.POINTER(ctypes.c_int)).contents.value = ctypes.pythonapi.PyGILState_Ensure()


def _gil_release(state: int) -> None:  # pragma: no cover - only on a kernel exception
    ctypes.pythonapi.PyGILState_Release(ctypes.cast(state, ctypes.POINTER(ctypes.c_int)).contents.value)


_HELPER_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_HELPERS = {"NRT_MemInfo_call_dtor": _noop, "numba_gil_ensure": _gil_ensure, "numba_gil_release": _gil_release}


def _provide_runtime_symbols(llvm) -> None:
    for name, fn in _HELPERS.items():
        if llvm.address_of_symbol(name):
            continue  # numba (or an earlier load) provides it
        thunk = _HELPER_T(fn)
        _keep.append(thunk)
        llvm.add_symbol(name, ctypes.cast(thunk, ctypes.c_void_p).value)


def _ptr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def _side_caller(fn):
    def side(xb: np.ndarray, code: int, dims: np.ndarray, strides: np.ndarray, offs: np.ndarray,
             tile: np.ndarray) -> tuple:
        dims, strides, offs = _i64(dims), _i64(strides), _i64(offs)
        out = np.empty(SIDE_OUT, dtype=np.float64)
        fn(_ptr(xb), code, xb.shape[0], _ptr(dims), _ptr(strides), _ptr(offs), dims.shape[0], _ptr(tile), _ptr(out))
        return tuple(out.tolist())

    return side


def _pair_caller(fn):
    def pair(xb: np.ndarray, xcode: int, yb: np.ndarray, ycode: int, dims: np.ndarray, sx: np.ndarray,
             sy: np.ndarray, ox: np.ndarray, oy: np.ndarray, prm: tuple, do_rel: bool, do_kl: bool,
             xt: np.ndarray, yt: np.ndarray) -> tuple:
        dims, sx, sy, ox, oy = _i64(dims), _i64(sx), _i64(sy), _i64(ox), _i64(oy)
        p = np.array(prm, dtype=np.float64)
        out = np.empty(PAIR_OUT, dtype=np.float64)
        flags = (1 if do_rel else 0) | (2 if do_kl else 0)
        fn(_ptr(xb), xcode, xb.shape[0], _ptr(yb), ycode, yb.shape[0], _ptr(dims), _ptr(sx), _ptr(sy), _ptr(ox),
           _ptr(oy), dims.shape[0], _ptr(p), flags, _ptr(xt), _ptr(yt), _ptr(out))
        return tuple(out.tolist())

    return pair
