"""The kernels' machine code, compiled once and loaded without numba.

Importing numba and initialising its CPU target costs about 0.35 s of every command-line run
(more than comparing a few hundred MB). So numba compiles the two kernel passes ahead of time as
C-callable entry points (:mod:`compare.kernels.native.entry_points`, in a child process); each run
links their ELF objects with llvmlite's in-process linker (~20 ms) and calls them through ctypes,
which releases the GIL like numba's ``nogil``. Same source, same compiler: this is numba's code
for :func:`compare.kernels.fused._side_boxes` and :func:`compare.kernels.fused._pair_boxes`, not a
second implementation. The numbers equal the numba path's up to summation order (~1e-13
relative) when the vector widths differ (below).

:func:`kernels` returns the two passes, or None -- then :mod:`compare.kernels` calls the numba
functions (numba's compile policy is :mod:`compare.kernels.native.jit`). None when
``VCOMPARE_NATIVE=0`` (or ``NUMBA_DISABLE_JIT=1``, which asks for Python kernels), or when no
trusted, intact objects can be loaded or built (the reason is in :data:`status` and, for the user,
in :data:`notes`; a run never fails because of it).

**Where the objects come from**, in this order:

1. **Built at install time**, when the install asked for it (``VCOMPARE_BUILD_KERNELS=1``;
   docs/install.md says why it is off by default): inside the package (``compare/kernels/_aot/``,
   written by ``setup.py``'s build step; an editable install writes them into the source tree).
   No user-writable cache is involved, and the first comparison after installing pays nothing
   (``VCOMPARE_PACKAGED_KERNELS=0`` ignores them). Objects built on another machine (a wheel
   built elsewhere) carry that machine's key (below): they are not found under this machine's
   key, or refused when an index records another key, and never linked.
2. **The user's kernel cache**: ``VCOMPARE_CACHE_DIR``, else ``NUMBA_CACHE_DIR``, else
   ``$XDG_CACHE_HOME/vcompare`` (``~/.cache/vcompare``). Missing or damaged objects are built
   there, once, by the first run that needs them.
3. **In memory**: when no cache folder can be trusted and written, the objects are built in a
   private temporary folder, loaded, and the folder deleted (this run only; a note says so).

**Trust** (:mod:`convert.trust`, the rule of ``-custom`` plugins): objects are loaded only from a
folder owned by the current user or root and writable by nobody else, only from files in that
folder (an index naming anything but a bare file name is refused), each opened without following
links and owned and protected the same way. A cache folder that fails the rule (a shared,
world-writable ``/tmp/cache``) is not used: a private ``vcompare-uid<N>`` folder inside it is
(created with mode 0700), or the objects are built in memory; one note says which.

**Integrity**: the index (``vcompare-kernels-<key>.json``, written last by the build) records
each object's size and SHA-256. The loader reads an object's bytes once, checks them, and links
exactly those bytes; an index or object that is damaged (empty, truncated, bit-flipped, from
another build) is never linked: the objects are built again (under the lock), or the numba path
is used. Builds run in a child process, write temporary files and rename them into place, and are
serialised between processes by ``flock`` on ``vcompare-kernels.lock``: a second first run waits
for the first one and uses its objects. A failed build leaves a ``.failed`` note that keeps
later runs from paying the build again for :data:`FAILED_RETRY_SECONDS`, then it is retried; a
killed build leaves nothing that blocks the next run.

The key in the file names hashes the kernel sources, the numba and llvmlite versions, Python, the
CPU (name and features) and the vector width, so any change builds again; a build removes the
files of older kernel sources. On a CPU with AVX-512 the build asks LLVM for 512-bit vectors
(numba's default prefers 256-bit ones: on the machine of docs/performance.md the 1.8 GB benchmark
took 2.07 s instead of 2.21 s); ``VCOMPARE_NATIVE_WIDE=0`` keeps numba's default.

**Environment switches** (every one the kernels, their loader and the install step read; a
switch is off when its value is ``0``, ``no``, ``false`` or ``off``):

- ``VCOMPARE_NATIVE`` (default on): off = numba's kernels, compiled by numba in this process;
- ``NUMBA_DISABLE_JIT=1``: the kernels run as plain Python (slow; debugging, the no-JIT tests),
  which turns the native objects off too (read by numba itself and by :func:`enabled`);
- ``VCOMPARE_NATIVE_WIDE`` (default on): off = numba's 256-bit vectors on an AVX-512 CPU;
- ``VCOMPARE_PACKAGED_KERNELS`` (default on): off = ignore the objects built at install time;
- ``VCOMPARE_CACHE_DIR``, else ``NUMBA_CACHE_DIR``, else ``$XDG_CACHE_HOME/vcompare``
  (``~/.cache/vcompare``): the kernel cache folder (above);
- ``NUMBA_CACHE_DIR`` is also numba's own on-disk cache of the jitted kernels (default: the
  ``__pycache__`` beside :mod:`compare.kernels.fused`), under the same trust rule
  (:mod:`compare.kernels.native.jit`);
- ``VCOMPARE_BUILD_KERNELS`` (default off; read by ``setup.py``): on (``1``) = build the objects
  at install time, into the package.

The build's child process gets its own: ``NUMBA_CACHE_DIR`` (a fresh temporary folder),
``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` (the wide vectors), ``PYTHONPATH`` (this source tree
first) and no ``NUMBA_DISABLE_JIT``.

**Numba versions**: :mod:`compare.kernels.native.entry_points` takes the machine code from numba's
private attributes (a ``cfunc``'s ``_library``, its ``codegen._tm`` and ``_final_module``) and the
objects reference three numba runtime symbols by name (below). Tested with numba 0.68.1 and
llvmlite 0.50.0. With another numba whose internals differ, the build fails and numba's kernels
are used instead (a note says why; same numbers, slower start).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

import numpy as np

from convert.trust import folder_problem, read_trusted

from .._abi import PAIR_OUT, SIDE_OUT, PairPass, SidePass

#: The kernels package (``compare/kernels``).
_KERNELS = Path(__file__).resolve().parent.parent
#: The objects built at install time (``setup.py``), inside the kernels package.
_AOT = _KERNELS / "_aot"
#: Files (in the kernels package) whose content defines the machine code or how it is called: the
#: kernels, their calling convention, the Python side of the calls, numba's compile policy, the
#: entry points and this loader.
_SOURCES = ("fused.py", "_abi.py", "passes.py", "native/jit.py", "native/entry_points.py", "native/__init__.py")
#: Seconds a build may take before it is abandoned (then the numba path is used).
BUILD_TIMEOUT = 900
#: Seconds a failed build keeps later runs from trying again (then it is retried).
FAILED_RETRY_SECONDS = 600
#: Version of the index format (see _Index).
INDEX_VERSION = 2
#: The largest index file read.
MAX_INDEX_BYTES = 1 << 16
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
_SYMBOL = re.compile(r"^[A-Za-z0-9_.$]{1,1000}$")

_P = ctypes.c_void_p
_I = ctypes.c_int64
_SIDE_T = ctypes.CFUNCTYPE(None, _P, _I, _I, _P, _P, _P, _I, _P, _P)
_PAIR_T = ctypes.CFUNCTYPE(None, _P, _I, _I, _P, _I, _I, _P, _P, _P, _P, _P, _I, _P, _I, _P, _P, _P)


class Kernels(NamedTuple):
    """The two passes, called like :func:`fused._side_boxes` / :func:`fused._pair_boxes`: the
    native ones return :class:`~compare.kernels._abi.SidePass` / ``PairPass``, numba's the plain
    tuples of the same fields."""

    side: Callable[..., tuple]
    pair: Callable[..., tuple]
    #: The raw C entry points (ctypes functions taking addresses, see ``entry_points.SIDE_ARGS`` /
    #: ``PAIR_ARGS``), for callers that resolve their arrays' addresses once (None on numba).
    side_c: Callable[..., None] | None = None
    pair_c: Callable[..., None] | None = None


class CacheRefused(Exception):
    """Objects that must not be linked: untrusted, damaged, or from another build (the message says which)."""


#: Why the native kernels are or are not in use (set by :func:`kernels`).
status: str = "not loaded yet"
#: One-line notes for the user: objects refused, rebuilt, compiled in memory, or not usable (the
#: command line prints them on stderr; each is said once per process).
notes: list[str] = []

_lock = threading.Lock()
_loaded: Kernels | None = None
_tried = False
_keep: list = []  # ctypes callbacks and execution engines that must outlive every call


def note(text: str) -> None:
    """Record a note for the user (once)."""
    if text not in notes:
        notes.append(text)


def enabled() -> bool:
    """False when the environment asks for the numba (or the pure Python) kernels."""
    if os.environ.get("VCOMPARE_NATIVE", "1").strip().lower() in ("0", "no", "false", "off"):
        return False
    return os.environ.get("NUMBA_DISABLE_JIT", "0").strip() in ("", "0")


def kernels(build: bool = True) -> Kernels | None:
    """The native kernels, loaded once per process (building them first if ``build`` and they
    are not available); None when they cannot be used (see the module docstring)."""
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
                status = "loading"
                _loaded = _load(build)  # says "loaded (built at install time)" for the packaged objects
                if _loaded is None:
                    status = "not built"
                elif not status.startswith("loaded"):
                    status = "loaded"
            except Exception as exc:  # noqa: BLE001 - any failure means: use numba instead
                _loaded = None
                status = f"unavailable ({type(exc).__name__}: {exc})"
                note(f"compiled kernels not used ({exc}); numba's are (same numbers, slower start)")
        _tried = build or _loaded is not None
        return _loaded


def needs_build() -> bool:
    """True when the native kernels are enabled, not loaded yet and neither built at install time
    nor cached for this machine (the next comparison builds them: a command line says so first)."""
    if _tried or not enabled():
        return False
    try:
        import llvmlite.binding as llvm  # here: llvmlite only when compiled objects are linked

        key = _key(llvm, _wide(llvm))
        for folder in (_packaged_dir(), _cache_dir()):
            if (folder / _index_name(key)).is_file():
                return False
        private = _cache_dir() / _private_name()
        return not (private / _index_name(key)).is_file()
    except Exception:  # noqa: BLE001 - then kernels() reports the problem and numba is used
        return False


def _packaged_dir() -> Path:
    """Where the install step puts the objects (inside the package); a folder that does not
    exist when ``VCOMPARE_PACKAGED_KERNELS=0`` (tests, and checking the user-cache path)."""
    if os.environ.get("VCOMPARE_PACKAGED_KERNELS", "1").strip().lower() in ("0", "no", "false", "off"):
        return _AOT / "disabled-by-VCOMPARE_PACKAGED_KERNELS"
    return _AOT


def _cache_dir() -> Path:
    for var in ("VCOMPARE_CACHE_DIR", "NUMBA_CACHE_DIR"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "vcompare"


def _private_name() -> str:
    getuid = getattr(os, "getuid", None)
    return f"vcompare-uid{getuid() if getuid is not None else 0}"


def _wide(llvm) -> bool:
    """512-bit vectors: the CPU has AVX-512 and VCOMPARE_NATIVE_WIDE is not 0."""
    if os.environ.get("VCOMPARE_NATIVE_WIDE", "1").strip().lower() in ("0", "no", "false", "off"):
        return False
    return "+avx512f" in llvm.get_host_cpu_features().flatten().split(",")


_key_cache: dict = {}


def _key(llvm, wide: bool) -> str:
    """``SOURCES-SETTINGS``: a digest of the kernel sources, then one of everything else the
    machine code depends on (numba and llvmlite versions, Python, CPU, vector width). Computed
    once per process and width."""
    if wide in _key_cache:
        return _key_cache[wide]
    sources = hashlib.sha256()
    for name in _SOURCES:
        sources.update((_KERNELS / name).read_bytes())
    settings = hashlib.sha256()
    for package in ("numba", "llvmlite"):  # their versions, without importing numba
        spec = importlib.util.find_spec(package)
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        version = origin.with_name("_version.py") if origin is not None else None
        settings.update(version.read_bytes() if version is not None and version.is_file() else package.encode())
    settings.update(f"{sys.version_info[0]}.{sys.version_info[1]}".encode())
    settings.update(llvm.get_host_cpu_name().encode())
    settings.update(llvm.get_host_cpu_features().flatten().encode())
    settings.update(b"wide" if wide else b"default")
    _key_cache[wide] = f"{sources.hexdigest()[:12]}-{settings.hexdigest()[:12]}"
    return _key_cache[wide]


def _index_name(key: str) -> str:
    return f"vcompare-kernels-{key}.json"


def _index(llvm) -> Path:
    """The index file of this machine's objects in the user cache (kept for tools and tests)."""
    return _cache_dir() / _index_name(_key(llvm, _wide(llvm)))


