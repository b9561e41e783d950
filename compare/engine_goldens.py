"""Engine state about goldens shared by the worker threads: :class:`SideStats`, the one-side
statistics of each golden tensor, computed once per run whichever thread needs them first.

The kernels (:func:`compare.kernels.compare_planned`) take such a store as their ``right_cache``
(the :class:`compare.kernels.passes.SideCache` protocol); the store and its locking are the
engine's, the kernels stay free of threads.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any, Callable, TypeVar

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
