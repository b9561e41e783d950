"""The single numba compilation policy of vcompare's kernels.

Every jitted function in :mod:`compare.kernels` is decorated with :data:`jit`:

- ``cache=True``: compiled machine code is cached on disk (``__pycache__`` next to the source,
  or ``NUMBA_CACHE_DIR``), so only the very first comparison on a machine pays the compile time;
- ``nogil=True``: the engine runs pairs on two threads;
- ``error_model="numpy"``: a float division by zero gives inf/NaN instead of raising (the kernels
  compute ``x / y`` for every element and then select, which is what lets LLVM vectorise them);
- ``fastmath={"reassoc", "contract", "nsz"}`` only: sums may be re-associated (so LLVM can
  vectorise the float64 reductions with several partial sums), ``a * b + c`` may become one FMA,
  and the sign of a zero may be ignored (without ``nsz`` LLVM vectorised the pass-1 loop with
  1.7x more instructions). These change results by rounding only, and the sign of an exact zero,
  which :func:`compare.kernels.compare_arrays` normalises (``v + 0.0``; the sequential sums from
  ``+0.0`` never produced ``-0.0``). **No** ``nnan``/``ninf``/``afn``: NaN and inf semantics stay
  IEEE (a NaN reaching a sum makes it NaN in any order; the NaN-propagating maxima are the
  ``llvm.maximum``/``llvm.minimum`` intrinsics);
- no ``parallel``: the engine parallelises over pairs, and one pass is memory-bound anyway.

``NUMBA_DISABLE_JIT=1`` is honoured by numba itself: the decorated functions then run as plain
Python (slow, but handy for debugging and for the no-JIT test run); the scalar helpers of
:mod:`compare.kernels.fused` have plain-Python bodies for that case.

Numba's on-disk cache is keyed on the source file of each kernel (``fused.py``), not on this
module: after changing the flags here, touch ``fused.py`` (or clear ``__pycache__``) so cached
machine code compiled with the old flags is not reused.

This module imports numba, so it must only be imported lazily (from inside a function): the CLI
must start without loading numba.
"""

from __future__ import annotations

import functools

import numba

#: LLVM fast-math flags allowed in the kernels (see the module docstring).
FASTMATH = frozenset({"reassoc", "contract", "nsz"})

#: The decorator used for every kernel (see module docstring for the policy).
jit = functools.partial(numba.njit, cache=True, nogil=True, fastmath=set(FASTMATH), error_model="numpy")

#: True when NUMBA_DISABLE_JIT=1 (the kernels run as Python).
DISABLE_JIT = bool(numba.config.DISABLE_JIT)

__all__ = ["DISABLE_JIT", "FASTMATH", "jit"]