def _prune(folder: Path, key: str) -> None:
    """Remove the objects built from other versions of the kernel sources (never used again);
    builds of these sources for other machines or settings stay."""
    current = key.split("-")[0]
    for path in folder.glob("vcompare-kernels-*"):
        stem_key = path.name[len("vcompare-kernels-"):].split(".")[0]
        if stem_key.split("-")[0] != current and path.name != "vcompare-kernels.lock":
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
        root = str(_KERNELS.parent.parent)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        done = subprocess.run(
            [sys.executable, "-m", "compare.kernels.native.entry_points", str(index)],
            env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False,
        )
    if done.returncode != 0 or not index.is_file():
        tail = (done.stderr or done.stdout or "").strip().splitlines()[-3:]
        raise RuntimeError(f"kernel build failed (exit {done.returncode}): {' | '.join(tail)}")


@dataclass(frozen=True)
class _Entry:
    """One object of an index: file name (bare), symbol, size and SHA-256 of its bytes."""

    file: str
    symbol: str
    size: int
    sha256: str


def _entries(raw: bytes, key: str, where: Path) -> dict[str, _Entry]:
    """The two entries of an index file's bytes, checked (CacheRefused otherwise)."""
    try:
        data = json.loads(raw.decode("utf-8"))
        if data.get("version") != INDEX_VERSION or data.get("key") != key:
            raise CacheRefused(f"{where}: an index of another version or build")
        out = {}
        for name in ("side", "pair"):
            item = data["objects"][name]
            entry = _Entry(str(item["file"]), str(item["symbol"]), int(item["size"]), str(item["sha256"]))
            if not _NAME.match(entry.file) or ".." in entry.file:
                raise CacheRefused(f"{where}: names {entry.file!r}, not a file of its own folder")
            if not _SYMBOL.match(entry.symbol) or not re.fullmatch(r"[0-9a-f]{64}", entry.sha256):
                raise CacheRefused(f"{where}: a malformed entry")
            out[name] = entry
        return out
    except CacheRefused:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
        raise CacheRefused(f"{where}: damaged index ({type(exc).__name__})") from None


