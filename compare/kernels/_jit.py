"""The single numba compilation policy of vcompare's kernels.

Every jitted function in :mod:`compare.kernels` is decorated with :data:`jit`:

- ``cache=True``: compiled machine code is cached on disk (``__pycache__`` next to the source,
  or ``NUMBA_CACHE_DIR``), so only the very first comparison on a machine pays the compile time;
- ``nogil=True``: the engine may run several pairs on threads;
- ``fastmath=False``: NaN / inf semantics must be IEEE (``x != x`` tests, NaN-propagating max);
  fast-math would let LLVM assume there are no NaNs and reassociate sums;
- no ``parallel``: the engine parallelises over pairs, and one pass is memory-bound anyway.

``NUMBA_DISABLE_JIT=1`` is honoured by numba itself: the decorated functions then run as plain
Python (slow, but handy for debugging and for the no-JIT test run).

This module imports numba, so it must only be imported lazily (from inside a function): the CLI
must start without loading numba.
"""

from __future__ import annotations

import functools

import numba

#: The decorator used for every kernel (see module docstring for the policy).
jit = functools.partial(numba.njit, cache=True, nogil=True, fastmath=False)

__all__ = ["jit"]
