"""Python's cyclic garbage collector around the phases that build many long-lived objects.

A network of many small tensors loads as hundreds of thousands of small records (tensor
references, dump headers, pairs) that live for the whole run and hold no reference cycles worth
collecting. CPython's collector runs a collection every 700 new container objects, and each
collection of the oldest generation walks every object alive: loading 28,000 dump files paid
~1.3 s of 3.3 s in collections that found nothing, and comparing afterwards paid for walking the
loaded records again and again. So:

- :func:`paused_gc` turns automatic collection off while a run is loaded and paired (garbage made
  then is collected when it is turned back on: nothing is lost, memory is at worst that of the
  loading phase).
- :func:`frozen_heap` moves everything alive into the collector's permanent generation while the
  loaded records are compared, so collections during comparison only look at what comparing
  creates (and forked worker processes do not touch -- hence copy -- the pages of the records).

Both restore the collector's previous state on exit, also on an exception; nested uses are
harmless. They change when garbage is collected, never what is computed.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


#: How many :func:`frozen_heap` blocks are open (their objects are unfrozen when the outermost ends).
_frozen_depth = 0


@contextmanager
def paused_gc() -> Iterator[None]:
    """Automatic cyclic collection off inside the block (back to its previous state after).

    Inside a :func:`frozen_heap` block, what the block created is frozen too before collection
    resumes: otherwise the first allocation after it would walk everything just loaded (some
    800,000 objects for 28,000 files: ~0.4 s) to find no garbage.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _frozen_depth > 0:
            gc.freeze()
        if was_enabled:
            gc.enable()


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Objects alive at entry (and those of :func:`paused_gc` blocks inside) are left out of every
    collection inside the block (``gc.freeze``); they are ordinary objects again after the
    outermost such block (``gc.unfreeze``)."""
    global _frozen_depth
    gc.freeze()
    _frozen_depth += 1
    try:
        yield
    finally:
        _frozen_depth -= 1
        if _frozen_depth == 0:
            gc.unfreeze()