def _load_folder(folder: Path, key: str, llvm) -> Kernels:
    """Link the objects of ``folder`` (trusted by the caller). FileNotFoundError when there is no
    index; CacheRefused when an index or object is untrusted, damaged or from another build."""
    name = _index_name(key)
    try:
        raw = read_trusted(folder, name, MAX_INDEX_BYTES)
    except FileNotFoundError:
        raise
    except OSError as exc:  # PermissionError: untrusted file; other errors: unreadable
        raise CacheRefused(f"{folder / name}: {exc}") from None
    entries = _entries(raw, key, folder / name)
    blobs = {}
    for part, entry in entries.items():
        try:
            data = read_trusted(folder, entry.file)
        except OSError as exc:
            raise CacheRefused(f"{folder / entry.file}: {exc.strerror or exc}") from None
        if len(data) != entry.size or hashlib.sha256(data).hexdigest() != entry.sha256:
            raise CacheRefused(f"{folder / entry.file}: damaged ({len(data)} bytes, not the {entry.size} "
                               "bytes and hash its index records)")
        blobs[part] = data
    side = _SIDE_T(_address(llvm, blobs["side"], entries["side"].symbol, entries["side"].file))
    pair = _PAIR_T(_address(llvm, blobs["pair"], entries["pair"].symbol, entries["pair"].file))
    return Kernels(side=_side_caller(side), pair=_pair_caller(pair), side_c=side, pair_c=pair)


