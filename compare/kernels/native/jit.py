"""The single numba compilation policy of vcompare's kernels.

Every jitted function in :mod:`compare.kernels` is decorated with :data:`jit`:

- ``cache=True``: compiled machine code is cached on disk (``__pycache__`` next to the source,
  or ``NUMBA_CACHE_DIR``), so only the very first comparison on a machine pays the compile time
  -- unless that folder fails :mod:`convert.trust`'s rule, or numba finds no writable folder at
  all: then the kernels are compiled in memory, with a note (see :func:`jit`);
- ``nogil=True``: the engine runs pairs on two threads;
- ``error_model="numpy"``: a float division by zero gives inf/NaN instead of raising (the kernels
  compute ``x / y`` for every element and then select, which is what lets LLVM vectorise them);
- ``fastmath={"reassoc", "contract", "nsz"}`` only: sums may be re-associated (so LLVM can
  vectorise the float64 reductions with several partial sums), ``a * b + c`` may become one FMA,
  and the sign of a zero may be ignored (without ``nsz`` LLVM vectorised the pass-1 loop with
  1.7x more instructions). These change results by rounding only, and the sign of an exact zero,
  which :mod:`compare.kernels.passes` normalises (``v + 0.0``; the sequential sums from
  ``+0.0`` never produced ``-0.0``). **No** ``nnan``/``ninf``/``afn``: NaN and inf semantics stay
  IEEE (a NaN reaching a sum makes it NaN in any order; the NaN-propagating maxima are the
  ``llvm.maximum``/``llvm.minimum`` intrinsics);
- no ``parallel``: the engine parallelises over pairs, and one pass is memory-bound anyway.

``NUMBA_DISABLE_JIT=1`` is honoured by numba itself: the decorated functions then run as plain
Python (slow, but handy for debugging and for the no-JIT test run); the scalar helpers of
:mod:`compare.kernels.fused` have plain-Python bodies for that case. (Every environment switch of
the kernels is listed in :mod:`compare.kernels.native`.)

:func:`init_target` initialises numba's CPU target ahead of the first compilation, optionally
without numba's SciPy BLAS probe (:func:`compare.kernels.preload`, for the command line).

Numba's on-disk cache is keyed on the source file of each kernel (``fused.py``), not on this
module: after changing the flags here, touch ``fused.py`` (or clear ``__pycache__``) so cached
machine code compiled with the old flags is not reused.

This module imports numba, so it must only be imported lazily (from inside a function): the CLI
must start without loading numba.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable

import numba

from convert.trust import folder_problem

from . import note

#: LLVM fast-math flags allowed in the kernels (see the module docstring).
FASTMATH = frozenset({"reassoc", "contract", "nsz"})

#: True when NUMBA_DISABLE_JIT=1 (the kernels run as Python).
DISABLE_JIT = bool(numba.config.DISABLE_JIT)


def _cache_problem() -> str | None:
    """Why numba's on-disk cache must not be used (None: it may). Numba's cache index files are
    pickles: loading them runs code, so the folder obeys :mod:`convert.trust`'s rule --
    ``NUMBA_CACHE_DIR`` when set, else the ``__pycache__`` beside the kernel sources (when it
    exists; numba falls back to the user's own cache folder otherwise). A path that exists but is
    not a folder (a plain file, a device) is said to be that -- not a folder to cache in --
    rather than a place others could plant code in."""
    folder = os.environ.get("NUMBA_CACHE_DIR")
    path = Path(folder).expanduser() if folder else Path(__file__).resolve().parent.parent / "__pycache__"
    if not path.exists():
        return None
    if not path.is_dir():
        setting = "NUMBA_CACHE_DIR" if folder else "the kernels' __pycache__"
        return f"numba's cache {path}: not a folder ({setting} must name a folder to cache in)"
    problem = folder_problem(path)
    return f"numba's cache {path}: {problem}, so others could plant code there" if problem else None


_CACHE_PROBLEM = _cache_problem()
if _CACHE_PROBLEM:
    note(f"{_CACHE_PROBLEM}; numba compiles in memory instead")


def jit(function: Callable | None = None, **options: Any) -> Any:
    """``numba.njit`` with the kernels' policy (see the module docstring); ``@jit`` or
    ``@jit(inline="always")``.

    ``cache=True`` unless numba's cache folder is untrusted; when numba cannot cache at all (no
    writable folder: "no locator available", raised when the function is decorated) the function
    is compiled in memory instead, with a note -- importing the kernels never fails because of it.
    """
    settings = dict(cache=_CACHE_PROBLEM is None, nogil=True, fastmath=set(FASTMATH), error_model="numpy")
    settings.update(options)

    def decorate(fn: Callable) -> Any:
        try:
            return numba.njit(**settings)(fn)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            if not settings.get("cache"):
                raise
            note("numba finds no writable folder to cache the kernels in; they are compiled in memory for "
                  "each run (set NUMBA_CACHE_DIR to a folder of yours to keep them)")
            return numba.njit(**{**settings, "cache": False})(fn)

    return decorate(function) if function is not None else decorate


def init_target(*, blas: bool = True) -> None:
    """Initialise numba's CPU target now (what its first compilation would do).

    ``blas=False`` skips numba's optional SciPy BLAS probe (importing ``scipy.linalg`` costs
    about 0.18 s of a command-line run): numba then cannot compile ``np.dot``/``np.linalg`` for
    the rest of the process, which vcompare's kernels never use. Only for processes that use
    numba through vcompare alone (the command line); a library user keeps the default. Has no
    effect when numba's CPU target is already initialised or ``scipy.linalg`` already imported.
    (Importing numba does not probe: the probe runs when the target is initialised.)
    """
    stub = not blas and "scipy.linalg" not in sys.modules and "numba.np.arraymath" not in sys.modules
    if stub:
        sys.modules["scipy.linalg"] = None  # type: ignore[assignment]  # "import scipy.linalg" fails
    try:
        from numba.core.registry import cpu_target  # here: numba only when its dispatch is used

        cpu_target.target_context.refresh()
    finally:
        if stub and "scipy.linalg" in sys.modules and sys.modules["scipy.linalg"] is None:
            del sys.modules["scipy.linalg"]


__all__ = ["DISABLE_JIT", "FASTMATH", "init_target", "jit"]
