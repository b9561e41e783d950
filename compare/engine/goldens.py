"""Engine state about goldens shared by the worker threads: :class:`GoldenCache` (the loaded golden
arrays, a small LRU, and the kernel plans by shape) and :class:`SideStats`, the one-side
statistics of each golden tensor, computed once per run whichever thread needs them first.

The kernels (:func:`compare.kernels.compare_planned`) take such a store as their ``right_cache``
(the :class:`compare.kernels.passes.SideCache` protocol); the store and its locking are the
engine's, the kernels stay free of threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

import numpy as np

from convert.layouts import LayoutDecision

from ..kernels import BoundPlan
from ..records import TensorRef

V = TypeVar("V")


class SideStats:
    """Thread-safe store of goldens' one-side statistics for
    :func:`compare.kernels.compare_planned`.

    Each key is computed once: a thread asking for a key another thread is computing waits for
    that result instead of computing it again (two threads often compare a producer's output and
    its consumer's input, the same golden, at the same time). If the computing thread fails,
    a waiting one computes the key itself.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)  # notified whenever a computation ends
        self._done: dict[Hashable, Any] = {}
        self._busy: set[Hashable] = set()

    def __len__(self) -> int:
        """The number of keys computed."""
        return len(self._done)

    def get_or_compute(self, key: Hashable, compute: Callable[[], V],
                       meanwhile: Callable[[], None] | None = None) -> V:
        """The value of ``key``, computed by ``compute()`` unless known; when another thread is
        computing it, ``meanwhile()`` (other work of the caller) runs before waiting."""
        with self._lock:
            if key in self._done:
                return self._done[key]
            owner = key not in self._busy
            if owner:
                self._busy.add(key)
        if not owner:
            if meanwhile is not None:
                meanwhile()
            with self._ready:
                while key in self._busy:
                    self._ready.wait()
                if key in self._done:
                    return self._done[key]
            return self.get_or_compute(key, compute)  # the owner failed: take over
        value: V | None = None
        try:
            value = compute()
        finally:
            with self._ready:
                if value is not None:
                    self._done[key] = value
                self._busy.discard(key)
                self._ready.notify_all()
        return value


__all__ = ["SideStats"]


#: Golden arrays kept in memory at most (they are reused by consecutive pairs most of the time).
GOLDEN_CACHE_ENTRIES = 4


@dataclass(frozen=True)
class PlanEntry:
    """A zero-copy kernel plan kept for the pairs of one layout signature
    (:meth:`compare.engine.prepare.LayoutRequest.plan_key`): the bound ``plan``, the prepared
    ``shape``, the element ``count``, whether that shape is ``scalar``-like, and the
    :class:`LayoutDecision` the plan was made with (a pair that reuses the plan reuses its
    decision: nothing about its layout is decided again)."""

    plan: BoundPlan
    shape: tuple[int, ...]
    count: int
    scalar: bool
    decision: LayoutDecision


class GoldenCache:
    """A small, thread-safe LRU of loaded golden arrays keyed by (file, tensor)."""

    def __init__(self, size: int = GOLDEN_CACHE_ENTRIES) -> None:
        self._size = size
        self._items: OrderedDict[tuple[str, str, int], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        #: One-side statistics of the goldens compared so far (a few floats each, kept for the
        #: run: a golden evicted from the LRU keeps them), shared by the worker threads.

        self.stats = SideStats()
        #: Zero-copy kernel plans by layout signature (see LayoutRequest.plan_key).
        self.plans: dict[tuple, PlanEntry] = {}

    def load(self, ref: TensorRef, key: tuple[str, str, int] | None = None) -> np.ndarray:
        """``ref``'s array, from the cache or loaded (``key``: :meth:`key` of ``ref`` if known)."""
        key = key if key is not None else self.key(ref)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        array = ref.load()  # outside the lock: two threads may both load it (harmless)
        with self._lock:
            self._items[key] = array
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return array

    @staticmethod
    def key(ref: TensorRef) -> tuple[str, str, int]:
        return (str(ref.path), ref.kind.value, ref.index)