@contextlib.contextmanager
def _flock(folder: Path) -> Iterator[None]:
    """Serialise builds in ``folder`` between processes (released by the OS if a process dies)."""
    fd = os.open(folder / "vcompare-kernels.lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _usable_cache() -> tuple[Path | None, str]:
    """The cache folder to load from and build into (trusted, created if missing), or None with
    the reason; a private ``vcompare-uid<N>`` folder inside an untrusted one."""
    root = _cache_dir()
    if root.exists() and not root.is_dir():
        return None, f"{root} is not a folder (VCOMPARE_CACHE_DIR / NUMBA_CACHE_DIR must name a folder)"
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        return None, f"cannot create {root} ({exc.strerror or exc})"
    problem = folder_problem(root)
    if problem is None:
        if os.access(root, os.W_OK | os.X_OK):
            return root, ""
        return None, f"{root} is not writable"
    private = root / _private_name()
    try:
        private.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        return None, f"{root}: {problem}, and a private folder cannot be made in it ({exc.strerror or exc})"
    inner = folder_problem(private)
    if inner is not None:
        return None, f"{root}: {problem}; {private}: {inner}"
    note(f"kernel cache {root}: {problem}, so others could plant code there; using the private folder {private}")
    return private, ""


def _failed_recently(failed: Path) -> str | None:
    """The message of a build that failed less than FAILED_RETRY_SECONDS ago, else None."""
    try:
        info = failed.stat()
    except OSError:
        return None
    if time.time() - info.st_mtime >= FAILED_RETRY_SECONDS:
        return None
    try:
        return failed.read_text(errors="replace")[:300]
    except OSError:
        return "unknown reason"


def _build_and_load(folder: Path, key: str, llvm) -> Kernels:
    """Under the folder's lock: load what another process may have built meanwhile, else build
    (remembering a failure for FAILED_RETRY_SECONDS) and load."""
    index = folder / _index_name(key)
    failed = index.with_suffix(".failed")
    with _flock(folder):
        try:
            return _load_folder(folder, key, llvm)
        except (FileNotFoundError, CacheRefused):
            pass
        earlier = _failed_recently(failed)
        if earlier is not None:
            raise RuntimeError(f"an earlier build failed ({failed}; retried {FAILED_RETRY_SECONDS // 60} min after it): "
                               f"{earlier}")
        try:
            build(index, llvm, _wide(llvm))
        except Exception as exc:
            with contextlib.suppress(OSError):
                failed.write_text(f"{type(exc).__name__}: {exc}")
            raise
        with contextlib.suppress(OSError):
            failed.unlink()
        _prune(folder, key)
        return _load_folder(folder, key, llvm)


def _load(build_missing: bool) -> Kernels | None:
    import llvmlite.binding as llvm  # here: llvmlite only when compiled objects are linked

    global status
    key = _key(llvm, _wide(llvm))
    packaged = _packaged_dir()
    if (packaged / _index_name(key)).is_file():
        problem = folder_problem(packaged)
        if problem is not None:
            note(f"kernel objects in {packaged} refused: {problem}")
        else:
            try:
                loaded = _load_folder(packaged, key, llvm)
                status = "loaded (built at install time)"
                return loaded
            except (CacheRefused, OSError) as exc:
                note(f"kernel objects built at install time refused ({exc}); using the user cache")
    folder, why = _usable_cache()
    if folder is None:
        if not build_missing:
            return None
        return _in_memory(key, llvm, why)
    try:
        return _load_folder(folder, key, llvm)
    except FileNotFoundError:
        if not build_missing:
            return None
    except CacheRefused as exc:
        if not build_missing:
            raise
        note(f"kernel cache refused ({exc}); building the objects again")
    return _build_and_load(folder, key, llvm)


def _in_memory(key: str, llvm, why: str) -> Kernels:
    """Build into a private temporary folder, link, delete the folder (this process only)."""
    start = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="vcompare-kernels-"))
    try:
        build(scratch / _index_name(key), llvm, _wide(llvm))
        loaded = _load_folder(scratch, key, llvm)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    note(f"no trusted, writable kernel cache ({why}): the kernels were compiled for this run only "
         f"({time.perf_counter() - start:.0f} s); set VCOMPARE_CACHE_DIR to a folder of yours to keep them")
    return loaded


def _address(llvm, obj: bytes, symbol: str, label: str) -> int:
    """Link one (checked) object into its own in-process engine and return ``symbol``'s address."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    _provide_runtime_symbols(llvm)
    machine = llvm.Target.from_default_triple().create_target_machine(codemodel="jitdefault")
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    address = engine.get_function_address(symbol)
    if not address:
        raise CacheRefused(f"{label}: symbol {symbol} not found")
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
    """The address of an array's first byte."""
    return a.__array_interface__["data"][0]


def _i64(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous int64 array (itself when it already is one)."""
    return np.ascontiguousarray(a, dtype=np.int64)


def _side_caller(fn: Callable[..., None]) -> Callable[..., SidePass]:
    """The side entry point ``fn`` called like :func:`fused._side_boxes` (arrays, not addresses)."""

    def side(xb: np.ndarray, code: int, dims: np.ndarray, strides: np.ndarray, offs: np.ndarray,
             tile: np.ndarray) -> SidePass:
        dims, strides, offs = _i64(dims), _i64(strides), _i64(offs)
        out = np.empty(SIDE_OUT, dtype=np.float64)
        fn(_ptr(xb), code, xb.shape[0], _ptr(dims), _ptr(strides), _ptr(offs), dims.shape[0], _ptr(tile), _ptr(out))
        return SidePass._make(out.tolist())

    return side


def _pair_caller(fn: Callable[..., None]) -> Callable[..., PairPass]:
    """The pair entry point ``fn`` called like :func:`fused._pair_boxes` (arrays, not addresses)."""

    def pair(xb: np.ndarray, xcode: int, yb: np.ndarray, ycode: int, dims: np.ndarray, sx: np.ndarray,
             sy: np.ndarray, ox: np.ndarray, oy: np.ndarray, prm: tuple, do_rel: bool, do_kl: bool,
             do_err: bool, err32: bool, xt: np.ndarray, yt: np.ndarray) -> PairPass:
        dims, sx, sy, ox, oy = _i64(dims), _i64(sx), _i64(sy), _i64(ox), _i64(oy)
        p = np.array(prm, dtype=np.float64)
        out = np.empty(PAIR_OUT, dtype=np.float64)
        flags = (1 if do_rel else 0) | (2 if do_kl else 0) | (4 if do_err else 0) | (8 if err32 else 0)
        fn(_ptr(xb), xcode, xb.shape[0], _ptr(yb), ycode, yb.shape[0], _ptr(dims), _ptr(sx), _ptr(sy), _ptr(ox),
           _ptr(oy), dims.shape[0], _ptr(p), flags, _ptr(xt), _ptr(yt), _ptr(out))
        return PairPass._make(out.tolist())

    return pair
